/* Closed chains (SPEC E11-E13): loop closures and grasps between frames, and the constrained
 * forward dynamics by steps (A)-(F) of seed 000 sec. 3 = RCCFD1 (seed 003 Part II eq. 6.11).
 *
 * A constraint joins frame_a and frame_b.  Its rows A act on the velocity of frame_b relative to
 * frame_a, at frame_b's origin x_b, in frame_a's axes (seed 000 eq. 2.16):
 *
 *   V~ = V~_b - V~_a = [Ra^T (w_b - w_a);  Ra^T (v_b - v_a - w_a x (x_b - x_a))],   A V~ = U~
 *
 * Each closure contributes two points of the papers' B operator (2.13): the point of frame_a's
 * body and the point of frame_b's body that coincide with x_b, both with frame_a's axes, so
 * A (J_b - J_a) beta = U~.  Forward dynamics (everything in the inertial frame):
 *
 *   (A) beta-dot f = M^-1 T^   the tree's innovations FD                       (3.7), (A.2), 6.11b
 *   (B) alpha~f: the free relative acceleration of every closure from alpha(k)   (3.8), 6.11c
 *   (C) Lambda^-1 = B* Omega B by the Omega recursion (operational_space.c)    (3.10), (A.5), 6.11d-e
 *   (D) (A Lambda^-1 A*) f~ = A alpha~f - U~dot + 2 alpha (A V~ - U~) + beta^2 e  (3.11), 6.11f
 *   (E) Delta beta-dot = -[I - H psi K]* D^-1 H psi B A* f~  (the correction sweep) (3.12), (A.6), 6.11g
 *   (F) beta-dot = beta-dot f + Delta beta-dot                                   6.11i
 *
 * O(N) + O(n_c^3).  A free body of the tree (the held object of seed 003, a secondary system of
 * seed 000 sec. 2.3) needs no special treatment: its Upsilon = M(C)^-1 is the A M^-1(C) A* term of
 * (4.9c).  Step (D) factors A Lambda^-1 A* after Jacobi scaling; dependent rows are resolved by
 * a symmetric eigen-decomposition (cyclic Jacobi): the minimum-norm forces when the dependent
 * directions' free accelerations vanish (redundant constraints), else SOA_CONSTRAINT_SINGULAR. */
#include <math.h>

#include "soa.h"
#include "spatial.h"

#define ZERO_ROW 1e-12     /* a diagonal of A Lambda^-1 A* below this fraction of the largest: a row
                              no joint moves (zero force) */
#define PIVOT 1e-10        /* a Cholesky pivot of the scaled matrix below this: dependent rows */
#define NULL_EIG 1e-9      /* a scaled eigenvalue below this fraction of the largest: dependent */
#define CONSISTENT 1e-6    /* free acceleration a dependent direction may carry, relative to the
                              reference acceleration max(1, |g|, |rhs|) */

static const int KIND_SIZE[SOA_NCONSTRAINTKINDS] = {6, 3, 5, 4};

/* ------------------------------------------------------------------ constants */
/* The rows A (first size rows of a 6 x 6, frame_a axes) of a kind (seed 000 eq. 2.16; seed 003
 * App. A): n = axis, t1 = unit(n x e) with e the coordinate axis least aligned with n, t2 = n x t1;
 * weld [I 0; 0 I], ball [0 I], hinge [t1^T 0; t2^T 0; 0 I], soft finger [n^T 0; 0 I]. */
void soa_constraint_rows(int kind, const double *axis, double *A)
{
    const double nn = sqrt(axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2]);
    const double n[3] = {axis[0] / nn, axis[1] / nn, axis[2] / nn};
    int im = 0;
    for (int i = 1; i < 3; i++)
        if (fabs(n[i]) < fabs(n[im])) im = i;
    const double e[3] = {im == 0, im == 1, im == 2};
    double t1[3], t2[3];
    cross3(n, e, t1);
    const double t = sqrt(t1[0] * t1[0] + t1[1] * t1[1] + t1[2] * t1[2]);
    for (int i = 0; i < 3; i++) t1[i] /= t;
    cross3(n, t1, t2);
    for (int i = 0; i < 36; i++) A[i] = 0.0;
    int r = 0;
    if (kind == SOA_WELD)
        for (; r < 3; r++) A[6 * r + r] = 1.0;
    else if (kind == SOA_HINGE)
        for (int i = 0; i < 3; i++) {
            A[i] = t1[i];
            A[6 + i] = t2[i];
            r = 2;
        }
    else if (kind == SOA_SOFT_FINGER)
        for (int i = 0; i < 3; i++) {
            A[i] = n[i];
            r = 1;
        }
    for (int i = 0; i < 3; i++) A[6 * (r + i) + 3 + i] = 1.0;       /* the translation rows */
}

/* Checks of soa_model_finish on the constraints (kind and size, bodies, finite constants, a
 * non-zero axis) and their rows A.  {SOA_BAD_CONSTRAINT, j} for the first offending one. */
soa_status soa_closures_finish(soa_model *m)
{
    soa_status st = {SOA_BAD_CONSTRAINT, 0};
    for (int j = 0; j < m->nc; j++) {
        const int kind = m->cn_kind[j];
        const double *ax = m->cn_axis + 3 * j;
        st.index = j;
        if (kind < 0 || kind >= SOA_NCONSTRAINTKINDS || m->cn_size[j] != KIND_SIZE[kind]) return st;
        if (m->cn_body_a[j] < -1 || m->cn_body_a[j] >= m->nb || m->cn_body_b[j] < -1
            || m->cn_body_b[j] >= m->nb)
            return st;
        if (soa_first_nonfinite(m->cn_Ra + 9 * j, 9) >= 0 || soa_first_nonfinite(m->cn_Rb + 9 * j, 9) >= 0
            || soa_first_nonfinite(m->cn_pa + 3 * j, 3) >= 0 || soa_first_nonfinite(m->cn_pb + 3 * j, 3) >= 0
            || soa_first_nonfinite(ax, 3) >= 0 || !(ax[0] * ax[0] + ax[1] * ax[1] + ax[2] * ax[2] > 0.0))
            return st;
        soa_constraint_rows(kind, ax, m->cn_A + 36 * j);
    }
    st.kind = SOA_OK;
    st.index = 0;
    return st;
}

/* Finite inputs of the closures: u, udot, anchors (a pose with a finite 3 x 4 part), gains. */
static soa_status check_closure_inputs(const soa_model *m, const double *u, const double *udot,
                                       const double *anchors, double alpha, double beta)
{
    soa_status st = {SOA_OK, 0};
    for (int j = 0; j < m->nc; j++) {
        st.index = j;
        if (u && soa_first_nonfinite(u + 6 * j, 6) >= 0) st.kind = SOA_BAD_U;
        else if (udot && soa_first_nonfinite(udot + 6 * j, 6) >= 0) st.kind = SOA_BAD_UDOT;
        else if (anchors && soa_first_nonfinite(anchors + 16 * j, 16) >= 0) st.kind = SOA_BAD_ANCHOR;
        if (st.kind != SOA_OK) return st;
    }
    st.index = 0;
    if (!(isfinite(alpha) && isfinite(beta) && alpha >= 0.0 && beta >= 0.0)) st.kind = SOA_BAD_GAINS;
    return st;
}

/* ------------------------------------------------------------------ (B) closure kinematics */
/* World pose (R, x) of a frame placed at (Rf, pf) on body k (world when k < 0). */
static void frame_in_world(const soa_data *d, int k, const double *Rf, const double *pf, double *R,
                           double *x)
{
    if (k < 0) {
        for (int i = 0; i < 9; i++) R[i] = Rf[i];
        for (int i = 0; i < 3; i++) x[i] = pf[i];
        return;
    }
    const double *Rw = d->Rw + 9 * k, *pw = d->pw + 3 * k;
    for (int i = 0; i < 3; i++) {
        x[i] = pw[i] + Rw[3 * i] * pf[0] + Rw[3 * i + 1] * pf[1] + Rw[3 * i + 2] * pf[2];
        for (int j = 0; j < 3; j++)
            R[3 * i + j] = Rw[3 * i] * Rf[j] + Rw[3 * i + 1] * Rf[3 + j] + Rw[3 * i + 2] * Rf[6 + j];
    }
}

