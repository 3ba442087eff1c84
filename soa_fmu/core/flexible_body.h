/* One flexible body's step of the sweeps (SPEC E15; seed 000 sec. 4, eq. 4.1; the model in
 * flexible.c's header): the placement of a child's joint frame on a deformed node of its flexible
 * parent (node_placement) and a body's velocity, velocity-product acceleration, gyroscopic force
 * and gravity (body_velocity).  Static inline, below the sweeps: kinematics.c dispatches to them
 * (soa_flex_attachment, soa_flex_velocities) and flexible.c compiles them into each of soa_flex_fd's
 * kernels (FLEX_UNROLLED) with constant sizes.  They call only spatial.h. */
#ifndef SOA_FLEXIBLE_BODY_H
#define SOA_FLEXIBLE_BODY_H

#include <math.h>

#include "soa.h"
#include "spatial.h"

/* Forced inline: compiled into each of soa_flex_fd's kernels (FLEX_UNROLLED, flexible.c). */
#if defined(__GNUC__)
#define FLEX_INLINE static inline __attribute__((always_inline))
#else
#define FLEX_INLINE static inline
#endif

/* ------------------------------------------------------------------ SO(3) of a node's rotation */
/* The SO(3) quantities of a node's rotation vector theta (s = |theta|, K = theta~):
 * R = exp(K) = I + c1 K + a K^2 and the left Jacobian J_l = R J_r = I + a K + b K^2 (the node's
 * angular velocity in parent axes is J_l theta-dot), with c1 = sin s / s, a = (1 - cos s) / s^2,
 * b = (s - sin s) / s^3; co <- (a, b, a'/s, b'/s) for the rate so3_jacobian_rate.  One sincos of
 * s / 2; series below s = 0.02, where the closed forms cancel. */
FLEX_INLINE void so3_node(const double *th, double *R, double *J, double *co)
{
    const double s2 = th[0] * th[0] + th[1] * th[1] + th[2] * th[2], s = sqrt(s2);
    double c1, a, b, a1, b1;
    if (s < 0.02) {
        c1 = 1.0 - s2 / 6.0 * (1.0 - s2 / 20.0);
        a = 0.5 - s2 / 24.0 * (1.0 - s2 / 30.0);
        b = 1.0 / 6.0 - s2 / 120.0 * (1.0 - s2 / 42.0);
        a1 = -1.0 / 12.0 + s2 / 180.0 - s2 * s2 / 6720.0;
        b1 = -1.0 / 60.0 + s2 / 1260.0 - s2 * s2 / 60480.0;
    } else {
        double h, c;
        soa_sincos(0.5 * s, &c, &h);
        const double sn = 2.0 * h * c, omc = 2.0 * h * h;
        const double i1 = 1.0 / s, i2 = i1 * i1, i4 = i2 * i2;   /* one division */
        c1 = sn * i1;
        a = omc * i2;
        b = (s - sn) * i2 * i1;
        a1 = (s * sn - 2.0 * omc) * i4;
        b1 = (omc * s - 3.0 * (s - sn)) * i4 * i1;
    }
    /* K = [0 -z y; z 0 -x; -y x 0], K^2 = theta theta* - s^2 I written out (no products with
     * K's zeros): R = I + c1 K + a K^2, J = I + a K + b K^2 */
    const double x = th[0], y = th[1], z = th[2];
    const double xy = x * y, xz = x * z, yz = y * z;
    const double d0 = -(y * y + z * z), d1 = -(x * x + z * z), d2 = -(x * x + y * y);
    R[0] = 1.0 + a * d0;      R[4] = 1.0 + a * d1;      R[8] = 1.0 + a * d2;
    R[1] = a * xy - c1 * z;   R[3] = a * xy + c1 * z;
    R[2] = a * xz + c1 * y;   R[6] = a * xz - c1 * y;
    R[5] = a * yz - c1 * x;   R[7] = a * yz + c1 * x;
    J[0] = 1.0 + b * d0;      J[4] = 1.0 + b * d1;      J[8] = 1.0 + b * d2;
    J[1] = b * xy - a * z;    J[3] = b * xy + a * z;
    J[2] = b * xz + a * y;    J[6] = b * xz - a * y;
    J[5] = b * yz - a * x;    J[7] = b * yz + a * x;
    co[0] = a; co[1] = b; co[2] = a1; co[3] = b1;
}

