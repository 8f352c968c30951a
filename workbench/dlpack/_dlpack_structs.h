/* DLPack's C structs (dlpack.h 1.3) and the C storage of wb.Tensor / wb.Pointer, shared by the
 * DLPack bridge (workbench/dlpack/_native.c) and the DSL's launcher (workbench/dsl/_launch.c),
 * which reads tensors without calling back into Python.  One definition, included by both. */
#ifndef WB_DLPACK_STRUCTS_H
#define WB_DLPACK_STRUCTS_H
#include <Python.h>
#include <stdint.h>
#include <string.h>

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

/* ---- the torch reader ----------------------------------------------------------------------
 * workbench/dlpack/_torch_native.cpp, compiled against the running torch's headers
 * (python -m workbench build-torch-native) and loaded by workbench.dlpack.torch_native once its
 * recorded torch version matches: wb_torch_read(obj, &t, &hazard) fills a DLTensor from a torch
 * tensor's at::Tensor and tells its hazards in the same few loads; 0: read, 1: not read (the caller
 * takes the exchange API and wb_torch_hazard, as without the reader).  One instance, in _native;
 * the launcher reads it through the capsule WB_TORCH_READER_CAPSULE. */
typedef int (*wb_torch_read_t)(PyObject *obj, DLTensor *out, int *hazard);
typedef struct {
  wb_torch_read_t read;   /* NULL: not loaded, or switched off */
  PyTypeObject *base;     /* torch._C.TensorBase (a strong reference): read is given its instances only */
} WbTorchReader;
#define WB_TORCH_READER_CAPSULE "workbench.dlpack._native._torch_reader"

/* The last producer type met and its decoded table entry, per C path: a call passing one framework's
 * tensors skips the dict lookup and the int conversions.  Valid while the table is the same dict and
 * that type's entry is unchanged: on Python < 3.12 the dict's version tag says so without a lookup
 * (any change of the dict changes it); from 3.12 (the tag is deprecated there) the entry is looked up
 * and compared by identity, which still skips the decoding.  torch_read: the entry is torch's exchange
 * API and the type derives from the reader's base, so the reader may be given its instances. */
typedef struct {
  PyTypeObject *type;     /* strong */
  PyObject *entry;        /* strong */
  PyObject *table;        /* borrowed: compared only */
  PyTypeObject *base;     /* the reader's base when torch_read was decided: compared only */
  uint64_t tag;
  void *fp;               /* the exchange API's function (kind WB_VIA_EXCHANGE) */
  int kind, torch_checks, torch_read;
} WbProducerCache;

static inline void wb_producer_cache_clear(WbProducerCache *c) {
  PyObject *t = (PyObject *)c->type, *e = c->entry;
  memset(c, 0, sizeof *c);
  Py_XDECREF(t);
  Py_XDECREF(e);
}

/* 1: c describes tp's entry; 0: tp is not in the table (or an error is set). */
static inline int wb_producer_cached(WbProducerCache *c, PyObject *table, PyTypeObject *tp, const WbTorchReader *rd) {
  PyTypeObject *base = rd ? rd->base : NULL;
  if (tp == c->type && table == c->table && base == c->base) {
#if PY_VERSION_HEX < 0x030C0000
    if (((PyDictObject *)table)->ma_version_tag == c->tag) return 1;
#else
    if (PyDict_GetItemWithError(table, (PyObject *)tp) == c->entry) return 1;
#endif
  }
  int kind;
  PyObject *e = wb_producer(table, tp, &kind);
  if (!e) return 0;
  void *fp = NULL;
  if (kind == WB_VIA_EXCHANGE) {
    fp = PyLong_AsVoidPtr(PyTuple_GET_ITEM(e, 1));
    if (!fp) { PyErr_Clear(); return 0; }
  }
  int torch_checks = kind == WB_VIA_EXCHANGE && PyTuple_GET_ITEM(e, 3) == Py_True;
  PyObject *old_type = (PyObject *)c->type, *old_entry = c->entry;
  c->type = (PyTypeObject *)Py_NewRef(tp);
  c->entry = Py_NewRef(e);
  c->table = table;
  c->base = base;
#if PY_VERSION_HEX < 0x030C0000
  c->tag = ((PyDictObject *)table)->ma_version_tag;
#endif
  c->fp = fp;
  c->kind = kind;
  c->torch_checks = torch_checks;
  c->torch_read = torch_checks && base && PyType_IsSubtype(tp, base);
  Py_XDECREF(old_type);  /* last: a finalizer run here sees a consistent cache */
  Py_XDECREF(old_entry);
  return 1;
}

#endif
