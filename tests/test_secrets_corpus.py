"""The leak corpus: freshly generated secrets planted in every place a capture reads, then
every byte runsnap writes or prints searched for each of them and each 12-character piece.

The secrets are random on every run (no value can be special-cased), of every category the
rules know (token shapes, PEM blocks, connection strings, URL credentials, query parameters,
passwords that only a name or a context gives away), in every place: environment, command
line, label, uncommitted diff, commit subject, child output, warnings and first error, model
config.json, a package's direct_url.json, and a running process read with ``--pid``.
"""

from __future__ import annotations

import base64
import json
import os
import random
import string
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_runsnap

RNG = random.SystemRandom()
ALNUM = string.ascii_letters + string.digits


def _r(n: int, chars: str = ALNUM) -> str:
    return "".join(RNG.choice(chars) for _ in range(n))


def _b64(n: int) -> str:
    return base64.b64encode(os.urandom(n)).decode()


def _b64url(n: int) -> str:
    return base64.urlsafe_b64encode(os.urandom(n)).decode().rstrip("=")


# One generator per category: returns (text to plant, the secret inside it).
def _jwt() -> tuple[str, str]:
    v = "eyJ" + _b64url(18) + "." + "eyJ" + _b64url(30) + "." + _b64url(32)
    return v, v


TOKENS = {
    "huggingface": lambda: "hf_" + _r(34),
    "github": lambda: "ghp_" + _r(36),
    "github-fine-grained": lambda: "github_pat_" + _r(22) + "_" + _r(59),
    "gitlab": lambda: "glpat-" + _r(20),
    "openai": lambda: "sk-proj-" + _r(48),
    "anthropic": lambda: "sk-ant-api03-" + _r(93, ALNUM + "_-") + "AA",
    "aws-access-key-id": lambda: "AKIA" + _r(16, string.ascii_uppercase + "234567"),
    "slack": lambda: f"xoxb-{_r(11, string.digits)}-{_r(12, string.digits)}-{_r(24)}",
    "stripe": lambda: "sk_live_" + _r(24),
    "npm": lambda: "npm_" + _r(36, string.ascii_lowercase + string.digits),
    "nvidia": lambda: "nvapi-" + _r(60, ALNUM + "_-"),
    "jwt": lambda: _jwt()[0],
}


def _password() -> str:
    # Only a name or a context gives these away: no token shape at all.
    return RNG.choice(string.ascii_letters) + _r(17, ALNUM + "!%^*+~") + RNG.choice(string.digits)


def _pem() -> tuple[str, str]:
    body = "\n".join(_b64(48) for _ in range(6))
    return f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----", body


class Corpus:
    """Secrets by place: place -> list of (category, secret)."""

    def __init__(self) -> None:
        self.by_place: dict[str, list[tuple[str, str]]] = {}

    def add(self, place: str, category: str, secret: str) -> str:
        self.by_place.setdefault(place, []).append((category, secret))
        return secret

    def token(self, place: str, category: str | None = None) -> str:
        category = category or RNG.choice(sorted(TOKENS))
        return self.add(place, category, TOKENS[category]())

    def all(self) -> list[tuple[str, str, str]]:
        return [(p, c, s) for p, items in self.by_place.items() for c, s in items]


#: The fixed prefixes of token shapes: public text (runsnap's own rules hold them), not secrets.
PUBLIC = ("sk-ant-api03-", "github_pat_", "sk-proj-", "nvapi-", "eyJ")


def _pieces(secret: str) -> set[str]:
    if len(secret) <= 12:
        return {secret}
    pieces = {secret[i:i + 12] for i in range(len(secret) - 11)}
    return {p for p in pieces if not any(p in prefix for prefix in PUBLIC)}


def _leaks(corpus: Corpus, blobs: dict[str, bytes]) -> dict[str, list[str]]:
    """place -> descriptions of leaks found (empty when nothing leaked)."""
    found: dict[str, list[str]] = {}
    for place, category, secret in corpus.all():
        for piece in _pieces(secret):
            raw = piece.encode("utf-8")
            for name, blob in blobs.items():
                if raw in blob:
                    found.setdefault(place, []).append(
                        f"{category} {secret[:6]}... piece {piece!r} in {name}")
                    break
            else:
                continue
            break
    return found


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"})


