"""Incidents whose causes act through real third-party code: argparse and click command lines,
requests and httpx against a local server, huggingface_hub's cache, tqdm, rich, loguru, numpy,
torch and transformers. Written from the libraries' documented behaviour, not from runsnap's rules.

Each program runs under an interpreter that has the packages it imports: ``RUNSNAP_CORPUS_PYTHON``
when set (benchmarks/diagnosis.py builds one with torch and transformers), else the interpreter
running the corpus (the project's test venv: its ``test`` extra installs the small libraries).
An incident whose packages no interpreter has raises :class:`Unavailable` and is reported as not
run, never as passed.

The shells are :func:`real_shell`: what two real interactive shells on a Slurm cluster differ in,
terminal size and ``_`` included, plus variables these libraries really read to no effect here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import cache
from pathlib import Path

from benchmarks.incidents import Incident, Launch, _write, shell


class Unavailable(Exception):
    """No interpreter at hand has the packages an incident needs."""


@cache
def _has(python: str, modules: tuple[str, ...]) -> bool:
    code = "import importlib.util as u, sys; sys.exit(any(u.find_spec(m) is None for m in sys.argv[1:]))"
    return subprocess.run([python, "-c", code, *modules], capture_output=True, check=False,
                          timeout=60).returncode == 0


def python_with(*modules: str) -> str:
    """An interpreter that can import every module named (see the module's docstring)."""
    for python in (os.environ.get("RUNSNAP_CORPUS_PYTHON"), sys.executable):
        if python and _has(python, modules):
            return python
    raise Unavailable("no interpreter has " + ", ".join(modules))


def real_shell(n: int, home: Path) -> dict[str, str]:
    """:func:`benchmarks.incidents.shell` plus what else two real shells differ in: the terminal's
    size (exported by many shell setups, read by argparse, click, rich and shutil), ``_`` (the
    previous command's last argument), tmux, a Slurm allocation, an SSH agent, and variables that
    the libraries of this corpus read but that change nothing here."""
    env = shell(n, home)
    env.update({
        "COLUMNS": ["80", "211"][n % 2], "LINES": ["24", "57"][n % 2],
        "_": ["/usr/bin/tmux", "./launch.sh"][n % 2],
        "TMUX": f"/tmp/tmux-1000/default,{3000 + n},0",
        "SSH_AUTH_SOCK": f"/tmp/ssh-XXXX{n}/agent.{2200 + n}",
        "SLURM_JOB_ID": str(481516 + 23 * n), "SLURM_JOBID": str(481516 + 23 * n),
        "SLURM_STEP_ID": "0", "SLURM_NODELIST": ["gpu-a-07", "gpu-b-12"][n % 2],
        "SLURM_JOB_NAME": ["interactive", "bash"][n % 2],
        "TOKENIZERS_PARALLELISM": ["false", "true"][n % 2],
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "OPENBLAS_NUM_THREADS": ["4", "8"][n % 2],
        "MKL_NUM_THREADS": ["4", "8"][n % 2],
        "NO_COLOR": "1" if n % 2 else "",
    })
    if not env["NO_COLOR"]:
        del env["NO_COLOR"]
    return env


#: A module the programs import to serve one JSON document on 127.0.0.1 (plain or TLS), in a
#: thread of their own process: no port is shared between incidents or left behind.
SERVER = """
    import http.server, json, ssl, threading

    class _Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps({"path": self.path, "tokens": 128}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        def log_message(self, *args):
            pass

    def serve(certfile=None, keyfile=None):
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        scheme = "http"
        if certfile:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(certfile, keyfile)
            httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
            scheme = "https"
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        return f"{scheme}://127.0.0.1:{httpd.server_address[1]}"

    def dead_port():
        import socket
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        return port
    """


def _server(d: Path) -> None:
    _write(d / "localserver.py", SERVER)


def _certificate(d: Path, name: str) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 made by the openssl program."""
    cert, key = d / f"{name}.pem", d / f"{name}.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return cert, key


def _incident(build: object, good: Launch, bad: Launch, *cause: tuple[str, str],
              between: object = None) -> Incident:
    name = build.__name__.replace("_", "-")  # type: ignore[attr-defined]
    return Incident(name, build.__doc__ or "", good, bad, tuple(cause),  # type: ignore[attr-defined]
                    between=between)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- argparse and click


def argparse_env_default(d: Path) -> Incident:
    """An argparse option whose default comes from a variable; the program raises later, with
    argparse having read the terminal's size in both runs."""
    py = python_with("argparse")
    app = _write(d / "train.py", """
        import argparse, os
        def main():
            p = argparse.ArgumentParser(description="trainer")
            p.add_argument("--workers", type=int,
                           default=int(os.environ.get("LOADER_WORKERS", "2")))
            p.add_argument("--epochs", type=int, default=1)
            a = p.parse_args()
            start_loaders(a.workers)
            print("loss=0.41")
        def start_loaders(n):
            slots = 8
            if n > slots:
                raise ValueError(f"cannot start {n} loader workers with {slots} slots")
        main()
        """)
    return _incident(argparse_env_default,
                     Launch((py, str(app)), real_shell(0, d), d),
                     Launch((py, str(app)), {**real_shell(1, d), "LOADER_WORKERS": "64"}, d),
                     ("env", "LOADER_WORKERS"))


def argparse_same_failure(d: Path) -> Incident:
    """An argparse program that fails the same way in both shells (its input is missing): only
    shell noise differs, so nothing counts."""
    py = python_with("argparse")
    app = _write(d / "launch.py", """
        import argparse
        def main():
            p = argparse.ArgumentParser()
            p.add_argument("--data", default="corpus.jsonl")
            p.add_argument("--batch-size", type=int, default=8)
            a = p.parse_args()
            with open(a.data) as f:
                return sum(1 for _ in f)
        main()
        """)
    argv = (py, str(app), "--batch-size", "8")
    return _incident(argparse_same_failure, Launch(argv, real_shell(0, d), d),
                     Launch(argv, real_shell(1, d), d))


def argparse_subcommand_option(d: Path) -> Incident:
    """An argparse subcommand's option names an optimizer the program's table lacks."""
    py = python_with("argparse")
    app = _write(d / "cli.py", """
        import argparse
        OPTIMIZERS = {"sgd": 0.1, "adamw": 3e-4}
        def train(args):
            lr = OPTIMIZERS[args.optimizer]
            print(f"lr={lr}")
        def main():
            p = argparse.ArgumentParser(prog="cli")
            sub = p.add_subparsers(dest="cmd", required=True)
            t = sub.add_parser("train")
            t.add_argument("--optimizer", default="adamw")
            t.add_argument("--steps", type=int, default=10)
            t.set_defaults(func=train)
            a = p.parse_args()
            a.func(a)
        main()
        """)
    return _incident(argparse_subcommand_option,
                     Launch((py, str(app), "train", "--optimizer", "adamw", "--steps", "10"),
                            real_shell(0, d), d),
                     Launch((py, str(app), "train", "--optimizer", "lion", "--steps", "20"),
                            real_shell(1, d), d),
                     ("command", "--optimizer"))


def click_auto_envvar(d: Path) -> Incident:
    """click's auto_envvar_prefix: TRAINER_PRECISION feeds --precision, and click rejects it
    (usage error, exit 2) naming the option, not the variable."""
    py = python_with("click")
    app = _write(d / "trainer.py", """
        import click
        @click.command(context_settings={"auto_envvar_prefix": "TRAINER"})
        @click.option("--precision", type=click.Choice(["fp32", "bf16"]), default="fp32")
        @click.option("--steps", type=int, default=5)
        def main(precision, steps):
            click.echo(f"precision={precision} steps={steps}")
        if __name__ == "__main__":
            main()
        """)
    return _incident(click_auto_envvar,
                     Launch((py, str(app)), {**real_shell(0, d), "TRAINER_PRECISION": "bf16"}, d),
                     Launch((py, str(app)), {**real_shell(1, d), "TRAINER_PRECISION": "fp8"}, d),
                     ("env", "TRAINER_PRECISION"))


def click_envvar_path(d: Path) -> Incident:
    """A click option with envvar= and a Path type that must exist: the variable points at a
    folder the other shell does not have."""
    py = python_with("click")
    (d / "cache-a").mkdir(exist_ok=True)
    app = _write(d / "serve.py", """
        import click
        @click.command()
        @click.option("--cache-dir", envvar="SERVE_CACHE_DIR",
                      type=click.Path(exists=True, file_okay=False), required=True)
        @click.option("--port", type=int, default=8000)
        def main(cache_dir, port):
            click.echo(f"serving from {cache_dir} on {port}")
        if __name__ == "__main__":
            main()
        """)
    return _incident(click_envvar_path,
                     Launch((py, str(app)),
                            {**real_shell(0, d), "SERVE_CACHE_DIR": str(d / "cache-a")}, d),
                     Launch((py, str(app)),
                            {**real_shell(1, d), "SERVE_CACHE_DIR": str(d / "cache-b")}, d),
                     ("env", "SERVE_CACHE_DIR"))


def click_noise_only(d: Path) -> Incident:
    """A click program that succeeds in both shells: nothing counts."""
    py = python_with("click")
    app = _write(d / "tool.py", """
        import click
        @click.command()
        @click.option("--n", type=int, default=3)
        def main(n):
            with click.progressbar(range(n), label="steps") as bar:
                for _ in bar:
                    pass
            click.echo(f"done steps={n}")
        if __name__ == "__main__":
            main()
        """)
    return _incident(click_noise_only, Launch((py, str(app)), real_shell(0, d), d),
                     Launch((py, str(app)), real_shell(1, d), d))


def click_option_range(d: Path) -> Incident:
    """A click IntRange option given out of range on the command line (exit 2)."""
    py = python_with("click")
    app = _write(d / "bench.py", """
        import click
        @click.command()
        @click.option("--max-batch", type=click.IntRange(1, 512), default=64)
        @click.option("--warmup", type=int, default=1)
        def main(max_batch, warmup):
            click.echo(f"throughput={max_batch * 37.5:.1f}")
        if __name__ == "__main__":
            main()
        """)
    return _incident(click_option_range,
                     Launch((py, str(app), "--max-batch", "256", "--warmup", "1"),
                            real_shell(0, d), d),
                     Launch((py, str(app), "--max-batch", "1024", "--warmup", "2"),
                            real_shell(1, d), d),
                     ("command", "--max-batch"))


# --------------------------------------------------------------------------- HTTP clients


def requests_http_proxy(d: Path) -> Incident:
    """requests takes proxies from the environment (urllib's scan of os.environ): http_proxy
    points at a port nobody listens on."""
    py = python_with("requests")
    _server(d)
    app = _write(d / "fetch.py", """
        import requests, localserver
        url = localserver.serve()
        r = requests.get(url + "/v1/models", timeout=5)
        print("tokens=", r.json()["tokens"])
        """)
    return _incident(requests_http_proxy,
                     Launch((py, str(app)), real_shell(0, d), d),
                     Launch((py, str(app)),
                            {**real_shell(1, d), "http_proxy": "http://127.0.0.1:9"}, d),
                     ("env", "http_proxy"))


def requests_ca_bundle(d: Path) -> Incident:
    """REQUESTS_CA_BUNDLE names another certificate than the local TLS server's."""
    py = python_with("requests")
    _server(d)
    cert, key = _certificate(d, "server")
    old, _ = _certificate(d, "old")
    app = _write(d / "fetch.py", f"""
        import requests, localserver
        url = localserver.serve({str(cert)!r}, {str(key)!r})
        r = requests.get(url + "/health", timeout=5)
        print("status=", r.status_code)
        """)
    return _incident(requests_ca_bundle,
                     Launch((py, str(app)), {**real_shell(0, d), "REQUESTS_CA_BUNDLE": str(cert)},
                            d),
                     Launch((py, str(app)), {**real_shell(1, d), "REQUESTS_CA_BUNDLE": str(old)},
                            d),
                     ("env", "REQUESTS_CA_BUNDLE"))


def httpx_socks_proxy(d: Path) -> Incident:
    """ALL_PROXY=socks5://... makes httpx ask for the socksio package at client creation."""
    py = python_with("httpx")
    _server(d)
    app = _write(d / "client.py", """
        import httpx, localserver
        def main():
            url = localserver.serve()
            with httpx.Client(timeout=5) as c:
                print("tokens=", c.get(url + "/generate").json()["tokens"])
        main()
        """)
    return _incident(httpx_socks_proxy,
                     Launch((py, str(app)), real_shell(0, d), d),
                     Launch((py, str(app)),
                            {**real_shell(1, d), "ALL_PROXY": "socks5://127.0.0.1:1080"}, d),
                     ("env", "ALL_PROXY"))


def httpx_no_proxy_dropped(d: Path) -> Incident:
    """Both shells route HTTP through a proxy that is down; only one exempts 127.0.0.1 with
    NO_PROXY."""
    py = python_with("httpx")
    _server(d)
    app = _write(d / "client.py", """
        import httpx, localserver
        url = localserver.serve()
        r = httpx.get(url + "/v1/models", timeout=5)
        print("tokens=", r.json()["tokens"])
        """)
    proxy = {"HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9"}
    return _incident(httpx_no_proxy_dropped,
                     Launch((py, str(app)),
                            {**real_shell(0, d), **proxy, "NO_PROXY": "127.0.0.1,localhost"}, d),
                     Launch((py, str(app)), {**real_shell(1, d), **proxy}, d),
                     ("env", "NO_PROXY"))


def httpx_ssl_cert_file(d: Path) -> Incident:
    """httpx trusts SSL_CERT_FILE when set; the other shell lacks it, and certifi's roots do not
    know the local server's certificate."""
    py = python_with("httpx")
    _server(d)
    cert, key = _certificate(d, "server")
    app = _write(d / "client.py", f"""
        import httpx, localserver
        url = localserver.serve({str(cert)!r}, {str(key)!r})
        print("status=", httpx.get(url + "/health", timeout=5).status_code)
        """)
    return _incident(httpx_ssl_cert_file,
                     Launch((py, str(app)), {**real_shell(0, d), "SSL_CERT_FILE": str(cert)}, d),
                     Launch((py, str(app)), real_shell(1, d), d),
                     ("env", "SSL_CERT_FILE"))


def requests_noise_only(d: Path) -> Incident:
    """requests against the local server in two shells that differ only in noise."""
    py = python_with("requests")
    _server(d)
    app = _write(d / "fetch.py", """
        import requests, localserver
        url = localserver.serve()
        print("tokens=", requests.get(url + "/v1/models", timeout=5).json()["tokens"])
        """)
    return _incident(requests_noise_only, Launch((py, str(app)), real_shell(0, d), d),
                     Launch((py, str(app)), real_shell(1, d), d))


# --------------------------------------------------------------------------- model hubs


def _hub_cache(hub: Path, repo: str, files: dict[str, str]) -> None:
    """A Hugging Face cache entry laid out as huggingface_hub documents it (models--org--name
    with refs/main, snapshots/COMMIT/ and blobs/)."""
    commit = "0123456789abcdef0123456789abcdef01234567"
    base = hub / ("models--" + repo.replace("/", "--"))
    (base / "refs").mkdir(parents=True, exist_ok=True)
    (base / "refs" / "main").write_text(commit)
    for name, text in files.items():
        import hashlib
        blob = base / "blobs" / hashlib.sha256(text.encode()).hexdigest()
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_text(text)
        snap = base / "snapshots" / commit / name
        snap.parent.mkdir(parents=True, exist_ok=True)
        if not snap.exists():
            snap.symlink_to(os.path.relpath(blob, snap.parent))


TINY_GPT2 = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_embd": 32,
             "n_layer": 2, "n_head": 4, "n_positions": 64, "vocab_size": 101,
             "bos_token_id": 0, "eos_token_id": 0}


