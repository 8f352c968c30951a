"""Hostile input (issue 10): no crash, no memory corruption, no silent wrong answer.

One section per class of defect; tests/test_fuzz_dlpack.py generates the malformed producers.
"""

import gc
import os
import weakref
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from producers import Producer

import workbench as wb
from workbench import host_buffers
from workbench.dlpack import _native
from workbench.dsl.backends.cpu import MAX_CPU_THREADS, KernelRuntimeError, check_launch_limits

READ_ONLY = 1


@wb.kernel
def fill(a, v):
    i = wb.block_idx().x * wb.block_dim().x + wb.thread_idx().x
    if i < wb.size(a):
        a[i] = v


@wb.kernel
def fill_ptr(p, n, v):
    a = wb.make_tensor(p, wb.make_layout(n))
    i = wb.thread_idx().x
    if i < n:
        a[i] = v


@wb.kernel
def copy_(src, dst):
    i = wb.thread_idx().x
    if i < wb.size(dst):
        dst[i] = src[i]


# -- memory safety of tensors over memory they do not own --------------------------------------------
def test_nested_make_tensor_keeps_the_bound_of_a_bare_address():
    buf = np.zeros(8, np.float32)
    big = wb.make_layout(1 << 16)
    inner = wb.make_tensor(wb.make_ptr(wb.Float32, buf.ctypes.data), big)
    outer = wb.make_tensor(inner, big)   # the example of issue 10: ran 256 KiB past 8 floats
    for t in (inner, outer, wb.make_tensor(outer, wb.make_layout(4))):
        with pytest.raises(ValueError, match="host_buffers"):
            fill.launch(t, 1.0, grid=1, block=8)
    with host_buffers(buf):
        with pytest.raises(ValueError, match="stay inside its declared host buffer"):
            fill.launch(outer, 1.0, grid=1, block=8)
        fill.launch(wb.make_tensor(outer, wb.make_layout(8)), 2.0, grid=1, block=8)
    assert buf.tolist() == [2.0] * 8


def test_a_bare_address_is_read_by_no_consumer_past_declared_memory():
    # numpy, torch and mdspan views read the whole layout: over a bare address it must exist
    buf = np.zeros(8, np.float32)
    bare = wb.make_tensor(wb.make_ptr(wb.Float32, buf.ctypes.data), wb.make_layout(1 << 28))
    for read in (lambda t: t.numpy(), lambda t: np.from_dlpack(t), lambda t: torch.from_dlpack(t),
                 lambda t: wb.to_host_mdspan(t, wb.Float32, 1)):
        with pytest.raises(ValueError, match="host_buffers"):
            read(bare)
        with host_buffers(buf), pytest.raises(ValueError, match="host_buffers"):
            read(bare)                                   # declared, but 1 GiB is not inside 32 bytes
    fits = wb.make_tensor(wb.make_ptr(wb.Float32, buf.ctypes.data), wb.make_layout(8))
    with host_buffers(buf):
        assert fits.numpy().shape == (8,) and torch.from_dlpack(fits).shape == (8,)
        assert wb.to_host_mdspan(fits, wb.Float32, 1).extent(0) == 8
    assert wb.from_dlpack(bare).shape == (1 << 28,)      # a re-import stays bare (and so bounded): allowed


def test_a_reimported_export_of_a_bare_address_stays_bounded():
    buf = np.zeros(8, np.float32)
    t = wb.make_tensor(wb.make_ptr(wb.Float32, buf.ctypes.data), wb.make_layout(1 << 16))
    back = wb.from_dlpack(t)              # our own capsule, recognised by its deleter
    with pytest.raises(ValueError, match="host_buffers"):
        fill.launch(back, 1.0, grid=1, block=8)
    assert not buf.any()


def test_iterator_views_are_bare_addresses():
    a = np.zeros(4, np.float32)
    t = wb.from_dlpack(a)
    view = wb.make_tensor(t.iterator, wb.make_layout(1 << 16))
    with pytest.raises(ValueError, match="host_buffers"):
        fill.launch(view, 1.0, grid=1, block=8)


def test_mdspan_arrays_keep_their_producer_alive():
    # issue 10's example: the mdspan and its producer die before .sum() reads the array
    assert wb.to_host_mdspan(np.ones(1 << 22, np.float32), wb.Float32, 1).numpy().sum() == float(1 << 22)
    p = Producer(np.arange(6, dtype=np.float32))
    arr = wb.to_host_mdspan(p, wb.Float32, 1).numpy()
    gc.collect()
    assert p.deleter_calls == 0 and arr.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    del arr
    gc.collect()
    assert p.deleter_calls == 1


def test_sub_views_and_exports_keep_the_producer_alive():
    p = Producer(np.arange(12, dtype=np.float32).reshape(3, 4))
    t = wb.from_dlpack(p)
    sub = wb.make_tensor(t, wb.make_layout(2, stride=5))
    n = sub.numpy()
    del t, sub
    gc.collect()
    assert p.deleter_calls == 0 and n.tolist() == [0.0, 5.0]
    del n
    gc.collect()
    assert p.deleter_calls == 1


