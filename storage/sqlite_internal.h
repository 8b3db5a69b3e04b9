/* sqlite_internal.h: what the files of the SQLite backend share, and nothing
 * outside storage/ may include: the connection record, the cached statements,
 * the lock protocol and the helpers that bind, read and turn SQLite codes
 * into BD_E* codes.
 *
 * Invariants:
 * - Every use of db happens with mu held, either by the thread that opened a
 *   transaction (bd_store_begin .. commit/rollback) or for one call.
 * - Cached statements are reset and their bindings cleared before mu is
 *   released, so none is ever active between calls (or inside a callback).
 * - Every SELECT that scans rows has the row id as column 0, "id > ?1" and
 *   "LIMIT ?2"; its own filters start at ?3 (see bd_sqlite_scan). */
#ifndef BD_SQLITE_INTERNAL_H
#define BD_SQLITE_INTERNAL_H

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sqlite3.h>

#include "store_ops.h"

/* The cached statements; their SQL is in sqlite_sql.c. */
enum bd_sql_stmt {
    BD_SQL_BEGIN,
    BD_SQL_COMMIT,
    BD_SQL_ROLLBACK,
    BD_SQL_SAVEPOINT,
    BD_SQL_RELEASE,
    BD_SQL_ROLLBACK_TO,
    BD_SQL_USER_CREATE,
    BD_SQL_USER_BY_NAME,
    BD_SQL_USER_BY_ID,
    BD_SQL_USER_COUNT,
    BD_SQL_USER_SET_LIMITS,
    BD_SQL_USER_USAGE,
    BD_SQL_TOKEN_ADD,
    BD_SQL_TOKEN_GET,
    BD_SQL_TOKEN_REVOKE,
    BD_SQL_STUDY_INSERT,
    BD_SQL_STUDY_GET,
    BD_SQL_STUDY_SCAN_ALL,
    BD_SQL_STUDY_SCAN_INDEX,
    BD_SQL_STUDY_SCAN_USER,
    BD_SQL_STUDY_SCAN_NAMED,
    BD_SQL_STUDY_DELETE,
    BD_SQL_STUDY_SET_PAUSED,
    BD_SQL_STUDY_SET_METADATA,
    BD_SQL_STUDY_SET_DEFINITION,
    BD_SQL_TRIAL_COUNTS,
    BD_SQL_TRIAL_INSERT,
    BD_SQL_TRIAL_GET,
    BD_SQL_TRIAL_STATE,
    BD_SQL_TRIAL_FINISH,
    BD_SQL_TRIAL_SET_LEASE,
    BD_SQL_TRIAL_SET_USER_ATTRS,
    BD_SQL_TRIAL_SET_CONFIG,
    BD_SQL_TRIAL_SCAN,
    BD_SQL_TRIAL_SCAN_EXPIRED,
    BD_SQL_TRIAL_BEST_MIN,
    BD_SQL_TRIAL_BEST_MAX,
    BD_SQL_TRIAL_SCAN_STEPS,
    BD_SQL_EVENT_APPEND,
    BD_SQL_EVENT_SCAN_STUDY,
    BD_SQL_EVENT_SCAN_TRIAL,
    BD_SQL_NEXT_IDS,
    BD_SQL_ENQUEUE_PUSH,
    BD_SQL_ENQUEUE_POP,
    BD_SQL_ENQUEUE_SCAN,
    BD_SQL_PROBE,
    BD_SQL_IDEM_GET,
    BD_SQL_IDEM_PUT,
    BD_SQL_IDEM_PRUNE,
    BD_SQL_NSTMTS
};
extern const char *const bd_sql_text[BD_SQL_NSTMTS];

typedef struct bd_sqlite bd_sqlite;

struct bd_sqlite {
    bd_store base;                /* first: its ops are bd_sqlite_ops; a bd_store * points here */
    sqlite3 *db;
    bd_gc gc;                     /* transactions; its lock serializes every use of db */
    int version;                  /* schema version after migration */
    sqlite3_stmt *stmt[BD_SQL_NSTMTS];
};

/* ---- sqlite_schema.c ---- */

/* Brings the schema of db up to the newest version (one transaction per
 * migration) and stores the result in *version; then writes migration 1's
 * IN-list CHECK constraints as OR chains, once (sqlite_schema.c says why). A
 * database written by a newer build, or one that is not banditd's, is
 * refused with BD_ESTORAGE. */
int bd_sqlite_migrate(sqlite3 *db, int *version, bd_err *err) BD_MUST_CHECK;
/* The schema version this build writes. */
int bd_sqlite_schema_latest(void);

/* Starts one call on s: locks its connection unless the calling thread holds
 * a transaction on s (bd_gc_enter). Pass the result to bd_sqlite_leave. */
static inline int bd_sqlite_enter(bd_sqlite *s)
{
    return bd_gc_enter(&s->gc);
}
static inline void bd_sqlite_leave(bd_sqlite *s, int locked)
{
    bd_gc_leave(&s->gc, locked);
}

/* ---- sqlite_stmt.c: the helpers every file of the backend calls ---- */

/* Makes st reusable: reset (whose code repeats the last step's, already
 * handled by the caller) and clear its bindings. */
void bd_sqlite_done(sqlite3_stmt *st);

