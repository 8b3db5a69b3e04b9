/* engine_json.c: the JSON shapes of trials and studies in API answers
 * (api/openapi.yaml describes them). */
#include "engine_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A budget prints as an integer when the resource is integral. */
static json_t *budget_json(const study_rt *st, double budget)
{
    if (st->spec.def.resource_integer && budget == floor(budget) && fabs(budget) < 9e15)
        return json_integer((json_int_t)budget);
    return json_real(budget);
}

static json_t *loads_or_null(const char *text)
{
    json_t *v = text ? json_loads(text, 0, NULL) : NULL;
    return v ? v : json_null();
}

json_t *bd_engine_trial_json(const study_rt *st, const bd_trial_row *row)
{
    json_t *t = json_object();
    json_object_set_new(t, "id", json_integer(row->id));
    json_object_set_new(t, "study_id", json_integer(row->study_id));
    json_object_set_new(t, "config_id", json_integer(row->config_id));
    json_object_set_new(t, "config", loads_or_null(row->config));
    json_object_set_new(t, "budget", budget_json(st, row->budget));
    json_object_set_new(t, "resume_from", row->resume_from ? json_integer(row->resume_from) : json_null());
    if (row->extra)
        json_object_set_new(t, "scheduler", loads_or_null(row->extra));
    json_object_set_new(t, "state", json_string(bd_trial_state_name(row->state)));
    json_object_set_new(t, "worker", row->worker ? json_string(row->worker) : json_null());
    json_object_set_new(t, "created_at", json_real(row->created_at));
    if (row->state == BD_TRIAL_RUNNING)
        json_object_set_new(t, "lease_expires_at", json_real(row->lease_expires_at));
    else
        json_object_set_new(t, "finished_at", json_real(row->finished_at));
    if (row->has_value)
        json_object_set_new(t, "value", isnan(row->value) ? json_null() : json_real(row->value));
    if (row->timeout)
        json_object_set_new(t, "timeout", json_true());
    if (row->reason)
        json_object_set_new(t, "reason", json_string(row->reason));
    if (row->has_instance)
        json_object_set_new(t, "instance", json_pack("{s:I, s:s?}", "index", (json_int_t)row->instance_index,
                                                     "name", row->instance_name));
    return t;
}

static json_t *incumbent_json(bd_engine *e, const study_rt *st, const best_trial *b)
{
    bd_trial_row row = {0};
    bd_err err;
    if (!b->trial_id || bd_store_trial_get(e->store, b->trial_id, &row, &err))
        return json_null();
    json_t *inc = json_pack("{s:I, s:I, s:o, s:f, s:o}", "trial_id", (json_int_t)row.id, "config_id",
                            (json_int_t)row.config_id, "config", loads_or_null(row.config), "value",
                            st->spec.def.maximize ? -b->loss : b->loss, "budget", budget_json(st, row.budget));
    bd_store_trial_row_clear(&row);
    return inc;
}

/* running / waiting / done, from the limits and the scheduler's status():
 * a read never asks the scheduler to propose anything. */
static const char *study_state(const study_rt *st)
{
    if (bd_engine_limit_reached(st))
        return "done";
    switch (st->sched->ops->status(st->sched)) {
    case BD_STATUS_RUNNING:
        return "running";
    case BD_STATUS_WAITING:
        return "waiting";
    case BD_STATUS_DONE:
        break;
    }
    return "done";
}

static json_t *usage_json(const study_rt *st)
{
    return json_pack("{s:I, s:f, s:f}", "trials", (json_int_t)st->used.trials, "resource", st->used.resource,
                     "seconds", st->used.seconds);
}

json_t *bd_engine_study_json(bd_engine *e, study_rt *st)
{
    json_t *j = json_deep_copy(st->spec.normalized);
    json_t *counts = json_object();
    json_t *state = NULL;
    int64_t total = 0;
    json_object_set_new(j, "id", json_integer(st->id));
    json_object_set_new(j, "owner", json_string(st->owner));
    json_object_set_new(j, "created_at", json_real(st->created_at));
    json_object_set_new(j, "last_activity_at", json_real(st->last_activity_at));
    for (int s = 0; s < BD_TRIAL_NSTATES; s++) {
        json_object_set_new(counts, bd_trial_state_name((bd_trial_state)s), json_integer(st->counts[s]));
        total += st->counts[s];
    }
    json_object_set_new(counts, "total", json_integer(total));
    json_object_set_new(j, "trials", counts);
    if (st->sched->ops->describe(st->sched, &state) || !state)
        state = json_object();
    json_t *own_incumbent = json_object_get(state, "incumbent");
    json_object_set_new(j, "incumbent", own_incumbent ? json_incref(own_incumbent) : incumbent_json(e, st, &st->best));
    json_object_set_new(j, "incumbent_full_budget", incumbent_json(e, st, &st->best_full));
    json_object_set_new(json_object_get(j, "scheduler"), "state", state);
    const char *status = study_state(st);
    json_object_set_new(j, "state", json_string(status));
    json_object_set_new(j, "done", json_boolean(strcmp(status, "done") == 0));
    json_object_set_new(j, "used", usage_json(st));
    return j;
}
