/* test_gp_ucb_mo.c: gp_ucb with several objectives and constraints
 * (ParEGO with the probability of feasibility, server/model/parego.h):
 * the scalarization and the probability of feasibility against values
 * worked by hand, the options refused, replay (same events, same next
 * trials), and quality on a constrained ZDT1 against random search in the
 * same run over five seeds. */
#include <criterion/criterion.h>

#include "sched_harness.h"
#include "server/model/pareto.h"
#include "server/model/parego.h"

extern const struct bd_sched_ops bd_sched_gp_ucb;
extern const struct bd_sched_ops bd_sched_random;

#define GP (&bd_sched_gp_ucb)

static const char *const space4 = "[{\"name\": \"x\", \"type\": \"float\", \"low\": 0, \"high\": 1},"
                                  " {\"name\": \"y1\", \"type\": \"float\", \"low\": 0, \"high\": 1},"
                                  " {\"name\": \"y2\", \"type\": \"float\", \"low\": 0, \"high\": 1},"
                                  " {\"name\": \"y3\", \"type\": \"float\", \"low\": 0, \"high\": 1}]";

/* ---- the scalarization, by hand ---- */

Test(parego, chebyshev_two_objectives_by_hand)
{
    /* objective 0 spans [1, 3], objective 1 [10, 40]; the last row diverged in objective 1 */
    const double losses[] = {1, 10, 3, 30, 2, 40, 1.5, INFINITY};
    const double w[2] = {0.25, 0.75};
    double f[8], y[4];
    bd_parego_normalize(4, 2, losses, f);
    const double want_f[8] = {0, 0, 1, 2.0 / 3, 0.5, 1, 0.25, 1};
    for (int i = 0; i < 8; i++)
        cr_expect_float_eq(f[i], want_f[i], 1e-15, "f[%d] = %g, want %g", i, f[i], want_f[i]);
    bd_parego_scalarize(4, 2, losses, w, y);
    /* row 1: w f = (0.25, 0.5): 0.5 + 0.05 x 0.75; row 2: (0.125, 0.75): 0.75 + 0.05 x 0.875;
     * row 3: (0.0625, 0.75): 0.75 + 0.05 x 0.8125 */
    const double want[4] = {0, 0.5375, 0.79375, 0.790625};
    for (int i = 0; i < 4; i++)
        cr_expect_float_eq(y[i], want[i], 1e-15, "y[%d] = %.17g, want %.17g", i, y[i], want[i]);
}

Test(parego, chebyshev_three_objectives_by_hand)
{
    /* spans [0, 2], [0, 2], [0, 10]; row 3 repeats row 2 */
    const double losses[] = {0, 0, 0, 2, 1, 5, 1, 2, 10, 1, 2, 10};
    const double w[3] = {0.5, 0.3, 0.2};
    double y[4];
    bd_parego_scalarize(4, 3, losses, w, y);
    /* row 1: f = (1, 0.5, 0.5), w f = (0.5, 0.15, 0.1): 0.5 + 0.05 x 0.75;
     * row 2: f = (0.5, 1, 1), w f = (0.25, 0.3, 0.2): 0.3 + 0.05 x 0.75 */
    const double want[4] = {0, 0.5375, 0.3375, 0.3375};
    for (int i = 0; i < 4; i++)
        cr_expect_float_eq(y[i], want[i], 1e-15, "y[%d] = %.17g, want %.17g", i, y[i], want[i]);
    /* a flat objective normalizes to 0, so only the others count */
    const double flat[] = {7, 1, 7, 3};
    double f[4];
    bd_parego_normalize(2, 2, flat, f);
    cr_expect(f[0] == 0 && f[2] == 0 && f[1] == 0 && f[3] == 1);
}

Test(parego, weights_lie_on_the_simplex_uniformly)
{
    bd_rng rng;
    bd_rng_seed(&rng, 7, 1);
    double mean[3] = {0}, w[3];
    int below_third = 0;
    const int draws = 20000;
    for (int t = 0; t < draws; t++) {
        bd_parego_weights(3, &rng, w);
        cr_assert(w[0] >= 0 && w[1] >= 0 && w[2] >= 0);
        cr_assert_float_eq(w[0] + w[1] + w[2], 1.0, 1e-12);
        for (int k = 0; k < 3; k++)
            mean[k] += w[k] / draws;
        below_third += w[0] < 1.0 / 3;
    }
    /* uniform on the 2-simplex: w_0 ~ Beta(1, 2), mean 1/3, P(w_0 < 1/3) = 1 - (2/3)^2 = 5/9 */
    for (int k = 0; k < 3; k++)
        cr_expect_float_eq(mean[k], 1.0 / 3, 0.01, "mean w_%d = %g", k, mean[k]);
    cr_expect_float_eq((double)below_third / draws, 5.0 / 9, 0.01);
    bd_parego_weights(1, &rng, w);
    cr_expect_eq(w[0], 1.0);
}

