/* test_sleep.c: a test-only scheduler, compiled in only when the build has
 * BD_TEST_SCHEDULERS: only into banditd-test, the test daemon (never installed).
 * It is random search whose suggest() and observe() sleep a fixed time, so
 * an integration test can prove that a slow decision in one study does not
 * delay requests to another (sched.h: only the study's mutex is held).
 *
 * Options: sleep_ms (0..2000, default 300), max_trials as in random, and
 * instances (bool): trial k runs on the study's instance k mod n, so tests
 * can drive the engine's instance plumbing before a real scheduler does. */
#ifdef BD_TEST_SCHEDULERS
#include "sched.h"

#include <stdlib.h>
#include <time.h>

extern const struct bd_sched_ops bd_sched_test_sleep;

typedef struct sleep_sched {
    bd_sched base;
    const bd_study_def *def;
    long long sleep_ms;
    long long max_trials; /* 0 = unlimited */
    int instances;        /* hand out the study's instances round-robin */
    long long created;
    long long running;
} sleep_sched;

static void pause_ms(long long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static int sleep_create(const bd_study_def *def, bd_sched **out, bd_err *err)
{
    static const char *const known[] = {"sleep_ms", "max_trials", "instances", NULL};
    long long sleep_ms, max_trials;
    int instances = 0;
    int rc = bd_opt_known(def->options, known, err);
    if (!rc)
        rc = bd_opt_int(def->options, "sleep_ms", 300, 0, 2000, &sleep_ms, err);
    if (!rc)
        rc = bd_opt_int(def->options, "max_trials", 0, 0, 1000000000LL, &max_trials, err);
    if (!rc)
        rc = bd_opt_bool(def->options, "instances", 0, &instances, err);
    if (!rc && instances && def->n_instances == 0)
        rc = bd_err_set(err, BD_EINVAL, "scheduler.options.instances", "the study declares no instances");
    if (rc)
        return rc;
    sleep_sched *z = bd_xcalloc(1, sizeof *z);
    z->base.ops = &bd_sched_test_sleep;
    z->def = def;
    z->sleep_ms = sleep_ms;
    z->max_trials = max_trials;
    z->instances = instances;
    *out = &z->base;
    return 0;
}

static bd_sched_status sleep_status(const bd_sched *s)
{
    const sleep_sched *z = (const sleep_sched *)s;
    if (z->max_trials && z->created >= z->max_trials)
        return z->running ? BD_STATUS_WAITING : BD_STATUS_DONE;
    return BD_STATUS_RUNNING;
}

static int sleep_suggest(bd_sched *s, const bd_suggest_ctx *ctx, bd_suggestion *out, bd_err *err)
{
    sleep_sched *z = (sleep_sched *)s;
    (void)err;
    pause_ms(z->sleep_ms);
    bd_sched_status st = sleep_status(s);
    if (st != BD_STATUS_RUNNING)
        return st == BD_STATUS_DONE ? BD_SUGGEST_DONE : BD_SUGGEST_WAIT;
    bd_rng rng = ctx->rng;
    out->config = bd_space_sample(z->def->space, &rng);
    out->budget = z->def->r_max;
    if (z->instances) {
        out->has_instance = 1;
        out->instance = z->created % (long long)z->def->n_instances;
    }
    return BD_SUGGEST_TRIAL;
}

static int sleep_observe(bd_sched *s, const bd_observe_ctx *ctx, const bd_event *ev, bd_decision *out,
                         bd_err *err)
{
    sleep_sched *z = (sleep_sched *)s;
    (void)out;
    (void)err;
    if (!ctx->replay && ev->type != BD_EV_CREATED)
        pause_ms(z->sleep_ms);
    if (ev->type == BD_EV_CREATED) {
        z->created++;
        z->running++;
    } else if (ev->type != BD_EV_MEASUREMENT) {
        z->running--;
    }
    return 0;
}

static int sleep_describe(const bd_sched *s, json_t **out)
{
    const sleep_sched *z = (const sleep_sched *)s;
    *out = json_pack("{s:I, s:I}", "sleep_ms", (json_int_t)z->sleep_ms, "created", (json_int_t)z->created);
    return 0;
}

static void sleep_destroy(bd_sched *s)
{
    free(s);
}

const struct bd_sched_ops bd_sched_test_sleep = {
    .abi = BD_SCHED_ABI,
    .name = "test_sleep",
    .create = sleep_create,
    .suggest = sleep_suggest,
    .observe = sleep_observe,
    .status = sleep_status,
    .describe = sleep_describe,
    .destroy = sleep_destroy,
};
#else
typedef int bd_test_sleep_not_built; /* ISO C forbids an empty translation unit */
#endif
