/* soa_fmu C99 core: the Model / Data types and every entry point of the engine.
 *
 * A soa_model holds the constants of a mechanism (topology, joint maps, placements, inertias),
 * immutable once soa_model_finish() has accepted it; a soa_data holds every per-call array of the
 * sweeps, allocated once by soa_data_new() and reused.  Each buffer of either is declared ONCE, in
 * the X-macro tables below (name, dimensions in terms of the model's sizes): allocation, sizes,
 * the Python views of soa_fmu._core and state serialization are all derived from these lines.
 *
 * Conventions (seed 000 §2): spatial velocities V = [w; v], forces f = [N; F]; every body carries
 * its own frame; bodies are numbered parents before children (parent[k] < k), so an outward
 * (phi*) sweep is k = 0..nb-1 and an inward (phi) sweep k = nb-1..0.  Matrices are row-major.
 *
 * Every kernel returns a soa_status {kind, index} (index: the offending coordinate, body or
 * constraint) and never aborts; no kernel allocates.
 *
 * The files call only downward (joints, placements, kinematic sweeps with flexible bodies
 * dispatched to flexible_body.h, recursions, contact forces, articulated sweeps, constraints,
 * integrators): the order is defined once, in tests/test_core_layers.py LAYERS, which fails on a
 * call upward or sideways.
 */
#ifndef SOA_H
#define SOA_H

#include <stddef.h>

/* ------------------------------------------------------------------ joint types (joints.c) */
enum { SOA_FIXED, SOA_REVOLUTE, SOA_PRISMATIC, SOA_SPHERICAL, SOA_FREE, SOA_PLANAR, SOA_GENERAL,
       SOA_NJOINTTYPES };

/* ------------------------------------------------------------------ constraint kinds (closures.c) */
enum { SOA_WELD, SOA_BALL, SOA_HINGE, SOA_SOFT_FINGER, SOA_NCONSTRAINTKINDS };

/* ------------------------------------------------------------------ status */
typedef enum {
    SOA_OK = 0,
    SOA_BAD_Q,          /* q[index] is not finite */
    SOA_BAD_QD,         /* qd[index] is not finite */
    SOA_BAD_TAU,        /* tau[index] is not finite */
    SOA_BAD_QDD,        /* qdd[index] is not finite */
    SOA_BAD_QUAT,       /* the quaternion of body index is not unit length */
    SOA_BAD_FEXT,       /* the external force on body index is not finite */
    SOA_SINGULAR,       /* D(index) of the Riccati sweep is not positive definite */
    SOA_DIVERGED,       /* a step diverged (a non-finite state, or a singular D after a healthy
                           start): index the largest state component (theta, then beta), its value
                           in d->diverged (soa_diverged) */
    SOA_BAD_MODEL,      /* soa_model_finish: body index breaks a structural rule */
    SOA_BAD_ARG,        /* an argument outside its domain; index 0: a step size, 1: a tolerance,
                           2: no such constraint */
    /* ---- dop853 (adaptive integrator) and fuzzed inputs */
    SOA_STEP_TOO_SMALL, /* the adaptive step fell below the spacing of floats near t; index: the
                           state component (theta, then beta) with the largest scaled error */
    SOA_TOO_MANY_STEPS, /* the adaptive integrator took SOA_DOP853_MAX_STEPS steps in one call */
    SOA_BAD_RESULT,     /* a result is not finite (finite inputs out of range: overflow); index:
                           its row, a velocity dof */
    /* ---- closed chains (operational_space.c, closures.c) ---- */
    SOA_BAD_CONSTRAINT, /* soa_model_finish: constraint index has a bad kind, body or constant */
    SOA_BAD_FRAME,      /* a point / frame argument: body index out of range or not finite */
    SOA_BAD_U,          /* the prescribed velocity u of constraint index is not finite */
    SOA_BAD_UDOT,       /* its derivative udot is not finite */
    SOA_BAD_ANCHOR,     /* the anchor (target pose) of constraint index is not a finite pose */
    SOA_BAD_GAINS,      /* the stabilization gains are not finite and >= 0 */
    SOA_CONSTRAINT_SINGULAR, /* the active constraints are singular at this configuration
                                (d->cl_info, d->cl_involved say which); index: the first one */
    /* ---- physical parameters (model.c, dissipation.c) ---- */
    SOA_BAD_INERTIA,    /* body index: mass < 0 or not finite, or J_C not symmetric, not positive
                           semi-definite or breaking the triangle inequality (soa_inertia_problem) */
    SOA_BAD_DISSIPATION, /* damping or friction of velocity dof index is not finite and >= 0;
                            index nv: the friction regularization velocity is not finite and > 0 */
    SOA_UNSUPPORTED,    /* an algorithm that does not handle flexible bodies (body index); every
                           family takes them today: kept so that the status codes stay stable */
    SOA_BAD_JOINT,      /* the armature or a joint stop (limits, stiffness, damping) of velocity
                           dof index is not finite and >= 0, or lower > upper */
    SOA_IMPLICIT_UNSUPPORTED, /* the implicit integrators do not handle this model: index 1
                                 closure constraints */
    /* ---- bounded steps (integrators.c, constraint_time.c) ---- */
    SOA_TOO_MANY_SUBSTEPS, /* a fixed-step call would need more than SOA_MAX_SUBSTEPS sub-steps
                              (h / max_step too large); index: SOA_MAX_SUBSTEPS */
    /* ---- contact.c ---- */
    SOA_BAD_CONTACT,    /* a contact constant is out of its domain; index: SOA_CONTACT_ROWS * e + c,
                           e = 0 the model's law, 1 + s sphere s, 1 + nsph + j plane j,
                           1 + nsph + npln + p sphere pair p; c the constant (SOA_CT_*) */
    /* ---- mimic.c ---- */
    SOA_BAD_MIMIC,      /* the mimic coupling of velocity dof index: its driver is not another,
                           independent 1-dof revolute / prismatic dof, or the multiplier or offset
                           is not finite; index nv: mimic couplings on a model with flexible bodies */
    SOA_NSTATUS
} soa_kind;

typedef struct { int kind; int index; } soa_status;

/* Names for messages (status.c): name(ctx, SOA_NAME_*, index) -> a NUL-terminated string. */
enum { SOA_NAME_BODY, SOA_NAME_JOINT, SOA_NAME_POSITION, SOA_NAME_VELOCITY, SOA_NAME_CONSTRAINT,
       SOA_NAME_CONTACT /* spheres, then planes, then sphere pairs */ };
typedef struct {
    const char *(*name)(const void *ctx, int which, int index);
    const void *ctx;
} soa_names;

#define SOA_MAX_MODES 256    /* modal coordinates of one flexible body, at most */
#define SOA_QUAT_TOL 1e-6   /* tolerance on |q|^2 - 1 of a joint quaternion */
#define SOA_FRICTION_VELOCITY 0.01   /* default v_s of a new model (vfric; dissipation.c) */
/* contact.c: the law's constants, in this order in ct_law, sp_law, pl_law (Hunt-Crossley
 * f_n = k delta^n (1 + d delta-dot), regularized Coulomb mu, v_s), then the geometry's checks */
enum { SOA_CT_STIFFNESS, SOA_CT_EXPONENT, SOA_CT_DISSIPATION, SOA_CT_FRICTION, SOA_CT_STICTION,
       SOA_CT_GEOMETRY, SOA_CONTACT_ROWS };
#define SOA_CT_NLAW 5
/* contact.c: the broad phase's state in d->bp_info.  SOA_BP_OFF (set by the user of the data: tests,
 * benchmarks): 1 tests every pair, as without a broad phase. */
enum { SOA_BP_VALID, SOA_BP_AXIS, SOA_BP_NNEAR, SOA_BP_TESTED, SOA_BP_OFF, SOA_BP_NINFO };
#define SOA_CONTACT_MAX_IMPLICIT 32   /* touching points whose damping is implicit (more: explicit) */
#define SOA_ROS_MAX_STAGES 4          /* stages of a Rosenbrock tableau (integrators.c) */
#include "collision.h"              /* the shapes (SOA_SHAPE_*, SOA_HULL_MAX, SOA_MANIFOLD) */

/* ------------------------------------------------------------------ sizes */
/* What a model's buffers are sized by.  Other families add their counts here. */
typedef struct {
    int nb;     /* bodies */
    int nq;     /* configuration coordinates */
    int nv;     /* velocity coordinates */
    int nc;     /* closure constraints (closures.c) */
    int nm;     /* flexible.c: the most modal coordinates of one body (0: every body rigid) */
    int nsph;   /* contact.c: contact geometries on bodies (spheres and the other shapes) */
    int npln;   /* contact.c: contact planes fixed in world */
    int nssp;   /* contact.c: geometry pairs that may touch */
    int nhv;    /* contact.c: the vertices of every mesh's convex hull, together */
} soa_sizes;

/* Declares the sizes of model m as local constants, so the table expressions below evaluate. */
#define SOA_SIZES(m)                                                                          \
    const int nb = (m)->nb, nq = (m)->nq, nv = (m)->nv, nc = (m)->nc, nm = (m)->nm;             \
    const int nbf = nm ? nb : 0, nx = 6 + nm;  /* flexible tables: bodies, 6 + modes */          \
    const int nsph = (m)->nsph, npln = (m)->npln, nssp = (m)->nssp, nhv = (m)->nhv;              \
    const int npair = nsph * npln + nssp;      /* contact pairs: geometry-plane, then pairs */  \
    const int npt = SOA_MANIFOLD * npair;      /* their contact points (SOA_MANIFOLD a pair) */ \
    const int nimp = npt < SOA_CONTACT_MAX_IMPLICIT ? npt : SOA_CONTACT_MAX_IMPLICIT;         \
    (void)nb; (void)nq; (void)nv; (void)nc; (void)nm; (void)nbf; (void)nx;                      \
    (void)nsph; (void)npln; (void)nssp; (void)nhv; (void)npair; (void)npt; (void)nimp

