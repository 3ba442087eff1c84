/* Fixed-step integrators of (theta, beta) with theta-dot = f(theta) beta and beta-dot from an
 * acceleration soa_accel (the tree's innovations forward dynamics by default, soa_tree_accel):
 * classical RK4 and semi-implicit (symplectic) Euler; and the linearly implicit methods of the
 * tree, implicit in the joints' dissipation, stops and contact, each stage one articulated sweep
 * with a diagonal added to D(k) (seed 001 eqs. 34-36; docs/joints.md): implicit Euler
 * (soa_implicit) and the Rosenbrock W-methods ROS2 and ROS34PW2, two tableaus of one stage code,
 * fixed or error-controlled.  Quaternions are renormalized after every (sub)step and before each
 * stage evaluation (a quaternion's rotation is invariant to its scale, so the projection costs no
 * accuracy).  Every buffer is in soa_data. */
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

/* ------------------------------------------------------------------ linearly implicit stages
 * The stage of every linearly implicit method (docs/joints.md): at the stage state (q, qd) and
 * for g = gamma h, with the joint forces linearized as T(theta + dtheta, beta + dbeta) ~ T -
 * B dbeta - K dtheta (B, K diagonal: soa_implicit_terms) and the contact forces by their pairs'
 * 3 x 3 B_c, K_c (soa_contact_implicit),
 *
 *     (M + diag(a + g B + g^2 K) + J* C_c J) x = T - C - g_grav + J* F_c - g K r + (g B + g^2 K) s
 *                                                 + J* (-g K_c J r + C_c J s),   C_c = g B_c + g^2 K_c
 *
 * (r = qd, s = 0 where NULL; ahead > 0: a Rosenbrock stage's Jacobian, the frictions' B their
 * secants and the stops the step reaches, dissipation.c, contact.c):
 * forward dynamics with the diagonal in D(k) of the Riccati sweep
 * (seed 001 eqs. 34-36), its filter and smoother (eqs. 49-54, 60-65), ONE sweep, then the
 * contact's Woodbury correction through Lambda^-1 (contact.c's half, then the smoother:
 * articulated.c's soa_contact_implicit) and the mimic couplings (mimic.c).
 * With flexible bodies (seed 000 sec. 4) the modes' strain and damping forces -K eta - D eta-dot
 * join B and K by their diagonals (soa_flex_implicit_terms) and the sweep is flexible.c's
 * (soa_flex_fd_diag, D(k) of the modal and joint steps with the diagonal).
 * use: the use_fext bits of the sweep.  *stiff <- 1 when a stiffness K acts at the stage (an
 * active stop, a touching contact point, the modes' strain), else 0.  Returns -1, or the body
 * whose D is singular. */
static int implicit_stage(const soa_model *m, soa_data *d, const double *q, const double *qd,
                          const double *tau, int use, double g, const double *r, const double *s,
                          double ahead, double *x, int *stiff)
{
    const double *T = soa_joint_forces(m, d, q, qd, tau);
    *stiff = soa_implicit_terms(m, d, q, qd, T, g, r, s, ahead);
    if (m->nm) {                      /* flexible bodies (no contact, no mimics): + the modes' terms */
        soa_flex_implicit_terms(m, d, qd, g, r, s);
        *stiff = 1;
        const soa_status sf = soa_flex_fd_diag(m, d, q, qd, d->jrhs, use & SOA_USE_FEXT, d->jdiag, x);
        return sf.kind == SOA_OK ? -1 : sf.index;
    }
    const int k = soa_tree_acceleration_diag(m, d, q, qd, d->jrhs, use, d->jdiag, x);
    if (k < 0 && m->nsph && soa_contact_implicit(m, d, g, r, s, ahead, x))    /* articulated.c */
        *stiff = 1;
    if (k < 0) soa_mimic_couple(m, d, x);     /* mimic.c: the coupled solve of the same matrix */
    return k;
}

/* The sweep's use_fext bits of a stage: the held f_ext, the contact forces (SOA_CONTACT_HELD:
 * those the caller's data holds at this state, for the first stage at the step's start only). */
