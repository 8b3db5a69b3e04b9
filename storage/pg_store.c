/* pg_store.c: the PostgreSQL backend's connection: open (connect, claim the
 * schema, migrate, prepare every statement once), close, the lock,
 * transactions with group commit, and the run/scan helpers the table files
 * share. Transactions are group_commit.h's, as for SQLite: one connection
 * behind its lock, a request a SAVEPOINT inside the batch's BEGIN, the
 * first waiter of a batch COMMITs it, and a failed COMMIT fails every
 * request in the batch and poisons the store until bd_store_recovered.
 *
 * One daemon per schema: open holds a session advisory lock on the schema
 * for the connection's life (the counterpart of SQLite's exclusive locking),
 * so a second daemon on the same database and schema is refused. Cluster
 * members (--advertise-url) hold it shared instead, so a lone daemon and a
 * cluster never run side by side; they serve each study under an ownership
 * lease whose fencing token every write renews in its own transaction
 * (pg_cluster.c).
 *
 * A lost connection fails the open batch (its COMMIT fails: BD_ESTORAGE to
 * every waiter); the next call outside a batch resets the connection,
 * re-claims the schema and re-prepares the statements. */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pg_internal.h"
#include "scan.h"

#define SCAN_BATCH 256
/* A daemon killed a moment ago may still hold the schema's lock until its
 * server process notices: the new one retries this long. */
#define CLAIM_TRIES 50
#define CLAIM_PAUSE_US 100000

static const bd_gc_ops pg_gc_ops; /* the transactions' statements, below */

/* libpq's latest message on one line (it ends with, and may hold, newlines);
 * static per thread, valid until the next call. */
static const char *conn_error(const PGconn *conn)
{
    static _Thread_local char line[512];
    bd_pg_one_line(PQerrorMessage(conn), line, sizeof line);
    return line;
}

/* ---- connection setup ---- */

static int prepare_all(PGconn *conn, bd_err *err)
{
    for (int i = 0; i < BD_PG_NSTMTS; i++) {
        char name[16];
        assert(bd_pg_sql[i]);
        snprintf(name, sizeof name, "bd%d", i);
        PGresult *res = PQprepare(conn, name, bd_pg_sql[i], 0, NULL);
        int ok = PQresultStatus(res) == PGRES_COMMAND_OK;
        PQclear(res);
        if (!ok)
            return bd_err_set(err, BD_ESTORAGE, NULL, "storage: preparing statement %d: %s", i, conn_error(conn));
    }
    return 0;
}

/* Session settings, the schema's lock, and (first connection only) the
 * migration; then the statements. */
static int setup(PGconn *conn, int *version, int cluster, bd_err *err)
{
    if (PQsetClientEncoding(conn, "UTF8") != 0)
        return bd_err_set(err, BD_ESTORAGE, NULL, "storage: setting the client encoding: %s", conn_error(conn));
    /* Shortest exact float output: every double reads back bit for bit. */
    /* A batch left open by a hung daemon holds its row locks (and a peer's
     * takeover of those studies) at most this long. */
    int ret = bd_pg_exec_simple(conn, "SET extra_float_digits = 3; SET idle_in_transaction_session_timeout = '30s'",
                                err, "session settings");
    if (ret)
        return ret;
    if (version && (ret = bd_pg_migrate(conn, version, err)))
        return ret;
    for (int i = 0;; i++) {
        /* A cluster member shares the lock with its peers; a lone daemon
         * holds it alone: the two modes never mix on one schema (the
         * cluster's id blocks assume no lone daemon writes meanwhile). */
        PGresult *res = PQexec(conn, cluster ? "SELECT pg_try_advisory_lock_shared(hashtext('banditd daemon ' || "
                                               "current_schema()))"
                                             : "SELECT pg_try_advisory_lock(hashtext('banditd daemon ' || "
                                               "current_schema()))");
        int ok = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1;
        int got = ok && strcmp(PQgetvalue(res, 0, 0), "t") == 0;
        PQclear(res);
        if (!ok)
            return bd_err_set(err, BD_ESTORAGE, NULL, "storage: locking the schema: %s", conn_error(conn));
        if (got)
            break;
        if (i + 1 >= CLAIM_TRIES)
            return bd_err_set(err, BD_ESTORAGE, NULL,
                              cluster ? "storage: a banditd outside a cluster (no --advertise-url) uses this "
                                        "database schema"
                                      : "storage: another banditd uses this database schema (its advisory lock is "
                                        "held; several daemons need --advertise-url)");
        usleep(CLAIM_PAUSE_US);
    }
    return prepare_all(conn, err);
}

