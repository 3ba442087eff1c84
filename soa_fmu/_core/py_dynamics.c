/* soa_fmu._core entry points of the tree algorithms: kinematics, Jacobian, Newton-Euler,
 * composite-body M, innovations forward dynamics (Algorithms 2-3), M^-1 (Identity 6), and the
 * configuration maps theta-dot = f(theta) beta, theta (+) delta. */
#include "pycore.h"

#define NARGS(n, sig)                                                                     \
    if (nargs != (n)) return PyErr_Format(PyExc_TypeError, sig " takes %d arguments", (n))

/* aba(data, q, qd, tau, use_fext) -> qdd   (seed 001 Algorithm 3) */
static PyObject *py_aba(PyObject *Py_UNUSED(mod), PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(5, "aba(data, q, qd, tau, use_fext)");
    DataObject *d = soa_py_data(args[0]);
    if (!d) return NULL;
    const soa_model *m = d->model->m;
    PyArrayObject *q = NULL, *qd = NULL, *tau = NULL, *out = NULL;
    PyObject *result = NULL;
    if (!(q = soa_py_vector(args[1], m->nq, "q")) || !(qd = soa_py_vector(args[2], m->nv, "qd"))
        || !(tau = soa_py_vector(args[3], m->nv, "tau")) || !(out = soa_py_new(1, m->nv, 0)))
        goto done;
    const int use_fext = PyObject_IsTrue(args[4]);
    if (use_fext < 0) goto done;
    soa_status st;
    SOA_PY_KERNEL(m, st, soa_aba(m, d->d, SOA_DBL(q), SOA_DBL(qd), SOA_DBL(tau), use_fext,
                                 SOA_DBL(out)));
    if (st.kind != SOA_OK) soa_py_status(d->model, st);
    else { result = (PyObject *)out; out = NULL; }
done:
    Py_XDECREF(q); Py_XDECREF(qd); Py_XDECREF(tau); Py_XDECREF(out);
    return result;
}

/* aba_bias_free(data, q, qd, tau, use_fext) -> qdd; alpha left in the data (seed 001 Algorithm 2) */
static PyObject *py_aba_bias_free(PyObject *Py_UNUSED(mod), PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(5, "aba_bias_free(data, q, qd, tau, use_fext)");
    DataObject *d = soa_py_data(args[0]);
    if (!d) return NULL;
    const soa_model *m = d->model->m;
    PyArrayObject *q = NULL, *qd = NULL, *tau = NULL, *out = NULL;
    PyObject *result = NULL;
    if (!(q = soa_py_vector(args[1], m->nq, "q")) || !(qd = soa_py_vector(args[2], m->nv, "qd"))
        || !(tau = soa_py_vector(args[3], m->nv, "tau")) || !(out = soa_py_new(1, m->nv, 0)))
        goto done;
    const int use_fext = PyObject_IsTrue(args[4]);
    if (use_fext < 0) goto done;
    soa_status st;
    SOA_PY_KERNEL(m, st, soa_aba_bias_free(m, d->d, SOA_DBL(q), SOA_DBL(qd), SOA_DBL(tau),
                                           use_fext, SOA_DBL(out)));
    if (st.kind != SOA_OK) soa_py_status(d->model, st);
    else { result = (PyObject *)out; out = NULL; }
done:
    Py_XDECREF(q); Py_XDECREF(qd); Py_XDECREF(tau); Py_XDECREF(out);
    return result;
}

/* rnea(data, q, qd, qdd, use_fext) -> tau   (seed 001 eq. 25) */
static PyObject *py_rnea(PyObject *Py_UNUSED(mod), PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(5, "rnea(data, q, qd, qdd, use_fext)");
    DataObject *d = soa_py_data(args[0]);
    if (!d) return NULL;
    const soa_model *m = d->model->m;
    PyArrayObject *q = NULL, *qd = NULL, *qdd = NULL, *out = NULL;
    PyObject *result = NULL;
    if (!(q = soa_py_vector(args[1], m->nq, "q")) || !(qd = soa_py_vector(args[2], m->nv, "qd"))
        || !(qdd = soa_py_vector(args[3], m->nv, "qdd")) || !(out = soa_py_new(1, m->nv, 0)))
        goto done;
    const int use_fext = PyObject_IsTrue(args[4]);
    if (use_fext < 0) goto done;
    soa_status st;
    SOA_PY_KERNEL(m, st, soa_rnea(m, d->d, SOA_DBL(q), SOA_DBL(qd), SOA_DBL(qdd), use_fext,
                                  SOA_DBL(out)));
    if (st.kind != SOA_OK) soa_py_status(d->model, st);
    else { result = (PyObject *)out; out = NULL; }
done:
    Py_XDECREF(q); Py_XDECREF(qd); Py_XDECREF(qdd); Py_XDECREF(out);
    return result;
}

