/* Model Exchange over the native FMU's instance (FMI 2.0: fmi2_me.c, FMI 3.0: fmi3.c), and the
 * directional derivatives of every interface.
 *
 * Continuous states x = (theta, beta): the nq coordinates q (a ball or free joint's quaternion as
 * four states) and the nv velocities qd, contiguous in the real buffer.  Their derivative
 * x-dot = (der(q), qdd):
 *
 *   theta-dot = f(theta) beta  the joints' kinematics (joints.c soa_configuration_rate; quaternion
 *                              q-dot = 1/2 q (x) (0, w), seed 003 App. B);
 *   beta-dot                   the tree's forward dynamics (seed 001 Algorithm 3, soa_tree_accel),
 *                              or, with closure constraints switched on, the Baumgarte-stabilized
 *                              constrained forward dynamics (seed 000 sec. 2.3; closures.c) with
 *                              every target moved by its held U~ from the anchors at anchor_t
 *                              (constraint_time.c soa_closure_accel) -- the ODE the Co-Simulation
 *                              integrators integrate, stage for stage.
 *
 * (Their evaluation, fmu_me_evaluate, and qn, fmu_normalize, are the simulation's, fmu_step.c:
 * the Real getter brings them up to date as it does the Co-Simulation outputs.)  Everything is
 * evaluated at qn, the configuration with each quaternion scaled to unit norm (its
 * rotation does not depend on the scale), so an importer's trial states need no projection.  The
 * norm is an invariant of the exact flow (q-dot is orthogonal to q); an integrator's drift is
 * removed in fmu_me_completed_step once |q|^2 - 1 exceeds QUAT_DRIFT, and reported as a state
 * change (enterEventMode, then valuesOfContinuousStatesChanged).  That step also moves the
 * anchors to its time, so a U~ the master changes between steps moves the targets piecewise
 * (exactly as the Co-Simulation FMU with steps at those points).
 *
 * Event indicators (fmu_me_event_indicators): the joint stops' margins, then each contact pair's
 * signed penetration (fmu_contact.c), so that the importer lands on every touch-down and release
 * of a stop or a contact, where x-dot changes law.  Between them x-dot is continuous (the
 * friction's regularization is smooth); the contact law's clamp of f_n at zero once
 * 1 + d delta-dot < 0 bends its slope without an indicator (docs/fmu.md, "The OpenModelica
 * route").
 *
 * A closure constraint switched on through its discrete input (event mode) is a grasp:
 * re-anchored at the current relative pose of its frames, beta projected so that A J beta = U~
 * (soa_project_velocities) -- a state change -- exactly as a Co-Simulation step does at its
 * start; switched off, it is released.
 *
 * Directional derivatives (fmu_directional), exact, never a difference quotient:
 *   inputs (tau, f_ext, U~): beta-dot and the constraint forces are affine in them at a fixed
 *     state; their linear part is the tree's input map M^-1 (dT + J* df)
 *     (soa_forward_dynamics_input_map) or the constrained forward dynamics of the direction alone;
 *   states (q, qd), tree dynamics (no constraint switched on): d beta-dot / d theta and
 *     d beta-dot / d beta from soa_aba_derivatives (derivatives.c) along the velocity directions,
 *     composed with the map from a change of the coordinates to a velocity direction (tangent()),
 *     d theta-dot by differentiating f(theta) beta, the energy's from the composite momenta and
 *     inertias (dE/dtheta_i = -u(i).h + s(i).R_I a0, dE/dbeta_a = s(a).h), the frame poses' from
 *     the inertial joint maps H*_I.  With flexible bodies: d beta-dot / d theta from the
 *     fourth-order differences of soa_flex_rnea_derivatives (d/d beta exact), the energy's alike
 *     (flexible_energy_derivative), the poses' from the frames' Jacobians (soa_point_jacobian,
 *     the node columns included).
 * With a constraint switched on, the derivatives of qdd, constraint forces and residuals with
 * respect to the state are not provided (an error naming them); see docs/fmu.md. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "instance.h"
#include "spatial.h"

#define QUAT_DRIFT 1e-7        /* | |q|^2 - 1 | above which a completed step renormalizes */

int fmu_me_nx(void) { return D.role == SOA_FMU_PLANT ? D.nq + D.nv : 0; }   /* controller: none */

/* The call is a Model Exchange one and allowed in the instance's mode (modes: 1 << Mode). */
int fmu_me_require(Instance *c, const char *fn, int modes)
{
    if (c->kind != FMU_ME) {
        fmu_log(c, FMU_ERROR, "%s: a Co-Simulation instance has no continuous states to "
                "exchange (instantiate for Model Exchange)", fn);
        return 0;
    }
    if (!(modes & (1 << c->mode))) {
        fmu_log(c, FMU_ERROR, "%s called in %s mode", fn, MODE_NAMES[c->mode]);
        return 0;
    }
    return 1;
}

