/* soa_fmu._core entry points of the sensitivities family (core/sensitivities.c, core/derivatives.c):
 * dM/dtheta, the Coriolis matrix, the derivatives of inverse and forward dynamics, and the
 * state-space linearization. */
#include "pycore.h"

#define NARGS(n, sig)                                                                     \
    if (nargs != (n)) return PyErr_Format(PyExc_TypeError, sig " takes %d arguments", (n))

/* mass_matrix_derivative(data, q, slot) -> dM (count x nv x nv), dM[slot[i]] = dM/dtheta_i;
 * slot: nv integers in [-1, nv), count = max(slot) + 1   (seed 004 eq. 5.52) */
static PyObject *py_mass_matrix_derivative(PyObject *Py_UNUSED(mod), PyObject *const *args,
                                           Py_ssize_t nargs)
{
    NARGS(3, "mass_matrix_derivative(data, q, slot)");
    DataObject *d = soa_py_data(args[0]);
    if (!d) return NULL;
    const soa_model *m = d->model->m;
    PyArrayObject *q = NULL, *slot = NULL, *out = NULL;
    PyObject *result = NULL;
    if (!(q = soa_py_vector(args[1], m->nq, "q"))) goto done;
    slot = (PyArrayObject *)PyArray_FROMANY(args[2], NPY_INT, 1, 1, NPY_ARRAY_IN_ARRAY);
    if (!slot) goto done;
    if (PyArray_DIM(slot, 0) != m->nv) {
        PyErr_Format(PyExc_ValueError, "slot must have %d entries", m->nv);
        goto done;
    }
    int count = 0;
    for (int i = 0; i < m->nv; i++) {
        const int s = ((const int *)PyArray_DATA(slot))[i];
        if (s < -1 || s >= m->nv) {
            PyErr_Format(PyExc_ValueError, "slot[%d] = %d is outside [-1, %d)", i, s, m->nv);
            goto done;
        }
        if (s + 1 > count) count = s + 1;
    }
    npy_intp dims[3] = {count, m->nv, m->nv};
    if (!(out = (PyArrayObject *)PyArray_SimpleNew(3, dims, NPY_DOUBLE))) goto done;
    const soa_status st = soa_mass_matrix_derivative(m, d->d, SOA_DBL(q),
                                                     (const int *)PyArray_DATA(slot), count,
                                                     SOA_DBL(out));
    if (st.kind != SOA_OK) soa_py_status(d->model, st);
    else { result = (PyObject *)out; out = NULL; }
done:
    Py_XDECREF(q); Py_XDECREF(slot); Py_XDECREF(out);
    return result;
}

/* coriolis_matrix(data, q, qd) -> C (nv x nv) */
static PyObject *py_coriolis_matrix(PyObject *Py_UNUSED(mod), PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(3, "coriolis_matrix(data, q, qd)");
    DataObject *d = soa_py_data(args[0]);
    if (!d) return NULL;
    const soa_model *m = d->model->m;
    PyArrayObject *q = NULL, *qd = NULL, *out = NULL;
    PyObject *result = NULL;
    if (!(q = soa_py_vector(args[1], m->nq, "q")) || !(qd = soa_py_vector(args[2], m->nv, "qd"))
        || !(out = soa_py_new(2, m->nv, m->nv)))
        goto done;
    const soa_status st = soa_coriolis_matrix(m, d->d, SOA_DBL(q), SOA_DBL(qd), SOA_DBL(out));
    if (st.kind != SOA_OK) soa_py_status(d->model, st);
    else { result = (PyObject *)out; out = NULL; }
done:
    Py_XDECREF(q); Py_XDECREF(qd); Py_XDECREF(out);
    return result;
}

/* rnea_derivatives(data, q, qd, qdd, use_fext) -> (dtau/dtheta, dtau/dbeta) */
static PyObject *py_rnea_derivatives(PyObject *Py_UNUSED(mod), PyObject *const *args,
                                     Py_ssize_t nargs)
{
    NARGS(5, "rnea_derivatives(data, q, qd, qdd, use_fext)");
    DataObject *d = soa_py_data(args[0]);
    if (!d) return NULL;
    const soa_model *m = d->model->m;
    const int nv = m->nv;
    PyArrayObject *q = NULL, *qd = NULL, *qdd = NULL, *dq = NULL, *dv = NULL;
    PyObject *result = NULL;
    if (!(q = soa_py_vector(args[1], m->nq, "q")) || !(qd = soa_py_vector(args[2], nv, "qd"))
        || !(qdd = soa_py_vector(args[3], nv, "qdd")) || !(dq = soa_py_new(2, nv, nv))
        || !(dv = soa_py_new(2, nv, nv)))
        goto done;
    const soa_status st = soa_rnea_derivatives(m, d->d, SOA_DBL(q), SOA_DBL(qd), SOA_DBL(qdd),
                                               PyObject_IsTrue(args[4]), SOA_DBL(dq), SOA_DBL(dv), nv);
    if (st.kind != SOA_OK) soa_py_status(d->model, st);
    else result = PyTuple_Pack(2, dq, dv);
done:
    Py_XDECREF(q); Py_XDECREF(qd); Py_XDECREF(qdd); Py_XDECREF(dq); Py_XDECREF(dv);
    return result;
}