typedef soa_status (*matrix_kernel)(const soa_model *, soa_data *, const double *, double *);

/* An nv x nv matrix of the configuration: crba (M) or minv (M^-1). */
static PyObject *configuration_matrix(PyObject *const *args, Py_ssize_t nargs, matrix_kernel f)
{
    NARGS(2, "(data, q)");
    DataObject *d = soa_py_data(args[0]);
    if (!d) return NULL;
    const soa_model *m = d->model->m;
    PyArrayObject *q = soa_py_vector(args[1], m->nq, "q");
    if (!q) return NULL;
    PyArrayObject *out = soa_py_new(2, m->nv, m->nv);
    if (!out) { Py_DECREF(q); return NULL; }
    soa_status st;
    SOA_PY_KERNEL(m, st, f(m, d->d, SOA_DBL(q), SOA_DBL(out)));
    Py_DECREF(q);
    if (st.kind != SOA_OK) {
        Py_DECREF(out);
        return soa_py_status(d->model, st);
    }
    return (PyObject *)out;
}

/* crba(data, q) -> M   (seed 001 Identity 1) */
static PyObject *py_crba(PyObject *Py_UNUSED(mod), PyObject *const *args, Py_ssize_t nargs)
{
    return configuration_matrix(args, nargs, soa_crba);
}

/* minv(data, q) -> M^-1   (seed 001 Identity 6) */
static PyObject *py_minv(PyObject *Py_UNUSED(mod), PyObject *const *args, Py_ssize_t nargs)
{
    return configuration_matrix(args, nargs, soa_minv);
}

/* kinematics(data, q, qd) -> None: placements (parent, world), V, a, b into the data. */
static PyObject *py_kinematics(PyObject *Py_UNUSED(mod), PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(3, "kinematics(data, q, qd)");
    DataObject *d = soa_py_data(args[0]);
    if (!d) return NULL;
    const soa_model *m = d->model->m;
    PyArrayObject *q = soa_py_vector(args[1], m->nq, "q"), *qd = NULL;
    if (!q || !(qd = soa_py_vector(args[2], m->nv, "qd"))) { Py_XDECREF(q); return NULL; }
    soa_status st;
    SOA_PY_KERNEL(m, st, soa_kinematics(m, d->d, SOA_DBL(q), SOA_DBL(qd)));
    Py_DECREF(q); Py_DECREF(qd);
    if (st.kind != SOA_OK) return soa_py_status(d->model, st);
    Py_RETURN_NONE;
}

/* point_jacobian(data, body, p_world) -> J (6 x nv), world axes at the point; needs kinematics. */
static PyObject *py_point_jacobian(PyObject *Py_UNUSED(mod), PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(3, "point_jacobian(data, body, p_world)");
    DataObject *d = soa_py_data(args[0]);
    if (!d) return NULL;
    const soa_model *m = d->model->m;
    const long body = PyLong_AsLong(args[1]);
    if (body == -1 && PyErr_Occurred()) return NULL;
    if (body < 0 || body >= m->nb) return PyErr_Format(PyExc_IndexError, "body index %ld out of range", body);
    PyArrayObject *p = soa_py_vector(args[2], 3, "p_world");
    if (!p) return NULL;
    if (soa_first_nonfinite(SOA_DBL(p), 3) >= 0) {
        Py_DECREF(p);
        return PyErr_Format(PyExc_ValueError, "p_world must be finite");
    }
    PyArrayObject *J = soa_py_new(2, 6, m->nv);
    if (J) soa_point_jacobian(m, d->d, (int)body, SOA_DBL(p), SOA_DBL(J));
    Py_DECREF(p);
    const int i = J ? soa_first_nonfinite(SOA_DBL(J), 6 * m->nv) : -1;
    if (i >= 0) {                                 /* the placements of the last kinematics overflowed */
        const soa_status st = {SOA_BAD_RESULT, i % m->nv};
        Py_DECREF(J);
        return soa_py_status(d->model, st);
    }
    return (PyObject *)J;
}

