/* pg_store.c: the PostgreSQL backend's connection: open (connect, claim the
 * schema, migrate, prepare every statement once), close, the lock,
 * transactions with group commit, and the run/scan helpers the table files
 * share. The model is the SQLite backend's (sqlite_store.c, store.h): one
 * connection behind mu; bd_store_begin opens a SAVEPOINT inside the batch's
 * BEGIN; release or rollback end the savepoint; the first waiter of a batch
 * COMMITs it, and a failed COMMIT fails every request in the batch and
 * poisons the store until bd_store_recovered.
 *
 * One daemon per schema: open holds a session advisory lock on the schema
 * for the connection's life (the counterpart of SQLite's exclusive locking),
 * so a second daemon on the same database and schema is refused. This is also
 * where an ownership lease with a fencing token would be taken once several
 * daemons share a database (later work): checked in begin and at each COMMIT.
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

#define SCAN_BATCH 256
/* A daemon killed a moment ago may still hold the schema's lock until its
 * server process notices: the new one retries this long. */
#define CLAIM_TRIES 50
#define CLAIM_PAUSE_US 100000

static _Thread_local bd_pg *held_list; /* stores this thread holds a transaction on */

/* libpq's latest message on one line (it ends with, and may hold, newlines);
 * static per thread, valid until the next call. */
static const char *conn_error(const PGconn *conn)
{
    static _Thread_local char line[512];
    bd_pg_one_line(PQerrorMessage(conn), line, sizeof line);
    return line;
}

static void commit_batch(bd_pg *s);

static int held_by_me(const bd_pg *s)
{
    for (const bd_pg *p = held_list; p; p = p->held_next)
        if (p == s)
            return 1;
    return 0;
}

static void lock(bd_pg *s)
{
    if (pthread_mutex_lock(&s->mu) != 0) {
        fprintf(stderr, "banditd: storage: pthread_mutex_lock failed\n");
        abort();
    }
}

static void unlock(bd_pg *s)
{
    if (pthread_mutex_unlock(&s->mu) != 0) {
        fprintf(stderr, "banditd: storage: pthread_mutex_unlock failed\n");
        abort();
    }
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
    assert(!s->batch_open);
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
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->ctl_mu);
    pthread_cond_destroy(&s->durable_cv);
    free(s);
}

int bd_pg_open(const char *url, const bd_store_opts *opts, bd_store **out, bd_err *err)
{
    /* opts->sync does not apply: every COMMIT waits for the server's WAL
     * flush (synchronous_commit as configured there). */
    bd_pg *s = bd_xcalloc(1, sizeof *s);
    s->base.ops = &bd_pg_ops;
    s->cluster = opts && opts->cluster;
    if (pthread_mutex_init(&s->mu, NULL) != 0 || pthread_cond_init(&s->durable_cv, NULL) != 0 ||
        pthread_mutex_init(&s->ctl_mu, NULL) != 0) {
        free(s);
        return bd_err_set(err, BD_EINTERNAL, NULL, "storage: pthread_mutex_init failed");
    }
    int ret = 0;
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
    if (ret)
        destroy(s);
    else
        *out = &s->base;
    return ret;
}

void bd_pg_close(bd_store *store)
{
    bd_pg *s = (bd_pg *)store;
    if (held_by_me(s))
        bd_pg_rollback(&s->base);
    lock(s);
    if (s->batch_open)
        commit_batch(s);
    unlock(s);
    destroy(s); /* ends the session: its advisory lock goes with it */
}

int bd_pg_schema_version(bd_store *store)
{
    return ((bd_pg *)store)->version;
}

/* ---- the lock ---- */

int bd_pg_enter(bd_pg *s)
{
    if (held_by_me(s))
        return 0;
    lock(s);
    if (!s->batch_open) {
        bd_err ignored;
        (void)reconnect_if_lost(s, &ignored); /* if it fails, the call's statement reports it */
    }
    return 1;
}

