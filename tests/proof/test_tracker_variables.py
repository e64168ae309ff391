"""Trials set the trackers' variables (``MLFLOW_TRACKING_URI``, ``MLFLOW_ALLOW_FILE_STORE``,
``WANDB_MODE``) so that the program logs no run anywhere; when one of them is itself the
difference under test, the trial applies its value instead of masking it, and says what that
may cost."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.proof.conftest import bisect, capture, child, runsnap

pytestmark = pytest.mark.slow

_PROG = ("mode = os.environ.get('WANDB_MODE', '')\n"
         "uri = os.environ.get('MLFLOW_TRACKING_URI', '')\n"
         "if mode == 'offline' or uri.startswith('http://bad'):\n"
         "    sys.exit(f'ValueError: cannot log with mode={mode!r} uri={uri!r}')\n"
         "print('ok')\n")


@pytest.mark.parametrize(("name", "good", "bad", "tracker"), [
    ("WANDB_MODE", None, "offline", "W&B"),
    ("MLFLOW_TRACKING_URI", "http://good.invalid", "http://bad.invalid", "MLflow"),
])
def test_a_tracker_variable_under_test_is_applied_not_masked(
        tmp_path: Path, name: str, good: str | None, bad: str, tracker: str) -> None:
    """The variable is the planted cause among two harmless differences: masked, no trial
    could go bad ("applying all changes did not reproduce BAD"); applied, bisect finds it,
    and says before the trials that they may log a run to that tracker."""
    prog = child(tmp_path / "launch.py", _PROG)
    a = capture(tmp_path / "good.toml", ["python3", str(prog)],
                {name: good, "KNOB_A": "1", "KNOB_B": "1"})
    b = capture(tmp_path / "bad.toml", ["python3", str(prog)],
                {name: bad, "KNOB_A": "2", "KNOB_B": "2"})
    proc, answer = bisect(a, b, "--yes")
    assert answer["status"] == "found", proc.stderr
    assert [c["key"] for c in answer["cause"]] == [name]
    assert (f"{name} is a difference under test: trials apply its value, so a trial may log a "
            f"run to {tracker}") in proc.stderr
    why = runsnap("why", str(b), "--against", str(a), "--prove", "--yes")
    assert why.returncode == 0, why.stderr + why.stdout
    assert name in why.stdout


def test_tracker_variables_not_under_test_are_still_masked(tmp_path: Path) -> None:
    """GOOD and BAD share ``WANDB_MODE=offline``: every trial still runs with W&B disabled and
    MLflow in the trials' own file store, and nothing is said about trackers."""
    prog = child(tmp_path / "launch.py",
                 "print(os.environ['WANDB_MODE'], os.environ.get('MLFLOW_TRACKING_URI', '-'))\n"
                 "sys.exit(os.environ.get('MODE') == 'x')\n")
    a = capture(tmp_path / "good.toml", ["python3", str(prog)],
                {"WANDB_MODE": "offline", "MODE": "y"})
    b = capture(tmp_path / "bad.toml", ["python3", str(prog)],
                {"WANDB_MODE": "offline", "MODE": "x"})
    proc, answer = bisect(a, b, "--yes")
    assert answer["status"] == "found", proc.stderr
    assert "difference under test" not in proc.stderr
    logs = sorted(Path(answer["folder"]).glob("trial-*.log"))
    assert logs
    for log in logs:
        mode, uri = log.read_text().split()
        assert mode == "disabled" and uri == f"file://{answer['folder']}/mlruns"
