/* caps_race.c: a race of configurations with capped runs on a finite
 * instance set, for the smallest mean runtime at the largest cap (PAR-par),
 * with an anytime incumbent; banditd's successor of `spc` (spc.c). Its spec:
 * docs/ALGORITHMS.md section 9, "caps_race: a capped race on a finite
 * instance set".
 *
 * Follows the CapsAndRuns line of configurators with guarantees, adapted to
 * a finite instance set and a deterministic solver (the stored texts of CAR
 * and ICAR are their abstracts and reviews, so the rules are restated from
 * those and from the bounds' own papers, not copied from an algorithm box):
 * - LeapsAndBounds (Weisz, Gyorgy, Szepesvari, ICML 2018): caps that double;
 * - CapsAndRuns (same authors, ICML 2019): a Bernstein race on capped runs;
 * - ImpatientCapsAndRuns (Weisz et al., NeurIPS 2020): a challenger's runs
 *   are capped from the best config's runtimes, so a bad config costs little;
 * - SPC (Kleinberg et al., NeurIPS 2019; spc.c; docs/ALGORITHMS.md section
 *   5) is the anytime one of the family.
 *
 * The race. Instances are visited in one seeded order pi, the same for every
 * config (paired comparisons; option `shuffle_instances`). Cap levels theta =
 * first_cap, 2 first_cap, ... up to kappa = resource.max; within a level the
 * objective is the theta-capped mean (at kappa a timeout counts par * kappa).
 * The leader L runs every instance at theta, so its values a_k are exact. A
 * challenger i runs pi(k) only after the leader did, with the cap
 *
 *   c_ik = min(theta, max(kappa0, lambda * a_k))                        (1)
 *
 * (lambda = `cap_factor`); its value v_ik is the runtime, theta on a timeout
 * at theta, else c_ik, a lower bound. Over the compared prefix of m instances
 *
 *   e_ik = v_ik - a_k,  ebar = mean of e,  s^2 = mean of (e - ebar)^2,
 *   R = max_k v_ik + max_k a_k                                          (2)
 *
 * and at the last level only, the Bernstein-Serfling race
 * (caps_race_bound.h) eliminates i when
 *
 *   ebar - W(m, N, s^2, R, d) > 0,  d = delta / ((n - 1) m (m + 1))     (3)
 *
 * (`eliminate` "ratio": ParamILS / SMAC's adaptive-capping heuristic
 * instead, no guarantee). A challenger whose lower bounds sum below the
 * leader's is a contender and re-runs them at theta; one with exact values
 * on the leader's whole prefix and a smaller sum becomes the leader. A level
 * ends when no run is left at theta; theta then doubles, and only the leader
 * and the contenders re-run their lower bounds.
 *
 * Invariants:
 * - a run is never repeated at a cap at or below one it timed out at, and
 *   a solved run is never repeated;
 * - below kappa nothing is eliminated (a capped value bounds the PAR value
 *   from below on both sides); with probability >= 1 - delta no config
 *   better than the leader over all N instances is eliminated at kappa;
 * - `defer` only postpones a config, it never eliminates: DONE (the last
 *   level has nothing left and nothing runs) means the leader is the exact
 *   best of the configs not eliminated;
 * - no worker waits while any run is available (WAIT only while every
 *   available run depends on a running one);
 * - state changes only in observe(), and a stored study whose options lack
 *   issue 15's rules runs the form before them (caps_race_new_study_defaults
 *   writes them into new studies), so every replay is unchanged.
 *
 * Order of runs: the smallest instance position over all configs (re-runs
 * first), ties to the leader, then the earlier config; with `race_order`
 * "ranked" the challengers race at kappa one after another, by their upper
 * bounds at the end of the levels.
 *
 * Anytime answer (describe()'s "incumbent"): the leader, or with `incumbent`
 * "upper" below kappa the config with the least upper bound of its PAR mean.
 *
 * Configs: option `configs`, else the choices of a one-categorical space,
 * else `n_configs` samples of the space (seeded by the study seed).
 * Failures: FAILED, EXPIRED, STOPPED or a completion without a value re-offer
 * the same (config, instance, cap); after `max_failures` the instance counts
 * kappa * par for that config, as in spc.
 *
 * Options (absent / new studies' default): configs, n_configs (64), kappa0
 * (max(resource.min, 0.01)), cap_factor (1 / 2), delta (0.05), par (1),
 * max_failures (3), shuffle_instances (true), first_cap (max(kappa0,
 * kappa / 64)), eliminate ("bernstein" | "ratio"), ratio (2), min_instances
 * (20), defer (0 / 1.3), skip_levels (0 / 0.5) with pilot (5), last_level
 * (1 / 0.0625), race_order ("position" / "ranked"), level_wait ("leader" /
 * "all"), compare ("recount" / "incremental"), incumbent ("leader" /
 * "upper"). Unknown keys are rejected. Issue 15's rules, each off (the form
 * before) when a stored study lacks it:
 * - defer: at the last level, after min_instances compared, a challenger
 *   whose values sum to more than defer times the leader's (clipped at its
 *   caps) gets runs only when no other config has one;
 * - skip_levels: the leader's first `pilot` runs come first; if at most
 *   that share of them time out at first_cap, theta jumps to kappa;
 * - last_level: the levels stop at last_level * kappa, then theta = kappa;
 * - level_wait "all": a level ends when no run is out ("leader": when none
 *   of the leader's is);
 * - compare "incremental": a re-run of the leader's lower bound updates the
 *   compared sums in place ("recount": every prefix summed again).
 * Why each default, and what it was measured to do: tests/bench/README-spc.md,
 * "caps_race's rules and their measurements".
 *
 * Cost: suggest, status and observe are O(configs); a change of leader or of
 * level O(total runs) (recompare_all); a re-run of the leader's lower bounds
 * O(configs) with compare "incremental", O(total runs) with "recount".
 * Memory: one cell per run. */
#include "sched.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "caps_race_bound.h"
#include "idmap.h"

extern const struct bd_sched_ops bd_sched_caps_race;

#define CR_MAX_CONFIGS 4096
#define CR_DESCRIBE_RACERS 64
#define CR_SAMPLE_SALT 0x63722d73616d706cULL /* "cr-sampl" */
#define CR_ORDER_SALT 0x63722d6f72646572ULL  /* "cr-order" */

enum { CR_NONE = 0, CR_RUNNING, CR_LOWER, CR_EXACT }; /* cell states */

