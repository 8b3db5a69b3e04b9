/* store.h: the persistence interface the engine uses. No SQL leaves storage/.
 * Two backends implement it (store_ops.h; store.c forwards each call): SQLite
 * (sqlite_*.c) for a path, PostgreSQL (pg_*.c, libpq) for a postgresql:// or
 * postgres:// URL, with the same semantics (below) and the same model.
 *
 * Several daemons on one PostgreSQL database (opts->cluster, "cluster mode"
 * at the end of this file): each study has an ownership lease with a fencing
 * token, checked in the transaction of every write. Without cluster mode each
 * backend refuses a second daemon on the same database (schema).
 *
 * Model:
 *   users        (id, name unique, is_admin, created_at)
 *   tokens       (id, user_id, hash[32], created_at, revoked)     hash only, never the token
 *   studies      (id, user_id, name, definition JSON text, created_at,
 *                 paused, metadata JSON object text or NULL)
 *   trials       (id, study_id, config_id, config JSON, budget, resume_from,
 *                 extra JSON, state, worker, created_at, lease_expires_at,
 *                 finished_at, value, reason)
 *                (schema 5: origin, NULL for suggested trials)
 *                (schema 6: user_attrs JSON object text or NULL)
                (schema 7: metric_values JSON object text or NULL, feasible 0/1 or NULL)
 *   enqueued     (id, study_id, config JSON, created_at)  configs a user
 *                queued for the study's next suggests, oldest first
 *   events       (id, study_id, trial_id, type, step, value, timeout,
 *                 elapsed_seconds, created_at)  the ordered log schedulers replay
                (schema 7: metric_values JSON object text or NULL)
 *   idempotency  (user_id, key, fingerprint, response JSON, created_at)
 *
 * Transactions: bd_store_begin/commit/rollback bracket every state change of a
 * request; the engine commits before it answers. The store is thread-safe: one
 * connection behind a mutex; begin takes the mutex and commit/rollback release
 * it, so a caller between begin and commit owns the database. Calls made
 * outside begin/commit lock for their own duration.
 *
 * Group commit: a request's transaction is a savepoint inside a shared outer
 * transaction (the batch). bd_store_release ends the request's part and gives
 * a ticket without waiting; bd_store_wait(ticket) returns once that batch is
 * committed: the first waiter commits it, and everything other requests
 * released meanwhile goes to disk with it, in one COMMIT (and one sync with
 * BD_SYNC_FULL). bd_store_commit is release + wait. Until the batch commits,
 * other calls on the connection already see the released work, so a caller
 * that acts on it (the engine's schedulers) must not acknowledge anything
 * before its own wait returns. If a batch's COMMIT fails, everything in it is
 * rolled back, every waiter of that batch gets BD_ESTORAGE, and the store
 * refuses bd_store_begin until bd_store_recovered: whoever kept state derived
 * from released work must rebuild it from storage first. Both backends run
 * this protocol through group_commit.h (their SQL only differs), and read
 * long results in batches through scan.h.
 *
 * Strings returned in rows are new (caller frees with bd_store_*_row_clear).
 * Every function returns 0 or a negative BD_E* code (BD_ENOTFOUND when a row
 * is missing, BD_ECONFLICT on a unique violation, BD_ESTORAGE otherwise with
 * the database's message in err). */
#ifndef BD_STORE_H
#define BD_STORE_H

#include <stdatomic.h>
#include <stdint.h>

#include "../server/common.h"
#include "../server/event_type.h"

typedef struct bd_store bd_store;

typedef enum {
    BD_SYNC_NORMAL = 0, /* WAL + synchronous=NORMAL: survives process crashes; an OS crash may lose the last commits */
    BD_SYNC_FULL = 1    /* WAL + synchronous=FULL: every commit is on disk before the answer */
} bd_sync_mode;

typedef struct bd_store_opts {
    bd_sync_mode sync;
    int cluster; /* PostgreSQL: share the schema with peer daemons (cluster mode below) */
    /* The caller's HTTP requests in progress, reads too (the engine counts them): a
     * committer holds its batch open for others to join only while another
     * is in progress. NULL: always (group_commit.h). */
    const atomic_int *busy;
} bd_store_opts;

