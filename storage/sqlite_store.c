/* sqlite_store.c: the SQLite backend's connection: open (configure, migrate,
 * prepare every statement once), close (checkpoint the WAL), the lock,
 * transactions, and the step/scan helpers the table files share.
 *
 * Locking: one connection, opened SQLITE_OPEN_NOMUTEX because mu serializes
 * all use of it. bd_store_begin takes mu and opens a savepoint (and the
 * batch's BEGIN IMMEDIATE if none is open); release or rollback end the
 * savepoint and give mu back; the first waiter of a batch commits it (group
 * commit, see store.h). Which stores a thread holds a transaction on is kept in
 * a thread-local list, so a call from the owner does not lock again and other
 * threads never read fields another thread writes (no data race). */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sqlite_internal.h"

#define BUSY_TIMEOUT_MS 5000
#define SCAN_BATCH 256
/* With synchronous=FULL a commit costs a disk sync, so the committer holds
 * its batch open this long (without the lock) for more requests to join:
 * one sync then covers all of them. loadgen, 32 workers, one study:
 * 6.2k calls/s without, 9.6k with 100 us (batches of ~4); 200 us and more
 * lose again. With NORMAL a commit is cheap and waiting only adds latency. */
#define FULL_SYNC_COMMIT_DELAY_US 100

static _Thread_local bd_sqlite *held_list; /* stores this thread holds a transaction on */

static void commit_batch(bd_sqlite *s);

static int held_by_me(const bd_sqlite *s)
{
    for (const bd_sqlite *p = held_list; p; p = p->held_next)
        if (p == s)
            return 1;
    return 0;
}

static void lock(bd_sqlite *s)
{
    if (pthread_mutex_lock(&s->mu) != 0) {
        fprintf(stderr, "banditd: storage: pthread_mutex_lock failed\n");
        abort();
    }
}

static void unlock(bd_sqlite *s)
{
    if (pthread_mutex_unlock(&s->mu) != 0) {
        fprintf(stderr, "banditd: storage: pthread_mutex_unlock failed\n");
        abort();
    }
}

int bd_sqlite_enter(bd_sqlite *s)
{
    if (held_by_me(s))
        return 0;
    lock(s);
    return 1;
}

void bd_sqlite_leave(bd_sqlite *s, int locked)
{
    if (locked)
        unlock(s);
}

void bd_sqlite_done(sqlite3_stmt *st)
{
    sqlite3_reset(st);
    sqlite3_clear_bindings(st); /* always SQLITE_OK */
}

int bd_sqlite_fail(bd_sqlite *s, int rc, bd_err *err, const char *what)
{
    int code = BD_ESTORAGE;
    if ((rc & 0xff) == SQLITE_CONSTRAINT) {
        int ext = sqlite3_extended_errcode(s->db);
        if (ext == SQLITE_CONSTRAINT_UNIQUE || ext == SQLITE_CONSTRAINT_PRIMARYKEY)
            code = BD_ECONFLICT;
        else if (ext == SQLITE_CONSTRAINT_FOREIGNKEY)
            code = BD_ENOTFOUND;
    }
    return bd_err_set(err, code, NULL, "storage: %s: %s", what, sqlite3_errmsg(s->db));
}

int bd_sqlite_step_done(bd_sqlite *s, sqlite3_stmt *st, int rc, bd_err *err, const char *what)
{
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    return rc == SQLITE_DONE ? 0 : bd_sqlite_fail(s, rc, err, what);
}

int bd_sqlite_step_row(bd_sqlite *s, sqlite3_stmt *st, int rc, bd_err *err, const char *what)
{
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        return 1;
    return rc == SQLITE_DONE ? 0 : bd_sqlite_fail(s, rc, err, what);
}

char *bd_sqlite_col_text(sqlite3_stmt *st, int i)
{
    if (sqlite3_column_type(st, i) == SQLITE_NULL)
        return NULL;
    const char *text = (const char *)sqlite3_column_text(st, i);
    if (!text) {
        fprintf(stderr, "banditd: storage: out of memory reading a text column\n");
        abort();
    }
    return bd_xstrdup(text);
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
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->durable_cv);
    pthread_cond_destroy(&s->delay_cv);
    free(s);
}