/* ---- the probability of feasibility ---- */

Test(parego, log_probability_of_feasibility_is_the_normal_cdf)
{
    /* P(c <= 0) = Phi(-mu / sd); the values from mpmath.ncdf */
    cr_expect_float_eq(exp(bd_parego_log_pof(0.5, 2.0)), 0.401293674317076, 1e-14); /* Phi(-0.25) */
    cr_expect_float_eq(bd_parego_log_pof(-1.0, 1.0), -0.17275377902345, 1e-13);     /* log Phi(1) */
    cr_expect_float_eq(bd_parego_log_pof(0.0, 3.0), -M_LN2, 1e-15);
    /* far in the tail, where Phi itself underflows: log Phi(-40) */
    cr_expect_float_eq(bd_parego_log_pof(40.0, 1.0), -804.608442013754, 1e-9);
    cr_expect_eq(bd_parego_log_pof(-1.0, 0.0), 0.0);
    cr_expect(isinf(bd_parego_log_pof(1.0, 0.0)));
}

/* ---- the scheduler ---- */

/* ZDT1 over (x, y1..y3): f0 = x, f1 = g (1 - sqrt(x / g)), g = 1 + 3 (y1 + y2 + y3).
 * Feasible when x is outside (0.25, 0.75) and x + y1 <= 1.2: half the
 * Pareto front is cut away. Violation: the sum of how far each fails. */
static int czdt1(const hn *h, const hn_trial *t, void *ud, double *losses, double *violation)
{
    (void)h;
    (void)ud;
    double x = json_number_value(json_object_get(t->config, "x"));
    double y1 = json_number_value(json_object_get(t->config, "y1"));
    double y2 = json_number_value(json_object_get(t->config, "y2"));
    double y3 = json_number_value(json_object_get(t->config, "y3"));
    double g = 1 + 3 * (y1 + y2 + y3);
    losses[0] = x;
    losses[1] = g * (1 - sqrt(x / g));
    double gap = 0.25 - fabs(x - 0.5);
    *violation = (gap > 0 ? gap : 0) + (x + y1 > 1.2 ? x + y1 - 1.2 : 0);
    return HN_COMPLETED;
}

static const double HV_REF[2] = {1.1, 11};

Test(gp_ucb_mo, takes_several_objectives_and_constraints)
{
    cr_expect_eq(GP->multi_objective, 1);
    cr_expect_eq(GP->takes_constraints, 1);
    hn h;
    cr_assert_eq(hn_open_mo(&h, GP, space4, "{\"acquisition\": \"logei\"}", 3, 2), 0, "%s", h.err.message);
    json_t *d = hn_describe(&h);
    json_t *pe = json_object_get(d, "parego");
    cr_expect_eq(json_integer_value(json_object_get(pe, "objectives")), 3);
    cr_expect(json_is_true(json_object_get(pe, "constraints")));
    json_decref(d);
    hn_close(&h);
}

