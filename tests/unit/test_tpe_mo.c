/* test_tpe_mo.c: server/sched/tpe_mo.c, `tpe` with several objectives and
 * constraints (MOTPE and constraints_func as Optuna 3.1's TPESampler; the
 * split itself is checked against Optuna's vectors in test_tpe.c). Here:
 * which studies take that path, its options, the replay property, diverged
 * runs, memory, and its quality against random search in the same run over
 * several seeds (hypervolume of the feasible front on constrained ZDT1; the
 * share of feasible proposals under a constraint with one objective). */
#include <criterion/criterion.h>
#include <math.h>

#include "sched_harness.h"
#include "server/model/pareto.h"

extern const struct bd_sched_ops bd_sched_tpe;
extern const struct bd_sched_ops bd_sched_random;

static const char *XY = "[{\"name\": \"x\", \"type\": \"float\", \"low\": 0, \"high\": 1},"
                        " {\"name\": \"y\", \"type\": \"float\", \"low\": 0, \"high\": 1}]";

/* Opens and points h's ops at the scheduler's own (tpe_mo.c's for such a
 * study), as the engine calls st->sched->ops. */
static int open_mo(hn *h, const struct bd_sched_ops *ops, const char *params, const char *options, size_t m, size_t c)
{
    int rc = hn_open_mo(h, ops, params, options, m, c);
    if (!rc)
        h->ops = h->s->ops;
    return rc;
}

/* ZDT1 on (x, y) with x + y <= 1.2; trial ids divisible by 13 fail, by 17 expire, by 19 diverge. */
static int zdt1(const hn *h, const hn_trial *t, void *ud, double *losses, double *violation)
{
    (void)ud;
    double x = json_number_value(json_object_get(t->config, "x")), y = json_number_value(json_object_get(t->config, "y"));
    double g = 1 + 9 * y;
    losses[0] = x;
    losses[1] = g * (1 - sqrt(x / g));
    *violation = h->def.n_constraints && x + y > 1.2 ? x + y - 1.2 : 0;
    if (t->id % 19 == 0) {
        losses[0] = losses[1] = INFINITY;
        *violation = h->def.n_constraints ? INFINITY : 0;
    }
    if (t->id % 13 == 0)
        return HN_FAILED;
    return t->id % 17 == 0 ? HN_EXPIRED : HN_COMPLETED;
}

Test(tpe_mo, only_several_objectives_or_constraints_take_the_new_path)
{
    hn h;
    cr_assert_eq(open_mo(&h, &bd_sched_tpe, XY, "{}", 1, 0), 0);
    cr_expect_eq(h.s->ops, &bd_sched_tpe, "one objective, no constraints: tpe as before");
    hn_close(&h);
    cr_assert_eq(open_mo(&h, &bd_sched_tpe, XY, "{}", 2, 0), 0);
    cr_expect_neq(h.s->ops, &bd_sched_tpe);
    cr_expect_str_eq(h.s->ops->name, "tpe");
    cr_expect(h.s->ops->multi_objective && h.s->ops->takes_constraints && h.s->ops->takes_enqueued &&
              h.s->ops->learns_from_prior);
    hn_close(&h);
    cr_assert_eq(open_mo(&h, &bd_sched_tpe, XY, "{}", 1, 2), 0);
    cr_expect_neq(h.s->ops, &bd_sched_tpe, "constraints alone take it too");
    hn_close(&h);
    cr_expect(bd_sched_tpe.multi_objective && bd_sched_tpe.takes_constraints);
}

Test(tpe_mo, options)
{
    hn h;
    cr_expect_eq(open_mo(&h, &bd_sched_tpe, XY, "{\"cost_aware\": true}", 2, 0), BD_EINVAL);
    cr_expect_str_eq(h.err.field, "scheduler.options.cost_aware");
    hn_close(&h);
    cr_expect_eq(open_mo(&h, &bd_sched_tpe, XY, "{\"stopping\": {\"rule\": \"median\"}}", 2, 0), BD_EINVAL);
    cr_expect_str_eq(h.err.field, "scheduler.options.stopping");
    hn_close(&h);
    cr_expect_eq(open_mo(&h, &bd_sched_tpe, XY, "{\"sampler\": \"gp\"}", 2, 0), BD_EINVAL);
    cr_expect_str_eq(h.err.field, "scheduler.options.sampler");
    hn_close(&h);
    cr_expect_eq(open_mo(&h, &bd_sched_tpe, XY, "{\"gama\": 0.2}", 2, 1), BD_EINVAL);
    cr_expect_str_eq(h.err.field, "scheduler.options.gama");
    hn_close(&h);
    cr_expect_eq(open_mo(&h, &bd_sched_tpe, XY,
                            "{\"stopping\": {\"rule\": \"median\"}, \"n_startup_trials\": 5, \"multivariate\": true,"
                            " \"cost_aware\": false, \"sampler\": \"tpe\"}",
                            1, 1),
                 0, "one objective with constraints may stop by the median rule: %s", h.err.message);
    hn_close(&h);
}

