/* Articulated-body forward dynamics and the innovations factorization (SPEC E7, E8).
 *
 * Seed 001 sec. VI-VII (Riccati equation 34-36, psi 38-41, Identities 3-6, Algorithms 1-3),
 * seed 000 eqs. 3.1-3.7 with the tree recursions A.1-A.2.  With tau-bar = I - G H and
 * psi(p, k) = phi(p, k) tau-bar(k):
 *
 *   Riccati (inward):   P(k) = sum_c psi(k, c) P(c) psi*(k, c) + M(k),  D = H P H*,  G = P H* D^-1
 *   filter  (inward):   z(k) = sum_c phi(k, c) z+(c) + P(k) a(k) + b(k) - f_ext(k)
 *                       eps(k) = T(k) - H(k) z(k),  nu(k) = D^-1(k) eps(k),  z+(k) = z(k) + G(k) eps(k)
 *   smoother (outward): alpha+(k) = phi*(p, k) alpha(p),  beta-dot(k) = nu(k) - G*(k) alpha+(k),
 *                       alpha(k) = alpha+(k) + H*(k) beta-dot(k) + a(k)
 *
 * The filter carries the bias (P a + b) as in Algorithm 3 (eqs. 60-65), so forward dynamics is
 * three sweeps; soa_aba_bias_free is Algorithm 2 (eqs. 55-59). */
/* GCC: the short loops over 3- and 6-vectors of the per-body steps unrolled (as flexible.c). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize ("unroll-loops")
#endif
#include <math.h>
#include <stddef.h>

#include "soa.h"
#include "spatial.h"

#ifdef SOA_COUNT_SWEEPS
long soa_sweep_counts[2];
#endif

/* out = A^-1 for a symmetric positive-definite n x n block (row stride 6), by Cholesky;
 * scratch: two 6x6 blocks.  Returns 0 if A is not positive definite. */
static int invert_spd(const double *A, int n, double *out, double *scratch)
{
    double *L = scratch, *Li = scratch + 36;
    if (n == 1) {
        if (!(A[0] > 0.0)) return 0;
        out[0] = 1.0 / A[0];
        return 1;
    }
    for (int j = 0; j < n; j++) {
        double s = A[6 * j + j];
        for (int k = 0; k < j; k++) s -= L[6 * j + k] * L[6 * j + k];
        if (!(s > 1e-300)) return 0;
        L[6 * j + j] = sqrt(s);
        for (int i = j + 1; i < n; i++) {
            double t = A[6 * i + j];
            for (int k = 0; k < j; k++) t -= L[6 * i + k] * L[6 * j + k];
            L[6 * i + j] = t / L[6 * j + j];
        }
    }
    for (int j = 0; j < n; j++) {
        Li[6 * j + j] = 1.0 / L[6 * j + j];
        for (int i = j + 1; i < n; i++) {
            double t = 0.0;
            for (int k = j; k < i; k++) t -= L[6 * i + k] * Li[6 * k + j];
            Li[6 * i + j] = t / L[6 * i + i];
        }
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double t = 0.0;
            for (int k = (i > j ? i : j); k < n; k++) t += Li[6 * k + i] * Li[6 * k + j];
            out[6 * i + j] = t;
        }
    return 1;
}

/* One joint of the Riccati sweep for r_v = 1 (the common case, written out):
 * U = P H*, D = H U + a, G = U / D, P+ = P - U U^T / D (a: the dof's armature, or the implicit
 * step's diagonal; seed 001 eq. 35 with M + diag(a)).  Returns 0 if D <= 0. */
static int riccati_step_1dof(const double *restrict s, const double *restrict P, double a,
                             double *restrict G, double *restrict Dinv, double *restrict Pplus)
{
    double U[6], D = a;
    for (int i = 0; i < 6; i++) {
        U[i] = dot6(P + 6 * i, s);
        D += s[i] * U[i];
    }
    if (!(D > 0.0)) return 0;
    const double dinv = 1.0 / D;
    Dinv[0] = dinv;
    for (int i = 0; i < 6; i++) {
        const double gi = U[i] * dinv;
        for (int j = i; j < 6; j++) Pplus[6 * i + j] = Pplus[6 * j + i] = P[6 * i + j] - gi * U[j];
        G[6 * i] = gi;
    }
    return 1;
}

/* The same step on a packed P (the inertial frame, where phi is the identity), P+ added straight
 * into the parent's: Pp += P - U U^T / D (Pp NULL: a root).  Returns 0 if D <= 0. */
static int riccati_step_1dof_packed(const double *restrict s, const double *restrict P, double a,
                                    double *restrict G, double *restrict Dinv, double *restrict Pp)
{
    double U[6], g[6];
    packed_apply(P, s, U);
    const double D = a + dot6(s, U);
    if (!(D > 0.0)) return 0;
    const double dinv = 1.0 / D;
    *Dinv = dinv;
    for (int i = 0; i < 6; i++) {
        g[i] = U[i] * dinv;
        G[6 * i] = g[i];
    }
    if (Pp) packed_add_update(P, g, U, Pp);
    return 1;
}

/* One joint of the Riccati sweep for any r_v = n (seed 001 eqs. 35-36; seed 000 A.1):
 * U = P H*, D = H U + diag(a), P+ = P - U D^-1 U^T (= tau-bar P), G = U D^-1.  Returns 0 if D is
 * not PD. */
