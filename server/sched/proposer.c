/* proposer.c: random, TPE or GP proposals of new configs (proposer.h).
 * Results are kept in arrival order, in the coordinates of
 * server/model/tpe.h (and bd_space_encode's unit cube for the GP), with
 * their budget, config and cost; a TPE proposal picks the rows it fits on;
 * the GP keeps one bo_model.h model per budget, fed in arrival order, and
 * rebuilds the one it proposes from when it is stale. */
#include "proposer.h"

#include <assert.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../json_util.h"
#include "../model/acq.h"
#include "../model/tpe.h"
#include "bo_model.h"
#include "idmap.h"

enum { SAMPLER_RANDOM, SAMPLER_TPE, SAMPLER_GP };

/* The GP's refits at budget b seed their rng from the study seed ^ this ^
 * the bits of b: a function of the budget alone. */
#define GP_SALT 0x67705f70726f0001ULL /* "gp_pro" */
/* The GP's space-filling candidates per proposal (gp_ucb: 2048): ASHA asks
 * for a new config after nearly every result, thousands per study, so the
 * search is lighter; the local search from the 4 incumbents and the best
 * candidates refines either way. */
#define GP_CANDIDATES 512
/* At most this many not-promoted configs are hallucinated (the newest):
 * the hallucinated model costs O((BD_GP_TRAIN_CAP + this)^3). */
#define GP_MAX_PENDING 64

struct bd_proposer {
    const bd_study_def *def; /* borrowed: outlives the proposer (the scheduler keeps it) */
    const bd_space *space;   /* borrowed */
    size_t d;
    int sampler;
    long long n_startup;    /* results a budget needs before TPE fits on it */
    double random_fraction; /* of proposals drawn at random once a model exists */
    int cost_aware;         /* option cost_aware: score per predicted second */
    bd_tpe_opts tpe;
    bd_tpe_dim *dims; /* d */
    /* every result, in arrival order */
    double *x;          /* n rows of d coordinates (tpe.h) */
    double *loss;       /* n */
    double *budget;     /* n */
    double *log_cost;   /* n: log seconds per unit of budget the result cost (NAN: not reported) */
    int64_t *config_id; /* n */
    size_t m;           /* bd_proposer_set_objectives: losses per result, else 0 */
    int constrained;    /*   and whether violations count */
    double *losses;     /* n rows of m minimized values (m > 0) */
    double *viol;       /* n violations (m > 0) */
    double *u;          /* gp: n rows of d unit-cube coordinates (bd_space_encode) */
    size_t n, cap;
    double *budgets;   /* the distinct budgets seen, increasing, */
    size_t *at_budget; /*   and how many results each has, */
    bd_bo_model **gp;  /*   and (gp) the model of that budget's results in arrival order */
    size_t n_budgets;
};

bd_tpe_dim bd_proposer_tpe_dim(const bd_param *p)
{
    bd_tpe_dim dim = {0};
    if (p->type == BD_PARAM_CATEGORICAL) {
        dim.n_choices = (int)json_array_size(p->choices);
        return dim;
    }
    double lo = p->low, hi = p->high;
    if (p->type == BD_PARAM_INT) { /* each integer owns the bin around it */
        lo -= 0.5;
        hi += 0.5;
        dim.step = p->log ? 0 : 1;
    }
    dim.low = p->log ? log(lo) : lo;
    dim.high = p->log ? log(hi) : hi;
    return dim;
}

