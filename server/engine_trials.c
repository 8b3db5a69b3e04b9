/* engine_trials.c: what workers report about a trial (measurements,
 * completion, failure, heartbeats), reading trials back, and lease expiry.
 *
 * Every report runs under the study's mutex: the scheduler's observe() first
 * (no storage lock held), then the stored events and the trial row update
 * in one short transaction, so they happen together or not at all (engine.c
 * rebuilds the scheduler if the writes fail). */
#include "attrs.h"
#include "engine.h"
#include "engine_internal.h"
#include "json_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_REASON 1000

static int no_trial(int64_t id, bd_err *err)
{
    return bd_err_set(err, BD_ENOTFOUND, NULL, "no trial %lld", (long long)id);
}

/* Plans the event and, when it ends the trial, the trial row's update, and
 * feeds the scheduler. value is as reported (NAN = diverged). */
static void record(bd_engine *e, study_rt *st, bd_trial_row *t, bd_write_plan *plan, bd_event_row *ev,
                   bd_decision *d)
{
    ev->created_at = bd_now();
    if (ev->type != BD_EV_MEASUREMENT && st->spec.def.n_constraints) {
        /* feasible: a completed trial whose every constraint held */
        bd_event probe = {.type = ev->type};
        double losses[BD_STUDY_MAX_OBJECTIVES];
        bd_study_event_losses(st, ev->has_value, ev->value, ev->values, &probe, losses);
        t->constrained = 1;
        t->feasible = ev->type == BD_EV_COMPLETED && probe.violation == 0;
    }
    if (ev->type == BD_EV_COMPLETED) {
        free(t->values); /* the trial's own copy: the plan's text is the event's */
        t->values = ev->values ? bd_xstrdup(ev->values) : NULL;
    }
    if (ev->type != BD_EV_MEASUREMENT) {
        static const bd_trial_state end_state[] = {
            [BD_EV_COMPLETED] = BD_TRIAL_COMPLETED, [BD_EV_FAILED] = BD_TRIAL_FAILED,
            [BD_EV_EXPIRED] = BD_TRIAL_EXPIRED, [BD_EV_STOPPED] = BD_TRIAL_STOPPED};
        t->state = end_state[ev->type];
        t->finished_at = ev->created_at;
        if (ev->type == BD_EV_COMPLETED) {
            t->has_value = 1;
            t->value = ev->value;
            t->timeout = ev->timeout;
        }
        plan->finish = t;
    }
    bd_engine_plan_event(e, st, plan, ev, t, d);
}

static void set_reason(bd_trial_row *t, const char *reason)
{
    free(t->reason);
    t->reason = reason ? bd_xstrdup(reason) : NULL;
}

/* ------------------------------------------------------------- parsing */

/* An optional finite number >= 0; NAN when absent. */
static int opt_seconds(const json_t *body, const char *key, double *out, bd_err *err)
{
    const json_t *v = json_object_get(body, key);
    *out = NAN;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_number(v) || !(json_number_value(v) >= 0) || !isfinite(json_number_value(v)))
        return bd_err_set(err, BD_EINVAL, key, "must be a finite number >= 0");
    *out = json_number_value(v);
    return 0;
}

static int opt_reason(const json_t *body, const char **out, bd_err *err)
{
    const json_t *v = json_object_get(body, "reason");
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v) || json_string_length(v) > MAX_REASON)
        return bd_err_set(err, BD_EINVAL, "reason", "must be a string of at most %d characters", MAX_REASON);
    *out = json_string_value(v);
    return 0;
}

/* "value": a finite number, or null for a diverged run (NAN). */
static int value_member(const json_t *v, double *out, bd_err *err)
{
    if (json_is_null(v)) {
        *out = NAN;
        return 0;
    }
    if (!json_is_number(v) || !isfinite(json_number_value(v)))
        return bd_err_set(err, BD_EINVAL, "value", "must be a finite number, or null for a diverged run");
    *out = json_number_value(v);
    return 0;
}

/* ---------------------------------------------------------- measurement */

