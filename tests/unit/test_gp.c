/* test_gp.c: the GP model (server/model/gp.c): a 1-D toy whose posterior
 * was worked out by hand (docs/ALGORITHMS.md section 7 has the numbers), the
 * log marginal likelihood of that section against a determinant computed
 * another way (LU), the growing-jitter retry
 * rescuing a Cholesky that fails, rank-one extension and removal agreeing
 * with a factorisation from scratch, the prior with no data, and joint
 * posterior sample paths (moments, determinism). */
#include <criterion/criterion.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_permutation.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "server/model/gp.h"

static void setup(void)
{
    gsl_set_error_handler_off();
}

TestSuite(gp, .init = setup);

static bd_gp *make_gp(bd_kernel_type type, size_t d, const unsigned *choices, const double *theta, int standardize)
{
    bd_kernel *k;
    bd_gp *gp;
    cr_assert_eq(bd_kernel_new(type, d, choices, &k, NULL), 0);
    cr_assert_eq(bd_gp_new(k, 0.01, standardize, &gp, NULL), 0);
    bd_kernel_free(k);
    if (theta)
        cr_assert_eq(bd_gp_set_theta(gp, theta, NULL), 0);
    return gp;
}

/* Unit lengthscale and variance, sn2 = 0.01, X = {0, 1}, y = {1, 2}, x* = 1/4.
 * a = k(0, 1) = m52(1) = 0.5239941088; K + sn2 I = [[1.01, a], [a, 1.01]],
 * det = 1.01^2 - a^2 = 0.7455301739; alpha = K^-1 y = (-0.0509546347,
 * 2.0066335925); k* = (m52(0.25), m52(0.75)) = (0.9509599217, 0.6756478000);
 * mu = k*^T alpha = 1.3073217568; var = 1 - k*^T K^-1 k* = 0.0596143330;
 * LML = -1/2 y^T alpha - 1/2 log det - log 2pi = -3.6722035061. */
Test(gp, one_d_toy_by_hand)
{
    double theta[3] = {0, 0, log(0.01)}, X[2] = {0, 1}, y[2] = {1, 2}, xs = 0.25, mu, var;
    bd_gp *gp = make_gp(BD_KERNEL_MATERN52, 1, NULL, theta, BD_GP_STD_NONE);
    cr_assert_eq(bd_gp_set_data(gp, 2, X, y, NULL, NULL), 0);
    cr_assert_eq(bd_gp_predict(gp, 1, &xs, &mu, &var, 0, NULL), 0);
    cr_assert_float_eq(mu, 1.3073217568, 1e-9);
    cr_assert_float_eq(var, 0.0596143330, 1e-9);
    cr_assert_eq(bd_gp_predict(gp, 1, &xs, &mu, &var, 1, NULL), 0);
    cr_assert_float_eq(var, 0.0696143330, 1e-9);
    cr_assert_float_eq(bd_gp_log_marginal(gp), -3.6722035061, 1e-9);
    cr_assert_eq(bd_gp_jitter(gp), 0.0);
    bd_gp_free(gp);
}

/* The same toy with outputs centred and scaled: mean 1.5, sd 1/sqrt2, so
 * mu = 1.5 + sd k*^T K^-1 ys = 1.2167605098 and var = sd^2 0.0596143330. */
Test(gp, one_d_toy_standardised)
{
    double theta[3] = {0, 0, log(0.01)}, X[2] = {0, 1}, y[2] = {1, 2}, xs = 0.25, mu, var, mean, scale;
    bd_gp *gp = make_gp(BD_KERNEL_MATERN52, 1, NULL, theta, BD_GP_STD_SCALE);
    cr_assert_eq(bd_gp_set_data(gp, 2, X, y, NULL, NULL), 0);
    bd_gp_standardization(gp, &mean, &scale);
    cr_assert_float_eq(mean, 1.5, 1e-15);
    cr_assert_float_eq(scale, sqrt(0.5), 1e-15);
    cr_assert_eq(bd_gp_predict(gp, 1, &xs, &mu, &var, 0, NULL), 0);
    cr_assert_float_eq(mu, 1.2167605098, 1e-9);
    cr_assert_float_eq(var, 0.0298071665, 1e-9);
    bd_gp_free(gp);
}

