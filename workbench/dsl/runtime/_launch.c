/* The DSL's one launch path: guard + pack (+ cuLaunchKernel) for one specialization, in C.
 *
 * workbench.dsl.runtime.launch derives one argument spec per specialization from its signature; the same
 * specs drive every use: the per-grid Launcher (the hot path), pack() (launches with a stream or
 * dynamic shared memory, the slow path) and the CPU executor's parameter values.  An argument that
 * does not match makes the call return None, and the Python dispatcher then selects or compiles
 * another specialization (or raises the precise error): nothing ever launches on an argument the
 * guard has not accepted.
 *
 * Spec tuples, one per kernel argument ("slot" is the 8-byte parameter slot); the leading number is the SPEC_*
 * enum below (Python: args.SpecKind, built from the SPEC_KINDS this module exports):
 *   (0, slot, etype, memspace, align, written)         wb.Pointer (exact type; read-only refused when written)
 *   (1, slot) Int32 | (2, slot) Int64 outside Int32 | (3, slot) Float32 (Python float) | (4, slot) bool
 *   (5, value, key, keyfn)                             Constexpr: same type and keyfn(arg) == key
 *   (6, slot, etype, is_gmem, align, written, device_id, shape_sig, stride_sig, dyn, packed_dtype, natural_align)
 *        a tensor; dyn = ((slot, 2 shape | 3 stride, flat index, is64), ...).  Accepted as
 *        - a wb.Tensor: fields read in C (its kernel_signature() only for make_tensor/compact marks);
 *        - a framework tensor whose implicit conversion (from_dlpack(x).mark_layout_dynamic()) would
 *          give this signature: torch through the torch reader where it is built for the running torch
 *          (workbench/dlpack/torch_native.py: python -m workbench build-torch-native), else through
 *          its DLPack exchange API (a C function pointer, no capsule: slower, same result), other
 *          known producers through their capsule; dtype, device, rank, every
 *          static extent and stride, dynamic markers (width, divisibility), alignment and the
 *          read-only flag are checked against the spec without building a wb.Tensor.
 *   (7, slot, numpy scalar type, kind)                 kind 0 f32, 1 f64, 2..5 i8/i16/i32/i64, 6..9 u8..u64, 10 bool
 *   (8, scalar spec 1..4, numpy spec 7)                 either form of one scalar
 *   (9, slot, TmaLoad class, key)                       a TMA descriptor: exact class, equal _key; its 128-byte
 *        _desc fills 16 slots (None, a host tensor's descriptor for the CPU executor: zeros)
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include "../../dlpack/_dlpack_structs.h"

/* The kinds of argument spec: one enum, exported to Python as SPEC_KINDS (args.SpecKind is built from it). */
enum {
  SPEC_POINTER = 0, SPEC_INT32 = 1, SPEC_INT64 = 2, SPEC_FLOAT32 = 3, SPEC_BOOL = 4, SPEC_CONSTEXPR = 5,
  SPEC_TENSOR = 6, SPEC_NUMPY_SCALAR = 7, SPEC_EITHER = 8, SPEC_TMA = 9
};
/* A numpy scalar's kind (spec SPEC_NUMPY_SCALAR), exported as NUMPY_KINDS by element-type name. */
enum {
  NP_FLOAT32 = 0, NP_FLOAT64 = 1, NP_INT8 = 2, NP_INT16 = 3, NP_INT32 = 4, NP_INT64 = 5, NP_UINT8 = 6,
  NP_UINT16 = 7, NP_UINT32 = 8, NP_UINT64 = 9, NP_BOOL = 10
};

#define ALIGN_KEY 16  /* args.ALIGN_KEY: the alignment a framework tensor passed straight in is specialized on */

#define LAUNCHER_MAX_PARAM_BYTES 4096  /* CUDA's classic kernel-parameter limit */
#define MAX_RANK 64
#define TMA_DESC_BYTES 128   /* a CUtensorMap */

typedef int (*cu_launch_t)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           unsigned, void *, void **, void **);

/* Installed once by workbench.dsl.runtime.launch: the exact wb classes and the bridge's producer tables
 * (the same dict objects workbench._tensor fills as producer types are met). */
static PyObject *g_tensor_cls, *g_ptr_cls, *g_producers;  /* g_producers: see wb_producer */
static PyObject *s_kernel_signature, *s_dlpack, *s_layout;
static PyObject *g_kw_ver, *g_kw_ver_stream, *g_maxver, *g_no_sync;
static WbProducerCache g_last;   /* the last producer type met: see _dlpack_structs.h */
static const WbTorchReader *g_torch;  /* _native's torch reader (its read is NULL until one is loaded) */

static PyObject *set_types(PyObject *mod, PyObject *args) {
  PyObject *t, *p, *producers;
  if (!PyArg_ParseTuple(args, "O!O!O!", &PyType_Type, &t, &PyType_Type, &p, &PyDict_Type, &producers)) return NULL;
  Py_XSETREF(g_tensor_cls, Py_NewRef(t)); Py_XSETREF(g_ptr_cls, Py_NewRef(p));
  Py_XSETREF(g_producers, Py_NewRef(producers));
  wb_producer_cache_clear(&g_last);
  if (!g_torch) {  /* the bridge's torch reader: imported with wb.Tensor, which the launcher needs anyway */
    g_torch = PyCapsule_Import(WB_TORCH_READER_CAPSULE, 0);
    if (!g_torch) return NULL;
  }
  Py_RETURN_NONE;
}

static int memspace_is_gmem(int dev) { return dev == 2 || dev == 13; }  /* CUDA, CUDA managed */

/* ---- compiled specs ----------------------------------------------------------------------
 * The spec tuples are read once, when a Launcher is made (or pack() is called), into these C
 * structs: a launch then compares C integers and never converts a Python int. */
typedef struct { long long v; int kind; int width; long long div; } CMarker;  /* kind: 0 static v, 1 dynamic of width
                                                                            * and divisibility div, 2 never */
