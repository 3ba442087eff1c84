/* Kinematics (SPEC E4): placements, V = phi* H* beta, a(k), b(k), alpha, and the Jacobian
 * J = B* phi* H* of a point (seed 000 eqs. 2.8, 2.13-2.14; seed 001 eqs. 6-9, 20-21, 25).
 * These outward sweeps are shared by every algorithm family. */
#include <math.h>

#include "soa.h"
#include "spatial.h"
#include "placement.h"
#include "flexible_body.h"

/* R(k), l(k): body k's placement in its parent at theta (joint placement x joint transform). */
void soa_outward_placements(const soa_model *m, soa_data *d, const double *q)
{
    for (int k = 0; k < m->nb; k++) {
        double *Rj = d->Rj + 9 * k, *tj = d->tj + 3 * k, *R = d->R + 9 * k, *l = d->l + 3 * k;
        const double *Xr = m->Xr + 9 * k, *Xp = m->Xp + 3 * k;
        soa_joint_transform(m, k, q, Rj, tj);
        for (int i = 0; i < 3; i++) {
            const double *x = Xr + 3 * i;
            for (int j = 0; j < 3; j++) R[3 * i + j] = x[0] * Rj[j] + x[1] * Rj[3 + j] + x[2] * Rj[6 + j];
            l[i] = Xp[i] + x[0] * tj[0] + x[1] * tj[1] + x[2] * tj[2];
        }
        if (m->nm && m->attach[k]) soa_flex_attachment(m, d, k, q);   /* on a deformed node */
    }
}

/* Rw(k), pw(k): each body's placement in world, base to tip (after soa_outward_placements). */
void soa_world_placements(const soa_model *m, soa_data *d)
{
    for (int k = 0; k < m->nb; k++) {
        const int p = m->parent[k];
        const double *R = d->R + 9 * k, *l = d->l + 3 * k;
        double *Rw = d->Rw + 9 * k, *pw = d->pw + 3 * k;
        if (p < 0) {
            for (int i = 0; i < 9; i++) Rw[i] = R[i];
            for (int i = 0; i < 3; i++) pw[i] = l[i];
            continue;
        }
        const double *Rp = d->Rw + 9 * p, *pp = d->pw + 3 * p;
        for (int i = 0; i < 3; i++) {
            const double *r = Rp + 3 * i;
            for (int j = 0; j < 3; j++) Rw[3 * i + j] = r[0] * R[j] + r[1] * R[3 + j] + r[2] * R[6 + j];
            pw[i] = pp[i] + r[0] * l[0] + r[1] * l[1] + r[2] * l[2];
        }
    }
}

/* out += H*(k) x(v0 : v0 + r_v): the relative spatial velocity across joint k. */
static inline void add_joint_motion(const soa_model *m, int k, const double *x, double *out)
{
    const int v0 = m->v0[k];
    for (int dd = 0; dd < m->nvj[k]; dd++) {
        const double *s = m->S + 6 * (v0 + dd), xd = x[v0 + dd];
        for (int i = 0; i < 6; i++) out[i] += s[i] * xd;
    }
}

/* V(k) = phi*(p, k) V(p) + H*(k) beta(k);  a(k) = V(k) x~ H*(k) beta(k);  b(k) = V(k) x* M(k) V(k)
 * (seed 000 eq. 2.8; seed 001 eqs. 6-9).  Needs soa_outward_placements first. */
void soa_outward_velocities(const soa_model *m, soa_data *d, const double *qd)
{
    for (int k = 0; k < m->nb; k++) {
        const int p = m->parent[k];
        double *V = d->V + 6 * k, rel[6] = {0, 0, 0, 0, 0, 0}, MV[6];
        if (p < 0)
            for (int i = 0; i < 6; i++) V[i] = 0.0;
        else
            apply_phi_star(d->R + 9 * k, d->l + 3 * k, d->V + 6 * p, V);
        add_joint_motion(m, k, qd, rel);
        for (int i = 0; i < 6; i++) V[i] += rel[i];
        cross_motion(V, rel, d->a + 6 * k);
        matvec6(m->finertia + 36 * k, V, MV);
        cross_force(V, MV, d->b + 6 * k);
    }
}

