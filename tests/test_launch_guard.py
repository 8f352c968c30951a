"""Framework tensors passed straight into the C launcher (workbench.dsl.runtime._launch): every refusal the
Python dispatcher makes also happens on the fast path, without a GPU.  The launcher is given a
C-callable stand-in for cuLaunchKernel that records what it receives (see test_dsl_native_launcher)."""

import struct

import numpy as np
import pytest
from test_dsl_native_launcher import Recorder

import workbench as wb
from workbench.dsl.runtime import _launch
from workbench.dsl.runtime.args import normalize
from workbench.kernels import examples as E

torch = pytest.importorskip("torch")


def _launcher(kernel, args):
    sp = kernel.specialize(tuple(args))
    rec = Recorder(sp.size)
    return sp, rec, rec.launcher(sp.arg_specs)


def test_torch_and_numpy_tensors_pack_the_values_of_their_implicit_conversion():
    for make in (lambda s: torch.zeros(s, dtype=torch.float32), lambda s: np.zeros(s, np.float32)):
        a = [make((4, 6)) for _ in range(3)]
        sp, rec, go = _launcher(E.vadd, a)
        for shape in ((4, 6), (9, 6), (1, 3)):
            xs = [make(shape) for _ in range(3)]
            assert go(*xs) == 0
            conv = tuple(normalize(x) for x in xs)   # the implicit conversion (16-byte alignment specialized)
            assert struct.unpack_from(sp.fmt, rec.calls[-1][1]) == sp.values(conv)
        assert sp.values(tuple(a)) == sp.values(tuple(normalize(x) for x in a))


def test_each_refusal_happens_on_the_fast_path():
    a = [torch.zeros((4, 6), dtype=torch.float32) for _ in range(3)]
    sp, rec, go = _launcher(E.vadd, a)
    ok = a[0]
    ro = np.zeros((4, 6), np.float32)
    ro.flags.writeable = False
    refused = {
        "dtype": torch.zeros((4, 6), dtype=torch.float64),
        "rank": torch.zeros((24,), dtype=torch.float32),
        "static stride order (column-major: another leading dimension)": torch.zeros((6, 4), dtype=torch.float32).t(),
        "alignment (natural for the implicit conversion)": np.frombuffer(bytearray(97), np.float32, 24, 1).reshape(4, 6),
        "requires_grad": torch.zeros((4, 6), dtype=torch.float32, requires_grad=True),
        "conjugate bit": torch.zeros((4, 6), dtype=torch.complex64).conj(),
        "negative bit": torch.zeros((4, 6), dtype=torch.complex64).conj().imag,
        "undeducible leading dimension": torch.zeros((1, 1), dtype=torch.float32).expand(4, 6)[:1, :1],
        "read-only, written by the kernel": ro,
        "a non-tensor": [0.0] * 24,
    }
    for what, bad in refused.items():
        assert go(ok, ok, bad) is None, what
    assert go(ok, ok, ok) == 0 and len(rec.calls) == 1
    # the dispatcher raises or selects another specialization for the same arguments
    with pytest.raises((ValueError, TypeError, BufferError)):
        E.vadd.specialize((ok, ok, torch.zeros((4, 6), dtype=torch.float32, requires_grad=True)))


def test_divisibility_and_static_extents_are_checked_against_the_spec():
    x = np.zeros((8, 6), np.float32)
    t = [wb.from_dlpack(x).mark_compact_shape_dynamic(0, divisibility=4) for _ in range(3)]
    sp, rec, go = _launcher(E.vadd, t)
    assert go(*t) == 0
    y = [wb.from_dlpack(np.zeros((6, 6), np.float32)).mark_compact_shape_dynamic(0, divisibility=2) for _ in range(3)]
    assert go(*y) is None                                            # divisibility 2 is not 4
    s = [wb.from_dlpack(np.zeros((8, 5), np.float32)).mark_compact_shape_dynamic(0, divisibility=4) for _ in range(3)]
    assert go(*s) is None                                            # static extent 5 is not 6
    assert go(*[np.zeros((8, 6), np.float32)] * 3) is None           # implicit marks are another signature
    assert len(rec.calls) == 1


def test_a_torch_tensor_is_not_copied_or_converted_on_the_fast_path():
    a = [torch.arange(24, dtype=torch.float32).view(4, 6) for _ in range(3)]
    sp, rec, go = _launcher(E.vadd, a)
    assert go(*a) == 0
    raw = struct.unpack_from(sp.fmt, rec.calls[0][1])
    assert [v for v, p in zip(raw, sp.params) if p.kind == "ptr"] == [x.data_ptr() for x in a]


