"""MMA and copy atoms, TiledMMA and TiledCopy, shared-memory layout atoms and bank conflicts."""

from .conflicts import BankConflicts, SwizzleSuggestion, bank_conflicts, suggest_swizzle
from .copy import CopyAtom, copy_atom, copy_atom_names
from .gmma_desc import GmmaDescriptor, make_gmma_desc
from .mma import MMAAtom, mma_atom, mma_atom_names
from .sm100 import UMMA_BLOCK_SCALED_FAMILIES, UMMA_FAMILIES, UmmaAtom, UmmaBlockScaledAtom, umma_atom
from .smem import GMMA_SMEM_ATOMS, gmma_smem_atom
from .tiled import (
    ThrCopy,
    ThrMMA,
    TiledCopy,
    TiledMMA,
    make_tiled_copy,
    make_tiled_copy_A,
    make_tiled_copy_B,
    make_tiled_copy_C,
    make_tiled_mma,
)
from .tma import TmaBox, make_tma_box
from .tmem import (
    TmemAllocator,
    TmemCopyAtom,
    TmemTensor,
    TmemTiledCopy,
    make_tmem_copy,
    make_utccp_copy,
    tmem_copy_atom,
    tmem_copy_atom_names,
    tmem_frg,
    tmem_sf_frg,
)
from .umma_desc import (
    UMMA_SMEM_ATOMS,
    UmmaInstrDescriptor,
    UmmaInstrDescriptorBlockScaled,
    UmmaSmemDescriptor,
    make_umma_desc,
    umma_smem_atom,
)

__all__ = [
    "BankConflicts", "SwizzleSuggestion", "bank_conflicts", "suggest_swizzle", "GMMA_SMEM_ATOMS", "gmma_smem_atom",
    "MMAAtom", "mma_atom", "mma_atom_names", "CopyAtom", "copy_atom", "copy_atom_names",
    "TiledMMA", "ThrMMA", "TiledCopy", "ThrCopy", "make_tiled_mma", "make_tiled_copy",
    "make_tiled_copy_A", "make_tiled_copy_B", "make_tiled_copy_C", "GmmaDescriptor", "make_gmma_desc", "TmaBox",
    "make_tma_box",
    # Blackwell: UMMA atoms, descriptors, tensor memory
    "UmmaAtom", "umma_atom", "UMMA_FAMILIES", "UmmaSmemDescriptor", "UmmaInstrDescriptor",
    "UmmaInstrDescriptorBlockScaled", "make_umma_desc", "umma_smem_atom", "UMMA_SMEM_ATOMS", "TmemAllocator",
    "TmemTensor", "TmemCopyAtom", "TmemTiledCopy", "tmem_frg", "tmem_copy_atom", "tmem_copy_atom_names",
    "make_tmem_copy", "UmmaBlockScaledAtom", "UMMA_BLOCK_SCALED_FAMILIES", "tmem_sf_frg", "make_utccp_copy",
]
