/* test_store.c: the backends of storage/store.h, through the interface
 * only: schema versioning, every table's calls, NAN round trips, transactions,
 * callbacks that call back into the store, and several threads committing.
 *
 * STORE_TEST cases run on SQLite and, when BD_TEST_PG_URL names a PostgreSQL
 * database (postgresql://...), on PostgreSQL too: each such run opens a
 * schema of its own in that database (bd_t_<pid>_<n>, created by the store;
 * drop them with the throwaway cluster). Without BD_TEST_PG_URL the
 * PostgreSQL runs are not registered. Test(...) cases are SQLite's alone
 * (file formats, WAL, migrations of old files). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "storage/store.h"

/* ---- helpers ---- */

enum backend { BACKEND_SQLITE, BACKEND_PG };

/* The backend of the running case (STORE_TEST sets it; SQLite otherwise). */
static enum backend g_backend = BACKEND_SQLITE;

/* The backends a STORE_TEST runs on: PostgreSQL only with BD_TEST_PG_URL. */
static struct criterion_test_params backends(void)
{
    static enum backend all[] = {BACKEND_SQLITE, BACKEND_PG};
    const char *url = getenv("BD_TEST_PG_URL");
    return cr_make_param_array(enum backend, all, url && *url ? 2 : 1);
}

/* A case run once per backend: the body is written as for Test(). */
#define STORE_TEST(name)                                                               \
    static void name##_body(void);                                                     \
    ParameterizedTestParameters(store, name)                                           \
    {                                                                                  \
        return backends();                                                             \
    }                                                                                  \
    ParameterizedTest(enum backend *backend, store, name, .timeout = 60)               \
    {                                                                                  \
        g_backend = *backend;                                                          \
        name##_body();                                                                 \
    }                                                                                  \
    static void name##_body(void)

/* Where a case's database lives: a file in a new directory (SQLite), or a
 * new schema in BD_TEST_PG_URL's database (PostgreSQL), reopened by path. */
struct tmpdb {
    char dir[64];
    char path[1024];
};

static void tmpdb_make(struct tmpdb *t)
{
    static int n;
    if (g_backend == BACKEND_PG) {
        const char *url = getenv("BD_TEST_PG_URL");
        cr_assert(url && strlen(url) < 900, "BD_TEST_PG_URL is unset or too long");
        t->dir[0] = 0;
        snprintf(t->path, sizeof t->path, "%s%coptions=-csearch_path%%3Dbd_t_%ld_%ld_%d", url,
                 strchr(url, '?') ? '&' : '?', (long)getpid(), (long)time(NULL), n++);
        return;
    }
    snprintf(t->dir, sizeof t->dir, "%s", "/tmp/bd_test_store_XXXXXX");
    cr_assert_not_null(mkdtemp(t->dir));
    snprintf(t->path, sizeof t->path, "%s/test.db", t->dir);
}

static void tmpdb_remove(struct tmpdb *t)
{
    if (!t->dir[0])
        return; /* a PostgreSQL schema: left for the cluster's owner */
    char p[1100];
    const char *suffixes[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s%s", t->path, suffixes[i]);
        unlink(p);
    }
    rmdir(t->dir);
}

static bd_store *open_at(const char *path, bd_sync_mode sync)
{
    bd_store_opts opts = {.sync = sync};
    bd_store *s = NULL;
    bd_err err = {0};
    int rc = bd_store_open(path, &opts, &s, &err);
    cr_assert_eq(rc, 0, "open %s: %s", path, err.message);
    cr_assert_not_null(s);
    return s;
}

/* A new, empty database of the case's backend. */
static bd_store *open_mem(void)
{
    if (g_backend == BACKEND_PG) {
        struct tmpdb t;
        tmpdb_make(&t);
        return open_at(t.path, BD_SYNC_NORMAL);
    }
    return open_at(":memory:", BD_SYNC_NORMAL);
}

static int64_t make_user(bd_store *s, const char *name)
{
    int64_t id = 0;
    bd_err err = {0};
    cr_assert_eq(bd_store_user_create(s, name, 0, 100.0, &id, &err), 0, "%s", err.message);
    return id;
}

static int64_t make_study(bd_store *s, int64_t user_id, const char *name)
{
    bd_study_row row = {.user_id = user_id, .name = (char *)name, .definition = "{\"k\":1}", .created_at = 5.0};
    int64_t id = 0;
    bd_err err = {0};
    cr_assert_eq(bd_store_study_insert(s, &row, &id, &err), 0, "%s", err.message);
    return id;
}

static int64_t make_trial(bd_store *s, int64_t study_id, double lease)
{
    bd_trial_row row = {.study_id = study_id, .config = "{\"x\":0.5}", .budget = 3, .state = BD_TRIAL_RUNNING,
                        .created_at = 10.0, .lease_expires_at = lease};
    int64_t id = 0;
    bd_err err = {0};
    cr_assert_eq(bd_store_trial_insert(s, &row, &id, &err), 0, "%s", err.message);
    return id;
}

static void finish_trial(bd_store *s, int64_t id, bd_trial_state state, double value)
{
    bd_trial_row row = {.id = id, .state = state, .finished_at = 20.0, .has_value = 1, .value = value};
    bd_err err = {0};
    cr_assert_eq(bd_store_trial_finish(s, &row, &err), 0, "%s", err.message);
}

static int64_t append_event(bd_store *s, int64_t study_id, int64_t trial_id, bd_event_type type, double value)
{
    bd_event_row row = {.study_id = study_id, .trial_id = trial_id, .type = type, .step = 1, .has_value = 1,
                        .value = value, .elapsed_seconds = NAN, .created_at = 30.0};
    int64_t id = 0;
    bd_err err = {0};
    cr_assert_eq(bd_store_event_append(s, &row, &id, &err), 0, "%s", err.message);
    return id;
}

/* Collects ids from any each-call. */
struct ids {
    int64_t v[1024];
    int n;
    int stop_at; /* return 7 after this many rows; 0 = never */
};

static int push_id(struct ids *c, int64_t id)
{
    cr_assert_lt(c->n, 1024);
    c->v[c->n++] = id;
    return c->stop_at && c->n == c->stop_at ? 7 : 0;
}

static int collect_study(const bd_study_row *row, void *arg)
{
    return push_id(arg, row->id);
}

static int collect_trial(const bd_trial_row *row, void *arg)
{
    return push_id(arg, row->id);
}

static int collect_event(const bd_event_row *row, void *arg)
{
    return push_id(arg, row->id);
}

/* Collects each event's values text ("(none)" for NULL) into a {n, texts[][64]}. */
static int collect_values(const bd_event_row *row, void *arg)
{
    struct {
        int n;
        char texts[2][64];
    } *c = arg;
    cr_assert_lt(c->n, 2);
    snprintf(c->texts[c->n++], sizeof c->texts[0], "%s", row->values ? row->values : "(none)");
    return 0;
}

static int count_trials(bd_store *s, int64_t study_id, int state)
{
    struct ids c = {0};
    bd_err err = {0};
    cr_assert_eq(bd_store_trial_each(s, study_id, state, -1, 0, 0, collect_trial, &c, &err), 0, "%s", err.message);
    return c.n;
}

static int count_events(bd_store *s, int64_t study_id)
{
    struct ids c = {0};
    bd_err err = {0};
    cr_assert_eq(bd_store_event_each(s, study_id, collect_event, &c, &err), 0, "%s", err.message);
    return c.n;
}

static off_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? st.st_size : -1;
}

/* Overwrites the big-endian 32-bit field of the SQLite header at offset. */
static void poke_header(const char *path, long offset, uint32_t v)
{
    unsigned char b[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16), (unsigned char)(v >> 8),
                          (unsigned char)v};
    FILE *f = fopen(path, "r+b");
    cr_assert_not_null(f);
    cr_assert_eq(fseek(f, offset, SEEK_SET), 0);
    cr_assert_eq(fwrite(b, 1, 4, f), 4);
    cr_assert_eq(fclose(f), 0);
}

/* ---- schema ---- */

STORE_TEST(memory_database_is_at_current_version)
{
    bd_store *s = open_mem();
    cr_assert_eq(bd_store_schema_version(s), 7);
    cr_assert_eq(bd_store_schema_version(NULL), 7);
    bd_store_close(s);
}

Test(store, reopen_keeps_data_and_version)
{
    struct tmpdb t;
    tmpdb_make(&t);
    bd_store *s = open_at(t.path, BD_SYNC_FULL);
    int64_t uid = make_user(s, "alice");
    int64_t sid = make_study(s, uid, "first");
    int64_t tid = make_trial(s, sid, 99.0);
    cr_assert_gt(file_size(t.path), 0);
    bd_store_close(s);

    char wal[1100];
    snprintf(wal, sizeof wal, "%s-wal", t.path);
    cr_assert(file_size(wal) <= 0, "the WAL is checkpointed and emptied on close");

    s = open_at(t.path, BD_SYNC_NORMAL);
    cr_assert_eq(bd_store_schema_version(s), 7);
    bd_user u;
    bd_err err = {0};
    cr_assert_eq(bd_store_user_by_name(s, "alice", &u, &err), 0);
    cr_assert_eq(u.id, uid);
    bd_trial_row tr = {0};
    cr_assert_eq(bd_store_trial_get(s, tid, &tr, &err), 0);
    cr_assert_eq(tr.study_id, sid);
    bd_store_trial_row_clear(&tr);
    bd_store_close(s);
    tmpdb_remove(&t);
}