def _runsnap(args: list[str], env: dict[str, str], cwd: Path, **kw: Any
             ) -> subprocess.CompletedProcess[bytes]:
    return run_runsnap(*args, env=env, cwd=cwd, timeout=120, text=False, **kw)


@pytest.fixture
def planted(tmp_path: Path) -> tuple[Corpus, dict[str, bytes], dict[str, str]]:
    """Plant the corpus, run every command, and return (corpus, blobs, base env)."""
    c = Corpus()
    work = tmp_path / "proj"
    work.mkdir()
    # ---- git: a committed file, a commit subject with a secret, an uncommitted diff
    _git(work, "init", "-q")
    (work / "settings.py").write_text("DEBUG = True\n")
    _git(work, "add", ".")
    _git(work, "commit", "-q", "-m", f"deploy with token={c.token('commit subject')}")
    pem_text, pem_body = _pem()
    c.add("diff", "pem", pem_body)
    diff_lines = [
        f'db_password = "{c.add("diff", "password assignment", _password())}"',
        f"aws_secret_access_key={c.add('diff', 'aws secret', _r(40, ALNUM + '/+'))}",
        f"HF_TOKEN = '{c.token('diff', 'huggingface')}'",
        f"client = Client(url='https://api.example.com', key={c.token('diff')!r})",
        pem_text,
        json.dumps({"api_key": c.add("diff", "json api_key", _password())}),
        *(f"# example: {c.token('diff', cat)}" for cat in TOKENS),
    ]
    (work / "settings.py").write_text("DEBUG = True\n" + "\n".join(diff_lines) + "\n")
    # ---- a model directory whose config.json holds credentials at any depth
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "max_position_embeddings": 4096,
        "api_key": c.add("config.json", "api_key", _password()),
        "remote": {"auth": {"password": c.add("config.json", "nested password", _password()),
                            "token": c.token("config.json")}},
        "endpoint": f"https://u:{c.add('config.json', 'url password', _password())}@h.example/x",
        "notes": [f"use {c.token('config.json', cat)}" for cat in TOKENS],
    }))
    # ---- a package with a direct_url.json holding URL credentials and a signed query
    site = tmp_path / "site"
    dist = site / "leaky-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: leaky\nVersion: 1.0\n")
    url_pw = c.add("direct_url", "url password with / and @", _password()[:8] + "/@" + _r(8))
    sig = c.add("direct_url", "query sig", _b64url(24))
    tok = c.token("direct_url")
    (dist / "direct_url.json").write_text(json.dumps({
        "url": f"https://builder:{url_pw}@pkgs.example.com/simple/leaky-1.0.tar.gz?sig={sig}"
               f"&token={tok}", "archive_info": {}}))
    # ---- the child: echoes secrets to both streams, warns, fails
    known_pw = _password()
    child = tmp_path / "child.py"
    out_secrets = [c.token("output", cat) for cat in TOKENS]
    warn_secrets = [c.add("warnings", "password=", _password()), c.token("warnings")]
    err_secret = c.add("first_error", "api_key=", _password())
    child.write_text(
        "import os, sys\n"
        f"print('connecting with password={c.add('output', 'password=', _password())}')\n"
        f"print('Authorization: Bearer {c.token('output', 'jwt')}')\n"
        f"print('api_key={c.add('output', 'api_key=', _password())}')\n"
        f"print('echo', os.environ['SSHPASS'])\n"
        + "".join(f"print('got {s}')\n" for s in out_secrets)
        + f"print({pem_text!r})\n"
        f"print('WARNING: retrying with password={warn_secrets[0]}', file=sys.stderr)\n"
        f"print('UserWarning: token {warn_secrets[1]} expires soon', file=sys.stderr)\n"
        f"print('ERROR: request failed for api_key={err_secret}', file=sys.stderr)\n"
        "sys.stdout.flush(); sys.exit(3)\n"
    )
    c.add("output", "pem", _pem()[1])  # placeholder replaced below
    c.by_place["output"].pop()
    c.add("output", "pem (echoed)", pem_body)
    c.add("output", "echoed value of a secret variable", known_pw)
    # ---- environment
    home = tmp_path / "home"
    home.mkdir()
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("RUNSNAP_", "GIT_", "PYTHON"))}
    base.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), NO_COLOR="1")
    env = dict(base)
    env.update({
        "HF_TOKEN": c.token("env", "huggingface"),
        "AZURE_STORAGE_CONNECTION_STRING": (
            "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey="
            + c.add("env", "azure AccountKey", _b64(66)) + ";EndpointSuffix=core.windows.net"),
        "SERVICEBUS_CONN": "Endpoint=sb://x.servicebus.windows.net/;SharedAccessKeyName=r;"
                           "SharedAccessSignature=" + c.add("env", "azure SAS", _b64url(32)),
        "HF_AUTH": c.token("env", "huggingface"),
        "BASIC_AUTH": "admin:" + c.add("env", "basic auth password", _password()),
        "AUTH_HEADER": "Bearer " + c.add("env", "bearer", _b64url(30)),
        "SSHPASS": c.add("env", "SSHPASS", known_pw),
        "DATABASE_URL": "postgresql://app:" + c.add("env", "url password with / and @",
                                                    _r(6) + "/@" + _r(8)) + "@db.internal:5432/app",
        "MODEL_BLOB_URL": "https://store.example/m.bin?se=2030&sig="
                          + c.add("env", "query sig", _b64url(24)),
        "INNOCENT_LOOKING": c.token("env"),
        "DEPLOY_KEY_PEM": _pem()[0],
        "PYTHONPATH": str(site),
        "SOME_SETTING": c.token("env", "jwt"),
    })
    c.add("env", "pem in a variable", env["DEPLOY_KEY_PEM"].split("-----\n", 1)[1]
          .rsplit("\n-----", 1)[0])
    for cat in TOKENS:
        env[f"SETTING_{cat.upper().replace('-', '_')}"] = c.token("env", cat)
    for _ in range(6):
        env[f"APP_{_r(5, string.ascii_uppercase)}_TOKEN"] = c.add("env", "password by name",
                                                                  _password())
        env[f"VAR_{_r(5, string.ascii_uppercase)}"] = c.token("env")
    # ---- command line
    argv = [
        sys.executable, str(child),
        "--password", "-X" + c.add("argv", "value starting with -", _password()),
        "--header", "Authorization: Bearer " + c.add("argv", "header bearer", _b64url(30)),
        "--hf-token=" + c.token("argv", "huggingface"),
        "--api-key", c.add("argv", "api key option", _password()),
        "sshpass", "-p", c.add("argv", "sshpass -p", _password()),
        "mysql", "-p" + c.add("argv", "mysql -pX", _password()), "db",
        "bash", "-c", "serve --api-key " + c.add("argv", "bash -c --api-key", _password())
        + " --port 8000",
        *(c.token("argv", cat) for cat in TOKENS),
        "--url", f"https://x:{c.add('argv', 'url password', _password())}@h/p",
    ]
    label = f"run password={c.add('label', 'password=', _password())} {c.token('label')}"
    snaps = tmp_path / "snaps"
    log = tmp_path / "child.log"
    outputs: dict[str, bytes] = {}
    r = _runsnap(["capture", "--label", label, "--model", str(model), "--log", str(log),
                  "--dir", str(snaps), "--", *argv], env, work)
    assert r.returncode == 3, r.stderr.decode()[-2000:]
    child_run = subprocess.run(argv, env=env, cwd=work, capture_output=True)
    # What the child printed is relayed as it is (runsnap never changes a program's output);
    # runsnap's own lines are all that is left once the child's are taken out.
    outputs["capture stdout (runsnap's own)"] = r.stdout.replace(child_run.stdout, b"")
    own_err = r.stderr
    for line in child_run.stderr.splitlines(keepends=True):
        own_err = own_err.replace(line, b"", 1)
    outputs["capture stderr (runsnap's own)"] = own_err
    # ---- a new commit between the two captures: diff prints its subject (git log A..B)
    (work / "notes.txt").write_text("x\n")
    _git(work, "add", "notes.txt")
    _git(work, "commit", "-q", "-m",
         f"rotate password={c.add('commit subject', 'password=', _password())} "
         f"and {c.token('commit subject')}")
    # ---- a running process read with --pid
    pid_env = dict(base)
    pid_env["HF_TOKEN"] = c.token("--pid env", "huggingface")
    pid_env["BASIC_AUTH"] = "u:" + c.add("--pid env", "basic auth", _password())
    pid_env["X_VAR"] = c.token("--pid env")
    pid_pw = c.add("--pid argv", "--password", _password())
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)",
                             "--password", pid_pw, c.token("--pid argv")], env=pid_env,
                            cwd=work)
    try:
        time.sleep(0.3)
        r2 = _runsnap(["capture", "--pid", str(proc.pid), "--label", "pid", "--dir", str(snaps)],
                      base, work)
    finally:
        proc.kill()
        proc.wait()
    assert r2.returncode == 0, r2.stderr.decode()
    outputs["capture --pid stdout"] = r2.stdout
    outputs["capture --pid stderr"] = r2.stderr
    files = sorted(snaps.glob("*.toml"))
    assert len(files) == 2
    for f in files:
        for args in (["show", str(f)], ["scrub", str(f)]):
            out = _runsnap(args, base, work)
            assert out.returncode == 0, out.stderr.decode()
            outputs[f"{args[0]} {f.name} stdout"] = out.stdout
            outputs[f"{args[0]} {f.name} stderr"] = out.stderr
    for fmt in ("text", "markdown", "json"):
        out = _runsnap(["diff", "--format", fmt, "--all", *map(str, files)], base, work)
        assert out.returncode in (0, 1), out.stderr.decode()
        outputs[f"diff {fmt} stdout"] = out.stdout
        outputs[f"diff {fmt} stderr"] = out.stderr
    out = _runsnap(["diff", "-o", str(tmp_path / "report.md"), "--format", "markdown",
                    *map(str, files)], base, work)
    blobs = dict(outputs)
    for path in [*snaps.rglob("*"), log, tmp_path / "report.md"]:
        if path.is_file():
            blobs[f"file {path.name}"] = path.read_bytes()
    return c, blobs, base


