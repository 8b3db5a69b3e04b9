/* pg_trials.c: trials in the PostgreSQL backend, as in sqlite_trials.c. A
 * trial is finished once: bd_store_trial_finish only moves a running trial. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "pg_internal.h"

/* Columns in the order of TRIAL_COLS (pg_sql.c). */
static int trial_read(const PGresult *res, int r, void *dst, bd_err *err)
{
    bd_trial_row *row = dst;
    int state = bd_trial_state_parse(PQgetvalue(res, r, 7));
    if (state < 0)
        return bd_err_set(err, BD_ESTORAGE, NULL, "storage: trial %lld has an unknown state",
                          (long long)bd_pg_col_i64(res, r, 0));
    row->id = bd_pg_col_i64(res, r, 0);
    row->study_id = bd_pg_col_i64(res, r, 1);
    row->config_id = bd_pg_col_i64(res, r, 2);
    row->config = bd_pg_col_text(res, r, 3);
    row->budget = bd_pg_col_double(res, r, 4, 0);
    row->resume_from = bd_pg_col_i64(res, r, 5);
    row->extra = bd_pg_col_text(res, r, 6);
    row->state = (bd_trial_state)state;
    row->worker = bd_pg_col_text(res, r, 8);
    row->created_at = bd_pg_col_double(res, r, 9, 0);
    row->lease_expires_at = bd_pg_col_double(res, r, 10, 0);
    row->finished_at = bd_pg_col_double(res, r, 11, 0);
    row->has_value = (int)bd_pg_col_i64(res, r, 12);
    row->value = bd_pg_col_double(res, r, 13, row->has_value ? NAN : 0.0);
    row->timeout = (int)bd_pg_col_i64(res, r, 14);
    row->reason = bd_pg_col_text(res, r, 15);
    row->has_instance = !bd_pg_col_null(res, r, 16);
    row->instance_index = bd_pg_col_i64(res, r, 16);
    row->instance_name = bd_pg_col_text(res, r, 17);
    row->origin = bd_trial_origin_parse(bd_pg_col_null(res, r, 18) ? NULL : PQgetvalue(res, r, 18));
    row->user_attrs = bd_pg_col_text(res, r, 19);
    row->values = bd_pg_col_text(res, r, 20);
    row->constrained = !bd_pg_col_null(res, r, 21);
    row->feasible = row->constrained && bd_pg_col_i64(res, r, 21) != 0;
    row->steps = 0;
    row->last_step_value = NAN;
    return 0;
}

/* TRIAL_COLS, then the measurement count and the latest measurement's value. */
static int trial_steps_read(const PGresult *res, int r, void *dst, bd_err *err)
{
    bd_trial_row *row = dst;
    int ret = trial_read(res, r, dst, err);
    if (ret)
        return ret;
    row->steps = bd_pg_col_i64(res, r, 22);
    row->last_step_value = bd_pg_col_double(res, r, 23, NAN);
    return 0;
}

static void trial_clear(void *row)
{
    bd_store_trial_row_clear(row);
}

static const bd_pg_rowtype trial_type = {sizeof(bd_trial_row), trial_read, trial_clear};
static const bd_pg_rowtype trial_steps_type = {sizeof(bd_trial_row), trial_steps_read, trial_clear};

static int check_state(int state, bd_err *err)
{
    if (state < 0 || state >= BD_TRIAL_NSTATES)
        return bd_err_set(err, BD_EINVAL, "state", "unknown trial state %d", state);
    return 0;
}

/* The value column: NULL unless a value was reported, and NULL for NAN (diverged). */
static double value_of(int has_value, double value)
{
    return has_value ? value : NAN;
}

/* finished_at: 0 ("not finished") is stored as NULL. */
static double finished_or_null(double finished_at)
{
    return finished_at != 0 ? finished_at : NAN;
}