/* The forward-dynamics derivatives into ddq, ddv (row stride ld) and Minv; 0 or -1 (exception). */
static int aba_derivatives_into(PyObject *const *args, double *ddq, double *ddv, int ld, double *Minv)
{
    DataObject *d = (DataObject *)args[0];
    const soa_model *m = d->model->m;
    PyArrayObject *q = NULL, *qd = NULL, *tau = NULL;
    int r = -1;
    if (!(q = soa_py_vector(args[1], m->nq, "q")) || !(qd = soa_py_vector(args[2], m->nv, "qd"))
        || !(tau = soa_py_vector(args[3], m->nv, "tau")))
        goto done;
    const soa_status st = soa_aba_derivatives(m, d->d, SOA_DBL(q), SOA_DBL(qd), SOA_DBL(tau),
                                              PyObject_IsTrue(args[4]), ddq, ddv, ld, Minv);
    if (st.kind != SOA_OK) soa_py_status(d->model, st);
    else r = 0;
done:
    Py_XDECREF(q); Py_XDECREF(qd); Py_XDECREF(tau);
    return r;
}

/* aba_derivatives(data, q, qd, tau, use_fext) -> (dqdd/dtheta, dqdd/dbeta, M^-1) */
static PyObject *py_aba_derivatives(PyObject *Py_UNUSED(mod), PyObject *const *args,
                                    Py_ssize_t nargs)
{
    NARGS(5, "aba_derivatives(data, q, qd, tau, use_fext)");
    DataObject *d = soa_py_data(args[0]);
    if (!d) return NULL;
    const int nv = d->model->m->nv;
    PyArrayObject *ddq = soa_py_new(2, nv, nv), *ddv = NULL, *Minv = NULL;
    PyObject *result = NULL;
    if (ddq && (ddv = soa_py_new(2, nv, nv)) && (Minv = soa_py_new(2, nv, nv))
        && aba_derivatives_into(args, SOA_DBL(ddq), SOA_DBL(ddv), nv, SOA_DBL(Minv)) == 0)
        result = PyTuple_Pack(3, ddq, ddv, Minv);
    Py_XDECREF(ddq); Py_XDECREF(ddv); Py_XDECREF(Minv);
    return result;
}

/* linearize(data, q, qd, tau, use_fext) -> (A, B) with A = [[0, I], [dqdd/dtheta, dqdd/dbeta]],
 * B = [[0], [M^-1]] (2nv x 2nv, 2nv x nv).  The caller adds the 1/2 Gamma(beta) block of joints
 * whose velocity directions do not commute (soa_fmu.linearization). */
static PyObject *py_linearize(PyObject *Py_UNUSED(mod), PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(5, "linearize(data, q, qd, tau, use_fext)");
    DataObject *d = soa_py_data(args[0]);
    if (!d) return NULL;
    const int nv = d->model->m->nv;
    npy_intp da[2] = {2 * nv, 2 * nv}, db[2] = {2 * nv, nv};
    PyArrayObject *A = (PyArrayObject *)PyArray_ZEROS(2, da, NPY_DOUBLE, 0), *B = NULL;
    PyObject *result = NULL;
    if (A && (B = (PyArrayObject *)PyArray_ZEROS(2, db, NPY_DOUBLE, 0))) {
        double *a = SOA_DBL(A);
        for (int i = 0; i < nv; i++) a[i * 2 * nv + nv + i] = 1.0;
        if (aba_derivatives_into(args, a + 2 * nv * nv, a + 2 * nv * nv + nv, 2 * nv,
                                 SOA_DBL(B) + nv * nv) == 0)
            result = PyTuple_Pack(2, A, B);
    }
    Py_XDECREF(A); Py_XDECREF(B);
    return result;
}

#define FAST(name, doc) {#name, (PyCFunction)(void (*)(void))py_##name, METH_FASTCALL, doc}

PyMethodDef soa_py_sensitivities_methods[] = {
    FAST(mass_matrix_derivative, "mass_matrix_derivative(data, q, slot) -> dM[slot[i]] = dM/dtheta_i."),
    FAST(coriolis_matrix, "coriolis_matrix(data, q, qd) -> C."),
    FAST(rnea_derivatives, "rnea_derivatives(data, q, qd, qdd, use_fext) -> (dtau/dq, dtau/dv)."),
    FAST(aba_derivatives, "aba_derivatives(data, q, qd, tau, use_fext) -> (dqdd/dq, dqdd/dv, M^-1)."),
    FAST(linearize, "linearize(data, q, qd, tau, use_fext) -> (A, B) without the 1/2 Gamma block."),
    {NULL, NULL, 0, NULL}};
