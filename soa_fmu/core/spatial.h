/* Spatial algebra helpers (SPEC E1; seed 000 sec. 2, seed 004 sec. 2.2), static inline.
 *
 *   V = [w; v] (angular first),  f = [N; F] (moment first).
 *   phi(p, k)  f_k = [R N + l x (R F);  R F]        force, child frame -> parent frame
 *   phi*(p, k) V_p = [R^T w;  R^T (v + w x l)]      velocity, parent frame -> child frame
 * with (R, l) the placement of body k in its parent: x_parent = R x_k, l = parent origin -> k origin.
 * Matrices are row-major: R[3 i + j], P[6 i + j].  Outputs never alias inputs unless stated.
 */
#ifndef SOA_SPATIAL_H
#define SOA_SPATIAL_H

#include <math.h>

/* The per-body steps of the hot sweeps (one call per body, many arguments): inlined into their
 * loop where the compiler allows it (GCC, Clang), plain static inline elsewhere. */
#if defined(__GNUC__)
#define SOA_BODY_STEP static inline __attribute__((always_inline))
#else
#define SOA_BODY_STEP static inline
#endif

/* Rotation matrix of the unit quaternion (w, x, y, z) (scalar first, Hamilton). */
static inline void quat_to_matrix(double w, double x, double y, double z, double *R)
{
    R[0] = 1.0 - 2.0 * (y * y + z * z); R[1] = 2.0 * (x * y - w * z);   R[2] = 2.0 * (x * z + w * y);
    R[3] = 2.0 * (x * y + w * z);   R[4] = 1.0 - 2.0 * (x * x + z * z); R[5] = 2.0 * (y * z - w * x);
    R[6] = 2.0 * (x * z - w * y);   R[7] = 2.0 * (y * z + w * x);   R[8] = 1.0 - 2.0 * (x * x + y * y);
}