int bd_pg_trial_insert(bd_store *store, const bd_trial_row *row, int64_t *id, bd_err *err)
{
    bd_pg *s = (bd_pg *)store;
    int ret = check_state(row->state, err);
    if (ret)
        return ret;
    bd_pg_params p = {0};
    bd_pg_p_i64(&p, row->study_id);
    bd_pg_p_i64(&p, row->config_id);
    bd_pg_p_text(&p, row->config);
    bd_pg_p_double(&p, row->budget);
    bd_pg_p_id(&p, row->resume_from);
    bd_pg_p_text(&p, row->extra);
    bd_pg_p_text(&p, bd_trial_state_name(row->state));
    bd_pg_p_text(&p, row->worker);
    bd_pg_p_double(&p, row->created_at);
    bd_pg_p_double(&p, row->lease_expires_at);
    bd_pg_p_double(&p, finished_or_null(row->finished_at));
    bd_pg_p_i64(&p, row->has_value ? 1 : 0);
    bd_pg_p_double(&p, value_of(row->has_value, row->value));
    bd_pg_p_i64(&p, row->timeout ? 1 : 0);
    bd_pg_p_text(&p, row->reason);
    bd_pg_p_id(&p, row->id);
    if (row->has_instance) {
        bd_pg_p_i64(&p, row->instance_index);
        bd_pg_p_text(&p, row->instance_name);
    } else {
        bd_pg_p_text(&p, NULL);
        bd_pg_p_text(&p, NULL);
    }
    bd_pg_p_text(&p, row->origin != BD_ORIGIN_SUGGESTED ? bd_trial_origin_name(row->origin) : NULL);
    bd_pg_p_text(&p, row->user_attrs);
    bd_pg_p_text(&p, row->values);
    if (row->constrained)
        bd_pg_p_i64(&p, row->feasible ? 1 : 0);
    else
        bd_pg_p_text(&p, NULL);
    int locked = bd_pg_enter(s);
    PGresult *res = bd_pg_run(s, BD_PG_TRIAL_INSERT, &p, &ret, err, "insert trial");
    if (res && PQntuples(res) == 0)
        ret = bd_err_set(err, BD_ECONFLICT, NULL, "storage: insert trial: unique key trials.id: %lld is taken", (long long)row->id);
    else if (res && id)
        *id = bd_pg_col_i64(res, 0, 0);
    PQclear(res);
    bd_pg_leave(s, locked);
    return ret;
}

int bd_pg_trial_get(bd_store *store, int64_t id, bd_trial_row *out, bd_err *err)
{
    bd_pg *s = (bd_pg *)store;
    bd_pg_params p = {0};
    bd_pg_p_i64(&p, id);
    int ret, locked = bd_pg_enter(s);
    PGresult *res = bd_pg_run(s, BD_PG_TRIAL_GET, &p, &ret, err, "read trial");
    if (res && PQntuples(res) == 0)
        ret = bd_err_set(err, BD_ENOTFOUND, NULL, "trial %lld not found", (long long)id);
    else if (res)
        ret = trial_read(res, 0, out, err);
    PQclear(res);
    bd_pg_leave(s, locked);
    return ret;
}

/* Why an update matched no row: the trial is missing, or not running. Lock held. */
static int why_unchanged(bd_pg *s, int64_t id, bd_err *err)
{
    bd_pg_params p = {0};
    bd_pg_p_i64(&p, id);
    int ret;
    PGresult *res = bd_pg_run(s, BD_PG_TRIAL_STATE, &p, &ret, err, "read trial state");
    if (res && PQntuples(res) == 0)
        ret = bd_err_set(err, BD_ENOTFOUND, NULL, "trial %lld not found", (long long)id);
    else if (res)
        ret = bd_err_set(err, BD_ECONFLICT, NULL, "trial %lld is %s, not running", (long long)id,
                         PQgetvalue(res, 0, 0));
    PQclear(res);
    return ret;
}

int bd_pg_trial_finish(bd_store *store, const bd_trial_row *row, bd_err *err)
{
    bd_pg *s = (bd_pg *)store;
    int ret = check_state(row->state, err);
    if (!ret && row->state == BD_TRIAL_RUNNING)
        ret = bd_err_set(err, BD_EINVAL, "state", "a finished trial cannot be running");
    if (ret)
        return ret;
    bd_pg_params p = {0};
    bd_pg_p_i64(&p, row->id);
    bd_pg_p_text(&p, bd_trial_state_name(row->state));
    bd_pg_p_double(&p, finished_or_null(row->finished_at));
    bd_pg_p_i64(&p, row->has_value ? 1 : 0);
    bd_pg_p_double(&p, value_of(row->has_value, row->value));
    bd_pg_p_i64(&p, row->timeout ? 1 : 0);
    bd_pg_p_text(&p, row->reason);
    bd_pg_p_text(&p, row->values);
    if (row->constrained)
        bd_pg_p_i64(&p, row->feasible ? 1 : 0);
    else
        bd_pg_p_text(&p, NULL);
    int64_t changed = 0;
    int locked = bd_pg_enter(s);
    ret = bd_pg_run_done(s, BD_PG_TRIAL_FINISH, &p, &changed, err, "finish trial");
    if (!ret && changed == 0)
        ret = why_unchanged(s, row->id, err);
    bd_pg_leave(s, locked);
    return ret;
}

static int trial_missing(bd_pg *s, enum bd_pg_stmt which, const bd_pg_params *p, int64_t id, bd_err *err,
                         const char *what)
{
    char missing[64];
    snprintf(missing, sizeof missing, "trial %lld not found", (long long)id);
    return bd_pg_update_one(s, which, p, missing, err, what);
}