#define AFTER_INIT ((1 << INITIALIZATION) | (1 << EVENT) | (1 << CONTINUOUS) | (1 << TERMINATED))
#define ANY_MODE (AFTER_INIT | (1 << INSTANTIATED))

int fmu_me_set_time(Instance *c, double t, const char *fn)
{
    if (!fmu_me_require(c, fn, (1 << EVENT) | (1 << CONTINUOUS))) return FMU_ERROR;
    if (!isfinite(t)) {
        fmu_log(c, FMU_ERROR, "%s: time %g is not finite", fn, t);
        return FMU_ERROR;
    }
    c->t = t;
    if (D.nc > 0 || D.role == SOA_FMU_CONTROLLER)
        fmu_invalidate(c);                /* the targets (the controller's trajectory) move with t */
    return FMU_OK;
}

static int check_nx(Instance *c, const void *x, size_t nx, const char *fn)
{
    if (nx != (size_t)fmu_me_nx() || (nx && !x)) {
        fmu_log(c, FMU_ERROR, "%s: this FMU has %d continuous states, %zu were passed", fn,
                fmu_me_nx(), nx);
        return 0;
    }
    return 1;
}

int fmu_me_get_states(Instance *c, double *x, size_t nx, const char *fn)
{
    if (!fmu_me_require(c, fn, AFTER_INIT) || !check_nx(c, x, nx, fn)
        || !fmu_refresh(c, 0, 0, 0, fn))
        return FMU_ERROR;
    if (nx) memcpy(x, c->real + D.vr_q, sizeof(double) * nx);      /* (a controller: none) */
    return FMU_OK;
}

int fmu_me_set_states(Instance *c, const double *x, size_t nx, const char *fn)
{
    if (!fmu_me_require(c, fn, (1 << EVENT) | (1 << CONTINUOUS)) || !check_nx(c, x, nx, fn))
        return FMU_ERROR;
    const int i = soa_first_nonfinite(x, (int)nx);
    if (i >= 0) {
        char nm[256];
        fmu_log(c, FMU_ERROR, "%s: %s is not finite (states not applied)", fn,
                fmu_named(D.vr_q + i, nm, sizeof nm));
        return FMU_ERROR;
    }
    if (nx) memcpy(c->real + D.vr_q, x, sizeof(double) * nx);
    fmu_invalidate(c);
    return FMU_OK;
}

/* x-dot: der(q) then qdd.  A pending rejected value refuses the evaluation (Error), as it refuses
 * a Co-Simulation step; a state where the dynamics cannot be evaluated returns Discard (the
 * integrator may retry with a smaller step). */
int fmu_me_get_derivatives(Instance *c, double *dx, size_t nx, const char *fn)
{
    if (!fmu_me_require(c, fn, AFTER_INIT) || !check_nx(c, dx, nx, fn)) return FMU_ERROR;
    char msg[MSG];
    if (fmu_pending_reasons(c, msg, sizeof msg)) {
        fmu_log(c, FMU_ERROR, "%s refused: %s", fn, msg);
        return FMU_ERROR;
    }
    if (!fmu_refresh(c, 0, 0, 0, fn)) return FMU_ERROR;
    if (D.role == SOA_FMU_CONTROLLER) return FMU_OK;                 /* no states */
    if (c->stale && !fmu_me_evaluate(c, FMU_DISCARD, fn)) return FMU_DISCARD;
    memcpy(dx, c->real + D.vr_qdot, sizeof(double) * D.nq);
    memcpy(dx + D.nq, c->real + D.vr_qdd, sizeof(double) * D.nv);
    return FMU_OK;
}

int fmu_me_nominals(Instance *c, double *x, size_t nx, const char *fn)
{
    if (!fmu_me_require(c, fn, ANY_MODE) || !check_nx(c, x, nx, fn)) return FMU_ERROR;
    for (size_t i = 0; i < nx; i++) x[i] = 1.0;
    return FMU_OK;
}

/* The anchors moved to the current time by the held U~ (constraint_time.c anchor_at). */
static void rebase_anchors(Instance *c)
{
    if (D.nc == 0) return;
    const double dt = c->t - c->anchor_t;
    fmu_gather_closure_inputs(c);
    for (int j = 0; j < D.nc && dt != 0.0; j++) {
        int moving = 0;
        for (int r = 0; r < c->m->cn_size[j]; r++) moving |= c->u[6 * j + r] != 0.0;
        if (!c->active[j] || !moving) continue;
        double T[16];
        if (soa_advance_anchor(c->m, j, c->anchors + 16 * j, c->u + 6 * j, dt, T).kind == SOA_OK)
            memcpy(c->anchors + 16 * j, T, sizeof T);
    }
    c->anchor_t = c->t;
}

