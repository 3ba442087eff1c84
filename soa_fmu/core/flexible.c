/* Flexible bodies (SPEC E15; seed 000 sec. 4, eqs. 4.1-4.3): the recursions with a body velocity
 * (V(k), eta-dot(k)) of size 6 + m(k).
 *
 * The model (seed 000 eq. 4.3, modally reduced): the nodal velocities of link k are
 * V^f(k) = B*(k) V(k) + h*(k) Psi(k) eta-dot(k) with the undeformed node locations in B, so the
 * link's kinetic energy is 1/2 (V; eta-dot)* fl_M(k) (V; eta-dot) with the constant generalized
 * mass fl_M(k) = [B; h* Psi] m(k) [B; h* Psi]* (soa_fmu/flexible.py); its strain energy is
 * 1/2 eta* K eta.  A child whose joint frame sits on a node (attach[k]) moves with the node's
 * deformation, u = Psi_t eta and R(theta) = exp(theta~), theta = Psi_r eta, exactly: its velocity
 * gains the term C* h* u-dot of eq. (4.1), here phi*(p, k) Gamma_p(k) eta-dot(p), with Gamma_p the
 * node's deformation rate as a twist at p's origin (through the left Jacobian J_l of SO(3) for the
 * rotation).  Gravity
 * is an applied force derived from the potential -g . (m p + R (m c + S_t eta)), S_t = fl_M's
 * (v, eta) block, so the model is Lagrangian: T + U + strain is conserved without damping.
 *
 * With H(k) = [H_joint 0; 0 I] mapping (V, eta-dot) to the body's dofs (joint, then modal) and
 * Phi(p, k) = [phi(p, k); Gamma_p* phi(p, k)] carrying a child's force to its parent's
 * (V, eta-dot), the recursions are those of seed 001 / seed 000 App. A with 6 + m in place of 6:
 *   articulated inertia  P(k) = M(k) + sum_c Phi(k, c) P+(c) Phi*(k, c),  D = H P H*, G = P H* D^-1
 *   filter               z(k) = b(k) + sum_c Phi(k, c) z+(c),  u = T - H z
 *   smoother             alpha = Phi* alpha(p) + a,  beta-dot = D^-1 u - G* alpha.
 * Rigid bodies of the model are the case m(k) = 0.  Everything is in body frames. */
/* Not compiled with GCC's unroll-loops: it took 2.5 % fewer instructions per forward dynamics but
 * about 4 % more time (interleaved A/B runs of benchmarks/bench_flexible.py's chain), with larger
 * code (soa_flex_fd 79 kB, not 65): here time, not the instruction count, decides. */
#include <float.h>
#include <math.h>

#include "soa.h"
#include "spatial.h"
#include "placement.h"
#include "flexible_body.h"

/* out += X x for n columns of 6 (X + 6 j: column j). */
FLEX_INLINE void add_columns_times(const double *restrict X, int n, const double *restrict x,
                                   double *restrict out)
{
    for (int j = 0; j < n; j++)
        for (int i = 0; i < 6; i++) out[i] += X[6 * j + i] * x[j];
}

/* Body k's placement (R, l) in its parent at theta: its joint frame's placement, fixed (Xr, Xp) or
 * on a deformed node (node_placement), then the joint's (placement_in, placement.h).
 * soa_flex_fd's own outward step: it needs no Gamma in k's frame (soa_flex_attachment). */
FLEX_INLINE void body_placement(const soa_model *m, soa_data *d, int k, const double *q,
                                flex_dims dm)
{
    if (m->attach[k]) {
        node_placement(m, d, k, q, dm);
        placement_in(m, k, q, d->fl_RA + 9 * k, d->fl_lA + 3 * k, d->R + 9 * k, d->l + 3 * k,
                     d->Rj + 9 * k, d->tj + 3 * k);
        return;
    }
    placement_in(m, k, q, m->Xr + 9 * k, m->Xp + 3 * k, d->R + 9 * k, d->l + 3 * k,
                 d->Rj + 9 * k, d->tj + 3 * k);
}

/* h = m c + S_t eta: body k's first moment of mass about its origin, deformed (S_t = fl_M's
 * (v, eta) block; m c read off its (omega, v) block m c~, entries (2, 4), (0, 5), (1, 3)),
 * body axes. */
FLEX_INLINE void first_moment(const soa_model *m, int k, const double *eta, double *h, flex_dims dm)
{
    const int nx = 6 + dm.nm;
    const double *M = m->fl_M + nx * nx * k;
    const double mc[3] = {M[2 * nx + 4], M[5], M[nx + 3]};
    for (int i = 0; i < 3; i++) {
        double s = mc[i];
        for (int j = 0; j < dm.mk; j++) s += M[nx * (3 + i) + 6 + j] * eta[j];
        h[i] = s;
    }
}

/* R = (b; 0) - Q(k) for the applied generalized force Q(k) on (V, eta) (b NULL: 0): f_ext, gravity
 * [h x g; m g; S_t* g] with the first moment h = m c + S_t eta (S_t = fl_M's (v, eta) block), and
 * the elastic and damping forces -K eta - D eta-dot; each entry written once.  gravity = 0 drops
 * gravity, elasticity and damping (mass-matrix columns). */
