/* Flexible bodies (SPEC E15; seed 000 sec. 4, eqs. 4.1-4.3): the recursions with a body velocity
 * (V(k), eta-dot(k)) of size 6 + m(k).
 *
 * The model (seed 000 eq. 4.3, modally reduced): the nodal velocities of link k are
 * V^f(k) = B*(k) V(k) + h*(k) Psi(k) eta-dot(k) with the undeformed node locations in B, so the
 * link's kinetic energy is 1/2 (V; eta-dot)* fl_M(k) (V; eta-dot) with the constant generalized
 * mass fl_M(k) = [B; h* Psi] m(k) [B; h* Psi]* (soa_fmu/flexible.py); its strain energy is
 * 1/2 eta* K eta.  A child whose joint frame sits on a node (attach[k]) moves with the node's
 * deformation, u = Psi_t eta and R(theta) = exp(theta~), theta = Psi_r eta, exactly: its velocity
 * gains the term C* h* u-dot of eq. (4.1), here Gamma(k) eta-dot(p), with Gamma the node's
 * deformation rate seen at k (through the right Jacobian J_r of SO(3) for the rotation).  Gravity
 * is an applied force derived from the potential -g . (m p + R (m c + S_t eta)), S_t = fl_M's
 * (v, eta) block, so the model is Lagrangian: T + U + strain is conserved without damping.
 *
 * With H(k) = [H_joint 0; 0 I] mapping (V, eta-dot) to the body's dofs (joint, then modal) and
 * Phi(p, k) = [phi(p, k); Gamma*(k)] carrying a child's force to its parent's (V, eta-dot), the
 * recursions are those of seed 001 / seed 000 App. A with 6 + m in place of 6:
 *   articulated inertia  P(k) = M(k) + sum_c Phi(k, c) P+(c) Phi*(k, c),  D = H P H*, G = P H* D^-1
 *   filter               z(k) = b(k) + sum_c Phi(k, c) z+(c),  u = T - H z
 *   smoother             alpha = Phi* alpha(p) + a,  beta-dot = D^-1 u - G* alpha.
 * Rigid bodies of the model are the case m(k) = 0.  Everything is in body frames. */
#include <math.h>

#include "soa.h"
#include "spatial.h"

/* ------------------------------------------------------------------ SO(3) of a node's rotation */
/* The SO(3) quantities of a node's rotation vector theta (s = |theta|, K = theta~):
 * R = exp(K) = I + c1 K + a K^2 and the right Jacobian J_r = I - a K + b K^2 (omega_body =
 * J_r theta-dot), with c1 = sin s / s, a = (1 - cos s) / s^2, b = (s - sin s) / s^3; co <- (a, b,
 * a'/s, b'/s) for the rate so3_jacobian_rate.  One sincos of s / 2; series below s = 0.02, where
 * the closed forms cancel. */
static void so3_node(const double *th, double *R, double *J, double *co)
{
    const double s2 = th[0] * th[0] + th[1] * th[1] + th[2] * th[2], s = sqrt(s2);
    double c1, a, b, a1, b1;
    if (s < 0.02) {
        c1 = 1.0 - s2 / 6.0 * (1.0 - s2 / 20.0);
        a = 0.5 - s2 / 24.0 * (1.0 - s2 / 30.0);
        b = 1.0 / 6.0 - s2 / 120.0 * (1.0 - s2 / 42.0);
        a1 = -1.0 / 12.0 + s2 / 180.0 - s2 * s2 / 6720.0;
        b1 = -1.0 / 60.0 + s2 / 1260.0 - s2 * s2 / 60480.0;
    } else {
        const double h = sin(0.5 * s), c = cos(0.5 * s), sn = 2.0 * h * c, omc = 2.0 * h * h;
        c1 = sn / s;
        a = omc / s2;
        b = (s - sn) / (s2 * s);
        a1 = (s * sn - 2.0 * omc) / (s2 * s2);
        b1 = (omc * s - 3.0 * (s - sn)) / (s2 * s2 * s);
    }
    const double x = th[0], y = th[1], z = th[2];
    const double K[9] = {0, -z, y, z, 0, -x, -y, x, 0};
    const double K2[9] = {-(y * y + z * z), x * y, x * z, x * y, -(x * x + z * z), y * z,
                          x * z, y * z, -(x * x + y * y)};
    for (int i = 0; i < 9; i++) {
        const double e = i % 4 == 0 ? 1.0 : 0.0;
        R[i] = e + c1 * K[i] + a * K2[i];
        J[i] = e - a * K[i] + b * K2[i];
    }
    co[0] = a; co[1] = b; co[2] = a1; co[3] = b1;
}

