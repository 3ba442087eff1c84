/* soa_fmu._core entry points of the integrators (core/integrators.c, core/dop853.c): fixed-step
 * RK4 and semi-implicit Euler, and adaptive DOP853, on (theta, beta) in place, with the tree's
 * acceleration or (dop853_callback) a Python function's. */
#include "pycore.h"

#include <math.h>

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
    const int use_fext = PyObject_IsTrue(args[4]);
    if (use_fext < 0) { Py_DECREF(tau); Py_DECREF(out); return NULL; }
    const soa_status st = f(m, d->d, SOA_DBL(q), SOA_DBL(qd), SOA_DBL(tau), use_fext, h, (int)nsub,
                            SOA_DBL(out));
    Py_DECREF(tau);
    if (st.kind != SOA_OK) {
        Py_DECREF(out);
        return soa_py_closure_status(d, st, NULL);      /* (a divergence: with its value) */
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

/* ------------------------------------------------------------------ DOP853 */
/* A Python acceleration accel(q, qd, t) -> qdd as a soa_accel; a Python exception becomes
 * {SOA_BAD_ARG, -1} with the exception left set. */
typedef struct {
    PyObject *fn;
    npy_intp nq, nv;
} py_accel_ctx;

static soa_status py_accel(void *ctx, const double *q, const double *qd, double t, double *qdd)
{
    const py_accel_ctx *c = ctx;
    soa_status st = {SOA_BAD_ARG, -1};
    PyArrayObject *qa = soa_py_new(1, c->nq, 0), *va = NULL, *a = NULL;
    PyObject *ta = NULL, *r = NULL;
    if (!qa || !(va = soa_py_new(1, c->nv, 0)) || !(ta = PyFloat_FromDouble(t))) goto done;
    for (npy_intp i = 0; i < c->nq; i++) SOA_DBL(qa)[i] = q[i];
    for (npy_intp i = 0; i < c->nv; i++) SOA_DBL(va)[i] = qd[i];
    if (!(r = PyObject_CallFunctionObjArgs(c->fn, qa, va, ta, NULL))) goto done;
    if (!(a = soa_py_vector(r, c->nv, "qdd"))) goto done;
    for (npy_intp i = 0; i < c->nv; i++) qdd[i] = SOA_DBL(a)[i];
    st.kind = SOA_OK;
    st.index = 0;
done:
    Py_XDECREF(qa); Py_XDECREF(va); Py_XDECREF(ta); Py_XDECREF(r); Py_XDECREF(a);
    return st;
}

/* The shared tail of both DOP853 entries: (..., t, h, rtol, atol, max_step, h_prev) from
 * args[first], the kernel run with d->dop_h = h_prev, -> (qdd, h_last). */
static PyObject *dop853_entry(DataObject *d, PyArrayObject *q, PyArrayObject *qd,
                              const double *tau, int use_fext, PyObject *fn,
                              PyObject *const *args)
{
    const soa_model *m = d->model->m;
    double x[6];
    for (int i = 0; i < 6; i++) {
        x[i] = PyFloat_AsDouble(args[i]);
        if (x[i] == -1.0 && PyErr_Occurred()) return NULL;
    }
    PyArrayObject *out = soa_py_new(1, m->nv, 0);
    if (!out) return NULL;
    d->d->dop_h[0] = x[5];
    soa_status st;
    if (fn) {
        py_accel_ctx ctx = {fn, m->nq, m->nv};
        const soa_accel acc = {py_accel, &ctx};
        st = soa_dop853_with(m, d->d, acc, SOA_DBL(q), SOA_DBL(qd), x[0], x[1], x[2], x[3], x[4],
                             SOA_DBL(out));
    } else {
        st = soa_dop853(m, d->d, SOA_DBL(q), SOA_DBL(qd), tau, use_fext, x[0], x[1], x[2], x[3],
                        x[4], SOA_DBL(out));
    }
    if (st.kind != SOA_OK) {
        Py_DECREF(out);
        if (PyErr_Occurred()) return NULL;      /* raised by the Python acceleration */
        return soa_py_closure_status(d, st, NULL);
    }
    return Py_BuildValue("(Nd)", out, d->d->dop_h[0]);
}

/* dop853(data, q, qd, tau, use_fext, t, h, rtol, atol, max_step, h_prev) -> (qdd, h_last) */
static PyObject *py_dop853(PyObject *Py_UNUSED(mod), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 11)
        return PyErr_Format(PyExc_TypeError,
                            "dop853(data, q, qd, tau, use_fext, t, h, rtol, atol, max_step, h_prev)");
    DataObject *d = soa_py_data(args[0]);
    if (!d) return NULL;
    const soa_model *m = d->model->m;
    PyArrayObject *q = soa_py_inout(args[1], m->nq, "q"), *qd = NULL, *tau = NULL;
    if (!q || !(qd = soa_py_inout(args[2], m->nv, "qd"))) return NULL;
    if (!(tau = soa_py_vector(args[3], m->nv, "tau"))) return NULL;
    const int use_fext = PyObject_IsTrue(args[4]);
    PyObject *r = use_fext < 0 ? NULL : dop853_entry(d, q, qd, SOA_DBL(tau), use_fext, NULL, args + 5);
    Py_DECREF(tau);
    return r;
}

