/* pg_cluster.c: several daemons on one PostgreSQL schema (issue 16): the
 * daemons table, the study ownership leases with their fencing tokens, and
 * the blocks of trial and event ids a member hands out.
 *
 * Tables (not part of the logical model of store.h, so not versioned by
 * pg_schema.c: the first member creates them, IF NOT EXISTS, under a
 * transaction-level advisory lock):
 *   daemons       (id, url, heartbeat)               one row per member process
 *   study_owners  (study_id, daemon_id, token, expires_at)   the study's lease
 *   bd_id_blocks  a sequence: block k holds ids [k * BLOCK, (k + 1) * BLOCK)
 *
 * Invariants:
 * - Ownership changes (acquire, release) and the other bookkeeping run on
 *   s->ctl, an autocommit connection of their own: a takeover commits at
 *   once and never waits inside a batch, so it cannot close a lock cycle
 *   with the batches of the main connection.
 * - The fence (renew) runs on the main connection inside the request's
 *   transaction: SELECT ... WHERE daemon = me AND token = mine FOR KEY
 *   SHARE. (study_id, token) is a unique index, so the token is a key
 *   column: a takeover, which changes the token, waits for that batch's
 *   COMMIT, and a write is either committed before the takeover (and
 *   replayed by the new owner) or refused (BD_EMOVED). A renewal changes
 *   expires_at alone and waits for no batch.
 * - Leases are renewed off the request path: the holder's reaper renews all
 *   of them in one statement (owner_renew_held), every half second.
 * - Times are PostgreSQL's clock_timestamp(): daemons' clocks never compare.
 * - Id blocks come from a sequence (never given back, never waits) and are
 *   handed out in increasing order, so a block taken after a takeover is
 *   above every id the previous owner used. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pg_internal.h"

/* Seconds without a heartbeat (every daemon beats every half second)
 * after which a daemon's live leases may be taken, and after which its
 * daemons row is deleted. */
#define HEARTBEAT_DEAD "10"
#define HEARTBEAT_GONE "600"

/* Ids per block: a member asks PostgreSQL once per this many trials. */
#define BLOCK ((int64_t)1 << 16)

static const char *const cluster_ddl =
    "SELECT pg_advisory_xact_lock(hashtext('banditd cluster ' || current_schema()));"
    "CREATE TABLE IF NOT EXISTS daemons ("
    "  id        bigserial PRIMARY KEY,"
    "  url       text NOT NULL,"
    "  heartbeat double precision NOT NULL);"
    "CREATE TABLE IF NOT EXISTS study_owners ("
    "  study_id   bigint PRIMARY KEY REFERENCES studies (id) ON DELETE CASCADE,"
    "  daemon_id  bigint NOT NULL,"
    "  token      bigint NOT NULL,"
    "  expires_at timestamptz NOT NULL);"
    "CREATE INDEX IF NOT EXISTS study_owners_daemon ON study_owners (daemon_id);"
    /* makes the token a key column: the fence's FOR KEY SHARE holds off a takeover, not a renewal */
    "CREATE UNIQUE INDEX IF NOT EXISTS study_owners_token ON study_owners (study_id, token);"
    "CREATE SEQUENCE IF NOT EXISTS bd_id_blocks;"
    /* Above every id a lone daemon stored before the cluster started (the two
     * modes exclude each other: pg_store.c's schema lock). */
    "SELECT setval('bd_id_blocks', f) FROM (SELECT greatest("
    "  (SELECT seq FROM bd_sequence WHERE name = 'trials'),"
    "  (SELECT coalesce(max(id), 0) FROM events)) / 65536 + 1 AS f) x"
    "  WHERE f > (SELECT last_value FROM bd_id_blocks)";
_Static_assert(BLOCK == 65536, "cluster_ddl divides by BLOCK");

static const char *line_of(PGconn *conn)
{
    static _Thread_local char line[512];
    bd_pg_one_line(PQerrorMessage(conn), line, sizeof line);
    return line;
}

