/* test_bo_bos.c: BO-BOS (server/sched/bo_bos.c) through the scheduler
 * harness, with synthetic learning curves: a curve clearly worse than the
 * incumbent stops soon after N0 with a readable reason, a better one runs
 * to N, a replay in the middle of a running trial gives the same next
 * decisions, options are validated, and diverged, failed and expired
 * trials, a maximised objective with bounds and mixed conditional spaces
 * are survived. Quality on real training is for tests/bench. */
#include <criterion/criterion.h>
#include <gsl/gsl_errno.h>

#include "sched_harness.h"

extern const struct bd_sched_ops bd_sched_bo_bos;

#define BB (&bd_sched_bo_bos)

static void setup(void)
{
    gsl_set_error_handler_off();
}

TestSuite(bo_bos, .init = setup);

static const char *const space1 = "[{\"name\": \"x\", \"type\": \"float\", \"low\": 0, \"high\": 1}]";

/* Learning curves (errors at epoch n = 1..N). */
static double good_curve(size_t n) /* decays to 0.05 */
{
    return 0.05 + 0.5 * exp(-0.3 * (double)(n - 1));
}
static double bad_curve(size_t n) /* far above 0.05, barely improving */
{
    return 0.6 - 0.002 * (double)n;
}
static double better_curve(size_t n) /* below the good one from the start */
{
    return 0.02 + 0.08 * pow(0.9, (double)(n - 1));
}

static void open_ok(hn *h, const char *params, const char *options, double r_max)
{
    int rc = hn_open_space(h, BB, params, options, 1, r_max, 1);
    cr_assert_eq(rc, 0, "create failed: %s (%s)", h->err.message, h->err.field);
    h->check_pure = 0; /* suggest is the GP's; purity is checked once below */
}

static int64_t new_trial(hn *h)
{
    int64_t id;
    cr_assert_eq(hn_suggest(h, 0, &id), BD_SUGGEST_TRIAL);
    return id;
}

/* Runs trial id through epochs from..to of curve (as losses = errors);
 * returns the epoch it was stopped at, or 0. */
static size_t run_curve(hn *h, int64_t id, double (*curve)(size_t), size_t from, size_t to, bd_decision *last)
{
    for (size_t n = from; n <= to; n++) {
        bd_decision d = hn_measure(h, id, (double)n, curve(n));
        if (last)
            *last = d;
        if (d.stop)
            return n;
    }
    return 0;
}

/* A first trial that completes the good curve: incumbent error 0.05. */
static void incumbent(hn *h, size_t N)
{
    int64_t id = new_trial(h);
    cr_assert_eq(run_curve(h, id, good_curve, 1, N, NULL), 0, "the first trial has no incumbent to lose to");
    hn_complete(h, id, good_curve(N));
}

static json_t *verdict_of(json_t *describe, int64_t id)
{
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(describe, "verdicts"), i, v)
    {
        if (json_integer_value(json_object_get(v, "trial_id")) == id)
            return v;
    }
    return NULL;
}

Test(bo_bos, worse_curve_stops_soon_after_n0_with_a_readable_reason)
{
    hn h;
    open_ok(&h, space1, "{\"n_init\": 2}", 50);
    incumbent(&h, 50);
    int64_t id = new_trial(&h);
    bd_decision d = {0};
    /* Epochs 1..8 collect; the solve happens at epoch 8 (N0 for N = 50). */
    cr_assert_eq(run_curve(&h, id, bad_curve, 1, 8, &d), 0);
    json_t *desc = hn_describe(&h);
    json_t *v = verdict_of(desc, id);
    cr_assert_not_null(v);
    cr_expect_str_eq(json_string_value(json_object_get(v, "verdict")), "solved");
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(desc, "bos"), "triggered")), 2,
                 "both trials reached N0");
    json_decref(desc);
    size_t stopped = run_curve(&h, id, bad_curve, 9, 50, &d);
    cr_log_info("stopped at epoch %zu: %s", stopped, d.reason);
    cr_assert(stopped >= 9 && stopped <= 12, "stopped at epoch %zu, expected soon after N0 = 8", stopped);
    cr_expect(strstr(d.reason, "BOS: P(final error > incumbent 0.050) = ") == d.reason, "reason: %s", d.reason);
    char tail[32];
    snprintf(tail, sizeof tail, " at epoch %zu", stopped);
    cr_expect(strstr(d.reason, tail), "reason: %s", d.reason);
    cr_expect_eq(hn_get(&h, id)->state, HN_STOPPED);
    desc = hn_describe(&h);
    json_t *bos = json_object_get(desc, "bos");
    cr_expect_eq(json_integer_value(json_object_get(bos, "stopped")), 1);
    cr_expect_float_eq(json_number_value(json_object_get(bos, "epochs_saved")), 50.0 - (double)stopped, 1e-12);
    /* 6 points of the first trial joined the outer GP (epochs 1, 10, 20,
     * 30, 40 and [x, 1]), and the stopped one's epoch 1 (and 10) and
     * [x, n_t / N]. */
    cr_expect_eq(json_integer_value(json_object_get(desc, "observations")), 6 + 2 + (stopped > 10));
    cr_expect_eq(json_array_size(json_object_get(desc, "verdicts")), 0);
    json_decref(desc);
    hn_close(&h);
}

