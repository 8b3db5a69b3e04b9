/* engine_internal.h: what the engine's files share (server/README.md has
 * the layout and the one direction calls go). Not for use outside
 * server/engine*.c and their unit tests.
 *
 * Locking: studies_lock guards the registry array (pointers are stable and
 * study_rt structs live until bd_engine_close). A study's mu is held around
 * every scheduler call; the storage lock is held only for SQL. A study
 * request runs in three steps under its study's mu: the scheduler decides
 * (events get their ids first, from the engine's counters, so observe()
 * sees them), the writes gathered in a bd_write_plan go to storage in one
 * short transaction, and the mu is released before waiting for the group
 * commit. Lock order: study mu -> store lock. */
#ifndef BD_ENGINE_INTERNAL_H
#define BD_ENGINE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "../storage/store.h"
#include "admission.h"
#include "auth.h"
#include "engine.h"
#include "study.h"

/* The auth caches are direct-mapped by id with a fixed number of slots, so
 * their memory never depends on an id a client sent (a token id is read
 * before the token is checked). A miss only costs a storage read. */
#define BD_AUTH_CACHE_SLOTS 1024

typedef struct token_entry {
    int64_t token_id;               /* 0 = empty slot; only valid tokens are cached */
    int64_t user_id;
    uint8_t hash[BD_TOKEN_HASH_BYTES];
    double cached_at;               /* bd_monotonic() when read from storage (cluster mode expiry) */
} token_entry;

/* Cluster mode: a peer may revoke a token or change a user, and only its
 * own cache hears of it; a cached entry is trusted this long (seconds),
 * so a revocation through any daemon holds everywhere within it. */
#define BD_AUTH_CLUSTER_TTL 0.5

struct bd_engine {
    bd_store *store;
    double default_lease;
    pthread_rwlock_t studies_lock;
    study_rt **studies;             /* indexed by study id; NULL for unused ids */
    size_t studies_cap;

    pthread_mutex_t auth_mu;        /* guards the four fields below */
    token_entry tokens[BD_AUTH_CACHE_SLOTS]; /* slot = token id % slots */
    bd_user users[BD_AUTH_CACHE_SLOTS];      /* slot = user id % slots; id 0 = empty */
    double users_at[BD_AUTH_CACHE_SLOTS];    /* bd_monotonic() when each users[] slot was read */
    uint64_t revocations;           /* bumped by every revocation and quota change: a storage read that
                                       began before one must not fill the cache */

    pthread_t reaper;
    int reaper_running;
    int reaper_stop;
    atomic_int closing;             /* bd_engine_close began: a sweep stops between trials */
    double reaper_interval;
    pthread_mutex_t reaper_mu;
    pthread_cond_t reaper_cv;

    char *first_admin_token;        /* set when this open created the admin */
    bd_user_slots user_slots;       /* each user's requests in costly studies (admission.h) */
    pthread_mutex_t cache_mu;       /* guards the list below and cache_used */
    study_rt *lru_head, *lru_tail;  /* loaded studies, most recently used first */
    _Atomic size_t cache_used;      /* estimated bytes of loaded studies (changed under cache_mu,
                                       read without it as a hint) */
    size_t cache_budget;            /* the most kept */
    double hot_seconds;             /* a study used this recently is never evicted (engine.h) */
    int64_t studies_loaded;
    _Atomic uint64_t study_loads, study_evictions;

    int64_t max_studies;            /* default quotas of a user (engine.h bd_engine_opts) */
    int64_t max_definition_bytes;

    _Atomic uint64_t recovered_failures; /* the store's failure count the last recovery covered */
    pthread_mutex_t recover_mu;     /* one recovery at a time */
    _Atomic double last_probe;      /* bd_monotonic() of the latest storage probe */

    _Atomic int64_t next_trial_id;  /* ids handed out before their transaction, so */
    _Atomic int64_t next_event_id;  /* schedulers see them (gaps after a rollback are fine) */

    /* Cluster mode (several daemons on one PostgreSQL database): */
    int cluster;                    /* 1: studies are served under ownership leases */
    int64_t daemon_id;              /* this member's row in the daemons table */
    double owner_lease;             /* seconds a study's lease lasts after its latest use */
    pthread_mutex_t ids_mu;         /* one id-block refill at a time; guards the two ends */
    int64_t trial_ids_end;          /* the current blocks of ids (store.h bd_store_id_block) end here */
    int64_t event_ids_end;
};

