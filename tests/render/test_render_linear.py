"""Rendering a diff compares no difference with every other (issue 37, class 5): the text diff
of N hidden differences was quadratic in N (a list membership test with a record's ``==``,
which compares every field), 100,000 of them more than 12 minutes. Counted here in record
comparisons made while rendering, not timed (speed is measured in benchmarks/growth.py,
``--only hidden``)."""

from __future__ import annotations

from pathlib import Path

import pytest

import runsnap
from runsnap.diffing import Difference
from runsnap.render import render
from tests.conftest import make_repo


@pytest.fixture(scope="module")
def hidden_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two traced runs of the same command whose 3,000 variables differ, read by no process."""
    tmp = tmp_path_factory.mktemp("hidden")
    make_repo(tmp / "proj", {"app.py": "print('ok')\n"})
    paths = []
    for tag in "ab":
        env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp), "RUNSNAP_KEY_FILE": str(tmp / "key"),
               **{f"HIDDEN_VAR_{i:05d}": f"{tag}{i}" for i in range(3000)}}
        record = runsnap.run(["python3", "app.py"], cwd=tmp / "proj", env=env,
                             output=tmp / f"{tag}.toml")
        paths.append(Path(record.snapshot.path_text))
    return paths[0], paths[1]


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_rendering_hidden_differences_compares_no_pair_of_them(
        fmt: str, hidden_pair: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    report = runsnap.diff(*hidden_pair, git_log=False)
    hidden = [d for d in report.differences if d.hidden and d.key.startswith("HIDDEN_VAR_")]
    assert len(hidden) == 3000
    compared = [0]
    equal = Difference.__eq__

    def counted(self: Difference, other: object) -> bool:
        compared[0] += 1
        return equal(self, other)

    monkeypatch.setattr(Difference, "__eq__", counted)
    out = render(report, fmt)
    assert ("HIDDEN_VAR_00000" in out) == (fmt != "json")  # JSON leaves hidden ones out
    assert compared[0] < len(hidden), f"{compared[0]} record comparisons for {len(hidden)}"
