/* test_rising_bandits.c: Rising Bandits (server/sched/rising_bandits.c and
 * the arithmetic of rising_bound.c): the docs/ALGORITHMS.md section 4 vector,
 * the elimination rule, and hand-made arms driven through suggest/observe
 * with the scheduler harness, checked through describe(). Rewards come
 * from tables per (arm, pull), so every bound below is known exactly. */
#include <criterion/criterion.h>

#include "sched_harness.h"
#include "server/sched/proposer.h"
#include "server/sched/rising_bound.h"

extern const struct bd_sched_ops bd_sched_rising_bandits;

#define RB (&bd_sched_rising_bandits)
#define EPS 1e-12

/* ------------------------------------------------------------- the arithmetic */

Test(rising_bound, algorithms_md_vector_keeps_a_and_eliminates_b)
{
    const double ya[] = {.50, .60, .62, .63, .635}, yb[] = {.40, .42, .43, .435, .44};
    double wa = bd_rising_growth(ya, 5, 3), wb = bd_rising_growth(yb, 5, 3);
    cr_expect_float_eq(wa, (0.635 - 0.60) / 3, EPS);
    cr_expect_float_eq(wa, 0.011667, 5e-7);
    cr_expect_float_eq(wb, 0.006667, 5e-7);
    bd_rising_bound b[2] = {{.lower = ya[4], .upper = bd_rising_upper(ya[4], wa, 20 - 5), .ready = 1},
                            {.lower = yb[4], .upper = bd_rising_upper(yb[4], wb, 20 - 5), .ready = 1}};
    cr_expect_float_eq(b[0].upper, 0.81, EPS);
    cr_expect_float_eq(b[0].lower, 0.635, EPS);
    cr_expect_float_eq(b[1].upper, 0.54, EPS);
    int alive[2] = {1, 1};
    size_t by[2] = {9, 9};
    cr_expect_eq(bd_rising_eliminate(2, b, 0, alive, by), 1);
    cr_expect(alive[0] && !alive[1], "A must stay and B go");
    cr_expect_eq(by[1], 0, "B is eliminated by A");
}

Test(rising_bound, upper_bound_is_capped_at_one)
{
    cr_expect_eq(bd_rising_upper(0.9, 0.05, 10), 1.0);
    cr_expect_float_eq(bd_rising_upper(0.9, 0.005, 10), 0.95, EPS);
    cr_expect_eq(bd_rising_upper(0.4, 0.0, INFINITY), 0.4, "no growth: the horizon does not matter");
}

Test(rising_bound, no_growth_rate_before_window_plus_one_pulls)
{
    const double y[] = {.1, .2, .3, .4};
    cr_expect(isnan(bd_rising_growth(y, 3, 3)), "t = C: y(t - C) does not exist");
    cr_expect_float_eq(bd_rising_growth(y, 4, 3), (.4 - .1) / 3, EPS);
    cr_expect_float_eq(bd_rising_growth(y, 2, 1), .1, EPS);
}

Test(rising_bound, strict_and_non_strict_differ_on_a_tie)
{
    bd_rising_bound b[2] = {{.lower = .6, .upper = 1, .ready = 1}, {.lower = .5, .upper = .6, .ready = 1}};
    int alive[2] = {1, 1};
    size_t by[2] = {9, 9};
    cr_expect_eq(bd_rising_eliminate(2, b, 0, alive, by), 1, "non-strict: u = l eliminates");
    cr_expect(!alive[1] && by[1] == 0);
    alive[1] = 1;
    cr_expect_eq(bd_rising_eliminate(2, b, 1, alive, by), 0, "strict: u = l keeps");
    cr_expect(alive[0] && alive[1]);
}

Test(rising_bound, elimination_order_and_eliminator)
{
    /* By ascending u: X goes (Z has the largest l), then Y, which ties Z's l. */
    bd_rising_bound b[3] = {{.lower = .4, .upper = .4, .ready = 1},
                            {.lower = .4, .upper = .45, .ready = 1},
                            {.lower = .45, .upper = 1, .ready = 1}};
    int alive[3] = {1, 1, 1};
    size_t by[3] = {9, 9, 9};
    cr_expect_eq(bd_rising_eliminate(3, b, 0, alive, by), 2);
    cr_expect(!alive[0] && !alive[1] && alive[2]);
    cr_expect_eq(by[0], 2, "the eliminator is the surviving arm with the largest l");
    cr_expect_eq(by[1], 2);
    int alive2[3] = {1, 1, 1};
    cr_expect_eq(bd_rising_eliminate(3, b, 1, alive2, by), 1, "strict keeps Y (.45 is not > .45)");
    cr_expect(!alive2[0] && alive2[1] && alive2[2]);
}

Test(rising_bound, never_eliminates_every_arm_and_spares_arms_not_ready)
{
    bd_rising_bound tie[2] = {{.lower = .5, .upper = .5, .ready = 1}, {.lower = .5, .upper = .5, .ready = 1}};
    int alive[2] = {1, 1};
    size_t by[2] = {9, 9};
    cr_expect_eq(bd_rising_eliminate(2, tie, 0, alive, by), 1);
    cr_expect(!alive[0] && alive[1] && by[0] == 1, "ties go by index; the last arm stays");
    bd_rising_bound young[2] = {{.lower = 1, .upper = 1, .ready = 1}, {.lower = .2, .upper = 1, .ready = 0}};
    int alive3[2] = {1, 1};
    cr_expect_eq(bd_rising_eliminate(2, young, 0, alive3, by), 0, "an arm without a growth rate is never eliminated");
}

Test(rising_bound, rewards_map_values_into_unit_interval)
{
    bd_study_def d = {.maximize = 1};
    cr_expect_float_eq(bd_rising_reward(&d, -0.8), 0.8, EPS); /* an accuracy, negated by the engine */
    cr_expect_eq(bd_rising_reward(&d, -1.5), 1.0);
    cr_expect_eq(bd_rising_reward(&d, INFINITY), 0.0, "diverged");
    d.has_bounds = 1;
    d.bound_low = 0;
    d.bound_high = 100;
    cr_expect_float_eq(bd_rising_reward(&d, -80), 0.8, EPS);
    d = (bd_study_def){.maximize = 0, .has_bounds = 1, .bound_low = 0, .bound_high = 2};
    cr_expect_float_eq(bd_rising_reward(&d, 0.5), 0.75, EPS);
    cr_expect_eq(bd_rising_reward(&d, 3), 0.0, "clamped");
    cr_expect_eq(bd_rising_reward(&d, -1), 1.0, "clamped");
    cr_expect_eq(bd_rising_reward(&d, INFINITY), 0.0);
}

/* The record-tail bound (upper_bound "tail"): sigma from the top k spacings,
 * sigma = (r(1) - r(k' + 1)) / H(k'), k' = min(k, n - 1). */
Test(rising_bound, tail_scale_from_the_top_spacings)
{
    const double r[] = {.5, .6, .62, .63, .635, .64, .7};
    /* top 6: .7 .64 .635 .63 .62 .6; H(5) = 137/60 */
    cr_expect_float_eq(bd_rising_tail_scale(r, 7, 5), .1 / (137.0 / 60), EPS);
    cr_expect_float_eq(bd_rising_tail_scale(r, 7, 5), 0.043795620437956206, EPS);
    const double two[] = {.3, .5};
    cr_expect_float_eq(bd_rising_tail_scale(two, 2, 5), .2, EPS, "k' = n - 1 = 1");
    const double mixed[] = {.2, .9, .9, .1, .5, .4}; /* unsorted, with a tie at the top */
    cr_expect_float_eq(bd_rising_tail_scale(mixed, 6, 3), (.9 - .4) / (1 + 1.0 / 2 + 1.0 / 3), EPS);
    cr_expect_float_eq(bd_rising_tail_scale(mixed, 6, 3), 0.27272727272727276, EPS);
    cr_expect(isnan(bd_rising_tail_scale(r, 1, 5)), "one reward: no spacing");
    cr_expect(isnan(bd_rising_tail_scale(r, 0, 5)));
    const double flat[] = {.4, .4, .4, .4};
    cr_expect_eq(bd_rising_tail_scale(flat, 4, 5), 0.0);
}