/* Jd = (d/dt J_r) theta-dot = -a-dot (theta x thd) + b-dot theta x (theta x thd)
 *      + b thd x (theta x thd),  a-dot = (a'/s) theta.thd,  b-dot = (b'/s) theta.thd
 * (K-dot theta-dot = thd x thd = 0), co from so3_node. */
static void so3_jacobian_rate(const double *th, const double *thd, const double *co, double *Jd)
{
    const double td = th[0] * thd[0] + th[1] * thd[1] + th[2] * thd[2];
    double c[3], cc[3], dc[3];
    cross3(th, thd, c);
    cross3(th, c, cc);
    cross3(thd, c, dc);
    for (int i = 0; i < 3; i++) Jd[i] = -co[2] * td * c[i] + co[3] * td * cc[i] + co[1] * dc[i];
}

static inline void mat3_vec(const double *A, const double *x, double *y)
{
    for (int i = 0; i < 3; i++) y[i] = A[3 * i] * x[0] + A[3 * i + 1] * x[1] + A[3 * i + 2] * x[2];
}

static inline void mat3t_vec(const double *A, const double *x, double *y)
{
    for (int i = 0; i < 3; i++) y[i] = A[i] * x[0] + A[3 + i] * x[1] + A[6 + i] * x[2];
}

/* (rows 0-2, rows 3-5) . x for a 6 x n block of row stride ld: a node's rotation and translation. */
static void node_motion(const double *Psi, int ld, int n, const double *x, double *th, double *u)
{
    for (int i = 0; i < 3; i++) {
        double r = 0.0, t = 0.0;
        for (int j = 0; j < n; j++) {
            r += Psi[i * ld + j] * x[j];
            t += Psi[(3 + i) * ld + j] * x[j];
        }
        th[i] = r;
        u[i] = t;
    }
}

/* ------------------------------------------------------------------ kinematics (eq. 4.1) */
/* The record d->fl_node of an attachment, kept by soa_flex_attachment for the velocity sweep:
 * J_r(theta), R(theta), c_A and so3_node's coefficients. */
enum { NODE_J = 0, NODE_R = 9, NODE_C = 18, NODE_CO = 21, NODE = 25 };

/* Body k's placement (R, l) in its parent when its joint frame sits on a node of the flexible
 * parent p: the joint frame A is carried by the node's deformation, x -> r + u + R(theta)(x - r),
 * so R_A = R(theta) Xr, l_A = r + u + R(theta)(Xp - r); then R = R_A Rj, l = l_A + R_A tj.  Also
 * Gamma_A = [Xr* J_r Psi_r;  Xr* R(theta)* Psi_t - c_A x Xr* J_r Psi_r], c_A = Xr*(Xp - r): the
 * velocity of A per eta-dot(p) (A's frame), and Gamma = phi*(k, A) Gamma_A.  Needs Rj, tj. */
