/* test_proposer.c: server/sched/proposer.c through the schedulers that
 * take it: `tpe` (random.c) and the option "sampler" of
 * successive_halving, hyperband and asha. Synthetic objectives are fine
 * here: these check behaviour (it learns, it replays exactly, it rejects bad
 * options, it survives conditional spaces and diverged runs); quality on
 * real learning curves is for tests/bench (README-bobos.md). */
#include <criterion/criterion.h>

#include "sched_harness.h"
#include "server/sched/proposer.h"

extern const struct bd_sched_ops bd_sched_tpe, bd_sched_random, bd_sched_hyperband, bd_sched_asha,
    bd_sched_successive_halving;

static const char *const space3 =
    "[{\"name\": \"x\", \"type\": \"float\", \"low\": 0, \"high\": 1},"
    " {\"name\": \"lr\", \"type\": \"float\", \"low\": 1e-5, \"high\": 1, \"log\": true},"
    " {\"name\": \"units\", \"type\": \"int\", \"low\": 1, \"high\": 64, \"log\": true}]";

/* Minimum 0 at x = 0.7, lr = 1e-3, units = 16; 1/budget shrinks with training. */
static int bowl(const hn *h, const hn_trial *t, void *ud, double *loss)
{
    (void)h;
    (void)ud;
    double x = json_number_value(json_object_get(t->config, "x"));
    double lr = log10(json_number_value(json_object_get(t->config, "lr")));
    double u = log2(json_number_value(json_object_get(t->config, "units")));
    *loss = (x - 0.7) * (x - 0.7) + 0.05 * (lr + 3) * (lr + 3) + 0.02 * (u - 4) * (u - 4) + 0.1 / t->budget;
    return HN_COMPLETED;
}

static void open_ok(hn *h, const struct bd_sched_ops *ops, const char *options, double r_min, double r_max)
{
    int rc = hn_open_space(h, ops, space3, options, r_min, r_max, 1);
    cr_assert_eq(rc, 0, "create failed: %s (%s)", h->err.message, h->err.field);
}

/* 60 trials each, eight seeds in the same run: tpe's best beats random
 * search's on at least six. */
Test(proposer, tpe_beats_random_search_on_a_bowl_over_seeds)
{
    int wins = 0;
    for (int seed = 0; seed < 8; seed++) {
        double best[2];
        for (int k = 0; k < 2; k++) {
            hn h;
            open_ok(&h, k ? &bd_sched_random : &bd_sched_tpe, "{\"max_trials\": 60}", 1, 1);
            h.def.seed = 300 + (uint64_t)seed;
            h.outcome = bowl;
            h.check_pure = seed == 0;
            cr_assert_eq(hn_run(&h, 1, HN_FIFO, 0), HN_DONE);
            best[k] = hn_best_loss(&h);
            hn_close(&h);
        }
        wins += best[0] < best[1];
    }
    cr_expect_geq(wins, 6, "tpe beat random search on %d of 8 seeds", wins);
}

/* The same for Hyperband with "sampler": "tpe" (BOHB) against Hyperband. */
Test(proposer, hyperband_with_tpe_beats_hyperband_over_seeds)
{
    int wins = 0;
    for (int seed = 0; seed < 8; seed++) {
        double best[2];
        for (int k = 0; k < 2; k++) {
            hn h;
            open_ok(&h, &bd_sched_hyperband, k ? "{\"iterations\": 2, \"sampler\": \"random\"}" : "{\"iterations\": 2, \"sampler\": \"tpe\"}",
                    1, 27);
            h.def.seed = 500 + (uint64_t)seed;
            h.outcome = bowl;
            h.check_pure = seed == 0;
            cr_assert_eq(hn_run(&h, 2, HN_RANDOM, 0), HN_DONE);
            best[k] = hn_best_loss(&h);
            hn_close(&h);
        }
        wins += best[0] < best[1];
    }
    cr_expect_geq(wins, 6, "BOHB beat Hyperband on %d of 8 seeds", wins);
}

/* Drives a study with completions, failures and diverged runs, then
 * rebuilds it from its events: the next suggestions are identical. */
