/* Fixed-step integrators of (theta, beta) with theta-dot = f(theta) beta and beta-dot from an
 * acceleration soa_accel (the tree's innovations forward dynamics by default, soa_tree_accel):
 * classical RK4 and semi-implicit (symplectic) Euler; and the linearly implicit Euler step of the
 * tree (soa_implicit), implicit in the joints' dissipation and stops, by one articulated sweep
 * with a diagonal added to D(k) (seed 001 eqs. 34-36; docs/joints.md).  Quaternions are renormalized after every
 * (sub)step and before each stage evaluation (a quaternion's rotation is invariant to its scale,
 * so the projection costs no accuracy).  Every buffer is in soa_data. */
#include <math.h>
#include <string.h>

#include "soa.h"

/* beta-dot of the tree (seed 001 Algorithm 3 in the inertial frame) with the held inputs of a
 * soa_tree_inputs, the joints' dissipation (soa_joint_forces), the contact forces (contact.c) and
 * the mimic couplings (mimic.c); time-invariant.  At the state
 * whose factors the data holds (q_factored, qd_factored: the reported beta-dot of the last step is
 * the first stage of the next) only the filter and smoother run; the result is the same to the
 * bit. */
soa_status soa_tree_accel(void *ctx, const double *q, const double *qd, double t, double *qdd)
{
    soa_tree_inputs *in = ctx;
    soa_status st = {SOA_OK, 0};
    (void)t;
    const soa_model *m = in->m;
    const double *tau = soa_joint_forces(m, in->d, q, qd, in->tau);
    const int use = (in->use_fext ? SOA_USE_FEXT : 0) | (m->nsph ? SOA_USE_CONTACT : 0);
    if (m->nm) return soa_flex_fd(m, in->d, q, qd, tau, in->use_fext, qdd);
    if (in->q_factored && memcmp(q, in->q_factored, sizeof(double) * m->nq) == 0
        && memcmp(qd, in->qd_factored, sizeof(double) * m->nv) == 0) {
        in->q_factored = in->qd_factored = NULL;          /* once: the stages move on */
        soa_tree_acceleration_refilter(m, in->d, tau, use, qdd);
        soa_mimic_couple(m, in->d, qdd);                  /* mimic.c (no-op without) */
        return st;
    }
    in->q_factored = in->qd_factored = NULL;
    const int k = soa_tree_acceleration_inertial(m, in->d, q, qd, tau, use, qdd);
    if (k >= 0) {
        st.kind = SOA_SINGULAR;
        st.index = k;
    } else {
        soa_mimic_couple(m, in->d, qdd);
    }
    return st;
}

soa_status soa_diverged(const soa_model *m, soa_data *d, const double *q, const double *qd,
                        soa_status st)
{
    if (st.kind != SOA_SINGULAR && st.kind != SOA_DIVERGED && st.kind != SOA_BAD_Q
        && st.kind != SOA_BAD_QD && st.kind != SOA_BAD_QUAT && st.kind != SOA_BAD_RESULT)
        return st;
    int k = 0;
    double big = -1.0;
    for (int i = 0; i < m->nq + m->nv; i++) {
        const double x = i < m->nq ? q[i] : qd[i - m->nq];
        if (!isfinite(x)) {          /* a non-finite component is the largest */
            k = i;
            break;
        }
        if (fabs(x) > big) {
            big = fabs(x);
            k = i;
        }
    }
    d->diverged[0] = k < m->nq ? q[k] : qd[k - m->nq];
    const soa_status dv = {SOA_DIVERGED, k};
    return dv;
}

/* qdd <- beta-dot at the end of a step (reported at t + h), and the step's status: DIVERGED when
 * the state or beta-dot is not finite, or D singular there (the step's start was fine). */
static soa_status final_acceleration(const soa_model *m, soa_data *d, soa_accel acc,
                                     const double *q, const double *qd, double t, double *qdd)
{
    const soa_status bad = {SOA_DIVERGED, 0};
    if (soa_first_nonfinite(q, m->nq) >= 0 || soa_first_nonfinite(qd, m->nv) >= 0)
        return soa_diverged(m, d, q, qd, bad);
    const soa_status sa = acc.fn(acc.ctx, q, qd, t, qdd);
    if (sa.kind != SOA_OK) return soa_diverged(m, d, q, qd, sa);
    return soa_first_nonfinite(qdd, m->nv) >= 0 ? soa_diverged(m, d, q, qd, bad) : sa;
}

static soa_status check_step(const soa_model *m, const double *q, const double *qd, double t,
                             double h, int nsub)
{
    soa_status st = soa_check_state(m, q, qd);
    if (st.kind == SOA_OK && !(h > 0.0 && h < 1e300 && nsub >= 1 && t > -1e300 && t < 1e300)) {
        st.kind = SOA_BAD_ARG;
        st.index = 0;
    } else if (st.kind == SOA_OK && nsub > SOA_MAX_SUBSTEPS) {
        st.kind = SOA_TOO_MANY_SUBSTEPS;
        st.index = SOA_MAX_SUBSTEPS;
    }
    return st;
}