void soa_flex_attachment(const soa_model *m, soa_data *d, int k, const double *q)
{
    SOA_SIZES(m);
    const int p = m->parent[k], mp = m->nmod[p];
    const double *Psi = m->at_Psi + 6 * nm * k, *r = m->at_r + 3 * k;
    const double *Xr = m->Xr + 9 * k, *Xp = m->Xp + 3 * k, *Rj = d->Rj + 9 * k, *tj = d->tj + 3 * k;
    double *th = d->fl_th + 3 * k, *RA = d->fl_RA + 9 * k, *lA = d->fl_lA + 3 * k;
    double *GA = d->fl_GA + 6 * nm * k, *node = d->fl_node + NODE * k, u[3], e[3], Re[3];
    double *J = node + NODE_J, *Rt = node + NODE_R, *cA = node + NODE_C;
    node_motion(Psi, nm, mp, q + m->q0[p] + m->nqj[p], th, u);
    so3_node(th, Rt, J, node + NODE_CO);
    for (int i = 0; i < 3; i++) e[i] = Xp[i] - r[i];
    mat3_vec(Rt, e, Re);
    mat3t_vec(Xr, e, cA);
    for (int i = 0; i < 3; i++) {
        lA[i] = r[i] + u[i] + Re[i];
        for (int j = 0; j < 3; j++)
            RA[3 * i + j] = Rt[3 * i] * Xr[j] + Rt[3 * i + 1] * Xr[3 + j] + Rt[3 * i + 2] * Xr[6 + j];
    }
    double *R = d->R + 9 * k, *l = d->l + 3 * k;
    for (int i = 0; i < 3; i++) {
        const double *x = RA + 3 * i;
        for (int j = 0; j < 3; j++) R[3 * i + j] = x[0] * Rj[j] + x[1] * Rj[3 + j] + x[2] * Rj[6 + j];
        l[i] = lA[i] + x[0] * tj[0] + x[1] * tj[1] + x[2] * tj[2];
    }
    for (int c = 0; c < mp; c++) {
        const double pr[3] = {Psi[c], Psi[nm + c], Psi[2 * nm + c]};
        const double pt[3] = {Psi[3 * nm + c], Psi[4 * nm + c], Psi[5 * nm + c]};
        double Jp[3], w[3], Rp[3], v[3], cw[3];
        mat3_vec(J, pr, Jp);
        mat3t_vec(Xr, Jp, w);
        mat3t_vec(Rt, pt, Rp);
        mat3t_vec(Xr, Rp, v);
        cross3(cA, w, cw);
        for (int i = 0; i < 3; i++) {
            GA[i * nm + c] = w[i];
            GA[(3 + i) * nm + c] = v[i] - cw[i];
        }
    }
    phi_star_block(Rj, tj, GA, mp, nm, d->fl_G + 6 * nm * k, nm);
}

/* out += X x for a 6 x n block X of row stride ld. */
static void add_block_times(const double *X, int ld, int n, const double *x, double *out)
{
    for (int i = 0; i < 6; i++) {
        double s = 0.0;
        for (int j = 0; j < n; j++) s += X[i * ld + j] * x[j];
        out[i] += s;
    }
}

/* V(k) = phi*(k, p) V(p) + Gamma(k) eta-dot(p) + H*(k) beta(k) (eq. 4.1) and the velocity-product
 * acceleration a(k) with alpha(k) = phi*(k, p) alpha(p) + Gamma eta-ddot(p) + H* beta-dot + a(k):
 * through the deformed joint frame A,
 *   a(k) = phi*(k, A) [Gamma_A-dot eta-dot + V_A x~ Gamma_A eta-dot] + V(k) x~ H* beta(k),
 *   Gamma_A-dot eta-dot = [Xr* Jd;  -Xr* (w_b x R(theta)* Psi_t eta-dot) - c_A x Xr* Jd],
 * w_b = J_r theta-dot, Jd = J_r-dot theta-dot (so3_jacobian_rate); the gyroscopic force
 * b(k) = V x* (fl_M's rows of V) (V; eta-dot) (Euler-Poincare: fl_M is constant in the body
 * frame); gravity g in body axes.  Needs soa_outward_placements. */