Test(gp, no_data_predicts_the_prior)
{
    double theta[3] = {0, log(2.0), log(0.01)}, x = 0.3, mu, var, path[2];
    bd_gp *gp = make_gp(BD_KERNEL_MATERN52, 1, NULL, theta, BD_GP_STD_SCALE);
    bd_rng rng;
    cr_assert_eq(bd_gp_predict(gp, 1, &x, &mu, &var, 0, NULL), 0);
    cr_assert_eq(mu, 0.0);
    cr_assert_float_eq(var, 2.0, 1e-14);
    cr_assert_eq(bd_gp_predict(gp, 1, &x, &mu, NULL, 0, NULL), 0);
    bd_rng_seed(&rng, 1, 1);
    cr_assert_eq(bd_gp_sample_paths(gp, 1, &x, 2, 0, &rng, path, NULL), 0);
    cr_assert_float_eq(bd_gp_log_marginal(gp), 0.0, 1e-15);
    bd_gp_free(gp);
}

/* Two copies of one point with a noise variance (e^-40) that vanishes next
 * to 1: K + sn2 I is singular in floating point, decomp1 refuses it, and the
 * retry succeeds with a small jitter. The prediction there is then the mean
 * of the two outputs. */
Test(gp, jitter_retry_rescues_a_failing_cholesky)
{
    double theta[2] = {0, 0}, X[3] = {0.4, 0.4, 0.9}, y[3] = {1, 3, 0}, mu, var;
    bd_kernel *k;
    bd_gp *gp;
    gsl_matrix *A = gsl_matrix_alloc(2, 2);
    /* the plain factorisation fails */
    gsl_matrix_set_all(A, 1.0 + exp(-40.0));
    gsl_matrix_set(A, 0, 1, 1.0);
    gsl_matrix_set(A, 1, 0, 1.0);
    cr_assert_eq(gsl_linalg_cholesky_decomp1(A), GSL_EDOM);
    gsl_matrix_free(A);

    cr_assert_eq(bd_kernel_new(BD_KERNEL_MATERN52, 1, NULL, &k, NULL), 0);
    cr_assert_eq(bd_kernel_set_theta(k, theta, NULL), 0);
    cr_assert_eq(bd_gp_new(k, exp(-40.0), BD_GP_STD_NONE, &gp, NULL), 0);
    cr_assert_eq(bd_gp_set_data(gp, 2, X, y, NULL, NULL), 0);
    cr_assert_gt(bd_gp_jitter(gp), 0.0);
    cr_assert_leq(bd_gp_jitter(gp), 1e-6);
    cr_assert_eq(bd_gp_predict(gp, 1, X, &mu, &var, 0, NULL), 0);
    cr_assert_float_eq(mu, 2.0, 1e-3);
    cr_assert(isfinite(var) && var >= 0);
    /* the extension uses the same jitter and stays consistent */
    cr_assert_eq(bd_gp_add_point(gp, X + 2, y[2], 2, NULL), 0);
    cr_assert_eq(bd_gp_size(gp), 3);
    cr_assert_eq(bd_gp_predict(gp, 1, X + 2, &mu, &var, 0, NULL), 0);
    cr_assert_float_eq(mu, 0.0, 1e-3);
    /* From one point without jitter, adding a copy makes the new pivot
     * exactly 0: the whole factor is rebuilt, with jitter. */
    cr_assert_eq(bd_gp_set_data(gp, 1, X, y, NULL, NULL), 0);
    cr_assert_eq(bd_gp_jitter(gp), 0.0);
    cr_assert_eq(bd_gp_add_point(gp, X, y[1], 1, NULL), 0);
    cr_assert_eq(bd_gp_size(gp), 2);
    cr_assert_gt(bd_gp_jitter(gp), 0.0);
    cr_assert_eq(bd_gp_predict(gp, 1, X, &mu, &var, 0, NULL), 0);
    cr_assert_float_eq(mu, 2.0, 1e-3);
    bd_kernel_free(k);
    bd_gp_free(gp);
}