int bd_proposer_create(const bd_study_def *def, const char *dflt_sampler, int multi_fidelity, bd_proposer **out,
                       bd_err *err)
{
    static const char *const samplers[] = {"random", "tpe", "gp", NULL};
    const json_t *o = def->options;
    const char *sampler;
    long long n_startup, n_cand;
    double gamma, prior_weight, random_fraction;
    int multivariate, cost_aware, rc;
    /* Defaults: Optuna 3.1's TPESampler for a single fidelity; BOHB's
     * (Falkner et al. 2018: min_points_in_model d + 1, top_n_percent 15,
     * random_fraction 1/3, a joint KDE) across budgets. */
    long long d = (long long)bd_space_size(def->space);
    if ((rc = bd_opt_string(o, "sampler", dflt_sampler, samplers, &sampler, err)) ||
        (rc = bd_opt_int(o, "n_startup_trials", multi_fidelity ? d + 3 : 10, 1, 100000, &n_startup, err)) ||
        (rc = bd_opt_int(o, "n_ei_candidates", 24, 1, BD_TPE_MAX_CANDIDATES, &n_cand, err)) ||
        (rc = bd_opt_number(o, "gamma", multi_fidelity ? 0.15 : 0.1, 0.01, 0.5, &gamma, err)) ||
        /* BOHB's KDE has no prior: exploration is its random_fraction. A
         * prior of weight 1 next to a good group of a few promoted configs
         * sends the proposals wherever the (promoted, concentrated) bad
         * group is absent, away from the optimum. */
        (rc = bd_opt_number(o, "prior_weight", multi_fidelity ? 1e-3 : 1.0, 1e-6, 100.0, &prior_weight, err)) ||
        (rc = bd_opt_bool(o, "multivariate", multi_fidelity, &multivariate, err)) ||
        (rc = bd_opt_number(o, "random_fraction", multi_fidelity ? 1.0 / 3.0 : 0.0, 0.0, 1.0, &random_fraction, err)) ||
        (rc = bd_opt_bool(o, "cost_aware", 1, &cost_aware, err)))
        return rc;
    if (strcmp(sampler, "tpe") == 0 && bd_space_size(def->space) > BD_TPE_MAX_DIM)
        return bd_err_set(err, BD_EINVAL, "parameters", "the tpe sampler handles at most %d parameters, not %zu",
                          BD_TPE_MAX_DIM, bd_space_size(def->space));
    if (strcmp(sampler, "gp") == 0 && bd_space_size(def->space) > BD_ACQ_MAX_DIM)
        return bd_err_set(err, BD_EINVAL, "parameters", "the gp sampler handles at most %d parameters, not %zu",
                          BD_ACQ_MAX_DIM, bd_space_size(def->space));
    bd_proposer *p = bd_xcalloc(1, sizeof *p);
    p->def = def;
    p->space = def->space;
    p->d = bd_space_size(def->space);
    p->sampler = strcmp(sampler, "tpe") == 0 ? SAMPLER_TPE : strcmp(sampler, "gp") == 0 ? SAMPLER_GP : SAMPLER_RANDOM;
    p->n_startup = n_startup;
    p->random_fraction = random_fraction;
    p->cost_aware = cost_aware;
    bd_tpe_opts_default(&p->tpe);
    p->tpe.gamma = gamma;
    p->tpe.prior_weight = prior_weight;
    p->tpe.n_candidates = (int)n_cand;
    p->tpe.multivariate = multivariate;
    if (multi_fidelity) {
        p->tpe.min_good = (int)d + 1;
        p->tpe.max_good = INT_MAX;
    }
    p->dims = bd_xcalloc(p->d, sizeof *p->dims);
    for (size_t i = 0; i < p->d; i++)
        p->dims[i] = bd_proposer_tpe_dim(bd_space_param(def->space, i));
    *out = p;
    return 0;
}

void bd_proposer_free(bd_proposer *p)
{
    if (!p)
        return;
    free(p->x);
    free(p->loss);
    free(p->budget);
    free(p->log_cost);
    free(p->config_id);
    free(p->losses);
    free(p->viol);
    free(p->u);
    for (size_t i = 0; p->gp && i < p->n_budgets; i++)
        bd_bo_model_free(p->gp[i]);
    free(p->gp);
    free(p->budgets);
    free(p->at_budget);
    free(p->dims);
    free(p);
}

size_t bd_proposer_held_bytes(const bd_proposer *p)
{
    size_t c = p->cap, per_result = p->d * sizeof *p->x + sizeof *p->loss + sizeof *p->budget +
                                    sizeof *p->log_cost + sizeof *p->config_id;
    if (p->m)
        per_result += (p->m + 1) * sizeof(double);
    size_t bytes = BD_HEAP_BLOCK(sizeof *p) + BD_HEAP_BLOCK(p->d * sizeof *p->dims) + 7 * BD_HEAP_BLOCK(0) +
                   c * per_result + (p->u ? BD_HEAP_BLOCK(c * p->d * sizeof *p->u) : 0) +
                   3 * BD_HEAP_BLOCK(p->n_budgets * sizeof(double));
    for (size_t i = 0; p->gp && i < p->n_budgets; i++)
        bytes += bd_bo_model_held_bytes(p->gp[i]);
    return bytes;
}

const char *bd_proposer_sampler(const bd_proposer *p)
{
    return p->sampler == SAMPLER_TPE ? "tpe" : p->sampler == SAMPLER_GP ? "gp" : "random";
}

