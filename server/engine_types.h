/* engine_types.h: the types and constants that the engine's files and its
 * callers share: the engine's handle and options, who makes a request, the
 * request, the figures of /metrics. Declares no function: engine.h declares
 * what the engine does (and includes this), engine_internal.h what its files
 * call of one another (and includes this, not engine.h). */
#ifndef BD_ENGINE_TYPES_H
#define BD_ENGINE_TYPES_H

#include <stddef.h>
#include <stdint.h>

typedef struct bd_engine bd_engine;

#define BD_DEFAULT_MAX_STUDIES 10000
#define BD_DEFAULT_MAX_DEFINITION_BYTES (64LL << 20)
#define BD_DEFAULT_STUDY_CACHE_BYTES ((size_t)128 << 20)

typedef struct bd_engine_opts {
    const char *db_path;          /* SQLite file (":memory:" for tests) or postgresql:// URL */
    int sync_full;                /* 1: synchronous=FULL, else NORMAL */
    double default_lease_seconds; /* used when a study does not set lease_seconds */
    const char *admin_token_path; /* where the first admin token is written (mode 0600);
                                     NULL: "<db_path>.admin-token"; ignored for ":memory:" */
    const char *admin_token_file; /* NULL, or a file holding the first admin's token, read only
                                     when the database has no user yet (then nothing is written
                                     to admin_token_path); see bd_auth_check_supplied */
    double reaper_interval;       /* seconds between lease-expiry sweeps; 0 = no reaper thread */
    int user_concurrency;         /* requests to slow studies one user may have in progress
                                     (server/admission.h); <= 0: 16 */
    int64_t max_studies;          /* a user's live studies at most, unless the admin set the
                                     user's own; 0: BD_DEFAULT_MAX_STUDIES */
    int64_t max_definition_bytes; /* the same for their definitions' total bytes (as stored);
                                     0: BD_DEFAULT_MAX_DEFINITION_BYTES */
    size_t study_cache_bytes;     /* estimated memory of the loaded studies kept (idle ones
                                     beyond are unloaded, and loaded again on use);
                                     0: BD_DEFAULT_STUDY_CACHE_BYTES */
    double study_hot_seconds;     /* a study used this recently is never evicted, even over the
                                     budget: a study bigger than the budget on its own was
                                     evicted between two of its requests and replayed by the
                                     next (524,288 random-search trials: 6,500 -> 35 trials/s).
                                     The budget bounds the idle studies kept. 0: 5 s; < 0:
                                     none (tests) */
    const char *advertise_url;    /* with a PostgreSQL db_path: join the cluster of daemons on it
                                     as this URL (server/README.md "Several daemons"); NULL: the
                                     only daemon on the database. Ignored for SQLite */
    double ownership_lease_seconds; /* cluster mode: a study's ownership lease; <= 0: 2 s */
} bd_engine_opts;

/* Who makes a request. */
typedef struct bd_caller {
    int64_t user_id;
    char name[64];
    int is_admin;
} bd_caller;

/* A state-changing request. With an idempotency key, the first successful
 * response is stored in the same transaction as the change; a retry with the
 * same key returns that response without acting again; the same key with a
 * different fingerprint is BD_ECONFLICT. */
typedef struct bd_request {
    const bd_caller *caller;
    const char *idem_key;    /* NULL when the request carried none */
    const char *fingerprint; /* identifies the request (method, path, body digest) */
    /* NULL: a study operation returns once its writes are on disk. Else it
     * returns once they are committed to the group commit's open batch,
     * raising *defer_durable to the ticket to wait for; the caller then
     * must not answer before bd_engine_durable(ticket) says they are on
     * disk (the HTTP server waits for many requests' tickets at once). */
    uint64_t *defer_durable;
    /* 1: the caller is the HTTP polling thread, which must never wait or
     * run long. A study operation then runs only on a study it can take at
     * once, loaded, whose recent requests each held it less than
     * BD_INLINE_HOLD_MAX (SQLite only; with defer_durable set); else it
     * returns BD_EWOULDBLOCK having done nothing, and the caller runs the
     * request again on a handler thread without this flag. */
    int inline_only;
} bd_request;

/* Seconds: a study whose requests recently held it longer than this has its
 * requests run on handler threads, not on the HTTP polling thread. */
#define BD_INLINE_HOLD_MAX 0.001

/* The figures of /metrics (bd_engine_stats_get). */
typedef struct bd_engine_stats {
    int64_t studies;
    int64_t trials[5];        /* by state: running, completed, stopped, failed, expired */
    int64_t studies_loaded;   /* studies whose scheduler is in memory (the cache) */
    int64_t studies_owned;    /* cluster mode: studies this daemon holds the ownership lease of (else 0) */
    int64_t cache_bytes, cache_budget; /* their estimated bytes, and the budget */
    int64_t study_loads, study_evictions; /* since start */
    int storage_writable;     /* 0 while a failed commit is being recovered from */
    int64_t storage_failures; /* group commits that failed since start */
} bd_engine_stats;

#endif