/* Opens (creating if needed) the database at path and migrates its schema to
 * the current version. ":memory:" works for tests; a postgresql:// or
 * postgres:// URL opens PostgreSQL (opts->sync does not apply there). *out
 * is new. */
int bd_store_open(const char *path, const bd_store_opts *opts, bd_store **out, bd_err *err) BD_MUST_CHECK;
/* Whether name is a PostgreSQL URL (bd_store_open hands it to PostgreSQL). */
int bd_store_is_pg_url(const char *name);
void bd_store_close(bd_store *s); /* NULL-safe; checkpoints the WAL */
/* Schema version this build writes (and the one an opened database is at). */
int bd_store_schema_version(bd_store *s);

int bd_store_begin(bd_store *s, bd_err *err) BD_MUST_CHECK;
int bd_store_commit(bd_store *s, bd_err *err) BD_MUST_CHECK; /* release + wait; on failure nothing of it persists */
void bd_store_rollback(bd_store *s); /* undoes this request's work only; releases the lock */
/* Ends the caller's transaction keeping its work, releases the lock, and
 * names the batch that will commit it in *ticket. */
int bd_store_release(bd_store *s, uint64_t *ticket, bd_err *err) BD_MUST_CHECK;
/* Blocks until the batch named by ticket has ended: 0 if it committed,
 * BD_ESTORAGE if it failed. Must not be called holding a transaction. */
int bd_store_wait(bd_store *s, uint64_t ticket, bd_err *err) BD_MUST_CHECK;
/* How many batches have failed so far. */
uint64_t bd_store_failures(bd_store *s);
/* 1 when the latest batch committed and writes are taken; 0 while the store
 * refuses writes after a failed batch, and until a batch commits again. */
int bd_store_writable(bd_store *s);
/* Commits a one-row write (a batch of its own or the current one), to learn
 * whether the disk takes writes again. */
int bd_store_probe(bd_store *s, double now, bd_err *err) BD_MUST_CHECK;
/* The caller rebuilt what it derived from released work after the first
 * `failures` failed batches (read with bd_store_failures before it began):
 * bd_store_begin works again, unless another batch failed meanwhile. */
void bd_store_recovered(bd_store *s, uint64_t failures);
/* A ticket whose wait returns once everything released so far has ended
 * (the open batch, else the last one). */
uint64_t bd_store_current_ticket(bd_store *s);
/* Tests only: the next batch's COMMIT fails as a full disk would make it. */
void bd_store_fail_next_commit(bd_store *s);

/* ---- users and tokens ---- */

typedef struct bd_user {
    int64_t id;
    char name[64];
    int is_admin;
    double created_at;
    int64_t max_studies;          /* this user's quotas; -1: the daemon's default */
    int64_t max_definition_bytes;
} bd_user;

int bd_store_user_create(bd_store *s, const char *name, int is_admin, double now, int64_t *id, bd_err *err) BD_MUST_CHECK;
int bd_store_user_by_name(bd_store *s, const char *name, bd_user *out, bd_err *err) BD_MUST_CHECK;
int bd_store_user_by_id(bd_store *s, int64_t id, bd_user *out, bd_err *err) BD_MUST_CHECK;
int bd_store_user_count(bd_store *s, int64_t *count, bd_err *err) BD_MUST_CHECK;
/* Sets a user's quotas (-1: the daemon's default); BD_ENOTFOUND if no such user. */
int bd_store_user_set_limits(bd_store *s, int64_t user_id, int64_t max_studies, int64_t max_definition_bytes,
                             bd_err *err) BD_MUST_CHECK;
/* What a user's live studies take: how many, and their definitions' bytes. */
int bd_store_user_usage(bd_store *s, int64_t user_id, int64_t *studies, int64_t *definition_bytes,
                        bd_err *err) BD_MUST_CHECK;

int bd_store_token_add(bd_store *s, int64_t user_id, const uint8_t hash[32], double now, int64_t *token_id, bd_err *err) BD_MUST_CHECK;
/* The hash and owner of a non-revoked token (BD_ENOTFOUND if missing or revoked). */
int bd_store_token_get(bd_store *s, int64_t token_id, uint8_t hash[32], int64_t *user_id, bd_err *err) BD_MUST_CHECK;
int bd_store_token_revoke(bd_store *s, int64_t token_id, bd_err *err) BD_MUST_CHECK;

