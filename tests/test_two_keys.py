"""Snapshots taken under two fingerprint keys (``RUNSNAP_KEY_FILE``: a colleague's snapshot of
the same setup, issue 37 class 7): a secret, and a text holding one (a code diff), differ only
by fingerprints that cannot be compared; the diff says "not comparable" and does not count
them, so it exits 0 as it does for two snapshots under one key. Under one key a changed secret
still counts; under two keys a real change still counts. Real captures of a real repository."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import make_repo

TOKEN = "hf_" + "Qm7vXr2LpN9sKd4TzW8yBc6HfJ1gA5eU3o"


def _capture(repo: Path, tmp: Path, out: str, key: str, token: str) -> Path:
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp), "LANG": "C.UTF-8",
           "RUNSNAP_KEY_FILE": str(tmp / key), "RUNSNAP_CACHE_DIR": str(tmp / "cache"),
           "HF_TOKEN": token}
    subprocess.run([sys.executable, "-m", "runsnap", "capture", "-o", str(tmp / out), "--",
                    sys.executable, "-c", "pass"], cwd=repo, env=env, check=True,
                   capture_output=True)
    return tmp / out


def _diff(tmp: Path, a: Path, b: Path) -> tuple[int, dict]:
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp), "RUNSNAP_KEY_FILE": str(tmp / "k1"),
           "RUNSNAP_CACHE_DIR": str(tmp / "cache")}
    res = subprocess.run([sys.executable, "-m", "runsnap", "diff", "--all", "--format", "json",
                          str(a), str(b)], env=env, capture_output=True, text=True, check=False)
    return res.returncode, json.loads(res.stdout)


def test_fingerprints_under_two_keys_are_not_comparable_and_not_counted(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"deploy.sh": "echo start\n"})
    with (repo / "deploy.sh").open("a") as fh:  # an uncommitted line holding a secret
        fh.write('curl -sf -u "deploy:Xk29fLmQ7rTzWp4Nd1Vb" https://x.example/upload\n')
    a = _capture(repo, tmp_path, "a.toml", "k1", TOKEN)
    b = _capture(repo, tmp_path, "b.toml", "k2", TOKEN)
    status, report = _diff(tmp_path, a, b)
    rows = {d["key"]: d for d in report["differences"]}
    assert status == 0, [(k, d["score"]) for k, d in rows.items() if not d["hidden"]]
    for key in ("HF_TOKEN", "repo: deploy.sh"):
        assert rows[key]["hidden"] and "not comparable" in rows[key]["reason"], rows[key]
    assert any("different keys" in n for n in report["notes"])
    assert "Xk29fLmQ7rTzWp4N" not in json.dumps(report) and TOKEN[3:] not in json.dumps(report)

    same_key = _capture(repo, tmp_path, "c.toml", "k1", TOKEN[:-4] + "zzzz")
    _, report = _diff(tmp_path, a, same_key)
    row = next(d for d in report["differences"] if d["key"] == "HF_TOKEN")
    assert "secret changed" in row["reason"] and "not comparable" not in row["reason"], row
    assert row["score"] > 5  # counted (the child never read it: it changed nothing shown)

    (repo / "deploy.sh").write_text("echo changed\n")  # a real change under two keys counts
    d = _capture(repo, tmp_path, "d.toml", "k2", TOKEN)
    status, report = _diff(tmp_path, a, d)
    rows = {x["key"]: x for x in report["differences"]}
    assert status == 1 and not rows["repo: deploy.sh"]["hidden"], rows["repo: deploy.sh"]
