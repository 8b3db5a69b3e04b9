/* sched.h: the scheduler plugin interface. Every algorithm (random search,
 * Successive Halving, Hyperband, ASHA, Rising Bandits, SPC, BO-BOS) is one
 * .c file implementing bd_sched_ops, registered in registry.c.
 *
 * Contract (see README.md beside this file for how each scheduler uses it):
 * - Only events change a scheduler's state. suggest() proposes the next trial
 *   without changing state; the engine stores the trial, then feeds it back as
 *   a BD_EV_CREATED event through observe(). Measurements, completions,
 *   failures, lease expiries and stops arrive the same way. On start the
 *   engine replays a study's stored events through observe(), the same code
 *   path live requests take, so the rebuilt scheduler is identical.
 * - Randomness comes only from ctx->rng, seeded from (study seed, number of
 *   trials created), so a replayed study proposes the same next trials.
 * - The engine holds the study's mutex around every call: a scheduler is
 *   single-threaded and must not block, write storage or keep private files.
 * - Losses are minimized: the engine negates maximized objectives. A diverged
 *   run (value null) arrives as loss = +INFINITY, the worst possible loss.
 *
 * A scheduler sees this header, jansson, GSL and the helpers in server/sched/
 * and server/model/; nothing of the HTTP or storage layers. */
#ifndef BD_SCHED_H
#define BD_SCHED_H

#include <jansson.h>
#include <stdint.h>

#include "../common.h"
#include "../rng.h"
#include "../space.h"

#define BD_SCHED_ABI 1

/* What a study asks for, parsed and validated by the engine. Borrowed by the
 * scheduler for its whole life (the engine keeps it alive). */
typedef struct bd_study_def {
    int64_t id;
    const char *name;
    const bd_space *space;
    const char *metric;
    int maximize;               /* the engine negates values so schedulers minimize */
    const char *resource_name;  /* "epochs", "samples", "seconds", ... */
    double r_min, r_max;        /* budget bounds; schedulers hand out budgets in [r_min, r_max] */
    int resource_integer;       /* budgets must be whole numbers */
    const json_t *options;      /* scheduler options object (never NULL, may be empty) */
    uint64_t seed;
    double lease_seconds;
} bd_study_def;

typedef struct bd_suggest_ctx {
    bd_rng rng;               /* this proposal's random stream */
    int64_t trials_created;   /* trials of this study so far (the rng's stream id) */
    const char *worker;       /* who asks (informational; may be "") */
} bd_suggest_ctx;

/* One proposed trial. The engine takes ownership of config and extra. */
typedef struct bd_suggestion {
    json_t *config;       /* new reference: the config, active parameters only */
    int64_t config_id;    /* 0: a new config; else the config_id of earlier trials of this config */
    double budget;        /* cumulative resource the trial may use */
    int64_t resume_from;  /* 0, or an earlier trial of this config whose checkpoint the worker may continue */
    json_t *extra;        /* new reference or NULL: scheduler fields shown to the worker
                             ({"bracket": 2, "rung": 1}, {"instance": 7, "cap": 4.0}) */
} bd_suggestion;

/* suggest() results besides errors (< 0). */
enum {
    BD_SUGGEST_TRIAL = 0, /* *out holds a trial */
    BD_SUGGEST_WAIT = 1,  /* nothing to hand out until running trials report; ask again later */
    BD_SUGGEST_DONE = 2   /* the study is finished */
};

typedef enum {
    BD_SEV_CREATED = 0,  /* values match bd_event_type in storage/store.h */
    BD_SEV_MEASUREMENT,
    BD_SEV_COMPLETED,
    BD_SEV_FAILED,
    BD_SEV_EXPIRED,
    BD_SEV_STOPPED
} bd_sched_event_type;

typedef struct bd_event {
    bd_sched_event_type type;
    int64_t trial_id;
    int64_t config_id;       /* the config's id (first trial of that config) */
    double budget;           /* the trial's budget */
    const json_t *config;    /* borrowed for the call; CREATED only, else NULL (incref to keep) */
    int64_t resume_from;     /* CREATED: as suggested */
    const json_t *extra;     /* CREATED: as suggested (borrowed; may be NULL) */
    double step;             /* MEASUREMENT: the worker's step (epoch, ...) */
    double loss;             /* MEASUREMENT, COMPLETED: minimized objective, +INFINITY if diverged */
    int timeout;             /* COMPLETED: the run hit its cap; loss is then the cap */
    double elapsed_seconds;  /* MEASUREMENT, COMPLETED: worker-reported seconds, NAN if not given */
    int replay;              /* 1 while rebuilding from storage (decisions are ignored) */
} bd_event;

/* The scheduler's answer to a measurement. */
typedef struct bd_decision {
    int stop;                /* 1: stop the trial now */
    char reason[128];        /* why, for the worker */
} bd_decision;

typedef struct bd_sched {
    const struct bd_sched_ops *ops; /* embed first in each scheduler's struct */
} bd_sched;

struct bd_sched_ops {
    uint32_t abi;       /* == BD_SCHED_ABI */
    const char *name;   /* "hyperband", ...: stored with the study */
    /* Validates def->options (err->field "scheduler.options.<name>") and builds
     * an empty scheduler. *out is new (destroy). */
    int (*create)(const bd_study_def *def, bd_sched **out, bd_err *err);
    /* Proposes one trial into *out, or answers WAIT / DONE. Must not change
     * state: calling it twice without an observe in between gives the same answer. */
    int (*suggest)(bd_sched *s, const bd_suggest_ctx *ctx, bd_suggestion *out, bd_err *err);
    /* Takes in one stored event. out is zeroed by the engine; only a
     * MEASUREMENT's decision is used. Events are never rejected here: the
     * engine validated them, and a replay must not fail. */
    int (*observe)(bd_sched *s, const bd_event *ev, bd_decision *out, bd_err *err);
    /* The scheduler's state for GET /v1/studies/{id} (brackets, arms, testers),
     * optionally with "incumbent" (same shape as the study's: trial_id,
     * config_id, config, value, budget) when the scheduler defines its own
     * answer, e.g. SPC's most-tested config. *out is new. */
    int (*describe)(const bd_sched *s, json_t **out);
    void (*destroy)(bd_sched *s); /* NULL-safe */
};

/* registry.c: the built-in schedulers. NULL if name is unknown. */
const struct bd_sched_ops *bd_sched_find(const char *name);
/* Comma-separated list of the registered names (static), for error messages. */
const char *bd_sched_names(void);

/* Option helpers for create(): read a number/int/bool/string option with a
 * default, failing with err->field = "scheduler.options.<key>" on a wrong type
 * or out-of-range value. */
int bd_opt_number(const json_t *opts, const char *key, double dflt, double lo, double hi,
                  double *out, bd_err *err) BD_MUST_CHECK;
int bd_opt_int(const json_t *opts, const char *key, long long dflt, long long lo, long long hi,
               long long *out, bd_err *err) BD_MUST_CHECK;
int bd_opt_bool(const json_t *opts, const char *key, int dflt, int *out, bd_err *err) BD_MUST_CHECK;
/* *out borrowed from opts (or dflt). allowed: NULL-terminated list, or NULL for any. */
int bd_opt_string(const json_t *opts, const char *key, const char *dflt, const char *const *allowed,
                  const char **out, bd_err *err) BD_MUST_CHECK;
/* Rejects keys not in the NULL-terminated list known (typos must not pass silently). */
int bd_opt_known(const json_t *opts, const char *const *known, bd_err *err) BD_MUST_CHECK;

#endif
