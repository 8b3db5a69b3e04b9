/* test_nsga2.c: server/sched/nsga2.c, NSGA-II as Optuna 3.1's
 * NSGAIISampler. The parents each generation leaves (which trials, in which
 * order) are checked against Optuna's own _select_elite_population: the
 * vectors below were printed by tests/fixtures/nsga2/make_vectors.py
 * (Debian's python3-optuna 3.1.0; rerun it to check them). Then crossover
 * and mutation over a space with log, int, categorical, fixed and
 * conditional parameters, constrained domination, one objective, the
 * replay property, the memory bound and the quality against random search
 * (hypervolume on ZDT1, same run, several seeds). */
#include <criterion/criterion.h>
#include <math.h>

#include "sched_harness.h"
#include "server/model/pareto.h"

extern const struct bd_sched_ops bd_sched_nsga2;
extern const struct bd_sched_ops bd_sched_random;

static const char *XY = "[{\"name\": \"x\", \"type\": \"float\", \"low\": 0, \"high\": 1},"
                        " {\"name\": \"y\", \"type\": \"float\", \"low\": 0, \"high\": 1}]";

/* ---- vectors from make_vectors.py ---- */
/* two: population 6, 2 objectives, 18 trials */
static const double two_losses[] = {5.0, 1.0, 1.0, 5.0, 3.0, 3.0, 3.0, 3.0, 4.0, 4.0, 2.0, 6.0, 2.0, 2.0, 6.0, 0.5, 0.5, 6.0, 3.0, 3.0, INFINITY, INFINITY, 4.0, 2.0, 1.0, 1.0, 2.0, 3.0, 1.5, 1.5, 7.0, 7.0, 0.2, 9.0, 9.0, 0.2};
static const int64_t two_gen0[] = {1, 2, 3, 4, 6, 5};
static const int64_t two_gen1[] = {7, 8, 9, 1, 2, 6};
static const int64_t two_gen2[] = {13, 17, 18, 8, 9, 2};
/* cons: population 5, 3 objectives, 10 trials */
static const double cons_losses[] = {1.0, 2.0, 3.0, 3.0, 2.0, 1.0, 2.0, 2.0, 2.0, 0.0, 0.0, 0.0, 5.0, 5.0, 5.0, 1.0, 1.0, 4.0, 4.0, 1.0, 1.0, 0.0, 5.0, 0.0, 2.0, 3.0, 1.0, 9.0, 9.0, 9.0};
static const double cons_violation[] = {0.0, 0.0, 0.0, 2.5, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0};
static const int64_t cons_gen0[] = {1, 2, 3, 5, 4};
static const int64_t cons_gen1[] = {6, 2, 8, 9, 1};

/* The parents describe() lists. */
static void expect_parents(hn *h, const int64_t *want, size_t n, const char *what)
{
    json_t *d = hn_describe(h);
    const json_t *p = json_object_get(d, "parent_trials");
    cr_assert_eq(json_array_size(p), n, "%s: %zu parents, want %zu", what, json_array_size(p), n);
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(json_integer_value(json_array_get(p, i)), want[i], "%s: parent %zu is trial %lld, Optuna's %lld",
                     what, i, (long long)json_integer_value(json_array_get(p, i)), (long long)want[i]);
    json_decref(d);
}

/* Creates `count` trials, then completes them in creation order with the
 * listed losses (m each) and violations (NULL: feasible). */
static void run_generation(hn *h, size_t first, size_t count, size_t m, const double *losses, const double *violation)
{
    int64_t ids[16];
    for (size_t i = 0; i < count; i++)
        cr_assert_eq(hn_suggest(h, 0, &ids[i]), BD_SUGGEST_TRIAL);
    for (size_t i = 0; i < count; i++) {
        size_t t = first + i;
        cr_assert_eq((size_t)ids[i], t + 1);
        hn_complete_mo(h, ids[i], losses + t * m, violation ? violation[t] : 0);
    }
}

