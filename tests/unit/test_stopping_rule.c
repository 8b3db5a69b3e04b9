/* test_stopping_rule.c: the median / percentile stopping rule
 * (server/sched/stopping_rule.h) that random, tpe and gp_ucb carry with the
 * option "stopping".
 *
 * The fixed vectors (stopping_rule_vectors.h) are Optuna 3.1's own decisions:
 * tests/unit/stopping_rule_vectors.py drives a real Optuna study (Debian's
 * python3-optuna) with MedianPruner / PercentilePruner through ask, report,
 * should_prune and tell, several trials at once, reports interleaved, some
 * out of step order, repeated or NaN, and writes every report with
 * should_prune()'s answer. Here the same reports go to a banditd scheduler
 * (as losses: negated for a maximized study, NaN as +INFINITY, the engine's
 * conventions) and every answer must be Optuna's. */
#include <criterion/criterion.h>

#include "sched_harness.h"
#include "server/sched/stopping_rule.h"

typedef struct vec_row {
    char op;   /* 'm': a report (measurement), 'c': the trial completes */
    int trial; /* 1, 2, ...: the banditd trial id (Optuna's number + 1) */
    int step;
    double value; /* as reported (NAN: diverged) */
    int stop;     /* 'm': Optuna's should_prune() */
} vec_row;

#include "stopping_rule_vectors.h"

extern const struct bd_sched_ops bd_sched_random, bd_sched_tpe, bd_sched_gp_ucb, bd_sched_asha;

/* A study over x in [0, 1] with these options, one budget (100), maximized or not. */
static void open_rule(hn *h, const struct bd_sched_ops *ops, const char *options, int maximize)
{
    cr_assert_eq(hn_open(h, ops, options, 100, 100, 1), 0, "%s: %s", h->err.field, h->err.message);
    if (maximize) { /* the rule reads def->maximize at create */
        ops->destroy(h->s);
        h->s = NULL;
        h->def.maximize = 1;
        cr_assert_eq(ops->create(&h->def, &h->s, &h->err), 0, "%s", h->err.message);
    }
}

static double loss_of(double value, int maximize)
{
    return isnan(value) ? INFINITY : maximize ? -value : value;
}

static void expect_optuna(const struct bd_sched_ops *ops, const vec_row *rows, size_t n, const char *options,
                          int maximize, const char *label)
{
    hn h;
    size_t stops = 0;
    open_rule(&h, ops, options, maximize);
    for (size_t i = 0; i < n; i++) {
        const vec_row *r = &rows[i];
        while ((int)h.n_trials < r->trial) {
            int64_t id;
            cr_assert_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_TRIAL);
        }
        if (r->op == 'c') {
            hn_complete(&h, r->trial, loss_of(r->value, maximize));
            continue;
        }
        bd_decision d = hn_measure(&h, r->trial, r->step, loss_of(r->value, maximize));
        /* fatal: after a different answer the two runs no longer hold the same trials */
        cr_assert_eq(d.stop, r->stop, "%s on %s, row %zu (trial %d, step %d, value %g): banditd %s, Optuna %s (%s)",
                     label, ops->name, i, r->trial, r->step, r->value, d.stop ? "stops" : "goes on",
                     r->stop ? "prunes" : "goes on", d.reason);
        if (d.stop) {
            cr_expect(strstr(d.reason, " rule: ") != NULL, "a stop says why: %s", d.reason);
            stops++;
        }
    }
    cr_expect_gt(stops, 0, "%s: the case stops nothing, so it shows little", label);
    hn_close(&h);
}

