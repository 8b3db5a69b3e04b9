/* sqlite_schema.c: the schema of the SQLite backend and its migrations.
 *
 * The version is PRAGMA user_version; PRAGMA application_id marks the file as
 * banditd's. migrations[i] takes a database from version i to i + 1 and runs
 * in its own transaction together with the version bump, so a database is
 * always at exactly one version. Never edit a released migration: append one.
 * A database at a version above this build's is refused (an older binary must
 * not write a schema it does not know).
 *
 * Conventions of version 1: ids that clients see (users, tokens, studies,
 * trials) are AUTOINCREMENT, so a deleted study's ids are never reused; times
 * are REAL seconds since the epoch; optional references (resume_from,
 * finished_at, events.trial_id) are NULL when absent; a final value or
 * measurement reported as null (diverged) is stored as value NULL with
 * has_value = 1; states and event types are stored by name. */
#include <stdio.h>

#include "sqlite_internal.h"

#define BD_APPLICATION_ID 0x626e6474 /* "bndt" */

static const char *const migrations[] = {
    /* 0 -> 1: the model described in store.h. */
    "CREATE TABLE users ("
    "  id         INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  name       TEXT NOT NULL,"
    "  is_admin   INTEGER NOT NULL DEFAULT 0 CHECK (is_admin IN (0, 1)),"
    "  created_at REAL NOT NULL"
    ");"
    "CREATE UNIQUE INDEX users_name ON users (name);"

    "CREATE TABLE tokens ("
    "  id         INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  user_id    INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,"
    "  hash       BLOB NOT NULL CHECK (length(hash) = 32),"
    "  created_at REAL NOT NULL,"
    "  revoked    INTEGER NOT NULL DEFAULT 0 CHECK (revoked IN (0, 1))"
    ");"
    "CREATE INDEX tokens_user ON tokens (user_id);"

    "CREATE TABLE studies ("
    "  id         INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  user_id    INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,"
    "  name       TEXT NOT NULL,"
    "  definition TEXT NOT NULL,"
    "  created_at REAL NOT NULL"
    ");"
    "CREATE INDEX studies_user ON studies (user_id, id);"

    "CREATE TABLE trials ("
    "  id               INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  study_id         INTEGER NOT NULL REFERENCES studies (id) ON DELETE CASCADE,"
    "  config_id        INTEGER NOT NULL CHECK (config_id >= 0),"
    "  config           TEXT NOT NULL,"
    "  budget           REAL NOT NULL,"
    "  resume_from      INTEGER,"
    "  extra            TEXT,"
    "  state            TEXT NOT NULL"
    "                   CHECK (state IN ('running', 'completed', 'stopped', 'failed', 'expired')),"
    "  worker           TEXT,"
    "  created_at       REAL NOT NULL,"
    "  lease_expires_at REAL NOT NULL,"
    "  finished_at      REAL,"
    "  has_value        INTEGER NOT NULL DEFAULT 0 CHECK (has_value IN (0, 1)),"
    "  value            REAL,"
    "  timeout          INTEGER NOT NULL DEFAULT 0 CHECK (timeout IN (0, 1)),"
    "  reason           TEXT"
    ");"
    "CREATE INDEX trials_study ON trials (study_id, id);"
    "CREATE INDEX trials_lease ON trials (state, lease_expires_at) WHERE state = 'running';"
    /* A new configuration is its own config_id, which is only known after the insert. */
    "CREATE TRIGGER trials_config_self AFTER INSERT ON trials WHEN NEW.config_id = 0 BEGIN"
    "  UPDATE trials SET config_id = NEW.id WHERE id = NEW.id;"
    "END;"

    /* No AUTOINCREMENT here: event ids are never handed out, and a plain rowid
     * is still larger than every existing one, so the order holds; it saves a
     * sqlite_sequence page write on every measurement. */
    "CREATE TABLE events ("
    "  id              INTEGER PRIMARY KEY,"
    "  study_id        INTEGER NOT NULL REFERENCES studies (id) ON DELETE CASCADE,"
    "  trial_id        INTEGER REFERENCES trials (id) ON DELETE CASCADE,"
    "  type            TEXT NOT NULL CHECK (type IN ('created', 'measurement', 'completed', 'failed',"
    "                                                'expired', 'stopped')),"
    "  step            REAL NOT NULL DEFAULT 0,"
    "  has_value       INTEGER NOT NULL DEFAULT 0 CHECK (has_value IN (0, 1)),"
    "  value           REAL,"
    "  timeout         INTEGER NOT NULL DEFAULT 0 CHECK (timeout IN (0, 1)),"
    "  elapsed_seconds REAL,"
    "  created_at      REAL NOT NULL"
    ");"
    "CREATE INDEX events_study ON events (study_id, id);"
    "CREATE INDEX events_trial ON events (trial_id, id);"

    "CREATE TABLE idempotency ("
    "  user_id     INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,"
    "  key         TEXT NOT NULL,"
    "  fingerprint TEXT NOT NULL,"
    "  response    TEXT NOT NULL,"
    "  created_at  REAL NOT NULL,"
    "  PRIMARY KEY (user_id, key)"
    ") WITHOUT ROWID;"
    "CREATE INDEX idempotency_created ON idempotency (created_at);",

    /* 1 -> 2: the problem instance a trial runs on (algorithm configuration):
     * its index in the study's "instances" list and its name, NULL for none. */
    "ALTER TABLE trials ADD COLUMN instance_index INTEGER;"
    "ALTER TABLE trials ADD COLUMN instance_name TEXT;"
    "CREATE INDEX trials_study_instance ON trials (study_id, instance_index, id) WHERE instance_index IS NOT NULL;"
    /* One row the daemon rewrites to learn whether the disk takes writes
     * again after a failed commit (bd_store_probe). */
    "CREATE TABLE probe (id INTEGER PRIMARY KEY CHECK (id = 1), at REAL NOT NULL);",

    /* 2 -> 3: a user's studies by name (creating a study checks that its
     * name is free; GET /v1/studies?name=), without scanning every study of
     * the user under the store lock. */
    "CREATE INDEX studies_user_name ON studies (user_id, name, id);",

    /* 3 -> 4: a user's own quotas, set by an admin; NULL: the daemon's
     * default (--max-studies-per-user, --max-definition-bytes-per-user).
     * A study's definition size in bytes, so that a user's usage is read
     * from an index (user_id, definition_bytes) instead of every
     * definition: creating a study checks it. */
    "ALTER TABLE users ADD COLUMN max_studies INTEGER;"
    "ALTER TABLE users ADD COLUMN max_definition_bytes INTEGER;"
    "ALTER TABLE studies ADD COLUMN definition_bytes INTEGER NOT NULL DEFAULT 0;"
    "UPDATE studies SET definition_bytes = length(CAST(definition AS BLOB));"
    "CREATE INDEX studies_user_bytes ON studies (user_id, definition_bytes);",

    /* 4 -> 5: trials a user gave rather than the scheduler proposed
     * (POST /v1/studies/{id}/trials): origin 'enqueued' (handed out by a
     * later suggest) or 'warm_start' (added completed, with its value);
     * NULL: suggested. And the configs enqueued but not yet handed out, in
     * order: a suggest that hands one out deletes it in its transaction. */
    "ALTER TABLE trials ADD COLUMN origin TEXT CHECK (origin IN ('enqueued', 'warm_start'));"
    "CREATE TABLE enqueued ("
    "  id         INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  study_id   INTEGER NOT NULL REFERENCES studies (id) ON DELETE CASCADE,"
    "  config     TEXT NOT NULL,"
    "  created_at REAL NOT NULL"
    ");"
    "CREATE INDEX enqueued_study ON enqueued (study_id, id);",

    /* 5 -> 6: study lifecycle and metadata (issue 17). A paused study hands
     * out no trials; its running trials still report. A study's metadata
     * and a trial's user_attrs are JSON objects of the user's own, NULL
     * when empty; neither is part of the definition (so not of the
     * "if_exists": "load" comparison) nor of any event. */
    "ALTER TABLE studies ADD COLUMN paused INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1));"
    "ALTER TABLE studies ADD COLUMN metadata TEXT;"
    "ALTER TABLE trials ADD COLUMN user_attrs TEXT;",

    /* 6 -> 7: several objectives and constraints (issue 41). The metrics a
     * trial reported, as a JSON object text ({"val_error": 0.1,
     * "latency_ms": 12}), on its completion and on each measurement: the
     * engine rebuilds every objective's loss and the constraint violation
     * from them on replay. NULL in a study with one objective and no
     * constraints, as every row stored before. A trial's feasible: 1 when
     * every constraint held, 0 when not; NULL in a study without
     * constraints (the best-first order puts feasible trials first). */
    "ALTER TABLE trials ADD COLUMN metric_values TEXT;"
    "ALTER TABLE trials ADD COLUMN feasible INTEGER CHECK (feasible IN (0, 1));"
    "ALTER TABLE events ADD COLUMN metric_values TEXT;",
};

