/* Compliant contact (docs/contact.md): geometries fixed on bodies (sphere, capsule, cylinder, box,
 * convex mesh: collision.c gives their contact points) against planes fixed in world and against
 * each other, with the Hunt-Crossley normal force and a regularized Coulomb friction at each point,
 * applied as external spatial forces in the O(N) sweeps: d->ct_fw, world axes at the world origin
 * (the inertial frame, seed 004 sec. 5), enters the filter as it is (phi(I, k) = 1; seed 001
 * eq. 63), on the bodies that carry a contact only.
 *
 * A pair (geometry a, other) has a unit normal m pointing from a towards the other (a plane:
 * m = -n) and up to SOA_MANIFOLD contact points p (its manifold, collision.c), each with its
 * penetration delta and the velocity of a's material point at p relative to the other's, v.
 * At each point (Hunt & Crossley 1975; the law of Drake's point contact)
 *
 *     delta-dot = m . v,   f_n = max(0, k delta^n (1 + d delta-dot))             (delta > 0)
 *     v_t = v - (m . v) m, f_t = -mu f_n v_t / sqrt(|v_t|^2 + v_s^2)
 *     force on a: F = -f_n m + f_t at p; on the other: -F
 *
 * |f_t| < mu f_n always.  The power of the contact on the pair is -f_n delta-dot + f_t . v_t:
 * the normal force is k delta^n times (1 + d delta-dot), below the elastic force while the
 * geometries separate, and f_t . v_t <= 0, so that kinetic plus elastic energy
 * k delta^(n+1) / (n + 1) never increases through contact.  The positions and velocities come from
 * the inertial-frame sweeps (seed 004 sec. 5): V_I(k) = [w; v at the world origin], so a point x
 * of body k moves at v + w x x. */
#include <math.h>

#include "soa.h"
#include "spatial.h"

/* Domain of the law's constant c (SOA_CT_*): k, d, mu >= 0; n, v_s > 0; all finite. */
static int law_ok(int c, double x)
{
    if (!(x < HUGE_VAL)) return 0;
    return (c == SOA_CT_EXPONENT || c == SOA_CT_STICTION) ? x > 0.0 : x >= 0.0;
}

/* {SOA_BAD_CONTACT, rows * e + c} for element e (0: the model's law; then geometries, planes,
 * pairs), constant c. */
static soa_status bad(int e, int c)
{
    soa_status st = {SOA_BAD_CONTACT, SOA_CONTACT_ROWS * e + c};
    return st;
}

/* Geometry s as a shape with axes R and origin p (collision.h): its hull's vertices and edges,
 * its interior point. */
static soa_shape placed(const soa_model *m, int s, const double *R, const double *p)
{
    const int v0 = m->sp_hv0[s], mesh = m->sp_shape[s] == SOA_SHAPE_MESH;
    const soa_shape sh = {m->sp_shape[s], R, p, m->sp_radius[s], m->sp_size + 3 * s,
                          mesh ? m->sp_hull + 3 * v0 : 0, mesh ? m->sp_nvert[s] : 0,
                          mesh ? m->hv_adj0 + v0 : 0, mesh ? m->hv_adj : 0, m->sp_inner + 3 * s, 0};
    return sh;
}

/* The shape of geometry s as placed by the last kinematics (collision.h): its origin sp_x (set
 * for every geometry), its axes sp_R formed here (only the narrow phase reads them). */
static soa_shape shape_of(const soa_model *m, soa_data *d, int s)
{
    const double *Rb = d->Rw + 9 * m->sp_body[s], *Rs = m->sp_rot + 9 * s;
    double *R = d->sp_R + 9 * s;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            R[3 * i + j] = Rb[3 * i] * Rs[j] + Rb[3 * i + 1] * Rs[3 + j] + Rb[3 * i + 2] * Rs[6 + j];
    return placed(m, s, d->sp_R + 9 * s, d->sp_x + 3 * s);
}

/* Geometry s: a known shape, finite sizes >= 0 (an ellipsoid's > 0), a rotation (orthonormal to
 * 1e-6), a mesh's vertices (1..SOA_HULL_MAX, finite, within sp_hull) and edges (within hv_adj,
 * neighbours numbered within the mesh). */
static int shape_ok(const soa_model *m, int s)
{
    const double *R = m->sp_rot + 9 * s, *e = m->sp_size + 3 * s;
    const int t = m->sp_shape[s];
    if (t < 0 || t >= SOA_NSHAPES) return 0;
    for (int i = 0; i < 3; i++) {
        if (!(e[i] >= 0.0 && e[i] < HUGE_VAL)) return 0;
        for (int j = 0; j < 3; j++) {
            const double g = R[i] * R[j] + R[3 + i] * R[3 + j] + R[6 + i] * R[6 + j];
            if (!(fabs(g - (i == j)) < 1e-6)) return 0;
        }
    }
    if (t == SOA_SHAPE_ELLIPSOID) return e[0] > 0.0 && e[1] > 0.0 && e[2] > 0.0;
    if (t != SOA_SHAPE_MESH) return 1;
    const int nv = m->sp_nvert[s], v0 = m->sp_hv0[s];
    if (nv < 1 || nv > SOA_HULL_MAX || v0 < 0 || v0 > m->nhv - nv) return 0;
    for (int i = v0; i < v0 + nv; i++) {
        const int a = m->hv_adj0[i], b = m->hv_adj0[i + 1];
        if (a < 0 || b < a || b > 6 * m->nhv) return 0;
        for (int k = a; k < b; k++)
            if (m->hv_adj[k] < 0 || m->hv_adj[k] >= nv) return 0;
    }
    return soa_first_nonfinite(m->sp_hull + 3 * v0, 3 * nv) < 0;
}

/* The contact tables: bodies and pairs in range, finite geometry, radius >= 0, valid shapes, unit
 * plane normals, every law constant in its domain (those overridden by a geometry or plane too);
 * the geometries' bounding radii (sp_bound). */
