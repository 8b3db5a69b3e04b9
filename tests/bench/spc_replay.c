/* spc_replay.c: bd_spc_replay, an algorithm-configuration scheduler (`spc`,
 * server/sched/spc.c, or any other that runs (config, instance, cap) trials)
 * driven in-process on a runtime matrix, for the many seeds of
 * spc_replay.py. It calls the scheduler's suggest / observe exactly as the
 * engine does with one worker (events numbered, rng streams seeded as in
 * server/engine*.c), without HTTP or SQLite: a replay of 300,000 runs takes
 * seconds instead of the daemon's minutes. spc_replay.py checks on a few
 * seeds that the daemon over HTTP gives the same incumbent trace.
 *
 * Input on stdin (written by spc_replay.py):
 *   n_solvers n_instances cutoff horizon n_checkpoints seed scheduler
 *   the scheduler's options: one line of JSON
 *   one solver name per line
 *   n_solvers lines of n_instances runtimes, instances in the seed's order
 *   (-1: not solved within the cutoff)
 * The instances are declared in that order (shuffle_instances off), later
 * passes of the stream reshuffled by the scheduler from the seed.
 * Output: one JSON object {"runs", "cpu", "trace": [[cpu, solver], ...],
 * "decision_us", "decision_cpu_us"}: the incumbent (describe()'s) sampled at n_checkpoints
 * log-spaced CPU times up to the horizon, and the mean wall time of one
 * decision (suggest + the two observe calls of its run; describe excluded).
 * With an argument (a path), every run is also written there, one line
 * each: "solver_index position cap timeout charged_cpu" (spc_diagnose.py
 * reads it to say where the CPU went). With a second argument (a path),
 * the scheduler's describe() at the end of the replay is written there
 * (the racers' state at the horizon, for spc_diagnose.py --final). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/rng.h"
#include "server/sched/sched.h"
#include "server/space.h"

static void die(const char *what)
{
    fprintf(stderr, "bd_spc_replay: %s\n", what);
    exit(1);
}

typedef struct replay {
    const struct bd_sched_ops *ops;
    bd_sched *s;
    bd_study_def def;
    int64_t next_event, next_trial;
} replay;

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* This thread's CPU time: on a shared machine the wall time of a decision
 * counts the time other processes held the core too. */
static double cpu_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void feed(replay *r, bd_event *ev)
{
    bd_observe_ctx ctx = {.replay = 0};
    bd_decision d = {0};
    bd_err err;
    ev->id = ++r->next_event;
    bd_observe_ctx_seed(&ctx, r->def.seed, ev->id);
    if (r->ops->observe(r->s, &ctx, ev, &d, &err))
        die("observe failed");
}

/* One trace point: [cpu, the incumbent's solver or null]. */
static void print_incumbent(replay *r, double cpu, int first)
{
    json_t *d = NULL;
    if (r->ops->describe(r->s, &d))
        die("describe failed");
    const json_t *inc = json_object_get(d, "incumbent");
    const char *best = inc ? json_string_value(json_object_get(json_object_get(inc, "config"), "solver")) : NULL;
    printf("%s[%.3f, %s%s%s]", first ? "" : ", ", cpu, best ? "\"" : "", best ? best : "null", best ? "\"" : "");
    json_decref(d);
}

