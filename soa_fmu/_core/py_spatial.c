/* soa_fmu._core access to the spatial helpers of core/spatial.h, so that tests can check the
 * static inline functions every sweep is built from against their dense definitions. */
#include "pycore.h"
#include "../core/spatial.h"

/* A float64 C-contiguous array of exactly n elements (any shape), new reference. */
static PyArrayObject *exactly(PyObject *o, npy_intp n, const char *name)
{
    PyArrayObject *a = (PyArrayObject *)PyArray_FROMANY(o, NPY_DOUBLE, 0, 0, NPY_ARRAY_IN_ARRAY);
    if (a && PyArray_SIZE(a) != n) {
        PyErr_Format(PyExc_ValueError, "%s must have %zd elements", name, (Py_ssize_t)n);
        Py_DECREF(a);
        return NULL;
    }
    return a;
}

/* op(R, l, x): apply_phi / apply_phi_star (6-vector x) or add_phi_inertia (6x6 x, acc += ...). */
static PyObject *phi_op(PyObject *args, int which)
{
    PyObject *Ro, *lo, *xo, *acco = NULL;
    if (!PyArg_ParseTuple(args, which == 2 ? "OOOO" : "OOO", &Ro, &lo, &xo, &acco)) return NULL;
    PyArrayObject *R = exactly(Ro, 9, "R"), *l = NULL, *x = NULL, *out = NULL;
    if (!R || !(l = exactly(lo, 3, "l")) || !(x = exactly(xo, which == 2 ? 36 : 6, "x"))) goto done;
    if (which == 2) {
        PyArrayObject *acc = exactly(acco, 36, "acc");
        if (!acc) goto done;
        out = soa_py_new(2, 6, 6);
        if (out) {
            for (int i = 0; i < 36; i++) SOA_DBL(out)[i] = SOA_DBL(acc)[i];
            add_phi_inertia(SOA_DBL(R), SOA_DBL(l), SOA_DBL(x), SOA_DBL(out));
        }
        Py_DECREF(acc);
    } else if ((out = soa_py_new(1, 6, 0))) {
        double *o = SOA_DBL(out);
        if (which == 0) {
            for (int i = 0; i < 6; i++) o[i] = 0.0;
            add_phi(SOA_DBL(R), SOA_DBL(l), SOA_DBL(x), o);
        } else {
            apply_phi_star(SOA_DBL(R), SOA_DBL(l), SOA_DBL(x), o);
        }
    }
done:
    Py_XDECREF(R); Py_XDECREF(l); Py_XDECREF(x);
    return (PyObject *)out;
}

static PyObject *py_apply_phi(PyObject *Py_UNUSED(m), PyObject *args) { return phi_op(args, 0); }
static PyObject *py_apply_phi_star(PyObject *Py_UNUSED(m), PyObject *args) { return phi_op(args, 1); }
static PyObject *py_add_phi_inertia(PyObject *Py_UNUSED(m), PyObject *args) { return phi_op(args, 2); }

/* cross_motion(V, x) / cross_force(V, f) -> 6-vector. */
static PyObject *cross_op(PyObject *args, int force)
{
    PyObject *Vo, *xo;
    if (!PyArg_ParseTuple(args, "OO", &Vo, &xo)) return NULL;
    PyArrayObject *V = exactly(Vo, 6, "V"), *x = NULL, *out = NULL;
    if (V && (x = exactly(xo, 6, "x")) && (out = soa_py_new(1, 6, 0))) {
        if (force) cross_force(SOA_DBL(V), SOA_DBL(x), SOA_DBL(out));
        else cross_motion(SOA_DBL(V), SOA_DBL(x), SOA_DBL(out));
    }
    Py_XDECREF(V); Py_XDECREF(x);
    return (PyObject *)out;
}

static PyObject *py_cross_motion(PyObject *Py_UNUSED(m), PyObject *args) { return cross_op(args, 0); }
static PyObject *py_cross_force(PyObject *Py_UNUSED(m), PyObject *args) { return cross_op(args, 1); }

static PyObject *py_quat_to_matrix(PyObject *Py_UNUSED(m), PyObject *args)
{
    double w, x, y, z;
    if (!PyArg_ParseTuple(args, "dddd", &w, &x, &y, &z)) return NULL;
    PyArrayObject *R = soa_py_new(2, 3, 3);
    if (R) quat_to_matrix(w, x, y, z, SOA_DBL(R));
    return (PyObject *)R;
}

PyMethodDef soa_py_spatial_methods[] = {
    {"apply_phi", py_apply_phi, METH_VARARGS, "apply_phi(R, l, f) -> phi(p, k) f"},
    {"apply_phi_star", py_apply_phi_star, METH_VARARGS, "apply_phi_star(R, l, V) -> phi*(p, k) V"},
    {"add_phi_inertia", py_add_phi_inertia, METH_VARARGS,
     "add_phi_inertia(R, l, P, acc) -> acc + phi(p, k) P phi*(p, k)"},
    {"cross_motion", py_cross_motion, METH_VARARGS, "cross_motion(V, x) -> V x~ x"},
    {"cross_force", py_cross_force, METH_VARARGS, "cross_force(V, f) -> V x* f"},
    {"quat_to_matrix", py_quat_to_matrix, METH_VARARGS, "quat_to_matrix(w, x, y, z) -> R"},
    {NULL, NULL, 0, NULL}};
