/* gp_fit.c: GP hyperparameters by maximum a posteriori on the log marginal
 * likelihood (docs/ALGORITHMS.md section 7) with weak normal priors on the log
 * parameters, optimised by GSL's vector_bfgs2 with the analytic gradient
 *   d LML / d theta_p = 1/2 tr((alpha alpha^T - (K + sn2 I)^-1) dK/dtheta_p),
 * warm-started from the model's current theta, then restarted from draws
 * of the priors.
 *
 * Invariants: the model changes only at the end, to the best theta any
 * evaluation reached (so a restart that GSL abandons still counts what it
 * found); the noise is optimised as u = log(sn2 - floor), so sn2 > floor
 * everywhere; every log parameter lives in a box ([-BOX, BOX], the noise
 * [-BOX_NOISE, BOX]): outside it the objective is that of the nearest point
 * of the box minus a steep quadratic, which keeps every evaluation finite
 * and the optimiser inside.
 * Cost: the objective uses at most max_points (default 128) of the model's
 * points, n below; one evaluation costs O(n^2 d) kernel evaluations and a
 * Cholesky (n^3/3, GSL), its gradient another O(n^2 d) kernel gradients and
 * an inverse from the factor (n^3/3 multiply-adds, written out so that the
 * compiler vectorises it: GSL's reference BLAS made it 4 times slower).
 * GSL asks for the value and the gradient separately at one point, so the
 * factorisation of the last point is reused. A fit costs
 * (1 + restarts) x iterations (at most max_iter) x a few evaluations:
 * about 0.4 s at n = 128, d = 8 on the reference machine. Deterministic
 * given the model and the rng. */
#include "gp_internal.h"

#include <gsl/gsl_errno.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_multimin.h>
#include <gsl/gsl_vector.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LOG_2PI 1.83787706640934548356
#define BOX 12.0          /* |log parameter| <= BOX (e^12 ~ 1.6e5) */
#define BOX_NOISE 36.0    /* log sn2 >= -BOX_NOISE: the noise floor is the real bound */
#define BOX_PENALTY 100.0 /* curvature of the penalty outside the box */

void bd_gp_fit_options_default(bd_gp_fit_options *o)
{
    o->restarts = 3;
    o->max_iter = 100;
    o->grad_tol = 1e-3;
    o->noise_floor = 1e-6;
    o->max_points = 128;
    o->priors = NULL;
}

void bd_gp_fit_default_priors(const bd_gp *gp, bd_gp_prior *out)
{
    size_t np = gp->np;
    if (bd_kernel_kind(gp->kern) == BD_KERNEL_MATERN52) {
        for (size_t j = 0; j < gp->d; j++)
            out[j] = (bd_gp_prior){log(0.5), 1.5, 0};
        out[gp->d] = (bd_gp_prior){0.0, 1.5, 0};
        out[np - 1] = (bd_gp_prior){log(1e-2), 3.0, 0};
    } else {
        out[0] = (bd_gp_prior){0.0, 1.5, 0};
        out[1] = (bd_gp_prior){0.0, 1.5, 0};
        out[2] = (bd_gp_prior){0.0, 0.0, 1};
        out[3] = (bd_gp_prior){log(1e-3), 0.0, 1};
    }
}

/* ---- the objective ---- */

typedef struct fit_ws {
    const bd_gp *gp;
    const bd_gp_prior *priors;
    bd_kernel *kern;    /* scratch copy of the model's kernel */
    size_t n;           /* points the objective uses */
    size_t *rows;       /* their positions in the model, n entries */
    double *A;          /* n x n: K + sn2 I, then its Cholesky factor L */
    double *Linv;       /* n x n: L^-1 (gradient only) */
    double *Kinv;       /* n x n: (K + sn2 I)^-1, lower triangle (gradient only) */
    double *alpha;      /* n */
    double *g;          /* kernel gradient, np - 1 */
    double *theta;      /* np: the clamped theta being evaluated */
    double *fact_theta; /* np: the theta A and alpha were computed for */
    int factored;       /* A, alpha, lml hold the factorisation at fact_theta */
    double lml, sn2;    /* of that factorisation */
} fit_ws;

