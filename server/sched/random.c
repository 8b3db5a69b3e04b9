/* random.c: random search, the smallest scheduler and the worked example of
 * sched.h (see README.md). Every trial is a fresh config, trained at the
 * full budget (resource.max). Its loop is random.h's, which tpe.c runs with
 * a proposer that learns; this file knows nothing of tpe.
 *
 * Option max_trials (default 0 = unlimited): how many trials may end with a
 * result. A trial that fails or whose lease expires gives its slot back, so
 * a dead worker does not shrink the study. Once the slots are used up the
 * scheduler answers WAIT while trials still run and DONE after. */
#include "sched.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "idmap.h"
#include "proposer.h"
#include "random.h"
#include "stopping_rule.h"

extern const struct bd_sched_ops bd_sched_random;

typedef struct random_sched {
    bd_sched base;
    const bd_study_def *def;
    bd_proposer *proposer;
    int learns;               /* the proposer learns from results (bd_random_create) */
    bd_idmap running_configs; /* learns: trial_id -> its config (own reference) until it ends */
    long long max_trials; /* 0 = unlimited */
    long long created;    /* CREATED events seen */
    long long running;    /* created and not yet ended */
    long long given_back; /* failed or expired: slots handed out again */
    bd_stop_rule *stop;   /* option "stopping" (stopping_rule.h), or NULL */
} random_sched;

int bd_random_create(const struct bd_sched_ops *ops, const bd_study_def *def, const char *const *known,
                     const char *sampler, int learns, bd_sched **out, bd_err *err)
{
    long long max_trials;
    bd_proposer *proposer = NULL;
    bd_stop_rule *stop = NULL;
    int rc = bd_opt_known(def->options, known, err);
    if (!rc)
        rc = bd_opt_int(def->options, "max_trials", 0, 0, 1000000000LL, &max_trials, err);
    const json_t *named = json_object_get(def->options, "sampler");
    if (!rc && named && !(json_is_string(named) && strcmp(json_string_value(named), sampler) == 0))
        rc = bd_err_set(err, BD_EINVAL, "scheduler.options.sampler", "must be \"%s\" (or left out) for %s", sampler,
                        ops->name);
    if (!rc)
        rc = bd_stop_rule_create(def, &stop, err);
    if (!rc)
        rc = bd_proposer_create(def, sampler, 0, &proposer, err);
    if (rc) {
        bd_stop_rule_free(stop);
        return rc;
    }
    random_sched *r = bd_xcalloc(1, sizeof *r);
    r->base.ops = ops;
    r->def = def;
    r->proposer = proposer;
    r->learns = learns;
    r->max_trials = max_trials;
    r->stop = stop;
    *out = &r->base;
    return 0;
}

/* Random search reads max_trials only; its proposer is always "random". */
static int random_create(const bd_study_def *def, bd_sched **out, bd_err *err)
{
    static const char *const known[] = {"max_trials", BD_STOP_RULE_OPTION, NULL};
    return bd_random_create(&bd_sched_random, def, known, "random", 0, out, err);
}

int bd_random_suggest(bd_sched *s, const bd_suggest_ctx *ctx, bd_suggestion *out, bd_err *err)
{
    random_sched *r = (random_sched *)s;
    (void)err;
    bd_sched_status st = s->ops->status(s);
    if (st != BD_STATUS_RUNNING)
        return st == BD_STATUS_DONE ? BD_SUGGEST_DONE : BD_SUGGEST_WAIT;
    bd_rng rng = ctx->rng;
    out->config = bd_proposer_propose(r->proposer, &rng);
    out->budget = r->def->r_max;
    return BD_SUGGEST_TRIAL;
}

/* The config of a running trial, forgotten as it ends (new reference or NULL). */
static json_t *take_config(random_sched *r, int64_t trial_id)
{
    json_t *config = bd_idmap_get(&r->running_configs, trial_id);
    if (config) /* removed, not set to NULL: the map holds running trials only */
        bd_idmap_remove(&r->running_configs, trial_id);
    return config;
}