static void replay_case(const struct bd_sched_ops *ops, const char *options, double r_max)
{
    hn h;
    open_ok(&h, ops, options, 1, r_max);
    h.outcome = bowl;
    h.check_pure = 1;
    for (int i = 0; i < 60; i++) {
        int64_t id;
        int rc = hn_suggest(&h, i % 3, &id);
        if (rc != BD_SUGGEST_TRIAL)
            break;
        double loss;
        bowl(&h, hn_get(&h, id), NULL, &loss);
        if (i % 7 == 3)
            hn_fail(&h, id);
        else if (i % 9 == 4)
            hn_complete(&h, id, INFINITY); /* diverged */
        else if (i % 11 != 10)             /* and a few left running */
            hn_complete(&h, id, loss);
    }
    json_t *d = hn_describe(&h);
    cr_expect(json_object_get(json_object_get(d, "model"), "sampler"), "describe() shows the sampler");
    json_decref(d);
    bd_sched *r = hn_replay(&h);
    cr_expect(hn_same_next(&h, r, 5), "%s %s: replay differs", ops->name, options);
    ops->destroy(r);
    hn_close(&h);
}

Test(proposer, replay_gives_the_same_next_suggestions)
{
    replay_case(&bd_sched_tpe, "{\"n_startup_trials\": 5}", 1);
    replay_case(&bd_sched_tpe, "{\"n_startup_trials\": 5, \"multivariate\": true}", 1);
    replay_case(&bd_sched_hyperband, "{\"sampler\": \"tpe\", \"n_startup_trials\": 4, \"iterations\": 0}", 27);
    replay_case(&bd_sched_successive_halving, "{\"sampler\": \"tpe\", \"n_startup_trials\": 4, \"n\": 27}", 27);
    replay_case(&bd_sched_asha, "{\"sampler\": \"tpe\", \"n_startup_trials\": 4, \"brackets\": 2}", 27);
    replay_case(&bd_sched_hyperband, "{\"sampler\": \"gp\", \"n_startup_trials\": 4, \"iterations\": 0}", 27);
    replay_case(&bd_sched_successive_halving, "{\"sampler\": \"gp\", \"n_startup_trials\": 4, \"n\": 27}", 27);
    replay_case(&bd_sched_asha, "{\"sampler\": \"gp\", \"n_startup_trials\": 4, \"brackets\": 2}", 27);
}

/* The same for Hyperband with "sampler": "gp" against Hyperband. */
Test(proposer, hyperband_with_gp_beats_hyperband_over_seeds)
{
    int wins = 0;
    for (int seed = 0; seed < 8; seed++) {
        double best[2];
        for (int k = 0; k < 2; k++) {
            hn h;
            open_ok(&h, &bd_sched_hyperband,
                    k ? "{\"iterations\": 2, \"sampler\": \"random\"}" : "{\"iterations\": 2, \"sampler\": \"gp\"}", 1,
                    27);
            h.def.seed = 500 + (uint64_t)seed;
            h.outcome = bowl;
            h.check_pure = seed == 0;
            cr_assert_eq(hn_run(&h, 2, HN_RANDOM, 0), HN_DONE);
            best[k] = hn_best_loss(&h);
            hn_close(&h);
        }
        wins += best[0] < best[1];
    }
    cr_expect_geq(wins, 6, "Hyperband with the gp sampler beat Hyperband on %d of 8 seeds", wins);
}

/* ASHA asks for many new configs between two results at the model's
 * budget: the gp sampler hallucinates the configs seen only below it, so
 * those proposals are not one point repeated. The random fraction is off,
 * so every proposal here comes from the model. */
Test(proposer, gp_proposals_between_results_at_the_model_budget_differ)
{
    hn h;
    open_ok(&h, &bd_sched_asha, "{\"sampler\": \"gp\", \"n_startup_trials\": 4, \"random_fraction\": 0}", 1, 9);
    h.outcome = bowl;
    h.check_pure = 0;
    cr_assert_eq(hn_run(&h, 1, HN_FIFO, 60), HN_LIMIT);
    json_t *d = hn_describe(&h);
    cr_assert(json_is_number(json_object_get(json_object_get(d, "model"), "model_budget")), "a model by now");
    cr_expect_str_eq(json_string_value(json_object_get(json_object_get(d, "model"), "sampler")), "gp");
    json_decref(d);
    /* new rung-0 configs, each finished at budget 1 (below the model's) */
    double prev[3] = {NAN, NAN, NAN};
    int fresh = 0, repeated = 0;
    for (int i = 0; i < 12; i++) {
        int64_t id;
        cr_assert_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_TRIAL);
        const hn_trial *t = hn_get(&h, id);
        if (t->budget == 1 && t->resume_from == 0) {
            double now[3] = {json_number_value(json_object_get(t->config, "x")),
                             json_number_value(json_object_get(t->config, "lr")),
                             json_number_value(json_object_get(t->config, "units"))};
            repeated += fresh > 0 && memcmp(now, prev, sizeof now) == 0;
            memcpy(prev, now, sizeof now);
            fresh++;
        }
        hn_finish(&h, id);
    }
    cr_expect_geq(fresh, 4, "only %d new configs", fresh);
    cr_expect_eq(repeated, 0, "%d of %d new configs repeated the one before", repeated, fresh);
    hn_close(&h);
}

