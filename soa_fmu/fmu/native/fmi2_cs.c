/* FMI 2.0 Co-Simulation over the C core: the native FMU's wrapper.
 *
 * One instance holds a soa_model built from the generated description (fmu_model.c), a soa_data, and
 * the values of every variable (reals by value reference, Booleans, the integrator string).  The
 * semantics are the pythonfmu slave's (soa_fmu/fmu/slave.py) with the status discipline a C
 * library can give:
 *
 *   - a rejected value (NaN/Inf, an output, a fixed parameter after initialization, max_step <= 0,
 *     an unknown integrator) is NOT applied: the setter returns fmi2Error and logs the variable and
 *     its joint; until a valid value is set for it (or fmi2SetFMUstate / fmi2Reset), every doStep
 *     is refused with fmi2Discard, repeating the reason;
 *   - a failed step (a diverging state, a singular articulated inertia) returns fmi2Discard with
 *     the state unchanged;
 *   - a call in the wrong state (fmi2DoStep before initialization or after fmi2Terminate) returns
 *     fmi2Error naming the function and the state.
 *
 * Everything is allocated in fmi2Instantiate (and by fmi2GetFMUstate / fmi2DeSerializeFMUstate);
 * fmi2DoStep, the getters and setters allocate nothing, do no I/O except through the logger, and
 * take no locks.  The FMU state is one self-describing byte buffer (serialize.c layout below), so
 * fmi2GetFMUstate and fmi2SerializeFMUstate share one format. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmi2Functions.h"
#include "fmu.h"
#include "spatial.h"

#define D (soa_fmu_model)
#define QUAT_NORM_TOL 1e-3     /* q0 quaternions are normalized when | |q| - 1 | is below this */
#define MSG 1024

static const char *const METHOD_NAMES[SOA_NMETHODS] = {"rk4", "euler", "dop853"};
typedef enum { INSTANTIATED, INITIALIZATION, STEPPING, TERMINATED } Mode;
static const char *const MODE_NAMES[] = {"instantiated", "initialization", "step", "terminated"};

/* Why a variable's value was rejected (pending[vr]); the value itself was not applied. */
enum { OK_VALUE, REJ_NAN, REJ_INF, REJ_OUTPUT, REJ_FIXED, REJ_NONPOSITIVE, REJ_METHOD };

/* The evolving state of an instance, declared once: what fmi2GetFMUstate saves and
 * fmi2SetFMUstate restores (X(type, name, count)). */
#define STATE_SCALARS(X)                                                                          \
    X(int, mode, 1)          /* Mode */                                                           \
    X(int, method, 1)        /* the integrator (string variable "integrator") */                  \
    X(int, built, 1)         /* the simulation state exists (from the parameters) */              \
    X(int, params_dirty, 1)  /* parameters changed before initialization ended: rebuild */        \
    X(int, stale, 1)         /* qdd not yet computed with the current inputs */                   \
    X(double, t, 1)          /* time of the state */                                              \
    X(double, start_time, 1) \
    X(double, last_h, 1)     /* dop853: last accepted internal step (0: none yet) */

typedef struct {
    fmi2CallbackLogger logger;
    fmi2ComponentEnvironment env;
    char *name;
    int logging_on;
    soa_model *m;
    soa_data *d;
#define DECLARE_SCALAR(type, name, n) type name;
    STATE_SCALARS(DECLARE_SCALAR)
    double *real;               /* nreal: every Real variable by value reference */
    fmi2Boolean *boolean;       /* nboolean */
    unsigned char *pending;     /* nvars: REJ_* of a rejected value, else OK_VALUE */
    char problem[MSG];          /* a pending problem not tied to one variable ("" if none) */
    int energy_valid, poses_valid;
    int factored;               /* the data holds the articulated factors of the current state
                                 * (the last evaluation was the tree's at it): the next step's
                                 * first stage reuses them (soa_tree_accel) */
    double *qs, *qds, *qdds;    /* a step works on copies: a failed step leaves the state as is */
    double *dtau, *dqdd;        /* directional derivatives */
    /* closure constraints (nc): the switches and rows of the inputs in the engine's layout, the
     * targets and the switches of the last step (evolving state), the outputs of the engine */
    int *active, *was_active;
    double *u, *anchors, *forces, *residuals;
    double *zero_v, *du, *dforces, *dres;   /* directional derivatives with constraints */
    size_t state_size;          /* bytes of a serialized state */
} Instance;

/* ------------------------------------------------------------------ logging */
static int category_enabled(const Instance *c, fmi2Status s)
{
    return s >= fmi2Warning || c->logging_on;
}

static const char *category_of(fmi2Status s)
{
    switch (s) {
    case fmi2Warning: return "logStatusWarning";
    case fmi2Discard: return "logStatusDiscard";
    case fmi2Error: return "logStatusError";
    case fmi2Fatal: return "logStatusFatal";
    default: return "logAll";
    }
}

/* Log a message (formatted here; '%' escaped, since the FMI logger treats it as a format). */
static void logf_(const Instance *c, fmi2Status s, const char *fmt, ...)
{
    if (!c || !c->logger || !category_enabled(c, s)) return;
    char raw[MSG], esc[2 * MSG];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    size_t j = 0;
    for (size_t i = 0; raw[i] && j + 2 < sizeof esc; i++) {
        if (raw[i] == '%') esc[j++] = '%';
        esc[j++] = raw[i];
    }
    esc[j] = '\0';
    c->logger(c->env, c->name, s, category_of(s), esc);
}

/* "tau[3] (joint3)": a variable's name with the joint/frame/constraint it belongs to. */
static const char *named(int vr, char *buf, size_t n)
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
    default: return index < D.nv ? D.velocity_names[index] : NULL;
    }
}

static void status_message(const Instance *c, soa_status st, char *buf, size_t n)
{
    const soa_names names = {name_of, NULL};
    if (st.kind == SOA_CONSTRAINT_SINGULAR)
        soa_closure_message(c->m, c->d, "constrained forward dynamics", &names, buf, n);
    else
        soa_status_message(c->m, st, &names, buf, n);
}

/* ------------------------------------------------------------------ the simulation */
static void apply_gravity(Instance *c)
{
    for (int i = 0; i < 3; i++) {
        c->m->a0[i] = 0.0;
        c->m->a0[3 + i] = -c->real[D.vr_g + i];
    }
}

/* The held external forces at the frames, moved to their bodies' origins (phi): returns 1 when
 * any is non-zero.  f: the 6 values of each frame starting at base[vr_fext]. */
