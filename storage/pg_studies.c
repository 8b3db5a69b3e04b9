/* pg_studies.c: studies in the PostgreSQL backend, as in sqlite_studies.c.
 * Deleting a study deletes its trials, events and enqueued configs through
 * ON DELETE CASCADE. */
#include <stdio.h>
#include <stdlib.h>

#include "pg_internal.h"

/* Columns in the order of STUDY_COLS (pg_sql.c). */
static int study_read(const PGresult *res, int r, void *dst, bd_err *err)
{
    bd_study_row *row = dst;
    (void)err;
    row->id = bd_pg_col_i64(res, r, 0);
    row->user_id = bd_pg_col_i64(res, r, 1);
    row->name = bd_pg_col_text(res, r, 2);
    row->definition = bd_pg_col_text(res, r, 3);
    row->created_at = bd_pg_col_double(res, r, 4, 0);
    row->paused = (int)bd_pg_col_i64(res, r, 5);
    row->metadata = bd_pg_col_text(res, r, 6);
    return 0;
}

static void study_clear(void *row)
{
    bd_store_study_row_clear(row);
}

static const bd_pg_rowtype study_type = {sizeof(bd_study_row), study_read, study_clear};

int bd_pg_study_insert(bd_store *store, const bd_study_row *row, int64_t *id, bd_err *err)
{
    bd_pg *s = (bd_pg *)store;
    bd_pg_params p = {0};
    bd_pg_p_i64(&p, row->user_id);
    bd_pg_p_text(&p, row->name);
    bd_pg_p_text(&p, row->definition);
    bd_pg_p_double(&p, row->created_at);
    bd_pg_p_i64(&p, row->paused ? 1 : 0);
    bd_pg_p_text(&p, row->metadata);
    int ret, locked = bd_pg_enter(s);
    PGresult *res = bd_pg_run(s, BD_PG_STUDY_INSERT, &p, &ret, err, "insert study");
    if (res && id)
        *id = bd_pg_col_i64(res, 0, 0);
    PQclear(res);
    bd_pg_leave(s, locked);
    return ret;
}

int bd_pg_study_get(bd_store *store, int64_t id, bd_study_row *out, bd_err *err)
{
    bd_pg *s = (bd_pg *)store;
    bd_pg_params p = {0};
    bd_pg_p_i64(&p, id);
    int ret, locked = bd_pg_enter(s);
    PGresult *res = bd_pg_run(s, BD_PG_STUDY_GET, &p, &ret, err, "read study");
    if (res && PQntuples(res) == 0)
        ret = bd_err_set(err, BD_ENOTFOUND, NULL, "study %lld not found", (long long)id);
    else if (res)
        ret = study_read(res, 0, out, err);
    PQclear(res);
    bd_pg_leave(s, locked);
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

static void bind_user(bd_pg_params *p, const void *key)
{
    bd_pg_p_i64(p, *(const int64_t *)key);
}

int bd_pg_study_each(bd_store *store, int64_t user_id, bd_study_fn fn, void *arg, bd_err *err)
{
    struct study_cb cb = {fn, arg};
    return bd_pg_scan((bd_pg *)store, user_id ? BD_PG_STUDY_SCAN_USER : BD_PG_STUDY_SCAN_ALL, &study_type,
                      user_id ? bind_user : NULL, &user_id, 0, 0, study_call, &cb, err, "list studies");
}

int bd_pg_study_index_each(bd_store *store, bd_study_fn fn, void *arg, bd_err *err)
{
    struct study_cb cb = {fn, arg};
    return bd_pg_scan((bd_pg *)store, BD_PG_STUDY_SCAN_INDEX, &study_type, NULL, NULL, 0, 0, study_call, &cb, err,
                      "list studies");
}

int bd_pg_trial_counts_each(bd_store *store, bd_trial_count_fn fn, void *arg, bd_err *err)
{
    bd_pg *s = (bd_pg *)store;
    int ret, locked = bd_pg_enter(s);
    PGresult *res = bd_pg_run(s, BD_PG_TRIAL_COUNTS, NULL, &ret, err, "count trials");
    for (int r = 0; res && !ret && r < PQntuples(res); r++) {
        int state = bd_trial_state_parse(PQgetvalue(res, r, 1));
        if (state < 0)
            ret = bd_err_set(err, BD_ESTORAGE, NULL, "storage: a trial has an unknown state");
        else
            ret = fn(bd_pg_col_i64(res, r, 0), (bd_trial_state)state, bd_pg_col_i64(res, r, 2), arg);
    }
    PQclear(res);
    bd_pg_leave(s, locked);
    return ret;
}

struct study_page_key {
    int64_t user_id;
    const char *name;
};

static void bind_user_name(bd_pg_params *p, const void *key)
{
    const struct study_page_key *k = key;
    bd_pg_p_i64(p, k->user_id);
    if (k->name)
        bd_pg_p_text(p, k->name);
}

int bd_pg_study_page(bd_store *store, int64_t user_id, const char *name, int64_t after_id, int64_t limit,
                     bd_study_fn fn, void *arg, bd_err *err)
{
    if (user_id < 1 || limit < 1 || limit > 1000)
        return bd_err_set(err, BD_EINVAL, "limit", "a study page needs a user and a limit from 1 to 1000");
    struct study_cb cb = {fn, arg};
    struct study_page_key k = {user_id, name};
    return bd_pg_scan((bd_pg *)store, name ? BD_PG_STUDY_SCAN_NAMED : BD_PG_STUDY_SCAN_USER, &study_type,
                      bind_user_name, &k, after_id, limit, study_call, &cb, err, "list studies");
}

static int study_missing(bd_pg *s, enum bd_pg_stmt which, const bd_pg_params *p, int64_t id, bd_err *err,
                         const char *what)
{
    char missing[64];
    snprintf(missing, sizeof missing, "study %lld not found", (long long)id);
    return bd_pg_update_one(s, which, p, missing, err, what);
}

int bd_pg_study_delete(bd_store *store, int64_t id, bd_err *err)
{
    bd_pg_params p = {0};
    bd_pg_p_i64(&p, id);
    return study_missing((bd_pg *)store, BD_PG_STUDY_DELETE, &p, id, err, "delete study");
}

int bd_pg_study_set_paused(bd_store *store, int64_t id, int paused, bd_err *err)
{
    bd_pg_params p = {0};
    bd_pg_p_i64(&p, id);
    bd_pg_p_i64(&p, paused ? 1 : 0);
    return study_missing((bd_pg *)store, BD_PG_STUDY_SET_PAUSED, &p, id, err, "set study paused");
}

int bd_pg_study_set_metadata(bd_store *store, int64_t id, const char *metadata, bd_err *err)
{
    bd_pg_params p = {0};
    bd_pg_p_i64(&p, id);
    bd_pg_p_text(&p, metadata);
    return study_missing((bd_pg *)store, BD_PG_STUDY_SET_METADATA, &p, id, err, "set study metadata");
}

int bd_pg_study_set_definition(bd_store *store, int64_t id, const char *definition, bd_err *err)
{
    bd_pg_params p = {0};
    bd_pg_p_i64(&p, id);
    bd_pg_p_text(&p, definition);
    return study_missing((bd_pg *)store, BD_PG_STUDY_SET_DEFINITION, &p, id, err, "set study definition");
}