/* Jd = (d/dt J_l) theta-dot = a-dot (theta x thd) + b-dot theta x (theta x thd)
 *      + b thd x (theta x thd),  a-dot = (a'/s) theta.thd,  b-dot = (b'/s) theta.thd
 * (K-dot theta-dot = thd x thd = 0), and the node's angular velocity w = J_l thd = thd
 * + a theta x thd + b theta x (theta x thd) from the same cross products; co from so3_node. */
static void so3_jacobian_rate(const double *restrict th, const double *restrict thd,
                              const double *restrict co, double *restrict Jd, double *restrict w)
{
    const double td = th[0] * thd[0] + th[1] * thd[1] + th[2] * thd[2];
    double c[3], cc[3], dc[3];
    cross3(th, thd, c);
    cross3(th, c, cc);
    cross3(thd, c, dc);
    for (int i = 0; i < 3; i++) {
        Jd[i] = co[2] * td * c[i] + co[3] * td * cc[i] + co[1] * dc[i];
        w[i] = thd[i] + co[0] * c[i] + co[1] * cc[i];
    }
}

static inline void mat3_vec(const double *A, const double *x, double *y)
{
    for (int i = 0; i < 3; i++) y[i] = A[3 * i] * x[0] + A[3 * i + 1] * x[1] + A[3 * i + 2] * x[2];
}

static inline void mat3t_vec(const double *A, const double *x, double *y)
{
    for (int i = 0; i < 3; i++) y[i] = A[i] * x[0] + A[3 + i] * x[1] + A[6 + i] * x[2];
}

/* (rows 0-2, rows 3-5) . x for a 6 x n block of row stride ld: a node's rotation and translation. */
FLEX_INLINE void node_motion(const double *restrict Psi, int ld, int n, const double *restrict x,
                             double *restrict th, double *restrict u)
{
    for (int i = 0; i < 3; i++) {
        double r = 0.0, t = 0.0;
        for (int j = 0; j < n; j++) {
            r += Psi[i * ld + j] * x[j];
            t += Psi[(3 + i) * ld + j] * x[j];
        }
        th[i] = r;
        u[i] = t;
    }
}

/* ------------------------------------------------------------------ sizes of a body's step */
/* The sizes one body's step runs on: its modes mk, its parent's mp and the model's nm (the row
 * strides of the flexible tables, nx = 6 + nm).  soa_flex_fd passes them as constants to the
 * kernels of the uniform bodies (FLEX_UNROLLED), so that their short loops unroll. */
typedef struct {
    int mk, mp, nm;
} flex_dims;

static flex_dims dims_of(const soa_model *m, int k)
{
    const int p = m->parent[k];
    return (flex_dims){m->nmod[k], p < 0 ? 0 : m->nmod[p], m->nm};
}

/* out += x (u x e_j) for a unit axis e_j (its entry j unchanged). */
static inline void add_cross_unit(const double *u, int j, double x, double *out)
{
    const int a = (j + 1) % 3, b = (j + 2) % 3;
    out[a] += x * u[b];
    out[b] -= x * u[a];
}

/* V += x e_ax and out = base + V x~ (x e_ax) for a coordinate axis ax = 0-5 (base NULL: 0): the
 * two cross products with e of [w x e; v x e] x for a rotation, [0; w x e] x for a translation.
 * Called with ax a constant (joint_rate), so that the indices fold. */
