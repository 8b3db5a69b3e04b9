/* sched_harness.h: an in-memory engine for scheduler unit tests. It drives
 * a bd_sched_ops vtable the way server/engine*.c does: suggest with the rng
 * seeded from (study seed, trials created), give the trial the next id, feed
 * BD_EV_CREATED, then MEASUREMENT (a stop decision is followed by STOPPED,
 * as the engine does) and COMPLETED / FAILED / EXPIRED. Every event gets the
 * next event id and observe's rng seeded as the engine seeds it. A callback decides
 * each trial's outcome; running trials finish in FIFO, reversed (newest
 * first) or random order across several workers. Every event is logged so
 * hn_replay() can rebuild a fresh scheduler through observe(replay = 1).
 *
 * Header-only (static functions) so each test_<x>.c stays one executable;
 * include it after <criterion/criterion.h>. Checks every suggestion the way
 * the engine does (budget in range and whole for integer resources, config
 * valid, config_id / resume_from naming earlier trials of the same config)
 * and, when check_pure is set, that suggest() twice gives the same answer
 * and status() agrees with it.
 *
 * Several objectives and constraints (sched.h): hn_open_mo declares them,
 * hn_complete_mo reports a trial's minimized losses and its violation, and
 * an outcome callback mo_outcome (instead of outcome) decides them in
 * hn_run. The log keeps each event's losses, so a replay feeds them too. */
#ifndef BD_SCHED_HARNESS_H
#define BD_SCHED_HARNESS_H

#include <criterion/criterion.h>
#include <jansson.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/common.h"
#include "server/json_util.h"
#include "server/model/pareto.h"
#include "server/rng.h"
#include "server/sched/sched.h"
#include "server/space.h"

#define HN_FN static __attribute__((unused))

enum { HN_RUNNING = 0, HN_COMPLETED, HN_FAILED, HN_EXPIRED, HN_STOPPED }; /* trial states */
enum { HN_FIFO = 0, HN_LIFO, HN_RANDOM };                     /* completion orders */
enum { HN_DONE = 0, HN_LIMIT, HN_STUCK };                     /* hn_run results */
#define HN_MAX_OBJ 8                                          /* objectives a test study may have */

typedef struct hn_trial {
    int64_t id, config_id, resume_from;
    double budget;
    json_t *config;      /* owned */
    json_t *extra;       /* owned, may be NULL */
    long long iteration; /* extra "iteration", else 1 */
    int bracket, rung;   /* extra "bracket" / "rung", else -1 */
    int has_instance;    /* algorithm configuration: the run's instance */
    int64_t instance;
    int state;           /* HN_* state */
    double loss;         /* when completed */
    double losses[HN_MAX_OBJ]; /* when completed in a study with several objectives */
    double violation;    /* when completed: 0 feasible, > 0 infeasible */
    int worker;
    int epoch;           /* hn_run_epochs: epochs trained and reported so far */
} hn_trial;

typedef struct hn hn;
/* Decides a finished trial: returns HN_COMPLETED (and sets *loss), HN_FAILED or HN_EXPIRED. */
typedef int (*hn_outcome_fn)(const hn *h, const hn_trial *t, void *ud, double *loss);
/* The same for a study with several objectives or constraints: sets
 * losses[0..n_objectives-1] (minimized) and *violation. */
typedef int (*hn_mo_outcome_fn)(const hn *h, const hn_trial *t, void *ud, double *losses, double *violation);

typedef struct hn_logged {
    bd_event ev; /* config / extra / losses point at the owned copies below */
    json_t *config, *extra;
    double *losses; /* owned, or NULL */
} hn_logged;

struct hn {
    const struct bd_sched_ops *ops;
    bd_sched *s;
    bd_study_def def;
    bd_space *space;
    json_t *options;
    json_t *instances; /* NULL without */
    bd_err err;       /* from create */
    hn_trial *trials; /* trials[id - 1] */
    size_t n_trials, cap_trials;
    hn_logged *log;
    size_t n_log, cap_log;
    hn_outcome_fn outcome; /* NULL: hn_loss_default */
    hn_mo_outcome_fn mo_outcome; /* when set, decides instead of outcome (hn_open_mo studies) */
    void *ud;
    bd_objective objectives[HN_MAX_OBJ]; /* hn_open_mo: "f0", "f1", ... minimized */
    int check_pure; /* 1 (default): suggest twice and compare */
    /* hn_run statistics */
    long long waits;         /* WAIT answers */
    long long first_wait_at; /* trials created at the first WAIT, -1 if none */
    int64_t *running;        /* running trial ids started by hn_run, oldest first */
    size_t n_running, cap_running;
    bd_rng order_rng;
};

