/* The native FMU's instance over the C core, shared by every FMI interface (instance.h).
 *
 * One instance holds a soa_model built from the generated description (fmu_model.c), a soa_data, and
 * the values of every variable (reals by value reference, Booleans, the integrator string).  The
 * semantics are the pythonfmu slave's (soa_fmu/fmu/slave.py) with the status discipline a C
 * library can give:
 *
 *   - a rejected value (NaN/Inf, an output, a fixed parameter after initialization, max_step <= 0,
 *     an unknown integrator) is NOT applied: the setter returns Error and logs the variable and
 *     its joint; until a valid value is set for it (or the FMU state is set / the instance reset),
 *     every step is refused with Discard, repeating the reason;
 *   - a failed step (a diverging state, a singular articulated inertia) returns Discard with
 *     the state unchanged;
 *   - a call in the wrong state (a step before initialization or after termination) returns
 *     Error naming the function and the state.
 *
 * Everything is allocated at instantiation (and by the FMU-state functions); a step, the getters
 * and setters allocate nothing, do no I/O except through the logger, and take no locks.  The FMU
 * state is one self-describing byte buffer (layout below), so getting and serializing a state
 * share one format. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "instance.h"
#include "spatial.h"

#define QUAT_NORM_TOL 1e-3     /* q0 quaternions are normalized when | |q| - 1 | is below this */

const char *const METHOD_NAMES[SOA_NMETHODS] = {"rk4", "euler", "dop853", "implicit", "ros2",
                                                "auto"};
const char *const MODE_NAMES[] = {"instantiated", "initialization", "step", "terminated", "event",
                                  "continuous-time"};

/* ------------------------------------------------------------------ logging */
static int category_enabled(const Instance *c, int s)
{
    return s >= FMU_WARNING || c->logging_on;
}

static const char *category_of(int s)
{
    switch (s) {
    case FMU_WARNING: return "logStatusWarning";
    case FMU_DISCARD: return "logStatusDiscard";
    case FMU_ERROR: return "logStatusError";
    case FMU_FATAL: return "logStatusFatal";
    default: return "logAll";
    }
}

/* Log a message through the interface's emit (which escapes what its logger needs escaped). */
void fmu_log(const Instance *c, int s, const char *fmt, ...)
{
    if (!c || !c->emit || !c->logger || !category_enabled(c, s)) return;
    char raw[MSG];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    c->emit(c, s, category_of(s), raw);
}

/* "tau[3] (joint3)": a variable's name with the joint/frame/constraint it belongs to. */
const char *fmu_named(int vr, char *buf, size_t n)
{
    const soa_fmu_variable *v = &D.vars[vr];
    if (v->label[0]) snprintf(buf, n, "%s (%s)", v->name, v->label);
    else snprintf(buf, n, "%s", v->name);
    return buf;
}

/* The model's names for the messages of core/status.c (the same texts soa_fmu._core raises). */
static const char *name_of(const void *ctx, int which, int index)
{
    (void)ctx;
    switch (which) {
    case SOA_NAME_BODY: return index < D.nb ? D.body_names[index] : NULL;
    case SOA_NAME_JOINT: return index < D.nb ? D.joint_names[index] : NULL;
    case SOA_NAME_POSITION: return index < D.nq ? D.position_names[index] : NULL;
    case SOA_NAME_CONSTRAINT: return index < D.nc ? D.constraint_names[index] : NULL;
    case SOA_NAME_CONTACT: return index < D.nsph + D.npln + D.nssp ? D.contact_names[index] : NULL;
    default: return index < D.nv ? D.velocity_names[index] : NULL;
    }
}

void fmu_status_message(const Instance *c, soa_status st, char *buf, size_t n)
{
    const soa_names names = {name_of, NULL};
    if (st.kind == SOA_CONSTRAINT_SINGULAR)
        soa_closure_message(c->m, c->d, "constrained forward dynamics", &names, buf, n);
    else
        soa_diverged_message(c->m, c->d, st, &names, buf, n);
}

int fmu_running(const Instance *c)
{
    return c->mode == STEPPING || c->mode == EVENT || c->mode == CONTINUOUS;
}

/* ------------------------------------------------------------------ the simulation */
void fmu_apply_gravity(Instance *c)
{
    for (int i = 0; i < 3; i++) {
        c->m->a0[i] = 0.0;
        c->m->a0[3 + i] = -c->real[D.vr_g + i];
    }
    fmu_apply_contact(c);                 /* the other tunables the model holds (fmu_contact.c) */
    /* and the other tunable parameters of the model: the joint stops' gains and switch (checked
     * >= 0 by the setter; dissipation.c reads them at every evaluation) */
    if (D.vr_stop_stiffness < 0) return;
    soa_model *m = c->m;
    m->stops[0] = c->boolean[D.vr_stops_enabled - D.nreal] != 0;
    m->stopped = 0;
    for (int i = 0; i < D.nv; i++) {
        m->stop_k[i] = c->real[D.vr_stop_stiffness + i];
        m->stop_b[i] = c->real[D.vr_stop_damping + i];
        m->stopped |= m->stops[0] && m->stop_qi[i] >= 0;
    }
}

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