/* u = min(y + (1 + 1/sqrt(k')) sigma ln((n + h) / n), 1). */
Test(rising_bound, tail_upper_bound_vectors)
{
    double s = .1 / (137.0 / 60);
    cr_expect_float_eq(bd_rising_tail_upper(.7, s, 5, 7, 13), .7 + (1 + 1 / sqrt(5.0)) * s * log(20.0 / 7), EPS);
    cr_expect_float_eq(bd_rising_tail_upper(.7, s, 5, 7, 13), 0.7665394241502687, 1e-12);
    cr_expect_float_eq(bd_rising_tail_upper(.5, .2, 1, 2, 2), .5 + 2 * .2 * log(2.0), EPS);
    cr_expect_eq(bd_rising_tail_upper(.9, .2, 1, 2, 100), 1.0, "capped at 1");
    cr_expect_eq(bd_rising_tail_upper(.6, 0.0, 5, 7, 13), .6, "no spread: no rise");
    cr_expect_eq(bd_rising_tail_upper(.6, NAN, 5, 7, 13), .6);
    cr_expect_eq(bd_rising_tail_upper(.6, s, 5, 7, 0), .6, "no pulls left");
    cr_expect_eq(bd_rising_tail_upper(.6, s, 5, 7, INFINITY), 1.0);
}

/* E[(R - Y)+] = (s / n) exp(-(Y - y) / s), s = (1 + 1/sqrt(k')) sigma. */
Test(rising_bound, tail_ei_vectors)
{
    cr_expect_float_eq(bd_rising_tail_ei(.8, .8, .2, 4, 10), .3 / 10, EPS, "s = 1.5 sigma; the leader: s / n");
    cr_expect_float_eq(bd_rising_tail_ei(.5, .8, .2, 4, 10), .03 * exp(-1.0), EPS);
    cr_expect_float_eq(bd_rising_tail_ei(.5, .8, .2, 4, 10), 0.01103638323514327, 1e-15);
    cr_expect_float_eq(bd_rising_tail_ei(.5, .8, .1, 1, 3), .2 / 3 * exp(-1.5), EPS, "k' = 1: s = 2 sigma");
    cr_expect_float_eq(bd_rising_tail_ei(.9, .8, .2, 4, 10), .03, EPS, "Y below y counts as y");
    cr_expect_eq(bd_rising_tail_ei(.5, .8, 0.0, 4, 10), 0.0, "no spread: nothing to expect");
    cr_expect_eq(bd_rising_tail_ei(.5, .8, NAN, 4, 10), 0.0);
    cr_expect_eq(bd_rising_tail_ei(.5, .8, .2, 4, 0), 0.0);
    cr_expect_eq(bd_rising_tail_ei(.5, .8, .2, 0, 10), 0.0);
}

/* The Thompson draw: rise = -sigma ln(n (1 - u^(1/h))), clipped to [0, upper - y]. */
Test(rising_bound, tail_sample_vectors)
{
    /* q = 10 (1 - .5^(1/100)) = .0690751, rise = .1 x 2.672561 */
    cr_expect_float_eq(bd_rising_tail_sample(.5, .9, .1, 10, 100, .5), 0.7672561747591753, 1e-13);
    cr_expect_float_eq(bd_rising_tail_sample(.5, .9, .1, 10, 100, .01), 0.5798342954709198, 1e-13);
    cr_expect_float_eq(bd_rising_tail_sample(.5, .6, .02, 4, 20, .9), 0.5772487619260188, 1e-13);
    cr_expect_eq(bd_rising_tail_sample(.5, .9, .1, 100, 10, .5), .5, "q = 6.7 >= 1: no draw beats y");
    cr_expect_eq(bd_rising_tail_sample(.5, .9, .1, 10, 100, 0.0), .5);
    cr_expect_eq(bd_rising_tail_sample(.5, .9, .1, 10, 100, .999), .9, "capped at the upper bound");
    cr_expect_float_eq(bd_rising_tail_sample(.5, .9, NAN, 10, 100, .25), .6, EPS, "no tail: uniform on [l, u]");
    cr_expect_float_eq(bd_rising_tail_sample(.5, .9, 0.0, 10, 100, .25), .6, EPS);
    cr_expect_eq(bd_rising_tail_sample(.5, .9, .1, 10, 0, .7), .5, "no pulls left: y");
    cr_expect_eq(bd_rising_tail_sample(.5, .9, .1, 10, INFINITY, .7), .9);
    cr_expect_eq(bd_rising_tail_sample(.5, .4, .1, 10, 100, .7), .5, "an upper below y is y");
}

/* Inverse transform: over the grid u = (i + 1/2)/N the share of draws at or
 * below y + x is the model's P(rise <= x) = (1 - exp(-x/sigma)/n)^h, to 1/N. */
Test(rising_bound, tail_sample_follows_the_tail_model)
{
    const int N = 20000;
    const double y = .6, sigma = .03, h = 120;
    const size_t n = 15;
    const double xs[] = {0.0, .01, .03, .06, .1};
    for (size_t j = 0; j < sizeof xs / sizeof *xs; j++) {
        int below = 0;
        for (int i = 0; i < N; i++)
            below += bd_rising_tail_sample(y, 1.0, sigma, n, h, (i + .5) / N) <= y + xs[j] + 1e-12;
        double want = pow(1 - exp(-xs[j] / sigma) / (double)n, h);
        cr_expect(fabs((double)below / N - want) <= 1.5 / N, "x = %g: %g vs %g", xs[j], (double)below / N, want);
    }
}

/* ------------------------------------------------------------- the scheduler */

static const char *const cash3 =
    "[{\"name\": \"algo\", \"type\": \"categorical\", \"choices\": [\"a\", \"b\", \"c\"]},"
    " {\"name\": \"xa\", \"type\": \"float\", \"low\": 0, \"high\": 1, \"when\": {\"algo\": [\"a\"]}},"
    " {\"name\": \"xb\", \"type\": \"float\", \"low\": 0, \"high\": 1, \"when\": {\"algo\": [\"b\"]}},"
    " {\"name\": \"xc\", \"type\": \"float\", \"low\": 0, \"high\": 1, \"when\": {\"algo\": [\"c\"]}}]";

static const char *const cash2 =
    "[{\"name\": \"algo\", \"type\": \"categorical\", \"choices\": [\"a\", \"b\"]},"
    " {\"name\": \"xa\", \"type\": \"float\", \"low\": 0, \"high\": 1, \"when\": {\"algo\": [\"a\"]}},"
    " {\"name\": \"xb\", \"type\": \"float\", \"low\": 0, \"high\": 1, \"when\": {\"algo\": [\"b\"]}}]";

typedef struct study {
    int maximize, has_bounds;
    double lo, hi;
    long long T;
    double seconds;
} study;

static const study accuracy30 = {.maximize = 1, .T = 30};

/* Opens rising_bandits with the study fields the harness does not set.
 * The harness creates first without them (which fails: no limits.trials),
 * so create again. Returns create()'s code. */
static int open_rb(hn *h, const char *params, const char *options, const study *st)
{
    hn_open_space(h, RB, params, options, 1, 1, 0);
    cr_assert_null(h->s);
    h->def.maximize = st->maximize;
    h->def.has_bounds = st->has_bounds;
    h->def.bound_low = st->lo;
    h->def.bound_high = st->hi;
    h->def.limit_trials = st->T;
    h->def.limit_seconds = st->seconds;
    return RB->create(&h->def, &h->s, &h->err);
}

static void open_ok(hn *h, const char *params, const char *options, const study *st)
{
    int rc = open_rb(h, params, options, st);
    cr_assert_eq(rc, 0, "create failed: %s (%s)", h->err.message, h->err.field);
}

static const char *arm_name(hn *h, int64_t id)
{
    return json_string_value(json_object_get(hn_get(h, id)->config, "algo"));
}

/* The pull number (from 1) of trial id within its arm. */
static int pull_no(hn *h, int64_t id)
{
    int n = 0;
    for (int64_t i = 1; i <= id; i++)
        n += strcmp(arm_name(h, i), arm_name(h, id)) == 0;
    return n;
}

/* Maximised values per arm (a, b, c) and pull (from 1): a table row is
 * repeated past its end. */
#define PULLS 8
typedef double table[3][PULLS];

static double value_of(hn *h, int64_t id, const table t)
{
    int k = arm_name(h, id)[0] - 'a', n = pull_no(h, id);
    return t[k][(n < PULLS ? n : PULLS) - 1];
}

static int64_t pull(hn *h)
{
    int64_t id = 0;
    cr_assert_eq(hn_suggest(h, 0, &id), BD_SUGGEST_TRIAL);
    return id;
}

/* One worker: n pulls, each reported (value from t) before the next. */
static void play(hn *h, int n, const table t)
{
    for (int i = 0; i < n; i++) {
        int64_t id = pull(h);
        hn_complete(h, id, -value_of(h, id, t)); /* the engine negates a maximised value */
    }
}

