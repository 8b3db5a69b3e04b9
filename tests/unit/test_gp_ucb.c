/* test_gp_ucb.c: GP-UCB (server/sched/gp_ucb.c) through the scheduler
 * harness. Synthetic objectives are fine here: these check behaviour (it
 * models, it spreads parallel trials, it replays exactly, it survives bad
 * values); quality on real training is for tests/bench. */
#include <criterion/criterion.h>

#include "sched_harness.h"

extern const struct bd_sched_ops bd_sched_gp_ucb;
extern const struct bd_sched_ops bd_sched_random;

#define GP (&bd_sched_gp_ucb)

static const char *const space2 =
    "[{\"name\": \"x\", \"type\": \"float\", \"low\": 0, \"high\": 1},"
    " {\"name\": \"y\", \"type\": \"float\", \"low\": 0, \"high\": 1}]";

/* A smooth bowl with its minimum 0 at (0.7, 0.2). */
static int bowl(const hn *h, const hn_trial *t, void *ud, double *loss)
{
    (void)h;
    (void)ud;
    double x = json_number_value(json_object_get(t->config, "x"));
    double y = json_number_value(json_object_get(t->config, "y"));
    *loss = (x - 0.7) * (x - 0.7) + 2 * (y - 0.2) * (y - 0.2);
    return HN_COMPLETED;
}

static void open_ok(hn *h, const struct bd_sched_ops *ops, const char *params, const char *options)
{
    int rc = hn_open_space(h, ops, params, options, 1, 1, 0);
    cr_assert_eq(rc, 0, "create failed: %s (%s)", h->err.message, h->err.field);
}

Test(gp_ucb, beats_random_search_on_a_smooth_bowl_over_seeds)
{
    /* 30 trials each, five seeds, same run: GP-UCB's best must beat random
     * search's on at least four seeds, and its median best by a factor 5. */
    double gp_best[5], rnd_best[5];
    int wins = 0;
    for (int seed = 0; seed < 5; seed++) {
        hn h;
        open_ok(&h, GP, space2, "{\"n_init\": 6, \"max_trials\": 30}");
        h.def.seed = 100 + (uint64_t)seed;
        h.outcome = bowl;
        h.check_pure = seed == 0; /* suggest twice is costly; once is enough to check purity */
        cr_assert_eq(hn_run(&h, 1, HN_FIFO, 0), HN_DONE);
        gp_best[seed] = hn_best_loss(&h);
        hn_close(&h);
        open_ok(&h, &bd_sched_random, space2, "{\"max_trials\": 30}");
        h.def.seed = 100 + (uint64_t)seed;
        h.outcome = bowl;
        cr_assert_eq(hn_run(&h, 1, HN_FIFO, 0), HN_DONE);
        rnd_best[seed] = hn_best_loss(&h);
        hn_close(&h);
        wins += gp_best[seed] < rnd_best[seed];
    }
    double g[5], r[5];
    memcpy(g, gp_best, sizeof g);
    memcpy(r, rnd_best, sizeof r);
    for (int i = 0; i < 5; i++)
        for (int j = i + 1; j < 5; j++) {
            if (g[j] < g[i]) { double t = g[i]; g[i] = g[j]; g[j] = t; }
            if (r[j] < r[i]) { double t = r[i]; r[i] = r[j]; r[j] = t; }
        }
    cr_expect_geq(wins, 4, "GP-UCB beat random search on %d of 5 seeds", wins);
    cr_expect_lt(g[2] * 5, r[2], "median best: GP-UCB %g, random %g", g[2], r[2]);
}

