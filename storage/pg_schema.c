/* pg_schema.c: the schema of the PostgreSQL backend and its migrations.
 *
 * The tables live in the connection's current schema (the first of its
 * search_path; created if missing, so several daemons or test runs can share
 * one database in schemas of their own: options=-csearch_path=NAME in the
 * URL). The table bd_schema holds one row, the version: the version of the
 * logical model of store.h, the same numbers as the SQLite schema. The first
 * migration creates the model of SQLite schema 6 at once (there is no older
 * PostgreSQL schema to come from); later ones are appended. All a start needs
 * run in one transaction with the version bump (DDL is transactional here),
 * under a transaction-level advisory lock so two daemons starting together
 * migrate once. Never edit a released
 * migration. A schema at a version above this build's is refused.
 *
 * Conventions, as SQLite's: ids are bigint, times double precision seconds,
 * absent references and NAN values NULL (value NULL with has_value = 1 is a
 * diverged value), flags smallint 0/1, states and event types by name. Ids of
 * users, tokens, studies, trials and enqueued configs are SQLite's
 * AUTOINCREMENT, kept in bd_sequence by the trigger bd_autoincrement (not
 * PostgreSQL sequences, which a rollback does not give back); event ids are
 * the next after the largest stored (SQLite's rowid). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg_internal.h"

struct migration {
    int to;          /* the version this migration brings the schema to */
    const char *sql;
};

