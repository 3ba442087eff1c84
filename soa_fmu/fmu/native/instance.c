/* The native FMU instance's life cycle (instance.h), the layer under the FMI entry points:
 * instantiation (a soa_model built from the generated description fmu_model.c, a soa_data, every
 * buffer allocated, the variables at their start values), the defaults a reset returns to,
 * leaving initialization mode (the simulation state built from the parameters, fmu_step.c), and
 * the release of it all.  The parameters into the model are in fmu_values.c, the FMU state in
 * fmu_state.c, the messages in fmu_log.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "instance.h"

/* ------------------------------------------------------------------ instance life cycle */
void fmu_set_defaults(Instance *c)
{
    for (int vr = 0; vr < D.nreal; vr++) c->real[vr] = D.vars[vr].start;
    for (int i = 0; i < D.nboolean; i++) c->boolean[i] = D.vars[D.nreal + i].start != 0.0;
    memset(c->pending, 0, (size_t)D.nvars);
    c->problem[0] = '\0';
    c->mode = INSTANTIATED;
    c->method = D.method;
    c->method_used = D.method == SOA_AUTO ? SOA_RK4 : D.method;
    c->built = 0;
    c->params_dirty = 1;
    c->t = c->start_time = c->last_h = 0.0;
    c->anchor_t = 0.0;
    c->renormalized = 0;
    fmu_invalidate(c);                    /* stale, no output cached, no failed step */
    fmu_data_used(c);                     /* no factors, no contact forces held */
    fmu_reset_closures(c);
}

void fmu_free(Instance *c)
{
    if (!c) return;
    soa_data_free(c->d);
    soa_model_free(c->m);
    free(c->name);
    free(c->real);
    free(c->boolean);
    free(c->pending);
    free(c->qs);
    free(c->qds);
    free(c->qdds);
    free(c->dtau);
    free(c->dqdd);
    free(c->active);
    free(c->was_active);
    free(c->u);
    free(c->anchors);
    free(c->forces);
    free(c->residuals);
    free(c->zero_v);
    free(c->du);
    free(c->dforces);
    free(c->dres);
    free(c->qn);
    free(c->jac);
    free(c->dth);
    free(c->dq);
    free(c->dv);
    free(c->qf);
    free(c->qdf);
    free(c->dqdot);
    free(c->dqdd_x);
    free(c->scratch);
    free(c);
}

/* The soa_model of the description: its buffers copied by the tables of soa.h, then checked. */
static soa_model *make_model(void)
{
    const soa_sizes sizes = {D.nb, D.nq, D.nv, D.nc, D.nm, D.nsph, D.npln, D.nssp, D.nhv};
    soa_model *m = soa_model_new(&sizes);
    if (!m) return NULL;
    SOA_SIZES(m);
    int i = 0;
#define COPY_INT(name, ndim, d0, d1, d2) \
    memcpy(m->name, D.ints[i++], sizeof(int) * soa_buffer_dims(ndim, d0, d1, d2));
    SOA_MODEL_INTS(COPY_INT)
    i = 0;
#define COPY_REAL(name, ndim, d0, d1, d2) \
    memcpy(m->name, D.reals[i++], sizeof(double) * soa_buffer_dims(ndim, d0, d1, d2));
    SOA_MODEL_REALS(COPY_REAL)
    if (soa_model_finish(m).kind != SOA_OK) {
        soa_model_free(m);
        return NULL;
    }
    return m;
}

/* A new instance with every buffer allocated and the variables at their start values; NULL
 * (logged through emit) when out of memory. */