static int stage_use(const soa_model *m, int use_fext, int first)
{
    return ((use_fext & ~SOA_CONTACT_HELD) ? SOA_USE_FEXT : 0) | (m->nsph ? SOA_USE_CONTACT : 0)
           | (first && m->nsph ? use_fext & SOA_CONTACT_HELD : 0);
}

/* The checks of a linearly implicit method: inputs and step. */
static soa_status check_implicit(const soa_model *m, const double *q, const double *qd,
                                 const double *tau, double h, int nsub)
{
    soa_status st = soa_check_inputs(m, q, qd, tau);
    if (st.kind == SOA_OK) st = check_step(m, q, qd, 0.0, h, nsub);
    return st;
}

/* DIVERGED when the state or qdd is not finite after a step. */
static soa_status check_finite(const soa_model *m, soa_data *d, const double *q, const double *qd,
                               const double *qdd)
{
    soa_status st = {SOA_OK, 0};
    if (soa_first_nonfinite(q, m->nq) >= 0 || soa_first_nonfinite(qd, m->nv) >= 0
        || soa_first_nonfinite(qdd, m->nv) >= 0) {
        st.kind = SOA_DIVERGED;
        return soa_diverged(m, d, q, qd, st);
    }
    return st;
}

/* nsub linearly implicit Euler steps (first order): one stage with g = h, r = beta, s = 0,
 *     (M + diag(a + h B + h^2 K)) x = T - h K beta - C - g,  beta <- beta + h x,
 *     theta <- theta (+) h beta
 * (semi-implicit Euler where B = K = 0; docs/joints.md). */
soa_status soa_implicit(const soa_model *m, soa_data *d, double *q, double *qd, const double *tau,
                        int use_fext, double h, int nsub, double *qdd)
{
    soa_status st = check_implicit(m, q, qd, tau, h, nsub);
    if (st.kind != SOA_OK) return st;
    for (int step = 0; step < nsub; step++) {
        int stiff;
        const int k = implicit_stage(m, d, q, qd, tau, stage_use(m, use_fext, step == 0), h, NULL,
                                     NULL, 0.0, qdd, &stiff);
        if (k >= 0) {
            st.kind = SOA_SINGULAR;
            st.index = k;
            return step > 0 ? soa_diverged(m, d, q, qd, st) : st;   /* D was fine at the start */
        }
        for (int i = 0; i < m->nv; i++) {
            qd[i] += h * qdd[i];
            d->dv[i] = h * qd[i];
        }
        soa_integrate_configuration(m, q, d->dv, d->qs);
        for (int i = 0; i < m->nq; i++) q[i] = d->qs[i];
        soa_normalize_quaternions(m, q);
    }
    return check_finite(m, d, q, qd, qdd);
}

