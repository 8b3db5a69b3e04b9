/* pg_enqueued.c: configs a user enqueued for a study, oldest first, as in
 * sqlite_enqueued.c (engine state, not scheduler state: a replay needs
 * nothing from this table). */
#include <stdlib.h>

#include "pg_internal.h"

int bd_pg_enqueue_push(bd_store *store, int64_t study_id, const char *config, double now, bd_err *err)
{
    bd_pg *s = (bd_pg *)store;
    bd_pg_params p = {0};
    bd_pg_p_i64(&p, study_id);
    bd_pg_p_text(&p, config);
    bd_pg_p_double(&p, now);
    int locked = bd_pg_enter(s);
    int ret = bd_pg_run_done(s, BD_PG_ENQUEUE_PUSH, &p, NULL, err, "enqueue config");
    bd_pg_leave(s, locked);
    return ret;
}

int bd_pg_enqueue_pop(bd_store *store, int64_t study_id, int64_t n, bd_err *err)
{
    bd_pg *s = (bd_pg *)store;
    bd_pg_params p = {0};
    bd_pg_p_i64(&p, study_id);
    bd_pg_p_i64(&p, n);
    int locked = bd_pg_enter(s);
    int ret = bd_pg_run_done(s, BD_PG_ENQUEUE_POP, &p, NULL, err, "take enqueued configs");
    bd_pg_leave(s, locked);
    return ret;
}

typedef struct enqueued_row {
    int64_t id;
    char *config;
} enqueued_row;

static int enqueued_read(const PGresult *res, int r, void *dst, bd_err *err)
{
    enqueued_row *row = dst;
    (void)err;
    row->id = bd_pg_col_i64(res, r, 0);
    row->config = bd_pg_col_text(res, r, 1);
    return 0;
}

static void enqueued_clear(void *row)
{
    free(((enqueued_row *)row)->config);
    ((enqueued_row *)row)->config = NULL;
}

static const bd_pg_rowtype enqueued_type = {sizeof(enqueued_row), enqueued_read, enqueued_clear};

struct enqueued_cb {
    bd_enqueued_fn fn;
    void *arg;
};

static int enqueued_call(const void *row, void *cb)
{
    const struct enqueued_cb *c = cb;
    return c->fn(((const enqueued_row *)row)->config, c->arg);
}

static void bind_study(bd_pg_params *p, const void *key)
{
    bd_pg_p_i64(p, *(const int64_t *)key);
}

int bd_pg_enqueue_each(bd_store *store, int64_t study_id, bd_enqueued_fn fn, void *arg, bd_err *err)
{
    struct enqueued_cb cb = {fn, arg};
    return bd_pg_scan((bd_pg *)store, BD_PG_ENQUEUE_SCAN, &enqueued_type, bind_study, &study_id, 0, 0, enqueued_call,
                      &cb, err, "list enqueued configs");
}
