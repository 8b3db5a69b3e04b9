/* test_kernel.c: server/model/kernel.c against the vectors of
 * docs/ALGORITHMS.md sections 6-7 (Matérn-5/2, freeze-thaw), ARD scaling, the
 * Hamming distance on categorical coordinates, and every analytic
 * derivative against central finite differences. */
#include <criterion/criterion.h>
#include <gsl/gsl_errno.h>
#include <math.h>
#include <string.h>

#include "server/model/kernel.h"
#include "server/rng.h"

static void setup(void)
{
    gsl_set_error_handler_off();
}

TestSuite(kernel, .init = setup);

Test(kernel, matern52_vectors)
{
    cr_assert_float_eq(bd_kernel_matern52_r(0.0), 1.0, 1e-15);
    cr_assert_float_eq(bd_kernel_matern52_r(0.5), 0.8286491, 5e-8);
    cr_assert_float_eq(bd_kernel_matern52_r(1.0), 0.5239941, 5e-8);
}

Test(kernel, freeze_thaw_vectors)
{
    cr_assert_float_eq(bd_kernel_freeze_thaw(1, 1, 1, 1), 1.0 / 3.0, 1e-15);
    cr_assert_float_eq(bd_kernel_freeze_thaw(1, 2, 1, 1), 0.25, 1e-15);
    cr_assert_float_eq(bd_kernel_freeze_thaw(2, 3, 2, 3), 0.140625, 1e-15);
}

Test(kernel, freeze_thaw_object_matches_formula)
{
    bd_kernel *k;
    double theta[3] = {log(2.0), log(3.0), 0.0}, n = 2, m = 3;
    cr_assert_eq(bd_kernel_new(BD_KERNEL_FREEZE_THAW, 1, NULL, &k, NULL), 0);
    cr_assert_eq(bd_kernel_n_params(k), 3);
    cr_assert_eq(bd_kernel_set_theta(k, theta, NULL), 0);
    cr_assert_float_eq(bd_kernel_eval(k, &n, &m), 0.140625, 1e-14);
    theta[2] = log(4.0); /* s2 scales it */
    cr_assert_eq(bd_kernel_set_theta(k, theta, NULL), 0);
    cr_assert_float_eq(bd_kernel_eval(k, &n, &m), 4 * 0.140625, 1e-13);
    cr_assert_float_eq(bd_kernel_diag(k, &n), 4 * bd_kernel_freeze_thaw(2, 2, 2, 3), 1e-13);
    bd_kernel_free(k);
}

Test(kernel, matern_unit_variance_and_ard)
{
    bd_kernel *k;
    double x[2] = {0, 0}, y[2] = {0.3, 0.4}, z[2] = {0.5, 0};
    double theta[3] = {log(0.6), log(0.8), log(2.0)};
    cr_assert_eq(bd_kernel_new(BD_KERNEL_MATERN52, 2, NULL, &k, NULL), 0);
    cr_assert_eq(bd_kernel_n_params(k), 3);
    /* theta = 0: unit lengthscales and variance, r = 0.5 */
    cr_assert_float_eq(bd_kernel_eval(k, x, z), 0.8286491, 5e-8);
    cr_assert_float_eq(bd_kernel_diag(k, x), 1.0, 1e-15);
    /* r^2 = 0.3^2/0.6^2 + 0.4^2/0.8^2 = 0.5 */
    cr_assert_eq(bd_kernel_set_theta(k, theta, NULL), 0);
    cr_assert_float_eq(bd_kernel_eval(k, x, y), 2.0 * bd_kernel_matern52_r(sqrt(0.5)), 1e-14);
    cr_assert_float_eq(bd_kernel_eval(k, y, x), bd_kernel_eval(k, x, y), 1e-16);
    cr_assert_float_eq(bd_kernel_diag(k, y), 2.0, 1e-14);
    bd_kernel_free(k);
}

