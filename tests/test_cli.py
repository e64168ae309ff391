"""The command line, in-process (CliRunner) and as a real ``python -m runsnap`` process."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import runsnap
from runsnap._version import __version__
from tests.conftest import asset, git, run_runsnap


def test_capture_in_a_dirty_repo_with_a_model_argument_writes_every_section(
    repo: Path, cli_invoke, monkeypatch
) -> None:
    shutil.copytree(asset("models", "kimi-k2.5-target"), repo / "target")
    (repo / "app.py").write_text("print('dirty')\n")
    monkeypatch.chdir(repo)
    result = cli_invoke(["capture", "--label", "good run", "--no-run", "--", sys.executable,
                         "-m", "sglang.launch_server", "--model-path", "target", "--tp", "8"])
    path = repo / result.stdout.strip().splitlines()[-1]  # printed relative to the cwd
    assert path.parent == repo / ".runsnap"
    assert path.name.endswith("-good-run.toml")
    snap = runsnap.load(path)
    assert set(snap.sections) >= {"command", "env", "packages", "git", "models", "system"}
    assert snap["command"]["options"] == {"model-path": "target", "tp": "8"}
    assert snap["git"]["repos"]["proj"]["dirty"] is True
    assert snap["models"]["models"]["--model-path"]["config"]["model_type"] == "kimi_k25"
    assert snap["packages"]["count"] > 0
    assert snap.label == "good run"

    shown = cli_invoke(["show", str(path)]).stdout
    assert f"runsnap snapshot {snap.id[:12]}  [good run]" in shown
    assert "--model-path target --tp 8" in shown
    assert "proj: " in shown and " main dirty (cwd)" in shown
    assert "--model-path: " in shown and "max_position_embeddings 262144" in shown
    assert "errors: none" in shown


def test_output_option_and_runsnap_dir(tmp_path: Path, cli_invoke, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "x" / "mine.toml"
    assert cli_invoke(["capture", "-o", str(out)]).stdout.strip() == "x/mine.toml"
    assert runsnap.load(out)["command"]["argv"] == []
    monkeypatch.setenv("RUNSNAP_DIR", str(tmp_path / "snaps"))
    written = tmp_path / cli_invoke(["capture", "--label", "a/b c"]).stdout.strip()
    assert written.parent == tmp_path / "snaps" and written.name.endswith("-a-b-c.toml")


def test_version_and_help(cli_invoke) -> None:
    assert cli_invoke(["--version"]).stdout == f"runsnap, version {__version__}\n"
    for args in (["--help"], ["capture", "--help"], ["show", "--help"]):
        assert "Usage: " in cli_invoke(args).stdout


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        ("schema = 1\nnot = [toml", "not valid TOML"),
        ("not = [toml", "not a runsnap snapshot"),
        ('name = "pyproject"\n', "not a runsnap snapshot"),
        ("schema = 99\n[meta]\nid = 'x'\ncaptured_at = 'y'\n", "newer than this runsnap"),
    ],
)
def test_show_bad_input_is_one_line_and_exit_2(tmp_path: Path, content, message) -> None:
    path = tmp_path / "s.toml"
    if content is not None:
        path.write_text(content)
    proc = run_runsnap("show", str(path))
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("runsnap: ")
    assert message in proc.stderr and "Traceback" not in proc.stderr


def test_unwritable_output_is_one_line_and_exit_2(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    proc = run_runsnap("capture", "-o", str(blocker / "s.toml"), cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith("runsnap: cannot write ") and proc.stderr.count("\n") == 1


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    proc = run_runsnap("capture", "--max-diff-bytes", "-5")
    assert proc.returncode == 2 and "Invalid value" in proc.stderr
    assert run_runsnap("no-such-command").returncode == 2


def test_real_process_capture_then_show(repo: Path) -> None:
    (repo / "app.py").write_text("changed\n")
    env = {**os.environ, "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1", "HF_TOKEN": "hf_x" * 10}
    proc = run_runsnap("capture", "-o", "s.toml", cwd=repo, env=env)
    assert proc.returncode == 0, proc.stderr
    snap = runsnap.load(repo / "s.toml")
    assert snap["env"]["vars"]["SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"] == "1"
    assert "hf_xhf_x" not in (repo / "s.toml").read_text()
    assert snap["git"]["repos"]["proj"]["commit"] == git(repo, "rev-parse", "HEAD").strip()
    shown = run_runsnap("show", "s.toml", cwd=repo)
    assert shown.returncode == 0 and "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1" in shown.stdout


def test_version_and_help_import_nothing_heavy() -> None:
    code = ("import sys, runpy; sys.argv = ['runsnap', '--help']\n"
            "try:\n    runpy.run_module('runsnap', run_name='__main__')\n"
            "except SystemExit:\n    pass\n"
            "heavy = [m for m in ('git', 'deepdiff', 'psutil', 'tomli_w', 'packaging') "
            "if m in sys.modules]\nprint('HEAVY', heavy, file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "HEAVY []" in proc.stderr


def test_undecodable_environment_bytes_survive_a_real_capture(tmp_path: Path) -> None:
    env = {k.encode(): v.encode() for k, v in os.environ.items()}
    env[b"WEIRD_BYTES"] = b"caf\xe9\xff"
    proc = run_runsnap("capture", "-o", "s.toml", cwd=tmp_path, env=env, text=False)
    assert proc.returncode == 0, proc.stderr
    value = runsnap.load(tmp_path / "s.toml")["env"]["vars"]["WEIRD_BYTES"]
    assert value.encode("utf-8", "surrogateescape") == b"caf\xe9\xff"
    assert '"~bytes"' in (tmp_path / "s.toml").read_text()


DEMO = [sys.executable, str(asset("demo", "launch_server.py")),
        "--model-path", str(asset("models", "kimi-k2.5-target")),
        "--speculative-algorithm", "EAGLE3",
        "--speculative-draft-model-path", str(asset("models", "kimi-k2.5-eagle3-draft"))]


def test_show_tells_how_a_launch_ended(tmp_path: Path) -> None:
    env = {**os.environ, "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1"}
    good = run_runsnap("capture", "-o", "good.toml", "--", *DEMO, cwd=tmp_path, env=env)
    env.pop("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN")
    bad = run_runsnap("capture", "-o", "bad.toml", "--", *DEMO, cwd=tmp_path, env=env)
    assert (good.returncode, bad.returncode) == (0, 1)

    shown = run_runsnap("show", "bad.toml", cwd=tmp_path).stdout
    assert "\noutcome\n  exit status 1 after " in shown
    assert ("  first error (stderr): ValueError: Warning: Target model's context_length (262144) "
            "is greater than the derived context_length (131072).") in shown
    shown = run_runsnap("show", "good.toml", cwd=tmp_path).stdout
    assert "\noutcome\n  exit status 0 after " in shown
    assert "  warnings (2):\n" in shown and "Overriding the draft model's" in shown
    assert "first error" not in shown


def test_show_of_a_killed_launch_and_of_a_running_process(tmp_path: Path) -> None:
    code = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    proc = run_runsnap("capture", "-o", "k.toml", "--", sys.executable, "-c", code, cwd=tmp_path)
    assert proc.returncode == -9  # runsnap dies by the child's signal, as a shell sees it bare
    assert "  killed by SIGKILL (exit status 137) after " in run_runsnap(
        "show", "k.toml", cwd=tmp_path).stdout

    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert run_runsnap("capture", "--pid", str(sleeper.pid), "-o", "p.toml",
                           cwd=tmp_path).returncode == 0
    finally:
        sleeper.kill()
        sleeper.wait()
    shown = run_runsnap("show", "p.toml", cwd=tmp_path).stdout
    assert f"process (snapshotted while running)\n  pid {sleeper.pid} (python" in shown
    assert "shared libraries mapped" in shown
