/* spc.c: Structured Procrastination with Confidence (Kleinberg,
 * Leyton-Brown, Lucier, Graham, NeurIPS 2019; docs/ALGORITHMS.md section 5):
 * configure a solver for the smallest mean runtime over a set of problem
 * instances, with runtime caps that double on timeout.
 *
 * A trial is one run: (config, instance, cap). Its budget is the cap in
 * the study's resource (seconds), its instance one of the study's
 * `instances`; the worker completes it with the runtime, or with
 * `"status": "timeout"` at the cap. One configuration tester per config
 * (spc_tester.h) keeps the active instances, the FIFO of timed-out
 * (instance, doubled cap) pairs and the LCB; the main loop runs the tester
 * with the smallest LCB (ties: the earlier config).
 *
 * The instance stream: every tester walks the same stream, so configs are
 * compared on the same instances first. Pass 0 is the study's list,
 * shuffled by the study seed (option `shuffle_instances`, default true).
 * The paper's testers draw from an infinite i.i.d. stream; with option
 * `stream` = "cycle" (the default) pass k >= 1 goes through the list again
 * in a new seeded order, i.e. draws from the uniform distribution over the
 * declared instances, the distribution whose mean runtime SPC estimates.
 * This matters: the LCB stays 0 until a tester has about 36 ln t active
 * values (eps <= 1/2 needs r >= 36 ln t), more than most instance sets
 * hold. Each trial's extra says its stream position and pass, so a worker
 * can seed a randomized solver with the pass. With "once" a tester that has
 * activated every instance and has nothing queued is finished; with all
 * finished the study is DONE.
 *
 * Stream "finite" (new studies' default since issue 15; a stored study
 * without the option keeps "cycle", see spc_new_study_defaults) is for what
 * users bring most: a finite instance set and a deterministic solver.
 * Departures from the paper, each for that case:
 * - each instance is activated once per tester, as with "once": a second
 *   run of (config, instance) at a cap where it already timed out, or after
 *   it was solved, would only repeat a known result (issue 15 measured 39%
 *   of "cycle"'s runs doing that on a 100 x 100 matrix). Once a tester has seen every
 *   instance it takes its queue of doubled caps whatever its bound q.
 * - the LCB's eps is multiplied by sqrt((N - r) / (N - 1)), the finite-
 *   population correction for r instances drawn without replacement from N
 *   (spc_beta_finite): the LCB tightens to the exact mean of the capped
 *   values once every instance is seen, where the paper's stays 0 while r
 *   is below about 36 ln t (more instances than most sets have).
 * - where the paper's eps exceeds 1/2 (its beta is then 0: the Chernoff
 *   form it uses holds only for small eps), the general multiplicative
 *   Chernoff bound gives a beta > 0 at the same confidence
 *   (spc_beta_finite), so testers are ranked by their values from the
 *   first ones on instead of all tying at 0 until r ~ 36 ln t.
 * - equal LCBs (all 0 early on) go to the tester that has spent the least
 *   CPU, so testers share time instead of the first config taking it all.
 * - LCBs are polled every t/16 steps, not every step ("the order of
 *   testers" below): the cost of a step no longer grows with the testers.
 * - the incumbent is the best evidenced config (best_evidenced_among).
 * A tester whose instances are all settled (solved, or timed out at the
 * largest cap) is finished, and with all finished the study is DONE.
 * Measured in tests/bench/README-spc.md.
 *
 * Which configs:
 * - option `configs`: an explicit list of configs of the study's space;
 * - else a space of one categorical parameter: each choice is a config
 *   (an ASlib scenario's solvers);
 * - else the paper's extension for large spaces (section 4, appendix C):
 *   independent samples S_0, S_1, ... of first_sample * 2^i configs each
 *   (option `first_sample`, default 8), each running its own SPC (its own
 *   iteration counter t), sharing run time with weights w_i = 1 / (i+1)^2.
 *   The paper's formula for the shares is lost in the stored text; 1/(i+1)^2
 *   is summable, so every sample keeps a constant share and the overhead of
 *   reaching the top 2^-i quantile is O(i^2) = O(log^2(1 / quantile)).
 *   S_0 starts at once; S_i (i >= 1) joins once the time charged so far
 *   reaches kappa0 * |S_i| * (i+1)^2, the point where its share could pay
 *   one run at kappa0 for each of its configs; it also joins early when
 *   every joined tester is finished. Samples stop joining at `max_configs`
 *   configs in all (default 1024). The next run comes from the joined sample
 *   with the smallest (time charged + caps in flight) / w_i, then its tester
 *   with the smallest LCB. S_i's configs are drawn from the space with an
 *   rng seeded from (study seed, i), so a replay draws the same ones.
 *
 * Caps: kappa0 (option, default 1 s, clamped into [resource.min,
 * resource.max]); a timeout queues the instance at min(multiplier * cap,
 * resource.max) (option `multiplier`, default 2). A timeout at resource.max
 * is final: the instance's value is resource.max * par (option `par`,
 * default 1; 10 gives PAR10). A completed run's value is its runtime.
 *
 * Failures: a crash (the worker calls fail), a lost lease (EXPIRED) or a
 * stop is not a timeout: the same (instance, cap) is re-offered to that
 * tester before anything else, and after `max_failures` (default 3) such
 * runs of one (config, instance) the instance gives up with value
 * resource.max * par, the worst a run can score. A completion with value
 * null (diverged) counts as a failure. Failures do not advance t.
 *
 * Several workers: a tester with a run in flight is busy; the next worker
 * gets the smallest-LCB tester that is idle (its step cannot depend on a
 * pending result), and only when every tester with a run to give is busy,
 * the smallest-LCB tester again: its next run is computed as if the runs in
 * flight had not timed out (a fresh instance or the queue's next entry).
 * No worker waits while any tester has a run. With one worker no tester is
 * ever busy at suggest time, so the sequence of (config, instance, cap) is
 * exactly the sequential algorithm's (tests/unit/test_spc.c checks it
 * against an independent step-by-step implementation). The iteration
 * counter t of a sample is its number of finished runs; a tester's queue
 * bound is recomputed with t when its run finishes (before t advances).
 *
 * The LCB (option `lcb`): "current" (default) compares every tester's LCB
 * at the current iteration t, as the paper's section 3.1 says ("in each
 * iteration t, it polls all of the configuration testers"; "the LCB is
 * ..., where t is the current iteration"). The earlier spec (replaced by
 * docs/ALGORITHMS.md, which follows the paper here), after the
 * authors' code, recomputes only the tester that ran ("last_step"): an
 * LCB then keeps the t of its tester's last run, and since the bound
 * falls as t grows, a tester that has not run for a while looks worse than
 * it is (with a dozen instances the first tester to score a non-zero LCB
 * at t <= 1 can wait hundreds of iterations). Both are implemented and
 * tested; tests/bench/README-spc.md measures both.
 *
 * Anytime answer (describe()'s "incumbent"): with the paper's streams, the
 * config with the most active instances (the paper's), ties broken by the
 * smaller mean capped runtime, then the earlier config; its value is that
 * mean. With the finite stream, best_evidenced_among's rule. describe()
 * lists the 64 most active testers (and testers_total), not all 4,096. With samples,
 * the most active instances of all: the paper's rule for the sampled
 * extension is lost in the stored text, and a larger sample's configs get
 * less time each, so this favours the first samples; each sample's own
 * incumbent is in describe()'s "samples" (incumbent_tester, -1 = none). */
