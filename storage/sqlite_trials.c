/* sqlite_trials.c: trials in the SQLite backend, and the names of trial
 * states (stored by name, so the enum's order is not part of the file format).
 * A trial is finished once: bd_store_trial_finish only moves a running trial. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sqlite_internal.h"

/* Columns in the order of TRIAL_COLS (sqlite_sql.c). */
static int trial_read(sqlite3_stmt *st, void *dst, bd_err *err)
{
    bd_trial_row *row = dst;
    int state = bd_trial_state_parse((const char *)sqlite3_column_text(st, 7));
    if (state < 0)
        return bd_err_set(err, BD_ESTORAGE, NULL, "storage: trial %lld has an unknown state",
                          (long long)sqlite3_column_int64(st, 0));
    row->id = sqlite3_column_int64(st, 0);
    row->study_id = sqlite3_column_int64(st, 1);
    row->config_id = sqlite3_column_int64(st, 2);
    row->config = bd_sqlite_col_text(st, 3);
    row->budget = sqlite3_column_double(st, 4);
    row->resume_from = sqlite3_column_int64(st, 5);
    row->extra = bd_sqlite_col_text(st, 6);
    row->state = (bd_trial_state)state;
    row->worker = bd_sqlite_col_text(st, 8);
    row->created_at = sqlite3_column_double(st, 9);
    row->lease_expires_at = sqlite3_column_double(st, 10);
    row->finished_at = sqlite3_column_double(st, 11);
    row->has_value = sqlite3_column_int(st, 12);
    row->value = bd_sqlite_col_double(st, 13, row->has_value ? NAN : 0.0);
    row->timeout = sqlite3_column_int(st, 14);
    row->reason = bd_sqlite_col_text(st, 15);
    row->has_instance = sqlite3_column_type(st, 16) != SQLITE_NULL;
    row->instance_index = row->has_instance ? sqlite3_column_int64(st, 16) : 0;
    row->instance_name = bd_sqlite_col_text(st, 17);
    row->origin = bd_trial_origin_parse((const char *)sqlite3_column_text(st, 18));
    row->user_attrs = bd_sqlite_col_text(st, 19);
    row->values = bd_sqlite_col_text(st, 20);
    row->constrained = sqlite3_column_type(st, 21) != SQLITE_NULL;
    row->feasible = row->constrained && sqlite3_column_int(st, 21);
    row->steps = 0;
    row->last_step_value = NAN;
    return 0;
}

/* TRIAL_COLS, then the measurement count and the latest measurement's value. */
static int trial_steps_read(sqlite3_stmt *st, void *dst, bd_err *err)
{
    bd_trial_row *row = dst;
    int rc = trial_read(st, dst, err);
    if (rc)
        return rc;
    row->steps = sqlite3_column_int64(st, 22);
    row->last_step_value = bd_sqlite_col_double(st, 23, NAN);
    return 0;
}

static void trial_clear(void *row)
{
    bd_store_trial_row_clear(row);
}

static const bd_sqlite_rowtype trial_type = {sizeof(bd_trial_row), trial_read, trial_clear};
static const bd_sqlite_rowtype trial_steps_type = {sizeof(bd_trial_row), trial_steps_read, trial_clear};

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

int bd_sqlite_trial_insert(bd_store *store, const bd_trial_row *row, int64_t *id, bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    int ret = check_state(row->state, err);
    if (ret)
        return ret;
    int locked = bd_sqlite_enter(s);
    sqlite3_stmt *st = s->stmt[BD_SQL_TRIAL_INSERT];
    int rc = SQLITE_OK;
    bd_sqlite_bind_i64(st, 1, row->study_id, &rc);
    bd_sqlite_bind_i64(st, 2, row->config_id, &rc);
    bd_sqlite_bind_text(st, 3, row->config, &rc);
    bd_sqlite_bind_double(st, 4, row->budget, &rc);
    bd_sqlite_bind_id(st, 5, row->resume_from, &rc);
    bd_sqlite_bind_text(st, 6, row->extra, &rc);
    bd_sqlite_bind_text(st, 7, bd_trial_state_name(row->state), &rc);
    bd_sqlite_bind_text(st, 8, row->worker, &rc);
    bd_sqlite_bind_double(st, 9, row->created_at, &rc);
    bd_sqlite_bind_double(st, 10, row->lease_expires_at, &rc);
    bd_sqlite_bind_double(st, 11, finished_or_null(row->finished_at), &rc);
    bd_sqlite_bind_i64(st, 12, row->has_value ? 1 : 0, &rc);
    bd_sqlite_bind_double(st, 13, value_of(row->has_value, row->value), &rc);
    bd_sqlite_bind_i64(st, 14, row->timeout ? 1 : 0, &rc);
    bd_sqlite_bind_text(st, 15, row->reason, &rc);
    bd_sqlite_bind_id(st, 16, row->id, &rc);
    if (row->has_instance) {
        bd_sqlite_bind_i64(st, 17, row->instance_index, &rc);
        bd_sqlite_bind_text(st, 18, row->instance_name, &rc);
    }
    if (row->origin != BD_ORIGIN_SUGGESTED)
        bd_sqlite_bind_text(st, 19, bd_trial_origin_name(row->origin), &rc);
    bd_sqlite_bind_text(st, 20, row->user_attrs, &rc);
    bd_sqlite_bind_text(st, 21, row->values, &rc);
    if (row->constrained)
        bd_sqlite_bind_i64(st, 22, row->feasible ? 1 : 0, &rc);
    ret = bd_sqlite_step_done(s, st, rc, err, "insert trial");
    if (!ret && id)
        *id = sqlite3_last_insert_rowid(s->db);
    bd_sqlite_done(st);
    bd_sqlite_leave(s, locked);
    return ret;
}