typedef struct { Py_ssize_t slot; int shape; Py_ssize_t j; int is64; } CDyn;

typedef struct CSpec {
  int kind;
  Py_ssize_t slot;
  PyObject *etype, *memspace;          /* borrowed from the spec tuple (the Launcher keeps it) */
  long long align;
  int written, is_gmem;
  long device_id;
  int n;                               /* tensor rank */
  CMarker *shape, *stride;             /* n each */
  Py_ssize_t ndyn;
  CDyn *dyn;
  uint32_t packed;
  long long natural_align;
  PyObject *shape_sig, *stride_sig;    /* the tuples, for tensors checked through kernel_signature() */
  PyObject *want, *key, *keyfn;        /* Constexpr */
  PyObject *np_type;                   /* numpy scalar type */
  int np_kind;
  struct CSpec *either[2];             /* kind 8: a Python scalar spec, then its numpy twin */
} CSpec;

static void free_spec(CSpec *c) {
  if (!c) return;
  PyMem_Free(c->shape);
  PyMem_Free(c->stride);
  PyMem_Free(c->dyn);
  for (int i = 0; i < 2; i++) { free_spec(c->either[i]); PyMem_Free(c->either[i]); }
}

static void free_specs(CSpec *cs, Py_ssize_t n) {
  if (!cs) return;
  for (Py_ssize_t i = 0; i < n; i++) free_spec(&cs[i]);
  PyMem_Free(cs);
}

static long long as_ll(PyObject *o, int *bad) {
  if (!PyLong_Check(o)) { *bad = 1; return 0; }
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
  if (overflow || (v == -1 && PyErr_Occurred())) { PyErr_Clear(); *bad = 1; }
  return v;
}

/* 0: compiled; 1: not a flat marker (a nested mode: such a spec is checked through kernel_signature
 * alone); -1: malformed. */
static int compile_marker(PyObject *m, CMarker *out) {
  if (PyTuple_Check(m)) {  /* ('?', width, divisibility): layout marks carry 1, implicit strides ALIGN_KEY's */
    if (PyTuple_GET_SIZE(m) != 3 || !PyUnicode_Check(PyTuple_GET_ITEM(m, 0))) return 1;
    int bad = 0;
    long long w = as_ll(PyTuple_GET_ITEM(m, 1), &bad), d = as_ll(PyTuple_GET_ITEM(m, 2), &bad);
    if (bad || (w != 32 && w != 64) || d < 1) return -1;
    out->kind = 1;
    out->width = (int)w;
    out->div = d;
    out->v = 0;
    return 0;
  }
  if (!PyLong_CheckExact(m)) { out->kind = 2; return 0; }  /* a symbolic marker: never equal to a value */
  int bad = 0;
  out->v = as_ll(m, &bad);
  out->kind = bad ? 2 : 0;
  out->width = 0;
  return 0;
}