/* Uses at most max_points of the model's points (0: all), evenly spaced
 * over the order the model holds them in. */
static void ws_init(fit_ws *w, const bd_gp *gp, const bd_gp_prior *priors, size_t max_points)
{
    size_t n = max_points && gp->m > max_points ? max_points : gp->m, nn = n ? n * n : 1;
    w->gp = gp;
    w->priors = priors;
    w->kern = bd_kernel_copy(gp->kern);
    w->n = n;
    w->rows = bd_xmalloc((n ? n : 1) * sizeof *w->rows);
    for (size_t i = 0; i < n; i++)
        w->rows[i] = n == gp->m ? i : i * gp->m / n;
    w->A = bd_xmalloc(nn * sizeof *w->A);
    w->Linv = bd_xmalloc(nn * sizeof *w->Linv);
    w->Kinv = bd_xmalloc(nn * sizeof *w->Kinv);
    w->alpha = bd_xmalloc((n ? n : 1) * sizeof *w->alpha);
    w->g = bd_xmalloc(gp->np * sizeof *w->g);
    w->theta = bd_xmalloc(gp->np * sizeof *w->theta);
    w->fact_theta = bd_xmalloc(gp->np * sizeof *w->fact_theta);
    w->factored = 0;
}

static void ws_free(fit_ws *w)
{
    bd_kernel_free(w->kern);
    free(w->rows);
    free(w->A);
    free(w->Linv);
    free(w->Kinv);
    free(w->alpha);
    free(w->g);
    free(w->theta);
    free(w->fact_theta);
}

static const double *row_x(const fit_ws *w, size_t i)
{
    return w->gp->X + w->rows[i] * w->gp->d;
}

static void fill_k(void *ctx, double *A, size_t lda, double extra)
{
    const fit_ws *w = ctx;
    for (size_t i = 0; i < w->n; i++) {
        const double *xi = row_x(w, i);
        for (size_t j = 0; j < i; j++)
            A[i * lda + j] = bd_kernel_eval(w->kern, xi, row_x(w, j));
        A[i * lda + i] = bd_kernel_diag(w->kern, xi) + w->sn2 + extra;
    }
}

/* Lower box of log parameter p: the noise may go as low as its floor lets it. */
static double box_lo(const fit_ws *w, size_t p)
{
    return p == w->gp->np - 1 ? -BOX_NOISE : -BOX;
}

/* Factors K + sn2 I at w->theta (kernel already set) and computes the log
 * marginal likelihood: O(n^2 d + n^3 / 3). */
static int factor(fit_ws *w, bd_err *err)
{
    size_t n = w->n, np = w->gp->np;
    double jitter;
    int rc, status;
    w->factored = 0;
    w->sn2 = exp(w->theta[np - 1]);
    if ((rc = bd_gp_cholesky_retry(w->A, n, n, fill_k, w, &jitter, err)))
        return rc;
    w->lml = 0;
    if (n > 0) {
        gsl_matrix_view L = gsl_matrix_view_array(w->A, n, n);
        gsl_vector_view a = gsl_vector_view_array(w->alpha, n);
        for (size_t i = 0; i < n; i++)
            w->alpha[i] = w->gp->ys[w->rows[i]];
        status = gsl_linalg_cholesky_svx(&L.matrix, &a.vector);
        if (status != GSL_SUCCESS)
            return bd_err_set(err, BD_EINTERNAL, NULL, "Cholesky solve failed: %s", gsl_strerror(status));
        for (size_t i = 0; i < n; i++)
            w->lml += -0.5 * w->gp->ys[w->rows[i]] * w->alpha[i] - log(w->A[i * n + i]);
        w->lml -= 0.5 * (double)n * LOG_2PI;
    }
    memcpy(w->fact_theta, w->theta, np * sizeof *w->theta);
    w->factored = 1;
    return 0;
}

/* Kinv (lower triangle) = L^-T L^-1 from the factor in A, by row-wise axpys
 * that the compiler vectorises: n^3 / 3 multiply-adds. */