static int riccati_step(const double *S, int n, const double *P, const double *a, double *G,
                        double *Dinv, double *Pplus, double *D, double *chol)
{
    double U[36];
    for (int dd = 0; dd < n; dd++)
        for (int i = 0; i < 6; i++) U[6 * i + dd] = dot6(P + 6 * i, S + 6 * dd);
    for (int dd = 0; dd < n; dd++)
        for (int e = 0; e < n; e++) {
            double s = 0.0;
            for (int i = 0; i < 6; i++) s += S[6 * dd + i] * U[6 * i + e];
            D[6 * dd + e] = s + (dd == e ? a[dd] : 0.0);
        }
    if (!invert_spd(D, n, Dinv, chol)) return 0;
    for (int i = 0; i < 6; i++)
        for (int dd = 0; dd < n; dd++) {
            double s = 0.0;
            for (int e = 0; e < n; e++) s += U[6 * i + e] * Dinv[6 * e + dd];
            G[6 * i + dd] = s;
        }
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++) {
            double s = 0.0;
            for (int dd = 0; dd < n; dd++) s += G[6 * i + dd] * U[6 * j + dd];
            Pplus[6 * i + j] = P[6 * i + j] - s;
        }
    return 1;
}

/* Riccati step of body k (seed 001 eqs. 34-36; seed 000 A.1), P(k) complete (M(k) plus its
 * children's terms): D(k) = H P H* + diag(a) (a = diag of k's dofs: the armature, or the implicit
 * step's a + h B + h^2 K), G(k), and P+(k) = tau-bar P = P - G D G* moved into the parent,
 *     P(p) += phi(p, k) P+(k) phi*(p, k)
 * (in the inertial frame phi is the identity; p: k's parent in the sweep, spar(k) in the inertial
 * frame).  Returns 0 if D(k) is not positive definite. */
static int riccati_step_body(const soa_model *m, soa_data *d, const double *S, int k, int p,
                             int inertial, const double *diag)
{
    const int n = m->nvj[k];
    const double *a = diag + m->v0[k];
    double *P = d->P + 36 * k, *Pplus = d->s66 + 3 * 36;
    if (inertial) {                                   /* packed P, phi = 1: P(p) += P+ */
        double *Pu = d->Pu + 21 * k, *Pp = p >= 0 ? d->Pu + 21 * p : NULL;
        if (n == 1)
            return riccati_step_1dof_packed(S + 6 * m->v0[k], Pu, a[0], d->G + 36 * k,
                                            d->Dinv + 36 * k, Pp);
        if (n > 1) {
            packed_to_full(Pu, P);
            if (!riccati_step(S + 6 * m->v0[k], n, P, a, d->G + 36 * k, d->Dinv + 36 * k, Pplus,
                              d->s66 + 2 * 36, d->s66 + 4 * 36))
                return 0;
            Pu = d->s66 + 2 * 36;                     /* (D's block is free again) */
            full_to_packed(Pplus, Pu);
        }
        if (Pp)                                       /* no dof: P+ = P */
            for (int i = 0; i < 21; i++) Pp[i] += Pu[i];
        return 1;
    }
    if (n == 1) {
        if (!riccati_step_1dof(S + 6 * m->v0[k], P, a[0], d->G + 36 * k, d->Dinv + 36 * k, Pplus))
            return 0;
    } else if (n > 1) {
        if (!riccati_step(S + 6 * m->v0[k], n, P, a, d->G + 36 * k, d->Dinv + 36 * k, Pplus,
                          d->s66 + 2 * 36, d->s66 + 4 * 36))
            return 0;
    } else {                                          /* no dof: P+ = P */
        for (int i = 0; i < 36; i++) Pplus[i] = P[i];
    }
    if (p >= 0) add_phi_inertia(d->R + 9 * k, d->l + 3 * k, Pplus, d->P + 36 * p);
    return 1;
}

/* z(k) of the filter before its children's terms arrive: P(k) a(k) + b(k) - f_ext(k) (with the
 * bias, seed 001 eq. 63), or -f_ext(k) / 0 (bias-free, eq. 49); fext (body frames, at the body
 * origins; NULL: none) enters the inertial frame as phi(I, k) f_ext(k), fw (inertial frame
 * already: the contact forces, contact.c; NULL: none) as it is. */
static void filter_start(soa_data *d, int k, int with_bias, const double *fext, const double *fw,
                         int inertial)
{
    double *z = d->f + 6 * k;
    if (with_bias) {
        if (inertial)
            packed_apply(d->Pu + 21 * k, d->a + 6 * k, z);
        else
            matvec6(d->P + 36 * k, d->a + 6 * k, z);
        for (int i = 0; i < 6; i++) z[i] += d->b[6 * k + i];
    } else {
        for (int i = 0; i < 6; i++) z[i] = 0.0;
    }
    if (fext) {
        double fe[6] = {0, 0, 0, 0, 0, 0};
        if (inertial) add_phi(d->Rw + 9 * k, d->pw + 3 * k, fext + 6 * k, fe);
        for (int i = 0; i < 6; i++) z[i] -= inertial ? fe[i] : fext[6 * k + i];
    }
    if (fw)
        for (int i = 0; i < 6; i++) z[i] -= fw[6 * k + i];
}

/* Filter step of body k, z(k) complete (seed 001 eqs. 50-51; seed 000 A.2):
 * eps(k) = T(k) - H(k) z(k), nu(k) = D^-1(k) eps(k), z+(k) = z(k) + G(k) eps(k) moved to the parent
 * by phi(p, k) (the identity in the inertial frame). */
