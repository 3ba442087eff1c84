/* soa_fmu._core entry points of the closed_chains family: operational-space inertia by the Omega
 * recursion, correction accelerations (operational_space.c), and the closure constraints:
 * constrained forward dynamics (steps A-F), velocity projection, the closure state, the constraint
 * Jacobian, step (D) alone, anchors (closures.c).
 *
 * Closure inputs: active (nc ints), u, udot (6 nc: nc rows of 6, the first cn_size used),
 * anchors (16 nc: 4 x 4 row-major poses); u, udot, anchors may be None (0, 0, identity). */
#include "pycore.h"

#define NARGS(n, sig)                                                                     \
    if (nargs != (n)) return PyErr_Format(PyExc_TypeError, sig " takes %d arguments", (n))

/* A C int vector of n entries (any length when n < 0; new reference), or NULL with a ValueError
 * naming it. */
static PyArrayObject *int_vector(PyObject *o, npy_intp n, const char *name)
{
    PyArrayObject *a = (PyArrayObject *)PyArray_FROMANY(o, NPY_INT, 0, 0,
                                                        NPY_ARRAY_IN_ARRAY | NPY_ARRAY_FORCECAST);
    if (!a) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "%s must be a vector of %zd integers", name, (Py_ssize_t)n);
        return NULL;
    }
    if (PyArray_NDIM(a) != 1 || (n >= 0 && PyArray_DIM(a, 0) != n)) {
        if (n < 0) PyErr_Format(PyExc_ValueError, "%s must be a vector of integers", name);
        else PyErr_Format(PyExc_ValueError, "%s must have shape (%zd,)", name, (Py_ssize_t)n);
        Py_DECREF(a);
        return NULL;
    }
    return a;
}

/* A float64 vector of n entries, or None (*out stays NULL); 0 on failure. */
static int optional_vector(PyObject *o, npy_intp n, const char *name, PyArrayObject **out)
{
    *out = NULL;
    if (o == Py_None) return 1;
    *out = soa_py_vector(o, n, name);
    return *out != NULL;
}

static double float_arg(PyObject *o, int *ok)
{
    const double x = PyFloat_AsDouble(o);
    if (x == -1.0 && PyErr_Occurred()) *ok = 0;
    return x;
}

#define INTS(a) ((const int *)PyArray_DATA(a))
#define OPT(a) ((a) ? SOA_DBL(a) : NULL)

/* ------------------------------------------------------------------ operational_space.c */
/* operational_space_inverse(data, q, bodies, R, l, world_axes) -> L (6n x 6n): J M^-1 J* of n points
 * (body index, -1 = world; R: n 3x3 axes, l: n origins in the body frame), seed 000 eq. 3.10. */
static PyObject *py_operational_space_inverse(PyObject *Py_UNUSED(mod), PyObject *const *args,
                                              Py_ssize_t nargs)
{
    NARGS(6, "operational_space_inverse(data, q, bodies, R, l, world_axes)");
    DataObject *d = soa_py_data(args[0]);
    if (!d) return NULL;
    const soa_model *m = d->model->m;
    PyArrayObject *q = NULL, *body = NULL, *R = NULL, *l = NULL, *L = NULL;
    PyObject *result = NULL;
    if (!(q = soa_py_vector(args[1], m->nq, "q")) || !(body = int_vector(args[2], -1, "bodies")))
        goto done;
    const npy_intp n = PyArray_DIM(body, 0);
    if (!(R = soa_py_vector(args[3], 9 * n, "R")) || !(l = soa_py_vector(args[4], 3 * n, "l"))
        || !(L = soa_py_new(2, 6 * n, 6 * n)))
        goto done;
    const soa_status st = soa_operational_space_inverse(m, d->d, SOA_DBL(q), (int)n, INTS(body),
                                                        SOA_DBL(R), SOA_DBL(l),
                                                        PyObject_IsTrue(args[5]), SOA_DBL(L));
    if (st.kind != SOA_OK) soa_py_status(d->model, st);
    else { result = (PyObject *)L; L = NULL; }
done:
    Py_XDECREF(q); Py_XDECREF(body); Py_XDECREF(R); Py_XDECREF(l); Py_XDECREF(L);
    return result;
}