/* Outside a batch, with mu held: a lost connection is reset and set up again. */
static int reconnect_if_lost(bd_pg *s, bd_err *err)
{
    if (PQstatus(s->conn) == CONNECTION_OK)
        return 0;
    assert(!s->gc.batch_open);
    PQreset(s->conn);
    if (PQstatus(s->conn) != CONNECTION_OK)
        return bd_err_set(err, BD_ESTORAGE, NULL, "storage: the database connection is lost: %s",
                          conn_error(s->conn));
    fprintf(stderr, "banditd: storage: reconnected to the database\n");
    return setup(s->conn, NULL, s->cluster, err);
}

static void destroy(bd_pg *s)
{
    PQfinish(s->conn); /* NULL-safe */
    PQfinish(s->ctl);
    pthread_mutex_destroy(&s->ctl_mu);
    free(s);
}

int bd_pg_open(const char *url, const bd_store_opts *opts, bd_store **out, bd_err *err)
{
    /* opts->sync does not apply: every COMMIT waits for the server's WAL
     * flush (synchronous_commit as configured there). */
    bd_pg *s = bd_xcalloc(1, sizeof *s);
    s->base.ops = &bd_pg_ops;
    s->base.gc = &s->gc;
    s->cluster = opts && opts->cluster;
    /* A COMMIT is a round trip and a WAL flush on the server, long enough
     * for others to release into the batch meanwhile: no commit delay. */
    int ret = bd_gc_init(&s->gc, &pg_gc_ops, s, 0, err);
    if (ret) {
        free(s);
        return ret;
    }
    if (pthread_mutex_init(&s->ctl_mu, NULL) != 0) {
        bd_gc_destroy(&s->gc);
        free(s);
        return bd_err_set(err, BD_EINTERNAL, NULL, "storage: pthread_mutex_init failed");
    }
    s->conn = bd_pg_connect(url);
    if (!s->conn || PQstatus(s->conn) != CONNECTION_OK) {
        /* libpq's message names host and user, never the password. */
        ret = bd_err_set(err, BD_ESTORAGE, NULL, "storage: connecting to PostgreSQL: %s",
                         s->conn ? conn_error(s->conn) : "out of memory");
        goto out;
    }
    if ((ret = setup(s->conn, &s->version, s->cluster, err)) == 0 && s->cluster)
        ret = bd_pg_ctl_connect(s, url, err);
out:
    if (ret) {
        bd_gc_destroy(&s->gc);
        destroy(s);
    } else {
        *out = &s->base;
    }
    return ret;
}

void bd_pg_close(bd_store *store)
{
    bd_pg *s = (bd_pg *)store;
    bd_gc_close(&s->gc); /* ends the open batch */
    destroy(s); /* ends the session: its advisory lock goes with it */
}