Test(nsga2, elite_of_each_generation_as_optuna)
{
    hn h;
    cr_assert_eq(hn_open_mo(&h, &bd_sched_nsga2, XY, "{\"population_size\": 6}", 2, 0), 0, "%s", h.err.message);
    run_generation(&h, 0, 6, 2, two_losses, NULL);
    expect_parents(&h, two_gen0, 6, "generation 0");
    run_generation(&h, 6, 6, 2, two_losses, NULL);
    expect_parents(&h, two_gen1, 6, "generation 1");
    run_generation(&h, 12, 6, 2, two_losses, NULL);
    expect_parents(&h, two_gen2, 6, "generation 2");
    json_t *d = hn_describe(&h);
    cr_expect_eq(json_integer_value(json_object_get(d, "generation")), 3);
    json_decref(d);
    hn_close(&h);
}

Test(nsga2, constrained_domination_as_optuna)
{
    /* trial 4 (0,0,0) dominates everything but violates by 2.5: it is the
     * last parent of generation 0 and gone after generation 1; trial 7 (1.0)
     * never makes it */
    hn h;
    cr_assert_eq(hn_open_mo(&h, &bd_sched_nsga2, XY, "{\"population_size\": 5}", 3, 1), 0, "%s", h.err.message);
    run_generation(&h, 0, 5, 3, cons_losses, cons_violation);
    expect_parents(&h, cons_gen0, 5, "generation 0");
    run_generation(&h, 5, 5, 3, cons_losses, cons_violation);
    expect_parents(&h, cons_gen1, 5, "generation 1");
    hn_close(&h);
}

Test(nsga2, generation_closes_on_completed_trials_only)
{
    /* population 4: failed, expired and stopped trials do not count; the
     * fifth completion is not needed */
    hn h;
    cr_assert_eq(hn_open_mo(&h, &bd_sched_nsga2, XY, "{\"population_size\": 4}", 2, 0), 0);
    int64_t id;
    double f[2] = {1, 1};
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_TRIAL);
        hn_fail(&h, id);
        cr_assert_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_TRIAL);
        hn_expire(&h, id);
        cr_assert_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_TRIAL);
        f[0] = i;
        f[1] = 3 - i;
        hn_complete_mo(&h, id, f, 0);
    }
    json_t *d = hn_describe(&h);
    cr_expect_eq(json_integer_value(json_object_get(d, "generation")), 0);
    cr_expect_eq(json_integer_value(json_object_get(d, "completed_in_generation")), 3);
    json_decref(d);
    cr_assert_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_TRIAL);
    cr_expect_eq(bd_json_int(hn_get(&h, id)->extra, "generation", -1), 0);
    hn_complete_mo(&h, id, f, 0);
    d = hn_describe(&h);
    cr_expect_eq(json_integer_value(json_object_get(d, "generation")), 1);
    cr_expect_eq(json_array_size(json_object_get(d, "parent_trials")), 4);
    json_decref(d);
    cr_assert_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_TRIAL);
    cr_expect_eq(bd_json_int(hn_get(&h, id)->extra, "generation", -1), 1, "the next trial is a child of generation 1");
    hn_close(&h);
}

/* ---- children ---- */

static const char *MIXED =
    "[{\"name\": \"lr\", \"type\": \"float\", \"low\": 1e-5, \"high\": 1, \"log\": true},"
    " {\"name\": \"layers\", \"type\": \"int\", \"low\": 1, \"high\": 8},"
    " {\"name\": \"units\", \"type\": \"int\", \"low\": 16, \"high\": 1024, \"log\": true},"
    " {\"name\": \"algo\", \"type\": \"categorical\", \"choices\": [\"svm\", \"rf\", 3, true]},"
    " {\"name\": \"C\", \"type\": \"float\", \"low\": 0.01, \"high\": 100, \"log\": true, \"when\": {\"algo\": [\"svm\"]}},"
    " {\"name\": \"depth\", \"type\": \"int\", \"low\": 1, \"high\": 20, \"when\": {\"algo\": [\"rf\"]}},"
    " {\"name\": \"fixed\", \"type\": \"int\", \"low\": 4, \"high\": 4}]";

