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

static PyObject *g_maxver;  /* (OUR_MAJOR, OUR_MINOR): what we ask producers for */

static const char NAME_V[] = "dltensor_versioned";
static const char NAME_L[] = "dltensor";
static const char USED_V[] = "used_dltensor_versioned";
/* A capsule for the workbench's own consumers only (Tensor.__wb_dlpack__): it skips the export rule's
 * refusals, so no foreign consumer (torch aborts on negative strides, ignores READ_ONLY) may take it. */
static const char NAME_WB[] = "wb_dltensor_versioned";
static const char USED_WB[] = "used_wb_dltensor_versioned";
static const char USED_L[] = "used_dltensor";

/* ---- Owner: calls the producer's deleter exactly once, when the last view dies ---------- */
typedef struct { PyObject_HEAD void *managed; int versioned; } Owner;

/* Call a consumed tensor's deleter.  A refused import releases with its BufferError pending; the
 * deleter may run Python code (a ctypes producer), which must not see it: save it and restore it
 * afterwards.  who: named in the report if the deleter raises (it must not). */
static void release_managed(void *m, int versioned, PyObject *who) {
  if (!m) return;
  PyObject *et, *ev, *tb;
  PyErr_Fetch(&et, &ev, &tb);
  if (versioned) {
    DLManagedTensorVersioned *mv = (DLManagedTensorVersioned *)m;
    if (mv->deleter) mv->deleter(mv);
  } else {
    DLManagedTensor *ml = (DLManagedTensor *)m;
    if (ml->deleter) ml->deleter(ml);
  }
  if (PyErr_Occurred()) PyErr_WriteUnraisable(who);
  PyErr_Restore(et, ev, tb);
}

static void owner_release(Owner *self) {
  void *m = self->managed;
  self->managed = NULL;
  release_managed(m, self->versioned, (PyObject *)self);
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
 *   phase 5  validate_address   data + byte_offset + the byte span stays inside [0, 2**56): no process
 *                               can map more (x86-64 and RISC-V user space end below 2**56 with 57-bit
 *                               virtual addresses, AArch64 at 2**52; CUDA's unified addresses are user
 *                               addresses), so byte_offset 2**63 or data near 2**64 is refused here, not
 *                               dereferenced by numpy or torch later.  A tagged AArch64 pointer (top byte
 *                               set) is refused too.
 * shape == NULL (ndim > 0) is not read: it is decoded as None and Python refuses it. */
#define WB_MAX_NDIM 64
#define WB_MAX_ADDRESS ((uint64_t)1 << 56)

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
  /* lo <= 0 <= hi; the bytes from element lo to the end of element hi must lie in [0, 2**64) */
  __int128 lo_b = (__int128)lo * (__int128)bytes, hi_b = count ? ((__int128)hi + 1) * (__int128)bytes : 0;
  if (count && ((__int128)base + lo_b < 0 || (__int128)base + hi_b > ((__int128)1 << 64) ||
                hi_b - lo_b > (__int128)INT64_MAX)) {
    PyErr_Format(PyExc_BufferError, "Expected a DLTensor whose elements lie inside the 64-bit address space, but "
                 "data + byte_offset = %llu with element offsets %lld..%lld of %llu bytes does not.",
                 (unsigned long long)base, (long long)lo, (long long)hi, (unsigned long long)bytes);
    return -1;
  }
  /* an empty tensor reads nothing, but its pointer is handed on all the same */
  if ((__int128)base + hi_b <= (__int128)WB_MAX_ADDRESS) return 0;
  PyErr_Format(PyExc_BufferError, "Expected a DLTensor whose elements lie below 2**56 (the end of the largest user "
               "address space a process can map), but data = %llu + byte_offset = %llu reaches %llu.",
               (unsigned long long)(uintptr_t)t->data, (unsigned long long)t->byte_offset,
               (unsigned long long)(base + (uint64_t)hi_b));
  return -1;
}

/* The usual tensor in one pass: ndim and dtype in range, every extent > 0, strides given, and the element
 * count, the reach of each mode, their sums and the byte span all fitting, below 2**56.  1: it passes every
 * phase below (so they need not run); 0: not shown here, the phases decide (with their messages). */
static inline int plainly_valid(const DLTensor *t) {
  int n = t->ndim;
  if (n < 0 || n > WB_MAX_NDIM || !t->dtype.bits || !t->dtype.lanes || (n && (!t->shape || !t->strides))) return 0;
  int64_t count = 1, lo = 0, hi = 0;
  for (int i = 0; i < n; i++) {
    int64_t s = t->shape[i], reach;
    if (s <= 0 || __builtin_mul_overflow(count, s, &count) || __builtin_mul_overflow(s - 1, t->strides[i], &reach) ||
        (reach < 0 ? __builtin_add_overflow(lo, reach, &lo) : __builtin_add_overflow(hi, reach, &hi)))
      return 0;
  }
  uint64_t base, bytes = ((uint64_t)t->dtype.bits * t->dtype.lanes + 7) / 8;
  if (__builtin_add_overflow((uint64_t)(uintptr_t)t->data, t->byte_offset, &base)) return 0;
  __int128 lo_b = (__int128)lo * (__int128)bytes, hi_b = ((__int128)hi + 1) * (__int128)bytes;
  return (__int128)base + lo_b >= 0 && (__int128)base + hi_b <= (__int128)WB_MAX_ADDRESS &&
         hi_b - lo_b <= (__int128)INT64_MAX;
}

