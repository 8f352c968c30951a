"""Shared-memory bank conflicts of a tiled copy's exact instruction, and the swizzle that removes them.

Shared memory has 32 banks of 4 bytes.  A warp's request is split into phases by the instruction:
``ldmatrix``/``stmatrix`` move one 8x8 matrix (8 rows of 16 bytes, one row address from each of
8 threads) a phase; a 128-bit access serves 8 threads a phase, a 64-bit one 16 threads, a 32-bit or
narrower one all 32.  A phase costs as many wavefronts as the most distinct 4-byte words any one
bank must serve (the same word read twice is a broadcast, free).  1 wavefront a phase is
conflict-free.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import _element_types as et
from ..layout import ComposedLayout, Layout, Swizzle

__all__ = ["BankConflicts", "bank_conflicts", "phase_wavefronts", "smem_accesses", "suggest_swizzle",
           "SwizzleSuggestion"]

BANKS, BANK_BYTES = 32, 4


@dataclass
class BankConflicts:
    """Wavefronts per phase of one tiled copy over one shared-memory layout."""
    instruction: str
    threads_per_phase: int
    wavefronts: list = field(default_factory=list)   # one int per phase, in issue order
    ideal: list = field(default_factory=list)        # the wavefronts the bytes of that phase need at least

    @property
    def total(self) -> int:
        return int(sum(self.wavefronts))

    @property
    def ideal_total(self) -> int:
        return int(sum(self.ideal))

    @property
    def max_ways(self) -> int:
        return int(max((w // i for w, i in zip(self.wavefronts, self.ideal)), default=1))

    @property
    def conflict_free(self) -> bool:
        return self.total == self.ideal_total

    def __repr__(self):
        return (f"BankConflicts({self.instruction}: {len(self.wavefronts)} phases of {self.threads_per_phase} threads, "
                f"{self.total} wavefronts, ideal {self.ideal_total}, worst {self.max_ways}-way)")


def _smem_side(tiled_copy, side):
    kind = tiled_copy.atom.kind
    if side is None:
        side = "dst" if kind in ("stsm", "cp_async") else "src"
    if side not in ("src", "dst"):
        raise ValueError(f"bank_conflicts: expected side 'src' or 'dst' (which side of the copy is shared memory), but got {side!r}.")
    return side


def _access_bits(tiled_copy, side):
    """Bits one thread moves in one shared-memory access: a 16-byte row for ldmatrix/stmatrix, else
    the values of one call of the atom."""
    atom = tiled_copy.atom
    if atom.kind in ("ldsm", "stsm"):
        return 128
    vals = atom.num_val_src if side == "src" else atom.num_val_dst
    return vals * atom.value_type.bits


def _threads_per_phase(tiled_copy, side):
    atom = tiled_copy.atom
    if atom.kind in ("ldsm", "stsm"):
        return 8, f"{'ldmatrix' if atom.kind == 'ldsm' else 'stmatrix'}.x{atom.matrices}"
    bits = _access_bits(tiled_copy, side)
    return (8 if bits >= 128 else 16 if bits == 64 else 32), f"{bits}-bit {'ld' if side == 'src' else 'st'}.shared"


def _offsets(smem_layout, tile_index, tiler):
    """Element offsets of the column-major tile indices through the (M, N) -> offset smem layout."""
    m = tiler[0]
    crd_m, crd_n = tile_index % m, tile_index // m
    flat = np.asarray(smem_layout.offsets()).reshape(-1)
    shp = smem_layout.shape
    rows = shp[0] if type(shp) is tuple else shp
    rows = int(np.prod(rows)) if type(rows) is tuple else rows
    return flat[crd_m + rows * crd_n]


def smem_accesses(tiled_copy, smem_layout, element_type=None, side=None):
    """Byte addresses the tiled copy touches, as an array (calls, warps, phases, threads, bytes-per-thread).

    ``smem_layout`` maps the (M, N) coordinate of the copy's tile (``tiled_copy.tiler_mn``) to an
    element offset (a Layout or a swizzled ComposedLayout, e.g. a GMMA smem atom tiled to shape).
    """
    element_type = element_type or tiled_copy.atom.value_type
    if not isinstance(element_type, et.ElementType):
        raise TypeError(f"bank_conflicts: expected an element type, but got {type(element_type).__name__}.")
    if not isinstance(smem_layout, (Layout, ComposedLayout)):
        raise TypeError(f"bank_conflicts: expected a Layout or ComposedLayout for smem, but got {type(smem_layout).__name__}.")
    side = _smem_side(tiled_copy, side)
    tiler = tiled_copy.tiler_mn
    shp = smem_layout.shape if isinstance(smem_layout, Layout) else smem_layout.layout.shape
    sizes = tuple(int(np.prod(s)) if type(s) is tuple else s for s in (shp if type(shp) is tuple else (shp,)))
    if len(sizes) < 2 or sizes[0] < tiler[0] or sizes[1] < tiler[1]:
        raise ValueError(f"bank_conflicts: the smem layout {smem_layout} must cover the copy's (M, N) tile {tiler}.")
    tv = tiled_copy.layout_src_tv_tiled if side == "src" else tiled_copy.layout_dst_tv_tiled
    atom = tiled_copy.atom
    nt, nv = tv[0].size, tv[1].size
    av = atom.num_val_src if side == "src" else atom.num_val_dst
    idx = np.asarray(tv.offsets()).reshape(nv, nt).T          # [thread, value] -> tile index (column-major)
    off = _offsets(smem_layout, idx, tiler)                   # [thread, value] -> element offset
    byte0 = off * (element_type.bits // 8 if element_type.bits >= 8 else 1)
    calls = nv // av
    runs = off.reshape(nt, calls, av)
    if av > 1 and np.any(runs - runs[..., :1] != np.arange(av)):
        # one access moves av consecutive elements: a layout that splits them admits no such instruction
        raise ValueError(f"bank_conflicts: {atom.name} moves {av} consecutive {element_type} a thread in one access, but "
                         f"{smem_layout} does not keep them consecutive (a swizzle whose base M is below log2({av}) "
                         f"splits them), so no such access exists; CuTe would not vectorize it: count a copy of "
                         f"{element_type.bits}-bit accesses instead.")
    tpp, _ = _threads_per_phase(tiled_copy, side)
    warps = max(1, nt // 32)
    per_thread = byte0.reshape(nt, calls, av)                 # values of one call are the atom's values
    nbytes = max(1, element_type.bits // 8)
    addr = per_thread[..., None] + np.arange(nbytes)          # every byte each thread touches
    addr = addr.reshape(nt, calls, av * nbytes)
    if atom.kind in ("ldsm", "stsm"):
        active = 8 * atom.matrices                           # the threads that supply row addresses
    else:
        active = 32
    addr = addr[: warps * 32].reshape(warps, 32, calls, -1)[:, :active]
    phases = active // tpp
    addr = addr.reshape(warps, phases, tpp, calls, -1).transpose(3, 0, 1, 2, 4)
    return addr


def phase_wavefronts(byte_addresses) -> tuple[int, int]:
    """(wavefronts, ideal) of one phase: the byte addresses its threads touch, any shape.

    Wavefronts: the most distinct 4-byte words one bank serves; ideal: the 128-byte lines the
    distinct words need at least.
    """
    words = np.unique(np.asarray(byte_addresses).reshape(-1) // BANK_BYTES)
    counts = np.bincount(words % BANKS, minlength=BANKS)
    return int(counts.max()), max(1, -(-words.size // BANKS))


def bank_conflicts(tiled_copy, smem_layout, element_type=None, side=None) -> BankConflicts:
    """Wavefronts per phase for ``tiled_copy``'s instruction over ``smem_layout``."""
    side = _smem_side(tiled_copy, side)
    addr = smem_accesses(tiled_copy, smem_layout, element_type, side)
    tpp, name = _threads_per_phase(tiled_copy, side)
    out = BankConflicts(name, tpp)
    calls, warps, phases = addr.shape[:3]
    for c in range(calls):
        for w in range(warps):
            for p in range(phases):
                wf, ideal = phase_wavefronts(addr[c, w, p])
                out.wavefronts.append(wf)
                out.ideal.append(ideal)
    return out