soa_status soa_contact_finish(soa_model *m)
{
    SOA_SIZES(m);
    soa_status ok = {SOA_OK, 0};
    for (int c = 0; c < SOA_CT_NLAW; c++)
        if (!law_ok(c, m->ct_law[c])) return bad(0, c);
    for (int s = 0; s < nsph; s++) {
        const double *x = m->sp_center + 3 * s;
        if (m->sp_body[s] < 0 || m->sp_body[s] >= nb || !isfinite(x[0]) || !isfinite(x[1])
            || !isfinite(x[2]) || !(m->sp_radius[s] >= 0.0 && m->sp_radius[s] < HUGE_VAL)
            || m->sp_set[s] < 0 || m->sp_set[s] >= (1 << SOA_CT_NLAW) || !shape_ok(m, s))
            return bad(1 + s, SOA_CT_GEOMETRY);
        const double zero[3] = {0.0, 0.0, 0.0};
        double *c = m->sp_inner + 3 * s;   /* inside: the origin, a hull's vertex mean */
        const soa_shape sh = placed(m, s, m->sp_rot + 9 * s, zero);
        m->sp_bound[s] = soa_shape_bound(&sh);
        c[0] = c[1] = c[2] = 0.0;
        for (int i = 0; i < sh.nv; i++)
            for (int j = 0; j < 3; j++) c[j] += sh.v[3 * i + j] / sh.nv;
        for (int c = 0; c < SOA_CT_NLAW; c++)
            if ((m->sp_set[s] >> c & 1) && !law_ok(c, m->sp_law[SOA_CT_NLAW * s + c]))
                return bad(1 + s, c);
    }
    for (int j = 0; j < npln; j++) {
        const double *n = m->pl_normal + 3 * j;
        const double nn = n[0] * n[0] + n[1] * n[1] + n[2] * n[2];
        if (!(fabs(nn - 1.0) < 1e-9) || !isfinite(m->pl_offset[j]) || m->pl_set[j] < 0
            || m->pl_set[j] >= (1 << SOA_CT_NLAW))
            return bad(1 + nsph + j, SOA_CT_GEOMETRY);
        for (int c = 0; c < SOA_CT_NLAW; c++)
            if ((m->pl_set[j] >> c & 1) && !law_ok(c, m->pl_law[SOA_CT_NLAW * j + c]))
                return bad(1 + nsph + j, c);
    }
    for (int p = 0; p < nssp; p++) {
        const int a = m->ss_pair[2 * p], b = m->ss_pair[2 * p + 1];
        if (a < 0 || a >= nsph || b < 0 || b >= nsph || m->sp_body[a] == m->sp_body[b])
            return bad(1 + nsph + npln + p, SOA_CT_GEOMETRY);
    }
    for (int p = 0; p < npair; p++) {      /* a pair's own constants (named by the geometry of */
        const int e = p < nsph * npln ? 1 + p / npln       /* a geometry-plane pair, or the pair) */
                                      : 1 + npln + p - nsph * (npln - 1);
        if (m->pr_set[p] < 0 || m->pr_set[p] >= (1 << SOA_CT_NLAW)) return bad(e, SOA_CT_GEOMETRY);
        for (int c = 0; c < SOA_CT_NLAW; c++)
            if ((m->pr_set[p] >> c & 1) && !law_ok(c, m->pr_law[SOA_CT_NLAW * p + c])) return bad(e, c);
    }
    m->bp_ngeom[0] = soa_pair_index(nsph, nssp, m->ss_pair, m->bp_first, m->bp_pairs, m->bp_geoms);
    return ok;
}

/* The constants of pair p: its own where it has one (pr_set), else the other element's (plane,
 * or geometry b) where it overrides one, else geometry a's where it does, else the model's. */
static void pair_law(const soa_model *m, int p, int a, int set_o, const double *law_o, double *law)
{
    const int set_a = m->sp_set[a], set_p = m->pr_set[p];
    const double *law_a = m->sp_law + SOA_CT_NLAW * a, *law_p = m->pr_law + SOA_CT_NLAW * p;
    for (int c = 0; c < SOA_CT_NLAW; c++)
        law[c] = (set_p >> c & 1) ? law_p[c] : (set_o >> c & 1) ? law_o[c]
                 : (set_a >> c & 1) ? law_a[c] : m->ct_law[c];
}

/* x (world) of the point at x_body of body k. */
static void body_point(const soa_data *d, int k, const double *xb, double *x)
{
    const double *R = d->Rw + 9 * k, *p = d->pw + 3 * k;
    for (int i = 0; i < 3; i++) x[i] = p[i] + R[3 * i] * xb[0] + R[3 * i + 1] * xb[1] + R[3 * i + 2] * xb[2];
}

/* The Hunt-Crossley / Coulomb force on a (file comment) for normal m, depth delta > 0 and
 * relative velocity v. */
static void contact_law(const double *law, const double *mn, double delta, const double *v,
                        double *F)
{
    const double k = law[SOA_CT_STIFFNESS], n = law[SOA_CT_EXPONENT], dis = law[SOA_CT_DISSIPATION];
    const double mu = law[SOA_CT_FRICTION], vs = law[SOA_CT_STICTION];
    const double vn = mn[0] * v[0] + mn[1] * v[1] + mn[2] * v[2];
    const double dn = n == 1.5 ? delta * sqrt(delta) : (n == 1.0 ? delta : pow(delta, n));
    double fn = k * dn * (1.0 + dis * vn);
    if (!(fn > 0.0)) fn = 0.0;
    double vt[3], vt2 = 0.0;
    for (int i = 0; i < 3; i++) {
        vt[i] = v[i] - vn * mn[i];
        vt2 += vt[i] * vt[i];
    }
    const double ft = mu * fn / sqrt(vt2 + vs * vs);
    for (int i = 0; i < 3; i++) F[i] = -fn * mn[i] - ft * vt[i];
}

/* out(k) += sign F (world) at point x (world), as a body-frame force at k's origin. */
static void add_point_force(const soa_data *d, double *out, int k, const double *x, const double *F,
                            double sign)
{
    const double *R = d->Rw + 9 * k, *p = d->pw + 3 * k;
    const double r[3] = {x[0] - p[0], x[1] - p[1], x[2] - p[2]};
    double N[3];
    cross3(r, F, N);
    double *f = out + 6 * k;
    for (int i = 0; i < 3; i++) {
        f[i] += sign * (R[i] * N[0] + R[3 + i] * N[1] + R[6 + i] * N[2]);
        f[3 + i] += sign * (R[i] * F[0] + R[3 + i] * F[1] + R[6 + i] * F[2]);
    }
}

/* ct_fw(c) += sign [x~ F; F]: F (world) at point x (world) as a force at the world origin, world
 * axes (the inertial frame of the sweeps, seed 004 sec. 5), on the body c that carries body k in
 * the sweeps: k itself, or for a folded fixed link its carrier (model.c; none when it is welded
 * to the world: the force moves nothing).  The sweeps then add it as it is (phi(I, c) = 1). */
static void add_world_force(const soa_model *m, soa_data *d, int k, const double *x,
                            const double *F, double sign)
{
    const int c = (!m->nm && m->jtype[k] == SOA_FIXED) ? m->spar[k] : k;
    if (c < 0) return;
    double N[3], *f = d->ct_fw + 6 * c;
    cross3(x, F, N);
    for (int i = 0; i < 3; i++) {
        f[i] += sign * N[i];
        f[3 + i] += sign * F[i];
    }
}

/* What the implicit damping needs of touching pair p: normal, relative velocity, constants. */
static void keep(soa_data *d, int p, const double *mn, const double *v, const double *law)
{
    for (int i = 0; i < 3; i++) {
        d->ct_normal[3 * p + i] = mn[i];
        d->ct_vrel[3 * p + i] = v[i];
    }
    for (int c = 0; c < SOA_CT_NLAW; c++) d->ct_law_p[SOA_CT_NLAW * p + c] = law[c];
}

/* Records point i (force F on a, point x, depth) and applies it: on a's body, and -F on the other
 * geometry's body (b >= 0). */
static void record(const soa_model *m, soa_data *d, int i, int a, int b, const double *x,
                   double delta, const double *F)
{
    for (int r = 0; r < 3; r++) {
        d->ct_force[3 * i + r] = F[r];
        d->ct_point[3 * i + r] = x[r];
        d->sp_force[3 * a + r] += F[r];
    }
    d->ct_depth[i] = delta;
    if (delta > d->sp_depth[a]) d->sp_depth[a] = delta;
    if (delta <= 0.0) return;
    add_world_force(m, d, m->sp_body[a], x, F, 1.0);
    if (b < 0) return;
    for (int r = 0; r < 3; r++) d->sp_force[3 * b + r] -= F[r];
    if (delta > d->sp_depth[b]) d->sp_depth[b] = delta;
    add_world_force(m, d, m->sp_body[b], x, F, -1.0);
}

/* The law at the points of pair p's manifold c (geometry a against plane j, or geometry b);
 * its other point slots empty.  law_o, set_o: the other element's constants. */
