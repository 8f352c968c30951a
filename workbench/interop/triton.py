"""Triton's layouts as a Triton (Gluon) user writes them, both ways.

``to_triton(x)`` gives the :class:`~workbench.interop.linear.LinearLayout` Triton builds for the same thing:

- a tiled MMA's operand (``to_triton(mma, "C")``, ``"A"``, ``"B"``): ``(register, lane, warp) -> (dim0, dim1)``
  over the tiled MMA's whole tile.  With ``convention="triton"`` (default) it is Triton's layout exactly: B as
  (K, N) (CuTe's B is (N, K)), and the registers of repeated instructions walked Triton's way (C: N-repeats before
  M-repeats; A: K before M; B: K before N; CuTe walks M before N, M before K and N before K).  With
  ``convention="cute"`` it is the workbench's export of CuTe's TV layout, unreordered.  Warp numbering is the
  tiled MMA's own: Triton's ``warpsPerCTA=[wm, wn]`` for mma v2 is the atom layout
  ``make_layout((wm, wn, 1), stride=(wn, 1, 0))`` (N-first), for v3 ``make_layout((wm // 4, wn, 1))`` of warpgroups
  (M-first): :func:`from_gluon` builds exactly these.
- a memory layout (a swizzled smem atom, ``tile_to_shape`` of one): Triton's shared layout ``offset -> (dim0,
  dim1)``, the inverse of CuTe's coordinate -> offset.

- a thread/value layout on its tile, ``(tile_mn, tv)`` as ``wb.make_layout_tv`` returns it: ``(register, lane,
  warp) -> (dim0, dim1)`` with thread ``t = lane + 32 * warp`` and value ``v = register`` (Triton's blocked and
  linear layouts).

``from_gluon(gl_layout, shape)`` gives the CuTe object a user would write for a Gluon layout object, its
``gl.<Class>(...)`` text or its TTGIR attribute text (``#ttg.<name><{...}>``, see :mod:`.ttgir`):
``NVMMADistributedLayout`` / ``DotOperandLayout`` -> a tiled MMA (with the operand), ``NVMMASharedLayout`` ->
``tile_to_shape`` of the GMMA smem atom, ``SwizzledSharedLayout`` -> ``Swizzle o Layout``, ``BlockedLayout`` and
``DistributedLinearLayout`` (or a distributed :class:`LinearLayout`) -> ``(tile_mn, tv)``,
``SharedLinearLayout`` (or a shared LinearLayout) -> the CuTe memory layout.  ``to_gluon(x, ...)`` gives the
:class:`GluonLayout` (its repr is the constructor, ``.ttgir`` the attribute).  Proof: tests/test_interop_triton.py,
against Triton's own ``to_linear_layout`` and printer (runs where ``triton`` imports; see that file).
"""

from __future__ import annotations

import itertools
import math

from ..layout import ComposedLayout, Layout, Swizzle, coalesce, make_layout
from .linear import LinearLayout, from_linear_layout, to_linear_layout
from .ttgir import GluonLayout, GluonTextError, as_gluon_layout, parse_ttgir

__all__ = ["to_triton", "from_gluon", "to_gluon", "GluonLayout", "GluonTextError"]

_CONVENTIONS = ("triton", "cute")


def _is_tiled_mma(x):
    return hasattr(x, "tv_layout_C_tiled") and hasattr(x, "tile_shape_mnk")


