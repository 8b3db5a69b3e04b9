/* parego.c: ParEGO's random scalarizations and the probability of
 * feasibility (contract in parego.h).
 *
 * Invariants: the GPs are built afresh for each proposal (the scalarized
 * values change with w), from the prior mean of the hyperparameters, so a
 * proposal depends on its inputs and the rng alone. */
#include "parego.h"

#include <gsl/gsl_sf_erf.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gp.h"
#include "kernel.h"

void bd_parego_weights(size_t m, bd_rng *rng, double *w)
{
    if (m == 1) {
        w[0] = 1.0;
        return;
    }
    double sum = 0;
    for (size_t k = 0; k < m; k++) {
        w[k] = -log1p(-bd_rng_uniform(rng)); /* U in [0, 1): finite */
        sum += w[k];
    }
    if (!(sum > 0)) { /* every draw exactly 0: the centre */
        for (size_t k = 0; k < m; k++)
            w[k] = 1.0 / (double)m;
        return;
    }
    for (size_t k = 0; k < m; k++)
        w[k] /= sum;
}

void bd_parego_normalize(size_t n, size_t m, const double *losses, double *out)
{
    for (size_t k = 0; k < m; k++) {
        double lo = INFINITY, hi = -INFINITY;
        for (size_t i = 0; i < n; i++) {
            double v = losses[i * m + k];
            if (isfinite(v)) {
                lo = v < lo ? v : lo;
                hi = v > hi ? v : hi;
            }
        }
        for (size_t i = 0; i < n; i++) {
            double v = losses[i * m + k];
            if (!isfinite(v))
                out[i * m + k] = 1.0;
            else
                /* halved: hi - lo of finite losses may overflow to inf (and the
                 * ratio to NaN); exact for the rest (a power of two) */
                out[i * m + k] = hi > lo ? (0.5 * v - 0.5 * lo) / (0.5 * hi - 0.5 * lo) : 0.0;
        }
    }
}

double bd_parego_chebyshev(size_t m, const double *w, const double *f, double rho)
{
    double mx = -INFINITY, sum = 0;
    for (size_t k = 0; k < m; k++) {
        double t = w[k] * f[k];
        mx = t > mx ? t : mx;
        sum += t;
    }
    return mx + rho * sum;
}

void bd_parego_scalarize(size_t n, size_t m, const double *losses, const double *w, double *y)
{
    double *f = bd_xmalloc((n ? n : 1) * m * sizeof *f);
    bd_parego_normalize(n, m, losses, f);
    for (size_t i = 0; i < n; i++)
        y[i] = bd_parego_chebyshev(m, w, f + i * m, BD_PAREGO_RHO);
    free(f);
}

double bd_parego_log_pof(double mu, double sd)
{
    if (!(sd > 0))
        return mu <= 0 ? 0.0 : -INFINITY;
    /* Phi(z) = erfc(-z / sqrt 2) / 2 with z = -mu / sd */
    return gsl_sf_log_erfc(mu / (sd * M_SQRT2)) - M_LN2;
}

/* ------------------------------------------------------------- the models */

/* The violations the feasibility GP is fitted to are clamped here: it
 * standardizes by their squares, which must stay finite. No real
 * violation comes near it. */
#define VIOLATION_CAP 1e150

/* A GP over the selected subset (at most BD_GP_TRAIN_CAP of the n values,
 * the smallest first, bd_gp_select) with its hyperparameters fitted from
 * the prior mean. *out new. */
