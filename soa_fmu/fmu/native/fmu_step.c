/* The native FMU's simulation (instance.h): the state built from the parameters (q0 with its
 * quaternions normalized, the closure state of a new run, the integrator auto resolves to), the
 * inputs in the engine's layout (frame forces, closure switches and rows), the dynamics at a state
 * (the feedthrough qdd and constraint outputs; Model Exchange's x-dot at the normalized
 * configuration), one Co-Simulation step (the core's integrators with the inputs held; the state
 * is replaced only on success, a failed or refused step is Discard with the state unchanged, the
 * same step asked again Error), the outputs (energy and frame poses on demand, and the Real getter
 * that brings what it reads up to date), and what the data keeps between them for the next step
 * (the tree's articulated factors, the contact forces).  A step allocates nothing, does no I/O
 * except through the logger and takes no locks. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "instance.h"
#include "spatial.h"

#define QUAT_NORM_TOL 1e-3     /* q0 quaternions are normalized when | |q| - 1 | is below this */

/* ------------------------------------------------------------------ the simulation state */
/* The closure state of a new simulation: every target the identity (the frames coincide), the
 * switches of the "last step" the model's defaults (soa_fmu.Simulator.__init__). */
void fmu_reset_closures(Instance *c)
{
    for (int j = 0; j < D.nc; j++) {
        for (int i = 0; i < 16; i++) c->anchors[16 * j + i] = (i % 5 == 0) ? 1.0 : 0.0;
        c->was_active[j] = D.vars[D.constraints[j].vr_active].start != 0.0;
    }
}

/* The integrator auto resolves to (soa_auto_method: rk4w for a model with stiff terms, else
 * rk4): decided when the simulation state is built and never inside a run; logged. */
static void resolve_method(Instance *c)
{
    c->method_used = c->method;
    c->auto_step = HUGE_VAL;
    if (c->method != SOA_AUTO) return;
    c->method_used = soa_auto_method(c->m);
    c->auto_step = soa_auto_max_step(c->m, c->d, c->real + D.vr_q);
    if (c->auto_step < HUGE_VAL)
        fmu_log(c, FMU_OK, "integrator auto: rk4, sub-steps no longer than %.4g s (%g / the "
                "highest modal frequency, %.6g rad/s; docs/flexible.md)", c->auto_step,
                SOA_RK4_MODAL_REACH, SOA_RK4_MODAL_REACH / c->auto_step);
    else
        fmu_log(c, FMU_OK, "integrator auto: %s (%s; docs/joints.md)", METHOD_NAMES[c->method_used],
                soa_is_rosenbrock(c->method_used)
                    ? "the model has joint dissipation, stops or contact" : "no stiff terms");
    c->real[D.vr_integrator_used] = c->method_used;
}

/* The longest sub-step of a fixed-step method: max_step, and auto's bound (resolve_method). */
static double step_bound(const Instance *c)
{
    const double max_step = c->real[D.vr_max_step];
    return c->method == SOA_AUTO && c->auto_step < max_step ? c->auto_step : max_step;
}

/* (Re)create the state from the parameters (before initialization has ended): q = q0 with its
 * quaternions normalized, qd = qd0, t = start time.  Returns 0 with the reason in msg. */