/* One spec tuple into c; its highest byte into *extent.  -1: malformed (no error set). */
static int compile_spec(PyObject *spec, CSpec *c, Py_ssize_t *extent, int depth) {
  memset(c, 0, sizeof *c);
  *extent = 0;
  if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) < 2) return -1;
  Py_ssize_t len = PyTuple_GET_SIZE(spec);
  int bad = 0;
  long long kind = as_ll(PyTuple_GET_ITEM(spec, 0), &bad);
  if (bad) return -1;
  c->kind = (int)kind;
  if (kind == SPEC_CONSTEXPR) {
    if (len != 4) return -1;
    c->want = PyTuple_GET_ITEM(spec, 1);
    c->key = PyTuple_GET_ITEM(spec, 2);
    c->keyfn = PyTuple_GET_ITEM(spec, 3);
    return 0;
  }
  if (kind == SPEC_EITHER) {  /* no nesting: the recursion in put_arg stays one level */
    if (len != 3 || depth) return -1;
    Py_ssize_t e[2];
    for (int i = 0; i < 2; i++) {
      c->either[i] = PyMem_Calloc(1, sizeof(CSpec));
      if (!c->either[i] || compile_spec(PyTuple_GET_ITEM(spec, 1 + i), c->either[i], &e[i], 1) < 0) return -1;
    }
    if (c->either[0]->kind < SPEC_INT32 || c->either[0]->kind > SPEC_BOOL || c->either[1]->kind != SPEC_NUMPY_SCALAR)
      return -1;
    *extent = e[0] > e[1] ? e[0] : e[1];
    return 0;
  }
  int shape_ok = (kind == SPEC_POINTER && len == 6) || (kind >= SPEC_INT32 && kind <= SPEC_BOOL && len == 2) ||
                 (kind == SPEC_TENSOR && len == 12) || (kind == SPEC_NUMPY_SCALAR && len == 4) ||
                 (kind == SPEC_TMA && len == 4);
  if (!shape_ok) return -1;
  long long slot = as_ll(PyTuple_GET_ITEM(spec, 1), &bad);
  if (bad || slot < 0 || slot >= LAUNCHER_MAX_PARAM_BYTES / 8) return -1;
  c->slot = (Py_ssize_t)slot;
  *extent = 8 * (c->slot + 1);
  if (kind == SPEC_TMA) {
    if (!PyType_Check(PyTuple_GET_ITEM(spec, 2))) return -1;
    c->want = PyTuple_GET_ITEM(spec, 2);
    c->key = PyTuple_GET_ITEM(spec, 3);
    *extent = 8 * (c->slot + TMA_DESC_BYTES / 8);
    return 0;
  }
  if (kind == SPEC_NUMPY_SCALAR) {
    long long k = as_ll(PyTuple_GET_ITEM(spec, 3), &bad);
    if (bad || k < NP_FLOAT32 || k > NP_BOOL || !PyType_Check(PyTuple_GET_ITEM(spec, 2))) return -1;
    c->np_type = PyTuple_GET_ITEM(spec, 2);
    c->np_kind = (int)k;
    return 0;
  }
  if (kind == SPEC_POINTER || kind == SPEC_TENSOR) {
    c->etype = PyTuple_GET_ITEM(spec, 2);
    c->align = as_ll(PyTuple_GET_ITEM(spec, 4), &bad);
    if (bad || c->align <= 0 || (c->align & (c->align - 1))) return -1;
    c->written = PyTuple_GET_ITEM(spec, 5) == Py_True;
  }
  if (kind == SPEC_POINTER) {
    c->memspace = PyTuple_GET_ITEM(spec, 3);
    if (!PyUnicode_Check(c->memspace)) return -1;
  }
  if (kind == SPEC_TENSOR) {
    c->is_gmem = PyTuple_GET_ITEM(spec, 3) == Py_True;
    c->device_id = (long)as_ll(PyTuple_GET_ITEM(spec, 6), &bad);
    c->shape_sig = PyTuple_GET_ITEM(spec, 7);
    c->stride_sig = PyTuple_GET_ITEM(spec, 8);
    PyObject *dyn = PyTuple_GET_ITEM(spec, 9);
    c->packed = (uint32_t)as_ll(PyTuple_GET_ITEM(spec, 10), &bad);
    c->natural_align = as_ll(PyTuple_GET_ITEM(spec, 11), &bad);
    if (bad || !PyTuple_Check(dyn)) return -1;
    /* markers of a flat tensor; a rank-1 int, nested or symbolic signature is matched through the
     * tensor's kernel_signature() alone */
    int flat = PyTuple_Check(c->shape_sig) && PyTuple_Check(c->stride_sig);
    Py_ssize_t n = flat ? PyTuple_GET_SIZE(c->shape_sig) : -1;
    c->n = flat && n == PyTuple_GET_SIZE(c->stride_sig) && n <= MAX_RANK ? (int)n : -1;
    if (c->n > 0) {
      c->shape = PyMem_Calloc((size_t)n, sizeof(CMarker));
      c->stride = PyMem_Calloc((size_t)n, sizeof(CMarker));
      if (!c->shape || !c->stride) return -1;
      for (Py_ssize_t i = 0; i < n && c->n > 0; i++) {
        int r1 = compile_marker(PyTuple_GET_ITEM(c->shape_sig, i), &c->shape[i]);
        int r2 = compile_marker(PyTuple_GET_ITEM(c->stride_sig, i), &c->stride[i]);
        if (r1 < 0 || r2 < 0) return -1;
        if (r1 || r2) c->n = -1;  /* nested: no flat tensor matches it */
      }
    }
    c->ndyn = PyTuple_GET_SIZE(dyn);
    if (c->ndyn) {
      c->dyn = PyMem_Calloc((size_t)c->ndyn, sizeof(CDyn));
      if (!c->dyn) return -1;
    }
    for (Py_ssize_t k = 0; k < c->ndyn; k++) {
      PyObject *d = PyTuple_GET_ITEM(dyn, k);
      if (!PyTuple_Check(d) || PyTuple_GET_SIZE(d) != 4) return -1;
      long long s = as_ll(PyTuple_GET_ITEM(d, 0), &bad), which = as_ll(PyTuple_GET_ITEM(d, 1), &bad);
      long long j = as_ll(PyTuple_GET_ITEM(d, 2), &bad);
      if (bad || s < 0 || s >= LAUNCHER_MAX_PARAM_BYTES / 8 || (which != 2 && which != 3) || j < 0) return -1;
      c->dyn[k] = (CDyn){(Py_ssize_t)s, which == 2, (Py_ssize_t)j, PyTuple_GET_ITEM(d, 3) == Py_True};
      if (8 * (s + 1) > *extent) *extent = 8 * (Py_ssize_t)(s + 1);
    }
  }
  return 0;
}

/* The specs tuple compiled; *nbuf: the bytes of the parameter buffer they write.  NULL with an
 * error set when a spec is malformed or the parameters exceed CUDA's limit. */
static CSpec *compile_specs(PyObject *specs, Py_ssize_t *nbuf) {
  Py_ssize_t n = PyTuple_GET_SIZE(specs);
  CSpec *cs = PyMem_Calloc(n ? (size_t)n : 1, sizeof(CSpec));
  if (!cs) { PyErr_NoMemory(); return NULL; }
  *nbuf = 0;
  for (Py_ssize_t i = 0; i < n; i++) {
    Py_ssize_t e;
    if (compile_spec(PyTuple_GET_ITEM(specs, i), &cs[i], &e, 0) < 0 || PyErr_Occurred()) {
      free_specs(cs, n);
      PyErr_Clear();
      PyErr_Format(PyExc_ValueError, "Malformed launcher spec for argument %zd.", i);
      return NULL;
    }
    if (e > *nbuf) *nbuf = e;
  }
  if (*nbuf > LAUNCHER_MAX_PARAM_BYTES) {
    free_specs(cs, n);
    PyErr_Format(PyExc_ValueError, "Expected kernel parameters within %d bytes, but they need %zd bytes.",
                 LAUNCHER_MAX_PARAM_BYTES, *nbuf);
    return NULL;
  }
  return cs;
}

/* ---- the guard ---------------------------------------------------------------------------- */

/* One mode value against its marker.  dyn: whether the source makes this value dynamic and with
 * which width (32 or 64).  1: matches. */
static inline int marker_matches(const CMarker *m, long long v, int dyn, int width, long long div) {
  if (m->kind == 1) return dyn && m->width == width && m->div == div;
  return m->kind == 0 && !dyn && m->v == v;
}

static inline void put_value(char *buf, const CDyn *d, long long v, int *ok) {
  if (d->is64) memcpy(buf + 8 * d->slot, &v, 8);
  else if (v < INT32_MIN || v > INT32_MAX) *ok = 0;
  else { int32_t w = (int32_t)v; memcpy(buf + 8 * d->slot, &w, 4); }
}