/* Event mode: grasp / release by the constraint switches, report a renormalization. */
int fmu_me_event_update(Instance *c, int *states_changed, const char *fn)
{
    *states_changed = 0;
    if (!fmu_me_require(c, fn, 1 << EVENT) || !fmu_refresh(c, 0, 0, 0, fn)) return FMU_ERROR;
    if (D.nc > 0) {
        rebase_anchors(c);
        int on = 0;
        for (int j = 0; j < D.nc; j++) on |= c->active[j] && !c->was_active[j];
        if (on) {
            fmu_data_used(c);
            double *qd = c->real + D.vr_qd;
            soa_status st = fmu_normalize(c);
            if (st.kind == SOA_OK) st = soa_check_state(c->m, c->qn, qd);
            if (st.kind == SOA_OK)
                st = soa_project_velocities(c->m, c->d, c->qn, qd, c->active, c->u, c->qds);
            for (int j = 0; j < D.nc && st.kind == SOA_OK; j++)
                if (c->active[j] && !c->was_active[j])
                    st = soa_relative_pose(c->m, c->d, c->qn, j, c->anchors + 16 * j);
            if (st.kind != SOA_OK) {
                char msg[MSG];
                fmu_status_message(c, st, msg, sizeof msg);
                fmu_log(c, FMU_ERROR, "%s: a constraint switched on cannot hold: %s", fn, msg);
                return FMU_ERROR;
            }
            memcpy(qd, c->qds, sizeof(double) * D.nv);
            *states_changed = 1;
        }
        for (int j = 0; j < D.nc; j++) c->was_active[j] = c->active[j];
    }
    if (c->renormalized) *states_changed = 1;
    c->renormalized = 0;
    fmu_invalidate(c);
    return FMU_OK;
}

/* The integrator accepted the state at t: move the targets to t, renormalize drifted quaternions
 * (then ask for an event, whose update reports the state change). */
int fmu_me_completed_step(Instance *c, int *enter_event, const char *fn)
{
    *enter_event = 0;
    if (!fmu_me_require(c, fn, 1 << CONTINUOUS)) return FMU_ERROR;
    if (D.role == SOA_FMU_CONTROLLER) return FMU_OK;                 /* no states */
    rebase_anchors(c);
    double *q = c->real + D.vr_q;
    for (int k = 0; k < D.nb; k++) {
        if (!fmu_quaternion_joint(c->m, k)) continue;
        double *e = q + c->m->q0[k];
        const double n2 = e[0] * e[0] + e[1] * e[1] + e[2] * e[2] + e[3] * e[3];
        if (!(fabs(n2 - 1.0) > QUAT_DRIFT) || !(n2 > 1e-12) || !isfinite(n2)) continue;
        const double n = sqrt(n2);
        for (int j = 0; j < 4; j++) e[j] /= n;
        c->renormalized = 1;
    }
    if (c->renormalized) {
        fmu_invalidate(c);
        *enter_event = 1;
    }
    return FMU_OK;
}

/* ------------------------------------------------------------------ directional derivatives */
/* out = a (x) b for quaternions (w, x, y, z). */
static void quat_mul(const double *a, const double *b, double *out)
{
    out[0] = a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3];
    out[1] = a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2];
    out[2] = a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1];
    out[3] = a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0];
}

/* The velocity direction dth (nv) of a change dq (nq) of the raw coordinates q: the inverse of
 * theta-dot = f(theta) beta on each joint, through the normalization of its quaternion:
 * ball  w = 2 vec(qn* (x) dq) / |q|;  free  w as a ball, v = R(qn)^T dp;
 * planar  (da, R(a)^T (dx, dy));  others  dq. */
static void tangent(const Instance *c, const double *dq, double *dth)
{
    const soa_model *m = c->m;
    const double *q = c->real + D.vr_q;
    for (int k = 0; k < D.nb; k++) {
        const int a = m->q0[k], v = m->v0[k];
        if (fmu_quaternion_joint(m, k)) {
            const double *e = q + a, *en = c->qn + a;
            const double n = sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2] + e[3] * e[3]);
            const double conj[4] = {en[0], -en[1], -en[2], -en[3]};
            double r[4];
            quat_mul(conj, dq + a, r);
            for (int i = 0; i < 3; i++) dth[v + i] = 2.0 * r[1 + i] / n;
            if (m->jtype[k] == SOA_FREE) {
                double R[9];
                quat_to_matrix(en[0], en[1], en[2], en[3], R);
                for (int i = 0; i < 3; i++)
                    dth[v + 3 + i] = R[i] * dq[a + 4] + R[3 + i] * dq[a + 5] + R[6 + i] * dq[a + 6];
            }
        } else if (m->jtype[k] == SOA_PLANAR) {
            const double cs = cos(q[a]), sn = sin(q[a]);
            dth[v] = dq[a];
            dth[v + 1] = cs * dq[a + 1] + sn * dq[a + 2];
            dth[v + 2] = -sn * dq[a + 1] + cs * dq[a + 2];
        } else {
            for (int i = 0; i < m->nvj[k]; i++) dth[v + i] = dq[a + i];
        }
        if (m->nm)                               /* a flexible body's modal coordinates: vectors */
            for (int i = 0; i < m->nmod[k]; i++) dth[v + m->nvj[k] + i] = dq[a + m->nqj[k] + i];
    }
}

