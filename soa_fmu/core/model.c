/* Model and Data: allocation from the tables of soa.h, and the structural checks of a model
 * (seed 000 sec. 2.1: bodies numbered parents first, so parent[k] < k). */
#include <math.h>
#include <stdlib.h>

#include "soa.h"
#include "spatial.h"

#define SOA_ALIGN 64   /* every array starts on a multiple of 64 bytes from the buffer's start */

/* Number of elements of a buffer with the given dims (the table's d0 x d1 x d2, ndim used). */
size_t soa_buffer_dims(int ndim, int d0, int d1, int d2)
{
    size_t n = (size_t)(d0 > 0 ? d0 : 0);
    if (ndim > 1) n *= (size_t)(d1 > 0 ? d1 : 0);
    if (ndim > 2) n *= (size_t)(d2 > 0 ? d2 : 0);
    return n;
}

static size_t aligned(size_t nbytes)
{
    return (nbytes + SOA_ALIGN - 1) / SOA_ALIGN * SOA_ALIGN;
}

/* Sizes are non-negative and small enough that no buffer size overflows. */
static int sizes_ok(const soa_sizes *s)
{
    const int big = 1 << 20;
    return s && s->nb >= 0 && s->nq >= 0 && s->nv >= 0 && s->nb < big && s->nm >= 0
           && s->nm <= SOA_MAX_MODES && s->nq <= (7 + s->nm) * s->nb && s->nv <= (6 + s->nm) * s->nb
           && s->nc >= 0 && s->nc < (1 << 12)
           && s->nsph >= 0 && s->nsph < (1 << 12) && s->npln >= 0 && s->npln < (1 << 8)
           && s->nssp >= 0 && s->nssp < (1 << 16)            /* contact.c: the simulator's tree */
           && s->nhv >= 0 && s->nhv <= s->nsph * SOA_HULL_MAX
           && (s->nsph == 0 || (s->nm == 0 && s->nc == 0));
}

soa_model *soa_model_new(const soa_sizes *s)
{
    if (!sizes_ok(s)) return NULL;
    soa_model *m = calloc(1, sizeof(soa_model));
    if (!m) return NULL;
    m->nb = s->nb; m->nq = s->nq; m->nv = s->nv; m->nc = s->nc; m->nm = s->nm;
    m->nsph = s->nsph; m->npln = s->npln; m->nssp = s->nssp; m->nhv = s->nhv;
    SOA_SIZES(m);
    size_t total = 0;
#define COUNT_INT(name, ndim, d0, d1, d2) total += aligned(sizeof(int) * soa_buffer_dims(ndim, d0, d1, d2));
#define COUNT_REAL(name, ndim, d0, d1, d2) total += aligned(sizeof(double) * soa_buffer_dims(ndim, d0, d1, d2));
    SOA_MODEL_INTS(COUNT_INT)
    SOA_MODEL_REALS(COUNT_REAL)
    m->buffer = calloc(total ? total : 1, 1);
    if (!m->buffer) { free(m); return NULL; }
    m->nbytes = total;
    char *p = m->buffer;
#define PLACE_INT(name, ndim, d0, d1, d2) \
    m->name = (int *)p; p += aligned(sizeof(int) * soa_buffer_dims(ndim, d0, d1, d2));
#define PLACE_REAL(name, ndim, d0, d1, d2) \
    m->name = (double *)p; p += aligned(sizeof(double) * soa_buffer_dims(ndim, d0, d1, d2));
    SOA_MODEL_INTS(PLACE_INT)
    SOA_MODEL_REALS(PLACE_REAL)
    m->vfric[0] = SOA_FRICTION_VELOCITY;
    static const double law[SOA_CT_NLAW] = {1e5, 1.5, 1.0, 0.8, 1e-3};   /* contact.c defaults */
    for (int c = 0; c < SOA_CT_NLAW; c++) m->ct_law[c] = law[c];
    return m;
}

void soa_model_free(soa_model *m)
{
    if (!m) return;
    free(m->buffer);
    free(m);
}

