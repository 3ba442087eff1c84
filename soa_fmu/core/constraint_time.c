/* Closure constraints in time (SPEC E13; seed 000 sec. 2.3, time-varying topology): one step of a
 * model whose loop closures and grasps are switched on and off at run time, held at targets that
 * move with the prescribed constraint velocities U~, with Baumgarte stabilization of the drift.
 * soa_fmu.Simulator.step and the native FMU's fmi2DoStep both take their steps here, so the two
 * agree to the last bit.
 *
 *   grasp / release at t:  a constraint switched on since the last step is re-anchored at the
 *                          current relative pose of its frames (an inelastic grasp) and beta is
 *                          projected so that A J beta = U~ for every active one;
 *   integrate t -> t + h:  the integrators over soa_closure_accel: the tree's acceleration when
 *                          none is active, else constrained forward dynamics (closures.c) with
 *                          each active target moved by its held U~ to the stage's time;
 *   anchors at t + h:      each active target moved by U~ h. */
#include <math.h>

#include "soa.h"

/* The target of constraint j at time t: anchors0 moved by U~ (t - t0) when it is active and U~
 * is not zero, else anchors0 itself (soa_fmu.Simulator._anchors_at). */
static const double *anchor_at(const soa_closure_inputs *in, int j, double t, double *T)
{
    const double *T0 = in->anchors + 16 * j, dt = t - in->t0;
    if (dt == 0.0 || !in->active[j]) return T0;
    int moving = 0;
    for (int r = 0; r < in->m->cn_size[j]; r++) moving |= in->u[6 * j + r] != 0.0;
    if (!moving) return T0;
    soa_advance_anchor(in->m, j, T0, in->u + 6 * j, dt, T);
    return T;
}

/* beta-dot at (theta, beta, t) with the held inputs of a soa_closure_inputs and the joints'
 * dissipation (a soa_accel_fn); the constraint forces and residuals of the evaluation go to in->forces, in->residuals. */
soa_status soa_closure_accel(void *ctx, const double *q, const double *qd, double t, double *qdd)
{
    soa_closure_inputs *in = ctx;
    const soa_model *m = in->m;
    soa_data *d = in->d;
    int any = 0;
    for (int j = 0; j < m->nc; j++) any |= in->active[j] != 0;
    if (!any) {
        for (int i = 0; i < 6 * m->nc; i++) in->forces[i] = 0.0;
        for (int j = 0; j < m->nc; j++) in->residuals[j] = 0.0;
        soa_tree_inputs tree = {m, d, in->tau, in->use_fext, NULL, NULL};
        return soa_tree_accel(&tree, q, qd, t, qdd);
    }
    for (int j = 0; j < m->nc; j++) {
        const double *T = anchor_at(in, j, t, d->cl_anch_t + 16 * j);
        if (T != d->cl_anch_t + 16 * j)
            for (int i = 0; i < 16; i++) d->cl_anch_t[16 * j + i] = T[i];
    }
    const double *tau = soa_joint_forces(m, d, q, qd, in->tau);  /* (the tree's branch: inside) */
    return soa_constrained_fd(m, d, q, qd, tau, in->use_fext, in->active, in->u, NULL,
                              d->cl_anch_t, in->alpha, in->beta, qdd, in->forces, in->residuals);
}

/* One step from t to t + h (see the file comment), (q, qd) in place.  was_active (nc) and anchors
 * (nc x 16) are updated; on failure none of q, qd, was_active, anchors is changed. */
