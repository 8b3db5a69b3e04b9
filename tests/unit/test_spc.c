/* test_spc.c: Structured Procrastination with Confidence (server/sched/spc.c,
 * spc_tester.c): docs/ALGORITHMS.md section 5's vectors, the timeout-doubling
 * queue, ties, the sequential algorithm reproduced step by step against an
 * independent implementation written here, several workers, failures,
 * the large-space samples and replay after a restart. */
#include <criterion/criterion.h>

#include "sched_harness.h"
#include "server/sched/spc_tester.h"

extern const struct bd_sched_ops bd_sched_spc;

#define EPS 1e-7

/* ----------------------------------- docs/ALGORITHMS.md section 5's vectors */

Test(spc_math, lcb_vectors)
{
    double v[] = {4, 2, 1, 2};
    cr_assert_float_eq(spc_lcb(v, 4, 1, 4), 1.75, EPS);
    double w[] = {1, 2, 2, 4};
    cr_assert_float_eq(spc_lcb(w, 4, 100, 4), 0.0, EPS);
    double *big = malloc(1000 * sizeof *big);
    for (int i = 0; i < 1000; i++)
        big[i] = i < 500 ? 1.0 : i < 800 ? 2.0 : 4.0;
    cr_assert_float_eq(spc_lcb(big, 1000, 100, 1000), 1.4974857, EPS);
    free(big);
    cr_assert_float_eq(spc_lcb(NULL, 0, 5, 0), -1e-6, 1e-12, "a tester without data runs first");
}

Test(spc_math, beta_vectors)
{
    cr_assert_float_eq(spc_beta(1000, 1000, 100, 1000), 0.8308517, EPS);
    cr_assert_float_eq(spc_beta(500, 1000, 100, 1000), 0.3882254, EPS);
    cr_assert_float_eq(spc_beta(200, 1000, 100, 1000), 0.1392043, EPS);
    cr_assert_float_eq(spc_beta(1, 4, 1, 4), 0.0, EPS, "p = 1/4 at t = 1: k = 2, eps > 1/2");
    cr_assert_float_eq(spc_beta(3, 4, 1, 4), 0.75, EPS, "k = 0 at t = 1: eps = 0");
}

/* Drawn without replacement: eps times sqrt((N - r) / (N - 1)). */
Test(spc_math, finite_population_beta_vectors)
{
    cr_assert_float_eq(spc_beta_finite(1000, 1000, 100, 1000, 1200), 0.9232352, EPS);
    cr_assert_float_eq(spc_beta_finite(200, 1000, 100, 1000, 1200), 0.1697258, EPS);
    cr_assert_float_eq(spc_beta_finite(10, 40, 1000, 40, 40), 0.25, EPS, "every instance seen: beta = p");
    /* 30 of 300 at t = 1000: eps = 1.368 > 1/2, where the paper's beta is 0;
     * the general Chernoff bound's eps = 1.4715 (a = eps^2 / 3). */
    cr_assert_float_eq(spc_beta_finite(40, 40, 1000, 30, 300), 0.4046034, EPS);
    cr_assert_float_eq(spc_beta(40, 40, 1000, 30), 0.0, EPS, "the paper's stream: 0 beyond eps = 1/2");
    cr_assert_float_eq(spc_beta_finite(200, 1000, 100, 1000, 0), spc_beta(200, 1000, 100, 1000), 0,
                       "population 0 is the paper's stream");
}

Test(spc_math, queue_bound_vectors)
{
    cr_assert_eq(spc_queue_bound(1024, 4), 275);
    cr_assert_eq(spc_queue_bound(100, 1000), 250);
    cr_assert_eq(spc_queue_bound(1, 1000), 25);
    cr_assert_eq(spc_queue_bound(500, 1), 25);
}

/* ------------------------------------------------ the tester on its own */

