/* gp_ucb.c: GP-UCB Bayesian optimisation at the full budget (Srinivas,
 * Krause, Kakade, Seeger, ICML 2010), with GP-BUCB hallucination of running
 * trials for parallel workers (Desautels, Krause, Burdick, JMLR 2014), as
 * ALGORITHMS.md section 6 uses it for BO-BOS's outer loop. The BO baseline,
 * and a sampler for studies with no fidelity.
 *
 * Every trial runs at resource.max. The first n_init trials are random
 * (bd_space_sample); after that, a trial is x_t = argmax over the unit cube
 * of -mu(x) + m_t sigma(x) (losses are minimised, so this is the UCB of the
 * negated loss), where mu comes from the GP of the completed trials and
 * sigma from the same GP with every running trial added as an observation
 * (its value does not matter for the variance: GP-BUCB), so workers asking
 * at once get different, spread-out points. m_t (option multiplier):
 *   "paper": sqrt(beta_t), beta_t = 2 log(|D| t^2 pi^2 / (6 delta)), |D' the
 *            number of acquisition candidates, t = the trial's index;
 *   "code":  0.2 d ln(2t), the BO-BOS authors' code (d parameters).
 *
 * The model (server/model/): Matérn-5/2 with ARD over bd_space_encode's
 * coordinates (categoricals by Hamming distance), standardised outputs,
 * the training set capped at BD_GP_TRAIN_CAP points (the BD_GP_TRAIN_BEST
 * best plus the most recent), hyperparameters refitted by maximum marginal
 * likelihood on the schedule of bd_gp_refit_due.
 *
 * Purity (sched.h): the model is a function of the completed trials alone.
 * A refit at observation count s uses exactly the first s observations and
 * an rng seeded from (study seed, s), starting from the prior mean, never
 * from the previous fit; between refits the hyperparameters stay and the
 * data are rebuilt from scratch (O(cap^3), ~2 ms at cap 192), never updated
 * incrementally. So a replay, which rebuilds once in replayed(), holds the
 * same numbers bit for bit as the live scheduler that rebuilt after each
 * completion, and proposes the same next trials.
 *
 * Values: a diverged run (loss +INFINITY) counts as the worst finite loss
 * seen; failed and expired trials leave no observation.
 *
 * Cost: observe(COMPLETED) O(cap^3) plus, on the O(log n) refit points,
 * the fit; suggest O(candidates x cap^2) for the acquisition (35 ms at
 * 2,000 trials in 8 dimensions, tests/bench/gp_latency.c). */
#include "sched.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../model/acq.h"
#include "../model/acq_space.h"
#include "../model/gp.h"

extern const struct bd_sched_ops bd_sched_gp_ucb;

enum { MULT_PAPER, MULT_CODE };

typedef struct pending {
    int64_t trial_id;
    double *x; /* d coordinates, owned */
} pending;

typedef struct gp_ucb {
    bd_sched base;
    const bd_study_def *def;
    size_t d;                 /* parameters = unit-cube coordinates */
    long long n_init;         /* random trials first */
    long long max_trials;     /* 0 = unlimited */
    int multiplier;           /* MULT_* */
    double delta;             /* the paper's confidence parameter */
    bd_acq_space *acq_space;  /* the space compiled for the optimiser */
    unsigned *n_choices;      /* per coordinate: 0 numeric, else K */

    long long created, running;
    double *X, *y;            /* completed observations in completion order (n x d, n) */
    size_t n, cap;
    pending *pend;            /* running trials with their coordinates */
    size_t n_pend, cap_pend;

    bd_gp *gp;                /* model of the selected observations, or NULL */
    size_t fit_at;            /* observation count of the last refit (0 = none) */
    double fit_objective;     /* its log posterior */
    int model_error;          /* the last rebuild failed: suggest falls back to random */
} gp_ucb;

/* ------------------------------------------------------------- create */

