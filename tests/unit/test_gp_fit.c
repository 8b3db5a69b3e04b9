/* test_gp_fit.c: hyperparameter fits (server/model/gp_fit.c): the analytic
 * gradient of the objective (log marginal likelihood + log priors) against
 * central finite differences for both kernels, the objective against the
 * model's own log marginal likelihood, recovery of known lengthscales from
 * samples of a GP, fixed parameters staying fixed, the noise floor, and
 * determinism given the rng. */
#include <criterion/criterion.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_linalg.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "server/model/gp.h"

static void setup(void)
{
    gsl_set_error_handler_off();
}

TestSuite(gp_fit, .init = setup);

static bd_gp *make_gp(bd_kernel_type type, size_t d, const unsigned *choices, int standardize)
{
    bd_kernel *k;
    bd_gp *gp;
    cr_assert_eq(bd_kernel_new(type, d, choices, &k, NULL), 0);
    cr_assert_eq(bd_gp_new(k, 0.01, standardize, &gp, NULL), 0);
    bd_kernel_free(k);
    return gp;
}

static void check_gradient(const bd_gp *gp, const double *theta, const bd_gp_prior *priors)
{
    size_t np = bd_gp_n_params(gp);
    double g[16], t[16], v, up, down, h = 1e-5;
    cr_assert_eq(bd_gp_fit_objective(gp, theta, priors, &v, g, NULL), 0);
    for (size_t p = 0; p < np; p++) {
        double fd;
        memcpy(t, theta, np * sizeof *t);
        t[p] = theta[p] + h;
        cr_assert_eq(bd_gp_fit_objective(gp, t, priors, &up, NULL, NULL), 0);
        t[p] = theta[p] - h;
        cr_assert_eq(bd_gp_fit_objective(gp, t, priors, &down, NULL, NULL), 0);
        fd = (up - down) / (2 * h);
        if (priors && priors[p].fixed)
            cr_assert_eq(g[p], 0.0);
        else
            cr_assert(fabs(fd - g[p]) <= 1e-5 * (1 + fabs(fd)),
                      "parameter %zu: analytic %.10g, finite difference %.10g", p, g[p], fd);
    }
}

Test(gp_fit, matern_gradient_matches_finite_differences)
{
    unsigned choices[3] = {0, 3, 0};
    double X[3 * 30], y[30], theta[5];
    bd_gp *gp = make_gp(BD_KERNEL_MATERN52, 3, choices, BD_GP_STD_SCALE);
    bd_rng rng;
    bd_rng_seed(&rng, 21, 0);
    for (int i = 0; i < 30; i++) {
        for (int j = 0; j < 3; j++)
            X[3 * i + j] = bd_rng_uniform(&rng);
        y[i] = sin(5 * X[3 * i]) + (X[3 * i + 1] > 2.0 / 3) + 0.1 * bd_rng_normal(&rng);
    }
    cr_assert_eq(bd_gp_set_data(gp, 30, X, y, NULL, NULL), 0);
    for (int rep = 0; rep < 5; rep++) {
        for (int p = 0; p < 4; p++)
            theta[p] = -1.5 + 2 * bd_rng_uniform(&rng);
        theta[4] = -5 + 3 * bd_rng_uniform(&rng);
        check_gradient(gp, theta, NULL);
    }
    bd_gp_free(gp);
}

Test(gp_fit, freeze_thaw_gradient_matches_finite_differences)
{
    double X[8], y[8], theta[4] = {log(0.7), log(2.0), log(0.5), log(1e-3)};
    bd_gp_prior pri[4] = {{0, 1.5, 0}, {0, 1.5, 0}, {0, 0, 0}, {log(1e-3), 2, 0}}; /* everything free here */
    bd_gp *gp = make_gp(BD_KERNEL_FREEZE_THAW, 1, NULL, BD_GP_STD_CENTER);
    for (int i = 0; i < 8; i++) {
        X[i] = i + 1;
        y[i] = 0.3 + 0.4 / (1 + i) + 0.01 * cos(i);
    }
    cr_assert_eq(bd_gp_set_data(gp, 8, X, y, NULL, NULL), 0);
    check_gradient(gp, theta, pri);
    pri[2].fixed = pri[3].fixed = 1; /* BO-BOS: fixed gradients are 0 */
    check_gradient(gp, theta, pri);
    bd_gp_free(gp);
}

