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

/* ---- the split with several objectives and constraints (bd_tpe_split) ----
 * Vectors printed by tests/fixtures/tpe/make_split_vectors.py: Optuna 3.1's
 * _split_observation_pairs and _calculate_weights_below_for_multi_objective
 * on the same losses (rerun it to check them). */

/* s2: n 30, m 2, n_below 3 */
static const double s2_loss[] = {0.251, 0.524, 0.046, 0.823, 0.677, 0.274, 0.043, 0.984, 0.116, 0.959, 0.604, 0.307, 0.191, 0.738, 0.669, 0.444, 0.917, 0.279, 0.419, 0.418, 0.332, 0.528, 0.283, 0.684, 0.186, 0.675, 0.317, 0.575, 0.481, 0.38, 0.07, 0.821, 0.705, 0.408, 0.315, 0.701, 0.745, 0.18, 0.398, 0.453, 0.608, 0.378, 0.728, 0.417, 0.422, 0.531, 0.394, 0.58, 0.232, 0.603, 0.442, 0.418, 0.373, 0.436, 0.584, 0.435, 0.1, 0.967, 0.741, 0.343};
static const size_t s2_below[] = {0, 1, 14};
static const double s2_w[] = {1.0, 0.2453322669878535, 0.10071833649700863};
#define S2_N 30
#define S2_M 2
#define S2_GOOD 3
/* s2b: n 60, m 2, n_below 9 */
static const double s2b_loss[] = {0.86, 0.91, 0.82, 0.83, 0.03, 0.24, 0.27, 0.38, 0.48, 0.32, 0.44, 0.56, 0.39, 0.58, 0.38, 0.2, 0.36, 0.7, 0.74, 0.68, 0.1, 0.19, 0.52, 0.86, 0.03, 0.19, 0.83, 0.77, 0.53, 0.91, 0.43, 0.49, 0.48, 0.15, 0.56, 0.53, 0.89, 0.12, 0.06, 0.33, 0.65, 0.35, 0.36, 0.32, 0.17, 0.34, 0.56, 0.7, 0.81, 0.34, 0.76, 0.33, 0.25, 0.65, 0.41, 0.09, 0.59, 0.28, 0.22, 0.19, 0.98, 0.09, 0.41, 0.13, 0.04, 0.71, 0.86, 0.77, 0.76, 0.67, 0.09, 0.63, 0.94, 0.11, 0.15, 0.6, 0.01, 0.56, 0.03, 0.25, 0.29, 0.06, 0.36, 0.43, 0.23, 0.97, 0.74, 0.44, 0.5, 0.22, 0.72, 0.84, 0.03, 0.63, 0.89, 0.18, 0.07, 0.89, 0.53, 0.61, 0.69, 0.73, 0.63, 0.12, 0.74, 0.02, 0.0, 0.94, 0.57, 0.81, 0.09, 0.4, 0.56, 0.97, 0.38, 0.61, 0.09, 0.7, 0.27, 0.38};
static const size_t s2b_below[] = {2, 10, 12, 27, 31, 38, 40, 52, 53};
static const double s2b_w[] = {3.9211332457189484e-11, 3.9215686272972154e-11, 0.13725490199462054, 3.9215686272972154e-11, 3.9215686272972154e-11, 0.2980392157138061, 1.0, 0.1160784314072118, 0.036862745135807194};
#define S2B_N 60
#define S2B_M 2
#define S2B_GOOD 9
/* s3: n 45, m 3, n_below 5 */
static const double s3_loss[] = {0.741, 0.702, 0.146, 0.492, 0.342, 0.95, 0.202, 0.775, 0.25, 0.838, 0.438, 0.942, 0.66, 0.027, 0.136, 0.897, 0.288, 0.208, 0.734, 0.887, 0.103, 0.239, 0.221, 0.549, 0.693, 0.302, 0.023, 0.918, 0.532, 0.602, 0.828, 0.962, 0.844, 0.475, 0.667, 0.114, 0.525, 0.787, 0.76, 0.845, 0.652, 0.372, 0.021, 0.938, 0.871, 0.213, 0.025, 0.91, 0.224, 0.709, 0.138, 0.85, 0.544, 0.949, 0.031, 0.838, 0.678, 0.118, 0.329, 0.326, 0.308, 0.476, 0.513, 0.543, 0.293, 0.777, 0.899, 0.715, 0.609, 0.258, 0.403, 0.018, 0.181, 0.981, 0.675, 0.054, 0.685, 0.734, 0.245, 0.795, 0.072, 0.498, 0.187, 0.86, 0.149, 0.437, 0.525, 0.384, 0.386, 0.045, 0.084, 0.885, 0.994, 0.875, 0.936, 0.862, 0.214, 0.501, 0.735, 0.695, 0.684, 0.249, 0.598, 0.47, 0.322, 0.928, 0.42, 0.418, 0.352, 0.844, 0.831, 0.215, 0.672, 0.788, 0.721, 0.088, 0.822, 0.869, 0.64, 0.303, 0.931, 0.369, 0.085, 0.019, 0.642, 0.663, 0.011, 0.06, 0.627, 0.304, 0.972, 0.125, 0.689, 0.328, 0.682};
static const size_t s3_below[] = {4, 7, 19, 23, 42};
static const double s3_w[] = {0.9126084895961031, 0.31437813917370394, 1.0, 0.4701387200311159, 0.7855865475892814};
#define S3_N 45
#define S3_M 3
#define S3_GOOD 5
/* c2: n 40, m 2, n_below 4, constrained */
static const double c2_loss[] = {0.427, 0.499, 0.169, 0.333, 0.494, 0.379, 0.146, 0.719, 0.077, 0.602, 0.77, 0.267, 0.677, 0.881, 0.157, 0.134, 0.451, 0.411, 0.182, 0.641, 0.058, 0.261, 0.177, 0.522, 0.214, 0.628, 0.298, 0.2, 0.89, 0.364, 0.119, 0.346, 0.56, 0.157, 0.46, 0.436, 0.648, 0.056, 0.795, 0.871, 0.843, 0.353, 0.091, 0.34, 0.527, 0.132, 0.528, 0.724, 0.285, 0.641, 0.972, 0.01, 0.383, 0.947, 0.625, 0.692, 0.268, 0.396, 0.871, 0.151, 0.712, 0.027, 0.77, 0.357, 0.812, 0.438, 0.785, 0.58, 0.753, 0.053, 0.098, 0.826, 0.878, 0.314, 0.167, 0.633, 0.871, 0.636, 0.315, 0.24};
static const double c2_viol[] = {0.81, 0.762, 0.0, 0.0, 0.0, 0.924, 0.106, 0.0, 0.359, 0.0, 0.199, 0.0, 0.841, 0.434, 0.0, 0.0, 0.23500000000000001, 0.763, 0.0, 0.0, 0.0, 0.307, 0.0, 0.0, 0.0, 0.0, 0.0, 0.456, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.418};
static const size_t c2_below[] = {7, 15, 18, 30};
static const double c2_w[] = {1.0, 0.012631134006334267, 0.04795757599961612, 0.019836298668295067};
#define C2_N 40
#define C2_M 2
#define C2_GOOD 4
/* c2few: n 30, m 2, n_below 3, constrained */
static const double c2few_loss[] = {0.903, 0.765, 0.683, 0.647, 0.853, 0.437, 0.327, 0.707, 0.754, 0.924, 0.839, 0.051, 0.988, 0.206, 0.181, 0.024, 0.07, 0.644, 0.064, 0.381, 0.365, 0.016, 0.148, 0.766, 0.932, 0.136, 0.677, 0.757, 0.561, 0.069, 0.624, 0.151, 0.148, 0.839, 0.132, 0.012, 0.887, 0.447, 0.91, 0.03, 0.029, 0.452, 0.343, 0.908, 0.71, 0.737, 0.761, 0.576, 0.291, 0.51, 0.331, 0.677, 0.215, 0.039, 0.839, 0.096, 0.706, 0.206, 0.13, 0.347};
static const double c2few_viol[] = {0.826, 0.3, 0.362, 0.211, 0.0, 0.537, 0.303, 0.784, 0.762, 0.572, 0.383, 0.32, 0.954, 0.462, 0.117, 0.397, 0.732, 0.0, 0.945, 0.618, 0.092, 0.46900000000000003, 0.886, 0.902, 0.114, 0.635, 0.395, 0.067, 0.058, 0.098};
static const size_t c2few_below[] = {4, 17, 28};
static const double c2few_w[] = {1.4419577402540352e-12, 1.0, 1e-12};
#define C2FEW_N 30
#define C2FEW_M 2
#define C2FEW_GOOD 3
/* c1: n 25, m 1, n_below 3, constrained */
static const double c1_loss[] = {0.3, 0.8, 0.1, 0.2, 0.9, 0.1, 0.1, 0.3, 1.0, 0.4, 0.4, 0.7, 0.3, 0.9, 0.2, 0.9, 0.9, 0.2, 0.1, 0.4, 0.0, 0.7, 1.0, 0.2, 0.7};
static const double c1_viol[] = {0.0, 0.0, 0.5, 0.0, 0.0, 0.5, 0.0, 0.5, 0.0, 0.5, 0.5, 0.5, 0.0, 0.5, 0.0, 0.0, 0.5, 0.0, 0.5, 0.0, 0.0, 0.5, 0.0, 0.0, 0.0};
static const size_t c1_below[] = {3, 6, 20};
#define C1_N 25
#define C1_M 1
#define C1_GOOD 3

