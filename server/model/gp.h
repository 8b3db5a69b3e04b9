/* gp.h: exact Gaussian-process regression on GSL (docs/ALGORITHMS.md
 * section 7),
 * hyperparameter fits by maximum marginal likelihood (gp_fit.c), and the
 * rule that caps the training set as a study grows (gp_train.c).
 *
 * The model holds m points (x_i, y_i) with caller-chosen ids, a kernel
 * (kernel.h) with log parameters, and the log noise variance. Outputs are
 * standardised (options: none, centred, centred and scaled by their standard
 * deviation) before the GP sees them; predictions and samples are returned in
 * the caller's units. Let K be the kernel matrix, sn2 the noise variance and
 * jitter the extra diagonal a failed factorisation needed:
 *   K + (sn2 + jitter) I = L L^T,  alpha = L^T \ (L \ ys),
 *   mu(x) = k*^T alpha,  var(x) = k** - v^T v with v = L \ k* (clamped at 0),
 *   plus sn2 when the predictive noise is wanted.
 * theta, the model's parameter vector, is the kernel's log parameters
 * followed by log sn2 (so bd_gp_n_params = bd_kernel_n_params + 1); sn2 and
 * s2 are in standardised units.
 *
 * Invariants: L always factors the current points under the current theta
 * and jitter; alpha always matches L and the current standardisation.
 * Cost (m points, d dimensions): set_data / set_theta O(m^2 d + m^3/3);
 * add_point and remove_point O(m^2 + m d) (a rank-one extension and a
 * rank-one update of L); predict O(m d + m^2) per point; sample_paths
 * O(m^2 q + q^3 + P q^2) for q query points and P paths; a fit
 * O(restarts x iterations x (n^3 + n^2 d)) with n = min(m, max_points).
 * Memory O(m^2).
 * Keep m bounded with bd_gp_select (gp_train.c).
 *
 * No global state; randomness only from the bd_rng passed in. */
#ifndef BD_MODEL_GP_H
#define BD_MODEL_GP_H

#include <stddef.h>

#include "../common.h"
#include "../rng.h"
#include "kernel.h"

typedef struct bd_gp bd_gp;

enum {
    BD_GP_STD_NONE = 0,   /* ys = y */
    BD_GP_STD_CENTER = 1, /* ys = y - mean(y) */
    BD_GP_STD_SCALE = 2   /* ys = (y - mean(y)) / sd(y) (sd 1 when fewer than 2 points or all equal) */
};

/* A model with no points, a copy of kernel (its theta included) and noise
 * variance sn2 > 0 (standardised units). standardize is a BD_GP_STD_* value.
 * *out is new (bd_gp_free). */
int bd_gp_new(const bd_kernel *kernel, double sn2, int standardize, bd_gp **out, bd_err *err) BD_MUST_CHECK;
void bd_gp_free(bd_gp *gp); /* NULL-safe */
/* The heap gp holds, on the safe side (0 for NULL): its arrays are sized by
 * its capacity in points, the factor by its square. */
size_t bd_gp_held_bytes(const bd_gp *gp);

size_t bd_gp_dim(const bd_gp *gp);
size_t bd_gp_size(const bd_gp *gp);     /* number of points held, m */
size_t bd_gp_n_params(const bd_gp *gp); /* entries of theta */
/* Borrowed, valid until the next call that changes the model. */
const double *bd_gp_theta(const bd_gp *gp);
const bd_kernel *bd_gp_kernel(const bd_gp *gp);
/* Borrowed: point i (0 <= i < m), its output and id, in the order held. */
const double *bd_gp_x(const bd_gp *gp, size_t i);
double bd_gp_y(const bd_gp *gp, size_t i);
size_t bd_gp_id(const bd_gp *gp, size_t i);
/* The jitter the last factorisation added to the diagonal (0 when none). */
double bd_gp_jitter(const bd_gp *gp);
/* Mean and scale of the standardisation: y = mean + scale * ys. */
void bd_gp_standardization(const bd_gp *gp, double *mean, double *scale);

/* Sets theta (bd_gp_n_params entries: kernel log parameters, then log sn2)
 * and refactors: O(m^3). On error the model keeps its previous theta. */
int bd_gp_set_theta(bd_gp *gp, const double *theta, bd_err *err) BD_MUST_CHECK;

/* Replaces the points with the n rows of X (n x d, row-major) and y; ids
 * (may be NULL: 0..n-1) are copied. O(n^3). n may be 0. BD_EINVAL on a
 * non-finite input or output (the model is unchanged); if the factorisation
 * fails even with jitter, BD_EINTERNAL and the model is left empty. */
int bd_gp_set_data(bd_gp *gp, size_t n, const double *X, const double *y, const size_t *ids, bd_err *err) BD_MUST_CHECK;
/* Appends one point by extending L by a row: O(m^2). When the new pivot is
 * not safely positive the whole factor is recomputed with a growing jitter. */
int bd_gp_add_point(bd_gp *gp, const double *x, double y, size_t id, bd_err *err) BD_MUST_CHECK;
/* Removes the point held at position i (see bd_gp_find), by a rank-one
 * update of the trailing block of L: O(m^2). */
int bd_gp_remove_point(bd_gp *gp, size_t i, bd_err *err) BD_MUST_CHECK;
/* Position of the point with this id, or -1. O(m). */
long bd_gp_find(const bd_gp *gp, size_t id);

/* Log marginal likelihood of the standardised outputs under the current
 * theta: -1/2 ys^T alpha - sum log L_ii - m/2 log 2pi. */