/* ================================================ engine_registry.c
 * Every live study (a study_rt each, pointers stable until close), the
 * cache that builds a study's spec and scheduler on first use and drops
 * them when idle, study locks behind their gates, and recovery. */

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
/* Cluster mode, st->mu held: takes or renews this daemon's lease on st.
 * A live lease of another daemon (one whose heartbeat is recent) is never
 * taken: with wait, the call polls until it expires, for at most the lease
 * plus half a second, then answers BD_EMOVED (503, retry_after set);
 * without wait it answers BD_EBUSY at once. When the token changed (another
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
 * study meanwhile, the next claim gets the same token and replays nothing. */
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
    bd_trial_row *inserts;          /* new trials (borrowed strings) */
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
    int64_t study_id;               /* the study enqueue and dequeued concern */
} bd_write_plan;

/* A new trial id (events 0) or event id (events 1), unused by every
 * daemon. In cluster mode it comes from the current block, refilled under
 * ids_mu whenever the block is used up; when no block can be taken it
 * sets p->ids_failed and returns 0. */
int64_t bd_engine_take_id(bd_engine *e, int events, bd_write_plan *p);
void bd_write_plan_clear(bd_write_plan *p); /* frees the arrays, not the strings */
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
 * the caller frees after this returns; the caller clears it). */
typedef int (*bd_study_op_fn)(bd_engine *e, study_rt *st, void *arg, bd_write_plan *plan, json_t **answer,
                              bd_err *err);
enum { BD_OP_WAIT = 0, BD_OP_NO_WAIT = 1 };
int bd_engine_study_op(bd_engine *e, const bd_request *req, int64_t study_id, int flags, bd_study_op_fn op, void *arg,
                       bd_write_plan *plan, json_t **out, bd_err *err) BD_MUST_CHECK;

/* Transaction helpers for requests that touch no scheduler (users, tokens,
 * creating or deleting a study): begin, and (when req has a key) look the
 * key up. Returns 1 with *out set when the request was already answered
 * (the transaction is then closed), 0 to go on, < 0 on error (closed). */
int bd_engine_txn_begin(bd_engine *e, const bd_request *req, json_t **out, bd_err *err) BD_MUST_CHECK;
/* Ends a transaction begun with bd_engine_txn_begin: when rc == 0 stores the
 * answer under req's key (if any) and commits, waiting until it is on disk;
 * else rolls back. Returns the final rc. */
int bd_engine_txn_end(bd_engine *e, const bd_request *req, int rc, const json_t *answer, bd_err *err) BD_MUST_CHECK;
/* Waits until the group commit of ticket is on disk. On failure schedulers
 * may hold state that was never saved, so the engine is flagged to rebuild
 * every study before the next request (bd_engine_recover_if_needed). */
int bd_engine_durable(bd_engine *e, uint64_t ticket, bd_err *err) BD_MUST_CHECK;

/* ================================================ engine_auth.c
 * The caches of valid tokens and of users. */

int bd_engine_user_name(bd_engine *e, int64_t user_id, char name[64]);
/* Fills *out from the cache or storage. */
int bd_engine_user_get(bd_engine *e, int64_t user_id, bd_user *out, bd_err *err) BD_MUST_CHECK;
/* Drops user_id's cached row after a change to it (committed). */
void bd_engine_user_changed(bd_engine *e, int64_t user_id);
/* Drops token_id from the cache after its revocation (committed). */
void bd_engine_token_revoked(bd_engine *e, int64_t token_id);
/* Empties the auth caches; auth_mu held. */
void bd_engine_auth_forget(bd_engine *e);

/* ================================================ engine_users.c */

/* Creates the admin user and its token on an empty database: the token read
 * from supplied_path if not NULL, else a new one written to token_path (if
 * not NULL). */
int bd_engine_bootstrap_admin(bd_engine *e, const char *token_path, const char *supplied_path,
                              bd_err *err) BD_MUST_CHECK;
/* BD_EQUOTA (field "limits.studies" or "limits.definition_bytes") when one
 * more study of definition_bytes would pass user_id's quotas; call inside
 * the transaction that inserts it, so concurrent creates count each other. */
int bd_engine_check_quota(bd_engine *e, int64_t user_id, size_t definition_bytes, bd_err *err) BD_MUST_CHECK;

#endif