/* Random data in 3-D with a categorical coordinate. */
static void random_data(bd_rng *rng, size_t n, double *X, double *y)
{
    for (size_t i = 0; i < n; i++) {
        for (int j = 0; j < 3; j++)
            X[3 * i + j] = bd_rng_uniform(rng);
        y[i] = sin(6 * X[3 * i]) + X[3 * i + 1] * X[3 * i + 1] + (X[3 * i + 2] < 0.5) + 0.05 * bd_rng_normal(rng);
    }
}

static void assert_same_predictions(const bd_gp *a, const bd_gp *b, bd_rng *rng)
{
    double Q[3 * 40], mua[40], vara[40], mub[40], varb[40];
    for (int i = 0; i < 3 * 40; i++)
        Q[i] = bd_rng_uniform(rng);
    cr_assert_eq(bd_gp_predict(a, 40, Q, mua, vara, 0, NULL), 0);
    cr_assert_eq(bd_gp_predict(b, 40, Q, mub, varb, 0, NULL), 0);
    for (int i = 0; i < 40; i++) {
        cr_assert_float_eq(mua[i], mub[i], 1e-9, "mean %d: %.12g vs %.12g", i, mua[i], mub[i]);
        cr_assert_float_eq(vara[i], varb[i], 1e-9, "variance %d: %.12g vs %.12g", i, vara[i], varb[i]);
    }
    cr_assert_float_eq(bd_gp_log_marginal(a), bd_gp_log_marginal(b), 1e-8);
}

Test(gp, rank_one_extension_matches_full_factorisation)
{
    unsigned choices[3] = {0, 0, 2};
    double theta[5] = {log(0.3), log(0.5), log(0.7), log(1.3), log(1e-3)};
    double X[3 * 70], y[70];
    bd_gp *inc = make_gp(BD_KERNEL_MATERN52, 3, choices, theta, BD_GP_STD_SCALE);
    bd_gp *full = make_gp(BD_KERNEL_MATERN52, 3, choices, theta, BD_GP_STD_SCALE);
    bd_rng rng;
    bd_rng_seed(&rng, 11, 0);
    random_data(&rng, 70, X, y);
    cr_assert_eq(bd_gp_set_data(inc, 10, X, y, NULL, NULL), 0);
    for (size_t i = 10; i < 70; i++) /* past 16 and 32 points the arrays grow */
        cr_assert_eq(bd_gp_add_point(inc, X + 3 * i, y[i], i, NULL), 0);
    cr_assert_eq(bd_gp_set_data(full, 70, X, y, NULL, NULL), 0);
    cr_assert_eq(bd_gp_size(inc), 70);
    cr_assert_eq(bd_gp_id(inc, 69), 69);
    assert_same_predictions(inc, full, &rng);
    bd_gp_free(inc);
    bd_gp_free(full);
}

Test(gp, rank_one_removal_matches_full_factorisation)
{
    double theta[5] = {log(0.3), log(0.5), log(0.7), log(1.3), log(1e-3)};
    double X[3 * 40], y[40], Xk[3 * 40], yk[40];
    size_t ids[40], nk = 0;
    bd_gp *inc = make_gp(BD_KERNEL_MATERN52, 3, NULL, theta, BD_GP_STD_CENTER);
    bd_gp *full = make_gp(BD_KERNEL_MATERN52, 3, NULL, theta, BD_GP_STD_CENTER);
    bd_rng rng;
    bd_rng_seed(&rng, 12, 0);
    random_data(&rng, 40, X, y);
    cr_assert_eq(bd_gp_set_data(inc, 40, X, y, NULL, NULL), 0);
    /* remove the first, the last and some in between (ids 0, 39, 7, 20, 21) */
    cr_assert_eq(bd_gp_remove_point(inc, 0, NULL), 0);
    cr_assert_eq(bd_gp_remove_point(inc, bd_gp_size(inc) - 1, NULL), 0);
    cr_assert_eq(bd_gp_remove_point(inc, (size_t)bd_gp_find(inc, 7), NULL), 0);
    cr_assert_eq(bd_gp_remove_point(inc, (size_t)bd_gp_find(inc, 20), NULL), 0);
    cr_assert_eq(bd_gp_remove_point(inc, (size_t)bd_gp_find(inc, 21), NULL), 0);
    cr_assert_eq(bd_gp_find(inc, 20), -1);
    cr_assert_eq(bd_gp_remove_point(inc, 99, NULL), BD_EINVAL);
    for (size_t i = 0; i < 40; i++) {
        if (i == 0 || i == 39 || i == 7 || i == 20 || i == 21)
            continue;
        memcpy(Xk + 3 * nk, X + 3 * i, 3 * sizeof *X);
        yk[nk] = y[i];
        ids[nk++] = i;
    }
    cr_assert_eq(bd_gp_set_data(full, nk, Xk, yk, ids, NULL), 0);
    cr_assert_eq(bd_gp_size(inc), nk);
    for (size_t i = 0; i < nk; i++)
        cr_assert_eq(bd_gp_id(inc, i), ids[i]);
    assert_same_predictions(inc, full, &rng);
    bd_gp_free(inc);
    bd_gp_free(full);
}

