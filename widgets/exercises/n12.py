"""Exercises of notebook 12: Blackwell, tensor memory and UMMA.

12.1 and 12.2 are design tasks, judged by running the learner's choice through the library's own objects (the TMEM
allocator model and the rung's accumulator; ``wb.make_tmem_copy`` and the registers each thread then receives); a
wrong choice is told only "not it" and the hint, never in which direction it misses.  12.3 and 12.4 are find-the-bug
tasks: the kernels ``read_early`` and ``own_rows`` are exactly what notebook 12 prints, and the reference is the
labelled line whose fix makes the CPU executor run the kernel exactly, where the kernel as written is refused.
Everything here is compiled and emulated: no Blackwell GPU runs it.
"""

import numpy as np

import workbench as wb
from workbench.atoms.tmem import TmemAllocator, TmemCopyAtom
from workbench.kernels.gemm_blackwell import BlackwellGemm

from . import Verdict, exercise

RIGHT = "runs as asked"


def _fits(columns, cfg: BlackwellGemm) -> str:
    """Allocate ``columns`` with the TMEM allocator model and place the rung's accumulators there: RIGHT when every
    element lies inside the allocation and no smaller legal allocation would hold them, else a neutral 'not it'."""
    if type(columns) is not int:
        raise TypeError(f"expected an int number of TMEM columns, but got {type(columns).__name__}")
    alloc = TmemAllocator()
    base = alloc.allocate(columns)           # CuTe's precondition: a power of 2 in 32..512 (refused with its reason)
    acc = cfg.tmem_acc.with_base(base)
    last = max(acc.lane_column(i)[1] for i in range(0, wb.size(acc.layout), 128))
    holds = last < columns
    smaller = columns // 2 >= 32 and last < columns // 2
    return RIGHT if holds and not smaller else "not it"


def _allocation(answer):
    """An int is run through the allocator model; a run that misses is item 1 wrong, never which way.  Anything
    else is refused (no description of the reference passes for it)."""
    if type(answer) is not int:
        return Verdict(f"12.1: expected an int number of TMEM columns, but got {type(answer).__name__}.", False)
    ok = _fits(answer, BlackwellGemm(bn=192, stages=3)) == RIGHT
    return ("TMEM columns", answer if ok else -1)


@exercise("12.1", "BlackwellGemm(bn=192, stages=3) keeps two 128 x 192 fp32 accumulators in TMEM (the MMA warp fills "
                  "one while the epilogue drains the other). How many columns must its one tcgen05.alloc ask for?",
          hint="one fp32 accumulator element a 32-bit cell: a tile row is a lane, a tile column a column; both buffers "
               "side by side; tcgen05.alloc takes a power of two from 32 to 512 (TmemAllocator.allocate says so)",
          accept=_allocation, objects=True)
def _():
    cfg = BlackwellGemm(bn=192, stages=3)
    if _fits(cfg.tmem_columns, cfg) != RIGHT:
        raise AssertionError("12.1: the rung's own allocation does not hold its accumulators")
    return cfg.tmem_columns


def _rows_of_16(atom, cfg: BlackwellGemm) -> str:
    """Make the tiled copy of ``atom`` over the rung's chunk and read which cells each thread's registers hold:
    RIGHT when thread t's registers 0..15 are lane t, columns 0..15 in order, in one copy."""
    from widgets.tmem_view import copy_register_cells

    if not isinstance(atom, TmemCopyAtom):
        raise TypeError(f"expected a copy atom made with wb.copy_atom('SM100_TMEM_...', wb.Float32), but got "
                        f"{type(atom).__name__}")
    tc = wb.make_tmem_copy(atom, cfg.tmem_chunk)      # CuTe's refusals (widths, footprint, warp quarters) as they are
    t, v, idx = copy_register_cells(tc, cfg.tmem_chunk)
    if atom.instruction != "tcgen05_ld" or int(v.max()) + 1 != 16 or tc.size != 128:
        return "not it"
    lane_col = np.array([cfg.tmem_chunk.lane_column(int(i))[:2] for i in idx])
    ok = np.array_equal(lane_col[:, 0], t) and np.array_equal(lane_col[:, 1], v)
    return RIGHT if ok and wb.size(tc.layout_dst_tv_tiled.shape[1]) == 16 else "not it"


