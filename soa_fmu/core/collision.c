/* Collision geometry (collision.h; docs/contact.md): sphere, capsule, cylinder, box, ellipsoid and
 * convex mesh (its hull's vertices) against world planes and against each other.
 *
 * A shape is given by its support function h(d) = max over the shape of x . d and its support
 * point (soa_shape_support): closed forms, an ellipsoid's x = diag(e)^2 d / |diag(e) d| in its
 * frame, a hull's farthest vertex (by hill climbing over the hull's edges beyond SOA_HULL_SCAN
 * vertices, as MuJoCo's mjc_support does with a mesh's graph).  Spheres and capsules are a core (a point, a segment) swept by a
 * radius r: their gap to anything is the core's distance less r, in closed form between two of
 * them (the closest points of two segments, Ericson 2005, sec. 5.1.9).  Between the other shapes:
 *
 *   - the gap by GJK (Gilbert, Johnson & Keerthi 1988, IEEE J. Robotics Autom. 4(2)): the point v
 *     of the Minkowski difference A - B closest to the origin, found over simplices of support
 *     points w = s_A(-v) - s_B(v), each reduced to the face closest to the origin (the distance
 *     sub-algorithm; its regions as in Ericson sec. 5.1.5-5.1.6), stopped when
 *     |v|^2 - v . w <= eps |v|^2 (van den Bergen 1999, J. Graphics Tools 4(2), eq. 4);
 *   - the penetration by MPR, Minkowski portal refinement (Snethen 2008, "XenoCollide", Game
 *     Programming Gems 7): a ray from an interior point v0 of A - B through the origin, a portal
 *     triangle of support points it crosses, refined until the portal lies on the boundary; the
 *     origin's closest point w on that portal gives the normal m = w / |w| (from A towards B) and
 *     the depth |w|.
 *
 * The manifold: with the normal m, the features of each shape that lead into the other (corners of
 * a box, hull vertices, three rim points per cylinder cap, a capsule's two ends, a sphere's or an
 * ellipsoid's deepest point) are kept where they lie past the other's flat face along m (a face of a box or hull, a
 * cylinder's cap, within 0.81 deg of m; penetration delta_i = x_i . m + h_B(-m) > 0) and over it
 * (the line through x_i along m meets B: GJK), and at most SOA_MANIFOLD of them spanning the
 * largest area are reported.  Two polytopes with no face towards each other (crossed edges) meet
 * at one point: midway between the closest points of their support edges.  A box or a cylinder on a
 * plane or on a box then rests on its face's corners, still and level.  Against a plane
 * n . x <= o the same features give closed forms: delta_i = o - n . x_i (a face's many touching
 * hull vertices: the first kept is the farthest along a direction fixed on the shape, so that
 * near-ties in depth do not reorder the points from step to step: polytope_plane). */
#include <math.h>

#include "collision.h"

#define GJK_ITER 64
#define MPR_ITER 100
#define NBUF 64             /* candidate contact points held before they are reduced (reduce) */
#define FACE_TIE 0.9        /* touching vertices within 10 % of the deepest: a face resting level */

static double dot(const double *a, const double *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

static void cross(const double *a, const double *b, double *c)
{
    c[0] = a[1] * b[2] - a[2] * b[1];
    c[1] = a[2] * b[0] - a[0] * b[2];
    c[2] = a[0] * b[1] - a[1] * b[0];
}

/* c = a + s b */
static void axpy(const double *a, double s, const double *b, double *c)
{
    for (int i = 0; i < 3; i++) c[i] = a[i] + s * b[i];
}

/* x = R xl + p */
static void to_world(const soa_shape *s, const double *xl, double *x)
{
    const double *R = s->R;
    for (int i = 0; i < 3; i++) x[i] = s->p[i] + R[3 * i] * xl[0] + R[3 * i + 1] * xl[1] + R[3 * i + 2] * xl[2];
}

/* dl = R* d */
static void to_local(const soa_shape *s, const double *d, double *dl)
{
    const double *R = s->R;
    for (int i = 0; i < 3; i++) dl[i] = R[i] * d[0] + R[3 + i] * d[1] + R[6 + i] * d[2];
}

/* The radius swept about the core (sphere, capsule), else 0. */
static double margin(const soa_shape *s)
{
    return s->type == SOA_SHAPE_SPHERE || s->type == SOA_SHAPE_CAPSULE ? s->r : 0.0;
}

double soa_shape_bound(const soa_shape *s)
{
    const double *e = s->size;
    switch (s->type) {
    case SOA_SHAPE_CAPSULE: return e[0] + s->r;
    case SOA_SHAPE_CYLINDER: return sqrt(e[0] * e[0] + s->r * s->r);
    case SOA_SHAPE_BOX: return sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]);
    case SOA_SHAPE_ELLIPSOID: return fmax(e[0], fmax(e[1], e[2]));
    case SOA_SHAPE_MESH: {
        double b = 0.0;
        for (int i = 0; i < s->nv; i++) {
            const double r2 = dot(s->v + 3 * i, s->v + 3 * i);
            if (r2 > b) b = r2;
        }
        return sqrt(b);
    }
    default: return s->r;
    }
}

/* The vertex of hull s farthest along dl (shape frame): a scan of SOA_HULL_SCAN vertices or fewer,
 * else hill climbing over the hull's edges from *hint, or from the best of its first SOA_HULL_SEEDS
 * vertices (farthest along 14 fixed directions) (MuJoCo's mjc_support with a mesh's graph): a
 * vertex none of whose neighbours lies farther along dl is the farthest of the polytope (a linear
 * function on a convex polytope: the simplex method's optimality test).  At most nv moves. */