/* correction_accelerations(data, q) -> Delta beta-dot = M^-1 J* f for the forces in data.fext. */
static PyObject *py_correction_accelerations(PyObject *Py_UNUSED(mod), PyObject *const *args,
                                             Py_ssize_t nargs)
{
    NARGS(2, "correction_accelerations(data, q)");
    DataObject *d = soa_py_data(args[0]);
    if (!d) return NULL;
    const soa_model *m = d->model->m;
    PyArrayObject *q = soa_py_vector(args[1], m->nq, "q");
    if (!q) return NULL;
    PyArrayObject *out = soa_py_new(1, m->nv, 0);
    if (!out) { Py_DECREF(q); return NULL; }
    const soa_status st = soa_correction_accelerations(m, d->d, SOA_DBL(q), d->d->fext, SOA_DBL(out));
    Py_DECREF(q);
    if (st.kind != SOA_OK) {
        Py_DECREF(out);
        return soa_py_status(d->model, st);
    }
    return (PyObject *)out;
}

/* ------------------------------------------------------------------ closures.c */
/* The closure inputs active, u, udot, anchors of an entry point (any of the last three None). */
typedef struct { PyArrayObject *active, *u, *udot, *anchors; } closure_inputs;

static int get_inputs(const soa_model *m, PyObject *active, PyObject *u, PyObject *udot,
                      PyObject *anchors, closure_inputs *in)
{
    in->active = in->u = in->udot = in->anchors = NULL;
    return (in->active = int_vector(active, m->nc, "active")) != NULL
           && optional_vector(u, 6 * m->nc, "u", &in->u)
           && optional_vector(udot, 6 * m->nc, "udot", &in->udot)
           && optional_vector(anchors, 16 * m->nc, "anchors", &in->anchors);
}

static void release_inputs(closure_inputs *in)
{
    Py_XDECREF(in->active); Py_XDECREF(in->u); Py_XDECREF(in->udot); Py_XDECREF(in->anchors);
}

/* constrained_fd(data, q, qd, tau, use_fext, active, u, udot, anchors, alpha, beta[, method])
 *     -> (qdd, forces (nc x 6), residuals (nc), warning): RCCFD1 (steps (A)-(F)), 2 or 3. */
static PyObject *py_constrained_fd(PyObject *Py_UNUSED(mod), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 11 && nargs != 12)
        return PyErr_Format(PyExc_TypeError, "constrained_fd(data, q, qd, tau, use_fext, active, u, "
                            "udot, anchors, alpha, beta[, method]) takes 11 or 12 arguments");
    DataObject *d = soa_py_data(args[0]);
    if (!d) return NULL;
    const soa_model *m = d->model->m;
    PyArrayObject *q = NULL, *qd = NULL, *tau = NULL, *qdd = NULL, *F = NULL, *res = NULL;
    closure_inputs in = {NULL, NULL, NULL, NULL};
    PyObject *result = NULL;
    int ok = 1;
    const double alpha = float_arg(args[9], &ok), beta = float_arg(args[10], &ok);
    const long method = nargs == 12 ? PyLong_AsLong(args[11]) : SOA_RCCFD1;
    if (method == -1 && PyErr_Occurred()) return NULL;
    if (!ok || !(q = soa_py_vector(args[1], m->nq, "q")) || !(qd = soa_py_vector(args[2], m->nv, "qd"))
        || !(tau = soa_py_vector(args[3], m->nv, "tau"))
        || !get_inputs(m, args[5], args[6], args[7], args[8], &in)
        || !(qdd = soa_py_new(1, m->nv, 0)) || !(F = soa_py_new(2, m->nc, 6))
        || !(res = soa_py_new(1, m->nc, 0)))
        goto done;
    const soa_status st = soa_constrained_fd_method(
        m, d->d, (int)method, SOA_DBL(q), SOA_DBL(qd), SOA_DBL(tau), PyObject_IsTrue(args[4]),
        INTS(in.active), OPT(in.u), OPT(in.udot), OPT(in.anchors), alpha, beta, SOA_DBL(qdd),
        SOA_DBL(F), SOA_DBL(res));
    if (st.kind != SOA_OK) {
        soa_py_closure_status(d, st, "constrained forward dynamics");
        goto done;
    }
    PyObject *warning = soa_py_closure_warning(d);
    if (warning) result = PyTuple_Pack(4, qdd, F, res, warning);
    Py_XDECREF(warning);
