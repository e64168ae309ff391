#!/usr/bin/env bash
# The GPU benchmark on a real NVIDIA GPU machine, run from the source tree (no install, no
# network): [system.gpu]'s cost in a capture (NVML against nvidia-smi), NVML's facts checked
# against nvidia-smi's own answers, and a ~3-second CUDA launch captured (traced) against the
# bare one. About 2 minutes; everything under $OUT (at most 5 files):
#
#     OUT=/some/folder bash benchmarks/gpu_device.sh
#
# env.txt (the machine), gpu-device.md (the report), gpu-device.json (every figure and both
# [system.gpu] tables), gpu-device.log (the benchmark's own output), status.txt (its exit status).
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-device-out}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
export PYTHONPATH=$PWD
unset RUNSNAP_NO_NVML
{
    date -u
    uname -r
    nvidia-smi -L
    "$PY" -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__,
"cuda", torch.version.cuda, torch.cuda.is_available())'
    echo "cc: $(command -v cc || echo none)"
    "$PY" -c 'import ctypes; ctypes.CDLL("libnvidia-ml.so.1"); print("libnvidia-ml.so.1 loads")'
} > "$OUT/env.txt" 2>&1
timeout "${BENCH_TIMEOUT:-270}" "$PY" benchmarks/gpu.py --device --rounds "${ROUNDS:-11}" \
    --launch-rounds "${LAUNCH_ROUNDS:-7}" --out "$OUT/gpu-device.md" \
    --json "$OUT/gpu-device.json" > "$OUT/gpu-device.log" 2>&1
status=$?
echo "$status" > "$OUT/status.txt"
cat "$OUT/env.txt"
if [ -f "$OUT/gpu-device.md" ]; then cat "$OUT/gpu-device.md"; else tail -n 40 "$OUT/gpu-device.log"; fi
exit "$status"