/* dop853_callback(data, q, qd, accel, t, h, rtol, atol, max_step, h_prev) -> (qdd, h_last),
 * beta-dot = accel(q, qd, t) a Python function (constrained dynamics). */
static PyObject *py_dop853_callback(PyObject *Py_UNUSED(mod), PyObject *const *args,
                                    Py_ssize_t nargs)
{
    if (nargs != 10)
        return PyErr_Format(PyExc_TypeError,
                            "dop853_callback(data, q, qd, accel, t, h, rtol, atol, max_step, h_prev)");
    DataObject *d = soa_py_data(args[0]);
    if (!d) return NULL;
    const soa_model *m = d->model->m;
    PyArrayObject *q = soa_py_inout(args[1], m->nq, "q"), *qd = NULL;
    if (!q || !(qd = soa_py_inout(args[2], m->nv, "qd"))) return NULL;
    if (!PyCallable_Check(args[3]))
        return PyErr_Format(PyExc_TypeError, "accel must be callable as accel(q, qd, t) -> qdd");
    return dop853_entry(d, q, qd, NULL, 0, args[3], args + 4);
}

/* joint_forces(data, q, qd, tau) -> tau - d qd - f_c tanh(qd / v_s) + stops: the joint forces the
 * simulator applies (core/dissipation.c); a new array. */
static PyObject *py_joint_forces(PyObject *Py_UNUSED(mod), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) return PyErr_Format(PyExc_TypeError, "joint_forces(data, q, qd, tau)");
    DataObject *d = soa_py_data(args[0]);
    if (!d) return NULL;
    const soa_model *m = d->model->m;
    PyArrayObject *q = soa_py_vector(args[1], m->nq, "q"), *qd = NULL, *tau = NULL, *out = NULL;
    if (!q) return NULL;
    if ((qd = soa_py_vector(args[2], m->nv, "qd")) && (tau = soa_py_vector(args[3], m->nv, "tau"))
        && (out = soa_py_new(1, m->nv, 0))) {
        const double *T = soa_joint_forces(m, d->d, SOA_DBL(q), SOA_DBL(qd), SOA_DBL(tau));
        for (int i = 0; i < m->nv; i++) SOA_DBL(out)[i] = T[i];
    }
    Py_DECREF(q);
    Py_XDECREF(qd);
    Py_XDECREF(tau);
    return (PyObject *)out;
}

/* stop_forces(data, q, qd) -> the joint stops' forces per velocity dof (core/dissipation.c). */
static PyObject *py_stop_forces(PyObject *Py_UNUSED(mod), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) return PyErr_Format(PyExc_TypeError, "stop_forces(data, q, qd)");
    DataObject *d = soa_py_data(args[0]);
    if (!d) return NULL;
    const soa_model *m = d->model->m;
    PyArrayObject *q = soa_py_vector(args[1], m->nq, "q"), *qd = NULL, *out = NULL;
    if (!q) return NULL;
    if ((qd = soa_py_vector(args[2], m->nv, "qd")) && (out = soa_py_new(1, m->nv, 0)))
        for (int i = 0; i < m->nv; i++)
            SOA_DBL(out)[i] = soa_stop_force(m, i, SOA_DBL(q), SOA_DBL(qd), NULL, NULL);
    Py_DECREF(q);
    Py_XDECREF(qd);
    return (PyObject *)out;
}