static json_t *arm_state(json_t *d, const char *name)
{
    json_t *arms = json_object_get(d, "arms");
    for (size_t i = 0; i < json_array_size(arms); i++) {
        json_t *a = json_array_get(arms, i);
        if (strcmp(json_string_value(json_object_get(a, "arm")), name) == 0)
            return a;
    }
    cr_assert_fail("no arm %s in describe()", name);
    return NULL;
}

static double num(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    cr_assert(json_is_number(v), "%s is not a number", key);
    return json_number_value(v);
}

static void expect_alive(json_t *d, const char *name)
{
    json_t *a = arm_state(d, name);
    cr_expect(json_is_null(json_object_get(a, "eliminated_round")), "arm %s was eliminated", name);
    cr_expect(json_is_null(json_object_get(a, "eliminated_by")));
}

static void expect_eliminated(json_t *d, const char *name, long long round, const char *by)
{
    json_t *a = arm_state(d, name);
    cr_expect_eq(json_integer_value(json_object_get(a, "eliminated_round")), round, "arm %s: eliminated_round", name);
    cr_expect_str_eq(json_string_value(json_object_get(a, "eliminated_by")), by, "arm %s: eliminated_by", name);
}

/* a rises, b is flat and bad, c rises then flattens (window 2, T 30). */
static const table three = {{.60, .70, .75, .78, .80, .81, .82, .83},
                            {.30, .30, .30, .30, .30, .30, .30, .30},
                            {.50, .60, .65, .65, .65, .65, .65, .65}};

Test(rising_bandits, rounds_eliminate_the_flat_arm_then_the_flattened_one)
{
    hn h;
    open_ok(&h, cash3, "{\"inner\": \"random\", \"window\": 2}", &accuracy30);
    play(&h, 3, three);
    for (int64_t id = 1; id <= 3; id++) /* a round pulls every arm once, in arm order */
        cr_expect_eq(arm_name(&h, id)[0], "abc"[id - 1]);
    play(&h, 3, three);
    /* Round 2: t = 2 = C, no growth rate yet: nothing can go, b's u is 1. */
    json_t *d = hn_describe(&h);
    cr_expect_eq(num(d, "round"), 3);
    cr_expect_str_eq(json_string_value(json_object_get(d, "phase")), "rounds");
    json_t *b = arm_state(d, "b");
    expect_alive(d, "b");
    cr_expect(json_is_null(json_object_get(b, "growth_rate")));
    cr_expect_eq(num(b, "upper"), 1.0);
    json_decref(d);

    play(&h, 3, three);
    /* Round 3: a (w .075, u 1), c (w .075, u 1); b (w 0, u .3 <= l_a .75) goes. */
    d = hn_describe(&h);
    cr_expect_eq(num(d, "round"), 4);
    json_t *a = arm_state(d, "a");
    cr_expect_float_eq(num(a, "growth_rate"), (.75 - .60) / 2, EPS);
    cr_expect_float_eq(num(a, "lower"), .75, EPS);
    cr_expect_eq(num(a, "upper"), 1.0);
    b = arm_state(d, "b");
    cr_expect_eq(num(b, "pulls"), 3);
    cr_expect_float_eq(num(b, "best_reward"), .30, EPS);
    cr_expect_eq(num(b, "growth_rate"), 0.0);
    cr_expect_float_eq(num(b, "upper"), .30, EPS);
    cr_expect_float_eq(num(b, "lower"), .30, EPS);
    expect_eliminated(d, "b", 3, "a");
    json_t *c = arm_state(d, "c");
    cr_expect_float_eq(num(c, "growth_rate"), (.65 - .50) / 2, EPS);
    expect_alive(d, "c");
    json_decref(d);

    /* Rounds 4 and 5 pull a and c only. Round 4: c's w = .025, u = 1.
     * Round 5: c's w = 0, u = .65 <= l_a = .80: c goes, a is left. */
    play(&h, 2, three);
    cr_expect_str_eq(arm_name(&h, 10), "a");
    cr_expect_str_eq(arm_name(&h, 11), "c");
    d = hn_describe(&h);
    expect_alive(d, "c");
    cr_expect_float_eq(num(arm_state(d, "c"), "growth_rate"), (.65 - .60) / 2, EPS);
    json_decref(d);
    play(&h, 2, three);
    d = hn_describe(&h);
    expect_eliminated(d, "c", 5, "a");
    cr_expect_float_eq(num(arm_state(d, "c"), "upper"), .65, EPS);
    cr_expect_str_eq(json_string_value(json_object_get(d, "phase")), "last_arm");
    cr_expect_eq(num(d, "round"), 5);
    cr_expect_eq(num(d, "pulls"), 13);
    /* The incumbent: a's best trial (its 5th pull, trial 12) in the objective's own orientation. */
    json_t *inc = json_object_get(d, "incumbent");
    cr_assert(json_is_object(inc));
    cr_expect_eq(json_integer_value(json_object_get(inc, "trial_id")), 12);
    cr_expect_eq(json_integer_value(json_object_get(inc, "config_id")), 12);
    cr_expect_float_eq(num(inc, "value"), .80, EPS);
    cr_expect(json_equal(json_object_get(inc, "config"), hn_get(&h, 12)->config));
    cr_expect_eq(num(inc, "budget"), 1);
    json_decref(d);
    hn_close(&h);
}

/* u = y + w (T - t) with t the arm's own pulls (2 here), not the 4 pulls
 * of the study (which would give .64 and .47). */
Test(rising_bandits, horizon_is_T_minus_the_arms_own_pulls)
{
    static const table two = {{.50, .52, .52, .52, .52, .52, .52, .52}, {.40, .41, .41, .41, .41, .41, .41, .41}};
    hn h;
    study st = {.maximize = 1, .T = 10};
    open_ok(&h, cash3, "{\"inner\": \"random\", \"window\": 1, \"arm_parameter\": \"algo\"}", &st);
    play(&h, 6, two); /* two rounds; c (row of zeros) goes at round 2 */
    json_t *d = hn_describe(&h);
    cr_expect_float_eq(num(arm_state(d, "a"), "growth_rate"), .02, EPS);
    cr_expect_float_eq(num(arm_state(d, "a"), "upper"), .52 + .02 * 8, EPS);
    cr_expect_float_eq(num(arm_state(d, "b"), "upper"), .41 + .01 * 8, EPS);
    expect_eliminated(d, "b", 2, "a");
    expect_eliminated(d, "c", 2, "a");
    cr_expect_eq(num(arm_state(d, "c"), "upper"), 0.0);
    json_decref(d);
    hn_close(&h);
}

/* After two pulls (window 1) b's u = .6 equals a's l = .6: the paper's
 * non-strict rule eliminates b, the authors' strict rule keeps it. */
Test(rising_bandits, elimination_option_decides_a_tie)
{
    static const table tie = {{.40, .60, .60, .60, .60, .60, .60, .60}, {.60, .60, .60, .60, .60, .60, .60, .60}};
    study st = {.maximize = 1, .T = 10};
    hn h;
    open_ok(&h, cash2, "{\"inner\": \"random\", \"window\": 1}", &st);
    play(&h, 4, tie);
    json_t *d = hn_describe(&h);
    cr_expect_str_eq(json_string_value(json_object_get(d, "elimination")), "non_strict");
    expect_eliminated(d, "b", 2, "a");
    json_decref(d);
    hn_close(&h);
    open_ok(&h, cash2, "{\"inner\": \"random\", \"window\": 1, \"elimination\": \"strict\"}", &st);
    play(&h, 4, tie);
    d = hn_describe(&h);
    expect_alive(d, "b");
    cr_expect_eq(num(arm_state(d, "b"), "upper"), num(arm_state(d, "a"), "lower"));
    json_decref(d);
    hn_close(&h);
}

Test(rising_bandits, last_arm_has_no_barrier_and_the_study_ends_at_T)
{
    hn h;
    open_ok(&h, cash3, "{\"inner\": \"random\", \"window\": 2}", &accuracy30);
    play(&h, 13, three); /* as above: a alone after 13 pulls */
    int64_t ids[3];
    for (int i = 0; i < 3; i++) { /* three workers at once, no WAIT */
        cr_assert_eq(hn_suggest(&h, i, &ids[i]), BD_SUGGEST_TRIAL);
        cr_expect_str_eq(arm_name(&h, ids[i]), "a");
    }
    for (int i = 0; i < 3; i++)
        hn_complete(&h, ids[i], -.9);
    play(&h, 30 - 16, three);
    int64_t id;
    cr_expect_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_DONE, "T = 30 pulls were created");
    cr_expect_eq(RB->status(h.s), BD_STATUS_DONE);
    json_t *d = hn_describe(&h);
    cr_expect_str_eq(json_string_value(json_object_get(d, "phase")), "done");
    cr_expect_eq(num(arm_state(d, "a"), "pulls"), 30 - 3 - 5);
    cr_expect_float_eq(num(arm_state(d, "a"), "best_reward"), .9, EPS);
    json_decref(d);
    hn_close(&h);
}