/* Mw(k) <- M_I(k) = phi(I, k) M(k) phi*(I, k): each body's inertia at the world origin, world axes
 * (seed 004 eq. 5.44), formed from (m, p, J_C) moved to world: centre of mass pw + Rw p, rotational
 * inertia Rw J_C Rw^T.  Needs the world placements.  The folded rigid bodies' (m, p, J_C) (model.c:
 * a folded link's are 0, its inertia is its carrier's). */
void soa_inertias_to_world(const soa_model *m, soa_data *d)
{
    for (int k = 0; k < m->nb; k++) {
        const double *Rw = d->Rw + 9 * k, *pw = d->pw + 3 * k, *p = m->fcom + 3 * k;
        double c[3], J[9];
        for (int i = 0; i < 3; i++) c[i] = pw[i] + Rw[3 * i] * p[0] + Rw[3 * i + 1] * p[1] + Rw[3 * i + 2] * p[2];
        rotate_symmetric3(Rw, m->fJc + 9 * k, 3, J);
        spatial_inertia(m->fmass[k], c, J, d->Mw + 36 * k);
    }
}

/* The velocity sweep in the inertial frame (world axes, world origin; seed 004 sec. 5.2), where
 * every phi*(p, k) is the identity:  V_I(k) = V_I(p) + H*_I(k) beta(k),
 * a_I(k) = V_I(k) x~ H*_I(k) beta(k),  b_I(k) = V_I(k) x* M_I(k) V_I(k).
 * Needs Sw (soa_joint_maps_to_world) and Mw (soa_inertias_to_world). */
void soa_inertial_velocities(const soa_model *m, soa_data *d, const double *qd)
{
    for (int k = 0; k < m->nb; k++) {
        const int p = m->parent[k], v0 = m->v0[k];
        double *V = d->V + 6 * k, rel[6] = {0, 0, 0, 0, 0, 0}, MV[6];
        for (int dd = 0; dd < m->nvj[k]; dd++) {
            const double *s = d->Sw + 6 * (v0 + dd), x = qd[v0 + dd];
            for (int i = 0; i < 6; i++) rel[i] += s[i] * x;
        }
        for (int i = 0; i < 6; i++) V[i] = (p < 0 ? 0.0 : d->V[6 * p + i]) + rel[i];
        cross_motion(V, rel, d->a + 6 * k);
        matvec6(d->Mw + 36 * k, V, MV);
        cross_force(V, MV, d->b + 6 * k);
    }
}

/* The inertial-frame kinematics of every body, pass by pass: placements, world placements, H*_I
 * (Sw), M_I (Mw), V_I, a_I, b_I (seed 004 sec. 5.2) -- for the kernels that read every body's Mw
 * (derivatives, closures, the contact state; soa_inertial_outward fuses these passes over the
 * moving bodies for forward dynamics). */
void soa_inertial_kinematics(const soa_model *m, soa_data *d, const double *q, const double *qd)
{
    soa_outward_placements(m, d, q);
    soa_world_placements(m, d);
    soa_joint_maps_to_world(m, d);
    soa_inertias_to_world(m, d);
    soa_inertial_velocities(m, d, qd);
}

/* alpha(k) = phi*(p, k) alpha(p) + H*(k) beta-dot(k) + a(k), alpha(world) = base (seed 001 eq. 25). */
void soa_outward_accelerations(const soa_model *m, soa_data *d, const double *qdd,
                               const double *base)
{
    for (int k = 0; k < m->nb; k++) {
        const int p = m->parent[k];
        double *al = d->alpha + 6 * k;
        apply_phi_star(d->R + 9 * k, d->l + 3 * k, p < 0 ? base : d->alpha + 6 * p, al);
        add_joint_motion(m, k, qdd, al);
        for (int i = 0; i < 6; i++) al[i] += d->a[6 * k + i];
    }
}

