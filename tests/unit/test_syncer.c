/* The WAL's sync thread (storage/sqlite_syncer.c) and --sync full's
 * deferred commit syncs through the store: a ticket is answered only once a
 * sync that began after it ended; a failed sync fails its ticket and every
 * later request until the store healed; with BD_SYNC_NORMAL nothing is
 * deferred. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/sqlite_syncer.h"
#include "storage/sqlite_walbuf.h"
#include "storage/store.h"

static char dir[64];

static void setup(void)
{
    strcpy(dir, "/tmp/bd-syncer-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
}

TestSuite(syncer, .init = setup, .fini = teardown);

static atomic_int notified;

static void count_notify(void *arg)
{
    cr_assert_eq(arg, &notified);
    atomic_fetch_add(&notified, 1);
}

Test(syncer, tickets_end_once_synced_and_syncs_cover_earlier_tickets)
{
    char path[128];
    snprintf(path, sizeof path, "%s/wal", dir);
    int fd = open(path, O_RDWR | O_CREAT, 0600);
    cr_assert_geq(fd, 0);
    bd_err err = {0};
    bd_syncer *s = bd_syncer_start(path, &err);
    cr_assert_not_null(s, "%s", err.message);
    atomic_store(&notified, 0);
    bd_syncer_on_synced(s, count_notify, &notified);

    cr_assert_eq(write(fd, "frames", 6), 6);
    uint64_t t1 = bd_syncer_request(s);
    cr_assert_eq(t1, 1);
    cr_assert_eq(bd_syncer_requested(s), 1);
    cr_assert_eq(bd_syncer_wait(s, t1, &err), 1, "%s", err.message);
    cr_assert_eq(bd_syncer_poll(s, t1, &err), 1);
    cr_assert_geq(atomic_load(&notified), 1, "the loop's wake-up is called after a sync");

    uint64_t t2 = bd_syncer_request(s), t3 = bd_syncer_request(s);
    cr_assert_eq(t2, 2);
    cr_assert_eq(t3, 3);
    cr_assert_eq(bd_syncer_wait(s, t3, &err), 1);
    cr_assert_eq(bd_syncer_poll(s, t2, &err), 1, "a sync of ticket 3 covers ticket 2");
    cr_assert_eq(bd_syncer_failed(s), 0);

    /* A sync made by the caller (a checkpoint's) covers what was requested before it. */
    bd_syncer_covered(s, bd_syncer_requested(s));
    cr_assert_eq(bd_syncer_poll(s, t3, &err), 1);

    bd_syncer_on_synced(s, NULL, NULL);
    bd_syncer_stop(s);
    close(fd);
}

/* fdatasync on a FIFO fails (EINVAL): a sync that fails for real. */
Test(syncer, a_failed_sync_fails_its_ticket_and_every_request_until_healed)
{
    char path[128];
    snprintf(path, sizeof path, "%s/fifo", dir);
    cr_assert_eq(mkfifo(path, 0600), 0);
    bd_err err = {0};
    bd_syncer *s = bd_syncer_start(path, &err);
    cr_assert_not_null(s, "%s", err.message);

    uint64_t t1 = bd_syncer_request(s);
    cr_assert_eq(bd_syncer_wait(s, t1, &err), BD_ESTORAGE);
    cr_assert(strstr(err.message, "could not be synced"), "%s", err.message);
    cr_assert_eq(bd_syncer_failed(s), EINVAL);
    cr_assert_eq(bd_syncer_poll(s, t1, &err), BD_ESTORAGE);
    cr_assert_eq(bd_syncer_request(s), 0, "no new ticket (no commit) while the failure lasts");
    bd_syncer_covered(s, t1);
    cr_assert_eq(bd_syncer_poll(s, t1, &err), BD_ESTORAGE, "a later sync of the same file proves nothing");

    /* The store's checkpoint rewrote the WAL into the synced database. */
    bd_syncer_healed(s);
    cr_assert_eq(bd_syncer_failed(s), 0);
    cr_assert_eq(bd_syncer_poll(s, t1, &err), 1);
    uint64_t t2 = bd_syncer_request(s);
    cr_assert_eq(t2, 2, "tickets again once healed");
    cr_assert_eq(bd_syncer_wait(s, t2, &err), BD_ESTORAGE, "and this FIFO fails again");
    bd_syncer_stop(s);
}

Test(syncer, start_fails_cleanly_without_the_file)
{
    char path[128];
    snprintf(path, sizeof path, "%s/missing", dir);
    bd_err err = {0};
    cr_assert_null(bd_syncer_start(path, &err));
    cr_assert_eq(err.code, BD_ESTORAGE);
}

