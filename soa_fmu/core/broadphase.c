/* Broad phase (collision.h; docs/contact.md): which of the geometry pairs allowed at build time may
 * touch, from world axis-aligned bounding boxes (AABBs), by sweep and prune.
 *
 * Each geometry's box [lo, hi] holds it (soa_shape_aabb: closed forms).  Two convex shapes whose
 * boxes are disjoint are apart, so only the pairs whose boxes overlap go on to the narrow phase
 * (collision.c).  Sweep and prune (Baraff 1992, PhD thesis, Cornell, sec. 6.2; Cohen, Lin, Manocha
 * & Ponamgi 1995, "I-COLLIDE", Symp. Interactive 3D Graphics; the broad phase of MuJoCo's
 * engine_collision_driver.c): the boxes sorted by their lower end on one axis, each box is tested
 * only against those that start before it ends on that axis, and then on the two other axes.  The
 * axis is the one along which the boxes' centres spread the most (the largest variance, as MuJoCo
 * chooses its sweep direction), kept until another spreads twice as much so that the order stays
 * nearly sorted.  The order is kept from one call to the next and sorted again by insertion: the
 * boxes move little in a step (temporal coherence), so the sort costs O(n + swaps) and the sweep
 * O(n + boxes overlapping on the axis), against O(pairs) for testing every pair.  The pairs found
 * are those the build allowed (a table by lower geometry, binary-searched), written in ascending
 * order so that the narrow phase meets them in the same order whatever the history.
 * Pure geometry on arrays: it knows no bodies, sweeps or laws; no allocation; C99, libm only. */
#include <math.h>

#include "collision.h"

#define BP_MARGIN 1e-9      /* m added to every box: a touch at round-off stays a candidate */

/* box = (lo, hi) of shape s (world): the support of s along the world axes, e_i = h(e_i) - p_i. */
void soa_shape_aabb(const soa_shape *s, double *box)
{
    const double *R = s->R, *e = s->size, r = s->r;
    double ext[3];
    for (int i = 0; i < 3; i++) {
        const double *Ri = R + 3 * i, a = fabs(Ri[2]);     /* (row i: e_i along the shape's axes) */
        switch (s->type) {
        case SOA_SHAPE_CAPSULE: ext[i] = a * e[0] + r; break;
        case SOA_SHAPE_CYLINDER: ext[i] = a * e[0] + r * sqrt(fmax(0.0, 1.0 - a * a)); break;
        case SOA_SHAPE_BOX:
            ext[i] = fabs(Ri[0]) * e[0] + fabs(Ri[1]) * e[1] + a * e[2];
            break;
        case SOA_SHAPE_ELLIPSOID:                            /* |diag(e) R* e_i| */
            ext[i] = sqrt(Ri[0] * Ri[0] * e[0] * e[0] + Ri[1] * Ri[1] * e[1] * e[1]
                          + Ri[2] * Ri[2] * e[2] * e[2]);
            break;
        case SOA_SHAPE_MESH: {                              /* the hull's vertices along e_i */
            double lo = HUGE_VAL, hi = -HUGE_VAL;
            for (int v = 0; v < s->nv; v++) {
                const double *x = s->v + 3 * v, t = Ri[0] * x[0] + Ri[1] * x[1] + Ri[2] * x[2];
                lo = fmin(lo, t);
                hi = fmax(hi, t);
            }
            box[i] = s->p[i] + lo - BP_MARGIN;
            box[3 + i] = s->p[i] + hi + BP_MARGIN;
            continue;
        }
        default: ext[i] = r;                                /* sphere */
        }
        box[i] = s->p[i] - ext[i] - BP_MARGIN;
        box[3 + i] = s->p[i] + ext[i] + BP_MARGIN;
    }
}

/* The sort key of pair entry x: x itself (keys = 0), or the higher geometry of pair x. */
static int key(int x, const int *geoms)
{
    if (!geoms) return x;
    return geoms[2 * x] > geoms[2 * x + 1] ? geoms[2 * x] : geoms[2 * x + 1];
}

/* a[0..n) ascending by key (heapsort: in place, O(n log n)). */
static void heap_sort(int *a, int n, const int *geoms)
{
    for (int end = n, start = n / 2; end > 1;) {
        if (start > 0) {
            start--;                                        /* build the heap */
        } else {
            const int t = a[--end];                         /* its top to the end */
            a[end] = a[0];
            a[0] = t;
        }
        for (int root = start, child; (child = 2 * root + 1) < end; root = child) {
            if (child + 1 < end && key(a[child + 1], geoms) > key(a[child], geoms)) child++;
            if (key(a[root], geoms) >= key(a[child], geoms)) break;
            const int t = a[root];
            a[root] = a[child];
            a[child] = t;
        }
    }
}