int fmu_build(Instance *c, char *msg, size_t n)
{
    if (D.role == SOA_FMU_CONTROLLER) return fmu_controller_build(c, msg, n);
    if (!fmu_apply_parameters(c, msg, n)) return 0;
    fmu_apply_gravity(c);
    double *q = c->real + D.vr_q, *qd = c->real + D.vr_qd;
    memcpy(q, c->real + D.vr_q0, sizeof(double) * D.nq);
    memcpy(qd, c->real + D.vr_qd0, sizeof(double) * D.nv);
    for (int k = 0; k < D.nb; k++) {
        if (!fmu_quaternion_joint(c->m, k)) continue;
        double *e = q + c->m->q0[k];
        const double norm = sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2] + e[3] * e[3]);
        if (!(fabs(norm - 1.0) < QUAT_NORM_TOL)) {
            const int i = c->m->q0[k];
            snprintf(msg, n, "q0[%d..%d] (quaternion of joint '%s') has norm %.6g; give a unit "
                     "quaternion", i + 1, i + 4, D.joint_names[k], norm);
            return 0;
        }
        for (int j = 0; j < 4; j++) e[j] /= norm;
    }
    soa_mimic_project(c->m, q, qd);          /* mimic joints follow their drivers (mimic.c) */
    for (int i = D.vr_max_step; i <= D.vr_atol; i++)
        if (!(c->real[i] > 0.0) || (i == D.vr_max_step && c->real[i] < SOA_MIN_MAX_STEP)) {
            snprintf(msg, n, "%s must be > 0%s, got %.17g", D.vars[i].name,
                     i == D.vr_max_step ? " and \xe2\x89\xa5 1e-09 s" : "", c->real[i]);
            return 0;
        }
    c->t = c->start_time;
    c->last_h = 0.0;
    fmu_reset_closures(c);
    resolve_method(c);
    c->built = 1;
    c->params_dirty = 0;
    const soa_status st = fmu_update_outputs(c);
    if (st.kind != SOA_OK) {
        fmu_status_message(c, st, msg, n);
        c->built = 0;
        return 0;
    }
    c->energy_valid = c->poses_valid = c->gaps_valid = 0;
    /* ---- Model Exchange: the targets are at the start time; the outputs of the state come from
     * fmu_me_evaluate (normalized quaternions, q-dot, targets moving with U~) */
    c->anchor_t = c->t;
    c->renormalized = 0;
    if (c->kind == FMU_ME) fmu_invalidate(c);
    return 1;
}

/* ------------------------------------------------------------------ inputs and outputs */
/* The held external forces at the frames, moved to their bodies' origins (phi): returns 1 when
 * any is non-zero.  f: the 6 values of each frame starting at base[vr_fext]. */
int fmu_pack_frame_forces(const Instance *c, const double *base, double *fext)
{
    int any = 0;
    for (int k = 0; k < 6 * D.nb; k++) fext[k] = 0.0;
    for (int i = 0; i < D.nframes; i++) {
        const soa_fmu_frame *fr = &D.frames[i];
        const double *f = base + fr->vr_fext;
        if (!(f[0] || f[1] || f[2] || f[3] || f[4] || f[5])) continue;
        any = 1;
        double N[3], F[3], pxF[3];
        for (int r = 0; r < 3; r++) {
            N[r] = fr->R[3 * r] * f[0] + fr->R[3 * r + 1] * f[1] + fr->R[3 * r + 2] * f[2];
            F[r] = fr->R[3 * r] * f[3] + fr->R[3 * r + 1] * f[4] + fr->R[3 * r + 2] * f[5];
        }
        cross3(fr->p, F, pxF);
        double *fk = fext + 6 * fr->body;
        for (int r = 0; r < 3; r++) {
            fk[r] += N[r] + pxF[r];
            fk[3 + r] += F[r];
        }
    }
    (void)c;
    return any;
}

/* The closure inputs in the engine's layout: active from the Booleans, u from the Reals. */
int fmu_gather_closure_inputs(Instance *c)
{
    int any = 0;
    for (int j = 0; j < D.nc; j++) {
        const soa_fmu_constraint *k = &D.constraints[j];
        c->active[j] = c->boolean[k->vr_active - D.nreal] ? 1 : 0;
        any |= c->active[j];
        for (int r = 0; r < 6; r++)
            c->u[6 * j + r] = r < c->m->cn_size[j] ? c->real[k->vr_u + r] : 0.0;
    }
    return any;
}

/* The joint stops' margins at q: one per stop limit, dof order, lower first, q - lower and
 * upper - q (the stop acts where one is < 0); 1 while the stops are switched off (no event).  The
 * event indicators of both FMI versions begin with them, and the stop_margin locals hold them
 * (FMI 3.0 declares those as its indicators).  z NULL: counted only. */