def test_executor_accesses_are_checked_against_the_layout():
    @wb.kernel
    def overrun(a):
        a[wb.thread_idx().x + 4] = 1.0

    a = np.zeros(4, np.float32)
    with pytest.raises(KernelRuntimeError, match="out-of-bounds"):
        overrun.launch(a, grid=1, block=1)
    assert not a.any()


# -- read-only is never lost ------------------------------------------------------------------------
def _ro(n=4):
    a = np.arange(n, dtype=np.float32)
    a.flags.writeable = False
    return a


def test_read_only_survives_iterator_make_tensor_and_pointer_arithmetic():
    t = wb.from_dlpack(_ro())
    p = t.iterator
    assert p.read_only and (p + 1).read_only and "read-only" in repr(p)
    assert wb.make_tensor(p, wb.make_layout(4)).read_only
    assert wb.make_tensor(t, wb.make_layout(2)).read_only
    assert not wb.make_ptr(wb.Float32, 64).read_only


def test_kernels_refuse_to_write_read_only_memory_by_every_path():
    a = _ro()
    t = wb.from_dlpack(a)
    with pytest.raises(ValueError, match="read-only"):
        fill.launch(t, 1.0, grid=1, block=4)
    with pytest.raises(ValueError, match="read-only"):
        fill.launch(wb.make_tensor(t, wb.make_layout(4)), 1.0, grid=1, block=4)
    with host_buffers(np.zeros(1)), pytest.raises(ValueError, match="read-only"):
        fill.launch(wb.make_tensor(t.iterator, wb.make_layout(4)), 1.0, grid=1, block=4)
    with host_buffers(a), pytest.raises(ValueError, match="read-only"):
        fill_ptr.launch(t.iterator, 4, 1.0, grid=1, block=4)
    with pytest.raises(ValueError, match="read-only"):
        fill.launch(a, 1.0, grid=1, block=4)
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0]
    out = np.zeros(4, np.float32)
    copy_.launch(t, out, grid=1, block=4)    # reading is fine
    assert out.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_read_only_numpy_views_cannot_be_made_writable():
    t = wb.from_dlpack(_ro())
    for arr in (t.numpy(), wb.to_host_mdspan(t, wb.Float32, 1).numpy(),
                wb.to_host_mdspan(np.zeros(3, np.float32), wb.const(wb.Float32), 1).numpy()):
        assert not arr.flags.writeable
        with pytest.raises(ValueError):
            arr.flags.writeable = True
        with pytest.raises(ValueError):
            arr[0] = 1.0


def test_read_only_false_cannot_remove_const_from_a_read_only_source():
    a = _ro()
    with pytest.raises(ValueError, match="read_only=True or None for a read-only source.*but got read_only=False"):
        wb.to_host_mdspan(a, wb.Float32, 1, read_only=False)
    ro_view = wb.to_host_mdspan(a, wb.Float32, 1)
    for source in (wb.from_dlpack(a), wb.to_dlpack_tensor(ro_view), wb.to_dlpack_tensor(ro_view).get()):
        with pytest.raises(ValueError, match="never remove it"):
            wb.to_host_mdspan(source, wb.Float32, 1, read_only=False)
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0]
    w = np.zeros(3, np.float32)                 # a request may add const, and False on a writable source is fine
    assert wb.to_host_mdspan(w, wb.Float32, 1, read_only=True).is_const
    md = wb.to_host_mdspan(w, wb.Float32, 1, read_only=False)
    md[0] = 5.0
    assert w[0] == 5.0 and not md.is_const
    with pytest.raises(TypeError, match="True, False or None"):
        wb.to_host_mdspan(w, wb.Float32, 1, read_only=0)


def test_const_survives_the_dltensor_of_an_export_and_of_an_import():
    from workbench.dlpack.importer import consume

    b = _ro()
    exported = wb.to_dlpack_tensor(wb.to_host_mdspan(b, wb.Float32, 1)).get()  # issue 10: get() dropped const
    imported = consume(_ro()).dltensor
    for t in (exported, imported):
        md = wb.to_host_mdspan(t, wb.Float32, 1)
        assert md.is_const
        with pytest.raises(TypeError, match="const float"):
            md[1] = 77.0
        assert not md.numpy().flags.writeable
    assert b.tolist() == [0.0, 1.0, 2.0, 3.0]
    w = np.zeros(3, np.float32)                 # a writable source's DLTensor stays writable
    for t in (wb.to_dlpack_tensor(wb.to_host_mdspan(w, wb.Float32, 1)).get(), consume(w).dltensor):
        wb.to_host_mdspan(t, wb.Float32, 1)[1] = 7.0
    assert w.tolist() == [0.0, 7.0, 0.0]


def test_read_only_exports_say_so_or_are_refused():
    t = wb.from_dlpack(_ro())
    assert wb.from_dlpack(t).read_only
    with pytest.raises(BufferError, match="read-only"):
        torch.from_dlpack(t)
    with pytest.raises(BufferError, match="read-only"):
        np.from_dlpack(t)


