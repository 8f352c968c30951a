"""The DLPack bridge: import rules (spec sentences quoted), ownership, export, round trips."""

import ctypes
import gc
import re
import shutil

import numpy as np
import pytest
import torch
from producers import Producer

import workbench as wb
from workbench.dlpack import DLPACK_FLAG_BITMASK_IS_COPIED as IS_COPIED
from workbench.dlpack import DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED as PADDED
from workbench.dlpack import DLPACK_FLAG_BITMASK_READ_ONLY as READ_ONLY
from workbench.dlpack import DLDataTypeCode, DLDeviceType, element_type_of
from workbench.dlpack.dtypes import SCALAR_TABLE, dldtype_of
from workbench.dlpack.importer import consume


# -- ownership: "the consumer calls the deleter exactly once when its own object dies" -----------
def test_deleter_runs_exactly_once_when_last_view_dies():
    p = Producer()
    t = wb.from_dlpack(p)
    view = wb.make_tensor(t, wb.make_layout((2, 2), stride=(4, 1)))
    exported = np.from_dlpack(t)
    del t
    gc.collect()
    assert p.deleter_calls == 0, "a view still lives"
    assert exported[2, 3] == 11.0 and view.numpy()[1, 1] == 5.0
    del view
    gc.collect()
    assert p.deleter_calls == 0, "the numpy array exported from the tensor still lives"
    del exported
    gc.collect()
    assert p.deleter_calls == 1


def test_consuming_renames_the_capsule():
    cap = Producer().capsule()
    t = wb.from_dlpack(cap)
    assert "used_dltensor_versioned" in repr(cap)
    with pytest.raises(BufferError, match="already consumed"):
        wb.from_dlpack(cap)
    del t


def test_unconsumed_capsule_is_released_by_its_destructor():
    p = Producer()
    cap = p.capsule()
    del cap
    gc.collect()
    assert p.deleter_calls == 1


def test_future_major_version_is_a_buffer_error_and_still_deleted_once():
    # dlpack.h: "If an obtained DLPack tensor has a major version that disagrees ... the consumer
    # must call the deleter (and it is safe to do so). It is not safe to access any other fields."
    p = Producer(version=(2, 0))
    with pytest.raises(BufferError, match="major version 1, but got version 2.0"):
        wb.from_dlpack(p)
    gc.collect()
    assert p.deleter_calls == 1


def test_minor_version_above_ours_is_read():
    t = wb.from_dlpack(Producer(version=(1, 7)))
    assert t.dlpack_version == (1, 7) and t.shape == (3, 4)


def test_legacy_producer_fallback_and_capsule_name_branching():
    # A producer that predates max_version raises TypeError on the keyword; we call it again.
    p = Producer(versioned=False, accepts_max_version=False)
    t = wb.from_dlpack(p)
    assert t.dlpack_version is None and t.shape == (3, 4) and p.capsules_made == 1
    # Branch on the capsule name, not on what was asked: a legacy capsule for a versioned request.
    t2 = wb.from_dlpack(Producer(versioned=False))
    assert t2.dlpack_version is None
    del t, t2
    gc.collect()
    assert p.deleter_calls == 1


def test_fast_path_falls_back_for_producers_without_max_version(monkeypatch):
    # numpy < 2.1 is a CPU-only producer whose __dlpack__ knows no max_version: the C fast path
    # must hand it to the Python path, which retries without the keyword.
    from workbench.dlpack import importer

    monkeypatch.setitem(importer.PRODUCERS_FOR_C, Producer, (importer.VIA_HOST_CAPSULE,))
    p = Producer(versioned=False, accepts_max_version=False)
    t = wb.from_dlpack(p)
    assert t.shape == (3, 4) and t.dlpack_version is None and p.capsules_made == 1


@pytest.mark.parametrize("versioned,version,ok", [(False, None, True), (True, (1, 1), True), (True, (1, 2), False), (True, (1, 3), False)])
def test_null_strides_are_row_major_only_before_1_2(versioned, version, ok):
    # dlpack.h 1.2: "strides ... can not be NULL if ndim != 0" (older: NULL means compact row-major)
    p = Producer(versioned=versioned, version=version or (1, 0), strides=None)
    if ok:
        assert wb.from_dlpack(p).stride == (4, 1)
    else:
        with pytest.raises(BufferError, match="forbids NULL"):
            wb.from_dlpack(p)


