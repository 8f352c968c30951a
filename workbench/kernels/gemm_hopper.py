"""The Hopper rungs of the GEMM ladder: TMA boxes into swizzled shared memory, warpgroup MMAs reading them through
descriptors, an mbarrier pipeline between them (``workbench/dsl/ops/``: tma, mbarrier, wgmma).

C = A @ B^T as the other rungs (A: (M, K), B: (N, K), K-major fp16 or bf16; C: (M, N), fp32 or fp16/bf16).  One
block computes a bm x bn tile with ``consumers`` warpgroups (each a 64-row slab: an ``SM90_64x{bn}x16`` atom per
k-block) and one producer warpgroup, whose first thread issues the TMA loads (warp specialization):

* ``full[s]`` (1 arrival + the stage's bytes): the producer announces the bytes of stage s and issues its two
  boxes (A: bm x bk, B: bn x bk, ``Layout_K_SW128_Atom`` tiles); the consumers wait on it;
* ``empty[s]`` (one arrival per consumer warpgroup): a consumer releases stage s once the wgmma that read it are
  complete (``warpgroup_wait_group(1)``: one k-tile's MMAs stay in flight); the producer waits on it before it
  refills the stage.

``setmaxnreg`` moves registers from the producer (40) to the consumers (232), whose accumulators take 128 a thread
at bn = 256 (the kernel declares its launch bounds, without which ptxas ignores setmaxnreg).  bn is any multiple of
16 from 64 to 256: widths that are no power of two are for wave quantization (N = 7168 is 41 tiles of 176, which
cuBLAS also picks there: 656 tiles of 128 x 176 fill 4.97 waves of 132 SMs where 448 of 128 x 256 fill 3.39).
Blocks walk tiles in bands of ``group`` rows (``gemm_ladder.block_tile``); ``persistent`` blocks loop over tiles.
``cluster`` blocks along M form a thread-block cluster sharing one B tile: each loads a 1/cluster slice of it and
multicasts it to all, and each consumer releases a stage in every block of the cluster (``empty[s]`` counts them
all).
``pingpong``: each consumer warpgroup owns every other tile of its (persistent) block, bm rows of its own, and the
two take turns at the tensor cores (named barriers: one waits until the other has issued its tile's last MMAs, which
also keeps the mbarrier phases it waits on the next ones, and its MMAs queue behind those), so that one's epilogue
overlaps the other's MMAs; in a cluster too (each consumer releases a stage in every block).

C is written in its own element type (fp16/bf16 as cuBLAS writes, or fp32).  The epilogue goes through shared memory
and TMA stores where C's rows are 16-byte aligned (``epilogue="tma"``, CUTLASS's): the consumer warpgroups round
their accumulators a bm x (128 bytes) chunk at a time (64 or 32 bytes where 128 do not divide the tile's row: 176
fp16 columns are 11 chunks of 16) into one of two swizzled staging buffers, and the first consumer thread stores the
chunk by TMA while the next one is written; the TMA clips the tile at C's edges.
Otherwise (``epilogue="registers"``) each thread stores its accumulators, predicated at the edges.  Edges of A and
B: the TMA reads zeros outside them.

Schedules (``benchmarks/hopper_schedules.py`` measures each step against cuBLAS):

* ``overlap=True`` (persistent, cooperative): a tile's C, rounded to 16 bits, waits in registers (64 a thread at
  128 x 256) while the same consumers issue the next tile's first k-tiles' MMAs, one staging chunk stored by TMA
  after each k-tile's MMAs are issued, instead of with the tensor cores idle (the block's last tile after its loop;
  with block scales every chunk after the first k-tile's MMAs are issued).
  A 32-bit C holds the last half of its chunks (64 registers a thread at 128 x 256, as a 16-bit C's whole tile; all
  of it, 128, would not fit beside the accumulators) and stores the first half at once.
* ``regs=(producer, consumer)``: the setmaxnreg split (40/232 by default; 24/240 as the open worklogs use).
* ``stream_k=True`` (persistent, cooperative, no cluster): a block on every SM; the tiles of all but the last two
  waves are whole, those of the last two are cut into k-tiles dealt out evenly to the blocks (the Stream-K paper's
  "DP + two-tile SK" hybrid; fewer tiles than SMs: split-K over all of them).  A block that computed part of a tile
  writes its fp32 partial sums to a workspace (``workspace``: two bm x bn slots a block) and counts itself
  (``wb.atomic_add``, acquire-release); the last to count adds every part in block order and stores the tile, so no
  block waits for another and the sums are the same whichever block is last.  The head's block (k-tiles from 0,
  computed at the end of its units, so usually the last) first reads the count and, when every other part is in,
  adds them to its own accumulators without writing its own.  Departure from CUTLASS's stream-K,
  whose fixup waits on a peer's flag: here the last arriver reduces, which needs no co-residency.  It pays where a
  tile's k-loop is long beside its 128 KiB of partial sums (8192^3 on an H200: 1.03x -> 1.05x cuBLAS) and costs
  where it is short (4096^3: 1.01x -> 0.92x): the tuner picks per shape.

FP8 (``dtype=wb.Float8E4M3FN`` or ``wb.Float8E5M2``, ``b_dtype`` either of them: CuTe's SM90 F8 GMMA atoms,
``SM90_64x{bn}x32_F32{A}{B}_SS_TN``, K-major only): the same pipeline with 128-byte k-tiles (``bk=128`` fp8 elements,
``Layout_K_SW128_Atom`` for 8-bit), fp32 accumulators, C in bf16/fp16/fp32, K a multiple of 16 (16-byte TMA rows).
Scales as ``torch._scaled_mm`` takes them (A (M, K) and B (N, K) row-major, i.e. its ``b.t()``): per tensor,
``launch(a, b, c, scale_a, scale_b)`` with one-element fp32 tensors read by the kernel (no host sync), C =
(scale_a * scale_b) * acc rounded once to fp32, then to C's type; or per block (``block_scales=True``, DeepSeek-V3's
fine-grained scaling: scale_a (M, ceil(K/128)), scale_b (ceil(N/128), ceil(K/128))): each 128-deep k-tile's sums are
computed from zero by the tensor cores, then added to the fp32 accumulators times scale_a[row, kt] * scale_b[n, kt]
(``bn = bk = 128``: one block of B a tile; cooperative kernels only).  The partial sums start from zero through the
first wgmma's scale-d (``wb.gemm(..., accumulate=False)``) in one of two register sets taken in turn: k-tile kt + 1's
MMAs are issued before kt's are awaited and promoted, so the tensor cores work through the promotion; with
``persistent=True, overlap=True`` the previous tile's 16-bit C (32 registers at 128 x 128) is stored while the next
tile's first k-tile's MMAs run.  The CPU executor sums each k=32 wgmma exactly and rounds it once into the fp32
accumulators; the tensor cores' fp8 accumulation is narrower than fp32 (DeepSeek-V3 measured about 14 bits on an
H800), so a GPU result equals that only where every partial sum is exact (small integers: the tests) and otherwise
differs by the tensor cores' rounding (which the per-block promotion into fp32 bounds).
"""

from __future__ import annotations

import math

import workbench as wb

from .gemm_ladder import (
    SMEM_LIMIT,
    Rung,
    block_tile,
    check_config,
    finish_degenerate,
    gemm_operands,
    store_tile,
    zero_fill,
)

__all__ = ["HopperGemm", "make_hopper_gemm", "hopper_rungs", "c_operand"]