Test(rising_bandits, done_at_T_even_in_the_middle_of_a_round_with_pulls_running)
{
    hn h;
    study st = accuracy30;
    st.T = 4;
    open_ok(&h, cash3, "{\"inner\": \"random\"}", &st);
    play(&h, 3, three);
    int64_t id;
    cr_assert_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_TRIAL);
    cr_expect_eq(hn_suggest(&h, 1, &id), BD_SUGGEST_DONE);
    hn_complete(&h, 4, -.7);
    cr_expect_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_DONE);
    hn_close(&h);
}

/* Default window 7: a flat arm survives rounds 1..7 and goes at round 8,
 * its first round with t = C + 1 pulls. */
Test(rising_bandits, no_elimination_before_window_plus_one_pulls)
{
    static const table flat = {{.80, .80, .80, .80, .80, .80, .80, .80},
                               {.10, .10, .10, .10, .10, .10, .10, .10},
                               {.20, .20, .20, .20, .20, .20, .20, .20}};
    hn h;
    study st = accuracy30;
    st.T = 40;
    open_ok(&h, cash3, "{\"inner\": \"random\"}", &st);
    for (int round = 1; round <= 7; round++) {
        play(&h, 3, flat);
        json_t *d = hn_describe(&h);
        expect_alive(d, "b");
        expect_alive(d, "c");
        cr_expect(json_is_null(json_object_get(arm_state(d, "b"), "growth_rate")), "round %d", round);
        cr_expect_eq(num(arm_state(d, "b"), "upper"), 1.0);
        json_decref(d);
    }
    play(&h, 3, flat);
    json_t *d = hn_describe(&h);
    expect_eliminated(d, "b", 8, "a");
    expect_eliminated(d, "c", 8, "a");
    cr_expect_eq(num(arm_state(d, "b"), "growth_rate"), 0.0);
    cr_expect_str_eq(json_string_value(json_object_get(d, "phase")), "last_arm");
    json_decref(d);
    hn_close(&h);
}

Test(rising_bandits, several_workers_get_the_rounds_arms_then_wait)
{
    hn h;
    open_ok(&h, cash3, "{\"inner\": \"random\", \"window\": 2}", &accuracy30);
    int64_t ids[3], id;
    for (int w = 0; w < 3; w++) {
        cr_assert_eq(hn_suggest(&h, w, &ids[w]), BD_SUGGEST_TRIAL);
        cr_expect_eq(arm_name(&h, ids[w])[0], "abc"[w]);
        cr_expect_eq(json_integer_value(json_object_get(hn_get(&h, ids[w])->extra, "round")), 1);
    }
    cr_expect_eq(hn_suggest(&h, 3, &id), BD_SUGGEST_WAIT, "the round's pulls are all out");
    cr_expect_eq(RB->status(h.s), BD_STATUS_WAITING);
    hn_complete(&h, ids[2], -.5);
    hn_complete(&h, ids[0], -.6);
    cr_expect_eq(hn_suggest(&h, 3, &id), BD_SUGGEST_WAIT, "b's result is not in");
    hn_complete(&h, ids[1], -.3);
    cr_assert_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_TRIAL);
    cr_expect_str_eq(arm_name(&h, id), "a");
    cr_expect_eq(json_integer_value(json_object_get(hn_get(&h, id)->extra, "round")), 2);
    cr_expect_eq(json_integer_value(json_object_get(hn_get(&h, id)->extra, "pull")), 2);
    json_t *d = hn_describe(&h);
    cr_expect_eq(num(arm_state(d, "a"), "running"), 1);
    cr_expect_float_eq(num(arm_state(d, "c"), "best_reward"), .5, EPS);
    json_decref(d);
    hn_close(&h);
}

/* Failed and expired pulls count as pulls with no improvement (0 before
 * any result) and do not hold the round up. */
Test(rising_bandits, a_failed_pull_counts_with_no_improvement)
{
    hn h;
    open_ok(&h, cash3, "{\"inner\": \"random\", \"window\": 2}", &accuracy30);
    int64_t a1 = pull(&h), b1 = pull(&h), c1 = pull(&h);
    hn_fail(&h, a1);
    hn_complete(&h, b1, -.3);
    hn_complete(&h, c1, -.5);
    json_t *d = hn_describe(&h);
    cr_expect_eq(num(d, "round"), 2, "the failed pull ended round 1 like any result");
    cr_expect_eq(num(arm_state(d, "a"), "pulls"), 1);
    cr_expect_eq(num(arm_state(d, "a"), "best_reward"), 0.0);
    json_decref(d);
    int64_t a2 = pull(&h), b2 = pull(&h), c2 = pull(&h);
    hn_complete(&h, a2, -.7);
    hn_expire(&h, b2);
    hn_complete(&h, c2, -.6);
    int64_t a3 = pull(&h), b3 = pull(&h), c3 = pull(&h);
    hn_complete(&h, a3, -.75);
    hn_complete(&h, b3, -.3);
    hn_fail(&h, c3);
    d = hn_describe(&h);
    /* y_a = [0, .7, .75], y_b = [.3, .3, .3], y_c = [.5, .6, .6] */
    cr_expect_float_eq(num(arm_state(d, "a"), "growth_rate"), (.75 - 0) / 2, EPS);
    cr_expect_float_eq(num(arm_state(d, "c"), "growth_rate"), (.6 - .5) / 2, EPS);
    cr_expect_float_eq(num(arm_state(d, "c"), "best_reward"), .6, EPS);
    cr_expect_eq(num(arm_state(d, "c"), "pulls"), 3);
    expect_eliminated(d, "b", 3, "a");
    expect_alive(d, "c");
    json_decref(d);
    hn_close(&h);
}

Test(rising_bandits, minimised_objective_maps_through_its_bounds)
{
    hn h;
    study st = {.maximize = 0, .has_bounds = 1, .lo = 0, .hi = 2, .T = 10};
    open_ok(&h, cash3, "{\"inner\": \"random\"}", &st);
    int64_t a = pull(&h), b = pull(&h), c = pull(&h);
    hn_complete(&h, a, 0.5);
    hn_complete(&h, b, INFINITY); /* diverged */
    hn_complete(&h, c, 1.5);
    json_t *d = hn_describe(&h);
    cr_expect_float_eq(num(arm_state(d, "a"), "best_reward"), 0.75, EPS);
    cr_expect_eq(num(arm_state(d, "b"), "best_reward"), 0.0);
    cr_expect_float_eq(num(arm_state(d, "c"), "best_reward"), 0.25, EPS);
    json_t *inc = json_object_get(d, "incumbent");
    cr_expect_eq(json_integer_value(json_object_get(inc, "trial_id")), a);
    cr_expect_float_eq(num(inc, "value"), 0.5, EPS, "a loss stays a loss");
    json_decref(d);
    hn_close(&h);
}

/* ------------------------------------------------------------- create() errors */

static void expect_rejected(const char *params, const char *options, const study *st, const char *field)
{
    hn h;
    cr_expect_eq(open_rb(&h, params, options, st), BD_EINVAL, "expected a rejection at %s", field);
    cr_expect_str_eq(h.err.field, field, "%s", h.err.message);
    hn_close(&h);
}

Test(rising_bandits, minimised_objective_without_bounds_is_rejected)
{
    hn h;
    study st = {.maximize = 0, .T = 20};
    cr_expect_eq(open_rb(&h, cash3, NULL, &st), BD_EINVAL);
    cr_expect_str_eq(h.err.field, "objective.bounds");
    cr_expect_str_eq(h.err.message, "rising_bandits needs objective.bounds to map a loss into [0, 1]");
    hn_close(&h);
}

