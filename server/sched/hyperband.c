/* hyperband.c: Hyperband (Li, Jamieson, DeSalvo, Rostamizadeh, Talwalkar,
 * JMLR 2018), Algorithm 1 (finite horizon) and the infinite-horizon variant
 * of Figure 9, run as synchronous successive-halving brackets (bracket.h).
 *
 * Finite (mode "finite"): R = resource.max in units of r_min (option r_min,
 * default resource.min); s_max = the largest s with r_min*eta^s <= R, found
 * with integers (rung.h); B = (s_max+1)R. Bracket s = s_max..0 has
 * n = ceil((s_max+1) eta^s / (s+1)) configs and rungs i = 0..s with
 * n_i = floor(n eta^-i) configs at budget r_i = R eta^(i-s); each rung keeps
 * its best floor(n_i/eta) = n_{i+1}. Integer resources use
 * r_i = floor(R eta^(i-s)) (the paper's Figure 10), at least ceil(r_min).
 * Options (paper section 2.5-2.6): n_max sets s_max = floor(log_eta n_max)
 * (then B = (s_max+1)R with that s_max, as the paper says); s_min keeps only
 * brackets s >= s_min (the paper phrases it as n_min, s = floor(log_eta n_min));
 * exploratory_only keeps the s = s_max bracket alone. iterations (default 1,
 * 0 = forever) repeats the outer loop; the paper recommends repeating it
 * indefinitely and the earlier spec repeats "while the study has budget left"
 * (docs/ALGORITHMS.md section 2.1, "Repetition")
 * (a study has no total budget in the API), banditd ends a study after one
 * pass unless asked, so that a study finishes by default. Repetitions are
 * labelled "iteration" in extra. total_budget (resource units, default 0 =
 * no cap; both modes) is the study's budget: the plan repeats while the next
 * bracket's planned spend still fits, counting what brackets train when
 * promotions resume (bd_bk_spec_spend), so the study never plans more than
 * total_budget; a bracket is never cut short. Setting total_budget makes
 * iterations default to 0 (repeat until the budget is spent). Retries of failed trials come
 * on top of the plan.
 *
 * Infinite (mode "infinite", Figure 9): for k = 1, 2, ..., for l = 1, 2, ...
 * with k - l >= log2(l) (tested as 2^(k-l) >= l), run SH with B = 2^k and
 * n = 2^l: l rounds with |S_j| = 2^(l-j) and r_j = floor(2^k / (|S_j| l))
 * more units of r_min each; the last round's best config is the bracket's
 * output. l starts at 1: the paper's l in N cannot be 0 (n = 1 has zero
 * rounds). Budgets are capped at resource.max (a config that already reached
 * it carries its loss over). extra = {"bracket": l, "rung": j,
 * "iteration": k}; iterations (default 0 = forever) bounds k. eta is 2.
 *
 * Brackets run concurrently (paper section 6.1 on parallelism): while one
 * bracket's rung waits for stragglers, the next bracket starts.
 *
 * Option "type": "promotion" (default) is the above: a promoted config gets
 * a new trial with resume_from, for workers that checkpoint. "stopping"
 * (Optuna's HyperbandPruner, Syne Tune's type="stopping"; bracket.h): each
 * of a bracket's n_0 configs gets one trial with the bracket's last budget
 * (resource.max in finite mode), and a measurement that reaches rung i's
 * budget answers stop unless the config is in the top 1/eta of what rung i
 * has seen (or the rung has seen too few to judge). No promotions, so no
 * rung waits for stragglers. total_budget then counts a bracket's planned
 * spend as if exactly n_{i+1} configs went on from each rung i. */
#include "sched.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bracket.h"
#include "rung.h"

extern const struct bd_sched_ops bd_sched_hyperband;

#define HB_MAX_K 60        /* infinite horizon: 2^k must fit in 64 bits */
#define HB_MAX_CONFIGS 1e9 /* most exploratory bracket; more needs n_max */

typedef struct hb_sched {
    bd_sched base;
    const bd_study_def *def;
    int infinite;
    unsigned eta;
    double r_min;
    int s_max;            /* from R / r_min alone */
    int s_top;            /* after n_max: the most exploratory bracket */
    int s_bottom;         /* after s_min / exploratory_only: the least exploratory */
    long long iterations; /* 0 = forever */
    double total_budget;  /* 0 = no cap on the planned resource */
    int max_retries;
    int stopping; /* option type: "stopping" */
    bd_bkset set;
} hb_sched;

static double hb_round(const hb_sched *h, double x)
{
    return bd_budget_round(x, h->r_min, h->def->r_max, h->def->resource_integer);
}