/* X(name, ndim, d0, d1, d2): one buffer, dims d0 x d1 x d2 (only the first ndim used). */

/* ------------------------------------------------------------------ the model (constants) */
#define SOA_MODEL_INTS(X)                                                                     \
    X(parent,  1, nb, 0, 0)   /* parent body, -1 = world (connectivity iota(k), seed 000 2.7) */ \
    X(jtype,   1, nb, 0, 0)   /* joint type SOA_FIXED ... */                                     \
    X(q0,      1, nb, 0, 0)   /* first configuration index of the joint */                       \
    X(v0,      1, nb, 0, 0)   /* first velocity index of the joint */                            \
    X(nqj,     1, nb, 0, 0)   /* configuration size of the joint */                              \
    X(nvj,     1, nb, 0, 0)   /* velocity size r_v(k) of the joint */                            \
    X(vend,    1, nb, 0, 0)   /* one past the last velocity index of the body's subtree */     \
    X(dfs0,    1, nb, 0, 0)   /* first column of the body's dofs in depth-first order */       \
    X(dfsend,  1, nb, 0, 0)   /* one past its subtree's columns in depth-first order */        \
    X(vdfs,    1, nv, 0, 0)   /* depth-first column of each velocity dof */                     \
    X(vcol,    1, nv, 0, 0)   /* the velocity dof at each depth-first column (vdfs inverse) */  \
    X(lamslot, 1, nb, 0, 0)   /* block of d->blocks holding Lambda(k) in soa_minv: the parent's \
                                 for its last child (updated in place), else k's own */          \
    /* ---- closures.c: the closure constraints (seed 000 sec. 2.3; seed 003 Part II) ---- */   \
    X(cn_kind,   1, nc, 0, 0) /* SOA_WELD, SOA_BALL, SOA_HINGE, SOA_SOFT_FINGER */                \
    X(cn_size,   1, nc, 0, 0) /* rows of the constraint (6, 3, 5, 4) */                          \
    X(cn_body_a, 1, nc, 0, 0) /* body of frame_a, -1 = world */                                  \
    X(cn_body_b, 1, nc, 0, 0) /* body of frame_b, -1 = world */ \
    /* ---- derivatives.c: the dofs of k and its ancestors as runs ---- */                      \
    X(arun0,   1, nb, 0, 0)   /* first dof of the run ending with k's dofs */                   \
    X(arunup,  1, nb, 0, 0)   /* the nearest body above that run with dofs, -1 = none */ \
    /* ---- dissipation.c: joint stops (one-sided spring-dampers beyond lower / upper) ---- */   \
    X(stop_on, 1, nv, 0, 0)   /* per velocity dof: 1 lower stop, 2 upper, 3 both, 0 none (only \
                                 revolute / prismatic dofs) */                                   \
    X(stop_qi, 1, nv, 0, 0)   /* the dof's configuration index (derived by soa_model_finish) */ \
    /* ---- mimic.c: URDF <mimic> couplings q_m = k q_j + c between 1-dof joints ---- */        \
    X(mim_drv, 1, nv, 0, 0)   /* per velocity dof m: 1 + the driving dof j it mimics, 0: none */ \
    X(mim_dof, 1, nv, 0, 0)   /* the mimicking dofs, first nmim (soa_model_finish) */           \
    X(stops,   1, 1, 0, 0)    /* 1: the joint stops act (the switch stops_enabled) */          \
    /* ---- flexible.c: flexible bodies (seed 000 sec. 4); sized 0 when every body is rigid ---- */ \
    X(nmod,    1, nbf, 0, 0)  /* modal coordinates eta(k) of body k, in q and qd right after its \
                                 joint's coordinates (0: rigid) */                                 \
    X(attach,  1, nbf, 0, 0)  /* 1: k's joint frame sits on a node of its flexible parent */ \
    X(fl_kids, 1, nbf, 0, 0)  /* children of body k (soa_model_finish): soa_flex_fd forms P(k) \
                                 from fl_M through them, not by a copy */                        \
    X(fl_frame, 1, nbf, 0, 0) /* attach[k]: bit 1 joint frame along the parent's axes (Xr = 1), \
                                 bit 2 on the node (Xp = at_r) (soa_model_finish) */             \
    X(fl_diag, 1, nbf, 0, 0)  /* 1: fl_K(k) and fl_D(k) are diagonal (normal modes; derived by \
                                 soa_model_finish) */                                            \
    /* ---- contact.c: geometries on bodies ("spheres", sp_: every shape), planes in world, \
       geometry pairs ---- */                                                                    \
    X(sp_body, 1, nsph, 0, 0) /* body carrying geometry s */                                    \
    X(sp_set,  1, nsph, 0, 0) /* bit c: the geometry overrides law constant c (SOA_CT_*) */     \
    X(sp_shape, 1, nsph, 0, 0) /* its shape SOA_SHAPE_* (collision.h) */                        \
    X(sp_nvert, 1, nsph, 0, 0) /* a mesh: its hull's vertex count (1..SOA_HULL_MAX) ... */      \
    X(sp_hv0,  1, nsph, 0, 0) /* ... and its first vertex in sp_hull, hv_adj0 */               \
    X(hv_adj0, 1, nhv + 1, 0, 0) /* hull vertex i's neighbours on its hull are hv_adj[hv_adj0[i] \
                                 .. hv_adj0[i + 1]) (the edges of Qhull's triangulated hull) */ \
    X(hv_adj,  1, 6 * nhv, 0, 0) /* ... numbered within their mesh (a triangulated hull of V \
                                 vertices has 3 V - 6 edges: 6 V - 12 entries at most) */       \
    X(pl_set,  1, npln, 0, 0) /* bit c: the plane overrides law constant c */                   \
    X(ss_pair, 2, nssp, 2, 0) /* the two geometries (a, b) of each pair that may touch */       \
    X(bp_first, 1, nsph + 1, 0, 0) /* broadphase.c: the pairs by lower geometry g are bp_pairs \
                                 [bp_first[g], bp_first[g + 1]) (soa_contact_finish) */          \
    X(bp_pairs, 1, nssp, 0, 0) /* ... ascending in the higher geometry */                       \
    X(bp_geoms, 1, nsph, 0, 0) /* the geometries in some pair (first bp_ngeom): the swept ones */ \
    X(bp_ngeom, 1, 1, 0, 0)    /* their number */                                               \
    X(pr_set,  1, npair, 0, 0) /* bit c: contact pair p (geometry-plane, then ss_pair) has its own \
                                  law constant c in pr_law (an MJCF pair's: io/mjcf_law.py) */   \
    /* ---- model.c: fixed links folded into their parents' rigid bodies (soa_model_finish) ---- */ \
    X(order,   1, nb, 0, 0)   /* the moving bodies ascending (first nmov), then the folded ones */ \
    X(spar,    1, nb, 0, 0)   /* sweep parent: a moving body's nearest moving ancestor; a folded \
                                 body's carrier, the moving body it is folded into (-1: world) */ \
    X(fixr,    1, nb, 0, 0)   /* the moving bodies whose parent is folded off its carrier's \
                                 frame (first nfix): their R, l are restored after a fast sweep */ \
    X(quatb,   1, nb, 0, 0)   /* joints.c: the bodies whose joint has a quaternion (spherical, \
                                 free), first nquat */                                           \
    X(jaxis,   1, nb, 0, 0)   /* kinematics.c: 0, 1, 2 for a revolute / prismatic joint about that \
                                 coordinate axis of its joint frame, H* the unit twist along it; \
                                 else -1 (soa_model_finish) */                                   \
    X(jmap,    1, nb, 0, 0)   /* kinematics.c: the form of H*_I = phi(I, k) H*(k): 0-2 revolute, \
                                 3-5 prismatic about that coordinate axis (jaxis), 6 a revolute \
                                 H* = [s; 0], 7 a prismatic [0; s] about any other axis; -1 any */