/* Default outcome: loss = x + 1/budget, x being the config's "x". */
HN_FN int hn_loss_default(const hn *h, const hn_trial *t, void *ud, double *loss)
{
    (void)h;
    (void)ud;
    *loss = json_number_value(json_object_get(t->config, "x")) + 1.0 / t->budget;
    return HN_COMPLETED;
}

/* Opens a study over the parameters params (JSON list text) with the given
 * scheduler options (JSON text) and problem instances (JSON list text, or
 * NULL for none). Returns create()'s code (h->err says why). */
static void hn_prepare(hn *h, const struct bd_sched_ops *ops, const char *params, const char *options, double r_min,
                       double r_max, int integer, const char *instances)
{
    json_error_t jerr;
    memset(h, 0, sizeof *h);
    json_t *p = json_loads(params, 0, &jerr);
    cr_assert(p, "bad parameters JSON in test: %s", jerr.text);
    cr_assert_eq(bd_space_parse(p, &h->space, &h->err), 0, "%s", h->err.message);
    json_decref(p);
    h->options = json_loads(options ? options : "{}", 0, &jerr);
    cr_assert(h->options, "bad options JSON in test: %s", jerr.text);
    h->ops = ops;
    h->def = (bd_study_def){.id = 1,
                            .name = "t",
                            .space = h->space,
                            .metric = "loss",
                            .resource_name = "units",
                            .r_min = r_min,
                            .r_max = r_max,
                            .resource_integer = integer,
                            .options = h->options,
                            .seed = 42,
                            .lease_seconds = 300};
    if (instances) {
        h->instances = json_loads(instances, 0, &jerr);
        cr_assert(json_is_array(h->instances), "bad instances JSON in test");
        h->def.instances = h->instances;
        h->def.n_instances = json_array_size(h->instances);
    }
    h->check_pure = 1;
    h->first_wait_at = -1;
    bd_rng_seed(&h->order_rng, 7, 7);
}

HN_FN int hn_open_instances(hn *h, const struct bd_sched_ops *ops, const char *params, const char *options,
                            double r_min, double r_max, int integer, const char *instances)
{
    hn_prepare(h, ops, params, options, r_min, r_max, integer, instances);
    return ops->create(&h->def, &h->s, &h->err);
}

/* Opens a study over params with n_objectives minimized objectives "f0",
 * "f1", ... (1 <= n_objectives <= HN_MAX_OBJ; with 1 it is a one-objective
 * study, objectives NULL) and n_constraints constraints, budget 1. */
HN_FN int hn_open_mo(hn *h, const struct bd_sched_ops *ops, const char *params, const char *options,
                     size_t n_objectives, size_t n_constraints)
{
    static const char *const names[HN_MAX_OBJ] = {"f0", "f1", "f2", "f3", "f4", "f5", "f6", "f7"};
    cr_assert(n_objectives >= 1 && n_objectives <= HN_MAX_OBJ);
    hn_prepare(h, ops, params, options, 1, 1, 1, NULL);
    for (size_t j = 0; j < n_objectives; j++)
        h->objectives[j] = (bd_objective){.metric = names[j], .maximize = 0};
    h->def.metric = names[0];
    h->def.n_objectives = n_objectives;
    h->def.objectives = n_objectives > 1 ? h->objectives : NULL;
    h->def.n_constraints = n_constraints;
    return ops->create(&h->def, &h->s, &h->err);
}

/* Opens a study over the parameters params (JSON list text) with the given
 * scheduler options (JSON text). Returns create()'s code (h->err says why). */
HN_FN int hn_open_space(hn *h, const struct bd_sched_ops *ops, const char *params, const char *options, double r_min,
                        double r_max, int integer)
{
    return hn_open_instances(h, ops, params, options, r_min, r_max, integer, NULL);
}

/* Opens a study with one float parameter x in [0, 1] and the given
 * scheduler options (JSON text). Returns create()'s code (h->err says why). */
HN_FN int hn_open(hn *h, const struct bd_sched_ops *ops, const char *options, double r_min, double r_max, int integer)
{
    return hn_open_space(h, ops, "[{\"name\": \"x\", \"type\": \"float\", \"low\": 0, \"high\": 1}]", options,
                         r_min, r_max, integer);
}