/* configuration_rate(model, q, qd) -> theta-dot = f(theta) beta (no checks: any finite input). */
static PyObject *py_configuration_rate(PyObject *Py_UNUSED(mod), PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(3, "configuration_rate(model, q, qd)");
    ModelObject *mo = soa_py_model(args[0]);
    if (!mo) return NULL;
    PyArrayObject *q = soa_py_vector(args[1], mo->m->nq, "q"), *qd = NULL, *out = NULL;
    if (q && (qd = soa_py_vector(args[2], mo->m->nv, "qd")) && (out = soa_py_new(1, mo->m->nq, 0)))
        soa_configuration_rate(mo->m, SOA_DBL(q), SOA_DBL(qd), SOA_DBL(out));
    Py_XDECREF(q); Py_XDECREF(qd);
    return (PyObject *)out;
}

/* integrate_configuration(model, q, dv) -> theta (+) delta (exponential map per joint). */
static PyObject *py_integrate_configuration(PyObject *Py_UNUSED(mod), PyObject *const *args,
                                            Py_ssize_t nargs)
{
    NARGS(3, "integrate_configuration(model, q, dv)");
    ModelObject *mo = soa_py_model(args[0]);
    if (!mo) return NULL;
    PyArrayObject *q = soa_py_vector(args[1], mo->m->nq, "q"), *dv = NULL, *out = NULL;
    if (q && (dv = soa_py_vector(args[2], mo->m->nv, "dv")) && (out = soa_py_new(1, mo->m->nq, 0)))
        soa_integrate_configuration(mo->m, SOA_DBL(q), SOA_DBL(dv), SOA_DBL(out));
    Py_XDECREF(q); Py_XDECREF(dv);
    return (PyObject *)out;
}

/* normalize_quaternions(model, q) -> None, in place. */
static PyObject *py_normalize_quaternions(PyObject *Py_UNUSED(mod), PyObject *const *args,
                                          Py_ssize_t nargs)
{
    NARGS(2, "normalize_quaternions(model, q)");
    ModelObject *mo = soa_py_model(args[0]);
    if (!mo) return NULL;
    PyArrayObject *q = soa_py_inout(args[1], mo->m->nq, "q");
    if (!q) return NULL;
    soa_normalize_quaternions(mo->m, SOA_DBL(q));
    Py_RETURN_NONE;
}

/* check_state(model, q, qd=None) -> None or StatusError naming the coordinate / joint. */
static PyObject *py_check_state(PyObject *Py_UNUSED(mod), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 && nargs != 3) return PyErr_Format(PyExc_TypeError, "check_state(model, q, qd=None)");
    ModelObject *mo = soa_py_model(args[0]);
    if (!mo) return NULL;
    PyArrayObject *q = soa_py_vector(args[1], mo->m->nq, "q"), *qd = NULL;
    if (!q) return NULL;
    soa_status st;
    if (nargs == 3 && args[2] != Py_None) {
        if (!(qd = soa_py_vector(args[2], mo->m->nv, "qd"))) { Py_DECREF(q); return NULL; }
        st = soa_check_state(mo->m, SOA_DBL(q), SOA_DBL(qd));
    } else {
        st = soa_check_configuration(mo->m, SOA_DBL(q));
    }
    Py_DECREF(q); Py_XDECREF(qd);
    if (st.kind != SOA_OK) return soa_py_status(mo, st);
    Py_RETURN_NONE;
}

/* energy(data, q, qd) -> (kinetic, potential)   (seed 000 sec. 2) */
static PyObject *py_energy(PyObject *Py_UNUSED(mod), PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(3, "energy(data, q, qd)");
    DataObject *d = soa_py_data(args[0]);
    if (!d) return NULL;
    const soa_model *m = d->model->m;
    PyArrayObject *q = NULL, *qd = NULL;
    PyObject *result = NULL;
    if (!(q = soa_py_vector(args[1], m->nq, "q")) || !(qd = soa_py_vector(args[2], m->nv, "qd")))
        goto done;
    double T, U;
    const soa_status st = soa_energy(m, d->d, SOA_DBL(q), SOA_DBL(qd), &T, &U);
    if (st.kind != SOA_OK) soa_py_status(d->model, st);
    else result = Py_BuildValue("(dd)", T, U);
done:
    Py_XDECREF(q); Py_XDECREF(qd);
    return result;
}

