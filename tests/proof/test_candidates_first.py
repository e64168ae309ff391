"""``runsnap why`` undecided between a few candidates among many differences: the bisection
tries the diff's candidates together first, and halves within them, rather than halving all
the differences from the top.

Seen in the diagnosis corpus (fresh8 ``id2label-grown-to-three``: 2 candidates among 42
changes, 11 launches; ``pipeline-size-one-node``, 12). Real launches traced by ``runsnap
capture``."""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.proof.conftest import capture, child
from tests.proof.conftest import runsnap as run_runsnap

SERVE = ("mode = os.environ.get('MODE')\n"
         "level = os.environ.get('LEVEL')\n"
         "if mode == 'x':\n"
         "    raise ValueError('unsupported configuration')\n"
         "print('served')\n")


def test_the_diffs_candidates_are_searched_together_first(tmp_path: Path) -> None:
    prog = child(tmp_path / "serve.py", SERVE)
    store = tmp_path / ".runsnap"
    capture(store / "good.toml", ["python3", str(prog)], {"MODE": "a", "LEVEL": "1"})
    time.sleep(0.01)
    unread = {f"SHELL_SETTING_{i}": str(i) for i in range(14)}  # another shell's, never read
    capture(store / "bad.toml", ["python3", str(prog)], {"MODE": "x", "LEVEL": "2", **unread})
    out = json.loads(run_runsnap("why", "--prove", "--yes", "--format", "json",
                                 cwd=tmp_path).stdout)
    assert out["status"] == "found", out
    assert [c["key"] for c in out["cause"]] == ["MODE"], out
    runs = out["bisect"]["runs"]
    assert [len(r["applied"]) for r in runs[:2]] == [16, 2], runs  # all, then the 2 candidates
    # all, the candidates, each of them, the answer and GOOD's launch twice each
    assert out["launches"] <= 8, [len(r["applied"]) for r in runs]
