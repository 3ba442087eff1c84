/* soa_fmu._core: module, the Model and Data types, the Python views of their buffers (derived
 * from the tables of soa.h), argument helpers and the status -> exception translation. */
#define SOA_PYCORE_MODULE
#include "pycore.h"

#include <math.h>

PyObject *soa_StatusError;

/* ------------------------------------------------------------------ views of the tables */
/* A dict {name: ndarray} viewing each buffer of a table; the arrays keep `owner` alive. */
static int add_view(PyObject *dict, PyObject *owner, const char *name, int typenum, void *ptr,
                    int ndim, int d0, int d1, int d2, int writeable)
{
    npy_intp dims[3] = {d0, d1, d2};
    PyObject *a = PyArray_New(&PyArray_Type, ndim, dims, typenum, NULL, ptr, 0,
                              NPY_ARRAY_CARRAY, NULL);
    if (!a) return -1;
    if (!writeable) PyArray_CLEARFLAGS((PyArrayObject *)a, NPY_ARRAY_WRITEABLE);
    Py_INCREF(owner);
    if (PyArray_SetBaseObject((PyArrayObject *)a, owner) < 0) {
        Py_DECREF(a);
        return -1;
    }
    const int r = PyDict_SetItemString(dict, name, a);
    Py_DECREF(a);
    return r;
}

