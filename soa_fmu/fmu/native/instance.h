/* The native FMU's instance, shared by its FMI interfaces: FMI 2.0 Co-Simulation (fmi2_cs.c) and
 * Model Exchange (fmi2_me.c), FMI 3.0 (fmi3.c).  Nothing here depends on an FMI header: statuses
 * are the FMI status codes both versions share (OK, Warning, Discard, Error, Fatal), value
 * references are those of the variable table (fmu.h), and each interface gives the instance its
 * logger through `emit`.
 *
 * One instance holds a soa_model built from the generated description (fmu_model.c), a soa_data,
 * and the values of every variable (reals by value reference, Booleans, the integrator string).
 * The semantics are the pythonfmu slave's (soa_fmu/fmu/slave.py) with the status discipline a C
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
 * state is one self-describing byte buffer (fmu_state.c), so getting and serializing a state
 * share one format.  The files, split by what changes together, form layers that call only
 * downward (bottom first; the order is defined once, in tests/test_fmu_layers.py LAYERS, which
 * fails on a call upward or sideways):
 *
 *   instance.h        the instance, its modes, its cache flags (the inline functions below)
 *   fmu_log.c         the log categories, fmu_log, variable and mode names, the core's messages
 *   fmu_contact.c     contact: the tunable constants into the model, the outputs, the
 *                     penetration depths (the event indicators of contact)
 *   fmu_values.c      variable access: value references, the setters with the status
 *                     discipline, the reasons steps are refused while a rejected value is
 *                     pending, the parameters (physical and tunable) into the model
 *   fmu_state.c       the FMU state as bytes and the model digest that binds it to its model
 *   controller.c      the controller role (fmu.h): the computed torque where a plant simulates
 *   fmu_step.c        the simulation: the state built from the parameters, the inputs in the
 *                     engine's layout, the dynamics at a state (qdd; x-dot at the normalized
 *                     configuration for Model Exchange), the outputs and the Real getter that
 *                     brings them up to date, a step (Co-Simulation)
 *   model_exchange.c  x = (theta, beta): states, derivatives, events, completed integrator steps,
 *                     the event indicators, and the directional derivatives of every interface
 *   instance.c        life cycle: instantiation, defaults, leaving initialization, freeing
 *   fmi2_cs.c, fmi2_me.c, fmi3.c   the FMI entry points
 *
 * In FMI 2.0 every value reference names one scalar; in FMI 3.0 it names a whole array of the
 * table (soa_fmu_variable.n3 scalars, e.g. "tau" [nv]) and D.nvars names the independent
 * variable "time".  fmu_span() is the one place that difference lives. */
#ifndef SOA_FMU_INSTANCE_H
#define SOA_FMU_INSTANCE_H

#include <stddef.h>
#include <stdint.h>

#include "fmu.h"

#define D (soa_fmu_model)
#define MSG 1024

enum { FMU_OK, FMU_WARNING, FMU_DISCARD, FMU_ERROR, FMU_FATAL };   /* = fmi2Status, fmi3Status */
enum { FMU_CS = 1, FMU_ME = 2 };                     /* instance kinds (bits of D.interfaces) */

/* CS: INSTANTIATED -> INITIALIZATION -> STEPPING -> TERMINATED; ME: ... -> EVENT <-> CONTINUOUS
 * (FMI 3.0 CS with event mode uses EVENT too). */
typedef enum { INSTANTIATED, INITIALIZATION, STEPPING, TERMINATED, EVENT, CONTINUOUS } Mode;
extern const char *const MODE_NAMES[];
extern const char *const METHOD_NAMES[SOA_NMETHODS];

/* Why a variable's value was rejected (pending[vr]); the value itself was not applied. */
enum { OK_VALUE, REJ_NAN, REJ_INF, REJ_OUTPUT, REJ_FIXED, REJ_NONPOSITIVE, REJ_METHOD,
       REJ_TOO_SMALL, REJ_NEGATIVE, REJ_LAST = REJ_NEGATIVE };

