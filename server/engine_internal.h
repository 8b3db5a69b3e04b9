/* engine_internal.h: what the engine's files share (server/README.md has
 * the layout and the one direction calls go). Not for use outside
 * server/engine*.c and their unit tests. It includes engine_types.h, not
 * engine.h: a file includes engine.h only to define what it declares.
 *
 * Who owns what: each piece of the engine's state is defined in, and
 * written by, one file only; the others reach it through the functions
 * below, grouped by the file that defines them.
 * - engine_state.c: struct bd_engine (engine_state.h: the store, the
 *   options, the lease reaper, the first admin's token, the per-user slots
 *   of admission.h) and pointers to the two parts below. engine.c builds
 *   and frees it (open, close); every other file reads it through
 *   engine_state.c's accessors, which read one field each and
 *   call nothing, so every engine file may call them.
 * - engine_registry.c: struct bd_registry: every live study, the cache of
 *   loaded studies, recovery after a failed commit, trial and event ids,
 *   and the cluster membership (daemon id, ownership lease).
 * - engine_auth.c: struct bd_auth_cache: the valid tokens and the users.
 *
 * Locking: studies_lock guards the registry array (pointers are stable and
 * study_rt structs live until bd_engine_close). A study's mu is held around
 * every scheduler call; the storage lock is held only for SQL. A study
 * request runs in three steps under its study's mu: the scheduler decides
 * (events get their ids first, from the engine's counters, so observe()
 * sees them), the writes gathered in a bd_write_plan go to storage in one
 * short transaction, and the mu is released before waiting for the group
 * commit. Lock order: study mu -> store lock (engine_registry.c and
 * engine_auth.c state the order of their own locks). */
#ifndef BD_ENGINE_INTERNAL_H
#define BD_ENGINE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "../storage/store.h"
#include "admission.h"
#include "auth.h"
#include "engine_types.h"
#include "study.h"

typedef struct bd_registry bd_registry;     /* engine_registry.c */
typedef struct bd_auth_cache bd_auth_cache; /* engine_auth.c */

/* ================================================ engine_state.c
 * The accessors of struct bd_engine. Each reads one field and calls
 * nothing. Pointers are borrowed, valid until bd_engine_close. */

bd_store *bd_engine_store(bd_engine *e);
bd_registry *bd_engine_registry(bd_engine *e);
bd_auth_cache *bd_engine_auth_cache(bd_engine *e);
/* The lease of a study whose definition sets none (seconds). */
double bd_engine_default_lease(bd_engine *e);
/* Each user's requests in costly studies (admission.h). */
bd_user_slots *bd_engine_user_slots(bd_engine *e);
/* A user's quotas when the admin set none of their own (bd_engine_opts). */
int64_t bd_engine_default_max_studies(bd_engine *e);
int64_t bd_engine_default_max_definition_bytes(bd_engine *e);
/* 1 once bd_engine_close began: a long sweep stops between trials. */
int bd_engine_closing(bd_engine *e);

/* ================================================ engine_registry.c
 * Every live study (a study_rt each, pointers stable until close), the
 * cache that builds a study's spec and scheduler on first use and drops
 * them when idle, study locks behind their gates, recovery, ids, and the
 * cluster membership. */

/* New (bd_registry_free), empty; sizes and leases from opts, cluster 1 to
 * serve studies under ownership leases. */
bd_registry *bd_registry_new(const bd_engine_opts *opts, int cluster);
/* Frees every study and the registry. NULL-safe. */
void bd_registry_free(bd_registry *r);
/* Before the first request: in cluster mode joins the cluster as
 * advertise_url (ids then come in blocks, taken by the first claim); else
 * continues the stored trial and event ids. */
int bd_engine_ids_start(bd_engine *e, const char *advertise_url, bd_err *err) BD_MUST_CHECK;
/* 1 in cluster mode (several daemons on one PostgreSQL database). */
int bd_engine_cluster(bd_engine *e);
/* Cluster mode: this member's row in the daemons table (0 before it joined). */
int64_t bd_engine_daemon_id(bd_engine *e);
/* Cluster mode: seconds a study's lease lasts after its latest use. */
double bd_engine_owner_lease(bd_engine *e);
/* Adds the figures of the studies and the cache to *out (/metrics). */
void bd_engine_registry_stats(bd_engine *e, bd_engine_stats *out);