static void filter_step_body(const soa_model *m, soa_data *d, const double *S, const double *T,
                             int k, int p, int inertial)
{
    const int v0 = m->v0[k], n = m->nvj[k];
    double *z = d->f + 6 * k;
    const double *Dinv = d->Dinv + 36 * k, *G = d->G + 36 * k;
    if (n == 1) {                                    /* (the common case, written out) */
        const double eps = T[v0] - dot6(S + 6 * v0, z);
        d->eps[v0] = eps;
        d->nu[v0] = Dinv[0] * eps;
        for (int i = 0; i < 6; i++) z[i] += G[6 * i] * eps;
    } else {
        for (int dd = 0; dd < n; dd++) d->eps[v0 + dd] = T[v0 + dd] - dot6(S + 6 * (v0 + dd), z);
        for (int dd = 0; dd < n; dd++) {
            double s = 0.0;
            for (int e = 0; e < n; e++) s += Dinv[6 * dd + e] * d->eps[v0 + e];
            d->nu[v0 + dd] = s;
        }
        for (int i = 0; i < 6; i++)
            for (int dd = 0; dd < n; dd++) z[i] += G[6 * i + dd] * d->eps[v0 + dd];
    }
    if (p < 0) return;
    if (inertial)
        for (int i = 0; i < 6; i++) d->f[6 * p + i] += z[i];
    else
        add_phi(d->R + 9 * k, d->l + 3 * k, z, d->f + 6 * p);
}

/* The bodies a sweep visits, parents first: in the inertial frame the moving bodies only, with
 * their sweep parents (the fixed links folded into their carriers by soa_model_finish); in body
 * frames every body with its parent (the folded bodies carry no inertia there: exact as well). */
typedef struct { const int *ord; int n; const int *par; } sweep_order;
static inline sweep_order sweep_bodies(const soa_model *m, int inertial)
{
    sweep_order o = {m->order, m->nmov, m->spar};
    if (!inertial) {
        o.ord = NULL;
        o.n = m->nb;
        o.par = m->parent;
    }
    return o;
}
#define SWEPT(o, i) ((o).ord ? (o).ord[i] : (i))

/* z(carrier) -= phi(I, k) f_ext(k) for every folded body k (inertial frame): the forces on the
 * folded links enter the sweep at their carriers (world-welded links: they move nothing). */
static void fold_forces(const soa_model *m, soa_data *d, const double *fext)
{
    for (int i = m->nmov; i < m->nb; i++) {
        const int k = m->order[i], r = m->spar[k];
        if (r < 0) continue;
        double fe[6] = {0, 0, 0, 0, 0, 0};
        add_phi(d->Rw + 9 * k, d->pw + 3 * k, fext + 6 * k, fe);
        for (int j = 0; j < 6; j++) d->f[6 * r + j] -= fe[j];
    }
}

/* P(k), D(k)^-1, G(k) for every body, tip to base, in body frames, or with `inertial` in the
 * inertial frame (world axes and origin: M_I(k) = Mw, H*_I(k) = Sw; needs the world placements,
 * and forms Sw and Mw).  Returns the index of a body whose D(k) is not positive definite, or -1. */
int soa_riccati_sweep(const soa_model *m, soa_data *d, int inertial)
{
    return soa_riccati_sweep_diag(m, d, inertial, NULL);
}

int soa_riccati_sweep_diag(const soa_model *m, soa_data *d, int inertial, const double *diag)
{
    SOA_COUNT_SWEEP(0);
    const double *S = m->S;
    const sweep_order o = sweep_bodies(m, inertial);
    if (!diag) diag = m->armature;
    if (inertial) {
        soa_joint_maps_to_world(m, d);
        soa_inertias_to_world(m, d);
        for (int i = 0; i < o.n; i++) {
            const int k = SWEPT(o, i);
            full_to_packed(d->Mw + 36 * k, d->Pu + 21 * k);
        }
        S = d->Sw;
    } else {
        for (int i = 0; i < 36 * m->nb; i++) d->P[i] = m->finertia[i];
    }
    for (int i = o.n - 1; i >= 0; i--) {
        const int k = SWEPT(o, i);
        if (!riccati_step_body(m, d, S, k, o.par[k], inertial, diag)) return k;
    }
    return -1;
}

/* Tip-to-base filter (seed 001 eqs. 49-51 / 63-65; seed 000 A.2) after the Riccati sweep of the
 * same frame (body frames, or `inertial`): z+ in d->f, eps, nu; fext: body forces (body frames,
 * NULL: none). */
void soa_innovations_filter(const soa_model *m, soa_data *d, const double *T, int with_bias,
                            const double *fext, int inertial)
{
    const double *S = inertial ? d->Sw : m->S;
    const sweep_order o = sweep_bodies(m, inertial);
    for (int i = 0; i < o.n; i++) filter_start(d, SWEPT(o, i), with_bias, fext, NULL, inertial);
    if (fext && inertial) fold_forces(m, d, fext);
    for (int i = o.n - 1; i >= 0; i--) {
        const int k = SWEPT(o, i);
        filter_step_body(m, d, S, T, k, o.par[k], inertial);
    }
}

/* One 1-dof body of the inertial-frame pass, in registers (seed 001 eqs. 34-36, 63-65 with
 * phi = 1): with `factor` the Riccati step on the packed P (U = P s, D = s.U + a, g = U / D,
 * P(p) += P - g U^T), else g, 1/D of the last pass; then the filter, z = P a + b - f_ext + the
 * children's z+ (held in z on entry), eps = T - s.z, nu = eps / D, z+ = z + g eps into z and
 * added to the parent's (zp; Pp, zp NULL: a root).  Returns 0 if D <= 0. */
SOA_BODY_STEP int articulated_body_1dof(const double *restrict s, const double *restrict P,
                                        double arm, double *restrict G, double *restrict Dinv,
                                        double *restrict Pp, const double *restrict ak,
                                        const double *restrict bk, const double *restrict fe,
                                        double T, double *restrict z, double *restrict zp,
                                        double *restrict eps, double *restrict nu, int factor)
{
    double g[6], zk[6], dinv;
    if (factor) {
        double U[6];
        packed_apply(P, s, U);
        const double D = arm + dot6(s, U);
        if (!(D > 0.0)) return 0;
        dinv = 1.0 / D;
        *Dinv = dinv;
        for (int i = 0; i < 6; i++) G[6 * i] = g[i] = U[i] * dinv;
        if (Pp) packed_add_update(P, g, U, Pp);
    } else {
        dinv = *Dinv;
        for (int i = 0; i < 6; i++) g[i] = G[6 * i];
    }
    packed_apply(P, ak, zk);
    for (int i = 0; i < 6; i++) zk[i] += bk[i] + z[i] - (fe ? fe[i] : 0.0);
    const double e = T - dot6(s, zk);
    *eps = e;
    *nu = dinv * e;
    for (int i = 0; i < 6; i++) {
        zk[i] += g[i] * e;
        z[i] = zk[i];
    }
    if (zp)
        for (int i = 0; i < 6; i++) zp[i] += zk[i];
    return 1;
}

