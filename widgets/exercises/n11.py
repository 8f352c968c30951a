"""Exercises of notebook 11: Hopper, TMA boxes, GMMA descriptors and the mbarrier ring.

Every reference is computed from the objects the Hopper rung's kernel uses (``HopperGemm``: its tiled GMMA, its
staged shared layouts, its TMA boxes), or, for the ring's parities, from a model that counts the phases each
mbarrier completes (a test checks the model against the kernel's own formulas and the CPU executor).  11.4 is a
design task judged by the configuration the learner builds (``workbench.kernels.arithmetic`` computes the budget),
11.5 a find-the-bug task judged by running the learner's fixed kernel on the CPU executor; ``ring_pipeline`` is its
kernel exactly as notebook 11 shows it (a test keeps the two equal).  A wrong answer is told that it is wrong, never
which way.
"""

import numpy as np

import workbench as wb
from workbench.atoms.gmma_desc import make_gmma_desc
from workbench.dsl.runtime.launch import Kernel
from workbench.kernels.arithmetic import gemm_arithmetic
from workbench.kernels.gemm_hopper import HopperGemm

from . import Verdict, exercise


def desc_of(cfg: HopperGemm, which: str, mma_thread: int, kb: int, stage: int):
    """The GMMA descriptor ``wb.gemm`` builds for k-block ``kb`` of ``stage`` of operand ``which`` ('A' or 'B'), as
    seen by thread ``mma_thread`` of the tiled MMA (its warpgroup picks the 64-row slab of A)."""
    thr = cfg.mma.get_slice(mma_thread)
    part = getattr(thr, "partition_" + which)(cfg.smem[which])          # (V, M, K, stage)
    mn = 64 if which == "A" else cfg.bn
    return make_gmma_desc(part(None, 0, kb, stage), cfg.dtype.bits, "K", mn, cfg.atom.shape_mnk[2])


@exercise("11.1", "For HopperGemm(bm=128, bn=64, bk=32, stages=2) (K-major SW64 tiles), what are the start address and "
                  "the SBO, in bytes, of the descriptor of A that consumer warpgroup 1 (the tiled MMA's threads "
                  "128-255) uses for k-block 1 of stage 1? Answer (start, SBO).",
          hint="the start is where element (0, 0) of that 64 x 16 slice lies in the staged tile (m, k, stage), in "
               "bytes: whole stages, then warpgroup 1's 64 rows, then one k-block of 16 halves; SBO is the distance "
               "from one 8-row group of the atom to the next (8 rows of 64 bytes)")
def _():
    d = desc_of(HopperGemm(bm=128, bn=64, bk=32, stages=2), "A", 128, 1, 1)
    return (d.start, d.sbo)


@exercise("11.2", "How many bytes must the producer announce with mbarrier_arrive_and_expect_tx for one stage of the "
                  "H200 rung, HopperGemm() (128 x 256 x 64, fp16)?",
          hint="the stage's two TMA boxes (tma.nbytes each: A's bm x bk and B's bn x bk), counted whole even where a "
               "box reaches past the tensor")
def _():
    cfg = HopperGemm()
    nbytes = cfg.dtype.bits // 8
    a = np.zeros((cfg.bm, cfg.bk), np.float16 if nbytes == 2 else np.float32)
    b = np.zeros((cfg.bn, cfg.bk), a.dtype)
    ta, tb = cfg.tma(a, b)
    return ta.nbytes + tb.nbytes


def ring_waits(stages: int, it: int) -> tuple:
    """(stage, parity the producer waits for on empty[stage] (None: no wait), parity the consumers wait for on
    full[stage]) at the ring's iteration ``it``, by counting the phases each mbarrier completes.

    A wait with parity p returns once the mbarrier's phase of that parity has completed: waiting for the phase
    numbered n (0, 1, 2, ... since init) is a wait with parity n % 2.  full[s] completes a phase per fill (the
    producer's arrival plus the bytes); empty[s] completes one per release (every consumer warpgroup's arrival)."""
    fills = [0] * stages               # fills of each stage so far: full[s]'s next phase number
    releases = [0] * stages            # releases so far: empty[s]'s completed phases
    for i in range(it + 1):
        s = i % stages
        u = fills[s]                   # this is the stage's fill number u
        producer = None
        if u > 0:                      # refilling: wait for the release of fill u - 1, empty[s]'s phase u - 1
            assert releases[s] == u    # (the model runs the consumers ahead: every earlier fill is released)
            producer = (u - 1) % 2
        consumer = u % 2               # the bytes of fill u complete full[s]'s phase u
        fills[s] += 1
        releases[s] += 1               # the consumers release it after use
    return (s, producer, consumer)


@exercise("11.3", "In a ring of 4 stages, the producer's iteration it = 13 (counted from 0 across k-tiles): which "
                  "stage does it fill, with which parity does it wait on empty[stage], and with which parity do the "
                  "consumers wait on full[stage] for that k-tile? Answer (stage, producer parity, consumer parity).",
          hint="a stage is filled every 4 iterations: count which fill of its stage this is (u); the consumers wait "
               "for full's phase u, the producer for the release of fill u - 1 (empty's phase u - 1); a wait names "
               "a phase by its parity, phase number % 2")