def hf_home_moved(d: Path) -> Incident:
    """Offline mode with the model in the cache under one HF_HOME; the other shell's HF_HOME
    has no copy (huggingface_hub reads HF_HOME at import)."""
    py = python_with("huggingface_hub")
    _hub_cache(d / "hf-a" / "hub", "acme/tiny-chat", {"config.json": json.dumps(TINY_GPT2)})
    app = _write(d / "load.py", """
        import json
        from huggingface_hub import hf_hub_download
        def load_config(repo):
            path = hf_hub_download(repo, "config.json")
            return json.load(open(path))
        print("layers=", load_config("acme/tiny-chat")["n_layer"])
        """)
    a = {**real_shell(0, d), "HF_HUB_OFFLINE": "1", "HF_HOME": str(d / "hf-a")}
    b = {**real_shell(1, d), "HF_HUB_OFFLINE": "1", "HF_HOME": str(d / "hf-b")}
    return _incident(hf_home_moved, Launch((py, str(app)), a, d), Launch((py, str(app)), b, d),
                     ("env", "HF_HOME"))


def hf_hub_cache_override(d: Path) -> Incident:
    """HF_HUB_CACHE, set in one shell only, sends huggingface_hub to an empty cache."""
    py = python_with("huggingface_hub")
    _hub_cache(d / "home" / ".cache" / "huggingface" / "hub", "acme/tiny-chat",
               {"config.json": json.dumps(TINY_GPT2), "tokenizer.json": "{}"})
    (d / "scratch-hub").mkdir(exist_ok=True)
    app = _write(d / "fetch_model.py", """
        from huggingface_hub import snapshot_download
        def fetch(repo):
            return snapshot_download(repo, allow_patterns=["*.json"])
        print("files=", fetch("acme/tiny-chat"))
        """)
    base = {"HF_HUB_OFFLINE": "1", "HF_HOME": str(d / "home" / ".cache" / "huggingface")}
    return _incident(hf_hub_cache_override,
                     Launch((py, str(app)), {**real_shell(0, d), **base}, d),
                     Launch((py, str(app)), {**real_shell(1, d), **base,
                                             "HF_HUB_CACHE": str(d / "scratch-hub")}, d),
                     ("env", "HF_HUB_CACHE"))


