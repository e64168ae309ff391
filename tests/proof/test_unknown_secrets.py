"""GOOD ran as a CI job with a token; BAD ran in a notebook without it, under another user's
fingerprint key. ``runsnap why`` cannot restore GOOD's token here, and BAD ran without it: the
trials run without it, as BAD did, and it is said as a difference no trial applies, where
before ``why`` stopped with "cannot restore GOOD's secrets" (exit 2).

Seen in the diagnosis corpus: every launching incident of fresh7 (GOOD a GitLab CI job with
``CI_JOB_TOKEN``, BAD a JupyterHub terminal) exited 2. Real launches, real ``runsnap why``."""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.proof.conftest import SERVE, TRAIN, capture, child
from tests.proof.conftest import runsnap as run_runsnap

_TOKEN = "glpat-Zq3xT9vKm2LpW8rYc4Nf"
#: pytest's own variable, which differs from test phase to phase and reads as a secret
_QUIET: dict[str, str | None] = {"PYTEST_CURRENT_TEST": None}


def _store(tmp_path: Path, body: str, good: dict[str, str | None],
           bad: dict[str, str | None]) -> Path:
    prog = child(tmp_path / "launch.py", body)
    store = tmp_path / ".runsnap"
    capture(store / "good.toml", ["python3", str(prog)],
            {**good, **_QUIET, "CI_DEPLOY_TOKEN": _TOKEN,
             "RUNSNAP_KEY_FILE": str(tmp_path / "ci.key")})
    time.sleep(0.01)
    capture(store / "bad.toml", ["python3", str(prog)],
            {**bad, **_QUIET, "CI_DEPLOY_TOKEN": None,
             "RUNSNAP_KEY_FILE": str(tmp_path / "nb.key")})
    assert _TOKEN not in (store / "good.toml").read_text()
    return store


def _why(tmp_path: Path, *args: str) -> tuple[int, dict[str, object], str]:
    proc = run_runsnap("why", "--yes", "--format", "json", *args, cwd=tmp_path)
    assert proc.stdout, proc.stderr
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def test_a_secret_good_had_and_bad_ran_without_is_run_without(tmp_path: Path) -> None:
    """Undecided (the loss moved): bisect runs, GOOD's launch first (nothing applied, without
    the token, must go good), and finds LR; the token is said as not applied."""
    _store(tmp_path, TRAIN, {"LR": "0.1", "KNOB_A": "1", "KNOB_B": "1"},
           {"LR": "0.9", "KNOB_A": "2", "KNOB_B": "2"})
    code, out, err = _why(tmp_path)
    assert code == 0, (out.get("message"), err)
    assert out["status"] == "found" and [c["key"] for c in out["cause"]] == ["LR"]  # type: ignore[attr-defined]
    cannot = [c for c in out["cannot"] if c.startswith("env CI_DEPLOY_TOKEN: ")]  # type: ignore[attr-defined]
    assert len(cannot) == 1 and "GOOD's secret, not known here (the snapshot was " \
        "fingerprinted with another key" in cannot[0] and cannot[0].endswith(
            "every trial runs without it, as BAD did"), out["cannot"]
    runs = out["bisect"]["runs"]  # type: ignore[index]
    assert runs[0]["applied"] == [] and runs[0]["verdict"] == "good", runs[0]
    assert _TOKEN not in json.dumps(out) and _TOKEN not in err


def test_a_proof_runs_without_a_secret_bad_did_not_have(tmp_path: Path) -> None:
    _store(tmp_path, SERVE, {"MODE": "y"}, {"MODE": "x"})
    code, out, err = _why(tmp_path, "--prove")
    assert code == 0, (out.get("message"), err)
    assert out["status"] == "proven" and [c["key"] for c in out["cause"]] == ["MODE"]  # type: ignore[attr-defined]


def test_a_secret_bad_had_too_is_still_refused(tmp_path: Path) -> None:
    """Both runs had the token (under other keys): BAD's launch had it, so no trial can run
    as BAD did without it; nothing is launched, and why says why, as before."""
    prog = child(tmp_path / "launch.py", SERVE)
    store = tmp_path / ".runsnap"
    for name, mode, key in (("good", "y", "ci.key"), ("bad", "x", "nb.key")):
        capture(store / f"{name}.toml", ["python3", str(prog)],
                {**_QUIET, "MODE": mode, "CI_DEPLOY_TOKEN": _TOKEN,
                 "RUNSNAP_KEY_FILE": str(tmp_path / key)})
        time.sleep(0.01)
    code, out, _err = _why(tmp_path, "--prove")
    assert code == 0 and out["status"] == "confident" and out["launches"] == 0, out
    assert any("cannot restore GOOD's secrets: env CI_DEPLOY_TOKEN" in c
               for c in out["cannot"]), out["cannot"]  # type: ignore[attr-defined]
    assert not list(store.glob("bisect-*/trial-*.log"))
