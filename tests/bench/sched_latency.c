/* sched_latency.c: what one suggest and one completion cost inside a
 * scheduler once a study holds N completed trials, without HTTP or
 * storage: the scheduler's own share of a request.
 *
 * A study of 8 float parameters in [0, 1] (a smooth synthetic loss: fine for
 * timing, says nothing about search quality) is filled with N random
 * completed trials through observe() with replay = 1, then replayed() (as a
 * restart does); then `probes` live rounds each time suggest() and the
 * CREATED + COMPLETED observes of its trial. CPU time of this process
 * (CLOCK_PROCESS_CPUTIME_ID), so a busy machine inflates it little; it prints
 * the median and the largest.
 *
 * Usage: bd_sched_latency [scheduler] [N] [options JSON] [probes]
 *   e.g. bd_sched_latency gp_ucb 2000 '{"acquisition": "logei"}' 20
 * Multi-fidelity schedulers get resource 1..27 (integer); trials complete at
 * the budget they were given. */
#include <gsl/gsl_errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/sched/sched.h"

#define D 8

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double loss(const json_t *config, double budget)
{
    double s = 0;
    for (int i = 0; i < D; i++) {
        char key[8];
        snprintf(key, sizeof key, "x%d", i);
        double x = json_number_value(json_object_get(config, key));
        s += (x - 0.3) * (x - 0.3) * (1 + i);
    }
    return s + 0.1 * sin(7 * json_number_value(json_object_get(config, "x0"))) + 1.0 / budget;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct run {
    const struct bd_sched_ops *ops;
    bd_sched *s;
    uint64_t seed;
    int64_t event_id, trial_id;
} run;

static void feed(run *r, bd_event *ev, int replay)
{
    bd_observe_ctx ctx = {.replay = replay};
    bd_decision dec = {0};
    bd_err err;
    ev->id = r->event_id++;
    bd_observe_ctx_seed(&ctx, r->seed, ev->id);
    if (r->ops->observe(r->s, &ctx, ev, &dec, &err))
        fprintf(stderr, "observe: %s\n", err.message);
}

/* One trial: suggest (or, while filling, a proposal taken as is), created, completed. */
static int step(run *r, int replay, double *t_suggest, double *t_complete)
{
    bd_suggest_ctx ctx = {.trials_created = r->trial_id - 1, .worker = "w"};
    bd_suggestion sg = {0};
    bd_err err;
    bd_rng_seed(&ctx.rng, r->seed, (uint64_t)(r->trial_id - 1));
    double t0 = cpu_ms();
    int rc = r->ops->suggest(r->s, &ctx, &sg, &err);
    double t1 = cpu_ms();
    if (rc != BD_SUGGEST_TRIAL) {
        fprintf(stderr, "suggest answered %d: %s\n", rc, rc < 0 ? err.message : "");
        return -1;
    }
    bd_event created = {.type = BD_EV_CREATED, .trial_id = r->trial_id, .config_id = sg.config_id ? sg.config_id : r->trial_id,
                        .budget = sg.budget, .config = sg.config, .resume_from = sg.resume_from, .extra = sg.extra,
                        .elapsed_seconds = NAN};
    feed(r, &created, replay);
    double t2 = cpu_ms();
    bd_event done = {.type = BD_EV_COMPLETED, .trial_id = r->trial_id, .config_id = created.config_id,
                     .budget = sg.budget, .loss = loss(sg.config, sg.budget), .elapsed_seconds = NAN};
    feed(r, &done, replay);
    double t3 = cpu_ms();
    r->trial_id++;
    json_decref(sg.config);
    json_decref(sg.extra);
    *t_suggest = t1 - t0;
    *t_complete = t3 - t2;
    return 0;
}

int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "gp_ucb";
    long n = argc > 2 ? strtol(argv[2], NULL, 10) : 2000;
    const char *options = argc > 3 ? argv[3] : "{}";
    long probes = argc > 4 ? strtol(argv[4], NULL, 10) : 20;
    gsl_set_error_handler_off();
    json_t *params = json_array();
    for (int i = 0; i < D; i++) {
        char key[8];
        snprintf(key, sizeof key, "x%d", i);
        json_array_append_new(params, json_pack("{s:s, s:s, s:f, s:f}", "name", key, "type", "float", "low", 0.0,
                                                "high", 1.0));
    }
    bd_space *space;
    bd_err err;
    json_t *opts = json_loads(options, 0, NULL);
    const struct bd_sched_ops *ops = bd_sched_find(name);
    if (!ops || !opts || bd_space_parse(params, &space, &err) || n < 0 || probes < 1) {
        fprintf(stderr, "usage: %s [scheduler] [N] [options JSON] [probes]\n", argv[0]);
        return 2;
    }
    bd_study_def def = {.id = 1, .name = "latency", .space = space, .metric = "loss", .resource_name = "epochs",
                        .r_min = 1, .r_max = ops->multi_fidelity ? 27 : 1, .resource_integer = 1,
                        .options = opts, .seed = 5, .lease_seconds = 300};
    run r = {.ops = ops, .seed = def.seed, .event_id = 1, .trial_id = 1};
    if (ops->create(&def, &r.s, &err)) {
        fprintf(stderr, "%s: %s (%s)\n", name, err.message, err.field);
        return 2;
    }
    double ts, tc, *sug = calloc((size_t)probes, sizeof *sug), *com = calloc((size_t)probes, sizeof *com);
    for (long i = 0; i < n; i++)
        if (step(&r, 1, &ts, &tc))
            return 1;
    if (ops->replayed)
        ops->replayed(r.s);
    for (long i = 0; i < probes; i++)
        if (step(&r, 0, &sug[i], &com[i]))
            return 1;
    qsort(sug, (size_t)probes, sizeof *sug, cmp_double);
    qsort(com, (size_t)probes, sizeof *com, cmp_double);
    printf("%s %s at %ld completed trials, %d parameters: suggest median %.2f ms (largest %.2f), "
           "completion median %.2f ms (largest %.2f), CPU time over %ld probes\n",
           name, options, n, D, sug[probes / 2], sug[probes - 1], com[probes / 2], com[probes - 1], probes);
    ops->destroy(r.s);
    bd_space_free(space);
    json_decref(opts);
    json_decref(params);
    free(sug);
    free(com);
    return 0;
}
