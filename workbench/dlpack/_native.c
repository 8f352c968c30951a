/* The hot half of the DLPack bridge, in C because ctypes costs ~0.4 us per foreign call.
 *
 * consume(capsule)          : import a DLPack capsule (legacy or versioned) -> decoded fields
 * exchange(fnptr, obj)      : call a DLPackExchangeAPI dltensor_from_py_object_no_sync
 * export(owner, ...)        : build a versioned or legacy capsule over memory kept alive by owner
 *
 * Field meanings and ownership rules follow dlpack.h 1.3 and the DLPack Python spec; the
 * Python side (importer.py, exporter.py) does the validation and keeps this file small.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_dlpack_structs.h"  /* DLPack structs, TensorBase, PointerBase */

#define OUR_MAJOR 1
#define OUR_MINOR 3

static const char NAME_V[] = "dltensor_versioned";
static const char NAME_L[] = "dltensor";
static const char USED_V[] = "used_dltensor_versioned";
static const char USED_L[] = "used_dltensor";

/* ---- Owner: calls the producer's deleter exactly once, when the last view dies ---------- */
typedef struct { PyObject_HEAD void *managed; int versioned; } Owner;

static void owner_release(Owner *self) {
  void *m = self->managed;
  self->managed = NULL;
  if (!m) return;
  /* A refused import releases with its BufferError pending; the deleter may run Python code
   * (a ctypes producer), which must not see it: save it and restore it afterwards. */
  PyObject *et, *ev, *tb;
  PyErr_Fetch(&et, &ev, &tb);
  if (self->versioned) {
    DLManagedTensorVersioned *mv = (DLManagedTensorVersioned *)m;
    if (mv->deleter) mv->deleter(mv);
  } else {
    DLManagedTensor *ml = (DLManagedTensor *)m;
    if (ml->deleter) ml->deleter(ml);
  }
  if (PyErr_Occurred()) PyErr_WriteUnraisable((PyObject *)self);  /* a deleter must not raise */
  PyErr_Restore(et, ev, tb);
}

static void owner_dealloc(Owner *self) {
  owner_release(self);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *owner_repr(Owner *self) {
  return PyUnicode_FromFormat("<DLPack owner (%s, %s)>", self->versioned ? "versioned" : "legacy",
                              self->managed ? "alive" : "released");
}

static PyObject *owner_exported(Owner *self, void *closure);
static PyGetSetDef owner_getset[] = {
  {"exported", (getter)owner_exported, NULL,
   "The object our own export() was given as owner when this capsule came from the workbench, else None.", NULL},
  {NULL},
};

static PyTypeObject OwnerType = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "workbench.dlpack._native.Owner",
  .tp_basicsize = sizeof(Owner),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_dealloc = (destructor)owner_dealloc,
  .tp_repr = (reprfunc)owner_repr,
  .tp_getset = owner_getset,
  .tp_doc = "Holds a consumed DLManagedTensor(Versioned); calls its deleter once when collected.",
};

/* ---- Consumer validation --------------------------------------------------------------------
 * Every DLTensor field is checked before anything is read through it, in numbered phases as
 * CCCL's cuda/__mdspan/dlpack_to_mdspan.h does (named validators, one message each).  A tensor
 * that passes has at most WB_MAX_NDIM modes, an element count, byte span and end address that
 * fit 64 bits, so no consumer downstream (ours, numpy, a kernel) can be led to overflow.
 *   phase 1  validate_ndim      0 <= ndim <= 64 (numpy's limit); shape/strides hold ndim entries
 *   phase 2  validate_dtype     bits > 0 and lanes > 0 (a zero-sized element has no address)
 *   phase 3  validate_shape     every extent >= 0; the element count fits int64
 *   phase 4  validate_strides   the reach of every mode, their sum and the byte span fit int64
 *   phase 5  validate_address   data + byte_offset + the byte span stays inside [0, 2**64)
 * shape == NULL (ndim > 0) is not read: it is decoded as None and Python refuses it. */
#define WB_MAX_NDIM 64

static int validate_ndim(const DLTensor *t) {
  if (t->ndim < 0) {
    PyErr_Format(PyExc_BufferError, "Expected DLTensor.ndim >= 0, but got %d.", (int)t->ndim);
    return -1;
  }
  if (t->ndim > WB_MAX_NDIM) {
    PyErr_Format(PyExc_BufferError, "Expected DLTensor.ndim <= %d (numpy's limit), but got %d.", WB_MAX_NDIM,
                 (int)t->ndim);
    return -1;
  }
  return 0;
}

static int validate_dtype(const DLTensor *t) {
  if (t->dtype.bits == 0 || t->dtype.lanes == 0) {
    PyErr_Format(PyExc_BufferError, "Expected DLTensor.dtype with bits > 0 and lanes > 0, but got bits=%u lanes=%u.",
                 (unsigned)t->dtype.bits, (unsigned)t->dtype.lanes);
    return -1;
  }
  return 0;
}