Test(kernel, categorical_is_hamming)
{
    unsigned choices[2] = {0, 3};
    bd_kernel *k;
    double theta[3] = {0, log(0.5), 0};
    double a[2] = {0.2, 0.1}, b[2] = {0.2, 0.5}, c[2] = {0.2, 1.0 / 6.0}, e[2] = {0.2, 5.0 / 6.0};
    cr_assert_eq(bd_kernel_new(BD_KERNEL_MATERN52, 2, choices, &k, NULL), 0);
    cr_assert_eq(bd_kernel_set_theta(k, theta, NULL), 0);
    /* 0.1 and 1/6 code the same choice (0): no distance */
    cr_assert_float_eq(bd_kernel_eval(k, a, c), 1.0, 1e-15);
    /* choice 0 vs 1 and choice 0 vs 2 are equally far: 1 / l = 2 */
    cr_assert_float_eq(bd_kernel_eval(k, c, b), bd_kernel_matern52_r(2.0), 1e-15);
    cr_assert_float_eq(bd_kernel_eval(k, c, e), bd_kernel_matern52_r(2.0), 1e-15);
    cr_assert_eq(bd_kernel_choices(k)[1], 3);
    bd_kernel_free(k);
}

Test(kernel, rejects_bad_shapes_and_parameters)
{
    unsigned cat[1] = {2};
    bd_kernel *k = NULL;
    bd_err err;
    double bad[3] = {0, INFINITY, 0}, huge[3] = {0, -400, 0};
    cr_assert_eq(bd_kernel_new(BD_KERNEL_FREEZE_THAW, 2, NULL, &k, &err), BD_EINVAL);
    cr_assert_null(k);
    cr_assert_eq(bd_kernel_new(BD_KERNEL_FREEZE_THAW, 1, cat, &k, &err), BD_EINVAL);
    cr_assert_eq(bd_kernel_new(BD_KERNEL_MATERN52, 0, NULL, &k, &err), BD_EINVAL);
    cr_assert_eq(bd_kernel_new(BD_KERNEL_MATERN52, 2, NULL, &k, NULL), 0);
    cr_assert_eq(bd_kernel_set_theta(k, bad, &err), BD_EINVAL);
    cr_assert_eq(bd_kernel_set_theta(k, huge, &err), BD_EINVAL); /* 1/l^2 overflows */
    cr_assert_eq(bd_kernel_theta(k)[1], 0.0);                    /* unchanged */
    bd_kernel_free(k);
}

/* Central differences of k(x, y) in each log parameter. */
static void check_gradient(bd_kernel *k, const double *theta, const double *x, const double *y)
{
    size_t np = bd_kernel_n_params(k);
    double g[16], t[16], h = 1e-6;
    double kv;
    cr_assert_eq(bd_kernel_set_theta(k, theta, NULL), 0);
    kv = bd_kernel_grad(k, x, y, g);
    cr_assert_float_eq(kv, bd_kernel_eval(k, x, y), 1e-14);
    for (size_t p = 0; p < np; p++) {
        double up, down, fd;
        for (size_t q = 0; q < np; q++)
            t[q] = theta[q];
        t[p] = theta[p] + h;
        cr_assert_eq(bd_kernel_set_theta(k, t, NULL), 0);
        up = bd_kernel_eval(k, x, y);
        t[p] = theta[p] - h;
        cr_assert_eq(bd_kernel_set_theta(k, t, NULL), 0);
        down = bd_kernel_eval(k, x, y);
        fd = (up - down) / (2 * h);
        cr_assert(fabs(fd - g[p]) <= 1e-7 + 1e-6 * fabs(fd), "parameter %zu: analytic %.10g, finite difference %.10g",
                  p, g[p], fd);
    }
}