Test(spc_tester, timeouts_double_the_cap_through_the_queue)
{
    spc_tester t;
    spc_run run;
    int fresh;
    spc_tester_init(&t, json_object(), 0, 1.0, 0);
    cr_assert(spc_tester_next(&t, 3, &run, &fresh));
    cr_assert(fresh && run.position == 0 && run.cap == 1.0);
    spc_tester_start(&t, &run, fresh);
    spc_tester_finish(&t, &run, 1, NAN, 8, 2, 1, 0); /* timed out at 1: (0, 2) queued */
    cr_assert_eq(t.q_len, 1);
    cr_assert_eq(t.q, 25, "q after the first step");
    cr_assert(spc_tester_next(&t, 3, &run, &fresh));
    cr_assert(fresh && run.position == 1 && run.cap == 1.0, "queue below its bound: a fresh instance");
    /* With the queue at its bound the queued run comes first, at the doubled cap. */
    t.q = 1;
    cr_assert(spc_tester_next(&t, 3, &run, &fresh));
    cr_assert(!fresh && run.position == 0 && run.cap == 2.0);
    spc_tester_start(&t, &run, fresh);
    cr_assert_eq(t.theta, 2.0, "popping sets the tester's cap");
    spc_tester_finish(&t, &run, 1, NAN, 8, 2, 1, 1);
    cr_assert_eq(t.queue[t.q_head].cap, 4.0);
    cr_assert_float_eq(t.inst[0].value, 2.0, EPS, "the latest capped runtime replaces the earlier one");
    /* Up to the largest cap, where a timeout is final at cap * PAR. */
    for (double cap = 4; cap <= 8; cap *= 2) {
        t.q = 1;
        cr_assert(spc_tester_next(&t, 1, &run, &fresh));
        cr_assert_eq(run.cap, cap);
        spc_tester_start(&t, &run, fresh);
        spc_tester_finish(&t, &run, 1, NAN, 8, 2, 10, 2);
    }
    cr_assert_eq(t.q_len, 0);
    cr_assert_float_eq(t.inst[0].value, 80.0, EPS, "PAR10 at the largest cap");
    cr_assert_eq(t.inst[0].state, SPC_GAVE_UP);
    cr_assert_not(spc_tester_next(&t, 1, &run, &fresh), "one instance, solved or given up: nothing to run");
    spc_tester_clear(&t);
}

/* ------------------------------------- the sequential algorithm, independently */

#define NC 5
#define NI 40
#define CAP_MAX 64.0

/* A runtime matrix with a spread of speeds, heavy tails and unsolvable
 * instances (1e9), deterministic. */
static double matrix(int c, int j)
{
    static const double speed[NC] = {3.0, 0.7, 12.0, 0.9, 40.0};
    uint64_t x = (uint64_t)(c * 7919 + j * 104729 + 17) * 6364136223846793005ULL + 1442695040888963407ULL;
    x ^= x >> 29;
    double u = (double)(x % 100000) / 100000.0;
    if (u > 0.93)
        return 1e9;
    return speed[c] * (0.2 + 3.0 * u * u * u) * (1 + (j % 3));
}

typedef struct ref_tester {
    double theta, lcb;
    int r, q;
    int qpos[8 * NI]; /* every instance is queued at most log2(64) = 6 times */
    double qcap[8 * NI];
    int qhead, qlen;
    double val[NI];
    int has[NI];
} ref_tester;

/* The LCB the naive way: for every distinct value, the share of values
 * above the previous one, beta with k = floor(log2(1/p)). */
static double ref_lcb(const ref_tester *rt, int t)
{
    double v[NI];
    int n = 0;
    for (int j = 0; j < rt->r; j++)
        if (rt->has[j])
            v[n++] = rt->val[j];
    if (!n)
        return -1e-6;
    double lcb = 0, prev = 0;
    for (;;) {
        double next = INFINITY;
        for (int i = 0; i < n; i++)
            if (v[i] > prev && v[i] < next)
                next = v[i];
        if (!isfinite(next))
            return lcb;
        int above = 0;
        for (int i = 0; i < n; i++)
            above += v[i] > prev;
        double p = (double)above / n;
        int k = (int)floor(log2(1.0 / p) + 1e-12);
        double tt = t > 1 ? t : 1;
        double eps = k == 0 ? sqrt(9 * log(tt) / n) : sqrt(9 * pow(2, k) * log(k * tt) / n);
        lcb += (next - prev) * (eps <= 0.5 ? p / (1 + eps) : 0);
        prev = next;
    }
}

