/* Adaptive explicit Runge-Kutta of order 8, Dormand-Prince 8(5,3) "DOP853" (Hairer, Norsett &
 * Wanner, Solving Ordinary Differential Equations I, 2nd ed.: the method of Sec. II.5 (Dormand &
 * Prince RK8(7)13M), its 5th- and 3rd-order error estimator and the code DOP853 of Sec. II.10;
 * step-size control and starting step of Sec. II.4), step for step as scipy.integrate's DOP853
 * (scipy/integrate/_ivp/rk.py, dop853_coefficients.py, common.py select_initial_step): the same
 * coefficients, error norm, SAFETY / MIN_FACTOR / MAX_FACTOR, rtol floor and minimum step, so that
 * the accepted steps equal solve_ivp(method="DOP853")'s.
 *
 * The state is y = (theta, beta) in R^(nq + nv), integrated as Simulator._step_adaptive did over
 * scipy: the right-hand side projects theta (quaternions scaled to unit) before evaluating
 * theta-dot = f(theta) beta and beta-dot, y itself keeps its unprojected theta, and theta is
 * projected once at the end.  Every buffer is in soa_data (dop_*); the last accepted step stays in
 * d->dop_h as the next call's first step (part of the saved state of an FMU).  Unlike scipy, one
 * call gives up after SOA_DOP853_MAX_STEPS attempted steps (a hostile state would run forever). */
#include <float.h>
#include <math.h>

#include "soa.h"

#define NSTAGES 12
#define SAFETY 0.9
#define MIN_FACTOR 0.2          /* smallest decrease of a step */
#define MAX_FACTOR 10.0         /* largest increase of a step */
#define ERROR_EXPONENT (-1.0 / 8.0)   /* -1 / (error estimator order 7 + 1) */

/* ------------------------------------------------------------------ coefficients (Hairer's code) */
/* c(s): stage times as fractions of h */
static const double C[NSTAGES] = {
    0.0,
    0.526001519587677318785587544488e-01,
    0.789002279381515978178381316732e-01,
    0.118350341907227396726757197510,
    0.281649658092772603273242802490,
    0.333333333333333333333333333333,
    0.25,
    0.307692307692307692307692307692,
    0.651282051282051282051282051282,
    0.6,
    0.857142857142857142857142857142,
    1.0};

/* a(s, j), j < s: stage s is y + h sum_j a(s, j) K(j) */
static const double A[NSTAGES][NSTAGES] = {
    {0.0},
    {[0] = 5.26001519587677318785587544488e-2},
    {[0] = 1.97250569845378994544595329183e-2, [1] = 5.91751709536136983633785987549e-2},
    {[0] = 2.95875854768068491816892993775e-2, [2] = 8.87627564304205475450678981324e-2},
    {[0] = 2.41365134159266685502369798665e-1, [2] = -8.84549479328286085344864962717e-1,
     [3] = 9.24834003261792003115737966543e-1},
    {[0] = 3.7037037037037037037037037037e-2, [3] = 1.70828608729473871279604482173e-1,
     [4] = 1.25467687566822425016691814123e-1},
    {[0] = 3.7109375e-2, [3] = 1.70252211019544039314978060272e-1,
     [4] = 6.02165389804559606850219397283e-2, [5] = -1.7578125e-2},
    {[0] = 3.70920001185047927108779319836e-2, [3] = 1.70383925712239993810214054705e-1,
     [4] = 1.07262030446373284651809199168e-1, [5] = -1.53194377486244017527936158236e-2,
     [6] = 8.27378916381402288758473766002e-3},
    {[0] = 6.24110958716075717114429577812e-1, [3] = -3.36089262944694129406857109825,
     [4] = -8.68219346841726006818189891453e-1, [5] = 2.75920996994467083049415600797e1,
     [6] = 2.01540675504778934086186788979e1, [7] = -4.34898841810699588477366255144e1},
    {[0] = 4.77662536438264365890433908527e-1, [3] = -2.48811461997166764192642586468,
     [4] = -5.90290826836842996371446475743e-1, [5] = 2.12300514481811942347288949897e1,
     [6] = 1.52792336328824235832596922938e1, [7] = -3.32882109689848629194453265587e1,
     [8] = -2.03312017085086261358222928593e-2},
    {[0] = -9.3714243008598732571704021658e-1, [3] = 5.18637242884406370830023853209,
     [4] = 1.09143734899672957818500254654, [5] = -8.14978701074692612513997267357,
     [6] = -1.85200656599969598641566180701e1, [7] = 2.27394870993505042818970056734e1,
     [8] = 2.49360555267965238987089396762, [9] = -3.0467644718982195003823669022},
    {[0] = 2.27331014751653820792359768449, [3] = -1.05344954667372501984066689879e1,
     [4] = -2.00087205822486249909675718444, [5] = -1.79589318631187989172765950534e1,
     [6] = 2.79488845294199600508499808837e1, [7] = -2.85899827713502369474065508674,
     [8] = -8.87285693353062954433549289258, [9] = 1.23605671757943030647266201528e1,
     [10] = 6.43392746015763530355970484046e-1}};