Test(rising_bandits, study_limits_and_options_are_checked)
{
    study no_t = {.maximize = 1};
    expect_rejected(cash3, NULL, &no_t, "limits.trials");
    expect_rejected(cash3, "{\"cost_aware\": true}", &accuracy30, "limits.seconds");
    expect_rejected(cash3, "{\"halve_horizon\": true}", &accuracy30, "scheduler.options.halve_horizon");
    expect_rejected(cash3, "{\"windw\": 3}", &accuracy30, "scheduler.options.windw");
    expect_rejected(cash3, "{\"window\": 0}", &accuracy30, "scheduler.options.window");
    expect_rejected(cash3, "{\"elimination\": \"lenient\"}", &accuracy30, "scheduler.options.elimination");
    expect_rejected(cash3, "{\"inner\": \"smac\"}", &accuracy30, "scheduler.options.inner");
    expect_rejected(cash3, "{\"inner\": \"tpe\", \"n_init\": 3}", &accuracy30, "scheduler.options.n_init");
    expect_rejected(cash3, "{\"allocation\": \"softmax\"}", &accuracy30, "scheduler.options.allocation");
    expect_rejected(cash3, "{\"n_init\": 0}", &accuracy30, "scheduler.options.n_init");
    expect_rejected(cash3, "{\"upper_bound\": \"loose\"}", &accuracy30, "scheduler.options.upper_bound");
    expect_rejected(cash3, "{\"upper_bound\": \"tail\", \"tail\": 0}", &accuracy30, "scheduler.options.tail");
    expect_rejected(cash3, "{\"tail\": 5}", &accuracy30, "scheduler.options.tail");
    expect_rejected(cash3, "{\"upper_bound\": \"paper\", \"tail\": 5}", &accuracy30, "scheduler.options.tail");
    expect_rejected(cash3, "{\"max_retries\": -1}", &accuracy30, "scheduler.options.max_retries");
    expect_rejected(cash3, "{\"max_retries\": 101}", &accuracy30, "scheduler.options.max_retries");
}

Test(rising_bandits, arm_parameter_default_and_errors)
{
    /* "scale" is top-level categorical too, but without children: algo is the default. */
    static const char *const with_scale =
        "[{\"name\": \"scale\", \"type\": \"categorical\", \"choices\": [true, false]},"
        " {\"name\": \"algo\", \"type\": \"categorical\", \"choices\": [\"svm\", \"knn\"]},"
        " {\"name\": \"C\", \"type\": \"float\", \"low\": 0.1, \"high\": 10, \"when\": {\"algo\": [\"svm\"]}}]";
    hn h;
    open_ok(&h, with_scale, "{\"inner\": \"random\"}", &accuracy30);
    json_t *d = hn_describe(&h);
    cr_expect_eq(json_array_size(json_object_get(d, "arms")), 2);
    cr_expect_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(d, "arms"), 1), "arm")), "knn");
    json_decref(d);
    int64_t id1 = pull(&h), id2 = pull(&h);
    cr_expect_str_eq(arm_name(&h, id1), "svm");
    cr_expect_str_eq(arm_name(&h, id2), "knn");
    /* knn's sub-space holds only the shared "scale"; svm's adds C. */
    cr_expect_eq(json_object_size(hn_get(&h, id2)->config), 2);
    cr_expect_eq(json_object_size(hn_get(&h, id1)->config), 3);
    hn_close(&h);
    /* scale as the arms, by option: each arm's sub-space is algo and its children. */
    open_ok(&h, with_scale, "{\"inner\": \"random\", \"arm_parameter\": \"scale\"}", &accuracy30);
    id1 = pull(&h);
    cr_expect(json_is_true(json_object_get(hn_get(&h, id1)->config, "scale")));
    hn_close(&h);

    static const char *const two_parents =
        "[{\"name\": \"algo\", \"type\": \"categorical\", \"choices\": [\"svm\", \"knn\"]},"
        " {\"name\": \"C\", \"type\": \"float\", \"low\": 0.1, \"high\": 10, \"when\": {\"algo\": [\"svm\"]}},"
        " {\"name\": \"prep\", \"type\": \"categorical\", \"choices\": [\"pca\", \"none\"]},"
        " {\"name\": \"dims\", \"type\": \"int\", \"low\": 2, \"high\": 9, \"when\": {\"prep\": [\"pca\"]}}]";
    expect_rejected(two_parents, NULL, &accuracy30, "scheduler.options.arm_parameter");
    open_ok(&h, two_parents, "{\"arm_parameter\": \"prep\", \"inner\": \"random\"}", &accuracy30);
    id1 = pull(&h);
    cr_expect_str_eq(json_string_value(json_object_get(hn_get(&h, id1)->config, "prep")), "pca");
    cr_expect(json_object_get(hn_get(&h, id1)->config, "dims") != NULL);
    hn_close(&h);

    static const char *const flat = "[{\"name\": \"algo\", \"type\": \"categorical\", \"choices\": [\"svm\", \"knn\"]},"
                                    " {\"name\": \"x\", \"type\": \"float\", \"low\": 0, \"high\": 1}]";
    expect_rejected(flat, NULL, &accuracy30, "scheduler.options.arm_parameter");
    expect_rejected(cash3, "{\"arm_parameter\": \"xa\"}", &accuracy30, "scheduler.options.arm_parameter");
    expect_rejected(cash3, "{\"arm_parameter\": \"nope\"}", &accuracy30, "scheduler.options.arm_parameter");
    expect_rejected(cash3, "{\"arm_parameter\": 3}", &accuracy30, "scheduler.options.arm_parameter");
    /* Named explicitly, a categorical without children is allowed: every arm proposes just its choice. */
    open_ok(&h, flat, "{\"arm_parameter\": \"algo\"}", &accuracy30);
    id1 = pull(&h);
    cr_expect_eq(json_object_size(hn_get(&h, id1)->config), 2, "algo and the shared x");
    hn_close(&h);
}

/* ------------------------------------------------------------- cost-aware */

/* Round r: a reports va[r] in 2 s, b reports vb[r] in b_seconds. */
static void timed_round(hn *h, double va, double vb, double b_seconds)
{
    int64_t a = pull(h), b = pull(h);
    hn_complete_seconds(h, a, -va, 2);
    hn_complete_seconds(h, b, -vb, b_seconds);
}

Test(rising_bandits, cost_aware_horizon_is_time_left_over_mean_trial_time)
{
    study st = {.maximize = 1, .T = 100, .seconds = 100};
    hn h;
    open_ok(&h, cash2, "{\"inner\": \"random\", \"window\": 1, \"cost_aware\": true}", &st);
    timed_round(&h, .5, .3, 10);
    timed_round(&h, .6, .35, 10);
    /* 24 s used, 76 left: b's horizon 7.6 pulls, u = .35 + .05 * 7.6 = .73 > l_a = .6. */
    json_t *d = hn_describe(&h);
    cr_expect_float_eq(num(arm_state(d, "b"), "upper"), .73, EPS);
    cr_expect_eq(num(arm_state(d, "a"), "upper"), 1.0, "a: .6 + .1 * 38");
    expect_alive(d, "b");
    json_decref(d);
    timed_round(&h, .62, .36, 10);
    /* 36 s used, 64 left: u_b = .36 + .01 * 6.4 = .424 <= .62. */
    d = hn_describe(&h);
    cr_expect_float_eq(num(arm_state(d, "b"), "upper"), .424, EPS);
    expect_eliminated(d, "b", 3, "a");
    json_decref(d);
    hn_close(&h);

    /* The authors' code halves the horizon: u_b = .35 + .05 * 3.8 = .54 <= .6 at round 2. */
    open_ok(&h, cash2, "{\"inner\": \"random\", \"window\": 1, \"cost_aware\": true, \"halve_horizon\": true}", &st);
    timed_round(&h, .5, .3, 10);
    timed_round(&h, .6, .35, 10);
    d = hn_describe(&h);
    cr_expect_float_eq(num(arm_state(d, "b"), "upper"), .54, EPS);
    expect_eliminated(d, "b", 2, "a");
    json_decref(d);
    hn_close(&h);

    /* Without reported seconds b's cost is unknown: never eliminated. */
    open_ok(&h, cash2, "{\"inner\": \"random\", \"window\": 1, \"cost_aware\": true}", &st);
    for (int r = 0; r < 4; r++)
        timed_round(&h, .9, .1, NAN);
    d = hn_describe(&h);
    expect_alive(d, "b");
    cr_expect_eq(num(arm_state(d, "b"), "upper"), 1.0);
    json_decref(d);
    hn_close(&h);
}

/* ------------------------------------------------------------- the GP per arm, replay */

/* Four arms: a and b with mixed sub-spaces, c with one float, d with none
 * (it proposes just {algo: d}); "scale" is shared by all. */
