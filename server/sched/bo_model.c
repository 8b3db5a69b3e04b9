/* bo_model.c: the outer GP shared by gp_ucb.c and bo_bos.c (contract and
 * the purity rule in bo_model.h).
 *
 * Invariants: X and y only grow (observations are never changed or
 * removed), so the model of the first n observations is the same whenever
 * it is built; fit.theta, when set, is the theta fitted on the first fit.at
 * of them; gp is the model of the first model_n (or NULL). */
#include "bo_model.h"

#include <gsl/gsl_cdf.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../model/acq.h"
#include "../model/acq_space.h"
#include "../model/sobol.h"

/* The cost model's refit rng and the Sobol start's shift are seeded from
 * the study seed ^ the scheduler's salt ^ these, so neither repeats the
 * streams of the loss model's refits. */
#define COST_SALT 0x636f737400000001ULL  /* "cost" */
#define SOBOL_SALT 0x736f626f6c000001ULL /* "sobol" */
/* Fewer costed observations than this: no cost model (plain log EI). */
#define COST_MIN 3

typedef struct fit_state {
    double *theta;    /* fitted at `at`, NULL: none yet */
    size_t at;        /* observation count of that refit (0 = none) */
    double objective; /* its log posterior */
} fit_state;

struct bd_bo_model {
    const bd_study_def *def;
    const char *name;
    size_t d, D;   /* configuration coordinates; D = d + 1 with the fidelity column */
    int fidelity;  /* the column n/N follows the d coordinates */
    uint64_t salt; /* refit rng: (seed ^ salt, s) */
    bd_bo_ucb ucb;
    size_t n_candidates;     /* 0: the optimiser's default */
    unsigned *n_choices;     /* D entries: 0 numeric, else K */
    bd_acq_space *acq_space; /* the d coordinates compiled for the optimiser */

    double *X, *y; /* observations in arrival order (n x D, n) */
    double *lc;    /* n: log seconds per unit of budget (NAN: not reported) */
    size_t n, cap;

    bd_gp *gp;      /* the current model, or NULL */
    size_t model_n; /* observation count gp was rebuilt from */
    int model_error;
    fit_state fit;      /* the last refit a rebuild made */
    bd_gp *cost_gp;     /* cost_aware: the log-cost model of the first model_n, or NULL */
    fit_state cost_fit; /* its last refit */
};

/* ------------------------------------------------------------- create */

int bd_bo_ucb_read(const json_t *options, bd_bo_ucb *out, bd_err *err)
{
    static const char *const multipliers[] = {"paper", "code", NULL};
    static const char *const acquisitions[] = {"ucb", "logei", NULL};
    const char *mult, *acq;
    int rc = bd_opt_string(options, "multiplier", "paper", multipliers, &mult, err);
    if (!rc)
        rc = bd_opt_number(options, "delta", 0.1, 1e-9, 0.999999, &out->delta, err);
    if (!rc)
        rc = bd_opt_string(options, "acquisition", "ucb", acquisitions, &acq, err);
    if (rc)
        return rc;
    out->multiplier = strcmp(mult, "code") == 0 ? BD_BO_MULT_CODE : BD_BO_MULT_PAPER;
    out->acquisition = strcmp(acq, "logei") == 0 ? BD_BO_ACQ_LOGEI : BD_BO_ACQ_UCB;
    out->cost_aware = 0;
    out->cost_exponent = 1.0;
    out->initial = BD_BO_INIT_RANDOM;
    out->warp = BD_BO_WARP_NONE;
    return 0;
}

