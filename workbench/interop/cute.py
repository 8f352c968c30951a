"""CuTe's text and code for atoms and tiled objects: read what ``print(tiled_mma)`` writes, write C++ and DSL.

``parse_cute(text)`` reads one printed object: a layout, composed layout, tiler or identity tensor (through
``workbench.layout.cute_text``), or a whole ``TiledMMA`` / ``TiledCopy`` / ``MMA_Atom`` / ``Copy_Atom`` block as
CuTe C++ prints it (and the ``Tiled MMA`` / ``Copy Atom`` blocks CuTe DSL prints).  CuTe prints no atom names,
so the atom is found by its layouts in the workbench's catalogs; the result keeps the printed layouts (their
hierarchy too).  ``format_cute(x, style)`` writes the text back, ``to_cute_cpp(x)`` / ``to_cute_dsl(x)`` the code
that builds ``x``.
"""

from __future__ import annotations

import re

from .. import _element_types as et
from ..atoms import CopyAtom, MMAAtom, TiledCopy, TiledMMA, copy_atom, make_tiled_mma, mma_atom
from ..atoms.copy import _CATALOG as _COPY_CATALOG
from ..atoms.mma import mma_atom_names
from ..layout import ComposedLayout, IdentityTensor, Layout, Swizzle, complement, make_layout, tiled_product
from ..layout import cute_text as ct
from ..layout.basis import E
from ..layout.cute_text import CuteTextError
from ..layout.values import Symbolic

__all__ = ["parse_cute", "format_cute", "to_cute_cpp", "to_cute_dsl", "CuteTextError"]


# ---- reading ----------------------------------------------------------------------------------------

_KEYS = {  # normalized key (lowercase, no spaces/underscores) -> field
    "thrlayoutvmnk": "vmnk", "permutationmnk": "perm", "thrid": "thr_id", "shapemnk": "mnk",
    "layoutatv": "A", "layoutbtv": "B", "layoutctv": "C", "tvlayouta": "A", "tvlayoutb": "B", "tvlayoutc": "C",
    "vallayoutsrc": "src", "vallayoutdst": "dst", "vallayoutref": "ref", "tvlayoutsrc": "src", "tvlayoutdst": "dst",
    "valuetype": "vtype", "tilermn": "tiler", "tiledlayouttv": "tv", "tvlayouttiled": "tv",
}
_HEADS = {"tiledmma": "TiledMMA", "tiledcopy": "TiledCopy", "mmaatom": "MMA_Atom", "copyatom": "Copy_Atom"}


def _norm(s):
    return re.sub(r"[\s_]", "", s).lower()


def _blocks(text):
    """[(head, {field: (value, absolute position)}, head position)] of a printed atom block."""
    out, pos = [], 0
    for line in text.splitlines(keepends=True):
        body = line.strip()
        if body:
            start = pos + line.index(body)
            if ":" not in body:
                head = _HEADS.get(_norm(body))
                if head is None:
                    raise CuteTextError(text, start, "TiledMMA, TiledCopy, MMA_Atom or Copy_Atom (a block's title)")
                out.append((head, {}, start))
            else:
                key, _, value = body.partition(":")
                field = _KEYS.get(_norm(key))
                if field is None or not out:
                    raise CuteTextError(text, start, "a field CuTe prints in this block (ThrID:, LayoutA_TV:, ...)"
                                        if out else "a block title (TiledMMA, MMA_Atom, ...) before the fields")
                vstart = start + len(key) + 1 + (len(value) - len(value.lstrip()))
                out[-1][1][field] = (value.strip(), vstart)
        pos += len(line)
    return out


def _sub(text, field, fields, fn, what, head_at, style):
    """fn(value text) re-raising a CuteTextError at its place in the whole text."""
    if field not in fields:
        raise CuteTextError(text, head_at, f"a {what} line in this block", "none")
    value, at = fields[field]
    try:
        return fn(value, style)
    except CuteTextError as e:
        raise CuteTextError(text, at + e.column - 1, str(e).split(" at column")[0][len("Expected "):]) from None


def _same_function(a, b):
    """Equal as (thread, value) functions: the same thread and value counts, the same offsets."""
    try:
        if a.size != b.size or a[0].size != b[0].size:
            return False
        return bool((a.offsets() == b.offsets()).all())
    except (ValueError, TypeError, IndexError):
        return a == b


_MMA_INDEX = {}


