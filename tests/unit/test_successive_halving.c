/* test_successive_halving.c: Successive Halving (server/sched/
 * successive_halving.c; Jamieson & Talwalkar 2016, Figure 3) driven through
 * tests/unit/sched_harness.h. */
#include <criterion/criterion.h>
#include <time.h>

#include "sched_harness.h"

extern const struct bd_sched_ops bd_sched_successive_halving;

#define SH (&bd_sched_successive_halving)

static void open_ok(hn *h, const char *options, double r_min, double r_max, int integer)
{
    int rc = hn_open(h, SH, options, r_min, r_max, integer);
    cr_assert_eq(rc, 0, "create failed: %s (%s)", h->err.message, h->err.field);
}

/* Hand-made losses by config id (1..8) and budget. */
static int table_loss(const hn *h, const hn_trial *t, void *ud, double *loss)
{
    (void)h;
    (void)ud;
    static const double at2[] = {0, 0.8, 0.3, 0.5, 0.1, 0.9, 0.4, 0.7, 0.2};
    static const double at6[] = {0, 9, 0.05, 9, 0.25, 9, 0.15, 9, 0.35};
    static const double at14[] = {0, 9, 0.2, 9, 9, 9, 0.1, 9, 9};
    cr_assert(t->config_id >= 1 && t->config_id <= 8);
    *loss = t->budget == 2 ? at2[t->config_id] : t->budget == 6 ? at6[t->config_id] : at14[t->config_id];
    return HN_COMPLETED;
}

static void expect_ids(json_t *array, const long long *ids, size_t n, const char *what)
{
    cr_assert_eq(json_array_size(array), n, "%s: %zu ids", what, json_array_size(array));
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(json_integer_value(json_array_get(array, i)), ids[i], "%s[%zu] = %lld, expected %lld", what, i,
                     (long long)json_integer_value(json_array_get(array, i)), ids[i]);
}

Test(successive_halving, hand_made_n8_budget48)
{
    /* K = ceil(log2 8) = 3 rounds; r_k = floor(48 / (|S_k| * 3)):
     * r_0 = 2 (8 configs), r_1 = 4 (4 configs), r_2 = 8 (2 configs);
     * cumulative R = 2, 6, 14; spend 16 + 16 + 16 = 48 = B. */
    hn h;
    open_ok(&h, "{\"n\": 8, \"budget\": 48}", 1, 16, 1);
    h.outcome = table_loss;
    cr_assert_eq(hn_run(&h, 1, HN_FIFO, 0), HN_DONE);
    cr_expect_eq(hn_count(&h, -1, 0, 2), 8);
    cr_expect_eq(hn_count(&h, -1, 0, 6), 4);
    cr_expect_eq(hn_count(&h, -1, 0, 14), 2);
    cr_expect_eq(h.n_trials, 14);
    double spent = 0;
    for (size_t i = 0; i < h.n_trials; i++) {
        const hn_trial *t = &h.trials[i];
        spent += t->budget - (t->resume_from ? hn_get(&h, t->resume_from)->budget : 0);
    }
    cr_expect_leq(spent, 48);

    json_t *d = hn_describe(&h);
    json_t *rungs = json_object_get(json_array_get(json_object_get(d, "brackets"), 0), "rungs");
    static const long long s1[] = {4, 8, 2, 6}, s2[] = {2, 6};
    expect_ids(json_object_get(json_array_get(rungs, 0), "survivors"), s1, 4, "S_1");
    expect_ids(json_object_get(json_array_get(rungs, 1), "survivors"), s2, 2, "S_2");
    json_t *winner = json_object_get(json_array_get(json_object_get(d, "brackets"), 0), "winner");
    cr_expect_eq(json_integer_value(json_object_get(winner, "config_id")), 6);
    json_decref(d);

    /* the rung-1 trial of config 4 continues config 4's first trial */
    for (size_t i = 8; i < h.n_trials; i++) {
        const hn_trial *t = &h.trials[i];
        const hn_trial *prev = hn_get(&h, t->resume_from);
        cr_expect_eq(prev->config_id, t->config_id);
        cr_expect_eq(prev->budget, t->budget == 6 ? 2 : 6);
    }
    cr_expect_eq(h.trials[8].config_id, 4, "promotions come best first");
    cr_expect_eq(h.trials[8].resume_from, 4);
    hn_close(&h);
}

