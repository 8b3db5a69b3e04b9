/* test_hyperband.c: Hyperband (server/sched/hyperband.c) driven through
 * tests/unit/sched_harness.h. Bracket tables come from the JMLR 2018 paper
 * (Table 1) and from tests/fixtures/hyperband/<case>/. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <time.h>

#include "sched_harness.h"
#include "server/sched/rung.h"

extern const struct bd_sched_ops bd_sched_hyperband;

#define HB (&bd_sched_hyperband)

static void open_ok(hn *h, const char *options, double r_min, double r_max, int integer)
{
    int rc = hn_open(h, HB, options, r_min, r_max, integer);
    cr_assert_eq(rc, 0, "create failed: %s (%s)", h->err.message, h->err.field);
}

/* Every trial of an already-known config resumes from that config's latest
 * completed trial (the one with the largest budget among earlier trials);
 * a retry keeps the resume_from of the attempt it repeats. */
static void check_resume_chain(const hn *h)
{
    int64_t *last = calloc(h->n_trials + 1, sizeof *last); /* config_id -> latest completed trial */
    for (size_t i = 0; i < h->n_trials; i++) {
        const hn_trial *t = &h->trials[i];
        if (t->config_id == t->id) {
            cr_assert_eq(t->resume_from, 0, "new config %lld resumes", (long long)t->id);
        } else {
            cr_assert_eq(t->resume_from, last[t->config_id], "trial %lld resumes from %lld, expected %lld",
                         (long long)t->id, (long long)t->resume_from, (long long)last[t->config_id]);
            if (t->resume_from) {
                const hn_trial *r = &h->trials[t->resume_from - 1];
                cr_assert_eq(r->config_id, t->config_id);
                cr_assert(r->budget < t->budget, "trial %lld: budget %g not above the resumed %g", (long long)t->id,
                          t->budget, r->budget);
            }
        }
        if (t->state == HN_COMPLETED && (!last[t->config_id] || h->trials[last[t->config_id] - 1].budget < t->budget))
            last[t->config_id] = t->id;
    }
    free(last);
}

static long long total_count(const hn *h, int bracket)
{
    long long n = 0;
    for (size_t i = 0; i < h->n_trials; i++)
        n += h->trials[i].bracket == bracket;
    return n;
}

/* ------------------------------------------------------------ the tables */

Test(hyperband, bracket_table_r81_eta3)
{
    static const struct {
        int s;
        double r;
        long long n;
    } table[] = {
        {4, 1, 81}, {4, 3, 27}, {4, 9, 9},  {4, 27, 3}, {4, 81, 1}, {3, 3, 34}, {3, 9, 11}, {3, 27, 3},
        {3, 81, 1}, {2, 9, 15}, {2, 27, 5}, {2, 81, 1}, {1, 27, 8}, {1, 81, 2}, {0, 81, 5},
    };
    hn h;
    open_ok(&h, "{\"eta\": 3}", 1, 81, 1);
    cr_assert_eq(hn_run(&h, 1, HN_FIFO, 0), HN_DONE);
    long long sum = 0;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        cr_expect_eq(hn_count(&h, -1, table[i].s, table[i].r), table[i].n, "s=%d r=%g: %lld trials, expected %lld",
                     table[i].s, table[i].r, hn_count(&h, -1, table[i].s, table[i].r), table[i].n);
        sum += table[i].n;
    }
    cr_assert_eq((long long)h.n_trials, sum);
    check_resume_chain(&h);
    hn_close(&h);
}

static json_t *load_json(const char *dir, const char *name)
{
    char path[1024];
    json_error_t jerr;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    json_t *j = json_load_file(path, 0, &jerr);
    cr_assert(j, "%s: %s", path, jerr.text);
    return j;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs one fixture case with the given workers and order and checks its table. */
static void run_case(const char *dir, int workers, int order)
{
    json_t *study = load_json(dir, "study.json"), *expected = load_json(dir, "expected.json");
    json_t *res = json_object_get(study, "resource");
    char *options = json_dumps(json_object_get(study, "options"), JSON_COMPACT);
    hn h;
    open_ok(&h, options, json_number_value(json_object_get(res, "min")), json_number_value(json_object_get(res, "max")),
            json_is_true(json_object_get(res, "integer")));
    cr_assert_eq(hn_run(&h, workers, order, 100000), HN_DONE, "%s did not finish", dir);
    size_t i;
    json_t *row;
    json_array_foreach(json_object_get(expected, "table"), i, row)
    {
        int with_it = json_array_size(row) == 4;
        long long it = with_it ? json_integer_value(json_array_get(row, 0)) : -1;
        int s = (int)json_integer_value(json_array_get(row, with_it));
        double r = json_number_value(json_array_get(row, with_it + 1));
        long long n = json_integer_value(json_array_get(row, with_it + 2));
        long long got = hn_count(&h, it, s, r);
        cr_expect_eq(got, n, "%s (workers %d): iteration %lld s=%d budget %.17g: %lld trials, expected %lld", dir,
                     workers, it, s, r, got, n);
    }
    cr_expect_eq((long long)h.n_trials, json_integer_value(json_object_get(expected, "total")), "%s: total %zu", dir,
                 h.n_trials);
    check_resume_chain(&h);
    hn_close(&h);
    free(options);
    json_decref(study);
    json_decref(expected);
}

Test(hyperband, golden_tables_from_fixtures)
{
    const char *root = getenv("BD_FIXTURES") ? getenv("BD_FIXTURES") : "tests/fixtures";
    char base[1024];
    snprintf(base, sizeof base, "%s/hyperband", root);
    DIR *d = opendir(base);
    cr_assert(d, "no fixtures at %s (set BD_FIXTURES)", base);
    char *names[256];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 256)
        if (e->d_name[0] != '.')
            names[n++] = strdup(e->d_name);
    closedir(d);
    qsort(names, n, sizeof *names, cmp_str);
    cr_assert_geq(n, 10, "expected the hyperband fixture cases, found %zu", n);
    for (size_t i = 0; i < n; i++) {
        char dir[2048];
        snprintf(dir, sizeof dir, "%s/%s", base, names[i]);
        run_case(dir, 1, HN_FIFO);
        run_case(dir, 7, HN_RANDOM);
        free(names[i]);
    }
}

