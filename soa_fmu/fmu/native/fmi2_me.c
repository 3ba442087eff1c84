/* FMI 2.0 Model Exchange over the native FMU's instance: the functions only Model Exchange has
 * (the common ones are in fmi2_cs.c).  The model is in model_exchange.c: states x = (q, qd),
 * derivatives (der(q), qdd), no event indicators, grasp / release and quaternion renormalization
 * handled in event mode.  Mode checks follow FMI 2.0 sec. 3.2.3 (fmi2Error naming the mode). */
#include "fmi2Functions.h"
#include "instance.h"

static Instance *instance_of(fmi2Component comp) { return (Instance *)comp; }

fmi2Status fmi2EnterEventMode(fmi2Component comp)
{
    Instance *c = instance_of(comp);
    if (!c) return fmi2Error;
    if (!fmu_me_require(c, "fmi2EnterEventMode", (1 << EVENT) | (1 << CONTINUOUS)))
        return fmi2Error;
    c->mode = EVENT;
    return fmi2OK;
}

fmi2Status fmi2NewDiscreteStates(fmi2Component comp, fmi2EventInfo *info)
{
    Instance *c = instance_of(comp);
    if (!c || !info) return fmi2Error;
    int changed = 0;
    const int status = fmu_me_event_update(c, &changed, "fmi2NewDiscreteStates");
    info->newDiscreteStatesNeeded = fmi2False;
    info->terminateSimulation = fmi2False;
    info->nominalsOfContinuousStatesChanged = fmi2False;
    info->valuesOfContinuousStatesChanged = changed ? fmi2True : fmi2False;
    info->nextEventTimeDefined = fmi2False;
    info->nextEventTime = 0.0;
    return (fmi2Status)status;
}

fmi2Status fmi2EnterContinuousTimeMode(fmi2Component comp)
{
    Instance *c = instance_of(comp);
    if (!c) return fmi2Error;
    if (!fmu_me_require(c, "fmi2EnterContinuousTimeMode", 1 << EVENT)) return fmi2Error;
    c->mode = CONTINUOUS;
    return fmi2OK;
}

fmi2Status fmi2CompletedIntegratorStep(fmi2Component comp,
                                       fmi2Boolean noSetFMUStatePriorToCurrentPoint,
                                       fmi2Boolean *enterEventMode,
                                       fmi2Boolean *terminateSimulation)
{
    Instance *c = instance_of(comp);
    (void)noSetFMUStatePriorToCurrentPoint;
    if (!c || !enterEventMode || !terminateSimulation) return fmi2Error;
    int event = 0;
    const int status = fmu_me_completed_step(c, &event, "fmi2CompletedIntegratorStep");
    *enterEventMode = event ? fmi2True : fmi2False;
    *terminateSimulation = fmi2False;
    return (fmi2Status)status;
}

fmi2Status fmi2SetTime(fmi2Component comp, fmi2Real time)
{
    Instance *c = instance_of(comp);
    if (!c) return fmi2Error;
    return (fmi2Status)fmu_me_set_time(c, time, "fmi2SetTime");
}

fmi2Status fmi2SetContinuousStates(fmi2Component comp, const fmi2Real x[], size_t nx)
{
    Instance *c = instance_of(comp);
    if (!c) return fmi2Error;
    return (fmi2Status)fmu_me_set_states(c, x, nx, "fmi2SetContinuousStates");
}

fmi2Status fmi2GetDerivatives(fmi2Component comp, fmi2Real derivatives[], size_t nx)
{
    Instance *c = instance_of(comp);
    if (!c) return fmi2Error;
    return (fmi2Status)fmu_me_get_derivatives(c, derivatives, nx, "fmi2GetDerivatives");
}

fmi2Status fmi2GetEventIndicators(fmi2Component comp, fmi2Real eventIndicators[], size_t ni)
{
    Instance *c = instance_of(comp);
    if (!c) return fmi2Error;
    return (fmi2Status)fmu_me_event_indicators(c, eventIndicators, ni, "fmi2GetEventIndicators");
}

fmi2Status fmi2GetContinuousStates(fmi2Component comp, fmi2Real x[], size_t nx)
{
    Instance *c = instance_of(comp);
    if (!c) return fmi2Error;
    return (fmi2Status)fmu_me_get_states(c, x, nx, "fmi2GetContinuousStates");
}

fmi2Status fmi2GetNominalsOfContinuousStates(fmi2Component comp, fmi2Real x_nominal[], size_t nx)
{
    Instance *c = instance_of(comp);
    if (!c) return fmi2Error;
    return (fmi2Status)fmu_me_nominals(c, x_nominal, nx, "fmi2GetNominalsOfContinuousStates");
}
