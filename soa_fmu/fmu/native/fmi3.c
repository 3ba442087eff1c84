/* FMI 3.0 over the native FMU's instance (instance.h): Co-Simulation and Model Exchange with
 * array variables.  A value reference names a whole array of the variable table (tau [nv], q [nq],
 * <frame>.f_ext [6], der(q) [nq], ...; soa_fmu_variable.n3 scalars, the same buffer as FMI 2.0);
 * D.nvars is the independent variable time.  The semantics are FMI 2.0's (instance.h,
 * model_exchange.c):
 *
 *   Co-Simulation  no event mode (hasEventMode=false; an importer that asks for it anyway gets a
 *                  plain event mode with nothing to update), no early return, no intermediate
 *                  update (providesIntermediateUpdate=false); fmi3DoStep is fmi2DoStep;
 *   Model Exchange states x = (q, qd), derivatives (der(q), qdd), no event indicators, grasp /
 *                  release and quaternion renormalization in event mode (fmi3UpdateDiscreteStates);
 *   both           fmi3GetFMUState / serialization (one byte format), directional derivatives
 *                  and adjoint derivatives (columns of the same exact Jacobian).
 *
 * Types the FMU has no variables of (Float32, the integers, Binary, Clock) accept empty requests
 * and refuse any value reference (fmi3Error, logged).  Scheduled Execution, configuration mode
 * and variable dependencies at run time are not provided (fmi3Error, logged). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmi3Functions.h"
#include "instance.h"

static void emit3(const Instance *c, int status, const char *category, const char *message)
{
    ((fmi3LogMessageCallback)c->logger)((fmi3InstanceEnvironment)c->env, (fmi3Status)status,
                                        category, message);
}

static Instance *instance_of(fmi3Instance instance) { return (Instance *)instance; }

static fmi3Status refuse(fmi3Instance instance, const char *fn, const char *why)
{
    Instance *c = instance_of(instance);
    if (c) fmu_log(c, FMU_ERROR, "%s: %s", fn, why);
    return fmi3Error;
}

/* ------------------------------------------------------------------ version, logging, instances */
const char *fmi3GetVersion(void) { return fmi3Version; }

fmi3Status fmi3SetDebugLogging(fmi3Instance instance, fmi3Boolean loggingOn, size_t nCategories,
                               const fmi3String categories[])
{
    Instance *c = instance_of(instance);
    (void)nCategories;
    (void)categories;
    if (!c) return fmi3Error;
    c->logging_on = loggingOn ? 1 : 0;
    return fmi3OK;
}

static Instance *instantiate(fmi3String name, fmi3String token, int kind, fmi3Boolean loggingOn,
                             fmi3InstanceEnvironment env, fmi3LogMessageCallback logMessage,
                             const char *fn)
{
    Instance tmp = {0};
    tmp.emit = emit3;
    tmp.logger = (void (*)(void))logMessage;
    tmp.env = env;
    tmp.name = (char *)(name ? name : "soa_fmu");
    if (!(kind & D.interfaces)) {
        fmu_log(&tmp, FMU_ERROR, "%s: %s is %s FMU", fn, D.identifier,
                D.interfaces == FMU_CS ? "a Co-Simulation" : "a Model Exchange");
        return NULL;
    }
    if (!token || strcmp(token, D.guid) != 0) {
        fmu_log(&tmp, FMU_ERROR, "%s: instantiation token %s does not match this FMU's %s (an FMU "
                "extracted from another build?)", fn, token ? token : "(null)", D.guid);
        return NULL;
    }
    return fmu_new(tmp.name, kind, 3, emit3, tmp.logger, env, loggingOn);
}

fmi3Instance fmi3InstantiateModelExchange(fmi3String instanceName, fmi3String instantiationToken,
                                          fmi3String resourcePath, fmi3Boolean visible,
                                          fmi3Boolean loggingOn,
                                          fmi3InstanceEnvironment instanceEnvironment,
                                          fmi3LogMessageCallback logMessage)
{
    (void)resourcePath;
    (void)visible;
    return instantiate(instanceName, instantiationToken, FMU_ME, loggingOn, instanceEnvironment,
                       logMessage, "fmi3InstantiateModelExchange");
}