/* contact_forces(data, q, qd, use_fext): the contact forces at (q, qd) into the data (ct_force,
 * ct_point, ct_depth, sp_force, sp_depth, ct_fext; core/contact.c) */
static PyObject *py_contact_forces(PyObject *Py_UNUSED(mod), PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(4, "contact_forces(data, q, qd, use_fext)");
    DataObject *d = soa_py_data(args[0]);
    if (!d) return NULL;
    const soa_model *m = d->model->m;
    const int use = PyObject_IsTrue(args[3]);
    if (use < 0) return NULL;
    PyArrayObject *q = NULL, *qd = NULL;
    PyObject *result = NULL;
    if (!(q = soa_py_vector(args[1], m->nq, "q")) || !(qd = soa_py_vector(args[2], m->nv, "qd")))
        goto done;
    const soa_status st = soa_contact_state(m, d->d, SOA_DBL(q), SOA_DBL(qd), use);
    if (st.kind != SOA_OK) soa_py_status(d->model, st);
    else result = Py_NewRef(Py_None);
done:
    Py_XDECREF(q); Py_XDECREF(qd);
    return result;
}

/* contact_implicit(data, h, qdd): qdd <- (M + h J* B J)^-1 M qdd in place, after contact_forces
 * or a tree acceleration with contact at the state (core/articulated.c, contact.c) */
static PyObject *py_contact_implicit(PyObject *Py_UNUSED(mod), PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(3, "contact_implicit(data, h, qdd)");
    DataObject *d = soa_py_data(args[0]);
    if (!d) return NULL;
    const double h = PyFloat_AsDouble(args[1]);
    if (h == -1.0 && PyErr_Occurred()) return NULL;
    if (!(h >= 0.0 && h < 1e300)) return PyErr_Format(PyExc_ValueError, "h must be finite and >= 0");
    PyArrayObject *qdd = soa_py_inout(args[2], d->model->m->nv, "qdd");
    if (!qdd) return NULL;
    soa_contact_implicit(d->model->m, d->d, h, NULL, NULL, 0, SOA_DBL(qdd));
    Py_RETURN_NONE;
}

#define FAST(name, doc) {#name, (PyCFunction)(void (*)(void))py_##name, METH_FASTCALL, doc}

PyMethodDef soa_py_dynamics_methods[] = {
    FAST(aba, "aba(data, q, qd, tau, use_fext) -> qdd: innovations forward dynamics."),
    FAST(aba_bias_free, "aba_bias_free(data, q, qd, tau, use_fext) -> qdd: Algorithm 2; alpha in data."),
    FAST(rnea, "rnea(data, q, qd, qdd, use_fext) -> tau: Newton-Euler inverse dynamics."),
    FAST(crba, "crba(data, q) -> M: composite-body mass matrix."),
    FAST(minv, "minv(data, q) -> M^-1 by the innovations factorization."),
    FAST(kinematics, "kinematics(data, q, qd): placements, V, a, b into the data."),
    FAST(point_jacobian, "point_jacobian(data, body, p_world) -> J (6 x nv)."),
    FAST(configuration_rate, "configuration_rate(model, q, qd) -> f(q) qd."),
    FAST(integrate_configuration, "integrate_configuration(model, q, dv) -> q (+) dv."),
    FAST(normalize_quaternions, "normalize_quaternions(model, q): in place."),
    FAST(energy, "energy(data, q, qd) -> (kinetic, potential) energy."),
    FAST(contact_forces, "contact_forces(data, q, qd, use_fext): the contact forces into the data."),
    FAST(contact_implicit, "contact_implicit(data, h, qdd): qdd <- (M + h J* B J)^-1 M qdd in place."),
    FAST(check_state, "check_state(model, q, qd=None): raise StatusError on a bad state."),
    {NULL, NULL, 0, NULL}};