/* ---- studies ---- */

typedef struct bd_study_row {
    int64_t id;
    int64_t user_id;
    char *name;        /* new */
    char *definition;  /* new: the normalized study JSON */
    double created_at;
    int paused;        /* 1: suggest hands out nothing (issue 17) */
    char *metadata;    /* new: the user's JSON object text, or NULL for none ({}); not part of definition */
} bd_study_row;
void bd_store_study_row_clear(bd_study_row *row);

int bd_store_study_insert(bd_store *s, const bd_study_row *row, int64_t *id, bd_err *err) BD_MUST_CHECK;
int bd_store_study_get(bd_store *s, int64_t id, bd_study_row *out, bd_err *err) BD_MUST_CHECK;
/* Calls fn for each study in id order (all users when user_id == 0); stops
 * and returns fn's value when it is non-zero. The row is borrowed for the call. */
typedef int (*bd_study_fn)(const bd_study_row *row, void *arg);
int bd_store_study_each(bd_store *s, int64_t user_id, bd_study_fn fn, void *arg, bd_err *err) BD_MUST_CHECK;
/* Every study in id order with name and definition NULL: the daemon's index
 * of studies, read without their definitions. */
int bd_store_study_index_each(bd_store *s, bd_study_fn fn, void *arg, bd_err *err) BD_MUST_CHECK;
/* One page of user_id's studies (user_id >= 1), id ascending, with id >
 * after_id, at most limit (1..1000) of them; only those named name unless
 * name is NULL. Rows are borrowed for the call; fn non-zero stops. */
int bd_store_study_page(bd_store *s, int64_t user_id, const char *name, int64_t after_id, int64_t limit,
                        bd_study_fn fn, void *arg, bd_err *err) BD_MUST_CHECK;
/* Deletes the study and its trials, events (cascade). */
int bd_store_study_delete(bd_store *s, int64_t id, bd_err *err) BD_MUST_CHECK;
/* Sets a study's paused flag (0 or 1); BD_ENOTFOUND if no such study. */
int bd_store_study_set_paused(bd_store *s, int64_t id, int paused, bd_err *err) BD_MUST_CHECK;
/* Replaces a study's metadata with metadata (JSON object text, borrowed;
 * NULL: none); BD_ENOTFOUND if no such study. The caller validated it. */
int bd_store_study_set_metadata(bd_store *s, int64_t id, const char *metadata, bd_err *err) BD_MUST_CHECK;
/* Replaces a study's stored definition (JSON text, borrowed): it grows as
 * trials ask for parameters (define-by-run); BD_ENOTFOUND if no such study. */
int bd_store_study_set_definition(bd_store *s, int64_t id, const char *definition, bd_err *err) BD_MUST_CHECK;

/* ---- trials ---- */

typedef enum {
    BD_TRIAL_RUNNING = 0,
    BD_TRIAL_COMPLETED,
    BD_TRIAL_STOPPED,  /* stopped by the scheduler */
    BD_TRIAL_FAILED,
    BD_TRIAL_EXPIRED,  /* its lease ran out */
    BD_TRIAL_NSTATES
} bd_trial_state;
/* "running", "completed", ...; static. */
const char *bd_trial_state_name(bd_trial_state st);
/* Parses a state name; -1 if unknown. */
int bd_trial_state_parse(const char *name);
/* How many trials each study has in each state, one call per (study, state)
 * that has any, in one pass over the trials (the store lock held throughout:
 * for the start, before requests). fn non-zero stops. */
typedef int (*bd_trial_count_fn)(int64_t study_id, bd_trial_state state, int64_t count, void *arg);
int bd_store_trial_counts_each(bd_store *s, bd_trial_count_fn fn, void *arg, bd_err *err) BD_MUST_CHECK;

/* Who chose a trial's config. */
typedef enum {
    BD_ORIGIN_SUGGESTED = 0, /* the scheduler */
    BD_ORIGIN_ENQUEUED,      /* a user, enqueued; handed out by a suggest */
    BD_ORIGIN_WARM_START     /* a user, with its value: stored completed */
} bd_trial_origin;
/* "suggested", "enqueued", "warm_start"; static. */
const char *bd_trial_origin_name(bd_trial_origin origin);
/* The origin stored as name (NULL: suggested). */
bd_trial_origin bd_trial_origin_parse(const char *name);