def _mma_candidates(mnk):
    if mnk not in _MMA_INDEX:
        tag = f"_{mnk[0]}x{mnk[1]}x{mnk[2]}_"
        names = [n for n in mma_atom_names() if tag in n]
        if not names and mnk != (1, 1, 1):
            return []       # a shape of no catalog atom: nothing cached (the index stays as large as the catalog)
        atoms = []
        for n in names:
            atoms.append(mma_atom(n))
            if n.startswith("SM90") and "_TN" not in n:   # 16-bit GMMA: the MN-major operands print alike
                pass
        if mnk == (1, 1, 1):
            atoms.append(mma_atom("UniversalFMA"))
        _MMA_INDEX[mnk] = atoms
    return _MMA_INDEX[mnk]


def _mma_from_fields(text, fields, head_at, style, name):
    thr = _sub(text, "thr_id", fields, ct.parse_layout, "ThrID", head_at, style)
    mnk_t = _sub(text, "mnk", fields, ct.parse_tiler, "Shape_MNK", head_at, style)
    a, b, c = (_sub(text, k, fields, ct.parse_layout, f"Layout{k}_TV", head_at, style) for k in "ABC")
    ok = type(mnk_t) is tuple and len(mnk_t) == 3 and all(type(x) is int and x > 0 for x in mnk_t)
    mnk = mnk_t if ok else None
    if mnk is None:
        raise CuteTextError(text, fields["mnk"][1], "a shape (M,N,K)")
    if name is not None:
        base = mma_atom(name) if not isinstance(name, MMAAtom) else name
        found = [base]
    else:
        found = [x for x in _mma_candidates(mnk)
                 if _same_function(x.thr_id, thr) and all(_same_function(p, q) for p, q in
                                                          ((x.tv_layout_A, a), (x.tv_layout_B, b), (x.tv_layout_C, c)))]
    if not found:
        raise CuteTextError(text, head_at, "an MMA atom of the workbench's catalog (its ThrID and TV layouts)",
                            f"layouts no catalog atom of shape {mnk} has")
    base = found[0]
    if not (_same_function(base.thr_id, thr) and _same_function(base.tv_layout_A, a)
            and _same_function(base.tv_layout_B, b) and _same_function(base.tv_layout_C, c)):
        raise ValueError(f"parse_cute: the printed layouts are not those of {base.name} (mma_atom={name!r}).")
    if len({(x.name, x.major_a, x.major_b) for x in found}) > 1:
        # CuTe prints no value types: several atoms (F16 and BF16 ...) have these layouts; none is claimed
        return MMAAtom("MMA_Atom", mnk, thr, a, b, c, (None,) * 4, None, base.major_a, base.major_b, base.a_source)
    return MMAAtom(base.name, mnk, thr, a, b, c, (base.d_type, base.a_type, base.b_type, base.c_type),
                   base.type_codes, base.major_a, base.major_b, base.a_source)


_UNSIGNED = {8: et.Uint8, 16: et.Uint16, 32: et.Uint32, 64: et.Uint64}
_SHORT = {t.short: t for t in et.ALL_SCALAR_TYPES}


def _value_type(text, fields, head_at, value_type):
    if value_type is not None:
        return value_type
    v, at = fields.get("vtype", (None, head_at))
    if v is None:
        raise CuteTextError(text, head_at, "a ValueType line in the Copy_Atom block", "none")
    m = re.fullmatch(r"(\d+)b", v)
    if m and int(m.group(1)) in _UNSIGNED:   # CuTe C++ prints the width only
        return _UNSIGNED[int(m.group(1))]
    if v in _SHORT:
        return _SHORT[v]
    raise CuteTextError(text, at, "a value type such as 16b (CuTe C++) or f16 (CuTe DSL)")


