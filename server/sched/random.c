/* random.c: random search, the smallest scheduler and the worked example of
 * sched.h (see README.md), and `tpe`, the same loop with its configs from
 * the Tree-structured Parzen Estimator (proposer.h, server/model/tpe.h;
 * Bergstra et al. 2011 with Optuna 3.1's defaults). Every trial is a fresh
 * config, trained at the full budget (resource.max); tpe learns from every
 * completed trial and ignores running ones (as Optuna's default does).
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

extern const struct bd_sched_ops bd_sched_random, bd_sched_tpe;

typedef struct random_sched {
    bd_sched base;
    const bd_study_def *def;
    bd_proposer *proposer;
    bd_idmap running_configs; /* tpe: trial_id -> its config (own reference) until it ends */
    long long max_trials; /* 0 = unlimited */
    long long created;    /* CREATED events seen */
    long long running;    /* created and not yet ended */
    long long given_back; /* failed or expired: slots handed out again */
} random_sched;

/* Both schedulers read max_trials; tpe also reads the proposer's options
 * (random search's proposer is always "random"). */
static int create_with(const struct bd_sched_ops *ops, const bd_study_def *def, bd_sched **out, bd_err *err)
{
    static const char *const known_random[] = {"max_trials", NULL};
    static const char *const known_tpe[] = {"max_trials", BD_PROPOSER_OPTIONS, NULL};
    int tpe = ops == &bd_sched_tpe;
    long long max_trials;
    bd_proposer *proposer = NULL;
    int rc = bd_opt_known(def->options, tpe ? known_tpe : known_random, err);
    if (!rc)
        rc = bd_opt_int(def->options, "max_trials", 0, 0, 1000000000LL, &max_trials, err);
    const json_t *sampler = json_object_get(def->options, "sampler");
    if (!rc && tpe && sampler && !(json_is_string(sampler) && strcmp(json_string_value(sampler), "tpe") == 0))
        rc = bd_err_set(err, BD_EINVAL, "scheduler.options.sampler", "must be \"tpe\" (or left out) for tpe");
    if (!rc)
        rc = bd_proposer_create(def, tpe ? "tpe" : "random", 0, &proposer, err);
    if (rc)
        return rc;
    random_sched *r = bd_xcalloc(1, sizeof *r);
    r->base.ops = ops;
    r->def = def;
    r->proposer = proposer;
    r->max_trials = max_trials;
    *out = &r->base;
    return 0;
}

static int random_create(const bd_study_def *def, bd_sched **out, bd_err *err)
{
    return create_with(&bd_sched_random, def, out, err);
}

static int tpe_create(const bd_study_def *def, bd_sched **out, bd_err *err)
{
    return create_with(&bd_sched_tpe, def, out, err);
}

static int random_suggest(bd_sched *s, const bd_suggest_ctx *ctx, bd_suggestion *out, bd_err *err)
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

static int random_observe(bd_sched *s, const bd_observe_ctx *ctx, const bd_event *ev, bd_decision *out, bd_err *err)
{
    (void)ctx;
    random_sched *r = (random_sched *)s;
    json_t *config;
    (void)out;
    (void)err;
    switch (ev->type) {
    case BD_EV_CREATED:
        r->created++;
        r->running++;
        if (s->ops == &bd_sched_tpe && ev->config)
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
    case BD_EV_PRIOR: /* tpe only (learns_from_prior): a warm-start result, fitted like a completed trial */
        bd_proposer_add(r->proposer, ev->trial_id, ev->config, ev->budget, ev->loss, NAN, ev->budget);
        break;
    case BD_EV_MEASUREMENT:
        break;
    }
    return 0;
}

static bd_sched_status random_status(const bd_sched *s)
{
    const random_sched *r = (const random_sched *)s;
    if (r->max_trials && r->created - r->given_back >= r->max_trials)
        return r->running ? BD_STATUS_WAITING : BD_STATUS_DONE;
    return BD_STATUS_RUNNING;
}

static int random_describe(const bd_sched *s, json_t **out)
{
    const random_sched *r = (const random_sched *)s;
    *out = json_pack("{s:I, s:I, s:I, s:I}", "max_trials", (json_int_t)r->max_trials, "created",
                     (json_int_t)r->created, "running", (json_int_t)r->running, "given_back",
                     (json_int_t)r->given_back);
    if (s->ops == &bd_sched_tpe)
        json_object_set_new(*out, "model", bd_proposer_describe(r->proposer));
    return 0;
}

static void random_destroy(bd_sched *s)
{
    random_sched *r = (random_sched *)s;
    if (!r)
        return;
    for (size_t i = 0; i < r->running_configs.cap; i++)
        if (r->running_configs.slots[i].key)
            json_decref(r->running_configs.slots[i].value);
    bd_idmap_clear(&r->running_configs);
    bd_proposer_free(r->proposer);
    free(r);
}

/* Random search keeps nothing per trial; tpe keeps every result (its
 * proposer) and the config of each running trial (~64 bytes of JSON nodes
 * a value, as the engine counts an enqueued config). */
static size_t random_held_bytes(const bd_sched *s)
{
    const random_sched *r = (const random_sched *)s;
    size_t values = bd_space_size(r->def->space) + 1;
    size_t bytes = BD_HEAP_BLOCK(sizeof *r) + bd_proposer_held_bytes(r->proposer) +
                   r->running_configs.count * 64 * values + r->running_configs.cap * sizeof(bd_idmap_slot);
    return bytes + bytes / 8 + 1024; /* glibc's rounding, not counted block by block */
}

const struct bd_sched_ops bd_sched_random = {
    .abi = BD_SCHED_ABI,
    .name = "random",
    .create = random_create,
    .suggest = random_suggest,
    .observe = random_observe,
    .status = random_status,
    .describe = random_describe,
    .destroy = random_destroy,
    .takes_enqueued = 1,
    .held_bytes = random_held_bytes,
};

const struct bd_sched_ops bd_sched_tpe = {
    .abi = BD_SCHED_ABI,
    .name = "tpe",
    .create = tpe_create,
    .suggest = random_suggest,
    .observe = random_observe,
    .status = random_status,
    .describe = random_describe,
    .destroy = random_destroy,
    .takes_enqueued = 1,
    .learns_from_prior = 1,
    .held_bytes = random_held_bytes,
};