/* One committed write through the store, and the sync its answer waits for. */
static uint64_t commit_one(bd_store *s, const char *user)
{
    bd_err err = {0};
    int64_t id;
    uint64_t ticket, sync = 0;
    cr_assert_eq(bd_store_begin(s, &err), 0, "%s", err.message);
    cr_assert_eq(bd_store_user_create(s, user, 0, 1.0, &id, &err), 0, "%s", err.message);
    cr_assert_eq(bd_store_release(s, &ticket, &err), 0, "%s", err.message);
    cr_assert_eq(bd_store_wait_committed(s, ticket, &sync, &err), 0, "%s", err.message);
    return sync;
}

Test(syncer, store_defers_commit_syncs_with_sync_full_only)
{
    char path[128];
    snprintf(path, sizeof path, "%s/bd.db", dir);
    bd_err err = {0};
    bd_store *s = NULL;
    bd_store_opts full = {.sync = BD_SYNC_FULL};
    cr_assert_eq(bd_store_open(path, &full, &s, &err), 0, "%s", err.message);
    uint64_t sync = commit_one(s, "alice");
    cr_assert_gt(sync, 0, "the commit's sync went to the sync thread");
    cr_assert_eq(bd_store_sync_poll(s, sync, 1, &err), 1, "%s", err.message);
    cr_assert_eq(bd_store_sync_poll(s, sync, 0, &err), 1);
    uint64_t later = commit_one(s, "bob");
    cr_assert_gt(later, sync);
    cr_assert_eq(bd_store_wait(s, bd_store_current_ticket(s), &err), 0, "%s", err.message);
    cr_assert_eq(bd_store_sync_poll(s, later, 0, &err), 1, "bd_store_wait returns once synced");
    bd_store_close(s);

    bd_store_opts normal = {.sync = BD_SYNC_NORMAL};
    cr_assert_eq(bd_store_open(path, &normal, &s, &err), 0, "%s", err.message);
    bd_user u;
    cr_assert_eq(bd_store_user_by_name(s, "bob", &u, &err), 0, "%s", err.message);
    cr_assert_eq(commit_one(s, "carol"), 0, "synchronous=NORMAL syncs no commit");
    bd_store_close(s);
}

static void exec(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    cr_assert_eq(rc, SQLITE_OK, "%s: %s", sql, msg ? msg : "");
}

/* What the WAL buffer relies on to tell the syncs apart: with synchronous =
 * FULL and checkpoint_fullfsync a commit's sync is left to the syncer, a
 * checkpoint's is made at once. A syncer on a FIFO fails every sync, so a
 * commit fails once it has, and a checkpoint still succeeds: its syncs never
 * went to the syncer. */
Test(syncer, commits_defer_their_sync_and_checkpoints_do_not)
{
    char path[128], fifo[128];
    snprintf(path, sizeof path, "%s/db", dir);
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    sqlite3 *db;
    cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, bd_walbuf_vfs()),
                 SQLITE_OK);
    exec(db, "PRAGMA locking_mode = EXCLUSIVE; PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;"
             "PRAGMA checkpoint_fullfsync = ON; CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)");
    bd_err err = {0};
    bd_syncer *s = bd_syncer_start(fifo, &err);
    cr_assert_not_null(s, "%s", err.message);
    cr_assert_eq(bd_walbuf_defer_syncs(db, s), 1);

    exec(db, "INSERT INTO t VALUES (1, 'deferred')");
    uint64_t ticket = bd_walbuf_take_ticket(db);
    cr_assert_eq(ticket, 1, "the commit requested its sync from the syncer");
    cr_assert_eq(bd_walbuf_take_ticket(db), 0, "a ticket is taken once");
    cr_assert_eq(bd_syncer_wait(s, ticket, &err), BD_ESTORAGE);

    char *msg = NULL;
    cr_assert_neq(sqlite3_exec(db, "INSERT INTO t VALUES (2, 'refused')", NULL, NULL, &msg), SQLITE_OK,
                  "a commit after a failed sync must fail");
    sqlite3_free(msg);
    int log = -1, done = -1;
    cr_assert_eq(sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_TRUNCATE, &log, &done), SQLITE_OK,
                 "the checkpoint's syncs are made at once: %s", sqlite3_errmsg(db));
    cr_assert_eq(log, 0, "truncated");

    cr_assert_eq(bd_walbuf_defer_syncs(db, NULL), 1);
    bd_syncer_stop(s);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db, "SELECT count(*) FROM t", -1, &st, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_assert_eq(sqlite3_column_int(st, 0), 1, "the refused commit left nothing");
    sqlite3_finalize(st);
    cr_assert_eq(sqlite3_close(db), SQLITE_OK);
}