int bd_pg_schema_version(bd_store *store)
{
    return ((bd_pg *)store)->version;
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

/* ---- transactions (group_commit.h) ---- */

static int control(bd_pg *s, const char *sql, bd_err *err)
{
    return bd_pg_exec_simple(s->conn, sql, err, sql);
}

static int gc_open_batch(void *conn, bd_err *err)
{
    bd_pg *s = conn;
    int ret = reconnect_if_lost(s, err);
    if (ret)
        return ret;
    /* The isolation the fence relies on (a renew's UPDATE sees a takeover
     * committed since), named rather than taken from the server's or the
     * role's default_transaction_isolation. libpq learns that the server
     * went away only when it uses the connection: nothing is open yet, so
     * reconnect and try once more. */
    static const char begin[] = "BEGIN ISOLATION LEVEL READ COMMITTED";
    if ((ret = control(s, begin, err)) && PQstatus(s->conn) != CONNECTION_OK && !reconnect_if_lost(s, err))
        ret = control(s, begin, err);
    return ret;
}

static int gc_savepoint(void *conn, bd_err *err)
{
    return control(conn, "SAVEPOINT bd_request", err);
}

static int gc_release(void *conn, bd_err *err)
{
    return control(conn, "RELEASE SAVEPOINT bd_request", err);
}

static int gc_rollback_to(void *conn, bd_err *err)
{
    return control(conn, "ROLLBACK TO SAVEPOINT bd_request", err);
}

/* PostgreSQL answers COMMIT of a failed transaction with ROLLBACK, which is
 * a failure here too. */
static int gc_commit(void *conn, bd_err *err)
{
    bd_pg *s = conn;
    int ret = 0;
    PGresult *res = PQexec(s->conn, "COMMIT");
    if (PQresultStatus(res) != PGRES_COMMAND_OK)
        ret = bd_err_set(err, BD_ESTORAGE, NULL, "storage: commit: %s", conn_error(s->conn));
    else if (strcmp(PQcmdStatus(res), "COMMIT") != 0)
        ret = bd_err_set(err, BD_ESTORAGE, NULL, "storage: commit: the transaction had failed (%s)",
                         PQcmdStatus(res));
    PQclear(res);
    return ret;
}

static void gc_abort(void *conn)
{
    bd_pg *s = conn;
    bd_err err;
    if (PQstatus(s->conn) == CONNECTION_OK && PQtransactionStatus(s->conn) != PQTRANS_IDLE &&
        control(s, "ROLLBACK", &err))
        fprintf(stderr, "banditd: %s\n", err.message);
}

/* The open batch died with the connection. */
static int gc_batch_lost(void *conn)
{
    return PQstatus(((bd_pg *)conn)->conn) != CONNECTION_OK;
}

/* Outside a batch: reset a lost connection (if that fails, the call's
 * statement reports it). */
static void gc_idle(void *conn)
{
    bd_err ignored;
    (void)reconnect_if_lost(conn, &ignored);
}

static const bd_gc_ops pg_gc_ops = {
    .open_batch = gc_open_batch,
    .savepoint = gc_savepoint,
    .release = gc_release,
    .rollback_to = gc_rollback_to,
    .commit = gc_commit,
    .abort = gc_abort,
    .batch_lost = gc_batch_lost,
    .idle = gc_idle,
};

int bd_pg_probe(bd_store *store, double now, bd_err *err)
{
    bd_pg *s = (bd_pg *)store;
    int ret = bd_store_begin(store, err);
    if (ret)
        return ret;
    bd_pg_params p = {0};
    bd_pg_p_double(&p, now);
    ret = bd_pg_run_done(s, BD_PG_PROBE, &p, NULL, err, "probe write");
    if (ret) {
        bd_store_rollback(store);
        return ret;
    }
    return bd_store_commit(store, err);
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

const bd_store_ops bd_pg_ops = {
    .name = "postgresql",
    .cluster_join = bd_pg_cluster_join,
    .cluster_heartbeat = bd_pg_cluster_heartbeat,
    .cluster_leave = bd_pg_cluster_leave,
    .id_block = bd_pg_id_block,
    .owner_acquire = bd_pg_owner_acquire,
    .owner_renew = bd_pg_owner_renew,
    .owner_release = bd_pg_owner_release,
    .clock_skew = bd_pg_clock_skew,
    .lock_user = bd_pg_lock_user,
    .close = bd_pg_close,
    .schema_version = bd_pg_schema_version,
    .probe = bd_pg_probe,
    .user_create = bd_pg_user_create,
    .user_by_name = bd_pg_user_by_name,
    .user_by_id = bd_pg_user_by_id,
    .user_count = bd_pg_user_count,
    .user_set_limits = bd_pg_user_set_limits,
    .user_usage = bd_pg_user_usage,
    .token_add = bd_pg_token_add,
    .token_get = bd_pg_token_get,
    .token_revoke = bd_pg_token_revoke,
    .study_insert = bd_pg_study_insert,
    .study_get = bd_pg_study_get,
    .study_each = bd_pg_study_each,
    .study_index_each = bd_pg_study_index_each,
    .study_page = bd_pg_study_page,
    .study_delete = bd_pg_study_delete,
    .study_set_paused = bd_pg_study_set_paused,
    .study_set_metadata = bd_pg_study_set_metadata,
    .study_set_definition = bd_pg_study_set_definition,
    .trial_counts_each = bd_pg_trial_counts_each,
    .trial_insert = bd_pg_trial_insert,
    .trial_get = bd_pg_trial_get,
    .trial_finish = bd_pg_trial_finish,
    .trial_set_lease = bd_pg_trial_set_lease,
    .trial_set_user_attrs = bd_pg_trial_set_user_attrs,
    .trial_set_config = bd_pg_trial_set_config,
    .trial_each = bd_pg_trial_each,
    .trial_each_best = bd_pg_trial_each_best,
    .trial_each_with_steps = bd_pg_trial_each_with_steps,
    .trial_each_expired = bd_pg_trial_each_expired,
    .enqueue_push = bd_pg_enqueue_push,
    .enqueue_pop = bd_pg_enqueue_pop,
    .enqueue_each = bd_pg_enqueue_each,
    .event_append = bd_pg_event_append,
    .next_ids = bd_pg_next_ids,
    .event_each = bd_pg_event_each,
    .event_each_of_trial = bd_pg_event_each_of_trial,
    .idem_get = bd_pg_idem_get,
    .idem_put = bd_pg_idem_put,
    .idem_prune = bd_pg_idem_prune,
};