soa_data *soa_data_new(const soa_model *m)
{
    if (!m) return NULL;
    SOA_SIZES(m);
    soa_data *d = calloc(1, sizeof(soa_data));
    if (!d) return NULL;
    size_t total = 0;
    SOA_DATA_REALS(COUNT_REAL)
    SOA_DATA_INTS(COUNT_INT)
    d->buffer = calloc(total ? total : 1, 1);
    if (!d->buffer) { free(d); return NULL; }
    d->nbytes = total;
    char *p = d->buffer;
#define PLACE_DATA(name, ndim, d0, d1, d2) \
    d->name = (double *)p; p += aligned(sizeof(double) * soa_buffer_dims(ndim, d0, d1, d2));
#define PLACE_DATA_INT(name, ndim, d0, d1, d2) \
    d->name = (int *)p; p += aligned(sizeof(int) * soa_buffer_dims(ndim, d0, d1, d2));
    SOA_DATA_REALS(PLACE_DATA)
    SOA_DATA_INTS(PLACE_DATA_INT)
    return d;
}

void soa_data_free(soa_data *d)
{
    if (!d) return;
    free(d->buffer);
    free(d);
}

/* Configuration / velocity sizes of each joint type (SPEC E2); general joints: nq = nv in 1..6. */
static const int JOINT_NQ[SOA_NJOINTTYPES] = {0, 1, 1, 4, 7, 3, -1};
static const int JOINT_NV[SOA_NJOINTTYPES] = {0, 1, 1, 3, 6, 3, -1};

/* Velocity dofs of body k: its joint's, then its modal coordinates (flexible.c). */
static int body_dofs(const soa_model *m, int k)
{
    return m->nvj[k] + (m->nm ? m->nmod[k] : 0);
}

/* The flexible bodies' constants (seed 000 sec. 4): 0 <= modes <= nm, attachments only on a
 * flexible parent, finite fl_M, fl_K, fl_D, at_r, at_Psi (their physical rules, symmetric and
 * definite, are checked where they are made, soa_fmu/flexible.py). */
static int flexible_ok(const soa_model *m, int k)
{
    SOA_SIZES(m);
    if (!nm) return 1;
    if (m->nmod[k] < 0 || m->nmod[k] > nm || (m->attach[k] != 0 && m->attach[k] != 1)) return 0;
    if (m->attach[k] && (m->parent[k] < 0 || m->nmod[m->parent[k]] == 0)) return 0;
    for (int i = 0; i < nx * nx; i++)
        if (!isfinite(m->fl_M[nx * nx * k + i])) return 0;
    for (int i = 0; i < nm * nm; i++)
        if (!isfinite(m->fl_K[nm * nm * k + i]) || !isfinite(m->fl_D[nm * nm * k + i])) return 0;
    for (int i = 0; i < 6 * nm; i++)
        if (!isfinite(m->at_Psi[6 * nm * k + i])) return 0;
    for (int i = 0; i < 3; i++)
        if (!isfinite(m->at_r[3 * k + i])) return 0;
    return 1;
}

/* Depth-first numbering of the velocity columns, children in index order, so that every subtree's
 * columns are contiguous [dfs0(k), dfsend(k)) (identity for models numbered depth first). */
static void depth_first_columns(soa_model *m)
{
    SOA_SIZES(m);
    int *size = m->dfsend, *next = m->lamslot;       /* scratch until their final values */
    for (int k = 0; k < nb; k++) size[k] = body_dofs(m, k);
    for (int k = nb - 1; k >= 0; k--)
        if (m->parent[k] >= 0) size[m->parent[k]] += size[k];
    int roots = 0;
    for (int k = 0; k < nb; k++) {
        const int p = m->parent[k], sz = size[k];
        if (p < 0) {
            m->dfs0[k] = roots;
            roots += sz;
        } else {
            m->dfs0[k] = next[p];
            next[p] += sz;
        }
        next[k] = m->dfs0[k] + body_dofs(m, k);
        m->dfsend[k] = m->dfs0[k] + sz;
    }
    m->dfs_identity = 1;
    for (int k = 0; k < nb; k++)
        for (int i = 0; i < body_dofs(m, k); i++) {
            const int c = m->v0[k] + i, col = m->dfs0[k] + i;
            m->vdfs[c] = col;
            m->vcol[col] = c;
            if (col != c) m->dfs_identity = 0;
        }
}