/* ------------------------------------------------------------------ Rosenbrock
 * A Rosenbrock (W-) method in the transformed form of Hairer & Wanner (vol. II, sec. IV.7,
 * eq. 7.25) on y = (theta, beta), F = (f(theta) beta, beta-dot):
 *
 *     (I / (h gamma) - A_i) U_i = F(y0 + sum_j a_ij U_j) + sum_j (c_ij / h) U_j,
 *     y1 = y0 + sum_i m_i U_i,   error estimate sum_i e_i U_i,
 *
 * A_i the Jacobian stage i treats implicitly, at its state: the joints' and contacts' -M^-1 K,
 * -M^-1 B, the frictions' B their secants, a stop's k, b from where the step would reach it, and
 * theta-dot's f(theta), times sigma_i: 1 for ROS2 and ROS34PW2; for RK4W 1 where a stiffness K
 * acts at the stage and 0 where none does (then A_i = [0 0; 0 -M^-1 B] leaves the stage matrix
 * unchanged, K being 0, and a step on a model with no stiff term engaged, B = 0 too, is the
 * explicit Runge-Kutta method of the tableau's alpha and b: RK4 itself) (a W-method: A may be
 * any; the rigid-body terms dC/dbeta, dg/dtheta, dM/dtheta are left out; the secant keeps a
 * saturated friction implicit, where its tangent vanishes and a step stalls across the velocity's
 * sign change; the look-ahead makes every stage of a step that enters a stiff stop treat it
 * implicitly, not the later ones only).
 * Multiplied by M, the beta row is the implicit stage above with g = gamma h,
 * r_i = beta_i + sum_j (c_ij / h) V_j and s_i = -sum_j (c_ij / h) Ub_j (the products M Ub_j cancel:
 * docs/joints.md), and
 *
 *     Ub_i = g (x_i - s_i),   V_i = g (r_i + sigma_i Ub_i),
 *     U_theta,i = g f(theta_i) (beta_i + sigma_i Ub_i) + g sum_j (c_ij / h) U_theta,j
 *
 * (V: U_theta's tangent vector, which the linearized stiffnesses act on).  One sweep per stage.
 *
 * ROS2: a two-stage Rosenbrock W-method of order 2 for ANY A, from the one-parameter family of
 * Verwer, Spee, Blom & Hundsdorfer (1999, SIAM J. Sci. Comput. 20(4):1456-1480; Hairer & Wanner
 * IV.7).  In the form (I - gamma h A) k_i = h F(y0 + sum alpha_ij k_j) + h A sum gamma_ij k_j its
 * order conditions are b1 + b2 = 1, b2 alpha21 = 1/2, b2 (alpha21 + gamma21) = 1/2 - gamma, and
 * every member has the stability function R(z) = (1 + (1 - 2 gamma) z + (gamma^2 - 2 gamma + 1/2)
 * z^2) / (1 - gamma z)^2: L-stable (R(inf) = 0) for gamma = 1 +- 1/sqrt(2).  We take gamma =
 * 1 - 1/sqrt(2) (the smaller error constant: 4x smaller on ur10 than 1 + 1/sqrt(2)) and the second
 * stage at the midpoint, alpha21 = 1/2, b = (0, 1), gamma21 = -gamma; embedded first order
 * y0 + k1.  (Verwer's ROS2 itself, alpha21 = 1, b = (1/2, 1/2), puts the second stage of a stiff
 * component at -2.4 y0, beyond a joint stop's surface, and bounced a 1e6 N m/rad stop back at
 * 440 rad/s where the midpoint gives 3.6, the true 0.3; error control resolves it.)  Transformed
 * (Gamma^-1): a21 = 1 / (2 gamma), c21 = -1 / gamma, m = (1, 1) / gamma, e = (0, 1) / gamma. */
#define ROS2_GAMMA 0.29289321881345247560    /* 1 - 1/sqrt(2) */
typedef struct {
    int stages, est_order;          /* est_order: the embedded estimate's order p^ (step-size */
                                    /* exponent 1 / (p^ + 1), Hairer & Wanner IV.8) */
    int sigma_stiff;                /* sigma_i = 1 only where a stiffness acts (else always 1) */
    double gamma;
    double a[SOA_ROS_MAX_STAGES][SOA_ROS_MAX_STAGES], c[SOA_ROS_MAX_STAGES][SOA_ROS_MAX_STAGES];
    double m[SOA_ROS_MAX_STAGES], e[SOA_ROS_MAX_STAGES];
} rosenbrock_tableau;
static const rosenbrock_tableau ROS2 = {
    2, 1, 0, ROS2_GAMMA,
    {{0.0}, {0.5 / ROS2_GAMMA}},
    {{0.0}, {-1.0 / ROS2_GAMMA}},
    {1.0 / ROS2_GAMMA, 1.0 / ROS2_GAMMA},
    {0.0, 1.0 / ROS2_GAMMA}};

