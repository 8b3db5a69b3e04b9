/* curve.c: pow3 learning-curve extrapolation (curve.h). */
#include "curve.h"

#include <math.h>

#define GRID 32 /* values of c, evenly spaced in log c */

/* The least-squares pow3 fit over the finite points (m of them, m >= 1):
 * the c of the grid with the least squared error, its a, b and that error;
 * with floor_zero, a >= 0 (curve.h, BD_CURVE_FLOOR_ZERO). */
static void fit_pow3(const double *step, const double *loss, size_t n, size_t m, int floor_zero, double *a_out,
                     double *b_out, double *c_out, double *sse_out)
{
    double best_sse = INFINITY;
    for (int g = 0; g < GRID; g++) {
        double c = BD_CURVE_C_MIN * pow(BD_CURVE_C_MAX / BD_CURVE_C_MIN, (double)g / (GRID - 1));
        /* least squares of y on x = t^-c */
        double sx = 0, sy = 0, sxx = 0, sxy = 0;
        for (size_t i = 0; i < n; i++) {
            if (!isfinite(loss[i]) || !(step[i] > 0))
                continue;
            double x = pow(step[i], -c);
            sx += x;
            sy += loss[i];
            sxx += x * x;
            sxy += x * loss[i];
        }
        double k = (double)m, var = sxx - sx * sx / k;
        double b = var > 1e-300 ? (sxy - sx * sy / k) / var : 0;
        if (b < 0)
            b = 0; /* a rising curve is held flat: no extrapolated gain */
        double a = (sy - b * sx) / k, sse = 0;
        if (floor_zero && a < 0) { /* through the origin: b = sum(xy) / sum(xx), >= 0 as every y > 0 */
            a = 0;
            b = sxx > 1e-300 ? sxy / sxx : 0;
        }
        for (size_t i = 0; i < n; i++) {
            if (!isfinite(loss[i]) || !(step[i] > 0))
                continue;
            double r = loss[i] - (a + b * pow(step[i], -c));
            sse += r * r;
        }
        if (sse < best_sse) {
            best_sse = sse;
            *a_out = a;
            *b_out = b;
            *c_out = c;
        }
    }
    *sse_out = best_sse;
}

/* The finite points: their number, the last one, and whether all are
 * positive (*positive). */
static size_t finite_points(const double *step, const double *loss, size_t n, double *last, double *t_last,
                            int *positive)
{
    size_t m = 0;
    *last = INFINITY;
    *t_last = 0;
    *positive = 1;
    for (size_t i = 0; i < n; i++)
        if (isfinite(loss[i]) && step[i] > 0) {
            m++;
            *last = loss[i];
            *t_last = step[i];
            if (!(loss[i] > 0))
                *positive = 0;
        }
    return m;
}

double bd_curve_predict(const double *step, const double *loss, size_t n, double target, unsigned flags)
{
    double last, t_last, a = 0, b = 0, c = 1, sse;
    int positive;
    size_t m = finite_points(step, loss, n, &last, &t_last, &positive);
    if (m < 3 || !(target > t_last))
        return last;
    fit_pow3(step, loss, n, m, (flags & BD_CURVE_FLOOR_ZERO) && positive, &a, &b, &c, &sse);
    if (!isfinite(sse)) /* no grid point gave a finite error (losses near DBL_MAX) */
        return last;
    /* Never above where the curve stands now (its fit there, or its last point). */
    double now = fmin(a + b * pow(t_last, -c), last);
    return fmin(a + b * pow(target, -c), now);
}

size_t bd_curve_residual(const double *step, const double *loss, size_t n, unsigned flags, double *sse)
{
    double last, t_last, a = 0, b = 0, c = 1;
    int positive;
    size_t m = finite_points(step, loss, n, &last, &t_last, &positive);
    *sse = 0;
    if (m <= 3)
        return 0;
    fit_pow3(step, loss, n, m, (flags & BD_CURVE_FLOOR_ZERO) && positive, &a, &b, &c, sse);
    if (!isfinite(*sse)) {
        *sse = 0;
        return 0;
    }
    return m - 3;
}