# -- type strictness -----------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [4.7, 16.0, "16", b"16", None, True, [16]])
def test_make_ptr_refuses_addresses_that_are_not_integers(bad):
    with pytest.raises(TypeError, match="integer address"):
        wb.make_ptr(wb.Float32, bad)


@pytest.mark.parametrize("bad", [-4, 1 << 64, (1 << 64) + 16, -(1 << 70)])
def test_make_ptr_refuses_addresses_outside_64_bits(bad):
    with pytest.raises(ValueError, match=r"\[0, 2\*\*64\)"):
        wb.make_ptr(wb.Float32, bad)


def test_make_ptr_takes_python_and_numpy_integers_up_to_2_64():
    assert wb.make_ptr(wb.Float32, np.uint64((1 << 64) - 16)).address == (1 << 64) - 16
    assert wb.make_ptr(wb.Float32, np.int64(64)).address == 64
    with pytest.raises(ValueError, match="2\\*\\*64"):
        wb.make_ptr(wb.Float32, (1 << 64) - 16) + 4


class _SubTensor(torch.Tensor):
    pass


def test_torch_checks_apply_to_subclasses():
    z = torch.randn(3, dtype=torch.complex64)
    cases = ((z.conj().imag, "resolve_neg"), (z.conj(), "resolve_conj"), (torch.ones(3, requires_grad=True), "detach"))
    for x, fix in cases:
        s = x.as_subclass(_SubTensor)
        with pytest.raises(BufferError, match=fix):
            wb.from_dlpack(s)
        with pytest.raises(BufferError, match=fix):
            wb.from_dlpack(s, stream=1)
    ok = torch.arange(3.0).as_subclass(_SubTensor)
    assert wb.from_dlpack(ok).numpy().tolist() == [0.0, 1.0, 2.0]

    # the C launcher reads torch tensors without Python: its hazard checks must see a subclass too
    sp = fill.specialize((torch.zeros(3), 1.0))  # passed implicitly
    for x, _ in cases:
        if not x.is_complex():
            assert sp.values((x.as_subclass(_SubTensor), 1.0)) is None
    assert sp.values((ok, 1.0)) is not None


def test_a_pointer_is_fixed_once_made():
    # a field changed after make_ptr's checks would reach the launcher unchecked (4.7 as an address,
    # a read-only pointer made writable, a deleted memory space read as NULL)
    p = wb.from_dlpack(_ro()).iterator
    for name, value in (("address", 4.7), ("read_only", False), ("memspace", "gmem"), ("assumed_align", 1)):
        with pytest.raises(AttributeError):
            setattr(p, name, value)
        with pytest.raises(AttributeError):
            delattr(p, name)
    assert p.read_only
    with pytest.raises(TypeError, match="fixed once it is made"):
        _native.init_pointer(p, wb.Float32, 64, "generic", 4, False)


def test_make_mdspan_takes_integers_only_and_a_span_within_int64():
    with pytest.raises(TypeError, match="integer address"):
        wb.make_mdspan(4.7, wb.Float32, (2,))               # was silently the address 4
    with pytest.raises(TypeError, match="integer offset"):
        wb.make_mdspan(0x1000, wb.Float32, (2,), strides=(-1,), offset=1.5)
    with pytest.raises(ValueError, match=r"\[0, 2\*\*64\)"):
        wb.make_mdspan(-16, wb.Float32, (2,))
    big = 1 << 62   # is_unique() enumerates such interleaved strides in int64: the span must fit
    with pytest.raises(ValueError, match="required span size is not representable"):
        wb.make_mdspan(0x1000, wb.Float32, (3, 3, 3), strides=(big, big + 1, 1))
    assert wb.make_mdspan(np.uint64(0x1000), wb.Float32, (2,)).data_handle() == 0x1000


# -- no silent wrong answer: offsets beyond int64, composed layouts outside their inner domain ------
def test_layout_offsets_refuse_to_wrap_around_int64():
    with pytest.raises(ValueError, match=r"offsets\(\) of 4:4611686018427387904: expected offsets within int64"):
        wb.make_layout(4, stride=2**62).offsets()          # was [0, 2**62, -2**63, -2**62]
    with pytest.raises(ValueError, match="within int64"):
        wb.make_layout((2, 2), stride=(-(2**62), -(2**62) - 1)).offsets()
    # the edges themselves are exact, and a stride of a size-1 mode does not matter
    assert wb.make_layout(2, stride=2**63 - 1).offsets().tolist() == [0, 2**63 - 1]
    assert wb.make_layout(2, stride=-(2**63)).offsets().tolist() == [0, -(2**63)]
    assert wb.make_layout((1, 3), stride=(2**80, 5)).offsets().tolist() == [0, 5, 10]