/* A point of B (2.13): the point of body k at x_b with frame_a's axes RA.  Its placement in
 * body k's frame (R, l) (B(k, .) = phi(O(k), C)), and its spatial velocity phi*(I, C) V_I(k) and
 * acceleration phi*(I, C) alpha_I(k) from the inertial-frame sweeps (world: V = 0, alpha = the
 * base acceleration [0; -g]). */
static void closure_point(const soa_model *m, const soa_data *d, int k, const double *RA,
                          const double *xB, double *R, double *l, double *V, double *acc,
                          int with_acc)
{
    if (k < 0) {
        for (int i = 0; i < 9; i++) R[i] = RA[i];
        for (int i = 0; i < 3; i++) l[i] = xB[i];
        for (int i = 0; i < 6; i++) V[i] = 0.0;
        if (with_acc) apply_phi_star(RA, xB, m->a0, acc);
        return;
    }
    const double *Rw = d->Rw + 9 * k, *pw = d->pw + 3 * k;
    for (int i = 0; i < 3; i++) {
        l[i] = Rw[i] * (xB[0] - pw[0]) + Rw[3 + i] * (xB[1] - pw[1]) + Rw[6 + i] * (xB[2] - pw[2]);
        for (int j = 0; j < 3; j++) R[3 * i + j] = Rw[i] * RA[j] + Rw[3 + i] * RA[3 + j] + Rw[6 + i] * RA[6 + j];
    }
    apply_phi_star(RA, xB, d->V + 6 * k, V);
    if (with_acc) apply_phi_star(RA, xB, d->alpha + 6 * k, acc);
}

/* V~ = V~_b - V~_a and its time derivative in frame_a's (moving) axes, from the points' spatial
 * accelerations (same point x_b, same axes):
 *     d/dt w_rel = A_b,w - A_a,w - w_a x w_b
 *     d/dt v_rel = (A_b,v + w_b x v_b) - (A_a,v + w_a x v_a) - 2 w_a x (v_b - v_a)
 * (the classical point accelerations A_v + w x v, less the Coriolis term of the frame). */
static void relative_motion(const double *Va, const double *Vb, const double *Aa, const double *Ab,
                            double *Vrel, double *arel)
{
    double c[3], ca[3], cb[3], dv[3];
    for (int i = 0; i < 6; i++) Vrel[i] = Vb[i] - Va[i];
    cross3(Va, Vb, c);
    cross3(Vb, Vb + 3, cb);
    cross3(Va, Va + 3, ca);
    for (int i = 0; i < 3; i++) dv[i] = Vb[3 + i] - Va[3 + i];
    double cd[3];
    cross3(Va, dv, cd);
    for (int i = 0; i < 3; i++) {
        arel[i] = Ab[i] - Aa[i] - c[i];
        arel[3 + i] = (Ab[3 + i] + cb[i]) - (Aa[3 + i] + ca[i]) - 2.0 * cd[i];
    }
}

/* Rotation vector (axis x angle) of the rotation matrix E, valid up to and at pi. */
static void rotation_log(const double *E, double *out)
{
    const double v[3] = {0.5 * (E[7] - E[5]), 0.5 * (E[2] - E[6]), 0.5 * (E[3] - E[1])};
    const double s = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    const double c = 0.5 * (E[0] + E[4] + E[8] - 1.0);
    if (s < 1e-6 && c < 0.0) {                       /* angle near pi: E ~ 2 n n^T - I */
        int i = 0;
        for (int r = 1; r < 3; r++)
            if (E[4 * r] > E[4 * i]) i = r;
        const double dd = sqrt(fmax(0.5 * (E[4 * i] + 1.0), 1e-300));
        const double th = atan2(s, c), sgn = v[i] < 0.0 ? -1.0 : 1.0;
        for (int r = 0; r < 3; r++)
            out[r] = sgn * th * (r != i ? 0.5 * (E[3 * r + i] + E[3 * i + r]) / (2.0 * dd) : dd);
        return;
    }
    const double k = s > 1e-12 ? atan2(s, c) / s : 1.0;
    for (int r = 0; r < 3; r++) out[r] = k * v[r];
}

/* Position error rows e = A e6 of constraint j into err (module comment of constraints.py):
 * translation Ra^T (x_b - x_a) - p0 for every kind; rotation log(R_rel R0^T) for a weld,
 * n x (R_rel R0^T n) for a hinge.  Returns |e|. */
static double pose_error(const soa_model *m, int j, const double *R0, const double *p0,
                         const double *RA, const double *xA, const double *RB, const double *xB,
                         double *err)
{
    const int kind = m->cn_kind[j];
    const double *n = m->cn_axis + 3 * j, *A = m->cn_A + 36 * j;
    double Rrel[9], E[9], e6[6] = {0, 0, 0, 0, 0, 0};
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 3; k++)
            Rrel[3 * i + k] = RA[i] * RB[k] + RA[3 + i] * RB[3 + k] + RA[6 + i] * RB[6 + k];
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 3; k++)
            E[3 * i + k] = Rrel[3 * i] * R0[3 * k] + Rrel[3 * i + 1] * R0[3 * k + 1] + Rrel[3 * i + 2] * R0[3 * k + 2];
    for (int i = 0; i < 3; i++)
        e6[3 + i] = RA[i] * (xB[0] - xA[0]) + RA[3 + i] * (xB[1] - xA[1]) + RA[6 + i] * (xB[2] - xA[2]) - p0[i];
    if (kind == SOA_WELD) {
        rotation_log(E, e6);
    } else if (kind == SOA_HINGE) {
        const double En[3] = {E[0] * n[0] + E[1] * n[1] + E[2] * n[2],
                              E[3] * n[0] + E[4] * n[1] + E[5] * n[2],
                              E[6] * n[0] + E[7] * n[1] + E[8] * n[2]};
        cross3(n, En, e6);
    }
    double r2 = 0.0;
    for (int r = 0; r < m->cn_size[j]; r++) {
        err[r] = dot6(A + 6 * r, e6);
        r2 += err[r] * err[r];
    }
    return sqrt(r2);
}

/* Step (B): the closure points (cl_body, cl_R, cl_l), V~, its derivative at the current alpha
 * (with_acc), the position errors and the active rows' offsets.  Needs the inertial-frame world
 * placements and velocities (and accelerations).  Returns the number of active rows. */
static int closure_kinematics(const soa_model *m, soa_data *d, const int *active,
                              const double *anchors, int with_acc)
{
    int *row0 = d->cl_row0;
    row0[0] = 0;
    for (int j = 0; j < m->nc; j++) {
        const int on = !active || active[j];
        row0[j + 1] = row0[j] + (on ? m->cn_size[j] : 0);
        d->cl_resid[j] = 0.0;
        d->cl_body[2 * j] = d->cl_body[2 * j + 1] = -1;
        if (!on) continue;
        const int ka = m->cn_body_a[j], kb = m->cn_body_b[j];
        double RA[9], xA[3], RB[9], xB[3], Va[6], Vb[6], Aa[6], Ab[6];
        frame_in_world(d, ka, m->cn_Ra + 9 * j, m->cn_pa + 3 * j, RA, xA);
        frame_in_world(d, kb, m->cn_Rb + 9 * j, m->cn_pb + 3 * j, RB, xB);
        d->cl_body[2 * j] = ka;
        d->cl_body[2 * j + 1] = kb;
        closure_point(m, d, ka, RA, xB, d->cl_R + 18 * j, d->cl_l + 6 * j, Va, Aa, with_acc);
        closure_point(m, d, kb, RA, xB, d->cl_R + 18 * j + 9, d->cl_l + 6 * j + 3, Vb, Ab, with_acc);
        if (!with_acc)
            for (int i = 0; i < 6; i++) Aa[i] = Ab[i] = 0.0;
        relative_motion(Va, Vb, Aa, Ab, d->cl_Vrel + 6 * j, d->cl_arel + 6 * j);
        double R0[9], p0[3];                          /* the target pose (identity: none) */
        for (int i = 0; i < 3; i++) {
            const double *T = anchors ? anchors + 16 * j + 4 * i : NULL;
            for (int k = 0; k < 3; k++) R0[3 * i + k] = T ? T[k] : (i == k ? 1.0 : 0.0);
            p0[i] = T ? T[3] : 0.0;
        }
        d->cl_resid[j] = pose_error(m, j, R0, p0, RA, xA, RB, xB, d->cl_err + 6 * j);
    }
    d->cl_info[1] = row0[m->nc];
    return row0[m->nc];
}

