/* proposer.h: where a scheduler's new configs come from. random, tpe,
 * successive_halving, hyperband and asha hand out a fresh config through a
 * proposer, chosen by the option "sampler":
 *
 * - "random": bd_space_sample, as before this option existed;
 * - "tpe": the Tree-structured Parzen Estimator (server/model/tpe.h) fitted
 *   on the results at one budget. With several budgets (multi-fidelity) it
 *   is the largest budget with at least n_startup_trials results, as BOHB
 *   does (Falkner et al. 2018, section 3.1); below that, configs are random.
 *   The good group is the best at that budget; the bad group is the rest
 *   there plus the configs that never reached it (not promoted: known to
 *   rank below those that were). A fraction random_fraction of proposals
 *   stays random (BOHB keeps 1/3), so the worst case stays that of random
 *   search / Hyperband.
 * - "gp": a Gaussian process (bo_model.h's engine: Matérn-5/2 ARD, refits
 *   on bd_gp_refit_due's schedule) fitted on the results at the same
 *   budget TPE would use, proposing the argmax of log expected improvement
 *   over the best loss at that budget (per predicted second with
 *   cost_aware, from a second GP on the log seconds per unit of budget).
 *   The configs with results only below that budget are hallucinated at it
 *   (GP-BUCB: they lower the variance, not the mean), so the many new
 *   configs ASHA and Hyperband ask for between two results at the model's
 *   budget are not all the same point. The same random_fraction applies.
 *
 * Options (shared by every scheduler that takes a proposer; each reads them
 * with bd_proposer_create and lists BD_PROPOSER_OPTIONS among its known
 * keys; defaults for one budget as Optuna 3.1, for several as BOHB):
 * sampler, n_startup_trials (10 / d + 3), n_ei_candidates (24), gamma
 * (0.1 / 0.15), prior_weight (1 / 0.001), multivariate (false / true),
 * random_fraction (0 / 1/3), cost_aware (true: when workers report
 * elapsed_seconds, a candidate's score is per predicted second, so the
 * model does not drift to slow configs that learn more per epoch; see
 * tpe.h). docs/SCHEDULERS.md has the table.
 *
 * Purity (sched.h): the proposer's state is the list of results it was
 * given (bd_proposer_add, from COMPLETED events), in arrival order; a
 * proposal is a pure function of that list and the rng. TPE fits nothing
 * between proposals. The GP keeps, per budget, a model that a proposal
 * rebuilds when it is stale; by bo_model.h's refit rule the model of the
 * first k results at a budget is a function of those k results alone
 * (hyperparameters fitted at the refit point from the prior mean with an
 * rng seeded from the study seed and the budget), whenever it is rebuilt,
 * so a replay needs no hook either.
 *
 * Cost: a proposal is O(N) over all N results to pick the rows, plus
 * O(n log n + 24 n d) for the n <= 2 BD_PROPOSER_WINDOW rows it fits on
 * (the newest; the best at the model's budget are always kept). Memory:
 * d + 4 numbers per result. GP: a stale model's rebuild O(cap^3) (plus a
 * refit on the O(log n) refit points), the hallucinated model
 * O((cap + 64)^3) and the acquisition's search O(candidates x cap^2), as
 * gp_ucb's suggest (~20 ms at cap 192, 8 parameters); 3 d + 4 numbers per
 * result. */
#ifndef BD_PROPOSER_H
#define BD_PROPOSER_H

#include <jansson.h>

#include "../model/tpe.h"
#include "sched.h"

/* Option keys a scheduler with a proposer must accept (for bd_opt_known). */
#define BD_PROPOSER_OPTIONS                                                                                            \
    "sampler", "n_startup_trials", "n_ei_candidates", "gamma", "prior_weight", "multivariate", "random_fraction",      \
        "cost_aware"

/* At most this many results of one budget are fitted on: the best
 * bd_tpe_n_good of all of them plus the newest others. Older results weigh
 * little in TPE anyway (the weights ramp down to 1/n). */
#define BD_PROPOSER_WINDOW 1000

typedef struct bd_proposer bd_proposer;

/* The coordinate system of model/tpe.h for parameter p: log scale for log
 * parameters, each integer owning the bin around it, a categorical's
 * choices. Shared with tpe_mo.c, which fits the same estimators. */
bd_tpe_dim bd_proposer_tpe_dim(const bd_param *p);

/* Reads the options above from def->options (err->field
 * "scheduler.options.<key>"). dflt_sampler is the sampler when the option is
 * absent; multi_fidelity selects BOHB's defaults over Optuna's. *out is new
 * (bd_proposer_free). */
int bd_proposer_create(const bd_study_def *def, const char *dflt_sampler, int multi_fidelity, bd_proposer **out,
                       bd_err *err) BD_MUST_CHECK;
void bd_proposer_free(bd_proposer *p); /* NULL-safe */

/* The sampler's name (static): "random", "tpe" or "gp". */
const char *bd_proposer_sampler(const bd_proposer *p);
/* The heap p holds, on the safe side: every result it keeps (a learning
 * sampler keeps them all) and, for "gp", each budget's model. */
size_t bd_proposer_held_bytes(const bd_proposer *p);

/* Takes in one result: config number config_id (borrowed config) reached
 * loss at budget, and the worker reported `seconds` (NAN: not reported)
 * for the `units` of budget this trial trained (budget minus what it
 * resumed from). A config that does not fit the space is ignored (never
 * happens for stored events). */
void bd_proposer_add(bd_proposer *p, int64_t config_id, const json_t *config, double budget, double loss,
                     double seconds, double units);

/* The same for a config kept as text (json_util.h's bd_json_text), parsed
 * only when the sampler learns: random search leaves it unread. */
void bd_proposer_add_text(bd_proposer *p, int64_t config_id, const char *config, double budget, double loss,
                          double seconds, double units);

/* Makes p learn from several objectives and constraints (before any
 * result): results then come through bd_proposer_add_mo, and "tpe" splits
 * them as tpe_mo.c does (bd_tpe_split: feasible first when constrained,
 * non-dominated ranks, MOTPE's weights when m > 1), with no cost model.
 * m >= 1; constrained: violations count. With m >= 4 the good group holds
 * at most 25 results (Optuna's bound: the hypervolumes of a larger one cost
 * minutes). Random search and "gp" are as before ("gp" models losses[0];
 * asha refuses it with several objectives). */
void bd_proposer_set_objectives(bd_proposer *p, size_t m, int constrained);
/* bd_proposer_add with m minimized losses (borrowed; losses[0] is the
 * scalar loss) and the violation (0: feasible; sched.h's). */
void bd_proposer_add_mo(bd_proposer *p, int64_t config_id, const json_t *config, double budget, const double *losses,
                        double violation, double seconds, double units);
void bd_proposer_add_text_mo(bd_proposer *p, int64_t config_id, const char *config, double budget,
                             const double *losses, double violation, double seconds, double units);

/* A new config (new reference). Changes nothing but the GP's cache: the
 * model of the budget it proposes from, rebuilt when stale (a pure
 * function of the results, see Purity). */
json_t *bd_proposer_propose(bd_proposer *p, bd_rng *rng);

/* {"sampler", "results": {budget: count, ...}, "model_budget": b|null} for
 * describe(). New reference. */
json_t *bd_proposer_describe(const bd_proposer *p);

#endif