Test(hyperband, first_round_sizes_r243)
{
    static const long long n0[] = {243, 98, 41, 18, 9, 6};
    hn h;
    open_ok(&h, "{}", 1, 243, 1);
    json_t *d = hn_describe(&h);
    cr_assert_eq(json_integer_value(json_object_get(d, "s_max")), 5);
    json_t *plan = json_object_get(d, "plan");
    cr_assert_eq(json_array_size(plan), 6);
    for (size_t i = 0; i < 6; i++) {
        json_t *b = json_array_get(plan, i);
        cr_expect_eq(json_integer_value(json_object_get(b, "bracket")), 5 - (long long)i);
        cr_expect_eq(json_integer_value(json_array_get(json_object_get(b, "n"), 0)), n0[i]);
        cr_expect_eq(json_number_value(json_array_get(json_object_get(b, "budget"), 0)), 243.0 / bd_pow(3, 5 - (int)i));
    }
    json_decref(d);
    hn_close(&h);
}

Test(hyperband, s_max_is_computed_with_integers)
{
    cr_expect_eq(bd_budget_levels(1, 243, 3, 63), 5);
    cr_expect_eq(bd_budget_levels(1, 242, 3, 63), 4);
    cr_expect_eq(bd_budget_levels(1, 81, 3, 63), 4);
    cr_expect_eq(bd_budget_levels(1, 1000, 10, 63), 3); /* log(1000)/log(10) = 2.9999999999999996 */
    cr_expect_eq(bd_budget_levels(1, 1024, 2, 63), 10);
    cr_expect_eq(bd_budget_levels(1, 625, 5, 63), 4);
    cr_expect_eq(bd_budget_levels(1, 3486784401.0, 3, 63), 20);
    cr_expect_eq(bd_budget_levels(2, 162, 3, 63), 4);
    cr_expect_eq(bd_budget_levels(1, 1, 3, 63), 0);
    cr_expect_eq(bd_budget_levels(0.1, 8.1, 3, 63), 4); /* real bounds: 0.1 * 81 = 8.100000000000001 */
    cr_expect_eq(bd_budget_levels(1, 100, 3, 63), 4);
    for (int s = 1; s <= 15; s++) {
        hn h;
        char opts[64];
        snprintf(opts, sizeof opts, "{\"eta\": 3}");
        open_ok(&h, opts, 1, bd_pow(3, s), 1);
        json_t *d = hn_describe(&h);
        cr_expect_eq(json_integer_value(json_object_get(d, "s_max")), s, "R = 3^%d", s);
        json_decref(d);
        hn_close(&h);
    }
}

Test(hyperband, integer_rounding_floors_and_stays_in_range)
{
    /* r_i = floor(R eta^(i-s)), never 0, never above R */
    cr_expect_eq(bd_budget_round(100.0 / 81, 1, 100, 1), 1);
    cr_expect_eq(bd_budget_round(100.0 / 27, 1, 100, 1), 3);
    cr_expect_eq(bd_budget_round(81.0 / 27 * 9, 1, 81, 1), 27);
    cr_expect_eq(bd_budget_round(0.3, 1, 100, 1), 1);
    cr_expect_eq(bd_budget_round(0.3, 0.5, 100, 1), 1);
    cr_expect_eq(bd_budget_round(250, 1, 100, 1), 100);
    cr_expect_eq(bd_budget_round(1.5, 1, 100, 0), 1.5);
    hn h;
    open_ok(&h, "{}", 2, 100, 1); /* r_min 2: R/r_min = 50, s_max = 3 */
    cr_assert_eq(hn_run(&h, 3, HN_RANDOM, 0), HN_DONE);
    for (size_t i = 0; i < h.n_trials; i++) {
        double b = h.trials[i].budget;
        cr_assert(b == floor(b) && b >= 2 && b <= 100, "budget %g", b);
    }
    cr_expect_eq(hn_count(&h, -1, 3, 3), 27); /* floor(100/27) */
    cr_expect_eq(hn_count(&h, -1, 3, 11), 9); /* floor(100/9) */
    cr_expect_eq(hn_count(&h, -1, 3, 33), 3);
    cr_expect_eq(hn_count(&h, -1, 3, 100), 1);
    hn_close(&h);
}

Test(hyperband, real_budgets_are_not_rounded)
{
    hn h;
    open_ok(&h, "{}", 1, 100, 0);
    cr_assert_eq(hn_run(&h, 1, HN_FIFO, 0), HN_DONE);
    cr_expect_eq(hn_count(&h, -1, 4, 100.0 / 81), 81);
    cr_expect_eq(hn_count(&h, -1, 4, 100.0 / 27), 27);
    cr_expect_eq(hn_count(&h, -1, 3, 100.0 / 27), 34);
    cr_expect_eq(hn_count(&h, -1, 0, 100), 5);
    hn_close(&h);
}

