"""``fence.proxy.async.shared::cta`` (``wb.fence_proxy_async``): shared memory written by threads becomes visible
to the asynchronous units.  The CPU executor's asynchronous units read shared memory when they complete, which is
at issue, so there is nothing to order: it runs nothing."""

from __future__ import annotations

from .. import ir
from ..builtins import builtin


class FenceProxyAsync(ir.Instruction):
    __slots__ = ()

    def cuda(self, em, d):
        em.w(d, 'asm volatile("fence.proxy.async.shared::cta;\\n" ::: "memory");')

    def python(self, em, d):
        pass


@builtin
def fence_proxy_async(cx):
    """``fence.proxy.async.shared::cta``: shared memory written by threads becomes visible to the asynchronous
    units (a TMA store, a wgmma reading it)."""
    cx.emit(FenceProxyAsync())