#define EXPECT_OPTUNA(ops, name)                                                                                       \
    expect_optuna(ops, name, sizeof name / sizeof name[0], name##_OPTIONS, name##_MAXIMIZE, #name)

#define EXPECT_OPTUNA_ALL(ops)                                                                                         \
    do {                                                                                                               \
        EXPECT_OPTUNA(ops, median_defaults);                                                                           \
        EXPECT_OPTUNA(ops, median_startup_warmup_interval);                                                            \
        EXPECT_OPTUNA(ops, percentile_25_min_trials_maximize);                                                         \
        EXPECT_OPTUNA(ops, percentile_70_maximize_warmup);                                                             \
        EXPECT_OPTUNA(ops, median_nan_and_repeats);                                                                    \
    } while (0)

Test(stopping_rule, optuna_31_decisions_on_random)
{
    EXPECT_OPTUNA_ALL(&bd_sched_random);
}

Test(stopping_rule, optuna_31_decisions_on_tpe)
{
    EXPECT_OPTUNA_ALL(&bd_sched_tpe);
}

Test(stopping_rule, optuna_31_decisions_on_gp_ucb)
{
    EXPECT_OPTUNA_ALL(&bd_sched_gp_ucb);
}

/* A hand-checked case, readable without Optuna (docs/ALGORITHMS.md quotes it):
 * five completed trials reported 0.5, 0.4, 0.3, 0.2, 0.1 at step 1; the
 * median there is 0.3. A trial reporting 0.35 at step 1 is stopped, one
 * reporting 0.3 goes on (not worse), and one whose best so far is 0.25 (at
 * step 0) goes on at step 1 with 0.9: the rule judges the best value, not
 * the last. */
Test(stopping_rule, median_of_five_hand_checked)
{
    hn h;
    int64_t id;
    open_rule(&h, &bd_sched_tpe, "{\"stopping\": {\"rule\": \"median\"}}", 0);
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_TRIAL);
        cr_assert_eq(hn_measure(&h, id, 1, 0.5 - 0.1 * i).stop, 0, "fewer than 5 completed trials: no stop");
        hn_complete(&h, id, 0.5 - 0.1 * i);
    }
    cr_assert_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_TRIAL);
    bd_decision d = hn_measure(&h, id, 1, 0.35);
    cr_expect_eq(d.stop, 1);
    cr_expect_str_eq(d.reason,
                     "median rule: best value 0.35 is worse than the median 0.3 of 5 completed trials at step 1");
    cr_assert_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_TRIAL);
    cr_expect_eq(hn_measure(&h, id, 1, 0.3).stop, 0);
    cr_assert_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_TRIAL);
    cr_expect_eq(hn_measure(&h, id, 0, 0.25).stop, 0, "no completed trial reported at step 0");
    cr_expect_eq(hn_measure(&h, id, 1, 0.9).stop, 0, "best so far 0.25 < 0.3");
    hn_close(&h);
}

/* A loss curve per config: x + 1/epoch with a little config-dependent wiggle. */
static double curve(const hn *h, const hn_trial *t, int epoch, void *ud)
{
    (void)h;
    (void)ud;
    double x = json_number_value(json_object_get(t->config, "x"));
    return x + 1.0 / epoch + 0.01 * sin(37 * x * epoch);
}

Test(stopping_rule, replay_answers_alike)
{
    static const struct bd_sched_ops *const all[] = {&bd_sched_random, &bd_sched_tpe, &bd_sched_gp_ucb};
    for (size_t k = 0; k < 3; k++)
        for (long long at = 8; at <= 40; at += 16) {
            hn h;
            open_rule(&h, all[k],
                      "{\"stopping\": {\"rule\": \"percentile\", \"percentile\": 40, \"startup_trials\": 3}}", 0);
            h.def.r_min = h.def.r_max = 10; /* hn_run_epochs completes a trial at its budget */
            all[k]->destroy(h.s);
            h.s = NULL;
            cr_assert_eq(all[k]->create(&h.def, &h.s, &h.err), 0);
            cr_assert_eq(hn_run_epochs(&h, 4, HN_RANDOM, at, curve, NULL, NULL), HN_LIMIT);
            size_t stopped = 0;
            for (size_t i = 0; i < h.n_trials; i++)
                stopped += h.trials[i].state == HN_STOPPED;
            if (at > 8)
                cr_expect_gt(stopped, 0, "%s: nothing stopped in %lld trials", all[k]->name, at);
            hn_expect_replay_answers_alike(&h, curve, NULL, all[k]->name, at);
            hn_close(&h);
        }
}

/* Without the option nothing changes: every measurement goes on, describe()
 * has no "stopping", and the suggestions are those of a study that never saw
 * a measurement. */