typedef struct cr_cell {
    double val;        /* LOWER: the cap it timed out at; EXACT: its value (kappa * par after a final timeout) */
    double cap;        /* the cap of its latest run */
    uint8_t state;     /* CR_* */
    uint8_t fails;     /* failed, expired or stopped runs */
    uint8_t verifying; /* a LOWER cell whose re-run at the level's cap is in flight */
    uint8_t timed_out; /* its latest run hit its cap (else rt is its runtime) */
    uint8_t gave_up;   /* max_failures reached: kappa * par at every level */
    double rt;         /* the runtime of its latest run, when it finished */
} cr_cell;

typedef struct cr_racer {
    json_t *config;      /* owned */
    int64_t config_id;   /* 0 until its first run is created */
    cr_cell *cells;      /* cells[k]: the run on instance pi(k), k < next */
    int64_t n_alloc;
    int64_t next;        /* positions handed out at least once: [0, next) */
    int64_t done;        /* [0, done) all finished (LOWER or EXACT) */
    double sum;          /* sum of val over [0, done) */
    int64_t cmp;         /* compared prefix with the leader: [0, cmp) */
    double se, se2;      /* sum of e and e^2 over it (2) */
    double sa;           /* sum of the leader's a over it */
    double vmax, amax;   /* max of v and of the leader's a over it */
    double sv, sac;      /* sum of v, and of the leader's a clipped at v where v is a lower bound (option defer) */
    int64_t n_lower;     /* LOWER cells */
    int64_t low_from;    /* no LOWER cell below this position (where re-run scans start) */
    int64_t n_retry;     /* NONE cells below next (failed runs to re-offer) */
    int64_t solved, runs, in_flight;
    double seconds;      /* CPU charged: min(runtime, cap) of its runs */
    int alive;
    int64_t eliminated_at; /* m of the eliminating test (0: alive) */
    double level_mean;   /* race_order ranked: its rank key, the upper bound of its PAR mean when the levels below kappa ended */
} cr_racer;

typedef struct cr_flight {
    size_t racer;
    int64_t pos;
    double cap;
} cr_flight;

typedef struct caps_race {
    bd_sched base;
    const bd_study_def *def;
    double kappa, kappa0, lambda, zeta, par;
    double theta;         /* the current level's cap: first_cap, doubling up to kappa */
    int64_t levels;       /* level changes so far */
    double ratio;         /* option eliminate = "ratio": its factor (0: "bernstein") */
    int64_t min_instances;
    int max_failures, shuffle, sampled;
    double defer;         /* option defer: the ratio of clipped sums that defers a challenger (0: never) */
    double skip;          /* option skip_levels: the leader's timeout share at or below which theta jumps to kappa */
    int64_t pilot;        /* option pilot: the leader's first runs that skip_levels decides on */
    double last_level;    /* option last_level: the largest cap below kappa a level runs at, a share of kappa (1: every doubling) */
    int ranked;           /* option race_order = "ranked" */
    int wait_all;         /* option level_wait = "all": a level ends when nothing runs */
    int incremental;      /* option compare = "incremental": a leader's re-run updates the compared sums in place */
    int upper_incumbent;  /* option incumbent = "upper": below kappa, the least upper bound of the PAR mean */
    size_t *rank_order;   /* ranked: the racers by their mean at the level below kappa, leader first (NULL until then) */
    int64_t n_instances;
    int64_t *order;       /* pi (NULL without shuffle) */
    cr_racer *racers;
    size_t n_racers;
    size_t leader;
    int64_t leader_changes;
    bd_idmap flights;     /* trial id -> cr_flight (owned) */
    double seconds;
    int64_t created, running;
} caps_race;

static double whole_cap(const caps_race *p, double cap);

/* ------------------------------------------------------------ configs */

static void add_racer(caps_race *p, json_t *config)
{
    p->racers = bd_xrealloc(p->racers, (p->n_racers + 1) * sizeof *p->racers);
    p->racers[p->n_racers++] = (cr_racer){.config = config, .alive = 1};
}

/* Option `configs`: a list of configs of the space, without repeats. */
static int read_config_list(caps_race *p, const json_t *list, bd_err *err)
{
    int rc = bd_opt_config_list(list, p->def->space, CR_MAX_CONFIGS, err);
    if (rc)
        return rc;
    size_t n = json_array_size(list);
    for (size_t i = 0; i < n; i++)
        add_racer(p, bd_space_canonical_config(p->def->space, json_array_get(list, i))); /* 2, not 2.0 */
    return 0;
}

static int build_configs(caps_race *p, const json_t *list, long long n_sample, bd_err *err)
{
    if (list)
        return read_config_list(p, list, err);
    const bd_space *space = p->def->space;
    const bd_param *only = bd_space_size(space) == 1 ? bd_space_param(space, 0) : NULL;
    if (only && only->type == BD_PARAM_CATEGORICAL && json_array_size(only->choices) <= CR_MAX_CONFIGS) {
        for (size_t i = 0; i < json_array_size(only->choices); i++)
            add_racer(p, json_pack("{s:O}", only->name, json_array_get(only->choices, i)));
        return 0;
    }
    bd_rng rng;
    bd_rng_seed(&rng, p->def->seed ^ CR_SAMPLE_SALT, 0);
    p->sampled = 1;
    for (long long i = 0; i < n_sample; i++)
        add_racer(p, bd_space_sample(space, &rng));
    return 0;
}

static void build_order(caps_race *p)
{
    if (!p->shuffle)
        return;
    int64_t n = p->n_instances;
    p->order = bd_xmalloc((size_t)n * sizeof *p->order);
    bd_rng rng;
    bd_rng_seed(&rng, p->def->seed ^ CR_ORDER_SALT, 0);
    for (int64_t k = 0; k < n; k++)
        p->order[k] = k;
    for (int64_t k = n - 1; k > 0; k--) { /* Fisher-Yates */
        int64_t j = (int64_t)bd_rng_below(&rng, (uint64_t)k + 1), tmp = p->order[k];
        p->order[k] = p->order[j];
        p->order[j] = tmp;
    }
}

static int64_t instance_at(const caps_race *p, int64_t pos)
{
    return p->order ? p->order[pos] : pos;
}

/* ------------------------------------------------------------- create */

static void cr_destroy(bd_sched *s);