/* Before any completion the incumbent error is 1 (the paper's y_0* = 0):
 * the table could never stop the trial, so it is not solved at all. */
Test(bo_bos, first_trials_run_to_n_without_a_solve)
{
    hn h;
    open_ok(&h, space1, NULL, 50);
    int64_t id = new_trial(&h);
    cr_assert_eq(run_curve(&h, id, bad_curve, 1, 12, NULL), 0);
    json_t *desc = hn_describe(&h), *v = verdict_of(desc, id);
    cr_assert_not_null(v);
    cr_expect_str_eq(json_string_value(json_object_get(v, "verdict")), "continue");
    cr_expect_str_eq(json_string_value(json_object_get(v, "note")),
                     "BOS: no completed trial when BOS started: this trial runs to N");
    cr_expect_float_eq(json_number_value(json_object_get(v, "incumbent_error")), 1.0, 0);
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(desc, "bos"), "triggered")), 1);
    json_decref(desc);
    hn_close(&h);
}

Test(bo_bos, better_curve_runs_to_n)
{
    hn h;
    open_ok(&h, space1, "{\"n_init\": 2}", 50);
    incumbent(&h, 50);
    int64_t id = new_trial(&h);
    bd_decision d = {0};
    cr_expect_eq(run_curve(&h, id, better_curve, 1, 50, &d), 0, "a better curve was stopped: %s", d.reason);
    json_t *desc = hn_describe(&h);
    json_t *v = verdict_of(desc, id);
    cr_assert_not_null(v);
    cr_expect_str_eq(json_string_value(json_object_get(v, "verdict")), "final");
    cr_expect_str_eq(json_string_value(json_object_get(v, "action")), "continue");
    cr_expect_float_eq(json_number_value(json_object_get(v, "incumbent_error")), good_curve(50), 1e-12);
    json_decref(desc);
    hn_complete(&h, id, better_curve(50));
    hn_close(&h);
}

/* Feeds the MEASUREMENT (and STOPPED) events h just logged from index
 * `from` to the other scheduler r, live; returns r's decision. */
static bd_decision feed_other(hn *h, bd_sched *r, size_t from)
{
    bd_decision out = {0};
    for (size_t i = from; i < h->n_log; i++) {
        bd_decision d = {0};
        bd_observe_ctx ctx = {.replay = 0};
        bd_err err;
        bd_event ev = h->log[i].ev;
        ev.config = h->log[i].config;
        ev.extra = h->log[i].extra;
        bd_observe_ctx_seed(&ctx, h->def.seed, ev.id);
        cr_assert_eq(h->ops->observe(r, &ctx, &ev, &d, &err), 0);
        if (ev.type == BD_EV_MEASUREMENT)
            out = d;
    }
    return out;
}

static void expect_same_describe(hn *h, bd_sched *r)
{
    json_t *a = NULL, *b = NULL;
    cr_assert_eq(h->ops->describe(h->s, &a), 0);
    cr_assert_eq(h->ops->describe(r, &b), 0);
    char *sa = json_dumps(a, JSON_SORT_KEYS), *sb = json_dumps(b, JSON_SORT_KEYS);
    cr_expect(json_equal(a, b), "describe differs:\nlive   %s\nreplay %s", sa, sb);
    free(sa);
    free(sb);
    json_decref(a);
    json_decref(b);
}

/* Continues trial id on curve from epoch `from` in h and in r alike: the
 * decisions (stop and reason) must be identical. Returns the stop epoch or 0. */