/* Check a flat tensor (shape, strides) as `layout_marks` says (0: from_dlpack, all static; 1:
 * mark_layout_dynamic with leading dimension ld, -1 deduced) against the spec and pack its
 * dynamic values.  The rules are Tensor.kernel_signature()'s; a leading dimension that cannot be
 * deduced is a refusal (Python raises the error).  es > 0: an implicit conversion of elements of es
 * bytes, whose dynamic strides are marked divisible by ALIGN_KEY bytes where they all are
 * (_tensor.mark_stride_divisibility, args.normalize). */
static int check_modes(char *buf, const CSpec *c, int n, const int64_t *shape, const int64_t *stride,
                       int layout_marks, long ld, long long es) {
  if (n != c->n || n < 0) return 0;
  if (layout_marks && ld < 0) {
    int ones = 0, big = 0, last_one = -1, last_big = -1;
    for (int i = 0; i < n; i++)
      if (stride[i] == 1) { ones++; last_one = i; if (shape[i] > 1) { big++; last_big = i; } }
    if (ones == 1) ld = last_one;
    else if (ones > 1 && big == 0 && es > 0) ld = last_one;  /* implicit: all unit extents, as args.normalize */
    else if (ones > 1) { if (big != 1) return 0; ld = last_big; }
    else ld = -1;
  }
  long long sdiv = 1;
  if (es > 0 && es < ALIGN_KEY && ALIGN_KEY % es == 0) {
    sdiv = ALIGN_KEY / es;
    for (int i = 0; i < n; i++)
      if (i != ld && stride[i] > 0 && stride[i] % sdiv) { sdiv = 1; break; }
  }
  for (int i = 0; i < n; i++) {
    if (shape[i] < 0) return 0;
    int sw = shape[i] > INT32_MAX ? 64 : 32;
    if (!marker_matches(&c->shape[i], shape[i], layout_marks, sw, 1)) return 0;
    int sdyn = layout_marks && i != ld && stride[i] > 0;
    if (!marker_matches(&c->stride[i], stride[i], sdyn, 64, sdiv)) return 0;
  }
  int ok = 1;
  for (Py_ssize_t k = 0; k < c->ndyn && ok; k++) {
    const CDyn *d = &c->dyn[k];
    if (d->j >= n) return 0;
    put_value(buf, d, d->shape ? shape[d->j] : stride[d->j], &ok);
  }
  return ok;
}

static inline int put_ptr_slot(char *buf, const CSpec *c, unsigned long long addr) {
  memcpy(buf + 8 * c->slot, &addr, 8);
  return 1;
}

/* A DLTensor (from the exchange API or a capsule) against a tensor spec, as its implicit
 * conversion from_dlpack(x).mark_layout_dynamic() would be. */
static int put_dltensor(char *buf, const CSpec *c, const DLTensor *t, uint64_t flags) {
  uint32_t packed = (uint32_t)t->dtype.code | ((uint32_t)t->dtype.bits << 8) | ((uint32_t)t->dtype.lanes << 16);
  if (c->packed != packed) return 0;
  int dev = t->device.device_type;
  if (!(dev == 1 || dev == 2 || dev == 3 || dev == 13) || memspace_is_gmem(dev) != c->is_gmem) return 0;
  if (c->is_gmem && t->device.device_id != c->device_id) return 0;
  if (c->written && (flags & WB_DLPACK_FLAG_READ_ONLY)) return 0;
  if (!t->data || t->ndim < 0 || t->ndim > MAX_RANK || !t->strides || (t->ndim && !t->shape)) return 0;
  unsigned long long addr = (unsigned long long)(uintptr_t)t->data + t->byte_offset;
  if (addr < t->byte_offset || (addr & (unsigned long long)(c->align - 1))) return 0;
  /* implicit conversions specialize on alignment as args.normalize does (Triton's rule): ALIGN_KEY bytes where the
   * address is a multiple of it, else the element's natural alignment; another class is another specialization */
  long long want = (c->natural_align < ALIGN_KEY && !(addr & (ALIGN_KEY - 1))) ? ALIGN_KEY : c->natural_align;
  if (c->align != want) return 0;
  if (!check_modes(buf, c, t->ndim, t->shape, t->strides, 1, -1, c->natural_align)) return 0;
  return put_ptr_slot(buf, c, addr);
}

static WbHazardCache g_hazards;  /* torch's hazards: see _dlpack_structs.h */

static int put_framework_tensor(char *buf, const CSpec *c, PyObject *a) {
  if (!wb_producer_cached(&g_last, g_producers, Py_TYPE(a), g_torch)) return 0;
  int via = g_last.kind;
  if (via == WB_VIA_EXCHANGE) {
    DLTensor t;
    int hazard;
    /* the torch reader: the tensor and its hazards in one call; a hazard is a refusal (Python raises
     * the precise error), as wb_torch_hazard's below */
    if (g_last.torch_read && g_torch->read && g_torch->read(a, &t, &hazard) == 0)
      return hazard ? 0 : put_dltensor(buf, c, &t, 0);
    /* the checks below run Python code, which could change the cache and drop the table entry */
    PyObject *ex = Py_NewRef(g_last.entry);
    void *fp = g_last.fp;
    int torch_checks = g_last.torch_checks;
    int ok = 0;
    memset(&t, 0, sizeof t);
    /* the exchange API's no-sync read: the launch goes to the legacy default stream, on which
     * torch's default-stream work is already ordered (DESIGN.md section 5) */
    if (((dltensor_from_py_object_no_sync_t)fp)((void *)a, &t) == 0 &&
        !(torch_checks && wb_torch_hazard(&g_hazards, a, t.dtype.code)))
      ok = put_dltensor(buf, c, &t, 0);
    Py_DECREF(ex);
    return ok;
  }
  int cuda = via == WB_VIA_CUDA_CAPSULE;
  /* CUDA-only producers get stream=-1 as from_dlpack does (their arrays live on the legacy default
   * stream the launch uses); CPU producers take no stream */
  PyObject *cargs[3] = {a, g_maxver, g_no_sync};
  PyObject *cap = PyObject_VectorcallMethod(s_dlpack, cargs, 1, cuda ? g_kw_ver_stream : g_kw_ver);
  if (!cap) return 0;
  int ok = 0;
  /* the capsule is read, not consumed: dropping it below calls the producer's deleter once */
  if (PyCapsule_IsValid(cap, "dltensor_versioned")) {
    DLManagedTensorVersioned *m = PyCapsule_GetPointer(cap, "dltensor_versioned");
    if (m && m->version.major == 1) ok = put_dltensor(buf, c, &m->dl_tensor, m->flags);
  } else if (PyCapsule_IsValid(cap, "dltensor")) {
    DLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
    if (m && m->dl_tensor.dtype.bits >= 8) ok = put_dltensor(buf, c, &m->dl_tensor, 0);
  }
  Py_DECREF(cap);
  return ok;
}