HN_FN void hn_close(hn *h)
{
    if (h->s)
        h->ops->destroy(h->s);
    for (size_t i = 0; i < h->n_trials; i++) {
        json_decref(h->trials[i].config);
        json_decref(h->trials[i].extra);
    }
    for (size_t i = 0; i < h->n_log; i++) {
        json_decref(h->log[i].config);
        json_decref(h->log[i].extra);
        free(h->log[i].losses);
    }
    free(h->trials);
    free(h->log);
    free(h->running);
    json_decref(h->options);
    json_decref(h->instances);
    bd_space_free(h->space);
    memset(h, 0, sizeof *h);
}

HN_FN hn_trial *hn_get(hn *h, int64_t id)
{
    cr_assert(id >= 1 && (size_t)id <= h->n_trials, "no trial %lld", (long long)id);
    return &h->trials[id - 1];
}

/* Logs ev under the next event id and feeds it; returns the decision. */
static bd_decision hn_feed(hn *h, const bd_event *ev, json_t *config, json_t *extra)
{
    bd_decision d = {0};
    bd_observe_ctx ctx = {.replay = 0};
    bd_err err;
    if (h->n_log == h->cap_log) {
        h->cap_log = h->cap_log ? 2 * h->cap_log : 256;
        h->log = realloc(h->log, h->cap_log * sizeof *h->log);
    }
    hn_logged *l = &h->log[h->n_log++];
    l->ev = *ev;
    l->ev.id = (int64_t)h->n_log;
    l->config = config ? json_incref(config) : NULL;
    l->extra = extra ? json_incref(extra) : NULL;
    l->losses = NULL;
    if (ev->losses) { /* a heap copy: the log moves as it grows */
        l->losses = malloc(h->def.n_objectives * sizeof *l->losses);
        memcpy(l->losses, ev->losses, h->def.n_objectives * sizeof *l->losses);
        l->ev.losses = l->losses;
    }
    bd_observe_ctx_seed(&ctx, h->def.seed, l->ev.id);
    cr_assert_eq(h->ops->observe(h->s, &ctx, &l->ev, &d, &err), 0);
    return d;
}

static void hn_ctx(const hn *h, bd_suggest_ctx *ctx)
{
    ctx->trials_created = (int64_t)h->n_trials;
    ctx->worker = "";
    bd_rng_seed(&ctx->rng, h->def.seed, (uint64_t)h->n_trials);
}

/* The CREATED event of trial t, as the engine would feed it. */
static bd_event hn_created_event(const hn_trial *t)
{
    return (bd_event){.type = BD_EV_CREATED,
                      .trial_id = t->id,
                      .config_id = t->config_id,
                      .budget = t->budget,
                      .config = t->config,
                      .resume_from = t->resume_from,
                      .extra = t->extra,
                      .has_instance = t->has_instance,
                      .instance = t->instance,
                      .loss = NAN,
                      .elapsed_seconds = NAN};
}

static void hn_check_suggestion(hn *h, const bd_suggestion *s)
{
    bd_err err;
    cr_assert(json_is_object(s->config));
    cr_assert_eq(bd_space_validate_config(h->space, s->config, &err), 0, "invalid config: %s", err.message);
    cr_assert(s->budget >= h->def.r_min - 1e-9 && s->budget <= h->def.r_max + 1e-9, "budget %g outside [%g, %g]",
              s->budget, h->def.r_min, h->def.r_max);
    if (h->def.resource_integer)
        cr_assert(s->budget == floor(s->budget), "integer resource got budget %g", s->budget);
    if (s->config_id) {
        hn_trial *first = hn_get(h, s->config_id);
        cr_assert_eq(first->config_id, s->config_id, "config_id %lld is not a config", (long long)s->config_id);
        cr_assert(json_equal(first->config, s->config), "config differs from config %lld", (long long)s->config_id);
    }
    if (s->resume_from) {
        cr_assert(s->config_id, "resume_from without config_id");
        cr_assert_eq(hn_get(h, s->resume_from)->config_id, s->config_id, "resume_from names another config");
    }
}

static int hn_same_suggestion(const bd_suggestion *a, const bd_suggestion *b)
{
    return json_equal(a->config, b->config) && a->config_id == b->config_id && a->budget == b->budget &&
           a->resume_from == b->resume_from && a->has_instance == b->has_instance && a->instance == b->instance &&
           ((!a->extra && !b->extra) || (a->extra && b->extra && json_equal(a->extra, b->extra)));
}