static size_t continue_both(hn *h, bd_sched *r, int64_t id, double (*curve)(size_t), size_t from, size_t N)
{
    for (size_t n = from; n <= N; n++) {
        size_t mark = h->n_log;
        bd_decision a = hn_measure(h, id, (double)n, curve(n));
        bd_decision b = feed_other(h, r, mark);
        cr_expect_eq(a.stop, b.stop, "epoch %zu: live %d, replayed %d", n, a.stop, b.stop);
        cr_expect_str_eq(a.reason, b.reason, "epoch %zu", n);
        if (a.stop)
            return n;
    }
    return 0;
}

static double near_curve(size_t n) /* ends near the incumbent: BOS hesitates */
{
    return 0.06 + 0.3 * exp(-0.12 * (double)(n - 1));
}

Test(bo_bos, replay_in_the_middle_of_a_trial_gives_the_same_decisions)
{
    /* Replays at four points of a running trial: before the solve, right
     * after it and later (replayed() solves the table again because the
     * last verdict needs it), and after a measurement at a step that is not
     * an epoch (the table is solved again only at the next live
     * measurement). Parallel trials and a failure are in the log. */
    static const size_t cut[] = {4, 5, 9, 9}; /* N0 = 5 for N = 30 */
    static double (*const curves[])(size_t) = {bad_curve, bad_curve, near_curve, near_curve};
    for (size_t k = 0; k < 4; k++) {
        hn h;
        open_ok(&h, space1, "{\"n_init\": 3, \"paths\": 20000}", 30);
        incumbent(&h, 30);
        int64_t other = new_trial(&h), failing = new_trial(&h);
        run_curve(&h, other, near_curve, 1, 4, NULL);
        hn_fail(&h, failing);
        int64_t id = new_trial(&h);
        size_t stop_at = run_curve(&h, id, curves[k], 1, cut[k], NULL);
        cr_assert_eq(stop_at, 0, "case %zu stopped before the replay point", k);
        if (k == 3)
            cr_assert_eq(hn_measure(&h, id, (double)cut[k] + 0.5, 0.1).stop, 0);
        bd_sched *r = hn_replay(&h);
        expect_same_describe(&h, r);
        size_t a = continue_both(&h, r, id, curves[k], cut[k] + 1, 30);
        cr_log_info("case %zu: replayed at epoch %zu, stopped at %zu", k, cut[k], a);
        expect_same_describe(&h, r);
        /* The other running trial too, then the next suggestions. */
        size_t mark = h.n_log;
        run_curve(&h, other, near_curve, 5, 12, NULL);
        feed_other(&h, r, mark);
        if (hn_get(&h, other)->state == HN_RUNNING) {
            mark = h.n_log;
            hn_complete(&h, other, near_curve(30));
            feed_other(&h, r, mark);
        }
        if (!a) {
            mark = h.n_log;
            hn_complete(&h, id, curves[k](30));
            feed_other(&h, r, mark);
        }
        cr_expect(hn_same_next(&h, r, 2), "case %zu: the next suggestions differ", k);
        BB->destroy(r);
        hn_close(&h);
    }
}