static void expect_split(const char *name, const double *loss, size_t m, const double *viol, size_t n, size_t n_good,
                         const size_t *below, const double *w)
{
    unsigned char good[64];
    double weight[64];
    cr_assert_leq(n, 64);
    for (size_t i = 0; i < n; i++)
        weight[i] = NAN;
    bd_tpe_split(loss, m, viol, n, n_good, good, m > 1 ? weight : NULL);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (!good[i])
            continue;
        cr_expect(k < n_good && below[k] == i, "%s: row %zu is below; Optuna's %zu-th below is %zu", name, i, k,
                  k < n_good ? below[k] : (size_t)-1);
        if (w && k < n_good)
            cr_expect(fabs(weight[i] - w[k]) <= 1e-9, "%s: row %zu weighs %.17g, Optuna %.17g", name, i, weight[i], w[k]);
        k++;
    }
    cr_expect_eq(k, n_good, "%s: %zu below, want %zu", name, k, n_good);
}

Test(tpe_split, two_objectives_rank_then_hypervolume_selection_as_optuna)
{
    expect_split("s2", s2_loss, S2_M, NULL, S2_N, S2_GOOD, s2_below, s2_w);
}

Test(tpe_split, whole_ranks_then_selection_with_a_duplicate_as_optuna)
{
    expect_split("s2b", s2b_loss, S2B_M, NULL, S2B_N, S2B_GOOD, s2b_below, s2b_w);
}