typedef struct bd_trial_row {
    int64_t id;
    int64_t study_id;
    int64_t config_id;      /* id of the first trial with this config (== id for a new config) */
    char *config;           /* new: JSON object text */
    double budget;
    int64_t resume_from;    /* 0 = none */
    char *extra;            /* new: scheduler fields JSON text, or NULL */
    bd_trial_state state;
    char *worker;           /* new, or NULL */
    double created_at;
    double lease_expires_at;/* meaningful while running */
    double finished_at;     /* 0 while running */
    int has_value;          /* a final value was reported (complete) */
    double value;           /* as reported (not oriented); NAN when has_value && diverged */
    int timeout;            /* completed with status "timeout" */
    char *reason;           /* new, or NULL: why it stopped/failed/diverged */
    int has_instance;       /* it runs on a problem instance of the study: */
    int64_t instance_index; /*   that instance's index in the study's list */
    char *instance_name;    /*   new: and its name (NULL without an instance) */
    bd_trial_origin origin; /* who chose its config */
    char *user_attrs;       /* new: the user's JSON object text, or NULL for none ({}) */
    char *values;           /* new: the reported metrics as a JSON object text (schema 7: a study
                               with several objectives or constraints), or NULL */
    int constrained;        /* the study has constraints: feasible is meaningful (else stored NULL) */
    int feasible;           /*   1: every constraint held (a completed trial); 0: not, or not completed */
    int64_t steps;          /* measurements reported: bd_store_trial_each_with_steps only, else 0 */
    double last_step_value; /* the latest one's value: bd_store_trial_each_with_steps only, else NAN */
} bd_trial_row;
void bd_store_trial_row_clear(bd_trial_row *row);

/* Inserts a trial with id row->id (0: the next free one). If row->config_id
 * is 0 the new trial's own id is used. */
int bd_store_trial_insert(bd_store *s, const bd_trial_row *row, int64_t *id, bd_err *err) BD_MUST_CHECK;
int bd_store_trial_get(bd_store *s, int64_t id, bd_trial_row *out, bd_err *err) BD_MUST_CHECK;
/* Ends a running trial: state, finished_at, has_value/value/timeout, reason (may be NULL),
 * values and (when constrained) feasible. */
int bd_store_trial_finish(bd_store *s, const bd_trial_row *row, bd_err *err) BD_MUST_CHECK;
int bd_store_trial_set_lease(bd_store *s, int64_t id, double lease_expires_at, bd_err *err) BD_MUST_CHECK;
/* Replaces a trial's user_attrs (JSON object text, borrowed; NULL: none), in
 * any state; BD_ENOTFOUND if no such trial. The caller validated it. */
int bd_store_trial_set_user_attrs(bd_store *s, int64_t id, const char *user_attrs, bd_err *err) BD_MUST_CHECK;
/* Replaces a running trial's config (JSON object text, borrowed): a
 * parameter it asked for joins it; BD_ENOTFOUND if no such trial. */
int bd_store_trial_set_config(bd_store *s, int64_t id, const char *config, bd_err *err) BD_MUST_CHECK;

/* Trials of a study, id ascending, with id > after_id, at most limit of them,
 * filtered by state unless state < 0 and by instance index unless instance
 * < 0. Rows are borrowed for the call. */
typedef int (*bd_trial_fn)(const bd_trial_row *row, void *arg);
int bd_store_trial_each(bd_store *s, int64_t study_id, int state, int64_t instance, int64_t after_id,
                        int64_t limit, bd_trial_fn fn, void *arg, bd_err *err) BD_MUST_CHECK;
/* The completed trials of a study that have a value, best first (feasible
 * ones before infeasible ones, then smallest value first unless maximize,
 * ties by id), at most limit (1..1000), of one instance index unless
 * instance < 0. Rows are borrowed for the call. */
int bd_store_trial_each_best(bd_store *s, int64_t study_id, int maximize, int64_t instance, int64_t limit,
                             bd_trial_fn fn, void *arg, bd_err *err) BD_MUST_CHECK;
