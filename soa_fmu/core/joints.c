/* Joints (SPEC E2; seed 000 sec. 2.1, seed 001 sec. VIII, seed 003 App. B): the joint transform
 * at theta, theta-dot = f(theta) beta, the exponential-map update theta (+) delta, and the checks
 * on a configuration.  The joint map H*(k) (m->S rows) is constant in the body frame. */
#include <math.h>

#include "soa.h"
#include "spatial.h"

int soa_first_nonfinite(const double *x, int n)
{
    /* x * 0 is 0 if x is finite, else NaN; four independent sums (no chain of dependent adds:
     * the scan runs at the adder's throughput, not its latency) */
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += x[i] * 0.0;
        s1 += x[i + 1] * 0.0;
        s2 += x[i + 2] * 0.0;
        s3 += x[i + 3] * 0.0;
    }
    for (; i < n; i++) s0 += x[i] * 0.0;
    if ((s0 + s1) + (s2 + s3) == 0.0) return -1;    /* (the common case: no branch per entry) */
    for (i = 0; i < n; i++)
        if (!isfinite(x[i])) return i;
    return -1;
}

/* {BAD_Q, i} for a non-finite theta(i), {BAD_QUAT, k} for a non-unit quaternion of body k. */
soa_status soa_check_configuration(const soa_model *m, const double *q)
{
    soa_status st = {SOA_OK, 0};
    const int i = soa_first_nonfinite(q, m->nq);
    if (i >= 0) {
        st.kind = SOA_BAD_Q;
        st.index = i;
        return st;
    }
    for (int t = 0; t < m->nquat; t++) {             /* the spherical and free joints */
        const int k = m->quatb[t];
        const double *e = q + m->q0[k];
        const double n2 = e[0] * e[0] + e[1] * e[1] + e[2] * e[2] + e[3] * e[3];
        if (fabs(n2 - 1.0) > SOA_QUAT_TOL) {
            st.kind = SOA_BAD_QUAT;
            st.index = k;
            return st;
        }
    }
    return st;
}

soa_status soa_check_state(const soa_model *m, const double *q, const double *qd)
{
    soa_status st = soa_check_configuration(m, q);
    if (st.kind != SOA_OK) return st;
    const int i = soa_first_nonfinite(qd, m->nv);
    if (i >= 0) {
        st.kind = SOA_BAD_QD;
        st.index = i;
    }
    return st;
}

/* soa_check_state, then {BAD_TAU, i} for a non-finite tau(i): the inputs of a tree kernel. */
soa_status soa_check_inputs(const soa_model *m, const double *q, const double *qd, const double *tau)
{
    soa_status st = soa_check_state(m, q, qd);
    if (st.kind != SOA_OK) return st;
    const int i = soa_first_nonfinite(tau, m->nv);
    if (i >= 0) {
        st.kind = SOA_BAD_TAU;
        st.index = i;
    }
    return st;
}

/* {BAD_RESULT, i} for the first row i of the rows x cols result x with a non-finite entry: finite
 * inputs can still overflow (velocities of 1e200, a joint map of 1e300). */
soa_status soa_check_result(const double *x, int rows, int cols)
{
    soa_status st = {SOA_OK, 0};
    const int i = soa_first_nonfinite(x, rows * cols);
    if (i >= 0) {
        st.kind = SOA_BAD_RESULT;
        st.index = i / cols;
    }
    return st;
}

/* SE(3) exponential of the body-frame twist (w, v): rotation R and translation t. */
static void twist_exp(const double *w, const double *v, double *R, double *t)
{
    const double th = sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]);
    if (th < 1e-12) {
        set_identity3(R);
        for (int i = 0; i < 3; i++) t[i] = v[i];
        return;
    }
    const double ax[3] = {w[0] / th, w[1] / th, w[2] / th};
    axis_angle_to_matrix(ax, th, R);
    /* t = (I th + (1 - cos th) a~ + (th - sin th) a~^2) v / th,  a~ the unit-axis skew */
    const double c1 = (1.0 - cos(th)) / th, c2 = (th - sin(th)) / th;
    double axv[3], axaxv[3];
    cross3(ax, v, axv);
    cross3(ax, axv, axaxv);
    for (int i = 0; i < 3; i++) t[i] = v[i] + c1 * axv[i] + c2 * axaxv[i];
}