int fmu_stop_margins(const soa_model *m, const double *q, double *z)
{
    int k = 0;
    for (int i = 0; i < D.nv; i++) {
        const int qi = m->stop_qi[i], live = m->stopped && qi >= 0;
        if (m->stop_on[i] & 1) {
            if (z) z[k] = live ? q[qi] - m->stop_lo[i] : 1.0;
            k++;
        }
        if (m->stop_on[i] & 2) {
            if (z) z[k] = live ? m->stop_hi[i] - q[qi] : 1.0;
            k++;
        }
    }
    return k;
}

/* The constraint outputs from the engine's forces and residuals (0 when switched off); and the
 * joints' outputs: the stop forces at the state (dissipation.c), the stops' margins (above),
 * the integrator used. */
void fmu_put_constraint_outputs(Instance *c)
{
    if (D.vr_stop_tau >= 0)
        for (int i = 0; i < D.nv; i++)
            c->real[D.vr_stop_tau + i] = soa_stop_force(c->m, i, c->real + D.vr_q,
                                                        c->real + D.vr_qd, NULL, NULL);
    if (D.vr_stop_margin >= 0) fmu_stop_margins(c->m, c->real + D.vr_q, c->real + D.vr_stop_margin);
    c->real[D.vr_integrator_used] = c->method_used;
    for (int j = 0; j < D.nc; j++) {
        const soa_fmu_constraint *k = &D.constraints[j];
        for (int r = 0; r < c->m->cn_size[j]; r++)
            c->real[k->vr_f + r] = c->active[j] ? c->forces[6 * j + r] : 0.0;
        c->real[k->vr_err] = c->active[j] ? c->residuals[j] : 0.0;
    }
}

/* ---- the RK4 first-stage reuse: the articulated factors P, D^-1, G (and H*_I, a, b) of the
 * tree depend on (theta, beta) and the model only (seed 001 eqs. 34-36), so the data keeps them
 * from the last evaluation of the tree (fmu_update_outputs, a step's final beta-dot) until anything
 * else uses it (fmu_data_used) or the model changes (fmu_apply_parameters).  (An FMU whose data
 * nothing else uses steps with 4 full sweeps + 1 filter per RK4 step instead of 5 sweeps.) */
static void hold_factors(Instance *c, const double *q, const double *qd)
{
    if (q != c->qf) memcpy(c->qf, q, sizeof(double) * D.nq);
    if (qd != c->qdf) memcpy(c->qdf, qd, sizeof(double) * D.nv);
    c->factored = 1;
}

/* The contact forces just computed at (q, qd) stay in the data for the next step from there
 * (they depend on (theta, beta) and the law only: the held f_ext enters the sweeps apart). */
static void hold_contact(Instance *c, const double *q, const double *qd)
{
    memcpy(c->qf, q, sizeof(double) * D.nq);
    memcpy(c->qdf, qd, sizeof(double) * D.nv);
    c->factored = 0;
    c->contact_held = 1;
}

/* qdd (and the constraint forces) at the current state with the held inputs: the feedthrough
 * outputs (soa_fmu.Simulator.update_outputs). */
soa_status fmu_update_outputs(Instance *c)
{
    const int use = fmu_pack_frame_forces(c, c->real, c->d->fext);
    const double *q = c->real + D.vr_q, *qd = c->real + D.vr_qd, *tau = c->real + D.vr_tau;
    tau = soa_joint_forces(c->m, c->d, q, qd, tau);  /* dissipation and stops, as in every step */
    soa_status st;
    if (D.nc > 0 && fmu_gather_closure_inputs(c)) {
        st = soa_constrained_fd(c->m, c->d, q, qd, tau, use, c->active, c->u, NULL, c->anchors,
                                c->real[D.vr_stab], c->real[D.vr_stab + 1], c->qdds, c->forces,
                                c->residuals);
    } else if (D.nsph > 0) {                          /* with the contact forces (contact.c) */
        st = soa_check_inputs(c->m, q, qd, tau);
        const int k = st.kind == SOA_OK ? soa_tree_acceleration_inertial(
            c->m, c->d, q, qd, tau, (use ? SOA_USE_FEXT : 0) | SOA_USE_CONTACT, c->qdds) : -1;
        if (k >= 0) {
            st.kind = SOA_SINGULAR;
            st.index = k;
        }
        if (st.kind == SOA_OK) soa_mimic_couple(c->m, c->d, c->qdds);   /* mimic.c */
        if (st.kind == SOA_OK) st = fmu_put_contact_outputs(c, q, 0);
        if (st.kind == SOA_OK) hold_contact(c, q, qd);
    } else {
        st = soa_aba(c->m, c->d, q, qd, tau, use, c->qdds);
        if (st.kind == SOA_OK) soa_mimic_couple(c->m, c->d, c->qdds);   /* mimic.c */
        for (int i = 0; i < 6 * D.nc; i++) c->forces[i] = 0.0;
        for (int j = 0; j < D.nc; j++) c->residuals[j] = 0.0;
        if (st.kind == SOA_OK && D.nm == 0) hold_factors(c, q, qd);
    }
    if (st.kind == SOA_OK) {
        memcpy(c->real + D.vr_qdd, c->qdds, sizeof(double) * D.nv);
        fmu_put_constraint_outputs(c);
        c->stale = 0;
    }
    return st;
}