/* Borrowed pointer to the study if it exists, is not deleted and belongs to
 * user_id (0 = any user); else NULL. Never loads it. */
study_rt *bd_engine_study(bd_engine *e, int64_t study_id, int64_t user_id);
/* Puts st in its id's slot unless a study is there already. Returns the
 * study in the slot (borrowed): st, or the earlier one (then st is still
 * the caller's, to free). */
study_rt *bd_engine_study_register(bd_engine *e, study_rt *st);
/* Locks (st->mu) and returns who's live study, loaded; or BD_ENOTFOUND; or
 * BD_EBUSY when the study's gate refuses to let the request wait
 * (admission.h); or the error of loading it. Release with
 * bd_engine_unlock_study. */
int bd_engine_lock_study(bd_engine *e, const bd_caller *who, int64_t study_id, study_rt **out, bd_err *err)
    BD_MUST_CHECK;
/* The same without waiting: BD_EBUSY at once when anyone holds or waits
 * for the study (the lease reaper: a busy study is swept next time). */
int bd_engine_try_lock_study(bd_engine *e, const bd_caller *who, int64_t study_id, study_rt **out, bd_err *err)
    BD_MUST_CHECK;
/* For a request on the HTTP polling thread (bd_request.inline_only): locks
 * who's study only when that can neither wait nor take long: not cluster
 * mode, loaded, nobody holding or waiting, and its recent requests held it
 * less than BD_INLINE_HOLD_MAX each (bd_gate_quick). Else BD_EWOULDBLOCK
 * with nothing taken; BD_ENOTFOUND as bd_engine_lock_study. */
int bd_engine_lock_study_now(bd_engine *e, const bd_caller *who, int64_t study_id, study_rt **out, bd_err *err)
    BD_MUST_CHECK;
/* Cluster mode, st->mu held: takes or renews this daemon's lease on st.
 * A lease this daemon holds and the reaper renewed costs no round trip. A
 * live lease of another daemon (one whose heartbeat is recent) is never
 * taken nor waited for: with wait the call answers BD_EFORWARD (that
 * peer's address in bd_engine_forward_target: the HTTP layer sends the
 * request there), without wait BD_EBUSY. A peer found gone at its address
 * (bd_engine_peer_gone) has its lease taken. When the token changed (another
 * daemon may have written) st is unloaded, to be replayed, and the id
 * blocks are renewed (ids above every id the previous owner used); the same
 * token (this daemon held it last) keeps what is loaded. BD_ENOTFOUND marks
 * st deleted. */
int bd_engine_claim_study(bd_engine *e, study_rt *st, int wait, bd_err *err) BD_MUST_CHECK;
/* Cluster mode, st->mu held: forgets this daemon's lease on st and unloads
 * it (its lease was lost, or it was idle past the lease: released too). */
void bd_engine_study_disown(bd_engine *e, study_rt *st, int release);
/* Cluster mode: releases the leases of the studies idle past the lease
 * (reaper), keeping what is loaded and the token: if no peer takes the
 * study meanwhile, the next claim gets the same token and replays nothing;
 * then renews every other lease held, in one statement. */
void bd_engine_drop_idle_owned(bd_engine *e);
/* Releases st, then trims the cache if it is over budget. */
void bd_engine_unlock_study(bd_engine *e, study_rt *st);
/* Puts a study created by this daemon (spec and sched built, definition_bytes
 * as stored) in the cache; st->mu held or st not yet registered. */