/* One step of Algorithm 1; returns 0 when every tester is finished. With
 * poll_all, every LCB is taken at the current iteration t (the paper);
 * else each keeps the one computed at its own last step. */
static int ref_step(ref_tester *ts, int t, int poll_all, int *c_out, int *j_out, double *cap_out)
{
    int best = -1;
    if (poll_all)
        for (int c = 0; c < NC; c++)
            ts[c].lcb = ref_lcb(&ts[c], t);
    for (int c = 0; c < NC; c++) {
        const ref_tester *x = &ts[c];
        int can = (x->qlen < x->q && x->r < NI) || x->qlen > 0;
        if (can && (best < 0 || x->lcb < ts[best].lcb))
            best = c;
    }
    if (best < 0)
        return 0;
    ref_tester *x = &ts[best];
    int j;
    double cap;
    if (x->qlen < x->q && x->r < NI) {
        j = x->r++;
        cap = x->theta;
    } else {
        j = x->qpos[x->qhead];
        cap = x->qcap[x->qhead];
        x->qhead++;
        x->qlen--;
        x->theta = cap;
    }
    double rt = matrix(best, j);
    if (rt > cap) {
        if (cap >= CAP_MAX) {
            x->val[j] = CAP_MAX;
        } else {
            x->val[j] = cap;
            x->qpos[x->qhead + x->qlen] = j;
            x->qcap[x->qhead + x->qlen] = fmin(2 * cap, CAP_MAX);
            x->qlen++;
        }
    } else {
        x->val[j] = rt;
    }
    x->has[j] = 1;
    x->lcb = ref_lcb(x, t);
    x->q = (x->r <= 1 || t <= 1) ? 25 : (int)ceil(25 * log2(t * log2(x->r)));
    *c_out = best;
    *j_out = j;
    *cap_out = cap;
    return 1;
}

static const char *SOLVERS = "[{\"name\": \"solver\", \"type\": \"categorical\", "
                             "\"choices\": [\"s0\", \"s1\", \"s2\", \"s3\", \"s4\"]}]";

/* Ends trial id from the matrix: its runtime, or a timeout at its cap. */
static void run_from_matrix(hn *h, int64_t id)
{
    hn_trial *t = hn_get(h, id);
    double rt = matrix(hn_solver_of(t), (int)t->instance);
    if (rt > t->budget)
        hn_complete_timeout(h, id);
    else
        hn_complete(h, id, rt);
}

/* A scheduler rebuilt from h's events proposes the same next k runs. */
static void check_replay(hn *h, int k)
{
    bd_sched *rebuilt = hn_replay(h);
    cr_assert(hn_same_next(h, rebuilt, k), "the replayed scheduler differs");
    bd_sched_spc.destroy(rebuilt);
}

static void open_solvers(hn *h, const char *options)
{
    char *names = hn_instance_names(NI);
    cr_assert_eq(hn_open_instances(h, &bd_sched_spc, SOLVERS, options, 0.5, CAP_MAX, 0, names), 0, "%s",
                 h->err.message);
    free(names);
}