/* BOHB's rule: until a budget has n_startup_trials results every config is
 * random; the model then fits on the largest budget that has them. */
Test(proposer, fits_on_the_largest_budget_with_enough_results)
{
    hn h;
    open_ok(&h, &bd_sched_asha, "{\"sampler\": \"tpe\", \"n_startup_trials\": 6, \"random_fraction\": 0}", 1, 9);
    h.outcome = bowl;
    json_t *d = hn_describe(&h);
    cr_expect(json_is_null(json_object_get(json_object_get(d, "model"), "model_budget")));
    json_decref(d);
    cr_assert_eq(hn_run(&h, 1, HN_FIFO, 60), HN_LIMIT);
    d = hn_describe(&h);
    const json_t *model = json_object_get(d, "model");
    const json_t *results = json_object_get(model, "results");
    double b = json_number_value(json_object_get(model, "model_budget"));
    cr_expect(b > 1, "fitted on budget %g", b);
    const char *key;
    const json_t *n;
    json_object_foreach((json_t *)results, key, n)
    {
        if (atof(key) > b)
            cr_expect_lt(json_integer_value(n), 6, "budget %s has %lld results, more than the model's",
                         key, (long long)json_integer_value(n));
    }
    json_decref(d);
    hn_close(&h);
}

Test(proposer, survives_conditional_spaces_and_degenerate_values)
{
    static const char *const mixed =
        "[{\"name\": \"algo\", \"type\": \"categorical\", \"choices\": [\"svm\", \"rf\", \"knn\"]},"
        " {\"name\": \"C\", \"type\": \"float\", \"low\": 0.001, \"high\": 100, \"log\": true, \"when\": {\"algo\": [\"svm\"]}},"
        " {\"name\": \"trees\", \"type\": \"int\", \"low\": 10, \"high\": 500, \"log\": true, \"when\": {\"algo\": [\"rf\"]}},"
        " {\"name\": \"k\", \"type\": \"int\", \"low\": 1, \"high\": 30, \"when\": {\"algo\": [\"knn\"]}},"
        " {\"name\": \"one\", \"type\": \"int\", \"low\": 3, \"high\": 3},"
        " {\"name\": \"scale\", \"type\": \"categorical\", \"choices\": [true, false]}]";
    for (int mv = 0; mv <= 1; mv++) {
        hn h;
        int rc = hn_open_space(&h, &bd_sched_tpe, mixed,
                               mv ? "{\"n_startup_trials\": 3, \"multivariate\": true}" : "{\"n_startup_trials\": 3}",
                               1, 1, 0);
        cr_assert_eq(rc, 0, "%s", h.err.message);
        for (int i = 0; i < 40; i++) {
            int64_t id;
            cr_assert_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_TRIAL); /* the harness validates each config */
            hn_complete(&h, id, i % 5 == 0 ? INFINITY : (i % 4 == 0 ? 1.0 : 0.5 + 0.01 * i));
        }
        hn_close(&h);
    }
}