#define NMIGRATIONS ((int)(sizeof migrations / sizeof migrations[0]))
_Static_assert(NMIGRATIONS == BD_STORE_SCHEMA_LATEST, "the SQLite migrations end at the schema store.h describes");

int bd_sqlite_schema_latest(void)
{
    return NMIGRATIONS;
}

/* The single integer a query such as "PRAGMA user_version" answers. */
static int query_int(sqlite3 *db, const char *sql, int *value, bd_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *value = sqlite3_column_int(st, 0);
        rc = SQLITE_OK;
    }
    if (rc != SQLITE_OK)
        bd_err_set(err, BD_ESTORAGE, NULL, "storage: %s: %s", sql, sqlite3_errmsg(db));
    sqlite3_finalize(st); /* repeats the step's code, handled above */
    return rc == SQLITE_OK ? 0 : BD_ESTORAGE;
}

static int exec(sqlite3 *db, const char *sql, const char *what, bd_err *err)
{
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK)
        bd_err_set(err, BD_ESTORAGE, NULL, "storage: %s: %s", what, msg ? msg : sqlite3_errstr(rc));
    sqlite3_free(msg);
    return rc == SQLITE_OK ? 0 : BD_ESTORAGE;
}

/* Refuses files that are someone else's, or from a newer banditd. */
static int check_owner(sqlite3 *db, int version, bd_err *err)
{
    int app_id = 0, objects = 0;
    int ret = query_int(db, "PRAGMA application_id", &app_id, err);
    if (ret)
        return ret;
    if (app_id != 0 && app_id != BD_APPLICATION_ID)
        return bd_err_set(err, BD_ESTORAGE, NULL, "storage: not a banditd database (application_id %#x)",
                          (unsigned)app_id);
    if (version > NMIGRATIONS)
        return bd_err_set(err, BD_ESTORAGE, NULL,
                          "storage: database schema version %d is newer than this build's (%d)", version,
                          NMIGRATIONS);
    if (app_id == 0) {
        ret = query_int(db, "SELECT count(*) FROM sqlite_master", &objects, err);
        if (ret)
            return ret;
        if (version != 0 || objects != 0)
            return bd_err_set(err, BD_ESTORAGE, NULL, "storage: not a banditd database (it has other tables)");
    }
    return 0;
}