/* count: the element count (0 for an empty tensor) */
static int validate_shape(const DLTensor *t, int64_t *count) {
  int64_t n = 1;
  *count = 0;
  if (!t->shape) return 0;  /* ndim == 0, or NULL that Python refuses with its own message */
  for (int i = 0; i < t->ndim; i++) {
    if (t->shape[i] < 0) {
      PyErr_Format(PyExc_BufferError, "Expected non-negative DLTensor.shape entries, but got shape[%d] = %lld.", i,
                   (long long)t->shape[i]);
      return -1;
    }
  }
  for (int i = 0; i < t->ndim; i++) {
    if (t->shape[i] == 0) { n = 0; break; }
    if (__builtin_mul_overflow(n, t->shape[i], &n)) {
      PyErr_Format(PyExc_BufferError, "Expected a DLTensor element count that fits int64, but the shape overflows "
                   "at shape[%d] = %lld.", i, (long long)t->shape[i]);
      return -1;
    }
  }
  *count = n;
  return 0;
}

/* lo, hi: the lowest and highest element offset the tensor reaches (both 0 when empty) */
static int validate_strides(const DLTensor *t, int64_t count, int64_t *lo, int64_t *hi) {
  *lo = *hi = 0;
  if (count == 0 || !t->shape) return 0;
  for (int i = 0; i < t->ndim; i++) {
    int64_t stride, reach;
    if (t->strides) {
      stride = t->strides[i];
    } else {  /* pre-1.2 NULL strides: row-major, each stride at most the element count, so no overflow */
      stride = 1;
      for (int j = i + 1; j < t->ndim; j++) stride *= t->shape[j];
    }
    if (__builtin_mul_overflow(t->shape[i] - 1, stride, &reach) ||
        (reach < 0 ? __builtin_add_overflow(*lo, reach, lo) : __builtin_add_overflow(*hi, reach, hi))) {
      PyErr_Format(PyExc_BufferError, "Expected DLTensor strides whose span fits int64, but mode %d (extent %lld, "
                   "stride %lld) overflows it.", i, (long long)t->shape[i], (long long)stride);
      return -1;
    }
  }
  return 0;
}

static int validate_address(const DLTensor *t, int64_t count, int64_t lo, int64_t hi) {
  uint64_t base, bytes = ((uint64_t)t->dtype.bits * t->dtype.lanes + 7) / 8;
  if (__builtin_add_overflow((uint64_t)(uintptr_t)t->data, t->byte_offset, &base)) {
    PyErr_Format(PyExc_BufferError, "Expected DLTensor.data + byte_offset below 2**64, but got %llu + %llu.",
                 (unsigned long long)(uintptr_t)t->data, (unsigned long long)t->byte_offset);
    return -1;
  }
  if (count == 0) return 0;
  /* lo <= 0 <= hi; the bytes from element lo to the end of element hi must lie in [0, 2**64) */
  __int128 lo_b = (__int128)lo * (__int128)bytes, hi_b = ((__int128)hi + 1) * (__int128)bytes;
  if ((__int128)base + lo_b < 0 || (__int128)base + hi_b > ((__int128)1 << 64) ||
      hi_b - lo_b > (__int128)INT64_MAX) {
    PyErr_Format(PyExc_BufferError, "Expected a DLTensor whose elements lie inside the 64-bit address space, but "
                 "data + byte_offset = %llu with element offsets %lld..%lld of %llu bytes does not.",
                 (unsigned long long)base, (long long)lo, (long long)hi, (unsigned long long)bytes);
    return -1;
  }
  return 0;
}

static int validate_dltensor(const DLTensor *t) {
  int64_t count, lo, hi;
  if (validate_ndim(t) < 0) return -1;                     /* phase 1 */
  if (validate_dtype(t) < 0) return -1;                    /* phase 2 */
  if (validate_shape(t, &count) < 0) return -1;            /* phase 3 */
  if (validate_strides(t, count, &lo, &hi) < 0) return -1; /* phase 4 */
  return validate_address(t, count, lo, hi);               /* phase 5 */
}

static PyObject *int64_tuple(const int64_t *p, int n) {
  PyObject *t = PyTuple_New(n);
  if (!t) return NULL;
  for (int i = 0; i < n; i++) {
    PyObject *v = PyLong_FromLongLong(p[i]);
    if (!v) { Py_DECREF(t); return NULL; }
    PyTuple_SET_ITEM(t, i, v);
  }
  return t;
}

/* (owner, version, flags, data, device_type, device_id, ndim, code, bits, lanes, shape, strides, byte_offset, packed_dtype)
 * version is (major, minor) or None (legacy); strides is None when the producer sent NULL;
 * shape is None when ndim > 0 and the producer sent NULL (the Python side rejects it). */
