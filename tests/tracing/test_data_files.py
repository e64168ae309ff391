"""The data files a traced run opened (``[runtime.data_files]``), and the diff's use of them:
real children (a YAML config read with PyYAML, a file read in a multiprocessing worker), real
git repositories."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runsnap.capturing import run
from runsnap.diffing import compare
from runsnap.tracing.datafiles import EDGE, WHOLE
from tests.tracing.conftest import child_env

yaml = pytest.importorskip("yaml")

PROGRAM = """
import multiprocessing as mp, os, pathlib, sys
import yaml

def worker(path):
    with open(path) as fh:
        return len(fh.read())

if __name__ == "__main__":
    cfg = yaml.safe_load(pathlib.Path("cfg.yaml").read_text())
    with open("out.txt", "w") as fh:
        fh.write("made by the run")
    open("out.txt").read()
    try:
        open("absent.json")
    except OSError:
        pass
    os.close(os.open("big.bin", os.O_RDONLY))
    with mp.get_context("spawn").Pool(1) as pool:
        print(pool.map(worker, ["eval.jsonl"]), os.getpid())
    if cfg["layers"] > 3:
        sys.exit("the model has room for 3 layers, not %d" % cfg["layers"])
"""


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _setup(folder: Path) -> None:
    (folder / "prog.py").write_text(PROGRAM)
    (folder / "cfg.yaml").write_text("lr: 0.1\nlayers: 2\n")
    (folder / "eval.jsonl").write_text('{"q": "2+2", "a": "4"}\n')
    (folder / "big.bin").write_bytes(b"\0" * (WHOLE + 3 * EDGE))


def _launch(folder: Path, name: str):
    env = child_env(PYTHONPATH=str(Path(yaml.__file__).resolve().parent.parent))
    return run([sys.executable, "prog.py"], env=env, cwd=folder,
               output=folder / f"{name}.toml").snapshot


def test_the_files_a_run_opened_are_listed_with_their_content_identity(tmp_path: Path) -> None:
    _setup(tmp_path)
    snap = _launch(tmp_path, "a")
    files = snap.get("runtime")["data_files"]
    cfg = files[str(tmp_path / "cfg.yaml")]
    assert cfg["sha256"] == _sha(tmp_path / "cfg.yaml") and cfg["hashed"] == "whole"
    assert any("prog.py:" in frame and "<module>" in frame for frame in cfg["stack"])
    # read in the worker (a process of its own), with the worker's frame
    ev = files[str(tmp_path / "eval.jsonl")]
    assert ev["pids"] != cfg["pids"] and "in worker" in ev["stack"][0]
    # an output read back is no input; a missing file the program tried is a fact
    assert files[str(tmp_path / "absent.json")] == {**files[str(tmp_path / "absent.json")],
                                                    "missing": True}
    assert str(tmp_path / "out.txt") not in files
    big = files[str(tmp_path / "big.bin")]
    assert big["hashed"] == "first and last MiB" and big["size"] == WHOLE + 3 * EDGE
    # nothing of the interpreter's own (the standard library, PyYAML's package, the hook)
    assert all(str(tmp_path) in path for path in files), sorted(files)
    assert not any(p.endswith((".py", ".pyc")) for p in files)


def test_an_edited_data_file_is_the_only_input_that_differs(tmp_path: Path) -> None:
    _setup(tmp_path)
    good = _launch(tmp_path, "good")
    (tmp_path / "cfg.yaml").write_text("lr: 0.1\nlayers: 4\n")
    bad = _launch(tmp_path, "bad")
    report = compare(good, bad)
    top = report.counted[0]
    assert (top.section, top.key, top.evidence_kind) == (
        "runtime", f"file {tmp_path / 'cfg.yaml'}", "read"), report.counted
    assert report.confidence == "confident", report.because
    assert "prog.py:" in top.reason and "opened" in top.reason
    # the eval set and the big file were the same: no difference
    assert [d.key for d in report.counted if d.key.startswith("file ")] == [top.key]


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo,
                   check=True, capture_output=True)


def test_an_uncommitted_edit_a_run_opened_is_one_difference_with_its_evidence(
        tmp_path: Path) -> None:
    _setup(tmp_path)
    (tmp_path / "README.md").write_text("notes\n")
    (tmp_path / ".gitignore").write_text("*.toml\nout.txt\nbig.bin\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "start")
    good = _launch(tmp_path, "good")
    (tmp_path / "cfg.yaml").write_text("lr: 0.1\nlayers: 4\n")
    (tmp_path / "README.md").write_text("notes\nmore notes\n")
    subprocess.run([sys.executable, "-m", "py_compile", "prog.py"], cwd=tmp_path, check=True)
    bad = _launch(tmp_path, "bad")
    report = compare(good, bad)
    top = report.counted[0]
    assert top.section == "git" and top.key.endswith(": cfg.yaml"), report.counted
    assert top.evidence_kind == "read" and "prog.py:" in top.reason
    assert report.confidence == "confident", report.because
    keys = [d.key for d in report.counted]
    assert not any(k.startswith("file ") for k in keys), keys  # one difference, not two
    readme = next(d for d in report.counted if d.key.endswith(": README.md"))
    assert readme.evidence_kind == "unread"
    # the compiled cache the edit left behind is never a candidate
    assert not any("__pycache__" in k for k in keys), keys
    assert any("__pycache__" in d.key and d.hidden for d in report.differences)


def test_a_file_only_one_run_opened_is_folded_as_where_it_went(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(
        "import os, sys\nif os.environ.get('STOP'):\n    sys.exit('stopped early')\n"
        "open('later.csv').read()\n")
    (tmp_path / "later.csv").write_text("a,b\n1,2\n")
    good = run([sys.executable, "prog.py"], env=child_env(), cwd=tmp_path,
               output=tmp_path / "good.toml").snapshot
    bad = run([sys.executable, "prog.py"], env=child_env(STOP="1"), cwd=tmp_path,
              output=tmp_path / "bad.toml").snapshot
    report = compare(good, bad)
    assert report.counted[0].key == "STOP"
    assert not any(d.key.startswith("file ") for d in report.counted)
    assert any(d.key == f"file {tmp_path / 'later.csv'}" for d in report.consequences)
    assert os.path.exists(tmp_path / "later.csv")


def test_a_process_lists_256_files_and_counts_the_rest(tmp_path: Path) -> None:
    (tmp_path / "many").mkdir()
    for i in range(300):
        (tmp_path / "many" / f"{i}.txt").write_text(str(i))
    (tmp_path / "prog.py").write_text(
        "for i in range(300):\n    open(f'many/{i}.txt').read()\n")
    snap = run([sys.executable, "prog.py"], env=child_env(), cwd=tmp_path,
               output=tmp_path / "s.toml").snapshot
    runtime = snap.get("runtime")
    assert len(runtime["data_files"]) == 256
    assert runtime["data_files_left_out"] == 44


OUTPUTS = """
import os, sys
import helper
open("settings.ini").read()
with open("metrics.csv", "w") as fh:
    fh.write('{"pid": %d}' % os.getpid())
