/* The native FMU instance's life cycle (instance.h): instantiation (a soa_model built from the
 * generated description fmu_model.c, a soa_data, every buffer allocated, the variables at their
 * start values), the defaults a reset returns to, the parameters into the model (the physical
 * ones when the state is built or restored; the tunable gravity, contact constants and joint stops
 * at once), the build of the simulation state from them, leaving initialization mode, and the
 * release of it all.  The variable access is in fmu_values.c, the step and the outputs in
 * fmu_step.c, the FMU state in fmu_state.c, the messages in fmu_log.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "instance.h"

#define QUAT_NORM_TOL 1e-3     /* q0 quaternions are normalized when | |q| - 1 | is below this */

const char *const METHOD_NAMES[SOA_NMETHODS] = {"rk4", "euler", "dop853", "implicit", "ros2",
                                                "ros34pw2", "auto"};
const char *const MODE_NAMES[] = {"instantiated", "initialization", "step", "terminated", "event",
                                  "continuous-time"};

int fmu_running(const Instance *c)
{
    return c->mode == STEPPING || c->mode == EVENT || c->mode == CONTINUOUS;
}

/* ------------------------------------------------------------------ the tunable parameters */
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

/* The integrator auto resolves to (soa_auto_method: ros34pw2 for a model with stiff terms, else rk4):
 * decided when the simulation state is built and never inside a run; logged. */
static void resolve_method(Instance *c)
{
    c->method_used = c->method;
    if (c->method != SOA_AUTO) return;
    c->method_used = soa_auto_method(c->m);
    fmu_log(c, FMU_OK, "integrator auto: %s (%s; docs/joints.md)", METHOD_NAMES[c->method_used],
            soa_is_rosenbrock(c->method_used) ? "the model has joint dissipation, stops or contact"
                                                         : "no stiff terms");
    c->real[D.vr_integrator_used] = c->method_used;
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

/* ------------------------------------------------------------------ the simulation state */
/* The closure state of a new simulation: every target the identity (the frames coincide), the
 * switches of the "last step" the model's defaults (soa_fmu.Simulator.__init__). */
static void reset_closures(Instance *c)
{
    for (int j = 0; j < D.nc; j++) {
        for (int i = 0; i < 16; i++) c->anchors[16 * j + i] = (i % 5 == 0) ? 1.0 : 0.0;
        c->was_active[j] = D.vars[D.constraints[j].vr_active].start != 0.0;
    }
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
    const soa_status st = fmu_update_outputs(c);
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
    c->state_size = fmu_state_bytes();
    c->model_digest = fmu_model_digest();
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