def test_window_offsets_and_printing_refuse_to_wrap_around_int64():
    from workbench.layout.window import mode_offsets, window_offsets

    with pytest.raises(ValueError, match="within int64"):
        window_offsets(wb.make_layout((2, 2), stride=(2**62, 2**62)), np.arange(2), np.arange(2))
    with pytest.raises(ValueError, match="within int64"):
        mode_offsets(4, 2**62, np.arange(4))
    with pytest.raises(ValueError, match="within int64"):
        wb.print_layout(wb.make_layout((2, 2), stride=(1, 2**63 - 1)))
    got = window_offsets(wb.make_layout((4, 2), stride=(1, 2**62)), np.arange(4), np.arange(2))
    assert got.tolist() == [[r, r + 2**62] for r in range(4)]


def test_layout_view_of_a_layout_beyond_int64_is_refused_not_drawn_wrapped():
    pytest.importorskip("anywidget", reason="the views need anywidget (not on the GPU machine)")
    from widgets import LayoutView

    with pytest.raises(ValueError, match="within int64"):
        LayoutView(wb.parse_layout("4:4611686018427387904")).to_svg()   # showed -9223372036854775808


def test_playground_shows_overflow_and_arithmetic_errors_in_place(monkeypatch):
    pytest.importorskip("anywidget", reason="the views need anywidget (not on the GPU machine)")
    from widgets import playground

    p = playground.AlgebraPlayground()
    p.a_control.value = "(4,2):(1,100000000000000000000)"      # OverflowError escaped the observer
    assert p.error.startswith("ValueError:") and "within int64" in p.error
    assert p.grids() == [None, None, None] and "wb-error" in p.info.value and "<svg" in p.to_svg()
    monkeypatch.setitem(playground.OPERATIONS, "coalesce", (lambda A: 2.0 ** 2000, "none", False))
    p.a_control.value = "(4,2):(1,4)"
    p.op_control.value = "coalesce"
    assert p.error.startswith("OverflowError:")
    p.op_control.value = "composition"
    assert p.error == "" and p.grids()[2] is not None


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=3).filter(lambda s: 0 in s), st.booleans(), st.data())
def test_playground_names_empty_layouts_for_every_operation(shape, as_b, data):
    """A layout with a zero extent, as A or B, under any operation: a ValueError naming the empty layout, never a
    ZeroDivisionError or a numpy reduction error."""
    pytest.importorskip("anywidget", reason="the views need anywidget (not on the GPU machine)")
    from widgets import playground
    op = data.draw(st.sampled_from(sorted(playground.OPERATIONS)))
    text = str(wb.make_layout(tuple(shape))) if len(shape) > 1 else f"{shape[0]}:1"
    p = playground.AlgebraPlayground(**({"b": text} if as_b else {"a": text}), operation=op)
    if as_b and playground.OPERATIONS[op][1] != "layout":
        return                                                   # B is not read by this operation
    assert p.error.startswith("ValueError: Expected a layout of at least one element"), p.error


def test_composed_layout_offsets_agree_with_evaluation_or_refuse():
    from workbench.layout.window import offset_bounds, window_offsets

    inner = wb.make_layout((4, 4), stride=(4, 1))
    neg = wb.make_composed_layout(inner, 0, wb.make_layout((2, 2), stride=(-1, -2)))
    for f in (lambda: neg(1), neg.offsets, lambda: window_offsets(neg, np.arange(2), np.arange(2)),
              lambda: offset_bounds(neg)):
        with pytest.raises(ValueError, match=">= 0"):
            f()                                             # offsets() said 15 (wrapped) where c(1) was 11
    past = wb.make_composed_layout(inner, 10, wb.make_layout((2, 2), stride=(1, 8)))   # reaches index 19 of 16
    want = [past(i) for i in range(4)]
    assert want == [10, 14, 12, 16]                         # CuTe: the last mode extends past the size
    assert past.offsets().tolist() == want                  # was an IndexError
    assert window_offsets(past, np.arange(2), np.arange(2)).T.reshape(-1).tolist() == want
    lo, hi = offset_bounds(past)
    assert lo <= min(want) and hi >= max(want)
    sw = wb.make_composed_layout(wb.make_swizzle(3, 4, 3), 0, wb.make_layout((8, 64), stride=(64, 1)))
    assert sw.offsets().tolist() == [sw(i) for i in range(512)]
    with pytest.raises(ValueError, match="within int64"):
        wb.make_composed_layout(inner, 2**63 - 2, wb.make_layout(4)).offsets()


# -- deep nesting ------------------------------------------------------------------------------------
def _nested(levels, make=tuple, leaf=4):
    x = leaf
    for _ in range(levels):
        x = make((x,))
    return x


def test_deeply_nested_tuples_are_refused_like_deeply_nested_text():
    deep = _nested(5000)
    cases = (lambda: wb.make_layout(deep), lambda: wb.Layout(_nested(5000, list)),
             lambda: wb.make_layout(4, stride=deep), lambda: wb.make_tensor(wb.from_dlpack(np.zeros(4)), deep),
             lambda: wb.make_identity_tensor(deep), lambda: wb.make_layout(_nested(33)))
    for f in cases:
        with pytest.raises(ValueError, match="nested at most 32 levels deep"):
            f()                                             # was a RecursionError
    text = "(" * 32 + "4" + ")" * 32
    assert wb.make_layout(_nested(32)) == wb.parse_layout(text) == wb.Layout(_nested(32, list))
    with pytest.raises(ValueError, match="nested at most 32 levels deep"):
        wb.parse_layout("(" + text + ")")


