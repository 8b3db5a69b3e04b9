/* The sub-journal's memory front (storage/sqlite_subjournal.c): a savepoint
 * rolled back gets every page back whether its journal stayed in memory or
 * reached the temporary file; a journal within the front does not even
 * create the file (SQLite keeps the sub-journal open for the connection's
 * life under locking_mode = EXCLUSIVE, what the daemon uses). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/sqlite_subjournal.h"
#include "storage/sqlite_walbuf.h"

static char dir[64];

static void setup(void)
{
    strcpy(dir, "/tmp/bd-subjournal-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
}

TestSuite(subjournal, .init = setup, .fini = teardown);

static void exec(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    cr_assert_eq(rc, SQLITE_OK, "%s: %s", sql, msg ? msg : "");
}

static long long query(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s", sql);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s", sql);
    long long v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* rows rows of 1000 bytes each, n = 1 and v all zeros, committed. */
static sqlite3 *open_db(int rows)
{
    char path[128], sql[160];
    snprintf(path, sizeof path, "%s/db", dir);
    sqlite3 *db;
    cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, bd_walbuf_vfs()),
                 SQLITE_OK);
    exec(db, "PRAGMA locking_mode = EXCLUSIVE; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;"
             "CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER, v BLOB)");
    snprintf(sql, sizeof sql,
             "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < %d) "
             "INSERT INTO t SELECT i, 1, zeroblob(1000) FROM s",
             rows);
    exec(db, sql);
    return db;
}

/* Bytes on the disk of the process's open SQLite temporary files (the
 * sub-journal is one, unlinked at once: "etilqs_... (deleted)"); -1 when
 * there is none. */
static long long temp_file_bytes(void)
{
    DIR *d = opendir("/proc/self/fd");
    cr_assert_not_null(d);
    long long total = -1;
    struct dirent *e;
    while ((e = readdir(d))) {
        char link[300], target[512];
        snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n <= 0)
            continue;
        target[n] = '\0';
        struct stat st;
        if (strstr(target, "etilqs_") && stat(link, &st) == 0)
            total = (total < 0 ? 0 : total) + (long long)st.st_size;
    }
    closedir(d);
    return total;
}

/* Changes every row inside a savepoint, rolls it back, checks the rows. */
static void change_and_roll_back(sqlite3 *db, int rows)
{
    exec(db, "BEGIN IMMEDIATE; SAVEPOINT request; UPDATE t SET n = n + 1, v = randomblob(1000)");
    cr_assert_eq(query(db, "SELECT sum(n) FROM t"), 2LL * rows);
    exec(db, "ROLLBACK TO request; RELEASE request; COMMIT");
    cr_assert_eq(query(db, "SELECT sum(n) FROM t"), rows);
    cr_assert_eq(query(db, "SELECT count(*) FROM t WHERE v = zeroblob(1000)"), rows);
}

Test(subjournal, a_journal_within_the_front_rolls_back_and_writes_nothing)
{
    int rows = 150; /* ~40 pages journaled: past SQLite's 64 KiB, within the front */
    sqlite3 *db = open_db(rows);
    change_and_roll_back(db, rows);
    cr_assert_eq(temp_file_bytes(), -1, "a temporary file was made for a journal within the front");
    change_and_roll_back(db, rows); /* the sub-journal is still open: a second savepoint uses it */
    cr_assert_eq(temp_file_bytes(), -1);
    /* Released and committed, the change stays. */
    exec(db, "BEGIN IMMEDIATE; SAVEPOINT request; UPDATE t SET n = n + 1; RELEASE request; COMMIT");
    cr_expect_eq(query(db, "SELECT sum(n) FROM t"), 2LL * rows);
    sqlite3_close(db);
}

Test(subjournal, a_journal_beyond_the_front_reaches_the_file_and_rolls_back)
{
    int rows = 2 * BD_SUBJOURNAL_FRONT / 1000; /* ~2 MiB journaled */
    sqlite3 *db = open_db(rows);
    change_and_roll_back(db, rows);
    cr_assert_gt(temp_file_bytes(), BD_SUBJOURNAL_FRONT / 2, "nothing past the front reached the file");
    /* After it, a small savepoint is served from the front again, and right. */
    exec(db, "BEGIN IMMEDIATE; SAVEPOINT request; UPDATE t SET n = 5 WHERE id <= 10");
    exec(db, "ROLLBACK TO request; RELEASE request; COMMIT");
    cr_expect_eq(query(db, "SELECT sum(n) FROM t"), rows);
    sqlite3_close(db);
}

/* The file itself, through the VFS: bytes across the front's edge come
 * back as written, a read past the end is a short read of zeros. */
Test(subjournal, bytes_across_the_front_edge_read_back_and_past_the_end_are_zeros)
{
    sqlite3_vfs *vfs = sqlite3_vfs_find(bd_walbuf_vfs());
    cr_assert_not_null(vfs);
    sqlite3_file *file = calloc(1, (size_t)vfs->szOsFile);
    cr_assert_not_null(file);
    int flags = SQLITE_OPEN_SUBJOURNAL | SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_EXCLUSIVE |
                SQLITE_OPEN_DELETEONCLOSE;
    cr_assert_eq(vfs->xOpen(vfs, NULL, file, flags, NULL), SQLITE_OK);
    unsigned char pattern[4100], back[4100];
    for (size_t i = 0; i < sizeof pattern; i++)
        pattern[i] = (unsigned char)(i * 7 + 1);
    sqlite3_int64 at = BD_SUBJOURNAL_FRONT - 1000; /* 1,000 bytes in memory, 3,100 on the file */
    cr_assert_eq(file->pMethods->xWrite(file, pattern, (int)sizeof pattern, at), SQLITE_OK);
    cr_assert_eq(file->pMethods->xWrite(file, pattern, 100, 0), SQLITE_OK);
    cr_assert_eq(file->pMethods->xRead(file, back, (int)sizeof back, at), SQLITE_OK);
    cr_assert_arr_eq(back, pattern, sizeof pattern);
    cr_assert_eq(file->pMethods->xRead(file, back, 100, 0), SQLITE_OK);
    cr_assert_arr_eq(back, pattern, 100);
    sqlite3_int64 size = 0;
    cr_assert_eq(file->pMethods->xFileSize(file, &size), SQLITE_OK);
    cr_assert_eq(size, at + (sqlite3_int64)sizeof pattern);
    /* Truncated to 50 bytes: what lay beyond reads as zeros, short. */
    cr_assert_eq(file->pMethods->xTruncate(file, 50), SQLITE_OK);
    memset(back, 0xff, sizeof back);
    cr_assert_eq(file->pMethods->xRead(file, back, 100, 0), SQLITE_IOERR_SHORT_READ);
    cr_assert_arr_eq(back, pattern, 50);
    for (int i = 50; i < 100; i++)
        cr_assert_eq(back[i], 0, "byte %d", i);
    cr_assert_eq(file->pMethods->xClose(file), SQLITE_OK);
    free(file);
}