static int pack_frame_forces(const Instance *c, const double *base, double *fext)
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
static int gather_closure_inputs(Instance *c)
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

/* The constraint outputs from the engine's forces and residuals (0 when switched off). */
static void put_constraint_outputs(Instance *c)
{
    for (int j = 0; j < D.nc; j++) {
        const soa_fmu_constraint *k = &D.constraints[j];
        for (int r = 0; r < c->m->cn_size[j]; r++)
            c->real[k->vr_f + r] = c->active[j] ? c->forces[6 * j + r] : 0.0;
        c->real[k->vr_err] = c->active[j] ? c->residuals[j] : 0.0;
    }
}

/* qdd (and the constraint forces) at the current state with the held inputs: the feedthrough
 * outputs (soa_fmu.Simulator.update_outputs). */
static soa_status update_outputs(Instance *c)
{
    const int use = pack_frame_forces(c, c->real, c->d->fext);
    const double *q = c->real + D.vr_q, *qd = c->real + D.vr_qd, *tau = c->real + D.vr_tau;
    tau = soa_joint_forces(c->m, c->d, qd, tau);     /* dissipation, as in every step */
    soa_status st;
    if (D.nc > 0 && gather_closure_inputs(c)) {
        st = soa_constrained_fd(c->m, c->d, q, qd, tau, use, c->active, c->u, NULL, c->anchors,
                                c->real[D.vr_stab], c->real[D.vr_stab + 1], c->qdds, c->forces,
                                c->residuals);
    } else {
        st = soa_aba(c->m, c->d, q, qd, tau, use, c->qdds);
        for (int i = 0; i < 6 * D.nc; i++) c->forces[i] = 0.0;
        for (int j = 0; j < D.nc; j++) c->residuals[j] = 0.0;
    }
    c->factored = D.nc == 0 && st.kind == SOA_OK;
    if (st.kind == SOA_OK) {
        memcpy(c->real + D.vr_qdd, c->qdds, sizeof(double) * D.nv);
        put_constraint_outputs(c);
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

/* ------------------------------------------------------------------ physical parameters
 * The fixed parameters <b>.mass, <b>.com[1..3], <b>.inertia[1..6] (xx yy zz xy xz yz), damping[i]
 * and friction[i] go into the instance's soa_model, which soa_model_finish re-derives (M(k), the
 * dissipation flag): when the state is built (before initialization ends) and when a state is
 * restored, never in fmi2DoStep.  Every mass must be >= 0, the inertia of a body whose values
 * differ from the start values must be physical (soa_inertia_problem: a published robot file's may
 * not be), damping and friction >= 0. */
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
    }
}

/* The parameters into the model; 0 (msg, which may be NULL: the reason naming the body or dof)
 * when they are refused, the model then holding the start values. */
static int apply_parameters(Instance *c, char *msg, size_t n)
{
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
    if (msg) status_message(c, st, msg, n);
    write_parameters(c, 1);
    soa_model_finish(c->m);
    return 0;
}

/* (Re)create the state from the parameters (before initialization has ended): q = q0 with its
 * quaternions normalized, qd = qd0, t = start time.  Returns 0 with the reason in msg. */
static int build(Instance *c, char *msg, size_t n)
{
    if (!apply_parameters(c, msg, n)) return 0;
    apply_gravity(c);
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
    for (int i = D.vr_max_step; i <= D.vr_atol; i++)
        if (!(c->real[i] > 0.0)) {
            snprintf(msg, n, "%s must be > 0, got %.17g", D.vars[i].name, c->real[i]);
            return 0;
        }
    c->t = c->start_time;
    c->last_h = 0.0;
    reset_closures(c);
    c->built = 1;
    c->params_dirty = 0;
    const soa_status st = update_outputs(c);
    if (st.kind != SOA_OK) {
        status_message(c, st, msg, n);
        c->built = 0;
        return 0;
    }
    c->energy_valid = c->poses_valid = 0;
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
    const int use = pack_frame_forces(c, c->real, c->d->fext);
    const double *tau = c->real + D.vr_tau;
    double last_h = c->last_h;
    if (D.nc > 0) {
        gather_closure_inputs(c);
        const soa_step_options o = {c->method, c->real[D.vr_max_step], c->real[D.vr_rtol],
                                    c->real[D.vr_atol], 1};
        soa_closure_inputs in = {c->m, c->d, tau, use, c->active, c->u, c->real[D.vr_stab],
                                 c->real[D.vr_stab + 1], c->anchors, c->t, c->forces,
                                 c->residuals};
        st = soa_closure_step(c->m, c->d, &o, &in, c->was_active, c->qs, c->qds, c->t, h, &last_h,
                              c->qdds);
    } else {
        st = soa_check_inputs(c->m, c->qs, c->qds, tau);
        if (st.kind != SOA_OK) return st;
        soa_tree_inputs in = {c->m, c->d, tau, use, NULL, NULL};
        if (c->factored) {
            in.q_factored = c->real + D.vr_q;
            in.qd_factored = c->real + D.vr_qd;
        }
        c->factored = 0;
        const soa_accel acc = {soa_tree_accel, &in};
        if (c->method == SOA_DOP853) {
            c->d->dop_h[0] = last_h;
            st = soa_dop853_with(c->m, c->d, acc, c->qs, c->qds, c->t, h, c->real[D.vr_rtol],
                                 c->real[D.vr_atol], HUGE_VAL, c->qdds);
            last_h = c->d->dop_h[0];
        } else {
            const int nsub = soa_substeps(h, c->real[D.vr_max_step]);
            if (nsub < 1) {
                st.kind = SOA_BAD_ARG;
                return st;
            }
            st = (c->method == SOA_EULER ? soa_euler_with : soa_rk4_with)(
                c->m, c->d, acc, c->qs, c->qds, 0.0, h / nsub, nsub, c->qdds);
        }
        c->factored = st.kind == SOA_OK;      /* the last evaluation: the tree's at the new state */
    }
    if (st.kind != SOA_OK) return st;
    if (c->method == SOA_DOP853) c->last_h = last_h;
    memcpy(c->real + D.vr_q, c->qs, sizeof(double) * D.nq);
    memcpy(c->real + D.vr_qd, c->qds, sizeof(double) * D.nv);
    memcpy(c->real + D.vr_qdd, c->qdds, sizeof(double) * D.nv);
    put_constraint_outputs(c);
    c->stale = 0;
    c->energy_valid = c->poses_valid = 0;
    return st;
}