/* ------------------------------------------------------------------ Model Exchange's dynamics */
/* qn <- q with every quaternion scaled to unit norm. */
soa_status fmu_normalize(Instance *c)
{
    const double *q = c->real + D.vr_q;
    soa_status st = {SOA_OK, 0};
    const int i = soa_first_nonfinite(q, D.nq);
    if (i >= 0) {
        st.kind = SOA_BAD_Q;
        st.index = i;
        return st;
    }
    memcpy(c->qn, q, sizeof(double) * D.nq);
    for (int k = 0; k < D.nb; k++) {
        if (!fmu_quaternion_joint(c->m, k)) continue;
        double *e = c->qn + c->m->q0[k];
        const double n = sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2] + e[3] * e[3]);
        if (!(n > 1e-6)) {
            st.kind = SOA_BAD_QUAT;
            st.index = k;
            return st;
        }
        for (int j = 0; j < 4; j++) e[j] /= n;
    }
    return st;
}

/* Model Exchange's x-dot = (der(q), qdd) and the outputs at the current (t, x) with the held
 * inputs, at qn (model_exchange.c's file comment); logged with `level` when it cannot be
 * evaluated. */
int fmu_me_evaluate(Instance *c, int level, const char *fn)
{
    fmu_data_used(c);
    const double *qd = c->real + D.vr_qd, *tau = c->real + D.vr_tau;
    soa_status st = fmu_normalize(c);
    if (st.kind == SOA_OK) st = soa_check_state(c->m, c->qn, qd);
    if (st.kind == SOA_OK) {
        const int use = fmu_pack_frame_forces(c, c->real, c->d->fext);
        if (D.nc > 0) {
            fmu_gather_closure_inputs(c);
            soa_closure_inputs in = {c->m, c->d, tau, use, c->active, c->u, c->real[D.vr_stab],
                                     c->real[D.vr_stab + 1], c->anchors, c->anchor_t, c->forces,
                                     c->residuals};
            st = soa_closure_accel(&in, c->qn, qd, c->t, c->qdds);
        } else {
            soa_tree_inputs in = {c->m, c->d, tau, use, NULL, NULL};
            st = soa_tree_accel(&in, c->qn, qd, c->t, c->qdds);
        }
    }
    if (st.kind == SOA_OK) st = soa_check_result(c->qdds, D.nv, 1);
    if (st.kind != SOA_OK) {
        char msg[MSG];
        fmu_status_message(c, st, msg, sizeof msg);
        fmu_log(c, level, "%s: the state derivative at t = %.17g cannot be evaluated: %s", fn,
                c->t, msg);
        return 0;
    }
    memcpy(c->real + D.vr_qdd, c->qdds, sizeof(double) * D.nv);
    soa_configuration_rate(c->m, c->qn, qd, c->real + D.vr_qdot);
    fmu_put_constraint_outputs(c);
    fmu_put_contact_outputs(c, c->qn, 0);      /* (evaluated with beta-dot by soa_tree_accel) */
    c->stale = 0;
    return 1;
}

const double *fmu_me_normalized(Instance *c)
{
    return fmu_normalize(c).kind == SOA_OK ? c->qn : c->real + D.vr_q;
}