void soa_flex_velocities(const soa_model *m, soa_data *d, const double *qd)
{
    SOA_SIZES(m);
    for (int k = 0; k < nb; k++) {
        const int p = m->parent[k], v0 = m->v0[k], mk = m->nmod[k];
        double *V = d->V + 6 * k, *a = d->a + 6 * k, rel[6] = {0, 0, 0, 0, 0, 0};
        for (int dd = 0; dd < m->nvj[k]; dd++) {
            const double *s = m->S + 6 * (v0 + dd), x = qd[v0 + dd];
            for (int i = 0; i < 6; i++) rel[i] += s[i] * x;
        }
        double cA[6] = {0, 0, 0, 0, 0, 0};
        if (p < 0) {
            for (int i = 0; i < 6; i++) V[i] = 0.0;
        } else if (m->attach[k]) {
            const int mp = m->nmod[p];
            const double *etad = qd + m->v0[p] + m->nvj[p], *Psi = m->at_Psi + 6 * nm * k;
            const double *RA = d->fl_RA + 9 * k, *lA = d->fl_lA + 3 * k, *Xr = m->Xr + 9 * k;
            const double *th = d->fl_th + 3 * k, *node = d->fl_node + NODE * k;
            const double *J = node + NODE_J, *Rt = node + NODE_R, *c = node + NODE_C;
            double VA[6], relA[6] = {0, 0, 0, 0, 0, 0}, thd[3], ud[3], Jd[3], wb[3];
            apply_phi_star(RA, lA, d->V + 6 * p, VA);
            add_block_times(d->fl_GA + 6 * nm * k, nm, mp, etad, relA);
            for (int i = 0; i < 6; i++) VA[i] += relA[i];
            node_motion(Psi, nm, mp, etad, thd, ud);
            so3_jacobian_rate(th, thd, node + NODE_CO, Jd);
            mat3_vec(J, thd, wb);
            double y[3], Rty[3], wy[3], dw[3], t[3];
            mat3t_vec(Rt, ud, y);
            cross3(wb, y, wy);
            mat3t_vec(Xr, wy, Rty);
            mat3t_vec(Xr, Jd, dw);
            cross3(c, dw, t);
            for (int i = 0; i < 3; i++) {
                cA[i] = dw[i];
                cA[3 + i] = -Rty[i] - t[i];
            }
            double cx[6];
            cross_motion(VA, relA, cx);
            for (int i = 0; i < 6; i++) cx[i] += cA[i];
            apply_phi_star(d->Rj + 9 * k, d->tj + 3 * k, cx, cA);    /* phi*(k, A) */
            apply_phi_star(d->Rj + 9 * k, d->tj + 3 * k, VA, V);
        } else {
            apply_phi_star(d->R + 9 * k, d->l + 3 * k, d->V + 6 * p, V);
        }
        for (int i = 0; i < 6; i++) V[i] += rel[i];
        cross_motion(V, rel, a);
        for (int i = 0; i < 6; i++) a[i] += cA[i];
        /* gravity in body axes: g(k) = R* g(p), g(world) = -a0[3..5] */
        const double gw[3] = {-m->a0[3], -m->a0[4], -m->a0[5]};
        mat3t_vec(d->R + 9 * k, p < 0 ? gw : d->fl_gb + 3 * p, d->fl_gb + 3 * k);
        /* b = V x* (M_VV V + M_Veta eta-dot) */
        const double *M = m->fl_M + nx * nx * k, *etad = qd + v0 + m->nvj[k];
        double h[6];
        for (int i = 0; i < 6; i++) {
            double s = 0.0;
            for (int j = 0; j < 6; j++) s += M[nx * i + j] * V[j];
            for (int j = 0; j < mk; j++) s += M[nx * i + 6 + j] * etad[j];
            h[i] = s;
        }
        cross_force(V, h, d->b + 6 * k);
    }
}

/* h = m c + S_t eta: body k's first moment of mass about its origin, deformed (S_t = fl_M's
 * (v, eta) block), body axes. */
static void first_moment(const soa_model *m, int k, const double *eta, double *h)
{
    SOA_SIZES(m);
    const double *M = m->fl_M + nx * nx * k;
    for (int i = 0; i < 3; i++) {
        double s = m->mass[k] * m->com[3 * k + i];
        for (int j = 0; j < m->nmod[k]; j++) s += M[nx * (3 + i) + 6 + j] * eta[j];
        h[i] = s;
    }
}

