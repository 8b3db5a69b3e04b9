/* bo_model.h: the outer GP of the Bayesian-optimisation schedulers
 * (gp_ucb.c, bo_bos.c): their observations in arrival order, the model
 * rebuilt from them, GP-BUCB hallucination of running trials, and the
 * GP-UCB proposal (Srinivas et al., ICML 2010; Desautels et al., JMLR 2014;
 * docs/ALGORITHMS.md sections 6-8).
 *
 * An observation is a point of D coordinates and a loss: the d coordinates
 * of bd_space_encode, plus, with `fidelity`, a last column n/N (BO-BOS's
 * [x, n/N]). Proposals and hallucinated running trials sit at full fidelity
 * (the last column 1).
 *
 * The model (server/model/): Matérn-5/2 with ARD over the D coordinates
 * (categoricals by Hamming distance), standardised outputs, the training set
 * capped at BD_GP_TRAIN_CAP points (the BD_GP_TRAIN_BEST best plus the most
 * recent), hyperparameters refitted by maximum marginal likelihood on the
 * schedule of bd_gp_refit_due (bd_bo_model_refit_point).
 *
 * Purity (sched.h): the model is a function of the completed trials alone.
 * A refit at observation count s uses exactly the first s observations and
 * an rng seeded from (study seed, s), starting from the prior mean, never
 * from the previous fit; between refits the hyperparameters stay and the
 * data are rebuilt from scratch (O(cap^3), ~2 ms at cap 192), never updated
 * incrementally. So a replay, which rebuilds once in replayed(), holds the
 * same numbers bit for bit as the live scheduler that rebuilt after each
 * completion, and proposes the same next trials. The model of the first n
 * observations (bd_bo_model_at) is thus a function of n alone.
 *
 * Values: a diverged run (loss +INFINITY) counts as the worst finite loss
 * among the observations the model is built from.
 *
 * Cost: rebuild O(cap^3) plus, on the O(log n) refit points, the fit;
 * propose O(candidates x cap^2) (35 ms at 2,000 trials in 8 dimensions,
 * tests/bench/gp_latency.c). */
#ifndef BD_BO_MODEL_H
#define BD_BO_MODEL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "../model/gp.h"
#include "sched.h"

typedef struct bd_bo_model bd_bo_model;

enum { BD_BO_MULT_PAPER, BD_BO_MULT_CODE };
enum { BD_BO_ACQ_UCB, BD_BO_ACQ_LOGEI };

/* GP-UCB's multiplier m_t of sigma (options "multiplier" and "delta"):
 *   "paper": sqrt(beta_t), beta_t = 2 log(|D| t^2 pi^2 / (6 delta)), |D|
 *            the number of acquisition candidates, t = the trial's index;
 *   "code":  0.2 D ln(2t), the BO-BOS authors' code (D coordinates, the
 *            fidelity column counted). */
typedef struct bd_bo_ucb {
    int acquisition;      /* BD_BO_ACQ_*: option "acquisition" */
    int multiplier;       /* BD_BO_MULT_* */
    double delta;         /* the paper's confidence parameter */
    int cost_aware;       /* option "cost_aware": log EI minus the predicted log cost */
    double cost_exponent; /* option "cost_exponent": alpha of EI / cost^alpha */
    int initial;          /* BD_BO_INIT_*: option "initial", the design of the first n_init trials */
    int warp;             /* BD_BO_WARP_*: option "warp", the loss model's output transform */
} bd_bo_ucb;

enum { BD_BO_INIT_RANDOM, BD_BO_INIT_SOBOL };
enum { BD_BO_WARP_NONE, BD_BO_WARP_QUANTILE };

/* Option "acquisition": "ucb" (GP-UCB with the multiplier above; the
 * default of studies stored before the option existed) or "logei", the
 * logarithm of expected improvement over the best full-budget loss seen,
 * computed without underflow far from it (Ament et al., "Unexpected
 * improvements to expected improvement", NeurIPS 2023): EI vanishes
 * numerically away from the incumbent and its optimiser then sees a flat
 * surface; log EI keeps a gradient to follow. Running trials enter
 * through sigma as for UCB (the hallucinated model). New gp_ucb studies
 * get log EI (gp_ucb.c, gp_new_study_defaults); bo_bos keeps UCB, its
 * paper's outer loop. */