/* Two objectives from the mixed space: a loss and a cost. */
static int mixed_outcome(const hn *h, const hn_trial *t, void *ud, double *losses, double *violation)
{
    (void)h;
    (void)ud;
    double lr = json_number_value(json_object_get(t->config, "lr"));
    double layers = json_number_value(json_object_get(t->config, "layers"));
    double units = json_number_value(json_object_get(t->config, "units"));
    losses[0] = fabs(log10(lr) + 2.5) + 1.0 / layers;
    losses[1] = layers * units / 1024.0;
    *violation = units > 512 ? (units - 512) / 512 : 0;
    return t->id % 11 == 0 ? HN_FAILED : HN_COMPLETED;
}

Test(nsga2, children_stay_in_a_mixed_conditional_space)
{
    /* the harness validates every config against the space (types, ranges,
     * exactly the active parameters) */
    hn h;
    cr_assert_eq(hn_open_mo(&h, &bd_sched_nsga2, MIXED, "{\"population_size\": 10}", 2, 1), 0, "%s", h.err.message);
    h.mo_outcome = mixed_outcome;
    cr_assert_eq(hn_run(&h, 3, HN_RANDOM, 400), HN_LIMIT);
    json_t *d = hn_describe(&h);
    cr_expect_geq(json_integer_value(json_object_get(d, "generation")), 20, "400 trials of population 10");
    json_decref(d);
    int svm = 0, rf = 0;
    for (size_t i = 200; i < h.n_trials; i++) {
        const json_t *algo = json_object_get(h.trials[i].config, "algo");
        svm += json_is_string(algo) && strcmp(json_string_value(algo), "svm") == 0;
        rf += json_is_string(algo) && strcmp(json_string_value(algo), "rf") == 0;
        cr_expect_eq(json_integer_value(json_object_get(h.trials[i].config, "fixed")), 4);
    }
    cr_expect(svm + rf > 0, "the branches are still explored (mutation)");
    hn_close(&h);
}

/* Does value v of parameter name appear in one of the parents' configs? */
static int from_a_parent(hn *h, const json_t *parents, const char *name, const json_t *v)
{
    for (size_t i = 0; i < json_array_size(parents); i++) {
        const hn_trial *p = hn_get(h, json_integer_value(json_array_get(parents, i)));
        if (json_equal(json_object_get(p->config, name), v))
            return 1;
    }
    return 0;
}

Test(nsga2, without_mutation_every_inherited_value_is_a_parents)
{
    /* crossover always, no mutation: lr, layers, units, algo come from the
     * parents (every completed trial has them); C and depth only from the
     * branch a trial took, so they are drawn anew */
    hn h;
    cr_assert_eq(hn_open_mo(&h, &bd_sched_nsga2, MIXED,
                            "{\"population_size\": 8, \"mutation_prob\": 0, \"crossover_prob\": 1}", 2, 0),
                 0);
    h.mo_outcome = mixed_outcome;
    cr_assert_eq(hn_run(&h, 1, HN_FIFO, 8), HN_LIMIT);
    size_t checked = 0;
    while (h.n_trials < 120) {
        json_t *d = hn_describe(&h);
        const json_t *parents = json_object_get(d, "parent_trials");
        int64_t id;
        cr_assert_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_TRIAL);
        const hn_trial *t = hn_get(&h, id);
        static const char *const inherited[] = {"lr", "layers", "units", "algo"};
        for (int k = 0; k < 4 && json_array_size(parents); k++) {
            cr_expect(from_a_parent(&h, parents, inherited[k], json_object_get(t->config, inherited[k])),
                      "trial %lld: %s is no parent's", (long long)id, inherited[k]);
            checked++;
        }
        json_decref(d);
        hn_finish(&h, id);
    }
    cr_expect_gt(checked, 400);
    hn_close(&h);
}

Test(nsga2, with_full_mutation_children_are_new_draws)
{
    /* mutation_prob 1: every parameter redrawn, so values leave the parents' */
    hn h;
    cr_assert_eq(hn_open_mo(&h, &bd_sched_nsga2, XY, "{\"population_size\": 4, \"mutation_prob\": 1}", 2, 0), 0);
    double f[2];
    int64_t id;
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_TRIAL);
        f[0] = i;
        f[1] = 4 - i;
        hn_complete_mo(&h, id, f, 0);
    }
    json_t *d = hn_describe(&h);
    int fresh = 0;
    for (int i = 0; i < 20; i++) {
        cr_assert_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_TRIAL);
        fresh += !from_a_parent(&h, json_object_get(d, "parent_trials"), "x", json_object_get(hn_get(&h, id)->config, "x"));
        hn_fail(&h, id);
    }
    json_decref(d);
    cr_expect_eq(fresh, 20);
    hn_close(&h);
}