/* LML = -1/2 y^T (K + sn2 I)^-1 y - 1/2 log det(K + sn2 I) - n/2 log 2pi,
 * with the determinant and the solve from an LU decomposition instead. */
Test(gp, log_marginal_matches_lu)
{
    double theta[4] = {log(0.4), log(0.6), log(0.8), log(0.05)};
    double X[2 * 25], y[25], ys[25], mean = 0, sd = 0, lml;
    size_t n = 25;
    bd_gp *gp;
    bd_kernel *k;
    gsl_matrix *A = gsl_matrix_alloc(n, n);
    gsl_vector *b = gsl_vector_alloc(n), *x = gsl_vector_alloc(n);
    gsl_permutation *perm = gsl_permutation_alloc(n);
    int sign;
    bd_rng rng;
    bd_rng_seed(&rng, 13, 0);
    for (size_t i = 0; i < n; i++) {
        X[2 * i] = bd_rng_uniform(&rng);
        X[2 * i + 1] = bd_rng_uniform(&rng);
        y[i] = 3 + cos(4 * X[2 * i]) * X[2 * i + 1] + 0.1 * bd_rng_normal(&rng);
        mean += y[i] / (double)n;
    }
    for (size_t i = 0; i < n; i++)
        sd += (y[i] - mean) * (y[i] - mean) / (double)(n - 1);
    sd = sqrt(sd);
    gp = make_gp(BD_KERNEL_MATERN52, 2, NULL, theta, BD_GP_STD_SCALE);
    cr_assert_eq(bd_gp_set_data(gp, n, X, y, NULL, NULL), 0);
    cr_assert_eq(bd_kernel_new(BD_KERNEL_MATERN52, 2, NULL, &k, NULL), 0);
    cr_assert_eq(bd_kernel_set_theta(k, theta, NULL), 0);
    for (size_t i = 0; i < n; i++) {
        ys[i] = (y[i] - mean) / sd;
        gsl_vector_set(b, i, ys[i]);
        for (size_t j = 0; j < n; j++)
            gsl_matrix_set(A, i, j, bd_kernel_eval(k, X + 2 * i, X + 2 * j) + (i == j ? 0.05 : 0));
    }
    cr_assert_eq(gsl_linalg_LU_decomp(A, perm, &sign), 0);
    cr_assert_eq(gsl_linalg_LU_solve(A, perm, b, x), 0);
    lml = -0.5 * gsl_linalg_LU_lndet(A) - 0.5 * (double)n * log(2 * M_PI);
    for (size_t i = 0; i < n; i++)
        lml -= 0.5 * ys[i] * gsl_vector_get(x, i);
    cr_assert_float_eq(bd_gp_log_marginal(gp), lml, 1e-9);
    gsl_matrix_free(A);
    gsl_vector_free(b);
    gsl_vector_free(x);
    gsl_permutation_free(perm);
    bd_kernel_free(k);
    bd_gp_free(gp);
}

/* Sample paths: their means and variances approach the posterior's; the
 * same rng seed gives the same paths. Tolerances are several standard
 * errors for 20000 paths. */