int bd_pg_trial_set_lease(bd_store *store, int64_t id, double lease_expires_at, bd_err *err)
{
    bd_pg_params p = {0};
    bd_pg_p_i64(&p, id);
    bd_pg_p_double(&p, lease_expires_at);
    return trial_missing((bd_pg *)store, BD_PG_TRIAL_SET_LEASE, &p, id, err, "set trial lease");
}

int bd_pg_trial_set_user_attrs(bd_store *store, int64_t id, const char *user_attrs, bd_err *err)
{
    bd_pg_params p = {0};
    bd_pg_p_i64(&p, id);
    bd_pg_p_text(&p, user_attrs);
    return trial_missing((bd_pg *)store, BD_PG_TRIAL_SET_USER_ATTRS, &p, id, err, "set trial user_attrs");
}

int bd_pg_trial_set_config(bd_store *store, int64_t id, const char *config, bd_err *err)
{
    bd_pg_params p = {0};
    bd_pg_p_i64(&p, id);
    bd_pg_p_text(&p, config);
    return trial_missing((bd_pg *)store, BD_PG_TRIAL_SET_CONFIG, &p, id, err, "set trial config");
}

struct trial_cb {
    bd_trial_fn fn;
    void *arg;
};

static int trial_call(const void *row, void *cb)
{
    const struct trial_cb *c = cb;
    return c->fn(row, c->arg);
}

struct trial_filter {
    int64_t study_id;
    int state;        /* < 0: any */
    int64_t instance; /* < 0: any */
};

/* $3 study, $4 state or NULL, $5 instance or NULL. */
static void bind_study_state(bd_pg_params *p, const void *key)
{
    const struct trial_filter *f = key;
    bd_pg_p_i64(p, f->study_id);
    bd_pg_p_text(p, f->state < 0 ? NULL : bd_trial_state_name((bd_trial_state)f->state));
    if (f->instance >= 0)
        bd_pg_p_i64(p, f->instance);
    else
        bd_pg_p_text(p, NULL);
}

/* $3 study, $4 instance or NULL (the best-trials statements). */
static void bind_study_instance(bd_pg_params *p, const void *key)
{
    const struct trial_filter *f = key;
    bd_pg_p_i64(p, f->study_id);
    if (f->instance >= 0)
        bd_pg_p_i64(p, f->instance);
    else
        bd_pg_p_text(p, NULL);
}

int bd_pg_trial_each(bd_store *store, int64_t study_id, int state, int64_t instance, int64_t after_id, int64_t limit,
                     bd_trial_fn fn, void *arg, bd_err *err)
{
    if (state >= BD_TRIAL_NSTATES)
        return bd_err_set(err, BD_EINVAL, "state", "unknown trial state %d", state);
    struct trial_filter f = {study_id, state, instance};
    struct trial_cb cb = {fn, arg};
    return bd_pg_scan((bd_pg *)store, BD_PG_TRIAL_SCAN, &trial_type, bind_study_state, &f, after_id, limit,
                      trial_call, &cb, err, "list trials");
}

int bd_pg_trial_each_with_steps(bd_store *store, int64_t study_id, int state, int64_t instance, int64_t after_id,
                                int64_t limit, bd_trial_fn fn, void *arg, bd_err *err)
{
    if (state >= BD_TRIAL_NSTATES)
        return bd_err_set(err, BD_EINVAL, "state", "unknown trial state %d", state);
    struct trial_filter f = {study_id, state, instance};
    struct trial_cb cb = {fn, arg};
    return bd_pg_scan((bd_pg *)store, BD_PG_TRIAL_SCAN_STEPS, &trial_steps_type, bind_study_state, &f, after_id,
                      limit, trial_call, &cb, err, "list trials with their steps");
}

int bd_pg_trial_each_best(bd_store *store, int64_t study_id, int maximize, int64_t instance, int64_t limit,
                          bd_trial_fn fn, void *arg, bd_err *err)
{
    if (limit < 1 || limit > 1000)
        return bd_err_set(err, BD_EINVAL, "limit", "must be from 1 to 1000");
    struct trial_filter f = {study_id, -1, instance};
    struct trial_cb cb = {fn, arg};
    return bd_pg_scan_once((bd_pg *)store, maximize ? BD_PG_TRIAL_BEST_MAX : BD_PG_TRIAL_BEST_MIN, &trial_type,
                           bind_study_instance, &f, limit, trial_call, &cb, err, "list best trials");
}

static void bind_now(bd_pg_params *p, const void *key)
{
    bd_pg_p_double(p, *(const double *)key);
}

int bd_pg_trial_each_expired(bd_store *store, double now, bd_trial_fn fn, void *arg, bd_err *err)
{
    struct trial_cb cb = {fn, arg};
    return bd_pg_scan((bd_pg *)store, BD_PG_TRIAL_SCAN_EXPIRED, &trial_type, bind_now, &now, 0, 0, trial_call, &cb,
                      err, "list expired trials");
}
