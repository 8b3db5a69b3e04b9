/* sqlite_stmt.c: the statement helpers every file of the SQLite backend
 * calls: reset, step, turn a SQLite code into a BD_E* code, read a text
 * column, and scans in batches. The bottom of the backend: it calls nothing
 * of the other sqlite_*.c files (only group_commit.c's lock and scan.c), so
 * sqlite_store.c and the table files all call down to it. */
#include <stdio.h>
#include <stdlib.h>

#include "scan.h"
#include "sqlite_internal.h"

#define SCAN_BATCH 256

void bd_sqlite_done(sqlite3_stmt *st)
{
    sqlite3_reset(st);
    sqlite3_clear_bindings(st); /* always SQLITE_OK */
}

int bd_sqlite_fail(bd_sqlite *s, int rc, bd_err *err, const char *what)
{
    int code = BD_ESTORAGE;
    if ((rc & 0xff) == SQLITE_CONSTRAINT) {
        int ext = sqlite3_extended_errcode(s->db);
        if (ext == SQLITE_CONSTRAINT_UNIQUE || ext == SQLITE_CONSTRAINT_PRIMARYKEY)
            code = BD_ECONFLICT;
        else if (ext == SQLITE_CONSTRAINT_FOREIGNKEY)
            code = BD_ENOTFOUND;
    }
    return bd_err_set(err, code, NULL, "storage: %s: %s", what, sqlite3_errmsg(s->db));
}

int bd_sqlite_step_done(bd_sqlite *s, sqlite3_stmt *st, int rc, bd_err *err, const char *what)
{
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    return rc == SQLITE_DONE ? 0 : bd_sqlite_fail(s, rc, err, what);
}

int bd_sqlite_step_row(bd_sqlite *s, sqlite3_stmt *st, int rc, bd_err *err, const char *what)
{
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        return 1;
    return rc == SQLITE_DONE ? 0 : bd_sqlite_fail(s, rc, err, what);
}

char *bd_sqlite_col_text(sqlite3_stmt *st, int i)
{
    if (sqlite3_column_type(st, i) == SQLITE_NULL)
        return NULL;
    const char *text = (const char *)sqlite3_column_text(st, i);
    if (!text) {
        fprintf(stderr, "banditd: storage: out of memory reading a text column\n");
        abort();
    }
    return bd_xstrdup(text);
}

/* ---- scans ---- */

/* Reads up to want rows of the bound statement st into rows; *n receives how many. */
static int fill_batch(bd_sqlite *s, sqlite3_stmt *st, const bd_sqlite_rowtype *type, char *rows, int want, int *n,
                      int64_t *last_id, bd_err *err, const char *what)
{
    int ret = 0;
    *n = 0;
    while (*n < want) {
        ret = bd_sqlite_step_row(s, st, SQLITE_OK, err, what);
        if (ret <= 0)
            break;
        *last_id = sqlite3_column_int64(st, 0);
        ret = type->read(st, rows + (size_t)*n * type->size, err);
        if (ret)
            break;
        ++*n;
    }
    return ret;
}

/* One batch under the store lock: binds (after_id, want) and the caller's
 * key, reads up to want rows into rows; *last_id receives the last row's id. */
static int read_batch(bd_sqlite *s, enum bd_sql_stmt which, const bd_sqlite_rowtype *type,
                      int (*bind)(sqlite3_stmt *st, const void *key), const void *key, int64_t after_id, int want,
                      char *rows, int *n, int64_t *last_id, bd_err *err, const char *what)
{
    int locked = bd_sqlite_enter(s);
    sqlite3_stmt *st = s->stmt[which];
    int rc = SQLITE_OK, ret;
    bd_sqlite_bind_i64(st, 1, after_id, &rc);
    bd_sqlite_bind_i64(st, 2, want, &rc);
    if (rc == SQLITE_OK)
        rc = bind(st, key);
    if (rc != SQLITE_OK)
        ret = bd_sqlite_fail(s, rc, err, what);
    else
        ret = fill_batch(s, st, type, rows, want, n, last_id, err, what);
    bd_sqlite_done(st);
    bd_sqlite_leave(s, locked);
    return ret;
}

/* bd_scan's reader: one of this backend's statements with a caller's key. */
typedef struct sqlite_scan {
    bd_sqlite *s;
    enum bd_sql_stmt which;
    const bd_sqlite_rowtype *type;
    int (*bind)(sqlite3_stmt *st, const void *key);
    const void *key;
    const char *what;
} sqlite_scan;

static int scan_read(void *ctx, int64_t after_id, int want, char *rows, int *n, int64_t *last_id, bd_err *err)
{
    const sqlite_scan *c = ctx;
    return read_batch(c->s, c->which, c->type, c->bind, c->key, after_id, want, rows, n, last_id, err, c->what);
}

int bd_sqlite_scan(bd_sqlite *s, enum bd_sql_stmt which, const bd_sqlite_rowtype *type,
                   int (*bind)(sqlite3_stmt *st, const void *key), const void *key, int64_t after_id,
                   int64_t limit, int (*call)(const void *row, void *cb), void *cb, bd_err *err,
                   const char *what)
{
    sqlite_scan c = {s, which, type, bind, key, what};
    bd_scan_rows rows = {type->size, type->clear};
    return bd_scan(scan_read, &c, &rows, SCAN_BATCH, after_id, limit, call, cb, err);
}

int bd_sqlite_scan_once(bd_sqlite *s, enum bd_sql_stmt which, const bd_sqlite_rowtype *type,
                        int (*bind)(sqlite3_stmt *st, const void *key), const void *key, int64_t limit,
                        int (*call)(const void *row, void *cb), void *cb, bd_err *err, const char *what)
{
    sqlite_scan c = {s, which, type, bind, key, what};
    bd_scan_rows rows = {type->size, type->clear};
    return bd_scan_once(scan_read, &c, &rows, limit, call, cb, err);
}