/* ---- one objective ---- */

static int one_outcome(const hn *h, const hn_trial *t, void *ud, double *losses, double *violation)
{
    (void)h;
    (void)ud;
    double x = json_number_value(json_object_get(t->config, "x")), y = json_number_value(json_object_get(t->config, "y"));
    losses[0] = (x - 0.3) * (x - 0.3) + (y - 0.7) * (y - 0.7);
    *violation = 0;
    return HN_COMPLETED;
}

Test(nsga2, one_objective_keeps_the_best_as_parents)
{
    /* one worker in order: after each generation the parents are the
     * population_size best of every trial so far */
    hn h;
    cr_assert_eq(hn_open_mo(&h, &bd_sched_nsga2, XY, "{\"population_size\": 5}", 1, 0), 0, "%s", h.err.message);
    h.mo_outcome = one_outcome;
    for (int g = 1; g <= 12; g++) {
        cr_assert_eq(hn_run(&h, 1, HN_FIFO, 5 * g), HN_LIMIT);
        json_t *d = hn_describe(&h);
        const json_t *parents = json_object_get(d, "parent_trials");
        cr_assert_eq(json_array_size(parents), 5);
        /* the parents' losses are the 5 smallest (children repeat parents,
         * so ties are common: compare the sorted values) */
        double want[5], got[5];
        for (int k = 0; k < 5; k++)
            want[k] = got[k] = INFINITY;
        for (size_t i = 0; i < h.n_trials; i++)
            for (int k = 0; k < 5; k++)
                if (h.trials[i].loss < want[k]) {
                    memmove(&want[k + 1], &want[k], (4 - k) * sizeof *want);
                    want[k] = h.trials[i].loss;
                    break;
                }
        for (size_t i = 0; i < 5; i++) {
            double v = hn_get(&h, json_integer_value(json_array_get(parents, i)))->loss;
            for (int k = 0; k < 5; k++)
                if (v < got[k]) {
                    memmove(&got[k + 1], &got[k], (4 - k) * sizeof *got);
                    got[k] = v;
                    break;
                }
        }
        for (int k = 0; k < 5; k++)
            cr_expect_eq(got[k], want[k], "generation %d: parent loss %d is %g, the %d-th best is %g", g, k, got[k], k,
                         want[k]);
        json_decref(d);
    }
    cr_expect_lt(hn_best_loss(&h), 0.01);
    hn_close(&h);
}

/* ---- replay, memory, limits, options ---- */

/* ZDT1 on (x, y) with a constraint x + y <= 1.2; trial ids divisible by 13 fail, by 17 expire. */
static int zdt1(const hn *h, const hn_trial *t, void *ud, double *losses, double *violation)
{
    (void)h;
    (void)ud;
    double x = json_number_value(json_object_get(t->config, "x")), y = json_number_value(json_object_get(t->config, "y"));
    double g = 1 + 9 * y;
    losses[0] = x;
    losses[1] = g * (1 - sqrt(x / g));
    *violation = x + y > 1.2 ? x + y - 1.2 : 0;
    if (t->id % 13 == 0)
        return HN_FAILED;
    return t->id % 17 == 0 ? HN_EXPIRED : HN_COMPLETED;
}

Test(nsga2, replay_gives_the_same_next_suggestions)
{
    for (int at = 30; at <= 150; at += 60) {
        hn h;
        cr_assert_eq(hn_open_mo(&h, &bd_sched_nsga2, XY, "{\"population_size\": 8}", 2, 1), 0);
        h.mo_outcome = zdt1;
        cr_assert_eq(hn_run(&h, 4, HN_RANDOM, at), HN_LIMIT);
        bd_sched *again = hn_replay(&h);
        cr_expect(hn_same_next(&h, again, 20), "replay after %d trials differs", at);
        h.ops->destroy(again);
        hn_close(&h);
    }
}

