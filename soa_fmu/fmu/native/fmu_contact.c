/* Contact in the native FMU (core/contact.c; docs/contact.md): the tunable law constants and plane
 * offsets into the instance's model, the per-geometry outputs <geom>.force[1..3] and
 * <geom>.depth, the checks of the constants (the variable named), and the Model Exchange event
 * indicators: the signed penetration of each geometry-plane and geometry-geometry pair (its
 * deepest point, ct_pdepth), so that an importer locates touch-down and lift-off. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "instance.h"

/* contact.<k> and <plane>.offset into the model (tunable: at initialization, between steps, when
 * a state is restored); the values were checked when set (fmu_contact_problem). */
void fmu_apply_contact(Instance *c)
{
    if (D.nsph == 0 || D.vr_contact_law < 0) return;       /* (a controller has no contact) */
    fmu_data_used(c);                     /* (the contact forces it holds are the old law's) */
    for (int k = 0; k < SOA_CT_NLAW; k++) c->m->ct_law[k] = c->real[D.vr_contact_law + k];
    for (int j = 0; j < D.npln; j++) c->m->pl_offset[j] = c->real[D.vr_plane_offset + j];
}

/* Why x cannot be the value of Real vr (0: it can): a contact constant outside its domain. */
int fmu_contact_problem(int vr, double x, char *text, size_t n)
{
    const int k = vr - D.vr_contact_law;
    if (D.nsph == 0 || D.vr_contact_law < 0 || k < 0 || k >= SOA_CT_NLAW) return 0;
    const int positive = k == SOA_CT_EXPONENT || k == SOA_CT_STICTION;
    if (positive ? x > 0.0 : x >= 0.0) return 0;
    snprintf(text, n, "%s must be %s, got %.17g", D.vars[vr].name, positive ? "> 0" : "\xe2\x89\xa5 0",
             x);
    return positive ? REJ_NONPOSITIVE : REJ_NEGATIVE;
}

/* The outputs from the last contact evaluation in the data (sp_force, sp_depth); with
 * `recompute`, from a new one at (q, qd) of the instance. */
soa_status fmu_put_contact_outputs(Instance *c, const double *q, int recompute)
{
    soa_status st = {SOA_OK, 0};
    if (D.nsph == 0) return st;
    if (recompute) {
        fmu_data_used(c);
        st = soa_contact_state(c->m, c->d, q, c->real + D.vr_qd, 0);
    }
    if (st.kind != SOA_OK) return st;
    memcpy(c->real + D.vr_contact_force, c->d->sp_force, sizeof(double) * 3 * D.nsph);
    memcpy(c->real + D.vr_contact_depth, c->d->sp_depth, sizeof(double) * D.nsph);
    if (D.vr_pair_depth >= 0) {           /* the pair depths: exact gaps from soa_contact_state; */
        memcpy(c->real + D.vr_pair_depth, c->d->ct_pdepth,    /* a step's, bounds of the gaps of */
               sizeof(double) * (size_t)fmu_contact_pair_count());   /* pairs apart (made exact */
        c->gaps_valid = recompute;                            /* when read: fmu_get_real) */
    }
    return st;
}

/* The contact pairs: geometry-plane, then geometry-geometry (their event indicators follow the
 * joint stops', model_exchange.c). */
int fmu_contact_pair_count(void)
{
    return D.nsph * D.npln + D.nssp;
}

/* z[p] = the signed penetration of contact pair p at configuration q and the instance's qd
 * (> 0: touching): the event indicators after the joint stops' (model_exchange.c, which checks
 * the mode and brings the instance up to date first). */
int fmu_contact_indicators(Instance *c, const double *q, double *z, const char *fn)
{
    const int nz = fmu_contact_pair_count();
    if (nz == 0) return FMU_OK;
    fmu_data_used(c);
    const soa_status st = soa_contact_state(c->m, c->d, q, c->real + D.vr_qd, 0);
    if (st.kind != SOA_OK) {
        char msg[MSG];
        fmu_status_message(c, st, msg, sizeof msg);
        fmu_log(c, FMU_ERROR, "%s: %s", fn, msg);
        return FMU_ERROR;
    }
    memcpy(z, c->d->ct_pdepth, sizeof(double) * (size_t)nz);
    return FMU_OK;
}