def _():
    return ring_waits(4, 13)


def _hopper_design(answer):
    if type(answer) is not HopperGemm:
        return Verdict(f"11.4: expected a configuration built with HopperGemm(...), but got {type(answer).__name__}.",
                       False)
    return ("HopperGemm", answer.bm, answer.bn, answer.bk, answer.consumers, answer.pingpong, answer.stages)


@exercise("11.4", "Design: build the HopperGemm of 128 x 128 tiles (bn=128, fp16, bk=64, two consumers, the TMA "
                  "epilogue) with the most stages that fit in the 227 KiB a block may use.",
          hint="a stage is A's and B's boxes plus its two 8-byte mbarriers; the TMA epilogue stages C in two swizzled "
               "buffers of bm rows x 128 bytes beside the ring; gemm_arithmetic(cfg, M, N, K) prints the budget",
          accept=_hopper_design, objects=True)
def _():
    g = gemm_arithmetic(HopperGemm(bm=128, bn=128, bk=64, stages=2), 4096, 4096, 4096)
    return HopperGemm(bm=128, bn=128, bk=64, stages=g.max_stages)


# -- 11.5: the pipeline with the bug (notebook 11 shows exactly this source) -----------------------------------------
S = 2
SW128 = wb.gmma_smem_atom("Layout_K_SW128_Atom", wb.Float16)
BOX = wb.tile_to_shape(SW128, (64, 64))            # one 64 x 64 fp16 tile: what one TMA load writes
RING = wb.tile_to_shape(SW128, (64, 64, S))        # S of them