/* For models with flexible bodies: V_I(k) = phi(I, k) V(k) and alpha_I(k) = phi(I, k) alpha(k) +
 * [0; -g] from the body-frame sweeps of flexible.c (seed 000 sec. 4), the inertial-frame motion
 * closure_point reads.  One map carries both: d/dt [phi(I, k) V(k)] = phi(I, k) (alpha(k) + V x~ V)
 * and V x~ V = 0; flexible.c applies gravity as a force, so the base acceleration of the inertial
 * sweeps is added back (relative accelerations are unchanged by it).  Needs world placements. */
static void flex_inertial_motion(const soa_model *m, soa_data *d, int with_acc)
{
    for (int k = 0; k < m->nb; k++) {
        const double *Rw = d->Rw + 9 * k, *pw = d->pw + 3 * k;
        for (int which = 0; which <= with_acc; which++) {
            double *x = (which ? d->alpha : d->V) + 6 * k, w[3], v[3], c[3];
            for (int i = 0; i < 3; i++) {
                w[i] = Rw[3 * i] * x[0] + Rw[3 * i + 1] * x[1] + Rw[3 * i + 2] * x[2];
                v[i] = Rw[3 * i] * x[3] + Rw[3 * i + 1] * x[4] + Rw[3 * i + 2] * x[5];
            }
            cross3(pw, w, c);
            for (int i = 0; i < 3; i++) {
                x[i] = w[i];
                x[3 + i] = v[i] + c[i] + (which ? m->a0[3 + i] : 0.0);
            }
        }
    }
}

/* Right-hand sides of step (D), row by row (seed 000 eq. 3.11 with Baumgarte stabilization):
 * rhs_dyn = A alpha~f - U~dot,  rhs_stab = 2 alpha (A V~ - U~) + beta^2 e. */
static void closure_rhs(const soa_model *m, soa_data *d, const int *active, const double *u,
                        const double *udot, double alpha, double beta)
{
    for (int j = 0; j < m->nc; j++) {
        if (active && !active[j]) continue;
        const int r0 = d->cl_row0[j];
        for (int r = 0; r < m->cn_size[j]; r++) {
            const double *A = m->cn_A + 36 * j + 6 * r;
            const double a = dot6(A, d->cl_arel + 6 * j), v = dot6(A, d->cl_Vrel + 6 * j);
            d->cl_rhs_dyn[r0 + r] = a - (udot ? udot[6 * j + r] : 0.0);
            d->cl_rhs_stab[r0 + r] = 2.0 * alpha * (v - (u ? u[6 * j + r] : 0.0))
                                     + beta * beta * d->cl_err[6 * j + r];
        }
    }
}

/* ------------------------------------------------------------------ (C) A Lambda^-1 A* */
/* S = A Lambda^-1 A* = sum sigma_s sigma_t A_c L(s, t) A_d* over the two points of every pair of
 * active constraints (sigma = -1 on frame_a's side, +1 on frame_b's): seed 003 eqs. 6.11d-e. */
static void closure_matrix(const soa_model *m, soa_data *d, const int *active)
{
    const int nc = m->nc, n = d->cl_row0[nc], ldS = 6 * nc, ldL = 12 * nc;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) d->cl_S[i * ldS + j] = 0.0;
    for (int jc = 0; jc < nc; jc++) {
        if (active && !active[jc]) continue;
        for (int jd = 0; jd < nc; jd++) {
            if (active && !active[jd]) continue;
            const double *Ac = m->cn_A + 36 * jc, *Ad = m->cn_A + 36 * jd;
            for (int sa = 0; sa < 2; sa++) {
                const int s = 2 * jc + sa;
                if (d->cl_body[s] < 0) continue;
                for (int sb = 0; sb < 2; sb++) {
                    const int t = 2 * jd + sb;
                    if (d->cl_body[t] < 0) continue;
                    const double sign = sa == sb ? 1.0 : -1.0;
                    double LA[36];                       /* L(s, t) A_d^T, 6 x size_d */
                    for (int i = 0; i < 6; i++)
                        for (int r = 0; r < m->cn_size[jd]; r++) {
                            double a = 0.0;
                            for (int k = 0; k < 6; k++) a += d->cl_L[(6 * s + i) * ldL + 6 * t + k] * Ad[6 * r + k];
                            LA[6 * i + r] = a;
                        }
                    for (int r = 0; r < m->cn_size[jc]; r++)
                        for (int rr = 0; rr < m->cn_size[jd]; rr++) {
                            double a = 0.0;
                            for (int i = 0; i < 6; i++) a += Ac[6 * r + i] * LA[6 * i + rr];
                            d->cl_S[(d->cl_row0[jc] + r) * ldS + d->cl_row0[jd] + rr] += sign * a;
                        }
                }
            }
        }
    }
}

/* ------------------------------------------------------------------ (D) the constraint forces */
/* Eigen-decomposition of a symmetric n x n A (row stride ld, destroyed) by cyclic Jacobi
 * rotations: eigenvalues w, eigenvectors the columns of V (stride ld). */
static void jacobi_eigen(double *A, int n, int ld, double *V, double *w)
{
    double total = 0.0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            V[i * ld + j] = i == j ? 1.0 : 0.0;
            total += A[i * ld + j] * A[i * ld + j];
        }
    for (int sweep = 0; sweep < 100; sweep++) {
        double off = 0.0;
        for (int p = 0; p < n; p++)
            for (int q = p + 1; q < n; q++) off += A[p * ld + q] * A[p * ld + q];
        if (!(off > 1e-34 * total)) break;           /* (also stops on NaN) */
        for (int p = 0; p < n; p++)
            for (int q = p + 1; q < n; q++) {
                const double apq = A[p * ld + q];
                if (apq == 0.0) continue;
                const double theta = (A[q * ld + q] - A[p * ld + p]) / (2.0 * apq);
                const double t = fabs(theta) > 1e150 ? 0.5 / theta
                                 : (theta >= 0.0 ? 1.0 : -1.0) / (fabs(theta) + sqrt(theta * theta + 1.0));
                const double c = 1.0 / sqrt(t * t + 1.0), s = t * c;
                for (int r = 0; r < n; r++) {                  /* columns p, q */
                    const double arp = A[r * ld + p], arq = A[r * ld + q];
                    A[r * ld + p] = c * arp - s * arq;
                    A[r * ld + q] = s * arp + c * arq;
                }
                for (int r = 0; r < n; r++) {                  /* rows p, q */
                    const double apr = A[p * ld + r], aqr = A[q * ld + r];
                    A[p * ld + r] = c * apr - s * aqr;
                    A[q * ld + r] = s * apr + c * aqr;
                }
                A[p * ld + q] = A[q * ld + p] = 0.0;
                for (int r = 0; r < n; r++) {
                    const double vrp = V[r * ld + p], vrq = V[r * ld + q];
                    V[r * ld + p] = c * vrp - s * vrq;
                    V[r * ld + q] = s * vrp + c * vrq;
                }
            }
    }
    for (int i = 0; i < n; i++) w[i] = A[i * ld + i];
}

