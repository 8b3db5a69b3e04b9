/* engine.h: studies, trials, leases, users and idempotency: everything the
 * HTTP layer asks for. The api/ layer parses HTTP and JSON syntax and maps
 * errors to statuses; the engine validates meaning, drives schedulers and
 * makes each request's state change one storage transaction that is on disk
 * before the function returns, so an answered request survives a crash.
 *
 * Concurrency: any number of threads may call in. Each study has a mutex held
 * around its scheduler calls and its transaction; the transaction then joins
 * a group commit (storage/store.h) and the call waits for it without the
 * study's mutex, so the study's next requests can share the same commit. If
 * a group commit fails, its requests answer BD_ESTORAGE and every study is
 * rebuilt from storage before the next request.
 *
 * Every function filling json_t **out gives a new reference (the response
 * body); on error *out is untouched and err says why (err->code == return).
 *
 * The types it shares with the engine's files (the handle, the options,
 * bd_caller, bd_request, bd_engine_stats) are in engine_types.h. */
#ifndef BD_ENGINE_H
#define BD_ENGINE_H

#include <jansson.h>
#include <stdint.h>

#include "common.h"
#include "engine_types.h"

/* Opens storage, creates the admin user and token on first start, reads the
 * index of studies (a study's scheduler is rebuilt from its events on its
 * first use, and dropped again when idle beyond the cache budget), and
 * starts the lease reaper. *out is new (bd_engine_close). */
int bd_engine_open(const bd_engine_opts *opts, bd_engine **out, bd_err *err) BD_MUST_CHECK;
/* Whether db (--db) names a PostgreSQL database (a URL) rather than a
 * SQLite file: the one test, so main and the store agree. */
int bd_engine_db_is_url(const char *db);
/* Stops the reaper and closes storage; callers must have stopped calling in. NULL-safe. */
void bd_engine_close(bd_engine *e);

/* Resolves a bearer token (the text after "Bearer "). BD_EAUTH if unknown,
 * malformed or revoked. */
int bd_engine_authenticate(bd_engine *e, const char *token, bd_caller *out, bd_err *err) BD_MUST_CHECK;

/* Waits until the group commit of ticket is on disk (committing the open
 * batch when no other thread is). BD_ESTORAGE when that batch failed: then
 * nothing of it was saved, and the engine rebuilds every study from storage
 * before the next request (bd_engine_recover_if_needed). */
int bd_engine_durable(bd_engine *e, uint64_t ticket, bd_err *err) BD_MUST_CHECK;

/* ---- studies ---- */
/* body: the study definition plus "if_exists": "error" (default) | "load" |
 * "create". A study name is unique per owner among live studies unless
 * "create" is given: with "error" a live study of the caller with that name
 * is BD_ECONFLICT (field "name"); with "load" that study is the answer when
 * its definition equals the body's (a body without "seed" matches any seed;
 * else BD_ECONFLICT naming the first differing top-level field) and *loaded
 * (may be NULL) is set to 1; otherwise a new study is created (*loaded = 0). */
int bd_engine_create_study(bd_engine *e, const bd_request *req, const json_t *body, json_t **out, int *loaded,
                           bd_err *err) BD_MUST_CHECK;
/* A page of who's studies: id > after, at most limit (1..1000), only those
 * named name unless it is NULL. Answers {"studies": [...], "next_after": id|null}. */
typedef struct bd_study_query {
    int64_t after;
    int64_t limit;
    const char *name; /* borrowed; NULL: any */
} bd_study_query;
int bd_engine_list_studies(bd_engine *e, const bd_caller *who, const bd_study_query *q, json_t **out,
                           bd_err *err) BD_MUST_CHECK;
/* Best-value history for plots: {"best": [{"trial_id", "finished_at",
 * "elapsed_seconds", "resource", "value"}...], "completed", "resource_total"}
 * with at most points (2..2000) points, the first and last improvement kept.
 * Scans the study's trials in pages without its mutex. */
int bd_engine_history(bd_engine *e, const bd_caller *who, int64_t study_id, int64_t points, json_t **out,
                      bd_err *err) BD_MUST_CHECK;
int bd_engine_get_study(bd_engine *e, const bd_caller *who, int64_t study_id, json_t **out, bd_err *err) BD_MUST_CHECK;
int bd_engine_delete_study(bd_engine *e, const bd_request *req, int64_t study_id, json_t **out, bd_err *err) BD_MUST_CHECK;
/* Pauses (paused 1) or resumes (0) the study: -> the study. body: NULL or
 * {} (no members). A paused study's suggest hands out nothing
 * ({"trials": [], "retry_after_ms": 5000, "paused": true}); its running
 * trials still report, and their leases still expire. Pausing a paused
 * study changes nothing (and answers the same). */
