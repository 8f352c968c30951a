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
  char read_only;  /* a pointer into read-only memory (a read-only tensor's .iterator): kernels may not write it */
} PointerBase;

/* torch's hazards, which its DLPack exchange API does not check (torch's own __dlpack__ does): a
 * tensor that requires grad, or carries a lazy conjugate or negative bit, would be read as its raw
 * storage.  Read through the type's own descriptors, cached per type (an attribute lookup and a
 * bound method per check cost more than the conversion).  1: refuse (or could not tell). */
typedef struct { PyTypeObject *type; PyObject *desc[3]; } WbHazardCache;

static inline int wb_torch_hazard(WbHazardCache *c, PyObject *obj) {
  PyTypeObject *tp = Py_TYPE(obj);
  if (tp != c->type) {
    static const char *names[3] = {"requires_grad", "is_conj", "is_neg"};
    PyObject *found[3];
    for (int i = 0; i < 3; i++) {
      PyObject *name = PyUnicode_InternFromString(names[i]);
      if (!name) { PyErr_Clear(); return 1; }
      found[i] = _PyType_Lookup(tp, name);  /* borrowed */
      Py_DECREF(name);
      if (!found[i] || !Py_TYPE(found[i])->tp_descr_get) return 1;
    }
    for (int i = 0; i < 3; i++) Py_XSETREF(c->desc[i], Py_NewRef(found[i]));
    Py_XSETREF(c->type, (PyTypeObject *)Py_NewRef(tp));
  }
  PyObject *r = Py_TYPE(c->desc[0])->tp_descr_get(c->desc[0], obj, (PyObject *)tp);
  if (!r) { PyErr_Clear(); return 1; }
  int bad = r != Py_False;
  Py_DECREF(r);
  for (int i = 1; i < 3 && !bad; i++) {
    r = PyObject_Vectorcall(c->desc[i], &obj, 1, NULL);
    if (!r) { PyErr_Clear(); return 1; }
    bad = r != Py_False;
    Py_DECREF(r);
  }
  return bad;
}

#endif
