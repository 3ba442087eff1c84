/* A minimal non-Python FMI 2.0 co-simulation host (the role OMSimulator or a Simulink-style
 * master plays): loads an extracted FMU's binary and drives one instance.
 *
 *   fmu_host <unzip dir> <model identifier> <steps> <h> <tau> <n_tau> <vr_tau0> <n_q> <vr_q0> <guid>
 *
 * Sets tau[1..n_tau] (value references vr_tau0 ...) to <tau>, takes <steps> steps of size <h>,
 * then prints q[1..n_q] (references vr_q0 ...) one per line with 17 digits.  Exit status 0 on
 * success; the FMU's log goes to stderr.  Built and run by tests/test_fmu_runtime.py: a native
 * FMU as it is, a pythonfmu FMU with LD_PRELOAD=libpython3.11.so (pythonfmu's binary does not
 * link libpython itself).  The same file is the host of the other platforms' binaries
 * (tests/test_fmu_platforms.py): built by zig cc for x86_64-windows (LoadLibrary, run under wine)
 * and, with -DFMU_PLATFORM='"aarch64-linux"', for aarch64 Linux (run under qemu-user).
 *
 * With -DFMI3 the same host drives an FMI 3.0 FMU's binary (binaries/<platform tuple>/): tau and q
 * are then one array variable each (<vr_tau0>, <n_tau> values; <vr_q0>, <n_q> values) and <guid>
 * is the instantiation token.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _WIN32
#include <windows.h>
#ifdef FMI3
#define FMU_BINARY "%s/binaries/x86_64-windows/%s.dll"
#else
#define FMU_BINARY "%s/binaries/win64/%s.dll"
#endif
#define dlsym(lib, name) ((void *)GetProcAddress((HMODULE)(lib), (name)))
#else
#include <dlfcn.h>
#ifndef FMU_PLATFORM
#ifdef FMI3
#define FMU_PLATFORM "x86_64-linux"
#else
#define FMU_PLATFORM "linux64"
#endif
#endif
#define FMU_BINARY "%s/binaries/" FMU_PLATFORM "/%s.so"
#endif

#ifdef FMI3
/* The FMI 3.0 functions this host calls (fmi3FunctionTypes.h), Co-Simulation. */
typedef void *fmi3Instance;
typedef unsigned int fmi3ValueReference;
typedef int fmi3Status;
typedef int fmi3Boolean;
typedef void (*fmi3LogMessageCallback)(void *, fmi3Status, const char *, const char *);
typedef fmi3Instance (*fmi3InstantiateCoSimulation_t)(const char *, const char *, const char *,
    fmi3Boolean, fmi3Boolean, fmi3Boolean, fmi3Boolean, const fmi3ValueReference *, size_t, void *,
    fmi3LogMessageCallback, void *);
typedef fmi3Status (*fmi3EnterInitializationMode_t)(fmi3Instance, fmi3Boolean, double, double,
                                                    fmi3Boolean, double);
typedef fmi3Status (*fmi3ExitInitializationMode_t)(fmi3Instance);
typedef fmi3Status (*fmi3SetFloat64_t)(fmi3Instance, const fmi3ValueReference *, size_t,
                                       const double *, size_t);
typedef fmi3Status (*fmi3GetFloat64_t)(fmi3Instance, const fmi3ValueReference *, size_t, double *,
                                       size_t);
typedef fmi3Status (*fmi3DoStep_t)(fmi3Instance, double, double, fmi3Boolean, fmi3Boolean *,
                                   fmi3Boolean *, fmi3Boolean *, double *);
typedef fmi3Status (*fmi3Terminate_t)(fmi3Instance);
typedef void (*fmi3FreeInstance_t)(fmi3Instance);

static void logger3(void *env, fmi3Status status, const char *category, const char *message) {
    (void)env;
    fprintf(stderr, "[%d|%s] %s\n", status, category ? category : "", message);
}
#endif

typedef void *fmi2Component;
typedef unsigned int fmi2ValueReference;
typedef int fmi2Status;
typedef struct {
    void (*logger)(void *, const char *, fmi2Status, const char *, const char *, ...);
    void *(*allocateMemory)(size_t, size_t);
    void (*freeMemory)(void *);
    void (*stepFinished)(void *, fmi2Status);
    void *componentEnvironment;
} fmi2CallbackFunctions;

#ifndef FMI3
static void logger(void *env, const char *instance, fmi2Status status, const char *category,
                   const char *message, ...) {
    (void)env;
    /* the message is passed through, not used as a format (it may contain '%') */
    fprintf(stderr, "[%s|%d|%s] %s\n", instance, status, category ? category : "", message);
}
#endif

