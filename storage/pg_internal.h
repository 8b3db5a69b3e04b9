/* pg_internal.h: what the files of the PostgreSQL backend share, and nothing
 * outside storage/ may include: the connection record, the prepared
 * statements, the lock protocol (the same as the SQLite backend's: one
 * connection behind a mutex, group commit, see store.h) and the helpers that
 * pass parameters as text, read columns and turn SQLSTATEs into BD_E* codes.
 *
 * Invariants:
 * - Every use of conn happens with mu held, either by the thread that opened a
 *   transaction (bd_store_begin .. commit/rollback) or for one call.
 * - No PGresult outlives the call that made it, and none is held while a scan
 *   calls back (rows are copied out first: see bd_pg_scan).
 * - Every SELECT that scans rows has the row id as column 0, "id > $1" and
 *   "LIMIT $2"; its own parameters start at $3 and are all always passed.
 * - Values are stored as SQLite stores them: NAN and "no id" (0) as NULL,
 *   states, origins and event types by name. */
#ifndef BD_PG_INTERNAL_H
#define BD_PG_INTERNAL_H

#include <libpq-fe.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>

#include "store_ops.h"

/* The prepared statements; their SQL is in pg_sql.c. */
enum bd_pg_stmt {
    BD_PG_USER_CREATE,
    BD_PG_USER_BY_NAME,
    BD_PG_USER_BY_ID,
    BD_PG_USER_COUNT,
    BD_PG_USER_SET_LIMITS,
    BD_PG_USER_USAGE,
    BD_PG_TOKEN_ADD,
    BD_PG_TOKEN_GET,
    BD_PG_TOKEN_REVOKE,
    BD_PG_STUDY_INSERT,
    BD_PG_STUDY_GET,
    BD_PG_STUDY_SCAN_ALL,
    BD_PG_STUDY_SCAN_INDEX,
    BD_PG_STUDY_SCAN_USER,
    BD_PG_STUDY_SCAN_NAMED,
    BD_PG_STUDY_DELETE,
    BD_PG_STUDY_SET_PAUSED,
    BD_PG_STUDY_SET_METADATA,
    BD_PG_STUDY_SET_DEFINITION,
    BD_PG_TRIAL_COUNTS,
    BD_PG_TRIAL_INSERT,
    BD_PG_TRIAL_GET,
    BD_PG_TRIAL_STATE,
    BD_PG_TRIAL_FINISH,
    BD_PG_TRIAL_SET_LEASE,
    BD_PG_TRIAL_SET_USER_ATTRS,
    BD_PG_TRIAL_SET_CONFIG,
    BD_PG_TRIAL_SCAN,
    BD_PG_TRIAL_SCAN_EXPIRED,
    BD_PG_TRIAL_BEST_MIN,
    BD_PG_TRIAL_BEST_MAX,
    BD_PG_TRIAL_SCAN_STEPS,
    BD_PG_EVENT_APPEND,
    BD_PG_EVENT_SCAN_STUDY,
    BD_PG_EVENT_SCAN_TRIAL,
    BD_PG_NEXT_IDS,
    BD_PG_ENQUEUE_PUSH,
    BD_PG_ENQUEUE_POP,
    BD_PG_ENQUEUE_SCAN,
    BD_PG_PROBE,
    BD_PG_IDEM_GET,
    BD_PG_IDEM_PUT,
    BD_PG_IDEM_PRUNE,
    BD_PG_NSTMTS
};
extern const char *const bd_pg_sql[BD_PG_NSTMTS];

typedef struct bd_pg bd_pg;

struct bd_pg {
    bd_store base;                /* first: its ops are bd_pg_ops; a bd_store * points here */
    PGconn *conn;
    bd_gc gc;                     /* transactions; its lock serializes every use of conn */
    int version;                  /* schema version after migration */
    int cluster;                  /* opened with opts->cluster: shares the schema with peer daemons */
    PGconn *ctl;                  /* cluster only: the ownership connection, autocommit, never in a batch */
    pthread_mutex_t ctl_mu;       /* serializes every use of ctl (never taken with mu held, nor mu under it) */
};

/* ---- pg_cluster.c ---- */

/* Cluster mode: connects s->ctl to url. */
int bd_pg_ctl_connect(bd_pg *s, const char *url, bd_err *err) BD_MUST_CHECK;

/* ---- pg_schema.c ---- */

/* Creates (in the connection's current schema) or migrates the schema and
 * stores its version in *version. A schema written by a newer build, or one
 * with tables that are not banditd's, is refused with BD_ESTORAGE. */
int bd_pg_migrate(PGconn *conn, int *version, bd_err *err) BD_MUST_CHECK;

/* ---- pg_conn.c: the helpers every file of the backend calls ---- */

/* msg (a libpq message: newlines, tabs) as one line into out. */
void bd_pg_one_line(const char *msg, char *out, size_t size);

/* Runs sql (no parameters, no rows wanted) outside the prepared set; 0 or
 * BD_ESTORAGE with "storage: <what>: <message>" in err (err may be NULL). */
int bd_pg_exec_simple(PGconn *conn, const char *sql, bd_err *err, const char *what) BD_MUST_CHECK;
/* PQconnectdb(url) with TCP keepalives and a connect timeout (a peer or
 * server that vanishes without a FIN is noticed in about 20 s, not after
 * the kernel's two hours); settings in the URL win. New (PQfinish). */
