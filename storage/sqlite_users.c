/* sqlite_users.c: users and their API tokens in the SQLite backend. Tokens
 * are stored as 32-byte hashes only; a revoked token stays in the table (its
 * id is never reused) but is no longer found. */
#include <stdio.h>
#include <string.h>

#include "sqlite_internal.h"

int bd_sqlite_user_create(bd_store *store, const char *name, int is_admin, double now, int64_t *id, bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    if (strlen(name) >= sizeof ((bd_user *)0)->name)
        return bd_err_set(err, BD_EINVAL, "name", "user name longer than %zu bytes",
                          sizeof ((bd_user *)0)->name - 1);
    int locked = bd_sqlite_enter(s);
    sqlite3_stmt *st = s->stmt[BD_SQL_USER_CREATE];
    int rc = SQLITE_OK;
    bd_sqlite_bind_text(st, 1, name, &rc);
    bd_sqlite_bind_i64(st, 2, is_admin ? 1 : 0, &rc);
    bd_sqlite_bind_double(st, 3, now, &rc);
    int ret = bd_sqlite_step_done(s, st, rc, err, "create user");
    if (!ret && id)
        *id = sqlite3_last_insert_rowid(s->db);
    bd_sqlite_done(st);
    bd_sqlite_leave(s, locked);
    return ret;
}

/* Runs a bound users SELECT and fills *out from its row. */
static int user_fetch(bd_sqlite *s, sqlite3_stmt *st, int rc, bd_user *out, bd_err *err)
{
    int ret = bd_sqlite_step_row(s, st, rc, err, "read user");
    if (ret == 0)
        return bd_err_set(err, BD_ENOTFOUND, NULL, "user not found");
    if (ret < 0)
        return ret;
    const unsigned char *name = sqlite3_column_text(st, 1);
    memset(out, 0, sizeof *out);
    out->id = sqlite3_column_int64(st, 0);
    snprintf(out->name, sizeof out->name, "%s", name ? (const char *)name : "");
    out->is_admin = sqlite3_column_int(st, 2);
    out->created_at = sqlite3_column_double(st, 3);
    out->max_studies = sqlite3_column_type(st, 4) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 4);
    out->max_definition_bytes = sqlite3_column_type(st, 5) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 5);
    return 0;
}

int bd_sqlite_user_by_name(bd_store *store, const char *name, bd_user *out, bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    int locked = bd_sqlite_enter(s);
    sqlite3_stmt *st = s->stmt[BD_SQL_USER_BY_NAME];
    int rc = SQLITE_OK;
    bd_sqlite_bind_text(st, 1, name, &rc);
    int ret = user_fetch(s, st, rc, out, err);
    bd_sqlite_done(st);
    bd_sqlite_leave(s, locked);
    return ret;
}

int bd_sqlite_user_by_id(bd_store *store, int64_t id, bd_user *out, bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    int locked = bd_sqlite_enter(s);
    sqlite3_stmt *st = s->stmt[BD_SQL_USER_BY_ID];
    int rc = SQLITE_OK;
    bd_sqlite_bind_i64(st, 1, id, &rc);
    int ret = user_fetch(s, st, rc, out, err);
    bd_sqlite_done(st);
    bd_sqlite_leave(s, locked);
    return ret;
}

int bd_sqlite_user_count(bd_store *store, int64_t *count, bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    int locked = bd_sqlite_enter(s);
    sqlite3_stmt *st = s->stmt[BD_SQL_USER_COUNT];
    int ret = bd_sqlite_step_row(s, st, SQLITE_OK, err, "count users");
    if (ret == 1) {
        *count = sqlite3_column_int64(st, 0);
        ret = 0;
    } else if (ret == 0) {
        ret = bd_err_set(err, BD_ESTORAGE, NULL, "storage: count users: no row");
    }
    bd_sqlite_done(st);
    bd_sqlite_leave(s, locked);
    return ret;
}