static void apply(const soa_model *m, soa_data *d, int p, int a, int b, const soa_manifold *c,
                  int set_o, const double *law_o)
{
    const double *Va = d->V + 6 * m->sp_body[a], *Vb = b >= 0 ? d->V + 6 * m->sp_body[b] : 0;
    double law[SOA_CT_NLAW];
    d->ct_pdepth[p] = c->depth[0];
    if (c->depth[0] > 0.0) pair_law(m, p, a, set_o, law_o, law);
    for (int k = 0; k < SOA_MANIFOLD; k++) {
        const int i = SOA_MANIFOLD * p + k;
        if (k >= c->n || !(c->depth[k] > 0.0)) {     /* not touching: no force, depth <= 0 */
            if (k >= c->n && d->ct_depth[i] == 0.0) continue;   /* (an empty slot already) */
            double *F = d->ct_force + 3 * i;
            F[0] = F[1] = F[2] = 0.0;
            d->ct_depth[i] = k < c->n ? c->depth[k] : 0.0;
            if (k < c->n)
                for (int r = 0; r < 3; r++) d->ct_point[3 * i + r] = c->x[k][r];
            continue;
        }
        const double *x = c->x[k], delta = c->depth[k];
        double F[3] = {0.0, 0.0, 0.0};
        if (delta > d->ct_pdepth[p]) d->ct_pdepth[p] = delta;
        if (delta > 0.0) {
            double v[3], vb[3] = {0.0, 0.0, 0.0};        /* a's material point at x, relative */
            cross3(Va, x, v);
            if (Vb) cross3(Vb, x, vb);
            for (int r = 0; r < 3; r++) v[r] += Va[3 + r] - vb[r] - (Vb ? Vb[3 + r] : 0.0);
            contact_law(law, c->m, delta, v, F);
            keep(d, i, c->m, v, law);
        }
        record(m, d, i, a, b, x, delta, F);
    }
}

/* A one-point manifold: depth at x along the normal s mn (s = 1 or -1).  A pair the broad phase
 * set apart (depth < 0: minus a lower bound of its gap), or a sphere on a plane (closed form). */
static void one_point(soa_manifold *c, double depth, const double *x, double s, const double *mn)
{
    c->n = 1;
    c->depth[0] = depth;
    for (int r = 0; r < 3; r++) {
        c->x[0][r] = x[r];
        c->m[r] = s * mn[r];
    }
}

/* Geometry pair p (today's contact or its absence): its bounding spheres apart, the gap between
 * them; else the narrow phase (collision.c). */
static void geometry_pair(const soa_model *m, soa_data *d, int p)
{
    soa_manifold c;
    const int a = m->ss_pair[2 * p], b = m->ss_pair[2 * p + 1];
    const double *oa = d->sp_x + 3 * a, *ob = d->sp_x + 3 * b;
    const double e[3] = {ob[0] - oa[0], ob[1] - oa[1], ob[2] - oa[2]};
    const double dist = sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]);
    const double gap = dist - m->sp_bound[a] - m->sp_bound[b];
    if (gap > 0.0) {
        double x[3], u[3];
        for (int i = 0; i < 3; i++) {
            u[i] = e[i] / dist;
            x[i] = oa[i] + (m->sp_bound[a] + 0.5 * gap) * u[i];
        }
        one_point(&c, -gap, x, 1.0, u);
    } else {
        const soa_shape sa = shape_of(m, d, a), sb = shape_of(m, d, b);
        soa_collide(&sa, &sb, &c);
    }
    apply(m, d, m->nsph * m->npln + p, a, b, &c, m->sp_set[b], m->sp_law + SOA_CT_NLAW * b);
}

/* Pair p, whose boxes (bp_box) are apart: one point midway between them, depth minus the
 * distance between the boxes (a lower bound of the pair's gap), normal along it. */
static void boxes_apart(const soa_model *m, soa_data *d, int p)
{
    soa_manifold c;
    const int a = m->ss_pair[2 * p], b = m->ss_pair[2 * p + 1];
    const double *A = d->bp_box + 6 * a, *B = d->bp_box + 6 * b;
    double x[3], u[3], gap2 = 0.0;
    for (int i = 0; i < 3; i++) {
        const double lo = fmax(A[i], B[i]), hi = fmin(A[3 + i], B[3 + i]);   /* lo > hi: a gap */
        u[i] = lo > hi ? (B[i] > A[i] ? lo - hi : hi - lo) : 0.0;
        x[i] = 0.5 * (lo + hi);
        gap2 += u[i] * u[i];
    }
    const double gap = sqrt(gap2);
    for (int i = 0; i < 3; i++) u[i] = gap > 0.0 ? u[i] / gap : (i == 2);
    one_point(&c, -gap, x, 1.0, u);
    apply(m, d, m->nsph * m->npln + p, a, b, &c, m->sp_set[b], m->sp_law + SOA_CT_NLAW * b);
}

/* The geometry pairs.  The broad phase (broadphase.c) gives the pairs whose boxes overlap, the
 * only ones that may touch: they get geometry_pair; a pair the last evaluation tested and this one
 * does not gets a record apart (boxes_apart); every other pair keeps its record, apart and without
 * force, so that the work is O(pairs near) + the sweep.  `every` (soa_contact_state: the outputs
 * and event indicators of every pair), a first evaluation in this data, the switch
 * bp_info[SOA_BP_OFF], or a box not finite (the broad phase's status: a state gone bad, which
 * the caller then sees in the forces): every pair gets geometry_pair, as without a broad phase.
 * bp_near: the pairs tested, ascending (soa_contact_implicit reads their points). */
static void geometry_pairs(const soa_model *m, soa_data *d, int every)
{
    const int nssp = m->nssp;
    int *info = d->bp_info, *near = d->bp_near, *cand = d->bp_cand, ncand = -1;
    if (!info[SOA_BP_VALID]) {                           /* (any order will do: it is sorted) */
        for (int i = 0; i < m->bp_ngeom[0]; i++) d->bp_order[i] = m->bp_geoms[i];
        info[SOA_BP_AXIS] = -1;
    }
    if (!info[SOA_BP_OFF]) {
        for (int i = 0; i < m->bp_ngeom[0]; i++) {
            const int s = m->bp_geoms[i];
            const soa_shape sh = shape_of(m, d, s);
            soa_shape_aabb(&sh, d->bp_box + 6 * s);
        }
        ncand = soa_sweep_prune(d->bp_box, m->bp_ngeom[0], d->bp_order, info + SOA_BP_AXIS,
                                m->ss_pair, m->bp_first, m->bp_pairs, cand, info + SOA_BP_TESTED);
    }
    if (ncand < 0) {
        for (int p = 0; p < nssp; p++) cand[p] = p;
        ncand = nssp;
        info[SOA_BP_TESTED] = nssp;
    }
    if (every || !info[SOA_BP_VALID]) {
        for (int p = 0; p < nssp; p++) geometry_pair(m, d, p);
    } else {
        for (int i = 0, j = 0; i < info[SOA_BP_NNEAR]; i++) {   /* (both lists ascending) */
            const int p = near[i];
            while (j < ncand && cand[j] < p) j++;
            if (j == ncand || cand[j] != p) boxes_apart(m, d, p);
        }
        for (int i = 0; i < ncand; i++) geometry_pair(m, d, cand[i]);
    }
    for (int i = 0; i < ncand; i++) near[i] = cand[i];
    info[SOA_BP_NNEAR] = ncand;
    info[SOA_BP_VALID] = 1;
}