/* ------------------------------------------------------------------ Model */
static PyObject *Model_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"nb", "nq", "nv", "names", "nc", "nm", "nsph", "npln", "nssp", "nhv",
                             NULL};
    soa_sizes s = {0, 0, 0, 0, 0, 0, 0, 0, 0};
    PyObject *names;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "iiiO!|iiiiii", kwlist, &s.nb, &s.nq, &s.nv,
                                     &PyTuple_Type, &names, &s.nc, &s.nm, &s.nsph, &s.npln, &s.nssp,
                                     &s.nhv))
        return NULL;
    if (s.nb < 0 || s.nq < 0 || s.nv < 0 || s.nm < 0 || s.nm > SOA_MAX_MODES
        || s.nq > (7 + s.nm) * s.nb || s.nv > (6 + s.nm) * s.nb || s.nc < 0 || s.nc >= (1 << 12)
        || s.nsph < 0 || s.nsph >= (1 << 12) || s.npln < 0 || s.npln >= (1 << 8)
        || s.nssp < 0 || s.nssp >= (1 << 16) || (s.nsph && (s.nm || s.nc)) || s.nhv < 0
        || s.nhv > s.nsph * SOA_HULL_MAX)
        return PyErr_Format(PyExc_ValueError, "invalid model sizes nb=%d nq=%d nv=%d nc=%d nm=%d "
                            "nsph=%d npln=%d nssp=%d nhv=%d", s.nb, s.nq, s.nv, s.nc, s.nm,
                            s.nsph, s.npln, s.nssp, s.nhv);
    /* (bodies, joints, positions, velocities[, constraints[, contacts]]) */
    const Py_ssize_t nnames = PyTuple_GET_SIZE(names);
    if (nnames < 4 || nnames > 6) {
        PyErr_SetString(PyExc_ValueError, "names: expected (bodies, joints, positions, velocities"
                        "[, constraints[, contacts]])");
        return NULL;
    }
    const Py_ssize_t want[6] = {s.nb, s.nb, s.nq, s.nv, s.nc, s.nsph + s.npln + s.nssp};
    if ((nnames < 5 && s.nc) || (nnames < 6 && want[5])) {
        PyErr_SetString(PyExc_ValueError, "names: a model with constraints or contacts needs their "
                        "names");
        return NULL;
    }
    for (int i = 0; i < nnames; i++) {
        PyObject *t = PyTuple_GET_ITEM(names, i);
        if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != want[i]) {
            PyErr_Format(PyExc_ValueError, "names[%d]: expected a tuple of %zd names", i, want[i]);
            return NULL;
        }
        for (Py_ssize_t j = 0; j < want[i]; j++)
            if (!PyUnicode_Check(PyTuple_GET_ITEM(t, j))) {
                PyErr_Format(PyExc_TypeError, "names[%d][%zd]: expected a str", i, j);
                return NULL;
            }
    }
    ModelObject *self = (ModelObject *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    self->m = soa_model_new(&s);
    if (!self->m) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    /* the six tuples, empty ones for absent constraints and contacts */
    self->names = PyTuple_New(6);
    for (int i = 0; self->names && i < 6; i++) {
        PyObject *t = i < nnames ? PyTuple_GET_ITEM(names, i) : PyTuple_New(0);
        if (!t) {
            Py_CLEAR(self->names);
            break;
        }
        if (i < nnames) Py_INCREF(t);
        PyTuple_SET_ITEM(self->names, i, t);
    }
    if (!self->names) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static void Model_dealloc(ModelObject *self)
{
    soa_model_free(self->m);
    Py_XDECREF(self->names);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* views(): {name: ndarray} over the model's buffers; writeable until finish(). */
static PyObject *Model_views(ModelObject *self, PyObject *Py_UNUSED(ignored))
{
    soa_model *m = self->m;
    SOA_SIZES(m);
    const int w = !m->finished;
    PyObject *dict = PyDict_New();
    if (!dict) return NULL;
#define VIEW_INT(name, ndim, d0, d1, d2) \
    if (add_view(dict, (PyObject *)self, #name, NPY_INT, m->name, ndim, d0, d1, d2, w) < 0) goto fail;
#define VIEW_REAL(name, ndim, d0, d1, d2) \
    if (add_view(dict, (PyObject *)self, #name, NPY_DOUBLE, m->name, ndim, d0, d1, d2, w) < 0) goto fail;
    SOA_MODEL_INTS(VIEW_INT)
    SOA_MODEL_REALS(VIEW_REAL)
    return dict;
fail:
    Py_DECREF(dict);
    return NULL;
}

/* finish(): the structural checks of soa_model_finish; afterwards the model is immutable. */
static PyObject *Model_finish(ModelObject *self, PyObject *Py_UNUSED(ignored))
{
    if (self->m->finished) Py_RETURN_NONE;
    const soa_status st = soa_model_finish(self->m);
    if (st.kind != SOA_OK) return soa_py_status(self, st);
    Py_RETURN_NONE;
}

/* set_gravity(g): a0 = [0; -g] (the one constant that may change after finish). */
static PyObject *Model_set_gravity(ModelObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 1) return PyErr_Format(PyExc_TypeError, "set_gravity(g) takes one argument");
    PyArrayObject *g = soa_py_vector(args[0], 3, "gravity");
    if (!g) return NULL;
    const double *x = SOA_DBL(g);
    if (!isfinite(x[0]) || !isfinite(x[1]) || !isfinite(x[2])) {
        Py_DECREF(g);
        return PyErr_Format(PyExc_ValueError, "gravity must be finite");
    }
    for (int i = 0; i < 3; i++) {
        self->m->a0[i] = 0.0;
        self->m->a0[3 + i] = -x[i];
    }
    Py_DECREF(g);
    Py_RETURN_NONE;
}

static PyObject *Model_get_size(ModelObject *self, void *which)
{
    const char c = *(const char *)which;
    return PyLong_FromLong(c == 'b' ? self->m->nb : c == 'q' ? self->m->nq
                           : c == 'c' ? self->m->nc : self->m->nv);
}

static PyMethodDef Model_methods[] = {
    {"views", (PyCFunction)Model_views, METH_NOARGS, "{name: ndarray} over the model's buffers."},
    {"finish", (PyCFunction)Model_finish, METH_NOARGS, "Check the model; it is immutable afterwards."},
    {"set_gravity", (PyCFunction)(void (*)(void))Model_set_gravity, METH_FASTCALL,
     "Set the gravity vector g (m/s^2)."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef Model_getset[] = {
    {"nb", (getter)Model_get_size, NULL, "number of bodies", "b"},
    {"nq", (getter)Model_get_size, NULL, "configuration size", "q"},
    {"nv", (getter)Model_get_size, NULL, "velocity size", "v"},
    {"nc", (getter)Model_get_size, NULL, "number of closure constraints", "c"},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject soa_ModelType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "soa_fmu._core.Model",
    .tp_basicsize = sizeof(ModelObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Model(nb, nq, nv, names, nc=0): the constants of a mechanism (soa_model).",
    .tp_new = Model_new,
    .tp_dealloc = (destructor)Model_dealloc,
    .tp_methods = Model_methods,
    .tp_getset = Model_getset,
};

/* ------------------------------------------------------------------ Data */
static PyObject *Data_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"model", NULL};
    PyObject *mo;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O", kwlist, &mo)) return NULL;
    ModelObject *model = soa_py_model(mo);
    if (!model) return NULL;
    DataObject *self = (DataObject *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    self->d = soa_data_new(model->m);
    if (!self->d) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    Py_INCREF(model);
    self->model = model;
    return (PyObject *)self;
}

static void Data_dealloc(DataObject *self)
{
    soa_data_free(self->d);
    Py_XDECREF(self->model);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Data_views(DataObject *self, PyObject *Py_UNUSED(ignored))
{
    SOA_SIZES(self->model->m);
    soa_data *d = self->d;
    PyObject *dict = PyDict_New();
    if (!dict) return NULL;
#define VIEW_DATA(name, ndim, d0, d1, d2) \
    if (add_view(dict, (PyObject *)self, #name, NPY_DOUBLE, d->name, ndim, d0, d1, d2, 1) < 0) goto fail;
#define VIEW_DATA_INT(name, ndim, d0, d1, d2) \
    if (add_view(dict, (PyObject *)self, #name, NPY_INT, d->name, ndim, d0, d1, d2, 1) < 0) goto fail;
    SOA_DATA_REALS(VIEW_DATA)
    SOA_DATA_INTS(VIEW_DATA_INT)
    return dict;
fail:
    Py_DECREF(dict);
    return NULL;
}

static PyObject *Data_get_model(DataObject *self, void *Py_UNUSED(closure))
{
    Py_INCREF(self->model);
    return (PyObject *)self->model;
}

static PyMethodDef Data_methods[] = {
    {"views", (PyCFunction)Data_views, METH_NOARGS, "{name: ndarray} over the workspace buffers."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef Data_getset[] = {
    {"model", (getter)Data_get_model, NULL, "the Model this workspace belongs to", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject soa_DataType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "soa_fmu._core.Data",
    .tp_basicsize = sizeof(DataObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Data(model): the workspace of every sweep (soa_data), allocated once.",
    .tp_new = Data_new,
    .tp_dealloc = (destructor)Data_dealloc,
    .tp_methods = Data_methods,
    .tp_getset = Data_getset,
};

/* ------------------------------------------------------------------ argument helpers */
ModelObject *soa_py_model(PyObject *o)
{
    if (Py_TYPE(o) != &soa_ModelType) {
        PyErr_Format(PyExc_TypeError, "expected a soa_fmu._core.Model, got %.100s", Py_TYPE(o)->tp_name);
        return NULL;
    }
    ModelObject *mo = (ModelObject *)o;
    if (!mo->m->finished) {
        PyErr_SetString(PyExc_ValueError, "the model has not been finished (call finish())");
        return NULL;
    }
    return mo;
}

DataObject *soa_py_data(PyObject *o)
{
    if (Py_TYPE(o) != &soa_DataType) {
        PyErr_Format(PyExc_TypeError, "expected a soa_fmu._core.Data, got %.100s", Py_TYPE(o)->tp_name);
        return NULL;
    }
    return (DataObject *)o;
}

static void shape_error(PyArrayObject *a, npy_intp n, const char *name)
{
    PyObject *shape = PyTuple_New(PyArray_NDIM(a));
    if (!shape) return;
    for (int i = 0; i < PyArray_NDIM(a); i++)
        PyTuple_SET_ITEM(shape, i, PyLong_FromSsize_t(PyArray_DIM(a, i)));
    PyErr_Format(PyExc_ValueError, "%s must have shape (%zd,), got %R", name, (Py_ssize_t)n, shape);
    Py_DECREF(shape);
}

PyArrayObject *soa_py_vector(PyObject *o, npy_intp n, const char *name)
{
    if (PyArray_CheckExact(o)) {
        PyArrayObject *a = (PyArrayObject *)o;
        if (PyArray_TYPE(a) == NPY_DOUBLE && PyArray_NDIM(a) == 1 && PyArray_DIM(a, 0) == n
            && PyArray_IS_C_CONTIGUOUS(a) && PyArray_ISALIGNED(a) && PyArray_ISNOTSWAPPED(a)) {
            Py_INCREF(a);
            return a;
        }
    }
    PyArrayObject *a = (PyArrayObject *)PyArray_FROMANY(o, NPY_DOUBLE, 0, 0,
                                                        NPY_ARRAY_IN_ARRAY | NPY_ARRAY_FORCECAST);
    if (!a) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "%s must be a vector of %zd numbers, got %.100s", name,
                     (Py_ssize_t)n, Py_TYPE(o)->tp_name);
        return NULL;
    }
    if (PyArray_NDIM(a) != 1 || PyArray_DIM(a, 0) != n) {
        shape_error(a, n, name);
        Py_DECREF(a);
        return NULL;
    }
    return a;
}

PyArrayObject *soa_py_inout(PyObject *o, npy_intp n, const char *name)
{
    if (!PyArray_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s must be a float64 ndarray (updated in place)", name);
        return NULL;
    }
    PyArrayObject *a = (PyArrayObject *)o;
    if (PyArray_TYPE(a) != NPY_DOUBLE || !PyArray_IS_C_CONTIGUOUS(a) || !PyArray_ISWRITEABLE(a)
        || !PyArray_ISALIGNED(a) || !PyArray_ISNOTSWAPPED(a)) {
        PyErr_Format(PyExc_TypeError, "%s must be a writeable, contiguous float64 ndarray", name);
        return NULL;
    }
    if (PyArray_NDIM(a) != 1 || PyArray_DIM(a, 0) != n) {
        shape_error(a, n, name);
        return NULL;
    }
    return a;
}

PyArrayObject *soa_py_new(int ndim, npy_intp d0, npy_intp d1)
{
    npy_intp dims[2] = {d0, d1};
    return (PyArrayObject *)PyArray_SimpleNew(ndim, dims, NPY_DOUBLE);
}

/* ------------------------------------------------------------------ status -> exception */
/* A name of the model for soa_status_message: the UTF-8 of the str in names[which][index]. */
static const char *name_of(const void *ctx, int which, int index)
{
    const ModelObject *mo = ctx;
    PyObject *t = PyTuple_GET_ITEM(mo->names, which);
    if (index < 0 || index >= PyTuple_GET_SIZE(t)) return NULL;
    return PyUnicode_AsUTF8(PyTuple_GET_ITEM(t, index));
}

/* Raises StatusError(message, kind, index): the message (core/status.c) names the coordinate,
 * joint or body. */
PyObject *soa_py_status(ModelObject *mo, soa_status st)
{
    char buf[512];
    const soa_names names = {name_of, mo};
    soa_status_message(mo->m, st, &names, buf, sizeof buf);
    PyErr_Clear();                            /* (a failed PyUnicode_AsUTF8 left "?") */
    PyObject *exc = PyObject_CallFunction(soa_StatusError, "sii", buf, st.kind, st.index);
    if (exc) {
        PyErr_SetObject(soa_StatusError, exc);
        Py_DECREF(exc);
    }
    return NULL;
}

/* ---- closed chains: step (D)'s messages name the involved constraints and the rank ---- */
PyObject *soa_py_closure_status(DataObject *d, soa_status st, const char *what)
{
    if (st.kind != SOA_CONSTRAINT_SINGULAR && st.kind != SOA_DIVERGED)
        return soa_py_status(d->model, st);
    char buf[2048];
    const soa_names names = {name_of, d->model};
    if (st.kind == SOA_DIVERGED)      /* with the value the step reached (d->diverged) */
        soa_diverged_message(d->model->m, d->d, st, &names, buf, sizeof buf);
    else
        soa_closure_message(d->model->m, d->d, what, &names, buf, sizeof buf);
    PyErr_Clear();
    PyObject *exc = PyObject_CallFunction(soa_StatusError, "sii", buf, st.kind, st.index);
    if (exc) {
        PyErr_SetObject(soa_StatusError, exc);
        Py_DECREF(exc);
    }
    return NULL;
}

/* None, or (message, names of the constraints involved) for redundant rows (ConstraintWarning). */
PyObject *soa_py_closure_warning(DataObject *d)
{
    if (!d->d->cl_info[2]) Py_RETURN_NONE;
    char buf[2048];
    const soa_model *m = d->model->m;
    const soa_names names = {name_of, d->model};
    soa_closure_message(m, d->d, NULL, &names, buf, sizeof buf);
    PyErr_Clear();
    PyObject *key = PyTuple_New(0);
    for (int j = 0; key && j < m->nc; j++)
        if (d->d->cl_involved[j]) {
            PyObject *n = PyTuple_GET_ITEM(PyTuple_GET_ITEM(d->model->names, SOA_NAME_CONSTRAINT), j);
            Py_INCREF(n);
            if (_PyTuple_Resize(&key, PyTuple_GET_SIZE(key) + 1) < 0) { Py_DECREF(n); break; }
            PyTuple_SET_ITEM(key, PyTuple_GET_SIZE(key) - 1, n);
        }
    if (!key) return NULL;
    PyObject *r = Py_BuildValue("(sN)", buf, key);
    return r;
}

/* ------------------------------------------------------------------ the module */
static PyMethodDef *families[] = {soa_py_spatial_methods, soa_py_dynamics_methods, soa_py_integrators_methods,
                                  soa_py_closed_chains_methods, soa_py_sensitivities_methods};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "_core",
    "The C99 engine of soa_fmu (soa_fmu/core) behind a thin CPython interface.", -1, NULL,
    NULL, NULL, NULL, NULL};

/* StatusError.__str__: the message (args[0]), not the tuple (message, kind, index). */
static PyObject *status_error_str(PyObject *unused, PyObject *self)
{
    (void)unused;
    PyObject *args = PyObject_GetAttrString(self, "args");
    if (!args) return NULL;
    PyObject *r = PyTuple_Check(args) && PyTuple_GET_SIZE(args) > 0
                      ? PyObject_Str(PyTuple_GET_ITEM(args, 0)) : PyObject_Str(args);
    Py_DECREF(args);
    return r;
}
static PyMethodDef status_error_str_def = {"__str__", status_error_str, METH_O,
                                           "The message of the error."};

static PyMethodDef *all_methods;   /* the families' tables joined (allocated once, at import) */

PyMODINIT_FUNC PyInit__core(void)
{
    import_array();
    size_t n = 0;
    for (size_t f = 0; f < sizeof families / sizeof *families; f++)
        for (PyMethodDef *d = families[f]; d->ml_name; d++) n++;
    all_methods = PyMem_Calloc(n + 1, sizeof(PyMethodDef));
    if (!all_methods) return PyErr_NoMemory();
    n = 0;
    for (size_t f = 0; f < sizeof families / sizeof *families; f++)
        for (PyMethodDef *d = families[f]; d->ml_name; d++) all_methods[n++] = *d;
    moduledef.m_methods = all_methods;
    if (PyType_Ready(&soa_ModelType) < 0 || PyType_Ready(&soa_DataType) < 0) return NULL;
    PyObject *mod = PyModule_Create(&moduledef);
    if (!mod) return NULL;
    PyObject *str = PyCFunction_New(&status_error_str_def, NULL);
    PyObject *meth = str ? PyInstanceMethod_New(str) : NULL;
    PyObject *dict = meth ? Py_BuildValue("{sO}", "__str__", meth) : NULL;
    Py_XDECREF(str);
    Py_XDECREF(meth);
    soa_StatusError = dict ? PyErr_NewExceptionWithDoc(
        "soa_fmu._core.StatusError",
        "A kernel refused its input: args are (message, kind, index); kind is a soa_kind; "
        "str() is the message.",
        PyExc_ValueError, dict) : NULL;
    Py_XDECREF(dict);
    if (!soa_StatusError) goto fail;
    Py_INCREF(soa_StatusError);
    if (PyModule_AddObject(mod, "StatusError", soa_StatusError) < 0) goto fail;
    Py_INCREF(&soa_ModelType);
    if (PyModule_AddObject(mod, "Model", (PyObject *)&soa_ModelType) < 0) goto fail;
    Py_INCREF(&soa_DataType);
    if (PyModule_AddObject(mod, "Data", (PyObject *)&soa_DataType) < 0) goto fail;
    static const struct { const char *name; int value; } constants[] = {
        {"OK", SOA_OK}, {"BAD_Q", SOA_BAD_Q}, {"BAD_QD", SOA_BAD_QD}, {"BAD_TAU", SOA_BAD_TAU},
        {"BAD_QDD", SOA_BAD_QDD}, {"BAD_QUAT", SOA_BAD_QUAT}, {"BAD_FEXT", SOA_BAD_FEXT},
        {"SINGULAR", SOA_SINGULAR}, {"DIVERGED", SOA_DIVERGED}, {"BAD_MODEL", SOA_BAD_MODEL},
        {"BAD_ARG", SOA_BAD_ARG}, {"STEP_TOO_SMALL", SOA_STEP_TOO_SMALL},
        {"TOO_MANY_STEPS", SOA_TOO_MANY_STEPS}, {"BAD_RESULT", SOA_BAD_RESULT},
        {"BAD_CONSTRAINT", SOA_BAD_CONSTRAINT}, {"BAD_FRAME", SOA_BAD_FRAME},
        {"BAD_U", SOA_BAD_U}, {"BAD_UDOT", SOA_BAD_UDOT}, {"BAD_ANCHOR", SOA_BAD_ANCHOR},
        {"BAD_GAINS", SOA_BAD_GAINS}, {"CONSTRAINT_SINGULAR", SOA_CONSTRAINT_SINGULAR},
        {"BAD_INERTIA", SOA_BAD_INERTIA}, {"BAD_DISSIPATION", SOA_BAD_DISSIPATION},
        {"UNSUPPORTED", SOA_UNSUPPORTED}, {"BAD_JOINT", SOA_BAD_JOINT},
        {"IMPLICIT_UNSUPPORTED", SOA_IMPLICIT_UNSUPPORTED},
        {"TOO_MANY_SUBSTEPS", SOA_TOO_MANY_SUBSTEPS}, {"MAX_SUBSTEPS", SOA_MAX_SUBSTEPS},
        {"BAD_CONTACT", SOA_BAD_CONTACT}, {"BAD_MIMIC", SOA_BAD_MIMIC}};
    for (size_t i = 0; i < sizeof constants / sizeof *constants; i++)
        if (PyModule_AddIntConstant(mod, constants[i].name, constants[i].value) < 0) goto fail;
    if (PyModule_AddObject(mod, "MIN_MAX_STEP", PyFloat_FromDouble(SOA_MIN_MAX_STEP)) < 0)
        goto fail;
    return mod;
fail:
    Py_DECREF(mod);
    return NULL;
}
