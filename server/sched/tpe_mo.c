/* tpe_mo.c: `tpe` for studies with several objectives or constraints, as
 * Optuna 3.1's TPESampler runs them (optuna/samplers/_tpe/sampler.py):
 * MOTPE (Ozaki, Tanigaki, Watanabe, Onishi, GECCO 2020) with several
 * directions, and constraints_func's rules.
 *
 * Every trial is a fresh config at the full budget (resource.max), as in
 * random.h's loop. The first n_startup_trials configs are random; then each
 * proposal splits the results (completed trials and warm starts, in arrival
 * order) into below and above with bd_tpe_split (model/tpe.h): with
 * constraints the feasible ones first (infeasible ones, diverged runs
 * included, are above, ranked by violation when too few are feasible);
 * several objectives by non-dominated rank, the last rank that does not
 * fit cut by greedy hypervolume subset selection; gamma(n) = min(ceil(0.1
 * n), 25) below. The below group's estimator weighs each result by its
 * hypervolume contribution (several objectives; Optuna's weights), the
 * above group's by Optuna's default weights; the proposal is the candidate
 * of the below estimator with the largest log l - log g (univariate, or
 * multivariate with the option), as for one objective (model/tpe.h).
 *
 * Options: tpe's (max_trials, sampler "tpe", n_startup_trials 10,
 * n_ei_candidates 24, gamma 0.1, prior_weight 1, multivariate false,
 * random_fraction 0). cost_aware is refused when true (a cost is an
 * objective here); "stopping" (stopping_rule.h) only with one objective and
 * constraints, since Optuna's pruners judge one objective.
 *
 * The window: a proposal reads at most BD_TPE_MO_WINDOW + BD_TPE_MO_ELITE
 * (1,000 + 250) results, the newest 1,000 and the elite older than them,
 * so every result while there are at most 1,000 (Optuna's decisions). The
 * elite, kept as results arrive: the results beaten by fewer than
 * max_good (25) others in the split's order (feasible first, then the
 * smaller violation; among the feasible Pareto dominance, the smaller loss
 * with one objective; ties to the older), counted among the elite. A row
 * the split can put below is beaten by fewer than n_good <= 25 (its
 * dominators are in the better ranks, all below), and so are the rows of
 * its rank and the better ones, so the window's below group is the full
 * split's; what is above is the newest results, as the one-objective
 * proposer's window (proposer.h). Only a front of more than 250 (values
 * anti-correlated) fills the elite: then the most beaten row leaves, the
 * oldest of them, and the split approximates on the 1,250.
 *
 * State, a pure function of the events: the window's and the elite's
 * coordinates, losses and violations (d + m + 1 numbers a row, at most
 * 1,251 rows), and the running trials' configs. Cost: a result
 * O(250 m) (a removal from the elite O(250 (d + m))); a proposal the
 * split's O(m n f) for the f of the n <= 1,250 rows in the ranks it peels
 * plus O(n_candidates n d) for the estimators. */
#include "tpe_mo.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../model/tpe.h"
#include "idmap.h"
#include "proposer.h"
#include "stopping_rule.h"

/* The window (above): the newest results, and at most BD_TPE_MO_ELITE older ones. */
#define BD_TPE_MO_WINDOW BD_PROPOSER_WINDOW
#define BD_TPE_MO_ELITE 250

extern const struct bd_sched_ops bd_sched_tpe;
static const struct bd_sched_ops bd_sched_tpe_mo;

typedef struct tpe_mo {
    bd_sched base;
    const bd_study_def *def;
    size_t d, m;     /* parameters, objectives */
    int constrained; /* def->n_constraints > 0 */
    long long max_trials, created, running, given_back;
    long long n_startup;
    double random_fraction;
    bd_tpe_opts tpe;
    bd_tpe_dim *dims; /* d */
    /* the newest BD_TPE_MO_WINDOW results: result s (arrival order) in slot s % BD_TPE_MO_WINDOW */
    double *x;    /* cap rows of d coordinates (model/tpe.h) */
    double *loss; /* cap rows of m minimized values */
    double *viol; /* cap violations (0 without constraints) */
    size_t n, cap, n_feasible; /* n: results so far */
    /* the elite (see above): en rows in arrival order, each a copy */
    double *ex, *eloss, *eviol;
    size_t *eseq, *ecnt; /* its arrival number; how many elite rows beat it */
    size_t en, ecap;
    bd_idmap runs;      /* trial_id -> its config (own reference) until it ends */
    bd_stop_rule *stop; /* option "stopping", or NULL */
} tpe_mo;