done:
    Py_XDECREF(q); Py_XDECREF(qd); Py_XDECREF(tau); release_inputs(&in);
    Py_XDECREF(qdd); Py_XDECREF(F); Py_XDECREF(res);
    return result;
}

/* project_velocities(data, q, qd, active, u) -> (qd+, warning): A J qd+ = U~, nearest in the
 * kinetic-energy metric. */
static PyObject *py_project_velocities(PyObject *Py_UNUSED(mod), PyObject *const *args,
                                       Py_ssize_t nargs)
{
    NARGS(5, "project_velocities(data, q, qd, active, u)");
    DataObject *d = soa_py_data(args[0]);
    if (!d) return NULL;
    const soa_model *m = d->model->m;
    PyArrayObject *q = NULL, *qd = NULL, *out = NULL;
    closure_inputs in = {NULL, NULL, NULL, NULL};
    PyObject *result = NULL;
    if (!(q = soa_py_vector(args[1], m->nq, "q")) || !(qd = soa_py_vector(args[2], m->nv, "qd"))
        || !get_inputs(m, args[3], args[4], Py_None, Py_None, &in) || !(out = soa_py_new(1, m->nv, 0)))
        goto done;
    const soa_status st = soa_project_velocities(m, d->d, SOA_DBL(q), SOA_DBL(qd), INTS(in.active),
                                                 OPT(in.u), SOA_DBL(out));
    if (st.kind != SOA_OK) {
        soa_py_closure_status(d, st, "velocity projection");
        goto done;
    }
    PyObject *warning = soa_py_closure_warning(d);
    if (warning) result = PyTuple_Pack(2, out, warning);
    Py_XDECREF(warning);
done:
    Py_XDECREF(q); Py_XDECREF(qd); release_inputs(&in); Py_XDECREF(out);
    return result;
}

/* closure_state(data, q, qd, qdd, active, u, udot, anchors, alpha, beta) -> None: step (B) at
 * (q, qd, qdd) into the data (cl_Vrel, cl_arel, cl_err, cl_resid, cl_rhs_dyn, cl_rhs_stab, cl_row0). */
static PyObject *py_closure_state(PyObject *Py_UNUSED(mod), PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(10, "closure_state(data, q, qd, qdd, active, u, udot, anchors, alpha, beta)");
    DataObject *d = soa_py_data(args[0]);
    if (!d) return NULL;
    const soa_model *m = d->model->m;
    PyArrayObject *q = NULL, *qd = NULL, *qdd = NULL;
    closure_inputs in = {NULL, NULL, NULL, NULL};
    PyObject *result = NULL;
    int ok = 1;
    const double alpha = float_arg(args[8], &ok), beta = float_arg(args[9], &ok);
    if (!ok || !(q = soa_py_vector(args[1], m->nq, "q")) || !(qd = soa_py_vector(args[2], m->nv, "qd"))
        || !(qdd = soa_py_vector(args[3], m->nv, "qdd"))
        || !get_inputs(m, args[4], args[5], args[6], args[7], &in))
        goto done;
    const soa_status st = soa_closure_state(m, d->d, SOA_DBL(q), SOA_DBL(qd), SOA_DBL(qdd),
                                            INTS(in.active), OPT(in.u), OPT(in.udot),
                                            OPT(in.anchors), alpha, beta);
    if (st.kind != SOA_OK) soa_py_status(d->model, st);
    else { Py_INCREF(Py_None); result = Py_None; }
done:
    Py_XDECREF(q); Py_XDECREF(qd); Py_XDECREF(qdd); release_inputs(&in);
    return result;
}

