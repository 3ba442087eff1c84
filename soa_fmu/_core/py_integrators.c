/* soa_fmu._core entry points of the integrators (core/integrators.c): fixed-step RK4 and
 * semi-implicit Euler on (theta, beta) in place. */
#include "pycore.h"

typedef soa_status (*step_kernel)(const soa_model *, soa_data *, double *, double *,
                                  const double *, int, double, int, double *);

/* (data, q, qd, tau, use_fext, h, nsub) -> qdd; q and qd are float64 arrays updated in place. */
static PyObject *fixed_step(PyObject *const *args, Py_ssize_t nargs, step_kernel f)
{
    if (nargs != 7) return PyErr_Format(PyExc_TypeError, "(data, q, qd, tau, use_fext, h, nsub)");
    DataObject *d = soa_py_data(args[0]);
    if (!d) return NULL;
    const soa_model *m = d->model->m;
    PyArrayObject *q = soa_py_inout(args[1], m->nq, "q"), *qd = NULL, *tau = NULL, *out = NULL;
    if (!q || !(qd = soa_py_inout(args[2], m->nv, "qd"))) return NULL;
    const double h = PyFloat_AsDouble(args[5]);
    const long nsub = PyLong_AsLong(args[6]);
    if (PyErr_Occurred()) return NULL;
    if (nsub < 1 || nsub > (1L << 30)) return PyErr_Format(PyExc_ValueError, "nsub must be in 1..2^30");
    if (!(tau = soa_py_vector(args[3], m->nv, "tau"))) return NULL;
    if (!(out = soa_py_new(1, m->nv, 0))) { Py_DECREF(tau); return NULL; }
    const soa_status st = f(m, d->d, SOA_DBL(q), SOA_DBL(qd), SOA_DBL(tau),
                            PyObject_IsTrue(args[4]), h, (int)nsub, SOA_DBL(out));
    Py_DECREF(tau);
    if (st.kind != SOA_OK) {
        Py_DECREF(out);
        return soa_py_status(d->model, st);
    }
    return (PyObject *)out;
}

static PyObject *py_rk4(PyObject *Py_UNUSED(mod), PyObject *const *args, Py_ssize_t nargs)
{
    return fixed_step(args, nargs, soa_rk4);
}

static PyObject *py_euler(PyObject *Py_UNUSED(mod), PyObject *const *args, Py_ssize_t nargs)
{
    return fixed_step(args, nargs, soa_euler);
}

PyMethodDef soa_py_integrators_methods[] = {
    {"rk4", (PyCFunction)(void (*)(void))py_rk4, METH_FASTCALL,
     "rk4(data, q, qd, tau, use_fext, h, nsub) -> qdd: nsub RK4 steps, q and qd in place."},
    {"euler", (PyCFunction)(void (*)(void))py_euler, METH_FASTCALL,
     "euler(data, q, qd, tau, use_fext, h, nsub) -> qdd: nsub semi-implicit Euler steps."},
    {NULL, NULL, 0, NULL}};
