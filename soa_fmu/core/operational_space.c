/* Operational-space inertia by the Omega recursion, and tip-force correction accelerations
 * (SPEC E10): seed 000 eq. 3.10 with Appendix A (A.3)-(A.6), seed 002 eqs. 18-20, seed 003
 * Part II eqs. 6.7-6.10.
 *
 *   J M^-1 J* = B* psi* H* D^-1 H psi B = B* Omega B,   Omega = psi* H* D^-1 H psi       (3.10)
 *
 * Omega is never formed.  Its diagonal blocks Upsilon(k) = Omega(k, k) follow the outward
 * recursion (A.3)-(A.5)
 *
 *   Upsilon(k) = psi*(p, k) Upsilon(p) psi(p, k) + H*(k) D^-1(k) H(k),  psi(p, k) = phi(p, k) tau-bar(k)
 *
 * and the block between bodies i and j whose deepest common ancestor is c (c = i or j on one
 * branch, or a branching body) is Omega(i, j) = psi*(c, i) Upsilon(c) psi(c, j) (A.5); 0 when
 * i and j hang from world on different roots.  So for points C_s on bodies k_s,
 *
 *   Lambda^-1(s, t) = [psi(c, k_s) B_s]* Upsilon(c) [psi(c, k_t) B_t].
 *
 * Everything runs in the inertial frame (world axes at the world origin, seed 004 sec. 5), where
 * phi is the identity: psi(p, k) = tau-bar(k) and B_s = phi(I, C_s).  Upsilon is swept over the
 * paths from the points to the base only; psi(c, k) of each body carrying points is carried up
 * its path in one inward sweep, and a pair is formed where the two paths meet: O(N) for the
 * Riccati factors + O(sum of the points' depths) + O(npt^2) 6 x 6 products, in O(nb) memory.
 *
 * Correction accelerations (seed 002 eq. 18; seed 000 eq. 3.12 by (A.6)): Delta beta-dot =
 * M^-1 J* f = [I - H psi K]* D^-1 H psi B f is the bias-free innovations filter and smoother of
 * articulated.c with the forces f as the only input. */
#include "soa.h"
#include "spatial.h"

/* X <- tau-bar(k) X = X - G(k) H(k) X for a 6 x 6 block of forces (seed 000 eq. 3.2, A.1). */
static void tau_bar_block(const soa_model *m, const soa_data *d, int k, double *X)
{
    const int n = m->nvj[k];
    const double *H = d->Sw + 6 * m->v0[k], *G = d->G + 36 * k;
    for (int c = 0; c < 6; c++) {
        double hx[6];
        for (int dd = 0; dd < n; dd++) {
            hx[dd] = 0.0;
            for (int i = 0; i < 6; i++) hx[dd] += H[6 * dd + i] * X[6 * i + c];
        }
        for (int i = 0; i < 6; i++)
            for (int dd = 0; dd < n; dd++) X[6 * i + c] -= G[6 * i + dd] * hx[dd];
    }
}

/* X <- tau-bar*(k) X tau-bar(k) + H*(k) D^-1(k) H(k) for a symmetric 6 x 6 X: the joint step of
 * (A.5).  With Y = X G and Gamma = G* Y + D^-1:  X - Y H - H* Y* + H* Gamma H. */
