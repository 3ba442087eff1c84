/* Joint dissipation: viscous damping and Coulomb friction, the joint forces the simulator adds to
 * the held inputs (the integrators' accelerations soa_tree_accel and soa_closure_accel, and the
 * outputs computed at a state), so that the Simulator, the pythonfmu flavour and the native FMU
 * apply them with the same operations:
 *
 *     T = tau - d qd - f_c s(qd),   s(qd) = tanh(qd / v_s)
 *
 * per velocity dof.  The Coulomb law sign(qd) is smoothed over the regularization velocity v_s
 * (the model's vfric, SOA_FRICTION_VELOCITY by default): |s| reaches 0.76 at |qd| = v_s and
 * 0.9999 at 5 v_s.  Near rest the friction acts as a damping f_c / v_s, which bounds the step of an
 * explicit integrator (h f_c / (v_s I) below about 2.8 for RK4, I the dof's articulated inertia).
 * The rigid-body functions (soa_aba, soa_rnea, ...) do not include it. */
#include <math.h>

#include "soa.h"

const double *soa_joint_forces(const soa_model *m, soa_data *d, const double *qd,
                               const double *tau)
{
    if (!m->dissipative) return tau;
    const double *dmp = m->damping, *fc = m->friction, vs = m->vfric[0];
    double *T = d->tau_j;
    for (int i = 0; i < m->nv; i++) {
        T[i] = tau[i] - dmp[i] * qd[i];
        if (fc[i] != 0.0) T[i] -= fc[i] * tanh(qd[i] / vs);
    }
    return T;
}