int bd_sqlite_trial_get(bd_store *store, int64_t id, bd_trial_row *out, bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    int locked = bd_sqlite_enter(s);
    sqlite3_stmt *st = s->stmt[BD_SQL_TRIAL_GET];
    int rc = SQLITE_OK;
    bd_sqlite_bind_i64(st, 1, id, &rc);
    int ret = bd_sqlite_step_row(s, st, rc, err, "read trial");
    if (ret == 0)
        ret = bd_err_set(err, BD_ENOTFOUND, NULL, "trial %lld not found", (long long)id);
    else if (ret == 1)
        ret = trial_read(st, out, err);
    bd_sqlite_done(st);
    bd_sqlite_leave(s, locked);
    return ret;
}

/* Why an update matched no row: the trial is missing, or not running. */
static int why_unchanged(bd_sqlite *s, int64_t id, bd_err *err)
{
    sqlite3_stmt *st = s->stmt[BD_SQL_TRIAL_STATE];
    int rc = SQLITE_OK;
    bd_sqlite_bind_i64(st, 1, id, &rc);
    int ret = bd_sqlite_step_row(s, st, rc, err, "read trial state");
    if (ret == 0)
        ret = bd_err_set(err, BD_ENOTFOUND, NULL, "trial %lld not found", (long long)id);
    else if (ret == 1)
        ret = bd_err_set(err, BD_ECONFLICT, NULL, "trial %lld is %s, not running", (long long)id,
                         (const char *)sqlite3_column_text(st, 0));
    bd_sqlite_done(st);
    return ret;
}

int bd_sqlite_trial_finish(bd_store *store, const bd_trial_row *row, bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    int ret = check_state(row->state, err);
    if (!ret && row->state == BD_TRIAL_RUNNING)
        ret = bd_err_set(err, BD_EINVAL, "state", "a finished trial cannot be running");
    if (ret)
        return ret;
    int locked = bd_sqlite_enter(s);
    sqlite3_stmt *st = s->stmt[BD_SQL_TRIAL_FINISH];
    int rc = SQLITE_OK;
    bd_sqlite_bind_i64(st, 1, row->id, &rc);
    bd_sqlite_bind_text(st, 2, bd_trial_state_name(row->state), &rc);
    bd_sqlite_bind_double(st, 3, finished_or_null(row->finished_at), &rc);
    bd_sqlite_bind_i64(st, 4, row->has_value ? 1 : 0, &rc);
    bd_sqlite_bind_double(st, 5, value_of(row->has_value, row->value), &rc);
    bd_sqlite_bind_i64(st, 6, row->timeout ? 1 : 0, &rc);
    bd_sqlite_bind_text(st, 7, row->reason, &rc);
    bd_sqlite_bind_text(st, 8, row->values, &rc);
    if (row->constrained)
        bd_sqlite_bind_i64(st, 9, row->feasible ? 1 : 0, &rc);
    ret = bd_sqlite_step_done(s, st, rc, err, "finish trial");
    int changed = !ret && sqlite3_changes(s->db) > 0;
    bd_sqlite_done(st);
    if (!ret && !changed)
        ret = why_unchanged(s, row->id, err);
    bd_sqlite_leave(s, locked);
    return ret;
}

int bd_sqlite_trial_set_lease(bd_store *store, int64_t id, double lease_expires_at, bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    int locked = bd_sqlite_enter(s);
    sqlite3_stmt *st = s->stmt[BD_SQL_TRIAL_SET_LEASE];
    int rc = SQLITE_OK;
    bd_sqlite_bind_i64(st, 1, id, &rc);
    bd_sqlite_bind_double(st, 2, lease_expires_at, &rc);
    int ret = bd_sqlite_step_done(s, st, rc, err, "set trial lease");
    if (!ret && sqlite3_changes(s->db) == 0)
        ret = bd_err_set(err, BD_ENOTFOUND, NULL, "trial %lld not found", (long long)id);
    bd_sqlite_done(st);
    bd_sqlite_leave(s, locked);
    return ret;
}

