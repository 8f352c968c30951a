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

/* wb.Tensor's C base.  Python sees _f (the importer's field tuple: owner, version, flags, data,
 * device_type, device_id, ndim, code, bits, lanes, shape, strides, byte_offset, packed_dtype), _data,
 * _stride and _align.  A tensor that from_dlpack built in C is `native`: its DLTensor lives in the C
 * fields below and those four Python objects are built on first use (most tensors passed to a kernel
 * never need them), which is what makes from_dlpack one allocation.  Setting any of them from Python
 * clears `native`: the Python objects are then the truth (make_tensor views, the general import). */
#define WB_INLINE_RANK 6
typedef struct {
  PyObject_HEAD
  PyObject *f, *data, *etype, *stride, *align, *marks, *order, *layout;
  PyObject *weakreflist;
  PyObject *owner, *version;        /* native: what _f[0] and _f[1] hold */
  void *managed;                    /* native, from a capsule: the consumed DLManagedTensor(Versioned), whose
                                     * deleter runs when the tensor dies (an Owner takes it over if _f is built) */
  int managed_versioned;
  int native;
  int null_strides;                 /* the producer sent strides == NULL (allowed for a 0-d tensor): _f says so */
  int32_t ndim, device_type, device_id;
  uint32_t packed;                  /* code | bits << 8 | lanes << 16 */
  uint64_t flags, raw, byte_offset, addr;   /* addr = raw + byte_offset */
  int64_t calign;
  int64_t *dims;                    /* shape then strides: inline_dims or PyMem */
  int64_t inline_dims[2 * WB_INLINE_RANK];
} TensorBase;

/* wb.Pointer's C base. */
typedef struct {
  PyObject_HEAD
  PyObject *element_type, *address, *memspace, *assumed_align;
  char read_only;  /* a pointer into read-only memory (a read-only tensor's .iterator): kernels may not write it */
} PointerBase;

/* torch's hazards, which its DLPack exchange API does not check (torch's own __dlpack__ does): a
 * tensor that requires grad, or carries a lazy conjugate or negative bit, would be read as its raw
 * storage.  Read through the type's own descriptors, cached per type, and where they are torch's C
 * getter and C methods, by calling those C functions directly (an attribute lookup, a bound method
 * or a descriptor dispatch per check would cost more than the conversion itself).  is_conj is asked
 * of complex tensors only: torch's TensorImpl asserts that the conjugate bit is set on complex dtypes
 * alone.  1: refuse (or could not tell). */
typedef struct {
  PyTypeObject *type;
  PyObject *desc[3];          /* requires_grad, is_neg, is_conj */
  getter get;                 /* requires_grad's C getter, when it is a plain getset descriptor */
  void *closure;
  PyCFunction meth[2];        /* is_neg / is_conj as C METH_NOARGS methods, when they are */
} WbHazardCache;

#define WB_DL_COMPLEX 5  /* kDLComplex */

static inline PyObject *wb_hazard_call(WbHazardCache *c, int i, PyObject *obj) {
  if (i == 0) {
    if (c->get) return c->get(obj, c->closure);
    return Py_TYPE(c->desc[0])->tp_descr_get(c->desc[0], obj, (PyObject *)Py_TYPE(obj));
  }
  if (c->meth[i - 1]) return c->meth[i - 1](obj, NULL);
  return PyObject_Vectorcall(c->desc[i], &obj, 1, NULL);
}

static inline int wb_torch_hazard(WbHazardCache *c, PyObject *obj, int dtype_code) {
  PyTypeObject *tp = Py_TYPE(obj);
  if (tp != c->type) {
    static const char *names[3] = {"requires_grad", "is_neg", "is_conj"};
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
    c->get = NULL; c->closure = NULL; c->meth[0] = c->meth[1] = NULL;
    /* the direct calls only where the descriptor is exactly a C getter / C method of a base of tp,
     * so that the object is of the type the C function expects */
    PyObject *d = found[0];
    if (Py_IS_TYPE(d, &PyGetSetDescr_Type) && PyType_IsSubtype(tp, ((PyGetSetDescrObject *)d)->d_common.d_type)) {
      c->get = ((PyGetSetDescrObject *)d)->d_getset->get;
      c->closure = ((PyGetSetDescrObject *)d)->d_getset->closure;
    }
    for (int i = 1; i < 3; i++) {
      d = found[i];
      if (Py_IS_TYPE(d, &PyMethodDescr_Type) && ((PyMethodDescrObject *)d)->d_method->ml_flags == METH_NOARGS &&
          PyType_IsSubtype(tp, ((PyMethodDescrObject *)d)->d_common.d_type))
        c->meth[i - 1] = ((PyMethodDescrObject *)d)->d_method->ml_meth;
    }
  }
  int checks = dtype_code == WB_DL_COMPLEX ? 3 : 2;
  for (int i = 0; i < checks; i++) {
    PyObject *r = wb_hazard_call(c, i, obj);
    if (!r) { PyErr_Clear(); return 1; }
    int bad = r != Py_False;
    Py_DECREF(r);
    if (bad) return 1;
  }
  return 0;
}

/* How the C paths read a producer type: the importer's table PRODUCERS_FOR_C maps a type to
 *   (0, fnptr, version, torch_checks)  its DLPack exchange API's dltensor_from_py_object_no_sync;
 *   (1,)                               a capsule from __dlpack__, host memory only (no stream);
 *   (2,)                               a capsule from __dlpack__, CUDA memory only (stream=-1).
 * Returns the entry (borrowed) and its kind, or NULL (an error set, or a type the table lacks). */
enum { WB_VIA_EXCHANGE = 0, WB_VIA_HOST_CAPSULE = 1, WB_VIA_CUDA_CAPSULE = 2 };

static inline PyObject *wb_producer(PyObject *table, PyTypeObject *tp, int *kind) {
  PyObject *e = table ? PyDict_GetItemWithError(table, (PyObject *)tp) : NULL;
  if (!e) return NULL;
  if (!PyTuple_Check(e) || PyTuple_GET_SIZE(e) < 1) return NULL;
  long k = PyLong_AsLong(PyTuple_GET_ITEM(e, 0));
  if (k == WB_VIA_EXCHANGE && PyTuple_GET_SIZE(e) != 4) return NULL;
  if (k < 0 || k > 2) { PyErr_Clear(); return NULL; }
  *kind = (int)k;
  return e;
}

#endif
