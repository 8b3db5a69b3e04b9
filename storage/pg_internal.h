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

/* Cluster mode (pg_cluster.c): connects s->ctl to url. */
int bd_pg_ctl_connect(bd_pg *s, const char *url, bd_err *err) BD_MUST_CHECK;

/* Creates (in the connection's current schema) or migrates the schema and
 * stores its version in *version. A schema written by a newer build, or one
 * with tables that are not banditd's, is refused with BD_ESTORAGE. */
int bd_pg_migrate(PGconn *conn, int *version, bd_err *err) BD_MUST_CHECK;

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

/* The backend's half of store.h (bd_pg_open is in store_ops.h): each is the
 * store.h function of the same name, s a bd_store * of this backend. */
extern const bd_store_ops bd_pg_ops;
void bd_pg_close(bd_store *s);
int bd_pg_schema_version(bd_store *s);
int bd_pg_probe(bd_store *s, double now, bd_err *err);
int bd_pg_user_create(bd_store *s, const char *name, int is_admin, double now, int64_t *id, bd_err *err);
int bd_pg_user_by_name(bd_store *s, const char *name, bd_user *out, bd_err *err);
int bd_pg_user_by_id(bd_store *s, int64_t id, bd_user *out, bd_err *err);
int bd_pg_user_count(bd_store *s, int64_t *count, bd_err *err);
int bd_pg_user_set_limits(bd_store *s, int64_t user_id, int64_t max_studies, int64_t max_definition_bytes, bd_err *err);
int bd_pg_user_usage(bd_store *s, int64_t user_id, int64_t *studies, int64_t *definition_bytes, bd_err *err);
int bd_pg_token_add(bd_store *s, int64_t user_id, const uint8_t hash[32], double now, int64_t *token_id, bd_err *err);
int bd_pg_token_get(bd_store *s, int64_t token_id, uint8_t hash[32], int64_t *user_id, bd_err *err);
int bd_pg_token_revoke(bd_store *s, int64_t token_id, bd_err *err);
int bd_pg_study_insert(bd_store *s, const bd_study_row *row, int64_t *id, bd_err *err);
int bd_pg_study_get(bd_store *s, int64_t id, bd_study_row *out, bd_err *err);
int bd_pg_study_each(bd_store *s, int64_t user_id, bd_study_fn fn, void *arg, bd_err *err);
int bd_pg_study_index_each(bd_store *s, bd_study_fn fn, void *arg, bd_err *err);
int bd_pg_study_page(bd_store *s, int64_t user_id, const char *name, int64_t after_id, int64_t limit, bd_study_fn fn, void *arg, bd_err *err);
int bd_pg_study_delete(bd_store *s, int64_t id, bd_err *err);
int bd_pg_study_set_paused(bd_store *s, int64_t id, int paused, bd_err *err);
int bd_pg_study_set_metadata(bd_store *s, int64_t id, const char *metadata, bd_err *err);
int bd_pg_study_set_definition(bd_store *s, int64_t id, const char *definition, bd_err *err);
int bd_pg_trial_counts_each(bd_store *s, bd_trial_count_fn fn, void *arg, bd_err *err);
int bd_pg_trial_insert(bd_store *s, const bd_trial_row *row, int64_t *id, bd_err *err);
int bd_pg_trial_get(bd_store *s, int64_t id, bd_trial_row *out, bd_err *err);
int bd_pg_trial_finish(bd_store *s, const bd_trial_row *row, bd_err *err);
int bd_pg_trial_set_lease(bd_store *s, int64_t id, double lease_expires_at, bd_err *err);
int bd_pg_trial_set_user_attrs(bd_store *s, int64_t id, const char *user_attrs, bd_err *err);
int bd_pg_trial_set_config(bd_store *s, int64_t id, const char *config, bd_err *err);
int bd_pg_trial_each(bd_store *s, int64_t study_id, int state, int64_t instance, int64_t after_id, int64_t limit, bd_trial_fn fn, void *arg, bd_err *err);
int bd_pg_trial_each_best(bd_store *s, int64_t study_id, int maximize, int64_t instance, int64_t limit, bd_trial_fn fn, void *arg, bd_err *err);
int bd_pg_trial_each_with_steps(bd_store *s, int64_t study_id, int state, int64_t instance, int64_t after_id, int64_t limit, bd_trial_fn fn, void *arg, bd_err *err);
int bd_pg_trial_each_expired(bd_store *s, double now, bd_trial_fn fn, void *arg, bd_err *err);
int bd_pg_enqueue_push(bd_store *s, int64_t study_id, const char *config, double now, bd_err *err);
int bd_pg_enqueue_pop(bd_store *s, int64_t study_id, int64_t n, bd_err *err);
int bd_pg_enqueue_each(bd_store *s, int64_t study_id, bd_enqueued_fn fn, void *arg, bd_err *err);
int bd_pg_event_append(bd_store *s, const bd_event_row *row, int64_t *id, bd_err *err);
int bd_pg_next_ids(bd_store *s, int64_t *trial_id, int64_t *event_id, bd_err *err);
int bd_pg_event_each(bd_store *s, int64_t study_id, bd_event_fn fn, void *arg, bd_err *err);
int bd_pg_event_each_of_trial(bd_store *s, int64_t trial_id, bd_event_fn fn, void *arg, bd_err *err);
int bd_pg_idem_get(bd_store *s, int64_t user_id, const char *key, char **fingerprint, char **response, bd_err *err);
int bd_pg_idem_put(bd_store *s, int64_t user_id, const char *key, const char *fingerprint, const char *response, double now, bd_err *err);
int bd_pg_idem_prune(bd_store *s, double before, bd_err *err);
int bd_pg_cluster_join(bd_store *s, const char *url, int64_t *daemon_id, bd_err *err);
int bd_pg_cluster_heartbeat(bd_store *s, int64_t daemon_id, bd_err *err);
void bd_pg_cluster_leave(bd_store *s, int64_t daemon_id);
int bd_pg_id_block(bd_store *s, int64_t *first, int64_t *count, bd_err *err);
int bd_pg_owner_acquire(bd_store *s, int64_t study_id, int64_t daemon_id, double lease, int steal, int64_t *token,
                        bd_err *err);
int bd_pg_owner_renew(bd_store *s, int64_t study_id, int64_t daemon_id, int64_t token, double lease, bd_err *err);
void bd_pg_owner_release(bd_store *s, int64_t study_id, int64_t daemon_id, int64_t token);
int bd_pg_clock_skew(bd_store *s, double *skew, bd_err *err);
int bd_pg_lock_user(bd_store *s, int64_t user_id, bd_err *err);

#endif