FLEX_INLINE void axis_rate(double *V, int ax, double x, const double *base, double *out)
{
    V[ax] += x;
    for (int i = 0; i < 6; i++) out[i] = base ? base[i] : 0.0;
    if (ax < 3) {
        add_cross_unit(V, ax, x, out);
        add_cross_unit(V + 3, ax, x, out + 3);
    } else {
        add_cross_unit(V, ax - 3, x, out + 3);
    }
}

/* V += rel, the joint's relative velocity H* beta, and out = base + V x~ rel, the velocity product
 * (cross_motion; base NULL: 0); rel = qd e_ax when ax >= 0 (axis_rate, one copy per axis). */
FLEX_INLINE void joint_rate(double *V, const double *rel, int ax, const double *base, double *out)
{
    switch (ax) {
    case 0: axis_rate(V, 0, rel[0], base, out); return;
    case 1: axis_rate(V, 1, rel[1], base, out); return;
    case 2: axis_rate(V, 2, rel[2], base, out); return;
    case 3: axis_rate(V, 3, rel[3], base, out); return;
    case 4: axis_rate(V, 4, rel[4], base, out); return;
    case 5: axis_rate(V, 5, rel[5], base, out); return;
    default: break;
    }
    double x[6];
    for (int i = 0; i < 6; i++) V[i] += rel[i];
    cross_motion(V, rel, x);
    for (int i = 0; i < 6; i++) out[i] = (base ? base[i] : 0.0) + x[i];
}

/* ------------------------------------------------------------------ kinematics (eq. 4.1) */
/* The record d->fl_node of an attachment, kept by node_placement for the velocity sweep: the
 * deformed node's position r + u in the parent and so3_node's coefficients. */
enum { NODE_RU = 0, NODE_CO = 3, NODE = 7 };

/* node_placement forms Gamma_p's columns GAMMA_BLOCK at a time. */
enum { GAMMA_BLOCK = 4 };

/* The placement (R_A, l_A) of body k's joint frame when it sits on a node of the flexible parent
 * p: the joint frame A is carried by the node's deformation, x -> r + u + R(theta)(x - r), so
 * R_A = R(theta) Xr, l_A = r + u + R(theta)(Xp - r) (d->fl_RA, d->fl_lA).  Also
 * the C* h* term of seed 000 eq. 4.1 as a twist at the parent's origin in parent axes,
 *   Gamma_p = [J_l Psi_r;  Psi_t + (r + u) x J_l Psi_r]
 * (the node turns at J_l theta-dot and moves at u-dot; that rigid motion seen at p's origin), so
 * that V(k) = phi*(p, k) (V(p) + Gamma_p eta-dot(p)) + H* beta-dot and Phi(p, k) = [phi(p, k);
 * Gamma_p* phi(p, k)]: no transform of Gamma to body k is needed by the recursions.  Gamma_p is
 * stored by columns (d->fl_GA + 6 nm k, column c at 6 c).  (R, l) follow from (R_A, l_A) by
 * placement_in (placement.h). */