Test(store, file_database_uses_wal)
{
    struct tmpdb t;
    tmpdb_make(&t);
    bd_store *s = open_at(t.path, BD_SYNC_NORMAL);
    make_user(s, "alice");
    char wal[1100];
    snprintf(wal, sizeof wal, "%s-wal", t.path);
    cr_assert_gt(file_size(wal), 0, "an open WAL database writes to <db>-wal");
    bd_store_close(s);
    tmpdb_remove(&t);
}

Test(store, newer_schema_is_refused)
{
    struct tmpdb t;
    tmpdb_make(&t);
    bd_store_close(open_at(t.path, BD_SYNC_NORMAL));
    poke_header(t.path, 60, 99); /* user_version */
    bd_store *s = NULL;
    bd_err err = {0};
    cr_assert_eq(bd_store_open(t.path, NULL, &s, &err), BD_ESTORAGE);
    cr_assert_null(s);
    cr_assert_not_null(strstr(err.message, "newer"), "%s", err.message);
    tmpdb_remove(&t);
}

Test(store, foreign_database_is_refused)
{
    struct tmpdb t;
    tmpdb_make(&t);
    bd_store_close(open_at(t.path, BD_SYNC_NORMAL));
    poke_header(t.path, 68, 0x12345678); /* application_id */
    bd_store *s = NULL;
    bd_err err = {0};
    cr_assert_eq(bd_store_open(t.path, NULL, &s, &err), BD_ESTORAGE);
    cr_assert_not_null(strstr(err.message, "not a banditd database"), "%s", err.message);
    tmpdb_remove(&t);
}

Test(store, garbage_file_is_a_storage_error)
{
    struct tmpdb t;
    tmpdb_make(&t);
    FILE *f = fopen(t.path, "w");
    cr_assert_not_null(f);
    for (int i = 0; i < 200; i++)
        fputs("this is not a database\n", f);
    fclose(f);
    bd_store *s = NULL;
    bd_err err = {0};
    cr_assert_eq(bd_store_open(t.path, NULL, &s, &err), BD_ESTORAGE);
    cr_assert_eq(err.code, BD_ESTORAGE);
    cr_assert_neq(err.message[0], '\0');
    tmpdb_remove(&t);
}

/* ---- users and tokens ---- */

STORE_TEST(users_create_find_count_and_conflict)
{
    bd_store *s = open_mem();
    bd_err err = {0};
    int64_t count = -1, admin_id = 0;
    cr_assert_eq(bd_store_user_count(s, &count, &err), 0);
    cr_assert_eq(count, 0);
    cr_assert_eq(bd_store_user_create(s, "root", 1, 42.5, &admin_id, &err), 0);
    int64_t bob = make_user(s, "bob");
    cr_assert_neq(admin_id, bob);
    cr_assert_eq(bd_store_user_count(s, &count, &err), 0);
    cr_assert_eq(count, 2);

    bd_user u;
    cr_assert_eq(bd_store_user_by_name(s, "root", &u, &err), 0);
    cr_assert_eq(u.id, admin_id);
    cr_assert_str_eq(u.name, "root");
    cr_assert_eq(u.is_admin, 1);
    cr_assert_float_eq(u.created_at, 42.5, 1e-9);
    cr_assert_eq(bd_store_user_by_id(s, bob, &u, &err), 0);
    cr_assert_str_eq(u.name, "bob");
    cr_assert_eq(u.is_admin, 0);

    cr_assert_eq(bd_store_user_create(s, "bob", 0, 1, NULL, &err), BD_ECONFLICT);
    cr_assert_eq(err.code, BD_ECONFLICT);
    cr_assert(strstr(err.message, "UNIQUE") || strstr(err.message, "unique"), "%s", err.message);
    cr_assert_eq(bd_store_user_by_name(s, "carol", &u, &err), BD_ENOTFOUND);
    cr_assert_eq(bd_store_user_by_id(s, 9999, &u, &err), BD_ENOTFOUND);
    char longname[80];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    cr_assert_eq(bd_store_user_create(s, longname, 0, 1, NULL, &err), BD_EINVAL);
    bd_store_close(s);
}

STORE_TEST(user_limits_default_to_unset_and_usage_counts_live_studies_bytes)
{
    bd_store *s = open_mem();
    bd_err err = {0};
    int64_t alice = make_user(s, "alice"), bob = make_user(s, "bob"), n = -1, bytes = -1;
    bd_user u;
    cr_assert_eq(bd_store_user_by_id(s, alice, &u, &err), 0);
    cr_expect_eq(u.max_studies, -1, "no quota of her own: the daemon's default");
    cr_expect_eq(u.max_definition_bytes, -1);
    cr_assert_eq(bd_store_user_set_limits(s, alice, 7, 0, &err), 0);
    cr_assert_eq(bd_store_user_by_id(s, alice, &u, &err), 0);
    cr_expect_eq(u.max_studies, 7);
    cr_expect_eq(u.max_definition_bytes, 0, "0 is a quota (nothing), not the default");
    cr_assert_eq(bd_store_user_set_limits(s, alice, -1, 100, &err), 0);
    cr_assert_eq(bd_store_user_by_name(s, "alice", &u, &err), 0);
    cr_expect_eq(u.max_studies, -1);
    cr_expect_eq(u.max_definition_bytes, 100);
    cr_expect_eq(bd_store_user_set_limits(s, 9999, 1, 1, &err), BD_ENOTFOUND);

    cr_assert_eq(bd_store_user_usage(s, alice, &n, &bytes, &err), 0);
    cr_expect_eq(n, 0);
    cr_expect_eq(bytes, 0);
    bd_study_row row = {.user_id = alice, .name = "s", .definition = "{\"x\":\"\u00e9t\u00e9\"}", .created_at = 1};
    int64_t sid;
    cr_assert_eq(bd_store_study_insert(s, &row, &sid, &err), 0);
    make_study(s, alice, "t");
    make_study(s, bob, "u");
    cr_assert_eq(bd_store_user_usage(s, alice, &n, &bytes, &err), 0);
    cr_expect_eq(n, 2, "bob's study is his");
    cr_expect_eq(bytes, (int64_t)(strlen(row.definition) + strlen("{\"k\":1}")), "bytes, not characters");
    cr_assert_eq(bd_store_study_delete(s, sid, &err), 0);
    cr_assert_eq(bd_store_user_usage(s, alice, &n, &bytes, &err), 0);
    cr_expect_eq(n, 1, "a deleted study no longer counts");
    bd_store_close(s);
}

Test(store, schema_3_migrates_to_current_with_definition_bytes_and_no_pause_or_metadata)
{
    /* tests/fixtures/schema3: a file written by the schema-3 daemon. */
    struct tmpdb t;
    tmpdb_make(&t);
    const char *fixtures = getenv("BD_FIXTURES") ? getenv("BD_FIXTURES") : "tests/fixtures";
    char cmd[2600];
    snprintf(cmd, sizeof cmd, "cp '%s/schema3/banditd.db' '%s'", fixtures, t.path);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    bd_store *s = open_at(t.path, BD_SYNC_NORMAL);
    cr_assert_eq(bd_store_schema_version(s), 7);
    bd_err err = {0};
    int64_t n = -1, bytes = -1;
    bd_user u;
    cr_assert_eq(bd_store_user_by_id(s, 1, &u, &err), 0, "%s", err.message);
    cr_expect_eq(u.max_studies, -1, "no quota of its own after the migration");
    cr_assert_eq(bd_store_user_usage(s, 1, &n, &bytes, &err), 0, "%s", err.message);
    cr_expect_eq(n, 2);
    cr_expect_eq(bytes, 273 + 272, "UTF-8 bytes of the stored definitions");
    bd_study_row row = {0};
    cr_assert_eq(bd_store_study_get(s, 1, &row, &err), 0);
    cr_expect_str_eq(row.name, "alpha", "the studies are kept");
    cr_expect_eq(row.paused, 0, "schema 6: an old study is not paused");
    cr_expect_null(row.metadata, "schema 6: an old study has no metadata");
    bd_store_study_row_clear(&row);
    /* The new columns take writes on the migrated file. */
    cr_assert_eq(bd_store_study_set_paused(s, 1, 1, &err), 0, "%s", err.message);
    cr_assert_eq(bd_store_study_get(s, 1, &row, &err), 0);
    cr_expect_eq(row.paused, 1);
    bd_store_study_row_clear(&row);
    bd_store_close(s);
    tmpdb_remove(&t);
}

