#!/usr/bin/env bash
# The fp8 Hopper GEMM on an SM90 GPU in one pass (run on the device machine from the repository root; < 8 minutes;
# results in $OUT): the C extensions built for its Python; the GPU tests of the fp8 kernel and of the fp8 suite
# (the fp16/bf16 kernels' generated code is pinned by tests/test_generated_code.py); the fp8 benchmark against
# torch._scaled_mm (benchmarks/fp8_gemm.py -> $OUT/fp8-<GPU>.json, also left in benchmarks/results/); then
# compute-sanitizer memcheck and racecheck over the fp8 kernels at ragged sizes (77 x 304 x 144 per-tensor: every
# configuration, e4m3/e5m2 pairings, C bf16/fp16/fp32; 130 x 256 x 400 block-scaled).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
if ls .whl/*.whl > /dev/null 2>&1; then   # carried wheels (the device machine lacks anywidget)
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
hdr() { echo "# on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader), $(python3 -c 'import sys,torch,cupy;print("Python",sys.version.split()[0],"torch",torch.__version__,"cupy",cupy.__version__)')"; }
PYT="python3 -m pytest -q -p no:cacheprovider -o addopts="
timeout 90 python3 setup.py -q build_ext --inplace > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
{ hdr; echo "# $PYT -m gpu tests/test_hopper.py tests/test_bench_gemm.py -k fp8"
  timeout 120 $PYT -m gpu tests/test_hopper.py tests/test_bench_gemm.py -k fp8 2>&1 | tail -25; } > "$OUT/fp8-gpu-tests.txt" 2>&1
{ hdr; echo "# python3 benchmarks/fp8_gemm.py --out \$OUT/fp8.json"
  timeout 120 python3 benchmarks/fp8_gemm.py --out "$OUT/fp8.json" 2>&1 | tail -40; } > "$OUT/fp8-bench.txt" 2>&1
GPU=$(python3 -c 'import json;print(json.load(open("'"$OUT"'/fp8.json"))["gpu_short"])' 2>/dev/null || echo gpu)
[ -f "$OUT/fp8.json" ] && cp "$OUT/fp8.json" "$OUT/fp8-$GPU.json" && cp "$OUT/fp8.json" "benchmarks/results/fp8-$GPU.json"
K='fp8 and gpu and mnk1 and not normal'
{ hdr; echo "# compute-sanitizer --tool memcheck $PYT -m gpu tests/test_hopper.py -k '$K'"
  timeout 75 compute-sanitizer --tool memcheck $PYT -m gpu tests/test_hopper.py -k "$K" 2>&1 | tail -5
  echo "# compute-sanitizer --tool racecheck $PYT -m gpu tests/test_hopper.py -k '$K'"
  timeout 75 compute-sanitizer --tool racecheck $PYT -m gpu tests/test_hopper.py -k "$K" 2>&1 | tail -5
} > "$OUT/fp8-sanitizer.txt" 2>&1
cat "$OUT/fp8-gpu-tests.txt" "$OUT/fp8-bench.txt" "$OUT/fp8-sanitizer.txt"