FLEX_INLINE void node_placement(const soa_model *m, soa_data *d, int k, const double *q,
                                flex_dims dm)
{
    const int p = m->parent[k], mp = dm.mp, nm = dm.nm;
    const double *Psi = m->at_Psi + 6 * nm * k, *r = m->at_r + 3 * k;
    const double *Xr = m->Xr + 9 * k, *Xp = m->Xp + 3 * k;
    double *th = d->fl_th + 3 * k, *RA = d->fl_RA + 9 * k, *lA = d->fl_lA + 3 * k;
    double *G = d->fl_GA + 6 * nm * k, *node = d->fl_node + NODE * k, *ru = node + NODE_RU;
    double u[3], Rt[9], J[9];
    const int aligned = m->fl_frame[k] & 1;    /* joint frame along the parent's axes: R_A = R(theta) */
    node_motion(Psi, nm, mp, q + m->q0[p] + m->nqj[p], th, u);
    so3_node(th, aligned ? RA : Rt, J, node + NODE_CO);
    for (int i = 0; i < 3; i++) ru[i] = r[i] + u[i];
    const double *R = aligned ? RA : Rt;
    if (!(m->fl_frame[k] & 2)) {                           /* joint frame off the node */
        const double e[3] = {Xp[0] - r[0], Xp[1] - r[1], Xp[2] - r[2]};
        double Re[3];
        mat3_vec(R, e, Re);
        for (int i = 0; i < 3; i++) lA[i] = ru[i] + Re[i];
    } else {
        for (int i = 0; i < 3; i++) lA[i] = ru[i];
    }
    if (!aligned)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
                RA[3 * i + j] = Rt[3 * i] * Xr[j] + Rt[3 * i + 1] * Xr[3 + j] + Rt[3 * i + 2] * Xr[6 + j];
    for (int c0 = 0; c0 < mp; c0 += GAMMA_BLOCK) {     /* J Psi_r: 3 x 3 by 3 x n, rows of Psi */
        const int n = mp - c0 < GAMMA_BLOCK ? mp - c0 : GAMMA_BLOCK;
        const double *P = Psi + c0;
        double w[3][GAMMA_BLOCK];
        for (int i = 0; i < 3; i++)
            for (int c = 0; c < n; c++)
                w[i][c] = J[3 * i] * P[c] + J[3 * i + 1] * P[nm + c] + J[3 * i + 2] * P[2 * nm + c];
        for (int c = 0; c < n; c++) {                   /* column c0 + c of Gamma_p */
            double *Gc = G + 6 * (c0 + c);
            Gc[0] = w[0][c];
            Gc[1] = w[1][c];
            Gc[2] = w[2][c];
            Gc[3] = P[3 * nm + c] + (ru[1] * w[2][c] - ru[2] * w[1][c]);   /* + (r + u) x w */
            Gc[4] = P[4 * nm + c] + (ru[2] * w[0][c] - ru[0] * w[2][c]);
            Gc[5] = P[5 * nm + c] + (ru[0] * w[1][c] - ru[1] * w[0][c]);
        }
    }
}

/* 0-5 when body k's joint is 1-dof with H* = e_ax (about, or + 3 along, a coordinate axis:
 * jmap, soa_model_finish), else -1. */
static inline int hinge_axis(const soa_model *m, int k)
{
    return m->jmap[k] < 6 ? m->jmap[k] : -1;
}

/* Body k's V, a, b and gravity (the outward velocity step, seed 000 eq. 4.1):
 *   V(k) = phi*(p, k) (V(p) + g) + H* beta(k),  g = Gamma_p eta-dot(p),
 * and the velocity-product acceleration a(k) of alpha(k) = phi*(p, k) (alpha(p) + Gamma_p
 * eta-ddot(p)) + H* beta-dot + a(k):
 *   a(k) = phi*(p, k) [Gamma_p-dot eta-dot + V(p) x~ g] + V(k) x~ H* beta(k),
 *   Gamma_p-dot eta-dot = [Jd;  u-dot x w + (r + u) x Jd],  w = J_l theta-dot,
 * Jd = J_l-dot theta-dot (so3_jacobian_rate), u-dot = Psi_t eta-dot; the gyroscopic force
 * b(k) = V x* (fl_M's rows of V) (V; eta-dot) (Euler-Poincare: fl_M is constant in the body
 * frame); gravity g in body axes.  Needs the placements of k (and V, gravity of its parent). */