typedef struct measure_args {
    double step, value, elapsed;
    const json_t *value_json, *values; /* the body's "value" and "values" (borrowed; NULL when absent) */
} measure_args;

/* The reported values of a complete or measurement, checked against the
 * study under its lock (bd_study_spec_parse_values): *text the stored JSON
 * (the plan's; NULL when the study takes none), *first the first
 * objective's value (untouched when nothing was given). */
static int plan_values(study_rt *st, bd_write_plan *plan, const json_t *value, const json_t *values, int measurement,
                       char **text, double *first, bd_err *err)
{
    json_t *parsed = NULL;
    int rc = bd_study_spec_parse_values(&st->spec, value, values, measurement, &parsed, first, err);
    *text = NULL;
    if (rc)
        return rc;
    if (parsed)
        *text = bd_write_plan_own(plan, json_dumps(parsed, JSON_COMPACT | JSON_REAL_PRECISION(17)));
    json_decref(parsed);
    return 0;
}

static int measure_op(bd_engine *e, study_rt *st, bd_trial_row *t, const void *args, bd_write_plan *plan,
                      json_t **answer, bd_err *err)
{
    const measure_args *a = args;
    double now = bd_now(), value = a->value;
    char *values;
    bd_decision d;
    int rc;
    if ((rc = bd_engine_require_running(t, now, err)) ||
        (rc = plan_values(st, plan, a->value_json, a->values, 1, &values, &value, err)))
        return rc;
    bd_event_row ev = {.type = BD_EV_MEASUREMENT, .step = a->step, .has_value = 1, .value = value,
                       .elapsed_seconds = a->elapsed, .values = values};
    record(e, st, t, plan, &ev, &d);
    plan->lease_trial = t->id;
    plan->lease_until = now + st->spec.def.lease_seconds;
    if (!d.stop) {
        *answer = json_pack("{s:s, s:f}", "action", "continue", "lease_expires_at", now + st->spec.def.lease_seconds);
        return 0;
    }
    const char *reason = d.reason[0] ? d.reason : "stopped by the scheduler";
    bd_decision ignored;
    /* The stop happens at the measurement: its seconds are the trial's. */
    bd_event_row stop = {.type = BD_EV_STOPPED, .value = NAN, .elapsed_seconds = a->elapsed};
    set_reason(t, reason);
    record(e, st, t, plan, &stop, &ignored);
    plan->lease_trial = 0;
    *answer = json_pack("{s:s, s:s}", "action", "stop", "reason", reason);
    return 0;
}

int bd_engine_measure(bd_engine *e, const bd_request *req, int64_t trial_id, const json_t *body, json_t **out,
                      bd_err *err)
{
    static const char *const known[] = {"step", "value", "values", "elapsed_seconds", NULL};
    measure_args a = {.value = NAN};
    const json_t *step = json_object_get(body, "step"), *value = json_object_get(body, "value");
    int rc;
    if ((rc = bd_json_reject_unknown(body, "", known, err)))
        return rc;
    if (!step || !json_is_number(step) || !isfinite(json_number_value(step)) || json_number_value(step) < 0)
        return bd_err_set(err, BD_EINVAL, "step", "is required: a finite number >= 0 (epoch, iteration, ...)");
    a.values = json_object_get(body, "values");
    a.value_json = value;
    if (!value && !a.values)
        return bd_err_set(err, BD_EINVAL, "value", "is required (or \"values\" in a study with several objectives)");
    if ((value && (rc = value_member(value, &a.value, err))) ||
        (rc = opt_seconds(body, "elapsed_seconds", &a.elapsed, err)))
        return rc;
    a.step = json_number_value(step);
    return bd_engine_with_trial(e, req, trial_id, BD_OP_WAIT, measure_op, &a, out, err);
}

/* ------------------------------------------------------------ complete */

typedef struct complete_args {
    double value, elapsed;
    const json_t *value_json, *values; /* the body's "value" and "values" (borrowed; NULL when absent) */
    int timeout;
    const char *reason;
    const json_t *user_attrs; /* a patch of the trial's user_attrs, or NULL */
} complete_args;