# --------------------------------------------------------------------------- progress, logging


def tqdm_env_override(d: Path) -> Incident:
    """tqdm takes TQDM_* overrides from a scan of the environment; TQDM_MININTERVAL is not a
    number in one shell."""
    py = python_with("tqdm")
    app = _write(d / "loop.py", """
        from tqdm import tqdm
        def train(steps):
            total = 0.0
            for i in tqdm(range(steps), desc="train"):
                total += 1.0 / (i + 1)
            return total
        print(f"loss={train(50):.4f}")
        """)
    return _incident(tqdm_env_override,
                     Launch((py, str(app)), {**real_shell(0, d), "TQDM_MININTERVAL": "5"}, d),
                     Launch((py, str(app)), {**real_shell(1, d), "TQDM_MININTERVAL": "5s"}, d),
                     ("env", "TQDM_MININTERVAL"))


def tqdm_disabled_metric(d: Path) -> Incident:
    """Both runs exit 0; TQDM_DISABLE in one shell leaves the bar's counter at zero, and the
    steps the program reports from it differ."""
    py = python_with("tqdm")
    app = _write(d / "epoch.py", """
        from tqdm import tqdm
        bar = tqdm(range(40), desc="epoch")
        loss = 1.0
        for _ in bar:
            loss *= 0.97
        print(f"steps={bar.n} loss={loss:.4f}")
        """)
    return _incident(tqdm_disabled_metric,
                     Launch((py, str(app)), real_shell(0, d), d),
                     Launch((py, str(app)), {**real_shell(1, d), "TQDM_DISABLE": "1"}, d),
                     ("env", "TQDM_DISABLE"))