static const char *const cash4 =
    "[{\"name\": \"algo\", \"type\": \"categorical\", \"choices\": [\"a\", \"b\", \"c\", \"d\"]},"
    " {\"name\": \"scale\", \"type\": \"categorical\", \"choices\": [true, false]},"
    " {\"name\": \"xa\", \"type\": \"float\", \"low\": 0, \"high\": 1, \"when\": {\"algo\": [\"a\"]}},"
    " {\"name\": \"na\", \"type\": \"int\", \"low\": 1, \"high\": 50, \"log\": true, \"when\": {\"algo\": [\"a\"]}},"
    " {\"name\": \"xb\", \"type\": \"float\", \"low\": 0.001, \"high\": 10, \"log\": true,"
    "  \"when\": {\"algo\": [\"b\"]}},"
    " {\"name\": \"kb\", \"type\": \"categorical\", \"choices\": [\"rbf\", \"poly\"], \"when\": {\"algo\": [\"b\"]}},"
    " {\"name\": \"deg\", \"type\": \"int\", \"low\": 2, \"high\": 5, \"when\": {\"kb\": [\"poly\"]}},"
    " {\"name\": \"xc\", \"type\": \"float\", \"low\": -1, \"high\": 1, \"when\": {\"algo\": [\"c\"]}}]";

/* A loss in [0, 2] from the config (minimised, bounds [0, 2]). */
static double loss_of(const json_t *c)
{
    double l = 1.0;
    const char *algo = json_string_value(json_object_get(c, "algo"));
    if (strcmp(algo, "a") == 0)
        l = 0.3 + fabs(json_number_value(json_object_get(c, "xa")) - 0.3);
    else if (strcmp(algo, "b") == 0)
        l = 0.6 + 0.1 * fabs(log10(json_number_value(json_object_get(c, "xb"))));
    else if (strcmp(algo, "c") == 0)
        l = 0.8 + 0.2 * json_number_value(json_object_get(c, "xc")) * json_number_value(json_object_get(c, "xc"));
    return json_is_true(json_object_get(c, "scale")) ? l : l + 0.05;
}

/* Ends trial id by its position: some fail, expire or diverge. */
static void finish_mixed(hn *h, int64_t id)
{
    if (id % 7 == 3)
        hn_fail(h, id);
    else if (id % 11 == 5)
        hn_expire(h, id);
    else if (id % 13 == 6)
        hn_complete(h, id, INFINITY);
    else
        hn_complete(h, id, loss_of(hn_get(h, id)->config));
}

static const study loss60 = {.maximize = 0, .has_bounds = 1, .lo = 0, .hi = 2, .T = 60};

Test(rising_bandits, replay_in_the_rounds_gives_identical_next_pulls)
{
    hn h;
    open_ok(&h, cash4, "{\"n_init\": 2}", &loss60);
    /* Five rounds of four arms with two workers (window 7: nobody goes yet). */
    for (int round = 0; round < 5; round++) {
        int64_t ids[4];
        for (int k = 0; k < 4; k++)
            cr_assert_eq(hn_suggest(&h, k % 2, &ids[k]), BD_SUGGEST_TRIAL);
        for (int k = 3; k >= 0; k--)
            finish_mixed(&h, ids[k]);
    }
    int64_t id = pull(&h); /* round 6 under way: a's pull running */
    cr_expect_str_eq(arm_name(&h, id), "a");
    cr_expect_eq(json_object_size(hn_get(&h, 4)->config), 2, "d proposes only algo and the shared scale");
    bd_sched *r = hn_replay(&h);
    cr_expect(hn_same_next(&h, r, 3), "replay differs");
    RB->destroy(r);
    hn_close(&h);
}

Test(rising_bandits, replay_in_the_last_arm_phase_gives_identical_next_pulls)
{
    hn h;
    study st = loss60;
    open_ok(&h, cash4, "{\"n_init\": 2, \"window\": 1}", &st);
    /* a's losses are below .9, b's at least .6, c's .8 or more, d's 1 or
     * 1.05. Play until one arm is left (at most a few rounds). */
    for (int i = 0; i < 40; i++) {
        json_t *d = hn_describe(&h);
        int last = strcmp(json_string_value(json_object_get(d, "phase")), "last_arm") == 0;
        json_decref(d);
        if (last)
            break;
        int64_t id = pull(&h);
        hn_complete(&h, id, loss_of(hn_get(&h, id)->config));
    }
    json_t *d = hn_describe(&h);
    cr_assert_str_eq(json_string_value(json_object_get(d, "phase")), "last_arm");
    json_decref(d);
    int64_t ids[4];
    for (int w = 0; w < 4; w++) { /* four pulls running, hallucinated by the GP: spread out */
        cr_assert_eq(hn_suggest(&h, w, &ids[w]), BD_SUGGEST_TRIAL);
        cr_assert_str_eq(arm_name(&h, ids[w]), "a");
    }
    double min_dist = INFINITY;
    for (int i = 0; i < 4; i++)
        for (int j = i + 1; j < 4; j++) {
            const json_t *ci = hn_get(&h, ids[i])->config, *cj = hn_get(&h, ids[j])->config;
            double dx = json_number_value(json_object_get(ci, "xa")) - json_number_value(json_object_get(cj, "xa"));
            double dn = log((double)json_integer_value(json_object_get(ci, "na"))) -
                        log((double)json_integer_value(json_object_get(cj, "na")));
            double ds = json_equal(json_object_get(ci, "scale"), json_object_get(cj, "scale")) ? 0 : 1;
            min_dist = fmin(min_dist, sqrt(dx * dx + dn * dn / (log(50) * log(50)) + ds));
        }
    cr_expect_gt(min_dist, 0.01, "two running pulls got nearly the same point (%g apart)", min_dist);
    bd_sched *r = hn_replay(&h);
    cr_expect(hn_same_next(&h, r, 3), "replay differs");
    RB->destroy(r);
    hn_close(&h);
}

/* Outcomes by trial id: some fail, expire or diverge. */
static int outcome_mixed(const hn *h, const hn_trial *t, void *ud, double *loss)
{
    (void)h;
    (void)ud;
    if (t->id % 7 == 3)
        return HN_FAILED;
    if (t->id % 11 == 5)
        return HN_EXPIRED;
    *loss = t->id % 13 == 6 ? INFINITY : loss_of(t->config);
    return HN_COMPLETED;
}

/* The whole study through the harness with three workers in random
 * completion order and failures: never stuck, T trials, every config valid
 * (the harness checks each against the space). */
Test(rising_bandits, runs_to_T_with_workers_and_failures)
{
    hn h;
    open_ok(&h, cash4, "{\"n_init\": 2, \"window\": 2}", &loss60);
    h.outcome = outcome_mixed;
    cr_expect_eq(hn_run(&h, 3, HN_RANDOM, 0), HN_DONE);
    cr_expect_eq(h.n_trials, 60);
    cr_expect_gt(h.waits, 0, "three workers and a round barrier: someone waited");
    json_t *d = hn_describe(&h);
    cr_expect_str_eq(json_string_value(json_object_get(d, "phase")), "done");
    cr_expect(json_is_object(json_object_get(d, "incumbent")));
    json_decref(d);
    hn_close(&h);
}

/* ------------------------------------------------------------- the tail bound and retries */

/* b's best (.70, its 2nd pull) does not move in pulls 3 and 4: the paper's
 * w is 0 and b goes in round 4 (u = .70 <= l_a = .78), although its rewards
 * spread widely. The tail bound keeps it: sigma = (.7 - .4) / H(3) over
 * b's rewards .5 .7 .4 .45, u = min(.7 + (1 + 1/sqrt 3) sigma ln(30/4), 1)
 * = 1. c's rewards do not spread (sigma 0): it goes in round 3 either way. */
static const table spread = {{.60, .70, .75, .78, .80, .81, .82, .83},
                             {.50, .70, .40, .45, .42, .41, .43, .44},
                             {.30, .30, .30, .30, .30, .30, .30, .30}};

