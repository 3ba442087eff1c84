/* Counts the articulated sweeps of a native FMU's Co-Simulation steps (issue 24: the RK4 step's
 * first stage reuses the factors of the last evaluation, so that it cannot silently go again).
 * Compiled by tests/test_fmu_sweeps.py together with the FMU's sources/ and -DSOA_COUNT_SWEEPS
 * (the core's soa_sweep_counts: [0] passes with the Riccati sweep, [1] filter + smoother alone).
 *
 *   fmu_sweeps_host <resources uri> <guid> <vr_tau0> <nv> <vr_q0> <vr_energy> <steps> <energy>
 *
 * One HIL loop: after a first step, `steps` times setReal(tau, new every step) + doStep(1 ms) +
 * getReal(q, qd, qdd), and with <energy> = 1 also getReal(energy) (which uses the data: the next
 * step cannot reuse the factors).  Prints "sweeps <full> <refilter>" over those steps, then q
 * (17 digits, one per line). */
#include <stdio.h>
#include <stdlib.h>

#include "fmi2Functions.h"
#include "soa.h"

static void logger(fmi2ComponentEnvironment env, fmi2String instance, fmi2Status status,
                   fmi2String category, fmi2String message, ...)
{
    (void)env;
    fprintf(stderr, "[%s|%d|%s] %s\n", instance, status, category ? category : "", message);
}

int main(int argc, char **argv)
{
    if (argc != 9) {
        fprintf(stderr, "usage: fmu_sweeps_host uri guid vr_tau0 nv vr_q0 vr_energy steps energy\n");
        return 2;
    }
    const unsigned vr_tau0 = (unsigned)atoi(argv[3]), vr_q0 = (unsigned)atoi(argv[5]);
    const unsigned vr_energy = (unsigned)atoi(argv[6]);
    const int nv = atoi(argv[4]), steps = atoi(argv[7]), energy = atoi(argv[8]);
    const double h = 1e-3;
    if (nv < 1 || nv > 64) return 2;
    fmi2CallbackFunctions cb = {logger, calloc, free, NULL, NULL};
    fmi2Component c = fmi2Instantiate("sweeps", fmi2CoSimulation, argv[2], argv[1], &cb, fmi2False,
                                      fmi2False);
    if (!c) return 3;
    if (fmi2SetupExperiment(c, fmi2False, 0.0, 0.0, fmi2False, 0.0) > fmi2Warning) return 4;
    if (fmi2EnterInitializationMode(c) > fmi2Warning || fmi2ExitInitializationMode(c) > fmi2Warning)
        return 5;
    fmi2ValueReference vr_tau[64], vr_out[3 * 64];
    double tau[64], out[3 * 64], e;
    for (int i = 0; i < nv; i++) vr_tau[i] = vr_tau0 + (unsigned)i;
    for (int i = 0; i < 3 * nv; i++) vr_out[i] = vr_q0 + (unsigned)i;    /* q, qd, qdd */
    if (fmi2DoStep(c, 0.0, h, fmi2True) != fmi2OK) return 6;
    if (energy && fmi2GetReal(c, &vr_energy, 1, &e) != fmi2OK) return 10;
    const long full0 = soa_sweep_counts[0], refilter0 = soa_sweep_counts[1];
    for (int k = 1; k <= steps; k++) {
        for (int i = 0; i < nv; i++) tau[i] = 0.5 * ((k + i) % 5) - 1.0;
        if (fmi2SetReal(c, vr_tau, (size_t)nv, tau) != fmi2OK) return 7;
        if (fmi2DoStep(c, k * h, h, fmi2True) != fmi2OK) return 8;
        if (fmi2GetReal(c, vr_out, (size_t)(3 * nv), out) != fmi2OK) return 9;
        if (energy && fmi2GetReal(c, &vr_energy, 1, &e) != fmi2OK) return 10;
    }
    printf("sweeps %ld %ld\n", soa_sweep_counts[0] - full0, soa_sweep_counts[1] - refilter0);
    for (int i = 0; i < nv; i++) printf("%.17g\n", out[i]);
    fmi2Terminate(c);
    fmi2FreeInstance(c);
    return 0;
}
