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
 */
#ifndef SOA_H
#define SOA_H

#include <stddef.h>

/* ------------------------------------------------------------------ joint types (joints.c) */
enum { SOA_FIXED, SOA_REVOLUTE, SOA_PRISMATIC, SOA_SPHERICAL, SOA_FREE, SOA_PLANAR, SOA_GENERAL,
       SOA_NJOINTTYPES };

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
    SOA_DIVERGED,       /* a step produced a non-finite state near velocity dof index */
    SOA_BAD_MODEL,      /* soa_model_finish: body index breaks a structural rule */
    SOA_BAD_ARG,        /* an argument outside its domain; index 0: a step size, 1: a tolerance */
    /* ---- dop853 (adaptive integrator) and fuzzed inputs */
    SOA_STEP_TOO_SMALL, /* the adaptive step fell below the spacing of floats near t; index: the
                           state component (theta, then beta) with the largest scaled error */
    SOA_TOO_MANY_STEPS, /* the adaptive integrator took SOA_DOP853_MAX_STEPS steps in one call */
    SOA_BAD_RESULT,     /* a result is not finite (finite inputs out of range: overflow); index:
                           its row, a velocity dof */
    SOA_NSTATUS
} soa_kind;

typedef struct { int kind; int index; } soa_status;

/* Names for messages (status.c): name(ctx, SOA_NAME_*, index) -> a NUL-terminated string. */
enum { SOA_NAME_BODY, SOA_NAME_JOINT, SOA_NAME_POSITION, SOA_NAME_VELOCITY };
typedef struct {
    const char *(*name)(const void *ctx, int which, int index);
    const void *ctx;
} soa_names;

#define SOA_QUAT_TOL 1e-6   /* tolerance on |q|^2 - 1 of a joint quaternion */

/* ------------------------------------------------------------------ sizes */
/* What a model's buffers are sized by.  Other families add their counts here. */
typedef struct {
    int nb;     /* bodies */
    int nq;     /* configuration coordinates */
    int nv;     /* velocity coordinates */
} soa_sizes;

/* Declares the sizes of model m as local constants, so the table expressions below evaluate. */
#define SOA_SIZES(m) \
    const int nb = (m)->nb, nq = (m)->nq, nv = (m)->nv; (void)nb; (void)nq; (void)nv

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
                                 for its last child (updated in place), else k's own */

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
    X(a0,      1, 6, 0, 0)    /* base acceleration [0; -g]: gravity as a base acceleration */

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
    X(P,       3, nb, 6, 6)   /* articulated inertia P(k) / composite inertia r(k) */            \
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
    /* ---- dop853.c: Dormand-Prince 8(5,3) on y = (theta, beta), n = nq + nv ---- */            \
    X(dop_K,     2, 13, nq + nv, 0) /* rates K(0..11) of the stages, K(12) = f(t+h, y_new) */    \
    X(dop_y,     1, nq + nv, 0, 0)  /* y at the start of the step */                             \
    X(dop_ynew,  1, nq + nv, 0, 0)  /* y at the end of the step (8th order) */                   \
    X(dop_ys,    1, nq + nv, 0, 0)  /* stage state y + h sum_j a(s, j) K(j) */                   \
    X(dop_err,   2, 2, nq + nv, 0)  /* scaled error estimates: 5th order, 3rd order */           \
    X(dop_h,     1, 1, 0, 0)        /* last accepted step = next call's first (0: choose) */     \
    X(dop_stats, 1, 3, 0, 0)        /* last call: rhs evaluations, accepted, rejected steps */

/* ------------------------------------------------------------------ the structs */
#define SOA_DECLARE_INT(name, ndim, d0, d1, d2) int *name;
#define SOA_DECLARE_REAL(name, ndim, d0, d1, d2) double *name;

typedef struct soa_model {
    int nb, nq, nv;
    SOA_MODEL_INTS(SOA_DECLARE_INT)
    SOA_MODEL_REALS(SOA_DECLARE_REAL)
    int finished;           /* set by soa_model_finish: the model passed its checks */
    int dfs_identity;       /* the velocity dofs are already in depth-first order */
    void *buffer;           /* the one allocation behind every array above */
    size_t nbytes;
} soa_model;

typedef struct soa_data {
    SOA_DATA_REALS(SOA_DECLARE_REAL)
    void *buffer;
    size_t nbytes;
} soa_data;