/* nsub classical RK4 steps of size h from time t on (theta, beta) in place; qdd <- beta-dot at
 * the end. */
soa_status soa_rk4_with(const soa_model *m, soa_data *d, soa_accel acc, double *q, double *qd,
                        double t, double h, int nsub, double *qdd)
{
    soa_status st = check_step(m, q, qd, t, h, nsub);
    if (st.kind != SOA_OK) return st;
    const int nq = m->nq, nv = m->nv;
    for (int step = 0; step < nsub; step++) {
        const double ts = t + step * h;
        for (int s = 0; s < 4; s++) {
            const double c = s == 0 ? 0.0 : (s < 3 ? 0.5 * h : h);
            const double *kqp = d->kq + (s > 0 ? s - 1 : 0) * nq, *kvp = d->kv + (s > 0 ? s - 1 : 0) * nv;
            for (int i = 0; i < nq; i++) d->qs[i] = s > 0 ? q[i] + c * kqp[i] : q[i];
            for (int i = 0; i < nv; i++) d->vs[i] = s > 0 ? qd[i] + c * kvp[i] : qd[i];
            if (s > 0) soa_normalize_quaternions(m, d->qs);
            soa_configuration_rate(m, d->qs, d->vs, d->kq + s * nq);
            st = acc.fn(acc.ctx, d->qs, d->vs, ts + c, d->kv + s * nv);
            if (st.kind != SOA_OK) return step + s > 0 ? soa_diverged(m, d, d->qs, d->vs, st) : st;
        }
        const double *kq = d->kq, *kv = d->kv;
        for (int i = 0; i < nq; i++)
            q[i] += h / 6.0 * (kq[i] + 2.0 * kq[nq + i] + 2.0 * kq[2 * nq + i] + kq[3 * nq + i]);
        for (int i = 0; i < nv; i++)
            qd[i] += h / 6.0 * (kv[i] + 2.0 * kv[nv + i] + 2.0 * kv[2 * nv + i] + kv[3 * nv + i]);
        soa_normalize_quaternions(m, q);
    }
    return final_acceleration(m, d, acc, q, qd, t + nsub * h, qdd);
}

/* nsub semi-implicit Euler steps from time t in place: beta <- beta + h beta-dot,
 * theta <- theta (+) h beta. */
soa_status soa_euler_with(const soa_model *m, soa_data *d, soa_accel acc, double *q, double *qd,
                          double t, double h, int nsub, double *qdd)
{
    soa_status st = check_step(m, q, qd, t, h, nsub);
    if (st.kind != SOA_OK) return st;
    for (int step = 0; step < nsub; step++) {
        st = acc.fn(acc.ctx, q, qd, t + step * h, qdd);
        if (st.kind != SOA_OK) return step > 0 ? soa_diverged(m, d, q, qd, st) : st;
        for (int i = 0; i < m->nv; i++) {
            qd[i] += h * qdd[i];
            d->dv[i] = h * qd[i];
        }
        soa_integrate_configuration(m, q, d->dv, d->qs);
        for (int i = 0; i < m->nq; i++) q[i] = d->qs[i];
    }
    return final_acceleration(m, d, acc, q, qd, t + nsub * h, qdd);
}

soa_status soa_rk4(const soa_model *m, soa_data *d, double *q, double *qd, const double *tau,
                   int use_fext, double h, int nsub, double *qdd)
{
    const soa_status st = soa_check_inputs(m, q, qd, tau);
    if (st.kind != SOA_OK) return st;
    soa_tree_inputs in = {m, d, tau, use_fext, NULL, NULL};
    const soa_accel acc = {soa_tree_accel, &in};
    return soa_rk4_with(m, d, acc, q, qd, 0.0, h, nsub, qdd);
}

soa_status soa_euler(const soa_model *m, soa_data *d, double *q, double *qd, const double *tau,
                     int use_fext, double h, int nsub, double *qdd)
{
    const soa_status st = soa_check_inputs(m, q, qd, tau);
    if (st.kind != SOA_OK) return st;
    soa_tree_inputs in = {m, d, tau, use_fext, NULL, NULL};
    const soa_accel acc = {soa_tree_accel, &in};
    return soa_euler_with(m, d, acc, q, qd, 0.0, h, nsub, qdd);
}