/* The on-demand outputs: energy (core/energy.c) and the frame poses. */
static soa_status update_energy(Instance *c)
{
    c->factored = 0;                          /* (the kinematics sweep reuses the data) */
    double T, U;
    const soa_status st = soa_energy(c->m, c->d, c->real + D.vr_q, c->real + D.vr_qd, &T, &U);
    if (st.kind == SOA_OK) {
        c->real[D.vr_energy] = T + U;
        c->energy_valid = 1;
    }
    return st;
}

static soa_status update_poses(Instance *c)
{
    c->factored = 0;
    soa_status st = soa_check_configuration(c->m, c->real + D.vr_q);
    if (st.kind != SOA_OK) return st;
    soa_outward_placements(c->m, c->d, c->real + D.vr_q);
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
static int refresh(Instance *c, int feedthrough, int energy, int poses, const char *fn)
{
    char msg[MSG];
    if (!c->built || (c->params_dirty && c->mode != STEPPING)) {
        if (!build(c, msg, sizeof msg)) {
            logf_(c, fmi2Error, "%s: %s", fn, msg);
            return 0;
        }
    } else if (c->stale && feedthrough) {
        soa_status st = update_outputs(c);
        if (st.kind != SOA_OK) {
            status_message(c, st, msg, sizeof msg);
            logf_(c, fmi2Error, "%s: %s", fn, msg);
            return 0;
        }
    }
    soa_status st = {SOA_OK, 0};
    if (energy && !c->energy_valid) st = update_energy(c);
    if (st.kind == SOA_OK && poses && !c->poses_valid) st = update_poses(c);
    if (st.kind != SOA_OK) {
        status_message(c, st, msg, sizeof msg);
        logf_(c, fmi2Error, "%s: %s", fn, msg);
        return 0;
    }
    return 1;
}

/* ------------------------------------------------------------------ the FMU state (bytes) */
/* Layout, little-endian: "SOAFMUST" | u32 version | 64 bytes table digest | u32 nreal, nboolean,
 * nvars, nc | the STATE_SCALARS (i32 / f64) | f64 real[nreal] | u8 boolean[nboolean] |
 * u8 pending[nvars] | u8 problem[MSG] | f64 anchors[16 nc] | u8 was_active[nc] |
 * u64 FNV-1a checksum of everything before it. */
#define STATE_MAGIC "SOAFMUST"
#define STATE_VERSION 1u

static size_t scalar_bytes(void)
{
    size_t n = 0;
#define SIZE_SCALAR(type, name, k) n += (k) * (sizeof(type) == 8 ? 8 : 4);
    STATE_SCALARS(SIZE_SCALAR)
    return n;
}

static size_t state_bytes(void)
{
    return 8 + 4 + 64 + 16 + scalar_bytes() + 8 * (size_t)D.nreal + (size_t)D.nboolean
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

static void save_state(const Instance *c, unsigned char *buf)
{
    unsigned char *p = buf;
    memcpy(p, STATE_MAGIC, 8);
    p += 8;
    put_u32(&p, STATE_VERSION);
    memset(p, 0, 64);
    memcpy(p, D.digest, strlen(D.digest) < 64 ? strlen(D.digest) : 64);
    p += 64;
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

/* "" when buf (n bytes) is a state of this FMU, else why not. */
static const char *state_problem(const unsigned char *buf, size_t n)
{
    const size_t header = 8 + 4 + 64 + 16;
    if (n < header || memcmp(buf, STATE_MAGIC, 8) != 0) return "not a soa_fmu FMU state";
    const unsigned char *p = buf + 8;
    if (get_u32(&p) != STATE_VERSION) return "another state format version";
    char digest[65] = {0};
    memcpy(digest, p, 64);
    if (strncmp(digest, D.digest, 64) != 0)
        return "it belongs to a different FMU (other model or variable table)";
    p += 64;
    if (get_u32(&p) != (uint32_t)D.nreal || get_u32(&p) != (uint32_t)D.nboolean
        || get_u32(&p) != (uint32_t)D.nvars || get_u32(&p) != (uint32_t)D.nc)
        return "its variable vectors have the wrong sizes";
    if (n != state_bytes()) return "it is truncated or padded";
    const unsigned char *end = buf + n - 8;
    if (get_u64(&end) != fnv1a(buf, n - 8)) return "it is corrupted (checksum mismatch)";
    p += scalar_bytes();
    for (int i = 0; i < D.nvars; i++) {   /* pending codes are in range */
        const unsigned char r = p[8 * (size_t)D.nreal + (size_t)D.nboolean + (size_t)i];
        if (r > REJ_METHOD) return "it is corrupted (pending code)";
    }
    return "";
}

static void load_state(Instance *c, const unsigned char *buf)
{
    c->factored = 0;
    const unsigned char *p = buf + 8 + 4 + 64 + 16;
#define GET_SCALAR(type, name, k) c->name = get_##type(&p);
    STATE_SCALARS(GET_SCALAR)
    for (int i = 0; i < D.nreal; i++) c->real[i] = get_f64(&p);
    for (int i = 0; i < D.nboolean; i++) c->boolean[i] = *p++ ? fmi2True : fmi2False;
    memcpy(c->pending, p, (size_t)D.nvars);
    p += D.nvars;
    memcpy(c->problem, p, MSG);
    c->problem[MSG - 1] = '\0';
    p += MSG;
    for (int i = 0; i < 16 * D.nc; i++) c->anchors[i] = get_f64(&p);
    for (int j = 0; j < D.nc; j++) c->was_active[j] = *p++ ? 1 : 0;
    if (c->mode < INSTANTIATED || c->mode > TERMINATED) c->mode = TERMINATED;
    if (c->method < 0 || c->method >= SOA_NMETHODS) c->method = D.method;
    if (!apply_parameters(c, NULL, 0)) c->built = 0;      /* the state's physical parameters */
    apply_gravity(c);
    c->energy_valid = c->poses_valid = 0;
}

/* ------------------------------------------------------------------ instance life cycle */
static void set_defaults(Instance *c)
{
    c->factored = 0;
    for (int vr = 0; vr < D.nreal; vr++) c->real[vr] = D.vars[vr].start;
    for (int i = 0; i < D.nboolean; i++) c->boolean[i] = D.vars[D.nreal + i].start != 0.0;
    memset(c->pending, 0, (size_t)D.nvars);
    c->problem[0] = '\0';
    c->mode = INSTANTIATED;
    c->method = D.method;
    c->built = 0;
    c->params_dirty = 1;
    c->stale = 1;
    c->t = c->start_time = c->last_h = 0.0;
    c->energy_valid = c->poses_valid = 0;
    reset_closures(c);
}

static void free_instance(Instance *c)
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
    free(c);
}

/* The soa_model of the description: its buffers copied by the tables of soa.h, then checked. */
static soa_model *make_model(void)
{
    const soa_sizes sizes = {D.nb, D.nq, D.nv, D.nc};
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

static Instance *instance_of(fmi2Component comp, const char *fn)
{
    (void)fn;
    return (Instance *)comp;
}

const char *fmi2GetTypesPlatform(void) { return fmi2TypesPlatform; }
const char *fmi2GetVersion(void) { return fmi2Version; }

fmi2Status fmi2SetDebugLogging(fmi2Component comp, fmi2Boolean loggingOn, size_t nCategories,
                               const fmi2String categories[])
{
    Instance *c = instance_of(comp, "fmi2SetDebugLogging");
    if (!c) return fmi2Error;
    (void)nCategories;
    (void)categories;
    c->logging_on = loggingOn ? 1 : 0;
    return fmi2OK;
}

fmi2Component fmi2Instantiate(fmi2String instanceName, fmi2Type fmuType, fmi2String fmuGUID,
                              fmi2String fmuResourceLocation,
                              const fmi2CallbackFunctions *functions, fmi2Boolean visible,
                              fmi2Boolean loggingOn)
{
    (void)fmuResourceLocation;
    (void)visible;
    Instance tmp = {0};
    if (functions) {
        tmp.logger = functions->logger;
        tmp.env = functions->componentEnvironment;
    }
    tmp.name = (char *)(instanceName ? instanceName : "soa_fmu");
    if (fmuType != fmi2CoSimulation) {
        logf_(&tmp, fmi2Error, "fmi2Instantiate: %s is a Co-Simulation FMU (fmuType %d was "
              "requested)", D.identifier, (int)fmuType);
        return NULL;
    }
    if (!fmuGUID || strcmp(fmuGUID, D.guid) != 0) {
        logf_(&tmp, fmi2Error, "fmi2Instantiate: GUID %s does not match this FMU's %s (an FMU "
              "extracted from another build?)", fmuGUID ? fmuGUID : "(null)", D.guid);
        return NULL;
    }
    Instance *c = calloc(1, sizeof *c);
    if (!c) {
        logf_(&tmp, fmi2Fatal, "fmi2Instantiate: out of memory");
        return NULL;
    }
    c->logger = tmp.logger;
    c->env = tmp.env;
    c->logging_on = loggingOn ? 1 : 0;
    const size_t nlen = strlen(tmp.name) + 1;
    c->name = malloc(nlen);
    if (c->name) memcpy(c->name, tmp.name, nlen);
    c->m = make_model();
    c->d = c->m ? soa_data_new(c->m) : NULL;
    c->real = calloc((size_t)D.nreal + 1, sizeof(double));
    c->boolean = calloc((size_t)D.nboolean + 1, sizeof(fmi2Boolean));
    c->pending = calloc((size_t)D.nvars + 1, 1);
    c->qs = calloc((size_t)D.nq + 1, sizeof(double));
    c->qds = calloc((size_t)D.nv + 1, sizeof(double));
    c->qdds = calloc((size_t)D.nv + 1, sizeof(double));
    c->dtau = calloc((size_t)D.nv + 1, sizeof(double));
    c->dqdd = calloc((size_t)D.nv + 1, sizeof(double));
    const size_t nc = (size_t)D.nc + 1;
    c->active = calloc(nc, sizeof(int));
    c->was_active = calloc(nc, sizeof(int));
    c->u = calloc(6 * nc, sizeof(double));
    c->anchors = calloc(16 * nc, sizeof(double));
    c->forces = calloc(6 * nc, sizeof(double));
    c->residuals = calloc(nc, sizeof(double));
    c->zero_v = calloc((size_t)D.nv + 1, sizeof(double));
    c->du = calloc(6 * nc, sizeof(double));
    c->dforces = calloc(6 * nc, sizeof(double));
    c->dres = calloc(nc, sizeof(double));
    if (!c->name || !c->m || !c->d || !c->real || !c->boolean || !c->pending || !c->qs || !c->qds
        || !c->qdds || !c->dtau || !c->dqdd || !c->active || !c->was_active || !c->u
        || !c->anchors || !c->forces || !c->residuals || !c->zero_v || !c->du || !c->dforces
        || !c->dres) {
        logf_(&tmp, fmi2Fatal, "fmi2Instantiate: out of memory or inconsistent model constants");
        free_instance(c);
        return NULL;
    }
    c->state_size = state_bytes();
    set_defaults(c);
    return c;
}

void fmi2FreeInstance(fmi2Component comp)
{
    free_instance((Instance *)comp);
}

fmi2Status fmi2SetupExperiment(fmi2Component comp, fmi2Boolean toleranceDefined,
                               fmi2Real tolerance, fmi2Real startTime, fmi2Boolean stopTimeDefined,
                               fmi2Real stopTime)
{
    Instance *c = instance_of(comp, "fmi2SetupExperiment");
    if (!c) return fmi2Error;
    (void)toleranceDefined;
    (void)tolerance;
    (void)stopTimeDefined;
    (void)stopTime;
    if (c->mode != INSTANTIATED) {
        logf_(c, fmi2Error, "fmi2SetupExperiment called in %s mode (allowed only after "
              "fmi2Instantiate)", MODE_NAMES[c->mode]);
        return fmi2Error;
    }
    if (!isfinite(startTime)) {
        logf_(c, fmi2Error, "fmi2SetupExperiment: start time %g is not finite", startTime);
        return fmi2Error;
    }
    c->start_time = startTime;
    c->t = startTime;
    return fmi2OK;
}

fmi2Status fmi2EnterInitializationMode(fmi2Component comp)
{
    Instance *c = instance_of(comp, "fmi2EnterInitializationMode");
    if (!c) return fmi2Error;
    if (c->mode != INSTANTIATED) {
        logf_(c, fmi2Error, "fmi2EnterInitializationMode called in %s mode", MODE_NAMES[c->mode]);
        return fmi2Error;
    }
    c->mode = INITIALIZATION;
    return fmi2OK;
}

fmi2Status fmi2ExitInitializationMode(fmi2Component comp)
{
    Instance *c = instance_of(comp, "fmi2ExitInitializationMode");
    if (!c) return fmi2Error;
    if (c->mode != INITIALIZATION) {
        logf_(c, fmi2Error, "fmi2ExitInitializationMode called in %s mode", MODE_NAMES[c->mode]);
        return fmi2Error;
    }
    c->mode = STEPPING;
    if (!c->built || c->params_dirty) {
        char msg[MSG - 64];
        if (!build(c, msg, sizeof msg)) {
            c->built = 0;
            snprintf(c->problem, sizeof c->problem, "initialization failed: %s", msg);
            logf_(c, fmi2Error, "fmi2ExitInitializationMode: %s", c->problem);
            return fmi2Error;
        }
    }
    c->problem[0] = '\0';
    return fmi2OK;
}

fmi2Status fmi2Terminate(fmi2Component comp)
{
    Instance *c = instance_of(comp, "fmi2Terminate");
    if (!c) return fmi2Error;
    c->mode = TERMINATED;
    return fmi2OK;
}

fmi2Status fmi2Reset(fmi2Component comp)
{
    Instance *c = instance_of(comp, "fmi2Reset");
    if (!c) return fmi2Error;
    set_defaults(c);
    return fmi2OK;
}

/* ------------------------------------------------------------------ value references */
static int check_refs(Instance *c, const fmi2ValueReference vr[], size_t n, int lo, int hi,
                      const char *fn, int mark)
{
    if (n > 0 && !vr) {
        logf_(c, fmi2Error, "%s: NULL value reference array for %zu values", fn, n);
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        if ((long long)vr[i] < lo || (long long)vr[i] >= hi) {
            char text[96];
            snprintf(text, sizeof text, "%s was called with invalid value reference %u", fn,
                     (unsigned)vr[i]);
            logf_(c, fmi2Error, "%s: value reference %u is not a %s variable of this FMU", fn,
                  (unsigned)vr[i], fn + 7);
            if (mark) snprintf(c->problem, sizeof c->problem, "%s", text);
            return 0;
        }
    return 1;
}

/* ------------------------------------------------------------------ getters */
fmi2Status fmi2GetReal(fmi2Component comp, const fmi2ValueReference vr[], size_t nvr,
                       fmi2Real value[])
{
    Instance *c = instance_of(comp, "fmi2GetReal");
    if (!c) return fmi2Error;
    if (nvr > 0 && !value) return fmi2Error;
    if (!check_refs(c, vr, nvr, 0, D.nreal, "fmi2GetReal", 0)) {
        for (size_t i = 0; i < nvr; i++) value[i] = NAN;
        return fmi2Error;
    }
    int feed = 0, energy = 0, poses = 0, outputs = 0;
    for (size_t i = 0; i < nvr; i++) {
        const int r = (int)vr[i];
        if (D.vars[r].causality != SOA_FMU_OUTPUT) continue;
        outputs = 1;
        if (r >= D.vr_qdd && r < D.vr_energy) feed = 1;
        else if (r == D.vr_energy) energy = 1;
        else if (r > D.vr_energy) poses = 1;
    }
    if (outputs && !refresh(c, feed, energy, poses, "fmi2GetReal")) {
        for (size_t i = 0; i < nvr; i++)
            value[i] = D.vars[vr[i]].causality == SOA_FMU_OUTPUT ? NAN : c->real[vr[i]];
        return fmi2Error;
    }
    for (size_t i = 0; i < nvr; i++) value[i] = c->real[vr[i]];
    return fmi2OK;
}

fmi2Status fmi2GetInteger(fmi2Component comp, const fmi2ValueReference vr[], size_t nvr,
                          fmi2Integer value[])
{
    Instance *c = instance_of(comp, "fmi2GetInteger");
    if (!c) return fmi2Error;
    for (size_t i = 0; i < nvr && value; i++) value[i] = 0;
    return check_refs(c, vr, nvr, 0, 0, "fmi2GetInteger", 0) ? fmi2OK : fmi2Error;
}

fmi2Status fmi2GetBoolean(fmi2Component comp, const fmi2ValueReference vr[], size_t nvr,
                          fmi2Boolean value[])
{
    Instance *c = instance_of(comp, "fmi2GetBoolean");
    if (!c) return fmi2Error;
    if (nvr > 0 && !value) return fmi2Error;
    if (!check_refs(c, vr, nvr, D.nreal, D.nreal + D.nboolean, "fmi2GetBoolean", 0)) {
        for (size_t i = 0; i < nvr; i++) value[i] = fmi2False;
        return fmi2Error;
    }
    for (size_t i = 0; i < nvr; i++) value[i] = c->boolean[vr[i] - D.nreal];
    return fmi2OK;
}

fmi2Status fmi2GetString(fmi2Component comp, const fmi2ValueReference vr[], size_t nvr,
                         fmi2String value[])
{
    Instance *c = instance_of(comp, "fmi2GetString");
    if (!c) return fmi2Error;
    if (nvr > 0 && !value) return fmi2Error;
    const int lo = D.nreal + D.nboolean;
    if (!check_refs(c, vr, nvr, lo, lo + D.nstring, "fmi2GetString", 0)) {
        for (size_t i = 0; i < nvr; i++) value[i] = "";
        return fmi2Error;
    }
    for (size_t i = 0; i < nvr; i++) value[i] = METHOD_NAMES[c->method];
    return fmi2OK;
}

/* ------------------------------------------------------------------ setters */
/* A rejected value is not applied.  A value the model cannot run with (NaN/Inf, a non-positive
 * tolerance, an unknown integrator) also makes every doStep refuse until it is corrected; a late
 * set of a fixed parameter or a set of an output leaves the instance usable with the value it has
 * (the setter's fmi2Error tells the master). */
static void reject(Instance *c, int vr, int why, const char *text)
{
    if (why == REJ_FIXED || why == REJ_OUTPUT) {
        logf_(c, fmi2Error, "%s; value rejected (not applied), the FMU keeps %s", text,
              why == REJ_FIXED ? "the value set before initialization" : "computing it");
        return;
    }
    c->pending[vr] = (unsigned char)why;
    logf_(c, fmi2Error, "%s; value rejected (not applied), doStep is refused until it is "
          "corrected", text);
}

/* Why x cannot be the value of Real vr now (0: it can), with the message in text. */
static int real_problem(const Instance *c, int vr, double x, char *text, size_t n)
{
    const soa_fmu_variable *v = &D.vars[vr];
    char nm[256];
    if (isnan(x)) {
        snprintf(text, n, "%s is NaN", named(vr, nm, sizeof nm));
        return REJ_NAN;
    }
    if (!isfinite(x)) {
        snprintf(text, n, "%s is infinite", named(vr, nm, sizeof nm));
        return REJ_INF;
    }
    if (v->causality == SOA_FMU_OUTPUT) {
        snprintf(text, n, "%s is an output and cannot be set", v->name);
        return REJ_OUTPUT;
    }
    if (v->causality == SOA_FMU_PARAMETER && v->fixed && (c->mode == STEPPING || c->mode == TERMINATED)) {
        snprintf(text, n, "%s is a fixed parameter; it can only be set before "
                 "fmi2ExitInitializationMode", named(vr, nm, sizeof nm));
        return REJ_FIXED;
    }
    if (v->positive && !(x > 0.0)) {
        snprintf(text, n, "%s must be > 0, got %.17g", v->name, x);
        return REJ_NONPOSITIVE;
    }
    return OK_VALUE;
}

fmi2Status fmi2SetReal(fmi2Component comp, const fmi2ValueReference vr[], size_t nvr,
                       const fmi2Real value[])
{
    Instance *c = instance_of(comp, "fmi2SetReal");
    if (!c) return fmi2Error;
    if (nvr > 0 && !value) return fmi2Error;
    if (!check_refs(c, vr, nvr, 0, D.nreal, "fmi2SetReal", 1)) return fmi2Error;
    /* every value is checked first: a call with a bad value applies nothing */
    fmi2Status status = fmi2OK;
    char text[MSG];
    for (size_t i = 0; i < nvr; i++) {
        const int why = real_problem(c, (int)vr[i], value[i], text, sizeof text);
        if (why) {
            reject(c, (int)vr[i], why, text);
            status = fmi2Error;
        }
    }
    if (status != fmi2OK) return status;
    int tunable = 0;
    for (size_t i = 0; i < nvr; i++) {
        const int r = (int)vr[i];
        c->real[r] = value[i];
        c->pending[r] = OK_VALUE;
        if (D.vars[r].causality == SOA_FMU_PARAMETER) {
            if (c->mode == STEPPING) tunable = 1;
            else c->params_dirty = 1;
        }
    }
    if (tunable) apply_gravity(c);        /* g; max_step, tolerances are read at each step */
    c->stale = 1;
    c->energy_valid = c->poses_valid = 0;
    return fmi2OK;
}

fmi2Status fmi2SetInteger(fmi2Component comp, const fmi2ValueReference vr[], size_t nvr,
                          const fmi2Integer value[])
{
    Instance *c = instance_of(comp, "fmi2SetInteger");
    if (!c) return fmi2Error;
    (void)value;
    return check_refs(c, vr, nvr, 0, 0, "fmi2SetInteger", 1) ? fmi2OK : fmi2Error;
}

fmi2Status fmi2SetBoolean(fmi2Component comp, const fmi2ValueReference vr[], size_t nvr,
                          const fmi2Boolean value[])
{
    Instance *c = instance_of(comp, "fmi2SetBoolean");
    if (!c) return fmi2Error;
    if (nvr > 0 && !value) return fmi2Error;
    if (!check_refs(c, vr, nvr, D.nreal, D.nreal + D.nboolean, "fmi2SetBoolean", 1))
        return fmi2Error;
    for (size_t i = 0; i < nvr; i++) {
        c->boolean[vr[i] - D.nreal] = value[i] ? fmi2True : fmi2False;
        c->pending[vr[i]] = OK_VALUE;
    }
    c->stale = 1;
    return fmi2OK;
}

fmi2Status fmi2SetString(fmi2Component comp, const fmi2ValueReference vr[], size_t nvr,
                         const fmi2String value[])
{
    Instance *c = instance_of(comp, "fmi2SetString");
    if (!c) return fmi2Error;
    if (nvr > 0 && !value) return fmi2Error;
    const int lo = D.nreal + D.nboolean;
    if (!check_refs(c, vr, nvr, lo, lo + D.nstring, "fmi2SetString", 1)) return fmi2Error;
    fmi2Status status = fmi2OK;
    for (size_t i = 0; i < nvr; i++) {
        int method = -1;
        for (int k = 0; k < SOA_NMETHODS && value[i]; k++)
            if (strcmp(value[i], METHOD_NAMES[k]) == 0) method = k;
        if (method < 0) {
            char text[MSG];
            snprintf(text, sizeof text, "integrator '%.200s' is not one of rk4, euler, dop853",
                     value[i] ? value[i] : "(null)");
            reject(c, (int)vr[i], REJ_METHOD, text);
            status = fmi2Error;
            continue;
        }
        c->method = method;
        c->pending[vr[i]] = OK_VALUE;
    }
    return status;
}

/* ------------------------------------------------------------------ stepping */
/* "" when steps may run, else the reasons they are refused. */
static int pending_reasons(const Instance *c, char *out, size_t n)
{
    size_t used = 0;
    int any = 0;
    out[0] = '\0';
    if (c->problem[0]) {
        used += (size_t)snprintf(out, n, "%s", c->problem);
        any = 1;
    }
    for (int vr = 0; vr < D.nvars && used + 1 < n; vr++) {
        if (!c->pending[vr]) continue;
        char nm[256];
        static const char *const why[] = {"", "was set to NaN", "was set to an infinite value",
                                          "is an output", "is a fixed parameter",
                                          "must be > 0", "is not a known integrator"};
        used += (size_t)snprintf(out + used, n - used, "%s%s %s (value rejected)", any ? "; " : "",
                                 named(vr, nm, sizeof nm), why[c->pending[vr]]);
        any = 1;
        if (used >= n) break;
    }
    return any;
}

fmi2Status fmi2DoStep(fmi2Component comp, fmi2Real currentCommunicationPoint,
                      fmi2Real communicationStepSize, fmi2Boolean noSetFMUStatePriorToCurrentPoint)
{
    Instance *c = instance_of(comp, "fmi2DoStep");
    if (!c) return fmi2Error;
    (void)noSetFMUStatePriorToCurrentPoint;
    const double t = currentCommunicationPoint, h = communicationStepSize;
    if (c->mode != STEPPING) {
        logf_(c, fmi2Error, "fmi2DoStep called in %s mode (allowed only after "
              "fmi2ExitInitializationMode and before fmi2Terminate)", MODE_NAMES[c->mode]);
        return fmi2Error;
    }
    char msg[MSG];
    if (pending_reasons(c, msg, sizeof msg) || !c->built) {
        logf_(c, fmi2Discard, "step refused: %s", msg[0] ? msg : "the instance is not initialized");
        return fmi2Discard;
    }
    if (!(isfinite(h) && h > 0.0) || !isfinite(t)) {
        logf_(c, fmi2Discard, "step from t = %.17g by h = %.17g refused: the step size must be "
              "finite and > 0", t, h);
        return fmi2Discard;
    }
    if (fabs(t - c->t) > 1e-9 * (fabs(t) > 1.0 ? fabs(t) : 1.0)) {
        logf_(c, fmi2Warning, "communication point t = %.17g differs from the FMU's time %.17g; "
              "continuing from the FMU's state at t = %.17g", t, c->t, t);
        c->t = t;
    }
    const soa_status st = integrate(c, h);
    if (st.kind != SOA_OK) {
        status_message(c, st, msg, sizeof msg);
        logf_(c, fmi2Discard, "step from t = %.17g by h = %.17g failed (state unchanged): %s", t,
              h, msg);
        return fmi2Discard;
    }
    c->t += h;
    return fmi2OK;
}

fmi2Status fmi2CancelStep(fmi2Component comp)
{
    Instance *c = instance_of(comp, "fmi2CancelStep");
    if (!c) return fmi2Error;
    logf_(c, fmi2Error, "fmi2CancelStep: steps are synchronous (canRunAsynchronuously=false)");
    return fmi2Error;
}

fmi2Status fmi2SetRealInputDerivatives(fmi2Component comp, const fmi2ValueReference vr[],
                                       size_t nvr, const fmi2Integer order[],
                                       const fmi2Real value[])
{
    Instance *c = instance_of(comp, "fmi2SetRealInputDerivatives");
    (void)vr; (void)nvr; (void)order; (void)value;
    if (c) logf_(c, fmi2Error, "fmi2SetRealInputDerivatives: inputs are held constant over a step "
                 "(canInterpolateInputs=false)");
    return fmi2Error;
}

fmi2Status fmi2GetRealOutputDerivatives(fmi2Component comp, const fmi2ValueReference vr[],
                                        size_t nvr, const fmi2Integer order[], fmi2Real value[])
{
    Instance *c = instance_of(comp, "fmi2GetRealOutputDerivatives");
    (void)vr; (void)nvr; (void)order; (void)value;
    if (c) logf_(c, fmi2Error, "fmi2GetRealOutputDerivatives: not provided "
                 "(maxOutputDerivativeOrder=0)");
    return fmi2Error;
}

static fmi2Status no_status(fmi2Component comp, const char *fn)
{
    Instance *c = instance_of(comp, fn);
    if (c) logf_(c, fmi2Discard, "%s: steps are synchronous; there is no pending status", fn);
    return fmi2Discard;
}

fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind s, fmi2Status *value)
{
    (void)s; (void)value;
    return no_status(c, "fmi2GetStatus");
}
fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind s, fmi2Real *value)
{
    Instance *inst = instance_of(c, "fmi2GetRealStatus");
    if (inst && s == fmi2LastSuccessfulTime && value) {
        *value = inst->t;
        return fmi2OK;
    }
    return no_status(c, "fmi2GetRealStatus");
}
fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind s, fmi2Integer *value)
{
    (void)s; (void)value;
    return no_status(c, "fmi2GetIntegerStatus");
}
fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind s, fmi2Boolean *value)
{
    (void)s; (void)value;
    return no_status(c, "fmi2GetBooleanStatus");
}
fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind s, fmi2String *value)
{
    (void)s; (void)value;
    return no_status(c, "fmi2GetStringStatus");
}