int soa_pair_index(int ngeom, int npair, const int *geoms, int *first, int *pairs, int *swept)
{
    for (int g = 0; g <= ngeom; g++) first[g] = 0;
    for (int g = 0; g < ngeom; g++) swept[g] = 0;
    for (int p = 0; p < npair; p++) {                       /* count by lower geometry */
        const int a = geoms[2 * p], b = geoms[2 * p + 1];
        first[(a < b ? a : b) + 1]++;
        swept[a] = swept[b] = 1;
    }
    for (int g = 0; g < ngeom; g++) first[g + 1] += first[g];
    for (int p = 0; p < npair; p++) {                       /* place (first[g]: the next slot) */
        const int a = geoms[2 * p], b = geoms[2 * p + 1];
        pairs[first[a < b ? a : b]++] = p;
    }
    for (int g = ngeom; g > 0; g--) first[g] = first[g - 1];
    first[0] = 0;
    for (int g = 0; g < ngeom; g++) heap_sort(pairs + first[g], first[g + 1] - first[g], geoms);
    int n = 0;
    for (int g = 0; g < ngeom; g++)
        if (swept[g]) swept[n++] = g;
    return n;
}

/* cand[nc++] = the pairs joining geometries lo < hi (the table of soa_pair_index). */
static int emit(int lo, int hi, const int *geoms, const int *first, const int *pairs, int *cand,
                int nc)
{
    int i = first[lo], j = first[lo + 1];
    while (i < j) {                                         /* the first entry >= hi */
        const int mid = i + (j - i) / 2;
        if (key(pairs[mid], geoms) < hi) i = mid + 1;
        else j = mid;
    }
    for (; i < first[lo + 1] && key(pairs[i], geoms) == hi; i++) cand[nc++] = pairs[i];
    return nc;
}

int soa_sweep_prune(const double *box, int n, int *order, int *axis, const int *geoms,
                    const int *first, const int *pairs, int *cand, int *tested)
{
    double mean[3] = {0.0, 0.0, 0.0}, var[3] = {0.0, 0.0, 0.0};
    *tested = 0;
    for (int i = 0; i < n; i++) {                           /* finite boxes; their centres' spread */
        const double *b = box + 6 * order[i];
        for (int k = 0; k < 3; k++) {
            if (!(fabs(b[k]) < HUGE_VAL && fabs(b[3 + k]) < HUGE_VAL)) return -1;
            mean[k] += 0.5 * (b[k] + b[3 + k]);
        }
    }
    for (int i = 0; i < n; i++) {
        const double *b = box + 6 * order[i];
        for (int k = 0; k < 3; k++) {
            const double c = 0.5 * (b[k] + b[3 + k]) - mean[k] / n;
            var[k] += c * c;
        }
    }
    int best = var[1] > var[0] ? 1 : 0;
    if (var[2] > var[best]) best = 2;
    if (*axis < 0 || *axis > 2 || var[best] > 2.0 * var[*axis]) *axis = best;
    const int x = *axis, u = (x + 1) % 3, w = (x + 2) % 3;
    for (int i = 1; i < n; i++) {                           /* insertion sort by lo[x] */
        const int g = order[i];
        const double lo = box[6 * g + x];
        int j = i;
        for (; j > 0 && box[6 * order[j - 1] + x] > lo; j--) order[j] = order[j - 1];
        order[j] = g;
    }
    int nc = 0;
    for (int i = 0; i < n; i++) {                           /* sweep */
        const int a = order[i];
        const double *A = box + 6 * a;
        for (int j = i + 1; j < n; j++) {
            const int b = order[j];
            const double *B = box + 6 * b;
            if (B[x] > A[3 + x]) break;                     /* (and every later box) */
            ++*tested;
            if (B[u] <= A[3 + u] && A[u] <= B[3 + u] && B[w] <= A[3 + w] && A[w] <= B[3 + w])
                nc = a < b ? emit(a, b, geoms, first, pairs, cand, nc)
                           : emit(b, a, geoms, first, pairs, cand, nc);
        }
    }
    heap_sort(cand, nc, 0);
    return nc;
}