/* auto_method(model) -> the integrator auto picks (soa.h SOA_RK4 ...): soa_auto_method. */
static PyObject *py_auto_method(PyObject *Py_UNUSED(mod), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 1) return PyErr_Format(PyExc_TypeError, "auto_method(data)");
    DataObject *d = soa_py_data(args[0]);
    if (!d) return NULL;
    return PyLong_FromLong(soa_auto_method(d->model->m));
}

/* auto_max_step(data, q) -> auto's longest RK4 sub-step at q (inf: no bound):
 * soa_auto_max_step. */
static PyObject *py_auto_max_step(PyObject *Py_UNUSED(mod), PyObject *const *args,
                                  Py_ssize_t nargs)
{
    if (nargs != 2) return PyErr_Format(PyExc_TypeError, "auto_max_step(data, q)");
    DataObject *d = soa_py_data(args[0]);
    if (!d) return NULL;
    PyArrayObject *q = soa_py_vector(args[1], d->model->m->nq, "q");
    if (!q) return NULL;
    const double h = soa_auto_max_step(d->model->m, d->d, SOA_DBL(q));
    Py_DECREF(q);
    return PyFloat_FromDouble(h);
}

/* mimic_couple(data, qdd) -> None: the mimic couplings on qdd in place, from the factors of the
 * last aba / inertial forward dynamics on this data (core/mimic.c). */
static PyObject *py_mimic_couple(PyObject *Py_UNUSED(mod), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) return PyErr_Format(PyExc_TypeError, "mimic_couple(data, qdd)");
    DataObject *d = soa_py_data(args[0]);
    if (!d) return NULL;
    PyArrayObject *qdd = soa_py_inout(args[1], d->model->m->nv, "qdd");
    if (!qdd) return NULL;
    soa_mimic_couple(d->model->m, d->d, SOA_DBL(qdd));
    Py_RETURN_NONE;
}

/* mimic_project(model, q, qd) -> None: q_m = k q_j + c, qd_m = k qd_j in place (core/mimic.c). */
static PyObject *py_mimic_project(PyObject *Py_UNUSED(mod), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) return PyErr_Format(PyExc_TypeError, "mimic_project(model, q, qd)");
    ModelObject *mo = soa_py_model(args[0]);
    if (!mo) return NULL;
    PyArrayObject *q = soa_py_inout(args[1], mo->m->nq, "q"), *qd = NULL;
    if (!q || !(qd = soa_py_inout(args[2], mo->m->nv, "qd"))) return NULL;
    soa_mimic_project(mo->m, SOA_DBL(q), SOA_DBL(qd));
    Py_RETURN_NONE;
}

static PyObject *py_implicit(PyObject *Py_UNUSED(mod), PyObject *const *args, Py_ssize_t nargs)
{
    return fixed_step(args, nargs, soa_implicit);
}

static PyObject *py_rosenbrock(PyObject *Py_UNUSED(mod), PyObject *const *args, Py_ssize_t nargs)
{
    return fixed_step(args, nargs, soa_rosenbrock);
}

static PyObject *py_ros34pw2(PyObject *Py_UNUSED(mod), PyObject *const *args, Py_ssize_t nargs)
{
    return fixed_step(args, nargs, soa_ros34pw2);
}

static PyObject *py_rk4w(PyObject *Py_UNUSED(mod), PyObject *const *args, Py_ssize_t nargs)
{
    return fixed_step(args, nargs, soa_rk4w);
}

typedef soa_status (*adaptive_fn)(const soa_model *, soa_data *, double *, double *,
                                  const double *, int, double, double, double, double, double *);

/* NAME(data, q, qd, tau, use_fext, h, rtol, atol, max_step, h_prev) -> (qdd, h_next): a
 * Rosenbrock method's error-controlled sub-steps (fn), q and qd in place. */