def _copy_from_fields(text, fields, head_at, style, name, value_type):
    vt = _value_type(text, fields, head_at, value_type)
    thr = _sub(text, "thr_id", fields, ct.parse_layout, "ThrID", head_at, style)
    src = _sub(text, "src", fields, ct.parse_layout, "ValLayoutSrc", head_at, style)
    dst = _sub(text, "dst", fields, ct.parse_layout, "ValLayoutDst", head_at, style)
    if name is not None:
        base = copy_atom(name, vt) if not isinstance(name, CopyAtom) else name
        if not (_same_function(base.thr_id, thr) and _same_function(base.layout_src_tv, src)
                and _same_function(base.layout_dst_tv, dst)):
            raise ValueError(f"parse_cute: expected the printed layouts of {base.name} (copy_atom={name!r}), but the "
                             f"Copy_Atom prints ThrID {thr}, ValLayoutSrc {src}, ValLayoutDst {dst}.")
        found = [base]
    else:
        found = []
        for n in _COPY_CATALOG:
            try:
                x = copy_atom(n, vt)
            except ValueError:
                continue
            if _same_function(x.thr_id, thr) and _same_function(x.layout_src_tv, src) and \
                    _same_function(x.layout_dst_tv, dst):
                found.append(x)
    if not found:
        raise CuteTextError(text, head_at, f"a copy atom of the workbench's catalog over {vt.bits}-bit values",
                            "layouts no catalog atom has")
    if len(found) > 1:
        raise ValueError(f"parse_cute: the printed Copy_Atom has the layouts of {', '.join(x.name for x in found)} "
                         f"(CuTe prints no instruction name); pass copy_atom='<one of them>'.")
    return found[0]


def _atom_layout_from_vmnk(text, at, thr_id, vmnk):
    """The atom layout (M,N,K) that make_tiled_mma turned into ThrLayoutVMNK = tiled_product(thr_id, it)."""
    modes = [vmnk[i] for i in range(1, 4)] if type(vmnk.shape) is tuple and len(vmnk.shape) == 4 else None
    if modes is None:
        raise CuteTextError(text, at, "a rank-4 ThrLayoutVMNK (V,M,N,K)")
    comp = complement(thr_id, thr_id.size * max(1, make_layout(tuple(m.shape for m in modes)).size) * 64)
    offs = {int(o): i for i, o in enumerate(comp.offsets())}

    def back(d):
        if type(d) is tuple:
            return tuple(back(e) for e in d)
        if d == 0:
            return 0
        if d not in offs:
            raise CuteTextError(text, at, "a ThrLayoutVMNK that make_tiled_mma builds from the ThrID",
                                f"a stride {d} it cannot give")
        return offs[d]
    atom_layout = Layout(tuple(m.shape for m in modes), tuple(back(m.stride) for m in modes))
    if not _same_function(tiled_product(thr_id, atom_layout), vmnk):
        raise CuteTextError(text, at, "a ThrLayoutVMNK that make_tiled_mma builds from the ThrID", str(vmnk))
    return atom_layout


def parse_cute(text: str, style: str | None = None, *, mma_atom=None, copy_atom=None, value_type=None):
    """The workbench object for what CuTe printed.

    A layout, composed layout, identity tensor or tiler (one line), or a block ``print(tiled_mma)``,
    ``print(tiled_copy)``, ``print(mma_atom)`` or ``print(copy_atom)`` writes (CuTe C++ or CuTe DSL).  The atom is
    found by its layouts; where several catalog atoms share them (F16 and BF16 MMAs: CuTe prints no value types)
    an MMA atom is named ``"MMA_Atom"`` with unknown value types, and a copy atom must be named with
    ``copy_atom="..."``.  ``mma_atom=``/``copy_atom=`` name the atom; ``value_type=`` the element type of a copy
    (CuTe C++ prints its width only: ``16b`` reads as ``wb.Uint16``).  Bad text raises ``CuteTextError`` (a
    ValueError) with the line and column.
    """
    if not isinstance(text, str):
        raise TypeError(f"parse_cute: expected the text CuTe printed (a str), but got {type(text).__name__}.")
    if "\n" not in text.strip() and not _HEADS.get(_norm(text)):
        return ct.parse_any(text.strip(), style)
    style = style or ct.text_style(text)
    blocks = _blocks(text)
    heads = [b[0] for b in blocks]
    if heads == ["MMA_Atom"]:
        return _mma_from_fields(text, blocks[0][1], blocks[0][2], style, mma_atom)
    if heads == ["Copy_Atom"]:
        return _copy_from_fields(text, blocks[0][1], blocks[0][2], style, copy_atom, value_type)
    if heads == ["TiledMMA", "MMA_Atom"]:
        (_, tf, tat), (_, af, aat) = blocks
        atom = _mma_from_fields(text, af, aat, style, mma_atom)
        vmnk = _sub(text, "vmnk", tf, ct.parse_layout, "ThrLayoutVMNK", tat, style)
        perm = _sub(text, "perm", tf, ct.parse_tiler, "PermutationMNK", tat, style)
        if type(perm) is not tuple or len(perm) != 3:
            raise CuteTextError(text, tf["perm"][1], "a permutation of three modes (M,N,K)")
        try:
            atom_layout = _atom_layout_from_vmnk(text, tf["vmnk"][1], atom.thr_id, vmnk)
            return make_tiled_mma(atom, atom_layout, perm)
        except (TypeError, KeyError, IndexError, ZeroDivisionError) as e:   # layouts no make_tiled_mma makes
            raise CuteTextError(text, tf["vmnk"][1], "a ThrLayoutVMNK and PermutationMNK that make_tiled_mma builds",
                                f"{vmnk} and {perm} ({type(e).__name__}: {e})") from None
    if heads == ["TiledCopy", "Copy_Atom"]:
        (_, tf, tat), (_, af, aat) = blocks
        atom = _copy_from_fields(text, af, aat, style, copy_atom, value_type)
        tiler = _sub(text, "tiler", tf, ct.parse_tiler, "Tiler_MN", tat, style)
        tv = _sub(text, "tv", tf, ct.parse_layout, "TiledLayout_TV", tat, style)
        tiler = tuple(t.shape if type(t) is Layout and t.stride == 1 else t for t in tiler)
        try:
            return TiledCopy(atom, tv, tiler)
        except (TypeError, KeyError, IndexError, ZeroDivisionError) as e:   # layouts no make_tiled_copy makes
            raise CuteTextError(text, tf["tv"][1], "a TiledLayout_TV and Tiler_MN that make_tiled_copy builds",
                                f"{tv} and {tiler} ({type(e).__name__}: {e})") from None
    raise CuteTextError(text, blocks[0][2] if blocks else 0,
                        "one of: TiledMMA + MMA_Atom, TiledCopy + Copy_Atom, MMA_Atom, Copy_Atom",
                        " + ".join(heads) or "nothing")


