"""The C launch hot path (workbench.dlpack._launch.Launcher), without a GPU: the launcher is given
a C-callable stand-in for cuLaunchKernel (a ctypes callback with the driver's signature) that
records what it receives, so the guard and the parameter packing are checked byte for byte.
On a GPU the same launcher calls the real driver (tests/test_dsl_gpu.py)."""

import ctypes
import struct

import numpy as np
import pytest

import workbench as wb
from workbench.dsl.runtime import _launch
from workbench.kernels import examples as E

LAUNCH = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint,
                          ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)


class Recorder:
    def __init__(self, nbytes):
        self.calls = []
        self.buf = ctypes.create_string_buffer(nbytes)
        n = max(1, nbytes // 8)
        self.params = (ctypes.c_void_p * n)(*[ctypes.addressof(self.buf) + 8 * i for i in range(n)])
        self.fn = LAUNCH(self._launch)

    def _launch(self, func, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        self.calls.append(((func, gx, gy, gz, bx, by, bz, smem), bytes(self.buf.raw)))
        return 0

    def launcher(self, specs, dims=(4, 1, 1, 256, 1, 1)):
        return _launch.Launcher(ctypes.cast(self.fn, ctypes.c_void_p).value, 0x1234, dims, 0,
                                ctypes.addressof(self.params), ctypes.addressof(self.buf), ctypes.sizeof(self.buf),
                                specs, self)


def test_pointer_bypass_guard_and_packing():
    sp = E.add_ptr.specialize((wb.make_ptr(wb.Float32, 256, "gmem", assumed_align=16),) * 3 + (32, 32))
    specs = sp.arg_specs
    rec = Recorder(sp.size)
    go = rec.launcher(specs)
    ptrs = [wb.make_ptr(wb.Float32, a, "gmem", assumed_align=16) for a in (0x1000, 0x2000, 0x3000)]
    assert go(*ptrs, 32, 7) == 0
    (dims, raw), = rec.calls
    assert dims == (0x1234, 4, 1, 1, 256, 1, 1, 0)
    assert struct.unpack_from(sp.fmt, raw) == (0x1000, 0x2000, 0x3000, 32, 7)
    # every mismatch is refused (None) before anything is launched
    bad = [
        (*ptrs[:2], wb.make_ptr(wb.Float16, 0x3000, "gmem", assumed_align=16), 32, 7),   # element type
        (*ptrs[:2], wb.make_ptr(wb.Float32, 0x3000, "generic", assumed_align=16), 32, 7),  # memory space
        (*ptrs[:2], wb.make_ptr(wb.Float32, 0x3000, "gmem", assumed_align=4), 32, 7),     # alignment
        (*ptrs, 32),                                                                     # count
        (*ptrs, 32, 2**40),                                                              # Int32 range
        (*ptrs, 32, 7.0),                                                                # type
        (*ptrs[:2], 0x3000, 32, 7),                                                      # int for pointer
    ]
    for args in bad:
        assert go(*args) is None
    assert len(rec.calls) == 1


def test_tensor_arguments_pack_their_dynamic_modes():
    x = np.zeros((4, 6), np.float32)
    t = [wb.from_dlpack(x).mark_layout_dynamic() for _ in range(3)]
    sp = E.vadd.specialize(tuple(t))
    rec = Recorder(sp.size)
    go = rec.launcher(sp.arg_specs)
    assert go(*t) == 0
    values = struct.unpack_from(sp.fmt, rec.calls[0][1])
    assert values == tuple(sp.values(tuple(t)))  # the same values the Python guard computes
    y = np.zeros((5, 6), np.float32)
    t2 = [wb.from_dlpack(y).mark_layout_dynamic() for _ in range(3)]
    assert go(*t2) == 0 and struct.unpack_from(sp.fmt, rec.calls[1][1]) == tuple(sp.values(tuple(t2)))
    assert go(*[wb.from_dlpack(y) for _ in range(3)]) is None           # static layout: another kernel
    ro = np.zeros((4, 6), np.float32)
    ro.flags.writeable = False
    assert go(t[0], t[1], wb.from_dlpack(ro).mark_layout_dynamic()) is None  # writes a read-only tensor
    assert len(rec.calls) == 2


def test_launcher_keeps_its_owner_alive_and_rejects_bad_construction():
    rec = Recorder(8)
    go = rec.launcher(((1, 0),))
    del rec
    assert go(5) == 0
    with pytest.raises(ValueError, match="6 launch dimensions"):
        _launch.Launcher(1, 1, (1, 1, 1), 0, 1, 1, 8, (), None)
    with pytest.raises(ValueError, match="need 16 bytes"):
        _launch.Launcher(1, 1, (1, 1, 1, 1, 1, 1), 0, 1, 1, 8, ((1, 1),), None)
    with pytest.raises(ValueError, match="Malformed"):
        _launch.Launcher(1, 1, (1, 1, 1, 1, 1, 1), 0, 1, 1, 8, ((1, -1),), None)


def test_a_reentrant_launch_cannot_change_the_arguments_of_the_outer_one():
    # Checking a framework tensor runs Python (the producer's __dlpack__); a launch from inside it
    # must not leak its parameters into the outer launch (the launcher packs privately, then copies).
    from workbench.dlpack import importer
    from workbench.dsl.runtime.args import normalize  # the conversion of a tensor passed straight in

    x = np.zeros((4, 6), np.float32)
    t = [normalize(x) for _ in range(3)]
    sp = E.vadd.specialize(tuple(t))
    rec = Recorder(sp.size)
    go = rec.launcher(sp.arg_specs)
    y = np.zeros((7, 6), np.float32)
    inner = [normalize(y) for _ in range(3)]

    class Reentrant:
        def __dlpack__(self, **kw):
            go(*inner)
            return x.__dlpack__(**kw)

        def __dlpack_device__(self):
            return x.__dlpack_device__()

    importer.PRODUCERS_FOR_C[Reentrant] = (importer.VIA_HOST_CAPSULE,)
    try:
        assert go(Reentrant(), t[1], t[2]) == 0
    finally:
        del importer.PRODUCERS_FOR_C[Reentrant]
    inner_call, outer_call = rec.calls
    assert struct.unpack_from(sp.fmt, outer_call[1]) == tuple(sp.values(tuple(t)))
    assert struct.unpack_from(sp.fmt, inner_call[1]) == tuple(sp.values(tuple(inner)))


def test_a_tensor_subclass_is_refused_like_the_dispatcher_does():
    x = np.zeros((4, 6), np.float32)
    t = [wb.from_dlpack(x).mark_layout_dynamic() for _ in range(3)]
    sp = E.vadd.specialize(tuple(t))
    rec = Recorder(sp.size)

    class Sub(wb.Tensor):
        __slots__ = ()

    sub = Sub.__new__(Sub)
    for name in ("_f", "_data", "_etype", "_stride", "_align", "_marks", "_order", "_layout"):
        setattr(sub, name, getattr(t[0], name))
    assert rec.launcher(sp.arg_specs)(sub, t[1], t[2]) is None and sp.values((sub, t[1], t[2])) is None


def test_half_precision_kernels_compile_and_compute_in_float32():
    import torch

    from workbench.dsl.runtime.cupy import compile_ptx

    h = [wb.from_dlpack(np.zeros(64, np.float16)).mark_layout_dynamic() for _ in range(3)]
    assert "cvt.f32.f16" in compile_ptx(E.vadd.specialize(tuple(h)).cuda_source)   # codegen's own fp16 helpers
    x, y = torch.randn(64).to(torch.bfloat16), torch.randn(64).to(torch.bfloat16)
    z = torch.zeros(64, dtype=torch.bfloat16)
    src = E.vadd.specialize((x, y, z)).cuda_source
    assert "_wb_bf2f" in src and "_wb_f2bf" in src and "cvt.rn.bf16.f32" in compile_ptx(src)   # no cuda_bf16.h
    E.vadd[(1, 1, 1), (64, 1, 1)](x, y, z)        # the CPU executor: loads widen to float32, the store rounds (RNE)
    assert torch.equal(z, (x.float() + y.float()).to(torch.bfloat16))


def test_tensors_passed_straight_in_are_specialized_on_16_byte_alignment():
    """Triton's rule (args.normalize): a framework tensor starting at a multiple of 16 bytes, with dynamic strides that
    are multiples of 16 bytes, compiles a specialization that assumes both; the C fast path applies the same rule, so
    a tensor of another class misses it (and the dispatcher picks or builds that class's specialization)."""
    from workbench.dsl.runtime.args import normalize
    base = np.zeros(64 + 1, np.float32)
    assert base.ctypes.data % 16 == 0
    x = base[:64].reshape(8, 8)                       # aligned, rows of 32 bytes
    t = normalize(x)
    assert t.assumed_align == 16 and str(t.layout) == "(?,?):(?{i64 div=4},1)"
    sp = E.vadd.specialize((x, x, x))
    rec = Recorder(sp.size)
    go = rec.launcher(sp.arg_specs)
    assert go(x, x, x) == 0
    odd = base[1:65].reshape(8, 8)                    # 4 bytes past: natural alignment
    assert normalize(odd).assumed_align == 4 and go(odd, odd, odd) is None
    rows = np.zeros((8, 6), np.float32)               # 24-byte rows: strides known divisible by 1 only
    assert str(normalize(rows).layout) == "(?,?):(?{i64},1)" and go(rows, rows, rows) is None
    assert len(rec.calls) == 1
    assert E.vadd.specialize((odd, odd, odd)) is not sp and E.vadd.specialize((x, x, x)) is sp


def test_a_tensor_of_unit_extents_passed_straight_in_needs_no_leading_dimension():
    # a 1x1 array has two stride-1 modes: mark_layout_dynamic asks which leads (as CuTe DSL); passed straight in, the
    # last is taken, by the Python conversion and the C fast path alike
    one = np.ones((1, 1), np.float32)
    sp = E.vadd.specialize((one, one, one))
    rec = Recorder(sp.size)
    assert rec.launcher(sp.arg_specs)(one, one, one) == 0
    out = np.zeros((1, 1), np.float32)
    E.vadd[(1, 1, 1), (32, 1, 1)](one, one, out)
    assert out[0, 0] == 2.0
    with pytest.raises(ValueError, match="leading dimension"):
        wb.from_dlpack(one).mark_layout_dynamic()