/* Rodrigues' formula for a unit axis. */
/* Unit quaternion (w, x, y, z), w >= 0, of a rotation matrix (Shepperd's method). */
static inline void matrix_to_quat(const double *R, double *quat)
{
    const double t = R[0] + R[4] + R[8];
    double w, v[3];
    if (t > 0.0) {
        const double s = 2.0 * sqrt(1.0 + t);
        w = 0.25 * s;
        v[0] = (R[7] - R[5]) / s;
        v[1] = (R[2] - R[6]) / s;
        v[2] = (R[3] - R[1]) / s;
    } else {
        const int i = (R[0] >= R[4] && R[0] >= R[8]) ? 0 : (R[4] >= R[8] ? 1 : 2);
        const int j = (i + 1) % 3, k = (i + 2) % 3;
        const double r = 1.0 + R[4 * i] - R[4 * j] - R[4 * k];
        const double s = 2.0 * sqrt(r > 0.0 ? r : 0.0);
        w = (R[3 * k + j] - R[3 * j + k]) / s;
        v[i] = 0.25 * s;
        v[j] = (R[3 * j + i] + R[3 * i + j]) / s;
        v[k] = (R[3 * k + i] + R[3 * i + k]) / s;
    }
    const double n = sqrt(w * w + v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    const double sg = w < 0.0 ? -1.0 / n : 1.0 / n;
    quat[0] = w * sg;
    quat[1] = v[0] * sg;
    quat[2] = v[1] * sg;
    quat[3] = v[2] * sg;
}

/* c = cos(x), s = sin(x), inline: the joint angle of every revolute joint per sweep.  For
 * |x| < 2^19 pi/2, x = n pi/2 + r with |r| <= pi/4 (Cody-Waite: pi/2 in two parts, the first of
 * 33 bits, so n pi/2_1 is exact) and the minimax polynomials of fdlibm's __kernel_sin and
 * __kernel_cos on [-pi/4, pi/4] (errors below 1 ulp), the quadrant n mod 4 choosing signs;
 * larger or non-finite x: libm's cos and sin. */
static inline void soa_sincos(double x, double *c, double *s)
{
    if (!(fabs(x) < 823549.6)) {                       /* 2^19 pi/2, NaN, inf */
        *c = cos(x);
        *s = sin(x);
        return;
    }
    const double shift = 6755399441055744.0;          /* 1.5 * 2^52: round to nearest */
    const double fn = (x * 6.36619772367581382433e-01 + shift) - shift;   /* x * 2 / pi */
    const int n = (int)fn;
    const double r = (x - fn * 1.57079632673412561417e+00) - fn * 6.07710050650619224932e-11;
    const double z = r * r;
    const double sr = r + z * r * (-1.66666666666666324348e-01
                      + z * (8.33333333332248946124e-03 + z * (-1.98412698298579493134e-04
                      + z * (2.75573137070700676789e-06 + z * (-2.50507602534068634195e-08
                      + z * 1.58969099521155010221e-10)))));
    const double q = z * z * (4.16666666666666019037e-02 + z * (-1.38888888888741095749e-03
                     + z * (2.48015872894767294178e-05 + z * (-2.75573143513906633035e-07
                     + z * (2.08757232129817482790e-09 + z * -1.13596475577881948265e-11)))));
    const double hz = 0.5 * z, w = 1.0 - hz;
    const double cr = w + (((1.0 - w) - hz) + q);
    switch (n & 3) {
    case 0: *c = cr; *s = sr; break;
    case 1: *c = -sr; *s = cr; break;
    case 2: *c = -cr; *s = -sr; break;
    default: *c = sr; *s = -cr; break;
    }
}

/* The rotation by angle theta about the unit axis ax, from c = cos(theta), s = sin(theta)
 * (Rodrigues: R = c 1 + s ax~ + (1 - c) ax ax^T). */
static inline void rodrigues(const double *ax, double c, double s, double *R)
{
    const double t = 1.0 - c;
    const double x = ax[0], y = ax[1], z = ax[2];
    R[0] = t * x * x + c;     R[1] = t * x * y - s * z; R[2] = t * x * z + s * y;
    R[3] = t * x * y + s * z; R[4] = t * y * y + c;     R[5] = t * y * z - s * x;
    R[6] = t * x * z - s * y; R[7] = t * y * z + s * x; R[8] = t * z * z + c;
}

static inline void axis_angle_to_matrix(const double *ax, double angle, double *R)
{
    rodrigues(ax, cos(angle), sin(angle), R);
}

static inline void cross3(const double *a, const double *b, double *out)
{
    const double o0 = a[1] * b[2] - a[2] * b[1];
    const double o1 = a[2] * b[0] - a[0] * b[2];
    const double o2 = a[0] * b[1] - a[1] * b[0];
    out[0] = o0; out[1] = o1; out[2] = o2;
}

static inline void set_identity3(double *R)
{
    for (int i = 0; i < 9; i++) R[i] = (i % 4 == 0) ? 1.0 : 0.0;
}

/* out = V x~ x for a motion x: [w x xw;  v x xw + w x xv]  (seed 004 sec. 2.2). */
static inline void cross_motion(const double *restrict V, const double *restrict x,
                                double *restrict out)
{
    const double w0 = V[0], w1 = V[1], w2 = V[2], v0 = V[3], v1 = V[4], v2 = V[5];
    const double a0 = x[0], a1 = x[1], a2 = x[2], b0 = x[3], b1 = x[4], b2 = x[5];
    out[0] = w1 * a2 - w2 * a1;
    out[1] = w2 * a0 - w0 * a2;
    out[2] = w0 * a1 - w1 * a0;
    out[3] = v1 * a2 - v2 * a1 + w1 * b2 - w2 * b1;
    out[4] = v2 * a0 - v0 * a2 + w2 * b0 - w0 * b2;
    out[5] = v0 * a1 - v1 * a0 + w0 * b1 - w1 * b0;
}

/* out = V x* f for a force f: [w x N + v x F;  w x F]  (the gyroscopic operator). */
static inline void cross_force(const double *restrict V, const double *restrict f,
                               double *restrict out)
{
    const double w0 = V[0], w1 = V[1], w2 = V[2], v0 = V[3], v1 = V[4], v2 = V[5];
    const double n0 = f[0], n1 = f[1], n2 = f[2], f0 = f[3], f1 = f[4], f2 = f[5];
    out[0] = w1 * n2 - w2 * n1 + v1 * f2 - v2 * f1;
    out[1] = w2 * n0 - w0 * n2 + v2 * f0 - v0 * f2;
    out[2] = w0 * n1 - w1 * n0 + v0 * f1 - v1 * f0;
    out[3] = w1 * f2 - w2 * f1;
    out[4] = w2 * f0 - w0 * f2;
    out[5] = w0 * f1 - w1 * f0;
}

/* out = phi*(p, k) V: a parent-frame velocity/acceleration seen at body k, in k's frame. */
static inline void apply_phi_star(const double *restrict R, const double *restrict l,
                                  const double *restrict V, double *restrict out)
{
    const double w0 = V[0], w1 = V[1], w2 = V[2];
    const double u0 = V[3] + w1 * l[2] - w2 * l[1];
    const double u1 = V[4] + w2 * l[0] - w0 * l[2];
    const double u2 = V[5] + w0 * l[1] - w1 * l[0];
    for (int i = 0; i < 3; i++) {
        out[i] = R[i] * w0 + R[3 + i] * w1 + R[6 + i] * w2;
        out[3 + i] = R[i] * u0 + R[3 + i] * u1 + R[6 + i] * u2;
    }
}

/* acc += phi(p, k) f: a body-k force moved to the parent origin, in the parent frame. */
static inline void add_phi(const double *restrict R, const double *restrict l,
                           const double *restrict f, double *restrict acc)
{
    const double F0 = R[0] * f[3] + R[1] * f[4] + R[2] * f[5];
    const double F1 = R[3] * f[3] + R[4] * f[4] + R[5] * f[5];
    const double F2 = R[6] * f[3] + R[7] * f[4] + R[8] * f[5];
    acc[0] += R[0] * f[0] + R[1] * f[1] + R[2] * f[2] + l[1] * F2 - l[2] * F1;
    acc[1] += R[3] * f[0] + R[4] * f[1] + R[5] * f[2] + l[2] * F0 - l[0] * F2;
    acc[2] += R[6] * f[0] + R[7] * f[1] + R[8] * f[2] + l[0] * F1 - l[1] * F0;
    acc[3] += F0;
    acc[4] += F1;
    acc[5] += F2;
}

/* out = R S R^T for a symmetric 3x3 S (rows of stride ld), upper triangle formed, then mirrored. */
static inline void rotate_symmetric3(const double *restrict R, const double *restrict S, int ld,
                                     double *restrict out)
{
    /* T = S R^T, then the upper triangle of R T, mirrored (written out: the compiler keeps T in
     * registers) */
    const double T00 = S[ld * 0] * R[0] + S[ld * 0 + 1] * R[1] + S[ld * 0 + 2] * R[2];
    const double T01 = S[ld * 0] * R[3] + S[ld * 0 + 1] * R[4] + S[ld * 0 + 2] * R[5];
    const double T02 = S[ld * 0] * R[6] + S[ld * 0 + 1] * R[7] + S[ld * 0 + 2] * R[8];
    const double T10 = S[ld * 1] * R[0] + S[ld * 1 + 1] * R[1] + S[ld * 1 + 2] * R[2];
    const double T11 = S[ld * 1] * R[3] + S[ld * 1 + 1] * R[4] + S[ld * 1 + 2] * R[5];
    const double T12 = S[ld * 1] * R[6] + S[ld * 1 + 1] * R[7] + S[ld * 1 + 2] * R[8];
    const double T20 = S[ld * 2] * R[0] + S[ld * 2 + 1] * R[1] + S[ld * 2 + 2] * R[2];
    const double T21 = S[ld * 2] * R[3] + S[ld * 2 + 1] * R[4] + S[ld * 2 + 2] * R[5];
    const double T22 = S[ld * 2] * R[6] + S[ld * 2 + 1] * R[7] + S[ld * 2 + 2] * R[8];
    out[0] = R[0] * T00 + R[1] * T10 + R[2] * T20;
    out[1] = out[3] = R[0] * T01 + R[1] * T11 + R[2] * T21;
    out[2] = out[6] = R[0] * T02 + R[1] * T12 + R[2] * T22;
    out[4] = R[3] * T01 + R[4] * T11 + R[5] * T21;
    out[5] = out[7] = R[3] * T02 + R[4] * T12 + R[5] * T22;
    out[8] = R[6] * T02 + R[7] * T12 + R[8] * T22;
}

/* out = base + phi(p, k) A phi*(p, k) for a symmetric 6x6 A given in body k's frame (full, row
 * stride 6; the congruence of the inertia sweeps, seed 000 sec. 2), base and out 6 x 6 blocks of
 * row stride ld (out may be base), and phi A phi* alone also to Pc (row stride 6) unless Pc is
 * NULL.  With A = [[Aa, B], [B^T, C]]: rotate, A' = R Aa R^T, B' = R B R^T, C' = R C R^T, then
 * shift by l (L = l~):
 *     C'' = C',   B'' = B' + L C',   A'' = A' + L B'^T + B'' L^T
 * (symmetric blocks formed on their upper triangle; each entry written once to out and Pc: no
 * zeroed accumulator, no second pass).  The rigid sweeps' add_phi_inertia and the flexible
 * bodies' transfer to the parent (flexible.c) are this one function. */
SOA_BODY_STEP void phi_congruence(const double *restrict R, const double *restrict l,
                                 const double *restrict A, double *restrict Pc,
                                 const double *base, double *out, int ld)
{
    double Ar[9], Cr[9], T[9], B[9], X[9];
    rotate_symmetric3(R, A, 6, Ar);
    rotate_symmetric3(R, A + 21, 6, Cr);
    for (int i = 0; i < 3; i++)                    /* T = B R^T, B' = R T */
        for (int j = 0; j < 3; j++)
            T[3 * i + j] = A[6 * i + 3] * R[3 * j] + A[6 * i + 4] * R[3 * j + 1] + A[6 * i + 5] * R[3 * j + 2];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            B[3 * i + j] = R[3 * i] * T[j] + R[3 * i + 1] * T[3 + j] + R[3 * i + 2] * T[6 + j];
    for (int j = 0; j < 3; j++) {                  /* column j of L B'^T is l x (row j of B') */
        double c[3];
        cross3(l, B + 3 * j, c);
        X[j] = c[0]; X[3 + j] = c[1]; X[6 + j] = c[2];
    }
    for (int j = 0; j < 3; j++) {                  /* B'' = B' + L C', column by column */
        const double col[3] = {Cr[j], Cr[3 + j], Cr[6 + j]};
        double c[3];
        cross3(l, col, c);
        B[j] += c[0]; B[3 + j] += c[1]; B[6 + j] += c[2];
    }
    for (int i = 0; i < 3; i++) {                  /* row i of B'' L^T is l x (row i of B'') */
        double c[3];
        cross3(l, B + 3 * i, c);
        for (int j = i; j < 3; j++) {
            const double v = Ar[3 * i + j] + X[3 * i + j] + c[j];
            if (Pc) Pc[6 * i + j] = Pc[6 * j + i] = v;
            out[ld * i + j] = base[ld * i + j] + v;
            if (j != i) out[ld * j + i] = base[ld * j + i] + v;
        }
    }
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            const double b = B[3 * i + j], c = Cr[3 * i + j];
            if (Pc) {
                Pc[6 * i + 3 + j] = Pc[6 * (3 + j) + i] = b;
                Pc[6 * (3 + i) + 3 + j] = c;
            }
            out[ld * i + 3 + j] = base[ld * i + 3 + j] + b;
            out[ld * (3 + j) + i] = base[ld * (3 + j) + i] + b;
            out[ld * (3 + i) + 3 + j] = base[ld * (3 + i) + 3 + j] + c;
        }
}

