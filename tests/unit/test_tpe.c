/* test_tpe.c: server/model/tpe.c. The log densities of the Parzen
 * estimators are checked against Optuna 3.1's _ParzenEstimator.log_pdf
 * (Debian's python3-optuna 3.1.0, consider_prior, prior_weight 1, magic
 * clip, no endpoints, default_weights), computed with:
 *
 *   from optuna.samplers._tpe.parzen_estimator import _ParzenEstimator, ...
 *   _ParzenEstimator({"x": obs}, {"x": FloatDistribution(-2, 3)}, params).log_pdf({"x": pts})
 *
 * for each case below (the distributions are named in each test), with one
 * correction: Optuna 3.1's _truncnorm.logpdf leaves out the -log(scale) of
 * a Gaussian density (so a wide component weighs more than its weight says);
 * the reference values were computed with that term put back
 * (`logpdf(x, a, b, loc, scale) - log(scale)`). Bin masses (linear
 * integers) and categoricals are unaffected and match Optuna 3.1 as is.
 * Then the split, determinism, and that proposals follow the good group. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "server/model/tpe.h"

static const bd_tpe_dim FLOAT_M2_3 = {0, -2, 3, 0};  /* FloatDistribution(-2, 3) */
static const bd_tpe_dim INT_1_8 = {0, 0.5, 8.5, 1};  /* IntDistribution(1, 8): bins around integers */
static const bd_tpe_dim CAT_3 = {3, 0, 0, 0};        /* CategoricalDistribution of 3 */

static void expect_log_pdf(const bd_tpe_dim *dims, size_t d, const double *x, size_t m, int multivariate,
                           const double *points, size_t n_points, const double *want)
{
    bd_tpe_opts o;
    bd_tpe_opts_default(&o);
    o.multivariate = multivariate;
    size_t rows[64];
    for (size_t i = 0; i < m; i++)
        rows[i] = i;
    for (size_t p = 0; p < n_points; p++) {
        double got = bd_tpe_log_pdf(dims, d, x, rows, m, &o, NULL, 0, points + p * d);
        cr_expect(fabs(got - want[p]) < 1e-9, "point %zu: log pdf %.15g, Optuna %.15g", p, got, want[p]);
    }
}

Test(tpe, float_log_pdf_matches_optuna)
{
    static const double x[] = {0.5, -1.0, 2.2, 1.0, 0.1};
    static const double pts[] = {-1.5, 0, 0.7, 2.9};
    static const double want[] = {-2.04373601648903, -1.2956309110804, -1.23382524985536, -2.17919213679285};
    expect_log_pdf(&FLOAT_M2_3, 1, x, 5, 0, pts, 4, want);
}

Test(tpe, int_log_pdf_is_the_bin_mass_as_in_optuna)
{
    static const double x[] = {2, 5, 5, 8};
    static const double pts[] = {1, 3, 8};
    static const double want[] = {-2.50360213526441, -2.0842941971525, -2.31657165245933};
    expect_log_pdf(&INT_1_8, 1, x, 4, 0, pts, 3, want);
}

Test(tpe, log_int_log_pdf_matches_optuna)
{
    /* IntDistribution(1, 100, log=True): log scale over [log 0.5, log 100.5], a density */
    const bd_tpe_dim dim = {0, log(0.5), log(100.5), 0};
    const double x[] = {log(2), log(5), log(50), log(8)};
    const double pts[] = {log(1), log(3), log(80)};
    static const double want[] = {-1.83745332619324, -1.33388351357194, -2.07836419108732};
    expect_log_pdf(&dim, 1, x, 4, 0, pts, 3, want);
}

Test(tpe, categorical_log_pdf_matches_optuna)
{
    static const double x[] = {0, 2, 2};
    static const double pts[] = {0, 1, 2};
    static const double want[] = {-1.09861228866811, -1.65822807660353, -0.741937344729377};
    expect_log_pdf(&CAT_3, 1, x, 3, 0, pts, 3, want);
}