int bd_sqlite_user_set_limits(bd_store *store, int64_t user_id, int64_t max_studies, int64_t max_definition_bytes,
                             bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    int locked = bd_sqlite_enter(s);
    sqlite3_stmt *st = s->stmt[BD_SQL_USER_SET_LIMITS];
    int rc = SQLITE_OK;
    bd_sqlite_bind_i64(st, 1, user_id, &rc);
    if (rc == SQLITE_OK)
        rc = max_studies < 0 ? sqlite3_bind_null(st, 2) : sqlite3_bind_int64(st, 2, max_studies);
    if (rc == SQLITE_OK)
        rc = max_definition_bytes < 0 ? sqlite3_bind_null(st, 3) : sqlite3_bind_int64(st, 3, max_definition_bytes);
    int ret = bd_sqlite_step_done(s, st, rc, err, "set user limits");
    if (ret == 0 && sqlite3_changes(s->db) == 0)
        ret = bd_err_set(err, BD_ENOTFOUND, NULL, "user not found");
    bd_sqlite_done(st);
    bd_sqlite_leave(s, locked);
    return ret;
}

int bd_sqlite_user_usage(bd_store *store, int64_t user_id, int64_t *studies, int64_t *definition_bytes, bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    int locked = bd_sqlite_enter(s);
    sqlite3_stmt *st = s->stmt[BD_SQL_USER_USAGE];
    int rc = SQLITE_OK;
    bd_sqlite_bind_i64(st, 1, user_id, &rc);
    int ret = bd_sqlite_step_row(s, st, rc, err, "read user usage");
    if (ret == 1) {
        *studies = sqlite3_column_int64(st, 0);
        *definition_bytes = (int64_t)sqlite3_column_double(st, 1);
        ret = 0;
    } else if (ret == 0) {
        ret = bd_err_set(err, BD_ESTORAGE, NULL, "storage: user usage: no row");
    }
    bd_sqlite_done(st);
    bd_sqlite_leave(s, locked);
    return ret;
}

int bd_sqlite_token_add(bd_store *store, int64_t user_id, const uint8_t hash[32], double now, int64_t *token_id,
                       bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    int locked = bd_sqlite_enter(s);
    sqlite3_stmt *st = s->stmt[BD_SQL_TOKEN_ADD];
    int rc = SQLITE_OK;
    bd_sqlite_bind_i64(st, 1, user_id, &rc);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_blob(st, 2, hash, 32, SQLITE_STATIC);
    bd_sqlite_bind_double(st, 3, now, &rc);
    int ret = bd_sqlite_step_done(s, st, rc, err, "add token");
    if (!ret && token_id)
        *token_id = sqlite3_last_insert_rowid(s->db);
    bd_sqlite_done(st);
    bd_sqlite_leave(s, locked);
    return ret;
}

int bd_sqlite_token_get(bd_store *store, int64_t token_id, uint8_t hash[32], int64_t *user_id, bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    int locked = bd_sqlite_enter(s);
    sqlite3_stmt *st = s->stmt[BD_SQL_TOKEN_GET];
    int rc = SQLITE_OK;
    bd_sqlite_bind_i64(st, 1, token_id, &rc);
    int ret = bd_sqlite_step_row(s, st, rc, err, "read token");
    if (ret == 0) {
        ret = bd_err_set(err, BD_ENOTFOUND, NULL, "token not found");
    } else if (ret == 1) {
        const void *blob = sqlite3_column_blob(st, 0);
        if (!blob || sqlite3_column_bytes(st, 0) != 32) {
            ret = bd_err_set(err, BD_ESTORAGE, NULL, "storage: token %lld has a malformed hash",
                             (long long)token_id);
        } else {
            memcpy(hash, blob, 32);
            if (user_id)
                *user_id = sqlite3_column_int64(st, 1);
            ret = 0;
        }
    }
    bd_sqlite_done(st);
    bd_sqlite_leave(s, locked);
    return ret;
}

int bd_sqlite_token_revoke(bd_store *store, int64_t token_id, bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    int locked = bd_sqlite_enter(s);
    sqlite3_stmt *st = s->stmt[BD_SQL_TOKEN_REVOKE];
    int rc = SQLITE_OK;
    bd_sqlite_bind_i64(st, 1, token_id, &rc);
    int ret = bd_sqlite_step_done(s, st, rc, err, "revoke token");
    if (!ret && sqlite3_changes(s->db) == 0)
        ret = bd_err_set(err, BD_ENOTFOUND, NULL, "token not found");
    bd_sqlite_done(st);
    bd_sqlite_leave(s, locked);
    return ret;
}

int bd_sqlite_lock_user(bd_store *store, int64_t user_id, bd_err *err)
{
    /* One daemon per SQLite file: its store lock already serializes. */
    (void)store;
    (void)user_id;
    (void)err;
    return 0;
}
