/* random.h: the loop of random search (random.c), for a scheduler that is
 * random search with another proposer (tpe.c): every trial a fresh config
 * from the proposer, trained at the full budget (resource.max); option
 * max_trials (default 0 = unlimited) counts the trials that end with a
 * result, a failed or expired trial giving its slot back. Each function
 * below is the sched.h slot of the same name. */
#ifndef BD_SCHED_RANDOM_H
#define BD_SCHED_RANDOM_H

#include "sched.h"

/* A scheduler of ops running the loop: def->options may name known only
 * (a NULL-ended list holding "max_trials"), configs come from
 * bd_proposer_create's sampler, and an option "sampler" (where known allows
 * one) must name that sampler. With learns 1 the proposer learns from the
 * completed trials and the PRIOR events, and describe shows its model. */
int bd_random_create(const struct bd_sched_ops *ops, const bd_study_def *def, const char *const *known,
                     const char *sampler, int learns, bd_sched **out, bd_err *err) BD_MUST_CHECK;
int bd_random_suggest(bd_sched *s, const bd_suggest_ctx *ctx, bd_suggestion *out, bd_err *err);
int bd_random_observe(bd_sched *s, const bd_observe_ctx *ctx, const bd_event *ev, bd_decision *out, bd_err *err);
bd_sched_status bd_random_status(const bd_sched *s);
int bd_random_describe(const bd_sched *s, json_t **out);
void bd_random_destroy(bd_sched *s);
size_t bd_random_held_bytes(const bd_sched *s);

#endif