/* ------------------------------------------------------------------ the step */
/* The Rosenbrock methods' mode (ros2, ros34pw2, rk4w): the Boolean parameter error_control. */
static int error_control(const Instance *c)
{
    return c->boolean[D.vr_error_control - D.nreal] != 0;
}

/* Advance from t to t + h with the inputs held (soa_fmu.Simulator.step): rk4 and euler in nsub
 * equal sub-steps no longer than max_step; dop853 adaptive (rtol, atol), its first step the last
 * accepted one of the previous call; a model with closure constraints through soa_closure_step
 * (grasp / release, moving targets).  The state is replaced only on success. */
static soa_status integrate(Instance *c, double h)
{
    soa_status st = {SOA_OK, 0};
    memcpy(c->qs, c->real + D.vr_q, sizeof(double) * D.nq);
    memcpy(c->qds, c->real + D.vr_qd, sizeof(double) * D.nv);
    const int use = fmu_pack_frame_forces(c, c->real, c->d->fext);
    const double *tau = c->real + D.vr_tau;
    double last_h = c->last_h;
    /* the contact forces of fmu_update_outputs at this very state (hold_contact) */
    const int held = c->contact_held && memcmp(c->qs, c->qf, sizeof(double) * D.nq) == 0
                     && memcmp(c->qds, c->qdf, sizeof(double) * D.nv) == 0;
    c->contact_held = 0;
    if (D.nc > 0) {
        c->factored = 0;
        fmu_gather_closure_inputs(c);
        const soa_step_options o = {c->method_used, c->real[D.vr_max_step], c->real[D.vr_rtol],
                                    c->real[D.vr_atol], 1, error_control(c)};
        soa_closure_inputs in = {c->m, c->d, tau, use, c->active, c->u, c->real[D.vr_stab],
                                 c->real[D.vr_stab + 1], c->anchors, c->t, c->forces,
                                 c->residuals};
        st = soa_closure_step(c->m, c->d, &o, &in, c->was_active, c->qs, c->qds, c->t, h, &last_h,
                              c->qdds);
    } else if (c->method_used == SOA_DOP853) {
        c->factored = 0;
        c->d->dop_h[0] = last_h;
        st = soa_dop853(c->m, c->d, c->qs, c->qds, tau, use, c->t, h, c->real[D.vr_rtol],
                        c->real[D.vr_atol], HUGE_VAL, c->qdds);
        last_h = c->d->dop_h[0];
    } else if (soa_is_rosenbrock(c->method_used) && error_control(c)) {
        c->factored = 0;
        c->d->dop_h[0] = last_h;
        st = soa_rosenbrock_method_adaptive(c->method_used, c->m, c->d, c->qs, c->qds, tau,
                                            use | (held ? SOA_CONTACT_HELD : 0), h,
                                            c->real[D.vr_rtol], c->real[D.vr_atol],
                                            c->real[D.vr_max_step], c->qdds);
        last_h = c->d->dop_h[0];
    } else {
        const int nsub = soa_substeps(h, step_bound(c));
        if (nsub < 1) {
            st.kind = SOA_TOO_MANY_SUBSTEPS;
            st.index = SOA_MAX_SUBSTEPS;
            return st;
        }
        if (c->method_used == SOA_IMPLICIT || soa_is_rosenbrock(c->method_used)) {
            c->factored = 0;
            const int use_held = use | (held ? SOA_CONTACT_HELD : 0);
            st = c->method_used == SOA_IMPLICIT
                     ? soa_implicit(c->m, c->d, c->qs, c->qds, tau, use_held, h / nsub, nsub,
                                    c->qdds)
                     : soa_rosenbrock_method(c->method_used, c->m, c->d, c->qs, c->qds, tau,
                                             use_held, h / nsub, nsub, c->qdds);
        } else {
            st = soa_check_inputs(c->m, c->qs, c->qds, tau);
            if (st.kind != SOA_OK) return st;
            /* the first stage at the state whose factors the data holds: filter and smoother
             * only */
            soa_tree_inputs in = {c->m, c->d, tau, use, NULL, NULL};
            if (c->factored && memcmp(c->qs, c->qf, sizeof(double) * D.nq) == 0
                && memcmp(c->qds, c->qdf, sizeof(double) * D.nv) == 0) {
                in.q_factored = c->qf;
                in.qd_factored = c->qdf;
            }
            c->factored = 0;
            const soa_accel acc = {soa_tree_accel, &in};
            st = (c->method_used == SOA_EULER ? soa_euler_with : soa_rk4_with)(
                c->m, c->d, acc, c->qs, c->qds, 0.0, h / nsub, nsub, c->qdds);
            /* the last evaluation: the tree's at the new state (a flexible model's is not; a
             * contact model's filter input holds the contact forces with the f_ext of this
             * step, which the host may change: no reuse) */
            if (st.kind == SOA_OK && D.nm == 0 && D.nsph == 0) hold_factors(c, c->qs, c->qds);
        }
    }
    if (st.kind != SOA_OK) return st;
    /* contact outputs at the new state: rk4 and euler end with an evaluation there; implicit's
     * and the Rosenbrock methods' (ros2, ros34pw2, rk4w) come with their qdd
     * (fmu_update_outputs, below) */
    st = fmu_put_contact_outputs(c, c->qs, c->method_used == SOA_DOP853);
    if (st.kind != SOA_OK) return st;
    if (c->method_used == SOA_DOP853 || soa_is_rosenbrock(c->method_used)) c->last_h = last_h;
    memcpy(c->real + D.vr_q, c->qs, sizeof(double) * D.nq);
    memcpy(c->real + D.vr_qd, c->qds, sizeof(double) * D.nv);
    memcpy(c->real + D.vr_qdd, c->qdds, sizeof(double) * D.nv);
    fmu_put_constraint_outputs(c);
    /* the implicit and Rosenbrock steps' qdd is their mean acceleration: the output beta-dot at
     * t + h is computed when asked for (fmu_update_outputs), keeping the step at its stages'
     * sweeps */
    c->stale = c->method_used == SOA_IMPLICIT || soa_is_rosenbrock(c->method_used);
    c->energy_valid = c->poses_valid = c->gaps_valid = 0;
    return st;
}