@wb.kernel
def ring_pipeline(tma, out, ntiles):
    """out[r]: the sum of row r of every 64 x 64 tile of x, streamed by TMA through an S-stage mbarrier ring: thread 0
    produces, the 64 threads of warps 1 and 2 consume (a row each)."""
    tid = wb.thread_idx().x
    ring = wb.shared_tensor(wb.Float16, RING)
    full = wb.shared_tensor(wb.Uint64, S)
    empty = wb.shared_tensor(wb.Uint64, S)
    if tid == 0:
        for s in range(S):
            wb.mbarrier_init(full, s, 1)                               # (a) the producer's arrival, plus the bytes
            wb.mbarrier_init(empty, s, 64)                             # (b) every consumer thread's release
        wb.mbarrier_init_fence()
    wb.sync_threads()
    if tid == 0:                                                       # the producer
        for it in wb.range_dynamic(ntiles):
            s = it % S
            if it >= S:
                wb.mbarrier_wait(empty, s, (it // S + 1) % 2)          # (c) the release of fill it // S - 1
            wb.mbarrier_arrive_and_expect_tx(full, s, 64 * 64 * 2)     # (d) the box's bytes
            wb.tma_load(tma, ring[None, None, s], (it * 64, 0), full, s)
    elif tid >= 32:                                                    # the consumers
        r = tid - 32
        acc = 0.0
        for it in wb.range_dynamic(ntiles):
            s = it % S
            wb.mbarrier_wait(full, s, (it // S + 1) % 2)               # (e) fill it // S has landed
            for j in range(64):
                acc += ring[r, j, s]
            wb.mbarrier_arrive(empty, s)                               # (f) this thread is done with stage s
        out[r] = acc


def pipeline_input(ntiles, seed=0):
    """x (ntiles*64 x 64 fp16 small integers) and the row sums ring_pipeline should give."""
    x = np.random.default_rng(seed).integers(-3, 4, (ntiles * 64, 64)).astype(np.float16)
    return x, x.astype(np.float64).reshape(ntiles, 64, 64).sum(axis=(0, 2))


PIPE_RIGHT = "exact for every number of tiles"
PIPE_TILES = (1, 2, 3, 5)


def run_pipeline(kernel) -> str:
    """Run a pipeline kernel (tma, out, ntiles) on the CPU executor, one block of 96 threads: PIPE_RIGHT where every
    row sum is exact, else what went wrong (the executor's refusal, or how many runs were wrong)."""
    wrong = 0
    for n in PIPE_TILES:
        x, want = pipeline_input(n, seed=n)
        out = np.full(64, np.nan, np.float32)
        try:
            kernel[1, 96](wb.make_tma_load(x, BOX), out, n)
        except (wb.KernelRuntimeError, wb.KernelError) as e:
            return f"the CPU executor refuses it with {n} tiles: {str(e).splitlines()[-1][:300]}"
        wrong += not np.array_equal(out, want)
    return PIPE_RIGHT if not wrong else f"the sums are wrong for {wrong} of the {len(PIPE_TILES)} numbers of tiles"


_HINT_11_5 = ("run it and read the executor's message: which mbarrier never completes the phase a wait names? Fill u "
              "of a stage completes full's phase u, and a wait names a phase by its parity (the table of section 5)")


def _fixed_pipeline(answer):
    if type(answer) is not Kernel:
        return Verdict(f"11.5: expected your fixed ring_pipeline (the @wb.kernel function, edited and re-run), but got "
                       f"{type(answer).__name__}.", False)
    got = run_pipeline(answer)
    if got == PIPE_RIGHT:
        return Verdict(f"11.5: right: {PIPE_RIGHT} tried ({', '.join(map(str, PIPE_TILES))}).", True)
    return Verdict(f"11.5: not yet: {got}. Hint: {_HINT_11_5}", False)


@exercise("11.5", "ring_pipeline is refused by the CPU executor. Fix it and pass the fixed kernel: "
                  "check('11.5', ring_pipeline).",
          hint=_HINT_11_5, accept=_fixed_pipeline, objects=True)
def _():
    @wb.kernel
    def fixed(tma, out, ntiles):
        tid = wb.thread_idx().x
        ring = wb.shared_tensor(wb.Float16, RING)
        full = wb.shared_tensor(wb.Uint64, S)
        empty = wb.shared_tensor(wb.Uint64, S)
        if tid == 0:
            for s in range(S):
                wb.mbarrier_init(full, s, 1)
                wb.mbarrier_init(empty, s, 64)
            wb.mbarrier_init_fence()
        wb.sync_threads()
        if tid == 0:
            for it in wb.range_dynamic(ntiles):
                s = it % S
                if it >= S:
                    wb.mbarrier_wait(empty, s, (it // S + 1) % 2)
                wb.mbarrier_arrive_and_expect_tx(full, s, 64 * 64 * 2)
                wb.tma_load(tma, ring[None, None, s], (it * 64, 0), full, s)
        elif tid >= 32:
            r = tid - 32
            acc = 0.0
            for it in wb.range_dynamic(ntiles):
                s = it % S
                wb.mbarrier_wait(full, s, (it // S) % 2)               # fill u = it // S completes full's phase u
                for j in range(64):
                    acc += ring[r, j, s]
                wb.mbarrier_arrive(empty, s)
            out[r] = acc

    results = [run_pipeline(ring_pipeline) == PIPE_RIGHT, run_pipeline(fixed) == PIPE_RIGHT]
    if results != [False, True]:
        raise AssertionError(f"11.5: the kernel as written should be refused and the fixed one exact, got {results}")
    return fixed


# -- 11.6: a tile from the wave arithmetic -------------------------------------------------------------------------
WAVE_SHAPE = (3072, 3072, 4096)          # M, N, K of C = A @ B^T
WAVE_SMS = 132                           # an H100 SXM's or an H200's SMs
WAVE_FILL = 0.9                          # the last wave at least this full


def _waves(answer):
    """Run gemm_arithmetic on the learner's HopperGemm at WAVE_SHAPE on WAVE_SMS SMs: right where the last wave of
    tiles is at least WAVE_FILL full; the verdict says what the learner's own tile gives, never which way to go."""
    if type(answer) is not HopperGemm:
        return Verdict(f"11.6: expected a configuration built with HopperGemm(...), but got {type(answer).__name__}.",
                       False)
    g = gemm_arithmetic(answer, *WAVE_SHAPE, sms=WAVE_SMS)
    yours = (f"{answer.bm} x {answer.bn} tiles make {g.tiles} tiles, {g.waves:.2f} waves of {g.concurrent} blocks, "
             f"the last {g.last_wave_fill:.0%} full")
    if g.last_wave_fill >= WAVE_FILL:
        return Verdict(f"11.6: right: {yours}.", True)
    return Verdict(f"11.6: not it: {yours}. Hint: {_HINT_11_6}", False)


_HINT_11_6 = ("tiles = ceil(M / bm) x ceil(N / bn); a Hopper rung's block takes a whole SM (setmaxnreg gives it the "
              "register file), so a wave is 132 blocks, and the last wave holds what is left of the tiles after the "
              "full ones; gemm_arithmetic(cfg, 3072, 3072, 4096) prints it for any cfg you build")


@exercise("11.6", "Design: C = A @ B^T of M = N = 3072, K = 4096 (fp16) on 132 SMs. Build the HopperGemm whose last "
                  "wave of output tiles is at least 90 % full (every SM busy until the end).",
          hint=_HINT_11_6, accept=_waves, objects=True)
def _():
    legal = []
    for bm, consumers in ((64, 1), (128, 2)):
        for bn in (64, 128, 192, 256):
            cfg = HopperGemm(bm=bm, bn=bn, consumers=consumers, stages=2)
            if gemm_arithmetic(cfg, *WAVE_SHAPE, sms=WAVE_SMS).last_wave_fill >= WAVE_FILL:
                legal.append(cfg)
    if len(legal) != 1:      # the question means one tile: any other count is a question to re-ask
        raise AssertionError(f"11.6: expected one tile that fills the last wave, got {legal}")
    return legal[0]