/* make_tensor layouts and compact-shape marks: the tensor's own signature (Python) */
static int put_by_signature(char *buf, const CSpec *c, PyObject *a, unsigned long long addr) {
  PyObject *sig = PyObject_CallMethodNoArgs(a, s_kernel_signature);
  if (!sig) return 0;
  int ok = PyTuple_Check(sig) && PyTuple_GET_SIZE(sig) == 4;
  if (ok) {
    int e1 = PyObject_RichCompareBool(PyTuple_GET_ITEM(sig, 0), c->shape_sig, Py_EQ);
    int e2 = e1 == 1 ? PyObject_RichCompareBool(PyTuple_GET_ITEM(sig, 1), c->stride_sig, Py_EQ) : 0;
    ok = e1 == 1 && e2 == 1;
  }
  for (Py_ssize_t k = 0; k < c->ndyn && ok; k++) {
    const CDyn *d = &c->dyn[k];
    PyObject *vals = PyTuple_GET_ITEM(sig, d->shape ? 2 : 3);
    if (!PyTuple_Check(vals) || d->j >= PyTuple_GET_SIZE(vals)) { ok = 0; break; }
    int bad = 0;
    long long v = as_ll(PyTuple_GET_ITEM(vals, d->j), &bad);
    if (bad) ok = 0;
    else put_value(buf, d, v, &ok);
  }
  Py_DECREF(sig);
  if (!ok || PyErr_Occurred()) return 0;
  return put_ptr_slot(buf, c, addr);
}

/* A from_dlpack tensor built in C: its fields are C values, its marks plain or mark_layout_dynamic's.
 * -1: compact marks (checked through its kernel_signature). */
static int put_native_tensor(char *buf, const CSpec *c, TensorBase *t) {
  if (memspace_is_gmem(t->device_type) != c->is_gmem) return 0;
  if (t->calign != c->align || (t->addr & (unsigned long long)(c->align - 1))) return 0;
  if (c->written && (t->flags & WB_DLPACK_FLAG_READ_ONLY)) return 0;
  if (c->is_gmem && t->device_id != c->device_id) return 0;
  PyObject *marks = t->marks;
  long ld = t->ndim;  /* plain: no mode is dynamic */
  int layout_marks = 0;
  if (marks != Py_None) {
    if (!(marks && PyTuple_Check(marks) && PyTuple_GET_SIZE(marks) == 2 &&
          PyUnicode_Check(PyTuple_GET_ITEM(marks, 0)) &&
          PyUnicode_Compare(PyTuple_GET_ITEM(marks, 0), s_layout) == 0)) return -1;
    layout_marks = 1;
    /* mark_layout_dynamic stored the leading dimension it validated or deduced; None: no mode
     * keeps a static stride-1 (n matches no mode) */
    if (PyTuple_GET_ITEM(marks, 1) != Py_None) ld = PyLong_AsLong(PyTuple_GET_ITEM(marks, 1));
  }
  if (!check_modes(buf, c, t->ndim, t->dims, t->dims + t->ndim, layout_marks, ld, 0)) return 0;
  return put_ptr_slot(buf, c, t->addr);
}

static int put_wb_tensor(char *buf, const CSpec *c, PyObject *a) {
  TensorBase *t = (TensorBase *)a;
  if (t->etype != c->etype) return 0;
  if (t->native) {
    int r = put_native_tensor(buf, c, t);
    return r >= 0 ? r : put_by_signature(buf, c, a, t->addr);
  }
  if (!t->f || !PyTuple_Check(t->f) || PyTuple_GET_SIZE(t->f) < 14 || !t->align || !t->data || !t->stride) return 0;
  int dev = (int)PyLong_AsLong(PyTuple_GET_ITEM(t->f, 4));
  if (memspace_is_gmem(dev) != c->is_gmem) return 0;
  if (PyLong_AsLongLong(t->align) != c->align) return 0;
  if (c->written && (PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(t->f, 2)) & WB_DLPACK_FLAG_READ_ONLY)) return 0;
  if (c->is_gmem && PyLong_AsLong(PyTuple_GET_ITEM(t->f, 5)) != c->device_id) return 0;
  unsigned long long addr = PyLong_AsUnsignedLongLong(t->data);
  if (PyErr_Occurred() || (addr & (unsigned long long)(c->align - 1))) return 0;
  PyObject *marks = t->marks, *shape = PyTuple_GET_ITEM(t->f, 10);
  int plain = marks == Py_None;
  int layout_marks = !plain && marks && PyTuple_Check(marks) && PyTuple_GET_SIZE(marks) == 2 &&
                     PyUnicode_Check(PyTuple_GET_ITEM(marks, 0)) &&
                     PyUnicode_Compare(PyTuple_GET_ITEM(marks, 0), s_layout) == 0;
  if ((plain || layout_marks) && PyTuple_Check(shape) && PyTuple_Check(t->stride) &&
      PyTuple_GET_SIZE(shape) == PyTuple_GET_SIZE(t->stride) && PyTuple_GET_SIZE(shape) <= MAX_RANK) {
    int n = (int)PyTuple_GET_SIZE(shape);
    int64_t sh[MAX_RANK], st[MAX_RANK];
    for (int i = 0; i < n; i++) {
      sh[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, i));
      st[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(t->stride, i));
    }
    if (PyErr_Occurred()) return 0;
    long ld = n;
    if (layout_marks && PyTuple_GET_ITEM(marks, 1) != Py_None) ld = PyLong_AsLong(PyTuple_GET_ITEM(marks, 1));
    if (!check_modes(buf, c, n, sh, st, layout_marks, ld, 0)) return 0;
    return put_ptr_slot(buf, c, addr);
  }
  return put_by_signature(buf, c, a, addr);
}

