/* sqlite_store.c: the SQLite backend's connection: open (configure, migrate,
 * prepare every statement once), close (checkpoint the WAL), the lock,
 * transactions, the probe and the ops table. The top of the backend: its
 * ops table names the table files' functions, and it calls
 * sqlite_schema.c, sqlite_walbuf.c and sqlite_stmt.c, none of which calls
 * it.
 *
 * Locking: one connection, opened SQLITE_OPEN_NOMUTEX because the lock of
 * its group commit (group_commit.h) serializes all use of it; a batch is a
 * BEGIN IMMEDIATE, a request a savepoint in it. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sqlite_internal.h"
#include "sqlite_walbuf.h"

#define BUSY_TIMEOUT_MS 5000
/* The committer holds its batch open this long (without the lock) for the
 * requests in progress to join it, when there are any (group_commit.h).
 * With synchronous=FULL one disk sync then covers them all. With NORMAL
 * there is no sync, but each commit appends every page it changed to the
 * WAL, and a commit per request filled the WAL (and ran its checkpoints)
 * several times as often: bd_loadgen, 32 workers, one study, daemon pinned
 * to a core (tests/bench/README.md, 2026-11-27): NORMAL without a delay
 * 10.7k calls/s, p99 30.5 ms (2-5% of the calls over 10 ms, inside the
 * daemon by its own histogram); with 200 us about 14k, p99 4-5 ms; FULL
 * 11.4k, p99 6.1 ms with 100 us (the delay before), about 12k, p99 5-6 ms
 * with 200. 50 to 800 us were within 10% of each other. A lone client
 * waits for nothing. */
#define COMMIT_DELAY_US 200

static const bd_gc_ops sqlite_gc_ops; /* the transactions' statements, below */

static pthread_once_t library_once = PTHREAD_ONCE_INIT;

/* Process-wide settings, which SQLite takes only before its first use. No
 * memory statistics: SQLite otherwise takes a global mutex around every
 * allocation to count it (perf under load: a tenth of the time spent
 * appending an event went to that mutex), and nothing here reads them.
 * Sub-journals go to the VFS's file at once (spill threshold 0): that file
 * keeps its first MiB in memory and stays open with its buffer for the
 * connection's life (sqlite_subjournal.h), where SQLite's own in-memory
 * journal allocated a 64 KiB chunk for every request's savepoint and freed
 * it at the release, and glibc consolidated its fast bins at each such free
 * (perf under load: malloc_consolidate 1.39% -> 0.81% of the loop's
 * samples, unlink_chunk 0.87% -> 0.59%; the same system calls). */
static void configure_library(void)
{
    if (sqlite3_config(SQLITE_CONFIG_STMTJRNL_SPILL, 0) != SQLITE_OK)
        fprintf(stderr, "banditd: storage: SQLite was in use before the store opened; "
                        "its sub-journals keep their default spill threshold\n");
    if (sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0) != SQLITE_OK)
        fprintf(stderr, "banditd: storage: SQLite was in use before the store opened; "
                        "its memory statistics stay on\n");
}

/* ---- open and close ---- */

/* Runs a PRAGMA that answers one text row (journal_mode) into buf. */
static int pragma_text(sqlite3 *db, const char *sql, char *buf, size_t size, bd_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        const unsigned char *text = sqlite3_column_text(st, 0);
        snprintf(buf, size, "%s", text ? (const char *)text : "");
        rc = SQLITE_OK;
    } else if (rc == SQLITE_DONE) {
        snprintf(buf, size, "%s", "");
        rc = SQLITE_OK;
    }
    if (rc != SQLITE_OK)
        bd_err_set(err, BD_ESTORAGE, NULL, "storage: %s: %s", sql, sqlite3_errmsg(db));
    sqlite3_finalize(st); /* repeats the step's code, handled above */
    return rc == SQLITE_OK ? 0 : BD_ESTORAGE;
}

/* WAL, synchronous per opts, foreign keys (checked: they are a no-op when
 * compiled out), busy timeout. */