STORE_TEST(study_paused_and_metadata_round_trip_and_survive_reopen)
{
    struct tmpdb t;
    tmpdb_make(&t);
    bd_store *s = open_at(t.path, BD_SYNC_NORMAL);
    bd_err err = {0};
    int64_t alice = make_user(s, "alice");
    bd_study_row in = {.user_id = alice, .name = "m", .definition = "{\"k\":1}", .created_at = 5.0, .paused = 1,
                       .metadata = "{\"team\":\"x\"}"};
    int64_t sid = 0, plain = make_study(s, alice, "plain");
    cr_assert_eq(bd_store_study_insert(s, &in, &sid, &err), 0, "%s", err.message);
    bd_study_row row = {0};
    cr_assert_eq(bd_store_study_get(s, plain, &row, &err), 0);
    cr_expect_eq(row.paused, 0);
    cr_expect_null(row.metadata, "none given: NULL, not \"{}\"");
    bd_store_study_row_clear(&row);
    cr_assert_eq(bd_store_study_get(s, sid, &row, &err), 0);
    cr_expect_eq(row.paused, 1);
    cr_expect_str_eq(row.metadata, "{\"team\":\"x\"}");
    bd_store_study_row_clear(&row);

    cr_assert_eq(bd_store_study_set_paused(s, sid, 0, &err), 0, "%s", err.message);
    cr_assert_eq(bd_store_study_set_metadata(s, sid, "{\"a\":[1,2]}", &err), 0, "%s", err.message);
    cr_assert_eq(bd_store_study_set_paused(s, plain, 1, &err), 0, "%s", err.message);
    cr_expect_eq(bd_store_study_set_paused(s, 4242, 1, &err), BD_ENOTFOUND);
    cr_expect_eq(bd_store_study_set_metadata(s, 4242, "{}", &err), BD_ENOTFOUND);
    bd_store_close(s);

    s = open_at(t.path, BD_SYNC_NORMAL);
    cr_assert_eq(bd_store_study_get(s, sid, &row, &err), 0);
    cr_expect_eq(row.paused, 0);
    cr_expect_str_eq(row.metadata, "{\"a\":[1,2]}");
    bd_store_study_row_clear(&row);
    cr_assert_eq(bd_store_study_get(s, plain, &row, &err), 0);
    cr_expect_eq(row.paused, 1, "only the named study changed");
    cr_expect_null(row.metadata);
    bd_store_study_row_clear(&row);
    cr_assert_eq(bd_store_study_set_metadata(s, sid, NULL, &err), 0);
    cr_assert_eq(bd_store_study_get(s, sid, &row, &err), 0);
    cr_expect_null(row.metadata, "NULL clears it");
    bd_store_study_row_clear(&row);
    bd_store_close(s);
    tmpdb_remove(&t);
}

STORE_TEST(trial_user_attrs_round_trip_in_any_state)
{
    bd_store *s = open_mem();
    bd_err err = {0};
    int64_t sid = make_study(s, make_user(s, "alice"), "st");
    int64_t tid = make_trial(s, sid, 60);
    bd_trial_row out = {0};
    cr_assert_eq(bd_store_trial_get(s, tid, &out, &err), 0);
    cr_expect_null(out.user_attrs);
    bd_store_trial_row_clear(&out);

    bd_trial_row fin = {.id = tid, .state = BD_TRIAL_COMPLETED, .finished_at = 20, .has_value = 1, .value = 0.5};
    cr_assert_eq(bd_store_trial_finish(s, &fin, &err), 0, "%s", err.message);
    cr_assert_eq(bd_store_trial_set_user_attrs(s, tid, "{\"seed\":3}", &err), 0, "a finished trial: %s",
                 err.message);
    cr_expect_eq(bd_store_trial_set_user_attrs(s, tid + 99, "{}", &err), BD_ENOTFOUND);
    cr_assert_eq(bd_store_trial_get(s, tid, &out, &err), 0);
    cr_expect_str_eq(out.user_attrs, "{\"seed\":3}");
    cr_expect_eq(out.state, BD_TRIAL_COMPLETED, "the state is untouched");
    bd_store_trial_row_clear(&out);
    cr_assert_null(out.user_attrs);

    /* An insert may carry them, and every scan reads them. */
    bd_trial_row in = {.study_id = sid, .config = "{}", .budget = 1, .state = BD_TRIAL_RUNNING, .created_at = 1,
                       .lease_expires_at = 9, .user_attrs = "{\"k\":true}"};
    int64_t second = 0;
    cr_assert_eq(bd_store_trial_insert(s, &in, &second, &err), 0, "%s", err.message);
    cr_assert_eq(bd_store_trial_get(s, second, &out, &err), 0);
    cr_expect_str_eq(out.user_attrs, "{\"k\":true}");
    bd_store_trial_row_clear(&out);
    bd_store_close(s);
}

STORE_TEST(tokens_add_get_and_revoke_hides)
{
    bd_store *s = open_mem();
    bd_err err = {0};
    int64_t uid = make_user(s, "alice"), tid = 0, owner = 0;
    uint8_t hash[32], got[32];
    for (int i = 0; i < 32; i++)
        hash[i] = (uint8_t)(i * 7 + 1);
    cr_assert_eq(bd_store_token_add(s, uid, hash, 1.0, &tid, &err), 0, "%s", err.message);
    cr_assert_gt(tid, 0);
    cr_assert_eq(bd_store_token_get(s, tid, got, &owner, &err), 0);
    cr_assert_eq(memcmp(hash, got, 32), 0);
    cr_assert_eq(owner, uid);

    cr_assert_eq(bd_store_token_revoke(s, tid, &err), 0);
    cr_assert_eq(bd_store_token_get(s, tid, got, &owner, &err), BD_ENOTFOUND);
    cr_assert_eq(bd_store_token_revoke(s, tid + 100, &err), BD_ENOTFOUND);
    cr_assert_eq(bd_store_token_add(s, uid + 100, hash, 1.0, &tid, &err), BD_ENOTFOUND, "unknown user");
    bd_store_close(s);
}

/* ---- studies ---- */

STORE_TEST(study_insert_get_each_by_user)
{
    bd_store *s = open_mem();
    bd_err err = {0};
    int64_t alice = make_user(s, "alice"), bob = make_user(s, "bob");
    int64_t a1 = make_study(s, alice, "a1");
    int64_t b1 = make_study(s, bob, "b1");
    int64_t a2 = make_study(s, alice, "a2");

    bd_study_row row = {0};
    cr_assert_eq(bd_store_study_get(s, a2, &row, &err), 0);
    cr_assert_eq(row.id, a2);
    cr_assert_eq(row.user_id, alice);
    cr_assert_str_eq(row.name, "a2");
    cr_assert_str_eq(row.definition, "{\"k\":1}");
    cr_assert_float_eq(row.created_at, 5.0, 1e-9);
    bd_store_study_row_clear(&row);
    cr_assert_null(row.name);
    cr_assert_eq(bd_store_study_get(s, 4242, &row, &err), BD_ENOTFOUND);

    struct ids all = {0}, mine = {0}, first = {.stop_at = 1};
    cr_assert_eq(bd_store_study_each(s, 0, collect_study, &all, &err), 0);
    cr_assert_eq(all.n, 3);
    cr_assert(all.v[0] == a1 && all.v[1] == b1 && all.v[2] == a2);
    cr_assert_eq(bd_store_study_each(s, alice, collect_study, &mine, &err), 0);
    cr_assert_eq(mine.n, 2);
    cr_assert(mine.v[0] == a1 && mine.v[1] == a2);
    cr_assert_eq(bd_store_study_each(s, 0, collect_study, &first, &err), 7, "fn's value stops the scan");
    cr_assert_eq(first.n, 1);

    cr_assert_eq(bd_store_study_insert(s, &(bd_study_row){.user_id = 999, .name = "x", .definition = "{}"}, NULL,
                                       &err),
                 BD_ENOTFOUND, "unknown owner");
    bd_store_close(s);
}

STORE_TEST(study_delete_cascades_to_trials_and_events)
{
    bd_store *s = open_mem();
    bd_err err = {0};
    int64_t uid = make_user(s, "alice");
    int64_t doomed = make_study(s, uid, "doomed"), kept = make_study(s, uid, "kept");
    int64_t t1 = make_trial(s, doomed, 50), t2 = make_trial(s, kept, 50);
    append_event(s, doomed, t1, BD_EV_CREATED, 0);
    append_event(s, doomed, t1, BD_EV_MEASUREMENT, 0.5);
    append_event(s, kept, t2, BD_EV_CREATED, 0);

    cr_assert_eq(bd_store_study_delete(s, doomed, &err), 0, "%s", err.message);
    bd_study_row sr = {0};
    cr_assert_eq(bd_store_study_get(s, doomed, &sr, &err), BD_ENOTFOUND);
    bd_trial_row tr = {0};
    cr_assert_eq(bd_store_trial_get(s, t1, &tr, &err), BD_ENOTFOUND);
    cr_assert_eq(count_events(s, doomed), 0);
    struct ids c = {0};
    cr_assert_eq(bd_store_event_each_of_trial(s, t1, collect_event, &c, &err), 0);
    cr_assert_eq(c.n, 0);

    cr_assert_eq(bd_store_trial_get(s, t2, &tr, &err), 0);
    bd_store_trial_row_clear(&tr);
    cr_assert_eq(count_events(s, kept), 1);
    cr_assert_eq(bd_store_study_delete(s, doomed, &err), BD_ENOTFOUND);

    int64_t again = make_study(s, uid, "again");
    cr_assert_gt(again, kept, "ids of deleted studies are not reused");
    cr_assert_gt(make_trial(s, again, 1), t2);
    bd_store_close(s);
}

/* ---- trials ---- */