Test(gp_ucb, parallel_workers_get_distinct_spread_points)
{
    hn h;
    open_ok(&h, GP, space2, "{\"n_init\": 6}");
    h.outcome = bowl;
    h.check_pure = 0;
    for (int i = 0; i < 12; i++) { /* a model first */
        int64_t id;
        cr_assert_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_TRIAL);
        hn_finish(&h, id);
    }
    int64_t ids[8];
    for (int w = 0; w < 8; w++) /* eight workers ask before any reports */
        cr_assert_eq(hn_suggest(&h, w, &ids[w]), BD_SUGGEST_TRIAL);
    double min_dist = INFINITY;
    for (int a = 0; a < 8; a++)
        for (int b = a + 1; b < 8; b++) {
            const json_t *ca = hn_get(&h, ids[a])->config, *cb = hn_get(&h, ids[b])->config;
            double dx = json_number_value(json_object_get(ca, "x")) - json_number_value(json_object_get(cb, "x"));
            double dy = json_number_value(json_object_get(ca, "y")) - json_number_value(json_object_get(cb, "y"));
            min_dist = fmin(min_dist, sqrt(dx * dx + dy * dy));
        }
    cr_expect_gt(min_dist, 0.01, "two workers got nearly the same point (%g apart)", min_dist);
    hn_close(&h);
}

/* Drives a study with completions, failures and diverged runs, then
 * rebuilds it from its events: the next suggestions are identical, with
 * either acquisition. */
Test(gp_ucb, replay_gives_the_same_next_suggestions)
{
    static const char *const options[] = {
        "{\"n_init\": 5}", "{\"n_init\": 5, \"acquisition\": \"logei\"}",
        "{\"n_init\": 5, \"acquisition\": \"logei\", \"cost_aware\": true, \"initial\": \"sobol\", "
        "\"warp\": \"quantile\"}"};
    for (size_t k = 0; k < 3; k++) {
        hn h;
        open_ok(&h, GP, space2, options[k]);
        h.check_pure = 0;
        for (int i = 0; i < 25; i++) {
            int64_t id;
            cr_assert_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_TRIAL);
            double loss;
            bowl(&h, hn_get(&h, id), NULL, &loss);
            double x = json_number_value(json_object_get(hn_get(&h, id)->config, "x"));
            if (i % 7 == 3)
                hn_fail(&h, id);
            else if (i % 9 == 4)
                hn_complete(&h, id, INFINITY); /* diverged */
            else if (i % 4 == 1)
                hn_complete(&h, id, loss); /* no seconds reported */
            else
                hn_complete_seconds(&h, id, loss, 1 + 3 * x);
        }
        if (k == 2) {
            json_t *d = hn_describe(&h);
            cr_expect(json_is_object(json_object_get(json_object_get(d, "model"), "cost_model")),
                      "cost_aware: describe shows the cost model");
            json_decref(d);
        }
        int64_t open_id;
        cr_assert_eq(hn_suggest(&h, 0, &open_id), BD_SUGGEST_TRIAL); /* one still running */
        bd_sched *r = hn_replay(&h);
        cr_expect(hn_same_next(&h, r, 3), "%s: replay differs", options[k]);
        GP->destroy(r);
        hn_close(&h);
    }
}

/* Categorical and conditional parameters, integers, all-equal values and
 * diverged runs: every proposal is valid (the harness checks it against
 * the space) and nothing fails. */
Test(gp_ucb, survives_mixed_conditional_spaces_and_degenerate_values)
{
    static const char *const mixed =
        "[{\"name\": \"algo\", \"type\": \"categorical\", \"choices\": [\"svm\", \"rf\", \"knn\"]},"
        " {\"name\": \"C\", \"type\": \"float\", \"low\": 0.001, \"high\": 100, \"log\": true, \"when\": {\"algo\": [\"svm\"]}},"
        " {\"name\": \"trees\", \"type\": \"int\", \"low\": 10, \"high\": 500, \"log\": true, \"when\": {\"algo\": [\"rf\"]}},"
        " {\"name\": \"k\", \"type\": \"int\", \"low\": 1, \"high\": 30, \"when\": {\"algo\": [\"knn\"]}},"
        " {\"name\": \"scale\", \"type\": \"categorical\", \"choices\": [true, false]}]";
    hn h;
    open_ok(&h, GP, mixed, "{\"n_init\": 4}");
    h.check_pure = 0;
    for (int i = 0; i < 30; i++) {
        int64_t id;
        cr_assert_eq(hn_suggest(&h, i % 3, &id), BD_SUGGEST_TRIAL);
        if (i % 11 == 5)
            hn_complete(&h, id, INFINITY);
        else
            hn_complete(&h, id, 0.25); /* all equal */
    }
    json_t *d = hn_describe(&h);
    cr_expect_eq(json_integer_value(json_object_get(d, "observations")), 30);
    cr_expect(json_is_object(json_object_get(d, "model")), "a model despite all-equal values");
    json_decref(d);
    hn_close(&h);
}