Test(gp_fit, objective_is_log_marginal_plus_priors)
{
    double X[10], y[10], theta[3] = {log(0.3), log(1.2), log(0.02)}, v;
    bd_gp_prior pri[3] = {{log(0.5), 1.5, 0}, {0, 1.5, 0}, {log(1e-2), 3, 0}};
    double logprior = 0;
    bd_gp *gp = make_gp(BD_KERNEL_MATERN52, 1, NULL, BD_GP_STD_SCALE);
    for (int i = 0; i < 10; i++) {
        X[i] = i / 9.0;
        y[i] = X[i] * X[i];
    }
    cr_assert_eq(bd_gp_set_data(gp, 10, X, y, NULL, NULL), 0);
    cr_assert_eq(bd_gp_set_theta(gp, theta, NULL), 0);
    cr_assert_eq(bd_gp_fit_objective(gp, theta, pri, &v, NULL, NULL), 0);
    for (int p = 0; p < 3; p++)
        logprior -= 0.5 * pow((theta[p] - pri[p].mean) / pri[p].sd, 2);
    cr_assert_float_eq(v, bd_gp_log_marginal(gp) + logprior, 1e-10);
    bd_gp_free(gp);
}

/* Draws y ~ N(0, K + sn2 I) at the rows of X under the kernel theta. */
static void sample_gp(const bd_kernel *k, size_t n, const double *X, double sn2, bd_rng *rng, double *y)
{
    gsl_matrix *A = gsl_matrix_alloc(n, n);
    size_t d = bd_kernel_dim(k);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            gsl_matrix_set(A, i, j, bd_kernel_eval(k, X + i * d, X + j * d) + (i == j ? sn2 + 1e-10 : 0));
    cr_assert_eq(gsl_linalg_cholesky_decomp1(A), 0);
    {
        double *z = malloc(n * sizeof *z);
        for (size_t i = 0; i < n; i++)
            z[i] = bd_rng_normal(rng);
        for (size_t i = 0; i < n; i++) {
            y[i] = 0;
            for (size_t j = 0; j <= i; j++)
                y[i] += gsl_matrix_get(A, i, j) * z[j];
        }
        free(z);
    }
    gsl_matrix_free(A);
}

/* Samples of a GP with lengthscales (0.15, 2.0) on 150 points in 2-D: the fit
 * finds a short first lengthscale and a long second one, from the default
 * start (all lengthscales 1) and priors. Three seeds. */
Test(gp_fit, recovers_known_lengthscales)
{
    for (uint64_t seed = 1; seed <= 3; seed++) {
        double theta_true[3] = {log(0.15), log(2.0), 0}, X[2 * 150], y[150], best;
        bd_kernel *k;
        bd_gp *gp = make_gp(BD_KERNEL_MATERN52, 2, NULL, BD_GP_STD_SCALE);
        bd_gp_fit_options o;
        const double *th;
        bd_rng rng;
        bd_rng_seed(&rng, seed, 100);
        for (int i = 0; i < 2 * 150; i++)
            X[i] = bd_rng_uniform(&rng);
        cr_assert_eq(bd_kernel_new(BD_KERNEL_MATERN52, 2, NULL, &k, NULL), 0);
        cr_assert_eq(bd_kernel_set_theta(k, theta_true, NULL), 0);
        sample_gp(k, 150, X, 1e-3, &rng, y);
        bd_kernel_free(k);
        cr_assert_eq(bd_gp_set_data(gp, 150, X, y, NULL, NULL), 0);
        bd_gp_fit_options_default(&o);
        cr_assert_eq(bd_gp_fit(gp, &o, &rng, &best, NULL), 0);
        th = bd_gp_theta(gp);
        cr_assert(exp(th[0]) > 0.15 / 1.5 && exp(th[0]) < 0.15 * 1.5, "seed %llu: l1 = %g, want 0.15",
                  (unsigned long long)seed, exp(th[0]));
        cr_assert(exp(th[1]) > 0.8, "seed %llu: l2 = %g, want long (2.0)", (unsigned long long)seed, exp(th[1]));
        cr_assert(exp(th[3]) < 0.05, "seed %llu: sn2 = %g, want small", (unsigned long long)seed, exp(th[3]));
        cr_assert(isfinite(best));
        bd_gp_free(gp);
    }
}

