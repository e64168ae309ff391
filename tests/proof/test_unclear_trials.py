"""A trial that ends like neither GOOD nor BAD is launched once more, and the second verdict
stands: a launch that fails at random says nothing of the changes it applied.

Seen in the diagnosis corpus (fresh4 ``grad-sync-edit-metric-job``, benchmarks/RESULTS.md): a
torchrun rank aborted as it exited ("terminate called without an active exception") after
printing BAD's loss, so the trial exited 1 where GOOD and BAD exited 0. Read as "not bad", that
one launch made ``--prove`` fail and bisect name the edit together with an unrelated variable.
Here the program aborts once, the first time it is launched after a marker file is written,
after printing its loss: real launches, real ``runsnap why``."""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.proof.conftest import capture, child
from tests.proof.conftest import runsnap as run_runsnap

# The loss follows LR; KNOB_A and KNOB_B change too, and are read, so the diff is undecided.
# With ``abort-once`` beside it, the program deletes it and aborts after printing its loss.
_TRAIN = ("knobs = [os.environ.get('KNOB_A'), os.environ.get('KNOB_B')]\n"
          "lr = float(os.environ.get('LR', '0.1'))\n"
          "print(f'step 100 loss={0.5 + 4 * lr:.4f}', flush=True)\n"
          "marker = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'abort-once')\n"
          "if os.path.exists(marker):\n"
          "    os.unlink(marker)\n"
          "    os.abort()\n")

# Confident: the failing function reads MODE; the program aborts once at exit as above.
_SERVE = ("def check():\n"
          "    if os.environ.get('MODE') == 'x':\n"
          "        raise ValueError('mode x is not supported')\n"
          "marker = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'abort-once')\n"
          "if os.path.exists(marker):\n"
          "    os.unlink(marker)\n"
          "    os.abort()\n"
          "check()\n"
          "print('ok')\n")


def _why(tmp_path: Path, body: str, good: dict[str, str | None], bad: dict[str, str | None],
         *args: str) -> tuple[int, dict[str, object], str]:
    prog = child(tmp_path / "launch.py", body)
    store = tmp_path / ".runsnap"
    capture(store / "good.toml", ["python3", str(prog)], good)
    time.sleep(0.01)
    capture(store / "bad.toml", ["python3", str(prog)], bad)
    (tmp_path / "abort-once").write_text("")  # the next launch, the first trial, aborts
    proc = run_runsnap("why", "--format", "json", "--yes", *args, cwd=tmp_path)
    try:
        return proc.returncode, json.loads(proc.stdout), proc.stderr
    except ValueError:
        raise AssertionError(f"not JSON: {proc.stdout!r}\n{proc.stderr}") from None


def test_a_search_trial_that_aborts_once_is_launched_again(tmp_path: Path) -> None:
    """Before: trial 1 (every change applied) went 'unclear' and the bisection stopped there,
    no cause. Now trial 1 is launched again, goes bad, and the search finds LR."""
    code, out, err = _why(tmp_path, _TRAIN, {"LR": "0.1", "KNOB_A": "1", "KNOB_B": "1"},
                          {"LR": "0.9", "KNOB_A": "2", "KNOB_B": "2"})
    assert code == 0, (out.get("message"), err)
    assert out["status"] == "found" and out["confidence"] == "undecided"
    assert [c["key"] for c in out["cause"]] == ["LR"]  # type: ignore[attr-defined]
    runs = out["bisect"]["runs"]  # type: ignore[index]
    assert [r["trial"] for r in runs[:2]] == [1, 1], runs
    assert runs[0]["verdict"] == "unclear" and "SIGABRT" in runs[0]["why"], runs[0]
    assert runs[1]["verdict"] == "bad"
    assert out["launches"] == len(runs)  # the launch again is counted
    folder = Path(str(out["bisect"]["folder"]))  # type: ignore[index]
    assert (folder / "trial-01.log").exists() and (folder / "trial-01-again.log").exists()
    assert "trial 1 again: 3 of 3 applied: bad" in err


def test_a_proof_launch_that_aborts_once_is_launched_again(tmp_path: Path) -> None:
    """Before: GOOD with MODE=x applied aborted (unclear), the proof failed and a bisection of
    6 more launches followed. Now that launch is made again: proven in 3 launches."""
    code, out, err = _why(tmp_path, _SERVE, {"MODE": "y", "KNOB": "1"},
                          {"MODE": "x", "KNOB": "2"}, "--prove")
    assert code == 0, (out.get("message"), err)
    assert out["status"] == "proven", out["message"]
    assert [c["key"] for c in out["cause"]] == ["MODE"]  # type: ignore[attr-defined]
    assert out["launches"] == 3 and out["proof"]["launches"] == 3  # type: ignore[index]
    assert "(3 launches," in str(out["message"])
    assert out["proof"]["applied"].startswith("bad: ")  # type: ignore[index]