double bd_gp_log_marginal(const bd_gp *gp);

/* Posterior mean and variance at the q rows of Xq (q x d), in the caller's
 * units; var may be NULL (then only the mean, O(m d) per point). with_noise
 * adds sn2 (times the scale squared). With no points, the prior. */
int bd_gp_predict(const bd_gp *gp, size_t q, const double *Xq, double *mu, double *var, int with_noise,
                  bd_err *err) BD_MUST_CHECK;

/* Draws n_paths joint posterior samples at the q rows of Xq into out
 * (n_paths x q, row-major, caller's units), from the rng only. with_noise
 * adds independent observation noise. The posterior covariance is factored
 * with the same growing-jitter retry. */
int bd_gp_sample_paths(const bd_gp *gp, size_t q, const double *Xq, size_t n_paths, int with_noise, bd_rng *rng,
                       double *out, bd_err *err) BD_MUST_CHECK;

/* ---- hyperparameter fits (gp_fit.c) ---- */

/* Prior and box for one entry of theta: a normal prior N(mean, sd^2) on the
 * log parameter (sd <= 0: flat), and `fixed` keeps it where it is. */
typedef struct bd_gp_prior {
    double mean, sd;
    int fixed;
} bd_gp_prior;

typedef struct bd_gp_fit_options {
    size_t restarts;           /* optimisations after the warm start (default 3) */
    size_t max_iter;           /* BFGS2 iterations per optimisation (default 100) */
    double grad_tol;           /* stop when |gradient| < grad_tol (1 + |objective|) (default 1e-3) */
    double noise_floor;        /* sn2 >= noise_floor, standardised units (default 1e-6) */
    size_t max_points;         /* fit on at most this many of the model's points, evenly
                                  spaced in the order held (default 128; 0: all) */
    const bd_gp_prior *priors; /* bd_gp_n_params entries, borrowed; NULL: bd_gp_fit_default_priors */
} bd_gp_fit_options;

void bd_gp_fit_options_default(bd_gp_fit_options *o);
/* Weak default priors (out has bd_gp_n_params entries). Matérn on the unit
 * cube: log l_j ~ N(log 0.5, 1.5^2), log s2 ~ N(0, 1.5^2), log sn2 ~
 * N(log 1e-2, 3^2). Freeze-thaw: log alpha, log beta ~ N(0, 1.5^2), log s2
 * fixed, log sn2 fixed (BO-BOS fixes both: s2 = 1, sn2 = 1e-3). */
void bd_gp_fit_default_priors(const bd_gp *gp, bd_gp_prior *out);

/* The objective the fit maximises: log marginal likelihood plus the log
 * priors (constants dropped) at theta, and its gradient with respect to
 * theta (grad may be NULL; fixed entries get 0). Works on all the points the
 * model holds; does not change the model. priors NULL: the defaults.
 * O(m^3 + m^2 d). */
int bd_gp_fit_objective(const bd_gp *gp, const double *theta, const bd_gp_prior *priors, double *value, double *grad,
                        bd_err *err) BD_MUST_CHECK;

/* Maximises bd_gp_fit_objective (over at most opt->max_points of the
 * model's points) over the free entries of theta with GSL's vector_bfgs2 and
 * the analytic gradient: first from the current theta (the warm start), then
 * from `restarts` points drawn from the priors with rng.
 * The noise is optimised as log(sn2 - noise_floor). Keeps the best theta and
 * refactors. A restart that fails numerically is skipped; if every
 * optimisation fails the model is unchanged and BD_EINTERNAL returned.
 * *best (may be NULL) receives the objective reached. */
int bd_gp_fit(bd_gp *gp, const bd_gp_fit_options *opt, bd_rng *rng, double *best, bd_err *err) BD_MUST_CHECK;

/* ---- bounding the training set (gp_train.c) ---- */

/* A cap and best-count that keep one GP-UCB suggestion in 8 dimensions
 * (2048 Sobol candidates + local search) near 35 ms on a 2-core machine
 * whatever the number of trials (tests/bench/gp_latency.c); prediction
 * costs O(cap^2) per candidate, so the time grows with the square of it. */
#define BD_GP_TRAIN_CAP 192
#define BD_GP_TRAIN_BEST 48

/* The training subset of n observations (y, smaller is better) capped at
 * cap points: the n_best smallest y (ties: earlier index first), then the
 * most recent others, up to cap in all. Non-finite y never counts among the
 * best. Writes the chosen indices in increasing order to idx (room for
 * min(n, cap)) and returns how many. O(n log n). */
size_t bd_gp_select(size_t n, const double *y, size_t cap, size_t n_best, size_t *idx);

/* Makes the model hold exactly the observations idx[0..m) of X (rows of d)
 * and y, using the indices as ids: removes held points not listed or whose
 * x or y changed, appends the missing ones (O(m^2) each), or rebuilds from
 * scratch (O(m^3)) when that is cheaper (more than m/4 changes). */
int bd_gp_sync(bd_gp *gp, const double *X, const double *y, const size_t *idx, size_t m, bd_err *err) BD_MUST_CHECK;

/* Hyperparameter refit schedule: should a model last fitted with n_fit
 * observations (0: never fitted) be refitted now that there are n_now? Yes
 * at the first observation, then once max(10, n_fit / 5) more have arrived
 * (every 10 up to 50, then each 20% of growth: O(log n) refits in all), and
 * whenever the count shrank. */
int bd_gp_refit_due(size_t n_fit, size_t n_now);

#endif