FLEX_INLINE void applied_force(const soa_model *m, const soa_data *d, int k, const double *q,
                               const double *qd, const double *b, int use_fext, int gravity,
                               double *R, flex_dims dm)
{
    const int mk = dm.mk, nm = dm.nm, nx = 6 + nm;
    const double *M = m->fl_M + nx * nx * k, *g = d->fl_gb + 3 * k, *fe = d->fext + 6 * k;
    double r[6];
    for (int i = 0; i < 6; i++) r[i] = (b ? b[i] : 0.0) - (use_fext ? fe[i] : 0.0);
    if (!gravity) {
        for (int i = 0; i < 6; i++) R[i] = r[i];
        for (int i = 6; i < 6 + mk; i++) R[i] = 0.0;
        return;
    }
    const double *eta = q + m->q0[k] + m->nqj[k], *etad = qd + m->v0[k] + m->nvj[k];
    const double g0 = g[0], g1 = g[1], g2 = g[2], mass = M[3 * nx + 3];   /* m: fl_M's m 1 */
    const int diag = m->fl_diag[k];             /* (read before R's stores, which may alias) */
    double hm[3], t[3];
    first_moment(m, k, eta, hm, dm);
    cross3(hm, g, t);
    R[0] = r[0] - t[0];
    R[1] = r[1] - t[1];
    R[2] = r[2] - t[2];
    R[3] = r[3] - mass * g0;
    R[4] = r[4] - mass * g1;
    R[5] = r[5] - mass * g2;
    const double *K = m->fl_K + nm * nm * k, *D = m->fl_D + nm * nm * k;
    for (int i = 0; i < mk; i++) {
        double s = -(M[nx * (6 + i) + 3] * g0 + M[nx * (6 + i) + 4] * g1 + M[nx * (6 + i) + 5] * g2);
        if (diag)                                          /* normal modes */
            s += K[nm * i + i] * eta[i] + D[nm * i + i] * etad[i];
        else
            for (int j = 0; j < mk; j++) s += K[nm * i + j] * eta[j] + D[nm * i + j] * etad[j];
        R[6 + i] = s;
    }
}

/* ------------------------------------------------------------------ the innovations step */
/* One step of the Riccati / innovations recursion (seed 001 eqs. 34-36, 63-65) for n dofs with
 * D = H P H* + diag(arm) (lower triangle of D, row stride ld; arm NULL: none), the rows X = (P H*)*
 * of the body's V (n x 6, row stride ldx) and the innovations u = T - H z (in w on entry): the LDL*
 * factor D = L Delta L* without square roots (unit lower L, 1 / delta on its diagonal; L may be D),
 * W = L^-1 X (may be X when ldx = 6), w <- L^-1 u, and the V block of what is handed on,
 *   A <- A - X* D^-1 X = A - sum_c W_c* W_c / delta_c,  z <- z + X* D^-1 u = z + sum_c W_c* w_c / delta_c
 * (P+ = P - G D G*, z+ = z + G u with G = P H* D^-1; the lower triangle of the 6 x 6 A).
 * 0 if D is not positive definite. */
FLEX_INLINE int ldl_step(const double *D, const double *X, int ldx, const double *arm, double *L,
                         int n, int ld, double *W, double *w, double *restrict A,
                         double *restrict z)
{
    for (int i = 0; i < n; i++) {
        double *Li = L + ld * i, wi[6], ws[6];
        const double *Di = D + ld * i;
        for (int j = 0; j < i; j++) {              /* F_ij = L_ij delta_j = D_ij - sum F_ic L_jc */
            const double *Lj = L + ld * j;
            double s = Di[j];
            for (int c = 0; c < j; c++) s -= Li[c] * Lj[c];
            Li[j] = s;
        }
        double dl = Di[i] + (arm ? arm[i] : 0.0), x = w[i];
        for (int e = 0; e < 6; e++) wi[e] = X[ldx * i + e];
        for (int c = 0; c < i; c++) {
            const double f = Li[c], lc = f * L[ld * c + c];
            dl -= f * lc;
            Li[c] = lc;
            x -= lc * w[c];
            for (int e = 0; e < 6; e++) wi[e] -= lc * W[6 * c + e];
        }
        if (!(dl > 0.0 && dl <= DBL_MAX)) return 0;           /* also NaN, inf */
        const double inv = 1.0 / dl;
        Li[i] = inv;
        w[i] = x;
        for (int e = 0; e < 6; e++) {
            W[6 * i + e] = wi[e];
            ws[e] = wi[e] * inv;
        }
        for (int r = 0; r < 6; r++) {
            for (int e = 0; e <= r; e++) A[6 * r + e] -= ws[r] * wi[e];
            z[r] += ws[r] * x;
        }
    }
    return 1;
}

/* The accelerations of one step's dofs, D x = u - X alpha (seed 001 eq. 65, beta-dot = D^-1 u -
 * G* alpha) with ldl_step's factors: x = L^-* Delta^-1 (w - W alpha). */
FLEX_INLINE void ldl_solve(const double *L, int n, int ld, const double *W, const double *w,
                           const double *al, double *x)
{
    for (int i = n - 1; i >= 0; i--) {
        double s = (w[i] - dot6(W + 6 * i, al)) * L[ld * i + i];
        for (int c = i + 1; c < n; c++) s -= L[ld * c + i] * x[c];
        x[i] = s;
    }
}

/* The upper triangle of a symmetric 6 x 6 from its lower. */
static inline void mirror6(double *A)
{
    for (int i = 1; i < 6; i++)
        for (int j = 0; j < i; j++) A[6 * j + i] = A[6 * i + j];
}

/* Phi(p, k) f for a force f of body k: f' = phi(p, k) f to z(p)'s V and Gamma_p* f' to its modes. */
FLEX_INLINE void add_to_parent(const soa_model *m, const soa_data *d, int k, const double *f,
                               double *zp, flex_dims dm)
{
    const int nm = dm.nm;
    double g[6] = {0, 0, 0, 0, 0, 0};
    add_phi(d->R + 9 * k, d->l + 3 * k, f, g);
    for (int i = 0; i < 6; i++) zp[i] += g[i];
    if (!m->attach[k]) return;
    const double *G = d->fl_GA + 6 * nm * k;
    for (int j = 0; j < dm.mp; j++) zp[6 + j] += dot6(G + 6 * j, g);
}

/* alpha(k) = phi*(k, p) (alpha(p) + Gamma_p eta-ddot(p)) + a(k) (without k's own dofs). */
FLEX_INLINE void inherited_acceleration(const soa_model *m, const soa_data *d, int k,
                                        const double *qdd, int with_a, double *al, flex_dims dm)
{
    const int p = m->parent[k];
    const double *a = d->a + 6 * k;
    if (p < 0) {
        for (int i = 0; i < 6; i++) al[i] = with_a ? a[i] : 0.0;
        return;
    }
    double y[6];
    for (int i = 0; i < 6; i++) y[i] = d->alpha[6 * p + i];
    if (m->attach[k])
        add_columns_times(d->fl_GA + 6 * dm.nm * k, dm.mp, qdd + m->v0[p] + m->nvj[p], y);
    apply_phi_star(d->R + 9 * k, d->l + 3 * k, y, al);
    if (with_a)
        for (int i = 0; i < 6; i++) al[i] += a[i];
}