void bd_pg_leave(bd_pg *s, int locked)
{
    if (locked)
        unlock(s);
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

/* ---- transactions ---- */

static void release_tx(bd_pg *s)
{
    bd_pg **p = &held_list;
    while (*p != s)
        p = &(*p)->held_next;
    *p = s->held_next;
    s->held_next = NULL;
    s->in_tx = 0;
    unlock(s);
}

static int control(bd_pg *s, const char *sql, bd_err *err)
{
    return bd_pg_exec_simple(s->conn, sql, err, sql);
}

int bd_pg_begin(bd_store *store, bd_err *err)
{
    bd_pg *s = (bd_pg *)store;
    int ret = 0;
    if (held_by_me(s))
        return bd_err_set(err, BD_EINTERNAL, NULL, "storage: a transaction is already open on this thread");
    lock(s);
    if (s->poisoned) {
        ret = bd_err_set(err, BD_ESTORAGE, NULL, "storage: recovering from a failed commit; retry");
        goto out;
    }
    if (s->batch_open && PQstatus(s->conn) != CONNECTION_OK) {
        /* The open batch died with the connection: end it now (failed, for
         * its waiters, and poisoned) rather than wait for a waiter that
         * may never come; the next begin after recovery reconnects. */
        commit_batch(s);
        ret = bd_err_set(err, BD_ESTORAGE, NULL, "storage: the database connection was lost; retry");
        goto out;
    }
    if (!s->batch_open) {
        if ((ret = reconnect_if_lost(s, err)))
            goto out;
        /* libpq learns that the server went away only when it uses the
         * connection: nothing is open yet, so reconnect and try once more. */
        /* The isolation the fence relies on (a renew's UPDATE sees a
         * takeover committed since), named rather than taken from the
         * server's or the role's default_transaction_isolation. */
        static const char begin[] = "BEGIN ISOLATION LEVEL READ COMMITTED";
        if ((ret = control(s, begin, err)) && PQstatus(s->conn) != CONNECTION_OK && !reconnect_if_lost(s, err))
            ret = control(s, begin, err);
        if (ret)
            goto out;
        s->batch_open = 1;
    }
    ret = control(s, "SAVEPOINT bd_request", err);
out:
    if (ret) {
        unlock(s);
        return ret;
    }
    s->owner = pthread_self();
    s->in_tx = 1;
    s->held_next = held_list;
    held_list = s;
    return 0;
}

int bd_pg_release(bd_store *store, uint64_t *ticket, bd_err *err)
{
    bd_pg *s = (bd_pg *)store;
    if (!held_by_me(s))
        return bd_err_set(err, BD_EINTERNAL, NULL, "storage: release without a transaction on this thread");
    assert(s->in_tx && pthread_equal(s->owner, pthread_self()));
    int ret = control(s, "RELEASE SAVEPOINT bd_request", err);
    if (ret) {
        bd_err ignored;
        (void)control(s, "ROLLBACK TO SAVEPOINT bd_request", &ignored);
        (void)control(s, "RELEASE SAVEPOINT bd_request", &ignored);
    }
    *ticket = s->batch_seq + 1;
    release_tx(s);
    return ret;
}

/* Commits the open batch; mu held. PostgreSQL answers COMMIT of a failed
 * transaction with ROLLBACK, which is a failure here too. */
static void commit_batch(bd_pg *s)
{
    bd_err err;
    uint64_t seq = s->batch_seq + 1;
    int ret = 0;
    if (s->fail_next_commit) {
        ret = bd_err_set(&err, BD_ESTORAGE, NULL, "storage: commit: disk full (test)");
    } else {
        PGresult *res = PQexec(s->conn, "COMMIT");
        if (PQresultStatus(res) != PGRES_COMMAND_OK)
            ret = bd_err_set(&err, BD_ESTORAGE, NULL, "storage: commit: %s", conn_error(s->conn));
        else if (strcmp(PQcmdStatus(res), "COMMIT") != 0)
            ret = bd_err_set(&err, BD_ESTORAGE, NULL, "storage: commit: the transaction had failed (%s)",
                             PQcmdStatus(res));
        PQclear(res);
    }
    s->fail_next_commit = 0;
    s->failed[seq % BD_PG_OUTCOME_RING] = ret != 0;
    s->last_failed = ret != 0;
    if (ret) {
        fprintf(stderr, "banditd: %s; the batch is rolled back\n", err.message);
        if (PQstatus(s->conn) == CONNECTION_OK && PQtransactionStatus(s->conn) != PQTRANS_IDLE &&
            control(s, "ROLLBACK", &err))
            fprintf(stderr, "banditd: %s\n", err.message);
        s->n_failed++;
        s->poisoned = 1;
    }
    s->batch_open = 0;
    s->batch_seq = seq;
    s->durable_seq = seq;
    pthread_cond_broadcast(&s->durable_cv);
}

int bd_pg_wait(bd_store *store, uint64_t ticket, bd_err *err)
{
    bd_pg *s = (bd_pg *)store;
    if (held_by_me(s))
        return bd_err_set(err, BD_EINTERNAL, NULL, "storage: wait while holding a transaction");
    lock(s);
    while (s->durable_seq < ticket) {
        if (s->committing) {
            pthread_cond_wait(&s->durable_cv, &s->mu);
            continue;
        }
        /* A COMMIT is a round trip and a WAL flush on the server, long
         * enough for others to release into the batch meanwhile: no delay. */
        s->committing = 1;
        commit_batch(s);
        s->committing = 0;
    }
    int failed = s->durable_seq - ticket >= BD_PG_OUTCOME_RING || s->failed[ticket % BD_PG_OUTCOME_RING];
    unlock(s);
    return failed ? bd_err_set(err, BD_ESTORAGE, NULL, "storage: the commit failed; nothing was saved") : 0;
}

int bd_pg_commit(bd_store *store, bd_err *err)
{
    uint64_t ticket;
    int ret = bd_pg_release(store, &ticket, err);
    return ret ? ret : bd_pg_wait(store, ticket, err);
}

void bd_pg_rollback(bd_store *store)
{
    bd_pg *s = (bd_pg *)store;
    if (!held_by_me(s))
        return;
    assert(s->in_tx && pthread_equal(s->owner, pthread_self()));
    bd_err err;
    /* Undo this request only: the batch may hold other requests' work. */
    if (control(s, "ROLLBACK TO SAVEPOINT bd_request", &err) || control(s, "RELEASE SAVEPOINT bd_request", &err))
        fprintf(stderr, "banditd: %s\n", err.message);
    release_tx(s);
}

uint64_t bd_pg_failures(bd_store *store)
{
    return atomic_load(&((bd_pg *)store)->n_failed);
}

int bd_pg_writable(bd_store *store)
{
    bd_pg *s = (bd_pg *)store;
    lock(s);
    int ok = !s->poisoned && !s->last_failed;
    unlock(s);
    return ok;
}

int bd_pg_probe(bd_store *store, double now, bd_err *err)
{
    bd_pg *s = (bd_pg *)store;
    int ret = bd_pg_begin(store, err);
    if (ret)
        return ret;
    bd_pg_params p = {0};
    bd_pg_p_double(&p, now);
    ret = bd_pg_run_done(s, BD_PG_PROBE, &p, NULL, err, "probe write");
    if (ret) {
        bd_pg_rollback(store);
        return ret;
    }
    return bd_pg_commit(store, err);
}

void bd_pg_recovered(bd_store *store, uint64_t failures)
{
    bd_pg *s = (bd_pg *)store;
    lock(s);
    if (s->n_failed == failures)
        s->poisoned = 0;
    unlock(s);
}

uint64_t bd_pg_current_ticket(bd_store *store)
{
    bd_pg *s = (bd_pg *)store;
    lock(s);
    uint64_t t = s->batch_open ? s->batch_seq + 1 : s->batch_seq;
    unlock(s);
    return t;
}

void bd_pg_fail_next_commit(bd_store *store)
{
    bd_pg *s = (bd_pg *)store;
    lock(s);
    s->fail_next_commit = 1;
    unlock(s);
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

static int deliver(const bd_pg_rowtype *type, char *rows, int n, int ret, int (*call)(const void *row, void *cb),
                   void *cb)
{
    for (int i = 0; i < n; i++) {
        void *row = rows + (size_t)i * type->size;
        if (!ret)
            ret = call(row, cb);
        type->clear(row);
    }
    return ret;
}

int bd_pg_scan(bd_pg *s, enum bd_pg_stmt which, const bd_pg_rowtype *type,
               void (*bind)(bd_pg_params *p, const void *key), const void *key, int64_t after_id, int64_t limit,
               int (*call)(const void *row, void *cb), void *cb, bd_err *err, const char *what)
{
    int batch = limit > 0 && limit < SCAN_BATCH ? (int)limit : SCAN_BATCH;
    char *rows = bd_xmalloc((size_t)batch * type->size);
    int64_t seen = 0;
    int ret = 0;
    for (;;) {
        int want = batch, n = 0;
        if (limit > 0 && limit - seen < want)
            want = (int)(limit - seen);
        if (want == 0)
            break;
        ret = read_batch(s, which, type, bind, key, after_id, want, rows, &n, &after_id, err, what);
        ret = deliver(type, rows, n, ret, call, cb);
        seen += n;
        if (ret || n < want)
            break;
    }
    free(rows);
    return ret;
}

int bd_pg_scan_once(bd_pg *s, enum bd_pg_stmt which, const bd_pg_rowtype *type,
                    void (*bind)(bd_pg_params *p, const void *key), const void *key, int64_t limit,
                    int (*call)(const void *row, void *cb), void *cb, bd_err *err, const char *what)
{
    assert(limit >= 1 && limit <= INT32_MAX);
    char *rows = bd_xmalloc((size_t)limit * type->size);
    int64_t last_id = 0;
    int n = 0;
    int ret = read_batch(s, which, type, bind, key, 0, (int)limit, rows, &n, &last_id, err, what);
    ret = deliver(type, rows, n, ret, call, cb);
    free(rows);
    return ret;
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
    .begin = bd_pg_begin,
    .commit = bd_pg_commit,
    .rollback = bd_pg_rollback,
    .release = bd_pg_release,
    .wait = bd_pg_wait,
    .failures = bd_pg_failures,
    .writable = bd_pg_writable,
    .probe = bd_pg_probe,
    .recovered = bd_pg_recovered,
    .current_ticket = bd_pg_current_ticket,
    .fail_next_commit = bd_pg_fail_next_commit,
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
    .trial_counts_each = bd_pg_trial_counts_each,
    .trial_insert = bd_pg_trial_insert,
    .trial_get = bd_pg_trial_get,
    .trial_finish = bd_pg_trial_finish,
    .trial_set_lease = bd_pg_trial_set_lease,
    .trial_set_user_attrs = bd_pg_trial_set_user_attrs,
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
