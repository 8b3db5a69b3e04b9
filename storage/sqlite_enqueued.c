/* sqlite_enqueued.c: configs a user enqueued for a study (table enqueued,
 * schema 5), oldest first. The queue is engine state, not scheduler state:
 * a config handed out becomes an ordinary trial whose CREATED event carries
 * it, so a replay needs nothing from this table. */
#include <stdlib.h>

#include "sqlite_internal.h"

int bd_sqlite_enqueue_push(bd_store *store, int64_t study_id, const char *config, double now, bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    int locked = bd_sqlite_enter(s);
    sqlite3_stmt *st = s->stmt[BD_SQL_ENQUEUE_PUSH];
    int rc = SQLITE_OK;
    bd_sqlite_bind_i64(st, 1, study_id, &rc);
    bd_sqlite_bind_text(st, 2, config, &rc);
    bd_sqlite_bind_double(st, 3, now, &rc);
    int ret = bd_sqlite_step_done(s, st, rc, err, "enqueue config");
    bd_sqlite_done(st);
    bd_sqlite_leave(s, locked);
    return ret;
}

int bd_sqlite_enqueue_pop(bd_store *store, int64_t study_id, int64_t n, bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    int locked = bd_sqlite_enter(s);
    sqlite3_stmt *st = s->stmt[BD_SQL_ENQUEUE_POP];
    int rc = SQLITE_OK;
    bd_sqlite_bind_i64(st, 1, study_id, &rc);
    bd_sqlite_bind_i64(st, 2, n, &rc);
    int ret = bd_sqlite_step_done(s, st, rc, err, "take enqueued configs");
    bd_sqlite_done(st);
    bd_sqlite_leave(s, locked);
    return ret;
}

typedef struct enqueued_row {
    int64_t id;
    char *config;
} enqueued_row;

static int enqueued_read(sqlite3_stmt *st, void *dst, bd_err *err)
{
    enqueued_row *row = dst;
    (void)err;
    row->id = sqlite3_column_int64(st, 0);
    row->config = bd_sqlite_col_text(st, 1);
    return 0;
}

static void enqueued_clear(void *row)
{
    free(((enqueued_row *)row)->config);
    ((enqueued_row *)row)->config = NULL;
}

static const bd_sqlite_rowtype enqueued_type = {sizeof(enqueued_row), enqueued_read, enqueued_clear};

struct enqueued_cb {
    bd_enqueued_fn fn;
    void *arg;
};

static int enqueued_call(const void *row, void *cb)
{
    const struct enqueued_cb *c = cb;
    return c->fn(((const enqueued_row *)row)->config, c->arg);
}

static int bind_study(sqlite3_stmt *st, const void *key)
{
    return sqlite3_bind_int64(st, 3, *(const int64_t *)key);
}

int bd_sqlite_enqueue_each(bd_store *store, int64_t study_id, bd_enqueued_fn fn, void *arg, bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    struct enqueued_cb cb = {fn, arg};
    return bd_sqlite_scan(s, BD_SQL_ENQUEUE_SCAN, &enqueued_type, bind_study, &study_id, 0, 0, enqueued_call, &cb,
                          err, "list enqueued configs");
}