Test(hyperband, n_max_and_s_min_restrict_brackets)
{
    hn h;
    open_ok(&h, "{\"n_max\": 30}", 1, 81, 1);
    cr_assert_eq(hn_run(&h, 1, HN_FIFO, 0), HN_DONE);
    cr_expect_eq(total_count(&h, 4), 0);
    cr_expect_eq(hn_count(&h, -1, 3, 3), 27);
    cr_expect_eq(hn_count(&h, -1, 0, 81), 4);
    hn_close(&h);

    open_ok(&h, "{\"s_min\": 3}", 1, 81, 1);
    cr_assert_eq(hn_run(&h, 1, HN_FIFO, 0), HN_DONE);
    cr_expect_eq(total_count(&h, 4), 121);
    cr_expect_eq(total_count(&h, 3), 49);
    cr_expect_eq(total_count(&h, 2) + total_count(&h, 1) + total_count(&h, 0), 0);
    hn_close(&h);
}

Test(hyperband, exploratory_only_runs_the_most_exploratory_bracket)
{
    hn h;
    open_ok(&h, "{\"exploratory_only\": true, \"iterations\": 2}", 1, 81, 1);
    cr_assert_eq(hn_run(&h, 2, HN_RANDOM, 0), HN_DONE);
    cr_expect_eq((long long)h.n_trials, 242);
    cr_expect_eq(hn_count(&h, 1, 4, 1), 81);
    cr_expect_eq(hn_count(&h, 2, 4, 81), 1);
    hn_close(&h);
}

Test(hyperband, promotions_resume_from_the_same_configs_previous_trial)
{
    hn h;
    open_ok(&h, "{}", 1, 81, 1);
    cr_assert_eq(hn_run(&h, 5, HN_LIFO, 0), HN_DONE);
    check_resume_chain(&h);
    long long promotions = 0;
    for (size_t i = 0; i < h.n_trials; i++) {
        const hn_trial *t = &h.trials[i];
        if (t->rung > 0) {
            promotions++;
            const hn_trial *prev = &h.trials[t->resume_from - 1];
            cr_assert_eq(prev->config_id, t->config_id);
            cr_assert_eq(prev->rung, t->rung - 1);
            cr_assert_eq(prev->bracket, t->bracket);
            cr_assert(json_equal(prev->config, t->config));
        } else {
            cr_assert_eq(t->config_id, t->id);
        }
    }
    cr_expect_eq(promotions, 206 - (81 + 34 + 15 + 8 + 5));
    hn_close(&h);
}

/* Rung-0 trials of bracket s among the first n trials. */
static long long rung0_before(const hn *h, int s, long long n)
{
    long long c = 0;
    for (long long i = 0; i < n; i++)
        c += h->trials[i].bracket == s && h->trials[i].rung == 0;
    return c;
}

Test(hyperband, parallel_workers_never_wait_while_a_bracket_has_work)
{
    static const long long n0[] = {5, 8, 15, 34, 81};
    for (int workers = 2; workers <= 64; workers *= 2) {
        hn h;
        open_ok(&h, "{}", 1, 81, 1);
        cr_assert_eq(hn_run(&h, workers, HN_RANDOM, 0), HN_DONE);
        cr_expect_eq((long long)h.n_trials, 206);
        if (h.first_wait_at >= 0)
            for (int s = 0; s <= 4; s++)
                cr_expect_eq(rung0_before(&h, s, h.first_wait_at), n0[s],
                             "%d workers: WAIT after %lld trials while bracket %d had not started all its configs",
                             workers, h.first_wait_at, s);
        hn_close(&h);
    }
}

Test(hyperband, a_straggler_does_not_block_other_brackets)
{
    hn h;
    int64_t straggler, id;
    int rc;
    open_ok(&h, "{}", 1, 81, 1);
    cr_assert_eq(hn_suggest(&h, 0, &straggler), BD_SUGGEST_TRIAL);
    cr_assert_eq(hn_get(&h, straggler)->bracket, 4);
    while ((rc = hn_suggest(&h, 1, &id)) == BD_SUGGEST_TRIAL)
        hn_finish(&h, id);
    cr_assert_eq(rc, BD_SUGGEST_WAIT);
    /* everything except bracket 4's rung 1+ ran while the straggler held rung 0 */
    cr_expect_eq(total_count(&h, 4), 81);
    cr_expect_eq(total_count(&h, 3), 49);
    cr_expect_eq(total_count(&h, 2), 21);
    cr_expect_eq(total_count(&h, 1), 10);
    cr_expect_eq(total_count(&h, 0), 5);
    hn_finish(&h, straggler);
    cr_assert_eq(hn_run(&h, 1, HN_FIFO, 0), HN_DONE);
    cr_expect_eq((long long)h.n_trials, 206);
    hn_close(&h);
}

/* Outcome: config 1 fails every time; others complete with the default loss. */
static int fail_config_1(const hn *h, const hn_trial *t, void *ud, double *loss)
{
    (void)ud;
    if (t->config_id == 1)
        return HN_FAILED;
    return hn_loss_default(h, t, NULL, loss);
}