/* acc += phi(p, k) P phi*(p, k) for a symmetric 6x6 P given in body k's frame (phi_congruence). */
static inline void add_phi_inertia(const double *restrict R, const double *restrict l,
                                   const double *restrict P, double *restrict acc)
{
    phi_congruence(R, l, P, NULL, acc, acc, 6);
}

/* M = [[J - m c~ c~, m c~], [-m c~, m I]]: the spatial inertia about a point from which the centre
 * of mass lies at c, with rotational inertia J about the centre of mass (seed 000 sec. 2;
 * seed 004 sec. 2.2).  J is symmetrized. */
static inline void spatial_inertia(double mass, const double *restrict c, const double *restrict J,
                                   double *restrict M)
{
    const double x = c[0], y = c[1], z = c[2];
    const double mx = mass * x, my = mass * y, mz = mass * z;
    const double J01 = 0.5 * (J[1] + J[3]), J02 = 0.5 * (J[2] + J[6]), J12 = 0.5 * (J[5] + J[7]);
    /* upper-left: J_C + m (|c|^2 1 - c c^T) = J_C - m c~ c~ */
    M[0] = J[0] + my * y + mz * z;
    M[7] = J[4] + mx * x + mz * z;
    M[14] = J[8] + mx * x + my * y;
    M[1] = M[6] = J01 - mx * y;
    M[2] = M[12] = J02 - mx * z;
    M[8] = M[13] = J12 - my * z;
    /* m c~ in the upper-right block, -m c~ = (m c~)^T in the lower-left */
    M[3] = M[18] = 0.0;   M[4] = M[24] = -mz;   M[5] = M[30] = my;
    M[9] = M[19] = mz;    M[10] = M[25] = 0.0;  M[11] = M[31] = -mx;
    M[15] = M[20] = -my;  M[16] = M[26] = mx;   M[17] = M[32] = 0.0;
    /* lower-right: m 1 */
    M[21] = M[28] = M[35] = mass;
    M[22] = M[23] = M[27] = M[29] = M[33] = M[34] = 0.0;
}

