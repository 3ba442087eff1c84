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

/* The recursion over the moving bodies (model.c: fixed links folded into their carriers), its
 * outward passes fused: per body k, parent p = spar(k) in the sweep,
 *     V = phi* V(p) + H* beta,  a = V x~ H* beta,  b = V x* M V,  alpha = phi*(p, k) alpha(p) + H* beta-dot + a,
 *     f = M alpha + b - f_ext
 * (seed 001 eqs. 6-9, 25; M: the folded rigid body's), then f(p) += phi(p, k) f(k) inward with the
 * folded links' f_ext moved to their carriers, T = H f; the folded bodies' placements, V and
 * alpha filled in after (kinematics.c). */
static void rnea_moving(const soa_model *m, soa_data *d, const double *q, const double *qd,
                        const double *qdd, int use_fext, double *tau)
{
    for (int t = 0; t < m->nmov; t++) {
        const int k = m->order[t], p = m->spar[k], v0 = m->v0[k], n = m->nvj[k];
        const double *Mk = m->finertia + 36 * k;
        double *V = d->V + 6 * k, *al = d->alpha + 6 * k, *f = d->f + 6 * k, rel[6], MV[6];
        soa_sweep_placement(m, d, k, q);
        const double *R = d->R + 9 * k, *l = d->l + 3 * k;
        if (p < 0)
            for (int i = 0; i < 6; i++) V[i] = 0.0;
        else
            apply_phi_star(R, l, d->V + 6 * p, V);
        apply_phi_star(R, l, p < 0 ? m->a0 : d->alpha + 6 * p, al);
        for (int i = 0; i < 6; i++) rel[i] = 0.0;
        for (int dd = 0; dd < n; dd++) {
            const double *s = m->S + 6 * (v0 + dd), x = qd[v0 + dd], y = qdd[v0 + dd];
            for (int i = 0; i < 6; i++) {
                rel[i] += s[i] * x;
                al[i] += s[i] * y;
            }
        }
        for (int i = 0; i < 6; i++) V[i] += rel[i];
        cross_motion(V, rel, d->a + 6 * k);
        for (int i = 0; i < 6; i++) al[i] += d->a[6 * k + i];
        matvec6(Mk, V, MV);
        cross_force(V, MV, d->b + 6 * k);
        matvec6(Mk, al, f);
        for (int i = 0; i < 6; i++) f[i] += d->b[6 * k + i] - (use_fext ? d->fext[6 * k + i] : 0.0);
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