fmi3Instance fmi3InstantiateCoSimulation(fmi3String instanceName, fmi3String instantiationToken,
                                         fmi3String resourcePath, fmi3Boolean visible,
                                         fmi3Boolean loggingOn, fmi3Boolean eventModeUsed,
                                         fmi3Boolean earlyReturnAllowed,
                                         const fmi3ValueReference requiredIntermediateVariables[],
                                         size_t nRequiredIntermediateVariables,
                                         fmi3InstanceEnvironment instanceEnvironment,
                                         fmi3LogMessageCallback logMessage,
                                         fmi3IntermediateUpdateCallback intermediateUpdate)
{
    (void)resourcePath;
    (void)visible;
    (void)earlyReturnAllowed;          /* never returns early */
    (void)requiredIntermediateVariables;
    (void)nRequiredIntermediateVariables;
    (void)intermediateUpdate;          /* providesIntermediateUpdate=false: never called */
    Instance *c = instantiate(instanceName, instantiationToken, FMU_CS, loggingOn,
                              instanceEnvironment, logMessage, "fmi3InstantiateCoSimulation");
    if (c) c->event_mode = eventModeUsed ? 1 : 0;
    return c;
}

fmi3Instance fmi3InstantiateScheduledExecution(fmi3String instanceName,
                                               fmi3String instantiationToken,
                                               fmi3String resourcePath, fmi3Boolean visible,
                                               fmi3Boolean loggingOn,
                                               fmi3InstanceEnvironment instanceEnvironment,
                                               fmi3LogMessageCallback logMessage,
                                               fmi3ClockUpdateCallback clockUpdate,
                                               fmi3LockPreemptionCallback lockPreemption,
                                               fmi3UnlockPreemptionCallback unlockPreemption)
{
    (void)instantiationToken; (void)resourcePath; (void)visible; (void)loggingOn;
    (void)clockUpdate; (void)lockPreemption; (void)unlockPreemption;
    Instance tmp = {0};
    tmp.emit = emit3;
    tmp.logger = (void (*)(void))logMessage;
    tmp.env = instanceEnvironment;
    tmp.name = (char *)(instanceName ? instanceName : "soa_fmu");
    fmu_log(&tmp, FMU_ERROR, "fmi3InstantiateScheduledExecution: %s provides Co-Simulation "
            "and Model Exchange, not Scheduled Execution", D.identifier);
    return NULL;
}

void fmi3FreeInstance(fmi3Instance instance) { fmu_free(instance_of(instance)); }

/* ------------------------------------------------------------------ modes */
fmi3Status fmi3EnterInitializationMode(fmi3Instance instance, fmi3Boolean toleranceDefined,
                                       fmi3Float64 tolerance, fmi3Float64 startTime,
                                       fmi3Boolean stopTimeDefined, fmi3Float64 stopTime)
{
    Instance *c = instance_of(instance);
    (void)toleranceDefined; (void)tolerance; (void)stopTimeDefined; (void)stopTime;
    if (!c) return fmi3Error;
    if (c->mode != INSTANTIATED) {
        fmu_log(c, FMU_ERROR, "fmi3EnterInitializationMode called in %s mode",
                MODE_NAMES[c->mode]);
        return fmi3Error;
    }
    if (!isfinite(startTime)) {
        fmu_log(c, FMU_ERROR, "fmi3EnterInitializationMode: start time %g is not finite",
                startTime);
        return fmi3Error;
    }
    c->start_time = c->t = startTime;
    c->mode = INITIALIZATION;
    return fmi3OK;
}

/* Model Exchange (and Co-Simulation with event mode): into event mode; else step mode. */
fmi3Status fmi3ExitInitializationMode(fmi3Instance instance)
{
    Instance *c = instance_of(instance);
    if (!c) return fmi3Error;
    const int mode = c->kind == FMU_ME || c->event_mode ? EVENT : STEPPING;
    return (fmi3Status)fmu_exit_initialization(c, mode, "fmi3ExitInitializationMode");
}

