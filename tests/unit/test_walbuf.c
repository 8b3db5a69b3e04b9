/* The WAL buffer (storage/sqlite_walbuf.c): a commit's frames are on the
 * file by the time COMMIT returns, so a process that dies right after it
 * loses nothing; frames are held (not written) inside a transaction. The
 * "crash" is a copy of the database and its WAL taken after each COMMIT,
 * opened with SQLite's default VFS. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "storage/sqlite_walbuf.h"

static char dir[64];

static void setup(void)
{
    strcpy(dir, "/tmp/bd-walbuf-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
}

TestSuite(walbuf, .init = setup, .fini = teardown);

static void exec(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    cr_assert_eq(rc, SQLITE_OK, "%s: %s", sql, msg ? msg : "");
}

static void copy_file(const char *from, const char *to)
{
    int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert(in >= 0 && out >= 0, "%s -> %s", from, to);
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0)
        cr_assert_eq(write(out, buf, (size_t)n), n);
    close(in);
    close(out);
}

/* Rows of t in a copy of the files as they are on disk now. */
static long rows_after_crash(const char *db_path)
{
    char snap[128], from_wal[160], to_wal[160];
    snprintf(snap, sizeof snap, "%s/snap.db", dir);
    snprintf(from_wal, sizeof from_wal, "%s-wal", db_path);
    snprintf(to_wal, sizeof to_wal, "%s-wal", snap);
    unlink(to_wal);
    copy_file(db_path, snap);
    copy_file(from_wal, to_wal);
    sqlite3 *db;
    cr_assert_eq(sqlite3_open_v2(snap, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db, "SELECT count(*) FROM t", -1, &st, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    long n = (long)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

static sqlite3 *open_db(const char *path)
{
    const char *vfs = bd_walbuf_vfs();
    cr_assert_not_null(vfs);
    sqlite3 *db;
    cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, vfs), SQLITE_OK);
    exec(db, "PRAGMA locking_mode = EXCLUSIVE; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;"
             "PRAGMA wal_autocheckpoint = 0; CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB)");
    return db;
}

Test(walbuf, every_commit_is_on_the_file_when_commit_returns)
{
    char path[96];
    snprintf(path, sizeof path, "%s/a.db", dir);
    sqlite3 *db = open_db(path);
    for (int batch = 1; batch <= 30; batch++) {
        exec(db, "BEGIN IMMEDIATE");
        for (int i = 0; i < 25; i++) /* a request's savepoint, as the store makes them */
            exec(db, "SAVEPOINT r; INSERT INTO t (v) VALUES (randomblob(200)); RELEASE r");
        exec(db, "SAVEPOINT r; INSERT INTO t (v) VALUES (randomblob(200)); ROLLBACK TO r; RELEASE r");
        exec(db, "COMMIT");
        long held;
        cr_assert_eq(bd_walbuf_flush(db, &held), SQLITE_OK);
        cr_assert_eq(held, 0, "batch %d: %ld bytes still held after COMMIT", batch, held);
        cr_assert_eq(rows_after_crash(path), 25L * batch, "batch %d", batch);
    }
    sqlite3_close(db);
}

Test(walbuf, a_transaction_larger_than_the_cache_is_held_then_written_whole)
{
    char path[96];
    snprintf(path, sizeof path, "%s/b.db", dir);
    sqlite3 *db = open_db(path);
    exec(db, "PRAGMA cache_size = 20"); /* the pages spill to the WAL before the commit */
    exec(db, "BEGIN IMMEDIATE; WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000) "
             "INSERT INTO t (v) SELECT randomblob(3000) FROM n");
    long held;
    cr_assert_eq(bd_walbuf_flush(db, &held), SQLITE_OK);
    cr_expect_gt(held, 0, "spilled frames are held, not written one by one (is the VFS in use?)");
    /* 6 MB: over the 4 MB the buffer holds, so it is written in pieces too */
    exec(db, "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000) "
             "INSERT INTO t (v) SELECT randomblob(3000) FROM n; COMMIT");
    /* SQLite rewrote the checksums of the spilled frames after the commit
     * frame: those writes went through, nothing is left held */
    cr_assert_eq(bd_walbuf_flush(db, &held), SQLITE_OK);
    cr_expect_eq(held, 0);
    cr_assert_eq(rows_after_crash(path), 4000);
    exec(db, "BEGIN IMMEDIATE; UPDATE t SET v = randomblob(100) WHERE id % 3 = 0; COMMIT");
    exec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
    exec(db, "BEGIN IMMEDIATE; DELETE FROM t WHERE id > 3000; COMMIT");
    cr_assert_eq(rows_after_crash(path), 3000);
    sqlite3_close(db);
}

Test(walbuf, a_database_not_in_wal_mode_passes_through)
{
    char path[96];
    snprintf(path, sizeof path, "%s/c.db", dir);
    sqlite3 *db;
    cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, bd_walbuf_vfs()),
                 SQLITE_OK);
    exec(db, "CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB); INSERT INTO t (v) VALUES (x'01')");
    long held = -1;
    cr_expect_eq(bd_walbuf_flush(db, &held), SQLITE_OK);
    cr_expect_eq(held, 0);
    sqlite3_close(db);
}