static int gp_create(const bd_study_def *def, bd_sched **out, bd_err *err)
{
    static const char *const known[] = {"n_init", "max_trials", "multiplier", "delta", NULL};
    static const char *const multipliers[] = {"paper", "code", NULL};
    size_t d = bd_space_size(def->space);
    long long n_init, max_trials;
    const char *mult;
    double delta;
    bd_acq_space *as = NULL;
    int rc = bd_opt_known(def->options, known, err);
    if (!rc)
        rc = bd_opt_int(def->options, "n_init", (long long)(2 * d > 4 ? 2 * d : 4), 1, 100000, &n_init, err);
    if (!rc)
        rc = bd_opt_int(def->options, "max_trials", 0, 0, 1000000000LL, &max_trials, err);
    if (!rc)
        rc = bd_opt_string(def->options, "multiplier", "paper", multipliers, &mult, err);
    if (!rc)
        rc = bd_opt_number(def->options, "delta", 0.1, 1e-9, 0.999999, &delta, err);
    if (rc)
        return rc;
    if ((rc = bd_acq_space_new(def->space, &as, err)))
        return bd_err_set(err, BD_EINVAL, "parameters", "gp_ucb: %s", err->message);
    gp_ucb *g = bd_xcalloc(1, sizeof *g);
    g->base.ops = &bd_sched_gp_ucb;
    g->def = def;
    g->d = d;
    g->n_init = n_init;
    g->max_trials = max_trials;
    g->multiplier = strcmp(mult, "code") == 0 ? MULT_CODE : MULT_PAPER;
    g->delta = delta;
    g->acq_space = as;
    g->n_choices = bd_xcalloc(d, sizeof *g->n_choices);
    for (size_t j = 0; j < d; j++) {
        const bd_param *p = bd_space_param(def->space, j);
        if (p->type == BD_PARAM_CATEGORICAL)
            g->n_choices[j] = (unsigned)json_array_size(p->choices);
    }
    *out = &g->base;
    return 0;
}

/* ------------------------------------------------------------- the model */

/* The observations' values for the GP: +INFINITY (diverged) becomes the
 * worst finite loss among the first n, so one bad run does not wreck the
 * standardisation. Returns 0 when none is finite. */
static int finite_values(const gp_ucb *g, size_t n, double *out)
{
    double worst = -INFINITY;
    for (size_t i = 0; i < n; i++)
        if (isfinite(g->y[i]) && g->y[i] > worst)
            worst = g->y[i];
    if (!isfinite(worst))
        return 0;
    for (size_t i = 0; i < n; i++)
        out[i] = isfinite(g->y[i]) ? g->y[i] : worst;
    return 1;
}

/* The observation count of the last refit at or before n, following
 * bd_gp_refit_due from the start: a function of n alone. */
static size_t refit_point(size_t n)
{
    size_t at = 0;
    for (size_t k = 1; k <= n; k++)
        if (bd_gp_refit_due(at, k))
            at = k;
    return at;
}

/* A model with the default hyperparameters holding the selected subset of
 * the first n observations; NULL (and 0) when none is finite. */
static int build_model(const gp_ucb *g, size_t n, bd_gp **out, bd_err *err)
{
    bd_kernel *k = NULL;
    bd_gp *gp = NULL;
    double *vals = bd_xmalloc((n ? n : 1) * sizeof *vals);
    size_t *idx = bd_xmalloc((n ? n : 1) * sizeof *idx);
    double *Xs = NULL, *ys = NULL;
    int rc = 0;
    *out = NULL;
    if (!finite_values(g, n, vals))
        goto out;
    size_t m = bd_gp_select(n, vals, BD_GP_TRAIN_CAP, BD_GP_TRAIN_BEST, idx);
    Xs = bd_xmalloc(m * g->d * sizeof *Xs);
    ys = bd_xmalloc(m * sizeof *ys);
    for (size_t i = 0; i < m; i++) {
        memcpy(Xs + i * g->d, g->X + idx[i] * g->d, g->d * sizeof *Xs);
        ys[i] = vals[idx[i]];
    }
    if ((rc = bd_kernel_new(BD_KERNEL_MATERN52, g->d, g->n_choices, &k, err)) ||
        (rc = bd_gp_new(k, 1e-2, BD_GP_STD_SCALE, &gp, err)) || (rc = bd_gp_set_data(gp, m, Xs, ys, idx, err)))
        goto out;
    *out = gp;
    gp = NULL;
out:
    bd_gp_free(gp);
    bd_kernel_free(k);
    free(vals);
    free(idx);
    free(Xs);
    free(ys);
    return rc;
}

