/* pg_conn.c: the helpers every file of the PostgreSQL backend calls: a
 * connection (bd_pg_connect), a statement outside the prepared set
 * (bd_pg_exec_simple), libpq's messages on one line, the parameters, running
 * a prepared statement, reading its columns, and scans in batches. The
 * bottom of the backend: it calls nothing of the other pg_*.c files (only
 * group_commit.c's lock and scan.c), so pg_store.c, pg_schema.c,
 * pg_cluster.c and the table files all call down to it. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg_internal.h"
#include "scan.h"

#define SCAN_BATCH 256

/* ---- connections ---- */
PGconn *bd_pg_connect(const char *url)
{
    /* Later keywords override earlier ones; dbname (the URL, expanded)
     * comes last so that what the operator wrote there wins. */
    static const char *const keys[] = {"connect_timeout", "keepalives", "keepalives_idle", "keepalives_interval",
                                       "keepalives_count", "dbname", NULL};
    const char *values[] = {"5", "1", "10", "3", "3", url, NULL};
    return PQconnectdbParams(keys, values, 1);
}

int bd_pg_exec_simple(PGconn *conn, const char *sql, bd_err *err, const char *what)
{
    PGresult *res = PQexec(conn, sql);
    ExecStatusType st = PQresultStatus(res);
    int ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
    if (!ok) {
        char line[512];
        bd_pg_one_line(PQerrorMessage(conn), line, sizeof line);
        bd_err_set(err, BD_ESTORAGE, NULL, "storage: %s: %s", what, line);
    }
    PQclear(res);
    return ok ? 0 : BD_ESTORAGE;
}

/* ---- parameters, running, columns ---- */

static int add(bd_pg_params *p)
{
    if (p->n >= BD_PG_MAX_PARAMS) {
        fprintf(stderr, "banditd: storage: too many statement parameters\n");
        abort();
    }
    p->format[p->n] = 0;
    p->length[p->n] = 0;
    return p->n++;
}

void bd_pg_p_i64(bd_pg_params *p, int64_t v)
{
    int i = add(p);
    snprintf(p->buf[i], sizeof p->buf[i], "%" PRId64, v);
    p->value[i] = p->buf[i];
}

void bd_pg_p_id(bd_pg_params *p, int64_t v)
{
    if (v)
        bd_pg_p_i64(p, v);
    else
        p->value[add(p)] = NULL;
}

void bd_pg_p_double(bd_pg_params *p, double v)
{
    int i = add(p);
    if (isnan(v)) {
        p->value[i] = NULL;
        return;
    }
    if (isinf(v))
        snprintf(p->buf[i], sizeof p->buf[i], "%s", v > 0 ? "Infinity" : "-Infinity");
    else
        snprintf(p->buf[i], sizeof p->buf[i], "%.17g", v); /* 17 digits: exact */
    p->value[i] = p->buf[i];
}

void bd_pg_p_text(bd_pg_params *p, const char *v)
{
    p->value[add(p)] = v;
}

void bd_pg_p_bytes(bd_pg_params *p, const void *v, int len)
{
    int i = add(p);
    p->value[i] = v;
    p->length[i] = len;
    p->format[i] = 1;
}

void bd_pg_one_line(const char *msg, char *out, size_t size)
{
    size_t n = 0;
    for (const char *p = msg; *p && n + 1 < size; p++) {
        char c = *p == '\n' || *p == '\t' || *p == '\r' ? ' ' : *p;
        if (c == ' ' && (n == 0 || out[n - 1] == ' '))
            continue;
        out[n++] = c;
    }
    while (n > 0 && out[n - 1] == ' ')
        n--;
    out[n] = '\0';
}

/* The BD_E* code of a failed result, and its message into err. */
static int fail(bd_pg *s, PGresult *res, bd_err *err, const char *what)
{
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    const char *msg = res ? PQresultErrorMessage(res) : "";
    int code = BD_ESTORAGE;
    if (state && strcmp(state, "23505") == 0)
        code = BD_ECONFLICT;
    else if (state && strcmp(state, "23503") == 0)
        code = BD_ENOTFOUND;
    if (!msg || !*msg)
        msg = PQerrorMessage(s->conn);
    char one_line[512];
    bd_pg_one_line(msg, one_line, sizeof one_line);
    return bd_err_set(err, code, NULL, "storage: %s: %s", what, one_line);
}

PGresult *bd_pg_run(bd_pg *s, enum bd_pg_stmt which, const bd_pg_params *p, int *ret, bd_err *err,
                    const char *what)
{
    char name[16];
    snprintf(name, sizeof name, "bd%d", (int)which);
    PGresult *res = PQexecPrepared(s->conn, name, p ? p->n : 0, p ? p->value : NULL, p ? p->length : NULL,
                                   p ? p->format : NULL, 0);
    ExecStatusType st = PQresultStatus(res);
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
        *ret = 0;
        return res;
    }
    *ret = fail(s, res, err, what);
    PQclear(res);
    return NULL;
}