static void check_sequential(const char *options, int poll_all)
{
    hn h;
    open_solvers(&h, options);
    ref_tester ref[NC];
    memset(ref, 0, sizeof ref);
    for (int c = 0; c < NC; c++) {
        ref[c].theta = 1.0;
        ref[c].q = 1;
        ref[c].lcb = -1e-6;
    }
    int steps = 0, timeouts = 0;
    for (int t = 0;; t++) {
        int c, j;
        double cap;
        int more = ref_step(ref, t, poll_all, &c, &j, &cap);
        int64_t id;
        int answer = hn_suggest(&h, 0, &id);
        if (!more) {
            cr_assert_eq(answer, BD_SUGGEST_DONE, "step %d: the reference is done, spc is not", t);
            break;
        }
        cr_assert_eq(answer, BD_SUGGEST_TRIAL, "step %d", t);
        hn_trial *tr = hn_get(&h, id);
        cr_assert(tr->has_instance);
        cr_assert_eq(hn_solver_of(tr), c, "step %d: config s%d, the reference ran s%d", t, hn_solver_of(tr), c);
        cr_assert_eq(tr->instance, j, "step %d: instance %lld, the reference ran %d", t, (long long)tr->instance, j);
        cr_assert_float_eq(tr->budget, cap, 1e-12, "step %d: cap %g, the reference used %g", t, tr->budget, cap);
        timeouts += matrix(c, j) > cap;
        run_from_matrix(&h, id);
        steps++;
    }
    cr_assert_gt(steps, 200, "the comparison covered %d steps", steps);
    cr_assert_gt(timeouts, 20, "and %d timeouts", timeouts);
    /* The anytime answer: the most active instances. */
    json_t *d = hn_describe(&h);
    json_t *inc = json_object_get(d, "incumbent");
    double mean[NC];
    for (int c = 0; c < NC; c++) {
        double sum = 0;
        int n = 0;
        for (int j = 0; j < ref[c].r; j++)
            if (ref[c].has[j]) {
                sum += ref[c].val[j];
                n++;
            }
        mean[c] = sum / n;
    }
    int best = 0; /* the most active instances, then the smaller mean */
    for (int c = 1; c < NC; c++)
        if (ref[c].r > ref[best].r || (ref[c].r == ref[best].r && mean[c] < mean[best]))
            best = c;
    char want[8];
    snprintf(want, sizeof want, "s%d", best);
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(inc, "config"), "solver")), want);
    cr_assert_eq(json_array_size(json_object_get(d, "testers")), NC);
    json_decref(d);
    hn_close(&h);
}

Test(spc, one_worker_reproduces_the_sequential_algorithm)
{
    check_sequential("{\"shuffle_instances\": false, \"stream\": \"once\"}", 1);
}

Test(spc, one_worker_reproduces_the_sequential_algorithm_lcb_last_step)
{
    check_sequential("{\"shuffle_instances\": false, \"stream\": \"once\", \"lcb\": \"last_step\"}", 0);
}

/* Every config times out at kappa0 on the first instance, then one more run. */
static int after_equal_first_runs(const char *options)
{
    hn h;
    open_solvers(&h, options);
    for (int c = 0; c < NC; c++) {
        int64_t id;
        cr_assert_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_TRIAL);
        cr_assert_eq(hn_solver_of(hn_get(&h, id)), c, "every config is tried once, in order");
        cr_assert_eq(hn_get(&h, id)->instance, 0);
        cr_assert_eq(hn_get(&h, id)->budget, 1.0, "kappa0 = 1 s");
        hn_complete_timeout(&h, id);
    }
    int64_t id;
    cr_assert_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_TRIAL);
    int solver = hn_solver_of(hn_get(&h, id));
    hn_close(&h);
    return solver;
}

Test(spc, ties_go_to_the_earlier_config_and_untested_configs_run_first)
{
    /* Polled at t = 5 every tester's LCB of {1} is 0 (eps > 1/2): s0 wins the tie. */
    cr_assert_eq(after_equal_first_runs("{\"shuffle_instances\": false}"), 0);
    /* As of their own last steps, s0's and s1's (t <= 1) are 1 (eps = 0) and
     * s2..s4's are 0: the earliest of the three at 0. */
    cr_assert_eq(after_equal_first_runs("{\"shuffle_instances\": false, \"lcb\": \"last_step\"}"), 2);
}