/* alpha_I(k) = alpha_I(p) + H*_I(k) beta-dot(k) + a_I(k), alpha_I(world) = base: the acceleration
 * sweep in the inertial frame (seed 001 eq. 25 with every phi* the identity, seed 004 sec. 5.2).
 * Needs soa_inertial_velocities (a_I) and Sw. */
void soa_inertial_accelerations(const soa_model *m, soa_data *d, const double *qdd,
                                const double *base)
{
    for (int k = 0; k < m->nb; k++) {
        const int p = m->parent[k], v0 = m->v0[k];
        const double *ap = p < 0 ? base : d->alpha + 6 * p;
        double *al = d->alpha + 6 * k;
        for (int i = 0; i < 6; i++) al[i] = ap[i] + d->a[6 * k + i];
        for (int dd = 0; dd < m->nvj[k]; dd++) {
            const double *s = d->Sw + 6 * (v0 + dd), x = qdd[v0 + dd];
            for (int i = 0; i < 6; i++) al[i] += s[i] * x;
        }
    }
}

/* o = H*_I of one dof: its body-frame joint map s as a motion at the world origin, world axes, for
 * a body at (R, p) in world. */
static inline void joint_map_to_world(const double *R, const double *p, const double *s, double *o)
{
    for (int i = 0; i < 3; i++) {
        o[i] = R[3 * i] * s[0] + R[3 * i + 1] * s[1] + R[3 * i + 2] * s[2];
        o[3 + i] = R[3 * i] * s[3] + R[3 * i + 1] * s[4] + R[3 * i + 2] * s[5];
    }
    /* velocity of the point at the world origin: v + w x (0 - p) = v + p x w */
    o[3] += p[1] * o[2] - p[2] * o[1];
    o[4] += p[2] * o[0] - p[0] * o[2];
    o[5] += p[0] * o[1] - p[1] * o[0];
}

/* Sw[i] = H*_I of velocity dof i: its unit twist as a motion at the world origin, world axes
 * (the inertial-frame joint maps of seed 004 sec. 5).  Needs the world placements. */
void soa_joint_maps_to_world(const soa_model *m, soa_data *d)
{
    for (int k = 0; k < m->nb; k++)
        for (int dd = 0; dd < m->nvj[k]; dd++)
            joint_map_to_world(d->Rw + 9 * k, d->pw + 3 * k, m->S + 6 * (m->v0[k] + dd),
                               d->Sw + 6 * (m->v0[k] + dd));
}

/* placement_in into the data: body k's R, l, Rj, tj. */
SOA_BODY_STEP void placement_in_parent(const soa_model *m, soa_data *d, int k, const double *q,
                                       const double *restrict Xr, const double *restrict Xp)
{
    placement_in(m, k, q, Xr, Xp, d->R + 9 * k, d->l + 3 * k, d->Rj + 9 * k, d->tj + 3 * k);
}

/* Body k's R, l, Rj, tj in its sweep parent for a revolute or prismatic joint about a
 * non-coordinate unit axis u, from the model's split of fXr Rj (jrot, soa_model_finish):
 * revolute R = C + c A + s B, l = fXp, Rj = u u^T + c (1 - u u^T) + s u~ (Rodrigues), tj = 0;
 * prismatic R = fXr, l = fXp + theta fXr u, Rj = 1, tj = theta u (seed 000 eq. 2.7). */
SOA_BODY_STEP void placement_any_axis(const soa_model *m, soa_data *d, int k, double th)
{
    const double *restrict u = m->axis + 3 * k, *restrict A = m->jrot + 27 * k,
                 *restrict B = A + 9, *restrict C = A + 18, *restrict Xp = m->fXp + 3 * k;
    double *restrict R = d->R + 9 * k, *restrict l = d->l + 3 * k, *restrict Rj = d->Rj + 9 * k,
           *restrict tj = d->tj + 3 * k;
    if (m->jtype[k] == SOA_PRISMATIC) {
        const double *restrict Xr = m->fXr + 9 * k;
        for (int i = 0; i < 9; i++) {
            R[i] = Xr[i];
            Rj[i] = (i % 4 == 0) ? 1.0 : 0.0;
        }
        for (int i = 0; i < 3; i++) {
            l[i] = Xp[i] + th * A[i];
            tj[i] = th * u[i];
        }
        return;
    }
    double c, sn;
    soa_sincos(th, &c, &sn);
    for (int i = 0; i < 9; i++) R[i] = C[i] + c * A[i] + sn * B[i];
    for (int i = 0; i < 3; i++) {
        l[i] = Xp[i];
        tj[i] = 0.0;
    }
    rodrigues(u, c, sn, Rj);
}