#define SOA_MODEL_REALS(X)                                                                    \
    X(axis,    2, nb, 3, 0)   /* revolute/prismatic axis, planar normal (unit) */               \
    X(basis,   3, nb, 3, 3)   /* planar basis, columns (e1, e2, n) */                            \
    X(S,       2, nv, 6, 0)   /* joint map H*(k), one row per velocity dof, body frame */        \
    X(Xr,      3, nb, 3, 3)   /* joint frame rotation in the parent frame */                     \
    X(Xp,      2, nb, 3, 0)   /* joint frame origin in the parent frame */                       \
    X(mass,    1, nb, 0, 0)   /* body mass m(k) */                                               \
    X(com,     2, nb, 3, 0)   /* centre of mass p(k), body frame */                              \
    X(Jc,      3, nb, 3, 3)   /* rotational inertia J_C(k) about the centre of mass, body axes */ \
    X(inertia, 3, nb, 6, 6)   /* M(k) about the body origin, body frame: derived from (m, p, J_C) \
                                 by soa_model_finish (seed 000 sec. 2) */                        \
    X(a0,      1, 6, 0, 0)    /* base acceleration [0; -g]: gravity as a base acceleration */   \
    /* ---- model.c: the folded rigid bodies (soa_model_finish; see fold_fixed_links) ---- */   \
    X(fXr,     3, nb, 3, 3)   /* moving body: its joint frame in spar's frame; folded body: its \
                                 own frame in its carrier's (world's when spar = -1) */         \
    X(fXp,     2, nb, 3, 0)   /* ... the origin of that frame */                                \
    X(fmass,   1, nb, 0, 0)   /* the folded rigid body: a moving body with its folded links */  \
    X(fcom,    2, nb, 3, 0)   /* (0 for a folded body): mass, centre of mass, body frame, */     \
    X(fJc,     3, nb, 3, 3)   /* rotational inertia about that centre, body axes, */           \
    X(finertia, 3, nb, 6, 6)  /* and M(k) about the body origin (what the dynamics read) */     \
    X(jrot,    3, nb, 3, 9)   /* kinematics.c: a revolute joint about a non-coordinate unit axis \
                                 u: fXr Rj(theta) = C + cos(theta) A + sin(theta) B with \
                                 C = (fXr u) u^T, A = fXr - C, B = fXr u~ (Rodrigues); a \
                                 prismatic one: fXr u in A's first 3; else 0 (soa_model_finish) */ \
    X(fJg,     2, nb, 7, 0)   /* fJc = l 1 + g1 g1^T + g2 g2^T: (l, g1, g2) (l its least        \
                                 eigenvalue; the outward passes rotate g1, g2, not fJc) */      \
    /* ---- dissipation.c: joint forces the simulator adds, -d qd - f_c tanh(qd / v_s) ---- */   \
    X(damping,  1, nv, 0, 0)  /* viscous damping d per velocity dof (N.m.s/rad or N.s/m) */     \
    X(friction, 1, nv, 0, 0)  /* Coulomb friction force f_c per velocity dof (N.m or N) */      \
    X(vfric,    1, 1, 0, 0)   /* regularization velocity v_s of the friction (rad/s or m/s) */  \
    X(armature, 1, nv, 0, 0)  /* rotor inertia a per velocity dof (kg.m^2 or kg): the mass matrix \
                                 is M + diag(a) in every algorithm (D(k) += a, seed 001 eq. 35) */ \
    X(stop_lo,  1, nv, 0, 0)  /* joint stop limits (rad or m; used where stop_on says) */       \
    X(stop_hi,  1, nv, 0, 0)                                                                     \
    X(stop_k,   1, nv, 0, 0)  /* stop stiffness k (N.m/rad or N/m) */                           \
    X(stop_b,   1, nv, 0, 0)  /* stop damping b (N.m.s/rad or N.s/m) */                         \
    X(mim_k,    1, nv, 0, 0)  /* mimic multiplier k of dof m (where mim_drv[m] > 0) */          \
    X(mim_c,    1, nv, 0, 0)  /* ... and offset c (rad or m) */                                 \
    /* ---- closures.c: placements of the constraint frames, rows A (seed 000 eq. 2.16) ---- */ \
    X(cn_Ra,   3, nc, 3, 3)   /* frame_a in its body (x_body = Ra x_frame) */                   \
    X(cn_pa,   2, nc, 3, 0)   /* frame_a origin in its body */                                   \
    X(cn_Rb,   3, nc, 3, 3)   /* frame_b in its body */                                          \
    X(cn_pb,   2, nc, 3, 0)   /* frame_b origin in its body */                                   \
    X(cn_axis, 2, nc, 3, 0)   /* n of a hinge / soft finger, frame_a axes (unit) */              \
    X(cn_A,    3, nc, 6, 6)   /* rows A (first cn_size used), frame_a axes: derived from kind \
                                 and axis by soa_model_finish (soa_constraint_rows) */ \
    /* ---- flexible.c: generalized mass, modal stiffness and damping, attachment nodes ---- */  \
    X(fl_M,    3, nbf, nx, nx) /* mass of body k for (omega, v, eta-dot) about its origin, body \
                                  axes: [B; h* Psi] m [B; h* Psi]* (seed 000 eq. 4.3) */          \
    X(fl_K,    3, nbf, nm, nm) /* modal stiffness Psi* K Psi */                                   \
    X(fl_D,    3, nbf, nm, nm) /* modal damping */                                                \
    X(at_r,    2, nbf, 3, 0)   /* attach[k]: the node's location in the parent frame */           \
    X(at_Psi,  3, nbf, 6, nm)  /* ... and its deformation per parent mode, rows (rotation; \
                                  translation), parent frame */ \
    /* ---- contact.c: the law's constants (SOA_CT_* order) and the geometry ---- */             \
    X(ct_law,    1, SOA_CT_NLAW, 0, 0)  /* model-wide k, n, d, mu, v_s */                       \
    X(sp_center, 2, nsph, 3, 0)         /* geometry's origin (a sphere's centre), body frame */ \
    X(sp_radius, 1, nsph, 0, 0)         /* radius: sphere (0: a point), capsule, cylinder */    \
    X(sp_rot,    3, nsph, 3, 3)         /* its axes in the body frame (x_body = R x + centre) */ \
    X(sp_size,   2, nsph, 3, 0)         /* box: half-extents; capsule, cylinder: half-length */ \
    X(sp_hull,   2, nhv, 3, 0)          /* every mesh's convex hull vertices, its frame */     \
    X(sp_inner,  2, nsph, 3, 0)         /* a point inside the geometry, its frame (a mesh: its \
                                           hull's vertex mean; soa_contact_finish): GJK, MPR */ \
    X(sp_bound,  1, nsph, 0, 0)         /* radius of a sphere about the origin that holds it \
                                           (soa_contact_finish): the broad phase */            \
    X(sp_law,    2, nsph, SOA_CT_NLAW, 0) /* the geometry's constants (used where sp_set) */    \
    X(pl_normal, 2, npln, 3, 0)         /* plane unit normal n, world, out of the solid */      \
    X(pl_offset, 1, npln, 0, 0)         /* o: the plane is n.x = o */                           \
    X(pl_law,    2, npln, SOA_CT_NLAW, 0) /* the plane's constants (used where pl_set) */    \
    X(pr_law,    2, npair, SOA_CT_NLAW, 0) /* the pair's own constants (used where pr_set) */

/* ------------------------------------------------------------------ the data (workspace) */
/* Frames: V, a, b, alpha, f, P, G are in body frames after the body-frame sweeps
 * (soa_kinematics, soa_rnea, soa_aba_bias_free, soa_tree_acceleration), and in the inertial frame
 * (world axes, world origin; seed 004 sec. 5) after soa_aba and the integrators, which use the
 * cheaper inertial-frame pipeline soa_tree_acceleration_inertial. */
