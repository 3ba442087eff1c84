/* Conserved quantities (physics checks and the FMU's energy output), seed 000 sec. 2:
 * kinetic energy T = 1/2 sum_k V*(k) M(k) V(k) + 1/2 sum_i a_i qd_i^2 = 1/2 beta* (M + diag(a)) beta
 * (the rotors' armature a), and the gravitational
 * potential U = -sum_k m(k) g . c(k), c(k) the world position of body k's centre of mass. */
#include "soa.h"
#include "spatial.h"

/* T and U at (theta, beta); placements and body-frame velocities are left in d. */
soa_status soa_energy(const soa_model *m, soa_data *d, const double *q, const double *qd,
                      double *kinetic, double *potential)
{
    const soa_status st = soa_kinematics(m, d, q, qd);
    if (st.kind != SOA_OK) return st;
    if (m->nm) return soa_flex_energy(m, d, q, qd, kinetic, potential);
    double T = 0.0, U = 0.0;
    double MV[6], c[3];
    for (int k = 0; k < m->nb; k++) {
        matvec6(m->inertia + 36 * k, d->V + 6 * k, MV);
        T += 0.5 * dot6(d->V + 6 * k, MV);
        const double *R = d->Rw + 9 * k, *p = d->pw + 3 * k, *com = m->com + 3 * k;
        for (int i = 0; i < 3; i++)
            c[i] = p[i] + R[3 * i] * com[0] + R[3 * i + 1] * com[1] + R[3 * i + 2] * com[2];
        /* g = -a0[3..5] (gravity enters as a base acceleration) */
        U += m->mass[k] * (m->a0[3] * c[0] + m->a0[4] * c[1] + m->a0[5] * c[2]);
    }
    for (int i = 0; i < m->nv; i++) T += 0.5 * m->armature[i] * qd[i] * qd[i];   /* rotors */
    *kinetic = T;
    *potential = U;
    return st;
}
