"""``runsnap check`` before any launch (issue 38, item 5): no snapshot checks the current
context, ``check -- COMMAND`` the context COMMAND would get, with the guard's rules and verdict;
real ``runsnap`` processes, the demo's real models, nothing written."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from tests.conftest import asset, run_runsnap

MODELS = ("--model-path", str(asset("models", "kimi-k2.5-target")), "--speculative-algorithm",
          "EAGLE3", "--speculative-draft-model-path", str(asset("models", "kimi-k2.5-eagle3-draft")))
COMMAND = (sys.executable, str(asset("demo", "launch_server.py")), *MODELS)


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "COLUMNS": "100", **extra}
    env.pop("RUNSNAP_DIR", None)
    return env


def _kinds(stderr: str) -> list[str]:
    """The finding kinds of the guard's stderr lines (``runsnap: check [90] KIND: ...``)."""
    return [line.split("] ", 1)[1].split(":", 1)[0] for line in stderr.splitlines()
            if line.startswith("runsnap: check [")]


def test_check_with_no_snapshot_checks_the_current_context(tmp_path: Path) -> None:
    clean = run_runsnap("check", cwd=tmp_path, env=_env())
    assert clean.returncode == 0, clean.stderr
    assert clean.stdout == "runsnap check: no findings  (the current context)\n"

    typo = _env(NCCL_P2P_DISABEL="1")
    found = run_runsnap("check", cwd=tmp_path, env=typo)
    assert found.returncode == 1, found.stderr
    assert found.stdout.startswith("runsnap check: 1 finding  (the current context)\n")
    assert "NCCL_P2P_DISABEL" in found.stdout and "NCCL_P2P_DISABLE" in found.stdout
    strict = run_runsnap("check", "--strict", cwd=tmp_path, env=typo)
    assert strict.returncode == 2 and strict.stdout == found.stdout
    assert strict.stderr == ("runsnap: capture --strict would not launch: 1 finding of weight "
                             "90 or more\n")
    # the project's own setting, as capture reads it
    (tmp_path / "pyproject.toml").write_text("[tool.runsnap.capture]\nstrict = true\n")
    assert run_runsnap("check", cwd=tmp_path, env=typo).returncode == 2
    assert not (tmp_path / ".runsnap").exists()  # nothing written


def test_check_of_a_command_finds_what_the_guard_finds(tmp_path: Path) -> None:
    env = _env(NCCL_P2P_DISABEL="1")
    check = run_runsnap("check", "--format", "json", "--", *COMMAND, cwd=tmp_path, env=env)
    assert check.returncode == 1, check.stderr
    doc = json.loads(check.stdout)
    assert doc["snapshot"].startswith("the context of: ") and sys.executable in doc["snapshot"]
    kinds = [f["kind"] for f in doc["findings"]]
    assert sorted(kinds) == ["draft-target", "misspelled-variable"]

    guard = run_runsnap("capture", "--no-run", "-o", str(tmp_path / "s.toml"), "--", *COMMAND,
                        cwd=tmp_path, env=env)
    assert guard.returncode == 0, guard.stderr
    assert _kinds(guard.stderr) == kinds  # the same rules, the same order
    refused = run_runsnap("capture", "--strict", "--", *COMMAND, cwd=tmp_path, env=env)
    strict = run_runsnap("check", "--strict", "--", *COMMAND, cwd=tmp_path, env=env)
    assert refused.returncode == strict.returncode == 2

    allowed = _env(SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN="1")
    text = run_runsnap("check", "--", *COMMAND, cwd=tmp_path, env=allowed)
    assert text.returncode == 1 and "[92] draft-target" not in text.stdout
    ran = run_runsnap("capture", "--", *COMMAND, cwd=tmp_path, env=allowed)
    assert ran.returncode == 0, ran.stderr  # the launch the check let through runs


def test_check_says_what_it_cannot_take(tmp_path: Path) -> None:
    for args, message in ((("check", "@1", "--", "true"), "not both"),
                          (("check", "--"), "needs a COMMAND"),
                          (("check", "--strict", "@1"), "--strict goes with")):
        r = run_runsnap(*args, cwd=tmp_path, env=_env())
        assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, args
