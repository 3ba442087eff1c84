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
    SOA_BAD_ARG,        /* an argument outside its domain (e.g. a step size); index: which */
    SOA_NSTATUS
} soa_kind;

typedef struct { int kind; int index; } soa_status;

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
                                 for its last child (updated in place), else k's own */         \
    /* ---- derivatives.c: the dofs of k and its ancestors as runs ---- */                      \
    X(arun0,   1, nb, 0, 0)   /* first dof of the run ending with k's dofs */                   \
    X(arunup,  1, nb, 0, 0)   /* the nearest body above that run with dofs, -1 = none */

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
    /* ---- sensitivities.c, derivatives.c (inertial frame, seed 004 sec. 5.2) ---- */           \
    X(Ri,      2, nb, 10, 0)  /* composite inertia R_I(k), compact: J (6), m c (3), m */         \
    X(Rdot,    2, nb, 10, 0)  /* its rate (compact, m-dot = 0), seed 004 eq. 3.19 summed */      \
    X(hc,      2, nb, 6, 0)   /* composite momentum h(k) = sum_{c >= k} M_I V_I */               \
    X(Fs,      2, nv, 6, 0)   /* F(i) = R_I(k) H*_I(i), k the body of dof i */                   \
    X(cor_u,   2, nv, 6, 0)   /* Coriolis: u(a) = s(a) x~ V_I(A), A the body of a */             \
    X(cor_X,   2, nv, 6, 0)   /* Coriolis: C(a, b) = s(a) . X(b), a above b */                   \
    X(cor_Y,   2, nv, 6, 0)   /* Coriolis: C(b, a) = s(a) . Y(b) - F(b) . u(a) */                \
    X(lin_s,   2, 6, nv, 0)   /* derivatives, component-major (6 x nv): s(i) = H*_I */           \
    X(lin_u,   2, 6, nv, 0)   /* ... u(i) = s(i) x~ V_I(parent) */                               \
    X(lin_y,   2, 6, nv, 0)   /* ... y(i) = s x~ alpha_I(parent) - u x~ V_I(parent) */           \
    X(lin_c,   2, 6, nv, 0)   /* ... c(i) = (V_I(k) + V_I(parent)) x~ s(i) */                    \
    X(lin_z,   2, 6, nv, 0)   /* ... dT(a)/dtheta_i = s(a) . z(i), a above i */                  \
    X(lin_zb,  2, 6, nv, 0)   /* ... dT(a)/dbeta_i = s(a) . zbar(i), a above i */                \
    X(lin_K,   2, nv, 6, 0)   /* derivatives: K(i) = Rdot(k) s(i) - s(i) x* h(k) */              \
    X(lin_qdd, 1, nv, 0, 0)   /* derivatives: forward-dynamics accelerations */

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

/* ------------------------------------------------------------------ joints.c */
soa_status soa_check_configuration(const soa_model *m, const double *q);
soa_status soa_check_state(const soa_model *m, const double *q, const double *qd);
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

/* ------------------------------------------------------------------ integrators.c */
soa_status soa_rk4(const soa_model *m, soa_data *d, double *q, double *qd, const double *tau,
                   int use_fext, double h, int nsub, double *qdd);
soa_status soa_euler(const soa_model *m, soa_data *d, double *q, double *qd, const double *tau,
                     int use_fext, double h, int nsub, double *qdd);

#endif