/* Merges patch into t's user_attrs and plans the write. t->user_attrs
 * becomes the merged text, which the plan borrows (t lives until the
 * commit: with_trial clears it). */
static int plan_user_attrs(bd_trial_row *t, const json_t *patch, bd_write_plan *plan, bd_err *err)
{
    char *merged;
    int rc = bd_attrs_merge(t->user_attrs, patch, "user_attrs", &merged, err);
    if (rc)
        return rc;
    free(t->user_attrs);
    t->user_attrs = merged;
    plan->attrs_trial = t->id;
    plan->user_attrs = t->user_attrs;
    return 0;
}

static int complete_op(bd_engine *e, study_rt *st, bd_trial_row *t, const void *args, bd_write_plan *plan,
                       json_t **answer, bd_err *err)
{
    const complete_args *a = args;
    bd_decision d;
    char *values = NULL;
    double value = a->value;
    int rc;
    if ((rc = bd_engine_require_running(t, bd_now(), err)))
        return rc;
    if ((a->values || bd_study_spec_has_values(&st->spec)) &&
        (rc = plan_values(st, plan, a->value_json, a->values, 0, &values, &value, err)))
        return rc;
    if (a->user_attrs && (rc = plan_user_attrs(t, a->user_attrs, plan, err)))
        return rc; /* before record(): nothing fed to the scheduler yet */
    /* A timeout without a measured value costs the trial's cap (its budget). */
    if (a->timeout && isnan(value))
        value = t->budget;
    bd_event_row ev = {.type = BD_EV_COMPLETED, .has_value = 1, .value = value, .timeout = a->timeout,
                       .elapsed_seconds = a->elapsed, .values = values};
    set_reason(t, a->reason ? a->reason : isnan(value) ? "diverged" : NULL);
    record(e, st, t, plan, &ev, &d);
    *answer = bd_study_trial_json(st, t);
    return 0;
}

int bd_engine_complete(bd_engine *e, const bd_request *req, int64_t trial_id, const json_t *body, json_t **out,
                       bd_err *err)
{
    static const char *const known[] = {"value", "values", "status", "runtime", "elapsed_seconds", "reason",
                                        "user_attrs", NULL};
    complete_args a = {.value = NAN, .user_attrs = json_object_get(body, "user_attrs"),
                       .value_json = json_object_get(body, "value"), .values = json_object_get(body, "values")};
    if (json_is_null(a.user_attrs)) /* as absent, like "metadata": null at creation */
        a.user_attrs = NULL;
    const json_t *value = json_object_get(body, "value"), *status = json_object_get(body, "status");
    double runtime;
    int rc;
    if ((rc = bd_json_reject_unknown(body, "", known, err)) || (rc = opt_seconds(body, "runtime", &runtime, err)) ||
        (rc = opt_seconds(body, "elapsed_seconds", &a.elapsed, err)) || (rc = opt_reason(body, &a.reason, err)) ||
        (a.user_attrs && (rc = bd_attrs_check(a.user_attrs, "user_attrs", err))))
        return rc;
    if (status) {
        const char *s = json_is_string(status) ? json_string_value(status) : "";
        if (strcmp(s, "timeout") == 0)
            a.timeout = 1;
        else if (strcmp(s, "ok") != 0)
            return bd_err_set(err, BD_EINVAL, "status", "must be \"ok\" or \"timeout\"");
    }
    if (value) {
        if ((rc = value_member(value, &a.value, err)))
            return rc;
        if (a.timeout && isnan(a.value))
            return bd_err_set(err, BD_EINVAL, "value", "a timeout cannot be diverged: omit value or give the runtime");
    } else if (a.values) {
        /* checked against the study under its lock (complete_op) */
    } else if (!isnan(runtime)) {
        a.value = runtime;
    } else if (!a.timeout) {
        return bd_err_set(err, BD_EINVAL, "value",
                          "is required: the final metric, null for a diverged run, or status \"timeout\"");
    }
    return bd_engine_with_trial(e, req, trial_id, BD_OP_WAIT, complete_op, &a, out, err);
}

/* ---------------------------------------------------------------- fail */