/* The Riccati sweep and the filter with the bias in ONE tip-to-base pass (seed 001 Algorithm 3:
 * P(k) and z(k) are both complete once k's children are done).  P must hold M(k) on entry (Pu,
 * packed, in the inertial frame).
 * With factor = 0 the Riccati steps are skipped: P(k), D^-1, G of the last pass are reused (they
 * depend on theta only), and the pass is the filter alone. */
static int articulated_pass(const soa_model *m, soa_data *d, const double *S, const double *T,
                            int use_fext, int inertial, int factor, const double *diag)
{
    /* use_fext: SOA_USE_FEXT (d->fext, body frames); with SOA_USE_CONTACT the contact forces
     * too (d->ct_fw, already in the inertial frame and on the sweeps' bodies: contact.c; the
     * inertial pass only) */
    const double *fext = (use_fext & SOA_USE_CONTACT) ? ((use_fext & SOA_USE_FEXT) ? d->fext : NULL)
                                                      : use_fext ? d->fext : NULL;
    const double *fw = (use_fext & SOA_USE_CONTACT) && inertial ? d->ct_fw : NULL;
    const sweep_order o = sweep_bodies(m, inertial);
    SOA_COUNT_SWEEP(factor ? 0 : 1);
    for (int i = 0; i < o.n; i++)
        for (int j = 0, k = SWEPT(o, i); j < 6; j++) d->f[6 * k + j] = 0.0;
    if (fext && inertial) fold_forces(m, d, fext);
    for (int i = o.n - 1; i >= 0; i--) {
        const int k = SWEPT(o, i), p = o.par[k], v0 = m->v0[k];
        double z[6];
        if (inertial && m->nvj[k] == 1) {           /* (the common case, fused) */
            double fe[6] = {0, 0, 0, 0, 0, 0};
            const double *fk = fw ? fw + 6 * k : NULL;
            if (fext) {
                add_phi(d->Rw + 9 * k, d->pw + 3 * k, fext + 6 * k, fe);
                for (int j = 0; j < 6 && fk; j++) fe[j] += fk[j];
                fk = fe;
            }
            if (!articulated_body_1dof(S + 6 * v0, d->Pu + 21 * k, diag[v0], d->G + 36 * k,
                                       d->Dinv + 36 * k, p >= 0 ? d->Pu + 21 * p : NULL,
                                       d->a + 6 * k, d->b + 6 * k, fk, T[v0],
                                       d->f + 6 * k, p >= 0 ? d->f + 6 * p : NULL, d->eps + v0,
                                       d->nu + v0, factor))
                return k;
            continue;
        }
        for (int j = 0; j < 6; j++) z[j] = d->f[6 * k + j];      /* the children's z+ */
        if (factor && !riccati_step_body(m, d, S, k, p, inertial, diag)) return k;
        filter_start(d, k, 1, fext, fw, inertial);
        for (int j = 0; j < 6; j++) d->f[6 * k + j] += z[j];
        filter_step_body(m, d, S, T, k, p, inertial);
    }
    return -1;
}

/* One 1-dof body of the inertial-frame smoother (seed 001 eqs. 52-54, phi* = 1):
 * beta-dot = nu - G* alpha(p),  alpha = alpha(p) + H* beta-dot (+ a). */
SOA_BODY_STEP void smoother_1dof(const double *restrict s, const double *restrict G, double nu,
                                 const double *restrict ap, const double *restrict a,
                                 double *restrict qdd, double *restrict alpha)
{
    double x = nu;
    for (int i = 0; i < 6; i++) x -= G[6 * i] * ap[i];
    *qdd = x;
    for (int i = 0; i < 6; i++) alpha[i] = ap[i] + s[i] * x + (a ? a[i] : 0.0);
}

/* Base-to-tip smoother (seed 001 eqs. 52-54; seed 000 A.2): beta-dot and alpha (lambda when
 * bias-free), alpha(world) = base; in body frames or (inertial) at the world origin. */
static void smoother(const soa_model *m, soa_data *d, const double *S, const double *base,
                     int with_bias, double *qdd, int inertial)
{
    const sweep_order o = sweep_bodies(m, inertial);
    for (int t = 0; t < o.n; t++) {
        const int k = SWEPT(o, t), p = o.par[k], v0 = m->v0[k], n = m->nvj[k];
        double *ak = d->alpha + 6 * k;
        const double *G = d->G + 36 * k, *ap = p < 0 ? base : d->alpha + 6 * p;
        if (inertial && n == 1) {                    /* (the common case, in registers) */
            smoother_1dof(S + 6 * v0, G, d->nu[v0], ap, with_bias ? d->a + 6 * k : NULL,
                          qdd + v0, ak);
            continue;
        }
        if (inertial)
            for (int i = 0; i < 6; i++) ak[i] = ap[i];
        else
            apply_phi_star(d->R + 9 * k, d->l + 3 * k, ap, ak);
        if (n == 1) {                                /* (the common case, written out) */
            double s = d->nu[v0];
            for (int i = 0; i < 6; i++) s -= G[6 * i] * ak[i];
            qdd[v0] = s;
            for (int i = 0; i < 6; i++) ak[i] += S[6 * v0 + i] * s;
        } else {
            for (int dd = 0; dd < n; dd++) {
                double s = d->nu[v0 + dd];
                for (int i = 0; i < 6; i++) s -= G[6 * i + dd] * ak[i];
                qdd[v0 + dd] = s;
            }
            for (int dd = 0; dd < n; dd++)
                for (int i = 0; i < 6; i++) ak[i] += S[6 * (v0 + dd) + i] * qdd[v0 + dd];
        }
        if (with_bias)
            for (int j = 0; j < 6; j++) ak[j] += d->a[6 * k + j];
    }
    if (inertial) soa_fold_accelerations(m, d, base, 1);    /* the folded links' alpha */
}