# ---- writing text ------------------------------------------------------------------------------------

def _perm_cpp(p):
    if p is None:
        return "_"
    if type(p) is Layout and type(p.shape) is int and p.stride == 1:
        return f"_{p.shape}"   # Tile<_32>: CuTe prints the integer
    return ct.format_cpp(p)


def _perm_dsl(p):
    if p is None:
        return "_"
    return ct.format_dsl(Layout(p, 1) if type(p) is int else p)


def _mma_block(a, style):
    f = ct.format_cpp if style == "cpp" else ct.format_dsl
    mnk = ct.format_cpp(tuple(a.shape_mnk)) if style == "cpp" else "(" + ",".join(map(str, a.shape_mnk)) + ")"
    if style == "cpp":
        return ("MMA_Atom\n"
                f"  ThrID:      {f(a.thr_id)}\n  Shape_MNK:  {mnk}\n  LayoutA_TV: {f(a.tv_layout_A)}\n"
                f"  LayoutB_TV: {f(a.tv_layout_B)}\n  LayoutC_TV: {f(a.tv_layout_C)}")
    return ("MMA Atom\n"
            f"  ThrID:       {f(a.thr_id)}\n  Shape MNK:   {mnk}\n  TV Layout A: {f(a.tv_layout_A)}\n"
            f"  TV Layout B: {f(a.tv_layout_B)}\n  TV Layout C: {f(a.tv_layout_C)}")


def _copy_block(a, style, tiled=False):
    f = ct.format_cpp if style == "cpp" else ct.format_dsl
    if style == "cpp":
        return ("Copy_Atom\n"
                f"  ThrID:        {f(a.thr_id)}\n  ValLayoutSrc: {f(a.layout_src_tv)}\n"
                f"  ValLayoutDst: {f(a.layout_dst_tv)}\n  ValLayoutRef: {f(a.layout_ref_tv)}\n"
                f"  ValueType:    {a.value_type.bits}b")
    w = 17 if tiled else 15
    return ("Copy Atom\n" + "".join(f"  {k:<{w}}{v}\n" for k, v in (
        ("ThrID:", f(a.thr_id)), ("TV Layout Src:", f(a.layout_src_tv)), ("TV Layout Dst:", f(a.layout_dst_tv)),
        ("Value type:", a.value_type.short))).rstrip("\n"))