#include "sched.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "idmap.h"
#include "iheap.h"
#include "spc_tester.h"

extern const struct bd_sched_ops bd_sched_spc;

#define SPC_MAX_CONFIGS 4096
#define SPC_SAMPLE_SALT 0x7370632d73616d70ULL /* "spc-samp" */
#define SPC_ORDER_SALT 0x7370632d6f726472ULL  /* "spc-ordr" */
#define SPC_FIRST_HORIZON 16                    /* the paper's stream: the first keys' iteration */
#define SPC_POLL_STEP 16                        /* finite stream: LCBs polled again when t grows by 1/16 */
#define SPC_DESCRIBED_TESTERS 64                /* describe() lists at most this many testers */
#define SPC_MAX_SAMPLES 32                      /* samples S_0 .. S_31 at most */

typedef struct spc_sample {
    size_t first, size;  /* its testers: testers[first .. first+size-1] */
    double weight;       /* share of the run time, 1 / (i+1)^2 */
    double charged;      /* run time of its finished runs */
    double reserved;     /* caps of its runs in flight */
    int64_t t;           /* its iteration counter: finished runs */
    bd_iheap runnable;   /* its testers with a run to give, by key (spc.key) */
    int64_t key_t;       /* the iteration the keys are LCBs at (see "the order of testers") */
} spc_sample;

typedef struct spc_flight {
    size_t tester;
    spc_run run;
} spc_flight;