Test(proposer, rejects_bad_options_naming_the_field)
{
    static const struct {
        const struct bd_sched_ops *ops;
        const char *options, *field;
    } bad[] = {
        {&bd_sched_hyperband, "{\"sampler\": \"gp_tpe\"}", "scheduler.options.sampler"},
        {&bd_sched_asha, "{\"sampler\": 3}", "scheduler.options.sampler"},
        {&bd_sched_successive_halving, "{\"random_fraction\": 1.5}", "scheduler.options.random_fraction"},
        {&bd_sched_tpe, "{\"sampler\": \"random\"}", "scheduler.options.sampler"},
        {&bd_sched_tpe, "{\"n_startup_trials\": 0}", "scheduler.options.n_startup_trials"},
        {&bd_sched_tpe, "{\"n_ei_candidates\": 100000}", "scheduler.options.n_ei_candidates"},
        {&bd_sched_tpe, "{\"gamma\": 0}", "scheduler.options.gamma"},
        {&bd_sched_tpe, "{\"prior_weight\": -1}", "scheduler.options.prior_weight"},
        {&bd_sched_tpe, "{\"multivariate\": \"yes\"}", "scheduler.options.multivariate"},
        {&bd_sched_tpe, "{\"eta\": 3}", "scheduler.options.eta"},
        {&bd_sched_asha, "{\"fit\": \"largest\"}", "scheduler.options.fit"}, /* no such option */
        {&bd_sched_random, "{\"sampler\": \"tpe\"}", "scheduler.options.sampler"},
        {&bd_sched_asha, "{\"sampler\": \"GP\"}", "scheduler.options.sampler"},
        {&bd_sched_hyperband, "{\"sampler\": \"gp\", \"cost_aware\": \"on\"}", "scheduler.options.cost_aware"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        hn h;
        int rc = hn_open_space(&h, bad[i].ops, space3, bad[i].options, 1, 27, 1);
        cr_expect_eq(rc, BD_EINVAL, "%s %s accepted", bad[i].ops->name, bad[i].options);
        cr_expect_str_eq(h.err.field, bad[i].field, "%s %s: field %s", bad[i].ops->name, bad[i].options,
                         h.err.field);
        hn_close(&h);
    }
}

/* held_bytes of the schedulers that keep the proposer's results (tpe, and a
 * learning sampler inside hyperband and asha) against the heap they free:
 * tpe at 50 parameters keeps ~450 bytes a result, more than the engine's
 * 256-byte default, and the gp sampler a model per budget. */
Test(proposer, held_bytes_covers_the_heap_of_the_results_kept)
{
#if defined(__SANITIZE_ADDRESS__)
    cr_skip_test("AddressSanitizer's allocator does not report through mallinfo2");
#endif
    char wide[4096];
    size_t o = (size_t)snprintf(wide, sizeof wide, "[");
    for (int i = 0; i < 50; i++)
        o += (size_t)snprintf(wide + o, sizeof wide - o, "%s{\"name\": \"p%d\", \"type\": \"float\", \"low\": 0, \"high\": 1}",
                              i ? ", " : "", i);
    snprintf(wide + o, sizeof wide - o, "]");
    static const struct {
        const struct bd_sched_ops *ops;
        int wide;
        const char *options;
        long long trials;
        double r_max;
    } cases[] = {
        {&bd_sched_tpe, 0, "{}", 1000, 1},
        {&bd_sched_tpe, 1, "{}", 600, 1},
        {&bd_sched_hyperband, 0, "{\"sampler\": \"tpe\"}", 2000, 27},
        {&bd_sched_asha, 0, "{\"sampler\": \"gp\"}", 300, 27},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        hn h;
        int rc = hn_open_space(&h, cases[c].ops, cases[c].wide ? wide : space3, cases[c].options, 1, cases[c].r_max, 1);
        cr_assert_eq(rc, 0, "create failed: %s (%s)", h.err.message, h.err.field);
        if (!cases[c].wide)
            h.outcome = bowl;
        h.check_pure = 0;
        hn_run(&h, 2, HN_FIFO, cases[c].trials);
        char what[96];
        snprintf(what, sizeof what, "%s %s%s", cases[c].ops->name, cases[c].options, cases[c].wide ? ", 50 params" : "");
        hn_expect_held_bytes(&h, what);
        hn_close(&h);
    }
}

/* Eight objectives, 700 results at one budget, all mutually non-dominated
 * (on a simplex), as asha's tpe sampler gets them: BOHB's good group would
 * be 105 of them, whose greedy hypervolume subset selection in 8
 * dimensions took over 90 s for one proposal. From four objectives the
 * group is Optuna's 25 at most, and a proposal is quick (under a second
 * here, some 80 times under the timeout). */
Test(proposer, many_objectives_bound_the_good_group, .timeout = 60)
{
    hn h;
    hn_prepare(&h, &bd_sched_asha, "[{\"name\": \"x\", \"type\": \"float\", \"low\": 0, \"high\": 1}]",
               "{\"sampler\": \"tpe\", \"n_startup_trials\": 2, \"random_fraction\": 0}", 1, 1, 0, NULL);
    bd_proposer *p = NULL;
    cr_assert_eq(bd_proposer_create(&h.def, "tpe", 1, &p, &h.err), 0, "%s", h.err.message);
    bd_proposer_set_objectives(p, 8, 0);
    bd_rng rng;
    bd_rng_seed(&rng, 3, 3);
    for (int i = 0; i < 700; i++) {
        double losses[8], s = 0;
        for (int j = 0; j < 8; j++)
            s += losses[j] = 1e-3 + bd_rng_uniform(&rng);
        for (int j = 0; j < 8; j++)
            losses[j] /= s;
        json_t *config = json_pack("{s:f}", "x", bd_rng_uniform(&rng));
        bd_proposer_add_mo(p, i + 1, config, 1, losses, 0, NAN, NAN);
        json_decref(config);
    }
    json_t *config = bd_proposer_propose(p, &rng);
    cr_assert(json_is_object(config));
    double x = json_number_value(json_object_get(config, "x"));
    cr_expect(x >= 0 && x <= 1, "x = %g", x);
    json_decref(config);
    bd_proposer_free(p);
    json_decref(h.options);
    bd_space_free(h.space);
}