/* Rotation Rj and translation tj of body k's frame in its joint frame at configuration theta. */
void soa_joint_transform(const soa_model *m, int k, const double *q, double *Rj, double *tj)
{
    const double *axis = m->axis + 3 * k, *basis = m->basis + 9 * k, *th = q + m->q0[k];
    set_identity3(Rj);
    tj[0] = tj[1] = tj[2] = 0.0;
    switch (m->jtype[k]) {
    case SOA_REVOLUTE:
        axis_angle_to_matrix(axis, th[0], Rj);
        break;
    case SOA_PRISMATIC:
        for (int i = 0; i < 3; i++) tj[i] = axis[i] * th[0];
        break;
    case SOA_SPHERICAL:
        quat_to_matrix(th[0], th[1], th[2], th[3], Rj);
        break;
    case SOA_FREE:
        quat_to_matrix(th[0], th[1], th[2], th[3], Rj);
        for (int i = 0; i < 3; i++) tj[i] = th[4 + i];
        break;
    case SOA_PLANAR: {
        const double n[3] = {basis[2], basis[5], basis[8]};
        axis_angle_to_matrix(n, th[0], Rj);
        for (int i = 0; i < 3; i++) tj[i] = basis[3 * i] * th[1] + basis[3 * i + 1] * th[2];
        break;
    }
    case SOA_GENERAL: {
        double w[3] = {0, 0, 0}, v[3] = {0, 0, 0};
        for (int dd = 0; dd < m->nvj[k]; dd++) {
            const double *s = m->S + 6 * (m->v0[k] + dd);
            for (int i = 0; i < 3; i++) {
                w[i] += s[i] * th[dd];
                v[i] += s[3 + i] * th[dd];
            }
        }
        twist_exp(w, v, Rj, tj);
        break;
    }
    default:
        break;
    }
}

/* theta-dot = f(theta) beta for joint k (quaternion kinematics, seed 003 App. B):
 * q-dot = 1/2 q (x) (0, w) with w in the body frame; a free joint's position moves with R v. */
static void joint_rate(const soa_model *m, int k, const double *q, const double *beta,
                       double *qdot)
{
    const int q0 = m->q0[k], v0 = m->v0[k], t = m->jtype[k];
    if (t == SOA_SPHERICAL || t == SOA_FREE) {
        const double w = q[q0], x = q[q0 + 1], y = q[q0 + 2], z = q[q0 + 3];
        const double a = beta[v0], b = beta[v0 + 1], c = beta[v0 + 2];
        qdot[q0] = 0.5 * (-x * a - y * b - z * c);
        qdot[q0 + 1] = 0.5 * (w * a + y * c - z * b);
        qdot[q0 + 2] = 0.5 * (w * b + z * a - x * c);
        qdot[q0 + 3] = 0.5 * (w * c + x * b - y * a);
        if (t == SOA_FREE) {
            double R[9];
            quat_to_matrix(w, x, y, z, R);
            for (int i = 0; i < 3; i++)
                qdot[q0 + 4 + i] = R[3 * i] * beta[v0 + 3] + R[3 * i + 1] * beta[v0 + 4]
                                 + R[3 * i + 2] * beta[v0 + 5];
        }
    } else if (t == SOA_PLANAR) {
        const double c = cos(q[q0]), s = sin(q[q0]);
        qdot[q0] = beta[v0];
        qdot[q0 + 1] = c * beta[v0 + 1] - s * beta[v0 + 2];
        qdot[q0 + 2] = s * beta[v0 + 1] + c * beta[v0 + 2];
    } else {
        for (int i = 0; i < m->nqj[k]; i++) qdot[q0 + i] = beta[v0 + i];
    }
}

/* eta-dot = the modal velocities: a flexible body's modal coordinates follow its joint's in q and
 * qd (flexible.c); out[eta] = in[eta] + x[eta dofs]. */
static void modal_coordinates(const soa_model *m, int k, const double *in, const double *x,
                              double *out)
{
    const int q0 = m->q0[k] + m->nqj[k], v0 = m->v0[k] + m->nvj[k];
    for (int i = 0; i < m->nmod[k]; i++) out[q0 + i] = (in ? in[q0 + i] : 0.0) + x[v0 + i];
}