static int fitted_gp(const bd_parego_input *in, const double *vals, bd_rng *rng, bd_gp **out, bd_err *err)
{
    size_t n = in->n, d = in->d;
    size_t *idx = bd_xmalloc(n * sizeof *idx);
    size_t sel = bd_gp_select(n, vals, BD_GP_TRAIN_CAP, BD_GP_TRAIN_BEST, idx);
    double *Xs = bd_xmalloc((sel ? sel : 1) * d * sizeof *Xs), *ys = bd_xmalloc((sel ? sel : 1) * sizeof *ys);
    bd_kernel *k = NULL;
    bd_gp *gp = NULL;
    bd_gp_prior *priors = NULL;
    double *theta = NULL;
    int rc;
    *out = NULL;
    for (size_t i = 0; i < sel; i++) {
        memcpy(Xs + i * d, in->X + idx[i] * d, d * sizeof *Xs);
        ys[i] = vals[idx[i]];
    }
    if ((rc = bd_kernel_new(BD_KERNEL_MATERN52, d, in->n_choices, &k, err)) ||
        (rc = bd_gp_new(k, 1e-2, BD_GP_STD_SCALE, &gp, err)))
        goto out;
    size_t np = bd_gp_n_params(gp);
    priors = bd_xmalloc(np * sizeof *priors);
    theta = bd_xmalloc(np * sizeof *theta);
    bd_gp_fit_default_priors(gp, priors);
    for (size_t i = 0; i < np; i++)
        theta[i] = priors[i].mean;
    bd_gp_fit_options fo;
    bd_gp_fit_options_default(&fo);
    fo.restarts = 1; /* a fit per proposal (w changes the data): the warm start from the prior mean and one draw */
    if ((rc = bd_gp_set_theta(gp, theta, err)) || (rc = bd_gp_set_data(gp, sel, Xs, ys, idx, err)) ||
        (rc = bd_gp_fit(gp, &fo, rng, NULL, err)))
        goto out;
    *out = gp;
    gp = NULL;
out:
    bd_gp_free(gp);
    bd_kernel_free(k);
    free(priors);
    free(theta);
    free(idx);
    free(Xs);
    free(ys);
    return rc;
}

/* gp with the running trials added (GP-BUCB): only their coordinates count
 * for the variance, which is then in gp's standardised units. New, or NULL
 * when nothing runs. */
static int hallucinate(const bd_gp *gp, size_t d, size_t n_run, const double *const *run_x, bd_gp **out, bd_err *err)
{
    *out = NULL;
    if (!n_run)
        return 0;
    size_t held = bd_gp_size(gp), total = held + n_run;
    double *X = bd_xmalloc(total * d * sizeof *X), *y = bd_xmalloc(total * sizeof *y);
    for (size_t i = 0; i < held; i++) {
        memcpy(X + i * d, bd_gp_x(gp, i), d * sizeof *X);
        y[i] = bd_gp_y(gp, i);
    }
    for (size_t i = 0; i < n_run; i++) {
        memcpy(X + (held + i) * d, run_x[i], d * sizeof *X);
        y[held + i] = 0;
    }
    bd_gp *h = NULL;
    int rc = bd_gp_new(bd_gp_kernel(gp), 1e-2, BD_GP_STD_NONE, &h, err);
    if (!rc)
        rc = bd_gp_set_theta(h, bd_gp_theta(gp), err);
    if (!rc)
        rc = bd_gp_set_data(h, total, X, y, NULL, err);
    free(X);
    free(y);
    if (rc) {
        bd_gp_free(h);
        return rc;
    }
    *out = h;
    return 0;
}

/* ------------------------------------------------------------- the acquisition */

typedef struct score_ctx {
    const bd_parego_input *in;
    const bd_gp *gp;    /* the scalarized objective */
    const bd_gp *var;   /* gp with the running trials (or gp) */
    double var_scale;   /* var's variance -> the caller's units */
    const bd_gp *con;   /* the violation, or NULL */
    double best;        /* the best feasible scalarized value, +INFINITY: none */
    double *mu, *s2, *cm, *cs2;
    size_t scratch;
} score_ctx;

static int score(void *vctx, size_t n, const double *U, double *out)
{
    score_ctx *c = vctx;
    bd_err err;
    if (n > c->scratch) {
        c->mu = bd_xrealloc(c->mu, n * sizeof *c->mu);
        c->s2 = bd_xrealloc(c->s2, n * sizeof *c->s2);
        c->cm = bd_xrealloc(c->cm, n * sizeof *c->cm);
        c->cs2 = bd_xrealloc(c->cs2, n * sizeof *c->cs2);
        c->scratch = n;
    }
    int feasible_seen = isfinite(c->best);
    int rc = 0;
    if (feasible_seen || !c->con) {
        rc = bd_gp_predict(c->gp, n, U, c->mu, NULL, 0, &err);
        if (!rc)
            rc = bd_gp_predict(c->var, n, U, c->s2, c->s2, 0, &err);
    }
    if (!rc && c->con)
        rc = bd_gp_predict(c->con, n, U, c->cm, c->cs2, 0, &err);
    for (size_t i = 0; !rc && i < n; i++) {
        double lp = c->con ? bd_parego_log_pof(c->cm[i], sqrt(c->cs2[i])) : 0.0;
        if (c->con && !feasible_seen) {
            out[i] = lp; /* nothing feasible yet: find the feasible region */
            continue;
        }
        double sd = sqrt(c->s2[i] * c->var_scale);
        if (c->in->acquisition == BD_PAREGO_UCB)
            out[i] = -c->mu[i] + c->in->ucb_multiplier * sd;
        else
            out[i] = bd_acq_log_ei(c->best, c->mu[i], sd) + lp;
        if (isnan(out[i]))
            out[i] = -INFINITY;
    }
    return rc;
}