/* Sets gp's hyperparameters to those fitted on the first s observations:
 * from the prior mean, with an rng seeded from (study seed, s). */
static int fitted_theta(const gp_ucb *g, size_t s, double *theta, double *objective, bd_err *err)
{
    bd_gp *at_s = NULL;
    int rc = build_model(g, s, &at_s, err);
    if (rc || !at_s)
        return rc ? rc : bd_err_set(err, BD_EINTERNAL, NULL, "gp_ucb: nothing to fit");
    size_t np = bd_gp_n_params(at_s);
    bd_gp_prior *priors = bd_xmalloc(np * sizeof *priors);
    double *start = bd_xmalloc(np * sizeof *start);
    bd_gp_fit_default_priors(at_s, priors);
    for (size_t i = 0; i < np; i++)
        start[i] = priors[i].mean;
    bd_gp_fit_options opt;
    bd_gp_fit_options_default(&opt);
    bd_rng rng;
    bd_rng_seed(&rng, g->def->seed ^ 0x67705f7563620001ULL /* "gp_ucb" */, (uint64_t)s);
    if (!(rc = bd_gp_set_theta(at_s, start, err)) && !(rc = bd_gp_fit(at_s, &opt, &rng, objective, err)))
        memcpy(theta, bd_gp_theta(at_s), np * sizeof *theta);
    free(priors);
    free(start);
    bd_gp_free(at_s);
    return rc;
}

/* Rebuilds the model from the completed observations (see Purity above).
 * On failure the scheduler proposes random configs until the next rebuild. */
static void rebuild(gp_ucb *g)
{
    bd_err err;
    bd_gp *gp = NULL;
    double *theta = NULL;
    size_t s = refit_point(g->n);
    int rc = build_model(g, g->n, &gp, &err);
    if (!rc && gp && s > 0) {
        theta = bd_xmalloc(bd_gp_n_params(gp) * sizeof *theta);
        if (s != g->fit_at || !g->gp) {
            if (!(rc = fitted_theta(g, s, theta, &g->fit_objective, &err)))
                g->fit_at = s;
        } else {
            memcpy(theta, bd_gp_theta(g->gp), bd_gp_n_params(gp) * sizeof *theta);
        }
        if (!rc)
            rc = bd_gp_set_theta(gp, theta, &err);
    }
    free(theta);
    bd_gp_free(g->gp);
    g->gp = rc ? NULL : gp;
    if (rc)
        bd_gp_free(gp);
    g->model_error = rc != 0;
}

/* ------------------------------------------------------------- suggest */

typedef struct score_ctx {
    const gp_ucb *g;
    bd_gp *hallucinated; /* the model plus the running trials (or g->gp) */
    double var_scale;    /* hallucinated's variance -> the caller's units */
    double mult;
    double *mu, *var;    /* scratch of the largest batch */
    size_t scratch;
} score_ctx;

static int score_ucb(void *ctx, size_t n, const double *U, double *out)
{
    score_ctx *c = ctx;
    bd_err err;
    if (n > c->scratch) {
        c->mu = bd_xrealloc(c->mu, n * sizeof *c->mu);
        c->var = bd_xrealloc(c->var, n * sizeof *c->var);
        c->scratch = n;
    }
    int rc = bd_gp_predict(c->g->gp, n, U, c->mu, NULL, 0, &err);
    if (!rc)
        rc = bd_gp_predict(c->hallucinated, n, U, c->var, c->var, 0, &err);
    for (size_t i = 0; !rc && i < n; i++)
        out[i] = -c->mu[i] + c->mult * sqrt(c->var[i] * c->var_scale);
    return rc;
}

/* The base model with every running trial added: only their coordinates
 * matter for the variance (GP-BUCB). It keeps no standardisation of its
 * own, so its variance is in the base model's standardised units (times
 * the base scale squared in score_ucb). New, or NULL when nothing runs. */