void soa_configuration_rate(const soa_model *m, const double *q, const double *qd, double *qdot)
{
    if (m->qlinear) {                                 /* every joint's theta-dot = beta */
        for (int i = 0; i < m->nv; i++) qdot[i] = qd[i];
        return;
    }
    for (int k = 0; k < m->nb; k++) {
        joint_rate(m, k, q, qd, qdot);
        if (m->nm) modal_coordinates(m, k, NULL, qd, qdot);
    }
}

/* out[0:4] = q (x) exp(w / 2): a quaternion turned by the body-frame rotation vector w. */
static void quat_multiply_exp(const double *q, const double *w, double *out)
{
    const double th = sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]);
    double dw, dx, dy, dz;
    if (th < 1e-12) {
        dw = 1.0; dx = 0.5 * w[0]; dy = 0.5 * w[1]; dz = 0.5 * w[2];
    } else {
        const double s = sin(0.5 * th) / th;
        dw = cos(0.5 * th); dx = s * w[0]; dy = s * w[1]; dz = s * w[2];
    }
    const double a = q[0], b = q[1], c = q[2], d = q[3];
    const double r0 = a * dw - b * dx - c * dy - d * dz;
    const double r1 = a * dx + b * dw + c * dz - d * dy;
    const double r2 = a * dy - b * dz + c * dw + d * dx;
    const double r3 = a * dz + b * dy - c * dx + d * dw;
    const double n = sqrt(r0 * r0 + r1 * r1 + r2 * r2 + r3 * r3);
    out[0] = r0 / n; out[1] = r1 / n; out[2] = r2 / n; out[3] = r3 / n;
}

/* out = theta (+) delta for joint k: theta moved along the constant body-frame velocity delta for
 * unit time (the exponential map).  out may alias q only for joints other than free and planar. */
static void joint_integrate(const soa_model *m, int k, const double *q, const double *dv,
                            double *out)
{
    const int q0 = m->q0[k], v0 = m->v0[k], t = m->jtype[k];
    if (t == SOA_SPHERICAL) {
        quat_multiply_exp(q + q0, dv + v0, out + q0);
    } else if (t == SOA_FREE) {
        double R[9], dR[9], dt[3];
        quat_to_matrix(q[q0], q[q0 + 1], q[q0 + 2], q[q0 + 3], R);
        twist_exp(dv + v0, dv + v0 + 3, dR, dt);
        for (int i = 0; i < 3; i++)
            out[q0 + 4 + i] = q[q0 + 4 + i] + R[3 * i] * dt[0] + R[3 * i + 1] * dt[1]
                            + R[3 * i + 2] * dt[2];
        quat_multiply_exp(q + q0, dv + v0, out + q0);
    } else if (t == SOA_PLANAR) {
        const double w[3] = {0.0, 0.0, dv[v0]}, v[3] = {dv[v0 + 1], dv[v0 + 2], 0.0};
        double dR[9], dt[3];
        twist_exp(w, v, dR, dt);
        const double c = cos(q[q0]), s = sin(q[q0]);
        const double x = q[q0 + 1] + c * dt[0] - s * dt[1];
        const double y = q[q0 + 2] + s * dt[0] + c * dt[1];
        out[q0] = q[q0] + dv[v0];
        out[q0 + 1] = x;
        out[q0 + 2] = y;
    } else {
        for (int i = 0; i < m->nqj[k]; i++) out[q0 + i] = q[q0 + i] + dv[v0 + i];
    }
}

void soa_integrate_configuration(const soa_model *m, const double *q, const double *dv,
                                 double *out)
{
    if (m->qlinear) {                                 /* every joint's theta (+) dv = theta + dv */
        for (int i = 0; i < m->nq; i++) out[i] = q[i] + dv[i];
        return;
    }
    for (int k = 0; k < m->nb; k++) {
        joint_integrate(m, k, q, dv, out);
        if (m->nm) modal_coordinates(m, k, q, dv, out);
    }
}

/* Every joint quaternion scaled to unit length (its rotation is invariant to the scale). */
void soa_normalize_quaternions(const soa_model *m, double *q)
{
    for (int t = 0; t < m->nquat; t++) {             /* the spherical and free joints */
        double *e = q + m->q0[m->quatb[t]];
        const double n = sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2] + e[3] * e[3]);
        for (int i = 0; i < 4; i++) e[i] /= n;
    }
}