with open("run.log", "a") as fh:
    fh.write("started %d\\n" % os.getpid())
layers = int(os.environ.get("LAYERS", "2"))
if layers > 3:
    sys.exit("the model has room for 3 layers, not %d" % layers)
"""


def test_outputs_and_compiled_caches_git_lists_are_never_candidates(tmp_path: Path) -> None:
    """A tracked metrics file and a log the runs write, and a tracked compiled cache the
    interpreter rewrites: git lists them as changed in B (A's run changed them), none is a
    candidate, nor is the tree's dirty flag they alone make; the variable is the cause."""
    (tmp_path / "prog.py").write_text(OUTPUTS)
    (tmp_path / "helper.py").write_text("VALUE = 1\n")
    (tmp_path / "metrics.csv").write_text("{}")
    (tmp_path / "settings.ini").write_text("[eval]\nsplit = val\n")
    (tmp_path / ".gitignore").write_text("*.toml\n")
    subprocess.run([sys.executable, "-m", "py_compile", "helper.py"], cwd=tmp_path, check=True)
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A", "-f")
    _git(tmp_path, "commit", "-qm", "start")
    assert any("__pycache__" in p for p in subprocess.run(
        ["git", "ls-files"], cwd=tmp_path, capture_output=True, text=True).stdout.split())
    st = os.stat(tmp_path / "helper.py")  # the source looks newer: A's run rewrites the cache
    os.utime(tmp_path / "helper.py", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    good = run([sys.executable, "prog.py"], env=child_env(), cwd=tmp_path,
               output=tmp_path / "good.toml").snapshot
    bad = run([sys.executable, "prog.py"], env=child_env(LAYERS="4"), cwd=tmp_path,
              output=tmp_path / "bad.toml").snapshot
    assert bad.get("runtime")["data_files_written"] == [
        str(tmp_path / "metrics.csv"), str(tmp_path / "run.log")]
    report = compare(good, bad)
    assert report.counted[0].key == "LAYERS", report.counted
    assert report.confidence == "confident", report.because
    assert not [d.key for d in report.counted if d.section == "git"], report.counted
    hidden = {d.key.partition(": ")[2] or d.key: d.reason for d in report.differences
              if d.section == "git" and d.hidden}
    assert "an output of the run" in hidden["metrics.csv"]
    assert "unread" not in hidden["metrics.csv"] and "not read" not in hidden["metrics.csv"]
    assert "an output of the run" in hidden["run.log"]
    assert any("__pycache__" in k and "compiled cache" in r for k, r in hidden.items()), hidden
    assert any(k.endswith(".dirty") and "outputs of the run" in r for k, r in hidden.items())