class HopperGemm:
    """A Hopper rung's configuration and every object its kernel uses (drawn by the views): ``mma`` (the tiled
    GMMA), ``smem`` (the staged shared layouts), ``box`` (one stage's TMA boxes' shared layouts), and per C
    element type ``epilogue_tiles(etype)`` (the staging buffers and the TMA store's box).  ``launch(a, b, c)``
    runs it (``operands`` says which kernel and arguments)."""

    def __init__(self, bm=128, bn=256, bk=None, stages=4, consumers=2, group=8, dtype=wb.Float16,
                 persistent=False, cluster=1, pingpong=False, b_dtype=None, block_scales=False, overlap=False,
                 regs=(40, 232), stream_k=False):
        who = "HopperGemm"
        if dtype not in (wb.Float16, wb.BFloat16) + FP8_TYPES:
            raise TypeError(f"{who}: expected dtype wb.Float16 or wb.BFloat16 (the SM90 F16/BF16 GMMAs) or "
                            f"wb.Float8E4M3FN or wb.Float8E5M2 (the F8 GMMAs), but got {dtype!r}.")
        fp8 = dtype in FP8_TYPES
        b_dtype = dtype if b_dtype is None else b_dtype
        if b_dtype is not dtype and not (fp8 and b_dtype in FP8_TYPES):
            raise TypeError(f"{who}: expected B's element type (b_dtype) to be A's ({dtype}) for the F16/BF16 GMMAs, "
                            f"or for fp8 A wb.Float8E4M3FN or wb.Float8E5M2 (an F8 GMMA's B may differ from its A), "
                            f"but got b_dtype={b_dtype!r}.")
        for name, v in (("persistent", persistent), ("pingpong", pingpong), ("block_scales", block_scales),
                        ("overlap", overlap), ("stream_k", stream_k)):
            if type(v) is not bool:
                raise TypeError(f"{who}: expected {name} to be a bool, but got {type(v).__name__} {v!r}.")
        check_config(who, "consumers", consumers, lambda v: v in (1, 2),
                     "1 or 2 consumer warpgroups (the setmaxnreg budget: 40 + 232 x consumers registers a thread "
                     "of a warpgroup within 65,536 a block)")
        check_config(who, "bm", bm, lambda v: v in (64, 128), "64 or 128 (64-row slabs, one per consumer)")
        check_config(who, "bn", bn, lambda v: v % 16 == 0 and 64 <= v <= 256,
                     "a multiple of 16 from 64 to 256 (an SM90 GMMA N whose rows of a 16-bit C the TMA epilogue "
                     "stores in whole chunks of 32, 64 or 128 bytes)")
        bk = 1024 // dtype.bits if bk is None else bk       # 128-byte rows (SW128) unless told
        rows = {16: (16, 32, 64), 8: (32, 64, 128)}[dtype.bits]
        check_config(who, "bk", bk, lambda v: v in rows,
                     f"{', '.join(map(str, rows[:2]))} or {rows[2]} (a K-major SW32/SW64/SW128 shared-memory row of "
                     f"32/64/128 bytes of {dtype.bits}-bit elements)")
        check_config(who, "stages", stages, lambda v: v >= 2,
                     ">= 2 (the producer refills one stage while the consumers' MMAs still read the previous one)")
        check_config(who, "group", group, lambda v: v >= 1, ">= 1 (m-tiles per band of blocks)")
        check_config(who, "cluster", cluster, lambda v: v in (1, 2, 4), "1, 2 or 4 blocks along M")
        if pingpong and (bm not in (64, 128) or consumers != 2):
            raise ValueError(f"HopperGemm: ping-pong consumers each own a whole tile of 64 or 128 rows: expected two "
                             f"consumer warpgroups, but got bm={bm}, consumers={consumers}.")
        if not pingpong and bm != 64 * consumers:
            raise ValueError(f"HopperGemm: each consumer warpgroup computes 64 rows, so bm must be 64 x consumers "
                             f"({64 * consumers}), but got {bm}.")
        if cluster not in (1, 2, 4) or bn % (8 * cluster) or group % cluster:
            raise ValueError(f"HopperGemm: expected cluster 1, 2 or 4 blocks along M that divides group ({group}) and "
                             f"whose slices of B are whole 8-row groups (bn {bn}), but got {cluster}.")
        if (type(regs) is not tuple or len(regs) != 2 or any(type(r) is not int or r % 8 or not 24 <= r <= 256
                                                             for r in regs)
                or 128 * (regs[0] + consumers * regs[1]) > 65536):
            raise ValueError(f"{who}: expected regs=(producer, consumer): setmaxnreg counts, multiples of 8 in "
                             f"[24, 256], whose 128 x (producer + {consumers} x consumer) fit the 65,536 registers of "
                             f"an SM, but got {regs!r}.")
        if overlap and (pingpong or not persistent):
            raise ValueError(f"{who}: overlap stores a tile's C while the same consumers' next tile's first MMAs run: "
                             f"expected persistent blocks (a next tile) and not ping-pong (which already overlaps one "
                             f"consumer's epilogue with the other's MMAs), but got persistent={persistent}, "
                             f"pingpong={pingpong}.")
        if stream_k and (not persistent or pingpong or block_scales or cluster != 1):
            raise ValueError(f"{who}: stream_k splits the k-tiles of the last waves' tiles evenly over the persistent "
                             f"blocks of one cooperative kernel: expected persistent=True and neither ping-pong, "
                             f"block scales nor a cluster, but got persistent={persistent}, pingpong={pingpong}, "
                             f"block_scales={block_scales}, cluster={cluster}.")
        if block_scales and not fp8:
            raise ValueError(f"{who}: block scales are for fp8 operands: expected dtype wb.Float8E4M3FN or "
                             f"wb.Float8E5M2, but got {dtype}.")
        if block_scales and (bk != 128 or bn != 128):
            raise ValueError(f"{who}: block scales (one per 128 K of a row of A, one per 128 x 128 block of B) are "
                             f"promoted once a k-tile into the accumulators of a tile of one 128-column block of B: "
                             f"expected bk=128 and bn=128 (two sets of a k-tile's partial sums beside the "
                             f"accumulators, bn/2 registers a thread each), but got bk={bk}, bn={bn}.")
        # a consumer thread's fp32 accumulators: its warpgroup's rows (a whole tile in ping-pong, else 64) x bn / 128.
        # Past 176 they do not fit beside the rest of the 232-240 registers setmaxnreg gives: ping-pong at 128 x 192
        # spilled 24-88 bytes a thread (H200, ptxas), at 128 x 256 2264 bytes, which ran at 0.04x cuBLAS on an H100
        # (benchmarks/results/ladder-ablation-H100.json), so they are refused rather than run that slowly; 128 x 176
        # (176) spills nothing.  Block scales keep three sets of a 64 x 128 slab's (the sums and two sets of one
        # k-tile's partial sums, taken in turn): 192 registers, no spill in a cooperative kernel (ptxas); ping-pong's
        # consumers spilled 84-116 bytes a thread with them (64 x 128 tiles), and its turns keep the other consumer
        # from filling the promotions' gaps, so block scales are cooperative only.
        acc = (bm if pingpong else 64) * bn // 128
        if block_scales and pingpong:
            raise ValueError(f"{who}: block scales keep three sets of fp32 accumulators (the sums and two k-tiles' "
                             f"partial sums, 192 registers a consumer thread for its 64 x 128 slab), which ping-pong's "
                             f"consumers cannot hold without spilling: use the cooperative kernel (pingpong=False, "
                             f"bm=128: the two consumers' MMAs fill each other's promotions).")
        if acc > _ACC_MAX:
            raise ValueError(f"{who}: expected at most {_ACC_MAX} fp32 accumulators a consumer thread (what fits in "
                             f"setmaxnreg's 232-240 registers without spilling), but bm={bm}, bn={bn}"
                             f"{', ping-pong (a whole tile a warpgroup)' if pingpong else ''} needs {acc}: use a smaller "
                             f"bn or bm=64.")
        self.bm, self.bn, self.bk, self.stages, self.consumers = bm, bn, bk, stages, consumers
        self.group, self.dtype, self.cluster = group, dtype, cluster
        self.b_dtype, self.block_scales = b_dtype, block_scales
        # ping-pong: the consumers take turns at the tensor cores, tile by tile; the blocks are persistent
        self.pingpong, self.persistent = pingpong, persistent or pingpong
        self.overlap, self.regs, self.stream_k = overlap, regs, stream_k
        self._workspaces: dict = {}
        self.atom = self.gmma_atom(bn)
        # ping-pong: one warpgroup's atom, repeated down the tile's bm rows
        self.mma = (wb.make_tiled_mma(self.atom, wb.make_layout((1, 1, 1)), (bm, bn, self.atom.shape_mnk[2]))
                    if pingpong else
                    wb.make_tiled_mma(self.atom, wb.make_layout((consumers, 1, 1))))
        self.threads = 128 * (consumers + 1)
        kind = {64: "SW128", 32: "SW64", 16: "SW32"}[bk * dtype.bits // 16]
        atom = wb.gmma_smem_atom(f"Layout_K_{kind}_Atom", dtype)
        atom_b = atom if b_dtype is dtype else wb.gmma_smem_atom(f"Layout_K_{kind}_Atom", b_dtype)
        # with a cluster, each block loads a 1/cluster slice of B and multicasts it to the cluster's blocks
        self.box = {"A": wb.tile_to_shape(atom, (bm, bk)), "B": wb.tile_to_shape(atom_b, (bn // cluster, bk))}
        self.smem = {"A": wb.tile_to_shape(atom, (bm, bk, stages)), "B": wb.tile_to_shape(atom_b, (bn, bk, stages))}
        # block scales: the accumulator values of each row a thread holds (each row's scale of A, loaded once)
        self.row_groups = _row_groups(self.mma, 128 if pingpong else 128 * consumers, bm) if block_scales else None
        self._kernels: dict = {}
        if self.smem_bytes > SMEM_LIMIT:
            raise ValueError(f"{who}: expected at most {SMEM_LIMIT} bytes of shared memory a block, but {bm}x{bn}x{bk} "
                             f"in {stages} stages with the TMA epilogue's staging needs {self.smem_bytes}.")

    def gmma_atom(self, n):
        """The SS GMMA atom of N = n for this configuration's A and B types (K = 32 bytes of them)."""
        if self.dtype in FP8_TYPES:
            return wb.mma_atom(f"SM90_64x{n}x32_F32{_CODE[self.dtype]}{_CODE[self.b_dtype]}_SS_TN")
        ab = "F16F16" if self.dtype is wb.Float16 else "BF16BF16"
        return wb.mma_atom(f"SM90_64x{n}x16_F32{ab}_SS")

    @property
    def smem_bytes(self):
        """Shared memory of the TMA-epilogue kernel: the stages, their mbarriers, two staging buffers of C."""
        row = max(_staging_row(self.bn, bits) for bits in (16, 32))    # the widest of a 16-bit and a 32-bit C's
        staging = 2 * self.bm * row * (self.consumers if self.pingpong else 1)
        return (self.bm + self.bn) * self.bk * self.stages * self.dtype.bits // 8 + 16 * self.stages + staging

    def epilogue_tiles(self, c_type):
        """For a C of ``c_type``: (en, staging, box, mma): chunks of en columns (128 bytes, one SW128 row, where they
        divide bn; else 64 bytes (SW64) or 32 (SW32): bn = 224 of fp16 is seven 32-column chunks), the two staging
        buffers (bm, en, 2), the TMA store's box (bm, en) and a tiled GMMA of N = en whose C partition is each
        thread's share of a chunk (the same values as the accumulators' chunk, in order)."""
        row = _staging_row(self.bn, c_type.bits)
        en = 8 * row // c_type.bits
        atom = wb.gmma_smem_atom(f"Layout_K_SW{row}_Atom", c_type)
        atom_c = self.gmma_atom(en)
        mma = (wb.make_tiled_mma(atom_c, wb.make_layout((1, 1, 1)), (self.bm, en, atom_c.shape_mnk[2])) if self.pingpong else
               wb.make_tiled_mma(atom_c, wb.make_layout((self.consumers, 1, 1))))
        buffers = 2 * (self.consumers if self.pingpong else 1)    # ping-pong: two for each consumer's own tiles
        return en, wb.tile_to_shape(atom, (self.bm, en, buffers)), wb.tile_to_shape(atom, (self.bm, en)), mma

    def kernel(self, epilogue="tma", c_type=None, scaling=None):
        """The compiled-on-demand kernel for an epilogue ("tma": C's type needed; "registers") and, for fp8, a
        scaling (None, "tensor" or "block")."""
        key = (epilogue, c_type) if scaling is None else (epilogue, c_type, scaling)
        k = self._kernels.get(key)
        if k is None:
            k = self._kernels[key] = make_hopper_gemm(self, epilogue, c_type, scaling)
        return k

    def operands(self, a, b, c, scale_a=None, scale_b=None):
        """(kernel, arguments) for C = A @ B^T (fp8: C = scale_a * scale_b * (A @ B^T)): the TMA epilogue where C's
        rows are 16-byte aligned, else the register one.  A, B, C and the scales are checked first (shapes, element
        types, K-major A and B); where M, N or K is 0 it is (``zero_fill``, (C,)): launch writes what torch gives
        (nothing, or C = 0)."""
        fp8 = self.dtype in FP8_TYPES
        m, n, k = gemm_operands(repr(self), a, b, c, (self.dtype,), (wb.Float32, wb.Float16, wb.BFloat16),
                                k_major=True, k_multiple=128 // self.dtype.bits,
                                b_types=(self.b_dtype,) if fp8 else None)
        scaling, scales = self.scale_operands(m, n, k, scale_a, scale_b)
        if not (m and n and k):
            return zero_fill, (c,)
        ta, tb = self.tma(a, b)
        cc = c_operand(c)
        k = ta.shape[1]
        if self.stream_k:
            scales = scales + self.workspace(c, self.grid(m, n)[0])
        if tma_storable(cc):
            _, _, box, _ = self.epilogue_tiles(cc.element_type)
            return (self.kernel("tma", cc.element_type, scaling),
                    (ta, tb, wb.make_tma_load(cc, box), cc, k) + scales)
        return self.kernel("registers", None, scaling), (ta, tb, cc, k) + scales

    def workspace(self, c, blocks):
        """Stream-K's (ws, cnt) for a launch of ``blocks`` blocks writing C: two bm x bn fp32 slots of partial sums
        a block and one arrival counter per tile of the last two waves, on C's device (torch or cupy on a GPU,
        numpy for the CPU executor).  The counters start at zero and each tile's last block sets its counter back
        to zero, so a GPU's pair is allocated once per device and kept: launches on one stream reuse it in turn,
        but two launches of this configuration at once on different streams would share it (use a configuration
        object a stream)."""
        nws, ncnt = blocks * 2 * self.bm * self.bn, 2 * blocks
        if type(c).__module__.startswith("torch") and c.is_cuda:
            import torch
            key = ("torch", c.device.index, blocks)
            if key not in self._workspaces:
                self._workspaces[key] = (torch.empty(nws, dtype=torch.float32, device=c.device),
                                         torch.zeros(ncnt, dtype=torch.int32, device=c.device))
            pair = self._workspaces[key]
        elif type(c).__module__ == "numpy" or not wb.gpu_available():
            import numpy as np  # the CPU executor: fresh zeros each launch
            pair = (np.zeros(nws, np.float32), np.zeros(ncnt, np.int32))
        else:
            import cupy
            key = ("cupy", cupy.cuda.runtime.getDevice(), blocks)
            if key not in self._workspaces:
                self._workspaces[key] = (cupy.empty(nws, cupy.float32), cupy.zeros(ncnt, cupy.int32))
            pair = self._workspaces[key]
        return tuple(wb.from_dlpack(x) for x in pair)

    def scale_operands(self, m, n, k, scale_a, scale_b):
        """(scaling, (scale_a, scale_b) as kernel arguments) of an fp8 GEMM: (None, ()) without scales; "tensor":
        one fp32 each (any shape of one element, as ``torch._scaled_mm`` takes them); "block" (``block_scales``):
        scale_a (M, ceil(K/128)) and scale_b (ceil(N/128), ceil(K/128)) fp32, any strides.  Raises naming what was
        expected and what was got."""
        who = repr(self)
        if scale_a is None and scale_b is None:
            if self.block_scales:
                raise ValueError(f"{who}: expected block scales scale_a (M, ceil(K/128)) = ({m}, {-(-k // 128)}) and "
                                 f"scale_b (ceil(N/128), ceil(K/128)) = ({-(-n // 128)}, {-(-k // 128)}), fp32, but got "
                                 f"none.")
            return None, ()
        if self.dtype not in FP8_TYPES:
            raise TypeError(f"{who}: scales are for fp8 operands (C = scale_a * scale_b * A @ B^T); fp16/bf16 take "
                            f"none, but got scale_a={type(scale_a).__name__}, scale_b={type(scale_b).__name__}.")
        if scale_a is None or scale_b is None:
            raise ValueError(f"{who}: expected both scale_a and scale_b (or neither: unit scales), but got only "
                             f"{'scale_a' if scale_b is None else 'scale_b'}.")
        kb = -(-k // 128)
        want = {"scale_a": (m, kb), "scale_b": (-(-n // 128), kb)}
        out = []
        for name, x in (("scale_a", scale_a), ("scale_b", scale_b)):
            if type(x) is not wb.Tensor and not hasattr(x, "__dlpack__"):
                raise TypeError(f"{who}: expected {name} to be an fp32 tensor (wb.Tensor or any __dlpack__ object; "
                                f"{'block scales' if self.block_scales else 'one element, as torch._scaled_mm takes'}"
                                f"), but got {type(x).__name__}.")
            t = x if type(x) is wb.Tensor else wb.from_dlpack(x)
            shape = tuple(t.shape)
            if t.element_type is not wb.Float32:
                raise TypeError(f"{who}: expected {name} of element type Float32, but got {t.element_type}.")
            if self.block_scales:
                if shape != want[name]:
                    raise ValueError(f"{who}: expected block scales {name} of shape {want[name]} ("
                                     f"{'(M, ceil(K/128))' if name == 'scale_a' else '(ceil(N/128), ceil(K/128))'}), "
                                     f"but got {shape}.")
                st = t.stride
                lead = 1 if st[1] == 1 else 0 if st[0] == 1 else None
                out.append(t.mark_layout_dynamic(leading_dim=lead) if m and n and k else t)
            else:
                if math.prod(shape) != 1:
                    raise ValueError(f"{who}: expected {name} to hold one fp32 scale (per-tensor scaling, as "
                                     f"torch._scaled_mm takes it; block scales need HopperGemm(block_scales=True)), "
                                     f"but got shape {shape}.")
                if shape != (1,):     # the kernel reads element 0 of a rank-1 tensor
                    if type(x) is wb.Tensor or not hasattr(x, "reshape"):
                        raise ValueError(f"{who}: expected {name} as a wb.Tensor of shape (1,) (or a torch/numpy "
                                         f"tensor of one element, any shape), but got a wb.Tensor of shape {shape}.")
                    t = wb.from_dlpack(x.reshape(1))
                out.append(t)
        return ("block" if self.block_scales else "tensor"), tuple(out)

    def launch(self, a, b, c, scale_a=None, scale_b=None):
        """C = A @ B^T, or for fp8 C = scale_a * scale_b * (A @ B^T) (``scale_operands``)."""
        kern, args = self.operands(a, b, c, scale_a, scale_b)
        m, n = c.shape[0], c.shape[1]
        if len(args) == 1:
            finish_degenerate(c, m, n, 0)
            return
        kern[self.grid(m, n), (self.threads, 1, 1)](*args)

    def tma(self, a, b):
        """The two TMA descriptors of one launch (A's and B's boxes)."""
        return wb.make_tma_load(a, self.box["A"]), wb.make_tma_load(b, self.box["B"])

    def grid(self, m, n):
        """Blocks: a cluster per `cluster` m-tiles of one n-tile (the last may reach past M), or as many clusters as
        the GPU holds at once (persistent)."""
        cl = self.cluster
        clusters = math.ceil(m / (self.bm * cl)) * math.ceil(n / self.bn)
        if self.persistent:
            sms = _sm_count() if wb.gpu_available() else 2 * cl
            if self.stream_k:            # every SM: fewer tiles than SMs are split along K over all of them
                return (sms, 1, 1)
            return (min(clusters, sms // cl) * cl, 1, 1)
        return (clusters * cl, 1, 1)

    def __repr__(self):
        return (f"HopperGemm({self.bm}x{self.bn}x{self.bk}, stages={self.stages}, consumers={self.consumers}, "
                f"group={self.group}, {self.dtype}{'' if self.b_dtype is self.dtype else f' x {self.b_dtype}'}"
                f"{', block scales' if self.block_scales else ''}"
                f"{', ping-pong' if self.pingpong else ', persistent' if self.persistent else ''}"
                f"{f', cluster={self.cluster}' if self.cluster > 1 else ''}"
                f"{', overlap' if self.overlap else ''}{', stream-K' if self.stream_k else ''}"
                f"{f', regs={self.regs[0]}/{self.regs[1]}' if self.regs != (40, 232) else ''})")


FP8_TYPES = (wb.Float8E4M3FN, wb.Float8E5M2)
_CODE = {wb.Float8E4M3FN: "E4M3", wb.Float8E5M2: "E5M2"}
_ACC_MAX = 176      # fp32 accumulators a consumer thread (HopperGemm's check says why)


def _staging_row(bn, bits):
    """Bytes of one row of a TMA-epilogue chunk of a bn-column tile of ``bits``-bit C: 128 (SW128) where they divide
    the tile's row, else 64 (SW64) or 32 (SW32; bn is a multiple of 16)."""
    return next(r for r in (128, 64, 32) if bn * bits // 8 % r == 0)


def _row_groups(mma, threads, bm):
    """The accumulator values a thread holds, grouped by row of the tile: the same value indices for every thread
    (checked), so that a thread loads each of its rows' block scales once."""
    tv = mma.tv_layout_C_tiled
    nv = tv[1].size
    groups = None
    for t in range(threads):
        rows: dict = {}
        for v in range(nv):
            rows.setdefault(tv((t, v)) % bm, []).append(v)
        g = tuple(tuple(vs) for _, vs in sorted(rows.items()))
        if groups is None:
            groups = g
        elif g != groups:
            raise AssertionError(f"thread {t} groups its accumulators by row unlike thread 0: {g} != {groups}")
    return groups


def _sm_count():
    import cupy
    return cupy.cuda.Device().attributes["MultiProcessorCount"]


def tma_storable(c) -> bool:
    """A row-major C whose rows TMA can store: 16-byte aligned start and row pitch, 16-bit or 32-bit elements."""
    if c.element_type.bits not in (16, 32) or c.memspace not in ("gmem", "generic"):
        return False
    st = c.stride
    nb = c.element_type.bits // 8
    return st[1] == 1 and c.iterator.address % 16 == 0 and (st[0] * nb) % 16 == 0


def make_hopper_gemm(cfg: HopperGemm, epilogue="registers", c_type=None, scaling=None):
    """The kernel of a Hopper rung (``cfg.launch``/``cfg.operands`` pick the epilogue by C): ``"registers"``:
    ``kern[cfg.grid(m, n), (cfg.threads, 1, 1)](tma_a, tma_b, C, k)``; ``"tma"``: ``(tma_a, tma_b, tma_c, C, k)``,
    C of ``c_type`` and tma_c its TMA descriptor for the box of ``cfg.epilogue_tiles(c_type)``.  fp8 with
    ``scaling`` "tensor" or "block": two more arguments, scale_a and scale_b (``cfg.scale_operands``)."""
    if epilogue not in ("tma", "registers"):
        raise ValueError(f"make_hopper_gemm: expected epilogue 'tma' or 'registers', but got {epilogue!r}.")
    if scaling not in (None, "tensor", "block") or (scaling is not None and cfg.dtype not in FP8_TYPES):
        raise ValueError(f"make_hopper_gemm: expected scaling None, or for fp8 'tensor' or 'block', but got "
                         f"{scaling!r} for {cfg.dtype}.")
    if (scaling == "block") != cfg.block_scales:
        raise ValueError(f"make_hopper_gemm: scaling 'block' goes with HopperGemm(block_scales=True), but got "
                         f"scaling={scaling!r} for {cfg!r}.")
    if epilogue == "tma" and c_type not in (wb.Float16, wb.BFloat16, wb.Float32):
        raise ValueError(f"make_hopper_gemm: the TMA epilogue stages C in shared memory, so it needs C's element type "
                         f"(c_type=wb.Float16, wb.BFloat16 or wb.Float32), but got {c_type!r}.")
    bm, bn, bk, S = cfg.bm, cfg.bn, cfg.bk, cfg.stages
    mma, SA, SB = cfg.mma, cfg.smem["A"], cfg.smem["B"]
    group = cfg.group
    persistent = cfg.persistent
    stage_bytes = (bm + bn) * bk * cfg.dtype.bits // 8
    consumers = cfg.consumers
    dtype = cfg.dtype
    cl = cfg.cluster
    everyone = (1 << cl) - 1        # the multicast mask of the whole cluster
    pp = cfg.pingpong
    turn = 2 if pp else 1           # ping-pong: each consumer takes every other tile of the block
    b_dtype = cfg.b_dtype
    block, per_tensor = scaling == "block", scaling == "tensor"
    groups = cfg.row_groups

    use_tma = epilogue == "tma"
    en, SC, _, mma_c = cfg.epilogue_tiles(c_type) if use_tma else (None, None, None, None)
    chunks = bn // en if use_tma else 0
    # a thread's share of one chunk (the same for every staging buffer)
    chunk_shape = mma_c.get_slice(0).partition_C(wb.make_layout((bm, en))).shape if use_tma else None
    # overlap: a tile's C, rounded to C's type, waits in registers until the next tile's first k-tiles' MMAs are
    # issued: a 16-bit C all of it (half the accumulators' count); a 32-bit C its last half of the chunks (as many
    # registers; all of it would need as many as the accumulators, no room in 240), the first half stored at once
    overlap = cfg.overlap and use_tma
    kept = chunks if overlap and c_type.bits == 16 else chunks // 2     # the chunks held: direct, ..., chunks - 1
    direct = chunks - kept
    producer_regs, consumer_regs = cfg.regs
    sk = cfg.stream_k

    @wb.kernel
    def _consumers_meet(wg):
        """The threads that write and store a staging chunk meet: both consumers (named barrier 1), or in ping-pong
        consumer wg alone (named barrier 3 + wg)."""
        if pp:
            for w in range(consumers):
                if wg == w:
                    wb.barrier(3 + w, 128)
        else:
            wb.barrier(1, 128 * consumers)

    @wb.kernel
    def _take_turn(wg):
        """Ping-pong: wait until the other consumer has issued its last MMAs (named barrier 1 + wg), so that the
        mbarrier phases this one waits on are the next ones and the two tiles' MMAs do not interleave."""
        for w in range(consumers):
            if wg == w:
                wb.barrier(1 + w, 256)

    @wb.kernel
    def _pass_turn(wg):
        for w in range(consumers):
            if wg == w:
                wb.barrier_arrive(1 + (1 - w), 256)

    @wb.kernel
    def _store_chunk(part, sC, thr_c, tma_c, leader, wg, row0, col0, j):
        """Chunk j (static) of a tile, part its values in C's type: once its staging buffer (used two chunks ago)
        has been read by its TMA store, the consumers write part into it and make it visible to the TMA unit; then
        the leader thread stores it.  An odd number of chunks a tile (a 16-bit C's bn = 64, 160, 176, 192, 224: 1,
        5, 11, 3, 7) ends a tile on buffer 0, where the next tile's chunk 0 begins: that one waits for every store
        (the last one may still read it)."""
        if leader:
            wb.tma_store_wait_group(0 if j == 0 and chunks % 2 else 1)
        _consumers_meet(wg)
        buf = sC[None, None, j % 2 + 2 * wg] if pp else sC[None, None, j % 2]
        wb.copy(part, thr_c.partition_C(buf))
        wb.fence_proxy_async()
        _consumers_meet(wg)
        if leader:
            wb.tma_store(tma_c, buf, (row0, col0 + j * en))
            wb.tma_store_commit_group()

    @wb.kernel
    def _round_chunk(acc, part, j):
        """The accumulators' chunk j (static) rounded into part (C's type), value for value, each m-block
        (epilogue_tiles); unrolled, so both stay in registers."""
        nv, nacc = wb.size(part, mode=0), wb.size(acc, mode=0)     # values per atom call: a chunk's, a tile's
        for e in range(wb.size(part)):
            part[e] = acc[(e // nv) * nacc + j * nv + e % nv]

    @wb.kernel
    def _store_by_tma(acc, sC, thr_c, tma_c, leader, wg, row0, col0):
        """The tile, a chunk of en columns at a time (``_store_chunk``)."""
        for j in range(chunks):
            part = wb.make_fragment(chunk_shape, sC.element_type)
            _round_chunk(acc, part, j)
            _store_chunk(part, sC, thr_c, tma_c, leader, wg, row0, col0, j)

    @wb.kernel
    def _release(empty, i):
        """A consumer warpgroup is done with stage i: one arrival on empty[i] of every block of the cluster (each
        block's producer fills the stage in all of them)."""
        if cl == 1:
            wb.mbarrier_arrive(empty, i)
        else:
            for c in range(cl):
                wb.mbarrier_arrive(empty, i, cta=c)

    @wb.kernel
    def _block_factors(fs, coords, scale_a, scale_b, kt, n0, m_size):
        """Block scales: fs[g] = scale_a[row, kt] * scale_b[n0, kt] for each row group g of the thread's accumulators
        (one 128 x 128 block of B: bn = bk = 128); rows past M read row M - 1's (not stored)."""
        sb = scale_b[n0, kt]
        for g in range(len(groups)):
            fs[g] = scale_a[min(coords[groups[g][0]][0], m_size - 1), kt] * sb

    @wb.kernel
    def _issue_block(part, fs, tCsA, tCsB, tCc, full, scale_a, scale_b, kt, it, n0, m_size):
        """Block scales: k-tile kt (the it-th stage filled) into part, from zero (the first k-block's scale-d), its
        rows' factors into fs: loaded now, used once the MMAs are complete, so their latency hides behind them."""
        _block_factors(fs, tCc, scale_a, scale_b, kt, n0, m_size)
        s = it % S
        wb.mbarrier_wait(full, s, (it // S) % 2)
        wb.gemm(mma, part, tCsA[None, None, None, s], tCsB[None, None, None, s], part, accumulate=False)
        wb.warpgroup_commit_group()

    @wb.kernel
    def _promote(acc, part, fs):
        """Block scales (DeepSeek-V3's fine-grained scaling): a k-tile's partial sums, computed from zero by the
        tensor cores, added to the fp32 accumulators times their rows' factors fs (``_block_factors``)."""
        for g in range(len(groups)):
            vals = groups[g]
            for i in range(len(vals)):
                acc[vals[i]] = acc[vals[i]] + part[vals[i]] * fs[g]

    @wb.kernel
    def _promote_when_done(acc, part, fs, empty, i, ctid, pending):
        """Block scales: once at most ``pending`` (static) MMA groups are in flight, part's (the i-th stage's) among
        the complete ones, release that stage and promote part."""
        wb.warpgroup_wait_group(pending)
        if ctid % 128 == 0:
            _release(empty, i % S)
        _promote(acc, part, fs)

    @wb.kernel
    def _unit_start(b, base, rem):
        """Stream-K: the first unit of block b, when units = base x blocks + rem are dealt out evenly (the first
        rem blocks one more)."""
        return b * base + min(b, rem)

    @wb.kernel
    def _unit_owner(x, base, rem):
        """Stream-K: the block whose units include unit x (_unit_start's inverse)."""
        return x // (base + 1) if x < rem * (base + 1) else rem + (x - rem * (base + 1)) // max(base, 1)

    @wb.kernel
    def _fixup(acc, ws, cnt, last, ctid, st, ktiles, base, rem):
        """Stream-K: this block computed only part of the k-tiles of stream-K tile st.  The parts are added in one
        order, the head's (k-tiles from 0, by block b_lo) first, then the others' by block, whichever block adds
        them, so the sums never depend on timing; no block ever waits for another:

        * the head's block (usually the last to finish: it computes the head at the end of its units, the others
          theirs at the start) first looks at cnt[st]: if every other part is already counted, it adds them to its
          own accumulators and stores the tile, having written nothing;
        * otherwise each block writes its partial sums to its slot of the workspace ws (slot 0: the first segment
          of its units, 1: its last) and counts itself on cnt[st]; the last to count adds all the parts from ws and
          stores the tile.

        Returns 1 to the block that stores the tile, 0 to the others."""
        nv = wb.size(acc)
        nthr = 128 * consumers
        t_u0 = st * ktiles
        me = wb.block_idx().x
        b_lo = _unit_owner(t_u0, base, rem)
        b_hi = _unit_owner(t_u0 + ktiles - 1, base, rem)
        wb.barrier(1, nthr)  # every consumer has read the flag of this block's previous fixup before it is rewritten
        if ctid == 0:        # the head's block: has every other part been counted?  (an add of 0: an acquire read)
            last[0] = 0
            if me == b_lo:
                if wb.atomic_add(cnt, st, 0) == b_hi - b_lo:
                    cnt[st] = 0              # nobody counts it again: ready for the next launch
                    last[0] = 2
        wb.barrier(1, nthr)
        flag = last[0]
        if flag == 2:                        # the head, last: its own accumulators, then the others' parts in order
            for jb in wb.range_dynamic(b_lo + 1, b_hi + 1):
                joff = (jb * 2 + (0 if _unit_start(jb, base, rem) >= t_u0 else 1)) * nv * nthr + ctid
                for v in range(nv):
                    acc[v] = acc[v] + ws[joff + v * nthr]
        else:
            slot = 0 if _unit_start(me, base, rem) >= t_u0 else 1
            off = (me * 2 + slot) * nv * nthr + ctid
            for v in range(nv):              # coalesced: value v of every consumer thread side by side
                ws[off + v * nthr] = acc[v]
            wb.barrier(1, nthr)
            if ctid == 0:    # after the barrier: its acquire-release add publishes every consumer's partial sums
                if wb.atomic_add(cnt, st, 1) == b_hi - b_lo:
                    cnt[st] = 0              # the last: the counter is ready for the next launch
                    last[0] = 1
            wb.barrier(1, nthr)
            flag = last[0]
            if flag == 1:
                acc.fill(0.0)
                for jb in wb.range_dynamic(b_lo, b_hi + 1):
                    joff = (jb * 2 + (0 if _unit_start(jb, base, rem) >= t_u0 else 1)) * nv * nthr + ctid
                    for v in range(nv):
                        acc[v] = acc[v] + ws[joff + v * nthr]
        return 1 if flag > 0 else 0

    @wb.kernel(launch_bounds=cfg.threads)
    def mainloop(tma_a, tma_b, tma_c, C, k, scale_a, scale_b, ws, cnt):
        """C = A @ B^T: a producer warpgroup's first thread streams k-tiles of A and B into a ring of shared stages by
        TMA; the consumer warpgroups multiply each stage with wgmma as soon as its mbarrier says its bytes landed, and
        release it when those MMAs are complete; then the epilogue writes the accumulators to C."""
        tid = wb.thread_idx().x
        sA = wb.shared_tensor(dtype, SA)
        sB = wb.shared_tensor(b_dtype, SB)
        full = wb.shared_tensor(wb.Uint64, S)
        empty = wb.shared_tensor(wb.Uint64, S)
        m_size, n_size = wb.shape(C)[0], wb.shape(C)[1]
        # a cluster computes `cl` m-tiles of one n-tile (sharing its B tile); block `rank` the rank-th of them
        mtiles, ntiles = wb.ceil_div(m_size, bm * cl), wb.ceil_div(n_size, bn)
        ktiles = wb.ceil_div(k, bk)
        rank = wb.block_rank_in_cluster() if cl > 1 else 0
        if tid == 0:
            for s in range(S):
                wb.mbarrier_init(full, s, 1)
                wb.mbarrier_init(empty, s, (1 if pp else consumers) * cl)   # each block's users of stage s release it
            wb.mbarrier_init_fence()
        if cl > 1:
            wb.cluster_sync()        # the peers' mbarriers are initialized before any multicast or remote arrival
        else:
            wb.sync_threads()
        first = wb.block_idx().x // cl
        step = wb.grid_dim().x // cl if persistent else mtiles * ntiles
        tiles = mtiles * ntiles
        # the schedule: whole tiles first = first + i * step below dp; then (stream_k) the units (a k-tile of a
        # tile) of the tiles from dp on, split evenly: this block's are u_begin <= u < u_end (_unit_start)
        dp = tiles
        u_begin = 0
        u_end = 0
        if sk:
            nblk = wb.grid_dim().x
            # a launch of more blocks than the workspace has slots for (not cfg.grid's) runs whole tiles only:
            # slower, never out of its bounds
            if tiles % nblk != 0 and wb.shape(ws)[0] >= nblk * (2 * bm * bn) and wb.shape(cnt)[0] >= 2 * nblk:
                dp = max(tiles // nblk - 1, 0) * nblk
            units = (tiles - dp) * ktiles
            base = units // nblk
            rem = units % nblk
            u_begin = _unit_start(wb.block_idx().x, base, rem)
            u_end = _unit_start(wb.block_idx().x + 1, base, rem)
        if tid < 128:
            wb.warpgroup_reg_dealloc(producer_regs)
            if tid == 0:
                it = 0
                tile = first
                u = u_begin
                t = 0
                k0 = 0
                k1 = 0
                while tile < dp or u < u_end:
                    if tile < dp:                    # a whole tile
                        t = tile
                        k0 = 0
                        k1 = ktiles
                        tile += step
                    else:                            # stream-K: k-tiles k0..k1 of tile t
                        t = dp + u // ktiles
                        k0 = u % ktiles
                        k1 = min(ktiles, k0 + u_end - u)
                        u += k1 - k0
                    m0, n0 = block_tile(t, mtiles, ntiles, group // cl)
                    m0 = m0 * cl + rank
                    for kt in wb.range_dynamic(k0, k1):
                        s = it % S
                        if it >= S:
                            wb.mbarrier_wait(empty, s, (it // S + 1) % 2)
                        wb.mbarrier_arrive_and_expect_tx(full, s, stage_bytes)
                        wb.tma_load(tma_a, sA[None, None, s], (m0 * bm, kt * bk), full, s)
                        if cl == 1:
                            wb.tma_load(tma_b, sB[None, None, s], (n0 * bn, kt * bk), full, s)
                        else:                # this block's slice of B, into every block of the cluster
                            wb.tma_load(tma_b, wb.local_tile(sB[None, None, s], (bn // cl, bk), (rank, 0)),
                                        (n0 * bn + rank * (bn // cl), kt * bk), full, s, multicast=everyone)
                        it += 1
        else:
            wb.warpgroup_reg_alloc(consumer_regs)
            ctid = tid - 128
            wg = ctid // 128 if pp else 0          # ping-pong: this consumer's tiles are the block's j = wg, wg + 2, ...
            lane = ctid % 128 if pp else ctid
            thr = mma.get_slice(lane)
            tCsA = thr.partition_A(sA)
            tCsB = thr.partition_B(sB)
            if use_tma:
                sC = wb.shared_tensor(C.element_type, SC)
                thr_c = mma_c.get_slice(lane)
            if sk:
                last = wb.shared_tensor(wb.Int32, 1)     # the fixup's verdict, from the thread that counted
            if per_tensor:
                unit = scale_a[0] * scale_b[0]     # rounded to fp32 once, then each accumulator times it
            if overlap:      # the previous tile's C, chunk by chunk, and where it goes (prow < 0: none pending)
                held = ()
                for _h in range(kept):
                    held = held + (wb.make_fragment(chunk_shape, C.element_type),)
                prow = -1
                pcol = 0
            j = wg
            tile = first + wg * step
            u = u_begin
            t = 0
            k0 = 0
            k1 = 0
            it = 0
            while tile < dp or u < u_end:
                if tile < dp:                        # a whole tile (ping-pong: this consumer's every other one)
                    t = tile
                    k0 = 0
                    k1 = ktiles
                    tile += step * turn
                else:                                # stream-K: k-tiles k0..k1 of tile t
                    t = dp + u // ktiles
                    k0 = u % ktiles
                    k1 = min(ktiles, k0 + u_end - u)
                    u += k1 - k0
                m0, n0 = block_tile(t, mtiles, ntiles, group // cl)
                m0 = m0 * cl + rank
                gC = wb.local_tile(C, (bm, bn), (m0, n0))
                acc = mma.make_fragment_C(thr.partition_C(gC))
                acc.fill(0.0)
                if pp and j > 0:
                    _take_turn(wg)
                if pp:
                    it = j * ktiles                # the producer's count of stages filled before this tile's
                if block:
                    # each k-tile's sums alone, in one of two sets of registers taken in turn, complete, then scaled
                    # into the accumulators: k-tile kt + 1's MMAs are issued before kt's are awaited and promoted,
                    # so the tensor cores work while the promotion runs
                    cC = wb.local_tile(wb.make_identity_tensor(wb.shape(C)), (bm, bn), (m0, n0))
                    tCc = thr.partition_C(cC)
                    pa = mma.make_fragment_C(thr.partition_C(gC))
                    pb = mma.make_fragment_C(thr.partition_C(gC))
                    fa = wb.make_fragment((len(groups),), wb.Float32)
                    fb = wb.make_fragment((len(groups),), wb.Float32)
                    it0 = it
                    _issue_block(pa, fa, tCsA, tCsB, tCc, full, scale_a, scale_b, k0, it0, n0, m_size)
                    if overlap:   # the previous tile's held C goes out while the first k-tile's MMAs run
                        for h in range(kept):
                            if prow >= 0:
                                _store_chunk(held[h], sC, thr_c, tma_c, lane == 0, wg, prow, pcol, direct + h)
                        prow = -1
                    pairs = (k1 - k0 - 1) // 2
                    for q in wb.range_dynamic(pairs):     # no branch inside: ptxas keeps the wgmma pipelined
                        kp = k0 + 2 * q                      # pa holds k-tile kp (issued); kp + 1 goes to pb
                        i = it0 + 2 * q
                        _issue_block(pb, fb, tCsA, tCsB, tCc, full, scale_a, scale_b, kp + 1, i + 1, n0, m_size)
                        _promote_when_done(acc, pa, fa, empty, i, ctid, 1)
                        _issue_block(pa, fa, tCsA, tCsB, tCc, full, scale_a, scale_b, kp + 2, i + 2, n0, m_size)
                        _promote_when_done(acc, pb, fb, empty, i + 1, ctid, 1)
                    kl = k0 + 2 * pairs                      # the last one or two k-tiles: kl in pa
                    il = it0 + 2 * pairs
                    if kl + 1 < k1:
                        _issue_block(pb, fb, tCsA, tCsB, tCc, full, scale_a, scale_b, kl + 1, il + 1, n0, m_size)
                        _promote_when_done(acc, pa, fa, empty, il, ctid, 1)
                        _promote_when_done(acc, pb, fb, empty, il + 1, ctid, 0)
                    else:
                        _promote_when_done(acc, pa, fa, empty, il, ctid, 0)
                    it = it0 + k1 - k0
                else:
                    for kt in wb.range_dynamic(k0, k1):
                        s = it % S
                        wb.mbarrier_wait(full, s, (it // S) % 2)
                        wb.gemm(mma, acc, tCsA[None, None, None, s], tCsB[None, None, None, s], acc)   # its k-blocks
                        wb.warpgroup_commit_group()
                        if overlap:   # while they run, held chunk kt - k0 of the previous tile's C goes out
                            for h in range(kept):
                                if prow >= 0 and kt - k0 == h:
                                    _store_chunk(held[h], sC, thr_c, tma_c, lane == 0, wg, prow, pcol, direct + h)
                        wb.warpgroup_wait_group(1)       # the previous k-tile's MMAs are complete: release its stage
                        if kt > k0 and ctid % 128 == 0:
                            _release(empty, (it + S - 1) % S)
                        it += 1
                if pp:    # issued (not complete): the other consumer's MMAs queue behind these, then run while
                    _pass_turn(wg)                 # this one stores
                if not block:
                    wb.warpgroup_wait_group(0)
                    if ctid % 128 == 0:
                        _release(empty, (it + S - 1) % S)
                if overlap and not block:
                    for h in range(kept):            # what fewer k-tiles than held chunks left of the previous tile
                        if prow >= 0 and k1 - k0 <= h:
                            _store_chunk(held[h], sC, thr_c, tma_c, lane == 0, wg, prow, pcol, direct + h)
                    # all stored: a stream-K part of a tile (nothing to hold) must not store them again, which would
                    # also break the staging buffers' alternation (chunk direct after chunks - 1 in one buffer)
                    prow = -1
                whole = 1
                if sk:
                    if k1 - k0 < ktiles:             # a part of tile t: the last of its blocks to finish adds them
                        whole = _fixup(acc, ws, cnt, last, ctid, t - dp, ktiles, base, rem)
                if whole == 1:
                    if per_tensor:
                        for h in range(wb.size(acc) // 32):     # unrolled (static indices: registers, no local memory)
                            for v in range(32):
                                acc[h * 32 + v] = acc[h * 32 + v] * unit
                    if overlap:
                        for h in range(direct):      # a 32-bit C's first half: now, the tensor cores idle
                            part = wb.make_fragment(chunk_shape, C.element_type)
                            _round_chunk(acc, part, h)
                            _store_chunk(part, sC, thr_c, tma_c, lane == 0, wg, m0 * bm, n0 * bn, h)
                        for h in range(kept):
                            _round_chunk(acc, held[h], direct + h)
                        prow = m0 * bm
                        pcol = n0 * bn
                    elif use_tma:
                        _store_by_tma(acc, sC, thr_c, tma_c, lane == 0, wg, m0 * bm, n0 * bn)
                    else:
                        cC = wb.local_tile(wb.make_identity_tensor(wb.shape(C)), (bm, bn), (m0, n0))
                        store_tile(acc, thr.partition_C(gC), thr.partition_C(cC), wb.shape(C))
                j += turn
            if overlap:
                for h in range(kept):                # the block's last tile
                    if prow >= 0:
                        _store_chunk(held[h], sC, thr_c, tma_c, lane == 0, wg, prow, pcol, direct + h)
            if use_tma and lane == 0:
                wb.tma_store_wait_group(0)     # the staging buffers stay until the last store has read them
        if cl > 1:
            wb.cluster_sync()    # no block leaves while a peer may still arrive on its mbarriers

    if sk and use_tma and scaling:
        @wb.kernel(launch_bounds=cfg.threads)
        def gemm_tma_wgmma(tma_a, tma_b, tma_c, C, k, scale_a, scale_b, ws, cnt):
            """Stream-K: C = scale_a * scale_b * (A @ B^T) of fp8 A and B, the epilogue by TMA stores."""
            mainloop(tma_a, tma_b, tma_c, C, k, scale_a, scale_b, ws, cnt)
    elif sk and use_tma:
        @wb.kernel(launch_bounds=cfg.threads)
        def gemm_tma_wgmma(tma_a, tma_b, tma_c, C, k, ws, cnt):
            """Stream-K: C = A @ B^T, the epilogue through shared memory and TMA stores."""
            mainloop(tma_a, tma_b, tma_c, C, k, None, None, ws, cnt)
    elif sk and scaling:
        @wb.kernel(launch_bounds=cfg.threads)
        def gemm_tma_wgmma(tma_a, tma_b, C, k, scale_a, scale_b, ws, cnt):
            """Stream-K: C = scale_a * scale_b * (A @ B^T) of fp8 A and B, each thread storing its values."""
            mainloop(tma_a, tma_b, None, C, k, scale_a, scale_b, ws, cnt)
    elif sk:
        @wb.kernel(launch_bounds=cfg.threads)
        def gemm_tma_wgmma(tma_a, tma_b, C, k, ws, cnt):
            """Stream-K: C = A @ B^T, each thread storing its accumulators (predicated at C's edges)."""
            mainloop(tma_a, tma_b, None, C, k, None, None, ws, cnt)
    elif use_tma and scaling:
        @wb.kernel(launch_bounds=cfg.threads, cluster=(cl, 1, 1))
        def gemm_tma_wgmma(tma_a, tma_b, tma_c, C, k, scale_a, scale_b):
            """C = scale_a * scale_b * (A @ B^T) of fp8 A and B, the epilogue through shared memory and TMA stores."""
            mainloop(tma_a, tma_b, tma_c, C, k, scale_a, scale_b, None, None)
    elif use_tma:
        @wb.kernel(launch_bounds=cfg.threads, cluster=(cl, 1, 1))
        def gemm_tma_wgmma(tma_a, tma_b, tma_c, C, k):
            """C = A @ B^T, the epilogue through shared memory and TMA stores."""
            mainloop(tma_a, tma_b, tma_c, C, k, None, None, None, None)
    elif scaling:
        @wb.kernel(launch_bounds=cfg.threads, cluster=(cl, 1, 1))
        def gemm_tma_wgmma(tma_a, tma_b, C, k, scale_a, scale_b):
            """C = scale_a * scale_b * (A @ B^T) of fp8 A and B, each thread storing its values (predicated)."""
            mainloop(tma_a, tma_b, None, C, k, scale_a, scale_b, None, None)
    else:
        @wb.kernel(launch_bounds=cfg.threads, cluster=(cl, 1, 1))
        def gemm_tma_wgmma(tma_a, tma_b, C, k):
            """C = A @ B^T, each thread storing its accumulators (predicated at C's edges)."""
            mainloop(tma_a, tma_b, None, C, k, None, None, None, None)

    return gemm_tma_wgmma


def c_operand(c):
    """C for a Hopper rung, dynamic in M and N (one compiled kernel for every size) but with N's divisibility (up to
    8) kept, so that the epilogue's stores of a thread's adjacent columns are proven vector stores; a wb.Tensor
    passes as it is."""
    if type(c) is wb.Tensor:
        return c
    t = wb.from_dlpack(c, assumed_align=16)
    n = t.shape[1]
    # a row-major C says so (N = 1 or M = 1 leave its order ambiguous: both strides 1)
    order = (0, 1) if t.stride[1] == 1 else None
    return (t.mark_compact_shape_dynamic(mode=0, stride_order=order)
            .mark_compact_shape_dynamic(mode=1, stride_order=order, divisibility=math.gcd(n, 8) or 8))


_CONFIGS: dict = {}


def _rung(name, title, cfg):
    cfg = _CONFIGS.setdefault(repr(cfg), cfg)    # one configuration object, and its compiled kernels, per rung

    def kernel_for(ops):
        return cfg.kernel("tma", ops[3].element_type) if len(ops) == 5 else cfg.kernel("registers")

    def launch(*ops):
        if len(ops) == 1:                   # M, N or K = 0 (cfg.operands)
            finish_degenerate(ops[0], ops[0].shape[0], ops[0].shape[1], 0)
            return
        c = ops[-2]
        kernel_for(ops)[cfg.grid(c.shape[0], c.shape[1]), (cfg.threads, 1, 1)](*ops)

    return Rung(name, title, cfg.kernel("registers"), launch, mma=cfg.mma, smem=dict(cfg.smem), config=cfg,
                args=lambda a, b, c: cfg.operands(a, b, c)[1], kernel_for=kernel_for)


def hopper_rungs(dtype=wb.Float16) -> list:
    """Rungs 6 and 7 (SM90 only): the warp-specialized TMA + wgmma kernel, then the same with persistent blocks."""
    return [_rung("tma_wgmma", "TMA + wgmma, 4-stage mbarrier ring, producer/consumer warpgroups, setmaxnreg",
                  HopperGemm(bm=128, bn=256, bk=64, stages=4, group=8, dtype=dtype)),
            _rung("persistent", "+ persistent blocks over the output tiles",
                  HopperGemm(bm=128, bn=256, bk=64, stages=4, group=8, persistent=True, dtype=dtype))]
