/* successive_halving.c: Successive Halving (Jamieson & Talwalkar, AISTATS
 * 2016, Figure 3), run as one synchronous bracket (bracket.h).
 *
 * n configs, budget B, K = ceil(log_eta n) rounds (the paper: eta = 2,
 * K = ceil(log2 n)). Round k gives each of the |S_k| configs
 * r_k = floor(B / (|S_k| K)) more units (one unit = resource.min) and ranks
 * them at the cumulative R_k = r_0 + ... + r_k (capped at resource.max);
 * S_{k+1} = the best floor(|S_k|/eta). The best config of the last round is
 * the output ("winner"). Total spend never exceeds B.
 *
 * Differences from the paper, on purpose:
 * - the paper keeps {i : loss_i <= loss of the floor(|S_k|/2)-th}, which can
 *   keep more on ties; banditd keeps exactly floor(|S_k|/eta), ties to the
 *   lower config_id;
 * - a general eta (keep floor(|S_k|/eta), K = ceil(log_eta n)) is the form
 *   Hyperband uses; the default eta = 2 is the paper's;
 * - budgets are counted in units of resource.min, so real-valued resources
 *   work: r_k = r_min * floor(B / (r_min |S_k| K)).
 *
 * Defaults: eta = 2; n = eta^floor(log_eta(resource.max/resource.min)) (at
 * least eta), the number of configs of Hyperband's most exploratory bracket;
 * B = n K r_min, the smallest budget that gives every config one unit in the
 * first round; with n = eta^K its rounds are r_min eta^k more units, so the
 * last one stays below resource.max.
 *
 * Doubling trick (option doubling, paper section 3): B, 2B, 4B, ... on the
 * same n configs, reusing progress: a config already trained to R' gets a
 * trial with budget R (cumulative) and resume_from = its latest trial, i.e.
 * R - R' more units; a config already at or past R gets no trial and keeps
 * its latest loss. The paper starts at B = n; budgets below n K units give
 * r_0 = 0 (nothing observed), so the first B is the smallest n 2^j r_min that
 * is at least n K r_min (or the budget option). The rounds stop after the
 * first one whose round 0 reaches resource.max (all later ones would repeat
 * it). extra carries "iteration" = the doubling round (1, 2, ...).
 *
 * Option "type": "promotion" (default) is the above, for workers that
 * checkpoint. "stopping" (Optuna's SuccessiveHalvingPruner; bracket.h):
 * each of the n configs gets one trial with the last round's cumulative
 * budget R_{K-1}, and a measurement that reaches R_k (k < K-1) answers stop
 * unless the config is in the top 1/eta of what round k has seen (or the
 * round has seen too few to judge). Not with doubling, which re-runs the
 * same configs. */
#include "sched.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bracket.h"
#include "rung.h"

extern const struct bd_sched_ops bd_sched_successive_halving;

#define SH_MAX_ITERATIONS 62

typedef struct sh_sched {
    bd_sched base;
    const bd_study_def *def;
    unsigned eta;
    long long n;
    int rounds;    /* K = ceil(log_eta n) */
    double budget; /* B of the first (or only) run */
    int doubling;
    int max_retries;
    int stopping; /* option type: "stopping" */
    bd_bkset set;
} sh_sched;

static double sh_round(const sh_sched *h, double x)
{
    return bd_budget_round(x, h->def->r_min, h->def->r_max, h->def->resource_integer);
}

static void sh_spec(const sh_sched *h, int64_t iteration, bd_bk_spec *out)
{
    double B = ldexp(h->budget, (int)(iteration - 1));
    double pulls = 0;
    long long size = h->n;
    memset(out, 0, sizeof *out);
    out->iteration = iteration;
    out->nrungs = h->rounds;
    out->reuse_arms = iteration > 1;
    for (int k = 0; k < h->rounds; k++) {
        out->n[k] = size;
        pulls += floor(B / (h->def->r_min * (double)size * h->rounds) + 1e-9);
        out->budget[k] = sh_round(h, pulls * h->def->r_min);
        size /= h->eta;
    }
}

static int sh_plan(const void *ud, const bd_bk_spec *prev, bd_bk_spec *next)
{
    const sh_sched *h = ud;
    if (!prev) {
        sh_spec(h, 1, next);
        return 1;
    }
    if (!h->doubling || prev->iteration >= SH_MAX_ITERATIONS || prev->budget[0] >= sh_round(h, h->def->r_max))
        return 0;
    sh_spec(h, prev->iteration + 1, next);
    return 1;
}

