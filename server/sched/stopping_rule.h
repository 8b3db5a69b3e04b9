/* stopping_rule.h: the median and percentile stopping rules (Golovin et al.,
 * "Google Vizier", KDD 2017, section 3.2.2; Optuna 3.1's MedianPruner and
 * PercentilePruner, whose decisions these are, bit for bit), for any
 * scheduler that trains every trial at one budget: random, tpe and gp_ucb
 * carry one when their options hold "stopping" (docs/SCHEDULERS.md):
 *
 *   "stopping": {"rule": "median" | "percentile", "percentile": 50,
 *                "startup_trials": 5, "warmup_steps": 0, "interval_steps": 1,
 *                "min_trials": 1}
 *
 * A measurement (step s, loss) of a running trial is answered "stop" when
 * all of these hold (Optuna's PercentilePruner.prune, in its order):
 * - at least max(1, startup_trials) trials of the study have completed
 *   (COMPLETED events with a value; a diverged one, value null, counts as
 *   Optuna's tell(nan), a FAIL; stopped, failed and expired trials never
 *   count, nor do warm-start results, which reported no steps);
 * - s' >= warmup_steps, s' being the largest step the trial has reported;
 * - s' is the trial's first report in its interval: no other step it
 *   reported lies at or above floor((s' - warmup) / interval) * interval
 *   + warmup;
 * then: every value the trial reported diverged (loss +INFINITY: Optuna's
 * NaN) -> stop; else if at least min_trials completed trials reported at
 * step s' exactly, and some of those values are finite, stop when the
 * trial's best loss so far is worse than the percentile of those finite
 * values (numpy's linear interpolation; for a maximized objective the
 * (100 - p)th of the values as reported, as Optuna does). Otherwise go on.
 *
 * A trial's values count only once it completes (Optuna's completed trials);
 * a second report at a step the trial already reported keeps the first
 * value (Optuna ignores it) but is answered again.
 *
 * Purity: the state is a function of the MEASUREMENT and ending events in
 * order, nothing else (no clock, no rng), so a replay rebuilds it exactly.
 *
 * Memory, bounded: per step, the values of the newest BD_STOP_WINDOW
 * completed trials that reported there (a ring in completion order and the
 * finite ones sorted), for at most BD_STOP_MAX_STEPS distinct steps (the
 * first ones completed trials reported; a step beyond has no values, so it
 * never stops a trial); per running trial, its first BD_STOP_MAX_STEPS
 * steps. At most 16 bytes a value: 8 MB at the caps.
 *
 * Cost: a measurement O(log n) (hash lookup, binary searches, the
 * percentile read off the sorted array), plus an O(k) insertion when it
 * comes out of step order; a completion O(k (log S + W)) for its k values
 * (the memmove into a sorted array of at most W doubles). */
#ifndef BD_STOPPING_RULE_H
#define BD_STOPPING_RULE_H

#include <jansson.h>
#include <stddef.h>

#include "sched.h"

#define BD_STOP_WINDOW 512     /* completed trials' values kept per step (the newest) */
#define BD_STOP_MAX_STEPS 1024 /* distinct steps kept (table and each running trial) */

/* The option key a scheduler lists among its known keys. */
#define BD_STOP_RULE_OPTION "stopping"

typedef struct bd_stop_rule bd_stop_rule;

/* Reads def->options' "stopping" (err->field "scheduler.options.stopping"
 * or "scheduler.options.stopping.<key>"). *out is new (bd_stop_rule_free),
 * or NULL when the option is absent (or null): the scheduler then answers
 * every measurement "continue", as before the option existed. A study with
 * several objectives is refused the option (the rules judge one loss). */
int bd_stop_rule_create(const bd_study_def *def, bd_stop_rule **out, bd_err *err) BD_MUST_CHECK;
void bd_stop_rule_free(bd_stop_rule *r); /* NULL-safe */

/* Takes in one event (a scheduler's observe() calls it for every event; r
 * may be NULL: nothing happens): a MEASUREMENT is recorded and answered in
 * *out, a COMPLETED trial's values join the table, a STOPPED, FAILED or
 * EXPIRED trial's are dropped; other events change nothing. */
void bd_stop_rule_observe(bd_stop_rule *r, const bd_event *ev, bd_decision *out);

/* {"rule", "percentile", "startup_trials", "warmup_steps", "interval_steps",
 * "min_trials", "completed", "steps", "judging"} for describe(): the
 * settings, trials completed, steps with values, running trials with
 * values. New reference. */
json_t *bd_stop_rule_describe(const bd_stop_rule *r);

/* The heap r holds, O(1) (a running count). 0 for NULL. */
size_t bd_stop_rule_held_bytes(const bd_stop_rule *r);

#endif