Test(kernel, matern_gradient_matches_finite_differences)
{
    unsigned choices[4] = {0, 0, 4, 0};
    bd_kernel *k;
    bd_rng rng;
    bd_rng_seed(&rng, 7, 1);
    cr_assert_eq(bd_kernel_new(BD_KERNEL_MATERN52, 4, choices, &k, NULL), 0);
    for (int rep = 0; rep < 50; rep++) {
        double x[4], y[4], theta[5];
        for (int j = 0; j < 4; j++) {
            x[j] = bd_rng_uniform(&rng);
            y[j] = rep % 5 == 0 ? x[j] : bd_rng_uniform(&rng); /* includes r = 0 */
            theta[j] = -2 + 2.5 * bd_rng_uniform(&rng);
        }
        theta[4] = -1 + 2 * bd_rng_uniform(&rng);
        check_gradient(k, theta, x, y);
    }
    bd_kernel_free(k);
}

Test(kernel, freeze_thaw_gradient_matches_finite_differences)
{
    bd_kernel *k;
    bd_rng rng;
    bd_rng_seed(&rng, 8, 1);
    cr_assert_eq(bd_kernel_new(BD_KERNEL_FREEZE_THAW, 1, NULL, &k, NULL), 0);
    for (int rep = 0; rep < 50; rep++) {
        double x = 1 + floor(50 * bd_rng_uniform(&rng)), y = 1 + floor(50 * bd_rng_uniform(&rng));
        double theta[3] = {-1 + 2 * bd_rng_uniform(&rng), -1 + 3 * bd_rng_uniform(&rng), -1 + 2 * bd_rng_uniform(&rng)};
        check_gradient(k, theta, &x, &y);
    }
    bd_kernel_free(k);
}

Test(kernel, copy_is_independent)
{
    bd_kernel *k, *c;
    double theta[2] = {log(0.3), log(1.7)}, x = 0.1, y = 0.4;
    cr_assert_eq(bd_kernel_new(BD_KERNEL_MATERN52, 1, NULL, &k, NULL), 0);
    cr_assert_eq(bd_kernel_set_theta(k, theta, NULL), 0);
    c = bd_kernel_copy(k);
    theta[0] = 0;
    cr_assert_eq(bd_kernel_set_theta(k, theta, NULL), 0);
    cr_assert_float_eq(bd_kernel_eval(c, &x, &y), 1.7 * bd_kernel_matern52_r(1.0), 1e-14);
    bd_kernel_free(k);
    bd_kernel_free(c);
}

Test(kernel, eval_rows_matches_eval)
{
    unsigned choices[3] = {0, 5, 0};
    double theta[4] = {log(0.3), log(0.6), log(1.2), log(0.7)}, ft[3] = {log(0.8), log(2.5), 0.3};
    double x[3], Y[3 * 70], out[70], e[1], Ye[70];
    bd_kernel *k, *f;
    bd_rng rng;
    bd_rng_seed(&rng, 3, 3);
    cr_assert_eq(bd_kernel_new(BD_KERNEL_MATERN52, 3, choices, &k, NULL), 0);
    cr_assert_eq(bd_kernel_set_theta(k, theta, NULL), 0);
    cr_assert_eq(bd_kernel_new(BD_KERNEL_FREEZE_THAW, 1, NULL, &f, NULL), 0);
    cr_assert_eq(bd_kernel_set_theta(f, ft, NULL), 0);
    for (int j = 0; j < 3; j++)
        x[j] = bd_rng_uniform(&rng);
    for (int i = 0; i < 3 * 70; i++)
        Y[i] = bd_rng_uniform(&rng);
    memcpy(Y + 3 * 5, x, sizeof x); /* a row equal to x: r = 0 */
    bd_kernel_eval_rows(k, x, 70, Y, out);
    for (int i = 0; i < 70; i++)
        cr_assert_float_eq(out[i], bd_kernel_eval(k, x, Y + 3 * i), 1e-14, "row %d", i);
    for (int i = 0; i < 70; i++)
        Ye[i] = 1 + i;
    e[0] = 3;
    bd_kernel_eval_rows(f, e, 70, Ye, out);
    for (int i = 0; i < 70; i++)
        cr_assert_float_eq(out[i], bd_kernel_eval(f, e, Ye + i), 1e-15);
    bd_kernel_free(k);
    bd_kernel_free(f);
}