int main(int argc, char **argv)
{
    FILE *runlog = NULL;
    if (argc > 1 && !(runlog = fopen(argv[1], "w")))
        die("cannot open the run log");
    int n_solvers, n_instances, n_checkpoints;
    double cutoff, horizon;
    unsigned long long seed;
    char scheduler[64], line[65536];
    if (scanf("%d %d %lf %lf %d %llu %63s ", &n_solvers, &n_instances, &cutoff, &horizon, &n_checkpoints, &seed,
              scheduler) != 7 ||
        n_solvers < 1 || n_instances < 1 || n_checkpoints < 2)
        die("bad header");
    const struct bd_sched_ops *ops = bd_sched_find(scheduler);
    if (!ops)
        die("unknown scheduler");
    json_error_t jerr;
    json_t *options = fgets(line, sizeof line, stdin) ? json_loads(line, 0, &jerr) : NULL;
    if (!json_is_object(options))
        die("the options line is not a JSON object");
    json_t *choices = json_array();
    char name[4096];
    for (int c = 0; c < n_solvers; c++) {
        if (scanf("%4095s", name) != 1)
            die("bad solver name");
        json_array_append_new(choices, json_string(name));
    }
    double *rt = malloc((size_t)n_solvers * (size_t)n_instances * sizeof *rt);
    for (long i = 0; i < (long)n_solvers * n_instances; i++)
        if (scanf("%lf", &rt[i]) != 1)
            die("bad runtime");
    json_t *instances = json_array();
    for (int j = 0; j < n_instances; j++) {
        char inst[32];
        snprintf(inst, sizeof inst, "%d", j);
        json_array_append_new(instances, json_string(inst));
    }
    json_t *params = json_pack("[{s:s, s:s, s:O}]", "name", "solver", "type", "categorical", "choices", choices);
    bd_space *space;
    bd_err err;
    if (bd_space_parse(params, &space, &err))
        die(err.message);
    replay r = {.ops = ops};
    r.def = (bd_study_def){.id = 1, .name = "replay", .space = space, .metric = "runtime",
                           .resource_name = "cpu_seconds", .r_min = 0.001, .r_max = cutoff, .options = options,
                           .seed = seed, .lease_seconds = 300, .instances = instances,
                           .n_instances = (size_t)n_instances};
    if (r.ops->create(&r.def, &r.s, &err))
        die(err.message);

    double lo = fmax(1.0, horizon * 1e-6), cpu = 0, decision_us = 0, decision_cpu = 0;
    int next_cp = 0;
    long runs = 0;
    printf("{\"trace\": [");
    int first = 1;
    while (cpu < horizon) {
        double started = now_us(), started_cpu = cpu_us();
        bd_suggest_ctx ctx = {.trials_created = r.next_trial, .worker = "replay"};
        bd_suggestion s = {0};
        bd_rng_seed(&ctx.rng, seed, (uint64_t)r.next_trial);
        if (r.ops->suggest(r.s, &ctx, &s, &err) != BD_SUGGEST_TRIAL)
            break;
        int64_t id = ++r.next_trial;
        const char *solver = json_string_value(json_object_get(s.config, "solver"));
        int c = 0;
        while (c < n_solvers && strcmp(json_string_value(json_array_get(choices, (size_t)c)), solver) != 0)
            c++;
        bd_event created = {.type = BD_EV_CREATED, .trial_id = id, .config_id = s.config_id ? s.config_id : id,
                            .budget = s.budget, .config = s.config, .extra = s.extra, .has_instance = 1,
                            .instance = s.instance, .loss = NAN, .elapsed_seconds = NAN};
        feed(&r, &created);
        double v = rt[(long)c * n_instances + s.instance], cap = s.budget;
        int timeout = v < 0 || v > cap;
        bd_event done = {.type = BD_EV_COMPLETED, .trial_id = id, .config_id = created.config_id, .budget = cap,
                         .loss = timeout ? cap : v, .timeout = timeout, .elapsed_seconds = timeout ? cap : v};
        feed(&r, &done);
        json_decref(s.config);
        json_decref(s.extra);
        decision_us += now_us() - started;
        decision_cpu += cpu_us() - started_cpu;
        cpu += timeout ? cap : v;
        runs++;
        if (runlog)
            fprintf(runlog, "%d %lld %.6g %d %.6g\n", c, (long long)s.instance, cap, timeout, timeout ? cap : v);
        if (next_cp < n_checkpoints && cpu >= lo * pow(horizon / lo, (double)next_cp / (n_checkpoints - 1))) {
            while (next_cp < n_checkpoints && cpu >= lo * pow(horizon / lo, (double)next_cp / (n_checkpoints - 1)))
                next_cp++;
            print_incumbent(&r, cpu, first);
            first = 0;
        }
    }
    if (cpu < horizon && runs) /* the scheduler is done early: its last answer holds to the horizon */
        print_incumbent(&r, cpu, first);
    if (argc > 2) {
        json_t *d = NULL;
        if (r.ops->describe(r.s, &d) || json_dump_file(d, argv[2], JSON_COMPACT))
            die("cannot write the final describe()");
        json_decref(d);
    }
    printf("], \"runs\": %ld, \"cpu\": %.3f, \"decision_us\": %.3f, \"decision_cpu_us\": %.3f}\n", runs, cpu,
           runs ? decision_us / (double)runs : 0.0, runs ? decision_cpu / (double)runs : 0.0);
    r.ops->destroy(r.s);
    bd_space_free(space);
    json_decref(params);
    json_decref(options);
    json_decref(instances);
    json_decref(choices);
    free(rt);
    if (runlog && fclose(runlog))
        die("cannot write the run log");
    return 0;
}