def rich_markup_from_env(d: Path) -> Incident:
    """A banner taken from a variable goes through rich's markup parser, which rejects a
    closing tag that closes nothing."""
    py = python_with("rich")
    app = _write(d / "banner.py", """
        import os
        from rich.console import Console
        def main():
            console = Console(width=100)
            console.print(os.environ.get("SERVE_BANNER", "[bold]serving[/bold]"))
            console.print("ready")
        main()
        """)
    return _incident(rich_markup_from_env,
                     Launch((py, str(app)),
                            {**real_shell(0, d), "SERVE_BANNER": "[green]model up[/green]"}, d),
                     Launch((py, str(app)),
                            {**real_shell(1, d), "SERVE_BANNER": "model up[/green]"}, d),
                     ("env", "SERVE_BANNER"))


def rich_table_noise(d: Path) -> Incident:
    """A rich table of fixed width printed in two shells that differ only in noise (rich reads
    COLUMNS, LINES, TERM and NO_COLOR)."""
    py = python_with("rich")
    app = _write(d / "report.py", """
        from rich.console import Console
        from rich.table import Table
        t = Table("step", "loss")
        for i in range(3):
            t.add_row(str(i), f"{1 / (i + 1):.3f}")
        Console(width=60, color_system=None).print(t)
        print("loss=0.333")
        """)
    return _incident(rich_table_noise, Launch((py, str(app)), real_shell(0, d), d),
                     Launch((py, str(app)), real_shell(1, d), d))