static PyObject *decode(PyObject *owner, PyObject *version, uint64_t flags, const DLTensor *t) {
  int n = t->ndim;
  PyObject *shape, *strides;
  if (validate_dltensor(t) < 0) return NULL;  /* before any field is read through */
  if (t->shape || n == 0) {
    shape = t->shape ? int64_tuple(t->shape, n) : PyTuple_New(0);
    if (!shape) return NULL;
  } else {
    shape = Py_NewRef(Py_None);
  }
  if (t->strides) {
    strides = int64_tuple(t->strides, n);
    if (!strides) { Py_DECREF(shape); return NULL; }
  } else {
    strides = Py_NewRef(Py_None);
  }
  /* the last item packs (code, bits, lanes) into one int: a single dict lookup finds the element type.
   * Built item by item: Py_BuildValue's format parsing was most of from_dlpack's cost. */
  PyObject *f = PyTuple_New(14);
  if (!f) { Py_DECREF(shape); Py_DECREF(strides); return NULL; }
  PyTuple_SET_ITEM(f, 0, Py_NewRef(owner));
  PyTuple_SET_ITEM(f, 1, Py_NewRef(version));
  PyTuple_SET_ITEM(f, 10, shape);
  PyTuple_SET_ITEM(f, 11, strides);
  PyObject *items[10] = {
    PyLong_FromUnsignedLongLong((unsigned long long)flags),
    PyLong_FromUnsignedLongLong((unsigned long long)(uintptr_t)t->data),
    PyLong_FromLong(t->device.device_type), PyLong_FromLong(t->device.device_id), PyLong_FromLong(n),
    PyLong_FromLong(t->dtype.code), PyLong_FromLong(t->dtype.bits), PyLong_FromLong(t->dtype.lanes),
    PyLong_FromUnsignedLongLong((unsigned long long)t->byte_offset),
    PyLong_FromUnsignedLong((unsigned long)t->dtype.code | ((unsigned long)t->dtype.bits << 8) |
                            ((unsigned long)t->dtype.lanes << 16)),
  };
  static const int at[10] = {2, 3, 4, 5, 6, 7, 8, 9, 12, 13};
  int failed = 0;
  for (int i = 0; i < 10; i++) {
    if (!items[i]) { failed = 1; items[i] = Py_NewRef(Py_None); }
    PyTuple_SET_ITEM(f, at[i], items[i]);
  }
  if (failed) { Py_DECREF(f); return NULL; }
  return f;
}

static PyObject *consume(PyObject *mod, PyObject *capsule) {
  if (!PyCapsule_CheckExact(capsule)) {
    PyErr_Format(PyExc_TypeError, "Expected a DLPack PyCapsule, but got %s.", Py_TYPE(capsule)->tp_name);
    return NULL;
  }
  const char *name = PyCapsule_GetName(capsule);
  int versioned;
  if (name && strcmp(name, NAME_V) == 0) versioned = 1;
  else if (name && strcmp(name, NAME_L) == 0) versioned = 0;
  else if (name && strncmp(name, "used_", 5) == 0) {
    PyErr_Format(PyExc_BufferError,
                 "Expected an unconsumed DLPack capsule, but got one named '%s' (already consumed).", name);
    return NULL;
  } else {
    PyErr_Format(PyExc_BufferError,
                 "Expected a capsule named 'dltensor_versioned' or 'dltensor', but got '%s'.", name ? name : "(null)");
    return NULL;
  }
  void *p = PyCapsule_GetPointer(capsule, name);
  if (!p) return NULL;
  Owner *owner = PyObject_New(Owner, &OwnerType);  /* first: a failed allocation must not consume */
  if (!owner) return NULL;
  owner->managed = NULL;
  owner->versioned = versioned;
  /* Consuming = renaming: from here on the producer's capsule destructor leaves it to us. */
  if (PyCapsule_SetName(capsule, versioned ? USED_V : USED_L) != 0) { Py_DECREF(owner); return NULL; }
  owner->managed = p;
  if (versioned) {
    DLManagedTensorVersioned *m = (DLManagedTensorVersioned *)p;
    if (m->version.major != OUR_MAJOR) {
      unsigned major = m->version.major, minor = m->version.minor;
      Py_DECREF(owner);  /* the spec: call the deleter, read nothing else */
      PyErr_Format(PyExc_BufferError,
                   "Expected a DLPack capsule of major version %d, but got version %u.%u; "
                   "its fields cannot be read safely.", OUR_MAJOR, major, minor);
      return NULL;
    }
    PyObject *version = Py_BuildValue("(II)", m->version.major, m->version.minor);
    if (!version) { Py_DECREF(owner); return NULL; }
    PyObject *r = decode((PyObject *)owner, version, m->flags, &m->dl_tensor);
    Py_DECREF(version);
    Py_DECREF(owner);
    return r;
  } else {
    DLManagedTensor *m = (DLManagedTensor *)p;
    PyObject *r = decode((PyObject *)owner, Py_None, 0, &m->dl_tensor);
    Py_DECREF(owner);
    return r;
  }
}