#define SOA_DATA_REALS(X)                                                                     \
    X(R,       3, nb, 3, 3)   /* body rotation in its parent (x_parent = R x_body) */            \
    X(l,       2, nb, 3, 0)   /* parent origin -> body origin, parent frame */                   \
    X(Rw,      3, nb, 3, 3)   /* body rotation in world */                                       \
    X(pw,      2, nb, 3, 0)   /* body origin in world */                                         \
    X(Rj,      3, nb, 3, 3)   /* joint rotation (body in joint frame) */                         \
    X(tj,      2, nb, 3, 0)   /* joint translation */                                            \
    X(V,       2, nb, 6, 0)   /* spatial velocity V(k) */                                        \
    X(a,       2, nb, 6, 0)   /* Coriolis acceleration a(k) */                                   \
    X(b,       2, nb, 6, 0)   /* gyroscopic force b(k) */                                        \
    X(alpha,   2, nb, 6, 0)   /* spatial acceleration alpha(k) */                                \
    X(f,       2, nb, 6, 0)   /* spatial force f(k) / filtered residual z(k) */                  \
    X(fext,    2, nb, 6, 0)   /* external forces on the bodies, body frames */                   \
    X(zeta,    2, nb, 6, 0)   /* zeta = phi* a (Algorithm 2) */                                  \
    X(Mw,      3, nb, 6, 6)   /* M_I(k): body inertia at the world origin, world axes */         \
    X(P,       3, nb, 6, 6)   /* articulated inertia P(k) / composite inertia r(k) (body frames) */ \
    X(Pu,      2, nb, 21, 0)  /* P(k) of the inertial-frame sweeps, packed (upper triangle, row \
                                 by row: spatial.h packed_apply) */                              \
    X(Dinv,    3, nb, 6, 6)   /* D(k)^-1 (r_v x r_v block) */                                    \
    X(G,       3, nb, 6, 6)   /* Kalman gain G(k) = P H* D^-1 (6 x r_v block) */                 \
    X(blocks,  3, nb, 6, nv)  /* per-body 6 x nv blocks (M^-1 sweeps) */                         \
    X(Y,       2, 6, nv, 0)   /* 6 x nv scratch block */                                         \
    X(Sw,      2, nv, 6, 0)   /* joint maps H* in the inertial frame (world axes and origin) */  \
    X(eps,     1, nv, 0, 0)   /* innovations epsilon */                                          \
    X(nu,      1, nv, 0, 0)   /* weighted residuals nu = D^-1 eps */                             \
    X(tbias,   1, nv, 0, 0)   /* bias torques (Algorithm 2) */                                   \
    X(tprime,  1, nv, 0, 0)   /* T' = T - bias (Algorithm 2) */                                  \
    X(zerov,   1, nv, 0, 0)   /* nv zeros (a rest acceleration) */                               \
    X(s6,      2, 4, 6, 0)    /* 6-vector scratch */                                             \
    X(s66,     3, 6, 6, 6)    /* 6x6 scratch (2: D, 3: P+, 4-5: Cholesky of the Riccati step) */   \
    X(kq,      2, 4, nq, 0)   /* RK4 stage rates of theta */                                     \
    X(kv,      2, 4, nv, 0)   /* RK4 stage rates of beta */                                      \
    X(qs,      1, nq, 0, 0)   /* stage configuration */                                          \
    X(vs,      1, nv, 0, 0)   /* stage velocity */                                               \
    X(dv,      1, nv, 0, 0)   /* a velocity increment */                                         \
    X(tau_j,   1, nv, 0, 0)   /* joint forces with dissipation, tau - d qd - f_c s(qd) + stops */ \
    X(stop_tau, 1, nv, 0, 0)  /* the stops' joint forces of the last soa_joint_forces */         \
    X(jdiag,   1, nv, 0, 0)   /* the diagonal added to D(k) by an implicit step: a + h B + h^2 K */ \
    X(jrhs,    1, nv, 0, 0)   /* ... and its joint forces T - h K beta */                        \
    X(diverged, 1, 1, 0, 0)   /* soa_diverged: the value of the largest state component */      \
    /* ---- integrators.c: the Rosenbrock stages (soa_rosenbrock; docs/joints.md) ---- */       \
    X(ros_U,   2, SOA_ROS_MAX_STAGES, nq + 2 * nv, 0) /* stage i: U_theta (nq), its tangent      \
                                 V (nv), U_beta (nv) */                                           \
    X(ros_w,   2, 3, nv, 0)   /* a stage's r and s; beta + U_beta */                           \
    X(ros_y0,  1, nq + nv, 0, 0) /* error control: (theta, beta) at the sub-step's start */      \
    /* ---- dop853.c: Dormand-Prince 8(5,3) on y = (theta, beta), n = nq + nv ---- */            \
    X(dop_K,     2, 13, nq + nv, 0) /* rates K(0..11) of the stages, K(12) = f(t+h, y_new) */    \
    X(dop_y,     1, nq + nv, 0, 0)  /* y at the start of the step */                             \
    X(dop_ynew,  1, nq + nv, 0, 0)  /* y at the end of the step (8th order) */                   \
    X(dop_ys,    1, nq + nv, 0, 0)  /* stage state y + h sum_j a(s, j) K(j) */                   \
    X(dop_err,   2, 2, nq + nv, 0)  /* scaled error estimates: 5th order, 3rd order */           \
    X(dop_h,     1, 1, 0, 0)        /* last accepted step = next call's first (0: choose) */     \
    X(dop_stats, 1, 3, 0, 0)        /* last call: rhs evaluations, accepted, rejected steps */ \
    /* ---- operational_space.c: the Omega recursion (inertial frame; seed 000 A.3-A.5) ---- */   \
    X(os_Ups,   3, nb, 6, 6)  /* Upsilon(k) = Omega(k, k) on the paths of the points */          \
    X(os_Psi,   3, nb, 6, 6)  /* psi(c, k) for a body k carrying points, c where it has got to */ \
    X(os_J,     2, 6, nv, 0)  /* flexible models: a point's rows J (6 x nv) ... */               \
    X(os_X,     2, nv, 6, 0)  /* ... and M^-1 J* (nv x 6) */                                     \
    /* ---- closures.c: per-call arrays of the closure constraints (steps B-F) ---- */          \
    X(cl_R,     3, 2 * nc, 3, 3)  /* closure points (frame_a side, frame_b side) in their body:  \
                                     axes (frame_a's) ... */                                      \
    X(cl_l,     2, 2 * nc, 3, 0)  /* ... and origin (frame_b's origin x_b), body frame */         \
    X(cl_L,     2, 12 * nc, 12 * nc, 0) /* Lambda^-1 = B* Omega B of the closure points */        \
    X(cl_Vrel,  2, nc, 6, 0)  /* relative velocity V~ of frame_b in frame_a (frame_a axes) */    \
    X(cl_arel,  2, nc, 6, 0)  /* its derivative at the current alpha (free: alpha~f) */          \
    X(cl_err,   2, nc, 6, 0)  /* position error rows e (first cn_size used) */                   \
    X(cl_resid, 1, nc, 0, 0)  /* |e| */                                                          \
    X(cl_S,     2, 6 * nc, 6 * nc, 0) /* A Lambda^-1 A* of the active rows */                     \
    X(cl_C,     2, 6 * nc, 6 * nc, 0) /* its Jacobi-scaled Cholesky factor / eigen workspace */   \
    X(cl_V,     2, 6 * nc, 6 * nc, 0) /* eigenvectors of the scaled A Lambda^-1 A* */             \
    X(cl_eig,   1, 6 * nc, 0, 0)  /* its eigenvalues */                                          \
    X(cl_rhs_dyn,  1, 6 * nc, 0, 0) /* A alpha~f - U~dot */                                      \
    X(cl_rhs_stab, 1, 6 * nc, 0, 0) /* 2 alpha (A V~ - U~) + beta^2 e */                        \
    X(cl_f,     1, 6 * nc, 0, 0)  /* f~ (the papers' sign: minus the force on frame_b's body) */ \
    X(cl_ds,    1, 6 * nc, 0, 0)  /* Jacobi scaling */                                           \
    X(cl_y,     1, 6 * nc, 0, 0)  /* scratch */                                                  \
    X(cl_nullw, 1, 6 * nc, 0, 0)  /* weight of each row in the dependent directions found */     \
    X(cl_fext,  2, nb, 6, 0)  /* the closure forces -A* f~ on the bodies, body frames */         \
    X(cl_qfree, 1, nv, 0, 0)  /* beta-dot f: the tree's free accelerations */                   \
    X(cl_dq,    1, nv, 0, 0)  /* the correction accelerations */                             \
    X(cl_tip,   1, 6 * nc, 0, 0)  /* RCCFD2, 3: A J M^-1 T' of the active rows (seed 003 eq. 6.13) */ \
    X(cl_arhs,  1, 6 * nc, 0, 0)  /* ... the rest of the right-hand side, -a'(C) + stabilization */ \
    X(cl_f2,    1, 6 * nc, 0, 0)  /* ... RCCFD3: f~2 = Omega^-1 of it (eq. 6.20) */               \
    /* ---- constraint_time.c: a step with switching and moving targets ---- */                 \
    X(cl_anch0, 2, nc, 16, 0) /* the targets at the step's start (after re-anchoring) */        \
    X(cl_anch_t, 2, nc, 16, 0) /* the targets at a stage's time */                              \
    X(cl_q,     1, nq, 0, 0)  /* the step's working configuration */                            \
    X(cl_qd,    1, nv, 0, 0)  /* ... and velocity */ \
    /* ---- sensitivities.c, derivatives.c (inertial frame, seed 004 sec. 5.2) ---- */           \
    X(Ri,      2, nb, 10, 0)  /* composite inertia R_I(k), compact: J (6), m c (3), m (also crba) */ \
    X(Rdot,    2, nb, 10, 0)  /* its rate (compact, m-dot = 0), seed 004 eq. 3.19 summed */      \
    X(hc,      2, nb, 6, 0)   /* composite momentum h(k) = sum_{c >= k} M_I V_I */               \
    X(Fs,      2, nv, 6, 0)   /* F(i) = R_I(k) H*_I(i), k the body of dof i */                   \
    X(cor_u,   2, nv, 6, 0)   /* Coriolis: u(a) = s(a) x~ V_I(A), A the body of a */             \
    X(cor_X,   2, nv, 6, 0)   /* Coriolis: C(a, b) = s(a) . X(b), a above b */                   \
    X(cor_Y,   2, nv, 6, 0)   /* Coriolis: C(b, a) = s(a) . Y(b) - F(b) . u(a) */                \
    X(cor_fl,  2, 4, nv, 0)   /* flexible models' connection: velocity, two biases, a bracket */ \
    X(lin_s,   2, 6, nv, 0)   /* derivatives, component-major (6 x nv): s(i) = H*_I */           \
    X(lin_u,   2, 6, nv, 0)   /* ... u(i) = s(i) x~ V_I(parent) */                               \
    X(lin_y,   2, 6, nv, 0)   /* ... y(i) = s x~ alpha_I(parent) - u x~ V_I(parent) */           \
    X(lin_c,   2, 6, nv, 0)   /* ... c(i) = (V_I(k) + V_I(parent)) x~ s(i) */                    \
    X(lin_z,   2, 6, nv, 0)   /* ... dT(a)/dtheta_i = s(a) . z(i), a above i */                  \
    X(lin_zb,  2, 6, nv, 0)   /* ... dT(a)/dbeta_i = s(a) . zbar(i), a above i */                \
    X(lin_K,   2, nv, 6, 0)   /* derivatives: K(i) = Rdot(k) s(i) - s(i) x* h(k) */              \
    X(lin_qdd, 1, nv, 0, 0)   /* derivatives: forward-dynamics accelerations */ \
    /* ---- flexible.c: the recursions with flexible bodies (body frames; seed 000 sec. 4) ---- */ \
    X(fl_RA,   3, nbf, 3, 3)  /* attach[k]: the deformed joint frame A in the parent, rotation */ \
    X(fl_lA,   2, nbf, 3, 0)  /* ... and origin */                                              \
    X(fl_GA,   3, nbf, 6, nm) /* Gamma_p(k): parent eta-dot -> twist of A at p's origin, p's axes;  \
                                 by columns (column c at 6 c) */                                 \
    X(fl_G,    3, nbf, 6, nm) /* Gamma(k) = phi*(p, k) Gamma_p: ... -> V(k), k's frame (the C* \
                                 of seed 000 eq. 4.1) */                                         \
    X(fl_th,   2, nbf, 3, 0)  /* attach[k]: the node's rotation vector theta = Psi_r eta(p) */  \
    X(fl_node, 2, nbf, 7, 0)  /* ... the node at r + u, so3_node's coefficients */               \
    X(fl_gb,   2, nbf, 3, 0)  /* gravity in body k's axes */                                     \
    X(fl_P,    3, nbf, nx, nx) /* articulated inertia P(k) of (V, eta-dot) */                    \
    X(fl_L,    3, nbf, nx, nx) /* LDL* factors of D = H P H*: modal block, then the joint's */     \
    X(fl_Y,    3, nbf, nx, 6)  /* L^-1 (P H*)*: the V rows of the modal, then the joint's dofs */  \
    X(fl_z,    2, nbf, nx, 0)  /* bias / residual force z(k) of (V, eta-dot) */                  \
    X(fl_u,    2, nbf, nx, 0)  /* L^-1 u, u = T - H z the innovations */                          \
    X(fl_s,    2, 4, nx, 0)    /* scratch */ \
    /* ---- contact.c: the last evaluation of the contact forces ---- */                        \
    X(ct_fext,  2, nb, 6, 0)     /* f_ext plus the contact forces, body frames (contact_state) */ \
    X(ct_fw,    2, nb, 6, 0)     /* the contact forces on the sweeps' bodies, world axes at the \
                                    world origin (a folded link's on its carrier) */              \
    X(ct_force, 2, npt, 3, 0)    /* per contact point (SOA_MANIFOLD per pair, pair-major): force \
                                    on the pair's first geometry, world axes, N */               \
    X(ct_point, 2, npt, 3, 0)    /* contact point, world */                                      \
    X(ct_depth, 1, npt, 0, 0)    /* its penetration delta, m (<= 0: not touching) */            \
    X(ct_pdepth, 1, npair, 0, 0) /* per pair: the deepest penetration, m (< 0: minus the gap; \
                                    in a step, of a pair the broad phase set apart, a bound of \
                                    it, from this or an earlier evaluation (contact.c, \
                                    geometry_pairs); soa_contact_state and soa_contact_gaps make \
                                    it exact: the event indicator) */                           \
    X(sp_force, 2, nsph, 3, 0)   /* total contact force on each geometry, world axes */          \
    X(sp_depth, 1, nsph, 0, 0)   /* its deepest penetration (0: free) */                         \
    X(sp_x,     2, nsph, 3, 0)   /* its origin, world */                                         \
    X(sp_R,     3, nsph, 3, 3)   /* its axes, world */                                           \
    X(bp_box,   2, nsph, 6, 0)   /* its world box (lo, hi): the broad phase (swept geometries) */ \
    X(ct_normal, 2, npt, 3, 0)   /* unit normal m from the first geometry towards the other */   \
    X(ct_vrel,  2, npt, 3, 0)    /* velocity of the first's point relative to the other's */    \
    X(ct_law_p, 2, npt, SOA_CT_NLAW, 0) /* the point's constants (its pair's) */                 \
    /* ---- contact.c: the implicit contact damping (the touching pairs, at most nimp) ---- */  \
    X(ci_B,     2, nimp, 9, 0)   /* C = h B + h^2 K of each (B = -dF/dv, K = -dF/dx; 3 x 3) */   \
    X(ci_K,     2, nimp, 9, 0)   /* K */                                                         \
    X(ci_u,     1, 3 * nimp, 0, 0) /* u = -h K J beta (-h K J r + C J s) */                     \
    X(ci_C,     2, nimp, 36, 0)  /* C_g of each block (3 x 3 or 6 x 6, contact.c) */          \
    X(ci_L,     2, 3 * nimp, 3 * nimp + 48 + nv, 0) /* Lambda_g^-1 (nr x nr, nr <= 3 nimp), 6 x 6 \
                                 Z and Y of the 2 nimp points, N (nv x 3 nimp): contact.c */    \
    X(ci_A,     2, 3 * nimp, 3 * nimp, 0)   /* I + h B Lambda_rel^-1, then its LU factors */     \
    X(ci_y,     1, 3 * nimp, 0, 0) /* C (J beta-dot + Lambda^-1 u), then z, then g = u - z */   \
    X(ci_dqdd,  1, nv, 0, 0)     /* M^-1 J* g */                                             \
    /* ---- mimic.c: the coupling rows G (nmim of them, at most nv) ---- */                     \
    X(mim_Y,    2, nv, nv, 0)    /* Y = M^-1 G* (nv x nmim, row stride nmim) */                  \
    X(mim_S,    2, nv, nv, 0)    /* G M^-1 G* (nmim x nmim), then its Cholesky factor */         \
    X(mim_l,    1, nv, 0, 0)     /* the coupling forces lambda */

