/* tpe.h: the Tree-structured Parzen Estimator (Bergstra, Bardenet, Bengio,
 * Kegl, NeurIPS 2011, section 4), with the defaults and estimator rules of
 * Optuna 3.1's TPESampler, and the joint ("multivariate") kernel density of
 * BOHB (Falkner, Klein, Hutter, ICML 2018, section 3.1).
 *
 * The observations are split by loss into a good group (the gamma(n) best)
 * and the rest. A Parzen estimator l(x) is fitted to the good group and
 * g(x) to the rest; n_candidates points are drawn from l and the one with
 * the largest log l(x) - log g(x) (the expected-improvement ordering) is
 * proposed.
 *
 * Coordinates (bd_tpe_dim): what Optuna's estimator works in, so that its
 * bandwidth rules carry over unchanged:
 * - numeric: the value, or its logarithm on a log scale, in [low, high];
 *   an integer parameter is widened by half a step on each side
 *   (low - 0.5, high + 0.5, before the logarithm when log) and, on a
 *   linear scale, has step = 1: its density is the mass of the bin
 *   [x - 0.5, x + 0.5] (Optuna's q);
 * - categorical with K choices: the choice index 0..K-1;
 * - NAN: the parameter is inactive in that observation (a conditional).
 *
 * Estimators (Optuna 3.1 _ParzenEstimator, consider_prior, magic clip, no
 * endpoints): one truncated Gaussian per observation plus the prior
 * N((low+high)/2, high-low); univariate bandwidth = the larger gap to the
 * neighbours among the sorted means (prior mean and range ends included; an
 * end observation takes its inner gap), clipped to [range / min(100, n+2),
 * range]; multivariate bandwidth = 0.2 n^(-1/(d+4)) x range (Scott's rule as
 * in BOHB). Categorical: one-hot plus prior_weight / (n+1) on every choice,
 * normalised; the prior is uniform. Weights: 1 for each of the newest 25
 * observations, a linear ramp from 1/n up to 1 for the older ones, and
 * prior_weight for the prior; normalised. gamma(n) = min(ceil(gamma n),
 * max_good), or BOHB's max(ceil(gamma n), min_good).
 *
 * Univariate mode (Optuna's default): each parameter is proposed on its own
 * from the observations where it is active (the split is over all of them,
 * as in Optuna); multivariate mode: components are whole observations, and
 * a parameter inactive in an observation contributes its prior to that
 * component (so conditional spaces need no imputation).
 *
 * Cost: O(n log n + n_candidates x n x d) per proposal, O(n d) memory; the
 * caller bounds n (proposer.c keeps the best observations and a window of
 * the newest). Deterministic given the rng. */
#ifndef BD_MODEL_TPE_H
#define BD_MODEL_TPE_H

#include <stddef.h>

#include "../rng.h"

/* At most this many dimensions and candidates, which with the caller's
 * bound on n keep a proposal under about 0.2 s (d 100, n 1000, 100
 * candidates: 2 x 10^7 kernel evaluations). */
#define BD_TPE_MAX_DIM 100
#define BD_TPE_MAX_CANDIDATES 100

typedef struct bd_tpe_dim {
    int n_choices;    /* > 0: categorical with that many choices; 0: numeric */
    double low, high; /* numeric: the coordinate's range (low < high) */
    double step;      /* numeric: 1 for a linear integer (bin mass), else 0 (density) */
} bd_tpe_dim;

typedef struct bd_tpe_opts {
    double gamma;     /* fraction of the observations in the good group (Optuna 0.1, BOHB 0.15) */
    int min_good;     /* at least this many in it (Optuna 0, BOHB d + 1) */
    int max_good;     /* at most this many (Optuna 25; BOHB no bound) */
    double prior_weight; /* weight of the prior component (Optuna 1.0) */
    int n_candidates; /* points drawn from l per proposal (Optuna 24) */
    int multivariate; /* 0: one parameter at a time (Optuna's default); 1: joint (BOHB) */
} bd_tpe_opts;

/* Optuna 3.1's defaults. */
void bd_tpe_opts_default(bd_tpe_opts *o);

/* The size of the good group for n observations:
 * min(max(ceil(gamma n), min_good), max_good, n). */