/* The GP of one budget's results: log EI (per predicted second with
 * cost_aware), refits salted by the budget. */
static bd_bo_model *gp_model_new(const bd_proposer *p, double budget)
{
    uint64_t bits;
    memcpy(&bits, &budget, sizeof bits);
    bd_bo_model_options mo = {
        .name = "gp sampler", .fidelity = 0, .salt = GP_SALT ^ bits, .n_candidates = GP_CANDIDATES};
    mo.ucb.acquisition = BD_BO_ACQ_LOGEI;
    mo.ucb.multiplier = BD_BO_MULT_PAPER;
    mo.ucb.delta = 0.1;
    mo.ucb.cost_aware = p->cost_aware;
    mo.ucb.cost_exponent = 1.0;
    mo.ucb.initial = BD_BO_INIT_RANDOM;
    bd_bo_model *m = NULL;
    bd_err err;
    int rc = bd_bo_model_new(p->def, &mo, &m, &err);
    assert(rc == 0); /* the only failure, too many parameters, was refused in bd_proposer_create */
    (void)rc;
    return m;
}

/* Counts a result at budget; returns the index of budget in budgets[]. */
static size_t count_budget(bd_proposer *p, double budget)
{
    size_t i = 0;
    while (i < p->n_budgets && p->budgets[i] < budget)
        i++;
    if (i == p->n_budgets || p->budgets[i] != budget) {
        p->budgets = bd_xrealloc(p->budgets, (p->n_budgets + 1) * sizeof *p->budgets);
        p->at_budget = bd_xrealloc(p->at_budget, (p->n_budgets + 1) * sizeof *p->at_budget);
        memmove(&p->budgets[i + 1], &p->budgets[i], (p->n_budgets - i) * sizeof *p->budgets);
        memmove(&p->at_budget[i + 1], &p->at_budget[i], (p->n_budgets - i) * sizeof *p->at_budget);
        if (p->sampler == SAMPLER_GP) {
            p->gp = bd_xrealloc(p->gp, (p->n_budgets + 1) * sizeof *p->gp);
            memmove(&p->gp[i + 1], &p->gp[i], (p->n_budgets - i) * sizeof *p->gp);
            p->gp[i] = gp_model_new(p, budget);
        }
        p->n_budgets++;
        p->budgets[i] = budget;
        p->at_budget[i] = 0;
    }
    p->at_budget[i]++;
    return i;
}

void bd_proposer_set_objectives(bd_proposer *p, size_t m, int constrained)
{
    assert(p->n == 0 && m >= 1);
    p->m = m;
    p->constrained = constrained;
    /* From four objectives a hypervolume (WFG) costs exponentially in m:
     * BOHB's unbounded good group (up to half of 2 BD_PROPOSER_WINDOW rows)
     * made bd_tpe_split's subset selection and weights take minutes per
     * proposal (8 objectives, 700 results at a budget: over 90 s, under the
     * study's lock). Optuna's bound of 25 there, as tpe_mo.c has. */
    if (m >= 4 && p->tpe.max_good > 25)
        p->tpe.max_good = 25;
}

static void add_row(bd_proposer *p, int64_t config_id, const json_t *config, double budget, double loss,
                    const double *losses, double violation, double seconds, double units);

void bd_proposer_add_text(bd_proposer *p, int64_t config_id, const char *config, double budget, double loss,
                          double seconds, double units)
{
    if (p->sampler == SAMPLER_RANDOM)
        return;
    json_t *parsed = bd_json_from_text(config);
    bd_proposer_add(p, config_id, parsed, budget, loss, seconds, units);
    json_decref(parsed);
}

void bd_proposer_add_mo(bd_proposer *p, int64_t config_id, const json_t *config, double budget, const double *losses,
                        double violation, double seconds, double units)
{
    add_row(p, config_id, config, budget, losses[0], losses, violation, seconds, units);
}

void bd_proposer_add_text_mo(bd_proposer *p, int64_t config_id, const char *config, double budget,
                             const double *losses, double violation, double seconds, double units)
{
    if (p->sampler == SAMPLER_RANDOM)
        return;
    json_t *parsed = bd_json_from_text(config);
    add_row(p, config_id, parsed, budget, losses[0], losses, violation, seconds, units);
    json_decref(parsed);
}

void bd_proposer_add(bd_proposer *p, int64_t config_id, const json_t *config, double budget, double loss,
                     double seconds, double units)
{
    add_row(p, config_id, config, budget, loss, &loss, 0, seconds, units);
}

