/* sched.h: the scheduler plugin interface. Every algorithm is one .c file
 * implementing bd_sched_ops, registered in registry.c by its name: random,
 * tpe, successive_halving, hyperband, asha, gp_ucb, bo_bos, rising_bandits,
 * spc, caps_race and nsga2 (test builds add test_sleep).
 *
 * Contract (README.md beside this file; docs/SCHEDULERS.md says how each
 * scheduler uses it):
 * - Only events change a scheduler's state. suggest() proposes the next trial
 *   without changing state; the engine feeds it back as a BD_EV_CREATED
 *   event through observe() and stores it. Measurements, completions,
 *   failures, lease expiries and stops arrive the same way. On start the
 *   engine replays a study's stored events through observe(), the same code
 *   path live requests take, then calls replayed() once.
 * - A scheduler's state, fitted models included, must be a pure function of
 *   the events it has seen (and the study definition): the same events give
 *   the same state, live or replayed, so a restart changes no decision.
 * - Randomness comes only from the ctx->rng streams: suggest's is seeded from
 *   (study seed, number of trials created), observe's from (study seed,
 *   event id). Both are the same live and in a replay.
 * - The engine holds the study's mutex (and no other lock) around every call:
 *   a slow call delays only its own study. A scheduler is single-threaded
 *   and must not write storage or keep private files.
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
#include "../event_type.h"
#include "../rng.h"
#include "../space.h"

#define BD_SCHED_ABI 2

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
    int has_bounds;             /* objective.bounds given: values lie in [bound_low, bound_high] */
    double bound_low, bound_high; /* as declared (not negated for maximize) */
    const json_t *instances;    /* problem instances: array of names or paths, or NULL */
    size_t n_instances;         /* its length (0 without instances) */
    int64_t limit_trials;       /* limits the engine enforces (0 = none): trials created, */
    double limit_resource;      /*   resource handed out, */
    double limit_seconds;       /*   worker-reported seconds; limit_trials is Rising Bandits' T */
    /* Several objectives and constraints (docs/USAGE.md). A one-objective
     * study has n_objectives == 1 and objectives[0] is (metric, maximize)
     * above; objectives may then be NULL. The engine gives a study with
     * n_objectives > 1 only to schedulers with ops->multi_objective, and
     * one with constraints only to schedulers with ops->takes_constraints. */
    size_t n_objectives;
    const struct bd_objective *objectives; /* n_objectives entries */
    size_t n_constraints;       /* 0: every trial is feasible */
} bd_study_def;

/* One objective of a study with several. */
typedef struct bd_objective {
    const char *metric;
    int maximize;               /* the engine negates its values so schedulers minimize */
} bd_objective;

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
                             ({"bracket": 2, "rung": 1}, {"tester": 7}) */
    int has_instance;     /* the trial runs on problem instance number instance */
    int64_t instance;     /*   (an index into def->instances; the budget is its cap) */
} bd_suggestion;

/* suggest() results besides errors (< 0). */
enum {
    BD_SUGGEST_TRIAL = 0, /* *out holds a trial */
    BD_SUGGEST_WAIT = 1,  /* nothing to hand out until running trials report; ask again later */
    BD_SUGGEST_DONE = 2   /* the study is finished */
};


typedef struct bd_event {
    bd_event_type type;
    int64_t id;              /* the stored event's id: increasing within a study */
    int64_t trial_id;
    int64_t config_id;       /* the config's id (first trial of that config) */
    double budget;           /* the trial's budget */
    const json_t *config;    /* borrowed for the call; CREATED only, else NULL (incref to keep);
                                NULL on a replayed continuing trial when ops->continues_by_id */
    int64_t resume_from;     /* CREATED: as suggested */
    const json_t *extra;     /* CREATED: as suggested (borrowed; may be NULL) */
    int has_instance;        /* CREATED: the trial runs on problem instance number */
    int64_t instance;        /*   instance (an index into def->instances) */
    double step;             /* MEASUREMENT: the worker's step (epoch, ...) */
    double loss;             /* MEASUREMENT, COMPLETED: minimized objective, +INFINITY if diverged */
    int timeout;             /* COMPLETED: the run hit its cap; loss is then the cap */
    double elapsed_seconds;  /* MEASUREMENT, COMPLETED: worker-reported seconds, NAN if not given */
    /* Several objectives: MEASUREMENT, COMPLETED and PRIOR events carry
     * def->n_objectives minimized values (each negated if maximized,
     * +INFINITY if diverged), borrowed for the call; loss == losses[0].
     * NULL in a one-objective study. */
    const double *losses;
    /* Constraints: COMPLETED and PRIOR events carry 0 when every constraint
     * holds, else the sum over the failing ones of how far the value lies
     * outside its bound (> 0; +INFINITY for a diverged run). Always 0 in a
     * study without constraints. */
    double violation;
} bd_event;
/* A PRIOR event (event_type.h) carries a warm-start result: trial_id,
 * config_id, config (borrowed), budget and loss (+INFINITY if diverged),
 * elapsed_seconds NAN. No other event ever names its trial. */

typedef struct bd_observe_ctx {
    bd_rng rng;              /* this event's random stream: seeded from (study seed, event id) */
    int replay;              /* 1 while rebuilding from storage (decisions are then ignored) */
} bd_observe_ctx;

/* Seeds ctx->rng for the event with this id, as the engine does. The seed
 * is salted so observe's streams never coincide with suggest's, which are
 * (study seed, trials created). */