/* The placement and joint-map forms of body k's joint for the fast sweeps (kinematics.c), after
 * jaxis and fXr: jmap, the form of H*_I (0-5: about the coordinate axis jaxis; 6: a revolute
 * joint whose H* = [s; 0], 7: a prismatic one, [0; s], about any other axis; -1: any), and for a
 * revolute joint about a non-coordinate unit axis u the placement in the sweep parent split by
 * Rodrigues' formula Rj = u u^T + cos(theta) (1 - u u^T) + sin(theta) u~ (seed 000 eq. 2.7 with
 * the joint rotation written out):
 *     fXr Rj = C + cos(theta) A + sin(theta) B,  C = (fXr u) u^T,  A = fXr - C,  B = fXr u~;
 * for a prismatic one fXr u (l = fXp + theta fXr u), in A's first three entries. */
static void joint_forms(soa_model *m, int k)
{
    const int jt = m->jtype[k], e = m->jaxis[k];
    const double *u = m->axis + 3 * k, *X = m->fXr + 9 * k, *s = m->S + 6 * m->v0[k];
    double *A = m->jrot + 27 * k, *B = A + 9, *C = A + 18;
    for (int i = 0; i < 27; i++) A[i] = 0.0;
    m->jmap[k] = e < 0 ? -1 : e + (jt == SOA_REVOLUTE ? 0 : 3);
    if (e >= 0 || (jt != SOA_REVOLUTE && jt != SOA_PRISMATIC)) return;
    const int zero = jt == SOA_REVOLUTE ? 3 : 0;   /* the half of H* that must vanish */
    if (s[zero] == 0.0 && s[zero + 1] == 0.0 && s[zero + 2] == 0.0)
        m->jmap[k] = jt == SOA_REVOLUTE ? 6 : 7;
    double w[3];                                     /* fXr u */
    for (int i = 0; i < 3; i++) w[i] = X[3 * i] * u[0] + X[3 * i + 1] * u[1] + X[3 * i + 2] * u[2];
    if (jt == SOA_PRISMATIC) {
        for (int i = 0; i < 3; i++) A[i] = w[i];
        return;
    }
    const double K[9] = {0.0, -u[2], u[1], u[2], 0.0, -u[0], -u[1], u[0], 0.0};   /* u~ */
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            C[3 * i + j] = w[i] * u[j];
            A[3 * i + j] = X[3 * i + j] - C[3 * i + j];
            B[3 * i + j] = X[3 * i] * K[j] + X[3 * i + 1] * K[3 + j] + X[3 * i + 2] * K[6 + j];
        }
}

/* The eigenvalues l and orthonormal eigenvectors (the columns of Q) of the symmetric part of a
 * 3 x 3 matrix S, by cyclic Jacobi rotations (each zeroes one off-diagonal entry; converged to
 * rounding in a few sweeps). */
static void symmetric_eigen3(const double *S, double *l, double *Q)
{
    double A[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            A[3 * i + j] = 0.5 * (S[3 * i + j] + S[3 * j + i]);
            Q[3 * i + j] = i == j ? 1.0 : 0.0;
        }
    for (int sweep = 0; sweep < 30; sweep++) {
        if (A[1] == 0.0 && A[2] == 0.0 && A[5] == 0.0) break;
        for (int p = 0; p < 2; p++)
            for (int q = p + 1; q < 3; q++) {
                const double apq = A[3 * p + q];
                if (apq == 0.0) continue;
                const double th = (A[4 * q] - A[4 * p]) / (2.0 * apq);
                const double t = fabs(th) > 1e150 ? 0.5 / th
                                                  : (th >= 0.0 ? 1.0 : -1.0) / (fabs(th) + sqrt(th * th + 1.0));
                const double c = 1.0 / sqrt(t * t + 1.0), s = t * c;
                for (int r = 0; r < 3; r++) {         /* A P, then P^T (A P); Q P */
                    const double x = A[3 * r + p], y = A[3 * r + q];
                    A[3 * r + p] = c * x - s * y;
                    A[3 * r + q] = s * x + c * y;
                }
                for (int r = 0; r < 3; r++) {
                    const double x = A[3 * p + r], y = A[3 * q + r];
                    A[3 * p + r] = c * x - s * y;
                    A[3 * q + r] = s * x + c * y;
                }
                A[3 * p + q] = A[3 * q + p] = 0.0;
                for (int r = 0; r < 3; r++) {
                    const double x = Q[3 * r + p], y = Q[3 * r + q];
                    Q[3 * r + p] = c * x - s * y;
                    Q[3 * r + q] = s * x + c * y;
                }
            }
    }
    for (int i = 0; i < 3; i++) l[i] = A[4 * i];
}