/* As bd_store_trial_each, with each row's steps (how many measurements it
 * has) and last_step_value (the latest one's value; NAN when there is none
 * or it was null) filled in by the same query. */
int bd_store_trial_each_with_steps(bd_store *s, int64_t study_id, int state, int64_t instance, int64_t after_id,
                                   int64_t limit, bd_trial_fn fn, void *arg, bd_err *err) BD_MUST_CHECK;
/* Running trials (any study) whose lease ended before now (index on state, lease). */
int bd_store_trial_each_expired(bd_store *s, double now, bd_trial_fn fn, void *arg, bd_err *err) BD_MUST_CHECK;

/* ---- enqueued configs: given by a user, handed out by the next suggests ---- */

/* Appends config (JSON object text) to the study's queue. */
int bd_store_enqueue_push(bd_store *s, int64_t study_id, const char *config, double now, bd_err *err) BD_MUST_CHECK;
/* Removes the n oldest configs of the study's queue (they were handed out). */
int bd_store_enqueue_pop(bd_store *s, int64_t study_id, int64_t n, bd_err *err) BD_MUST_CHECK;
/* The study's queued configs, oldest first; config borrowed for the call;
 * fn non-zero stops. */
typedef int (*bd_enqueued_fn)(const char *config, void *arg);
int bd_store_enqueue_each(bd_store *s, int64_t study_id, bd_enqueued_fn fn, void *arg, bd_err *err) BD_MUST_CHECK;

/* ---- events: the ordered log each scheduler is rebuilt from ---- */

/* bd_event_type (BD_EV_CREATED ... BD_EV_STOPPED) is in server/event_type.h. */

typedef struct bd_event_row {
    int64_t id;             /* global order; on append, 0 = the next free id */
    int64_t study_id;
    int64_t trial_id;
    bd_event_type type;
    double step;            /* MEASUREMENT */
    int has_value;
    double value;           /* as reported; NAN = diverged (null) */
    int timeout;
    double elapsed_seconds; /* NAN when not given */
    double created_at;
    char *values;           /* the reported metrics as a JSON object text (schema 7), or NULL:
                               borrowed on append; in a scan, borrowed for the call */
} bd_event_row;

int bd_store_event_append(bd_store *s, const bd_event_row *row, int64_t *id, bd_err *err) BD_MUST_CHECK;

/* The smallest trial and event ids never used (trial ids of deleted studies
 * included): the engine hands out ids from there, so a scheduler can see an
 * event's id before its transaction. */
int bd_store_next_ids(bd_store *s, int64_t *trial_id, int64_t *event_id, bd_err *err) BD_MUST_CHECK;
/* A study's events in order; rows borrowed for the call; fn non-zero stops. */
typedef int (*bd_event_fn)(const bd_event_row *row, void *arg);
int bd_store_event_each(bd_store *s, int64_t study_id, bd_event_fn fn, void *arg, bd_err *err) BD_MUST_CHECK;
/* One trial's events (for its measurements), in order. */
int bd_store_event_each_of_trial(bd_store *s, int64_t trial_id, bd_event_fn fn, void *arg, bd_err *err) BD_MUST_CHECK;

/* ---- idempotency: responses to POSTs that carried an Idempotency-Key ---- */

/* BD_ENOTFOUND if (user_id, key) was never stored; else *fingerprint and
 * *response are new strings. */
int bd_store_idem_get(bd_store *s, int64_t user_id, const char *key, char **fingerprint, char **response,
                      bd_err *err) BD_MUST_CHECK;
int bd_store_idem_put(bd_store *s, int64_t user_id, const char *key, const char *fingerprint,
                      const char *response, double now, bd_err *err) BD_MUST_CHECK;
/* Forgets records older than before (housekeeping). */
int bd_store_idem_prune(bd_store *s, double before, bd_err *err) BD_MUST_CHECK;

/* ---- cluster mode: several daemons on one PostgreSQL schema ----
 * Opened with opts->cluster (PostgreSQL only; the SQLite store answers
 * BD_EINVAL). Tables daemons (id, url, heartbeat) and study_owners
 * (study_id, daemon_id, token, expires_at): each study's lease; its token
 * grows by one whenever another daemon takes it (the fencing token).
 * Lease times are the database's clock. */