/* The contact forces (soa.h); every: the records of every pair brought up to date (the broad
 * phase's pairs apart keep their last record otherwise: geometry_pairs). */
static void contact_forces(const soa_model *m, soa_data *d, int every)
{
    SOA_SIZES(m);
    soa_manifold c;
    for (int i = 0; i < 6 * nb; i++) d->ct_fw[i] = 0.0;
    for (int i = 0; i < 3 * nsph; i++) d->sp_force[i] = 0.0;
    for (int s = 0; s < nsph; s++) d->sp_depth[s] = 0.0;
    for (int s = 0; s < nsph; s++)         /* the geometries' origins (world) */
        body_point(d, m->sp_body[s], m->sp_center + 3 * s, d->sp_x + 3 * s);
    for (int s = 0; s < nsph; s++) {       /* geometry-plane pairs, p = s npln + j */
        const double *o = d->sp_x + 3 * s;
        for (int j = 0; j < npln; j++) {
            const double *n = m->pl_normal + 3 * j;
            const double dist = n[0] * o[0] + n[1] * o[1] + n[2] * o[2] - m->pl_offset[j];
            if (dist > m->sp_bound[s] || m->sp_shape[s] == SOA_SHAPE_SPHERE) {
                double x[3];                 /* its bounding sphere above the plane; */
                for (int i = 0; i < 3; i++) x[i] = o[i] - dist * n[i];   /* a sphere's contact */
                one_point(&c, m->sp_bound[s] - dist, x, -1.0, n);
            } else {
                const soa_shape sh = shape_of(m, d, s);
                soa_collide_plane(&sh, n, m->pl_offset[j], &c);
            }
            apply(m, d, s * npln + j, s, -1, &c, m->pl_set[j], m->pl_law + SOA_CT_NLAW * j);
        }
    }
    if (nssp > 0) geometry_pairs(m, d, every);
}

void soa_contact_forces(const soa_model *m, soa_data *d)
{
    contact_forces(m, d, 0);
}

/* Sets the exact gap (collision.h) of every pair the broad phase set apart with a bound of it:
 * geometry-plane, gap = n . s(-n) - o with s the support point (closed forms of the support
 * function); geometry-geometry, GJK's distance (soa_shape_distance), for the pairs whose bounding
 * spheres are apart and those the last evaluation did not test (not in bp_near: their record is a
 * bound, from an evaluation before; geometry_pairs).  ct_pdepth = -gap and the
 * pair's first point slot on the closest points (the plane's foot, the midpoint).  Forces and
 * touching pairs are untouched: the observers' step (soa_contact_state, the FMU's pair depths),
 * not the integrators'. */
void soa_contact_gaps(const soa_model *m, soa_data *d)
{
    SOA_SIZES(m);
    for (int s = 0; s < nsph; s++) {
        const double *o = d->sp_x + 3 * s;
        for (int j = 0; j < npln; j++) {
            const double *n = m->pl_normal + 3 * j;
            const double dist = n[0] * o[0] + n[1] * o[1] + n[2] * o[2] - m->pl_offset[j];
            const int p = s * npln + j;
            if (!(dist > m->sp_bound[s]) || m->sp_shape[s] == SOA_SHAPE_SPHERE) continue;
            const soa_shape sh = shape_of(m, d, s);
            const double mn[3] = {-n[0], -n[1], -n[2]};
            double x[3];
            soa_shape_support(&sh, mn, x);
            const double gap = n[0] * x[0] + n[1] * x[1] + n[2] * x[2] - m->pl_offset[j];
            d->ct_pdepth[p] = d->ct_depth[SOA_MANIFOLD * p] = -gap;
            for (int r = 0; r < 3; r++) d->ct_point[3 * SOA_MANIFOLD * p + r] = x[r] - gap * n[r];
        }
    }
    const int nnear = nssp ? d->bp_info[SOA_BP_NNEAR] : 0;
    for (int q = 0, i = 0; q < nssp; q++) {
        const int a = m->ss_pair[2 * q], b = m->ss_pair[2 * q + 1], p = nsph * npln + q;
        const double *oa = d->sp_x + 3 * a, *ob = d->sp_x + 3 * b;
        const double e[3] = {ob[0] - oa[0], ob[1] - oa[1], ob[2] - oa[2]};
        while (i < nnear && d->bp_near[i] < q) i++;        /* (bp_near ascending) */
        if (i < nnear && d->bp_near[i] == q
            && !(sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]) > m->sp_bound[a] + m->sp_bound[b]))
            continue;                                      /* tested: the narrow phase's record */
        const soa_shape sa = shape_of(m, d, a), sb = shape_of(m, d, b);
        double gap = 0.0, xa[3], xb[3];
        soa_shape_distance(&sa, &sb, &gap, xa, xb);
        d->ct_pdepth[p] = d->ct_depth[SOA_MANIFOLD * p] = -gap;
        for (int r = 0; r < 3; r++) d->ct_point[3 * SOA_MANIFOLD * p + r] = 0.5 * (xa[r] + xb[r]);
    }
}

/* The geometries (a, b; b = -1: a plane) of contact point i. */
static void point_geometries(const soa_model *m, int i, int *a, int *b)
{
    const int p = i / SOA_MANIFOLD, q = p - m->nsph * m->npln;
    *a = q >= 0 ? m->ss_pair[2 * q] : p / m->npln;
    *b = q >= 0 ? m->ss_pair[2 * q + 1] : -1;
}

soa_status soa_contact_state(const soa_model *m, soa_data *d, const double *q, const double *qd,
                             int use_fext)
{
    soa_status st = soa_check_state(m, q, qd);
    if (st.kind != SOA_OK) return st;
    if (use_fext) {
        const int i = soa_first_nonfinite(d->fext, 6 * m->nb);
        if (i >= 0) {
            st.kind = SOA_BAD_FEXT;
            st.index = i / 6;
            return st;
        }
    }
    soa_inertial_kinematics(m, d, q, qd);
    contact_forces(m, d, 1);
    soa_contact_gaps(m, d);
    /* ct_fext = f_ext + the contact forces in body frames, at the body origins (the input of
     * soa_aba's f_ext: the Python Simulator's step) */
    for (int i = 0; i < 6 * m->nb; i++) d->ct_fext[i] = use_fext ? d->fext[i] : 0.0;
    for (int i = 0; i < SOA_MANIFOLD * (m->nsph * m->npln + m->nssp); i++) {
        if (!(d->ct_depth[i] > 0.0)) continue;
        int a, b;
        point_geometries(m, i, &a, &b);
        const double *x = d->ct_point + 3 * i, *F = d->ct_force + 3 * i;
        add_point_force(d, d->ct_fext, m->sp_body[a], x, F, 1.0);
        if (b >= 0) add_point_force(d, d->ct_fext, m->sp_body[b], x, F, -1.0);
    }
    return st;
}