/* d theta-dot = d(f(qn) beta): f(qn) dv plus the change of f with the configuration (dth, dq:
 * the direction as velocities and as raw coordinates). */
static void rate_derivative(const Instance *c, const double *dq, const double *dth,
                            const double *dv, double *out)
{
    const soa_model *m = c->m;
    const double *q = c->real + D.vr_q, *qd = c->real + D.vr_qd;
    soa_configuration_rate(m, c->qn, dv, out);
    for (int k = 0; k < D.nb; k++) {
        const int a = m->q0[k], v = m->v0[k];
        if (fmu_quaternion_joint(m, k)) {
            /* 1/2 dqn (x) (0, w), dqn = (dq - qn (qn . dq)) / |q| */
            const double *e = q + a, *en = c->qn + a, *d = dq + a;
            const double n = sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2] + e[3] * e[3]);
            const double p = en[0] * d[0] + en[1] * d[1] + en[2] * d[2] + en[3] * d[3];
            double dqn[4], r[4];
            const double w[4] = {0.0, qd[v], qd[v + 1], qd[v + 2]};
            for (int i = 0; i < 4; i++) dqn[i] = (d[i] - en[i] * p) / n;
            quat_mul(dqn, w, r);
            for (int i = 0; i < 4; i++) out[a + i] += 0.5 * r[i];
            if (m->jtype[k] == SOA_FREE) {       /* d(R v) = R (dth_w x v) */
                double R[9], wxv[3];
                quat_to_matrix(en[0], en[1], en[2], en[3], R);
                cross3(dth + v, qd + v + 3, wxv);
                for (int i = 0; i < 3; i++)
                    out[a + 4 + i] += R[3 * i] * wxv[0] + R[3 * i + 1] * wxv[1]
                                      + R[3 * i + 2] * wxv[2];
            }
        } else if (m->jtype[k] == SOA_PLANAR) {
            const double cs = cos(q[a]), sn = sin(q[a]);
            out[a + 1] += (-sn * qd[v + 1] - cs * qd[v + 2]) * dq[a];
            out[a + 2] += (cs * qd[v + 1] - sn * qd[v + 2]) * dq[a];
        }
    }
}

/* The body whose joint carries velocity dof i. */
static int body_of_dof(const soa_model *m, int i)
{
    for (int k = 0; k < m->nb; k++)
        if (i >= m->v0[k] && i < m->v0[k] + m->nvj[k]) return k;
    return -1;
}

/* E(theta, beta) of soa_energy (kinetic + potential). */
static double energy_at(const Instance *c, const double *q, const double *qd)
{
    double T = 0.0, U = 0.0;
    soa_energy(c->m, c->d, q, qd, &T, &U);
    return T + U;
}

/* dE along (dth, dv) with flexible bodies: E is quadratic in beta, so the central difference of
 * a unit step along dv is its beta part exactly; along theta (+) t dth, Richardson's
 * fourth-order central difference (steps h, h / 2), as the flexible derivatives of the
 * linearization (flexible.c). */
static double flexible_energy_derivative(const Instance *c, const double *dth, const double *dv)
{
    const soa_model *m = c->m;
    soa_data *d = c->d;
    const double *qd = c->real + D.vr_qd, h = 1e-3;
    for (int i = 0; i < D.nv; i++) d->vs[i] = qd[i] + dv[i];
    double dE = 0.5 * energy_at(c, c->qn, d->vs);
    for (int i = 0; i < D.nv; i++) d->vs[i] = qd[i] - dv[i];
    dE -= 0.5 * energy_at(c, c->qn, d->vs);
    for (int level = 0; level < 2; level++) {
        const double step = level ? 0.5 * h : h, w = (level ? 4.0 : -1.0) / (6.0 * step);
        for (int sgn = -1; sgn <= 1; sgn += 2) {
            for (int i = 0; i < D.nv; i++) d->dv[i] = sgn * step * dth[i];
            soa_integrate_configuration(m, c->qn, d->dv, d->qs);
            dE += sgn * w * energy_at(c, d->qs, qd);
        }
    }
    return dE;
}

