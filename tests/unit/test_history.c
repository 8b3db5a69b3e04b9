/* Best-value history and its thinning (server/history.c). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "server/history.h"

Test(history, thin_keeps_all_when_few)
{
    size_t keep[8];
    cr_assert_eq(bd_history_thin(0, 5, keep), 0);
    cr_assert_eq(bd_history_thin(3, 5, keep), 3);
    for (size_t i = 0; i < 3; i++)
        cr_expect_eq(keep[i], i);
    cr_assert_eq(bd_history_thin(5, 5, keep), 5);
}

Test(history, thin_keeps_first_and_last_evenly)
{
    size_t keep[3];
    cr_assert_eq(bd_history_thin(11, 3, keep), 3);
    cr_expect_eq(keep[0], 0);
    cr_expect_eq(keep[1], 5);
    cr_expect_eq(keep[2], 10);
    size_t two[2];
    cr_assert_eq(bd_history_thin(1000, 2, two), 2);
    cr_expect_eq(two[0], 0);
    cr_expect_eq(two[1], 999);
}

Test(history, thin_is_strictly_increasing_for_many_sizes)
{
    size_t keep[2000];
    for (size_t n = 2; n < 3000; n += 7)
        for (size_t max = 2; max <= 2000; max = max * 3 + 1) {
            size_t k = bd_history_thin(n, max, keep);
            cr_assert_eq(k, n < max ? n : max);
            cr_assert_eq(keep[0], 0);
            cr_assert_eq(keep[k - 1], n - 1, "n %zu max %zu", n, max);
            for (size_t i = 1; i < k; i++)
                cr_assert_gt(keep[i], keep[i - 1], "n %zu max %zu at %zu", n, max, i);
        }
}

static bd_history_trial done(int64_t id, double created, double finished, double value, double spent)
{
    return (bd_history_trial){.id = id, .created_at = created, .spent = spent, .completed = 1,
                              .finished_at = finished, .value = value};
}

Test(history, improvements_in_finish_order_with_resource)
{
    /* ids in creation order; trial 3 finishes before trial 2 */
    bd_history_trial t[] = {
        done(1, 0, 10, 5.0, 1),
        done(2, 1, 30, 2.0, 3),
        done(3, 2, 20, 4.0, 1),
        {.id = 4, .created_at = 3, .spent = 9, .completed = 0, .value = NAN}, /* running */
        done(5, 25, 40, 4.0, 1),      /* no improvement */
        done(6, 26, 50, NAN, 1),      /* diverged */
        done(7, 27, 60, 2.0, 1),      /* a tie is no improvement */
        done(8, 65, 70, 1.0, 2),
    };
    bd_history_point p[8];
    size_t n = bd_history_build(t, 8, 0, 8, p);
    cr_assert_eq(n, 4);
    int64_t ids[] = {1, 3, 2, 8};
    double values[] = {5, 4, 2, 1};
    /* spent by trials created by then: at 10 and 20 trials 1-4 (1+3+1+9),
     * at 30 also 5-7, at 70 also 8 */
    double resource[] = {14, 14, 17, 19};
    for (size_t i = 0; i < n; i++) {
        cr_expect_eq(p[i].trial_id, ids[i], "point %zu", i);
        cr_expect_eq(p[i].value, values[i]);
        cr_expect_eq(p[i].resource, resource[i], "point %zu resource %g", i, p[i].resource);
    }
    cr_expect_eq(p[1].finished_at, 20);
}

Test(history, maximize_and_thinning_keep_the_last_best)
{
    bd_history_trial t[100];
    for (int i = 0; i < 100; i++)
        t[i] = done(i + 1, i, i + 0.5, i, 1); /* every completion improves */
    bd_history_point p[10];
    size_t n = bd_history_build(t, 100, 1, 10, p);
    cr_assert_eq(n, 10);
    cr_expect_eq(p[0].trial_id, 1);
    cr_expect_eq(p[9].trial_id, 100);
    cr_expect_eq(p[9].value, 99);
    cr_expect_eq(p[9].resource, 100);
    for (size_t i = 1; i < n; i++)
        cr_expect_gt(p[i].value, p[i - 1].value);
    cr_assert_eq(bd_history_build(t, 100, 0, 10, p), 1, "minimizing, only the first is a best");
    cr_assert_eq(bd_history_build(t, 0, 0, 10, p), 0);
}

/* The improvements by definition: sort by (finished_at, id), keep each value
 * strictly better than all before it. */
static int by_key(const void *a, const void *b)
{
    const bd_history_point *x = a, *y = b;
    if (x->finished_at != y->finished_at)
        return x->finished_at < y->finished_at ? -1 : 1;
    return (x->trial_id > y->trial_id) - (x->trial_id < y->trial_id);
}