static int validate_dltensor(const DLTensor *t) {
  int64_t count, lo, hi;
  if (plainly_valid(t)) return 0;
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

/* The field tuple (owner, version, flags, data, device_type, device_id, ndim, code, bits, lanes, shape,
 * strides, byte_offset, packed_dtype) of a validated DLTensor: the general path's input and a native
 * tensor's _f.  version is (major, minor) or None (legacy); strides is None when the producer sent
 * NULL; shape is None when ndim > 0 and the producer sent NULL (the Python side rejects it).
 * The last item packs (code, bits, lanes) into one int: a single dict lookup finds the element type.
 * Built item by item: Py_BuildValue's format parsing was most of from_dlpack's cost. */
static PyObject *fields_tuple(PyObject *owner, PyObject *version, uint64_t flags, const DLTensor *t) {
  int n = t->ndim;
  PyObject *shape, *strides;
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
  PyObject *f = PyTuple_New(14);
  if (!f) { Py_DECREF(shape); Py_DECREF(strides); return NULL; }
  PyTuple_SET_ITEM(f, 0, Py_NewRef(owner ? owner : Py_None));
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

/* Validate, then decode: no field is read through before validate_dltensor has passed. */
static PyObject *decode(PyObject *owner, PyObject *version, uint64_t flags, const DLTensor *t) {
  if (validate_dltensor(t) < 0) return NULL;
  return fields_tuple(owner, version, flags, t);
}

/* Take a capsule's tensor: rename the capsule (from here on the producer's capsule destructor leaves
 * the tensor to us) and return it; *version: a new reference ((major, minor) or None), *t, *flags its
 * fields.  Whoever gets it calls release_managed once.  A foreign major version is released here. */
static void *take_capsule(PyObject *capsule, int *versioned, PyObject **version, uint64_t *flags, const DLTensor **t) {
  if (!PyCapsule_CheckExact(capsule)) {
    PyErr_Format(PyExc_TypeError, "Expected a DLPack PyCapsule, but got %s.", Py_TYPE(capsule)->tp_name);
    return NULL;
  }
  const char *name = PyCapsule_GetName(capsule);
  int ours = name && strcmp(name, NAME_WB) == 0;
  if (name && (ours || strcmp(name, NAME_V) == 0)) *versioned = 1;
  else if (name && strcmp(name, NAME_L) == 0) *versioned = 0;
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
  /* the version first: a failed allocation must not consume */
  if (*versioned) {
    DLManagedTensorVersioned *m = (DLManagedTensorVersioned *)p;
    *version = m->version.major == OUR_MAJOR && m->version.minor == OUR_MINOR
                   ? Py_NewRef(g_maxver) : Py_BuildValue("(II)", m->version.major, m->version.minor);
  } else {
    *version = Py_NewRef(Py_None);
  }
  if (!*version) return NULL;
  if (PyCapsule_SetName(capsule, ours ? USED_WB : *versioned ? USED_V : USED_L) != 0) { Py_CLEAR(*version); return NULL; }
  if (*versioned) {
    DLManagedTensorVersioned *m = (DLManagedTensorVersioned *)p;
    if (m->version.major != OUR_MAJOR) {
      unsigned major = m->version.major, minor = m->version.minor;
      Py_CLEAR(*version);
      PyErr_Format(PyExc_BufferError,
                   "Expected a DLPack capsule of major version %d, but got version %u.%u; "
                   "its fields cannot be read safely.", OUR_MAJOR, major, minor);
      release_managed(p, 1, capsule);  /* the spec: call the deleter, read nothing else */
      return NULL;
    }
    *flags = m->flags;
    *t = &m->dl_tensor;
  } else {
    *flags = 0;
    *t = &((DLManagedTensor *)p)->dl_tensor;
  }
  return p;
}

/* An Owner for a taken tensor (released at once if the Owner cannot be made). */
static PyObject *new_owner(void *m, int versioned) {
  Owner *owner = PyObject_New(Owner, &OwnerType);
  if (!owner) { release_managed(m, versioned, Py_None); return NULL; }
  owner->managed = m;
  owner->versioned = versioned;
  return (PyObject *)owner;
}

static PyObject *consume(PyObject *mod, PyObject *capsule) {
  PyObject *version;
  uint64_t flags;
  const DLTensor *t;
  int versioned;
  void *m = take_capsule(capsule, &versioned, &version, &flags, &t);
  if (!m) return NULL;
  PyObject *owner = new_owner(m, versioned);
  if (!owner) { Py_DECREF(version); return NULL; }
  PyObject *r = decode(owner, version, flags, t);
  Py_DECREF(version);
  Py_DECREF(owner);  /* a refusal runs the deleter here, its error saved around it */
  return r;
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
  const char *vname = PyCapsule_IsValid(capsule, NAME_V) ? NAME_V : PyCapsule_IsValid(capsule, NAME_WB) ? NAME_WB : NULL;
  if (vname) {
    DLManagedTensorVersioned *m = PyCapsule_GetPointer(capsule, vname);
    if (m && m->deleter) m->deleter(m);
  } else if (PyCapsule_IsValid(capsule, NAME_L)) {
    DLManagedTensor *m = PyCapsule_GetPointer(capsule, NAME_L);
    if (m && m->deleter) m->deleter(m);
  }
}

/* export(owner, versioned, flags, data, device_type, device_id, code, bits, lanes, shape, strides, byte_offset,
 *        private=False): private capsules are versioned and named for the workbench's consumers alone */
static PyObject *export_(PyObject *mod, PyObject *args) {
  PyObject *owner, *shape, *strides;
  int versioned, device_type, device_id, code, bits, lanes, private_ = 0;
  unsigned long long flags, data, byte_offset;
  if (!PyArg_ParseTuple(args, "OpKKiiiiiO!O!K|p", &owner, &versioned, &flags, &data, &device_type, &device_id,
                        &code, &bits, &lanes, &PyTuple_Type, &shape, &PyTuple_Type, &strides, &byte_offset, &private_))
    return NULL;
  if (private_) versioned = 1;
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
    PyObject *c = PyCapsule_New(&e->mv, private_ ? NAME_WB : NAME_V, capsule_destructor);
    if (!c) { Py_DECREF(owner); PyMem_RawFree(e); }
    return c;
  }
  e->ml.manager_ctx = e; e->ml.deleter = deleter_l;
  PyObject *c = PyCapsule_New(&e->ml, NAME_L, capsule_destructor);
  if (!c) { Py_DECREF(owner); PyMem_RawFree(e); }
  return c;
}


/* ---- TensorBase and from_dlpack --------------------------------------------------------------
 * wb.Tensor subclasses TensorBase (see _dlpack_structs.h).  wb.from_dlpack is the C function below:
 * the usual producers (torch through its exchange API, numpy and cupy through their capsules) are
 * validated and built here as native tensors, in one allocation; anything unusual is decoded and
 * handed to Python (_from_fields), which validates it with one precise message per rule; anything
 * unknown (a stream, another producer, a bad argument) goes to the general Python path.
 */
#include <structmember.h>

/* Cycle collection: a producer can hold its own view (torch_tensor.view = wb.from_dlpack(torch_tensor)),
 * and the tensor holds the producer: without traverse/clear such a pair would never be freed. */
static int tensorbase_traverse(TensorBase *self, visitproc visit, void *arg) {
  Py_VISIT(self->f); Py_VISIT(self->data); Py_VISIT(self->etype); Py_VISIT(self->stride);
  Py_VISIT(self->align); Py_VISIT(self->marks); Py_VISIT(self->order); Py_VISIT(self->layout);
  Py_VISIT(self->owner); Py_VISIT(self->version);
  return 0;
}

static int tensorbase_clear(TensorBase *self) {
  self->native = 0;  /* its owner goes: nothing may be rebuilt from the C fields */
  Py_CLEAR(self->f); Py_CLEAR(self->data); Py_CLEAR(self->etype); Py_CLEAR(self->stride);
  Py_CLEAR(self->align); Py_CLEAR(self->marks); Py_CLEAR(self->order); Py_CLEAR(self->layout);
  Py_CLEAR(self->owner); Py_CLEAR(self->version);
  return 0;
}

static void tensorbase_dealloc(TensorBase *self) {
  PyObject_GC_UnTrack(self);
  if (self->weakreflist) PyObject_ClearWeakRefs((PyObject *)self);
  tensorbase_clear(self);
  if (self->dims && self->dims != self->inline_dims) PyMem_Free(self->dims);
  self->dims = NULL;
  void *m = self->managed;
  self->managed = NULL;
  release_managed(m, self->managed_versioned, (PyObject *)self);
  /* a heap subclass (wb.Tensor) has its type reference dropped by subtype_dealloc, not here */
  Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The DLTensor a native tensor describes (its dims are the tensor's own copy). */
static DLTensor native_dltensor(const TensorBase *t) {
  DLTensor d;
  d.data = (void *)(uintptr_t)t->raw;
  d.device.device_type = t->device_type;
  d.device.device_id = t->device_id;
  d.ndim = t->ndim;
  d.dtype.code = (uint8_t)(t->packed & 0xFF);
  d.dtype.bits = (uint8_t)((t->packed >> 8) & 0xFF);
  d.dtype.lanes = (uint16_t)(t->packed >> 16);
  d.shape = t->dims;  /* never NULL: a 0-d tensor has () for both */
  d.strides = t->null_strides ? NULL : t->dims + t->ndim;
  d.byte_offset = t->byte_offset;
  return d;
}

/* Build whichever of _f, _data, _stride, _align a native tensor has not built yet. */
static int materialize(TensorBase *t) {
  if (!t->native) return 0;
  if (t->managed) {  /* _f[0] is an Owner: it takes the consumed tensor over */
    Owner *o = PyObject_New(Owner, &OwnerType);
    if (!o) return -1;
    o->managed = t->managed;
    o->versioned = t->managed_versioned;
    t->managed = NULL;
    Py_XSETREF(t->owner, (PyObject *)o);
  }
  if (!t->f) {
    DLTensor d = native_dltensor(t);
    t->f = fields_tuple(t->owner, t->version ? t->version : Py_None, t->flags, &d);
    if (!t->f) return -1;
  }
  if (!t->stride) t->stride = PyTuple_GET_ITEM(t->f, 11) == Py_None ? PyTuple_New(0) : Py_NewRef(PyTuple_GET_ITEM(t->f, 11));
  if (!t->stride) return -1;
  if (!t->data && !(t->data = PyLong_FromUnsignedLongLong(t->addr))) return -1;
  if (!t->align && !(t->align = PyLong_FromLongLong(t->calign))) return -1;
  return 0;
}

/* An unset slot reads as None, as the members these getters replaced did. */
static PyObject *tb_get(TensorBase *t, PyObject **slot) {
  if (!*slot && materialize(t) < 0) return NULL;
  return Py_NewRef(*slot ? *slot : Py_None);
}

/* A tensor from a capsule is born untracked by the collector (see from_dlpack); whatever is stored
 * in it later that could lead back to it puts it under the collector's watch. */
static void track_if_needed(TensorBase *t, PyObject *v) {
  if (v && PyObject_IS_GC(v) && !PyObject_GC_IsTracked((PyObject *)t)) PyObject_GC_Track((PyObject *)t);
}

/* Setting any of the four from Python makes the Python objects the truth from then on. */
static int tb_set(TensorBase *t, PyObject *v, PyObject **slot) {
  if (materialize(t) < 0) return -1;
  t->native = 0;
  track_if_needed(t, v);
  Py_XSETREF(*slot, Py_XNewRef(v));
  return 0;
}

static int tb_set_plain(TensorBase *t, PyObject *v, PyObject **slot) {
  track_if_needed(t, v);
  Py_XSETREF(*slot, Py_XNewRef(v));
  return 0;
}

static PyObject *tb_get_f(TensorBase *t, void *c) { return tb_get(t, &t->f); }
static PyObject *tb_get_data(TensorBase *t, void *c) { return tb_get(t, &t->data); }
static PyObject *tb_get_stride(TensorBase *t, void *c) { return tb_get(t, &t->stride); }
static PyObject *tb_get_align(TensorBase *t, void *c) { return tb_get(t, &t->align); }
static int tb_set_f(TensorBase *t, PyObject *v, void *c) { return tb_set(t, v, &t->f); }
static int tb_set_data(TensorBase *t, PyObject *v, void *c) { return tb_set(t, v, &t->data); }
static int tb_set_stride(TensorBase *t, PyObject *v, void *c) { return tb_set(t, v, &t->stride); }
static int tb_set_align(TensorBase *t, PyObject *v, void *c) { return tb_set(t, v, &t->align); }
static PyObject *tb_get_etype(TensorBase *t, void *c) { return tb_get(t, &t->etype); }
static PyObject *tb_get_marks(TensorBase *t, void *c) { return tb_get(t, &t->marks); }
static PyObject *tb_get_order(TensorBase *t, void *c) { return tb_get(t, &t->order); }
static PyObject *tb_get_layout(TensorBase *t, void *c) { return tb_get(t, &t->layout); }
static int tb_set_etype(TensorBase *t, PyObject *v, void *c) { return tb_set_plain(t, v, &t->etype); }
static int tb_set_marks(TensorBase *t, PyObject *v, void *c) { return tb_set_plain(t, v, &t->marks); }
static int tb_set_order(TensorBase *t, PyObject *v, void *c) { return tb_set_plain(t, v, &t->order); }
static int tb_set_layout(TensorBase *t, PyObject *v, void *c) { return tb_set_plain(t, v, &t->layout); }

static PyGetSetDef tensorbase_getset[] = {
  {"_f", (getter)tb_get_f, (setter)tb_set_f, "raw DLPack fields", NULL},
  {"_data", (getter)tb_get_data, (setter)tb_set_data, "data pointer with byte_offset applied", NULL},
  {"_stride", (getter)tb_get_stride, (setter)tb_set_stride, "strides", NULL},
  {"_align", (getter)tb_get_align, (setter)tb_set_align, "assumed alignment in bytes", NULL},
  {"_etype", (getter)tb_get_etype, (setter)tb_set_etype, "element type", NULL},
  {"_marks", (getter)tb_get_marks, (setter)tb_set_marks, "dynamic marking", NULL},
  {"_order", (getter)tb_get_order, (setter)tb_set_order, "last stride order", NULL},
  {"_layout", (getter)tb_get_layout, (setter)tb_set_layout, "cached layout", NULL},
  {NULL},
};

/* ---- marking in C ----------------------------------------------------------------------------
 * t.mark_layout_dynamic(leading_dim=None): the common call is served here, in one C call that holds
 * the GIL throughout, so that marks, order and cached layout change together without a lock: a
 * from_dlpack tensor (marks None, or a previous layout/compact mark) whose leading dimension is the one
 * mode of stride 1 (or none has stride 1), or an int naming a stride-1 mode.  Everything else (a
 * make_tensor tensor, several stride-1 modes, a bad leading_dim) goes to Tensor._mark_layout_dynamic_slow,
 * the one place of the rules' messages.  The marks are shared constant tuples ("layout", ld), as the
 * Python path would store them; the kernel launcher reads them as it reads the Python path's. */
static PyObject *s_layout_tag, *s_compact_tag, *s_mld_slow, *s_leading_dim;
static PyObject *g_layout_marks[WB_MAX_NDIM + 1];  /* [ld + 1]: ("layout", ld); [0]: ("layout", None) */

/* borrowed; NULL with an error set */
static PyObject *layout_marks(int ld) {
  PyObject **slot = &g_layout_marks[ld + 1];
  if (!*slot) {
    PyObject *v = ld < 0 ? Py_NewRef(Py_None) : PyLong_FromLong(ld);
    if (!v) return NULL;
    *slot = PyTuple_Pack(2, s_layout_tag, v);
    Py_DECREF(v);
  }
  return *slot;
}

/* The strides of a from_dlpack tensor as C values: *n modes, *st (the tensor's own or buf).
 * 0: not readable here (a make_tensor layout, non-int strides): the Python path decides. */
static int tb_strides(TensorBase *t, int *n, const int64_t **st, int64_t *buf) {
  if (t->native) {
    *n = t->ndim;
    *st = t->dims + t->ndim;
    return t->ndim == 0 || !t->null_strides;
  }
  if (!t->f || !PyTuple_CheckExact(t->f) || PyTuple_GET_SIZE(t->f) != 14 || !t->stride || !PyTuple_CheckExact(t->stride))
    return 0;
  PyObject *shape = PyTuple_GET_ITEM(t->f, 10);
  Py_ssize_t k = PyTuple_GET_SIZE(t->stride);
  if (!PyTuple_CheckExact(shape) || PyTuple_GET_SIZE(shape) != k || k > WB_MAX_NDIM) return 0;
  for (Py_ssize_t i = 0; i < k; i++) {
    PyObject *d = PyTuple_GET_ITEM(t->stride, i);
    int overflow = 0;
    if (!PyLong_CheckExact(d)) return 0;
    buf[i] = PyLong_AsLongLongAndOverflow(d, &overflow);
    if (overflow || (buf[i] == -1 && PyErr_Occurred())) { PyErr_Clear(); return 0; }
  }
  *n = (int)k;
  *st = buf;
  return 1;
}

/* Store marks and order and drop the cached layout, as one step (the old values are released after
 * all three are stored: their destructors could run Python code). */
static void tb_store_marks(TensorBase *t, PyObject *marks, PyObject *order) {
  PyObject *om = t->marks, *oo = t->order, *ol = t->layout;
  t->marks = Py_NewRef(marks);
  t->order = Py_NewRef(order);
  t->layout = Py_NewRef(Py_None);
  Py_XDECREF(om); Py_XDECREF(oo); Py_XDECREF(ol);
}

static PyObject *tb_mark_layout_dynamic(TensorBase *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
  PyObject *ld_obj = Py_None;
  Py_ssize_t nk = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  int fast = 1;
  if (nargs + nk > 1) fast = 0;
  else if (nargs == 1) ld_obj = args[0];
  else if (nk == 1) {
    if (PyTuple_GET_ITEM(kwnames, 0) == s_leading_dim) ld_obj = args[0];
    else fast = 0;
  }
  PyObject *m = self->marks;
  if (fast && m && m != Py_None) {  /* a make_tensor tensor ("given") or marks of an unknown kind: Python */
    PyObject *kind = PyTuple_CheckExact(m) && PyTuple_GET_SIZE(m) >= 1 ? PyTuple_GET_ITEM(m, 0) : NULL;
    fast = kind == s_layout_tag || kind == s_compact_tag;
  }
  int n = 0, ld = -1;
  const int64_t *st = NULL;
  int64_t buf[WB_MAX_NDIM];
  if (fast) fast = tb_strides(self, &n, &st, buf);
  if (fast && ld_obj == Py_None) {
    int count = 0;
    for (int i = 0; i < n; i++)
      if (st[i] == 1) { count++; ld = i; }
    fast = count <= 1;  /* several: deduced (or refused) by the Python path */
    if (!count) ld = -1;
  } else if (fast) {
    int overflow = 0;
    long long v = PyLong_CheckExact(ld_obj) ? PyLong_AsLongLongAndOverflow(ld_obj, &overflow) : 0;
    if (!PyLong_CheckExact(ld_obj) || overflow || v < -n || v >= n) {
      fast = 0;
    } else {
      if (v < 0) v += n;
      ld = (int)v;
      fast = st[ld] == 1;
    }
  }
  if (!fast) {  /* the Python path, with the call's own arguments: obj._mark_layout_dynamic_slow(...) */
    Py_ssize_t total = nargs + nk;
    if (total < 8) {
      PyObject *full[8];
      full[0] = (PyObject *)self;
      for (Py_ssize_t i = 0; i < total; i++) full[i + 1] = args[i];
      return PyObject_VectorcallMethod(s_mld_slow, full, (size_t)(nargs + 1), kwnames);
    }
    PyObject *meth = PyObject_GetAttr((PyObject *)self, s_mld_slow);
    if (!meth) return NULL;
    PyObject *r = PyObject_Vectorcall(meth, args, (size_t)nargs, kwnames);
    Py_DECREF(meth);
    return r;
  }
  PyObject *marks = layout_marks(ld);
  if (!marks) return NULL;
  track_if_needed(self, marks);  /* as any store of a container (the layout cached later may be watched) */
  tb_store_marks(self, marks, Py_None);
  return Py_NewRef(self);
}

/* t._set_marks(marks, order, expected=<any>): store marks and order and drop the cached layout, as one
 * step; with expected, only if the marks are still that object.  Returns whether it stored. */
static PyObject *tb_set_marks_m(TensorBase *self, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs < 2 || nargs > 3) {
    PyErr_SetString(PyExc_TypeError, "_set_marks(marks, order[, expected]) takes 2 or 3 arguments");
    return NULL;
  }
  if (nargs == 3 && self->marks != args[2] && !(args[2] == Py_None && !self->marks)) Py_RETURN_FALSE;
  track_if_needed(self, args[0]);
  track_if_needed(self, args[1]);
  tb_store_marks(self, args[0], args[1]);
  Py_RETURN_TRUE;
}

/* t._set_layout_if(marks, layout): cache layout, built from marks, only if the marks are still that
 * object (a mark made meanwhile dropped the cache and must not see it refilled with the old marks'
 * layout).  Returns whether it stored. */
static PyObject *tb_set_layout_if(TensorBase *self, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 2) {
    PyErr_SetString(PyExc_TypeError, "_set_layout_if(marks, layout) takes 2 arguments");
    return NULL;
  }
  PyObject *m = self->marks ? self->marks : Py_None;
  if (m != args[0]) Py_RETURN_FALSE;
  track_if_needed(self, args[1]);
  Py_XSETREF(self->layout, Py_NewRef(args[1]));
  Py_RETURN_TRUE;
}

static PyMethodDef tensorbase_methods[] = {
  {"mark_layout_dynamic", (PyCFunction)(void (*)(void))tb_mark_layout_dynamic, METH_FASTCALL | METH_KEYWORDS,
   "mark_layout_dynamic($self, /, leading_dim=None)\n--\n\n"
   "All shapes dynamic; strides dynamic except the leading dimension's (1) and zero or negative\n"
   "strides, which stay static.  Marks in place and returns self (as CuTe DSL).  leading_dim: the mode\n"
   "of stride 1 (negative counts from the end); None deduces it (the one stride-1 mode, or among\n"
   "several the one of extent > 1)."},
  {"_set_marks", (PyCFunction)(void (*)(void))tb_set_marks_m, METH_FASTCALL,
   "_set_marks(marks, order[, expected]) -> bool: store marks and order, drop the cached layout (atomically)."},
  {"_set_layout_if", (PyCFunction)(void (*)(void))tb_set_layout_if, METH_FASTCALL,
   "_set_layout_if(marks, layout) -> bool: cache layout if the marks are still marks."},
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
  .tp_getset = tensorbase_getset,
  .tp_methods = tensorbase_methods,
  .tp_weaklistoffset = offsetof(TensorBase, weakreflist),
  .tp_new = PyType_GenericNew,
  .tp_doc = "C storage of wb.Tensor.",
};

/* Tables installed once from Python (workbench.dlpack.importer, workbench._tensor). */
static PyObject *g_producers = NULL;  /* the importer's PRODUCERS_FOR_C: see wb_producer */
static PyObject *g_packed = NULL;     /* {packed dtype: ElementType} */
static PyObject *g_tensor_cls = NULL, *g_general = NULL, *g_from_fields = NULL;  /* wb.Tensor and the Python paths */

/* packed dtype -> ElementType, a direct-mapped cache in front of g_packed (one dict lookup and one
 * int allocation per call otherwise).  Entries hold strong references. */
#define ETYPE_CACHE 64
static struct { uint32_t packed; PyObject *etype; } g_etype_cache[ETYPE_CACHE];

static void clear_etype_cache(void) {
  for (int i = 0; i < ETYPE_CACHE; i++) Py_CLEAR(g_etype_cache[i].etype);
}

/* Borrowed; NULL with no error set: not an element type the workbench knows. */
static PyObject *etype_of(uint32_t packed) {
  unsigned h = (packed ^ (packed >> 7) ^ (packed >> 16)) & (ETYPE_CACHE - 1);
  if (g_etype_cache[h].etype && g_etype_cache[h].packed == packed) return g_etype_cache[h].etype;
  PyObject *key = PyLong_FromUnsignedLong(packed);
  if (!key) return NULL;
  PyObject *e = PyDict_GetItemWithError(g_packed, key);
  Py_DECREF(key);
  if (!e) return NULL;
  Py_XSETREF(g_etype_cache[h].etype, Py_NewRef(e));
  g_etype_cache[h].packed = packed;
  return e;
}

/* The last producer type met and its decoded entry (see _dlpack_structs.h), and the torch reader. */
static WbProducerCache g_last;
static WbTorchReader g_torch;

static PyObject *set_tables(PyObject *mod, PyObject *args) {
  PyObject *producers, *packed;
  if (!PyArg_ParseTuple(args, "O!O!", &PyDict_Type, &producers, &PyDict_Type, &packed)) return NULL;
  Py_XSETREF(g_producers, Py_NewRef(producers));
  Py_XSETREF(g_packed, Py_NewRef(packed));
  clear_etype_cache();
  wb_producer_cache_clear(&g_last);
  Py_RETURN_NONE;
}

/* set_torch_reader(address, base): install the torch reader (workbench.dlpack.torch_native checks
 * that it was built for the running torch first) and the type whose instances it reads
 * (torch._C.TensorBase); set_torch_reader(0, None) switches it off.  Shared with the launcher. */
static PyObject *set_torch_reader(PyObject *mod, PyObject *args) {
  unsigned long long addr;
  PyObject *base;
  if (!PyArg_ParseTuple(args, "KO", &addr, &base)) return NULL;
  if (addr ? !PyType_Check(base) : base != Py_None) {
    PyErr_Format(PyExc_TypeError, "set_torch_reader: expected (address, torch._C.TensorBase) or (0, None), but got "
                 "(%llu, %s).", addr, Py_TYPE(base)->tp_name);
    return NULL;
  }
  g_torch.read = NULL;
  Py_CLEAR(g_torch.base);
  if (addr) {
    g_torch.base = (PyTypeObject *)Py_NewRef(base);
    g_torch.read = (wb_torch_read_t)(uintptr_t)addr;
  }
  Py_RETURN_NONE;
}

/* torch_reader() -> (address, base), or None when no reader is installed */
static PyObject *torch_reader(PyObject *mod, PyObject *unused) {
  if (!g_torch.read) Py_RETURN_NONE;
  return Py_BuildValue("(NO)", PyLong_FromVoidPtr((void *)(uintptr_t)g_torch.read), (PyObject *)g_torch.base);
}

/* set_from_dlpack(Tensor, general, from_fields): general(x, assumed_align, stream) is the whole
 * protocol in Python; from_fields(fields, assumed_align) validates decoded fields and builds. */
static PyObject *set_from_dlpack(PyObject *mod, PyObject *args) {
  PyObject *cls, *general, *from_fields;
  if (!PyArg_ParseTuple(args, "OOO", &cls, &general, &from_fields)) return NULL;
  if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, &TensorBaseType) || !PyCallable_Check(general) ||
      !PyCallable_Check(from_fields)) {
    PyErr_SetString(PyExc_TypeError, "set_from_dlpack: expected a TensorBase subclass and two callables");
    return NULL;
  }
  Py_XSETREF(g_tensor_cls, Py_NewRef(cls));
  Py_XSETREF(g_general, Py_NewRef(general));
  Py_XSETREF(g_from_fields, Py_NewRef(from_fields));
  Py_RETURN_NONE;
}