/* ROS34PW2: the four-stage Rosenbrock W-method of Rang & Angermann (BIT 45 (2005) 761-787,
 * table "ROS34PW2"; PETSc's TSROSWRA34PW2): order 3 for ANY A, an embedded order-2 estimate,
 * stiffly accurate (b_i = alpha_4i + gamma_4i) and L-stable, gamma = 0.43586652150845900 (the root
 * of gamma^3 - 3 gamma^2 + 3/2 gamma - 1/6 in (0, 1)).  In the form above, with alpha_i =
 * sum_j alpha_ij and gamma'_i = sum_{j <= i} gamma_ij (gamma_ii = gamma), its W-method order
 * conditions (Hairer & Wanner IV.7, the trees with f' and A vertices) are
 *     order 1: sum b_i = 1;   order 2: sum b_i alpha_i = 1/2, sum b_i gamma'_i = 0;
 *     order 3: sum b_i alpha_i^2 = 1/3, sum b_i alpha_ij alpha_j = 1/6,
 *              sum b_i alpha_ij gamma'_j = 0, sum b_i gamma_ij alpha_j = 0,
 *              sum b_i gamma_ij gamma'_j = 0
 * (the embedded b^ meets those of order <= 2), and its stability function is
 *     R(z) = (1 + (1 - 4 gamma) z + (1/2 - 4 gamma + 6 gamma^2) z^2
 *             + (1/6 - 2 gamma + 6 gamma^2 - 4 gamma^3) z^3) / (1 - gamma z)^4,
 * whose z^4 term vanishes: R(-inf) = 0.  Its alpha, Gamma, b, b^ (the paper's, 17 digits as in
 * PETSc's table) give
 * the transformed a = alpha Gamma^-1, c = diag(1/gamma) - Gamma^-1, m = b Gamma^-1 (= a_4j, then 1:
 * stiffly accurate), e = (b - b^) Gamma^-1 below (docs/joints.md derives them; the stage
 * abscissae sum_j alpha_ij are 0, 2 gamma, 0.732, 1: no stage beyond the step). */
#define ROS34PW2_GAMMA 0.43586652150845900
static const rosenbrock_tableau ROS34PW2 = {
    4, 2, 0, ROS34PW2_GAMMA,
    {{0.0},
     {2.0},
     {1.4192173174557652, -0.25923221167296978},
     {4.1847604823191613, -0.28519201735549599, 2.2942803602790423}},
    {{0.0},
     {-4.5885607205580836},
     {-4.1847604823191613, 0.28519201735549599},
     {-6.3681792001283597, -6.7956209444668367, 2.8700986043310555}},
    {4.1847604823191613, -0.28519201735549599, 2.2942803602790423, 1.0},
    {0.27774994764796812, -1.4032398951759995, 1.7726301276675509, 0.5}};

/* RK4W: a fourth-order Runge-Kutta method made an L-stable Rosenbrock W-method (derived for this
 * engine, docs/joints.md "RK4W"; a linearly implicit method that is an explicit Runge-Kutta
 * method where A = 0 is the idea of Strehmel & Weiner's adaptive Runge-Kutta methods, Numer.
 * Math. 40 (1982) 245-262; the W-method's order conditions are Steihaug & Wolfbrandt's, Math.
 * Comp. 33 (1979) 521-534, listed above).  Its alpha and b are the member c2 = u, c3 = v of the
 * two-parameter family of four-stage fourth-order explicit Runge-Kutta methods (Butcher,
 * Numerical Methods for ODEs, sec. 235), so that with A = 0 (no stiffness or damping engaged,
 * sigma_i = 0) a step IS that RK4, order 4; and
 *   - stiffly accurate: b_4 = gamma, gamma_4j = b_j - alpha_4j (y1 is the last stage's solution,
 *     which holds a stiff stop's or contact's damping where a step lands in it: ROS34PW2 is too);
 *     then R(-inf) = 1 - b^T beta^-1 1 = 0 (beta = alpha + Gamma);
 *   - W-order 3 for ANY A: the four conditions of the list above with gamma not met by RK4
 *     already (sum b_i gamma'_i = 0, sum b_i alpha_ij gamma'_j = 0, sum b_i gamma_ij alpha_j = 0,
 *     sum b_i gamma_ij gamma'_j = 0).
 * Five equations in (u, v, gamma_21, gamma_31, gamma_32) for a chosen gamma; its stability
 * function is ROS34PW2's R(z) above with this gamma, A-stable for gamma in about [0.224, 0.573]
 * (max |R(iy)| = 1) and L-stable.  Real solutions exist for gamma in about (0.39, 0.436); gamma =
 * 0.42 gives u = 0.82541543480477112856, v = 0.64482029598308668076, gamma_21 =
 * -0.73720899509929073378, gamma_31 = -0.5277301545207767054, gamma_32 = -0.17946629861296051569
 * (stage abscissae 0, u, v, 1), b = (0.196, -0.927, 1.311, 0.42): of the range it lands the 1e6
 * N m/rad stop's rebound of test_real_joints within 1.1 % of DOP853 at every phase of the impact
 * in the step, and has the smallest errors on the ball and ur10 of the values tried (0.395,
 * 0.4, 0.41, 0.42, 0.43; benchmarks/results/integrators.txt).  The embedded b^ = b + t n (n the
 * null vector of sum b^ = 1, sum b^ alpha_i = 1/2, sum b^ gamma'_i = 0: order 2 for any A) has
 * R^(-inf) = -1/2 (ROS34PW2's estimate: -0.478; b itself is the member with 0).  Transformed as
 * above, from 40-digit arithmetic (tests/test_rk4w.py re-derives and checks them): */