/* Y = S G for a symmetric 6 x 6 S (full) and n <= SYM_COLUMNS columns of 6 (column c at 6 c): S's
 * rows are its columns, so each column of Y is a sum of S's rows scaled by G's entries.  Kept out
 * of line (GCC), where the compiler pairs the rows' entries in vector registers. */
enum { SYM_COLUMNS = 4 };
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static void sym_columns(const double *restrict S, const double *restrict G, int n,
                        double *restrict Y)
{
    for (int c = 0; c < n; c++) {
        double y[6] = {0, 0, 0, 0, 0, 0};
        for (int j = 0; j < 6; j++) {
            const double g = G[6 * c + j];
            for (int i = 0; i < 6; i++) y[i] += S[6 * j + i] * g;
        }
        for (int i = 0; i < 6; i++) Y[6 * c + i] = y[i];
    }
}

/* P(p) += Phi(p, k) P+ Phi*(p, k) and z(p) += Phi(p, k) (z+ + P+ a(k)) for the V block P+ (6 x 6,
 * full) and z+ of body k, Phi(p, k) = [phi(p, k); Gamma_p* phi(p, k)]: with P' = phi P+ phi*
 * (phi_congruence) the blocks are P', P' Gamma_p and Gamma_p* P' Gamma_p (P(p) as soa_flex_fd
 * keeps it).  P(p) = M(p) + sum_c Phi P+(c) Phi* (seed 000 A.1) starts from M(p) itself: p's last
 * child, the first to hand over, writes M(p) + its terms (the entries fd_inward reads), the others
 * add theirs. */
FLEX_INLINE void propagate(const soa_model *m, soa_data *d, int k, const double *Pk,
                           const double *zk, flex_dims dm)
{
    const int p = m->parent[k], nm = dm.nm, nx = 6 + nm, first = m->lamslot[k] == m->lamslot[p];
    double *P = d->fl_P + nx * nx * p, *zp = d->fl_z + nx * p, acc[36], f[6];
    const double *Mp = m->fl_M + nx * nx * p;
    phi_congruence(d->R + 9 * k, d->l + 3 * k, Pk, acc, first ? Mp : P, P, nx);
    matvec6(Pk, d->a + 6 * k, f);
    for (int i = 0; i < 6; i++) f[i] += zk[i];
    add_to_parent(m, d, k, f, zp, dm);
    if (!m->attach[k]) {
        if (first)                                 /* p's modal rows as they are: M(p)'s */
            for (int c = 0; c < dm.mp; c++)
                for (int i = 0; i <= 6 + c; i++) P[nx * (6 + c) + i] = Mp[nx * (6 + c) + i];
        return;
    }
    const double *restrict G = d->fl_GA + 6 * nm * k;
    double Y[6 * SYM_COLUMNS];
    for (int c0 = 0; c0 < dm.mp; c0 += SYM_COLUMNS) {     /* P' Gamma_p, SYM_COLUMNS at a time */
        const int n = dm.mp - c0 < SYM_COLUMNS ? dm.mp - c0 : SYM_COLUMNS;
        sym_columns(acc, G + 6 * c0, n, Y);
        for (int cc = 0; cc < n; cc++) {
            const int c = c0 + cc;
            const double *y = Y + 6 * cc, *b = (first ? Mp : P) + nx * (6 + c);
            double *row = P + nx * (6 + c);
            for (int e = 0; e <= c; e++) row[6 + e] = b[6 + e] + dot6(G + 6 * e, y);
            for (int i = 0; i < 6; i++) row[i] = b[i] + y[i];
        }
    }
}

/* ------------------------------------------------------------------ forward dynamics */
/* Body k's outward step of soa_flex_fd: placement, V, a, b, then z(k) = b - Q (P(k) = M(k) + its
 * children's terms is formed by them: propagate). */
FLEX_INLINE void fd_outward(const soa_model *m, soa_data *d, int k, const double *q,
                            const double *qd, int use_fext, flex_dims dm)
{
    body_placement(m, d, k, q, dm);
    body_velocity(m, d, k, qd, dm);
    applied_force(m, d, k, q, qd, d->b + 6 * k, use_fext, 1, d->fl_z + (6 + dm.nm) * k, dm);
}

/* Body k's inward step: the modal then the joint innovations step on P(k)'s V block A (it becomes
 * P+), and the hand-over to the parent; diag (nv: the armature, or what an implicit stage adds)
 * on D(k)'s diagonal; 0 if D(k) is not positive definite. */
FLEX_INLINE int fd_inward(const soa_model *m, soa_data *d, int k, const double *tau,
                          const double *diag, flex_dims dm)
{
    const int p = m->parent[k], nj = m->nvj[k], mk = dm.mk, v0 = m->v0[k], nx = 6 + dm.nm;
    const double *P = (m->fl_kids[k] ? d->fl_P : m->fl_M) + nx * nx * k;   /* a leaf's P is M */
    const double *z = d->fl_z + nx * k, *arm = diag + v0;
    double *L = d->fl_L + nx * nx * k, *W = d->fl_Y + 6 * nx * k, *w = d->fl_u + nx * k;
    double A[36], zv[6];
    for (int i = 0; i < 6; i++) {
        for (int j = 0; j < 6; j++) A[6 * i + j] = P[nx * i + j];
        zv[i] = z[i];
    }
    if (mk) {                               /* the modal dofs: H = [0 I], D = P_etaeta + diag(a) */
        for (int i = 0; i < mk; i++) w[i] = tau[v0 + nj + i] - z[6 + i];
        if (!ldl_step(P + 6 * nx + 6, P + 6 * nx, nx, arm + nj, L, mk, nx, W, w, A, zv)) return 0;
    }
    const int ax = hinge_axis(m, k);
    if (ax >= 0) {                     /* about or along a coordinate axis: H_j A1 = A1's row ax */
        double *Wj = W + 6 * mk;
        for (int e = 0; e < 6; e++) Wj[e] = e <= ax ? A[6 * ax + e] : A[6 * e + ax];
        const double Dj = A[7 * ax];
        w[mk] = tau[v0] - zv[ax];
        if (!ldl_step(&Dj, Wj, 6, arm, L + nx * mk + mk, 1, nx, Wj, w + mk, A, zv)) return 0;
    } else if (nj) {                                       /* the joint's: H = [H_j 0] on A1 */
        double *Lj = L + nx * mk + mk, *Wj = W + 6 * mk, *wj = w + mk;
        mirror6(A);
        for (int j = 0; j < nj; j++) {
            const double *s = m->S + 6 * (v0 + j);
            matvec6(A, s, Wj + 6 * j);
            wj[j] = tau[v0 + j] - dot6(s, zv);
            for (int i = 0; i <= j; i++) Lj[nx * j + i] = dot6(m->S + 6 * (v0 + i), Wj + 6 * j);
        }
        if (!ldl_step(Lj, Wj, 6, arm, Lj, nj, nx, Wj, wj, A, zv)) return 0;
    }
    if (p >= 0) {
        mirror6(A);
        propagate(m, d, k, A, zv, dm);
    }
    return 1;
}