Test(gp_ucb_mo, refused_options_name_the_field)
{
    static const char *const cases[][3] = {
        /* options, constraints?, field */
        {"{\"acquisition\": \"ucb\"}", "1", "scheduler.options.acquisition"},
        {"{\"acquisition\": \"logei\", \"cost_aware\": true}", "0", "scheduler.options.cost_aware"},
        {"{\"acquisition\": \"logei\", \"warp\": \"quantile\"}", "0", "scheduler.options.warp"},
        {"{\"acquisition\": \"logei\", \"stopping\": {\"rule\": \"median\"}}", "0", "scheduler.options.stopping"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hn h;
        cr_expect_eq(hn_open_mo(&h, GP, space4, cases[i][0], 2, (size_t)atoi(cases[i][1])), BD_EINVAL,
                     "%s accepted", cases[i][0]);
        cr_expect_str_eq(h.err.field, cases[i][2]);
        hn_close(&h);
    }
    hn h; /* UCB without constraints is ParEGO with UCB */
    cr_expect_eq(hn_open_mo(&h, GP, space4, "{\"acquisition\": \"ucb\"}", 2, 0), 0, "%s", h.err.message);
    hn_close(&h);
}

Test(gp_ucb_mo, replay_gives_the_same_next_suggestions)
{
    const size_t shapes[][2] = {{2, 1}, {3, 0}, {1, 1}}; /* objectives, constraints */
    for (size_t c = 0; c < 3; c++) {
        hn h;
        cr_assert_eq(hn_open_mo(&h, GP, space4, "{\"acquisition\": \"logei\"}", shapes[c][0], shapes[c][1]), 0);
        h.mo_outcome = czdt1;
        h.def.seed = 11 + c;
        cr_assert_eq(hn_run(&h, 3, HN_RANDOM, 24), HN_LIMIT);
        bd_sched *again = hn_replay(&h);
        cr_expect(hn_same_next(&h, again, 6), "%zu objectives, %zu constraints: the replay differs", shapes[c][0],
                  shapes[c][1]);
        h.ops->destroy(again);
        hn_close(&h);
    }
}

Test(gp_ucb_mo, a_failed_or_diverged_result_does_not_stop_it)
{
    hn h;
    cr_assert_eq(hn_open_mo(&h, GP, space4, "{\"acquisition\": \"logei\", \"n_init\": 3}", 2, 1), 0);
    for (int i = 0; i < 6; i++) {
        int64_t id = 0;
        cr_assert_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_TRIAL);
        double losses[2] = {i == 1 ? INFINITY : 0.1 * i, i == 1 ? INFINITY : 1 - 0.1 * i};
        if (i == 2)
            hn_fail(&h, id);
        else
            hn_complete_mo(&h, id, losses, i == 1 ? INFINITY : (i == 3 ? 0.5 : 0));
    }
    json_t *d = hn_describe(&h);
    cr_expect_eq(json_integer_value(json_object_get(d, "observations")), 5);
    json_decref(d);
    int64_t id = 0;
    cr_expect_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_TRIAL); /* the model's proposal, with a diverged result in it */
    hn_close(&h);
}

Test(gp_ucb_mo, beats_random_search_on_constrained_zdt1)
{
    /* 40 trials, one worker, five seeds, the same seeds for random search:
     * the feasible front's hypervolume must be ahead in at least four, and
     * fewer of the trials after the random start infeasible (the
     * probability of feasibility at work; the constraint cuts half the cube) */
    int wins = 0, fewer_infeasible = 0;
    double sum_g = 0, sum_r = 0;
    for (uint64_t seed = 1; seed <= 5; seed++) {
        double hv[2];
        int infeasible[2] = {0, 0};
        const struct bd_sched_ops *ops[2] = {GP, &bd_sched_random};
        for (int k = 0; k < 2; k++) {
            hn h;
            cr_assert_eq(hn_open_mo(&h, ops[k], space4, k == 0 ? "{\"acquisition\": \"logei\"}" : "{}", 2, 1), 0);
            h.def.seed = seed;
            h.mo_outcome = czdt1;
            h.check_pure = 0;
            cr_assert_eq(hn_run(&h, 1, HN_FIFO, 40), HN_LIMIT);
            hv[k] = hn_feasible_hv2(&h, h.n_trials, HV_REF);
            for (size_t i = 8; i < h.n_trials; i++) /* after gp_ucb's n_init = 8 */
                infeasible[k] += h.trials[i].state == HN_COMPLETED && h.trials[i].violation > 0;
            hn_close(&h);
        }
        wins += hv[0] > hv[1];
        fewer_infeasible += infeasible[0] < infeasible[1];
        sum_g += hv[0];
        sum_r += hv[1];
        fprintf(stderr, "seed %llu: gp_ucb %.4f (%d of 32 infeasible), random %.4f (%d of 32)\n",
                (unsigned long long)seed, hv[0], infeasible[0], hv[1], infeasible[1]);
    }
    cr_expect_geq(wins, 4, "gp_ucb ahead in %d of 5 seeds (mean %.4f against %.4f)", wins, sum_g / 5, sum_r / 5);
    cr_expect_geq(fewer_infeasible, 4, "gp_ucb proposed fewer infeasible configs in %d of 5 seeds", fewer_infeasible);
}

Test(gp_ucb_mo, held_bytes_counts_the_results)
{
    hn h;
    /* a random start longer than the run: the results are all it holds */
    cr_assert_eq(hn_open_mo(&h, GP, space4, "{\"acquisition\": \"logei\", \"n_init\": 200}", 2, 1), 0);
    h.mo_outcome = czdt1;
    h.check_pure = 0;
    cr_assert_eq(hn_run(&h, 2, HN_FIFO, 150), HN_LIMIT);
#if !defined(__SANITIZE_ADDRESS__) /* AddressSanitizer's allocator does not report through mallinfo2 */
    hn_expect_held_bytes(&h, "gp_ucb with 2 objectives and a constraint after 150 results");
#endif
    hn_close(&h);
}