Test(successive_halving, eta3_keeps_a_third)
{
    /* n = 9, eta = 3: K = 2; r_0 = floor(54/(9*2)) = 3, r_1 = floor(54/(3*2)) = 9: R = 3, 12 */
    hn h;
    open_ok(&h, "{\"n\": 9, \"budget\": 54, \"eta\": 3}", 1, 27, 1);
    cr_assert_eq(hn_run(&h, 4, HN_RANDOM, 0), HN_DONE);
    cr_expect_eq(hn_count(&h, -1, 0, 3), 9);
    cr_expect_eq(hn_count(&h, -1, 0, 12), 3);
    cr_expect_eq(h.n_trials, 12);
    /* the survivors are the three smallest x (loss = x + 1/budget) */
    double xs[9];
    for (int i = 0; i < 9; i++)
        xs[i] = json_number_value(json_object_get(h.trials[i].config, "x"));
    for (size_t i = 9; i < 12; i++) {
        double x = json_number_value(json_object_get(h.trials[i].config, "x"));
        int better = 0;
        for (int j = 0; j < 9; j++)
            better += xs[j] < x;
        cr_expect_lt(better, 3);
    }
    hn_close(&h);
}

Test(successive_halving, n_not_a_power_of_eta)
{
    /* n = 5: K = 3, |S| = 5, 2, 1; B = 60: r = 4, 10, 20; R = 4, 14, 34 */
    hn h;
    open_ok(&h, "{\"n\": 5, \"budget\": 60}", 1, 100, 1);
    cr_assert_eq(hn_run(&h, 2, HN_LIFO, 0), HN_DONE);
    cr_expect_eq(hn_count(&h, -1, 0, 4), 5);
    cr_expect_eq(hn_count(&h, -1, 0, 14), 2);
    cr_expect_eq(hn_count(&h, -1, 0, 34), 1);
    hn_close(&h);
}

Test(successive_halving, defaults_follow_the_resource)
{
    /* resource 1..81, eta 2: n = 2^6 = 64, K = 6, B = 64*6 = 384: R = 1, 3, 7, 15, 31, 63 */
    hn h;
    open_ok(&h, "{}", 1, 81, 1);
    json_t *d = hn_describe(&h);
    cr_expect_eq(json_integer_value(json_object_get(d, "n")), 64);
    cr_expect_eq(json_integer_value(json_object_get(d, "rounds")), 6);
    cr_expect_eq(json_number_value(json_object_get(d, "budget")), 384);
    json_decref(d);
    cr_assert_eq(hn_run(&h, 3, HN_RANDOM, 0), HN_DONE);
    static const double R[] = {1, 3, 7, 15, 31, 63};
    for (int k = 0; k < 6; k++)
        cr_expect_eq(hn_count(&h, -1, 0, R[k]), 64 >> k, "round %d", k);
    hn_close(&h);
}

Test(successive_halving, budgets_are_capped_at_resource_max)
{
    /* n = 4, B = 400: r = 50, 100; R = 50, 150 -> capped at 100 */
    hn h;
    open_ok(&h, "{\"n\": 4, \"budget\": 400}", 1, 100, 1);
    cr_assert_eq(hn_run(&h, 1, HN_FIFO, 0), HN_DONE);
    cr_expect_eq(hn_count(&h, -1, 0, 50), 4);
    cr_expect_eq(hn_count(&h, -1, 0, 100), 2);
    hn_close(&h);
}

Test(successive_halving, doubling_trick_reuses_progress)
{
    /* n = 4, resource 1..8: K = 2, first B = 8 (= n * 2, the first doubling of
     * n with r_0 >= 1). Rounds: B=8: R = 1, 3; B=16: 2, 6; B=32: 4, 12->8;
     * B=64: 8, 8 (round 0 at resource.max: the last one). */
    hn h;
    open_ok(&h, "{\"n\": 4, \"doubling\": true}", 1, 8, 1);
    cr_assert_eq(hn_run(&h, 1, HN_FIFO, 0), HN_DONE);
    cr_expect_eq(hn_count(&h, 1, 0, 1), 4);
    cr_expect_eq(hn_count(&h, 1, 0, 3), 2);
    cr_expect_eq(hn_count(&h, 2, 0, 2), 2, "the two configs trained to 3 keep their loss");
    cr_expect_eq(hn_count(&h, 2, 0, 6), 2);
    cr_expect_eq(hn_count(&h, 3, 0, 4), 2);
    cr_expect_eq(hn_count(&h, 3, 0, 8), 2);
    cr_expect_eq(hn_count(&h, 4, 0, 8), 2);
    cr_expect_eq(h.n_trials, 16);
    /* only 4 configs ever; each config's budgets only grow and every later
     * trial resumes from that config's previous trial */
    for (size_t i = 0; i < h.n_trials; i++) {
        const hn_trial *t = &h.trials[i];
        cr_expect_leq(t->config_id, 4);
        if (t->config_id == t->id)
            continue;
        const hn_trial *prev = NULL;
        for (size_t j = 0; j < i; j++)
            if (h.trials[j].config_id == t->config_id)
                prev = &h.trials[j];
        cr_assert(prev);
        cr_expect_eq(t->resume_from, prev->id);
        cr_expect_gt(t->budget, prev->budget);
    }
    json_t *d = hn_describe(&h);
    cr_expect_eq(json_integer_value(json_object_get(d, "brackets_total")), 4);
    json_t *it2 = json_array_get(json_object_get(d, "brackets"), 1);
    cr_expect_eq(json_integer_value(json_object_get(json_array_get(json_object_get(it2, "rungs"), 0), "reused")), 2);
    /* ended rounds free their members, but the first round's 4 configs stay:
     * every round places them again */
    json_t *held = json_object_get(d, "held");
    cr_expect_eq(json_integer_value(json_object_get(held, "configs")), 4);
    cr_expect_eq(json_integer_value(json_object_get(held, "trials")), 0);
    json_decref(d);
    hn_close(&h);
}