int bd_bo_start_cost_read(const json_t *options, bd_bo_ucb *out, bd_err *err)
{
    static const char *const initials[] = {"random", "sobol", NULL};
    static const char *const warps[] = {"none", "quantile", NULL};
    const char *init, *warp;
    int rc = bd_opt_bool(options, "cost_aware", 0, &out->cost_aware, err);
    if (!rc)
        rc = bd_opt_number(options, "cost_exponent", 1.0, 0.0, 1.0, &out->cost_exponent, err);
    if (!rc)
        rc = bd_opt_string(options, "initial", "random", initials, &init, err);
    if (!rc)
        rc = bd_opt_string(options, "warp", "none", warps, &warp, err);
    if (rc)
        return rc;
    out->initial = strcmp(init, "sobol") == 0 ? BD_BO_INIT_SOBOL : BD_BO_INIT_RANDOM;
    out->warp = strcmp(warp, "quantile") == 0 ? BD_BO_WARP_QUANTILE : BD_BO_WARP_NONE;
    if (out->cost_aware && out->acquisition != BD_BO_ACQ_LOGEI)
        return bd_err_set(err, BD_EINVAL, "scheduler.options.cost_aware",
                          "cost_aware needs \"acquisition\": \"logei\" (UCB has no ratio to a cost)");
    return 0;
}

int bd_bo_model_new(const bd_study_def *def, const bd_bo_model_options *opt, bd_bo_model **out, bd_err *err)
{
    bd_acq_space *as = NULL;
    size_t d = bd_space_size(def->space);
    if (bd_acq_space_new(def->space, &as, err))
        return bd_err_set(err, BD_EINVAL, "parameters", "%s: %s", opt->name, err->message);
    bd_bo_model *m = bd_xcalloc(1, sizeof *m);
    m->def = def;
    m->name = opt->name;
    m->d = d;
    m->D = d + (opt->fidelity ? 1 : 0);
    m->fidelity = opt->fidelity;
    m->salt = opt->salt;
    m->ucb = opt->ucb;
    m->n_candidates = opt->n_candidates;
    m->acq_space = as;
    m->n_choices = bd_xcalloc(m->D, sizeof *m->n_choices);
    for (size_t j = 0; j < d; j++) {
        const bd_param *p = bd_space_param(def->space, j);
        if (p->type == BD_PARAM_CATEGORICAL)
            m->n_choices[j] = (unsigned)json_array_size(p->choices);
    }
    *out = m;
    return 0;
}

size_t bd_bo_model_held_bytes(const bd_bo_model *m)
{
    if (!m)
        return 0;
    return BD_HEAP_BLOCK(sizeof *m) + BD_HEAP_BLOCK(m->cap * m->D * sizeof *m->X) +
           2 * BD_HEAP_BLOCK(m->cap * sizeof *m->y) + BD_HEAP_BLOCK(m->D * sizeof *m->n_choices) +
           2 * BD_HEAP_BLOCK((m->D + 2) * sizeof(double)) /* the fits' theta */ +
           bd_gp_held_bytes(m->gp) + bd_gp_held_bytes(m->cost_gp) + bd_acq_space_held_bytes(m->acq_space);
}

void bd_bo_model_free(bd_bo_model *m)
{
    if (!m)
        return;
    free(m->X);
    free(m->y);
    free(m->lc);
    free(m->n_choices);
    free(m->fit.theta);
    free(m->cost_fit.theta);
    bd_gp_free(m->gp);
    bd_gp_free(m->cost_gp);
    bd_acq_space_free(m->acq_space);
    free(m);
}

/* ------------------------------------------------------------- observations */

void bd_bo_model_add_costed(bd_bo_model *m, const double *x, double fidelity, double loss, double seconds, double units)
{
    if (m->n == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 64;
        m->X = bd_xrealloc(m->X, m->cap * m->D * sizeof *m->X);
        m->y = bd_xrealloc(m->y, m->cap * sizeof *m->y);
        m->lc = bd_xrealloc(m->lc, m->cap * sizeof *m->lc);
    }
    memcpy(m->X + m->n * m->D, x, m->d * sizeof *x);
    if (m->fidelity)
        m->X[m->n * m->D + m->d] = fidelity;
    m->lc[m->n] = seconds > 0 && units > 0 && isfinite(log(seconds / units)) ? log(seconds / units) : NAN;
    m->y[m->n++] = loss;
}

void bd_bo_model_add(bd_bo_model *m, const double *x, double fidelity, double loss)
{
    bd_bo_model_add_costed(m, x, fidelity, loss, NAN, NAN);
}

