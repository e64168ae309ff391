"""``runsnap why``: the reference found in the store, the diff's verdict, and the cause proven
(``--prove``: two launches) or found by bisect over the candidates first; real launches."""

from __future__ import annotations

import json
import time
from pathlib import Path

import runsnap
from runsnap.errors import UsageError
from runsnap.experiments.explaining import find_reference
from runsnap.snapshot import load
from tests.proof.conftest import SERVE, TRAIN, capture, child
from tests.proof.conftest import runsnap as run_runsnap


def _store(tmp_path: Path, body: str, good: dict[str, str | None], bad: dict[str, str | None],
           name: str = "launch.py") -> tuple[Path, Path]:
    prog = child(tmp_path / name, body)
    store = tmp_path / ".runsnap"
    g = capture(store / "good.toml", ["python3", str(prog)], good)
    time.sleep(0.01)
    b = capture(store / "bad.toml", ["python3", str(prog)], bad)
    return g, b


def _why(tmp_path: Path, *args: str) -> tuple[int, dict[str, object], str]:
    proc = run_runsnap("why", "--format", "json", *args, cwd=tmp_path)
    try:
        return proc.returncode, json.loads(proc.stdout), proc.stderr
    except ValueError:
        raise AssertionError(f"not JSON: {proc.stdout!r}\n{proc.stderr}") from None


def test_confident_names_the_cause_and_prove_launches_twice(tmp_path: Path) -> None:
    good, _bad = _store(tmp_path, SERVE, {"MODE": "y", "KNOB": "1"}, {"MODE": "x", "KNOB": "2"})
    code, out, _ = _why(tmp_path)
    assert code == 0 and out["status"] == "confident" and out["launches"] == 0
    assert [c["key"] for c in out["cause"]] == ["MODE"]  # type: ignore[attr-defined]
    assert out["restore"] == ["MODE=y"] and str(out["good"]).endswith("good.toml")
    assert str(out["how"]).startswith("evidence from the runs: ")
    code, out, err = _why(tmp_path, "--prove", "--yes")
    assert code == 0 and out["status"] == "proven" and out["launches"] == 2, err
    proof = out["proof"]
    assert proof["applied"].startswith("bad: ") and proof["reverted"].startswith("good: ")  # type: ignore[index]


def test_undecided_metric_incident_is_proven_by_bisect_without_a_test(tmp_path: Path) -> None:
    """Both exit 0, the loss differs: bisect runs over the candidates, judged by the loss."""
    _store(tmp_path, TRAIN, {"LR": "0.1", "KNOB_A": "1", "KNOB_B": "1"},
           {"LR": "0.9", "KNOB_A": "2", "KNOB_B": "2"})
    refused = run_runsnap("why", cwd=tmp_path)  # no terminal, no --yes: before any launch
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.endswith("runsnap: not run: review the launch above, then give --yes "
                                   "to run it\n")
    assert not list((tmp_path / ".runsnap").glob("bisect-*"))
    code, out, err = _why(tmp_path, "--yes")
    assert code == 0, err
    assert out["status"] == "found" and out["confidence"] == "undecided"
    assert [c["key"] for c in out["cause"]] == ["LR"]  # type: ignore[attr-defined]
    assert int(out["launches"]) >= 3 and str(out["how"]).startswith("experiment: runsnap bisect")  # type: ignore[call-overload]
    assert "trial 1:" in err  # progress on stderr


def test_the_reference_is_the_newest_earlier_good_run_of_the_same_launch(tmp_path: Path
                                                                          ) -> None:
    store = tmp_path / ".runsnap"
    other = child(tmp_path / "other.py", "print('ok')\n")
    prog = child(tmp_path / "launch.py", SERVE)
    older = capture(store / "a-older.toml", ["python3", str(prog), "--n", "1"], {"MODE": "y"})
    time.sleep(0.01)
    good = capture(store / "b-good.toml", ["python3", "-u", str(prog)], {"MODE": "y"})
    time.sleep(0.01)
    capture(store / "c-other.toml", ["python3", str(other)], {"MODE": "y"})
    capture(store / "d-failed.toml", ["python3", str(prog)], {"MODE": "x"})
    time.sleep(0.01)
    bad = load(capture(store / "e-bad.toml", ["python3", str(prog)], {"MODE": "x"}))
    found, how = find_reference(bad, str(store))
    assert found.path_text == str(good) and "exited 0" in how
    assert older.exists()
    lone = load(capture(store / "f.toml", ["python3", "-c", "raise SystemExit(3)"]))
    try:
        find_reference(lone, str(store))
    except UsageError as exc:
        assert "name one with --against REF" in str(exc)
    else:
        raise AssertionError("a reference was found for a launch with no good run")


def test_library_face(tmp_path: Path, monkeypatch: object) -> None:
    good, bad = _store(tmp_path, SERVE, {"MODE": "y"}, {"MODE": "x"})
    result = runsnap.why(bad, against=good, folder=str(tmp_path / ".runsnap"))
    assert result.status == "confident" and result.restore == ("MODE=y",)
    assert "runsnap why: most likely cause, from the evidence: env MODE" in \
        runsnap.render_text(result)
    assert runsnap.render_markdown(result).startswith("### runsnap why: ")


def test_a_proof_that_fails_hands_over_to_bisect(tmp_path: Path) -> None:
    """The evidence points at A (read in the function that raised), but the option --mode
    decides: the two launches of --prove do not confirm A, and bisect finds --mode."""
    prog = child(tmp_path / "launch.py",
                 "mode = sys.argv[sys.argv.index('--mode') + 1]\n"
                 "def fail():\n"
                 "    a = os.environ.get('A')\n"
                 "    if mode == 'x':\n"
                 "        raise ValueError(f'refused ({a})')\n"
                 "fail()\n")
    store = tmp_path / ".runsnap"
    capture(store / "good.toml", ["python3", str(prog), "--mode", "y"], {"A": "1"})
    time.sleep(0.01)
    capture(store / "bad.toml", ["python3", str(prog), "--mode", "x"], {"A": "2"})
    code, out, err = _why(tmp_path, "--prove", "--yes")
    assert code == 0, err
    assert out["confidence"] == "confident" and out["status"] == "found"
    assert [c["key"] for c in out["cause"]] == ["--mode"]  # type: ignore[attr-defined]
    assert str(out["how"]).startswith("the evidence named env A, which 2 launches did not "
                                      "confirm")
    assert out["proof"]["holds"] is False  # type: ignore[index]


def test_metric_tolerance_makes_a_small_move_count(tmp_path: Path) -> None:
    """The loss moves by 0.04 %: the same outcome for the default tolerance (1 %), a
    difference with ``--metric-tolerance loss=0`` (bit-exact CPU runs), as for ``diff``; a
    malformed one is one line and status 2, before anything runs."""
    _store(tmp_path, TRAIN, {"LR": "0.1"}, {"LR": "0.1001"})
    code, out, _ = _why(tmp_path)
    assert code == 1 and out["status"] == "none", out
    code, out, err = _why(tmp_path, "--metric-tolerance", "loss=0", "--yes")
    assert code == 0 and out["status"] in ("confident", "found"), (out, err)
    assert [c["key"] for c in out["cause"]] == ["LR"]  # type: ignore[attr-defined]
    bad = run_runsnap("why", "--metric-tolerance", "loss=tight", cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1, bad.stderr
    assert bad.stderr.startswith("runsnap: --metric-tolerance loss=tight: expected [NAME=]TOL")