/* Applied generalized force Q(k) on (V, eta): f_ext, gravity [h x g; m g; S_t* g] with the first
 * moment h = m c + S_t eta (S_t = fl_M's (v, eta) block), and the elastic and damping forces
 * -K eta - D eta-dot.  gravity = 0 drops gravity, elasticity and damping (mass-matrix columns). */
static void applied_force(const soa_model *m, const soa_data *d, int k, const double *q,
                          const double *qd, int use_fext, int gravity, double *Q)
{
    SOA_SIZES(m);
    const int mk = m->nmod[k];
    const double *M = m->fl_M + nx * nx * k, *g = d->fl_gb + 3 * k;
    for (int i = 0; i < 6 + mk; i++) Q[i] = 0.0;
    if (use_fext)
        for (int i = 0; i < 6; i++) Q[i] = d->fext[6 * k + i];
    if (!gravity) return;
    const double *eta = q + m->q0[k] + m->nqj[k], *etad = qd + m->v0[k] + m->nvj[k];
    double hm[3], t[3];
    first_moment(m, k, eta, hm);
    cross3(hm, g, t);
    for (int i = 0; i < 3; i++) {
        Q[i] += t[i];
        Q[3 + i] += m->mass[k] * g[i];
    }
    const double *K = m->fl_K + nm * nm * k, *D = m->fl_D + nm * nm * k;
    for (int i = 0; i < mk; i++) {
        double s = M[nx * (6 + i) + 3] * g[0] + M[nx * (6 + i) + 4] * g[1] + M[nx * (6 + i) + 5] * g[2];
        for (int j = 0; j < mk; j++) s -= K[nm * i + j] * eta[j] + D[nm * i + j] * etad[j];
        Q[6 + i] = s;
    }
}

/* ------------------------------------------------------------------ dense helpers (n <= nx) */
/* Cholesky L L* = A in place (lower triangle, row stride ld) of an n x n symmetric A, with the
 * diagonal stored inverted (1 / L(i, i)); 0 if A is not positive definite. */
static int cholesky(double *A, int n, int ld)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j <= i; j++) {
            double s = A[ld * i + j];
            for (int c = 0; c < j; c++) s -= A[ld * i + c] * A[ld * j + c];
            if (i == j) {
                if (!(s > 0.0) || !isfinite(s)) return 0;
                A[ld * i + i] = 1.0 / sqrt(s);
            } else {
                A[ld * i + j] = s * A[ld * j + j];
            }
        }
    return 1;
}

/* x <- L^-* x (back substitution). */
static void back_solve(const double *L, int n, int ld, double *x)
{
    for (int i = n - 1; i >= 0; i--) {
        double s = x[i];
        for (int c = i + 1; c < n; c++) s -= L[ld * c + i] * x[c];
        x[i] = s * L[ld * i + i];
    }
}

/* Phi(p, k) f for a force f of body k: [phi(p, k) f;  Gamma(k)* f] added to z(p)'s (V, eta). */
static void add_to_parent(const soa_model *m, const soa_data *d, int k, const double *f, double *zp)
{
    SOA_SIZES(m);
    add_phi(d->R + 9 * k, d->l + 3 * k, f, zp);
    if (!m->attach[k]) return;
    const double *G = d->fl_G + 6 * nm * k;
    for (int j = 0; j < m->nmod[m->parent[k]]; j++) {
        double s = 0.0;
        for (int i = 0; i < 6; i++) s += G[i * nm + j] * f[i];
        zp[6 + j] += s;
    }
}

/* alpha(k) = phi*(k, p) alpha(p) + Gamma(k) eta-ddot(p) + a(k) (without k's own dofs). */
static void inherited_acceleration(const soa_model *m, const soa_data *d, int k, const double *qdd,
                                   int with_a, double *al)
{
    SOA_SIZES(m);
    const int p = m->parent[k];
    for (int i = 0; i < 6; i++) al[i] = with_a ? d->a[6 * k + i] : 0.0;
    if (p < 0) return;
    double x[6];
    apply_phi_star(d->R + 9 * k, d->l + 3 * k, d->alpha + 6 * p, x);
    for (int i = 0; i < 6; i++) al[i] += x[i];
    if (m->attach[k])
        add_block_times(d->fl_G + 6 * nm * k, nm, m->nmod[p], qdd + m->v0[p] + m->nvj[p], al);
}

