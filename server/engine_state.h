/* engine_state.h: struct bd_engine, the engine's state. Included only by
 * engine.c, which builds and frees it (open, close) and runs the reaper,
 * and engine_state.c, whose accessors (engine_internal.h) every other
 * engine file reads it through; no other file reads its fields
 * (test_engine_layering.py checks both). */
#ifndef BD_ENGINE_STATE_H
#define BD_ENGINE_STATE_H

#include "engine_internal.h"

struct bd_engine {
    bd_store *store;
    bd_registry *registry;          /* every live study, the cache, ids, cluster membership */
    bd_auth_cache *auth;            /* valid tokens and users */
    double default_lease;

    pthread_t reaper;
    int reaper_running;
    int reaper_stop;
    atomic_int closing;             /* bd_engine_close began: a sweep stops between trials */
    double reaper_interval;
    pthread_mutex_t reaper_mu;
    pthread_cond_t reaper_cv;

    char *first_admin_token;        /* set when this open created the admin */
    bd_user_slots user_slots;       /* each user's requests in costly studies (admission.h) */

    int64_t max_studies;            /* default quotas of a user (engine_types.h bd_engine_opts) */
    int64_t max_definition_bytes;

    _Atomic double last_probe;      /* bd_monotonic() of the latest storage probe */
    atomic_int requests;            /* HTTP requests in progress (the store's busy hint) */
};

#endif