static void add_row(bd_proposer *p, int64_t config_id, const json_t *config, double budget, double loss,
                    const double *losses, double violation, double seconds, double units)
{
    if (p->sampler == SAMPLER_RANDOM || !config)
        return; /* random search learns nothing */
    double *unit = bd_xmalloc(p->d * sizeof *unit);
    if (bd_space_encode(p->space, config, unit)) {
        free(unit);
        return;
    }
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 16;
        p->x = bd_xrealloc(p->x, p->cap * p->d * sizeof *p->x);
        p->loss = bd_xrealloc(p->loss, p->cap * sizeof *p->loss);
        p->budget = bd_xrealloc(p->budget, p->cap * sizeof *p->budget);
        p->log_cost = bd_xrealloc(p->log_cost, p->cap * sizeof *p->log_cost);
        p->config_id = bd_xrealloc(p->config_id, p->cap * sizeof *p->config_id);
        if (p->m) {
            p->losses = bd_xrealloc(p->losses, p->cap * p->m * sizeof *p->losses);
            p->viol = bd_xrealloc(p->viol, p->cap * sizeof *p->viol);
        }
        if (p->sampler == SAMPLER_GP)
            p->u = bd_xrealloc(p->u, p->cap * p->d * sizeof *p->u);
    }
    if (p->sampler == SAMPLER_GP)
        memcpy(p->u + p->n * p->d, unit, p->d * sizeof *unit);
    double *row = p->x + p->n * p->d;
    for (size_t i = 0; i < p->d; i++) {
        const bd_param *par = bd_space_param(p->space, i);
        const json_t *v = json_object_get(config, par->name); /* a valid config holds exactly the active ones */
        if (!v)
            row[i] = NAN;
        else if (par->type == BD_PARAM_CATEGORICAL)
            row[i] = floor(unit[i] * (double)p->dims[i].n_choices);
        else
            row[i] = par->log ? log(json_number_value(v)) : json_number_value(v);
    }
    p->loss[p->n] = isnan(loss) ? INFINITY : loss;
    p->budget[p->n] = budget;
    p->log_cost[p->n] = seconds > 0 && units > 0 && isfinite(seconds / units) ? log(seconds / units) : NAN;
    p->config_id[p->n] = config_id;
    if (p->m) {
        for (size_t o = 0; o < p->m; o++)
            p->losses[p->n * p->m + o] = isnan(losses[o]) ? INFINITY : losses[o];
        p->viol[p->n] = isnan(violation) ? INFINITY : violation;
    }
    p->n++;
    size_t bi = count_budget(p, budget);
    if (p->sampler == SAMPLER_GP) /* the model rebuilds when a proposal needs it */
        bd_bo_model_add_costed(p->gp[bi], unit, 1.0, p->loss[p->n - 1], seconds, units);
    free(unit);
}

/* The budget the model is fitted on: the largest with at least n_startup
 * results; -1 if none. */
static double model_budget(const bd_proposer *p)
{
    for (size_t i = p->n_budgets; i-- > 0;)
        if ((long long)p->at_budget[i] >= p->n_startup)
            return p->budgets[i];
    return -1;
}

/* The rows TPE fits on, in arrival order, with known_bad flags:
 * - the results at budget b: all of them up to BD_PROPOSER_WINDOW, else the
 *   best bd_tpe_n_good of all and the newest others;
 * - every config with results only below b, by its latest result, flagged
 *   known bad: a config not (yet) promoted to b ranks below those that
 *   were, and without it the bad group would hold only promoted, good
 *   configs, and TPE would steer away from the good region (a 3-parameter
 *   bowl in the unit harness: proposals of mean loss 0.19 without them,
 *   0.14 with them, 0.34 at random). Newest first, at most
 *   BD_PROPOSER_WINDOW of them.
 * Returns how many rows were written. */
