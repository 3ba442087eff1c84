/* Joint dissipation and joint stops: the joint forces the simulator adds to the held inputs (the
 * integrators' accelerations soa_tree_accel and soa_closure_accel, and the outputs computed at a
 * state), so that the Simulator, the pythonfmu flavour and the native FMU apply them with the same
 * operations (docs/joints.md):
 *
 *     T = tau - d qd - f_c s(qd) + tau_stop,   s(qd) = tanh(qd / v_s)
 *
 * per velocity dof.  The Coulomb law sign(qd) is smoothed over the regularization velocity v_s
 * (the model's vfric, SOA_FRICTION_VELOCITY by default): |s| reaches 0.76 at |qd| = v_s and
 * 0.9999 at 5 v_s.  Near rest the friction acts as a damping f_c / v_s, which bounds the step of an
 * explicit integrator (h f_c / (v_s I) below about 2.8 for RK4, I the dof's articulated inertia);
 * the implicit integrator (soa_implicit) has no such bound.
 *
 * A joint stop is a one-sided compliant spring-damper acting only beyond a limit of a revolute or
 * prismatic joint: with delta = q - upper > 0 (or q - lower < 0),
 *
 *     tau_stop = -k delta - b qd,   else 0.
 *
 * The rigid-body functions (soa_aba, soa_rnea, ...) do not include these forces. */
#include <math.h>

#include "soa.h"

/* The stop force of dof i (see the file comment); *kk, *bb <- k, b where it acts, else 0. */
double soa_stop_force(const soa_model *m, int i, const double *q, const double *qd, double *kk,
                      double *bb)
{
    double k = 0.0, b = 0.0, f = 0.0;
    const int on = m->stop_on[i], qi = m->stop_qi[i];
    if (m->stopped && on && qi >= 0) {
        const double x = q[qi];
        double delta = 0.0;
        if ((on & 2) && x > m->stop_hi[i]) delta = x - m->stop_hi[i];
        else if ((on & 1) && x < m->stop_lo[i]) delta = x - m->stop_lo[i];
        if (delta != 0.0) {
            k = m->stop_k[i];
            b = m->stop_b[i];
            f = -k * delta - b * qd[i];
        }
    }
    if (kk) *kk = k;
    if (bb) *bb = b;
    return f;
}

const double *soa_joint_forces(const soa_model *m, soa_data *d, const double *q, const double *qd,
                               const double *tau)
{
    if (!m->dissipative && !m->stopped) return tau;
    const double *dmp = m->damping, *fc = m->friction, vs = m->vfric[0];
    double *T = d->tau_j;
    for (int i = 0; i < m->nv; i++) {
        T[i] = tau[i] - dmp[i] * qd[i];
        if (fc[i] != 0.0) T[i] -= fc[i] * tanh(qd[i] / vs);
        d->stop_tau[i] = m->stopped ? soa_stop_force(m, i, q, qd, NULL, NULL) : 0.0;
        T[i] += d->stop_tau[i];
    }
    return T;
}

/* The linearization of T in (theta, beta) that the implicit stages treat implicitly (diagonal):
 * B = -dT/dqd = d + f_c (1 - s^2) / v_s + b,  K = -dT/dq = k (active stops);
 * jdiag = a + h B + h^2 K and jrhs = T - h K r + (h B + h^2 K) s, r = qd and s = 0 where NULL:
 * the implicit Euler step's (h), or a Rosenbrock stage's (h = gamma h; docs/joints.md).
 * ahead > 0 (a Rosenbrock stage, whose Jacobian may be any: a W-method): the friction's B is its
 * secant f_c s / qd (f_c / v_s at rest) instead of the tangent, which vanishes where the friction
 * saturates (|qd| >> v_s) and would let a step overshoot the sign change of the velocity and
 * stall there; and a stop's k, b count as soon as q + ahead qd is beyond its limit, so that every
 * stage of a step entering a stiff stop treats it implicitly.  Returns 1 when some K != 0. */
int soa_implicit_terms(const soa_model *m, soa_data *d, const double *q, const double *qd,
                       const double *T, double h, const double *r, const double *s, double ahead)
{
    const double vs = m->vfric[0];
    int stiff = 0;
    if (!r) r = qd;
    for (int i = 0; i < m->nv; i++) {
        double k = 0.0, b = 0.0;
        if (m->stopped) {
            soa_stop_force(m, i, q, qd, &k, &b);
            const int on = m->stop_on[i], qi = m->stop_qi[i];
            if (ahead > 0.0 && k == 0.0 && on && qi >= 0) {
                const double x = q[qi] + ahead * qd[i];
                if (((on & 2) && x > m->stop_hi[i]) || ((on & 1) && x < m->stop_lo[i])) {
                    k = m->stop_k[i];
                    b = m->stop_b[i];
                }
            }
        }
        double B = m->damping[i] + b;
        if (m->friction[i] != 0.0) {
            const double sg = tanh(qd[i] / vs);
            if (!(ahead > 0.0)) B += m->friction[i] * (1.0 - sg * sg) / vs;
            else B += m->friction[i] * (qd[i] != 0.0 && sg != 0.0 ? sg / qd[i] : 1.0 / vs);
        }
        const double c = h * B + h * h * k;
        d->jdiag[i] = m->armature[i] + c;
        d->jrhs[i] = T[i] - h * k * r[i] + (s ? c * s[i] : 0.0);
        stiff |= k != 0.0;
    }
    return stiff;
}