/* ------------------------------------------------------------------ FMU state */
typedef struct {
    size_t size;
    unsigned char bytes[];
} StateBlob;

static StateBlob *new_blob(size_t n)
{
    StateBlob *b = malloc(sizeof(StateBlob) + n);
    if (b) b->size = n;
    return b;
}

fmi2Status fmi2GetFMUstate(fmi2Component comp, fmi2FMUstate *state)
{
    Instance *c = instance_of(comp, "fmi2GetFMUstate");
    if (!c || !state) return fmi2Error;
    StateBlob *b = *state ? (StateBlob *)*state : NULL;
    if (b && b->size != c->state_size) {
        logf_(c, fmi2Error, "fmi2GetFMUstate: the state given to overwrite is not one of this FMU");
        return fmi2Error;
    }
    if (!b && !(b = new_blob(c->state_size))) {
        logf_(c, fmi2Error, "fmi2GetFMUstate: out of memory");
        return fmi2Error;
    }
    save_state(c, b->bytes);
    *state = b;
    return fmi2OK;
}

fmi2Status fmi2SetFMUstate(fmi2Component comp, fmi2FMUstate state)
{
    Instance *c = instance_of(comp, "fmi2SetFMUstate");
    if (!c) return fmi2Error;
    const StateBlob *b = state;
    const char *problem = b ? state_problem(b->bytes, b->size) : "a NULL state";
    if (problem[0]) {
        snprintf(c->problem, sizeof c->problem, "fmi2SetFMUstate was given an unusable state (%s)",
                 problem);
        logf_(c, fmi2Error, "%s; the instance is unchanged", c->problem);
        return fmi2Error;
    }
    load_state(c, b->bytes);
    return fmi2OK;
}