Test(hyperband, failed_trial_is_offered_again_then_counts_as_worst)
{
    hn h;
    open_ok(&h, "{}", 1, 9, 1); /* s=2: 9@1 3@3 1@9; s=1: 5@3 1@9; s=0: 3@9 */
    h.outcome = fail_config_1;
    cr_assert_eq(hn_run(&h, 1, HN_FIFO, 0), HN_DONE);
    long long attempts = 0;
    for (size_t i = 0; i < h.n_trials; i++)
        if (h.trials[i].config_id == 1) {
            attempts++;
            cr_expect_eq(h.trials[i].budget, 1);
            cr_expect_eq(h.trials[i].resume_from, 0);
            cr_expect_eq(h.trials[i].state, HN_FAILED);
        }
    cr_expect_eq(attempts, 3, "1 + max_retries (2) attempts, got %lld", attempts);
    cr_expect_eq(h.trials[1].config_id, 1, "the retry comes first");
    cr_expect_eq((long long)h.n_trials, 9 + 3 + 1 + 5 + 1 + 3 + 2);
    json_t *d = hn_describe(&h);
    json_t *rung0 = json_array_get(json_object_get(json_array_get(json_object_get(d, "brackets"), 0), "rungs"), 0);
    cr_expect_eq(json_integer_value(json_object_get(rung0, "failed")), 3);
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(rung0, "survivors"), i, v) cr_expect_neq(json_integer_value(v), 1);
    json_decref(d);
    hn_close(&h);
}

Test(hyperband, max_retries_zero_counts_the_first_failure)
{
    hn h;
    open_ok(&h, "{\"max_retries\": 0}", 1, 9, 1);
    h.outcome = fail_config_1;
    cr_assert_eq(hn_run(&h, 2, HN_FIFO, 0), HN_DONE);
    cr_expect_eq((long long)h.n_trials, 9 + 3 + 1 + 5 + 1 + 3);
    hn_close(&h);
}

/* Outcome: the first rung-1 attempt of each config expires once. */
static int expire_first_promotion(const hn *h, const hn_trial *t, void *ud, double *loss)
{
    int *expired = ud;
    if (t->rung == 1 && t->bracket == 2 && !*expired) {
        *expired = (int)t->id;
        return HN_EXPIRED;
    }
    return hn_loss_default(h, t, NULL, loss);
}

Test(hyperband, expired_trial_is_offered_again_with_the_same_resume_from)
{
    hn h;
    int expired = 0;
    open_ok(&h, "{\"max_retries\": 1}", 1, 9, 1);
    h.outcome = expire_first_promotion;
    h.ud = &expired;
    cr_assert_eq(hn_run(&h, 3, HN_FIFO, 0), HN_DONE);
    cr_assert(expired);
    const hn_trial *e = hn_get(&h, expired);
    long long again = 0;
    for (size_t i = (size_t)expired; i < h.n_trials; i++) {
        const hn_trial *t = &h.trials[i];
        if (t->config_id == e->config_id && t->budget == e->budget) {
            again++;
            cr_expect_eq(t->resume_from, e->resume_from);
            cr_expect_eq(t->rung, 1);
            cr_expect_eq(t->state, HN_COMPLETED);
        }
    }
    cr_expect_eq(again, 1);
    cr_expect_eq((long long)h.n_trials, 9 + 3 + 1 + 5 + 1 + 3 + 1);
    check_resume_chain(&h);
    hn_close(&h);
}

/* Outcome: configs 2..8 of bracket 2 diverge; the others complete. */
static int diverge_most(const hn *h, const hn_trial *t, void *ud, double *loss)
{
    (void)ud;
    hn_loss_default(h, t, NULL, loss);
    if (t->config_id >= 2 && t->config_id <= 8)
        *loss = INFINITY;
    return HN_COMPLETED;
}

Test(hyperband, diverged_results_rank_last_ties_to_lower_config_id)
{
    hn h;
    open_ok(&h, "{}", 1, 9, 1);
    h.outcome = diverge_most;
    cr_assert_eq(hn_run(&h, 1, HN_FIFO, 0), HN_DONE);
    json_t *d = hn_describe(&h);
    json_t *rung0 = json_array_get(json_object_get(json_array_get(json_object_get(d, "brackets"), 0), "rungs"), 0);
    json_t *surv = json_object_get(rung0, "survivors");
    cr_assert_eq(json_array_size(surv), 3);
    /* configs 1 and 9 are finite (order by loss), then the lowest diverged id, 2 */
    long long a = json_integer_value(json_array_get(surv, 0)), b = json_integer_value(json_array_get(surv, 1));
    cr_expect((a == 1 && b == 9) || (a == 9 && b == 1), "survivors %lld %lld", a, b);
    cr_expect_eq(json_integer_value(json_array_get(surv, 2)), 2);
    json_decref(d);
    hn_close(&h);
}

/* Outcome for the replay test: some failures and expiries, some divergence. */
static int mixed_outcomes(const hn *h, const hn_trial *t, void *ud, double *loss)
{
    (void)ud;
    if (t->id % 13 == 0)
        return HN_FAILED;
    if (t->id % 17 == 0)
        return HN_EXPIRED;
    hn_loss_default(h, t, NULL, loss);
    if (t->id % 19 == 0)
        *loss = INFINITY;
    return HN_COMPLETED;
}

Test(hyperband, replay_gives_identical_next_suggestions)
{
    static const char *const options[] = {"{}", "{\"iterations\": 0}", "{\"mode\": \"infinite\"}", "{\"s_min\": 1}"};
    for (size_t k = 0; k < sizeof options / sizeof options[0]; k++)
        for (long long stop = 37; stop <= 400; stop += 121) {
            hn h;
            open_ok(&h, options[k], 1, 81, 1);
            h.outcome = mixed_outcomes;
            hn_run(&h, 6, HN_RANDOM, stop);
            bd_sched *r = hn_replay(&h);
            cr_expect(hn_same_next(&h, r, 40), "%s: replay after %lld trials differs", options[k], stop);
            HB->destroy(r);
            hn_close(&h);
        }
}

