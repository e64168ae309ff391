#!/usr/bin/env bash
# Issue 41's real CUDA incidents on an NVIDIA GPU machine, run from the source tree (no install,
# no network; torch with CUDA on $PYTHON): each incident launched twice under `runsnap capture`
# (traced) from two shells that differ as real ones do (OMP_NUM_THREADS and kin), then
# `runsnap diff`. Under a minute or two; everything under $OUT:
#
#     OUT=/some/folder bash benchmarks/gpu_incidents.sh
#
# verdicts.txt (one line per incident: the verdict, the first difference and its evidence),
# NAME.diff.txt (the diff at 80 columns), env.txt. Not run in the session that wrote it (no GPU).
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-incidents-out}
PY=${PYTHON:-python3}
mkdir -p "$OUT/work"
export PYTHONPATH=$PWD
{ date -u; nvidia-smi -L; "$PY" -c 'import torch; print(torch.__version__, torch.version.cuda,
torch.cuda.nccl.version() if torch.cuda.is_available() else "-")'; } > "$OUT/env.txt" 2>&1
cat > "$OUT/work/step.py" <<'PY'
import os, torch
def main():
    x = torch.randn(512, 512, device="cuda")
    y = x @ x
    ref = (x.double() @ x.double()).float()
    print(f"matmul_rel_err={float((y - ref).norm() / ref.norm()):.3e}")
main()
PY
cat > "$OUT/work/nccl.py" <<'PY'
import os, torch, torch.distributed as dist
def main():
    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:%s" % os.environ["PORT"],
                            rank=0, world_size=1)
    t = torch.ones(4, device="cuda")
    dist.all_reduce(t)
    print(f"sum={float(t.sum()):.1f}")
main()
PY
shell() {  # two shells of one user: other thread counts, one planted setting in B
    env -i PATH="$PATH" HOME="$HOME" LANG=C.UTF-8 OMP_NUM_THREADS="$1" MKL_NUM_THREADS="$1" \
        PORT="$(( 29500 + $1 ))" "${@:2}"
}
run() {  # NAME SCRIPT GOOD_ENV BAD_ENV
    local d="$OUT/work/$1"
    mkdir -p "$d"
    shell 4 $3 "$PY" -m runsnap capture -o "$d/good.toml" -- "$PY" "$OUT/work/$2" > /dev/null 2>&1
    shell 8 $4 "$PY" -m runsnap capture -o "$d/bad.toml" -- "$PY" "$OUT/work/$2" > /dev/null 2>&1
    COLUMNS=80 "$PY" -m runsnap diff --no-color "$d/good.toml" "$d/bad.toml" > "$OUT/$1.diff.txt"
    "$PY" -m runsnap diff --format json "$d/good.toml" "$d/bad.toml" | "$PY" -c '
import json, sys
r = json.load(sys.stdin)
c = [d for d in r["differences"] if not d["hidden"]]
top = " ".join([c[0]["section"], c[0]["key"], "[" + c[0]["evidence_kind"] + "]"]) if c else "-"
print(sys.argv[1], r.get("confidence"), top, "| candidates:", r.get("candidates"))' "$1"
}
{
    run alloc-conf step.py "X=1" "PYTORCH_CUDA_ALLOC_CONF=expandable_segment:True"
    run nccl-ifname nccl.py "NCCL_SOCKET_IFNAME=lo" "NCCL_SOCKET_IFNAME=ib0"
    run no-devices step.py "X=1" "CUDA_VISIBLE_DEVICES="
    run tf32-override step.py "X=1" "NVIDIA_TF32_OVERRIDE=0"
} > "$OUT/verdicts.txt" 2>&1
cat "$OUT/verdicts.txt"
