/* Best-value history and its thinning (server/history.c). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

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