/* The evolving state of an instance, declared once: what the FMU state saves and restores
 * (X(type, name, count)). */
#define STATE_SCALARS(X)                                                                          \
    X(int, mode, 1)          /* Mode */                                                           \
    X(int, method, 1)        /* the integrator (string variable "integrator") */                  \
    X(int, method_used, 1)   /* what it resolved to at initialization (auto: rk4 or rk4w) */      \
    X(int, built, 1)         /* the simulation state exists (from the parameters) */              \
    X(int, params_dirty, 1)  /* parameters changed before initialization ended: rebuild */        \
    X(int, stale, 1)         /* qdd not yet computed with the current inputs */                   \
    X(double, t, 1)          /* time of the state */                                              \
    X(double, start_time, 1) \
    X(double, last_h, 1)     /* dop853: last accepted internal step (0: none yet) */             \
    X(double, auto_step, 1)  /* auto: RK4's longest sub-step (soa_auto_max_step; HUGE_VAL: none) */ \
    /* ---- Model Exchange (model_exchange.c) ---- */                                             \
    X(double, anchor_t, 1)   /* the time the closure targets (anchors) are at */                  \
    X(int, renormalized, 1)  /* quaternions renormalized since the last event (report it) */

typedef struct Instance Instance;
/* Hands one formatted message to the importer's logger (the interface's). */
typedef void (*fmu_emit_fn)(const Instance *c, int status, const char *category,
                            const char *message);

struct Instance {
    fmu_emit_fn emit;
    void (*logger)(void);       /* the importer's logger, cast back by the interface's emit */
    void *env;                  /* its instance environment */
    char *name;
    int logging_on;
    int kind;                   /* FMU_CS or FMU_ME */
    int fmi;                    /* 2 or 3: what a value reference names (fmu_span) */
    int event_mode;             /* FMI 3.0 Co-Simulation created with eventModeUsed */
    soa_model *m;
    soa_data *d;
#define DECLARE_SCALAR(type, name, n) type name;
    STATE_SCALARS(DECLARE_SCALAR)
#undef DECLARE_SCALAR
    double *real;               /* nreal: every Real variable by value reference */
    int *boolean;               /* nboolean */
    unsigned char *pending;     /* nvars: REJ_* of a rejected value, else OK_VALUE */
    char problem[MSG];          /* a pending problem not tied to one variable ("" if none) */
    int energy_valid, poses_valid;
    int gaps_valid;             /* the pair depths hold the exact gaps (fmu_contact.c) */
    double *qs, *qds, *qdds;    /* a step works on copies: a failed step leaves the state as is */
    /* the data holds the articulated factors of the tree at (qf, qdf) (the last evaluation was
     * the tree's there, nothing else has used the data since): a step from that state runs its
     * first stage as the filter and smoother alone (soa_tree_accel, q_factored) */
    int factored;
    /* a contact model's: the data holds the contact forces at (qf, qdf) (fmu_update_outputs: the
     * host read qdd after an implicit step; nothing else has used the data since, the law is
     * unchanged): the next step from that state takes them as they are (SOA_CONTACT_HELD) */
    int contact_held;
    double *qf, *qdf;
    double *dtau, *dqdd;        /* directional derivatives */
    /* closure constraints (nc): the switches and rows of the inputs in the engine's layout, the
     * targets and the switches of the last step (evolving state), the outputs of the engine */
    int *active, *was_active;
    double *u, *anchors, *forces, *residuals;
    double *zero_v, *du, *dforces, *dres;   /* directional derivatives with constraints */
    /* Model Exchange: the normalized configuration, the tree's Jacobian (d beta-dot / d theta,
     * d beta-dot / d beta, M^-1; valid while jac_valid), directional-derivative work vectors */
    double *qn, *jac, *dth, *dq, *dv, *dqdot, *dqdd_x;
    double *scratch;            /* 2 (nreal + 1): adjoint derivatives */
    int jac_valid;
    size_t state_size;          /* bytes of a serialized state */
    uint64_t model_digest;      /* of the model's constants and variable table (a state's tag) */
    /* the last step that failed (Discard) and why, until anything changes (a value is set, a state
     * restored, a step succeeds): the same step asked again fails with Error (fmu_do_step) */
    double failed_t, failed_h;
    char failure[MSG];
};

