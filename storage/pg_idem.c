/* pg_idem.c: stored responses to POSTs that carried an Idempotency-Key,
 * keyed by (user, key), as in sqlite_idem.c: a second put is BD_ECONFLICT. */
#include "pg_internal.h"

int bd_pg_idem_get(bd_store *store, int64_t user_id, const char *key, char **fingerprint, char **response,
                   bd_err *err)
{
    bd_pg *s = (bd_pg *)store;
    bd_pg_params p = {0};
    bd_pg_p_i64(&p, user_id);
    bd_pg_p_text(&p, key);
    int ret, locked = bd_pg_enter(s);
    PGresult *res = bd_pg_run(s, BD_PG_IDEM_GET, &p, &ret, err, "read idempotency record");
    if (res && PQntuples(res) == 0) {
        ret = bd_err_set(err, BD_ENOTFOUND, NULL, "no response stored for this idempotency key");
    } else if (res) {
        if (fingerprint)
            *fingerprint = bd_pg_col_text(res, 0, 0);
        if (response)
            *response = bd_pg_col_text(res, 0, 1);
    }
    PQclear(res);
    bd_pg_leave(s, locked);
    return ret;
}

int bd_pg_idem_put(bd_store *store, int64_t user_id, const char *key, const char *fingerprint, const char *response,
                   double now, bd_err *err)
{
    bd_pg *s = (bd_pg *)store;
    bd_pg_params p = {0};
    bd_pg_p_i64(&p, user_id);
    bd_pg_p_text(&p, key);
    bd_pg_p_text(&p, fingerprint);
    bd_pg_p_text(&p, response);
    bd_pg_p_double(&p, now);
    int ret, locked = bd_pg_enter(s);
    PGresult *res = bd_pg_run(s, BD_PG_IDEM_PUT, &p, &ret, err, "store idempotency record");
    if (res && PQntuples(res) == 0)
        ret = bd_err_set(err, BD_ECONFLICT, NULL, "storage: store idempotency record: unique key idempotency (user_id, key): the key is stored");
    PQclear(res);
    bd_pg_leave(s, locked);
    return ret;
}

int bd_pg_idem_prune(bd_store *store, double before, bd_err *err)
{
    bd_pg *s = (bd_pg *)store;
    bd_pg_params p = {0};
    bd_pg_p_double(&p, before);
    int locked = bd_pg_enter(s);
    int ret = bd_pg_run_done(s, BD_PG_IDEM_PRUNE, &p, NULL, err, "prune idempotency records");
    bd_pg_leave(s, locked);
    return ret;
}
