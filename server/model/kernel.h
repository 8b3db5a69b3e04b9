/* kernel.h: the covariance functions of banditd's Gaussian processes
 * (docs/ALGORITHMS.md sections 6 and 7) and their derivatives with respect to
 * their log parameters.
 *
 * Matérn-5/2 with ARD lengthscales, over inputs in the unit cube:
 *   r^2 = sum_j dist_j^2 / l_j^2,  k = s2 (1 + sqrt5 r + 5 r^2 / 3) exp(-sqrt5 r),
 * where dist_j = x_j - x'_j for a numeric coordinate and, for a categorical
 * coordinate with K choices coded (k + 0.5) / K (bd_space_encode's code),
 * dist_j = 0 when both points code the same choice and 1 otherwise
 * (Hamming). Parameters theta = (log l_1 .. log l_d, log s2).
 *
 * Freeze-thaw (Swersky, Snoek, Adams 2014; BO-BOS's learning-curve kernel),
 * over one input, the epoch:  k(n, n') = s2 beta^alpha / (n + n' + beta)^alpha.
 * Parameters theta = (log alpha, log beta, log s2); s2 = 1 gives the kernel
 * of docs/ALGORITHMS.md section 6.
 *
 * Why Hamming and not one-hot for categoricals: the GP then works directly on
 * bd_space_encode's one coordinate per parameter, a categorical costs one
 * lengthscale rather than K (hyperparameters are fitted from few points), and
 * the distance is exactly that of a one-hot code sharing one lengthscale per
 * parameter, so the kernel stays positive definite. The ordinal distance
 * |(k + 0.5)/K - (k' + 0.5)/K| would invent an order among the choices.
 * An inactive conditional parameter is coded 0.5 in every point (as
 * bd_space_encode does and bd_acq keeps it), so it adds nothing to the
 * distance between two configs where it is inactive.
 *
 * Invariants: a bd_kernel's prepared values (lengthscales, s2, alpha, beta)
 * are always those of the last theta set; evaluation has no side effects.
 * Cost: one evaluation or gradient is O(d). */
#ifndef BD_MODEL_KERNEL_H
#define BD_MODEL_KERNEL_H

#include <stddef.h>

#include "../common.h"

typedef enum { BD_KERNEL_MATERN52, BD_KERNEL_FREEZE_THAW } bd_kernel_type;

typedef struct bd_kernel bd_kernel;

/* A kernel over d-dimensional inputs. n_choices (may be NULL: all numeric)
 * gives for each coordinate 0 (numeric) or the number of choices K >= 1 of a
 * categorical; it is copied. Freeze-thaw needs d == 1 and no categoricals.
 * Starts with theta = 0 (unit lengthscales, alpha = beta = s2 = 1).
 * *out is new (bd_kernel_free). BD_EINVAL on a bad shape. */
int bd_kernel_new(bd_kernel_type type, size_t d, const unsigned *n_choices, bd_kernel **out, bd_err *err) BD_MUST_CHECK;
void bd_kernel_free(bd_kernel *k); /* NULL-safe */
/* The heap k holds, on the safe side (0 for NULL). */
size_t bd_kernel_held_bytes(const bd_kernel *k);
/* A new kernel of the same type, shape and theta. */
bd_kernel *bd_kernel_copy(const bd_kernel *k);

bd_kernel_type bd_kernel_kind(const bd_kernel *k);
size_t bd_kernel_dim(const bd_kernel *k);
/* Number of entries of theta: d + 1 for Matérn-5/2, 3 for freeze-thaw. */
size_t bd_kernel_n_params(const bd_kernel *k);
/* Borrowed: the number of choices per coordinate (0 = numeric), d entries,
 * valid while k lives. */
const unsigned *bd_kernel_choices(const bd_kernel *k);

/* Sets the log parameters (bd_kernel_n_params entries). BD_EINVAL when one is
 * not finite or its exponential overflows or vanishes. */
int bd_kernel_set_theta(bd_kernel *k, const double *theta, bd_err *err) BD_MUST_CHECK;
/* Borrowed: the current log parameters. */
const double *bd_kernel_theta(const bd_kernel *k);

/* k(x, y) for two points of d coordinates. */
double bd_kernel_eval(const bd_kernel *k, const double *x, const double *y);
/* out[i] = k(x, Y_i) for the n rows of Y (n x d, row-major): the same
 * values as bd_kernel_eval, in one tight loop (the cross-covariances of a
 * prediction). */
void bd_kernel_eval_rows(const bd_kernel *k, const double *x, size_t n, const double *Y, double *out);
/* k(x, x), the prior variance (s2 for Matérn; depends on x for freeze-thaw). */
double bd_kernel_diag(const bd_kernel *k, const double *x);
/* k(x, y) and its derivatives with respect to each entry of theta
 * (grad has bd_kernel_n_params entries). Returns k(x, y). */
double bd_kernel_grad(const bd_kernel *k, const double *x, const double *y, double *grad);

/* Matérn-5/2 with unit variance at scaled distance r >= 0. */
double bd_kernel_matern52_r(double r);
/* The freeze-thaw kernel with s2 = 1: beta^alpha / (n + m + beta)^alpha. */
double bd_kernel_freeze_thaw(double n, double m, double alpha, double beta);

#endif
