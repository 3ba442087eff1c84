/* FMI 2.0 over the native FMU's instance (instance.h): the functions every FMI 2.0 FMU has and
 * the Co-Simulation ones.  The Model Exchange functions are in fmi2_me.c; an FMU built with
 * --interface both instantiates either kind from one binary (fmuType).
 *
 * The status discipline (instance.h): a rejected value is not applied (fmi2Error, logged with its
 * variable and joint) and every fmi2DoStep is refused with fmi2Discard until it is corrected; a
 * failed step returns fmi2Discard with the state unchanged; a call in the wrong state returns
 * fmi2Error naming the function and the state.  fmi2DoStep, the getters and setters allocate
 * nothing, do no I/O except through the logger, and take no locks; the FMU state is one
 * self-describing byte buffer, so fmi2GetFMUstate and fmi2SerializeFMUstate share one format. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmi2Functions.h"
#include "instance.h"

/* The importer's logger takes the message as a format: '%' is escaped. */
static void emit2(const Instance *c, int status, const char *category, const char *message)
{
    char esc[2 * MSG];
    size_t j = 0;
    for (size_t i = 0; message[i] && j + 2 < sizeof esc; i++) {
        if (message[i] == '%') esc[j++] = '%';
        esc[j++] = message[i];
    }
    esc[j] = '\0';
    ((fmi2CallbackLogger)c->logger)((fmi2ComponentEnvironment)c->env, c->name,
                                    (fmi2Status)status, category, esc);
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
    tmp.emit = emit2;
    if (functions) {
        tmp.logger = (void (*)(void))functions->logger;
        tmp.env = functions->componentEnvironment;
    }
    tmp.name = (char *)(instanceName ? instanceName : "soa_fmu");
    const int kind = fmuType == fmi2CoSimulation ? FMU_CS
                   : fmuType == fmi2ModelExchange ? FMU_ME : 0;
    if (!(kind & D.interfaces)) {
        fmu_log(&tmp, fmi2Error, "fmi2Instantiate: %s is %s FMU (fmuType %d was requested)",
                D.identifier, D.interfaces == FMU_CS ? "a Co-Simulation"
                : D.interfaces == FMU_ME ? "a Model Exchange"
                : "a Model Exchange and Co-Simulation",
                (int)fmuType);
        return NULL;
    }
    if (!fmuGUID || strcmp(fmuGUID, D.guid) != 0) {
        fmu_log(&tmp, fmi2Error, "fmi2Instantiate: GUID %s does not match this FMU's %s (an FMU "
                "extracted from another build?)", fmuGUID ? fmuGUID : "(null)", D.guid);
        return NULL;
    }
    return fmu_new(tmp.name, kind, 2, emit2, tmp.logger, tmp.env, loggingOn);
}

void fmi2FreeInstance(fmi2Component comp)
{
    fmu_free((Instance *)comp);
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
        fmu_log(c, fmi2Error, "fmi2SetupExperiment called in %s mode (allowed only after "
                "fmi2Instantiate)", MODE_NAMES[c->mode]);
        return fmi2Error;
    }
    if (!isfinite(startTime)) {
        fmu_log(c, fmi2Error, "fmi2SetupExperiment: start time %g is not finite", startTime);
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
        fmu_log(c, fmi2Error, "fmi2EnterInitializationMode called in %s mode", MODE_NAMES[c->mode]);
        return fmi2Error;
    }
    c->mode = INITIALIZATION;
    return fmi2OK;
}

/* Co-Simulation: into step mode; Model Exchange: into event mode (FMI 2.0 sec. 3.2.3). */
fmi2Status fmi2ExitInitializationMode(fmi2Component comp)
{
    Instance *c = instance_of(comp, "fmi2ExitInitializationMode");
    if (!c) return fmi2Error;
    return (fmi2Status)fmu_exit_initialization(c, c->kind == FMU_ME ? EVENT : STEPPING,
                                               "fmi2ExitInitializationMode");
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
    fmu_set_defaults(c);
    return fmi2OK;
}

/* ------------------------------------------------------------------ getters */
fmi2Status fmi2GetReal(fmi2Component comp, const fmi2ValueReference vr[], size_t nvr,
                       fmi2Real value[])
{
    Instance *c = instance_of(comp, "fmi2GetReal");
    if (!c) return fmi2Error;
    return (fmi2Status)fmu_get_real(c, vr, nvr, value, nvr, "fmi2GetReal");
}

fmi2Status fmi2GetInteger(fmi2Component comp, const fmi2ValueReference vr[], size_t nvr,
                          fmi2Integer value[])
{
    Instance *c = instance_of(comp, "fmi2GetInteger");
    if (!c) return fmi2Error;
    for (size_t i = 0; i < nvr && value; i++) value[i] = 0;
    return fmu_check_refs(c, vr, nvr, nvr, 0, 0, "fmi2GetInteger", 0) ? fmi2OK : fmi2Error;
}

