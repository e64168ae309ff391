"""What ``capture --track`` costs, as same-run ratios against the untracked capture.

    python benchmarks/trackers.py [--rounds N] [--out FILE]

Needs the ``test`` extra (MLflow's server, W&B's client). In one run, interleaved round after
round (:mod:`benchmarks.harness`), in a small git repository:

1. ``runsnap capture -- python -c <child>`` untracked, with ``--track mlflow`` against a real
   MLflow tracking server on 127.0.0.1, and with ``--track wandb`` offline; the child notes when
   it started, so the launch delay (child start - runsnap start) is measured beside the whole
   run. Target: tracking with MLflow delays the launch by at most 1.2x the untracked delay (the
   run is created while the collectors work).
2. The same with the MLflow server replaced by a socket that accepts and never answers, and
   ``--track-timeout 1``: the launch delay is then the untracked one plus at most the timeout.
3. Why runsnap speaks REST to MLflow: ``import mlflow`` against ``import urllib.request`` (what
   ``--track mlflow`` imports) and ``python -c pass``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.harness import Case, Check, Command, Measured, render, run_case  # noqa: E402

CHILD = "import sys, time; open(sys.argv[1], 'w').write(repr(time.time()))"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_mlflow(work: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = (work / "mlflow.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--backend-store-uri",
         f"sqlite:///{work / 'mlflow.db'}", "--default-artifact-root", str(work / "artifacts"),
         "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
        env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}, stdout=log,
        stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2):
                return proc, url
        except OSError:  # noqa: PERF203 - not up yet
            time.sleep(0.3)
    os.killpg(proc.pid, signal.SIGKILL)
    raise SystemExit("mlflow server did not start")


def silent_server() -> str:
    """A socket on 127.0.0.1 that accepts and never answers (kept until the process ends)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            conn, _ = listener.accept()
            held.append(conn)

    threading.Thread(target=accept, daemon=True).start()
    return f"http://127.0.0.1:{listener.getsockname()[1]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--out", default="")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="runsnap-bench-track-"))
    repo = work / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (repo / "train.py").write_text("print('hi')\n")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "x"],
                   cwd=repo, check=True)
    server, url = start_mlflow(work)
    silent = silent_server()
    mark = work / "started"
    base = {"PATH": os.environ["PATH"], "HOME": str(work), "RUNSNAP_CACHE_DIR": str(work / "c"),
            "RUNSNAP_KEY_FILE": str(work / "key"), "WANDB_SILENT": "true",
            "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}

    def cmd(label: str, *extra: str, **env: str) -> Command:
        argv = [sys.executable, "-m", "runsnap", "capture", *extra, "-o", str(work / "s.toml"),
                "--", sys.executable, "-c", CHILD, str(mark)]

        def after(launched: float) -> dict[str, float]:
            return {"launch_delay_ms": (float(mark.read_text()) - launched) * 1000}

        return Command(label, argv, env={**base, **env}, cwd=str(repo), after=after)

    commands = [
        cmd("capture, untracked"),
        cmd("capture --track mlflow (server on 127.0.0.1)", "--track", "mlflow",
            MLFLOW_TRACKING_URI=url),
        cmd("capture --track wandb (offline)", "--track", "wandb", WANDB_MODE="offline"),
        cmd("capture --track mlflow --track-timeout 1 (never answers)", "--track", "mlflow",
            "--track-timeout", "1", MLFLOW_TRACKING_URI=silent),
    ]

    def delay(m: Measured) -> float:
        return statistics.median(m.extra["launch_delay_ms"])

    def checks(m: dict[str, Measured]) -> list[Check]:
        plain, tracked, wandb, silent_ = (m[c.label] for c in commands)
        return [
            Check("launch delay, tracked with MLflow / untracked", delay(tracked) / delay(plain),
                  "x", 1.2),
            Check("launch delay, tracked with W&B / untracked", delay(wandb) / delay(plain),
                  "x", 1.2),
            Check("launch delay added by a server that never answers (timeout 1 s)",
                  delay(silent_) - delay(plain), " ms", 1000 + 100),
            Check("whole capture, tracked with MLflow / untracked",
                  tracked.median_ms / plain.median_ms, "x", None),
            Check("whole capture, tracked with W&B / untracked (W&B's client after the child)",
                  wandb.median_ms / plain.median_ms, "x", None),
        ]

    def notes(m: dict[str, Measured]) -> list[str]:
        return [f"median launch delay (runsnap start -> child start), {label}: "
                f"{delay(meas):.1f} ms" for label, meas in m.items()]

    case = Case("1", "capture --track: the launch's delay and the whole capture",
                lambda _bench: commands, checks, notes=notes)
    py = sys.executable
    imports = [Command("python -c 'import mlflow'", [py, "-W", "ignore", "-c", "import mlflow"]),
               Command("python -c 'import urllib.request'", [py, "-c", "import urllib.request"]),
               Command("python -c pass", [py, "-c", "pass"])]

    def import_checks(m: dict[str, Measured]) -> list[Check]:
        client, rest, floor = (m[c.label] for c in imports)
        return [Check("import mlflow - python -c pass", client.median_ms - floor.median_ms,
                      " ms", None),
                Check("import urllib.request - python -c pass", rest.median_ms - floor.median_ms,
                      " ms", None)]

    clients = Case("2", "what a tracker client would cost a capture to import",
                   lambda _bench: imports, import_checks, repeat=lambda n: max(3, n // 2))
    try:
        result = run_case(case, None, args.rounds, progress=lambda s: print(s, file=sys.stderr))
        second = run_case(clients, None, args.rounds,
                          progress=lambda s: print(s, file=sys.stderr))
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(30)
    load = os.getloadavg()[0]
    text = (f"# capture --track: benchmark results\n\n- date: "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n- command: `python "
            f"benchmarks/trackers.py --rounds {args.rounds}` (interleaved, one warm-up round)\n"
            f"- load average after: {load:.2f} (other work shares this machine)\n\n"
            + render([result, second]))
    if args.out:
        Path(args.out).write_text(text)
    print(text)
    shutil.rmtree(work, ignore_errors=True)
    return 0 if all(c.met is not False for c in result.checks) else 1


if __name__ == "__main__":
    sys.exit(main())
