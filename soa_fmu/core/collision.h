/* Collision geometry (docs/contact.md): convex shapes placed in the world, their contacts with
 * world planes and with each other as contact manifolds (a normal and up to SOA_MANIFOLD points
 * with their penetrations; collision.c), and the broad phase that picks the pairs worth that
 * test (broadphase.c).  Pure geometry, below contact.c: it knows no bodies, sweeps or laws;
 * no allocation; C99, libc/libm only. */
#ifndef SOA_COLLISION_H
#define SOA_COLLISION_H

enum { SOA_SHAPE_SPHERE, SOA_SHAPE_CAPSULE, SOA_SHAPE_CYLINDER, SOA_SHAPE_BOX, SOA_SHAPE_MESH,
       SOA_SHAPE_ELLIPSOID, SOA_NSHAPES };
#define SOA_HULL_MAX 4096   /* vertices of one convex mesh's hull, at most (the model's tables hold
                               the hulls' own: soa_sizes.nhv) */
#define SOA_HULL_SCAN 32    /* a hull of at most this many vertices: its support point by a scan;
                               more: by hill climbing over its edges ... */
#define SOA_HULL_SEEDS 14   /* ... from the best of its first vertices (contact.py: the farthest
                               along the axes and the cube's diagonals), or from a hint */
#define SOA_MANIFOLD 4      /* contact points of one pair */

/* A convex shape in the world: x_world = R x + p (R row-major 3 x 3).  Sphere: radius r.
 * Capsule and cylinder: radius r, axis the shape's z, half-length size[0].  Box: half-extents
 * size[0..2].  Ellipsoid: semi-axes size[0..2] (> 0) along the shape's axes.  Mesh: the hull's nv
 * vertices v (shape frame, nv x 3), vertex i's neighbours on the hull adj[adj0[i] .. adj0[i + 1])
 * (numbered 0..nv-1; NULL: every support point by a scan).  c: a point inside the shape, its frame
 * (NULL: its origin).  hint (may be NULL): the hull vertex where hill climbing starts, then the one
 * it found (the functions below keep their own across their iterations). */
typedef struct {
    int type;
    const double *R, *p;
    double r;
    const double *size;
    const double *v;
    int nv;
    const int *adj0, *adj;
    const double *c;
    int *hint;
} soa_shape;

/* A contact: unit normal m from shape a towards the other (a plane: -n), n points x (world) with
 * their penetrations depth (> 0: touching); a pair apart has one point, midway between the
 * closest points (against a plane: on it), and depth = -(its gap), exact (GJK, closed forms). */
typedef struct {
    int n;
    double m[3];
    double x[SOA_MANIFOLD][3];
    double depth[SOA_MANIFOLD];
} soa_manifold;

/* The radius of a sphere about p that holds the shape. */
double soa_shape_bound(const soa_shape *s);
/* out = the shape's point farthest along d (its support point; d need not be unit). */
void soa_shape_support(const soa_shape *s, const double *d, double *out);
/* Shape a against the half-space n.x <= o (n unit): the points on the plane under a's deepest
 * features (file collision.c). */
void soa_collide_plane(const soa_shape *a, const double *n, double o, soa_manifold *c);
/* Shape a against shape b: closed forms for spheres and capsules, GJK for the gap of the others,
 * MPR for their penetration; the points midway into the overlap.  Returns 0, or 1 when the
 * iterations did not converge (the manifold then holds the last estimate). */
int soa_collide(const soa_shape *a, const soa_shape *b, soa_manifold *c);
/* The distance between shapes a and b (0 when they overlap), by GJK; closest points into pa, pb
 * (either may be NULL).  Returns 0, or 1 when the iterations did not converge. */
int soa_shape_distance(const soa_shape *a, const soa_shape *b, double *dist, double *pa,
                       double *pb);

/* ---- broadphase.c: which allowed pairs may touch (sweep and prune over world AABBs) ---- */
/* box = (lo[3], hi[3]): the world axis-aligned box that holds shape s (closed forms; a mesh: its
 * hull's vertices), padded by a nanometre. */
void soa_shape_aabb(const soa_shape *s, double *box);
/* The table of the allowed pairs (built once): pair p joins geometries geoms[2p], geoms[2p + 1]
 * (of ngeom); pairs[first[g] .. first[g + 1]) lists the pairs whose lower geometry is g, ascending
 * in the higher (first: ngeom + 1, pairs: npair).  swept: the geometries in some pair (ngeom
 * slots); returns their number. */
int soa_pair_index(int ngeom, int npair, const int *geoms, int *first, int *pairs, int *swept);
/* Sweep and prune over the boxes (box: 6 per geometry) of the n geometries in order (a
 * permutation of soa_pair_index's swept, kept from call to call: sorted again here), along *axis
 * (kept, or set to the axis of largest spread; start it at -1).  cand: the allowed pairs whose
 * boxes overlap, ascending (room for npair); tested: the box tests made.  Returns their number,
 * or -1 when a box is not finite (cand then unset). */
int soa_sweep_prune(const double *box, int n, int *order, int *axis, const int *geoms,
                    const int *first, const int *pairs, int *cand, int *tested);

#endif