Test(tpe, multivariate_log_pdf_matches_optuna)
{
    const bd_tpe_dim dims[2] = {FLOAT_M2_3, INT_1_8};
    static const double x[] = {0.5, 2, -1.0, 5, 2.2, 5, 1.0, 8};
    static const double pts[] = {-1.5, 1, 0, 3, 0.7, 8};
    static const double want[] = {-5.06796239542441, -3.45525353894606, -3.06146314313039};
    expect_log_pdf(dims, 2, x, 4, 1, pts, 3, want);

    const bd_tpe_dim mixed[2] = {CAT_3, FLOAT_M2_3};
    static const double xc[] = {0, 1.0, 2, 2.0, 2, -1.5};
    static const double pc[] = {0, 1.1, 1, 0.0, 2, -1.9};
    static const double wc[] = {-2.28404608357332, -3.34915389812353, -2.19965561245736};
    expect_log_pdf(mixed, 2, xc, 3, 1, pc, 3, wc);
}

Test(tpe, older_observations_weigh_less_past_25_as_in_optuna)
{
    double x[30];
    for (int i = 0; i < 30; i++)
        x[i] = (double)((i * 37) % 101) / 101.0 * 5 - 2;
    static const double pts[] = {-1.9, 0.3, 2.5};
    static const double want[] = {-1.78508433036803, -1.57789639593245, -1.58623697570682};
    expect_log_pdf(&FLOAT_M2_3, 1, x, 30, 0, pts, 3, want);
}

Test(tpe, no_observations_is_the_prior)
{
    static const double pts[] = {0.0, 2.0};
    static const double want[] = {-1.57346011194315, -1.61346011194315};
    expect_log_pdf(&FLOAT_M2_3, 1, NULL, 0, 0, pts, 2, want);
}

Test(tpe, good_group_is_optunas_default_gamma)
{
    bd_tpe_opts o;
    bd_tpe_opts_default(&o);
    static const size_t n[] = {0, 1, 10, 11, 30, 249, 250, 251, 100000};
    static const size_t want[] = {0, 1, 1, 2, 3, 25, 25, 25, 25}; /* min(ceil(0.1 n), 25) */
    for (size_t i = 0; i < sizeof n / sizeof n[0]; i++)
        cr_expect_eq(bd_tpe_n_good(&o, n[i]), want[i], "n = %zu: %zu", n[i], bd_tpe_n_good(&o, n[i]));
}

/* 40 observations on [-2, 3]: loss = (x - 1.2)^2, so the good group sits
 * around 1.2; proposals must land there far more often than a uniform draw
 * would (a band of width 1 holds 20% of the range). */
static void fill_bowl(double *x, double *loss, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        x[i] = -2 + 5 * (double)((i * 13) % 40) / 40.0;
        loss[i] = (x[i] - 1.2) * (x[i] - 1.2);
    }
}

Test(tpe, proposals_follow_the_good_group)
{
    double x[40], loss[40];
    fill_bowl(x, loss, 40);
    bd_tpe_opts o;
    bd_tpe_opts_default(&o);
    for (int mv = 0; mv <= 1; mv++) {
        o.multivariate = mv;
        int near = 0;
        for (int k = 0; k < 200; k++) {
            bd_rng rng;
            bd_rng_seed(&rng, 11, (uint64_t)k);
            double p;
            bd_tpe_propose(&FLOAT_M2_3, 1, x, loss, NULL, NULL, 40, &o, &rng, &p);
            cr_assert(p >= -2 && p <= 3, "proposal %g outside the range", p);
            near += fabs(p - 1.2) < 0.5;
        }
        cr_expect_gt(near, 150, "multivariate %d: %d of 200 proposals within 0.5 of the optimum", mv, near);
    }
}