typedef struct spc {
    bd_sched base;
    const bd_study_def *def;
    double kappa0, multiplier, par, cap_max;
    int max_failures;
    int lcb_now;                  /* option lcb: 1 "current" (the paper), 0 "last_step" */
    int finite;                   /* option stream "finite": the rules for a finite instance set */
    int sampled;                  /* the large-space extension is on */
    size_t first_sample, max_configs;
    int64_t n_instances;
    int shuffle;                  /* option shuffle_instances */
    int64_t stream_end;           /* positions a tester may activate: n_instances ("once") or INT64_MAX */
    int64_t **pass_order;         /* pass k's order (NULL until needed; NULL throughout without shuffle) */
    size_t n_passes;
    spc_tester *testers;
    size_t n_testers, cap_testers;
    double *key;                  /* key[k]: tester k's place in its sample's heap (see "the order of testers") */
    size_t *popped;               /* pick_in_sample's scratch: testers taken off a heap */
    spc_sample *samples;
    size_t n_samples, cap_samples;
    bd_idmap flights;             /* trial id -> spc_flight (owned) */
    double charged;               /* run time charged, all samples */
    int64_t created, running;
} spc;

/* ------------------------------------------------- the order of testers
 *
 * The main loop wants the runnable tester with the smallest LCB at the
 * sample's current iteration t. Computing every LCB at every step costs
 * O(testers x values) (0.8 ms with 1,000 testers). Instead each sample keeps
 * its runnable testers in a heap by key; a key changes when its tester's
 * values do (one tester per step), and all of a sample's keys are
 * recomputed when t moves far enough:
 *
 * - the paper's streams (cycle, once): the key is the LCB at a later
 *   iteration key_t (>= t). An LCB never increases with t, so the key is a
 *   lower bound of the LCB at every t up to key_t. pick_in_sample pops keys
 *   in order, computes the exact LCB of each popped tester, and stops when
 *   the next key cannot beat the best exact one: the same choice as a full
 *   scan (test_spc.c checks it against a step-by-step implementation).
 *   When t passes key_t, the keys are recomputed at twice t. Testers whose
 *   LCBs lie close together (hundreds of configs timing out at kappa0 on
 *   the same instances) are all popped, so a step costs up to O(testers).
 * - stream "finite": every LCB is polled at key_t <= t, and key_t moves to
 *   t when t has grown by 1/SPC_POLL_STEP since. The LCB depends on t only
 *   through log t, so the polled LCBs differ from those at t by well under
 *   1%; the paper's polling of every tester at every step becomes a poll
 *   every t/16 steps, and a step costs O(log testers + values of the tester
 *   that ran), plus the polls: O(testers x values x 16 / t) per step. */

/* Is a ahead of b: the smaller LCB, then (finite streams) the less CPU
 * spent, so equal LCBs (all 0 early on) share time instead of going to the
 * first config; then the earlier config. */
static int ahead(const spc *p, size_t a, double lcb_a, size_t b, double lcb_b)
{
    if (lcb_a != lcb_b)
        return lcb_a < lcb_b;
    if (p->finite && p->testers[a].seconds != p->testers[b].seconds)
        return p->testers[a].seconds < p->testers[b].seconds;
    return a < b;
}

static int key_less(const void *ctx, size_t a, size_t b)
{
    const spc *p = ctx;
    return ahead(p, a, p->key[a], b, p->key[b]);
}

/* Tester k's LCB as the main loop compares it: at its sample's current
 * iteration (the paper: every tester is polled at iteration t), or as of
 * its own last step (the earlier spec, the authors' code). */
static double lcb_of(const spc *p, size_t k)
{
    const spc_tester *t = &p->testers[k];
    return p->lcb_now ? spc_tester_lcb_at(t, p->samples[t->sample].t) : t->lcb;
}

static double key_of(const spc *p, size_t k)
{
    const spc_tester *t = &p->testers[k];
    return p->lcb_now ? spc_tester_lcb_at(t, p->samples[t->sample].key_t) : t->lcb;
}

/* The LCB pick_in_sample compares: exact for the paper's streams, the
 * polled one (the key itself) for the finite stream. */
static double compared_lcb(const spc *p, size_t k)
{
    return p->finite ? p->key[k] : lcb_of(p, k);
}

/* Tester k's values, CPU or runs changed: its key and heap membership. */
static void tester_changed(spc *p, size_t k)
{
    spc_tester *t = &p->testers[k];
    bd_iheap *h = &p->samples[t->sample].runnable;
    spc_run r;
    int f;
    if (spc_tester_next(t, p->stream_end, &r, &f)) {
        p->key[k] = key_of(p, k);
        bd_iheap_update(h, k);
    } else {
        bd_iheap_remove(h, k);
    }
}

/* Sample s's t moved on: every key again when key_t is due. */
static void advance_key_t(spc *p, spc_sample *s)
{
    if (!p->lcb_now)
        return;
    if (p->finite) {
        if (s->t < s->key_t + (s->key_t / SPC_POLL_STEP > 1 ? s->key_t / SPC_POLL_STEP : 1))
            return;
        s->key_t = s->t;
    } else {
        if (s->t <= s->key_t)
            return;
        s->key_t = 2 * s->t;
    }
    bd_iheap_clear(&s->runnable);
    bd_iheap_init(&s->runnable, key_less, p);
    for (size_t k = s->first; k < s->first + s->size; k++)
        tester_changed(p, k);
}