void bd_engine_study_cached(bd_engine *e, study_rt *st, size_t definition_bytes);
/* Drops a study's spec and sched (a deleted study's, or to free memory); st->mu held. */
void bd_engine_study_unload(bd_engine *e, study_rt *st);
/* Unloads idle studies while the cache is over budget; holds no study mutex. */
void bd_engine_cache_trim_if_over(bd_engine *e);
/* After a failed group commit: rebuilds every loaded study's scheduler (and
 * forgets cached users and tokens) from storage, then lets the store take
 * writes again, unless another commit failed meanwhile (then the next call
 * recovers again). Call holding no study mutex. */
void bd_engine_recover_if_needed(bd_engine *e);

/* ================================================ engine_txn.c
 * Write plans, idempotency, and the protocol of a study request. */

/* The storage writes of one study request, gathered while its scheduler
 * decides (no storage lock held) and applied in one short transaction. */
typedef struct bd_write_plan {
    bd_trial_row *inserts;          /* new trials (their strings borrowed, or owned by the plan) */
    size_t n_inserts, cap_inserts;
    bd_event_row *events;           /* appended in order */
    size_t n_events, cap_events;
    const bd_trial_row *finish;     /* a trial to end (bd_store_trial_finish), or NULL */
    int64_t lease_trial;            /* a trial whose lease to set to lease_until, or 0 */
    double lease_until;
    int write_paused;               /* store paused as the study's flag */
    int paused;
    int write_metadata;             /* store metadata (borrowed; NULL: none) as the study's */
    const char *metadata;
    int64_t attrs_trial;            /* a trial whose user_attrs to set to user_attrs (borrowed;
                                       NULL: none), or 0 */
    const char *user_attrs;
    const char *enqueue;            /* a config (JSON text, borrowed) to append to the study's queue, or NULL */
    int ids_failed;                 /* cluster mode: an id was needed and no block could be taken
                                       (the ids given are 0): the commit refuses the plan */
    int64_t dequeued;               /* how many of the study's oldest enqueued configs were handed out */
    int64_t study_id;               /* the study enqueue, dequeued and definition concern */
    int64_t config_trial;           /* a trial whose config to set to config (borrowed), or 0 */
    const char *config;
    const char *definition;         /* the study's grown definition (borrowed), or NULL (engine_ask.c) */
    char **owned;                   /* texts the plan owns (bd_write_plan_own): freed by
                                       bd_write_plan_clear */
    size_t n_owned, cap_owned;
} bd_write_plan;

/* A new trial id (events 0) or event id (events 1), unused by every
 * daemon. In cluster mode it comes from the current block, refilled under
 * ids_mu whenever the block is used up; when no block can be taken it
 * sets p->ids_failed and returns 0. */
int64_t bd_engine_take_id(bd_engine *e, int events, bd_write_plan *p);
/* Frees the arrays and the texts the plan owns, and empties the plan; the
 * strings it borrows stay. */
void bd_write_plan_clear(bd_write_plan *p);
/* Gives text (new, or NULL) to the plan, which frees it when it is cleared:
 * also when a request whose study moved runs again from an empty plan
 * (bd_engine_study_op). Returns text, borrowed until then. */
char *bd_write_plan_own(bd_write_plan *p, char *text);
/* Appends a copy of ev with the next event id; the pointer is valid until
 * the next push. */
bd_event_row *bd_write_plan_push_event(bd_engine *e, bd_write_plan *p, const bd_event_row *ev);
/* Adds ev to the plan with the next event id and feeds it to st's scheduler
 * (live: not a replay). *d receives a MEASUREMENT's decision. */
void bd_engine_plan_event(bd_engine *e, study_rt *st, bd_write_plan *p, const bd_event_row *ev,
                          const bd_trial_row *t, bd_decision *d);

/* The one protocol of a request that changes a study: lock (or, with
 * BD_OP_NO_WAIT, try to) -> answer a repeated idempotency key from storage
 * -> op (the scheduler decides; the writes go into plan and the answer into
 * *answer) -> commit plan and answer in one transaction -> unlock -> wait
 * until the commit is on disk. plan is the caller's (it may borrow strings
 * the caller frees after this returns; the caller clears it). A text op
 * makes for the plan is the plan's (bd_write_plan_own): op may run more
 * than once (cluster mode, BD_EMOVED), each run from a cleared plan. */