json_t *bd_bo_model_initial_config(const bd_bo_model *m, size_t created, bd_rng *rng)
{
    bd_sobol *sob = NULL;
    bd_err err;
    if (m->ucb.initial != BD_BO_INIT_SOBOL || m->d > BD_SOBOL_MAX_DIM || bd_sobol_new(m->d, &sob, &err))
        return bd_space_sample(m->def->space, rng); /* more than 40 parameters: no Sobol directions */
    bd_rng shift;
    bd_rng_seed(&shift, m->def->seed ^ m->salt ^ SOBOL_SALT, 0);
    bd_sobol_shift(sob, &shift);
    double *u = bd_xmalloc(m->d * sizeof *u);
    int rc = 0;
    for (size_t k = 0; k <= created && !rc; k++) /* O(created d): only the first n_init trials ask */
        rc = bd_sobol_next(sob, u);
    json_t *config = rc ? bd_space_sample(m->def->space, rng) : bd_space_decode(m->def->space, u);
    free(u);
    bd_sobol_free(sob);
    return config;
}

size_t bd_bo_model_count(const bd_bo_model *m)
{
    return m->n;
}

/* ------------------------------------------------------------- the model */

/* The observations' values for the GP: +INFINITY (diverged) becomes the
 * worst finite loss among the first n, so one bad run does not wreck the
 * standardisation. Returns 0 when none is finite. */
static int raw_values(const bd_bo_model *m, size_t n, double *out)
{
    double worst = -INFINITY;
    for (size_t i = 0; i < n; i++)
        if (isfinite(m->y[i]) && m->y[i] > worst)
            worst = m->y[i];
    if (!isfinite(worst))
        return 0;
    for (size_t i = 0; i < n; i++)
        out[i] = isfinite(m->y[i]) ? m->y[i] : worst;
    return 1;
}

typedef struct ranked_value {
    double v;
    size_t i;
} ranked_value;

static int by_value(const void *a, const void *b)
{
    const ranked_value *x = a, *y = b;
    return x->v < y->v ? -1 : x->v > y->v ? 1 : x->i < y->i ? -1 : x->i > y->i;
}

/* The values the loss model is fitted on: raw_values, then with option
 * "warp": "quantile" their normal scores Phi^-1((rank + 1/2) / n), ties
 * sharing their mean rank (the Gaussian copula of Salinas, Shen, Perrone,
 * ICML 2020, section 4.1): a monotone map, so the ranking and the
 * incumbent stay, while a few diverged or very bad configs no longer
 * stretch the scale that the good region is modelled on. A function of
 * the first n values alone (purity). */
static int finite_values(const bd_bo_model *m, size_t n, double *out)
{
    if (!raw_values(m, n, out))
        return 0;
    if (m->ucb.warp != BD_BO_WARP_QUANTILE)
        return 1;
    ranked_value *r = bd_xmalloc(n * sizeof *r);
    for (size_t i = 0; i < n; i++)
        r[i] = (ranked_value){out[i], i};
    qsort(r, n, sizeof *r, by_value);
    for (size_t a = 0; a < n;) {
        size_t b = a;
        while (b + 1 < n && r[b + 1].v == r[a].v)
            b++;
        double q = gsl_cdf_ugaussian_Pinv(((double)(a + b) / 2.0 + 0.5) / (double)n);
        for (size_t k = a; k <= b; k++)
            out[r[k].i] = q;
        a = b + 1;
    }
    free(r);
    return 1;
}

size_t bd_bo_model_refit_point(size_t n)
{
    size_t at = 0;
    for (size_t k = 1; k <= n; k++)
        if (bd_gp_refit_due(at, k))
            at = k;
    return at;
}

/* The cost model's data among the first n observations: rows[] (their
 * indices) and vals[] (log costs), in arrival order. Returns how many. */
static size_t cost_values(const bd_bo_model *m, size_t n, size_t *rows, double *vals)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(m->lc[i])) {
            rows[k] = i;
            vals[k++] = m->lc[i];
        }
    return k;
}

/* A model with the default hyperparameters holding the selected subset of
 * the first n observations; NULL (and 0) when none is finite. cost: the
 * cost model instead (log costs over the d configuration coordinates, the
 * newest BD_GP_TRAIN_CAP; NULL below COST_MIN costed observations). */
