/* tpe.c: `tpe`, random search (random.h's loop) with its configs from the
 * Tree-structured Parzen Estimator (proposer.h, server/model/tpe.h;
 * Bergstra et al. 2011 with Optuna 3.1's defaults). Every trial is a fresh
 * config, trained at the full budget (resource.max); tpe learns from every
 * completed trial and warm start (PRIOR) and ignores running ones (as
 * Optuna's default does). Options: max_trials as random search, and the
 * proposer's (BD_PROPOSER_OPTIONS), whose sampler must be "tpe".
 *
 * A study with several objectives or constraints is tpe_mo.c's (MOTPE and
 * constraints_func as Optuna 3.1's TPESampler): create() hands it there,
 * and the scheduler it builds carries tpe_mo.c's ops. */
#include "sched.h"

#include "proposer.h"
#include "random.h"
#include "stopping_rule.h"
#include "tpe_mo.h"

extern const struct bd_sched_ops bd_sched_tpe;

static int tpe_create(const bd_study_def *def, bd_sched **out, bd_err *err)
{
    static const char *const known[] = {"max_trials", BD_PROPOSER_OPTIONS, BD_STOP_RULE_OPTION, NULL};
    if (def->n_objectives > 1 || def->n_constraints > 0)
        return bd_tpe_mo_create(def, known, out, err);
    return bd_random_create(&bd_sched_tpe, def, known, "tpe", 1, out, err);
}

const struct bd_sched_ops bd_sched_tpe = {
    .abi = BD_SCHED_ABI,
    .name = "tpe",
    .create = tpe_create,
    .suggest = bd_random_suggest,
    .observe = bd_random_observe,
    .status = bd_random_status,
    .describe = bd_random_describe,
    .destroy = bd_random_destroy,
    .takes_enqueued = 1,
    .learns_from_prior = 1,
    .held_bytes = bd_random_held_bytes,
    .multi_objective = 1,   /* through tpe_mo.c */
    .takes_constraints = 1, /* through tpe_mo.c */
};