Test(hyperband, infinite_horizon_first_brackets)
{
    hn h;
    open_ok(&h, "{\"mode\": \"infinite\", \"iterations\": 5}", 1, 1e6, 1);
    cr_assert_eq(hn_run(&h, 1, HN_FIFO, 0), HN_DONE);
    /* new configs arrive bracket after bracket in the order of Figure 9 */
    static const int order[][2] = {{1, 1}, {2, 1}, {3, 1}, {3, 2}, {4, 1}, {4, 2}, {5, 1}, {5, 2}, {5, 3}};
    size_t next = 0;
    long long last_it = 0;
    int last_l = 0;
    for (size_t i = 0; i < h.n_trials; i++) {
        const hn_trial *t = &h.trials[i];
        if (t->rung != 0 || (t->iteration == last_it && t->bracket == last_l))
            continue;
        cr_assert_lt(next, 9);
        cr_expect_eq(t->iteration, order[next][0]);
        cr_expect_eq(t->bracket, order[next][1]);
        last_it = t->iteration;
        last_l = t->bracket;
        next++;
    }
    cr_expect_eq(next, 9);
    cr_expect_eq(hn_count(&h, 5, 3, 1), 8);
    cr_expect_eq(hn_count(&h, 5, 3, 3), 4);
    cr_expect_eq(hn_count(&h, 5, 3, 8), 2);
    check_resume_chain(&h);
    hn_close(&h);
}

Test(hyperband, infinite_horizon_caps_budgets_at_resource_max)
{
    hn h;
    open_ok(&h, "{\"mode\": \"infinite\", \"iterations\": 8}", 1, 10, 1);
    cr_assert_eq(hn_run(&h, 3, HN_RANDOM, 0), HN_DONE);
    for (size_t i = 0; i < h.n_trials; i++)
        cr_assert_leq(h.trials[i].budget, 10);
    cr_expect_eq(hn_count(&h, 5, 1, 10), 2); /* 2^5 / 2 = 16, capped */
    check_resume_chain(&h);
    hn_close(&h);
}

Test(hyperband, iterations_zero_repeats_forever)
{
    hn h;
    open_ok(&h, "{\"iterations\": 0}", 1, 9, 1);
    cr_assert_eq(hn_run(&h, 2, HN_FIFO, 500), HN_LIMIT);
    long long max_it = 0;
    for (size_t i = 0; i < h.n_trials; i++)
        max_it = h.trials[i].iteration > max_it ? h.trials[i].iteration : max_it;
    cr_expect_geq(max_it, 500 / 22, "iteration label reached %lld", max_it);
    cr_expect_eq(hn_count(&h, 3, 2, 1), 9);
    hn_close(&h);
}

/* R = 9, eta = 3: brackets s = 2, 1, 0 plan 21, 21 and 27 epochs when
 * promotions resume (9x1 + 3x2 + 1x6; 5x3 + 1x6; 3x9), 69 per pass. A budget
 * of 150 fits two passes (138) but not the next bracket (159). */
Test(hyperband, total_budget_repeats_the_loop_until_spent)
{
    hn h;
    open_ok(&h, "{\"total_budget\": 150}", 1, 9, 1);
    cr_assert_eq(hn_run(&h, 3, HN_RANDOM, 1000), HN_DONE, "the budget must end the study");
    cr_expect_eq(h.n_trials, 44, "two passes of 22 trials, got %zu", h.n_trials);
    double spend = 0;
    long long max_it = 0;
    for (size_t i = 0; i < h.n_trials; i++) {
        const hn_trial *t = &h.trials[i];
        spend += t->budget - (t->resume_from ? h.trials[t->resume_from - 1].budget : 0);
        max_it = t->iteration > max_it ? t->iteration : max_it;
    }
    cr_expect_float_eq(spend, 138, 1e-9);
    cr_expect_eq(max_it, 2);
    hn_close(&h);
}

