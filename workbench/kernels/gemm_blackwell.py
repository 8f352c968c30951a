"""The Blackwell rung of the GEMM ladder: TMA boxes into swizzled shared memory, ``tcgen05.mma`` issued by one thread
into a tensor-memory accumulator, ``tcgen05.commit`` to mbarriers, ``tcgen05.ld`` of the accumulator into registers
and an epilogue (``workbench/dsl/ops/``: tma, mbarrier, tcgen05_alloc, tcgen05_mma, tcgen05_commit, tcgen05_ld_st,
tcgen05_fence).

**Not run on a Blackwell GPU.**  No Blackwell GPU (B200/GB200, sm_100) is lent here: this kernel runs, exactly, on
the CPU executor (numpy operands), and its CUDA is compiled for sm_100a (NVRTC to PTX and a cubin in
tests/test_gemm_blackwell.py; ``ptxas -arch=sm_100a -v`` by ``benchmarks/blackwell_ptxas.py`` on a machine with a
CUDA toolkit).  Launched with device arrays on any GPU other than sm_100 it is refused before it runs, saying so.  Its
speed is not measured: :meth:`BlackwellGemm.arithmetic` gives the numbers a user checks on a B200.

C = A @ B^T as the other rungs (A: (M, K), B: (N, K), K-major fp16 or bf16; C: (M, N), fp32, fp16 or bf16).  One CTA
computes bm x bn tiles (bm = 128: the 1-SM ``SM100_MMA_F16BF16_SS`` atom of M = 128, N = bn, one row of the tile a
TMEM lane) with eight warps, as CUTLASS's sm100 warp-specialized kernels place them (warp specialization):

* warp 0, the **TMA producer**: its first thread waits on ``empty[s]``, announces stage s's bytes on ``full[s]`` and
  issues its two boxes (A: bm x bk, B: bn x bk, ``UMMA::Layout_K_SW128_Atom`` tiles);
* warp 1, the **MMA warp**: all of it allocates the tensor memory (``tcgen05.alloc``, ``tmem_columns`` columns) and
  frees it at the end; its first thread issues the MMAs: waits on ``full[s]``, one ``tcgen05.mma`` per 16-wide
  k-block (instruction descriptor: the atom's ``instr_desc``; shared-memory descriptors proven from the tiles), then
  ``tcgen05.commit`` to ``empty[s]``, which arrives when those MMAs have read the stage; after a tile's last k-tile,
  ``tcgen05.commit`` to ``acc_full[a]``;
* warps 4..7 (the second warpgroup), the **epilogue**: wait on ``acc_full[a]``, read the accumulator
  ``epi_columns`` columns at a time with ``tcgen05.ld`` (``SM100_TMEM_LOAD_32dp32b{epi_columns}x``: warp w reads
  TMEM lanes 32*(w%4)..32*(w%4)+31, so thread 128 + r reads the tile's row r), round it to C's type and store it
  (predicated at C's edges), then arrive on ``acc_empty[a]``;
* warps 2 and 3 have no job here (CUTLASS's scheduler and epilogue-load warps): the DSL launches whole warpgroups
  for a kernel that partitions by a TMEM tiled copy, and the epilogue must be a whole warpgroup (its four warps cover
  the four lane quarters).

The accumulator has ``acc_stages`` buffers in TMEM (two where 2 x bn columns fit: the MMA warp fills the next tile's
while the epilogue drains this one).  ``persistent`` CTAs loop over tiles (as many CTAs as SMs); otherwise one CTA a
tile; tiles are walked in bands of ``group`` m-tiles (``gemm_ladder.block_tile``, as the Hopper rungs: CTAs running
together share B tiles and a band of A tiles in L2).  Edges of A and B: the TMA reads zeros outside them.  Not yet:
a TMA-store epilogue, M = 64 tiles.

**2-SM pairs** (``two_sm=True``): clusters of two CTAs along M compute 256 x bn tiles with the 2-SM UMMA
``SM100_MMA_F16BF16_2x1SM_SS`` (M = 256, ``tcgen05.mma.cta_group::2``), as CUTLASS's 2-SM kernels and CuTe DSL's
``examples/python/CuTeDSL/blackwell/dense_gemm_persistent.py`` with ``use_2cta_instrs`` do (there: only the leader CTA
waits on the stages and issues the MMAs; its full barrier counts both CTAs' bytes; the accumulator's consumers are
both CTAs' epilogue warps): CTA r of the pair (r = cluster rank) loads A's rows 128r.. of the tile
(a 128 x bk box) and B's rows r*bn/2.. (a bn/2 x bk box) into the same shared offsets; the warp 1 of both CTAs
allocates the pair's TMEM (``tcgen05.alloc.cta_group::2``, the same columns in both); one thread of the even CTA (the
leader) issues every MMA of the pair and commits with ``multicast=0b11`` (``tcgen05.commit.cta_group::2 ...
multicast::cluster``) to ``empty[s]`` and ``acc_full[a]`` of both CTAs; each CTA's epilogue warps read their own 128
rows from their own TMEM and arrive on the leader's ``acc_empty[a]`` (256 arrivals: both CTAs' epilogues).  Where this
departs from CUTLASS: CUTLASS's 2-SM TMA (``cp.async.bulk.tensor.cta_group::2``) completes both CTAs' bytes on the
leader's mbarrier; the DSL's TMA has no ``.cta_group::2`` form yet, so each CTA's boxes complete on its own
``full[s]`` and the odd CTA's idle MMA-warp thread relays: it waits on its ``full[s]`` and arrives on the leader's
(``wb.mbarrier_arrive(full, s, cta=0)``, the remote arrival CUTLASS's ``umma_arrive_2x1SM_sm0`` makes), whose phase
therefore counts two arrivals and the leader's bytes.

Public API (stable; the views draw these objects)::

    cfg = BlackwellGemm(bm=128, bn=256, bk=64, stages=4, dtype=wb.Float16, persistent=False, acc_stages=None,
                        epi_columns=32, group=8, two_sm=False)
    cfg.atom          # the UMMA atom: wb.mma_atom("SM100_MMA_F16BF16_SS", ..., m=bm, n=bn)
                      #   (two_sm: "SM100_MMA_F16BF16_2x1SM_SS", m=2*bm: the pair's tile is 2*bm x bn)
    cfg.smem          # {"A": (bm, bk, stages), "B": (bn, bk, stages)} swizzled shared layouts (two_sm: B bn/2 rows)
    cfg.smem_atom     # wb.umma_smem_atom("Layout_K_SW128_Atom", dtype) (or SW64/SW32 for narrower bk)
    cfg.box           # {"A": (bm, bk), "B": (bn, bk)}: one stage's TMA boxes' shared layouts (two_sm: B bn/2 rows)
    cfg.tmem_acc      # the accumulators in TMEM: ((bm, bn), 1, acc_stages), CuTe's tmem_frg (two_sm: each CTA's
                      #   half of the pair's, CuTe's tmem_frg_2sm)
    cfg.tmem_epi      # the same cells as (bm, epi_columns) chunks: ((bm, epi_columns), 1, chunks x acc_stages)
    cfg.tmem_chunk    # one chunk (bm, epi_columns): what one tcgen05.ld copy moves
    cfg.tmem_load     # the tcgen05.ld tiled copy (wb.make_tmem_copy of SM100_TMEM_LOAD_32dp32b{epi_columns}x)
    cfg.tmem_columns  # columns allocated (a power of two, 32..512); cfg.tmem_columns_used: acc_stages x bn
    cfg.threads, cfg.warps   # 256; {"producer": 0, "mma": 1, "idle": (2, 3), "epilogue": (4, 5, 6, 7)}
    cfg.cluster       # (1, 1, 1); two_sm: (2, 1, 1), the CTA pair
    cfg.smem_bytes    # shared memory a CTA: stages, mbarriers, the TMEM address
    cfg.arithmetic()  # tile, stages, TMEM columns, smem bytes, bytes and FLOPs a k-tile, MMAs a k-tile ...
    cfg.kernel()      # the @wb.kernel: kern[cfg.grid(m, n), (cfg.threads, 1, 1)](tma_a, tma_b, C, k)
                      #   (two_sm: the grid is two CTAs a pair, the kernel declares cluster=(2, 1, 1))
    cfg.operands(a, b, c), cfg.launch(a, b, c), cfg.grid(m, n), cfg.tma(a, b)
"""