static const struct migration migrations[] = {
    {6,
     /* SQLite's sqlite_sequence: one counter per table, changed in the
      * inserting transaction (so a rolled-back insert gives its id back, and
      * the first token of a database is 1 even after a start that crashed
      * before its commit) and never lowered (a deleted row's id is never
      * reused). An insert without an id takes seq + 1; one with an id moves
      * seq up to it. */
     "CREATE TABLE bd_sequence (name text PRIMARY KEY, seq bigint NOT NULL);"
     "INSERT INTO bd_sequence (name, seq) VALUES ('users', 0), ('tokens', 0), ('studies', 0), ('trials', 0),"
     "  ('enqueued', 0);"
     "CREATE FUNCTION bd_autoincrement() RETURNS trigger LANGUAGE plpgsql AS $f$"
     "BEGIN"
     "  IF NEW.id IS NULL THEN"
     "    UPDATE bd_sequence SET seq = seq + 1 WHERE name = TG_TABLE_NAME RETURNING seq INTO NEW.id;"
     "  ELSE"
     "    UPDATE bd_sequence SET seq = NEW.id WHERE name = TG_TABLE_NAME AND seq < NEW.id;"
     "  END IF;"
     "  RETURN NEW;"
     "END $f$;"

     "CREATE TABLE users ("
     "  id                   bigint PRIMARY KEY,"
     "  name                 text NOT NULL,"
     "  is_admin             smallint NOT NULL DEFAULT 0 CHECK (is_admin IN (0, 1)),"
     "  created_at           double precision NOT NULL,"
     "  max_studies          bigint,"
     "  max_definition_bytes bigint"
     ");"
     "CREATE UNIQUE INDEX users_name ON users (name);"
     "CREATE TRIGGER users_id BEFORE INSERT ON users FOR EACH ROW EXECUTE FUNCTION bd_autoincrement();"

     "CREATE TABLE tokens ("
     "  id         bigint PRIMARY KEY,"
     "  user_id    bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,"
     "  hash       bytea NOT NULL CHECK (octet_length(hash) = 32),"
     "  created_at double precision NOT NULL,"
     "  revoked    smallint NOT NULL DEFAULT 0 CHECK (revoked IN (0, 1))"
     ");"
     "CREATE INDEX tokens_user ON tokens (user_id);"
     "CREATE TRIGGER tokens_id BEFORE INSERT ON tokens FOR EACH ROW EXECUTE FUNCTION bd_autoincrement();"

     "CREATE TABLE studies ("
     "  id               bigint PRIMARY KEY,"
     "  user_id          bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,"
     "  name             text NOT NULL,"
     "  definition       text NOT NULL,"
     "  created_at       double precision NOT NULL,"
     "  definition_bytes bigint NOT NULL DEFAULT 0,"
     "  paused           smallint NOT NULL DEFAULT 0 CHECK (paused IN (0, 1)),"
     "  metadata         text"
     ");"
     "CREATE INDEX studies_user ON studies (user_id, id);"
     "CREATE INDEX studies_user_name ON studies (user_id, name, id);"
     "CREATE INDEX studies_user_bytes ON studies (user_id, definition_bytes);"
     "CREATE TRIGGER studies_id BEFORE INSERT ON studies FOR EACH ROW EXECUTE FUNCTION bd_autoincrement();"

     "CREATE TABLE trials ("
     "  id               bigint PRIMARY KEY,"
     "  study_id         bigint NOT NULL REFERENCES studies (id) ON DELETE CASCADE,"
     "  config_id        bigint NOT NULL CHECK (config_id >= 0),"
     "  config           text NOT NULL,"
     "  budget           double precision NOT NULL,"
     "  resume_from      bigint,"
     "  extra            text,"
     "  state            text NOT NULL"
     "                   CHECK (state IN ('running', 'completed', 'stopped', 'failed', 'expired')),"
     "  worker           text,"
     "  created_at       double precision NOT NULL,"
     "  lease_expires_at double precision NOT NULL,"
     "  finished_at      double precision,"
     "  has_value        smallint NOT NULL DEFAULT 0 CHECK (has_value IN (0, 1)),"
     "  value            double precision,"
     "  timeout          smallint NOT NULL DEFAULT 0 CHECK (timeout IN (0, 1)),"
     "  reason           text,"
     "  instance_index   bigint,"
     "  instance_name    text,"
     "  origin           text CHECK (origin IN ('enqueued', 'warm_start')),"
     "  user_attrs       text"
     ");"
     "CREATE INDEX trials_study ON trials (study_id, id);"
     "CREATE INDEX trials_lease ON trials (state, lease_expires_at) WHERE state = 'running';"
     "CREATE INDEX trials_study_instance ON trials (study_id, instance_index, id) WHERE instance_index IS NOT NULL;"
     /* Ids as bd_autoincrement; a new configuration (config_id 0) is its own
      * config_id (triggers run in name order: trials_a_id first). */
     "CREATE TRIGGER trials_a_id BEFORE INSERT ON trials FOR EACH ROW EXECUTE FUNCTION bd_autoincrement();"
     "CREATE FUNCTION trials_config_self() RETURNS trigger LANGUAGE plpgsql AS $f$"
     "BEGIN"
     "  IF NEW.config_id = 0 THEN"
     "    NEW.config_id := NEW.id;"
     "  END IF;"
     "  RETURN NEW;"
     "END $f$;"
     "CREATE TRIGGER trials_b_config_self BEFORE INSERT ON trials FOR EACH ROW EXECUTE FUNCTION trials_config_self();"

     "CREATE TABLE events ("
     "  id              bigint PRIMARY KEY,"
     "  study_id        bigint NOT NULL REFERENCES studies (id) ON DELETE CASCADE,"
     "  trial_id        bigint REFERENCES trials (id) ON DELETE CASCADE,"
     "  type            text NOT NULL CHECK (type IN ('created', 'measurement', 'completed', 'failed',"
     "                                                'expired', 'stopped')),"
     "  step            double precision NOT NULL DEFAULT 0,"
     "  has_value       smallint NOT NULL DEFAULT 0 CHECK (has_value IN (0, 1)),"
     "  value           double precision,"
     "  timeout         smallint NOT NULL DEFAULT 0 CHECK (timeout IN (0, 1)),"
     "  elapsed_seconds double precision,"
     "  created_at      double precision NOT NULL"
     ");"
     "CREATE INDEX events_study ON events (study_id, id);"
     "CREATE INDEX events_trial ON events (trial_id, id);"
     "CREATE FUNCTION events_id() RETURNS trigger LANGUAGE plpgsql AS $f$"
     "BEGIN"
     "  IF NEW.id IS NULL THEN"
     "    NEW.id := (SELECT coalesce(max(id), 0) + 1 FROM events);"
     "  END IF;"
     "  RETURN NEW;"
     "END $f$;"
     "CREATE TRIGGER events_id BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION events_id();"

     "CREATE TABLE idempotency ("
     "  user_id     bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,"
     "  key         text NOT NULL,"
     "  fingerprint text NOT NULL,"
     "  response    text NOT NULL,"
     "  created_at  double precision NOT NULL,"
     "  PRIMARY KEY (user_id, key)"
     ");"
     "CREATE INDEX idempotency_created ON idempotency (created_at);"

     "CREATE TABLE probe (id integer PRIMARY KEY CHECK (id = 1), at double precision NOT NULL);"

     "CREATE TABLE enqueued ("
     "  id         bigint PRIMARY KEY,"
     "  study_id   bigint NOT NULL REFERENCES studies (id) ON DELETE CASCADE,"
     "  config     text NOT NULL,"
     "  created_at double precision NOT NULL"
     ");"
     "CREATE INDEX enqueued_study ON enqueued (study_id, id);"
     "CREATE TRIGGER enqueued_id BEFORE INSERT ON enqueued FOR EACH ROW EXECUTE FUNCTION bd_autoincrement();"},
    /* Several objectives and constraints (issue 41), as SQLite's 6 -> 7: the
     * metrics a trial and each measurement reported (JSON object text, NULL
     * in a one-objective study without constraints) and whether a trial was
     * feasible (NULL without constraints). */
    {7, "ALTER TABLE trials ADD COLUMN metric_values text;"
        "ALTER TABLE trials ADD COLUMN feasible smallint CHECK (feasible IN (0, 1));"
        "ALTER TABLE events ADD COLUMN metric_values text;"},
};

#define NMIGRATIONS ((int)(sizeof migrations / sizeof migrations[0]))
_Static_assert(BD_STORE_SCHEMA_LATEST == 7, "append a PostgreSQL migration to the new schema version");