static int build_model(const bd_bo_model *m, size_t n, int cost, bd_gp **out, bd_err *err)
{
    bd_kernel *k = NULL;
    bd_gp *gp = NULL;
    size_t D = cost ? m->d : m->D;
    double *vals = bd_xmalloc((n ? n : 1) * sizeof *vals);
    size_t *idx = bd_xmalloc((n ? n : 1) * sizeof *idx), *rows = NULL;
    double *Xs = NULL, *ys = NULL;
    int rc = 0;
    *out = NULL;
    size_t nv = n;
    if (cost) {
        rows = bd_xmalloc((n ? n : 1) * sizeof *rows);
        if ((nv = cost_values(m, n, rows, vals)) < COST_MIN)
            goto out;
    } else if (!finite_values(m, n, vals)) {
        goto out;
    }
    size_t sel = bd_gp_select(nv, vals, BD_GP_TRAIN_CAP, cost ? 0 : BD_GP_TRAIN_BEST, idx);
    Xs = bd_xmalloc(sel * D * sizeof *Xs);
    ys = bd_xmalloc(sel * sizeof *ys);
    for (size_t i = 0; i < sel; i++) {
        size_t row = cost ? rows[idx[i]] : idx[i];
        memcpy(Xs + i * D, m->X + row * m->D, D * sizeof *Xs);
        ys[i] = vals[idx[i]];
    }
    if ((rc = bd_kernel_new(BD_KERNEL_MATERN52, D, m->n_choices, &k, err)) ||
        (rc = bd_gp_new(k, 1e-2, BD_GP_STD_SCALE, &gp, err)) || (rc = bd_gp_set_data(gp, sel, Xs, ys, idx, err)))
        goto out;
    *out = gp;
    gp = NULL;
out:
    bd_gp_free(gp);
    bd_kernel_free(k);
    free(vals);
    free(idx);
    free(rows);
    free(Xs);
    free(ys);
    return rc;
}

/* theta fitted on the first s observations: from the prior mean, with an
 * rng seeded from (study seed ^ salt, s) (^ COST_SALT for the cost model).
 * The cost model with too few costs among them keeps the prior mean. */
static int fitted_theta(const bd_bo_model *m, size_t s, int cost, double *theta, double *objective, bd_err *err)
{
    bd_gp *at_s = NULL;
    int rc = build_model(m, s, cost, &at_s, err);
    if (!rc && !at_s && cost) {
        bd_gp_prior priors[BD_ACQ_MAX_DIM + 2];
        bd_gp *shape = NULL;
        bd_kernel *k = NULL;
        if ((rc = bd_kernel_new(BD_KERNEL_MATERN52, m->d, m->n_choices, &k, err)) ||
            (rc = bd_gp_new(k, 1e-2, BD_GP_STD_SCALE, &shape, err))) {
            bd_kernel_free(k);
            return rc;
        }
        bd_gp_fit_default_priors(shape, priors);
        for (size_t i = 0; i < bd_gp_n_params(shape); i++)
            theta[i] = priors[i].mean;
        *objective = 0;
        bd_gp_free(shape);
        bd_kernel_free(k);
        return 0;
    }
    if (rc || !at_s)
        return rc ? rc : bd_err_set(err, BD_EINTERNAL, NULL, "%s: nothing to fit", m->name);
    size_t np = bd_gp_n_params(at_s);
    bd_gp_prior *priors = bd_xmalloc(np * sizeof *priors);
    double *start = bd_xmalloc(np * sizeof *start);
    bd_gp_fit_default_priors(at_s, priors);
    for (size_t i = 0; i < np; i++)
        start[i] = priors[i].mean;
    bd_gp_fit_options opt;
    bd_gp_fit_options_default(&opt);
    bd_rng rng;
    bd_rng_seed(&rng, m->def->seed ^ m->salt ^ (cost ? COST_SALT : 0), (uint64_t)s);
    if (!(rc = bd_gp_set_theta(at_s, start, err)) && !(rc = bd_gp_fit(at_s, &opt, &rng, objective, err)))
        memcpy(theta, bd_gp_theta(at_s), np * sizeof *theta);
    free(priors);
    free(start);
    bd_gp_free(at_s);
    return rc;
}