from __future__ import annotations

import math

import workbench as wb

from .gemm_hopper import c_operand
from .gemm_ladder import SMEM_LIMIT, block_tile, check_config, finish_degenerate, gemm_operands, zero_fill

__all__ = ["BlackwellGemm", "make_blackwell_gemm", "NOT_RUN"]

NOT_RUN = ("no Blackwell GPU (sm_100) is lent here: the Blackwell rung is compiled for sm_100a and run on the CPU "
           "executor (numpy operands), never on a Blackwell GPU")

TMEM_COLUMNS = 512      # 32-bit columns of one SM's tensor memory (128 lanes)


class BlackwellGemm:
    """A Blackwell rung's configuration and every object its kernel uses (see the module docstring for the list the
    views draw).  ``launch(a, b, c)`` runs it: on the CPU executor for numpy operands; device arrays only on an sm_100
    GPU (none is lent here: it was never run on one; elsewhere the launch is refused)."""

    def __init__(self, bm=128, bn=256, bk=64, stages=4, dtype=wb.Float16, persistent=False, acc_stages=None,
                 epi_columns=32, group=8, two_sm=False):
        who = "BlackwellGemm"
        if dtype not in (wb.Float16, wb.BFloat16):
            raise TypeError(f"{who}: expected dtype wb.Float16 or wb.BFloat16 (the SM100 F16BF16 UMMAs), but got "
                            f"{dtype!r}.")
        if type(persistent) is not bool:
            raise TypeError(f"{who}: expected persistent to be a bool, but got {type(persistent).__name__} "
                            f"{persistent!r}.")
        if type(two_sm) is not bool:
            raise TypeError(f"{who}: expected two_sm to be a bool, but got {type(two_sm).__name__} {two_sm!r}.")
        check_config(who, "bm", bm, lambda v: v == 128,
                     "128 (the 1-SM M = 128 UMMA, or each CTA's half of the 2-SM M = 256 one: one tile row a TMEM lane, "
                     "read by the four epilogue warps; M = 64 tiles are not in this rung)")
        check_config(who, "bn", bn, lambda v: v % 16 == 0 and 16 <= v <= 256,
                     f"a multiple of 16 in 16..256 (an SM100_MMA_F16BF16_{'2x1SM_SS N for M = 256' if two_sm else 'SS N for M = 128'})")
        check_config(who, "bk", bk, lambda v: v in (16, 32, 64),
                     "16, 32 or 64 (a K-major SW32/SW64/SW128 shared-memory row of 16-bit elements)")
        check_config(who, "group", group, lambda v: v >= 1, ">= 1 (m-tiles per band of tiles)")
        check_config(who, "stages", stages, lambda v: v >= 2,
                     ">= 2 (the producer refills one stage while the MMAs still read another)")
        check_config(who, "epi_columns", epi_columns, lambda v: v in (16, 32, 64) and bn % v == 0,
                     f"16, 32 or 64 dividing bn ({bn}) (accumulator columns one 32dp32b TMEM load moves, registers a "
                     "thread holds at once)")
        max_acc = TMEM_COLUMNS // bn
        if acc_stages is None:
            acc_stages = min(2, max_acc)
        check_config(who, "acc_stages", acc_stages, lambda v: 1 <= v <= max_acc,
                     f"in 1..{max_acc} (accumulators of {bn} columns within {TMEM_COLUMNS} TMEM columns)")
        self.bm, self.bn, self.bk, self.stages, self.dtype = bm, bn, bk, stages, dtype
        self.persistent, self.acc_stages, self.epi_columns, self.group = persistent, acc_stages, epi_columns, group
        self.two_sm = two_sm
        self.cluster = (2, 1, 1) if two_sm else (1, 1, 1)
        self.warps = {"producer": 0, "mma": 1, "idle": (2, 3), "epilogue": (4, 5, 6, 7)}
        self.threads = 32 * 8
        family, tile_m, bn_cta = ("SM100_MMA_F16BF16_2x1SM_SS", 2 * bm, bn // 2) if two_sm else ("SM100_MMA_F16BF16_SS", bm, bn)
        self.tile_m = tile_m            # rows of C a tile (the pair's, for two_sm)
        self.atom = wb.mma_atom(family, a_type=dtype, b_type=dtype, c_type=wb.Float32, m=tile_m, n=bn,
                                a_major="K", b_major="K")
        kind = {64: "SW128", 32: "SW64", 16: "SW32"}[bk * dtype.bits // 16]
        self.smem_atom = wb.umma_smem_atom(f"Layout_K_{kind}_Atom", dtype)
        self.box = {"A": wb.tile_to_shape(self.smem_atom, (bm, bk)),
                    "B": wb.tile_to_shape(self.smem_atom, (bn_cta, bk))}
        self.smem = {"A": wb.tile_to_shape(self.smem_atom, (bm, bk, stages)),
                     "B": wb.tile_to_shape(self.smem_atom, (bn_cta, bk, stages))}
        # the accumulators, acc_stages tiles side by side in TMEM (two_sm: this CTA's half of each); the epilogue's
        # view of the same cells in chunks
        self.tmem_acc = self.atom.make_fragment_C(self.atom.partition_shape_C((tile_m, bn * acc_stages)))
        # (CuTe's tmem_frg of an N = epi_columns atom over the same columns: chunk c is columns c*epi_columns..)
        chunk_atom = wb.mma_atom(family, a_type=dtype, b_type=dtype, c_type=wb.Float32, m=tile_m, n=epi_columns)
        self.tmem_epi = chunk_atom.make_fragment_C(chunk_atom.partition_shape_C((tile_m, bn * acc_stages)))
        self.tmem_chunk = self.tmem_epi[(None, None), 0, 0]
        self.tmem_load = wb.make_tmem_copy(wb.copy_atom(f"SM100_TMEM_LOAD_32dp32b{epi_columns}x", wb.Float32),
                                           self.tmem_chunk)
        self.tmem_columns_used = bn * acc_stages
        self.tmem_columns = max(32, 1 << (self.tmem_columns_used - 1).bit_length())
        self._kernel = None
        if self.smem_bytes > SMEM_LIMIT:
            raise ValueError(f"{who}: expected at most {SMEM_LIMIT} bytes of shared memory a CTA, but {bm}x{bn}x{bk} in "
                             f"{stages} stages needs {self.smem_bytes}.")

    @property
    def stage_bytes(self):
        """Bytes one stage's two TMA boxes bring a CTA (the whole boxes, zeros past the edges included)."""
        return (self.bm + (self.bn // 2 if self.two_sm else self.bn)) * self.bk * self.dtype.bits // 8

    @property
    def smem_bytes(self):
        """Shared memory a CTA: the stages, the 2 x stages + 2 x acc_stages mbarriers, the TMEM address."""
        return self.stage_bytes * self.stages + 8 * (2 * self.stages + 2 * self.acc_stages) + 4

    def arithmetic(self) -> dict:
        """The numbers to check on a B200 (its speed is not measured here: no Blackwell GPU is lent): the tile, the
        pipeline depth, tensor memory used and allocated, shared memory, and per k-tile the bytes TMA brings, the
        UMMAs issued and the FLOPs they do (their ratio: the tile's arithmetic intensity from shared memory).  two_sm:
        the tile is the pair's (and ``ctas_per_tile``, ``cluster``); TMEM, shared memory, bytes and FLOPs are a CTA's;
        the UMMAs a k-tile are the leader's, for both."""
        m, n, k = self.atom.shape_mnk
        flops = 2 * self.bm * self.bn * self.bk       # a CTA's share (two_sm: half the pair's tile)
        pair = {"ctas_per_tile": 2, "cluster": self.cluster} if self.two_sm else {}   # two_sm: a CTA pair a tile
        return {
            "tile": (self.tile_m, self.bn, self.bk),
            **pair,
            "mma_atom": self.atom.name, "mma_shape": (m, n, k),
            "instr_desc": f"0x{self.atom.instr_desc.encode():08x}",
            "stages": self.stages,
            "acc_stages": self.acc_stages,
            "tmem_columns_used": self.tmem_columns_used,
            "tmem_columns_allocated": self.tmem_columns,
            "tmem_lanes": self.bm,
            "smem_bytes": self.smem_bytes,
            "smem_limit": SMEM_LIMIT,
            "stage_bytes": self.stage_bytes,
            "mmas_per_ktile": self.bk // k,
            "flops_per_ktile": flops,
            "flops_per_smem_byte": flops / self.stage_bytes,
            "epilogue_loads_per_tile": self.bn // self.epi_columns,
            "epilogue_registers_per_thread": self.epi_columns,
            "threads": self.threads,
            "persistent": self.persistent,
            "run_here": "CPU executor only (" + NOT_RUN + ")",
        }

    def kernel(self):
        """The compiled-on-demand kernel: ``kern[cfg.grid(m, n), (cfg.threads, 1, 1)](tma_a, tma_b, C, k)``."""
        if self._kernel is None:
            self._kernel = make_blackwell_gemm(self)
        return self._kernel

    def tma(self, a, b):
        """The two TMA descriptors of one launch (A's and B's boxes)."""
        return wb.make_tma_load(a, self.box["A"]), wb.make_tma_load(b, self.box["B"])

    def operands(self, a, b, c):
        """(kernel, arguments) for C = A @ B^T, A, B and C checked first (shapes, element types, K-major A and B, K a
        multiple of 8); where M, N or K is 0 it is (``zero_fill``, (C,)): launch writes what torch gives."""
        m, n, k = gemm_operands(repr(self), a, b, c, (self.dtype,), (wb.Float32, wb.Float16, wb.BFloat16),
                                k_major=True, k_multiple=8)
        if not (m and n and k):
            return zero_fill, (c,)
        ta, tb = self.tma(a, b)
        cc = c_operand(c)     # dynamic M and N: one compiled kernel for every size
        return self.kernel(), (ta, tb, cc, ta.shape[1])

    def launch(self, a, b, c):
        """C = A @ B^T.  numpy operands: the CPU executor (exact).  Device arrays: refused unless the GPU is an sm_100
        (a B200/GB200), and even there never tried here (no Blackwell GPU is lent)."""
        if _on_device(c) and _arch() != "sm_100":
            raise ValueError(f"{self!r} needs a Blackwell GPU (sm_100), but this one is {_arch()}: {NOT_RUN}. Pass "
                             "numpy arrays to run it on the CPU executor.")
        kern, args = self.operands(a, b, c)
        m, n = c.shape[0], c.shape[1]
        if len(args) == 1:
            finish_degenerate(c, m, n, 0)
            return
        kern[self.grid(m, n), (self.threads, 1, 1)](*args)

    def tiles(self, m, n):
        return math.ceil(m / self.tile_m) * math.ceil(n / self.bn)

    def grid(self, m, n):
        """CTAs: one a tile (two_sm: a pair a tile), or (persistent) as many as the GPU's SMs (2 on the CPU executor),
        each (pair) looping."""
        t = self.tiles(m, n)
        v = 2 if self.two_sm else 1
        if self.persistent:
            sms = _sm_count() if _device_is_blackwell() else 2
            return (v * max(1, min(t, sms // v)), 1, 1)
        return (v * t, 1, 1)

    def __repr__(self):
        return (f"BlackwellGemm({self.tile_m}x{self.bn}x{self.bk}, stages={self.stages}, acc_stages={self.acc_stages}, "
                f"group={self.group}, {self.dtype}{', persistent' if self.persistent else ''}"
                f"{', two_sm' if self.two_sm else ''})")


def _on_device(x) -> bool:
    """A tensor in GPU memory (DLPack device type 2, kDLCUDA, or 13, managed)."""
    dev = getattr(x, "__dlpack_device__", None)
    return dev is not None and int(dev()[0]) in (2, 13)


def _arch() -> str:
    import cupy
    return "sm_" + cupy.cuda.Device().compute_capability


def _device_is_blackwell() -> bool:
    return wb.gpu_available() and _arch() == "sm_100"


def _sm_count():
    import cupy
    return cupy.cuda.Device().attributes["MultiProcessorCount"]


def _make_epilogue_chunk(ec, TLOAD):
    """The epilogue's device function: one tcgen05.ld chunk of ec accumulator columns of a thread's row, stored to C."""

    @wb.kernel
    def _epilogue_chunk(acc, C, row, col, m_size, n_size):
        """One chunk of ec accumulator columns of this thread's row: TMEM -> registers (tcgen05.ld), rounded to C's
        type and stored where it lies inside C."""
        frag = wb.make_fragment(ec, wb.Float32)
        wb.copy(TLOAD, acc, frag)
        wb.tcgen05_wait_ld()
        out = wb.make_fragment((1, ec), C.element_type)
        out.store(frag.load().to(C.element_type))
        if row < m_size:
            if col + ec <= n_size:          # the whole chunk: vector stores where C's alignment is proven
                wb.copy(out, wb.local_tile(C, (1, ec), (row, col // ec)))
            else:
                for e in range(ec):
                    if col + e < n_size:
                        C[row, col + e] = out[0, e]

    return _epilogue_chunk


def make_blackwell_gemm(cfg: BlackwellGemm):
    """The kernel of a Blackwell rung: ``kern[cfg.grid(m, n), (cfg.threads, 1, 1)](tma_a, tma_b, C, k)``."""
    if cfg.two_sm:
        return _make_two_sm(cfg)
    bm, bn, bk, S, A = cfg.bm, cfg.bn, cfg.bk, cfg.stages, cfg.acc_stages
    atom, SA, SB = cfg.atom, cfg.smem["A"], cfg.smem["B"]
    TACC, TEPI, TLOAD = cfg.tmem_acc, cfg.tmem_epi, cfg.tmem_load
    ncols, stage_bytes, dtype = cfg.tmem_columns, cfg.stage_bytes, cfg.dtype
    ec = cfg.epi_columns
    chunks = bn // ec
    persistent, group = cfg.persistent, cfg.group

    _epilogue_chunk = _make_epilogue_chunk(ec, TLOAD)

    @wb.kernel(launch_bounds=cfg.threads)
    def gemm_tcgen05(tma_a, tma_b, C, k):
        """C = A @ B^T: a TMA warp streams k-tiles of A and B into a ring of shared stages; one thread of the MMA warp
        multiplies each stage into a TMEM accumulator with tcgen05.mma and releases the stage by tcgen05.commit; the
        four epilogue warps read the finished accumulator with tcgen05.ld and store it."""
        tid = wb.thread_idx().x
        warp = tid // 32
        sA = wb.shared_tensor(dtype, SA)
        sB = wb.shared_tensor(dtype, SB)
        full = wb.shared_tensor(wb.Uint64, S)
        empty = wb.shared_tensor(wb.Uint64, S)
        acc_full = wb.shared_tensor(wb.Uint64, A)
        acc_empty = wb.shared_tensor(wb.Uint64, A)
        holder = wb.shared_tensor(wb.Uint32, 1)
        m_size, n_size = wb.shape(C)[0], wb.shape(C)[1]
        mtiles, ntiles = wb.ceil_div(m_size, bm), wb.ceil_div(n_size, bn)
        ktiles = wb.ceil_div(k, bk)
        if warp == 1:
            wb.tmem_alloc(holder, ncols)
            wb.tmem_relinquish_alloc_permit()
        if tid == 0:
            for s in range(S):
                wb.mbarrier_init(full, s, 1)
                wb.mbarrier_init(empty, s, 1)
            for a in range(A):
                wb.mbarrier_init(acc_full, a, 1)
                wb.mbarrier_init(acc_empty, a, 128)
            wb.mbarrier_init_fence()
        wb.tcgen05_fence_before()
        wb.sync_threads()
        wb.tcgen05_fence_after()
        taddr = holder[0]
        first = wb.block_idx().x
        step = wb.grid_dim().x if persistent else mtiles * ntiles
        if tid == 0:                            # the TMA producer
            it = 0
            tile = first
            while tile < mtiles * ntiles:
                m0, n0 = block_tile(tile, mtiles, ntiles, group)
                for kt in wb.range_dynamic(ktiles):
                    s = it % S
                    if it >= S:
                        wb.mbarrier_wait(empty, s, (it // S + 1) % 2)
                    wb.mbarrier_arrive_and_expect_tx(full, s, stage_bytes)
                    wb.tma_load(tma_a, sA[None, None, s], (m0 * bm, kt * bk), full, s)
                    wb.tma_load(tma_b, sB[None, None, s], (n0 * bn, kt * bk), full, s)
                    it += 1
                tile += step
        elif tid == 32:                         # the MMA issuer
            acc_all = wb.make_tmem_tensor(taddr, TACC)
            it = 0
            t = 0
            tile = first
            while tile < mtiles * ntiles:
                a = t % A
                if t >= A:                      # the epilogue has read this accumulator's previous tile
                    wb.mbarrier_wait(acc_empty, a, (t // A + 1) % 2)
                    wb.tcgen05_fence_after()
                acc = acc_all[None, 0, a]
                for kt in wb.range_dynamic(ktiles):
                    s = it % S
                    wb.mbarrier_wait(full, s, (it // S) % 2)
                    wb.tcgen05_fence_after()
                    wb.gemm(atom, acc, sA[None, None, s], sB[None, None, s], acc, accumulate=kt > 0)
                    wb.tcgen05_commit(empty, s)     # arrives once these MMAs have read stage s
                    it += 1
                wb.tcgen05_commit(acc_full, a)      # arrives once every MMA of the tile has landed
                t += 1
                tile += step
        elif tid >= 128:                        # the epilogue: thread 128 + r reads TMEM lane r, the tile's row r
            epi = wb.make_tmem_tensor(taddr, TEPI)
            t = 0
            tile = first
            while tile < mtiles * ntiles:
                a = t % A
                m0, n0 = block_tile(tile, mtiles, ntiles, group)
                wb.mbarrier_wait(acc_full, a, (t // A) % 2)
                wb.tcgen05_fence_after()
                for j in range(chunks):
                    _epilogue_chunk(epi[(None, None), 0, a * chunks + j], C, m0 * bm + tid - 128, n0 * bn + j * ec, m_size, n_size)
                wb.tcgen05_fence_before()
                wb.mbarrier_arrive(acc_empty, a)
                t += 1
                tile += step
        wb.tcgen05_fence_before()
        wb.sync_threads()
        if warp == 1:
            wb.tcgen05_fence_after()
            wb.tmem_dealloc(taddr, ncols)

    return gemm_tcgen05


def _make_two_sm(cfg: BlackwellGemm):
    """The 2-SM kernel (``two_sm=True``): CTA pairs (cluster (2, 1, 1)) on 2*bm x bn tiles, one 2x1SM UMMA issuer in the
    even CTA (see the module docstring)."""
    bm, bn, bk, S, A = cfg.bm, cfg.bn, cfg.bk, cfg.stages, cfg.acc_stages
    tm, bh = cfg.tile_m, bn // 2
    atom, SA, SB = cfg.atom, cfg.smem["A"], cfg.smem["B"]
    TACC, TEPI, TLOAD = cfg.tmem_acc, cfg.tmem_epi, cfg.tmem_load
    ncols, stage_bytes, dtype = cfg.tmem_columns, cfg.stage_bytes, cfg.dtype
    ec = cfg.epi_columns
    chunks = bn // ec
    persistent, group = cfg.persistent, cfg.group
    _epilogue_chunk = _make_epilogue_chunk(ec, TLOAD)

    @wb.kernel(launch_bounds=cfg.threads, cluster=(2, 1, 1))
    def gemm_tcgen05_2sm(tma_a, tma_b, C, k):
        """C = A @ B^T on CTA pairs: each CTA's TMA warp streams its half of A's and B's tile rows into its stages;
        one thread of the even CTA multiplies both CTAs' stages into both CTAs' TMEM (tcgen05.mma.cta_group::2) and
        releases the stages of both (multicast tcgen05.commit); each CTA's epilogue warps read their own rows."""
        tid = wb.thread_idx().x
        warp = tid // 32
        r = wb.block_rank_in_cluster()           # 0: the leader (issues the pair's MMAs), 1: its peer
        sA = wb.shared_tensor(dtype, SA)
        sB = wb.shared_tensor(dtype, SB)
        full = wb.shared_tensor(wb.Uint64, S)
        empty = wb.shared_tensor(wb.Uint64, S)
        acc_full = wb.shared_tensor(wb.Uint64, A)
        acc_empty = wb.shared_tensor(wb.Uint64, A)
        holder = wb.shared_tensor(wb.Uint32, 1)
        m_size, n_size = wb.shape(C)[0], wb.shape(C)[1]
        mtiles, ntiles = wb.ceil_div(m_size, tm), wb.ceil_div(n_size, bn)
        ktiles = wb.ceil_div(k, bk)
        if warp == 1:                            # the same warp of both CTAs: the pair's columns
            wb.tmem_alloc(holder, ncols, cta_group=2)
            wb.tmem_relinquish_alloc_permit(cta_group=2)
        if tid == 0:
            for s in range(S):
                wb.mbarrier_init(full, s, 2 - r)     # the leader's: its own bytes' arrival and the peer's relay
                wb.mbarrier_init(empty, s, 1)
            for a in range(A):
                wb.mbarrier_init(acc_full, a, 1)
                wb.mbarrier_init(acc_empty, a, 256)  # the leader's: both CTAs' epilogue threads
            wb.mbarrier_init_fence()
        wb.tcgen05_fence_before()
        wb.cluster_sync()                        # both CTAs' mbarriers and TMEM before any remote use
        wb.tcgen05_fence_after()
        taddr = holder[0]
        first = wb.block_idx().x // 2
        step = wb.grid_dim().x // 2 if persistent else mtiles * ntiles
        if tid == 0:                             # the TMA producer of this CTA's halves
            it = 0
            tile = first
            while tile < mtiles * ntiles:
                m0, n0 = block_tile(tile, mtiles, ntiles, group)
                for kt in wb.range_dynamic(ktiles):
                    s = it % S
                    if it >= S:
                        wb.mbarrier_wait(empty, s, (it // S + 1) % 2)
                    wb.mbarrier_arrive_and_expect_tx(full, s, stage_bytes)
                    wb.tma_load(tma_a, sA[None, None, s], (m0 * tm + r * bm, kt * bk), full, s)
                    wb.tma_load(tma_b, sB[None, None, s], (n0 * bn + r * bh, kt * bk), full, s)
                    it += 1
                tile += step
        elif tid == 32:
            it = 0
            tile = first
            if r == 0:                           # the pair's MMA issuer
                acc_all = wb.make_tmem_tensor(taddr, TACC)
                t = 0
                while tile < mtiles * ntiles:
                    a = t % A
                    if t >= A:                   # both epilogues have read this accumulator's previous tile
                        wb.mbarrier_wait(acc_empty, a, (t // A + 1) % 2)
                        wb.tcgen05_fence_after()
                    acc = acc_all[None, 0, a]
                    for kt in wb.range_dynamic(ktiles):
                        s = it % S
                        wb.mbarrier_wait(full, s, (it // S) % 2)
                        wb.tcgen05_fence_after()
                        wb.gemm(atom, acc, sA[None, None, s], sB[None, None, s], acc, accumulate=kt > 0)
                        wb.tcgen05_commit(empty, s, cta_group=2, multicast=0b11)   # both CTAs' stage s read
                        it += 1
                    wb.tcgen05_commit(acc_full, a, cta_group=2, multicast=0b11)    # both halves landed
                    t += 1
                    tile += step
            else:                                # the peer's relay: its stage s landed -> the leader's full[s]
                while tile < mtiles * ntiles:
                    for _kt in wb.range_dynamic(ktiles):
                        s = it % S
                        wb.mbarrier_wait(full, s, (it // S) % 2)
                        wb.mbarrier_arrive(full, s, cta=0)
                        it += 1
                    tile += step
        elif tid >= 128:                         # the epilogue: thread 128 + i reads this CTA's TMEM lane i
            epi = wb.make_tmem_tensor(taddr, TEPI)
            t = 0
            tile = first
            while tile < mtiles * ntiles:
                a = t % A
                m0, n0 = block_tile(tile, mtiles, ntiles, group)
                wb.mbarrier_wait(acc_full, a, (t // A) % 2)
                wb.tcgen05_fence_after()
                for j in range(chunks):
                    _epilogue_chunk(epi[(None, None), 0, a * chunks + j], C, m0 * tm + r * bm + tid - 128,
                                    n0 * bn + j * ec, m_size, n_size)
                wb.tcgen05_fence_before()
                wb.mbarrier_arrive(acc_empty, a, cta=0)
                t += 1
                tile += step
        wb.tcgen05_fence_before()
        wb.cluster_sync()                        # the leader's MMAs read the peer's stages: neither leaves before
        if warp == 1:
            wb.tcgen05_fence_after()
            wb.tmem_dealloc(taddr, ncols, cta_group=2)

    return gemm_tcgen05_2sm