/* ------------------------------------------------------------------ implicit contact forces
 * Over a step h the contact forces of the touching pairs are stiff: Hunt-Crossley's damping
 * k delta^n d delta-dot, the friction's mu f_n v_t / s near stiction (a damping mu f_n / v_s) and,
 * on light bodies, the spring itself.  Linearized backward Euler treats them implicitly: with the
 * point's B = -dF/dv and K = -dF/dx (relative velocity v and displacement x of the first
 * geometry's point, F the force on it; file comment):
 *
 *     B = k delta^n d (m + mu v_t / s) m* + (mu f_n / s) (P - v_t v_t* / s^2)
 *     K = n k delta^(n-1) (1 + d delta-dot) (m + mu v_t / s) m*
 *     s = sqrt(|v_t|^2 + v_s^2), P = I - m m*
 *
 * the step's velocity change solves (M + J* C J) Delta beta = h (M qdd - h J* K J beta),
 * C = h B + h^2 K, J the pairs' relative point Jacobians (3 rows each).  J* C J is a rank-3 n_c
 * update of M: by Woodbury,
 *
 *     (M + J* C J)^-1 = M^-1 - M^-1 J* (I + C Lambda^-1)^-1 C J M^-1,   Lambda^-1 = J M^-1 J*
 *
 * (seed 000 eq. 3.10 and A.3-A.5, seed 002 eqs. 19-20; block_inertia_inverse: the blocks of
 * the contact points only, O(sum of their depths) + O(n_c^2) per shared body).  With
 * u = -h K J beta (a Rosenbrock stage: u = -h K J r + C J s, its r and s; docs/joints.md),
 *
 *     (I + C Lambda^-1) z = C (J qdd + Lambda^-1 u),   qdd <- qdd + M^-1 J* (u - z)
 *
 * a system of the blocks' rows (3 a lone point, 6 a pair of bodies touching at several points;
 * O(rows^3)) and M^-1 J* g = [I - H psi K]* D^-1 H psi B g (seed 000 A.6, seed 002 eq. 18): its
 * filter part D^-1 H psi B is the N of block_inertia_inverse, so only the smoother runs (O(N)).
 * A model with one touching point (a ball on the floor) takes lone_point: the same functions on
 * its one 3-row block, without the grouping into blocks, and a 3 x 3 Cramer solve.  The
 * semi-implicit Euler step beta+ = beta + h qdd, theta+ = theta (+) h beta+ is then linearly
 * implicit in the contact: its stiffness and damping no longer bound the step.
 * A Rosenbrock stage (ahead > 0, its step h; a W-method, whose Jacobian may be any matrix) takes
 * each touching point at the depth the step reaches, max(delta, delta + h delta-dot) (it looks
 * ahead, as the joint stops do), with the law's spring and damper K = n k delta^(n-1),
 * B = k delta^n d (pair_jacobians' secant), a point whose force the law clamps to 0 included.
 * With the tangent at the stage's own depth a stiff, strongly damped contact met at speed looks
 * like a stiff, undamped spring (K = k (1 + d delta-dot), 65 k at 0.63 m/s and d = 102 s/m, B
 * small at the first millimetre): ros2's first stage overshot into a rebound faster than 1/d, the
 * second saw no force and, clamped, no Jacobian there, and its result (the step's) let the body
 * fall on through the floor (docs/contact.md). */

/* C = h B + h^2 K and K of point p at depth delta > 0 (row-major 3 x 3; file comment).  secant (a
 * Rosenbrock stage's choice, integrators.c): the secants, whose tangents vanish or turn where the
 * law saturates or clamps: the friction's part of B is (mu f_n / s) P, f_t = -(mu f_n / s) v_t,
 * without the - v_t v_t* / s^2 of the tangent (which vanishes where the friction saturates), and
 * the normal's K = n k delta^(n-1) and B = k delta^n d are the law's spring and damper apart (the
 * damping force k delta^n d delta-dot taken as a damper, not as a stiffness in delta: the tangent's
 * n k delta^(n-1) (1 + d delta-dot) is many times k at impact speed and 0 where f_n is clamped). */
static void pair_jacobians(const soa_data *d, int p, const double *F, double delta, double h,
                           int secant, double *C, double *K)
{
    const double *mn = d->ct_normal + 3 * p, *v = d->ct_vrel + 3 * p, *law = d->ct_law_p + SOA_CT_NLAW * p;
    const double fn = -(F[0] * mn[0] + F[1] * mn[1] + F[2] * mn[2]);
    const double n = law[SOA_CT_EXPONENT], vs = law[SOA_CT_STICTION];
    const double k = law[SOA_CT_STIFFNESS], dis = law[SOA_CT_DISSIPATION], mu = law[SOA_CT_FRICTION];
    const double vn = mn[0] * v[0] + mn[1] * v[1] + mn[2] * v[2];
    const double dn = n == 1.5 ? delta * sqrt(delta) : (n == 1.0 ? delta : pow(delta, n));
    const double kn = n * k * (n == 1.0 ? 1.0 : dn / delta) * (secant ? 1.0 : 1.0 + dis * vn);
    const double bn = k * dn * dis;
    double vt[3], vt2 = 0.0;
    for (int i = 0; i < 3; i++) {
        vt[i] = v[i] - vn * mn[i];
        vt2 += vt[i] * vt[i];
    }
    const double s2 = vt2 + vs * vs, s = sqrt(s2), bt = mu * fn / s;
    for (int i = 0; i < 3; i++) {
        const double e = mn[i] + mu * vt[i] / s;        /* (m + mu v_t / s) */
        for (int j = 0; j < 3; j++) {
            const double b = bn * e * mn[j]
                             + bt * ((i == j) - mn[i] * mn[j] - (secant ? 0.0 : vt[i] * vt[j] / s2));
            K[3 * i + j] = kn * e * mn[j];
            C[3 * i + j] = h * b + h * h * K[3 * i + j];
        }
    }
}

/* out += sign * J_x qdd: the velocity of point x of body k per unit rates, in the inertial frame
 * (the joint maps H*_I of k and its ancestors moved to x: v + w x x). */
static void point_rate(const soa_model *m, const soa_data *d, int k, const double *x,
                       const double *qdd, double sign, double *out)
{
    for (; k >= 0; k = m->parent[k])
        for (int i = m->v0[k]; i < m->v0[k] + m->nvj[k]; i++) {
            const double *S = d->Sw + 6 * i, a = sign * qdd[i];
            double wx[3];
            cross3(S, x, wx);
            for (int r = 0; r < 3; r++) out[r] += (S[3 + r] + wx[r]) * a;
        }
}

/* A z = y in place (LU with partial pivoting, the multipliers applied to y as they come; A n x n
 * row-major, overwritten; a zero pivot gives 0 for its unknown). */
static void lu_solve(double *A, int n, int *piv, double *y)
{
    for (int c = 0; c < n; c++) {
        int p = c;
        double best = fabs(A[n * c + c]);
        for (int r = c + 1; r < n; r++)
            if (fabs(A[n * r + c]) > best) {
                best = fabs(A[n * r + c]);
                p = r;
            }
        piv[c] = p;
        double *Ac = A + n * c;
        if (p != c) {                                      /* (columns < c are done with) */
            double *Ap = A + n * p;
            for (int j = c; j < n; j++) {
                const double t = Ac[j];
                Ac[j] = Ap[j];
                Ap[j] = t;
            }
            const double t = y[c];
            y[c] = y[p];
            y[p] = t;
        }
        if (Ac[c] == 0.0) continue;
        const double inv = 1.0 / Ac[c];
        for (int r = c + 1; r < n; r++) {
            double *Ar = A + n * r;
            const double f = Ar[c] * inv;
            for (int j = c + 1; j < n; j++) Ar[j] -= f * Ac[j];
            y[r] -= f * y[c];
        }
    }
    for (int r = n - 1; r >= 0; r--) {
        double s = y[r];
        for (int j = r + 1; j < n; j++) s -= A[n * r + j] * y[j];
        y[r] = A[n * r + r] != 0.0 ? s / A[n * r + r] : 0.0;
    }
}

/* out += sign [alpha; a_o]: the rate of the spatial velocity of body k (world axes at the world
 * origin, inertial frame) per unit rates qdd: the sum of the joint maps H*_I of k and its
 * ancestors. */
