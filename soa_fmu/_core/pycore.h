/* soa_fmu._core: the CPython extension over the C core (shared declarations of its files).
 *
 * Two types: Model (a soa_model plus the names its error messages use) and Data (a soa_data,
 * holding a reference to its Model).  Entry points are METH_FASTCALL functions taking a Data (or
 * a Model) and array-likes; they convert their arguments once, call the kernel, and turn a
 * failing soa_status into a StatusError (a ValueError) that names the coordinate or joint. */
#ifndef SOA_PYCORE_H
#define SOA_PYCORE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL soa_fmu_core_ARRAY_API
#ifndef SOA_PYCORE_MODULE
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>

#include "../core/soa.h"

typedef struct {
    PyObject_HEAD
    soa_model *m;
    PyObject *names;   /* (body, joint, position, velocity, constraint names): tuples of str */
} ModelObject;

typedef struct {
    PyObject_HEAD
    soa_data *d;
    ModelObject *model;
} DataObject;

extern PyTypeObject soa_ModelType;
extern PyTypeObject soa_DataType;
extern PyObject *soa_StatusError;

/* Argument helpers: each returns NULL with a Python exception set on failure. */
ModelObject *soa_py_model(PyObject *o);                 /* borrowed; a finished Model */
DataObject *soa_py_data(PyObject *o);                   /* borrowed */
PyArrayObject *soa_py_vector(PyObject *o, npy_intp n, const char *name);   /* new ref, float64 */
PyArrayObject *soa_py_inout(PyObject *o, npy_intp n, const char *name);    /* borrowed, in place */
PyArrayObject *soa_py_new(int ndim, npy_intp d0, npy_intp d1);            /* new, uninitialized */
PyObject *soa_py_status(ModelObject *mo, soa_status st); /* NULL + StatusError; st.kind != OK */
/* soa_py_status with what the data knows: the full text of SOA_CONSTRAINT_SINGULAR ("what: the
 * constraints [...] are singular ... (rank r of n active rows) ..."), the value a SOA_DIVERGED
 * step reached; and the redundancy warning of the last solve: (message, names) or None. */
PyObject *soa_py_closure_status(DataObject *d, soa_status st, const char *what);
PyObject *soa_py_closure_warning(DataObject *d);
#define SOA_DBL(a) ((double *)PyArray_DATA(a))

/* Threads: a kernel call writes only its Data (and the fresh output arrays); the Model is read.
 * So the tree algorithms (aba, rnea, crba, minv, kinematics) release the GIL around the kernel,
 * and threads that each pass their own Data (data=model.create_data()) run in parallel.  Two
 * threads sharing one Data (the default model.data) race: one Data per thread.  Below
 * SOA_PY_NOGIL_NV velocity dofs the call is shorter than releasing and taking the GIL back
 * (~0.1 us of a 1 us call at 7 dof), so it keeps the GIL. */
#define SOA_PY_NOGIL_NV 16
#define SOA_PY_KERNEL(m, st, call)                                                        \
    do {                                                                                  \
        if ((m)->nv >= SOA_PY_NOGIL_NV) { Py_BEGIN_ALLOW_THREADS (st) = (call); Py_END_ALLOW_THREADS } \
        else (st) = (call);                                                               \
    } while (0)

/* Method tables of the families, joined into the module's table at import (module.c). */
extern PyMethodDef soa_py_spatial_methods[];
extern PyMethodDef soa_py_dynamics_methods[];
extern PyMethodDef soa_py_integrators_methods[];
extern PyMethodDef soa_py_closed_chains_methods[];
extern PyMethodDef soa_py_sensitivities_methods[];

#endif