static int hull_support(const soa_shape *s, const double *dl)
{
    const double *v = s->v;
    int i = 0;
    if (s->nv <= SOA_HULL_SCAN || !s->adj0 || !s->adj) {
        double best = -HUGE_VAL;
        for (int k = 0; k < s->nv; k++) {
            const double h = dot(v + 3 * k, dl);
            if (h > best) {
                best = h;
                i = k;
            }
        }
        return i;
    }
    double h = dot(v, dl);
    if (s->hint && *s->hint > 0 && *s->hint < s->nv) {
        i = *s->hint;
        h = dot(v + 3 * i, dl);
    } else {
        for (int k = 1; k < SOA_HULL_SEEDS; k++)
            if (dot(v + 3 * k, dl) > h) {
                h = dot(v + 3 * k, dl);
                i = k;
            }
    }
    for (int move = 0; move < s->nv; move++) {
        int next = i;
        for (int k = s->adj0[i]; k < s->adj0[i + 1]; k++) {
            const double hk = dot(v + 3 * s->adj[k], dl);
            if (hk > h) {
                h = hk;
                next = s->adj[k];
            }
        }
        if (next == i) break;
        i = next;
    }
    if (s->hint) *s->hint = i;
    return i;
}

/* The support point of the core (without the swept radius) along d. */
static void core_support(const soa_shape *s, const double *d, double *out)
{
    double dl[3], xl[3] = {0.0, 0.0, 0.0};
    const double *e = s->size;
    to_local(s, d, dl);
    switch (s->type) {
    case SOA_SHAPE_CAPSULE: xl[2] = dl[2] >= 0.0 ? e[0] : -e[0]; break;
    case SOA_SHAPE_CYLINDER: {
        const double w = sqrt(dl[0] * dl[0] + dl[1] * dl[1]);
        xl[2] = dl[2] >= 0.0 ? e[0] : -e[0];
        if (w > 0.0) {
            xl[0] = s->r * dl[0] / w;
            xl[1] = s->r * dl[1] / w;
        }
        break;
    }
    case SOA_SHAPE_BOX:
        for (int i = 0; i < 3; i++) xl[i] = dl[i] >= 0.0 ? e[i] : -e[i];
        break;
    case SOA_SHAPE_MESH:
        if (s->nv > 0) {
            const int i = hull_support(s, dl);
            for (int j = 0; j < 3; j++) xl[j] = s->v[3 * i + j];
        }
        break;
    case SOA_SHAPE_ELLIPSOID: {          /* x = diag(e)^2 d / |diag(e) d| */
        const double w[3] = {e[0] * dl[0], e[1] * dl[1], e[2] * dl[2]}, nw = sqrt(dot(w, w));
        if (nw > 0.0)
            for (int j = 0; j < 3; j++) xl[j] = e[j] * w[j] / nw;
        break;
    }
    default: break;
    }
    to_world(s, xl, out);
}

void soa_shape_support(const soa_shape *s, const double *d, double *out)
{
    core_support(s, d, out);
    const double r = margin(s), n = sqrt(dot(d, d));
    if (r > 0.0 && n > 0.0) axpy(out, r / n, d, out);
}

/* A point inside the shape (world): c, else its frame's origin. */
static void interior(const soa_shape *s, double *out)
{
    const double zero[3] = {0.0, 0.0, 0.0};
    to_world(s, s->c ? s->c : zero, out);
}

/* A copy of shape s whose hill climbing starts from, and keeps its place in, *hint (unless s has
 * a hint of its own). */
static soa_shape with_hint(const soa_shape *s, int *hint)
{
    soa_shape t = *s;
    *hint = 0;
    if (!t.hint) t.hint = hint;
    return t;
}

/* A segment's ends: a sphere's (both its centre) or a capsule's. */
static void segment(const soa_shape *s, double *p0, double *p1)
{
    const double h = s->type == SOA_SHAPE_CAPSULE ? s->size[0] : 0.0;
    for (int i = 0; i < 3; i++) {
        p0[i] = s->p[i] - h * s->R[3 * i + 2];
        p1[i] = s->p[i] + h * s->R[3 * i + 2];
    }
}

static double clamp01(double x) { return x < 0.0 ? 0.0 : (x > 1.0 ? 1.0 : x); }

/* The closest points c1 on [p1, q1] and c2 on [p2, q2] (Ericson 2005, sec. 5.1.9). */
static void segments_closest(const double *p1, const double *q1, const double *p2, const double *q2,
                             double *c1, double *c2)
{
    double d1[3], d2[3], r[3], s = 0.0, t = 0.0;
    for (int i = 0; i < 3; i++) {
        d1[i] = q1[i] - p1[i];
        d2[i] = q2[i] - p2[i];
        r[i] = p1[i] - p2[i];
    }
    const double a = dot(d1, d1), e = dot(d2, d2), f = dot(d2, r), eps = 1e-30;
    if (a <= eps && e <= eps) {
        s = t = 0.0;
    } else if (a <= eps) {
        t = clamp01(f / e);
    } else {
        const double c = dot(d1, r);
        if (e <= eps) {
            s = clamp01(-c / a);
        } else {
            const double b = dot(d1, d2), den = a * e - b * b;
            s = den > 0.0 ? clamp01((b * f - c * e) / den) : 0.0;
            t = (b * s + f) / e;
            if (t < 0.0) {
                t = 0.0;
                s = clamp01(-c / a);
            } else if (t > 1.0) {
                t = 1.0;
                s = clamp01((b - c) / a);
            }
        }
    }
    axpy(p1, s, d1, c1);
    axpy(p2, t, d2, c2);
}

