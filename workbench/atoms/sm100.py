"""Blackwell UMMA atoms (tcgen05.mma): CuTe's ``MMA_Traits<SM100_MMA_*>`` (cute/atom/mma_traits_sm100.hpp).

``mma_atom("SM100_MMA_F16BF16_SS", a_type=wb.Float16, b_type=wb.Float16, c_type=wb.Float32, m=128, n=256,
a_major="K", b_major="K")``: the CuTe C++ type name, its template arguments as keywords in CuTe's order.
One UMMA is issued by one thread for the whole CTA (``ThrID _1``) or for a pair of CTAs (2x1SM: ``ThrID _2``,
each "thread" a CTA holding half of M and of N); A and B come from shared-memory descriptors (SS) or A from
tensor memory (TS); C always lives in tensor memory (:mod:`workbench.atoms.tmem`).  Every M, N, major and type
combination CuTe refuses (its static_asserts in cute/arch/mma_sm100_umma.hpp and the traits) is refused here
with CuTe's message.
"""

from __future__ import annotations

from .. import _element_types as et
from ..layout import Layout
from .mma import EXTENSIONS, MMAAtom
from .tmem import tmem_frg
from .umma_desc import UmmaInstrDescriptor, c_format, umma_format

__all__ = ["UmmaAtom", "umma_atom", "UMMA_FAMILIES"]

F16BF16 = ("Float16", "BFloat16")
S8 = ("Int8", "Uint8")
F8F6F4 = ("Float8E4M3FN", "Float8E5M2", "Float6E2M3FN", "Float6E3M2FN", "Float4E2M1FN")

# kind -> (PTX kind, operand types, accumulator types, K in elements (None: 256 bits), CuTe's type-size message)
_KINDS = {
    "F16BF16": ("f16", F16BF16, ("Float16", "Float32"), None, "supports 16bit types"),
    "TF32": ("tf32", ("TFloat32",), ("Float32",), None, "supports 32bit types"),
    "S8": ("i8", S8, ("Int32",), None, "supports 8bit types"),
    "F8F6F4": ("f8f6f4", F8F6F4, ("Float16", "Float32"), 32, "supports types with leq 8bit types"),
}


def _n_range(lo, step):
    return lambda n: n % step == 0 and lo <= n <= 256


def _rule_msg(name, kind, cta2, ts, m, n, b_major):
    """(M ok, N ok, CuTe's M message, CuTe's N message) for one family at (m, n)."""
    label = f"SM100_MMA_{kind}" if not cta2 else name
    if kind in ("F16BF16", "TF32"):
        if not cta2:
            mm = f"SM100_MMA_{kind} M-mode size should be 64 or 128 for 1 CTA cluster MMA."
            if not ts:
                return m in (64, 128), _n_range(8, 8)(n), mm, \
                    f"SM100_MMA_{kind} N-mode size should be a multiple of 8 between 8 and 256."
            ok = (m == 64 and _n_range(8, 8)(n)) or (m == 128 and _n_range(16, 16)(n))
            return m in (64, 128), ok, mm, (f"SM100_MMA_{kind} N-mode size should be a multiple of 8 between 8 and 256 "
                                            "for M=64, or a multiple of 16 between 16 and 256 for M=128.")
        lo = 32 if ts else 16
        return m in (128, 256), _n_range(lo, lo)(n), \
            f"{label} M-mode size should be 128 or 256 for 2 CTA cluster MMA.", \
            f"{label} N-mode size should be a multiple of {lo} between {lo} and 256."
    if kind == "S8":
        if not cta2:
            return m in (64, 128), n == 8 or _n_range(16, 16)(n), \
                f"{name} M-mode size should be 64 or 128 for 1 CTA cluster MMA.", \
                f"{name} N-mode size should be 8 or a multiple of 16 between 16 and 256."
        return m in (128, 256), _n_range(32, 32)(n), f"{name} M-mode size should be 128 or 256 for 2 CTA cluster MMA.", \
            f"{name} N-mode size should be a multiple of 32 between 32 and 256."
    # F8F6F4
    if not cta2:
        mm = f"{name} M-mode size should be 64 or 128 for 1 CTA cluster MMA."
        if ts:
            ok = (m == 64 and _n_range(8, 8)(n)) or (m == 128 and _n_range(16, 16)(n))
            return m in (64, 128), ok, mm, (f"{name} N-mode size should be a multiple of 8 between 8 and 256 for M=64, "
                                            "or a multiple of 16 between 16 and 256 for M=128.")
        ok = _n_range(8, 8)(n) if b_major == "K" else _n_range(16, 16)(n)
        return m in (64, 128), ok, mm, (f"{name} N-mode size should be a multiple of 8 between 8 and 256 when B is K "
                                        f"major. {name} N-mode size should be a multiple of 16 between 16 and 256 "
                                        "when B is MN major.")
    mm = f"{name} M-mode size should be 64 or 128 for 1 CTA cluster MMA."   # sic: CuTe's message for 2x1SM
    if ts:
        return m in (128, 256), _n_range(32, 32)(n), mm, \
            f"{name} N-mode size should be a multiple of 32 between 32 and 256."
    ok = _n_range(16, 16)(n) if b_major == "K" else _n_range(32, 32)(n)
    return m in (128, 256), ok, mm, (f"{name} N-mode size should be a multiple of 16 between 16 and 256 when B is K "
                                     f"major. {name} N-mode size should be a multiple of 32 between 32 and 256 when B "
                                     "is MN major.")