/* The smoother after the filter of the same frame (body frames, or `inertial`). */
void soa_innovations_smoother(const soa_model *m, soa_data *d, const double *base, int with_bias,
                              double *qdd, int inertial)
{
    smoother(m, d, inertial ? d->Sw : m->S, base, with_bias, qdd, inertial);
}

/* beta-dot of the tree by the innovations algorithm, no input checks; -1 or the singular body. */
int soa_tree_acceleration(const soa_model *m, soa_data *d, const double *q, const double *qd,
                          const double *tau, int use_fext, double *qdd)
{
    soa_outward_placements(m, d, q);
    soa_outward_velocities(m, d, qd);
    for (int i = 0; i < 36 * m->nb; i++) d->P[i] = m->finertia[i];
    const int k = articulated_pass(m, d, m->S, tau, use_fext, 0, 1, m->armature);
    if (k >= 0) return k;
    smoother(m, d, m->S, m->a0, 1, qdd, 0);
    return -1;
}

/* The same three sweeps in the inertial frame (seed 004 sec. 5: world axes at the world origin),
 * where every phi is the identity: placements -> H*_I, M_I -> V_I, a_I, b_I -> Riccati -> filter ->
 * smoother.  The cheaper pipeline of soa_aba and the integrators; alpha is left in world axes.
 * use_fext: 0, SOA_USE_FEXT, with SOA_USE_CONTACT the contact forces at (q, qd) as well (with
 * SOA_CONTACT_HELD those the data holds from the caller's last evaluation at (q, qd)). */
int soa_tree_acceleration_inertial(const soa_model *m, soa_data *d, const double *q,
                                   const double *qd, const double *tau, int use_fext, double *qdd)
{
    return soa_tree_acceleration_diag(m, d, q, qd, tau, use_fext, NULL, qdd);
}

int soa_tree_acceleration_diag(const soa_model *m, soa_data *d, const double *q, const double *qd,
                               const double *tau, int use_fext, const double *diag, double *qdd)
{
    if (m->nm) {
        soa_inertial_kinematics(m, d, q, qd);
        for (int k = 0; k < m->nb; k++) full_to_packed(d->Mw + 36 * k, d->Pu + 21 * k);
    } else {
        soa_inertial_outward(m, d, q, qd);            /* the same, one pass (kinematics.c) */
    }
    /* contact.c, at these placements, V_I (unless the caller holds those of this state) */
    if ((use_fext & SOA_USE_CONTACT) && !(use_fext & SOA_CONTACT_HELD)) soa_contact_forces(m, d);
    const int k = articulated_pass(m, d, d->Sw, tau, use_fext, 1, 1, diag ? diag : m->armature);
    if (k >= 0) return k;
    smoother(m, d, d->Sw, m->a0, 1, qdd, 1);
    return -1;
}

/* beta-dot for other joint forces and external forces (d->fext) at the state of the last
 * soa_tree_acceleration_inertial on this data: its articulated factors P(k), D^-1(k), G(k), the
 * joint maps H*_I and the Coriolis and gyroscopic terms a(k), b(k) depend on (theta, beta) only,
 * so only the filter and the smoother of Algorithm 3 run (seed 001 eqs. 63-65, 52-54).  The caller
 * guarantees that nothing else used the data since. */
void soa_tree_acceleration_refilter(const soa_model *m, soa_data *d, const double *tau,
                                    int use_fext, double *qdd)
{
    articulated_pass(m, d, d->Sw, tau, use_fext, 1, 0, m->armature);
    smoother(m, d, d->Sw, m->a0, 1, qdd, 1);
}

/* Innovations forward dynamics, three sweeps (seed 001 Algorithm 3; seed 000 A.1-A.2), in the
 * inertial frame. */
soa_status soa_aba(const soa_model *m, soa_data *d, const double *q, const double *qd,
                   const double *tau, int use_fext, double *qdd)
{
    soa_status st = soa_check_inputs(m, q, qd, tau);
    if (st.kind != SOA_OK) return st;
    if (m->nm) {
        st = soa_flex_fd(m, d, q, qd, tau, use_fext, qdd);
        return st.kind != SOA_OK ? st : soa_check_result(qdd, m->nv, 1);
    }
    const int k = soa_tree_acceleration_inertial(m, d, q, qd, tau, use_fext, qdd);
    if (k >= 0) {
        st.kind = SOA_SINGULAR;
        st.index = k;
        return st;
    }
    return soa_check_result(qdd, m->nv, 1);
}

/* Algorithm 2 (seed 001 eqs. 55-59): T' = T - H phi (M phi* a + b - f_ext) with gravity, then nu by
 * the bias-free filter, lambda and beta-dot by the smoother, and alpha = lambda + zeta, zeta = phi* a. */