/* acc += phi(p, k) X for a 6 x n block of forces (columns), row stride ld. */
static inline void add_phi_block(const double *R, const double *l, const double *X, int n, int ld,
                                 double *acc, int ldacc)
{
    for (int c = 0; c < n; c++) {
        double f[6], g[6] = {0, 0, 0, 0, 0, 0};
        for (int i = 0; i < 6; i++) f[i] = X[i * ld + c];
        add_phi(R, l, f, g);
        for (int i = 0; i < 6; i++) acc[i * ldacc + c] += g[i];
    }
}

/* out = phi*(p, k) X for a 6 x n block of motions (columns), row stride ld. */
static inline void phi_star_block(const double *R, const double *l, const double *X, int n, int ld,
                                  double *out, int ldout)
{
    for (int c = 0; c < n; c++) {
        double v[6], o[6];
        for (int i = 0; i < 6; i++) v[i] = X[i * ld + c];
        apply_phi_star(R, l, v, o);
        for (int i = 0; i < 6; i++) out[i * ldout + c] = o[i];
    }
}

/* out = A x for a 6x6 A. */
static inline void matvec6(const double *restrict A, const double *restrict x, double *restrict out)
{
    for (int i = 0; i < 6; i++) {
        const double *r = A + 6 * i;
        out[i] = r[0] * x[0] + r[1] * x[1] + r[2] * x[2] + r[3] * x[3] + r[4] * x[4] + r[5] * x[5];
    }
}

