/* pg_sql.c: the text of every statement the PostgreSQL backend prepares once
 * per connection (see enum bd_pg_stmt), the counterparts of sqlite_sql.c with
 * the same column lists, read by position in pg_<table>.c: change both
 * together. Scans follow bd_pg_scan: id first, "id > $1", "LIMIT $2", own
 * parameters from $3, every one always passed (NULL for "any").
 *
 * Inserts that may hit a unique key say ON CONFLICT DO NOTHING RETURNING:
 * no row back is BD_ECONFLICT, and the request's transaction stays usable as
 * it does with SQLite (a failed statement would abort it in PostgreSQL). */
#include "pg_internal.h"

#define USER_COLS "id, name, is_admin, created_at, max_studies, max_definition_bytes"
#define STUDY_COLS "id, user_id, name, definition, created_at, paused, metadata"
#define TRIAL_COLS                                                                                  \
    "id, study_id, config_id, config, budget, resume_from, extra, state, worker, created_at, "      \
    "lease_expires_at, finished_at, has_value, value, timeout, reason, instance_index, instance_name, origin, "  \
    "user_attrs, metric_values, feasible"
#define EVENT_COLS                                                                                  \
    "id, study_id, trial_id, type, step, has_value, value, timeout, elapsed_seconds, created_at, metric_values"
#define TRIAL_FILTER "AND ($4::text IS NULL OR state = $4::text) AND ($5::bigint IS NULL OR instance_index = $5::bigint) "