STORE_TEST(trial_state_names_round_trip)
{
    for (int i = 0; i < BD_TRIAL_NSTATES; i++)
        cr_assert_eq(bd_trial_state_parse(bd_trial_state_name((bd_trial_state)i)), i);
    cr_assert_str_eq(bd_trial_state_name(BD_TRIAL_RUNNING), "running");
    cr_assert_str_eq(bd_trial_state_name(BD_TRIAL_EXPIRED), "expired");
    cr_assert_eq(bd_trial_state_parse("Running"), -1);
    cr_assert_eq(bd_trial_state_parse(""), -1);
    cr_assert_eq(bd_trial_state_parse(NULL), -1);
}

STORE_TEST(trial_insert_defaults_config_id_and_round_trips)
{
    bd_store *s = open_mem();
    bd_err err = {0};
    int64_t sid = make_study(s, make_user(s, "alice"), "st");
    int64_t first = make_trial(s, sid, 60);

    bd_trial_row in = {.study_id = sid, .config_id = first, .config = "{\"x\":0.5}", .budget = 9,
                       .resume_from = first, .extra = "{\"rung\":1}", .state = BD_TRIAL_RUNNING,
                       .worker = "w1", .created_at = 11.25, .lease_expires_at = 71.5};
    int64_t second = 0;
    cr_assert_eq(bd_store_trial_insert(s, &in, &second, &err), 0, "%s", err.message);

    bd_trial_row out = {0};
    cr_assert_eq(bd_store_trial_get(s, first, &out, &err), 0);
    cr_assert_eq(out.config_id, first, "config_id 0 becomes the trial's own id");
    cr_assert_eq(out.resume_from, 0);
    cr_assert_null(out.extra);
    cr_assert_null(out.worker);
    cr_assert_null(out.reason);
    cr_assert_eq(out.finished_at, 0.0);
    cr_assert_eq(out.has_value, 0);
    bd_store_trial_row_clear(&out);

    cr_assert_eq(bd_store_trial_get(s, second, &out, &err), 0);
    cr_assert_eq(out.id, second);
    cr_assert_eq(out.study_id, sid);
    cr_assert_eq(out.config_id, first);
    cr_assert_str_eq(out.config, "{\"x\":0.5}");
    cr_assert_float_eq(out.budget, 9, 1e-12);
    cr_assert_eq(out.resume_from, first);
    cr_assert_str_eq(out.extra, "{\"rung\":1}");
    cr_assert_eq(out.state, BD_TRIAL_RUNNING);
    cr_assert_str_eq(out.worker, "w1");
    cr_assert_float_eq(out.created_at, 11.25, 1e-12);
    cr_assert_float_eq(out.lease_expires_at, 71.5, 1e-12);
    bd_store_trial_row_clear(&out);

    cr_assert_eq(bd_store_trial_get(s, second + 5, &out, &err), BD_ENOTFOUND);
    in.study_id = sid + 100;
    cr_assert_eq(bd_store_trial_insert(s, &in, NULL, &err), BD_ENOTFOUND, "unknown study");
    in.study_id = sid;
    in.state = (bd_trial_state)17;
    cr_assert_eq(bd_store_trial_insert(s, &in, NULL, &err), BD_EINVAL);
    bd_store_close(s);
}

STORE_TEST(trial_finish_values_round_trip)
{
    bd_store *s = open_mem();
    bd_err err = {0};
    int64_t sid = make_study(s, make_user(s, "alice"), "st");
    int64_t diverged = make_trial(s, sid, 60), plain = make_trial(s, sid, 60), timed = make_trial(s, sid, 60);

    bd_trial_row fin = {.id = diverged, .state = BD_TRIAL_COMPLETED, .finished_at = 77.0, .has_value = 1,
                        .value = NAN, .reason = "diverged"};
    cr_assert_eq(bd_store_trial_finish(s, &fin, &err), 0, "%s", err.message);
    finish_trial(s, plain, BD_TRIAL_COMPLETED, 0.31);
    fin = (bd_trial_row){.id = timed, .state = BD_TRIAL_COMPLETED, .finished_at = 78.0, .timeout = 1};
    cr_assert_eq(bd_store_trial_finish(s, &fin, &err), 0, "%s", err.message);

    bd_trial_row out = {0};
    cr_assert_eq(bd_store_trial_get(s, diverged, &out, &err), 0);
    cr_assert_eq(out.state, BD_TRIAL_COMPLETED);
    cr_assert_eq(out.has_value, 1);
    cr_assert(isnan(out.value), "NAN survives as NULL + has_value");
    cr_assert_str_eq(out.reason, "diverged");
    cr_assert_float_eq(out.finished_at, 77.0, 1e-12);
    bd_store_trial_row_clear(&out);

    cr_assert_eq(bd_store_trial_get(s, plain, &out, &err), 0);
    cr_assert_eq(out.has_value, 1);
    cr_assert_eq(out.value, 0.31, "the exact double comes back");
    cr_assert_null(out.reason);
    bd_store_trial_row_clear(&out);

    cr_assert_eq(bd_store_trial_get(s, timed, &out, &err), 0);
    cr_assert_eq(out.has_value, 0);
    cr_assert_eq(out.timeout, 1);
    cr_assert_eq(out.value, 0.0);
    bd_store_trial_row_clear(&out);

    fin = (bd_trial_row){.id = plain, .state = BD_TRIAL_FAILED, .finished_at = 90.0};
    cr_assert_eq(bd_store_trial_finish(s, &fin, &err), BD_ECONFLICT, "a trial finishes once");
    cr_assert_not_null(strstr(err.message, "completed"), "%s", err.message);
    fin.id = 5555;
    cr_assert_eq(bd_store_trial_finish(s, &fin, &err), BD_ENOTFOUND);
    fin.state = BD_TRIAL_RUNNING;
    cr_assert_eq(bd_store_trial_finish(s, &fin, &err), BD_EINVAL);
    bd_store_close(s);
}

/* Schema 7 (issue 41): the metrics a trial and a measurement reported, and
 * a constrained study's feasibility, which the best-first order puts first. */
STORE_TEST(values_and_feasible_round_trip_and_order_best_first)
{
    bd_store *s = open_mem();
    bd_err err = {0};
    int64_t sid = make_study(s, make_user(s, "alice"), "st");
    int64_t plain = make_trial(s, sid, 60), feasible = make_trial(s, sid, 60), infeasible = make_trial(s, sid, 60);
    int64_t running = make_trial(s, sid, 60);
    bd_trial_row fin = {.id = feasible, .state = BD_TRIAL_COMPLETED, .finished_at = 21, .has_value = 1, .value = 0.4,
                        .values = "{\"loss\":0.4,\"mb\":100}", .constrained = 1, .feasible = 1};
    cr_assert_eq(bd_store_trial_finish(s, &fin, &err), 0, "%s", err.message);
    fin = (bd_trial_row){.id = infeasible, .state = BD_TRIAL_COMPLETED, .finished_at = 22, .has_value = 1,
                         .value = 0.1, .values = "{\"loss\":0.1,\"mb\":900}", .constrained = 1, .feasible = 0};
    cr_assert_eq(bd_store_trial_finish(s, &fin, &err), 0, "%s", err.message);
    finish_trial(s, plain, BD_TRIAL_COMPLETED, 0.3);

    bd_trial_row out = {0};
    cr_assert_eq(bd_store_trial_get(s, infeasible, &out, &err), 0);
    cr_expect_str_eq(out.values, "{\"loss\":0.1,\"mb\":900}");
    cr_expect(out.constrained && !out.feasible);
    bd_store_trial_row_clear(&out);
    cr_assert_eq(bd_store_trial_get(s, feasible, &out, &err), 0);
    cr_expect(out.constrained && out.feasible);
    bd_store_trial_row_clear(&out);
    cr_assert_eq(bd_store_trial_get(s, plain, &out, &err), 0);
    cr_expect_null(out.values, "a one-objective trial has none (as every row before schema 7)");
    cr_expect_not(out.constrained);
    bd_store_trial_row_clear(&out);
    cr_assert_eq(bd_store_trial_get(s, running, &out, &err), 0);
    cr_expect(!out.values && !out.constrained);
    bd_store_trial_row_clear(&out);

    /* feasible (or unconstrained: NULL) first, then by value */
    struct ids c = {0};
    cr_assert_eq(bd_store_trial_each_best(s, sid, 0, -1, 10, collect_trial, &c, &err), 0, "%s", err.message);
    cr_assert_eq(c.n, 3);
    cr_expect(c.v[0] == plain && c.v[1] == feasible && c.v[2] == infeasible, "%lld %lld %lld", (long long)c.v[0],
              (long long)c.v[1], (long long)c.v[2]);
    c.n = 0;
    cr_assert_eq(bd_store_trial_each_best(s, sid, 1, -1, 10, collect_trial, &c, &err), 0, "%s", err.message);
    cr_expect(c.v[0] == feasible && c.v[1] == plain && c.v[2] == infeasible, "maximize: infeasible still last");

    /* a warm start inserted completed carries them too */
    bd_trial_row warm = {.study_id = sid, .config = "{}", .budget = 1, .state = BD_TRIAL_COMPLETED,
                         .origin = BD_ORIGIN_WARM_START, .created_at = 1, .lease_expires_at = 1, .finished_at = 1,
                         .has_value = 1, .value = 0.2, .values = "{\"loss\":0.2,\"mb\":1}", .constrained = 1,
                         .feasible = 1};
    int64_t wid = 0;
    cr_assert_eq(bd_store_trial_insert(s, &warm, &wid, &err), 0, "%s", err.message);
    cr_assert_eq(bd_store_trial_get(s, wid, &out, &err), 0);
    cr_expect_str_eq(out.values, warm.values);
    cr_expect(out.constrained && out.feasible);
    bd_store_trial_row_clear(&out);

    bd_event_row ev = {.study_id = sid, .trial_id = running, .type = BD_EV_MEASUREMENT, .step = 2, .has_value = 1,
                       .value = 0.5, .elapsed_seconds = NAN, .created_at = 30, .values = "{\"loss\":0.5}"};
    cr_assert_eq(bd_store_event_append(s, &ev, NULL, &err), 0, "%s", err.message);
    append_event(s, sid, running, BD_EV_MEASUREMENT, 0.6);
    struct {
        int n;
        char texts[2][64];
    } got = {0};
    cr_assert_eq(bd_store_event_each_of_trial(s, running, collect_values, &got, &err), 0, "%s", err.message);
    cr_assert_eq(got.n, 2);
    cr_expect_str_eq(got.texts[0], "{\"loss\":0.5}");
    cr_expect_str_eq(got.texts[1], "(none)");
    bd_store_close(s);
}