/* ------------------------------------------------------------------ the outputs on demand */
/* The configuration the on-demand outputs are computed at: q, or with Model Exchange qn (every
 * quaternion of an integrator's state normalized, as the dynamics see it). */
static const double *configuration(Instance *c)
{
    return c->kind == FMU_ME ? fmu_me_normalized(c) : c->real + D.vr_q;
}

/* The on-demand outputs: energy (core/energy.c) and the frame poses. */
static soa_status update_energy(Instance *c)
{
    fmu_data_used(c);
    double T, U;
    const soa_status st = soa_energy(c->m, c->d, configuration(c), c->real + D.vr_qd, &T, &U);
    if (st.kind == SOA_OK) {
        c->real[D.vr_energy] = T + U;
        c->energy_valid = 1;
    }
    return st;
}

static soa_status update_poses(Instance *c)
{
    fmu_data_used(c);
    const double *q = configuration(c);
    soa_status st = soa_check_configuration(c->m, q);
    if (st.kind != SOA_OK) return st;
    soa_outward_placements(c->m, c->d, q);
    soa_world_placements(c->m, c->d);
    for (int i = 0; i < D.nframes; i++) {
        const soa_fmu_frame *fr = &D.frames[i];
        const double *Rw = c->d->Rw + 9 * fr->body, *pw = c->d->pw + 3 * fr->body;
        double R[9], *out = c->real + fr->vr_pose;
        for (int a = 0; a < 3; a++) {
            out[a] = pw[a];
            for (int b = 0; b < 3; b++) {
                out[a] += Rw[3 * a + b] * fr->p[b];
                R[3 * a + b] = Rw[3 * a] * fr->R[b] + Rw[3 * a + 1] * fr->R[3 + b]
                               + Rw[3 * a + 2] * fr->R[6 + b];
            }
        }
        matrix_to_quat(R, out + 3);
    }
    c->poses_valid = 1;
    return st;
}