PGconn *bd_pg_connect(const char *url);

/* Starts one call on s: locks its connection unless the calling thread
 * holds a transaction on s (bd_gc_enter; outside a batch, a lost connection
 * is reset). Pass the result to bd_pg_leave when the call ends. */
static inline int bd_pg_enter(bd_pg *s)
{
    return bd_gc_enter(&s->gc);
}
static inline void bd_pg_leave(bd_pg *s, int locked)
{
    bd_gc_leave(&s->gc, locked);
}

/* Parameters of one statement, as text (binary for bytea); at most 24. */
#define BD_PG_MAX_PARAMS 24
typedef struct bd_pg_params {
    int n;
    const char *value[BD_PG_MAX_PARAMS];
    int length[BD_PG_MAX_PARAMS];
    int format[BD_PG_MAX_PARAMS];  /* 0 text, 1 binary */
    char buf[BD_PG_MAX_PARAMS][32]; /* numbers' text */
} bd_pg_params;

void bd_pg_p_i64(bd_pg_params *p, int64_t v);
void bd_pg_p_id(bd_pg_params *p, int64_t v);        /* 0 is NULL: "no such id" */
void bd_pg_p_double(bd_pg_params *p, double v);     /* NAN is NULL */
void bd_pg_p_text(bd_pg_params *p, const char *v);  /* borrowed until the statement ran; NULL is NULL */
void bd_pg_p_bytes(bd_pg_params *p, const void *v, int len); /* binary (bytea), borrowed */

/* Runs prepared statement which with p (NULL: none). Returns the result
 * (caller PQclears) when it succeeded, else NULL with *ret = BD_ECONFLICT
 * (unique violation), BD_ENOTFOUND (a foreign key names a missing row) or
 * BD_ESTORAGE, and "storage: <what>: <message>" in err. */
PGresult *bd_pg_run(bd_pg *s, enum bd_pg_stmt which, const bd_pg_params *p, int *ret, bd_err *err,
                    const char *what);
/* bd_pg_run for statements without rows wanted: 0 or a BD_E* code; *changed
 * (may be NULL) receives how many rows it changed. */
int bd_pg_run_done(bd_pg *s, enum bd_pg_stmt which, const bd_pg_params *p, int64_t *changed, bd_err *err,
                   const char *what) BD_MUST_CHECK;

/* Runs a one-row UPDATE or DELETE: BD_ENOTFOUND with the message missing
 * when it matched no row. Takes the lock itself. */
int bd_pg_update_one(bd_pg *s, enum bd_pg_stmt which, const bd_pg_params *p, const char *missing, bd_err *err,
                     const char *what) BD_MUST_CHECK;

/* Column readers (row r, column c). */
int64_t bd_pg_col_i64(const PGresult *res, int r, int c);          /* 0 for NULL */
double bd_pg_col_double(const PGresult *res, int r, int c, double if_null);
char *bd_pg_col_text(const PGresult *res, int r, int c);           /* new, or NULL for NULL */
int bd_pg_col_null(const PGresult *res, int r, int c);

/* How bd_pg_scan handles one kind of row (bd_study_row, ...). */
typedef struct bd_pg_rowtype {
    size_t size;                                                  /* sizeof the row struct */
    int (*read)(const PGresult *res, int r, void *row, bd_err *err); /* fills all of row; 0 or BD_E* */
    void (*clear)(void *row);                                     /* frees what read allocated */
} bd_pg_rowtype;

/* As bd_sqlite_scan: runs which ($1 = after_id, $2 = batch size, $3.. added
 * by bind) batch after batch, copies each batch's rows out, leaves the lock
 * (outside a transaction) and calls call(row, cb) for each, at most limit rows
 * (no limit when limit <= 0). Returns 0, a BD_E* code or call's first
 * non-zero value. */
int bd_pg_scan(bd_pg *s, enum bd_pg_stmt which, const bd_pg_rowtype *type,
               void (*bind)(bd_pg_params *p, const void *key), const void *key, int64_t after_id, int64_t limit,
               int (*call)(const void *row, void *cb), void *cb, bd_err *err, const char *what) BD_MUST_CHECK;
/* For statements in another order than by id: one run ($1 = 0, $2 = limit). */
int bd_pg_scan_once(bd_pg *s, enum bd_pg_stmt which, const bd_pg_rowtype *type,
                    void (*bind)(bd_pg_params *p, const void *key), const void *key, int64_t limit,
                    int (*call)(const void *row, void *cb), void *cb, bd_err *err, const char *what) BD_MUST_CHECK;

/* ---- the backend's half of store.h ----
 * bd_pg_open is in store_ops.h. Each is the store.h function of the same
 * name, s a bd_store * of this backend, declared from store_ops.h's lists;
 * pg_store.c's ops table names them all. */
extern const bd_store_ops bd_pg_ops;
void bd_pg_close(bd_store *s);
int bd_pg_schema_version(bd_store *s);
#define BD_PG_DECLARE(name, params, args) int bd_pg_##name params;
BD_STORE_CALLS(BD_PG_DECLARE)
BD_STORE_CLUSTER_CALLS(BD_PG_DECLARE)
#define BD_PG_DECLARE_VOID(name, params, args) void bd_pg_##name params;
BD_STORE_CLUSTER_VOID_CALLS(BD_PG_DECLARE_VOID)
#undef BD_PG_DECLARE_VOID
#undef BD_PG_DECLARE

#endif
