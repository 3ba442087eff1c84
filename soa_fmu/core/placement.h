/* A body's placement in its parent at theta, R = X Rj, l = lx + X tj, from its joint frame's
 * placement (X, lx) and the joint transform (Rj, tj) (seed 000 eq. 2.7): the joints of robot arms
 * written out (revolute / prismatic about a coordinate axis of the joint frame, fixed), the others
 * by soa_joint_transform.  Static inline, shared by the rigid sweeps (kinematics.c: X the joint
 * frame in the parent's or the sweep parent's frame) and the flexible ones (flexible.c: X on a
 * deformed node). */
#ifndef SOA_PLACEMENT_H
#define SOA_PLACEMENT_H

#include "soa.h"
#include "spatial.h"

/* R = Xr Rj, l = Xp for a revolute joint about coordinate axis e of the joint frame ((e, a, b)
 * cyclic): two columns of Xr mixed (what revolute_about_axis also stores Rj, tj for). */
static inline void revolute_rl(const double *restrict Xr, const double *restrict Xp, double c,
                               double sn, const int e, const int a, const int b,
                               double *restrict R, double *restrict l)
{
    for (int i = 0; i < 3; i++) {
        const double xa = Xr[3 * i + a], xb = Xr[3 * i + b];
        R[3 * i + a] = c * xa + sn * xb;
        R[3 * i + b] = c * xb - sn * xa;
        R[3 * i + e] = Xr[3 * i + e];
        l[i] = Xp[i];
    }
}

/* A revolute joint about coordinate axis e of its joint frame ((e, a, b) cyclic): Rj rotates by
 * theta, Rj e_a = c e_a + s e_b, Rj e_b = -s e_a + c e_b, so R = Xr Rj mixes two columns of Xr. */
static inline void revolute_about_axis(const double *restrict Xr, const double *restrict Xp,
                                       double c, double sn, const int e, const int a, const int b,
                                       double *restrict R, double *restrict l, double *restrict Rj,
                                       double *restrict tj)
{
    Rj[4 * e] = 1.0;
    Rj[3 * e + a] = Rj[3 * e + b] = Rj[3 * a + e] = Rj[3 * b + e] = 0.0;
    Rj[4 * a] = Rj[4 * b] = c;
    Rj[3 * b + a] = sn;
    Rj[3 * a + b] = -sn;
    tj[0] = tj[1] = tj[2] = 0.0;
    revolute_rl(Xr, Xp, c, sn, e, a, b, R, l);
}

/* R = Xr Rj, l = Xp (+ Xr tj): body k's placement in its parent for the joints of robot arms
 * written out (revolute / prismatic about a coordinate axis of the joint frame: Rj mixes two
 * columns of Xr; fixed), the others by soa_joint_transform.  Rj, tj are stored as
 * soa_outward_placements stores them.  (Xr, Xp): the joint frame in the parent's frame, or in the
 * sweep parent's (fXr, fXp) for the sweeps over the moving bodies. */
SOA_BODY_STEP void placement_in(const soa_model *m, int k, const double *q,
                                const double *restrict Xr, const double *restrict Xp,
                                double *restrict R, double *restrict l, double *restrict Rj,
                                double *restrict tj)
{
    const int jt = m->jtype[k], e = m->jaxis[k];    /* the coordinate axis of the joint, or -1 */
    if (jt == SOA_FIXED || (jt == SOA_PRISMATIC && e >= 0)) {
        const double x = jt == SOA_FIXED ? 0.0 : q[m->q0[k]];
        for (int i = 0; i < 9; i++) Rj[i] = (i % 4 == 0) ? 1.0 : 0.0;
        tj[0] = tj[1] = tj[2] = 0.0;
        if (e >= 0) tj[e] = x;
        for (int i = 0; i < 9; i++) R[i] = Xr[i];
        for (int i = 0; i < 3; i++) l[i] = Xp[i] + (e >= 0 ? Xr[3 * i + e] * x : 0.0);
        return;
    }
    if (jt == SOA_REVOLUTE && e >= 0) {              /* Rj: a rotation by theta about axis e */
        double c, sn;
        soa_sincos(q[m->q0[k]], &c, &sn);
        if (e == 0)                                  /* (constant indices in each copy) */
            revolute_about_axis(Xr, Xp, c, sn, 0, 1, 2, R, l, Rj, tj);
        else if (e == 1)
            revolute_about_axis(Xr, Xp, c, sn, 1, 2, 0, R, l, Rj, tj);
        else
            revolute_about_axis(Xr, Xp, c, sn, 2, 0, 1, R, l, Rj, tj);
        return;
    }
    soa_joint_transform(m, k, q, Rj, tj);
    for (int i = 0; i < 3; i++) {
        const double *x = Xr + 3 * i;
        for (int j = 0; j < 3; j++) R[3 * i + j] = x[0] * Rj[j] + x[1] * Rj[3 + j] + x[2] * Rj[6 + j];
        l[i] = Xp[i] + x[0] * tj[0] + x[1] * tj[1] + x[2] * tj[2];
    }
}

#endif