int bd_tpe_mo_create(const bd_study_def *def, const char *const *known, bd_sched **out, bd_err *err)
{
    static const char *const samplers[] = {"tpe", NULL};
    const json_t *o = def->options;
    const char *sampler;
    long long max_trials, n_startup, n_cand;
    double gamma, prior_weight, random_fraction;
    int multivariate, cost_aware, rc;
    bd_stop_rule *stop = NULL;
    if ((rc = bd_opt_known(o, known, err)) || (rc = bd_opt_int(o, "max_trials", 0, 0, 1000000000LL, &max_trials, err)) ||
        (rc = bd_opt_string(o, "sampler", "tpe", samplers, &sampler, err)) ||
        (rc = bd_opt_int(o, "n_startup_trials", 10, 1, 100000, &n_startup, err)) ||
        (rc = bd_opt_int(o, "n_ei_candidates", 24, 1, BD_TPE_MAX_CANDIDATES, &n_cand, err)) ||
        (rc = bd_opt_number(o, "gamma", 0.1, 0.01, 0.5, &gamma, err)) ||
        (rc = bd_opt_number(o, "prior_weight", 1.0, 1e-6, 100.0, &prior_weight, err)) ||
        (rc = bd_opt_bool(o, "multivariate", 0, &multivariate, err)) ||
        (rc = bd_opt_number(o, "random_fraction", 0.0, 0.0, 1.0, &random_fraction, err)) ||
        (rc = bd_opt_bool(o, "cost_aware", 0, &cost_aware, err)))
        return rc;
    if (cost_aware)
        return bd_err_set(err, BD_EINVAL, "scheduler.options.cost_aware",
                          "tpe with several objectives or constraints is not cost-aware (make the cost an objective)");
    if (def->n_objectives > 1 && json_object_get(o, BD_STOP_RULE_OPTION) &&
        !json_is_null(json_object_get(o, BD_STOP_RULE_OPTION)))
        return bd_err_set(err, BD_EINVAL, "scheduler.options.stopping",
                          "the stopping rules judge one objective; this study has %zu", def->n_objectives);
    if (bd_space_size(def->space) > BD_TPE_MAX_DIM)
        return bd_err_set(err, BD_EINVAL, "parameters", "tpe handles at most %d parameters, not %zu", BD_TPE_MAX_DIM,
                          bd_space_size(def->space));
    if ((rc = bd_stop_rule_create(def, &stop, err)))
        return rc;
    tpe_mo *r = bd_xcalloc(1, sizeof *r);
    r->base.ops = &bd_sched_tpe_mo;
    r->def = def;
    r->d = bd_space_size(def->space);
    r->m = def->n_objectives > 1 ? def->n_objectives : 1;
    r->constrained = def->n_constraints > 0;
    r->max_trials = max_trials;
    r->n_startup = n_startup;
    r->random_fraction = random_fraction;
    bd_tpe_opts_default(&r->tpe);
    r->tpe.gamma = gamma;
    r->tpe.prior_weight = prior_weight;
    r->tpe.n_candidates = (int)n_cand;
    r->tpe.multivariate = multivariate;
    r->dims = bd_xcalloc(r->d ? r->d : 1, sizeof *r->dims);
    for (size_t i = 0; i < r->d; i++)
        r->dims[i] = bd_proposer_tpe_dim(bd_space_param(def->space, i));
    r->stop = stop;
    *out = &r->base;
    return 0;
}

/* The registry's create (tpe.c), so a scheduler rebuilt from these ops is
 * built as the engine builds it. */
static int mo_create(const bd_study_def *def, bd_sched **out, bd_err *err)
{
    return bd_sched_tpe.create(def, out, err);
}

static bd_sched_status mo_status(const bd_sched *s)
{
    const tpe_mo *r = (const tpe_mo *)s;
    if (r->max_trials && r->created - r->given_back >= r->max_trials)
        return r->running ? BD_STATUS_WAITING : BD_STATUS_DONE;
    return BD_STATUS_RUNNING;
}

/* Whether row a beats row b in the split's order (arrival a_older): feasible
 * before infeasible; among the infeasible the smaller violation; among the
 * feasible Pareto dominance, and with one objective the smaller loss.
 * Ties go to the older row where bd_tpe_split gives them to it (one
 * objective, violations). Transitive. */
static int beats(const double *la, double va, const double *lb, double vb, size_t m, int a_older)
{
    if (va != 0 || vb != 0) {
        if (va == 0 || vb == 0)
            return va == 0;
        return va < vb || (va == vb && a_older);
    }
    if (m == 1)
        return la[0] < lb[0] || (la[0] == lb[0] && a_older);
    int strictly = 0;
    for (size_t j = 0; j < m; j++) {
        if (la[j] > lb[j])
            return 0;
        strictly |= la[j] < lb[j];
    }
    return strictly;
}