/* Creates the cluster tables if needed and registers this daemon (its
 * advertised url, borrowed) as a member: *daemon_id, never reused. */
int bd_store_cluster_join(bd_store *s, const char *url, int64_t *daemon_id, bd_err *err) BD_MUST_CHECK;
int bd_store_cluster_heartbeat(bd_store *s, int64_t daemon_id, bd_err *err) BD_MUST_CHECK;
/* Expires every lease of daemon_id and removes its row (a clean stop). */
void bd_store_cluster_leave(bd_store *s, int64_t daemon_id);
/* A block of ids unused by every member: [*first, *first + *count), above
 * every block handed out before (so above every stored trial and event id). */
int bd_store_id_block(bd_store *s, int64_t *first, int64_t *count, bd_err *err) BD_MUST_CHECK;
/* Takes or renews study_id's lease for lease seconds, committed at once
 * (outside any transaction of the caller): *token is unchanged when
 * daemon_id held it last, else the previous token + 1 (or 1). A lease live
 * under another daemon whose heartbeat is recent (10 s) is taken only when
 * that daemon's id is steal (a daemon found gone at its address; 0: none);
 * else BD_EBUSY (also when a peer's open transaction holds the lease row
 * for longer than the lock timeout, 250 ms). BD_ENOTFOUND when the study
 * does not exist. */
int bd_store_owner_acquire(bd_store *s, int64_t study_id, int64_t daemon_id, double lease, int steal,
                           int64_t *token, bd_err *err) BD_MUST_CHECK;
/* Inside the caller's transaction (bd_store_begin): checks that daemon_id
 * still holds the lease with token; else BD_EMOVED (field "study"), and the
 * caller must roll back. The fence: a takeover waits for this transaction's
 * commit (a renewal does not). lease is unused (bd_store_owner_renew_held
 * renews). */
int bd_store_owner_renew(bd_store *s, int64_t study_id, int64_t daemon_id, int64_t token, double lease,
                         bd_err *err) BD_MUST_CHECK;
/* Who holds study_id's lease (a plain read: it waits for no transaction). */
typedef struct bd_owner {
    int64_t daemon_id; /* 0: nobody ever held it */
    int64_t token;
    char url[256];     /* the holder's advertised URL ("" when its daemons row is gone) */
    double remaining;  /* seconds the lease still runs (0 when expired or released) */
    int live;          /* the lease runs and the holder's heartbeat is recent (10 s) */
} bd_owner;
int bd_store_owner_lookup(bd_store *s, int64_t study_id, bd_owner *out, bd_err *err) BD_MUST_CHECK;
/* Called with each lease a renewal extended (the store's lock is held: call nothing of it). */
typedef void (*bd_owner_fn)(void *arg, int64_t study_id, int64_t token);
/* Extends every live lease of daemon_id by lease seconds, in one statement
 * on the ownership connection; fn sees each. */
int bd_store_owner_renew_held(bd_store *s, int64_t daemon_id, double lease, bd_owner_fn fn, void *arg,
                              bd_err *err) BD_MUST_CHECK;
/* Expires the lease if daemon_id holds it with token (the token stays). */
void bd_store_owner_release(bd_store *s, int64_t study_id, int64_t daemon_id, int64_t token);
/* The database server's clock minus this process's wall clock (seconds),
 * read on the ownership connection (the midpoint of the round trip). */
int bd_store_clock_skew(bd_store *s, double *skew, bd_err *err) BD_MUST_CHECK;
/* Inside the caller's transaction (bd_store_begin): serializes it with every
 * other member's transaction that locks the same user, until it commits
 * (a study's name and the user's quotas are checked then written as one
 * step across daemons). Without cluster mode: nothing to do, 0. */
int bd_store_lock_user(bd_store *s, int64_t user_id, bd_err *err) BD_MUST_CHECK;

/* Copies the database name db (a path, or a PostgreSQL URL or connection
 * string) into out (size bytes, NUL-terminated, cut if longer) with every
 * value libpq would read as a password or other secret replaced by "***",
 * however it is spelled (user:PASSWORD@, password=, %70assword=,
 * password='...'): the text the daemon logs (pg_redact.c). */
void bd_store_redact_url(const char *db, char *out, size_t size);

#endif
