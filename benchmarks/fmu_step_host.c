/* Real-time timing of a native FMU in a C host (SPEC sec. 6): the role of a HIL rig's 1 kHz loop.
 *
 *   fmu_step_host <unzip dir> <identifier> <guid> <h> <steps> <vr_tau0> <nv> <vr_q0> <nout>
 *                 [<vr_integrator> <integrator>]
 *
 * (the optional pair sets the String parameter `integrator` before initialization: rk4, euler,
 * implicit, ...)
 * Instantiates the FMU (dlopen), initializes it, takes 1000 warm-up steps, then times
 * `steps` iterations of setReal(tau) + doStep(h) + getReal(q, qd, qdd) with CLOCK_MONOTONIC and
 * counts the heap allocations made during them (malloc/calloc/realloc are interposed here; link
 * with -rdynamic so the FMU's calls resolve to them).  The machine's own floor: a pure-C loop of
 * arithmetic calibrated to the same median, timed the same way, as many times — what a shared
 * machine does to any computation of that length (its p99.9 and worst are the noise the FMU's
 * are compared with).  Prints one JSON line:
 *   {"median": s, "p99": s, "p999": s, "worst": s, "floor_median": s, "floor_p999": s,
 *    "floor_worst": s, "allocations": n, "instantiate_init": s}
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>

/* ------------------------------------------------------------------ allocation counter */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
static volatile int counting;
static volatile long allocations;

void *malloc(size_t n)
{
    if (counting) allocations++;
    return __libc_malloc(n);
}
void *calloc(size_t n, size_t s)
{
    if (counting) allocations++;
    return __libc_calloc(n, s);
}
void *realloc(void *p, size_t n)
{
    if (counting) allocations++;
    return __libc_realloc(p, n);
}

/* ------------------------------------------------------------------ FMI 2.0 (the types used) */
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