STORE_TEST(trial_lease_update)
{
    bd_store *s = open_mem();
    bd_err err = {0};
    int64_t tid = make_trial(s, make_study(s, make_user(s, "alice"), "st"), 60);
    cr_assert_eq(bd_store_trial_set_lease(s, tid, 1234.5, &err), 0);
    bd_trial_row out = {0};
    cr_assert_eq(bd_store_trial_get(s, tid, &out, &err), 0);
    cr_assert_float_eq(out.lease_expires_at, 1234.5, 1e-12);
    bd_store_trial_row_clear(&out);
    cr_assert_eq(bd_store_trial_set_lease(s, tid + 1, 1.0, &err), BD_ENOTFOUND);
    bd_store_close(s);
}

STORE_TEST(trial_each_filters_state_and_paginates)
{
    bd_store *s = open_mem();
    bd_err err = {0};
    int64_t uid = make_user(s, "alice");
    int64_t a = make_study(s, uid, "a"), b = make_study(s, uid, "b");
    int64_t ids[10];
    for (int i = 0; i < 10; i++) {
        ids[i] = make_trial(s, a, 60);
        make_trial(s, b, 60); /* interleaved: must not show up */
    }
    finish_trial(s, ids[2], BD_TRIAL_COMPLETED, 1);
    finish_trial(s, ids[5], BD_TRIAL_COMPLETED, 2);
    finish_trial(s, ids[8], BD_TRIAL_STOPPED, 3);

    struct ids c = {0};
    cr_assert_eq(bd_store_trial_each(s, a, -1, -1, 0, 100, collect_trial, &c, &err), 0);
    cr_assert_eq(c.n, 10);
    for (int i = 0; i < 10; i++)
        cr_assert_eq(c.v[i], ids[i]);

    c = (struct ids){0};
    cr_assert_eq(bd_store_trial_each(s, a, BD_TRIAL_COMPLETED, -1, 0, 100, collect_trial, &c, &err), 0);
    cr_assert_eq(c.n, 2);
    cr_assert(c.v[0] == ids[2] && c.v[1] == ids[5]);

    c = (struct ids){0};
    cr_assert_eq(bd_store_trial_each(s, a, -1, -1, ids[3], 4, collect_trial, &c, &err), 0);
    cr_assert_eq(c.n, 4);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(c.v[i], ids[4 + i]);

    c = (struct ids){0};
    cr_assert_eq(bd_store_trial_each(s, a, BD_TRIAL_RUNNING, -1, ids[1], 3, collect_trial, &c, &err), 0);
    cr_assert_eq(c.n, 3);
    cr_assert(c.v[0] == ids[3] && c.v[1] == ids[4] && c.v[2] == ids[6]);

    c = (struct ids){.stop_at = 2};
    cr_assert_eq(bd_store_trial_each(s, a, -1, -1, 0, 0, collect_trial, &c, &err), 7);
    cr_assert_eq(c.n, 2);

    cr_assert_eq(count_trials(s, a, BD_TRIAL_RUNNING), 7);
    cr_assert_eq(count_trials(s, a + b + 10, -1), 0);
    c = (struct ids){0};
    cr_assert_eq(bd_store_trial_each(s, a, BD_TRIAL_NSTATES, -1, 0, 0, collect_trial, &c, &err), BD_EINVAL);
    bd_store_close(s);
}

STORE_TEST(trial_each_expired_picks_running_with_old_lease)
{
    bd_store *s = open_mem();
    bd_err err = {0};
    int64_t uid = make_user(s, "alice");
    int64_t a = make_study(s, uid, "a"), b = make_study(s, uid, "b");
    int64_t old_a = make_trial(s, a, 10);
    int64_t fresh = make_trial(s, a, 500);
    int64_t done = make_trial(s, a, 10);
    int64_t old_b = make_trial(s, b, 99.9);
    int64_t edge = make_trial(s, b, 100);
    finish_trial(s, done, BD_TRIAL_COMPLETED, 1);
    (void)fresh;
    (void)edge;

    struct ids c = {0};
    cr_assert_eq(bd_store_trial_each_expired(s, 100, collect_trial, &c, &err), 0);
    cr_assert_eq(c.n, 2);
    cr_assert(c.v[0] == old_a && c.v[1] == old_b);
    bd_store_close(s);
}

static int expire_it(const bd_trial_row *row, void *arg)
{
    bd_store *s = arg;
    bd_err err = {0};
    bd_trial_row fin = {.id = row->id, .state = BD_TRIAL_EXPIRED, .finished_at = 100};
    bd_event_row ev = {.study_id = row->study_id, .trial_id = row->id, .type = BD_EV_EXPIRED,
                       .elapsed_seconds = NAN, .created_at = 100};
    cr_assert_eq(bd_store_trial_finish(s, &fin, &err), 0, "%s", err.message);
    cr_assert_eq(bd_store_event_append(s, &ev, NULL, &err), 0, "%s", err.message);
    return 0;
}

STORE_TEST(expiry_callback_may_write_inside_a_transaction)
{
    bd_store *s = open_mem();
    bd_err err = {0};
    int64_t sid = make_study(s, make_user(s, "alice"), "a");
    for (int i = 0; i < 600; i++) /* more than one scan batch */
        make_trial(s, sid, i % 2 ? 10 : 500);
    cr_assert_eq(bd_store_begin(s, &err), 0);
    cr_assert_eq(bd_store_trial_each_expired(s, 100, expire_it, s, &err), 0, "%s", err.message);
    cr_assert_eq(bd_store_commit(s, &err), 0, "%s", err.message);
    cr_assert_eq(count_trials(s, sid, BD_TRIAL_EXPIRED), 300);
    cr_assert_eq(count_trials(s, sid, BD_TRIAL_RUNNING), 300);
    cr_assert_eq(count_events(s, sid), 300);
    bd_store_close(s);
}

/* ---- events ---- */

static int keep_event(const bd_event_row *row, void *arg)
{
    bd_event_row *out = arg;
    out[row->id % 8] = *row;
    return 0;
}

STORE_TEST(events_append_in_order_with_nan_round_trip)
{
    bd_store *s = open_mem();
    bd_err err = {0};
    int64_t sid = make_study(s, make_user(s, "alice"), "a");
    int64_t t1 = make_trial(s, sid, 60), t2 = make_trial(s, sid, 60);
    int64_t e[4];
    e[0] = append_event(s, sid, t1, BD_EV_CREATED, 0);
    e[1] = append_event(s, sid, t2, BD_EV_CREATED, 0);
    bd_event_row m = {.study_id = sid, .trial_id = t1, .type = BD_EV_MEASUREMENT, .step = 3, .has_value = 1,
                      .value = NAN, .elapsed_seconds = NAN, .created_at = 31};
    cr_assert_eq(bd_store_event_append(s, &m, &e[2], &err), 0, "%s", err.message);
    m = (bd_event_row){.study_id = sid, .trial_id = t1, .type = BD_EV_COMPLETED, .has_value = 0, .timeout = 1,
                       .elapsed_seconds = 12.5, .created_at = 32};
    cr_assert_eq(bd_store_event_append(s, &m, &e[3], &err), 0, "%s", err.message);
    for (int i = 1; i < 4; i++)
        cr_assert_gt(e[i], e[i - 1]);

    struct ids c = {0};
    cr_assert_eq(bd_store_event_each(s, sid, collect_event, &c, &err), 0);
    cr_assert_eq(c.n, 4);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(c.v[i], e[i]);
    c = (struct ids){0};
    cr_assert_eq(bd_store_event_each_of_trial(s, t1, collect_event, &c, &err), 0);
    cr_assert_eq(c.n, 3);
    cr_assert(c.v[0] == e[0] && c.v[1] == e[2] && c.v[2] == e[3]);

    bd_event_row got[8];
    memset(got, 0, sizeof got);
    cr_assert_eq(bd_store_event_each_of_trial(s, t1, keep_event, got, &err), 0);
    const bd_event_row *meas = &got[e[2] % 8], *comp = &got[e[3] % 8], *created = &got[e[0] % 8];
    cr_assert_eq(meas->type, BD_EV_MEASUREMENT);
    cr_assert_eq(meas->trial_id, t1);
    cr_assert_eq(meas->study_id, sid);
    cr_assert_float_eq(meas->step, 3, 1e-12);
    cr_assert_eq(meas->has_value, 1);
    cr_assert(isnan(meas->value));
    cr_assert(isnan(meas->elapsed_seconds));
    cr_assert_float_eq(meas->created_at, 31, 1e-12);
    cr_assert_eq(comp->type, BD_EV_COMPLETED);
    cr_assert_eq(comp->has_value, 0);
    cr_assert_eq(comp->timeout, 1);
    cr_assert_float_eq(comp->elapsed_seconds, 12.5, 1e-12);
    cr_assert_eq(created->type, BD_EV_CREATED);
    cr_assert_eq(created->value, 0.0);

    m.trial_id = t2 + 50;
    cr_assert_eq(bd_store_event_append(s, &m, NULL, &err), BD_ENOTFOUND, "unknown trial");
    m.trial_id = t1;
    m.type = (bd_event_type)42;
    cr_assert_eq(bd_store_event_append(s, &m, NULL, &err), BD_EINVAL);
    bd_store_close(s);
}