#define RK4W_GAMMA 0.42
static const rosenbrock_tableau RK4W = {
    4, 2, 1, RK4W_GAMMA,
    {{0.0},
     {1.9652748447732645918},
     {1.7301905045296927407, 0.25806240423214059511},
     {3.7366495425798637553, -0.59542771730903642824, 2.6402409482136198061}},
    {{0.0},
     {-4.1791893146218295566},
     {-4.7774381081062530031, -1.0173826451981888644},
     {-2.0976924435965714099, -0.66365159308339904312, 1.1472475548785371776}},
    {3.7366495425798637553, -0.59542771730903642824, 2.6402409482136198061, 1.0},
    {0.24725594382385413953, -1.1689156665627348603, 1.6526598959464841317,
     0.52934495301240247002}};

/* The tableau of a Rosenbrock method: SOA_ROS2, SOA_ROS34PW2 or SOA_RK4W. */
static const rosenbrock_tableau *tableau_of(int method)
{
    return method == SOA_ROS2 ? &ROS2 : method == SOA_ROS34PW2 ? &ROS34PW2 : &RK4W;
}

/* The transformed tableau (gamma, a, c, m, e; Hairer & Wanner IV.7 eq. 7.25, as above) of the
 * Rosenbrock method `method`, a and c row-major SOA_ROS_MAX_STAGES^2 (0 on and above the
 * diagonal, m and e 0 beyond the stages): its stage count, 0 (outputs untouched) for a method
 * that is not a Rosenbrock method. */
int soa_rosenbrock_tableau(int method, double *gamma, double *a, double *c, double *m, double *e)
{
    if (!soa_is_rosenbrock(method)) return 0;
    const rosenbrock_tableau *tb = tableau_of(method);
    *gamma = tb->gamma;
    for (int i = 0; i < SOA_ROS_MAX_STAGES; i++) {
        for (int j = 0; j < SOA_ROS_MAX_STAGES; j++) {
            a[SOA_ROS_MAX_STAGES * i + j] = tb->a[i][j];
            c[SOA_ROS_MAX_STAGES * i + j] = tb->c[i][j];
        }
        m[i] = tb->m[i];
        e[i] = tb->e[i];
    }
    return tb->stages;
}

/* One step of size h of the tableau from (q, qd) in place; *err <- the RMS of the error estimate
 * scaled by atol + rtol max(|y0|, |y1|) when err (else rtol, atol unused); qdd <- the step's mean
 * acceleration (beta1 - beta0) / h.  first: the contact forces the data holds are at (q, qd)
 * (SOA_CONTACT_HELD in use_fext).  -1, or the body whose D is singular at a stage (the state then
 * unspecified). */