static int put_numpy_scalar(char *buf, const CSpec *c, PyObject *a) {
  if ((PyObject *)Py_TYPE(a) != c->np_type) return 0;
  int kind = c->np_kind;
  char *p = buf + 8 * c->slot;
  if (kind <= NP_FLOAT64) {
    double d = PyFloat_AsDouble(a);
    if (d == -1.0 && PyErr_Occurred()) return 0;
    if (kind == NP_FLOAT32) { float f = (float)d; memcpy(p, &f, 4); } else memcpy(p, &d, 8);
    return 1;
  }
  if (kind == NP_BOOL) { int t = PyObject_IsTrue(a); if (t < 0) return 0; p[0] = (char)t; return 1; }
  PyObject *i = PyNumber_Index(a);
  if (!i) return 0;
  static const int nbytes[] = {1, 2, 4, 8};
  int nb = nbytes[(kind - NP_INT8) % 4];
  int ok = 1;
  if (kind <= 5) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(i, &overflow);
    ok = !overflow && !PyErr_Occurred();
    memcpy(p, &v, (size_t)nb);  /* little-endian: the low bytes (numpy scalars are in range) */
  } else {
    unsigned long long v = PyLong_AsUnsignedLongLong(i);
    ok = !PyErr_Occurred();
    memcpy(p, &v, (size_t)nb);
  }
  Py_DECREF(i);
  return ok;
}

/* 1: the argument matches its spec and its values are in buf; 0: refused (no error set). */
static int put_arg(char *buf, const CSpec *c, PyObject *a) {
  int ok = 0;
  switch (c->kind) {
  case SPEC_POINTER: {
    if (Py_TYPE(a) != (PyTypeObject *)g_ptr_cls) break;
    PointerBase *p = (PointerBase *)a;
    if (p->element_type != c->etype || !p->memspace || !p->assumed_align || !p->address) break;
    if (p->memspace != c->memspace && PyUnicode_Compare(p->memspace, c->memspace) != 0) break;
    if (PyLong_AsLongLong(p->assumed_align) != c->align) break;
    if (p->read_only && c->written) break;  /* a read-only tensor's .iterator, written */
    unsigned long long addr = PyLong_AsUnsignedLongLong(p->address);
    if (PyErr_Occurred() || (addr & (unsigned long long)(c->align - 1))) break;
    ok = put_ptr_slot(buf, c, addr);
    break;
  }
  case SPEC_INT32: case SPEC_INT64: {
    if (!PyLong_CheckExact(a)) break;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(a, &overflow);
    if (overflow) break;
    int fits32 = v >= INT32_MIN && v <= INT32_MAX;
    if (c->kind == SPEC_INT32) { if (!fits32) break; int32_t w = (int32_t)v; memcpy(buf + 8 * c->slot, &w, 4); }
    else { if (fits32) break; memcpy(buf + 8 * c->slot, &v, 8); }
    ok = 1;
    break;
  }
  case SPEC_FLOAT32: {
    if (!PyFloat_CheckExact(a)) break;
    double d = PyFloat_AS_DOUBLE(a);
    if (d > 3.4028234663852886e38 || d < -3.4028234663852886e38) break;  /* as struct.pack: out of range */
    float w = (float)d;
    memcpy(buf + 8 * c->slot, &w, 4);
    ok = 1;
    break;
  }
  case SPEC_BOOL:
    if (!PyBool_Check(a)) break;
    buf[8 * c->slot] = (a == Py_True);
    ok = 1;
    break;
  case SPEC_CONSTEXPR: {
    if (Py_TYPE(a) != Py_TYPE(c->want)) break;
    if (PyLong_CheckExact(a) || PyBool_Check(a) || PyUnicode_CheckExact(a)) {
      ok = PyObject_RichCompareBool(a, c->want, Py_EQ) == 1;
      break;
    }
    PyObject *key = PyObject_CallOneArg(c->keyfn, a);
    if (!key) break;
    ok = PyObject_RichCompareBool(key, c->key, Py_EQ) == 1;
    Py_DECREF(key);
    break;
  }
  case SPEC_TENSOR:
    if ((PyObject *)Py_TYPE(a) == g_tensor_cls) ok = put_wb_tensor(buf, c, a);
    else if (Py_TYPE(a) == (PyTypeObject *)g_ptr_cls) ok = 0;
    else ok = put_framework_tensor(buf, c, a);
    break;
  case SPEC_NUMPY_SCALAR:
    ok = put_numpy_scalar(buf, c, a);
    break;
  case SPEC_TMA: {  /* a TMA descriptor (CUtensorMap, passed by value as a __grid_constant__ parameter) */
    if ((PyObject *)Py_TYPE(a) != c->want) break;
    PyObject *key = PyObject_GetAttrString(a, "_key");
    if (!key) break;
    int same = PyObject_RichCompareBool(key, c->key, Py_EQ) == 1;
    Py_DECREF(key);
    if (!same) break;
    PyObject *desc = PyObject_GetAttrString(a, "_desc");
    if (!desc) break;
    if (desc == Py_None) ok = 1;   /* zeros: a host tensor's box, which only the CPU executor runs */
    else if (PyBytes_CheckExact(desc) && PyBytes_GET_SIZE(desc) == TMA_DESC_BYTES) {
      memcpy(buf + 8 * c->slot, PyBytes_AS_STRING(desc), TMA_DESC_BYTES);
      ok = 1;
    }
    Py_DECREF(desc);
    break;
  }
  case SPEC_EITHER:   /* either form of one scalar: a Python scalar or the numpy scalar of the same dtype */
    ok = put_arg(buf, c->either[0], a) || put_arg(buf, c->either[1], a);
    break;
  }
  if (PyErr_Occurred()) { PyErr_Clear(); ok = 0; }
  return ok;
}