static inline void bd_observe_ctx_seed(bd_observe_ctx *ctx, uint64_t study_seed, int64_t event_id)
{
    bd_rng_seed(&ctx->rng, study_seed ^ 0x6f62736572766521ULL /* "observe!" */, (uint64_t)event_id);
}

/* What a study's scheduler would answer now, without proposing anything. */
typedef enum {
    BD_STATUS_RUNNING = 0,   /* suggest() would hand out a trial */
    BD_STATUS_WAITING = 1,   /* nothing to hand out until running trials report */
    BD_STATUS_DONE = 2       /* the study is finished */
} bd_sched_status;

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
    int multi_fidelity; /* 1: hands out budgets between r_min and r_max, so a
                           study must declare its resource */
    /* Validates def->options (err->field "scheduler.options.<name>") and builds
     * an empty scheduler. *out is new (destroy). */
    int (*create)(const bd_study_def *def, bd_sched **out, bd_err *err);
    /* Proposes one trial into *out, or answers WAIT / DONE. Must not change
     * state: calling it twice without an observe in between gives the same answer. */
    int (*suggest)(bd_sched *s, const bd_suggest_ctx *ctx, bd_suggestion *out, bd_err *err);
    /* Takes in one event. out is zeroed by the engine; only a MEASUREMENT's
     * decision is used. Events are never rejected here: the engine validated
     * them, and a replay must not fail. */
    int (*observe)(bd_sched *s, const bd_observe_ctx *ctx, const bd_event *ev, bd_decision *out, bd_err *err);
    /* Optional (may be NULL): called once after a study's stored events were
     * replayed, before any live call: fit expensive models here rather than
     * once per replayed event. */
    void (*replayed)(bd_sched *s);
    /* What suggest() would answer now (a trial, WAIT or DONE), in O(1) or
     * close to it: reads (GET a study, list studies) ask this, never suggest. */
    bd_sched_status (*status)(const bd_sched *s);
    /* The scheduler's state for GET /v1/studies/{id} (brackets, arms, testers),
     * optionally with "incumbent" (same shape as the study's: trial_id,
     * config_id, config, value, budget) when the scheduler defines its own
     * answer, e.g. SPC's most-tested config. *out is new. */
    int (*describe)(const bd_sched *s, json_t **out);
    void (*destroy)(bd_sched *s); /* NULL-safe */
    /* Optional (may be NULL): called once as a study is created, never when
     * a stored one is loaded, before create(). Writes into options the
     * defaults that changed since earlier releases (e.g. "sampler"), so the
     * stored definition names them and a study stored before the change
     * keeps its old meaning and replays unchanged. Must leave options it
     * cannot read as they are (create() then rejects them). */
    void (*new_study_defaults)(const bd_study_def *def, json_t *options);
    /* 1: configs a user enqueued (POST /v1/studies/{id}/trials) may stand in
     * for this scheduler's fresh ones: when suggest() proposes a new config
     * (config_id 0, no resume, no instance), the engine hands out the oldest
     * enqueued config instead, with the budget and scheduler fields
     * suggest() chose. Requires that observe() takes a trial's config from
     * its CREATED event only. 0: enqueuing is refused (400). */
    int takes_enqueued;
    /* 1: observe() takes BD_EV_PRIOR (warm-start results) into its model.
     * 0: the engine never passes them (they still count in the study's
     * trials and incumbent). Stored studies replay through this flag: to
     * change it for a released scheduler, add an option that
     * new_study_defaults writes into new studies, so old ones keep their
     * meaning (rule 7 of server/sched/README.md). */
    int learns_from_prior;
    /* 1: observe() knows a continuing trial's CREATED event (config_id !=
     * trial_id: a promotion or a retry of a config it has seen) by its ids
     * and budget alone and reads neither its config nor its extra, so a
     * replay passes both as NULL instead of parsing them (half the trials of
     * a Hyperband study; 0.9 s of a million-trial replay's 5.7 s). */
    int continues_by_id;
    /* Optional (may be NULL): the heap the scheduler holds, in bytes, on the
     * safe side and cheaply: O(1), or a loop bounded by the scheduler's
     * shape, not its trials (asha: brackets x rungs), since the engine asks
     * after every request. The engine weighs it against --study-cache-mb.
     * NULL: 256 bytes a trial, which is right for schedulers that keep
     * every trial and far too much for those that keep little (a
     * million-trial random search or Hyperband study would count as 256 MB
     * and be unloaded whenever it idles). */
    size_t (*held_bytes)(const bd_sched *s);
    /* 1: takes studies with several objectives and reads ev->losses (its
     * incumbent is then the engine's Pareto front, not a single best).
     * 0: the engine refuses such a study, 400 naming "objectives". */
    int multi_objective;
    /* 1: reads ev->violation and never recommends an infeasible config.
     * 0: the engine refuses a study with constraints, 400 naming
     * "constraints". */
    int takes_constraints;
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
/* Option `configs` of the algorithm configurators (spc, caps_race): list must
 * be an array of 1 to max configs of space, without repeats (compared in
 * canonical form: {"n": 2.0} repeats {"n": 2}). Only checks: a scheduler
 * keeps each config as bd_space_canonical_config gives it, so a worker gets
 * 2 for an int. */
int bd_opt_config_list(const json_t *list, const bd_space *space, size_t max, bd_err *err) BD_MUST_CHECK;

#endif