static int rosenbrock_step(const soa_model *m, soa_data *d, const rosenbrock_tableau *tb,
                           const double *tau, int use_fext, int first, double *q, double *qd,
                           double h, double rtol, double atol, double *err, double *qdd)
{
    const int nq = m->nq, nv = m->nv, ns = tb->stages, nu = nq + 2 * nv;
    const double g = tb->gamma * h;
    double *r = d->ros_w, *s = d->ros_w + nv, *w = d->ros_w + 2 * nv;
    for (int i = 0; i < ns; i++) {
        double *Uq = d->ros_U + nu * i, *V = Uq + nq, *Ub = V + nv;
        double *qi = d->qs, *vi = d->vs;                  /* Y_i = y0 + sum a_ij U_j */
        for (int k = 0; k < nq; k++) qi[k] = q[k];
        for (int k = 0; k < nv; k++) vi[k] = qd[k];
        for (int j = 0; j < i; j++) {
            const double *Uj = d->ros_U + nu * j, a = tb->a[i][j];
            for (int k = 0; k < nq; k++) qi[k] += a * Uj[k];
            for (int k = 0; k < nv; k++) vi[k] += a * Uj[nq + nv + k];
        }
        for (int k = 0; k < nv; k++) {
            r[k] = vi[k];
            s[k] = 0.0;
        }
        for (int j = 0; j < i; j++) {
            const double *Uj = d->ros_U + nu * j, c = tb->c[i][j] / h;
            for (int k = 0; k < nv; k++) {
                r[k] += c * Uj[nq + k];
                s[k] -= c * Uj[nq + nv + k];
            }
        }
        if (i > 0) soa_normalize_quaternions(m, qi);
        int sigma;
        const int bad = implicit_stage(m, d, qi, vi, tau, stage_use(m, use_fext, first && i == 0),
                                       g, i > 0 ? r : NULL, i > 0 ? s : NULL, h, Ub, &sigma);
        if (bad >= 0) return bad;
        if (!tb->sigma_stiff) sigma = 1;
        for (int k = 0; k < nv; k++) {
            Ub[k] = g * (Ub[k] - s[k]);
            V[k] = g * (r[k] + sigma * Ub[k]);
            w[k] = vi[k] + sigma * Ub[k];
        }
        soa_configuration_rate(m, qi, w, Uq);
        for (int k = 0; k < nq; k++) Uq[k] *= g;
        for (int j = 0; j < i; j++) {
            const double *Uj = d->ros_U + nu * j, c = g * tb->c[i][j] / h;
            for (int k = 0; k < nq; k++) Uq[k] += c * Uj[k];
        }
    }
    double sum = 0.0;
    for (int k = 0; k < nq + nv; k++) {                 /* y1 = y0 + sum m_i U_i; the estimate */
        const int o = k < nq ? k : nv + k;              /* (U_theta, then U_beta: skip V) */
        double dy = 0.0, e = 0.0;
        for (int i = 0; i < ns; i++) {
            dy += tb->m[i] * d->ros_U[nu * i + o];
            e += tb->e[i] * d->ros_U[nu * i + o];
        }
        double *y = k < nq ? q + k : qd + k - nq;
        if (k >= nq) qdd[k - nq] = dy / h;
        if (err) {
            const double tol = atol + rtol * fmax(fabs(*y), fabs(*y + dy));
            sum += (e / tol) * (e / tol);
        }
        *y += dy;
    }
    soa_normalize_quaternions(m, q);
    if (err) *err = sqrt(sum / (nq + nv));
    return -1;
}

/* nsub steps of the tableau of size h, (q, qd) in place; qdd <- the last one's mean
 * acceleration. */
static soa_status rosenbrock_fixed(const soa_model *m, soa_data *d, const rosenbrock_tableau *tb,
                                   double *q, double *qd, const double *tau, int use_fext,
                                   double h, int nsub, double *qdd)
{
    soa_status st = check_implicit(m, q, qd, tau, h, nsub);
    if (st.kind != SOA_OK) return st;
    for (int step = 0; step < nsub; step++) {
        const int k = rosenbrock_step(m, d, tb, tau, use_fext, step == 0, q, qd, h, 0.0, 0.0,
                                      NULL, qdd);
        if (k >= 0) {               /* D singular at a stage: named by that stage's state */
            st.kind = SOA_SINGULAR;
            st.index = k;
            return soa_diverged(m, d, d->qs, d->vs, st);
        }
    }
    return check_finite(m, d, q, qd, qdd);
}