static PyObject *exchange(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 3) {
    PyErr_SetString(PyExc_TypeError, "exchange(fnptr, obj, version) takes 3 arguments");
    return NULL;
  }
  void *fp = PyLong_AsVoidPtr(args[0]);
  if (!fp) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "Expected a non-NULL exchange function pointer.");
    return NULL;
  }
  DLTensor t;
  memset(&t, 0, sizeof t);
  if (((dltensor_from_py_object_no_sync_t)fp)((void *)args[1], &t) != 0) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_BufferError, "The producer's dltensor_from_py_object_no_sync failed.");
    return NULL;
  }
  return decode(args[1], args[2], 0, &t);  /* the producer object itself keeps the memory alive */
}

/* ---- export -------------------------------------------------------------------------- */
typedef struct {
  DLManagedTensorVersioned mv;   /* used when versioned */
  DLManagedTensor ml;            /* used when legacy */
  PyObject *owner;
  int64_t dims[];                /* shape then strides */
} Export;

static void export_free(Export *e) {
  if (!Py_IsInitialized()) { PyMem_RawFree(e); return; }  /* a consumer releasing after shutdown: leak the owner */
  PyGILState_STATE g = PyGILState_Ensure();
  Py_XDECREF(e->owner);
  PyGILState_Release(g);
  PyMem_RawFree(e);
}
static void deleter_v(DLManagedTensorVersioned *m) { export_free((Export *)m->manager_ctx); }
static void deleter_l(DLManagedTensor *m) { export_free((Export *)m->manager_ctx); }

/* A re-imported workbench export is recognised by its deleter: the bound (or the absence of an
 * owner) of the tensor it came from must survive the round trip. */
static PyObject *owner_exported(Owner *self, void *closure) {
  Export *e = NULL;
  if (self->managed && self->versioned && ((DLManagedTensorVersioned *)self->managed)->deleter == deleter_v)
    e = (Export *)((DLManagedTensorVersioned *)self->managed)->manager_ctx;
  else if (self->managed && !self->versioned && ((DLManagedTensor *)self->managed)->deleter == deleter_l)
    e = (Export *)((DLManagedTensor *)self->managed)->manager_ctx;
  return Py_NewRef(e && e->owner ? e->owner : Py_None);
}

static void capsule_destructor(PyObject *capsule) {
  /* An unconsumed capsule still owns its tensor (the spec's rule for producers). */
  if (PyCapsule_IsValid(capsule, NAME_V)) {
    DLManagedTensorVersioned *m = PyCapsule_GetPointer(capsule, NAME_V);
    if (m && m->deleter) m->deleter(m);
  } else if (PyCapsule_IsValid(capsule, NAME_L)) {
    DLManagedTensor *m = PyCapsule_GetPointer(capsule, NAME_L);
    if (m && m->deleter) m->deleter(m);
  }
}

/* export(owner, versioned, flags, data, device_type, device_id, code, bits, lanes, shape, strides, byte_offset) */
static PyObject *export_(PyObject *mod, PyObject *args) {
  PyObject *owner, *shape, *strides;
  int versioned, device_type, device_id, code, bits, lanes;
  unsigned long long flags, data, byte_offset;
  if (!PyArg_ParseTuple(args, "OpKKiiiiiO!O!K", &owner, &versioned, &flags, &data, &device_type, &device_id,
                        &code, &bits, &lanes, &PyTuple_Type, &shape, &PyTuple_Type, &strides, &byte_offset))
    return NULL;
  Py_ssize_t n = PyTuple_GET_SIZE(shape);
  if (PyTuple_GET_SIZE(strides) != n) {
    PyErr_SetString(PyExc_ValueError, "Expected as many strides as shape entries.");
    return NULL;
  }
  Export *e = PyMem_RawCalloc(1, sizeof(Export) + 2 * (size_t)n * sizeof(int64_t));
  if (!e) return PyErr_NoMemory();
  for (Py_ssize_t i = 0; i < n && !PyErr_Occurred(); i++) {
    e->dims[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, i));
    if (!PyErr_Occurred()) e->dims[n + i] = PyLong_AsLongLong(PyTuple_GET_ITEM(strides, i));
  }
  if (PyErr_Occurred()) { PyMem_RawFree(e); return NULL; }
  DLTensor *t = versioned ? &e->mv.dl_tensor : &e->ml.dl_tensor;
  t->data = (void *)(uintptr_t)data;
  t->device.device_type = device_type;
  t->device.device_id = device_id;
  t->ndim = (int32_t)n;
  t->dtype.code = (uint8_t)code; t->dtype.bits = (uint8_t)bits; t->dtype.lanes = (uint16_t)lanes;
  t->shape = n ? e->dims : NULL;
  t->strides = n ? e->dims + n : NULL;
  t->byte_offset = byte_offset;
  e->owner = Py_NewRef(owner);
  if (versioned) {
    e->mv.version.major = OUR_MAJOR; e->mv.version.minor = OUR_MINOR;
    e->mv.manager_ctx = e; e->mv.deleter = deleter_v; e->mv.flags = flags;
    PyObject *c = PyCapsule_New(&e->mv, NAME_V, capsule_destructor);
    if (!c) { Py_DECREF(owner); PyMem_RawFree(e); }
    return c;
  }
  e->ml.manager_ctx = e; e->ml.deleter = deleter_l;
  PyObject *c = PyCapsule_New(&e->ml, NAME_L, capsule_destructor);
  if (!c) { Py_DECREF(owner); PyMem_RawFree(e); }
  return c;
}