/* Stores a suggestion as trial (next id) and feeds CREATED. Steals s's references. */
static int64_t hn_create(hn *h, bd_suggestion *s, int worker)
{
    if (h->n_trials == h->cap_trials) {
        h->cap_trials = h->cap_trials ? 2 * h->cap_trials : 256;
        h->trials = realloc(h->trials, h->cap_trials * sizeof *h->trials);
    }
    int64_t id = (int64_t)h->n_trials + 1;
    hn_trial *t = &h->trials[h->n_trials++];
    memset(t, 0, sizeof *t);
    t->id = id;
    t->config_id = s->config_id ? s->config_id : id;
    t->resume_from = s->resume_from;
    t->budget = s->budget;
    t->config = s->config;
    t->extra = s->extra;
    t->iteration = bd_json_int(s->extra, "iteration", 1);
    t->bracket = (int)bd_json_int(s->extra, "bracket", -1);
    t->rung = (int)bd_json_int(s->extra, "rung", -1);
    t->has_instance = s->has_instance;
    t->instance = s->instance;
    t->state = HN_RUNNING;
    t->worker = worker;
    bd_event ev = hn_created_event(t);
    if (h->ops->continues_by_id && t->config_id != t->id) {
        /* as a replay feeds it (server/study.c): the scheduler must not need them */
        ev.config = ev.extra = NULL;
        hn_feed(h, &ev, NULL, NULL);
        return id;
    }
    hn_feed(h, &ev, t->config, t->extra);
    return id;
}

/* One suggest; on a trial, records it (for worker) and returns its id in *id. */
HN_FN int hn_suggest(hn *h, int worker, int64_t *id)
{
    bd_suggest_ctx ctx;
    bd_suggestion s = {0};
    bd_err err;
    hn_ctx(h, &ctx);
    int rc = h->ops->suggest(h->s, &ctx, &s, &err);
    cr_assert(rc >= 0, "suggest failed: %s", err.message);
    if (h->check_pure) {
        bd_suggestion again = {0};
        bd_suggest_ctx ctx2;
        hn_ctx(h, &ctx2);
        int rc2 = h->ops->suggest(h->s, &ctx2, &again, &err);
        cr_assert_eq(rc, rc2, "suggest is not pure");
        if (rc == BD_SUGGEST_TRIAL)
            cr_assert(hn_same_suggestion(&s, &again), "suggest is not pure");
        json_decref(again.config);
        json_decref(again.extra);
    }
    if (h->check_pure)
        cr_assert_eq((int)h->ops->status(h->s), rc, "status() disagrees with suggest()");
    if (rc != BD_SUGGEST_TRIAL) {
        json_decref(s.config);
        json_decref(s.extra);
        return rc;
    }
    hn_check_suggestion(h, &s);
    *id = hn_create(h, &s, worker);
    return rc;
}

/* Ends running trial id with an event of this type; seconds is the
 * worker-reported elapsed_seconds (NAN: none). */
static void hn_end_timed(hn *h, int64_t id, bd_event_type type, double loss, double seconds)
{
    hn_trial *t = hn_get(h, id);
    cr_assert_eq(t->state, HN_RUNNING, "trial %lld is not running", (long long)id);
    t->state = type == BD_EV_COMPLETED ? HN_COMPLETED
               : type == BD_EV_FAILED  ? HN_FAILED
               : type == BD_EV_STOPPED ? HN_STOPPED
                                       : HN_EXPIRED;
    t->loss = loss;
    for (size_t i = 0; i < h->n_running; i++)
        if (h->running[i] == id) {
            memmove(&h->running[i], &h->running[i + 1], (h->n_running - i - 1) * sizeof *h->running);
            h->n_running--;
            break;
        }
    bd_event ev = {.type = type,
                   .trial_id = id,
                   .config_id = t->config_id,
                   .budget = t->budget,
                   .loss = type == BD_EV_COMPLETED ? loss : NAN,
                   .elapsed_seconds = seconds};
    hn_feed(h, &ev, NULL, NULL);
}

static void hn_end(hn *h, int64_t id, bd_event_type type, double loss)
{
    hn_end_timed(h, id, type, loss, NAN);
}