/* ------------------------------------------------------------------ the manifold */
/* The number of features of s (feature). */
static int nfeatures(const soa_shape *s)
{
    switch (s->type) {
    case SOA_SHAPE_CAPSULE: return 2;
    case SOA_SHAPE_CYLINDER: return 6;
    case SOA_SHAPE_BOX: return 8;
    case SOA_SHAPE_MESH: return s->nv;
    default: return 1;                   /* sphere, ellipsoid: the point deepest along m */
    }
}

/* Box corner k (bit i: +e_i) or hull vertex k of polytope s, its frame (xl: room for a corner). */
static const double *vertex(const soa_shape *s, int k, double *xl)
{
    if (s->type != SOA_SHAPE_BOX) return s->v + 3 * k;
    for (int i = 0; i < 3; i++) xl[i] = (k >> i & 1) ? s->size[i] : -s->size[i];
    return xl;
}

/* Feature k (0 <= k < nfeatures) of s that leads along m (unit; towards the other shape) into it:
 * x (world).  A sphere's or an ellipsoid's point farthest along m, a capsule's two ends swept
 * along m, three rim points per cylinder cap (k = 3 cap + j, j = 0 the deepest), a box's corner,
 * a hull's vertex. */
static void feature(const soa_shape *s, const double *m, int k, double *x)
{
    const double *e = s->size, r = s->r;
    double xl[3], y[3];
    switch (s->type) {
    case SOA_SHAPE_SPHERE: axpy(s->p, r, m, x); return;
    case SOA_SHAPE_ELLIPSOID: soa_shape_support(s, m, x); return;
    case SOA_SHAPE_CAPSULE:
        segment(s, k ? y : x, k ? x : y);
        axpy(x, r, m, x);
        return;
    case SOA_SHAPE_CYLINDER: {
        double a[3] = {s->R[2], s->R[5], s->R[8]}, u[3], v[3];
        axpy(m, -dot(m, a), a, u);
        double nu = sqrt(dot(u, u));
        if (nu < 1e-9) {                 /* m along the axis: any direction across it */
            const double t[3] = {fabs(a[0]) < 0.9 ? 1.0 : 0.0, fabs(a[0]) < 0.9 ? 0.0 : 1.0, 0.0};
            axpy(t, -dot(t, a), a, u);
            nu = sqrt(dot(u, u));
        }
        for (int i = 0; i < 3; i++) u[i] /= nu;
        cross(a, u, v);
        const int c = k / 3;
        const double th = 2.0943951023931957 * (k % 3), cu = r * cos(th), sv = r * sin(th);
        for (int i = 0; i < 3; i++) x[i] = s->p[i] + (c ? e[0] : -e[0]) * a[i] + cu * u[i] + sv * v[i];
        return;
    }
    case SOA_SHAPE_BOX:
    case SOA_SHAPE_MESH: to_world(s, vertex(s, k, xl), x); return;
    default: x[0] = x[1] = x[2] = 0.0;
    }
}

/* The manifold's second point: v (index i) replaces *best when it lies farther from p0 across the
 * normal m than *far (squared distance). */
static void farthest_across(const double *v, int i, const double *p0, const double *m, double *far,
                            int *best)
{
    double d[3];
    axpy(v, -1.0, p0, d);
    axpy(d, -dot(d, m), m, d);
    if (dot(d, d) > *far) {
        *far = dot(d, d);
        *best = i;
    }
}

/* The manifold's third and fourth points: v (index i) replaces *i2 / *i3 when its signed area
 * (e01 x (v - p0)) . m is beyond *hi on one side of the line p0 + t e01 / below *lo on the other. */
static void side_areas(const double *v, int i, const double *p0, const double *e01,
                       const double *m, double *hi, double *lo, int *i2, int *i3)
{
    double d[3], w[3];
    axpy(v, -1.0, p0, d);
    cross(e01, d, w);
    const double a = dot(w, m);
    if (a > *hi) {
        *hi = a;
        *i2 = i;
    }
    if (a < *lo) {
        *lo = a;
        *i3 = i;
    }
}

/* Of the n points x with penetration dep (n >= 1), at most SOA_MANIFOLD into c: the deepest, the
 * farthest from it across m, the farthest from their line on either side (the largest area). */
static void reduce(int n, double (*x)[3], const double *dep, const double *m, soa_manifold *c)
{
    int pick[SOA_MANIFOLD], np = 0, best = 0;
    for (int i = 1; i < n; i++)
        if (dep[i] > dep[best]) best = i;
    pick[np++] = best;
    double e01[3] = {0.0, 0.0, 0.0}, far = 1e-18;
    int i1 = -1;
    for (int i = 0; i < n; i++) farthest_across(x[i], i, x[best], m, &far, &i1);
    if (i1 >= 0) {
        pick[np++] = i1;
        axpy(x[i1], -1.0, x[best], e01);
        double hi = 1e-18 * far, lo = -1e-18 * far;
        int i2 = -1, i3 = -1;
        for (int i = 0; i < n; i++) side_areas(x[i], i, x[best], e01, m, &hi, &lo, &i2, &i3);
        if (i2 >= 0) pick[np++] = i2;
        if (i3 >= 0) pick[np++] = i3;
    }
    c->n = np;
    for (int k = 0; k < np; k++) {
        for (int i = 0; i < 3; i++) c->x[k][i] = x[pick[k]][i];
        c->depth[k] = dep[pick[k]];
    }
}