static void inverse(fit_ws *w)
{
    size_t n = w->n;
    const double *L = w->A;
    double *Li = w->Linv, *Ki = w->Kinv;
    for (size_t i = 0; i < n; i++) { /* L Li = I, row by row */
        double *ri = Li + i * n, inv = 1.0 / L[i * n + i];
        memset(ri, 0, n * sizeof *ri);
        for (size_t k = 0; k < i; k++) {
            const double *rk = Li + k * n;
            double a = L[i * n + k];
            for (size_t j = 0; j <= k; j++)
                ri[j] += a * rk[j];
        }
        for (size_t j = 0; j < i; j++)
            ri[j] *= -inv;
        ri[i] = inv;
    }
    memset(Ki, 0, n * n * sizeof *Ki);
    for (size_t k = 0; k < n; k++) { /* Ki[i][j] = sum_k Li[k][i] Li[k][j], j <= i <= k */
        const double *rk = Li + k * n;
        for (size_t i = 0; i <= k; i++) {
            double *ri = Ki + i * n, a = rk[i];
            for (size_t j = 0; j <= i; j++)
                ri[j] += a * rk[j];
        }
    }
}

/* Log marginal likelihood plus log priors at theta_in and, when grad is not
 * NULL, its gradient (fixed entries get 0). A value computed at the same
 * theta as the last one reuses its factorisation (GSL asks for f and df
 * separately at the same point). */
static int evaluate(fit_ws *w, const double *theta_in, double *value, double *grad, bd_err *err)
{
    const bd_gp *gp = w->gp;
    size_t n = w->n, np = gp->np, nk = np - 1;
    double penalty = 0;
    int rc;

    for (size_t p = 0; p < np; p++) {
        double t = theta_in[p], lo = box_lo(w, p);
        if (!isfinite(t))
            return bd_err_set(err, BD_EINVAL, NULL, "parameter %zu is not finite", p);
        w->theta[p] = t > BOX ? BOX : t < lo ? lo : t;
        penalty += 0.5 * BOX_PENALTY * (t - w->theta[p]) * (t - w->theta[p]);
    }
    if (!w->factored || memcmp(w->fact_theta, w->theta, np * sizeof *w->theta) != 0) {
        if ((rc = bd_kernel_set_theta(w->kern, w->theta, err)) || (rc = factor(w, err)))
            return rc;
    }
    *value = w->lml - penalty;
    for (size_t p = 0; p < np; p++) {
        const bd_gp_prior *pr = &w->priors[p];
        if (!pr->fixed && pr->sd > 0)
            *value -= 0.5 * (w->theta[p] - pr->mean) * (w->theta[p] - pr->mean) / (pr->sd * pr->sd);
    }
    if (!grad)
        return 0;

    for (size_t p = 0; p < np; p++)
        grad[p] = 0;
    if (n > 0) {
        inverse(w);
        /* 1/2 tr(W dK) = sum_{i>j} W_ij dK_ij + 1/2 sum_i W_ii dK_ii, W = alpha alpha^T - K^-1 */
        for (size_t i = 0; i < n; i++) {
            const double *xi = row_x(w, i);
            for (size_t j = 0; j <= i; j++) {
                double wij = w->alpha[i] * w->alpha[j] - w->Kinv[i * n + j];
                if (j == i) {
                    wij *= 0.5;
                    grad[nk] += wij * w->sn2;
                }
                bd_kernel_grad(w->kern, xi, row_x(w, j), w->g);
                for (size_t p = 0; p < nk; p++)
                    grad[p] += wij * w->g[p];
            }
        }
    }
    for (size_t p = 0; p < np; p++) {
        const bd_gp_prior *pr = &w->priors[p];
        if (theta_in[p] != w->theta[p]) /* outside the box: only the penalty moves */
            grad[p] = 0;
        grad[p] -= BOX_PENALTY * (theta_in[p] - w->theta[p]);
        if (!pr->fixed && pr->sd > 0)
            grad[p] -= (w->theta[p] - pr->mean) / (pr->sd * pr->sd);
        if (pr->fixed)
            grad[p] = 0;
    }
    return 0;
}

