"""The formats an adversarial pass found leaking (issue 37, class 7), planted in a real capture
in every place at once: curl's ``-u user:password``, Facebook, Asana, Discord, Kraken and
Twitter tokens (values generated from the providers' documented formats in
tests/secrets/formats.py, never from runsnap's rules) in the environment under a neutral name
and in a JSON value, in argv, in the child's output lines (stdout and stderr), its traceback's
message and an uncommitted code diff. Every output format (``show``, ``report`` and ``diff``
in text, Markdown and JSON), the snapshot and the ``--log`` file are searched for each value's
random part.

The harmless values found hidden by that pass must stay visible: 40-hex commit ids in output
lines and in a code diff, a Hugging Face cache path's snapshot hash, a password-less
``postgresql://analytics@db...`` URL kept whole, and a random-looking ``BUILD_ID``."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

from tests.conftest import git, make_repo
from tests.secrets.formats import FORMATS, generate_masked

FIDS = ("facebook-token", "asana", "discord-bot", "twitter-bearer", "twitter-access-token",
        "kraken-private-key")
RNG = random.Random(int.from_bytes(os.urandom(8), "big"))
ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
COMMIT = "3f9c2a7d1e8b4f6a0c5d9e2b7a1f4c8d6e3b0a95"
HF_PATH = ("/srv/hf/hub/models--meta-llama--Llama-3.1-8B/snapshots/"
           "0e9e39f249a16976918f6564b8830bc894c89659/config.json")
DB_URL = "postgresql://analytics@db.internal:5432/metrics"


def _values() -> dict[str, str]:
    spec = {f[0]: f[3] for f in FORMATS}
    out = {fid: generate_masked(spec[fid], RNG)[0] for fid in FIDS}
    out["curl-password"] = "".join(RNG.choice(ALNUM) for _ in range(18))
    return out


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    res = subprocess.run([sys.executable, "-m", "runsnap", *args], cwd=cwd, env=env,
                         capture_output=True, text=True, check=False)
    return res.stdout + res.stderr


def test_leaked_formats_are_hidden_everywhere_and_harmless_values_kept(tmp_path: Path) -> None:
    vals = _values()
    build_id = "".join(RNG.choice(ALNUM) for _ in range(24))
    repo = make_repo(tmp_path / "repo", {"deploy.sh": "echo start\n", "app.py": "x = 1\n"})
    with (repo / "deploy.sh").open("a") as fh:
        fh.write(f'curl -sf -u "deploy:{vals["curl-password"]}" https://x.example/upload\n')
        fh.write(f"# reverts {COMMIT}\n")
    with (repo / "app.py").open("a") as fh:
        for i, fid in enumerate(FIDS):
            fh.write(f'SETTING_{i} = "{vals[fid]}"\n')
    child = tmp_path / "child.py"
    child.write_text(
        "import os, sys\n"
        f"print('checked out {COMMIT} (HEAD)')\n"
        f"print('loading {HF_PATH}')\n"
        f"print('db: {DB_URL}', file=sys.stderr)\n"
        f"print('+ curl -u alice:' + os.environ['PASS_SEEN'] + ' https://api.example.com/x')\n"
        "for k in sorted(os.environ):\n"
        "    if k.startswith('SETTING_'):\n"
        "        print('got', os.environ[k]); print('err', os.environ[k], file=sys.stderr)\n"
        "raise RuntimeError('login refused for ' + os.environ['SETTING_0'] + ' and '\n"
        "                   + os.environ['SETTING_5'])\n")
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "LANG": "C.UTF-8",
           "RUNSNAP_KEY_FILE": str(tmp_path / "key"), "RUNSNAP_CACHE_DIR": str(tmp_path / "cache"),
           "BUILD_ID": build_id, "DATABASE_URL": DB_URL, "PASS_SEEN": vals["curl-password"],
           **{f"SETTING_{i}": vals[fid] for i, fid in enumerate(FIDS)},
           "APP_SETTINGS_JSON": json.dumps({"items": [{"name": f"item-{i}", "value": vals[fid]}
                                                      for i, fid in enumerate(FIDS)]})}
    argv = [sys.executable, str(child), "--fb", vals["facebook-token"], vals["asana"],
            f"--tw={vals['twitter-bearer']}", vals["discord-bot"], vals["twitter-access-token"],
            "--kraken", vals["kraken-private-key"], "-u", f"alice:{vals['curl-password']}"]
    snap, log = tmp_path / "s.toml", tmp_path / "run.log"
    # (capture's own output is the child's, passed through as it is without runsnap)
    _run(["capture", "-o", str(snap), "--log", str(log), "--", *argv], repo, env)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "next")
    other = tmp_path / "t.toml"
    _run(["capture", "-o", str(other), "--", sys.executable, "-c", "pass"], repo, env)
    outputs = {"snapshot": snap.read_text(), "log": log.read_text()}
    for fmt in ("text", "markdown", "json"):
        outputs[f"show {fmt}"] = _run(["show", "--format", fmt, str(snap)], repo, env)
        outputs[f"report {fmt}"] = _run(["report", "--format", fmt, str(snap)], repo, env)
        outputs[f"diff {fmt}"] = _run(["diff", "--all", "--format", fmt, str(other), str(snap)],
                                      repo, env)
    leaks = [(fid, where) for fid, value in vals.items() for where, text in outputs.items()
             if any(value[i:i + 12] in text for i in range(0, len(value) - 11, 4)
                    if not value[i:i + 12].startswith("AAAAAAAA"))]
    assert leaks == []
    recorded = outputs["snapshot"]  # each place was really recorded, hidden
    assert "login refused for <redacted:hmac-sha256:" in recorded
    assert "+ curl -u <redacted:hmac-sha256:" in outputs["log"]
    assert 'SETTING_0 = "<redacted:hmac-sha256:' in recorded and "item-5" in recorded
    kept = {"commit in output": f"checked out {COMMIT}", "commit in diff": f"reverts {COMMIT}",
            "hf snapshot hash": HF_PATH, "url without password": DB_URL, "BUILD_ID": build_id}
    for where in ("snapshot", "show json"):
        hidden = [k for k, v in kept.items() if v not in outputs[where]]
        assert hidden == [], (where, hidden)
    for name in ("commit in output", "hf snapshot hash"):
        assert kept[name] in outputs["log"], name
