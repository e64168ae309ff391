"""Incidents added to the tune half by w5-41b (issue 41 items 1, 3 and 8: values an error quotes,
messages that name an input by its words, values an engine's message implies), built from the
outside: real third-party servers and libraries (aiohttp, uvicorn's own command line, torch's
c10d store, transformers), launched from two real shells. Each acts through the library's own
code and its own words:

- a transformers config whose ``activation_function`` names no activation: transformers'
  ``ACT2FN`` raises ``KeyError: 'gelu_pytorch'`` while the model's constructor also reads the
  other field that differs (``layer_norm_epsilon``);
- an aiohttp server whose ``client_max_size`` comes from ``--max-body-size``: the client
  surfaces aiohttp's own 413 text, ``Maximum request body size 1024 exceeded.`` (the value,
  and the option's words), while ``--batches`` differs too;
- a uvicorn server started through uvicorn's real command line, which reads
  ``UVICORN_LIMIT_CONCURRENCY`` (click's ``auto_envvar_prefix``) left exported in B's shell:
  uvicorn warns ``Exceeded concurrency limit.`` and answers 503, while the app's own
  ``APP_SLOW_MS`` differs too (both read: the warning's words put the cause first, a read
  alone never decides);
- c10d's ``TCPStore`` waiting for ``--num-processes`` clients: ``1/2 clients joined`` implies
  the world of 2 that B asked for, while ``--port`` differs too.

The interpreter needs torch, transformers, aiohttp, uvicorn and httpx (``RUNSNAP_CORPUS_PYTHON``;
an incident whose packages none has is reported as not run). Every incident here is ``tune``
(benchmarks/corpus.py, source ``tune5``).
"""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.incidents import Incident, Launch, _write
from benchmarks.thirdparty import _incident, python_with, real_shell

_BUILD = """
    import argparse
    import torch
    from transformers import AutoConfig, GPT2LMHeadModel

    p = argparse.ArgumentParser()
    p.add_argument("--model-path", required=True)
    a = p.parse_args()
    torch.manual_seed(0)
    model = GPT2LMHeadModel(AutoConfig.from_pretrained(a.model_path))
    ids = torch.randint(0, model.config.vocab_size, (1, 8))
    print(f"loss={float(model(ids, labels=ids).loss):.4f}")
    """


