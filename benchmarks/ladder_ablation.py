"""Rungs 5 and 6 of the GEMM ladder one change at a time, each step timed against cuBLAS and, with --ncu, profiled.

The steps are ``ablation.rung5_steps()`` (rung 4 -> rung 5: warps, block tile, bk, the cp.async ring, the
fragment prefetch, grouping) and, on an SM90 GPU, ``ablation.rung6_steps()`` (one consumer and 2 stages -> two
consumers, 4 stages, grouping, the TMA epilogue = rung 6, persistent = rung 7, a cluster of 2, ping-pong), each
configuration the previous one with one change.  C = A @ B^T, fp16 A (M, K) and B (N, K), fp32 accumulation, fp16 C
(as cuBLAS writes it), at M = N = K in --sizes.

Timing (``workbench.bench.bandwidth._times``): each step call by call alternating with cuBLAS (``torch.matmul`` on the
same tensors), CUDA events around every call, queued back to back after 3 warm-ups; --repeats repetitions, each
visiting every step in turn; per step the median over the repetitions of (cuBLAS time / step time) and its spread
(min, quartiles, max), TFLOPS, and the GPU's clocks before and after each size (an H200 slows down under sustained
8192^3 GEMMs: interleaving puts that on both sides, the spread and the clocks show what is left).  Each step is
also checked exact against torch at a ragged size (integer inputs).

--ncu: each step (and cuBLAS) once more under Nsight Compute, in a process of its own (this script with --single:
one launch between cudaProfilerStart and cudaProfilerStop, ``ncu --profile-from-start off``), at the first size:
shared-memory wavefronts and bank conflicts, DRAM and L2 bytes, achieved occupancy and its limits, waves per SM,
registers, shared memory, the tensor pipes' utilisation and the duration.  A metric this ncu does not know is
dropped and named in the result.

Each step's predictions (``workbench.kernels.arithmetic.gemm_arithmetic`` of its configuration, with ptxas's
registers) are stored beside its measurements; notebooks 10 and 11 read the file.

    python3 benchmarks/ladder_ablation.py --ncu            # ~5 min on an H100/H200, writes
                                                           # benchmarks/results/ladder-ablation-<GPU>.json
    python3 benchmarks/ladder_ablation.py --single all --size 4096      # what --ncu profiles: one launch each
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import pathlib
import shutil
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import workbench as wb  # noqa: E402
from workbench.kernels import ablation as A  # noqa: E402
from workbench.kernels import gemm_ladder as G  # noqa: E402
from workbench.kernels.arithmetic import gemm_arithmetic  # noqa: E402

NCU_METRICS = [
    "gpu__time_duration.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "smsp__inst_executed_op_ldsm.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_bytes.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem",
    "launch__waves_per_multiprocessor",
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_dynamic",
    "launch__shared_mem_per_block_static",
    "launch__grid_size",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
]
IRREGULAR = (1000, 1000, 504)     # M, N, K: ragged tiles; C rows of 2000 bytes (16-byte aligned: the TMA epilogue)


def steps(sm90: bool) -> list:
    """[(id, what, cfg, epilogue)]: rung 5's steps ("r5.i"), then on SM90 rung 6's ("r6.i")."""
    out = [(f"r5.{i}", what, cfg, None) for i, (what, cfg) in enumerate(A.rung5_steps())]
    if sm90:
        out += [(f"r6.{i}", what, cfg, epi) for i, (what, cfg, epi) in enumerate(A.rung6_steps())]
    return out


def launcher(cfg, epilogue, a, b, c):
    """(kernel, grid, block, args): the step's kernel on torch tensors a, b, c (no checks on the timed path)."""
    m, n = c.shape
    if epilogue is None:
        r = G.smem_rung(cfg)
        ops = tuple(wb.from_dlpack(x, assumed_align=16) for x in (a, b, c))
        return r.kernel, (math.ceil(m / cfg.bm) * math.ceil(n / cfg.bn), 1, 1), (cfg.threads, 1, 1), ops
    from workbench.kernels.gemm_hopper import c_operand
    kern, ops = cfg.operands(a, b, c)              # checks A, B, C; the TMA epilogue where C's rows allow
    if epilogue == "registers":
        ta, tb = cfg.tma(a, b)
        kern, ops = cfg.kernel("registers"), (ta, tb, c_operand(c), a.shape[1])
    elif len(ops) != 5:
        raise ValueError(f"{cfg!r}: the TMA epilogue needs C's rows 16-byte aligned, but C is {tuple(c.shape)}")
    return kern, cfg.grid(m, n), (cfg.threads, 1, 1), ops


def _sm90():
    from workbench.dsl.runtime import cupy as backend_cupy
    return backend_cupy.current_arch() == "sm_90"