/* P(p) += Phi(p, k) P+ Phi*(p, k) and z(p) += Phi(p, k) z+ for the V rows P+ (6 x 6, symmetric)
 * and z+ of body k: the blocks phi P+ phi*, phi P+ Gamma, Gamma* P+ Gamma. */
static void propagate(const soa_model *m, soa_data *d, int k, const double *Pk, const double *zk)
{
    SOA_SIZES(m);
    const int p = m->parent[k];
    double *P = d->fl_P + nx * nx * p, acc[36] = {0};
    add_phi_inertia(d->R + 9 * k, d->l + 3 * k, Pk, acc);
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++) P[nx * i + j] += acc[6 * i + j];
    add_to_parent(m, d, k, zk, d->fl_z + nx * p);
    if (!m->attach[k]) return;
    const int mp = m->nmod[p];
    const double *G = d->fl_G + 6 * nm * k;
    for (int j = 0; j < mp; j++) {
        double g[6], y[6], col[6] = {0, 0, 0, 0, 0, 0};
        for (int i = 0; i < 6; i++) g[i] = G[i * nm + j];
        matvec6(Pk, g, y);                                 /* P+ Gamma(:, j) */
        add_phi(d->R + 9 * k, d->l + 3 * k, y, col);
        for (int i = 0; i < 6; i++) {
            P[nx * i + 6 + j] += col[i];
            P[nx * (6 + j) + i] += col[i];
        }
        for (int c = 0; c < mp; c++) {
            double x = 0.0;
            for (int i = 0; i < 6; i++) x += G[i * nm + c] * y[i];
            P[nx * (6 + c) + 6 + j] += x;
        }
    }
}

/* ------------------------------------------------------------------ forward dynamics */
/* Articulated-body forward dynamics with flexible bodies (seed 001 Algorithm 3 / seed 000 A.1-A.2
 * with (V, eta-dot) per body; the header's recursion):
 *   inward   U = P H*, D = H U = L L*, u = T - H z;  W = L^-1 U_V*, w = L^-1 u;
 *            P+_VV = P_VV - W* W,  z+_V = z_V + P+_VV a + W* w;
 *            P(p) += Phi P+_VV Phi*,  z(p) += Phi z+_V
 *   outward  alpha' = phi* alpha(p) + Gamma eta-ddot(p) + a;  beta-dot(k) = L^-* (w - W alpha')
 * Only the V rows of P+ and z+ reach the parent (a child's modes are its own dofs); with the
 * Cholesky factor L the gain G = P H* D^-1 is never formed.  tau holds the joint forces and the
 * applied modal forces; qdd <- joint and modal accelerations. */
