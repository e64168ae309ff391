"""A bisection's search trials run with only what their verdict needs
(:mod:`runsnap.experiments.quicktrial`): the same verdict as a full capture of the same
launch, secrets hidden as a capture hides them, nothing written but the log."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from runsnap.experiments.trials import BAD, GOOD, Criteria, OutcomeJudge, run_trial
from runsnap.launch import LaunchSpec
from runsnap.snapshot import load
from tests.proof.conftest import capture, child


def test_a_quick_trial_judges_as_a_full_capture_does_and_writes_no_secret(tmp_path: Path
                                                                          ) -> None:
    token = "hf_" + "Q" * 34
    prog = child(tmp_path / "launch.py",
                 "if os.environ['MODE'] == 'x':\n"
                 "    sys.exit(f\"ValueError: mode x refused for {os.environ['HF_TOKEN']} "
                 "at step 12\")\n"
                 "print('ok')\n")
    good = load(capture(tmp_path / "good.toml", ["python3", str(prog)],
                        {"HF_TOKEN": token, "MODE": "y"}))
    bad = load(capture(tmp_path / "bad.toml", ["python3", str(prog)],
                       {"HF_TOKEN": token, "MODE": "x"}))
    assert token not in str(bad["outcome"]["first_error"])  # a capture hides it
    judge = OutcomeJudge(good["outcome"], bad["outcome"])
    folder = tmp_path / "trials"
    folder.mkdir()
    got = {}
    for mode in ("x", "y"):
        spec = LaunchSpec.of(["python3", str(prog)],
                             env={**os.environ, "HF_TOKEN": token, "MODE": mode}, cwd=tmp_path)
        for quick in (True, False):
            name = f"{mode}-{'quick' if quick else 'full'}"
            out = run_trial(spec, name=name, folder=str(folder), criteria=Criteria(),
                            judge=judge, stop=threading.Event(), quick=quick)
            got[name] = out
            assert (out.snapshot is None) == quick, name
    assert got["x-quick"].verdict == got["x-full"].verdict == BAD
    assert got["y-quick"].verdict == got["y-full"].verdict == GOOD
    assert got["x-quick"].why == got["x-full"].why  # the same outcome, judged alike
    assert token not in got["x-quick"].why
    written = {p.name for p in folder.iterdir()}
    assert {"x-quick.log", "y-quick.log"} <= written
    assert not {"x-quick.toml", "y-quick.toml"} & written


def test_a_trial_judged_by_a_test_command_is_always_captured(tmp_path: Path) -> None:
    """``--test`` reads the trial's snapshot (RUNSNAP_TRIAL_SNAPSHOT): no quick trial then."""
    prog = child(tmp_path / "launch.py", "print('ok')\n")
    spec = LaunchSpec.of(["python3", str(prog)], env=dict(os.environ), cwd=tmp_path)
    out = run_trial(spec, name="t", folder=str(tmp_path), stop=threading.Event(),
                    criteria=Criteria(test='test -s "$RUNSNAP_TRIAL_SNAPSHOT"'), judge=None,
                    quick=True)
    assert out.verdict == GOOD and out.snapshot is not None