def format_cute(x, style: str = "cpp") -> str:
    """``x`` as CuTe prints it: ``style="cpp"`` CuTe C++'s ``print(x)``, ``"dsl"`` CuTe DSL's ``print(x)``.
    Layouts, composed layouts, swizzles, identity tensors, tilers, MMA and copy atoms, TiledMMA, TiledCopy."""
    if style not in ("cpp", "dsl"):
        raise ValueError(f"format_cute: expected style 'cpp' or 'dsl', but got {style!r}.")
    if isinstance(x, MMAAtom):
        return _mma_block(x, style)
    if isinstance(x, CopyAtom):
        return _copy_block(x, style)
    if isinstance(x, TiledMMA):
        if style == "cpp":
            perm = "(" + ",".join(_perm_cpp(p) for p in x.permutation_mnk) + ")"
            return (f"TiledMMA\n  ThrLayoutVMNK:  {ct.format_cpp(x.thr_layout_vmnk)}\n  PermutationMNK: {perm}\n"
                    + _mma_block(x.atom, "cpp"))
        perm = "(" + ",".join(_perm_dsl(p) for p in x.permutation_mnk) + ")"
        blk = _mma_block(x.atom, "dsl").split("\n")
        body = "\n".join("  " + ln.strip().split(":")[0] + ":" + " " * (16 - len(ln.strip().split(":")[0]))
                         + ln.split(":", 1)[1].strip() for ln in blk[1:])
        return (f"Tiled MMA\n  Thr Layout VMNK: {ct.format_dsl(x.thr_layout_vmnk)}\n  Permutation MNK: {perm}\n"
                f"MMA Atom\n{body}")
    if isinstance(x, TiledCopy):
        f = ct.format_cpp if style == "cpp" else ct.format_dsl
        tiler = f(tuple(x.tiler_mn))
        if style == "cpp":
            return (f"TiledCopy\n  Tiler_MN:       {tiler}\n  TiledLayout_TV: {f(x.layout_tv)}\n"
                    + _copy_block(x.atom, "cpp"))
        return (f"Tiled Copy\n  Tiler MN:        {tiler}\n  TV Layout tiled: {f(x.layout_tv)}\n"
                + _copy_block(x.atom, "dsl", tiled=True))
    return ct.format_cpp(x) if style == "cpp" else ct.format_dsl(x)


# ---- writing C++ -----------------------------------------------------------------------------------

_CXX_TYPES = {
    et.Float16: "half_t", et.BFloat16: "bfloat16_t", et.Float32: "float", et.Float64: "double",
    et.Int8: "int8_t", et.Uint8: "uint8_t", et.Int16: "int16_t", et.Uint16: "uint16_t", et.Int32: "int32_t",
    et.Uint32: "uint32_t", et.Int64: "int64_t", et.Uint64: "uint64_t", et.Float8E4M3FN: "float_e4m3_t",
    et.Float8E5M2: "float_e5m2_t", et.Float4E2M1FN: "float_e2m1_t", et.Complex64: "complex<float>",
    et.Complex128: "complex<double>", et.Boolean: "bool",
}


def _cxx_type(t):
    if t not in _CXX_TYPES:
        raise ValueError(f"to_cute_cpp: expected an element type CuTe C++ names ({', '.join(x.name for x in _CXX_TYPES)}), "
                         f"but got {t}.")
    return _CXX_TYPES[t]


def _static_t(t, kind):
    """A static IntTuple as a C++ type: Shape<_4,Shape<_2,_3>>; None when something is dynamic."""
    if type(t) is tuple:
        parts = [_static_t(e, kind) for e in t]
        return None if None in parts else f"{kind}<{','.join(parts)}>"
    if type(t) is int:
        return f"_{t}" if t >= 0 else f"Int<{t}>"
    if type(t) is E and type(t.scale) is int:
        return f"ScaledBasis<{_static_t(t.scale, kind)},{','.join(map(str, t.path))}>"
    return None


def _value_t(t, kind):
    """An IntTuple as a C++ value: make_shape(4, _6{}); a symbolic ? without a value cannot be written."""
    if type(t) is tuple:
        return f"make_{kind.lower()}(" + ", ".join(_value_t(e, kind) for e in t) + ")"
    if type(t) is int:
        return f"_{t}{{}}" if t >= 0 else f"Int<{t}>{{}}"
    if type(t) is E:
        return f"{_value_t(t.scale, kind)} * E<{','.join(map(str, t.path))}>{{}}"
    if isinstance(t, Symbolic):
        v = getattr(t, "value", None)
        if v is None:
            raise ValueError(f"to_cute_cpp: a dynamic {t} without a run-time value has nothing to write; give it a value "
                             f"(wb.Dyn(n)) or a static int.")
        return f"int64_t({v})" if getattr(t, "width", 32) == 64 else str(v)
    raise TypeError(f"to_cute_cpp: expected an IntTuple, but got {type(t).__name__}.")