static int fail_op(bd_engine *e, study_rt *st, bd_trial_row *t, const void *args, bd_write_plan *plan,
                   json_t **answer, bd_err *err)
{
    bd_decision d;
    int rc;
    if ((rc = bd_engine_require_running(t, bd_now(), err)))
        return rc;
    bd_event_row ev = {.type = BD_EV_FAILED, .value = NAN, .elapsed_seconds = NAN};
    set_reason(t, args ? args : "failed");
    record(e, st, t, plan, &ev, &d);
    *answer = bd_study_trial_json(st, t);
    return 0;
}

int bd_engine_fail(bd_engine *e, const bd_request *req, int64_t trial_id, const json_t *body, json_t **out,
                   bd_err *err)
{
    static const char *const known[] = {"reason", NULL};
    const char *reason;
    int rc;
    if ((rc = bd_json_reject_unknown(body, "", known, err)) || (rc = opt_reason(body, &reason, err)))
        return rc;
    return bd_engine_with_trial(e, req, trial_id, BD_OP_WAIT, fail_op, reason, out, err);
}

/* ----------------------------------------------------------- heartbeat */

static int heartbeat_op(bd_engine *e, study_rt *st, bd_trial_row *t, const void *args, bd_write_plan *plan,
                        json_t **answer, bd_err *err)
{
    double now = bd_now(), until = now + st->spec.def.lease_seconds;
    int rc;
    (void)e;
    (void)args;
    if ((rc = bd_engine_require_running(t, now, err)))
        return rc;
    plan->lease_trial = t->id;
    plan->lease_until = until;
    *answer = json_pack("{s:f}", "lease_expires_at", until);
    return 0;
}

int bd_engine_heartbeat(bd_engine *e, const bd_request *req, int64_t trial_id, json_t **out, bd_err *err)
{
    return bd_engine_with_trial(e, req, trial_id, BD_OP_WAIT, heartbeat_op, NULL, out, err);
}

/* ------------------------------------------------------------ user_attrs */

static int patch_op(bd_engine *e, study_rt *st, bd_trial_row *t, const void *args, bd_write_plan *plan,
                    json_t **answer, bd_err *err)
{
    int rc = plan_user_attrs(t, args, plan, err);
    (void)e;
    if (!rc)
        *answer = bd_study_trial_json(st, t);
    return rc;
}

int bd_engine_patch_trial(bd_engine *e, const bd_request *req, int64_t trial_id, const json_t *body, json_t **out,
                          bd_err *err)
{
    static const char *const known[] = {"user_attrs", NULL};
    const json_t *patch = json_object_get(body, "user_attrs");
    int rc;
    if ((rc = bd_json_reject_unknown(body, "", known, err)))
        return rc;
    if (!patch)
        return bd_err_set(err, BD_EINVAL, "user_attrs", "is required: an object of keys to set (null removes one)");
    if ((rc = bd_attrs_check(patch, "user_attrs", err)))
        return rc;
    /* Any state: attributes are the user's notes, not a report to the scheduler. */
    return bd_engine_with_trial(e, req, trial_id, BD_OP_WAIT, patch_op, patch, out, err);
}

/* ---------------------------------------------------------------- reads */

static int add_measurement(const bd_event_row *row, void *arg)
{
    if (row->type != BD_EV_MEASUREMENT)
        return 0;
    json_t *m = json_pack("{s:f, s:o, s:o, s:f}", "step", row->step, "value",
                          isnan(row->value) ? json_null() : json_real(row->value), "elapsed_seconds",
                          isnan(row->elapsed_seconds) ? json_null() : json_real(row->elapsed_seconds), "created_at",
                          row->created_at);
    json_t *values = row->values ? json_loads(row->values, 0, NULL) : NULL;
    if (values)
        json_object_set_new(m, "values", values);
    json_array_append_new(arg, m);
    return 0;
}