/* g <- (l, g1, g2) with J = l 1 + g1 g1^T + g2 g2^T for a symmetric 3 x 3 J: l its least
 * eigenvalue, g = sqrt(l_i - l) q_i for the other two eigenpairs (J - l 1 is positive
 * semidefinite, of rank 2 at most), so that R J R^T = l 1 + (R g1)(R g1)^T + (R g2)(R g2)^T
 * (kinematics.c: the mass matrix's placement pass, 30 multiplications instead of 45). */
static void inertia_split(const double *J, double *g)
{
    double l[3], Q[9];
    symmetric_eigen3(J, l, Q);
    const int i0 = l[0] <= l[1] && l[0] <= l[2] ? 0 : l[1] <= l[2] ? 1 : 2;
    g[0] = l[i0];
    for (int a = 1; a <= 2; a++) {
        const int i = (i0 + a) % 3;
        const double d = l[i] - l[i0], w = d > 0.0 ? sqrt(d) : 0.0;
        for (int r = 0; r < 3; r++) g[3 * a - 2 + r] = w * Q[3 * r + i];
    }
}

/* Fixed links folded into their parents' rigid bodies.  A body k on a SOA_FIXED joint moves
 * rigidly with its parent, so the sweeps need not visit it: it is folded into its carrier spar(k),
 * the nearest ancestor with a moving joint (-1: welded to the world), at the constant placement
 * (fXr, fXp) of its frame in the carrier's, and its inertia is added into the carrier's by the
 * parallel-axis theorem -- the composite rigid-body inertia r(k) of seed 001 eq. 31 for a subtree
 * whose joints do not move, sum phi(r, k) M(k) phi*(r, k) with phi constant, in (m, c, J_C) form:
 *     m = sum m_k,  m c = sum m_k c_k,  J_C = sum (J_k + m_k (|e_k|^2 1 - e_k e_k^T)),  e_k = c_k - c
 * (c_k, J_k in the carrier's axes; a carrier alone keeps its own numbers).  The dynamics read these
 * folded tables (fmass, fcom, fJc, finertia: a folded body's are 0, a world-welded body's inertia
 * is dropped: it never moves), so any sweep over all bodies stays exact, and the fast sweeps visit
 * the moving bodies only (order, spar): a moving body's joint frame is then given in its sweep
 * parent's frame (fXr, fXp).  The folded bodies' placements and motion are filled in after a
 * fast sweep (kinematics.c, soa_fold_fill), so every per-body output is still reported, and
 * forces on them (f_ext, contact, closures) are moved to their carriers.  The public numbering of
 * the bodies never changes.  Flexible models (nm > 0) fold nothing. */