/* The tableau from 0 to h in error-controlled sub-steps (q, qd in place): a sub-step is accepted
 * when its scaled error estimate err <= 1, and the next is h_sub min(5, max(0.2, 0.9
 * err^(-1/(p^+1)))) (p^ the estimate's order: Hairer & Wanner vol. II sec. IV.8), no longer than
 * max_step; a failed sub-step (singular D, non-finite state) is retried at a quarter.  The first
 * sub-step is d->dop_h[0] (0: max_step), left holding the proposal for the next call.  qdd <- the
 * last sub-step's mean acceleration. */
static soa_status rosenbrock_adaptive(const soa_model *m, soa_data *d,
                                      const rosenbrock_tableau *tb, double *q, double *qd,
                                      const double *tau, int use_fext, double h, double rtol,
                                      double atol, double max_step, double *qdd)
{
    soa_status st = check_implicit(m, q, qd, tau, h, 1);
    if (st.kind == SOA_OK && !(rtol > 0.0 && atol > 0.0 && max_step > 0.0 && rtol < 1e300
                               && atol < 1e300)) {
        st.kind = SOA_BAD_ARG;
        st.index = 0;
    }
    if (st.kind != SOA_OK) return st;
    const int nq = m->nq, nv = m->nv;
    const double expo = -1.0 / (tb->est_order + 1);
    double t = 0.0, hs = d->dop_h[0] > 0.0 && d->dop_h[0] < 1e300 ? d->dop_h[0] : max_step;
    int first = 1;
    for (int tries = 0; t < h; tries++) {
        if (tries >= SOA_DOP853_MAX_STEPS) {
            st.kind = SOA_TOO_MANY_STEPS;
            st.index = SOA_DOP853_MAX_STEPS;
            return st;
        }
        hs = fmin(hs, max_step);
        const int last = hs >= (h - t) * (1.0 - 1e-12);
        const double hk = last ? h - t : hs;
        for (int k = 0; k < nq; k++) d->ros_y0[k] = q[k];
        for (int k = 0; k < nv; k++) d->ros_y0[nq + k] = qd[k];
        double err = HUGE_VAL;
        const int bad = rosenbrock_step(m, d, tb, tau, use_fext, first, q, qd, hk, rtol, atol,
                                        &err, qdd);
        first = 0;              /* (the contact forces held at the start are overwritten now) */
        const int ok = bad < 0 && isfinite(err) && soa_first_nonfinite(q, nq) < 0
                       && soa_first_nonfinite(qd, nv) < 0;
        if (ok && err <= 1.0) {                                  /* accepted */
            t = last ? h : t + hk;
            const double fac = err > 0.0 ? fmin(5.0, fmax(0.2, 0.9 * pow(err, expo))) : 5.0;
            if (!last || hk >= hs) hs = hk * fac;
            continue;
        }
        for (int k = 0; k < nq; k++) q[k] = d->ros_y0[k];       /* rejected: again, shorter */
        for (int k = 0; k < nv; k++) qd[k] = d->ros_y0[nq + k];
        hs = hk * (ok ? fmax(0.2, 0.9 * pow(err, expo)) : 0.25);
        if (!(hs > 1e-14 * (1.0 + h))) {                         /* no step resolves it */
            st.kind = SOA_DIVERGED;
            return soa_diverged(m, d, q, qd, st);
        }
    }
    d->dop_h[0] = hs;
    return check_finite(m, d, q, qd, qdd);
}

soa_status soa_rosenbrock_method(int method, const soa_model *m, soa_data *d, double *q,
                                 double *qd, const double *tau, int use_fext, double h, int nsub,
                                 double *qdd)
{
    return rosenbrock_fixed(m, d, tableau_of(method), q, qd, tau, use_fext, h, nsub, qdd);
}

