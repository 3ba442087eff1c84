/* The probes of issue 18 kept as a test host: a native FMU driven as a hostile or careless C
 * master would (tests/test_fmu_probes.py builds and runs it).
 *
 *   fmu_probe_host threads <dir> <identifier> <guid> <n_tau> <vr_tau0> <n_q> <vr_q0> <steps>
 *       8 instances stepped by 8 threads at once (each its own torque), then the same 8 runs one
 *       after another: prints "identical" when every final q agrees bit for bit;
 *   fmu_probe_host cycles <dir> <identifier> <guid> <n_tau> <vr_tau0> <n_q> <vr_q0> <count>
 *       count instantiate / initialize / 10 steps / get / set / free-state / free cycles; prints the
 *       resident set (kB) after count/10 cycles and at the end;
 *   fmu_probe_host two <dir> <identifier> <guid> <n_tau> <vr_tau0> <n_q> <vr_q0> <steps>
 *                      <dir2> <identifier2> <guid2> <n_tau2> <vr_tau02> <n_q2> <vr_q02>
 *       two different FMUs loaded in one process, stepped interleaved, then each alone: prints
 *       "identical" when both agree bit for bit with their solo runs.
 *
 * Exit status 0 on success; any FMI call above fmi2Warning fails the run (status 10 + call). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmi2FunctionTypes.h"      /* the FMI 2.0 types (fmpy's copy: -I fmi_headers()) */

static void logger(fmi2ComponentEnvironment env, fmi2String instance, fmi2Status status,
                   fmi2String category, fmi2String message, ...)
{
    (void)env;
    if (status > fmi2Warning) fprintf(stderr, "[%s|%d|%s] %s\n", instance, status, category, message);
}

typedef struct {
    fmi2InstantiateTYPE *instantiate;
    fmi2SetupExperimentTYPE *setup;
    fmi2EnterInitializationModeTYPE *enter;
    fmi2ExitInitializationModeTYPE *exit_;
    fmi2SetRealTYPE *set_real;
    fmi2GetRealTYPE *get_real;
    fmi2DoStepTYPE *do_step;
    fmi2GetFMUstateTYPE *get_state;
    fmi2FreeFMUstateTYPE *free_state;
    fmi2TerminateTYPE *terminate;
    fmi2FreeInstanceTYPE *free_instance;
    char uri[4096];
    const char *guid;
    int n_tau, n_q;
    unsigned vr_tau0, vr_q0;
} Fmu;

static int load(Fmu *f, char **a)          /* a: dir identifier guid n_tau vr_tau0 n_q vr_q0 */
{
    char path[4096];
    snprintf(path, sizeof path, "%s/binaries/linux64/%s.so", a[0], a[1]);
    snprintf(f->uri, sizeof f->uri, "file://%s/resources", a[0]);
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 0;
    }
#define SYM(field, name) *(void **)&f->field = dlsym(lib, name); if (!f->field) return 0;
    SYM(instantiate, "fmi2Instantiate") SYM(setup, "fmi2SetupExperiment")
    SYM(enter, "fmi2EnterInitializationMode") SYM(exit_, "fmi2ExitInitializationMode")
    SYM(set_real, "fmi2SetReal") SYM(get_real, "fmi2GetReal") SYM(do_step, "fmi2DoStep")
    SYM(get_state, "fmi2GetFMUstate") SYM(free_state, "fmi2FreeFMUstate")
    SYM(terminate, "fmi2Terminate") SYM(free_instance, "fmi2FreeInstance")
    f->guid = a[2];
    f->n_tau = atoi(a[3]);
    f->vr_tau0 = (unsigned)atoi(a[4]);
    f->n_q = atoi(a[5]);
    f->vr_q0 = (unsigned)atoi(a[6]);
    return f->n_tau > 0 && f->n_tau <= 64 && f->n_q > 0 && f->n_q <= 64;
}

static const fmi2CallbackFunctions CALLBACKS = {logger, calloc, free, NULL, NULL};