/* A spatial inertia about the world origin (or a composite of them, or its rate) in compact form,
 * Ic = (Jxx, Jxy, Jxz, Jyy, Jyz, Jzz, cx, cy, cz, m) for the 6x6 [[J, c~], [-c~, m 1]] (c = m times
 * the centre of mass).  inertia_compact reads it off a 6x6 built by spatial_inertia. */
static inline void inertia_compact(const double *restrict M, double *restrict Ic)
{
    Ic[0] = M[0]; Ic[1] = M[1]; Ic[2] = M[2]; Ic[3] = M[7]; Ic[4] = M[8]; Ic[5] = M[14];
    Ic[6] = M[16]; Ic[7] = M[5]; Ic[8] = M[9]; Ic[9] = M[21];
}

/* out = Ic x for a compact inertia: [J w + c x v;  m v - c x w] (24 multiplications, not 36). */
static inline void inertia_apply(const double *restrict Ic, const double *restrict x,
                                 double *restrict out)
{
    const double c0 = Ic[6], c1 = Ic[7], c2 = Ic[8], m = Ic[9];
    const double w0 = x[0], w1 = x[1], w2 = x[2], v0 = x[3], v1 = x[4], v2 = x[5];
    out[0] = Ic[0] * w0 + Ic[1] * w1 + Ic[2] * w2 + c1 * v2 - c2 * v1;
    out[1] = Ic[1] * w0 + Ic[3] * w1 + Ic[4] * w2 + c2 * v0 - c0 * v2;
    out[2] = Ic[2] * w0 + Ic[4] * w1 + Ic[5] * w2 + c0 * v1 - c1 * v0;
    out[3] = m * v0 - (c1 * w2 - c2 * w1);
    out[4] = m * v1 - (c2 * w0 - c0 * w2);
    out[5] = m * v2 - (c0 * w1 - c1 * w0);
}