static int sh_options(sh_sched *h, const bd_study_def *def, bd_err *err)
{
    static const char *const known[] = {"n", "budget", "eta", "doubling", "max_retries", "type", BD_PROPOSER_OPTIONS,
                                        NULL};
    static const char *const types[] = {"promotion", "stopping", NULL};
    const json_t *o = def->options;
    const char *type;
    long long eta, n, retries;
    int rc;
    if ((rc = bd_opt_known(o, known, err)) || (rc = bd_opt_int(o, "eta", 2, 2, 1000, &eta, err)) ||
        (rc = bd_opt_string(o, "type", "promotion", types, &type, err)))
        return rc;
    h->stopping = strcmp(type, "stopping") == 0;
    if (!(def->r_min > 0))
        return bd_err_set(err, BD_EINVAL, "resource.min", "Successive Halving needs a resource minimum above 0");
    int levels = bd_budget_levels(def->r_min, def->r_max, (unsigned)eta, 40);
    long long dflt_n = (long long)bd_pow((unsigned)eta, levels < 1 ? 1 : levels);
    if (dflt_n > 10000000LL)
        dflt_n = 10000000LL;
    if ((rc = bd_opt_int(o, "n", dflt_n, 2, 10000000LL, &n, err)) ||
        (rc = bd_opt_bool(o, "doubling", 0, &h->doubling, err)) ||
        (rc = bd_opt_int(o, "max_retries", 2, 0, 100, &retries, err)))
        return rc;
    if (h->stopping && h->doubling)
        return bd_err_set(err, BD_EINVAL, "scheduler.options.type",
                          "\"stopping\" trains each config once; it cannot be combined with doubling");
    h->eta = (unsigned)eta;
    h->n = n;
    h->max_retries = (int)retries;
    h->rounds = 0;
    for (double p = 1; p < (double)n; p *= h->eta)
        h->rounds++;
    double least = (double)n * h->rounds * def->r_min;
    double dflt_b = least;
    if (h->doubling)
        for (dflt_b = (double)n * def->r_min; dflt_b < least * (1 - 1e-12);)
            dflt_b *= 2;
    if ((rc = bd_opt_number(o, "budget", dflt_b, 0, 1e300, &h->budget, err)))
        return rc;
    if (h->budget < least * (1 - 1e-9))
        return bd_err_set(err, BD_EINVAL, "scheduler.options.budget",
                          "must be at least n * ceil(log_eta n) * resource.min = %g, so that every config gets "
                          "one unit in the first round",
                          least);
    return 0;
}

static int sh_create(const bd_study_def *def, bd_sched **out, bd_err *err)
{
    sh_sched *h = bd_xcalloc(1, sizeof *h);
    bd_proposer *proposer = NULL;
    h->def = def;
    int rc = sh_options(h, def, err);
    if (!rc)
        rc = bd_proposer_create(def, "random", 1, &proposer, err);
    if (rc) {
        free(h);
        return rc;
    }
    h->base.ops = &bd_sched_successive_halving;
    bd_bk_init(&h->set, def, h->max_retries, h->doubling, sh_plan, h, proposer);
    if (h->stopping)
        bd_bk_set_stopping(&h->set, h->eta);
    *out = &h->base;
    return 0;
}

static int sh_suggest(bd_sched *s, const bd_suggest_ctx *ctx, bd_suggestion *out, bd_err *err)
{
    (void)err;
    return bd_bk_suggest(&((sh_sched *)s)->set, ctx, out);
}

static int sh_observe(bd_sched *s, const bd_observe_ctx *ctx, const bd_event *ev, bd_decision *out, bd_err *err)
{
    (void)ctx;
    (void)err;
    bd_bk_observe(&((sh_sched *)s)->set, ev, out);
    return 0;
}

static bd_sched_status sh_status(const bd_sched *s)
{
    return bd_bk_status(&((const sh_sched *)s)->set);
}

static int sh_describe(const bd_sched *s, json_t **out)
{
    const sh_sched *h = (const sh_sched *)s;
    bd_bk_spec first;
    sh_spec(h, 1, &first);
    json_t *j = bd_bk_describe(&h->set);
    json_t *plan = bd_bk_spec_json(&first);
    json_object_del(plan, "iteration");
    json_object_set_new(j, "n", json_integer(h->n));
    json_object_set_new(j, "eta", json_integer(h->eta));
    json_object_set_new(j, "rounds", json_integer(h->rounds));
    json_object_set_new(j, "budget", json_real(h->budget));
    json_object_set_new(j, "doubling", json_boolean(h->doubling));
    json_object_set_new(j, "plan", plan);
    *out = j;
    return 0;
}

static size_t sh_held_bytes(const bd_sched *s)
{
    return sizeof(sh_sched) + bd_bk_held_bytes(&((const sh_sched *)s)->set);
}

static void sh_destroy(bd_sched *s)
{
    if (!s)
        return;
    bd_bk_free(&((sh_sched *)s)->set);
    free(s);
}

const struct bd_sched_ops bd_sched_successive_halving = {
    .abi = BD_SCHED_ABI,
    .name = "successive_halving",
    .multi_fidelity = 1,
    .create = sh_create,
    .suggest = sh_suggest,
    .observe = sh_observe,
    .status = sh_status,
    .describe = sh_describe,
    .destroy = sh_destroy,
    .takes_enqueued = 1,
    .learns_from_prior = 1,
    .continues_by_id = 1,
    .held_bytes = sh_held_bytes,
};