/* Integer per-call arrays (same X(name, ndim, d0, d1, d2) form). */
#define SOA_DATA_INTS(X)                                                                      \
    /* ---- operational_space.c ---- */                                                        \
    X(os_mask,  1, nb, 0, 0)  /* 1 on the paths from the points to the base */                 \
    X(os_at,    1, nb, 0, 0)  /* a body carrying points: the body its psi has got to (-2: none) */ \
    X(os_from,  1, nb, 0, 0)  /* ... and the child it came through (-1: it started there) */     \
    /* ---- closures.c ---- */                                                                 \
    X(cl_row0,  1, nc + 1, 0, 0) /* first row of each constraint among the active rows */       \
    X(cl_body,  1, 2 * nc, 0, 0) /* body of each closure point (-1: world or inactive) */       \
    X(cl_involved, 1, nc, 0, 0)  /* 1: constraint involved in the singular / redundant rows */  \
    X(cl_info,  1, 3, 0, 0)   /* last solve: rank, active rows, 1 if redundant (min-norm forces) */ \
    X(cl_eigen, 1, 1, 0, 0)   /* 1: the last factorization is the eigen-decomposition (dependent rows) */ \
    /* ---- contact.c: the implicit contact damping ---- */                                    \
    X(ci_pair,  1, nimp, 0, 0) /* the touching points treated implicitly */                     \
    X(ci_body,  1, 2 * nimp, 0, 0) /* the bodies of each block (-1: world; contact.c) */        \
    X(ci_grp,   1, 4 * nimp, 0, 0) /* the blocks: of each point, rows, first row, lone point */ \
    X(ci_piv,   1, 4 * nimp, 0, 0) /* pivots of the LU factors (before: the points' lists) */ \
    X(ci_path,  1, nb, 0, 0)   /* the bodies on the blocks' paths to the base (deepest first) */ \
    /* ---- contact.c: the broad phase's state (broadphase.c), kept from one evaluation to the \
       next ---- */                                                                            \
    X(bp_order, 1, nsph, 0, 0) /* the swept geometries in sweep order (the last sort) */       \
    X(bp_cand,  1, nssp, 0, 0) /* the pairs whose boxes overlap, ascending (this evaluation) */ \
    X(bp_near,  1, nssp, 0, 0) /* the pairs the last evaluation tested (first bp_info[SOA_BP_NNEAR]): \
                                  every other pair holds a record apart, with no force */       \
    X(bp_info,  1, SOA_BP_NINFO, 0, 0) /* SOA_BP_* */                                          \
    /* ---- kinematics.c: the fold (model.c) ---- */                                           \
    X(fold_set, 1, 1, 0, 0)   /* 1: the folded bodies' constant R, l, Rj, tj are written */

/* ------------------------------------------------------------------ the structs */
#define SOA_DECLARE_INT(name, ndim, d0, d1, d2) int *name;
#define SOA_DECLARE_REAL(name, ndim, d0, d1, d2) double *name;

typedef struct soa_model {
    int nb, nq, nv, nc, nm, nsph, npln, nssp, nhv;
    SOA_MODEL_INTS(SOA_DECLARE_INT)
    SOA_MODEL_REALS(SOA_DECLARE_REAL)
    int finished;           /* set by soa_model_finish: the model passed its checks */
    int dfs_identity;       /* the velocity dofs are already in depth-first order */
    int dissipative;        /* some damping or friction is not zero (soa_model_finish) */
    int stopped;            /* some joint stop exists and stops[0] is on (soa_model_finish) */
    int nmov, nfix;         /* moving bodies (order), moving bodies of fixr */
    int nquat;              /* bodies of quatb */
    int nmim;               /* mimicking dofs (mim_dof; soa_model_finish) */
    int qlinear;            /* no quaternion or planar joint: theta-dot = beta, theta (+) dv =
                             * theta + dv, coordinate by coordinate (soa_model_finish) */
    void *buffer;           /* the one allocation behind every array above */
    size_t nbytes;
} soa_model;

typedef struct soa_data {
    SOA_DATA_REALS(SOA_DECLARE_REAL)
    SOA_DATA_INTS(SOA_DECLARE_INT)
    void *buffer;
    size_t nbytes;
} soa_data;

/* ------------------------------------------------------------------ model.c */
soa_model *soa_model_new(const soa_sizes *sizes);   /* zeroed buffers; NULL if out of memory */
soa_status soa_model_finish(soa_model *m);           /* structural checks; derives vend */
/* The physical rules of one body's inertial parameters (m, J_C about the centre of mass): 0 when
 * they hold, else 1: m not finite or < 0, 2: J_C not finite, 3: not symmetric, 4: not positive
 * semi-definite, 5: principal moments breaking the triangle inequality.  ev (may be NULL) <- the
 * principal moments, ascending (codes 0, 4, 5).  soa_model_finish checks only code 1 (and finite
 * constants); published robot files break 4 and 5, so their check is the caller's. */
int soa_inertia_problem(double mass, const double *Jc, double *ev);
soa_status soa_check_inertias(const soa_model *m);    /* every body; {SOA_BAD_INERTIA, body} */
void soa_model_free(soa_model *m);
soa_data *soa_data_new(const soa_model *m);           /* NULL if out of memory */
void soa_data_free(soa_data *d);
size_t soa_buffer_dims(int ndim, int d0, int d1, int d2);

/* ------------------------------------------------------------------ status.c */
struct soa_model;
const char *soa_status_message(const struct soa_model *m, soa_status st, const soa_names *names,
                               char *buf, size_t n);
/* Step (D)'s message after a closure solve, naming the constraints marked in d->cl_involved and
 * the rank (d->cl_info): SOA_CONSTRAINT_SINGULAR of `what` (e.g. "constrained forward dynamics"),
 * or with what == NULL the redundancy warning. */
struct soa_data;
const char *soa_closure_message(const struct soa_model *m, const struct soa_data *d,
                                const char *what, const soa_names *names, char *buf, size_t n);
/* soa_status_message, with the value a diverged step reached (d->diverged; d may be NULL). */
const char *soa_diverged_message(const struct soa_model *m, const struct soa_data *d,
                                 soa_status st, const soa_names *names, char *buf, size_t n);

/* ------------------------------------------------------------------ joints.c */
soa_status soa_check_configuration(const soa_model *m, const double *q);
soa_status soa_check_state(const soa_model *m, const double *q, const double *qd);
soa_status soa_check_inputs(const soa_model *m, const double *q, const double *qd, const double *tau);
soa_status soa_check_result(const double *x, int rows, int cols);
int soa_first_nonfinite(const double *x, int n);
void soa_joint_transform(const soa_model *m, int k, const double *q, double *Rj, double *tj);
void soa_configuration_rate(const soa_model *m, const double *q, const double *qd, double *qdot);
void soa_integrate_configuration(const soa_model *m, const double *q, const double *dv,
                                 double *out);