static void tau_bar_congruence(const soa_model *m, const soa_data *d, int k, double *X)
{
    const int n = m->nvj[k];
    const double *H = d->Sw + 6 * m->v0[k], *G = d->G + 36 * k, *Dinv = d->Dinv + 36 * k;
    double Y[36], Gam[36];
    if (n == 0) return;
    for (int i = 0; i < 6; i++)
        for (int dd = 0; dd < n; dd++) {
            double s = 0.0;
            for (int j = 0; j < 6; j++) s += X[6 * i + j] * G[6 * j + dd];
            Y[6 * i + dd] = s;
        }
    for (int dd = 0; dd < n; dd++)
        for (int e = 0; e < n; e++) {
            double s = Dinv[6 * dd + e];
            for (int i = 0; i < 6; i++) s += G[6 * i + dd] * Y[6 * i + e];
            Gam[6 * dd + e] = s;
        }
    for (int i = 0; i < 6; i++)
        for (int j = i; j < 6; j++) {
            double s = X[6 * i + j];
            for (int dd = 0; dd < n; dd++) {
                const double hi = H[6 * dd + i], hj = H[6 * dd + j];
                s -= Y[6 * i + dd] * hj + hi * Y[6 * j + dd];
                for (int e = 0; e < n; e++) s += hi * Gam[6 * dd + e] * H[6 * e + j];
            }
            X[6 * i + j] = X[6 * j + i] = s;
        }
}

/* alpha(k) = psi*(k, p) alpha(p) + H*(k) nu(k) = alpha(p) + H*(k) (nu(k) - G*(k) alpha(p)) (the
 * bias-free smoother's step, seed 001 eqs. 52-54, inertial frame), alpha(world) = 0. */
static void psi_star_step(const soa_model *m, soa_data *d, int k, int p, const double *nu)
{
    const int v0 = m->v0[k], n = m->nvj[k];
    const double *G = d->G + 36 * k, *H = d->Sw + 6 * v0;
    double *al = d->alpha + 6 * k, x[6];
    for (int i = 0; i < 6; i++) al[i] = p < 0 ? 0.0 : d->alpha[6 * p + i];
    for (int dd = 0; dd < n; dd++) {
        x[dd] = nu[v0 + dd];
        for (int i = 0; i < 6; i++) x[dd] -= G[6 * i + dd] * al[i];
    }
    for (int dd = 0; dd < n; dd++)
        for (int i = 0; i < 6; i++) al[i] += H[6 * dd + i] * x[dd];
}

/* Upsilon(k) = tau-bar*(k) Upsilon(p) tau-bar(k) + H*(k) D^-1(k) H(k), base to tip, on the marked
 * paths (seed 000 A.3-A.5; seed 002 eq. 20; seed 003 eq. 6.10), Upsilon(world) = 0.  With nu,
 * the same pass carries alpha = psi* H* nu along the paths (seed 003 eq. 6.13: the anticausal
 * filtering that builds Omega on the way). */
static void omega_sweep(const soa_model *m, soa_data *d, const double *nu)
{
    for (int k = 0; k < m->nb; k++) {
        if (!d->os_mask[k]) continue;
        double *U = d->os_Ups + 36 * k;
        const int p = m->parent[k];
        for (int i = 0; i < 36; i++) U[i] = p < 0 ? 0.0 : d->os_Ups[36 * p + i];
        tau_bar_congruence(m, d, k, U);
        if (nu) psi_star_step(m, d, k, p, nu);
    }
}

/* B = phi(I, C): point s's forces moved to the world origin (world axes), 6 x 6. */
static void point_map(const soa_data *d, int k, const double *R, const double *l, int world_axes,
                      double *B)
{
    const double *Rw = d->Rw + 9 * k, *pw = d->pw + 3 * k;
    double Rp[9], x[3];
    for (int i = 0; i < 3; i++) {
        x[i] = pw[i] + Rw[3 * i] * l[0] + Rw[3 * i + 1] * l[1] + Rw[3 * i + 2] * l[2];
        for (int j = 0; j < 3; j++)
            Rp[3 * i + j] = world_axes ? (i == j ? 1.0 : 0.0)
                                       : Rw[3 * i] * R[j] + Rw[3 * i + 1] * R[3 + j] + Rw[3 * i + 2] * R[6 + j];
    }
    for (int c = 0; c < 6; c++) {
        double e[6] = {0, 0, 0, 0, 0, 0}, col[6] = {0, 0, 0, 0, 0, 0};
        e[c] = 1.0;
        add_phi(Rp, x, e, col);
        for (int i = 0; i < 6; i++) B[6 * i + c] = col[i];
    }
}