/* ---------------------------------------------------------------- instance.h: the flags */
/* The layer below every file: what the instance's fields mean, as functions calling nothing. */
static inline int fmu_running(const Instance *c)       /* initialized and not terminated */
{
    return c->mode == STEPPING || c->mode == EVENT || c->mode == CONTINUOUS;
}

/* c->d is about to be used for other work (or the model changes): it no longer holds the tree's
 * articulated factors nor the contact forces of the state (fmu_step.c hold_factors, hold_contact). */
static inline void fmu_data_used(Instance *c) { c->factored = c->contact_held = 0; }

/* The state or an input changed: the outputs are out of date, a step that failed may succeed. */
static inline void fmu_invalidate(Instance *c)
{
    c->failed_h = 0.0;
    c->stale = 1;
    c->energy_valid = c->poses_valid = c->gaps_valid = 0;
    c->jac_valid = 0;
}

/* A ball or free joint: its coordinates hold a quaternion (w x y z) first. */
static inline int fmu_quaternion_joint(const soa_model *m, int k)
{
    return m->jtype[k] == SOA_SPHERICAL || m->jtype[k] == SOA_FREE;
}

/* ---------------------------------------------------------------- fmu_log.c */
void fmu_log(const Instance *c, int status, const char *fmt, ...);
const char *fmu_named(int vr, char *buf, size_t n);
void fmu_status_message(const Instance *c, soa_status st, char *buf, size_t n);

/* ---------------------------------------------------------------- fmu_contact.c */
void fmu_apply_contact(Instance *c);
int fmu_contact_problem(int vr, double x, char *text, size_t n);
soa_status fmu_put_contact_outputs(Instance *c, const double *q, int recompute);
int fmu_contact_pair_count(void);
int fmu_contact_indicators(Instance *c, const double *q, double *z, const char *fn);

/* ---------------------------------------------------------------- fmu_values.c */
/* The scalars value reference vr names among the variables [lo, hi) (0: none): one in FMI 2.0;
 * in FMI 3.0 the array starting at vr, and D.nvars is the independent variable time (a Real).
 * (Inline: FOR_SCALARS below runs it per value in every getter and setter.) */
static inline int fmu_span(const Instance *c, unsigned vr, int lo, int hi)
{
    if (c->fmi == 3 && vr == (unsigned)D.nvars && lo == 0 && hi == D.nreal) return 1;
    if ((long long)vr < lo || (long long)vr >= hi) return 0;
    return c->fmi == 3 ? D.vars[vr].n3 : 1;
}

/* values: vr[nvr] with each vr spanning fmu_span() scalars, nvalues of them in all */
int fmu_check_refs(Instance *c, const unsigned *vr, size_t nvr, size_t nvalues, int lo, int hi,
                   const char *fn, int mark);
/* Each scalar of the request, in order: r its value reference (D.nvars: time). */
#define FOR_SCALARS(c, vr, nvr, lo, hi, r, k)                                                   \
    for (size_t i_ = 0, k = 0; i_ < (nvr); i_++)                                                \
        for (int j_ = 0, n_ = fmu_span(c, (vr)[i_], lo, hi), r = (int)(vr)[i_]; j_ < n_;        \
             j_++, r++, k++)

int fmu_set_real(Instance *c, const unsigned *vr, size_t nvr, const double *value,
                 size_t nvalues, const char *fn);
int fmu_set_boolean(Instance *c, unsigned vr, int value, const char *fn);  /* vr checked */
int fmu_set_string(Instance *c, unsigned vr, const char *value);           /* vr checked */
int fmu_pending_reasons(const Instance *c, char *out, size_t n);
void fmu_apply_gravity(Instance *c);      /* and the other tunables the model holds */
int fmu_apply_parameters(Instance *c, char *msg, size_t n);   /* the physical ones, to c->m */

