/* tpe_mo.h: `tpe` for a study with several objectives or constraints
 * (tpe_mo.c): Optuna 3.1's TPESampler with several directions (MOTPE) and
 * its constraints_func. tpe.c hands such a study here; a one-objective
 * study without constraints never comes here, so its decisions stay those
 * of random.h's loop with the proposer. */
#ifndef BD_SCHED_TPE_MO_H
#define BD_SCHED_TPE_MO_H

#include "sched.h"

/* create() of `tpe` for def->n_objectives > 1 or def->n_constraints > 0.
 * known: the option keys `tpe` accepts (bd_opt_known). *out is new; its
 * ops are tpe_mo.c's (named "tpe", flags as bd_sched_tpe's). */
int bd_tpe_mo_create(const bd_study_def *def, const char *const *known, bd_sched **out, bd_err *err) BD_MUST_CHECK;

#endif