/* Reports a measurement of running trial id; on a stop decision the trial
 * ends with STOPPED, as the engine does. Returns the decision. */
HN_FN bd_decision hn_measure(hn *h, int64_t id, double step, double loss)
{
    hn_trial *t = hn_get(h, id);
    cr_assert_eq(t->state, HN_RUNNING, "trial %lld is not running", (long long)id);
    bd_event ev = {.type = BD_EV_MEASUREMENT, .trial_id = id, .config_id = t->config_id, .budget = t->budget,
                   .step = step, .loss = loss, .elapsed_seconds = NAN};
    bd_decision d = hn_feed(h, &ev, NULL, NULL);
    if (d.stop) {
        hn_end(h, id, BD_EV_STOPPED, NAN);
        t->state = HN_STOPPED;
    }
    return d;
}

HN_FN void hn_complete(hn *h, int64_t id, double loss)
{
    hn_end(h, id, BD_EV_COMPLETED, loss);
}
/* Completes trial id of an hn_open_mo study with its n_objectives losses
 * (minimized; +INFINITY for a diverged run) and its violation (0: feasible),
 * as the engine feeds them: losses NULL and loss = losses[0] with one objective. */
HN_FN void hn_complete_mo(hn *h, int64_t id, const double *losses, double violation)
{
    hn_trial *t = hn_get(h, id);
    size_t m = h->def.n_objectives ? h->def.n_objectives : 1;
    cr_assert_eq(t->state, HN_RUNNING, "trial %lld is not running", (long long)id);
    t->state = HN_COMPLETED;
    t->loss = losses[0];
    memcpy(t->losses, losses, m * sizeof *losses);
    t->violation = violation;
    for (size_t i = 0; i < h->n_running; i++)
        if (h->running[i] == id) {
            memmove(&h->running[i], &h->running[i + 1], (h->n_running - i - 1) * sizeof *h->running);
            h->n_running--;
            break;
        }
    bd_event ev = {.type = BD_EV_COMPLETED, .trial_id = id, .config_id = t->config_id, .budget = t->budget,
                   .loss = losses[0], .elapsed_seconds = NAN, .losses = m > 1 ? losses : NULL,
                   .violation = violation};
    hn_feed(h, &ev, NULL, NULL);
}
/* Completes trial id with the worker's elapsed_seconds (the cost-aware schedulers read it). */
HN_FN void hn_complete_seconds(hn *h, int64_t id, double loss, double seconds)
{
    hn_end_timed(h, id, BD_EV_COMPLETED, loss, seconds);
}
/* Completes trial id as a run that hit its cap (status "timeout"): the
 * engine then reports the cap as the loss. */
HN_FN void hn_complete_timeout(hn *h, int64_t id)
{
    hn_trial *t = hn_get(h, id);
    cr_assert_eq(t->state, HN_RUNNING, "trial %lld is not running", (long long)id);
    t->state = HN_COMPLETED;
    t->loss = t->budget;
    for (size_t i = 0; i < h->n_running; i++)
        if (h->running[i] == id) {
            memmove(&h->running[i], &h->running[i + 1], (h->n_running - i - 1) * sizeof *h->running);
            h->n_running--;
            break;
        }
    bd_event ev = {.type = BD_EV_COMPLETED, .trial_id = id, .config_id = t->config_id, .budget = t->budget,
                   .loss = t->budget, .timeout = 1, .elapsed_seconds = t->budget};
    hn_feed(h, &ev, NULL, NULL);
}
HN_FN void hn_fail(hn *h, int64_t id)
{
    hn_end(h, id, BD_EV_FAILED, NAN);
}
HN_FN void hn_expire(hn *h, int64_t id)
{
    hn_end(h, id, BD_EV_EXPIRED, NAN);
}

/* Ends trial id as the outcome callback says. */
HN_FN void hn_finish(hn *h, int64_t id)
{
    double loss = NAN;
    const hn_trial *t = hn_get(h, id);
    if (h->mo_outcome) {
        double losses[HN_MAX_OBJ], violation = 0;
        int what = h->mo_outcome(h, t, h->ud, losses, &violation);
        if (what == HN_COMPLETED)
            hn_complete_mo(h, id, losses, violation);
        else if (what == HN_FAILED)
            hn_fail(h, id);
        else
            hn_expire(h, id);
        return;
    }
    int what = (h->outcome ? h->outcome : hn_loss_default)(h, t, h->ud, &loss);
    if (what == HN_COMPLETED)
        hn_complete(h, id, loss);
    else if (what == HN_FAILED)
        hn_fail(h, id);
    else
        hn_expire(h, id);
}