Test(history, records_in_any_order_are_the_improvements)
{
    enum { N = 600 };
    bd_history_point all[N], sorted[N], expect[N];
    unsigned seed = 12345;
    for (int maximize = 0; maximize <= 1; maximize++)
        for (int round = 0; round < 20; round++) {
            for (int i = 0; i < N; i++) /* few distinct times and values: many ties */
                all[i] = (bd_history_point){.trial_id = i + 1, .finished_at = rand_r(&seed) % 50,
                                            .value = rand_r(&seed) % 40};
            memcpy(sorted, all, sizeof all);
            qsort(sorted, N, sizeof *sorted, by_key);
            size_t n_expect = 0;
            for (int i = 0; i < N; i++) {
                double v = sorted[i].value, last = n_expect ? expect[n_expect - 1].value : NAN;
                if (!n_expect || (maximize ? v > last : v < last))
                    expect[n_expect++] = sorted[i];
            }
            for (int i = N - 1; i > 0; i--) { /* offered in a shuffled order */
                int j = rand_r(&seed) % (i + 1);
                bd_history_point t = all[i];
                all[i] = all[j];
                all[j] = t;
            }
            bd_history_records r = {.maximize = maximize};
            for (int i = 0; i < N; i++)
                bd_history_records_add(&r, all[i].trial_id, all[i].finished_at, all[i].value);
            cr_assert_eq(r.n, n_expect, "round %d maximize %d", round, maximize);
            for (size_t i = 0; i < n_expect; i++)
                cr_assert_eq(r.p[i].trial_id, expect[i].trial_id, "round %d at %zu", round, i);
            bd_history_records_free(&r);
        }
}

Test(history, charge_counts_trials_created_by_each_point)
{
    bd_history_point p[] = {{.trial_id = 1, .finished_at = 10}, {.trial_id = 2, .finished_at = 20},
                            {.trial_id = 3, .finished_at = 20}, {.trial_id = 4, .finished_at = 30}};
    double charge[4] = {0};
    bd_history_charge(p, 4, charge, 0, 1);    /* counts in all four */
    bd_history_charge(p, 4, charge, 10, 2);   /* created at 10: counts at 10 */
    bd_history_charge(p, 4, charge, 20, 4);   /* from the two at 20 */
    bd_history_charge(p, 4, charge, 25, 8);   /* only at 30 */
    bd_history_charge(p, 4, charge, 31, 100); /* after every point */
    bd_history_settle(p, 4, charge);
    cr_expect_eq(p[0].resource, 3);
    cr_expect_eq(p[1].resource, 7);
    cr_expect_eq(p[2].resource, 7);
    cr_expect_eq(p[3].resource, 15);
}

/* Several objectives (issue 41): the front's hypervolume at each change of
 * the front, in finish order, worked by hand. Minimized, reference (1, 1):
 * trial 3 finishes before trial 2, which dominates it; trial 4 repeats
 * trial 2 (a duplicate changes the front, not its volume); trial 5 is
 * dominated. By finish: {1} 0.8 x 0.2 = 0.16; {1, 3} 0.4 x 0.2 + 0.4 x 0.5
 * = 0.28; {1, 2} 0.3 x 0.2 + 0.5 x 0.6 = 0.36; {1, 2, 4} 0.36. */