/* Candidate contact points streamed into NBUF slots: when they are full, reduce keeps the
 * SOA_MANIFOLD of them spanning the largest area (the deepest among them) and the stream goes on,
 * so that a hull of any size needs no more room. */
typedef struct {
    int n;
    double x[NBUF][3], dep[NBUF];
} cands;

static void cand_add(cands *k, const double *x, double dep, const double *m)
{
    if (k->n == NBUF) {
        soa_manifold r;
        reduce(k->n, k->x, k->dep, m, &r);
        k->n = r.n;
        for (int i = 0; i < r.n; i++) {
            for (int j = 0; j < 3; j++) k->x[i][j] = r.x[i][j];
            k->dep[i] = r.depth[i];
        }
    }
    for (int j = 0; j < 3; j++) k->x[k->n][j] = x[j];
    k->dep[k->n++] = dep;
}

/* A box's or a hull's contact with the half-space n.x <= o, in the shape's frame (n turned into
 * it: depth o0 - nl.v of vertex v), straight into c without storing the touching vertices: three
 * passes over the vertices pick what reduce would (the deepest touching one — of more than
 * SOA_MANIFOLD, the farthest along a direction fixed on the shape when that one is as deep within
 * FACE_TIE: a face resting level, whose near-ties in depth a wobble would otherwise reorder from
 * step to step —, the farthest from it across m, the farthest from their line on either side),
 * then those at most four go to the world, onto the plane.  None touching: the deepest vertex and its gap.  A hull of more than SOA_HULL_SCAN
 * vertices is first tested by its deepest vertex (hull_support): apart, that is the answer. */
static void polytope_plane(const soa_shape *a, const double *n, double o, soa_manifold *c)
{
    static const double skew[3] = {0.8, 0.5, 0.33};      /* (no edge of a box along it) */
    double nl[3], xl[3], yl[3];
    to_local(a, n, nl);
    const double o0 = o - dot(n, a->p), ml[3] = {-nl[0], -nl[1], -nl[2]};
    const int nf = a->type == SOA_SHAPE_BOX ? 8 : a->nv;
    int pick[SOA_MANIFOLD], np = 0, deep = 0, along = -1, touch = 0;
    double dd = -HUGE_VAL, best = -HUGE_VAL;
    for (int i = 0; i < 3; i++) c->m[i] = -n[i];
    if (a->type == SOA_SHAPE_MESH && a->nv > SOA_HULL_SCAN) deep = hull_support(a, ml);
    if (a->type == SOA_SHAPE_MESH && a->nv > SOA_HULL_SCAN && !(o0 - dot(nl, a->v + 3 * deep) > 0.0)) {
        dd = o0 - dot(nl, a->v + 3 * deep);
    } else {
        deep = 0;
        for (int i = 0; i < nf; i++) {   /* pass 1: the deepest, the farthest along skew */
            const double *v = vertex(a, i, xl), dep = o0 - dot(nl, v);
            if (dep > dd) {
                dd = dep;
                deep = i;
            }
            if (dep > 0.0) {
                touch++;
                if (dot(v, skew) > best) {
                    best = dot(v, skew);
                    along = i;
                }
            }
        }
    }
    if (touch == 0) {                    /* apart: the deepest vertex's point and gap */
        to_world(a, vertex(a, deep, xl), c->x[0]);
        axpy(c->x[0], dd, n, c->x[0]);
        c->depth[0] = dd;
        c->n = 1;
        return;
    }
    pick[np++] = touch > SOA_MANIFOLD && o0 - dot(nl, vertex(a, along, xl)) >= FACE_TIE * dd ? along
                                                                                      : deep;
    double p0[3], e01[3], far = 1e-18;
    for (int j = 0; j < 3; j++) p0[j] = vertex(a, pick[0], xl)[j];
    int i1 = -1;
    for (int i = 0; i < nf; i++) {       /* pass 2: the farthest across m */
        const double *v = vertex(a, i, xl);
        if (o0 - dot(nl, v) > 0.0) farthest_across(v, i, p0, ml, &far, &i1);
    }
    if (i1 >= 0) {
        pick[np++] = i1;
        axpy(vertex(a, i1, yl), -1.0, p0, e01);
        double hi = 1e-18 * far, lo = -1e-18 * far;
        int i2 = -1, i3 = -1;
        for (int i = 0; i < nf; i++) {   /* pass 3: signed areas on either side of the line */
            const double *v = vertex(a, i, xl);
            if (o0 - dot(nl, v) > 0.0) side_areas(v, i, p0, e01, ml, &hi, &lo, &i2, &i3);
        }
        if (i2 >= 0) pick[np++] = i2;
        if (i3 >= 0) pick[np++] = i3;
    }
    c->n = np;
    for (int k = 0; k < np; k++) {       /* to the world, onto the plane */
        const double *v = vertex(a, pick[k], xl);
        c->depth[k] = o0 - dot(nl, v);
        to_world(a, v, c->x[k]);
        axpy(c->x[k], c->depth[k], n, c->x[k]);
    }
}

