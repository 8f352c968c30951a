"""Blackwell UMMA atoms (tcgen05.mma): CuTe's ``MMA_Traits<SM100_MMA_*>`` (cute/atom/mma_traits_sm100.hpp).

``mma_atom("SM100_MMA_F16BF16_SS", a_type=wb.Float16, b_type=wb.Float16, c_type=wb.Float32, m=128, n=256,
a_major="K", b_major="K")``: the CuTe C++ type name, its template arguments as keywords in CuTe's order.
The block-scaled atoms (``SM100_MMA_MXF8F6F4_SS``, ``SM100_MMA_MXF4_SS`` and their 2x1SM forms) add ``sf_type``
after ``c_type`` and, for MXF4, ``vs`` after ``n``; their scale factors live in tensor memory
(``make_fragment_SFA/SFB``) and are copied there by ``make_utccp_copy``.
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
from .tmem import tmem_frg, tmem_sf_frg
from .umma_desc import UmmaInstrDescriptor, UmmaInstrDescriptorBlockScaled, c_format, scale_format, umma_format

__all__ = ["UmmaAtom", "UmmaBlockScaledAtom", "umma_atom", "UMMA_FAMILIES", "UMMA_BLOCK_SCALED_FAMILIES"]

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


class _UmmaCommon(MMAAtom):
    """What every tcgen05.mma atom shares: one issuing thread (or CTA pair), C in tensor memory."""

    __slots__ = ("family", "kind", "cta_group", "a_neg", "b_neg", "c_sat", "m", "n")
    _NOT_TS = "only TS atoms keep A in tensor memory."   # why an SS atom has no A fragment

    def make_fragment_A(self, shape):
        """For a TS atom, A as a TMEM tensor (CuTe's FrgTypeA: NonInterleaved 1-SM, Duplicated 2-SM, dense)."""
        if self.a_source != "tmem":
            raise ValueError(f"make_fragment_A: {self.family} reads A from shared memory through a descriptor "
                             f"(make_umma_desc); {self._NOT_TS}")
        return tmem_frg(self.a_type, shape, self.cta_group,
                        "Duplicated" if self.cta_group == 2 else "NonInterleaved", storage_bits=self.a_type.bits)

    @property
    def instruction(self) -> str:
        """'tcgen05_mma' (kernels lower the atom by this, with ``.kind`` and ``.cta_group``)."""
        return "tcgen05_mma"

    @property
    def arch(self) -> int:
        return 100

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


class UmmaAtom(_UmmaCommon):
    """One tcgen05.mma as layouts (CuTe's ``MMA_Atom<MMA_Traits<SM100_MMA_...<a, b, c, M, N, a_major, b_major,
    a_neg, b_neg[, c_sat]>>>``): ``thr_id``, ``tv_layout_A/B/C`` and ``shape_mnk`` are CuTe's ThrID, ALayout,
    BLayout, CLayout and Shape_MNK; ``instr_desc`` the instruction descriptor CuTe builds (``idesc_``)."""

    __slots__ = ()

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


# ---- block-scaled UMMA (cute/arch/mma_sm100_umma.hpp, MMA_Traits in cute/atom/mma_traits_sm100.hpp) --------------
# CuTe 4.2's dense block-scaled atoms, all SS: MXF8F6F4 (K = 32, one scale per 32 values) and MXF4 (K = 64, vs 16
# or 32).  The mxf4nvf4 kind is SM100_MMA_MXF4_SS with vs=16; the names with NVF4 in them are sparse atoms.
UMMA_BLOCK_SCALED_FAMILIES = ("SM100_MMA_MXF8F6F4_SS", "SM100_MMA_MXF8F6F4_2x1SM_SS", "SM100_MMA_MXF4_SS",
                              "SM100_MMA_MXF4_2x1SM_SS")
_NOT_IN_CUTE = {
    "SM100_MMA_MXF4NVF4_SS": "CuTe 4.2 has no dense SM100_MMA_MXF4NVF4_SS: the dense kind::mxf4nvf4 instruction is "
                             "SM100_MMA_MXF4_SS with vs=16 (and SM100_MMA_MXF4_2x1SM_SS with vs=16 for a CTA pair); "
                             "SM100_MMA_MXF4NVF4_SS_SPARSE is a sparse atom, not modelled.",
    "SM100_MMA_MXF4NVF4_2x1SM_SS": "CuTe 4.2 has no dense SM100_MMA_MXF4NVF4_2x1SM_SS: the dense kind::mxf4nvf4 "
                                   "instruction of a CTA pair is SM100_MMA_MXF4_2x1SM_SS with vs=16; "
                                   "SM100_MMA_MXF4NVF4_2x1SM_SS_SPARSE is a sparse atom, not modelled.",
}
for _ts in ("SM100_MMA_MXF8F6F4_TS", "SM100_MMA_MXF8F6F4_2x1SM_TS", "SM100_MMA_MXF4_TS", "SM100_MMA_MXF4_2x1SM_TS"):
    _NOT_IN_CUTE[_ts] = (f"CuTe 4.2 has no {_ts}: block-scaled UMMA atoms read A and B from shared memory only "
                         "(the _SS forms).")


def _bs_rule(name, m, n, vs):
    """CuTe's static_asserts of a block-scaled family: None, or (the argument, its message)."""
    mx4, cta2 = name.startswith("SM100_MMA_MXF4"), "_2x1SM_" in name
    if not cta2:
        # sic: CuTe's MXF8F6F4_SS message says "64 or 128" while its condition is M == 128
        msg = (f"{name} M-mode size should be 128 for 1 CTA cluster MMA." if mx4 else
               f"{name} M-mode size should be 64 or 128 for 1 CTA cluster MMA. (CuTe's static_assert; its condition "
               "is M == 128, whatever the message says)")
        if m != 128:
            return "m", msg
        if not (n % 8 == 0 and 8 <= n <= 256):
            return "n", f"{name} N-mode size should be a multiple of 8 between 8 and 256."
    else:
        # sic: CuTe's MXF8F6F4_2x1SM_SS message says "128 or 256" while its condition is M == 256
        if not (m in (128, 256) if mx4 else m == 256):
            return "m", f"{name} M-mode size should be 128 or 256 for 2 CTA cluster MMA." + (
                "" if mx4 else " (CuTe's static_assert; its condition is M == 256, whatever the message says)")
        if not (n % 16 == 0 and 16 <= n <= 256):
            return "n", f"{name} N-mode size should be a multiple of 16 between 16 and 256."
    if mx4 and vs not in (16, 32):
        return "vs", f"{name} Vector size can only be 16 or 32."
    return None


def _legal_bs(name):
    """Every (M, N, vs) CuTe accepts for a block-scaled family (vs None where the family takes none)."""
    vss = (16, 32) if name.startswith("SM100_MMA_MXF4") else (None,)
    return [(m, n, vs) for vs in vss for m in (64, 128, 256) for n in range(8, 257, 8)
            if _bs_rule(name, m, n, vs) is None]


class UmmaBlockScaledAtom(_UmmaCommon):
    """One block-scaled tcgen05.mma as layouts (CuTe's ``MMA_Atom<MMA_Traits<SM100_MMA_MXF8F6F4_SS<a, b, c, sf, M,
    N, a_major, b_major, a_neg, b_neg>>>`` and ``SM100_MMA_MXF4_SS<a, b, c, sf, M, N, VS, ...>``, and their 2x1SM
    forms): ``thr_id``, ``tv_layout_A/B/C``, ``shape_mnk`` as :class:`UmmaAtom`'s; ``sf_type`` and ``sf_vec_size``
    (CuTe's ValTypeSFA/SFB and SFVecSize: one scale factor per ``sf_vec_size`` values along K),
    ``make_fragment_SFA/SFB`` (CuTe's FrgTypeSFA/SFB, the scale factors in tensor memory), ``instr_desc`` (CuTe's
    ``UMMA::InstrDescriptorBlockScaled``) and ``mma_scale_factor`` (CuTe's ``MMA_ScaleFactor``).

    Compiled for sm_100a and emulated here; no Blackwell GPU runs it in this workbench.  In kernels:
    ``wb.gemm(atom, acc, (sA, tSFA), (sB, tSFB), acc)`` for the MXF8F6F4 atoms, 1-SM and 2-SM (CuTe DSL's
    ``cute.gemm(atom, d, [A, SFA], [B, SFB], c)``); MXF4 is refused there so far (kernels cannot hold its 4-bit
    operands yet)."""

    __slots__ = ("sf_type", "sf_vec_size", "vs")
    _NOT_TS = "block-scaled UMMA atoms have no TS form in CuTe 4.2."

    @property
    def ptx_kind(self) -> str:
        """The ``.kind::`` of the PTX instruction CuTe issues: 'mxf8f6f4', 'mxf4' (vs=32) or 'mxf4nvf4' (vs=16)."""
        if self.kind == "MXF8F6F4":
            return "mxf8f6f4"
        return "mxf4" if self.sf_vec_size == 32 else "mxf4nvf4"

    @property
    def ptx_qualifiers(self) -> str:
        """The qualifiers CuTe's ``fma`` puts after ``tcgen05.mma``, e.g. '.cta_group::1.kind::mxf4nvf4.block_scale.block16'
        (CUDA >= 12.9 spelling: ``.block16`` / ``.block32``; older toolkits spell them ``.scale_vec::4X`` / ``::2X``)."""
        base = f".cta_group::{self.cta_group}.kind::{self.ptx_kind}.block_scale"
        return base if self.kind == "MXF8F6F4" else f"{base}.block{self.sf_vec_size}"

    @property
    def instr_desc(self) -> UmmaInstrDescriptorBlockScaled:
        """CuTe's ``UMMA::make_instr_desc_block_scaled<a, b, c, sf, M, N, a_major, b_major, a_neg, b_neg>()``:
        a_sf_id / b_sf_id 0 (``runtime(tmem_sfa_addr, tmem_sfb_addr)`` sets them from the addresses, as
        ``make_runtime_instr_desc_block_scaled`` does); k_size is never set by CuTe 4.2 and stays 0."""
        kind = "mxf4" if self.kind == "MXF4" else None
        return UmmaInstrDescriptorBlockScaled(
            a_format=umma_format(self.a_type, kind), b_format=umma_format(self.b_type, kind),
            scale_format=scale_format(self.sf_type), m_dim=self.m >> 4, n_dim=self.n >> 3,
            a_major=int(self.major_a == "MN"), b_major=int(self.major_b == "MN"), a_negate=int(self.a_neg),
            b_negate=int(self.b_neg))

    @property
    def sf_alloc(self) -> str:
        """CuTe's TmemAlloc of the scale factors: 'ScaleFactorDuplicated4by1', or for a 2-SM atom with M=128
        'ScaleFactorDuplicated2by2' (SFB then sits twice in each CTA's two 64-lane halves)."""
        return "ScaleFactorDuplicated2by2" if self.cta_group == 2 and self.m == 128 else "ScaleFactorDuplicated4by1"

    @property
    def mma_scale_factor(self) -> UmmaBlockScaledAtom:
        """CuTe's ``MMA_ScaleFactor``: the 1-SM atom of M' = M (1-SM) or (M/2 > 64 ? M/2 : M) (2-SM) and N' = N rounded
        up to 128, the instruction shape the scale-factor copies are laid out for."""
        mm = self.m if self.cta_group == 1 else (self.m // 2 if self.m // 2 > 64 else self.m)
        fam = "SM100_MMA_MXF8F6F4_SS" if self.kind == "MXF8F6F4" else "SM100_MMA_MXF4_SS"
        return umma_atom(fam, a_type=self.a_type, b_type=self.b_type, c_type=self.c_type, sf_type=self.sf_type, m=mm,
                         n=-(-self.n // 128) * 128, vs=self.vs, a_major=self.major_a, b_major=self.major_b,
                         a_neg=self.a_neg, b_neg=self.b_neg)

    def make_fragment_SFA(self, shape):
        """CuTe's ``make_tensor<FrgTypeSFA>(shape)`` (``UMMA::tmem_sf_frg<sf, SFVecSize, N_SM, true, TmemAlloc>``):
        ``shape`` the MMA-SF partitioned shape, e.g. ``wb.shape(atom.smem_layout_SFA(tile_mnk))``."""
        return tmem_sf_frg(self.sf_type, self.sf_vec_size, self.cta_group, True, shape, self.sf_alloc)

    def make_fragment_SFB(self, shape):
        """CuTe's ``make_tensor<FrgTypeSFB>(shape)`` (``UMMA::tmem_sf_frg<sf, SFVecSize, N_SM, false, TmemAlloc>``)."""
        return tmem_sf_frg(self.sf_type, self.sf_vec_size, self.cta_group, False, shape, self.sf_alloc)

    def smem_layout_SFA(self, tile_mnk):
        """CUTLASS's ``Sm1xxBlockScaledConfig<VS>::deduce_smem_layoutSFA(make_tiled_mma(atom), tile_mnk)``
        (cutlass/detail/sm100_blockscaled_layout.hpp, the layout CUTLASS's block-scaled GEMMs keep SFA in shared
        memory in and whose shape makes ``make_fragment_SFA``'s): ((((32, 4), M/128), (VS, NSF)), 1,
        (4/NSF, K/VS/4)), 128 rows x 4 factors in each 512-byte block (row r at byte 16 (r % 32) + 4 (r / 32))."""
        return self._smem_layout_sf(tile_mnk, "A")

    def smem_layout_SFB(self, tile_mnk):
        """CUTLASS's ``deduce_smem_layoutSFB``: as SFA over N rounded up to 128 (CUTLASS moves SFB as if N were
        a multiple of 128, e.g. 256 for N = 192)."""
        return self._smem_layout_sf(tile_mnk, "B")

    def _smem_layout_sf(self, tile_mnk, which):
        what = f"smem_layout_SF{which}"
        if type(tile_mnk) not in (tuple, list) or len(tile_mnk) != 3 or not all(type(x) is int and x > 0
                                                                                for x in tile_mnk):
            raise ValueError(f"{what}: expected a tile shape (M, N, K) of positive ints, but got {tile_mnk!r}.")
        tm, tn, tk = tile_mnk
        vs, nsf = self.sf_vec_size, self.shape_mnk[2] // self.sf_vec_size
        mn = tm // self.thr_id.size if which == "A" else -(-tn // 128) * 128
        if which == "A" and (tm % self.thr_id.size or mn % 128):
            raise ValueError(f"{what}({tuple(tile_mnk)}): the tile's M per CTA ({tm} / {self.thr_id.size}) must be a "
                             "multiple of 128 (CUTLASS's Int<MMA_M/128> blocks of 128 rows would drop the rest).")
        if tk % (vs * 4):
            raise ValueError(f"{what}({tuple(tile_mnk)}): the tile's K ({tk}) must be a multiple of 4 scale factors "
                             f"of {vs} values = {4 * vs} (CUTLASS's Int<K/VS/4> would drop the rest).")
        shape = ((((32, 4), mn // 128), (vs, nsf)), 1, (4 // nsf, tk // vs // 4))
        stride = ((((16, 4), 512), (0, 1)), 0, (nsf, mn // 128 * 512))
        return Layout(shape, stride)

    def __repr__(self):
        vs = f", vs={self.vs}" if self.vs is not None else ""
        return (f"mma_atom({self.family!r}, a_type=wb.{self.a_type}, b_type=wb.{self.b_type}, c_type=wb.{self.c_type}, "
                f"sf_type=wb.{self.sf_type}, m={self.m}, n={self.n}{vs}, a_major={self.major_a!r}, "
                f"b_major={self.major_b!r})")

    def _key(self):
        return (self.family, self.a_type.name, self.b_type.name, self.c_type.name, self.sf_type.name, self.m, self.n,
                self.vs, self.major_a, self.major_b, self.a_neg, self.b_neg)

    def __eq__(self, other):
        return type(other) is UmmaBlockScaledAtom and other._key() == self._key()

    def __hash__(self):
        return hash((UmmaBlockScaledAtom, self._key()))


def _block_scaled_atom(name, a_type, b_type, c_type, sf_type, m, n, vs, a_major, b_major, a_neg, b_neg, c_sat):
    mx4 = name.startswith("SM100_MMA_MXF4")
    need = [("a_type", a_type), ("b_type", b_type), ("c_type", c_type), ("sf_type", sf_type), ("m", m), ("n", n)]
    if mx4:
        need.append(("vs", vs))
    missing = [k for k, v in need if v is None]
    if missing:
        eg = "a_type=wb.Float4E2M1FN, b_type=wb.Float4E2M1FN" if mx4 else "a_type=wb.Float8E4M3FN, b_type=wb.Float8E4M3FN"
        raise TypeError(f"mma_atom({name!r}): CuTe's template arguments are keywords here, in CuTe's order a_type, "
                        f"b_type, c_type, sf_type, m, n{', vs' if mx4 else ''}, a_major, b_major, a_neg, b_neg; missing "
                        f"{', '.join(missing)} (e.g. {eg}, c_type=wb.Float32, sf_type=wb.Float8E8M0FNU, m=128, n=256"
                        f"{', vs=32' if mx4 else ''}).")
    if not mx4 and vs is not None:
        raise TypeError(f"mma_atom({name!r}): CuTe's {name} takes no VS template argument (its SFVecSize is 32: one "
                        f"scale factor per 32 values along K); got vs={vs!r}.")
    if c_sat:
        raise ValueError(f"mma_atom({name!r}): CuTe's {name} takes no c_sat template argument; got c_sat=True.")
    a_type, b_type = _type(a_type, "a_type"), _type(b_type, "b_type")
    c_type, sf_type = _type(c_type, "c_type"), _type(sf_type, "sf_type")
    for what, v in (("m", m), ("n", n)) + ((("vs", vs),) if mx4 else ()):
        if type(v) is not int:
            raise TypeError(f"mma_atom({name!r}): expected {what} as an int, but got {v!r}.")
    for what, v in (("a_major", a_major), ("b_major", b_major)):
        if v not in ("K", "MN"):
            raise ValueError(f"mma_atom({name!r}): expected {what} 'K' or 'MN' (UMMA::Major), but got {v!r}.")
    for what, v in (("a_neg", a_neg), ("b_neg", b_neg)):
        if type(v) is not bool:
            raise TypeError(f"mma_atom({name!r}): expected {what} as a bool, but got {v!r}.")
    # the traits' static_asserts on the operand types, then the formats CuTe's to_UMMAFormat knows
    if mx4:
        if a_type.bits != 4 or b_type.bits != 4:
            raise ValueError(f"mma_atom({name!r}): {name} supports 4bit types (got {a_type}, {b_type}; CuTe's "
                             "static_assert).")
        ok = ("Float4E2M1FN",)
    else:
        if a_type.bits > 8 or b_type.bits > 8:
            raise ValueError(f"mma_atom({name!r}): {name} supports types with leq 8bit types (got {a_type}, "
                             f"{b_type}; CuTe's static_assert).")
        ok = F8F6F4
    for what, t in (("a_type", a_type), ("b_type", b_type)):
        if t.name not in ok:
            raise TypeError(f"mma_atom({name!r}): {what}={t} is no kind::{'mxf4' if mx4 else 'mxf8f6f4'} operand "
                            f"type (CuTe's to_UMMAFormat: 'Unknown type for UMMAFormat'); accepted: {', '.join(ok)}.")
    if sf_type.name not in ("Float8E8M0FNU", "Float8E4M3FN"):
        raise TypeError(f"mma_atom({name!r}): sf_type={sf_type} is no UMMA scale-factor type (CuTe's to_ScaleFormat: "
                        "'Unknown type for ScaleFormat'); accepted: wb.Float8E8M0FNU (CuTe's float_ue8m0_t) and "
                        "wb.Float8E4M3FN (standing for CuTe's float_ue4m3_t, whose sign bit the hardware ignores).")
    bad = _bs_rule(name, m, n, vs)
    if bad is not None:
        arg, msg = bad
        raise ValueError(f"mma_atom({name!r}, {arg}={dict(m=m, n=n, vs=vs)[arg]}): {msg}")
    if mx4 and vs == 32 and sf_type.name != "Float8E8M0FNU":
        if "_2x1SM_" in name:   # CuTe's 2-SM traits lack the 1-SM atom's static_assert; the PTX ISA's rule is the same
            raise ValueError(f"mma_atom({name!r}, vs=32): 2x mode (VectorSize=32) only supports a_type and b_type="
                             "float_e2m1_t or cutlass::type_erased_dynamic_float4_t and sf_type=ue8m0_t (the static_assert "
                             "of CuTe's SM100_MMA_MXF4_SS traits; CuTe 4.2's 2x1SM traits do not repeat it and would "
                             "compile a kind::mxf4.block32 with ue4m3 scales, which the PTX ISA does not define: a "
                             "departure from CuTe, refused here).")
        raise ValueError(f"mma_atom({name!r}, vs=32): 2x mode (VectorSize=32) only supports a_type and b_type="
                         "float_e2m1_t or cutlass::type_erased_dynamic_float4_t and sf_type=ue8m0_t (CuTe's "
                         "static_assert).")
    if not mx4 and sf_type.name != "Float8E8M0FNU":
        raise ValueError(f"mma_atom({name!r}): kind::mxf8f6f4 takes ue8m0 scale factors only (sf_type=wb.Float8E8M0FNU; "
                         f"the PTX ISA's block-scaled MMA), but got {sf_type}.  CuTe 4.2 compiles this atom with "
                         "ue4m3 scales (scale_format 0) without a static_assert: a departure from CuTe, refused here.")
    if c_type.name != "Float32":
        raise ValueError(f"mma_atom({name!r}): block-scaled UMMA accumulates in f32 only (c_type=wb.Float32; "
                         f"the PTX ISA), but got {c_type}.  CuTe 4.2 takes any c_type here and its block-scaled "
                         "instruction descriptor has no c_format field, so another c_type would be silently f32: a "
                         "departure from CuTe, refused here.")
    k = 64 if mx4 else 32
    if cta2 := "_2x1SM_" in name:
        thr = Layout(2, 1)
        A = Layout((2, (m // 2, k)), (m // 2, (1, m)))
        B = Layout((2, (n // 2, k)), (n // 2, (1, n)))
        C = Layout((2, (m // 2, n)), (m // 2, (1, m)))
    else:
        thr = Layout(1, 0)
        A = Layout((1, (m, k)), (0, (1, m)))
        B = Layout((1, (n, k)), (0, (1, n)))
        C = Layout((1, (m, n)), (0, (1, m)))
    atom = UmmaBlockScaledAtom(name, (m, n, k), thr, A, B, C, (c_type, a_type, b_type, c_type), None, a_major, b_major,
                               "smem")
    atom.family, atom.kind, atom.cta_group = name, "MXF4" if mx4 else "MXF8F6F4", 2 if cta2 else 1
    atom.a_neg, atom.b_neg, atom.c_sat, atom.m, atom.n = a_neg, b_neg, False, m, n
    atom.sf_type, atom.vs, atom.sf_vec_size = sf_type, (vs if mx4 else None), (vs if mx4 else 32)
    return atom


def _type(t, what):
    if not isinstance(t, et.ElementType):
        raise TypeError(f"mma_atom: expected {what} as an element type (wb.Float16, ...), but got {t!r}.")
    return t


def umma_atom(name: str, *, a_type=None, b_type=None, c_type=None, sf_type=None, m=None, n=None, vs=None,
              a_major="K", b_major="K", a_neg=False, b_neg=False, c_sat=False):
    """The SM100 UMMA atom CuTe C++ calls ``name<a_type, b_type, c_type, M, N, a_major, b_major, a_neg, b_neg
    [, c_sat]>``, or for the block-scaled families ``name<a_type, b_type, c_type, sf_type, M, N[, VS], a_major,
    b_major, a_neg, b_neg>`` (``wb.mma_atom`` dispatches SM100 names here).  Families: :data:`UMMA_FAMILIES`
    (:class:`UmmaAtom`) and :data:`UMMA_BLOCK_SCALED_FAMILIES` (:class:`UmmaBlockScaledAtom`)."""
    if name in UMMA_BLOCK_SCALED_FAMILIES:
        return _block_scaled_atom(name, a_type, b_type, c_type, sf_type, m, n, vs, a_major, b_major, a_neg, b_neg,
                                  c_sat)
    if name in _NOT_IN_CUTE:
        raise ValueError(f"mma_atom({name!r}): {_NOT_IN_CUTE[name]}")
    parsed = _parse(name)
    if parsed is None:
        import difflib
        known = UMMA_FAMILIES + UMMA_BLOCK_SCALED_FAMILIES
        close = difflib.get_close_matches(str(name), known, n=4, cutoff=0.6)
        raise ValueError(f"mma_atom: unknown SM100 MMA atom {name!r}.{' Close names: ' + ', '.join(close) + '.' if close else ''}"
                         f" Accepted: {', '.join(known)} (sparse, scaled-C and weight-stationary UMMA atoms are not "
                         "modelled).")
    for what, v in (("sf_type", sf_type), ("vs", vs)):
        if v is not None:
            raise TypeError(f"mma_atom({name!r}): {what} is a template argument of the block-scaled atoms only "
                            f"({', '.join(UMMA_BLOCK_SCALED_FAMILIES)}); got {what}={v!r}.")
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