void soa_normalize_quaternions(const soa_model *m, double *q);

/* ------------------------------------------------------------------ kinematics.c */
void soa_outward_placements(const soa_model *m, soa_data *d, const double *q);
void soa_world_placements(const soa_model *m, soa_data *d);
void soa_outward_velocities(const soa_model *m, soa_data *d, const double *qd);
void soa_outward_accelerations(const soa_model *m, soa_data *d, const double *qdd,
                               const double *base);
void soa_inertial_velocities(const soa_model *m, soa_data *d, const double *qd);
void soa_inertial_kinematics(const soa_model *m, soa_data *d, const double *q, const double *qd);
void soa_inertial_accelerations(const soa_model *m, soa_data *d, const double *qdd,
                                const double *base);
void soa_joint_maps_to_world(const soa_model *m, soa_data *d);
void soa_inertial_outward(const soa_model *m, soa_data *d, const double *q, const double *qd);
/* The sweeps over the moving bodies (fixed links folded: model.c) and the fill of the rest. */
void soa_sweep_placements(const soa_model *m, soa_data *d, const double *q);
void soa_sweep_placement(const soa_model *m, soa_data *d, int k, const double *q);
void soa_fold_placements(const soa_model *m, soa_data *d, int world);
void soa_fold_velocities(const soa_model *m, soa_data *d, int inertial);
void soa_fold_accelerations(const soa_model *m, soa_data *d, const double *base, int inertial);
void soa_point_jacobian(const soa_model *m, const soa_data *d, int body, const double *p_world,
                        double *J);
soa_status soa_kinematics(const soa_model *m, soa_data *d, const double *q, const double *qd);
void soa_inertias_to_world(const soa_model *m, soa_data *d);   /* Mw(k) <- M_I(k) */
/* The sweeps' steps for flexible bodies (flexible_body.h): body k on a node of its flexible parent,
 * and V, a, b, gravity of every body with (V, eta-dot) (soa_kinematics when m->nm > 0). */
void soa_flex_attachment(const soa_model *m, soa_data *d, int k, const double *q);
void soa_flex_velocities(const soa_model *m, soa_data *d, const double *qd);

/* ------------------------------------------------------------------ rnea.c */
void soa_inward_forces(const soa_model *m, soa_data *d, int use_fext);
void soa_project_forces(const soa_model *m, const soa_data *d, double *T);
soa_status soa_rnea(const soa_model *m, soa_data *d, const double *q, const double *qd,
                    const double *qdd, int use_fext, double *tau);

/* ------------------------------------------------------------------ crba.c */
void soa_composite_inertia_sweep(const soa_model *m, soa_data *d);
soa_status soa_crba(const soa_model *m, soa_data *d, const double *q, double *M);

/* ------------------------------------------------------------------ articulated.c */
int soa_riccati_sweep(const soa_model *m, soa_data *d, int inertial);
/* The same with a per-dof diagonal added to D(k) = H P H* (seed 001 eq. 35): diag (nv) replaces
 * the model's armature (pass a + your terms; NULL: the armature).  The factors then belong to
 * M + diag(diag), and every filter / smoother / M^-1 sweep after it solves with that matrix: the
 * implicit integrator's (M + a + h B + h^2 K) and any other joint-space diagonal (contact
 * damping) cost the same O(N) sweep. */
int soa_riccati_sweep_diag(const soa_model *m, soa_data *d, int inertial, const double *diag);
void soa_innovations_filter(const soa_model *m, soa_data *d, const double *T, int with_bias,
                            const double *fext, int inertial);
void soa_innovations_smoother(const soa_model *m, soa_data *d, const double *base, int with_bias,
                              double *qdd, int inertial);
int soa_tree_acceleration(const soa_model *m, soa_data *d, const double *q, const double *qd,
                          const double *tau, int use_fext, double *qdd);
int soa_tree_acceleration_inertial(const soa_model *m, soa_data *d, const double *q,
                                   const double *qd, const double *tau, int use_fext, double *qdd);
/* The same with (M + diag(diag)) in place of M + diag(armature) (diag: nv, NULL: armature). */
int soa_tree_acceleration_diag(const soa_model *m, soa_data *d, const double *q, const double *qd,
                               const double *tau, int use_fext, const double *diag, double *qdd);
void soa_tree_acceleration_refilter(const soa_model *m, soa_data *d, const double *tau,
                                    int use_fext, double *qdd);
soa_status soa_aba(const soa_model *m, soa_data *d, const double *q, const double *qd,
                   const double *tau, int use_fext, double *qdd);
soa_status soa_aba_bias_free(const soa_model *m, soa_data *d, const double *q, const double *qd,
                             const double *tau, int use_fext, double *qdd);
/* The contact forces linearly implicit over a step h (docs/contact.md):
 * qdd <- (M + J* C J)^-1 (M qdd + J* u), C = h B + h^2 K, u = -h K J r + C J s (r = beta and s = 0
 * where NULL: the implicit Euler step; a Rosenbrock stage's r, s: docs/joints.md; ahead > 0, a
 * Rosenbrock stage's step: the friction's B is its secant mu f_n / s P, and each touching point's
 * B, K are at the depth the step reaches, f_n clamped to 0 or not), after a tree acceleration with
 * SOA_USE_CONTACT on this data (its factors and contact forces): soa_contact_implicit_filter
 * (contact.c), then the smoother from a zero base, qdd += M^-1 J* g.  Returns 1 when some point
 * touches (a stiffness acts), 0 when none does (qdd unchanged). */
int soa_contact_implicit(const soa_model *m, soa_data *d, double h, const double *r,
                         const double *s, double ahead, double *qdd);
soa_status soa_minv(const soa_model *m, soa_data *d, const double *q, double *Minv);
soa_status soa_forward_dynamics_input_map(const soa_model *m, soa_data *d, const double *q,
                                          const double *dtau, int use_fext, double *dqdd);

/* ------------------------------------------------------------------ energy.c */
soa_status soa_energy(const soa_model *m, soa_data *d, const double *q, const double *qd,
                      double *kinetic, double *potential);

void soa_minv_columns(const soa_model *m, soa_data *d, double *Minv);
void soa_innovations_solve(const soa_model *m, soa_data *d, double *X, int ncols, int ld);

/* ------------------------------------------------------------------ sensitivities.c */
void soa_composite_rates(const soa_model *m, soa_data *d);
soa_status soa_mass_matrix_derivative(const soa_model *m, soa_data *d, const double *q,
                                      const int *slot, int count, double *dM);
soa_status soa_coriolis_matrix(const soa_model *m, soa_data *d, const double *q, const double *qd,
                               double *C);

/* ------------------------------------------------------------------ derivatives.c */
soa_status soa_rnea_derivatives(const soa_model *m, soa_data *d, const double *q, const double *qd,
                                const double *qdd, int use_fext, double *dq, double *dv, int ld);
soa_status soa_aba_derivatives(const soa_model *m, soa_data *d, const double *q, const double *qd,
                               const double *tau, int use_fext, double *ddq, double *ddv, int ld,
                               double *Minv);

/* ------------------------------------------------------------------ flexible.c */
/* Flexible bodies (seed 000 sec. 4): the recursions with each body's velocity (V(k), eta-dot(k)).
 * soa_aba, soa_rnea, soa_crba, soa_energy, the sensitivities and the integrators
 * call these when m->nm > 0 (every algorithm family takes flexible bodies). */
soa_status soa_flex_fd(const soa_model *m, soa_data *d, const double *q, const double *qd,
                       const double *tau, int use_fext, double *qdd);
soa_status soa_flex_fd_diag(const soa_model *m, soa_data *d, const double *q, const double *qd,
                            const double *tau, int use_fext, const double *diag, double *qdd);
/* The modes' strain and damping in an implicit stage's d->jdiag, d->jrhs (integrators.c). */
void soa_flex_implicit_terms(const soa_model *m, soa_data *d, const double *qd, double g,
                             const double *r, const double *s);
soa_status soa_flex_rnea(const soa_model *m, soa_data *d, const double *q, const double *qd,
                         const double *qdd, int use_fext, double *tau);
soa_status soa_flex_crba(const soa_model *m, soa_data *d, const double *q, double *M);
void soa_flex_mass_apply(const soa_model *m, soa_data *d, const double *q, const double *x,
                         double *y);
void soa_flex_bias(const soa_model *m, soa_data *d, const double *q, const double *x, double *tau);
soa_status soa_flex_energy(const soa_model *m, soa_data *d, const double *q, const double *qd,
                           double *kinetic, double *potential);
/* M^-1 in factored form: the factors of theta (soa_flex_factor), then X <- M^-1 X column by
 * column, or x = M^-1 (T + J* f_ext) (fext: body forces, NULL: none), O(N) each. */
soa_status soa_flex_factor(const soa_model *m, soa_data *d, const double *q);
void soa_flex_solve(const soa_model *m, soa_data *d, double *X, int ncols, int ld);
void soa_flex_solve_forces(const soa_model *m, soa_data *d, const double *T, const double *fext,
                           double *x);
soa_status soa_flex_minv(const soa_model *m, soa_data *d, const double *q, double *Minv);
/* The highest undamped modal frequency of the tree at theta, sqrt(max eig M^-1 K) (rad/s). */
soa_status soa_flex_omega_max(const soa_model *m, soa_data *d, const double *q, double *omega);
/* soa_aba_bias_free (seed 001 Algorithm 2) with flexible bodies. */
soa_status soa_flex_aba_bias_free(const soa_model *m, soa_data *d, const double *q,
                                  const double *qd, const double *tau, int use_fext, double *qdd);
/* The derivatives of soa_rnea_derivatives / soa_aba_derivatives with flexible bodies. */
soa_status soa_flex_rnea_derivatives(const soa_model *m, soa_data *d, const double *q,
                                     const double *qd, const double *qdd, int use_fext,
                                     double *dq, double *dv, int ld);
