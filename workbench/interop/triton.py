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

``from_gluon(gl_layout, shape)`` gives the CuTe object a user would write for a Gluon layout object (or its
``gl.<Class>(...)`` text): ``NVMMADistributedLayout`` / ``DotOperandLayout`` -> a tiled MMA (with the operand),
``NVMMASharedLayout`` -> ``tile_to_shape`` of the GMMA smem atom, ``SwizzledSharedLayout`` -> ``Swizzle o Layout``.
``to_gluon(x, ...)`` writes the Gluon constructor text.  Proof: tests/test_interop_triton.py, against Triton's own
``to_linear_layout`` (runs where ``triton`` imports; see that file).
"""

from __future__ import annotations

import ast

from ..layout import ComposedLayout, Layout, Swizzle, make_layout
from .linear import LinearLayout, to_linear_layout

__all__ = ["to_triton", "from_gluon", "to_gluon", "GluonLayout"]

_CONVENTIONS = ("triton", "cute")


def _is_tiled_mma(x):
    return hasattr(x, "tv_layout_C_tiled") and hasattr(x, "tile_shape_mnk")


def to_triton(x, operand=None, convention="triton") -> LinearLayout:
    """Triton's LinearLayout of a tiled MMA's operand (``"A"``, ``"B"``, ``"C"``) or of a memory layout (shared,
    offset -> (dim0, dim1)).  See the module docstring for the two conventions."""
    if convention not in _CONVENTIONS:
        raise ValueError(f"to_triton: expected convention among {_CONVENTIONS}, but got {convention!r}.")
    if not _is_tiled_mma(x):
        if operand is not None:
            raise ValueError(f"to_triton: an operand ({operand!r}) names a tiled MMA's A/B/C, but got "
                             f"{type(x).__name__}.")
        if type(x) not in (Layout, ComposedLayout):
            raise TypeError(f"to_triton: expected a tiled MMA or a memory layout (Layout / swizzled ComposedLayout), "
                            f"but got {type(x).__name__}.")
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


# -- Gluon layout objects (duck-typed: triton need not be installed) -------------------------------------------------
class GluonLayout:
    """A Gluon layout as data, ``GluonLayout("NVMMASharedLayout", swizzle_byte_width=128, ...)``: what
    :func:`to_gluon` writes and :func:`from_gluon` reads when triton is not installed (a real ``gl.<Class>`` object
    is read by its attributes the same way)."""

    def __init__(self, cls, **kw):
        self.cls, self.kw = cls, kw
        for k, v in kw.items():
            setattr(self, k, v)

    def __repr__(self):
        args = ", ".join(f"{k}={_gl_arg(v)}" for k, v in self.kw.items())
        return f"gl.{self.cls}({args})"

    def __eq__(self, other):
        return type(other) is GluonLayout and (self.cls, self.kw) == (other.cls, other.kw)


def _gl_arg(v):
    return repr(v) if not isinstance(v, GluonLayout) else repr(v)


def _parse_gluon_text(text):
    """``gl.NVMMASharedLayout(swizzle_byte_width=128, ...)`` -> GluonLayout (literal keyword arguments only)."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as e:
        raise ValueError(f"from_gluon: expected Gluon constructor text such as 'gl.NVMMASharedLayout(...)', but got "
                         f"{text!r} ({e.msg}).") from None

    def conv(n):
        if isinstance(n, ast.Call):
            f = n.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            if name is None or n.args and name != "DotOperandLayout":
                raise ValueError(f"from_gluon: expected keyword arguments in {text!r}.")
            kw = {k.arg: conv(k.value) for k in n.keywords}
            for k, a in zip(("operand_index", "parent", "k_width"), n.args):
                kw[k] = conv(a)
            return GluonLayout(name, **kw)
        try:
            return ast.literal_eval(n)
        except ValueError:
            raise ValueError(f"from_gluon: expected literal arguments in {text!r}, but got {ast.unparse(n)}.") from None
    return conv(node)


def _cls(g):
    return g.cls if type(g) is GluonLayout else type(g).__name__


def _get(g, k, default=None):
    v = getattr(g, k, default)
    return getattr(v, "value", v)   # unwrap a gl.constexpr


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


def from_gluon(g, shape, atom=None):
    """The CuTe object a user would write for a Gluon layout ``g`` (a ``gl.<Class>`` object, a :class:`GluonLayout`
    or its constructor text) over a tensor of ``shape``:

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
    """
    if isinstance(g, str):
        g = _parse_gluon_text(g)
    cls = _cls(g)
    shape = [int(s) for s in shape]
    if cls == "NVMMADistributedLayout":
        return _mma_of(g, shape, "C", 2, atom), "C"
    if cls == "DotOperandLayout":
        op = "A" if int(_get(g, "operand_index")) == 0 else "B"
        return _mma_of(_get(g, "parent"), shape, op, int(_get(g, "k_width")), atom), op
    if cls == "NVMMASharedLayout":
        return _nvmma_shared(g, shape)
    if cls == "SwizzledSharedLayout":
        return _swizzled_shared(g, shape)
    raise ValueError(f"from_gluon: expected NVMMADistributedLayout, DotOperandLayout, NVMMASharedLayout or "
                     f"SwizzledSharedLayout, but got {cls}.")


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
    """The Gluon constructor for a workbench object, as text (a :class:`GluonLayout`, whose repr is the text):

    - a tiled MMA's operand built as :func:`from_gluon` builds them (SM80 16x8xK atoms with an N-first warp layout,
      or SM90 atoms with M-first warpgroups): ``gl.NVMMADistributedLayout(...)`` or ``gl.DotOperandLayout(...)``;
    - a GMMA smem atom (or ``tile_to_shape`` of one): ``gl.NVMMASharedLayout(...)``.

    Anything else is refused (use ``to_triton`` and ``gl.DistributedLinearLayout`` / ``gl.SharedLinearLayout`` with
    its bases).  Checked: the result read back by :func:`from_gluon` gives the same Triton layout."""
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
    if type(x) is ComposedLayout and x.ptr_bits is not None and type(x.inner) is Swizzle:
        bits, B = x.ptr_bits, x.inner.bits
        base = (128 // bits).bit_length() - 1
        if x.inner.base != base or x.inner.shift != 3 or B > 3:
            raise ValueError(f"to_gluon: expected a GMMA smem swizzle S<B,{base},3> for {bits}-bit elements, but got "
                             f"{x.inner}.")
        sw = 0 if B == 0 else 16 << B
        mn = x.outer(1, 0) == 1 if x.outer.rank == 2 else False
        return GluonLayout("NVMMASharedLayout", swizzle_byte_width=sw, element_bitwidth=bits, rank=2,
                           transposed=bool(mn))
    raise ValueError(f"to_gluon: expected a tiled MMA or a GMMA smem layout (Sw<..> o smem_ptr o ...), but got {x}.")