A8 = wb.make_layout((8, 8))
ENTRY_POINTS = {   # each takes the nested tuple d where the user passes an IntTuple, a coordinate or a tiler
    "L(d)": lambda d: A8(d), "L(1, d)": lambda d: A8(1, d), "rank-1 L(d)": lambda d: wb.make_layout(16)(d),
    "L[d]": lambda d: A8[d], "identity tensor[d]": lambda d: wb.make_identity_tensor((4, 4))[d],
    "size": wb.size, "depth": wb.depth, "product": wb.product, "flatten": wb.flatten, "product_each": wb.product_each,
    "cosize": wb.cosize, "prefix_product": lambda d: wb.layout.prefix_product(d),
    "crd2idx crd": lambda d: wb.crd2idx(d, 4), "crd2idx shape": lambda d: wb.crd2idx(0, d),
    "crd2idx stride": lambda d: wb.crd2idx(0, 4, d), "idx2crd idx": lambda d: wb.idx2crd(d, 4),
    "idx2crd shape": lambda d: wb.idx2crd(0, d), "ceil_div a": lambda d: wb.ceil_div(d, 2),
    "ceil_div b": lambda d: wb.ceil_div(4, d),
    "logical_divide": lambda d: wb.logical_divide(A8, d), "zipped_divide": lambda d: wb.zipped_divide(A8, d),
    "tiled_divide": lambda d: wb.tiled_divide(A8, d), "flat_divide": lambda d: wb.flat_divide(A8, d),
    "logical_product": lambda d: wb.logical_product(A8, d), "zipped_product": lambda d: wb.zipped_product(A8, d),
    "tiled_product": lambda d: wb.tiled_product(A8, d), "flat_product": lambda d: wb.flat_product(A8, d),
    "composition": lambda d: wb.composition(A8, d), "complement": lambda d: wb.complement(A8, d),
    "coalesce profile": lambda d: wb.coalesce(A8, d),
    "local_tile tiler": lambda d: wb.local_tile(A8, d, 0), "local_tile coord": lambda d: wb.local_tile(A8, (2, 2), d),
    "slice_": lambda d: wb.slice_(A8, d), "dice": lambda d: wb.dice(A8, d),
    "slice_and_offset": lambda d: wb.slice_and_offset(d, A8),
    "elem_less both": lambda d: wb.elem_less(d, d), "elem_less crd": lambda d: wb.elem_less(d, 4),
    "elem_less shape": lambda d: wb.elem_less(0, d),
    "make_ordered_layout shape": lambda d: wb.make_ordered_layout(d, 0),
    "make_ordered_layout order": lambda d: wb.make_ordered_layout(4, d),
    "explain": lambda d: wb.explain("logical_divide", A8, d),
}


@pytest.mark.parametrize("name", ENTRY_POINTS)
@pytest.mark.parametrize("levels", [33, 5000])
def test_deep_tuples_are_refused_at_every_core_entry_point(name, levels):
    with pytest.raises(ValueError, match="nested at most 32 levels deep"):
        ENTRY_POINTS[name](_nested(levels))                 # 5000 levels: was a RecursionError


def test_tuples_nested_32_levels_deep_still_work_at_the_entry_points():
    deep, crd = _nested(32), _nested(32, leaf=3)            # a 32-level shape, and a coordinate congruent with it
    L = wb.make_layout(deep)
    assert L(crd) == 3 and wb.crd2idx(crd, deep) == 3 and wb.idx2crd(3, deep) == crd
    assert wb.size(deep) == wb.product(deep) == 4 and wb.depth(deep) == 32 and wb.flatten(deep) == (4,)
    assert wb.elem_less(crd, deep) and not wb.elem_less(crd, _nested(32, leaf=3))
    assert wb.ceil_div(_nested(32, leaf=7), 2) == _nested(32, leaf=4)
    assert wb.logical_divide(wb.make_layout(8), _nested(32, leaf=2)).size == 8
    assert wb.composition(wb.make_layout(8), _nested(32, leaf=2)).size == 2
    assert wb.make_ordered_layout(deep, _nested(32, leaf=0)) == L
    assert wb.slice_and_offset(_nested(32, leaf=None), L)[1] == 0
    print(wb.zipped_divide(wb.make_layout(8), _nested(32, leaf=2)))   # the algebra nests its result deeper: it prints


def test_the_thread_index_of_local_partition_is_an_int():
    with pytest.raises(TypeError, match="thread index as an int"):
        wb.local_partition(A8, wb.make_layout((2, 2)), (1, 0))   # formatting it exhausted the stack when deep
    assert wb.local_partition(A8, wb.make_layout((2, 2)), np.int64(3))[1] == A8((1, 1))


