/* Fixed-step integrators of (theta, beta) with theta-dot = f(theta) beta and beta-dot from the
 * innovations forward dynamics: classical RK4 and semi-implicit (symplectic) Euler.  Quaternions
 * are renormalized after every (sub)step and before each stage evaluation (a quaternion's rotation
 * is invariant to its scale, so the projection costs no accuracy).  Every buffer is in soa_data. */
#include "soa.h"

/* qdd <- beta-dot at the end of a step (reported at t + h), and the step's status. */
static soa_status final_acceleration(const soa_model *m, soa_data *d, const double *q,
                                     const double *qd, const double *tau, int use_fext, double *qdd)
{
    soa_status st = {SOA_OK, 0};
    const int iq = soa_first_nonfinite(q, m->nq), iv = soa_first_nonfinite(qd, m->nv);
    if (iq >= 0 || iv >= 0) {
        st.kind = SOA_DIVERGED;
        st.index = iv > 0 ? iv : 0;
        return st;
    }
    const int k = soa_tree_acceleration_inertial(m, d, q, qd, tau, use_fext, qdd);
    if (k >= 0) {
        st.kind = SOA_SINGULAR;
        st.index = k;
    }
    return st;
}

static soa_status check_step(const soa_model *m, const double *q, const double *qd,
                             const double *tau, double h, int nsub)
{
    soa_status st = soa_check_state(m, q, qd);
    if (st.kind != SOA_OK) return st;
    const int i = soa_first_nonfinite(tau, m->nv);
    if (i >= 0) {
        st.kind = SOA_BAD_TAU;
        st.index = i;
    } else if (!(h > 0.0 && h < 1e300) || nsub < 1) {
        st.kind = SOA_BAD_ARG;
        st.index = 0;
    }
    return st;
}

/* nsub classical RK4 steps of size h on (theta, beta) in place; qdd <- beta-dot at the end. */
soa_status soa_rk4(const soa_model *m, soa_data *d, double *q, double *qd, const double *tau,
                   int use_fext, double h, int nsub, double *qdd)
{
    soa_status st = check_step(m, q, qd, tau, h, nsub);
    if (st.kind != SOA_OK) return st;
    const int nq = m->nq, nv = m->nv;
    for (int step = 0; step < nsub; step++) {
        for (int s = 0; s < 4; s++) {
            const double c = s == 0 ? 0.0 : (s < 3 ? 0.5 * h : h);
            const double *kqp = d->kq + (s > 0 ? s - 1 : 0) * nq, *kvp = d->kv + (s > 0 ? s - 1 : 0) * nv;
            for (int i = 0; i < nq; i++) d->qs[i] = s > 0 ? q[i] + c * kqp[i] : q[i];
            for (int i = 0; i < nv; i++) d->vs[i] = s > 0 ? qd[i] + c * kvp[i] : qd[i];
            if (s > 0) soa_normalize_quaternions(m, d->qs);
            soa_configuration_rate(m, d->qs, d->vs, d->kq + s * nq);
            const int k = soa_tree_acceleration_inertial(m, d, d->qs, d->vs, tau, use_fext, d->kv + s * nv);
            if (k >= 0) {
                st.kind = SOA_SINGULAR;
                st.index = k;
                return st;
            }
        }
        const double *kq = d->kq, *kv = d->kv;
        for (int i = 0; i < nq; i++)
            q[i] += h / 6.0 * (kq[i] + 2.0 * kq[nq + i] + 2.0 * kq[2 * nq + i] + kq[3 * nq + i]);
        for (int i = 0; i < nv; i++)
            qd[i] += h / 6.0 * (kv[i] + 2.0 * kv[nv + i] + 2.0 * kv[2 * nv + i] + kv[3 * nv + i]);
        soa_normalize_quaternions(m, q);
    }
    return final_acceleration(m, d, q, qd, tau, use_fext, qdd);
}

/* nsub semi-implicit Euler steps in place: beta <- beta + h beta-dot, theta <- theta (+) h beta. */
soa_status soa_euler(const soa_model *m, soa_data *d, double *q, double *qd, const double *tau,
                     int use_fext, double h, int nsub, double *qdd)
{
    soa_status st = check_step(m, q, qd, tau, h, nsub);
    if (st.kind != SOA_OK) return st;
    for (int step = 0; step < nsub; step++) {
        const int k = soa_tree_acceleration_inertial(m, d, q, qd, tau, use_fext, qdd);
        if (k >= 0) {
            st.kind = SOA_SINGULAR;
            st.index = k;
            return st;
        }
        for (int i = 0; i < m->nv; i++) {
            qd[i] += h * qdd[i];
            d->dv[i] = h * qd[i];
        }
        soa_integrate_configuration(m, q, d->dv, d->qs);
        for (int i = 0; i < m->nq; i++) q[i] = d->qs[i];
    }
    return final_acceleration(m, d, q, qd, tau, use_fext, qdd);
}