int bd_gp_fit_objective(const bd_gp *gp, const double *theta, const bd_gp_prior *priors, double *value, double *grad,
                        bd_err *err)
{
    bd_gp_prior *def = NULL;
    fit_ws w;
    int rc;
    if (!priors) {
        def = bd_xmalloc(gp->np * sizeof *def);
        bd_gp_fit_default_priors(gp, def);
        priors = def;
    }
    ws_init(&w, gp, priors, 0);
    rc = evaluate(&w, theta, value, grad, err);
    ws_free(&w);
    free(def);
    return rc;
}

/* ---- the optimiser ---- */

/* The optimiser's variables u are the free entries of theta; for the noise,
 * u = log(sn2 - floor). */
typedef struct fit_run {
    fit_ws ws;
    size_t *free_idx; /* nfree indices into theta */
    size_t nfree;
    double floor;
    double *base;       /* np: theta with the fixed entries */
    double *theta;      /* np: scratch */
    double *grad;       /* np: scratch */
    double best;        /* best objective seen */
    double *best_theta; /* np */
    int seen;           /* has any evaluation succeeded */
} fit_run;

static void u_to_theta(const fit_run *r, const gsl_vector *u, double *theta, double *dtheta_du)
{
    size_t nk = r->ws.gp->np - 1;
    memcpy(theta, r->base, r->ws.gp->np * sizeof *theta);
    for (size_t k = 0; k < r->nfree; k++) {
        size_t p = r->free_idx[k];
        double v = gsl_vector_get(u, k);
        if (p == nk && r->floor > 0) {
            double e = exp(v < 700 ? v : 700);
            theta[p] = log(r->floor + e);
            if (dtheta_du)
                dtheta_du[k] = e / (r->floor + e);
        } else {
            theta[p] = v;
            if (dtheta_du)
                dtheta_du[k] = 1;
        }
    }
}

static double theta_to_u(const fit_run *r, size_t p, double t)
{
    if (p == r->ws.gp->np - 1 && r->floor > 0) {
        double sn2 = exp(t);
        return log(sn2 > 2 * r->floor ? sn2 - r->floor : r->floor);
    }
    return t;
}

/* Minimised by GSL: minus the objective. A failed evaluation answers +inf. */
static void run_fdf(const gsl_vector *u, void *params, double *f, gsl_vector *df)
{
    fit_run *r = params;
    size_t np = r->ws.gp->np;
    double value, *dtdu = bd_xmalloc((r->nfree ? r->nfree : 1) * sizeof *dtdu);
    u_to_theta(r, u, r->theta, dtdu);
    if (evaluate(&r->ws, r->theta, &value, df ? r->grad : NULL, NULL) || !isfinite(value)) {
        *f = GSL_POSINF;
        if (df)
            gsl_vector_set_zero(df);
        free(dtdu);
        return;
    }
    *f = -value;
    if (!r->seen || value > r->best) {
        r->best = value;
        memcpy(r->best_theta, r->ws.theta, np * sizeof *r->best_theta); /* clamped into the box */
        r->seen = 1;
    }
    if (df)
        for (size_t k = 0; k < r->nfree; k++)
            gsl_vector_set(df, k, -r->grad[r->free_idx[k]] * dtdu[k]);
    free(dtdu);
}

static double run_f(const gsl_vector *u, void *params)
{
    double f;
    run_fdf(u, params, &f, NULL);
    return f;
}

static void run_df(const gsl_vector *u, void *params, gsl_vector *df)
{
    double f;
    run_fdf(u, params, &f, df);
}

/* One BFGS2 optimisation from u0. GSL failures end it early; what it found
 * is already recorded in r->best. Returns BD_EINTERNAL only when GSL cannot
 * allocate. */