static void fold_fixed_links(soa_model *m)
{
    SOA_SIZES(m);
    double *IO = m->finertia;                /* scratch per body: c (3), J (9), bodies carried */
    m->nmov = m->nfix = 0;
    for (int k = 0; k < nb; k++) {
        const int p = m->parent[k], folded = !nm && m->jtype[k] == SOA_FIXED;
        const int pf = p >= 0 && !nm && m->jtype[p] == SOA_FIXED;   /* the parent is folded */
        double *R = m->fXr + 9 * k, *x = m->fXp + 3 * k;
        m->spar[k] = pf ? m->spar[p] : p;
        if (pf) {                                     /* (Xr, Xp) after the parent's placement */
            const double *Rp = m->fXr + 9 * p, *xp = m->fXp + 3 * p, *Xr = m->Xr + 9 * k,
                         *Xp = m->Xp + 3 * k;
            for (int i = 0; i < 3; i++) {
                for (int j = 0; j < 3; j++)
                    R[3 * i + j] = Rp[3 * i] * Xr[j] + Rp[3 * i + 1] * Xr[3 + j] + Rp[3 * i + 2] * Xr[6 + j];
                x[i] = xp[i] + Rp[3 * i] * Xp[0] + Rp[3 * i + 1] * Xp[1] + Rp[3 * i + 2] * Xp[2];
            }
        } else {
            for (int i = 0; i < 9; i++) R[i] = m->Xr[9 * k + i];
            for (int i = 0; i < 3; i++) x[i] = m->Xp[3 * k + i];
        }
        if (!folded) {
            int moved = 0;                            /* the folded parent is off its carrier's frame */
            for (int i = 0; i < 9 && pf; i++) moved |= m->fXr[9 * p + i] != (i % 4 == 0 ? 1.0 : 0.0);
            for (int i = 0; i < 3 && pf; i++) moved |= m->fXp[3 * p + i] != 0.0;
            m->order[m->nmov++] = k;
            if (moved) m->fixr[m->nfix++] = k;
        }
        for (int i = 0; i < 36; i++) IO[36 * k + i] = 0.0;
    }
    for (int k = 0, n = m->nmov; k < nb; k++)
        if (!nm && m->jtype[k] == SOA_FIXED) m->order[n++] = k;
    m->nquat = 0;                                     /* joints with a quaternion */
    for (int k = 0; k < nb; k++)
        if (m->jtype[k] == SOA_SPHERICAL || m->jtype[k] == SOA_FREE) m->quatb[m->nquat++] = k;
    m->qlinear = m->nquat == 0 && nq == nv;           /* theta, beta coordinate by coordinate */
    for (int k = 0; k < nb; k++)
        m->qlinear &= m->jtype[k] != SOA_PLANAR && m->q0[k] == m->v0[k] && m->nqj[k] == m->nvj[k];
    for (int k = 0; k < nb; k++) {                    /* joints about a coordinate axis */
        const double *ax = m->axis + 3 * k;
        m->jaxis[k] = -1;
        if (m->jtype[k] == SOA_REVOLUTE || m->jtype[k] == SOA_PRISMATIC)
            for (int i = 0; i < 3; i++)
                if (ax[i] == 1.0 && ax[(i + 1) % 3] == 0.0 && ax[(i + 2) % 3] == 0.0) m->jaxis[k] = i;
        if (m->jaxis[k] >= 0) {                       /* ... whose H* is that unit twist */
            const int o = m->jtype[k] == SOA_REVOLUTE ? 0 : 3;
            for (int i = 0; i < 6; i++)
                if (m->S[6 * m->v0[k] + i] != (i == o + m->jaxis[k] ? 1.0 : 0.0)) m->jaxis[k] = -1;
        }
        joint_forms(m, k);
    }
    /* each body's mass, centre of mass and J_C in its carrier's frame (IO: c at 0, J at 3) */
    for (int k = 0; k < nb; k++) {
        double *c = IO + 36 * k, *J = c + 3;
        const double *ck = m->com + 3 * k;
        if (!nm && m->jtype[k] == SOA_FIXED) {
            const double *R = m->fXr + 9 * k, *x = m->fXp + 3 * k;
            for (int i = 0; i < 3; i++) c[i] = x[i] + R[3 * i] * ck[0] + R[3 * i + 1] * ck[1] + R[3 * i + 2] * ck[2];
            rotate_symmetric3(R, m->Jc + 9 * k, 3, J);
        } else {
            for (int i = 0; i < 3; i++) c[i] = ck[i];
            for (int i = 0; i < 9; i++) J[i] = m->Jc[9 * k + i];
        }
        m->fmass[k] = 0.0;
        m->fcom[3 * k] = m->fcom[3 * k + 1] = m->fcom[3 * k + 2] = 0.0;
        for (int i = 0; i < 9; i++) m->fJc[9 * k + i] = 0.0;
    }
    for (int k = 0; k < nb; k++) {                    /* m, m c of each carrier */
        const int r = !nm && m->jtype[k] == SOA_FIXED ? m->spar[k] : k;
        if (r < 0) continue;                          /* welded to the world: dropped */
        m->fmass[r] += m->mass[k];
        for (int i = 0; i < 3; i++) m->fcom[3 * r + i] += m->mass[k] * IO[36 * k + i];
        IO[36 * r + 12] += 1.0;                       /* bodies in the carrier */
    }
    for (int k = 0; k < nb; k++) {                    /* c = m c / m (a lone body keeps its own) */
        double *c = m->fcom + 3 * k;
        const int lone = IO[36 * k + 12] == 1.0 || !(m->fmass[k] > 0.0);
        for (int i = 0; i < 3; i++) c[i] = lone ? (IO[36 * k + 12] > 0.0 ? IO[36 * k + i] : 0.0)
                                                : c[i] / m->fmass[k];
    }
    for (int k = 0; k < nb; k++) {                    /* J_C about the carrier's centre of mass */
        const int r = !nm && m->jtype[k] == SOA_FIXED ? m->spar[k] : k;
        if (r < 0) continue;
        const double mk = m->mass[k], *J = IO + 36 * k + 3, *cr = m->fcom + 3 * r;
        const double e[3] = {IO[36 * k] - cr[0], IO[36 * k + 1] - cr[1], IO[36 * k + 2] - cr[2]};
        const double e2 = e[0] * e[0] + e[1] * e[1] + e[2] * e[2];
        double *Jr = m->fJc + 9 * r;
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
                Jr[3 * i + j] += J[3 * i + j] + mk * ((i == j ? e2 : 0.0) - e[i] * e[j]);
    }
    for (int k = 0; k < nb; k++) {
        spatial_inertia(m->fmass[k], m->fcom + 3 * k, m->fJc + 9 * k, m->finertia + 36 * k);
        inertia_split(m->fJc + 9 * k, m->fJg + 7 * k);
    }
}