def _epilogue_atom(answer):
    """A copy atom is run (its tiled copy over the rung's chunk); anything else is refused, a name included."""
    if not isinstance(answer, TmemCopyAtom):
        return Verdict(f"12.2: expected a copy atom made with wb.copy_atom('SM100_TMEM_...', wb.Float32), but got "
                       f"{type(answer).__name__}.", False)
    ok = _rows_of_16(answer, BlackwellGemm(bn=64, epi_columns=16)) == RIGHT
    return ("copy atom", answer.name if ok else "")


@exercise("12.2", "BlackwellGemm(bn=64, epi_columns=16)'s epilogue reads its 128 x 16 chunk of the accumulator with "
                  "one tcgen05.ld: thread t of the epilogue warpgroup gets row t, registers 0..15 holding columns 0..15 "
                  "in order. Give the copy atom (wb.copy_atom(name, wb.Float32)).",
          hint="SM100_TMEM_LOAD_<lanes>dp<bits>b<repeat>x: which shape gives each thread one lane (a row), and how many "
               "32-bit columns must one instruction move per thread? Try it: wb.make_tmem_copy(atom, cfg.tmem_chunk) "
               "and TmemView(cfg.tmem_chunk, copy=...) show what each thread gets",
          accept=_epilogue_atom, objects=True)
def _():
    cfg = BlackwellGemm(bn=64, epi_columns=16)
    if _rows_of_16(cfg.tmem_load.atom, cfg) != RIGHT:
        raise AssertionError("12.2: the rung's own epilogue atom does not give each thread its row")
    return cfg.tmem_load.atom


# -- 12.3 and 12.4: the kernels with the bugs (notebook 12 prints exactly these sources) -------------------------
UM, UN, UK = 128, 64, 16
ATOM = wb.mma_atom("SM100_MMA_F16BF16_SS", a_type=wb.Float16, b_type=wb.Float16, c_type=wb.Float32, m=UM, n=UN)
TACC = ATOM.make_fragment_C(ATOM.partition_shape_C((UM, UN)))[(None, None), 0, 0]
TLOAD = wb.make_tmem_copy(wb.copy_atom("SM100_TMEM_LOAD_32dp32b16x", wb.Float32), TACC)
SA = wb.tile_to_shape(wb.umma_smem_atom("Layout_K_SW32_Atom", wb.Float16), (UM, UK))
SB = wb.tile_to_shape(wb.umma_smem_atom("Layout_K_SW32_Atom", wb.Float16), (UN, UK))