/* Sw <- H*_I of a joint's n dofs for a body at (R, p) in world (joint_map_to_world); axis 0-2: a
 * revolute joint about that coordinate axis (H* = [e; 0]: [R e; p x R e]), 3-5: a prismatic one
 * ([0; R e]), 6: a revolute joint about any axis (H* = [s; 0]: [R s; p x R s]), 7: a prismatic
 * one ([0; R s]), -1: any (the model's jmap). */
static inline void joint_maps_to_world(const double *restrict R, const double *restrict p,
                                       const double *restrict S, int n, int axis,
                                       double *restrict Sw)
{
    if (axis < 0) {
        for (int dd = 0; dd < n; dd++) joint_map_to_world(R, p, S + 6 * dd, Sw + 6 * dd);
        return;
    }
    const int e = axis % 3;
    double c0 = R[e], c1 = R[3 + e], c2 = R[6 + e];
    if (axis >= 6) {                                 /* R s, s the non-zero half of H* */
        const double *u = S + (axis == 6 ? 0 : 3);
        c0 = R[0] * u[0] + R[1] * u[1] + R[2] * u[2];
        c1 = R[3] * u[0] + R[4] * u[1] + R[5] * u[2];
        c2 = R[6] * u[0] + R[7] * u[1] + R[8] * u[2];
    }
    if (axis == 7 || (axis >= 3 && axis < 6)) {
        Sw[0] = Sw[1] = Sw[2] = 0.0;
        Sw[3] = c0; Sw[4] = c1; Sw[5] = c2;
        return;
    }
    Sw[0] = c0; Sw[1] = c1; Sw[2] = c2;
    Sw[3] = p[1] * c2 - p[2] * c1;
    Sw[4] = p[2] * c0 - p[0] * c2;
    Sw[5] = p[0] * c1 - p[1] * c0;
}

/* joint_maps_to_world's axis code of body k's joint (soa_model_finish). */
static inline int joint_axis(const soa_model *m, int k)
{
    return m->jmap[k];
}

/* (Rw, pw) <- (Rp R, pp + Rp l): a placement (R, l) in a frame at (Rp, pp) in world (NULL: the
 * world itself), seed 000 eq. 2.7. */
static inline void world_placement(const double *restrict R, const double *restrict l,
                                   const double *restrict Rp, const double *restrict pp,
                                   double *restrict Rw, double *restrict pw)
{
    if (!Rp) {
        for (int i = 0; i < 9; i++) Rw[i] = R[i];
        for (int i = 0; i < 3; i++) pw[i] = l[i];
        return;
    }
    for (int i = 0; i < 3; i++) {
        const double r0 = Rp[3 * i], r1 = Rp[3 * i + 1], r2 = Rp[3 * i + 2];
        for (int j = 0; j < 3; j++) Rw[3 * i + j] = r0 * R[j] + r1 * R[3 + j] + r2 * R[6 + j];
        pw[i] = pp[i] + r0 * l[0] + r1 * l[1] + r2 * l[2];
    }
}

/* One body of soa_inertial_outward, everything in registers (restrict: no reloads): from its
 * placement (R, l) in the sweep parent and the parent's (Rp, pp, Vp; NULL: the world), its world
 * placement (Rw, pw), H*_I of its n dofs (Sw; axis 0-2: a revolute joint about that coordinate
 * axis, 3-5 a prismatic one, -1 any), M_I in compact form (Ic, from the split rotational inertia
 * Jg) and packed as P, V_I, a_I and b_I = V x* M_I V (seed 004 sec. 5.2; seed 001 eqs. 6-9). */