/* The Jacobi-scaled A Lambda^-1 A* (ds S ds, zero on the rows no joint moves) into cl_C, its
 * eigen-decomposition into cl_eig, cl_V.  Returns the largest eigenvalue. */
static double scaled_eigen(soa_data *d, int n, int ld)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) d->cl_C[i * ld + j] = d->cl_ds[i] * d->cl_S[i * ld + j] * d->cl_ds[j];
    jacobi_eigen(d->cl_C, n, ld, d->cl_V, d->cl_eig);
    double lmax = 0.0;
    for (int i = 0; i < n; i++) lmax = fmax(lmax, d->cl_eig[i]);
    return lmax;
}

/* A kept (independent) direction of the scaled matrix. */
static int kept(const soa_data *d, int i, double lmax)
{
    return lmax > 0.0 && d->cl_eig[i] > NULL_EIG * lmax;
}

/* f = the minimum-norm solution of (A Lambda^-1 A*) f = r1 + r2 (r2 may be NULL) over the kept
 * eigen-directions of the scaled matrix (cl_eig, cl_V of scaled_eigen). */
static void eigen_apply(soa_data *d, int n, int ld, const double *r1, const double *r2, double *f)
{
    const double *V = d->cl_V, *ds = d->cl_ds;
    double lmax = 0.0;
    for (int i = 0; i < n; i++) {
        lmax = fmax(lmax, d->cl_eig[i]);
        f[i] = 0.0;
    }
    for (int k = 0; k < n; k++) {
        if (!kept(d, k, lmax)) continue;               /* f += ds V_k (V_k . ds r) / lam_k */
        double a = 0.0;
        for (int i = 0; i < n; i++) a += V[i * ld + k] * ds[i] * (r1[i] + (r2 ? r2[i] : 0.0));
        a /= d->cl_eig[k];
        for (int i = 0; i < n; i++) f[i] += ds[i] * V[i * ld + k] * a;
    }
}

/* Step (D) with dependent rows: the eigen-decomposition of the scaled A Lambda^-1 A*, whose kept
 * directions give the minimum-norm f~ (eigen_apply).  The free accelerations (rhs_dyn) of the
 * dependent directions must vanish (to CONSISTENT a_ref) - else SOA_CONSTRAINT_SINGULAR, a
 * singular configuration; their stabilization terms are dropped (nothing can act on them).
 * cl_nullw marks the rows of the dependent directions (those that break consistency, if any).
 * Returns 1 when redundant rows were found. */
static int factor_dependent(soa_data *d, int n, int ld, double a_ref, int *singular)
{
    const double lmax = scaled_eigen(d, n, ld);
    const double *V = d->cl_V, *ds = d->cl_ds;
    int rank = 0, nnull = 0, nbad = 0;
    for (int i = 0; i < n; i++) d->cl_nullw[i] = 0.0;
    for (int k = 0; k < n; k++) rank += kept(d, k, lmax);
    for (int pass = 0; pass < 2; pass++)               /* 0: find bad directions, 1: weights */
        for (int k = 0; k < n; k++) {
            if (kept(d, k, lmax)) continue;
            double on = 0.0, bd = 0.0, worst = 0.0;
            for (int i = 0; i < n; i++) {
                on += ds[i] * fabs(V[i * ld + k]);
                bd += V[i * ld + k] * ds[i] * d->cl_rhs_dyn[i];
            }
            if (!(on > 0.0)) continue;                 /* a direction of the zero rows only */
            for (int i = 0; i < n; i++)                /* back in acceleration units, row by row */
                if (ds[i] > 0.0) worst = fmax(worst, fabs(V[i * ld + k] * bd / ds[i]));
            const int bad = worst > CONSISTENT * a_ref;
            if (pass == 0) {
                nnull++;
                nbad += bad;
            } else if (bad || nbad == 0) {
                for (int i = 0; i < n; i++)
                    if (ds[i] > 0.0) d->cl_nullw[i] += V[i * ld + k] * V[i * ld + k];
            }
        }
    d->cl_info[0] = rank;
    *singular = nbad > 0;
    return nnull > 0;
}

/* cl_involved[j] = 1 for the active constraints whose rows weigh in cl_nullw. */
static int mark_involved(const soa_model *m, soa_data *d, const int *active)
{
    const int n = d->cl_row0[m->nc];
    double wmax = 0.0;
    int first = -1;
    for (int i = 0; i < n; i++) wmax = fmax(wmax, d->cl_nullw[i]);
    for (int j = 0; j < m->nc; j++) {
        d->cl_involved[j] = 0;
        if (active && !active[j]) continue;
        for (int r = d->cl_row0[j]; r < d->cl_row0[j] + m->cn_size[j]; r++)
            if (d->cl_nullw[r] > 1e-3 * wmax) d->cl_involved[j] = 1;
        if (d->cl_involved[j] && first < 0) first = j;
    }
    return first < 0 ? 0 : first;
}

/* max(1, |g|, |rhs_dyn|): the acceleration scale against which dependent rows must be consistent. */
static double reference_acceleration(const soa_model *m, const soa_data *d, int n)
{
    double a = fmax(1.0, sqrt(m->a0[3] * m->a0[3] + m->a0[4] * m->a0[4] + m->a0[5] * m->a0[5]));
    for (int i = 0; i < n; i++) a = fmax(a, fabs(d->cl_rhs_dyn[i]));
    return a;
}

/* Step (D), the factorization of A Lambda^-1 A* (seed 000 eq. 3.11; seed 003 eqs. 4.9d, 6.11f) by
 * Cholesky after Jacobi scaling, checked against the free accelerations rhs_dyn.  Rows no joint
 * moves get zero force (singular when their free acceleration is not zero); a pivot below PIVOT
 * hands over to the eigen-decomposition (factor_dependent, cl_eigen = 1).  cl_info: rank, rows,
 * redundant. */
static soa_status closure_factor(const soa_model *m, soa_data *d, const int *active, double a_ref)
{
    soa_status st = {SOA_OK, 0};
    const int n = d->cl_row0[m->nc], ld = 6 * m->nc;
    const double *S = d->cl_S;
    double *C = d->cl_C, *ds = d->cl_ds;
    double dmax = 0.0;
    int zero_singular = 0, dependent = 0;
    d->cl_info[0] = n;
    d->cl_info[1] = n;
    d->cl_info[2] = 0;
    d->cl_eigen[0] = 0;
    for (int i = 0; i < n; i++) dmax = fmax(dmax, S[i * ld + i]);
    for (int i = 0; i < n; i++) {
        d->cl_nullw[i] = 0.0;
        if (dmax > 0.0 && S[i * ld + i] > ZERO_ROW * dmax) {
            ds[i] = 1.0 / sqrt(S[i * ld + i]);
        } else {
            ds[i] = 0.0;                               /* a row no joint moves: zero force */
            if (!(fabs(d->cl_rhs_dyn[i]) <= CONSISTENT * a_ref)) {
                d->cl_nullw[i] = 1.0;
                zero_singular = 1;
            }
        }
    }
    if (zero_singular) {
        double lmax = scaled_eigen(d, n, ld);          /* the rank, for the message */
        d->cl_info[0] = 0;
        for (int k = 0; k < n; k++) d->cl_info[0] += kept(d, k, lmax);
        st.kind = SOA_CONSTRAINT_SINGULAR;
        st.index = mark_involved(m, d, active);
        return st;
    }
    for (int j = 0; j < n && !dependent; j++)          /* Cholesky (identity on the zero rows) */
        for (int i = j; i < n; i++) {
            double s = (ds[i] > 0.0 && ds[j] > 0.0) ? ds[i] * S[i * ld + j] * ds[j] : (i == j ? 1.0 : 0.0);
            for (int k = 0; k < j; k++) s -= C[i * ld + k] * C[j * ld + k];
            if (i == j) {
                if (!(s > PIVOT)) {
                    dependent = 1;
                    break;
                }
                C[j * ld + j] = sqrt(s);
            } else {
                C[i * ld + j] = s / C[j * ld + j];
            }
        }
    if (dependent) {
        int singular = 0;
        d->cl_eigen[0] = 1;
        d->cl_info[2] = factor_dependent(d, n, ld, a_ref, &singular);
        if (singular || d->cl_info[2]) st.index = mark_involved(m, d, active);
        if (singular) st.kind = SOA_CONSTRAINT_SINGULAR;
        else st.index = 0;
    }
    return st;
}

