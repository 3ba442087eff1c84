/* Mass-matrix sensitivities and the Coriolis matrix (SPEC E14; seed 004).
 *
 * Derivatives are taken along the velocity directions: d/dtheta_i X = d/de X(theta (+) e e_i), the
 * body of dof i moving by exp(e H*(i)) in its own frame (soa_fmu.sensitivities explains why).
 * Everything is evaluated in the inertial frame I of seed 004 sec. 5.2 (world axes at the world
 * origin), where phi is the identity:
 *     s(i) = H*_I(i)                           eq. 5.47           d->Sw
 *     M_I(k)                                   eq. 5.44           d->Mw
 *     R_I(k) = sum_{c >= k} M_I(c)             eqs. 5.44, 5.50    d->Ri (a plain sum in one frame)
 *     F(i) = R_I(k) s(i),  k the body of i     (the CRBA force)   d->Fs
 * and, for the velocity-dependent terms, the composite momentum h(k) = sum_{c >= k} M_I(c) V_I(c)
 * and the rate of R_I, Rdot(k) = sum_{c >= k} (V_I x* M_I - M_I V_I x~)(c) (eq. 3.19 for a body).
 * "a above b" (a < b in the kernels' comments) compares the BODIES of dofs along the tree: the body
 * of a is an ancestor of the body of b; the dofs of one joint count as equal. */
#include <math.h>
#include <stddef.h>

#include "soa.h"
#include "spatial.h"

/* Idot = V x* I - I V x~ of a body inertia in compact form (J, c = m p, m), inertial frame (seed 004
 * eq. 3.19), V = [w; v].  The mass is constant, so the 6x6 rate is [[Jdot, cdot~], [-cdot~, 0]] with
 *     Jdot = w~ J - J w~ + v~ c~* - c~ v~ = T + T* + 2 (v . c) 1 - v c* - c v*   (T = w~ J),
 *     cdot = m v + w x c. */
static void inertia_rate(const double *restrict Ic, const double *restrict V, double *restrict X)
{
    const double w[3] = {V[0], V[1], V[2]}, v[3] = {V[3], V[4], V[5]}, *c = Ic + 6;
    const double J[9] = {Ic[0], Ic[1], Ic[2], Ic[1], Ic[3], Ic[4], Ic[2], Ic[4], Ic[5]};
    double T[9];
    for (int j = 0; j < 3; j++) {                     /* T(:, j) = w x J(:, j) */
        T[j] = w[1] * J[6 + j] - w[2] * J[3 + j];
        T[3 + j] = w[2] * J[j] - w[0] * J[6 + j];
        T[6 + j] = w[0] * J[3 + j] - w[1] * J[j];
    }
    const double vc = v[0] * c[0] + v[1] * c[1] + v[2] * c[2];
    static const int ij[6][2] = {{0, 0}, {0, 1}, {0, 2}, {1, 1}, {1, 2}, {2, 2}};
    for (int e = 0; e < 6; e++) {
        const int i = ij[e][0], j = ij[e][1];
        X[e] = T[3 * i + j] + T[3 * j + i] - v[i] * c[j] - c[i] * v[j] + (i == j ? 2.0 * vc : 0.0);
    }
    cross3(w, c, X + 6);
    for (int i = 0; i < 3; i++) X[6 + i] += Ic[9] * v[i];
    X[9] = 0.0;
}

/* R_I(k) = sum_{c >= k} M_I(c) in compact form into Ri (eqs. 5.44, 5.50: a plain sum in one frame),
 * with `rates` also Rdot(k) and h(k) (needs the inertial velocities V_I), and F(i) = R_I s(i): one
 * inward pass.  Needs Mw and Sw. */
static void composite_inertias(const soa_model *m, soa_data *d, int rates)
{
    const int nb = m->nb;
    for (int k = 0; k < nb; k++) {
        double *R = d->Ri + 10 * k;
        inertia_compact(d->Mw + 36 * k, R);
        if (rates) {
            inertia_apply(R, d->V + 6 * k, d->hc + 6 * k);
            inertia_rate(R, d->V + 6 * k, d->Rdot + 10 * k);
        }
    }
    for (int k = nb - 1; k >= 0; k--) {
        const int p = m->parent[k];
        if (p < 0) continue;
        for (int i = 0; i < 10; i++) d->Ri[10 * p + i] += d->Ri[10 * k + i];
        if (rates) {
            for (int i = 0; i < 10; i++) d->Rdot[10 * p + i] += d->Rdot[10 * k + i];
            for (int i = 0; i < 6; i++) d->hc[6 * p + i] += d->hc[6 * k + i];
        }
    }
    for (int k = 0; k < nb; k++)
        for (int a = m->v0[k]; a < m->v0[k] + m->nvj[k]; a++)
            inertia_apply(d->Ri + 10 * k, d->Sw + 6 * a, d->Fs + 6 * a);
}

