"""Tensor cores in kernels: every SM75/SM80/SM89 MMA atom and every ldmatrix atom run as the views draw them,
the GEMM ladder is exact at ragged sizes, and what an atom cannot take is refused while tracing.

The probes run on the CPU executor here (which emulates an mma through the atom's TV layouts) and, marked
``gpu``, on the GPU, where the hardware's registers are the proof that the drawing is the hardware:
``bash benchmarks/gpu_validate.sh`` runs them there.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench as wb
from workbench.atoms.mma import mma_atom_names
from workbench.dsl.ops.mma_sync import mma_ptx
from workbench.dsl.runtime.cupy import compile_ptx, gpu_available
from workbench.kernels import gemm_ladder as G

SYNC_ATOMS = [n for n in mma_atom_names(False) if n.startswith(("SM75", "SM80", "SM89"))]
LDSM_ATOMS = [f"SM75_U32x{x}_LDSM_N" for x in (1, 2, 4)] + [f"SM75_U16x{2 * x}_LDSM_T" for x in (1, 2, 4)]

_KERNELS: dict = {}


def _probe(name):
    """A kernel running one atom once: each thread's A, B, C registers are its partitions of the global A, B, C
    (the atom's TV layouts), and its D registers are written out in register order, D[thread, value]."""
    if name not in _KERNELS:
        mma = wb.make_tiled_mma(wb.mma_atom(name))
        M, N, K = mma.atom.shape_mnk

        @wb.kernel
        def probe(gA, gB, gC, D):
            t = wb.thread_idx().x
            thr = mma.get_slice(t)
            A = wb.local_tile(gA, (M, K), (0, 0))      # static tiles: the partitions are register-sized
            B = wb.local_tile(gB, (N, K), (0, 0))
            C = wb.local_tile(gC, (M, N), (0, 0))
            rA = mma.make_fragment_A(thr.partition_A(A))
            rB = mma.make_fragment_B(thr.partition_B(B))
            rC = mma.make_fragment_C(thr.partition_C(C))
            wb.copy(thr.partition_A(A), rA)
            wb.copy(thr.partition_B(B), rB)
            wb.copy(thr.partition_C(C), rC)
            rD = mma.make_fragment_C(thr.partition_C(C))
            wb.gemm(mma, rD, rA, rB, rC)
            for v in range(wb.size(rD)):
                D[t, v] = rD[v]

        _KERNELS[name] = probe
    return _KERNELS[name]


_FP8_BIAS = {"E4M3": 7, "E5M2": 15}


def _fp8(code, fmt):
    """The value of an fp8 bit pattern (e4m3fn or e5m2)."""
    mant = 3 if fmt == "E4M3" else 2
    s, e, m = code >> 7, (code >> mant) & ((1 << (7 - mant)) - 1), code & ((1 << mant) - 1)
    v = (m / (1 << mant)) * 2.0 ** (1 - _FP8_BIAS[fmt]) if e == 0 else (1 + m / (1 << mant)) * 2.0 ** (e - _FP8_BIAS[fmt])
    return -v if s else v


def _operands(atom, rng, which):
    """Host A (M, K), B (N, K), C (M, N) and their values (float64).  which='A': A one-hot (row m selects k = m % K)
    and B coded by (n, k); 'B': the roles swapped; 'random': random representable values (fp8)."""
    M, N, K = atom.shape_mnk
    d, a, b, c = atom.type_codes

    def coded(rows, cols, code):
        i = np.arange(rows)[:, None] * cols + np.arange(cols)[None, :]
        if code in ("S8",):
            return (i % 255) - 127
        if code == "U8":
            return i % 256
        return i % 2048 + 1.0 if code != "BF16" else i % 256 + 1.0    # exact in fp16/tf32 (11 bits), bf16 (8)

    def onehot(rows, cols):
        x = np.zeros((rows, cols))
        x[np.arange(rows), np.arange(rows) % cols] = 1
        return x

    if which == "random":       # fp8 bit patterns of small positive values (no overflow in an f16 accumulator)
        va = rng.integers(0, 61, (M, K))
        vb = rng.integers(0, 61, (N, K))
    elif which == "A":
        va, vb = onehot(M, K), coded(N, K, b)
    else:
        va, vb = coded(M, K, a), onehot(N, K)
    vc = (np.arange(M)[:, None] * 3 + np.arange(N)[None, :]) % 17 if which != "random" else np.zeros((M, N))
    return va, vb, vc


def _host(values, code):
    import torch
    if code == "BF16":
        return torch.tensor(values, dtype=torch.float32).to(torch.bfloat16)
    if code in ("E4M3", "E5M2"):
        codes = np.asarray(values, np.uint8)
        t = wb.from_dlpack(codes)
        return wb.make_tensor(wb.make_ptr(wb.Float8E4M3FN if code == "E4M3" else wb.Float8E5M2, t.data_ptr),
                              t.layout), codes
    dt = {"F16": np.float16, "F32": np.float32, "TF32": np.float32, "F64": np.float64, "S8": np.int8, "U8": np.uint8,
          "S32": np.int32}[code]
    return np.ascontiguousarray(np.asarray(values).astype(dt))


def _run_probe(name, which, device):
    import torch
    atom = wb.mma_atom(name)
    M, N, K = atom.shape_mnk
    d, a, b, c = atom.type_codes
    rng = np.random.default_rng(0)
    va, vb, vc = _operands(atom, rng, which)
    ha, hb = _host(va, a), _host(vb, b)
    keep = []
    if a in ("E4M3", "E5M2"):
        (ha, ca), (hb, cb) = ha, hb
        keep = [ca, cb]
        va = np.vectorize(lambda x: _fp8(int(x), a))(ca)
        vb = np.vectorize(lambda x: _fp8(int(x), b))(cb)
    hc = _host(vc, c)
    vd = atom.tv_layout_C[1].size
    hd = np.full((32, vd), -7, {"F32": np.float32, "F16": np.float16, "F64": np.float64, "S32": np.int32}[d])
    args = [ha, hb, hc, hd]
    if device == "cuda":
        if keep:
            pytest.skip("fp8 operands come from wb.make_ptr over host memory in this probe (the CPU executor only)")
        args = [x.cuda() if isinstance(x, torch.Tensor) else torch.from_numpy(x).cuda() for x in args]
    with wb.host_buffers(*keep) if keep else _null():
        _probe(name)[(1, 1, 1), (32, 1, 1)](*args)
    out = args[3].cpu().numpy() if hasattr(args[3], "cpu") else np.asarray(args[3])
    want = np.asarray(va, np.float64) @ np.asarray(vb, np.float64).T + vc
    if d == "S32" and name.endswith("_SATURATE"):
        want = np.clip(want, -(2**31), 2**31 - 1)
    # thread t's value v is the element the atom's C layout names: (t, v) -> column-major index in the (M, N) tile
    got = np.empty((M, N))
    for t in range(32):
        for v in range(vd):
            i = atom.tv_layout_C((t, v))
            got[i % M, i // M] = out[t, v]
    np.testing.assert_array_equal(got, want.astype(out.dtype).astype(np.float64), err_msg=f"{name} ({which})")


class _null:
    def __enter__(self):
        return None

    def __exit__(self, *a):
        return False


@pytest.mark.parametrize("name", SYNC_ATOMS)
def test_every_sync_atom_runs_as_drawn_on_the_cpu_executor(name):
    for which in ("A", "B") if "E4M3" not in name and "E5M2" not in name else ("random",):
        _run_probe(name, which, "cpu")


@pytest.mark.gpu
@pytest.mark.parametrize("name", [n for n in SYNC_ATOMS if "E4M3" not in n and "E5M2" not in n])
def test_every_sync_atom_runs_as_drawn_on_the_gpu(name):
    if not gpu_available():
        pytest.skip("needs a CUDA GPU")
    for which in ("A", "B"):
        _run_probe(name, which, "cuda")


def test_every_sync_atom_compiles_to_its_mma_instruction():
    """NVRTC (no GPU needed) compiles each probe to PTX holding the atom's exact mma.sync."""
    for name in SYNC_ATOMS:
        atom = wb.mma_atom(name)
        M, N, K = atom.shape_mnk
        d, a, b, c = atom.type_codes
        if a in ("E4M3", "E5M2"):
            continue
        rng = np.random.default_rng(0)
        va, vb, vc = _operands(atom, rng, "A")
        args = [_host(va, a), _host(vb, b), _host(vc, c), np.zeros((32, atom.tv_layout_C[1].size), np.float32 if d == "F32" else
                {"F16": np.float16, "F64": np.float64, "S32": np.int32}[d])]
        src = wb.show_code(_probe(name), *args)
        ptx = compile_ptx(src, "sm_90")
        assert mma_ptx(atom) in ptx, name


def _ldsm_probe(name):
    key = ("ldsm", name)
    if key not in _KERNELS:
        atom = wb.copy_atom(name, wb.Float16)
        n = atom.layout_src_tv.cosize

        @wb.kernel
        def probe(src, out):
            t = wb.thread_idx().x
            s = wb.shared_tensor(wb.Float16, wb.make_layout(n))
            for i in range(t, n, 32):
                s[i] = src[i]
            wb.sync_threads()
            rows = wb.composition(s, atom.layout_src_tv)        # (thread, value) -> the atom's source element
            frag = wb.make_fragment(wb.make_layout(atom.num_val_dst), wb.Float16)
            wb.copy(atom, rows[t, None], frag)
            for v in range(atom.num_val_dst):
                out[t, v] = frag[v]

        _KERNELS[key] = (probe, atom, n)
    return _KERNELS[key]


def _run_ldsm(name, device):
    probe, atom, n = _ldsm_probe(name)
    src = (np.arange(n) % 2048).astype(np.float16)        # each element's value is its index: exact in fp16
    out = np.full((32, atom.num_val_dst), -1, np.float16)
    if device == "cuda":
        import torch
        s, o = torch.from_numpy(src).cuda(), torch.from_numpy(out).cuda()
        probe[(1, 1, 1), (32, 1, 1)](s, o)
        out = o.cpu().numpy()
    else:
        probe[(1, 1, 1), (32, 1, 1)](src, out)
    want = np.array([[atom.layout_dst_tv((t, v)) for v in range(atom.num_val_dst)] for t in range(32)])
    np.testing.assert_array_equal(out.astype(np.int64), want, err_msg=name)


@pytest.mark.parametrize("name", LDSM_ATOMS)
def test_every_ldmatrix_atom_reads_what_its_layouts_say_on_the_cpu_executor(name):
    _run_ldsm(name, "cpu")


@pytest.mark.gpu
@pytest.mark.parametrize("name", LDSM_ATOMS)
def test_every_ldmatrix_atom_reads_what_its_layouts_say_on_the_gpu(name):
    if not gpu_available():
        pytest.skip("needs a CUDA GPU")
    _run_ldsm(name, "cuda")


# -- the ladder ----------------------------------------------------------------------------------------------------
def _ints(rng, *shape):
    return rng.integers(-3, 4, shape).astype(np.float16)


@pytest.mark.parametrize("rung", G.RUNGS)
def test_each_rung_is_exact_at_a_ragged_size_on_the_cpu_executor(rung):
    r = next(x for x in G.ladder() if x.name == rung)
    rng = np.random.default_rng(1)
    m, n, k = (40, 72, 40)
    a, b = _ints(rng, m, k), _ints(rng, n, k)
    c = np.full((m, n), np.nan, np.float32)
    if rung == "simt":
        r.launch(a.astype(np.float32), np.ascontiguousarray(b.astype(np.float32).T), c)
    else:
        r.launch(wb.from_dlpack(a, assumed_align=16), wb.from_dlpack(b, assumed_align=16), c)
    np.testing.assert_array_equal(c, G.reference(a, b))


@pytest.mark.gpu
@pytest.mark.parametrize("rung", G.RUNGS)
def test_each_rung_is_exact_at_a_ragged_size_on_the_gpu(rung):
    if not gpu_available():
        pytest.skip("needs a CUDA GPU")
    import torch
    r = next(x for x in G.ladder() if x.name == rung)
    g = torch.Generator().manual_seed(2)
    m, n, k = 1000, 999, 504
    a = torch.randint(-3, 4, (m, k), generator=g).half().cuda()
    b = torch.randint(-3, 4, (n, k), generator=g).half().cuda()
    c = torch.full((m, n), float("nan"), device="cuda")
    if rung == "simt":
        r.launch(a.float(), b.float().t(), c)
    else:
        r.launch(wb.from_dlpack(a, assumed_align=16), wb.from_dlpack(b, assumed_align=16), c)
    assert torch.equal(c, a.float() @ b.float().t())


def test_the_pipelined_rung_compiles_to_tensor_core_instructions():
    r = next(x for x in G.ladder() if x.name == "pipelined")
    a = wb.from_dlpack(np.zeros((256, 64), np.float16), assumed_align=16)
    b = wb.from_dlpack(np.zeros((256, 64), np.float16), assumed_align=16)
    src = wb.show_code(r.kernel, a, b, np.zeros((256, 256), np.float32))
    ptx = compile_ptx(src, "sm_80")
    for instr in ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
                  "cp.async.cg.shared.global", "cp.async.wait_group", "cp.async.commit_group"):
        assert instr in ptx, instr
    assert r.config.smem_bytes > 48 * 1024 and "extern __shared__" in src     # dynamic shared memory


def test_the_swizzle_removes_the_ldmatrix_bank_conflicts():
    plain, swz = (next(x for x in G.ladder() if x.name == n).config for n in ("smem_ldmatrix", "swizzled"))
    for w in "AB":
        before, after = swz.conflicts[w]
        assert plain.conflicts[w][0] == plain.conflicts[w][1] == before     # rung 3 uses the plain tile
        assert after * 4 == before                                           # 4-way conflicts gone


# -- bad input: refused while tracing, naming the atom and what it needs -----------------------------------------
MMA = wb.make_tiled_mma(wb.mma_atom("SM80_16x8x16_F32F16F16F32_TN"))


def _trace(kernel, *args):
    return kernel.specialize(args)


def test_a_fragment_of_another_element_type_is_refused():
    @wb.kernel
    def k(gA, gB, gC):
        A, B, C = wb.local_tile(gA, (16, 16), (0, 0)), wb.local_tile(gB, (8, 16), (0, 0)), wb.local_tile(gC, (16, 8), (0, 0))
        thr = MMA.get_slice(wb.thread_idx().x)
        rA = wb.make_fragment(wb.make_layout(thr.partition_A(A).shape), wb.Float32)
        rB = MMA.make_fragment_B(thr.partition_B(B))
        acc = MMA.make_fragment_C(thr.partition_C(C))
        wb.gemm(MMA, acc, rA, rB, acc)

    with pytest.raises(TypeError, match=r"SM80_16x8x16_F32F16F16F32_TN.*A operand is Float16.*holds Float32"):
        _trace(k, np.zeros((16, 16), np.float16), np.zeros((8, 16), np.float16), np.zeros((16, 8), np.float32))


def test_a_fragment_shape_that_does_not_match_the_partition_is_refused():
    @wb.kernel
    def k(gA, gB, gC):
        B, C = wb.local_tile(gB, (8, 16), (0, 0)), wb.local_tile(gC, (16, 8), (0, 0))
        thr = MMA.get_slice(wb.thread_idx().x)
        rA = wb.make_fragment(wb.make_layout((4, 1, 1)), wb.Float16)
        rB = MMA.make_fragment_B(thr.partition_B(B))
        acc = MMA.make_fragment_C(thr.partition_C(C))
        wb.gemm(MMA, acc, rA, rB, acc)

    with pytest.raises(ValueError, match=r"expected a of shape \(V, \.\.\.\) = \(8, 1, 1\).*got \(4, 1, 1\)"):
        _trace(k, np.zeros((16, 16), np.float16), np.zeros((8, 16), np.float16), np.zeros((16, 8), np.float32))


def test_a_swizzle_that_breaks_the_copy_width_is_refused():
    ldsm = wb.make_tiled_copy_A(wb.copy_atom("SM75_U32x4_LDSM_N", wb.Float16), MMA)
    bad = wb.composition(wb.Swizzle(3, 2, 3), wb.make_layout((16, 16), stride=(16, 1)))   # keeps 4, splits 8-runs

    @wb.kernel
    def k(C):
        s = wb.shared_tensor(wb.Float16, bad)
        t = wb.thread_idx().x
        rA = MMA.get_slice(t).partition_fragment_A(s)
        tc = ldsm.get_slice(t)
        wb.copy(ldsm, tc.partition_S(s), tc.retile_D(rA))

    with pytest.raises(ValueError, match=r"SM75_U32x4_LDSM_N.*8 consecutive Float16.*not provably consecutive"):
        _trace(k, np.zeros(4, np.float32))


def test_a_misaligned_cp_async_source_is_refused():
    cp = wb.make_tiled_copy(wb.copy_atom("SM80_CP_ASYNC_CACHEGLOBAL", wb.Float16), wb.make_layout((32, 1)),
                            wb.make_layout((1, 8)))

    @wb.kernel
    def k(A):
        s = wb.shared_tensor(wb.Float16, wb.make_layout((32, 8), stride=(8, 1)))
        t = cp.get_slice(wb.thread_idx().x)
        wb.copy(cp, t.partition_S(A), t.partition_D(s))

    a = np.zeros((32, 8), np.float16)
    with pytest.raises(ValueError, match=r"cp.async of 16 bytes needs a 16-byte aligned source"):
        _trace(k, wb.from_dlpack(a, assumed_align=2))
    _trace(k, wb.from_dlpack(a, assumed_align=16))     # the same with 16-byte alignment promised: accepted


def test_warpgroup_atoms_are_refused_in_kernels():
    g = wb.make_tiled_mma(wb.mma_atom("SM90_64x8x16_F32F16F16_SS"))

    @wb.kernel
    def k(C):
        thr = g.get_slice(wb.thread_idx().x)
        acc = g.make_fragment_C(thr.partition_C(C))
        wb.gemm(g, acc, acc, acc, acc)

    with pytest.raises((ValueError, TypeError), match="SM90_64x8x16_F32F16F16_SS"):
        _trace(k, np.zeros((64, 8), np.float32))


def test_shared_memory_over_the_limit_is_refused_at_launch():
    @wb.kernel
    def k(C):
        s = wb.shared_tensor(wb.Float32, wb.make_layout(60 * 1024))
        s[0] = 1.0
        wb.sync_threads()
        C[0] = s[0]

    with pytest.raises(ValueError, match="227 KiB"):
        k[(1, 1, 1), (32, 1, 1)](np.zeros(1, np.float32))


def test_fragments_load_convert_and_store():
    @wb.kernel
    def k(A, B):
        f = wb.make_fragment(wb.make_layout(8), wb.Float32)
        h = wb.make_fragment(wb.make_layout(8), wb.Float16)
        for i in range(8):
            f[i] = A[i]
        h.store(f.load().to(wb.Float16))
        for i in range(8):
            B[i] = h[i]

    a = np.array([1.0, 1 / 3, 65504.0, 1e-8, -2.5, 0.1, 1000.3, 7.0], np.float32)
    b = np.zeros(8, np.float32)
    k[(1, 1, 1), (1, 1, 1)](a, b)
    np.testing.assert_array_equal(b, a.astype(np.float16).astype(np.float32))


def test_a_block_of_other_threads_than_the_tiled_mma_is_refused_at_launch():
    k = _probe("SM80_16x8x16_F32F16F16F32_TN")
    args = [np.zeros((16, 16), np.float16), np.zeros((8, 16), np.float16), np.zeros((16, 8), np.float32),
            np.zeros((32, 4), np.float32)]
    with pytest.raises(ValueError, match=r"blocks of 32 threads .* partitions by TiledMMA\(SM80_16x8x16.*block \(64, 1, 1\)"):
        k[(1, 1, 1), (64, 1, 1)](*args)
    k[(1, 1, 1), (32, 1, 1)](*args)


def test_a_rung_takes_tensors_straight_in_when_they_are_16_byte_aligned():
    """No assumed_align=16 to write: aligned arrays passed straight in are specialized as such (args.normalize); a
    misaligned one gets its own specialization, where cp.async is refused naming the alignment it needs."""
    r = next(x for x in G.ladder() if x.name == "pipelined")
    rng = np.random.default_rng(3)
    m, n, k = 40, 72, 40
    a, b = _ints(rng, m, k), _ints(rng, n, k)
    c = np.full((m, n), np.nan, np.float32)
    r.launch(a, b, c)
    np.testing.assert_array_equal(c, G.reference(a, b))
    shifted = np.zeros(m * k + 1, np.float16)[1:].reshape(m, k)
    shifted[:] = a
    with pytest.raises(ValueError, match="cp.async of 16 bytes needs a 16-byte aligned source"):
        r.launch(shifted, b, c)


# -- every ladder rung checks its operands and its configuration before it launches -------------------------------
def _rung_mats(rung, m, n, k, cdt=np.float32):
    ab = np.float32 if rung.name == "simt" else np.float16
    rng = np.random.default_rng(m + 3 * n + 5 * k)
    a = rng.integers(-3, 4, (m, k)).astype(ab)
    b = rng.integers(-3, 4, (n, k)).astype(ab)
    return a, (np.ascontiguousarray(b.T) if rung.name == "simt" else b), np.full((m, n), np.nan, cdt), b


@pytest.mark.parametrize("rung", G.ladder(), ids=lambda r: r.name)
@pytest.mark.parametrize("m,n,k", [(0, 8, 8), (8, 0, 8), (8, 8, 0), (0, 0, 0)])
def test_ladder_rungs_give_torchs_answer_for_empty_shapes(rung, m, n, k):
    a, bop, c, b = _rung_mats(rung, m, n, k)
    rung.launch(a, bop, c)
    np.testing.assert_array_equal(c, G.reference(a, b).astype(np.float32))


@pytest.mark.parametrize("rung", G.ladder(), ids=lambda r: r.name)
def test_ladder_rungs_refuse_mismatched_operands(rung):
    a, bop, c, _ = _rung_mats(rung, 16, 16, 16)
    with pytest.raises(ValueError, match="their K must agree"):
        rung.launch(a[:, :8], bop, c)
    with pytest.raises(ValueError, match=r"expected C of shape \(M, N\) = \(16, 16\)"):
        rung.launch(a, bop, np.zeros((32, 16), np.float32))
    with pytest.raises(TypeError, match="expected A and B of one element type"):
        rung.launch(a.astype(np.float64), bop.astype(np.float64), c)
    with pytest.raises(TypeError, match="expected C of element type"):
        rung.launch(a, bop, np.zeros(c.shape, np.int32))


@settings(max_examples=150, deadline=None)
@given(st.fixed_dictionaries(dict(bm=st.sampled_from([0, 16, 64, 100, 128, 256]), bn=st.sampled_from([0, 32, 64, 128, 256]),
                                  bk=st.sampled_from([0, 8, 16, 32, 64, 128]), stages=st.integers(-1, 6),
                                  group=st.integers(-2, 4),
                                  warps=st.tuples(st.integers(0, 8), st.integers(0, 8)))))
def test_a_shared_memory_rung_configuration_is_refused_clearly_or_built(conf):
    """Accepted: the kernel's tiles exist (whole 16-row warp tiles, whole 16-byte copy chunks, k-blocks of 16, shared
    memory within 227 KiB); refused: ValueError/TypeError naming what was expected."""
    try:
        cfg = G.SmemGemm(**conf)
    except (ValueError, TypeError) as e:
        assert "expected" in str(e), e
        return
    assert cfg.bk % 16 == 0 and cfg.stages >= 1 and cfg.group >= 1 and cfg.smem_bytes <= 227 * 1024