fmi2Status fmi2GetBoolean(fmi2Component comp, const fmi2ValueReference vr[], size_t nvr,
                          fmi2Boolean value[])
{
    Instance *c = instance_of(comp, "fmi2GetBoolean");
    if (!c) return fmi2Error;
    if (nvr > 0 && !value) return fmi2Error;
    if (!fmu_check_refs(c, vr, nvr, nvr, D.nreal, D.nreal + D.nboolean, "fmi2GetBoolean", 0)) {
        for (size_t i = 0; i < nvr; i++) value[i] = fmi2False;
        return fmi2Error;
    }
    for (size_t i = 0; i < nvr; i++) value[i] = c->boolean[vr[i] - D.nreal] ? fmi2True : fmi2False;
    return fmi2OK;
}

fmi2Status fmi2GetString(fmi2Component comp, const fmi2ValueReference vr[], size_t nvr,
                         fmi2String value[])
{
    Instance *c = instance_of(comp, "fmi2GetString");
    if (!c) return fmi2Error;
    if (nvr > 0 && !value) return fmi2Error;
    const int lo = D.nreal + D.nboolean;
    if (!fmu_check_refs(c, vr, nvr, nvr, lo, lo + D.nstring, "fmi2GetString", 0)) {
        for (size_t i = 0; i < nvr; i++) value[i] = "";
        return fmi2Error;
    }
    for (size_t i = 0; i < nvr; i++) value[i] = METHOD_NAMES[c->method];
    return fmi2OK;
}

/* ------------------------------------------------------------------ setters */
fmi2Status fmi2SetReal(fmi2Component comp, const fmi2ValueReference vr[], size_t nvr,
                       const fmi2Real value[])
{
    Instance *c = instance_of(comp, "fmi2SetReal");
    if (!c) return fmi2Error;
    return (fmi2Status)fmu_set_real(c, vr, nvr, value, nvr, "fmi2SetReal");
}

fmi2Status fmi2SetInteger(fmi2Component comp, const fmi2ValueReference vr[], size_t nvr,
                          const fmi2Integer value[])
{
    Instance *c = instance_of(comp, "fmi2SetInteger");
    if (!c) return fmi2Error;
    (void)value;
    return fmu_check_refs(c, vr, nvr, nvr, 0, 0, "fmi2SetInteger", 1) ? fmi2OK : fmi2Error;
}

fmi2Status fmi2SetBoolean(fmi2Component comp, const fmi2ValueReference vr[], size_t nvr,
                          const fmi2Boolean value[])
{
    Instance *c = instance_of(comp, "fmi2SetBoolean");
    if (!c) return fmi2Error;
    if (nvr > 0 && !value) return fmi2Error;
    if (!fmu_check_refs(c, vr, nvr, nvr, D.nreal, D.nreal + D.nboolean, "fmi2SetBoolean", 1))
        return fmi2Error;
    fmi2Status status = fmi2OK;
    for (size_t i = 0; i < nvr; i++)
        if (fmu_set_boolean(c, vr[i], value[i] != fmi2False, "fmi2SetBoolean") != FMU_OK)
            status = fmi2Error;
    return status;
}

fmi2Status fmi2SetString(fmi2Component comp, const fmi2ValueReference vr[], size_t nvr,
                         const fmi2String value[])
{
    Instance *c = instance_of(comp, "fmi2SetString");
    if (!c) return fmi2Error;
    if (nvr > 0 && !value) return fmi2Error;
    const int lo = D.nreal + D.nboolean;
    if (!fmu_check_refs(c, vr, nvr, nvr, lo, lo + D.nstring, "fmi2SetString", 1)) return fmi2Error;
    fmi2Status status = fmi2OK;
    for (size_t i = 0; i < nvr; i++)
        if (fmu_set_string(c, vr[i], value[i]) != FMU_OK) status = fmi2Error;
    return status;
}

/* ------------------------------------------------------------------ stepping (Co-Simulation) */
fmi2Status fmi2DoStep(fmi2Component comp, fmi2Real currentCommunicationPoint,
                      fmi2Real communicationStepSize, fmi2Boolean noSetFMUStatePriorToCurrentPoint)
{
    Instance *c = instance_of(comp, "fmi2DoStep");
    if (!c) return fmi2Error;
    (void)noSetFMUStatePriorToCurrentPoint;
    return (fmi2Status)fmu_do_step(c, currentCommunicationPoint, communicationStepSize,
                                   "fmi2DoStep");
}

fmi2Status fmi2CancelStep(fmi2Component comp)
{
    Instance *c = instance_of(comp, "fmi2CancelStep");
    if (!c) return fmi2Error;
    fmu_log(c, fmi2Error, "fmi2CancelStep: steps are synchronous (canRunAsynchronuously=false)");
    return fmi2Error;
}