/* b(j): the 8th-order solution y_new = y + h sum_j b(j) K(j) */
#define B0 5.42937341165687622380535766363e-2
#define B5 4.45031289275240888144113950566
#define B6 1.89151789931450038304281599044
#define B7 -5.8012039600105847814672114227
#define B8 3.1116436695781989440891606237e-1
#define B9 -1.52160949662516078556178806805e-1
#define B10 2.01365400804030348374776537501e-1
#define B11 4.47106157277725905176885569043e-2
static const double B[NSTAGES] = {[0] = B0, [5] = B5, [6] = B6, [7] = B7, [8] = B8, [9] = B9,
                                  [10] = B10, [11] = B11};

/* Error weights over K(0..12): the 3rd-order (b minus the 3rd-order weights) and the 5th-order
 * embedded differences. */
static const double E3[NSTAGES + 1] = {
    [0] = B0 - 0.244094488188976377952755905512, [5] = B5, [6] = B6, [7] = B7,
    [8] = B8 - 0.733846688281611857341361741547, [9] = B9, [10] = B10,
    [11] = B11 - 0.220588235294117647058823529412e-1};
static const double E5[NSTAGES + 1] = {
    [0] = 0.1312004499419488073250102996e-1, [5] = -0.1225156446376204440720569753e+1,
    [6] = -0.4957589496572501915214079952, [7] = 0.1664377182454986536961530415e+1,
    [8] = -0.3503288487499736816886487290, [9] = 0.3341791187130174790297318841,
    [10] = 0.8192320648511571246570742613e-1, [11] = -0.2235530786388629525884427845e-1};

/* ------------------------------------------------------------------ the right-hand side */
typedef struct {
    const soa_model *m;
    soa_data *d;
    soa_accel acc;
    int n;
    double nfev;
} problem;

/* ydot <- (f(theta~) beta, beta-dot(theta~, beta, t)), theta~ = theta with unit quaternions.  A
 * non-finite state (or a zero quaternion) gives a NaN rate: the step is rejected and shrunk. */
static soa_status rhs(problem *p, double t, const double *y, double *ydot)
{
    const soa_model *m = p->m;
    soa_data *d = p->d;
    const soa_status ok = {SOA_OK, 0};
    p->nfev += 1.0;
    for (int i = 0; i < m->nq; i++) d->qs[i] = y[i];
    soa_normalize_quaternions(m, d->qs);
    if (soa_first_nonfinite(y, p->n) >= 0 || soa_first_nonfinite(d->qs, m->nq) >= 0) {
        for (int i = 0; i < p->n; i++) ydot[i] = NAN;
        return ok;
    }
    soa_configuration_rate(m, d->qs, y + m->nq, ydot);
    return p->acc.fn(p->acc.ctx, d->qs, y + m->nq, t, ydot + m->nq);
}

/* RMS norm of x / scale (scipy common.norm: np.linalg.norm(x / scale) / n ** 0.5). */
static double rms(const double *x, const double *scale, int n)
{
    double s = 0.0;
    for (int i = 0; i < n; i++) s += (x[i] / scale[i]) * (x[i] / scale[i]);
    return sqrt(s) / pow((double)n, 0.5);
}

/* Starting step (HNW Sec. II.4; scipy select_initial_step): h0 from |y| / |f|, one Euler probe
 * f1 = f(t + h0, y + h0 f) for the second derivative, h1 = (0.01 / max(d1, d2))^(1/8).
 * Uses K(1) and dop_ys as scratch, dop_err row 0 for the scale. */
static soa_status initial_step(problem *p, double t, double t_bound, double rtol, double atol,
                               double max_step, double *h_abs)
{
    soa_data *d = p->d;
    const int n = p->n;
    const double *y = d->dop_y, *f0 = d->dop_K;
    double *scale = d->dop_err, *y1 = d->dop_ys, *f1 = d->dop_K + n;
    const double interval = fabs(t_bound - t);
    for (int i = 0; i < n; i++) scale[i] = atol + fabs(y[i]) * rtol;
    const double d0 = rms(y, scale, n), d1 = rms(f0, scale, n);
    double h0 = (d0 < 1e-5 || d1 < 1e-5) ? 1e-6 : 0.01 * d0 / d1;
    h0 = fmin(h0, interval);
    for (int i = 0; i < n; i++) y1[i] = y[i] + h0 * f0[i];
    const soa_status st = rhs(p, t + h0, y1, f1);
    if (st.kind != SOA_OK) return st;
    for (int i = 0; i < n; i++) f1[i] -= f0[i];
    const double d2 = rms(f1, scale, n) / h0;
    const double h1 = (d1 <= 1e-15 && d2 <= 1e-15) ? fmax(1e-6, h0 * 1e-3)
                                                   : pow(0.01 / fmax(d1, d2), 1.0 / 8.0);
    *h_abs = fmin(fmin(100.0 * h0, h1), fmin(interval, max_step));
    return st;
}