/* Guard and pack every argument into tmp (nbuf bytes); 1 when all matched. */
static int pack_all(char *tmp, Py_ssize_t nbuf, const CSpec *cs, Py_ssize_t nspecs, PyObject *const *args,
                    Py_ssize_t n) {
  if (n != nspecs) return 0;
  memset(tmp, 0, (size_t)nbuf);
  for (Py_ssize_t i = 0; i < n; i++)
    if (!put_arg(tmp, &cs[i], args[i])) return 0;
  return 1;
}

/* pack(specs, args_tuple) -> bytes of the parameter buffer, or None when an argument is refused:
 * the slow path's and the CPU executor's view of the same guard. */
static PyObject *pack(PyObject *mod, PyObject *args) {
  PyObject *specs, *a;
  if (!PyArg_ParseTuple(args, "O!O!", &PyTuple_Type, &specs, &PyTuple_Type, &a)) return NULL;
  Py_ssize_t nbuf;
  CSpec *cs = compile_specs(specs, &nbuf);
  if (!cs) return NULL;
  char tmp[LAUNCHER_MAX_PARAM_BYTES];
  int ok = pack_all(tmp, nbuf, cs, PyTuple_GET_SIZE(specs), &PyTuple_GET_ITEM(a, 0), PyTuple_GET_SIZE(a));
  free_specs(cs, PyTuple_GET_SIZE(specs));
  if (!ok) Py_RETURN_NONE;
  return PyBytes_FromStringAndSize(tmp, nbuf);
}

typedef struct {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  cu_launch_t launch;
  void *func;
  unsigned dims[6];
  unsigned smem;
  void **kernel_params;
  char *buf;
  Py_ssize_t nbuf;   /* bytes of buf the specs write: 8 * (highest slot + 1) */
  PyObject *specs;   /* tuple of per-argument spec tuples (the compiled specs borrow from it) */
  CSpec *cs;
  Py_ssize_t ncs;
  PyObject *owner;   /* keeps the module and the parameter buffer alive */
} Launcher;

static PyObject *launcher_vectorcall(PyObject *self_, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
  Launcher *L = (Launcher *)self_;
  if (kwnames && PyTuple_GET_SIZE(kwnames)) Py_RETURN_NONE;
  if (!L->cs) Py_RETURN_NONE;  /* cleared by the collector */
  /* Pack privately: checking an argument may run Python code (a producer's __dlpack__, a
   * tensor's kernel_signature), during which another thread or a re-entrant call may use this
   * launcher; the shared buffer is written only after the last check, with the GIL held until
   * cuLaunchKernel has read it. */
  char tmp[LAUNCHER_MAX_PARAM_BYTES];
  if (!pack_all(tmp, L->nbuf, L->cs, L->ncs, args, PyVectorcall_NARGS(nargsf))) Py_RETURN_NONE;
  memcpy(L->buf, tmp, (size_t)L->nbuf);
  int rc = L->launch(L->func, L->dims[0], L->dims[1], L->dims[2], L->dims[3], L->dims[4], L->dims[5],
                     L->smem, NULL, L->kernel_params, NULL);
  return PyLong_FromLong(rc);
}

/* The collector: a launcher holds its specs (whose Constexpr key functions are Python objects) and
 * its owner, either of which could lead back to it. */
static int launcher_traverse(Launcher *self, visitproc visit, void *arg) {
  Py_VISIT(self->specs);
  Py_VISIT(self->owner);
  return 0;
}

static int launcher_clear(Launcher *self) {
  free_specs(self->cs, self->ncs);  /* they borrow from specs */
  self->cs = NULL;
  self->ncs = 0;
  Py_CLEAR(self->specs);
  Py_CLEAR(self->owner);
  return 0;
}