/* ---- TensorBase and the from_dlpack fast path --------------------------------------------
 * wb.Tensor subclasses TensorBase: its state lives in C fields so that from_dlpack can build a
 * tensor in one allocation.  fast_from_dlpack handles the common producers end to end and hands
 * anything unusual back to Python, which validates it with precise messages.
 */
#include <structmember.h>

/* TensorBase: see _dlpack_structs.h */

/* Cycle collection: a producer can hold its own view (torch_tensor.view = wb.from_dlpack(torch_tensor)),
 * and _f holds the producer: without traverse/clear such a pair would never be freed. */
static int tensorbase_traverse(TensorBase *self, visitproc visit, void *arg) {
  Py_VISIT(self->f); Py_VISIT(self->data); Py_VISIT(self->etype); Py_VISIT(self->stride);
  Py_VISIT(self->align); Py_VISIT(self->marks); Py_VISIT(self->order); Py_VISIT(self->layout);
  return 0;
}

static int tensorbase_clear(TensorBase *self) {
  Py_CLEAR(self->f); Py_CLEAR(self->data); Py_CLEAR(self->etype); Py_CLEAR(self->stride);
  Py_CLEAR(self->align); Py_CLEAR(self->marks); Py_CLEAR(self->order); Py_CLEAR(self->layout);
  return 0;
}

static void tensorbase_dealloc(TensorBase *self) {
  PyObject_GC_UnTrack(self);
  if (self->weakreflist) PyObject_ClearWeakRefs((PyObject *)self);
  tensorbase_clear(self);
  /* a heap subclass (wb.Tensor) has its type reference dropped by subtype_dealloc, not here */
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef tensorbase_members[] = {
  {"_f", T_OBJECT, offsetof(TensorBase, f), 0, "raw DLPack fields"},
  {"_data", T_OBJECT, offsetof(TensorBase, data), 0, "data pointer with byte_offset applied"},
  {"_etype", T_OBJECT, offsetof(TensorBase, etype), 0, "element type"},
  {"_stride", T_OBJECT, offsetof(TensorBase, stride), 0, "strides"},
  {"_align", T_OBJECT, offsetof(TensorBase, align), 0, "assumed alignment in bytes"},
  {"_marks", T_OBJECT, offsetof(TensorBase, marks), 0, "dynamic marking"},
  {"_order", T_OBJECT, offsetof(TensorBase, order), 0, "last stride order"},
  {"_layout", T_OBJECT, offsetof(TensorBase, layout), 0, "cached layout"},
  {NULL},
};

static PyTypeObject TensorBaseType = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "workbench.dlpack._native.TensorBase",
  .tp_basicsize = sizeof(TensorBase),
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
  .tp_dealloc = (destructor)tensorbase_dealloc,
  .tp_traverse = (traverseproc)tensorbase_traverse,
  .tp_clear = (inquiry)tensorbase_clear,
  .tp_free = PyObject_GC_Del,
  .tp_members = tensorbase_members,
  .tp_weaklistoffset = offsetof(TensorBase, weakreflist),
  .tp_new = PyType_GenericNew,
  .tp_doc = "C storage of wb.Tensor.",
};

/* Tables installed once from Python. */
static PyObject *g_exchange = NULL;   /* {type: (fnptr, version, torch_checks)} */
static PyObject *g_packed = NULL;     /* {packed dtype: ElementType} */
static PyObject *g_cpu_types = NULL;  /* {type: True} for producers that only live on the CPU */
static PyObject *g_cuda_types = NULL; /* {type: True} for producers that only live on CUDA devices */
static PyObject *s_stream, *s_kwnames_stream, *g_no_sync;
static PyObject *s_requires_grad, *s_is_conj, *s_is_neg, *s_dlpack, *s_max_version, *s_kwnames, *g_maxver;

static PyObject *set_tables(PyObject *mod, PyObject *args) {
  PyObject *ex, *packed, *cpu, *cuda;
  if (!PyArg_ParseTuple(args, "O!O!O!O!", &PyDict_Type, &ex, &PyDict_Type, &packed, &PyDict_Type, &cpu,
                        &PyDict_Type, &cuda)) return NULL;
  Py_XSETREF(g_cuda_types, Py_NewRef(cuda));
  Py_XSETREF(g_exchange, Py_NewRef(ex));
  Py_XSETREF(g_packed, Py_NewRef(packed));
  Py_XSETREF(g_cpu_types, Py_NewRef(cpu));
  Py_RETURN_NONE;
}

static WbHazardCache g_hazards;  /* torch's hazards: see _dlpack_structs.h */

/* fast_from_dlpack(obj, assumed_align_or_None, cls) -> Tensor | fields tuple | None
 *   Tensor: converted and every check passed;
 *   tuple : decoded but unusual (Python validates and raises or builds);
 *   None  : not a producer this path knows (Python does the general protocol). */