/* f = (A Lambda^-1 A*)^-1 (r1 + r2) (r2 may be NULL) by the factors of closure_factor: the
 * (minimum-norm) tip forces of one right-hand side (seed 003 eqs. 6.11f, 6.18d, 6.22d-e). */
static void closure_apply(const soa_model *m, soa_data *d, const double *r1, const double *r2,
                          double *f)
{
    const int n = d->cl_row0[m->nc], ld = 6 * m->nc;
    const double *C = d->cl_C, *ds = d->cl_ds;
    double *y = d->cl_y;
    if (d->cl_eigen[0]) {
        eigen_apply(d, n, ld, r1, r2, f);
        return;
    }
    for (int i = 0; i < n; i++) y[i] = ds[i] * (r1[i] + (r2 ? r2[i] : 0.0));
    for (int i = 0; i < n; i++) {
        double s = y[i];
        for (int k = 0; k < i; k++) s -= C[i * ld + k] * y[k];
        y[i] = s / C[i * ld + i];
    }
    for (int i = n - 1; i >= 0; i--) {
        double s = y[i];
        for (int k = i + 1; k < n; k++) s -= C[k * ld + i] * y[k];
        y[i] = s / C[i * ld + i];
    }
    for (int i = 0; i < n; i++) f[i] = ds[i] * y[i];
}

/* Step (D): f~ = (A Lambda^-1 A*)^-1 (rhs_dyn + rhs_stab) into cl_f (seed 000 eq. 3.11; seed 003
 * eq. 6.11f). */
static soa_status closure_forces(const soa_model *m, soa_data *d, const int *active, double a_ref)
{
    soa_status st = closure_factor(m, d, active, a_ref);
    if (st.kind == SOA_OK) closure_apply(m, d, d->cl_rhs_dyn, d->cl_rhs_stab, d->cl_f);
    return st;
}

soa_status soa_closure_solve(const soa_model *m, soa_data *d, const int *active)
{
    return closure_forces(m, d, active, reference_acceleration(m, d, d->cl_row0[m->nc]));
}

/* ------------------------------------------------------------------ (E) the correction */
/* cl_fext <- the closure forces of tip forces f~ on the bodies, body frames at the body origins:
 * -A* f~ on frame_b's body at x_b, +A* f~ on frame_a's body, moved to the body origins by
 * B = phi(O(k), C) (seed 003 eq. 2.13). */
static void closure_body_forces(const soa_model *m, soa_data *d, const int *active, const double *f)
{
    for (int i = 0; i < 6 * m->nb; i++) d->cl_fext[i] = 0.0;
    for (int j = 0; j < m->nc; j++) {
        if (active && !active[j]) continue;
        const double *A = m->cn_A + 36 * j, *fj = f + d->cl_row0[j];
        double F[6] = {0, 0, 0, 0, 0, 0};
        for (int r = 0; r < m->cn_size[j]; r++)
            for (int i = 0; i < 6; i++) F[i] += A[6 * r + i] * fj[r];
        for (int side = 0; side < 2; side++) {
            const int s = 2 * j + side, k = d->cl_body[s];
            if (k < 0) continue;
            double g[6] = {0, 0, 0, 0, 0, 0};
            add_phi(d->cl_R + 9 * s, d->cl_l + 3 * s, F, g);
            for (int i = 0; i < 6; i++) d->cl_fext[6 * k + i] += side == 0 ? g[i] : -g[i];
        }
    }
}

/* Delta beta-dot = -M^-1 J* A* f into dq (seed 000 eq. 3.12 by A.6; seed 003 eqs. 6.11g, 6.20):
 * the correction sweep with the closure forces as its only input. */
static void closure_correction(const soa_model *m, soa_data *d, const int *active, const double *f,
                               double *dq)
{
    closure_body_forces(m, d, active, f);
    soa_correction_sweep(m, d, d->cl_fext, dq);
}

/* forces (on frame_b's body = -f~) and residuals per constraint; 0 when inactive. */
static void closure_outputs(const soa_model *m, const soa_data *d, const int *active,
                            double *forces, double *residuals)
{
    for (int j = 0; j < m->nc; j++) {
        const int on = !active || active[j];
        if (forces)
            for (int r = 0; r < 6; r++)
                forces[6 * j + r] = (on && r < m->cn_size[j]) ? -d->cl_f[d->cl_row0[j] + r] : 0.0;
        if (residuals) residuals[j] = on ? d->cl_resid[j] : 0.0;
    }
}

/* Steps (C)-(D) after (B): Lambda^-1 of the closure points, A Lambda^-1 A*, the forces. */
static soa_status closure_solve_points(const soa_model *m, soa_data *d, const int *active,
                                       double a_ref)
{
    soa_point_inertia_inverse(m, d, 2 * m->nc, d->cl_body, d->cl_R, d->cl_l, 0, NULL, d->cl_L);
    closure_matrix(m, d, active);
    return closure_forces(m, d, active, a_ref);
}

/* ------------------------------------------------------------------ the algorithms */
/* The inputs of constrained forward dynamics: state, tau, the closures' per-call inputs. */
static soa_status check_fd_inputs(const soa_model *m, const double *q, const double *qd,
                                  const double *tau, const double *u, const double *udot,
                                  const double *anchors, double alpha, double beta)
{
    soa_status st = soa_check_state(m, q, qd);
    if (st.kind != SOA_OK) return st;
    const int i = soa_first_nonfinite(tau, m->nv);
    if (i >= 0) {
        st.kind = SOA_BAD_TAU;
        st.index = i;
        return st;
    }
    return check_closure_inputs(m, u, udot, anchors, alpha, beta);
}

/* Steps (A)-(F) of seed 000 sec. 3 = RCCFD1 (seed 003 eq. 6.11). */
static soa_status rccfd1(const soa_model *m, soa_data *d, const double *q, const double *qd,
                         const double *tau, int use_fext, const int *active, const double *u,
                         const double *udot, const double *anchors, double alpha, double beta,
                         double *qdd)
{
    soa_status st = {SOA_OK, 0};
    /* (A) the free accelerations, alpha(k) at them, the articulated factors (inertial frame) */
    if (m->nm) {                     /* flexible bodies: body-frame sweeps, factors in flexible.c */
        st = soa_flex_fd(m, d, q, qd, tau, use_fext, d->cl_qfree);
        if (st.kind != SOA_OK) return st;
        soa_outward_placements(m, d, q);              /* + the node columns Gamma, for step (C) */
        soa_world_placements(m, d);
        flex_inertial_motion(m, d, 1);
    } else {
        const int k = soa_tree_acceleration_inertial(m, d, q, qd, tau, use_fext, d->cl_qfree);
        if (k >= 0) {
            st.kind = SOA_SINGULAR;
            st.index = k;
            return st;
        }
    }
    /* (B) closure points, free relative accelerations, errors, right-hand sides */
    const int n = closure_kinematics(m, d, active, anchors, 1);
    closure_rhs(m, d, active, u, udot, alpha, beta);
    /* (C) Lambda^-1 by the Omega recursion, (D) the forces */
    st = closure_solve_points(m, d, active, reference_acceleration(m, d, n));
    if (st.kind != SOA_OK) return st;
    /* (E) the correction accelerations, (F) beta-dot = beta-dot f + Delta beta-dot */
    closure_correction(m, d, active, d->cl_f, d->cl_dq);
    for (int r = 0; r < m->nv; r++) qdd[r] = d->cl_qfree[r] + d->cl_dq[r];
    return st;
}