static int configure(sqlite3 *db, const bd_store_opts *opts, bd_err *err)
{
    char mode[32];
    int rc = sqlite3_busy_timeout(db, BUSY_TIMEOUT_MS);
    if (rc != SQLITE_OK)
        return bd_err_set(err, BD_ESTORAGE, NULL, "storage: busy_timeout: %s", sqlite3_errmsg(db));
    /* The daemon is the only user of its database: exclusive locking spares
     * every transaction its file-lock system calls and the shared-memory
     * index (other processes cannot open the file while banditd runs). */
    int ret = pragma_text(db, "PRAGMA locking_mode = EXCLUSIVE", mode, sizeof mode, err);
    if (ret)
        return ret;
    ret = pragma_text(db, "PRAGMA journal_mode = WAL", mode, sizeof mode, err);
    if (ret)
        return ret;
    if (strcmp(mode, "wal") != 0 && strcmp(mode, "memory") != 0)
        return bd_err_set(err, BD_ESTORAGE, NULL, "storage: cannot use WAL (journal_mode is \"%s\")", mode);
    /* Checkpoint every 8000 WAL pages (32 MiB) instead of SQLite's 1000: a
     * checkpoint writes each page once however often it changed, and the hot
     * pages (the ends of the events table and its indexes) change in every
     * request, so fewer checkpoints mean far fewer writes and syncs under the
     * lock (loadgen, 32 workers: ~15k -> ~17k calls/s). journal_size_limit
     * trims the file back after a checkpoint. */
    if ((ret = pragma_text(db, "PRAGMA wal_autocheckpoint = 8000", mode, sizeof mode, err)) ||
        (ret = pragma_text(db, "PRAGMA journal_size_limit = 67108864", mode, sizeof mode, err)))
        return ret;
    const char *sync = opts && opts->sync == BD_SYNC_FULL ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL";
    ret = pragma_text(db, sync, mode, sizeof mode, err);
    if (!ret)
        ret = pragma_text(db, "PRAGMA foreign_keys = ON", mode, sizeof mode, err);
    if (!ret)
        ret = pragma_text(db, "PRAGMA foreign_keys", mode, sizeof mode, err);
    if (!ret && strcmp(mode, "1") != 0)
        ret = bd_err_set(err, BD_ESTORAGE, NULL, "storage: this SQLite does not enforce foreign keys");
    return ret;
}

static int prepare_all(bd_sqlite *s, bd_err *err)
{
    for (int i = 0; i < BD_SQL_NSTMTS; i++) {
        assert(bd_sql_text[i]);
        int rc = sqlite3_prepare_v3(s->db, bd_sql_text[i], -1, SQLITE_PREPARE_PERSISTENT, &s->stmt[i], NULL);
        if (rc != SQLITE_OK)
            return bd_err_set(err, BD_ESTORAGE, NULL, "storage: preparing statement %d: %s", i,
                              sqlite3_errmsg(s->db));
    }
    return 0;
}

/* Frees s and everything in it; the database must not be in a transaction. */
static void destroy(bd_sqlite *s)
{
    for (int i = 0; i < BD_SQL_NSTMTS; i++)
        sqlite3_finalize(s->stmt[i]); /* NULL-safe; its code repeats the last step's */
    if (s->db && sqlite3_close(s->db) != SQLITE_OK)
        fprintf(stderr, "banditd: storage: close: %s\n", sqlite3_errmsg(s->db));
    free(s);
}

int bd_sqlite_open(const char *path, const bd_store_opts *opts, bd_store **out, bd_err *err)
{
    bd_sqlite *s = bd_xcalloc(1, sizeof *s);
    s->base.ops = &bd_sqlite_ops;
    s->base.gc = &s->gc;
    int ret = bd_gc_init(&s->gc, &sqlite_gc_ops, s, COMMIT_DELAY_US, err);
    if (ret) {
        free(s);
        return ret;
    }
    s->gc.busy = opts ? opts->busy : NULL;
    /* A new database is created here, private: SQLite would make it 0644
     * less the umask, and its -wal (and -shm) files take the database
     * file's mode. An existing file is left as it is; an error other than
     * EEXIST is SQLite's to report just below. The umask is not touched: it
     * is process-wide and other threads may be creating files. */
    /* A file: URI or a symbolic link would let SQLite create the file (and its
     * WAL) itself, 0644 less the umask (issue 20): both are refused, so the
     * file below is always the one created private or an existing one. */
    struct stat link;
    if (strncmp(path, "file:", 5) == 0) {
        ret = bd_err_set(err, BD_EINVAL, "db", "%s is a file: URI; give the database's path", path);
        goto out;
    }
    if (strcmp(path, ":memory:") != 0 && lstat(path, &link) == 0 && S_ISLNK(link.st_mode)) {
        ret = bd_err_set(err, BD_EINVAL, "db", "%s is a symbolic link; give the path of the file it points to",
                         path);
        goto out;
    }
    if (strcmp(path, ":memory:") != 0) {
        int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0) {
            if (fchmod(fd, 0600) != 0) /* O_CREAT's mode is masked by the umask: never wider, maybe narrower */
                fprintf(stderr, "banditd: storage: chmod 0600 %s: %s\n", path, strerror(errno));
            close(fd);
        }
    }
    pthread_once(&library_once, configure_library);
    int rc = sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                             bd_walbuf_vfs());
    if (rc != SQLITE_OK) {
        ret = bd_err_set(err, BD_ESTORAGE, NULL, "storage: opening %s: %s", path,
                         s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
        goto out;
    }
    ret = configure(s->db, opts, err);
    if (!ret)
        ret = bd_sqlite_migrate(s->db, &s->version, err);
    if (!ret)
        ret = prepare_all(s, err);
out:
    if (ret) {
        bd_gc_destroy(&s->gc);
        destroy(s);
    } else {
        *out = &s->base;
    }
    return ret;
}