fmi2Status fmi2FreeFMUstate(fmi2Component comp, fmi2FMUstate *state)
{
    (void)comp;
    if (state) {
        free(*state);
        *state = NULL;
    }
    return fmi2OK;
}

fmi2Status fmi2SerializedFMUstateSize(fmi2Component comp, fmi2FMUstate state, size_t *size)
{
    Instance *c = instance_of(comp, "fmi2SerializedFMUstateSize");
    if (!c || !state || !size) return fmi2Error;
    *size = ((const StateBlob *)state)->size;
    return fmi2OK;
}

fmi2Status fmi2SerializeFMUstate(fmi2Component comp, fmi2FMUstate state, fmi2Byte bytes[],
                                 size_t size)
{
    Instance *c = instance_of(comp, "fmi2SerializeFMUstate");
    if (!c || !state || !bytes) return fmi2Error;
    const StateBlob *b = state;
    if (size < b->size) {
        logf_(c, fmi2Error, "fmi2SerializeFMUstate: buffer of %zu bytes, the state needs %zu",
              size, b->size);
        return fmi2Error;
    }
    memcpy(bytes, b->bytes, b->size);
    return fmi2OK;
}

/* A foreign, truncated or corrupted buffer is refused here (fmi2Error) or, when it is the right
 * size but another FMU's, by fmi2SetFMUstate ("different FMU"). */
