/* Mass-matrix sensitivities and the Coriolis matrix (SPEC E14; seed 004).
 *
 * Derivatives are taken along the velocity directions: d/dtheta_i X = d/de X(theta (+) e e_i), the
 * body of dof i moving by exp(e H*(i)) in its own frame (soa_fmu.sensitivities explains why).
 * Everything is evaluated in the inertial frame I of seed 004 sec. 5.2 (world axes at the world
 * origin), where phi is the identity:
 *     s(i) = H*_I(i)                           eq. 5.47           d->Sw
 *     M_I(k)                                   eq. 5.44           d->Mw
 *     R_I(k) = sum_{c >= k} M_I(c)             eqs. 5.44, 5.50    d->P  (a plain sum in one frame)
 *     F(i) = R_I(k) s(i),  k the body of i     (the CRBA force)   d->Fs
 * and, for the velocity-dependent terms, the composite momentum h(k) = sum_{c >= k} M_I(c) V_I(c)
 * and the rate of R_I, Rdot(k) = sum_{c >= k} (V_I x* M_I - M_I V_I x~)(c) (eq. 3.19 for a body).
 * "a above b" (a < b in the kernels' comments) compares the BODIES of dofs along the tree: the body
 * of a is an ancestor of the body of b; the dofs of one joint count as equal. */
#include "soa.h"
#include "spatial.h"

/* Fs(i) = R_I(k) s(i) for every dof i of every body k (needs P = R_I and Sw). */
static void composite_forces(const soa_model *m, soa_data *d)
{
    for (int k = 0; k < m->nb; k++)
        for (int a = m->v0[k]; a < m->v0[k] + m->nvj[k]; a++)
            inertia_apply(d->P + 36 * k, d->Sw + 6 * a, d->Fs + 6 * a);
}

/* Mdot = V x* M - M V x~ of a body inertia M = [[A, B], [B*, m I]] (B = m c~, c the centre of mass)
 * in the inertial frame (seed 004 eq. 3.19), V = [w; v]: the mass is constant, so
 *     Mdot = [[w~ A - A w~ + v~ B* - B v~,  m cdot~], [-m cdot~, 0]],   m cdot = m v + w x (m c),
 * with w~ A - A w~ = T + T* (T = w~ A) and v~ B* - B v~ = -m (v~ c~ + c~ v~)
 *                                                    = 2 (v . m c) I - v (m c)* - (m c) v*. */
static void inertia_rate(const double *restrict M, const double *restrict V, double *restrict X)
{
    const double w[3] = {V[0], V[1], V[2]}, v[3] = {V[3], V[4], V[5]};
    const double mc[3] = {M[6 * 2 + 4], M[6 * 0 + 5], M[6 * 1 + 3]};   /* B = (m c)~ */
    double T[9], mcd[3];
    for (int j = 0; j < 3; j++) {                     /* T(:, j) = w x A(:, j) */
        const double a0 = M[j], a1 = M[6 + j], a2 = M[12 + j];
        T[j] = w[1] * a2 - w[2] * a1;
        T[3 + j] = w[2] * a0 - w[0] * a2;
        T[6 + j] = w[0] * a1 - w[1] * a0;
    }
    cross3(w, mc, mcd);
    const double m = M[21], vmc = v[0] * mc[0] + v[1] * mc[1] + v[2] * mc[2];
    for (int i = 0; i < 3; i++) {
        mcd[i] += m * v[i];
        for (int j = i; j < 3; j++)
            X[6 * i + j] = X[6 * j + i] = T[3 * i + j] + T[3 * j + i] - v[i] * mc[j] - mc[i] * v[j]
                                          + (i == j ? 2.0 * vmc : 0.0);
    }
    const double cd[9] = {0.0, -mcd[2], mcd[1], mcd[2], 0.0, -mcd[0], -mcd[1], mcd[0], 0.0};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            X[6 * i + 3 + j] = cd[3 * i + j];
            X[6 * (3 + j) + i] = cd[3 * i + j];          /* (m cdot~)* = -m cdot~ */
            X[6 * (3 + i) + 3 + j] = 0.0;
        }
}

/* R_I(k) into P (eqs. 5.44, 5.50), Rdot(k), h(k) (one inward pass of plain sums) and F(i).
 * Needs Mw, Sw and the inertial velocities V_I (soa_inertial_velocities). */
