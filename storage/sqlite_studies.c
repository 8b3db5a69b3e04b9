/* sqlite_studies.c: studies in the SQLite backend. Deleting a study deletes
 * its trials and events through ON DELETE CASCADE. */
#include <stdlib.h>

#include "sqlite_internal.h"

/* Columns in the order of STUDY_COLS (sqlite_sql.c). */
static int study_read(sqlite3_stmt *st, void *dst, bd_err *err)
{
    bd_study_row *row = dst;
    (void)err;
    row->id = sqlite3_column_int64(st, 0);
    row->user_id = sqlite3_column_int64(st, 1);
    row->name = bd_sqlite_col_text(st, 2);
    row->definition = bd_sqlite_col_text(st, 3);
    row->created_at = sqlite3_column_double(st, 4);
    row->paused = sqlite3_column_int(st, 5);
    row->metadata = bd_sqlite_col_text(st, 6);
    return 0;
}

static void study_clear(void *row)
{
    bd_store_study_row_clear(row);
}

static const bd_sqlite_rowtype study_type = {sizeof(bd_study_row), study_read, study_clear};

int bd_sqlite_study_insert(bd_store *store, const bd_study_row *row, int64_t *id, bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    int locked = bd_sqlite_enter(s);
    sqlite3_stmt *st = s->stmt[BD_SQL_STUDY_INSERT];
    int rc = SQLITE_OK;
    bd_sqlite_bind_i64(st, 1, row->user_id, &rc);
    bd_sqlite_bind_text(st, 2, row->name, &rc);
    bd_sqlite_bind_text(st, 3, row->definition, &rc);
    bd_sqlite_bind_double(st, 4, row->created_at, &rc);
    bd_sqlite_bind_i64(st, 5, row->paused ? 1 : 0, &rc);
    bd_sqlite_bind_text(st, 6, row->metadata, &rc);
    int ret = bd_sqlite_step_done(s, st, rc, err, "insert study");
    if (!ret && id)
        *id = sqlite3_last_insert_rowid(s->db);
    bd_sqlite_done(st);
    bd_sqlite_leave(s, locked);
    return ret;
}

int bd_sqlite_study_get(bd_store *store, int64_t id, bd_study_row *out, bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    int locked = bd_sqlite_enter(s);
    sqlite3_stmt *st = s->stmt[BD_SQL_STUDY_GET];
    int rc = SQLITE_OK;
    bd_sqlite_bind_i64(st, 1, id, &rc);
    int ret = bd_sqlite_step_row(s, st, rc, err, "read study");
    if (ret == 0)
        ret = bd_err_set(err, BD_ENOTFOUND, NULL, "study %lld not found", (long long)id);
    else if (ret == 1)
        ret = study_read(st, out, err);
    bd_sqlite_done(st);
    bd_sqlite_leave(s, locked);
    return ret;
}

struct study_cb {
    bd_study_fn fn;
    void *arg;
};

static int study_call(const void *row, void *cb)
{
    const struct study_cb *c = cb;
    return c->fn(row, c->arg);
}

static int bind_user(sqlite3_stmt *st, const void *key)
{
    const int64_t *user_id = key;
    return *user_id ? sqlite3_bind_int64(st, 3, *user_id) : SQLITE_OK;
}

int bd_sqlite_study_each(bd_store *store, int64_t user_id, bd_study_fn fn, void *arg, bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    struct study_cb cb = {fn, arg};
    return bd_sqlite_scan(s, user_id ? BD_SQL_STUDY_SCAN_USER : BD_SQL_STUDY_SCAN_ALL, &study_type, bind_user,
                          &user_id, 0, 0, study_call, &cb, err, "list studies");
}

int bd_sqlite_study_index_each(bd_store *store, bd_study_fn fn, void *arg, bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    struct study_cb cb = {fn, arg};
    int64_t none = 0;
    return bd_sqlite_scan(s, BD_SQL_STUDY_SCAN_INDEX, &study_type, bind_user, &none, 0, 0, study_call, &cb, err,
                          "list studies");
}

