"""Three classes of fresh21 and fresh22 (scored untouched: 2/13 confident and right; three
undecided lists of 8), each a mechanism, on real venvs, repositories and traced launches:

* a misspelled variable explains nothing between two runs when the name it looks like a
  misspelling of has the same value in both (a devcontainer's ``PYTHON_PATH`` beside a
  ``PYTHONPATH`` neither run sets); where the other run does set it, it still counts;
* an uncommitted config edit whose changed key and new value the error both quote
  (``Expected float between 0 and 1 pct_start, but got 1.5``) is named by the error, above a
  variable read on the same path (``HOME`` for a personal overrides file);
* a variable of another stack's family seen only in a package's bulk copy of the environment
  (python-dotenv's ``resolve_variables`` copies it to expand ``${NAME}``), in runs of one
  process, is unread: no child was there to take the copy.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import runsnap
from runsnap.capturing import run
from tests.conftest import make_repo, venv_with_package


def _diff(tmp_path: Path) -> runsnap.Report:
    return runsnap.diff(runsnap.load(tmp_path / "a.toml"), runsnap.load(tmp_path / "b.toml"))


def _shown(report: runsnap.Report) -> list[tuple[str, str, int, str]]:
    return [(d.section, d.key, d.score, d.evidence_kind) for d in report.differences
            if not d.hidden]


EPOCHS = """
import argparse

p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=4)
a = p.parse_args()
if a.epochs > 10:
    raise ValueError(f"Tried to step {a.epochs * 20} times: more than the schedule's 200")
print("loss=0.25")
"""


def test_a_misspelling_of_a_name_set_in_neither_run(tmp_path: Path,
                                                    base_env: dict[str, str]) -> None:
    app = tmp_path / "fit.py"
    app.write_text(EPOCHS)
    run(["python3", str(app)], env=base_env, cwd=tmp_path, output=tmp_path / "a.toml")
    run(["python3", str(app), "--epochs", "12"],
        env={**base_env, "PYTHON_PATH": "/usr/local/python/current"}, cwd=tmp_path,
        output=tmp_path / "b.toml")
    report = _diff(tmp_path)
    assert not any(d.section == "check" for d in report.differences), _shown(report)
    assert report.to_dict()["confidence"] == "confident", _shown(report)
    assert report.differences[0].key == "--epochs", _shown(report)


def test_an_untraced_misspelling_of_a_name_neither_run_sets_ranks_below_the_option(
        tmp_path: Path, base_env: dict[str, str]) -> None:
    # without a trace nothing says OMP_NUM_THREAD went unread: looking like a misspelling of
    # a name neither run sets must not put it above the option the program was launched with
    app = tmp_path / "fit.py"
    app.write_text(EPOCHS)
    run(["python3", str(app)], env=base_env, cwd=tmp_path, output=tmp_path / "a.toml",
        trace=False)
    run(["python3", str(app), "--epochs", "12"],
        env={**base_env, "OMP_NUM_THREAD": "4"}, cwd=tmp_path,
        output=tmp_path / "b.toml", trace=False)
    report = _diff(tmp_path)
    shown = _shown(report)
    assert report.differences[0].key == "--epochs", shown
    env = next(d for d in report.differences if d.key == "OMP_NUM_THREAD")
    assert env.score == 40 and "OMP_NUM_THREADS" in env.reason, shown


IMPORTER = """
import shapes  # from src/, on PYTHONPATH
print("ok")
"""


def test_a_misspelling_of_a_name_the_other_run_sets_still_counts(
        tmp_path: Path, base_env: dict[str, str]) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "shapes.py").write_text("SIDES = 4\n")
    app = tmp_path / "main.py"
    app.write_text(IMPORTER)
    src = str(tmp_path / "src")
    run(["python3", str(app)], env={**base_env, "PYTHONPATH": src}, cwd=tmp_path,
        output=tmp_path / "a.toml")
    run(["python3", str(app)], env={**base_env, "PYTHON_PATH": src}, cwd=tmp_path,
        output=tmp_path / "b.toml")
    report = _diff(tmp_path)
    assert any(d.section == "check" and "PYTHON_PATH" in d.key
               for top in report.differences[:2] for d in (top, *top.related)), _shown(report)


FIT = """
import os
from pathlib import Path

import yaml


def settings():
    cfg = yaml.safe_load(open("configs/fit.yaml"))
    personal = Path.home() / ".config" / "demand" / "overrides.yaml"
    if personal.exists():
        cfg.update(yaml.safe_load(personal.read_text()) or {})
    return cfg


def schedule(pct_start):
    if not 0 <= pct_start <= 1:
        raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
    return pct_start


print(f"pct={schedule(settings()['pct_start'])}")
"""


def test_an_edit_whose_key_and_value_the_error_quotes(tmp_path: Path,
                                                      base_env: dict[str, str]) -> None:
    repo = make_repo(tmp_path / "demand", {"fit.py": FIT,
                                           "configs/fit.yaml": "max_lr: 0.01\npct_start: 0.3\n"})
    homes = [tmp_path / "home-a", tmp_path / "home-b"]
    for home in homes:
        home.mkdir()
    run(["python3", "fit.py"], env={**base_env, "HOME": str(homes[0])}, cwd=repo,
        output=tmp_path / "a.toml")
    (repo / "configs" / "fit.yaml").write_text("max_lr: 0.01\npct_start: 1.5\n")
    run(["python3", "fit.py"], env={**base_env, "HOME": str(homes[1])}, cwd=repo,
        output=tmp_path / "b.toml")
    report = _diff(tmp_path)
    top = report.differences[0]
    assert (top.section, top.key) == ("git", "demand: configs/fit.yaml"), _shown(report)
    assert "quotes pct_start and its value 1.5" in top.reason, top.reason
    assert report.to_dict()["confidence"] == "confident", _shown(report)


#: A package that copies the environment to expand ``${NAME}`` in a file's values, as
#: python-dotenv's ``resolve_variables`` does.
EXPANDER = '''
import os
import re


def expand(text):
    env = {}
    env.update(os.environ)
    return re.sub(r"\\$\\{(\\w+)\\}", lambda m: env.get(m[1], ""), text)
'''

DEPTH = """
import argparse

import envexpand

p = argparse.ArgumentParser()
p.add_argument("--max-depth", type=int, default=8)
a = p.parse_args()
out = envexpand.expand("runs/${USER}")
print(f"r2={0.9 if a.max_depth > 4 else 0.7}")
"""


def test_a_family_variable_seen_only_in_a_package_copy_in_one_process(
        tmp_path: Path, base_env: dict[str, str]) -> None:
    python = venv_with_package(tmp_path / "env", "envexpand", textwrap.dedent(EXPANDER))
    app = tmp_path / "fit.py"
    app.write_text(DEPTH)
    path = f"{python.parent}:/usr/bin:/bin"
    run([str(python), str(app)], env={**base_env, "PATH": path, "TORCH_HOME": "/alloc/torch"},
        cwd=tmp_path, output=tmp_path / "a.toml")
    run([str(python), str(app), "--max-depth", "3"], env={**base_env, "PATH": path},
        cwd=tmp_path, output=tmp_path / "b.toml")
    report = _diff(tmp_path)
    torch_home = next(d for d in report.differences if d.key == "TORCH_HOME")
    assert torch_home.evidence_kind == "unread", torch_home.reason
    assert "copied in bulk by envexpand" in torch_home.reason
    assert report.to_dict()["confidence"] == "confident", _shown(report)
    assert report.differences[0].key == "--max-depth", _shown(report)
