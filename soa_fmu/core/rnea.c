/* Newton-Euler inverse dynamics (SPEC E5): seed 001 eqs. 6-12, 23-27; seed 000 eq. 2.11.
 *     alpha = phi*(H* beta-dot + a)     outward, gravity as the base acceleration [0; -g]
 *     f = phi(M alpha + b - f_ext)       inward
 *     T = H f + a beta-dot   (a: the rotors' armature, M + diag(a))                               */
#include "soa.h"
#include "spatial.h"

/* f(k) = sum_children phi(k, c) f(c) + M(k) alpha(k) + b(k) - f_ext(k)   (tip to base). */
void soa_inward_forces(const soa_model *m, soa_data *d, int use_fext)
{
    for (int k = 0; k < m->nb; k++) {
        double *f = d->f + 6 * k;
        matvec6(m->finertia + 36 * k, d->alpha + 6 * k, f);   /* the folded bodies' (model.c) */
        for (int i = 0; i < 6; i++) f[i] += d->b[6 * k + i] - (use_fext ? d->fext[6 * k + i] : 0.0);
    }
    for (int k = m->nb - 1; k >= 0; k--)
        if (m->parent[k] >= 0) add_phi(d->R + 9 * k, d->l + 3 * k, d->f + 6 * k, d->f + 6 * m->parent[k]);
}

/* T(k) = H(k) f(k). */
void soa_project_forces(const soa_model *m, const soa_data *d, double *T)
{
    for (int k = 0; k < m->nb; k++)
        for (int dd = 0; dd < m->nvj[k]; dd++)
            T[m->v0[k] + dd] = dot6(m->S + 6 * (m->v0[k] + dd), d->f + 6 * k);
}

/* One body of the outward pass, in registers: from (R, l) in the sweep parent and the parent's
 * V and alpha (Vp NULL: the world, at rest), V, alpha and f = M alpha + b - f_ext (M the folded
 * rigid body's 6x6, applied in compact form; fe NULL: no f_ext; a and b stay in registers). */
static inline void rnea_body(const double *restrict R, const double *restrict l,
                             const double *restrict Vp, const double *restrict alp,
                             const double *restrict S, int n, const double *restrict qd,
                             const double *restrict qdd, const double *restrict M,
                             const double *restrict fe, double *restrict V,
                             double *restrict alpha, double *restrict f)
{
    double Vk[6] = {0, 0, 0, 0, 0, 0}, ak[6], rel[6] = {0, 0, 0, 0, 0, 0}, acc[6] = {0, 0, 0, 0, 0, 0};
    double Ic[10], MV[6], bk[6], cor[6], MA[6];
    if (Vp) apply_phi_star(R, l, Vp, Vk);
    apply_phi_star(R, l, alp, ak);
    for (int dd = 0; dd < n; dd++) {
        const double *s = S + 6 * dd, x = qd[dd], y = qdd[dd];
        for (int i = 0; i < 6; i++) {
            rel[i] += s[i] * x;
            acc[i] += s[i] * y;
        }
    }
    for (int i = 0; i < 6; i++) Vk[i] += rel[i];
    cross_motion(Vk, rel, cor);
    for (int i = 0; i < 6; i++) ak[i] += acc[i] + cor[i];
    inertia_compact(M, Ic);
    inertia_apply(Ic, Vk, MV);
    cross_force(Vk, MV, bk);
    inertia_apply(Ic, ak, MA);
    for (int i = 0; i < 6; i++) {
        V[i] = Vk[i];
        alpha[i] = ak[i];
        f[i] = MA[i] + bk[i] - (fe ? fe[i] : 0.0);
    }
}

/* The recursion over the moving bodies (model.c: fixed links folded into their carriers), its
 * outward passes fused: per body k, parent p = spar(k) in the sweep,
 *     V = phi* V(p) + H* beta,  a = V x~ H* beta,  b = V x* M V,  alpha = phi*(p, k) alpha(p) + H* beta-dot + a,
 *     f = M alpha + b - f_ext
 * (seed 001 eqs. 6-9, 25; M: the folded rigid body's), then f(p) += phi(p, k) f(k) inward with the
 * folded links' f_ext moved to their carriers, T = H f; the folded bodies' placements, V and
 * alpha filled in after (kinematics.c); a and b are not stored. */
static void rnea_moving(const soa_model *m, soa_data *d, const double *q, const double *qd,
                        const double *qdd, int use_fext, double *tau)
{
    for (int t = 0; t < m->nmov; t++) {
        const int k = m->order[t], p = m->spar[k], v0 = m->v0[k];
        soa_sweep_placement(m, d, k, q);
        rnea_body(d->R + 9 * k, d->l + 3 * k, p < 0 ? NULL : d->V + 6 * p,
                  p < 0 ? m->a0 : d->alpha + 6 * p, m->S + 6 * v0, m->nvj[k], qd + v0, qdd + v0,
                  m->finertia + 36 * k, use_fext ? d->fext + 6 * k : NULL, d->V + 6 * k,
                  d->alpha + 6 * k, d->f + 6 * k);
    }
    for (int t = m->nmov; t < m->nb && use_fext; t++) {   /* f_ext on folded links: to carriers */
        const int k = m->order[t], r = m->spar[k];
        double fe[6] = {0, 0, 0, 0, 0, 0};
        if (r < 0) continue;
        add_phi(m->fXr + 9 * k, m->fXp + 3 * k, d->fext + 6 * k, fe);
        for (int i = 0; i < 6; i++) d->f[6 * r + i] -= fe[i];
    }
    for (int t = m->nmov - 1; t >= 0; t--) {
        const int k = m->order[t], p = m->spar[k];
        for (int dd = 0; dd < m->nvj[k]; dd++)
            tau[m->v0[k] + dd] = dot6(m->S + 6 * (m->v0[k] + dd), d->f + 6 * k);
        if (p >= 0) add_phi(d->R + 9 * k, d->l + 3 * k, d->f + 6 * k, d->f + 6 * p);
    }
    soa_fold_placements(m, d, 0);
    soa_fold_velocities(m, d, 0);
    soa_fold_accelerations(m, d, m->a0, 0);
}

/* Recursive Newton-Euler (seed 001 eq. 25): outward (V, alpha), inward (f), projection (T). */
soa_status soa_rnea(const soa_model *m, soa_data *d, const double *q, const double *qd,
                    const double *qdd, int use_fext, double *tau)
{
    soa_status st = soa_check_state(m, q, qd);
    if (st.kind != SOA_OK) return st;
    const int i = soa_first_nonfinite(qdd, m->nv);
    if (i >= 0) {
        st.kind = SOA_BAD_QDD;
        st.index = i;
        return st;
    }
    if (m->nm) return soa_flex_rnea(m, d, q, qd, qdd, use_fext, tau);
    rnea_moving(m, d, q, qd, qdd, use_fext, tau);
    for (int i = 0; i < m->nv; i++) tau[i] += m->armature[i] * qdd[i];   /* rotor inertia a qdd */
    return soa_check_result(tau, m->nv, 1);
}