size_t bd_tpe_n_good(const bd_tpe_opts *o, size_t n);

/* Proposes one point into out[0..d-1] (every coordinate set, categorical as
 * an index; the caller drops what ends up inactive). x: n rows of d
 * coordinates, row-major, oldest first (the weights favour the newest);
 * loss: n losses (+INFINITY allowed, ranks last). known_bad: NULL, or one
 * flag per row: a flagged row is in the bad group whatever its loss and
 * does not count in gamma(n) (a multi-fidelity caller's configs that were
 * not promoted to the budget the others are ranked at). log_cost: NULL, or
 * per row the log of what a unit of budget cost it (seconds; NAN unknown):
 * a candidate's score is then log l - log g minus its predicted log cost,
 * a kernel regression of the known ones with the estimator's kernels and
 * bandwidth rules (expected improvement per second, Snoek, Larochelle,
 * Adams, NeurIPS 2012, section 3.2, in TPE's log-ratio form); with fewer
 * than two known costs it is left out. With n == 0 the proposal is a draw
 * from the priors. Ties in loss go to the older observation. */
void bd_tpe_propose(const bd_tpe_dim *dims, size_t d, const double *x, const double *loss,
                    const unsigned char *known_bad, const double *log_cost, size_t n, const bd_tpe_opts *o,
                    bd_rng *rng, double *out);

/* The proposal of bd_tpe_propose with the split given by the caller:
 * good[i] 1 puts row i in the good group (l), 0 in the bad group (g).
 * good_weight: NULL (Optuna's default_weights over the good rows in
 * arrival order), or per row of x the weight of a good row (Optuna's
 * predetermined weights for MOTPE), normalised together with the prior's.
 * No cost model. */
void bd_tpe_propose_split(const bd_tpe_dim *dims, size_t d, const double *x, const unsigned char *good,
                          const double *good_weight, size_t n, const bd_tpe_opts *o, bd_rng *rng, double *out);

/* Optuna 3.1's TPESampler split of n observations into n_good "below" and
 * the rest (_split_observation_pairs), and MOTPE's weights of the below
 * ones (_calculate_weights_below_for_multi_objective):
 * - losses: n rows of m minimized values, oldest first; violation: NULL
 *   (no constraints) or per row the total violation (0: feasible).
 * - With constraints: when at most n_good rows are feasible, below is the
 *   feasible ones and then the least violating (ties to the older); else
 *   the feasible rows are split by loss and every infeasible one is above.
 * - One objective: the n_good smallest losses (ties to the older).
 * - Several: whole non-dominated ranks while they fit, then the rest of
 *   the next rank by greedy hypervolume subset selection (_solve_hssp:
 *   the point adding the most volume first, the first such on ties) with
 *   the reference max(1.1 w, 0.9 w) of that rank's worst point w (0 ->
 *   1e-12).
 * good[i] is set to 1 for below rows, else 0. With m > 1, good_weight[i]
 * (n entries; set for below rows) is MOTPE's: each feasible below row's
 * hypervolume contribution among the feasible below rows (+1e-12), over the
 * largest, or 1 when it is alone; an infeasible below row gets 1e-12.
 * Non-finite losses (diverged runs, +INFINITY) take no part in a volume: a
 * rank of them is filled in arrival order, and their weight is 1e-12.
 * Cost: O(m n f) for the f rows of the ranks peeled (all n at worst), plus
 * the selection's hypervolumes of at most n_good points: O(f n_good) of
 * them at worst, usually far fewer (they are evaluated lazily). */
void bd_tpe_split(const double *losses, size_t m, const double *violation, size_t n, size_t n_good,
                  unsigned char *good, double *good_weight);

/* Log density of the Parzen estimator fitted to the m rows x[rows[0..m-1]]
 * (in that order, oldest first) at point, over the dimensions listed in
 * only (n_only of them; all d when only is NULL). In univariate mode the
 * rows where a listed dimension is inactive are left out. Exposed for the
 * tests, which compare it with Optuna's _ParzenEstimator.log_pdf. */
double bd_tpe_log_pdf(const bd_tpe_dim *dims, size_t d, const double *x, const size_t *rows, size_t m,
                      const bd_tpe_opts *o, const size_t *only, size_t n_only, const double *point);

#endif
