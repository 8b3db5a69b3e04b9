/* study.h: one study's runtime: its definition and scheduler, what it has
 * used of its limits, its best trials, the feed every event goes through,
 * the replay that rebuilds it from storage, and its JSON in API answers.
 * Knows nothing of HTTP, users or the engine's registry: unit tests drive
 * feed and replay directly (tests/unit/test_study.c).
 *
 * A study_rt also carries what the engine needs to share it between
 * threads (mu, gate) and to cache it (loaded, lru links): those fields
 * belong to engine_registry.c. */
#ifndef BD_STUDY_H
#define BD_STUDY_H

#include <pthread.h>
#include <stdatomic.h>

#include "../storage/store.h"
#include "admission.h"
#include "study_def.h"

typedef struct best_trial {
    int64_t trial_id;  /* 0 = none yet */
    double loss;       /* minimized */
} best_trial;

/* A study with several objectives keeps its Pareto front as events come:
 * the feasible completed trials (at resource.max when multi-fidelity)
 * with finite losses that no other such trial dominates. A new one costs
 * O(front x objectives). At most BD_STUDY_FRONT_MAX members: once full, a
 * trial that would join without displacing one is left out and the front
 * says it is truncated (the hypervolume's own cap is the same number). */
#define BD_STUDY_FRONT_MAX 4096
/* The hypervolume is computed for fronts of at most this many members when
 * the study has 4 objectives or more (WFG's cost grows exponentially with
 * them); GET answers null beyond. 2 and 3 objectives: up to
 * BD_STUDY_FRONT_MAX. */
#define BD_STUDY_HV_MAX_POINTS_4D 200

typedef struct pareto_front {
    int64_t *ids;        /* members' trial ids, in the order they joined */
    double *losses;      /* row-major, m per member (minimized) */
    size_t n, cap;
    int truncated;       /* a non-dominated trial was left out (the front was full) */
    uint64_t version;    /* bumped on every change */
    uint64_t hv_version; /* the version hv and hv_ref were computed at (0: never) */
    double hv;           /* NAN: not computed (too costly) */
    double hv_ref[BD_STUDY_MAX_OBJECTIVES]; /* the reference point (minimized) */
} pareto_front;

/* What a study has used of its limits (study_def.h bd_study_limits). */
typedef struct study_usage {
    int64_t trials;      /* trials created */
    double resource;     /* budget handed out; a resumed trial counts its increment only */
    double seconds;      /* elapsed_seconds of ended trials (completed, stopped) */
} study_usage;

typedef struct study_rt {
    pthread_mutex_t mu;
    bd_gate gate;                   /* who may wait for mu (admission.h) */
    int64_t id;
    int64_t user_id;
    char owner[64];
    double created_at;
    bd_study_spec spec;             /* definition; spec.def is what the scheduler reads */
    bd_sched *sched;                /* NULL once deleted */
    atomic_int deleted;             /* also read without mu (registry lookups, metrics) */
    int dirty;                      /* the scheduler saw events of an uncommitted transaction */
    _Atomic int64_t counts[BD_TRIAL_NSTATES]; /* read without mu by /metrics */
    int64_t trials_created;
    study_usage used;               /* against spec.limits */
    best_trial best;                /* best completed trial, any budget */
    best_trial best_full;           /* best completed trial at resource.max */
    pareto_front front;             /* several objectives: the feasible non-dominated trials */
    double last_activity_at;        /* latest event (trial created, measured, ended) or
                                       the creation; rebuilt by replay */
    /* Configs a user enqueued (POST /v1/studies/{id}/trials), oldest first:
     * a scheduler that takes_enqueued hands them out before fresh ones.
     * A copy of storage's table enqueued, rebuilt by replay. */
    json_t **queued;
    size_t n_queued, cap_queued;
    /* Not events: set from the study's row when it is loaded (or recovered),
     * changed by pause/resume/PATCH (issue 17). */
    int paused;                     /* suggest hands out nothing; reports are still taken */
    char *metadata;                 /* owned: the stored JSON object text, NULL for none;
                                       dropped with the spec when unloaded */
    int meta_dirty;                 /* paused/metadata changed by an uncommitted transaction:
                                       reread from storage if it does not commit */

    /* The study cache (engine.c): every live study has this struct, but its
     * spec and sched are built (replaying its events) on first use and
     * dropped again when the study is idle and the cache is over budget.
     * counts stay right while unloaded (nothing changes an idle study); the
     * other figures above are rebuilt by the next load's replay. */
    int loaded;                     /* spec and sched are built (under mu) */
    atomic_int referenced;          /* used since the cache's clock last passed it */
    _Atomic double last_used;       /* bd_monotonic() when its latest request began, then ended */
    _Atomic int64_t owner_token;    /* cluster mode: the fencing token of this daemon's latest lease on
                                       the study (kept after an idle release: a claim that gets it back
                                       keeps the memory), 0 when the memory is not current (under mu) */
    _Atomic int lease_held;         /* cluster mode: 1 while the lease is this daemon's (under mu) */
    _Atomic double lease_until;     /* cluster mode: bd_monotonic() until which the lease surely runs
                                       (the reaper renews it); a claim before then is no round trip */
    _Atomic int64_t peer_id;        /* cluster mode: the peer last seen holding it (0: none) ... */
    _Atomic double peer_until;      /* ... until this bd_monotonic(): its requests go there unlooked */
    size_t cache_bytes;             /* estimated heap of spec and sched while loaded */
    size_t definition_bytes;        /* of the stored definition, for the estimate */
    struct study_rt *lru_prev, *lru_next; /* the engine's loaded studies, most recent first (cache_mu) */
} study_rt;

