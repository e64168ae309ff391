"""Redaction is order-free, happens before any cut, never turns a value into a name, and leaves
harmless values under secret-looking names visible (issue 23)."""

from __future__ import annotations

import base64
import os
import random
import string
import sys
from pathlib import Path

import runsnap
from runsnap.redact import FingerprintKey, Redactor
from runsnap.snapshot import dumps, load
from tests.conftest import run_runsnap

RNG = random.SystemRandom()


def _password(n: int = 18) -> str:
    # no token shape, no opaque look: only a name or a context gives it away
    return "Pw" + "".join(RNG.choice(string.ascii_lowercase) for _ in range(n)) + "!7"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "HOME": str(tmp_path), **extra}


def test_a_secret_is_hidden_wherever_it_stands_whatever_the_order(tmp_path: Path) -> None:
    pw = _password()
    env = _env(tmp_path, AAA_FIRST_NEUTRAL=pw, MIDDLE_NOTES=f"login with {pw} today",
               ZZZ_DB_PASSWORD=pw)
    # [command] is collected before [env]: the arguments meet the secret before its name does
    snap = runsnap.capture(["python", pw, "--label-text", f"x{pw}y"], env=env, cwd=tmp_path)
    text = dumps(snap)
    assert pw not in text
    assert snap["env"]["vars"]["AAA_FIRST_NEUTRAL"].startswith("<redacted:")


def test_order_free_inside_one_call_to_sections() -> None:
    pw = _password()
    r = Redactor(FingerprintKey(os.urandom(32), "t"))
    out = r.sections({"outcome": {"tail": [f"echo {pw}"]},
                      "env": {"vars": {"A": pw, "Z_PASSWORD": pw}}})
    assert pw not in repr(out)


def test_a_pem_block_is_never_an_option_name(tmp_path: Path) -> None:
    body = "\n".join(base64.b64encode(os.urandom(48)).decode() for _ in range(6))
    pem = f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----"
    snap = runsnap.capture(["python", "serve.py", "--ssh-key", pem, pem, "--port", "8000",
                            "--note", "two words"], env=_env(tmp_path), cwd=tmp_path)
    options = snap["command"]["options"]
    assert set(options) == {"ssh-key", "port", "note"}
    assert options["port"] == "8000" and options["note"] == "two words"
    text = dumps(snap)
    for line in body.splitlines():
        assert line[:12] not in text
    assert all(len(place) < 200 for place in snap.meta["redacted"])


def test_a_token_past_the_cut_of_a_source_line_is_hidden_before_the_cut(tmp_path: Path) -> None:
    token = "ghp_" + "".join(RNG.choice(string.ascii_letters + string.digits) for _ in range(36))
    child = tmp_path / "child.py"
    pad = "x" * 262  # the token starts 15 characters before the cut at 300
    child.write_text(f"raise ValueError('{pad}' + '{token}' + 'tail')  # {token}\n")
    out = tmp_path / "s.toml"
    r = run_runsnap("capture", "-o", str(out), "--", sys.executable, str(child),
                    cwd=tmp_path, env=_env(tmp_path))
    assert r.returncode == 1, r.stderr
    snap = load(out)
    tb = snap["outcome"]["traceback"]
    code = tb["frames"][-1]["code"]
    assert len(code) <= 300
    text = out.read_text()
    for i in range(len(token) - 11):
        assert token[i:i + 12] not in text, token[i:i + 12]


def test_a_line_longer_than_the_kept_length_loses_its_cut_word(tmp_path: Path) -> None:
    token = "glpat-" + "".join(RNG.choice(string.ascii_letters) for _ in range(20))
    child = tmp_path / "child.py"
    child.write_text(f"print('y' * 4080 + ' ' + {token!r} + ' end')\n")
    out = tmp_path / "s.toml"
    r = run_runsnap("capture", "-o", str(out), "--", sys.executable, str(child),
                    cwd=tmp_path, env=_env(tmp_path))
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    for i in range(len(token) - 11):
        assert token[i:i + 12] not in text


def test_harmless_values_under_secret_names_stay_visible(tmp_path: Path) -> None:
    visible = {
        "TOKEN_BUDGET": "131072", "TOKEN_LIMIT_PER_REQUEST": "65536",
        "PASSWORD_MIN_LENGTH": "12", "SECRET_SANTA_ENABLED": "false",
        "AWS_ACCESS_KEY_ID_HINT": "see vault", "GPG_KEY": "3AA5C34371567BD2",
        "SSH_HOST_KEY_FINGERPRINT": "SHA256:" + base64.b64encode(os.urandom(32)).decode()[:43],
        "DATABASE_URL": "postgresql://app@db.internal:5432/app",
        "XDG_SESSION_ID": "c2", "TMUX_PANE": "%3", "XDG_SESSION_COOKIE": "a" * 32,
    }
    hidden = {
        "AWS_SESSION_TOKEN": "IQoJb3JpZ2luX2VjE" + base64.b64encode(os.urandom(300)).decode(),
        "DB_PASSWORD": "postgres", "API_TOKEN": "1234abcd5678efgh",
    }
    snap = runsnap.capture(["python"], env=_env(tmp_path, **visible, **hidden), cwd=tmp_path)
    got = snap["env"]["vars"]
    assert {k: got[k] for k in visible} == visible
    assert all(got[k].startswith("<redacted:") for k in hidden)


def test_a_user_name_without_a_password_stays_and_a_token_user_does_not(tmp_path: Path) -> None:
    token = "ghp_" + "".join(RNG.choice(string.ascii_letters + string.digits) for _ in range(36))
    env = _env(tmp_path, REPO_URL=f"https://{token}@github.com/org/repo.git",
               MIRROR="ssh://git@example.com:2222/srv/repo.git")
    got = runsnap.capture(["python"], env=env, cwd=tmp_path)["env"]["vars"]
    assert got["MIRROR"] == "ssh://git@example.com:2222/srv/repo.git"
    assert token not in got["REPO_URL"] and got["REPO_URL"].endswith("@github.com/org/repo.git")


def test_scrub_reports_only_what_it_changed(tmp_path: Path) -> None:
    out = tmp_path / "s.toml"
    pw = _password()
    runsnap.capture(["python", "--password", pw], env=_env(tmp_path, HF_TOKEN="hf_" + "a" * 34),
                    cwd=tmp_path, output=out)
    before = out.read_bytes()
    r = run_runsnap("scrub", str(out), cwd=tmp_path, env=_env(tmp_path, **{
        k: v for k, v in os.environ.items() if k.startswith("RUNSNAP_")}))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"{out}: nothing to redact"
    assert out.read_bytes() == before