/* One linearly implicit Euler step (first order; docs/joints.md).  With the joint forces
 * T(theta, beta) linearized as T(theta0 + dtheta, beta0 + dbeta) ~ T0 - B dbeta - K dtheta
 * (B, K diagonal: soa_implicit_terms) and dtheta = h (beta0 + dbeta), the step
 *     (M + diag(a)) dbeta = h (T(theta1, beta1) - C - g)
 * becomes (M + diag(a + h B + h^2 K)) x = T0 - h K beta0 - C(theta0, beta0) - g,  dbeta = h x:
 * forward dynamics with D(k) += h B + h^2 K in the Riccati sweep (seed 001 eq. 35), ONE sweep.
 * With contact, the contact forces are linearized the same way (soa_contact_implicit: the rank-3 n_c
 * update J* (h B_c + h^2 K_c) J of M + diag(...) by Woodbury through Lambda^-1, docs/contact.md). */
soa_status soa_implicit(const soa_model *m, soa_data *d, double *q, double *qd, const double *tau,
                        int use_fext, double h, int nsub, double *qdd)
{
    soa_status st = soa_check_inputs(m, q, qd, tau);
    if (st.kind == SOA_OK) st = check_step(m, q, qd, 0.0, h, nsub);
    if (st.kind != SOA_OK) return st;
    for (int step = 0; step < nsub; step++) {
        const double *T = soa_joint_forces(m, d, q, qd, tau);
        soa_implicit_terms(m, d, q, qd, T, h);
        /* (SOA_CONTACT_HELD: the caller's data holds the contact forces at the first state) */
        const int use = ((use_fext & ~SOA_CONTACT_HELD) ? SOA_USE_FEXT : 0)
                        | (m->nsph ? SOA_USE_CONTACT : 0)
                        | (step == 0 && m->nsph ? use_fext & SOA_CONTACT_HELD : 0);
        int k;
        if (m->nm) {                  /* flexible bodies: + the modes' strain and damping (flexible.c) */
            soa_flex_implicit_terms(m, d, qd, h, NULL, NULL);
            const soa_status sf = soa_flex_fd_diag(m, d, q, qd, d->jrhs, use & SOA_USE_FEXT, d->jdiag,
                                                   qdd);
            k = sf.kind == SOA_OK ? -1 : sf.index;
        } else {
            k = soa_tree_acceleration_diag(m, d, q, qd, d->jrhs, use, d->jdiag, qdd);
        }
        if (k >= 0) {
            st.kind = SOA_SINGULAR;
            st.index = k;
            return step > 0 ? soa_diverged(m, d, q, qd, st) : st;   /* D was fine at the start */
        }
        if (m->nsph) soa_contact_implicit(m, d, h, qdd);    /* contact.c */
        soa_mimic_couple(m, d, qdd);          /* mimic.c: the coupled solve of the same matrix */
        for (int i = 0; i < m->nv; i++) {
            qd[i] += h * qdd[i];
            d->dv[i] = h * qd[i];
        }
        soa_integrate_configuration(m, q, d->dv, d->qs);
        for (int i = 0; i < m->nq; i++) q[i] = d->qs[i];
        soa_normalize_quaternions(m, q);
    }
    const int iq = soa_first_nonfinite(q, m->nq), iv = soa_first_nonfinite(qd, m->nv);
    const int ia = soa_first_nonfinite(qdd, m->nv);
    if (iq >= 0 || iv >= 0 || ia >= 0) {
        st.kind = SOA_DIVERGED;
        return soa_diverged(m, d, q, qd, st);
    }
    return st;
}

/* auto's choice (soa.h): the explicit bound of RK4 per dof, on the real axis h lambda > -2.79
 * (damping b / m) and on the imaginary axis |h omega| < 2.83 (stiffness: h^2 k / m < 8), each with a
 * margin, m the dof's articulated inertia at q (D(k) with the armature: the smallest inertia the
 * dof can see, the rest of the tree free). */
int soa_auto_method(const soa_model *m, soa_data *d, const double *q, double h)
{
    if (m->nsph) return SOA_IMPLICIT;                /* contact: stiff (docs/contact.md) */
    if (m->nm || m->nc || (!m->dissipative && !m->stopped)) return SOA_RK4;
    if (soa_check_configuration(m, q).kind != SOA_OK) return SOA_RK4;
    soa_outward_placements(m, d, q);
    soa_world_placements(m, d);
    if (soa_riccati_sweep(m, d, 1) >= 0) return SOA_IMPLICIT;
    const double vs = m->vfric[0];
    for (int k = 0; k < m->nb; k++)
        for (int j = 0; j < m->nvj[k]; j++) {
            const int i = m->v0[k] + j;
            const double mi = 1.0 / d->Dinv[36 * k + 7 * j];
            double b = m->damping[i] + m->friction[i] / vs, kk = 0.0;
            if (m->stopped && m->stop_on[i]) {
                b += m->stop_b[i];
                kk = m->stop_k[i];
            }
            if (!(h * b < 2.8 * mi) || !(h * h * kk < 7.8 * mi)) return SOA_IMPLICIT;
        }
    return SOA_RK4;
}
