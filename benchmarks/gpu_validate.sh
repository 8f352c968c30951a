#!/usr/bin/env bash
# One GPU validation pass (run on the device machine from the repository root; results in $OUT):
# the C extensions built for its Python, every gpu-marked test plus the core/DSL/hostile suites,
# every example kernel on irregular sizes under compute-sanitizer memcheck, the DSL benchmark, the optimisation
# ladder, the tensor-core probes and GEMM rungs under memcheck and racecheck, the GEMM ladder against cuBLAS
# and the cost of a torch tensor argument part by part.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
# the device machine has no anywidget (the widgets package imports it): carried wheels in .whl/ go to /tmp/site
if ls .whl/*.whl > /dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
python3 setup.py -q build_ext --inplace > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
head() { echo "# on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader), $(python3 -c 'import sys,torch,cupy;print("Python",sys.version.split()[0],"torch",torch.__version__,"cupy",cupy.__version__)')"; }
{ head; echo "# python3 -m pytest -o addopts='' -m gpu tests/"; python3 -m pytest -q -p no:cacheprovider -o addopts='' -m gpu tests/ 2>&1 | tail -15
  T="tests/test_hostile_input.py tests/test_fuzz_dlpack.py tests/test_dlpack_bridge.py tests/test_dsl_native_launcher.py tests/test_dsl_gpu.py tests/test_mdspan.py tests/test_tensor.py tests/test_dsl.py tests/test_dsl_cpu_semantics.py tests/test_dsl_core_parity.py tests/test_dsl_dispatch_review.py tests/test_algebra.py tests/test_layout_core.py tests/test_atoms.py"
  echo "# python3 -m pytest -o addopts='' $T"; python3 -m pytest -q -p no:cacheprovider -o addopts='' $T 2>&1 | tail -8
} > "$OUT/gpu-tests.txt" 2>&1
{ head; echo "# compute-sanitizer --tool memcheck python3 benchmarks/dsl_gpu_check.py small irregular"
  compute-sanitizer --tool memcheck python3 benchmarks/dsl_gpu_check.py small irregular 2>&1 | tail -25; } > "$OUT/dsl-memcheck.txt"
{ head; echo "# python3 benchmarks/bench_dsl.py"; python3 benchmarks/bench_dsl.py --out "$OUT/dsl.json" 2>&1 | tail -25; } > "$OUT/dsl-bench.txt"
{ head; echo "# compute-sanitizer --tool memcheck / racecheck: the tensor-core probes and every GEMM rung at a ragged size"
  compute-sanitizer --tool memcheck python3 -m pytest -q -p no:cacheprovider -o addopts='' -m gpu tests/test_tensor_cores.py 2>&1 | tail -4
  compute-sanitizer --tool racecheck python3 -m pytest -q -p no:cacheprovider -o addopts='' -m gpu -k rung tests/test_tensor_cores.py 2>&1 | tail -4
} > "$OUT/tensor-cores-sanitizer.txt" 2>&1
python3 -m workbench bench gemm --out "$OUT/gemm.json" > /dev/null 2>&1
python3 -m workbench bench ladder --out "$OUT/ladder.json" > /dev/null 2>&1
{ head; echo "# python3 benchmarks/torch_arg_cost.py --device cuda"; python3 benchmarks/torch_arg_cost.py --device cuda 2>&1 | tail -14; } > "$OUT/torch-arg-cost.txt"
tail -4 "$OUT/gpu-tests.txt"; grep -E "ERROR SUMMARY|ok" "$OUT/dsl-memcheck.txt" | tail -3; tail -12 "$OUT/dsl-bench.txt"
cat "$OUT/tensor-cores-sanitizer.txt"
tail -3 "$OUT/torch-arg-cost.txt"