/* Option "cost_aware" (false unless given: studies stored before it
 * existed replay unchanged): expected improvement per second (Snoek,
 * Larochelle, Adams, NIPS 2012, section 3.2): the score is log EI(x) minus
 * mu_c(x), the mean of a second GP fitted on the log of the seconds each
 * observation cost per unit of budget (as workers report elapsed_seconds),
 * over the d configuration coordinates. Without it the GP drifts to slow
 * configs (small batches learn more per epoch, so they look better per
 * trial) and trains fewer of them in the same time. Needs "acquisition":
 * "logei" (UCB can be negative, so it has no ratio). Until 3 observations
 * carry a cost the score is plain log EI. The cost model follows the
 * purity rule below, with its own refit rng (salt ^ BD_BO_COST_SALT).
 * Option "cost_exponent" alpha in [0, 1] (default 1: Snoek et al.): the
 * score is log EI - alpha mu_c, i.e. EI / cost^alpha, the form of Lee et
 * al.'s cost-cooling (CArBO, 2020), which lowers alpha as a known budget
 * is spent; a study has no known budget, so alpha stays fixed. With
 * alpha 1 the search can drift to cheap configs that are poor.
 *
 * Option "initial": "random" (bd_space_sample, the default of studies stored
 * before the option existed) or "sobol": trial k < n_init is the k-th point
 * of a Sobol sequence with a digital shift drawn from the study seed
 * (server/model/sobol.h), decoded by bd_space_decode: the start covers the
 * cube evenly instead of by chance.
 *
 * Option "warp": "none" (the default of stored studies) or "quantile": the
 * loss model is fitted on the normal scores of the losses' ranks instead
 * of the losses (a Gaussian copula, Salinas et al., ICML 2020), so a few
 * diverged or very bad configs do not set the scale the good region is
 * modelled on; EI is then computed in those units. */

/* Reads options "acquisition", "multiplier" ("paper" default, or "code")
 * and "delta" (0.1 default, in [1e-9, 0.999999]) with the bd_opt_* helpers;
 * cost_aware off, initial random. */
int bd_bo_ucb_read(const json_t *options, bd_bo_ucb *out, bd_err *err) BD_MUST_CHECK;
/* Then, for gp_ucb and bo_bos (rising_bandits has its own "cost_aware"):
 * options "cost_aware", "initial" and "warp"; cost_aware with "ucb" is BD_EINVAL
 * (field scheduler.options.cost_aware). */
int bd_bo_start_cost_read(const json_t *options, bd_bo_ucb *out, bd_err *err) BD_MUST_CHECK;

typedef struct bd_bo_model_options {
    const char *name; /* the scheduler, prefixes error messages; borrowed */
    int fidelity;     /* 1: observations carry the column n/N after the d coordinates */
    uint64_t salt;    /* per scheduler: refits seed their rng from (study seed ^ salt, s) */
    bd_bo_ucb ucb;
    size_t n_candidates; /* the acquisition's space-filling candidates; 0: bd_acq_options_default's */
} bd_bo_model_options;

/* An empty model over def's space (def borrowed: it must outlive the
 * model). BD_EINVAL (field "parameters") when the space cannot be searched
 * by the acquisition (bd_acq_space_new). *out is new (bd_bo_model_free). */
int bd_bo_model_new(const bd_study_def *def, const bd_bo_model_options *opt, bd_bo_model **out,
                    bd_err *err) BD_MUST_CHECK;
void bd_bo_model_free(bd_bo_model *m); /* NULL-safe */
/* The heap m holds, on the safe side (0 for NULL): its observations and
 * its GPs (at most BD_GP_TRAIN_CAP points each, a factor of their square). */
size_t bd_bo_model_held_bytes(const bd_bo_model *m);

/* Appends an observation: x (d coordinates, copied), at fidelity (used only
 * with the fidelity column), with loss (+INFINITY: diverged). Does not
 * rebuild. */
void bd_bo_model_add(bd_bo_model *m, const double *x, double fidelity, double loss);
/* The same, with what it cost: `seconds` reported by the worker (NAN: not
 * reported) for `units` of budget trained; the cost model (cost_aware)
 * learns log(seconds / units) when both are positive and finite. */