Test(stopping_rule, absent_option_never_stops)
{
    static const struct bd_sched_ops *const all[] = {&bd_sched_random, &bd_sched_tpe, &bd_sched_gp_ucb};
    for (size_t k = 0; k < 3; k++) {
        hn h, plain;
        open_rule(&h, all[k], "{}", 0);
        open_rule(&plain, all[k], "{}", 0);
        for (int i = 0; i < 12; i++) {
            int64_t id, id2;
            cr_assert_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_TRIAL);
            cr_assert_eq(hn_suggest(&plain, 0, &id2), BD_SUGGEST_TRIAL);
            for (int e = 1; e < 5; e++)
                cr_expect_eq(hn_measure(&h, id, e, 10.0 * i + e).stop, 0);
            hn_complete(&h, id, i);
            hn_complete(&plain, id2, i);
        }
        json_t *d = hn_describe(&h);
        cr_expect_null(json_object_get(d, "stopping"));
        json_decref(d);
        bd_sched *r = hn_replay(&plain);
        cr_expect(hn_same_next(&h, r, 5), "%s: measurements changed the suggestions", all[k]->name);
        all[k]->destroy(r);
        hn_close(&h);
        hn_close(&plain);
    }
}

/* The window: a step keeps the newest BD_STOP_WINDOW completed trials'
 * values. 600 trials reported 0 at step 1, then 512 reported 1: over all of
 * them the median is 0 and 0.5 would stop; over the window it is 1, so 0.5
 * goes on. The table keeps BD_STOP_MAX_STEPS steps, and the heap is bounded. */
Test(stopping_rule, window_and_step_caps)
{
    bd_study_def def = {.options = NULL};
    json_t *options = json_loads("{\"stopping\": {\"rule\": \"median\"}}", 0, NULL);
    def.options = options;
    bd_stop_rule *r = NULL;
    bd_err err;
    cr_assert_eq(bd_stop_rule_create(&def, &r, &err), 0);
    int64_t id = 1;
    for (int i = 0; i < 600 + BD_STOP_WINDOW; i++, id++) {
        bd_decision d = {0};
        bd_event m = {.type = BD_EV_MEASUREMENT, .trial_id = id, .step = 1, .loss = i < 600 ? 0 : 1};
        bd_stop_rule_observe(r, &m, &d);
        bd_event c = {.type = BD_EV_COMPLETED, .trial_id = id};
        bd_stop_rule_observe(r, &c, &d);
    }
    bd_decision d = {0};
    bd_event m = {.type = BD_EV_MEASUREMENT, .trial_id = id, .step = 1, .loss = 0.5};
    bd_stop_rule_observe(r, &m, &d);
    cr_expect_eq(d.stop, 0, "the window holds the newest %d values, all 1: %s", BD_STOP_WINDOW, d.reason);
    m.loss = 1.5; /* its best stays 0.5 */
    bd_stop_rule_observe(r, &m, &d);
    cr_expect_eq(d.stop, 0);
    id++;
    m = (bd_event){.type = BD_EV_MEASUREMENT, .trial_id = id, .step = 1, .loss = 1.5};
    bd_stop_rule_observe(r, &m, &d);
    cr_expect_eq(d.stop, 1, "1.5 is worse than 1");

    /* One trial reporting 3000 steps: its first BD_STOP_MAX_STEPS join the table. */
    id++;
    for (int s = 0; s < 3000; s++) {
        bd_decision x = {0};
        bd_event e = {.type = BD_EV_MEASUREMENT, .trial_id = id, .step = 10 + s, .loss = 1};
        bd_stop_rule_observe(r, &e, &x);
    }
    bd_event c = {.type = BD_EV_COMPLETED, .trial_id = id};
    bd_stop_rule_observe(r, &c, &d);
    json_t *desc = bd_stop_rule_describe(r);
    cr_expect_eq(json_integer_value(json_object_get(desc, "steps")), BD_STOP_MAX_STEPS);
    cr_expect_eq(json_integer_value(json_object_get(desc, "completed")), 600 + BD_STOP_WINDOW + 1);
    json_decref(desc);
    size_t bound = BD_STOP_MAX_STEPS * (2 * (BD_STOP_WINDOW * sizeof(double) + 32) + 96) + 64 * 1024;
    cr_expect_leq(bd_stop_rule_held_bytes(r), bound);
    cr_expect_gt(bd_stop_rule_held_bytes(r), (size_t)BD_STOP_MAX_STEPS * 2 * BD_STOP_WINDOW * sizeof(double));
    bd_stop_rule_free(r);
    json_decref(options);
}

