/* Derivatives of inverse and forward dynamics (the linearization; seed 004 sec. 5.2 frames).
 *
 * Derivatives are along the velocity directions, as in sensitivities.c.  A motion along dof i
 * (body n, parent lam) moves the subtree of n rigidly by exp(e s(i)), s(i) = H*_I(i), so every
 * inertial-frame quantity of the subtree rotates with it (seed 004 eqs. 3.19-3.21, 3.25-3.27) and
 * the relative velocities and accelerations with it.  Differentiating the Newton-Euler recursion
 * f(k) = M_I alpha + V x* M_I V - f_ext, T = H f (seed 001 eqs. 23-27, inertial frame) under that
 * motion, with R_I, Rdot, h (sensitivities.c) and the composite force f (all O(N)):
 *
 *     dT(a)/dtheta_i = -F(a) . y(i) - K(a) . u(i)                        i <= a
 *                    =  s(a) . [s(i) x* f(n) - R_I(n) y(i) - Rdot(n) u(i) - u(i) x* h(n)]
 *                    =  s(a) . z(i)                                       a < i
 *     dT(a)/dbeta_i  =  K(a) . s(i) + F(a) . c(i)                         i <= a
 *                    =  s(a) . [Rdot(n) s(i) + R_I(n) c(i) + s(i) x* h(n)]  =  s(a) . zbar(i)    a < i
 *
 * with F(a) = R_I s(a), K(a) = Rdot s(a) - s(a) x* h (body of a), u(i) = s(i) x~ V_I(lam),
 * y(i) = s(i) x~ alpha_I(lam) - u(i) x~ V_I(lam), c(i) = (V_I(n) + V_I(lam)) x~ s(i); gravity is the
 * base acceleration alpha(world) = [0; -g], and f_ext is fixed in its body.  Forward dynamics:
 * beta-dot = M^-1 (T - C - g), so d(beta-dot) = -M^-1 dT at beta-dot (the analogue of Pinocchio's
 * computeABADerivatives), M^-1 applied by the innovations filter and smoother (seed 001 eqs. 49-54,
 * Identity 6) to the columns of dT: O(N nv) for each matrix (for nv <= SMALL_NV, a dense product
 * with the M^-1 computed anyway is cheaper). */
#include <stddef.h>

#include "soa.h"
#include "spatial.h"

/* alpha_I(k) = alpha_I(p) + H*_I(k) beta-dot(k) + a_I(k), alpha(world) = [0; -g]: the acceleration
 * sweep of seed 001 eq. 25 in the inertial frame (phi* is the identity).  Needs
 * soa_inertial_velocities (a_I). */
static void inertial_accelerations(const soa_model *m, soa_data *d, const double *qdd)
{
    for (int k = 0; k < m->nb; k++) {
        const int p = m->parent[k];
        const double *ap = p < 0 ? m->a0 : d->alpha + 6 * p;
        double *al = d->alpha + 6 * k;
        for (int i = 0; i < 6; i++) al[i] = ap[i] + d->a[6 * k + i];
        for (int a = m->v0[k]; a < m->v0[k] + m->nvj[k]; a++)
            for (int i = 0; i < 6; i++) al[i] += d->Sw[6 * a + i] * qdd[a];
    }
}

/* f(k) = sum_{c >= k} [M_I alpha_I + b_I - phi(I, c) f_ext(c)]: the composite forces of seed 001
 * eq. 24 in the inertial frame (phi is the identity, the inward pass is a plain sum). */
static void inertial_forces(const soa_model *m, soa_data *d, int use_fext)
{
    for (int k = 0; k < m->nb; k++) {
        double *f = d->f + 6 * k, fe[6] = {0, 0, 0, 0, 0, 0};
        matvec6(d->Mw + 36 * k, d->alpha + 6 * k, f);
        if (use_fext) add_phi(d->Rw + 9 * k, d->pw + 3 * k, d->fext + 6 * k, fe);
        for (int i = 0; i < 6; i++) f[i] += d->b[6 * k + i] - fe[i];
    }
    for (int k = m->nb - 1; k >= 0; k--)
        if (m->parent[k] >= 0)
            for (int i = 0; i < 6; i++) d->f[6 * m->parent[k] + i] += d->f[6 * k + i];
}

/* x -> column i of a component-major 6 x nv block. */
static inline void store_column(double *block, int nv, int i, const double *x)
{
    for (int c = 0; c < 6; c++) block[c * nv + i] = x[c];
}