/* Keeps `workers` workers busy: every idle worker asks for a trial, then
 * one running trial (chosen by order) ends through the outcome callback.
 * Stops when the scheduler is DONE with nothing running (HN_DONE), when
 * max_trials trials exist (HN_LIMIT, 0 = no limit), or when it answers WAIT
 * with nothing running (HN_STUCK, a bug). */
HN_FN int hn_run(hn *h, int workers, int order, long long max_trials)
{
    if ((size_t)workers > h->cap_running) {
        h->cap_running = (size_t)workers;
        h->running = realloc(h->running, h->cap_running * sizeof *h->running);
    }
    for (;;) {
        int answer = BD_SUGGEST_TRIAL;
        while ((int)h->n_running < workers) {
            if (max_trials && (long long)h->n_trials >= max_trials)
                return HN_LIMIT;
            int64_t id;
            answer = hn_suggest(h, (int)h->n_running, &id);
            if (answer != BD_SUGGEST_TRIAL) {
                if (answer == BD_SUGGEST_WAIT) {
                    h->waits++;
                    if (h->first_wait_at < 0)
                        h->first_wait_at = (long long)h->n_trials;
                }
                break;
            }
            h->running[h->n_running++] = id;
        }
        if (!h->n_running)
            return answer == BD_SUGGEST_DONE ? HN_DONE : HN_STUCK;
        size_t pick = order == HN_FIFO   ? 0
                      : order == HN_LIFO ? h->n_running - 1
                                         : (size_t)bd_rng_below(&h->order_rng, h->n_running);
        hn_finish(h, h->running[pick]);
    }
}

/* The loss trial t reports after `epoch` epochs (hn_run_epochs). */
typedef double (*hn_curve_fn)(const hn *h, const hn_trial *t, int epoch, void *ud);

/* For the stopping-type schedulers: keeps `workers` workers busy, as hn_run
 * does, but a trial trains one epoch at a time: each round one running
 * trial (chosen by order) trains its next epoch and reports it (hn_measure:
 * a stop answer ends it); at its budget it completes with that epoch's
 * loss, or fails when fail_id says so (ids for which fail_id(id) is true
 * fail after their first epoch; NULL: none). Returns as hn_run. */
HN_FN int hn_run_epochs(hn *h, int workers, int order, long long max_trials, hn_curve_fn curve, void *ud,
                        int (*fail_id)(int64_t id))
{
    if ((size_t)workers > h->cap_running) {
        h->cap_running = (size_t)workers;
        h->running = realloc(h->running, h->cap_running * sizeof *h->running);
    }
    for (;;) {
        int answer = BD_SUGGEST_TRIAL;
        while ((int)h->n_running < workers) {
            if (max_trials && (long long)h->n_trials >= max_trials)
                return HN_LIMIT;
            int64_t id;
            answer = hn_suggest(h, (int)h->n_running, &id);
            if (answer != BD_SUGGEST_TRIAL)
                break;
            h->running[h->n_running++] = id;
        }
        if (!h->n_running)
            return answer == BD_SUGGEST_DONE ? HN_DONE : HN_STUCK;
        size_t pick = order == HN_FIFO   ? 0
                      : order == HN_LIFO ? h->n_running - 1
                                         : (size_t)bd_rng_below(&h->order_rng, h->n_running);
        int64_t id = h->running[pick];
        hn_trial *t = hn_get(h, id);
        double loss = curve(h, t, ++t->epoch, ud);
        if (fail_id && fail_id(id) && t->epoch == 1) {
            hn_fail(h, id);
            continue;
        }
        if (t->epoch >= t->budget) {
            hn_complete(h, id, loss);
            continue;
        }
        hn_measure(h, id, t->epoch, loss); /* a stop ends it and takes it off the running list */
    }
}

/* Reports the same measurement of running trial id to h's scheduler (as
 * hn_measure does, logged, ending the trial on a stop) and to other (a
 * replayed copy, fed live: replay = 0, STOPPED after a stop). Returns 1 when
 * both answered alike. */
