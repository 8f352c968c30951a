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
  if (self->versioned) {
    DLManagedTensorVersioned *mv = (DLManagedTensorVersioned *)m;
    if (mv->deleter) mv->deleter(mv);
  } else {
    DLManagedTensor *ml = (DLManagedTensor *)m;
    if (ml->deleter) ml->deleter(ml);
  }
}

static void owner_dealloc(Owner *self) {
  owner_release(self);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *owner_repr(Owner *self) {
  return PyUnicode_FromFormat("<DLPack owner (%s, %s)>", self->versioned ? "versioned" : "legacy",
                              self->managed ? "alive" : "released");
}

static PyTypeObject OwnerType = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "workbench.dlpack._native.Owner",
  .tp_basicsize = sizeof(Owner),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_dealloc = (destructor)owner_dealloc,
  .tp_repr = (reprfunc)owner_repr,
  .tp_doc = "Holds a consumed DLManagedTensor(Versioned); calls its deleter once when collected.",
};

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
  if (n < 0) {
    PyErr_Format(PyExc_BufferError, "Expected DLTensor.ndim >= 0, but got %d.", n);
    return NULL;
  }
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
  /* the last item packs (code, bits, lanes) into one int: a single dict lookup finds the element type */
  return Py_BuildValue("(OOKKiiiiiiNNKk)", owner, version, (unsigned long long)flags,
                       (unsigned long long)(uintptr_t)t->data, t->device.device_type, t->device.device_id,
                       n, (int)t->dtype.code, (int)t->dtype.bits, (int)t->dtype.lanes, shape, strides,
                       (unsigned long long)t->byte_offset,
                       (unsigned long)t->dtype.code | ((unsigned long)t->dtype.bits << 8) | ((unsigned long)t->dtype.lanes << 16));
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
  /* Consuming = renaming: from here on the producer's capsule destructor leaves it to us. */
  if (PyCapsule_SetName(capsule, versioned ? USED_V : USED_L) != 0) return NULL;
  Owner *owner = PyObject_New(Owner, &OwnerType);
  if (!owner) return NULL;
  owner->managed = p;
  owner->versioned = versioned;
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

typedef int (*dltensor_from_py_object_no_sync_t)(void *, DLTensor *);

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
  PyGILState_STATE g = PyGILState_Ensure();
  Py_XDECREF(e->owner);
  PyGILState_Release(g);
  PyMem_RawFree(e);
}
static void deleter_v(DLManagedTensorVersioned *m) { export_free((Export *)m->manager_ctx); }
static void deleter_l(DLManagedTensor *m) { export_free((Export *)m->manager_ctx); }

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
  for (Py_ssize_t i = 0; i < n; i++) {
    e->dims[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, i));
    e->dims[n + i] = PyLong_AsLongLong(PyTuple_GET_ITEM(strides, i));
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

static PyMethodDef methods[] = {
  {"consume", (PyCFunction)consume, METH_O, "Consume a DLPack capsule: rename it and return its decoded fields."},
  {"exchange", (PyCFunction)(void (*)(void))exchange, METH_FASTCALL, "Call dltensor_from_py_object_no_sync."},
  {"export", (PyCFunction)export_, METH_VARARGS, "Build a DLPack capsule whose deleter releases owner."},
  {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "_native", NULL, -1, methods};

PyMODINIT_FUNC PyInit__native(void) {
  if (PyType_Ready(&OwnerType) < 0) return NULL;
  PyObject *m = PyModule_Create(&moduledef);
  if (!m) return NULL;
  Py_INCREF(&OwnerType);
  if (PyModule_AddObject(m, "Owner", (PyObject *)&OwnerType) < 0) { Py_DECREF(&OwnerType); Py_DECREF(m); return NULL; }
  return m;
}