void soa_composite_rates(const soa_model *m, soa_data *d)
{
    const int nb = m->nb;
    for (int k = 0; k < nb; k++) {
        const double *M = d->Mw + 36 * k, *v = d->V + 6 * k;
        double *R = d->P + 36 * k;
        for (int i = 0; i < 36; i++) R[i] = M[i];
        inertia_apply(M, v, d->hc + 6 * k);
        inertia_rate(M, v, d->Rdot + 36 * k);
    }
    for (int k = nb - 1; k >= 0; k--) {
        const int p = m->parent[k];
        if (p < 0) continue;
        double *restrict Rp = d->P + 36 * p, *restrict Rdp = d->Rdot + 36 * p, *restrict hp = d->hc + 6 * p;
        const double *Rk = d->P + 36 * k, *Rdk = d->Rdot + 36 * k, *hk = d->hc + 6 * k;
        for (int i = 0; i < 36; i++) {
            Rp[i] += Rk[i];
            Rdp[i] += Rdk[i];
        }
        for (int i = 0; i < 6; i++) hp[i] += hk[i];
    }
    composite_forces(m, d);
}

/* out(j, c) = out(c, j) = H_I(j) y for every dof j of body jb and of all its ancestors. */
static void store_up(const soa_model *m, const soa_data *d, int jb, const double *y, int c,
                     double *out)
{
    const int nv = m->nv;
    for (; jb >= 0; jb = m->parent[jb])
        for (int j = m->v0[jb]; j < m->v0[jb] + m->nvj[jb]; j++)
            out[j * nv + c] = out[c * nv + j] = dot6(d->Sw + 6 * j, y);
}

/* dM[slot[i]] = dM/dtheta_i (nv x nv) for every dof i with slot[i] >= 0, by the composite-body
 * form of seed 004 Lemma 5.3, eq. 5.52: for a pair j <= k (j's body an ancestor of, or k's),
 *     dM(j, k)/dtheta_i = H_I(j) HH_I(i) R_I(k) H*_I(k)                        j < i <= k
 *                       = H_I(j) [HH_I(i) R_I(i) + R_I(i) HH*_I(i)] H*_I(k)      k < i
 *                       = 0                                                  otherwise
 * with HH_I(i) = S[s(i)], S[x] f = x x* f (eqs. 2.7, 5.48) and R_I(i) the composite inertia of i's
 * body.  slot: nv entries in [-1, count); dM: count x nv x nv.  O(nv^3), the size of the answer. */
soa_status soa_mass_matrix_derivative(const soa_model *m, soa_data *d, const double *q,
                                      const int *slot, int count, double *dM)
{
    soa_status st = soa_check_configuration(m, q);
    if (st.kind != SOA_OK) return st;
    const int nb = m->nb, nv = m->nv;
    for (int i = 0; i < nv; i++)
        if (slot[i] < -1 || slot[i] >= count) {
            st.kind = SOA_BAD_ARG;
            st.index = i;
            return st;
        }
    soa_outward_placements(m, d, q);
    soa_world_placements(m, d);
    soa_joint_maps_to_world(m, d);
    soa_composite_inertia_sweep(m, d);
    composite_forces(m, d);
    for (size_t i = 0; i < (size_t)count * nv * nv; i++) dM[i] = 0.0;
    double y[6], t[6], t2[6];
    /* j < i <= k: H_I(j) [s(i) x* F(k)] over k's body kb, its ancestors ib (i) and theirs (j) */
    for (int kb = 0; kb < nb; kb++)
        for (int k = m->v0[kb]; k < m->v0[kb] + m->nvj[kb]; k++)
            for (int ib = kb; m->parent[ib] >= 0; ib = m->parent[ib])
                for (int i = m->v0[ib]; i < m->v0[ib] + m->nvj[ib]; i++) {
                    if (slot[i] < 0) continue;
                    cross_force(d->Sw + 6 * i, d->Fs + 6 * k, y);
                    store_up(m, d, m->parent[ib], y, k, dM + (size_t)slot[i] * nv * nv);
                }
    /* k < i, j <= k: H_I(j) [s(i) x* (R_I(i) s(k)) - R_I(i) (s(i) x~ s(k))] */
    for (int ib = 0; ib < nb; ib++)
        for (int i = m->v0[ib]; i < m->v0[ib] + m->nvj[ib]; i++) {
            if (slot[i] < 0) continue;
            const double *si = d->Sw + 6 * i, *Ri = d->P + 36 * ib;
            for (int kb = m->parent[ib]; kb >= 0; kb = m->parent[kb])
                for (int k = m->v0[kb]; k < m->v0[kb] + m->nvj[kb]; k++) {
                    inertia_apply(Ri, d->Sw + 6 * k, t);
                    cross_force(si, t, y);                 /* HH_I(i) R_I(i) s(k) */
                    cross_motion(si, d->Sw + 6 * k, t);
                    inertia_apply(Ri, t, t2);                    /* -R_I(i) HH*_I(i) s(k) */
                    for (int c = 0; c < 6; c++) y[c] -= t2[c];
                    store_up(m, d, kb, y, k, dM + (size_t)slot[i] * nv * nv);
                }
        }
    return st;
}