def to_triton(x, operand=None, convention="triton") -> LinearLayout:
    """Triton's LinearLayout of a tiled MMA's operand (``"A"``, ``"B"``, ``"C"``), of a ``(tile_mn, tv)`` pair
    (distributed) or of a memory layout (shared, offset -> (dim0, dim1)).  See the module docstring for the two
    conventions (a tiled MMA's only)."""
    if convention not in _CONVENTIONS:
        raise ValueError(f"to_triton: expected convention among {_CONVENTIONS}, but got {convention!r}.")
    if _is_tv_pair(x):
        if operand is not None:
            raise ValueError(f"to_triton: an operand ({operand!r}) names a tiled MMA's A/B/C, but got a (tile, tv) "
                             f"pair.")
        return _tv_export(*x)
    if not _is_tiled_mma(x):
        if operand is not None:
            raise ValueError(f"to_triton: an operand ({operand!r}) names a tiled MMA's A/B/C, but got "
                             f"{type(x).__name__}.")
        if type(x) not in (Layout, ComposedLayout):
            raise TypeError(f"to_triton: expected a tiled MMA, a (tile_mn, tv) pair or a memory layout (Layout / "
                            f"swizzled ComposedLayout), but got {type(x).__name__}.")
        return to_linear_layout(x, dims=[("offset", int(x.size))])
    if operand not in ("A", "B", "C"):
        raise ValueError(f"to_triton: expected operand 'A', 'B' or 'C' for a tiled MMA, but got {operand!r}.")
    M, N, K = (int(v) for v in x.tile_shape_mnk)
    tv = getattr(x, f"tv_layout_{operand}_tiled")
    out = {"A": (M, K), "B": (N, K), "C": (M, N)}[operand]
    ll = to_linear_layout(tv, out_shape=out)
    if convention == "cute":
        return ll
    atom_vals = int(getattr(x.atom, f"tv_layout_{operand}")[1].size)
    nat = atom_vals.bit_length() - 1
    regs = list(ll.bases["register"])
    # repeated instructions: Triton walks the dim it names first (C: N = dim1; A: K = dim1; B: K = CuTe's dim1)
    first = 1

    def dim_of(b):
        nz = [k for k, v in enumerate(b) if v]
        if len(nz) != 1:
            raise ValueError(f"to_triton: expected each repeated instruction's register basis along one dimension, "
                             f"but got {b} in {ll}.")
        return nz[0]
    rep = sorted(regs[nat:], key=lambda b: 0 if dim_of(b) == first else 1)
    bases = {"register": regs[:nat] + rep, "lane": ll.bases["lane"], "warp": ll.bases.get("warp", [])}
    out_dims = [("dim0", out[0]), ("dim1", out[1])]
    if operand == "B":   # Triton's B is (K, N)
        bases = {k: [(b[1], b[0]) for b in v] for k, v in bases.items()}
        out_dims = [("dim0", K), ("dim1", N)]
    return LinearLayout(bases, out_dims)


def _get(g, k, default=None):
    return g.kw.get(k, default) if type(g) is GluonLayout else getattr(getattr(g, k, default), "value",
                                                                           getattr(g, k, default))


_V2_ATOMS = {1: "SM80_16x8x8_F32TF32TF32F32_TN", 2: "SM80_16x8x16_F32F16F16F32_TN", 4: "SM80_16x8x32_S32S8S8S32_TN"}
_V3_ATOMS = {1: "SM90_64x{n}x8_F32TF32TF32_{ab}_TN", 2: "SM90_64x{n}x16_F32F16F16_{ab}",
             4: "SM90_64x{n}x32_S32S8S8_{ab}_TN"}


