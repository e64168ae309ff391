"""What ``[system.gpu]`` costs a capture, NVML against nvidia-smi, and a captured GPU launch
against the bare one, as same-run ratios.

    python benchmarks/gpu.py [--rounds N] [--out FILE]          # here: stub NVML, replayed nvidia-smi
    python3 benchmarks/gpu.py --device [--rounds N] [--out FILE] [--json FILE]   # a real GPU

runsnap runs from this source tree (``PYTHONPATH``) in every case, so the cases differ only in
where the GPU facts come from. Every round runs each command once, in a rotated order;
medians and ratios are of the same run.

**Stub mode** (no GPU): the recorded machine (default ``h100-r590``; ``--recording``) is
answered by a stub ``libnvidia-ml.so.1`` built from its recording (tests/collectors/nvml_stub.py)
and by the replayed nvidia-smi the tests use (a Python script: a real nvidia-smi's costs are
in the device mode's figures, not here). Cases:

1. ``runsnap capture`` (no command) with NVML (the stub; nvidia-smi only for ``topo -m``)
   against the nvidia-smi path (no library: the query, the header and ``topo -m`` forked) and
   against no GPU at all (no library, no nvidia-smi): wall time and ``meta.collect_ms``;
2. where the time before the child starts goes: ``runsnap capture -- python -c <write the
   time>`` against the bare command (the child writes the time it started), and the capture's
   ``collect_ms`` by collector; the same with an empty cache folder (the first use: the getenv
   interposer is built with ``cc``).

**Device mode** (a real NVIDIA GPU, ``python3`` with torch): case 1 with the real library and
nvidia-smi (NVML; ``RUNSNAP_NO_NVML=1`` for the nvidia-smi path; both hidden for the floor), a
check that NVML's ``[system.gpu]`` equals the nvidia-smi path's and ``nvidia-smi --query-gpu``'s
own answer, and a ~3-second CUDA matmul loop launched bare and captured (traced), interleaved.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
#: The child of case 2: writes the time it started (seconds since the epoch) to argv[1].
STARTED = "import sys, time; open(sys.argv[1], 'w').write(repr(time.time()))"
#: The GPU launch of the device mode: N matmuls of 4096 x 4096 on the GPU (argv[1]).
TRAIN = """
import sys, time, torch
n = int(sys.argv[1])
a = torch.randn(4096, 4096, device="cuda")
b = torch.randn(4096, 4096, device="cuda")
torch.cuda.synchronize()
t = time.perf_counter()
for _ in range(n):
    c = a @ b
torch.cuda.synchronize()
print(f"{n} matmuls in {time.perf_counter() - t:.3f} s", file=sys.stderr)
"""
#: The 15 fields runsnap asks nvidia-smi for (gpu.BASE_FIELDS + gpu.EXTRA_FIELDS).
QUERY = ("index,name,uuid,memory.total,pci.bus_id,driver_version,compute_cap,persistence_mode,"
         "mig.mode.current,ecc.mode.current,power.limit,clocks.max.sm,clocks.max.memory,"
         "pcie.link.gen.max,pcie.link.width.max")


def base_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUNSNAP_")}
    env.update(PYTHONPATH=str(ROOT), **extra)
    return env


def runsnap(*args: str) -> list[str]:
    return [PY, "-m", "runsnap", *args]


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    """Wall seconds of ``argv`` (which must succeed)."""
    t0 = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, check=False)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:6])}...: exit {done.returncode}: {done.stderr[-800:]}")
    return wall


def meta_of(snapshot: Path) -> dict:
    return tomllib.loads(snapshot.read_text())["meta"]


def gpu_of(snapshot: Path) -> dict:
    return tomllib.loads(snapshot.read_text())["system"]["gpu"]


def med(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def rounds(cases: dict[str, object], n: int) -> list[list[str]]:
    """The order of the cases in each of ``n`` rounds (rotated, so none is always first)."""
    names = list(cases)
    return [names[r % len(names):] + names[:r % len(names)] for r in range(n)]


def capture_cost(cases: dict[str, dict[str, str]], n: int, work: Path) -> dict[str, dict]:
    """Case 1: ``runsnap capture -o SNAP`` per environment; wall ms and [system.gpu]'s ms."""
    got: dict[str, dict] = {name: {"wall": [], "gpu": []} for name in cases}
    snap = work / "facts.toml"
    for order in rounds(cases, n + 1):
        for name in order:
            snap.unlink(missing_ok=True)
            wall = timed(runsnap("capture", "-o", str(snap)), cases[name], work)
            got[name]["wall"].append(wall * 1000)
            got[name]["gpu"].append(meta_of(snap)["collect_ms"]["system.gpu"])
            got[name]["last"] = gpu_of(snap)
    for name in cases:  # the first round warms the page cache and runsnap's caches
        got[name]["wall"], got[name]["gpu"] = got[name]["wall"][1:], got[name]["gpu"][1:]
    return got