@dataclass
class SwizzleSuggestion:
    swizzle: Swizzle
    layout: ComposedLayout
    before: BankConflicts
    after: BankConflicts
    compared: dict  # Swizzle -> total wavefronts, for every candidate tried

    def __repr__(self):
        return (f"SwizzleSuggestion({self.swizzle}: {self.before.total} -> {self.after.total} wavefronts "
                f"(ideal {self.after.ideal_total}); layout {self.layout})")


def suggest_swizzle(tiled_copy, smem_layout, element_type=None, side=None) -> SwizzleSuggestion:
    """The ``Swizzle(B, M, S)`` that makes ``tiled_copy``'s accesses to ``smem_layout`` conflict-free (or least conflicted).

    M keeps one access of the instruction whole: M = log2(access bytes / element bytes), e.g. 3 for
    16-byte (vectorized or ldmatrix) accesses of fp16, 0 for 4-byte accesses of fp32.  B runs from 1
    to the bits that pick one access in a 128-byte line of the 32 banks (3 for 16-byte accesses, 5 for
    4-byte ones), S from B while the moved bits start among ``smem_layout``'s offset bits (M + S below
    its highest; a swizzle whose moved bits lie above every offset does nothing); no swizzle (B = 0)
    is a candidate too.  All are counted; the
    winner has the fewest wavefronts, then the fewest bits B, then S closest to the 128-byte line
    (M + S = log2 of the elements in 128 bytes: S = 3 for 16-byte accesses, as CuTe's GMMA atoms).
    Returns the swizzle, ``ComposedLayout(swizzle, 0, smem_layout)`` and the counts.
    """
    element_type = element_type or tiled_copy.atom.value_type
    if not isinstance(smem_layout, Layout):
        raise TypeError(f"suggest_swizzle: expected a plain Layout to swizzle, but got {type(smem_layout).__name__}.")
    side = _smem_side(tiled_copy, side)
    before = bank_conflicts(tiled_copy, smem_layout, element_type, side)
    ebytes = max(1, element_type.bits // 8)
    access = max(1, _access_bits(tiled_copy, side) // 8)
    base = max(0, (access // ebytes).bit_length() - 1)
    line = max(0, (BANKS * BANK_BYTES // ebytes).bit_length() - 1 - base)  # log2(accesses in a 128-byte line)
    top = max(1, smem_layout.cosize - 1).bit_length()                     # offset bits of the layout
    candidates = [Swizzle(0, base, line)] + [Swizzle(b, base, s) for b in range(1, line + 1)
                                             for s in range(b, top - base)]
    compared, best = {}, None
    for sw in candidates:
        res = bank_conflicts(tiled_copy, ComposedLayout(sw, 0, smem_layout), element_type, side)
        compared[sw] = res.total
        key = (res.total, sw.bits, abs(sw.shift - line))
        if best is None or key < best[0]:
            best = (key, sw, res)
    _, sw, after = best
    return SwizzleSuggestion(sw, ComposedLayout(sw, 0, smem_layout), before, after, compared)
