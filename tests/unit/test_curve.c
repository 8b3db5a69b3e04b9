/* test_curve.c: server/model/curve.c, pow3 extrapolation of learning curves.
 * Exact power laws are recovered; rising or flat curves are not
 * extrapolated; the predicted gain is bounded by the measured one; fewer
 * than three points give the last one. */
#include <criterion/criterion.h>
#include <math.h>

#include "server/model/curve.h"

Test(curve, recovers_an_exact_power_law)
{
    /* y = 0.2 + 0.5 t^-0.8 on t = 1..9, predicted at 81 */
    double t[9], y[9];
    for (int i = 0; i < 9; i++) {
        t[i] = i + 1;
        y[i] = 0.2 + 0.5 * pow(t[i], -0.8);
    }
    double want = 0.2 + 0.5 * pow(81, -0.8), got = bd_curve_predict(t, y, 9, 81, 0);
    /* c comes from a grid of 32 values: within one grid step of 0.8 */
    cr_expect(fabs(got - want) < 0.01, "predicted %g, exact %g", got, want);
    cr_expect_lt(got, y[8], "a falling curve is predicted to fall further");
}

Test(curve, slow_starter_overtakes_a_flat_curve)
{
    /* the late bloomer: worse at epoch 3 but falling fast; the other flat */
    const double t[3] = {1, 2, 3};
    const double slow[3] = {0.60, 0.45, 0.38}, flat[3] = {0.34, 0.33, 0.33};
    double ps = bd_curve_predict(t, slow, 3, 50, 0), pf = bd_curve_predict(t, flat, 3, 50, 0);
    cr_expect_lt(ps, pf, "slow starter predicted %g, flat one %g", ps, pf);
    cr_expect_leq(pf, 0.33);
}

Test(curve, rising_curves_are_held_at_their_last_point)
{
    const double t[4] = {1, 2, 3, 4}, y[4] = {0.2, 0.25, 0.3, 0.35};
    double p = bd_curve_predict(t, y, 4, 100, 0);
    cr_expect_leq(p, 0.35);
    cr_expect_geq(p, 0.2, "no gain invented from a rising curve: %g", p);
}

Test(curve, gain_is_bounded_by_the_measured_gain)
{
    /* a steep drop over 3 points: the extrapolated gain from t = 3 to 1000
     * is at most (3^-c - 1000^-c) / (1 - 3^-c) at c = C_MIN times the gain seen */
    const double t[3] = {1, 2, 3}, y[3] = {1.0, 0.5, 0.3};
    double c = BD_CURVE_C_MIN, ratio = (pow(3, -c) - pow(1000, -c)) / (1 - pow(3, -c));
    double p = bd_curve_predict(t, y, 3, 1000, 0);
    cr_expect_geq(p, 0.3 - ratio * 0.7 - 1e-9, "predicted %g", p);
}

Test(curve, too_few_points_or_no_extrapolation_give_the_last_point)
{
    const double t[3] = {1, 2, 3}, y[3] = {0.5, NAN, 0.4};
    cr_expect_eq(bd_curve_predict(t, y, 3, 10, 0), 0.4, "two finite points");
    cr_expect_eq(bd_curve_predict(t, y, 1, 10, 0), 0.5);
    cr_expect(isinf(bd_curve_predict(t, y, 0, 10, 0)));
    const double z[3] = {0.5, 0.45, 0.4};
    cr_expect_eq(bd_curve_predict(t, z, 3, 3, 0), 0.4, "target at the last step");
}

Test(curve, residual_is_the_noise_about_the_fit)
{
    /* an exact power law with c on the grid (c = BD_CURVE_C_MIN): no
     * residual, 10 - 3 degrees of freedom */
    double t[10], y[10], z[10], sse;
    for (int i = 0; i < 10; i++) {
        t[i] = i + 1;
        y[i] = 0.2 + 0.3 * pow(t[i], -BD_CURVE_C_MIN);
        z[i] = 0.4 + (i % 2 ? 0.02 : -0.02); /* a flat zigzag */
    }
    cr_expect_eq(bd_curve_residual(t, y, 10, 0, &sse), 7);
    cr_expect_lt(sse, 1e-20, "sse %g", sse);
    /* the zigzag: at most its squared deviations from the mean (the flat
     * fit, b = 0), 10 x 0.02^2, and a decreasing fit cannot absorb most of
     * an alternating pattern */
    cr_expect_eq(bd_curve_residual(t, z, 10, 0, &sse), 7);
    cr_expect_leq(sse, 10 * 0.0004 + 1e-12, "sse %g", sse);
    cr_expect_gt(sse, 0.5 * 10 * 0.0004, "sse %g", sse);
    /* fewer than four finite points: no estimate */
    z[1] = NAN;
    cr_expect_eq(bd_curve_residual(t, z, 4, 0, &sse), 0);
    cr_expect_eq(sse, 0);
    cr_expect_eq(bd_curve_residual(t, z, 5, 0, &sse), 1);
}

/* BD_CURVE_FLOOR_ZERO: a positive curve that falls fast and then slowly
 * (mlp_digits' slow starters) is fitted best, over all its points, with an
 * asymptote below zero, and the free fit predicts a negative error rate;
 * with the flag the asymptote is 0 and the prediction the fit through the
 * origin, still below the last point. A curve with a point at or below zero
 * keeps the free fit, flag or not. */
Test(curve, floor_zero_keeps_a_positive_curves_asymptote_at_or_above_zero)
{
    double t[27], y[27];
    for (int i = 0; i < 27; i++) {
        t[i] = i + 1;
        y[i] = 0.85 * exp(-0.35 * i) + 0.06 * (27.0 - i) / 27 + 0.055; /* 0.965 .. 0.057, all positive */
    }
    double free_fit = bd_curve_predict(t, y, 27, 50, 0), floored = bd_curve_predict(t, y, 27, 50, BD_CURVE_FLOOR_ZERO);
    cr_expect_lt(free_fit, 0, "the free fit should go below zero here: %g", free_fit);
    cr_expect_geq(floored, 0, "floored prediction %g", floored);
    cr_expect_leq(floored, y[26], "floored prediction %g above the last point %g", floored, y[26]);
    double sse_free, sse_floor;
    cr_expect_eq(bd_curve_residual(t, y, 27, 0, &sse_free), 24);
    cr_expect_eq(bd_curve_residual(t, y, 27, BD_CURVE_FLOOR_ZERO, &sse_floor), 24);
    cr_expect_geq(sse_floor, sse_free, "a constrained fit cannot fit better: %g < %g", sse_floor, sse_free);
    y[3] = -0.01; /* a loss with no known floor */
    cr_expect_eq(bd_curve_predict(t, y, 27, 50, BD_CURVE_FLOOR_ZERO), bd_curve_predict(t, y, 27, 50, 0));
}