int bd_engine_pause_study(bd_engine *e, const bd_request *req, int64_t study_id, int paused, const json_t *body,
                          json_t **out, bd_err *err) BD_MUST_CHECK;
/* body {"metadata": {...}}: merges it into the study's metadata (a null
 * value removes a key; server/attrs.h has the bounds) -> the study. */
int bd_engine_patch_study(bd_engine *e, const bd_request *req, int64_t study_id, const json_t *body, json_t **out,
                          bd_err *err) BD_MUST_CHECK;

/* body: {"worker": "...", "count": n}. Answers {"trials": [...]} plus
 * "retry_after_ms" when empty and "done": true when the study is finished. */
int bd_engine_suggest(bd_engine *e, const bd_request *req, int64_t study_id, const json_t *body, json_t **out, bd_err *err) BD_MUST_CHECK;

/* A trial the user gives (engine_enqueue.c). body {"config"}: enqueued for
 * the next suggest, answers {"state": "enqueued", "config", "position"};
 * body {"config", "value", "budget"?}: stored completed at once (a warm
 * start), answers the trial. */
int bd_engine_add_trial(bd_engine *e, const bd_request *req, int64_t study_id, const json_t *body, json_t **out,
                        bd_err *err) BD_MUST_CHECK;

/* ---- trials ---- */
/* body: {"step", "value", "elapsed_seconds"?} -> {"action": "continue"|"stop", "reason"?} */
int bd_engine_measure(bd_engine *e, const bd_request *req, int64_t trial_id, const json_t *body, json_t **out, bd_err *err) BD_MUST_CHECK;
/* body: one parameter definition without "when" ({"name", "type", "low", "high", "log"?} or
 * {"name", "type": "categorical", "choices"}) -> {"name", "value"}: the trial's value of it, drawn
 * the first time it asks (define-by-run, engine_ask.c); the study's space grows by new names. */
int bd_engine_ask_parameter(bd_engine *e, const bd_request *req, int64_t trial_id, const json_t *body, json_t **out,
                            bd_err *err) BD_MUST_CHECK;
/* body: {"value"} or {"value": null, "reason"} (diverged) or {"status": "timeout"}, plus runtime?,
 * elapsed_seconds?, user_attrs? (merged as by bd_engine_patch_trial, in the same transaction) */
int bd_engine_complete(bd_engine *e, const bd_request *req, int64_t trial_id, const json_t *body, json_t **out, bd_err *err) BD_MUST_CHECK;
int bd_engine_fail(bd_engine *e, const bd_request *req, int64_t trial_id, const json_t *body, json_t **out, bd_err *err) BD_MUST_CHECK;
int bd_engine_heartbeat(bd_engine *e, const bd_request *req, int64_t trial_id, json_t **out, bd_err *err) BD_MUST_CHECK;
int bd_engine_get_trial(bd_engine *e, const bd_caller *who, int64_t trial_id, json_t **out, bd_err *err) BD_MUST_CHECK;
/* body {"user_attrs": {...}}: merges it into the trial's user_attrs (a null
 * value removes a key; server/attrs.h has the bounds), in any state of the
 * trial -> the trial. */
int bd_engine_patch_trial(bd_engine *e, const bd_request *req, int64_t trial_id, const json_t *body, json_t **out,
                          bd_err *err) BD_MUST_CHECK;
/* What a trial listing asks for. */
typedef struct bd_trial_query {
    const char *state;     /* NULL or a state name (borrowed) */
    int64_t instance;      /* an instance index, or -1 for any */
    int64_t after;         /* trial id cursor (0 = from the start) */
    int64_t limit;         /* 1..1000 */
    int with_measurements; /* each trial gets its "measurements" (as bd_engine_get_trial) */
    int best_first;        /* completed trials with a value, best first by the study's goal,
                              ties by id; state must be NULL or "completed", after 0 */
} bd_trial_query;
/* Answers {"trials": [...], "next_after": id|null}. With measurements a page
 * ends early once it holds BD_LIST_MEASUREMENTS_MAX measurements (it always
 * holds one trial if any matches); with best_first next_after is null. */