STORE_TEST(event_scan_crosses_batches_in_order)
{
    bd_store *s = open_mem();
    bd_err err = {0};
    int64_t sid = make_study(s, make_user(s, "alice"), "a");
    int64_t tid = make_trial(s, sid, 60);
    int64_t ids[700];
    cr_assert_eq(bd_store_begin(s, &err), 0);
    for (int i = 0; i < 700; i++)
        ids[i] = append_event(s, sid, tid, BD_EV_MEASUREMENT, i);
    cr_assert_eq(bd_store_commit(s, &err), 0);

    struct ids c = {0};
    cr_assert_eq(bd_store_event_each(s, sid, collect_event, &c, &err), 0);
    cr_assert_eq(c.n, 700);
    for (int i = 0; i < 700; i++)
        cr_assert_eq(c.v[i], ids[i]);
    c = (struct ids){.stop_at = 300};
    cr_assert_eq(bd_store_event_each_of_trial(s, tid, collect_event, &c, &err), 7);
    cr_assert_eq(c.n, 300);
    bd_store_close(s);
}

/* A callback that reads the store while a scan is in progress, outside a transaction. */
struct nested {
    bd_store *s;
    int studies, events;
};

static int count_nested_event(const bd_event_row *row, void *arg)
{
    struct nested *n = arg;
    bd_trial_row tr = {0};
    bd_err err = {0};
    cr_assert_eq(bd_store_trial_get(n->s, row->trial_id, &tr, &err), 0, "%s", err.message);
    bd_store_trial_row_clear(&tr);
    n->events++;
    return 0;
}

static int replay_study(const bd_study_row *row, void *arg)
{
    struct nested *n = arg;
    bd_err err = {0};
    n->studies++;
    cr_assert_eq(bd_store_event_each(n->s, row->id, count_nested_event, n, &err), 0, "%s", err.message);
    return 0;
}

STORE_TEST(callbacks_may_call_the_store_outside_a_transaction)
{
    bd_store *s = open_mem();
    int64_t uid = make_user(s, "alice");
    for (int i = 0; i < 3; i++) {
        int64_t sid = make_study(s, uid, "st");
        int64_t tid = make_trial(s, sid, 60);
        for (int j = 0; j < 5; j++)
            append_event(s, sid, tid, BD_EV_MEASUREMENT, j);
    }
    struct nested n = {.s = s};
    bd_err err = {0};
    cr_assert_eq(bd_store_study_each(s, 0, replay_study, &n, &err), 0, "%s", err.message);
    cr_assert_eq(n.studies, 3);
    cr_assert_eq(n.events, 15);
    bd_store_close(s);
}

/* ---- idempotency ---- */

STORE_TEST(idempotency_get_put_prune)
{
    bd_store *s = open_mem();
    bd_err err = {0};
    int64_t alice = make_user(s, "alice"), bob = make_user(s, "bob");
    char *fp = NULL, *resp = NULL;
    cr_assert_eq(bd_store_idem_get(s, alice, "k1", &fp, &resp, &err), BD_ENOTFOUND);
    cr_assert_eq(bd_store_idem_put(s, alice, "k1", "POST /v1/x 1234", "{\"ok\":1}", 100, &err), 0, "%s",
                 err.message);
    cr_assert_eq(bd_store_idem_put(s, bob, "k1", "other", "{\"ok\":2}", 200, &err), 0, "same key, other user");
    cr_assert_eq(bd_store_idem_put(s, alice, "k1", "again", "{}", 300, &err), BD_ECONFLICT);

    cr_assert_eq(bd_store_idem_get(s, alice, "k1", &fp, &resp, &err), 0);
    cr_assert_str_eq(fp, "POST /v1/x 1234");
    cr_assert_str_eq(resp, "{\"ok\":1}");
    free(fp);
    free(resp);

    cr_assert_eq(bd_store_idem_prune(s, 150, &err), 0);
    cr_assert_eq(bd_store_idem_get(s, alice, "k1", &fp, &resp, &err), BD_ENOTFOUND);
    cr_assert_eq(bd_store_idem_get(s, bob, "k1", &fp, NULL, &err), 0);
    cr_assert_str_eq(fp, "other");
    free(fp);
    bd_store_close(s);
}

/* ---- transactions ---- */

STORE_TEST(rollback_discards_changes)
{
    bd_store *s = open_mem();
    bd_err err = {0};
    int64_t uid = make_user(s, "alice");
    cr_assert_eq(bd_store_begin(s, &err), 0, "%s", err.message);
    make_user(s, "ghost");
    int64_t sid = make_study(s, uid, "ghost study");
    bd_store_rollback(s);

    bd_user u;
    cr_assert_eq(bd_store_user_by_name(s, "ghost", &u, &err), BD_ENOTFOUND);
    bd_study_row row = {0};
    cr_assert_eq(bd_store_study_get(s, sid, &row, &err), BD_ENOTFOUND);
    bd_store_rollback(s); /* no transaction: a no-op */
    make_user(s, "after");
    bd_store_close(s);
}

STORE_TEST(conflict_inside_a_transaction_keeps_it_usable)
{
    bd_store *s = open_mem();
    bd_err err = {0};
    make_user(s, "alice");
    cr_assert_eq(bd_store_begin(s, &err), 0);
    make_user(s, "bob");
    cr_assert_eq(bd_store_user_create(s, "alice", 0, 1, NULL, &err), BD_ECONFLICT);
    cr_assert_eq(bd_store_commit(s, &err), 0, "%s", err.message);
    int64_t count = 0;
    cr_assert_eq(bd_store_user_count(s, &count, &err), 0);
    cr_assert_eq(count, 2);
    bd_store_close(s);
}

STORE_TEST(released_work_joins_one_batch_and_survives_reopen)
{
    struct tmpdb t;
    tmpdb_make(&t);
    bd_store *s = open_at(t.path, BD_SYNC_FULL);
    bd_err err = {0};
    uint64_t t1, t2;
    cr_assert_eq(bd_store_begin(s, &err), 0);
    make_user(s, "first");
    cr_assert_eq(bd_store_release(s, &t1, &err), 0, "%s", err.message);
    cr_assert_eq(bd_store_begin(s, &err), 0);
    make_user(s, "second");
    cr_assert_eq(bd_store_release(s, &t2, &err), 0);
    cr_expect_eq(t1, t2, "both requests ride the same group commit");
    bd_user u;
    cr_expect_eq(bd_store_user_by_name(s, "first", &u, &err), 0, "released work is visible before the commit");
    cr_assert_eq(bd_store_wait(s, t2, &err), 0, "%s", err.message);
    cr_assert_eq(bd_store_wait(s, t1, &err), 0, "the batch is already durable");
    cr_assert_eq(bd_store_begin(s, &err), 0);
    make_user(s, "third");
    uint64_t t3;
    cr_assert_eq(bd_store_release(s, &t3, &err), 0);
    cr_expect_gt(t3, t2, "a new batch after a commit");
    cr_assert_eq(bd_store_wait(s, t3, &err), 0);
    bd_store_close(s);

    s = open_at(t.path, BD_SYNC_NORMAL);
    const char *names[] = {"first", "second", "third"};
    for (int i = 0; i < 3; i++)
        cr_expect_eq(bd_store_user_by_name(s, names[i], &u, &err), 0, "%s lost", names[i]);
    bd_store_close(s);
    tmpdb_remove(&t);
}

