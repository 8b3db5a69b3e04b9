/* acq.h: maximising an acquisition function over the unit cube of a mixed,
 * conditional search space, and the GP-UCB multipliers of
 * docs/ALGORITHMS.md section 8.
 *
 * The space is described coordinate by coordinate (bd_acq_dim), in the code
 * bd_space_encode uses, so that this file needs no search-space or JSON
 * code (acq_space.h builds the description from a bd_space):
 * - continuous: any value in [0, 1];
 * - integer: the coordinate of an integer v in [low, high] is
 *   (v - low) / (high - low), or on the log scale (log v - log low) /
 *   (log high - log low), 0.5 when low == high;
 * - categorical with K choices: choice k sits at (k + 0.5) / K, and moves
 *   between choices are tried exhaustively (the kernel compares categoricals
 *   by Hamming distance, see kernel.h);
 * - a coordinate inactive at a point (a conditional parameter whose
 *   condition fails, as told by the `active` callback) is held at 0.5, the
 *   value bd_space_encode gives it, so it adds nothing to a GP distance
 *   between points where it is inactive and is never searched.
 *
 * The search (bd_acq_maximize): n_candidates space-filling points (see
 * bd_acq_candidates) plus the caller's start points, projected onto the space and scored in
 * batches; then the n_local best distinct ones are refined by a compass
 * search that, at each step, polls in one batch every active continuous
 * coordinate +-h, every active integer coordinate by +-h (at least one
 * step of the integer grid), and every other choice of every active
 * categorical; it moves to the best improving neighbour, or halves h, until
 * h < step_min or max_polls batches. The best point seen is returned.
 *
 * Invariants: every point handed to `score` is projected (on the integer
 * grid, at a categorical centre, inactive coordinates at 0.5).
 * Cost: (n_candidates + n_starts + n_local x max_polls x (2 d + sum K))
 * evaluations of score, O(d) work each besides; deterministic given rng. */
#ifndef BD_MODEL_ACQ_H
#define BD_MODEL_ACQ_H

#include <stddef.h>

#include "../common.h"
#include "../rng.h"

/* Coordinates the optimiser takes. The Joe-Kuo direction numbers stored in
 * sobol.c stop at 40 dimensions; coordinates beyond the 40th get Latin
 * hypercube columns (bd_acq_candidates). 100 keeps a candidate batch
 * (2048 x d doubles) and a compass poll (2 d + sum K points) small; a GP
 * over more coordinates than that would need far more trials than a study
 * holds to learn anything. */
#define BD_ACQ_MAX_DIM 100

typedef enum { BD_ACQ_CONTINUOUS, BD_ACQ_INTEGER, BD_ACQ_CATEGORICAL } bd_acq_kind;

typedef struct bd_acq_dim {
    bd_acq_kind kind;
    size_t n_choices; /* categorical: K >= 1 */
    double low, high; /* integer: the inclusive range, low <= high */
    int log;          /* integer: coordinate on the log scale (needs low > 0) */
} bd_acq_dim;

/* Scores the n points in the rows of U (n x d), higher is better, into out.
 * Returns 0, or a negative BD_E* code that stops the search. */
typedef int (*bd_acq_score_fn)(void *ctx, size_t n, const double *U, double *out);
/* Sets mask[j] to 1 when coordinate j is active at u, else 0. u is on the
 * grid; activity may depend only on integer and categorical coordinates,
 * and a coordinate whose parent is inactive must be inactive too (as in
 * bd_space_is_active), whatever value the parent's coordinate holds. */
typedef void (*bd_acq_active_fn)(void *ctx, const double *u, unsigned char *mask);

typedef struct bd_acq_problem {
    size_t d;               /* coordinates, 1 .. BD_ACQ_MAX_DIM */
    const bd_acq_dim *dims; /* d entries, borrowed */
    bd_acq_score_fn score;
    void *score_ctx;
    bd_acq_active_fn active; /* NULL: every coordinate is always active */
    void *active_ctx;
} bd_acq_problem;

typedef struct bd_acq_options {
    size_t n_candidates;  /* Sobol candidates (default 2048) */
    size_t n_local;       /* best distinct candidates refined locally (default 4) */
    size_t max_polls;     /* poll batches per local search (default 24) */
    double step0;         /* first compass step, unit coordinates (default 0.1) */
    double step_min;      /* stop below this step (default 1e-3) */
    const double *starts; /* extra candidates (n_starts x d), e.g. the incumbents; borrowed, may be NULL */
    size_t n_starts;
} bd_acq_options;

void bd_acq_options_default(bd_acq_options *o);

/* Checks a description: d within bounds, K >= 1, low <= high, log needs
 * low > 0. BD_EINVAL with a message naming the coordinate. */
int bd_acq_check(const bd_acq_problem *p, bd_err *err) BD_MUST_CHECK;

/* Moves u onto the space in place: clamps to [0, 1], rounds integers to
 * their grid, categoricals to their centre, then sets inactive coordinates
 * to 0.5. mask (d entries, may be NULL) receives the activity. */
void bd_acq_project(const bd_acq_problem *p, double *u, unsigned char *mask);

/* The integer an integer coordinate u of dm stands for: bd_space_decode's
 * arithmetic (log scale when dm->log), rounded and kept in [low, high]. */
double bd_acq_int_value(const bd_acq_dim *dm, double u);

/* Fills U (n x d, row-major) with n points of [0, 1)^d spread over the
 * cube: coordinates 0 .. min(d, 40) - 1 are a randomly shifted Sobol
 * sequence (the first 2^k points of each such coordinate are stratified on
 * the grid of 2^-k); every later coordinate is a Latin hypercube column (a
 * random permutation of the n strata [i/n, (i+1)/n), one uniform point in
 * each), so every one-dimensional projection stays stratified whatever d.
 * Randomness comes from rng. BD_EINVAL when d is outside 1 .. BD_ACQ_MAX_DIM. */
int bd_acq_candidates(size_t d, size_t n, bd_rng *rng, double *U, bd_err *err) BD_MUST_CHECK;

/* Finds a high-scoring point: best_u (d entries) receives it, *best_score
 * (may be NULL) its score. Randomness (the candidates) comes from rng. */
int bd_acq_maximize(const bd_acq_problem *p, const bd_acq_options *o, bd_rng *rng, double *best_u, double *best_score,
                    bd_err *err) BD_MUST_CHECK;

/* GP-UCB's multiplier of sigma in the BO-BOS authors' code: 0.2 d ln(2t)
 * (d counts the fidelity column), t >= 1. */
double bd_acq_ucb_multiplier_code(size_t d, double t);
/* The paper's beta_t = 2 log(|D| t^2 pi^2 / (6 delta)) (Srinivas et al.
 * 2010, Theorem 1); the multiplier of sigma is its square root. */
double bd_acq_ucb_beta_paper(double domain_size, double t, double delta);

/* log EI for minimisation: log E[max(best - f, 0)] with f ~ N(mu, sd^2),
 * = log sd + log h(z), z = (best - mu) / sd, h(z) = phi(z) + z Phi(z),
 * evaluated without cancellation or underflow for z far below 0 (Ament et
 * al., NeurIPS 2023, eq. 9: log h(z) = log phi(z) + log1p(z sqrt(pi/2)
 * erfcx(-z / sqrt 2)), asymptotically -z^2/2 - log(2 pi)/2 - 2 log|z|).
 * sd <= 0 gives log(max(best - mu, 0)); best not finite gives -mu (no
 * incumbent yet: the lowest mean). */
double bd_acq_log_ei(double best, double mu, double sd);

#endif