/* The loss does not depend on x, the seconds grow as exp(5 x): with
 * cost_aware the proposals after the random start go to small x (EI per
 * second), without it they do not. Four seeds, in the same run. */
Test(gp_ucb, cost_aware_proposes_cheap_configs_when_losses_tie)
{
    double mean_x[2] = {0, 0};
    int count[2] = {0, 0};
    for (int cost = 0; cost <= 1; cost++)
        for (int seed = 0; seed < 4; seed++) {
            hn h;
            open_ok(&h, GP, space2,
                    cost ? "{\"n_init\": 6, \"acquisition\": \"logei\", \"cost_aware\": true}"
                         : "{\"n_init\": 6, \"acquisition\": \"logei\"}");
            h.def.seed = 700 + (uint64_t)seed;
            h.check_pure = 0;
            for (int i = 0; i < 30; i++) {
                int64_t id;
                cr_assert_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_TRIAL);
                const json_t *c = hn_get(&h, id)->config;
                double x = json_number_value(json_object_get(c, "x"));
                double y = json_number_value(json_object_get(c, "y"));
                hn_complete_seconds(&h, id, 2 * (y - 0.2) * (y - 0.2), exp(5 * x));
                if (i >= 6) {
                    mean_x[cost] += x;
                    count[cost]++;
                }
            }
            hn_close(&h);
        }
    mean_x[0] /= count[0];
    mean_x[1] /= count[1];
    cr_expect_lt(mean_x[1], 0.25, "cost_aware: mean x of the model's proposals %g", mean_x[1]);
    cr_expect_lt(mean_x[1] + 0.15, mean_x[0], "mean x with cost_aware %g, without %g", mean_x[1], mean_x[0]);
}

/* EI / cost^alpha: alpha 0 is plain EI (the cost model is fitted but
 * weighs nothing), so the proposals are those of cost_aware false, bit for
 * bit; alpha 1/2 lands between alpha 0 and 1 on the mean x of the
 * previous test's setting. */
static double cost_run(const char *options, uint64_t seed, double *xs, int n)
{
    hn h;
    open_ok(&h, GP, space2, options);
    h.def.seed = seed;
    h.check_pure = 0;
    double mean = 0;
    for (int i = 0; i < n; i++) {
        int64_t id;
        cr_assert_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_TRIAL);
        const json_t *c = hn_get(&h, id)->config;
        double x = json_number_value(json_object_get(c, "x"));
        double y = json_number_value(json_object_get(c, "y"));
        hn_complete_seconds(&h, id, 2 * (y - 0.2) * (y - 0.2), exp(5 * x));
        xs[i] = x;
        mean += i >= 6 ? x / (n - 6) : 0;
    }
    hn_close(&h);
    return mean;
}

Test(gp_ucb, cost_exponent_scales_the_cost_penalty)
{
    double a[20], b[20], c[30];
    cost_run("{\"n_init\": 6, \"acquisition\": \"logei\"}", 9, a, 20);
    cost_run("{\"n_init\": 6, \"acquisition\": \"logei\", \"cost_aware\": true, \"cost_exponent\": 0}", 9, b, 20);
    cr_expect(memcmp(a, b, sizeof a) == 0, "alpha 0 differs from plain log EI");
    double m[3] = {0, 0, 0};
    static const char *const opts[3] = {
        "{\"n_init\": 6, \"acquisition\": \"logei\"}",
        "{\"n_init\": 6, \"acquisition\": \"logei\", \"cost_aware\": true, \"cost_exponent\": 0.5}",
        "{\"n_init\": 6, \"acquisition\": \"logei\", \"cost_aware\": true}"};
    for (int k = 0; k < 3; k++)
        for (uint64_t seed = 0; seed < 4; seed++)
            m[k] += cost_run(opts[k], 700 + seed, c, 30) / 4;
    cr_expect(m[2] < m[1] && m[1] < m[0], "mean x: alpha 0 %g, 1/2 %g, 1 %g", m[0], m[1], m[2]);
}