/* out = A B for 6 x 6 blocks. */
static void mul6(const double *A, const double *B, double *out)
{
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++) {
            double s = 0.0;
            for (int r = 0; r < 6; r++) s += A[6 * i + r] * B[6 * r + j];
            out[6 * i + j] = s;
        }
}

/* Z = psi(c, k_s) B_s for point s, its carrier's psi having got to c. */
static void carried_point(const soa_data *d, int k, const double *R, const double *l, int world_axes,
                          double *Z)
{
    double B[36];
    point_map(d, k, R, l, world_axes, B);
    mul6(d->os_Psi + 36 * k, B, Z);
}

/* Pairs of points meeting first at body c (their carriers came through different children of c,
 * or one starts at c): Lambda^-1(s, t) = Z_s* Upsilon(c) Z_t (seed 000 A.5). */
static void pairs_at(soa_data *d, int c, int npt, const int *body,
                     const double *R, const double *l, int world_axes, double *L)
{
    const int ld = 6 * npt;
    for (int t = 0; t < npt; t++) {
        const int bt = body[t];
        if (bt < 0 || d->os_at[bt] != c) continue;
        double Zt[36], W[36];
        carried_point(d, bt, R + 9 * t, l + 3 * t, world_axes, Zt);
        mul6(d->os_Ups + 36 * c, Zt, W);
        for (int s = 0; s <= t; s++) {
            const int bs = body[s];
            if (bs < 0 || d->os_at[bs] != c) continue;
            if (d->os_from[bs] >= 0 && d->os_from[bs] == d->os_from[bt]) continue;   /* met below */
            double Zs[36];
            if (s == t)
                for (int i = 0; i < 36; i++) Zs[i] = Zt[i];
            else
                carried_point(d, bs, R + 9 * s, l + 3 * s, world_axes, Zs);
            for (int i = 0; i < 6; i++)
                for (int j = 0; j < 6; j++) {
                    double a = 0.0;
                    for (int r = 0; r < 6; r++) a += Zs[6 * r + i] * W[6 * r + j];
                    L[(6 * s + i) * ld + 6 * t + j] = L[(6 * t + j) * ld + 6 * s + i] = a;
                }
        }
    }
}

/* The 6 x nv rows J of point (R, l) of body k: its velocity [w; v] in its own axes (world_axes:
 * world axes) per unit beta, from the world-axes point Jacobian (kinematics.c; with flexible
 * bodies it holds the parents' modal columns Gamma, seed 000 eq. 4.1).  Needs the placements. */
static void point_rows(const soa_model *m, soa_data *d, int k, const double *R, const double *l,
                       int world_axes, double *J)
{
    const int nv = m->nv;
    const double *Rw = d->Rw + 9 * k, *pw = d->pw + 3 * k;
    double x[3], Rp[9];
    for (int i = 0; i < 3; i++) {
        x[i] = pw[i] + Rw[3 * i] * l[0] + Rw[3 * i + 1] * l[1] + Rw[3 * i + 2] * l[2];
        for (int j = 0; j < 3; j++)
            Rp[3 * i + j] = Rw[3 * i] * R[j] + Rw[3 * i + 1] * R[3 + j] + Rw[3 * i + 2] * R[6 + j];
    }
    soa_point_jacobian(m, d, k, x, J);
    if (world_axes) return;
    for (int c = 0; c < nv; c++)                           /* rows to the point's axes: Rp* */
        for (int h = 0; h < 6; h += 3) {
            const double a = J[h * nv + c], b = J[(h + 1) * nv + c], e = J[(h + 2) * nv + c];
            for (int i = 0; i < 3; i++) J[(h + i) * nv + c] = Rp[i] * a + Rp[3 + i] * b + Rp[6 + i] * e;
        }
}