Test(spc, several_workers_never_wait_while_a_tester_has_work)
{
    hn h;
    open_solvers(&h, "{\"stream\": \"once\"}");
    bd_rng order;
    bd_rng_seed(&order, 3, 3);
    int64_t running[8];
    int n_running = 0, waits = 0, same_tester_twice = 0;
    for (int round = 0; round < 3000; round++) {
        while (n_running < 8) {
            int64_t id;
            int answer = hn_suggest(&h, n_running, &id);
            if (answer != BD_SUGGEST_TRIAL) {
                /* A WAIT is only right when no tester has a run to give. */
                json_t *d = hn_describe(&h);
                size_t k;
                json_t *t;
                json_array_foreach(json_object_get(d, "testers"), k, t)
                {
                    cr_assert(json_integer_value(json_object_get(t, "active_instances")) == NI &&
                                  json_integer_value(json_object_get(t, "queue_length")) == 0 &&
                                  json_integer_value(json_object_get(t, "retries_pending")) == 0,
                              "worker idle while tester %zu has work", k);
                }
                json_decref(d);
                waits += answer == BD_SUGGEST_WAIT;
                break;
            }
            for (int i = 0; i < n_running; i++)
                same_tester_twice += hn_get(&h, running[i])->config_id == hn_get(&h, id)->config_id;
            running[n_running++] = id;
        }
        if (!n_running)
            break;
        int pick = (int)bd_rng_below(&order, (uint64_t)n_running);
        run_from_matrix(&h, running[pick]);
        running[pick] = running[--n_running];
    }
    cr_assert_eq(n_running, 0, "the study ran to its end (%d waits on the way)", waits);
    cr_assert_gt(same_tester_twice, 0, "8 workers, 5 configs: busy testers take a second run");
    json_t *d = hn_describe(&h);
    cr_assert_eq(json_integer_value(json_object_get(d, "running")), n_running);
    json_decref(d);
    hn_close(&h);
}

Test(spc, the_first_runs_go_to_idle_testers)
{
    hn h;
    open_solvers(&h, "{}");
    int64_t ids[NC];
    for (int c = 0; c < NC; c++) {
        cr_assert_eq(hn_suggest(&h, c, &ids[c]), BD_SUGGEST_TRIAL);
        cr_assert_eq(hn_solver_of(hn_get(&h, ids[c])), c, "worker %d gets the next idle tester", c);
    }
    int64_t extra;
    cr_assert_eq(hn_suggest(&h, NC, &extra), BD_SUGGEST_TRIAL, "all busy: a busy tester runs a fresh instance");
    cr_assert_neq(hn_get(&h, extra)->instance, hn_get(&h, ids[0])->instance);
    hn_close(&h);
}

Test(spc, the_stream_cycles_through_the_instances_in_new_orders)
{
    hn h;
    open_solvers(&h, "{\"configs\": [{\"solver\": \"s1\"}]}");
    int seen[2][NI] = {{0}};
    int64_t first_pass[NI], second_pass[NI];
    for (int k = 0; k < 2 * NI; k++) {
        int64_t id;
        cr_assert_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_TRIAL);
        hn_trial *t = hn_get(&h, id);
        int pass = (int)bd_json_int(t->extra, "pass", -1);
        cr_assert_eq(bd_json_int(t->extra, "stream_position", -1), k, "one config, every result solved: fresh positions");
        cr_assert_eq(pass, k / NI);
        seen[pass][t->instance]++;
        (pass ? second_pass : first_pass)[k % NI] = t->instance;
        hn_complete(&h, id, 0.1); /* below kappa0: never queued */
    }
    for (int j = 0; j < NI; j++)
        cr_assert(seen[0][j] == 1 && seen[1][j] == 1, "each pass is a permutation of the instances");
    cr_assert_neq(memcmp(first_pass, second_pass, sizeof first_pass), 0, "the second pass is shuffled anew");
    check_replay(&h, 5);
    hn_close(&h);
}

Test(spc, a_failed_run_is_re_offered_then_given_up)
{
    hn h;
    open_solvers(&h, "{\"max_failures\": 2, \"shuffle_instances\": false}");
    int64_t id;
    cr_assert_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_TRIAL);
    hn_fail(&h, id);
    int64_t again;
    cr_assert_eq(hn_suggest(&h, 0, &again), BD_SUGGEST_TRIAL);
    cr_assert_eq(hn_get(&h, again)->instance, hn_get(&h, id)->instance, "the same run again");
    cr_assert_eq(hn_get(&h, again)->config_id, hn_get(&h, id)->config_id);
    cr_assert_eq(hn_get(&h, again)->budget, hn_get(&h, id)->budget);
    hn_expire(&h, again); /* the second loss: the instance gives up at the largest cap */
    json_t *d = hn_describe(&h);
    json_t *t0 = json_array_get(json_object_get(d, "testers"), 0);
    cr_assert_float_eq(json_number_value(json_object_get(t0, "mean_capped_runtime")), CAP_MAX, EPS);
    cr_assert_eq(json_integer_value(json_object_get(t0, "solved")), 0);
    json_decref(d);
    hn_close(&h);
}