void bd_bo_model_add_costed(bd_bo_model *m, const double *x, double fidelity, double loss, double seconds,
                            double units);
/* The config of trial number `created` (0-based) of the initial design,
 * option "initial": a bd_space_sample draw from rng, or the created-th
 * shifted Sobol point (a function of the study seed and `created` alone).
 * New reference. */
json_t *bd_bo_model_initial_config(const bd_bo_model *m, size_t created, bd_rng *rng);
size_t bd_bo_model_count(const bd_bo_model *m); /* observations added so far */

/* The observation count of the last refit at or before n, following
 * bd_gp_refit_due from the start: a function of n alone (0: none). */
size_t bd_bo_model_refit_point(size_t n);

/* Rebuilds the current model from all observations (see Purity). On
 * failure there is no current model (bd_bo_model_gp is NULL) and
 * bd_bo_model_error is 1 until the next rebuild. */
void bd_bo_model_rebuild(bd_bo_model *m);
/* The current model, NULL when none (before the first rebuild, no finite
 * observation, or the rebuild failed). Borrowed, valid until the next
 * rebuild. */
const bd_gp *bd_bo_model_gp(const bd_bo_model *m);
int bd_bo_model_error(const bd_bo_model *m); /* the last rebuild failed */
/* 1 when the current model is the one of the first n observations: the last
 * rebuild saw exactly n and succeeded (its model may still be NULL). */
int bd_bo_model_current(const bd_bo_model *m, size_t n);
/* The model of the first n observations (n <= count), as a rebuild at n
 * would have made it; it leaves the current model and fit alone. *out is
 * new, NULL when none of them is finite. */
int bd_bo_model_at(const bd_bo_model *m, size_t n, bd_gp **out, bd_err *err) BD_MUST_CHECK;

/* GP-UCB with GP-BUCB's hallucination: writes to u (d coordinates) the
 * argmax over the unit cube of -mu(x) + m_t sigma(x), mu from the current
 * model and sigma from it with the n_run running trials run_x[i] (d
 * coordinates each, borrowed) added as observations (their values do not
 * matter for the variance; that model keeps no standardisation of its own,
 * so its variance, in the base model's standardised units, is scaled back).
 * t is the trial's index (trials created + 1). starts: n_starts rows of d
 * coordinates that seed the local search (borrowed, may be NULL). The
 * randomness comes from rng only. Needs a current model. */
int bd_bo_model_propose(const bd_bo_model *m, double t, size_t n_run, const double *const *run_x, const double *starts,
                        size_t n_starts, bd_rng *rng, double *u, bd_err *err) BD_MUST_CHECK;

/* Start points for bd_bo_model_propose's local search: up to k distinct
 * training points of the current model (at full fidelity with `fidelity`),
 * lowest value first, written to starts (k rows of d coordinates). Returns
 * how many (0 without a current model). The same rule as bo_bos.c's
 * suggest; gp_ucb.c and rising_bandits.c (for each arm's model) call it. */
size_t bd_bo_model_best_points(const bd_bo_model *m, size_t k, double *starts);

/* The next config of a GP-UCB study over space (the model's space): a
 * random draw for the first n_init trials or while there is no current
 * model, else bd_bo_model_propose seeded by the 4 bd_bo_model_best_points
 * and decoded. created: trials created so far (t = created + 1); run_x:
 * the n_run running trials to hallucinate (borrowed). *out is new. Shared
 * by bo_bos.c and rising_bandits.c (gp_ucb.c seeds its search with the
 * same start points but keeps its own decoding). */
int bd_bo_model_next_config(const bd_bo_model *m, const bd_space *space, size_t created, size_t n_init, size_t n_run,
                            const double *const *run_x, bd_rng *rng, json_t **out, bd_err *err) BD_MUST_CHECK;

/* For describe(): the option "multiplier" ("paper" / "code"; static). */
const char *bd_bo_model_multiplier_name(const bd_bo_model *m);
/* For describe(): the current model as {training_points, lengthscales (D
 * entries), signal_variance, noise_variance, fitted_at, log_posterior,
 * cost_model}, or null; cost_model is null, or {training_points,
 * lengthscales (d entries), fitted_at} of the cost GP. New. */
json_t *bd_bo_model_describe(const bd_bo_model *m);

#endif