def single(step_id: str, size: int):
    """One launch of a step, of cuBLAS ("cublas"), or of each in turn ("all": cuBLAS first, then the steps in order)
    between cudaProfilerStart/Stop, after a first launch that compiles it (what ncu --profile-from-start off sees)."""
    import torch
    gen = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(size, size, device="cuda", generator=gen).half()
    b = torch.randn(size, size, device="cuda", generator=gen).half()
    c = torch.empty(size, size, device="cuda", dtype=torch.float16)
    ids = ["cublas"] + [s[0] for s in steps(_sm90())] if step_id == "all" else [step_id]
    fns = []
    for sid in ids:
        if sid == "cublas":
            fns.append(lambda: torch.matmul(a, b.t()))
            continue
        _, _, cfg, epi = next(s for s in steps(_sm90()) if s[0] == sid)
        kern, grid, block, ops = launcher(cfg, epi, a, b, c)
        fns.append(lambda kern=kern, grid=grid, block=block, ops=ops: kern[grid, block](*ops))
    for fn in fns:
        fn()                         # compiled (and cached) before anything is profiled
    torch.cuda.synchronize()
    for fn in fns:
        torch.cuda.profiler.start()
        fn()
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()


def _number(text):
    t = text.replace(",", "").strip()
    try:
        return float(t)
    except ValueError:
        return t


def ncu_profile(ids: list, size: int, metrics: list) -> dict:
    """ncu's metrics of one launch of each of ``ids`` (cuBLAS first, then the steps: one process, ``--single all``),
    as {id: {"kernel", "metrics"}}; metrics this ncu does not know are dropped (named under "dropped_metrics")."""
    ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    metrics = list(metrics)
    dropped = []
    for _ in range(len(NCU_METRICS)):
        cmd = [ncu, "--profile-from-start", "off", "--csv", "--print-units", "base", "--metrics", ",".join(metrics),
               sys.executable, str(pathlib.Path(__file__).resolve()), "--single", "all", "--size", str(size)]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        text = p.stdout + p.stderr
        errors = [line for line in text.splitlines() if "ERROR" in line]
        unknown = [m for m in metrics if any(m in line for line in errors)]
        if p.returncode != 0 and unknown:
            dropped += unknown
            metrics = [m for m in metrics if m not in unknown]
            continue
        break
    rows = [line for line in p.stdout.splitlines() if line.startswith('"')]
    if p.returncode != 0 or not rows:
        return {"error": text.strip()[-3000:], "command": " ".join(cmd), "dropped_metrics": dropped}
    launches: dict = {}
    for row in csv.DictReader(io.StringIO("\n".join(rows))):
        e = launches.setdefault(row["ID"], {"kernel": row.get("Kernel Name"), "metrics": {}})
        e["metrics"][row["Metric Name"]] = {"value": _number(row["Metric Value"]), "unit": row.get("Metric Unit", "")}
    got = [launches[i] for i in sorted(launches, key=int)]
    if len(got) != len(ids):
        return {"error": f"expected one profiled launch per id ({len(ids)}), but ncu reported {len(got)}: "
                         f"{[g['kernel'] for g in got]}", "dropped_metrics": dropped}
    return {"dropped_metrics": dropped, "metrics_used": metrics, "steps": dict(zip(ids, got))}