static int read_options(caps_race *p, const bd_study_def *def, long long *n_sample, bd_err *err)
{
    static const char *const known[] = {"configs", "n_configs", "kappa0", "cap_factor", "delta",
                                        "par",     "max_failures", "shuffle_instances", "eliminate", "ratio", "min_instances",
                                        "first_cap", "defer", "skip_levels", "pilot", "last_level", "race_order",
                                        "level_wait", "compare", "incumbent", NULL};
    static const char *const modes[] = {"bernstein", "ratio", NULL};
    static const char *const orders[] = {"position", "ranked", NULL};
    static const char *const waits[] = {"leader", "all", NULL};
    static const char *const compares[] = {"recount", "incremental", NULL};
    static const char *const incumbents[] = {"leader", "upper", NULL};
    const json_t *o = def->options;
    const char *mode, *order, *wait, *compare, *incumbent;
    long long max_failures, min_instances, pilot;
    double dflt_kappa0 = fmin(fmax(def->r_min, 0.01), def->r_max);
    int rc = bd_opt_known(o, known, err);
    if (!rc)
        rc = bd_opt_int(o, "n_configs", 64, 1, CR_MAX_CONFIGS, n_sample, err);
    if (!rc)
        rc = bd_opt_number(o, "kappa0", dflt_kappa0, fmax(def->r_min, 1e-9), def->r_max, &p->kappa0, err);
    if (!rc)
        rc = bd_opt_number(o, "cap_factor", 1, 1, 1000, &p->lambda, err);
    if (!rc)
        rc = bd_opt_number(o, "delta", 0.05, 1e-9, 0.5, &p->zeta, err);
    if (!rc)
        rc = bd_opt_number(o, "par", 1, 1, 1000, &p->par, err);
    if (!rc)
        rc = bd_opt_int(o, "max_failures", 3, 1, 100, &max_failures, err);
    if (!rc)
        rc = bd_opt_bool(o, "shuffle_instances", 1, &p->shuffle, err);
    if (!rc)
        rc = bd_opt_number(o, "first_cap", fmin(def->r_max, fmax(p->kappa0, def->r_max / 64)),
                           fmax(def->r_min, 1e-9), def->r_max, &p->theta, err);
    if (!rc)
        rc = bd_opt_string(o, "eliminate", "bernstein", modes, &mode, err);
    if (!rc)
        rc = bd_opt_number(o, "ratio", 2, 1, 1000, &p->ratio, err);
    if (!rc)
        rc = bd_opt_int(o, "min_instances", 20, 1, 1000000, &min_instances, err);
    if (!rc)
        rc = bd_opt_number(o, "defer", 0, 0, 1000, &p->defer, err);
    if (!rc)
        rc = bd_opt_number(o, "skip_levels", 0, 0, 1, &p->skip, err);
    if (!rc)
        rc = bd_opt_int(o, "pilot", 5, 1, 1000, &pilot, err);
    if (!rc)
        rc = bd_opt_number(o, "last_level", 1, 1e-9, 1, &p->last_level, err);
    if (!rc)
        rc = bd_opt_string(o, "race_order", "position", orders, &order, err);
    if (!rc)
        rc = bd_opt_string(o, "level_wait", "leader", waits, &wait, err);
    if (!rc)
        rc = bd_opt_string(o, "compare", "recount", compares, &compare, err);
    if (!rc)
        rc = bd_opt_string(o, "incumbent", "leader", incumbents, &incumbent, err);
    if (!rc && p->defer > 0 && p->defer <= 1)
        rc = bd_err_set(err, BD_EINVAL, "scheduler.options.defer", "defer must be 0 (off) or above 1");
    if (rc)
        return rc;
    if (strcmp(mode, "bernstein") == 0)
        p->ratio = 0;
    p->ranked = strcmp(order, "ranked") == 0;
    p->wait_all = strcmp(wait, "all") == 0;
    p->incremental = strcmp(compare, "incremental") == 0;
    p->upper_incumbent = strcmp(incumbent, "upper") == 0;
    p->min_instances = (int64_t)min_instances;
    p->pilot = (int64_t)pilot;
    p->max_failures = (int)max_failures;
    return 0;
}

static int cr_create(const bd_study_def *def, bd_sched **out, bd_err *err)
{
    if (def->maximize)
        return bd_err_set(err, BD_EINVAL, "objective.goal",
                          "caps_race minimizes runtime: the goal must be \"minimize\"");
    if (def->n_instances == 0)
        return bd_err_set(err, BD_EINVAL, "instances", "caps_race runs configs on problem instances: declare them");
    if (!(def->r_max > 0))
        return bd_err_set(err, BD_EINVAL, "resource.max", "caps_race needs a positive largest cap");
    caps_race *p = bd_xcalloc(1, sizeof *p);
    p->base.ops = &bd_sched_caps_race;
    p->def = def;
    p->kappa = def->r_max;
    p->n_instances = (int64_t)def->n_instances;
    long long n_sample = 0;
    int rc = read_options(p, def, &n_sample, err);
    if (!rc)
        rc = build_configs(p, json_object_get(def->options, "configs"), n_sample, err);
    if (rc) {
        cr_destroy(&p->base);
        return rc;
    }
    p->theta = whole_cap(p, p->theta);
    build_order(p);
    *out = &p->base;
    return 0;
}

/* ------------------------------------------------------------ suggest */

/* A cap as the study takes it: whole for an integer resource (rounded up,
 * so a re-run's cap stays above the timeout it re-runs), at most kappa. */
static double whole_cap(const caps_race *p, double cap)
{
    return p->def->resource_integer ? fmin(p->kappa, ceil(cap - 1e-9)) : cap;
}

static int is_contender(const caps_race *p, size_t i)
{
    const cr_racer *r = &p->racers[i];
    return i != p->leader && r->cmp >= 1 && r->se < 0;
}

/* The cap the leader's exact value at position k allows a challenger, (1). */
static double leader_cap(const caps_race *p, int64_t k)
{
    const cr_racer *l = &p->racers[p->leader];
    return whole_cap(p, fmin(p->theta, fmax(p->kappa0, p->lambda * l->cells[k].val)));
}

/* Option skip_levels: the leader's first min_instances runs of the first
 * level come before any challenger's (maybe_skip_levels decides on them). */
static int in_pilot(const caps_race *p)
{
    int64_t m = p->pilot < p->n_instances ? p->pilot : p->n_instances;
    return p->skip > 0 && p->levels == 0 && p->theta < p->kappa && p->racers[p->leader].done < m;
}

