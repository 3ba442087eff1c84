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
        matvec6(m->inertia + 36 * k, d->alpha + 6 * k, f);
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
    soa_outward_placements(m, d, q);
    soa_outward_velocities(m, d, qd);
    soa_outward_accelerations(m, d, qdd, m->a0);
    soa_inward_forces(m, d, use_fext);
    soa_project_forces(m, d, tau);
    for (int i = 0; i < m->nv; i++) tau[i] += m->armature[i] * qdd[i];   /* rotor inertia a qdd */
    return soa_check_result(tau, m->nv, 1);
}