/* Bring the outputs a getter asks for up to date.  Returns 0 (logged) when they cannot be. */
int fmu_refresh(Instance *c, int feedthrough, int energy, int poses, const char *fn)
{
    char msg[MSG];
    if (!c->built || (c->params_dirty && !fmu_running(c))) {
        if (!fmu_build(c, msg, sizeof msg)) {
            fmu_log(c, FMU_ERROR, "%s: %s", fn, msg);
            return 0;
        }
    }
    if (D.role == SOA_FMU_CONTROLLER) return fmu_controller_refresh(c, fn);
    if (c->stale && feedthrough && c->kind == FMU_ME) {
        if (!fmu_me_evaluate(c, FMU_ERROR, fn)) return 0;                  /* (logged) */
    } else if (c->stale && feedthrough) {
        soa_status st = fmu_update_outputs(c);
        if (st.kind != SOA_OK) {
            fmu_status_message(c, st, msg, sizeof msg);
            fmu_log(c, FMU_ERROR, "%s: %s", fn, msg);
            return 0;
        }
    }
    soa_status st = {SOA_OK, 0};
    if (energy && !c->energy_valid) st = update_energy(c);
    if (st.kind == SOA_OK && poses && !c->poses_valid) st = update_poses(c);
    if (st.kind != SOA_OK) {
        fmu_status_message(c, st, msg, sizeof msg);
        fmu_log(c, FMU_ERROR, "%s: %s", fn, msg);
        return 0;
    }
    return 1;
}

/* The Real getter (FMI 2.0 and 3.0): the outputs it reads brought up to date first. */
int fmu_get_real(Instance *c, const unsigned *vr, size_t nvr, double *value, size_t nvalues,
                 const char *fn)
{
    if (nvalues > 0 && !value) return FMU_ERROR;
    if (!fmu_check_refs(c, vr, nvr, nvalues, 0, D.nreal, fn, 0)) {
        for (size_t i = 0; i < nvalues; i++) value[i] = NAN;
        return FMU_ERROR;
    }
    int feed = 0, energy = 0, poses = 0, outputs = 0, rates = 0, gaps = 0;
    FOR_SCALARS(c, vr, nvr, 0, D.nreal, r, k) {
        if (r >= D.nreal) continue;                                  /* time */
        if (D.vars[r].causality != SOA_FMU_OUTPUT && D.vars[r].causality != SOA_FMU_LOCAL)
            continue;
        outputs = 1;
        if (r >= D.vr_qdd && r < D.vr_energy) feed = 1;
        else if (r == D.vr_energy) energy = 1;
        else if (r > D.vr_energy) poses = 1;
        if (D.vr_qdot >= 0 && r >= D.vr_qdot && r < D.vr_qdot + D.nq) rates = 1;
        if (D.vr_pair_depth >= 0 && r >= D.vr_pair_depth
            && r < D.vr_pair_depth + fmu_contact_pair_count())
            gaps = 1;
    }
    if (outputs && !fmu_refresh(c, feed, energy, poses, fn)) {
        FOR_SCALARS(c, vr, nvr, 0, D.nreal, r, k)
            value[k] = r >= D.nreal ? c->t
                     : D.vars[r].causality == SOA_FMU_OUTPUT || D.vars[r].causality == SOA_FMU_LOCAL
                     ? NAN : c->real[r];
        return FMU_ERROR;
    }
    /* ---- the pair depths: the exact gaps of the pairs apart at the current state, on demand
     * (a step leaves bounds of them: the broad phase, core/contact.c) */
    if (gaps && !c->gaps_valid) {
        const soa_status st = fmu_put_contact_outputs(c, configuration(c), 1);
        if (st.kind != SOA_OK) {
            char msg[MSG];
            fmu_status_message(c, st, msg, sizeof msg);
            fmu_log(c, FMU_ERROR, "%s: %s", fn, msg);
            FOR_SCALARS(c, vr, nvr, 0, D.nreal, r, k) value[k] = r >= D.nreal ? c->t : c->real[r];
            return FMU_ERROR;
        }
    }
    /* ---- der(q) in Co-Simulation: theta-dot = f(theta) beta at the current state */
    if (rates && c->kind == FMU_CS)
        soa_configuration_rate(c->m, c->real + D.vr_q, c->real + D.vr_qd, c->real + D.vr_qdot);
    FOR_SCALARS(c, vr, nvr, 0, D.nreal, r, k) value[k] = r >= D.nreal ? c->t : c->real[r];
    return FMU_OK;
}