/* Takes the database from version to version + 1 unless another process did. */
static int migrate_one(sqlite3 *db, int version, bd_err *err)
{
    char bump[64];
    int now = 0;
    int ret = exec(db, "BEGIN IMMEDIATE", "begin migration", err);
    if (ret)
        return ret;
    ret = query_int(db, "PRAGMA user_version", &now, err);
    if (ret || now > version)
        goto out;
    ret = exec(db, migrations[version], "migration", err);
    if (ret)
        goto out;
    snprintf(bump, sizeof bump, "PRAGMA user_version = %d", version + 1);
    ret = exec(db, bump, "set schema version", err);
    if (!ret && version == 0) {
        snprintf(bump, sizeof bump, "PRAGMA application_id = %d", BD_APPLICATION_ID);
        ret = exec(db, bump, "set application id", err);
    }
    if (!ret)
        ret = exec(db, "COMMIT", "commit migration", err);
out:
    if (!sqlite3_get_autocommit(db) && exec(db, "ROLLBACK", "roll back migration", NULL))
        fprintf(stderr, "banditd: storage: rolling back a failed migration failed: %s\n", sqlite3_errmsg(db));
    return ret;
}

/* Migration 1's CHECK constraints that list names with IN: SQLite codes
 * such a list (more than two values) as an ephemeral index it builds on
 * every insert or update the constraint checks (EXPLAIN: OpenEphemeral and
 * an IdxInsert per name; about 2% of the daemon's CPU under load, most
 * requests insert an event and many a trial, tests/bench/README.md). The
 * same condition written as a chain of = and OR is a few comparisons. The
 * stored rows satisfy both forms, so the table definitions are edited in
 * place, as SQLite documents for a constraint change that leaves every row
 * valid (lang_altertable.html, section 7: writable_schema, then the schema
 * cookie bumped): once, on the first open by a build with this rewrite; it
 * is not a schema version, since the logical model is the same and an older
 * build reads the edited file as before. The IN texts are migration 1's, to
 * the space. */
static const struct in_check {
    const char *table, *in_form, *or_form;
} in_checks[] = {
    {"trials", "state IN ('running', 'completed', 'stopped', 'failed', 'expired')",
     "(state = 'running' OR state = 'completed' OR state = 'stopped' OR state = 'failed' OR state = 'expired')"},
    {"events",
     "type IN ('created', 'measurement', 'completed', 'failed',"
     "                                                'expired', 'stopped')",
     "(type = 'created' OR type = 'measurement' OR type = 'completed' OR type = 'failed' OR "
     "type = 'expired' OR type = 'stopped')"},
};
#define N_IN_CHECKS ((int)(sizeof in_checks / sizeof in_checks[0]))