/* s(i), u(i), y(i), c(i), z(i), zbar(i) of every dof i (component-major) and K(i) (the header's
 * formulas).  Needs V_I, alpha_I, f and soa_composite_rates. */
static void derivative_vectors(const soa_model *m, soa_data *d)
{
    static const double zero6[6] = {0, 0, 0, 0, 0, 0};
    const int nv = m->nv;
    for (int n = 0; n < m->nb; n++) {
        const int p = m->parent[n];
        const double *vlam = p < 0 ? zero6 : d->V + 6 * p, *alam = p < 0 ? m->a0 : d->alpha + 6 * p;
        const double *R = d->Ri + 10 * n, *Rd = d->Rdot + 10 * n, *h = d->hc + 6 * n;
        double vl[6];
        for (int c = 0; c < 6; c++) vl[c] = d->V[6 * n + c] + vlam[c];
        for (int i = m->v0[n]; i < m->v0[n] + m->nvj[n]; i++) {
            const double *s = d->Sw + 6 * i;
            double *K = d->lin_K + 6 * i, u[6], y[6], cv[6], z[6], zb[6], t[6], g[6];
            cross_motion(s, vlam, u);                  /* u = s x~ v(lam) */
            cross_motion(s, alam, y);
            cross_motion(u, vlam, t);
            for (int c = 0; c < 6; c++) y[c] -= t[c];  /* y = s x~ alpha(lam) - u x~ v(lam) */
            cross_motion(vl, s, cv);                   /* c = (v(n) + v(lam)) x~ s */
            inertia_apply(Rd, s, K);
            cross_force(s, h, g);
            inertia_apply(R, cv, t);
            for (int c = 0; c < 6; c++) {
                zb[c] = K[c] + g[c] + t[c];            /* zbar = Rdot s + s x* h + R c */
                K[c] -= g[c];                          /* K = Rdot s - s x* h */
            }
            cross_force(s, d->f + 6 * n, z);
            inertia_apply(R, y, t);
            for (int c = 0; c < 6; c++) z[c] -= t[c];
            inertia_apply(Rd, u, t);
            cross_force(u, h, g);
            for (int c = 0; c < 6; c++) z[c] -= t[c] + g[c];   /* z = s x* f - R y - Rdot u - u x* h */
            store_column(d->lin_s, nv, i, s);
            store_column(d->lin_u, nv, i, u);
            store_column(d->lin_y, nv, i, y);
            store_column(d->lin_c, nv, i, cv);
            store_column(d->lin_z, nv, i, z);
            store_column(d->lin_zb, nv, i, zb);
        }
    }
}

/* The entries (a, i) of one row a, i in [i0, i1), i <= a (i's body an ancestor of a's, or a's):
 *     dq = -scale (F(a) . y(i) + K(a) . u(i)),   dv = scale (K(a) . s(i) + F(a) . c(i)),
 * over the component-major blocks (row stride nv) of y, u, s, c.  (Row pointers and a ptrdiff_t
 * index keep the loop vectorized and strength-reduced under -fwrapv.) */
static void row_above(const double *F, const double *K, double scale, const double *Y,
                      const double *U, const double *S, const double *Cv, int nv,
                      double *restrict dq, double *restrict dv, int i0, int i1)
{
    const double f0 = scale * F[0], f1 = scale * F[1], f2 = scale * F[2], f3 = scale * F[3],
                 f4 = scale * F[4], f5 = scale * F[5];
    const double k0 = scale * K[0], k1 = scale * K[1], k2 = scale * K[2], k3 = scale * K[3],
                 k4 = scale * K[4], k5 = scale * K[5];
    const ptrdiff_t ld = nv, n = i1 - i0;
    const double *restrict y0 = Y + i0, *restrict u0 = U + i0, *restrict s0 = S + i0,
                 *restrict c0 = Cv + i0;
    double *restrict q = dq + i0, *restrict v = dv + i0;
    for (ptrdiff_t i = 0; i < n; i++) {
        q[i] = -((((f0 * y0[i] + f1 * y0[ld + i]) + (f2 * y0[2 * ld + i] + f3 * y0[3 * ld + i]))
                  + (f4 * y0[4 * ld + i] + f5 * y0[5 * ld + i]))
                 + (((k0 * u0[i] + k1 * u0[ld + i]) + (k2 * u0[2 * ld + i] + k3 * u0[3 * ld + i]))
                    + (k4 * u0[4 * ld + i] + k5 * u0[5 * ld + i])));
        v[i] = (((k0 * s0[i] + k1 * s0[ld + i]) + (k2 * s0[2 * ld + i] + k3 * s0[3 * ld + i]))
                + (k4 * s0[4 * ld + i] + k5 * s0[5 * ld + i]))
             + (((f0 * c0[i] + f1 * c0[ld + i]) + (f2 * c0[2 * ld + i] + f3 * c0[3 * ld + i]))
                + (f4 * c0[4 * ld + i] + f5 * c0[5 * ld + i]));
    }
}