@pytest.mark.slow
def test_no_secret_reaches_anything_runsnap_writes_or_prints(planted) -> None:  # type: ignore[no-untyped-def]
    corpus, blobs, _ = planted
    planted_by_place = {p: len(items) for p, items in corpus.by_place.items()}
    total = sum(planted_by_place.values())
    assert total >= 100, planted_by_place
    assert {"env", "argv", "label", "diff", "output", "warnings", "first_error", "config.json",
            "direct_url", "commit subject", "--pid env", "--pid argv"} <= set(planted_by_place)
    leaks = _leaks(corpus, blobs)
    report = {p: f"{planted_by_place[p]} planted, {len(leaks.get(p, []))} leaked"
              for p in planted_by_place}
    print(json.dumps(report, indent=1))
    assert not leaks, json.dumps(leaks, indent=1)
    # and the snapshot is still useful: fingerprints stand where the secrets were
    snap_text = b"".join(v for k, v in blobs.items() if k.endswith(".toml"))
    assert snap_text.count(b"<redacted:hmac-sha256:") >= 60
    assert b"db.internal:5432/app" in snap_text  # the URL kept its host, port and path
    assert b"pkgs.example.com/simple/leaky-1.0.tar.gz" in snap_text
    assert b"-----BEGIN RSA PRIVATE KEY-----" in snap_text
    # diff listed the commit between the captures, with its subject scrubbed
    # (JSON has every difference's evidence; the text details only the cause)
    assert b"rotate password=<redacted:hmac-sha256:" in blobs["diff json stdout"]