/* How many of the tables still hold their IN form; < 0 on error. */
static int in_checks_left(sqlite3 *db, bd_err *err)
{
    sqlite3_stmt *st = NULL;
    int left = 0, rc = sqlite3_prepare_v2(
                      db, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ? AND instr(sql, ?) > 0",
                      -1, &st, NULL);
    for (int i = 0; rc == SQLITE_OK && i < N_IN_CHECKS; i++) {
        sqlite3_reset(st);
        rc = sqlite3_bind_text(st, 1, in_checks[i].table, -1, SQLITE_STATIC);
        if (rc == SQLITE_OK)
            rc = sqlite3_bind_text(st, 2, in_checks[i].in_form, -1, SQLITE_STATIC);
        if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
            left += sqlite3_column_int(st, 0);
            rc = SQLITE_OK;
        }
    }
    if (rc != SQLITE_OK)
        bd_err_set(err, BD_ESTORAGE, NULL, "storage: reading the table definitions: %s", sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return rc == SQLITE_OK ? left : BD_ESTORAGE;
}

static int rewrite_in_checks(sqlite3 *db, bd_err *err)
{
    int left = in_checks_left(db, err), version = 0;
    if (left <= 0)
        return left;
    int ret = exec(db, "BEGIN IMMEDIATE; PRAGMA writable_schema = ON", "begin rewriting CHECK constraints", err);
    sqlite3_stmt *st = NULL;
    if (!ret && sqlite3_prepare_v2(db, "UPDATE sqlite_schema SET sql = replace(sql, ?, ?) "
                                       "WHERE type = 'table' AND name = ?", -1, &st, NULL) != SQLITE_OK)
        ret = bd_err_set(err, BD_ESTORAGE, NULL, "storage: rewriting CHECK constraints: %s", sqlite3_errmsg(db));
    for (int i = 0; !ret && i < N_IN_CHECKS; i++) {
        sqlite3_reset(st);
        if (sqlite3_bind_text(st, 1, in_checks[i].in_form, -1, SQLITE_STATIC) != SQLITE_OK ||
            sqlite3_bind_text(st, 2, in_checks[i].or_form, -1, SQLITE_STATIC) != SQLITE_OK ||
            sqlite3_bind_text(st, 3, in_checks[i].table, -1, SQLITE_STATIC) != SQLITE_OK ||
            sqlite3_step(st) != SQLITE_DONE)
            ret = bd_err_set(err, BD_ESTORAGE, NULL, "storage: rewriting the CHECK constraints of %s: %s",
                             in_checks[i].table, sqlite3_errmsg(db));
    }
    sqlite3_finalize(st);
    /* RESET: writable_schema off, and this connection parses the edited
     * definitions again (a definition SQLite could not parse fails here,
     * inside the transaction); the cookie tells any other connection. */
    if (!ret)
        ret = exec(db, "PRAGMA writable_schema = RESET", "reload the schema", err);
    if (!ret)
        ret = query_int(db, "PRAGMA schema_version", &version, err);
    if (!ret) {
        char bump[64];
        snprintf(bump, sizeof bump, "PRAGMA schema_version = %d", version + 1);
        ret = exec(db, bump, "bump the schema cookie", err);
    }
    if (!ret && (left = in_checks_left(db, err)) != 0)
        ret = left < 0 ? left : bd_err_set(err, BD_ESTORAGE, NULL, "storage: a CHECK constraint was not rewritten");
    if (!ret)
        ret = exec(db, "SELECT state FROM trials LIMIT 0; SELECT type FROM events LIMIT 0", "read the tables", err);
    if (!ret)
        ret = exec(db, "COMMIT", "commit the rewritten CHECK constraints", err);
    if (!sqlite3_get_autocommit(db)) {
        if (exec(db, "ROLLBACK", "roll back the CHECK rewrite", NULL))
            fprintf(stderr, "banditd: storage: rolling back the CHECK rewrite failed: %s\n", sqlite3_errmsg(db));
        (void)exec(db, "PRAGMA writable_schema = RESET", "reload the schema", NULL);
    }
    return ret;
}

int bd_sqlite_migrate(sqlite3 *db, int *version, bd_err *err)
{
    int v = 0;
    int ret = query_int(db, "PRAGMA user_version", &v, err);
    if (!ret)
        ret = check_owner(db, v, err);
    for (; !ret && v < NMIGRATIONS; v++)
        ret = migrate_one(db, v, err);
    if (!ret)
        ret = query_int(db, "PRAGMA user_version", &v, err);
    if (!ret && v != NMIGRATIONS)
        ret = bd_err_set(err, BD_ESTORAGE, NULL, "storage: schema is at version %d after migration, expected %d",
                         v, NMIGRATIONS);
    if (!ret)
        ret = rewrite_in_checks(db, err);
    if (!ret)
        *version = v;
    return ret;
}