/* Ic <- the compact inertia about the world origin (world axes) of a rigid body at (Rw, pw) with
 * mass m, centre of mass cb and rotational inertia about it given split (body frame),
 * J_C = l 1 + g1 g1^T + g2 g2^T (g = (l, g1, g2), model.c inertia_split): c = pw + Rw cb,
 * J_O = Rw J_C Rw^T + m (|c|^2 1 - c c^T), m c (seed 004 eq. 5.44; the parallel-axis theorem),
 * with Rw J_C Rw^T = l 1 + h1 h1^T + h2 h2^T, h = Rw g: two vectors rotated, not a matrix. */
static inline void inertia_world_split(double mass, const double *restrict cb,
                                       const double *restrict g, const double *restrict Rw,
                                       const double *restrict pw, double *restrict Ic)
{
    double h[6], c[3];
    for (int i = 0; i < 3; i++) {
        const double r0 = Rw[3 * i], r1 = Rw[3 * i + 1], r2 = Rw[3 * i + 2];
        h[i] = r0 * g[1] + r1 * g[2] + r2 * g[3];
        h[3 + i] = r0 * g[4] + r1 * g[5] + r2 * g[6];
        c[i] = pw[i] + r0 * cb[0] + r1 * cb[1] + r2 * cb[2];
    }
    const double l = g[0], x = c[0], y = c[1], z = c[2];
    const double mx = mass * x, my = mass * y, mz = mass * z;
    Ic[0] = l + h[0] * h[0] + h[3] * h[3] + my * y + mz * z;
    Ic[1] = h[0] * h[1] + h[3] * h[4] - mx * y;
    Ic[2] = h[0] * h[2] + h[3] * h[5] - mx * z;
    Ic[3] = l + h[1] * h[1] + h[4] * h[4] + mx * x + mz * z;
    Ic[4] = h[1] * h[2] + h[4] * h[5] - my * z;
    Ic[5] = l + h[2] * h[2] + h[5] * h[5] + mx * x + my * y;
    Ic[6] = mx; Ic[7] = my; Ic[8] = mz; Ic[9] = mass;
}

/* A symmetric 6x6 packed: its upper triangle row by row, 21 numbers (P[i][j], i <= j, at
 * 6 i - i (i - 1) / 2 + j - i).  The inertial-frame articulated inertias are kept so. */