/* One Runge-Kutta step of size h from (t, y) with K(0) = f(t, y) (scipy rk_step): the 11 further
 * stages, y_new, and K(12) = f(t + h, y_new). */
static soa_status rk_step(problem *p, double t, double h)
{
    soa_data *d = p->d;
    const int n = p->n;
    const double *y = d->dop_y;
    double *K = d->dop_K, *ys = d->dop_ys, *ynew = d->dop_ynew;
    for (int s = 1; s < NSTAGES; s++) {
        for (int i = 0; i < n; i++) {
            double dy = 0.0;
            for (int j = 0; j < s; j++) dy += K[j * n + i] * A[s][j];
            ys[i] = y[i] + dy * h;
        }
        const soa_status st = rhs(p, t + C[s] * h, ys, K + s * n);
        if (st.kind != SOA_OK) return st;
    }
    for (int i = 0; i < n; i++) {
        double dy = 0.0;
        for (int j = 0; j < NSTAGES; j++) dy += K[j * n + i] * B[j];
        ynew[i] = y[i] + h * dy;
    }
    return rhs(p, t + h, ynew, K + NSTAGES * n);
}

/* The DOP853 error norm (scipy DOP853._estimate_error_norm): with e5, e3 the scaled 5th- and
 * 3rd-order estimates, |h| |e5|^2 / sqrt((|e5|^2 + 0.01 |e3|^2) n).  *worst <- the component of
 * the largest (or a non-finite) scaled 5th-order error. */
static double error_norm(problem *p, double h, double rtol, double atol, int *worst)
{
    soa_data *d = p->d;
    const int n = p->n;
    const double *K = d->dop_K, *y = d->dop_y, *ynew = d->dop_ynew;
    double *e5 = d->dop_err, *e3 = d->dop_err + n, s5 = 0.0, s3 = 0.0, big = -1.0;
    for (int i = 0; i < n; i++) {
        const double scale = atol + fmax(fabs(y[i]), fabs(ynew[i])) * rtol;
        double a5 = 0.0, a3 = 0.0;
        for (int j = 0; j <= NSTAGES; j++) {
            a5 += K[j * n + i] * E5[j];
            a3 += K[j * n + i] * E3[j];
        }
        e5[i] = a5 / scale;
        e3[i] = a3 / scale;
        s5 += e5[i] * e5[i];
        s3 += e3[i] * e3[i];
        const double mag = isfinite(e5[i]) ? fabs(e5[i]) : HUGE_VAL;
        if (mag > big) {
            big = mag;
            *worst = i;
        }
    }
    const double n5 = sqrt(s5), n3 = sqrt(s3);   /* as np.linalg.norm(...)**2 */
    const double e5sq = n5 * n5, e3sq = n3 * n3;
    if (e5sq == 0.0 && e3sq == 0.0) return 0.0;
    return fabs(h) * e5sq / sqrt((e5sq + 0.01 * e3sq) * n);
}

/* ------------------------------------------------------------------ the integrator */
static soa_status check_arguments(const soa_model *m, const soa_data *d, const double *q,
                                  const double *qd, double t, double h, double rtol, double atol,
                                  double max_step)
{
    soa_status st = soa_check_state(m, q, qd);
    if (st.kind != SOA_OK) return st;
    if (!(isfinite(t) && h > 0.0 && h < 1e300 && isfinite(t + h) && d->dop_h[0] >= 0.0
          && d->dop_h[0] < 1e300)) {
        st.kind = SOA_BAD_ARG;
        st.index = 0;
    } else if (!(rtol >= 0.0 && rtol < 1e300 && atol >= 0.0 && atol < 1e300 && max_step > 0.0)) {
        st.kind = SOA_BAD_ARG;
        st.index = 1;
    }
    return st;
}

/* DOP853 from t to t + h (scipy's solve_ivp loop over DOP853._step_impl), (q, qd) in place;
 * qdd <- beta-dot at t + h.  The first step is min(d->dop_h, h) when d->dop_h > 0, else chosen by
 * initial_step; on success d->dop_h <- the last accepted step (unchanged on failure) and
 * d->dop_stats <- (nfev, accepted, rejected). */