int bd_engine_get_trial(bd_engine *e, const bd_caller *who, int64_t trial_id, json_t **out, bd_err *err)
{
    bd_trial_row t = {0};
    study_rt *st;
    bd_err ignored;
    int rc = bd_store_trial_get(bd_engine_store(e), trial_id, &t, err);
    if (rc)
        return rc == BD_ENOTFOUND ? no_trial(trial_id, err) : rc;
    if ((rc = bd_engine_lock_study(e, who, t.study_id, &st, &ignored))) {
        bd_store_trial_row_clear(&t);
        if (rc == BD_EFORWARD) /* cluster mode: a peer holds the study; the HTTP layer asks it */
            return bd_err_set(err, rc, ignored.field, "%s", ignored.message);
        return no_trial(trial_id, err);
    }
    json_t *answer = bd_study_trial_json(st, &t);
    bd_engine_unlock_study(e, st);
    json_t *measurements = json_array();
    rc = bd_store_event_each_of_trial(bd_engine_store(e), trial_id, add_measurement, measurements, err);
    json_object_set_new(answer, "measurements", measurements);
    bd_store_trial_row_clear(&t);
    if (rc) {
        json_decref(answer);
        return rc;
    }
    *out = answer;
    return 0;
}

typedef struct list_ctx {
    bd_engine *e;
    int resource_integer; /* copied under the study's mutex: the spec may be unloaded after it */
    json_t *trials;
    int64_t last_id;
    int with_measurements;
    size_t measurements;  /* in the page so far */
    size_t attrs_bytes;   /* of the page's user_attrs text so far */
    int full;             /* the page reached BD_LIST_MEASUREMENTS_MAX or BD_LIST_ATTRS_BYTES_MAX: stopped early */
    bd_err *err;
} list_ctx;

static int add_trial(const bd_trial_row *row, void *arg)
{
    list_ctx *c = arg;
    if (c->full)
        return 1;
    json_t *t = bd_trial_json(c->resource_integer, row);
    if (c->with_measurements) {
        json_t *m = json_array();
        int rc = bd_store_event_each_of_trial(bd_engine_store(c->e), row->id, add_measurement, m, c->err);
        json_object_set_new(t, "measurements", m);
        if (rc) {
            json_decref(t);
            return rc;
        }
        c->measurements += json_array_size(m);
        /* A trial is never split: the page that passes the bound ends with it. */
        c->full = c->measurements >= BD_LIST_MEASUREMENTS_MAX;
    }
    if (row->user_attrs) {
        c->attrs_bytes += strlen(row->user_attrs);
        c->full = c->full || c->attrs_bytes >= BD_LIST_ATTRS_BYTES_MAX;
    }
    json_array_append_new(c->trials, t);
    c->last_id = row->id;
    return 0;
}

int bd_engine_list_trials(bd_engine *e, const bd_caller *who, int64_t study_id, const bd_trial_query *q,
                          json_t **out, bd_err *err)
{
    int st_filter = -1;
    study_rt *st;
    int rc;
    if (q->state && (st_filter = bd_trial_state_parse(q->state)) < 0)
        return bd_err_set(err, BD_EINVAL, "state", "must be one of running, completed, stopped, failed, expired");
    if (q->limit < 1 || q->limit > 1000)
        return bd_err_set(err, BD_EINVAL, "limit", "must be from 1 to 1000");
    if (q->after < 0)
        return bd_err_set(err, BD_EINVAL, "after", "must be a trial id >= 0");
    if (q->best_first && st_filter >= 0 && st_filter != BD_TRIAL_COMPLETED)
        return bd_err_set(err, BD_EINVAL, "state", "order=best lists completed trials only");
    if (q->best_first && q->after)
        return bd_err_set(err, BD_EINVAL, "after", "order=best has no cursor (it answers the top trials)");
    if ((rc = bd_engine_lock_study(e, who, study_id, &st, err)))
        return rc;
    if (q->instance >= 0 && (size_t)q->instance >= st->spec.def.n_instances) {
        bd_engine_unlock_study(e, st);
        return bd_err_set(err, BD_EINVAL, "instance", "must be an instance index of the study (it has %zu)",
                          st->spec.def.n_instances);
    }
    /* The study's mutex is released before reading: the listing reads
     * committed rows only and must not hold up the study's workers. What it
     * needs of the spec is copied first: in cluster mode a claim that finds
     * the study moved unloads (frees) the spec meanwhile. */
    int maximize = st->spec.def.maximize;
    if (q->best_first && st->spec.def.n_objectives > 1) {
        bd_engine_unlock_study(e, st);
        return bd_err_set(err, BD_EINVAL, "order",
                          "a study with several objectives has no single best: its \"pareto_front\" (GET the study) "
                          "holds the best trade-offs");
    }
    list_ctx c = {.e = e, .resource_integer = st->spec.def.resource_integer, .trials = json_array(),
                  .with_measurements = q->with_measurements, .err = err};
    bd_engine_unlock_study(e, st);
    st = NULL;
    if (q->best_first)
        rc =
            bd_store_trial_each_best(bd_engine_store(e), study_id, maximize, q->instance, q->limit, add_trial, &c, err);
    else
        rc = bd_store_trial_each(bd_engine_store(e), study_id, st_filter, q->instance, q->after, q->limit, add_trial,
                                 &c, err);
    if (rc == 1 && c.full)
        rc = 0;
    if (rc) {
        json_decref(c.trials);
        return rc;
    }
    int more = !q->best_first && ((int64_t)json_array_size(c.trials) == q->limit || c.full);
    *out = json_pack("{s:o, s:o}", "trials", c.trials, "next_after", more ? json_integer(c.last_id) : json_null());
    return 0;
}

