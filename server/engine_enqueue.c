/* engine_enqueue.c: trials a user gives a study instead of the scheduler
 * (POST /v1/studies/{id}/trials), as Optuna's enqueue_trial / add_trial and
 * Vizier's add-trials do:
 *
 * - enqueue {"config"}: the config waits in the study's queue (storage's
 *   table enqueued and study_rt.queued) until a suggest hands it out in
 *   place of a fresh config the scheduler proposed (engine_studies.c
 *   take_enqueued), at the budget the scheduler chose for it;
 * - warm start {"config", "value"[, "budget"]}: a trial stored completed
 *   at once, e.g. a result of an earlier study. The scheduler sees it as one
 *   PRIOR event if it learns from such results (sched.h learns_from_prior),
 *   else not at all; it counts in the study's trials and incumbent.
 *
 * Both go into the event log like any trial (created, and completed for a
 * warm start), so a replay rebuilds the same scheduler. Calls
 * engine_txn.c and study.c. */
#include "engine.h"
#include "engine_internal.h"
#include "json_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Configs one study may hold enqueued, and parameter values in all: the
 * queue lives in memory while the study is loaded, so a client cannot grow
 * it without bound (a wide space's 1,000 configs would be megabytes). */
#define BD_MAX_ENQUEUED 1000
#define BD_MAX_ENQUEUED_VALUES 100000

typedef struct add_args {
    const json_t *config; /* as sent */
    json_t *canonical;    /* config in canonical form (bd_space_canonical_config: 2, not 2.0, for an int),
                             what is stored and handed out; set under the study's lock */
    int warm_start;    /* "value" or "values" given */
    double value;      /* as reported (not oriented) */
    const json_t *value_json, *values; /* the body's "value" and "values" (borrowed), checked
                                          against the study under its lock */
    const json_t *budget; /* "budget", or NULL: resource.max */
} add_args;

static int parse_add(const json_t *body, add_args *a, bd_err *err)
{
    static const char *const known[] = {"config", "value", "values", "budget", NULL};
    const json_t *value = json_object_get(body, "value"), *values = json_object_get(body, "values");
    int rc = bd_json_reject_unknown(body, "", known, err);
    if (rc)
        return rc;
    memset(a, 0, sizeof *a);
    a->config = json_object_get(body, "config");
    if (!json_is_object(a->config))
        return bd_err_set(err, BD_EINVAL, "config", "is required: an object of parameter values");
    a->budget = json_object_get(body, "budget");
    a->value_json = value;
    a->values = values;
    a->value = NAN;
    if (value) {
        if (!json_is_number(value) || !isfinite(json_number_value(value)))
            return bd_err_set(err, BD_EINVAL, "value", "must be a finite number (the config's known result)");
        a->warm_start = 1;
        a->value = json_number_value(value);
    } else if (values) {
        a->warm_start = 1;
    } else if (a->budget) {
        return bd_err_set(err, BD_EINVAL, "budget", "is only for a warm start (with \"value\")");
    }
    return 0;
}

/* The budget a warm-start result was measured at: resource.max unless
 * given, then within the study's resource bounds. */
static int warm_budget(const study_rt *st, const json_t *given, double *out, bd_err *err)
{
    const bd_study_def *d = &st->spec.def;
    *out = d->r_max;
    if (!given)
        return 0;
    double b = json_is_number(given) ? json_number_value(given) : NAN;
    if (!(b >= d->r_min && b <= d->r_max))
        return bd_err_set(err, BD_EINVAL, "budget", "must be a number from %g to %g (resource.min .. max)", d->r_min,
                          d->r_max);
    if (d->resource_integer && b != floor(b))
        return bd_err_set(err, BD_EINVAL, "budget", "must be a whole number: the resource is integer");
    *out = b;
    return 0;
}

static int enqueue_op(study_rt *st, const add_args *a, bd_write_plan *plan, json_t **answer, bd_err *err)
{
    if (!st->sched->ops->takes_enqueued)
        return bd_err_set(err, BD_EINVAL, "config",
                          "scheduler %s does not take enqueued configs (it chooses its own; spc and caps_race "
                          "take fixed configs in options.configs)",
                          st->sched->ops->name);
    size_t width = bd_space_size(st->spec.def.space);
    if (st->n_queued >= BD_MAX_ENQUEUED || (st->n_queued + 1) * (width ? width : 1) > BD_MAX_ENQUEUED_VALUES)
        return bd_err_set(err, BD_ECONFLICT, "config",
                          "the study's queue is full (at most %d configs and %d parameter values): wait until "
                          "suggests hand them out",
                          BD_MAX_ENQUEUED, BD_MAX_ENQUEUED_VALUES);
    if (bd_study_limit_reached(st) || st->sched->ops->status(st->sched) == BD_STATUS_DONE)
        return bd_err_set(err, BD_ECONFLICT, "config", "the study is done: no suggest would hand the config out");
    plan->enqueue = bd_write_plan_own(plan, json_dumps(a->canonical, JSON_COMPACT | JSON_SORT_KEYS));
    plan->study_id = st->id;
    bd_study_enqueue(st, json_deep_copy(a->canonical)); /* the study's own: the body dies with the request */
    st->dirty = 1; /* the queue now differs from storage until this request commits */
    *answer = json_pack("{s:s, s:O, s:I}", "state", "enqueued", "config", a->canonical, "position",
                        (json_int_t)st->n_queued);
    return 0;
}

static int warm_start_op(bd_engine *e, study_rt *st, const add_args *a, bd_write_plan *plan, json_t **answer,
                         bd_err *err)
{
    double now = bd_now(), budget;
    bd_decision d;
    int rc;
    if (st->spec.def.n_instances)
        return bd_err_set(err, BD_EINVAL, "value",
                          "a study on problem instances takes no warm-start results (a result belongs to an instance)");
    if ((rc = warm_budget(st, a->budget, &budget, err)))
        return rc;
    json_t *parsed = NULL;
    double value = a->value;
    if ((rc = bd_study_spec_parse_values(&st->spec, a->value_json, a->values, 0, &parsed, &value, err)))
        return rc;
    char *values = parsed ? bd_write_plan_own(plan, json_dumps(parsed, JSON_COMPACT | JSON_REAL_PRECISION(17))) : NULL;
    json_decref(parsed);
    if (st->spec.def.has_bounds && !(value >= st->spec.def.bound_low && value <= st->spec.def.bound_high))
        return bd_err_set(err, BD_EINVAL, "value", "must lie within objective.bounds [%g, %g]",
                          st->spec.def.bound_low, st->spec.def.bound_high);
    plan->inserts = bd_xmalloc(sizeof *plan->inserts);
    plan->n_inserts = plan->cap_inserts = 1;
    bd_trial_row *row = &plan->inserts[0];
    memset(row, 0, sizeof *row);
    row->id = bd_engine_take_id(e, 0, plan);
    row->study_id = st->id;
    row->config_id = row->id;
    row->config = bd_write_plan_own(plan, json_dumps(a->canonical, JSON_COMPACT | JSON_SORT_KEYS));
    row->budget = budget;
    row->state = BD_TRIAL_COMPLETED;
    row->origin = BD_ORIGIN_WARM_START;
    row->created_at = row->lease_expires_at = row->finished_at = now;
    row->has_value = 1;
    row->value = value;
    row->values = values; /* the plan's text; the row is the plan's too */
    bd_event_row created = {.study_id = st->id, .trial_id = row->id, .type = BD_EV_CREATED, .value = NAN,
                            .elapsed_seconds = NAN, .created_at = now};
    int64_t created_id = bd_write_plan_push_event(e, plan, &created)->id;
    bd_event_row completed = {.study_id = st->id, .trial_id = row->id, .type = BD_EV_COMPLETED, .has_value = 1,
                              .value = value, .elapsed_seconds = NAN, .created_at = now, .values = values};
    bd_write_plan_push_event(e, plan, &completed);
    /* As replay feeds it (study.c replay_created): one PRIOR at the CREATED
     * event's id, with the declared parameters only. */
    json_t *seen = json_copy(a->canonical);
    bd_study_scheduler_config(&st->spec, seen);
    bd_event ev = {.type = BD_EV_PRIOR, .id = created_id, .trial_id = row->id, .config_id = row->id,
                   .budget = budget, .config = seen, .elapsed_seconds = NAN};
    double losses[BD_STUDY_MAX_OBJECTIVES];
    bd_study_event_losses(st, 1, value, values, &ev, losses);
    if ((row->constrained = st->spec.def.n_constraints > 0))
        row->feasible = ev.violation == 0;
    bd_study_feed(st, &ev, 0, 0, &d);
    json_decref(seen);
    bd_study_touch(st, now);
    *answer = bd_study_trial_json(st, row);
    return 0;
}

/* The operation on the locked study (bd_engine_study_op). */
static int add_trial_op(bd_engine *e, study_rt *st, void *arg, bd_write_plan *plan, json_t **answer, bd_err *err)
{
    add_args *a = arg;
    int rc = bd_study_spec_check_config(&st->spec, a->config, err);
    if (rc)
        return rc;
    /* The declared parameters' values, then the asked ones' (a name
     * neither knows yet is kept as sent). */
    json_t *declared = bd_space_canonical_config(st->spec.space, a->config);
    json_decref(a->canonical); /* a cluster retry (BD_EMOVED) runs this again */
    a->canonical = bd_space_canonical_config(st->spec.asked, declared);
    json_decref(declared);
    return a->warm_start ? warm_start_op(e, st, a, plan, answer, err) : enqueue_op(st, a, plan, answer, err);
}

int bd_engine_add_trial(bd_engine *e, const bd_request *req, int64_t study_id, const json_t *body, json_t **out,
                        bd_err *err)
{
    add_args a;
    int rc = parse_add(body, &a, err);
    if (rc)
        return rc;
    bd_write_plan plan = {0};
    rc = bd_engine_study_op(e, req, study_id, BD_OP_WAIT, add_trial_op, &a, &plan, out, err);
    bd_write_plan_clear(&plan);
    json_decref(a.canonical);
    return rc;
}