/* "initial": "sobol": the first 8 trials fall one in each eighth of either
 * coordinate (a shifted Sobol sequence stays stratified), whatever order
 * the workers ask in; the same seed gives the same start, another seed
 * another one. */
Test(gp_ucb, sobol_start_is_stratified_and_a_function_of_the_seed)
{
    double first[3][8][2];
    for (int run = 0; run < 3; run++) {
        hn h;
        open_ok(&h, GP, space2, "{\"n_init\": 8, \"initial\": \"sobol\"}");
        h.def.seed = run == 2 ? 8 : 7;
        h.check_pure = 1;
        int seen[2][8] = {{0}};
        for (int i = 0; i < 8; i++) {
            int64_t id;
            cr_assert_eq(hn_suggest(&h, i % 3, &id), BD_SUGGEST_TRIAL);
            const json_t *c = hn_get(&h, id)->config;
            first[run][i][0] = json_number_value(json_object_get(c, "x"));
            first[run][i][1] = json_number_value(json_object_get(c, "y"));
            for (int j = 0; j < 2; j++) {
                int k = (int)floor(first[run][i][j] * 8);
                cr_assert(k >= 0 && k < 8, "coordinate %g", first[run][i][j]);
                seen[j][k]++;
            }
            if (i % 2)
                hn_complete(&h, id, 0.5);
        }
        for (int j = 0; j < 2; j++)
            for (int k = 0; k < 8; k++)
                cr_expect_eq(seen[j][k], 1, "run %d: coordinate %d has %d points in [%d/8, %d/8)", run, j,
                             seen[j][k], k, k + 1);
        hn_close(&h);
    }
    cr_expect(memcmp(first[0], first[1], sizeof first[0]) == 0, "same seed, different start");
    cr_expect(memcmp(first[0], first[2], sizeof first[0]) != 0, "another seed, the same start");
}

Test(gp_ucb, options_are_validated)
{
    hn h;
    cr_expect_eq(hn_open_space(&h, GP, space2, "{\"multiplier\": \"huge\"}", 1, 1, 0), BD_EINVAL);
    cr_expect_str_eq(h.err.field, "scheduler.options.multiplier");
    hn_close(&h);
    cr_expect_eq(hn_open_space(&h, GP, space2, "{\"n_init\": 0}", 1, 1, 0), BD_EINVAL);
    hn_close(&h);
    cr_expect_eq(hn_open_space(&h, GP, space2, "{\"ucb\": 2}", 1, 1, 0), BD_EINVAL);
    hn_close(&h);
    /* EI per second needs EI: UCB (the default of stored studies) has no ratio */
    cr_expect_eq(hn_open_space(&h, GP, space2, "{\"cost_aware\": true}", 1, 1, 0), BD_EINVAL);
    cr_expect_str_eq(h.err.field, "scheduler.options.cost_aware");
    hn_close(&h);
    cr_expect_eq(hn_open_space(&h, GP, space2, "{\"acquisition\": \"logei\", \"cost_aware\": 1}", 1, 1, 0),
                 BD_EINVAL);
    cr_expect_str_eq(h.err.field, "scheduler.options.cost_aware");
    hn_close(&h);
    cr_expect_eq(hn_open_space(&h, GP, space2, "{\"initial\": \"grid\"}", 1, 1, 0), BD_EINVAL);
    cr_expect_str_eq(h.err.field, "scheduler.options.initial");
    hn_close(&h);
    cr_expect_eq(hn_open_space(&h, GP, space2, "{\"acquisition\": \"logei\", \"cost_aware\": true, \"cost_exponent\": 2}",
                               1, 1, 0),
                 BD_EINVAL);
    cr_expect_str_eq(h.err.field, "scheduler.options.cost_exponent");
    hn_close(&h);
    cr_expect_eq(hn_open_space(&h, GP, space2, "{\"warp\": \"log\"}", 1, 1, 0), BD_EINVAL);
    cr_expect_str_eq(h.err.field, "scheduler.options.warp");
    hn_close(&h);
}