/* The entries (a, i) of one row a, i in [i0, i1), a < i:  dq = scale s(a) . z(i),
 * dv = scale s(a) . zbar(i). */
static void row_below(const double *s, double scale, const double *Z, const double *Zb, int nv,
                      double *restrict dq, double *restrict dv, int i0, int i1)
{
    const double s0 = scale * s[0], s1 = scale * s[1], s2 = scale * s[2], s3 = scale * s[3],
                 s4 = scale * s[4], s5 = scale * s[5];
    const ptrdiff_t ld = nv, n = i1 - i0;
    const double *restrict z = Z + i0, *restrict zb = Zb + i0;
    double *restrict q = dq + i0, *restrict v = dv + i0;
    for (ptrdiff_t i = 0; i < n; i++) {
        q[i] = ((s0 * z[i] + s1 * z[ld + i]) + (s2 * z[2 * ld + i] + s3 * z[3 * ld + i]))
             + (s4 * z[4 * ld + i] + s5 * z[5 * ld + i]);
        v[i] = ((s0 * zb[i] + s1 * zb[ld + i]) + (s2 * zb[2 * ld + i] + s3 * zb[3 * ld + i]))
             + (s4 * zb[4 * ld + i] + s5 * zb[5 * ld + i]);
    }
}

/* scale * dT/dtheta into dq, scale * dT/dbeta into dv (nv x nv, rows of stride ld): the header's
 * pairs, one row a at a time over runs of consecutive dofs (a chain's row is two runs): the dofs of
 * a's body and its ancestors (the runs arun0, arunup of the model), then those of its descendants
 * (the depth-first columns after a's body's within its subtree).  Entries of dofs on different
 * branches are 0. */
static void derivative_pairs(const soa_model *m, const soa_data *d, double scale, double *dq,
                             double *dv, int ld)
{
    const int nv = m->nv;
    int chain = 1;                                     /* then every pair is written */
    for (int k = 0; k < m->nb; k++) chain &= m->parent[k] == k - 1;
    for (int A = 0; A < m->nb; A++)
        for (int a = m->v0[A]; a < m->v0[A] + m->nvj[A]; a++) {
            double *qa = dq + a * ld, *va = dv + a * ld;
            const double *F = d->Fs + 6 * a, *K = d->lin_K + 6 * a, *s = d->Sw + 6 * a;
            if (!chain) {
                for (int c = 0; c < nv; c++) qa[c] = 0.0;
                for (int c = 0; c < nv; c++) va[c] = 0.0;
            }
            row_above(F, K, scale, d->lin_y, d->lin_u, d->lin_s, d->lin_c, nv, qa, va, m->arun0[A],
                      m->v0[A] + m->nvj[A]);                           /* a's body and ancestors */
            for (int I = m->arunup[A]; I >= 0; I = m->arunup[I])
                row_above(F, K, scale, d->lin_y, d->lin_u, d->lin_s, d->lin_c, nv, qa, va, m->arun0[I],
                          m->v0[I] + m->nvj[I]);
            if (m->dfs_identity) {                                     /* descendants */
                row_below(s, scale, d->lin_z, d->lin_zb, nv, qa, va, m->v0[A] + m->nvj[A], m->dfsend[A]);
                continue;
            }
            for (int c = m->dfs0[A] + m->nvj[A]; c < m->dfsend[A];) {
                int e = c + 1;
                while (e < m->dfsend[A] && m->vcol[e] == m->vcol[e - 1] + 1) e++;
                row_below(s, scale, d->lin_z, d->lin_zb, nv, qa, va, m->vcol[c], m->vcol[c] + e - c);
                c = e;
            }
        }
}

/* Up to this many dofs, M^-1 dT is a dense product (nv^3 per matrix) rather than the filter and
 * smoother on its columns (~24 N nv multiply-adds per matrix, in shorter loops). */
