/* The controller role of the native FMU (fmu.h: role SOA_FMU_CONTROLLER; docs/systems.md): the
 * model's computed-torque controller, built by `soa-build-fmu MODEL --controller` from the same
 * model as the plant.  It shares the plant's life cycle, variable access, logging and FMU state
 * (instance.c, fmu_values.c, fmu_log.c, fmu_state.c); the simulation (fmu_step.c: the build, the
 * getter's refresh, a step) calls in here where a plant would simulate:
 *
 *     e = q_d - q,  e-dot = qd_d - qd,  a = qdd_d + Kp e + Kd e-dot          (per dof)
 *     tau = ID(q, qd, a)  [+ d qd_d + f_c tanh(qd_d / v_s) with ff_dissipation]
 *
 * ID is the Newton-Euler inverse dynamics of the model (soa_rnea, seed 001 eqs. 6-12 and 25, with
 * the rotors' armature); the bracket feeds forward the joint dissipation the plant subtracts
 * (core/dissipation.c) along the reference rate: a feed-forward, not a feedback of the measured
 * rate, whose stiff friction law (f_c / v_s) a sampled loop would turn into a limit cycle
 * (docs/systems.md: 6.7 vs 0.38 mrad on the arm's wrist).  The reference (q_d, qd_d, qdd_d) is
 * the inputs q_ref, qd_ref, qdd_ref, or with the Boolean `trajectory` the quintic move
 * q_from -> q_to over [move_start, move_start + move_duration] (rest to rest: zero rate and
 * acceleration at both ends).
 *
 * tau is a function of the inputs at the same instant (direct feedthrough, declared in
 * ModelStructure) and of time: recomputed when an output is read after an input, a parameter or
 * the time changed.  With the fixed Boolean `sampled` a Co-Simulation instance instead computes
 * tau once per doStep, from the inputs at the step's start, and holds it until the next (0 before
 * the first step): a digital controller with one sample of delay, whose loop with the plant is the
 * same whatever order a master sets and reads the FMUs in.  The controller has no states; its
 * Model Exchange interface has zero continuous states and event indicators.  Nothing allocates. */
#include <math.h>
#include <string.h>

#include "instance.h"

/* tau is held between steps (sampled Co-Simulation) rather than following the inputs. */
static int held(const Instance *c)
{
    return c->kind == FMU_CS && c->boolean[D.vr_sampled - D.nreal];
}

/* The quintic rest-to-rest profile p(s) = 10 s^3 - 15 s^4 + 6 s^5 at s = (t - t0) / T clamped to
 * [0, 1], and its first two time derivatives. */
static void quintic(double t, double t0, double T, double p[3])
{
    double s = (t - t0) / T;
    if (!(s > 0.0)) s = 0.0;
    if (s > 1.0) s = 1.0;
    const double s2 = s * s, s3 = s2 * s;
    p[0] = s3 * (10.0 - 15.0 * s + 6.0 * s2);
    p[1] = 30.0 * s2 * (1.0 - 2.0 * s + s2) / T;
    p[2] = 60.0 * s * (1.0 - 3.0 * s + 2.0 * s2) / (T * T);
}

/* The reference at time t into (qr, qdr, qddr) (nv each): the inputs, or the trajectory's. */
static void reference(const Instance *c, double t, double *qr, double *qdr, double *qddr)
{
    const double *x = c->real;
    if (!c->boolean[D.vr_trajectory - D.nreal]) {
        memcpy(qr, x + D.vr_q_ref, sizeof(double) * D.nv);
        memcpy(qdr, x + D.vr_qd_ref, sizeof(double) * D.nv);
        memcpy(qddr, x + D.vr_qdd_ref, sizeof(double) * D.nv);
        return;
    }
    double p[3];
    quintic(t, x[D.vr_move_start], x[D.vr_move_duration], p);
    for (int i = 0; i < D.nv; i++) {
        const double dq = x[D.vr_q_to + i] - x[D.vr_q_from + i];
        qr[i] = x[D.vr_q_from + i] + dq * p[0];
        qdr[i] = dq * p[1];
        qddr[i] = dq * p[2];
    }
}

/* tau and q_des at the instance's time from its inputs (the file comment). */
static soa_status computed_torque(Instance *c)
{
    fmu_data_used(c);
    const double *x = c->real, *q = x + D.vr_q, *qd = x + D.vr_qd;
    double *qr = c->qs, *qdr = c->qds, *a = c->qdds, *tau = c->dqdd;   /* nv each (nq = nv) */
    reference(c, c->t, qr, qdr, a);
    for (int i = 0; i < D.nv; i++)
        a[i] += x[D.vr_kp + i] * (qr[i] - q[i]) + x[D.vr_kd + i] * (qdr[i] - qd[i]);
    soa_status st = soa_rnea(c->m, c->d, q, qd, a, 0, tau);
    if (st.kind != SOA_OK) return st;
    if (c->boolean[D.vr_ff_dissipation - D.nreal]) {
        const soa_model *m = c->m;
        for (int i = 0; i < D.nv; i++) {
            tau[i] += m->damping[i] * qdr[i];
            if (m->friction[i] != 0.0) tau[i] += m->friction[i] * tanh(qdr[i] / m->vfric[0]);
        }
        st = soa_check_result(tau, D.nv, 1);
        if (st.kind != SOA_OK) return st;
    }
    memcpy(c->real + D.vr_tau, tau, sizeof(double) * D.nv);
    memcpy(c->real + D.vr_q_des, qr, sizeof(double) * D.nv);
    c->stale = 0;
    return st;
}

/* The instance from its parameters (fmu_build's controller part): the model's physical
 * parameters and gravity, t = start time, the outputs (sampled: tau = 0, nothing sampled yet). */
int fmu_controller_build(Instance *c, char *msg, size_t n)
{
    if (!fmu_apply_parameters(c, msg, n)) return 0;
    fmu_apply_gravity(c);
    c->t = c->start_time;
    c->built = 1;
    c->params_dirty = 0;
    if (held(c)) {
        memset(c->real + D.vr_tau, 0, sizeof(double) * D.nv);
        reference(c, c->t, c->real + D.vr_q_des, c->qds, c->qdds);
        c->stale = 0;
        return 1;
    }
    const soa_status st = computed_torque(c);
    if (st.kind != SOA_OK) {
        fmu_status_message(c, st, msg, n);
        c->built = 0;
        return 0;
    }
    return 1;
}

/* The outputs up to date for a getter (fmu_refresh's controller part); 0 (logged) on failure. */
int fmu_controller_refresh(Instance *c, const char *fn)
{
    if (!c->stale || held(c)) return 1;
    const soa_status st = computed_torque(c);
    if (st.kind == SOA_OK) return 1;
    char msg[MSG];
    fmu_status_message(c, st, msg, sizeof msg);
    fmu_log(c, FMU_ERROR, "%s: the computed torque at t = %.17g cannot be evaluated: %s", fn, c->t,
            msg);
    return 0;
}

/* A communication step's work (fmu_do_step advances the time): sampled, tau from the inputs at
 * the step's start, held over the step; else the outputs follow the new time when read. */
soa_status fmu_controller_step(Instance *c)
{
    soa_status st = {SOA_OK, 0};
    if (held(c)) st = computed_torque(c);
    c->stale = !held(c);
    return st;
}