int bd_sqlite_trial_counts_each(bd_store *store, bd_trial_count_fn fn, void *arg, bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    int locked = bd_sqlite_enter(s);
    sqlite3_stmt *st = s->stmt[BD_SQL_TRIAL_COUNTS];
    int ret;
    while ((ret = bd_sqlite_step_row(s, st, SQLITE_OK, err, "count trials")) == 1) {
        int state = bd_trial_state_parse((const char *)sqlite3_column_text(st, 1));
        if (state < 0) {
            ret = bd_err_set(err, BD_ESTORAGE, NULL, "storage: a trial has an unknown state");
            break;
        }
        if ((ret = fn(sqlite3_column_int64(st, 0), (bd_trial_state)state, sqlite3_column_int64(st, 2), arg)))
            break;
    }
    bd_sqlite_done(st);
    bd_sqlite_leave(s, locked);
    return ret;
}

struct study_page_key {
    int64_t user_id;
    const char *name;
};

static int bind_user_name(sqlite3_stmt *st, const void *key)
{
    const struct study_page_key *k = key;
    int rc = sqlite3_bind_int64(st, 3, k->user_id);
    if (rc == SQLITE_OK && k->name)
        rc = sqlite3_bind_text(st, 4, k->name, -1, SQLITE_STATIC);
    return rc;
}

int bd_sqlite_study_page(bd_store *store, int64_t user_id, const char *name, int64_t after_id, int64_t limit,
                        bd_study_fn fn, void *arg, bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    if (user_id < 1 || limit < 1 || limit > 1000)
        return bd_err_set(err, BD_EINVAL, "limit", "a study page needs a user and a limit from 1 to 1000");
    struct study_cb cb = {fn, arg};
    struct study_page_key k = {user_id, name};
    return bd_sqlite_scan(s, name ? BD_SQL_STUDY_SCAN_NAMED : BD_SQL_STUDY_SCAN_USER, &study_type, bind_user_name,
                          &k, after_id, limit, study_call, &cb, err, "list studies");
}

int bd_sqlite_study_delete(bd_store *store, int64_t id, bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    int locked = bd_sqlite_enter(s);
    sqlite3_stmt *st = s->stmt[BD_SQL_STUDY_DELETE];
    int rc = SQLITE_OK;
    bd_sqlite_bind_i64(st, 1, id, &rc);
    int ret = bd_sqlite_step_done(s, st, rc, err, "delete study");
    if (!ret && sqlite3_changes(s->db) == 0)
        ret = bd_err_set(err, BD_ENOTFOUND, NULL, "study %lld not found", (long long)id);
    bd_sqlite_done(st);
    bd_sqlite_leave(s, locked);
    return ret;
}

/* Runs a one-row UPDATE of studies (?1 = id, ?2 = the value bound by the
 * caller's arguments): BD_ENOTFOUND when no study has the id. */
static int study_update(bd_sqlite *s, enum bd_sql_stmt which, int64_t id, int64_t num, const char *text, int is_text,
                        bd_err *err, const char *what)
{
    int locked = bd_sqlite_enter(s);
    sqlite3_stmt *st = s->stmt[which];
    int rc = SQLITE_OK;
    bd_sqlite_bind_i64(st, 1, id, &rc);
    if (is_text)
        bd_sqlite_bind_text(st, 2, text, &rc);
    else
        bd_sqlite_bind_i64(st, 2, num, &rc);
    int ret = bd_sqlite_step_done(s, st, rc, err, what);
    if (!ret && sqlite3_changes(s->db) == 0)
        ret = bd_err_set(err, BD_ENOTFOUND, NULL, "study %lld not found", (long long)id);
    bd_sqlite_done(st);
    bd_sqlite_leave(s, locked);
    return ret;
}

int bd_sqlite_study_set_paused(bd_store *store, int64_t id, int paused, bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    return study_update(s, BD_SQL_STUDY_SET_PAUSED, id, paused ? 1 : 0, NULL, 0, err, "set study paused");
}

int bd_sqlite_study_set_metadata(bd_store *store, int64_t id, const char *metadata, bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    return study_update(s, BD_SQL_STUDY_SET_METADATA, id, 0, metadata, 1, err, "set study metadata");
}

int bd_sqlite_study_set_definition(bd_store *store, int64_t id, const char *definition, bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    return study_update(s, BD_SQL_STUDY_SET_DEFINITION, id, 0, definition, 1, err, "set study definition");
}