def _mma_of(parent, shape, operand, k_width, atom=None):
    from ..atoms import make_tiled_mma, mma_atom

    version = list(_get(parent, "version"))
    wm, wn = (int(w) for w in _get(parent, "warps_per_cta"))
    instr = [int(v) for v in _get(parent, "instr_shape")]
    if list(_get(parent, "cga_layout", []) or []):
        raise ValueError("from_gluon: expected no CGA layout (one CTA), but got cga_layout "
                         f"{_get(parent, 'cga_layout')}.")
    if version[0] == 2:
        if instr != [16, 8]:
            raise ValueError(f"from_gluon: expected instr_shape [16, 8] for mma v2, but got {instr}.")
        name = atom or _V2_ATOMS.get(k_width)
        layout = make_layout((wm, wn, 1), stride=(wn, 1, 0))     # Triton numbers v2 warps N-first
    elif version[0] == 3:
        if wm % 4:
            raise ValueError(f"from_gluon: expected warps_per_cta[0] a multiple of 4 (warpgroups along M), but got "
                             f"{wm}.")
        name = atom or (_V3_ATOMS.get(k_width, "").format(n=instr[1], ab="RS" if operand == "A" else "SS")
                        if k_width in _V3_ATOMS else None)
        layout = make_layout((wm // 4, wn, 1))                   # v3 warpgroups M-first
    else:
        raise ValueError(f"from_gluon: expected an nvidia_mma version 2 or 3, but got {version}.")
    if name is None:
        raise ValueError(f"from_gluon: expected k_width among {sorted(_V2_ATOMS)}, but got {k_width!r}.")
    a = mma_atom(name)
    aM, aN, aK = a.shape_mnk
    d0, d1 = (int(s) for s in shape)
    if operand == "C":
        tile = (d0, d1, aK)
    elif operand == "A":
        tile = (d0, aN * layout[1].size, d1)
    else:                                   # Triton's B is (K, N)
        tile = (aM * layout[0].size, d1, d0)
    return make_tiled_mma(a, layout, tile)


def from_gluon(g, shape=None, atom=None):
    """The CuTe object a user would write for a Gluon layout ``g`` (a ``gl.<Class>`` object, a :class:`GluonLayout`,
    its constructor text, its TTGIR text, or a :class:`LinearLayout`) over a tensor of ``shape`` (a TTGIR
    ``tensor<...>`` / ``!ttg.memdesc<...>`` type and a linear layout carry their own):

    - ``NVMMADistributedLayout`` -> ``(tiled_mma, "C")``; ``DotOperandLayout`` -> ``(tiled_mma, "A" | "B")``.  The
      atom follows k_width (v2: 1 tf32 16x8x8, 2 f16 16x8x16, 4 s8 16x8x32; v3: the RS/SS 64xNxK of instr_shape's
      N), or name it with ``atom=``; the warp layout is Triton's numbering (v2 N-first, v3 warpgroups M-first).
      ``to_triton(mma, operand)`` gives back Triton's LinearLayout of ``g`` at ``shape``.
    - ``NVMMASharedLayout`` -> ``tile_to_shape`` of CuTe's GMMA smem atom (transposed: MN-major), over an smem
      pointer of element_bitwidth bits, tiled as Triton does: M first for K-major, K first for MN-major
      (``order=(1, 0)``).  Departure: swizzle_byte_width=0 past the atom is Triton's plain row-major (K-major) or
      column-major (MN) layout under CuTe's ``Sw<0,4,3>``, not CuTe's INTERLEAVE atom tiled (16-byte columns).
    - ``SwizzledSharedLayout`` (rank 2) -> ``Swizzle o Layout``: CuTe ``S<log2 max_phase, log2 vec, log2(row *
      per_phase)>`` over the layout order names.  Refused (ValueError) where the swizzle would reach past a row
      (Triton then wraps inside the row, which no CuTe swizzle does).
    - ``BlockedLayout``, ``DistributedLinearLayout``, a distributed LinearLayout -> ``(tile_mn, tv)``: the TV layout
      (thread ``lane + 32 * warp``, value = register, in Triton's register order: repeats past the CTA tile after
      the CTA's own registers, broadcast as stride 0) on the tensor's tile, as ``wb.make_layout_tv`` returns; a
      blocked layout that fits its tile once is ``make_layout_tv(thr, val)`` as a function.  Refused where the
      bases overlap in bits (no CuTe layout adds to an XOR) or span several CTAs (block bases).
    - ``SharedLinearLayout``, a shared LinearLayout -> the CuTe memory layout (``from_linear_layout``).
    """
    if type(g) is LinearLayout:
        if shape is not None and tuple(int(s) for s in shape) != tuple(s for _, s in g.out_dims):
            raise ValueError(f"from_gluon: the LinearLayout covers {[s for _, s in g.out_dims]}, but got shape "
                             f"{list(shape)}.")
        return from_linear_layout(g) if g.kind == "shared" else _tv_import(g)
    text_shape = None
    if isinstance(g, str) and g.lstrip().startswith(("#", "tensor", "!ttg")):
        g, text_shape = parse_ttgir(g)
    g = as_gluon_layout(g)
    cls = g.cls
    if cls in ("DistributedLinearLayout", "SharedLinearLayout"):
        own = [int(v) for v in (g.shape if cls == "DistributedLinearLayout" else _shared_linear_shape(g))]
        for given, where in ((text_shape, "the text gives"), (shape, "got")):
            if given is not None and [int(v) for v in given] != own:
                raise ValueError(f"from_gluon: the {cls}'s bases cover shape {own}, but {where} shape {list(given)} "
                                 f"(Triton would broadcast or repeat it; give the layout at its own shape).")
        text_shape = own
    if shape is None:
        if text_shape is None:
            raise ValueError(f"from_gluon: expected the tensor's shape for a {cls} (shape=(M, N)), but got none.")
        shape = text_shape
    shape = [_pos_int(s, "shape") for s in shape]
    if text_shape is not None and list(text_shape) != shape:
        raise ValueError(f"from_gluon: the text gives shape {list(text_shape)}, but got shape {shape}.")
    if cls == "NVMMADistributedLayout":
        return _mma_of(g, shape, "C", 2, atom), "C"
    if cls == "DotOperandLayout":
        op = "A" if int(_get(g, "operand_index")) == 0 else "B"
        return _mma_of(_get(g, "parent"), shape, op, int(_get(g, "k_width")), atom), op
    if cls == "NVMMASharedLayout":
        return _nvmma_shared(g, shape)
    if cls == "SwizzledSharedLayout":
        return _swizzled_shared(g, shape)
    if cls == "BlockedLayout":
        return _tv_import(_blocked_ll(g, shape))
    if cls == "DistributedLinearLayout":
        if g.block_bases:
            raise ValueError(f"from_gluon: expected no block bases (one CTA), but got {g.block_bases}.")
        outs = [(f"dim{k}", s) for k, s in enumerate(shape)]
        return _tv_import(LinearLayout({"register": g.reg_bases, "lane": g.lane_bases, "warp": g.warp_bases}, outs))
    if g.block_bases:
        raise ValueError(f"from_gluon: expected no block bases (one CTA), but got {g.block_bases}.")
    return from_linear_layout(LinearLayout({"offset": g.offset_bases}, [(f"dim{k}", s) for k, s in enumerate(shape)]))


def _pos_int(v, what):
    if type(v) is bool or not isinstance(v, int) and not hasattr(v, "__index__"):
        raise TypeError(f"from_gluon: expected integer {what} entries, but got {type(v).__name__} {v!r}.")
    v = int(v)
    if v <= 0:
        raise ValueError(f"from_gluon: expected positive {what} entries, but got {v}.")
    return v


def _shared_linear_shape(g):
    rank = len(g.offset_bases[0]) if g.offset_bases else 0
    return [1 << max(b[d] for b in g.offset_bases + g.block_bases).bit_length() for d in range(rank)]


# -- thread/value layouts: Triton's blocked and linear layouts ---------------------------------------------------
def _is_tv_pair(x):
    return type(x) is tuple and len(x) == 2 and type(x[1]) is Layout and type(x[0]) is tuple


def _pow2(v, what):
    if type(v) is not int or v <= 0 or v & (v - 1):
        raise ValueError(f"from_gluon: expected {what} a power of two, but got {v!r}.")
    return v.bit_length() - 1


def _blocked_ll(g, shape):
    """Triton's LinearLayout of a BlockedLayout at ``shape`` (LinearLayoutConversions.cpp): registers, lanes and
    warps each walk the dims in ``order`` (minor first); a tile larger than the CTA's repeats in registers (dims in
    ``order``), a smaller one broadcasts: lane and warp bases past the shape become 0, register ones are dropped."""
    spt, tpw, wpc, order = ([int(v) for v in _get(g, k)] for k in ("size_per_thread", "threads_per_warp",
                                                                   "warps_per_cta", "order"))
    rank = len(shape)
    if not len(spt) == len(tpw) == len(wpc) == len(order) == rank:
        raise ValueError(f"from_gluon: expected size_per_thread, threads_per_warp, warps_per_cta and order of the "
                         f"tensor's rank {rank}, but got {spt}, {tpw}, {wpc}, {order}.")
    if sorted(order) != list(range(rank)):
        raise ValueError(f"from_gluon: expected order a permutation of 0..{rank - 1}, but got {order}.")
    if list(_get(g, "cga_layout", []) or []):
        raise ValueError(f"from_gluon: expected no CGA layout (one CTA), but got {_get(g, 'cga_layout')}.")
    if math.prod(tpw) != 32:
        raise ValueError(f"from_gluon: expected threads_per_warp to multiply to 32 (an NVIDIA warp), but got {tpw}.")
    for s in shape:
        _pow2(s, "each tensor extent")
    size = [1] * rank

    def unit(d):
        b = [0] * rank
        b[d] = size[d]
        size[d] *= 2
        return b
    bases = {}
    for name, per in (("register", spt), ("lane", tpw), ("warp", wpc)):
        bases[name] = [unit(d) for d in order for _ in range(_pow2(per[d], f"each {name} count"))]
    for d in order:
        while size[d] < shape[d]:
            bases["register"].append(unit(d))
    bases = {k: [[x if x < shape[d] else 0 for d, x in enumerate(b)] for b in v] for k, v in bases.items()}
    bases["register"] = [b for b in bases["register"] if any(b)]    # a register past the shape is dropped, not kept
    return LinearLayout(bases, [(f"dim{d}", s) for d, s in enumerate(shape)])


def _tv_import(ll):
    """``(tile_mn, tv)`` of a distributed LinearLayout: the TV layout whose thread mode holds the lane then the warp
    bits and whose value mode the register bits, each to the colexicographic index of its (dim0, dim1, ...)."""
    if ll.kind != "distributed":
        raise ValueError(f"from_gluon: expected a distributed layout (register, lane, warp), but got {ll}.")
    if ll.bases.get("block"):
        raise ValueError(f"from_gluon: expected no block bases (one CTA), but got {ll.bases['block']}.")
    extra = [k for k in ll.bases if k not in ("register", "lane", "warp", "block")]
    if extra:
        raise ValueError(f"from_gluon: expected input dimensions register, lane, warp, but got {extra}.")
    tile = tuple(s for _, s in ll.out_dims)

    def flat(b):
        o, m = 0, 1
        for x, s in zip(b, tile):
            o, m = o + x * m, m * s
        return o
    thr = [flat(b) for b in ll.bases.get("lane", []) + ll.bases.get("warp", [])]
    val = [flat(b) for b in ll.bases.get("register", [])]
    seen = 0
    for o in thr + val:
        if o & seen:
            raise ValueError(f"from_gluon: no CuTe TV layout has these bases: they overlap in bits (an XOR that is "
                             f"no sum) at tile index {o}; bases {ll.bases}.")
        seen |= o

    def mode(bs):
        return coalesce(make_layout((2,) * len(bs), stride=tuple(bs))) if bs else Layout(1, 0)
    return tile, make_layout(mode(thr), mode(val))


def _tv_export(tile, tv):
    shape = tuple(int(s) for s in tile)
    if type(tv.shape) is not tuple or len(tv.shape) != 2:
        raise ValueError(f"to_triton: expected a rank-2 (thread, value) layout, but got {tv}.")
    T, V = int(tv[0].size), int(tv[1].size)
    if T % 32:
        raise ValueError(f"to_triton: expected whole warps (threads a multiple of 32), but got {T} threads in {tv}.")
    return to_linear_layout(tv, dims=[("lane", 32), ("warp", T // 32), ("register", V)], out_shape=shape)


def _blocked_of(ll):
    """The BlockedLayout whose LinearLayout at this shape is ``ll`` exactly, or None."""
    shape = [s for _, s in ll.out_dims]
    rank = len(shape)
    nlane, nwarp = len(ll.bases.get("lane", [])), len(ll.bases.get("warp", []))
    if nlane != 5:
        return None

    def splits(n):
        return [c for c in itertools.product(range(n + 1), repeat=rank) if sum(c) == n]
    regs = [list(b) for b in ll.bases.get("register", [])]
    for order in itertools.permutations(range(rank)):
        spt, i = [1] * rank, 0
        for d in order:       # the CTA's own registers lead, dims in order (repeats may be read as more: checked)
            while i < len(regs) and regs[i] == [spt[d] if k == d else 0 for k in range(rank)]:
                spt[d] *= 2
                i += 1
        for lt in splits(nlane):
            for wt in splits(nwarp):
                g = GluonLayout("BlockedLayout", size_per_thread=spt, threads_per_warp=[1 << x for x in lt],
                                warps_per_cta=[1 << x for x in wt], order=list(order))
                if _blocked_ll(g, shape) == ll:
                    return g
    return None


_SW_NAME = {0: "INTER", 32: "SW32", 64: "SW64", 128: "SW128"}


def _nvmma_shared(g, shape):
    from .. import _element_types as et
    from ..atoms.smem import gmma_smem_atom
    from ..layout import tile_to_shape

    sw, bits = int(_get(g, "swizzle_byte_width")), int(_get(g, "element_bitwidth"))
    if int(_get(g, "rank", 2)) != 2 or list(_get(g, "cga_layout", []) or []) or _get(g, "fp4_padded", False):
        raise ValueError("from_gluon: expected a rank-2 NVMMASharedLayout of one CTA without fp4 padding.")
    if sw not in _SW_NAME or bits not in (8, 16, 32):
        raise ValueError(f"from_gluon: expected swizzle_byte_width among 0/32/64/128 and element_bitwidth 8/16/32, "
                         f"but got {sw} and {bits}.")
    et_of = {8: et.Uint8, 16: et.Float16, 32: et.Float32}[bits]
    mn = bool(_get(g, "transposed", False))
    atom = gmma_smem_atom(f"Layout_{'MN' if mn else 'K'}_{_SW_NAME[sw]}_Atom", et_of)
    if tuple(shape) == tuple(atom.outer.shape):
        return atom
    for s, a in zip(shape, atom.outer.shape):
        if s % a:
            raise ValueError(f"from_gluon: expected a shape tiled by the {atom.outer.shape} atom, but got {shape}.")
    if sw == 0:   # Triton: unswizzled is plain row-major (K-major) / column-major (MN), not CuTe's INTER tiling
        outer = Layout(tuple(shape), (1, shape[0]) if mn else (shape[1], 1))
        return ComposedLayout(atom.inner, 0, outer, ptr_bits=bits)
    # Triton tiles the atom along its strided dimension first: M for K-major (CuTe's default), K for MN-major
    return tile_to_shape(atom, tuple(shape), order=(1, 0) if mn else None)


def _swizzled_shared(g, shape):
    vec, per, mx = int(_get(g, "vec")), int(_get(g, "per_phase")), int(_get(g, "max_phase"))
    order = [int(o) for o in _get(g, "order")]
    if len(shape) != 2 or sorted(order) != [0, 1] or list(_get(g, "cga_layout", []) or []):
        raise ValueError(f"from_gluon: expected a rank-2 SwizzledSharedLayout of one CTA, but got shape {shape}, "
                         f"order {order}.")
    for v, n in ((vec, "vec"), (per, "per_phase"), (mx, "max_phase")):
        if v <= 0 or v & (v - 1):
            raise ValueError(f"from_gluon: expected a power-of-two {n}, but got {v}.")
    fast = order[0]
    row = shape[fast]
    stride = (1, row) if fast == 0 else (row, 1)
    lay = Layout(tuple(shape), stride)
    if mx == 1:
        return lay
    if vec * mx > row:
        raise ValueError(f"from_gluon: a swizzle of vec*max_phase = {vec * mx} elements reaches past a row of {row}; "
                         f"Triton wraps it inside the row, which no CuTe swizzle expresses.")
    B, M, S = mx.bit_length() - 1, vec.bit_length() - 1, (row * per).bit_length() - 1
    return ComposedLayout(Swizzle(B, M, S - M), 0, lay)


def to_gluon(x, operand=None):
    """The Gluon layout of a workbench object, a :class:`GluonLayout`: its repr is the Gluon constructor
    (``gl.NVMMASharedLayout(...)``), its ``.ttgir`` the TTGIR attribute (``#ttg.nvmma_shared<{...}>``):

    - a tiled MMA's operand built as :func:`from_gluon` builds them (SM80 16x8xK atoms with an N-first warp layout,
      or SM90 atoms with M-first warpgroups): ``gl.NVMMADistributedLayout(...)`` or ``gl.DotOperandLayout(...)``;
    - a ``(tile_mn, tv)`` pair (or a distributed :class:`LinearLayout`): ``gl.BlockedLayout(...)`` where one gives
      exactly its LinearLayout, else ``gl.DistributedLinearLayout(...)`` with its bases;
    - a memory layout: ``gl.NVMMASharedLayout(...)`` for a GMMA smem atom (or ``tile_to_shape`` of one, as Triton
      tiles it), else ``gl.SharedLinearLayout(...)`` with its shared bases (offset -> coordinate); a shared
      LinearLayout likewise.

    Checked: a blocked or NVMMA-shared answer is given only where it reads back (:func:`from_gluon`) to the same
    Triton layout."""
    if type(x) is LinearLayout:
        if x.kind == "shared":
            return GluonLayout("SharedLinearLayout", offset_bases=[list(b) for b in x.bases["offset"]])
        return _distributed_gluon(x)
    if _is_tv_pair(x):
        if operand is not None:
            raise ValueError(f"to_gluon: an operand ({operand!r}) names a tiled MMA's A/B/C, but got a (tile, tv) "
                             f"pair.")
        return _distributed_gluon(_tv_export(*x))
    if _is_tiled_mma(x):
        name = x.atom.name
        al = x.atom_layout_mnk
        wm, wn = int(al.shape[0]), int(al.shape[1])
        if name.startswith("SM80_16x8x"):
            if al != make_layout((wm, wn, 1), stride=(wn, 1, 0)):
                raise ValueError(f"to_gluon: Triton's mma v2 numbers warps N-first, atom layout "
                                 f"{make_layout((wm, wn, 1), stride=(wn, 1, 0))}, but got {al}.")
            parent = GluonLayout("NVMMADistributedLayout", version=[2, 0], warps_per_cta=[wm, wn], instr_shape=[16, 8])
            kw = {8: 1, 16: 2, 32: 4}[int(x.atom.shape_mnk[2])]
        elif name.startswith("SM90_64x"):
            if al != make_layout((wm, wn, 1)):
                raise ValueError(f"to_gluon: Triton's mma v3 numbers warpgroups M-first, atom layout "
                                 f"{make_layout((wm, wn, 1))}, but got {al}.")
            n, k = int(x.atom.shape_mnk[1]), int(x.atom.shape_mnk[2])
            parent = GluonLayout("NVMMADistributedLayout", version=[3, 0], warps_per_cta=[4 * wm, wn],
                                 instr_shape=[16, n, 16])
            kw = {8: 1, 16: 2, 32: 4}[k]
        else:
            raise ValueError(f"to_gluon: expected an SM80 16x8xK or SM90 64xNxK tiled MMA, but got {name}.")
        if operand == "C":
            return parent
        if operand in ("A", "B"):
            return GluonLayout("DotOperandLayout", operand_index=0 if operand == "A" else 1, parent=parent,
                               k_width=kw)
        raise ValueError(f"to_gluon: expected operand 'A', 'B' or 'C', but got {operand!r}.")
    if type(x) not in (Layout, ComposedLayout):
        raise TypeError(f"to_gluon: expected a tiled MMA, a (tile_mn, tv) pair, a memory layout or a LinearLayout, "
                        f"but got {type(x).__name__}.")
    if operand is not None:
        raise ValueError(f"to_gluon: an operand ({operand!r}) names a tiled MMA's A/B/C, but got a memory layout.")
    ll = to_triton(x)
    nv = _nvmma_of(x)
    if nv is not None:
        try:
            same = to_triton(_nvmma_shared(nv, [s for _, s in ll.out_dims])) == ll
        except ValueError:
            same = False
        if same:
            return nv
    return GluonLayout("SharedLinearLayout", offset_bases=[list(b) for b in ll.bases["offset"]])


def _nvmma_of(x):
    """The NVMMASharedLayout a GMMA smem layout names (checked by the caller), or None."""
    if not (type(x) is ComposedLayout and x.ptr_bits in (8, 16, 32) and type(x.inner) is Swizzle and
            x.outer.rank == 2):
        return None
    bits, B = x.ptr_bits, x.inner.bits
    if x.inner.base != (128 // bits).bit_length() - 1 or x.inner.shift != 3 or B > 3:
        return None
    mn = x.outer(1, 0) == 1
    return GluonLayout("NVMMASharedLayout", swizzle_byte_width=0 if B == 0 else 16 << B, element_bitwidth=bits,
                       rank=2, transposed=bool(mn))


def _distributed_gluon(ll):
    if ll.bases.get("block"):
        raise ValueError(f"to_gluon: expected no block bases (one CTA), but got {ll.bases['block']}.")
    shape = [s for _, s in ll.out_dims]
    g = _blocked_of(ll)
    if g is not None:
        return g
    return GluonLayout("DistributedLinearLayout", reg_bases=[list(b) for b in ll.bases.get("register", [])],
                       lane_bases=[list(b) for b in ll.bases.get("lane", [])],
                       warp_bases=[list(b) for b in ll.bases.get("warp", [])], block_bases=[], shape=shape)