/* ---------------------------------------------------------------- fmu_state.c */
/* the FMU state: one self-describing byte buffer */
typedef struct {
    size_t size;
    unsigned char bytes[];
} fmu_state;
size_t fmu_state_bytes(void);             /* of a serialized state (c->state_size) */
uint64_t fmu_model_digest(void);          /* c->model_digest */
int fmu_get_state(Instance *c, fmu_state **state, const char *fn);
int fmu_set_state(Instance *c, const fmu_state *state, const char *fn);
fmu_state *fmu_state_from_bytes(Instance *c, const unsigned char *bytes, size_t size,
                                const char *fn);

/* ---------------------------------------------------------------- controller.c */
int fmu_controller_build(Instance *c, char *msg, size_t n);
int fmu_controller_refresh(Instance *c, const char *fn);
soa_status fmu_controller_step(Instance *c);

/* ---------------------------------------------------------------- fmu_step.c */
void fmu_reset_closures(Instance *c);     /* the closure state of a new simulation */
int fmu_build(Instance *c, char *msg, size_t n);
int fmu_pack_frame_forces(const Instance *c, const double *base, double *fext);
int fmu_gather_closure_inputs(Instance *c);
int fmu_stop_margins(const soa_model *m, const double *q, double *z);
void fmu_put_constraint_outputs(Instance *c);
soa_status fmu_update_outputs(Instance *c);   /* qdd and the constraint outputs at the state */
soa_status fmu_normalize(Instance *c);    /* qn: q with every quaternion of unit norm */
const double *fmu_me_normalized(Instance *c);   /* qn (q itself where it cannot be normalized) */
int fmu_me_evaluate(Instance *c, int level, const char *fn);   /* x-dot; logged with level */
int fmu_refresh(Instance *c, int feedthrough, int energy, int poses, const char *fn);
int fmu_get_real(Instance *c, const unsigned *vr, size_t nvr, double *value, size_t nvalues,
                 const char *fn);
int fmu_do_step(Instance *c, double t, double h, const char *fn);

/* ---------------------------------------------------------------- model_exchange.c */
int fmu_me_nx(void);                      /* continuous states: nq + nv */
int fmu_me_require(Instance *c, const char *fn, int modes);    /* 1 << Mode bits */
int fmu_me_set_time(Instance *c, double t, const char *fn);
int fmu_me_get_states(Instance *c, double *x, size_t nx, const char *fn);
int fmu_me_set_states(Instance *c, const double *x, size_t nx, const char *fn);
int fmu_me_get_derivatives(Instance *c, double *dx, size_t nx, const char *fn);
int fmu_me_nominals(Instance *c, double *x, size_t nx, const char *fn);
int fmu_me_nz(const Instance *c);                 /* event indicators */
int fmu_me_event_indicators(Instance *c, double *z, size_t ni, const char *fn);  /* FMI 2 and 3 */
int fmu_me_event_update(Instance *c, int *states_changed, const char *fn);
int fmu_me_completed_step(Instance *c, int *enter_event, const char *fn);
int fmu_directional(Instance *c, const unsigned *unknown, size_t nunknown, const unsigned *known,
                    size_t nknown, const double *seed, size_t nseed, double *out, size_t nout,
                    const char *fn);
int fmu_adjoint(Instance *c, const unsigned *unknown, size_t nunknown, const unsigned *known,
                size_t nknown, const double *seed, size_t nseed, double *out, size_t nout,
                const char *fn);

/* ---------------------------------------------------------------- instance.c */
Instance *fmu_new(const char *name, int kind, int fmi, fmu_emit_fn emit, void (*logger)(void),
                  void *env, int logging_on);
void fmu_free(Instance *c);
void fmu_set_defaults(Instance *c);
int fmu_exit_initialization(Instance *c, int mode, const char *fn);

#endif