def test_null_data_only_for_empty_tensors():
    empty = Producer(np.zeros((0, 3), np.float32), data=0)
    t = wb.from_dlpack(empty)
    assert t.shape == (0, 3) and t.data_ptr == 0 and wb.size(t.layout) == 0
    with pytest.raises(BufferError, match="data pointer for a tensor of 12 elements, but got NULL"):
        wb.from_dlpack(Producer(data=0))


def test_unknown_dtype_and_device_are_clear_errors():
    with pytest.raises(BufferError, match=r"\(unknown code 99, 32\)"):
        wb.from_dlpack(Producer(dtype=(99, 32, 1)))
    with pytest.raises(BufferError, match=r"\(kDLFloat, 8\)"):
        wb.from_dlpack(Producer(dtype=(2, 8, 1)))
    with pytest.raises(BufferError, match="kDLMetal"):
        wb.from_dlpack(Producer(device=(8, 0)))
    with pytest.raises(BufferError, match="non-negative DLTensor.shape"):
        wb.from_dlpack(Producer(shape=(3, -4)))


def test_flags_are_surfaced():
    t = wb.from_dlpack(Producer(flags=READ_ONLY | IS_COPIED))
    assert t.read_only and t.is_copied
    fp4 = wb.from_dlpack(Producer(np.zeros(8, np.uint8), dtype=(17, 4, 1), flags=PADDED))
    assert fp4.element_type is wb.Float4E2M1FN and fp4.subbyte_padded
    assert not wb.from_dlpack(Producer(np.zeros(4, np.uint8), dtype=(17, 4, 1))).subbyte_padded


def test_sub_byte_types_need_a_versioned_capsule():
    # A legacy capsule cannot carry IS_SUBBYTE_TYPE_PADDED; jax exports fp4 as (17,4,1) that way
    # while storing one value per byte, so reading it as packed would be silently wrong.
    with pytest.raises(BufferError, match="packed or padded"):
        wb.from_dlpack(Producer(np.zeros(8, np.uint8), versioned=False, dtype=(17, 4, 1)))
    assert wb.from_dlpack(Producer(np.zeros(8, np.uint8), dtype=(17, 4, 1))).element_type is wb.Float4E2M1FN


@pytest.mark.skipif(not __import__("importlib").util.find_spec("jax"), reason="jax is not installed here (it is on the GPU machine)")
def test_jax_round_trip():
    import jax.numpy as jnp

    for dtype in (jnp.float32, jnp.bfloat16, jnp.int8, jnp.complex64, jnp.bool_):
        x = jnp.arange(12).reshape(3, 4).astype(dtype)
        t = wb.from_dlpack(x)
        assert t.shape == (3, 4) and t.stride == (4, 1)
        assert t.element_type.name == {"float32": "Float32", "bfloat16": "BFloat16", "int8": "Int8",
                                       "complex64": "Complex64", "bool": "Boolean"}[str(x.dtype)]
        back = jnp.from_dlpack(t)
        assert back.dtype == x.dtype and bool((back == x).all())


def test_byte_offset_is_applied():
    a = np.arange(12, dtype=np.float32)
    t = wb.from_dlpack(Producer(a, shape=(4,), strides=(1,), byte_offset=8))
    assert t.data_ptr == a.ctypes.data + 8 and list(t.numpy()) == [2.0, 3.0, 4.0, 5.0]


def test_consume_keeps_raw_fields_for_inspection():
    imp = consume(Producer(byte_offset=4, flags=IS_COPIED, shape=(2, 2), strides=(4, 1)))
    f = imp.fields
    assert (f.version, f.flags, f.byte_offset, f.shape, f.strides) == ((1, 3), IS_COPIED, 4, (2, 2), (4, 1))
    assert imp.dltensor.ndim == 2 and imp.dltensor.shape[1] == 2 and imp.dltensor.byte_offset == 4