static void body_rate(const soa_model *m, const soa_data *d, int k, const double *qdd,
                      double sign, double *out)
{
    for (; k >= 0; k = m->parent[k])
        for (int i = m->v0[k]; i < m->v0[k] + m->nvj[k]; i++)
            for (int r = 0; r < 6; r++) out[r] += sign * d->Sw[6 * i + r] * qdd[i];
}

/* The blocks of the implicit contact term.  The touching points of one pair of bodies (ka, kb)
 * act on the step through one relative spatial velocity J_g beta (6 rows, world axes at the world
 * origin): a point's rows are J_i = B_i* J_g, B_i = [x_i~; I], so that
 *
 *     sum_i J_i* C_i J_i = J_g* (sum_i B_i C_i B_i*) J_g,   sum_i J_i* u_i = J_g* sum_i B_i u_i
 *
 * and such a group is one block of 6 rows (E = 1) whatever its number of points, a lone point one
 * of 3 (E = B_i).  ci_grp: [0, na) the block of each point, [nimp + b] the rows of block b,
 * [2 nimp + b] its first row, [3 nimp + b] its point when it has one; ci_body: its bodies. */
enum { GRP_ROWS = 1, GRP_FIRST = 2, GRP_POINT = 3 };

/* Y = H Z (n x r) and W = D^-1 Y of an end at a body of n dofs (Z: 6 x r, row-major), its rows
 * of N += W (N: row stride nr), and Z <- tau-bar(k) Z = Z - G Y (seed 000 eq. 3.2, A.1) where
 * the body has a parent.  r is 3 or 6, passed as a constant at the call (block_inertia_inverse)
 * so that the loops are unrolled. */
static inline void end_step(const double *H, const double *Dinv, const double *G, int n, int r,
                            int carry, double *z, double *y, double *W, double *N, int nr)
{
    for (int e = 0; e < n; e++) {                  /* (a row at a time, in registers: acc) */
        double acc[6];
        for (int c = 0; c < r; c++) acc[c] = H[6 * e] * z[c];
        for (int i = 1; i < 6; i++)
            for (int c = 0; c < r; c++) acc[c] += H[6 * e + i] * z[r * i + c];
        for (int c = 0; c < r; c++) y[r * e + c] = acc[c];
    }
    for (int e = 0; e < n; e++) {
        double acc[6];
        for (int c = 0; c < r; c++) acc[c] = Dinv[6 * e] * y[c];
        for (int f = 1; f < n; f++)
            for (int c = 0; c < r; c++) acc[c] += Dinv[6 * e + f] * y[r * f + c];
        for (int c = 0; c < r; c++) {
            W[r * e + c] = acc[c];
            N[nr * e + c] += acc[c];
        }
    }
    for (int e = 0; e < n && carry; e++)
        for (int i = 0; i < 6; i++) {
            const double g = G[6 * i + e];
            for (int c = 0; c < r; c++) z[r * i + c] -= g * y[r * e + c];
        }
}

/* L(os.., ot..) += Y_s* W_t (rs x rt; Y_s n x rs, W_t n x rt), and its transpose at (ot, os)
 * when the two ends differ.  rs, rt constants at the call, as in end_step. */
static inline void add_product(double *L, int nr, int os, int ot, int n, int rs, int rt,
                               const double *ys, const double *W, int both)
{
    double P[36];
    for (int a = 0; a < rs; a++)
        for (int c = 0; c < rt; c++) P[rt * a + c] = ys[a] * W[c];
    for (int e = 1; e < n; e++)                            /* (rows: contiguous in c) */
        for (int a = 0; a < rs; a++)
            for (int c = 0; c < rt; c++) P[rt * a + c] += ys[rs * e + a] * W[rt * e + c];
    for (int a = 0; a < rs; a++)
        for (int c = 0; c < rt; c++) {
            L[nr * (os + a) + ot + c] += P[rt * a + c];
            if (both) L[nr * (ot + c) + os + a] += P[rt * a + c];
        }
}

/* Lambda_g^-1 = J M^-1 J* of the blocks (J: their rows E* J_g, world axes) into L (nr x nr,
 * row-major), by the factorization of seed 000 eq. 3.10:
 *
 *     J M^-1 J* = E* psi* H* D^-1 H psi E = sum_j Y(j)* D^-1(j) Y(j),   Y(j) = H(j) psi(j, .) E
 *
 * (the Upsilon recursion A.3-A.5 unrolled into its sum).  A wrench at the world origin is E = 1,
 * a force along the world axes at the point x is E = B = [x~; I] (6 x 3; inertial frame: seed 004
 * sec. 5), and psi(j, k) E, zero unless j is k or an ancestor of it, is carried inward as
 * Z <- tau-bar(j) Z = Z - G(j) Y(j) (seed 000 eq. 3.2, A.1).  A block's relative rows are its
 * first body's minus the other's (signs in Z; the world carries nothing).  One inward sweep over
 * the bodies on the blocks' paths only, 6 x r columns per body end, an r x r' product per two ends
 * at each body their paths share.  Also N = D^-1 H psi E (nv x nr, row-major): the innovations
 * nu = N g of the bias-free filter for the blocks' forces g (seed 000 A.6), kept for the
 * correction (its rows written on the paths only: zero elsewhere).  Scratch after L: Z, Y (6 x 6
 * each per body end), then N; the bodies the ends have got to, and which ends they are, in ci_piv
 * (before the LU).  Returns the number of bodies on the paths, listed in ci_path. */