Test(hyperband, options_are_validated)
{
    static const struct {
        const char *options;
        const char *field;
    } bad[] = {
        {"{\"etaa\": 3}", "scheduler.options.etaa"},
        {"{\"eta\": 1}", "scheduler.options.eta"},
        {"{\"eta\": 2.5}", "scheduler.options.eta"},
        {"{\"s_min\": 5}", "scheduler.options.s_min"},
        {"{\"n_max\": 0}", "scheduler.options.n_max"},
        {"{\"mode\": \"sometimes\"}", "scheduler.options.mode"},
        {"{\"mode\": \"infinite\", \"n_max\": 9}", "scheduler.options.n_max"},
        {"{\"mode\": \"infinite\", \"eta\": 3}", "scheduler.options.eta"},
        {"{\"r_min\": 100}", "scheduler.options.r_min"},
        {"{\"iterations\": -1}", "scheduler.options.iterations"},
        {"{\"max_retries\": \"2\"}", "scheduler.options.max_retries"},
        {"{\"type\": \"stop\"}", "scheduler.options.type"},
        {"{\"type\": true, \"mode\": \"infinite\"}", "scheduler.options.type"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        hn h;
        cr_expect_eq(hn_open(&h, HB, bad[i].options, 1, 81, 1), BD_EINVAL, "%s accepted", bad[i].options);
        cr_expect_str_eq(h.err.field, bad[i].field, "%s", bad[i].options);
        hn_close(&h);
    }
    hn h;
    cr_expect_eq(hn_open(&h, HB, "{}", 0, 81, 0), BD_EINVAL);
    cr_expect_str_eq(h.err.field, "resource.min");
    hn_close(&h);
}

Test(hyperband, scale_100k_trials_forever)
{
    hn h;
    open_ok(&h, "{\"iterations\": 0}", 1, 81, 1);
    h.check_pure = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cr_assert_eq(hn_run(&h, 8, HN_RANDOM, 100000), HN_LIMIT);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    fprintf(stderr, "hyperband: 100000 trials (8 workers, random order) in %.3f s\n", secs);
    check_resume_chain(&h);
    cr_expect_eq(hn_count(&h, 1, 4, 1), 81);
    cr_expect_eq(hn_count(&h, 100, 0, 81), 5);
    hn_close(&h);
}

/* A long study holds only the brackets still running: an ended bracket
 * keeps its counts, survivors and winner (and, once describe no longer
 * shows it, not even those) and frees its configs, so 100,000
 * trials leave at most a few brackets' configs in memory (R = 81, eta = 3:
 * at most 81 new configs a bracket; 8 workers hold at most 8 brackets open
 * beside the one being filled). */
Test(hyperband, memory_follows_the_running_brackets)
{
    hn h;
    open_ok(&h, "{\"iterations\": 0}", 1, 81, 1);
    h.check_pure = 0;
    cr_assert_eq(hn_run(&h, 8, HN_RANDOM, 100000), HN_LIMIT);
    json_t *d = hn_describe(&h);
    json_t *held = json_object_get(d, "held");
    json_int_t configs = json_integer_value(json_object_get(held, "configs"));
    json_int_t trials = json_integer_value(json_object_get(held, "trials"));
    cr_expect_leq(configs, 9 * 81, "%lld configs held after 100,000 trials", (long long)configs);
    cr_expect_leq(trials, 8, "%lld trials held", (long long)trials);
    cr_expect_eq(trials, json_integer_value(json_object_get(d, "running")));
    /* the described brackets that ended still show their survivors and winner */
    json_t *brackets = json_object_get(d, "brackets");
    cr_assert_eq(json_array_size(brackets), 64);
    int ended = 0;
    for (size_t i = 0; i < json_array_size(brackets); i++) {
        json_t *b = json_array_get(brackets, i);
        if (strcmp(json_string_value(json_object_get(b, "state")), "done"))
            continue;
        ended++;
        json_t *rungs = json_object_get(b, "rungs");
        size_t last = json_array_size(rungs) - 1;
        cr_expect(json_is_integer(json_object_get(json_object_get(b, "winner"), "config_id")));
        for (size_t k = 0; k < last; k++) {
            json_t *r = json_array_get(rungs, k);
            cr_expect_eq((json_int_t)json_array_size(json_object_get(r, "survivors")),
                         json_integer_value(json_object_get(json_array_get(rungs, k + 1), "n")));
        }
    }
    cr_expect_geq(ended, 50);
    json_decref(d);
    hn_close(&h);
}

/* held_bytes (what the engine's study cache counts) is on the safe side of
 * the heap the scheduler really holds, and not far above it: a scheduler
 * driven by hand (the harness's own log would be counted too), one worker,
 * checked every 1,000 trials over 20,000 of Hyperband repeated forever. */
Test(hyperband, held_bytes_covers_the_heap_it_holds)
{
#if defined(__SANITIZE_ADDRESS__)
    cr_skip_test("AddressSanitizer's allocator does not report through mallinfo2");
#endif
    hn h;
    open_ok(&h, "{\"iterations\": 0}", 1, 81, 1);
    bd_sched *s = NULL;
    bd_err err;
    size_t before = hn_heap_in_use();
    cr_assert_eq(HB->create(&h.def, &s, &err), 0);
    for (int64_t id = 1; id <= 20000; id++) {
        bd_suggest_ctx ctx = {.trials_created = id - 1, .worker = ""};
        bd_rng_seed(&ctx.rng, 7, (uint64_t)id);
        bd_suggestion sg = {0};
        cr_assert_eq(HB->suggest(s, &ctx, &sg, &err), BD_SUGGEST_TRIAL);
        bd_event ev = {.type = BD_EV_CREATED, .id = 2 * id - 1, .trial_id = id,
                       .config_id = sg.config_id ? sg.config_id : id, .budget = sg.budget, .config = sg.config,
                       .resume_from = sg.resume_from, .extra = sg.extra, .loss = NAN, .elapsed_seconds = NAN};
        bd_observe_ctx octx = {0};
        bd_decision d = {0};
        cr_assert_eq(HB->observe(s, &octx, &ev, &d, &err), 0);
        json_decref(sg.config);
        json_decref(sg.extra);
        bd_event done = {.type = BD_EV_COMPLETED, .id = 2 * id, .trial_id = id, .config_id = ev.config_id,
                         .budget = sg.budget, .loss = (double)((ev.config_id * 2654435761u) % 1000) / 1000,
                         .elapsed_seconds = 1};
        cr_assert_eq(HB->observe(s, &octx, &done, &d, &err), 0);
        if (id % 1000)
            continue;
        size_t used = hn_heap_in_use() - before, held = HB->held_bytes(s);
        cr_expect_geq(held + HN_HEAP_NOISE, used, "trial %lld: held_bytes %zu under the heap's growth %zu",
                      (long long)id, held, used);
        cr_expect_leq(held, 3 * used + 65536, "trial %lld: held_bytes %zu, heap grew %zu", (long long)id, held,
                      used);
        if (id % 5000 == 0)
            fprintf(stderr, "hyperband: at %lld trials it holds %zu bytes of heap, held_bytes says %zu\n",
                    (long long)id, used, held);
    }
    HB->destroy(s);
    hn_close(&h);
}

/* The harness feeds intermediate measurements the way the engine does (with
 * event ids and seeded observe contexts); Hyperband decides at rung ends, so
 * every one answers continue, and a replay of a log full of measurements and
 * failures rebuilds the same brackets. */
Test(hyperband, measurements_continue_and_replay_with_them)
{
    hn h;
    open_ok(&h, "{\"eta\": 3}", 1, 27, 1);
    for (int n = 0; n < 60; n++) {
        int64_t id;
        if (hn_suggest(&h, 0, &id) != BD_SUGGEST_TRIAL)
            break;
        const hn_trial *t = hn_get(&h, id);
        for (int epoch = 1; epoch <= 3 && epoch <= t->budget; epoch++) {
            bd_decision d = hn_measure(&h, id, epoch, 1.0 / epoch + 0.01 * (double)id);
            cr_expect_not(d.stop, "trial %lld stopped at epoch %d", (long long)id, epoch);
        }
        if (n % 7 == 3)
            hn_fail(&h, id);
        else
            hn_complete(&h, id, json_number_value(json_object_get(t->config, "x")) + 1.0 / t->budget);
    }
    cr_assert_gt(h.n_log, 150, "measurements were logged");
    bd_sched *r = hn_replay(&h);
    cr_expect(hn_same_next(&h, r, 20), "replay with measurements differs");
    HB->destroy(r);
    hn_close(&h);
}

/* Regression (found by fuzz_study): a relative rounding tolerance put
 * integer budgets above resource.max once it reached 1e9 (1,000,000,001 for
 * 1e9), and the engine refused every such proposal with a 500. */
Test(hyperband, integer_budgets_stay_in_range_at_large_resources)
{
    cr_expect_eq(bd_budget_round(1e9, 5e8, 1e9, 1), 1e9);
    cr_expect_leq(bd_budget_round(1e9 * (1 + 1e-12), 5e8, 1e9, 1), 1e9);
    cr_expect_geq(bd_budget_round(7199254937.0 * (1 - 1e-12), 7199254937.0, 7199254937.0 * 3, 1), 7199254937.0);
    cr_expect_eq(bd_budget_round(80.99999999999, 1, 81, 1), 81, "floating error below a whole number is absorbed");
    cr_expect_eq(bd_budget_round(26.5, 1, 81, 1), 26, "a real half is not rounded up");
    hn h;
    open_ok(&h, "{\"eta\": 2}", 5e8, 1e9, 1);
    cr_assert_eq(hn_run(&h, 1, HN_FIFO, 0), HN_DONE); /* the harness checks every budget against [r_min, r_max] */
    hn_close(&h);
}

/* ------------------------------------------------------ "type": "stopping" */

static json_t *bracket_rung(json_t *d, int bracket, int k)
{
    json_t *rung = json_array_get(json_object_get(json_array_get(json_object_get(d, "brackets"), bracket), "rungs"), k);
    cr_assert(rung, "no rung %d in bracket %d", k, bracket);
    return rung;
}

/* eta = 3, resource 1..9: bracket s = 2 has 9 configs and rungs at 1, 3, 9;
 * s = 1 has 5 configs and rungs at 3, 9; s = 0 has 3 configs at 9. Every
 * trial gets its bracket's last budget, 9. Rung 0 of bracket 2 judges
 *   0.5 (n 1: continue), 0.4 (n 2: continue), 0.6 (top {0.4}: stop),
 *   0.3 (top {0.3}: continue), 0.45 (stop), 0.35 (top {0.3, 0.35}:
 *   continue), 0.7 (stop), 0.2 (top {0.2, 0.3}: continue), 0.55 (top
 *   {0.2, 0.3, 0.35}: stop);
 * its rung 1, at epoch 3, the five left: 0.3 (continue), 0.2 (continue),
 *   0.25 (top {0.2}: stop), 0.1 (top {0.1}: continue), 0.15 (stop);
 * the three left complete at 9 and the best of them wins the bracket.
 * Nobody waits: the tenth trial starts bracket 1 at once. */
Test(hyperband, stopping_rung_decisions_by_hand)
{
    static const double rung0[9] = {0.5, 0.4, 0.6, 0.3, 0.45, 0.35, 0.7, 0.2, 0.55};
    static const int stop0[9] = {0, 0, 1, 0, 1, 0, 1, 0, 1};
    static const double rung1[9] = {0.3, 0.2, NAN, 0.25, NAN, 0.1, NAN, 0.15, NAN};
    static const int stop1[9] = {0, 0, 0, 1, 0, 0, 0, 1, 0};
    hn h;
    open_ok(&h, "{\"type\": \"stopping\"}", 1, 9, 1);
    int64_t id[10];
    for (int i = 0; i < 10; i++) {
        cr_assert_eq(hn_suggest(&h, i, &id[i]), BD_SUGGEST_TRIAL);
        const hn_trial *t = hn_get(&h, id[i]);
        cr_expect_eq(t->budget, 9, "trial %d: the bracket's last budget", i + 1);
        cr_expect_eq(t->resume_from, 0);
        cr_expect_eq(t->bracket, i < 9 ? 2 : 1, "trial %d in bracket %d", i + 1, t->bracket);
    }
    for (int i = 0; i < 9; i++)
        cr_expect_eq(hn_measure(&h, id[i], 1, rung0[i]).stop, stop0[i], "bracket 2 rung 0, trial %d", i + 1);
    cr_expect_not(hn_measure(&h, id[9], 1, 0.9).stop, "bracket 1 has no rung at 1");
    cr_expect_not(hn_measure(&h, id[9], 3, 0.9).stop, "bracket 1's first result at 3");
    for (int i = 0; i < 9; i++)
        if (!isnan(rung1[i])) {
            bd_decision d = hn_measure(&h, id[i], 3, rung1[i]);
            cr_expect_eq(d.stop, stop1[i], "bracket 2 rung 1, trial %d", i + 1);
            if (d.stop)
                cr_expect(strstr(d.reason, "not in the top 1 of the"), "reason: %s", d.reason);
        }
    for (int i = 0; i < 9; i++)
        if (!stop0[i] && !stop1[i]) {
            cr_expect_not(hn_measure(&h, id[i], 8, 0.1).stop);
            hn_complete(&h, id[i], 0.2 - 0.01 * i);
        }
    json_t *d = hn_describe(&h);
    cr_expect_str_eq(json_string_value(json_object_get(d, "type")), "stopping");
    json_t *b2 = json_array_get(json_object_get(d, "brackets"), 0);
    cr_expect_eq(json_integer_value(json_object_get(b2, "bracket")), 2);
    cr_expect_str_eq(json_string_value(json_object_get(b2, "state")), "done");
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(b2, "winner"), "config_id")), id[5]);
    static const long long want[3][3] = {{9, 5, 4}, {5, 3, 2}, {3, 0, 0}}; /* judged, continued, stopped */
    static const char *const keys[3] = {"judged", "continued", "stopped"};
    for (int k = 0; k < 3; k++)
        for (int j = 0; j < 3; j++)
            cr_expect_eq(json_integer_value(json_object_get(bracket_rung(d, 0, k), keys[j])), want[k][j],
                         "rung %d %s", k, keys[j]);
    cr_expect_eq(json_integer_value(json_object_get(bracket_rung(d, 0, 0), "created")), 9);
    cr_expect_eq(json_integer_value(json_object_get(bracket_rung(d, 1, 0), "judged")), 1);
    json_decref(d);
    hn_close(&h);
}