/* The tester of sample s that runs next among its runnable ones (idle ones
 * only if idle_only), and its exact LCB; -1 if none. */
static long pick_in_sample(spc *p, spc_sample *s, int idle_only, double *lcb_out)
{
    bd_iheap *h = &s->runnable;
    long best = -1;
    double best_lcb = 0;
    size_t n_popped = 0;
    while (h->n) {
        size_t k = bd_iheap_top(h);
        /* exact >= key: a tester whose key is not ahead of the best found
         * cannot be, and neither can any after it. */
        if (best >= 0 && !ahead(p, k, p->key[k], (size_t)best, best_lcb))
            break;
        p->popped[n_popped++] = bd_iheap_pop(h);
        if (idle_only && p->testers[k].in_flight)
            continue;
        double lcb = compared_lcb(p, k);
        if (best < 0 || ahead(p, k, lcb, (size_t)best, best_lcb)) {
            best = (long)k;
            best_lcb = lcb;
        }
    }
    for (size_t i = 0; i < n_popped; i++)
        bd_iheap_update(h, p->popped[i]);
    *lcb_out = best_lcb;
    return best;
}

/* Does any tester have a run to give? */
static int any_runnable(const spc *p)
{
    for (size_t i = 0; i < p->n_samples; i++)
        if (p->samples[i].runnable.n)
            return 1;
    return 0;
}

/* ------------------------------------------------------------ configs */

static void add_tester(spc *p, json_t *config, int sample)
{
    if (p->n_testers == p->cap_testers) {
        p->cap_testers = p->cap_testers ? 2 * p->cap_testers : 16;
        p->testers = bd_xrealloc(p->testers, p->cap_testers * sizeof *p->testers);
        p->key = bd_xrealloc(p->key, p->cap_testers * sizeof *p->key);
        p->popped = bd_xrealloc(p->popped, p->cap_testers * sizeof *p->popped);
    }
    size_t k = p->n_testers++;
    spc_tester_init(&p->testers[k], config, sample, p->kappa0, p->finite ? p->n_instances : 0);
    tester_changed(p, k);
}

static void add_sample(spc *p, size_t size)
{
    if (p->n_samples == p->cap_samples) {
        p->cap_samples = p->cap_samples ? 2 * p->cap_samples : 8;
        p->samples = bd_xrealloc(p->samples, p->cap_samples * sizeof *p->samples);
    }
    size_t i = p->n_samples++;
    p->samples[i] = (spc_sample){.first = p->n_testers,
                                 .size = size,
                                 .weight = 1.0 / (double)((i + 1) * (i + 1)),
                                 .key_t = !p->lcb_now ? INT64_MAX : p->finite ? 0 : SPC_FIRST_HORIZON};
    bd_iheap_init(&p->samples[i].runnable, key_less, p);
}

/* Sample i of the large-space extension: first_sample * 2^i fresh draws. */
static void join_sample(spc *p)
{
    size_t i = p->n_samples, size = p->first_sample << i;
    bd_rng rng;
    bd_rng_seed(&rng, p->def->seed ^ SPC_SAMPLE_SALT, (uint64_t)i);
    add_sample(p, size);
    for (size_t k = 0; k < size; k++)
        add_tester(p, bd_space_sample(p->def->space, &rng), (int)i);
}

/* May the next sample join (its size fits under max_configs)? */
static int next_sample_fits(const spc *p)
{
    return p->sampled && p->n_samples < SPC_MAX_SAMPLES && p->n_testers + (p->first_sample << p->n_samples) <= p->max_configs;
}

/* Option `configs`: a list of configs of the space, without repeats. */
static int read_config_list(spc *p, const json_t *list, bd_err *err)
{
    int rc = bd_opt_config_list(list, p->def->space, SPC_MAX_CONFIGS, err);
    if (rc)
        return rc;
    size_t n = json_array_size(list);
    add_sample(p, n);
    for (size_t i = 0; i < n; i++)
        add_tester(p, bd_space_canonical_config(p->def->space, json_array_get(list, i)), 0); /* 2, not 2.0 */
    return 0;
}

/* The configs: the option's list, one categorical's choices, or samples. */
static int build_configs(spc *p, const json_t *list, bd_err *err)
{
    if (list)
        return read_config_list(p, list, err);
    const bd_space *space = p->def->space;
    const bd_param *only = bd_space_size(space) == 1 ? bd_space_param(space, 0) : NULL;
    if (only && only->type == BD_PARAM_CATEGORICAL && json_array_size(only->choices) <= SPC_MAX_CONFIGS) {
        size_t n = json_array_size(only->choices);
        add_sample(p, n);
        for (size_t i = 0; i < n; i++)
            add_tester(p, json_pack("{s:O}", only->name, json_array_get(only->choices, i)), 0);
        return 0;
    }
    if (p->first_sample > p->max_configs)
        return bd_err_set(err, BD_EINVAL, "scheduler.options.first_sample", "must not exceed max_configs (%zu)",
                          p->max_configs);
    p->sampled = 1;
    join_sample(p);
    return 0;
}