TUNING = {
    "TORCH_CUDNN_V8_API_DISABLED": "1", "TORCH_CUDNN_V8_API_LRU_CACHE_LIMIT": "10000",
    "CUDA_VISIBLE_DEVICES": "0,1,2,3", "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
    "NCCL_IB_HCA": "mlx5_0:1,mlx5_1:1", "NCCL_SOCKET_IFNAME": "eth0", "NCCL_ALGO": "Ring,Tree",
    "NCCL_DEBUG": "INFO", "NCCL_IB_GID_INDEX": "3", "NCCL_NET_GDR_LEVEL": "PHB",
    "NCCL_IB_TIMEOUT": "22", "NCCL_CROSS_NIC": "1",
    "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True,max_split_size_mb:512",
    "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1", "SGLANG_MAX_NEW_TOKENS_LIMIT": "4096",
    "VLLM_ATTENTION_BACKEND": "FLASHINFER", "VLLM_USE_V1": "1",
    "HF_HOME": "/data/hf", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
    "HF_TOKEN_PATH": "/home/u/.cache/huggingface/token",
    "LD_LIBRARY_PATH": "/usr/local/cuda/lib64:/opt/nccl/lib", "PATH": "/usr/local/bin:/usr/bin",
    "OAUTH_SCOPES": "openid email profile", "OPENAI_API_BASE": "http://localhost:30000/v1",
    "OPENAI_API_MODEL": "gpt-4o-mini-2024-07-18", "AWS_DEFAULT_REGION": "us-east-1",
    "API_TIMEOUT": "30", "ACCESS_LOG": "/var/log/access.log", "KEY_LENGTH": "256",
    "TOKENIZERS_PARALLELISM": "false", "SSH_AUTH_SOCK": "/tmp/ssh-XXXX/agent.123",
    "CUBLAS_WORKSPACE_CONFIG": ":4096:8", "OMP_NUM_THREADS": "8", "MASTER_ADDR": "10.0.0.1",
    "MASTER_PORT": "29500", "NCCL_IB_SL": "0", "TRITON_CACHE_DIR": "/tmp/triton",
}