/* A stopped trial is final; a failed one is offered again from scratch
 * with the bracket's last budget and keeps the rungs its config passed. */
Test(hyperband, stopping_retries_failures_not_stops)
{
    hn h;
    open_ok(&h, "{\"type\": \"stopping\", \"exploratory_only\": true}", 1, 9, 1); /* one bracket, 9 configs */
    int64_t id[9];
    for (int i = 0; i < 9; i++)
        cr_assert_eq(hn_suggest(&h, i, &id[i]), BD_SUGGEST_TRIAL);
    cr_expect_not(hn_measure(&h, id[0], 1, 0.5).stop);
    cr_expect_not(hn_measure(&h, id[1], 1, 0.4).stop);
    cr_expect(hn_measure(&h, id[2], 1, 0.6).stop);
    hn_fail(&h, id[0]);
    int64_t retry;
    cr_assert_eq(hn_suggest(&h, 0, &retry), BD_SUGGEST_TRIAL);
    cr_expect_eq(hn_get(&h, retry)->config_id, id[0], "the failed config again");
    cr_expect_eq(hn_get(&h, retry)->budget, 9);
    cr_expect_eq(hn_get(&h, retry)->resume_from, 0, "from scratch");
    cr_expect_not(hn_measure(&h, retry, 1, 0.9).stop, "rung 0 was passed: not judged again");
    for (int i = 3; i < 9; i++)
        hn_complete(&h, id[i], 0.3);
    hn_complete(&h, id[1], 0.3);
    hn_complete(&h, retry, 0.2);
    int64_t none;
    cr_expect_eq(hn_suggest(&h, 0, &none), BD_SUGGEST_DONE, "the stopped config is not offered again");
    hn_close(&h);
}