/* Lambda^-1 = J M^-1 J* of a point set with flexible bodies (seed 000 eq. 3.10 with the bodies'
 * (V, eta-dot), sec. 4): per point t its rows J_t (point_rows), X_t = M^-1 J_t* by the bias-free
 * filter and smoother on the held factors of flexible.c (soa_flex_solve, seed 001 Identity 6:
 * O(N) per column), then Lambda^-1(s, t) = J_s X_t.  O(npt N + npt^2 nv).  Needs the factors
 * (soa_flex_fd or soa_flex_factor at theta) and the placements with the node columns
 * (soa_outward_placements, soa_world_placements). */
static void flex_point_inertia_inverse(const soa_model *m, soa_data *d, int npt, const int *body,
                                       const double *R, const double *l, int world_axes, double *L)
{
    const int nv = m->nv, ld = 6 * npt;
    double *J = d->os_J, *X = d->os_X;
    for (int i = 0; i < 36 * npt * npt; i++) L[i] = 0.0;
    for (int t = 0; t < npt; t++) {
        if (body[t] < 0) continue;                         /* a point of world: no motion */
        point_rows(m, d, body[t], R + 9 * t, l + 3 * t, world_axes, J);
        for (int i = 0; i < nv; i++)
            for (int c = 0; c < 6; c++) X[6 * i + c] = J[c * nv + i];
        soa_flex_solve(m, d, X, 6, 6);
        for (int s = t; s >= 0; s--) {                    /* J holds J_t first */
            if (body[s] < 0) continue;
            if (s < t) point_rows(m, d, body[s], R + 9 * s, l + 3 * s, world_axes, J);
            for (int i = 0; i < 6; i++)
                for (int j = 0; j < 6; j++) {
                    double a = 0.0;
                    for (int r = 0; r < nv; r++) a += J[i * nv + r] * X[6 * r + j];
                    L[(6 * s + i) * ld + 6 * t + j] = L[(6 * t + j) * ld + 6 * s + i] = a;
                }
        }
    }
}

/* Lambda^-1 = B* Omega B = J M^-1 J* of a point set (soa.h) by the Omega recursion: mark the paths,
 * sweep Upsilon outward, then one inward sweep carrying psi(c, k) of every body carrying points
 * (psi(p, b) = tau-bar(k) psi(k, b), seed 000 A.5) and forming each pair at its deepest common
 * ancestor.  Needs the inertial-frame Riccati factors and world placements.  nu (NULL: none):
 * the innovations of a bias-free filter; alpha = psi* H* nu is then left in d->alpha on the
 * paths (omega_sweep). */
void soa_point_inertia_inverse(const soa_model *m, soa_data *d, int npt, const int *body,
                               const double *R, const double *l, int world_axes, const double *nu,
                               double *L)
{
    const int nb = m->nb;
    if (m->nm) {                                       /* flexible bodies (nu: rigid only) */
        flex_point_inertia_inverse(m, d, npt, body, R, l, world_axes, L);
        return;
    }
    for (int i = 0; i < 36 * npt * npt; i++) L[i] = 0.0;
    for (int k = 0; k < nb; k++) {
        d->os_mask[k] = 0;
        d->os_at[k] = -2;
    }
    for (int s = 0; s < npt; s++) {
        const int b = body[s];
        if (b < 0) continue;
        d->os_at[b] = b;
        d->os_from[b] = -1;
        for (int i = 0; i < 36; i++) d->os_Psi[36 * b + i] = (i % 7 == 0) ? 1.0 : 0.0;
        for (int k = b; k >= 0 && !d->os_mask[k]; k = m->parent[k]) d->os_mask[k] = 1;
    }
    omega_sweep(m, d, nu);
    for (int k = nb - 1; k >= 0; k--) {
        if (!d->os_mask[k]) continue;
        int junction = 0, from = -2;                   /* do any two paths meet at k? */
        for (int s = 0; s < npt && !junction; s++) {
            const int b = body[s];
            if (b < 0 || d->os_at[b] != k) continue;
            if (d->os_from[b] < 0 || (from != -2 && from != d->os_from[b])) junction = 1;
            from = d->os_from[b];
        }
        if (junction) pairs_at(d, k, npt, body, R, l, world_axes, L);
        for (int s = 0; s < npt; s++) {                /* carry psi up: psi(p, b) = tau-bar(k) psi(k, b) */
            const int b = body[s];
            if (b < 0 || d->os_at[b] != k) continue;
            tau_bar_block(m, d, k, d->os_Psi + 36 * b);
            d->os_from[b] = k;
            d->os_at[b] = m->parent[k] >= 0 ? m->parent[k] : -2;
        }
    }
}