soa_status soa_flex_aba_derivatives(const soa_model *m, soa_data *d, const double *q,
                                    const double *qd, const double *tau, int use_fext, double *ddq,
                                    double *ddv, int ld, double *Minv);

/* ------------------------------------------------------------------ dissipation.c */
/* The joint forces the simulator applies: tau - d qd - f_c tanh(qd / v_s) + the stops' forces
 * (d, f_c, v_s: the model's damping, friction, vfric; stops: soa_stop_force).  Returns tau itself
 * when the model has neither, else d->tau_j filled; d->stop_tau holds the stops' part. */
const double *soa_joint_forces(const soa_model *m, soa_data *d, const double *q, const double *qd,
                               const double *tau);
/* The stop force of velocity dof i at (q, qd): -k (q - limit) - b qd beyond a limit, else 0; *kk,
 * *bb (may be NULL) <- its stiffness and damping where it acts, else 0. */
double soa_stop_force(const soa_model *m, int i, const double *q, const double *qd, double *kk,
                      double *bb);
/* d->jdiag <- a + h B + h^2 K and d->jrhs <- T - h K r + (h B + h^2 K) s for an implicit stage at
 * (q, qd), T the joint forces of soa_joint_forces (B: the dissipation's and active stops' damping
 * d + f_c s'(qd) + b; K: the active stops' stiffness); r = qd and s = 0 where NULL (the implicit
 * Euler step).  ahead > 0 (a Rosenbrock stage): the friction's secant f_c s(qd) / qd instead of
 * f_c s'(qd), and the stops that q + ahead qd is beyond count as active.  Returns 1 when some
 * K != 0 (a stop is active). */
int soa_implicit_terms(const soa_model *m, soa_data *d, const double *q, const double *qd,
                       const double *T, double h, const double *r, const double *s, double ahead);

/* ------------------------------------------------------------------ contact.c */
/* Compliant contact (docs/contact.md): Hunt-Crossley normal force and regularized Coulomb
 * friction at the contact points of geometries on bodies (collision.c) against planes in world,
 * and of geometry pairs. */
#define SOA_USE_FEXT 1      /* use_fext bits of the tree acceleration: the held d->fext ... */
#define SOA_USE_CONTACT 2   /* ... and the contact forces (d->ct_fw, inertial frame) */
#define SOA_CONTACT_HELD 4  /* ... those held in d: the last evaluation's, at this very state */
soa_status soa_contact_finish(soa_model *m);
/* The contact forces at the inertial-frame kinematics held in d (Rw, pw, V of
 * soa_tree_acceleration_inertial): ct_force, ct_point, ct_depth, ct_pdepth, sp_force, sp_depth and ct_fw
 * (world axes at the world origin, on the bodies of the inertial sweeps). */
void soa_contact_forces(const soa_model *m, soa_data *d);
/* The exact gap (ct_pdepth = -gap, the first point slot on the closest points) of the pairs the
 * last evaluation's broad phase set apart with a bound of it (contact.c; collision.h). */
void soa_contact_gaps(const soa_model *m, soa_data *d);
/* The same from a state (the placements and velocities computed first), and ct_fext = f_ext
 * (use_fext) + the contact forces, body frames at the body origins; the gaps exact
 * (soa_contact_gaps). */
soa_status soa_contact_state(const soa_model *m, soa_data *d, const double *q, const double *qd,
                             int use_fext);
/* The contact half of soa_contact_implicit (articulated.c; docs/contact.md): the Woodbury
 * correction's blocks' system solved at qdd, and nu <- N g, the innovations of its joint forces
 * J* g (the filter half of M^-1 J* g).  Returns 1 when nu holds them (the smoother then gives
 * M^-1 J* g), 0 when no point touches (nothing to add; nu untouched). */
int soa_contact_implicit_filter(const soa_model *m, soa_data *d, double h, const double *r,
                                const double *s, double ahead, const double *qdd);

/* ------------------------------------------------------------------ integrators.c */
/* The acceleration an integrator integrates: qdd <- beta-dot(theta, beta, t).  By default the
 * tree's (soa_tree_accel over a soa_tree_inputs: soa_tree_acceleration_inertial with the held tau
 * and f_ext); constrained forward dynamics plugs in here.  It may use every buffer of the data
 * except the integrators' own (kq, kv, qs, vs, dv, dop_*). */
typedef soa_status (*soa_accel_fn)(void *ctx, const double *q, const double *qd, double t,
                                   double *qdd);
typedef struct { soa_accel_fn fn; void *ctx; } soa_accel;
typedef struct {
    const soa_model *m;
    soa_data *d;
    const double *tau;
    int use_fext;
    /* optional: the state (theta, beta) whose articulated factors the data holds (from the last
     * soa_tree_acceleration_inertial on it, nothing else having used the data since): an
     * evaluation at exactly that state runs only the filter and smoother (NULL: none) */
    const double *q_factored, *qd_factored;
} soa_tree_inputs;
soa_status soa_tree_accel(void *ctx, const double *q, const double *qd, double t, double *qdd);

/* The status of a step that failed with st at (q, qd) after its start was evaluated fine: a
 * singular D or a non-finite state there is a divergence (SOA_DIVERGED naming the largest state
 * component, its value in d->diverged[0]); any other st is returned as it is. */
soa_status soa_diverged(const soa_model *m, soa_data *d, const double *q, const double *qd,
                        soa_status st);

/* Test builds (-DSOA_COUNT_SWEEPS): the articulated passes run since the program started,
 * [0] with the Riccati sweep (a full forward dynamics), [1] the filter and smoother alone
 * (soa_tree_acceleration_refilter); tests assert the count of an RK4 step.  Not thread-safe. */
#ifdef SOA_COUNT_SWEEPS
extern long soa_sweep_counts[2];
#define SOA_COUNT_SWEEP(i) (soa_sweep_counts[i]++)
#else
#define SOA_COUNT_SWEEP(i) ((void)0)
/* ------------------------------------------------------------------ mimic.c */
/* URDF <mimic> couplings q_m = k q_j + c (mim_drv, mim_k, mim_c): holonomic joint-space rows
 * G = e_m* - k e_j* enforced on beta-dot after any inertial-frame forward dynamics whose factors
 * the data holds (soa_tree_accel, soa_implicit, the FMU's outputs); a no-op without couplings. */
soa_status soa_mimic_finish(soa_model *m);
void soa_mimic_couple(const soa_model *m, soa_data *d, double *qdd);
void soa_mimic_project(const soa_model *m, double *q, double *qd);

#endif

/* nsub fixed steps of size h from time t, (q, qd) in place; qdd <- beta-dot at the end. */
soa_status soa_rk4_with(const soa_model *m, soa_data *d, soa_accel acc, double *q, double *qd,
                        double t, double h, int nsub, double *qdd);
soa_status soa_euler_with(const soa_model *m, soa_data *d, soa_accel acc, double *q, double *qd,
                          double t, double h, int nsub, double *qdd);
/* The same with the tree's acceleration (tau checked first). */
soa_status soa_rk4(const soa_model *m, soa_data *d, double *q, double *qd, const double *tau,
                   int use_fext, double h, int nsub, double *qdd);
soa_status soa_euler(const soa_model *m, soa_data *d, double *q, double *qd, const double *tau,
                     int use_fext, double h, int nsub, double *qdd);
/* nsub linearly implicit Euler steps (first order) of the tree, (q, qd) in place:
 *     (M + diag(a + h B + h^2 K)) x = T - h K beta - C - g,  beta <- beta + h x,  theta <- theta (+) h beta
 * (soa_implicit_terms) by ONE articulated sweep with the diagonal in D(k); qdd <- x of the last
 * sub-step (the step's mean acceleration).  Flexible bodies: the modes' K, D join B, K (flexible.c).
 * use_fext | SOA_CONTACT_HELD: d holds the contact forces at (q, qd) (the caller's last
 * evaluation there); the first sub-step takes them as they are. */
soa_status soa_implicit(const soa_model *m, soa_data *d, double *q, double *qd, const double *tau,
                        int use_fext, double h, int nsub, double *qdd);
/* nsub steps of the Rosenbrock method ROS2 (second order, L-stable; docs/joints.md), each two
 * stages of the implicit step's kind (one sweep each); otherwise as soa_implicit (qdd <- the last
 * sub-step's mean acceleration). */
soa_status soa_rosenbrock(const soa_model *m, soa_data *d, double *q, double *qd, const double *tau,
                          int use_fext, double h, int nsub, double *qdd);
/* ROS2 from 0 to h in sub-steps no longer than max_step, controlled by its embedded first-order
 * estimate (rtol, atol); the first sub-step d->dop_h[0] (0: max_step), left holding the next. */
soa_status soa_rosenbrock_adaptive(const soa_model *m, soa_data *d, double *q, double *qd,
                                   const double *tau, int use_fext, double h, double rtol,
                                   double atol, double max_step, double *qdd);
/* The same with the Rosenbrock W-method ROS34PW2 (Rang & Angermann 2005: third order, L-stable,
 * four stages of the implicit step's kind, one sweep each; its embedded estimate second order). */
soa_status soa_ros34pw2(const soa_model *m, soa_data *d, double *q, double *qd, const double *tau,
                        int use_fext, double h, int nsub, double *qdd);
soa_status soa_ros34pw2_adaptive(const soa_model *m, soa_data *d, double *q, double *qd,
                                 const double *tau, int use_fext, double h, double rtol,
                                 double atol, double max_step, double *qdd);
/* The same with RK4W (integrators.c, docs/joints.md): classical RK4 made an L-stable Rosenbrock
 * W-method, third order for any Jacobian, RK4 itself where no stiff term is engaged; its
 * embedded estimate second order. */
soa_status soa_rk4w(const soa_model *m, soa_data *d, double *q, double *qd, const double *tau,
                    int use_fext, double h, int nsub, double *qdd);
soa_status soa_rk4w_adaptive(const soa_model *m, soa_data *d, double *q, double *qd,
                             const double *tau, int use_fext, double h, double rtol,
                             double atol, double max_step, double *qdd);
