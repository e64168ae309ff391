"""``[runtime.data_files.FILE] quoted``: the values of a failed run's small config files that
its own error quotes, taken as the run ends (runsnap/tracing/quoted.py), and the evidence
``diff`` makes of them (runsnap/diffing/datafiles.py ``value_quoted``): ``KeyError: 'churned'``
where the ``.env`` the program loaded says ``LABEL_COLUMN=churned`` names the file, which the
runs otherwise only show opened with other content. (fresh13 ``dotenv-old-label-column``,
untouched: undecided between ten, the .env first beside variables python-dotenv copied.)

Real programs, real files, real captures."""

from __future__ import annotations

import sys
from pathlib import Path

import runsnap
from runsnap.capturing import run
from tests.tracing.conftest import child_env

PROGRAM = """
import sys
values = dict(line.strip().split("=", 1) for line in open(".env") if "=" in line)
columns = {"churn": [0, 1, 1], "tenure": [3, 4, 5]}
label = columns[values["LABEL_COLUMN"]]
if "--token" in sys.argv:
    raise SystemExit(f"refused: {values['API_TOKEN']}")
print(f"positives={sum(label)}")
"""


def _run(tmp_path: Path, name: str, env_file: str, *args: str) -> runsnap.Snapshot:
    (tmp_path / ".env").write_text(env_file)
    (tmp_path / "train.py").write_text(PROGRAM)
    run([sys.executable, "train.py", *args], cwd=tmp_path, env=child_env(),
        output=tmp_path / f"{name}.toml")
    return runsnap.load(tmp_path / f"{name}.toml")


def _row(snap: runsnap.Snapshot, tmp_path: Path) -> dict[str, object]:
    return dict(snap.sections["runtime"]["data_files"][str(tmp_path / ".env")])


def test_the_value_a_failed_runs_error_quotes_names_its_config_file(tmp_path: Path) -> None:
    good = _run(tmp_path, "a", "ACCOUNTS=accounts.csv\nLABEL_COLUMN=churn\n")
    bad = _run(tmp_path, "b", "ACCOUNTS=accounts.csv\nLABEL_COLUMN=churned\n")
    assert bad.records.outcome.first_error == "KeyError: 'churned'"
    assert "quoted" not in _row(good, tmp_path)  # it ended well: nothing is looked at
    assert _row(bad, tmp_path)["quoted"] == {"LABEL_COLUMN": "churned"}
    report = runsnap.diff(good, bad)
    assert isinstance(report, runsnap.Report)
    top = report.counted[0]
    assert top.path[:2] == ("runtime", "data_files") and top.evidence_kind == "failing-path"
    assert "quotes 'churned', the value its copy of the file gives LABEL_COLUMN" in top.reason
    assert report.confidence == "confident", report.verdict()


def test_a_credentials_value_is_never_looked_at(tmp_path: Path) -> None:
    bad = _run(tmp_path, "b", "LABEL_COLUMN=churn\nAPI_TOKEN=tok-7f3a9c21e4b8\n", "--token")
    assert bad.records.outcome.exit_status == 1
    assert "quoted" not in _row(bad, tmp_path)