STORE_TEST(a_failed_batch_loses_all_of_it_and_blocks_begin_until_recovered)
{
    struct tmpdb t;
    tmpdb_make(&t);
    bd_store *s = open_at(t.path, BD_SYNC_NORMAL);
    bd_err err = {0};
    uint64_t t1, t2;
    make_user(s, "kept");
    cr_assert_eq(bd_store_begin(s, &err), 0);
    make_user(s, "lost1");
    cr_assert_eq(bd_store_release(s, &t1, &err), 0);
    cr_assert_eq(bd_store_begin(s, &err), 0);
    make_user(s, "lost2");
    bd_store_rollback(s); /* a request's own rollback leaves the batch alone */
    cr_assert_eq(bd_store_begin(s, &err), 0);
    make_user(s, "lost3");
    cr_assert_eq(bd_store_release(s, &t2, &err), 0);
    bd_store_fail_next_commit(s);
    cr_expect_eq(bd_store_wait(s, t1, &err), BD_ESTORAGE);
    cr_expect_eq(bd_store_wait(s, t2, &err), BD_ESTORAGE, "every waiter of the batch hears of it");
    cr_expect_eq(bd_store_begin(s, &err), BD_ESTORAGE, "no new work until the caller rebuilt its state");
    bd_store_recovered(s, bd_store_failures(s));
    bd_user u;
    const char *lost[] = {"lost1", "lost2", "lost3"};
    for (int i = 0; i < 3; i++)
        cr_expect_eq(bd_store_user_by_name(s, lost[i], &u, &err), BD_ENOTFOUND, "%s survived", lost[i]);
    cr_expect_eq(bd_store_user_by_name(s, "kept", &u, &err), 0);
    make_user(s, "after");
    bd_store_close(s);
    s = open_at(t.path, BD_SYNC_NORMAL);
    cr_expect_eq(bd_store_user_by_name(s, "after", &u, &err), 0);
    cr_expect_eq(bd_store_user_by_name(s, "lost1", &u, &err), BD_ENOTFOUND);
    bd_store_close(s);
    tmpdb_remove(&t);
}

/* Regression: the engine's recovery used to clear the poisoned flag after a
 * rebuild during which another batch failed, and that failure was then
 * forgotten. bd_store_recovered(failures) only reopens the store when no
 * batch failed after the count the caller rebuilt from. */
STORE_TEST(recovery_reopens_only_if_no_batch_failed_meanwhile)
{
    bd_store *s = open_mem();
    bd_err err = {0};
    uint64_t ticket;
    cr_assert_eq(bd_store_writable(s), 1);
    for (int round = 0; round < 2; round++) {
        cr_assert_eq(bd_store_begin(s, &err), 0);
        make_user(s, round ? "b" : "a");
        cr_assert_eq(bd_store_release(s, &ticket, &err), 0);
        bd_store_fail_next_commit(s);
        cr_assert_eq(bd_store_wait(s, ticket, &err), BD_ESTORAGE);
        cr_expect_eq(bd_store_writable(s), 0);
        if (round == 0)
            bd_store_recovered(s, 1);
    }
    cr_expect_eq(bd_store_failures(s), 2);
    bd_store_recovered(s, 1); /* a rebuild that began before the second failure */
    cr_expect_eq(bd_store_writable(s), 0, "a failure during the rebuild was forgotten");
    cr_expect_eq(bd_store_begin(s, &err), BD_ESTORAGE);
    bd_store_recovered(s, 2);
    cr_expect_eq(bd_store_writable(s), 0, "not writable until a commit succeeds again");
    cr_assert_eq(bd_store_begin(s, &err), 0);
    bd_store_rollback(s);
    cr_assert_eq(bd_store_probe(s, 1.0, &err), 0, "%s", err.message);
    cr_expect_eq(bd_store_writable(s), 1);
    bd_store_close(s);
}

/* The engine hands out trial and event ids before its transaction: the
 * store takes them as given, and bd_store_next_ids starts above every id
 * ever used (a deleted study's trial ids are never reused). */
STORE_TEST(explicit_ids_and_next_ids)
{
    bd_store *s = open_mem();
    bd_err err = {0};
    int64_t next_trial, next_event, id = 0;
    cr_assert_eq(bd_store_next_ids(s, &next_trial, &next_event, &err), 0);
    cr_expect_eq(next_trial, 1);
    cr_expect_eq(next_event, 1);
    int64_t uid = make_user(s, "u"), sid = make_study(s, uid, "s");
    bd_trial_row row = {.id = 40, .study_id = sid, .config = "{}", .budget = 1, .state = BD_TRIAL_RUNNING,
                        .created_at = 1, .lease_expires_at = 2, .has_instance = 1, .instance_index = 3,
                        .instance_name = "cnf/x.cnf"};
    cr_assert_eq(bd_store_trial_insert(s, &row, &id, &err), 0, "%s", err.message);
    bd_event_row ev = {.id = 77, .study_id = sid, .trial_id = 40, .type = BD_EV_CREATED, .value = NAN,
                       .elapsed_seconds = NAN, .created_at = 1};
    cr_assert_eq(bd_store_event_append(s, &ev, NULL, &err), 0, "%s", err.message);
    bd_trial_row back = {0};
    cr_assert_eq(bd_store_trial_get(s, 40, &back, &err), 0);
    cr_expect_eq(back.config_id, 40, "a new config is its own config_id");
    cr_expect(back.has_instance && back.instance_index == 3 && strcmp(back.instance_name, "cnf/x.cnf") == 0);
    bd_store_trial_row_clear(&back);
    int64_t plain = make_trial(s, sid, 5.0);
    cr_assert_eq(bd_store_trial_get(s, plain, &back, &err), 0);
    cr_expect_not(back.has_instance);
    cr_expect_null(back.instance_name);
    bd_store_trial_row_clear(&back);
    struct ids c = {0};
    cr_assert_eq(bd_store_trial_each(s, sid, -1, 3, 0, 0, collect_trial, &c, &err), 0);
    cr_expect(c.n == 1 && c.v[0] == 40, "the instance filter");
    cr_assert_eq(bd_store_study_delete(s, sid, &err), 0);
    cr_assert_eq(bd_store_next_ids(s, &next_trial, &next_event, &err), 0);
    cr_expect_eq(next_trial, 42, "trial ids of a deleted study are not reused");
    cr_expect_eq(next_event, 1, "event ids are never shown, only their order matters");
    bd_store_close(s);
}

/* The first admin token of a database is id 1 even when a start that made
 * one crashed before its commit (the admin token file names id 1): ids are
 * given back by a rollback, as SQLite's AUTOINCREMENT does, and never reused
 * once committed. */
STORE_TEST(rolled_back_inserts_give_their_ids_back)
{
    bd_store *s = open_mem();
    bd_err err = {0};
    uint8_t hash[32] = {1};
    int64_t uid = 0, tid = 0;
    cr_assert_eq(bd_store_begin(s, &err), 0);
    cr_assert_eq(bd_store_user_create(s, "admin", 1, 1, &uid, &err), 0);
    cr_assert_eq(bd_store_token_add(s, uid, hash, 1, &tid, &err), 0, "%s", err.message);
    cr_assert_eq(tid, 1);
    bd_store_rollback(s);
    cr_assert_eq(bd_store_begin(s, &err), 0);
    cr_assert_eq(bd_store_user_create(s, "admin", 1, 1, &uid, &err), 0);
    cr_expect_eq(uid, 1);
    cr_assert_eq(bd_store_token_add(s, uid, hash, 1, &tid, &err), 0, "%s", err.message);
    cr_expect_eq(tid, 1, "the rolled-back token's id is given back");
    cr_assert_eq(bd_store_commit(s, &err), 0, "%s", err.message);
    int64_t sid = make_study(s, uid, "s");
    cr_assert_eq(bd_store_study_delete(s, sid, &err), 0);
    cr_expect_gt(make_study(s, uid, "t"), sid, "a deleted study's id is not reused");
    bd_store_close(s);
}

STORE_TEST(transaction_misuse_is_reported)
{
    bd_store *s = open_mem();
    bd_err err = {0};
    cr_assert_eq(bd_store_commit(s, &err), BD_EINTERNAL);
    cr_assert_eq(bd_store_begin(s, &err), 0);
    cr_assert_eq(bd_store_begin(s, &err), BD_EINTERNAL, "no nested transactions (it would deadlock)");
    make_user(s, "alice");
    cr_assert_eq(bd_store_commit(s, &err), 0, "%s", err.message);
    cr_assert_eq(bd_store_begin(s, &err), 0);
    bd_store_close(s); /* rolls back the open transaction */
}

STORE_TEST(commit_persists_across_close_and_reopen)
{
    struct tmpdb t;
    tmpdb_make(&t);
    bd_store *s = open_at(t.path, BD_SYNC_NORMAL);
    bd_err err = {0};
    cr_assert_eq(bd_store_begin(s, &err), 0);
    int64_t sid = make_study(s, make_user(s, "alice"), "kept");
    int64_t tid = make_trial(s, sid, 60);
    append_event(s, sid, tid, BD_EV_CREATED, 0);
    cr_assert_eq(bd_store_commit(s, &err), 0, "%s", err.message);
    cr_assert_eq(bd_store_begin(s, &err), 0);
    make_user(s, "uncommitted");
    bd_store_close(s);

    s = open_at(t.path, BD_SYNC_NORMAL);
    cr_assert_eq(count_trials(s, sid, -1), 1);
    cr_assert_eq(count_events(s, sid), 1);
    bd_user u;
    cr_assert_eq(bd_store_user_by_name(s, "uncommitted", &u, &err), BD_ENOTFOUND);
    bd_store_close(s);
    tmpdb_remove(&t);
}