/* The study's instance at stream position pos: pass pos / n, in that
 * pass's order (built on first use, deterministically from the seed). */
static int64_t instance_at(spc *p, int64_t pos)
{
    int64_t n = p->n_instances, pass = pos / n, i = pos % n;
    if (!p->shuffle)
        return i;
    if ((size_t)pass >= p->n_passes) {
        size_t more = (size_t)pass + 1;
        p->pass_order = bd_xrealloc(p->pass_order, more * sizeof *p->pass_order);
        memset(p->pass_order + p->n_passes, 0, (more - p->n_passes) * sizeof *p->pass_order);
        p->n_passes = more;
    }
    if (!p->pass_order[pass]) {
        int64_t *o = bd_xmalloc((size_t)n * sizeof *o);
        bd_rng rng;
        bd_rng_seed(&rng, p->def->seed ^ SPC_ORDER_SALT, (uint64_t)pass);
        for (int64_t k = 0; k < n; k++)
            o[k] = k;
        for (int64_t k = n - 1; k > 0; k--) { /* Fisher-Yates */
            int64_t j = (int64_t)bd_rng_below(&rng, (uint64_t)k + 1), tmp = o[k];
            o[k] = o[j];
            o[j] = tmp;
        }
        p->pass_order[pass] = o;
    }
    return p->pass_order[pass][i];
}

/* ------------------------------------------------------------- create */

static void spc_destroy(bd_sched *s);

static int read_options(spc *p, const bd_study_def *def, bd_err *err)
{
    static const char *const known[] = {"kappa0", "multiplier", "par", "configs", "first_sample", "max_configs",
                                        "max_failures", "shuffle_instances", "lcb", "stream", NULL};
    static const char *const lcb_modes[] = {"current", "last_step", NULL};
    static const char *const streams[] = {"cycle", "once", "finite", NULL};
    const char *lcb_mode, *stream;
    const json_t *o = def->options;
    long long first, max_configs, max_failures;
    double dflt_kappa0 = fmin(fmax(1.0, def->r_min), def->r_max);
    int rc = bd_opt_known(o, known, err);
    if (!rc)
        rc = bd_opt_number(o, "kappa0", dflt_kappa0, def->r_min, def->r_max, &p->kappa0, err);
    if (!rc)
        rc = bd_opt_number(o, "multiplier", 2, 1.01, 1000, &p->multiplier, err);
    if (!rc)
        rc = bd_opt_number(o, "par", 1, 1, 1000, &p->par, err);
    if (!rc)
        rc = bd_opt_int(o, "first_sample", 8, 1, SPC_MAX_CONFIGS, &first, err);
    if (!rc)
        rc = bd_opt_int(o, "max_configs", 1024, 1, SPC_MAX_CONFIGS, &max_configs, err);
    if (!rc)
        rc = bd_opt_int(o, "max_failures", 3, 1, 100, &max_failures, err);
    if (!rc)
        rc = bd_opt_bool(o, "shuffle_instances", 1, &p->shuffle, err);
    if (!rc)
        rc = bd_opt_string(o, "lcb", "current", lcb_modes, &lcb_mode, err);
    if (!rc)
        rc = bd_opt_string(o, "stream", "cycle", streams, &stream, err);
    if (rc)
        return rc;
    p->finite = strcmp(stream, "finite") == 0;
    p->stream_end = strcmp(stream, "cycle") == 0 ? INT64_MAX : (int64_t)def->n_instances;
    p->lcb_now = strcmp(lcb_mode, "current") == 0;
    p->first_sample = (size_t)first;
    p->max_configs = (size_t)max_configs;
    p->max_failures = (int)max_failures;
    return 0;
}

static int spc_create(const bd_study_def *def, bd_sched **out, bd_err *err)
{
    if (def->maximize)
        return bd_err_set(err, BD_EINVAL, "objective.goal", "spc minimizes runtime: the goal must be \"minimize\"");
    if (def->n_instances == 0)
        return bd_err_set(err, BD_EINVAL, "instances", "spc runs configs on problem instances: declare them");
    spc *p = bd_xcalloc(1, sizeof *p);
    p->base.ops = &bd_sched_spc;
    p->def = def;
    p->cap_max = def->r_max;
    p->n_instances = (int64_t)def->n_instances;
    int rc = read_options(p, def, err);
    if (!rc)
        rc = build_configs(p, json_object_get(def->options, "configs"), err);
    if (rc) {
        spc_destroy(&p->base);
        return rc;
    }
    *out = &p->base;
    return 0;
}