/* Config i's next run: its position and cap. 0 if it has none now. */
static int candidate(const caps_race *p, size_t i, int64_t *pos, double *cap)
{
    const cr_racer *r = &p->racers[i];
    if (!r->alive || (i != p->leader && in_pilot(p)))
        return 0;
    int64_t best = INT64_MAX;
    double best_cap = 0;
    if (r->n_retry > 0)
        for (int64_t k = 0; k < r->next; k++)
            if (r->cells[k].state == CR_NONE) {
                best = k;
                best_cap = r->cells[k].cap;
                break;
            }
    if (r->n_lower > 0 && (i == p->leader || is_contender(p, i))) {
        for (int64_t k = r->low_from; k < r->done && k < best; k++)
            if (r->cells[k].state == CR_LOWER && !r->cells[k].verifying) {
                best = k;
                best_cap = p->theta;
                break;
            }
    }
    if (best == INT64_MAX && r->next < p->n_instances) {
        int64_t k = r->next;
        if (i == p->leader) {
            best_cap = p->theta;
        } else {
            const cr_racer *l = &p->racers[p->leader];
            if (k >= l->next || l->cells[k].state != CR_EXACT)
                return 0;
            best_cap = is_contender(p, i) ? p->theta : leader_cap(p, k);
        }
        best = k;
    }
    if (best == INT64_MAX)
        return 0;
    *pos = best;
    *cap = best_cap;
    return 1;
}

/* Is challenger i deferred (option defer)? Its values on the compared
 * prefix sum to more than defer times the leader's, the leader's clipped
 * at i's cap where i timed out (like for like: both capped alike), after
 * at least min_instances, at the last level only (below it a capped sum
 * says little of the PAR mean: deferring there lost sat18-exp's best, 0.30
 * of naive to never on seeds 0-4). */
static int is_deferred(const caps_race *p, size_t i)
{
    const cr_racer *r = &p->racers[i];
    return p->defer > 0 && p->theta >= p->kappa && i != p->leader && r->cmp >= p->min_instances &&
           r->sv > p->defer * r->sac;
}

/* The next run over all configs: the smallest position, ties to the
 * leader, then the earlier config (race_order "ranked", at the last level
 * after a full level below it: the leader's runs, then those of the first
 * challenger in rank_order that has one); deferred configs only when no
 * other config has a run and the level is the last. -1 if none. */
static long pick(const caps_race *p, int64_t *pos, double *cap)
{
    long best = -1;
    int64_t best_pos = INT64_MAX;
    double best_cap = 0;
    for (int pass = 0; pass < 2 && best < 0; pass++) {
        if (pass == 1 && (p->defer <= 0 || p->theta < p->kappa))
            break;
        for (size_t n = 0; n <= p->n_racers; n++) {
            size_t i = n == 0 ? p->leader : p->rank_order ? p->rank_order[n - 1] : n - 1;
            int64_t k;
            double c;
            if ((n > 0 && i == p->leader) || is_deferred(p, i) != pass)
                continue;
            if (candidate(p, i, &k, &c) && k < best_pos) {
                best = (long)i;
                best_pos = k;
                best_cap = c;
                if (p->rank_order)
                    break; /* ranked: the first racer in the order that has a run */
            }
        }
    }
    *pos = best_pos;
    *cap = best_cap;
    return best;
}

static int cr_suggest(bd_sched *s, const bd_suggest_ctx *ctx, bd_suggestion *out, bd_err *err)
{
    (void)ctx;
    (void)err;
    caps_race *p = (caps_race *)s;
    int64_t pos;
    double cap;
    long i = pick(p, &pos, &cap);
    if (i < 0)
        return p->running ? BD_SUGGEST_WAIT : BD_SUGGEST_DONE;
    const cr_racer *r = &p->racers[i];
    const char *role = (size_t)i == p->leader ? "leader" : cap >= p->theta ? "contender" : "challenger";
    out->config = json_incref(r->config);
    out->config_id = r->config_id;
    out->budget = cap;
    out->has_instance = 1;
    out->instance = instance_at(p, pos);
    out->extra = json_pack("{s:I, s:I, s:s}", "racer", (json_int_t)i, "position", (json_int_t)pos, "role", role);
    return BD_SUGGEST_TRIAL;
}

/* ------------------------------------------------------------ observe */

static void grow_cells(cr_racer *r, int64_t need, int64_t most)
{
    if (need <= r->n_alloc)
        return;
    int64_t n = r->n_alloc ? 2 * r->n_alloc : 16;
    while (n < need)
        n *= 2;
    if (n > most)
        n = most; /* one cell per instance at most: memory follows the runs made */
    r->cells = bd_xrealloc(r->cells, (size_t)n * sizeof *r->cells);
    memset(r->cells + r->n_alloc, 0, (size_t)(n - r->n_alloc) * sizeof *r->cells);
    r->n_alloc = n;
}

static void maybe_level_up(caps_race *p);
static void maybe_skip_levels(caps_race *p);

static void on_created(caps_race *p, const bd_event *ev)
{
    const json_t *jr = json_object_get(ev->extra, "racer"); /* extra may be NULL: then so is jr */
    const json_t *jp = json_object_get(ev->extra, "position");
    json_int_t i = json_is_integer(jr) ? json_integer_value(jr) : -1;
    json_int_t k = json_is_integer(jp) ? json_integer_value(jp) : -1;
    if (i < 0 || (size_t)i >= p->n_racers || k < 0 || k >= p->n_instances || !ev->has_instance ||
        ev->instance != instance_at(p, k) || !(ev->budget > 0))
        return; /* not a run this scheduler proposed */
    cr_racer *r = &p->racers[i];
    if (k > r->next)
        return;
    if (k == r->next) {
        grow_cells(r, k + 1, p->n_instances);
        r->next++;
        r->cells[k].state = CR_RUNNING;
        r->cells[k].cap = ev->budget;
    } else if (r->cells[k].state == CR_NONE) {
        r->n_retry--;
        r->cells[k].state = CR_RUNNING;
        r->cells[k].cap = ev->budget;
    } else if (r->cells[k].state == CR_LOWER && !r->cells[k].verifying && ev->budget > r->cells[k].val) {
        /* A re-run of a lower bound: the cell keeps the cap it timed out at
         * (derive() reads it as the bound) until the re-run ends; the
         * flight carries the new cap. Raising it here made a challenger
         * look worse while its re-run was out, or after it failed, and
         * could eliminate the best config (review of issue 15). */
        r->cells[k].verifying = 1;
    } else {
        return;
    }
    if (!r->config_id)
        r->config_id = ev->config_id;
    cr_flight *f = bd_xmalloc(sizeof *f);
    *f = (cr_flight){.racer = (size_t)i, .pos = k, .cap = ev->budget};
    bd_idmap_put(&p->flights, ev->trial_id, f);
    r->in_flight++;
    r->runs++;
    p->created++;
    p->running++;
    maybe_level_up(p); /* its last run of the level is out: idle workers may start the next */
}