Test(tpe_mo, replay_gives_the_same_next_suggestions)
{
    static const char *const options[] = {"{}", "{\"multivariate\": true, \"random_fraction\": 0.2}"};
    for (int k = 0; k < 2; k++)
        for (size_t c = 0; c <= 1; c++) {
            hn h;
            cr_assert_eq(open_mo(&h, &bd_sched_tpe, XY, options[k], 2, c), 0);
            h.mo_outcome = zdt1;
            cr_assert_eq(hn_run(&h, 3, HN_RANDOM, 70), HN_LIMIT);
            bd_sched *again = hn_replay(&h);
            cr_expect(hn_same_next(&h, again, 15), "options %s, %zu constraints: replay differs", options[k], c);
            h.ops->destroy(again);
            hn_close(&h);
        }
}

Test(tpe_mo, warm_starts_and_diverged_runs_are_learnt)
{
    hn h;
    cr_assert_eq(open_mo(&h, &bd_sched_tpe, XY, "{\"n_startup_trials\": 3}", 2, 1), 0);
    /* three warm starts (PRIOR), one diverged and infeasible */
    double losses[3][2] = {{0.1, 0.9}, {0.5, 0.5}, {INFINITY, INFINITY}};
    double viol[3] = {0, 0, INFINITY};
    for (int i = 0; i < 3; i++) {
        json_t *config = json_pack("{s:f, s:f}", "x", 0.1 + 0.3 * i, "y", 0.2);
        bd_event ev = {.type = BD_EV_PRIOR, .trial_id = 1000 + i, .config_id = 1000 + i, .config = config, .budget = 1,
                       .loss = losses[i][0], .losses = losses[i], .violation = viol[i], .elapsed_seconds = NAN};
        hn_feed(&h, &ev, config, NULL);
        json_decref(config);
    }
    json_t *d = hn_describe(&h);
    json_t *model = json_object_get(d, "model");
    cr_expect_eq(json_integer_value(json_object_get(model, "results")), 3);
    cr_expect_eq(json_integer_value(json_object_get(model, "feasible")), 2);
    cr_expect(json_is_true(json_object_get(model, "fitted")));
    json_decref(d);
    h.mo_outcome = zdt1;
    cr_assert_eq(hn_run(&h, 2, HN_FIFO, 40), HN_LIMIT); /* the harness checks every config */
    hn_close(&h);
}

/* The hypervolume of the feasible completed trials under (1.1, 11). */
static double feasible_hv(const hn *h)
{
    double *pts = malloc(2 * (h->n_trials + 1) * sizeof *pts), ref[2] = {1.1, 11};
    size_t n = 0;
    for (size_t i = 0; i < h->n_trials; i++)
        if (h->trials[i].state == HN_COMPLETED && h->trials[i].violation == 0 && isfinite(h->trials[i].losses[0])) {
            pts[2 * n] = h->trials[i].losses[0];
            pts[2 * n + 1] = h->trials[i].losses[1];
            n++;
        }
    double hv = bd_pareto_hypervolume(pts, n, 2, ref);
    free(pts);
    return hv;
}

Test(tpe_mo, beats_random_search_on_constrained_zdt1)
{
    /* 80 trials, 2 workers, 6 seeds, the same seeds for random search */
    int wins = 0;
    for (uint64_t seed = 1; seed <= 6; seed++) {
        double hv[2];
        const struct bd_sched_ops *ops[2] = {&bd_sched_tpe, &bd_sched_random};
        for (int k = 0; k < 2; k++) {
            hn h;
            cr_assert_eq(open_mo(&h, ops[k], XY, "{}", 2, 1), 0);
            h.def.seed = seed;
            h.mo_outcome = zdt1;
            cr_assert_eq(hn_run(&h, 2, HN_FIFO, 80), HN_LIMIT);
            hv[k] = feasible_hv(&h);
            hn_close(&h);
        }
        wins += hv[0] > hv[1];
        fprintf(stderr, "seed %llu: tpe %.4f, random %.4f\n", (unsigned long long)seed, hv[0], hv[1]);
    }
    cr_expect_geq(wins, 5, "tpe ahead in %d of 6 seeds", wins);
}