SOA_BODY_STEP void outward_body(const double *restrict R, const double *restrict l,
                                const double *restrict Rp, const double *restrict pp,
                                const double *restrict Vp, const double *restrict S, int n,
                                int axis,
                                const double *restrict qd, double mass, const double *restrict cb,
                                const double *restrict Jg, double *restrict Rw, double *restrict pw,
                                double *restrict Sw, double *restrict P, double *restrict V,
                                double *restrict a, double *restrict b)
{
    double W[9], x[3], rel[6] = {0, 0, 0, 0, 0, 0}, Ic[10], MV[6], Vk[6];
    world_placement(R, l, Rp, pp, W, x);
    for (int i = 0; i < 9; i++) Rw[i] = W[i];
    for (int i = 0; i < 3; i++) pw[i] = x[i];
    joint_maps_to_world(W, x, S, n, axis, Sw);     /* H*_I and the joint's relative velocity */
    for (int dd = 0; dd < n; dd++)
        for (int i = 0; i < 6; i++) rel[i] += Sw[6 * dd + i] * qd[dd];
    inertia_world_split(mass, cb, Jg, W, x, Ic);
    inertia_pack(Ic, P);
    for (int i = 0; i < 6; i++) Vk[i] = (Vp ? Vp[i] : 0.0) + rel[i];
    for (int i = 0; i < 6; i++) V[i] = Vk[i];
    cross_motion(Vk, rel, a);
    inertia_apply(Ic, Vk, MV);
    cross_force(Vk, MV, b);
}

/* The outward passes of the inertial-frame forward dynamics fused into one base-to-tip pass over
 * the moving bodies (rigid models; model.c: the fold): per body its placement in the sweep parent
 * and in world, H*_I (Sw), Pu <- M_I for the Riccati sweep (M_I of the folded rigid body, formed in
 * compact form: not stored in Mw), V_I, a_I, b_I -- what soa_outward_placements,
 * soa_world_placements, soa_joint_maps_to_world, soa_inertias_to_world and
 * soa_inertial_velocities compute, the same numbers (seed 004 sec. 5.2; seed 001 eqs. 6-9); then
 * the folded links' placements and velocities. */
void soa_inertial_outward(const soa_model *m, soa_data *d, const double *q, const double *qd)
{
    for (int t = 0; t < m->nmov; t++) {
        const int k = m->order[t], p = m->spar[k], v0 = m->v0[k], axis = joint_axis(m, k);
        const int jt = m->jtype[k];
        if (m->jaxis[k] < 0 && (jt == SOA_REVOLUTE || jt == SOA_PRISMATIC))
            placement_any_axis(m, d, k, q[m->q0[k]]);
        else
            placement_in_parent(m, d, k, q, m->fXr + 9 * k, m->fXp + 3 * k);
        outward_body(d->R + 9 * k, d->l + 3 * k, p < 0 ? NULL : d->Rw + 9 * p,
                     p < 0 ? NULL : d->pw + 3 * p, p < 0 ? NULL : d->V + 6 * p, m->S + 6 * v0,
                     m->nvj[k], axis, qd + v0, m->fmass[k], m->fcom + 3 * k, m->fJg + 7 * k,
                     d->Rw + 9 * k, d->pw + 3 * k, d->Sw + 6 * v0, d->Pu + 21 * k, d->V + 6 * k,
                     d->a + 6 * k, d->b + 6 * k);
    }
    soa_fold_placements(m, d, 1);
    soa_fold_velocities(m, d, 1);
}

/* The world placements Rw, pw, H*_I (Sw) and the compact inertias M_I (Ri; seed 004 eq. 5.44;
 * M_I of the folded rigid body, model.c: the fold) of the moving bodies, from their placements
 * (R, l) in the sweep parent: soa_outward_placements, soa_world_placements,
 * soa_joint_maps_to_world and soa_inertias_to_world in one pass, for the mass matrix (crba.c),
 * which reads nothing else: R, l, Rj, tj stay in registers (not stored) and the folded bodies'
 * placements are not filled in (soa_fold_placements). */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("no-tree-slp-vectorize")))   /* GCC's pairing here: shuffles, no gain */