/* UPDATE trials SET <column> = text WHERE id = id, by statement which. */
static int trial_set_text(bd_sqlite *s, enum bd_sql_stmt which, int64_t id, const char *text, const char *what,
                          bd_err *err)
{
    int locked = bd_sqlite_enter(s);
    sqlite3_stmt *st = s->stmt[which];
    int rc = SQLITE_OK;
    bd_sqlite_bind_i64(st, 1, id, &rc);
    bd_sqlite_bind_text(st, 2, text, &rc);
    int ret = bd_sqlite_step_done(s, st, rc, err, what);
    if (!ret && sqlite3_changes(s->db) == 0)
        ret = bd_err_set(err, BD_ENOTFOUND, NULL, "trial %lld not found", (long long)id);
    bd_sqlite_done(st);
    bd_sqlite_leave(s, locked);
    return ret;
}

int bd_sqlite_trial_set_user_attrs(bd_store *store, int64_t id, const char *user_attrs, bd_err *err)
{
    return trial_set_text((bd_sqlite *)store, BD_SQL_TRIAL_SET_USER_ATTRS, id, user_attrs, "set trial user_attrs",
                          err);
}

int bd_sqlite_trial_set_config(bd_store *store, int64_t id, const char *config, bd_err *err)
{
    return trial_set_text((bd_sqlite *)store, BD_SQL_TRIAL_SET_CONFIG, id, config, "set trial config", err);
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

static int bind_study_state(sqlite3_stmt *st, const void *key)
{
    const struct trial_filter *f = key;
    int rc = SQLITE_OK;
    bd_sqlite_bind_i64(st, 3, f->study_id, &rc);
    bd_sqlite_bind_text(st, 4, f->state < 0 ? NULL : bd_trial_state_name((bd_trial_state)f->state), &rc);
    if (f->instance >= 0)
        bd_sqlite_bind_i64(st, 5, f->instance, &rc);
    return rc;
}

int bd_sqlite_trial_each(bd_store *store, int64_t study_id, int state, int64_t instance, int64_t after_id,
                        int64_t limit, bd_trial_fn fn, void *arg, bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    if (state >= BD_TRIAL_NSTATES)
        return bd_err_set(err, BD_EINVAL, "state", "unknown trial state %d", state);
    struct trial_filter f = {study_id, state, instance};
    struct trial_cb cb = {fn, arg};
    return bd_sqlite_scan(s, BD_SQL_TRIAL_SCAN, &trial_type, bind_study_state, &f, after_id, limit, trial_call,
                          &cb, err, "list trials");
}

int bd_sqlite_trial_each_with_steps(bd_store *store, int64_t study_id, int state, int64_t instance, int64_t after_id,
                                   int64_t limit, bd_trial_fn fn, void *arg, bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    if (state >= BD_TRIAL_NSTATES)
        return bd_err_set(err, BD_EINVAL, "state", "unknown trial state %d", state);
    struct trial_filter f = {study_id, state, instance};
    struct trial_cb cb = {fn, arg};
    return bd_sqlite_scan(s, BD_SQL_TRIAL_SCAN_STEPS, &trial_steps_type, bind_study_state, &f, after_id, limit,
                          trial_call, &cb, err, "list trials with their steps");
}

int bd_sqlite_trial_each_best(bd_store *store, int64_t study_id, int maximize, int64_t instance, int64_t limit,
                             bd_trial_fn fn, void *arg, bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    if (limit < 1 || limit > 1000)
        return bd_err_set(err, BD_EINVAL, "limit", "must be from 1 to 1000");
    struct trial_filter f = {study_id, -1, instance};
    struct trial_cb cb = {fn, arg};
    return bd_sqlite_scan_once(s, maximize ? BD_SQL_TRIAL_BEST_MAX : BD_SQL_TRIAL_BEST_MIN, &trial_type,
                               bind_study_state, &f, limit, trial_call, &cb, err, "list best trials");
}

static int bind_now(sqlite3_stmt *st, const void *key)
{
    const double *now = key;
    return sqlite3_bind_double(st, 3, *now);
}

int bd_sqlite_trial_each_expired(bd_store *store, double now, bd_trial_fn fn, void *arg, bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    struct trial_cb cb = {fn, arg};
    return bd_sqlite_scan(s, BD_SQL_TRIAL_SCAN_EXPIRED, &trial_type, bind_now, &now, 0, 0, trial_call, &cb, err,
                          "list expired trials");
}
