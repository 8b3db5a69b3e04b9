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
 * With BD_CURVE_FLOOR_ZERO, a curve whose points are all positive (an
 * error rate, a cross-entropy, a runtime) gets an asymptote a >= 0: where
 * the free fit's a is negative, a = 0 and b is refitted (least squares of
 * y on t^-c through the origin, b >= 0). Why: a curve that falls fast and
 * then slowly is fitted best, over all its points, by a low c and an
 * asymptote below zero, and the free fit then predicts negative error
 * rates for slowly falling mediocre configs, ranking them above the best
 * ones (tests/bench/README-mf.md, "A floor for the asymptote": none of
 * mlp_digits' top 5% in the free fit's top ninth at 27 epochs of 50, 73%
 * with the floor). A curve with a point at or below zero keeps the
 * free fit: its scale has no known floor.
 *
 * Cost: O(n x grid) per prediction; deterministic. */
#ifndef BD_MODEL_CURVE_H
#define BD_MODEL_CURVE_H

#include <stddef.h>

#define BD_CURVE_C_MIN 0.25
#define BD_CURVE_C_MAX 3.0

/* flags of bd_curve_predict and bd_curve_residual */
#define BD_CURVE_FLOOR_ZERO 1u /* all points positive: the asymptote is >= 0 */

/* Predicted loss at step `target` from the n points (step[i], loss[i]),
 * steps increasing and > 0. Non-finite losses are skipped. With fewer than
 * three finite points, or target <= the last step, the answer is the last
 * finite loss (+INFINITY if none). */
double bd_curve_predict(const double *step, const double *loss, size_t n, double target, unsigned flags);

/* The same fit's residual sum of squares, in *sse, and its degrees of
 * freedom (the finite points less the three parameters a, b, c), returned;
 * 0 (and *sse = 0) with fewer than four finite points. sse / dof estimates
 * the variance of a measurement about the curve's trend: the noise that a
 * ranking by one measurement carries (asha.c, "promotion_fraction"). */
size_t bd_curve_residual(const double *step, const double *loss, size_t n, unsigned flags, double *sse);

#endif