static int block_inertia_inverse(const soa_model *m, soa_data *d, int nblk, int nr, double *L)
{
    SOA_SIZES(m);
    const int *grp = d->ci_grp, nend = 2 * nblk;
    double *Z = L + nr * nr, *Y = Z + 36 * nend, *N = Y + 36 * nend;
    int *at = d->ci_piv, *sid = d->ci_piv + nend, np = 0, npath = 0, k = -1;
    for (int i = 0; i < nr * nr; i++) L[i] = 0.0;
    for (int s = 0; s < nend; s++) {                      /* the ends on bodies (np of them) */
        if (d->ci_body[s] < 0) continue;
        const int b = s / 2, r = grp[nimp * GRP_ROWS + b];
        const double sg = s % 2 ? -1.0 : 1.0;
        double *z = Z + 36 * np;
        at[np] = d->ci_body[s];
        sid[np] = s;
        if (at[np] > k) k = at[np];
        for (int i = 0; i < 6 * r; i++) z[i] = 0.0;       /* sg E, row-major 6 x r */
        if (r == 6) {
            for (int i = 0; i < 6; i++) z[7 * i] = sg;
        } else {
            const double *x = d->ct_point + 3 * d->ci_pair[grp[nimp * GRP_POINT + b]];
            z[1] = -sg * x[2];
            z[2] = sg * x[1];
            z[3] = sg * x[2];
            z[5] = -sg * x[0];
            z[6] = -sg * x[1];
            z[7] = sg * x[0];
            z[9] = z[13] = z[17] = sg;
        }
        np++;
    }
    while (k >= 0) {                                       /* the deepest body an end is at */
        const int n = m->nvj[k], p = m->parent[k];
        const double *H = d->Sw + 6 * m->v0[k], *G = d->G + 36 * k, *Dinv = d->Dinv + 36 * k;
        int next = -1;
        d->ci_path[npath++] = k;
        for (int i = nr * m->v0[k]; i < nr * (m->v0[k] + n); i++) N[i] = 0.0;  /* N(k) */
        for (int t = 0; t < np && n > 0; t++) {            /* Y = H Z; L += Y_s* D^-1 Y_t, s <= t */
            if (at[t] != k) continue;
            const int bt = sid[t] / 2, rt = grp[nimp * GRP_ROWS + bt], ot = grp[nimp * GRP_FIRST + bt];
            double *z = Z + 36 * t, *yt = Y + 36 * t, W[36];
            double *Nk = N + nr * m->v0[k] + ot;           /* N(k) += D^-1 Y_t */
            if (rt == 3 && n == 6)                         /* (a free joint's body: unrolled) */
                end_step(H, Dinv, G, 6, 3, p >= 0, z, yt, W, Nk, nr);
            else if (rt == 3)
                end_step(H, Dinv, G, n, 3, p >= 0, z, yt, W, Nk, nr);
            else if (n == 6)
                end_step(H, Dinv, G, 6, 6, p >= 0, z, yt, W, Nk, nr);
            else
                end_step(H, Dinv, G, n, 6, p >= 0, z, yt, W, Nk, nr);
            for (int s = 0; s <= t; s++) {
                if (at[s] != k) continue;
                const int bs = sid[s] / 2, rs = grp[nimp * GRP_ROWS + bs];
                const int os = grp[nimp * GRP_FIRST + bs];
                const double *ys = Y + 36 * s;
                if (rs == 3 && rt == 3 && n == 6)
                    add_product(L, nr, os, ot, 6, 3, 3, ys, W, s != t);
                else if (rs == 3 && rt == 3)
                    add_product(L, nr, os, ot, n, 3, 3, ys, W, s != t);
                else if (rs == 3)
                    add_product(L, nr, os, ot, n, 3, 6, ys, W, s != t);
                else if (rt == 3)
                    add_product(L, nr, os, ot, n, 6, 3, ys, W, s != t);
                else
                    add_product(L, nr, os, ot, n, 6, 6, ys, W, s != t);
            }
        }
        for (int t = 0; t < np; t++) {                     /* on to the parent */
            if (at[t] == k) at[t] = p;
            if (at[t] > next) next = at[t];
        }
        k = next;
    }
    return npath;
}


/* Block b's rows (first o, r of them; r constant at the call) of y = C w and A = I + C Lambda^-1
 * (file comment; L: Lambda^-1, nr x nr). */
static inline void block_rows(const double *C, const double *L, const double *w, int nr, int o,
                              int r, double *A, double *y)
{
    for (int a = 0; a < r; a++) {
        double v = 0.0, *Aa = A + nr * (o + a);
        for (int t = 0; t < r; t++) v += C[r * a + t] * w[t];
        y[o + a] = v;
        for (int j = 0; j < nr; j++) {
            double cl = 0.0;
            for (int t = 0; t < r; t++) cl += C[r * a + t] * L[nr * (o + t) + j];
            Aa[j] = cl;
        }
        Aa[o + a] += 1.0;
    }
}

/* u_i = -h K_i J_i r + C_i J_i s of touching point i, at x on bodies ka, kb (r NULL: J_i r is the
 * point's relative velocity kept by contact_forces; s NULL: 0; file comment). */
static void point_rhs(const soa_model *m, const soa_data *d, int i, int ka, int kb, double h,
                      const double *r, const double *s, double *u)
{
    const int p = d->ci_pair[i];
    const double *K = d->ci_K + 9 * i, *Ci = d->ci_B + 9 * i, *x = d->ct_point + 3 * p;
    double v[3] = {0.0, 0.0, 0.0}, w[3] = {0.0, 0.0, 0.0};
    if (r) {
        point_rate(m, d, ka, x, r, 1.0, v);
        point_rate(m, d, kb, x, r, -1.0, v);
    } else {
        for (int t = 0; t < 3; t++) v[t] = d->ct_vrel[3 * p + t];
    }
    if (s) {
        point_rate(m, d, ka, x, s, 1.0, w);
        point_rate(m, d, kb, x, s, -1.0, w);
    }
    for (int t = 0; t < 3; t++)
        u[t] = -h * (K[3 * t] * v[0] + K[3 * t + 1] * v[1] + K[3 * t + 2] * v[2])
               + Ci[3 * t] * w[0] + Ci[3 * t + 1] * w[1] + Ci[3 * t + 2] * w[2];
}

/* w = E* J_g qdd + (Lambda^-1 u) rows of block b (rows o.., rb of them; L nr x nr): the right side
 * of the block's rows (file comment).  E* J_g qdd: the relative spatial acceleration rate of its
 * bodies, or for a lone point B* of it = a_o + alpha x x. */