static int fail_twice(const hn *h, const hn_trial *t, void *ud, double *loss)
{
    int *failures = ud;
    if (t->config_id == 3 && *failures < 2) {
        ++*failures;
        return HN_FAILED;
    }
    return hn_loss_default(h, t, NULL, loss);
}

Test(successive_halving, failed_trial_is_retried_then_completes)
{
    hn h;
    int failures = 0;
    open_ok(&h, "{\"n\": 4, \"budget\": 16}", 1, 16, 1);
    h.outcome = fail_twice;
    h.ud = &failures;
    cr_assert_eq(hn_run(&h, 2, HN_FIFO, 0), HN_DONE);
    cr_expect_eq(failures, 2);
    cr_expect_eq(h.n_trials, 4 + 2 + 2);
    hn_close(&h);
}

Test(successive_halving, replay_gives_identical_next_suggestions)
{
    static const char *const options[] = {"{\"n\": 32}", "{\"n\": 16, \"doubling\": true}",
                                          "{\"n\": 27, \"eta\": 3, \"budget\": 500}"};
    for (size_t k = 0; k < 3; k++)
        for (long long stop = 5; stop < 80; stop += 17) {
            hn h;
            open_ok(&h, options[k], 1, 64, 1);
            hn_run(&h, 5, HN_RANDOM, stop);
            bd_sched *r = hn_replay(&h);
            cr_expect(hn_same_next(&h, r, 30), "%s: replay after %lld trials differs", options[k], stop);
            SH->destroy(r);
            hn_close(&h);
        }
}