static PyObject *adaptive_step(PyObject *const *args, Py_ssize_t nargs, const char *name,
                               adaptive_fn fn)
{
    if (nargs != 10)
        return PyErr_Format(PyExc_TypeError, "%s(data, q, qd, tau, use_fext, h, rtol, atol, "
                            "max_step, h_prev)", name);
    DataObject *d = soa_py_data(args[0]);
    if (!d) return NULL;
    const soa_model *m = d->model->m;
    PyArrayObject *q = soa_py_inout(args[1], m->nq, "q"), *qd = NULL, *tau = NULL, *out = NULL;
    if (!q || !(qd = soa_py_inout(args[2], m->nv, "qd"))) return NULL;
    double x[5];
    for (int i = 0; i < 5; i++) {
        x[i] = PyFloat_AsDouble(args[5 + i]);
        if (x[i] == -1.0 && PyErr_Occurred()) return NULL;
    }
    const int use_fext = PyObject_IsTrue(args[4]);
    if (use_fext < 0) return NULL;
    if (!(tau = soa_py_vector(args[3], m->nv, "tau"))) return NULL;
    if (!(out = soa_py_new(1, m->nv, 0))) { Py_DECREF(tau); return NULL; }
    d->d->dop_h[0] = x[4];
    const soa_status st = fn(m, d->d, SOA_DBL(q), SOA_DBL(qd), SOA_DBL(tau), use_fext, x[0], x[1],
                             x[2], x[3], SOA_DBL(out));
    Py_DECREF(tau);
    if (st.kind != SOA_OK) {
        Py_DECREF(out);
        return soa_py_closure_status(d, st, NULL);
    }
    return Py_BuildValue("(Nd)", out, d->d->dop_h[0]);
}

static PyObject *py_rosenbrock_adaptive(PyObject *Py_UNUSED(mod), PyObject *const *args,
                                        Py_ssize_t nargs)
{
    return adaptive_step(args, nargs, "rosenbrock_adaptive", soa_rosenbrock_adaptive);
}

static PyObject *py_ros34pw2_adaptive(PyObject *Py_UNUSED(mod), PyObject *const *args,
                                      Py_ssize_t nargs)
{
    return adaptive_step(args, nargs, "ros34pw2_adaptive", soa_ros34pw2_adaptive);
}

static PyObject *py_rk4w_adaptive(PyObject *Py_UNUSED(mod), PyObject *const *args,
                                  Py_ssize_t nargs)
{
    return adaptive_step(args, nargs, "rk4w_adaptive", soa_rk4w_adaptive);
}

/* rosenbrock_tableau(method) -> {"gamma", "a", "c", "m", "e"}: soa_rosenbrock_tableau, the
 * arrays cut to the stage count s (a, c: s x s). */
static PyObject *py_rosenbrock_tableau(PyObject *Py_UNUSED(mod), PyObject *const *args,
                                       Py_ssize_t nargs)
{
    if (nargs != 1) return PyErr_Format(PyExc_TypeError, "rosenbrock_tableau(method)");
    const long method = PyLong_AsLong(args[0]);
    if (method == -1 && PyErr_Occurred()) return NULL;
    enum { S = SOA_ROS_MAX_STAGES };
    double gamma = 0.0, a[S * S], c[S * S], m[S], e[S];
    const int s = method < 0 || method >= SOA_NMETHODS
                      ? 0 : soa_rosenbrock_tableau((int)method, &gamma, a, c, m, e);
    if (s <= 0)
        return PyErr_Format(PyExc_ValueError, "method %ld is not a Rosenbrock method", method);
    PyArrayObject *arr[4] = {soa_py_new(2, s, s), soa_py_new(2, s, s), soa_py_new(1, s, 0),
                             soa_py_new(1, s, 0)};
    PyObject *dict = NULL;
    if (arr[0] && arr[1] && arr[2] && arr[3]) {
        for (int i = 0; i < s; i++) {
            for (int j = 0; j < s; j++) {
                SOA_DBL(arr[0])[s * i + j] = a[S * i + j];
                SOA_DBL(arr[1])[s * i + j] = c[S * i + j];
            }
            SOA_DBL(arr[2])[i] = m[i];
            SOA_DBL(arr[3])[i] = e[i];
        }
        dict = Py_BuildValue("{s:d,s:O,s:O,s:O,s:O}", "gamma", gamma, "a", arr[0], "c", arr[1],
                             "m", arr[2], "e", arr[3]);
    }
    for (int k = 0; k < 4; k++) Py_XDECREF(arr[k]);
    return dict;
}