/* The model of the first n observations (a function of n alone): *out new,
 * NULL when no observation is finite. The theta of the last refit point is
 * m->fit's when it was fitted there, else fitted now; keep (may be NULL)
 * then receives that new fit. */
static int model_at(const bd_bo_model *m, size_t n, int cost, fit_state *keep, bd_gp **out, bd_err *err)
{
    bd_gp *gp = NULL;
    size_t s = bd_bo_model_refit_point(n);
    const fit_state *have = cost ? &m->cost_fit : &m->fit;
    int rc = build_model(m, n, cost, &gp, err);
    *out = NULL;
    if (!rc && gp && s > 0) {
        size_t np = bd_gp_n_params(gp);
        double *theta = bd_xmalloc(np * sizeof *theta), objective = 0;
        if (s == have->at && have->theta) {
            memcpy(theta, have->theta, np * sizeof *theta);
        } else if (!(rc = fitted_theta(m, s, cost, theta, &objective, err)) && keep) {
            free(keep->theta);
            keep->theta = bd_xmalloc(np * sizeof *theta);
            memcpy(keep->theta, theta, np * sizeof *theta);
            keep->at = s;
            keep->objective = objective;
        }
        if (!rc)
            rc = bd_gp_set_theta(gp, theta, err);
        free(theta);
    }
    if (rc) {
        bd_gp_free(gp);
        return rc;
    }
    *out = gp;
    return 0;
}

void bd_bo_model_rebuild(bd_bo_model *m)
{
    bd_err err;
    bd_gp *gp = NULL, *cost_gp = NULL;
    int rc = model_at(m, m->n, 0, &m->fit, &gp, &err);
    if (!rc && m->ucb.cost_aware)
        rc = model_at(m, m->n, 1, &m->cost_fit, &cost_gp, &err);
    if (rc) { /* one model without the other would change the acquisition silently */
        bd_gp_free(gp);
        bd_gp_free(cost_gp);
        gp = cost_gp = NULL;
    }
    bd_gp_free(m->gp);
    bd_gp_free(m->cost_gp);
    m->gp = gp;
    m->cost_gp = cost_gp;
    m->model_error = rc != 0;
    m->model_n = m->n;
}

const bd_gp *bd_bo_model_gp(const bd_bo_model *m)
{
    return m->gp;
}

int bd_bo_model_error(const bd_bo_model *m)
{
    return m->model_error;
}

int bd_bo_model_current(const bd_bo_model *m, size_t n)
{
    return m->model_n == n && !m->model_error;
}

int bd_bo_model_at(const bd_bo_model *m, size_t n, bd_gp **out, bd_err *err)
{
    return model_at(m, n, 0, NULL, out, err);
}

/* ------------------------------------------------------------- propose */

typedef struct score_ctx {
    const bd_bo_model *m;
    const bd_gp *hallucinated; /* the model plus the running trials (or m->gp) */
    double var_scale;          /* hallucinated's variance -> the caller's units */
    double mult;
    double best;          /* logei: the best full-budget loss observed */
    double *mu, *var, *U; /* scratch of the largest batch (U: rows of D, with the fidelity column) */
    double *cost;         /* scratch: the cost model's mean log cost, when m->cost_gp */
    size_t scratch;
} score_ctx;