/* Removes elite row i; the rows it beat lose one. */
static void elite_remove(tpe_mo *r, size_t i)
{
    size_t d = r->d ? r->d : 1, m = r->m;
    for (size_t j = 0; j < r->en; j++)
        if (j != i && beats(r->eloss + i * m, r->eviol[i], r->eloss + j * m, r->eviol[j], m, r->eseq[i] < r->eseq[j]))
            r->ecnt[j]--;
    size_t after = r->en - i - 1;
    memmove(r->ex + i * d, r->ex + (i + 1) * d, after * d * sizeof *r->ex);
    memmove(r->eloss + i * m, r->eloss + (i + 1) * m, after * m * sizeof *r->eloss);
    memmove(r->eviol + i, r->eviol + i + 1, after * sizeof *r->eviol);
    memmove(r->eseq + i, r->eseq + i + 1, after * sizeof *r->eseq);
    memmove(r->ecnt + i, r->ecnt + i + 1, after * sizeof *r->ecnt);
    r->en--;
}

/* Offers the newest result (row, loss, viol; arrival number seq) to the
 * elite: O(BD_TPE_MO_ELITE m), a removal O(BD_TPE_MO_ELITE (d + m)). */
static void elite_add(tpe_mo *r, const double *row, const double *loss, double viol, size_t seq)
{
    size_t d = r->d ? r->d : 1, m = r->m, k = (size_t)r->tpe.max_good, beaten = 0;
    for (size_t i = 0; i < r->en; i++)
        beaten += (size_t)beats(r->eloss + i * m, r->eviol[i], loss, viol, m, 1);
    if (beaten >= k)
        return;
    for (size_t i = 0; i < r->en; i++)
        r->ecnt[i] += (size_t)beats(loss, viol, r->eloss + i * m, r->eviol[i], m, 0);
    if (r->en == r->ecap) {
        r->ecap = r->ecap ? 2 * r->ecap : 16;
        if (r->ecap > BD_TPE_MO_ELITE + 1)
            r->ecap = BD_TPE_MO_ELITE + 1;
        r->ex = bd_xrealloc(r->ex, r->ecap * d * sizeof *r->ex);
        r->eloss = bd_xrealloc(r->eloss, r->ecap * m * sizeof *r->eloss);
        r->eviol = bd_xrealloc(r->eviol, r->ecap * sizeof *r->eviol);
        r->eseq = bd_xrealloc(r->eseq, r->ecap * sizeof *r->eseq);
        r->ecnt = bd_xrealloc(r->ecnt, r->ecap * sizeof *r->ecnt);
    }
    memcpy(r->ex + r->en * d, row, d * sizeof *row);
    memcpy(r->eloss + r->en * m, loss, m * sizeof *loss);
    r->eviol[r->en] = viol;
    r->eseq[r->en] = seq;
    r->ecnt[r->en] = beaten;
    r->en++;
    for (size_t i = 0; i < r->en;) /* rows now beaten by k can no longer be below */
        if (r->ecnt[i] >= k)
            elite_remove(r, i);
        else
            i++;
    if (r->en > BD_TPE_MO_ELITE) { /* full: the most beaten row leaves, the oldest of them */
        size_t worst = 0;
        for (size_t i = 1; i < r->en; i++)
            if (r->ecnt[i] > r->ecnt[worst])
                worst = i;
        elite_remove(r, worst);
    }
}

/* The TPE proposal from the split of the window: the elite rows older than
 * the newest BD_TPE_MO_WINDOW results, then those (arrival order). New
 * reference. */