/* The constraint outputs from the engine's forces and residuals (0 when switched off); and the
 * joints' outputs: the stop forces at the state (dissipation.c), with Model Exchange the stops'
 * margins (model_exchange.c), the integrator used. */
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
 * from the last evaluation of the tree (update_outputs, a step's final beta-dot) until anything
 * else uses it (fmu_data_used) or the model changes (apply_parameters).  (An FMU whose data
 * nothing else uses steps with 4 full sweeps + 1 filter per RK4 step instead of 5 sweeps.) */
static void hold_factors(Instance *c, const double *q, const double *qd)
{
    if (q != c->qf) memcpy(c->qf, q, sizeof(double) * D.nq);
    if (qd != c->qdf) memcpy(c->qdf, qd, sizeof(double) * D.nv);
    c->factored = 1;
}

void fmu_data_used(Instance *c) { c->factored = c->contact_held = 0; }

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
static soa_status update_outputs(Instance *c)
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

/* The closure state of a new simulation: every target the identity (the frames coincide), the
 * switches of the "last step" the model's defaults (soa_fmu.Simulator.__init__). */
static void reset_closures(Instance *c)
{
    for (int j = 0; j < D.nc; j++) {
        for (int i = 0; i < 16; i++) c->anchors[16 * j + i] = (i % 5 == 0) ? 1.0 : 0.0;
        c->was_active[j] = D.vars[D.constraints[j].vr_active].start != 0.0;
    }
}

void fmu_invalidate(Instance *c)
{
    c->failed_h = 0.0;                   /* a step that failed may succeed now */
    c->stale = 1;
    c->energy_valid = c->poses_valid = 0;
    c->jac_valid = 0;
}

/* ------------------------------------------------------------------ physical parameters
 * The fixed parameters <b>.mass, <b>.com[1..3], <b>.inertia[1..6] (xx yy zz xy xz yz), damping[i]
 * and friction[i] go into the instance's soa_model, which soa_model_finish re-derives (M(k), the
 * dissipation flag): when the state is built (before initialization ends) and when a state is
 * restored, never in a step.  Every mass must be >= 0, the inertia of a body whose values differ
 * from the start values must be physical (soa_inertia_problem: a published robot file's may not
 * be), damping and friction >= 0. */
static double parameter(const Instance *c, int vr, int start)
{
    return start ? D.vars[vr].start : c->real[vr];
}

static void write_parameters(Instance *c, int start)
{
    soa_model *m = c->m;
    for (int k = 0; k < D.nb; k++) {
        const int vr = D.vr_inertial + 10 * k;
        double *J = m->Jc + 9 * k;
        m->mass[k] = parameter(c, vr, start);
        for (int i = 0; i < 3; i++) m->com[3 * k + i] = parameter(c, vr + 1 + i, start);
        J[0] = parameter(c, vr + 4, start);
        J[4] = parameter(c, vr + 5, start);
        J[8] = parameter(c, vr + 6, start);
        J[1] = J[3] = parameter(c, vr + 7, start);
        J[2] = J[6] = parameter(c, vr + 8, start);
        J[5] = J[7] = parameter(c, vr + 9, start);
    }
    for (int i = 0; i < D.nv; i++) {
        m->damping[i] = parameter(c, D.vr_damping + i, start);
        m->friction[i] = parameter(c, D.vr_friction + i, start);
        m->armature[i] = parameter(c, D.vr_armature + i, start);
        if (D.vr_stop_stiffness < 0) continue;
        m->stop_k[i] = parameter(c, D.vr_stop_stiffness + i, start);
        m->stop_b[i] = parameter(c, D.vr_stop_damping + i, start);
    }
    if (D.vr_stops_enabled >= 0)
        m->stops[0] = start ? D.vars[D.vr_stops_enabled].start != 0.0
                            : c->boolean[D.vr_stops_enabled - D.nreal] != 0;
}

/* The integrator auto resolves to (soa_auto_method: ros2 for a model with stiff terms, else rk4):
 * decided when the simulation state is built and never inside a run; logged. */
static void resolve_method(Instance *c)
{
    c->method_used = c->method;
    if (c->method != SOA_AUTO) return;
    c->method_used = soa_auto_method(c->m);
    fmu_log(c, FMU_OK, "integrator auto: %s (%s; docs/joints.md)", METHOD_NAMES[c->method_used],
            c->method_used == SOA_ROS2 ? "the model has joint dissipation, stops or contact"
                                       : "no stiff terms");
    c->real[D.vr_integrator_used] = c->method_used;
}

/* ros2's mode: the Boolean parameter error_control. */
static int error_control(const Instance *c)
{
    return c->boolean[D.vr_error_control - D.nreal] != 0;
}

/* The parameters into the model; 0 (msg, which may be NULL: the reason naming the body or dof)
 * when they are refused, the model then holding the start values. */
int fmu_apply_parameters(Instance *c, char *msg, size_t n)
{
    fmu_data_used(c);                         /* the model changes */
    soa_status st = {SOA_OK, 0};
    write_parameters(c, 0);
    for (int k = 0; k < D.nb && st.kind == SOA_OK; k++) {
        int changed = 0;
        for (int i = 0; i < 10; i++)
            changed |= c->real[D.vr_inertial + 10 * k + i] != D.vars[D.vr_inertial + 10 * k + i].start;
        const int why = soa_inertia_problem(c->m->mass[k], c->m->Jc + 9 * k, NULL);
        if (why == 1 || (changed && why)) {
            st.kind = SOA_BAD_INERTIA;
            st.index = k;
        }
    }
    if (st.kind == SOA_OK) st = soa_model_finish(c->m);
    if (st.kind == SOA_OK) return 1;
    if (msg) fmu_status_message(c, st, msg, n);
    write_parameters(c, 1);
    soa_model_finish(c->m);
    return 0;
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
        const int jt = c->m->jtype[k];
        if (jt != SOA_SPHERICAL && jt != SOA_FREE) continue;
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
    reset_closures(c);
    resolve_method(c);
    c->built = 1;
    c->params_dirty = 0;
    const soa_status st = update_outputs(c);
    if (st.kind != SOA_OK) {
        fmu_status_message(c, st, msg, n);
        c->built = 0;
        return 0;
    }
    c->energy_valid = c->poses_valid = 0;
    /* ---- Model Exchange: the targets are at the start time; the outputs of the state come from
     * fmu_me_evaluate (normalized quaternions, q-dot, targets moving with U~) */
    c->anchor_t = c->t;
    c->renormalized = 0;
    if (c->kind == FMU_ME) fmu_invalidate(c);
    return 1;
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
    /* the contact forces of update_outputs at this very state (hold_contact) */
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
    } else if (c->method_used == SOA_ROS2 && error_control(c)) {
        c->factored = 0;
        c->d->dop_h[0] = last_h;
        st = soa_rosenbrock_adaptive(c->m, c->d, c->qs, c->qds, tau,
                                     use | (held ? SOA_CONTACT_HELD : 0), h, c->real[D.vr_rtol],
                                     c->real[D.vr_atol], c->real[D.vr_max_step], c->qdds);
        last_h = c->d->dop_h[0];
    } else {
        const int nsub = soa_substeps(h, c->real[D.vr_max_step]);
        if (nsub < 1) {
            st.kind = SOA_TOO_MANY_SUBSTEPS;
            st.index = SOA_MAX_SUBSTEPS;
            return st;
        }
        if (c->method_used == SOA_IMPLICIT || c->method_used == SOA_ROS2) {
            c->factored = 0;
            st = (c->method_used == SOA_IMPLICIT ? soa_implicit : soa_rosenbrock)(
                c->m, c->d, c->qs, c->qds, tau, use | (held ? SOA_CONTACT_HELD : 0), h / nsub, nsub,
                c->qdds);
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
     * and ros2's come with their qdd (update_outputs, below) */
    st = fmu_put_contact_outputs(c, c->qs, c->method_used == SOA_DOP853);
    if (st.kind != SOA_OK) return st;
    if (c->method_used == SOA_DOP853 || c->method_used == SOA_ROS2) c->last_h = last_h;
    memcpy(c->real + D.vr_q, c->qs, sizeof(double) * D.nq);
    memcpy(c->real + D.vr_qd, c->qds, sizeof(double) * D.nv);
    memcpy(c->real + D.vr_qdd, c->qdds, sizeof(double) * D.nv);
    fmu_put_constraint_outputs(c);
    /* the implicit and ros2 steps' qdd is their mean acceleration: the output beta-dot at t + h
     * is computed when asked for (update_outputs), keeping the step at its stages' sweeps */
    c->stale = c->method_used == SOA_IMPLICIT || c->method_used == SOA_ROS2;
    c->energy_valid = c->poses_valid = 0;
    return st;
}

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
        if (!fmu_me_evaluate(c, fn)) return 0;                  /* (logged) */
    } else if (c->stale && feedthrough) {
        soa_status st = update_outputs(c);
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

/* ------------------------------------------------------------------ the FMU state (bytes) */
/* Layout, little-endian: "SOAFMUST" | u32 version | u32 instance kind | 64 bytes table digest |
 * u64 model digest | u32 nreal, nboolean, nvars, nc | the STATE_SCALARS (i32 / f64) |
 * f64 real[nreal] | u8 boolean[nboolean] | u8 pending[nvars] | u8 problem[MSG] |
 * f64 anchors[16 nc] | u8 was_active[nc] | u64 FNV-1a checksum of everything before it.
 * The table digest (SHA-256 of the variable table, from build_fmu.py) and the model digest
 * (model_digest: every constant of the model) bind a state to the FMU's model: a state of
 * another model is refused, whatever its sizes. */
#define STATE_MAGIC "SOAFMUST"
#define STATE_VERSION 3u
#define STATE_HEADER (8 + 4 + 4 + 64 + 8 + 16)

static size_t scalar_bytes(void)
{
    size_t n = 0;
#define SIZE_SCALAR(type, name, k) n += (k) * (sizeof(type) == 8 ? 8 : 4);
    STATE_SCALARS(SIZE_SCALAR)
    return n;
}

static size_t state_bytes(void)
{
    return STATE_HEADER + scalar_bytes() + 8 * (size_t)D.nreal + (size_t)D.nboolean
           + (size_t)D.nvars + MSG + 8 * 16 * (size_t)D.nc + (size_t)D.nc + 8;
}

static void put_u64(unsigned char **p, uint64_t x)
{
    for (int i = 0; i < 8; i++) *(*p)++ = (unsigned char)(x >> (8 * i));
}
static void put_u32(unsigned char **p, uint32_t x)
{
    for (int i = 0; i < 4; i++) *(*p)++ = (unsigned char)(x >> (8 * i));
}
static uint64_t get_u64(const unsigned char **p)
{
    uint64_t x = 0;
    for (int i = 0; i < 8; i++) x |= (uint64_t)(*(*p)++) << (8 * i);
    return x;
}
static uint32_t get_u32(const unsigned char **p)
{
    uint32_t x = 0;
    for (int i = 0; i < 4; i++) x |= (uint32_t)(*(*p)++) << (8 * i);
    return x;
}
static void put_f64(unsigned char **p, double x)
{
    uint64_t u;
    memcpy(&u, &x, 8);
    put_u64(p, u);
}
static double get_f64(const unsigned char **p)
{
    uint64_t u = get_u64(p);
    double x;
    memcpy(&x, &u, 8);
    return x;
}
static void put_int(unsigned char **p, int x) { put_u32(p, (uint32_t)x); }
static int get_int(const unsigned char **p) { return (int)get_u32(p); }
static void put_double(unsigned char **p, double x) { put_f64(p, x); }
static double get_double(const unsigned char **p) { return get_f64(p); }

static uint64_t fnv1a(const unsigned char *b, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static uint64_t fnv1a_more(uint64_t h, const unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* FNV-1a over every constant of the description's model, little-endian whatever the host: each
 * table of soa.h (SOA_MODEL_INTS, SOA_MODEL_REALS: topology, joint types and placements, masses
 * and inertias, dissipation, constraints, flexible data, and any table added later) with its
 * sizes, and the variable table's digest.  The start values of the parameters a user may change
 * are in the state itself. */
static uint64_t model_digest(void)
{
    uint64_t h = fnv1a(NULL, 0);
    const int sizes[8] = {D.nb, D.nq, D.nv, D.nc, D.nm, D.nsph, D.npln, D.nssp};
    unsigned char b[8], *p;
    for (int k = 0; k < 8; k++) {
        p = b;
        put_u32(&p, (uint32_t)sizes[k]);
        h = fnv1a_more(h, b, 4);
    }
    const soa_sizes sz = {D.nb, D.nq, D.nv, D.nc, D.nm, D.nsph, D.npln, D.nssp};
    SOA_SIZES(&sz);
    int i = 0;
#define HASH_INT(name, ndim, d0, d1, d2)                                                         \
    for (size_t k = 0, n_ = soa_buffer_dims(ndim, d0, d1, d2); k < n_; k++) {                   \
        p = b;                                                                                  \
        put_u32(&p, (uint32_t)D.ints[i][k]);                                                    \
        h = fnv1a_more(h, b, 4);                                                                \
    }                                                                                           \
    i++;
    SOA_MODEL_INTS(HASH_INT)
#undef HASH_INT
    i = 0;
#define HASH_REAL(name, ndim, d0, d1, d2)                                                        \
    for (size_t k = 0, n_ = soa_buffer_dims(ndim, d0, d1, d2); k < n_; k++) {                   \
        p = b;                                                                                  \
        put_f64(&p, D.reals[i][k]);                                                             \
        h = fnv1a_more(h, b, 8);                                                                \
    }                                                                                           \
    i++;
    SOA_MODEL_REALS(HASH_REAL)
#undef HASH_REAL
    return fnv1a_more(h, (const unsigned char *)D.digest, strlen(D.digest));
}

static void save_state(const Instance *c, unsigned char *buf)
{
    unsigned char *p = buf;
    memcpy(p, STATE_MAGIC, 8);
    p += 8;
    put_u32(&p, STATE_VERSION);
    put_u32(&p, (uint32_t)c->kind);
    memset(p, 0, 64);
    memcpy(p, D.digest, strlen(D.digest) < 64 ? strlen(D.digest) : 64);
    p += 64;
    put_u64(&p, c->model_digest);
    put_u32(&p, (uint32_t)D.nreal);
    put_u32(&p, (uint32_t)D.nboolean);
    put_u32(&p, (uint32_t)D.nvars);
    put_u32(&p, (uint32_t)D.nc);
#define PUT_SCALAR(type, name, k) put_##type(&p, c->name);
    STATE_SCALARS(PUT_SCALAR)
    for (int i = 0; i < D.nreal; i++) put_f64(&p, c->real[i]);
    for (int i = 0; i < D.nboolean; i++) *p++ = c->boolean[i] ? 1 : 0;
    memcpy(p, c->pending, (size_t)D.nvars);
    p += D.nvars;
    memcpy(p, c->problem, MSG);
    p += MSG;
    for (int i = 0; i < 16 * D.nc; i++) put_f64(&p, c->anchors[i]);
    for (int j = 0; j < D.nc; j++) *p++ = c->was_active[j] ? 1 : 0;
    put_u64(&p, fnv1a(buf, (size_t)(p - buf)));
}

/* "" when buf (n bytes) is a state of this FMU and of this kind of instance, else why not. */
static const char *state_problem(const Instance *c, const unsigned char *buf, size_t n)
{
    if (n < STATE_HEADER || memcmp(buf, STATE_MAGIC, 8) != 0) return "not a soa_fmu FMU state";
    const unsigned char *p = buf + 8;
    if (get_u32(&p) != STATE_VERSION) return "another state format version";
    const uint32_t kind = get_u32(&p);
    char digest[65] = {0};
    memcpy(digest, p, 64);
    if (strncmp(digest, D.digest, 64) != 0)
        return "it belongs to a different FMU (other variable table)";
    p += 64;
    if (get_u64(&p) != c->model_digest)
        return "it belongs to a different model (the model digest differs: other topology, "
               "joints, placements, inertias or constraints)";
    if (get_u32(&p) != (uint32_t)D.nreal || get_u32(&p) != (uint32_t)D.nboolean
        || get_u32(&p) != (uint32_t)D.nvars || get_u32(&p) != (uint32_t)D.nc)
        return "its variable vectors have the wrong sizes";
    if (n != state_bytes()) return "it is truncated or padded";
    const unsigned char *end = buf + n - 8;
    if (get_u64(&end) != fnv1a(buf, n - 8)) return "it is corrupted (checksum mismatch)";
    if (kind != (uint32_t)c->kind)
        return kind == FMU_ME ? "it is the state of a Model Exchange instance"
                              : "it is the state of a Co-Simulation instance";
    p += scalar_bytes();
    for (int i = 0; i < D.nvars; i++) {   /* pending codes are in range */
        const unsigned char r = p[8 * (size_t)D.nreal + (size_t)D.nboolean + (size_t)i];
        if (r > REJ_LAST) return "it is corrupted (pending code)";
    }
    return "";
}

static void load_state(Instance *c, const unsigned char *buf)
{
    const unsigned char *p = buf + STATE_HEADER;
#define GET_SCALAR(type, name, k) c->name = get_##type(&p);
    STATE_SCALARS(GET_SCALAR)
    for (int i = 0; i < D.nreal; i++) c->real[i] = get_f64(&p);
    for (int i = 0; i < D.nboolean; i++) c->boolean[i] = *p++ ? 1 : 0;
    memcpy(c->pending, p, (size_t)D.nvars);
    p += D.nvars;
    memcpy(c->problem, p, MSG);
    c->problem[MSG - 1] = '\0';
    p += MSG;
    for (int i = 0; i < 16 * D.nc; i++) c->anchors[i] = get_f64(&p);
    for (int j = 0; j < D.nc; j++) c->was_active[j] = *p++ ? 1 : 0;
    const int me = c->kind == FMU_ME;
    if (c->mode < INSTANTIATED || c->mode > CONTINUOUS || c->mode == (me ? STEPPING : CONTINUOUS))
        c->mode = TERMINATED;
    if (c->method < 0 || c->method >= SOA_NMETHODS) c->method = D.method;
    if (c->method_used < 0 || c->method_used >= SOA_AUTO) c->method_used = SOA_RK4;
    c->failed_h = 0.0;
    if (!fmu_apply_parameters(c, NULL, 0)) c->built = 0;      /* the state's physical parameters */
    fmu_apply_gravity(c);
    c->energy_valid = c->poses_valid = 0;
    c->jac_valid = 0;
    if (me) c->stale = 1;
}

static fmu_state *new_state(size_t n)
{
    fmu_state *b = malloc(sizeof(fmu_state) + n);
    if (b) b->size = n;
    return b;
}

/* *state: a new state, or one of this FMU's to overwrite. */
int fmu_get_state(Instance *c, fmu_state **state, const char *fn)
{
    fmu_state *b = *state;
    if (b && b->size != c->state_size) {
        fmu_log(c, FMU_ERROR, "%s: the state given to overwrite is not one of this FMU", fn);
        return FMU_ERROR;
    }
    if (!b && !(b = new_state(c->state_size))) {
        fmu_log(c, FMU_ERROR, "%s: out of memory", fn);
        return FMU_ERROR;
    }
    save_state(c, b->bytes);
    *state = b;
    return FMU_OK;
}

/* A state that is not one of this FMU's is refused (Error, naming why) and the instance is
 * left exactly as it was, usable. */
int fmu_set_state(Instance *c, const fmu_state *b, const char *fn)
{
    const char *problem = b ? state_problem(c, b->bytes, b->size) : "a NULL state";
    if (problem[0]) {
        fmu_log(c, FMU_ERROR, "%s was given an unusable state (%s); the instance is unchanged",
                fn, problem);
        return FMU_ERROR;
    }
    load_state(c, b->bytes);
    return FMU_OK;
}

/* A state holding a copy of the bytes; NULL (Error, logged naming why) when they are not a
 * state of this FMU, its model and this kind of instance (foreign, truncated, corrupted). */
fmu_state *fmu_state_from_bytes(Instance *c, const unsigned char *bytes, size_t size,
                                const char *fn)
{
    const char *problem = bytes || size == 0 ? state_problem(c, bytes, size) : "a NULL buffer";
    if (problem[0]) {
        fmu_log(c, FMU_ERROR, "%s was given an unusable state (%s); the instance is unchanged",
                fn, problem);
        return NULL;
    }
    fmu_state *b = new_state(size);
    if (!b) {
        fmu_log(c, FMU_ERROR, "%s: out of memory", fn);
        return NULL;
    }
    if (size) memcpy(b->bytes, bytes, size);
    return b;
}

/* ------------------------------------------------------------------ instance life cycle */
void fmu_set_defaults(Instance *c)
{
    for (int vr = 0; vr < D.nreal; vr++) c->real[vr] = D.vars[vr].start;
    for (int i = 0; i < D.nboolean; i++) c->boolean[i] = D.vars[D.nreal + i].start != 0.0;
    memset(c->pending, 0, (size_t)D.nvars);
    c->problem[0] = '\0';
    c->mode = INSTANTIATED;
    c->method = D.method;
    c->method_used = D.method == SOA_AUTO ? SOA_RK4 : D.method;
    c->built = 0;
    c->params_dirty = 1;
    c->stale = 1;
    c->t = c->start_time = c->last_h = 0.0;
    c->anchor_t = 0.0;
    c->renormalized = 0;
    c->energy_valid = c->poses_valid = 0;
    c->jac_valid = 0;
    c->failed_h = 0.0;
    c->factored = c->contact_held = 0;
    reset_closures(c);
}

void fmu_free(Instance *c)
{
    if (!c) return;
    soa_data_free(c->d);
    soa_model_free(c->m);
    free(c->name);
    free(c->real);
    free(c->boolean);
    free(c->pending);
    free(c->qs);
    free(c->qds);
    free(c->qdds);
    free(c->dtau);
    free(c->dqdd);
    free(c->active);
    free(c->was_active);
    free(c->u);
    free(c->anchors);
    free(c->forces);
    free(c->residuals);
    free(c->zero_v);
    free(c->du);
    free(c->dforces);
    free(c->dres);
    free(c->qn);
    free(c->jac);
    free(c->dth);
    free(c->dq);
    free(c->dv);
    free(c->qf);
    free(c->qdf);
    free(c->dqdot);
    free(c->dqdd_x);
    free(c->scratch);
    free(c);
}

/* The soa_model of the description: its buffers copied by the tables of soa.h, then checked. */
static soa_model *make_model(void)
{
    const soa_sizes sizes = {D.nb, D.nq, D.nv, D.nc, D.nm, D.nsph, D.npln, D.nssp};
    soa_model *m = soa_model_new(&sizes);
    if (!m) return NULL;
    SOA_SIZES(m);
    int i = 0;
#define COPY_INT(name, ndim, d0, d1, d2) \
    memcpy(m->name, D.ints[i++], sizeof(int) * soa_buffer_dims(ndim, d0, d1, d2));
    SOA_MODEL_INTS(COPY_INT)
    i = 0;
#define COPY_REAL(name, ndim, d0, d1, d2) \
    memcpy(m->name, D.reals[i++], sizeof(double) * soa_buffer_dims(ndim, d0, d1, d2));
    SOA_MODEL_REALS(COPY_REAL)
    if (soa_model_finish(m).kind != SOA_OK) {
        soa_model_free(m);
        return NULL;
    }
    return m;
}

/* A new instance with every buffer allocated and the variables at their start values; NULL
 * (logged through emit) when out of memory. */
Instance *fmu_new(const char *name, int kind, int fmi, fmu_emit_fn emit, void (*logger)(void),
                  void *env, int logging_on)
{
    Instance tmp = {0};
    tmp.emit = emit;
    tmp.logger = logger;
    tmp.env = env;
    tmp.name = (char *)name;
    Instance *c = calloc(1, sizeof *c);
    if (!c) {
        fmu_log(&tmp, FMU_FATAL, "instantiation: out of memory");
        return NULL;
    }
    c->emit = emit;
    c->logger = logger;
    c->env = env;
    c->logging_on = logging_on ? 1 : 0;
    c->kind = kind;
    c->fmi = fmi;
    const size_t nlen = strlen(name) + 1;
    c->name = malloc(nlen);
    if (c->name) memcpy(c->name, name, nlen);
    c->m = make_model();
    c->d = c->m ? soa_data_new(c->m) : NULL;
    const size_t nq = (size_t)D.nq + 1, nv = (size_t)D.nv + 1, nc = (size_t)D.nc + 1;
    c->real = calloc((size_t)D.nreal + 1, sizeof(double));
    c->boolean = calloc((size_t)D.nboolean + 1, sizeof(int));
    c->pending = calloc((size_t)D.nvars + 1, 1);
    c->qs = calloc(nq, sizeof(double));
    c->qds = calloc(nv, sizeof(double));
    c->qdds = calloc(nv, sizeof(double));
    c->qf = calloc(nq, sizeof(double));
    c->qdf = calloc(nv, sizeof(double));
    c->dtau = calloc(nv, sizeof(double));
    c->dqdd = calloc(nv, sizeof(double));
    c->active = calloc(nc, sizeof(int));
    c->was_active = calloc(nc, sizeof(int));
    c->u = calloc(6 * nc, sizeof(double));
    c->anchors = calloc(16 * nc, sizeof(double));
    c->forces = calloc(6 * nc, sizeof(double));
    c->residuals = calloc(nc, sizeof(double));
    c->zero_v = calloc(nv, sizeof(double));
    c->du = calloc(6 * nc, sizeof(double));
    c->dforces = calloc(6 * nc, sizeof(double));
    c->dres = calloc(nc, sizeof(double));
    c->qn = calloc(nq, sizeof(double));
    c->jac = calloc(3 * nv * nv, sizeof(double));
    c->dth = calloc(nv, sizeof(double));
    c->dq = calloc(nq, sizeof(double));
    c->dv = calloc(nv, sizeof(double));
    c->dqdot = calloc(nq, sizeof(double));
    c->dqdd_x = calloc(nv, sizeof(double));
    c->scratch = calloc(2 * ((size_t)D.nreal + 1), sizeof(double));
    if (!c->name || !c->m || !c->d || !c->real || !c->boolean || !c->pending || !c->qs || !c->qds
        || !c->qdds || !c->qf || !c->qdf || !c->dtau || !c->dqdd || !c->active || !c->was_active || !c->u
        || !c->anchors || !c->forces || !c->residuals || !c->zero_v || !c->du || !c->dforces
        || !c->dres || !c->qn || !c->jac || !c->dth || !c->dq || !c->dv || !c->dqdot
        || !c->dqdd_x || !c->scratch) {
        fmu_log(&tmp, FMU_FATAL, "instantiation: out of memory or inconsistent model constants");
        fmu_free(c);
        return NULL;
    }
    c->state_size = state_bytes();
    c->model_digest = model_digest();
    fmu_set_defaults(c);
    return c;
}

/* Leave initialization mode into `mode` (STEPPING, or EVENT for Model Exchange), building the
 * state from the parameters. */
int fmu_exit_initialization(Instance *c, int mode, const char *fn)
{
    if (c->mode != INITIALIZATION) {
        fmu_log(c, FMU_ERROR, "%s called in %s mode", fn, MODE_NAMES[c->mode]);
        return FMU_ERROR;
    }
    c->mode = mode;
    if (!c->built || c->params_dirty) {
        char msg[MSG - 64];
        if (!fmu_build(c, msg, sizeof msg)) {
            c->built = 0;
            snprintf(c->problem, sizeof c->problem, "initialization failed: %s", msg);
            fmu_log(c, FMU_ERROR, "%s: %s", fn, c->problem);
            return FMU_ERROR;
        }
    }
    c->problem[0] = '\0';
    return FMU_OK;
}

/* ------------------------------------------------------------------ value references */
/* The scalars value reference vr names among the variables [lo, hi) (0: none): one in FMI 2.0;
 * in FMI 3.0 the array starting at vr, and D.nvars is the independent variable time (a Real). */
int fmu_span(const Instance *c, unsigned vr, int lo, int hi)
{
    if (c->fmi == 3 && vr == (unsigned)D.nvars && lo == 0 && hi == D.nreal) return 1;
    if ((long long)vr < lo || (long long)vr >= hi) return 0;
    return c->fmi == 3 ? D.vars[vr].n3 : 1;
}

int fmu_check_refs(Instance *c, const unsigned *vr, size_t nvr, size_t nvalues, int lo, int hi,
                   const char *fn, int mark)
{
    if (nvr > 0 && !vr) {
        fmu_log(c, FMU_ERROR, "%s: NULL value reference array for %zu values", fn, nvr);
        return 0;
    }
    size_t total = 0;
    for (size_t i = 0; i < nvr; i++) {
        const int n = fmu_span(c, vr[i], lo, hi);
        if (n == 0) {
            char text[96];
            snprintf(text, sizeof text, "%s was called with invalid value reference %u", fn,
                     (unsigned)vr[i]);
            fmu_log(c, FMU_ERROR, "%s: value reference %u is not a %s variable of this FMU", fn,
                    (unsigned)vr[i], fn + 7);
            if (mark) snprintf(c->problem, sizeof c->problem, "%s", text);
            return 0;
        }
        total += (size_t)n;
    }
    if (total != nvalues) {
        fmu_log(c, FMU_ERROR, "%s: the variables hold %zu values, %zu were passed", fn, total,
                nvalues);
        return 0;
    }
    return 1;
}

/* ------------------------------------------------------------------ getters */
int fmu_get_real(Instance *c, const unsigned *vr, size_t nvr, double *value, size_t nvalues,
                 const char *fn)
{
    if (nvalues > 0 && !value) return FMU_ERROR;
    if (!fmu_check_refs(c, vr, nvr, nvalues, 0, D.nreal, fn, 0)) {
        for (size_t i = 0; i < nvalues; i++) value[i] = NAN;
        return FMU_ERROR;
    }
    int feed = 0, energy = 0, poses = 0, outputs = 0, rates = 0;
    FOR_SCALARS(c, vr, nvr, 0, D.nreal, r, k) {
        if (r >= D.nreal) continue;                                  /* time */
        if (D.vars[r].causality != SOA_FMU_OUTPUT && D.vars[r].causality != SOA_FMU_LOCAL)
            continue;
        outputs = 1;
        if (r >= D.vr_qdd && r < D.vr_energy) feed = 1;
        else if (r == D.vr_energy) energy = 1;
        else if (r > D.vr_energy) poses = 1;
        if (D.vr_qdot >= 0 && r >= D.vr_qdot && r < D.vr_qdot + D.nq) rates = 1;
    }
    if (outputs && !fmu_refresh(c, feed, energy, poses, fn)) {
        FOR_SCALARS(c, vr, nvr, 0, D.nreal, r, k)
            value[k] = r >= D.nreal ? c->t
                     : D.vars[r].causality == SOA_FMU_OUTPUT || D.vars[r].causality == SOA_FMU_LOCAL
                     ? NAN : c->real[r];
        return FMU_ERROR;
    }
    /* ---- der(q) in Co-Simulation: theta-dot = f(theta) beta at the current state */
    if (rates && c->kind == FMU_CS)
        soa_configuration_rate(c->m, c->real + D.vr_q, c->real + D.vr_qd, c->real + D.vr_qdot);
    FOR_SCALARS(c, vr, nvr, 0, D.nreal, r, k) value[k] = r >= D.nreal ? c->t : c->real[r];
    return FMU_OK;
}

/* ------------------------------------------------------------------ setters */
/* A rejected value is not applied.  A value the model cannot run with (NaN/Inf, a non-positive
 * tolerance, an unknown integrator) also makes every step refuse until it is corrected; a late
 * set of a fixed parameter or a set of an output leaves the instance usable with the value it has
 * (the setter's Error tells the master). */
static void reject(Instance *c, int vr, int why, const char *text)
{
    if (why == REJ_FIXED || why == REJ_OUTPUT) {
        fmu_log(c, FMU_ERROR, "%s; value rejected (not applied), the FMU keeps %s", text,
                why == REJ_FIXED ? "the value set before initialization" : "computing it");
        return;
    }
    c->pending[vr] = (unsigned char)why;
    fmu_log(c, FMU_ERROR, "%s; value rejected (not applied), %s is refused until it is "
            "corrected", text, c->kind == FMU_ME ? "every evaluation" : "doStep");
}

/* Why x cannot be the value of Real vr now (0: it can), with the message in text. */
static int real_problem(const Instance *c, int vr, double x, char *text, size_t n)
{
    char nm[256];
    if (vr >= D.nreal) {                                             /* FMI 3.0 time */
        snprintf(text, n, "time is the independent variable and cannot be set");
        return REJ_OUTPUT;
    }
    const soa_fmu_variable *v = &D.vars[vr];
    if (isnan(x)) {
        snprintf(text, n, "%s is NaN", fmu_named(vr, nm, sizeof nm));
        return REJ_NAN;
    }
    if (!isfinite(x)) {
        snprintf(text, n, "%s is infinite", fmu_named(vr, nm, sizeof nm));
        return REJ_INF;
    }
    if (v->causality == SOA_FMU_OUTPUT || v->causality == SOA_FMU_LOCAL) {
        snprintf(text, n, "%s is %s and cannot be set", v->name,
                 v->causality == SOA_FMU_OUTPUT ? "an output" : "computed by the FMU");
        return REJ_OUTPUT;
    }
    if (v->causality == SOA_FMU_PARAMETER && v->fixed
        && (fmu_running(c) || c->mode == TERMINATED)) {
        snprintf(text, n, "%s is a fixed parameter; it can only be set before "
                 "fmi%dExitInitializationMode", fmu_named(vr, nm, sizeof nm), c->fmi);
        return REJ_FIXED;
    }
    if (v->positive && !(x > 0.0)) {
        snprintf(text, n, "%s must be > 0, got %.17g", v->name, x);
        return REJ_NONPOSITIVE;
    }
    if (vr == D.vr_max_step && x < SOA_MIN_MAX_STEP) {
        snprintf(text, n, "max_step must be \xe2\x89\xa5 %g s (the floor of every step's sub-steps), "
                 "got %.17g", SOA_MIN_MAX_STEP, x);
        return REJ_TOO_SMALL;
    }
    if (D.vr_stop_stiffness >= 0 && vr >= D.vr_stop_stiffness && vr < D.vr_stop_damping + D.nv
        && !(x >= 0.0)) {
        snprintf(text, n, "%s must be >= 0, got %.17g", fmu_named(vr, nm, sizeof nm), x);
        return REJ_NONPOSITIVE;
    }
    return fmu_contact_problem(vr, x, text, n);
}

int fmu_set_real(Instance *c, const unsigned *vr, size_t nvr, const double *value,
                 size_t nvalues, const char *fn)
{
    if (nvalues > 0 && !value) return FMU_ERROR;
    if (!fmu_check_refs(c, vr, nvr, nvalues, 0, D.nreal, fn, 1)) return FMU_ERROR;
    /* every value is checked first: a call with a bad value applies nothing */
    int status = FMU_OK;
    char text[MSG];
    FOR_SCALARS(c, vr, nvr, 0, D.nreal, r, k) {
        const int why = real_problem(c, r, value[k], text, sizeof text);
        if (why) {
            if (r < D.nreal) reject(c, r, why, text);
            else fmu_log(c, FMU_ERROR, "%s: %s", fn, text);
            status = FMU_ERROR;
        }
    }
    if (status != FMU_OK) return status;
    int tunable = 0;
    FOR_SCALARS(c, vr, nvr, 0, D.nreal, r, k) {
        c->real[r] = value[k];
        c->pending[r] = OK_VALUE;
        if (D.vars[r].causality == SOA_FMU_PARAMETER) {
            if (fmu_running(c)) tunable = 1;
            else c->params_dirty = 1;
        }
    }
    if (tunable) fmu_apply_gravity(c);    /* g; max_step, tolerances are read at each step */
    fmu_invalidate(c);
    return FMU_OK;
}

/* One Boolean (a constraint switch or the stops' switch; vr checked by the caller).  A Model
 * Exchange instance takes a CHANGE of a discrete input only outside continuous-time mode: a switch
 * is an event (fmu_me_event_update grasps / releases).  The value it already has is accepted there:
 * hosts such as fmpy apply every input again inside the root finder's event-indicator calls. */
int fmu_set_boolean(Instance *c, unsigned vr, int value, const char *fn)
{
    if (c->kind == FMU_ME && c->mode == CONTINUOUS && D.vars[vr].causality == SOA_FMU_INPUT) {
        if (c->boolean[vr - (unsigned)D.nreal] == (value ? 1 : 0)) return FMU_OK;   /* unchanged */
        fmu_log(c, FMU_ERROR, "%s: %s is a discrete input; set it in event mode (value not "
                "applied)", fn, D.vars[vr].name);
        return FMU_ERROR;
    }
    c->boolean[vr - (unsigned)D.nreal] = value ? 1 : 0;
    c->pending[vr] = OK_VALUE;
    if ((int)vr == D.vr_stops_enabled && fmu_running(c)) fmu_apply_gravity(c);   /* tunable */
    fmu_invalidate(c);
    return FMU_OK;
}

/* The integrator (vr checked by the caller). */
int fmu_set_string(Instance *c, unsigned vr, const char *value)
{
    int method = -1;
    for (int k = 0; k < SOA_NMETHODS && value; k++)
        if (strcmp(value, METHOD_NAMES[k]) == 0) method = k;
    if (method < 0) {
        char text[MSG];
        snprintf(text, sizeof text, "integrator '%.200s' is not one of rk4, euler, dop853, "
                 "implicit, ros2, auto",
                 value ? value : "(null)");
        reject(c, (int)vr, REJ_METHOD, text);
        return FMU_ERROR;
    }
    c->method = method;
    if (fmu_running(c) && method != SOA_AUTO) c->method_used = method;   /* auto: as decided */
    else if (!fmu_running(c)) c->params_dirty = 1;        /* resolved when the state is built */
    c->pending[vr] = OK_VALUE;
    c->failed_h = 0.0;
    return FMU_OK;
}

/* ------------------------------------------------------------------ stepping */
/* "" when steps may run, else the reasons they are refused. */
int fmu_pending_reasons(const Instance *c, char *out, size_t n)
{
    size_t used = 0;
    int any = 0;
    out[0] = '\0';
    unsigned char rejected = 0;                       /* (the usual case, one vector pass) */
    for (int vr = 0; vr < D.nvars; vr++) rejected |= c->pending[vr];
    if (!rejected && !c->problem[0]) return 0;
    if (c->problem[0]) {
        used += (size_t)snprintf(out, n, "%s", c->problem);
        any = 1;
    }
    for (int vr = 0; vr < D.nvars && used + 1 < n; vr++) {
        if (!c->pending[vr]) continue;
        char nm[256];
        static const char *const why[] = {"", "was set to NaN", "was set to an infinite value",
                                          "is an output", "is a fixed parameter",
                                          "must be > 0", "is not a known integrator",
                                          "is below its floor", "must be \xe2\x89\xa5 0"};
        used += (size_t)snprintf(out + used, n - used, "%s%s %s (value rejected)", any ? "; " : "",
                                 fmu_named(vr, nm, sizeof nm), why[c->pending[vr]]);
        any = 1;
        if (used >= n) break;
    }
    return any;
}

/* 1 when a step by h would need more than SOA_MAX_SUBSTEPS sub-steps of max_step (a fixed-step
 * integrator), with the message naming h, max_step and the count: the step is refused at once. */
static int too_many_substeps(const Instance *c, double h, char *msg, size_t n)
{
    const double max_step = c->real[D.vr_max_step];
    if (c->method_used == SOA_DOP853 || (c->method_used == SOA_ROS2 && error_control(c))
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