def _layout_cpp(L):
    if type(L) is not Layout:
        raise TypeError(f"to_cute_cpp: expected a Layout, but got {type(L).__name__}.")
    s, d = _static_t(L.shape, "Shape"), _static_t(L.stride, "Stride")
    if s is not None and d is not None:
        return f"Layout<{s},{d}>{{}}"
    shape = _value_t(L.shape, "Shape") if type(L.shape) is tuple else _value_t(L.shape, "Shape")
    stride = _value_t(L.stride, "Stride")
    return f"make_layout({shape}, {stride})"


def _tile_cpp(p):
    if p is None:
        return "Underscore"
    if type(p) is int:
        return f"_{p}"
    if type(p) is Layout:
        if type(p.shape) is int and p.stride == 1 and type(p.shape) is int:
            return f"_{p.shape}"
        text = _layout_cpp(p)
        if not text.startswith("Layout<"):
            raise ValueError(f"to_cute_cpp: a Tile<...> mode is a type, so its layout must be static, but got {p}.")
        return text[:-2]
    raise TypeError(f"to_cute_cpp: a tile mode must be None, an int or a static Layout, but got {type(p).__name__}.")


def _tile_value_cpp(p):
    """A tiler mode as a C++ value (make_tile's arguments): _ , _N{} or a layout object (static or made)."""
    if p is None:
        return "_"
    if type(p) is Layout:
        return _layout_cpp(p)
    return _tile_cpp(p) + "{}"


def _mma_op_cpp(a):
    if a.name == "MMA_Atom":
        raise ValueError("to_cute_cpp: this MMA atom was read from CuTe's print, which names no instruction (several have "
                         "its layouts); read it with parse_cute(text, mma_atom='SM80_...') to name it.")
    if a.name == "UniversalFMA":
        return f"UniversalFMA<{','.join(_cxx_type(t) for t in (a.d_type, a.a_type, a.b_type, a.c_type))}>"
    if not a.name.startswith("SM90_"):
        return a.name
    if "_TN" not in a.name:
        return f"{a.name}<GMMA::Major::{a.major_a}, GMMA::Major::{a.major_b}>"
    return a.name if a.a_type.is_integer else f"{a.name}<>"


def _copy_op_cpp(a):
    m = re.fullmatch(r"(UniversalCopy|SM80_CP_ASYNC_CACHEALWAYS|SM80_CP_ASYNC_CACHEGLOBAL)_U(\d+)", a.name)
    op = f"{m.group(1)}<uint{m.group(2)}_t>" if m else a.name
    return f"Copy_Atom<{op}, {_cxx_type(a.value_type)}>"