def test_queries_that_need_a_layout_refuse_an_inttuple_by_type():
    for f in (wb.cosize, wb.stride, wb.offset_span):
        with pytest.raises(TypeError, match=r"Expected a Layout or a tensor for \w+\(\), but got the IntTuple \(4,4\)"):
            f((4, 4))                                        # was an AttributeError on None
    with pytest.raises(TypeError, match="int mode indices"):
        wb.select(A8, 0, (0,))


def test_crd2idx_takes_a_stride_congruent_with_the_shape():
    with pytest.raises(ValueError, match=r"Expected a stride congruent with shape 4, but got \(1,2\)"):
        wb.crd2idx(3, 4, (1, 2))                             # was (1,2,1,2,1,2): the stride tuple repeated
    assert wb.crd2idx(3, (4, 4), (4, 1)) == 12 and wb.crd2idx((1, 2), (4, 4), (4, 1)) == 6


# -- negative indices: outside a layout's domain, and C++ CuTe answers differently --------------------
@pytest.mark.parametrize("call", [
    lambda L: L(-1), lambda L: L(np.int64(-1)), lambda L: L((-1, 0)), lambda L: wb.make_layout(((2, 2), 4))((-1, 0)),
    lambda L: wb.crd2idx(-1, L.shape, L.stride), lambda L: wb.idx2crd(-1, L.shape),
    lambda L: wb.make_layout(4)(-1), lambda L: wb.make_identity_tensor((4, 4))[-1],
])
def test_negative_indices_are_refused(call):
    L = wb.make_layout((4, 4), stride=(4, 1))
    with pytest.raises(ValueError, match="Expected an index >= 0"):
        call(L)                                              # L(-1) was 11 (Python floors); CuTe C++ gives -4


def test_indices_past_the_size_still_extend_the_last_mode():
    L = wb.make_layout((4, 4), stride=(4, 1))
    assert [L(i) for i in (0, 5, 15, 16, 21)] == [0, 5, 15, 4, 9]   # as CuTe: 16 is (0,4) and 21 is (1,5)
    assert wb.idx2crd(21, (4, 4)) == (1, 1)                          # CuTe's idx2crd wraps every mode


# -- bounded work ----------------------------------------------------------------------------------
@pytest.mark.parametrize("grid,block,msg", [
    ((2**31, 1, 1), (1, 1, 1), "grid x"),
    ((1, 65536, 1), (1, 1, 1), "grid y"),
    ((1, 1, 65536), (1, 1, 1), "grid z"),
    ((1, 1, 1), (1025, 1, 1), "block x"),
    ((1, 1, 1), (32, 32, 2), "1024 threads"),
    ((1, 1, 1), (1, 1, 65), "block z"),
    ((0, 1, 1), (1, 1, 1), "grid x"),
])
def test_cpu_executor_enforces_cuda_launch_limits(grid, block, msg):
    with pytest.raises(ValueError, match=msg):
        check_launch_limits(grid, block)
    with pytest.raises(ValueError):   # through a real launch: refused before a single block runs
        fill.launch(np.zeros(4, np.float32), 1.0, grid=grid, block=block, backend="cpu")


def test_cpu_executor_accepts_the_limits_themselves():
    for grid, block in (((1, 65535, 1), (256, 1, 1)), ((1, 1, 65535), (256, 1, 1)), ((16384, 1, 1), (1024, 1, 1))):
        check_launch_limits(grid, block)                     # 2**24 threads or just under
    check_launch_limits((1, 1, 1), (16, 1, 64))
    check_launch_limits((1, 1, 1), (1, 1, 1), 48 * 1024, 179 * 1024)   # 48 KiB static + the rest of 227 KiB


def _smem_kernel(n):
    @wb.kernel
    def uses_smem(a):
        s = wb.shared_tensor(wb.Float32, wb.make_layout(n))
        i = wb.thread_idx().x
        s[i] = 1.0
        a[i] = s[i]

    return uses_smem


@pytest.mark.parametrize("static,dynamic,msg", [
    (48 * 1024 + 4, 0, "at most 49152 bytes \\(48 KiB\\) of static shared memory"),
    (1 << 28, 0, "static shared memory"),
    (0, -1, "smem\\) >= 0"),
    (0, 1 << 40, "at most 232448 bytes \\(227 KiB"),
    (48 * 1024, 179 * 1024 + 1, "49152 \\+ 183297 = 232449"),
])
def test_cpu_executor_enforces_cuda_shared_memory_limits(static, dynamic, msg):
    with pytest.raises(ValueError, match=msg):
        check_launch_limits((1, 1, 1), (1, 1, 1), static, dynamic)


