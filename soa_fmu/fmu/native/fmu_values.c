/* The native FMU's variable access (instance.h): what a value reference names (one scalar in
 * FMI 2.0, an array in FMI 3.0) and the checks of a request, the setters with the status
 * discipline, the reasons steps are refused while a rejected value is pending, and the values of
 * the parameters into the instance's model (the tunable ones at once, the physical ones when the
 * state is built or restored).  A rejected value is not applied: the setter returns Error and
 * logs the variable and its joint.  (The Real getter brings the outputs it reads up to date: it
 * is the simulation's, fmu_step.c.) */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "instance.h"

const char *const METHOD_NAMES[SOA_NMETHODS] = {"rk4", "euler", "dop853", "implicit", "ros2",
                                                "ros34pw2", "rk4w", "auto"};

/* ------------------------------------------------------------------ value references */
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
                 "implicit, ros2, ros34pw2, rk4w, auto",
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

/* ------------------------------------------------------------------ pending rejections */
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

/* ------------------------------------------------------------------ tunable parameters
 * Gravity and the other tunables the model holds go into it at once (a setter while running,
 * the build, a restored state). */
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