soa_status soa_aba_bias_free(const soa_model *m, soa_data *d, const double *q, const double *qd,
                             const double *tau, int use_fext, double *qdd)
{
    soa_status st = soa_check_inputs(m, q, qd, tau);
    if (st.kind != SOA_OK) return st;
    if (m->nm) return soa_flex_aba_bias_free(m, d, q, qd, tau, use_fext, qdd);   /* flexible.c */
    const int nb = m->nb, nv = m->nv;
    const double zero6[6] = {0, 0, 0, 0, 0, 0};
    soa_outward_placements(m, d, q);
    soa_outward_velocities(m, d, qd);
    for (int i = 0; i < nv; i++) d->zerov[i] = 0.0;
    soa_outward_accelerations(m, d, d->zerov, m->a0);       /* zeta = phi* a, gravity at the base */
    soa_inward_forces(m, d, use_fext);
    soa_project_forces(m, d, d->tbias);
    for (int i = 0; i < 6 * nb; i++) d->zeta[i] = d->alpha[i];
    const int k = soa_riccati_sweep(m, d, 0);
    if (k >= 0) {
        st.kind = SOA_SINGULAR;
        st.index = k;
        return st;
    }
    for (int i = 0; i < nv; i++) d->tprime[i] = tau[i] - d->tbias[i];
    soa_innovations_filter(m, d, d->tprime, 0, NULL, 0);
    soa_innovations_smoother(m, d, zero6, 0, qdd, 0);        /* alpha = lambda */
    for (int i = 0; i < 6 * nb; i++) d->alpha[i] += d->zeta[i];
    return soa_check_result(qdd, nv, 1);
}

/* The contact forces linearly implicit over a step h, after a tree acceleration with contact
 * (docs/contact.md): contact.c's Woodbury correction leaves the innovations nu = N g of its joint
 * forces J* g (soa_contact_implicit_filter: the filter half of M^-1 J* g = [I - H psi K]* D^-1
 * H psi B g, seed 000 A.6, seed 002 eq. 18); the smoother from a zero base, in the inertial frame
 * of the step's factors, is this sweep's half, and qdd += M^-1 J* g. */
int soa_contact_implicit(const soa_model *m, soa_data *d, double h, const double *r,
                         const double *s, double ahead, double *qdd)
{
    static const double zero6[6] = {0, 0, 0, 0, 0, 0};
    if (!soa_contact_implicit_filter(m, d, h, r, s, ahead, qdd)) return 0;
    soa_innovations_smoother(m, d, zero6, 0, d->ci_dqdd, 1);   /* M^-1 J* g */
    for (int i = 0; i < m->nv; i++) qdd[i] += d->ci_dqdd[i];
    return 1;
}

/* The filter and smoother on a BLOCK of inputs (seed 001 eqs. 49-54, bias-free, one column per
 * right-hand side), one body at a time, in the inertial frame where phi and phi* are identities.
 * They serve M^-1 (unit inputs) and soa_innovations_solve (any inputs).  Rows of X have stride ldx,
 * the 6 x n blocks W, L, E stride ldw. */

/* Inward step of a 1-dof body over n columns (seed 001 eqs. 49-51), in place: `row` holds the
 * input T(k) on entry and nu = D^-1 eps on return; z0..z5, the rows of W, hold z(k) and become z+(k):
 *     eps = T - H z,   nu = D^-1 eps,   z+ = z + G eps.
 * (The rows are separate restrict parameters and the index a ptrdiff_t so that the compiler
 * vectorizes over the columns, also under -fwrapv.) */
static inline void inward_columns_1dof(const double *restrict H, double dinv, const double *restrict G,
                                       double *restrict z0, double *restrict z1, double *restrict z2,
                                       double *restrict z3, double *restrict z4, double *restrict z5,
                                       double *restrict row, ptrdiff_t n)
{
    const double h0 = H[0], h1 = H[1], h2 = H[2], h3 = H[3], h4 = H[4], h5 = H[5];
    const double g0 = G[0], g1 = G[6], g2 = G[12], g3 = G[18], g4 = G[24], g5 = G[30];
    for (ptrdiff_t c = 0; c < n; c++) {
        const double e = row[c] - (((h0 * z0[c] + h1 * z1[c]) + (h2 * z2[c] + h3 * z3[c]))
                                   + (h4 * z4[c] + h5 * z5[c]));
        row[c] = dinv * e;
        z0[c] += g0 * e; z1[c] += g1 * e; z2[c] += g2 * e;
        z3[c] += g3 * e; z4[c] += g4 * e; z5[c] += g5 * e;
    }
}

/* The same over columns [c0, c1) of W (row stride ldw) and row. */
static void block_inward_1dof(const double *H, double dinv, const double *G, double *W, int ldw,
                              double *row, int c0, int c1)
{
    inward_columns_1dof(H, dinv, G, W + c0, W + ldw + c0, W + 2 * ldw + c0, W + 3 * ldw + c0,
                        W + 4 * ldw + c0, W + 5 * ldw + c0, row + c0, c1 - c0);
}

/* The same for a body of n > 1 dofs: E = T - H z (n rows of scratch), rows = D^-1 E, z += G E. */
static void block_inward(const double *restrict H, int n, const double *restrict Dinv,
                         const double *restrict G, double *restrict W, int ldw, double *restrict E,
                         double *restrict rows, int ldx, int c0, int c1)
{
    for (int dd = 0; dd < n; dd++) {
        double *restrict Ed = E + dd * ldw, *restrict rd = rows + dd * ldx;
        for (int c = c0; c < c1; c++) {
            Ed[c] = rd[c];
            rd[c] = 0.0;
        }
        for (int i = 0; i < 6; i++) {
            const double h = H[6 * dd + i];
            for (int c = c0; c < c1; c++) Ed[c] -= h * W[i * ldw + c];
        }
    }
    for (int dd = 0; dd < n; dd++)
        for (int e = 0; e < n; e++) {
            const double g = Dinv[6 * dd + e];
            for (int c = c0; c < c1; c++) rows[dd * ldx + c] += g * E[e * ldw + c];
        }
    for (int i = 0; i < 6; i++)
        for (int dd = 0; dd < n; dd++) {
            const double g = G[6 * i + dd];
            for (int c = c0; c < c1; c++) W[i * ldw + c] += g * E[dd * ldw + c];
        }
}

