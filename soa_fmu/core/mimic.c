/* Mimic joints (SPEC E20): the URDF coupling <mimic joint="j" multiplier="k" offset="c"> of a 1-dof
 * joint m, q_m = k q_j + c, enforced as a holonomic constraint row in joint space,
 *
 *   G beta = 0,   G = e_m* - k e_j*   (one row per mimicking dof; G theta = c when the configuration
 *                                      rate of a 1-dof joint is its beta),
 *
 * by the steps of seed 000 sec. 3 with the closure Jacobian A J replaced by G:
 *
 *   (A) beta-dot f = M^-1 (T - C)            the tree's forward dynamics (the caller's)    (3.7)
 *   (C) Y = M^-1 G*, Lambda^-1 = G Y         the innovations solve on G*'s columns from the
 *                                            same factors, O(N) per row (seed 001 eqs. 49-54)
 *   (D) (G Y) lambda = -G beta-dot f                                                      (3.11)
 *   (F) beta-dot = beta-dot f + Y lambda     the correction                              (3.12)
 *
 * G beta-dot = 0 exactly: every integrator here (Runge-Kutta, DOP853, the linearly implicit Euler
 * step) is linear in the stages, so G theta = c and G beta = 0 hold along a run from a consistent
 * start (soa_mimic_project) to round-off, with no stabilization gains.  A force on the mimic
 * joint acts on the driver through lambda: the driver feels tau_j + k tau_m (virtual work).
 * The tree's algorithms (RNEA, M, M^-1, their derivatives) stay those of the uncoupled tree. */
#include <math.h>

#include "soa.h"

/* Checks of soa_model_finish on the couplings, and the list mim_dof: a mimicking dof and its
 * driver are two distinct revolute / prismatic dofs, the driver mimics nothing, k and c finite.
 * {SOA_BAD_MIMIC, dof} for the first offending one (nv: couplings with flexible bodies). */
soa_status soa_mimic_finish(soa_model *m)
{
    soa_status st = {SOA_BAD_MIMIC, 0};
    int *body = m->mim_dof;                           /* (scratch first: the body of each dof) */
    for (int k = 0; k < m->nb; k++)
        for (int i = m->v0[k]; i < m->v0[k] + m->nvj[k]; i++) body[i] = k;
    m->nmim = 0;
    for (int i = 0; i < m->nv; i++) {
        if (m->mim_drv[i] == 0) continue;
        st.index = i;
        if (m->nm) {
            st.index = m->nv;
            return st;
        }
        const int j = m->mim_drv[i] - 1;
        if (j < 0 || j >= m->nv || j == i || m->mim_drv[j] != 0) return st;
        const int ti = m->jtype[body[i]], tj = m->jtype[body[j]];
        if ((ti != SOA_REVOLUTE && ti != SOA_PRISMATIC) || (tj != SOA_REVOLUTE && tj != SOA_PRISMATIC))
            return st;
        if (!isfinite(m->mim_k[i]) || !isfinite(m->mim_c[i])) return st;
    }
    for (int i = 0; i < m->nv; i++)
        if (m->mim_drv[i] > 0) m->mim_dof[m->nmim++] = i;
    st.kind = SOA_OK;
    st.index = 0;
    return st;
}

/* Steps (C)-(F) of the file comment on qdd (beta-dot f in, beta-dot out), from the factors of the
 * last inertial-frame Riccati sweep in d (of M + diag(a), or of an implicit step's
 * M + diag(a + h B + h^2 K): the coupled solve of that matrix). */
void soa_mimic_couple(const soa_model *m, soa_data *d, double *qdd)
{
    const int n = m->nmim, nv = m->nv;
    if (n == 0) return;
    double *Y = d->mim_Y, *S = d->mim_S, *l = d->mim_l;
    for (int i = 0; i < nv * n; i++) Y[i] = 0.0;
    for (int r = 0; r < n; r++) {                     /* the columns of G* */
        const int i = m->mim_dof[r], j = m->mim_drv[i] - 1;
        Y[i * n + r] = 1.0;
        Y[j * n + r] -= m->mim_k[i];
    }
    soa_innovations_solve(m, d, Y, n, n);             /* (C) Y = M^-1 G* */
    for (int r = 0; r < n; r++) {                     /* G Y and -G beta-dot f */
        const int i = m->mim_dof[r], j = m->mim_drv[i] - 1;
        const double k = m->mim_k[i];
        for (int s = 0; s < n; s++) S[r * n + s] = Y[i * n + s] - k * Y[j * n + s];
        l[r] = -(qdd[i] - k * qdd[j]);
    }
    for (int c = 0; c < n; c++) {                     /* (D) Cholesky of G Y (positive definite: */
        for (int r = c; r < n; r++) {                 /* G has full row rank, M is) */
            double s = S[r * n + c];
            for (int p = 0; p < c; p++) s -= S[r * n + p] * S[c * n + p];
            S[r * n + c] = r == c ? sqrt(fmax(s, 0.0)) : s / S[c * n + c];
        }
    }
    for (int r = 0; r < n; r++) {
        double s = l[r];
        for (int p = 0; p < r; p++) s -= S[r * n + p] * l[p];
        l[r] = s / S[r * n + r];
    }
    for (int r = n - 1; r >= 0; r--) {
        double s = l[r];
        for (int p = r + 1; p < n; p++) s -= S[p * n + r] * l[p];
        l[r] = s / S[r * n + r];
    }
    for (int i = 0; i < nv; i++) {                    /* (F) beta-dot f + Y lambda */
        double s = 0.0;
        for (int r = 0; r < n; r++) s += Y[i * n + r] * l[r];
        qdd[i] += s;
    }
}

/* The configuration index of the 1-dof joint of velocity dof i. */
static int q_index(const soa_model *m, int i)
{
    for (int k = 0; k < m->nb; k++)
        if (m->v0[k] == i && m->nvj[k] > 0) return m->q0[k];
    return 0;
}

/* A consistent state: q_m = k q_j + c and beta_m = k beta_j for every coupling (either may be
 * NULL); the start of a run (its drivers' values are the user's). */
void soa_mimic_project(const soa_model *m, double *q, double *qd)
{
    for (int r = 0; r < m->nmim; r++) {
        const int i = m->mim_dof[r], j = m->mim_drv[i] - 1;
        if (q) q[q_index(m, i)] = m->mim_k[i] * q[q_index(m, j)] + m->mim_c[i];
        if (qd) qd[i] = m->mim_k[i] * qd[j];
    }
}