Test(tpe_split, three_objectives_as_optuna)
{
    expect_split("s3", s3_loss, S3_M, NULL, S3_N, S3_GOOD, s3_below, s3_w);
}

Test(tpe_split, constrained_feasible_first_then_by_losses_as_optuna)
{
    expect_split("c2", c2_loss, C2_M, c2_viol, C2_N, C2_GOOD, c2_below, c2_w);
}

Test(tpe_split, constrained_few_feasible_take_the_least_violating_as_optuna)
{
    expect_split("c2few", c2few_loss, C2FEW_M, c2few_viol, C2FEW_N, C2FEW_GOOD, c2few_below, c2few_w);
}

Test(tpe_split, one_objective_constrained_as_optuna)
{
    expect_split("c1", c1_loss, C1_M, c1_viol, C1_N, C1_GOOD, c1_below, NULL);
}

Test(tpe_split, diverged_runs_rank_last_and_weigh_nothing)
{
    /* by hand: (1,2) and (2,1) are rank 0; (3,3) rank 1; three diverged
     * runs (+inf, +inf) rank 2, taken in arrival order once the others are in */
    const double loss[] = {INFINITY, INFINITY, 1, 2, INFINITY, INFINITY, 3, 3, 2, 1, INFINITY, INFINITY};
    unsigned char good[6];
    double w[6];
    bd_tpe_split(loss, 2, NULL, 6, 4, good, w);
    const unsigned char want[6] = {1, 1, 0, 1, 1, 0};
    for (int i = 0; i < 6; i++)
        cr_expect_eq(good[i], want[i], "row %d", i);
    cr_expect(w[0] == 1e-12 && isfinite(w[1]) && w[1] > 0.5, "diverged weigh EPS, finite ones by volume: %g %g", w[0],
              w[1]);
}
