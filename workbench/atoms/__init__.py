"""MMA and copy atoms, TiledMMA and TiledCopy, shared-memory layout atoms and bank conflicts."""

from .conflicts import BankConflicts, SwizzleSuggestion, bank_conflicts, suggest_swizzle
from .copy import CopyAtom, copy_atom, copy_atom_names
from .gmma_desc import GmmaDescriptor, make_gmma_desc
from .mma import MMAAtom, mma_atom, mma_atom_names
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

__all__ = [
    "BankConflicts", "SwizzleSuggestion", "bank_conflicts", "suggest_swizzle", "GMMA_SMEM_ATOMS", "gmma_smem_atom",
    "MMAAtom", "mma_atom", "mma_atom_names", "CopyAtom", "copy_atom", "copy_atom_names",
    "TiledMMA", "ThrMMA", "TiledCopy", "ThrCopy", "make_tiled_mma", "make_tiled_copy",
    "make_tiled_copy_A", "make_tiled_copy_B", "make_tiled_copy_C", "GmmaDescriptor", "make_gmma_desc", "TmaBox",
    "make_tma_box",
]
