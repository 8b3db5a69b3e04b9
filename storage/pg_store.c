/* pg_store.c: the PostgreSQL backend's connection: open (connect, claim the
 * schema, migrate, prepare every statement once), close, the lock,
 * transactions with group commit, and the ops table. Transactions are group_commit.h's, as for SQLite: one connection
 * behind its lock, a request a SAVEPOINT inside the batch's BEGIN, the
 * first waiter of a batch COMMITs it, and a failed COMMIT fails every
 * request in the batch and poisons the store until bd_store_recovered. The
 * top of the backend: its ops table names the table files' functions, and
 * it calls pg_schema.c, pg_cluster.c and pg_conn.c, none of which calls it.
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

/* A write in a transaction of its own, through the group commit itself:
 * the backend calls nothing of store.c. */
int bd_pg_probe(bd_store *store, double now, bd_err *err)
{
    bd_pg *s = (bd_pg *)store;
    int ret = bd_gc_begin(&s->gc, err);
    if (ret)
        return ret;
    bd_pg_params p = {0};
    bd_pg_p_double(&p, now);
    ret = bd_pg_run_done(s, BD_PG_PROBE, &p, NULL, err, "probe write");
    if (ret) {
        bd_gc_rollback(&s->gc);
        return ret;
    }
    return bd_gc_commit(&s->gc, err);
}

#define SLOT(name, params, args) .name = bd_pg_##name,
const bd_store_ops bd_pg_ops = {
    .name = "postgresql",
    .close = bd_pg_close,
    .schema_version = bd_pg_schema_version,
    BD_STORE_CALLS(SLOT)
    BD_STORE_CLUSTER_CALLS(SLOT)
    BD_STORE_CLUSTER_VOID_CALLS(SLOT)
};
#undef SLOT