fmi3Status fmi3EnterEventMode(fmi3Instance instance)
{
    Instance *c = instance_of(instance);
    if (!c) return fmi3Error;
    const int from = c->kind == FMU_ME ? (1 << EVENT) | (1 << CONTINUOUS)
                   : c->event_mode ? (1 << EVENT) | (1 << STEPPING) : 0;
    if (!(from & (1 << c->mode))) {
        fmu_log(c, FMU_ERROR, "fmi3EnterEventMode called in %s mode%s", MODE_NAMES[c->mode],
                c->kind == FMU_CS && !c->event_mode ? " (the instance was created with "
                "eventModeUsed=false)" : "");
        return fmi3Error;
    }
    c->mode = EVENT;
    return fmi3OK;
}

fmi3Status fmi3Terminate(fmi3Instance instance)
{
    Instance *c = instance_of(instance);
    if (!c) return fmi3Error;
    c->mode = TERMINATED;
    return fmi3OK;
}

fmi3Status fmi3Reset(fmi3Instance instance)
{
    Instance *c = instance_of(instance);
    if (!c) return fmi3Error;
    fmu_set_defaults(c);
    return fmi3OK;
}

fmi3Status fmi3EnterConfigurationMode(fmi3Instance instance)
{
    return refuse(instance, "fmi3EnterConfigurationMode", "this FMU has no structural parameters");
}

fmi3Status fmi3ExitConfigurationMode(fmi3Instance instance)
{
    return refuse(instance, "fmi3ExitConfigurationMode", "this FMU has no structural parameters");
}

fmi3Status fmi3EvaluateDiscreteStates(fmi3Instance instance)
{
    return instance_of(instance) ? fmi3OK : fmi3Error;     /* no clocked or discrete states */
}

fmi3Status fmi3UpdateDiscreteStates(fmi3Instance instance, fmi3Boolean *discreteStatesNeedUpdate,
                                    fmi3Boolean *terminateSimulation,
                                    fmi3Boolean *nominalsOfContinuousStatesChanged,
                                    fmi3Boolean *valuesOfContinuousStatesChanged,
                                    fmi3Boolean *nextEventTimeDefined, fmi3Float64 *nextEventTime)
{
    Instance *c = instance_of(instance);
    if (!c || !discreteStatesNeedUpdate || !terminateSimulation
        || !nominalsOfContinuousStatesChanged || !valuesOfContinuousStatesChanged
        || !nextEventTimeDefined || !nextEventTime)
        return fmi3Error;
    int changed = 0, status = FMU_OK;
    if (c->kind == FMU_ME) {
        status = fmu_me_event_update(c, &changed, "fmi3UpdateDiscreteStates");
    } else if (c->mode != EVENT) {
        fmu_log(c, FMU_ERROR, "fmi3UpdateDiscreteStates called in %s mode", MODE_NAMES[c->mode]);
        status = FMU_ERROR;
    }
    *discreteStatesNeedUpdate = false;
    *terminateSimulation = false;
    *nominalsOfContinuousStatesChanged = false;
    *valuesOfContinuousStatesChanged = changed != 0;
    *nextEventTimeDefined = false;
    *nextEventTime = 0.0;
    return (fmi3Status)status;
}

/* ------------------------------------------------------------------ Float64, Boolean, String */
fmi3Status fmi3GetFloat64(fmi3Instance instance, const fmi3ValueReference valueReferences[],
                          size_t nValueReferences, fmi3Float64 values[], size_t nValues)
{
    Instance *c = instance_of(instance);
    if (!c) return fmi3Error;
    return (fmi3Status)fmu_get_real(c, valueReferences, nValueReferences, values, nValues,
                                    "fmi3GetFloat64");
}

fmi3Status fmi3SetFloat64(fmi3Instance instance, const fmi3ValueReference valueReferences[],
                          size_t nValueReferences, const fmi3Float64 values[], size_t nValues)
{
    Instance *c = instance_of(instance);
    if (!c) return fmi3Error;
    return (fmi3Status)fmu_set_real(c, valueReferences, nValueReferences, values, nValues,
                                    "fmi3SetFloat64");
}