/* R_I (Ri), Rdot, h and F for the velocity-dependent kernels (here and in derivatives.c). */
void soa_composite_rates(const soa_model *m, soa_data *d)
{
    composite_inertias(m, d, 1);
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

/* ------------------------------------------------------------------ flexible models */
/* w = the coordinates of x in the n velocity directions S (rows of 6) of one joint, S* w = x for
 * x in their span (a Lie bracket of them): the normal equations S S* w = S x by Cholesky, n <= 6.
 * w = 0 if S's rows are dependent. */
static void joint_coordinates(const double *S, int n, const double *x, double *w)
{
    double N[36], y[6];
    for (int i = 0; i < n; i++) {
        w[i] = 0.0;
        for (int j = 0; j <= i; j++) {
            double s = dot6(S + 6 * i, S + 6 * j);
            for (int c = 0; c < j; c++) s -= N[6 * i + c] * N[6 * j + c];
            if (i == j && !(s > 0.0)) return;
            N[6 * i + j] = i == j ? sqrt(s) : s / N[7 * j];
        }
    }
    for (int i = 0; i < n; i++) {
        double s = dot6(S + 6 * i, x);
        for (int c = 0; c < i; c++) s -= N[6 * i + c] * y[c];
        y[i] = s / N[7 * i];
    }
    for (int i = n - 1; i >= 0; i--) {
        double s = y[i];
        for (int c = i + 1; c < n; c++) s -= N[6 * c + i] * w[c];
        w[i] = s / N[7 * i];
    }
}

/* C(theta, beta) of a model with flexible bodies (seed 000 sec. 4), the same connection as the
 * rigid kernel's, from the Newton-Euler velocity-product forces c(x) = C(theta, x) x =
 * x* CC_a x (soa_flex_bias; CC the quasi-velocity Christoffel symbols of soa_fmu.sensitivities),
 * a quadratic form in x: the part of Koszul's formula symmetric in (b, c) gives 1/2 dc/dbeta_b,
 * and its structure-constant part antisymmetric in (b, c), 1/2 sum_{c,e} gamma^e_cb beta_c M(e, a),
 * is 1/2 M w(b), with w(b) the coordinates of (H*_J beta_J) x~ H*(b) in the directions of b's
 * joint J (zero for 1-dof joints and for modal coordinates):
 *     C(:, b) = [c(beta + t e_b) - c(beta - t e_b)] / (4 t) + 1/2 M w(b),
 * the polarization exact for a quadratic form (t = max |beta| keeps its terms of one size).  Two
 * O(N) Newton-Euler passes per column (one more per dof of a multi-dof joint): O(N nv).  Needs the
 * placements; beta must not be d->cor_fl's first row. */
static void flex_connection(const soa_model *m, soa_data *d, const double *q, const double *beta,
                            double *C)
{
    const int nv = m->nv;
    double *x = d->cor_fl, *cp = x + nv, *cm = x + 2 * nv, t = 0.0;
    for (int i = 0; i < nv; i++) {
        x[i] = beta[i];
        t = fabs(beta[i]) > t ? fabs(beta[i]) : t;
    }
    if (t == 0.0) t = 1.0;
    for (int b = 0; b < nv; b++) {
        x[b] = beta[b] + t;
        soa_flex_bias(m, d, q, x, cp);
        x[b] = beta[b] - t;
        soa_flex_bias(m, d, q, x, cm);
        x[b] = beta[b];
        for (int a = 0; a < nv; a++) C[a * nv + b] = (cp[a] - cm[a]) / (4.0 * t);
    }
    for (int k = 0; k < m->nb; k++) {                     /* the structure-constant term */
        const int n = m->nvj[k], v0 = m->v0[k];
        if (n < 2) continue;
        double vr[6] = {0, 0, 0, 0, 0, 0}, br[6];
        for (int j = 0; j < n; j++)
            for (int c = 0; c < 6; c++) vr[c] += m->S[6 * (v0 + j) + c] * beta[v0 + j];
        for (int b = v0; b < v0 + n; b++) {
            cross_motion(vr, m->S + 6 * b, br);
            if (br[0] == 0.0 && br[1] == 0.0 && br[2] == 0.0 && br[3] == 0.0 && br[4] == 0.0
                && br[5] == 0.0)
                continue;
            for (int i = 0; i < nv; i++) x[i] = 0.0;
            joint_coordinates(m->S + 6 * v0, n, br, x + v0);
            soa_flex_mass_apply(m, d, q, x, cp);
            for (int a = 0; a < nv; a++) C[a * nv + b] += 0.5 * cp[a];
        }
    }
}

/* dM/dtheta_i = C(theta, e_i) + C(theta, e_i)* for a model with flexible bodies: the connection
 * is metric (Mdot = C + C* along any motion, soa_fmu.sensitivities), and Mdot is linear in the
 * velocity.  O(N nv) per i, O(N nv^2) for all: the size of the answer, as the rigid form. */
static void flex_mass_matrix_derivative(const soa_model *m, soa_data *d, const double *q,
                                        const int *slot, double *dM)
{
    const int nv = m->nv;
    double *e = d->cor_fl + 3 * nv;
    for (int i = 0; i < nv; i++) e[i] = 0.0;
    for (int i = 0; i < nv; i++) {
        if (slot[i] < 0) continue;
        double *X = dM + (size_t)slot[i] * nv * nv;
        e[i] = 1.0;
        flex_connection(m, d, q, e, X);
        e[i] = 0.0;
        for (int a = 0; a < nv; a++)
            for (int b = 0; b <= a; b++) X[a * nv + b] = X[b * nv + a] = X[a * nv + b] + X[b * nv + a];
    }
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
    if (m->nm) {                                       /* flexible bodies */
        flex_mass_matrix_derivative(m, d, q, slot, dM);
        return soa_check_result(dM, count * nv, nv);
    }
    soa_world_placements(m, d);
    soa_joint_maps_to_world(m, d);
    soa_inertias_to_world(m, d);
    composite_inertias(m, d, 0);
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
            const double *si = d->Sw + 6 * i, *Ri = d->Ri + 10 * ib;
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
    if (m->nm) {                                       /* flexible bodies */
        flex_connection(m, d, q, qd, C);
        return soa_check_result(C, nv, nv);
    }
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
            inertia_apply(d->Rdot + 10 * k, s, t);           /* Rdot s */
            cross_force(s, d->hc + 6 * k, g);          /* s x* h */
            inertia_apply(d->Ri + 10 * k, u, X);              /* R_I u */
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