static void check_replay_after_runs(const char *options)
{
    hn h;
    open_solvers(&h, options);
    bd_rng order;
    bd_rng_seed(&order, 5, 5);
    int64_t running[3];
    int n = 0;
    for (int i = 0; i < 400; i++) {
        while (n < 3) {
            int64_t id;
            if (hn_suggest(&h, n, &id) != BD_SUGGEST_TRIAL)
                break;
            running[n++] = id;
        }
        int pick = (int)bd_rng_below(&order, (uint64_t)n);
        if (i % 37 == 5)
            hn_fail(&h, running[pick]);
        else
            run_from_matrix(&h, running[pick]);
        running[pick] = running[--n];
    }
    check_replay(&h, 50);
    hn_close(&h);
}

Test(spc, replay_after_restart_gives_identical_next_runs)
{
    check_replay_after_runs("{}");
    check_replay_after_runs("{\"stream\": \"finite\"}"); /* its polled LCBs too */
}

static void check_doubling_samples(const char *options)
{
    hn h;
    char *names = hn_instance_names(NI);
    const char *space = "[{\"name\": \"x\", \"type\": \"float\", \"low\": 0, \"high\": 1},"
                        " {\"name\": \"k\", \"type\": \"int\", \"low\": 1, \"high\": 9}]";
    cr_assert_eq(hn_open_instances(&h, &bd_sched_spc, space, options, 0.5, CAP_MAX, 0, names),
                 0, "%s", h.err.message);
    free(names);
    for (int i = 0; i < 4000; i++) {
        int64_t id;
        if (hn_suggest(&h, 0, &id) != BD_SUGGEST_TRIAL)
            break;
        if (i == 300) { /* all three joined, none finished: time goes by the weights 1, 1/4, 1/9 */
            json_t *d = hn_describe(&h);
            json_t *samples = json_object_get(d, "samples");
            cr_assert_eq(json_array_size(samples), 3);
            double s0 = json_number_value(json_object_get(json_array_get(samples, 0), "seconds"));
            double s1 = json_number_value(json_object_get(json_array_get(samples, 1), "seconds"));
            double s2 = json_number_value(json_object_get(json_array_get(samples, 2), "seconds"));
            cr_assert(s0 / s1 > 3.5 && s0 / s1 < 4.5, "shares %g / %g, weights 1 / (1/4)", s0, s1);
            cr_assert(s0 / s2 > 8 && s0 / s2 < 10, "shares %g / %g, weights 1 / (1/9)", s0, s2);
            json_decref(d);
        }
        hn_trial *t = hn_get(&h, id);
        double x = json_number_value(json_object_get(t->config, "x"));
        double rt = (0.5 + 20 * x) * (1 + (double)(t->instance % 4));
        if (rt > t->budget)
            hn_complete_timeout(&h, id);
        else
            hn_complete(&h, id, rt);
    }
    json_t *d = hn_describe(&h);
    json_t *samples = json_object_get(d, "samples");
    cr_assert_str_eq(json_string_value(json_object_get(d, "configs")), "sampled");
    cr_assert_eq(json_array_size(samples), 3, "4 + 8 + 16 = 28 configs: three samples");
    cr_assert_eq(json_integer_value(json_object_get(json_array_get(samples, 2), "size")), 16);
    cr_assert_eq(json_array_size(json_object_get(d, "testers")), 28);
    json_decref(d);
    check_replay(&h, 20);
    hn_close(&h);
}

Test(spc, a_large_space_runs_doubling_samples)
{
    check_doubling_samples("{\"first_sample\": 4, \"max_configs\": 28}");
    check_doubling_samples("{\"first_sample\": 4, \"max_configs\": 28, \"stream\": \"finite\"}");
}