def child_start(env: dict[str, str], work: Path, captured: bool) -> tuple[float, dict]:
    """Case 2: ms from the launch to the child's first statement; the capture's collect_ms."""
    mark, snap = work / "started", work / "launch.toml"
    mark.unlink(missing_ok=True)
    snap.unlink(missing_ok=True)
    child = [PY, "-c", STARTED, str(mark)]
    argv = runsnap("capture", "-o", str(snap), "--", *child) if captured else child
    t0 = time.time()
    timed(argv, env, ROOT)  # in a git checkout, as launches are
    started = (float(mark.read_text()) - t0) * 1000
    return started, meta_of(snap)["collect_ms"] if captured else {}


def pre_child(cases: dict[str, dict[str, str]], n: int, work: Path) -> dict[str, dict]:
    got: dict[str, dict] = {name: {"start": [], "collect": []} for name in cases}
    for order in rounds(cases, n + 1):
        for name in order:
            env = cases[name]
            started, collect = child_start(env, work, captured=name != "bare")
            got[name]["start"].append(started)
            got[name]["collect"].append(collect)
    for name in cases:
        got[name]["start"] = got[name]["start"][1:]
        got[name]["collect"] = got[name]["collect"][1:]
    return got


def first_use(env: dict[str, str], work: Path) -> tuple[float, float, float]:
    """Child start of a capture with an empty cache folder (the interposer built, runsnap's
    other caches cold), the same with ``RUNSNAP_NO_NATIVE=1`` (cold, nothing built), then warm."""
    cache = work / "fresh-cache"
    shutil.rmtree(cache, ignore_errors=True)
    fresh = {**env, "RUNSNAP_CACHE_DIR": str(cache)}
    cold, _ = child_start(fresh, work, captured=True)
    warm, _ = child_start(fresh, work, captured=True)
    shutil.rmtree(cache, ignore_errors=True)
    no_native, _ = child_start({**fresh, "RUNSNAP_NO_NATIVE": "1"}, work, captured=True)
    return cold, no_native, warm


def collect_table(collects: list[dict]) -> list[tuple[str, float]]:
    names = sorted({k for c in collects for k in c}, key=lambda k: -med([c.get(k, 0) for c in collects]))
    return [(k, med([c.get(k, 0.0) for c in collects])) for k in names]


def report_costs(lines: list[str], costs: dict[str, dict], subject: str, peers: list[str]) -> None:
    lines += ["| case | capture wall ms (median) | x NVML | [system.gpu] collect_ms |",
              "| --- | ---: | ---: | ---: |"]
    base = med(costs[subject]["wall"])
    for name, c in costs.items():
        lines.append(f"| {name} | {med(c['wall']):.1f} | {med(c['wall']) / base:.2f}x | "
                     f"{med(c['gpu']):.1f} |")
    floor = costs[peers[-1]]
    for name in (subject, *peers[:-1]):
        lines.append(f"\n- {name}: [system.gpu] adds {med(costs[name]['wall']) - med(floor['wall']):+.1f} ms "
                     f"of wall time against {peers[-1]}")


def report_pre_child(lines: list[str], pre: dict[str, dict],
                     cold_warm: tuple[float, float, float] | None) -> None:
    lines += ["", "| launch | child started after (ms, median) | - bare |", "| --- | ---: | ---: |"]
    bare = med(pre["bare"]["start"])
    for name, c in pre.items():
        lines.append(f"| {name} | {med(c['start']):.1f} | {med(c['start']) - bare:+.1f} |")
    for name, c in pre.items():
        if name == "bare":
            continue
        top = collect_table(c["collect"])[:8]
        lines.append(f"\n{name}: collect_ms (median): "
                     + ", ".join(f"{k} {v:.1f}" for k, v in top))
    if cold_warm:
        lines.append(f"\nFirst use (empty cache: the interposer built): child started after "
                     f"{cold_warm[0]:.0f} ms; empty cache with RUNSNAP_NO_NATIVE=1 (nothing "
                     f"built) {cold_warm[1]:.0f} ms; the next capture {cold_warm[2]:.0f} ms.")