soa_status soa_rosenbrock_method_adaptive(int method, const soa_model *m, soa_data *d, double *q,
                                          double *qd, const double *tau, int use_fext, double h,
                                          double rtol, double atol, double max_step, double *qdd)
{
    return rosenbrock_adaptive(m, d, tableau_of(method), q, qd, tau, use_fext, h, rtol, atol,
                               max_step, qdd);
}

/* The named methods of soa.h: fixed steps and error-controlled sub-steps of one tableau each. */
#define NAMED_ROSENBROCK(fixed, adaptive, method)                                                \
    soa_status fixed(const soa_model *m, soa_data *d, double *q, double *qd, const double *tau,  \
                     int use_fext, double h, int nsub, double *qdd)                               \
    {                                                                                            \
        return soa_rosenbrock_method(method, m, d, q, qd, tau, use_fext, h, nsub, qdd);          \
    }                                                                                            \
    soa_status adaptive(const soa_model *m, soa_data *d, double *q, double *qd, const double *tau, \
                        int use_fext, double h, double rtol, double atol, double max_step,         \
                        double *qdd)                                                             \
    {                                                                                            \
        return soa_rosenbrock_method_adaptive(method, m, d, q, qd, tau, use_fext, h, rtol, atol, \
                                              max_step, qdd);                                    \
    }
NAMED_ROSENBROCK(soa_rosenbrock, soa_rosenbrock_adaptive, SOA_ROS2)
NAMED_ROSENBROCK(soa_ros34pw2, soa_ros34pw2_adaptive, SOA_ROS34PW2)
NAMED_ROSENBROCK(soa_rk4w, soa_rk4w_adaptive, SOA_RK4W)

/* auto's choice (soa.h): RK4W for every model with stiff terms (joint dissipation, stops,
 * contact; where none is engaged its step is a fourth-order Runge-Kutta step, elsewhere it is
 * third order, stiffly accurate and L-stable, for about RK4's cost:
 * benchmarks/results/integrators.txt, docs/joints.md), RK4 for the others, for closure
 * constraints (the linearly implicit stage does not handle them) and for flexible bodies (their
 * modes are lightly damped oscillations RK4 resolves at the sub-step it is stable at,
 * soa_auto_max_step; `implicit`, `ros2`, `ros34pw2` and `rk4w` take them on request). */
int soa_auto_method(const soa_model *m)
{
    if (m->nm || m->nc) return SOA_RK4;
    return m->nsph || m->dissipative || m->stopped ? SOA_RK4W : SOA_RK4;
}

/* auto's longest RK4 sub-step for a flexible model at its initial theta: SOA_RK4_MODAL_REACH
 * (soa.h) / omega, omega the highest modal frequency of the tree (soa_flex_omega_max); HUGE_VAL for the
 * others (and where M is singular at theta: the step then reports that).  RK4 is stable for
 * |lambda h| <= 2.78 on the imaginary axis, but the modes' coupling to the joints' motion
 * (the Coriolis and centrifugal terms through the mass matrix, which grow with the speed) puts
 * the Jacobian's eigenvalues beyond omega: on bench_flexible's chain (omega = 3720 rad/s, 966
 * for a clamped link) they reach 4970 rad/s by t = 0.8 s, and RK4 diverges at omega h = 1.86
 * where omega h = 1.24 runs 2 s within 1e-7 rad of DOP853 (docs/flexible.md).  ROS34PW2 is no
 * way out: a W-method treats that coupling explicitly, and it diverged there at 1 ms. */
double soa_auto_max_step(const soa_model *m, soa_data *d, const double *q)
{
    double omega = 0.0;
    if (!m->nm || soa_auto_method(m) != SOA_RK4) return HUGE_VAL;
    const soa_status st = soa_flex_omega_max(m, d, q, &omega);
    return st.kind == SOA_OK && omega > 0.0 ? SOA_RK4_MODAL_REACH / omega : HUGE_VAL;
}