void soa_collide_plane(const soa_shape *a0, const double *n, double o, soa_manifold *c)
{
    int hint;
    const soa_shape sa = with_hint(a0, &hint), *a = &sa;
    const double m[3] = {-n[0], -n[1], -n[2]};
    double xd[3] = {0.0, 0.0, 0.0}, dd = -HUGE_VAL, x[3];
    if (a->type == SOA_SHAPE_BOX || a->type == SOA_SHAPE_MESH) {
        polytope_plane(a, n, o, c);
        return;
    }
    cands k;
    k.n = 0;
    for (int i = 0; i < nfeatures(a); i++) {
        feature(a, m, i, x);
        const double dep = o - dot(n, x);
        if (dep > dd) {
            dd = dep;
            for (int j = 0; j < 3; j++) xd[j] = x[j];
        }
        if (dep > 0.0) {                 /* the touching ones, on the plane */
            axpy(x, dep, n, x);
            cand_add(&k, x, dep, m);
        }
    }
    if (k.n == 0) {                      /* apart: the deepest feature's point and gap */
        axpy(xd, dd, n, k.x[0]);
        k.dep[0] = dd;
        k.n = 1;
    }
    for (int i = 0; i < 3; i++) c->m[i] = m[i];
    reduce(k.n, k.x, k.dep, m, c);
}

/* ------------------------------------------------------------------ GJK */
typedef struct {
    double w[3], a[3], b[3];            /* w = a - b: a point of A - B and its two support points */
} vert;

/* v = s_A(d) - s_B(-d); the cores' (full = 0) or the whole shapes' (full = 1). */
static void support_pair(const soa_shape *A, const soa_shape *B, const double *d, int full, vert *v)
{
    const double nd[3] = {-d[0], -d[1], -d[2]};
    if (full) {
        soa_shape_support(A, d, v->a);
        soa_shape_support(B, nd, v->b);
    } else {
        core_support(A, d, v->a);
        core_support(B, nd, v->b);
    }
    for (int i = 0; i < 3; i++) v->w[i] = v->a[i] - v->b[i];
}

/* The triangle (a, b, c)'s point closest to the origin, its barycentric weights l (Ericson 2005,
 * sec. 5.1.5, with the query point at the origin). */
static void triangle_closest(const double *a, const double *b, const double *c, double *l)
{
    double ab[3], ac[3];
    axpy(b, -1.0, a, ab);
    axpy(c, -1.0, a, ac);
    const double d1 = -dot(ab, a), d2 = -dot(ac, a);
    l[0] = 1.0;
    l[1] = l[2] = 0.0;
    if (d1 <= 0.0 && d2 <= 0.0) return;
    const double d3 = -dot(ab, b), d4 = -dot(ac, b);
    if (d3 >= 0.0 && d4 <= d3) {
        l[0] = 0.0;
        l[1] = 1.0;
        return;
    }
    const double vc = d1 * d4 - d3 * d2;
    if (vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0) {
        l[1] = d1 / (d1 - d3);
        l[0] = 1.0 - l[1];
        return;
    }
    const double d5 = -dot(ab, c), d6 = -dot(ac, c);
    if (d6 >= 0.0 && d5 <= d6) {
        l[0] = 0.0;
        l[2] = 1.0;
        return;
    }
    const double vb = d5 * d2 - d1 * d6;
    if (vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0) {
        l[2] = d2 / (d2 - d6);
        l[0] = 1.0 - l[2];
        return;
    }
    const double va = d3 * d6 - d5 * d4;
    if (va <= 0.0 && d4 - d3 >= 0.0 && d5 - d6 >= 0.0) {
        l[2] = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        l[0] = 0.0;
        l[1] = 1.0 - l[2];
        return;
    }
    const double den = va + vb + vc;
    if (!(den > 0.0)) return;            /* (degenerate: its first vertex) */
    l[1] = vb / den;
    l[2] = vc / den;
    l[0] = 1.0 - l[1] - l[2];
}

/* The distance sub-algorithm: the point v of simplex s (n points) closest to the origin, s reduced
 * to the points that carry it (weights l).  Returns the new n; 0 when the origin is inside a
 * tetrahedron (v = 0). */
static int simplex_closest(vert *s, int n, double *l, double *v)
{
    double lt[3];
    if (n == 1) {
        l[0] = 1.0;
    } else if (n == 2) {                 /* a segment */
        double e[3];
        axpy(s[1].w, -1.0, s[0].w, e);
        const double ee = dot(e, e);
        const double t = ee > 0.0 ? clamp01(-dot(s[0].w, e) / ee) : 0.0;
        l[0] = 1.0 - t;
        l[1] = t;
    } else if (n == 3) {
        triangle_closest(s[0].w, s[1].w, s[2].w, l);
    } else {                             /* a tetrahedron: the closest of the faces facing the origin */
        static const int face[4][4] = {{0, 1, 2, 3}, {0, 1, 3, 2}, {0, 2, 3, 1}, {1, 2, 3, 0}};
        double best = HUGE_VAL, lb[4] = {0.0, 0.0, 0.0, 0.0};
        int outside = 0;
        for (int f = 0; f < 4; f++) {
            const double *A = s[face[f][0]].w, *B = s[face[f][1]].w, *C = s[face[f][2]].w;
            const double *D = s[face[f][3]].w;
            double ab[3], ac[3], nrm[3], ad[3];
            axpy(B, -1.0, A, ab);
            axpy(C, -1.0, A, ac);
            cross(ab, ac, nrm);
            axpy(D, -1.0, A, ad);
            const double so = -dot(A, nrm), sd = dot(ad, nrm);
            if (!(so * sd < 0.0) && fabs(sd) > 1e-14 * sqrt(dot(nrm, nrm)) * sqrt(dot(ad, ad)))
                continue;                /* the origin on D's side of this face */
            outside = 1;
            triangle_closest(A, B, C, lt);
            double p[3] = {0.0, 0.0, 0.0};
            for (int k = 0; k < 3; k++) axpy(p, lt[k], s[face[f][k]].w, p);
            if (dot(p, p) < best) {
                best = dot(p, p);
                for (int k = 0; k < 4; k++) lb[k] = 0.0;
                for (int k = 0; k < 3; k++) lb[face[f][k]] = lt[k];
            }
        }
        if (!outside) {
            v[0] = v[1] = v[2] = 0.0;
            return 0;
        }
        for (int k = 0; k < 4; k++) l[k] = lb[k];
    }
    int k = 0;
    v[0] = v[1] = v[2] = 0.0;
    for (int i = 0; i < n; i++) {
        if (!(l[i] > 0.0)) continue;
        axpy(v, l[i], s[i].w, v);
        s[k] = s[i];
        l[k++] = l[i];
    }
    if (k == 0) {                        /* (weights lost to rounding: the first point) */
        l[0] = 1.0;
        k = 1;
        for (int i = 0; i < 3; i++) v[i] = s[0].w[i];
    }
    return k;
}