/* ------------------------------------------------------------ suggest */

static double share_of(const spc_sample *s)
{
    return (s->charged + s->reserved) / s->weight;
}

/* Which tester runs next: the joined sample with the smallest weighted
 * time, then its smallest-LCB tester (ties: ahead()); idle testers first.
 * Samples tied on time compare their testers. -1 if no tester has a run. */
static long pick_tester(spc *p, spc_run *run, int *fresh)
{
    size_t order[SPC_MAX_SAMPLES], n = 0;
    for (size_t i = 0; i < p->n_samples; i++) { /* runnable samples by share, then index: insertion sort */
        if (!p->samples[i].runnable.n)
            continue;
        size_t at = n++;
        while (at > 0 && share_of(&p->samples[order[at - 1]]) > share_of(&p->samples[i])) {
            order[at] = order[at - 1];
            at--;
        }
        order[at] = i;
    }
    for (int idle_only = 1; idle_only >= 0; idle_only--) {
        long best = -1;
        double best_share = 0, best_lcb = 0;
        for (size_t j = 0; j < n; j++) {
            spc_sample *s = &p->samples[order[j]];
            if (best >= 0 && share_of(s) > best_share)
                break;
            double lcb;
            long k = pick_in_sample(p, s, idle_only, &lcb);
            if (k < 0)
                continue;
            if (best < 0) {
                best_share = share_of(s);
                best = k;
                best_lcb = lcb;
            } else if (ahead(p, (size_t)k, lcb, (size_t)best, best_lcb)) {
                best = k;
                best_lcb = lcb;
            }
        }
        if (best >= 0) {
            spc_tester_next(&p->testers[best], p->stream_end, run, fresh);
            return best;
        }
    }
    return -1;
}

static int spc_suggest(bd_sched *s, const bd_suggest_ctx *ctx, bd_suggestion *out, bd_err *err)
{
    (void)ctx;
    (void)err;
    spc *p = (spc *)s;
    spc_run run;
    int fresh;
    long k = pick_tester(p, &run, &fresh);
    if (k < 0)
        return p->running ? BD_SUGGEST_WAIT : BD_SUGGEST_DONE;
    const spc_tester *t = &p->testers[k];
    out->config = json_incref(t->config);
    out->config_id = t->config_id;
    out->budget = run.cap;
    out->has_instance = 1;
    out->instance = instance_at(p, run.position);
    out->extra = json_pack("{s:I, s:i, s:I, s:I}", "tester", (json_int_t)k, "sample", t->sample, "stream_position",
                           (json_int_t)run.position, "pass", (json_int_t)(run.position / p->n_instances));
    return BD_SUGGEST_TRIAL;
}

/* ------------------------------------------------------------ observe */

/* Samples join by the time charged, or when every joined tester is done. */
static void join_due_samples(spc *p)
{
    while (next_sample_fits(p)) {
        size_t i = p->n_samples, size = p->first_sample << i;
        int due = p->charged >= p->kappa0 * (double)size * (double)((i + 1) * (i + 1));
        if (!due && p->running == 0 && !any_runnable(p))
            due = 1;
        if (!due)
            break;
        join_sample(p);
    }
}

static void on_created(spc *p, const bd_event *ev)
{
    const json_t *tester = json_object_get(ev->extra, "tester"); /* extra may be NULL: then so is tester */
    const json_t *position = json_object_get(ev->extra, "stream_position");
    json_int_t k = json_is_integer(tester) ? json_integer_value(tester) : -1;
    json_int_t pos = json_is_integer(position) ? json_integer_value(position) : -1;
    if (k < 0 || (size_t)k >= p->n_testers || pos < 0 || pos > p->testers[k].r || pos >= p->stream_end ||
        !ev->has_instance || ev->instance != instance_at(p, pos))
        return; /* not a run this scheduler proposed */
    spc_tester *t = &p->testers[k];
    spc_run run = {.position = pos, .cap = ev->budget};
    spc_tester_start(t, &run, run.position == t->r);
    tester_changed(p, (size_t)k);
    if (!t->config_id)
        t->config_id = ev->config_id;
    spc_flight *f = bd_xmalloc(sizeof *f);
    *f = (spc_flight){.tester = (size_t)k, .run = run};
    bd_idmap_put(&p->flights, ev->trial_id, f);
    p->samples[t->sample].reserved += run.cap;
    p->created++;
    p->running++;
}