int bd_pg_run_done(bd_pg *s, enum bd_pg_stmt which, const bd_pg_params *p, int64_t *changed, bd_err *err,
                   const char *what)
{
    int ret;
    PGresult *res = bd_pg_run(s, which, p, &ret, err, what);
    if (res && changed)
        *changed = strtoll(PQcmdTuples(res), NULL, 10);
    PQclear(res);
    return ret;
}

int bd_pg_col_null(const PGresult *res, int r, int c)
{
    return PQgetisnull(res, r, c);
}

int64_t bd_pg_col_i64(const PGresult *res, int r, int c)
{
    return PQgetisnull(res, r, c) ? 0 : strtoll(PQgetvalue(res, r, c), NULL, 10);
}

double bd_pg_col_double(const PGresult *res, int r, int c, double if_null)
{
    return PQgetisnull(res, r, c) ? if_null : strtod(PQgetvalue(res, r, c), NULL);
}

char *bd_pg_col_text(const PGresult *res, int r, int c)
{
    return PQgetisnull(res, r, c) ? NULL : bd_xstrdup(PQgetvalue(res, r, c));
}

int bd_pg_update_one(bd_pg *s, enum bd_pg_stmt which, const bd_pg_params *p, const char *missing, bd_err *err,
                      const char *what)
{
    int64_t changed = 0;
    int locked = bd_pg_enter(s);
    int ret = bd_pg_run_done(s, which, p, &changed, err, what);
    if (!ret && changed == 0)
        ret = bd_err_set(err, BD_ENOTFOUND, NULL, "%s", missing);
    bd_pg_leave(s, locked);
    return ret;
}

/* ---- scans ---- */

/* One batch under the lock: runs which with (after_id, want, bind's), copies
 * its rows into rows (*n of them) and *last_id; the result is freed before
 * the lock is left. */
static int read_batch(bd_pg *s, enum bd_pg_stmt which, const bd_pg_rowtype *type,
                      void (*bind)(bd_pg_params *p, const void *key), const void *key, int64_t after_id, int want,
                      char *rows, int *n, int64_t *last_id, bd_err *err, const char *what)
{
    bd_pg_params p = {0};
    bd_pg_p_i64(&p, after_id);
    bd_pg_p_i64(&p, want);
    if (bind)
        bind(&p, key);
    int locked = bd_pg_enter(s), ret;
    PGresult *res = bd_pg_run(s, which, &p, &ret, err, what);
    *n = 0;
    int got = res ? PQntuples(res) : 0;
    for (int r = 0; !ret && r < got && r < want; r++) {
        *last_id = bd_pg_col_i64(res, r, 0);
        if ((ret = type->read(res, r, rows + (size_t)r * type->size, err)))
            break;
        ++*n;
    }
    PQclear(res);
    bd_pg_leave(s, locked);
    return ret;
}

/* bd_scan's reader: one of this backend's statements with a caller's key. */
typedef struct pg_scan {
    bd_pg *s;
    enum bd_pg_stmt which;
    const bd_pg_rowtype *type;
    void (*bind)(bd_pg_params *p, const void *key);
    const void *key;
    const char *what;
} pg_scan;

static int scan_read(void *ctx, int64_t after_id, int want, char *rows, int *n, int64_t *last_id, bd_err *err)
{
    const pg_scan *c = ctx;
    return read_batch(c->s, c->which, c->type, c->bind, c->key, after_id, want, rows, n, last_id, err, c->what);
}

int bd_pg_scan(bd_pg *s, enum bd_pg_stmt which, const bd_pg_rowtype *type,
               void (*bind)(bd_pg_params *p, const void *key), const void *key, int64_t after_id, int64_t limit,
               int (*call)(const void *row, void *cb), void *cb, bd_err *err, const char *what)
{
    pg_scan c = {s, which, type, bind, key, what};
    bd_scan_rows rows = {type->size, type->clear};
    return bd_scan(scan_read, &c, &rows, SCAN_BATCH, after_id, limit, call, cb, err);
}

int bd_pg_scan_once(bd_pg *s, enum bd_pg_stmt which, const bd_pg_rowtype *type,
                    void (*bind)(bd_pg_params *p, const void *key), const void *key, int64_t limit,
                    int (*call)(const void *row, void *cb), void *cb, bd_err *err, const char *what)
{
    pg_scan c = {s, which, type, bind, key, what};
    bd_scan_rows rows = {type->size, type->clear};
    return bd_scan_once(scan_read, &c, &rows, limit, call, cb, err);
}