/* Seed 003 eq. 6.18a (6.22a): the bias-free moments T' = T - H phi (M phi* a + b - f_ext) into
 * d->tprime by the inertial-frame Newton-Euler sweeps at beta-dot = 0 (seed 001 eqs. 55-56,
 * gravity as the base acceleration), leaving phi* a, the accelerations at beta-dot = 0, in
 * d->alpha; then the articulated factors P, D, G.  Returns -1 or the body whose D is singular. */
static int bias_free_moments(const soa_model *m, soa_data *d, const double *q, const double *qd,
                             const double *tau, int use_fext)
{
    soa_inertial_kinematics(m, d, q, qd);
    for (int i = 0; i < m->nv; i++) d->zerov[i] = 0.0;
    soa_inertial_accelerations(m, d, d->zerov, m->a0);
    for (int k = 0; k < m->nb; k++) {                  /* f = M alpha + b - f_ext (folded: M = 0) */
        double *f = d->f + 6 * k, fe[6] = {0, 0, 0, 0, 0, 0};
        matvec6(d->Mw + 36 * k, d->alpha + 6 * k, f);
        if (use_fext) add_phi(d->Rw + 9 * k, d->pw + 3 * k, d->fext + 6 * k, fe);
        for (int i = 0; i < 6; i++) f[i] += d->b[6 * k + i] - fe[i];
    }
    for (int k = m->nb - 1; k >= 0; k--) {             /* phi = 1 in the inertial frame */
        const int p = m->parent[k];
        if (p >= 0)
            for (int i = 0; i < 6; i++) d->f[6 * p + i] += d->f[6 * k + i];
        for (int dd = 0; dd < m->nvj[k]; dd++)
            d->tprime[m->v0[k] + dd] = tau[m->v0[k] + dd] - dot6(d->Sw + 6 * (m->v0[k] + dd), d->f + 6 * k);
    }
    return soa_riccati_sweep(m, d, 1);
}

/* alpha_I(k): d->alpha as it is (the inertial-frame sweeps), or with flexible bodies the
 * body-frame alpha(k) of flexible.c's smoother moved to the world origin, phi(I, k) alpha(k). */
static void inertial_alpha(const soa_model *m, const soa_data *d, int k, double *out)
{
    const double *x = d->alpha + 6 * k, *Rw = d->Rw + 9 * k, *pw = d->pw + 3 * k;
    if (!m->nm) {
        for (int i = 0; i < 6; i++) out[i] = x[i];
        return;
    }
    double c[3];
    for (int i = 0; i < 3; i++) {
        out[i] = Rw[3 * i] * x[0] + Rw[3 * i + 1] * x[1] + Rw[3 * i + 2] * x[2];
        out[3 + i] = Rw[3 * i] * x[3] + Rw[3 * i + 1] * x[4] + Rw[3 * i + 2] * x[5];
    }
    cross3(pw, out, c);
    for (int i = 0; i < 3; i++) out[3 + i] += c[i];
}

/* y <- A (phi*(I, C_b) alpha(k_b) - phi*(I, C_a) alpha(k_a)) of the active rows, for the alpha
 * = psi* H* nu the Omega pass left on the points' paths: B* psi* H* nu = J M^-1 T' (seed 003
 * eqs. 6.12-6.13; a world point contributes 0). */
static void tip_accelerations(const soa_model *m, soa_data *d, const int *active, double *y)
{
    for (int j = 0; j < m->nc; j++) {
        if (active && !active[j]) continue;
        const int ka = m->cn_body_a[j], kb = m->cn_body_b[j];
        double RA[9], xA[3], RB[9], xB[3], acc[2][6] = {{0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0}}, rel[6];
        frame_in_world(d, ka, m->cn_Ra + 9 * j, m->cn_pa + 3 * j, RA, xA);
        frame_in_world(d, kb, m->cn_Rb + 9 * j, m->cn_pb + 3 * j, RB, xB);
        for (int side = 0; side < 2; side++) {
            const int k = side ? kb : ka;
            if (k < 0) continue;
            double al[6];
            inertial_alpha(m, d, k, al);
            apply_phi_star(RA, xB, al, acc[side]);
        }
        for (int i = 0; i < 6; i++) rel[i] = acc[1][i] - acc[0][i];
        for (int r = 0; r < m->cn_size[j]; r++) y[d->cl_row0[j] + r] = dot6(m->cn_A + 36 * j + 6 * r, rel);
    }
}

/* RCCFD2/3's step (D): the free accelerations rhs_dyn gain the tips' A alpha~f (cl_tip, as in
 * RCCFD1), then A Lambda^-1 A* is factored against them (closure_factor). */
static soa_status factor_with_tips(const soa_model *m, soa_data *d, const int *active, int n)
{
    for (int i = 0; i < n; i++) d->cl_rhs_dyn[i] += d->cl_tip[i];
    return closure_factor(m, d, active, reference_acceleration(m, d, n));
}

/* RCCFD2 (seed 003 eqs. 6.12-6.18) and RCCFD3 (eqs. 6.19-6.22): the tip forces from a causal
 * filtering of T' and an anticausal pass that builds Omega on the way,
 *   (6.18d)  f(0) = Omega^-1 {B* psi* H* D^-1 (I - H psi L) T' - a'(C)},
 * then RCCFD2  (6.18e)  theta-dd = (I - H psi L)* D^-1 {T' - H psi (K T' + B f(0))},
 *      RCCFD3  (6.22)   theta-dd = theta-dd1 + theta-dd2,
 *               theta-dd1 = (I - H psi L)* {D^-1 - D^-1 H psi B Omega^-1 B* psi* H* D^-1} (I - H psi L) T'
 *               theta-dd2 = (I - H psi L)* D^-1 H psi B Omega^-1 a'(C)                           (6.20)
 * In the code's sign (f~ = -f(0) acts on frame_b's body), -a'(C) is the closures' relative
 * acceleration at beta-dot = 0 less U~dot, plus the stabilization: cl_arhs.  O(n) + O(t^3). */
static soa_status rccfd23(const soa_model *m, soa_data *d, int method, const double *q,
                          const double *qd, const double *tau, int use_fext, const int *active,
                          const double *u, const double *udot, const double *anchors, double alpha,
                          double beta, double *qdd)
{
    static const double zero6[6] = {0, 0, 0, 0, 0, 0};
    soa_status st = {SOA_OK, 0};
    /* (6.18a) T', the accelerations at beta-dot = 0, the articulated factors */
    const int k = bias_free_moments(m, d, q, qd, tau, use_fext);
    if (k >= 0) {
        st.kind = SOA_SINGULAR;
        st.index = k;
        return st;
    }
    /* -a'(C): the closures' kinematics at beta-dot = 0, U~dot, the stabilization */
    const int n = closure_kinematics(m, d, active, anchors, 1);
    closure_rhs(m, d, active, u, udot, alpha, beta);
    for (int i = 0; i < n; i++) d->cl_arhs[i] = d->cl_rhs_dyn[i] + d->cl_rhs_stab[i];
    /* causal filtering nu = D^-1 (I - H psi L) T' (6.13) */
    soa_innovations_filter(m, d, d->tprime, 0, NULL, 1);
    /* anticausal filtering B* psi* H* nu, Omega on the way (6.18b-c, 6.10) */
    soa_point_inertia_inverse(m, d, 2 * m->nc, d->cl_body, d->cl_R, d->cl_l, 0, d->nu, d->cl_L);
    closure_matrix(m, d, active);
    tip_accelerations(m, d, active, d->cl_tip);
    st = factor_with_tips(m, d, active, n);
    if (st.kind != SOA_OK) return st;
    if (method == SOA_RCCFD2) {
        closure_apply(m, d, d->cl_tip, d->cl_arhs, d->cl_f);                          /* (6.18d) */
        closure_body_forces(m, d, active, d->cl_f);                                  /* (6.18e) */
        soa_innovations_filter(m, d, d->tprime, 0, d->cl_fext, 1);
        soa_innovations_smoother(m, d, zero6, 0, qdd, 1);
        return st;
    }
    /* (6.22f) theta-dd1: f1 = Omega^-1 B* psi* H* nu, nu - D^-1 H psi B f1 by a second causal
     * filtering (the forces only), then the anticausal (I - H psi L)* */
    closure_apply(m, d, d->cl_tip, NULL, d->cl_f);
    for (int i = 0; i < m->nv; i++) d->cl_qfree[i] = d->nu[i];
    closure_body_forces(m, d, active, d->cl_f);
    soa_innovations_filter(m, d, d->zerov, 0, d->cl_fext, 1);
    for (int i = 0; i < m->nv; i++) d->nu[i] += d->cl_qfree[i];
    soa_innovations_smoother(m, d, zero6, 0, d->cl_qfree, 1);
    /* (6.22e) theta-dd2 = M^-1 J* Omega^-1 a'(C), the correction sweep of f2 (6.20) */
    closure_apply(m, d, d->cl_arhs, NULL, d->cl_f2);
    closure_correction(m, d, active, d->cl_f2, d->cl_dq);
    /* (6.22g) theta-dd = theta-dd1 + theta-dd2; the tip forces f1 + f2 */
    for (int r = 0; r < m->nv; r++) qdd[r] = d->cl_qfree[r] + d->cl_dq[r];
    for (int i = 0; i < n; i++) d->cl_f[i] += d->cl_f2[i];
    return st;
}