/* Frees st and all it owns (its scheduler, its spec). NULL-safe. */
void bd_study_free(study_rt *st);
/* Sets paused and metadata (stolen; NULL: none) as stored in the study's row. */
void bd_study_set_meta(study_rt *st, int paused, char *metadata);
/* Rereads paused, metadata and the asked parameters from st's row in store
 * (after a transaction that changed them did not commit); st->mu held. */
int bd_study_reload_meta(study_rt *st, bd_store *store, bd_err *err) BD_MUST_CHECK;

/* Sets st's asked parameters (study_def.h) to those of definition, the
 * study's stored definition text (after a request that grew them did not
 * commit); st->mu held, st loaded. */
int bd_study_reload_asked(study_rt *st, const char *definition, bd_err *err) BD_MUST_CHECK;
/* Removes from config (a trial's stored config) every name but the
 * declared parameters (study_def.h): the scheduler knows only those, live
 * and in a replay, whatever the trials asked or users enqueued. */
void bd_study_scheduler_config(const bd_study_spec *spec, json_t *config);
/* Passes an event to st's scheduler (observe, with its rng seeded from the
 * study seed and ev->id) and updates counts, usage and incumbents. A
 * warm-start trial is fed as one PRIOR event: it counts as a completed
 * trial and may be the incumbent, but uses none of the study's limits, and
 * only a scheduler that learns_from_prior sees it.
 * replay: the event is from storage (not live). resumed_budget: for
 * CREATED, the budget of the trial it resumes (0 if none). */
void bd_study_feed(study_rt *st, const bd_event *ev, int replay, double resumed_budget, bd_decision *out);
/* The queue of enqueued configs: append (takes the reference), and take the
 * oldest (a new reference; NULL when empty). */
void bd_study_enqueue(study_rt *st, json_t *config);
json_t *bd_study_dequeue(study_rt *st);
/* Frees the queue (an evicted study: the next load's replay reads it again). */
void bd_study_drop_queue(study_rt *st);
/* Frees the Pareto front (likewise), and the bytes it holds while loaded. */
void bd_study_drop_front(study_rt *st);
size_t bd_study_front_bytes(const study_rt *st);
/* Records an event of st at time at: last_activity_at. */
void bd_study_touch(study_rt *st, double at);
/* The minimized loss of a reported value (NAN / absent -> +INFINITY). */
double bd_study_loss(const study_rt *st, int has_value, double value);
/* Sets ev's loss, losses (into buf, room for BD_STUDY_MAX_OBJECTIVES) and
 * violation for a MEASUREMENT, COMPLETED or PRIOR event from what was
 * stored: has_value and value (the first objective's, NAN when diverged)
 * and values (the reported metrics' JSON text, or NULL). The same live and
 * on replay. */
void bd_study_event_losses(const study_rt *st, int has_value, double value, const char *values, bd_event *ev,
                           double *buf);
/* 1 when st has used up one of its limits (study_def.h bd_study_limits). */
int bd_study_limit_reached(const study_rt *st);

/* Rebuilds st's scheduler, counts, usage and incumbents from its events in
 * store (st->spec must be parsed). Holds no storage lock between reads:
 * only st's own requests write st's rows, and the caller holds st->mu (or
 * no request can run yet). */
int bd_study_replay(study_rt *st, bd_store *store, bd_err *err) BD_MUST_CHECK;

/* A trial row as the API shows it (new). */
json_t *bd_study_trial_json(const study_rt *st, const bd_trial_row *row);
/* The same from the one field of the spec it reads, for callers that no
 * longer hold the study's mutex (its spec may be unloaded meanwhile). */
json_t *bd_trial_json(int resource_integer, const bd_trial_row *row);
/* The study as the API shows it (new): the definition, counts, incumbents
 * (read from store), the scheduler's state, running/waiting/paused/done,
 * usage, "paused" and "metadata"; with several objectives "pareto_front"
 * (read from store), "hypervolume" and "reference_point" instead of the
 * incumbents (null). */
json_t *bd_study_json(study_rt *st, bd_store *store);
/* The same for a listing: with several objectives "pareto_front_size"
 * instead of "pareto_front" (no member read from store; the hypervolume is
 * the front's cached one). */
json_t *bd_study_summary_json(study_rt *st, bd_store *store);

#endif