def loguru_level_name(d: Path) -> Incident:
    """LOGURU_LEVEL=WARN: loguru knows WARNING, and its import fails on the unknown level."""
    py = python_with("loguru")
    app = _write(d / "worker.py", """
        from loguru import logger
        def work():
            logger.info("step=1 loss=0.7")
            return 0.7
        print("loss=", work())
        """)
    return _incident(loguru_level_name,
                     Launch((py, str(app)), {**real_shell(0, d), "LOGURU_LEVEL": "WARNING"}, d),
                     Launch((py, str(app)), {**real_shell(1, d), "LOGURU_LEVEL": "WARN"}, d),
                     ("env", "LOGURU_LEVEL"))


def loguru_format_field(d: Path) -> Incident:
    """LOGURU_FORMAT names a record field that does not exist; with LOGURU_CATCH=0 in both
    shells, the first log call raises."""
    py = python_with("loguru")
    app = _write(d / "job.py", """
        import sys
        from loguru import logger
        def step(i):
            logger.info("step {} done", i)
        for i in range(2):
            step(i)
        print("ok")
        """)
    return _incident(loguru_format_field,
                     Launch((py, str(app)),
                            {**real_shell(0, d), "LOGURU_CATCH": "0",
                             "LOGURU_FORMAT": "{time} {level} {message}"}, d),
                     Launch((py, str(app)),
                            {**real_shell(1, d), "LOGURU_CATCH": "0",
                             "LOGURU_FORMAT": "{time} {lvl} {message}"}, d),
                     ("env", "LOGURU_FORMAT"))