/* One run: instantiate, initialize, steps of 1 ms at torque tau, q into out; 0 on success. */
static int run(const Fmu *f, const char *name, double tau, int steps, double *out)
{
    fmi2Component c = f->instantiate(name, fmi2CoSimulation, f->guid, f->uri, &CALLBACKS,
                                     fmi2False, fmi2False);
    if (!c) return 1;
    int bad = f->setup(c, fmi2False, 0.0, 0.0, fmi2False, 0.0) > fmi2Warning
              || f->enter(c) > fmi2Warning || f->exit_(c) > fmi2Warning;
    fmi2ValueReference vr[64];
    double v[64];
    for (int i = 0; i < f->n_tau; i++) {
        vr[i] = f->vr_tau0 + (unsigned)i;
        v[i] = tau * (i % 2 ? -1.0 : 1.0);
    }
    for (int k = 0; k < steps && !bad; k++)
        bad = f->set_real(c, vr, (size_t)f->n_tau, v) > 1 || f->do_step(c, k * 1e-3, 1e-3, 1) > 1;
    for (int i = 0; i < f->n_q; i++) vr[i] = f->vr_q0 + (unsigned)i;
    if (!bad) bad = f->get_real(c, vr, (size_t)f->n_q, out) > 1;
    fmi2FMUstate s = NULL;
    if (!bad) bad = f->get_state(c, &s) > 1 || f->free_state(c, &s) > 1;
    f->terminate(c);
    f->free_instance(c);
    return bad ? 2 : 0;
}

typedef struct {
    const Fmu *f;
    int k, steps, status;
    double q[64];
} Job;

static void *job(void *p)
{
    Job *j = p;
    char name[32];
    snprintf(name, sizeof name, "thread%d", j->k);
    j->status = run(j->f, name, 0.05 * (j->k + 1), j->steps, j->q);
    return NULL;
}

static long rss_kb(void)
{
    FILE *fh = fopen("/proc/self/statm", "r");
    long pages = 0, resident = 0;
    if (fh) {
        if (fscanf(fh, "%ld %ld", &pages, &resident) != 2) resident = 0;
        fclose(fh);
    }
    return resident * 4;
}

int main(int argc, char **argv)
{
    if (argc < 10) {
        fprintf(stderr, "usage: see the comment of tests/fmu_probe_host.c\n");
        return 2;
    }
    Fmu f, g;
    if (!load(&f, argv + 2)) return 3;
    const int count = atoi(argv[9]);
    if (strcmp(argv[1], "threads") == 0) {
        enum { N = 8 };
        Job par[N], ser[N];
        pthread_t th[N];
        for (int k = 0; k < N; k++) {
            par[k] = (Job){&f, k, count, 0, {0}};
            ser[k] = par[k];
            if (pthread_create(&th[k], NULL, job, &par[k])) return 4;
        }
        for (int k = 0; k < N; k++) pthread_join(th[k], NULL);
        for (int k = 0; k < N; k++) job(&ser[k]);
        for (int k = 0; k < N; k++) {
            if (par[k].status || ser[k].status) return 10 + k;
            if (memcmp(par[k].q, ser[k].q, sizeof(double) * (size_t)f.n_q)) {
                printf("instance %d differs\n", k);
                return 5;
            }
        }
        printf("identical\n");
        return 0;
    }
    if (strcmp(argv[1], "cycles") == 0) {
        double q[64];
        for (int k = 0; k < count; k++) {
            if (run(&f, "cycle", 0.1, 10, q)) return 10;
            if (k + 1 == count / 10) printf("%ld\n", rss_kb());
        }
        printf("%ld\n", rss_kb());
        return 0;
    }
    if (strcmp(argv[1], "two") == 0 && argc >= 17) {
        if (!load(&g, argv + 10)) return 3;
        Job a = {&f, 0, count, 0, {0}}, b = {&g, 1, count, 0, {0}}, a1 = a, b1 = b;
        pthread_t ta, tb;               /* the two FMUs at once, then each alone */
        if (pthread_create(&ta, NULL, job, &a) || pthread_create(&tb, NULL, job, &b)) return 4;
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        job(&a1);
        job(&b1);
        if (a.status || b.status || a1.status || b1.status) return 10;
        if (memcmp(a.q, a1.q, sizeof(double) * (size_t)f.n_q)
            || memcmp(b.q, b1.q, sizeof(double) * (size_t)g.n_q)) {
            printf("differs\n");
            return 5;
        }
        printf("identical\n");
        return 0;
    }
    fprintf(stderr, "unknown mode %s\n", argv[1]);
    return 2;
}
