"""Memory-access arithmetic of a thread/value layout: global coalescing and shared bank conflicts.

Given the element offsets ``off[t, v]`` that thread ``t`` touches for value ``v`` (the TV layout
composed with the tile's memory layout), this module computes what one warp-wide access costs,
using the standard model of NVIDIA GPUs since Volta:

* **Vector width.**  A thread's values ``v = g*k .. g*k+k-1`` form one ``k``-element access when
  they are contiguous in memory and aligned to ``k`` elements, with ``k*bytes <= 16`` (the widest
  load).  ``k`` is the largest power of two that holds for every thread and every group.
* **Global memory.**  One warp request (32 consecutive threads, one group ``g``) moves every
  32-byte sector it touches; its efficiency is the distinct bytes it asks for / (32 * sectors).
* **Shared memory.**  32 banks of 4 bytes.  A request of ``w``-byte accesses runs in phases of
  ``128 / max(w, 4)`` threads; a phase costs as many wavefronts as the largest number of
  *distinct* 4-byte words that fall into one bank (the same word is broadcast).  The ideal is
  ``ceil(threads * w / 128)`` wavefronts; conflicts are the excess.

The tile base is assumed aligned to 128 bytes.  Everything is vectorized over warps and groups.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

WARP = 32
SECTOR = 32
BANKS = 32
BANK_BYTES = 4
MAX_VECTOR_BYTES = 16


@dataclass(frozen=True)
class AccessReport:
    element: str
    element_bits: int
    vector: int                 # elements per thread per access
    access_bytes: float         # bytes per thread per access
    requests: int               # warp requests to cover the tile once
    bytes_per_request: float    # bytes a warp request asks for
    sectors_per_request: float  # 32-byte sectors it moves, on average
    efficiency: float           # distinct bytes requested / bytes moved, 0..1
    wavefronts_per_request: float
    ideal_wavefronts: float
    worst_conflict: int         # the largest wavefronts/ideal ratio over all requests, rounded up

    @property
    def bank_conflict_factor(self) -> float:
        return self.wavefronts_per_request / self.ideal_wavefronts

    def lines(self) -> list[str]:
        """Read-outs as fixed-format text (deterministic, no locale)."""
        vec = f"{self.vector} x {self.element} = {_num(self.access_bytes)} B per thread per access"
        glob = (f"global: {_num(self.bytes_per_request)} B per warp request, "
                f"{_num(self.sectors_per_request)} sectors of 32 B moved, {100 * self.efficiency:.1f}% efficient")
        conflict = "no bank conflicts" if self.bank_conflict_factor == 1 else (
            f"{self.bank_conflict_factor:.2f}x the ideal (worst request {self.worst_conflict}-way)")
        shared = (f"shared: {_num(self.wavefronts_per_request)} wavefront(s) per request, ideal "
                  f"{_num(self.ideal_wavefronts)}: {conflict}")
        return [vec, glob, shared]


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.2f}"


def vector_width(off: np.ndarray, element_bits: int) -> int:
    """Largest power-of-two k with contiguous, k-aligned groups of k values in every thread."""
    T, V = off.shape
    k = 1
    while True:
        k2 = 2 * k
        if V % k2 or k2 * element_bits > 8 * MAX_VECTOR_BYTES:
            return k
        g = off.reshape(T, V // k2, k2)
        if not (np.all(g - g[:, :, :1] == np.arange(k2)) and np.all(g[:, :, 0] % k2 == 0)):
            return k
        k = k2


def analyze(off: np.ndarray, element_bits: int, element: str = "") -> AccessReport:
    """Cost of accessing ``off`` (int array (threads, values) of element offsets) warp by warp."""
    off = np.asarray(off, dtype=np.int64)
    if off.ndim != 2 or off.size == 0:
        raise ValueError(f"Expected a non-empty (threads, values) offset array, but got shape {off.shape}.")
    if element_bits <= 0:
        raise ValueError(f"Expected a positive element width in bits, but got {element_bits}.")
    T, V = off.shape
    k = vector_width(off, element_bits)
    G = V // k
    first = off.reshape(T, G, k)[:, :, 0]                       # (T, G) element offset of each access
    start_bits = first * element_bits
    acc_bits = k * element_bits
    acc_bytes = acc_bits / 8

    nwarps = -(-T // WARP)
    pad = nwarps * WARP - T
    # (warps, 32, G) byte starts; padded lanes are masked out
    starts = np.pad(start_bits, ((0, pad), (0, 0))).reshape(nwarps, WARP, G) // 8
    live = np.pad(np.ones((T, G), bool), ((0, pad), (0, 0))).reshape(nwarps, WARP, G)
    lanes = live.sum(axis=1)                                     # (warps, G) active threads

    # global: distinct sectors per (warp, g); an access of <= 16 aligned bytes never straddles one
    last = (start_bits + max(acc_bits, 8) - 1) // 8
    last = np.pad(last, ((0, pad), (0, 0))).reshape(nwarps, WARP, G)
    sectors = _distinct_per_request(
        np.concatenate([starts // SECTOR, last // SECTOR], axis=1),
        np.concatenate([live, live], axis=1))
    requested = lanes * acc_bytes
    # useful bytes: distinct accesses (threads reading the same element share one transfer)
    useful = _distinct_per_request(starts, live) * acc_bytes

    # shared: phases of 128/max(w,4) threads; per phase, the most distinct words in one bank
    words_per_access = max(1, -(-int(np.ceil(acc_bytes)) // BANK_BYTES))
    phase = WARP // max(1, min(WARP, int(np.ceil(acc_bytes * WARP / 128)))) if acc_bytes > 4 else WARP
    word0 = starts // BANK_BYTES                                  # (warps, 32, G)
    wave = np.zeros((nwarps, G), np.int64)
    for p0 in range(0, WARP, phase):
        w = word0[:, p0:p0 + phase, :]
        m = live[:, p0:p0 + phase, :]
        words = np.concatenate([w + j for j in range(words_per_access)], axis=1)
        mask = np.concatenate([m] * words_per_access, axis=1)
        wave += _max_words_per_bank(words, mask)
    ideal = np.maximum(1, np.ceil(requested / (BANKS * BANK_BYTES)))
    nreq = nwarps * G
    return AccessReport(
        element=element, element_bits=element_bits, vector=k, access_bytes=acc_bytes, requests=nreq,
        bytes_per_request=float(requested.sum() / nreq), sectors_per_request=float(sectors.sum() / nreq),
        efficiency=float(useful.sum() / (SECTOR * sectors.sum())),
        wavefronts_per_request=float(wave.sum() / nreq), ideal_wavefronts=float(ideal.sum() / nreq),
        worst_conflict=int(np.ceil((wave / ideal).max())),
    )


def _distinct_per_request(vals: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Number of distinct masked values along axis 1 of a (warps, n, G) array."""
    big = np.iinfo(np.int64).max
    v = np.where(mask, vals, big)
    v = np.sort(v, axis=1)
    new = np.ones_like(v, dtype=bool)
    new[:, 1:, :] = v[:, 1:, :] != v[:, :-1, :]
    return (new & (v != big)).sum(axis=1)


def _max_words_per_bank(words: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Per (warp, G): max over banks of the number of distinct words in that bank (0 if none)."""
    nw, n, G = words.shape
    big = np.iinfo(np.int64).max
    v = np.where(mask, words, big)
    v = np.sort(v, axis=1)
    new = np.ones_like(v, dtype=bool)
    new[:, 1:, :] = v[:, 1:, :] != v[:, :-1, :]
    new &= v != big
    bank = np.where(new, v % BANKS, BANKS)                        # BANKS: the discard bucket
    counts = np.zeros((nw, G, BANKS + 1), np.int64)
    wi, _, gi = np.nonzero(np.ones_like(bank, dtype=bool))
    np.add.at(counts, (wi, gi, bank.reshape(-1)), 1)
    return counts[:, :, :BANKS].max(axis=2)