HN_FN int hn_measure_both(hn *h, bd_sched *other, int64_t id, double step, double loss)
{
    bd_decision d = hn_measure(h, id, step, loss), e = {0};
    bd_err err;
    for (size_t i = h->n_log - (d.stop ? 2 : 1); i < h->n_log; i++) { /* the MEASUREMENT, then any STOPPED */
        bd_observe_ctx ctx = {.replay = 0};
        bd_decision x = {0};
        bd_observe_ctx_seed(&ctx, h->def.seed, h->log[i].ev.id);
        cr_assert_eq(h->ops->observe(other, &ctx, &h->log[i].ev, &x, &err), 0);
        if (h->log[i].ev.type == BD_EV_MEASUREMENT)
            e = x;
    }
    return d.stop == e.stop && strcmp(d.reason, e.reason) == 0;
}

/* Trials with this bracket label and budget (iteration < 0: any iteration). */
HN_FN long long hn_count(const hn *h, long long iteration, int bracket, double budget)
{
    long long n = 0;
    for (size_t i = 0; i < h->n_trials; i++) {
        const hn_trial *t = &h->trials[i];
        if ((iteration < 0 || t->iteration == iteration) && t->bracket == bracket &&
            fabs(t->budget - budget) <= 1e-9 * fmax(1, budget))
            n++;
    }
    return n;
}

/* The smallest loss of the completed trials (+INFINITY if none). */
HN_FN double hn_best_loss(const hn *h)
{
    double best = INFINITY;
    for (size_t i = 0; i < h->n_trials; i++)
        if (h->trials[i].state == HN_COMPLETED && h->trials[i].loss < best)
            best = h->trials[i].loss;
    return best;
}

/* A fresh scheduler rebuilt by replaying every logged event. New (destroy). */
HN_FN bd_sched *hn_replay(hn *h)
{
    bd_sched *r = NULL;
    bd_err err;
    cr_assert_eq(h->ops->create(&h->def, &r, &err), 0);
    for (size_t i = 0; i < h->n_log; i++) {
        bd_event ev = h->log[i].ev;
        bd_decision d = {0};
        bd_observe_ctx ctx = {.replay = 1};
        bd_observe_ctx_seed(&ctx, h->def.seed, ev.id);
        ev.config = h->log[i].config;
        ev.extra = h->log[i].extra;
        cr_assert_eq(h->ops->observe(r, &ctx, &ev, &d, &err), 0);
    }
    if (h->ops->replayed)
        h->ops->replayed(r);
    return r;
}

/* Do h's scheduler and other propose the same next k trials? Each one is
 * created in both (other gets the same CREATED event). Also compares
 * describe() before the first suggestion. */
HN_FN int hn_same_next(hn *h, bd_sched *other, int k)
{
    json_t *d1 = NULL, *d2 = NULL;
    cr_assert_eq(h->ops->describe(h->s, &d1), 0);
    cr_assert_eq(h->ops->describe(other, &d2), 0);
    int same = json_equal(d1, d2);
    json_decref(d1);
    json_decref(d2);
    for (int i = 0; i < k && same; i++) {
        bd_suggest_ctx ctx;
        bd_suggestion a = {0}, b = {0};
        bd_err err;
        hn_ctx(h, &ctx);
        int ra = h->ops->suggest(h->s, &ctx, &a, &err);
        hn_ctx(h, &ctx);
        int rb = h->ops->suggest(other, &ctx, &b, &err);
        same = ra == rb && (ra != BD_SUGGEST_TRIAL || hn_same_suggestion(&a, &b));
        json_decref(b.config);
        json_decref(b.extra);
        if (!same || ra != BD_SUGGEST_TRIAL) {
            json_decref(a.config);
            json_decref(a.extra);
            break;
        }
        int64_t id = hn_create(h, &a, 0);
        bd_decision d = {0};
        bd_observe_ctx octx = {.replay = 0};
        bd_event ev = h->log[h->n_log - 1].ev; /* the CREATED event h's scheduler just saw */
        cr_assert_eq(ev.trial_id, id);
        bd_observe_ctx_seed(&octx, h->def.seed, ev.id);
        cr_assert_eq(h->ops->observe(other, &octx, &ev, &d, &err), 0);
    }
    return same;
}

/* The replay property for schedulers that answer measurements: rebuilds
 * h's scheduler from its log, then every running trial's remaining epochs
 * (losses from curve) must get the same continue/stop answer from both,
 * and the next 20 suggestions must be the same. label and at name the case
 * in failures. */