/* Body k's accelerations: alpha' inherited (with_a: with the velocity product a(k); 0: the
 * bias-free smoother), the joint's beta-dot, alpha(k), then eta-ddot. */
FLEX_INLINE void fd_accel(const soa_model *m, soa_data *d, int k, double *qdd, int with_a,
                          flex_dims dm)
{
    const int nj = m->nvj[k], mk = dm.mk, v0 = m->v0[k], nx = 6 + dm.nm;
    const double *W = d->fl_Y + 6 * nx * k, *w = d->fl_u + nx * k, *L = d->fl_L + nx * nx * k;
    double *al = d->alpha + 6 * k, *x = qdd + v0;
    inherited_acceleration(m, d, k, qdd, with_a, al, dm);
    if (nj) {
        const int ax = hinge_axis(m, k);
        ldl_solve(L + nx * mk + mk, nj, nx, W + 6 * mk, w + mk, al, x);
        if (ax >= 0)
            al[ax] += x[0];                                /* H* = e_ax */
        else
            for (int j = 0; j < nj; j++) {
                const double *s = m->S + 6 * (v0 + j);
                for (int c = 0; c < 6; c++) al[c] += s[c] * x[j];
            }
    }
    if (mk) ldl_solve(L, mk, nx, W, w, al, x + nj);
}

/* The modal counts M with kernels of their own: a body with M modes whose parent (if any) has M,
 * in a model whose bodies have at most M (chains and trees of like flexible links; 4 is the
 * examples' count), runs fd_outward, fd_inward and fd_accel compiled for that constant M, the
 * loops over modes unrolled and the row strides fixed: a quarter fewer instructions per body.
 * Each M adds about 35 kB of code and half a second of compile time; other bodies run the same
 * functions with their sizes read from the model. */
#define FLEX_UNROLLED(X) X(4)

/* M if body k runs FLEX_UNROLLED's kernels for M modes, else 0 (also for rigid bodies: their loops
 * over modes are empty anyway). */
static int uniform_modes(const soa_model *m, int k)
{
    const int p = m->parent[k], mk = m->nmod[k];
    return mk == m->nm && (p < 0 || m->nmod[p] == mk) ? mk : 0;
}

#define FLEX_DIMS(M) ((flex_dims){M, M, M})

/* Articulated-body forward dynamics with flexible bodies (seed 001 Algorithm 3 / seed 000 A.1-A.2
 * with (V, eta-dot) per body; the header's recursion), with H(k) = [H_joint 0; 0 I] taken in two
 * innovations steps (ldl_step), the modal dofs first (H = [0 I]: D = P_etaeta, X = P_etaV), then
 * the joint's on what remains (H = [H_joint 0]: D = H_j A1 H_j*, X = H_j A1, A1 = the Schur
 * complement P_VV - P_Veta P_etaeta^-1 P_etaV).  This is the LDL* factor of the body's whole
 * D = H P H* in the block order (modes, joint): the same P+, z+ and accelerations, with factors
 * of the sizes m(k) and r_v(k) and no square roots.
 *   inward   P(k) = M(k) + sum_c Phi P+(c) Phi*,  z(k) = b - Q + sum_c Phi (z+(c) + P+(c) a(c))
 *   outward  alpha' = phi* (alpha(p) + Gamma_p eta-ddot(p)) + a;  beta-dot = joint step's solve,
 *            alpha(k) = alpha' + H_j* beta-dot;  eta-ddot = modal step's solve at alpha(k)
 * tau holds the joint forces and the applied modal forces; qdd <- joint and modal accelerations.
 * fl_P holds P's V rows and its modal rows' P_etaV and lower triangle of P_etaeta (for bodies
 * with children; a leaf's is fl_M's); fl_L,
 * fl_Y, fl_u the modal step's factors in rows 0..m-1 and the joint's in rows m..m+r_v-1. */
soa_status soa_flex_fd(const soa_model *m, soa_data *d, const double *q, const double *qd,
                       const double *tau, int use_fext, double *qdd)
{
    return soa_flex_fd_diag(m, d, q, qd, tau, use_fext, m->armature, qdd);
}

/* The same with diag (nv) in place of the armature on D(k)'s diagonal (seed 001 eq. 35): the
 * sweep of a linearly implicit stage, diag = a + g B + g^2 K (integrators.c). */
