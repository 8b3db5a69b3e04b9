/* sqlite_sql.c: the text of every statement the SQLite backend prepares once
 * per connection (see enum bd_sql_stmt). Column lists are shared with the
 * readers in sqlite_<table>.c, which read columns by position: change both
 * together. Scans follow the convention of bd_sqlite_scan: id first,
 * "id > ?1", "LIMIT ?2", own parameters from ?3. */
#include "sqlite_internal.h"

#define USER_COLS "id, name, is_admin, created_at, max_studies, max_definition_bytes"
#define STUDY_COLS "id, user_id, name, definition, created_at, paused, metadata"
#define TRIAL_COLS                                                                                  \
    "id, study_id, config_id, config, budget, resume_from, extra, state, worker, created_at, "      \
    "lease_expires_at, finished_at, has_value, value, timeout, reason, instance_index, instance_name, origin, "  \
    "user_attrs, metric_values, feasible"
#define EVENT_COLS                                                                                  \
    "id, study_id, trial_id, type, step, has_value, value, timeout, elapsed_seconds, created_at, metric_values"

const char *const bd_sql_text[BD_SQL_NSTMTS] = {
    [BD_SQL_BEGIN] = "BEGIN IMMEDIATE",
    [BD_SQL_COMMIT] = "COMMIT",
    [BD_SQL_ROLLBACK] = "ROLLBACK",
    [BD_SQL_SAVEPOINT] = "SAVEPOINT bd_request",
    [BD_SQL_RELEASE] = "RELEASE bd_request",
    [BD_SQL_ROLLBACK_TO] = "ROLLBACK TO bd_request",

    [BD_SQL_USER_CREATE] = "INSERT INTO users (name, is_admin, created_at) VALUES (?1, ?2, ?3)",
    [BD_SQL_USER_BY_NAME] = "SELECT " USER_COLS " FROM users WHERE name = ?1",
    [BD_SQL_USER_BY_ID] = "SELECT " USER_COLS " FROM users WHERE id = ?1",
    [BD_SQL_USER_COUNT] = "SELECT count(*) FROM users",
    [BD_SQL_USER_SET_LIMITS] = "UPDATE users SET max_studies = ?2, max_definition_bytes = ?3 WHERE id = ?1",
    /* From the index studies_user_bytes alone (schema 4). */
    [BD_SQL_USER_USAGE] = "SELECT count(*), total(definition_bytes) FROM studies WHERE user_id = ?1",
    [BD_SQL_TOKEN_ADD] = "INSERT INTO tokens (user_id, hash, created_at) VALUES (?1, ?2, ?3)",
    [BD_SQL_TOKEN_GET] = "SELECT hash, user_id FROM tokens WHERE id = ?1 AND revoked = 0",
    [BD_SQL_TOKEN_REVOKE] = "UPDATE tokens SET revoked = 1 WHERE id = ?1",

    [BD_SQL_STUDY_INSERT] = "INSERT INTO studies (user_id, name, definition, created_at, definition_bytes, paused, "
                            "metadata) VALUES (?1, ?2, ?3, ?4, length(CAST(?3 AS BLOB)), ?5, ?6)",
    [BD_SQL_STUDY_GET] = "SELECT " STUDY_COLS " FROM studies WHERE id = ?1",
    [BD_SQL_STUDY_SCAN_ALL] = "SELECT " STUDY_COLS " FROM studies WHERE id > ?1 ORDER BY id LIMIT ?2",
    /* STUDY_COLS without name and definition (NULL): what the daemon keeps of
     * every study, read at start without the definitions' bytes. */
    [BD_SQL_STUDY_SCAN_INDEX] = "SELECT id, user_id, NULL, NULL, created_at, paused, NULL FROM studies WHERE id > ?1 "
                                "ORDER BY id LIMIT ?2",
    [BD_SQL_STUDY_SCAN_USER] =
        "SELECT " STUDY_COLS " FROM studies WHERE user_id = ?3 AND id > ?1 ORDER BY id LIMIT ?2",
    [BD_SQL_STUDY_SCAN_NAMED] = "SELECT " STUDY_COLS " FROM studies WHERE user_id = ?3 AND name = ?4 AND id > ?1 "
                                "ORDER BY id LIMIT ?2",
    [BD_SQL_STUDY_DELETE] = "DELETE FROM studies WHERE id = ?1",
    [BD_SQL_STUDY_SET_PAUSED] = "UPDATE studies SET paused = ?2 WHERE id = ?1",
    [BD_SQL_STUDY_SET_METADATA] = "UPDATE studies SET metadata = ?2 WHERE id = ?1",
    [BD_SQL_STUDY_SET_DEFINITION] = "UPDATE studies SET definition = ?2, definition_bytes = length(CAST(?2 AS BLOB)) "
                                    "WHERE id = ?1",
    [BD_SQL_TRIAL_COUNTS] = "SELECT study_id, state, count(*) FROM trials GROUP BY study_id, state",

    /* config_id 0 is replaced by the new id (trigger trials_config_self); id
     * NULL takes the next AUTOINCREMENT id. */
    [BD_SQL_TRIAL_INSERT] =
        "INSERT INTO trials (study_id, config_id, config, budget, resume_from, extra, state, worker, "
        "created_at, lease_expires_at, finished_at, has_value, value, timeout, reason, id, instance_index, "
        "instance_name, origin, user_attrs, metric_values, feasible) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
        "?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22)",
    [BD_SQL_TRIAL_GET] = "SELECT " TRIAL_COLS " FROM trials WHERE id = ?1",
    [BD_SQL_TRIAL_STATE] = "SELECT state FROM trials WHERE id = ?1",
    [BD_SQL_TRIAL_FINISH] =
        "UPDATE trials SET state = ?2, finished_at = ?3, has_value = ?4, value = ?5, timeout = ?6, "
        "reason = ?7, metric_values = ?8, feasible = ?9 WHERE id = ?1 AND state = 'running'",
    [BD_SQL_TRIAL_SET_LEASE] = "UPDATE trials SET lease_expires_at = ?2 WHERE id = ?1",
    [BD_SQL_TRIAL_SET_USER_ATTRS] = "UPDATE trials SET user_attrs = ?2 WHERE id = ?1",
    [BD_SQL_TRIAL_SET_CONFIG] = "UPDATE trials SET config = ?2 WHERE id = ?1",
    [BD_SQL_TRIAL_SCAN] = "SELECT " TRIAL_COLS " FROM trials WHERE study_id = ?3 AND id > ?1 "
                          "AND (?4 IS NULL OR state = ?4) AND (?5 IS NULL OR instance_index = ?5) "
                          "ORDER BY id LIMIT ?2",
    /* 'running' is a literal so the partial index trials_lease applies. */
    [BD_SQL_TRIAL_SCAN_EXPIRED] = "SELECT " TRIAL_COLS " FROM trials WHERE state = 'running' "
                                  "AND lease_expires_at < ?3 AND id > ?1 ORDER BY id LIMIT ?2",
    /* Completed trials with a value, best first (?1 is unused: no keyset). */
    [BD_SQL_TRIAL_BEST_MIN] = "SELECT " TRIAL_COLS " FROM trials WHERE study_id = ?3 AND state = 'completed' "
                              "AND value IS NOT NULL AND (?5 IS NULL OR instance_index = ?5) AND ?1 = 0 "
                              "ORDER BY coalesce(feasible, 1) DESC, value ASC, id LIMIT ?2",
    [BD_SQL_TRIAL_BEST_MAX] = "SELECT " TRIAL_COLS " FROM trials WHERE study_id = ?3 AND state = 'completed' "
                              "AND value IS NOT NULL AND (?5 IS NULL OR instance_index = ?5) AND ?1 = 0 "
                              "ORDER BY coalesce(feasible, 1) DESC, value DESC, id LIMIT ?2",
    /* BD_SQL_TRIAL_SCAN plus each trial's measurement count and its latest
     * measurement's value (events_trial answers both), for the CSV export. */
    [BD_SQL_TRIAL_SCAN_STEPS] =
        "SELECT " TRIAL_COLS ", "
        "(SELECT count(*) FROM events WHERE events.trial_id = trials.id AND events.type = 'measurement'), "
        "(SELECT events.value FROM events WHERE events.trial_id = trials.id AND events.type = 'measurement' "
        "ORDER BY events.id DESC LIMIT 1) "
        "FROM trials WHERE study_id = ?3 AND id > ?1 "
        "AND (?4 IS NULL OR state = ?4) AND (?5 IS NULL OR instance_index = ?5) ORDER BY id LIMIT ?2",

    [BD_SQL_EVENT_APPEND] =
        "INSERT INTO events (study_id, trial_id, type, step, has_value, value, timeout, elapsed_seconds, "
        "created_at, id, metric_values) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    [BD_SQL_EVENT_SCAN_STUDY] = "SELECT " EVENT_COLS " FROM events WHERE study_id = ?3 AND id > ?1 "
                                "ORDER BY id LIMIT ?2",
    [BD_SQL_EVENT_SCAN_TRIAL] = "SELECT " EVENT_COLS " FROM events WHERE trial_id = ?3 AND id > ?1 "
                                "ORDER BY id LIMIT ?2",

    /* The first ids the engine may hand out: above every stored id and, for
     * trials, above every id AUTOINCREMENT ever gave (a deleted study's ids
     * are never reused). */
    [BD_SQL_NEXT_IDS] = "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'trials'), 0), "
                        "coalesce((SELECT max(id) FROM trials), 0)) + 1, "
                        "coalesce((SELECT max(id) FROM events), 0) + 1",

    [BD_SQL_ENQUEUE_PUSH] = "INSERT INTO enqueued (study_id, config, created_at) VALUES (?1, ?2, ?3)",
    [BD_SQL_ENQUEUE_POP] = "DELETE FROM enqueued WHERE id IN "
                           "(SELECT id FROM enqueued WHERE study_id = ?1 ORDER BY id LIMIT ?2)",
    [BD_SQL_ENQUEUE_SCAN] = "SELECT id, config FROM enqueued WHERE study_id = ?3 AND id > ?1 ORDER BY id LIMIT ?2",

    [BD_SQL_PROBE] = "INSERT OR REPLACE INTO probe (id, at) VALUES (1, ?1)",

    [BD_SQL_IDEM_GET] = "SELECT fingerprint, response FROM idempotency WHERE user_id = ?1 AND key = ?2",
    [BD_SQL_IDEM_PUT] = "INSERT INTO idempotency (user_id, key, fingerprint, response, created_at) "
                        "VALUES (?1, ?2, ?3, ?4, ?5)",
    [BD_SQL_IDEM_PRUNE] = "DELETE FROM idempotency WHERE created_at < ?1",
};