/* RCCFD2 and RCCFD3 with flexible bodies (seed 000 sec. 4): the same groupings of (3.6) on
 * flexible.c's factored form, whose filter and smoother run together (soa_flex_solve_forces):
 *   (6.18a) T' = T - ID(theta, beta, 0) by the flexible Newton-Euler, its alpha (inertial frame,
 *           gravity as the base acceleration) giving -a'(C);
 *   (6.13)  x = M^-1 T', its smoother's alpha the tip accelerations B* psi* H* nu = J M^-1 T'
 *           (Omega from the factored form's columns: soa_point_inertia_inverse);
 *   RCCFD2  (6.18e) theta-dd = M^-1 (T' - J* B f(0)): one solve with T' and the tip forces;
 *   RCCFD3  (6.21)  theta-dd1 = x + M^-1 J* (the forces of f1), (6.20) theta-dd2 the correction of
 *           f2, (6.22g) their sum. */
static soa_status rccfd23_flexible(const soa_model *m, soa_data *d, int method, const double *q,
                                   const double *qd, const double *tau, int use_fext,
                                   const int *active, const double *u, const double *udot,
                                   const double *anchors, double alpha, double beta, double *qdd)
{
    for (int i = 0; i < m->nv; i++) d->zerov[i] = 0.0;
    soa_status st = soa_flex_rnea(m, d, q, qd, d->zerov, use_fext, d->tbias);      /* (6.18a) */
    if (st.kind != SOA_OK) return st;
    for (int i = 0; i < m->nv; i++) d->tprime[i] = tau[i] - d->tbias[i];
    soa_world_placements(m, d);
    flex_inertial_motion(m, d, 1);
    const int n = closure_kinematics(m, d, active, anchors, 1);               /* -a'(C) */
    closure_rhs(m, d, active, u, udot, alpha, beta);
    for (int i = 0; i < n; i++) d->cl_arhs[i] = d->cl_rhs_dyn[i] + d->cl_rhs_stab[i];
    st = soa_flex_factor(m, d, q);
    if (st.kind != SOA_OK) return st;
    soa_outward_placements(m, d, q);                  /* + the node columns Gamma, for Omega */
    soa_flex_solve_forces(m, d, d->tprime, NULL, d->cl_qfree);                   /* (6.13) */
    tip_accelerations(m, d, active, d->cl_tip);
    soa_point_inertia_inverse(m, d, 2 * m->nc, d->cl_body, d->cl_R, d->cl_l, 0, NULL, d->cl_L);
    closure_matrix(m, d, active);
    st = factor_with_tips(m, d, active, n);
    if (st.kind != SOA_OK) return st;
    if (method == SOA_RCCFD2) {
        closure_apply(m, d, d->cl_tip, d->cl_arhs, d->cl_f);                          /* (6.18d) */
        closure_body_forces(m, d, active, d->cl_f);                                  /* (6.18e) */
        soa_flex_solve_forces(m, d, d->tprime, d->cl_fext, qdd);
        return st;
    }
    closure_apply(m, d, d->cl_tip, NULL, d->cl_f);                                   /* (6.21) */
    closure_correction(m, d, active, d->cl_f, d->cl_dq);
    for (int r = 0; r < m->nv; r++) d->cl_qfree[r] += d->cl_dq[r];
    closure_apply(m, d, d->cl_arhs, NULL, d->cl_f2);                                 /* (6.20) */
    closure_correction(m, d, active, d->cl_f2, d->cl_dq);
    for (int r = 0; r < m->nv; r++) qdd[r] = d->cl_qfree[r] + d->cl_dq[r];         /* (6.22g) */
    for (int i = 0; i < n; i++) d->cl_f[i] += d->cl_f2[i];
    return st;
}

/* Constrained forward dynamics by RCCFD1, 2 or 3 (seed 003 Part II); inputs and outputs in soa.h. */
soa_status soa_constrained_fd_method(const soa_model *m, soa_data *d, int method, const double *q,
                                     const double *qd, const double *tau, int use_fext,
                                     const int *active, const double *u, const double *udot,
                                     const double *anchors, double alpha, double beta,
                                     double *qdd, double *forces, double *residuals)
{
    soa_status st = {SOA_BAD_ARG, 3};
    if (method != SOA_RCCFD1 && method != SOA_RCCFD2 && method != SOA_RCCFD3) return st;
    st = check_fd_inputs(m, q, qd, tau, u, udot, anchors, alpha, beta);
    if (st.kind != SOA_OK) return st;
    if (method == SOA_RCCFD1)
        st = rccfd1(m, d, q, qd, tau, use_fext, active, u, udot, anchors, alpha, beta, qdd);
    else if (m->nm)
        st = rccfd23_flexible(m, d, method, q, qd, tau, use_fext, active, u, udot, anchors, alpha,
                              beta, qdd);
    else
        st = rccfd23(m, d, method, q, qd, tau, use_fext, active, u, udot, anchors, alpha, beta, qdd);
    if (st.kind != SOA_OK) return st;
    closure_outputs(m, d, active, forces, residuals);
    return st;
}

/* Constrained forward dynamics, steps (A)-(F) of seed 000 sec. 3 = RCCFD1 (seed 003 eq. 6.11). */
soa_status soa_constrained_fd(const soa_model *m, soa_data *d, const double *q, const double *qd,
                              const double *tau, int use_fext, const int *active, const double *u,
                              const double *udot, const double *anchors, double alpha, double beta,
                              double *qdd, double *forces, double *residuals)
{
    return soa_constrained_fd_method(m, d, SOA_RCCFD1, q, qd, tau, use_fext, active, u, udot,
                                     anchors, alpha, beta, qdd, forces, residuals);
}

/* beta+ closest to beta in the kinetic-energy metric with A J beta+ = U~ for the active
 * constraints: the impulse mu = (A Lambda^-1 A*)^-1 (A J beta - U~), beta+ = beta - M^-1 J* A* mu
 * (steps (C)-(E) on velocities): the velocity jump of an inelastic grasp. */