fmi2Status fmi2DeSerializeFMUstate(fmi2Component comp, const fmi2Byte serializedState[],
                                   size_t size, fmi2FMUstate *state)
{
    Instance *c = instance_of(comp, "fmi2DeSerializeFMUstate");
    if (!c || !state || (size && !serializedState)) return fmi2Error;
    StateBlob *b = new_blob(size);
    if (!b) {
        logf_(c, fmi2Error, "fmi2DeSerializeFMUstate: out of memory");
        return fmi2Error;
    }
    if (size) memcpy(b->bytes, serializedState, size);
    *state = b;
    return fmi2OK;
}

/* ------------------------------------------------------------------ directional derivatives */
/* d(qdd, constraint forces)/d(tau, f_ext, u) . v at the current state.  At a fixed state the
 * accelerations and constraint forces are affine in the inputs, so the derivative is their linear
 * part: the tree's input map M^-1 (dT + J* df) (soa_forward_dynamics_input_map), or with active
 * constraints the constrained forward dynamics of the seed direction alone — beta = 0 (no Coriolis
 * or relative-velocity terms), no gravity, no position-error term (Baumgarte beta = 0; the alpha
 * term carries dU~) — exact, not a difference quotient.  Other outputs (q, qd, residuals, energy,
 * poses) do not depend on the inputs at the same instant. */