@wb.kernel
def read_early(a, b, c):
    """c = a @ b.T (128 x 64 x 16) through TMEM: one thread issues the MMA, every thread reads its row of C."""
    t = wb.thread_idx().x
    sA = wb.shared_tensor(wb.Float16, SA)
    sB = wb.shared_tensor(wb.Float16, SB)
    bar = wb.shared_tensor(wb.Uint64, 1)
    holder = wb.shared_tensor(wb.Uint32, 1)
    for i in range(t, UM * UK, 128):
        sA[i % UM, i // UM] = a[i % UM, i // UM]
    for i in range(t, UN * UK, 128):
        sB[i % UN, i // UN] = b[i % UN, i // UN]
    if t < 32:
        wb.tmem_alloc(holder, 64)                                   # (a) warp 0 allocates 64 columns
        wb.tmem_relinquish_alloc_permit()
    if t == 0:
        wb.mbarrier_init(bar, 0, 1)
        wb.mbarrier_init_fence()
    wb.fence_proxy_async()
    wb.tcgen05_fence_before()
    wb.sync_threads()
    wb.tcgen05_fence_after()
    acc = wb.make_tmem_tensor(holder[0], TACC)
    if t == 0:
        wb.gemm(ATOM, acc, sA, sB, acc, accumulate=False)          # (b) one thread issues the UMMA
        wb.tcgen05_commit(bar, 0)                                   # (c) its completion arrives on bar
    wb.mbarrier_wait(bar, 0, 1)                                     # (d) everyone waits for that arrival
    wb.tcgen05_fence_after()
    frag = wb.make_fragment(UN, wb.Float32)
    wb.copy(TLOAD, acc, frag)                                       # (e) tcgen05.ld: thread t gets row t
    wb.tcgen05_wait_ld()
    for j in range(UN):
        c[t, j] = frag[j]
    wb.tcgen05_fence_before()
    wb.sync_threads()
    if t < 32:
        wb.tmem_dealloc(holder[0], 64)


@wb.kernel
def own_rows(a, b, c):
    """The same, with each warp pointing its TMEM tensor at its own 32 rows before it reads them."""
    t = wb.thread_idx().x
    sA = wb.shared_tensor(wb.Float16, SA)
    sB = wb.shared_tensor(wb.Float16, SB)
    bar = wb.shared_tensor(wb.Uint64, 1)
    holder = wb.shared_tensor(wb.Uint32, 1)
    for i in range(t, UM * UK, 128):
        sA[i % UM, i // UM] = a[i % UM, i // UM]
    for i in range(t, UN * UK, 128):
        sB[i % UN, i // UN] = b[i % UN, i // UN]
    if t < 32:
        wb.tmem_alloc(holder, 64)                                   # (a) warp 0 allocates 64 columns
        wb.tmem_relinquish_alloc_permit()
    if t == 0:
        wb.mbarrier_init(bar, 0, 1)
        wb.mbarrier_init_fence()
    wb.fence_proxy_async()
    wb.tcgen05_fence_before()
    wb.sync_threads()
    wb.tcgen05_fence_after()
    acc = wb.make_tmem_tensor(holder[0], TACC)
    if t == 0:
        wb.gemm(ATOM, acc, sA, sB, acc, accumulate=False)          # (b) one thread issues the UMMA
        wb.tcgen05_commit(bar, 0)                                   # (c) its completion arrives on bar
    wb.mbarrier_wait(bar, 0, 0)
    wb.tcgen05_fence_after()
    mine = wb.make_tmem_tensor(holder[0] + ((32 * (t // 32)) << 16), TACC)   # (d) this warp's 32 rows
    frag = wb.make_fragment(UN, wb.Float32)
    wb.copy(TLOAD, mine, frag)                                      # (e) tcgen05.ld: thread t gets row t
    wb.tcgen05_wait_ld()
    for j in range(UN):
        c[t, j] = frag[j]
    wb.tcgen05_fence_before()
    wb.sync_threads()
    if t < 32:
        wb.tmem_dealloc(holder[0], 64)


def operands(seed=0):
    """a (128 x 16), b (64 x 16) fp16 small integers, and C = a @ b.T exactly."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-3, 4, (UM, UK)).astype(np.float16)
    b = rng.integers(-3, 4, (UN, UK)).astype(np.float16)
    return a, b, a.astype(np.float64) @ b.astype(np.float64).T


def _runs(kernel) -> bool:
    """Whether the kernel runs on the CPU executor and computes C exactly (a refusal is a failed run)."""
    a, b, want = operands()
    c = np.full((UM, UN), np.nan, np.float32)
    try:
        kernel[1, 128](a, b, c)
    except wb.KernelRuntimeError:
        return False
    return bool(np.array_equal(c, want))


def _label(answer):
    """'(d)', ' D ' and 'd' are one label."""
    return answer.strip().strip("()").strip() if type(answer) is str else answer


@exercise("12.3", "read_early is refused by the CPU executor (on a B200 it would read garbage). Which labelled line is "
                  "wrong? Answer its letter.",
          hint="which phase of bar does the commit complete, and what does a wait with a parity return on? Run it and "
               "read the executor's message",
          accept=_label)
def _():
    @wb.kernel
    def fixed(a, b, c):
        t = wb.thread_idx().x
        sA = wb.shared_tensor(wb.Float16, SA)
        sB = wb.shared_tensor(wb.Float16, SB)
        bar = wb.shared_tensor(wb.Uint64, 1)
        holder = wb.shared_tensor(wb.Uint32, 1)
        for i in range(t, UM * UK, 128):
            sA[i % UM, i // UM] = a[i % UM, i // UM]
        for i in range(t, UN * UK, 128):
            sB[i % UN, i // UN] = b[i % UN, i // UN]
        if t < 32:
            wb.tmem_alloc(holder, 64)
            wb.tmem_relinquish_alloc_permit()
        if t == 0:
            wb.mbarrier_init(bar, 0, 1)
            wb.mbarrier_init_fence()
        wb.fence_proxy_async()
        wb.tcgen05_fence_before()
        wb.sync_threads()
        wb.tcgen05_fence_after()
        acc = wb.make_tmem_tensor(holder[0], TACC)
        if t == 0:
            wb.gemm(ATOM, acc, sA, sB, acc, accumulate=False)
            wb.tcgen05_commit(bar, 0)
        wb.mbarrier_wait(bar, 0, 0)                                 # phase 0: the one the commit completes
        wb.tcgen05_fence_after()
        frag = wb.make_fragment(UN, wb.Float32)
        wb.copy(TLOAD, acc, frag)
        wb.tcgen05_wait_ld()
        for j in range(UN):
            c[t, j] = frag[j]
        wb.tcgen05_fence_before()
        wb.sync_threads()
        if t < 32:
            wb.tmem_dealloc(holder[0], 64)

    results = [_runs(read_early), _runs(fixed)]
    if results != [False, True]:
        raise AssertionError(f"12.3: the kernel as written should be refused and the fixed one exact, got {results}")
    return "d"


@exercise("12.4", "own_rows is refused by the CPU executor (tcgen05.ld outside the warp's lane quarter). Which labelled "
                  "line is wrong? Answer its letter.",
          hint="a TMEM tiled copy already sends warp w to lanes 32*(w%4)..: what does an address of lane 32*w add on "
               "top of that? TmemView(..., copy=TLOAD) shows where each thread reads",
          accept=_label)
def _():
    @wb.kernel
    def fixed(a, b, c):
        t = wb.thread_idx().x
        sA = wb.shared_tensor(wb.Float16, SA)
        sB = wb.shared_tensor(wb.Float16, SB)
        bar = wb.shared_tensor(wb.Uint64, 1)
        holder = wb.shared_tensor(wb.Uint32, 1)
        for i in range(t, UM * UK, 128):
            sA[i % UM, i // UM] = a[i % UM, i // UM]
        for i in range(t, UN * UK, 128):
            sB[i % UN, i // UN] = b[i % UN, i // UN]
        if t < 32:
            wb.tmem_alloc(holder, 64)
            wb.tmem_relinquish_alloc_permit()
        if t == 0:
            wb.mbarrier_init(bar, 0, 1)
            wb.mbarrier_init_fence()
        wb.fence_proxy_async()
        wb.tcgen05_fence_before()
        wb.sync_threads()
        wb.tcgen05_fence_after()
        acc = wb.make_tmem_tensor(holder[0], TACC)
        if t == 0:
            wb.gemm(ATOM, acc, sA, sB, acc, accumulate=False)
            wb.tcgen05_commit(bar, 0)
        wb.mbarrier_wait(bar, 0, 0)
        wb.tcgen05_fence_after()
        mine = wb.make_tmem_tensor(holder[0], TACC)                 # the copy places each warp in its quarter
        frag = wb.make_fragment(UN, wb.Float32)
        wb.copy(TLOAD, mine, frag)
        wb.tcgen05_wait_ld()
        for j in range(UN):
            c[t, j] = frag[j]
        wb.tcgen05_fence_before()
        wb.sync_threads()
        if t < 32:
            wb.tmem_dealloc(holder[0], 64)

    results = [_runs(own_rows), _runs(fixed)]
    if results != [False, True]:
        raise AssertionError(f"12.4: the kernel as written should be refused and the fixed one exact, got {results}")
    return "d"