fmi3Status fmi3GetBoolean(fmi3Instance instance, const fmi3ValueReference valueReferences[],
                          size_t nValueReferences, fmi3Boolean values[], size_t nValues)
{
    Instance *c = instance_of(instance);
    if (!c || (nValues && !values)) return fmi3Error;
    if (!fmu_check_refs(c, valueReferences, nValueReferences, nValues, D.nreal,
                        D.nreal + D.nboolean, "fmi3GetBoolean", 0)) {
        for (size_t i = 0; i < nValues; i++) values[i] = false;
        return fmi3Error;
    }
    for (size_t i = 0; i < nValueReferences; i++)       /* every Boolean is a scalar */
        values[i] = c->boolean[valueReferences[i] - (unsigned)D.nreal] != 0;
    return fmi3OK;
}

fmi3Status fmi3SetBoolean(fmi3Instance instance, const fmi3ValueReference valueReferences[],
                          size_t nValueReferences, const fmi3Boolean values[], size_t nValues)
{
    Instance *c = instance_of(instance);
    if (!c || (nValues && !values)) return fmi3Error;
    if (!fmu_check_refs(c, valueReferences, nValueReferences, nValues, D.nreal,
                        D.nreal + D.nboolean, "fmi3SetBoolean", 1))
        return fmi3Error;
    fmi3Status status = fmi3OK;
    for (size_t i = 0; i < nValueReferences; i++)
        if (fmu_set_boolean(c, valueReferences[i], values[i], "fmi3SetBoolean") != FMU_OK)
            status = fmi3Error;
    return status;
}

fmi3Status fmi3GetString(fmi3Instance instance, const fmi3ValueReference valueReferences[],
                         size_t nValueReferences, fmi3String values[], size_t nValues)
{
    Instance *c = instance_of(instance);
    if (!c || (nValues && !values)) return fmi3Error;
    const int lo = D.nreal + D.nboolean;
    if (!fmu_check_refs(c, valueReferences, nValueReferences, nValues, lo, lo + D.nstring,
                        "fmi3GetString", 0)) {
        for (size_t i = 0; i < nValues; i++) values[i] = "";
        return fmi3Error;
    }
    for (size_t i = 0; i < nValues; i++) values[i] = METHOD_NAMES[c->method];
    return fmi3OK;
}

fmi3Status fmi3SetString(fmi3Instance instance, const fmi3ValueReference valueReferences[],
                         size_t nValueReferences, const fmi3String values[], size_t nValues)
{
    Instance *c = instance_of(instance);
    if (!c || (nValues && !values)) return fmi3Error;
    const int lo = D.nreal + D.nboolean;
    if (!fmu_check_refs(c, valueReferences, nValueReferences, nValues, lo, lo + D.nstring,
                        "fmi3SetString", 1))
        return fmi3Error;
    fmi3Status status = fmi3OK;
    for (size_t i = 0; i < nValueReferences; i++)
        if (fmu_set_string(c, valueReferences[i], values[i]) != FMU_OK) status = fmi3Error;
    return status;
}