static WbHazardCache g_hazards;  /* torch's hazards: see _dlpack_structs.h */

/* A new tensor of wb.Tensor: PyType_GenericAlloc's work without zeroing the inline dims, which
 * native_tensor writes (the rest is zeroed: the collector may visit any slot once it is tracked). */
static TensorBase *alloc_tensor(PyTypeObject *tp) {
  if (tp->tp_alloc != PyType_GenericAlloc || tp->tp_basicsize != (Py_ssize_t)sizeof(TensorBase) || tp->tp_itemsize)
    return (TensorBase *)tp->tp_alloc(tp, 0);
  TensorBase *r = PyObject_GC_New(TensorBase, tp);
  if (!r) return NULL;
  memset((char *)r + sizeof(PyObject), 0, offsetof(TensorBase, inline_dims) - sizeof(PyObject));
  PyObject_GC_Track(r);
  return r;
}

/* A native tensor over a validated DLTensor, with the usual checks of the general path:
 *  1: built (*out), 0: unusual (the general path decides, with its message), -1: error set. */
static int native_tensor(PyObject *owner, PyObject *version, uint64_t flags, const DLTensor *t, long long assumed,
                         PyObject **out) {
  uint32_t packed = (uint32_t)t->dtype.code | ((uint32_t)t->dtype.bits << 8) | ((uint32_t)t->dtype.lanes << 16);
  int dev = t->device.device_type;
  if (!t->data || (t->ndim && (!t->shape || !t->strides)) || !(dev == 1 || dev == 2 || dev == 3 || dev == 13))
    return 0;
  /* sub-byte elements in a legacy capsule: packed or padded cannot be told (Python refuses) */
  if (version == Py_None && t->dtype.bits < 8) return 0;
  PyObject *etype = etype_of(packed);
  if (!etype) return PyErr_Occurred() ? -1 : 0;
  long long bits = (long long)t->dtype.bits * t->dtype.lanes;
  long long align = assumed ? assumed : (bits >= 8 ? bits >> 3 : 1);
  uint64_t addr = (uint64_t)(uintptr_t)t->data + t->byte_offset;  /* validate_address: no overflow */
  if (addr % (uint64_t)align) return 0;
  TensorBase *r = alloc_tensor((PyTypeObject *)g_tensor_cls);
  if (!r) return -1;
  int n = t->ndim;
  r->dims = n <= WB_INLINE_RANK ? r->inline_dims : PyMem_Malloc(2 * (size_t)n * sizeof(int64_t));
  if (!r->dims) { Py_DECREF(r); PyErr_NoMemory(); return -1; }
  if (n) {
    memcpy(r->dims, t->shape, (size_t)n * sizeof(int64_t));
    memcpy(r->dims + n, t->strides, (size_t)n * sizeof(int64_t));
  }
  r->etype = Py_NewRef(etype);
  r->owner = Py_XNewRef(owner);
  r->version = Py_NewRef(version);
  r->marks = Py_NewRef(Py_None);
  r->order = Py_NewRef(Py_None);
  r->layout = Py_NewRef(Py_None);
  r->ndim = n;
  r->null_strides = !t->strides;  /* only a 0-d tensor gets here without strides */
  r->device_type = dev;
  r->device_id = t->device.device_id;
  r->packed = packed;
  r->flags = flags;
  r->raw = (uint64_t)(uintptr_t)t->data;
  r->byte_offset = t->byte_offset;
  r->addr = addr;
  r->calign = align;
  r->native = 1;
  *out = (PyObject *)r;
  return 1;
}

