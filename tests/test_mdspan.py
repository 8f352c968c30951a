"""Unit tests of workbench/_mdspan.py: every rule of seed 000 in CCCL's order, the views
(seed 003's accessors), to_dlpack_tensor (seed 001) and every documented improvement.
The differential proof against the real CCCL headers is tests/test_mdspan_cccl.py."""

from __future__ import annotations

import ctypes
import gc
import itertools
import random
import weakref

import numpy as np
import pytest

import workbench as wb
import workbench._mdspan as wbm
from workbench.dlpack.abi import DLTensor

CPU, CUDA, MANAGED = 1, 2, 13
NP_CODES = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}


@pytest.fixture(autouse=True)
def _no_memory_type_probe(monkeypatch, request):
    # Host numpy memory labelled kDLCUDA / kDLCUDAManaged plays device memory here; on a GPU
    # machine the real-memory-type check would (rightly) refuse it, so it is off except in the
    # gpu tests, which use real device memory.
    if "gpu" not in request.keywords:
        monkeypatch.setattr(wbm, "_CUDA", False)


def dl(arr=None, *, device=CPU, ndim=None, dtype=None, data=..., shape=..., strides=..., byte_offset=0):
    """A hand-made DLTensor over a numpy array (fields overridable); keeps its arrays alive."""
    t = DLTensor()
    keep = [arr]
    if arr is not None:
        item = arr.dtype.itemsize
        t.data = arr.ctypes.data if data is ... else data
        dtype = dtype or (NP_CODES[arr.dtype.kind], item * 8, 1)
        shape = arr.shape if shape is ... else shape
        strides = tuple(s // item for s in arr.strides) if strides is ... else strides
    else:
        t.data = None if data is ... else data
    t.device.device_type = device
    t.ndim = ndim if ndim is not None else arr.ndim if shape is None else len(shape)
    t.dtype.code, t.dtype.bits, t.dtype.lanes = dtype
    for name, vals in (("shape", shape), ("strides", strides)):
        if vals is not None and vals is not ...:
            a = (ctypes.c_int64 * max(len(vals), 1))(*vals)
            keep.append(a)
            setattr(t, name, ctypes.cast(a, ctypes.POINTER(ctypes.c_int64)))
    t.byte_offset = byte_offset
    t._keep = keep
    return t


# ------------------------------------------------------------------------------------------------
# Seed examples
# ------------------------------------------------------------------------------------------------

def test_seed_000_example():
    data = np.array([0, 1, 2, 3, 4, 5], dtype=np.int32)
    tensor = dl(data, shape=(2, 3), strides=(3, 1))
    md = wb.to_host_mdspan(tensor, wb.Int32, 2)
    assert md.rank() == 2
    assert md.extent(0) == 2 and md.extent(1) == 3
    assert md.stride(0) == 3 and md.stride(1) == 1
    assert md.data_handle() == data.ctypes.data
    assert md[0, 0] == 0 and md[1, 2] == 5


def test_seed_001_example():
    data = np.array([0, 1, 2, 3, 4, 5], dtype=np.int32)
    md = wb.make_mdspan(data.ctypes.data, wb.Int32, (2, 3), owner=data)
    w = wb.to_dlpack_tensor(md)
    t = w.get()
    assert t.device.device_type == CPU and t.device.device_id == 0
    assert t.ndim == 2
    assert t.shape[0] == 2 and t.shape[1] == 3
    assert t.strides[0] == 3 and t.strides[1] == 1
    assert t.data == data.ctypes.data
    assert t.byte_offset == 0 and (t.dtype.code, t.dtype.bits, t.dtype.lanes) == (0, 32, 1)


def test_get_cannot_dangle():
    # Seed 001's invalid usages (get() on a temporary, returning shape) are safe in Python.
    data = np.arange(6, dtype=np.int32)
    t = wb.to_dlpack_tensor(wb.make_mdspan(data.ctypes.data, wb.Int32, (2, 3), owner=data)).get()
    shape_ptr = t.shape
    probe = weakref.ref(t._wb_keepalive)
    gc.collect()
    assert probe() is not None
    _ = [np.zeros(100) for _ in range(100)]
    assert (shape_ptr[0], shape_ptr[1], t.strides[0]) == (2, 3, 3)
    del t, shape_ptr
    gc.collect()
    assert probe() is None


# ------------------------------------------------------------------------------------------------
# The checks, one by one and in order
# ------------------------------------------------------------------------------------------------

def _err(fn, *args, **kw):
    with pytest.raises(ValueError) as e:
        fn(*args, **kw)
    return str(e.value)


@pytest.mark.parametrize("fn,name,dev", [(wb.to_host_mdspan, "kDLCPU for host_mdspan", CUDA),
                                         (wb.to_device_mdspan, "kDLCUDA for device_mdspan", CPU),
                                         (wb.to_managed_mdspan, "kDLCUDAManaged for managed_mdspan", CUDA)])
def test_device_type(fn, name, dev):
    a = np.zeros((2, 3), np.float32)
    msg = _err(fn, dl(a, device=dev), wb.Float32, 2)
    assert msg.startswith(f"DLTensor device type must be {name}")
    assert "but got kDL" in msg


def test_each_rule_message():
    a = np.zeros((2, 3), np.float32)
    cases = [
        (dict(ndim=3, shape=(2, 3, 1), strides=(3, 1, 1)), "stride",
         "DLTensor rank does not match expected rank: expected 2, but got ndim=3"),
        (dict(dtype=(2, 64, 1)), "stride", "DLTensor data type does not match expected type: expected Float32"),
        (dict(dtype=(2, 32, 2)), "stride", "DLTensor data type does not match expected type"),
        (dict(data=None), "stride", "DLTensor data must be non-null"),
        (dict(byte_offset=2), "stride_relaxed", "DLTensor byte_offset must be a multiple of element size"),
        (dict(byte_offset=2), "stride", "DLTensor data must be aligned to the data type"),
        (dict(data=a.ctypes.data + 1), "stride_relaxed", "DLTensor data must be aligned to the data type"),
        (dict(shape=None), "stride", "DLTensor shape must be non-null"),
        (dict(shape=(2, -3)), "stride", "DLTensor shapes must be positive: expected shape[1] >= 0, but got -3"),
        (dict(strides=None), "stride", "strides=nullptr is not supported for DLPack v1.2 and later"),
        (dict(strides=(3, 2)), "right", "DLTensor strides are not compatible with layout_right: expected strides[1]"),
        (dict(strides=(3, 1)), "left", "DLTensor strides are not compatible with layout_left: expected strides[0]"),
        (dict(strides=(3, 0)), "stride", "layout_stride requires strictly positive strides"),
        (dict(strides=(-3, 1)), "stride", "layout_stride requires strictly positive strides"),
    ]
    for fields, layout, want in cases:
        msg = _err(wb.to_host_mdspan, dl(a, **fields), wb.Float32, 2, layout)
        assert msg.startswith(want), (fields, msg)
    # the compact stride of the last mode overflows int64 before it can be compared
    big = dl(a, shape=(1 << 40, 1 << 40, 2), strides=(1, 1 << 40, 7))
    assert _err(wb.to_host_mdspan, big, wb.Float32, 3, "left").startswith("shape overflow")


def test_checks_run_in_cccl_order():
    """Break every field at once, then repair them one by one: each time the first broken
    field in CCCL's order is the one reported."""
    a = np.zeros((2, 3), np.float32)
    order = [
        ("device", CUDA, "DLTensor device type"),
        ("ndim", 3, "DLTensor rank"),
        ("dtype", (0, 32, 1), "DLTensor data type"),
        ("data", None, "DLTensor data must be non-null"),
        ("byte_offset", 2, "DLTensor byte_offset"),
        ("data_misaligned", None, "DLTensor data must be aligned"),
        ("shape", None, "DLTensor shape must be non-null"),
    ]
    for k in range(len(order)):
        fields = {}
        for name, value, _ in order[k:]:
            if name == "data_misaligned":
                if "data" not in fields:
                    fields["data"] = a.ctypes.data + 2
            elif name == "ndim":
                fields["ndim"] = value
            else:
                fields.setdefault(name, value)
        msg = _err(wb.to_host_mdspan, dl(a, **fields), wb.Float32, 2, "stride_relaxed")
        assert msg.startswith(order[k][2]), (k, msg)
    # then shapes before strides, and NULL strides before stride values
    assert _err(wb.to_host_mdspan, dl(a, shape=(-1, 3), strides=None), wb.Float32, 2).startswith(
        "DLTensor shapes must be positive")


def test_rank_zero_skips_shape_and_strides():
    a = np.array(7.0, np.float64)
    md = wb.to_host_mdspan(dl(a, shape=None, strides=None), wb.Float64, 0)
    assert md.rank() == 0 and md.size() == 1 and md[()] == 7.0
    assert md.required_span_size() == 1
    r = wb.to_host_mdspan(dl(np.arange(4.0), shape=(), strides=None, ndim=0, byte_offset=16), wb.Float64, 0,
                          "stride_relaxed")
    assert r.offset() == 2 and r[()] == 2.0 and r.required_span_size() == 3 and not r.is_strided()


def test_strides_null_by_dlpack_version():
    a = np.arange(24, dtype=np.int16).reshape(2, 3, 4)
    t = dl(a, strides=None)
    for layout in wbm.MDSPAN_LAYOUTS:
        assert _err(wb.to_host_mdspan, t, wb.Int16, 3, layout).startswith(
            "strides=nullptr is not supported for DLPack v1.2 and later")
    for layout in ("right", "stride", "stride_relaxed"):  # before 1.2: NULL means row-major
        md = wb.to_host_mdspan(t, wb.Int16, 3, layout, dlpack_version=(1, 1))
        assert md.strides() == (12, 4, 1) and md[1, 2, 3] == 23
    assert _err(wb.to_host_mdspan, t, wb.Int16, 3, "left", dlpack_version=(1, 1)).startswith(
        "strides must be non-null for layout_left")
    v = np.arange(5, dtype=np.int16)
    assert wb.to_host_mdspan(dl(v, strides=None), wb.Int16, 1, "left", dlpack_version=(0, 8)).strides() == (1,)


def test_layout_right_left_are_strict_like_cccl():
    a = np.zeros((1, 3), np.float32)
    # DLPack lets a size-1 mode carry any stride; CCCL's right/left compare every stride.
    assert _err(wb.to_host_mdspan, dl(a, strides=(99, 1)), wb.Float32, 2, "right").startswith(
        "DLTensor strides are not compatible with layout_right")
    assert wb.to_host_mdspan(dl(a, strides=(99, 1)), wb.Float32, 2, "stride").strides() == (99, 1)
    f = np.asfortranarray(np.zeros((2, 3), np.float32))
    md = wb.to_host_mdspan(dl(f), wb.Float32, 2, "left")
    assert md.strides() == (1, 2) and md.layout == "left"


def test_any_dlpack_object_and_read_only():
    a = np.arange(6, dtype=np.int64).reshape(2, 3)
    md = wb.to_host_mdspan(a, wb.Int64, 2, "right")
    assert md[1, 2] == 5 and md.data_handle() == a.ctypes.data
    md[0, 1] = 41
    assert a[0, 1] == 41
    b = a.copy()
    b.flags.writeable = False
    ro = wb.to_host_mdspan(b, wb.Int64, 2)
    assert ro.is_const and ro[1, 1] == 4
    with pytest.raises(TypeError, match="const int64_t"):
        ro[0, 0] = 1
    with pytest.raises(ValueError):
        ro.numpy()[0, 0] = 1
    torch = pytest.importorskip("torch")
    t = torch.arange(6.0).reshape(2, 3).t()
    tm = wb.to_host_mdspan(t, wb.Float32, 2, "left")
    assert tm.extents() == (3, 2) and tm[2, 1] == 5.0


def test_element_type_errors():
    a = np.zeros(4, np.float32)
    with pytest.raises(TypeError, match="element type"):
        wb.to_host_mdspan(dl(a), "float", 1)
    with pytest.raises(TypeError, match="2 or 4 lanes"):
        wb.to_host_mdspan(dl(a), wb.vector_type(wb.Float32, 3), 1)
    with pytest.raises(ValueError, match="layout 'right'"):
        wb.to_host_mdspan(dl(a), wb.Float32, 1, "padded")
    with pytest.raises(TypeError, match="__dlpack__"):
        wb.to_host_mdspan([1, 2], wb.Float32, 1)


# ------------------------------------------------------------------------------------------------
# The mapping
# ------------------------------------------------------------------------------------------------

def _brute(m):
    return [m(*i) for i in itertools.product(*[range(e) for e in m.extents()])]


def test_mapping_properties_against_enumeration():
    rng = random.Random(3)
    for _ in range(1500):
        r = rng.randint(1, 4)
        ext = tuple(rng.randint(0, 4) for _ in range(r))
        st = tuple(rng.randint(-5, 5) for _ in range(r))
        need = -sum((e - 1) * s for e, s in zip(ext, st) if s < 0 and e > 0)
        m = wbm.MdspanMapping("stride_relaxed", ext, st, need + rng.randint(0, 2))
        offs = _brute(m)
        assert m.is_unique() == (len(set(offs)) == len(offs))
        assert m.is_exhaustive() == (sorted(offs) == list(range(m.required_span_size())))
        if offs:
            assert m.required_span_size() == max(offs) + 1 and min(offs) == m.min_offset() >= 0
        if all(s > 0 for s in st):
            p = wbm.MdspanMapping("stride", ext, st)
            offs = _brute(p)
            assert p.is_unique() == (len(set(offs)) == len(offs))
            if offs:
                assert p.required_span_size() == max(offs) + 1
                assert p.is_exhaustive() == (sorted(offs) == list(range(p.required_span_size())))


def test_non_unique_strides_reported():
    a = np.zeros(16, np.float32)
    md = wb.to_host_mdspan(dl(a, shape=(2, 2), strides=(1, 1)), wb.Float32, 2)
    assert not md.is_unique()  # CCCL's layout_stride says True
    md = wb.to_host_mdspan(dl(a, shape=(3, 3), strides=(2, 2)), wb.Float32, 2)
    assert md.required_span_size() == 9 and not md.is_unique() and not md.is_exhaustive()  # CCCL: exhaustive
    md = wb.to_host_mdspan(dl(a, shape=(3, 2), strides=(2, 3)), wb.Float32, 2)
    assert md.is_unique()  # interleaved but unique: 0 2 4 3 5 7
    assert wb.to_host_mdspan(dl(a, shape=(4,), strides=(0,)), wb.Float32, 1, "stride_relaxed").is_unique() is False


def test_right_left_mapping_observers():
    a = np.zeros((2, 3, 4), np.float32)
    md = wb.to_host_mdspan(dl(a), wb.Float32, 3, "right")
    m = md.mapping()
    assert (m.required_span_size(), m.is_unique(), m.is_exhaustive(), m.is_strided()) == (24, True, True, True)
    assert m(1, 2, 3) == 23 and md.size() == 24
    with pytest.raises(IndexError):
        m(2, 0, 0)


def test_span_beyond_int64_rejected():
    a = np.zeros(4, np.float32)
    msg = _err(wb.to_host_mdspan, dl(a, shape=(1 << 62, 4), strides=(4, 1)), wb.Float32, 2, "right")
    assert "required span size is not representable as index_type" in msg


# ------------------------------------------------------------------------------------------------
# Element access and accessors
# ------------------------------------------------------------------------------------------------

def test_host_read_write_and_bounds():
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    md = wb.to_host_mdspan(dl(a), wb.Float64, 2, "right")
    assert md[2, 3] == 11.0
    md[2, 3] = -1.5
    assert a[2, 3] == -1.5
    for bad in [(3, 0), (0, -1), (0, 4)]:
        with pytest.raises(IndexError, match="Expected index"):
            md[bad]
    with pytest.raises(IndexError, match="Expected 2 indices"):
        md[1]
    np.testing.assert_array_equal(md.numpy(), a)
    assert np.shares_memory(md.numpy(), a)


def test_device_view_refuses_host_access_managed_allows():
    a = np.arange(6, dtype=np.int32)
    d = wb.to_device_mdspan(dl(a, device=CUDA), wb.Int32, 1)
    assert d.accessor == "device" and d.extent(0) == 6 and not d.is_host_accessible
    with pytest.raises(TypeError, match="host code must not touch device memory"):
        d[0]
    with pytest.raises(TypeError, match="device_mdspan"):
        d[0] = 1
    with pytest.raises(TypeError):
        d.numpy()
    sub = d[2:4]
    assert sub.accessor == "device" and sub.data_handle() == a.ctypes.data + 8
    m = wb.to_managed_mdspan(dl(a, device=MANAGED), wb.Int32, 1)
    m[5] = 50
    assert a[5] == 50 and m[1:][4] == 50 and m[1:].accessor == "managed"


def test_vector_and_raw_bit_types():
    v = np.arange(8, dtype=np.float32)
    md = wb.to_host_mdspan(dl(v, shape=(2,), strides=(1,), dtype=(2, 32, 4)), wb.vector_type(wb.Float32, 4), 1)
    assert md[1] == (4.0, 5.0, 6.0, 7.0)
    md[0] = (9, 9, 9, 9)
    assert v[:4].tolist() == [9, 9, 9, 9]
    b = np.array([0x3F80, 0x4000], dtype=np.uint16)  # bf16 1.0, 2.0
    bf = wb.to_host_mdspan(dl(b, dtype=(4, 16, 1)), wb.BFloat16, 1)
    assert bf[1] == 0x4000 and bf.numpy().dtype == np.uint16
    f8 = wb.to_host_mdspan(dl(np.array([0x38], np.uint8), dtype=(10, 8, 1)), wb.Float8E4M3FN, 1)
    assert f8[0] == 0x38
    f4 = wb.to_host_mdspan(dl(np.zeros(2, np.uint8), shape=(4,), strides=(1,), dtype=(17, 4, 1)), wb.Float4E2M1FN, 1)
    assert f4.extents() == (4,)
    with pytest.raises(TypeError, match="sub-byte"):
        f4[0]


def test_submdspan_matches_numpy():
    a = np.arange(60, dtype=np.int32).reshape(3, 4, 5)
    md = wb.to_host_mdspan(dl(a), wb.Int32, 3, "right")
    for key in [(1, slice(None), slice(1, 4)), (slice(None, None, 2), 3, slice(None, None, -1)),
                (slice(2, 0, -1), slice(None), 0), (wb.full_extent, (1, 3), 4)]:
        sub = md[key] if any(type(k) is slice for k in key) else wb.submdspan(md, *key)
        npkey = tuple(slice(k[0], k[1]) if type(k) is tuple else slice(None) if k is wb.full_extent else k
                      for k in key)
        np.testing.assert_array_equal(sub.numpy(), a[npkey])
        assert sub.accessor == "host"
    assert md[1, :, :].layout == "right" and md[:, 1, :].layout == "stride"
    assert md[:, ::-1, :].layout == "stride_relaxed"


# ------------------------------------------------------------------------------------------------
# to_dlpack_tensor and the improvements
# ------------------------------------------------------------------------------------------------

def test_to_dlpack_device_mapping_and_dtypes():
    a = np.zeros(8, np.float32)
    for acc, dev in (("host", (CPU, 0)), ("managed", (MANAGED, 0))):
        t = wb.to_dlpack_tensor(wb.make_mdspan(a.ctypes.data, wb.Float32, (8,), accessor=acc)).get()
        assert (t.device.device_type, t.device.device_id) == dev
    d = wb.to_device_mdspan(dl(a, device=CUDA), wb.Float32, 1)
    d.device = (CUDA, 3)  # without a GPU the imported device id is kept
    assert wb.to_dlpack_tensor(d).get().device.device_id == 3
    cases = [(wb.Float8E4M3FN, (10, 8, 1)), (wb.Float8E5M2, (12, 8, 1)), (wb.Float6E2M3FN, (15, 6, 1)),
             (wb.Float4E2M1FN, (17, 4, 1)), (wb.vector_type(wb.Float16, 2), (2, 16, 2)),
             (wb.vector_type(wb.Int32, 4), (0, 32, 4)), (wb.BFloat16, (4, 16, 1)), (wb.Complex32, (5, 32, 1)),
             (wb.Boolean, (6, 8, 1))]
    for t_, want in cases:
        t = wb.to_dlpack_tensor(wb.make_mdspan(a.ctypes.data, t_, (2,))).get()
        assert (t.dtype.code, t.dtype.bits, t.dtype.lanes) == want, t_


def test_to_dlpack_int64_range():
    # make_mdspan refuses such views (index_type is int64_t: C++'s mapping precondition), so build them directly
    for extents, strides in (((1 << 63, 1), (1, 1)), ((2,), (1 << 63,))):
        with pytest.raises(ValueError, match="required span size is not representable"):
            wb.make_mdspan(4096, wb.Int8, extents, strides)
    with pytest.raises(ValueError, match="Extent is too large"):
        wb.to_dlpack_tensor(wbm.Mdspan("host", wb.Int8, wbm.MdspanMapping("right", (1 << 63, 1), (1, 1)), 4096))
    with pytest.raises(ValueError, match="Stride is too large"):
        wb.to_dlpack_tensor(wbm.Mdspan("host", wb.Int8, wbm.MdspanMapping("stride", (2,), (1 << 63,)), 4096))
    with pytest.raises(TypeError):
        wb.to_dlpack_tensor(np.zeros(3))


def test_round_trip_all_layouts():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    for layout in wbm.MDSPAN_LAYOUTS:
        src = a if layout != "left" else np.asfortranarray(a)
        md = wb.to_host_mdspan(dl(src), wb.Float32, 3, layout)
        back = wb.to_host_mdspan(wb.to_dlpack_tensor(md).get(), wb.Float32, 3, layout)
        assert back.extents() == md.extents() and back.strides() == md.strides()
        np.testing.assert_array_equal(back.numpy(), src)


def test_improvement_empty_round_trip():
    a = np.zeros((0, 3), np.float32)
    md = wb.to_host_mdspan(dl(a, strides=(3, 1)), wb.Float32, 2, "right")
    t = wb.to_dlpack_tensor(md).get()
    assert not t.data  # CCCL writes NULL for an empty view ...
    back = wb.to_host_mdspan(t, wb.Float32, 2, "right")  # ... and then rejects it; we accept
    assert back.extents() == (0, 3) and back.size() == 0 and back.numpy().shape == (0, 3)
    assert _err(wb.to_host_mdspan, dl(a, data=None, shape=(1, 3)), wb.Float32, 2).startswith(
        "DLTensor data must be non-null")


def test_improvement_empty_tensor_strides_are_not_checked():
    # numpy 2 exports np.zeros((0, 3)) with strides (0, 0); CCCL refuses them for right, left and stride
    md = wb.to_host_mdspan(np.zeros((0, 3), np.float32), wb.Float32, 2, layout="right")
    assert md.extents() == (0, 3) and md.strides() == (3, 1) and md.numpy().shape == (0, 3)
    a = np.zeros((3, 0, 4), np.float32)
    assert a.strides == (0, 0, 0)
    canonical = {"right": (0, 4, 1), "left": (1, 3, 0), "stride": (4, 4, 1), "stride_relaxed": (0, 0, 0)}
    for layout, want in canonical.items():
        md = wb.to_host_mdspan(a, wb.Float32, 3, layout)
        assert (md.extents(), md.strides(), md.required_span_size()) == ((3, 0, 4), want, 0), layout
        back = wb.to_host_mdspan(wb.to_dlpack_tensor(md).get(), wb.Float32, 3, layout)  # round trip
        assert back.strides() == want and back.numpy().shape == (3, 0, 4), layout
        assert wb.make_mdspan(0, wb.Float32, (3, 0, 4), (0, 0, 0), layout=layout).strides() == want, layout
    # layout_stride keeps strides that it accepts; the others fit layout_stride's strictly positive rule
    assert wb.to_host_mdspan(dl(a, strides=(5, 7, 1)), wb.Float32, 3, "stride").strides() == (5, 7, 1)
    assert wb.to_host_mdspan(dl(a, strides=(5, -7, 1)), wb.Float32, 3, "stride").strides() == (4, 4, 1)
    assert wb.to_device_mdspan(dl(np.zeros(0, np.int8), device=CUDA), wb.Int8, 1, "right").strides() == (1,)
    # with elements the strides still matter, with CCCL's message
    assert _err(wb.to_host_mdspan, dl(np.zeros((1, 3), np.float32), strides=(0, 0)), wb.Float32, 2, "right") \
        .startswith("DLTensor strides are not compatible with layout_right: expected strides[0] == 3, but got 0")
    assert _err(wb.to_host_mdspan, dl(np.zeros((1, 3), np.float32), strides=(0, 0)), wb.Float32, 2, "stride") \
        .startswith("layout_stride requires strictly positive strides")
    # canonical strides beyond int64 are still refused, as CCCL refuses them ("shape overflow")
    huge = dl(a, shape=(0, 1 << 40, 1 << 40), strides=(0, 0, 0))
    for layout in ("right", "stride"):
        assert _err(wb.to_host_mdspan, huge, wb.Float32, 3, layout).startswith("shape overflow"), layout


def test_improvement_relaxed_negative_strides_keep_offset():
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    flipped = a[::-1, ::-1]
    # numpy exports data at element (0, 0) with negative strides: rebased, same addresses
    md = wb.to_host_mdspan(flipped, wb.Int32, 2, "stride_relaxed")
    assert md.data_handle() == a.ctypes.data and md.offset() == 11 and md.strides() == (-4, -1)
    np.testing.assert_array_equal(md.numpy(), flipped)
    w = wb.to_dlpack_tensor(md)
    t = w.get()
    assert t.byte_offset == 11 * 4  # CCCL writes 0 and so points at element a[0, 0]
    back = wb.to_host_mdspan(t, wb.Int32, 2, "stride_relaxed")
    assert back[0, 0] == 11 and back[2, 3] == 0
    np.testing.assert_array_equal(back.numpy(), flipped)


def test_improvement_relaxed_strides_reaching_below_address_zero_are_refused():
    a = np.zeros(4, np.float32)
    # 1 MiB above address 0, 2**40 elements of stride -4 reach 16 TiB below it: CCCL accepts, the rebase would wrap
    t = dl(a, data=1 << 20, shape=(1 << 40,), strides=(-4,))
    msg = _err(wb.to_host_mdspan, t, wb.Float32, 1, "stride_relaxed")
    assert msg.startswith("layout_stride_relaxed::mapping: the negative strides reach below address 0")
    assert "expected at most 262144 elements below the data pointer 0x100000, but got 4398046511100" in msg
    ok = wb.to_host_mdspan(dl(a, data=1 << 20, shape=(65536,), strides=(-4,)), wb.Float32, 1, "stride_relaxed")
    assert ok.data_handle() == 16 and ok.offset() == 262140     # rebased: the lowest element at address 16


def test_improvement_const_element_types():
    a = np.arange(6, dtype=np.int32)
    md = wb.to_host_mdspan(dl(a), wb.const(wb.Int32), 1)
    assert md.is_const and md[5] == 5 and "const int32_t" in repr(md)
    with pytest.raises(TypeError, match="const"):
        md[0] = 3
    t = wb.to_dlpack_tensor(md).get()  # CCCL: const int does not compile
    assert t.data == a.ctypes.data and (t.dtype.code, t.dtype.bits) == (0, 32)
    assert wb.to_dlpack_tensor(md).read_only
    assert wb.const(wb.const(wb.Int32)) == wb.const(wb.Int32)


# ------------------------------------------------------------------------------------------------
# GPU: the real memory type (run on the device machine)
# ------------------------------------------------------------------------------------------------

def _cupy():
    cupy = pytest.importorskip("cupy")
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("no CUDA GPU")
    except Exception as e:  # noqa: BLE001 - any driver failure means no GPU here
        pytest.skip(f"no CUDA GPU ({e})")
    return cupy


def _dl_ptr(ptr, n, device):
    return dl(None, data=ptr, device=device, dtype=(2, 32, 1), shape=(n,), strides=(1,))


@pytest.mark.gpu
def test_gpu_device_pointer_checked(monkeypatch):
    cupy = _cupy()
    monkeypatch.setattr(wbm, "_CUDA", None)
    x = cupy.arange(8, dtype=cupy.float32)
    md = wb.to_device_mdspan(_dl_ptr(x.data.ptr, 8, CUDA), wb.Float32, 1)
    assert md.data_handle() == x.data.ptr
    assert wb.to_dlpack_tensor(md).get().device.device_id == x.device.id
    h = np.zeros(8, np.float32)
    assert _err(wb.to_device_mdspan, _dl_ptr(h.ctypes.data, 8, CUDA), wb.Float32, 1).startswith(
        "DLTensor data must be device memory for device_mdspan")
    assert _err(wb.to_host_mdspan, _dl_ptr(x.data.ptr, 8, CPU), wb.Float32, 1).startswith(
        "DLTensor data must be host-accessible memory for host_mdspan")
    assert _err(wb.to_managed_mdspan, _dl_ptr(x.data.ptr, 8, MANAGED), wb.Float32, 1).startswith(
        "DLTensor data must be managed memory for managed_mdspan")


@pytest.mark.gpu
def test_gpu_managed_pointer_read_write(monkeypatch):
    cupy = _cupy()
    monkeypatch.setattr(wbm, "_CUDA", None)
    mem = cupy.cuda.malloc_managed(8 * 4)
    x = cupy.ndarray((8,), cupy.float32, mem)
    x[...] = cupy.arange(8, dtype=cupy.float32)
    cupy.cuda.Device().synchronize()
    md = wb.to_managed_mdspan(_dl_ptr(mem.ptr, 8, MANAGED), wb.Float32, 1)
    assert md[7] == 7.0
    md[0] = 42.0
    assert float(x[0]) == 42.0
    assert wb.to_device_mdspan(_dl_ptr(mem.ptr, 8, CUDA), wb.Float32, 1).extent(0) == 8
    assert wb.to_host_mdspan(_dl_ptr(mem.ptr, 8, CPU), wb.Float32, 1)[7] == 7.0


def test_the_mapping_is_a_core_layout_plus_an_offset():
    from workbench.layout import Layout

    a = np.arange(24, dtype=np.float32).reshape(4, 6)[:, ::-2]
    md = wb.to_host_mdspan(a, wb.Float32, 2, "stride_relaxed")
    m = md.mapping()
    assert type(m.cute_layout) is Layout and m.cute_layout == Layout((4, 3), (6, -2))
    for i in range(4):
        for j in range(3):
            assert m(i, j) == m.offset() + m.cute_layout((i, j))
            assert md[i, j] == a[i, j]


def test_cccl_checks_are_named_validators_in_cccls_order():
    import workbench._mdspan as M

    assert [v.__name__ for v in M._CCCL_ORDER] == [
        "validate_device_type", "validate_rank", "validate_data_type", "validate_data_pointer",
        "validate_byte_offset", "validate_alignment", "validate_memory_type", "validate_shape_pointer",
        "validate_shapes", "validate_strides"]
    # a tensor wrong in rank, dtype and strides at once reports the first of CCCL's checks only
    with pytest.raises(ValueError, match="^DLTensor rank does not match expected rank"):
        wb.to_host_mdspan(np.zeros((2, 3), np.int64)[:, ::-1], wb.Float32, 3, "right")
    with pytest.raises(ValueError, match="^DLTensor data type does not match expected type"):
        wb.to_host_mdspan(np.zeros((2, 3), np.int64)[:, ::-1], wb.Float32, 2, "right")
