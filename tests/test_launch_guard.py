"""Framework tensors passed straight into the C launcher (workbench.dsl.runtime._launch): every refusal the
Python dispatcher makes also happens on the fast path, without a GPU.  The launcher is given a
C-callable stand-in for cuLaunchKernel that records what it receives (see test_dsl_native_launcher)."""

import struct

import numpy as np
import pytest
from test_dsl_native_launcher import Recorder

import workbench as wb
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
