"""Secrets never reach a snapshot; fingerprints still tell same from changed."""

from __future__ import annotations

import csv
import os
import stat
from pathlib import Path

import pytest

import runsnap
from runsnap.redact import FingerprintKey, Redactor, is_secret_name, load_key
from runsnap.snapshot import dumps
from tests.conftest import asset

HF = "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"
GH = "ghp_" + "0123456789abcdefghijABCDEFGHIJ0123456789"


def collisions() -> list[tuple[str, bool]]:
    with open(asset("secrets", "name-pattern-collisions.tsv"), newline="") as fh:
        return [(r["name"], r["known_secret"] == "true") for r in csv.DictReader(fh, delimiter="\t")]


@pytest.mark.parametrize(("name", "secret"), collisions())
def test_real_names_that_broad_patterns_catch(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


@pytest.mark.parametrize("name", [
    "HF_TOKEN", "OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID", "DB_PASSWORD",
    "WANDB_API_KEY", "MY_SERVICE_KEY", "GITHUB_TOKEN", "DATABASE_URL", "sentry_dsn", "hf-token",
    "api-key", "KAGGLE_KEY", "REDIS_PASS", "GOOGLE_APPLICATION_CREDENTIALS"])
def test_secret_names(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize("name", [
    "PATH", "PWD", "OLDPWD", "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", "NCCL_IB_PKEY",
    "TOKENIZERS_PARALLELISM", "SGLANG_MAX_NEW_TOKENS_LIMIT", "CUDA_VISIBLE_DEVICES",
    "NCCL_DEV_API_JIT", "TORCH_CUDNN_V8_API_DISABLED", "OAUTH_SCOPES", "max-total-tokens"])
def test_ordinary_names(name: str) -> None:
    assert not is_secret_name(name)


def test_capture_replaces_every_kind_of_secret(tmp_path: Path) -> None:
    env = {
        "PATH": os.environ["PATH"],
        "HF_TOKEN": HF,
        "OPENAI_API_KEY": "sk-proj-abcdefghijklmnopqrstuvwxyz012345",
        "PIP_INDEX_URL": "https://bob:hunter2hunter2@pypi.example.com/simple",
        "NOTES": f"token is {GH} ok",
        "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1",
        "HF_TOKEN_PATH": "/root/.cache/huggingface/token",
        "EMPTY_TOKEN": "",
    }
    argv = ["python", "serve.py", "--api-key", "abc123secret", "--hf-token=hf_zzz",
            "--url", "postgres://u:pw@db:5432/x", "--model-path", "/m"]
    snap = runsnap.capture(argv, env=env, cwd=tmp_path, output=tmp_path / "s.toml")
    text = (tmp_path / "s.toml").read_text()
    for secret in (HF, "sk-proj-abcdefghijklmnopqrstuvwxyz012345", "hunter2hunter2", GH,
                   "abc123secret", "hf_zzz", ":pw@"):
        assert secret not in text
    v = snap["env"]["vars"]
    assert v["HF_TOKEN"].startswith("<redacted:hmac-sha256:")
    assert v["PIP_INDEX_URL"].endswith("@pypi.example.com/simple")
    assert v["NOTES"].startswith("token is <redacted:") and v["NOTES"].endswith(" ok")
    assert v["SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"] == "1"
    assert v["HF_TOKEN_PATH"] == "/root/.cache/huggingface/token"
    assert v["EMPTY_TOKEN"] == ""  # set-but-empty is a fact worth keeping
    a = snap["command"]["argv"]
    assert a[3].startswith("<redacted:") and a[4].startswith("--hf-token=<redacted:")
    assert a[6].startswith("postgres://<redacted:") and a[6].endswith("@db:5432/x")
    assert snap["command"]["options"]["api-key"] == a[3]
    assert snap["command"]["options"]["model-path"] == "/m"
    assert "env.vars.HF_TOKEN" in snap.meta["redacted"]


def test_fingerprints_compare_across_snapshots_of_one_user(tmp_path: Path) -> None:
    def token_fp(value: str) -> str:
        env = {"PATH": os.environ["PATH"], "HF_TOKEN": value}
        return runsnap.capture([], env=env, cwd=tmp_path)["env"]["vars"]["HF_TOKEN"]

    assert token_fp("one-secret") == token_fp("one-secret")
    assert token_fp("one-secret") != token_fp("another-secret")


def test_the_key_file_is_private_and_stays_out_of_the_snapshot(tmp_path: Path,
                                                              key_file: Path) -> None:
    snap = runsnap.capture([], env={"PATH": os.environ["PATH"]}, cwd=tmp_path)
    key = key_file.read_bytes()
    assert len(key) == 32
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert key.hex() not in dumps(snap)
    assert snap.meta["fingerprint_key"] == load_key().id


def test_key_ids_differ_between_users_so_fingerprints_are_not_compared(tmp_path: Path) -> None:
    a = load_key({"RUNSNAP_KEY_FILE": str(tmp_path / "a.key")})
    b = load_key({"RUNSNAP_KEY_FILE": str(tmp_path / "b.key")})
    assert a.id != b.id
    assert Redactor(a).fingerprint("x") != Redactor(b).fingerprint("x")


def test_unwritable_key_location_falls_back_to_an_ephemeral_key(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    key = load_key({"RUNSNAP_KEY_FILE": str(blocker / "sub" / "k")})
    assert key.source == "ephemeral" and len(key.key) == 32


def test_token_shapes_count_only_from_a_word_boundary(tmp_path: Path) -> None:
    r = Redactor(load_key())
    fp = r.fingerprint
    from runsnap.knowledge.secrets import token_spans

    inside = "x" + HF  # part of a longer word: not this token, as with a leading \b
    assert token_spans(inside) == []  # (the word as a whole may still look opaque)
    # A rejected candidate must not hide a real token that starts inside it, after a '-'.
    text = f"risk-{HF} and xsk-abcdefghijklmnopqrstuvwxyz-{GH}"
    assert r.scrub(text, "t") == f"risk-{fp(HF)} and xsk-abcdefghijklmnopqrstuvwxyz-{fp(GH)}"
    assert r.scrub(f"{HF}\n{GH}", "t") == f"{fp(HF)}\n{fp(GH)}"


def test_name_globs_match_as_fnmatch_does() -> None:
    import fnmatch

    from runsnap.knowledge.secrets import NAME_FILES, name_globs, name_rules

    names = ["HF_TOKEN", "TOKEN", "MY_KEY", "KEY", "MONKEY", "DATABASE_URL", "X_DATABASE_URL",
             "SGLANG_MAX_NEW_TOKENS_LIMIT", "TOKENIZERS_PARALLELISM", "A_PASS", "PASSWORD1",
             "GOOGLE_APPLICATION_CREDENTIALS", "HF_TOKEN_PATH", "DB_PASSX", "SESSION_IDS"]
    for globs, matcher in zip((name_globs(f) for f in NAME_FILES), name_rules(), strict=True):
        for name in names:
            assert matcher.match(name) == any(fnmatch.fnmatchcase(name, g) for g in globs), name


def test_the_key_never_shows_in_its_repr() -> None:
    key = FingerprintKey(bytes(range(32)), "/home/u/.config/runsnap/fingerprint.key")
    text = repr(key)
    assert key.id in text and "fingerprint.key" in text
    assert repr(key.key)[2:20] not in text and key.key.hex()[:16] not in text


def test_a_secret_found_in_a_text_is_hidden_wherever_it_stands_in_that_text() -> None:
    # Found once by a rule (an assignment, a URL's credentials), the value is hidden also where
    # no rule would see it: before the finding, after it, and in what is redacted later.
    r = Redactor(FingerprintKey(bytes(range(32)), "test"))
    token, password = "Zq8vLm3nRt5wXy7Q4", "hunter2-Pw-9x"
    diff = (f"+echo {token}\n+API_KEY={token}\n+again {token}\n"
            f"+login {password}\n+DB=https://bob:{password}@db.example.com/app\n")
    out = r.sections({"git": {"diff": diff}, "later": {"log": f"said {password} {token}"}})
    text = repr(out)
    assert token not in text and password not in text
    assert "db.example.com/app" in out["git"]["diff"]  # the host stays readable
    lines = out["git"]["diff"].splitlines()
    assert len({line.split()[-1].rpartition("=")[2] for line in lines[:3]}) == 1  # one secret


def test_a_text_found_clean_is_scrubbed_again_once_a_secret_it_holds_is_known() -> None:
    r = Redactor(FingerprintKey(bytes(range(32)), "test"))
    line = "connect with Zq8vLm3nRt5wXy7Q4 please"
    assert r.scrub(line, "a") == line  # nothing tells it is a secret yet
    r.sections({"env": {"vars": {"DB_PASSWORD": "Zq8vLm3nRt5wXy7Q4"}}})
    assert "Zq8vLm3nRt5wXy7Q4" not in r.scrub(line, "b")
    assert r.redacted[-1] == "b"


def test_the_token_rules_are_compiled_by_a_thread_for_the_childs_output() -> None:
    """A capture whose texts were all known clean has not compiled the token rules before the
    launch; the child's output is searched after it ends: a wrapped run compiles them in a
    thread beside its collectors."""
    from runsnap.knowledge import secrets as rules

    rules.value_rules.cache_clear()
    thread = Redactor(FingerprintKey(b"k" * 32, "test")).warm()
    thread.join(timeout=60)
    assert not thread.is_alive() and rules.value_rules.cache_info().currsize == 1
