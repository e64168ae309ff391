"""Real-shaped rank snapshots of one big job, made from a real capture.

    python benchmarks/realranks.py --ranks 32768 --out DIR [--from SNAPSHOT]

The source is a real traced rank: by default ``fixtures/runtime/torch-rank-schema1.toml``, rank 0
of ``torchrun --nproc-per-node 2 --no-python runsnap capture -o ... -- python train.py`` (CPU
torch 2.13, gloo all-reduce, 5 steps), written by schema 1 and stored here in schema 2's form
(its ``[runtime]`` through :func:`runsnap.snapshot.runtime_write.compact`). Every rank of the job is
that capture with what really differs between the ranks of one job changed, as a rank of
``srun -N NODES --ntasks-per-node 8 runsnap capture -o snaps/{job}/{host}-{rank}.toml`` would
write it:

* ``[meta]``: id, capture time (the ranks start within a minute), host, the launcher's numbers
  and variables, the collectors' timings;
* ``[env]``: ``RANK``, ``LOCAL_RANK``, ``GROUP_RANK``, ``ROLE_RANK``, the world sizes,
  ``MASTER_ADDR``, ``SLURM_*`` numbers and node name, ``CUDA_VISIBLE_DEVICES`` (the rank's
  device), the torchelastic error file;
* ``[system]``: the host name;
* ``[runtime]``: the pids and parent pids of the rank's processes, and the values it read
  (``RANK``, ``LOCAL_RANK``, ...);
* ``[outcome]``: the rank's output lines (rank number, losses, step times), times, pid, peak
  memory.

Odd ones out (what the N-way diff must name): every rank of node 7 has ``NCCL_IB_HCA=mlx5_1``
(the others ``mlx5_0``); rank 137 has another ``numpy`` version, and its torch read one more
variable (``TORCH_SHOW_CPP_STACKTRACES``, set); rank ``N-3`` exited 1.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SOURCE = ROOT / "fixtures" / "runtime" / "torch-rank-schema1.toml"
PER_NODE = 8
_Q = "\u2063"  # marks a placeholder in the template (never in a real snapshot)


def _ph(name: str) -> str:
    return f"{_Q}{name}{_Q}"


def template(source: Path, variant: frozenset[str]) -> str:
    """The source snapshot as TOML with placeholders for what differs between ranks."""
    from runsnap.snapshot import dumps, load
    from runsnap.snapshot.runtime_write import compact

    snap = load(source)
    s: dict[str, Any] = json.loads(json.dumps(snap.sections))
    meta: dict[str, Any] = json.loads(json.dumps(snap.meta))
    runtime = compact(s["runtime"])
    rank_env = {
        "RANK": _ph("srank"), "LOCAL_RANK": _ph("slocal"), "GROUP_RANK": _ph("snode"),
        "ROLE_RANK": _ph("srank"), "WORLD_SIZE": _ph("sworld"), "GROUP_WORLD_SIZE": _ph("snodes"),
        "ROLE_WORLD_SIZE": _ph("sworld"), "LOCAL_WORLD_SIZE": str(PER_NODE),
        "MASTER_ADDR": "node-00000", "MASTER_PORT": "29500",
        "SLURM_JOB_ID": "4242", "SLURM_PROCID": _ph("srank"), "SLURM_LOCALID": _ph("slocal"),
        "SLURM_NODEID": _ph("snode"), "SLURMD_NODENAME": _ph("host"),
        "SLURM_NTASKS": _ph("sworld"), "CUDA_VISIBLE_DEVICES": _ph("slocal"),
        "TORCHELASTIC_RUN_ID": "4242",
        "TORCHELASTIC_ERROR_FILE": f"/tmp/torchelastic_4242/attempt_0/{_ph('slocal')}/error.json",
        "NCCL_IB_HCA": "mlx5_1" if "node7" in variant else "mlx5_0",
    }
    s["env"]["vars"].update(rank_env)
    s["env"]["count"] = len(s["env"]["vars"])
    s["system"]["host"] = _ph("host")
    values = runtime.setdefault("values", {})
    for name in list(values):
        if name in rank_env:
            values[name] = rank_env[name]
    for i, proc in enumerate(runtime.get("processes") or []):
        proc["pid"] = _ph(f"pid{i}")
        proc["ppid"] = _ph("ppid")
    if "rank137" in variant:
        s["packages"]["distributions"]["numpy"]["version"] = "1.26.4"
        runtime["vars"]["TORCH_SHOW_CPP_STACKTRACES"] = {"set": True, "sites": [0]}
        values["TORCH_SHOW_CPP_STACKTRACES"] = "1"
    out = s["outcome"]
    out.update(started_at=_ph("start"), ended_at=_ph("end"), duration_s=_ph("dur"),
               pid=_ph("pid0"), peak_rss_bytes=_ph("rss"))
    out["stdout"]["tail"] = [f"rank={_ph('srank')} step={k} loss={_ph(f'loss{k}')} "
                             f"step_time={_ph(f'st{k}')}" for k in range(5)]
    if "failed" in variant:
        out.update(status="exited", exit_status=1,
                   errors=["RuntimeError: Connection closed by peer"])
        out["stderr"]["tail"] = ["RuntimeError: Connection closed by peer"]
        out["stderr"]["lines"] = 1
    s["runtime"] = runtime
    meta.update(id=_ph("id"), captured_at=_ph("start"), host=_ph("host"))
    meta["collect_ms"] = {k: _ph(f"ms:{k}") for k in meta.get("collect_ms", {})}
    launcher = meta.setdefault("launcher", {})
    launcher.update(name="torchrun", rank=_ph("rank"), local_rank=_ph("local"),
                    world_size=_ph("world"), local_world_size=PER_NODE, node_rank=_ph("node"),
                    job="4242")
    launcher["vars"] = {k: v for k, v in rank_env.items()
                        if k in ("RANK", "LOCAL_RANK", "GROUP_RANK", "WORLD_SIZE",
                                 "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    return dumps(snap.replace(meta=meta, sections=s, schema=2))


def _fill(text: str, values: dict[str, Any]) -> str:
    parts = text.split(_Q)
    out = []
    for i, part in enumerate(parts):
        if i % 2:
            value = values[part]
            out.append(str(value))
        else:
            out.append(part)
    joined = "".join(out)
    return joined


def _numbers(text: str) -> str:
    """Placeholders whose value is a number were written as strings: unquote them."""
    import re

    return re.sub(r'"(\u2063(?:rank|local|node|world|nodes|pid\d+|ppid|dur|rss|ms:[^\u2063]*)'
                  r'\u2063)"', r"\1", text)


def write_job(out: Path, n_ranks: int, source: Path = SOURCE, log: Any = print) -> list[Path]:
    """``n_ranks`` snapshots in ``out`` (``node-NNNNN-RRRRRR.toml``); returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    texts: dict[frozenset[str], str] = {}
    nodes = max(1, n_ranks // PER_NODE)
    odd = {137 % n_ranks: "rank137", n_ranks - 3: "failed"}
    rng = random.Random(26)
    paths = []
    for r in range(n_ranks):
        node = r // PER_NODE
        variant = frozenset([odd.get(r, ""), "node7" if node == 7 % nodes else ""]) - {""}
        if variant not in texts:
            texts[variant] = _numbers(template(source, variant))
        host = f"node-{node:05d}"
        sec = r % 60
        values: dict[str, Any] = {
            "rank": r, "local": r % PER_NODE, "node": node, "world": n_ranks, "nodes": nodes,
            "host": host, "ppid": 1000 + (r % PER_NODE), "pid0": 20000 + rng.randrange(40000),
            "id": f"{rng.getrandbits(128):032x}", "start": f"2026-12-01T15:47:{sec:02d}.102+00:00",
            "end": f"2026-12-01T15:52:{sec:02d}.634+00:00", "dur": round(300 + rng.random(), 3),
            "rss": 319746048 + rng.randrange(1 << 20),
        }
        values.update({f"s{k}": str(values[k]) for k in ("rank", "local", "node", "world",
                                                           "nodes")})
        for k in range(4):
            values[f"pid{k}"] = values["pid0"] + k
        for k in range(5):
            values[f"loss{k}"] = f"{2.3 - 0.01 * k + rng.random() / 100:.4f}"
            values[f"st{k}"] = f"{0.002 + rng.random() / 100:.4f}"
        text = texts[variant]
        for key in set(text.split(_Q)[1::2]):
            if key.startswith("ms:"):
                values[key] = round(rng.random() * 20, 2)
        path = out / f"{host}-{r:06d}.toml"
        path.write_text(_fill(text, values))
        paths.append(path)
        if log and (r + 1) % 4096 == 0:
            log(f"  {r + 1} of {n_ranks}")
    return paths


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, default=4096)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--from", dest="source", type=Path, default=SOURCE)
    args = ap.parse_args()
    paths = write_job(args.out, args.ranks, args.source)
    size = sum(os.path.getsize(p) for p in paths[:64]) / min(64, len(paths))
    print(f"{len(paths)} snapshots in {args.out}, {size / 1024:.1f} KiB each")


if __name__ == "__main__":
    main()