Test(gp, sample_paths_have_the_posterior_moments)
{
    double theta[3] = {log(0.3), 0, log(0.01)}, X[4] = {0.1, 0.35, 0.6, 0.9}, y[4] = {1, 0, 0.5, 2};
    double Q[3] = {0.2, 0.5, 1.2}, mu[3], var[3], *paths, *again, m[3] = {0};
    size_t P = 20000;
    bd_gp *gp = make_gp(BD_KERNEL_MATERN52, 1, NULL, theta, BD_GP_STD_NONE);
    bd_rng rng;
    cr_assert_eq(bd_gp_set_data(gp, 4, X, y, NULL, NULL), 0);
    cr_assert_eq(bd_gp_predict(gp, 3, Q, mu, var, 0, NULL), 0);
    paths = malloc(P * 3 * sizeof *paths);
    again = malloc(P * 3 * sizeof *again);
    bd_rng_seed(&rng, 99, 3);
    cr_assert_eq(bd_gp_sample_paths(gp, 3, Q, P, 0, &rng, paths, NULL), 0);
    bd_rng_seed(&rng, 99, 3);
    cr_assert_eq(bd_gp_sample_paths(gp, 3, Q, P, 0, &rng, again, NULL), 0);
    cr_assert(memcmp(paths, again, P * 3 * sizeof *paths) == 0);
    for (size_t p = 0; p < P; p++)
        for (int a = 0; a < 3; a++)
            m[a] += paths[3 * p + a] / (double)P;
    for (int a = 0; a < 3; a++) {
        double v = 0;
        for (size_t p = 0; p < P; p++)
            v += (paths[3 * p + a] - m[a]) * (paths[3 * p + a] - m[a]) / (double)(P - 1);
        cr_assert(fabs(m[a] - mu[a]) < 5 * sqrt(var[a] / (double)P) + 1e-12, "mean %d: %g vs %g", a, m[a], mu[a]);
        cr_assert(fabs(v - var[a]) < 0.05 * var[a] + 1e-12, "variance %d: %g vs %g", a, v, var[a]);
    }
    /* with noise, every marginal variance grows by sn2 */
    bd_rng_seed(&rng, 5, 5);
    cr_assert_eq(bd_gp_sample_paths(gp, 3, Q, P, 1, &rng, paths, NULL), 0);
    {
        double mm = 0, v = 0;
        for (size_t p = 0; p < P; p++)
            mm += paths[3 * p + 1] / (double)P;
        for (size_t p = 0; p < P; p++)
            v += (paths[3 * p + 1] - mm) * (paths[3 * p + 1] - mm) / (double)(P - 1);
        cr_assert(fabs(v - (var[1] + 0.01)) < 0.05 * (var[1] + 0.01), "noisy variance %g vs %g", v, var[1] + 0.01);
    }
    free(paths);
    free(again);
    bd_gp_free(gp);
}

/* The joint covariance of two query points: the paths' sample covariance
 * against cov(f(a), f(b)) = k(a, b) - k_a^T (K + sn2 I)^-1 k_b, solved
 * with LU. */