def test_tuning_variables_and_paths_stay_visible(tmp_path: Path) -> None:
    from runsnap.redact import FingerprintKey, Redactor

    r = Redactor(FingerprintKey(os.urandom(32), "test"))
    data_dir = Path(__file__).resolve().parents[2] / "shared" / "data" / "env-vars"
    names = dict(TUNING)
    # every documented tuning variable of NCCL, CUDA and torch, with a typical setting
    for f in ("nccl.tsv", "cuda.tsv", "torch.tsv"):
        path = Path("/work/shared/data/env-vars") / f if not data_dir.is_dir() else data_dir / f
        if path.is_file():
            for line in path.read_text().splitlines()[1:]:
                names.setdefault(line.split("\t")[0], RNG.choice(["0", "1", "2", "INFO"]))
    out = r.sections({"env": {"vars": names}, "command": {"argv": [
        "python", "-m", "sglang.launch_server", "--model-path", "/models/llama",
        "--max-new-tokens", "512", "--tp", "8", "--api-base", "http://localhost:8000/v1"]}})
    hidden = {k: v for k, v in names.items() if out["env"]["vars"][k] != v}
    assert not hidden
    assert out["command"]["argv"][4] == "/models/llama" and out["command"]["argv"][6] == "512"
    assert out["command"]["argv"][-1] == "http://localhost:8000/v1"
    assert len(names) > 100


def test_scrub_rewrites_an_old_snapshot_in_place(tmp_path: Path) -> None:
    from runsnap.snapshot import Snapshot, load

    token = TOKENS["github"]()
    pw = _password()
    old = Snapshot(meta={"id": "x", "captured_at": "2026-01-01T00:00:00.000+00:00",
                         "label": f"password={pw}"},
                   sections={"env": {"vars": {"X": token, "CUDA_VISIBLE_DEVICES": "0"}},
                             "outcome": {"tail": [f"echo {token}"]}})
    path = tmp_path / "old.toml"
    old.save(path)
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "c")}
    r = _runsnap(["scrub", str(path)], env, tmp_path)
    assert r.returncode == 0, r.stderr.decode()
    assert b"redacted" in r.stdout
    text = path.read_text()
    assert token not in text and pw not in text
    assert load(path)["env"]["vars"]["CUDA_VISIBLE_DEVICES"] == "0"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".old")] == []
    r = _runsnap(["scrub", str(path)], env, tmp_path)
    assert b"nothing to redact" in r.stdout


