/* parego.h: Bayesian optimisation of several objectives under constraints
 * by random scalarizations (ParEGO: Knowles, IEEE TEC 10(1), 2006) and the
 * probability of feasibility (Gardner et al., ICML 2014; Gelbart, Snoek,
 * Adams, UAI 2014); docs/ALGORITHMS.md section 11.5.
 *
 * One proposal: draw a weight vector w uniformly from the simplex (m
 * exponentials normalised by their sum; BoTorch's sample_simplex; Knowles
 * draws from a fixed lattice of s = 10 divisions instead), normalise each
 * objective to [0, 1] over the observations (min-max over the finite
 * values; a diverged one counts as 1, a flat objective as 0), scalarize
 * every observation by the augmented Chebyshev function
 *   f_w(x) = max_k (w_k f_k(x)) + rho sum_k w_k f_k(x),  rho = 0.05,
 * fit a GP to those values (Matérn-5/2 with ARD, standardised outputs, the
 * hyperparameters by maximum a posteriori from the prior mean), and
 * maximise the acquisition over the unit cube (acq.h):
 *   log EI(x) + log P(c(x) <= 0)   ("logei"), or
 *   -mu(x) + mult sigma(x)         ("ucb", no constraints),
 * where c is a second GP fitted on the observations' violations (0 when
 * feasible, > 0 by how much the constraints fail) and EI is taken over the
 * best scalarized value among the feasible observations. Before any
 * observation is feasible the score is log P(c(x) <= 0) alone (Gardner et
 * al., section 3). sigma comes from the objective GP with the running
 * trials added as observations (GP-BUCB's hallucination, bo_model.h).
 *
 * Every observation, feasible or not, trains the objective GP; the training
 * sets are capped as gp.h's bd_gp_select does (BD_GP_TRAIN_CAP points:
 * the BD_GP_TRAIN_BEST best plus the most recent).
 *
 * No global state: a proposal is a function of its inputs and the rng.
 * Cost: O(n m) for the scalarization plus two fits of at most
 * BD_GP_TRAIN_CAP points (O(iterations x cap^3)) and the acquisition's
 * O(candidates x cap^2). */
#ifndef BD_MODEL_PAREGO_H
#define BD_MODEL_PAREGO_H

#include <stddef.h>

#include "../common.h"
#include "../rng.h"
#include "acq.h"

#define BD_PAREGO_RHO 0.05 /* the augmentation of the Chebyshev function (Knowles, section III) */

/* Draws w (m entries, m >= 1) uniformly from the simplex {w >= 0, sum 1}:
 * w_k = e_k / sum e with e_k = -log(1 - U_k). m == 1 draws nothing (w = 1). */
void bd_parego_weights(size_t m, bd_rng *rng, double *w);

/* Normalises the n rows of losses (n x m, row-major, minimised, +INFINITY
 * or NAN for a diverged run) into out (n x m): per objective k,
 * (f - min_k) / (max_k - min_k) over its finite values; 0 when the finite
 * values are all equal; 1 for a non-finite one (and for all of them when
 * none is finite). out may not alias losses. */
void bd_parego_normalize(size_t n, size_t m, const double *losses, double *out);

/* The augmented Chebyshev value of one normalised row f (m entries) under
 * weights w: max_k (w_k f_k) + rho sum_k w_k f_k. */
double bd_parego_chebyshev(size_t m, const double *w, const double *f, double rho);

/* bd_parego_normalize, then bd_parego_chebyshev with BD_PAREGO_RHO, of
 * every row: y (n entries). */
void bd_parego_scalarize(size_t n, size_t m, const double *losses, const double *w, double *y);

/* log P(c <= 0) for c ~ N(mu, sd^2): log Phi(-mu / sd), without underflow
 * far in the tail (GSL's log erfc). sd <= 0: 0 when mu <= 0, else -INFINITY. */
double bd_parego_log_pof(double mu, double sd);

enum { BD_PAREGO_LOGEI = 0, BD_PAREGO_UCB = 1 };

typedef struct bd_parego_input {
    size_t d;                  /* coordinates of an observation */
    const unsigned *n_choices; /* d entries: 0 numeric, else the categorical's K (kernel.h); borrowed */
    size_t m;                  /* objectives, >= 1 */
    size_t n;                  /* observations, >= 1 */
    const double *X;           /* n x d coordinates */
    const double *losses;      /* n x m minimised losses (+INFINITY: diverged) */
    const double *violation;   /* n violations (0 feasible; +INFINITY diverged), or NULL: unconstrained */
    int acquisition;           /* BD_PAREGO_* (UCB only without violation) */
    double ucb_multiplier;     /* UCB's multiplier of sigma */
    size_t n_run;              /* running trials to hallucinate */
    const double *const *run_x; /* n_run rows of d coordinates, borrowed */
    size_t n_candidates;        /* the acquisition's space-filling candidates; 0: acq.h's default */
} bd_parego_input;

/* What a proposal used, for describe() and the tests. */
typedef struct bd_parego_trace {
    double w[8];           /* the weights drawn (first min(m, 8)) */
    size_t training_points; /* of the objective GP */
    size_t constraint_points; /* of the constraint GP (0: none fitted, every observation feasible) */
    size_t feasible;       /* feasible observations */
    double best;           /* the incumbent's scalarized value (+INFINITY: none feasible) */
} bd_parego_trace;

/* One ParEGO proposal over the problem p (its score and score_ctx are set
 * here; p's dims and activity are the caller's): draws w from rng, fits the
 * models with rng, maximises the acquisition with rng, and writes the point
 * to u (d coordinates). trace (may be NULL) receives what it used. Starts
 * the local search from the 4 best feasible training points by scalarized
 * value (any 4 best when none is feasible). BD_EINTERNAL when a fit fails
 * numerically everywhere. */
int bd_parego_propose(const bd_parego_input *in, const bd_acq_problem *p, bd_rng *rng, double *u,
                      bd_parego_trace *trace, bd_err *err) BD_MUST_CHECK;

#endif