#define BD_LIST_MEASUREMENTS_MAX 50000
/* Likewise once its trials' user_attrs (each up to 16 KiB of JSON text,
 * which a crafted array makes ~20x that in parsed nodes) pass this many
 * bytes of text, so one page of 1,000 trials cannot take hundreds of MB. */
#define BD_LIST_ATTRS_BYTES_MAX (256 * 1024)
int bd_engine_list_trials(bd_engine *e, const bd_caller *who, int64_t study_id, const bd_trial_query *q,
                          json_t **out, bd_err *err) BD_MUST_CHECK;

/* CSV export of a study's trials (GET /v1/studies/{id}/trials.csv), read in
 * pages of at most BD_CSV_PAGE trials, each one query, ending early once the
 * page's text passes BD_CSV_PAGE_BYTES (a row is never split), so neither
 * the store lock nor memory grows with the study: an export holds one page,
 * at most BD_CSV_PAGE_BYTES plus one row. The column layout is documented in
 * api/openapi.yaml. */
#define BD_CSV_PAGE 1000
#define BD_CSV_PAGE_BYTES (1 << 20)
typedef struct bd_csv_export bd_csv_export;
/* Checks that who owns the study (else BD_ENOTFOUND) and the filters (as
 * bd_engine_list_trials); *out is new (bd_engine_csv_close). */
int bd_engine_csv_open(bd_engine *e, const bd_caller *who, int64_t study_id, const char *state, int64_t instance,
                       bd_csv_export **out, bd_err *err) BD_MUST_CHECK;
/* The next part of the file: the header row first, then the rows of the
 * next page of trials. Returns 1 with *text (borrowed until the next call)
 * and *len set, 0 at the end, or a BD_E* code: BD_ENOTFOUND once the study
 * was deleted during the export, so that the transfer is cut instead of
 * ending like a whole file. */
int bd_engine_csv_next(bd_csv_export *x, const char **text, size_t *len, bd_err *err) BD_MUST_CHECK;
void bd_engine_csv_close(bd_csv_export *x); /* NULL-safe */

/* Expires every running trial whose lease has ended (the reaper calls this;
 * tests call it directly). *expired (may be NULL) receives how many. */
int bd_engine_expire_leases(bd_engine *e, double now, int *expired, bd_err *err) BD_MUST_CHECK;

/* ---- users ---- */
/* Admin only. body {"name", "admin"?} -> the user. */
int bd_engine_create_user(bd_engine *e, const bd_request *req, const json_t *body, json_t **out, bd_err *err) BD_MUST_CHECK;
/* Admin, or the user themself. -> {"token", "token_id"}: the only time the token is shown. */
int bd_engine_create_token(bd_engine *e, const bd_request *req, const char *user_name, json_t **out, bd_err *err) BD_MUST_CHECK;
/* Admin, or the token's owner. */
int bd_engine_revoke_token(bd_engine *e, const bd_request *req, int64_t token_id, json_t **out, bd_err *err) BD_MUST_CHECK;
/* The caller, with "limits" (their quotas and slow-request share) and
 * "usage" (what they use of each now). */
int bd_engine_me(bd_engine *e, const bd_caller *who, json_t **out, bd_err *err) BD_MUST_CHECK;
/* Admin only. body {"limits": {"studies": n | null, "definition_bytes": n | null}}
 * sets the named user's own quotas (null: back to the daemon's default; a
 * key left out is kept) -> the user with its limits. Lowering a quota below
 * what the user has refuses only their next study. */
int bd_engine_set_user_limits(bd_engine *e, const bd_request *req, const char *user_name, const json_t *body,
                              json_t **out, bd_err *err) BD_MUST_CHECK;

/* ---- metrics ---- */
/* Fills *out (bd_engine_stats: engine_types.h). */
void bd_engine_stats_get(bd_engine *e, bd_engine_stats *out);

/* The HTTP layer counts its requests in progress here (from the first
 * call to the answer): the store's group commit holds a batch open for
 * others to join only while another request is in progress, so a lone
 * client's commit does not wait (storage/sqlite_store.c, COMMIT_DELAY_US). */
void bd_engine_request_started(bd_engine *e);
void bd_engine_request_ended(bd_engine *e);

/* 1 when the daemon can take writes; 0 while storage refuses them after a
 * failed commit (this call first tries to recover, so it also heals an idle
 * daemon). */
int bd_engine_healthy(bd_engine *e);

/* The admin token this open created or read from admin_token_file (the first
 * start of the database), or NULL (borrowed;
 * for tests that open an engine on ":memory:"). */
const char *bd_engine_first_admin_token(const bd_engine *e);

#endif