fmi2Status fmi2GetDirectionalDerivative(fmi2Component comp, const fmi2ValueReference vUnknown_ref[],
                                        size_t nUnknown, const fmi2ValueReference vKnown_ref[],
                                        size_t nKnown, const fmi2Real dvKnown[],
                                        fmi2Real dvUnknown[])
{
    Instance *c = instance_of(comp, "fmi2GetDirectionalDerivative");
    if (!c) return fmi2Error;
    if ((nUnknown && !dvUnknown) || (nKnown && !dvKnown)) return fmi2Error;
    if (!check_refs(c, vUnknown_ref, nUnknown, 0, D.nreal, "fmi2GetDirectionalDerivative", 0)
        || !check_refs(c, vKnown_ref, nKnown, 0, D.nreal, "fmi2GetDirectionalDerivative", 0))
        return fmi2Error;
    for (size_t i = 0; i < nKnown; i++)
        if (D.vars[vKnown_ref[i]].causality != SOA_FMU_INPUT) {
            logf_(c, fmi2Error, "fmi2GetDirectionalDerivative: %s is not an input (derivatives "
                  "are provided with respect to tau, f_ext and u)", D.vars[vKnown_ref[i]].name);
            return fmi2Error;
        }
    if (!refresh(c, 0, 0, 0, "fmi2GetDirectionalDerivative")) return fmi2Error;
    c->factored = 0;                          /* (the kernels below reuse the data) */
    /* the seed direction: dtau, the frame forces moved to their bodies in d->fext, du */
    memset(c->dtau, 0, sizeof(double) * D.nv);
    memset(c->du, 0, sizeof(double) * 6 * D.nc);
    for (int k = 0; k < 6 * D.nb; k++) c->d->fext[k] = 0.0;
    int use = 0;
    for (size_t i = 0; i < nKnown; i++) {
        const int r = (int)vKnown_ref[i];
        if (r >= D.vr_tau && r < D.vr_tau + D.nv) {
            c->dtau[r - D.vr_tau] += dvKnown[i];
            continue;
        }
        for (int j = 0; j < D.nc; j++)
            if (r >= D.constraints[j].vr_u && r < D.constraints[j].vr_u + c->m->cn_size[j])
                c->du[6 * j + r - D.constraints[j].vr_u] += dvKnown[i];
        for (int f = 0; f < D.nframes; f++) {
            const soa_fmu_frame *fr = &D.frames[f];
            if (r < fr->vr_fext || r >= fr->vr_fext + 6) continue;
            const int j = r - fr->vr_fext;
            double e[6] = {0, 0, 0, 0, 0, 0}, F[3] = {0, 0, 0}, pxF[3];
            e[j] = dvKnown[i];
            double *fk = c->d->fext + 6 * fr->body;
            for (int a = 0; a < 3; a++) {
                fk[a] += fr->R[3 * a] * e[0] + fr->R[3 * a + 1] * e[1] + fr->R[3 * a + 2] * e[2];
                F[a] = fr->R[3 * a] * e[3] + fr->R[3 * a + 1] * e[4] + fr->R[3 * a + 2] * e[5];
            }
            cross3(fr->p, F, pxF);
            for (int a = 0; a < 3; a++) {
                fk[a] += pxF[a];
                fk[3 + a] += F[a];
            }
            use = 1;
        }
    }
    soa_status st;
    const int constrained = D.nc > 0 && gather_closure_inputs(c);
    if (constrained) {
        double a0[6];
        memcpy(a0, c->m->a0, sizeof a0);
        memset(c->m->a0, 0, sizeof a0);                /* no gravity in the linear part */
        st = soa_constrained_fd(c->m, c->d, c->real + D.vr_q, c->zero_v, c->dtau, use, c->active,
                                c->du, NULL, c->anchors, c->real[D.vr_stab], 0.0, c->dqdd,
                                c->dforces, c->dres);
        memcpy(c->m->a0, a0, sizeof a0);
    } else {
        st = soa_forward_dynamics_input_map(c->m, c->d, c->real + D.vr_q, c->dtau, use, c->dqdd);
    }
    if (st.kind != SOA_OK) {
        char msg[MSG];
        status_message(c, st, msg, sizeof msg);
        logf_(c, fmi2Error, "fmi2GetDirectionalDerivative: %s", msg);
        return fmi2Error;
    }
    for (size_t i = 0; i < nUnknown; i++) {
        const int r = (int)vUnknown_ref[i];
        double v = 0.0;
        if (r >= D.vr_qdd && r < D.vr_qdd + D.nv) v = c->dqdd[r - D.vr_qdd];
        for (int j = 0; constrained && j < D.nc; j++)
            if (c->active[j] && r >= D.constraints[j].vr_f && r < D.constraints[j].vr_f + c->m->cn_size[j])
                v = c->dforces[6 * j + r - D.constraints[j].vr_f];
        dvUnknown[i] = v;
    }
    return fmi2OK;
}