static double stop_curve(const hn *h, const hn_trial *t, int epoch, void *ud)
{
    (void)h;
    (void)ud;
    double x = json_number_value(json_object_get(t->config, "x"));
    return x + 1.0 / epoch + 0.05 * sin(7.0 * x * epoch + (double)t->id);
}

static int fail_every_13th(int64_t id)
{
    return id % 13 == 0;
}

/* The replay property for the stopping type: drive live (4 workers, random
 * order, a trial in 13 failing), rebuild from the events, and the running
 * trials' next measurements get the same answers from both, and the next
 * suggestions are the same. */
Test(hyperband, stopping_replay_gives_identical_decisions)
{
    static const char *const options[] = {"{\"type\": \"stopping\"}", "{\"type\": \"stopping\", \"iterations\": 0}",
                                          "{\"type\": \"stopping\", \"mode\": \"infinite\"}",
                                          "{\"type\": \"stopping\", \"iterations\": 0, \"sampler\": \"tpe\"}"};
    for (size_t k = 0; k < sizeof options / sizeof options[0]; k++)
        for (long long stop = 15; stop < 200; stop += 60) {
            hn h;
            open_ok(&h, options[k], 1, 27, 1);
            hn_run_epochs(&h, 4, HN_RANDOM, stop, stop_curve, NULL, fail_every_13th);
            long long stopped = 0;
            for (size_t i = 0; i < h.n_trials; i++)
                stopped += h.trials[i].state == HN_STOPPED;
            if (stop > 60)
                cr_expect_gt(stopped, 0, "%s: no trial stopped in %lld", options[k], stop);
            hn_expect_replay_answers_alike(&h, stop_curve, NULL, options[k], stop);
            hn_close(&h);
        }
}

/* Memory follows the running brackets in the stopping type too: the
 * judging rungs are freed with their bracket. */
Test(hyperband, stopping_held_bytes_covers_the_heap_it_holds)
{
#if defined(__SANITIZE_ADDRESS__)
    cr_skip_test("AddressSanitizer's allocator does not report through mallinfo2");
#endif
    hn h;
    open_ok(&h, "{\"type\": \"stopping\", \"iterations\": 0}", 1, 27, 1);
    cr_assert_eq(hn_run_epochs(&h, 8, HN_RANDOM, 3000, stop_curve, NULL, NULL), HN_LIMIT);
    hn_expect_held_bytes(&h, "hyperband stopping");
    hn_close(&h);
}