#define FAST(name, doc) {#name, (PyCFunction)(void (*)(void))py_##name, METH_FASTCALL, doc}

PyMethodDef soa_py_integrators_methods[] = {
    FAST(rk4, "rk4(data, q, qd, tau, use_fext, h, nsub) -> qdd: nsub RK4 steps, q and qd in place."),
    FAST(euler, "euler(data, q, qd, tau, use_fext, h, nsub) -> qdd: nsub semi-implicit Euler steps."),
    FAST(dop853, "dop853(data, q, qd, tau, use_fext, t, h, rtol, atol, max_step, h_prev) -> "
                 "(qdd, h_last): adaptive DOP853 from t to t + h, q and qd in place; h_prev: the "
                 "first step (0: choose); h_last: the last accepted step."),
    FAST(dop853_callback, "dop853_callback(data, q, qd, accel, t, h, rtol, atol, max_step, h_prev) "
                          "-> (qdd, h_last): dop853 with qdd = accel(q, qd, t)."),
    FAST(joint_forces, "joint_forces(data, q, qd, tau) -> tau - d qd - f_c tanh(qd / v_s) + stops: "
                       "the joint forces with the model's dissipation and stops (what the "
                       "integrators apply)."),
    FAST(stop_forces, "stop_forces(data, q, qd) -> the joint stops' forces per velocity dof."),
    FAST(auto_max_step, "auto_max_step(data, q) -> auto's longest RK4 sub-step at q (inf: none)."),
    FAST(auto_method, "auto_method(data) -> the integrator auto picks (0 rk4, 6 rk4w)."),
    FAST(mimic_couple, "mimic_couple(data, qdd): the mimic couplings on qdd in place, from the "
                       "factors of the last aba on this data."),
    FAST(mimic_project, "mimic_project(model, q, qd): q_m = k q_j + c, qd_m = k qd_j in place."),
    FAST(implicit, "implicit(data, q, qd, tau, use_fext, h, nsub) -> qdd: nsub linearly implicit "
                   "Euler steps (implicit in the joints' dissipation and stops)."),
    FAST(rosenbrock, "rosenbrock(data, q, qd, tau, use_fext, h, nsub) -> qdd: nsub ROS2 steps "
                     "(second order, L-stable; implicit in the joints' dissipation, stops and "
                     "contact)."),
    FAST(rosenbrock_adaptive, "rosenbrock_adaptive(data, q, qd, tau, use_fext, h, rtol, atol, "
                              "max_step, h_prev) -> (qdd, h_next): ROS2 in error-controlled "
                              "sub-steps over h."),
    FAST(ros34pw2, "ros34pw2(data, q, qd, tau, use_fext, h, nsub) -> qdd: nsub ROS34PW2 steps "
                   "(third order, L-stable, four stages; implicit as rosenbrock)."),
    FAST(ros34pw2_adaptive, "ros34pw2_adaptive(data, q, qd, tau, use_fext, h, rtol, atol, "
                            "max_step, h_prev) -> (qdd, h_next): ROS34PW2 in error-controlled "
                            "sub-steps over h."),
    FAST(rk4w, "rk4w(data, q, qd, tau, use_fext, h, nsub) -> qdd: nsub RK4W steps (RK4 made an "
               "L-stable Rosenbrock W-method: third order, RK4 where no stiff term is engaged)."),
    FAST(rk4w_adaptive, "rk4w_adaptive(data, q, qd, tau, use_fext, h, rtol, atol, max_step, "
                        "h_prev) -> (qdd, h_next): RK4W in error-controlled sub-steps over h."),
    FAST(rosenbrock_tableau, "rosenbrock_tableau(method) -> {gamma, a, c, m, e}: the transformed "
                             "tableau of a Rosenbrock method (4 ros2, 5 ros34pw2, 6 rk4w; "
                             "integrators.METHODS.index), a and c stages x stages."),
    {NULL, NULL, 0, NULL}};
