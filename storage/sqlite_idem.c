/* sqlite_idem.c: stored responses to POSTs that carried an Idempotency-Key,
 * keyed by (user, key). A key is stored once: a second put is BD_ECONFLICT. */
#include "sqlite_internal.h"

int bd_sqlite_idem_get(bd_store *store, int64_t user_id, const char *key, char **fingerprint, char **response,
                      bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    int locked = bd_sqlite_enter(s);
    sqlite3_stmt *st = s->stmt[BD_SQL_IDEM_GET];
    int rc = SQLITE_OK;
    bd_sqlite_bind_i64(st, 1, user_id, &rc);
    bd_sqlite_bind_text(st, 2, key, &rc);
    int ret = bd_sqlite_step_row(s, st, rc, err, "read idempotency record");
    if (ret == 0) {
        ret = bd_err_set(err, BD_ENOTFOUND, NULL, "no response stored for this idempotency key");
    } else if (ret == 1) {
        if (fingerprint)
            *fingerprint = bd_sqlite_col_text(st, 0);
        if (response)
            *response = bd_sqlite_col_text(st, 1);
        ret = 0;
    }
    bd_sqlite_done(st);
    bd_sqlite_leave(s, locked);
    return ret;
}

int bd_sqlite_idem_put(bd_store *store, int64_t user_id, const char *key, const char *fingerprint,
                      const char *response, double now, bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    int locked = bd_sqlite_enter(s);
    sqlite3_stmt *st = s->stmt[BD_SQL_IDEM_PUT];
    int rc = SQLITE_OK;
    bd_sqlite_bind_i64(st, 1, user_id, &rc);
    bd_sqlite_bind_text(st, 2, key, &rc);
    bd_sqlite_bind_text(st, 3, fingerprint, &rc);
    bd_sqlite_bind_text(st, 4, response, &rc);
    bd_sqlite_bind_double(st, 5, now, &rc);
    int ret = bd_sqlite_step_done(s, st, rc, err, "store idempotency record");
    bd_sqlite_done(st);
    bd_sqlite_leave(s, locked);
    return ret;
}

int bd_sqlite_idem_prune(bd_store *store, double before, bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    int locked = bd_sqlite_enter(s);
    sqlite3_stmt *st = s->stmt[BD_SQL_IDEM_PRUNE];
    int rc = SQLITE_OK;
    bd_sqlite_bind_double(st, 1, before, &rc);
    int ret = bd_sqlite_step_done(s, st, rc, err, "prune idempotency records");
    bd_sqlite_done(st);
    bd_sqlite_leave(s, locked);
    return ret;
}