soa_status soa_flex_fd(const soa_model *m, soa_data *d, const double *q, const double *qd,
                       const double *tau, int use_fext, double *qdd)
{
    SOA_SIZES(m);
    soa_status st = {SOA_OK, 0};
    soa_outward_placements(m, d, q);
    soa_flex_velocities(m, d, qd);
    for (int k = 0; k < nb; k++) {
        const int mk = m->nmod[k];
        double *P = d->fl_P + nx * nx * k, *z = d->fl_z + nx * k;
        const double *M = m->fl_M + nx * nx * k;
        for (int i = 0; i < 6 + mk; i++)
            for (int j = 0; j < 6 + mk; j++) P[nx * i + j] = M[nx * i + j];
        applied_force(m, d, k, q, qd, use_fext, 1, z);
        for (int i = 0; i < 6 + mk; i++) z[i] = (i < 6 ? d->b[6 * k + i] : 0.0) - z[i];
    }
    for (int k = nb - 1; k >= 0; k--) {
        const int p = m->parent[k], nj = m->nvj[k], mk = m->nmod[k], nu = nj + mk, v0 = m->v0[k];
        const double *P = d->fl_P + nx * nx * k, *z = d->fl_z + nx * k;
        double *U = d->fl_U + nx * nx * k, *L = d->fl_L + nx * nx * k, *W = d->fl_Y + 6 * nx * k;
        double *w = d->fl_u + nx * k, Pp[36], zp[6], Pa[6];
        if (nu == 0) {                                     /* welded rigid body: all to the parent */
            if (p < 0) continue;
            for (int i = 0; i < 6; i++)
                for (int j = 0; j < 6; j++) Pp[6 * i + j] = P[nx * i + j];
            matvec6(Pp, d->a + 6 * k, Pa);
            for (int i = 0; i < 6; i++) zp[i] = z[i] + Pa[i];
            propagate(m, d, k, Pp, zp);
            continue;
        }
        for (int i = 0; i < 6 + mk; i++) {                  /* U = P H* */
            for (int j = 0; j < nj; j++) {
                const double *s = m->S + 6 * (v0 + j);
                double x = 0.0;
                for (int c = 0; c < 6; c++) x += P[nx * i + c] * s[c];
                U[nx * i + j] = x;
            }
            for (int j = 0; j < mk; j++) U[nx * i + nj + j] = P[nx * i + 6 + j];
        }
        for (int j = 0; j < nu; j++)                       /* D = H U (lower triangle), into L */
            for (int i = 0; i <= j; i++) {
                double x = 0.0;
                if (j < nj) {
                    const double *s = m->S + 6 * (v0 + j);
                    for (int c = 0; c < 6; c++) x += s[c] * U[nx * c + i];
                } else {
                    x = U[nx * (6 + j - nj) + i];
                }
                L[nx * j + i] = x + (i == j ? m->armature[v0 + j] : 0.0);   /* D + diag(a) */
            }
        if (!cholesky(L, nu, nx)) {
            st.kind = SOA_SINGULAR;
            st.index = k;
            return st;
        }
        for (int j = 0; j < nu; j++) {     /* u = T - H z; W = L^-1 U_V*, w = L^-1 u, row by row */
            double x = tau[v0 + j], r[6];
            if (j < nj)
                x -= dot6(m->S + 6 * (v0 + j), z);
            else
                x -= z[6 + j - nj];
            for (int c = 0; c < 6; c++) r[c] = U[nx * c + j];
            for (int i = 0; i < j; i++) {
                const double l = L[nx * j + i], *Wi = W + 6 * i;
                for (int c = 0; c < 6; c++) r[c] -= l * Wi[c];
                x -= l * w[i];
            }
            const double inv = L[nx * j + j];
            for (int c = 0; c < 6; c++) W[6 * j + c] = r[c] * inv;
            w[j] = x * inv;
        }
        if (p < 0) continue;
        for (int i = 0; i < 6; i++)                        /* P+_VV = P_VV - W* W */
            for (int j = i; j < 6; j++) {
                double x = P[nx * i + j];
                for (int c = 0; c < nu; c++) x -= W[6 * c + i] * W[6 * c + j];
                Pp[6 * i + j] = Pp[6 * j + i] = x;
            }
        matvec6(Pp, d->a + 6 * k, Pa);
        for (int i = 0; i < 6; i++) {                      /* z+_V = z_V + P+ a + W* w */
            double x = z[i] + Pa[i];
            for (int c = 0; c < nu; c++) x += W[6 * c + i] * w[c];
            zp[i] = x;
        }
        propagate(m, d, k, Pp, zp);
    }
    for (int k = 0; k < nb; k++) {
        const int nj = m->nvj[k], nu = nj + m->nmod[k], v0 = m->v0[k];
        const double *W = d->fl_Y + 6 * nx * k, *w = d->fl_u + nx * k, *L = d->fl_L + nx * nx * k;
        double *al = d->alpha + 6 * k, *x = qdd + v0;
        inherited_acceleration(m, d, k, qdd, 1, al);
        for (int j = 0; j < nu; j++) x[j] = w[j] - dot6(W + 6 * j, al);
        back_solve(L, nu, nx, x);
        for (int j = 0; j < nj; j++) {
            const double *s = m->S + 6 * (v0 + j);
            for (int c = 0; c < 6; c++) al[c] += s[c] * x[j];
        }
    }
    return st;
}