def test_user_redact_and_keep(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.runsnap.capture]\nredact = ["MYCO_*"]\n')
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "c"),
           "MYCO_SETTING": "plain-value-1", "OTHER_ONE": "plain-value-2",
           "HF_TOKEN": "not-really-secret-but-named-so"}
    r = _runsnap(["capture", "--redact", "OTHER_*", "--keep", "HF_TOKEN", "-o",
                  str(tmp_path / "s.toml")], env, tmp_path)
    assert r.returncode == 0, r.stderr.decode()
    text = (tmp_path / "s.toml").read_text()
    assert "plain-value-1" not in text and "plain-value-2" not in text
    assert "not-really-secret-but-named-so" in text


def test_label_never_names_a_file_with_a_secret(tmp_path: Path) -> None:
    tok = TOKENS["huggingface"]()
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "c")}
    r = _runsnap(["capture", "--label", f"x {tok}", "--dir", str(tmp_path / "d")], env, tmp_path)
    assert r.returncode == 0, r.stderr.decode()
    (path,) = (tmp_path / "d").glob("*.toml")
    assert tok[:12] not in path.name and tok[3:15] not in path.read_text()
    assert tok[3:15] not in (r.stdout + r.stderr).decode()


def test_a_long_text_is_redacted_line_by_line_as_a_whole(tmp_path: Path) -> None:
    """Long texts (a git diff) are searched only on the lines that can hold an assignment, a
    URL or an option: the result is the one each line gives by itself."""
    from runsnap.redact import Redactor
    from runsnap.redact.fingerprint import FingerprintKey

    key = FingerprintKey(key=b"k" * 32, source="ephemeral")
    secret_lines = [
        "+API_KEY = 'Zx81kq0vLm2Pw9Rt'",
        "+curl https://user:Pa55w0rdXyZ@example.com/x",
        "+run --hf-token hf_abcdefghijklmnopqrstuvwxyz123456",
        "+AccountKey=abc;SharedAccessSignature=sv=2020&sig=Q2xlYW5TaWduYXR1cmUxMjM0NTY3ODkw",
    ]
    filler = [f"-{i},0.{i:08d},word" for i in range(400)]
    text = "\n".join(filler[:200] + secret_lines + filler[200:])
    assert len(text) > 4096
    whole = Redactor(key).scrub(text, "x").split("\n")[200:204]
    alone = [Redactor(key).scrub(line, "x") for line in secret_lines]
    assert whole == alone
    assert all("<redacted:" in line for line in whole)


@pytest.mark.parametrize("token", [
    "MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs",  # Discord bot token
    "110201543:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1",  # Telegram bot token
    "AC" + "3f9c0e7a1b2d4c6e8f0a1b3c5d7e9f0a",  # Twilio account id
    "SK" + "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b",  # Twilio API key
])
def test_shapes_without_a_keyword_are_found_in_a_text_without_keywords(token: str) -> None:
    """The shapes without a keyword run around the matches of their anchors: found in a text
    holding no keyword, and a text without an anchor is let through."""
    from runsnap.knowledge.secrets import token_spans

    text = f"note {token} end"
    assert token_spans(text) == [(5, 5 + len(token))]
    assert token_spans("note plain words end") == []


def _anchored_rules() -> list[Any]:
    from runsnap.knowledge.secrets import value_rules

    return [rule for rule in value_rules()[0] if rule.anchor]


@pytest.mark.slow
@pytest.mark.parametrize("rule", _anchored_rules(), ids=lambda r: r.id)
def test_an_anchor_is_found_wherever_its_shape_is(rule: Any) -> None:
    """A shape without keywords runs only around its anchor's matches, so the anchor must match
    in every text the shape does: generated matches of the shape, alone, in a line, and deep
    in a text long enough to be searched in windows, are all found."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from runsnap.knowledge.secrets import token_spans

    @settings(max_examples=150, deadline=None)
    @given(st.from_regex(rule.source, fullmatch=True),
           st.sampled_from(["", "x = ", "token: '", "a-b "]), st.integers(0, 6000))
    def check(secret: str, before: str, pad: int) -> None:
        filler = ("lorem ipsum 1234 dolor.sit amet\n" * (pad // 32 + 1))[:pad]
        text = f"{filler}{before}{secret} end"
        if not list(rule.spans(text)):
            return  # delimiters or entropy make this one no secret for the rule itself
        at = len(filler) + len(before)
        assert any(a < at + len(secret) and b > at for a, b in token_spans(text)), text[-200:]

    check()