void bd_sqlite_close(bd_store *store)
{
    bd_sqlite *s = (bd_sqlite *)store;
    bd_gc_close(&s->gc); /* ends the open batch */
    int rc = sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    if (rc != SQLITE_OK)
        fprintf(stderr, "banditd: storage: WAL checkpoint: %s\n", sqlite3_errmsg(s->db));
    destroy(s);
}

int bd_sqlite_schema_version(bd_store *store)
{
    return ((bd_sqlite *)store)->version;
}

/* ---- transactions ---- */

/* Runs one cached transaction-control statement; 0 or BD_ESTORAGE. */
static int run_control(bd_sqlite *s, enum bd_sql_stmt which, bd_err *err, const char *what)
{
    sqlite3_stmt *st = s->stmt[which];
    int ret = bd_sqlite_step_done(s, st, SQLITE_OK, err, what);
    bd_sqlite_done(st);
    return ret;
}

static int gc_open_batch(void *conn, bd_err *err)
{
    return run_control(conn, BD_SQL_BEGIN, err, "begin");
}

static int gc_savepoint(void *conn, bd_err *err)
{
    return run_control(conn, BD_SQL_SAVEPOINT, err, "savepoint");
}

static int gc_release(void *conn, bd_err *err)
{
    return run_control(conn, BD_SQL_RELEASE, err, "release");
}

static int gc_rollback_to(void *conn, bd_err *err)
{
    return run_control(conn, BD_SQL_ROLLBACK_TO, err, "rollback to");
}

static int gc_commit(void *conn, bd_err *err)
{
    bd_sqlite *s = conn;
    int ret = run_control(s, BD_SQL_COMMIT, err, "commit");
    if (ret)
        return ret;
    /* The WAL buffer writes a commit before SQLite's COMMIT returns
     * (sqlite_walbuf.h); should a SQLite version write commit frames
     * otherwise, nothing acknowledged may wait in memory: write it now. */
    long held;
    int rc = bd_walbuf_flush(s->db, &held);
    if (held > 0) {
        static atomic_int warned;
        if (!atomic_exchange(&warned, 1))
            fprintf(stderr, "banditd: storage: %ld bytes of a commit were still held after COMMIT\n", held);
    }
    return rc == SQLITE_OK ? 0 : bd_err_set(err, BD_ESTORAGE, NULL, "storage: commit: %s", sqlite3_errstr(rc));
}

static void gc_abort(void *conn)
{
    bd_sqlite *s = conn;
    bd_err err;
    if (!sqlite3_get_autocommit(s->db) && run_control(s, BD_SQL_ROLLBACK, &err, "rollback"))
        fprintf(stderr, "banditd: %s\n", err.message);
}

static const bd_gc_ops sqlite_gc_ops = {
    .open_batch = gc_open_batch,
    .savepoint = gc_savepoint,
    .release = gc_release,
    .rollback_to = gc_rollback_to,
    .commit = gc_commit,
    .abort = gc_abort,
};

/* A write in a transaction of its own, through the group commit itself:
 * the backend calls nothing of store.c. */
int bd_sqlite_probe(bd_store *store, double now, bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    int ret = bd_gc_begin(&s->gc, err);
    if (ret)
        return ret;
    sqlite3_stmt *st = s->stmt[BD_SQL_PROBE];
    int rc = SQLITE_OK;
    bd_sqlite_bind_double(st, 1, now, &rc);
    ret = bd_sqlite_step_done(s, st, rc, err, "probe write");
    bd_sqlite_done(st);
    if (ret) {
        bd_gc_rollback(&s->gc);
        return ret;
    }
    return bd_gc_commit(&s->gc, err);
}

#define SLOT(name, params, args) .name = bd_sqlite_##name,
const bd_store_ops bd_sqlite_ops = {
    .name = "sqlite",
    .close = bd_sqlite_close,
    .schema_version = bd_sqlite_schema_version,
    BD_STORE_CALLS(SLOT)
};
#undef SLOT