/* dE along (dth, dv) at the data of soa_aba_derivatives (hc, Ri, lin_u, Sw): the file comment. */
static double energy_derivative(const Instance *c, const double *dth, const double *dv)
{
    const soa_model *m = c->m;
    const soa_data *d = c->d;
    if (m->nm) return flexible_energy_derivative(c, dth, dv);
    double dE = 0.0;
    for (int i = 0; i < D.nv; i++) {
        const int n = body_of_dof(m, i);
        const double *h = d->hc + 6 * n, *s = d->Sw + 6 * i;
        double u[6], g[6];
        for (int r = 0; r < 6; r++) u[r] = d->lin_u[r * D.nv + i];
        inertia_apply(d->Ri + 10 * n, m->a0, g);
        const double p = dot6(s, h) + m->armature[i] * c->real[D.vr_qd + i];   /* + rotor a qd */
        dE += (dot6(s, g) - dot6(u, h)) * dth[i] + p * dv[i];
    }
    return dE;
}

/* The derivatives of frame f's pose outputs (position, orientation quaternion) along dth, from the
 * inertial joint maps s = [w; v] of the dofs above its body: dp = sum (v + w x p) dth,
 * d quat = 1/2 (0, sum w dth) (x) quat. */
static void pose_derivative(const Instance *c, int f, const double *dth, double *out)
{
    const soa_model *m = c->m;
    const soa_fmu_frame *fr = &D.frames[f];
    const double *p = c->real + fr->vr_pose, *quat = p + 3;
    double W[4] = {0, 0, 0, 0}, dp[3] = {0, 0, 0};
    if (m->nm && fr->body >= 0) {     /* flexible: the frame's Jacobian, node columns Gamma in it */
        const double *J = c->d->Y;
        soa_outward_placements(m, c->d, c->qn);
        soa_world_placements(m, c->d);
        soa_point_jacobian(m, c->d, fr->body, p, c->d->Y);
        for (int i = 0; i < D.nv; i++)
            for (int r = 0; r < 3; r++) {
                W[1 + r] += J[r * D.nv + i] * dth[i];
                dp[r] += J[(3 + r) * D.nv + i] * dth[i];
            }
    }
    for (int k = fr->body; k >= 0 && !m->nm; k = m->parent[k])
        for (int i = m->v0[k]; i < m->v0[k] + m->nvj[k]; i++) {
            const double *s = c->d->Sw + 6 * i;
            double wxp[3];
            cross3(s, p, wxp);
            for (int r = 0; r < 3; r++) {
                W[1 + r] += s[r] * dth[i];
                dp[r] += (s[3 + r] + wxp[r]) * dth[i];
            }
        }
    double r4[4];
    quat_mul(W, quat, r4);
    for (int r = 0; r < 3; r++) out[r] = dp[r];
    for (int r = 0; r < 4; r++) out[3 + r] = 0.5 * r4[r];
}

enum { U_NONE, U_Q, U_QD, U_QDOT, U_QDD, U_FORCE, U_ERR, U_ENERGY, U_POSE };

/* What unknown r is (U_*), with its index in *i (a pose: frame * 7 + component). */
static int unknown_kind(int r, int *i)
{
    *i = 0;
    if (r >= D.vr_q && r < D.vr_q + D.nq) { *i = r - D.vr_q; return U_Q; }
    if (r >= D.vr_qd && r < D.vr_qd + D.nv) { *i = r - D.vr_qd; return U_QD; }
    if (r >= D.vr_qdd && r < D.vr_qdd + D.nv) { *i = r - D.vr_qdd; return U_QDD; }
    if (D.vr_qdot >= 0 && r >= D.vr_qdot && r < D.vr_qdot + D.nq) {
        *i = r - D.vr_qdot;
        return U_QDOT;
    }
    if (r == D.vr_energy) return U_ENERGY;
    for (int j = 0; j < D.nc; j++) {
        const soa_fmu_constraint *k = &D.constraints[j];
        if (r >= k->vr_f && r < k->vr_f + 6 && r < k->vr_err) {
            *i = 6 * j + r - k->vr_f;
            return U_FORCE;
        }
        if (r == k->vr_err) { *i = j; return U_ERR; }
    }
    for (int f = 0; f < D.nframes; f++)
        if (r >= D.frames[f].vr_pose && r < D.frames[f].vr_pose + 7) {
            *i = 7 * f + r - D.frames[f].vr_pose;
            return U_POSE;
        }
    return U_NONE;
}

/* The seed's input part: dtau, du, and the frame forces moved to their bodies in d->fext.
 * Returns 1 when a frame force is part of it. */