def to_cute_cpp(x) -> str:
    """CuTe C++ that builds ``x``: ``Layout<Shape<_4,_8>,Stride<_1,_4>>{}`` when static,
    ``make_layout(make_shape(4, _8{}), ...)`` otherwise, ``composition(Swizzle<3,3,3>{}, ...)``,
    ``make_identity_tensor(...)``, ``MMA_Atom<...>{}``, ``make_tiled_mma(SM80_..._TN{}, Layout<...>{}, Tile<...>{})``,
    ``Copy_Atom<...>{}`` and ``make_tiled_copy_impl(Copy_Atom<...>{}, Layout<...>{}, Tile<...>{})`` (CuTe's own
    constructor of every TiledCopy)."""
    if type(x) is Layout:
        return _layout_cpp(x)
    if type(x) is Swizzle:
        return f"Swizzle<{x.bits},{x.base},{x.shift}>{{}}"
    if type(x) is ComposedLayout:
        outer = _layout_cpp(x.outer)
        if x.ptr_bits is not None:
            sw = x.cute_swizzle
            head = f"Swizzle<{sw.bits},{sw.base},{sw.shift}>"
            if outer.startswith("Layout<"):
                return f"ComposedLayout<{head},smem_ptr_flag_bits<{x.ptr_bits}>,{outer[:-2]}>{{}}"
            return f"make_composed_layout({head}{{}}, smem_ptr_flag_bits<{x.ptr_bits}>{{}}, {outer})"
        inner = to_cute_cpp(x.inner)
        if type(x.inner) is Swizzle and type(x.offset) is int and x.offset == 0:
            return f"composition({inner}, {outer})"
        return f"make_composed_layout({inner}, {_value_t(x.offset, 'Shape')}, {outer})"
    if type(x) is IdentityTensor:
        if any(v != 0 for v in (x.origin if isinstance(x.origin, tuple) else (x.origin,))
               if not isinstance(v, tuple)) or _nonzero(x.origin):
            raise ValueError(f"to_cute_cpp: an identity tensor with origin {x.origin} (a tile of one) has no single "
                             f"constructor; write the whole tensor's and tile it.")
        return f"make_identity_tensor({_value_t(x.layout.shape, 'Shape')})"
    if isinstance(x, MMAAtom):
        return f"MMA_Atom<{_mma_op_cpp(x)}>{{}}"
    if isinstance(x, CopyAtom):
        return f"{_copy_op_cpp(x)}{{}}"
    if isinstance(x, TiledMMA):
        args = [f"{_mma_op_cpp(x.atom)}{{}}", _layout_cpp(x.atom_layout_mnk)]
        if any(p is not None for p in x.permutation_mnk):
            args.append(f"Tile<{','.join(_tile_cpp(p) for p in x.permutation_mnk)}>{{}}")
        return f"make_tiled_mma({', '.join(args)})"
    if isinstance(x, TiledCopy):
        return (f"make_tiled_copy_impl({_copy_op_cpp(x.atom)}{{}}, {_layout_cpp(x.layout_tv)}, "
                f"Tile<{','.join(_tile_cpp(t) for t in x.tiler_mn)}>{{}})")
    if type(x) is tuple:
        return f"make_tile({', '.join(_tile_value_cpp(p) for p in x)})"
    raise TypeError(f"to_cute_cpp: expected a Layout, ComposedLayout, Swizzle, identity tensor, atom, TiledMMA or "
                    f"TiledCopy, but got {type(x).__name__}.")


def _nonzero(o):
    if isinstance(o, tuple):
        return any(_nonzero(e) for e in o)
    return not (type(o) is int and o == 0)


# ---- writing CuTe DSL ---------------------------------------------------------------------------------

def _py_t(t):
    if type(t) is tuple:
        return "(" + ", ".join(_py_t(e) for e in t) + ("," if len(t) == 1 else "") + ")"
    if type(t) is int:
        return str(t)
    if type(t) is E:
        raise ValueError("to_cute_dsl: a basis-strided layout is written as cute.make_identity_layout(shape) only "
                         "(CuTe DSL builds no other basis strides from Python).")
    if isinstance(t, Symbolic):
        raise ValueError(f"to_cute_dsl: a dynamic value {t} is a run-time argument of the @cute.jit function; "
                         f"CuTe DSL code with it as a literal would make it static.")
    raise TypeError(f"to_cute_dsl: expected an IntTuple, but got {type(t).__name__}.")


def _is_basis_like(shape, stride, path=()):
    if type(shape) is tuple:
        return type(stride) is tuple and all(_is_basis_like(s, d, path + (i,)) for i, (s, d) in
                                             enumerate(zip(shape, stride)))
    return stride == E(path) if path else stride == 1


def _layout_dsl(L):
    if _is_basis_like(L.shape, L.stride) and type(L.shape) is tuple:
        return f"cute.make_identity_layout({_py_t(L.shape)})"
    return f"cute.make_layout({_py_t(L.shape)}, stride={_py_t(L.stride)})"


_DSL_TYPES = {t: f"cutlass.{t.name}" for t in et.ALL_SCALAR_TYPES}


def _mma_op_dsl(a):
    m = re.fullmatch(r"SM80_(16x8x(?:8|16))_(F16|F32)(F16|BF16)\3\2_TN", a.name)
    if m:
        mnk = tuple(int(v) for v in m.group(1).split("x"))
        ab, acc = et.BFloat16 if m.group(3) == "BF16" else et.Float16, et.Float32 if m.group(2) == "F32" else et.Float16
        return f"cute.nvgpu.warp.MmaF16BF16Op({_DSL_TYPES[ab]}, {_DSL_TYPES[acc]}, {mnk})"
    if a.name == "UniversalFMA" and a.d_type is a.a_type is a.b_type is a.c_type:
        return f"cute.nvgpu.MmaUniversalOp({_DSL_TYPES[a.d_type]})"
    raise ValueError(f"to_cute_dsl: the MMA atom {a.name} has no CuTe DSL 4.8.1 op the workbench writes; written: "
                     f"SM80_16x8x8/16x8x16 F16/BF16 (cute.nvgpu.warp.MmaF16BF16Op) and UniversalFMA (MmaUniversalOp).")