static size_t fit_rows(const bd_proposer *p, double b, size_t *rows, unsigned char *known_bad)
{
    size_t n = p->n, at_b = 0, m = 0;
    unsigned char *take = bd_xcalloc(n ? n : 1, 1);
    bd_idmap at_b_ids = {0}, seen = {0};
    for (size_t i = 0; i < n; i++)
        if (p->budget[i] == b) {
            at_b++;
            bd_idmap_put(&at_b_ids, p->config_id[i], (void *)1);
        }
    size_t keep = at_b > BD_PROPOSER_WINDOW ? bd_tpe_n_good(&p->tpe, at_b) : 0, n_best = 0;
    size_t *best = bd_xmalloc((keep ? keep : 1) * sizeof *best); /* sorted by (loss, arrival) */
    for (size_t i = 0; i < n && keep; i++) {
        if (p->budget[i] != b)
            continue;
        size_t k = n_best;
        while (k > 0 && p->loss[best[k - 1]] > p->loss[i])
            k--;
        if (k >= keep)
            continue;
        if (n_best < keep)
            n_best++;
        memmove(&best[k + 1], &best[k], (n_best - 1 - k) * sizeof *best);
        best[k] = i;
    }
    for (size_t i = 0; i < n_best; i++)
        take[best[i]] = 1;
    size_t newest_at_b = 0, newest_below = 0;
    for (size_t i = n; i-- > 0;) {
        if (p->budget[i] == b) {
            if (!take[i] && newest_at_b < BD_PROPOSER_WINDOW - n_best) {
                take[i] = 1;
                newest_at_b++;
            }
        } else if (p->budget[i] < b && !bd_idmap_get(&at_b_ids, p->config_id[i]) &&
                   !bd_idmap_get(&seen, p->config_id[i]) && newest_below < BD_PROPOSER_WINDOW) {
            bd_idmap_put(&seen, p->config_id[i], (void *)1); /* its latest result only */
            take[i] = 2;
            newest_below++;
        }
    }
    for (size_t i = 0; i < n; i++)
        if (take[i]) {
            rows[m] = i;
            known_bad[m++] = take[i] == 2;
        }
    bd_idmap_clear(&at_b_ids);
    bd_idmap_clear(&seen);
    free(take);
    free(best);
    return m;
}

/* A GP proposal at budget b: log EI (per predicted second with
 * cost_aware) from the model of b's results, with the newest
 * GP_MAX_PENDING configs known only below b (not promoted to b, or still
 * on their way) hallucinated at b, as GP-BUCB does with running trials:
 * ASHA and Hyperband ask for many new configs between two results at b,
 * and without them every one of those proposals would be the same argmax.
 * NULL when the model cannot propose (the caller draws at random). */
static json_t *gp_propose(bd_proposer *p, double b, bd_rng *rng)
{
    size_t bi = 0;
    while (p->budgets[bi] != b)
        bi++;
    bd_bo_model *m = p->gp[bi];
    if (!bd_bo_model_current(m, bd_bo_model_count(m))) /* a pure function of b's results: see bo_model.h */
        bd_bo_model_rebuild(m);
    if (!bd_bo_model_gp(m))
        return NULL;
    size_t *rows = bd_xmalloc((p->n ? p->n : 1) * sizeof *rows), n_pend = 0;
    unsigned char *below = bd_xcalloc(p->n ? p->n : 1, 1);
    size_t rn = fit_rows(p, b, rows, below);
    const double **run_x = bd_xmalloc(GP_MAX_PENDING * sizeof *run_x);
    for (size_t k = rn; k-- > 0 && n_pend < GP_MAX_PENDING;)
        if (below[k])
            run_x[n_pend++] = p->u + rows[k] * p->d;
    double *u = bd_xmalloc(p->d * sizeof *u), *starts = bd_xmalloc(4 * p->d * sizeof *starts);
    size_t n_starts = bd_bo_model_best_points(m, 4, starts);
    bd_err err;
    json_t *config = NULL;
    if (!bd_bo_model_propose(m, (double)(p->n + 1), n_pend, run_x, n_starts ? starts : NULL, n_starts, rng, u, &err))
        config = bd_space_decode(p->space, u);
    free(u);
    free(starts);
    free(run_x);
    free(rows);
    free(below);
    return config;
}

/* Several objectives or constraints (bd_proposer_set_objectives): the
 * rows at the model's budget are split by bd_tpe_split (tpe.h: feasible
 * first, non-dominated ranks, hypervolume subset selection, MOTPE's below
 * weights), as tpe_mo.c splits a study's results; the configs known only
 * below that budget stay in the bad group, as in the one-objective split.
 * No cost model (tpe_mo.c has none either). */
