/* sqlite_events.c: the event log in the SQLite backend, the ordered history
 * each scheduler is rebuilt from. A new event's id is larger than every
 * stored one, so id order is the global order of appends. Types are stored by
 * name, so the enum's order is not part of the file format. */
#include <stdlib.h>
#include <string.h>

#include "sqlite_internal.h"

/* Columns in the order of EVENT_COLS (sqlite_sql.c). */
static int event_read(sqlite3_stmt *st, void *dst, bd_err *err)
{
    bd_event_row *row = dst;
    int type = bd_store_event_type_parse((const char *)sqlite3_column_text(st, 3));
    if (type < 0)
        return bd_err_set(err, BD_ESTORAGE, NULL, "storage: event %lld has an unknown type",
                          (long long)sqlite3_column_int64(st, 0));
    row->id = sqlite3_column_int64(st, 0);
    row->study_id = sqlite3_column_int64(st, 1);
    row->trial_id = sqlite3_column_int64(st, 2);
    row->type = (bd_event_type)type;
    row->step = sqlite3_column_double(st, 4);
    row->has_value = sqlite3_column_int(st, 5);
    row->value = bd_sqlite_col_double(st, 6, row->has_value ? NAN : 0.0);
    row->timeout = sqlite3_column_int(st, 7);
    row->elapsed_seconds = bd_sqlite_col_double(st, 8, NAN);
    row->created_at = sqlite3_column_double(st, 9);
    row->values = bd_sqlite_col_text(st, 10);
    return 0;
}

static void event_clear(void *row)
{
    bd_event_row *r = row;
    free(r->values);
    r->values = NULL;
}

static const bd_sqlite_rowtype event_type = {sizeof(bd_event_row), event_read, event_clear};

int bd_sqlite_event_append(bd_store *store, const bd_event_row *row, int64_t *id, bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    if (!bd_store_event_type_name(row->type))
        return bd_err_set(err, BD_EINVAL, "type", "unknown event type %d", (int)row->type);
    int locked = bd_sqlite_enter(s);
    sqlite3_stmt *st = s->stmt[BD_SQL_EVENT_APPEND];
    int rc = SQLITE_OK;
    bd_sqlite_bind_i64(st, 1, row->study_id, &rc);
    bd_sqlite_bind_id(st, 2, row->trial_id, &rc);
    bd_sqlite_bind_text(st, 3, bd_store_event_type_name(row->type), &rc);
    bd_sqlite_bind_double(st, 4, row->step, &rc);
    bd_sqlite_bind_i64(st, 5, row->has_value ? 1 : 0, &rc);
    bd_sqlite_bind_double(st, 6, row->has_value ? row->value : NAN, &rc);
    bd_sqlite_bind_i64(st, 7, row->timeout ? 1 : 0, &rc);
    bd_sqlite_bind_double(st, 8, row->elapsed_seconds, &rc);
    bd_sqlite_bind_double(st, 9, row->created_at, &rc);
    bd_sqlite_bind_id(st, 10, row->id, &rc);
    bd_sqlite_bind_text(st, 11, row->values, &rc);
    int ret = bd_sqlite_step_done(s, st, rc, err, "append event");
    if (!ret && id)
        *id = sqlite3_last_insert_rowid(s->db);
    bd_sqlite_done(st);
    bd_sqlite_leave(s, locked);
    return ret;
}

struct event_cb {
    bd_event_fn fn;
    void *arg;
};

static int event_call(const void *row, void *cb)
{
    const struct event_cb *c = cb;
    return c->fn(row, c->arg);
}

static int bind_owner(sqlite3_stmt *st, const void *key)
{
    const int64_t *owner_id = key;
    return sqlite3_bind_int64(st, 3, *owner_id);
}

int bd_sqlite_event_each(bd_store *store, int64_t study_id, bd_event_fn fn, void *arg, bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    struct event_cb cb = {fn, arg};
    return bd_sqlite_scan(s, BD_SQL_EVENT_SCAN_STUDY, &event_type, bind_owner, &study_id, 0, 0, event_call, &cb,
                          err, "list events");
}

int bd_sqlite_event_each_of_trial(bd_store *store, int64_t trial_id, bd_event_fn fn, void *arg, bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    struct event_cb cb = {fn, arg};
    return bd_sqlite_scan(s, BD_SQL_EVENT_SCAN_TRIAL, &event_type, bind_owner, &trial_id, 0, 0, event_call, &cb,
                          err, "list trial events");
}

int bd_sqlite_next_ids(bd_store *store, int64_t *trial_id, int64_t *event_id, bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    int locked = bd_sqlite_enter(s);
    sqlite3_stmt *st = s->stmt[BD_SQL_NEXT_IDS];
    int ret = bd_sqlite_step_row(s, st, SQLITE_OK, err, "next ids");
    if (ret == 1) {
        *trial_id = sqlite3_column_int64(st, 0);
        *event_id = sqlite3_column_int64(st, 1);
        ret = 0;
    } else if (ret == 0) {
        ret = bd_err_set(err, BD_ESTORAGE, NULL, "storage: next ids: no row");
    }
    bd_sqlite_done(st);
    bd_sqlite_leave(s, locked);
    return ret;
}