/* The ownership connection's session. Every call on it holds ctl_mu, so
 * one wait there stalls every claim of this daemon: lock_timeout bounds the
 * wait for a study_owners row that a peer's open batch holds (its renew),
 * answered BD_EBUSY (429, retry); statement_timeout bounds the rest.
 * synchronous_commit off: a claim need not wait for its WAL flush, because
 * nothing is written under a claim except through a fenced batch, whose
 * synchronous COMMIT flushes the WAL past the claim first; a claim lost in
 * a server crash is a lease never granted, and the next claim takes it. No
 * NOTICE lines on stderr for the IF NOT EXISTS of every join. */
static const char ctl_settings[] = "SET extra_float_digits = 3; SET client_min_messages = warning; "
                                   "SET lock_timeout = '250ms'; SET statement_timeout = '5s'; "
                                   "SET synchronous_commit = off";

int bd_pg_ctl_connect(bd_pg *s, const char *url, bd_err *err)
{
    s->ctl = bd_pg_connect(url);
    if (!s->ctl || PQstatus(s->ctl) != CONNECTION_OK)
        return bd_err_set(err, BD_ESTORAGE, NULL, "storage: connecting the ownership connection: %s",
                          s->ctl ? line_of(s->ctl) : "out of memory");
    if (PQsetClientEncoding(s->ctl, "UTF8") != 0)
        return bd_err_set(err, BD_ESTORAGE, NULL, "storage: ownership connection: %s", line_of(s->ctl));
    return bd_pg_exec_simple(s->ctl, ctl_settings, err, "ownership connection settings");
}

/* Resets the ownership connection; ctl_mu held. 0 if it works again. */
static int ctl_reset(bd_pg *s)
{
    PQreset(s->ctl);
    if (PQstatus(s->ctl) != CONNECTION_OK || PQsetClientEncoding(s->ctl, "UTF8") != 0)
        return -1;
    PGresult *r = PQexec(s->ctl, ctl_settings);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    return ok ? 0 : -1;
}

/* Runs sql with n text parameters on conn. Returns the result (caller
 * PQclears) or NULL with *ret set (BD_ENOTFOUND for a foreign key naming a
 * missing row, else BD_ESTORAGE). */
static PGresult *run(PGconn *conn, const char *sql, int n, const char *const *values, int *ret, bd_err *err,
                     const char *what)
{
    PGresult *res = PQexecParams(conn, sql, n, NULL, values, NULL, NULL, 0);
    ExecStatusType st = PQresultStatus(res);
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
        *ret = 0;
        return res;
    }
    const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
    char line[512];
    bd_pg_one_line(PQresultErrorMessage(res), line, sizeof line);
    /* 55P03 lock_not_available (lock_timeout), 57014 query_canceled
     * (statement_timeout): a peer holds the row; busy, not broken. */
    if (state && (strcmp(state, "55P03") == 0 || strcmp(state, "57014") == 0)) {
        *ret = bd_err_set(err, BD_EBUSY, "study", "storage: %s: another daemon holds it; retry", what);
        if (err)
            err->retry_after = 1;
    } else {
        *ret = bd_err_set(err, state && strcmp(state, "23503") == 0 ? BD_ENOTFOUND : BD_ESTORAGE, NULL,
                          "storage: %s: %s", what, line);
    }
    PQclear(res);
    return NULL;
}

/* run() on the ownership connection, ctl_mu held: a connection found dead
 * (a PostgreSQL restart: libpq learns it only on use) is reset and the
 * statement tried once more, so a restart costs no request a 500. Only
 * for statements that are safe to run twice (each is one autocommit
 * statement; a lost connection means it was not committed, or its effect
 * is the same when repeated). */
static PGresult *run_ctl(bd_pg *s, const char *sql, int n, const char *const *values, int *ret, bd_err *err,
                         const char *what)
{
    PGresult *res = run(s->ctl, sql, n, values, ret, err, what);
    if (!res && PQstatus(s->ctl) != CONNECTION_OK && ctl_reset(s) == 0) {
        bd_err_clear(err);
        res = run(s->ctl, sql, n, values, ret, err, what);
    }
    return res;
}

/* Takes ctl_mu; a connection lost since the last call is reset first. */
static void ctl_enter(bd_pg *s)
{
    pthread_mutex_lock(&s->ctl_mu);
    if (PQstatus(s->ctl) != CONNECTION_OK)
        (void)ctl_reset(s); /* a failure shows in the call that follows */
}