Test(gp_fit, improves_the_objective_and_is_deterministic)
{
    double X[2 * 40], y[40], before, after, a[4], b[4];
    bd_gp *gp1 = make_gp(BD_KERNEL_MATERN52, 2, NULL, BD_GP_STD_SCALE);
    bd_gp *gp2 = make_gp(BD_KERNEL_MATERN52, 2, NULL, BD_GP_STD_SCALE);
    bd_rng rng, r1, r2;
    bd_rng_seed(&rng, 31, 0);
    for (int i = 0; i < 40; i++) {
        X[2 * i] = bd_rng_uniform(&rng);
        X[2 * i + 1] = bd_rng_uniform(&rng);
        y[i] = exp(-4 * X[2 * i]) + 0.2 * X[2 * i + 1] + 0.02 * bd_rng_normal(&rng);
    }
    cr_assert_eq(bd_gp_set_data(gp1, 40, X, y, NULL, NULL), 0);
    cr_assert_eq(bd_gp_set_data(gp2, 40, X, y, NULL, NULL), 0);
    cr_assert_eq(bd_gp_fit_objective(gp1, bd_gp_theta(gp1), NULL, &before, NULL, NULL), 0);
    bd_rng_seed(&r1, 5, 5);
    bd_rng_seed(&r2, 5, 5);
    cr_assert_eq(bd_gp_fit(gp1, NULL, &r1, &after, NULL), 0);
    cr_assert_eq(bd_gp_fit(gp2, NULL, &r2, NULL, NULL), 0);
    cr_assert_gt(after, before);
    memcpy(a, bd_gp_theta(gp1), sizeof a);
    memcpy(b, bd_gp_theta(gp2), sizeof b);
    cr_assert(memcmp(a, b, sizeof a) == 0);
    /* a warm start from the optimum with no restarts stays there */
    {
        bd_gp_fit_options o;
        double again;
        bd_gp_fit_options_default(&o);
        o.restarts = 0;
        cr_assert_eq(bd_gp_fit(gp1, &o, &r1, &again, NULL), 0);
        cr_assert(again >= after - 1e-6, "warm start lost ground: %g < %g", again, after);
    }
    bd_gp_free(gp1);
    bd_gp_free(gp2);
}

Test(gp_fit, respects_the_noise_floor)
{
    double X[20], y[20];
    bd_gp *gp = make_gp(BD_KERNEL_MATERN52, 1, NULL, BD_GP_STD_SCALE);
    bd_gp_fit_options o;
    bd_rng rng;
    for (int i = 0; i < 20; i++) { /* noiseless: the likelihood wants sn2 -> 0 */
        X[i] = i / 19.0;
        y[i] = sin(3 * X[i]);
    }
    cr_assert_eq(bd_gp_set_data(gp, 20, X, y, NULL, NULL), 0);
    bd_gp_fit_options_default(&o);
    o.noise_floor = 1e-4;
    bd_rng_seed(&rng, 3, 3);
    cr_assert_eq(bd_gp_fit(gp, &o, &rng, NULL, NULL), 0);
    cr_assert_geq(exp(bd_gp_theta(gp)[2]), 1e-4 * (1 - 1e-9));
    cr_assert_lt(exp(bd_gp_theta(gp)[2]), 1e-3);
    bd_gp_free(gp);
}

/* BO-BOS: alpha and beta fitted, s2 and sn2 = 1e-3 held fixed. */
Test(gp_fit, freeze_thaw_keeps_fixed_parameters)
{
    double X[8], y[8], theta[4] = {0, 0, 0, log(1e-3)};
    bd_gp *gp = make_gp(BD_KERNEL_FREEZE_THAW, 1, NULL, BD_GP_STD_NONE);
    bd_gp_prior pri[4];
    bd_gp_fit_options o;
    double before, after;
    bd_rng rng;
    for (int i = 0; i < 8; i++) {
        X[i] = i + 1;
        y[i] = 0.6 * pow(0.5 / (0.5 + X[i]), 0.8);
    }
    cr_assert_eq(bd_gp_set_theta(gp, theta, NULL), 0);
    cr_assert_eq(bd_gp_set_data(gp, 8, X, y, NULL, NULL), 0);
    bd_gp_fit_default_priors(gp, pri);
    cr_assert(pri[2].fixed && pri[3].fixed && !pri[0].fixed && !pri[1].fixed);
    bd_gp_fit_options_default(&o);
    o.priors = pri;
    cr_assert_eq(bd_gp_fit_objective(gp, theta, pri, &before, NULL, NULL), 0);
    bd_rng_seed(&rng, 4, 4);
    cr_assert_eq(bd_gp_fit(gp, &o, &rng, &after, NULL), 0);
    cr_assert_gt(after, before);
    cr_assert_eq(bd_gp_theta(gp)[2], 0.0);
    cr_assert_eq(bd_gp_theta(gp)[3], log(1e-3));
    bd_gp_free(gp);
}

Test(gp_fit, rejects_a_negative_noise_floor)
{
    bd_gp *gp = make_gp(BD_KERNEL_MATERN52, 1, NULL, BD_GP_STD_SCALE);
    bd_gp_fit_options o;
    bd_rng rng;
    bd_err err;
    bd_gp_fit_options_default(&o);
    o.noise_floor = -1;
    bd_rng_seed(&rng, 1, 1);
    cr_assert_eq(bd_gp_fit(gp, &o, &rng, NULL, &err), BD_EINVAL);
    bd_gp_free(gp);
}