/* Outward step of a 1-dof body over n columns (seed 001 eqs. 53-54), in place: `row` holds nu on
 * entry and beta-dot on return; l0..l5, the rows of L, hold alpha(p) (Lambda(p) for M^-1) and
 * become alpha(k):
 *     beta-dot = nu - G* alpha(p),   alpha(k) = alpha(p) + H*(k) beta-dot. */
static inline void outward_columns_1dof(const double *restrict H, const double *restrict G,
                                        double *restrict l0, double *restrict l1, double *restrict l2,
                                        double *restrict l3, double *restrict l4, double *restrict l5,
                                        double *restrict row, ptrdiff_t n)
{
    const double h0 = H[0], h1 = H[1], h2 = H[2], h3 = H[3], h4 = H[4], h5 = H[5];
    const double g0 = G[0], g1 = G[6], g2 = G[12], g3 = G[18], g4 = G[24], g5 = G[30];
    for (ptrdiff_t c = 0; c < n; c++) {
        const double r = row[c] - (((g0 * l0[c] + g1 * l1[c]) + (g2 * l2[c] + g3 * l3[c]))
                                   + (g4 * l4[c] + g5 * l5[c]));
        row[c] = r;
        l0[c] += h0 * r; l1[c] += h1 * r; l2[c] += h2 * r;
        l3[c] += h3 * r; l4[c] += h4 * r; l5[c] += h5 * r;
    }
}

/* The same over columns [c0, c1) of L (row stride ldw) and row. */
static void block_outward_1dof(const double *H, const double *G, double *L, int ldw, double *row,
                               int c0, int c1)
{
    outward_columns_1dof(H, G, L + c0, L + ldw + c0, L + 2 * ldw + c0, L + 3 * ldw + c0,
                         L + 4 * ldw + c0, L + 5 * ldw + c0, row + c0, c1 - c0);
}

/* The same for a body of n dofs. */
static void block_outward(const double *restrict H, int n, const double *restrict G,
                          double *restrict L, int ldw, double *restrict rows, int ldx, int c0, int c1)
{
    for (int dd = 0; dd < n; dd++) {
        double *restrict row = rows + dd * ldx;
        for (int i = 0; i < 6; i++) {
            const double g = G[6 * i + dd];
            for (int c = c0; c < c1; c++) row[c] -= g * L[i * ldw + c];
        }
    }
    for (int dd = 0; dd < n; dd++) {
        const double *restrict row = rows + dd * ldx;
        for (int i = 0; i < 6; i++) {
            const double h = H[6 * dd + i];
            for (int c = c0; c < c1; c++) L[i * ldw + c] += h * row[c];
        }
    }
}

/* M^-1 = (I - H psi K)* D^-1 (I - H psi K) (seed 001 Identity 6, eq. 46; seed 000 eq. 3.6).
 * The filter and smoother of Algorithm 1 (eqs. 49-54) run on all nv unit inputs at once, in the
 * inertial frame where the block propagations phi and phi* are identities, with the columns in
 * depth-first order.  Inward, Z(k) is non-zero only on k's subtree columns [dfs0(k), dfsend(k)),
 * which siblings never share, so one 6 x nv block W holds every Z(k) and is updated in place.  Outward, Lambda(k) (6 x nv, columns
 * depth-first columns >= dfs0(k): a triangle, the rest by symmetry) lives in d->blocks at
 * m->lamslot[k]: a parent's last child updates the parent's block in place.  O(N nv) in all.
 * Minv: nv x nv, row-major. */
soa_status soa_minv(const soa_model *m, soa_data *d, const double *q, double *Minv)
{
    soa_status st = soa_check_configuration(m, q);
    if (st.kind != SOA_OK) return st;
    if (m->nm) return soa_flex_minv(m, d, q, Minv);   /* flexible.c: the same factored form */
    soa_outward_placements(m, d, q);
    soa_world_placements(m, d);
    const int ks = soa_riccati_sweep(m, d, 1);
    if (ks >= 0) {
        st.kind = SOA_SINGULAR;
        st.index = ks;
        return st;
    }
    soa_minv_columns(m, d, Minv);
    return soa_check_result(Minv, m->nv, m->nv);
}

/* The column sweeps of soa_minv, from the factors G, D^-1 and H*_I (Sw) of an inertial-frame
 * Riccati sweep (soa_riccati_sweep(m, d, 1), or the one inside soa_aba). */