/* An unusual import: decoded fields to the Python side's validation. */
static PyObject *to_from_fields(PyObject *owner, PyObject *version, uint64_t flags, const DLTensor *t,
                                PyObject *assumed) {
  PyObject *f = fields_tuple(owner, version, flags, t);
  if (!f) return NULL;
  PyObject *r = PyObject_CallFunctionObjArgs(g_from_fields, f, assumed, NULL);
  Py_DECREF(f);
  return r;
}

static PyObject *s_stream, *s_kwnames_stream, *g_no_sync, *s_assumed_align, *s_tensor;
static PyObject *s_dlpack, *s_max_version, *s_kwnames;

/* from_dlpack(tensor, assumed_align=None, *, stream=None) */
static PyObject *from_dlpack(PyObject *mod, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
  PyObject *obj = nargs > 0 ? args[0] : NULL, *assumed = nargs > 1 ? args[1] : Py_None, *stream = Py_None;
  if (nargs > 2) {
    PyErr_Format(PyExc_TypeError, "from_dlpack() takes from 1 to 2 positional arguments but %zd were given", nargs);
    return NULL;
  }
  Py_ssize_t nk = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < nk; k++) {
    PyObject *kw = PyTuple_GET_ITEM(kwnames, k), *v = args[nargs + k];
    if (PyUnicode_Compare(kw, s_stream) == 0) stream = v;
    else if (PyUnicode_Compare(kw, s_assumed_align) == 0 && nargs < 2) assumed = v;
    else if (PyUnicode_Compare(kw, s_tensor) == 0 && nargs < 1 && !obj) obj = v;
    else {
      if (!PyErr_Occurred())
        PyErr_Format(PyExc_TypeError, "from_dlpack() got an unexpected or repeated keyword argument '%U'", kw);
      return NULL;
    }
  }
  if (!obj) { PyErr_SetString(PyExc_TypeError, "from_dlpack() missing required argument 'tensor'"); return NULL; }
  if (!g_general || !g_producers) { PyErr_SetString(PyExc_RuntimeError, "workbench._tensor was not imported"); return NULL; }
  long long align = 0;
  if (assumed != Py_None && PyLong_CheckExact(assumed)) {
    align = PyLong_AsLongLong(assumed);
    if (align == -1 && PyErr_Occurred()) { PyErr_Clear(); align = -1; }
  }
  /* an explicit stream, or an alignment that is not a positive power of two: the Python path */
  if (stream != Py_None || (assumed != Py_None && (align <= 0 || (align & (align - 1)))))
    return PyObject_CallFunctionObjArgs(g_general, obj, assumed, stream, NULL);
  PyObject *out = NULL;
  if (!wb_producer_cached(&g_last, g_producers, Py_TYPE(obj), &g_torch)) {
    if (PyErr_Occurred()) return NULL;
    return PyObject_CallFunctionObjArgs(g_general, obj, assumed, stream, NULL);
  }
  int via = g_last.kind;
  if (via == WB_VIA_EXCHANGE) {
    /* held: the checks below may run Python code, which could change the cache and the table */
    PyObject *ex = Py_NewRef(g_last.entry);
    DLTensor t;
    int hazard = 0;
    /* the torch reader (see _dlpack_structs.h), else the exchange API and torch's getters */
    int read = g_last.torch_read && g_torch.read && g_torch.read(obj, &t, &hazard) == 0;
    if (!read) {
      int torch_checks = g_last.torch_checks;
      memset(&t, 0, sizeof t);
      if (((dltensor_from_py_object_no_sync_t)g_last.fp)((void *)obj, &t) != 0) {
        Py_DECREF(ex);
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_BufferError, "The producer's dltensor_from_py_object_no_sync failed.");
        return NULL;
      }
      if (validate_dltensor(&t) < 0) { Py_DECREF(ex); return NULL; }
      hazard = torch_checks && wb_torch_hazard(&g_hazards, obj, t.dtype.code);
    } else if (validate_dltensor(&t) < 0) { Py_DECREF(ex); return NULL; }
    if (hazard) {
      Py_DECREF(ex);  /* refused: the Python path raises the precise message (or converts, if it was a misread) */
      return PyObject_CallFunctionObjArgs(g_general, obj, assumed, stream, NULL);
    }
    /* the producer object itself keeps the memory alive */
    int r = native_tensor(obj, PyTuple_GET_ITEM(ex, 2), 0, &t, align, &out);
    PyObject *version = Py_NewRef(PyTuple_GET_ITEM(ex, 2));
    Py_DECREF(ex);
    if (r == 0) out = to_from_fields(obj, version, 0, &t, assumed);
    Py_DECREF(version);
    return out;
  }
  int cuda = via == WB_VIA_CUDA_CAPSULE;
  /* CPU producers take no stream; CUDA-only producers get stream=-1 (the spec's "no sync").
   * A method call without a bound-method object: obj.__dlpack__(max_version=(1, 3)[, stream=-1]). */
  PyObject *cargs[3] = {obj, g_maxver, g_no_sync};
  PyObject *cap = PyObject_VectorcallMethod(s_dlpack, cargs, 1,
                                            cuda ? s_kwnames_stream : s_kwnames);
  if (!cap) {
    /* a producer that predates max_version: the Python path retries without it */
    if (PyErr_ExceptionMatches(PyExc_TypeError)) {
      PyErr_Clear();
      return PyObject_CallFunctionObjArgs(g_general, obj, assumed, stream, NULL);
    }
    return NULL;
  }
  PyObject *version;
  uint64_t flags;
  const DLTensor *t;
  int versioned;
  void *m = take_capsule(cap, &versioned, &version, &flags, &t);
  Py_DECREF(cap);
  if (!m) return NULL;
  int r = validate_dltensor(t) < 0 ? -1 : native_tensor(NULL, version, flags, t, align, &out);
  if (r == 1) {
    /* The tensor owns the consumed tensor itself (no Owner object) and refers to nothing that could
     * refer back to it (the version and element type are shared constants): it cannot be part of a
     * cycle, and the collector need not visit it (as CPython untracks tuples of ints) until something
     * that could is stored in it (track_if_needed). */
    ((TensorBase *)out)->managed = m;
    ((TensorBase *)out)->managed_versioned = versioned;
    PyObject_GC_UnTrack(out);
  } else if (r == 0) {
    PyObject *owner = new_owner(m, versioned);
    out = owner ? to_from_fields(owner, version, flags, t, assumed) : NULL;
    Py_XDECREF(owner);  /* a refusal runs the deleter here, its error saved around it */
  } else {
    release_managed(m, versioned, Py_None);
  }
  Py_DECREF(version);
  return out;
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