static int input_seed(Instance *c, const unsigned *known, size_t nknown, const double *seed)
{
    memset(c->dtau, 0, sizeof(double) * D.nv);
    memset(c->du, 0, sizeof(double) * 6 * D.nc);
    for (int k = 0; k < 6 * D.nb; k++) c->d->fext[k] = 0.0;
    int use = 0;
    FOR_SCALARS(c, known, nknown, 0, D.nreal, r, s) {
            const double x = seed[s];
            if (r >= D.vr_tau && r < D.vr_tau + D.nv) {
                c->dtau[r - D.vr_tau] += x;
                continue;
            }
            for (int j = 0; j < D.nc; j++)
                if (r >= D.constraints[j].vr_u && r < D.constraints[j].vr_u + c->m->cn_size[j])
                    c->du[6 * j + r - D.constraints[j].vr_u] += x;
            for (int f = 0; f < D.nframes; f++) {
                const soa_fmu_frame *fr = &D.frames[f];
                if (r < fr->vr_fext || r >= fr->vr_fext + 6) continue;
                const int jj = r - fr->vr_fext;
                double e[6] = {0, 0, 0, 0, 0, 0}, F[3] = {0, 0, 0}, pxF[3];
                e[jj] = x;
                double *fk = c->d->fext + 6 * fr->body;
                for (int a = 0; a < 3; a++) {
                    fk[a] += fr->R[3 * a] * e[0] + fr->R[3 * a + 1] * e[1]
                             + fr->R[3 * a + 2] * e[2];
                    F[a] = fr->R[3 * a] * e[3] + fr->R[3 * a + 1] * e[4] + fr->R[3 * a + 2] * e[5];
                }
                cross3(fr->p, F, pxF);
                for (int a = 0; a < 3; a++) {
                    fk[a] += pxF[a];
                    fk[3 + a] += F[a];
                }
                use = 1;
            }
        }
    return use;
}

static int not_provided(Instance *c, int r, const char *fn)
{
    int j = 0;
    while (j < D.nc && !c->active[j]) j++;
    fmu_log(c, FMU_ERROR, "%s: the derivative of %s with respect to the continuous states is not "
            "provided while constraint '%s' is switched on (exact derivatives of the constrained "
            "dynamics with respect to the state are not implemented; see docs/fmu.md)", fn,
            D.vars[r].name, D.constraint_names[j < D.nc ? j : 0]);
    return FMU_ERROR;
}

/* d(unknowns) = J d(knowns): the file comment.  Knowns: inputs, and the states q, qd when the
 * FMU has them; unknowns: any Real (0 where it does not depend on the knowns). */