/* ---------------------------------------------------------------- leases */

typedef struct expired_list {
    int64_t *trial_ids;
    int64_t *study_ids;
    size_t n, cap;
} expired_list;

static int collect_expired(const bd_trial_row *row, void *arg)
{
    expired_list *l = arg;
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        l->trial_ids = bd_xrealloc(l->trial_ids, l->cap * sizeof *l->trial_ids);
        l->study_ids = bd_xrealloc(l->study_ids, l->cap * sizeof *l->study_ids);
    }
    l->trial_ids[l->n] = row->id;
    l->study_ids[l->n++] = row->study_id;
    return 0;
}

static int expire_op(bd_engine *e, study_rt *st, bd_trial_row *t, const void *args, bd_write_plan *plan,
                     json_t **answer, bd_err *err)
{
    const double *now = args;
    bd_decision d;
    (void)err;
    /* Re-checked under the lock: a heartbeat may have renewed it meanwhile. */
    if (t->state != BD_TRIAL_RUNNING || t->lease_expires_at >= *now)
        return 0;
    bd_event_row ev = {.type = BD_EV_EXPIRED, .value = NAN, .elapsed_seconds = NAN};
    set_reason(t, "lease expired");
    *answer = json_true();
    record(e, st, t, plan, &ev, &d);
    return 0;
}

int bd_engine_expire_leases(bd_engine *e, double now, int *expired, bd_err *err)
{
    expired_list l = {0};
    int rc = bd_store_trial_each_expired(bd_engine_store(e), now, collect_expired, &l, err);
    int n = 0;
    for (size_t i = 0; !rc && i < l.n && !bd_engine_closing(e); i++) {
        study_rt *st = bd_engine_study(e, l.study_ids[i], 0);
        if (!st)
            continue;
        bd_caller owner = {.user_id = st->user_id};
        bd_request req = {.caller = &owner};
        json_t *answer = NULL;
        /* A busy study is skipped, not waited for: a slow scheduler must not
         * delay other studies' expiry. Its trials are found again next sweep. */
        rc = bd_engine_with_trial(e, &req, l.trial_ids[i], BD_OP_NO_WAIT, expire_op, &now, &answer, err);
        /* Cluster mode: a study a peer serves (BD_EBUSY from the claim) or
         * took between claim and commit (BD_EMOVED) is that peer's to sweep;
         * the sweep goes on with the other studies. */
        if (rc == BD_ENOTFOUND || rc == BD_EBUSY || rc == BD_EMOVED) { /* deleted meanwhile, busy, or moved */
            bd_err_clear(err);
            rc = 0;
        }
        n += answer != NULL;
        json_decref(answer);
    }
    free(l.trial_ids);
    free(l.study_ids);
    if (expired)
        *expired = n;
    return rc;
}
