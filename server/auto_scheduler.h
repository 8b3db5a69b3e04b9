/* auto_scheduler.h: the scheduler a study gets when it names none, or names
 * "auto" (issue 40). At creation it chooses from the study's shape and the
 * stored definition says what it chose and why:
 *
 *   "scheduler": {"name": "asha", "options": {...}, "chosen_by": "auto",
 *                 "why": "..."}
 *
 * so a stored study replays as the scheduler it got, whatever later
 * versions of this rule would choose, and GET shows it. The rule, first
 * match:
 *
 * 0. several objectives or constraints: tpe (MOTPE, and Optuna's
 *    constraints_func rules), or nsga2 for several objectives with
 *    limits.trials over 10,000 (auto_scheduler.c says why); with a
 *    resource, trials then run at its max;
 * 1. instances: caps_race (configs raced on problem instances, the
 *    resource being the runtime cap);
 * 2. a resource: asha with random proposals and "fidelity": "winners"
 *    (asha.c, fidelity.h): each budget's cut keeps as many configs as the
 *    study's own configs trained in full show the ones that end best need
 *    there, training in full where low budgets do not rank them (studies
 *    stored before 2026-11-29's second pass keep "measured" and TPE);
 * 3. a top-level categorical whose choices carry their own conditional
 *    parameters (algorithm selection), limits.trials (the horizon) and a
 *    reward scale (goal maximize, or objective.bounds): rising_bandits;
 * 4. otherwise tpe (the GP of gp_ucb was not better than random search on
 *    the benchmark's tables: tests/bench/README-auto.md). A study that
 *    declares no parameters (define-by-run) gets tpe, or asha under rule
 *    2 (its asked parameters drawn at random, the sampler it names).
 *
 * "auto" takes no options (a user who sets options names the scheduler). */
#ifndef BD_AUTO_SCHEDULER_H
#define BD_AUTO_SCHEDULER_H

#include <jansson.h>

#include "space.h"

/* The scheduler object for a study whose normalized definition norm has
 * its objective, resource, instances and limits parsed, and space its
 * declared parameters; has_resource: the definition declared a resource
 * (norm holds a default one otherwise). New reference. */
json_t *bd_auto_scheduler(const json_t *norm, int has_resource, const bd_space *space);

#endif
