/* A hostile FMI 3.0 master for the native FMU (the FMI 2.0 one is fmu_fuzz_host.c): random call
 * sequences with random and hostile arguments -- NaN, Inf, huge values, value references inside
 * arrays or out of range, value counts that do not match the arrays, every function in every
 * state on a Co-Simulation or a Model Exchange instance, random bytes and corrupted real states as
 * serialized FMU states, wrong state counts.  Built with the FMU's sources under
 * -fsanitize=address,undefined by tests/test_fmu_native_fuzz.py.
 *
 *   fmu3_fuzz_host <token> <seed> <iterations> <cs|me> <nx> <vr:n,vr:n,...>
 *
 * (the last argument: the Float64 variables, value reference and number of values). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmi3Functions.h"
#include "fuzz_random.h"

static long messages;
static void logger(fmi3InstanceEnvironment env, fmi3Status status, fmi3String category,
                   fmi3String message)
{
    (void)env; (void)status; (void)category;
    if (message && message[0]) messages++;
}

#define MAXV 512

int main(int argc, char **argv)
{
    if (argc != 7) return 2;
    const char *token = argv[1];
    state ^= strtoull(argv[2], NULL, 10) * 2654435761ull;
    const int iterations = atoi(argv[3]), me = strcmp(argv[4], "me") == 0, nx = atoi(argv[5]);
    unsigned arr_vr[256];
    int arr_n[256], narr = 0;
    for (char *p = argv[6]; *p && narr < 256;) {
        char *end;
        arr_vr[narr] = (unsigned)strtoul(p, &end, 10);
        if (*end != ':') return 2;
        arr_n[narr++] = (int)strtol(end + 1, &end, 10);
        p = *end == ',' ? end + 1 : end;
    }
    if (nx < 0 || nx > MAXV || narr == 0) return 2;
    if (fmi3InstantiateCoSimulation("x", "{wrong}", "", 0, 0, 0, 0, NULL, 0, NULL, logger, NULL))
        return 3;
    if (fmi3InstantiateScheduledExecution("x", token, "", 0, 0, NULL, logger, NULL, NULL, NULL))
        return 3;
    fmi3Instance c = me ? fmi3InstantiateModelExchange("fuzz", token, "", 0, 1, NULL, logger)
                        : fmi3InstantiateCoSimulation("fuzz", token, "", 0, 1, below(2), 0, NULL,
                                                      0, NULL, logger, NULL);
    if (!c) return 4;
    fmi3FMUState saved = NULL;
    double t = 0.0, next = 0.0, x[MAXV] = {0}, dx[MAXV], v[MAXV] = {0}, out[MAXV];
    fmi3ValueReference vr[8];
    fmi3Boolean b[16], f1, f2, f3, f4, f5, f6;
    fmi3String s[16];
    unsigned char bytes[4096];
    for (int it = 0; it < iterations; it++) {
        /* a request: mostly real arrays with their counts, sometimes anything */
        const int n = 1 + below(4);
        size_t nvalues = 0;
        for (int i = 0; i < n; i++) {
            const int a = below(narr);
            vr[i] = below(8) ? arr_vr[a] : (fmi3ValueReference)(below(5) ? below(MAXV) : (int)rnd());
            nvalues += below(8) ? (size_t)arr_n[a] : (size_t)below(3);
        }
        if (nvalues > MAXV) nvalues = MAXV;
        for (size_t i = 0; i < nvalues; i++) v[i] = below(3) ? hostile_real() : 0.1 * (double)i;
        for (int i = 0; i < 16; i++) b[i] = below(2);
        const size_t m = below(6) ? (size_t)nx : (size_t)below(nx + 3);
        switch (below(30)) {
        case 0: fmi3SetFloat64(c, vr, (size_t)n, v, nvalues); break;
        case 1: fmi3GetFloat64(c, vr, (size_t)n, out, nvalues); break;
        case 2: {
            fmi3Boolean ev, term, early;
            double last;
            fmi3DoStep(c, t, below(8) ? 1e-3 : hostile_real(), 1, &ev, &term, &early, &last);
            t += 1e-3;
            break;
        }
        case 3: fmi3SetBoolean(c, vr, (size_t)n, b, (size_t)below(5)); break;
        case 4: fmi3GetBoolean(c, vr, (size_t)n, b, (size_t)below(5)); break;
        case 5: {
            static const char *const names[] = {"rk4", "euler", "dop853", "", "leapfrog"};
            for (int i = 0; i < 4; i++) s[i] = names[below(5)];
            fmi3SetString(c, vr, 1, s, 1);
            break;
        }
        case 6: fmi3GetString(c, vr, (size_t)n, s, (size_t)below(5)); break;
        case 7: fmi3EnterInitializationMode(c, 0, 0.0, below(3) ? 0.0 : hostile_real(), 0, 0.0);
            break;
        case 8: fmi3ExitInitializationMode(c); break;
        case 9: if (below(4) == 0) fmi3Terminate(c); break;
        case 10: fmi3Reset(c); t = 0.0; break;
        case 11:
            if (saved) fmi3FreeFMUState(c, &saved);
            fmi3GetFMUState(c, &saved);
            break;
        case 12: if (saved) fmi3SetFMUState(c, saved); break;
        case 13: {           /* random bytes, and a real state truncated or with one bit flipped */
            size_t size = (size_t)below(sizeof bytes);
            for (size_t i = 0; i < size; i++) bytes[i] = (unsigned char)rnd();
            fmi3FMUState st = NULL;
            if (saved && below(2)) {
                size_t full = 0;
                fmi3SerializedFMUStateSize(c, saved, &full);
                unsigned char *buf = malloc(full + 1);
                if (buf && fmi3SerializeFMUState(c, saved, buf, full) == fmi3OK) {
                    size = below(3) ? full : (size_t)below((int)full);
                    if (size == full && full) buf[below((int)full)] ^= (unsigned char)(1u << below(8));
                    if (fmi3DeserializeFMUState(c, buf, size, &st) == fmi3OK) {
                        fmi3SetFMUState(c, st);
                        fmi3FreeFMUState(c, &st);
                    }
                }
                free(buf);
                break;
            }
            if (fmi3DeserializeFMUState(c, bytes, size, &st) == fmi3OK) {
                fmi3SetFMUState(c, st);
                fmi3FreeFMUState(c, &st);
            }
            break;
        }
        case 14: {
            const fmi3ValueReference known[2] = {vr[0], arr_vr[below(narr)]};
            const size_t nk = (size_t)below(2 * MAXV / 4);
            fmi3GetDirectionalDerivative(c, vr, (size_t)n, known, 2, v, nk, out, nvalues);
            break;
        }
        case 15: {
            const fmi3ValueReference known[1] = {arr_vr[below(narr)]};
            fmi3GetAdjointDerivative(c, vr, (size_t)n, known, 1, v, nvalues, out,
                                     (size_t)below(MAXV / 4));
            break;
        }
        case 16: {
            int32_t iv[4];
            fmi3GetInt32(c, vr, (size_t)below(2), iv, (size_t)below(2));
            fmi3SetFloat32(c, vr, (size_t)below(2), (const float *)v, 1);
            fmi3GetClock(c, vr, (size_t)below(2), b);
            break;
        }
        case 17: fmi3SetDebugLogging(c, below(2), 0, NULL); break;
        case 18: fmi3EnterEventMode(c); break;
        case 19: fmi3UpdateDiscreteStates(c, &f1, &f2, &f3, &f4, &f5, &next); break;
        case 20: fmi3EnterContinuousTimeMode(c); break;
        case 21: fmi3CompletedIntegratorStep(c, 1, &f1, &f2); break;
        case 22: fmi3SetTime(c, below(4) ? t : hostile_real()); break;
        case 23:
            for (size_t i = 0; i < m; i++) x[i] = below(6) ? x[i] * 1.01 + 1e-3 : hostile_real();
            fmi3SetContinuousStates(c, x, m);
            break;
        case 24: fmi3GetContinuousStateDerivatives(c, dx, m); break;
        case 25: fmi3GetContinuousStates(c, x, m); break;
        case 26: {
            size_t k;
            fmi3GetNominalsOfContinuousStates(c, dx, m);
            fmi3GetEventIndicators(c, dx, (size_t)below(2));
            fmi3GetNumberOfContinuousStates(c, &k);
            fmi3EnterStepMode(c);
            break;
        }
        case 27: {            /* a normal Co-Simulation episode */
            fmi3Boolean ev, term, early;
            double last;
            fmi3Reset(c);
            fmi3EnterInitializationMode(c, 0, 0.0, 0.0, 0, 0.0);
            fmi3ExitInitializationMode(c);
            fmi3EnterStepMode(c);
            t = 0.0;
            for (int k = 0; k < 5; k++, t += 1e-3) fmi3DoStep(c, t, 1e-3, 1, &ev, &term, &early, &last);
            break;
        }
        default: {            /* a normal Model Exchange episode: explicit Euler with events */
            fmi3Reset(c);
            fmi3EnterInitializationMode(c, 0, 0.0, 0.0, 0, 0.0);
            fmi3ExitInitializationMode(c);
            fmi3UpdateDiscreteStates(c, &f1, &f2, &f3, &f4, &f5, &next);
            fmi3EnterContinuousTimeMode(c);
            t = 0.0;
            for (int k = 0; k < 5; k++) {
                if (fmi3GetContinuousStates(c, x, (size_t)nx) != fmi3OK
                    || fmi3GetContinuousStateDerivatives(c, dx, (size_t)nx) != fmi3OK)
                    break;
                for (int i = 0; i < nx; i++) x[i] += 1e-3 * dx[i];
                t += 1e-3;
                fmi3SetTime(c, t);
                fmi3SetContinuousStates(c, x, (size_t)nx);
                fmi3CompletedIntegratorStep(c, 1, &f1, &f6);
                if (f1) {
                    fmi3EnterEventMode(c);
                    fmi3UpdateDiscreteStates(c, &f1, &f2, &f3, &f4, &f5, &next);
                    fmi3EnterContinuousTimeMode(c);
                }
            }
        }
        }
    }
    if (saved) fmi3FreeFMUState(c, &saved);
    fmi3FreeInstance(c);
    printf("ok %ld messages\n", messages);
    return 0;
}