static PyObject *fast_from_dlpack(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 3) { PyErr_SetString(PyExc_TypeError, "fast_from_dlpack takes 3 arguments"); return NULL; }
  PyObject *obj = args[0], *assumed = args[1], *cls = args[2];
  if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, &TensorBaseType)) {
    PyErr_SetString(PyExc_TypeError, "fast_from_dlpack: cls must subclass TensorBase");
    return NULL;
  }
  if (!g_exchange) Py_RETURN_NONE;
  PyObject *f = NULL;
  PyObject *ex = PyDict_GetItemWithError(g_exchange, (PyObject *)Py_TYPE(obj));
  if (ex) {
    Py_INCREF(ex);  /* the checks below run Python code, which could drop the table entry */
    if (PyTuple_GET_ITEM(ex, 2) == Py_True && wb_torch_hazard(&g_hazards, obj)) {
      Py_DECREF(ex);
      Py_RETURN_NONE;
    }
    void *fp = PyLong_AsVoidPtr(PyTuple_GET_ITEM(ex, 0));
    if (!fp) { Py_DECREF(ex); return NULL; }
    DLTensor t;
    memset(&t, 0, sizeof t);
    if (((dltensor_from_py_object_no_sync_t)fp)((void *)obj, &t) != 0) {
      Py_DECREF(ex);
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_BufferError, "The producer's dltensor_from_py_object_no_sync failed.");
      return NULL;
    }
    f = decode(obj, PyTuple_GET_ITEM(ex, 1), 0, &t);
    Py_DECREF(ex);
  } else if (PyErr_Occurred()) {
    return NULL;
  } else if (PyDict_GetItemWithError(g_cpu_types, (PyObject *)Py_TYPE(obj)) ||
             (!PyErr_Occurred() && PyDict_GetItemWithError(g_cuda_types, (PyObject *)Py_TYPE(obj)))) {
    /* CPU producers take no stream; CUDA-only producers get stream=-1 (the spec's "no sync") */
    int cuda = PyDict_GetItemWithError(g_cuda_types, (PyObject *)Py_TYPE(obj)) != NULL;
    PyObject *meth = PyObject_GetAttr(obj, s_dlpack);
    if (!meth) return NULL;
    PyObject *cargs[2] = {g_maxver, g_no_sync};
    PyObject *cap = PyObject_Vectorcall(meth, cargs, 0, cuda ? s_kwnames_stream : s_kwnames);
    Py_DECREF(meth);
    if (!cap) {
      /* a producer that predates max_version: the Python path retries without it */
      if (PyErr_ExceptionMatches(PyExc_TypeError)) { PyErr_Clear(); Py_RETURN_NONE; }
      return NULL;
    }
    f = consume(mod, cap);
    Py_DECREF(cap);
  } else {
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
  }
  if (!f) return NULL;
  /* The usual case, checked here; anything else goes back to Python with its fields. */
  PyObject *shape = PyTuple_GET_ITEM(f, 10), *strides = PyTuple_GET_ITEM(f, 11);
  int dev = (int)PyLong_AsLong(PyTuple_GET_ITEM(f, 4));
  unsigned long long raw = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(f, 3));
  unsigned long long off = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(f, 12));
  PyObject *etype = PyDict_GetItemWithError(g_packed, PyTuple_GET_ITEM(f, 13));
  if (!etype || shape == Py_None || strides == Py_None || raw == 0 ||
      !(dev == 1 || dev == 2 || dev == 3 || dev == 13)) {
    if (PyErr_Occurred()) { Py_DECREF(f); return NULL; }
    return f;
  }
  Py_ssize_t n = PyTuple_GET_SIZE(shape);
  for (Py_ssize_t i = 0; i < n; i++) {
    if (PyLong_AsLongLong(PyTuple_GET_ITEM(shape, i)) < 0) return f;
  }
  /* sub-byte elements in a legacy capsule: packed or padded cannot be told (Python refuses) */
  if (PyTuple_GET_ITEM(f, 1) == Py_None && ((PyLong_AsUnsignedLong(PyTuple_GET_ITEM(f, 13)) >> 8) & 0xFF) < 8) return f;
  long long align;
  if (assumed == Py_None) {
    unsigned long packed = PyLong_AsUnsignedLong(PyTuple_GET_ITEM(f, 13));
    long long bits = (long long)((packed >> 8) & 0xFF) * (long long)(packed >> 16);
    align = bits >= 8 ? bits >> 3 : 1;
  } else {
    align = PyLong_AsLongLong(assumed);
    if (align <= 0) { if (PyErr_Occurred()) PyErr_Clear(); return f; }
  }
  unsigned long long data = raw + off;
  if (data % (unsigned long long)align) return f;
  etype = Py_NewRef(etype);  /* owned before anything can run a collection */
  TensorBase *t = (TensorBase *)((PyTypeObject *)cls)->tp_alloc((PyTypeObject *)cls, 0);
  if (!t) { Py_DECREF(etype); Py_DECREF(f); return NULL; }
  t->etype = etype;
  t->data = PyLong_FromUnsignedLongLong(data);
  t->align = PyLong_FromLongLong(align);
  if (!t->data || !t->align) { Py_DECREF(t); Py_DECREF(f); return NULL; }
  t->f = f;
  t->stride = Py_NewRef(strides);
  t->marks = Py_NewRef(Py_None);
  t->order = Py_NewRef(Py_None);
  t->layout = Py_NewRef(Py_None);
  return (PyObject *)t;
}