UMMA_FAMILIES = tuple(f"SM100_MMA_{k}{c}_{s}" for k in _KINDS for c in ("", "_2x1SM") for s in ("SS", "TS"))


def _legal_mn(name):
    """Every (M, N, b_major) CuTe accepts for a family name (b_major matters for F8F6F4_SS only)."""
    kind, cta2, ts = _parse(name)
    out = []
    for bm in ("K", "MN"):
        for m in (64, 128, 256):
            for n in range(8, 257, 8):
                mok, nok, _, _ = _rule_msg(name, kind, cta2, ts, m, n, bm)
                if mok and nok:
                    out.append((m, n, bm))
    return out


def _parse(name):
    if name not in UMMA_FAMILIES:
        return None
    body = name[len("SM100_MMA_"):]
    kind = body.split("_")[0]
    return kind, "_2x1SM_" in name, name.endswith("_TS")


class UmmaAtom(MMAAtom):
    """One tcgen05.mma as layouts (CuTe's ``MMA_Atom<MMA_Traits<SM100_MMA_...<a, b, c, M, N, a_major, b_major,
    a_neg, b_neg[, c_sat]>>>``): ``thr_id``, ``tv_layout_A/B/C`` and ``shape_mnk`` are CuTe's ThrID, ALayout,
    BLayout, CLayout and Shape_MNK; ``instr_desc`` the instruction descriptor CuTe builds (``idesc_``)."""

    __slots__ = ("family", "kind", "cta_group", "a_neg", "b_neg", "c_sat", "m", "n")

    @property
    def instruction(self) -> str:
        """'tcgen05_mma' (kernels lower the atom by this, with ``.kind`` and ``.cta_group``)."""
        return "tcgen05_mma"

    @property
    def arch(self) -> int:
        return 100

    @property
    def ptx_kind(self) -> str:
        """The ``.kind::`` qualifier of the PTX instruction: 'f16', 'tf32', 'i8', 'f8f6f4'."""
        return _KINDS[self.kind][0]

    @property
    def instr_desc(self) -> UmmaInstrDescriptor:
        """CuTe's ``UMMA::make_instr_desc<a, b, c, M, N, a_major, b_major, a_neg, b_neg, c_sat>()``."""
        return UmmaInstrDescriptor(
            a_format=umma_format(self.a_type), b_format=umma_format(self.b_type), c_format=c_format(self.c_type),
            m_dim=self.m >> 4, n_dim=self.n >> 3, a_major=int(self.major_a == "MN"), b_major=int(self.major_b == "MN"),
            a_negate=int(self.a_neg), b_negate=int(self.b_neg), saturate=int(self.c_sat))

    @property
    def a_major(self) -> str:
        return self.major_a

    @property
    def b_major(self) -> str:
        return self.major_b

    def partition_shape_C(self, shape_mn):
        """CuTe's ``partition_shape_C(make_tiled_mma(atom), shape_MN)``: ((M/V, N) of one atom, M tiles, N tiles),
        V the atom's CTA count (2x1SM: each CTA holds half of M)."""
        return self._partition_shape(shape_mn, self.m, self.n, "C")

    def partition_shape_A(self, shape_mk):
        return self._partition_shape(shape_mk, self.m, self.shape_mnk[2], "A")

    def _partition_shape(self, shape, a, b, what):
        if type(shape) not in (tuple, list) or len(shape) < 2 or not all(type(x) is int and x > 0 for x in shape):
            raise ValueError(f"partition_shape_{what}: expected a shape of positive ints (M, N[, ...]), but got {shape!r}.")
        for x, t, w in ((shape[0], a, "first"), (shape[1], b, "second")):
            if x % t:
                raise ValueError(f"partition_shape_{what}({tuple(shape)}): the {w} extent {x} is not a multiple of the "
                                 f"atom's {t}.")
        v = self.thr_id.size
        return ((a // v, b), shape[0] // a, shape[1] // b) + tuple(shape[2:])

    def make_fragment_C(self, shape):
        """CuTe's ``make_fragment_C``: the accumulator as a TMEM tensor (``UMMA::tmem_frg``), laid out exactly as
        CuTe lays it out; ``shape`` is ``partition_shape_C((M, N))``."""
        if self.a_source == "tmem" and self.cta_group == 1:   # 1-SM TS: C shares DP addresses with A (NonInterleaved)
            return tmem_frg(self.c_type, shape, 1, "NonInterleaved", storage_bits=32)
        return tmem_frg(self.c_type, shape, self.cta_group, "Interleaved", storage_bits=32)

    def make_fragment_A(self, shape):
        """For a TS atom, A as a TMEM tensor (CuTe's FrgTypeA: NonInterleaved 1-SM, Duplicated 2-SM, dense)."""
        if self.a_source != "tmem":
            raise ValueError(f"make_fragment_A: {self.family} reads A from shared memory through a descriptor "
                             "(make_umma_desc); only TS atoms keep A in tensor memory.")
        return tmem_frg(self.a_type, shape, self.cta_group,
                        "Duplicated" if self.cta_group == 2 else "NonInterleaved", storage_bits=self.a_type.bits)

    def __repr__(self):
        return (f"mma_atom({self.family!r}, a_type=wb.{self.a_type}, b_type=wb.{self.b_type}, c_type=wb.{self.c_type}, "
                f"m={self.m}, n={self.n}, a_major={self.major_a!r}, b_major={self.major_b!r})")

    def _key(self):
        return (self.family, self.a_type.name, self.b_type.name, self.c_type.name, self.m, self.n, self.major_a,
                self.major_b, self.a_neg, self.b_neg, self.c_sat)

    def __eq__(self, other):
        return type(other) is UmmaAtom and other._key() == self._key()

    def __hash__(self):
        return hash((UmmaAtom, self._key()))


def _type(t, what):
    if not isinstance(t, et.ElementType):
        raise TypeError(f"mma_atom: expected {what} as an element type (wb.Float16, ...), but got {t!r}.")
    return t


def umma_atom(name: str, a_type=None, b_type=None, c_type=None, m=None, n=None, a_major="K", b_major="K",
              a_neg=False, b_neg=False, c_sat=False) -> UmmaAtom:
    """The SM100 UMMA atom CuTe C++ calls ``name<a_type, b_type, c_type, M, N, a_major, b_major, a_neg, b_neg
    [, c_sat]>`` (``wb.mma_atom`` dispatches SM100 names here).  Families: :data:`UMMA_FAMILIES`."""
    parsed = _parse(name)
    if parsed is None:
        import difflib
        close = difflib.get_close_matches(str(name), UMMA_FAMILIES, n=4, cutoff=0.6)
        raise ValueError(f"mma_atom: unknown SM100 MMA atom {name!r}.{' Close names: ' + ', '.join(close) + '.' if close else ''}"
                         f" Accepted: {', '.join(UMMA_FAMILIES)} (block-scaled and sparse UMMA atoms are not modelled).")
    kind, cta2, ts = parsed
    missing = [k for k, v in (("a_type", a_type), ("b_type", b_type), ("c_type", c_type), ("m", m), ("n", n)) if v is None]
    if missing:
        raise TypeError(f"mma_atom({name!r}): CuTe's template arguments are keywords here; missing {', '.join(missing)} "
                        f"(e.g. a_type=wb.Float16, b_type=wb.Float16, c_type=wb.Float32, m=128, n=256).")
    a_type, b_type, c_type = _type(a_type, "a_type"), _type(b_type, "b_type"), _type(c_type, "c_type")
    for what, v in (("m", m), ("n", n)):
        if type(v) is not int:
            raise TypeError(f"mma_atom({name!r}): expected {what} as an int, but got {v!r}.")
    for what, v in (("a_major", a_major), ("b_major", b_major)):
        if v not in ("K", "MN"):
            raise ValueError(f"mma_atom({name!r}): expected {what} 'K' or 'MN' (UMMA::Major), but got {v!r}.")
    for what, v in (("a_neg", a_neg), ("b_neg", b_neg), ("c_sat", c_sat)):
        if type(v) is not bool:
            raise TypeError(f"mma_atom({name!r}): expected {what} as a bool, but got {v!r}.")
    ptx, operands, accs, k_fixed, size_msg = _KINDS[kind]
    width = {"F16BF16": 16, "TF32": 32, "S8": 8}.get(kind)
    if kind == "F8F6F4":
        if a_type.bits > 8 or b_type.bits > 8:
            raise ValueError(f"mma_atom({name!r}): {name} {size_msg} (got {a_type}, {b_type}; CuTe's static_assert).")
    elif a_type.bits != width or b_type.bits != width:
        raise ValueError(f"mma_atom({name!r}): {name} {size_msg} (got {a_type}, {b_type}; CuTe's static_assert).")
    for what, t in (("a_type", a_type), ("b_type", b_type)):
        if t.name not in operands:
            raise TypeError(f"mma_atom({name!r}): {what}={t} is no {kind} operand type (CuTe's to_UMMAFormat: 'Unknown "
                            f"type for UMMAFormat'); accepted: {', '.join(operands)}.")
    if kind == "S8" and c_type.name != "Int32":
        raise ValueError(f"mma_atom({name!r}): {name.replace('_TS', '_SS')} result type can only be int32_t (got {c_type}).")
    if c_type.name not in accs:
        raise TypeError(f"mma_atom({name!r}): c_type={c_type} is no accumulator of tcgen05 mma kind::{ptx}; accepted: "
                        f"{', '.join(accs)}.")
    if c_sat and not (ts or kind == "S8"):
        raise ValueError(f"mma_atom({name!r}): CuTe's {name} takes no c_sat template argument (saturate is a "
                         "parameter of the TS and S8 atoms only); got c_sat=True.")
    if kind == "S8" and (a_neg or b_neg):
        raise ValueError(f"mma_atom({name!r}): negate is valid only for F16/BF16, TF32 and F8F6F4 formats (the "
                         "instruction descriptor's a_negate/b_negate); CuTe's S8_SS atoms take no a_neg/b_neg and its "
                         "S8_TS atoms take them but write no negate bit, so a_neg/b_neg are refused for S8.")
    mok, nok, mmsg, nmsg = _rule_msg(name, kind, cta2, ts, m, n, b_major)
    if not mok:
        raise ValueError(f"mma_atom({name!r}, m={m}): {mmsg}")
    if not nok:
        raise ValueError(f"mma_atom({name!r}, n={n}): {nmsg}")
    if ts and a_major != "K":
        tmem_name = f"SM100_MMA_{kind}" if kind in ("F16BF16", "TF32") and not cta2 else name
        raise ValueError(f"mma_atom({name!r}, a_major='MN'): {tmem_name} A from TMEM can't be transposed")
    k = k_fixed or 256 // a_type.bits
    if cta2:
        thr = Layout(2, 1)
        A = Layout((2, (m // 2, k)), (m // 2, (1, m)))
        B = Layout((2, (n // 2, k)), (n // 2, (1, n)))
        C = Layout((2, (m // 2, n)), (m // 2, (1, m)))
    else:
        thr = Layout(1, 0)
        A = Layout((1, (m, k)), (0, (1, m)))
        B = Layout((1, (n, k)), (0, (1, n)))
        C = Layout((1, (m, n)), (0, (1, m)))
    atom = UmmaAtom(name, (m, n, k), thr, A, B, C, (c_type, a_type, b_type, c_type), None, a_major, b_major,
                    "tmem" if ts else "smem")
    atom.family, atom.kind, atom.cta_group = name, kind, 2 if cta2 else 1
    atom.a_neg, atom.b_neg, atom.c_sat, atom.m, atom.n = a_neg, b_neg, c_sat, m, n
    return atom


EXTENSIONS["SM100_"] = umma_atom