soa_status soa_project_velocities(const soa_model *m, soa_data *d, const double *q,
                                  const double *qd, const int *active, const double *u,
                                  double *qd_out)
{
    soa_status st = soa_check_state(m, q, qd);
    if (st.kind != SOA_OK) return st;
    st = check_closure_inputs(m, u, NULL, NULL, 0.0, 0.0);
    if (st.kind != SOA_OK) return st;
    if (m->nm) {                                          /* flexible bodies (rccfd1) */
        st = soa_flex_factor(m, d, q);
        if (st.kind != SOA_OK) return st;
        soa_outward_placements(m, d, q);
        soa_world_placements(m, d);
        soa_flex_velocities(m, d, qd);
        flex_inertial_motion(m, d, 0);
    } else {
        soa_outward_placements(m, d, q);
        soa_world_placements(m, d);
        const int k = soa_riccati_sweep(m, d, 1);         /* also Sw and Mw */
        if (k >= 0) {
            st.kind = SOA_SINGULAR;
            st.index = k;
            return st;
        }
        soa_inertial_velocities(m, d, qd);
    }
    closure_kinematics(m, d, active, NULL, 0);
    double scale = 1.0;                                    /* rhs_dyn = A V~ - U~ */
    for (int j = 0; j < m->nc; j++) {
        if (active && !active[j]) continue;
        for (int r = 0; r < m->cn_size[j]; r++) {
            const double v = dot6(m->cn_A + 36 * j + 6 * r, d->cl_Vrel + 6 * j) - (u ? u[6 * j + r] : 0.0);
            d->cl_rhs_dyn[d->cl_row0[j] + r] = v;
            d->cl_rhs_stab[d->cl_row0[j] + r] = 0.0;
            scale = fmax(scale, fabs(v));
        }
    }
    st = closure_solve_points(m, d, active, scale);
    if (st.kind != SOA_OK) return st;
    closure_correction(m, d, active, d->cl_f, d->cl_dq);
    for (int r = 0; r < m->nv; r++) qd_out[r] = qd[r] + d->cl_dq[r];
    return st;
}

/* Step (B) alone at (theta, beta, beta-dot): the closure points, V~, its derivative, the errors
 * and the right-hand sides of step (D), in the data (cl_*), by the inertial-frame sweeps. */
soa_status soa_closure_state(const soa_model *m, soa_data *d, const double *q, const double *qd,
                             const double *qdd, const int *active, const double *u,
                             const double *udot, const double *anchors, double alpha, double beta)
{
    soa_status st = soa_check_state(m, q, qd);
    if (st.kind != SOA_OK) return st;
    const int i = soa_first_nonfinite(qdd, m->nv);
    if (i >= 0) {
        st.kind = SOA_BAD_QDD;
        st.index = i;
        return st;
    }
    st = check_closure_inputs(m, u, udot, anchors, alpha, beta);
    if (st.kind != SOA_OK) return st;
    if (m->nm) {                     /* flexible bodies: Newton-Euler's outward sweep, converted */
        soa_flex_rnea(m, d, q, qd, qdd, 0, d->tau_j);
        soa_world_placements(m, d);
        flex_inertial_motion(m, d, 1);
    } else {
        soa_inertial_kinematics(m, d, q, qd);
        soa_inertial_accelerations(m, d, qdd, m->a0);
    }
    closure_kinematics(m, d, active, anchors, 1);
    closure_rhs(m, d, active, u, udot, alpha, beta);
    return st;
}

/* G = A (J_b - J_a), rows x nv, of the active constraints (J = B* phi* H*, seed 000 eq. 2.14),
 * in frame_a's axes, after soa_closure_state: for KKT checks, the dynamics never form it. */
void soa_closure_jacobian(const soa_model *m, soa_data *d, const int *active, double *G)
{
    const int nv = m->nv, n = d->cl_row0[m->nc];
    double *J = d->Y;                                      /* 6 x nv */
    for (int i = 0; i < n * nv; i++) G[i] = 0.0;
    for (int j = 0; j < m->nc; j++) {
        if (active && !active[j]) continue;
        double RA[9], xA[3], RB[9], xB[3];
        frame_in_world(d, m->cn_body_a[j], m->cn_Ra + 9 * j, m->cn_pa + 3 * j, RA, xA);
        frame_in_world(d, m->cn_body_b[j], m->cn_Rb + 9 * j, m->cn_pb + 3 * j, RB, xB);
        for (int side = 0; side < 2; side++) {
            const int k = side ? m->cn_body_b[j] : m->cn_body_a[j];
            if (k < 0) continue;
            soa_point_jacobian(m, d, k, xB, J);
            for (int c = 0; c < nv; c++) {
                double col[6], rel[6];                     /* the column in frame_a's axes */
                for (int i = 0; i < 6; i++) col[i] = J[i * nv + c];
                for (int i = 0; i < 3; i++) {
                    rel[i] = RA[i] * col[0] + RA[3 + i] * col[1] + RA[6 + i] * col[2];
                    rel[3 + i] = RA[i] * col[3] + RA[3 + i] * col[4] + RA[6 + i] * col[5];
                }
                for (int r = 0; r < m->cn_size[j]; r++)
                    G[(d->cl_row0[j] + r) * nv + c] += (side ? 1.0 : -1.0) * dot6(m->cn_A + 36 * j + 6 * r, rel);
            }
        }
    }
}

/* T (4 x 4, row-major): the pose of frame_b in frame_a of constraint j at theta (the target a
 * re-anchoring uses). */
soa_status soa_relative_pose(const soa_model *m, soa_data *d, const double *q, int j, double *T)
{
    soa_status st = {SOA_BAD_ARG, 2};
    if (j < 0 || j >= m->nc) return st;
    st = soa_check_configuration(m, q);
    if (st.kind != SOA_OK) return st;
    soa_outward_placements(m, d, q);
    soa_world_placements(m, d);
    double RA[9], xA[3], RB[9], xB[3];
    frame_in_world(d, m->cn_body_a[j], m->cn_Ra + 9 * j, m->cn_pa + 3 * j, RA, xA);
    frame_in_world(d, m->cn_body_b[j], m->cn_Rb + 9 * j, m->cn_pb + 3 * j, RB, xB);
    for (int i = 0; i < 3; i++) {
        for (int k = 0; k < 3; k++) T[4 * i + k] = RA[i] * RB[k] + RA[3 + i] * RB[3 + k] + RA[6 + i] * RB[6 + k];
        T[4 * i + 3] = RA[i] * (xB[0] - xA[0]) + RA[3 + i] * (xB[1] - xA[1]) + RA[6 + i] * (xB[2] - xA[2]);
        T[12 + i] = 0.0;
    }
    T[15] = 1.0;
    return st;
}

/* T = the target pose T0 of constraint j moved by the prescribed velocity U~ held for dt: the twist
 * A* U~ (frame_a axes) turns R0 by exp(dt w) on the left and shifts p0 by dt v, so e stays 0 while
 * A V~ = U~. */
soa_status soa_advance_anchor(const soa_model *m, int j, const double *T0, const double *u,
                              double dt, double *T)
{
    soa_status st = {SOA_BAD_ARG, 2};
    if (j < 0 || j >= m->nc) return st;
    st.kind = SOA_BAD_ANCHOR;
    st.index = j;
    if (soa_first_nonfinite(T0, 16) >= 0) return st;
    st.kind = SOA_BAD_U;
    if (soa_first_nonfinite(u, m->cn_size[j]) >= 0) return st;
    st.kind = SOA_BAD_ARG;
    st.index = 0;
    if (!isfinite(dt)) return st;
    st.kind = SOA_OK;
    double tw[6] = {0, 0, 0, 0, 0, 0};
    for (int r = 0; r < m->cn_size[j]; r++)
        for (int i = 0; i < 6; i++) tw[i] += m->cn_A[36 * j + 6 * r + i] * u[r];
    for (int i = 0; i < 16; i++) T[i] = T0[i];
    const double w = sqrt(tw[0] * tw[0] + tw[1] * tw[1] + tw[2] * tw[2]), th = w * dt;
    if (th > 0.0) {
        const double ax[3] = {tw[0] / w, tw[1] / w, tw[2] / w};
        double E[9];
        axis_angle_to_matrix(ax, th, E);
        for (int i = 0; i < 3; i++)
            for (int k = 0; k < 3; k++)
                T[4 * i + k] = E[3 * i] * T0[k] + E[3 * i + 1] * T0[4 + k] + E[3 * i + 2] * T0[8 + k];
    }
    for (int i = 0; i < 3; i++) T[4 * i + 3] += dt * tw[3 + i];
    return st;
}