Test(rising_bandits, tail_bound_keeps_a_flat_arm_whose_rewards_spread)
{
    hn h;
    open_ok(&h, cash3, "{\"inner\": \"random\", \"window\": 2}", &accuracy30);
    play(&h, 3 + 3 + 3 + 2, spread);
    json_t *d = hn_describe(&h);
    cr_expect_str_eq(json_string_value(json_object_get(d, "upper_bound")), "paper");
    cr_expect_null(json_object_get(d, "tail"));
    expect_eliminated(d, "b", 4, "a");
    expect_eliminated(d, "c", 3, "a");
    json_decref(d);
    hn_close(&h);

    open_ok(&h, cash3, "{\"inner\": \"random\", \"window\": 2, \"upper_bound\": \"tail\"}", &accuracy30);
    play(&h, 3 + 3 + 3 + 2, spread);
    d = hn_describe(&h);
    cr_expect_str_eq(json_string_value(json_object_get(d, "upper_bound")), "tail");
    cr_expect_eq(num(d, "tail"), 5);
    json_t *b = arm_state(d, "b");
    expect_alive(d, "b");
    cr_expect_eq(num(b, "growth_rate"), 0.0);
    cr_expect_float_eq(num(b, "tail_scale"), .3 / (1 + 1.0 / 2 + 1.0 / 3), EPS);
    cr_expect_float_eq(num(b, "tail_scale"), 0.16363636363636364, EPS);
    cr_expect_eq(num(b, "upper"), 1.0);
    cr_expect_float_eq(num(b, "lower"), .70, EPS);
    expect_eliminated(d, "c", 3, "a");
    cr_expect_eq(num(arm_state(d, "c"), "tail_scale"), 0.0);
    cr_expect_float_eq(num(arm_state(d, "c"), "upper"), .30, EPS);
    json_decref(d);
    bd_sched *r = hn_replay(&h);
    cr_expect(hn_same_next(&h, r, 3), "replay differs");
    RB->destroy(r);
    hn_close(&h);
}

/* The tail bound, once b's rewards are all in and its horizon short:
 * T = 12, after round 4 b has n = 4 rewards and h = 8 pulls left:
 * u = .7 + (1 + 1/sqrt 3) sigma ln(12/4) = .983565, still above l_a. */
Test(rising_bandits, tail_bound_value_with_a_short_horizon)
{
    hn h;
    study st = {.maximize = 1, .T = 12};
    open_ok(&h, cash2, "{\"inner\": \"random\", \"window\": 2, \"upper_bound\": \"tail\", \"tail\": 3}", &st);
    static const table two = {{.60, .70, .75, .78, .80, .81, .82, .83}, {.50, .70, .40, .45, .42, .41, .43, .44}};
    play(&h, 8, two);
    json_t *d = hn_describe(&h);
    double sigma = .3 / (1 + 1.0 / 2 + 1.0 / 3);
    json_t *b = arm_state(d, "b");
    cr_expect_float_eq(num(b, "upper"), .7 + (1 + 1 / sqrt(3.0)) * sigma * log(12.0 / 4), EPS);
    cr_expect_float_eq(num(b, "upper"), 0.9835648636980193, 1e-12);
    expect_alive(d, "b");
    json_decref(d);
    hn_close(&h);
}

/* A clearly best arm whose first 8 attempts crash. Counted as pulls without
 * improvement (max_retries 0, the old rule), a's y is 0 for its first three
 * pulls and b eliminates it in round 3. With max_retries 2 each pull is
 * offered again twice: pulls 1 and 2 still end without a result (3
 * crashes each), pull 3 succeeds at its third attempt, y_a = [0, 0, .9],
 * and a eliminates b instead. */
static int crash_run(hn *h, int crashes, int n_results)
{
    int crashed = 0, results = 0;
    while (results < n_results) {
        int64_t id = pull(h);
        if (arm_name(h, id)[0] == 'a' && crashed < crashes) {
            crashed++;
            hn_fail(h, id);
            continue;
        }
        hn_complete(h, id, arm_name(h, id)[0] == 'a' ? -.9 : -.5);
        results++;
    }
    return crashed;
}

Test(rising_bandits, a_crashing_best_arm_is_retried_not_eliminated)
{
    study st = {.maximize = 1, .T = 40};
    hn h;
    open_ok(&h, cash2, "{\"inner\": \"random\", \"window\": 2}", &st);
    crash_run(&h, 8, 3); /* b's three results: a's 3 pulls crashed */
    json_t *d = hn_describe(&h);
    cr_expect_eq(num(d, "max_retries"), 0);
    expect_eliminated(d, "a", 3, "b");
    cr_expect_eq(num(arm_state(d, "a"), "retries"), 0);
    json_decref(d);
    hn_close(&h);

    open_ok(&h, cash2, "{\"inner\": \"random\", \"window\": 2, \"max_retries\": 2}", &st);
    cr_expect_eq(crash_run(&h, 8, 4), 8); /* a: 8 crashes then 1 result; b: 3 results */
    for (int64_t id = 1; id <= 3; id++) { /* the first pull of a is offered three times */
        cr_expect_str_eq(arm_name(&h, id), "a");
        cr_expect_eq(json_integer_value(json_object_get(hn_get(&h, id)->extra, "pull")), 1);
        json_t *retry = json_object_get(hn_get(&h, id)->extra, "retry");
        cr_expect(id == 1 ? retry == NULL : json_integer_value(retry) == id - 1, "trial %lld: retry", (long long)id);
    }
    cr_expect_str_eq(arm_name(&h, 4), "b", "the third failure counts: the round goes on to b");
    d = hn_describe(&h);
    cr_expect_eq(num(d, "max_retries"), 2);
    json_t *a = arm_state(d, "a");
    cr_expect_eq(num(a, "pulls"), 3);
    cr_expect_eq(num(a, "retries"), 6);
    cr_expect_float_eq(num(a, "best_reward"), .9, EPS);
    cr_expect_float_eq(num(a, "growth_rate"), .45, EPS);
    expect_alive(d, "a");
    expect_eliminated(d, "b", 3, "a");
    json_decref(d);
    bd_sched *r = hn_replay(&h);
    cr_expect(hn_same_next(&h, r, 3), "replay differs");
    RB->destroy(r);
    hn_close(&h);
}

/* Expired and stopped pulls are offered again too, and hold the round up. */
Test(rising_bandits, expired_and_stopped_pulls_are_offered_again)
{
    hn h;
    open_ok(&h, cash2, "{\"inner\": \"random\", \"window\": 2, \"max_retries\": 1}", &accuracy30);
    int64_t a1 = pull(&h), b1 = pull(&h);
    hn_expire(&h, a1);
    hn_end(&h, b1, BD_EV_STOPPED, NAN);
    int64_t a1b = pull(&h), b1b = pull(&h);
    cr_expect_str_eq(arm_name(&h, a1b), "a");
    cr_expect_str_eq(arm_name(&h, b1b), "b");
    json_t *d = hn_describe(&h);
    cr_expect_eq(num(d, "round"), 1, "round 1 waits for the pulls offered again");
    cr_expect_eq(num(arm_state(d, "a"), "pulls"), 1);
    json_decref(d);
    hn_complete(&h, a1b, -.6);
    hn_fail(&h, b1b); /* b's pull 1 is out of retries: it counts, with no improvement */
    d = hn_describe(&h);
    cr_expect_eq(num(d, "round"), 2);
    cr_expect_eq(num(arm_state(d, "b"), "best_reward"), 0.0);
    cr_expect_eq(num(arm_state(d, "b"), "retries"), 1);
    json_decref(d);
    hn_close(&h);
}

/* Allocation "ei": window + 1 pulls each, fewest first; then the arm whose
 * next pull is expected to raise the best most (bd_rising_tail_ei over its
 * rewards), no rounds; a result may eliminate at once, dated by the pulls
 * finished. The sequence below is worked out in the comments from the
 * table `three` (window 2, so k' = 2, 3, 4, 5 as a's rewards grow). */
Test(rising_bandits, ei_allocation_pulls_where_the_next_record_is_likeliest)
{
    hn h;
    open_ok(&h, cash3, "{\"inner\": \"random\", \"window\": 2, \"allocation\": \"ei\"}", &accuracy30);
    static const char *const first[] = {"a", "b", "c", "a", "b", "c", "a", "b", "c"};
    for (int i = 0; i < 9; i++) {
        int64_t id = pull(&h);
        cr_expect_str_eq(arm_name(&h, id), first[i], "pull %d", i + 1);
        cr_expect_null(json_object_get(hn_get(&h, id)->extra, "round"), "no rounds");
        hn_complete(&h, id, -value_of(&h, id, three));
    }
    json_t *d = hn_describe(&h);
    /* b is flat (.30) with a at .75 after pull 8: gone then, c not ready yet */
    expect_eliminated(d, "b", 8, "a");
    expect_alive(d, "c");
    cr_expect_str_eq(json_string_value(json_object_get(d, "phase")), "ei");
    cr_expect_str_eq(json_string_value(json_object_get(d, "allocation")), "ei");
    json_decref(d);
    /* EI of a vs c (Y = a's best): .0569 vs .0317, .0387 vs .0266, .0288 vs
     * .0236, .02218 vs .02229 (c: its record .65 is .16 behind but spread
     * like a's), then c's flat .65 shrinks its spread: a, a. */
    static const char *const next[] = {"a", "a", "a", "c", "a", "a"};
    for (int i = 0; i < 6; i++) {
        int64_t id = pull(&h);
        cr_expect_str_eq(arm_name(&h, id), next[i], "pull %d", i + 10);
        hn_complete(&h, id, -value_of(&h, id, three));
    }
    d = hn_describe(&h);
    cr_expect_eq(num(arm_state(d, "a"), "pulls"), 8);
    cr_expect_eq(num(arm_state(d, "c"), "pulls"), 4);
    json_decref(d);
    hn_close(&h);
}