const char *const bd_pg_sql[BD_PG_NSTMTS] = {
    [BD_PG_USER_CREATE] = "INSERT INTO users (name, is_admin, created_at) VALUES ($1, $2, $3) "
                          "ON CONFLICT DO NOTHING RETURNING id",
    [BD_PG_USER_BY_NAME] = "SELECT " USER_COLS " FROM users WHERE name = $1",
    [BD_PG_USER_BY_ID] = "SELECT " USER_COLS " FROM users WHERE id = $1",
    [BD_PG_USER_COUNT] = "SELECT count(*) FROM users",
    [BD_PG_USER_SET_LIMITS] = "UPDATE users SET max_studies = $2, max_definition_bytes = $3 WHERE id = $1",
    [BD_PG_USER_USAGE] = "SELECT count(*), coalesce(sum(definition_bytes), 0) FROM studies WHERE user_id = $1",
    [BD_PG_TOKEN_ADD] = "INSERT INTO tokens (user_id, hash, created_at) VALUES ($1, $2, $3) RETURNING id",
    [BD_PG_TOKEN_GET] = "SELECT hash, user_id FROM tokens WHERE id = $1 AND revoked = 0",
    [BD_PG_TOKEN_REVOKE] = "UPDATE tokens SET revoked = 1 WHERE id = $1",

    [BD_PG_STUDY_INSERT] = "INSERT INTO studies (user_id, name, definition, created_at, definition_bytes, paused, "
                           "metadata) VALUES ($1, $2, $3::text, $4, octet_length($3::text), $5, $6) RETURNING id",
    [BD_PG_STUDY_GET] = "SELECT " STUDY_COLS " FROM studies WHERE id = $1",
    [BD_PG_STUDY_SCAN_ALL] = "SELECT " STUDY_COLS " FROM studies WHERE id > $1 ORDER BY id LIMIT $2",
    [BD_PG_STUDY_SCAN_INDEX] = "SELECT id, user_id, NULL, NULL, created_at, paused, NULL FROM studies "
                               "WHERE id > $1 ORDER BY id LIMIT $2",
    [BD_PG_STUDY_SCAN_USER] = "SELECT " STUDY_COLS " FROM studies WHERE user_id = $3 AND id > $1 ORDER BY id LIMIT $2",
    [BD_PG_STUDY_SCAN_NAMED] = "SELECT " STUDY_COLS " FROM studies WHERE user_id = $3 AND name = $4 AND id > $1 "
                               "ORDER BY id LIMIT $2",
    [BD_PG_STUDY_DELETE] = "DELETE FROM studies WHERE id = $1",
    [BD_PG_STUDY_SET_PAUSED] = "UPDATE studies SET paused = $2 WHERE id = $1",
    [BD_PG_STUDY_SET_METADATA] = "UPDATE studies SET metadata = $2 WHERE id = $1",
    [BD_PG_STUDY_SET_DEFINITION] = "UPDATE studies SET definition = $2::text, definition_bytes = octet_length($2::text) "
                                   "WHERE id = $1",
    [BD_PG_TRIAL_COUNTS] = "SELECT study_id, state, count(*) FROM trials GROUP BY study_id, state",

    /* id NULL and config_id 0 are filled in by triggers (pg_schema.c). */
    [BD_PG_TRIAL_INSERT] =
        "INSERT INTO trials (study_id, config_id, config, budget, resume_from, extra, state, worker, "
        "created_at, lease_expires_at, finished_at, has_value, value, timeout, reason, id, instance_index, "
        "instance_name, origin, user_attrs, metric_values, feasible) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, "
        "$11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22) ON CONFLICT DO NOTHING RETURNING id",
    [BD_PG_TRIAL_GET] = "SELECT " TRIAL_COLS " FROM trials WHERE id = $1",
    [BD_PG_TRIAL_STATE] = "SELECT state FROM trials WHERE id = $1",
    [BD_PG_TRIAL_FINISH] = "UPDATE trials SET state = $2, finished_at = $3, has_value = $4, value = $5, timeout = $6, "
                           "reason = $7, metric_values = $8, feasible = $9 WHERE id = $1 AND state = 'running'",
    [BD_PG_TRIAL_SET_LEASE] = "UPDATE trials SET lease_expires_at = $2 WHERE id = $1",
    [BD_PG_TRIAL_SET_USER_ATTRS] = "UPDATE trials SET user_attrs = $2 WHERE id = $1",
    [BD_PG_TRIAL_SET_CONFIG] = "UPDATE trials SET config = $2 WHERE id = $1",
    [BD_PG_TRIAL_SCAN] = "SELECT " TRIAL_COLS " FROM trials WHERE study_id = $3 AND id > $1 " TRIAL_FILTER
                         "ORDER BY id LIMIT $2",
    /* 'running' is a literal so the partial index trials_lease applies. */
    [BD_PG_TRIAL_SCAN_EXPIRED] = "SELECT " TRIAL_COLS " FROM trials WHERE state = 'running' "
                                 "AND lease_expires_at < $3 AND id > $1 ORDER BY id LIMIT $2",
    /* No keyset ($1 is 0, unused but passed); $4 is the instance index. */
    [BD_PG_TRIAL_BEST_MIN] = "SELECT " TRIAL_COLS " FROM trials WHERE study_id = $3 AND state = 'completed' "
                             "AND value IS NOT NULL AND ($4::bigint IS NULL OR instance_index = $4::bigint) "
                             "AND $1::bigint = 0 ORDER BY coalesce(feasible, 1) DESC, value ASC, id LIMIT $2",
    [BD_PG_TRIAL_BEST_MAX] = "SELECT " TRIAL_COLS " FROM trials WHERE study_id = $3 AND state = 'completed' "
                             "AND value IS NOT NULL AND ($4::bigint IS NULL OR instance_index = $4::bigint) "
                             "AND $1::bigint = 0 ORDER BY coalesce(feasible, 1) DESC, value DESC, id LIMIT $2",
    [BD_PG_TRIAL_SCAN_STEPS] =
        "SELECT " TRIAL_COLS ", "
        "(SELECT count(*) FROM events WHERE events.trial_id = trials.id AND events.type = 'measurement'), "
        "(SELECT events.value FROM events WHERE events.trial_id = trials.id AND events.type = 'measurement' "
        "ORDER BY events.id DESC LIMIT 1) "
        "FROM trials WHERE study_id = $3 AND id > $1 " TRIAL_FILTER "ORDER BY id LIMIT $2",

    /* id NULL: the next after every stored one (the trigger events_id). */
    [BD_PG_EVENT_APPEND] = "INSERT INTO events (study_id, trial_id, type, step, has_value, value, timeout, "
                           "elapsed_seconds, created_at, id, metric_values) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, "
                           "$9, $10, $11) ON CONFLICT DO NOTHING RETURNING id",
    [BD_PG_EVENT_SCAN_STUDY] = "SELECT " EVENT_COLS " FROM events WHERE study_id = $3 AND id > $1 ORDER BY id LIMIT $2",
    [BD_PG_EVENT_SCAN_TRIAL] = "SELECT " EVENT_COLS " FROM events WHERE trial_id = $3 AND id > $1 ORDER BY id LIMIT $2",

    /* Above every stored id and, for trials, above every id ever used
     * (bd_sequence: a deleted study's ids are never reused). */
    [BD_PG_NEXT_IDS] = "SELECT (SELECT seq FROM bd_sequence WHERE name = 'trials') + 1, "
                       "(SELECT coalesce(max(id), 0) FROM events) + 1",

    [BD_PG_ENQUEUE_PUSH] = "INSERT INTO enqueued (study_id, config, created_at) VALUES ($1, $2, $3)",
    [BD_PG_ENQUEUE_POP] = "DELETE FROM enqueued WHERE id IN "
                          "(SELECT id FROM enqueued WHERE study_id = $1 ORDER BY id LIMIT $2)",
    [BD_PG_ENQUEUE_SCAN] = "SELECT id, config FROM enqueued WHERE study_id = $3 AND id > $1 ORDER BY id LIMIT $2",

    [BD_PG_PROBE] = "INSERT INTO probe (id, at) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET at = EXCLUDED.at",

    [BD_PG_IDEM_GET] = "SELECT fingerprint, response FROM idempotency WHERE user_id = $1 AND key = $2",
    [BD_PG_IDEM_PUT] = "INSERT INTO idempotency (user_id, key, fingerprint, response, created_at) "
                       "VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING RETURNING 1",
    [BD_PG_IDEM_PRUNE] = "DELETE FROM idempotency WHERE created_at < $1",
};