/* ---- threads ---- */

#define NTHREADS 4
#define PER_THREAD 250

struct worker {
    bd_store *s;
    int64_t study_id;
    int failures;
};

static void *worker_loop(void *arg)
{
    struct worker *w = arg;
    for (int i = 0; i < PER_THREAD; i++) {
        bd_err err = {0};
        bd_trial_row row = {.study_id = w->study_id, .config = "{}", .budget = 1, .state = BD_TRIAL_RUNNING,
                            .created_at = 1, .lease_expires_at = 2};
        int64_t tid = 0;
        if (bd_store_begin(w->s, &err)) {
            w->failures++;
            continue;
        }
        bd_event_row ev = {.study_id = w->study_id, .type = BD_EV_CREATED, .elapsed_seconds = NAN};
        int ret = bd_store_trial_insert(w->s, &row, &tid, &err);
        ev.trial_id = tid;
        if (!ret)
            ret = bd_store_event_append(w->s, &ev, NULL, &err);
        if (ret) {
            bd_store_rollback(w->s);
            w->failures++;
            continue;
        }
        if (bd_store_commit(w->s, &err))
            w->failures++;
        bd_trial_row back = {0};
        if (bd_store_trial_get(w->s, tid, &back, &err) || back.config_id != tid) /* outside a transaction */
            w->failures++;
        bd_store_trial_row_clear(&back);
    }
    return NULL;
}

STORE_TEST(four_threads_commit_concurrently)
{
    struct tmpdb t;
    tmpdb_make(&t);
    bd_store *s = open_at(t.path, BD_SYNC_NORMAL);
    int64_t sid = make_study(s, make_user(s, "alice"), "busy");
    pthread_t th[NTHREADS];
    struct worker w[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        w[i] = (struct worker){.s = s, .study_id = sid};
        cr_assert_eq(pthread_create(&th[i], NULL, worker_loop, &w[i]), 0);
    }
    for (int i = 0; i < NTHREADS; i++) {
        cr_assert_eq(pthread_join(th[i], NULL), 0);
        cr_assert_eq(w[i].failures, 0, "thread %d had %d failures", i, w[i].failures);
    }
    bd_store_close(s);

    s = open_at(t.path, BD_SYNC_NORMAL);
    struct ids c = {0};
    bd_err err = {0};
    cr_assert_eq(bd_store_trial_each(s, sid, BD_TRIAL_RUNNING, -1, 0, 0, collect_trial, &c, &err), 0);
    cr_assert_eq(c.n, NTHREADS * PER_THREAD);
    for (int i = 1; i < c.n; i++)
        cr_assert_gt(c.v[i], c.v[i - 1]);
    cr_assert_eq(count_events(s, sid), NTHREADS * PER_THREAD);
    bd_store_close(s);
    tmpdb_remove(&t);
}

/* ---- cluster mode (several daemons on one PostgreSQL schema) ---- */

static bd_store *open_cluster_at(const char *path)
{
    bd_store_opts opts = {.sync = BD_SYNC_NORMAL, .cluster = 1};
    bd_store *s = NULL;
    bd_err err = {0};
    cr_assert_eq(bd_store_open(path, &opts, &s, &err), 0, "open %s: %s", path, err.message);
    return s;
}

STORE_TEST(cluster_leases_fence_a_moved_study_and_id_blocks_never_overlap)
{
    bd_err err = {0};
    int64_t d1 = 0, d2 = 0, tok = 0, tok2 = 0, first1 = 0, first2 = 0, n = 0;
    if (g_backend == BACKEND_SQLITE) { /* one daemon per file: no cluster mode */
        bd_store *s = open_mem();
        cr_assert_eq(bd_store_cluster_join(s, "http://a", &d1, &err), BD_EINVAL);
        cr_assert_eq(bd_store_owner_acquire(s, 1, 1, 2.0, 1, &tok, &err), BD_EINVAL);
        cr_assert_eq(bd_store_id_block(s, &first1, &n, &err), BD_EINVAL);
        bd_store_close(s);
        return;
    }
    struct tmpdb t;
    tmpdb_make(&t);
    bd_store *a = open_cluster_at(t.path), *b = open_cluster_at(t.path);
    /* A daemon outside the cluster is refused beside its members. */
    bd_store_opts lone_opts = {.sync = BD_SYNC_NORMAL};
    bd_store *lone = NULL;
    cr_assert_eq(bd_store_open(t.path, &lone_opts, &lone, &err), BD_ESTORAGE);
    cr_assert(strstr(err.message, "--advertise-url"), "%s", err.message);

    cr_assert_eq(bd_store_cluster_join(a, "http://a:1", &d1, &err), 0, "%s", err.message);
    cr_assert_eq(bd_store_cluster_join(b, "http://b:1", &d2, &err), 0, "%s", err.message);
    cr_assert_neq(d1, d2);
    int64_t user = make_user(a, "u");
    int64_t study = make_study(a, user, "s");
    int64_t trial = make_trial(a, study, 50.0);

    /* Taken by a; b may not take a live lease, only steal it (token + 1). */
    cr_assert_eq(bd_store_owner_acquire(a, study, d1, 30.0, 0, &tok, &err), 0, "%s", err.message);
    cr_assert_eq(tok, 1);
    cr_assert_eq(bd_store_owner_acquire(a, study, d1, 30.0, 0, &tok, &err), 0, "%s", err.message);
    cr_assert_eq(tok, 1, "renewed by its holder: same token");
    cr_assert_eq(bd_store_owner_acquire(b, study, d2, 30.0, 0, &tok2, &err), BD_EBUSY);
    cr_assert_eq(bd_store_owner_acquire(b, study, d2, 30.0, 1, &tok2, &err), 0, "%s", err.message);
    cr_assert_eq(tok2, 2);

    /* a's write is fenced: nothing of its transaction commits. */
    cr_assert_eq(bd_store_begin(a, &err), 0, "%s", err.message);
    cr_assert_eq(bd_store_owner_renew(a, study, d1, 1, 30.0, &err), BD_EMOVED);
    cr_assert_str_eq(err.field, "study");
    bd_store_rollback(a);
    cr_assert_eq(bd_store_begin(b, &err), 0, "%s", err.message);
    cr_assert_eq(bd_store_owner_renew(b, study, d2, 2, 30.0, &err), 0, "%s", err.message);
    cr_assert_eq(bd_store_trial_set_lease(b, trial, 99.0, &err), 0, "%s", err.message);
    cr_assert_eq(bd_store_commit(b, &err), 0, "%s", err.message);

    /* Released (expired, token kept): a takes it without stealing, token 3. */
    bd_store_owner_release(b, study, d2, 2);
    cr_assert_eq(bd_store_owner_acquire(a, study, d1, 0.2, 0, &tok, &err), 0, "%s", err.message);
    cr_assert_eq(tok, 3);
    /* An expired lease is free too: a's 0.2 s run out. */
    struct timespec pause = {0, 300000000};
    nanosleep(&pause, NULL);
    cr_assert_eq(bd_store_owner_acquire(b, study, d2, 30.0, 0, &tok2, &err), 0, "%s", err.message);
    cr_assert_eq(tok2, 4);
    cr_assert_eq(bd_store_owner_acquire(a, 987654, d1, 30.0, 1, &tok, &err), BD_ENOTFOUND);

    /* Id blocks: above every stored id, disjoint, increasing. */
    cr_assert_eq(bd_store_id_block(a, &first1, &n, &err), 0, "%s", err.message);
    cr_assert_eq(bd_store_id_block(b, &first2, &n, &err), 0, "%s", err.message);
    cr_assert_gt(first1, trial);
    cr_assert_geq(first2, first1 + n);

    /* A member that leaves frees its studies at once. */
    cr_assert_eq(bd_store_cluster_heartbeat(b, d2, &err), 0, "%s", err.message);
    bd_store_cluster_leave(b, d2);
    cr_assert_eq(bd_store_owner_acquire(a, study, d1, 30.0, 0, &tok, &err), 0, "%s", err.message);
    cr_assert_eq(tok, 5);

    /* A live lease of a daemon without a heartbeat row (killed, its row
     * gone) is free: taken without steal. One with a fresh heartbeat is not. */
    cr_assert_eq(bd_store_owner_acquire(a, study, 987654321, 30.0, 1, &tok, &err), 0, "%s", err.message);
    cr_assert_eq(tok, 6);
    cr_assert_eq(bd_store_owner_acquire(a, study, d1, 30.0, 0, &tok, &err), 0, "%s", err.message);
    cr_assert_eq(tok, 7);
    int64_t d3 = 0;
    cr_assert_eq(bd_store_cluster_join(b, "http://c:1", &d3, &err), 0, "%s", err.message);
    cr_assert_eq(bd_store_owner_acquire(b, study, d3, 30.0, 0, &tok2, &err), BD_EBUSY);

    /* The clock: this host and the server are one machine here. */
    double skew = 99;
    cr_assert_eq(bd_store_clock_skew(a, &skew, &err), 0, "%s", err.message);
    cr_assert_lt(fabs(skew), 0.5, "skew %g", skew);
    bd_store_close(b);
    bd_store_close(a);
}