static void finite_spec(const hb_sched *h, int64_t iteration, int s, bd_bk_spec *out)
{
    memset(out, 0, sizeof *out);
    out->iteration = iteration;
    out->s = s;
    out->nrungs = s + 1;
    long long es = (long long)bd_pow(h->eta, s);
    long long n = ((long long)(h->s_top + 1) * es + s) / (s + 1); /* ceil((s_top+1) eta^s / (s+1)) */
    for (int i = 0; i <= s; i++) {
        out->n[i] = n / (long long)bd_pow(h->eta, i);
        out->budget[i] = i == s ? hb_round(h, h->def->r_max) : hb_round(h, h->def->r_max / bd_pow(h->eta, s - i));
    }
}

static int infinite_fits(int64_t k, int l)
{
    return l >= 1 && l <= k && (k - l >= 62 || (1LL << (k - l)) >= l);
}

static void infinite_spec(const hb_sched *h, int64_t k, int l, bd_bk_spec *out)
{
    memset(out, 0, sizeof *out);
    out->iteration = k;
    out->s = l;
    out->nrungs = l;
    double pulls = 0;
    for (int j = 0; j < l; j++) {
        long long size = 1LL << (l - j);
        out->n[j] = size;
        pulls += floor(ldexp(1.0, (int)k) / ((double)size * l));
        out->budget[j] = hb_round(h, pulls * h->r_min);
    }
}

static int next_bracket(const hb_sched *h, const bd_bk_spec *prev, bd_bk_spec *next);

/* The plan: the next bracket of the schedule, while it fits total_budget. */
static int hb_plan(const void *ud, const bd_bk_spec *prev, bd_bk_spec *next)
{
    const hb_sched *h = ud;
    if (!next_bracket(h, prev, next))
        return 0;
    next->spend_before = prev ? prev->spend_before + bd_bk_spec_spend(prev) : 0;
    return !h->total_budget || next->spend_before + bd_bk_spec_spend(next) <= h->total_budget;
}

static int next_bracket(const hb_sched *h, const bd_bk_spec *prev, bd_bk_spec *next)
{
    if (h->infinite) {
        int64_t k = prev ? prev->iteration : 1;
        int l = prev ? prev->s + 1 : 1;
        if (!infinite_fits(k, l)) {
            k++;
            l = 1;
            if ((h->iterations && k > h->iterations) || k > HB_MAX_K)
                return 0;
        }
        infinite_spec(h, k, l, next);
        return 1;
    }
    int64_t it = prev ? prev->iteration : 1;
    int s = prev ? prev->s - 1 : h->s_top;
    if (s < h->s_bottom) {
        it++;
        s = h->s_top;
        if (h->iterations && it > h->iterations)
            return 0;
    }
    finite_spec(h, it, s, next);
    return 1;
}

static int reject_in_infinite(const json_t *opts, const char *key, bd_err *err)
{
    char field[128];
    if (!json_object_get(opts, key))
        return 0;
    snprintf(field, sizeof field, "scheduler.options.%s", key);
    return bd_err_set(err, BD_EINVAL, field, "not used in infinite mode (Figure 9 uses eta = 2 and every bracket)");
}

static int hb_options(hb_sched *h, const bd_study_def *def, bd_err *err)
{
    static const char *const known[] = {
        "eta",  "r_min",       "n_max",        "s_min", "exploratory_only",  "iterations",
        "mode", "max_retries", "total_budget", "type",  BD_PROPOSER_OPTIONS, NULL};
    static const char *const modes[] = {"finite", "infinite", NULL};
    static const char *const types[] = {"promotion", "stopping", NULL};
    const json_t *o = def->options;
    const char *mode, *type;
    long long eta, n_max, s_min, retries;
    int explore, rc;
    if ((rc = bd_opt_known(o, known, err)) || (rc = bd_opt_string(o, "mode", "finite", modes, &mode, err)) ||
        (rc = bd_opt_string(o, "type", "promotion", types, &type, err)))
        return rc;
    h->infinite = strcmp(mode, "infinite") == 0;
    h->stopping = strcmp(type, "stopping") == 0;
    if (h->infinite && ((rc = reject_in_infinite(o, "n_max", err)) || (rc = reject_in_infinite(o, "s_min", err)) ||
                        (rc = reject_in_infinite(o, "exploratory_only", err))))
        return rc;
    if ((rc = bd_opt_int(o, "eta", h->infinite ? 2 : 3, h->infinite ? 2 : 2, h->infinite ? 2 : 1000, &eta, err)) ||
        (rc = bd_opt_number(o, "r_min", def->r_min, def->r_min, def->r_max, &h->r_min, err)) ||
        (rc = bd_opt_int(o, "n_max", 0, 1, 1000000000LL, &n_max, err)) ||
        (rc = bd_opt_int(o, "s_min", 0, 0, BD_BK_MAX_RUNGS - 1, &s_min, err)) ||
        (rc = bd_opt_bool(o, "exploratory_only", 0, &explore, err)) ||
        (rc = bd_opt_number(o, "total_budget", 0, 0, 1e18, &h->total_budget, err)) ||
        /* With a total budget the budget ends the study, so the loop repeats by default. */
        (rc = bd_opt_int(o, "iterations", h->infinite || h->total_budget ? 0 : 1, 0, 1000000000LL, &h->iterations,
                         err)) ||
        (rc = bd_opt_int(o, "max_retries", 2, 0, 100, &retries, err)))
        return rc;
    if (!(h->r_min > 0))
        return bd_err_set(err, BD_EINVAL, "resource.min", "Hyperband needs a resource minimum above 0");
    h->eta = (unsigned)eta;
    h->max_retries = (int)retries;
    h->s_max = bd_budget_levels(h->r_min, def->r_max, h->eta, BD_BK_MAX_RUNGS - 1);
    h->s_top = h->s_max;
    if (n_max)
        h->s_top = bd_budget_levels(1, (double)n_max, h->eta, h->s_top);
    if (!h->infinite && bd_pow(h->eta, h->s_top) > HB_MAX_CONFIGS)
        return bd_err_set(err, BD_EINVAL, "scheduler.options.n_max",
                          "resource.max / r_min = %g gives a first bracket of more than %g configs; set n_max",
                          def->r_max / h->r_min, HB_MAX_CONFIGS);
    if (s_min > h->s_top)
        return bd_err_set(err, BD_EINVAL, "scheduler.options.s_min", "must be at most s_max = %d", h->s_top);
    h->s_bottom = explore ? h->s_top : (int)s_min;
    return 0;
}