FLEX_INLINE void body_velocity(const soa_model *m, soa_data *d, int k, const double *qd,
                               flex_dims dm)
{
    const int p = m->parent[k], v0 = m->v0[k], mk = dm.mk, mp = dm.mp, nm = dm.nm, nx = 6 + nm;
    const double *R = d->R + 9 * k, *l = d->l + 3 * k;
    double *V = d->V + 6 * k, *a = d->a + 6 * k, rel[6] = {0, 0, 0, 0, 0, 0};
    const int ax = hinge_axis(m, k);
    if (ax >= 0)
        rel[ax] = qd[v0];                                  /* H* = e_ax */
    else
        for (int dd = 0; dd < m->nvj[k]; dd++) {
            const double *s = m->S + 6 * (v0 + dd), x = qd[v0 + dd];
            for (int i = 0; i < 6; i++) rel[i] += s[i] * x;
        }
    if (p < 0) {
        for (int i = 0; i < 6; i++) {
            V[i] = rel[i];
            a[i] = 0.0;                                    /* V x~ rel = rel x~ rel = 0 */
        }
    } else if (m->attach[k]) {
        const double *etad = qd + m->v0[p] + m->nvj[p], *Psi = m->at_Psi + 6 * nm * k;
        const double *th = d->fl_th + 3 * k, *node = d->fl_node + NODE * k, *Vp = d->V + 6 * p;
        const double *ru = node + NODE_RU;
        double thd[3], ud[3], Jd[3], w[3], t[3], e[3], Vq[6], c[6], x[6];
        node_motion(Psi, nm, mp, etad, thd, ud);
        so3_jacobian_rate(th, thd, node + NODE_CO, Jd, w);     /* w = J_l theta-dot */
        /* phi*(p, k) = [R* 0; 0 R*] after the shift to k's origin l = (r + u) + e; with the node's
         * velocity s = v_p + w_p x (r + u) + u-dot the terms in (r + u) x w cancel:
         *   V(p) + g at l:   [w_p + w;  s + (w_p + w) x e]
         *   c at l:          [c_w;  s x w + w_p x u-dot + c_w x e],  c_w = w_p x w + Jd
         * (the Jacobi identity; e = 0 for a joint frame on the node with no joint translation). */
        cross3(Vp, ru, t);
        cross3(Vp, w, c);
        for (int i = 0; i < 3; i++) {
            Vq[i] = Vp[i] + w[i];
            Vq[3 + i] = Vp[3 + i] + t[i] + ud[i];
            c[i] += Jd[i];
            e[i] = l[i] - ru[i];
        }
        cross3(Vq + 3, w, t);
        cross3(Vp, ud, x);
        for (int i = 0; i < 3; i++) c[3 + i] = t[i] + x[i];
        if (e[0] != 0.0 || e[1] != 0.0 || e[2] != 0.0) {
            cross3(Vq, e, t);
            cross3(c, e, x);
            for (int i = 0; i < 3; i++) {
                Vq[3 + i] += t[i];
                c[3 + i] += x[i];
            }
        }
        mat3t_vec(R, c, x);
        mat3t_vec(R, c + 3, x + 3);
        mat3t_vec(R, Vq, V);
        mat3t_vec(R, Vq + 3, V + 3);
        joint_rate(V, rel, ax, x, a);
    } else {
        apply_phi_star(R, l, d->V + 6 * p, V);
        joint_rate(V, rel, ax, NULL, a);
    }
    /* gravity in body axes: g(k) = R* g(p), g(world) = -a0[3..5] */
    const double gw[3] = {-m->a0[3], -m->a0[4], -m->a0[5]};
    mat3t_vec(R, p < 0 ? gw : d->fl_gb + 3 * p, d->fl_gb + 3 * k);
    /* b = V x* (M_VV V + M_Veta eta-dot); M_VV = M(k), the rigid spatial inertia soa_model_finish
     * writes there, [[J, c~], [-c~, m 1]] applied in compact form (inertia_apply) */
    const double *M = m->fl_M + nx * nx * k, *etad = qd + v0 + m->nvj[k];
    const double Ic[10] = {M[0], M[1], M[2], M[nx + 1], M[nx + 2], M[2 * nx + 2], M[2 * nx + 4],
                           M[5], M[nx + 3], M[3 * nx + 3]};
    double h[6];
    inertia_apply(Ic, V, h);
    for (int i = 0; i < 6; i++) {
        const double *r = M + nx * i + 6;
        double s = h[i];
        for (int j = 0; j < mk; j++) s += r[j] * etad[j];
        h[i] = s;
    }
    cross_force(V, h, d->b + 6 * k);
}

#endif