Test(spc, bad_studies_are_refused_with_the_field)
{
    hn h;
    cr_assert_neq(hn_open_instances(&h, &bd_sched_spc, SOLVERS, "{}", 0.5, CAP_MAX, 0, NULL), 0);
    cr_assert_str_eq(h.err.field, "instances");
    hn_close(&h);
    char *names = hn_instance_names(3);
    struct {
        const char *options, *field;
    } bad[] = {
        {"{\"kappa0\": 100}", "scheduler.options.kappa0"},
        {"{\"multiplier\": 1}", "scheduler.options.multiplier"},
        {"{\"configs\": []}", "scheduler.options.configs"},
        {"{\"configs\": [{\"solver\": \"s9\"}]}", "scheduler.options.configs"},
        {"{\"configs\": [{\"solver\": \"s1\"}, {\"solver\": \"s1\"}]}", "scheduler.options.configs"},
        {"{\"max_configs\": 100000}", "scheduler.options.max_configs"},
        {"{\"kapa0\": 1}", NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_neq(hn_open_instances(&h, &bd_sched_spc, SOLVERS, bad[i].options, 0.5, CAP_MAX, 0, names), 0,
                      "%s accepted", bad[i].options);
        if (bad[i].field)
            cr_assert_str_eq(h.err.field, bad[i].field, "%s", bad[i].options);
        hn_close(&h);
    }
    cr_assert_eq(hn_open_instances(&h, &bd_sched_spc, SOLVERS, "{\"configs\": [{\"solver\": \"s3\"}]}", 0.5, CAP_MAX,
                                   0, names),
                 0, "%s", h.err.message);
    int64_t id;
    cr_assert_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_TRIAL);
    cr_assert_str_eq(json_string_value(json_object_get(hn_get(&h, id)->config, "solver")), "s3");
    hn_close(&h);
    free(names);
}

/* ------------------------------------------------ finite instance sets */

#define FINITE "{\"shuffle_instances\": false, \"stream\": \"finite\"}"

Test(spc_finite, never_reruns_a_run_whose_result_is_known_and_ends_with_the_exact_best)
{
    hn h;
    open_solvers(&h, FINITE);
    double timed_out_at[NC][NI] = {{0}};
    int solved[NC][NI] = {{0}}, runs = 0, answer;
    int64_t id;
    while ((answer = hn_suggest(&h, 0, &id)) == BD_SUGGEST_TRIAL) {
        hn_trial *t = hn_get(&h, id);
        int c = hn_solver_of(t), j = (int)t->instance;
        cr_assert(!solved[c][j], "s%d re-ran instance %d after solving it", c, j);
        cr_assert_gt(t->budget, timed_out_at[c][j], "s%d re-ran instance %d at cap %g, timed out at %g before", c, j,
                     t->budget, timed_out_at[c][j]);
        if (matrix(c, j) > t->budget)
            timed_out_at[c][j] = t->budget;
        else
            solved[c][j] = 1;
        run_from_matrix(&h, id);
        runs++;
    }
    cr_assert_eq(answer, BD_SUGGEST_DONE, "every tester ends once its instances are settled");
    /* Settled: every value exact (solved, or at the largest cap), so the
     * incumbent is the config with the smallest mean capped runtime. */
    int best = 0;
    double mean[NC];
    for (int c = 0; c < NC; c++) {
        mean[c] = 0;
        for (int j = 0; j < NI; j++)
            mean[c] += fmin(matrix(c, j), CAP_MAX) / NI;
        if (mean[c] < mean[best])
            best = c;
    }
    json_t *d = hn_describe(&h);
    json_t *inc = json_object_get(d, "incumbent");
    char want[16];
    snprintf(want, sizeof want, "s%d", best);
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(inc, "config"), "solver")), want);
    cr_assert_float_eq(json_real_value(json_object_get(inc, "value")), mean[best], 1e-9);
    cr_assert_str_eq(json_string_value(json_object_get(d, "stream")), "finite");
    cr_assert_lt(runs, NC * NI * 8, "at most one run per (config, instance, cap)");
    json_decref(d);
    hn_close(&h);
}