static int optimise(fit_run *r, const gsl_vector *u0, const bd_gp_fit_options *o, bd_err *err)
{
    gsl_multimin_function_fdf fdf = {run_f, run_df, run_fdf, r->nfree, r};
    gsl_multimin_fdfminimizer *s = gsl_multimin_fdfminimizer_alloc(gsl_multimin_fdfminimizer_vector_bfgs2, r->nfree);
    int status;
    if (!s)
        return bd_err_set(err, BD_EINTERNAL, NULL, "cannot allocate the BFGS2 minimiser");
    status = gsl_multimin_fdfminimizer_set(s, &fdf, u0, 0.1, 0.1);
    for (size_t it = 0; status == GSL_SUCCESS && it < o->max_iter; it++) {
        status = gsl_multimin_fdfminimizer_iterate(s);
        if (status != GSL_SUCCESS) /* GSL_ENOPROG: converged as far as it can; others: give up this run */
            break;
        status = gsl_multimin_test_gradient(gsl_multimin_fdfminimizer_gradient(s),
                                            o->grad_tol * (1 + fabs(gsl_multimin_fdfminimizer_minimum(s))));
        if (status != GSL_CONTINUE)
            break;
        status = GSL_SUCCESS;
    }
    gsl_multimin_fdfminimizer_free(s);
    return 0;
}

int bd_gp_fit(bd_gp *gp, const bd_gp_fit_options *opt, bd_rng *rng, double *best, bd_err *err)
{
    bd_gp_fit_options def_opt;
    bd_gp_prior *def_pr = NULL;
    const bd_gp_prior *priors;
    size_t np = gp->np, nk = np - 1;
    gsl_vector *u0 = NULL;
    fit_run r;
    int rc = 0;

    if (!opt) {
        bd_gp_fit_options_default(&def_opt);
        opt = &def_opt;
    }
    if (!(opt->noise_floor >= 0) || !isfinite(opt->noise_floor))
        return bd_err_set(err, BD_EINVAL, NULL, "noise floor must be >= 0");
    priors = opt->priors;
    if (!priors) {
        def_pr = bd_xmalloc(np * sizeof *def_pr);
        bd_gp_fit_default_priors(gp, def_pr);
        priors = def_pr;
    }
    memset(&r, 0, sizeof r);
    ws_init(&r.ws, gp, priors, opt->max_points);
    r.free_idx = bd_xmalloc(np * sizeof *r.free_idx);
    r.floor = priors[nk].fixed ? 0 : opt->noise_floor;
    r.base = bd_xmalloc(np * sizeof *r.base);
    r.theta = bd_xmalloc(np * sizeof *r.theta);
    r.grad = bd_xmalloc(np * sizeof *r.grad);
    r.best_theta = bd_xmalloc(np * sizeof *r.best_theta);
    memcpy(r.base, gp->theta, np * sizeof *r.base);
    for (size_t p = 0; p < np; p++)
        if (!priors[p].fixed)
            r.free_idx[r.nfree++] = p;

    if (r.nfree == 0) { /* nothing to optimise: one evaluation */
        double v = 0;
        rc = evaluate(&r.ws, r.base, &v, NULL, err);
        if (!rc && best)
            *best = v;
        goto out;
    }
    u0 = gsl_vector_alloc(r.nfree);
    if (!u0) {
        rc = bd_err_set(err, BD_EINTERNAL, NULL, "cannot allocate a GSL vector");
        goto out;
    }
    for (size_t start = 0; start <= opt->restarts; start++) {
        for (size_t k = 0; k < r.nfree; k++) {
            size_t p = r.free_idx[k];
            double t = gp->theta[p]; /* start 0: the warm start */
            if (start > 0) {
                double z = bd_rng_normal(rng);
                t = priors[p].sd > 0 ? priors[p].mean + priors[p].sd * z : t + z;
                t = t > BOX ? BOX : t < box_lo(&r.ws, p) ? box_lo(&r.ws, p) : t;
            }
            if (p == nk && r.floor > 0 && exp(t) < 2 * r.floor)
                t = log(2 * r.floor);
            gsl_vector_set(u0, k, theta_to_u(&r, p, t));
        }
        if ((rc = optimise(&r, u0, opt, err)))
            goto out;
    }
    if (!r.seen) {
        rc = bd_err_set(err, BD_EINTERNAL, NULL, "every hyperparameter optimisation failed numerically");
        goto out;
    }
    if ((rc = bd_gp_set_theta(gp, r.best_theta, err)))
        goto out;
    if (best)
        *best = r.best;
out:
    gsl_vector_free(u0);
    ws_free(&r.ws);
    free(r.free_idx);
    free(r.base);
    free(r.theta);
    free(r.grad);
    free(r.best_theta);
    free(def_pr);
    return rc;
}