typedef int (*bd_study_op_fn)(bd_engine *e, study_rt *st, void *arg, bd_write_plan *plan, json_t **answer,
                              bd_err *err);
enum { BD_OP_WAIT = 0, BD_OP_NO_WAIT = 1 };
int bd_engine_study_op(bd_engine *e, const bd_request *req, int64_t study_id, int flags, bd_study_op_fn op, void *arg,
                       bd_write_plan *plan, json_t **out, bd_err *err) BD_MUST_CHECK;

/* An operation on one trial; t is fresh from storage under the study's
 * mutex. It feeds its events to the scheduler and puts its writes in plan.
 * *answer is the new response body. */
typedef int (*bd_trial_op_fn)(bd_engine *e, study_rt *st, bd_trial_row *t, const void *args, bd_write_plan *plan,
                              json_t **answer, bd_err *err);
/* Finds the trial's study (the caller's, else 404) and runs op on it
 * (bd_engine_study_op; flags as there). */
int bd_engine_with_trial(bd_engine *e, const bd_request *req, int64_t trial_id, int flags, bd_trial_op_fn op,
                         const void *args, json_t **out, bd_err *err) BD_MUST_CHECK;
/* BD_ECONFLICT unless t is running with its lease still valid at now. */
int bd_engine_require_running(const bd_trial_row *t, double now, bd_err *err) BD_MUST_CHECK;

/* Transaction helpers for requests that touch no scheduler (users, tokens,
 * creating or deleting a study): begin, and (when req has a key) look the
 * key up. Returns 1 with *out set when the request was already answered
 * (the transaction is then closed), 0 to go on, < 0 on error (closed). */
int bd_engine_txn_begin(bd_engine *e, const bd_request *req, json_t **out, bd_err *err) BD_MUST_CHECK;
/* Ends a transaction begun with bd_engine_txn_begin: when rc == 0 stores the
 * answer under req's key (if any) and commits, waiting until it is on disk;
 * else rolls back. Returns the final rc. */
int bd_engine_txn_end(bd_engine *e, const bd_request *req, int rc, const json_t *answer, bd_err *err) BD_MUST_CHECK;

/* ================================================ engine_auth.c
 * The caches of valid tokens and of users. */

/* New (bd_auth_cache_free), empty; with cluster 1 its entries expire (a
 * peer's revocation is never heard of). */
bd_auth_cache *bd_auth_cache_new(int cluster);
void bd_auth_cache_free(bd_auth_cache *a); /* NULL-safe */

int bd_engine_user_name(bd_engine *e, int64_t user_id, char name[64]);
/* Fills *out from the cache or storage. */
int bd_engine_user_get(bd_engine *e, int64_t user_id, bd_user *out, bd_err *err) BD_MUST_CHECK;
/* Drops user_id's cached row after a change to it (committed). */
void bd_engine_user_changed(bd_engine *e, int64_t user_id);
/* Drops token_id from the cache after its revocation (committed). */
void bd_engine_token_revoked(bd_engine *e, int64_t token_id);
/* Empties the auth caches (takes their lock: call holding none of it). */
void bd_engine_auth_forget(bd_engine *e);

/* ================================================ engine_users.c */

/* Creates the admin user and its token on an empty database: the token read
 * from supplied_path if not NULL, else a new one written to token_path (if
 * not NULL). *first_token is then set to a new copy of the token (caller
 * frees), else left alone. */
int bd_engine_bootstrap_admin(bd_engine *e, const char *token_path, const char *supplied_path, char **first_token,
                              bd_err *err) BD_MUST_CHECK;
/* BD_EQUOTA (field "limits.studies" or "limits.definition_bytes") when
 * new_studies (0 or 1) more studies and definition_bytes more of stored
 * definitions would pass user_id's quotas; call inside the transaction that
 * writes them, so concurrent requests count each other. */
int bd_engine_check_quota(bd_engine *e, int64_t user_id, int new_studies, size_t definition_bytes,
                          bd_err *err) BD_MUST_CHECK;

#endif