/* One objective, (x - 0.8)^2 + (y - 0.8)^2, feasible only where x + y <= 1. */
static int bowl_cut(const hn *h, const hn_trial *t, void *ud, double *losses, double *violation)
{
    (void)h;
    (void)ud;
    double x = json_number_value(json_object_get(t->config, "x")), y = json_number_value(json_object_get(t->config, "y"));
    losses[0] = (x - 0.8) * (x - 0.8) + (y - 0.8) * (y - 0.8);
    *violation = x + y > 1 ? x + y - 1 : 0;
    return HN_COMPLETED;
}

Test(tpe_mo, constraints_steer_one_objective_to_the_feasible_optimum)
{
    /* the unconstrained optimum (0.8, 0.8) is infeasible; the feasible one
     * is (0.5, 0.5), loss 0.18. After the random start, tpe's proposals
     * are feasible more often than random search's (half), and its best
     * feasible loss is closer to 0.18, in most of 6 seeds */
    int more_feasible = 0, closer = 0;
    for (uint64_t seed = 1; seed <= 6; seed++) {
        double share[2], best[2];
        const struct bd_sched_ops *ops[2] = {&bd_sched_tpe, &bd_sched_random};
        for (int k = 0; k < 2; k++) {
            hn h;
            cr_assert_eq(open_mo(&h, ops[k], XY, "{}", 1, 1), 0);
            h.def.seed = seed;
            h.mo_outcome = bowl_cut;
            cr_assert_eq(hn_run(&h, 1, HN_FIFO, 60), HN_LIMIT);
            size_t feasible = 0;
            best[k] = INFINITY;
            for (size_t i = 10; i < h.n_trials; i++)
                if (h.trials[i].violation == 0) {
                    feasible++;
                    best[k] = fmin(best[k], h.trials[i].loss);
                }
            share[k] = (double)feasible / (double)(h.n_trials - 10);
            hn_close(&h);
        }
        more_feasible += share[0] > share[1];
        closer += best[0] < best[1];
        fprintf(stderr, "seed %llu: feasible share tpe %.2f random %.2f, best feasible %.4f %.4f\n",
                (unsigned long long)seed, share[0], share[1], best[0], best[1]);
    }
    cr_expect_geq(more_feasible, 5, "tpe proposed more feasible configs in %d of 6 seeds", more_feasible);
    cr_expect_geq(closer, 4, "tpe's best feasible was better in %d of 6 seeds", closer);
}

Test(tpe_mo, held_bytes_matches_the_heap)
{
#if defined(__SANITIZE_ADDRESS__)
    cr_skip_test("AddressSanitizer's allocator does not report through mallinfo2");
#endif
    hn h;
    cr_assert_eq(open_mo(&h, &bd_sched_tpe, XY, "{}", 3, 1), 0);
    h.mo_outcome = zdt1; /* the third loss stays as set by the harness: 0 */
    cr_assert_eq(hn_run(&h, 4, HN_RANDOM, 300), HN_LIMIT);
    hn_expect_held_bytes(&h, "tpe, 3 objectives, 300 trials");
    hn_close(&h);
}

Test(tpe_mo, median_rule_with_constraints_and_one_objective)
{
    /* the stopping option is carried on this path too: after two completed
     * trials that reported 0.1 and 0.2 at step 1, a trial reporting 0.9
     * there is stopped, one reporting 0.05 goes on */
    hn h;
    cr_assert_eq(open_mo(&h, &bd_sched_tpe, XY, "{\"stopping\": {\"rule\": \"median\", \"startup_trials\": 2}}", 1, 1),
                 0, "%s", h.err.message);
    double f[1];
    for (int i = 0; i < 2; i++) {
        int64_t id;
        cr_assert_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_TRIAL);
        cr_expect_not(hn_measure(&h, id, 1, 0.1 * (i + 1)).stop);
        f[0] = 0.1 * (i + 1);
        hn_complete_mo(&h, id, f, 0);
    }
    int64_t a, b;
    cr_assert_eq(hn_suggest(&h, 0, &a), BD_SUGGEST_TRIAL);
    cr_assert_eq(hn_suggest(&h, 1, &b), BD_SUGGEST_TRIAL);
    cr_expect(hn_measure(&h, a, 1, 0.9).stop, "0.9 is worse than the median 0.15");
    cr_expect_not(hn_measure(&h, b, 1, 0.05).stop);
    json_t *d = hn_describe(&h);
    cr_expect(json_is_object(json_object_get(d, "stopping")));
    cr_expect_eq(json_integer_value(json_object_get(d, "running")), 1, "the stopped trial ended");
    json_decref(d);
    hn_close(&h);
}