fmi2Status fmi2SetRealInputDerivatives(fmi2Component comp, const fmi2ValueReference vr[],
                                       size_t nvr, const fmi2Integer order[],
                                       const fmi2Real value[])
{
    Instance *c = instance_of(comp, "fmi2SetRealInputDerivatives");
    (void)vr; (void)nvr; (void)order; (void)value;
    if (c) fmu_log(c, fmi2Error, "fmi2SetRealInputDerivatives: inputs are held constant over a "
                   "step (canInterpolateInputs=false)");
    return fmi2Error;
}

fmi2Status fmi2GetRealOutputDerivatives(fmi2Component comp, const fmi2ValueReference vr[],
                                        size_t nvr, const fmi2Integer order[], fmi2Real value[])
{
    Instance *c = instance_of(comp, "fmi2GetRealOutputDerivatives");
    (void)vr; (void)nvr; (void)order; (void)value;
    if (c) fmu_log(c, fmi2Error, "fmi2GetRealOutputDerivatives: not provided "
                   "(maxOutputDerivativeOrder=0)");
    return fmi2Error;
}

static fmi2Status no_status(fmi2Component comp, const char *fn)
{
    Instance *c = instance_of(comp, fn);
    if (c) fmu_log(c, fmi2Discard, "%s: steps are synchronous; there is no pending status", fn);
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
/* fmi2Terminated (FMI 2.0 sec. 4.2.3: asked after a step returned Discard): fmi2False, the FMU
 * never ends a simulation itself; a discarded step left the state at fmi2LastSuccessfulTime and
 * the master may retry with another step or other parameters. */
fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind s, fmi2Boolean *value)
{
    Instance *inst = instance_of(c, "fmi2GetBooleanStatus");
    if (inst && s == fmi2Terminated && value) {
        *value = fmi2False;
        return fmi2OK;
    }
    return no_status(c, "fmi2GetBooleanStatus");
}
fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind s, fmi2String *value)
{
    (void)s; (void)value;
    return no_status(c, "fmi2GetStringStatus");
}

/* ------------------------------------------------------------------ FMU state */
fmi2Status fmi2GetFMUstate(fmi2Component comp, fmi2FMUstate *state)
{
    Instance *c = instance_of(comp, "fmi2GetFMUstate");
    if (!c || !state) return fmi2Error;
    return (fmi2Status)fmu_get_state(c, (fmu_state **)state, "fmi2GetFMUstate");
}

fmi2Status fmi2SetFMUstate(fmi2Component comp, fmi2FMUstate state)
{
    Instance *c = instance_of(comp, "fmi2SetFMUstate");
    if (!c) return fmi2Error;
    return (fmi2Status)fmu_set_state(c, state, "fmi2SetFMUstate");
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
    *size = ((const fmu_state *)state)->size;
    return fmi2OK;
}

fmi2Status fmi2SerializeFMUstate(fmi2Component comp, fmi2FMUstate state, fmi2Byte bytes[],
                                 size_t size)
{
    Instance *c = instance_of(comp, "fmi2SerializeFMUstate");
    if (!c || !state || !bytes) return fmi2Error;
    const fmu_state *b = state;
    if (size < b->size) {
        fmu_log(c, fmi2Error, "fmi2SerializeFMUstate: buffer of %zu bytes, the state needs %zu",
                size, b->size);
        return fmi2Error;
    }
    memcpy(bytes, b->bytes, b->size);
    return fmi2OK;
}

/* A foreign, truncated or corrupted buffer is refused by fmi2SetFMUstate (fmi2Error, naming
 * why; the instance unchanged). */
fmi2Status fmi2DeSerializeFMUstate(fmi2Component comp, const fmi2Byte serializedState[],
                                   size_t size, fmi2FMUstate *state)
{
    Instance *c = instance_of(comp, "fmi2DeSerializeFMUstate");
    if (!c || !state || (size && !serializedState)) return fmi2Error;
    fmu_state *b = fmu_state_from_bytes(c, (const unsigned char *)serializedState, size,
                                        "fmi2DeSerializeFMUstate");
    if (!b) return fmi2Error;
    *state = b;
    return fmi2OK;
}

/* ------------------------------------------------------------------ directional derivatives */
/* Exact derivatives of outputs and state derivatives with respect to inputs and states
 * (model_exchange.c, fmu_directional). */
fmi2Status fmi2GetDirectionalDerivative(fmi2Component comp, const fmi2ValueReference vUnknown_ref[],
                                        size_t nUnknown, const fmi2ValueReference vKnown_ref[],
                                        size_t nKnown, const fmi2Real dvKnown[],
                                        fmi2Real dvUnknown[])
{
    Instance *c = instance_of(comp, "fmi2GetDirectionalDerivative");
    if (!c) return fmi2Error;
    return (fmi2Status)fmu_directional(c, vUnknown_ref, nUnknown, vKnown_ref, nKnown, dvKnown,
                                       nKnown, dvUnknown, nUnknown,
                                       "fmi2GetDirectionalDerivative");
}
