"""Three classes of fresh19 and fresh20 (scored untouched: two confident and wrong, four
undecided), each a mechanism, each on real venvs and real traced launches:

* a library's start-up setting read through a helper of its own package in another folder
  (torch's ``TORCHINDUCTOR_FX_GRAPH_CACHE``, read by ``torch/utils/_config_module.py`` at the
  import of ``torch/_inductor/config.py``) is no setting of code that fails under the helper's
  folder (``torch/utils/data/dataloader.py``), and multiprocessing's resource tracker, a
  helper process that read nothing from Python, does not make it a read of "some processes";
* a venv's folder in an error (Python's ``cannot import name ... (/venv/.../__init__.py)``)
  names no ``VIRTUAL_ENV`` when the passing run imported code from there too, and the words of
  a path (a venv named ``det-image`` under ``trial-images``) name no ``DET_TRIAL_ID``;
* a file both runs read with other content, and a config field, beside libraries' start-up
  settings only, is what the program was launched with: confident, as an option is.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import runsnap
from runsnap.capturing import run
from tests.conftest import venv_with_package

#: ``stackkit``: a settings module whose body reads through a helper in another folder of the
#: package, and a data loader under that helper's folder that spawns workers.
FILES = {
    "__init__.py": "from stackkit.compiler import config  # noqa: F401\n",
    "utils/__init__.py": "",
    "utils/_config_module.py": """
        import os


        def install(name, default=None):
            return os.environ.get(name, default)
        """,
    "compiler/__init__.py": "",
    "compiler/config.py": """
        from stackkit.utils._config_module import install

        FX_CACHE = install("STACKKIT_FX_CACHE")
        """,
    "utils/data/__init__.py": "",
    "utils/data/loader.py": """
        import multiprocessing


        def _work(conn):
            return conn


        def load(conn, workers):
            if workers:
                ctx = multiprocessing.get_context("spawn")
                procs = [ctx.Process(target=_work, args=(conn,)) for _ in range(workers)]
                for p in procs:
                    p.start()
            return conn.execute("select 3").fetchone()[0]
        """,
}

LOADER_APP = """
import argparse
import sqlite3

import stackkit
from stackkit.utils.data import loader

p = argparse.ArgumentParser()
p.add_argument("--workers", type=int, default=0)
a = p.parse_args()
print(f"rows={loader.load(sqlite3.connect(':memory:'), a.workers)}")
"""


def _stackkit(root: Path) -> Path:
    python = venv_with_package(root, "stackkit", "")
    site = next((python.parent.parent / "lib").glob("python*/site-packages"))
    for rel, text in FILES.items():
        (site / "stackkit" / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / "stackkit" / rel).write_text(textwrap.dedent(text).lstrip())
    return python


def _pair(tmp_path: Path, argv_a: list[str], argv_b: list[str], env_a: dict[str, str],
          env_b: dict[str, str]) -> runsnap.Report:
    run(argv_a, env=env_a, cwd=tmp_path, output=tmp_path / "a.toml")
    run(argv_b, env=env_b, cwd=tmp_path, output=tmp_path / "b.toml")
    return runsnap.diff(runsnap.load(tmp_path / "a.toml"), runsnap.load(tmp_path / "b.toml"))


def _shown(report: runsnap.Report) -> list[tuple[str, str, int, str]]:
    return [(d.section, d.key, d.score, d.evidence_kind) for d in report.differences
            if not d.hidden]


def test_a_setting_read_through_a_helper_elsewhere_in_its_package(
        tmp_path: Path, base_env: dict[str, str]) -> None:
    python = _stackkit(tmp_path / "env")
    app = tmp_path / "load.py"
    app.write_text(LOADER_APP)
    path = f"{python.parent}:/usr/bin:/bin"
    report = _pair(tmp_path, [str(python), str(app)], [str(python), str(app), "--workers", "2"],
                   {**base_env, "PATH": path, "STACKKIT_FX_CACHE": "1"},
                   {**base_env, "PATH": path})
    b = runsnap.load(tmp_path / "b.toml")
    assert "cannot pickle" in str(b.records.outcome.first_error)
    assert len(b.records.runtime.processes) >= 2  # the resource tracker beside the program
    setting = next(d for d in report.differences if d.key == "STACKKIT_FX_CACHE")
    assert setting.evidence_kind == "read" and setting.score <= 83, (setting.score,
                                                                      setting.reason)
    out = report.to_dict()
    assert out["confidence"] == "confident", _shown(report)
    assert report.differences[0].key == "--workers", _shown(report)


IMPORT_APP = """
import argparse

p = argparse.ArgumentParser()
p.add_argument("--vocab-api", default="v2")
a = p.parse_args()
if a.vocab_api == "v3":
    from stackkit import load_vocab  # noqa: F401 - only in stackkit 3
print("skus=12")
"""


def test_a_venv_folder_in_an_error_names_no_variable(tmp_path: Path,
                                                     base_env: dict[str, str]) -> None:
    python = _stackkit(tmp_path / "trial-images" / "det-image")
    app = tmp_path / "skus.py"
    app.write_text(IMPORT_APP)
    path = f"{python.parent}:/usr/bin:/bin"
    venv = str(python.parent.parent)
    report = _pair(tmp_path, [str(python), str(app)],
                   [str(python), str(app), "--vocab-api", "v3"],
                   {**base_env, "PATH": path},
                   {**base_env, "PATH": path, "VIRTUAL_ENV": venv, "DET_TRIAL_ID": "48213"})
    b = runsnap.load(tmp_path / "b.toml")
    assert venv in str(b.records.outcome.first_error)  # Python's message holds the path
    for name in ("VIRTUAL_ENV", "DET_TRIAL_ID"):
        d = next(d for d in report.differences if d.key == name)
        assert d.evidence_kind not in ("named", "failing-path"), (name, d.reason)
    assert report.to_dict()["confidence"] == "confident", _shown(report)
    assert report.differences[0].key == "--vocab-api", _shown(report)


FILE_APP = """
import json
import sys

import stackkit

scale = json.load(open(sys.argv[1]))["scale"]
print(f"val_mae={3.5 * scale:.4f}")
"""


def test_a_file_read_with_other_content_beside_start_up_settings(
        tmp_path: Path, base_env: dict[str, str]) -> None:
    python = _stackkit(tmp_path / "env")
    app = tmp_path / "forecast.py"
    app.write_text(FILE_APP)
    stats = tmp_path / "shared" / "stats.json"  # outside any repository, regenerated
    stats.parent.mkdir()
    stats.write_text('{"scale": 1.0}')
    path = f"{python.parent}:/usr/bin:/bin"
    run([str(python), str(app), str(stats)], env={**base_env, "PATH": path},
        cwd=tmp_path, output=tmp_path / "a.toml")
    stats.write_text('{"scale": 1.2}')
    run([str(python), str(app), str(stats)],
        env={**base_env, "PATH": path, "STACKKIT_FX_CACHE": "1"}, cwd=tmp_path,
        output=tmp_path / "b.toml")
    report = runsnap.diff(runsnap.load(tmp_path / "a.toml"), runsnap.load(tmp_path / "b.toml"))
    out = report.to_dict()
    assert out["confidence"] == "confident", _shown(report)
    top = report.differences[0]
    assert (top.section, tuple(top.path[:2])) == ("runtime", ("runtime", "data_files")), \
        _shown(report)
    assert "the only input that differs" in str(out.get("because")), out.get("because")