/* Types without variables: an empty request is fine, any value reference is not one of them. */
#define NO_VARIABLES(Type, ctype)                                                               \
    fmi3Status fmi3Get##Type(fmi3Instance instance, const fmi3ValueReference valueReferences[], \
                             size_t nValueReferences, ctype values[], size_t nValues)           \
    {                                                                                           \
        Instance *c = instance_of(instance);                                                    \
        (void)values;                                                                           \
        if (!c) return fmi3Error;                                                               \
        return fmu_check_refs(c, valueReferences, nValueReferences, nValues, 0, 0,              \
                              "fmi3Get" #Type, 0) ? fmi3OK : fmi3Error;                         \
    }                                                                                           \
    fmi3Status fmi3Set##Type(fmi3Instance instance, const fmi3ValueReference valueReferences[], \
                             size_t nValueReferences, const ctype values[], size_t nValues)     \
    {                                                                                           \
        Instance *c = instance_of(instance);                                                    \
        (void)values;                                                                           \
        if (!c) return fmi3Error;                                                               \
        return fmu_check_refs(c, valueReferences, nValueReferences, nValues, 0, 0,              \
                              "fmi3Set" #Type, 1) ? fmi3OK : fmi3Error;                         \
    }
NO_VARIABLES(Float32, fmi3Float32)
NO_VARIABLES(Int8, fmi3Int8)
NO_VARIABLES(UInt8, fmi3UInt8)
NO_VARIABLES(Int16, fmi3Int16)
NO_VARIABLES(UInt16, fmi3UInt16)
NO_VARIABLES(Int32, fmi3Int32)
NO_VARIABLES(UInt32, fmi3UInt32)
NO_VARIABLES(Int64, fmi3Int64)
NO_VARIABLES(UInt64, fmi3UInt64)

fmi3Status fmi3GetBinary(fmi3Instance instance, const fmi3ValueReference valueReferences[],
                         size_t nValueReferences, size_t valueSizes[], fmi3Binary values[],
                         size_t nValues)
{
    Instance *c = instance_of(instance);
    (void)valueSizes; (void)values;
    if (!c) return fmi3Error;
    return fmu_check_refs(c, valueReferences, nValueReferences, nValues, 0, 0, "fmi3GetBinary",
                          0) ? fmi3OK : fmi3Error;
}

fmi3Status fmi3SetBinary(fmi3Instance instance, const fmi3ValueReference valueReferences[],
                         size_t nValueReferences, const size_t valueSizes[],
                         const fmi3Binary values[], size_t nValues)
{
    Instance *c = instance_of(instance);
    (void)valueSizes; (void)values;
    if (!c) return fmi3Error;
    return fmu_check_refs(c, valueReferences, nValueReferences, nValues, 0, 0, "fmi3SetBinary",
                          1) ? fmi3OK : fmi3Error;
}

fmi3Status fmi3GetClock(fmi3Instance instance, const fmi3ValueReference valueReferences[],
                        size_t nValueReferences, fmi3Clock values[])
{
    Instance *c = instance_of(instance);
    (void)values;
    if (!c) return fmi3Error;
    return fmu_check_refs(c, valueReferences, nValueReferences, nValueReferences, 0, 0,
                          "fmi3GetClock", 0) ? fmi3OK : fmi3Error;
}

fmi3Status fmi3SetClock(fmi3Instance instance, const fmi3ValueReference valueReferences[],
                        size_t nValueReferences, const fmi3Clock values[])
{
    Instance *c = instance_of(instance);
    (void)values;
    if (!c) return fmi3Error;
    return fmu_check_refs(c, valueReferences, nValueReferences, nValueReferences, 0, 0,
                          "fmi3SetClock", 1) ? fmi3OK : fmi3Error;
}

/* ------------------------------------------------------------------ clocks (none) */
fmi3Status fmi3GetIntervalDecimal(fmi3Instance instance, const fmi3ValueReference valueReferences[],
                                  size_t nValueReferences, fmi3Float64 intervals[],
                                  fmi3IntervalQualifier qualifiers[])
{
    (void)valueReferences; (void)nValueReferences; (void)intervals; (void)qualifiers;
    return refuse(instance, "fmi3GetIntervalDecimal", "this FMU has no clocks");
}

fmi3Status fmi3GetIntervalFraction(fmi3Instance instance,
                                   const fmi3ValueReference valueReferences[],
                                   size_t nValueReferences, fmi3UInt64 counters[],
                                   fmi3UInt64 resolutions[], fmi3IntervalQualifier qualifiers[])
{
    (void)valueReferences; (void)nValueReferences; (void)counters; (void)resolutions;
    (void)qualifiers;
    return refuse(instance, "fmi3GetIntervalFraction", "this FMU has no clocks");
}

fmi3Status fmi3GetShiftDecimal(fmi3Instance instance, const fmi3ValueReference valueReferences[],
                               size_t nValueReferences, fmi3Float64 shifts[])
{
    (void)valueReferences; (void)nValueReferences; (void)shifts;
    return refuse(instance, "fmi3GetShiftDecimal", "this FMU has no clocks");
}

fmi3Status fmi3GetShiftFraction(fmi3Instance instance, const fmi3ValueReference valueReferences[],
                                size_t nValueReferences, fmi3UInt64 counters[],
                                fmi3UInt64 resolutions[])
{
    (void)valueReferences; (void)nValueReferences; (void)counters; (void)resolutions;
    return refuse(instance, "fmi3GetShiftFraction", "this FMU has no clocks");
}

fmi3Status fmi3SetIntervalDecimal(fmi3Instance instance, const fmi3ValueReference valueReferences[],
                                  size_t nValueReferences, const fmi3Float64 intervals[])
{
    (void)valueReferences; (void)nValueReferences; (void)intervals;
    return refuse(instance, "fmi3SetIntervalDecimal", "this FMU has no clocks");
}

fmi3Status fmi3SetIntervalFraction(fmi3Instance instance,
                                   const fmi3ValueReference valueReferences[],
                                   size_t nValueReferences, const fmi3UInt64 counters[],
                                   const fmi3UInt64 resolutions[])
{
    (void)valueReferences; (void)nValueReferences; (void)counters; (void)resolutions;
    return refuse(instance, "fmi3SetIntervalFraction", "this FMU has no clocks");
}

fmi3Status fmi3SetShiftDecimal(fmi3Instance instance, const fmi3ValueReference valueReferences[],
                               size_t nValueReferences, const fmi3Float64 shifts[])
{
    (void)valueReferences; (void)nValueReferences; (void)shifts;
    return refuse(instance, "fmi3SetShiftDecimal", "this FMU has no clocks");
}

fmi3Status fmi3SetShiftFraction(fmi3Instance instance, const fmi3ValueReference valueReferences[],
                                size_t nValueReferences, const fmi3UInt64 counters[],
                                const fmi3UInt64 resolutions[])
{
    (void)valueReferences; (void)nValueReferences; (void)counters; (void)resolutions;
    return refuse(instance, "fmi3SetShiftFraction", "this FMU has no clocks");
}

fmi3Status fmi3ActivateModelPartition(fmi3Instance instance, fmi3ValueReference clockReference,
                                      fmi3Float64 activationTime)
{
    (void)clockReference; (void)activationTime;
    return refuse(instance, "fmi3ActivateModelPartition", "not a Scheduled Execution FMU");
}

/* ------------------------------------------------------------------ dependencies */
fmi3Status fmi3GetNumberOfVariableDependencies(fmi3Instance instance,
                                               fmi3ValueReference valueReference,
                                               size_t *nDependencies)
{
    (void)valueReference;
    if (nDependencies) *nDependencies = 0;
    return refuse(instance, "fmi3GetNumberOfVariableDependencies", "not provided: the "
                  "dependencies are in modelDescription.xml (ModelStructure)");
}

fmi3Status fmi3GetVariableDependencies(fmi3Instance instance, fmi3ValueReference dependent,
                                       size_t elementIndicesOfDependent[],
                                       fmi3ValueReference independents[],
                                       size_t elementIndicesOfIndependents[],
                                       fmi3DependencyKind dependencyKinds[], size_t nDependencies)
{
    (void)dependent; (void)elementIndicesOfDependent; (void)independents;
    (void)elementIndicesOfIndependents; (void)dependencyKinds; (void)nDependencies;
    return refuse(instance, "fmi3GetVariableDependencies", "not provided: the dependencies are "
                  "in modelDescription.xml (ModelStructure)");
}

/* ------------------------------------------------------------------ FMU state */
fmi3Status fmi3GetFMUState(fmi3Instance instance, fmi3FMUState *FMUState)
{
    Instance *c = instance_of(instance);
    if (!c || !FMUState) return fmi3Error;
    return (fmi3Status)fmu_get_state(c, (fmu_state **)FMUState, "fmi3GetFMUState");
}

fmi3Status fmi3SetFMUState(fmi3Instance instance, fmi3FMUState FMUState)
{
    Instance *c = instance_of(instance);
    if (!c) return fmi3Error;
    return (fmi3Status)fmu_set_state(c, FMUState, "fmi3SetFMUState");
}

fmi3Status fmi3FreeFMUState(fmi3Instance instance, fmi3FMUState *FMUState)
{
    (void)instance;
    if (FMUState) {
        free(*FMUState);
        *FMUState = NULL;
    }
    return fmi3OK;
}

fmi3Status fmi3SerializedFMUStateSize(fmi3Instance instance, fmi3FMUState FMUState, size_t *size)
{
    Instance *c = instance_of(instance);
    if (!c || !FMUState || !size) return fmi3Error;
    *size = ((const fmu_state *)FMUState)->size;
    return fmi3OK;
}

fmi3Status fmi3SerializeFMUState(fmi3Instance instance, fmi3FMUState FMUState,
                                 fmi3Byte serializedState[], size_t size)
{
    Instance *c = instance_of(instance);
    if (!c || !FMUState || !serializedState) return fmi3Error;
    const fmu_state *b = FMUState;
    if (size < b->size) {
        fmu_log(c, FMU_ERROR, "fmi3SerializeFMUState: buffer of %zu bytes, the state needs %zu",
                size, b->size);
        return fmi3Error;
    }
    memcpy(serializedState, b->bytes, b->size);
    return fmi3OK;
}

fmi3Status fmi3DeserializeFMUState(fmi3Instance instance, const fmi3Byte serializedState[],
                                   size_t size, fmi3FMUState *FMUState)
{
    Instance *c = instance_of(instance);
    if (!c || !FMUState || (size && !serializedState)) return fmi3Error;
    fmu_state *b = fmu_state_from_bytes(c, serializedState, size, "fmi3DeserializeFMUState");
    if (!b) return fmi3Error;
    *FMUState = b;
    return fmi3OK;
}

/* ------------------------------------------------------------------ derivatives */
fmi3Status fmi3GetDirectionalDerivative(fmi3Instance instance, const fmi3ValueReference unknowns[],
                                        size_t nUnknowns, const fmi3ValueReference knowns[],
                                        size_t nKnowns, const fmi3Float64 seed[], size_t nSeed,
                                        fmi3Float64 sensitivity[], size_t nSensitivity)
{
    Instance *c = instance_of(instance);
    if (!c) return fmi3Error;
    return (fmi3Status)fmu_directional(c, unknowns, nUnknowns, knowns, nKnowns, seed, nSeed,
                                       sensitivity, nSensitivity, "fmi3GetDirectionalDerivative");
}

fmi3Status fmi3GetAdjointDerivative(fmi3Instance instance, const fmi3ValueReference unknowns[],
                                    size_t nUnknowns, const fmi3ValueReference knowns[],
                                    size_t nKnowns, const fmi3Float64 seed[], size_t nSeed,
                                    fmi3Float64 sensitivity[], size_t nSensitivity)
{
    Instance *c = instance_of(instance);
    if (!c) return fmi3Error;
    return (fmi3Status)fmu_adjoint(c, unknowns, nUnknowns, knowns, nKnowns, seed, nSeed,
                                   sensitivity, nSensitivity, "fmi3GetAdjointDerivative");
}

/* ------------------------------------------------------------------ Model Exchange */
fmi3Status fmi3EnterContinuousTimeMode(fmi3Instance instance)
{
    Instance *c = instance_of(instance);
    if (!c) return fmi3Error;
    if (!fmu_me_require(c, "fmi3EnterContinuousTimeMode", 1 << EVENT)) return fmi3Error;
    c->mode = CONTINUOUS;
    return fmi3OK;
}

fmi3Status fmi3CompletedIntegratorStep(fmi3Instance instance,
                                       fmi3Boolean noSetFMUStatePriorToCurrentPoint,
                                       fmi3Boolean *enterEventMode,
                                       fmi3Boolean *terminateSimulation)
{
    Instance *c = instance_of(instance);
    (void)noSetFMUStatePriorToCurrentPoint;
    if (!c || !enterEventMode || !terminateSimulation) return fmi3Error;
    int event = 0;
    const int status = fmu_me_completed_step(c, &event, "fmi3CompletedIntegratorStep");
    *enterEventMode = event != 0;
    *terminateSimulation = false;
    return (fmi3Status)status;
}

fmi3Status fmi3SetTime(fmi3Instance instance, fmi3Float64 time)
{
    Instance *c = instance_of(instance);
    if (!c) return fmi3Error;
    return (fmi3Status)fmu_me_set_time(c, time, "fmi3SetTime");
}

fmi3Status fmi3SetContinuousStates(fmi3Instance instance, const fmi3Float64 continuousStates[],
                                   size_t nContinuousStates)
{
    Instance *c = instance_of(instance);
    if (!c) return fmi3Error;
    return (fmi3Status)fmu_me_set_states(c, continuousStates, nContinuousStates,
                                         "fmi3SetContinuousStates");
}

fmi3Status fmi3GetContinuousStateDerivatives(fmi3Instance instance, fmi3Float64 derivatives[],
                                             size_t nContinuousStates)
{
    Instance *c = instance_of(instance);
    if (!c) return fmi3Error;
    return (fmi3Status)fmu_me_get_derivatives(c, derivatives, nContinuousStates,
                                              "fmi3GetContinuousStateDerivatives");
}

fmi3Status fmi3GetEventIndicators(fmi3Instance instance, fmi3Float64 eventIndicators[],
                                  size_t nEventIndicators)
{
    Instance *c = instance_of(instance);
    if (!c) return fmi3Error;
    return (fmi3Status)fmu_me_event_indicators(c, eventIndicators, nEventIndicators,
                                               "fmi3GetEventIndicators");
}

fmi3Status fmi3GetContinuousStates(fmi3Instance instance, fmi3Float64 continuousStates[],
                                   size_t nContinuousStates)
{
    Instance *c = instance_of(instance);
    if (!c) return fmi3Error;
    return (fmi3Status)fmu_me_get_states(c, continuousStates, nContinuousStates,
                                         "fmi3GetContinuousStates");
}

fmi3Status fmi3GetNominalsOfContinuousStates(fmi3Instance instance, fmi3Float64 nominals[],
                                             size_t nContinuousStates)
{
    Instance *c = instance_of(instance);
    if (!c) return fmi3Error;
    return (fmi3Status)fmu_me_nominals(c, nominals, nContinuousStates,
                                       "fmi3GetNominalsOfContinuousStates");
}

fmi3Status fmi3GetNumberOfEventIndicators(fmi3Instance instance, size_t *nEventIndicators)
{
    Instance *c = instance_of(instance);
    if (!c || !nEventIndicators) return fmi3Error;
    /* the joint stops' margins, then the contact pairs (model_exchange.c) */
    *nEventIndicators = (size_t)fmu_me_nz(c);
    return fmi3OK;
}

fmi3Status fmi3GetNumberOfContinuousStates(fmi3Instance instance, size_t *nContinuousStates)
{
    Instance *c = instance_of(instance);
    if (!c || !nContinuousStates) return fmi3Error;
    *nContinuousStates = c->kind == FMU_ME ? (size_t)fmu_me_nx() : 0;
    return fmi3OK;
}

/* ------------------------------------------------------------------ Co-Simulation */
fmi3Status fmi3EnterStepMode(fmi3Instance instance)
{
    Instance *c = instance_of(instance);
    if (!c) return fmi3Error;
    if (c->kind != FMU_CS || c->mode != EVENT) {
        fmu_log(c, FMU_ERROR, "fmi3EnterStepMode called in %s mode of a %s instance",
                MODE_NAMES[c->mode], c->kind == FMU_CS ? "Co-Simulation" : "Model Exchange");
        return fmi3Error;
    }
    c->mode = STEPPING;
    return fmi3OK;
}

fmi3Status fmi3GetOutputDerivatives(fmi3Instance instance,
                                    const fmi3ValueReference valueReferences[],
                                    size_t nValueReferences, const fmi3Int32 orders[],
                                    fmi3Float64 values[], size_t nValues)
{
    (void)valueReferences; (void)nValueReferences; (void)orders; (void)values; (void)nValues;
    return refuse(instance, "fmi3GetOutputDerivatives", "not provided "
                  "(maxOutputDerivativeOrder=0)");
}

fmi3Status fmi3DoStep(fmi3Instance instance, fmi3Float64 currentCommunicationPoint,
                      fmi3Float64 communicationStepSize,
                      fmi3Boolean noSetFMUStatePriorToCurrentPoint,
                      fmi3Boolean *eventHandlingNeeded, fmi3Boolean *terminateSimulation,
                      fmi3Boolean *earlyReturn, fmi3Float64 *lastSuccessfulTime)
{
    Instance *c = instance_of(instance);
    (void)noSetFMUStatePriorToCurrentPoint;
    if (!c || !eventHandlingNeeded || !terminateSimulation || !earlyReturn || !lastSuccessfulTime)
        return fmi3Error;
    const int status = fmu_do_step(c, currentCommunicationPoint, communicationStepSize,
                                   "fmi3DoStep");
    *eventHandlingNeeded = false;
    *terminateSimulation = false;
    *earlyReturn = false;
    *lastSuccessfulTime = c->t;
    return (fmi3Status)status;
}