soa_status soa_dop853_with(const soa_model *m, soa_data *d, soa_accel acc, double *q, double *qd,
                           double t, double h, double rtol, double atol, double max_step,
                           double *qdd)
{
    soa_status st = check_arguments(m, d, q, qd, t, h, rtol, atol, max_step);
    if (st.kind != SOA_OK) return st;
    const int nq = m->nq, nv = m->nv, n = nq + nv;
    problem p = {m, d, acc, n, 0.0};
    double *y = d->dop_y, *K = d->dop_K, accepted = 0.0, rejected = 0.0, last = d->dop_h[0];
    const double t_bound = t + h;
    if (rtol < 100.0 * DBL_EPSILON) rtol = 100.0 * DBL_EPSILON;    /* scipy validate_tol */
    for (int i = 0; i < nq; i++) y[i] = q[i];
    for (int i = 0; i < nv; i++) y[nq + i] = qd[i];
    if (n > 0 && t_bound != t) {
        st = rhs(&p, t, y, K);
        if (st.kind != SOA_OK) return st;
        double h_abs = d->dop_h[0];
        if (h_abs > 0.0) h_abs = fmin(h_abs, t_bound - t);
        else if ((st = initial_step(&p, t, t_bound, rtol, atol, max_step, &h_abs)).kind != SOA_OK)
            return st;
        while (t < t_bound) {
            const double min_step = 10.0 * fabs(nextafter(t, HUGE_VAL) - t);
            if (h_abs > max_step) h_abs = max_step;
            else if (h_abs < min_step) h_abs = min_step;
            int step_rejected = 0, worst = 0;
            double t_new, step;
            for (;;) {
                if (h_abs < min_step) {
                    st.kind = SOA_STEP_TOO_SMALL;
                    st.index = worst;
                    return st;
                }
                if (accepted + rejected >= SOA_DOP853_MAX_STEPS) {   /* not in scipy: a bound */
                    st.kind = SOA_TOO_MANY_STEPS;
                    st.index = SOA_DOP853_MAX_STEPS;
                    return st;
                }
                t_new = t + h_abs;
                if (t_new > t_bound) t_new = t_bound;
                step = t_new - t;
                h_abs = fabs(step);
                if ((st = rk_step(&p, t, step)).kind != SOA_OK) return st;
                const double err = error_norm(&p, step, rtol, atol, &worst);
                if (err < 1.0) {
                    double factor = err == 0.0 ? MAX_FACTOR
                                               : fmin(MAX_FACTOR, SAFETY * pow(err, ERROR_EXPONENT));
                    if (step_rejected) factor = fmin(1.0, factor);
                    h_abs *= factor;
                    break;
                }
                h_abs *= fmax(MIN_FACTOR, SAFETY * pow(err, ERROR_EXPONENT));
                step_rejected = 1;
                rejected += 1.0;
            }
            accepted += 1.0;
            last = step;
            t = t_new;
            for (int i = 0; i < n; i++) {
                y[i] = d->dop_ynew[i];
                K[i] = K[NSTAGES * n + i];     /* FSAL: f(t_new, y_new) starts the next step */
            }
        }
    }
    d->dop_stats[0] = p.nfev;
    d->dop_stats[1] = accepted;
    d->dop_stats[2] = rejected;
    for (int i = 0; i < nq; i++) q[i] = y[i];
    for (int i = 0; i < nv; i++) qd[i] = y[nq + i];
    soa_normalize_quaternions(m, q);
    const int iq = soa_first_nonfinite(q, nq), iv = soa_first_nonfinite(qd, nv);
    if (iq >= 0 || iv >= 0) {
        st.kind = SOA_DIVERGED;
        return soa_diverged(m, d, q, qd, st);
    }
    d->dop_h[0] = last;
    if (accepted > 0.0) {       /* K(0) = f(t + h, y) after the last step: its beta-dot is qdd */
        for (int i = 0; i < nv; i++) qdd[i] = K[nq + i];
        return st;
    }
    return acc.fn(acc.ctx, q, qd, t_bound, qdd);
}

/* DOP853 with the tree's acceleration (held tau, f_ext). */
soa_status soa_dop853(const soa_model *m, soa_data *d, double *q, double *qd, const double *tau,
                      int use_fext, double t, double h, double rtol, double atol, double max_step,
                      double *qdd)
{
    const soa_status st = soa_check_inputs(m, q, qd, tau);
    if (st.kind != SOA_OK) return st;
    soa_tree_inputs in = {m, d, tau, use_fext, NULL, NULL};
    const soa_accel acc = {soa_tree_accel, &in};
    return soa_dop853_with(m, d, acc, q, qd, t, h, rtol, atol, max_step, qdd);
}