# -- dtype table ----------------------------------------------------------------------------
def test_every_dlpack_code_maps_both_ways():
    codes = {c for c, _ in SCALAR_TABLE}
    assert codes == set(DLDataTypeCode) - {DLDataTypeCode.kDLOpaqueHandle}
    for (code, bits), t in SCALAR_TABLE.items():
        assert dldtype_of(t) == (code, bits, 1)
        v = element_type_of(code, bits, 4)
        assert v.lanes == 4 and v.scalar is t and dldtype_of(v) == (code, bits, 4)
    assert element_type_of(2, 32, 4).ctype == "float4"
    assert element_type_of(2, 16, 2).ctype == "__half2"
    assert set(DLDeviceType) >= {DLDeviceType.kDLCUDAManaged, DLDeviceType.kDLTrn}


# -- torch and numpy, both directions ------------------------------------------------------
TORCH_DTYPES = [torch.bool, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.uint16,
                torch.uint32, torch.uint64, torch.float16, torch.bfloat16, torch.float32, torch.float64,
                torch.complex64, torch.complex128, torch.float8_e4m3fn, torch.float8_e5m2,
                torch.float8_e4m3fnuz, torch.float8_e5m2fnuz, torch.float8_e8m0fnu]
TORCH_NAMES = {torch.bool: "Boolean", torch.bfloat16: "BFloat16", torch.float8_e4m3fn: "Float8E4M3FN",
               torch.float8_e5m2: "Float8E5M2", torch.float8_e4m3fnuz: "Float8E4M3FNUZ",
               torch.float8_e5m2fnuz: "Float8E5M2FNUZ", torch.float8_e8m0fnu: "Float8E8M0FNU",
               torch.complex64: "Complex64", torch.complex128: "Complex128", torch.float16: "Float16",
               torch.float32: "Float32", torch.float64: "Float64"}


@pytest.mark.parametrize("dtype", TORCH_DTYPES, ids=str)
def test_torch_round_trip_every_dtype(dtype):
    x = torch.arange(24).reshape(2, 3, 4).to(torch.float32).to(dtype)
    t = wb.from_dlpack(x)
    name = TORCH_NAMES.get(dtype) or str(dtype).split(".")[1].capitalize()
    assert t.element_type.name == name
    assert t.shape == (2, 3, 4) and t.stride == (12, 4, 1) and t.data_ptr == x.data_ptr()
    y = torch.from_dlpack(t)
    assert y.dtype == dtype and y.data_ptr() == x.data_ptr() and y.stride() == x.stride()
    assert torch.equal(y.view(torch.uint8), x.view(torch.uint8))


NUMPY_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                "float16", "float32", "float64", "complex64", "complex128"]


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
def test_numpy_round_trip_every_dtype(dtype):
    a = (np.arange(24) % 7).reshape(4, 6).astype(dtype)[:, ::2]
    t = wb.from_dlpack(a)
    assert t.element_type.numpy == dtype and t.shape == (4, 3) and t.stride == (6, 2)
    b = np.from_dlpack(t)
    assert b.ctypes.data == a.ctypes.data and np.array_equal(a, b)
    c = torch.from_dlpack(t)
    assert c.data_ptr() == a.ctypes.data and c.stride() == (6, 2)


def test_writes_are_shared_memory():
    x = torch.zeros(3, 4)
    t = wb.from_dlpack(x)
    np.from_dlpack(t)[1, 2] = 7.0
    assert x[1, 2] == 7.0
    torch.from_dlpack(t)[0, 0] = 5.0
    assert x[0, 0] == 5.0