#endif
void soa_sweep_placements(const soa_model *m, soa_data *d, const double *q)
{
    for (int t = 0; t < m->nmov; t++) {
        const int k = m->order[t], p = m->spar[k], v0 = m->v0[k], jt = m->jtype[k], e = m->jaxis[k];
        const double *restrict Xr = m->fXr + 9 * k, *restrict Xp = m->fXp + 3 * k;
        double R[9], l[3];
        if (jt == SOA_REVOLUTE && e >= 0) {           /* Rj: a rotation by theta about axis e */
            double c, sn;
            soa_sincos(q[m->q0[k]], &c, &sn);
            if (e == 0)                                /* (constant indices in each copy) */
                revolute_rl(Xr, Xp, c, sn, 0, 1, 2, R, l);
            else if (e == 1)
                revolute_rl(Xr, Xp, c, sn, 1, 2, 0, R, l);
            else
                revolute_rl(Xr, Xp, c, sn, 2, 0, 1, R, l);
        } else if (jt == SOA_PRISMATIC && e >= 0) {   /* tj = x e */
            const double x = q[m->q0[k]];
            for (int i = 0; i < 9; i++) R[i] = Xr[i];
            for (int i = 0; i < 3; i++) l[i] = Xp[i] + Xr[3 * i + e] * x;
        } else {
            double Rj[9], tj[3];
            placement_in(m, k, q, Xr, Xp, R, l, Rj, tj);
        }
        double *restrict Rw = d->Rw + 9 * k, *restrict pw = d->pw + 3 * k;
        world_placement(R, l, p < 0 ? NULL : d->Rw + 9 * p, p < 0 ? NULL : d->pw + 3 * p, Rw, pw);
        joint_maps_to_world(Rw, pw, m->S + 6 * v0, m->nvj[k], joint_axis(m, k), d->Sw + 6 * v0);
        inertia_world_split(m->fmass[k], m->fcom + 3 * k, m->fJg + 7 * k, Rw, pw, d->Ri + 10 * k);
    }
}

/* R(k), l(k) of body k in its sweep parent spar(k) (the moving bodies of rnea.c). */
void soa_sweep_placement(const soa_model *m, soa_data *d, int k, const double *q)
{
    placement_in_parent(m, d, k, q, m->fXr + 9 * k, m->fXp + 3 * k);
}

/* After a sweep over the moving bodies (model.c: the fold), the placements it skipped: a folded
 * body's R, l in its parent (the constants Xr, Xp; Rj = 1, tj = 0; and Rw, pw = fXr, fXp when
 * welded to the world: written on the data's first call, d->fold_set -- every placement sweep
 * writes these same values) and, with `world`, Rw, pw from its carrier's, Rw(r) fXr,
 * pw(r) + Rw(r) fXp (seed 000 eq. 2.7 with a constant phi); and a moving body whose folded parent
 * is not at its carrier's frame gets R, l in that parent again (Xr Rj, Xp + Xr tj). */
void soa_fold_placements(const soa_model *m, soa_data *d, int world)
{
    for (int t = m->nmov; t < m->nb && !d->fold_set[0]; t++) {   /* constants: written once */
        const int k = m->order[t];
        if (m->spar[k] < 0)                           /* welded to the world: Rw, pw too */
            world_placement(m->fXr + 9 * k, m->fXp + 3 * k, NULL, NULL, d->Rw + 9 * k, d->pw + 3 * k);
        const double *restrict Xr = m->Xr + 9 * k, *restrict Xp = m->Xp + 3 * k;
        double *restrict R = d->R + 9 * k, *restrict l = d->l + 3 * k, *restrict Rj = d->Rj + 9 * k,
               *restrict tj = d->tj + 3 * k;
        for (int i = 0; i < 9; i++) {
            R[i] = Xr[i];
            Rj[i] = (i % 4 == 0) ? 1.0 : 0.0;
        }
        for (int i = 0; i < 3; i++) {
            l[i] = Xp[i];
            tj[i] = 0.0;
        }
    }
    d->fold_set[0] = 1;
    for (int t = m->nmov; t < m->nb && world; t++) {
        const int k = m->order[t], r = m->spar[k];
        if (r >= 0)
            world_placement(m->fXr + 9 * k, m->fXp + 3 * k, d->Rw + 9 * r, d->pw + 3 * r,
                            d->Rw + 9 * k, d->pw + 3 * k);
    }
    for (int t = 0; t < m->nfix; t++) {
        const int k = m->fixr[t];
        const double *restrict Xr = m->Xr + 9 * k, *restrict Xp = m->Xp + 3 * k,
                     *restrict Rj = d->Rj + 9 * k, *restrict tj = d->tj + 3 * k;
        double *restrict R = d->R + 9 * k, *restrict l = d->l + 3 * k;
        for (int i = 0; i < 3; i++) {
            const double *x = Xr + 3 * i;
            for (int j = 0; j < 3; j++) R[3 * i + j] = x[0] * Rj[j] + x[1] * Rj[3 + j] + x[2] * Rj[6 + j];
            l[i] = Xp[i] + x[0] * tj[0] + x[1] * tj[1] + x[2] * tj[2];
        }
    }
}

