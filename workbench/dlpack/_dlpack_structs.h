/* DLPack's C structs (dlpack.h 1.3) and the C storage of wb.Tensor / wb.Pointer, shared by the
 * DLPack bridge (workbench/dlpack/_native.c) and the DSL's launcher (workbench/dsl/_launch.c),
 * which reads tensors without calling back into Python.  One definition, included by both. */
#ifndef WB_DLPACK_STRUCTS_H
#define WB_DLPACK_STRUCTS_H
#include <Python.h>
#include <stdint.h>

typedef struct { int32_t device_type; int32_t device_id; } DLDevice;
typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } DLDataType;
typedef struct {
  void *data; DLDevice device; int32_t ndim; DLDataType dtype;
  int64_t *shape; int64_t *strides; uint64_t byte_offset;
} DLTensor;
typedef struct { uint32_t major; uint32_t minor; } DLPackVersion;
typedef struct DLManagedTensor {
  DLTensor dl_tensor; void *manager_ctx; void (*deleter)(struct DLManagedTensor *);
} DLManagedTensor;
typedef struct DLManagedTensorVersioned {
  DLPackVersion version; void *manager_ctx; void (*deleter)(struct DLManagedTensorVersioned *);
  uint64_t flags; DLTensor dl_tensor;
} DLManagedTensorVersioned;

#define WB_DLPACK_FLAG_READ_ONLY 1ull

/* DLPackExchangeAPI's dltensor_from_py_object_no_sync: fills a DLTensor that borrows obj's memory */
typedef int (*dltensor_from_py_object_no_sync_t)(void *, DLTensor *);

/* wb.Tensor's C base.  f: the importer's field tuple (owner, version, flags, data, device_type,
 * device_id, ndim, code, bits, lanes, shape, strides, byte_offset, packed_dtype). */
typedef struct {
  PyObject_HEAD
  PyObject *f, *data, *etype, *stride, *align, *marks, *order, *layout;
  PyObject *weakreflist;
} TensorBase;

/* wb.Pointer's C base. */
typedef struct {
  PyObject_HEAD
  PyObject *element_type, *address, *memspace, *assumed_align;
} PointerBase;

#endif