/* Checks everything a kernel relies on to stay in bounds (parents first, joint sizes consistent
 * with the types, coordinates contiguous and covering q and qd, finite constants) and derives
 * vend.  Returns {SOA_BAD_MODEL, body} for the first offending body. */
soa_status soa_model_finish(soa_model *m)
{
    soa_status st = {SOA_OK, 0};
    SOA_SIZES(m);
    int qn = 0, vn = 0;
    for (int k = 0; k < nb; k++) {
        const int t = m->jtype[k];
        st.index = k;
        st.kind = SOA_BAD_MODEL;
        if (m->parent[k] < -1 || m->parent[k] >= k) return st;
        if (t < 0 || t >= SOA_NJOINTTYPES) return st;
        if (t == SOA_GENERAL) {
            if (m->nvj[k] < 1 || m->nvj[k] > 6 || m->nqj[k] != m->nvj[k]) return st;
        } else if (m->nqj[k] != JOINT_NQ[t] || m->nvj[k] != JOINT_NV[t]) {
            return st;
        }
        if (m->q0[k] != qn || m->v0[k] != vn || !flexible_ok(m, k)) return st;
        qn += m->nqj[k] + (nm ? m->nmod[k] : 0);
        vn += body_dofs(m, k);
        for (int i = 0; i < 3; i++)
            if (!isfinite(m->axis[3 * k + i]) || !isfinite(m->Xp[3 * k + i])) return st;
        for (int i = 0; i < 9; i++)
            if (!isfinite(m->basis[9 * k + i]) || !isfinite(m->Xr[9 * k + i])) return st;
        if (!isfinite(m->mass[k]) || m->mass[k] < 0.0) return st;
        for (int i = 0; i < 3; i++)
            if (!isfinite(m->com[3 * k + i])) return st;
        for (int i = 0; i < 9; i++)
            if (!isfinite(m->Jc[9 * k + i])) return st;
    }
    st.kind = SOA_BAD_MODEL;                          /* (also when there is no body) */
    st.index = nb;
    if (qn != nq || vn != nv) return st;
    for (int i = 0; i < 6 * nv; i++)
        if (!isfinite(m->S[i])) return st;
    for (int i = 0; i < 6; i++)
        if (!isfinite(m->a0[i])) return st;
    /* ---- dissipation.c: d, f_c >= 0 per dof, v_s > 0 ---- */
    st.kind = SOA_BAD_DISSIPATION;
    m->dissipative = 0;
    for (int i = 0; i < nv; i++) {
        st.index = i;
        if (!(m->damping[i] >= 0.0 && m->damping[i] < HUGE_VAL)
            || !(m->friction[i] >= 0.0 && m->friction[i] < HUGE_VAL))
            return st;
        m->dissipative |= m->damping[i] != 0.0 || m->friction[i] != 0.0;
    }
    st.index = nv;
    if (!(m->vfric[0] > 0.0 && m->vfric[0] < HUGE_VAL)) return st;
    /* ---- armature and joint stops: a, k, b >= 0 finite; limits finite, lower <= upper; stops
     * only on the one coordinate of a revolute / prismatic joint ---- */
    st.kind = SOA_BAD_JOINT;
    m->stopped = 0;
    for (int i = 0; i < nv; i++) m->stop_qi[i] = -1;
    for (int k = 0; k < nb; k++)
        for (int i = m->v0[k]; i < m->v0[k] + m->nvj[k]; i++) {
            st.index = i;
            const int on = m->stop_on[i];
            if (!(m->armature[i] >= 0.0 && m->armature[i] < HUGE_VAL) || on < 0 || on > 3) return st;
            if (!on) continue;
            if (m->jtype[k] != SOA_REVOLUTE && m->jtype[k] != SOA_PRISMATIC) {
                st.index = nv + i;   /* (message: stops only on revolute / prismatic joints) */
                return st;
            }
            if (!(m->stop_k[i] >= 0.0 && m->stop_k[i] < HUGE_VAL)
                || !(m->stop_b[i] >= 0.0 && m->stop_b[i] < HUGE_VAL)
                || ((on & 1) && !isfinite(m->stop_lo[i])) || ((on & 2) && !isfinite(m->stop_hi[i]))
                || (on == 3 && !(m->stop_lo[i] <= m->stop_hi[i])))
                return st;
            m->stop_qi[i] = m->q0[k];
            m->stopped |= m->stops[0] != 0;
        }
    for (int i = 0; i < nv; i++) {                    /* modal dofs: armature only */
        st.index = i;
        if (!(m->armature[i] >= 0.0 && m->armature[i] < HUGE_VAL)) return st;
        if (m->stop_qi[i] < 0 && m->stop_on[i]) return st;
    }
    st = soa_mimic_finish(m);                         /* mimic.c: the couplings */
    if (st.kind != SOA_OK) return st;
    for (int k = 0; k < nb; k++) {
        m->vend[k] = m->v0[k] + body_dofs(m, k);
        spatial_inertia(m->mass[k], m->com + 3 * k, m->Jc + 9 * k, m->inertia + 36 * k);
        for (int i = 0; i < 6 && nm; i++)             /* fl_M's rigid block is M(k) */
            for (int j = 0; j < 6; j++) m->fl_M[nx * nx * k + nx * i + j] = m->inertia[36 * k + 6 * i + j];
    }
    for (int k = nb - 1; k >= 0; k--)                 /* children come after parents */
        if (m->parent[k] >= 0 && m->vend[k] > m->vend[m->parent[k]])
            m->vend[m->parent[k]] = m->vend[k];
    depth_first_columns(m);
    fold_fixed_links(m);
    for (int k = 0; k < nb; k++) {                    /* the last child of p shares p's slot */
        int last = 1;
        for (int c = k + 1; c < nb && last; c++) last = m->parent[c] != m->parent[k];
        m->lamslot[k] = (m->parent[k] >= 0 && last) ? m->lamslot[m->parent[k]] : k;
    }
    for (int k = 0; k < nbf; k++) {                   /* flexible.c: children, frames, normal modes */
        const double *Xr = m->Xr + 9 * k, *Xp = m->Xp + 3 * k, *r = m->at_r + 3 * k;
        int one = 1;
        for (int i = 0; i < 9; i++) one &= Xr[i] == (i % 4 == 0 ? 1.0 : 0.0);
        m->fl_kids[k] = 0;
        m->fl_frame[k] = m->attach[k] ? one | (Xp[0] == r[0] && Xp[1] == r[1] && Xp[2] == r[2]) << 1 : 0;
        int diag = 1;
        for (int i = 0; i < m->nmod[k]; i++)
            for (int j = 0; j < m->nmod[k]; j++)
                diag &= i == j || (m->fl_K[nm * nm * k + nm * i + j] == 0.0
                                   && m->fl_D[nm * nm * k + nm * i + j] == 0.0);
        m->fl_diag[k] = diag;
    }
    for (int k = 0; k < nbf; k++)
        if (m->parent[k] >= 0) m->fl_kids[m->parent[k]]++;
    st = soa_closures_finish(m);                       /* the constraints, their rows A */
    if (st.kind != SOA_OK) return st;
    st = soa_contact_finish(m);                        /* contact spheres, planes, pairs */
    if (st.kind != SOA_OK) return st;
    /* ---- derivatives.c: ancestor runs (a chain's is one run, [0, v0 + nvj)) ---- */
    for (int k = 0; k < nb; k++) {
        int up = m->parent[k];
        while (up >= 0 && m->nvj[up] == 0) up = m->parent[up];
        const int join = up >= 0 && m->v0[up] + m->nvj[up] == m->v0[k];
        m->arun0[k] = join ? m->arun0[up] : m->v0[k];
        m->arunup[k] = join ? m->arunup[up] : up;
    }
    m->finished = 1;
    st.kind = SOA_OK;
    st.index = 0;
    return st;
}