static void ctl_leave(bd_pg *s)
{
    pthread_mutex_unlock(&s->ctl_mu);
}

static int need_cluster(bd_pg *s, bd_err *err)
{
    return s->cluster ? 0 : bd_err_set(err, BD_EINVAL, NULL, "storage: not opened as a cluster member");
}

int bd_pg_cluster_join(bd_store *store, const char *url, int64_t *daemon_id, bd_err *err)
{
    bd_pg *s = (bd_pg *)store;
    int ret = need_cluster(s, err);
    if (ret)
        return ret;
    ctl_enter(s);
    PGresult *res = NULL;
    char sql[2048];
    snprintf(sql, sizeof sql, "BEGIN; %s; COMMIT", cluster_ddl);
    if ((ret = bd_pg_exec_simple(s->ctl, sql, err, "create the cluster tables")) != 0) {
        PGresult *r = PQexec(s->ctl, "ROLLBACK");
        PQclear(r);
    }
    const char *v[1] = {url};
    if (!ret && (res = run_ctl(s, "INSERT INTO daemons (url, heartbeat) VALUES ($1, "
                                   "extract(epoch FROM clock_timestamp())) RETURNING id",
                           1, v, &ret, err, "register the daemon")))
        *daemon_id = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    ctl_leave(s);
    return ret;
}

int bd_pg_cluster_heartbeat(bd_store *store, int64_t daemon_id, bd_err *err)
{
    bd_pg *s = (bd_pg *)store;
    char id[32];
    const char *v[1] = {id};
    int ret = need_cluster(s, err);
    if (ret)
        return ret;
    snprintf(id, sizeof id, "%" PRId64, daemon_id);
    ctl_enter(s);
    PQclear(run_ctl(s, "UPDATE daemons SET heartbeat = extract(epoch FROM clock_timestamp()) WHERE id = $1", 1, v,
                &ret, err, "heartbeat"));
    /* Members killed without their leave: their leases are free already
     * (no heartbeat), and their rows go after a while. */
    bd_err ignored;
    int gone;
    if (!ret)
        PQclear(run_ctl(s, "DELETE FROM daemons WHERE heartbeat < extract(epoch FROM clock_timestamp()) - " HEARTBEAT_GONE,
                        0, NULL, &gone, &ignored, "forget dead daemons"));
    ctl_leave(s);
    return ret;
}

void bd_pg_cluster_leave(bd_store *store, int64_t daemon_id)
{
    bd_pg *s = (bd_pg *)store;
    char id[32];
    const char *v[1] = {id};
    int ret;
    bd_err ignored;
    if (!s->cluster)
        return;
    snprintf(id, sizeof id, "%" PRId64, daemon_id);
    ctl_enter(s);
    /* Its studies are free at once: peers need not wait for the leases
     * (expired, not deleted: the token must never go back). */
    PQclear(run_ctl(s, "UPDATE study_owners SET expires_at = '-infinity' WHERE daemon_id = $1", 1, v, &ret,
                &ignored, "leave"));
    PQclear(run_ctl(s, "DELETE FROM daemons WHERE id = $1", 1, v, &ret, &ignored, "leave"));
    ctl_leave(s);
}

int bd_pg_id_block(bd_store *store, int64_t *first, int64_t *count, bd_err *err)
{
    bd_pg *s = (bd_pg *)store;
    int ret = need_cluster(s, err);
    if (ret)
        return ret;
    ctl_enter(s);
    PGresult *res = run_ctl(s, "SELECT nextval('bd_id_blocks')", 0, NULL, &ret, err, "id block");
    if (res) {
        *first = strtoll(PQgetvalue(res, 0, 0), NULL, 10) * BLOCK;
        *count = BLOCK;
    }
    PQclear(res);
    ctl_leave(s);
    return ret;
}