@pytest.mark.parametrize("make", [
    lambda: torch.zeros(()),                                   # 0-d
    lambda: torch.zeros(0, 5),                                 # size 0
    lambda: torch.zeros(4, 6)[1:3, ::2],                       # sliced
    lambda: torch.zeros(2, 3, 4).permute(2, 0, 1),             # permuted
    lambda: torch.zeros(3, 1, 5),                              # size-1 dim
    lambda: torch.zeros(3, 1).expand(3, 4),                    # broadcast (stride 0)
    lambda: np.zeros((4, 6))[::-1, ::2],                       # negative stride
    lambda: np.zeros(()),
    lambda: np.broadcast_to(np.arange(3.0), (4, 3)),           # read-only broadcast
], ids=["0d", "size0", "sliced", "permuted", "size1", "broadcast", "negative", "np0d", "np-broadcast"])
def test_strided_forms_survive_the_round_trip(make):
    x = make()
    t = wb.from_dlpack(x)
    itemsize = x.element_size() if isinstance(x, torch.Tensor) else x.itemsize
    want = tuple(x.stride()) if isinstance(x, torch.Tensor) else tuple(s // itemsize for s in x.strides)
    assert t.stride == want and t.shape == tuple(x.shape)
    if t.read_only or min(t.stride, default=0) < 0:  # the export rule: only our own consumers get these
        with pytest.raises(BufferError, match="cannot tell its consumer"):
            np.from_dlpack(t)
        back = t.numpy()
    else:
        back = np.from_dlpack(t)
    assert back.shape == tuple(x.shape)
    if back.size:
        src = x.numpy() if isinstance(x, torch.Tensor) else x
        assert back.ctypes.data == src.ctypes.data and back.strides == src.strides


def test_read_only_numpy_is_read_only_and_exports_so():
    a = np.arange(6.0)
    a.flags.writeable = False
    t = wb.from_dlpack(a)
    assert t.read_only
    b = t.numpy()
    assert not b.flags.writeable
    with pytest.raises(ValueError):
        b.flags.writeable = True  # the base is a READ_ONLY capsule, not a writable buffer
    from workbench._tensor import _TrustedExport

    with pytest.raises(BufferError, match="read-only and a legacy capsule cannot say so"):
        _TrustedExport(t).__dlpack__()  # a legacy request (numpy < 2.1 asks so), even from a consumer we trust
    assert "wb_dltensor_versioned" in repr(t.__wb_dlpack__())  # our own consumers' capsule: always versioned
    with pytest.raises(BufferError, match="torch 2.13 ignores READ_ONLY"):
        torch.from_dlpack(t)  # torch would hand out a writable tensor over read-only memory
    with pytest.raises(BufferError, match="torch 2.13 ignores READ_ONLY"):
        torch.from_dlpack(t.__dlpack__(max_version=(1, 3)))  # the capsule route hides the consumer
    assert wb.from_dlpack(t).read_only  # our own importer honours READ_ONLY


def test_torch_neg_conj_and_grad_are_refused_with_the_fix():
    z = torch.randn(3, dtype=torch.complex64)
    with pytest.raises(BufferError, match="resolve_conj"):
        wb.from_dlpack(z.conj())
    with pytest.raises(BufferError, match="resolve_neg"):
        wb.from_dlpack(z.conj().imag)  # a real tensor with the neg bit
    with pytest.raises(BufferError, match="detach"):
        wb.from_dlpack(torch.randn(3, requires_grad=True))
    assert wb.from_dlpack(z.conj().resolve_conj()).element_type is wb.Complex64


def test_negative_strides_never_reach_torch():
    # torch 2.13's from_dlpack aborts the process on a negative-stride capsule.
    t = wb.from_dlpack(np.arange(6.0)[::-1])
    with pytest.raises(BufferError, match="aborts the"):
        torch.from_dlpack(t)
    with pytest.raises(BufferError, match="aborts the"):
        torch.asarray(t)  # torch's C++ path: the caller's module would say nothing
    assert list(t.numpy()) == [5.0, 4.0, 3.0, 2.0, 1.0, 0.0]
    assert wb.from_dlpack(t).stride == (-1,)


def test_export_refuses_copy_and_foreign_device():
    t = wb.from_dlpack(np.zeros(3))
    with pytest.raises(BufferError, match="zero-copy"):
        t.__dlpack__(max_version=(1, 3), copy=True)
    with pytest.raises(BufferError, match="dl_device"):
        t.__dlpack__(max_version=(1, 3), dl_device=(2, 0))
    assert t.__dlpack_device__() == (1, 0)


def test_not_a_dlpack_object():
    with pytest.raises(TypeError, match="implementing __dlpack__.*got list"):
        wb.from_dlpack([1, 2, 3])


@pytest.mark.gpu
def test_cuda_tensors_are_gmem_and_round_trip():
    cupy = pytest.importorskip("cupy")
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("no CUDA device")
    except Exception:
        pytest.skip("no CUDA device")
    x = torch.arange(12.0, device="cuda").reshape(3, 4)
    t = wb.from_dlpack(x)
    assert t.memspace == "gmem" and t.device == (2, 0) and t.data_ptr == x.data_ptr()
    assert str(t).endswith("@gmem o (3,4):(4,1)>")
    y = torch.from_dlpack(t)
    assert y.device.type == "cuda" and y.data_ptr() == x.data_ptr()
    c = cupy.arange(6, dtype=cupy.float32)
    tc = wb.from_dlpack(c)
    assert tc.memspace == "gmem" and tc.data_ptr == c.data.ptr
    assert cupy.from_dlpack(tc).data.ptr == c.data.ptr


def test_an_explicit_stream_goes_through_dlpack_not_the_exchange_api():
    # The exchange API never synchronizes; asking for a stream must reach the producer's __dlpack__.
    x = torch.arange(6.0)
    assert consume(x).owner is x                          # exchange API: the tensor keeps itself alive
    imp = consume(x, stream=1)
    assert "DLPack owner" in repr(imp.owner) and imp.fields.shape == (6,)
    with pytest.raises(BufferError, match="resolve_neg"):
        consume(torch.randn(3, dtype=torch.complex64).conj().imag, stream=1)
    assert wb.from_dlpack(x, stream=1).shape == (6,)


# -- wb.from_dlpack in C: native tensors --------------------------------------------------------------
def _general(x, assumed_align=None):
    from workbench._tensor import _from_dlpack_general

    return _from_dlpack_general(x, assumed_align, None)


@pytest.mark.parametrize("make", [
    lambda: torch.arange(24.0).reshape(2, 3, 4),
    lambda: torch.arange(24.0).reshape(4, 6)[:, 1::2],
    lambda: np.arange(12, dtype=np.int16).reshape(3, 4).T,
    lambda: np.zeros((1, 2, 1, 2, 1, 2, 1, 2), np.float64),       # more modes than the inline storage
    lambda: np.full((), 3.5, np.float32),                           # 0-d
    lambda: torch.zeros(0, 5, dtype=torch.complex64),
])
def test_the_c_path_builds_what_the_general_path_builds(make):
    # from_dlpack is a C function that keeps the DLTensor in C fields and builds _f, _data, _stride
    # and _align on first use; they must equal what the Python path builds from the same producer.
    x = make()
    fast, slow = wb.from_dlpack(x), _general(x)
    assert type(fast) is wb.Tensor and fast._f[1:] == slow._f[1:]
    assert (fast._data, fast._stride, fast._align, fast._etype) == (slow._data, slow._stride, slow._align, slow._etype)
    assert str(fast) == str(slow) and fast.layout == slow.layout
    assert str(wb.from_dlpack(x).mark_layout_dynamic() if fast.ndim and min(fast.shape) else fast) is not None
    assert np.array_equal(np.asarray(fast.numpy()), np.asarray(x.numpy() if hasattr(x, "numpy") else x))


def test_from_dlpack_arguments_are_checked_as_before():
    x = torch.zeros(4)
    assert wb.from_dlpack(tensor=x).assumed_align == 4
    assert wb.from_dlpack(x, 16).assumed_align == 16 == wb.from_dlpack(x, assumed_align=16).assumed_align
    with pytest.raises(TypeError, match="assumed_align to be an int"):
        wb.from_dlpack(x, 4.0)
    with pytest.raises(ValueError, match="power of two"):
        wb.from_dlpack(x, assumed_align=12)
    with pytest.raises(TypeError):
        wb.from_dlpack(x, 4, 5)
    with pytest.raises(TypeError):
        wb.from_dlpack(x, bogus=1)
    with pytest.raises(TypeError):
        wb.from_dlpack()
    with pytest.raises(ValueError, match="aligned to assumed_align=64"):
        wb.from_dlpack(torch.zeros(32)[1:], assumed_align=64)


def test_a_type_first_met_by_an_inspector_is_then_served_in_c():
    # the C tables are filled by the importer, whichever path meets a producer type first (before, a
    # type first seen through consume() or exchange_api_of() stayed on the slow path for good)
    from workbench.dlpack import importer

    class Sub(torch.Tensor):
        pass

    x = torch.arange(6.0).as_subclass(Sub)
    assert Sub not in importer.PRODUCERS_FOR_C
    consume(x)
    assert importer.PRODUCERS_FOR_C[Sub][0] == importer.VIA_EXCHANGE
    calls = []
    orig = importer.dlpack_fields
    try:
        importer.dlpack_fields = lambda *a: calls.append(a) or orig(*a)
        t = wb.from_dlpack(x)
    finally:
        importer.dlpack_fields = orig
    assert calls == [] and t.shape == (6,)


def test_capsule_tensors_release_their_producer_once_whichever_fields_were_built(monkeypatch):
    # a native tensor holds the consumed capsule's tensor itself; building _f hands it to an Owner
    from workbench.dlpack import importer

    monkeypatch.setitem(importer.PRODUCERS_FOR_C, Producer, (importer.VIA_HOST_CAPSULE,))
    for build in (lambda t: None, lambda t: t._f, lambda t: (t._stride, t._data), lambda t: t.layout):
        p = Producer()
        t = wb.from_dlpack(p)
        assert p.capsules_made == 1 and p.deleter_calls == 0
        build(t)
        del t
        gc.collect()
        assert p.deleter_calls == 1


# -- the torch reader (workbench/dlpack/torch_native.py): torch tensors read in C++, the same as through torch's
# exchange API ------------------------------------------------------------------------------------------------
def _both_paths(reader, fn):
    """fn() with the reader, then through torch's exchange API: (result or exception, result or exception)."""
    out = []
    for use in (reader.enable, reader.disable):
        use()
        try:
            out.append(fn())
        except Exception as e:  # compared below: both paths must raise the same
            out.append(e)
    reader.enable()
    return out


def _same(a, b):
    if isinstance(a, Exception) or isinstance(b, Exception):
        return type(a) is type(b) and str(a) == str(b)
    return a == b


def _view(t):
    return (t._f, t.shape, t.stride, t.element_type, t.assumed_align, t.memspace, t.iterator.address, t.read_only)


class _TorchSub(torch.Tensor):
    pass


READER_CASES = {
    "0-d": lambda d: torch.zeros((), dtype=d),
    "contiguous": lambda d: torch.zeros(2, 3, 4, dtype=d),
    "transposed": lambda d: torch.zeros(4, 6, dtype=d).t(),
    "sliced with a storage offset": lambda d: torch.zeros(5, 6, dtype=d)[1:4, 1::2],
    "expanded (stride 0)": lambda d: torch.zeros(3, 1, dtype=d).expand(3, 4),
    "empty": lambda d: torch.zeros(0, 5, dtype=d),
    "size-1 modes": lambda d: torch.zeros(3, 1, 5, dtype=d),
    "a torch.Tensor subclass": lambda d: torch.zeros(4, 6, dtype=d).as_subclass(_TorchSub),
    "a Parameter": lambda d: torch.nn.Parameter(torch.zeros(4, 6, dtype=d), requires_grad=False),
}


@pytest.mark.parametrize("dtype", TORCH_DTYPES, ids=str)
def test_the_torch_reader_reads_what_the_exchange_api_reads(torch_reader, dtype):
    for what, make in READER_CASES.items():
        x = make(dtype)
        fast, slow = _both_paths(torch_reader, lambda x=x: _view(wb.from_dlpack(x)))
        assert _same(fast, slow) and not isinstance(fast, Exception), (what, fast, slow)
        aligned = _both_paths(torch_reader, lambda x=x: _view(wb.from_dlpack(x, assumed_align=1)))
        assert _same(*aligned), what


@pytest.mark.filterwarnings("ignore:ComplexHalf:UserWarning", "ignore:torch.quantize_per_tensor:UserWarning")
def test_the_torch_reader_reads_each_tensor_itself(torch_reader):
    from workbench.dlpack.abi import DLTensor

    lib = ctypes.CDLL(str(torch_reader.library_path()))
    lib.wb_torch_read.argtypes = [ctypes.py_object, ctypes.POINTER(DLTensor), ctypes.POINTER(ctypes.c_int)]
    x = torch.arange(30.0).reshape(5, 6)[1:, 2::3]
    t, hazard = DLTensor(), ctypes.c_int(7)
    assert lib.wb_torch_read(x, ctypes.byref(t), ctypes.byref(hazard)) == 0 and hazard.value == 0
    assert (t.data, t.device.device_type, t.ndim, t.byte_offset) == (x.data_ptr(), 1, 2, 0)
    assert (t.dtype.code, t.dtype.bits, t.dtype.lanes) == (2, 32, 1)
    assert tuple(t.shape[:2]) == (4, 2) and tuple(t.strides[:2]) == (6, 3)
    for bad in (torch.zeros(3, requires_grad=True), torch.zeros(3, dtype=torch.complex64).conj(),
                torch.zeros(3, dtype=torch.complex64).conj().imag):
        assert lib.wb_torch_read(bad, ctypes.byref(t), ctypes.byref(hazard)) == 0 and hazard.value == 1
    # what it does not read it leaves to the exchange API (1): other dtypes, layouts, devices
    for other in (torch.zeros(3, dtype=torch.complex32), torch.zeros(3, dtype=torch.int4),
                  torch.quantize_per_tensor(torch.zeros(3), 0.1, 0, torch.qint8), torch.zeros(3, 3).to_sparse(),
                  torch.zeros(3, device="meta")):
        assert lib.wb_torch_read(other, ctypes.byref(t), ctypes.byref(hazard)) == 1, other.dtype


def _raised(fn):
    try:
        fn()
    except Exception as e:
        return e
    raise AssertionError("expected a refusal")


def test_the_torch_reader_refuses_the_hazards_as_the_exchange_path_does(torch_reader):
    z = torch.randn(3, dtype=torch.complex64)
    neg = torch.randn(3)
    torch._C._set_neg(neg, True)
    for what, bad in {"requires_grad": torch.randn(3, requires_grad=True), "neg-bit view": z.conj().imag,
                      "conj bit": z.conj(), "_set_neg": neg, "subclass with grad": torch.randn(3, requires_grad=True)
                      .as_subclass(_TorchSub)}.items():
        fast, slow = _both_paths(torch_reader, lambda bad=bad: _raised(lambda: wb.from_dlpack(bad)))
        assert isinstance(fast, BufferError) and _same(fast, slow), (what, fast, slow)


@pytest.mark.filterwarnings("ignore:ComplexHalf:UserWarning", "ignore:torch.quantize_per_tensor:UserWarning")
def test_what_the_torch_reader_leaves_behaves_as_before(torch_reader):
    for what, x in {"complex32": torch.zeros(4, dtype=torch.complex32),
                    "quantized": torch.quantize_per_tensor(torch.zeros(3), 0.1, 0, torch.qint8),
                    "sparse": torch.zeros(3, 3).to_sparse()}.items():
        fast, slow = _both_paths(torch_reader, lambda x=x: _view(wb.from_dlpack(x)))
        assert _same(fast, slow), (what, fast, slow)


def test_a_reader_built_for_another_torch_is_not_loaded(torch_reader, monkeypatch, tmp_path):
    # the reader reads torch's private object layout: a library is used only if it names the running torch
    real, built = torch_reader._running_tag(), torch_reader.library_path()
    other = real.replace(torch.__version__, torch.__version__ + ".other", 1)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(torch_reader, "_running_tag", lambda: other)
    monkeypatch.setattr(torch_reader, "_state", {"tried": False, "lib": None, "why": ""})
    torch_reader.disable()
    with pytest.raises(RuntimeError, match="not built for torch"):
        torch_reader.enable()
    # the real library at the path of the (pretended) running torch: it records the torch it was built for
    path = torch_reader.library_path()
    assert str(path).startswith(str(tmp_path)) and ".other-" in str(path)
    path.parent.mkdir(parents=True)
    shutil.copy(built, path)
    with pytest.raises(RuntimeError, match=f"was built for '{re.escape(real)}', but the running torch is"):
        torch_reader.enable()
    assert not torch_reader.enabled() and "was built for" in torch_reader.status()
    assert not torch_reader.activate()  # the first-use load refuses it too
    x = torch.arange(3.0)
    assert wb.from_dlpack(x).iterator.address == x.data_ptr()   # the exchange path serves torch meanwhile


@pytest.mark.gpu
def test_the_torch_reader_reads_cuda_tensors_as_the_exchange_api(torch_reader):
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA torch and a GPU")
    for dev in range(torch.cuda.device_count()):
        for x in (torch.arange(24.0, device=f"cuda:{dev}").reshape(4, 6)[1:, ::2],
                  torch.zeros((), dtype=torch.bfloat16, device=f"cuda:{dev}"),
                  torch.zeros(3, dtype=torch.complex64, device=f"cuda:{dev}").conj()):
            fast, slow = _both_paths(torch_reader, lambda x=x: _view(wb.from_dlpack(x)))
            assert _same(fast, slow), (x.device, fast, slow)
        assert wb.from_dlpack(x.resolve_conj())._f[4:6] == (2, dev)