/* The physical rules of (m, J_C) with the tolerances of soa_fmu.model.check_inertia: J symmetric
 * to 1e-9 of its largest entry, eigenvalues >= -1e-12 of the largest, a + b >= c - 1e-9 c. */
int soa_inertia_problem(double mass, const double *Jc, double *ev)
{
    double e[3] = {0.0, 0.0, 0.0}, big = 1.0;
    if (!(mass >= 0.0 && mass < HUGE_VAL)) return 1;
    for (int i = 0; i < 9; i++) {
        if (!isfinite(Jc[i])) return 2;
        if (fabs(Jc[i]) > big) big = fabs(Jc[i]);
    }
    for (int i = 0; i < 3; i++)
        for (int j = i + 1; j < 3; j++)
            if (fabs(Jc[3 * i + j] - Jc[3 * j + i]) > 1e-9 * big) return 3;
    double Q[9];
    symmetric_eigen3(Jc, e, Q);                       /* ascending: */
    for (int i = 1; i < 3; i++)
        for (int j = i; j > 0 && e[j - 1] > e[j]; j--) {
            const double t = e[j];
            e[j] = e[j - 1];
            e[j - 1] = t;
        }
    if (ev)
        for (int i = 0; i < 3; i++) ev[i] = e[i];
    const double top = e[2] > 1.0 ? e[2] : 1.0;
    if (e[0] < -1e-12 * top) return 4;
    if (e[0] + e[1] < e[2] - 1e-9 * top) return 5;
    return 0;
}

/* Every body's inertial parameters against the physical rules: {SOA_BAD_INERTIA, first body}. */
soa_status soa_check_inertias(const soa_model *m)
{
    soa_status st = {SOA_OK, 0};
    for (int k = 0; k < m->nb; k++)
        if (soa_inertia_problem(m->mass[k], m->Jc + 9 * k, NULL)) {
            st.kind = SOA_BAD_INERTIA;
            st.index = k;
            return st;
        }
    return st;
}