def test_shared_memory_beyond_cuda_limits_is_refused_before_a_block_runs():
    a = np.zeros(4, np.float32)
    # 256 MiB of __shared__ ran; shared tensors beyond 48 KiB live in dynamic shared memory, up to the 227 KiB opt-in
    with pytest.raises(ValueError, match=r"shared memory of at most 232448 bytes .* got 268435456 \+ 0"):
        _smem_kernel(1 << 26).launch(a, grid=2, block=4, backend="cpu")
    ok = _smem_kernel(12288)                                                 # exactly 48 KiB
    for smem in (-1, 1 << 40, 179 * 1024 + 1):
        with pytest.raises(ValueError, match="shared memory"):
            ok.launch(a, grid=1, block=4, smem=smem, backend="cpu")
    with pytest.raises(TypeError, match="smem"):
        ok.launch(a, grid=1, block=4, smem=1.5, backend="cpu")
    assert not a.any()
    ok.launch(a, grid=1, block=4, smem=179 * 1024, backend="cpu")
    assert a.tolist() == [1.0] * 4


def _fake_gpu_specialization(kern, static_smem, calls):
    """A GPU specialization of kern that accepts any arguments and records what would reach cuLaunchKernel: the launch
    path up to the driver, without a GPU."""
    gpu = SimpleNamespace(buf=None, handle=None, params_ptr=None, launch_fn=lambda *a: calls.append(a) or 0)
    sp = SimpleNamespace(gpu=gpu, ir=SimpleNamespace(shared_bytes=static_smem, dynamic_smem=0), pack=lambda args, buf: True)
    kern._hot.insert(0, sp)


def test_gpu_launches_check_shared_memory_before_the_driver():
    k = _smem_kernel(12288)                                  # 48 KiB of static shared memory
    calls = []
    _fake_gpu_specialization(k, 48 * 1024, calls)
    for smem in (-1, 1 << 40, 179 * 1024 + 1):             # -1 reached the driver, 2**40 raised ctypes' ArgumentError
        with pytest.raises(ValueError, match="shared memory"):
            k.launch(np.zeros(4, np.float32), grid=1, block=4, smem=smem)
    with pytest.raises(TypeError, match="smem"):
        k.launch(np.zeros(4, np.float32), grid=1, block=4, smem=1.5)
    assert calls == []
    k.launch(np.zeros(4, np.float32), grid=1, block=4, smem=np.int64(179 * 1024))
    assert calls[0][7] == 179 * 1024 and type(calls[0][7]) is int     # cuLaunchKernel's sharedMemBytes


def test_cpu_executor_caps_the_threads_of_a_launch():
    with pytest.raises(ValueError, match=r"at most 16777216 threads .* is 16777472 threads; launch on a GPU"):
        check_launch_limits((65537, 1, 1), (256, 1, 1))
    with pytest.raises(ValueError, match="threads") as e:
        check_launch_limits((2**31 - 1, 65535, 65535), (1024, 1, 1))   # CUDA's own limits: 2**73 threads
    assert "grid" not in str(e.value).split("but")[0]
    check_launch_limits((65536, 1, 1), (256, 1, 1))
    assert MAX_CPU_THREADS == 1 << 24
    a = np.zeros(4, np.float32)
    with pytest.raises(ValueError, match="threads"):        # refused before a single block runs
        fill.launch(a, 1.0, grid=(8193, 1, 1), block=(32, 8, 8), backend="cpu")
    assert not a.any()


# -- garbage collection ----------------------------------------------------------------------------
def test_a_torch_tensor_holding_its_own_view_is_collected():
    x = torch.arange(4.0)
    x.view_ = wb.from_dlpack(x)   # cycle: x -> view -> fields -> x
    y = torch.arange(4.0)
    y.view_ = wb.make_tensor(wb.from_dlpack(y), wb.make_layout(2))
    refs = [weakref.ref(x), weakref.ref(x.view_), weakref.ref(y.view_)]
    del x, y
    gc.collect()
    assert [r() for r in refs] == [None, None, None]


def test_the_c_types_take_part_in_cycle_collection():
    for tp in (_native.TensorBase, _native.PointerBase):
        assert tp.__flags__ & (1 << 14), tp  # Py_TPFLAGS_HAVE_GC
    t = wb.from_dlpack(np.zeros(3))
    t._marks = [t]                           # a cycle through a C slot
    r = weakref.ref(t)
    del t
    gc.collect()
    assert r() is None


def test_a_launcher_takes_part_in_cycle_collection():
    from workbench.dsl.runtime import _launch

    class Holder:
        pass

    o = Holder()
    o.launcher = _launch.Launcher(_launch.null_launch_address(), 1, (1,) * 6, 0, 8, 8, 64, ((1, 0),), o)
    r = weakref.ref(o)
    del o
    gc.collect()
    assert r() is None


def test_a_capsule_tensor_is_watched_once_it_could_be_in_a_cycle():
    # born untracked (it holds nothing that could refer back); storing a container tracks it
    t = wb.from_dlpack(np.zeros(3))
    assert not gc.is_tracked(t)
    t.mark_layout_dynamic()
    assert gc.is_tracked(t)


def test_dlpack_owner_collected_with_a_cycle_releases_exactly_once():
    p = Producer()
    t = wb.from_dlpack(p)
    t._order = [t]
    del t
    gc.collect()
    assert p.deleter_calls == 1


