"""A config file outside any repository, which both runs read and a teammate edited in place
between them: no launch can put GOOD's content back (only its digest is recorded). ``runsnap
why`` says so, naming the file, when GOOD's own launch goes bad here; before, it named only
the other differences it could not apply (a CI token), or none.

Seen in the diagnosis corpus (fresh7 ``shared-engine-config-cuda``, benchmarks/RESULTS.md).
Real launches, traced by ``runsnap capture``."""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.proof.conftest import capture, child
from tests.proof.conftest import runsnap as run_runsnap


def test_a_file_both_runs_read_with_other_content_is_named_as_not_applicable(
        tmp_path: Path) -> None:
    cfg = tmp_path / "mnt" / "team-configs" / "engine.yaml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text("device: cpu\n")
    prog = child(tmp_path / "serve.py",
                 "knob = os.environ.get('KNOB')\n"
                 "device = open(sys.argv[1]).read().split(':')[1].strip()\n"
                 "if device != 'cpu':\n"
                 "    raise RuntimeError(f'no {device} device on this node')\n"
                 "print('served')\n")
    store = tmp_path / ".runsnap"
    good = capture(store / "good.toml", ["python3", str(prog), str(cfg)], {"KNOB": "1"})
    time.sleep(0.01)
    cfg.write_text("device: cuda\n")  # for the GPU nodes, by a teammate
    bad = capture(store / "bad.toml", ["python3", str(prog), str(cfg)], {"KNOB": "2"})
    proc = run_runsnap("why", "--prove", "--yes", "--format", "json", cwd=tmp_path)
    out = json.loads(proc.stdout)
    where = f"runtime file {cfg}"
    assert out["status"] in ("none", "confident"), out["message"]
    assert any(c.startswith(f"{where}: ") and "only its digest is recorded" in c
               for c in out["cannot"]), out["cannot"]
    if out["status"] == "none":  # a bisection: GOOD's own launch, tried first, goes bad here
        assert "goes bad here" in out["message"] and where in out["message"], out["message"]
    # KNOB, read too, is not claimed; the file may be, by evidence alone: the error quotes
    # 'cuda', the value B's copy gives ``device`` ([runtime.data_files] quoted)
    assert [f"{c['section']} {c['key']}" for c in out["cause"]] in ([], [where]), out["cause"]
    # bisect refuses it, as it refuses a model's other files, unless --force
    refused = run_runsnap("bisect", str(good), str(bad))
    assert refused.returncode == 2 and "only its digest is recorded" in refused.stderr