/* GJK on A - B (cores, or whole shapes): the distance and the closest points; 0 on overlap.
 * Returns 0, or 1 when it did not converge in GJK_ITER iterations. */
static int gjk(const soa_shape *A, const soa_shape *B, int full, double *dist, double *pa, double *pb)
{
    vert s[4];
    double l[4] = {1.0, 0.0, 0.0, 0.0}, v[3], ca[3], cb[3];
    int n = 0, conv = 0, overlap = 0;
    interior(A, ca);
    interior(B, cb);
    axpy(ca, -1.0, cb, v);
    if (dot(v, v) == 0.0) v[0] = 1.0;
    for (int it = 0; it < GJK_ITER && !conv; it++) {
        vert w;
        const double nv[3] = {-v[0], -v[1], -v[2]}, vv = dot(v, v);
        support_pair(A, B, nv, full, &w);
        if (n > 0 && vv - dot(v, w.w) <= 1e-12 * vv + 1e-30) {   /* van den Bergen's test */
            conv = 1;
            break;
        }
        for (int i = 0; i < n; i++)      /* a point again: v is the closest */
            if (s[i].w[0] == w.w[0] && s[i].w[1] == w.w[1] && s[i].w[2] == w.w[2]) conv = 1;
        if (conv) break;
        s[n++] = w;
        n = simplex_closest(s, n, l, v);
        if (n == 0 || dot(v, v) <= 1e-24) {
            overlap = conv = 1;
        } else if (it > 0 && dot(v, v) >= vv) {   /* no progress: v is the closest */
            conv = 1;
        }
    }
    *dist = overlap ? 0.0 : sqrt(dot(v, v));
    double xa[3] = {0.0, 0.0, 0.0}, xb[3] = {0.0, 0.0, 0.0};
    for (int i = 0; i < n; i++) {
        axpy(xa, l[i], s[i].a, xa);
        axpy(xb, l[i], s[i].b, xb);
    }
    for (int i = 0; i < 3 && pa; i++) pa[i] = xa[i];
    for (int i = 0; i < 3 && pb; i++) pb[i] = xb[i];
    return !conv;
}

int soa_shape_distance(const soa_shape *a0, const soa_shape *b0, double *dist, double *pa, double *pb)
{
    int ha, hb;
    const soa_shape sa = with_hint(a0, &ha), sb = with_hint(b0, &hb), *a = &sa, *b = &sb;
    double xa[3], xb[3], d = 1.0;
    const int st = gjk(a, b, 0, &d, xa, xb);
    const double ra = margin(a), rb = margin(b);
    double e[3];
    axpy(xb, -1.0, xa, e);
    const double ne = sqrt(dot(e, e));
    *dist = d > ra + rb ? d - ra - rb : 0.0;
    if (ne > 0.0) {                      /* the swept radii moved onto the cores' points */
        axpy(xa, ra / ne, e, xa);
        axpy(xb, -rb / ne, e, xb);
    }
    for (int i = 0; i < 3 && pa; i++) pa[i] = xa[i];
    for (int i = 0; i < 3 && pb; i++) pb[i] = xb[i];
    return st;
}

/* ------------------------------------------------------------------ MPR */
static void portal_normal(const vert *v1, const vert *v2, const vert *v3, double *n)
{
    double e1[3], e2[3];
    axpy(v2->w, -1.0, v1->w, e1);
    axpy(v3->w, -1.0, v1->w, e2);
    cross(e1, e2, n);
    const double nn = sqrt(dot(n, n));
    if (nn > 0.0)
        for (int i = 0; i < 3; i++) n[i] /= nn;
}

/* MPR (Snethen 2008) on the whole shapes A, B: the normal m (A towards B), the depth and the
 * point midway; returns -1 when they are apart, 0 when found, 1 when not converged. */