#define LOAD(name) name##_t name = (name##_t)dlsym(lib, #name); \
    if (!name) { fprintf(stderr, "missing %s\n", #name); return 2; }

typedef fmi2Component (*fmi2Instantiate_t)(const char *, int, const char *, const char *,
                                            const fmi2CallbackFunctions *, int, int);
typedef fmi2Status (*fmi2SetupExperiment_t)(fmi2Component, int, double, double, int, double);
typedef fmi2Status (*fmi2EnterInitializationMode_t)(fmi2Component);
typedef fmi2Status (*fmi2ExitInitializationMode_t)(fmi2Component);
typedef fmi2Status (*fmi2SetReal_t)(fmi2Component, const fmi2ValueReference *, size_t,
                                    const double *);
typedef fmi2Status (*fmi2GetReal_t)(fmi2Component, const fmi2ValueReference *, size_t, double *);
typedef fmi2Status (*fmi2DoStep_t)(fmi2Component, double, double, int);
typedef fmi2Status (*fmi2Terminate_t)(fmi2Component);
typedef void (*fmi2FreeInstance_t)(fmi2Component);

int main(int argc, char **argv) {
    if (argc != 11) {
        fprintf(stderr, "usage: fmu_host dir identifier steps h tau n_tau vr_tau0 n_q vr_q0 guid\n");
        return 2;
    }
    const char *dir = argv[1], *ident = argv[2];
    int steps = atoi(argv[3]), n_tau = atoi(argv[6]), n_q = atoi(argv[8]);
    double h = atof(argv[4]), tau = atof(argv[5]);
    unsigned vr_tau0 = (unsigned)atoi(argv[7]), vr_q0 = (unsigned)atoi(argv[9]);
    char path[4096], uri[4096];
    snprintf(path, sizeof path, FMU_BINARY, dir, ident);
    snprintf(uri, sizeof uri, "file://%s/resources", dir);
#ifdef _WIN32
    void *lib = (void *)LoadLibraryA(path);
    if (!lib) { fprintf(stderr, "LoadLibrary %s: error %lu\n", path, GetLastError()); return 2; }
#else
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 2; }
#endif
#ifdef FMI3
    LOAD(fmi3InstantiateCoSimulation) LOAD(fmi3EnterInitializationMode)
    LOAD(fmi3ExitInitializationMode) LOAD(fmi3SetFloat64) LOAD(fmi3GetFloat64) LOAD(fmi3DoStep)
    LOAD(fmi3Terminate) LOAD(fmi3FreeInstance)
    if (n_tau > 64 || n_q > 64) return 2;
    snprintf(uri, sizeof uri, "%s/resources/", dir);         /* FMI 3.0: a path, not a URI */
    fmi3Instance c = fmi3InstantiateCoSimulation("c_host", argv[10], uri, 0, 1, 0, 0, NULL, 0,
                                                 NULL, logger3, NULL);
    if (!c) { fprintf(stderr, "fmi3InstantiateCoSimulation failed\n"); return 3; }
    if (fmi3EnterInitializationMode(c, 0, 0.0, 0.0, 0, 0.0) > 1) return 5;
    if (fmi3ExitInitializationMode(c) > 1) return 5;
    fmi3ValueReference vr = vr_tau0;
    double v[64];
    for (int i = 0; i < n_tau; i++) v[i] = tau;
    if (n_tau && fmi3SetFloat64(c, &vr, 1, v, (size_t)n_tau) > 1) return 6;
    for (int k = 0; k < steps; k++) {
        fmi3Boolean event, terminate, early;
        double last;
        if (fmi3DoStep(c, k * h, h, 1, &event, &terminate, &early, &last) > 1) {
            fprintf(stderr, "doStep %d failed\n", k);
            return 7;
        }
    }
    vr = vr_q0;
    if (fmi3GetFloat64(c, &vr, 1, v, (size_t)n_q) > 1) return 8;
    for (int i = 0; i < n_q; i++) printf("%.17g\n", v[i]);
    fmi3Terminate(c);
    fmi3FreeInstance(c);
    return 0;
#else
    LOAD(fmi2Instantiate) LOAD(fmi2SetupExperiment) LOAD(fmi2EnterInitializationMode)
    LOAD(fmi2ExitInitializationMode) LOAD(fmi2SetReal) LOAD(fmi2GetReal) LOAD(fmi2DoStep)
    LOAD(fmi2Terminate) LOAD(fmi2FreeInstance)

    fmi2CallbackFunctions cb = {logger, calloc, free, NULL, NULL};
    fmi2Component c = fmi2Instantiate("c_host", 1, argv[10], uri, &cb, 0, 1);
    if (!c) { fprintf(stderr, "fmi2Instantiate failed\n"); return 3; }
    if (fmi2SetupExperiment(c, 0, 0.0, 0.0, 0, 0.0) > 1) return 4;
    if (fmi2EnterInitializationMode(c) > 1 || fmi2ExitInitializationMode(c) > 1) return 5;
    fmi2ValueReference vr[64];
    double v[64];
    for (int i = 0; i < n_tau; i++) { vr[i] = vr_tau0 + (unsigned)i; v[i] = tau; }
    if (fmi2SetReal(c, vr, (size_t)n_tau, v) > 1) return 6;
    for (int k = 0; k < steps; k++)
        if (fmi2DoStep(c, k * h, h, 1) > 1) { fprintf(stderr, "doStep %d failed\n", k); return 7; }
    for (int i = 0; i < n_q; i++) vr[i] = vr_q0 + (unsigned)i;
    if (fmi2GetReal(c, vr, (size_t)n_q, v) > 1) return 8;
    for (int i = 0; i < n_q; i++) printf("%.17g\n", v[i]);
    fmi2Terminate(c);
    fmi2FreeInstance(c);
    return 0;
#endif
}