/* Bad options: BD_EINVAL naming scheduler.options.stopping[.<key>]. */
Test(stopping_rule, bad_options_name_the_field)
{
    static const struct {
        const char *options, *field;
    } bad[] = {
        {"{\"stopping\": 3}", "scheduler.options.stopping"},
        {"{\"stopping\": \"median\"}", "scheduler.options.stopping"},
        {"{\"stopping\": {\"rule\": \"mean\"}}", "scheduler.options.stopping.rule"},
        {"{\"stopping\": {\"rule\": 1}}", "scheduler.options.stopping.rule"},
        {"{\"stopping\": {\"rule\": \"percentile\"}}", "scheduler.options.stopping.percentile"},
        {"{\"stopping\": {\"rule\": \"percentile\", \"percentile\": 101}}", "scheduler.options.stopping.percentile"},
        {"{\"stopping\": {\"rule\": \"percentile\", \"percentile\": -1}}", "scheduler.options.stopping.percentile"},
        {"{\"stopping\": {\"rule\": \"median\", \"percentile\": 30}}", "scheduler.options.stopping.percentile"},
        {"{\"stopping\": {\"startup_trials\": -1}}", "scheduler.options.stopping.startup_trials"},
        {"{\"stopping\": {\"startup_trials\": 2.5}}", "scheduler.options.stopping.startup_trials"},
        {"{\"stopping\": {\"warmup_steps\": -1}}", "scheduler.options.stopping.warmup_steps"},
        {"{\"stopping\": {\"interval_steps\": 0}}", "scheduler.options.stopping.interval_steps"},
        {"{\"stopping\": {\"interval_steps\": \"1\"}}", "scheduler.options.stopping.interval_steps"},
        {"{\"stopping\": {\"min_trials\": 0}}", "scheduler.options.stopping.min_trials"},
        {"{\"stopping\": {\"patience\": 3}}", "scheduler.options.stopping.patience"},
    };
    static const struct bd_sched_ops *const all[] = {&bd_sched_random, &bd_sched_tpe, &bd_sched_gp_ucb};
    for (size_t k = 0; k < 3; k++)
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            hn h;
            cr_expect_eq(hn_open(&h, all[k], bad[i].options, 100, 100, 1), BD_EINVAL, "%s: %s accepted", all[k]->name,
                         bad[i].options);
            cr_expect_str_eq(h.err.field, bad[i].field, "%s: %s", all[k]->name, bad[i].options);
            hn_close(&h);
        }
    /* Good ones, including null (as absent) and every key. */
    static const char *const good[] = {
        "{\"stopping\": null}",
        "{\"stopping\": {}}",
        "{\"stopping\": {\"rule\": \"median\", \"percentile\": 50}}",
        "{\"stopping\": {\"rule\": \"percentile\", \"percentile\": 0, \"startup_trials\": 0, \"warmup_steps\": 2.5, "
        "\"interval_steps\": 0.5, \"min_trials\": 3}}",
    };
    for (size_t k = 0; k < 3; k++)
        for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
            hn h;
            cr_expect_eq(hn_open(&h, all[k], good[i], 100, 100, 1), 0, "%s: %s: %s", all[k]->name, good[i],
                         h.err.message);
            hn_close(&h);
        }
    /* A scheduler that does not carry the rule refuses the option as unknown. */
    hn h;
    cr_expect_eq(hn_open(&h, &bd_sched_asha, "{\"stopping\": {\"rule\": \"median\"}}", 1, 27, 1), BD_EINVAL);
    cr_expect_str_eq(h.err.field, "scheduler.options.stopping");
    hn_close(&h);
}