/* closure_jacobian(data, active) -> G (rows x nv) after closure_state at the same active set. */
static PyObject *py_closure_jacobian(PyObject *Py_UNUSED(mod), PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(2, "closure_jacobian(data, active)");
    DataObject *d = soa_py_data(args[0]);
    if (!d) return NULL;
    const soa_model *m = d->model->m;
    PyArrayObject *active = int_vector(args[1], m->nc, "active");
    if (!active) return NULL;
    PyArrayObject *G = soa_py_new(2, d->d->cl_row0[m->nc], m->nv);
    if (G) soa_closure_jacobian(m, d->d, INTS(active), SOA_DBL(G));
    Py_DECREF(active);
    return (PyObject *)G;
}

/* closure_solve(data, active, what) -> warning: step (D) on the A Lambda^-1 A* and right-hand sides
 * in the data (the general form (4.9) puts its own dense matrix there). */
static PyObject *py_closure_solve(PyObject *Py_UNUSED(mod), PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(3, "closure_solve(data, active, what)");
    DataObject *d = soa_py_data(args[0]);
    if (!d) return NULL;
    const char *what = PyUnicode_AsUTF8(args[2]);
    if (!what) return NULL;
    PyArrayObject *active = int_vector(args[1], d->model->m->nc, "active");
    if (!active) return NULL;
    const soa_status st = soa_closure_solve(d->model->m, d->d, INTS(active));
    Py_DECREF(active);
    if (st.kind != SOA_OK) return soa_py_closure_status(d, st, what);
    return soa_py_closure_warning(d);
}

/* relative_pose(data, q, j) -> T (4 x 4): frame_b in frame_a of constraint j. */
static PyObject *py_relative_pose(PyObject *Py_UNUSED(mod), PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(3, "relative_pose(data, q, j)");
    DataObject *d = soa_py_data(args[0]);
    if (!d) return NULL;
    const long j = PyLong_AsLong(args[2]);
    if (j == -1 && PyErr_Occurred()) return NULL;
    PyArrayObject *q = soa_py_vector(args[1], d->model->m->nq, "q");
    if (!q) return NULL;
    PyArrayObject *T = soa_py_new(2, 4, 4);
    soa_status st = {SOA_OK, 0};
    if (T) st = soa_relative_pose(d->model->m, d->d, SOA_DBL(q), (int)j, SOA_DBL(T));
    Py_DECREF(q);
    if (T && st.kind != SOA_OK) {
        Py_CLEAR(T);
        soa_py_status(d->model, st);
    }
    return (PyObject *)T;
}

/* advance_anchor(model, j, T0, u, dt) -> T: the target moved by the twist A* U~ for dt. */
static PyObject *py_advance_anchor(PyObject *Py_UNUSED(mod), PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(5, "advance_anchor(model, j, T0, u, dt)");
    ModelObject *mo = soa_py_model(args[0]);
    if (!mo) return NULL;
    const long j = PyLong_AsLong(args[1]);
    if (j == -1 && PyErr_Occurred()) return NULL;
    if (j < 0 || j >= mo->m->nc) return PyErr_Format(PyExc_IndexError, "constraint index %ld out of range", j);
    int ok = 1;
    const double dt = float_arg(args[4], &ok);
    if (!ok) return NULL;
    PyArrayObject *T0 = soa_py_vector(args[2], 16, "T0"), *u = NULL, *T = NULL;
    if (T0 && (u = soa_py_vector(args[3], mo->m->cn_size[j], "u")) && (T = soa_py_new(2, 4, 4))) {
        const soa_status st = soa_advance_anchor(mo->m, (int)j, SOA_DBL(T0), SOA_DBL(u), dt, SOA_DBL(T));
        if (st.kind != SOA_OK) {
            Py_CLEAR(T);
            soa_py_status(mo, st);
        }
    }
    Py_XDECREF(T0); Py_XDECREF(u);
    return (PyObject *)T;
}