/* Forgets the compared sums of every config (the leader changed). */
static void reset_compare(caps_race *p)
{
    for (size_t j = 0; j < p->n_racers; j++) {
        cr_racer *r = &p->racers[j];
        r->cmp = 0;
        r->se = r->se2 = r->sa = r->vmax = r->amax = r->sv = r->sac = 0;
    }
}

/* Rule (3) for challenger j at its compared prefix. */
static void test_elimination(caps_race *p, size_t j)
{
    cr_racer *r = &p->racers[j];
    if (j == p->leader || !r->alive || r->cmp < 1 || p->theta < p->kappa || p->racers[p->leader].n_lower)
        return; /* below kappa, or with a leader's lower bound, e overstates the difference */
    int64_t m = r->cmp;
    if (p->ratio > 0) {
        if (m >= p->min_instances && r->se > (p->ratio - 1) * r->sa) {
            r->alive = 0;
            r->eliminated_at = m;
        }
        return;
    }
    double ebar = r->se / (double)m, var = fmax(0, r->se2 / (double)m - ebar * ebar);
    int64_t rivals = (int64_t)p->n_racers > 1 ? (int64_t)p->n_racers - 1 : 1;
    double w = bd_caps_race_width(m, p->n_instances, var, r->vmax + r->amax, bd_caps_race_delta(p->zeta, rivals, m));
    if (ebar - w > 0) {
        r->alive = 0;
        r->eliminated_at = m;
    }
}

/* Extends j's compared prefix to what it and the leader both finished. */
static void catch_up(caps_race *p, size_t j)
{
    cr_racer *r = &p->racers[j];
    const cr_racer *l = &p->racers[p->leader];
    if (j == p->leader || !r->alive)
        return;
    int64_t limit = r->done < l->done ? r->done : l->done;
    if (r->cmp >= limit)
        return;
    for (; r->cmp < limit; r->cmp++) {
        double v = r->cells[r->cmp].val, a = l->cells[r->cmp].val, e = v - a;
        r->se += e;
        r->se2 += e * e;
        r->sa += a;
        r->sv += v;
        r->sac += r->cells[r->cmp].state == CR_LOWER ? fmin(a, v) : a;
        r->vmax = fmax(r->vmax, v);
        r->amax = fmax(r->amax, a);
    }
    test_elimination(p, j);
}

static void catch_up_all(caps_race *p)
{
    for (size_t j = 0; j < p->n_racers; j++)
        catch_up(p, j);
}

static void maybe_promote(caps_race *p, size_t i);

/* The leader or its values changed: every compared sum anew, then any
 * challenger that is now better takes the lead (each change lowers the
 * leader's sum, so this ends). */
static void recompare_all(caps_race *p)
{
    reset_compare(p);
    catch_up_all(p);
    for (size_t i = 0; i < p->n_racers; i++)
        maybe_promote(p, i);
}

/* Option compare "incremental": the leader's value at position k rose from
 * a_old to a_new (a re-run of one of its lower bounds at the level's cap).
 * Only the term of position k changes in each challenger's compared sums
 * (2), so they are updated in place: O(configs) per re-run, where
 * recompare_all recounts every compared prefix, O(configs x instances)
 * per re-run (on 1,000 configs x 600 instances that recount took 69% of
 * the CPU and a replay to 0.1 of naive did not end in 10 minutes). The
 * sums are the same up to rounding, which is why it is an option: a stored
 * study keeps the recount it was created with. The maxima cannot be
 * updated downwards: a challenger whose amax was a_old, with a_new below
 * it (a re-run faster than the cap it timed out at, from a noisy solver),
 * is recounted. Eliminated configs get the zeroed sums a recount gives
 * them; then, as after a recount, the tests and promotions. */
static void leader_value_changed(caps_race *p, int64_t k, double a_old, double a_new)
{
    for (size_t j = 0; j < p->n_racers; j++) {
        cr_racer *r = &p->racers[j];
        if (j == p->leader)
            continue;
        if (!r->alive) {
            r->cmp = 0;
            r->se = r->se2 = r->sa = r->vmax = r->amax = r->sv = r->sac = 0;
            continue;
        }
        if (k < r->cmp) {
            if (a_new < a_old && a_old >= r->amax) {
                r->cmp = 0;
                r->se = r->se2 = r->sa = r->vmax = r->amax = r->sv = r->sac = 0;
            } else {
                const cr_cell *c = &r->cells[k];
                double v = c->val, e_old = v - a_old, e_new = v - a_new;
                r->se += e_new - e_old;
                r->se2 += e_new * e_new - e_old * e_old;
                r->sa += a_new - a_old;
                r->sac += c->state == CR_LOWER ? fmin(a_new, v) - fmin(a_old, v) : a_new - a_old;
                r->amax = fmax(r->amax, a_new);
            }
        }
        catch_up(p, j);
        test_elimination(p, j);
    }
    for (size_t i = 0; i < p->n_racers; i++)
        maybe_promote(p, i);
}

/* Challenger i takes the lead when it has exact values on the leader's
 * whole prefix, nothing in flight, and a strictly smaller sum. */
static void maybe_promote(caps_race *p, size_t i)
{
    const cr_racer *r = &p->racers[i], *l = &p->racers[p->leader];
    if (i == p->leader || !r->alive || r->in_flight || r->n_lower || r->done < 1 || r->done != l->done ||
        r->cmp != l->done || !(r->se < 0))
        return;
    p->leader = i;
    p->leader_changes++;
    recompare_all(p);
}

/* What cell c counts at the current level: exact (its runtime; a timeout
 * at the level's cap counts the cap, times par at kappa; kappa * par once
 * given up) or a lower bound (a timeout below the level's cap). Returns 1
 * when exact. */