/* A run ended: COMPLETED (ok = 1) or failed, expired, stopped (ok = 0). */
static void on_ended(spc *p, const bd_event *ev, int ok)
{
    spc_flight *f = bd_idmap_get(&p->flights, ev->trial_id);
    if (!f)
        return;
    bd_idmap_put(&p->flights, ev->trial_id, NULL);
    spc_tester *t = &p->testers[f->tester];
    spc_sample *s = &p->samples[t->sample];
    s->reserved -= f->run.cap;
    p->running--;
    if (ok && (ev->timeout || isfinite(ev->loss))) {
        double charge = ev->timeout ? f->run.cap : fmax(ev->loss, 0);
        spc_tester_finish(t, &f->run, ev->timeout, ev->loss, p->cap_max, p->multiplier, p->par, s->t);
        s->t++;
        s->charged += charge;
        p->charged += charge;
    } else {
        spc_tester_fail(t, &f->run, p->max_failures, p->cap_max, p->par, s->t);
    }
    tester_changed(p, f->tester);
    advance_key_t(p, s);
    free(f);
    join_due_samples(p);
}

static int spc_observe(bd_sched *s, const bd_observe_ctx *ctx, const bd_event *ev, bd_decision *out, bd_err *err)
{
    (void)ctx;
    (void)out;
    (void)err;
    spc *p = (spc *)s;
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

static bd_sched_status spc_status(const bd_sched *s)
{
    const spc *p = (const spc *)s;
    if (any_runnable(p)) /* reads ask this often: O(samples), no LCB is computed */
        return BD_STATUS_RUNNING;
    return p->running ? BD_STATUS_WAITING : BD_STATUS_DONE;
}

/* ----------------------------------------------------------- describe */

/* The paper's anytime answer: the most active instances, then the smaller
 * mean, then the earlier config. */
static long most_active_among(const spc *p, size_t from, size_t to)
{
    long best = -1;
    for (size_t k = from; k < to; k++) {
        const spc_tester *t = &p->testers[k];
        if (!t->valued)
            continue;
        const spc_tester *b = best >= 0 ? &p->testers[best] : NULL;
        if (!b || t->r > b->r || (t->r == b->r && spc_tester_mean(t) < spc_tester_mean(b)))
            best = (long)k;
    }
    return best;
}

/* With a finite instance set: among the testers with at least half as many
 * active instances as the most active one, the smallest mean with every
 * still-queued timeout counted at the worst value (cap_max * par); ties go
 * to the most active, then the earlier config. Why: "most active" picks the
 * config SPC ran longest, which favours the first samples (a larger sample
 * gets less time per config) and a config that spent its time on timeouts;
 * counting a pending timeout at the worst asks for evidence, so a config
 * only leads once its runs have finished under the cap, and the half rule
 * keeps a config with a handful of lucky instances out. */
static long best_evidenced_among(const spc *p, size_t from, size_t to)
{
    int64_t r_max = 0;
    for (size_t k = from; k < to; k++)
        if (p->testers[k].valued && p->testers[k].r > r_max)
            r_max = p->testers[k].r;
    long best = -1;
    double best_mean = 0, worst = p->cap_max * p->par;
    for (size_t k = from; k < to; k++) {
        const spc_tester *t = &p->testers[k];
        if (!t->valued || 2 * t->r < r_max)
            continue;
        double mean = spc_tester_mean_at_worst(t, worst);
        if (best < 0 || mean < best_mean || (mean == best_mean && t->r > p->testers[best].r)) {
            best = (long)k;
            best_mean = mean;
        }
    }
    return best;
}

static long incumbent_among(const spc *p, size_t from, size_t to)
{
    return p->finite ? best_evidenced_among(p, from, to) : most_active_among(p, from, to);
}

static long incumbent(const spc *p)
{
    return incumbent_among(p, 0, p->n_testers);
}

static json_t *tester_json(const spc *p, size_t k)
{
    const spc_tester *t = &p->testers[k];
    double mean = spc_tester_mean(t);
    json_t *j = json_pack("{s:I, s:O, s:I, s:i, s:I, s:I, s:I, s:f, s:f, s:I, s:I, s:i, s:I, s:f}", "tester",
                          (json_int_t)k, "config", t->config, "config_id", (json_int_t)t->config_id, "sample",
                          t->sample, "active_instances", (json_int_t)t->r, "queue_bound", (json_int_t)t->q,
                          "queue_length", (json_int_t)t->q_len, "cap", t->theta, "lcb", lcb_of(p, k), "solved",
                          (json_int_t)t->solved, "runs", (json_int_t)t->steps, "in_flight", t->in_flight,
                          "retries_pending", (json_int_t)t->n_retry, "seconds", t->seconds);
    json_object_set_new(j, "mean_capped_runtime", isnan(mean) ? json_null() : json_real(mean));
    return j;
}

static json_t *incumbent_json(const spc *p, long k)
{
    const spc_tester *t = &p->testers[k];
    return json_pack("{s:I, s:I, s:O, s:f, s:f, s:I, s:I}", "trial_id", (json_int_t)t->config_id, "config_id",
                     (json_int_t)t->config_id, "config", t->config, "value", spc_tester_mean(t), "budget", t->theta,
                     "active_instances", (json_int_t)t->r, "solved", (json_int_t)t->solved);
}

typedef struct activity {
    int64_t r;
    double mean; /* INFINITY without values */
    size_t k;
} activity;

/* Order for describe()'s list: the most active first, then the smaller mean. */
static int activity_cmp(const void *a, const void *b)
{
    const activity *x = a, *y = b;
    if (x->r != y->r)
        return x->r > y->r ? -1 : 1;
    if (x->mean != y->mean)
        return x->mean < y->mean ? -1 : 1;
    return x->k < y->k ? -1 : 1;
}

/* The most active testers, at most SPC_DESCRIBED_TESTERS of them: a study of
 * 4,096 configs would otherwise answer every GET with a megabyte. */
static json_t *testers_json(const spc *p)
{
    activity *order = bd_xmalloc((p->n_testers ? p->n_testers : 1) * sizeof *order);
    for (size_t k = 0; k < p->n_testers; k++) {
        const spc_tester *t = &p->testers[k];
        order[k] = (activity){.r = t->r, .mean = t->valued ? spc_tester_mean(t) : INFINITY, .k = k};
    }
    qsort(order, p->n_testers, sizeof *order, activity_cmp);
    json_t *testers = json_array();
    for (size_t k = 0; k < p->n_testers && k < SPC_DESCRIBED_TESTERS; k++)
        json_array_append_new(testers, tester_json(p, order[k].k));
    free(order);
    return testers;
}

static int spc_describe(const bd_sched *s, json_t **out)
{
    const spc *p = (const spc *)s;
    json_t *testers = testers_json(p), *samples = json_array();
    for (size_t i = 0; i < p->n_samples; i++) {
        const spc_sample *sm = &p->samples[i];
        long own = incumbent_among(p, sm->first, sm->first + sm->size);
        json_array_append_new(samples, json_pack("{s:I, s:f, s:f, s:I, s:I}", "size", (json_int_t)sm->size, "weight",
                                                 sm->weight, "seconds", sm->charged, "t", (json_int_t)sm->t,
                                                 "incumbent_tester", (json_int_t)own));
    }
    *out = json_pack("{s:s, s:s, s:s, s:f, s:f, s:f, s:f, s:I, s:I, s:f, s:o, s:I, s:o}", "configs",
                     p->sampled ? "sampled" : "list", "lcb", p->lcb_now ? "current" : "last_step", "stream",
                     p->finite ? "finite" : p->stream_end == INT64_MAX ? "cycle" : "once", "kappa0", p->kappa0,
                     "multiplier", p->multiplier, "par", p->par, "max_cap", p->cap_max, "runs", (json_int_t)p->created,
                     "running", (json_int_t)p->running, "seconds", p->charged, "samples", samples, "testers_total",
                     (json_int_t)p->n_testers, "testers", testers);
    long k = incumbent(p);
    if (k >= 0)
        json_object_set_new(*out, "incumbent", incumbent_json(p, k));
    return 0;
}

/* New studies get the finite-instance rules; a stored study without the
 * option keeps the paper's cycling stream (sched.h, new_study_defaults). */
static void spc_new_study_defaults(const bd_study_def *def, json_t *options)
{
    (void)def;
    if (!json_object_get(options, "stream"))
        json_object_set_new(options, "stream", json_string("finite"));
}

static void spc_destroy(bd_sched *s)
{
    spc *p = (spc *)s;
    if (!p)
        return;
    for (size_t i = 0; i < p->flights.cap; i++)
        free(p->flights.slots[i].value);
    bd_idmap_clear(&p->flights);
    for (size_t k = 0; k < p->n_testers; k++)
        spc_tester_clear(&p->testers[k]);
    free(p->testers);
    free(p->key);
    free(p->popped);
    for (size_t i = 0; i < p->n_samples; i++)
        bd_iheap_clear(&p->samples[i].runnable);
    free(p->samples);
    for (size_t i = 0; i < p->n_passes; i++)
        free(p->pass_order[i]);
    free(p->pass_order);
    free(p);
}

const struct bd_sched_ops bd_sched_spc = {
    .abi = BD_SCHED_ABI,
    .name = "spc",
    .multi_fidelity = 1,
    .create = spc_create,
    .suggest = spc_suggest,
    .observe = spc_observe,
    .status = spc_status,
    .describe = spc_describe,
    .destroy = spc_destroy,
    .new_study_defaults = spc_new_study_defaults,
};