int bd_pg_owner_acquire(bd_store *store, int64_t study_id, int64_t daemon_id, double lease, int steal,
                        int64_t *token, bd_err *err)
{
    bd_pg *s = (bd_pg *)store;
    char a[32], b[32], c[32], d[32];
    const char *v[4] = {a, b, c, d};
    int ret = need_cluster(s, err);
    if (ret)
        return ret;
    snprintf(a, sizeof a, "%" PRId64, study_id);
    snprintf(b, sizeof b, "%" PRId64, daemon_id);
    snprintf(c, sizeof c, "%.6f", lease);
    snprintf(d, sizeof d, "%d", steal);
    ctl_enter(s);
    /* Mine: renewed, same token (nobody else wrote). Free, expired, held
     * by a daemon without a recent heartbeat (hung, or gone without its
     * leave), or held by the daemon $4 (found gone at its address): token
     * + 1, which fences the previous owner's writes. */
    PGresult *res = run_ctl(s,
                        "INSERT INTO study_owners AS o (study_id, daemon_id, token, expires_at) "
                        "VALUES ($1, $2, 1, clock_timestamp() + make_interval(secs => $3::float8)) "
                        "ON CONFLICT (study_id) DO UPDATE SET daemon_id = $2, "
                        "  token = CASE WHEN o.daemon_id = $2 THEN o.token ELSE o.token + 1 END, "
                        "  expires_at = clock_timestamp() + make_interval(secs => $3::float8) "
                        "WHERE o.daemon_id = $2 OR o.expires_at < clock_timestamp() OR o.daemon_id = $4::bigint "
                        "  OR NOT EXISTS (SELECT 1 FROM daemons d WHERE d.id = o.daemon_id "
                        "    AND d.heartbeat > extract(epoch FROM clock_timestamp()) - " HEARTBEAT_DEAD ") "
                        "RETURNING token",
                        4, v, &ret, err, "take the study's lease");
    if (res && PQntuples(res) == 1)
        *token = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    else if (res)
        ret = bd_err_set(err, BD_EBUSY, "study", "study %" PRId64 " is served by another daemon", study_id);
    PQclear(res);
    ctl_leave(s);
    if (ret == BD_ENOTFOUND)
        bd_err_set(err, ret, NULL, "no study %" PRId64, study_id);
    return ret;
}

int bd_pg_owner_renew(bd_store *store, int64_t study_id, int64_t daemon_id, int64_t token, double lease,
                      bd_err *err)
{
    bd_pg *s = (bd_pg *)store;
    char a[32], b[32], c[32];
    const char *v[3] = {a, b, c};
    int ret = need_cluster(s, err);
    (void)lease; /* the reaper renews (owner_renew_held); the fence only holds the token */
    if (ret)
        return ret;
    snprintf(a, sizeof a, "%" PRId64, study_id);
    snprintf(b, sizeof b, "%" PRId64, daemon_id);
    snprintf(c, sizeof c, "%" PRId64, token);
    int locked = bd_pg_enter(s);
    PGresult *res = run(s->conn,
                        "SELECT 1 FROM study_owners WHERE study_id = $1 AND daemon_id = $2 AND token = $3 "
                        "FOR KEY SHARE",
                        3, v, &ret, err, "check the study's lease");
    if (res && PQntuples(res) != 1)
        ret = bd_err_set(err, BD_EMOVED, "study", "study %" PRId64 " moved to another daemon; retry", study_id);
    PQclear(res);
    bd_pg_leave(s, locked);
    return ret;
}

int bd_pg_owner_lookup(bd_store *store, int64_t study_id, bd_owner *out, bd_err *err)
{
    bd_pg *s = (bd_pg *)store;
    char a[32];
    const char *v[1] = {a};
    int ret = need_cluster(s, err);
    memset(out, 0, sizeof *out);
    if (ret)
        return ret;
    snprintf(a, sizeof a, "%" PRId64, study_id);
    ctl_enter(s);
    /* A plain read: it never waits for a batch holding the row. */
    PGresult *res = run_ctl(s,
                            "SELECT o.daemon_id, o.token, coalesce(d.url, ''), "
                            "  CASE WHEN o.expires_at > clock_timestamp() THEN extract(epoch FROM o.expires_at) "
                            "    - extract(epoch FROM clock_timestamp()) ELSE 0 END, "
                            "  coalesce(d.heartbeat > extract(epoch FROM clock_timestamp()) - " HEARTBEAT_DEAD ", false) "
                            "FROM study_owners o LEFT JOIN daemons d ON d.id = o.daemon_id WHERE o.study_id = $1",
                            1, v, &ret, err, "look the study's lease up");
    if (res && PQntuples(res) == 1) {
        out->daemon_id = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
        out->token = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
        snprintf(out->url, sizeof out->url, "%s", PQgetvalue(res, 0, 2));
        out->remaining = strtod(PQgetvalue(res, 0, 3), NULL);
        out->live = out->remaining > 0 && PQgetvalue(res, 0, 4)[0] == 't';
    }
    PQclear(res);
    ctl_leave(s);
    return ret;
}