static int derive(const caps_race *p, const cr_cell *c, double *val)
{
    if (c->gave_up) {
        *val = p->kappa * p->par;
        return 1;
    }
    if (!c->timed_out) {
        *val = c->rt;
        return 1;
    }
    if (c->cap >= p->theta * (1 - 1e-12)) {
        *val = p->theta >= p->kappa ? p->kappa * p->par : p->theta;
        return 1;
    }
    *val = c->cap;
    return 0;
}

/* Moves r->low_from past the cells that are not lower bounds. */
static void advance_low_from(cr_racer *r)
{
    while (r->low_from < r->next && r->cells[r->low_from].state != CR_LOWER)
        r->low_from++;
}

/* Cell k of racer i finished (its raw result is in the cell). */
static void settle(caps_race *p, size_t i, int64_t k)
{
    cr_racer *r = &p->racers[i];
    cr_cell *c = &r->cells[k];
    double val;
    int exact = derive(p, c, &val);
    if (c->verifying) { /* a LOWER cell re-run at the level's cap */
        double old = c->val;
        c->verifying = 0;
        c->state = exact ? CR_EXACT : CR_LOWER;
        c->val = val;
        if (exact)
            r->n_lower--;
        advance_low_from(r);
        if (k < r->done)
            r->sum += val - old;
        if (i == p->leader && p->incremental) {
            leader_value_changed(p, k, old, val);
        } else if (i == p->leader) {
            recompare_all(p);
        } else if (k < r->cmp) {
            double a = p->racers[p->leader].cells[k].val;
            r->se += val - old;
            r->se2 += (val - a) * (val - a) - (old - a) * (old - a);
            r->sv += val - old;
            r->sac += (exact ? a : fmin(a, val)) - fmin(a, old);
            r->vmax = fmax(r->vmax, val);
            test_elimination(p, i);
        }
        maybe_promote(p, i);
        return;
    }
    c->state = exact ? CR_EXACT : CR_LOWER;
    c->val = val;
    if (!exact) {
        r->n_lower++;
        if (k < r->low_from)
            r->low_from = k;
    }
    int64_t before = r->done;
    while (r->done < r->next && (r->cells[r->done].state == CR_LOWER || r->cells[r->done].state == CR_EXACT))
        r->sum += r->cells[r->done++].val;
    if (i == p->leader) {
        if (r->done > before)
            catch_up_all(p);
        maybe_skip_levels(p);
    } else {
        catch_up(p, i);
        maybe_promote(p, i);
    }
}

/* Has every racer still in the race had every instance handed out? */
static int all_issued(const caps_race *p)
{
    for (size_t i = 0; i < p->n_racers; i++)
        if (p->racers[i].alive && p->racers[i].next < p->n_instances && !is_deferred(p, i))
            return 0;
    return 1;
}

/* The cap rises to theta (above the current one): every finished cell is
 * counted anew (a timeout at the old cap becomes a lower bound; a run
 * still out counts when it ends, a timeout then as a lower bound too), and
 * the race goes on: the leader and the contenders re-run their lower
 * bounds at the new cap. */
static void raise_level(caps_race *p, double theta)
{
    p->theta = theta;
    p->levels++;
    for (size_t i = 0; i < p->n_racers; i++) {
        cr_racer *r = &p->racers[i];
        r->n_lower = 0;
        r->sum = 0;
        r->low_from = 0;
        for (int64_t k = 0; k < r->next; k++) {
            cr_cell *c = &r->cells[k];
            if (c->state != CR_LOWER && c->state != CR_EXACT)
                continue;
            int exact = derive(p, c, &c->val);
            c->state = exact ? CR_EXACT : CR_LOWER;
            r->n_lower += !exact;
            if (k < r->done)
                r->sum += c->val;
        }
        advance_low_from(r);
    }
    recompare_all(p);
}

typedef struct cr_key {
    double mean;
    size_t index;
} cr_key;

