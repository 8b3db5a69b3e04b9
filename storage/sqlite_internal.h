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

/* The backend's half of store.h (bd_sqlite_open is in store_ops.h): each is
 * the store.h function of the same name, s a bd_store * of this backend. */
extern const bd_store_ops bd_sqlite_ops;
void bd_sqlite_close(bd_store *s);
int bd_sqlite_schema_version(bd_store *s);
int bd_sqlite_probe(bd_store *s, double now, bd_err *err);
int bd_sqlite_user_create(bd_store *s, const char *name, int is_admin, double now, int64_t *id, bd_err *err);
int bd_sqlite_user_by_name(bd_store *s, const char *name, bd_user *out, bd_err *err);
int bd_sqlite_user_by_id(bd_store *s, int64_t id, bd_user *out, bd_err *err);
int bd_sqlite_user_count(bd_store *s, int64_t *count, bd_err *err);
int bd_sqlite_user_set_limits(bd_store *s, int64_t user_id, int64_t max_studies, int64_t max_definition_bytes, bd_err *err);
int bd_sqlite_user_usage(bd_store *s, int64_t user_id, int64_t *studies, int64_t *definition_bytes, bd_err *err);
int bd_sqlite_token_add(bd_store *s, int64_t user_id, const uint8_t hash[32], double now, int64_t *token_id, bd_err *err);
int bd_sqlite_token_get(bd_store *s, int64_t token_id, uint8_t hash[32], int64_t *user_id, bd_err *err);
int bd_sqlite_token_revoke(bd_store *s, int64_t token_id, bd_err *err);
int bd_sqlite_study_insert(bd_store *s, const bd_study_row *row, int64_t *id, bd_err *err);
int bd_sqlite_study_get(bd_store *s, int64_t id, bd_study_row *out, bd_err *err);
int bd_sqlite_study_each(bd_store *s, int64_t user_id, bd_study_fn fn, void *arg, bd_err *err);
int bd_sqlite_study_index_each(bd_store *s, bd_study_fn fn, void *arg, bd_err *err);
int bd_sqlite_study_page(bd_store *s, int64_t user_id, const char *name, int64_t after_id, int64_t limit, bd_study_fn fn, void *arg, bd_err *err);
int bd_sqlite_study_delete(bd_store *s, int64_t id, bd_err *err);
int bd_sqlite_study_set_paused(bd_store *s, int64_t id, int paused, bd_err *err);
int bd_sqlite_study_set_metadata(bd_store *s, int64_t id, const char *metadata, bd_err *err);
int bd_sqlite_study_set_definition(bd_store *s, int64_t id, const char *definition, bd_err *err);
int bd_sqlite_trial_counts_each(bd_store *s, bd_trial_count_fn fn, void *arg, bd_err *err);
int bd_sqlite_trial_insert(bd_store *s, const bd_trial_row *row, int64_t *id, bd_err *err);
int bd_sqlite_trial_get(bd_store *s, int64_t id, bd_trial_row *out, bd_err *err);
int bd_sqlite_trial_finish(bd_store *s, const bd_trial_row *row, bd_err *err);
int bd_sqlite_trial_set_lease(bd_store *s, int64_t id, double lease_expires_at, bd_err *err);
int bd_sqlite_trial_set_user_attrs(bd_store *s, int64_t id, const char *user_attrs, bd_err *err);
int bd_sqlite_trial_set_config(bd_store *s, int64_t id, const char *config, bd_err *err);
int bd_sqlite_trial_each(bd_store *s, int64_t study_id, int state, int64_t instance, int64_t after_id, int64_t limit, bd_trial_fn fn, void *arg, bd_err *err);
int bd_sqlite_trial_each_best(bd_store *s, int64_t study_id, int maximize, int64_t instance, int64_t limit, bd_trial_fn fn, void *arg, bd_err *err);
int bd_sqlite_trial_each_with_steps(bd_store *s, int64_t study_id, int state, int64_t instance, int64_t after_id, int64_t limit, bd_trial_fn fn, void *arg, bd_err *err);
int bd_sqlite_trial_each_expired(bd_store *s, double now, bd_trial_fn fn, void *arg, bd_err *err);
int bd_sqlite_enqueue_push(bd_store *s, int64_t study_id, const char *config, double now, bd_err *err);
int bd_sqlite_enqueue_pop(bd_store *s, int64_t study_id, int64_t n, bd_err *err);
int bd_sqlite_enqueue_each(bd_store *s, int64_t study_id, bd_enqueued_fn fn, void *arg, bd_err *err);
int bd_sqlite_event_append(bd_store *s, const bd_event_row *row, int64_t *id, bd_err *err);
int bd_sqlite_next_ids(bd_store *s, int64_t *trial_id, int64_t *event_id, bd_err *err);
int bd_sqlite_event_each(bd_store *s, int64_t study_id, bd_event_fn fn, void *arg, bd_err *err);
int bd_sqlite_event_each_of_trial(bd_store *s, int64_t trial_id, bd_event_fn fn, void *arg, bd_err *err);
int bd_sqlite_idem_get(bd_store *s, int64_t user_id, const char *key, char **fingerprint, char **response, bd_err *err);
int bd_sqlite_idem_put(bd_store *s, int64_t user_id, const char *key, const char *fingerprint, const char *response, double now, bd_err *err);
int bd_sqlite_idem_prune(bd_store *s, double before, bd_err *err);

#endif