static inline void packed_apply(const double *restrict P, const double *restrict x,
                                double *restrict y)
{
    const double x0 = x[0], x1 = x[1], x2 = x[2], x3 = x[3], x4 = x[4], x5 = x[5];
    y[0] = P[0] * x0 + P[1] * x1 + P[2] * x2 + P[3] * x3 + P[4] * x4 + P[5] * x5;
    y[1] = P[1] * x0 + P[6] * x1 + P[7] * x2 + P[8] * x3 + P[9] * x4 + P[10] * x5;
    y[2] = P[2] * x0 + P[7] * x1 + P[11] * x2 + P[12] * x3 + P[13] * x4 + P[14] * x5;
    y[3] = P[3] * x0 + P[8] * x1 + P[12] * x2 + P[15] * x3 + P[16] * x4 + P[17] * x5;
    y[4] = P[4] * x0 + P[9] * x1 + P[13] * x2 + P[16] * x3 + P[18] * x4 + P[19] * x5;
    y[5] = P[5] * x0 + P[10] * x1 + P[14] * x2 + P[17] * x3 + P[19] * x4 + P[20] * x5;
}

/* Pp += P - g U^T on the packed upper triangle (the Riccati step's P+ = P - U U^T / D added to
 * the parent's, g = U / D), written out. */
static inline void packed_add_update(const double *restrict P, const double *restrict g,
                                     const double *restrict U, double *restrict Pp)
{
    const double g0 = g[0], g1 = g[1], g2 = g[2], g3 = g[3], g4 = g[4], g5 = g[5];
    Pp[0] += P[0] - g0 * U[0]; Pp[1] += P[1] - g0 * U[1]; Pp[2] += P[2] - g0 * U[2]; Pp[3] += P[3] - g0 * U[3]; Pp[4] += P[4] - g0 * U[4]; Pp[5] += P[5] - g0 * U[5];
    Pp[6] += P[6] - g1 * U[1]; Pp[7] += P[7] - g1 * U[2]; Pp[8] += P[8] - g1 * U[3]; Pp[9] += P[9] - g1 * U[4]; Pp[10] += P[10] - g1 * U[5];
    Pp[11] += P[11] - g2 * U[2]; Pp[12] += P[12] - g2 * U[3]; Pp[13] += P[13] - g2 * U[4]; Pp[14] += P[14] - g2 * U[5];
    Pp[15] += P[15] - g3 * U[3]; Pp[16] += P[16] - g3 * U[4]; Pp[17] += P[17] - g3 * U[5];
    Pp[18] += P[18] - g4 * U[4]; Pp[19] += P[19] - g4 * U[5];
    Pp[20] += P[20] - g5 * U[5];
}

/* P (packed) <- the compact inertia Ic's 6x6 [[J, c~], [-c~, m 1]]. */
static inline void inertia_pack(const double *restrict Ic, double *restrict P)
{
    const double mx = Ic[6], my = Ic[7], mz = Ic[8], mass = Ic[9];
    P[0] = Ic[0]; P[1] = Ic[1]; P[2] = Ic[2]; P[3] = 0.0; P[4] = -mz; P[5] = my;
    P[6] = Ic[3]; P[7] = Ic[4]; P[8] = mz; P[9] = 0.0; P[10] = -mx;
    P[11] = Ic[5]; P[12] = -my; P[13] = mx; P[14] = 0.0;
    P[15] = mass; P[16] = 0.0; P[17] = 0.0;
    P[18] = mass; P[19] = 0.0;
    P[20] = mass;
}

/* Packed <-> full 6x6 (row stride 6). */
static inline void packed_to_full(const double *restrict P, double *restrict F)
{
    for (int i = 0, t = 0; i < 6; i++)
        for (int j = i; j < 6; j++, t++) F[6 * i + j] = F[6 * j + i] = P[t];
}
static inline void full_to_packed(const double *restrict F, double *restrict P)
{
    for (int i = 0, t = 0; i < 6; i++)
        for (int j = i; j < 6; j++, t++) P[t] = F[6 * i + j];
}

static inline double dot6(const double *a, const double *b)
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5];
}

#endif