/* Turns a failed SQLite code into BD_ECONFLICT (unique or primary key),
 * BD_ENOTFOUND (a foreign key names a missing row) or BD_ESTORAGE, with
 * "storage: <what>: <sqlite3_errmsg>" in err. Call before bd_sqlite_done. */
int bd_sqlite_fail(bd_sqlite *s, int rc, bd_err *err, const char *what);

/* Steps a bound statement; rc is the binds' code (SQLITE_OK when they all
 * succeeded). bd_sqlite_step_done expects no row and returns 0 or a BD_E*
 * code; bd_sqlite_step_row returns 1 on a row, 0 when there is none, or a
 * BD_E* code. Neither resets st. */
int bd_sqlite_step_done(bd_sqlite *s, sqlite3_stmt *st, int rc, bd_err *err, const char *what);
int bd_sqlite_step_row(bd_sqlite *s, sqlite3_stmt *st, int rc, bd_err *err, const char *what);

/* The binders do nothing once *rc is not SQLITE_OK, so a run of binds is
 * checked once. Strings are bound SQLITE_STATIC: they must outlive the step. */
static inline void bd_sqlite_bind_i64(sqlite3_stmt *st, int i, int64_t v, int *rc)
{
    if (*rc == SQLITE_OK)
        *rc = sqlite3_bind_int64(st, i, v);
}

/* 0 is stored as NULL: "no such id" for optional references. */
static inline void bd_sqlite_bind_id(sqlite3_stmt *st, int i, int64_t v, int *rc)
{
    if (*rc == SQLITE_OK)
        *rc = v ? sqlite3_bind_int64(st, i, v) : sqlite3_bind_null(st, i);
}

/* NAN is stored as NULL (SQLite would do it silently; here it is explicit). */
static inline void bd_sqlite_bind_double(sqlite3_stmt *st, int i, double v, int *rc)
{
    if (*rc == SQLITE_OK)
        *rc = isnan(v) ? sqlite3_bind_null(st, i) : sqlite3_bind_double(st, i, v);
}

/* NULL is stored as NULL. */
static inline void bd_sqlite_bind_text(sqlite3_stmt *st, int i, const char *v, int *rc)
{
    if (*rc == SQLITE_OK)
        *rc = v ? sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC) : sqlite3_bind_null(st, i);
}

/* A text column as a new string, or NULL for SQL NULL. Aborts when out of memory. */
char *bd_sqlite_col_text(sqlite3_stmt *st, int i);

/* A REAL column; if_null when it is SQL NULL. */
static inline double bd_sqlite_col_double(sqlite3_stmt *st, int i, double if_null)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? if_null : sqlite3_column_double(st, i);
}

/* How bd_sqlite_scan handles one kind of row (bd_study_row, ...). */
typedef struct bd_sqlite_rowtype {
    size_t size;                                       /* sizeof the row struct */
    int (*read)(sqlite3_stmt *st, void *row, bd_err *err); /* fills all of row from the current result; 0 or BD_E* */
    void (*clear)(void *row);                          /* frees what read allocated */
} bd_sqlite_rowtype;

/* Runs statement which (bound: ?1 = after_id, ?2 = batch size, ?3.. by
 * bind(st, key), which returns a SQLite code) and calls call(row, cb) for each
 * row in order, at most limit rows (no limit when limit <= 0). Rows are read in
 * batches; the statement is reset and, outside a transaction, the lock released
 * before the callbacks of a batch run, so a callback may call the store again.
 * Returns 0, a BD_E* code, or the first non-zero value call returned. */
int bd_sqlite_scan(bd_sqlite *s, enum bd_sql_stmt which, const bd_sqlite_rowtype *type,
                   int (*bind)(sqlite3_stmt *st, const void *key), const void *key, int64_t after_id,
                   int64_t limit, int (*call)(const void *row, void *cb), void *cb, bd_err *err,
                   const char *what) BD_MUST_CHECK;

/* For statements in another order than by id (no keyset to resume from):
 * runs which once (?1 = 0, ?2 = limit, ?3.. by bind), reads its first limit
 * rows (limit >= 1, memory limit x type->size plus the rows' strings), then
 * resets it, leaves the lock and calls call(row, cb) for each in order. */
int bd_sqlite_scan_once(bd_sqlite *s, enum bd_sql_stmt which, const bd_sqlite_rowtype *type,
                        int (*bind)(sqlite3_stmt *st, const void *key), const void *key, int64_t limit,
                        int (*call)(const void *row, void *cb), void *cb, bd_err *err,
                        const char *what) BD_MUST_CHECK;

/* ---- the backend's half of store.h ----
 * bd_sqlite_open is in store_ops.h. Each is the store.h function of the
 * same name, s a bd_store * of this backend, declared from store_ops.h's
 * lists; sqlite_store.c's ops table names them all. */
extern const bd_store_ops bd_sqlite_ops;
void bd_sqlite_close(bd_store *s);
int bd_sqlite_schema_version(bd_store *s);
#define BD_SQLITE_DECLARE(name, params, args) int bd_sqlite_##name params;
BD_STORE_CALLS(BD_SQLITE_DECLARE)
#undef BD_SQLITE_DECLARE

#endif