/* ---- PointerBase and make_ptr ---------------------------------------------------------------
 * wb.make_ptr is this C function: the usual call (an ElementType, an int address, a known
 * memory space, a power-of-two alignment that divides the address) is built here; anything else
 * goes to the Python constructor, which raises the precise error. */
/* PointerBase: see _dlpack_structs.h */

static int pointerbase_traverse(PointerBase *self, visitproc visit, void *arg) {
  Py_VISIT(self->element_type); Py_VISIT(self->address); Py_VISIT(self->memspace); Py_VISIT(self->assumed_align);
  return 0;
}

static int pointerbase_clear(PointerBase *self) {
  Py_CLEAR(self->element_type); Py_CLEAR(self->address); Py_CLEAR(self->memspace); Py_CLEAR(self->assumed_align);
  return 0;
}

static void pointerbase_dealloc(PointerBase *self) {
  PyObject_GC_UnTrack(self);
  pointerbase_clear(self);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef pointerbase_members[] = {
  {"element_type", T_OBJECT, offsetof(PointerBase, element_type), 0, "element type"},
  {"address", T_OBJECT, offsetof(PointerBase, address), 0, "address in bytes"},
  {"memspace", T_OBJECT, offsetof(PointerBase, memspace), 0, "address space"},
  {"assumed_align", T_OBJECT, offsetof(PointerBase, assumed_align), 0, "alignment in bytes"},
  {"read_only", T_BOOL, offsetof(PointerBase, read_only), 0, "points into read-only memory"},
  {NULL},
};

static PyTypeObject PointerBaseType = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "workbench.dlpack._native.PointerBase",
  .tp_basicsize = sizeof(PointerBase),
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
  .tp_dealloc = (destructor)pointerbase_dealloc,
  .tp_traverse = (traverseproc)pointerbase_traverse,
  .tp_clear = (inquiry)pointerbase_clear,
  .tp_free = PyObject_GC_Del,
  .tp_members = pointerbase_members,
  .tp_new = PyType_GenericNew,
  .tp_doc = "C storage of wb.Pointer.",
};

static PyObject *g_ptr_cls = NULL, *g_etype_cls = NULL, *g_memspaces = NULL, *s_natural_align, *s_generic;

static PyObject *set_pointer_types(PyObject *mod, PyObject *args) {
  PyObject *cls, *etype_cls, *spaces;
  if (!PyArg_ParseTuple(args, "OOO!", &cls, &etype_cls, &PyFrozenSet_Type, &spaces)) return NULL;
  if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, &PointerBaseType) || !PyType_Check(etype_cls)) {
    PyErr_SetString(PyExc_TypeError, "set_pointer_types: expected a PointerBase subclass and a type");
    return NULL;
  }
  Py_XSETREF(g_ptr_cls, Py_NewRef(cls));
  Py_XSETREF(g_etype_cls, Py_NewRef(etype_cls));
  Py_XSETREF(g_memspaces, Py_NewRef(spaces));
  Py_RETURN_NONE;
}