soa_status soa_closure_step(const soa_model *m, soa_data *d, const soa_step_options *o,
                            soa_closure_inputs *in, int *was_active, double *q, double *qd,
                            double t, double h, double *dop_h, double *qdd)
{
    soa_status st = soa_check_inputs(m, q, qd, in->tau);
    if (st.kind != SOA_OK) return st;
    const int nc = m->nc, nq = m->nq, nv = m->nv;
    /* work on copies: the step may fail half-way */
    for (int i = 0; i < nq; i++) d->cl_q[i] = q[i];
    for (int i = 0; i < nv; i++) d->cl_qd[i] = qd[i];
    for (int i = 0; i < 16 * nc; i++) d->cl_anch0[i] = in->anchors[i];
    /* grasp / release at t */
    int switched_on = 0;
    for (int j = 0; j < nc; j++)
        if (in->active[j] && !was_active[j]) {
            switched_on = 1;
            if (o->reanchor) {
                st = soa_relative_pose(m, d, d->cl_q, j, d->cl_anch0 + 16 * j);
                if (st.kind != SOA_OK) return st;
            }
        }
    if (switched_on) {
        st = soa_project_velocities(m, d, d->cl_q, d->cl_qd, in->active, in->u, d->cl_qd);
        if (st.kind != SOA_OK) return st;
    }
    /* integrate, the targets moving from their values at t */
    soa_closure_inputs run = *in;
    run.anchors = d->cl_anch0;
    run.t0 = t;
    const soa_accel acc = {soa_closure_accel, &run};
    if (o->method == SOA_DOP853) {
        d->dop_h[0] = *dop_h;
        st = soa_dop853_with(m, d, acc, d->cl_q, d->cl_qd, t, h, o->rtol, o->atol, HUGE_VAL, qdd);
    } else {
        const int nsub = soa_substeps(h, o->max_step);
        if (nsub < 1) {
            st.kind = SOA_TOO_MANY_SUBSTEPS;
            st.index = SOA_MAX_SUBSTEPS;
            return st;
        }
        if (o->method == SOA_IMPLICIT || soa_is_rosenbrock(o->method)) {
            /* the implicit stages solve with the tree's sweep only: with a closure switched on
             * they refuse (SOA_IMPLICIT_UNSUPPORTED, index 1) instead of ignoring the constraint */
            for (int j = 0; j < nc; j++)
                if (in->active[j]) {
                    st.kind = SOA_IMPLICIT_UNSUPPORTED;
                    st.index = 1;
                    return st;
                }
            if (o->method == SOA_IMPLICIT)
                st = soa_implicit(m, d, d->cl_q, d->cl_qd, in->tau, in->use_fext, h / nsub, nsub,
                                  qdd);
            else if (!o->error_control)
                st = soa_rosenbrock_method(o->method, m, d, d->cl_q, d->cl_qd, in->tau,
                                           in->use_fext, h / nsub, nsub, qdd);
            else {
                d->dop_h[0] = *dop_h;
                st = soa_rosenbrock_method_adaptive(o->method, m, d, d->cl_q, d->cl_qd, in->tau,
                                                    in->use_fext, h, o->rtol, o->atol,
                                                    o->max_step, qdd);
                if (st.kind == SOA_OK) *dop_h = d->dop_h[0];
            }
            for (int j = 0; j < nc; j++) in->residuals[j] = 0.0;
            for (int i = 0; i < 6 * nc; i++) in->forces[i] = 0.0;
        } else {
            st = (o->method == SOA_EULER ? soa_euler_with : soa_rk4_with)(m, d, acc, d->cl_q,
                                                                         d->cl_qd, t, h / nsub, nsub,
                                                                         qdd);
        }
    }
    if (st.kind != SOA_OK) return st;
    /* the targets at t + h; commit */
    for (int j = 0; j < nc; j++) {
        const double *T = anchor_at(&run, j, t + h, d->cl_anch_t + 16 * j);
        for (int i = 0; i < 16; i++) in->anchors[16 * j + i] = T[i];
        was_active[j] = in->active[j] != 0;
    }
    if (o->method == SOA_DOP853) *dop_h = d->dop_h[0];
    for (int i = 0; i < nq; i++) q[i] = d->cl_q[i];
    for (int i = 0; i < nv; i++) qd[i] = d->cl_qd[i];
    return st;
}

/* The equal sub-steps of a fixed-step method for a step h no longer than max_step:
 * max(1, ceil(h / max_step - 1e-9)), or 0 when that is more than SOA_MAX_SUBSTEPS (or not a
 * number). */
int soa_substeps(double h, double max_step)
{
    const double r = ceil(h / max_step - 1e-9);
    if (!(r <= SOA_MAX_SUBSTEPS)) return 0;
    return r < 1.0 ? 1 : (int)r;
}