def replayed(folder: Path, recording: Path) -> str:
    """A PATH whose nvidia-smi replays ``recording`` (fixtures/nvidia-smi/replay.py)."""
    folder.mkdir()
    (folder / "nvidia-smi").write_text(f'#!/bin/sh\nexec "{PY}" '
                                       f'"{ROOT}/fixtures/nvidia-smi/replay.py" "{recording}" "$@"\n')
    (folder / "nvidia-smi").chmod(0o755)
    return f"{folder}:/usr/bin:/bin"


def stub_mode(args: argparse.Namespace, work: Path) -> list[str]:
    sys.path.insert(0, str(ROOT))
    from tests.collectors import nvml_stub

    rec = ROOT / "fixtures" / "nvidia-smi" / args.recording
    lib = nvml_stub.build(work / "stub", nvml_stub.facts_of(rec))
    topo_only = work / "topo-only"  # NVML's case: an nvidia-smi that can only answer topo -m
    topo_only.mkdir()
    shutil.copy(rec / "topo.txt", topo_only / "topo.txt")
    full, topo = replayed(work / "smi", rec), replayed(work / "smi-topo", topo_only)
    cases = {"NVML (stub)": base_env(PATH=topo, LD_LIBRARY_PATH=str(lib)),
             "NVML (stub), no nvidia-smi": base_env(PATH="/usr/bin:/bin", LD_LIBRARY_PATH=str(lib)),
             "nvidia-smi (replayed)": base_env(PATH=full),
             "no GPU": base_env(PATH="/usr/bin:/bin")}
    costs = capture_cost(cases, args.rounds, work)
    by_nvml, by_smi = costs["NVML (stub)"]["last"], costs["nvidia-smi (replayed)"]["last"]
    same = ({k: v for k, v in by_nvml.items() if k != "nvidia_smi"}
            == {k: v for k, v in by_smi.items() if k != "nvidia_smi"})
    lines = [f"Stub NVML ({args.recording}) against the replayed nvidia-smi, {args.rounds} rounds:", ""]
    report_costs(lines, costs, "NVML (stub)", ["NVML (stub), no nvidia-smi", "nvidia-smi (replayed)",
                                               "no GPU"])
    lines.append(f"\n[system.gpu] identical from both: {same}")
    pre = pre_child({"bare": base_env(PATH=full), "captured, NVML (stub)": cases["NVML (stub)"],
                     "captured, nvidia-smi (replayed)": cases["nvidia-smi (replayed)"]},
                    args.rounds, work)
    report_pre_child(lines, pre, first_use(cases["NVML (stub)"], work))
    return lines


def calibrate(env: dict[str, str], work: Path, seconds: float) -> int:
    """Matmuls for a launch of about ``seconds`` (torch's import and CUDA's start included)."""
    probe = 200
    t_small = timed([PY, "-c", TRAIN, "1"], env, work)
    t_probe = timed([PY, "-c", TRAIN, str(probe)], env, work)
    per = max((t_probe - t_small) / (probe - 1), 1e-5)
    return max(probe, int((seconds - t_small) / per))


def without_nvidia_smi(path: str, folder: Path) -> str:
    """``path`` with nvidia-smi's folder replaced by ``folder``, which links to everything in it
    but nvidia-smi (it is /usr/bin on most machines: git, cc and the rest stay found)."""
    found = shutil.which("nvidia-smi", path=path)
    if found is None:
        return path
    where = os.path.dirname(found)
    folder.mkdir()
    for entry in os.listdir(where):
        if entry != "nvidia-smi":
            (folder / entry).symlink_to(os.path.join(where, entry))
    real = os.path.realpath(where)  # /bin is /usr/bin on merged-/usr systems
    return ":".join(str(folder) if p and os.path.realpath(p) == real else p
                    for p in path.split(":"))