static void logger(void *env, const char *instance, fmi2Status status, const char *category,
                   const char *message, ...)
{
    (void)env;
    fprintf(stderr, "[%s|%d|%s] %s\n", instance, status, category ? category : "", message);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A pure-C computation of about `iters` dependent multiply-adds (the floor's work). */
static volatile double sink;
__attribute__((noinline)) static double busy(long iters)
{
    volatile double x = 1.0;
    double y = x;
    for (long i = 0; i < iters; i++) y = y * 0.999999 + 1e-9;
    return y;
}

static double pct(const double *sorted, int n, double p)
{
    int i = (int)(p * (n - 1) + 0.5);
    return sorted[i < 0 ? 0 : (i >= n ? n - 1 : i)];
}

typedef fmi2Component (*Instantiate)(const char *, int, const char *, const char *,
                                     const fmi2CallbackFunctions *, int, int);
typedef fmi2Status (*Setup)(fmi2Component, int, double, double, int, double);
typedef fmi2Status (*Call)(fmi2Component);
typedef fmi2Status (*SetReal)(fmi2Component, const fmi2ValueReference *, size_t, const double *);
typedef fmi2Status (*GetReal)(fmi2Component, const fmi2ValueReference *, size_t, double *);
typedef fmi2Status (*DoStep)(fmi2Component, double, double, int);
typedef fmi2Status (*SetString)(fmi2Component, const fmi2ValueReference *, size_t,
                                const char *const *);
typedef void (*FreeInstance)(fmi2Component);

#define LOAD(var, type, name) type var = (type)dlsym(lib, name); \
    if (!var) { fprintf(stderr, "missing %s\n", name); return 2; }

int main(int argc, char **argv)
{
    if (argc != 10 && argc != 12) {
        fprintf(stderr, "usage: fmu_step_host dir identifier guid h steps vr_tau0 nv vr_q0 nout "
                "[vr_integrator integrator]\n");
        return 2;
    }
    const char *dir = argv[1], *ident = argv[2], *guid = argv[3];
    const double h = atof(argv[4]);
    const int steps = atoi(argv[5]), nv = atoi(argv[7]), nout = atoi(argv[9]);
    const unsigned vr_tau0 = (unsigned)atoi(argv[6]), vr_q0 = (unsigned)atoi(argv[8]);
    if (steps < 10 || nv < 1 || nv > 64 || nout < 1 || nout > 256) return 2;
    char path[4096], uri[4096];
    snprintf(path, sizeof path, "%s/binaries/linux64/%s.so", dir, ident);
    snprintf(uri, sizeof uri, "file://%s/resources", dir);
    const double t0 = now();
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 2; }
    LOAD(inst, Instantiate, "fmi2Instantiate")
    LOAD(setup, Setup, "fmi2SetupExperiment")
    LOAD(enter, Call, "fmi2EnterInitializationMode")
    LOAD(leave, Call, "fmi2ExitInitializationMode")
    LOAD(setr, SetReal, "fmi2SetReal")
    LOAD(getr, GetReal, "fmi2GetReal")
    LOAD(step, DoStep, "fmi2DoStep")
    LOAD(freei, FreeInstance, "fmi2FreeInstance")
    LOAD(sets, SetString, "fmi2SetString")

    fmi2CallbackFunctions cb = {logger, calloc, free, NULL, NULL};
    fmi2Component c = inst("timing", 1, guid, uri, &cb, 0, 0);
    if (!c) return 3;
    if (argc == 12) {
        const fmi2ValueReference vi = (fmi2ValueReference)atoi(argv[10]);
        const char *name = argv[11];
        if (sets(c, &vi, 1, &name) > 1) return 4;
    }
    if (setup(c, 0, 0.0, 0.0, 0, 0.0) > 1 || enter(c) > 1 || leave(c) > 1) return 4;
    const double t1 = now();

    fmi2ValueReference vt[64], vo[256];
    double tau[64], out[256];
    for (int i = 0; i < nv; i++) vt[i] = vr_tau0 + (unsigned)i;
    for (int i = 0; i < nout; i++) vo[i] = vr_q0 + (unsigned)i;
    double *dt = malloc(sizeof(double) * (size_t)steps), *fl = malloc(sizeof(double) * (size_t)steps);
    if (!dt || !fl) return 5;
    double t = 0.0;
    for (int k = -1000; k < steps; k++) {
        if (k == 0) counting = 1;
        for (int i = 0; i < nv; i++) tau[i] = 0.2 * sin(0.01 * k + i);   /* new every step */
        const double a = now();
        if (setr(c, vt, (size_t)nv, tau) > 1 || step(c, t, h, 1) > 1
            || getr(c, vo, (size_t)nout, out) > 1) {
            fprintf(stderr, "step %d failed\n", k);
            return 6;
        }
        const double b = now();
        if (k >= 0) dt[k] = b - a;
        t += h;
    }
    counting = 0;
    qsort(dt, (size_t)steps, sizeof(double), cmp);
    const double median = pct(dt, steps, 0.5);
    long iters = 1000;                       /* calibrate the floor's work to the FMU's median */
    for (int round = 0; round < 20; round++) {
        double probe[31];
        for (int r = 0; r < 31; r++) {
            const double a = now();
            sink += busy(iters);
            probe[r] = now() - a;
        }
        qsort(probe, 31, sizeof(double), cmp);
        double ratio = median / (probe[15] > 1e-9 ? probe[15] : 1e-9);
        if (ratio > 0.97 && ratio < 1.03) break;
        ratio = ratio > 100.0 ? 100.0 : ratio;
        iters = (long)(iters * ratio) + 1;
    }
    for (int k = 0; k < steps; k++) {
        const double a = now();
        sink += busy(iters);
        const double b = now();
        fl[k] = b - a;
    }
    qsort(fl, (size_t)steps, sizeof(double), cmp);
    printf("{\"median\": %.9g, \"p99\": %.9g, \"p999\": %.9g, \"worst\": %.9g, "
           "\"floor_median\": %.9g, \"floor_p999\": %.9g, \"floor_worst\": %.9g, "
           "\"allocations\": %ld, \"instantiate_init\": %.9g, \"check\": %.17g}\n",
           pct(dt, steps, 0.5), pct(dt, steps, 0.99), pct(dt, steps, 0.999), dt[steps - 1],
           pct(fl, steps, 0.5), pct(fl, steps, 0.999), fl[steps - 1], allocations, t1 - t0, out[0]);
    freei(c);
    free(dt);
    free(fl);
    return 0;
}