def predictions(cfg, size, registers, sms, epilogue=None) -> dict:
    g = gemm_arithmetic(cfg, size, size, size, sms=sms, registers=registers, c_type=wb.Float16,
                        epilogue=epilogue or "tma")
    out = {k: g.as_dict()[k] for k in ("intensity", "smem_bytes", "max_stages", "registers", "blocks_per_sm",
                                        "occupancy", "tiles", "waves", "wave_efficiency", "dram_min_bytes",
                                        "wave_a_tiles", "wave_b_tiles", "l2_reuse", "tiles_per_block")}
    if hasattr(cfg, "conflicts"):     # the ldmatrix reads: wavefronts of the plain tile and of the one used
        used = sum(u for _, u in cfg.conflicts.values())
        ideal = sum(wb.bank_conflicts(c, cfg._plain(n)).ideal_total
                    for c, n in ((cfg.s2r_A, cfg.bm), (cfg.s2r_B, cfg.bn)))
        out["ldmatrix_wavefronts"] = {"used": used, "ideal": ideal, "excess_share": 1 - ideal / used}
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="default benchmarks/results/ladder-ablation-<GPU>.json")
    ap.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--ncu", action="store_true", help="also profile each step with Nsight Compute (at the first size)")
    ap.add_argument("--single", help="one launch of this step id (or 'cublas'), for ncu")
    ap.add_argument("--size", type=int, default=4096)
    args = ap.parse_args(argv)
    if args.single:
        single(args.single, args.size)
        return
    import torch

    from workbench.bench.bandwidth import _times
    from workbench.bench.gemm import _gpu_short_name, _spread, gpu_clocks
    if not torch.cuda.is_available():
        raise SystemExit("ladder_ablation: needs a CUDA GPU (torch sees none)")
    t0 = time.time()
    props = torch.cuda.get_device_properties(0)
    gpu = _gpu_short_name(props.name)
    sms = props.multi_processor_count
    sm90 = _sm90()
    todo = steps(sm90)
    out = {"device": props.name, "sms": sms, "command": "python3 benchmarks/ladder_ablation.py" + (" --ncu" if args.ncu else ""),
           "dtype": "float16 A and B, fp32 accumulation, float16 C (as cuBLAS writes it)",
           "inputs": "torch.randn (seeded 0) cast to fp16; the exactness check: integers in [-3, 3] at 1000 x 1000 x 504",
           "timing": f"each step call by call alternating with torch.matmul, CUDA events around every call, queued back "
                     f"to back after 3 warm-ups; {args.repeats} repetitions each visiting every step in turn; ratio = "
                     f"median over the repetitions of cuBLAS's median time / the step's, spread its min/quartiles/max",
           "throttling": "not prevented (an H200 slows down under sustained 8192^3 GEMMs): interleaving puts any drift "
                         "on the step and cuBLAS alike; the clocks before and after each size show it",
           "steps": [{"id": sid, "what": what, "config": repr(cfg), "epilogue": epi or "registers (cp.async rung)"}
                     for sid, what, cfg, epi in todo],
           "sizes": {}, "exact": {}, "ncu": {}}
    gen = torch.Generator(device="cuda").manual_seed(0)
    m, n, k = IRREGULAR
    a = torch.randint(-3, 4, (m, k), device="cuda", generator=gen).half()
    b = torch.randint(-3, 4, (n, k), device="cuda", generator=gen).half()
    want = (a.float() @ b.float().t()).half()
    for sid, _, cfg, epi in todo:
        c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
        kern, grid, block, ops = launcher(cfg, epi, a, b, c)
        kern[grid, block](*ops)
        torch.cuda.synchronize()
        out["exact"][sid] = bool(torch.equal(c, want))
        print(f"{sid} exact at {m} x {n} x {k}: {out['exact'][sid]}  ({time.time() - t0:.0f} s)", flush=True)
    for size in args.sizes:
        reps = 10 if size <= 4096 else 5
        a = torch.randn(size, size, device="cuda", generator=gen).half()
        b = torch.randn(size, size, device="cuda", generator=gen).half()
        flop = 2 * size ** 3
        res = {"clocks_before": gpu_clocks(), "steps": {}}
        cs = {sid: torch.empty(size, size, device="cuda", dtype=torch.float16) for sid, *_ in todo}
        launches = {sid: launcher(cfg, epi, a, b, cs[sid]) for sid, _, cfg, epi in todo}
        runs = {sid: [] for sid, *_ in todo}
        for _ in range(args.repeats):
            for sid, *_ in todo:
                kern, grid, block, ops = launches[sid]
                t_cublas, t = _times([lambda a=a, b=b: torch.matmul(a, b.t()),
                                      lambda kern=kern, g=grid, bl=block, o=ops: kern[g, bl](*o)], reps)
                runs[sid].append((t_cublas, t))
        res["clocks_after"] = gpu_clocks()
        ref = torch.matmul(a.float(), b.float().t())
        for sid, what, cfg, epi in todo:
            kern, grid, block, ops = launches[sid]
            ratios = [tc / t for tc, t in runs[sid]]
            attrs = kern.specialize(ops).load_gpu().attributes()
            err = float(((cs[sid].float() - ref).abs().max() / ref.abs().max()).item())
            res["steps"][sid] = {
                "tflops": flop / statistics.median(t for _, t in runs[sid]) / 1e12,
                "tflops_spread": _spread([flop / t / 1e12 for _, t in runs[sid]]),
                "cublas_tflops": flop / statistics.median(tc for tc, _ in runs[sid]) / 1e12,
                "ratio_to_cublas": statistics.median(ratios), "ratio_spread": _spread(ratios), "ratios": ratios,
                "max_rel_error_vs_fp32": err, "registers": attrs["registers"], "local_bytes": attrs["local_bytes"],
                "predicted": predictions(cfg, size, attrs["registers"], sms, epi)}
            r = res["steps"][sid]
            print(f"{size} {sid:5s} {what:58s} {r['tflops']:6.1f} TFLOPS  {r['ratio_to_cublas']:.3f}x cuBLAS "
                  f"[{r['ratio_spread']['min']:.3f}, {r['ratio_spread']['max']:.3f}]  {r['registers']} regs", flush=True)
        out["sizes"][str(size)] = res
        print(f"size {size} done ({time.time() - t0:.0f} s); clocks {res['clocks_before'].get('clocks.sm')} -> "
              f"{res['clocks_after'].get('clocks.sm')} MHz", flush=True)
    if args.ncu:
        size = args.sizes[0]
        ids = ["cublas"] + [s[0] for s in todo]
        out["ncu"] = dict(ncu_profile(ids, size, NCU_METRICS), size=size, metrics_asked=NCU_METRICS)
        print("ncu:", out["ncu"].get("error", f"{len(out['ncu'].get('steps', {}))} launches profiled")[-1000:],
              f"({time.time() - t0:.0f} s)", flush=True)
    out["seconds"] = time.time() - t0
    path = pathlib.Path(args.out) if args.out else ROOT / "benchmarks" / "results" / f"ladder-ablation-{gpu}.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print("wrote", path, f"({out['seconds']:.0f} s)")


if __name__ == "__main__":
    main()