#define SMALL_NV 12

/* out1 = M^-1 T(:, 0:nv), out2 = M^-1 T(:, nv:2nv) (T: nv x 2nv, row stride ldt; outputs: row
 * stride ld). */
static void minv_times(int nv, const double *Minv, const double *T, int ldt, double *out1,
                       double *out2, int ld)
{
    for (int r = 0; r < nv; r++) {
        double *restrict o1 = out1 + (ptrdiff_t)r * ld, *restrict o2 = out2 + (ptrdiff_t)r * ld;
        for (int c = 0; c < nv; c++) o1[c] = o2[c] = 0.0;
        for (int k = 0; k < nv; k++) {
            const double a = Minv[(ptrdiff_t)r * nv + k];
            const double *restrict t = T + (ptrdiff_t)k * ldt;
            for (int c = 0; c < nv; c++) {
                o1[c] += a * t[c];
                o2[c] += a * t[nv + c];
            }
        }
    }
}

/* (dT/dtheta, dT/dbeta) of T = inverse dynamics (theta, beta, beta-dot) into dq, dv (nv x nv, row
 * stride ld), f_ext (d->fext) included when use_fext: the inertial-frame Newton-Euler sweeps
 * (placements, H*_I, M_I, V_I), then the header's O(N nv) pairs (the analogue of Pinocchio's
 * computeRNEADerivatives). */
soa_status soa_rnea_derivatives(const soa_model *m, soa_data *d, const double *q, const double *qd,
                                const double *qdd, int use_fext, double *dq, double *dv, int ld)
{
    soa_status st = soa_check_state(m, q, qd);
    if (st.kind != SOA_OK) return st;
    const int i = soa_first_nonfinite(qdd, m->nv);
    if (i >= 0) {
        st.kind = SOA_BAD_QDD;
        st.index = i;
        return st;
    }
    if (m->nm) return soa_flex_rnea_derivatives(m, d, q, qd, qdd, use_fext, dq, dv, ld);
    soa_inertial_kinematics(m, d, q, qd);
    inertial_accelerations(m, d, qdd);
    inertial_forces(m, d, use_fext);
    soa_composite_rates(m, d);
    derivative_vectors(m, d);
    derivative_pairs(m, d, 1.0, dq, dv, ld);
    return st;
}

/* (d beta-dot/dtheta, d beta-dot/dbeta) of beta-dot = forward dynamics (theta, beta, tau) into ddq,
 * ddv (nv x nv, row stride ld), and M^-1 (nv x nv, contiguous): soa_aba (the innovations algorithm,
 * leaving beta-dot, V_I, alpha_I, H*_I and the Riccati factors G, D^-1 in the data; M_I formed
 * after it), M^-1 from
 * those factors (seed 001 Identity 6), the composite forces at beta-dot, -dT by the header's pairs,
 * and d beta-dot = M^-1 (-dT) by the filter and smoother on its columns, or for a few dofs as a
 * dense product. */
soa_status soa_aba_derivatives(const soa_model *m, soa_data *d, const double *q, const double *qd,
                               const double *tau, int use_fext, double *ddq, double *ddv, int ld,
                               double *Minv)
{
    const soa_status st = soa_aba(m, d, q, qd, tau, use_fext, d->lin_qdd);
    if (st.kind != SOA_OK) return st;
    if (m->nm) return soa_flex_aba_derivatives(m, d, q, qd, tau, use_fext, ddq, ddv, ld, Minv);
    soa_inertias_to_world(m, d);                      /* M_I (soa_aba forms it in compact form) */
    soa_minv_columns(m, d, Minv);
    inertial_forces(m, d, use_fext);
    soa_composite_rates(m, d);
    derivative_vectors(m, d);
    const int nv = m->nv;
    if (nv <= SMALL_NV && nv <= 3 * m->nb) {          /* -dT (nv x 2nv) fits in d->blocks */
        double *T = d->blocks;
        derivative_pairs(m, d, -1.0, T, T + nv, 2 * nv);
        minv_times(nv, Minv, T, 2 * nv, ddq, ddv, ld);
        return st;
    }
    derivative_pairs(m, d, -1.0, ddq, ddv, ld);
    soa_innovations_solve(m, d, ddq, nv, ld);
    soa_innovations_solve(m, d, ddv, nv, ld);
    return st;
}
