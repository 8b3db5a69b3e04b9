/* test_gp_train.c: the training-set cap and refit schedule
 * (server/model/gp_train.c): which observations bd_gp_select keeps, that
 * bd_gp_sync's incremental changes give the same model as a factorisation
 * from scratch over a growing study, and the refit schedule's steps. */
#include <criterion/criterion.h>
#include <gsl/gsl_errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "server/model/gp.h"

static void setup(void)
{
    gsl_set_error_handler_off();
}

TestSuite(gp_train, .init = setup);

Test(gp_train, select_keeps_everything_under_the_cap)
{
    double y[5] = {3, 1, 2, 5, 4};
    size_t idx[5];
    cr_assert_eq(bd_gp_select(5, y, 5, 2, idx), 5);
    for (size_t i = 0; i < 5; i++)
        cr_assert_eq(idx[i], i);
}

Test(gp_train, select_keeps_the_best_and_the_most_recent)
{
    /* index:        0  1  2    3  4  5  6  7  8    9 */
    double y[10] = {5, 0, 7, -1, 9, 9, 8, 0, 6, NAN};
    size_t idx[10], want[6] = {1, 3, 6, 7, 8, 9}, m;
    /* best 2: index 3 (-1), then index 1 (0, earlier than 7); then the 4
     * most recent others: 9, 8, 7, 6 */
    m = bd_gp_select(10, y, 6, 2, idx);
    cr_assert_eq(m, 6);
    for (size_t i = 0; i < m; i++)
        cr_assert_eq(idx[i], want[i], "position %zu: %zu, want %zu", i, idx[i], want[i]);
    /* n_best larger than the cap: only the best */
    m = bd_gp_select(10, y, 3, 50, idx);
    cr_assert_eq(m, 3);
    cr_assert_eq(idx[0], 1);
    cr_assert_eq(idx[1], 3);
    cr_assert_eq(idx[2], 7);
    /* no best at all: the most recent */
    m = bd_gp_select(10, y, 2, 0, idx);
    cr_assert_eq(idx[0], 8);
    cr_assert_eq(idx[1], 9);
}

static double f(const double *x)
{
    return sin(5 * x[0]) + cos(3 * x[1]) * x[0];
}

/* A study grows to 300 observations with a cap of 60 (20 best): at each
 * step the synced model equals one built from scratch on the same subset. */
Test(gp_train, sync_matches_a_model_from_scratch)
{
    enum { N = 300, CAP = 60, BEST = 20 };
    double *X = malloc(2 * N * sizeof *X), *y = malloc(N * sizeof *y), *Xs = malloc(2 * CAP * sizeof *Xs), ys[CAP];
    double theta[4] = {log(0.3), log(0.4), 0, log(1e-3)};
    size_t idx[CAP];
    bd_kernel *k;
    bd_gp *inc, *full;
    bd_rng rng;
    bd_rng_seed(&rng, 41, 0);
    cr_assert_eq(bd_kernel_new(BD_KERNEL_MATERN52, 2, NULL, &k, NULL), 0);
    cr_assert_eq(bd_gp_new(k, 1e-3, BD_GP_STD_SCALE, &inc, NULL), 0);
    cr_assert_eq(bd_gp_new(k, 1e-3, BD_GP_STD_SCALE, &full, NULL), 0);
    cr_assert_eq(bd_gp_set_theta(inc, theta, NULL), 0);
    cr_assert_eq(bd_gp_set_theta(full, theta, NULL), 0);
    for (size_t n = 1; n <= N; n++) {
        size_t m;
        X[2 * (n - 1)] = bd_rng_uniform(&rng);
        X[2 * (n - 1) + 1] = bd_rng_uniform(&rng);
        y[n - 1] = f(X + 2 * (n - 1)) + 0.01 * bd_rng_normal(&rng);
        m = bd_gp_select(n, y, CAP, BEST, idx);
        cr_assert_eq(bd_gp_sync(inc, X, y, idx, m, NULL), 0);
        cr_assert_eq(bd_gp_size(inc), m);
        if (n % 37 != 0 && n != N)
            continue;
        for (size_t i = 0; i < m; i++) {
            memcpy(Xs + 2 * i, X + 2 * idx[i], 2 * sizeof *X);
            ys[i] = y[idx[i]];
        }
        cr_assert_eq(bd_gp_set_data(full, m, Xs, ys, idx, NULL), 0);
        for (int q = 0; q < 20; q++) {
            double x[2] = {bd_rng_uniform(&rng), bd_rng_uniform(&rng)}, m1, v1, m2, v2;
            cr_assert_eq(bd_gp_predict(inc, 1, x, &m1, &v1, 0, NULL), 0);
            cr_assert_eq(bd_gp_predict(full, 1, x, &m2, &v2, 0, NULL), 0);
            cr_assert_float_eq(m1, m2, 1e-8, "n = %zu: mean %.12g vs %.12g", n, m1, m2);
            cr_assert_float_eq(v1, v2, 1e-8, "n = %zu: variance %.12g vs %.12g", n, v1, v2);
        }
        for (size_t i = 0; i < m; i++)
            cr_assert_geq(bd_gp_find(inc, idx[i]), 0);
    }
    /* an observation whose value changed is replaced */
    y[idx[0]] += 1;
    cr_assert_eq(bd_gp_sync(inc, X, y, idx, CAP, NULL), 0);
    cr_assert_eq(bd_gp_y(inc, (size_t)bd_gp_find(inc, idx[0])), y[idx[0]]);
    /* duplicates are refused */
    idx[1] = idx[0];
    cr_assert_eq(bd_gp_sync(inc, X, y, idx, CAP, NULL), BD_EINVAL);
    bd_kernel_free(k);
    bd_gp_free(inc);
    bd_gp_free(full);
    free(X);
    free(y);
    free(Xs);
}

Test(gp_train, refit_schedule)
{
    cr_assert(bd_gp_refit_due(0, 1));
    cr_assert(!bd_gp_refit_due(0, 0));
    cr_assert(!bd_gp_refit_due(1, 10));
    cr_assert(bd_gp_refit_due(1, 11));
    cr_assert(!bd_gp_refit_due(50, 59));
    cr_assert(bd_gp_refit_due(50, 60));
    cr_assert(!bd_gp_refit_due(100, 119));
    cr_assert(bd_gp_refit_due(100, 120));
    cr_assert(!bd_gp_refit_due(2000, 2399));
    cr_assert(bd_gp_refit_due(2000, 2400));
    cr_assert(bd_gp_refit_due(30, 29)); /* shrank */
    /* O(log n) refits up to 100,000 observations */
    {
        size_t last = 0, count = 0;
        for (size_t n = 1; n <= 100000; n++)
            if (bd_gp_refit_due(last, n)) {
                last = n;
                count++;
            }
        cr_assert_lt(count, 60);
    }
}