int bd_random_observe(bd_sched *s, const bd_observe_ctx *ctx, const bd_event *ev, bd_decision *out, bd_err *err)
{
    (void)ctx;
    random_sched *r = (random_sched *)s;
    json_t *config;
    (void)err;
    bd_stop_rule_observe(r->stop, ev, out); /* NULL without the option "stopping" */
    switch (ev->type) {
    case BD_EV_CREATED:
        r->created++;
        r->running++;
        if (r->learns && ev->config)
            bd_idmap_put(&r->running_configs, ev->trial_id, json_incref((json_t *)ev->config));
        break;
    case BD_EV_FAILED:
    case BD_EV_EXPIRED:
        r->given_back++;
        r->running--;
        json_decref(take_config(r, ev->trial_id));
        break;
    case BD_EV_COMPLETED:
    case BD_EV_STOPPED:
        r->running--;
        config = take_config(r, ev->trial_id);
        if (config && ev->type == BD_EV_COMPLETED)
            bd_proposer_add(r->proposer, ev->config_id ? ev->config_id : ev->trial_id, config, ev->budget, ev->loss,
                            ev->elapsed_seconds, ev->budget);
        json_decref(config);
        break;
    case BD_EV_PRIOR: /* learns only (learns_from_prior): a warm-start result, fitted like a completed trial */
        bd_proposer_add(r->proposer, ev->trial_id, ev->config, ev->budget, ev->loss, NAN, ev->budget);
        break;
    case BD_EV_MEASUREMENT:
        break;
    }
    return 0;
}

bd_sched_status bd_random_status(const bd_sched *s)
{
    const random_sched *r = (const random_sched *)s;
    if (r->max_trials && r->created - r->given_back >= r->max_trials)
        return r->running ? BD_STATUS_WAITING : BD_STATUS_DONE;
    return BD_STATUS_RUNNING;
}

int bd_random_describe(const bd_sched *s, json_t **out)
{
    const random_sched *r = (const random_sched *)s;
    *out = json_pack("{s:I, s:I, s:I, s:I}", "max_trials", (json_int_t)r->max_trials, "created",
                     (json_int_t)r->created, "running", (json_int_t)r->running, "given_back",
                     (json_int_t)r->given_back);
    if (r->learns)
        json_object_set_new(*out, "model", bd_proposer_describe(r->proposer));
    if (r->stop)
        json_object_set_new(*out, "stopping", bd_stop_rule_describe(r->stop));
    return 0;
}

void bd_random_destroy(bd_sched *s)
{
    random_sched *r = (random_sched *)s;
    if (!r)
        return;
    for (size_t i = 0; i < r->running_configs.cap; i++)
        if (r->running_configs.slots[i].key)
            json_decref(r->running_configs.slots[i].value);
    bd_idmap_clear(&r->running_configs);
    bd_proposer_free(r->proposer);
    bd_stop_rule_free(r->stop);
    free(r);
}

/* Random search keeps nothing per trial; a learning proposer (tpe) keeps
 * every result and the config of each running trial (~64 bytes of JSON
 * nodes a value, as the engine counts an enqueued config). */
size_t bd_random_held_bytes(const bd_sched *s)
{
    const random_sched *r = (const random_sched *)s;
    size_t values = bd_space_size(r->def->space) + 1;
    size_t bytes = BD_HEAP_BLOCK(sizeof *r) + bd_proposer_held_bytes(r->proposer) +
                   r->running_configs.count * 64 * values + r->running_configs.cap * sizeof(bd_idmap_slot) +
                   bd_stop_rule_held_bytes(r->stop);
    return bytes + bytes / 8 + 1024; /* glibc's rounding, not counted block by block */
}

const struct bd_sched_ops bd_sched_random = {
    .abi = BD_SCHED_ABI,
    .name = "random",
    .create = random_create,
    .suggest = bd_random_suggest,
    .observe = bd_random_observe,
    .status = bd_random_status,
    .describe = bd_random_describe,
    .destroy = bd_random_destroy,
    .takes_enqueued = 1,
    .held_bytes = bd_random_held_bytes,
    .multi_objective = 1,   /* draws regardless; the engine keeps the Pareto front */
    .takes_constraints = 1, /* and recommends feasible trials only */
};