@pytest.mark.gpu
def test_gpu_framework_tensors_go_straight_in_and_refusals_reach_the_dispatcher():
    from workbench.dsl.runtime import cupy as backend_cupy

    if not backend_cupy.gpu_available() or not torch.cuda.is_available():
        pytest.skip("needs cupy, a CUDA GPU and CUDA torch")
    import cupy

    a, b = torch.arange(256, dtype=torch.float32, device="cuda"), torch.ones(256, dtype=torch.float32, device="cuda")
    c = torch.zeros(256, dtype=torch.float32, device="cuda")
    go = E.vadd[(1, 1, 1), (256, 1, 1)]
    go(a, b, c)                                    # cold: learns torch's exchange API, compiles
    slow = E.vadd.stats.slow_dispatches
    for _ in range(3):
        go(a, b, c)                                # hot: the C launcher reads the torch tensors
    torch.cuda.synchronize()
    assert torch.equal(c, a + b) and E.vadd.stats.slow_dispatches == slow
    ca, cb, cc = (cupy.asarray(x) for x in (a, b, c))
    go(ca, cb, cc)                                 # cupy through its capsule (stream -1, as from_dlpack)
    go(ca, cb, cc)
    cupy.cuda.runtime.deviceSynchronize()
    assert E.vadd.stats.slow_dispatches <= slow + 1
    with pytest.raises((ValueError, TypeError, BufferError)):
        go(a, b, torch.zeros(256, device="cuda", requires_grad=True))   # refused in C, raised by the dispatcher


# -- the torch reader (workbench/dlpack/torch_native.py): a torch tensor passed straight in packs the same bytes,
# and is refused on the same hazards, whether read by the reader or through torch's exchange API ---------------
@wb.kernel
def _touch(a):
    i = wb.thread_idx().x  # noqa: F841 (the kernel only has to take the tensor)


class _TorchSub(torch.Tensor):
    pass


READER_DTYPES = [torch.bool, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.uint16, torch.uint32,
                 torch.uint64, torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.float8_e4m3fn,
                 torch.float8_e5m2]   # every dtype a kernel takes that torch has (complex ones: from_dlpack's tests)
READER_LAYOUTS = {
    "0-d": lambda d: torch.zeros((), dtype=d),
    "1-d": lambda d: torch.zeros(1024, dtype=d),
    "contiguous": lambda d: torch.zeros(2, 3, 4, dtype=d),
    "transposed": lambda d: torch.zeros(4, 6, dtype=d).t(),
    "sliced with a storage offset": lambda d: torch.zeros(5, 8, dtype=d)[1:4, 1::2],
    "expanded (stride 0)": lambda d: torch.zeros(3, 1, dtype=d).expand(3, 4),
    "empty": lambda d: torch.zeros(0, 5, dtype=d),
    "a torch.Tensor subclass": lambda d: torch.zeros(4, 6, dtype=d).as_subclass(_TorchSub),
}


def _packs(reader, specs, args):
    out = []
    for use in (reader.enable, reader.disable):
        use()
        out.append(_launch.pack(specs, args))
    reader.enable()
    return out


@pytest.mark.parametrize("dtype", READER_DTYPES, ids=str)
def test_the_torch_reader_packs_what_the_exchange_api_packs(torch_reader, dtype):
    for what, make in READER_LAYOUTS.items():
        x = make(dtype)
        sp = _touch.specialize((x,))
        fast, slow = _packs(torch_reader, sp.arg_specs, (x,))
        assert fast == slow, what
        # an empty tensor has no data pointer: refused in C, the dispatcher takes it (both ways)
        assert (fast is None) == (what == "empty"), what
        if fast is not None:
            assert struct.unpack_from(sp.fmt, fast) == sp.values((normalize(x),)), what
        # another alignment class, dtype or rank is refused the same way
        y = make(dtype)[..., 1:] if x.ndim and x.shape[-1] > 1 else torch.zeros(2, dtype=dtype)
        assert _packs(torch_reader, sp.arg_specs, (y,))[0] == _packs(torch_reader, sp.arg_specs, (y,))[1], what


def test_the_torch_reader_refuses_the_hazards_on_the_fast_path(torch_reader):
    a = [torch.zeros((4, 6), dtype=torch.float32) for _ in range(3)]
    sp = E.vadd.specialize(tuple(a))
    neg = torch.zeros(4, 6)
    torch._C._set_neg(neg, True)
    for what, bad in {"requires_grad": torch.zeros((4, 6), requires_grad=True), "_set_neg": neg,
                      "neg-bit view": torch.zeros((4, 6), dtype=torch.complex64).conj().imag,
                      "subclass with grad": torch.zeros((4, 6), requires_grad=True).as_subclass(_TorchSub)}.items():
        assert _packs(torch_reader, sp.arg_specs, (a[0], a[1], bad)) == [None, None], what
    assert _packs(torch_reader, sp.arg_specs, tuple(a))[0] is not None
    # the dispatcher raises the precise error for it, with or without the reader
    for use in (torch_reader.enable, torch_reader.disable):
        use()
        with pytest.raises(BufferError, match="resolve_neg"):
            E.vadd.specialize((a[0], a[1], neg))


def test_the_launcher_reads_torch_tensors_through_the_reader_when_in_use(torch_reader):
    # the hot path itself (a Launcher), both ways: the same parameter bytes reach the launch
    a = [torch.arange(1024, dtype=torch.float32) + i for i in range(3)]
    sp, rec, go = _launcher(E.vadd, a)
    torch_reader.enable()
    assert go(*a) == 0
    torch_reader.disable()
    assert go(*a) == 0
    torch_reader.enable()
    assert rec.calls[0] == rec.calls[1]
    assert go(a[0], a[1], torch.zeros(1024, requires_grad=True)) is None and len(rec.calls) == 2