/* Duplicate configs (a space of 6 configs in all, so the model holds the
 * same point many times), expired and failed trials, diverged and
 * all-equal values, several workers: nothing fails, replay is exact. */
Test(gp_ucb, survives_duplicate_configs_and_expired_trials)
{
    static const char *const tiny =
        "[{\"name\": \"a\", \"type\": \"categorical\", \"choices\": [\"p\", \"q\", \"r\"]},"
        " {\"name\": \"b\", \"type\": \"int\", \"low\": 0, \"high\": 1}]";
    hn h;
    open_ok(&h, GP, tiny, "{\"n_init\": 3}");
    for (int i = 0; i < 30; i++) {
        int64_t id;
        cr_assert_eq(hn_suggest(&h, i % 4, &id), BD_SUGGEST_TRIAL);
        if (i % 6 == 1)
            hn_expire(&h, id);
        else if (i % 6 == 2)
            hn_fail(&h, id);
        else if (i % 6 == 3)
            hn_complete(&h, id, INFINITY);
        else
            hn_complete(&h, id, 0.5);
    }
    int64_t open_id;
    cr_assert_eq(hn_suggest(&h, 0, &open_id), BD_SUGGEST_TRIAL);
    bd_sched *r = hn_replay(&h);
    cr_expect(hn_same_next(&h, r, 2), "replay differs");
    GP->destroy(r);
    hn_close(&h);
}

/* New studies get log EI (issue 14); a body naming the acquisition or
 * UCB's own options keeps what it names, and a stored study without the
 * option (every one before) is created with UCB by create() itself. */
Test(gp_ucb, new_study_defaults_write_log_ei_unless_ucb_is_named)
{
    json_t *o = json_object();
    GP->new_study_defaults(NULL, o);
    cr_expect_str_eq(json_string_value(json_object_get(o, "acquisition")), "logei");
    json_decref(o);
    static const char *const named[] = {"{\"acquisition\": \"ucb\"}", "{\"multiplier\": \"code\"}", "{\"delta\": 0.05}"};
    for (size_t i = 0; i < sizeof named / sizeof *named; i++) {
        o = json_loads(named[i], 0, NULL);
        json_t *before = json_deep_copy(o);
        GP->new_study_defaults(NULL, o);
        cr_expect(json_equal(o, before), "%s gained an option", named[i]);
        json_decref(before);
        json_decref(o);
    }
}

/* held_bytes against the heap gp_ucb frees: its GP's factor (up to
 * BD_GP_TRAIN_CAP points squared) makes it several times the engine's
 * 256-byte-a-trial default (at 100 trials in 5 dimensions, ~150 KB). */
Test(gp_ucb, held_bytes_covers_the_heap_of_its_model)
{
#if defined(__SANITIZE_ADDRESS__)
    cr_skip_test("AddressSanitizer's allocator does not report through mallinfo2");
#endif
    static const char *const options[] = {"{\"acquisition\": \"logei\", \"max_trials\": 120}",
                                          "{\"acquisition\": \"logei\", \"cost_aware\": true, \"max_trials\": 250}"};
    for (size_t c = 0; c < 2; c++) {
        hn h;
        open_ok(&h, GP, space2, options[c]);
        h.outcome = bowl;
        h.check_pure = 0;
        cr_assert_eq(hn_run(&h, c + 1, HN_FIFO, 0), HN_DONE);
        hn_expect_held_bytes(&h, options[c]);
        hn_close(&h);
    }
}