/* The arm a Thompson suggestion picks, redrawn from describe() d: one
 * bd_rising_tail_sample per surviving arm, in arm order, from the
 * suggestion's stream (the harness seeds it from (study seed, trials so
 * far)), over the arm's l, u and tail scale, n its rewards, h the study's
 * pulls left, divided by the surviving arms when share. */
static const char *thompson_choice(const hn *h, json_t *d, int share)
{
    bd_rng rng;
    bd_rng_seed(&rng, h->def.seed, (uint64_t)h->n_trials);
    double left = num(d, "T") - num(d, "pulls"), best = -1, alive = 0;
    const char *want = NULL;
    for (const char *const *k = (const char *const[]){"a", "b", "c", NULL}; *k; k++)
        alive += json_is_null(json_object_get(arm_state(d, *k), "eliminated_round"));
    for (const char *const *k = (const char *const[]){"a", "b", "c", NULL}; *k; k++) {
        json_t *a = arm_state(d, *k);
        if (!json_is_null(json_object_get(a, "eliminated_round")))
            continue;
        double v = bd_rising_tail_sample(num(a, "lower"), num(a, "upper"), num(a, "tail_scale"),
                                         (size_t)num(a, "pulls"), share ? left / alive : left, bd_rng_uniform(&rng));
        if (!want || v > best) {
            want = *k;
            best = v;
        }
    }
    return want;
}

/* Allocation "thompson": window + 1 pulls each, fewest first, no rounds;
 * then each pull goes to the largest draw (thompson_choice), with the
 * draw horizon of `draw` ("left" or "share"). The test redraws the draws
 * and checks every choice, and counts the pulls where the other horizon
 * would have chosen another arm. Returns that count; *n_b: b's pulls. */
static int check_thompson(const char *draw, int share, const table t, int *n_b_out)
{
    hn h;
    study st = {.maximize = 1, .T = 40};
    char opts[160];
    snprintf(opts, sizeof opts, "{\"inner\": \"random\", \"window\": 2, \"allocation\": \"thompson\"%s%s%s}",
             draw ? ", \"draw_horizon\": \"" : "", draw ? draw : "", draw ? "\"" : "");
    open_ok(&h, cash3, opts, &st);
    static const char *const first[] = {"a", "b", "c", "a", "b", "c", "a", "b", "c"};
    for (int i = 0; i < 9; i++) {
        int64_t id = pull(&h);
        cr_expect_str_eq(arm_name(&h, id), first[i], "pull %d", i + 1);
        cr_expect_null(json_object_get(hn_get(&h, id)->extra, "round"), "no rounds");
        hn_complete(&h, id, -value_of(&h, id, t));
    }
    json_t *d = hn_describe(&h);
    cr_expect_str_eq(json_string_value(json_object_get(d, "allocation")), "thompson");
    cr_expect_str_eq(json_string_value(json_object_get(d, "phase")), "thompson");
    cr_expect_str_eq(json_string_value(json_object_get(d, "draw_horizon")), share ? "share" : "left");
    expect_eliminated(d, "c", 9, "a"); /* flat .30: sigma 0, u = l = .30 < .75 */
    json_decref(d);
    int n_a = 0, n_b = 0, differ = 0;
    for (int i = 9; i < 40; i++) {
        d = hn_describe(&h);
        const char *want = thompson_choice(&h, d, share), *other = thompson_choice(&h, d, !share);
        differ += strcmp(want, other) != 0;
        json_decref(d);
        int64_t id = pull(&h);
        cr_expect_str_eq(arm_name(&h, id), want, "pull %d", i + 1);
        n_a += arm_name(&h, id)[0] == 'a';
        n_b += arm_name(&h, id)[0] == 'b';
        hn_complete(&h, id, -value_of(&h, id, t));
    }
    cr_expect_gt(n_a, n_b, "a leads");
    cr_expect_eq(n_a + n_b, 31);
    bd_sched *r = hn_replay(&h);
    cr_expect(hn_same_next(&h, r, 1), "replay differs");
    RB->destroy(r);
    hn_close(&h);
    *n_b_out = n_b;
    return differ;
}

/* a rises slowly to .755; b's record (.74, its 4th pull) is close to it
 * and b's rewards spread far wider, so the draws' horizon matters. */
static const table near_record = {{.70, .71, .72, .73, .74, .745, .75, .755},
                                  {.50, .60, .30, .74, .35, .40, .45, .50},
                                  {.30, .30, .30, .30, .30, .30, .30, .30}};

/* Without draw_horizon (every study stored before it): h the pulls left. */
Test(rising_bandits, thompson_allocation_pulls_the_arm_of_the_largest_draw)
{
    int n_b;
    check_thompson(NULL, 0, spread, &n_b);
    cr_expect_gt(n_b, 0, "a rises to .83 and leads; b (best .70, spread) keeps some pulls");
    check_thompson("left", 0, spread, &n_b);
    check_thompson("left", 0, near_record, &n_b);
}

/* draw_horizon "share" (new studies): h the pulls left over the surviving
 * arms; on this study it picks another arm than "left" would at 4 of the
 * 31 pulls after the first 9. */
Test(rising_bandits, thompson_draw_horizon_share_divides_the_pulls_left_by_the_arms)
{
    int n_b;
    cr_expect_eq(check_thompson("share", 1, near_record, &n_b), 4, "pulls where the two horizons choose differently");
}

/* Inner "tpe": an arm's proposal is exactly proposer.h's TPE (Optuna 3.1's
 * defaults, no cost model) fitted on the arm's own results over its
 * sub-space, with the suggestion's stream; checked once the arm has more
 * results than TPE's 10 random startup pulls. */
Test(rising_bandits, tpe_inner_is_the_proposer_on_the_arms_sub_space)
{
    hn h;
    study st = {.maximize = 1, .T = 60};
    open_ok(&h, cash2, "{\"inner\": \"tpe\", \"window\": 30}", &st);
    bd_space *sub = NULL;
    bd_err err;
    json_t *choice = json_string("a");
    cr_assert_eq(bd_space_subspace(h.space, "algo", choice, &sub, &err), 0);
    bd_study_def d = h.def;
    d.space = sub;
    json_t *o = json_pack("{s:s, s:b}", "sampler", "tpe", "cost_aware", 0);
    d.options = o;
    bd_proposer *p = NULL;
    cr_assert_eq(bd_proposer_create(&d, "tpe", 0, &p, &err), 0);
    int checked = 0;
    for (int i = 0; i < 30; i++) {
        bd_rng rng;
        bd_rng_seed(&rng, h.def.seed, (uint64_t)h.n_trials);
        json_t *want = bd_proposer_propose(p, &rng);
        int64_t id = pull(&h);
        hn_trial *t = hn_get(&h, id);
        json_t *x = json_object_get(t->config, arm_name(&h, id)[0] == 'a' ? "xa" : "xb");
        double loss = (json_number_value(x) - .3) * (json_number_value(x) - .3);
        if (arm_name(&h, id)[0] == 'a') {
            json_t *got = json_copy(t->config);
            json_object_del(got, "algo");
            cr_expect(json_equal(got, want), "pull %d of a is not the proposer's", i / 2 + 1);
            checked += i / 2 >= 10; /* past TPE's startup: a fitted proposal */
            bd_proposer_add(p, t->config_id, got, t->budget, -(1 - loss), NAN, NAN);
            json_decref(got);
        }
        json_decref(want);
        hn_complete(&h, id, -(1 - loss));
    }
    cr_expect_eq(checked, 5);
    json_t *desc = hn_describe(&h);
    cr_expect_str_eq(json_string_value(json_object_get(desc, "inner")), "tpe");
    json_decref(desc);
    bd_sched *r = hn_replay(&h);
    cr_expect(hn_same_next(&h, r, 3), "replay differs");
    RB->destroy(r);
    bd_proposer_free(p);
    json_decref(o);
    json_decref(choice);
    bd_space_free(sub);
    hn_close(&h);
}