/* Read-only from Python: a pointer is checked once, when it is made (make_ptr, Pointer.__init__
 * through init_pointer below); an address or read-only flag changed afterwards would reach the
 * kernel launcher unchecked. */
static PyMemberDef pointerbase_members[] = {
  {"element_type", T_OBJECT, offsetof(PointerBase, element_type), READONLY, "element type"},
  {"address", T_OBJECT, offsetof(PointerBase, address), READONLY, "address in bytes"},
  {"memspace", T_OBJECT, offsetof(PointerBase, memspace), READONLY, "address space"},
  {"assumed_align", T_OBJECT, offsetof(PointerBase, assumed_align), READONLY, "alignment in bytes"},
  {"read_only", T_BOOL, offsetof(PointerBase, read_only), READONLY, "points into read-only memory"},
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

/* init_pointer(p, element_type, address, memspace, assumed_align, read_only): Pointer.__init__'s
 * store, once its checks have passed; a pointer is never re-initialised. */
static PyObject *init_pointer(PyObject *mod, PyObject *args) {
  PyObject *p, *etype, *address, *memspace, *align;
  int read_only;
  if (!PyArg_ParseTuple(args, "OOO!O!O!p", &p, &etype, &PyLong_Type, &address, &PyUnicode_Type, &memspace,
                        &PyLong_Type, &align, &read_only)) return NULL;
  if (!PyObject_TypeCheck(p, &PointerBaseType)) {
    PyErr_SetString(PyExc_TypeError, "init_pointer: expected a wb.Pointer");
    return NULL;
  }
  PointerBase *b = (PointerBase *)p;
  if (b->address) {
    PyErr_SetString(PyExc_TypeError, "Expected a new wb.Pointer: a pointer's fields are fixed once it is made.");
    return NULL;
  }
  b->element_type = Py_NewRef(etype);
  b->address = Py_NewRef(address);
  b->memspace = Py_NewRef(memspace);
  b->assumed_align = Py_NewRef(align);
  b->read_only = (char)read_only;
  Py_RETURN_NONE;
}

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
  {"init_pointer", (PyCFunction)init_pointer, METH_VARARGS, "Store a checked wb.Pointer's fields (once)."},
  {"set_tables", (PyCFunction)set_tables, METH_VARARGS, "Install the exchange, dtype and CPU-type tables."},
  {"set_torch_reader", (PyCFunction)set_torch_reader, METH_VARARGS,
   "set_torch_reader(address, torch._C.TensorBase) installs the torch reader; (0, None) switches it off."},
  {"torch_reader", (PyCFunction)torch_reader, METH_NOARGS, "(address, base) of the installed torch reader, or None."},
  {"set_from_dlpack", (PyCFunction)set_from_dlpack, METH_VARARGS, "Install wb.Tensor and from_dlpack's Python paths."},
  {"from_dlpack", (PyCFunction)(void (*)(void))from_dlpack, METH_FASTCALL | METH_KEYWORDS,
   "from_dlpack(tensor, assumed_align=None, *, stream=None)\n--\n\n"
   "Zero-copy view of any ``__dlpack__`` object with a fully static layout (CuTe DSL semantics).\n\n"
   "``assumed_align`` (bytes) defaults to the element's natural alignment and must divide the data\n"
   "pointer.  ``stream`` goes to CUDA producers as DLPack's ``stream`` argument (None: the\n"
   "producer's default; cupy arrays, on the legacy default stream like the workbench's launches,\n"
   "are read with -1, no synchronization).\n\n"
   "torch tensors are read by the torch reader where it is built for the running torch\n"
   "(``python -m workbench build-torch-native``, once per torch install; ``make lab``/``make test``\n"
   "run it): C++ against torch's headers, about half the host time.  Without it they go through\n"
   "torch's DLPack exchange API: slower, same fields, same refusals (a tensor that requires grad or\n"
   "carries the conjugate or negative bit is refused either way).  WB_TORCH_NATIVE=0 turns it off;\n"
   "workbench.dlpack.torch_native.status() says which path torch tensors take."},
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
  s_assumed_align = PyUnicode_InternFromString("assumed_align");
  s_tensor = PyUnicode_InternFromString("tensor");
  s_dlpack = PyUnicode_InternFromString("__dlpack__");
  s_max_version = PyUnicode_InternFromString("max_version");
  s_kwnames = Py_BuildValue("(O)", s_max_version);
  g_maxver = Py_BuildValue("(ii)", OUR_MAJOR, OUR_MINOR);
  s_stream = PyUnicode_InternFromString("stream");
  s_kwnames_stream = Py_BuildValue("(OO)", s_max_version, s_stream);
  g_no_sync = PyLong_FromLong(-1);
  if (!s_stream || !s_kwnames_stream || !g_no_sync) return NULL;
  if (!s_assumed_align || !s_tensor || !s_dlpack || !s_kwnames || !g_maxver) return NULL;
  s_layout_tag = PyUnicode_InternFromString("layout");
  s_compact_tag = PyUnicode_InternFromString("compact");
  s_mld_slow = PyUnicode_InternFromString("_mark_layout_dynamic_slow");
  s_leading_dim = PyUnicode_InternFromString("leading_dim");
  if (!s_layout_tag || !s_compact_tag || !s_mld_slow || !s_leading_dim) return NULL;
  PyObject *m = PyModule_Create(&moduledef);
  if (!m) return NULL;
  Py_INCREF(&OwnerType);
  if (PyModule_AddObject(m, "Owner", (PyObject *)&OwnerType) < 0) { Py_DECREF(&OwnerType); Py_DECREF(m); return NULL; }
  Py_INCREF(&PointerBaseType);
  if (PyModule_AddObject(m, "PointerBase", (PyObject *)&PointerBaseType) < 0) { Py_DECREF(&PointerBaseType); Py_DECREF(m); return NULL; }
  Py_INCREF(&TensorBaseType);
  if (PyModule_AddObject(m, "TensorBase", (PyObject *)&TensorBaseType) < 0) { Py_DECREF(&TensorBaseType); Py_DECREF(m); return NULL; }
  PyObject *reader = PyCapsule_New(&g_torch, WB_TORCH_READER_CAPSULE, NULL);  /* for the launcher */
  if (!reader || PyModule_AddObject(m, "_torch_reader", reader) < 0) { Py_XDECREF(reader); Py_DECREF(m); return NULL; }
  return m;
}
