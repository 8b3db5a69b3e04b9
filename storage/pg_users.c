/* pg_users.c: users and their API tokens in the PostgreSQL backend, as in
 * sqlite_users.c: tokens are stored as 32-byte hashes (bytea) only; a revoked
 * token stays (its id is never reused) but is no longer found. */
#include <stdio.h>
#include <string.h>

#include "pg_internal.h"

int bd_pg_user_create(bd_store *store, const char *name, int is_admin, double now, int64_t *id, bd_err *err)
{
    bd_pg *s = (bd_pg *)store;
    if (strlen(name) >= sizeof ((bd_user *)0)->name)
        return bd_err_set(err, BD_EINVAL, "name", "user name longer than %zu bytes",
                          sizeof ((bd_user *)0)->name - 1);
    bd_pg_params p = {0};
    bd_pg_p_text(&p, name);
    bd_pg_p_i64(&p, is_admin ? 1 : 0);
    bd_pg_p_double(&p, now);
    int ret, locked = bd_pg_enter(s);
    PGresult *res = bd_pg_run(s, BD_PG_USER_CREATE, &p, &ret, err, "create user");
    if (res && PQntuples(res) == 0)
        ret = bd_err_set(err, BD_ECONFLICT, NULL, "storage: create user: unique key users.name: %s is taken", name);
    else if (res && id)
        *id = bd_pg_col_i64(res, 0, 0);
    PQclear(res);
    bd_pg_leave(s, locked);
    return ret;
}

/* Runs a users SELECT and fills *out from its row. */
static int user_fetch(bd_pg *s, enum bd_pg_stmt which, const bd_pg_params *p, bd_user *out, bd_err *err)
{
    int ret, locked = bd_pg_enter(s);
    PGresult *res = bd_pg_run(s, which, p, &ret, err, "read user");
    if (res && PQntuples(res) == 0) {
        ret = bd_err_set(err, BD_ENOTFOUND, NULL, "user not found");
    } else if (res) {
        memset(out, 0, sizeof *out);
        out->id = bd_pg_col_i64(res, 0, 0);
        snprintf(out->name, sizeof out->name, "%s", PQgetvalue(res, 0, 1));
        out->is_admin = (int)bd_pg_col_i64(res, 0, 2);
        out->created_at = bd_pg_col_double(res, 0, 3, 0);
        out->max_studies = bd_pg_col_null(res, 0, 4) ? -1 : bd_pg_col_i64(res, 0, 4);
        out->max_definition_bytes = bd_pg_col_null(res, 0, 5) ? -1 : bd_pg_col_i64(res, 0, 5);
    }
    PQclear(res);
    bd_pg_leave(s, locked);
    return ret;
}

int bd_pg_user_by_name(bd_store *store, const char *name, bd_user *out, bd_err *err)
{
    bd_pg_params p = {0};
    bd_pg_p_text(&p, name);
    return user_fetch((bd_pg *)store, BD_PG_USER_BY_NAME, &p, out, err);
}

int bd_pg_user_by_id(bd_store *store, int64_t id, bd_user *out, bd_err *err)
{
    bd_pg_params p = {0};
    bd_pg_p_i64(&p, id);
    return user_fetch((bd_pg *)store, BD_PG_USER_BY_ID, &p, out, err);
}

int bd_pg_user_count(bd_store *store, int64_t *count, bd_err *err)
{
    bd_pg *s = (bd_pg *)store;
    int ret, locked = bd_pg_enter(s);
    PGresult *res = bd_pg_run(s, BD_PG_USER_COUNT, NULL, &ret, err, "count users");
    if (res && PQntuples(res) == 1)
        *count = bd_pg_col_i64(res, 0, 0);
    else if (res)
        ret = bd_err_set(err, BD_ESTORAGE, NULL, "storage: count users: no row");
    PQclear(res);
    bd_pg_leave(s, locked);
    return ret;
}