# --------------------------------------------------------------------------- numpy


def numpy_dtype_metric(d: Path) -> Incident:
    """Both runs exit 0; a variable chooses the accumulation dtype and the reported loss moves."""
    py = python_with("numpy")
    app = _write(d / "evaluate.py", """
        import os
        import numpy as np
        def evaluate():
            dtype = np.dtype(os.environ.get("EVAL_DTYPE", "float32"))
            rng = np.random.default_rng(0)
            logits = rng.normal(size=(4096, 8)).astype(dtype)
            p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
            # a running sum, as a streaming evaluator keeps it, in the chosen dtype
            loss = np.cumsum(-np.log(p[:, 0]), dtype=dtype)[-1] / dtype.type(4096)
            acc = float((p.argmax(axis=1) == 0).mean())
            return float(loss), acc
        loss, acc = evaluate()
        print(f"eval_loss={loss:.4f} accuracy={acc:.4f}")
        """)
    return _incident(numpy_dtype_metric,
                     Launch((py, str(app)), real_shell(0, d), d),
                     Launch((py, str(app)), {**real_shell(1, d), "EVAL_DTYPE": "float16"}, d),
                     ("env", "EVAL_DTYPE"))


def numpy_seed_option(d: Path) -> Incident:
    """Both runs exit 0; the --seed option differs and the accuracy of a tiny fit moves."""
    py = python_with("numpy")
    app = _write(d / "fit.py", """
        import argparse
        import numpy as np
        p = argparse.ArgumentParser()
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--epochs", type=int, default=20)
        a = p.parse_args()
        rng = np.random.default_rng(a.seed)
        x = rng.normal(size=(64, 3)); y = (x @ np.array([1.0, -2.0, 0.5]) > 0).astype(float)
        w = rng.normal(size=3) * 3
        for _ in range(a.epochs):
            pred = 1 / (1 + np.exp(-(x @ w)))
            w -= 0.05 * x.T @ (pred - y) / len(y)
        acc = float(((x @ w > 0) == (y > 0)).mean())
        print(f"epochs={a.epochs} accuracy={acc:.4f}")
        """)
    return _incident(numpy_seed_option,
                     Launch((py, str(app), "--seed", "0", "--epochs", "20"), real_shell(0, d), d),
                     Launch((py, str(app), "--seed", "7", "--epochs", "20"), real_shell(1, d), d),
                     ("command", "--seed"))


