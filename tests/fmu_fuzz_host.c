/* A hostile FMI 2.0 master for the native FMU: random call sequences with random and hostile
 * arguments (NaN, Inf, huge values, invalid value references, every function in every state --
 * Co-Simulation and Model Exchange ones on either kind of instance --, random bytes as serialized
 * states, truncated and bit-flipped real states, wrong state counts).  Built together with the
 * FMU's sources under -fsanitize=address,undefined by tests/test_fmu_native_fuzz.py; any memory
 * error or undefined behaviour aborts the process.
 *
 *   fmu_fuzz_host <guid> <seed> <iterations> <nreal> <nbool> <nvars> <cs|me> <nx>
 *
 * The FMU's functions are linked in directly (no dlopen), so the sanitizers see every access. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmi2Functions.h"
#include "fuzz_random.h"

static long messages;
static void logger(fmi2ComponentEnvironment env, fmi2String instance, fmi2Status status,
                   fmi2String category, fmi2String message, ...)
{
    (void)env; (void)instance; (void)status; (void)category;
    if (message && message[0]) messages++;
}

int main(int argc, char **argv)
{
    if (argc != 9) return 2;
    const char *guid = argv[1];
    state ^= strtoull(argv[2], NULL, 10) * 2654435761ull;
    const int iterations = atoi(argv[3]), nreal = atoi(argv[4]), nbool = atoi(argv[5]),
              nvars = atoi(argv[6]), me = strcmp(argv[7], "me") == 0, nx = atoi(argv[8]);
    if (nx < 0 || nx > 500) return 2;
    const fmi2CallbackFunctions cb = {logger, calloc, free, NULL, NULL};
    if (fmi2Instantiate("x", (fmi2Type)7, guid, "", &cb, 0, 0) != NULL) return 3;
    if (fmi2Instantiate("x", fmi2CoSimulation, "{wrong}", "", &cb, 0, 0) != NULL) return 3;
    fmi2Component c = fmi2Instantiate("fuzz", me ? fmi2ModelExchange : fmi2CoSimulation, guid,
                                      "", &cb, 0, 1);
    if (!c) return 4;
    double x[512], dx[512];
    fmi2EventInfo info;
    fmi2Boolean enter, stop;
    fmi2FMUstate saved = NULL;
    double t = 0.0;
    fmi2ValueReference vr[16];
    double v[16], out[16];
    fmi2Boolean b[16];
    fmi2String s[16];
    unsigned char bytes[4096];
    for (int it = 0; it < iterations; it++) {
        const int n = 1 + below(8);
        for (int i = 0; i < n; i++) {
            vr[i] = below(20) == 0 ? (fmi2ValueReference)rnd() : (fmi2ValueReference)below(nvars + 3);
            v[i] = hostile_real();
            b[i] = below(2);
        }
        const size_t m = below(6) ? (size_t)nx : (size_t)below(nx + 3);   /* a wrong count too */
        switch (below(33)) {
        case 0: fmi2SetReal(c, vr, (size_t)n, v); break;
        case 1: fmi2GetReal(c, vr, (size_t)n, out); break;
        case 2: fmi2DoStep(c, t, below(8) ? 1e-3 : hostile_real(), fmi2True); t += 1e-3; break;
        case 3: fmi2SetBoolean(c, vr, (size_t)n, b); break;
        case 4: fmi2GetBoolean(c, vr, (size_t)n, b); break;
        case 5: {
            static const char *const names[] = {"rk4", "euler", "dop853", "", "leapfrog"};
            for (int i = 0; i < n; i++) s[i] = names[below(5)];
            fmi2SetString(c, vr, (size_t)n, s);
            break;
        }
        case 6: fmi2GetString(c, vr, (size_t)n, s); break;
        case 7: fmi2SetupExperiment(c, fmi2False, 0.0, hostile_real(), fmi2False, 0.0); break;
        case 8: fmi2EnterInitializationMode(c); break;
        case 9: fmi2ExitInitializationMode(c); break;
        case 10: if (below(4) == 0) fmi2Terminate(c); break;
        case 11: fmi2Reset(c); t = 0.0; break;
        case 12:
            if (saved) fmi2FreeFMUstate(c, &saved);
            fmi2GetFMUstate(c, &saved);
            break;
        case 13: if (saved) fmi2SetFMUstate(c, saved); break;
        case 14: {           /* random bytes, and a real state truncated or with one bit flipped */
            size_t size = (size_t)below(sizeof bytes);
            for (size_t i = 0; i < size; i++) bytes[i] = (unsigned char)rnd();
            if (saved && below(2)) {
                size_t full = 0;
                fmi2SerializedFMUstateSize(c, saved, &full);
                unsigned char *buf = malloc(full + 1);
                if (buf && fmi2SerializeFMUstate(c, saved, (fmi2Byte *)buf, full) == fmi2OK) {
                    size = below(3) ? full : (size_t)below((int)full);
                    if (size == full && full) buf[below((int)full)] ^= (unsigned char)(1u << below(8));
                    fmi2FMUstate st = NULL;
                    if (fmi2DeSerializeFMUstate(c, (fmi2Byte *)buf, size, &st) == fmi2OK) {
                        fmi2SetFMUstate(c, st);
                        fmi2FreeFMUstate(c, &st);
                    }
                }
                free(buf);
                break;
            }
            fmi2FMUstate st = NULL;
            if (fmi2DeSerializeFMUstate(c, (fmi2Byte *)bytes, size, &st) == fmi2OK) {
                fmi2SetFMUstate(c, st);
                fmi2FreeFMUstate(c, &st);
            }
            break;
        }
        case 15: {
            fmi2ValueReference known[4] = {(fmi2ValueReference)below(nreal + 2),
                                           (fmi2ValueReference)below(nreal + 2), 0, 0};
            fmi2GetDirectionalDerivative(c, vr, (size_t)n, known, 2, v, out);
            break;
        }
        /* ---- Model Exchange (refused on a Co-Simulation instance) */
        case 22: fmi2EnterEventMode(c); break;
        case 23: fmi2NewDiscreteStates(c, &info); break;
        case 24: fmi2EnterContinuousTimeMode(c); break;
        case 25: fmi2CompletedIntegratorStep(c, fmi2True, &enter, &stop); break;
        case 26: fmi2SetTime(c, below(4) ? t : hostile_real()); break;
        case 27:
            for (size_t i = 0; i < m; i++) x[i] = below(6) ? x[i] * 1.01 + 1e-3 : hostile_real();
            fmi2SetContinuousStates(c, x, m);
            break;
        case 28: fmi2GetDerivatives(c, dx, m); break;
        case 29: fmi2GetContinuousStates(c, x, m); break;
        case 30: fmi2GetNominalsOfContinuousStates(c, dx, m); fmi2GetEventIndicators(c, dx, below(2)); break;
        case 31: {            /* derivatives with respect to states */
            fmi2ValueReference known[3] = {(fmi2ValueReference)below(nreal),
                                           (fmi2ValueReference)below(nreal),
                                           (fmi2ValueReference)below(nreal)};
            fmi2GetDirectionalDerivative(c, vr, (size_t)n, known, 3, v, out);
            break;
        }
        case 32: {            /* a normal Model Exchange episode: explicit Euler with events */
            fmi2Reset(c);
            fmi2SetupExperiment(c, fmi2False, 0.0, 0.0, fmi2False, 0.0);
            fmi2EnterInitializationMode(c);
            fmi2ExitInitializationMode(c);
            fmi2NewDiscreteStates(c, &info);
            fmi2EnterContinuousTimeMode(c);
            t = 0.0;
            for (int k = 0; k < 5 && nx <= 500; k++) {
                if (fmi2GetContinuousStates(c, x, (size_t)nx) != fmi2OK
                    || fmi2GetDerivatives(c, dx, (size_t)nx) != fmi2OK)
                    break;
                for (int i = 0; i < nx; i++) x[i] += 1e-3 * dx[i];
                t += 1e-3;
                fmi2SetTime(c, t);
                fmi2SetContinuousStates(c, x, (size_t)nx);
                fmi2CompletedIntegratorStep(c, fmi2True, &enter, &stop);
                if (enter) {
                    fmi2EnterEventMode(c);
                    fmi2NewDiscreteStates(c, &info);
                    fmi2EnterContinuousTimeMode(c);
                }
            }
            break;
        }
        case 16: fmi2SetInteger(c, vr, (size_t)n, (const fmi2Integer *)b); break;
        case 17: fmi2GetInteger(c, vr, (size_t)n, (fmi2Integer *)b); break;
        case 18: fmi2SetDebugLogging(c, below(2), 0, NULL); break;
        case 19: { fmi2Real r; fmi2GetRealStatus(c, fmi2LastSuccessfulTime, &r); break; }
        case 20: fmi2SetReal(c, vr, 0, NULL); fmi2GetReal(c, vr, 0, NULL); break;
        default: {          /* a normal episode: initialize and step with plausible inputs */
            fmi2Reset(c);
            fmi2SetupExperiment(c, fmi2False, 0.0, 0.0, fmi2False, 0.0);
            fmi2EnterInitializationMode(c);
            fmi2ExitInitializationMode(c);
            t = 0.0;
            for (int k = 0; k < 5; k++) {
                fmi2DoStep(c, t, 1e-3, fmi2True);
                t += 1e-3;
            }
        }
        }
    }
    if (saved) fmi2FreeFMUstate(c, &saved);
    fmi2FreeInstance(c);
    (void)nbool;
    printf("ok %ld messages\n", messages);
    return 0;
}