/* The folded bodies' velocities after a sweep over the moving bodies: a rigid body's V_I is one
 * (inertial: V_I(k) = V_I(r)); in body frames V(k) = phi*(r, k) V(r) with the constant placement
 * (fXr, fXp) (seed 000 eq. 2.8, H* beta = 0); a(k) = 0, b(k) = 0 (its inertia is the carrier's). */
void soa_fold_velocities(const soa_model *m, soa_data *d, int inertial)
{
    for (int t = m->nmov; t < m->nb; t++) {
        const int k = m->order[t], r = m->spar[k];
        double *V = d->V + 6 * k;
        for (int i = 0; i < 6; i++) V[i] = d->a[6 * k + i] = d->b[6 * k + i] = 0.0;
        if (r < 0) continue;
        if (inertial)
            for (int i = 0; i < 6; i++) V[i] = d->V[6 * r + i];
        else
            apply_phi_star(m->fXr + 9 * k, m->fXp + 3 * k, d->V + 6 * r, V);
    }
}

/* The same for the accelerations: alpha(k) = alpha(r) (inertial) or phi*(r, k) alpha(r), with
 * alpha(world) = base (seed 001 eq. 25). */
void soa_fold_accelerations(const soa_model *m, soa_data *d, const double *base, int inertial)
{
    for (int t = m->nmov; t < m->nb; t++) {
        const int k = m->order[t], r = m->spar[k];
        const double *ar = r < 0 ? base : d->alpha + 6 * r;
        if (inertial)
            for (int i = 0; i < 6; i++) d->alpha[6 * k + i] = ar[i];
        else
            apply_phi_star(m->fXr + 9 * k, m->fXp + 3 * k, ar, d->alpha + 6 * k);
    }
}

/* One column of J: the body-k-frame motion s (at k's origin) as the world-axes twist at the
 * point, [R w; R v + R w x r], r = p_point - p_k. */
static inline void jacobian_column(const double *Rw, const double *r, const double *s, int nv,
                                   int c, double *J)
{
    double w[3], v[3];
    for (int i = 0; i < 3; i++) {
        w[i] = Rw[3 * i] * s[0] + Rw[3 * i + 1] * s[1] + Rw[3 * i + 2] * s[2];
        v[i] = Rw[3 * i] * s[3] + Rw[3 * i + 1] * s[4] + Rw[3 * i + 2] * s[5];
    }
    v[0] += w[1] * r[2] - w[2] * r[1];
    v[1] += w[2] * r[0] - w[0] * r[2];
    v[2] += w[0] * r[1] - w[1] * r[0];
    for (int i = 0; i < 3; i++) {
        J[i * nv + c] = w[i];
        J[(3 + i) * nv + c] = v[i];
    }
}

/* J = B* phi* H* for a point fixed on `body` (seed 000 eq. 2.14), world axes at the point: the
 * column of dof c of joint j (an ancestor of body, or body itself) is the world-axes twist
 * [w; v + w x (p_j - p_point)].  With flexible bodies (seed 000 eq. 4.1), a body k on the path
 * riding on a node of its parent p adds the columns of p's modal coordinates, Gamma(k) (its
 * C* h* term), likewise moved to the point.  J is 6 x nv, row-major; other columns are zero. */