def numpy_threads_noise(d: Path) -> Incident:
    """numpy's BLAS reads its thread variables, which differ between the shells to no effect on
    a deterministic product: nothing counts."""
    py = python_with("numpy")
    app = _write(d / "matmul.py", """
        import numpy as np
        a = np.arange(64 * 64, dtype=np.float64).reshape(64, 64) / 4096
        print(f"trace={float(np.trace(a @ a)):.6f}")
        """)
    a = {**real_shell(0, d), "OMP_NUM_THREADS": "1"}
    b = {**real_shell(1, d), "OMP_NUM_THREADS": "1"}
    return _incident(numpy_threads_noise, Launch((py, str(app)), a, d),
                     Launch((py, str(app)), b, d))


def slurm_jobs_noise(d: Path) -> Incident:
    """The same script in two Slurm allocations on two nodes: nothing counts."""
    py = python_with("argparse")
    app = _write(d / "job.py", """
        import os
        rank = int(os.environ.get("SLURM_PROCID", "0"))
        print(f"rank={rank} loss=0.25")
        """)
    b = {**real_shell(1, d), "SLURM_JOB_ID": "990001", "SLURM_JOBID": "990001",
         "SLURM_CLUSTER_NAME": "hopper", "SLURMD_NODENAME": "gpu-b-12"}
    return _incident(slurm_jobs_noise,
                     Launch((py, str(app)), {**real_shell(0, d), "SLURMD_NODENAME": "gpu-a-07",
                                             "SLURM_CLUSTER_NAME": "hopper"}, d),
                     Launch((py, str(app)), b, d))


# --------------------------------------------------------------------------- torch, transformers


def _tiny_model(folder: Path, **changes: object) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({**TINY_GPT2, **changes}, indent=2))
    return folder


TRAIN = """
    import argparse, os
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        p.add_argument("--lr", type=float, default=1e-3)
        p.add_argument("--steps", type=int, default=5)
        a = p.parse_args()
        torch.manual_seed(int(os.environ.get("TRAIN_SEED", "0")))
        config = AutoConfig.from_pretrained(a.model_path)
        model = AutoModelForCausalLM.from_config(config)
        opt = torch.optim.SGD(model.parameters(), lr=a.lr)
        ids = torch.arange(32).remainder(config.vocab_size).reshape(2, 16)
        for step in range(a.steps):
            out = model(input_ids=ids, labels=ids)
            opt.zero_grad(); out.loss.backward(); opt.step()
            print(f"step={step} loss={out.loss.item():.4f}")
        print(f"final loss={out.loss.item():.4f}")
    main()
    """


def transformers_heads_field(d: Path) -> Incident:
    """A tiny GPT-2 built from its config.json: n_head edited to a value that does not divide
    n_embd, and transformers refuses to build the attention."""
    py = python_with("torch", "transformers")
    model = _tiny_model(d / "tiny-gpt2")
    app = _write(d / "train.py", TRAIN)

    def edit() -> None:
        _tiny_model(model, n_head=5)

    argv = (py, str(app), "--model-path", str(model), "--steps", "2")
    return _incident(transformers_heads_field, Launch(argv, real_shell(0, d), d),
                     Launch(argv, real_shell(1, d), d),
                     ("models", "--model-path: n_head"), between=edit)


def transformers_lr_metric(d: Path) -> Incident:
    """Both runs of a tiny GPT-2 exit 0; --lr differs and the final loss moves."""
    py = python_with("torch", "transformers")
    model = _tiny_model(d / "tiny-gpt2")
    app = _write(d / "train.py", TRAIN)
    return _incident(transformers_lr_metric,
                     Launch((py, str(app), "--model-path", str(model), "--lr", "0.001"),
                            real_shell(0, d), d),
                     Launch((py, str(app), "--model-path", str(model), "--lr", "3.0"),
                            real_shell(1, d), d),
                     ("command", "--lr"))