def device_mode(args: argparse.Namespace, work: Path, raw: dict, lines: list[str],
                flush: Callable[[], None]) -> None:
    """The device run, section by section: one that fails is reported and the next runs, and
    the report is written after each (a run cut short keeps what it measured)."""
    env = base_env()
    hidden = without_nvidia_smi(env.get("PATH", ""), work / "path-without-nvidia-smi")
    cases = {"NVML": env, "NVML, no nvidia-smi (no topo -m)": {**env, "PATH": hidden},
             "nvidia-smi (RUNSNAP_NO_NVML=1)": {**env, "RUNSNAP_NO_NVML": "1"},
             "neither (driver files)": {**env, "RUNSNAP_NO_NVML": "1", "PATH": hidden}}
    load = os.getloadavg()[0]
    lines += [f"Real GPU: {os.cpu_count()} CPUs, load average {load:.2f} at the start; "
              f"{args.rounds} rounds.", ""]

    def facts() -> None:
        costs = capture_cost(cases, args.rounds, work)
        raw["costs"] = {k: {"wall_ms": v["wall"], "gpu_ms": v["gpu"]} for k, v in costs.items()}
        nvml_gpu, smi_gpu = costs["NVML"]["last"], costs["nvidia-smi (RUNSNAP_NO_NVML=1)"]["last"]
        raw["gpu"] = {"nvml": nvml_gpu, "nvidia_smi": smi_gpu}
        report_costs(lines, costs, "NVML", ["NVML, no nvidia-smi (no topo -m)",
                                            "nvidia-smi (RUNSNAP_NO_NVML=1)",
                                            "neither (driver files)"])
        lines.extend(["", f"[system.gpu] NVML == nvidia-smi path: {nvml_gpu == smi_gpu}"])
        if nvml_gpu != smi_gpu:
            keys = sorted(set(nvml_gpu) | set(smi_gpu))
            lines.extend(f"  {k}: NVML {nvml_gpu.get(k)!r} / nvidia-smi {smi_gpu.get(k)!r}"
                         for k in keys if nvml_gpu.get(k) != smi_gpu.get(k))
        lines.extend(query_check(nvml_gpu, env, raw))

    def before_child() -> None:
        pre = pre_child({"bare": env, "captured (NVML)": env,
                         "captured (nvidia-smi)": cases["nvidia-smi (RUNSNAP_NO_NVML=1)"]},
                        args.rounds, work)
        raw["pre_child"] = {k: v["start"] for k, v in pre.items()}
        report_pre_child(lines, pre, first_use(env, work))

    for section in (facts, before_child, lambda: lines.extend(raw_costs(env, raw)),
                    lambda: lines.extend(gpu_launch(env, work, args, raw))):
        try:
            section()
        except (Exception, SystemExit) as exc:  # noqa: BLE001  # reported; the next one runs
            lines.extend(["", f"A section failed: {type(exc).__name__}: {exc}"])
        flush()


def query_check(nvml_gpu: dict, env: dict[str, str], raw: dict) -> list[str]:
    """NVML's devices against ``nvidia-smi --query-gpu`` and the header, parsed as runsnap does."""
    sys.path.insert(0, str(ROOT))
    from runsnap.capturing.collectors.gpu import parse_header, parse_query

    query = subprocess.run(["nvidia-smi", f"--query-gpu={QUERY}", "--format=csv"], env=env,
                           capture_output=True, text=True, check=False)
    header = subprocess.run(["nvidia-smi"], env=env, capture_output=True, text=True, check=False)
    raw["nvidia_smi_query"], raw["nvidia_smi_header"] = query.stdout, header.stdout[:600]
    devices = parse_query(query.stdout) if query.returncode == 0 else []
    for device in devices:
        device.pop("driver_version", None)
    said = parse_header(header.stdout)
    same = (devices == nvml_gpu.get("devices")
            and said["driver_version"] == nvml_gpu.get("driver_version")
            and said["cuda_version"] == nvml_gpu.get("cuda_version"))
    out = [f"[system.gpu] NVML == `nvidia-smi --query-gpu=<15 fields>` and its header: {same}"]
    if not same:
        out.append(f"  nvidia-smi: {devices} {said}\n  NVML: {nvml_gpu.get('devices')}")
    return out