Test(gp, sample_paths_have_the_posterior_covariance)
{
    double theta[3] = {log(0.3), 0, log(0.01)}, X[3] = {0.1, 0.5, 0.9}, y[3] = {1, 0, 2};
    double Q[2] = {0.3, 0.4}, *paths, m0 = 0, m1 = 0, c = 0, exact;
    size_t P = 40000;
    bd_gp *gp = make_gp(BD_KERNEL_MATERN52, 1, NULL, theta, BD_GP_STD_NONE);
    bd_kernel *k;
    gsl_matrix *A = gsl_matrix_alloc(3, 3);
    gsl_vector *ka = gsl_vector_alloc(3), *kb = gsl_vector_alloc(3), *sol = gsl_vector_alloc(3);
    gsl_permutation *perm = gsl_permutation_alloc(3);
    int sign;
    bd_rng rng;
    cr_assert_eq(bd_gp_set_data(gp, 3, X, y, NULL, NULL), 0);
    cr_assert_eq(bd_kernel_new(BD_KERNEL_MATERN52, 1, NULL, &k, NULL), 0);
    cr_assert_eq(bd_kernel_set_theta(k, theta, NULL), 0);
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++)
            gsl_matrix_set(A, i, j, bd_kernel_eval(k, X + i, X + j) + (i == j ? 0.01 : 0));
        gsl_vector_set(ka, i, bd_kernel_eval(k, X + i, Q));
        gsl_vector_set(kb, i, bd_kernel_eval(k, X + i, Q + 1));
    }
    cr_assert_eq(gsl_linalg_LU_decomp(A, perm, &sign), 0);
    cr_assert_eq(gsl_linalg_LU_solve(A, perm, kb, sol), 0);
    exact = bd_kernel_eval(k, Q, Q + 1);
    for (int i = 0; i < 3; i++)
        exact -= gsl_vector_get(ka, i) * gsl_vector_get(sol, i);
    paths = malloc(P * 2 * sizeof *paths);
    bd_rng_seed(&rng, 17, 0);
    cr_assert_eq(bd_gp_sample_paths(gp, 2, Q, P, 0, &rng, paths, NULL), 0);
    for (size_t p = 0; p < P; p++) {
        m0 += paths[2 * p] / (double)P;
        m1 += paths[2 * p + 1] / (double)P;
    }
    for (size_t p = 0; p < P; p++)
        c += (paths[2 * p] - m0) * (paths[2 * p + 1] - m1) / (double)(P - 1);
    cr_assert(fabs(c - exact) < 0.05 * fabs(exact), "covariance %g vs %g", c, exact);
    free(paths);
    gsl_matrix_free(A);
    gsl_vector_free(ka);
    gsl_vector_free(kb);
    gsl_vector_free(sol);
    gsl_permutation_free(perm);
    bd_kernel_free(k);
    bd_gp_free(gp);
}

Test(gp, rejects_bad_inputs_and_keeps_the_model)
{
    double theta[3] = {0, 0, log(0.01)}, X[2] = {0, 1}, y[2] = {1, 2}, bad_y = NAN, xs = 0.25, mu, var;
    double bad_theta[3] = {0, 0, INFINITY};
    bd_gp *gp = make_gp(BD_KERNEL_MATERN52, 1, NULL, theta, BD_GP_STD_NONE);
    bd_kernel *k;
    bd_gp *none = (bd_gp *)1;
    bd_err err;
    cr_assert_eq(bd_gp_set_data(gp, 2, X, y, NULL, NULL), 0);
    cr_assert_eq(bd_gp_add_point(gp, &xs, bad_y, 5, &err), BD_EINVAL);
    cr_assert_eq(bd_gp_set_theta(gp, bad_theta, &err), BD_EINVAL);
    cr_assert_eq(bd_gp_size(gp), 2);
    cr_assert_eq(bd_gp_predict(gp, 1, &xs, &mu, &var, 0, NULL), 0);
    cr_assert_float_eq(mu, 1.3073217568, 1e-9);
    cr_assert_eq(bd_kernel_new(BD_KERNEL_MATERN52, 1, NULL, &k, NULL), 0);
    cr_assert_eq(bd_gp_new(k, 0.0, BD_GP_STD_NONE, &none, &err), BD_EINVAL);
    cr_assert_null(none);
    cr_assert_eq(bd_gp_new(k, 0.1, 7, &none, &err), BD_EINVAL);
    bd_kernel_free(k);
    bd_gp_free(gp);
}

/* The freeze-thaw GP of BO-BOS: a decaying learning curve's errors at
 * epochs 1..8 predict epochs 9..50 with variance growing with distance. */
Test(gp, freeze_thaw_curve)
{
    double theta[4] = {log(1.0), log(1.0), 0, log(1e-3)}, X[8], y[8], Q[2] = {10, 50}, mu[2], var[2];
    bd_gp *gp = make_gp(BD_KERNEL_FREEZE_THAW, 1, NULL, theta, BD_GP_STD_NONE);
    for (int i = 0; i < 8; i++) {
        X[i] = i + 1;
        y[i] = 0.5 / (i + 1);
    }
    cr_assert_eq(bd_gp_set_data(gp, 8, X, y, NULL, NULL), 0);
    cr_assert_eq(bd_gp_predict(gp, 2, Q, mu, var, 0, NULL), 0);
    cr_assert(mu[0] > 0 && mu[0] < y[7], "error keeps decreasing: %g", mu[0]);
    cr_assert(var[0] > 0 && var[0] < 0.1);
    bd_gp_free(gp);
}