static int mpr(const soa_shape *A, const soa_shape *B, double *m, double *depth, double *x)
{
    vert v0, v1, v2, v3, v4;
    double n[3], t[3];
    interior(A, v0.a);
    interior(B, v0.b);
    axpy(v0.a, -1.0, v0.b, v0.w);
    if (dot(v0.w, v0.w) < 1e-24) v0.w[0] += 1e-9;
    for (int i = 0; i < 3; i++) n[i] = -v0.w[i];
    support_pair(A, B, n, 1, &v1);
    if (dot(v1.w, n) <= 0.0) return -1;
    cross(v0.w, v1.w, n);
    if (dot(n, n) < 1e-24 * dot(v1.w, v1.w) * dot(v0.w, v0.w)) {   /* origin on the ray v0 v1 */
        *depth = sqrt(dot(v1.w, v1.w));
        for (int i = 0; i < 3; i++) {
            m[i] = *depth > 0.0 ? v1.w[i] / *depth : (i == 2);
            x[i] = 0.5 * (v1.a[i] + v1.b[i]);
        }
        return 0;
    }
    support_pair(A, B, n, 1, &v2);
    if (dot(v2.w, n) <= 0.0) return -1;
    {                                    /* the portal (v1, v2, v3) the ray crosses */
        double e1[3], e2[3];
        axpy(v1.w, -1.0, v0.w, e1);
        axpy(v2.w, -1.0, v0.w, e2);
        cross(e1, e2, n);
    }
    if (dot(n, v0.w) > 0.0) {
        const vert tmp = v1;
        v1 = v2;
        v2 = tmp;
        for (int i = 0; i < 3; i++) n[i] = -n[i];
    }
    int it = 0;
    for (; it < MPR_ITER; it++) {
        support_pair(A, B, n, 1, &v3);
        if (dot(v3.w, n) <= 0.0) return -1;
        double e1[3], e2[3];
        cross(v1.w, v3.w, t);
        if (dot(t, v0.w) < 0.0) {
            v2 = v3;
            axpy(v1.w, -1.0, v0.w, e1);
            axpy(v3.w, -1.0, v0.w, e2);
            cross(e1, e2, n);
            continue;
        }
        cross(v3.w, v2.w, t);
        if (dot(t, v0.w) < 0.0) {
            v1 = v3;
            axpy(v3.w, -1.0, v0.w, e1);
            axpy(v2.w, -1.0, v0.w, e2);
            cross(e1, e2, n);
            continue;
        }
        break;
    }
    int inside = 0, conv = 0;
    for (it = 0; it < MPR_ITER; it++) {  /* refine the portal onto the boundary */
        portal_normal(&v1, &v2, &v3, n);
        if (!inside && dot(v1.w, n) >= 0.0) inside = 1;     /* the origin behind the portal */
        support_pair(A, B, n, 1, &v4);
        const double h4 = dot(v4.w, n);
        if (!inside && h4 < 0.0) return -1;
        double gap = h4 - dot(v1.w, n);
        if (h4 - dot(v2.w, n) < gap) gap = h4 - dot(v2.w, n);
        if (h4 - dot(v3.w, n) < gap) gap = h4 - dot(v3.w, n);
        if (gap <= 1e-10) {
            conv = 1;
            break;
        }
        cross(v4.w, v0.w, t);            /* the portal that the ray crosses among the three new */
        if (dot(v1.w, t) > 0.0) {
            if (dot(v2.w, t) > 0.0) v1 = v4;
            else v3 = v4;
        } else {
            if (dot(v3.w, t) > 0.0) v2 = v4;
            else v1 = v4;
        }
    }
    if (!inside) return -1;
    double l[3], w[3] = {0.0, 0.0, 0.0};
    triangle_closest(v1.w, v2.w, v3.w, l);
    axpy(w, l[0], v1.w, w);
    axpy(w, l[1], v2.w, w);
    axpy(w, l[2], v3.w, w);
    *depth = sqrt(dot(w, w));
    if (*depth > 0.0)
        for (int i = 0; i < 3; i++) m[i] = w[i] / *depth;
    else
        for (int i = 0; i < 3; i++) m[i] = n[i];
    for (int i = 0; i < 3; i++)          /* midway between the shapes' points at the closest */
        x[i] = 0.5 * (l[0] * (v1.a[i] + v1.b[i]) + l[1] * (v2.a[i] + v2.b[i])
                      + l[2] * (v3.a[i] + v3.b[i]));
    return !conv;
}

/* ------------------------------------------------------------------ shape against shape */
#define FLAT_SIN 0.01414        /* a face within 0.81 deg of the normal is flat towards it (cos 0.9999) */

/* The vertices of polytope s (box, mesh) on its support plane along d (unit), within
 * 2 FLAT_SIN times its bounding radius: their count (1 a vertex, 2 an edge, >= 3 a face), the
 * first two into e (a vertex: twice). */
static int support_feature(const soa_shape *s, const double *d, double (*e)[3])
{
    double v[3], h = -HUGE_VAL;
    const int nv = nfeatures(s);
    for (int i = 0; i < nv; i++) {
        feature(s, d, i, v);
        if (dot(v, d) > h) h = dot(v, d);
    }
    const double tol = 2.0 * FLAT_SIN * soa_shape_bound(s);
    int k = 0;
    for (int i = 0; i < nv; i++) {
        feature(s, d, i, v);
        if (!(dot(v, d) >= h - tol)) continue;
        if (k < 2)
            for (int j = 0; j < 3; j++) e[k][j] = v[j];
        k++;
    }
    if (k == 1)
        for (int j = 0; j < 3; j++) e[1][j] = e[0][j];
    return k;
}

/* B's face at its points farthest along -m is flat: a box's or a hull's face (its support
 * feature along -m has 3 vertices or more), a cylinder's cap (its axis within 0.81 deg of m). */
static int flat_towards(const soa_shape *B, const double *m)
{
    if (B->type == SOA_SHAPE_BOX || B->type == SOA_SHAPE_MESH) {
        double e[2][3];
        const double nm[3] = {-m[0], -m[1], -m[2]};
        return support_feature(B, nm, e) >= 3;
    }
    if (B->type == SOA_SHAPE_CYLINDER) {
        const double ca = m[0] * B->R[2] + m[1] * B->R[5] + m[2] * B->R[8];
        return fabs(ca) > 0.9999;
    }
    return 0;
}