/* ------------------------------------------------------------------ model.c */
soa_model *soa_model_new(const soa_sizes *sizes);   /* zeroed buffers; NULL if out of memory */
soa_status soa_model_finish(soa_model *m);           /* structural checks; derives vend */
void soa_model_free(soa_model *m);
soa_data *soa_data_new(const soa_model *m);           /* NULL if out of memory */
void soa_data_free(soa_data *d);
size_t soa_buffer_dims(int ndim, int d0, int d1, int d2);

/* ------------------------------------------------------------------ status.c */
struct soa_model;
const char *soa_status_message(const struct soa_model *m, soa_status st, const soa_names *names,
                               char *buf, size_t n);

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
void soa_joint_maps_to_world(const soa_model *m, soa_data *d);
void soa_point_jacobian(const soa_model *m, const soa_data *d, int body, const double *p_world,
                        double *J);
soa_status soa_kinematics(const soa_model *m, soa_data *d, const double *q, const double *qd);

/* ------------------------------------------------------------------ rnea.c */
void soa_inward_forces(const soa_model *m, soa_data *d, int use_fext);
void soa_project_forces(const soa_model *m, const soa_data *d, double *T);
soa_status soa_rnea(const soa_model *m, soa_data *d, const double *q, const double *qd,
                    const double *qdd, int use_fext, double *tau);

/* ------------------------------------------------------------------ crba.c */
void soa_inertias_to_world(const soa_model *m, soa_data *d);   /* Mw(k) <- M_I(k) */
void soa_composite_inertia_sweep(const soa_model *m, soa_data *d);
soa_status soa_crba(const soa_model *m, soa_data *d, const double *q, double *M);

/* ------------------------------------------------------------------ articulated.c */
int soa_riccati_sweep(const soa_model *m, soa_data *d, int inertial);
void soa_innovations_filter(const soa_model *m, soa_data *d, const double *T, int with_bias,
                            int use_fext);
void soa_innovations_smoother(const soa_model *m, soa_data *d, const double *base, int with_bias,
                              double *qdd);
int soa_tree_acceleration(const soa_model *m, soa_data *d, const double *q, const double *qd,
                          const double *tau, int use_fext, double *qdd);
int soa_tree_acceleration_inertial(const soa_model *m, soa_data *d, const double *q,
                                   const double *qd, const double *tau, int use_fext, double *qdd);
soa_status soa_aba(const soa_model *m, soa_data *d, const double *q, const double *qd,
                   const double *tau, int use_fext, double *qdd);
soa_status soa_aba_bias_free(const soa_model *m, soa_data *d, const double *q, const double *qd,
                             const double *tau, int use_fext, double *qdd);
soa_status soa_minv(const soa_model *m, soa_data *d, const double *q, double *Minv);
soa_status soa_forward_dynamics_input_map(const soa_model *m, soa_data *d, const double *q,
                                          const double *dtau, int use_fext, double *dqdd);

/* ------------------------------------------------------------------ energy.c */
soa_status soa_energy(const soa_model *m, soa_data *d, const double *q, const double *qd,
                      double *kinetic, double *potential);

/* ------------------------------------------------------------------ integrators.c */
/* The acceleration an integrator integrates: qdd <- beta-dot(theta, beta, t).  By default the
 * tree's (soa_tree_accel over a soa_tree_inputs: soa_tree_acceleration_inertial with the held tau
 * and f_ext); constrained forward dynamics plugs in here.  It may use every buffer of the data
 * except the integrators' own (kq, kv, qs, vs, dv, dop_*). */
typedef soa_status (*soa_accel_fn)(void *ctx, const double *q, const double *qd, double t,
                                   double *qdd);
typedef struct { soa_accel_fn fn; void *ctx; } soa_accel;
typedef struct { const soa_model *m; soa_data *d; const double *tau; int use_fext; } soa_tree_inputs;
soa_status soa_tree_accel(void *ctx, const double *q, const double *qd, double t, double *qdd);

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

/* ------------------------------------------------------------------ dop853.c */
#define SOA_DOP853_MAX_STEPS 100000   /* attempted steps per call before SOA_TOO_MANY_STEPS */
/* Adaptive DOP853 from t to t + h, (q, qd) in place; first step d->dop_h[0] (0: choose), left
 * holding the last accepted step; max_step may be HUGE_VAL. */
soa_status soa_dop853_with(const soa_model *m, soa_data *d, soa_accel acc, double *q, double *qd,
                           double t, double h, double rtol, double atol, double max_step,
                           double *qdd);
soa_status soa_dop853(const soa_model *m, soa_data *d, double *q, double *qd, const double *tau,
                      int use_fext, double t, double h, double rtol, double atol, double max_step,
                      double *qdd);

#endif