/* The Rosenbrock method `method` (SOA_ROS2, SOA_ROS34PW2, SOA_RK4W): fixed steps as soa_rosenbrock,
 * error-controlled as soa_rosenbrock_adaptive. */
soa_status soa_rosenbrock_method(int method, const soa_model *m, soa_data *d, double *q,
                                 double *qd, const double *tau, int use_fext, double h, int nsub,
                                 double *qdd);
soa_status soa_rosenbrock_method_adaptive(int method, const soa_model *m, soa_data *d, double *q,
                                          double *qd, const double *tau, int use_fext, double h,
                                          double rtol, double atol, double max_step, double *qdd);
/* The transformed tableau of the Rosenbrock method `method`: gamma, a, c (row-major
 * SOA_ROS_MAX_STAGES^2), m, e; the stage count (0: not a Rosenbrock method). */
int soa_rosenbrock_tableau(int method, double *gamma, double *a, double *c, double *m, double *e);
/* The integrator `auto` picks: SOA_RK4W for a model with joint dissipation, stops or contact,
 * else SOA_RK4; flexible and closed-chain models get SOA_RK4. */
int soa_auto_method(const soa_model *m);
/* auto's longest RK4 sub-step at theta: SOA_RK4_MODAL_REACH / the highest modal frequency for a
 * flexible model, HUGE_VAL for the others (integrators.c: why half RK4's bound of 2.78). */
#define SOA_RK4_MODAL_REACH 1.4
double soa_auto_max_step(const soa_model *m, soa_data *d, const double *q);

/* ------------------------------------------------------------------ constraint_time.c */
/* the integrators; SOA_AUTO is resolved once, at initialization, by soa_auto_method */
enum { SOA_RK4, SOA_EULER, SOA_DOP853, SOA_IMPLICIT, SOA_ROS2, SOA_ROS34PW2, SOA_RK4W,
       SOA_AUTO, SOA_NMETHODS };
/* 1 for the Rosenbrock methods (fixed or error-controlled sub-steps: soa_step_options'
 * error_control) */
static inline int soa_is_rosenbrock(int method)
{
    return method == SOA_ROS2 || method == SOA_ROS34PW2 || method == SOA_RK4W;
}
typedef struct {
    int method;                    /* SOA_RK4 ... SOA_RK4W */
    double max_step;               /* rk4, euler: a step is split into equal sub-steps <= this */
    double rtol, atol;             /* dop853, the Rosenbrock methods with error control */
    int reanchor;                  /* a constraint switched on is re-anchored at the current pose */
    int error_control;             /* Rosenbrock methods: error-controlled sub-steps (else fixed) */
} soa_step_options;
/* The held inputs of a model with closure constraints (soa_closure_accel's context):
 * tau (nv), f_ext in d->fext when use_fext; active (nc), u (nc x 6), Baumgarte gains;
 * anchors (nc x 16): the targets at time t0; forces (nc x 6) and residuals (nc): outputs of the
 * last evaluation. */
typedef struct {
    const soa_model *m;
    soa_data *d;
    const double *tau;
    int use_fext;
    const int *active;
    const double *u;
    double alpha, beta;
    double *anchors;
    double t0;
    double *forces, *residuals;
} soa_closure_inputs;
soa_status soa_closure_accel(void *ctx, const double *q, const double *qd, double t, double *qdd);
soa_status soa_closure_step(const soa_model *m, soa_data *d, const soa_step_options *o,
                            soa_closure_inputs *in, int *was_active, double *q, double *qd,
                            double t, double h, double *dop_h, double *qdd);
/* Every call of a fixed-step method does at most SOA_MAX_SUBSTEPS sub-steps (a bound on the
 * time of one step: ~0.6 s for the 7-dof arm with rk4), and max_step is at least
 * SOA_MIN_MAX_STEP (s): the simulator and the FMU's setters refuse smaller values. */
#define SOA_MAX_SUBSTEPS 100000
#define SOA_MIN_MAX_STEP 1e-9
int soa_substeps(double h, double max_step);

/* ------------------------------------------------------------------ dop853.c */
#define SOA_DOP853_MAX_STEPS 20000    /* attempted steps per call before SOA_TOO_MANY_STEPS
                                         (12 evaluations each: about as long as SOA_MAX_SUBSTEPS
                                         rk4 sub-steps, ~1 s for the 7-dof arm) */
/* Adaptive DOP853 from t to t + h, (q, qd) in place; first step d->dop_h[0] (0: choose), left
 * holding the last accepted step; max_step may be HUGE_VAL. */
soa_status soa_dop853_with(const soa_model *m, soa_data *d, soa_accel acc, double *q, double *qd,
                           double t, double h, double rtol, double atol, double max_step,
                           double *qdd);
soa_status soa_dop853(const soa_model *m, soa_data *d, double *q, double *qd, const double *tau,
                      int use_fext, double t, double h, double rtol, double atol, double max_step,
                      double *qdd);

/* ------------------------------------------------------------------ operational_space.c */
/* A point set: point s on body body[s] (-1: world, no dof moves it), placed in its body frame at
 * (R + 9 s, l + 3 s) (x_body = R x_point + l); world_axes: world-aligned axes at the point
 * instead of R.  L: (6 npt) x (6 npt), row-major.  The kernels need the factors of an
 * inertial-frame Riccati sweep (soa_riccati_sweep(m, d, 1), or the one inside
 * soa_tree_acceleration_inertial).  nu (nv, NULL: none): a bias-free filter's innovations, whose
 * alpha = psi* H* nu the Omega pass carries along the points' paths into d->alpha (seed 003
 * eq. 6.13). */
void soa_point_inertia_inverse(const soa_model *m, soa_data *d, int npt, const int *body,
                               const double *R, const double *l, int world_axes, const double *nu,
                               double *L);
void soa_correction_sweep(const soa_model *m, soa_data *d, const double *fext, double *dqdd);
/* The same from a configuration: Lambda^-1 = J M^-1 J* of the points; Delta beta-dot = M^-1 J* f
 * for body forces fext (nb x 6, body frames, at the body origins). */
soa_status soa_operational_space_inverse(const soa_model *m, soa_data *d, const double *q, int npt,
                                         const int *body, const double *R, const double *l,
                                         int world_axes, double *L);
soa_status soa_correction_accelerations(const soa_model *m, soa_data *d, const double *q,
                                        const double *fext, double *dqdd);

/* ------------------------------------------------------------------ closures.c */
/* Per-call inputs of the closure constraints (any may be NULL):
 *   active   nc ints, 1 = switched on (NULL: all on)
 *   u, udot  nc x 6: prescribed constraint velocity U~ and its derivative, first cn_size rows
 *            used (NULL: 0)
 *   anchors  nc x 16: target pose of frame_b in frame_a, 4 x 4 row-major (NULL: identity)
 * Outputs: forces nc x 6 (the force on frame_b's body, rows of the constraint's basis; 0 when
 * inactive), residuals nc (|e|; 0 when inactive); either may be NULL.  Redundant (dependent but
 * consistent) rows give the minimum-norm forces and SOA_OK with d->cl_info[2] = 1 and
 * d->cl_involved marking the constraints; inconsistent ones {SOA_CONSTRAINT_SINGULAR, first}. */
void soa_constraint_rows(int kind, const double *axis, double *A);
soa_status soa_closures_finish(soa_model *m);
soa_status soa_constrained_fd(const soa_model *m, soa_data *d, const double *q, const double *qd,
                              const double *tau, int use_fext, const int *active, const double *u,
                              const double *udot, const double *anchors, double alpha, double beta,
                              double *qdd, double *forces, double *residuals);
/* The same by one of the three recursive algorithms of seed 003 Part II, O(n) + O(t^3) each:
 * RCCFD1 (eq. 6.11 = steps (A)-(F), soa_constrained_fd), RCCFD2 (eqs. 6.12-6.18: the tip forces
 * from a causal filtering of T' and an anticausal pass building Omega), RCCFD3 (eqs. 6.19-6.22:
 * theta-dd = theta-dd1 + theta-dd2).  Another method: {SOA_BAD_ARG, 3}. */
enum { SOA_RCCFD1 = 1, SOA_RCCFD2, SOA_RCCFD3 };
soa_status soa_constrained_fd_method(const soa_model *m, soa_data *d, int method, const double *q,
                                     const double *qd, const double *tau, int use_fext,
                                     const int *active, const double *u, const double *udot,
                                     const double *anchors, double alpha, double beta,
                                     double *qdd, double *forces, double *residuals);
soa_status soa_project_velocities(const soa_model *m, soa_data *d, const double *q,
                                  const double *qd, const int *active, const double *u,
                                  double *qd_out);
soa_status soa_closure_state(const soa_model *m, soa_data *d, const double *q, const double *qd,
                             const double *qdd, const int *active, const double *u,
                             const double *udot, const double *anchors, double alpha, double beta);
void soa_closure_jacobian(const soa_model *m, soa_data *d, const int *active, double *G);
soa_status soa_closure_solve(const soa_model *m, soa_data *d, const int *active);
soa_status soa_relative_pose(const soa_model *m, soa_data *d, const double *q, int j, double *T);
soa_status soa_advance_anchor(const soa_model *m, int j, const double *T0, const double *u,
                              double dt, double *T);

/* ------------------------------------------------------------------ mimic.c */
/* URDF <mimic> couplings q_m = k q_j + c (mim_drv, mim_k, mim_c): holonomic joint-space rows
 * G = e_m* - k e_j* enforced on beta-dot after any inertial-frame forward dynamics whose factors
 * the data holds (soa_tree_accel, soa_implicit, the FMU's outputs); a no-op without couplings. */
soa_status soa_mimic_finish(soa_model *m);
void soa_mimic_couple(const soa_model *m, soa_data *d, double *qdd);
void soa_mimic_project(const soa_model *m, double *q, double *qd);

#endif