/* Every config solves instance 0 quickly. The paper's LCBs are all 0 (eps >
 * 1/2 with one value) and the first config wins the tie; the finite
 * stream's general Chernoff bound keeps them apart (value times beta), so
 * the fastest config runs next. */
static int after_one_solve_each(const char *options)
{
    static const double seconds[NC] = {0.9, 0.2, 0.5, 0.3, 0.8};
    hn h;
    open_solvers(&h, options);
    for (int c = 0; c < NC; c++) {
        int64_t id;
        cr_assert_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_TRIAL);
        hn_complete(&h, id, seconds[hn_solver_of(hn_get(&h, id))]);
    }
    int64_t id;
    cr_assert_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_TRIAL);
    int solver = hn_solver_of(hn_get(&h, id));
    hn_close(&h);
    return solver;
}

Test(spc_finite, lcbs_rank_testers_from_their_first_values)
{
    cr_assert_eq(after_one_solve_each(FINITE), 1, "s1 solved in 0.2 s, the fastest");
    cr_assert_eq(after_one_solve_each("{\"shuffle_instances\": false, \"stream\": \"cycle\"}"), 0,
                 "the paper's rule: the first config");
}

/* The incumbent needs evidence: a config whose runs are still timing out is
 * not ahead of one with the same instances solved, however low its caps. */
Test(spc_finite, the_incumbent_counts_pending_timeouts_at_the_worst)
{
    hn h;
    open_solvers(&h, FINITE);
    for (int c = 0; c < NC; c++) { /* s0 times out at 1 s; the others solve in 1.5 s */
        int64_t id;
        cr_assert_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_TRIAL);
        if (hn_solver_of(hn_get(&h, id)) == 0)
            hn_complete_timeout(&h, id);
        else
            hn_complete(&h, id, 1.5 + 0.1 * hn_solver_of(hn_get(&h, id)));
    }
    json_t *d = hn_describe(&h);
    json_t *inc = json_object_get(d, "incumbent");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(inc, "config"), "solver")), "s1",
                     "s0's mean of 1 s is a lower bound; s1's 1.6 s is measured");
    json_decref(d);
    hn_close(&h);
}

Test(spc, describe_lists_a_bounded_number_of_testers)
{
    json_t *choices = json_array();
    for (int c = 0; c < 300; c++)
        json_array_append_new(choices, json_sprintf("c%03d", c));
    json_t *params = json_pack("[{s:s, s:s, s:o}]", "name", "solver", "type", "categorical", "choices", choices);
    char *text = json_dumps(params, JSON_COMPACT), *names = hn_instance_names(NI);
    hn h;
    cr_assert_eq(hn_open_instances(&h, &bd_sched_spc, text, FINITE, 0.5, CAP_MAX, 0, names), 0, "%s", h.err.message);
    for (int k = 0; k < 400; k++) {
        int64_t id;
        cr_assert_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_TRIAL);
        hn_complete(&h, id, 0.1);
    }
    json_t *d = hn_describe(&h);
    cr_assert_eq(json_array_size(json_object_get(d, "testers")), 64);
    cr_assert_eq(json_integer_value(json_object_get(d, "testers_total")), 300);
    cr_assert_eq(json_integer_value(json_object_get(json_array_get(json_object_get(d, "testers"), 0),
                                                    "active_instances")),
                 2, "the most active first");
    json_decref(d);
    hn_close(&h);
    free(text);
    free(names);
    json_decref(params);
}

Test(spc, new_studies_get_the_finite_stream)
{
    json_t *options = json_object();
    bd_sched_spc.new_study_defaults(NULL, options);
    cr_assert_str_eq(json_string_value(json_object_get(options, "stream")), "finite");
    json_object_set_new(options, "stream", json_string("cycle"));
    bd_sched_spc.new_study_defaults(NULL, options);
    cr_assert_str_eq(json_string_value(json_object_get(options, "stream")), "cycle", "an explicit choice stays");
    json_decref(options);
}
