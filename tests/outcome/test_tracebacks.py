"""Tracebacks parsed from the output of real Python children, into ``[outcome] traceback``."""

from __future__ import annotations

import sys
from pathlib import Path

from runsnap.launch import LaunchSpec, outcome, run
from runsnap.launch.lines import is_error_line
from runsnap.launch.tracebacks import parse


def _run(tmp_path: Path, code: str) -> dict:
    script = tmp_path / "app.py"
    script.write_text(code)
    result = run(LaunchSpec.of([sys.executable, str(script)], env={"PATH": "/usr/bin:/bin"},
                               cwd=tmp_path))
    return outcome.build(result)


def test_frames_type_and_message_of_a_real_traceback(tmp_path: Path) -> None:
    out = _run(tmp_path, (
        "import logging\n"
        "def derive(n):\n"
        "    if n > 4:\n"
        "        raise ValueError(f'context_length ({n}) is greater; set the env var X_Y=1')\n"
        "def main():\n"
        "    logging.warning('starting')\n"
        "    derive(8)\n"
        "main()\n"))
    tb = out["traceback"]
    assert tb["type"] == "ValueError"
    assert tb["message"] == "context_length (8) is greater; set the env var X_Y=1"
    assert [(Path(f["file"]).name, f["line"], f["function"]) for f in tb["frames"]] == [
        ("app.py", 8, "<module>"), ("app.py", 7, "main"), ("app.py", 4, "derive")]


def test_chained_exceptions_keep_the_last(tmp_path: Path) -> None:
    out = _run(tmp_path, (
        "def load():\n"
        "    return {}['model']\n"
        "def start():\n"
        "    try:\n"
        "        load()\n"
        "    except KeyError as exc:\n"
        "        raise RuntimeError('could not start the server') from exc\n"
        "start()\n"))
    tb = out["traceback"]
    assert (tb["type"], tb["message"]) == ("RuntimeError", "could not start the server")
    assert [f["function"] for f in tb["frames"]] == ["<module>", "start"]


def test_a_traceback_after_a_log_prefix_in_a_subprocess(tmp_path: Path) -> None:
    out = _run(tmp_path, (
        "import subprocess, sys, traceback\n"
        "code = '''\n"
        "import sys, traceback\n"
        "def worker():\n"
        "    import json; json.loads('{')\n"
        "try:\n"
        "    worker()\n"
        "except Exception:\n"
        "    sys.stderr.write('[2026-01-01 10:00:00 TP0] Scheduler hit an exception: '\n"
        "                     + traceback.format_exc())\n"
        "    sys.exit(1)\n"
        "'''\n"
        "sys.exit(subprocess.call([sys.executable, '-c', code]))\n"))
    tb = out["traceback"]
    assert tb["type"] == "json.decoder.JSONDecodeError"
    assert tb["message"].startswith("Expecting property name")
    assert tb["frames"][0]["function"] == "<module>"
    assert "worker" in [f["function"] for f in tb["frames"]]


def test_no_traceback_no_key(tmp_path: Path) -> None:
    out = _run(tmp_path, "import sys\nprint('ERROR: not a traceback', file=sys.stderr)\n")
    assert "traceback" not in out
    assert out["first_error"] == "ERROR: not a traceback"


def test_log_lines_are_not_exception_lines() -> None:
    assert parse(["Traceback (most recent call last):", "ERROR could not start"]) is None
    assert parse(['Traceback (most recent call last):', '  File "a.py", line 1, in f',
                  "    x", "ERROR: boom"]) is None


def test_a_workers_traceback_before_the_launchers_own_is_kept(tmp_path: Path) -> None:
    """SGLang's shape: the scheduler prints its traceback, then the launcher raises its own."""
    out = _run(tmp_path, (
        "import sys, traceback\n"
        "def init_memory_pool():\n"
        "    raise AssertionError('page table is not aligned')\n"
        "try:\n"
        "    init_memory_pool()\n"
        "except Exception:\n"
        "    sys.stderr.write('[TP0] Scheduler hit an exception: ' + traceback.format_exc())\n"
        "raise RuntimeError('Initialization failed. Please see the error messages above.')\n"))
    assert out["traceback"]["type"] == "RuntimeError"
    (worker,) = out["earlier_tracebacks"]
    assert (worker["type"], worker["message"]) == ("AssertionError", "page table is not aligned")
    assert [f["function"] for f in worker["frames"]] == ["<module>", "init_memory_pool"]


def test_a_dotted_exception_class_is_the_first_error(tmp_path: Path) -> None:
    """``packaging.version.InvalidVersion`` names no ``Error``: its dotted form makes it one."""
    out = _run(tmp_path, (
        "class InvalidVersion(ValueError):\n"
        "    __module__ = 'packaging.version'\n"
        "InvalidVersion.__module__ = 'packaging.version'\n"
        "print('loading 3 plugins')\n"
        "raise InvalidVersion(\"Invalid version: '2.x'\")\n"))
    assert out["traceback"]["type"] == "packaging.version.InvalidVersion"
    assert out["first_error"] == "packaging.version.InvalidVersion: Invalid version: '2.x'"
    assert is_error_line("yaml.scanner.ScannerError: mapping values are not allowed")
    assert not is_error_line("loading torch.nn.Module: 3 layers")


def test_a_wrapper_that_says_nothing_carries_the_workers_error(tmp_path: Path) -> None:
    """torch's mp.spawn re-raises a worker's failure as ``ProcessRaisedException`` whose
    message starts on the next line (torch/multiprocessing/spawn.py: ``"\\n\\n-- Process %d
    terminated with the following error:\\n" + original_trace``): its first line ends empty.
    The first error is the worker's, carried; a wrapper that says something keeps its line."""
    raising = (
        "class ProcessRaisedException(Exception):\n    pass\n"
        "trace = ('Traceback (most recent call last):\\n'\n"
        "         '  File \"serve.py\", line 19, in worker\\n'\n"
        "         '    dist.init_process_group(\"gloo\")\\n'\n"
        "         'torch.distributed.DistStoreError: wait timeout after 15000ms, keys: /0\\n')\n"
        "raise ProcessRaisedException({msg!r} + trace)\n")
    out = _run(tmp_path, raising.format(
        msg="\n\n-- Process 1 terminated with the following error:\n"))
    assert out["first_error"] == ("ProcessRaisedException: torch.distributed."
                                  "DistStoreError: wait timeout after 15000ms, keys: /0"), out
    out = _run(tmp_path, raising.format(msg="process 1 failed\n"))
    assert out["first_error"] == "ProcessRaisedException: process 1 failed", out