def transformers_activation_quoted(d: Path) -> Incident:
    """B's config.json names an activation transformers lacks (``gelu_pytorch``, for
    ``gelu_pytorch_tanh``) and a smaller ``layer_norm_epsilon``; GPT-2's block constructor
    reads both, and the KeyError quotes the one."""
    py = python_with("torch", "transformers")
    cfg = {"model_type": "gpt2", "n_layer": 1, "n_head": 2, "n_embd": 16, "vocab_size": 64,
           "n_positions": 32, "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5}
    model = d / "models" / "tiny"
    model.mkdir(parents=True, exist_ok=True)
    (model / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    app = _write(d / "build.py", _BUILD)
    argv = (py, str(app), "--model-path", str(model))
    a, b = real_shell(0, d), real_shell(1, d)
    for env in (a, b):
        env["HF_HUB_OFFLINE"] = "1"

    def edit() -> None:
        (model / "config.json").write_text(json.dumps(
            {**cfg, "activation_function": "gelu_pytorch", "layer_norm_epsilon": 1e-6},
            indent=2) + "\n")

    return _incident(transformers_activation_quoted, Launch(argv, a, d), Launch(argv, b, d),
                     ("models", "--model-path: activation_function"), between=edit)


_INGEST = """
    import argparse, asyncio
    from aiohttp import ClientSession, web

    async def ingest(request):
        body = await request.read()
        return web.json_response({"bytes": len(body)})

    async def main(a):
        app = web.Application(client_max_size=a.max_body_size)
        app.router.add_post("/ingest", ingest)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        total = 0
        try:
            async with ClientSession() as s:
                for _ in range(a.batches):
                    async with s.post(f"http://127.0.0.1:{port}/ingest",
                                      data=b"x" * 4096) as r:
                        if r.status != 200:
                            raise RuntimeError(f"ingest failed: {r.status} {await r.text()}")
                        total += (await r.json())["bytes"]
        finally:
            await runner.cleanup()
        print(f"ingested {total} bytes")

    p = argparse.ArgumentParser()
    p.add_argument("--max-body-size", type=int, default=1 << 20)
    p.add_argument("--batches", type=int, default=3)
    asyncio.run(main(p.parse_args()))
    """


def aiohttp_body_size_quoted(d: Path) -> Incident:
    """B's --max-body-size (1024) is below the 4 KiB batches: aiohttp answers 413 with its own
    text, which the client raises; --batches differs too (3 -> 5)."""
    py = python_with("aiohttp")
    app = _write(d / "ingest.py", _INGEST)
    return _incident(aiohttp_body_size_quoted,
                     Launch((py, str(app), "--max-body-size", "1048576", "--batches", "3"),
                            real_shell(0, d), d),
                     Launch((py, str(app), "--max-body-size", "1024", "--batches", "5"),
                            real_shell(1, d), d),
                     ("command", "--max-body-size"))


_SERVE = """
    import socket, subprocess, sys, time
    import httpx
    from concurrent.futures import ThreadPoolExecutor

    APP = '''
    import asyncio, os
    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        await asyncio.sleep(int(os.environ.get("APP_SLOW_MS", "200")) / 1000)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})
    '''

    def main():
        with open("slowapp.py", "w") as f:
            f.write(APP)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        server = subprocess.Popen([sys.executable, "-m", "uvicorn", "slowapp:app",
                                   "--host", "127.0.0.1", "--port", str(port)])
        try:
            for _ in range(100):
                try:
                    httpx.get(f"http://127.0.0.1:{port}/", timeout=5)
                    break
                except httpx.TransportError:
                    time.sleep(0.1)
            with ThreadPoolExecutor(6) as pool:
                codes = list(pool.map(lambda _: httpx.get(f"http://127.0.0.1:{port}/",
                                                          timeout=10).status_code, range(6)))
        finally:
            server.terminate()
            server.wait()
        refused = codes.count(503)
        if refused:
            raise RuntimeError(f"{refused} of {len(codes)} requests refused (HTTP 503)")
        print(f"served {len(codes)} requests")

    main()
    """


def uvicorn_concurrency_env_warning(d: Path) -> Incident:
    """B's shell still exports UVICORN_LIMIT_CONCURRENCY=1 (uvicorn's command line reads it):
    uvicorn warns "Exceeded concurrency limit." and answers 503 to concurrent requests; the
    app's own APP_SLOW_MS differs too (200 -> 250). Both variables are read: a read alone never
    decides, the warning's words put the cause first."""
    py = python_with("uvicorn", "httpx")
    app = _write(d / "serve.py", _SERVE)
    a = {**real_shell(0, d), "APP_SLOW_MS": "200"}
    b = {**real_shell(1, d), "APP_SLOW_MS": "250", "UVICORN_LIMIT_CONCURRENCY": "1"}
    return _incident(uvicorn_concurrency_env_warning, Launch((py, str(app)), a, d),
                     Launch((py, str(app)), b, d), ("env", "UVICORN_LIMIT_CONCURRENCY"))


_STORE = """
    import argparse, datetime
    import torch.distributed as dist

    p = argparse.ArgumentParser()
    p.add_argument("--num-processes", type=int, default=1)
    p.add_argument("--port", type=int, default=29500)
    a = p.parse_args()
    store = dist.TCPStore("127.0.0.1", a.port, a.num_processes, True,
                          timeout=datetime.timedelta(seconds=3))
    store.set("ready", "1")
    print("store ready for", a.num_processes, "processes")
    """


def tcpstore_num_processes_implied(d: Path) -> Incident:
    """B asks the c10d store to wait for --num-processes 2 and starts one: the store times
    out, "1/2 clients joined"; --port differs too."""
    py = python_with("torch")
    app = _write(d / "store.py", _STORE)
    return _incident(tcpstore_num_processes_implied,
                     Launch((py, str(app), "--num-processes", "1", "--port", "29631"),
                            real_shell(0, d), d),
                     Launch((py, str(app), "--num-processes", "2", "--port", "29632"),
                            real_shell(1, d), d),
                     ("command", "--num-processes"))


#: The incidents of this module, in the tune half.
TUNE5 = [transformers_activation_quoted, aiohttp_body_size_quoted, uvicorn_concurrency_env_warning,
         tcpstore_num_processes_implied]