static int score_ucb(void *ctx, size_t n, const double *U, double *out)
{
    score_ctx *c = ctx;
    const bd_bo_model *m = c->m;
    bd_err err;
    if (n > c->scratch) {
        c->mu = bd_xrealloc(c->mu, n * sizeof *c->mu);
        c->var = bd_xrealloc(c->var, n * sizeof *c->var);
        c->cost = bd_xrealloc(c->cost, n * sizeof *c->cost);
        if (m->fidelity)
            c->U = bd_xrealloc(c->U, n * m->D * sizeof *c->U);
        c->scratch = n;
    }
    int rc = m->cost_gp ? bd_gp_predict(m->cost_gp, n, U, c->cost, NULL, 0, &err) : 0;
    if (m->fidelity) {
        for (size_t i = 0; i < n; i++) {
            memcpy(c->U + i * m->D, U + i * m->d, m->d * sizeof *U);
            c->U[i * m->D + m->d] = 1.0; /* full fidelity */
        }
        U = c->U;
    }
    if (!rc)
        rc = bd_gp_predict(m->gp, n, U, c->mu, NULL, 0, &err);
    if (!rc)
        rc = bd_gp_predict(c->hallucinated, n, U, c->var, c->var, 0, &err);
    for (size_t i = 0; !rc && i < n; i++) {
        double sd = sqrt(c->var[i] * c->var_scale);
        out[i] =
            m->ucb.acquisition == BD_BO_ACQ_LOGEI ? bd_acq_log_ei(c->best, c->mu[i], sd) : -c->mu[i] + c->mult * sd;
        if (m->cost_gp) /* EI per predicted second^alpha: log EI - alpha log cost */
            out[i] -= m->ucb.cost_exponent * c->cost[i];
    }
    return rc;
}

/* The best (smallest) full-budget loss among the model's first model_n observations. */
static double best_observed(const bd_bo_model *m)
{
    double best = INFINITY;
    double *vals = bd_xmalloc((m->model_n ? m->model_n : 1) * sizeof *vals);
    if (!finite_values(m, m->model_n, vals)) { /* in the model's units (warp) */
        free(vals);
        return best;
    }
    for (size_t i = 0; i < m->model_n; i++)
        if ((!m->fidelity || m->X[i * m->D + m->d] == 1.0) && isfinite(m->y[i]) && vals[i] < best)
            best = vals[i];
    free(vals);
    return best;
}

/* The current model with every running trial added at full fidelity: only
 * their coordinates matter for the variance (GP-BUCB). It keeps no
 * standardisation of its own, so its variance is in the base model's
 * standardised units (times the base scale squared in score_ucb). New, or
 * NULL when nothing runs. */