HN_FN void hn_expect_replay_answers_alike(hn *h, hn_curve_fn curve, void *ud, const char *label, long long at)
{
    bd_sched *r = hn_replay(h);
    int64_t running[8];
    size_t n = h->n_running;
    cr_assert_leq(n, sizeof running / sizeof running[0]);
    if (n) /* h->running is NULL before any trial ran */
        memcpy(running, h->running, n * sizeof *running);
    for (size_t i = 0; i < n; i++) {
        hn_trial *t = hn_get(h, running[i]);
        for (int e = t->epoch + 1; e < t->budget && t->state == HN_RUNNING; e++)
            cr_expect(hn_measure_both(h, r, t->id, e, curve(h, t, e, ud)),
                      "%s: trial %lld, epoch %d answered differently after a replay at %lld", label, (long long)t->id,
                      e, at);
    }
    cr_expect(hn_same_next(h, r, 20), "%s: replay after %lld trials differs", label, at);
    h->ops->destroy(r);
}

/* The scheduler's describe() (new reference). */
HN_FN json_t *hn_describe(hn *h)
{
    json_t *d = NULL;
    cr_assert_eq(h->ops->describe(h->s, &d), 0);
    cr_assert(d);
    return d;
}

/* Instance names inst00.cnf .. for a study of n instances, as a JSON array
 * text (caller frees): the algorithm configurators' tests. */
HN_FN char *hn_instance_names(int n)
{
    json_t *a = json_array();
    for (int j = 0; j < n; j++) {
        char name[32];
        snprintf(name, sizeof name, "inst%02d.cnf", j);
        json_array_append_new(a, json_string(name));
    }
    char *text = json_dumps(a, JSON_COMPACT);
    json_decref(a);
    return text;
}

/* The index of a trial's config in a one-categorical space s0, s1, ... */
HN_FN int hn_solver_of(const hn_trial *t)
{
    return atoi(json_string_value(json_object_get(t->config, "solver")) + 1);
}

/* For the held_bytes tests (sched.h): the heap in use. mallinfo2 counts
 * every thread's blocks, and Criterion's runner allocates beside a test:
 * up to 20 KB more growth was measured with the machine loaded, hence
 * HN_HEAP_NOISE of tolerance. AddressSanitizer's allocator does not report
 * through mallinfo2 (such tests skip under it). */
#define HN_HEAP_NOISE (32 * 1024)

HN_FN size_t hn_heap_in_use(void)
{
    struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
}

/* Destroys h's scheduler and returns the heap that freed; *held receives
 * what its held_bytes said just before. The harness's own records stay. */
HN_FN size_t hn_destroy_measured(hn *h, size_t *held)
{
    size_t with = hn_heap_in_use();
    *held = h->ops->held_bytes(h->s);
    h->ops->destroy(h->s);
    h->s = NULL;
    return with - hn_heap_in_use();
}

/* Checks a scheduler's held_bytes against the heap it frees: not under it
 * (beyond the noise), and not over twice it (an estimate, not a guess). */
HN_FN void hn_expect_held_bytes(hn *h, const char *what)
{
    size_t held, used = hn_destroy_measured(h, &held);
    fprintf(stderr, "%s: the scheduler freed %zu bytes of heap, held_bytes said %zu\n", what, used, held);
    cr_expect_geq(held + HN_HEAP_NOISE, used, "%s: held_bytes %zu under the heap it held, %zu", what, held, used);
    cr_expect_leq(held, 2 * used + 65536, "%s: held_bytes %zu, heap held %zu", what, held, used);
}

/* The hypervolume under ref of the feasible completed trials among the first
 * upto of a two-objective study (dominated ones add nothing): the quality
 * figure of the multi-objective schedulers' tests against random search. */
HN_FN double hn_feasible_hv2(const hn *h, size_t upto, const double ref[2])
{
    double *pts = malloc(2 * (upto + 1) * sizeof *pts);
    size_t n = 0;
    cr_assert(pts);
    for (size_t i = 0; i < upto && i < h->n_trials; i++)
        if (h->trials[i].state == HN_COMPLETED && h->trials[i].violation == 0) {
            pts[2 * n] = h->trials[i].losses[0];
            pts[2 * n + 1] = h->trials[i].losses[1];
            n++;
        }
    double hv = bd_pareto_hypervolume(pts, n, 2, ref);
    free(pts);
    cr_assert_geq(hv, 0, "hypervolume of %zu points", n);
    return hv;
}

#endif