int bd_pg_user_set_limits(bd_store *store, int64_t user_id, int64_t max_studies, int64_t max_definition_bytes,
                          bd_err *err)
{
    bd_pg_params p = {0};
    bd_pg_p_i64(&p, user_id);
    if (max_studies < 0)
        bd_pg_p_text(&p, NULL);
    else
        bd_pg_p_i64(&p, max_studies);
    if (max_definition_bytes < 0)
        bd_pg_p_text(&p, NULL);
    else
        bd_pg_p_i64(&p, max_definition_bytes);
    return bd_pg_update_one((bd_pg *)store, BD_PG_USER_SET_LIMITS, &p, "user not found", err, "set user limits");
}

int bd_pg_user_usage(bd_store *store, int64_t user_id, int64_t *studies, int64_t *definition_bytes, bd_err *err)
{
    bd_pg *s = (bd_pg *)store;
    bd_pg_params p = {0};
    bd_pg_p_i64(&p, user_id);
    int ret, locked = bd_pg_enter(s);
    PGresult *res = bd_pg_run(s, BD_PG_USER_USAGE, &p, &ret, err, "read user usage");
    if (res && PQntuples(res) == 1) {
        *studies = bd_pg_col_i64(res, 0, 0);
        *definition_bytes = bd_pg_col_i64(res, 0, 1);
    } else if (res) {
        ret = bd_err_set(err, BD_ESTORAGE, NULL, "storage: user usage: no row");
    }
    PQclear(res);
    bd_pg_leave(s, locked);
    return ret;
}

int bd_pg_token_add(bd_store *store, int64_t user_id, const uint8_t hash[32], double now, int64_t *token_id,
                    bd_err *err)
{
    bd_pg *s = (bd_pg *)store;
    bd_pg_params p = {0};
    bd_pg_p_i64(&p, user_id);
    bd_pg_p_bytes(&p, hash, 32);
    bd_pg_p_double(&p, now);
    int ret, locked = bd_pg_enter(s);
    PGresult *res = bd_pg_run(s, BD_PG_TOKEN_ADD, &p, &ret, err, "add token");
    if (res && token_id)
        *token_id = bd_pg_col_i64(res, 0, 0);
    PQclear(res);
    bd_pg_leave(s, locked);
    return ret;
}

static int hex_digit(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* A bytea column in PostgreSQL's hex output ("\x" and 64 digits) into hash. */
static int read_hash(const char *text, uint8_t hash[32])
{
    if (strlen(text) != 66 || text[0] != '\\' || text[1] != 'x')
        return -1;
    for (int i = 0; i < 32; i++) {
        int hi = hex_digit(text[2 + 2 * i]), lo = hex_digit(text[3 + 2 * i]);
        if (hi < 0 || lo < 0)
            return -1;
        hash[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

int bd_pg_token_get(bd_store *store, int64_t token_id, uint8_t hash[32], int64_t *user_id, bd_err *err)
{
    bd_pg *s = (bd_pg *)store;
    bd_pg_params p = {0};
    bd_pg_p_i64(&p, token_id);
    int ret, locked = bd_pg_enter(s);
    PGresult *res = bd_pg_run(s, BD_PG_TOKEN_GET, &p, &ret, err, "read token");
    if (res && PQntuples(res) == 0) {
        ret = bd_err_set(err, BD_ENOTFOUND, NULL, "token not found");
    } else if (res) {
        if (read_hash(PQgetvalue(res, 0, 0), hash) != 0)
            ret = bd_err_set(err, BD_ESTORAGE, NULL, "storage: token %lld has a malformed hash", (long long)token_id);
        else if (user_id)
            *user_id = bd_pg_col_i64(res, 0, 1);
    }
    PQclear(res);
    bd_pg_leave(s, locked);
    return ret;
}

int bd_pg_token_revoke(bd_store *store, int64_t token_id, bd_err *err)
{
    bd_pg_params p = {0};
    bd_pg_p_i64(&p, token_id);
    return bd_pg_update_one((bd_pg *)store, BD_PG_TOKEN_REVOKE, &p, "token not found", err, "revoke token");
}