static int hallucinate(const bd_bo_model *m, size_t n_run, const double *const *run_x, bd_gp **out, bd_err *err)
{
    *out = NULL;
    if (!n_run)
        return 0;
    size_t held = bd_gp_size(m->gp), total = held + n_run, D = m->D;
    double *X = bd_xmalloc(total * D * sizeof *X), *y = bd_xmalloc(total * sizeof *y);
    for (size_t i = 0; i < held; i++) {
        memcpy(X + i * D, bd_gp_x(m->gp, i), D * sizeof *X);
        y[i] = bd_gp_y(m->gp, i);
    }
    for (size_t i = 0; i < n_run; i++) {
        memcpy(X + (held + i) * D, run_x[i], m->d * sizeof *X);
        if (m->fidelity)
            X[(held + i) * D + m->d] = 1.0;
        y[held + i] = 0; /* unused by the variance */
    }
    bd_gp *h = NULL;
    int rc = bd_gp_new(bd_gp_kernel(m->gp), 1e-2, BD_GP_STD_NONE, &h, err);
    if (!rc)
        rc = bd_gp_set_theta(h, bd_gp_theta(m->gp), err);
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

static double multiplier(const bd_bo_model *m, double t, size_t n_candidates)
{
    if (m->ucb.multiplier == BD_BO_MULT_CODE)
        return bd_acq_ucb_multiplier_code(m->D, t);
    return sqrt(bd_acq_ucb_beta_paper((double)n_candidates, t, m->ucb.delta));
}

int bd_bo_model_propose(const bd_bo_model *m, double t, size_t n_run, const double *const *run_x, const double *starts,
                        size_t n_starts, bd_rng *rng, double *u, bd_err *err)
{
    bd_acq_problem p;
    bd_acq_options o;
    bd_gp *h = NULL;
    if (!m->gp)
        return bd_err_set(err, BD_EINTERNAL, NULL, "%s: no model to propose from", m->name);
    bd_acq_space_problem(m->acq_space, &p);
    bd_acq_options_default(&o);
    if (m->n_candidates)
        o.n_candidates = m->n_candidates;
    score_ctx c = {.m = m, .mult = multiplier(m, t, o.n_candidates), .best = best_observed(m)};
    int rc = hallucinate(m, n_run, run_x, &h, err);
    double mean, scale;
    bd_gp_standardization(m->gp, &mean, &scale);
    c.var_scale = h ? scale * scale : 1.0;
    c.hallucinated = h ? h : m->gp;
    p.score = score_ucb;
    p.score_ctx = &c;
    o.starts = starts;
    o.n_starts = n_starts;
    if (!rc)
        rc = bd_acq_maximize(&p, &o, rng, u, NULL, err);
    bd_gp_free(h);
    free(c.mu);
    free(c.var);
    free(c.cost);
    free(c.U);
    return rc;
}

size_t bd_bo_model_best_points(const bd_bo_model *m, size_t k, double *starts)
{
    size_t n = m->gp ? bd_gp_size(m->gp) : 0, found = 0;
    while (found < k) {
        long best = -1;
        for (size_t i = 0; i < n; i++) {
            const double *xi = bd_gp_x(m->gp, i);
            int taken = m->fidelity && xi[m->d] != 1.0;
            for (size_t j = 0; j < found && !taken; j++)
                taken = memcmp(starts + j * m->d, xi, m->d * sizeof *starts) == 0;
            if (!taken && (best < 0 || bd_gp_y(m->gp, i) < bd_gp_y(m->gp, (size_t)best)))
                best = (long)i;
        }
        if (best < 0)
            break;
        memcpy(starts + found * m->d, bd_gp_x(m->gp, (size_t)best), m->d * sizeof *starts);
        found++;
    }
    return found;
}

int bd_bo_model_next_config(const bd_bo_model *m, const bd_space *space, size_t created, size_t n_init, size_t n_run,
                            const double *const *run_x, bd_rng *rng, json_t **out, bd_err *err)
{
    *out = NULL;
    if (created < n_init) {
        *out = bd_bo_model_initial_config(m, created, rng);
        return 0;
    }
    if (!m->gp) {
        *out = bd_space_sample(space, rng);
        return 0;
    }
    double *u = bd_xmalloc(m->d * sizeof *u);
    double *starts = bd_xmalloc(4 * m->d * sizeof *starts);
    size_t n_starts = bd_bo_model_best_points(m, 4, starts);
    int rc =
        bd_bo_model_propose(m, (double)(created + 1), n_run, run_x, n_starts ? starts : NULL, n_starts, rng, u, err);
    if (!rc)
        *out = bd_space_decode(space, u);
    free(u);
    free(starts);
    return rc;
}

/* ------------------------------------------------------------- describe */

const char *bd_bo_model_multiplier_name(const bd_bo_model *m)
{
    return m->ucb.multiplier == BD_BO_MULT_CODE ? "code" : "paper";
}

json_t *bd_bo_model_describe(const bd_bo_model *m)
{
    if (!m->gp)
        return json_null();
    const double *theta = bd_gp_theta(m->gp);
    json_t *ls = json_array();
    for (size_t j = 0; j < m->D; j++)
        json_array_append_new(ls, json_real(exp(theta[j])));
    json_t *cost = json_null();
    if (m->cost_gp) {
        const double *ct = bd_gp_theta(m->cost_gp);
        json_t *cls = json_array();
        for (size_t j = 0; j < m->d; j++)
            json_array_append_new(cls, json_real(exp(ct[j])));
        cost = json_pack("{s:I, s:o, s:I}", "training_points", (json_int_t)bd_gp_size(m->cost_gp), "lengthscales", cls,
                         "fitted_at", (json_int_t)m->cost_fit.at);
    }
    return json_pack("{s:I, s:o, s:f, s:f, s:I, s:f, s:o}", "training_points", (json_int_t)bd_gp_size(m->gp),
                     "lengthscales", ls, "signal_variance", exp(theta[m->D]), "noise_variance", exp(theta[m->D + 1]),
                     "fitted_at", (json_int_t)m->fit.at, "log_posterior", m->fit.objective, "cost_model", cost);
}