Test(tpe, same_rng_gives_the_same_proposal)
{
    const bd_tpe_dim dims[3] = {FLOAT_M2_3, INT_1_8, CAT_3};
    double x[3 * 20], loss[20], a[3], b[3];
    for (int i = 0; i < 20; i++) {
        x[3 * i] = -2 + 0.25 * i;
        x[3 * i + 1] = 1 + i % 8;
        x[3 * i + 2] = i % 3;
        loss[i] = i % 5 == 0 ? INFINITY : fabs(x[3 * i] - 0.3) + 0.1 * x[3 * i + 2];
    }
    bd_tpe_opts o;
    bd_tpe_opts_default(&o);
    bd_rng r1, r2;
    bd_rng_seed(&r1, 5, 9);
    bd_rng_seed(&r2, 5, 9);
    bd_tpe_propose(dims, 3, x, loss, NULL, NULL, 20, &o, &r1, a);
    bd_tpe_propose(dims, 3, x, loss, NULL, NULL, 20, &o, &r2, b);
    for (int j = 0; j < 3; j++)
        cr_expect_eq(a[j], b[j], "coordinate %d: %g then %g", j, a[j], b[j]);
    cr_expect(a[1] >= 0.5 && a[1] <= 8.5 && a[2] >= 0 && a[2] <= 2 && a[2] == floor(a[2]));
}

/* A conditional parameter inactive (NAN) in most observations is proposed
 * from the observations where it is active, and never from a NAN. */
Test(tpe, inactive_coordinates_are_left_out)
{
    const bd_tpe_dim dims[2] = {CAT_3, FLOAT_M2_3};
    double x[2 * 30], loss[30];
    for (int i = 0; i < 30; i++) {
        x[2 * i] = i % 3;
        x[2 * i + 1] = i % 3 == 0 ? -1.5 + 0.01 * i : NAN; /* active only under choice 0 */
        loss[i] = i % 3 == 0 ? 0.1 * (double)i : 10;
    }
    bd_tpe_opts o;
    bd_tpe_opts_default(&o);
    for (int mv = 0; mv <= 1; mv++) {
        o.multivariate = mv;
        for (int k = 0; k < 20; k++) {
            bd_rng rng;
            bd_rng_seed(&rng, 3, (uint64_t)k);
            double p[2];
            bd_tpe_propose(dims, 2, x, loss, NULL, NULL, 30, &o, &rng, p);
            cr_assert(!isnan(p[0]) && !isnan(p[1]) && p[1] >= -2 && p[1] <= 3);
        }
    }
}

/* With costs, two equally good regions are no longer equal: the one whose
 * results cost e^3 times more per unit gets far fewer proposals (EI per
 * second); without costs both get their share. */
Test(tpe, cost_aware_proposals_prefer_the_cheaper_of_two_equal_regions)
{
    double x[40], loss[40], log_cost[40];
    for (int i = 0; i < 40; i++) {
        int cheap = i % 2 == 0;
        x[i] = (cheap ? -1.5 : 1.5) + 0.05 * (i / 2 % 10); /* two clusters, 1.5 apart from the range's middle */
        loss[i] = i < 20 ? 0.1 + 0.001 * i : 1.0 + 0.01 * i; /* the first 20 good in both clusters alike */
        log_cost[i] = cheap ? 0.0 : 3.0;
    }
    bd_tpe_opts o;
    bd_tpe_opts_default(&o);
    int in_cheap[2] = {0, 0};
    for (int with_cost = 0; with_cost <= 1; with_cost++)
        for (int k = 0; k < 200; k++) {
            bd_rng rng;
            bd_rng_seed(&rng, 21, (uint64_t)k);
            double p;
            bd_tpe_propose(&FLOAT_M2_3, 1, x, loss, NULL, with_cost ? log_cost : NULL, 40, &o, &rng, &p);
            in_cheap[with_cost] += p < 0.25;
        }
    cr_expect(in_cheap[0] > 60 && in_cheap[0] < 140, "without costs %d of 200 in the cheap half", in_cheap[0]);
    cr_expect_gt(in_cheap[1], 170, "with costs %d of 200 in the cheap half", in_cheap[1]);
}
