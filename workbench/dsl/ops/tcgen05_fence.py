"""``tcgen05.fence::before_thread_sync`` / ``::after_thread_sync`` (``wb.tcgen05_fence_before()``,
``wb.tcgen05_fence_after()``; CuTe DSL's ``cute.arch.fence_view_async_tmem_*`` family): order tcgen05 operations
across a thread synchronization (a ``wb.sync_threads()``, an mbarrier wait), e.g. the TMEM address an alloc wrote
before other warps use it.  Compiled for sm_100a, not run on a Blackwell GPU here.  The CPU executor's TMEM operations
take effect in program order of the issuing thread, so there is nothing to order: it runs nothing (a missing fence is
not caught there)."""

from __future__ import annotations

from .. import ir
from ..builtins import builtin
from .tcgen05_alloc import NO_BLACKWELL


class Tcgen05Fence(ir.Instruction):
    __slots__ = ("after",)

    def __init__(self, after):
        self.after = after

    def cuda(self, em, d):
        kind = "after_thread_sync" if self.after else "before_thread_sync"
        em.w(d, f'asm volatile("tcgen05.fence::{kind};\\n" ::: "memory");')

    def python(self, em, d):
        pass


@builtin
def tcgen05_fence_before(cx):
    """``tcgen05.fence::before_thread_sync``: tcgen05 operations before it are ordered before the thread
    synchronization that follows.  Blackwell only: compiled for sm_100a, never run on a Blackwell GPU here."""
    cx.require_arch(100, f"tcgen05.fence ({NO_BLACKWELL})")
    cx.emit(Tcgen05Fence(False))


@builtin
def tcgen05_fence_after(cx):
    """``tcgen05.fence::after_thread_sync``: tcgen05 operations after it are ordered after the thread synchronization
    before it.  Blackwell only: compiled for sm_100a, never run on a Blackwell GPU here."""
    cx.require_arch(100, f"tcgen05.fence ({NO_BLACKWELL})")
    cx.emit(Tcgen05Fence(True))