Test(successive_halving, options_are_validated)
{
    static const struct {
        const char *options;
        const char *field;
    } bad[] = {
        {"{\"n\": 8, \"budget\": 23}", "scheduler.options.budget"}, /* below n * K = 24 */
        {"{\"n\": 1}", "scheduler.options.n"},
        {"{\"eta\": 1}", "scheduler.options.eta"},
        {"{\"doubling\": 1}", "scheduler.options.doubling"},
        {"{\"rounds\": 3}", "scheduler.options.rounds"},
        {"{\"type\": \"stoping\"}", "scheduler.options.type"},
        {"{\"type\": \"stopping\", \"doubling\": true}", "scheduler.options.type"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        hn h;
        cr_expect_eq(hn_open(&h, SH, bad[i].options, 1, 81, 1), BD_EINVAL, "%s accepted", bad[i].options);
        cr_expect_str_eq(h.err.field, bad[i].field, "%s", bad[i].options);
        hn_close(&h);
    }
}

Test(successive_halving, scale_131k_trials)
{
    /* n = 65536, K = 16: 131070 trials */
    hn h;
    open_ok(&h, "{\"n\": 65536}", 1, 1e6, 1);
    h.check_pure = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cr_assert_eq(hn_run(&h, 16, HN_RANDOM, 0), HN_DONE);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    fprintf(stderr, "successive_halving: %zu trials (16 workers, random order) in %.3f s\n", h.n_trials,
            (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
    cr_expect_eq(h.n_trials, 131070);
    hn_close(&h);
}

/* ------------------------------------------------------ "type": "stopping" */

/* n = 4, eta = 2, resource 1..8: K = 2 rounds, B = 8, R_0 = 1, R_1 = 3.
 * Each config gets one trial with budget 3. Round 0 judges at epoch 1:
 *   0.5 (n 1: continue), 0.6 (top {0.5}: stop), 0.4 (top {0.4}: continue),
 *   0.45 (top {0.4, 0.45}: continue).
 * Config 3's trial then fails and is offered again from scratch (its round
 * 0 already passed); the three left complete and the best wins. */
Test(successive_halving, stopping_rung_decisions_by_hand)
{
    static const double round0[4] = {0.5, 0.6, 0.4, 0.45};
    static const int stop0[4] = {0, 1, 0, 0};
    hn h;
    open_ok(&h, "{\"n\": 4, \"type\": \"stopping\"}", 1, 8, 1);
    int64_t id[4], next;
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(hn_suggest(&h, i, &id[i]), BD_SUGGEST_TRIAL);
        cr_expect_eq(hn_get(&h, id[i])->budget, 3, "the last round's budget");
        cr_expect_eq(hn_get(&h, id[i])->resume_from, 0);
    }
    cr_expect_eq(hn_suggest(&h, 4, &next), BD_SUGGEST_WAIT, "all four configs are out");
    for (int i = 0; i < 4; i++) {
        bd_decision d = hn_measure(&h, id[i], 1, round0[i]);
        cr_expect_eq(d.stop, stop0[i], "round 0, trial %d", i + 1);
        if (d.stop)
            cr_expect(strstr(d.reason, "not in the top 1 of the 2 results"), "reason: %s", d.reason);
    }
    hn_fail(&h, id[2]);
    cr_assert_eq(hn_suggest(&h, 0, &next), BD_SUGGEST_TRIAL);
    cr_expect_eq(hn_get(&h, next)->config_id, id[2]);
    cr_expect_eq(hn_get(&h, next)->budget, 3);
    cr_expect_eq(hn_get(&h, next)->resume_from, 0);
    cr_expect_not(hn_measure(&h, next, 1, 0.9).stop, "round 0 is not judged twice");
    cr_expect_not(hn_measure(&h, next, 2, 0.5).stop);
    hn_complete(&h, id[0], 0.35);
    hn_complete(&h, id[3], 0.32);
    hn_complete(&h, next, 0.3);
    int64_t none;
    cr_expect_eq(hn_suggest(&h, 0, &none), BD_SUGGEST_DONE);
    json_t *d = hn_describe(&h);
    json_t *b = json_array_get(json_object_get(d, "brackets"), 0);
    cr_expect_str_eq(json_string_value(json_object_get(d, "type")), "stopping");
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(b, "winner"), "config_id")), id[2]);
    json_t *r0 = json_array_get(json_object_get(b, "rungs"), 0), *r1 = json_array_get(json_object_get(b, "rungs"), 1);
    cr_expect_eq(json_integer_value(json_object_get(r0, "judged")), 4);
    cr_expect_eq(json_integer_value(json_object_get(r0, "continued")), 3);
    cr_expect_eq(json_integer_value(json_object_get(r0, "stopped")), 1);
    cr_expect_eq(json_integer_value(json_object_get(r0, "failed")), 1);
    cr_expect_eq(json_integer_value(json_object_get(r1, "judged")), 3, "the completions");
    json_decref(d);
    hn_close(&h);
}

static double stop_curve(const hn *h, const hn_trial *t, int epoch, void *ud)
{
    (void)h;
    (void)ud;
    double x = json_number_value(json_object_get(t->config, "x"));
    return x + 1.0 / epoch + 0.05 * sin(7.0 * x * epoch + (double)t->id);
}

static int fail_every_7th(int64_t id)
{
    return id % 7 == 0;
}

/* The replay property for the stopping type (as test_asha's). */
Test(successive_halving, stopping_replay_gives_identical_decisions)
{
    static const char *const options[] = {"{\"type\": \"stopping\"}", "{\"type\": \"stopping\", \"n\": 27, \"eta\": 3}",
                                          "{\"type\": \"stopping\", \"n\": 32, \"sampler\": \"tpe\"}"};
    for (size_t k = 0; k < sizeof options / sizeof options[0]; k++)
        for (long long stop = 6; stop < 40; stop += 11) {
            hn h;
            open_ok(&h, options[k], 1, 64, 1);
            hn_run_epochs(&h, 4, HN_RANDOM, stop, stop_curve, NULL, fail_every_7th);
            hn_expect_replay_answers_alike(&h, stop_curve, NULL, options[k], stop);
            hn_close(&h);
        }
    hn h; /* and a whole study: every config once, some stopped, then done */
    open_ok(&h, options[1], 1, 64, 1);
    cr_expect_eq(hn_run_epochs(&h, 3, HN_RANDOM, 0, stop_curve, NULL, NULL), HN_DONE);
    long long stopped = 0;
    for (size_t i = 0; i < h.n_trials; i++)
        stopped += h.trials[i].state == HN_STOPPED;
    cr_expect_eq(h.n_trials, 27, "each config once");
    cr_expect_gt(stopped, 9, "%lld of 27 stopped", stopped);
    hn_close(&h);
}
