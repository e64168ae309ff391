"""Two runs that fail through the same wrapper exception are told apart by the exception the
worker raised, as a person reading the log would.

Seen in the diagnosis corpus (fresh6 ``engine-kv-heads-both-fail``, benchmarks/RESULTS.md):
``torch.multiprocessing.spawn`` re-raises a worker's error as ``ProcessRaisedException:`` with
the worker's traceback after it, so both runs' first error line was that wrapper's, and
``why --prove`` said "ended the same way ... cannot be proven by launching". Here the program
does what ``mp.spawn`` does, with Python's own multiprocessing: real processes, real
``runsnap why``."""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.proof.conftest import capture, child
from tests.proof.conftest import runsnap as run_runsnap

# The worker raises; the parent re-raises it as mp.spawn does (its message: a blank line, then
# the worker's traceback). GOOD's worker finds no weights, BAD's refuses MODE=x.
_SPAWN = ("import multiprocessing as mp, traceback\n"
          "class ProcessRaisedException(Exception):\n"
          "    pass\n"
          "def worker(q):\n"
          "    try:\n"
          "        if os.environ.get('MODE') == 'x':\n"
          "            raise ValueError('mode x needs 4 workers, got 2')\n"
          "        raise FileNotFoundError('no weights in ./model')\n"
          "    except Exception:\n"
          "        q.put(traceback.format_exc())\n"
          "        raise SystemExit(1)\n"
          "if __name__ == '__main__':\n"
          "    knob = os.environ.get('KNOB')\n"
          "    q = mp.get_context('spawn').SimpleQueue()\n"
          "    p = mp.get_context('spawn').Process(target=worker, args=(q,))\n"
          "    p.start(); p.join()\n"
          "    raise ProcessRaisedException('\\n\\n-- Process 0 terminated with the following "
          "error:\\n' + q.get())\n")


def test_a_wrapper_exception_alike_in_both_runs_is_judged_by_the_worker_s_error(
        tmp_path: Path) -> None:
    """Before: GOOD and BAD "ended the same way" (exit 1, the wrapper's line): nothing could
    be launched. Now the last exception (FileNotFoundError vs ValueError) judges each launch,
    and MODE is proven or found; the first error carries the worker's too."""
    prog = child(tmp_path / "serve.py", _SPAWN)
    store = tmp_path / ".runsnap"
    good = capture(store / "good.toml", ["python3", str(prog)], {"MODE": "y", "KNOB": "1"})
    time.sleep(0.01)
    bad = capture(store / "bad.toml", ["python3", str(prog)], {"MODE": "x", "KNOB": "2"})
    for path, error in ((good, "FileNotFoundError"), (bad, "ValueError")):
        text = path.read_text()
        # the wrapper's empty line carries the worker's error (runsnap/launch/outcome.py)
        assert f'first_error = "ProcessRaisedException: {error}: ' in text, [
            ln for ln in text.splitlines() if ln.startswith("first_error")]
    proc = run_runsnap("why", "--prove", "--yes", "--format", "json", "--against", str(good),
                       cwd=tmp_path)  # both failed: no earlier run ended well
    assert proc.stdout, proc.stderr
    out = json.loads(proc.stdout)
    assert proc.returncode == 0, (out.get("message"), out.get("cannot"), proc.stderr)
    assert out["status"] in ("proven", "found"), out["message"]
    assert [c["key"] for c in out["cause"]] == ["MODE"]
    trials = out["bisect"]["runs"] if out["bisect"] else []
    said = [out["proof"]["applied"] if out["proof"] else "", *(r["why"] for r in trials)]
    assert any("ValueError: mode x needs 4 workers, got 2, like BAD" in s for s in said), said