Test(bo_bos, describe_shows_defaults_scaled_with_n)
{
    static const struct {
        double N;
        long long n0;
        const char *inter;
    } cases[] = {
        {50, 8, "[1, 10, 20, 30, 40]"}, {100, 16, "[1, 20, 40, 60, 80]"}, {10, 2, "[1, 2, 4, 6, 8]"}, {3, 2, "[1, 2]"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        hn h;
        open_ok(&h, space1, NULL, cases[i].N);
        json_t *d = hn_describe(&h);
        json_t *want = json_loads(cases[i].inter, 0, NULL);
        cr_expect_eq(json_integer_value(json_object_get(d, "n0")), cases[i].n0, "N = %g", cases[i].N);
        cr_expect(json_equal(json_object_get(d, "intermediate_epochs"), want), "N = %g", cases[i].N);
        cr_expect_eq(json_integer_value(json_object_get(d, "n_init")), 6);
        cr_expect_float_eq(json_number_value(json_object_get(d, "kappa")), 2.0, 0);
        json_decref(want);
        json_decref(d);
        hn_close(&h);
    }
    hn h;
    open_ok(&h, space1, "{\"n0\": 5, \"intermediate_epochs\": [7, 3, 3]}", 20);
    json_t *d = hn_describe(&h), *want = json_loads("[3, 7]", 0, NULL);
    cr_expect_eq(json_integer_value(json_object_get(d, "n0")), 5);
    cr_expect(json_equal(json_object_get(d, "intermediate_epochs"), want));
    json_decref(want);
    json_decref(d);
    hn_close(&h);
}

Test(bo_bos, options_are_validated)
{
    static const struct {
        const char *options;
        double r_max;
        const char *field;
    } bad[] = {
        {"{\"multiplier\": \"huge\"}", 50, "scheduler.options.multiplier"},
        {"{\"cost_aware\": true}", 50, "scheduler.options.cost_aware"}, /* needs logei */
        {"{\"initial\": \"lhs\"}", 50, "scheduler.options.initial"},
        {"{\"n0\": 1}", 50, "scheduler.options.n0"},
        {"{\"n0\": 50}", 50, "scheduler.options.n0"},
        {"{\"kappa\": 0.5}", 50, "scheduler.options.kappa"},
        {"{\"gamma\": 0}", 50, "scheduler.options.gamma"},
        {"{\"gamma\": 1.5}", 50, "scheduler.options.gamma"},
        {"{\"k2\": -1}", 50, "scheduler.options.k2"},
        {"{\"cd0\": -1}", 50, "scheduler.options.cd0"},
        {"{\"grid\": 1}", 50, "scheduler.options.grid"},
        {"{\"grid\": 257}", 50, "scheduler.options.grid"},
        {"{\"paths\": 10}", 50, "scheduler.options.paths"},
        {"{\"noise\": 0}", 50, "scheduler.options.noise"},
        {"{\"summary\": \"median\"}", 50, "scheduler.options.summary"},
        {"{\"intermediate_epochs\": [0]}", 50, "scheduler.options.intermediate_epochs"},
        {"{\"intermediate_epochs\": [50]}", 50, "scheduler.options.intermediate_epochs"},
        {"{\"intermediate_epochs\": \"1,10\"}", 50, "scheduler.options.intermediate_epochs"},
        {"{\"intermediate_epochs\": [1.5]}", 50, "scheduler.options.intermediate_epochs"},
        {"{\"n_init\": 0}", 50, "scheduler.options.n_init"},
        {"{\"ucb\": 2}", 50, NULL},
        {"{}", 50.5, "resource.max"},
        {"{}", 2, "resource.max"},
        {"{}", 5000, "resource.max"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        hn h;
        cr_expect_eq(hn_open_space(&h, BB, space1, bad[i].options, 1, bad[i].r_max, 0), BD_EINVAL, "%s accepted",
                     bad[i].options);
        if (bad[i].field)
            cr_expect_str_eq(h.err.field, bad[i].field, "%s", bad[i].options);
        hn_close(&h);
    }
    hn h;
    cr_expect_eq(hn_open_space(&h, BB, space1,
                               "{\"n0\": 4, \"kappa\": 3, \"k2\": 50, \"cd0\": 0.5, \"gamma\": 0.99, \"grid\": 50, "
                               "\"paths\": 1000, \"few_paths\": 10, \"noise\": 0.01, \"summary\": \"since_n0\", "
                               "\"multiplier\": \"code\", \"intermediate_epochs\": [], \"max_trials\": 3}",
                               1, 20, 1),
                 0, "%s", h.err.message);
    hn_close(&h);
    cr_expect(BB->multi_fidelity);
}

/* Values BOS cannot use: diverged (null) measurements and completions,
 * losses outside [0, 1] without bounds, missing epochs, non-epoch steps;
 * failed and expired trials. Nothing fails and the verdicts say why. */
Test(bo_bos, survives_diverged_failed_expired_and_unusable_values)
{
    hn h;
    open_ok(&h, space1, "{\"n_init\": 2, \"paths\": 5000}", 12);
    int64_t a = new_trial(&h);
    hn_measure(&h, a, 1, INFINITY); /* diverged */
    hn_complete(&h, a, INFINITY);
    int64_t b = new_trial(&h), c = new_trial(&h);
    hn_fail(&h, b);
    hn_expire(&h, c);
    int64_t e = new_trial(&h);
    for (size_t n = 1; n <= 12; n++)
        hn_measure(&h, e, (double)n, 0.3);
    hn_complete(&h, e, 0.3); /* all equal */
    int64_t f = new_trial(&h);
    hn_measure(&h, f, 1, 0.5);
    hn_measure(&h, f, 3, 0.5); /* epoch 2 missing at N0 = 2 */
    json_t *d = hn_describe(&h);
    json_t *v = verdict_of(d, f);
    cr_assert_not_null(v);
    cr_expect_str_eq(json_string_value(json_object_get(v, "verdict")), "skipped");
    cr_expect(strstr(json_string_value(json_object_get(v, "note")), "epoch 2 was not reported"), "%s",
              json_string_value(json_object_get(v, "note")));
    json_decref(d);
    hn_measure(&h, f, 2, 0.5);
    hn_measure(&h, f, 4, INFINITY); /* diverged after the solve */
    d = hn_describe(&h);
    v = verdict_of(d, f);
    cr_expect(strstr(json_string_value(json_object_get(v, "note")), "outside (0, 1)"), "%s",
              json_string_value(json_object_get(v, "note")));
    json_decref(d);
    hn_measure(&h, f, 4.5, 0.4); /* not an epoch */
    d = hn_describe(&h);
    v = verdict_of(d, f);
    cr_expect(strstr(json_string_value(json_object_get(v, "note")), "not an epoch"), "%s",
              json_string_value(json_object_get(v, "note")));
    json_decref(d);
    hn_expire(&h, f);
    int64_t g = new_trial(&h); /* losses outside [0, 1] with no bounds */
    for (size_t n = 1; n <= 12; n++)
        cr_expect_eq(hn_measure(&h, g, (double)n, 5.0 + (double)n).stop, 0);
    hn_complete(&h, g, 17);
    int64_t k = new_trial(&h); /* the incumbent error is 0.3 now: a clearly worse curve may stop */
    for (size_t n = 1; n <= 12 && hn_get(&h, k)->state == HN_RUNNING; n++)
        hn_measure(&h, k, (double)n, 0.9 - 0.001 * (double)n);
    if (hn_get(&h, k)->state == HN_RUNNING)
        hn_complete(&h, k, 0.89);
    /* Keep going: the model and its suggestions stay valid. */
    for (int i = 0; i < 6; i++) {
        int64_t id = new_trial(&h);
        if (i % 3 == 0)
            hn_fail(&h, id);
        else
            hn_complete(&h, id, i % 2 ? INFINITY : 0.4);
    }
    bd_sched *r = hn_replay(&h);
    cr_expect(hn_same_next(&h, r, 2));
    BB->destroy(r);
    hn_close(&h);
}

/* Accuracy in percent, maximised, with objective.bounds [0, 100]: losses
 * arrive negated; errors are (100 - accuracy) / 100. */
Test(bo_bos, maximised_objective_with_bounds)
{
    hn h;
    open_ok(&h, space1, "{\"n_init\": 2, \"paths\": 20000}", 30);
    h.def.maximize = 1;
    h.def.has_bounds = 1;
    h.def.bound_low = 0;
    h.def.bound_high = 100;
    int64_t first = new_trial(&h);
    for (size_t n = 1; n <= 30; n++)
        hn_measure(&h, first, (double)n, -100 * (1 - good_curve(n)));
    hn_complete(&h, first, -100 * (1 - good_curve(30)));
    int64_t id = new_trial(&h);
    bd_decision d = {0};
    size_t stopped = 0;
    for (size_t n = 1; n <= 30 && !stopped; n++) {
        d = hn_measure(&h, id, (double)n, -100 * (1 - bad_curve(n)));
        stopped = d.stop ? n : 0;
    }
    cr_expect(stopped > 5 && stopped <= 9, "stopped at %zu (N0 = 5)", stopped);
    char want[64];
    snprintf(want, sizeof want, "incumbent %.3f", good_curve(30));
    cr_expect(strstr(d.reason, want), "reason: %s", d.reason);
    hn_close(&h);

    /* Without bounds a maximised value must be an accuracy in [0, 1]. */
    open_ok(&h, space1, "{\"n_init\": 2, \"paths\": 20000}", 30);
    h.def.maximize = 1;
    first = new_trial(&h);
    for (size_t n = 1; n <= 30; n++)
        hn_measure(&h, first, (double)n, -(1 - good_curve(n)));
    hn_complete(&h, first, -(1 - good_curve(30)));
    id = new_trial(&h);
    stopped = 0;
    for (size_t n = 1; n <= 30 && !stopped; n++)
        stopped = hn_measure(&h, id, (double)n, -(1 - bad_curve(n))).stop ? n : 0;
    cr_expect(stopped > 5 && stopped <= 9, "stopped at %zu", stopped);
    hn_close(&h);
}

static int curve_outcome(const hn *h, const hn_trial *t, void *ud, double *loss)
{
    (void)h;
    (void)ud;
    int64_t id = t->id;
    if (id % 7 == 3)
        return HN_FAILED;
    if (id % 11 == 5)
        return HN_EXPIRED;
    *loss = id % 5 == 4 ? INFINITY : 0.25; /* diverged, or all equal */
    return HN_COMPLETED;
}

/* Categorical, conditional and integer parameters, duplicate configs (a
 * space with 6 configs in all), all-equal values: every proposal is valid
 * (the harness checks it against the space), and suggest is pure. */
Test(bo_bos, survives_mixed_conditional_spaces_and_duplicates)
{
    static const char *const mixed =
        "[{\"name\": \"algo\", \"type\": \"categorical\", \"choices\": [\"svm\", \"rf\", \"knn\"]},"
        " {\"name\": \"C\", \"type\": \"float\", \"low\": 0.001, \"high\": 100, \"log\": true, \"when\": {\"algo\": "
        "[\"svm\"]}},"
        " {\"name\": \"trees\", \"type\": \"int\", \"low\": 10, \"high\": 500, \"log\": true, \"when\": {\"algo\": "
        "[\"rf\"]}},"
        " {\"name\": \"k\", \"type\": \"int\", \"low\": 1, \"high\": 30, \"when\": {\"algo\": [\"knn\"]}},"
        " {\"name\": \"scale\", \"type\": \"categorical\", \"choices\": [true, false]}]";
    static const char *const tiny = "[{\"name\": \"a\", \"type\": \"categorical\", \"choices\": [\"p\", \"q\", \"r\"]},"
                                    " {\"name\": \"b\", \"type\": \"int\", \"low\": 0, \"high\": 1}]";
    const char *spaces[] = {mixed, tiny};
    for (int s = 0; s < 2; s++) {
        hn h;
        open_ok(&h, spaces[s], "{\"n_init\": 3, \"paths\": 2000}", 6);
        h.check_pure = 1;
        h.outcome = curve_outcome;
        for (int i = 0; i < 24; i++) {
            int64_t id;
            cr_assert_eq(hn_suggest(&h, i % 3, &id), BD_SUGGEST_TRIAL);
            if (i % 2)
                for (size_t n = 1; n <= 6 && hn_get(&h, id)->state == HN_RUNNING; n++)
                    hn_measure(&h, id, (double)n, 0.25);
            if (hn_get(&h, id)->state == HN_RUNNING)
                hn_finish(&h, id);
        }
        json_t *d = hn_describe(&h);
        cr_expect(json_is_object(json_object_get(d, "model")), "a model despite all-equal values");
        json_decref(d);
        bd_sched *r = hn_replay(&h);
        cr_expect(hn_same_next(&h, r, 2));
        BB->destroy(r);
        hn_close(&h);
    }
}

Test(bo_bos, max_trials_waits_then_is_done)
{
    hn h;
    open_ok(&h, space1, "{\"max_trials\": 2}", 10);
    h.check_pure = 1;
    int64_t a = new_trial(&h), b = new_trial(&h), id;
    cr_expect_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_WAIT);
    hn_complete(&h, a, 0.5);
    hn_fail(&h, b);
    cr_expect_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_DONE);
    hn_close(&h);
}