soa_status soa_flex_fd_diag(const soa_model *m, soa_data *d, const double *q, const double *qd,
                            const double *tau, int use_fext, const double *diag, double *qdd)
{
    const int nb = m->nb;
    soa_status st = {SOA_OK, 0};
    int all = nb ? uniform_modes(m, 0) : 0;                /* M if every body runs M's kernels */
    for (int k = 1; k < nb && all; k++)
        if (uniform_modes(m, k) != all) all = 0;
    for (int k = 0; k < nb; k++) {
        switch (all ? all : uniform_modes(m, k)) {
#define FLEX_OUT(M) case M: fd_outward(m, d, k, q, qd, use_fext, FLEX_DIMS(M)); break;
        FLEX_UNROLLED(FLEX_OUT)
#undef FLEX_OUT
        default: fd_outward(m, d, k, q, qd, use_fext, dims_of(m, k));
        }
    }
    for (int k = nb - 1; k >= 0; k--) {
        int ok;
        switch (all ? all : uniform_modes(m, k)) {
#define FLEX_IN(M) case M: ok = fd_inward(m, d, k, tau, diag, FLEX_DIMS(M)); break;
        FLEX_UNROLLED(FLEX_IN)
#undef FLEX_IN
        default: ok = fd_inward(m, d, k, tau, diag, dims_of(m, k));
        }
        if (!ok) {
            st.kind = SOA_SINGULAR;
            st.index = k;
            return st;
        }
    }
    for (int k = 0; k < nb; k++) {
        switch (all ? all : uniform_modes(m, k)) {
#define FLEX_ACC(M) case M: fd_accel(m, d, k, qdd, 1, FLEX_DIMS(M)); break;
        FLEX_UNROLLED(FLEX_ACC)
#undef FLEX_ACC
        default: fd_accel(m, d, k, qdd, 1, dims_of(m, k));
        }
    }
    return st;
}

/* ------------------------------------------------------------------ M^-1 in factored form */
/* The filter half of ldl_step on its held factors: w <- L^-1 w, z <- z + sum_c W_c* w_c / delta_c
 * (seed 001 eqs. 49-51 with the body's D = L Delta L*). */
static void ldl_forward(const double *L, int n, int ld, const double *W, double *w, double *z)
{
    for (int i = 0; i < n; i++) {
        double x = w[i];
        for (int c = 0; c < i; c++) x -= L[ld * i + c] * w[c];
        w[i] = x;
        const double s = x * L[ld * i + i];
        for (int r = 0; r < 6; r++) z[r] += W[6 * i + r] * s;
    }
}

/* x = M^-1 (T + J* f_ext) = [I - H psi K]* D^-1 [I - H psi K] (T + J* f_ext) (seed 001 Identity 6,
 * eq. 46, with (V, eta-dot) per body; seed 000 A.6 for the forces): the bias-free filter (z(k) =
 * -f_ext(k) + sum_c Phi(k, c) z+(c), u = T - H z through the held LDL* factors of the modal and
 * the joint steps) and the bias-free smoother (fd_accel without a(k)), on the factors and
 * placements of the last soa_flex_fd (soa_flex_factor).  fext: body forces (NULL: none).  O(N). */
static void flex_solve_one(const soa_model *m, soa_data *d, const double *T, const double *fext,
                           double *x)
{
    const int nb = m->nb, nx = 6 + m->nm;
    for (int k = 0; k < nb; k++) {
        double *z = d->fl_z + nx * k;
        for (int i = 0; i < 6 + m->nmod[k]; i++) z[i] = (i < 6 && fext) ? -fext[6 * k + i] : 0.0;
    }
    for (int k = nb - 1; k >= 0; k--) {
        const flex_dims dm = dims_of(m, k);
        const int p = m->parent[k], nj = m->nvj[k], mk = dm.mk, v0 = m->v0[k], ax = hinge_axis(m, k);
        const double *z = d->fl_z + nx * k, *L = d->fl_L + nx * nx * k, *W = d->fl_Y + 6 * nx * k;
        double *w = d->fl_u + nx * k, zv[6];
        for (int i = 0; i < 6; i++) zv[i] = z[i];
        if (mk) {                                          /* the modal step, H = [0 I] */
            for (int i = 0; i < mk; i++) w[i] = T[v0 + nj + i] - z[6 + i];
            ldl_forward(L, mk, nx, W, w, zv);
        }
        for (int j = 0; j < nj; j++)                       /* the joint's, H = [H_j 0] */
            w[mk + j] = T[v0 + j] - (ax >= 0 ? zv[ax] : dot6(m->S + 6 * (v0 + j), zv));
        if (nj) ldl_forward(L + nx * mk + mk, nj, nx, W + 6 * mk, w + mk, zv);
        if (p >= 0) add_to_parent(m, d, k, zv, d->fl_z + nx * p, dm);
    }
    for (int k = 0; k < nb; k++) fd_accel(m, d, k, x, 0, dims_of(m, k));
}

/* The articulated factors of theta (soa_flex_fd at beta = 0, T = 0: P, D's LDL* factors and the
 * placements depend on theta alone), for soa_flex_solve. */
soa_status soa_flex_factor(const soa_model *m, soa_data *d, const double *q)
{
    for (int i = 0; i < m->nv; i++) d->zerov[i] = 0.0;
    return soa_flex_fd(m, d, q, d->zerov, d->zerov, 0, d->tau_j);
}

/* X <- M^-1 X for ncols columns (nv rows of stride ld), and x = M^-1 (T + J* f_ext) for one
 * right-hand side (fext NULL: none), after soa_flex_factor: O(N) per column. */
void soa_flex_solve(const soa_model *m, soa_data *d, double *X, int ncols, int ld)
{
    const int nv = m->nv;
    for (int c = 0; c < ncols; c++) {
        for (int i = 0; i < nv; i++) d->dv[i] = X[i * ld + c];
        flex_solve_one(m, d, d->dv, NULL, d->tau_j);
        for (int i = 0; i < nv; i++) X[i * ld + c] = d->tau_j[i];
    }
}

void soa_flex_solve_forces(const soa_model *m, soa_data *d, const double *T, const double *fext,
                           double *x)
{
    flex_solve_one(m, d, T, fext, x);
}

/* M^-1 with flexible bodies, column by column from the factored form (flex_solve_one on e_j):
 * O(N nv), exactly symmetric. */