int fmu_directional(Instance *c, const unsigned *unknown, size_t nunknown, const unsigned *known,
                    size_t nknown, const double *seed, size_t nseed, double *out, size_t nout,
                    const char *fn)
{
    if ((nout && !out) || (nseed && !seed)) return FMU_ERROR;
    if (!fmu_check_refs(c, unknown, nunknown, nout, 0, D.nreal, fn, 0)
        || !fmu_check_refs(c, known, nknown, nseed, 0, D.nreal, fn, 0))
        return FMU_ERROR;
    if (D.role == SOA_FMU_CONTROLLER) {
        fmu_log(c, FMU_ERROR, "%s: the controller provides no directional derivatives", fn);
        return FMU_ERROR;
    }
    if (D.nsph > 0 || c->m->nmim > 0) {   /* the contact forces' derivatives, the mimic
                                            couplings' (mimic.c) are not formed: declared false */
        fmu_log(c, FMU_ERROR, "%s: this FMU has %s; it provides no directional derivatives "
                "(providesDirectionalDerivative=\"false\")", fn,
                D.nsph > 0 ? "contact" : "mimic joints");
        return FMU_ERROR;
    }
    fmu_data_used(c);                   /* (the kernels below reuse the data) */
    const int states = D.vr_qdot >= 0;
    int with_x = 0, with_u = 0;
    memset(c->dq, 0, sizeof(double) * D.nq);
    memset(c->dv, 0, sizeof(double) * D.nv);
    FOR_SCALARS(c, known, nknown, 0, D.nreal, r, s) {
        if (r < D.nreal && D.vars[r].causality == SOA_FMU_INPUT) {
            with_u = 1;
            continue;
        }
        if (states && r >= D.vr_q && r < D.vr_q + D.nq) {
            c->dq[r - D.vr_q] += seed[s];
            with_x = 1;
            continue;
        }
        if (states && r >= D.vr_qd && r < D.vr_qd + D.nv) {
            c->dv[r - D.vr_qd] += seed[s];
            with_x = 1;
            continue;
        }
        fmu_log(c, FMU_ERROR, "%s: %s is not an input%s (derivatives are provided with respect "
                "to tau, f_ext and u%s)", fn, r < D.nreal ? D.vars[r].name : "time",
                states ? " or a continuous state" : "", states ? ", and the states q, qd" : "");
        return FMU_ERROR;
    }
    int need_energy = 0, need_poses = 0, need_qdd = 0, need_qdot = 0;
    FOR_SCALARS(c, unknown, nunknown, 0, D.nreal, r, s) {
        int i;
        const int kind = r < D.nreal ? unknown_kind(r, &i) : U_NONE;
        need_energy |= kind == U_ENERGY;
        need_poses |= kind == U_POSE;
        need_qdd |= kind == U_QDD;
        need_qdot |= kind == U_QDOT;
    }
    if (!fmu_refresh(c, 1, need_energy && with_x, need_poses && with_x, fn)) return FMU_ERROR;
    const int constrained = D.nc > 0 && fmu_gather_closure_inputs(c);
    soa_status st = fmu_normalize(c);
    double dE = 0.0;
    /* the state part first: energy and poses read the data soa_aba_derivatives leaves */
    if (with_x) {
        if (constrained)
            FOR_SCALARS(c, unknown, nunknown, 0, D.nreal, r, s) {
                int i;
                const int kind = r < D.nreal ? unknown_kind(r, &i) : U_NONE;
                if (kind == U_QDD || kind == U_FORCE || kind == U_ERR)
                    return not_provided(c, r, fn);
            }
        tangent(c, c->dq, c->dth);
        memset(c->dqdd_x, 0, sizeof(double) * D.nv);
        const int nv = D.nv;
        if (st.kind == SOA_OK && (need_energy || need_poses || (need_qdd && !c->jac_valid))) {
            const int use = fmu_pack_frame_forces(c, c->real, c->d->fext);
            /* at the joint forces with the dissipation T = tau - d qd - f_c s(qd) (dissipation.c),
             * whose own rate dT/dqd = -diag(d + f_c s'(qd)) adds M^-1 dT/dqd to d(beta-dot)/dqd */
            const double *qd = c->real + D.vr_qd;
            memcpy(c->qs, soa_joint_forces(c->m, c->d, c->qn, qd, c->real + D.vr_tau),
                   sizeof(double) * nv);
            st = soa_aba_derivatives(c->m, c->d, c->qn, qd, c->qs, use, c->jac, c->jac + nv * nv,
                                     nv, c->jac + 2 * nv * nv);
            if (st.kind == SOA_OK && (c->m->dissipative || c->m->stopped)) {
                /* and the active stops' dT/dq = -k, dT/dqd = -b (dissipation.c) */
                const double vs = c->m->vfric[0], *Minv = c->jac + 2 * nv * nv;
                for (int b = 0; b < nv; b++) {
                    const double th = tanh(qd[b] / vs);
                    double ks = 0.0, bs = 0.0;
                    if (c->m->stopped) soa_stop_force(c->m, b, c->qn, qd, &ks, &bs);
                    const double w = c->m->damping[b] + c->m->friction[b] * (1.0 - th * th) / vs + bs;
                    for (int a = 0; a < nv; a++) {
                        c->jac[nv * nv + a * nv + b] -= Minv[a * nv + b] * w;
                        c->jac[a * nv + b] -= Minv[a * nv + b] * ks;
                    }
                }
            }
            c->jac_valid = st.kind == SOA_OK;
        }
        if (st.kind == SOA_OK && need_qdd)
            for (int a = 0; a < nv; a++) {
                const double *rq = c->jac + a * nv, *rv = c->jac + nv * nv + a * nv;
                double x = 0.0;
                for (int b = 0; b < nv; b++) x += rq[b] * c->dth[b] + rv[b] * c->dv[b];
                c->dqdd_x[a] = x;
            }
        if (need_qdot) rate_derivative(c, c->dq, c->dth, c->dv, c->dqdot);
        if (st.kind == SOA_OK && need_energy) dE = energy_derivative(c, c->dth, c->dv);
    }
    /* the input part: at a fixed state the accelerations and constraint forces are affine in the
     * inputs, so their derivative is the linear part -- the tree's input map M^-1 (dT + J* df), or
     * with active constraints the constrained forward dynamics of the direction alone: beta = 0
     * (no Coriolis or relative-velocity terms), no gravity, no position-error term (Baumgarte
     * beta = 0; the alpha term carries dU~) */
    if (st.kind == SOA_OK && with_u && (need_qdd || D.nc > 0)) {
        const int use = input_seed(c, known, nknown, seed);
        if (constrained) {
            double a0[6];
            memcpy(a0, c->m->a0, sizeof a0);
            memset(c->m->a0, 0, sizeof a0);                /* no gravity in the linear part */
            st = soa_constrained_fd(c->m, c->d, c->qn, c->zero_v, c->dtau, use, c->active, c->du,
                                    NULL, c->anchors, c->real[D.vr_stab], 0.0, c->dqdd,
                                    c->dforces, c->dres);
            memcpy(c->m->a0, a0, sizeof a0);
        } else {
            st = soa_forward_dynamics_input_map(c->m, c->d, c->qn, c->dtau, use, c->dqdd);
        }
    }
    if (st.kind != SOA_OK) {
        char msg[MSG];
        fmu_status_message(c, st, msg, sizeof msg);
        fmu_log(c, FMU_ERROR, "%s: %s", fn, msg);
        return FMU_ERROR;
    }
    FOR_SCALARS(c, unknown, nunknown, 0, D.nreal, r, s) {
        int i;
        const int kind = r < D.nreal ? unknown_kind(r, &i) : U_NONE;
        double v = 0.0, pose[7];
        switch (kind) {
        case U_Q: v = c->dq[i]; break;
        case U_QD: v = c->dv[i]; break;
        case U_QDOT: v = with_x ? c->dqdot[i] : 0.0; break;
        case U_QDD: v = (with_u ? c->dqdd[i] : 0.0) + (with_x ? c->dqdd_x[i] : 0.0); break;
        case U_FORCE: v = with_u && constrained && c->active[i / 6] ? c->dforces[i] : 0.0; break;
        case U_ENERGY: v = dE; break;
        case U_POSE:
            if (with_x) {
                pose_derivative(c, i / 7, c->dth, pose);
                v = pose[i % 7];
            }
            break;
        default: break;
        }
        out[s] = v;
    }
    return FMU_OK;
}