# -- the CCCL harness is never run from a path another user could plant ---------------------------
def test_cccl_harness_lives_in_a_private_directory(tmp_path, monkeypatch):
    import test_mdspan_cccl as cccl

    planted = tmp_path / "planted"
    planted.mkdir()
    os.chmod(planted, 0o777)
    with pytest.raises(PermissionError, match="writable by others"):
        cccl.private_dir(planted)
    mine = tmp_path / "mine"
    assert cccl.private_dir(mine) == mine and (mine.stat().st_mode & 0o777) == 0o700
    assert str(cccl.cache_root()).startswith(str(cccl.REPO))   # never $TMPDIR


def test_hot_launch_paths_refuse_a_read_only_pointer():
    """The launch path (the C launcher of workbench.dsl.runtime._launch, which also packs for the slow path) hands a
    read-only pointer back to the slow path, which refuses it when the kernel writes it; checked without a GPU through a C-callable
    stand-in for cuLaunchKernel."""
    import ctypes

    from workbench.kernels import examples as E

    launch_t = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, *[ctypes.c_uint] * 7, ctypes.c_void_p, ctypes.c_void_p,
                                ctypes.c_void_p)
    calls = []
    fn = launch_t(lambda *a: calls.append(a) or 0)
    sp = E.add_ptr.specialize((wb.make_ptr(wb.Float32, 256, "gmem", assumed_align=16),) * 3 + (32, 32))
    buf = ctypes.create_string_buffer(sp.size)
    n = max(1, sp.size // 8)
    params = (ctypes.c_void_p * n)(*[ctypes.addressof(buf) + 8 * i for i in range(n)])
    from workbench.dsl.runtime import _launch

    go = _launch.Launcher(ctypes.cast(fn, ctypes.c_void_p).value, 0x1234, (4, 1, 1, 256, 1, 1), 0,
                          ctypes.addressof(params), ctypes.addressof(buf), ctypes.sizeof(buf), sp.arg_specs, fn)
    ptrs = [wb.make_ptr(wb.Float32, a, "gmem", assumed_align=16) for a in (0x1000, 0x2000, 0x3000)]
    assert go(*ptrs, 32, 7) == 0 and len(calls) == 1
    ro = wb.Pointer(wb.Float32, 0x3000, "gmem", 16, read_only=True)
    assert go(*ptrs[:2], ro, 32, 7) is None and len(calls) == 1
    assert sp.values((*ptrs[:2], ro, 32, 7)) is None           # the same guard packs for the slow path


@pytest.mark.gpu
def test_gpu_read_only_memory_is_refused_on_every_launch_path():
    from workbench.dsl.runtime import cupy as backend_cupy
    from workbench.kernels import examples as E

    if not backend_cupy.gpu_available():
        pytest.skip("needs cupy and a CUDA GPU")
    import cupy

    a, b, c = (cupy.arange(64, dtype=cupy.float32) for _ in range(3))
    pa, pb, pc = (wb.make_ptr(wb.Float32, x.data.ptr, "gmem", assumed_align=16) for x in (a, b, c))
    E.add_ptr[(1, 1, 1), (64, 1, 1)](pa, pb, pc, 8, 8)       # warm: the C launcher now serves this launch
    cupy.cuda.runtime.deviceSynchronize()
    assert cupy.allclose(c, a + b)
    ro = wb.Pointer(wb.Float32, c.data.ptr, "gmem", 16, read_only=True)  # what a read-only tensor's .iterator is
    before = c.copy()
    for _ in range(2):                                       # cold and hot
        with pytest.raises(ValueError, match="read-only"):
            E.add_ptr[(1, 1, 1), (64, 1, 1)](pa, pb, ro, 8, 8)
    cupy.cuda.runtime.deviceSynchronize()
    assert cupy.array_equal(c, before)


def test_views_of_an_imported_dltensor_keep_the_producer_alive():
    from workbench.dlpack.importer import consume

    dl = consume(np.arange(1 << 16, dtype=np.float32)).dltensor   # the Imported object is dropped at once
    gc.collect()
    md = wb.to_host_mdspan(dl, wb.Float32, 1)
    del dl
    gc.collect()
    assert md.numpy()[-1] == (1 << 16) - 1


def test_the_workbench_capsule_reaches_no_foreign_consumer():
    # __wb_dlpack__ skips the export rule (read-only, negative strides): torch must not be able to take it
    ro = wb.from_dlpack(_ro())
    with pytest.raises(Exception, match="capsule"):
        torch.from_dlpack(ro.__wb_dlpack__(max_version=(1, 3)))
    rev = wb.from_dlpack(np.arange(8.0)[::-1])
    with pytest.raises(Exception, match="capsule"):
        torch.utils.dlpack.from_dlpack(rev.__wb_dlpack__(max_version=(1, 3)))
    assert wb.from_dlpack(ro).read_only and wb.from_dlpack(rev).stride == (-1,)