/* The single value a query answers, as a new string (NULL for SQL NULL) in *out. */
static int query_text(PGconn *conn, const char *sql, char **out, bd_err *err)
{
    PGresult *res = PQexec(conn, sql);
    int ret = 0;
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
        ret = bd_err_set(err, BD_ESTORAGE, NULL, "storage: %s: %s", sql, PQresultErrorMessage(res));
    else
        *out = PQgetisnull(res, 0, 0) ? NULL : bd_xstrdup(PQgetvalue(res, 0, 0));
    PQclear(res);
    return ret;
}

static int query_int(PGconn *conn, const char *sql, int *out, bd_err *err)
{
    char *text = NULL;
    int ret = query_text(conn, sql, &text, err);
    if (!ret)
        *out = text ? atoi(text) : 0;
    free(text);
    return ret;
}

/* With a search_path whose first schema does not exist there is no current
 * schema to create tables in: create that schema (a plain identifier only). */
static int ensure_schema(PGconn *conn, bd_err *err)
{
    char *current = NULL, *path = NULL;
    int ret = query_text(conn, "SELECT current_schema()", &current, err);
    if (ret || current)
        goto out;
    if ((ret = query_text(conn, "SELECT btrim(split_part(current_setting('search_path'), ',', 1), ' \"')", &path,
                          err)))
        goto out;
    size_t n = path ? strlen(path) : 0;
    int plain = n > 0 && n < 64;
    for (size_t i = 0; plain && i < n; i++)
        plain = (path[i] >= 'a' && path[i] <= 'z') || path[i] == '_' || (i > 0 && path[i] >= '0' && path[i] <= '9');
    if (!plain) {
        ret = bd_err_set(err, BD_ESTORAGE, NULL,
                         "storage: no schema to create the tables in (the search_path names none that exists)");
        goto out;
    }
    char sql[128];
    snprintf(sql, sizeof sql, "CREATE SCHEMA IF NOT EXISTS %s", path);
    ret = bd_pg_exec_simple(conn, sql, err, "create schema");
out:
    free(current);
    free(path);
    return ret;
}

/* The version stored in bd_schema (0: a new, empty schema); refuses a schema
 * that has tables but no bd_schema (not banditd's). Inside the transaction. */
static int read_version(PGconn *conn, int *version, bd_err *err)
{
    int has_table = 0, tables = 0;
    int ret = query_int(conn,
                        "SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = current_schema() "
                        "AND tablename = 'bd_schema'",
                        &has_table, err);
    if (ret)
        return ret;
    if (has_table)
        return query_int(conn, "SELECT coalesce(max(version), 0) FROM bd_schema", version, err);
    ret = query_int(conn, "SELECT count(*) FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
                          "ON n.oid = c.relnamespace WHERE n.nspname = current_schema()",
                    &tables, err);
    if (!ret && tables > 0)
        ret = bd_err_set(err, BD_ESTORAGE, NULL, "storage: not a banditd database (its schema has other tables)");
    *version = 0;
    return ret;
}

int bd_pg_migrate(PGconn *conn, int *version, bd_err *err)
{
    int v = 0;
    int ret = ensure_schema(conn, err);
    if (ret)
        return ret;
    if ((ret = bd_pg_exec_simple(conn, "BEGIN", err, "begin migration")))
        return ret;
    /* One migrating daemon per schema at a time; released by COMMIT. */
    ret = bd_pg_exec_simple(conn, "SELECT pg_advisory_xact_lock(hashtext('banditd migrate ' || current_schema()))",
                            err, "lock for migration");
    if (!ret)
        ret = read_version(conn, &v, err);
    if (!ret && v > BD_STORE_SCHEMA_LATEST)
        ret = bd_err_set(err, BD_ESTORAGE, NULL, "storage: database schema version %d is newer than this build's (%d)",
                         v, BD_STORE_SCHEMA_LATEST);
    if (!ret && v == 0)
        ret = bd_pg_exec_simple(conn, "CREATE TABLE bd_schema (version integer NOT NULL);"
                                      "INSERT INTO bd_schema (version) VALUES (0)",
                                err, "create the version table");
    for (int i = 0; !ret && i < NMIGRATIONS; i++) {
        if (migrations[i].to <= v)
            continue;
        char bump[64];
        snprintf(bump, sizeof bump, "UPDATE bd_schema SET version = %d", migrations[i].to);
        if (!(ret = bd_pg_exec_simple(conn, migrations[i].sql, err, "migration")))
            ret = bd_pg_exec_simple(conn, bump, err, "set schema version");
        v = migrations[i].to;
    }
    if (!ret)
        ret = bd_pg_exec_simple(conn, "COMMIT", err, "commit migration");
    if (ret && PQtransactionStatus(conn) != PQTRANS_IDLE && bd_pg_exec_simple(conn, "ROLLBACK", NULL, "rollback"))
        fprintf(stderr, "banditd: storage: rolling back a failed migration failed: %s\n", PQerrorMessage(conn));
    if (!ret)
        *version = v;
    return ret;
}