/* constraint_rows(kind, axis) -> A (size x 6): the rows of a constraint kind (closures.c). */
static PyObject *py_constraint_rows(PyObject *Py_UNUSED(mod), PyObject *const *args, Py_ssize_t nargs)
{
    static const int size[SOA_NCONSTRAINTKINDS] = {6, 3, 5, 4};
    NARGS(2, "constraint_rows(kind, axis)");
    const long kind = PyLong_AsLong(args[0]);
    if (kind == -1 && PyErr_Occurred()) return NULL;
    if (kind < 0 || kind >= SOA_NCONSTRAINTKINDS)
        return PyErr_Format(PyExc_ValueError, "unknown constraint kind %ld", kind);
    PyArrayObject *ax = soa_py_vector(args[1], 3, "axis");
    if (!ax) return NULL;
    const double *a = SOA_DBL(ax);
    if (soa_first_nonfinite(a, 3) >= 0 || !(a[0] * a[0] + a[1] * a[1] + a[2] * a[2] > 0.0)) {
        Py_DECREF(ax);
        return PyErr_Format(PyExc_ValueError, "axis must be a finite non-zero 3-vector");
    }
    double A[36];
    soa_constraint_rows((int)kind, a, A);
    Py_DECREF(ax);
    PyArrayObject *out = soa_py_new(2, size[kind], 6);
    if (out)
        for (int i = 0; i < 6 * size[kind]; i++) SOA_DBL(out)[i] = A[i];
    return (PyObject *)out;
}

#define FAST(name, doc) {#name, (PyCFunction)(void (*)(void))py_##name, METH_FASTCALL, doc}

/* ------------------------------------------------------------------ constraint_time.c */
/* closure_step(data, q, qd, tau, use_fext, active, was_active, u, anchors, alpha, beta, method,
 *              max_step, rtol, atol, reanchor, t, h, dop_h, error_control)
 *     -> (qdd, forces (nc x 6), residuals (nc), dop_h, warning): one step with grasp / release and
 * moving targets; q, qd and anchors (16 nc) in place (unchanged on failure). */
