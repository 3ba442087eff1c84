/* The native FMU's messages (instance.h), the bottom layer of its files: the log categories an
 * importer filters by, fmu_log (through the interface's emit, only what the category lets
 * through), the modes' names, a variable's name with the joint, frame or constraint it belongs
 * to, and the messages of core/status.c with the model's names (the same texts soa_fmu._core
 * raises). */
#include <stdarg.h>
#include <stdio.h>

#include "instance.h"

const char *const MODE_NAMES[] = {"instantiated", "initialization", "step", "terminated", "event",
                                  "continuous-time"};

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
