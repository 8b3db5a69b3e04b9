/* curve.h: extrapolating a learning curve to a larger budget, so that a
 * promotion can rank configs by where they are heading rather than where
 * they stand (late bloomers: a small learning rate starts slowly and ends
 * best).
 *
 * Model: the power law "pow3" of Domhan, Springenberg and Hutter (IJCAI
 * 2015, Table 1), y(t) = a + b t^(-c), which Klein et al. (ICLR 2017) and
 * Domhan et al. found among the most reliable single families. It is fitted
 * by least squares: for each c of a fixed grid in [BD_CURVE_C_MIN,
 * BD_CURVE_C_MAX], a and b in closed form with b >= 0 (a curve that rises
 * is held flat at its mean), keeping the c of least squared error. Because
 * b >= 0 and c >= BD_CURVE_C_MIN, the predicted gain beyond the last point
 * is at most the gain measured so far times
 * (t_n^-c - T^-c) / (t_1^-c - t_n^-c) at c = BD_CURVE_C_MIN: an
 * extrapolation never runs away from the data.
 *
 * The prediction is never worse than the curve's latest point smoothed
 * (the fit at t_n, or the point itself when lower): ranking by it is
 * optimistic, never pessimistic, about a config that is still improving.
 *
 * Cost: O(n x grid) per prediction; deterministic. */
#ifndef BD_MODEL_CURVE_H
#define BD_MODEL_CURVE_H

#include <stddef.h>

#define BD_CURVE_C_MIN 0.25
#define BD_CURVE_C_MAX 3.0

/* Predicted loss at step `target` from the n points (step[i], loss[i]),
 * steps increasing and > 0. Non-finite losses are skipped. With fewer than
 * three finite points, or target <= the last step, the answer is the last
 * finite loss (+INFINITY if none). */
double bd_curve_predict(const double *step, const double *loss, size_t n, double target);

/* The same fit's residual sum of squares, in *sse, and its degrees of
 * freedom (the finite points less the three parameters a, b, c), returned;
 * 0 (and *sse = 0) with fewer than four finite points. sse / dof estimates
 * the variance of a measurement about the curve's trend: the noise that a
 * ranking by one measurement carries (asha.c, "promotion_fraction"). */
size_t bd_curve_residual(const double *step, const double *loss, size_t n, double *sse);

#endif
