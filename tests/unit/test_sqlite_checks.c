/* Migration 1's IN-list CHECK constraints, rewritten as OR chains at open
 * (storage/sqlite_schema.c, rewrite_in_checks): an insert no longer builds
 * an ephemeral index of the names, the constraints still refuse what they
 * refused, the rewrite happens once, and a file of an older schema is
 * migrated and rewritten. */
#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "storage/store.h"

static char dir[64], path[128];

static void setup(void)
{
    strcpy(dir, "/tmp/bd-checks-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/bd.db", dir);
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
}

TestSuite(sqlite_checks, .init = setup, .fini = teardown);

static void open_and_close_store(void)
{
    bd_store_opts opts = {.sync = BD_SYNC_NORMAL};
    bd_store *s = NULL;
    bd_err err = {0};
    cr_assert_eq(bd_store_open(path, &opts, &s, &err), 0, "%s", err.message);
    bd_store_close(s);
}

static int ephemeral_ops(sqlite3 *db, const char *sql)
{
    char explain[512];
    snprintf(explain, sizeof explain, "EXPLAIN %s", sql);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db, explain, -1, &st, NULL), SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
    int n = 0;
    while (sqlite3_step(st) == SQLITE_ROW)
        n += strcmp((const char *)sqlite3_column_text(st, 1), "OpenEphemeral") == 0;
    sqlite3_finalize(st);
    return n;
}

static int query_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s", sql);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s", sql);
    int v = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return v;
}

static int exec_rc(sqlite3 *db, const char *sql)
{
    return sqlite3_exec(db, sql, NULL, NULL, NULL);
}

#define TRIAL_INSERT                                                                                          \
    "INSERT INTO trials (study_id, config_id, config, budget, state, created_at, lease_expires_at) "          \
    "VALUES (1, 0, '{}', 1, '%s', 0, 0)"
#define EVENT_INSERT "INSERT INTO events (study_id, type, created_at) VALUES (1, '%s', 0)"

/* The file at path, rewritten: no ephemeral index, the same refusals. */
static void check_rewritten(void)
{
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    char sql[400];
    snprintf(sql, sizeof sql, TRIAL_INSERT, "running");
    cr_expect_eq(ephemeral_ops(db, sql), 0, "trials' state check builds no index");
    cr_expect_eq(ephemeral_ops(db, "UPDATE trials SET state = ? WHERE id = 1"), 0);
    snprintf(sql, sizeof sql, EVENT_INSERT, "measurement");
    cr_expect_eq(ephemeral_ops(db, sql), 0, "events' type check builds no index");

    cr_assert_eq(exec_rc(db, "PRAGMA foreign_keys = OFF; BEGIN"), SQLITE_OK);
    const char *states[] = {"running", "completed", "stopped", "failed", "expired"};
    for (int i = 0; i < 5; i++) {
        snprintf(sql, sizeof sql, TRIAL_INSERT, states[i]);
        cr_expect_eq(exec_rc(db, sql), SQLITE_OK, "state %s", states[i]);
    }
    snprintf(sql, sizeof sql, TRIAL_INSERT, "paused");
    cr_expect_eq(exec_rc(db, sql), SQLITE_CONSTRAINT, "an unknown state is refused");
    const char *types[] = {"created", "measurement", "completed", "failed", "expired", "stopped"};
    for (int i = 0; i < 6; i++) {
        snprintf(sql, sizeof sql, EVENT_INSERT, types[i]);
        cr_expect_eq(exec_rc(db, sql), SQLITE_OK, "type %s", types[i]);
    }
    snprintf(sql, sizeof sql, EVENT_INSERT, "Created");
    cr_expect_eq(exec_rc(db, sql), SQLITE_CONSTRAINT, "an unknown type is refused");
    cr_assert_eq(exec_rc(db, "ROLLBACK"), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_expect_str_eq((const char *)sqlite3_column_text(st, 0), "ok");
    sqlite3_finalize(st);
    cr_assert_eq(sqlite3_close(db), SQLITE_OK);
}

Test(sqlite_checks, a_new_database_checks_names_without_an_ephemeral_index)
{
    open_and_close_store();
    check_rewritten();
}

Test(sqlite_checks, the_rewrite_happens_once)
{
    open_and_close_store();
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    int cookie = query_int(db, "PRAGMA schema_version");
    cr_assert_eq(sqlite3_close(db), SQLITE_OK);
    open_and_close_store();
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    cr_expect_eq(query_int(db, "PRAGMA schema_version"), cookie, "a second open edits nothing");
    cr_assert_eq(sqlite3_close(db), SQLITE_OK);
}

Test(sqlite_checks, a_schema_3_file_is_migrated_and_rewritten)
{
    const char *fixtures = getenv("BD_FIXTURES") ? getenv("BD_FIXTURES") : "tests/fixtures";
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cp '%s/schema3/banditd.db' '%s'", fixtures, path);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    char sql[400];
    snprintf(sql, sizeof sql, EVENT_INSERT, "measurement");
    cr_assert_eq(ephemeral_ops(db, sql), 1, "the fixture has migration 1's IN list");
    cr_assert_eq(sqlite3_close(db), SQLITE_OK);
    open_and_close_store();
    check_rewritten();
}
