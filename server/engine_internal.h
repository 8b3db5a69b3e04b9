/* engine_internal.h: state shared by the engine's files (engine.c: lifecycle,
 * registry, replay and leases; engine_studies.c; engine_trials.c;
 * engine_users.c; engine_json.c). Not for use outside server/engine*.c.
 *
 * Locking: studies_lock guards the registry array (pointers are stable and
 * study_rt structs live until bd_engine_close). A study's mu is held around
 * every scheduler call and around the storage transaction of its requests;
 * lock order is study mu -> store transaction. */
#ifndef BD_ENGINE_INTERNAL_H
#define BD_ENGINE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "../storage/store.h"
#include "auth.h"
#include "engine.h"
#include "study_def.h"

typedef struct best_trial {
    int64_t trial_id;  /* 0 = none yet */
    double loss;       /* minimized */
} best_trial;

typedef struct study_rt {
    pthread_mutex_t mu;
    int64_t id;
    int64_t user_id;
    char owner[64];
    double created_at;
    bd_study_spec spec;             /* definition; spec.def is what the scheduler reads */
    bd_sched *sched;                /* NULL once deleted */
    int deleted;
    int dirty;                      /* the scheduler saw events of an uncommitted transaction */
    int64_t counts[BD_TRIAL_NSTATES];
    int64_t trials_created;
    best_trial best;                /* best completed trial, any budget */
    best_trial best_full;           /* best completed trial at resource.max */
    int done;                       /* the last suggest answered DONE and nothing happened since */
} study_rt;

/* The auth caches are direct-mapped by id with a fixed number of slots, so
 * their memory never depends on an id a client sent (a token id is read
 * before the token is checked). A miss only costs a storage read. */
#define BD_AUTH_CACHE_SLOTS 1024

typedef struct token_entry {
    int64_t token_id;               /* 0 = empty slot; only valid tokens are cached */
    int64_t user_id;
    uint8_t hash[BD_TOKEN_HASH_BYTES];
} token_entry;

struct bd_engine {
    bd_store *store;
    double default_lease;
    pthread_rwlock_t studies_lock;
    study_rt **studies;             /* indexed by study id; NULL for unused ids */
    size_t studies_cap;

    pthread_mutex_t auth_mu;        /* guards the three fields below */
    token_entry tokens[BD_AUTH_CACHE_SLOTS]; /* slot = token id % slots */
    bd_user users[BD_AUTH_CACHE_SLOTS];      /* slot = user id % slots; id 0 = empty */
    uint64_t revocations;           /* bumped by every revocation: a storage read that
                                       began before one must not fill the cache */

    pthread_t reaper;
    int reaper_running;
    int reaper_stop;
    double reaper_interval;
    pthread_mutex_t reaper_mu;
    pthread_cond_t reaper_cv;

    char *first_admin_token;        /* set when this open created the admin */

    atomic_int needs_recovery;      /* a group commit failed: rebuild studies from storage */
    pthread_mutex_t recover_mu;     /* one recovery at a time */
};

/* ---- engine.c ---- */
/* Borrowed pointer to the study if it exists, is not deleted and belongs to
 * user_id (0 = any user); else NULL. */
study_rt *bd_engine_study(bd_engine *e, int64_t study_id, int64_t user_id);
/* Locks (st->mu) and returns who's live study, or BD_ENOTFOUND. */
int bd_engine_lock_study(bd_engine *e, const bd_caller *who, int64_t study_id, study_rt **out, bd_err *err)
    BD_MUST_CHECK;
void bd_engine_study_register(bd_engine *e, study_rt *st);
/* Builds a study's runtime from its stored row (scheduler replayed). */
int bd_engine_study_load(bd_engine *e, const bd_study_row *row, study_rt **out, bd_err *err) BD_MUST_CHECK;
/* Rebuilds st's scheduler, counts and incumbents from storage; st->mu held. */
int bd_engine_study_reload(bd_engine *e, study_rt *st, bd_err *err) BD_MUST_CHECK;
void bd_engine_study_free(study_rt *st);
/* Passes a stored event to st's scheduler and updates counts and incumbents. */
void bd_engine_feed(study_rt *st, const bd_event *ev, bd_decision *out);
/* The minimized loss of a reported value (NAN / absent -> +INFINITY). */
double bd_engine_loss(const study_rt *st, int has_value, double value);

/* Transaction helpers: begin, and (when req has a key) look the key up.
 * Returns 1 with *out set when the request was already answered (the
 * transaction is then closed), 0 to go on, < 0 on error (closed). */
int bd_engine_txn_begin(bd_engine *e, const bd_request *req, json_t **out, bd_err *err) BD_MUST_CHECK;
/* Ends a transaction begun with bd_engine_txn_begin: when rc == 0 stores the
 * answer under req's key (if any) and commits, waiting until it is on disk;
 * else rolls back. Returns the final rc. */
int bd_engine_txn_end(bd_engine *e, const bd_request *req, int rc, const json_t *answer, bd_err *err) BD_MUST_CHECK;
/* Ends a study transaction, st->mu held: on rc == 0 stores the answer for
 * req and releases the work into the current group commit, leaving in
 * *ticket what the caller must wait for (bd_engine_durable) after unlocking
 * st->mu and before answering; else rolls back and, if the scheduler saw
 * rolled-back events, rebuilds it. Returns the final rc. Unlocking before
 * the wait lets the study's next requests join the same group commit. */
int bd_engine_study_txn_end(bd_engine *e, study_rt *st, const bd_request *req, int rc, const json_t *answer,
                            uint64_t *ticket, bd_err *err);
/* Waits until the group commit of ticket is on disk. On failure schedulers
 * may hold state that was never saved, so the engine is flagged to rebuild
 * every study before the next request (bd_engine_recover_if_needed). */
int bd_engine_durable(bd_engine *e, uint64_t ticket, bd_err *err) BD_MUST_CHECK;
/* After a failed group commit: rebuilds every study's scheduler (and forgets
 * cached users and tokens) from storage. Call holding no study mutex. */
void bd_engine_recover_if_needed(bd_engine *e);

/* ---- engine_json.c ---- */
json_t *bd_engine_trial_json(const study_rt *st, const bd_trial_row *row); /* new */
json_t *bd_engine_study_json(bd_engine *e, study_rt *st);                  /* new; st->mu held */

/* ---- engine_users.c ---- */
/* Creates the admin user and its token on an empty database. */
int bd_engine_bootstrap_admin(bd_engine *e, const char *token_path, bd_err *err) BD_MUST_CHECK;
int bd_engine_user_name(bd_engine *e, int64_t user_id, char name[64]);
/* Empties the auth caches; auth_mu held. */
void bd_engine_auth_forget(bd_engine *e);

#endif