/* Delta beta-dot = M^-1 H phi f for body forces fext (body frames, at the body origins):
 * [I - H psi K]* D^-1 H psi f (seed 000 A.6; seed 002 eq. 18; seed 003 eq. 6.11g), the bias-free
 * filter with the forces as its only input and the bias-free smoother from a zero base, in the
 * inertial frame.  Overwrites d->f, d->eps, d->nu, d->alpha (= Delta alpha). */
void soa_correction_sweep(const soa_model *m, soa_data *d, const double *fext, double *dqdd)
{
    static const double zero6[6] = {0, 0, 0, 0, 0, 0};
    for (int i = 0; i < m->nv; i++) d->zerov[i] = 0.0;
    if (m->nm) {                                       /* flexible.c's factored form */
        soa_flex_solve_forces(m, d, d->zerov, fext, dqdd);
        return;
    }
    soa_innovations_filter(m, d, d->zerov, 0, fext, 1);
    soa_innovations_smoother(m, d, zero6, 0, dqdd, 1);
}

/* Placements and the inertial-frame Riccati sweep at theta (checked). */
static soa_status articulated_factors(const soa_model *m, soa_data *d, const double *q)
{
    soa_status st = soa_check_configuration(m, q);
    if (st.kind != SOA_OK) return st;
    soa_outward_placements(m, d, q);
    soa_world_placements(m, d);
    const int k = soa_riccati_sweep(m, d, 1);
    if (k >= 0) {
        st.kind = SOA_SINGULAR;
        st.index = k;
    }
    return st;
}

soa_status soa_operational_space_inverse(const soa_model *m, soa_data *d, const double *q, int npt,
                                         const int *body, const double *R, const double *l,
                                         int world_axes, double *L)
{
    soa_status st = {SOA_BAD_FRAME, 0};
    for (int s = 0; s < npt; s++) {
        st.index = s;
        if (body[s] < -1 || body[s] >= m->nb) return st;
        if (soa_first_nonfinite(R + 9 * s, 9) >= 0 || soa_first_nonfinite(l + 3 * s, 3) >= 0)
            return st;
    }
    if (m->nm) {                                   /* flexible bodies: the factored form */
        st = soa_check_configuration(m, q);
        if (st.kind == SOA_OK) st = soa_flex_factor(m, d, q);
        if (st.kind != SOA_OK) return st;
        soa_outward_placements(m, d, q);              /* + the node columns Gamma of the Jacobians */
        soa_world_placements(m, d);
    } else {
        st = articulated_factors(m, d, q);
        if (st.kind != SOA_OK) return st;
    }
    soa_point_inertia_inverse(m, d, npt, body, R, l, world_axes, NULL, L);
    return st;
}

soa_status soa_correction_accelerations(const soa_model *m, soa_data *d, const double *q,
                                        const double *fext, double *dqdd)
{
    soa_status st = {SOA_BAD_FEXT, 0};
    for (int k = 0; k < m->nb; k++)
        if (soa_first_nonfinite(fext + 6 * k, 6) >= 0) {
            st.index = k;
            return st;
        }
    if (m->nm) {                                    /* flexible.c: the same factored form */
        st = soa_check_configuration(m, q);
        if (st.kind == SOA_OK) st = soa_flex_factor(m, d, q);
    } else {
        st = articulated_factors(m, d, q);
    }
    if (st.kind != SOA_OK) return st;
    soa_correction_sweep(m, d, fext, dqdd);
    return st;
}