void soa_point_jacobian(const soa_model *m, const soa_data *d, int body, const double *p_world,
                        double *J)
{
    const int nv = m->nv, nm = m->nm;
    for (int i = 0; i < 6 * nv; i++) J[i] = 0.0;
    for (int k = body; k >= 0; k = m->parent[k]) {
        const double *Rw = d->Rw + 9 * k, *pw = d->pw + 3 * k;
        const double r[3] = {p_world[0] - pw[0], p_world[1] - pw[1], p_world[2] - pw[2]};
        for (int dd = 0; dd < m->nvj[k]; dd++)
            jacobian_column(Rw, r, m->S + 6 * (m->v0[k] + dd), nv, m->v0[k] + dd, J);
        if (!nm || !m->attach[k]) continue;
        const int p = m->parent[k], e = m->v0[p] + m->nvj[p];
        const double *G = d->fl_G + 6 * nm * k;
        for (int j = 0; j < m->nmod[p]; j++) {
            const double g[6] = {G[j], G[nm + j], G[2 * nm + j], G[3 * nm + j], G[4 * nm + j],
                                 G[5 * nm + j]};
            jacobian_column(Rw, r, g, nv, e + j, J);
        }
    }
}

/* Placements in parent and world, V, a, b at (theta, beta). */
soa_status soa_kinematics(const soa_model *m, soa_data *d, const double *q, const double *qd)
{
    soa_status st = soa_check_state(m, q, qd);
    if (st.kind != SOA_OK) return st;
    soa_outward_placements(m, d, q);
    soa_world_placements(m, d);
    if (m->nm)
        soa_flex_velocities(m, d, qd);
    else
        soa_outward_velocities(m, d, qd);
    return st;
}

/* ------------------------------------------------------------------ flexible bodies */
/* The sweeps' steps for flexible bodies (flexible_body.h): soa_outward_placements dispatches a
 * body on a deformed node to soa_flex_attachment; soa_kinematics runs soa_flex_velocities. */
/* The placement of body k on a node of its flexible parent (node_placement), and Gamma(k) =
 * phi*(p, k) Gamma_p in k's frame (d->fl_G, for the point Jacobian of soa_point_jacobian).  Called
 * by soa_outward_placements. */
void soa_flex_attachment(const soa_model *m, soa_data *d, int k, const double *q)
{
    const flex_dims dm = dims_of(m, k);
    const int nm = dm.nm;
    const double *Gp = d->fl_GA + 6 * nm * k;
    double *G = d->fl_G + 6 * nm * k;
    node_placement(m, d, k, q, dm);
    const double *RA = d->fl_RA + 9 * k, *lA = d->fl_lA + 3 * k, *Rj = d->Rj + 9 * k,
                 *tj = d->tj + 3 * k;
    double *R = d->R + 9 * k, *l = d->l + 3 * k;
    for (int i = 0; i < 3; i++) {                          /* R = R_A Rj, l = l_A + R_A tj */
        const double *x = RA + 3 * i;
        for (int j = 0; j < 3; j++) R[3 * i + j] = x[0] * Rj[j] + x[1] * Rj[3 + j] + x[2] * Rj[6 + j];
        l[i] = lA[i] + x[0] * tj[0] + x[1] * tj[1] + x[2] * tj[2];
    }
    for (int c = 0; c < dm.mp; c++) {
        double g[6];
        apply_phi_star(d->R + 9 * k, d->l + 3 * k, Gp + 6 * c, g);
        for (int i = 0; i < 6; i++) G[i * nm + c] = g[i];
    }
}

/* V, a, b and gravity of every body, base to tip (body_velocity).  Needs soa_outward_placements. */
void soa_flex_velocities(const soa_model *m, soa_data *d, const double *qd)
{
    for (int k = 0; k < m->nb; k++) body_velocity(m, d, k, qd, dims_of(m, k));
}