int bd_parego_propose(const bd_parego_input *in, const bd_acq_problem *prob, bd_rng *rng, double *u,
                      bd_parego_trace *trace, bd_err *err)
{
    size_t n = in->n, m = in->m, d = in->d;
    double w[BD_ACQ_MAX_DIM];
    bd_gp *gp = NULL, *h = NULL, *con = NULL;
    double *y = bd_xmalloc(n * sizeof *y), *v = NULL, *starts = NULL;
    score_ctx c = {.in = in, .best = INFINITY};
    size_t feasible = 0, n_con = 0;
    int rc = 0;
    if (m > BD_ACQ_MAX_DIM) {
        rc = bd_err_set(err, BD_EINVAL, NULL, "parego: %zu objectives", m);
        goto out;
    }
    bd_parego_weights(m, rng, w);
    bd_parego_scalarize(n, m, in->losses, w, y);
    if (in->violation) {
        double worst = 0;
        v = bd_xmalloc(n * sizeof *v);
        for (size_t i = 0; i < n; i++)
            if (isfinite(in->violation[i]) && in->violation[i] > worst)
                worst = in->violation[i];
        for (size_t i = 0; i < n; i++) {
            v[i] = isfinite(in->violation[i]) ? in->violation[i] : (worst > 0 ? worst : 1.0);
            if (v[i] > VIOLATION_CAP) /* values near DBL_MAX: the GP's standardization overflowed (500) */
                v[i] = VIOLATION_CAP;
            if (v[i] <= 0) {
                feasible++;
                c.best = y[i] < c.best ? y[i] : c.best;
            } else {
                n_con++;
            }
        }
    } else {
        feasible = n;
        for (size_t i = 0; i < n; i++)
            c.best = y[i] < c.best ? y[i] : c.best;
    }
    if ((rc = fitted_gp(in, y, rng, &gp, err)))
        goto out;
    if (n_con && (rc = fitted_gp(in, v, rng, &con, err)))
        goto out;
    if ((rc = hallucinate(gp, d, in->n_run, in->run_x, &h, err)))
        goto out;
    double mean, scale;
    bd_gp_standardization(gp, &mean, &scale);
    c.gp = gp;
    c.var = h ? h : gp;
    c.var_scale = h ? scale * scale : 1.0;
    c.con = con;
    /* local-search starts: the 4 best distinct (feasible, when any is) training points */
    starts = bd_xmalloc(4 * d * sizeof *starts);
    size_t n_starts = 0;
    while (n_starts < 4) {
        long best = -1;
        for (size_t i = 0; i < n; i++) {
            if (v && feasible && v[i] > 0)
                continue;
            int taken = 0;
            for (size_t j = 0; j < n_starts && !taken; j++)
                taken = memcmp(starts + j * d, in->X + i * d, d * sizeof *starts) == 0;
            const double *key = v && !feasible ? v : y; /* nothing feasible: the least violation */
            if (!taken && (best < 0 || key[i] < key[best]))
                best = (long)i;
        }
        if (best < 0)
            break;
        memcpy(starts + n_starts * d, in->X + (size_t)best * d, d * sizeof *starts);
        n_starts++;
    }
    bd_acq_problem p = *prob;
    bd_acq_options o;
    bd_acq_options_default(&o);
    if (in->n_candidates)
        o.n_candidates = in->n_candidates;
    o.starts = n_starts ? starts : NULL;
    o.n_starts = n_starts;
    p.score = score;
    p.score_ctx = &c;
    rc = bd_acq_maximize(&p, &o, rng, u, NULL, err);
    if (!rc && trace) {
        memset(trace, 0, sizeof *trace);
        for (size_t k = 0; k < m && k < 8; k++)
            trace->w[k] = w[k];
        trace->training_points = bd_gp_size(gp);
        trace->constraint_points = con ? bd_gp_size(con) : 0;
        trace->feasible = feasible;
        trace->best = c.best;
    }
out:
    bd_gp_free(gp);
    bd_gp_free(h);
    bd_gp_free(con);
    free(y);
    free(v);
    free(starts);
    free(c.mu);
    free(c.s2);
    free(c.cm);
    free(c.cs2);
    return rc;
}