static int key_cmp(const void *a, const void *b)
{
    const cr_key *x = a, *y = b;
    if (x->mean != y->mean)
        return x->mean < y->mean ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Option race_order "ranked": the level below kappa is over, every racer
 * has its exact theta-capped values on the instances it was handed (or
 * lower bounds where it was never a contender); rank_order lists the
 * racers by that mean (ties by index). At kappa the challengers then run
 * one after another in that order instead of instance by instance, so the
 * leader meets its strongest rivals first and a better one takes the lead
 * as soon as its own runs at kappa are done (issue 15's sat11-indu: with
 * all 18 solvers within 22% of the best, the instance-by-instance race at
 * kappa promotes a challenger only once every challenger has reached the
 * last instance). */
static void rank_racers(caps_race *p)
{
    size_t n = p->n_racers;
    cr_key *keys = bd_xmalloc(n * sizeof *keys);
    double worst = p->kappa * p->par;
    for (size_t i = 0; i < n; i++) {
        cr_racer *r = &p->racers[i];
        double sum = (double)(p->n_instances - r->done) * worst;
        for (int64_t k = 0; k < r->done; k++)
            sum += r->cells[k].timed_out || r->cells[k].gave_up ? worst : r->cells[k].rt;
        r->level_mean = sum / (double)p->n_instances;
        keys[i] = (cr_key){.mean = r->level_mean, .index = i};
    }
    qsort(keys, n, sizeof *keys, key_cmp);
    p->rank_order = bd_xrealloc(p->rank_order, n * sizeof *p->rank_order);
    for (size_t i = 0; i < n; i++)
        p->rank_order[i] = keys[i].index;
    free(keys);
}

/* Option skip_levels: once the leader has finished its first
 * min_instances runs of the first level, the levels are dropped (theta
 * jumps to kappa) if at most that share of them timed out at theta. Why:
 * a level below kappa pays when most runs time out at it (configs are then
 * compared cheaply on what the cap reveals, ASlib's industrial instances);
 * when most runs finish below it, the level already prices most instances
 * exactly, and each further doubling makes every contender re-run the
 * same few hard instances once more (issue 15's minisat matrix: 12-17% of
 * runs above the first cap, 0.43 of the naive CPU spent in the levels
 * below kappa; tests/bench/README-spc.md section 3). */
static void maybe_skip_levels(caps_race *p)
{
    const cr_racer *l = &p->racers[p->leader];
    int64_t m = p->pilot < p->n_instances ? p->pilot : p->n_instances;
    if (p->levels || p->skip <= 0 || p->theta >= p->kappa || l->done != m)
        return;
    int64_t timeouts = 0;
    for (int64_t k = 0; k < m; k++)
        timeouts += l->cells[k].timed_out && !l->cells[k].gave_up;
    if ((double)timeouts <= p->skip * (double)m)
        raise_level(p, p->kappa);
}

/* The level is over below kappa (every instance handed out to every
 * racer not deferred, nothing left to run at this cap, none of the
 * leader's runs out: only challengers' runs may still be out, and their
 * results change no other racer's sums): the cap doubles (up to kappa).
 * With one worker nothing is out at that point. */
static void maybe_level_up(caps_race *p)
{
    int64_t pos;
    double cap;
    while (p->theta < p->kappa && !p->racers[p->leader].in_flight && (!p->wait_all || !p->running) &&
           all_issued(p) && pick(p, &pos, &cap) < 0) {
        double next = 2 * p->theta;
        if (next >= p->kappa * (1 - 1e-12) || next > p->last_level * p->kappa * (1 + 1e-12))
            next = p->kappa;
        if (next >= p->kappa && p->ranked)
            rank_racers(p);
        raise_level(p, next);
    }
}

/* A run ended: COMPLETED with a value or a timeout (ok = 1), or failed,
 * expired, stopped or completed without a value (ok = 0). */
static void on_ended(caps_race *p, const bd_event *ev, int ok)
{
    cr_flight *f = bd_idmap_get(&p->flights, ev->trial_id);
    if (!f)
        return;
    bd_idmap_put(&p->flights, ev->trial_id, NULL);
    size_t i = f->racer;
    int64_t k = f->pos;
    double cap = f->cap;
    free(f);
    cr_racer *r = &p->racers[i];
    cr_cell *c = &r->cells[k];
    r->in_flight--;
    p->running--;
    if (ok && (ev->timeout || isfinite(ev->loss))) {
        double rt = fmax(ev->loss, 0);
        int timeout = ev->timeout || rt > cap * (1 + 1e-9);
        double charge = timeout ? cap : rt;
        r->seconds += charge;
        p->seconds += charge;
        if (!timeout)
            r->solved++;
        c->cap = cap;
        c->timed_out = (uint8_t)timeout;
        c->rt = timeout ? NAN : rt;
        settle(p, i, k);
    } else {
        if (c->fails < UINT8_MAX)
            c->fails++;
        if (c->fails >= p->max_failures) { /* give up: the worst value a run can score */
            c->gave_up = 1;
            settle(p, i, k);
        } else if (c->verifying) {
            c->verifying = 0; /* still LOWER: re-offered while it is a contender's */
            maybe_promote(p, i);
        } else {
            c->state = CR_NONE;
            r->n_retry++;
        }
    }
    maybe_level_up(p);
}

static int cr_observe(bd_sched *s, const bd_observe_ctx *ctx, const bd_event *ev, bd_decision *out, bd_err *err)
{
    (void)ctx;
    (void)out;
    (void)err;
    caps_race *p = (caps_race *)s;
    switch (ev->type) {
    case BD_EV_CREATED:
        on_created(p, ev);
        break;
    case BD_EV_COMPLETED:
        on_ended(p, ev, 1);
        break;
    case BD_EV_FAILED:
    case BD_EV_EXPIRED:
    case BD_EV_STOPPED:
        on_ended(p, ev, 0);
        break;
    case BD_EV_MEASUREMENT: /* a solver run reports once, at the end */
    case BD_EV_PRIOR:       /* never passed: learns_from_prior is 0 */
        break;
    }
    return 0;
}

static bd_sched_status cr_status(const bd_sched *s)
{
    const caps_race *p = (const caps_race *)s;
    int64_t pos;
    double cap;
    if (pick(p, &pos, &cap) >= 0)
        return BD_STATUS_RUNNING;
    return p->running ? BD_STATUS_WAITING : BD_STATUS_DONE;
}

/* ----------------------------------------------------------- describe */

static int is_deferred(const caps_race *p, size_t i);

static double mean_of(const cr_racer *r)
{
    return r->done ? r->sum / (double)r->done : NAN;
}

static json_t *num_or_null(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

static json_t *racer_json(const caps_race *p, size_t i)
{
    const cr_racer *r = &p->racers[i];
    double gap = NAN, width = NAN;
    if (i != p->leader && r->cmp >= 1) {
        double ebar = r->se / (double)r->cmp, var = fmax(0, r->se2 / (double)r->cmp - ebar * ebar);
        int64_t rivals = (int64_t)p->n_racers > 1 ? (int64_t)p->n_racers - 1 : 1;
        gap = ebar;
        width = bd_caps_race_width(r->cmp, p->n_instances, var, r->vmax + r->amax,
                                   bd_caps_race_delta(p->zeta, rivals, r->cmp));
    }
    json_t *j = json_pack("{s:I, s:O, s:I, s:b, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:f}", "racer", (json_int_t)i,
                          "config", r->config, "config_id", (json_int_t)r->config_id, "leader", i == p->leader,
                          "alive", r->alive, "instances", (json_int_t)r->done, "compared", (json_int_t)r->cmp,
                          "lower_bounds", (json_int_t)r->n_lower, "solved", (json_int_t)r->solved, "runs",
                          (json_int_t)r->runs, "in_flight", (json_int_t)r->in_flight, "seconds", r->seconds);
    json_object_set_new(j, "mean", num_or_null(mean_of(r)));
    json_object_set_new(j, "gap", num_or_null(gap));
    json_object_set_new(j, "width", num_or_null(width));
    if (!r->alive)
        json_object_set_new(j, "eliminated_at", json_integer((json_int_t)r->eliminated_at));
    json_object_set_new(j, "deferred", json_boolean(is_deferred(p, i)));
    return j;
}

/* A racer's place in describe(): leader first, then the alive configs
 * with the most instances and the smallest mean, then the eliminated ones;
 * ties by index. */
typedef struct cr_rank {
    int leader, alive;
    int64_t done;
    double mean;
    size_t index;
} cr_rank;

static int rank_cmp(const void *a, const void *b)
{
    const cr_rank *x = a, *y = b;
    if (x->leader != y->leader)
        return x->leader ? -1 : 1;
    if (x->alive != y->alive)
        return x->alive ? -1 : 1;
    if (x->done != y->done)
        return x->done > y->done ? -1 : 1;
    if (x->mean != y->mean)
        return x->mean < y->mean ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Option incumbent "upper": below kappa the anytime answer is the config
 * with the least upper bound of its PAR mean on the instances every config
 * alive has finished (a run solved counts its runtime, any timeout kappa *
 * par; ties: the leader, then the lower index). Why: the leader of a level
 * is the best theta-capped mean, which rewards solving the easy instances
 * fast and says nothing of the hard ones; on ASlib's sat18-exp the best
 * capped mean at kappa / 64 is the worst of the 37 solvers by PAR, the least
 * upper bound the 16th (at kappa / 16: 16th and 1st). At kappa the leader's
 * values are exact PAR, and it is the answer. Costs O(configs x instances)
 * per describe(), nothing per decision. */
static size_t incumbent_of(const caps_race *p)
{
    if (!p->upper_incumbent || p->theta >= p->kappa)
        return p->leader;
    int64_t m = INT64_MAX;
    for (size_t i = 0; i < p->n_racers; i++)
        if (p->racers[i].alive && p->racers[i].done < m)
            m = p->racers[i].done;
    if (m < 1 || m == INT64_MAX)
        return p->leader;
    size_t best = p->leader;
    double best_ub = INFINITY;
    for (size_t n = 0; n <= p->n_racers; n++) {
        size_t i = n == 0 ? p->leader : n - 1; /* the leader first: it wins ties */
        const cr_racer *r = &p->racers[i];
        if ((n > 0 && i == p->leader) || !r->alive)
            continue;
        double ub = 0;
        for (int64_t k = 0; k < m; k++) {
            const cr_cell *c = &r->cells[k];
            ub += c->timed_out || c->gave_up ? p->kappa * p->par : c->rt;
        }
        if (ub < best_ub) {
            best_ub = ub;
            best = i;
        }
    }
    return best;
}

static int cr_describe(const bd_sched *s, json_t **out)
{
    const caps_race *p = (const caps_race *)s;
    size_t n = p->n_racers, alive = 0;
    cr_rank *rank = bd_xmalloc(n * sizeof *rank);
    for (size_t i = 0; i < n; i++) {
        const cr_racer *r = &p->racers[i];
        rank[i] = (cr_rank){.leader = i == p->leader, .alive = r->alive, .done = r->done,
                            .mean = r->done ? r->sum / (double)r->done : 0, .index = i};
        alive += r->alive != 0;
    }
    qsort(rank, n, sizeof *rank, rank_cmp);
    json_t *racers = json_array();
    for (size_t a = 0; a < n && a < CR_DESCRIBE_RACERS; a++)
        json_array_append_new(racers, racer_json(p, rank[a].index));
    free(rank);
    *out = json_pack("{s:s, s:f, s:f, s:f, s:f, s:f, s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:I, s:I, s:o}",
                     "configs",
                     p->sampled ? "sampled" : "list", "kappa0", p->kappa0, "cap_factor", p->lambda, "delta", p->zeta,
                     "par", p->par, "max_cap", p->kappa, "cap", p->theta, "levels", (json_int_t)p->levels, "instances", (json_int_t)p->n_instances, "runs",
                     (json_int_t)p->created, "running", (json_int_t)p->running, "leader", (json_int_t)p->leader,
                     "leader_changes", (json_int_t)p->leader_changes, "seconds", p->seconds, "alive",
                     (json_int_t)alive, "racers_total", (json_int_t)n, "racers", racers);
    json_object_set_new(*out, "last_level", json_real(p->last_level));
    json_object_set_new(*out, "race_order", json_string(p->ranked ? "ranked" : "position"));
    json_object_set_new(*out, "level_wait", json_string(p->wait_all ? "all" : "leader"));
    json_object_set_new(*out, "compare", json_string(p->incremental ? "incremental" : "recount"));
    json_object_set_new(*out, "ranked", json_boolean(p->rank_order != NULL));
    const cr_racer *l = &p->racers[incumbent_of(p)];
    json_object_set_new(*out, "incumbent_rule", json_string(p->upper_incumbent ? "upper" : "leader"));
    if (l->done >= 1)
        json_object_set_new(*out, "incumbent",
                            json_pack("{s:I, s:I, s:O, s:f, s:f, s:I, s:I}", "trial_id", (json_int_t)l->config_id,
                                      "config_id", (json_int_t)l->config_id, "config", l->config, "value",
                                      mean_of(l), "budget", p->theta, "instances", (json_int_t)l->done, "solved",
                                      (json_int_t)l->solved));
    return 0;
}

static void cr_destroy(bd_sched *s)
{
    caps_race *p = (caps_race *)s;
    if (!p)
        return;
    for (size_t i = 0; i < p->flights.cap; i++)
        free(p->flights.slots[i].value);
    bd_idmap_clear(&p->flights);
    for (size_t i = 0; i < p->n_racers; i++) {
        json_decref(p->racers[i].config);
        free(p->racers[i].cells);
    }
    free(p->racers);
    free(p->order);
    free(p->rank_order);
    free(p);
}

/* New studies get issue 15's rules; a stored study without them keeps the
 * form it was created with (sched.h, new_study_defaults). An option the
 * user set is left as it is. */
static void caps_race_new_study_defaults(const bd_study_def *def, json_t *options)
{
    (void)def;
    if (!json_object_get(options, "cap_factor"))
        json_object_set_new(options, "cap_factor", json_real(2));
    if (!json_object_get(options, "defer"))
        json_object_set_new(options, "defer", json_real(1.3));
    if (!json_object_get(options, "skip_levels"))
        json_object_set_new(options, "skip_levels", json_real(0.5));
    if (!json_object_get(options, "last_level"))
        json_object_set_new(options, "last_level", json_real(0.0625));
    if (!json_object_get(options, "race_order"))
        json_object_set_new(options, "race_order", json_string("ranked"));
    if (!json_object_get(options, "level_wait"))
        json_object_set_new(options, "level_wait", json_string("all"));
    if (!json_object_get(options, "compare"))
        json_object_set_new(options, "compare", json_string("incremental"));
    if (!json_object_get(options, "incumbent"))
        json_object_set_new(options, "incumbent", json_string("upper"));
}

const struct bd_sched_ops bd_sched_caps_race = {
    .abi = BD_SCHED_ABI,
    .name = "caps_race",
    .multi_fidelity = 1,
    .create = cr_create,
    .suggest = cr_suggest,
    .observe = cr_observe,
    .status = cr_status,
    .describe = cr_describe,
    .destroy = cr_destroy,
    .new_study_defaults = caps_race_new_study_defaults,
};