soa_status soa_flex_minv(const soa_model *m, soa_data *d, const double *q, double *Minv)
{
    const int nv = m->nv;
    soa_status st = soa_flex_factor(m, d, q);
    if (st.kind != SOA_OK) return st;
    for (int i = 0; i < nv; i++) d->dv[i] = 0.0;
    for (int j = 0; j < nv; j++) {
        d->dv[j] = 1.0;
        flex_solve_one(m, d, d->dv, NULL, d->tau_j);
        d->dv[j] = 0.0;
        for (int i = 0; i < nv; i++) Minv[i * nv + j] = d->tau_j[i];
    }
    for (int i = 0; i < nv; i++)
        for (int j = 0; j < i; j++)
            Minv[i * nv + j] = Minv[j * nv + i] = 0.5 * (Minv[i * nv + j] + Minv[j * nv + i]);
    return soa_check_result(Minv, nv, nv);
}

/* Seed 001's Algorithm 2 with flexible bodies: T' = T - ID(theta, beta, 0) (eqs. 55-56; zeta =
 * the accelerations at beta-dot = 0, velocity products included), beta-dot = M^-1 T' by the
 * factored form (its smoother's lambda, eqs. 49-54), alpha = lambda + zeta, plus the base
 * acceleration [0; -g] in each body's axes as the rigid algorithm reports it (flexible.c takes
 * gravity as an applied force).  Body frames. */
soa_status soa_flex_aba_bias_free(const soa_model *m, soa_data *d, const double *q,
                                  const double *qd, const double *tau, int use_fext, double *qdd)
{
    const int nb = m->nb, nv = m->nv;
    for (int i = 0; i < nv; i++) d->zerov[i] = 0.0;
    soa_status st = soa_flex_rnea(m, d, q, qd, d->zerov, use_fext, d->tbias);
    if (st.kind != SOA_OK) return st;
    for (int i = 0; i < 6 * nb; i++) d->zeta[i] = d->alpha[i];
    for (int i = 0; i < nv; i++) d->tprime[i] = tau[i] - d->tbias[i];
    st = soa_flex_factor(m, d, q);
    if (st.kind != SOA_OK) return st;
    soa_world_placements(m, d);
    flex_solve_one(m, d, d->tprime, NULL, qdd);
    for (int k = 0; k < nb; k++) {
        double *al = d->alpha + 6 * k, g[3];
        mat3t_vec(d->Rw + 9 * k, m->a0 + 3, g);
        for (int i = 0; i < 6; i++) al[i] += d->zeta[6 * k + i] + (i < 3 ? 0.0 : g[i - 3]);
    }
    return soa_check_result(qdd, nv, 1);
}

/* ------------------------------------------------------------------ derivatives */
/* (dT/dtheta, dT/dbeta) of T = inverse dynamics with flexible bodies (nv x nv, row stride ld),
 * along the velocity directions as derivatives.c.  T is a quadratic polynomial in beta (V, a, b,
 * the node rates and the damping are), so the central difference of unit steps,
 * (T(beta + e_i) - T(beta - e_i)) / 2, is dT/dbeta_i exactly (to rounding); in theta, Richardson's
 * fourth-order central difference along theta (+) s e_i (steps h and h / 2, truncation O(h^4)).
 * 2 + 4 Newton-Euler passes per dof: O(N nv), as the rigid derivatives. */
#define FLEX_DIFF_STEP 1e-3
soa_status soa_flex_rnea_derivatives(const soa_model *m, soa_data *d, const double *q,
                                     const double *qd, const double *qdd, int use_fext,
                                     double *dq, double *dv, int ld)
{
    const int nv = m->nv;
    double *tp = d->tprime, *tm = d->tbias, *dir = d->dv, *qs = d->qs, *vs = d->vs;
    for (int i = 0; i < nv; i++) {
        dir[i] = 0.0;
        vs[i] = qd[i];
    }
    for (int i = 0; i < nv; i++) {                         /* dT/dbeta: exact differences */
        vs[i] = qd[i] + 1.0;
        soa_flex_rnea(m, d, q, vs, qdd, use_fext, tp);
        vs[i] = qd[i] - 1.0;
        soa_flex_rnea(m, d, q, vs, qdd, use_fext, tm);
        vs[i] = qd[i];
        for (int r = 0; r < nv; r++) dv[r * ld + i] = 0.5 * (tp[r] - tm[r]);
    }
    for (int i = 0; i < nv; i++) {                         /* dT/dtheta: Richardson */
        for (int r = 0; r < nv; r++) dq[r * ld + i] = 0.0;
        for (int level = 0; level < 2; level++) {
            const double h = level ? 0.5 * FLEX_DIFF_STEP : FLEX_DIFF_STEP;
            const double w = (level ? 4.0 : -1.0) / (3.0 * 2.0 * h);  /* (4 D(h/2) - D(h)) / 3 */
            for (int sgn = -1; sgn <= 1; sgn += 2) {
                dir[i] = sgn * h;
                soa_integrate_configuration(m, q, dir, qs);
                soa_flex_rnea(m, d, qs, qd, qdd, use_fext, tp);
                for (int r = 0; r < nv; r++) dq[r * ld + i] += sgn * w * tp[r];
            }
            dir[i] = 0.0;
        }
    }
    return soa_check_result(dq, nv, nv).kind != SOA_OK ? soa_check_result(dq, nv, nv)
                                                        : soa_check_result(dv, nv, nv);
}

/* (d beta-dot/dtheta, d beta-dot/dbeta) and M^-1 with flexible bodies: beta-dot by soa_flex_fd,
 * dT at it (soa_flex_rnea_derivatives), then d beta-dot = -M^-1 dT through the factored form
 * (soa_flex_solve): O(N nv). */
soa_status soa_flex_aba_derivatives(const soa_model *m, soa_data *d, const double *q,
                                    const double *qd, const double *tau, int use_fext, double *ddq,
                                    double *ddv, int ld, double *Minv)
{
    const int nv = m->nv;
    soa_status st = soa_flex_fd(m, d, q, qd, tau, use_fext, d->lin_qdd);
    if (st.kind != SOA_OK) return st;
    st = soa_flex_rnea_derivatives(m, d, q, qd, d->lin_qdd, use_fext, ddq, ddv, ld);
    if (st.kind != SOA_OK) return st;
    st = soa_flex_minv(m, d, q, Minv);                     /* (re-factors at theta) */
    if (st.kind != SOA_OK) return st;
    for (int r = 0; r < nv; r++)
        for (int c = 0; c < nv; c++) {
            ddq[r * ld + c] = -ddq[r * ld + c];
            ddv[r * ld + c] = -ddv[r * ld + c];
        }
    soa_flex_solve(m, d, ddq, nv, ld);
    soa_flex_solve(m, d, ddv, nv, ld);
    return st;
}

