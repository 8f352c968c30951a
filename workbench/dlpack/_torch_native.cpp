// The torch reader: one torch tensor's DLTensor fields and hazard bits read straight from its
// at::Tensor, for the C paths that take torch tensors (the kernel launcher, wb.from_dlpack).
//
// torch's DLPack exchange API (dltensor_from_py_object_no_sync) does the same read through
// pybind11 casts, a GIL guard and a reference-count round trip, and it does not look at the three
// hazards (requires_grad, the negative bit, the conjugate bit of complex tensors), which the
// generic path then asks torch's Python getters for.  Here all of it is a few loads.  TVM-FFI's
// torch addon is built the same way: C++ compiled against the installed torch's headers.
//
// Compiled by workbench.dlpack.torch_native.build() (python -m workbench build-torch-native) into a
// per-torch cache folder, never at import or launch.  The layout of THPVariable and TensorImpl is
// torch's private ABI: the loader checks that wb_torch_built_for() names the running torch exactly
// (version, git commit, Python ABI) before anything calls wb_torch_read.
//
// Plain C entry points; no C++ exception crosses them.
#include <torch/csrc/autograd/python_variable.h>

#include "_dlpack_structs.h"

#ifndef WB_TORCH_VERSION
#error "build with -DWB_TORCH_VERSION=\"<torch.__version__> <git_version> <soabi>\" (torch_native.build does)"
#endif

namespace {

// torch's own at::getDLDataType mapping for the types it maps to DLPack; 0: anything else (the
// caller falls back to the exchange API, which keeps its own behaviour for them).
inline int dl_dtype(c10::ScalarType s, DLDataType *d) {
  using S = c10::ScalarType;
  uint8_t code, bits;
  switch (s) {
    case S::Half: code = 2; bits = 16; break;           // kDLFloat
    case S::Float: code = 2; bits = 32; break;
    case S::Double: code = 2; bits = 64; break;
    case S::BFloat16: code = 4; bits = 16; break;       // kDLBfloat
    case S::Char: code = 0; bits = 8; break;            // kDLInt
    case S::Short: code = 0; bits = 16; break;
    case S::Int: code = 0; bits = 32; break;
    case S::Long: code = 0; bits = 64; break;
    case S::Byte: code = 1; bits = 8; break;            // kDLUInt
    case S::UInt16: code = 1; bits = 16; break;
    case S::UInt32: code = 1; bits = 32; break;
    case S::UInt64: code = 1; bits = 64; break;
    case S::Bool: code = 6; bits = 8; break;            // kDLBool
    case S::Float8_e4m3fn: code = 10; bits = 8; break;  // kDLFloat8_e4m3fn
    case S::Float8_e4m3fnuz: code = 11; bits = 8; break;
    case S::Float8_e5m2: code = 12; bits = 8; break;
    case S::Float8_e5m2fnuz: code = 13; bits = 8; break;
    case S::Float8_e8m0fnu: code = 14; bits = 8; break;
    case S::ComplexFloat: code = 5; bits = 64; break;   // kDLComplex
    case S::ComplexDouble: code = 5; bits = 128; break;
    default: return 0;
  }
  d->code = code;
  d->bits = bits;
  d->lanes = 1;
  return 1;
}

}  // namespace

extern "C" {

// obj: a torch.Tensor (or subclass) instance; the caller holds it, which keeps the shape and
// strides arrays (inside its TensorImpl) valid.  0: *out filled as torch's toDLPackNonOwning
// would (data_ptr() with the storage offset applied, byte_offset 0), *hazard = whether the tensor
// requires grad or carries the negative bit or (complex) the conjugate bit.  1: not read here
// (another layout, device or dtype, no storage, symbolic sizes, anything that threw): the caller
// takes the exchange API as before.  Called with the GIL held.
__attribute__((visibility("default"))) int wb_torch_read(PyObject *obj, DLTensor *out, int *hazard) {
  try {
    const at::Tensor &t = THPVariable_Unpack(obj);
    if (!t.defined() || t.layout() != c10::kStrided || !t.has_storage()) return 1;
    c10::Device dev = t.device();
    int32_t dev_type;
    if (dev.type() == c10::DeviceType::CPU) dev_type = 1;          // kDLCPU
    else if (dev.type() == c10::DeviceType::CUDA) dev_type = 2;    // kDLCUDA
    else return 1;
    DLDataType dt;
    if (!dl_dtype(t.scalar_type(), &dt)) return 1;
    c10::TensorImpl *impl = t.unsafeGetTensorImpl();
    if (impl->has_symbolic_sizes_strides()) return 1;
    c10::IntArrayRef sizes = impl->sizes(), strides = impl->strides();
    out->data = t.data_ptr();
    // torchDeviceToDLDevice: the CUDA index as an unsigned char, 0 for the CPU
    out->device.device_type = dev_type;
    out->device.device_id = dev_type == 2 ? (int32_t)(unsigned char)dev.index() : 0;
    out->ndim = (int32_t)sizes.size();
    out->dtype = dt;
    out->shape = const_cast<int64_t *>(sizes.data());
    out->strides = const_cast<int64_t *>(strides.data());
    out->byte_offset = 0;
    *hazard = t.requires_grad() || t.is_neg() || (dt.code == 5 && t.is_conj());
    return 0;
  } catch (...) {
    return 1;
  }
}

// What this library was compiled against: "<torch version> <torch git commit> <Python SOABI>".
__attribute__((visibility("default"))) const char *wb_torch_built_for(void) { return WB_TORCH_VERSION; }

}  // extern "C"