/* cost_aware: each ended trial's seconds per epoch (the completion's
 * elapsed_seconds over N, or a stopped trial's last measured seconds over
 * its epochs) feed the cost model; a replay gives the same next
 * suggestions. Sobol start included. */
Test(bo_bos, cost_aware_learns_seconds_per_epoch_and_replays)
{
    hn h;
    open_ok(&h, space1, "{\"n_init\": 3, \"acquisition\": \"logei\", \"cost_aware\": true, \"initial\": \"sobol\", "
                  "\"warp\": \"quantile\"}",
            10);
    for (int i = 0; i < 8; i++) {
        int64_t id = new_trial(&h);
        double x = json_number_value(json_object_get(hn_get(&h, id)->config, "x"));
        hn_complete_seconds(&h, id, 0.1 + 0.5 * (x - 0.3) * (x - 0.3), 10 * exp(2 * x));
    }
    json_t *d = hn_describe(&h);
    const json_t *cm = json_object_get(json_object_get(d, "model"), "cost_model");
    cr_assert(json_is_object(cm), "no cost model");
    cr_expect_eq(json_integer_value(json_object_get(cm, "training_points")), 8);
    json_decref(d);
    int64_t open_id = new_trial(&h); /* one still running */
    (void)open_id;
    bd_sched *r = hn_replay(&h);
    cr_expect(hn_same_next(&h, r, 3), "replay differs");
    BB->destroy(r);
    hn_close(&h);
}