int bd_sqlite_open(const char *path, const bd_store_opts *opts, bd_store **out, bd_err *err)
{
    bd_sqlite *s = bd_xcalloc(1, sizeof *s);
    s->base.ops = &bd_sqlite_ops;
    int ret = 0;
    if (pthread_mutex_init(&s->mu, NULL) != 0 || pthread_cond_init(&s->durable_cv, NULL) != 0 ||
        pthread_cond_init(&s->delay_cv, NULL) != 0) {
        free(s);
        return bd_err_set(err, BD_EINTERNAL, NULL, "storage: pthread_mutex_init failed");
    }
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
    int rc = sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        ret = bd_err_set(err, BD_ESTORAGE, NULL, "storage: opening %s: %s", path,
                         s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
        goto out;
    }
    s->commit_delay_us = opts && opts->sync == BD_SYNC_FULL ? FULL_SYNC_COMMIT_DELAY_US : 0;
    ret = configure(s->db, opts, err);
    if (!ret)
        ret = bd_sqlite_migrate(s->db, &s->version, err);
    if (!ret)
        ret = prepare_all(s, err);
out:
    if (ret)
        destroy(s);
    else
        *out = &s->base;
    return ret;
}

void bd_sqlite_close(bd_store *store)
{
    bd_sqlite *s = (bd_sqlite *)store;
    if (held_by_me(s))
        bd_sqlite_rollback(&s->base);
    lock(s);
    if (s->batch_open)
        commit_batch(s);
    unlock(s);
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

/* The calling thread gives up the transaction it holds on s and the lock. */
static void release_tx(bd_sqlite *s)
{
    bd_sqlite **p = &held_list;
    while (*p != s)
        p = &(*p)->held_next;
    *p = s->held_next;
    s->held_next = NULL;
    s->in_tx = 0;
    unlock(s);
}

/* Runs one cached transaction-control statement; 0 or BD_ESTORAGE. */
static int run_control(bd_sqlite *s, enum bd_sql_stmt which, bd_err *err, const char *what)
{
    sqlite3_stmt *st = s->stmt[which];
    int ret = bd_sqlite_step_done(s, st, SQLITE_OK, err, what);
    bd_sqlite_done(st);
    return ret;
}

static void rollback_locked(bd_sqlite *s)
{
    bd_err err;
    if (!sqlite3_get_autocommit(s->db) && run_control(s, BD_SQL_ROLLBACK, &err, "rollback"))
        fprintf(stderr, "banditd: %s\n", err.message);
}

int bd_sqlite_begin(bd_store *store, bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    int ret = 0;
    if (held_by_me(s))
        return bd_err_set(err, BD_EINTERNAL, NULL, "storage: a transaction is already open on this thread");
    lock(s);
    if (s->poisoned) {
        ret = bd_err_set(err, BD_ESTORAGE, NULL, "storage: recovering from a failed commit; retry");
        goto out;
    }
    if (!s->batch_open) {
        if ((ret = run_control(s, BD_SQL_BEGIN, err, "begin")))
            goto out;
        s->batch_open = 1;
    }
    ret = run_control(s, BD_SQL_SAVEPOINT, err, "savepoint");
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

int bd_sqlite_release(bd_store *store, uint64_t *ticket, bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    if (!held_by_me(s))
        return bd_err_set(err, BD_EINTERNAL, NULL, "storage: release without a transaction on this thread");
    assert(s->in_tx && pthread_equal(s->owner, pthread_self()));
    int ret = run_control(s, BD_SQL_RELEASE, err, "release");
    if (ret) {
        bd_err ignored;
        (void)run_control(s, BD_SQL_ROLLBACK_TO, &ignored, "rollback to");
        (void)run_control(s, BD_SQL_RELEASE, &ignored, "release");
    }
    *ticket = s->batch_seq + 1; /* batch numbers start at 1; durable_seq 0 = none yet */
    release_tx(s);
    return ret;
}

/* Commits the open batch; s->mu held. Every waiter of the batch reads the
 * outcome from durable_seq and failed_seqs. */
static void commit_batch(bd_sqlite *s)
{
    bd_err err;
    uint64_t seq = s->batch_seq + 1;
    int ret = s->fail_next_commit ? bd_err_set(&err, BD_ESTORAGE, NULL, "storage: commit: disk full (test)")
                                  : run_control(s, BD_SQL_COMMIT, &err, "commit");
    s->fail_next_commit = 0;
    s->failed[seq % BD_SQLITE_OUTCOME_RING] = ret != 0;
    s->last_failed = ret != 0;
    if (ret) {
        fprintf(stderr, "banditd: %s; the batch is rolled back\n", err.message);
        rollback_locked(s);
        s->n_failed++;
        s->poisoned = 1;
    }
    s->batch_open = 0;
    s->batch_seq = seq;
    s->durable_seq = seq;
    pthread_cond_broadcast(&s->durable_cv);
}

int bd_sqlite_wait(bd_store *store, uint64_t ticket, bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    if (held_by_me(s))
        return bd_err_set(err, BD_EINTERNAL, NULL, "storage: wait while holding a transaction");
    lock(s);
    while (s->durable_seq < ticket) {
        if (s->committing) {
            pthread_cond_wait(&s->durable_cv, &s->mu);
            continue;
        }
        /* This waiter commits the batch, with whatever others released into
         * it while it was on its way here. */
        s->committing = 1;
        if (s->commit_delay_us > 0) {
            /* Hold the batch open a moment (mu released) so more requests
             * join it; nothing signals delay_cv, the wait only times out. */
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += s->commit_delay_us * 1000L;
            if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
            }
            while (pthread_cond_timedwait(&s->delay_cv, &s->mu, &until) == 0)
                ;
        }
        commit_batch(s);
        s->committing = 0;
    }
    int failed = s->durable_seq - ticket >= BD_SQLITE_OUTCOME_RING || s->failed[ticket % BD_SQLITE_OUTCOME_RING];
    unlock(s);
    return failed ? bd_err_set(err, BD_ESTORAGE, NULL, "storage: the commit failed; nothing was saved") : 0;
}

int bd_sqlite_commit(bd_store *store, bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    uint64_t ticket;
    int ret = bd_sqlite_release(&s->base, &ticket, err);
    return ret ? ret : bd_sqlite_wait(&s->base, ticket, err);
}

void bd_sqlite_rollback(bd_store *store)
{
    bd_sqlite *s = (bd_sqlite *)store;
    if (!held_by_me(s))
        return;
    assert(s->in_tx && pthread_equal(s->owner, pthread_self()));
    bd_err err;
    /* Undo this request only: the batch may hold other requests' work. */
    if (run_control(s, BD_SQL_ROLLBACK_TO, &err, "rollback to") ||
        run_control(s, BD_SQL_RELEASE, &err, "release"))
        fprintf(stderr, "banditd: %s\n", err.message);
    release_tx(s);
}

uint64_t bd_sqlite_failures(bd_store *store)
{
    bd_sqlite *s = (bd_sqlite *)store;
    return atomic_load(&s->n_failed); /* every request asks: no lock */
}

int bd_sqlite_writable(bd_store *store)
{
    bd_sqlite *s = (bd_sqlite *)store;
    lock(s);
    int ok = !s->poisoned && !s->last_failed;
    unlock(s);
    return ok;
}

int bd_sqlite_probe(bd_store *store, double now, bd_err *err)
{
    bd_sqlite *s = (bd_sqlite *)store;
    int ret = bd_sqlite_begin(&s->base, err);
    if (ret)
        return ret;
    sqlite3_stmt *st = s->stmt[BD_SQL_PROBE];
    int rc = SQLITE_OK;
    bd_sqlite_bind_double(st, 1, now, &rc);
    ret = bd_sqlite_step_done(s, st, rc, err, "probe write");
    bd_sqlite_done(st);
    if (ret) {
        bd_sqlite_rollback(&s->base);
        return ret;
    }
    return bd_sqlite_commit(&s->base, err);
}

void bd_sqlite_recovered(bd_store *store, uint64_t failures)
{
    bd_sqlite *s = (bd_sqlite *)store;
    lock(s);
    if (s->n_failed == failures)
        s->poisoned = 0;
    unlock(s);
}

uint64_t bd_sqlite_current_ticket(bd_store *store)
{
    bd_sqlite *s = (bd_sqlite *)store;
    lock(s);
    uint64_t t = s->batch_open ? s->batch_seq + 1 : s->batch_seq;
    unlock(s);
    return t;
}

void bd_sqlite_fail_next_commit(bd_store *store)
{
    bd_sqlite *s = (bd_sqlite *)store;
    lock(s);
    s->fail_next_commit = 1;
    unlock(s);
}

/* ---- scans ---- */

/* Reads up to want rows of the bound statement st into rows; *n receives how many. */
static int fill_batch(bd_sqlite *s, sqlite3_stmt *st, const bd_sqlite_rowtype *type, char *rows, int want, int *n,
                      int64_t *last_id, bd_err *err, const char *what)
{
    int ret = 0;
    *n = 0;
    while (*n < want) {
        ret = bd_sqlite_step_row(s, st, SQLITE_OK, err, what);
        if (ret <= 0)
            break;
        *last_id = sqlite3_column_int64(st, 0);
        ret = type->read(st, rows + (size_t)*n * type->size, err);
        if (ret)
            break;
        ++*n;
    }
    return ret;
}

/* One batch under the store lock: binds (after_id, want) and the caller's
 * key, reads up to want rows into rows; *last_id receives the last row's id. */
static int read_batch(bd_sqlite *s, enum bd_sql_stmt which, const bd_sqlite_rowtype *type,
                      int (*bind)(sqlite3_stmt *st, const void *key), const void *key, int64_t after_id, int want,
                      char *rows, int *n, int64_t *last_id, bd_err *err, const char *what)
{
    int locked = bd_sqlite_enter(s);
    sqlite3_stmt *st = s->stmt[which];
    int rc = SQLITE_OK, ret;
    bd_sqlite_bind_i64(st, 1, after_id, &rc);
    bd_sqlite_bind_i64(st, 2, want, &rc);
    if (rc == SQLITE_OK)
        rc = bind(st, key);
    if (rc != SQLITE_OK)
        ret = bd_sqlite_fail(s, rc, err, what);
    else
        ret = fill_batch(s, st, type, rows, want, n, last_id, err, what);
    bd_sqlite_done(st);
    bd_sqlite_leave(s, locked);
    return ret;
}

/* Hands the n rows read to call (outside the store lock) until one fails,
 * and clears every row; returns ret or call's first error. */
static int deliver(const bd_sqlite_rowtype *type, char *rows, int n, int ret,
                   int (*call)(const void *row, void *cb), void *cb)
{
    for (int i = 0; i < n; i++) {
        void *row = rows + (size_t)i * type->size;
        if (!ret)
            ret = call(row, cb);
        type->clear(row);
    }
    return ret;
}

int bd_sqlite_scan(bd_sqlite *s, enum bd_sql_stmt which, const bd_sqlite_rowtype *type,
                   int (*bind)(sqlite3_stmt *st, const void *key), const void *key, int64_t after_id,
                   int64_t limit, int (*call)(const void *row, void *cb), void *cb, bd_err *err,
                   const char *what)
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

int bd_sqlite_scan_once(bd_sqlite *s, enum bd_sql_stmt which, const bd_sqlite_rowtype *type,
                        int (*bind)(sqlite3_stmt *st, const void *key), const void *key, int64_t limit,
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

const bd_store_ops bd_sqlite_ops = {
    .name = "sqlite",
    .close = bd_sqlite_close,
    .schema_version = bd_sqlite_schema_version,
    .begin = bd_sqlite_begin,
    .commit = bd_sqlite_commit,
    .rollback = bd_sqlite_rollback,
    .release = bd_sqlite_release,
    .wait = bd_sqlite_wait,
    .failures = bd_sqlite_failures,
    .writable = bd_sqlite_writable,
    .probe = bd_sqlite_probe,
    .recovered = bd_sqlite_recovered,
    .current_ticket = bd_sqlite_current_ticket,
    .fail_next_commit = bd_sqlite_fail_next_commit,
    .user_create = bd_sqlite_user_create,
    .user_by_name = bd_sqlite_user_by_name,
    .user_by_id = bd_sqlite_user_by_id,
    .user_count = bd_sqlite_user_count,
    .user_set_limits = bd_sqlite_user_set_limits,
    .user_usage = bd_sqlite_user_usage,
    .token_add = bd_sqlite_token_add,
    .token_get = bd_sqlite_token_get,
    .token_revoke = bd_sqlite_token_revoke,
    .study_insert = bd_sqlite_study_insert,
    .study_get = bd_sqlite_study_get,
    .study_each = bd_sqlite_study_each,
    .study_index_each = bd_sqlite_study_index_each,
    .study_page = bd_sqlite_study_page,
    .study_delete = bd_sqlite_study_delete,
    .study_set_paused = bd_sqlite_study_set_paused,
    .study_set_metadata = bd_sqlite_study_set_metadata,
    .trial_counts_each = bd_sqlite_trial_counts_each,
    .trial_insert = bd_sqlite_trial_insert,
    .trial_get = bd_sqlite_trial_get,
    .trial_finish = bd_sqlite_trial_finish,
    .trial_set_lease = bd_sqlite_trial_set_lease,
    .trial_set_user_attrs = bd_sqlite_trial_set_user_attrs,
    .trial_each = bd_sqlite_trial_each,
    .trial_each_best = bd_sqlite_trial_each_best,
    .trial_each_with_steps = bd_sqlite_trial_each_with_steps,
    .trial_each_expired = bd_sqlite_trial_each_expired,
    .enqueue_push = bd_sqlite_enqueue_push,
    .enqueue_pop = bd_sqlite_enqueue_pop,
    .enqueue_each = bd_sqlite_enqueue_each,
    .event_append = bd_sqlite_event_append,
    .next_ids = bd_sqlite_next_ids,
    .event_each = bd_sqlite_event_each,
    .event_each_of_trial = bd_sqlite_event_each_of_trial,
    .idem_get = bd_sqlite_idem_get,
    .idem_put = bd_sqlite_idem_put,
    .idem_prune = bd_sqlite_idem_prune,
};