/* The Coriolis matrix C(theta, beta): C beta = bias - gravity forces, Mdot - 2C skew-symmetric,
 * the Levi-Civita connection of the kinetic-energy metric in the velocity frame (seed 004 eq. 5.53
 * for 1-dof joints; soa_fmu.sensitivities gives the general form).  For dofs a <= b (bodies
 * A <= B), with u(a) = s(a) x~ V_I(A):
 *     C(a, b) = s(a) . [1/2 (Rdot(B) s(b) + s(b) x* h(B)) - R_I(B) u(b)]  =  s(a) . X(b)
 *     C(b, a) = s(a) . [1/2 (Rdot(B) s(b) - s(b) x* h(B))] - F(b) . u(a)   =  s(a) . Y(b) - F(b) . u(a)
 * (the second for A < B).  O(N nv) after the O(N) sweeps; C: nv x nv, row-major. */
soa_status soa_coriolis_matrix(const soa_model *m, soa_data *d, const double *q, const double *qd,
                               double *C)
{
    soa_status st = soa_check_state(m, q, qd);
    if (st.kind != SOA_OK) return st;
    const int nb = m->nb, nv = m->nv;
    soa_outward_placements(m, d, q);
    soa_world_placements(m, d);
    soa_joint_maps_to_world(m, d);
    soa_inertias_to_world(m, d);
    soa_inertial_velocities(m, d, qd);
    soa_composite_rates(m, d);
    for (int k = 0; k < nb; k++)
        for (int b = m->v0[k]; b < m->v0[k] + m->nvj[k]; b++) {
            const double *s = d->Sw + 6 * b;
            double *u = d->cor_u + 6 * b, *X = d->cor_X + 6 * b, *Y = d->cor_Y + 6 * b, t[6], g[6];
            cross_motion(s, d->V + 6 * k, u);
            inertia_apply(d->Rdot + 36 * k, s, t);           /* Rdot s */
            cross_force(s, d->hc + 6 * k, g);          /* s x* h */
            inertia_apply(d->P + 36 * k, u, X);              /* R_I u */
            for (int c = 0; c < 6; c++) {
                X[c] = 0.5 * (t[c] + g[c]) - X[c];
                Y[c] = 0.5 * (t[c] - g[c]);
            }
        }
    for (int i = 0; i < nv * nv; i++) C[i] = 0.0;      /* pairs on different branches stay 0 */
    for (int B = 0; B < nb; B++)
        for (int b = m->v0[B]; b < m->v0[B] + m->nvj[B]; b++) {
            const double *X = d->cor_X + 6 * b, *Y = d->cor_Y + 6 * b, *F = d->Fs + 6 * b;
            for (int a = m->v0[B]; a < m->v0[B] + m->nvj[B]; a++) C[a * nv + b] = dot6(d->Sw + 6 * a, X);
            for (int A = m->parent[B]; A >= 0; A = m->parent[A])
                for (int a = m->v0[A]; a < m->v0[A] + m->nvj[A]; a++) {
                    C[a * nv + b] = dot6(d->Sw + 6 * a, X);
                    C[b * nv + a] = dot6(d->Sw + 6 * a, Y) - dot6(F, d->cor_u + 6 * a);
                }
        }
    return st;
}