Instance *fmu_new(const char *name, int kind, int fmi, fmu_emit_fn emit, void (*logger)(void),
                  void *env, int logging_on)
{
    Instance tmp = {0};
    tmp.emit = emit;
    tmp.logger = logger;
    tmp.env = env;
    tmp.name = (char *)name;
    Instance *c = calloc(1, sizeof *c);
    if (!c) {
        fmu_log(&tmp, FMU_FATAL, "instantiation: out of memory");
        return NULL;
    }
    c->emit = emit;
    c->logger = logger;
    c->env = env;
    c->logging_on = logging_on ? 1 : 0;
    c->kind = kind;
    c->fmi = fmi;
    const size_t nlen = strlen(name) + 1;
    c->name = malloc(nlen);
    if (c->name) memcpy(c->name, name, nlen);
    c->m = make_model();
    c->d = c->m ? soa_data_new(c->m) : NULL;
    const size_t nq = (size_t)D.nq + 1, nv = (size_t)D.nv + 1, nc = (size_t)D.nc + 1;
    c->real = calloc((size_t)D.nreal + 1, sizeof(double));
    c->boolean = calloc((size_t)D.nboolean + 1, sizeof(int));
    c->pending = calloc((size_t)D.nvars + 1, 1);
    c->qs = calloc(nq, sizeof(double));
    c->qds = calloc(nv, sizeof(double));
    c->qdds = calloc(nv, sizeof(double));
    c->qf = calloc(nq, sizeof(double));
    c->qdf = calloc(nv, sizeof(double));
    c->dtau = calloc(nv, sizeof(double));
    c->dqdd = calloc(nv, sizeof(double));
    c->active = calloc(nc, sizeof(int));
    c->was_active = calloc(nc, sizeof(int));
    c->u = calloc(6 * nc, sizeof(double));
    c->anchors = calloc(16 * nc, sizeof(double));
    c->forces = calloc(6 * nc, sizeof(double));
    c->residuals = calloc(nc, sizeof(double));
    c->zero_v = calloc(nv, sizeof(double));
    c->du = calloc(6 * nc, sizeof(double));
    c->dforces = calloc(6 * nc, sizeof(double));
    c->dres = calloc(nc, sizeof(double));
    c->qn = calloc(nq, sizeof(double));
    c->jac = calloc(3 * nv * nv, sizeof(double));
    c->dth = calloc(nv, sizeof(double));
    c->dq = calloc(nq, sizeof(double));
    c->dv = calloc(nv, sizeof(double));
    c->dqdot = calloc(nq, sizeof(double));
    c->dqdd_x = calloc(nv, sizeof(double));
    c->scratch = calloc(2 * ((size_t)D.nreal + 1), sizeof(double));
    if (!c->name || !c->m || !c->d || !c->real || !c->boolean || !c->pending || !c->qs || !c->qds
        || !c->qdds || !c->qf || !c->qdf || !c->dtau || !c->dqdd || !c->active || !c->was_active || !c->u
        || !c->anchors || !c->forces || !c->residuals || !c->zero_v || !c->du || !c->dforces
        || !c->dres || !c->qn || !c->jac || !c->dth || !c->dq || !c->dv || !c->dqdot
        || !c->dqdd_x || !c->scratch) {
        fmu_log(&tmp, FMU_FATAL, "instantiation: out of memory or inconsistent model constants");
        fmu_free(c);
        return NULL;
    }
    c->state_size = fmu_state_bytes();
    c->model_digest = fmu_model_digest();
    fmu_set_defaults(c);
    return c;
}

/* Leave initialization mode into `mode` (STEPPING, or EVENT for Model Exchange), building the
 * state from the parameters. */
int fmu_exit_initialization(Instance *c, int mode, const char *fn)
{
    if (c->mode != INITIALIZATION) {
        fmu_log(c, FMU_ERROR, "%s called in %s mode", fn, MODE_NAMES[c->mode]);
        return FMU_ERROR;
    }
    c->mode = mode;
    if (!c->built || c->params_dirty) {
        char msg[MSG - 64];
        if (!fmu_build(c, msg, sizeof msg)) {
            c->built = 0;
            snprintf(c->problem, sizeof c->problem, "initialization failed: %s", msg);
            fmu_log(c, FMU_ERROR, "%s: %s", fn, c->problem);
            return FMU_ERROR;
        }
    }
    c->problem[0] = '\0';
    return FMU_OK;
}