static PyObject *py_closure_step(PyObject *Py_UNUSED(mod), PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(20, "closure_step(data, q, qd, tau, use_fext, active, was_active, u, anchors, alpha, beta, "
              "method, max_step, rtol, atol, reanchor, t, h, dop_h, error_control)");
    DataObject *d = soa_py_data(args[0]);
    if (!d) return NULL;
    const soa_model *m = d->model->m;
    PyArrayObject *q = NULL, *qd = NULL, *anchors = NULL, *tau = NULL, *active = NULL,
                  *was = NULL, *u = NULL, *qdd = NULL, *F = NULL, *res = NULL;
    PyObject *result = NULL;
    int ok = 1;
    const double alpha = float_arg(args[9], &ok), beta = float_arg(args[10], &ok);
    const long method = PyLong_AsLong(args[11]);
    if (method == -1 && PyErr_Occurred()) return NULL;
    soa_step_options o = {(int)method, float_arg(args[12], &ok), float_arg(args[13], &ok),
                          float_arg(args[14], &ok), PyObject_IsTrue(args[15]),
                          PyObject_IsTrue(args[19])};
    const double t = float_arg(args[16], &ok), h = float_arg(args[17], &ok);
    double dop_h = float_arg(args[18], &ok);
    const int use_fext = PyObject_IsTrue(args[4]);
    if (!ok || use_fext < 0 || o.reanchor < 0 || o.error_control < 0) return NULL;
    if (method < 0 || method >= SOA_AUTO)
        return PyErr_Format(PyExc_ValueError, "method must be 0 (rk4), 1 (euler), 2 (dop853), "
                            "3 (implicit), 4 (ros2), 5 (ros34pw2) or 6 (rk4w)");
    if (!(q = soa_py_inout(args[1], m->nq, "q")) || !(qd = soa_py_inout(args[2], m->nv, "qd"))
        || !(anchors = soa_py_inout(args[8], 16 * m->nc, "anchors")))
        return NULL;                                       /* (borrowed) */
    if (!(tau = soa_py_vector(args[3], m->nv, "tau")) || !(active = int_vector(args[5], m->nc, "active"))
        || !(was = int_vector(args[6], m->nc, "was_active")) || !(u = soa_py_vector(args[7], 6 * m->nc, "u"))
        || !(qdd = soa_py_new(1, m->nv, 0)) || !(F = soa_py_new(2, m->nc, 6))
        || !(res = soa_py_new(1, m->nc, 0)))
        goto done;
    for (int i = 0; i < 6 * m->nc; i++) SOA_DBL(F)[i] = 0.0;
    for (int j = 0; j < m->nc; j++) SOA_DBL(res)[j] = 0.0;
    soa_closure_inputs in = {m, d->d, SOA_DBL(tau), use_fext, INTS(active), SOA_DBL(u), alpha, beta,
                             SOA_DBL(anchors), t, SOA_DBL(F), SOA_DBL(res)};
    const soa_status st = soa_closure_step(m, d->d, &o, &in, (int *)PyArray_DATA(was), SOA_DBL(q),
                                           SOA_DBL(qd), t, h, &dop_h, SOA_DBL(qdd));
    if (st.kind != SOA_OK) {
        soa_py_closure_status(d, st, "constrained forward dynamics");
        goto done;
    }
    PyObject *warning = soa_py_closure_warning(d);
    if (warning) result = Py_BuildValue("(OOOdN)", qdd, F, res, dop_h, warning);
done:
    Py_XDECREF(tau); Py_XDECREF(active); Py_XDECREF(was); Py_XDECREF(u);
    Py_XDECREF(qdd); Py_XDECREF(F); Py_XDECREF(res);
    return result;
}

PyMethodDef soa_py_closed_chains_methods[] = {
    FAST(operational_space_inverse,
         "operational_space_inverse(data, q, bodies, R, l, world_axes) -> J M^-1 J* (Omega recursion)."),
    FAST(correction_accelerations, "correction_accelerations(data, q) -> M^-1 J* f for data.fext."),
    FAST(constrained_fd, "constrained_fd(data, q, qd, tau, use_fext, active, u, udot, anchors, alpha, "
                         "beta[, method]) -> (qdd, forces, residuals, warning): RCCFD1 (steps (A)-(F)), "
                         "2 or 3."),
    FAST(project_velocities, "project_velocities(data, q, qd, active, u) -> (qd, warning)."),
    FAST(closure_state, "closure_state(data, q, qd, qdd, active, u, udot, anchors, alpha, beta): step (B)."),
    FAST(closure_jacobian, "closure_jacobian(data, active) -> G = A (J_b - J_a)."),
    FAST(closure_solve, "closure_solve(data, active, what) -> warning: step (D) on the data."),
    FAST(relative_pose, "relative_pose(data, q, j) -> 4 x 4 pose of frame_b in frame_a."),
    FAST(advance_anchor, "advance_anchor(model, j, T0, u, dt) -> T0 moved by A* u for dt."),
    FAST(constraint_rows, "constraint_rows(kind, axis) -> the rows A of a constraint kind."),
    FAST(closure_step, "closure_step(data, q, qd, tau, use_fext, active, was_active, u, anchors, "
                       "alpha, beta, method, max_step, rtol, atol, reanchor, t, h, dop_h, error_control) -> (qdd, "
                       "forces, residuals, dop_h, warning): one step with grasp / release."),
    {NULL, NULL, 0, NULL}};