/* Two polytopes meeting on no face (edge on edge, a vertex on an edge): their support features
 * along m and -m, one point midway between the features' closest points (Ericson sec. 5.1.9),
 * where two crossed edges meet. */
static void feature_point(const soa_shape *A, const soa_shape *B, const double *m, double *x)
{
    double ea[2][3], eb[2][3], ca[3], cb[3];
    const double nm[3] = {-m[0], -m[1], -m[2]};
    support_feature(A, m, ea);
    support_feature(B, nm, eb);
    segments_closest(ea[0], ea[1], eb[0], eb[1], ca, cb);
    for (int i = 0; i < 3; i++) x[i] = 0.5 * (ca[i] + cb[i]);
}

/* The line through x along m meets B. */
static int over(const double *x, const double *m, double len, const soa_shape *B)
{
    double R[9], u[3], v[3];
    const double t[3] = {fabs(m[0]) < 0.9 ? 1.0 : 0.0, fabs(m[0]) < 0.9 ? 0.0 : 1.0, 0.0};
    cross(m, t, u);
    const double nu = sqrt(dot(u, u));
    for (int i = 0; i < 3; i++) u[i] /= nu;
    cross(m, u, v);
    for (int i = 0; i < 3; i++) {        /* columns u, v, m */
        R[3 * i] = u[i];
        R[3 * i + 1] = v[i];
        R[3 * i + 2] = m[i];
    }
    const soa_shape line = {SOA_SHAPE_CAPSULE, R, x, 0.0, &len, 0, 0};
    double d = 1.0;
    gjk(&line, B, 0, &d, 0, 0);
    return d <= 1e-7;
}

/* Adds to k the features of A (sign +1; of B: -1 with A and B swapped by the caller) that lie past
 * B's face along m and over it, the points midway into the overlap. */
static void add_features(const soa_shape *A, const soa_shape *B, const double *m, double len,
                         cands *k)
{
    double f[3], nm[3] = {-m[0], -m[1], -m[2]}, hb[3];
    soa_shape_support(B, nm, hb);
    const double h = -dot(hb, m);        /* h_B(-m) */
    for (int i = 0; i < nfeatures(A); i++) {
        feature(A, m, i, f);
        const double d = dot(f, m) + h;
        if (!(d > 0.0) || !over(f, m, len, B)) continue;
        axpy(f, -0.5 * d, m, f);
        cand_add(k, f, d, m);
    }
}

int soa_collide(const soa_shape *a0, const soa_shape *b0, soa_manifold *c)
{
    int ha, hb;
    const soa_shape sa = with_hint(a0, &ha), sb = with_hint(b0, &hb), *a = &sa, *b = &sb;
    const double ra = margin(a), rb = margin(b);
    double pa[3], pb[3], e[3], d = 1.0;
    int st = 0;
    c->n = 1;
    if (ra > 0.0 || a->type == SOA_SHAPE_SPHERE) {
        if (rb > 0.0 || b->type == SOA_SHAPE_SPHERE) {   /* spheres, capsules: closed form */
            double a0[3], a1[3], b0[3], b1[3];
            segment(a, a0, a1);
            segment(b, b0, b1);
            segments_closest(a0, a1, b0, b1, pa, pb);
        } else {
            st = gjk(a, b, 0, &d, pa, pb);
        }
    } else {
        st = gjk(a, b, 0, &d, pa, pb);
    }
    axpy(pb, -1.0, pa, e);
    const double dist = sqrt(dot(e, e));
    double m[3] = {0.0, 0.0, 1.0}, delta = ra + rb - dist;
    if (dist > 1e-12) {                  /* cores apart: the normal along their closest points */
        for (int i = 0; i < 3; i++) m[i] = e[i] / dist;
        for (int i = 0; i < 3; i++) c->x[0][i] = pa[i] + (ra - 0.5 * delta) * m[i];
    } else if (ra > 0.0 && rb > 0.0) {
        delta = ra + rb;                 /* spheres/capsules with crossing cores */
        for (int i = 0; i < 3; i++) c->x[0][i] = pa[i];
    } else {                             /* cores overlap: MPR on the whole shapes */
        double x0[3];
        const int r = mpr(a, b, m, &delta, x0);
        if (r < 0) delta = 0.0;
        if (r > 0) st = 1;
        for (int i = 0; i < 3; i++) c->x[0][i] = x0[i];
    }
    for (int i = 0; i < 3; i++) c->m[i] = m[i];
    c->depth[0] = delta;
    if (!(delta > 0.0)) return st;
    /* the manifold: the features of each shape past the other's flat face along m */
    const double nm[3] = {-m[0], -m[1], -m[2]};
    const double len = 2.0 * (soa_shape_bound(a) + soa_shape_bound(b)) + dist + delta;
    cands k;
    k.n = 0;
    if (flat_towards(b, m)) add_features(a, b, m, len, &k);
    if (flat_towards(a, nm)) add_features(b, a, nm, len, &k);
    if (k.n > 0) {
        reduce(k.n, k.x, k.dep, m, c);
    } else if ((a->type == SOA_SHAPE_BOX || a->type == SOA_SHAPE_MESH)
               && (b->type == SOA_SHAPE_BOX || b->type == SOA_SHAPE_MESH)) {
        feature_point(a, b, m, c->x[0]);
    }
    return st;
}