/* sensitivity(knowns) = seed(unknowns)^T J, column by column of J (one directional derivative per
 * known scalar; the state Jacobian is computed once and reused). */
int fmu_adjoint(Instance *c, const unsigned *unknown, size_t nunknown, const unsigned *known,
                size_t nknown, const double *seed, size_t nseed, double *out, size_t nout,
                const char *fn)
{
    if ((nout && !out) || (nseed && !seed)) return FMU_ERROR;
    if (!fmu_check_refs(c, unknown, nunknown, nseed, 0, D.nreal, fn, 0)
        || !fmu_check_refs(c, known, nknown, nout, 0, D.nreal, fn, 0))
        return FMU_ERROR;
    if (D.nsph > 0 || D.role == SOA_FMU_CONTROLLER) {
        fmu_log(c, FMU_ERROR, "%s: this FMU provides no adjoint derivatives", fn);
        return FMU_ERROR;
    }
    if (nout > (size_t)D.nreal + 1 || nseed > (size_t)D.nreal + 1) {
        fmu_log(c, FMU_ERROR, "%s: at most %d knowns and unknowns per call", fn, D.nreal + 1);
        return FMU_ERROR;
    }
    double *e = c->scratch, *col = c->scratch + D.nreal + 1;
    for (size_t j = 0; j < nout; j++) {
        memset(e, 0, sizeof(double) * nout);
        e[j] = 1.0;
        const int status = fmu_directional(c, unknown, nunknown, known, nknown, e, nout, col,
                                           nseed, fn);
        if (status != FMU_OK) return status;
        double x = 0.0;
        for (size_t i = 0; i < nseed; i++) x += seed[i] * col[i];
        out[j] = x;
    }
    return FMU_OK;
}

/* The event indicators (FMI 2.0 and 3.0 Model Exchange): the joint stops' margins, so that the
 * integrator lands on the contact instant, then one per contact pair (fmu_contact.c: its signed
 * penetration). */
/* (their count; a controller has none) */
int fmu_me_nz(const Instance *c)
{
    if (D.role == SOA_FMU_CONTROLLER) return 0;
    return fmu_stop_margins(c->m, NULL, NULL) + fmu_contact_pair_count();
}

int fmu_me_event_indicators(Instance *c, double *z, size_t ni, const char *fn)
{
    const size_t nz = (size_t)fmu_me_nz(c);
    if (ni != nz || (ni && !z)) {
        fmu_log(c, FMU_ERROR, "%s: this FMU has %zu event indicators, %zu were asked for%s", fn,
                nz, ni, ni && !z ? " (into NULL)" : "");
        return FMU_ERROR;
    }
    if (nz == 0) return FMU_OK;
    const int n = fmu_stop_margins(c->m, c->real + D.vr_q, z);
    if (fmu_contact_pair_count() == 0) return FMU_OK;
    if (!fmu_me_require(c, fn, (1 << INITIALIZATION) | (1 << EVENT) | (1 << CONTINUOUS))
        || !fmu_refresh(c, 0, 0, 0, fn))
        return FMU_ERROR;
    return fmu_contact_indicators(c, fmu_me_normalized(c), z + n, fn);
}
