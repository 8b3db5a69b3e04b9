/* random.c: random search, the smallest scheduler and the worked example of
 * sched.h (see README.md). Every trial is a fresh config drawn from the
 * study's space, trained at the full budget (resource.max).
 *
 * Option max_trials (default 0 = unlimited): how many trials may end with a
 * result. A trial that fails or whose lease expires gives its slot back, so
 * a dead worker does not shrink the study. Once the slots are used up the
 * scheduler answers WAIT while trials still run and DONE after. */
#include "sched.h"

#include <stdlib.h>

extern const struct bd_sched_ops bd_sched_random;

typedef struct random_sched {
    bd_sched base;
    const bd_study_def *def;
    long long max_trials; /* 0 = unlimited */
    long long created;    /* CREATED events seen */
    long long running;    /* created and not yet ended */
    long long given_back; /* failed or expired: slots handed out again */
} random_sched;

static int random_create(const bd_study_def *def, bd_sched **out, bd_err *err)
{
    static const char *const known[] = {"max_trials", NULL};
    long long max_trials;
    int rc = bd_opt_known(def->options, known, err);
    if (!rc)
        rc = bd_opt_int(def->options, "max_trials", 0, 0, 1000000000LL, &max_trials, err);
    if (rc)
        return rc;
    random_sched *r = bd_xcalloc(1, sizeof *r);
    r->base.ops = &bd_sched_random;
    r->def = def;
    r->max_trials = max_trials;
    *out = &r->base;
    return 0;
}

static int random_suggest(bd_sched *s, const bd_suggest_ctx *ctx, bd_suggestion *out, bd_err *err)
{
    random_sched *r = (random_sched *)s;
    (void)err;
    bd_sched_status st = s->ops->status(s);
    if (st != BD_STATUS_RUNNING)
        return st == BD_STATUS_DONE ? BD_SUGGEST_DONE : BD_SUGGEST_WAIT;
    bd_rng rng = ctx->rng;
    out->config = bd_space_sample(r->def->space, &rng);
    out->budget = r->def->r_max;
    return BD_SUGGEST_TRIAL;
}

static int random_observe(bd_sched *s, const bd_observe_ctx *ctx, const bd_event *ev, bd_decision *out, bd_err *err)
{
    (void)ctx;
    random_sched *r = (random_sched *)s;
    (void)out;
    (void)err;
    switch (ev->type) {
    case BD_EV_CREATED:
        r->created++;
        r->running++;
        break;
    case BD_EV_FAILED:
    case BD_EV_EXPIRED:
        r->given_back++;
        r->running--;
        break;
    case BD_EV_COMPLETED:
    case BD_EV_STOPPED:
        r->running--;
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
    return 0;
}

static void random_destroy(bd_sched *s)
{
    free(s);
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
};