static int hb_create(const bd_study_def *def, bd_sched **out, bd_err *err)
{
    hb_sched *h = bd_xcalloc(1, sizeof *h);
    bd_proposer *proposer = NULL;
    int rc = hb_options(h, def, err);
    if (!rc)
        rc = bd_proposer_create(def, "random", 1, &proposer, err);
    if (rc) {
        free(h);
        return rc;
    }
    h->base.ops = &bd_sched_hyperband;
    h->def = def;
    bd_bk_init(&h->set, def, h->max_retries, h->infinite || h->iterations != 1, hb_plan, h, proposer);
    if (h->stopping)
        bd_bk_set_stopping(&h->set, h->eta);
    *out = &h->base;
    return 0;
}

static int hb_suggest(bd_sched *s, const bd_suggest_ctx *ctx, bd_suggestion *out, bd_err *err)
{
    (void)err;
    return bd_bk_suggest(&((hb_sched *)s)->set, ctx, out);
}

static int hb_observe(bd_sched *s, const bd_observe_ctx *ctx, const bd_event *ev, bd_decision *out, bd_err *err)
{
    (void)ctx;
    (void)err;
    bd_bk_observe(&((hb_sched *)s)->set, ev, out);
    return 0;
}

static bd_sched_status hb_status(const bd_sched *s)
{
    return bd_bk_status(&((const hb_sched *)s)->set);
}

static int hb_describe(const bd_sched *s, json_t **out)
{
    const hb_sched *h = (const hb_sched *)s;
    json_t *j = bd_bk_describe(&h->set);
    json_object_set_new(j, "mode", json_string(h->infinite ? "infinite" : "finite"));
    json_object_set_new(j, "eta", json_integer(h->eta));
    json_object_set_new(j, "R", json_real(h->def->r_max));
    json_object_set_new(j, "r_min", json_real(h->r_min));
    json_object_set_new(j, "iterations", json_integer(h->iterations));
    json_object_set_new(j, "total_budget", h->total_budget ? json_real(h->total_budget) : json_null());
    if (!h->infinite) {
        json_t *plan = json_array();
        for (int b = h->s_top; b >= h->s_bottom; b--) {
            bd_bk_spec spec;
            finite_spec(h, 1, b, &spec);
            json_t *sj = bd_bk_spec_json(&spec);
            json_object_del(sj, "iteration");
            json_array_append_new(plan, sj);
        }
        json_object_set_new(j, "s_max", json_integer(h->s_top));
        json_object_set_new(j, "s_min", json_integer(h->s_bottom));
        json_object_set_new(j, "plan", plan);
    }
    *out = j;
    return 0;
}

static size_t hb_held_bytes(const bd_sched *s)
{
    return sizeof(hb_sched) + bd_bk_held_bytes(&((const hb_sched *)s)->set);
}

static void hb_destroy(bd_sched *s)
{
    if (!s)
        return;
    bd_bk_free(&((hb_sched *)s)->set);
    free(s);
}

const struct bd_sched_ops bd_sched_hyperband = {
    .abi = BD_SCHED_ABI,
    .name = "hyperband",
    .multi_fidelity = 1,
    .create = hb_create,
    .suggest = hb_suggest,
    .observe = hb_observe,
    .status = hb_status,
    .describe = hb_describe,
    .destroy = hb_destroy,
    .takes_enqueued = 1,
    .learns_from_prior = 1,
    .continues_by_id = 1,
    .held_bytes = hb_held_bytes,
};