static json_t *propose(const tpe_mo *r, bd_rng *rng)
{
    size_t d = r->d, dd = d ? d : 1, m = r->m;
    size_t n_new = r->n < BD_TPE_MO_WINDOW ? r->n : BD_TPE_MO_WINDOW, first = r->n - n_new, n_old = 0;
    while (n_old < r->en && r->eseq[n_old] < first)
        n_old++;
    size_t n = n_old + n_new;
    double *x = bd_xmalloc(n * dd * sizeof *x), *loss = bd_xmalloc(n * m * sizeof *loss);
    double *viol = bd_xmalloc(n * sizeof *viol);
    if (n_old) {
        memcpy(x, r->ex, n_old * dd * sizeof *x);
        memcpy(loss, r->eloss, n_old * m * sizeof *loss);
        memcpy(viol, r->eviol, n_old * sizeof *viol);
    }
    for (size_t k = 0; k < n_new; k++) {
        size_t slot = (first + k) % BD_TPE_MO_WINDOW;
        memcpy(x + (n_old + k) * dd, r->x + slot * dd, dd * sizeof *x);
        memcpy(loss + (n_old + k) * m, r->loss + slot * m, m * sizeof *loss);
        viol[n_old + k] = r->viol[slot];
    }
    unsigned char *good = bd_xmalloc(n);
    double *w = m > 1 ? bd_xmalloc(n * sizeof *w) : NULL;
    double *point = bd_xmalloc(dd * sizeof *point), *unit = bd_xmalloc(dd * sizeof *unit);
    bd_tpe_split(loss, m, r->constrained ? viol : NULL, n, bd_tpe_n_good(&r->tpe, n), good, w);
    bd_tpe_propose_split(r->dims, d, x, good, w, n, &r->tpe, rng, point);
    for (size_t i = 0; i < d; i++) { /* back to bd_space_decode's unit cube (as proposer.c) */
        const bd_param *par = bd_space_param(r->def->space, i);
        if (par->type == BD_PARAM_CATEGORICAL) {
            unit[i] = (point[i] + 0.5) / (double)r->dims[i].n_choices;
        } else {
            double lo = par->log ? log(par->low) : par->low, hi = par->log ? log(par->high) : par->high;
            unit[i] = hi > lo ? (point[i] - lo) / (hi - lo) : 0.5;
        }
    }
    json_t *config = bd_space_decode(r->def->space, unit);
    free(x);
    free(loss);
    free(viol);
    free(good);
    free(w);
    free(point);
    free(unit);
    return config;
}

static int mo_suggest(bd_sched *s, const bd_suggest_ctx *ctx, bd_suggestion *out, bd_err *err)
{
    tpe_mo *r = (tpe_mo *)s;
    (void)err;
    bd_sched_status st = mo_status(s);
    if (st != BD_STATUS_RUNNING)
        return st == BD_STATUS_DONE ? BD_SUGGEST_DONE : BD_SUGGEST_WAIT;
    bd_rng rng = ctx->rng;
    if ((long long)r->n < r->n_startup || (r->random_fraction > 0 && bd_rng_uniform(&rng) < r->random_fraction))
        out->config = bd_space_sample(r->def->space, &rng);
    else
        out->config = propose(r, &rng);
    out->budget = r->def->r_max;
    return BD_SUGGEST_TRIAL;
}

/* Takes in one result (config borrowed); a config that does not fit the
 * space is ignored (never happens for stored events). */
static void add_result(tpe_mo *r, const json_t *config, const bd_event *ev)
{
    size_t d = r->d, m = r->m;
    double *unit = bd_xmalloc((d ? d : 1) * sizeof *unit);
    if (!config || bd_space_encode(r->def->space, config, unit)) {
        free(unit);
        return;
    }
    if (r->n == r->cap && r->cap < BD_TPE_MO_WINDOW) {
        r->cap = r->cap ? 2 * r->cap : 16;
        if (r->cap > BD_TPE_MO_WINDOW)
            r->cap = BD_TPE_MO_WINDOW;
        r->x = bd_xrealloc(r->x, r->cap * (d ? d : 1) * sizeof *r->x);
        r->loss = bd_xrealloc(r->loss, r->cap * m * sizeof *r->loss);
        r->viol = bd_xrealloc(r->viol, r->cap * sizeof *r->viol);
    }
    size_t slot = r->n % BD_TPE_MO_WINDOW;
    double *row = r->x + slot * (d ? d : 1);
    for (size_t i = 0; i < d; i++) {
        const bd_param *par = bd_space_param(r->def->space, i);
        const json_t *v = json_object_get(config, par->name);
        if (!v)
            row[i] = NAN;
        else if (par->type == BD_PARAM_CATEGORICAL)
            row[i] = floor(unit[i] * (double)r->dims[i].n_choices);
        else
            row[i] = par->log ? log(json_number_value(v)) : json_number_value(v);
    }
    for (size_t j = 0; j < m; j++) {
        double v = m > 1 ? (ev->losses ? ev->losses[j] : INFINITY) : ev->loss;
        r->loss[slot * m + j] = isnan(v) ? INFINITY : v;
    }
    double viol = r->constrained ? ev->violation : 0;
    r->viol[slot] = isnan(viol) ? INFINITY : viol;
    r->n_feasible += r->viol[slot] == 0;
    elite_add(r, row, r->loss + slot * m, r->viol[slot], r->n);
    r->n++;
    free(unit);
}