/* Feeds n warm starts on one front of 2 objectives (x, 1 - x: values
 * anti-correlated, every result non-dominated), x from a fixed sequence. */
static void feed_front(hn *h, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++) {
        double x = fmod(0.6180339887 * (double)(i + 1), 1.0), y = fmod(0.7548776662 * (double)(i + 1), 1.0);
        double losses[2] = {x, 1 - x};
        json_t *config = json_pack("{s:f, s:f}", "x", x, "y", y);
        bd_event ev = {.type = BD_EV_PRIOR, .trial_id = 100000 + (int64_t)i, .config_id = 100000 + (int64_t)i,
                       .config = config, .budget = 1, .loss = losses[0], .losses = losses, .violation = 0,
                       .elapsed_seconds = NAN};
        hn_feed(h, &ev, config, NULL);
        json_decref(config);
    }
}

/* Every result on one front: the split peeled all of them (O(m n^2)),
 * 3.6 s a suggest at 20,000 results, so ten suggests took 36 s; the
 * window reads at most 1,250. The memory stops growing at the window. */
Test(tpe_mo, a_front_of_20000_results_is_read_through_the_window, .timeout = 30)
{
    hn h;
    cr_assert_eq(open_mo(&h, &bd_sched_tpe, XY, "{}", 2, 0), 0);
    feed_front(&h, 0, 1500);
    size_t held = h.ops->held_bytes(h.s);
    feed_front(&h, 1500, 20000);
    cr_expect_eq(h.ops->held_bytes(h.s), held, "held_bytes grew past the window: %zu, then %zu", held,
                 h.ops->held_bytes(h.s));
    json_t *d = hn_describe(&h);
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(d, "model"), "results")), 20000);
    json_decref(d);
    for (int k = 0; k < 10; k++) {
        int64_t id;
        cr_assert_eq(hn_suggest(&h, k, &id), BD_SUGGEST_TRIAL); /* the harness checks the config */
    }
    hn_close(&h);
}

/* Past the window, the below group is still drawn from the best results of
 * all: 3,000 results on a bowl where the best 25 are the oldest ones; a
 * proposal lands near them (x, y < 0.25) though the newest 1,000 are all
 * far (x, y > 0.5). */
Test(tpe_mo, the_elite_keeps_the_best_results_past_the_window)
{
    hn h;
    cr_assert_eq(open_mo(&h, &bd_sched_tpe, XY, "{}", 2, 0), 0);
    for (size_t i = 0; i < 3000; i++) {
        double u = fmod(0.6180339887 * (double)(i + 1), 1.0), v = fmod(0.7548776662 * (double)(i + 1), 1.0);
        double x = i < 25 ? 0.2 * u : 0.5 + 0.5 * u, y = i < 25 ? 0.2 * v : 0.5 + 0.5 * v;
        double losses[2] = {x + y, x * x + y * y};
        json_t *config = json_pack("{s:f, s:f}", "x", x, "y", y);
        bd_event ev = {.type = BD_EV_PRIOR, .trial_id = 100000 + (int64_t)i, .config_id = 100000 + (int64_t)i,
                       .config = config, .budget = 1, .loss = losses[0], .losses = losses, .violation = 0,
                       .elapsed_seconds = NAN};
        hn_feed(&h, &ev, config, NULL);
        json_decref(config);
    }
    int near = 0;
    for (int k = 0; k < 20; k++) {
        int64_t id;
        cr_assert_eq(hn_suggest(&h, k, &id), BD_SUGGEST_TRIAL);
        const json_t *c = hn_get(&h, id)->config;
        near += json_number_value(json_object_get(c, "x")) < 0.25 && json_number_value(json_object_get(c, "y")) < 0.25;
    }
    cr_expect_geq(near, 15, "%d of 20 proposals near the best (old) results", near);
    hn_close(&h);
}
