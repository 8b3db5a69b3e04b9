/* pg_events.c: the event log in the PostgreSQL backend, as in
 * sqlite_events.c: a new event's id is larger than every stored one, so id
 * order is the global order of appends; types are stored by name. */
#include <stdlib.h>

#include "pg_internal.h"

/* Columns in the order of EVENT_COLS (pg_sql.c). */
static int event_read(const PGresult *res, int r, void *dst, bd_err *err)
{
    bd_event_row *row = dst;
    int type = bd_store_event_type_parse(PQgetvalue(res, r, 3));
    if (type < 0)
        return bd_err_set(err, BD_ESTORAGE, NULL, "storage: event %lld has an unknown type",
                          (long long)bd_pg_col_i64(res, r, 0));
    row->id = bd_pg_col_i64(res, r, 0);
    row->study_id = bd_pg_col_i64(res, r, 1);
    row->trial_id = bd_pg_col_i64(res, r, 2);
    row->type = (bd_event_type)type;
    row->step = bd_pg_col_double(res, r, 4, 0);
    row->has_value = (int)bd_pg_col_i64(res, r, 5);
    row->value = bd_pg_col_double(res, r, 6, row->has_value ? NAN : 0.0);
    row->timeout = (int)bd_pg_col_i64(res, r, 7);
    row->elapsed_seconds = bd_pg_col_double(res, r, 8, NAN);
    row->created_at = bd_pg_col_double(res, r, 9, 0);
    row->values = bd_pg_col_text(res, r, 10);
    return 0;
}

static void event_clear(void *row)
{
    bd_event_row *e = row;
    free(e->values);
    e->values = NULL;
}

static const bd_pg_rowtype event_type = {sizeof(bd_event_row), event_read, event_clear};

int bd_pg_event_append(bd_store *store, const bd_event_row *row, int64_t *id, bd_err *err)
{
    bd_pg *s = (bd_pg *)store;
    const char *type = bd_store_event_type_name(row->type);
    if (!type)
        return bd_err_set(err, BD_EINVAL, "type", "unknown event type %d", (int)row->type);
    bd_pg_params p = {0};
    bd_pg_p_i64(&p, row->study_id);
    bd_pg_p_id(&p, row->trial_id);
    bd_pg_p_text(&p, type);
    bd_pg_p_double(&p, row->step);
    bd_pg_p_i64(&p, row->has_value ? 1 : 0);
    bd_pg_p_double(&p, row->has_value ? row->value : NAN);
    bd_pg_p_i64(&p, row->timeout ? 1 : 0);
    bd_pg_p_double(&p, row->elapsed_seconds);
    bd_pg_p_double(&p, row->created_at);
    bd_pg_p_id(&p, row->id);
    bd_pg_p_text(&p, row->values);
    int ret, locked = bd_pg_enter(s);
    PGresult *res = bd_pg_run(s, BD_PG_EVENT_APPEND, &p, &ret, err, "append event");
    if (res && PQntuples(res) == 0)
        ret = bd_err_set(err, BD_ECONFLICT, NULL, "storage: append event: unique key events.id: %lld is taken", (long long)row->id);
    else if (res && id)
        *id = bd_pg_col_i64(res, 0, 0);
    PQclear(res);
    bd_pg_leave(s, locked);
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

static void bind_owner(bd_pg_params *p, const void *key)
{
    bd_pg_p_i64(p, *(const int64_t *)key);
}

int bd_pg_event_each(bd_store *store, int64_t study_id, bd_event_fn fn, void *arg, bd_err *err)
{
    struct event_cb cb = {fn, arg};
    return bd_pg_scan((bd_pg *)store, BD_PG_EVENT_SCAN_STUDY, &event_type, bind_owner, &study_id, 0, 0, event_call,
                      &cb, err, "list events");
}

int bd_pg_event_each_of_trial(bd_store *store, int64_t trial_id, bd_event_fn fn, void *arg, bd_err *err)
{
    struct event_cb cb = {fn, arg};
    return bd_pg_scan((bd_pg *)store, BD_PG_EVENT_SCAN_TRIAL, &event_type, bind_owner, &trial_id, 0, 0, event_call,
                      &cb, err, "list trial events");
}

int bd_pg_next_ids(bd_store *store, int64_t *trial_id, int64_t *event_id, bd_err *err)
{
    bd_pg *s = (bd_pg *)store;
    int ret, locked = bd_pg_enter(s);
    PGresult *res = bd_pg_run(s, BD_PG_NEXT_IDS, NULL, &ret, err, "next ids");
    if (res && PQntuples(res) == 1) {
        *trial_id = bd_pg_col_i64(res, 0, 0);
        *event_id = bd_pg_col_i64(res, 0, 1);
    } else if (res) {
        ret = bd_err_set(err, BD_ESTORAGE, NULL, "storage: next ids: no row");
    }
    PQclear(res);
    bd_pg_leave(s, locked);
    return ret;
}