def raw_costs(env: dict[str, str], raw: dict, n: int = 5) -> list[str]:
    """What each source costs on its own: the nvidia-smi programs runsnap forked (wall ms,
    median of ``n``) and NVML read in-process (the first read, then the median of the next)."""
    sys.path.insert(0, str(ROOT))
    from runsnap.capturing.collectors import nvml

    programs = {"nvidia-smi --query-gpu=<15 fields>": ["nvidia-smi", f"--query-gpu={QUERY}",
                                                        "--format=csv"],
                "nvidia-smi (the header)": ["nvidia-smi"],
                "nvidia-smi topo -m": ["nvidia-smi", "topo", "-m"]}
    library = nvml.find_library(env)
    reads = []
    for _ in range(n + 1):
        t0 = time.perf_counter()
        reading = nvml.read(library)
        reads.append((time.perf_counter() - t0) * 1000)
    walls = {k: [timed(argv, env, ROOT) * 1000 for _ in range(n)] for k, argv in programs.items()}
    raw["raw_costs"] = {"nvml_read_ms": reads, **walls}
    lines = ["", f"Each source alone (wall ms, median of {n}):", "",
             "| source | ms |", "| --- | ---: |",
             *(f"| {k} | {med(v):.1f} |" for k, v in walls.items()),
             f"| NVML in-process ({library}): first read | {reads[0]:.1f} |",
             f"| NVML in-process: next reads | {med(reads[1:]):.1f} |"]
    if reading.failed or reading.absent:
        lines.append(f"\nNVML did not answer: {reading.failed or reading.absent}")
    return lines


def has_cuda_torch(env: dict[str, str]) -> str:
    """"" when ``python`` has torch with a usable CUDA device, else why not."""
    done = subprocess.run([PY, "-c", "import torch; assert torch.cuda.is_available(), 'no CUDA'"],
                          env=env, capture_output=True, text=True, check=False)
    return "" if done.returncode == 0 else (done.stderr.strip().splitlines() or ["?"])[-1]


def gpu_launch(env: dict[str, str], work: Path, args: argparse.Namespace, raw: dict) -> list[str]:
    why = has_cuda_torch(env)
    if why:
        return ["", f"GPU launch skipped: torch with CUDA is not usable here ({why})"]
    n = calibrate(env, work, args.seconds)
    child = [PY, "-c", TRAIN, str(n)]
    snap = work / "launch-gpu.toml"
    cases = {"bare": child, "captured (traced)": runsnap("capture", "-o", str(snap), "--", *child)}
    walls: dict[str, list[float]] = {k: [] for k in cases}
    for order in rounds(cases, args.launch_rounds):
        for name in order:
            if name != "bare":
                snap.unlink(missing_ok=True)  # the last one is read below
            walls[name].append(timed(cases[name], env, ROOT))
    raw["launch"] = {"matmuls": n, **walls}
    runtime = tomllib.loads(snap.read_text()).get("runtime", {})
    raw["launch"]["runtime_native"] = runtime.get("native")
    bare, cap = med(walls["bare"]), med(walls["captured (traced)"])
    return ["", f"A GPU launch ({n} matmuls of 4096x4096), {args.launch_rounds} interleaved rounds:",
            "", "| launch | wall s (median) | all rounds |", "| --- | ---: | --- |",
            *(f"| {k} | {med(v):.3f} | {', '.join(f'{x:.2f}' for x in v)} |" for k, v in walls.items()),
            "", f"captured / bare: {cap / bare:.3f}x ({(cap - bare) * 1000:+.0f} ms); the "
            f"capture's [runtime] native: {runtime.get('native')!r}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", action="store_true", help="a real GPU machine")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--launch-rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--recording", default="h100-r590")
    parser.add_argument("--out", help="write the report here too")
    parser.add_argument("--json", help="the raw figures (device mode)")
    args = parser.parse_args()
    raw: dict = {}
    lines: list[str] = []

    def flush() -> None:
        if args.out:
            Path(args.out).write_text("\n".join(lines) + "\n")
        if args.json:
            Path(args.json).write_text(json.dumps(raw, indent=1, default=str))

    with tempfile.TemporaryDirectory(prefix="runsnap-gpu-bench-") as tmp:
        work = Path(tmp)
        if args.device:
            device_mode(args, work, raw, lines, flush)
        else:
            lines.extend(stub_mode(args, work))
            flush()
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