/* ------------------------------------------------------------------ inverse dynamics */
/* Newton-Euler with flexible bodies (seed 001 eq. 25 with (V, eta-dot)): outward
 * alpha(k) = phi*(k, p) alpha(p) + Gamma eta-ddot(p) + H* beta-dot(k) + a(k); inward
 * F(k) = M(k) (alpha; eta-ddot) + (b; 0) - Q(k) + sum_c Phi(k, c) F_V(c);  T = H F.
 * velocity = 0: no velocity products a(k), b(k); applied = 0: no gravity, elasticity, damping or
 * f_ext (velocity = applied = 0: the mass matrix's columns; velocity = 1, applied = 0: the
 * velocity-product forces alone).  Needs placements and soa_flex_velocities. */
static void flex_inverse(const soa_model *m, soa_data *d, const double *q, const double *qd,
                         const double *qdd, int use_fext, int velocity, int applied, double *tau)
{
    SOA_SIZES(m);
    for (int k = 0; k < nb; k++) {
        const int nj = m->nvj[k], v0 = m->v0[k];
        double *al = d->alpha + 6 * k;
        inherited_acceleration(m, d, k, qdd, velocity, al, dims_of(m, k));
        for (int j = 0; j < nj; j++) {
            const double *s = m->S + 6 * (v0 + j);
            for (int c = 0; c < 6; c++) al[c] += s[c] * qdd[v0 + j];
        }
    }
    for (int k = 0; k < nb; k++) {
        const int mk = m->nmod[k];
        const double *M = m->fl_M + nx * nx * k, *etadd = qdd + m->v0[k] + m->nvj[k];
        double *F = d->fl_z + nx * k;
        applied_force(m, d, k, q, qd, velocity ? d->b + 6 * k : NULL, use_fext && applied, applied,
                      F, dims_of(m, k));
        for (int i = 0; i < 6 + mk; i++) {
            double x = F[i];
            for (int j = 0; j < 6; j++) x += M[nx * i + j] * d->alpha[6 * k + j];
            for (int j = 0; j < mk; j++) x += M[nx * i + 6 + j] * etadd[j];
            F[i] = x;
        }
    }
    for (int k = nb - 1; k >= 0; k--) {
        const int nj = m->nvj[k], v0 = m->v0[k];
        const double *F = d->fl_z + nx * k;
        for (int j = 0; j < nj; j++) tau[v0 + j] = dot6(m->S + 6 * (v0 + j), F);
        for (int j = 0; j < m->nmod[k]; j++) tau[v0 + nj + j] = F[6 + j];
        if (m->parent[k] >= 0) add_to_parent(m, d, k, F, d->fl_z + nx * m->parent[k], dims_of(m, k));
    }
}

soa_status soa_flex_rnea(const soa_model *m, soa_data *d, const double *q, const double *qd,
                         const double *qdd, int use_fext, double *tau)
{
    soa_outward_placements(m, d, q);
    soa_flex_velocities(m, d, qd);
    flex_inverse(m, d, q, qd, qdd, use_fext, 1, 1, tau);
    for (int i = 0; i < m->nv; i++) tau[i] += m->armature[i] * qdd[i];   /* rotors: M + diag(a) */
    return soa_check_result(tau, m->nv, 1);
}

/* y = M x + diag(a) x, the mass matrix (rotors included) applied to x: one Newton-Euler pass at
 * zero velocity without gravity and elasticity (seed 000 eq. 4.3's M^f).  Needs placements. */
void soa_flex_mass_apply(const soa_model *m, soa_data *d, const double *q, const double *x,
                         double *y)
{
    flex_inverse(m, d, q, d->zerov, x, 0, 0, 0, y);
    for (int i = 0; i < m->nv; i++) y[i] += m->armature[i] * x[i];
}

/* tau = the velocity-product forces at velocity x alone, ID(theta, x, 0) without gravity,
 * elasticity, damping and f_ext: C(theta, x) x, a quadratic form in x (seed 000 eqs. 4.1-4.3:
 * a(k) and b(k) are quadratic in the body velocities, which are linear in x).  Needs placements;
 * overwrites the velocity sweep's V, a, b. */
void soa_flex_bias(const soa_model *m, soa_data *d, const double *q, const double *x, double *tau)
{
    for (int i = 0; i < m->nv; i++) d->zerov[i] = 0.0;
    soa_flex_velocities(m, d, x);
    flex_inverse(m, d, q, x, d->zerov, 0, 1, 0, tau);
}

/* The mass matrix column by column, M e_j = T(theta, 0, e_j) without gravity and elasticity
 * (soa_flex_mass_apply: n Newton-Euler passes over the one set of placements). */
soa_status soa_flex_crba(const soa_model *m, soa_data *d, const double *q, double *M)
{
    const int nv = m->nv;
    soa_outward_placements(m, d, q);
    for (int i = 0; i < nv; i++) d->zerov[i] = d->dv[i] = 0.0;
    soa_flex_velocities(m, d, d->zerov);
    for (int j = 0; j < nv; j++) {
        d->dv[j] = 1.0;
        soa_flex_mass_apply(m, d, q, d->dv, d->tau_j);
        d->dv[j] = 0.0;
        for (int i = 0; i < nv; i++) M[i * nv + j] = d->tau_j[i];
    }
    for (int i = 0; i < nv; i++)                           /* exactly symmetric */
        for (int j = 0; j < i; j++) M[i * nv + j] = M[j * nv + i] = 0.5 * (M[i * nv + j] + M[j * nv + i]);
    return soa_check_result(M, nv, nv);
}

