"""A git-ignored local override (``settings.local.toml``) that both runs read, rewritten
between them: the capture keeps a copy of each content in the user's cache (it holds no
secret), so bisect and ``runsnap why`` put GOOD's content back in a copy of the repository and
prove the file the cause; the user's file is never written. A file holding a secret is never
copied, and blocks as before.

Seen in the diagnosis corpus: fresh15 ``batch-size-string-local-params-both-fail``, fresh16
``hyperparameters-all-strings``, fresh17 ``local-batch-size-zero-both-fail``, fresh18
``dynaconf-local-override-metric``: the file named, never proven ("only its digest is
recorded"). Real git repositories, real launches traced by ``runsnap capture``."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tests.conftest import make_repo
from tests.proof.conftest import bisect, capture, child
from tests.proof.conftest import runsnap as run_runsnap

TRAIN = ("import tomllib\n"
         "cfg = tomllib.load(open('settings.toml', 'rb'))\n"
         "if os.path.exists('settings.local.toml'):\n"
         "    cfg.update(tomllib.load(open('settings.local.toml', 'rb')))\n"
         "knob = os.environ.get('KNOB')\n"
         "if cfg['batch_size'] < 1:\n"
         "    raise ValueError(f\"batch_size should be a positive integer, got {cfg['batch_size']}\")\n"
         "print(f\"loss={1.0 / cfg['batch_size']:.4f}\")\n")


def _kept(cache: Path) -> list[bytes]:
    folder = cache / "kept"
    return sorted(p.read_bytes() for p in folder.iterdir()) if folder.is_dir() else []


def _two_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, good_local: str,
              bad_local: str) -> tuple[Path, Path, Path]:
    repo = make_repo(tmp_path / "churn", {".gitignore": ".runsnap/\nsettings.local.toml\n",
                                           "settings.toml": "batch_size = 8\nepochs = 3\n"})
    monkeypatch.chdir(repo)
    prog = child(repo / "train.py", TRAIN)
    local = repo / "settings.local.toml"
    local.write_text(good_local)
    good = capture(repo / ".runsnap" / "good.toml", ["python3", str(prog)], {"KNOB": "1"})
    time.sleep(0.01)
    local.write_text(bad_local)  # the user's own override, edited between the runs
    bad = capture(repo / ".runsnap" / "bad.toml", ["python3", str(prog)], {"KNOB": "2"})
    return repo, good, bad


def test_a_kept_override_is_put_back_in_a_copy_and_proven(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo, good, bad = _two_runs(tmp_path, monkeypatch, "batch_size = 4\n", "batch_size = 0\n")
    cache = Path(os.environ["RUNSNAP_CACHE_DIR"])
    assert b"batch_size = 4\n" in _kept(cache) and b"batch_size = 0\n" in _kept(cache)
    where = f"runtime file {repo / 'settings.local.toml'}"
    proc, answer = bisect(good, bad, "--yes")
    assert proc.returncode == 0, proc.stderr
    assert answer["status"] == "found", answer
    assert [f"{c['section']} {c['key']}" for c in answer["cause"]] == [where], answer
    assert (repo / "settings.local.toml").read_text() == "batch_size = 0\n"  # never written
    why = run_runsnap("why", "--prove", "--yes", "--format", "json", cwd=repo)
    out = json.loads(why.stdout)
    assert out["status"] in ("proven", "found"), out  # by the evidence first, or bisect
    assert [f"{c['section']} {c['key']}" for c in out["cause"]] == [where], out


def test_an_override_with_a_secret_is_not_copied_and_blocks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "hf_" + "Qz7kLmP2xW9vBn4RtY6uJc8HdFs3GaEo1KiX"
    _repo, good, bad = _two_runs(
        tmp_path, monkeypatch, f'batch_size = 4\nhub_token = "{secret}"\n',
        f'batch_size = 0\nhub_token = "{secret}"\n')
    cache = Path(os.environ["RUNSNAP_CACHE_DIR"])
    assert not any(secret.encode() in data for data in _kept(cache))
    assert not any(b"batch_size = 4" in data for data in _kept(cache))
    proc = run_runsnap("bisect", str(good), str(bad), "--yes")
    assert proc.returncode == 2 and "only its digest is recorded" in proc.stderr, proc.stderr
    assert secret not in proc.stdout + proc.stderr