void soa_minv_columns(const soa_model *m, soa_data *d, double *Minv)
{
    const int nb = m->nb, nv = m->nv;
    const double *H = d->Sw;
    double *W = d->Y;
    /* columns in depth-first order (m->vdfs): Minv holds rows in dof order, columns depth first,
     * until the end */
    for (int i = 0; i < 6 * nv; i++) W[i] = 0.0;
    for (int k = nb - 1; k >= 0; k--) {
        const int v0 = m->v0[k], n = m->nvj[k], c0 = m->dfs0[k], c1 = m->dfsend[k];
        for (int dd = 0; dd < n; dd++) {                /* the unit inputs of k's dofs */
            for (int c = c0; c < nv; c++) Minv[(v0 + dd) * nv + c] = 0.0;
            Minv[(v0 + dd) * nv + c0 + dd] = 1.0;
        }
        if (n == 1)
            block_inward_1dof(H + 6 * v0, d->Dinv[36 * k], d->G + 36 * k, W, nv, Minv + v0 * nv, c0, c1);
        else if (n > 1)
            block_inward(H + 6 * v0, n, d->Dinv + 36 * k, d->G + 36 * k, W, nv, d->blocks,
                         Minv + v0 * nv, nv, c0, c1);
    }
    for (int k = 0; k < nb; k++) {
        const int p = m->parent[k], c0 = m->dfs0[k];
        double *L = d->blocks + m->lamslot[k] * 6 * nv;
        if (p < 0)
            for (int i = 0; i < 6; i++)
                for (int c = c0; c < nv; c++) L[i * nv + c] = 0.0;
        else if (m->lamslot[k] != m->lamslot[p])
            for (int i = 0; i < 6; i++)
                for (int c = c0; c < nv; c++) L[i * nv + c] = d->blocks[(m->lamslot[p] * 6 + i) * nv + c];
        if (m->nvj[k] == 1)
            block_outward_1dof(H + 6 * m->v0[k], d->G + 36 * k, L, nv, Minv + m->v0[k] * nv, c0, nv);
        else
            block_outward(H + 6 * m->v0[k], m->nvj[k], d->G + 36 * k, L, nv, Minv + m->v0[k] * nv, nv,
                          c0, nv);
    }
    /* each row r is known on the depth-first columns >= vdfs(r); the rest by symmetry */
    for (int r = 0; r < nv; r++) {
        const int a = m->vdfs[r];
        for (int b = 0; b < a; b++) Minv[r * nv + b] = Minv[m->vcol[b] * nv + a];
    }
    if (!m->dfs_identity)                            /* columns back to dof order, row by row */
        for (int r = 0; r < nv; r++) {
            double *row = Minv + r * nv;
            for (int c = 0; c < nv; c++) d->dv[c] = row[c];
            for (int c = 0; c < nv; c++) row[c] = d->dv[m->vdfs[c]];
        }
}

/* ---- sens: M^-1 X for any block X ---- */
/* X <- M^-1 X in place (nv rows of stride ld, ncols <= nv columns): the filter and smoother of
 * seed 001 eqs. 49-54 (bias-free, zero base acceleration) on ncols right-hand sides at once, from
 * the factors of an inertial-frame Riccati sweep, O(N ncols).  z(k) and alpha(k) live in the
 * 6 x ncols block lamslot(k) of d->blocks: a parent's last child works in its parent's block, so
 * inward that block already holds the child's z+ when the parent's other children add theirs, and
 * outward the other children copy alpha(parent) before the last child overwrites it. */
void soa_innovations_solve(const soa_model *m, soa_data *d, double *X, int ncols, int ld)
{
    const int nb = m->nb, w = 6 * ncols;
    const double *H = d->Sw;
    for (int k = 0; k < nb; k++)                      /* z = 0 where a chain of last children ends */
        if (m->lamslot[k] == k)
            for (int i = 0; i < w; i++) d->blocks[k * w + i] = 0.0;
    for (int k = nb - 1; k >= 0; k--) {
        const int v0 = m->v0[k], n = m->nvj[k], p = m->parent[k], s = m->lamslot[k];
        double *W = d->blocks + s * w;
        if (n == 1)
            block_inward_1dof(H + 6 * v0, d->Dinv[36 * k], d->G + 36 * k, W, ncols, X + v0 * ld, 0, ncols);
        else if (n > 1)
            block_inward(H + 6 * v0, n, d->Dinv + 36 * k, d->G + 36 * k, W, ncols, d->Y, X + v0 * ld, ld,
                         0, ncols);
        if (p >= 0 && m->lamslot[p] != s)
            for (int i = 0; i < w; i++) d->blocks[m->lamslot[p] * w + i] += W[i];
    }
    for (int k = 0; k < nb; k++) {
        const int p = m->parent[k], s = m->lamslot[k];
        double *L = d->blocks + s * w;
        if (p < 0)
            for (int i = 0; i < w; i++) L[i] = 0.0;
        else if (m->lamslot[p] != s)
            for (int i = 0; i < w; i++) L[i] = d->blocks[m->lamslot[p] * w + i];
        if (m->nvj[k] == 1)
            block_outward_1dof(H + 6 * m->v0[k], d->G + 36 * k, L, ncols, X + m->v0[k] * ld, 0, ncols);
        else
            block_outward(H + 6 * m->v0[k], m->nvj[k], d->G + 36 * k, L, ncols, X + m->v0[k] * ld, ld,
                          0, ncols);
    }
}

/* The input map of forward dynamics, d(beta-dot) = M^-1 (dT + J* df_ext): beta-dot is affine in
 * (T, f_ext), and its linear part is Algorithm 2 (seed 001 eqs. 49-54) with a = b = 0 and a
 * resting base: the bias-free filter and smoother after the Riccati sweep at theta.  Exact
 * directional derivatives of the FMU's accelerations with respect to its inputs. */
soa_status soa_forward_dynamics_input_map(const soa_model *m, soa_data *d, const double *q,
                                          const double *dtau, int use_fext, double *dqdd)
{
    soa_status st = soa_check_configuration(m, q);
    if (st.kind != SOA_OK) return st;
    if (m->nm) {                                    /* flexible.c: the same factored form */
        st = soa_flex_factor(m, d, q);
        if (st.kind == SOA_OK) soa_flex_solve_forces(m, d, dtau, use_fext ? d->fext : NULL, dqdd);
        return st;
    }
    const double zero6[6] = {0, 0, 0, 0, 0, 0};
    soa_outward_placements(m, d, q);
    const int k = soa_riccati_sweep(m, d, 0);
    if (k >= 0) {
        st.kind = SOA_SINGULAR;
        st.index = k;
        return st;
    }
    soa_innovations_filter(m, d, dtau, 0, use_fext ? d->fext : NULL, 0);
    soa_innovations_smoother(m, d, zero6, 0, dqdd, 0);
    return st;
}