def torch_seed_metric(d: Path) -> Incident:
    """Both runs of a tiny GPT-2 exit 0; the seed variable differs and the loss moves."""
    py = python_with("torch", "transformers")
    model = _tiny_model(d / "tiny-gpt2")
    app = _write(d / "train.py", TRAIN)
    argv = (py, str(app), "--model-path", str(model), "--lr", "1.0", "--steps", "8")
    return _incident(torch_seed_metric,
                     Launch(argv, {**real_shell(0, d), "TRAIN_SEED": "0"}, d),
                     Launch(argv, {**real_shell(1, d), "TRAIN_SEED": "1234"}, d),
                     ("env", "TRAIN_SEED"))


def torch_logs_setting(d: Path) -> Incident:
    """TORCH_LOGS names a component torch does not know; torch refuses at import."""
    py = python_with("torch")
    app = _write(d / "step.py", """
        import torch
        x = torch.ones(4, 4)
        print(f"sum={float((x @ x).sum()):.1f}")
        """)
    return _incident(torch_logs_setting,
                     Launch((py, str(app)), {**real_shell(0, d), "TORCH_LOGS": "recompiles"}, d),
                     Launch((py, str(app)), {**real_shell(1, d), "TORCH_LOGS": "recompile"}, d),
                     ("env", "TORCH_LOGS"))


def transformers_offline_cache(d: Path) -> Incident:
    """transformers in offline mode loads a config from the hub cache under HF_HOME; the other
    shell's HF_HOME has no copy."""
    py = python_with("torch", "transformers")
    _hub_cache(d / "hf-a" / "hub", "acme/tiny-gpt2", {"config.json": json.dumps(TINY_GPT2)})
    app = _write(d / "serve.py", """
        from transformers import AutoConfig
        def load(repo):
            return AutoConfig.from_pretrained(repo)
        print("layers=", load("acme/tiny-gpt2").n_layer)
        """)
    a = {**real_shell(0, d), "HF_HUB_OFFLINE": "1", "HF_HOME": str(d / "hf-a")}
    b = {**real_shell(1, d), "HF_HUB_OFFLINE": "1", "HF_HOME": str(d / "hf-b")}
    return _incident(transformers_offline_cache, Launch((py, str(app)), a, d),
                     Launch((py, str(app)), b, d), ("env", "HF_HOME"))


def torch_threads_noise(d: Path) -> Incident:
    """A deterministic torch step in two shells that differ in noise and thread variables torch
    reads (OMP_NUM_THREADS pinned alike): nothing counts."""
    py = python_with("torch")
    app = _write(d / "step.py", """
        import torch
        torch.manual_seed(0)
        w = torch.randn(16, 16)
        print(f"norm={float(w.norm()):.4f}")
        """)
    a = {**real_shell(0, d), "OMP_NUM_THREADS": "1"}
    b = {**real_shell(1, d), "OMP_NUM_THREADS": "1"}
    return _incident(torch_threads_noise, Launch((py, str(app)), a, d),
                     Launch((py, str(app)), b, d))


#: The third-party incidents, in the order they were written.
THIRD_PARTY = [
    argparse_env_default, argparse_same_failure, argparse_subcommand_option, click_auto_envvar,
    click_envvar_path, click_noise_only, click_option_range, requests_http_proxy,
    requests_ca_bundle, httpx_socks_proxy, httpx_no_proxy_dropped, httpx_ssl_cert_file,
    requests_noise_only, hf_home_moved, hf_hub_cache_override, tqdm_env_override,
    tqdm_disabled_metric, rich_markup_from_env, rich_table_noise, loguru_level_name,
    loguru_format_field, numpy_dtype_metric, numpy_seed_option, numpy_threads_noise,
    slurm_jobs_noise, transformers_heads_field, transformers_lr_metric, torch_seed_metric,
    torch_logs_setting, transformers_offline_cache, torch_threads_noise,
]
