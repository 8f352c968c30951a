"""Functions that only mean something inside a ``@wb.kernel`` function.

The frontend recognizes them by identity and lowers them to IR; called from ordinary Python
they raise, because there is no thread, block or shared memory there.
"""

from __future__ import annotations

__all__ = [
    "thread_idx", "block_idx", "block_dim", "grid_dim", "sync_threads", "shared_tensor",
    "local_tile", "logical_divide_tensor", "local_partition", "copy", "make_tensor_in_kernel",
    "Constexpr", "lane_count",
]


def _outside(name):
    raise RuntimeError(f"wb.{name}() only has a meaning inside a @wb.kernel function, but was called from Python.")


def thread_idx():
    """The thread's index in its block: a triple with .x/.y/.z (unpacks as x, y, z)."""
    _outside("thread_idx")


def block_idx():
    """The block's index in the grid (.x/.y/.z)."""
    _outside("block_idx")


def block_dim():
    """Threads per block (.x/.y/.z)."""
    _outside("block_dim")


def grid_dim():
    """Blocks per grid (.x/.y/.z)."""
    _outside("grid_dim")


def sync_threads():
    """Barrier for the threads of a block (__syncthreads)."""
    _outside("sync_threads")


def shared_tensor(element_type, layout):
    """A __shared__ tensor of element_type laid out by a static layout (cosize elements)."""
    _outside("shared_tensor")


def local_tile(tensor, tiler, coord):
    """The tile at coord of tensor divided by tiler (CuTe's local_tile)."""
    _outside("local_tile")


def logical_divide_tensor(tensor, tiler):
    _outside("logical_divide")


def local_partition(tensor, thread_layout, thread_index):
    """The part of tensor that thread thread_index owns when tensor is spread over thread_layout."""
    _outside("local_partition")


def copy(src, dst):
    """dst[i] = src[i] for every element; 128-bit accesses where layouts and alignment prove it safe."""
    _outside("copy")


def make_tensor_in_kernel(ptr, layout):
    _outside("make_tensor")


def lane_count(element_type):
    return max(1, 128 // element_type.bits)


class Constexpr:
    """Annotate a kernel parameter ``n: wb.Constexpr``: its value is compiled into the kernel
    (part of the specialization key) instead of being passed at launch."""
