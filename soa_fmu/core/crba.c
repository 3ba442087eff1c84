/* Composite-body mass matrix (SPEC E6): seed 001 Identity 1, eqs. 28-33; seed 004 eqs. 5.44-5.46.
 *     r(k) = sum_children phi(k, c) r(c) phi*(k, c) + M(k)    composite inertia, inward  (eq. 31)
 *     x(k) = r(k) H*(k);  m(k, k) = H(k) x(k)                                            (eq. 32)
 *     x <- phi(i, j) x up the ancestors i of k;  m(i, k) = H(i) x                       (eq. 33)
 * evaluated, as seed 004 sec. 5 does, in the inertial frame at the world origin: every phi(k, c)
 * is absorbed into the one transform of each body's inertia to that frame, r_I(k) is a plain sum,
 * and m(i, k) = H_I(i) . x_I(k) is a 6-vector dot product.  The rotors' armature a adds diag(a). */
#include "soa.h"
#include "spatial.h"

/* P(k) <- r_I(k), the composite inertia of body k's subtree at the world origin, world axes
 * (seed 001 eq. 31; seed 004 eqs. 5.44-5.46).  Needs the world placements. */
void soa_composite_inertia_sweep(const soa_model *m, soa_data *d)
{
    soa_inertias_to_world(m, d);
    for (int i = 0; i < 36 * m->nb; i++) d->P[i] = d->Mw[i];
    for (int k = m->nb - 1; k >= 0; k--) {
        const int p = m->parent[k];
        if (p >= 0)
            for (int i = 0; i < 36; i++) d->P[36 * p + i] += d->P[36 * k + i];
    }
}

/* a += b for two compact inertias (10 numbers).  Kept out of line (GCC), where the compiler pairs
 * the entries in vector registers. */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static void add10(double *restrict a, const double *restrict b)
{
    for (int i = 0; i < 10; i++) a[i] += b[i];
}

/* m(r, c) = m(c, r) = H_I(r) . x (eq. 33) into M; returns the entry times 0 (0 when it is finite). */
static inline double put_entry(double *restrict M, int nv, int r, int c, const double *restrict Sw,
                               const double *x)
{
    const double v = dot6(Sw + 6 * r, x);
    M[r * nv + c] = M[c * nv + r] = v;
    return v * 0.0;
}

/* M <- H_I r_I H*_I + diag(a), one tip-to-base pass over the moving bodies that also finishes the
 * composite inertias: when body k is reached every body below it has added its r_I into r_I(k)
 * (eq. 31: a plain sum in the inertial frame), so per dof c of k, x = r_I(k) H*_I(c) (eq. 32) and
 * m(r, c) = H_I(r) . x for the dofs r <= c of k and its ancestors (eq. 33), walked as runs of
 * consecutive dofs (arun0, arunup) from c down; the rows between runs (dofs on other branches,
 * m(r, c) = 0) are zeroed as the walk passes them, so every entry is written once; then
 * r_I(spar(k)) += r_I(k).  Returns the sum of the entries times 0: 0 when all are finite. */
static double column_sweep(const soa_model *m, double *restrict Ri, const double *restrict Sw,
                           double *restrict M)
{
    const int nv = m->nv;
    double nf = 0.0;                                   /* x * 0: 0 for finite x, else NaN */
    for (int t = m->nmov - 1; t >= 0; t--) {
        const int k = m->order[t], v0 = m->v0[k], n = m->nvj[k], r0 = m->arun0[k], p = m->spar[k];
        const double *restrict rk = Ri + 10 * k;
        for (int c = v0; c < v0 + n; c++) {
            double x[6];
            inertia_apply(rk, Sw + 6 * c, x);
            for (int r = r0; r < c; r++) nf += put_entry(M, nv, r, c, Sw, x);
            const double dg = dot6(Sw + 6 * c, x) + m->armature[c];     /* M + diag(a) */
            M[c * nv + c] = dg;
            nf += dg * 0.0;
            int below = r0;                                /* rows [below, c] are written */
            for (int j = m->arunup[k]; j >= 0; j = m->arunup[j]) {
                const int e = m->v0[j] + m->nvj[j];
                for (int r = e; r < below; r++) M[r * nv + c] = M[c * nv + r] = 0.0;
                for (int r = m->arun0[j]; r < e; r++) nf += put_entry(M, nv, r, c, Sw, x);
                below = m->arun0[j];
            }
            for (int r = 0; r < below; r++) M[r * nv + c] = M[c * nv + r] = 0.0;
        }
        if (p >= 0) {                                  /* r_I(p) += r_I(k) (eq. 31) */
            add10(Ri + 10 * p, rk);
        }
    }
    return nf;
}

soa_status soa_crba(const soa_model *m, soa_data *d, const double *q, double *M)
{
    soa_status st = soa_check_configuration(m, q);
    if (st.kind != SOA_OK) return st;
    if (m->nm) return soa_flex_crba(m, d, q, M);
    const int nv = m->nv;
    soa_sweep_placements(m, d, q);                    /* Rw, pw, Sw, M_I (Ri) of the moving bodies */
    if (column_sweep(m, d->Ri, d->Sw, M) == 0.0) return st;
    return soa_check_result(M, nv, nv);               /* which row is not finite */
}