static void launcher_dealloc(Launcher *self) {
  PyObject_GC_UnTrack(self);
  launcher_clear(self);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Launcher(launch_addr, func, dims6, smem, kernel_params_addr, buf_addr, buf_size, specs, owner) */
static PyObject *launcher_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  unsigned long long launch, func, params, buf;
  Py_ssize_t buf_size;
  PyObject *dims, *specs, *owner;
  unsigned smem;
  if (!PyArg_ParseTuple(args, "KKO!IKKnO!O", &launch, &func, &PyTuple_Type, &dims, &smem, &params, &buf,
                        &buf_size, &PyTuple_Type, &specs, &owner))
    return NULL;
  if (PyTuple_GET_SIZE(dims) != 6 || !launch || !func || !params || !buf) {
    PyErr_SetString(PyExc_ValueError, "Expected 6 launch dimensions and non-NULL launch, function and buffers.");
    return NULL;
  }
  for (int i = 0; i < 6; i++) {
    unsigned long long d = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(dims, i));
    if (PyErr_Occurred() || d == 0 || d > 0xFFFFFFFFull) {
      PyErr_Clear();
      PyErr_SetString(PyExc_ValueError, "Expected launch dimensions between 1 and 2**32-1.");
      return NULL;
    }
  }
  if (!g_tensor_cls) { PyErr_SetString(PyExc_RuntimeError, "workbench.dsl.runtime.launch was not imported"); return NULL; }
  Py_ssize_t nbuf;
  CSpec *cs = compile_specs(specs, &nbuf);
  if (!cs) return NULL;
  if (nbuf > buf_size) {
    free_specs(cs, PyTuple_GET_SIZE(specs));
    PyErr_Format(PyExc_ValueError, "Expected kernel parameters within the %zd-byte buffer, but they need %zd bytes.",
                 buf_size, nbuf);
    return NULL;
  }
  Launcher *L = (Launcher *)type->tp_alloc(type, 0);
  if (!L) { free_specs(cs, PyTuple_GET_SIZE(specs)); return NULL; }
  L->vectorcall = launcher_vectorcall;
  L->launch = (cu_launch_t)(uintptr_t)launch;
  L->func = (void *)(uintptr_t)func;
  for (int i = 0; i < 6; i++) L->dims[i] = (unsigned)PyLong_AsUnsignedLong(PyTuple_GET_ITEM(dims, i));
  L->smem = smem;
  L->kernel_params = (void **)(uintptr_t)params;
  L->buf = (char *)(uintptr_t)buf;
  L->nbuf = nbuf;
  L->specs = Py_NewRef(specs);
  L->cs = cs;
  L->ncs = PyTuple_GET_SIZE(specs);
  L->owner = Py_NewRef(owner);
  return (PyObject *)L;
}

static PyTypeObject LauncherType = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "workbench.dsl.runtime._launch.Launcher",
  .tp_basicsize = sizeof(Launcher),
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_HAVE_GC,
  .tp_vectorcall_offset = offsetof(Launcher, vectorcall),
  .tp_call = PyVectorcall_Call,
  .tp_new = launcher_new,
  .tp_dealloc = (destructor)launcher_dealloc,
  .tp_traverse = (traverseproc)launcher_traverse,
  .tp_clear = (inquiry)launcher_clear,
  .tp_free = PyObject_GC_Del,
  .tp_doc = "A kernel's launch hot path: returns cuLaunchKernel's result, or None when the arguments do not match.",
};

/* A C function with cuLaunchKernel's signature that launches nothing and returns CUDA_SUCCESS:
 * what the launcher calls when there is no GPU, so that the overhead lab can time the host-side
 * guard and packing alone (a ctypes callback would cost more than the work measured). */
static int null_launch(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                       unsigned smem, void *stream, void **params, void **extra) {
  (void)f; (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)smem; (void)stream; (void)params; (void)extra;
  return 0;
}

static PyObject *null_launch_address(PyObject *mod, PyObject *unused) {
  return PyLong_FromVoidPtr((void *)(uintptr_t)&null_launch);
}

static PyMethodDef methods[] = {
  {"null_launch_address", (PyCFunction)null_launch_address, METH_NOARGS,
   "Address of a stand-in for cuLaunchKernel that launches nothing (host-side timing without a GPU)."},
  {"set_types", (PyCFunction)set_types, METH_VARARGS, "Install wb.Tensor, wb.Pointer and the producer tables."},
  {"pack", (PyCFunction)pack, METH_VARARGS, "pack(specs, args) -> parameter bytes, or None when refused."},
  {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "_launch", NULL, -1, methods};

PyMODINIT_FUNC PyInit__launch(void) {
  if (PyType_Ready(&LauncherType) < 0) return NULL;
  s_kernel_signature = PyUnicode_InternFromString("kernel_signature");
  s_dlpack = PyUnicode_InternFromString("__dlpack__");
  s_layout = PyUnicode_InternFromString("layout");
  PyObject *s_max_version = PyUnicode_InternFromString("max_version");
  PyObject *s_stream = PyUnicode_InternFromString("stream");
  if (!s_kernel_signature || !s_dlpack || !s_layout || !s_max_version ||
      !s_stream) return NULL;
  g_kw_ver = Py_BuildValue("(O)", s_max_version);
  g_kw_ver_stream = Py_BuildValue("(OO)", s_max_version, s_stream);
  g_maxver = Py_BuildValue("(ii)", 1, 3);
  g_no_sync = PyLong_FromLong(-1);
  if (!g_kw_ver || !g_kw_ver_stream || !g_maxver || !g_no_sync) return NULL;
  PyObject *m = PyModule_Create(&moduledef);
  if (!m) return NULL;
  Py_INCREF(&LauncherType);
  if (PyModule_AddObject(m, "Launcher", (PyObject *)&LauncherType) < 0) { Py_DECREF(&LauncherType); Py_DECREF(m); return NULL; }
  PyObject *kinds = Py_BuildValue("{s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i}", "POINTER", SPEC_POINTER, "INT32",
                                  SPEC_INT32, "INT64", SPEC_INT64, "FLOAT32", SPEC_FLOAT32, "BOOL", SPEC_BOOL,
                                  "CONSTEXPR", SPEC_CONSTEXPR, "TENSOR", SPEC_TENSOR, "NUMPY_SCALAR", SPEC_NUMPY_SCALAR,
                                  "EITHER", SPEC_EITHER, "TMA", SPEC_TMA);
  PyObject *np = Py_BuildValue("{s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i}", "Float32", NP_FLOAT32, "Float64",
                               NP_FLOAT64, "Int8", NP_INT8, "Int16", NP_INT16, "Int32", NP_INT32, "Int64", NP_INT64,
                               "Uint8", NP_UINT8, "Uint16", NP_UINT16, "Uint32", NP_UINT32, "Uint64", NP_UINT64,
                               "Boolean", NP_BOOL);
  if (!kinds || !np || PyModule_AddObject(m, "SPEC_KINDS", kinds) < 0 || PyModule_AddObject(m, "NUMPY_KINDS", np) < 0) {
    Py_XDECREF(kinds);
    Py_XDECREF(np);
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