static void block_rhs(const soa_model *m, const soa_data *d, int b, int nr, const double *qdd,
                      double *w)
{
    SOA_SIZES(m);
    const int *grp = d->ci_grp, rb = grp[nimp * GRP_ROWS + b], o = grp[nimp * GRP_FIRST + b];
    double acc[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    body_rate(m, d, d->ci_body[2 * b], qdd, 1.0, acc);
    body_rate(m, d, d->ci_body[2 * b + 1], qdd, -1.0, acc);
    if (rb == 6) {
        for (int t = 0; t < 6; t++) w[t] = acc[t];
    } else {
        const double *x = d->ct_point + 3 * d->ci_pair[grp[nimp * GRP_POINT + b]];
        cross3(acc, x, w);
        for (int t = 0; t < 3; t++) w[t] += acc[3 + t];
    }
    const double *L = d->ci_L;
    for (int t = 0; t < rb; t++)
        for (int j = 0; j < nr; j++) w[t] += L[nr * (o + t) + j] * d->ci_u[j];
}

/* A z = y in place for 3 x 3 A (row-major): Cramer's rule, z = adj(A) y / det A; a singular A by
 * lu_solve. */
static void solve3(double *A, int *piv, double *y)
{
    const double c0 = A[4] * A[8] - A[5] * A[7], c1 = A[5] * A[6] - A[3] * A[8];
    const double c2 = A[3] * A[7] - A[4] * A[6], det = A[0] * c0 + A[1] * c1 + A[2] * c2;
    if (!(fabs(det) > 0.0 && fabs(det) < HUGE_VAL)) {
        lu_solve(A, 3, piv, y);
        return;
    }
    const double inv = 1.0 / det, y0 = y[0], y1 = y[1], y2 = y[2];
    y[0] = inv * (c0 * y0 + (A[2] * A[7] - A[1] * A[8]) * y1 + (A[1] * A[5] - A[2] * A[4]) * y2);
    y[1] = inv * (c1 * y0 + (A[0] * A[8] - A[2] * A[6]) * y1 + (A[2] * A[3] - A[0] * A[5]) * y2);
    y[2] = inv * (c2 * y0 + (A[1] * A[6] - A[0] * A[7]) * y1 + (A[0] * A[4] - A[1] * A[3]) * y2);
}

/* qdd += M^-1 J* g, g = u - z (z in ci_y: the solution of the blocks' system; file comment):
 * nu = N g, kept by block_inertia_inverse on the blocks' paths (zero elsewhere), then the
 * smoother. */
static void add_correction(const soa_model *m, soa_data *d, int nblk, int nr, int npath,
                           double *qdd)
{
    static const double zero6[6] = {0, 0, 0, 0, 0, 0};
    const int nv = m->nv;
    const double *N = d->ci_L + nr * nr + 144 * nblk;
    for (int j = 0; j < nr; j++) d->ci_y[j] = d->ci_u[j] - d->ci_y[j];   /* g = u - z */
    for (int i = 0; i < nv; i++) d->nu[i] = 0.0;
    for (int q = 0; q < npath; q++) {
        const int k = d->ci_path[q];
        for (int i = m->v0[k]; i < m->v0[k] + m->nvj[k]; i++) {
            double sum = 0.0;
            for (int j = 0; j < nr; j++) sum += N[nr * i + j] * d->ci_y[j];
            d->nu[i] = sum;
        }
    }
    soa_innovations_smoother(m, d, zero6, 0, d->ci_dqdd, 1);   /* M^-1 J* g */
    for (int i = 0; i < nv; i++) qdd[i] += d->ci_dqdd[i];
}

/* The lone touching point (the one-pair model's case): one block of 3 rows, E = B, C its own
 * C_i, and the 3 x 3 system solved by solve3 — the same equations as the general path below,
 * without its grouping of points into blocks. */
static void lone_point(const soa_model *m, soa_data *d, double h, const double *r,
                       const double *s, double *qdd)
{
    SOA_SIZES(m);
    int *grp = d->ci_grp;
    double w[6];
    d->ci_body[0] = d->ci_piv[0];
    d->ci_body[1] = d->ci_piv[1];
    grp[0] = 0;
    grp[nimp * GRP_ROWS] = 3;
    grp[nimp * GRP_FIRST] = 0;
    grp[nimp * GRP_POINT] = 0;
    point_rhs(m, d, 0, d->ci_body[0], d->ci_body[1], h, r, s, d->ci_u);
    const int npath = block_inertia_inverse(m, d, 1, 3, d->ci_L);
    block_rhs(m, d, 0, 3, qdd, w);
    block_rows(d->ci_B, d->ci_L, w, 3, 0, 3, d->ci_A, d->ci_y);
    solve3(d->ci_A, d->ci_piv, d->ci_y);                     /* z */
    add_correction(m, d, 1, 3, npath, qdd);
}

void soa_contact_implicit(const soa_model *m, soa_data *d, double h, const double *r,
                          const double *s, double ahead, double *qdd)
{
    SOA_SIZES(m);
    int na = 0, nblk = 0, nr = 0, *grp = d->ci_grp, *pb = d->ci_piv;
    const int nplp = nsph * npln, nnear = nssp ? d->bp_info[SOA_BP_NNEAR] : 0;
    for (int t = 0; t < SOA_MANIFOLD * (nplp + nnear) && na < nimp; t++) {
        const int q = t / SOA_MANIFOLD;                   /* the touching points, up to nimp: of */
        const int p = q < nplp ? t : SOA_MANIFOLD * (nplp + d->bp_near[q - nplp]) + t % SOA_MANIFOLD;
        const double *F = d->ct_force + 3 * p;            /* the plane pairs, the pairs near */
        const double *mn = d->ct_normal + 3 * p, *v = d->ct_vrel + 3 * p;
        double delta = d->ct_depth[p];
        if (!(delta > 0.0)) continue;
        if (ahead > 0.0)                       /* a Rosenbrock stage: at the depth the step reaches */
            delta = fmax(delta, delta + ahead * (mn[0] * v[0] + mn[1] * v[1] + mn[2] * v[2]));
        else if (F[0] == 0.0 && F[1] == 0.0 && F[2] == 0.0)
            continue;                          /* (implicit Euler: where f_n > 0) */
        int a, b;
        point_geometries(m, p, &a, &b);
        pb[2 * na] = m->sp_body[a];
        pb[2 * na + 1] = b >= 0 ? m->sp_body[b] : -1;
        pair_jacobians(d, p, F, delta, h, ahead > 0.0, d->ci_B + 9 * na, d->ci_K + 9 * na);
        d->ci_pair[na++] = p;
    }
    if (na == 0) return;
    if (na == 1) {
        lone_point(m, d, h, r, s, qdd);
        return;
    }
    for (int i = 0; i < na; i++) {                      /* the blocks: one per pair of bodies */
        int b = 0;
        while (b < nblk && !(d->ci_body[2 * b] == pb[2 * i] && d->ci_body[2 * b + 1] == pb[2 * i + 1]))
            b++;
        if (b == nblk) {
            d->ci_body[2 * b] = pb[2 * i];
            d->ci_body[2 * b + 1] = pb[2 * i + 1];
            grp[nimp * GRP_ROWS + b] = 0;
            grp[nimp * GRP_POINT + b] = i;
            nblk++;
        }
        grp[i] = b;
        grp[nimp * GRP_ROWS + b]++;                        /* (its points, for now) */
    }
    for (int b = 0; b < nblk; b++) {                    /* rows: 6 for several points, 3 for one */
        const int rb = grp[nimp * GRP_ROWS + b] > 1 ? 6 : 3;
        grp[nimp * GRP_ROWS + b] = rb;
        grp[nimp * GRP_FIRST + b] = nr;
        double *C = d->ci_C + 36 * b;
        for (int j = 0; j < rb * rb; j++) C[j] = 0.0;
        for (int j = 0; j < rb; j++) d->ci_u[nr + j] = 0.0;
        nr += rb;
    }
    for (int i = 0; i < na; i++) {   /* C_g = sum B C_i B*, u_g = sum B u_i; u_i = -h K J r + C J s */
        const int b = grp[i], rb = grp[nimp * GRP_ROWS + b], o = grp[nimp * GRP_FIRST + b];
        const double *Ci = d->ci_B + 9 * i, *x = d->ct_point + 3 * d->ci_pair[i];
        double u[3], *C = d->ci_C + 36 * b;
        point_rhs(m, d, i, d->ci_body[2 * b], d->ci_body[2 * b + 1], h, r, s, u);
        if (rb == 3) {
            for (int j = 0; j < 9; j++) C[j] = Ci[j];
            for (int t = 0; t < 3; t++) d->ci_u[o + t] = u[t];
            continue;
        }
        const double B[18] = {0.0, -x[2], x[1], x[2], 0.0, -x[0], -x[1], x[0], 0.0,   /* [x~; I] */
                              1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0};
        double BC[18];
        for (int a = 0; a < 6; a++)
            for (int c = 0; c < 3; c++)
                BC[3 * a + c] = B[3 * a] * Ci[c] + B[3 * a + 1] * Ci[3 + c] + B[3 * a + 2] * Ci[6 + c];
        for (int a = 0; a < 6; a++) {
            for (int c = 0; c < 6; c++)
                C[6 * a + c] += BC[3 * a] * B[3 * c] + BC[3 * a + 1] * B[3 * c + 1]
                                + BC[3 * a + 2] * B[3 * c + 2];
            d->ci_u[o + a] += B[3 * a] * u[0] + B[3 * a + 1] * u[1] + B[3 * a + 2] * u[2];
        }
    }
    const int npath = block_inertia_inverse(m, d, nblk, nr, d->ci_L);
    for (int b = 0; b < nblk; b++) {                    /* w = J qdd + Lambda^-1 u; A = I + C Lambda^-1 */
        const int rb = grp[nimp * GRP_ROWS + b], o = grp[nimp * GRP_FIRST + b];
        double w[6];
        block_rhs(m, d, b, nr, qdd, w);
        if (rb == 3)
            block_rows(d->ci_C + 36 * b, d->ci_L, w, nr, o, 3, d->ci_A, d->ci_y);
        else
            block_rows(d->ci_C + 36 * b, d->ci_L, w, nr, o, 6, d->ci_A, d->ci_y);
    }
    lu_solve(d->ci_A, nr, d->ci_piv, d->ci_y);          /* z */
    add_correction(m, d, nblk, nr, npath, qdd);
}