/* ------------------------------------------------------------------ inverse dynamics */
/* Newton-Euler with flexible bodies (seed 001 eq. 25 with (V, eta-dot)): outward
 * alpha(k) = phi*(k, p) alpha(p) + Gamma eta-ddot(p) + H* beta-dot(k) + a(k); inward
 * F(k) = M(k) (alpha; eta-ddot) + (b; 0) - Q(k) + sum_c Phi(k, c) F_V(c);  T = H F.
 * full = 0: no velocity terms, gravity, elasticity or f_ext (the mass matrix's columns); needs
 * placements and soa_flex_velocities. */
static void flex_inverse(const soa_model *m, soa_data *d, const double *q, const double *qd,
                         const double *qdd, int use_fext, int full, double *tau)
{
    SOA_SIZES(m);
    for (int k = 0; k < nb; k++) {
        const int nj = m->nvj[k], v0 = m->v0[k];
        double *al = d->alpha + 6 * k;
        inherited_acceleration(m, d, k, qdd, full, al);
        for (int j = 0; j < nj; j++) {
            const double *s = m->S + 6 * (v0 + j);
            for (int c = 0; c < 6; c++) al[c] += s[c] * qdd[v0 + j];
        }
    }
    for (int k = 0; k < nb; k++) {
        const int mk = m->nmod[k];
        const double *M = m->fl_M + nx * nx * k, *etadd = qdd + m->v0[k] + m->nvj[k];
        double *F = d->fl_z + nx * k;
        applied_force(m, d, k, q, qd, use_fext && full, full, F);
        for (int i = 0; i < 6 + mk; i++) {
            double x = (full && i < 6 ? d->b[6 * k + i] : 0.0) - F[i];
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
        if (m->parent[k] >= 0) add_to_parent(m, d, k, F, d->fl_z + nx * m->parent[k]);
    }
}

soa_status soa_flex_rnea(const soa_model *m, soa_data *d, const double *q, const double *qd,
                         const double *qdd, int use_fext, double *tau)
{
    soa_outward_placements(m, d, q);
    soa_flex_velocities(m, d, qd);
    flex_inverse(m, d, q, qd, qdd, use_fext, 1, tau);
    for (int i = 0; i < m->nv; i++) tau[i] += m->armature[i] * qdd[i];   /* rotors: M + diag(a) */
    return soa_check_result(tau, m->nv, 1);
}

/* The mass matrix column by column, M e_j = T(theta, 0, e_j) without gravity and elasticity
 * (seed 000 eq. 4.3's M^f; n Newton-Euler passes over the one set of placements). */
soa_status soa_flex_crba(const soa_model *m, soa_data *d, const double *q, double *M)
{
    const int nv = m->nv;
    soa_outward_placements(m, d, q);
    for (int i = 0; i < nv; i++) d->zerov[i] = d->dv[i] = 0.0;
    soa_flex_velocities(m, d, d->zerov);
    for (int j = 0; j < nv; j++) {
        d->dv[j] = 1.0;
        flex_inverse(m, d, q, d->zerov, d->dv, 0, 0, d->tau_j);
        d->dv[j] = 0.0;
        for (int i = 0; i < nv; i++) M[i * nv + j] = d->tau_j[i];
        M[j * nv + j] += m->armature[j];                   /* rotors: M + diag(a) */
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
        first_moment(m, k, eta, h);
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

/* {SOA_UNSUPPORTED, the first flexible body} for a model with flexible bodies, else SOA_OK: the
 * answer of the algorithm families not extended to them (closures, sensitivities, derivatives,
 * operational space, the M^-1 sweeps). */
soa_status soa_flex_unsupported(const soa_model *m)
{
    soa_status st = {SOA_OK, 0};
    for (int k = 0; m->nm && k < m->nb; k++)
        if (m->nmod[k]) {
            st.kind = SOA_UNSUPPORTED;
            st.index = k;
            return st;
        }
    if (m->nm) st.kind = SOA_UNSUPPORTED;
    return st;
}