int bd_pg_owner_renew_held(bd_store *store, int64_t daemon_id, double lease, bd_owner_fn fn, void *arg, bd_err *err)
{
    bd_pg *s = (bd_pg *)store;
    char a[32], b[32];
    const char *v[2] = {a, b};
    int ret = need_cluster(s, err);
    if (ret)
        return ret;
    snprintf(a, sizeof a, "%" PRId64, daemon_id);
    snprintf(b, sizeof b, "%.6f", lease);
    ctl_enter(s);
    /* Live leases only: a released one (-infinity) stays released. A
     * batch's fence (FOR KEY SHARE) does not hold this up; a peer's
     * takeover of one of these rows would, for its one statement. */
    PGresult *res = run_ctl(s,
                            "UPDATE study_owners SET expires_at = clock_timestamp() + make_interval(secs => $2::float8) "
                            "WHERE daemon_id = $1 AND expires_at > clock_timestamp() RETURNING study_id, token",
                            2, v, &ret, err, "renew the leases");
    for (int i = 0; res && i < PQntuples(res); i++)
        fn(arg, strtoll(PQgetvalue(res, i, 0), NULL, 10), strtoll(PQgetvalue(res, i, 1), NULL, 10));
    PQclear(res);
    ctl_leave(s);
    return ret;
}

void bd_pg_owner_release(bd_store *store, int64_t study_id, int64_t daemon_id, int64_t token)
{
    bd_pg *s = (bd_pg *)store;
    char a[32], b[32], c[32];
    const char *v[3] = {a, b, c};
    int ret;
    bd_err ignored;
    if (!s->cluster)
        return;
    snprintf(a, sizeof a, "%" PRId64, study_id);
    snprintf(b, sizeof b, "%" PRId64, daemon_id);
    snprintf(c, sizeof c, "%" PRId64, token);
    ctl_enter(s);
    /* Expired rather than deleted: a new row would start at token 1 again,
     * and a daemon that once held token 1 would take its stale memory for
     * current. */
    PQclear(run_ctl(s, "UPDATE study_owners SET expires_at = '-infinity' "
                        "WHERE study_id = $1 AND daemon_id = $2 AND token = $3",
                3, v, &ret, &ignored, "release the study's lease"));
    ctl_leave(s);
}

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int bd_pg_clock_skew(bd_store *store, double *skew, bd_err *err)
{
    bd_pg *s = (bd_pg *)store;
    int ret = need_cluster(s, err);
    if (ret)
        return ret;
    ctl_enter(s);
    double before = wall_now();
    PGresult *res = run_ctl(s, "SELECT extract(epoch FROM clock_timestamp())", 0, NULL, &ret, err, "read the clock");
    double after = wall_now();
    if (res)
        *skew = strtod(PQgetvalue(res, 0, 0), NULL) - (before + after) / 2;
    PQclear(res);
    ctl_leave(s);
    return ret;
}

int bd_pg_lock_user(bd_store *store, int64_t user_id, bd_err *err)
{
    bd_pg *s = (bd_pg *)store;
    char a[32];
    const char *v[1] = {a};
    int ret = 0;
    if (!s->cluster)
        return 0;
    snprintf(a, sizeof a, "%" PRId64, user_id);
    int locked = bd_pg_enter(s);
    /* Two-key form: the class is this schema's, so other advisory locks
     * (the schema's, other schemas') never collide with a user's. Held
     * until the batch commits; a rollback to the request's savepoint keeps
     * it, which only delays a peer's create of the same user. */
    PQclear(run(s->conn,
                "SELECT pg_advisory_xact_lock(hashtext('banditd user ' || current_schema()), "
                "($1::bigint % 2147483647)::int)",
                1, v, &ret, err, "lock the user"));
    bd_pg_leave(s, locked);
    return ret;
}
