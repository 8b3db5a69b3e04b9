/* curve.c: pow3 learning-curve extrapolation (curve.h). */
#include "curve.h"

#include <math.h>

#define GRID 32 /* values of c, evenly spaced in log c */

double bd_curve_predict(const double *step, const double *loss, size_t n, double target)
{
    size_t m = 0;
    double last = INFINITY, t_last = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(loss[i]) && step[i] > 0) {
            m++;
            last = loss[i];
            t_last = step[i];
        }
    if (m < 3 || !(target > t_last))
        return last;
    double best_sse = INFINITY, best_pred = last, best_at_last = last;
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
        for (size_t i = 0; i < n; i++) {
            if (!isfinite(loss[i]) || !(step[i] > 0))
                continue;
            double r = loss[i] - (a + b * pow(step[i], -c));
            sse += r * r;
        }
        if (sse < best_sse) {
            best_sse = sse;
            best_pred = a + b * pow(target, -c);
            best_at_last = a + b * pow(t_last, -c);
        }
    }
    /* Never above where the curve stands now (its fit there, or its last point). */
    double now = fmin(best_at_last, last);
    return fmin(best_pred, now);
}