/* ------------------------------------------------------------------ the communication step */
/* 1 when a step by h would need more than SOA_MAX_SUBSTEPS sub-steps of max_step (a fixed-step
 * integrator), with the message naming h, max_step and the count: the step is refused at once. */
static int too_many_substeps(const Instance *c, double h, char *msg, size_t n)
{
    const double max_step = step_bound(c);
    if (c->method_used == SOA_DOP853 || (soa_is_rosenbrock(c->method_used) && error_control(c))
        || soa_substeps(h, max_step) >= 1)
        return 0;
    snprintf(msg, n, "h / max_step = %.17g / %.17g needs %.6g sub-steps, more than the %d one "
             "step may take: raise max_step to at least %.6g s or make shorter communication "
             "steps", h, max_step, ceil(h / max_step), SOA_MAX_SUBSTEPS,
             h / SOA_MAX_SUBSTEPS);
    return 1;
}

/* A step that failed or was refused: Discard with the state unchanged, remembered until anything
 * changes (the same step asked again is an Error: a master that retries it unchanged, as fmpy
 * does when fmi2Terminated is false, would loop forever). */
static int discard(Instance *c, double t, double h, const char *what, const char *msg)
{
    fmu_log(c, FMU_DISCARD, "step from t = %.17g by h = %.17g %s (state unchanged): %s", t, h,
            what, msg);
    c->failed_t = c->t;
    c->failed_h = h;
    snprintf(c->failure, sizeof c->failure, "%s", msg);
    return FMU_DISCARD;
}

/* One communication step from t by h (Co-Simulation, both FMI versions). */
int fmu_do_step(Instance *c, double t, double h, const char *fn)
{
    if (c->mode != STEPPING) {
        fmu_log(c, FMU_ERROR, "%s called in %s mode (allowed only after "
                "fmi%dExitInitializationMode and before fmi%dTerminate)", fn, MODE_NAMES[c->mode],
                c->fmi, c->fmi);
        return FMU_ERROR;
    }
    char msg[MSG];
    if (fmu_pending_reasons(c, msg, sizeof msg) || !c->built) {
        fmu_log(c, FMU_DISCARD, "step refused: %s",
                msg[0] ? msg : "the instance is not initialized");
        return FMU_DISCARD;
    }
    if (!(isfinite(h) && h > 0.0) || !isfinite(t)) {
        fmu_log(c, FMU_DISCARD, "step from t = %.17g by h = %.17g refused: the step size must be "
                "finite and > 0", t, h);
        return FMU_DISCARD;
    }
    if (fabs(t - c->t) > 1e-9 * (fabs(t) > 1.0 ? fabs(t) : 1.0)) {
        fmu_log(c, FMU_WARNING, "communication point t = %.17g differs from the FMU's time %.17g; "
                "continuing from the FMU's state at t = %.17g", t, c->t, t);
        c->t = t;
    }
    if (c->failed_h == h && c->failed_t == c->t) {
        fmu_log(c, FMU_ERROR, "step from t = %.17g by h = %.17g asked again with nothing changed "
                "since it failed: %s; change h, max_step or the integrator, or restore an FMU "
                "state", t, h, c->failure);
        return FMU_ERROR;
    }
    const int plant = D.role == SOA_FMU_PLANT;
    if (plant && too_many_substeps(c, h, msg, sizeof msg)) return discard(c, t, h, "refused", msg);
    const soa_status st = plant ? integrate(c, h) : fmu_controller_step(c);
    if (st.kind != SOA_OK) {
        fmu_status_message(c, st, msg, sizeof msg);
        return discard(c, t, h, "failed", msg);
    }
    c->failed_h = 0.0;
    c->t += h;
    c->jac_valid = 0;
    return FMU_OK;
}