static int hallucinate(const gp_ucb *g, bd_gp **out, bd_err *err)
{
    *out = NULL;
    if (!g->n_pend)
        return 0;
    size_t m = bd_gp_size(g->gp), total = m + g->n_pend, d = g->d;
    double *X = bd_xmalloc(total * d * sizeof *X), *y = bd_xmalloc(total * sizeof *y);
    for (size_t i = 0; i < m; i++) {
        memcpy(X + i * d, bd_gp_x(g->gp, i), d * sizeof *X);
        y[i] = bd_gp_y(g->gp, i);
    }
    for (size_t i = 0; i < g->n_pend; i++) {
        memcpy(X + (m + i) * d, g->pend[i].x, d * sizeof *X);
        y[m + i] = 0; /* unused by the variance */
    }
    bd_gp *h = NULL;
    int rc = bd_gp_new(bd_gp_kernel(g->gp), 1e-2, BD_GP_STD_NONE, &h, err);
    if (!rc)
        rc = bd_gp_set_theta(h, bd_gp_theta(g->gp), err);
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

static double multiplier(const gp_ucb *g, double t, size_t n_candidates)
{
    if (g->multiplier == MULT_CODE)
        return bd_acq_ucb_multiplier_code(g->d, t);
    return sqrt(bd_acq_ucb_beta_paper((double)n_candidates, t, g->delta));
}

static bd_sched_status gp_status(const bd_sched *s)
{
    const gp_ucb *g = (const gp_ucb *)s;
    if (g->max_trials && g->created >= g->max_trials)
        return g->running ? BD_STATUS_WAITING : BD_STATUS_DONE;
    return BD_STATUS_RUNNING;
}

static int gp_suggest(bd_sched *s, const bd_suggest_ctx *ctx, bd_suggestion *out, bd_err *err)
{
    gp_ucb *g = (gp_ucb *)s;
    bd_sched_status st = gp_status(s);
    if (st != BD_STATUS_RUNNING)
        return st == BD_STATUS_DONE ? BD_SUGGEST_DONE : BD_SUGGEST_WAIT;
    bd_rng rng = ctx->rng;
    out->budget = g->def->r_max;
    if (g->created < g->n_init || !g->gp) {
        out->config = bd_space_sample(g->def->space, &rng);
        return BD_SUGGEST_TRIAL;
    }
    bd_acq_problem p;
    bd_acq_options o;
    bd_acq_space_problem(g->acq_space, &p);
    bd_acq_options_default(&o);
    score_ctx c = {.g = g, .mult = multiplier(g, (double)(g->created + 1), o.n_candidates)};
    double *u = bd_xmalloc(g->d * sizeof *u);
    int rc = hallucinate(g, &c.hallucinated, err);
    double mean, scale;
    bd_gp_standardization(g->gp, &mean, &scale);
    c.var_scale = c.hallucinated ? scale * scale : 1.0;
    if (!c.hallucinated)
        c.hallucinated = g->gp;
    p.score = score_ucb;
    p.score_ctx = &c;
    /* The best observed configs seed the local search. */
    size_t m = bd_gp_size(g->gp), n_starts = m < 4 ? m : 4;
    double *starts = bd_xmalloc((n_starts ? n_starts : 1) * g->d * sizeof *starts);
    for (size_t k = 0; k < n_starts; k++) {
        size_t best = 0;
        for (size_t i = 1; i < m; i++) {
            int taken = 0;
            for (size_t j = 0; j < k; j++)
                taken |= memcmp(starts + j * g->d, bd_gp_x(g->gp, i), g->d * sizeof *starts) == 0;
            if (!taken && bd_gp_y(g->gp, i) < bd_gp_y(g->gp, best))
                best = i;
        }
        memcpy(starts + k * g->d, bd_gp_x(g->gp, best), g->d * sizeof *starts);
    }
    o.starts = starts;
    o.n_starts = n_starts;
    if (!rc)
        rc = bd_acq_maximize(&p, &o, &rng, u, NULL, err);
    if (!rc)
        out->config = bd_space_decode(g->def->space, u);
    if (c.hallucinated != g->gp)
        bd_gp_free(c.hallucinated);
    free(c.mu);
    free(c.var);
    free(starts);
    free(u);
    return rc ? rc : BD_SUGGEST_TRIAL;
}

/* ------------------------------------------------------------- observe */

static long find_pending(const gp_ucb *g, int64_t trial_id)
{
    for (size_t i = 0; i < g->n_pend; i++)
        if (g->pend[i].trial_id == trial_id)
            return (long)i;
    return -1;
}

/* Removes trial_id from the running set; its coordinates are handed to
 * *x (new; NULL if it was not there). */
static void take_pending(gp_ucb *g, int64_t trial_id, double **x)
{
    long i = find_pending(g, trial_id);
    *x = NULL;
    if (i < 0)
        return;
    *x = g->pend[i].x;
    g->pend[i] = g->pend[--g->n_pend];
}

static int gp_observe(bd_sched *s, const bd_observe_ctx *ctx, const bd_event *ev, bd_decision *out, bd_err *err)
{
    gp_ucb *g = (gp_ucb *)s;
    double *x = NULL;
    (void)out;
    (void)err;
    switch (ev->type) {
    case BD_EV_CREATED:
        g->created++;
        g->running++;
        x = bd_xmalloc(g->d * sizeof *x);
        if (bd_space_encode(g->def->space, ev->config, x)) { /* cannot happen: the engine validated it */
            free(x);
            break;
        }
        if (g->n_pend == g->cap_pend) {
            g->cap_pend = g->cap_pend ? 2 * g->cap_pend : 8;
            g->pend = bd_xrealloc(g->pend, g->cap_pend * sizeof *g->pend);
        }
        g->pend[g->n_pend++] = (pending){ev->trial_id, x};
        break;
    case BD_EV_COMPLETED:
        g->running--;
        take_pending(g, ev->trial_id, &x);
        if (!x)
            break;
        if (g->n == g->cap) {
            g->cap = g->cap ? 2 * g->cap : 64;
            g->X = bd_xrealloc(g->X, g->cap * g->d * sizeof *g->X);
            g->y = bd_xrealloc(g->y, g->cap * sizeof *g->y);
        }
        memcpy(g->X + g->n * g->d, x, g->d * sizeof *x);
        g->y[g->n++] = ev->loss;
        free(x);
        if (!ctx->replay) /* a replay rebuilds once, in replayed() */
            rebuild(g);
        break;
    case BD_EV_FAILED:
    case BD_EV_EXPIRED:
    case BD_EV_STOPPED:
        g->running--;
        take_pending(g, ev->trial_id, &x);
        free(x);
        break;
    case BD_EV_MEASUREMENT:
        break;
    }
    return 0;
}

static void gp_replayed(bd_sched *s)
{
    rebuild((gp_ucb *)s);
}

/* ------------------------------------------------------------- describe */

static int gp_describe(const bd_sched *s, json_t **out)
{
    const gp_ucb *g = (const gp_ucb *)s;
    json_t *model = json_null();
    if (g->gp) {
        const double *theta = bd_gp_theta(g->gp);
        json_t *ls = json_array();
        for (size_t j = 0; j < g->d; j++)
            json_array_append_new(ls, json_real(exp(theta[j])));
        model = json_pack("{s:I, s:o, s:f, s:f, s:I, s:f}", "training_points", (json_int_t)bd_gp_size(g->gp),
                          "lengthscales", ls, "signal_variance", exp(theta[g->d]), "noise_variance",
                          exp(theta[g->d + 1]), "fitted_at", (json_int_t)g->fit_at, "log_posterior",
                          g->fit_objective);
    }
    *out = json_pack("{s:I, s:I, s:I, s:I, s:s, s:o, s:b}", "n_init", (json_int_t)g->n_init, "created",
                     (json_int_t)g->created, "running", (json_int_t)g->running, "observations", (json_int_t)g->n,
                     "multiplier", g->multiplier == MULT_CODE ? "code" : "paper", "model", model, "model_error",
                     g->model_error);
    return 0;
}

static void gp_destroy(bd_sched *s)
{
    gp_ucb *g = (gp_ucb *)s;
    if (!g)
        return;
    for (size_t i = 0; i < g->n_pend; i++)
        free(g->pend[i].x);
    free(g->pend);
    free(g->X);
    free(g->y);
    free(g->n_choices);
    bd_gp_free(g->gp);
    bd_acq_space_free(g->acq_space);
    free(g);
}

const struct bd_sched_ops bd_sched_gp_ucb = {
    .abi = BD_SCHED_ABI,
    .name = "gp_ucb",
    .create = gp_create,
    .suggest = gp_suggest,
    .observe = gp_observe,
    .replayed = gp_replayed,
    .status = gp_status,
    .describe = gp_describe,
    .destroy = gp_destroy,
};