static void mo_propose(const bd_proposer *p, const size_t *rows, const unsigned char *known_bad, const double *x,
                       size_t n, bd_rng *rng, double *point)
{
    size_t nb = 0, *at = bd_xmalloc((n ? n : 1) * sizeof *at);
    double *l = bd_xmalloc((n ? n : 1) * p->m * sizeof *l), *v = bd_xmalloc((n ? n : 1) * sizeof *v);
    unsigned char *g = bd_xcalloc(n ? n : 1, 1), *good = bd_xcalloc(n ? n : 1, 1);
    double *w = bd_xmalloc((n ? n : 1) * sizeof *w), *weight = bd_xmalloc((n ? n : 1) * sizeof *weight);
    for (size_t i = 0; i < n; i++) {
        if (known_bad[i])
            continue;
        memcpy(l + nb * p->m, p->losses + rows[i] * p->m, p->m * sizeof *l);
        v[nb] = p->viol[rows[i]];
        at[nb++] = i;
    }
    bd_tpe_split(l, p->m, p->constrained ? v : NULL, nb, bd_tpe_n_good(&p->tpe, nb), g, p->m > 1 ? w : NULL);
    for (size_t j = 0; j < n; j++)
        weight[j] = 1;
    for (size_t j = 0; j < nb; j++) {
        good[at[j]] = g[j];
        weight[at[j]] = w[j];
    }
    bd_tpe_propose_split(p->dims, p->d, x, good, p->m > 1 ? weight : NULL, n, &p->tpe, rng, point);
    free(at);
    free(l);
    free(v);
    free(g);
    free(good);
    free(w);
    free(weight);
}

json_t *bd_proposer_propose(bd_proposer *p, bd_rng *rng)
{
    double b = p->sampler != SAMPLER_RANDOM ? model_budget(p) : -1;
    if (b < 0 || (p->random_fraction > 0 && bd_rng_uniform(rng) < p->random_fraction))
        return bd_space_sample(p->space, rng);
    if (p->sampler == SAMPLER_GP) {
        json_t *config = gp_propose(p, b, rng);
        return config ? config : bd_space_sample(p->space, rng);
    }
    size_t *rows = bd_xmalloc(p->n * sizeof *rows);
    unsigned char *known_bad = bd_xcalloc(p->n, 1);
    size_t m = fit_rows(p, b, rows, known_bad);
    double *x = bd_xmalloc(m * p->d * sizeof *x), *loss = bd_xmalloc(m * sizeof *loss);
    for (size_t i = 0; i < m; i++) {
        memcpy(x + i * p->d, p->x + rows[i] * p->d, p->d * sizeof *x);
        loss[i] = p->loss[rows[i]];
    }
    double *point = bd_xmalloc(p->d * sizeof *point), *unit = bd_xmalloc(p->d * sizeof *unit);
    double *log_cost = NULL;
    if (p->m) {
        mo_propose(p, rows, known_bad, x, m, rng, point);
    } else if (p->cost_aware) {
        log_cost = bd_xmalloc(m * sizeof *log_cost);
        for (size_t i = 0; i < m; i++)
            log_cost[i] = p->log_cost[rows[i]];
    }
    if (!p->m)
        bd_tpe_propose(p->dims, p->d, x, loss, known_bad, log_cost, m, &p->tpe, rng, point);
    free(log_cost);
    for (size_t i = 0; i < p->d; i++) { /* back to bd_space_decode's unit cube */
        const bd_param *par = bd_space_param(p->space, i);
        if (par->type == BD_PARAM_CATEGORICAL) {
            unit[i] = (point[i] + 0.5) / (double)p->dims[i].n_choices;
        } else {
            double lo = par->log ? log(par->low) : par->low, hi = par->log ? log(par->high) : par->high;
            unit[i] = hi > lo ? (point[i] - lo) / (hi - lo) : 0.5;
        }
    }
    json_t *config = bd_space_decode(p->space, unit);
    free(point);
    free(unit);
    free(x);
    free(loss);
    free(rows);
    free(known_bad);
    return config;
}

json_t *bd_proposer_describe(const bd_proposer *p)
{
    json_t *results = json_object();
    for (size_t i = 0; i < p->n_budgets; i++) {
        char key[32];
        snprintf(key, sizeof key, "%g", p->budgets[i]);
        json_object_set_new(results, key, json_integer((json_int_t)p->at_budget[i]));
    }
    double b = p->sampler != SAMPLER_RANDOM ? model_budget(p) : -1;
    return json_pack("{s:s, s:o, s:o}", "sampler", bd_proposer_sampler(p), "results", results, "model_budget",
                     b >= 0 ? json_real(b) : json_null());
}