Test(history, the_front_hypervolume_over_finish_order_by_hand)
{
    bd_history_front h = {.m = 2};
    static const struct {
        int64_t id;
        double finished, f1, f2;
    } t[] = {{1, 10, 0.2, 0.8}, {2, 30, 0.5, 0.4}, {3, 20, 0.6, 0.5}, {4, 40, 0.5, 0.4}, {5, 50, 0.9, 0.9}};
    for (size_t i = 0; i < 5; i++)
        bd_history_front_add(&h, t[i].id, t[i].finished, (double[]){t[i].f1, t[i].f2});
    bd_history_point p[4];
    double hv[4], ref[2], given[2] = {1, 1};
    size_t n = bd_history_front_points(&h, given, 200, 4, p, hv, ref);
    cr_assert_eq(n, 4);
    static const int64_t ids[] = {1, 3, 2, 4};
    static const double want[] = {0.16, 0.28, 0.36, 0.36};
    for (size_t i = 0; i < n; i++) {
        cr_expect_eq(p[i].trial_id, ids[i], "point %zu", i);
        cr_expect_float_eq(hv[i], want[i], 1e-12, "point %zu: %g", i, hv[i]);
    }
    cr_expect_float_eq(p[1].finished_at, 20, 1e-12);
    cr_expect(ref[0] == 1 && ref[1] == 1);
    /* thinned to 3: the first, the last and the one between (bd_history_thin) */
    n = bd_history_front_points(&h, given, 200, 3, p, hv, ref);
    cr_assert_eq(n, 3);
    cr_expect(p[0].trial_id == 1 && p[1].trial_id == 2 && p[2].trial_id == 4);
    cr_expect_float_eq(hv[1], 0.36, 1e-12);
    /* no reference: BoTorch's rule over the final front {(0.2, 0.8), (0.5, 0.4) twice}:
     * nadir (0.5, 0.8) + 10% of the range (0.3, 0.4) = (0.53, 0.84); the final
     * volume 0.3 x 0.04 + 0.03 x 0.44 = 0.0252 */
    double none[2] = {NAN, NAN};
    n = bd_history_front_points(&h, none, 200, 4, p, hv, ref);
    cr_expect_float_eq(ref[0], 0.53, 1e-12);
    cr_expect_float_eq(ref[1], 0.84, 1e-12);
    cr_expect_float_eq(hv[n - 1], 0.0252, 1e-12);
    bd_history_front_free(&h);

    /* three objectives: (1,2,3), (2,1,3), (3,3,1) against (4,4,4): boxes of 6, 6
     * and 3, pairwise overlaps 4, 1 and 1, all three 1: 6 + 6 + 3 - 6 + 1 = 10 */
    bd_history_front h3 = {.m = 3};
    bd_history_front_add(&h3, 1, 1, (double[]){1, 2, 3});
    bd_history_front_add(&h3, 2, 2, (double[]){2, 1, 3});
    bd_history_front_add(&h3, 3, 3, (double[]){3, 3, 1});
    double given3[3] = {4, 4, 4}, ref3[3], hv3[3];
    n = bd_history_front_points(&h3, given3, 200, 3, p, hv3, ref3);
    cr_assert_eq(n, 3);
    cr_expect_float_eq(hv3[0], 6, 1e-12);
    cr_expect_float_eq(hv3[1], 8, 1e-12, "6 + 6 - 4");
    cr_expect_float_eq(hv3[2], 10, 1e-12);
    bd_history_front_free(&h3);
}

/* A front the study's trials can make as large as they like (here 5,000
 * mutually non-dominated points on a line): the history follows at most
 * BD_PARETO_HV_MAX_POINTS members, as the study's own front does, so each
 * step stays bounded; the points past that are left out, truncated is set,
 * and the final hypervolume is computed (a front over the cap had none).
 * Against (5000, 5000) the 4096 staircase points (i, 4999 - i), i < 4096,
 * cover columns 1 wide and i + 1 high for i < 4095, then the last one 905
 * wide and 4096 high: 4095 x 4096 / 2 + 905 x 4096. */
Test(history, the_front_followed_is_capped_and_says_truncated)
{
    bd_history_front h = {.m = 2};
    for (int64_t i = 0; i < 5000; i++)
        bd_history_front_add(&h, i + 1, (double)i, (double[]){(double)i, 4999.0 - (double)i});
    bd_history_point p[2];
    double hv[2], ref[2], given[2] = {5000, 5000};
    size_t n = bd_history_front_points(&h, given, 200, 2, p, hv, ref);
    cr_assert_eq(n, 2);
    cr_expect_eq(h.truncated, 1);
    cr_expect_eq(p[1].trial_id, 4096, "the last change: the last member that joined");
    cr_expect_float_eq(hv[1], 4095.0 * 4096.0 / 2.0 + 905.0 * 4096.0, 1e-6, "%g", hv[1]);
    bd_history_front_free(&h);
}

/* Eight objectives, 200 trials on a simplex (nearly all on the front): the
 * work a history spends on hypervolumes grows with the objectives (WFG's
 * cost does), so only the early small fronts and the last one get a
 * volume; n^3 alone had 168 of the 200 points computed, 15 s of CPU. */
Test(history, many_objectives_spend_the_hypervolume_budget_sooner)
{
    bd_history_front h = {.m = 8};
    uint64_t s = 12345;
    for (int64_t i = 0; i < 200; i++) {
        double l[8], sum = 0;
        for (int j = 0; j < 8; j++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            sum += l[j] = 1e-3 + (double)(s >> 11) / 9007199254740992.0;
        }
        for (int j = 0; j < 8; j++)
            l[j] /= sum;
        bd_history_front_add(&h, i + 1, (double)i, l);
    }
    bd_history_point p[200];
    double hv[200], ref[8], given[8];
    for (int j = 0; j < 8; j++)
        given[j] = NAN;
    size_t n = bd_history_front_points(&h, given, 200, 200, p, hv, ref), computed = 0;
    cr_assert_gt(n, 100);
    for (size_t i = 0; i < n; i++)
        computed += !isnan(hv[i]);
    cr_expect_leq(computed, 60, "%zu hypervolumes of up to 200 points in 8 dimensions", computed);
    cr_expect(isfinite(hv[n - 1]) && hv[n - 1] > 0, "the last point's is always computed");
    bd_history_front_free(&h);
}