Test(nsga2, memory_follows_the_population_not_the_trials)
{
    hn h;
    cr_assert_eq(hn_open_mo(&h, &bd_sched_nsga2, XY, "{\"population_size\": 10}", 2, 1), 0);
    h.mo_outcome = zdt1;
    cr_assert_eq(hn_run(&h, 4, HN_RANDOM, 300), HN_LIMIT);
    size_t at300 = h.ops->held_bytes(h.s);
    cr_assert_eq(hn_run(&h, 4, HN_RANDOM, 3000), HN_LIMIT);
    size_t at3000 = h.ops->held_bytes(h.s);
    cr_expect_leq(at3000, at300 + 4096, "held_bytes grew from %zu to %zu", at300, at3000);
#if !defined(__SANITIZE_ADDRESS__) /* AddressSanitizer's allocator does not report through mallinfo2 */
    hn_expect_held_bytes(&h, "nsga2 after 3000 trials");
#endif
    hn_close(&h);
}

Test(nsga2, max_trials_then_done)
{
    hn h;
    cr_assert_eq(hn_open_mo(&h, &bd_sched_nsga2, XY, "{\"population_size\": 4, \"max_trials\": 25}", 2, 0), 0);
    h.mo_outcome = zdt1; /* failed and expired trials give their slot back */
    cr_expect_eq(hn_run(&h, 3, HN_FIFO, 0), HN_DONE);
    long long ended = 0;
    for (size_t i = 0; i < h.n_trials; i++)
        ended += h.trials[i].state == HN_COMPLETED;
    cr_expect_eq(ended, 25);
    hn_close(&h);
}

Test(nsga2, bad_options_name_the_field)
{
    static const char *const cases[][2] = {
        {"{\"population_size\": 1}", "scheduler.options.population_size"},
        {"{\"population_size\": 1001}", "scheduler.options.population_size"},
        {"{\"mutation_prob\": 1.5}", "scheduler.options.mutation_prob"},
        {"{\"crossover_prob\": -0.1}", "scheduler.options.crossover_prob"},
        {"{\"swapping_prob\": \"half\"}", "scheduler.options.swapping_prob"},
        {"{\"populaton_size\": 10}", "scheduler.options.populaton_size"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hn h;
        cr_expect_eq(hn_open_mo(&h, &bd_sched_nsga2, XY, cases[i][0], 2, 0), BD_EINVAL, "%s accepted", cases[i][0]);
        cr_expect_str_eq(h.err.field, cases[i][1]);
        hn_close(&h);
    }
    hn h;
    cr_expect_eq(hn_open_mo(&h, &bd_sched_nsga2, XY, "{\"mutation_prob\": null}", 2, 0), 0, "null: Optuna's default");
    hn_close(&h);
}

/* ---- quality ---- */

static const double HV_REF[2] = {1.1, 11};

Test(nsga2, beats_random_search_on_constrained_zdt1)
{
    /* ZDT1 with 2 variables under x + y <= 1.2: 600 trials, 2 workers,
     * population 20, 6 seeds, the same seeds for random search */
    int wins = 0;
    double sum_n = 0, sum_r = 0;
    for (uint64_t seed = 1; seed <= 6; seed++) {
        double hv[2];
        const struct bd_sched_ops *ops[2] = {&bd_sched_nsga2, &bd_sched_random};
        for (int k = 0; k < 2; k++) {
            hn h;
            cr_assert_eq(hn_open_mo(&h, ops[k], XY, k == 0 ? "{\"population_size\": 20}" : "{}", 2, 1), 0);
            h.def.seed = seed;
            h.mo_outcome = zdt1;
            cr_assert_eq(hn_run(&h, 2, HN_FIFO, 600), HN_LIMIT);
            hv[k] = hn_feasible_hv2(&h, 600, HV_REF);
            hn_close(&h);
        }
        wins += hv[0] > hv[1];
        sum_n += hv[0];
        sum_r += hv[1];
        fprintf(stderr, "seed %llu: nsga2 %.4f, random %.4f\n", (unsigned long long)seed, hv[0], hv[1]);
    }
    cr_expect_geq(wins, 5, "nsga2 ahead in %d of 6 seeds (mean %.4f against %.4f)", wins, sum_n / 6, sum_r / 6);
}