def _copy_op_dsl(a):
    m = re.fullmatch(r"SM75_U32x(\d)_LDSM_N|SM75_U16x(\d)_LDSM_T", a.name)
    if m:
        n = int(m.group(1)) if m.group(1) else int(m.group(2)) // 2
        return f"cute.nvgpu.warp.LdMatrix8x8x16bOp({bool(m.group(2))}, {n})", None
    m = re.fullmatch(r"SM90_U32x(\d)_STSM_N|SM90_U16x(\d)_STSM_T", a.name)
    if m:
        n = int(m.group(1)) if m.group(1) else int(m.group(2)) // 2
        return f"cute.nvgpu.warp.StMatrix8x8x16bOp({bool(m.group(2))}, {n})", None
    m = re.fullmatch(r"UniversalCopy_U(\d+)", a.name)
    if m:
        return "cute.nvgpu.CopyUniversalOp()", int(m.group(1))
    m = re.fullmatch(r"SM80_CP_ASYNC_CACHE(ALWAYS|GLOBAL)_U(\d+)", a.name)
    if m:
        mode = "ALWAYS" if m.group(1) == "ALWAYS" else "GLOBAL"
        return (f"cute.nvgpu.cpasync.CopyG2SOp(cache_mode=cute.nvgpu.cpasync.LoadCacheMode.{mode})",
                int(m.group(2)))
    raise ValueError(f"to_cute_dsl: the copy atom {a.name} has no CuTe DSL op the workbench writes.")


def _copy_atom_dsl(a):
    op, bits = _copy_op_dsl(a)
    extra = f", num_bits_per_copy={bits}" if bits else ""
    return f"cute.make_copy_atom({op}, {_DSL_TYPES[a.value_type]}{extra})"


def _tile_dsl(p):
    if p is None:
        return "None"
    if type(p) is int:
        return str(p)
    return _layout_dsl(p)


def to_cute_dsl(x) -> str:
    """The CuTe DSL (Python, inside ``@cute.jit``) that builds ``x``: ``cute.make_layout((4, 8), stride=(1, 4))``,
    ``cute.make_composed_layout(cute.make_swizzle(3, 4, 3), 0, ...)``, ``cute.make_identity_tensor(...)``,
    ``cute.make_mma_atom(...)``, ``cute.make_tiled_mma(op, atom_layout, permutation_mnk=...)``,
    ``cute.make_copy_atom(...)``, ``cute.make_tiled_copy(atom, layout_tv, tiler_mn)``.  Static values only: a
    dynamic ``?`` is a run-time argument there."""
    if type(x) is Layout:
        return _layout_dsl(x)
    if type(x) is Swizzle:
        return f"cute.make_swizzle({x.bits}, {x.base}, {x.shift})"
    if type(x) is ComposedLayout:
        inner = to_cute_dsl(x.cute_swizzle) if x.ptr_bits is not None else to_cute_dsl(x.inner)
        return f"cute.make_composed_layout({inner}, {_py_t(x.offset)}, {_layout_dsl(x.outer)})"
    if type(x) is IdentityTensor:
        if _nonzero(x.origin):
            raise ValueError(f"to_cute_dsl: an identity tensor with origin {x.origin} has no single constructor.")
        return f"cute.make_identity_tensor({_py_t(x.layout.shape)})"
    if isinstance(x, MMAAtom):
        return f"cute.make_mma_atom({_mma_op_dsl(x)})"
    if isinstance(x, CopyAtom):
        return _copy_atom_dsl(x)
    if isinstance(x, TiledMMA):
        perm = ""
        if any(p is not None for p in x.permutation_mnk):
            perm = f", permutation_mnk=({', '.join(_tile_dsl(p) for p in x.permutation_mnk)})"
        return f"cute.make_tiled_mma({_mma_op_dsl(x.atom)}, {_layout_dsl(x.atom_layout_mnk)}{perm})"
    if isinstance(x, TiledCopy):
        return (f"cute.make_tiled_copy({_copy_atom_dsl(x.atom)}, {_layout_dsl(x.layout_tv)}, "
                f"({', '.join(_tile_dsl(t) for t in x.tiler_mn)}))")
    raise TypeError(f"to_cute_dsl: expected a Layout, ComposedLayout, Swizzle, identity tensor, atom, TiledMMA or "
                    f"TiledCopy, but got {type(x).__name__}.")