static PyObject *make_ptr(PyObject *mod, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
  PyObject *a[4] = {NULL, NULL, s_generic, Py_None};
  static const char *names[4] = {"dtype", "value", "mem_space", "assumed_align"};
  if (nargs > 4) { PyErr_SetString(PyExc_TypeError, "make_ptr takes at most 4 arguments"); return NULL; }
  for (Py_ssize_t i = 0; i < nargs; i++) a[i] = args[i];
  Py_ssize_t nk = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < nk; k++) {
    const char *kw = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k));
    int found = 0;
    for (int i = 0; i < 4 && kw; i++) {
      if (strcmp(kw, names[i]) == 0) {
        if (i < nargs) { PyErr_Format(PyExc_TypeError, "make_ptr() got multiple values for argument '%s'", kw); return NULL; }
        a[i] = args[nargs + k]; found = 1; break;
      }
    }
    if (!found) { PyErr_Format(PyExc_TypeError, "make_ptr() got an unexpected keyword argument '%s'", kw ? kw : "?"); return NULL; }
  }
  if (!a[0] || !a[1]) { PyErr_SetString(PyExc_TypeError, "make_ptr() needs dtype and value"); return NULL; }
  if (!g_ptr_cls) { PyErr_SetString(PyExc_RuntimeError, "workbench.tensor was not imported"); return NULL; }
  PyObject *dtype = a[0], *value = a[1], *space = a[2], *align = a[3];
  int usual = Py_TYPE(dtype) == (PyTypeObject *)g_etype_cls && PyLong_CheckExact(value) &&
              PyUnicode_CheckExact(space) && PySet_Contains(g_memspaces, space) == 1;
  long long addr = 0, al = 0;
  if (usual) {
    addr = PyLong_AsLongLong(value);
    if (addr < 0 || PyErr_Occurred()) { PyErr_Clear(); usual = 0; }
  }
  if (usual) {
    if (align == Py_None) {
      PyObject *na = PyObject_GetAttr(dtype, s_natural_align);
      if (!na) return NULL;
      al = PyLong_AsLongLong(na);
      Py_DECREF(na);
      if (al == -1 && PyErr_Occurred()) PyErr_Clear();  /* not usual: the Python constructor decides */
    } else if (PyLong_CheckExact(align)) {
      al = PyLong_AsLongLong(align);
      if (PyErr_Occurred()) { PyErr_Clear(); al = 0; }
    }
    usual = al > 0 && (al & (al - 1)) == 0 && addr % al == 0;
  }
  if (!usual)  /* the Python constructor raises the precise error (or accepts, e.g. an int-like address) */
    return PyObject_CallFunctionObjArgs(g_ptr_cls, dtype, value, space, align, NULL);
  PointerBase *p = (PointerBase *)((PyTypeObject *)g_ptr_cls)->tp_alloc((PyTypeObject *)g_ptr_cls, 0);
  if (!p) return NULL;
  p->element_type = Py_NewRef(dtype);
  p->address = Py_NewRef(value);
  p->memspace = Py_NewRef(space);
  p->assumed_align = align == Py_None ? PyLong_FromLongLong(al) : Py_NewRef(align);
  if (!p->assumed_align) { Py_DECREF(p); return NULL; }
  return (PyObject *)p;
}

static PyMethodDef methods[] = {
  {"consume", (PyCFunction)consume, METH_O, "Consume a DLPack capsule: rename it and return its decoded fields."},
  {"exchange", (PyCFunction)(void (*)(void))exchange, METH_FASTCALL, "Call dltensor_from_py_object_no_sync."},
  {"export", (PyCFunction)export_, METH_VARARGS, "Build a DLPack capsule whose deleter releases owner."},
  {"make_ptr", (PyCFunction)(void (*)(void))make_ptr, METH_FASTCALL | METH_KEYWORDS,
   "make_ptr(dtype, value, mem_space='generic', assumed_align=None) -> wb.Pointer"},
  {"set_pointer_types", (PyCFunction)set_pointer_types, METH_VARARGS, "Install wb.Pointer and wb.ElementType."},
  {"set_tables", (PyCFunction)set_tables, METH_VARARGS, "Install the exchange, dtype and CPU-type tables."},
  {"fast_from_dlpack", (PyCFunction)(void (*)(void))fast_from_dlpack, METH_FASTCALL, "The from_dlpack fast path."},
  {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "_native", NULL, -1, methods};

PyMODINIT_FUNC PyInit__native(void) {
  if (PyType_Ready(&OwnerType) < 0) return NULL;
  if (PyType_Ready(&TensorBaseType) < 0) return NULL;
  if (PyType_Ready(&PointerBaseType) < 0) return NULL;
  s_natural_align = PyUnicode_InternFromString("natural_align");
  s_generic = PyUnicode_InternFromString("generic");
  if (!s_natural_align || !s_generic) return NULL;
  s_requires_grad = PyUnicode_InternFromString("requires_grad");
  s_is_conj = PyUnicode_InternFromString("is_conj");
  s_is_neg = PyUnicode_InternFromString("is_neg");
  s_dlpack = PyUnicode_InternFromString("__dlpack__");
  s_max_version = PyUnicode_InternFromString("max_version");
  s_kwnames = Py_BuildValue("(O)", s_max_version);
  g_maxver = Py_BuildValue("(ii)", OUR_MAJOR, OUR_MINOR);
  s_stream = PyUnicode_InternFromString("stream");
  s_kwnames_stream = Py_BuildValue("(OO)", s_max_version, s_stream);
  g_no_sync = PyLong_FromLong(-1);
  if (!s_stream || !s_kwnames_stream || !g_no_sync) return NULL;
  if (!s_requires_grad || !s_is_conj || !s_is_neg || !s_dlpack || !s_kwnames || !g_maxver) return NULL;
  PyObject *m = PyModule_Create(&moduledef);
  if (!m) return NULL;
  Py_INCREF(&OwnerType);
  if (PyModule_AddObject(m, "Owner", (PyObject *)&OwnerType) < 0) { Py_DECREF(&OwnerType); Py_DECREF(m); return NULL; }
  Py_INCREF(&PointerBaseType);
  if (PyModule_AddObject(m, "PointerBase", (PyObject *)&PointerBaseType) < 0) { Py_DECREF(&PointerBaseType); Py_DECREF(m); return NULL; }
  Py_INCREF(&TensorBaseType);
  if (PyModule_AddObject(m, "TensorBase", (PyObject *)&TensorBaseType) < 0) { Py_DECREF(&TensorBaseType); Py_DECREF(m); return NULL; }
  return m;
}