static json_t *take_config(tpe_mo *r, int64_t trial_id)
{
    json_t *config = bd_idmap_get(&r->runs, trial_id);
    if (config)
        bd_idmap_remove(&r->runs, trial_id);
    return config;
}

static int mo_observe(bd_sched *s, const bd_observe_ctx *ctx, const bd_event *ev, bd_decision *out, bd_err *err)
{
    tpe_mo *r = (tpe_mo *)s;
    json_t *config;
    (void)ctx;
    (void)err;
    bd_stop_rule_observe(r->stop, ev, out); /* NULL without the option "stopping" */
    switch (ev->type) {
    case BD_EV_CREATED:
        r->created++;
        r->running++;
        if (ev->config)
            bd_idmap_put(&r->runs, ev->trial_id, json_incref((json_t *)ev->config));
        break;
    case BD_EV_FAILED:
    case BD_EV_EXPIRED:
        r->given_back++;
        r->running--;
        json_decref(take_config(r, ev->trial_id));
        break;
    case BD_EV_COMPLETED:
    case BD_EV_STOPPED: /* a stopped trial is not learnt from (Optuna's MOTPE skips pruned ones) */
        r->running--;
        config = take_config(r, ev->trial_id);
        if (ev->type == BD_EV_COMPLETED)
            add_result(r, config, ev);
        json_decref(config);
        break;
    case BD_EV_PRIOR: /* a warm start, fitted like a completed trial */
        add_result(r, ev->config, ev);
        break;
    case BD_EV_MEASUREMENT:
        break;
    }
    return 0;
}

static int mo_describe(const bd_sched *s, json_t **out)
{
    const tpe_mo *r = (const tpe_mo *)s;
    json_t *model = json_pack("{s:s, s:I, s:I, s:I, s:b}", "sampler", "tpe", "results", (json_int_t)r->n, "feasible",
                              (json_int_t)r->n_feasible, "objectives", (json_int_t)r->m, "fitted",
                              (long long)r->n >= r->n_startup);
    *out = json_pack("{s:I, s:I, s:I, s:I, s:o}", "max_trials", (json_int_t)r->max_trials, "created",
                     (json_int_t)r->created, "running", (json_int_t)r->running, "given_back",
                     (json_int_t)r->given_back, "model", model);
    if (*out && r->stop)
        json_object_set_new(*out, "stopping", bd_stop_rule_describe(r->stop));
    return *out ? 0 : BD_EINTERNAL;
}

static void mo_destroy(bd_sched *s)
{
    tpe_mo *r = (tpe_mo *)s;
    if (!r)
        return;
    for (size_t i = 0; i < r->runs.cap; i++)
        if (r->runs.slots[i].key)
            json_decref(r->runs.slots[i].value);
    bd_idmap_clear(&r->runs);
    bd_stop_rule_free(r->stop);
    free(r->dims);
    free(r->x);
    free(r->loss);
    free(r->viol);
    free(r->ex);
    free(r->eloss);
    free(r->eviol);
    free(r->eseq);
    free(r->ecnt);
    free(r);
}

/* The window's and the elite's d + m + 1 numbers a row (bounded: at most
 * BD_TPE_MO_WINDOW + BD_TPE_MO_ELITE + 1 rows) and each running trial's
 * config (~64 bytes of JSON nodes a value, as random.c counts). */
static size_t mo_held_bytes(const bd_sched *s)
{
    const tpe_mo *r = (const tpe_mo *)s;
    size_t values = r->d + 1, row = ((r->d ? r->d : 1) + r->m + 1) * sizeof(double);
    size_t bytes = BD_HEAP_BLOCK(sizeof *r) + BD_HEAP_BLOCK(r->d * sizeof *r->dims) + r->cap * row +
                   3 * BD_HEAP_BLOCK(0) + r->ecap * (row + 2 * sizeof(size_t)) + 5 * BD_HEAP_BLOCK(0) +
                   r->runs.count * 64 * values + r->runs.cap * sizeof(bd_idmap_slot) + bd_stop_rule_held_bytes(r->stop);
    return bytes + bytes / 8 + 1024;
}

static const struct bd_sched_ops bd_sched_tpe_mo = {
    .abi = BD_SCHED_ABI,
    .name = "tpe",
    .create = mo_create,
    .suggest = mo_suggest,
    .observe = mo_observe,
    .status = mo_status,
    .describe = mo_describe,
    .destroy = mo_destroy,
    .takes_enqueued = 1,
    .learns_from_prior = 1,
    .held_bytes = mo_held_bytes,
    .multi_objective = 1,
    .takes_constraints = 1,
};