/* T = 1/2 sum (V; eta-dot)* M(k) (V; eta-dot) (eq. 4.3), U = -g . sum (m p + R (m c + S_t eta))
 * + 1/2 eta* K eta (gravity and strain). */
soa_status soa_flex_energy(const soa_model *m, soa_data *d, const double *q, const double *qd,
                           double *kinetic, double *potential)
{
    SOA_SIZES(m);
    soa_outward_placements(m, d, q);
    soa_world_placements(m, d);
    soa_flex_velocities(m, d, qd);
    double T = 0.0, U = 0.0;
    for (int k = 0; k < nb; k++) {
        const int mk = m->nmod[k];
        const double *M = m->fl_M + nx * nx * k, *V = d->V + 6 * k;
        const double *eta = q + m->q0[k] + m->nqj[k], *etad = qd + m->v0[k] + m->nvj[k];
        const double *K = m->fl_K + nm * nm * k;
        for (int i = 0; i < 6 + mk; i++) {
            const double xi = i < 6 ? V[i] : etad[i - 6];
            double s = 0.0;
            for (int j = 0; j < 6 + mk; j++) s += M[nx * i + j] * (j < 6 ? V[j] : etad[j - 6]);
            T += 0.5 * xi * s;
        }
        double h[3], c[3];
        first_moment(m, k, eta, h, dims_of(m, k));
        mat3_vec(d->Rw + 9 * k, h, c);
        for (int i = 0; i < 3; i++) c[i] += m->mass[k] * d->pw[3 * k + i];
        U += m->a0[3] * c[0] + m->a0[4] * c[1] + m->a0[5] * c[2];      /* -g . (first moment) */
        for (int i = 0; i < mk; i++)
            for (int j = 0; j < mk; j++) U += 0.5 * eta[i] * K[nm * i + j] * eta[j];
    }
    for (int i = 0; i < m->nv; i++) T += 0.5 * m->armature[i] * qd[i] * qd[i];   /* rotors */
    *kinetic = T;
    *potential = U;
    return (soa_status){SOA_OK, 0};
}

/* The modal part of a linearly implicit stage (integrators.c, docs/joints.md) for g = gamma h: the
 * strain and modal damping forces -K eta - D eta-dot linearized with the diagonals of K and D
 * (exact for normal modes, fl_diag; an admissible Jacobian of the W-method otherwise),
 *     jdiag += g D_ii + g^2 K_ii,   jrhs += -g K_ii r_i + (g D_ii + g^2 K_ii) s_i
 * over the modal dofs, r the stage velocity qd where NULL, s = 0 where NULL (the stage's own
 * forces -K eta - D eta-dot stay in soa_flex_fd_diag's applied forces). */
void soa_flex_implicit_terms(const soa_model *m, soa_data *d, const double *qd, double g,
                             const double *r, const double *s)
{
    const int nm = m->nm;
    for (int k = 0; k < m->nb; k++) {
        const int e0 = m->v0[k] + m->nvj[k];
        const double *K = m->fl_K + nm * nm * k, *D = m->fl_D + nm * nm * k;
        for (int i = 0; i < m->nmod[k]; i++) {
            const int e = e0 + i;
            const double c = g * D[nm * i + i] + g * g * K[nm * i + i];
            d->jdiag[e] += c;
            d->jrhs[e] += -g * K[nm * i + i] * (r ? r[e] : qd[e]) + (s ? c * s[e] : 0.0);
        }
    }
}

/* The highest modal frequency of the model at theta (rad/s; 0 without modes): omega^2 = the
 * largest eigenvalue of M^-1 K (K the modal stiffness fl_K on each body's modes, 0 on the
 * joints' dofs), the undamped modes of the whole tree, coupled through the mass matrix
 * (seed 000 sec. 4; a clamped body's own omega_i^2 = K_ii is lower: the coupled modes move the
 * outboard bodies).  Power iteration v <- M^-1 K v by the factored form (soa_flex_factor, one
 * O(N) solve per iteration), with the Rayleigh quotient in K's inner product,
 * (K v)* M^-1 (K v) / (v* K v), in which M^-1 K is self-adjoint: it rises to omega^2 from
 * below (within 0.1 % after 200 iterations on bench_flexible's chain of 80 modes, a dense
 * eigensolve in tests/test_flexible_stability.py).  Uses vs, dv, tau_j. */
#define FLEX_POWER_ITERS 200
soa_status soa_flex_omega_max(const soa_model *m, soa_data *d, const double *q, double *omega)
{
    const int nv = m->nv, nm = m->nm;
    double *v = d->vs, *y = d->dv, *x = d->tau_j, lam = 0.0;
    *omega = 0.0;
    if (!nm) return (soa_status){SOA_OK, 0};
    soa_status st = soa_flex_factor(m, d, q);
    if (st.kind != SOA_OK) return st;
    for (int i = 0; i < nv; i++) v[i] = 1.0 + 0.01 * i;       /* not orthogonal to any mode */
    for (int it = 0; it < FLEX_POWER_ITERS; it++) {
        double vKv = 0.0, yx = 0.0, vmax = 0.0;
        for (int i = 0; i < nv; i++) y[i] = 0.0;
        for (int k = 0; k < m->nb; k++) {                       /* y = K v */
            const int e0 = m->v0[k] + m->nvj[k];
            const double *K = m->fl_K + nm * nm * k;
            for (int i = 0; i < m->nmod[k]; i++)
                for (int j = 0; j < m->nmod[k]; j++) y[e0 + i] += K[nm * i + j] * v[e0 + j];
        }
        flex_solve_one(m, d, y, NULL, x);                      /* x = M^-1 K v */
        for (int i = 0; i < nv; i++) {
            vKv += v[i] * y[i];
            yx += y[i] * x[i];
            if (fabs(x[i]) > vmax) vmax = fabs(x[i]);
        }
        if (!(vKv > 0.0) || !(vmax > 0.0) || !isfinite(vmax)) break;  /* K = 0 or not finite */
        lam = yx / vKv;
        for (int i = 0; i < nv; i++) v[i] = x[i] / vmax;
    }
    *omega = lam > 0.0 ? sqrt(lam) : 0.0;
    return (soa_status){SOA_OK, 0};
}
