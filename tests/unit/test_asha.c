/* test_asha.c: ASHA (server/sched/asha.c; Li et al., MLSys 2020) and the
 * asynchronous rung index (server/sched/rung.c), driven through
 * tests/unit/sched_harness.h. */
#include <criterion/criterion.h>
#include <time.h>

#include "sched_harness.h"
#include "server/model/curve.h"
#include "server/sched/rung.h"

extern const struct bd_sched_ops bd_sched_asha;

#define ASHA (&bd_sched_asha)

static void open_ok(hn *h, const char *options, double r_min, double r_max, int integer)
{
    int rc = hn_open(h, ASHA, options, r_min, r_max, integer);
    cr_assert_eq(rc, 0, "create failed: %s (%s)", h->err.message, h->err.field);
}

Test(asha, rung_vector_from_algorithms_md)
{
    /* rung-0 losses [5, 1, 4, 2, 6, 3], eta = 3: top floor(6/3) = 2 -> losses 1 and 2 */
    static const double losses[] = {5, 1, 4, 2, 6, 3};
    bd_rung r;
    bd_rung_init(&r, 3);
    bd_rung_entry *e[6];
    for (int i = 0; i < 6; i++)
        e[i] = bd_rung_add(&r, i + 1, 100 + i, losses[i]);
    const bd_rung_entry *c = bd_rung_candidate(&r);
    cr_assert(c);
    cr_expect_eq(c->loss, 1);
    cr_expect_eq(c->config_id, 2);
    bd_rung_promote(&r, e[1]);
    c = bd_rung_candidate(&r);
    cr_assert(c);
    cr_expect_eq(c->loss, 2);
    bd_rung_promote(&r, e[3]);
    cr_expect_null(bd_rung_candidate(&r));
    /* a seventh result better than all: top stays at 2, the new one enters */
    bd_rung_entry *g = bd_rung_add(&r, 7, 106, 0.5);
    c = bd_rung_candidate(&r);
    cr_assert(c);
    cr_expect_eq(c, g);
    cr_expect_eq(r.best, g);
    bd_rung_free(&r);
}

Test(asha, rung_index_matches_a_brute_force_ranking)
{
    bd_rng rng;
    bd_rng_seed(&rng, 1, 2);
    for (unsigned eta = 2; eta <= 5; eta++) {
        bd_rung r;
        bd_rung_init(&r, eta);
        enum { N = 151 };
        bd_rung_entry *e[N];
        double loss[N];
        int promoted[N] = {0};
        for (int i = 0; i < N; i++) {
            loss[i] = bd_rng_below(&rng, 10) == 0 ? INFINITY : (double)bd_rng_below(&rng, 50);
            e[i] = bd_rung_add(&r, i + 1, i + 1, loss[i]);
            /* brute force: best unpromoted among the top floor((i+1)/eta) */
            int k = (i + 1) / (int)eta, want = -1;
            for (int rank = 0; rank < k; rank++) {
                int best = -1;
                for (int j = 0; j <= i; j++) {
                    int better = 0;
                    for (int m = 0; m <= i; m++)
                        better += bd_rank_before(loss[m], m + 1, loss[j], j + 1);
                    if (better == rank)
                        best = j;
                }
                if (!promoted[best]) {
                    want = best;
                    break;
                }
            }
            const bd_rung_entry *c = bd_rung_candidate(&r);
            if (want < 0) {
                cr_assert_null(c, "eta %u after %d: candidate %lld, expected none", eta, i + 1,
                               c ? (long long)c->config_id : 0LL);
            } else {
                cr_assert(c && c->config_id == want + 1, "eta %u after %d: candidate %lld, expected %d", eta, i + 1,
                          c ? (long long)c->config_id : 0LL, want + 1);
                if (bd_rng_below(&rng, 2)) {
                    bd_rung_promote(&r, e[want]);
                    promoted[want] = 1;
                }
            }
        }
        bd_rung_free(&r);
    }
}

/* Brute force: the best unpromoted entry (index) among the top k of the n
 * losses (entry j is config j + 1), or -1. */
static int brute_candidate(const double *loss, const int *promoted, int n, int k)
{
    for (int rank = 0; rank < k; rank++)
        for (int j = 0; j < n; j++) {
            int better = 0;
            for (int m = 0; m < n; m++)
                better += bd_rank_before(loss[m], m + 1, loss[j], j + 1);
            if (better == rank && !promoted[j])
                return j;
        }
    return -1;
}

/* The rung's candidate is the brute force's (want, or none when -1); then,
 * one time in two, promotes it. after: results added, for the message. */
static void check_candidate(bd_rung *r, bd_rung_entry **e, int *promoted, int want, int after, bd_rng *rng)
{
    const bd_rung_entry *c = bd_rung_candidate(r);
    if (want < 0) {
        cr_assert_null(c, "after %d: candidate %lld, expected none", after, c ? (long long)c->config_id : 0LL);
        return;
    }
    cr_assert(c && c->config_id == want + 1, "after %d: candidate %lld, expected %d", after,
              c ? (long long)c->config_id : 0LL, want + 1);
    if (bd_rng_below(rng, 2)) {
        bd_rung_promote(r, e[want]);
        promoted[want] = 1;
    }
}

/* bd_rung_set_keep: the candidates are the best unpromoted among the top
 * floor(count * keep) (floor(count/eta) at keep 0), whatever the order of
 * adds, promotions and changes of keep. */
Test(asha, rung_keep_share_matches_a_brute_force_ranking)
{
    static const double keeps[] = {0, 0.5, 1.0 / 3, 0.7, 1};
    bd_rng rng;
    bd_rng_seed(&rng, 3, 4);
    bd_rung r;
    bd_rung_init(&r, 3);
    enum { N = 120 };
    bd_rung_entry *e[N];
    double loss[N], keep = 0;
    int promoted[N] = {0};
    for (int i = 0; i < N; i++) {
        loss[i] = bd_rng_below(&rng, 12) == 0 ? INFINITY : (double)bd_rng_below(&rng, 40);
        e[i] = bd_rung_add(&r, i + 1, i + 1, loss[i]);
        if (bd_rng_below(&rng, 4) == 0) {
            keep = keeps[bd_rng_below(&rng, 5)];
            bd_rung_set_keep(&r, keep);
        }
        int k = keep > 0 ? (int)floor((i + 1) * keep + 1e-9) : (i + 1) / 3;
        check_candidate(&r, e, promoted, brute_candidate(loss, promoted, i + 1, k), i + 1, &rng);
    }
    /* keep 1: every unpromoted result is a candidate, best first */
    bd_rung_set_keep(&r, 1);
    int left = 0;
    for (int j = 0; j < N; j++)
        left += !promoted[j];
    double prev = -INFINITY;
    for (int n = 0; n < left; n++) {
        const bd_rung_entry *c = bd_rung_candidate(&r);
        cr_assert(c, "candidate %d of %d missing", n + 1, left);
        cr_assert_geq(c->loss, prev);
        prev = c->loss;
        bd_rung_promote(&r, (bd_rung_entry *)c);
    }
    cr_expect_null(bd_rung_candidate(&r));
    bd_rung_free(&r);
}

/* bd_rung_rerank: after every entry's value changes at once, the rung
 * answers as if it had been built from the new values (promotions made
 * stand), and adds, promotions and changes of keep after it still do. */
static double rerank_table[200];

static double rerank_by_table(const bd_rung_entry *e, void *cls)
{
    (void)cls;
    return rerank_table[e->config_id];
}

Test(asha, rung_rerank_matches_a_brute_force_ranking)
{
    static const double keeps[] = {0, 0.5, 1.0 / 3, 1};
    bd_rng rng;
    bd_rng_seed(&rng, 5, 6);
    bd_rung r;
    bd_rung_init(&r, 3);
    enum { N = 150 };
    bd_rung_entry *e[N];
    double loss[N], keep = 0;
    int promoted[N] = {0}, reranks = 0;
    for (int i = 0; i < N; i++) {
        loss[i] = bd_rng_below(&rng, 12) == 0 ? INFINITY : (double)bd_rng_below(&rng, 40);
        e[i] = bd_rung_add(&r, i + 1, i + 1, loss[i]);
        if (bd_rng_below(&rng, 6) == 0) {
            keep = keeps[bd_rng_below(&rng, 4)];
            bd_rung_set_keep(&r, keep);
        }
        if (bd_rng_below(&rng, 5) == 0) { /* new values for all: some NaN (rank last, as diverged) */
            for (int j = 0; j <= i; j++) {
                rerank_table[j + 1] = bd_rng_below(&rng, 15) == 0 ? NAN : (double)bd_rng_below(&rng, 60);
                loss[j] = isnan(rerank_table[j + 1]) ? INFINITY : rerank_table[j + 1];
            }
            bd_rung_rerank(&r, rerank_by_table, NULL);
            reranks++;
        }
        int k = keep > 0 ? (int)floor((i + 1) * keep + 1e-9) : (i + 1) / 3, best = 0;
        for (int j = 1; j <= i; j++)
            if (bd_rank_before(loss[j], j + 1, loss[best], best + 1))
                best = j;
        cr_assert_eq(r.best->config_id, best + 1, "after %d: best %lld, expected %d", i + 1,
                     (long long)r.best->config_id, best + 1);
        check_candidate(&r, e, promoted, brute_candidate(loss, promoted, i + 1, k), i + 1, &rng);
    }
    cr_expect_geq(reranks, 20);
    bd_rung_free(&r);
}

/* Outcome: loss by config id from a table (ids 1..6), else x + 1/budget. */
static int vector_loss(const hn *h, const hn_trial *t, void *ud, double *loss)
{
    static const double losses[] = {0, 5, 1, 4, 2, 6, 3};
    (void)ud;
    if (t->config_id <= 6 && t->rung == 0) {
        *loss = losses[t->config_id];
        return HN_COMPLETED;
    }
    return hn_loss_default(h, t, NULL, loss);
}

Test(asha, promotes_the_top_third_best_first)
{
    hn h;
    int64_t ids[6], id;
    open_ok(&h, "{}", 1, 9, 1); /* rungs 1, 3, 9 */
    h.outcome = vector_loss;
    for (int i = 0; i < 6; i++) {
        cr_assert_eq(hn_suggest(&h, i, &ids[i]), BD_SUGGEST_TRIAL);
        cr_expect_eq(hn_get(&h, ids[i])->rung, 0);
        cr_expect_eq(hn_get(&h, ids[i])->budget, 1);
    }
    for (int i = 0; i < 6; i++)
        hn_finish(&h, ids[i]);
    cr_assert_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_TRIAL);
    const hn_trial *t = hn_get(&h, id);
    cr_expect_eq(t->config_id, 2, "loss 1 first");
    cr_expect_eq(t->rung, 1);
    cr_expect_eq(t->budget, 3);
    cr_expect_eq(t->resume_from, 2);
    cr_assert_eq(hn_suggest(&h, 1, &id), BD_SUGGEST_TRIAL);
    t = hn_get(&h, id);
    cr_expect_eq(t->config_id, 4, "then loss 2");
    cr_expect_eq(t->resume_from, 4);
    cr_assert_eq(hn_suggest(&h, 2, &id), BD_SUGGEST_TRIAL);
    t = hn_get(&h, id);
    cr_expect_eq(t->config_id, t->id, "nothing left to promote: a new config");
    cr_expect_eq(t->rung, 0);
    hn_close(&h);
}

Test(asha, higher_rung_promotion_comes_first)
{
    hn h;
    int64_t ids[9], more[6], id;
    open_ok(&h, "{}", 1, 9, 1);
    for (int i = 0; i < 9; i++)
        cr_assert_eq(hn_suggest(&h, i, &ids[i]), BD_SUGGEST_TRIAL);
    for (int i = 0; i < 9; i++)
        hn_finish(&h, ids[i]); /* rung 0: 9 results, 3 promotable */
    for (int i = 0; i < 6; i++) {
        cr_assert_eq(hn_suggest(&h, i, &more[i]), BD_SUGGEST_TRIAL);
        cr_assert_eq(hn_get(&h, more[i])->rung, i < 3 ? 1 : 0);
    }
    for (int i = 0; i < 6; i++)
        hn_finish(&h, more[i]); /* rung 1: 3 results, 1 candidate; rung 0: 12 results, top 4, 1 candidate */
    cr_assert_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_TRIAL);
    cr_expect_eq(hn_get(&h, id)->rung, 2, "rung 1's candidate goes to rung 2 first");
    cr_expect_eq(hn_get(&h, id)->budget, 9);
    cr_assert_eq(hn_suggest(&h, 1, &id), BD_SUGGEST_TRIAL);
    cr_expect_eq(hn_get(&h, id)->rung, 1, "then rung 0's candidate");
    cr_assert_eq(hn_suggest(&h, 2, &id), BD_SUGGEST_TRIAL);
    cr_expect_eq(hn_get(&h, id)->rung, 0, "then nothing else is promotable: a new config");
    hn_close(&h);
}

Test(asha, never_waits)
{
    hn h;
    open_ok(&h, "{}", 1, 81, 1);
    for (int i = 0; i < 2000; i++) {
        int64_t id;
        cr_assert_eq(hn_suggest(&h, i, &id), BD_SUGGEST_TRIAL, "suggestion %d", i);
        if (i % 3 == 0)
            hn_finish(&h, id);
    }
    hn_close(&h);
}

Test(asha, max_trials_waits_then_is_done)
{
    hn h;
    int64_t ids[5], id;
    open_ok(&h, "{\"max_trials\": 5}", 1, 9, 1);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(hn_suggest(&h, i, &ids[i]), BD_SUGGEST_TRIAL);
    cr_expect_eq(hn_suggest(&h, 5, &id), BD_SUGGEST_WAIT);
    for (int i = 0; i < 4; i++)
        hn_finish(&h, ids[i]);
    cr_expect_eq(hn_suggest(&h, 5, &id), BD_SUGGEST_WAIT);
    hn_fail(&h, ids[4]);
    cr_expect_eq(hn_suggest(&h, 5, &id), BD_SUGGEST_DONE);
    hn_close(&h);
}

Test(asha, multiple_brackets_round_robin)
{
    hn h;
    open_ok(&h, "{\"brackets\": 3}", 1, 27, 1); /* s = 0: 1,3,9,27; s = 1: 3,9,27; s = 2: 9,27 */
    cr_assert_eq(hn_run(&h, 4, HN_RANDOM, 3000), HN_LIMIT);
    static const double bottom[] = {1, 3, 9};
    long long per_bracket[3] = {0};
    for (size_t i = 0; i < h.n_trials; i++) {
        const hn_trial *t = &h.trials[i];
        cr_assert(t->bracket >= 0 && t->bracket <= 2);
        cr_expect_eq(t->bracket, (int)(i % 3), "trial %zu in bracket %d", i + 1, t->bracket);
        cr_expect_eq(t->budget, bottom[t->bracket] * bd_pow(3, t->rung));
        per_bracket[t->bracket]++;
        if (t->rung > 0) {
            const hn_trial *prev = hn_get(&h, t->resume_from);
            cr_expect_eq(prev->config_id, t->config_id);
            cr_expect_eq(prev->rung, t->rung - 1);
            cr_expect_eq(prev->bracket, t->bracket);
        }
    }
    cr_expect_eq(per_bracket[0], 1000);
    cr_expect_eq(hn_count(&h, -1, 2, 27) > 0, 1);
    json_t *d = hn_describe(&h);
    cr_expect_eq(json_array_size(json_object_get(d, "brackets")), 3);
    json_decref(d);
    hn_close(&h);
}

Test(asha, s_sets_the_minimum_early_stopping_rate)
{
    hn h;
    open_ok(&h, "{\"s\": 1}", 1, 27, 1);
    cr_assert_eq(hn_run(&h, 2, HN_FIFO, 200), HN_LIMIT);
    for (size_t i = 0; i < h.n_trials; i++) {
        cr_expect_eq(h.trials[i].bracket, 1);
        cr_expect_geq(h.trials[i].budget, 3);
    }
    hn_close(&h);
}

Test(asha, top_rung_is_at_r_when_r_is_not_a_power)
{
    hn h;
    open_ok(&h, "{}", 1, 100, 1); /* rungs 1, 3, 9, 27, 100 */
    cr_assert_eq(hn_run(&h, 3, HN_RANDOM, 2000), HN_LIMIT);
    double budgets[] = {1, 3, 9, 27, 100};
    int seen[5] = {0};
    for (size_t i = 0; i < h.n_trials; i++) {
        int k = h.trials[i].rung;
        cr_assert(k >= 0 && k < 5);
        cr_expect_eq(h.trials[i].budget, budgets[k], "rung %d", k);
        seen[k] = 1;
    }
    cr_expect(seen[4], "some config reached the top rung at R = 100");
    hn_close(&h);
}

/* Outcome: every trial of an odd config fails at rung 0. */
static int fail_odd(const hn *h, const hn_trial *t, void *ud, double *loss)
{
    (void)ud;
    if (t->rung == 0 && t->config_id % 2)
        return HN_FAILED;
    return hn_loss_default(h, t, NULL, loss);
}

Test(asha, failed_trials_are_not_in_the_rung)
{
    hn h;
    open_ok(&h, "{}", 1, 9, 1);
    h.outcome = fail_odd;
    cr_assert_eq(hn_run(&h, 1, HN_FIFO, 300), HN_LIMIT);
    for (size_t i = 0; i < h.n_trials; i++) {
        const hn_trial *t = &h.trials[i];
        if (t->rung > 0)
            cr_expect_eq(t->config_id % 2, 0, "config %lld failed yet was promoted", (long long)t->config_id);
        if (t->config_id % 2 && t->config_id != t->id)
            cr_assert_fail("failed config %lld offered again", (long long)t->config_id);
    }
    json_t *d = hn_describe(&h);
    json_t *rung0 = json_array_get(json_object_get(json_array_get(json_object_get(d, "brackets"), 0), "rungs"), 0);
    cr_expect_eq(json_integer_value(json_object_get(rung0, "completed")) +
                     json_integer_value(json_object_get(rung0, "failed")),
                 json_integer_value(json_object_get(rung0, "created")));
    cr_expect_gt(json_integer_value(json_object_get(rung0, "failed")), 0);
    json_decref(d);
    hn_close(&h);
}

/* Outcome: ids divisible by 5 diverge. */
static int diverge_some(const hn *h, const hn_trial *t, void *ud, double *loss)
{
    (void)ud;
    hn_loss_default(h, t, NULL, loss);
    if (t->config_id % 5 == 0)
        *loss = INFINITY;
    return HN_COMPLETED;
}

Test(asha, diverged_configs_are_promoted_only_after_finite_ones)
{
    hn h;
    open_ok(&h, "{}", 1, 9, 1);
    h.outcome = diverge_some;
    cr_assert_eq(hn_run(&h, 2, HN_FIFO, 500), HN_LIMIT);
    for (size_t i = 0; i < h.n_trials; i++)
        if (h.trials[i].rung > 0)
            cr_expect_neq(h.trials[i].config_id % 5, 0);
    hn_close(&h);
}

/* The promotion ASHA's get_job must make right now in bracket 0 (single
 * bracket, nrungs rungs), by brute force over the record: the highest rung
 * k <= nrungs-2 whose top floor(completed/eta) holds an unpromoted config
 * gives its best such config; 0 when none (a new config is due). */
static int64_t expected_promotion(const hn *h, int nrungs, unsigned eta, int *rung_out)
{
    for (int k = nrungs - 2; k >= 0; k--) {
        size_t n = 0;
        const hn_trial **done = calloc(h->n_trials + 1, sizeof *done);
        for (size_t i = 0; i < h->n_trials; i++)
            if (h->trials[i].rung == k && h->trials[i].state == HN_COMPLETED)
                done[n++] = &h->trials[i];
        /* selection sort is fine at this size */
        size_t top = n / eta;
        for (size_t a = 0; a < top; a++)
            for (size_t b = a + 1; b < n; b++)
                if (bd_rank_before(done[b]->loss, done[b]->config_id, done[a]->loss, done[a]->config_id)) {
                    const hn_trial *tmp = done[a];
                    done[a] = done[b];
                    done[b] = tmp;
                }
        for (size_t a = 0; a < top; a++) {
            int promoted = 0;
            for (size_t i = 0; i < h->n_trials && !promoted; i++)
                promoted = h->trials[i].rung == k + 1 && h->trials[i].config_id == done[a]->config_id;
            if (!promoted) {
                int64_t id = done[a]->config_id;
                free(done);
                *rung_out = k + 1;
                return id;
            }
        }
        free(done);
    }
    *rung_out = 0;
    return 0;
}

Test(asha, every_decision_follows_get_job)
{
    for (unsigned eta = 2; eta <= 3; eta++) {
        hn h;
        char opts[32];
        snprintf(opts, sizeof opts, "{\"eta\": %u}", eta);
        open_ok(&h, opts, 1, 27, 1);
        int nrungs = eta == 2 ? 5 : 4;
        bd_rng pick;
        bd_rng_seed(&pick, 3, eta);
        int64_t running[8];
        size_t n_running = 0;
        h.outcome = diverge_some;
        for (int step = 0; step < 400; step++) {
            while (n_running < 8) {
                int rung;
                int64_t want = expected_promotion(&h, nrungs, eta, &rung), id;
                cr_assert_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_TRIAL);
                const hn_trial *t = hn_get(&h, id);
                cr_assert_eq(t->rung, rung, "eta %u trial %lld: rung %d, expected %d", eta, (long long)id, t->rung,
                             rung);
                if (want)
                    cr_assert_eq(t->config_id, want, "eta %u trial %lld: config %lld, expected %lld", eta,
                                 (long long)id, (long long)t->config_id, (long long)want);
                running[n_running++] = id;
            }
            /* end 1..5 trials at once, so several rungs can hold candidates together */
            for (int burst = 1 + (int)bd_rng_below(&pick, 5); burst > 0; burst--) {
                size_t i = (size_t)bd_rng_below(&pick, n_running);
                int64_t id = running[i];
                running[i] = running[--n_running];
                if (id % 7 == 0)
                    hn_fail(&h, id);
                else
                    hn_finish(&h, id);
            }
        }
        hn_close(&h);
    }
}

static int mixed_outcomes(const hn *h, const hn_trial *t, void *ud, double *loss)
{
    (void)ud;
    if (t->id % 11 == 0)
        return HN_FAILED;
    if (t->id % 23 == 0)
        return HN_EXPIRED;
    return hn_loss_default(h, t, NULL, loss);
}

Test(asha, replay_gives_identical_next_suggestions)
{
    static const char *const options[] = {"{}", "{\"brackets\": 3, \"eta\": 2}", "{\"max_trials\": 90}"};
    for (size_t k = 0; k < 3; k++)
        for (long long stop = 10; stop < 300; stop += 71) {
            hn h;
            open_ok(&h, options[k], 1, 27, 1);
            h.outcome = mixed_outcomes;
            hn_run(&h, 5, HN_RANDOM, stop);
            bd_sched *r = hn_replay(&h);
            cr_expect(hn_same_next(&h, r, 40), "%s: replay after %lld trials differs", options[k], stop);
            ASHA->destroy(r);
            hn_close(&h);
        }
}

/* Measurements of a late bloomer (falls fast) and of a config that has
 * flattened, which stands better at the end of rung 1 (budget 3). */
static double step_scale = 1; /* the worker reports step e * step_scale for epoch e */

static void report_curve(hn *h, int64_t id, double from, double to, const double *curve)
{
    for (double e = from; e <= to; e++)
        hn_measure(h, id, e * step_scale, curve[(int)e - 1]);
    hn_complete(h, id, curve[(int)to - 1]);
}

/* With "promotion": "predicted" the rung-1 candidate is the late bloomer;
 * with "current" it is the flat config (the paper's rule). Rung 0 is at
 * budget 1, rung 1 at 3, top at 9 (eta 3). */
Test(asha, predicted_promotion_prefers_the_late_bloomer)
{
    static const double bloomer[9] = {0.90, 0.60, 0.45, 0.35, 0.30, 0.26, 0.23, 0.21, 0.20};
    static const double flat[9] = {0.40, 0.38, 0.37, 0.37, 0.37, 0.37, 0.37, 0.37, 0.37};
    static const double poor[9] = {0.95, 0.94, 0.93, 0.93, 0.93, 0.93, 0.93, 0.93, 0.93};
    /* the third pass: "predicted", the worker counting half epochs (steps
     * twice the budget's units): steps beyond the budget are left out, the
     * curve is the rung results alone (two points), and it ranks as
     * "current" (extrapolating half epochs as epochs would promote the
     * bloomer) */
    for (int pass = 0; pass <= 2; pass++) {
        int predicted = pass == 1;
        step_scale = pass == 2 ? 2 : 1;
        hn h;
        open_ok(&h, pass ? "{\"promotion\": \"predicted\"}" : "{}", 1, 9, 1);
        h.check_pure = 1;
        int64_t ids[9], promoted_to_1[3] = {0};
        /* 9 configs in rung 0: the bloomer, the flat one, and 7 poor ones */
        for (int i = 0; i < 9; i++) {
            cr_assert_eq(hn_suggest(&h, 0, &ids[i]), BD_SUGGEST_TRIAL);
            cr_assert_eq(hn_get(&h, ids[i])->rung, 0);
            report_curve(&h, ids[i], 1, 1, i == 0 ? bloomer : i == 1 ? flat : poor);
            if (i == 2 || i == 5 || i == 8) { /* each third result makes one promotion possible */
                int64_t p;
                cr_assert_eq(hn_suggest(&h, 0, &p), BD_SUGGEST_TRIAL);
                cr_assert_eq(hn_get(&h, p)->rung, 1);
                promoted_to_1[i / 3] = p;
            }
        }
        /* rung 1 gets the flat config first (0.40 < 0.90 at budget 1), then the bloomer */
        cr_assert_eq(hn_get(&h, promoted_to_1[0])->config_id, ids[1]);
        cr_assert_eq(hn_get(&h, promoted_to_1[1])->config_id, ids[0]);
        report_curve(&h, promoted_to_1[0], 2, 3, flat);
        report_curve(&h, promoted_to_1[1], 2, 3, bloomer);
        report_curve(&h, promoted_to_1[2], 2, 3, poor);
        /* three results in rung 1: one promotion to the top */
        int64_t top;
        cr_assert_eq(hn_suggest(&h, 0, &top), BD_SUGGEST_TRIAL);
        cr_assert_eq(hn_get(&h, top)->rung, 2);
        cr_expect_eq(hn_get(&h, top)->config_id, predicted ? ids[0] : ids[1],
                     "promotion %s: config %lld promoted", predicted ? "predicted" : "current",
                     (long long)hn_get(&h, top)->config_id);
        json_t *d = hn_describe(&h);
        cr_expect_str_eq(json_string_value(json_object_get(d, "promotion")), pass ? "predicted" : "current");
        json_decref(d);
        bd_sched *r = hn_replay(&h);
        cr_expect(hn_same_next(&h, r, 10), "replay differs");
        ASHA->destroy(r);
        hn_close(&h);
    }
}

/* "promotion_fraction": "reliability", a fixed vector. Rungs at budgets 1,
 * 3, 9 (eta 3). Config 1's curve c (nine epochs) is the study's only one of
 * four or more points: it is best in rung 0 (c1, against c1 + 0.01 i for
 * configs i = 1..8, variance V = 6.7e-5) and in rung 1 (c3, against
 * c3 + 0.15 and + 0.30), so it is the one promoted to the top. Its pow3
 * residual variance sigma^2 = sse / (9 - 3) gives rho = 1 - sigma^2 / V and
 * rung 0 keeps 3^-rho of its nine results. A zigzag of +-0.05 about 0.40
 * (noise far above V): rho = 0, rung 0 keeps all nine, and the next
 * suggestions promote the six configs not yet promoted, best first, before
 * any new config. An exact power law on the grid (c = 0.25: no noise):
 * rho = 1, the paper's 1/eta, and the next suggestion is a new config. A
 * zigzag of +-0.015: in between, checked against the formula. Rung 1's
 * spread is large enough that it promotes no more in any pass. */
Test(asha, reliability_keeps_what_the_noise_cannot_rank)
{
    for (int pass = 0; pass < 3; pass++) {
        double c[9], amp = pass == 0 ? 0.05 : pass == 2 ? 0.015 : 0;
        for (int i = 0; i < 9; i++)
            c[i] = pass == 1 ? 0.2 + 0.3 * pow(i + 1, -0.25) : 0.40 + (i % 2 ? amp : -amp);
        hn h;
        open_ok(&h, "{\"promotion_fraction\": \"reliability\"}", 1, 9, 1);
        h.check_pure = 1;
        int64_t ids[9], to1[3], top;
        double rung0[9], mean = 0, v = 0;
        for (int i = 0; i < 9; i++) {
            cr_assert_eq(hn_suggest(&h, 0, &ids[i]), BD_SUGGEST_TRIAL);
            rung0[i] = c[0] + 0.01 * i;
            hn_measure(&h, ids[i], 1, rung0[i]);
            hn_complete(&h, ids[i], rung0[i]);
            if (i % 3 == 2) {
                cr_assert_eq(hn_suggest(&h, 0, &to1[i / 3]), BD_SUGGEST_TRIAL);
                cr_assert_eq(hn_get(&h, to1[i / 3])->rung, 1);
            }
        }
        cr_assert_eq(hn_get(&h, to1[0])->config_id, ids[0]);
        for (int i = 0; i < 9; i++)
            mean += rung0[i] / 9;
        for (int i = 0; i < 9; i++)
            v += (rung0[i] - mean) * (rung0[i] - mean) / 9;
        for (int j = 0; j < 3; j++) {
            hn_measure(&h, to1[j], 2, j ? c[2] + 0.15 * j : c[1]);
            hn_measure(&h, to1[j], 3, c[2] + 0.15 * j);
            hn_complete(&h, to1[j], c[2] + 0.15 * j);
        }
        cr_assert_eq(hn_suggest(&h, 0, &top), BD_SUGGEST_TRIAL);
        cr_assert_eq(hn_get(&h, top)->rung, 2);
        cr_assert_eq(hn_get(&h, top)->config_id, ids[0]);
        for (int e = 4; e <= 9; e++)
            hn_measure(&h, top, e, c[e - 1]);
        hn_complete(&h, top, c[8]);
        double steps[9], sse;
        for (int i = 0; i < 9; i++)
            steps[i] = i + 1;
        size_t dof = bd_curve_residual(steps, c, 9, 0, &sse);
        cr_assert_eq(dof, 6);
        double rho = fmax(0, 1 - sse / 6 / v), keep = rho < 1 ? pow(3, -rho) : 1.0 / 3;
        double v1 = 2 * 0.15 * 0.15 / 3, rho1 = fmax(0, 1 - sse / 6 / v1);
        cr_assert_eq((int)floor(3 * (rho1 < 1 ? pow(3, -rho1) : 1.0 / 3) + 1e-9), 1, "rung 1 would promote more");
        json_t *d = hn_describe(&h);
        json_t *r0 = json_array_get(json_object_get(json_array_get(json_object_get(d, "brackets"), 0), "rungs"), 0);
        cr_expect_float_eq(json_real_value(json_object_get(r0, "keep")), keep, 1e-12, "pass %d: keep %g, want %g",
                           pass, json_real_value(json_object_get(r0, "keep")), keep);
        cr_expect_float_eq(json_real_value(json_object_get(d, "noise_variance")), sse / 6, 1e-15);
        cr_expect_str_eq(json_string_value(json_object_get(d, "promotion_fraction")), "reliability");
        json_decref(d);
        /* the promotions out of rung 0 that the share allows: the configs
         * ranked 4th .. floor(9 keep)-th (the first three went to rung 1) */
        int more = (int)floor(9 * keep + 1e-9) - 3;
        if (pass == 0)
            cr_expect_eq(more, 6, "zigzag 0.05: rho %g", rho);
        if (pass == 1)
            cr_expect(sse / 6 < 1e-20 && more == 0, "an exact power law: noise %g", sse / 6);
        if (pass == 2)
            cr_expect(more > 0 && more < 6, "zigzag 0.015: rho %g, %d more promotions", rho, more);
        for (int n = 0; n < more; n++) {
            int64_t p;
            cr_assert_eq(hn_suggest(&h, 0, &p), BD_SUGGEST_TRIAL);
            cr_expect_eq(hn_get(&h, p)->rung, 1, "pass %d: suggestion %d is in rung %d", pass, n,
                         hn_get(&h, p)->rung);
            cr_expect_eq(hn_get(&h, p)->config_id, ids[3 + n], "pass %d: promotion %d", pass, n);
        }
        int64_t fresh;
        cr_assert_eq(hn_suggest(&h, 0, &fresh), BD_SUGGEST_TRIAL);
        cr_expect_eq(hn_get(&h, fresh)->rung, 0, "pass %d: after %d promotions a new config", pass, more);
        bd_sched *r = hn_replay(&h);
        cr_expect(hn_same_next(&h, r, 10), "replay differs");
        ASHA->destroy(r);
        hn_close(&h);
    }
}

/* "promotion_fraction": "eta" is the paper's rule: the same decisions as
 * a study without the option (a stored study keeps its behaviour). */
Test(asha, promotion_fraction_eta_is_the_old_behaviour)
{
    hn a, b;
    open_ok(&a, "{\"promotion\": \"predicted\"}", 1, 27, 1);
    open_ok(&b, "{\"promotion\": \"predicted\", \"promotion_fraction\": \"eta\"}", 1, 27, 1);
    a.check_pure = b.check_pure = 0;
    cr_assert_eq(hn_run(&a, 3, HN_RANDOM, 400), HN_LIMIT);
    cr_assert_eq(hn_run(&b, 3, HN_RANDOM, 400), HN_LIMIT);
    cr_assert_eq(a.n_trials, b.n_trials);
    for (size_t i = 0; i < a.n_trials; i++) {
        cr_assert_eq(a.trials[i].config_id, b.trials[i].config_id, "trial %zu", i);
        cr_assert_eq(a.trials[i].rung, b.trials[i].rung, "trial %zu", i);
    }
    hn_close(&a);
    hn_close(&b);
}

/* New studies are stored with "promotion": "learned" and
 * "promotion_fraction": "reliability"; what the body names is kept. A
 * stored study without the options is created with the paper's rules
 * (describe says so), so it replays as it ran. */
Test(asha, new_study_defaults_and_stored_studies)
{
    json_t *o = json_object();
    ASHA->new_study_defaults(NULL, o);
    cr_expect_str_eq(json_string_value(json_object_get(o, "promotion")), "learned");
    cr_expect_str_eq(json_string_value(json_object_get(o, "promotion_fraction")), "reliability");
    cr_expect_str_eq(json_string_value(json_object_get(o, "asymptote")), "nonnegative");
    json_decref(o);
    o = json_pack("{s:s, s:s}", "promotion_fraction", "eta", "asymptote", "free");
    ASHA->new_study_defaults(NULL, o);
    cr_expect_str_eq(json_string_value(json_object_get(o, "promotion_fraction")), "eta");
    cr_expect_str_eq(json_string_value(json_object_get(o, "asymptote")), "free");
    json_decref(o);
    hn h;
    open_ok(&h, "{\"promotion\": \"predicted\"}", 1, 27, 1); /* as stored before "promotion_fraction" */
    json_t *d = hn_describe(&h);
    cr_expect_str_eq(json_string_value(json_object_get(d, "promotion_fraction")), "eta");
    cr_expect_str_eq(json_string_value(json_object_get(d, "asymptote")), "free", "stored before the option");
    cr_expect_null(json_object_get(d, "noise_variance"));
    json_decref(d);
    hn_close(&h);
}

Test(asha, options_are_validated)
{
    static const struct {
        const char *options;
        const char *field;
    } bad[] = {
        {"{\"bracket\": 2}", "scheduler.options.bracket"},
        {"{\"eta\": 1}", "scheduler.options.eta"},
        {"{\"s\": 5}", "scheduler.options.s"},
        {"{\"brackets\": 6}", "scheduler.options.brackets"},
        {"{\"s\": 3, \"brackets\": 3}", "scheduler.options.brackets"},
        {"{\"max_trials\": -1}", "scheduler.options.max_trials"},
        {"{\"promotion\": \"final\"}", "scheduler.options.promotion"},
        {"{\"promotion\": true}", "scheduler.options.promotion"},
        {"{\"asymptote\": \"zero\"}", "scheduler.options.asymptote"},
        {"{\"asymptote\": 0}", "scheduler.options.asymptote"},
        {"{\"promotion_fraction\": \"half\"}", "scheduler.options.promotion_fraction"},
        {"{\"promotion_fraction\": 0.5}", "scheduler.options.promotion_fraction"},
        {"{\"type\": \"pause\"}", "scheduler.options.type"},
        {"{\"type\": 1}", "scheduler.options.type"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        hn h;
        cr_expect_eq(hn_open(&h, ASHA, bad[i].options, 1, 81, 1), BD_EINVAL, "%s accepted", bad[i].options);
        cr_expect_str_eq(h.err.field, bad[i].field, "%s", bad[i].options);
        hn_close(&h);
    }
}

/* x + 1/budget plus noise of +-0.15 drawn from the trial id (a noisy
 * curve: its rungs' rankings are partly noise) */
static int noisy_loss(const hn *h, const hn_trial *t, void *ud, double *loss)
{
    (void)h;
    (void)ud;
    double u = (double)(((uint64_t)t->id * 2654435761u) % 1000) / 1000.0;
    *loss = json_number_value(json_object_get(t->config, "x")) + 1.0 / t->budget + 0.3 * (u - 0.5);
    return HN_COMPLETED;
}

/* Returns the largest share kept by a rung below the top (describe), and
 * in *fitted, unless NULL, the rungs whose "learned" model has weights. */
static double scale_run_fitted(const char *options, long long n, hn_outcome_fn outcome, int *fitted)
{
    hn h;
    open_ok(&h, options, 1, 81, 1);
    h.check_pure = 0;
    h.outcome = outcome;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cr_assert_eq(hn_run(&h, 8, HN_RANDOM, n), HN_LIMIT);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    fprintf(stderr, "asha %s: %lld trials (8 workers, random order) in %.3f s\n", options, n,
            (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
    /* correctness: promotions resume the config's previous rung, a config
     * is promoted at most once out of each rung, and a rung promotes at most
     * as many configs as it completed (ASHA may promote more than 1/eta of
     * them: a config promoted early can later fall out of the top) */
    long long created[2][5] = {{0}}, completed[2][5] = {{0}};
    unsigned char *seen = calloc(h.n_trials + 1, 1);
    for (size_t i = 0; i < h.n_trials; i++) {
        const hn_trial *t = &h.trials[i];
        int b = t->bracket;
        created[b][t->rung]++;
        completed[b][t->rung] += t->state == HN_COMPLETED;
        cr_assert_eq(seen[t->config_id] & (1u << t->rung), 0, "config %lld twice in rung %d", (long long)t->config_id,
                     t->rung);
        seen[t->config_id] |= (unsigned char)(1u << t->rung);
        if (t->rung > 0) {
            const hn_trial *prev = hn_get(&h, t->resume_from);
            cr_assert_eq(prev->config_id, t->config_id);
            cr_assert_eq(prev->rung, t->rung - 1);
            cr_assert_eq(prev->state, HN_COMPLETED);
        }
    }
    free(seen);
    for (int b = 0; b < 2; b++)
        for (int k = 0; k + 1 < 5 - b; k++)
            cr_expect_leq(created[b][k + 1], completed[b][k], "bracket %d rung %d", b, k);
    cr_expect_gt(created[0][4], 0);
    double keep_max = 0;
    json_t *d = hn_describe(&h), *bracket, *rung;
    size_t i, j;
    json_array_foreach(json_object_get(d, "brackets"), i, bracket) json_array_foreach(json_object_get(bracket, "rungs"),
                                                                                      j, rung)
    {
        keep_max = fmax(keep_max, json_number_value(json_object_get(rung, "keep")));
        if (fitted)
            *fitted += json_is_array(json_object_get(json_object_get(rung, "model"), "weights"));
    }
    json_decref(d);
    hn_close(&h);
    return keep_max;
}

static double scale_run(const char *options, long long n, hn_outcome_fn outcome)
{
    return scale_run_fitted(options, n, outcome, NULL);
}

Test(asha, scale_100k_trials)
{
    cr_expect_eq(scale_run("{\"brackets\": 2}", 100000, NULL), 0, "no kept shares without the option");
}

/* the rung invariants hold while the kept shares move with every result
 * (a rung keeping everything still promotes each result at most once) */
Test(asha, reliability_scale_20k_trials)
{
    double keep = scale_run("{\"brackets\": 2, \"promotion_fraction\": \"reliability\"}", 20000, noisy_loss);
    cr_expect_gt(keep, 0.34, "the noise moved no rung's share above 1/3 (%g)", keep);
}

/* "promotion": "learned", a fixed vector. A config with x has loss a at
 * budget 1, b at 3 and 2b - a at 9 (= b + its fall b - a: the configs that
 * fell most from 1 to 3 end lowest), 2b - a - 0.01 at 27. Rungs at 1, 3, 9,
 * 27 (eta 3). The loss at rung 2 is then exactly linear in rung 1's
 * features (1, b, b - a): rung 1's model must find the weights (0, 1, 1),
 * and the rung's best (what it ranks first) is the config with the least
 * 2b - a, not the one with the least b. */
static double learned_a(double x)
{
    double b = 0.4 + 0.2 * fmod(13 * x, 1);
    return b + 0.3 * fmod(7 * x, 1);
}

static double learned_b(double x)
{
    return 0.4 + 0.2 * fmod(13 * x, 1);
}

static int learned_outcome(const hn *h, const hn_trial *t, void *ud, double *loss)
{
    (void)h;
    (void)ud;
    double x = json_number_value(json_object_get(t->config, "x")), a = learned_a(x), b = learned_b(x);
    *loss = t->budget <= 1 ? a : t->budget <= 3 ? b : t->budget <= 9 ? 2 * b - a : 2 * b - a - 0.01;
    return HN_COMPLETED;
}

Test(asha, learned_promotion_fits_the_weight_of_the_fall)
{
    hn h;
    open_ok(&h, "{\"promotion\": \"learned\"}", 1, 27, 1);
    h.outcome = learned_outcome;
    hn_run(&h, 1, HN_FIFO, 400);
    json_t *d = hn_describe(&h);
    cr_expect_str_eq(json_string_value(json_object_get(d, "promotion")), "learned");
    json_t *rungs = json_object_get(json_array_get(json_object_get(d, "brackets"), 0), "rungs");
    json_t *rung1 = json_array_get(rungs, 1), *model = json_object_get(rung1, "model");
    cr_assert(model, "rung 1 has no model");
    cr_expect_geq(json_integer_value(json_object_get(model, "pairs")), 8);
    json_t *w = json_object_get(model, "weights");
    cr_assert(json_is_array(w), "rung 1's model is not ready");
    static const double want[3] = {0, 1, 1};
    for (size_t i = 0; i < 3; i++)
        cr_expect(fabs(json_number_value(json_array_get(w, i)) - want[i]) < 1e-4, "weight %zu: %g, expected %g", i,
                  json_number_value(json_array_get(w, i)), want[i]);
    cr_expect_null(json_object_get(json_array_get(rungs, 0), "model"), "rung 0 has no fall to learn from");
    /* the rung's best is the least predicted 2b - a among its configs */
    double least = INFINITY, least_b = INFINITY;
    for (size_t i = 0; i < h.n_trials; i++) {
        const hn_trial *t = &h.trials[i];
        if (t->rung != 1 || t->state != HN_COMPLETED)
            continue;
        double x = json_number_value(json_object_get(t->config, "x"));
        least = fmin(least, 2 * learned_b(x) - learned_a(x));
        least_b = fmin(least_b, learned_b(x));
    }
    double best = json_number_value(json_object_get(json_object_get(rung1, "best"), "loss"));
    cr_expect(fabs(best - least) < 1e-6, "rung 1 ranks %g first, the least 2b - a is %g (least b %g)", best, least,
              least_b);
    json_decref(d);
    bd_sched *r = hn_replay(&h);
    cr_expect(hn_same_next(&h, r, 20), "replay differs");
    ASHA->destroy(r);
    hn_close(&h);
}

/* New studies' options together ("learned", its reranks at every refit,
 * with the kept shares moving): the rung invariants hold at 20,000 trials
 * with 8 workers in random order. */
Test(asha, new_study_defaults_scale_20k_trials)
{
    json_t *o = json_pack("{s:i}", "brackets", 2);
    ASHA->new_study_defaults(NULL, o);
    char *options = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    cr_expect_not_null(strstr(options, "\"learned\""), "%s", options);
    int fitted = 0;
    double keep = scale_run_fitted(options, 20000, noisy_loss, &fitted);
    cr_expect_gt(keep, 0.34, "the noise moved no rung's share above 1/3 (%g)", keep);
    cr_expect_geq(fitted, 3, "%d rungs ranked by a fitted model (of 5 with one: rungs 1-3 and 1-2)", fitted);
    free(options);
    json_decref(o);
}

/* held_bytes (what the engine's study cache counts) is on the safe side of
 * the heap ASHA really holds, and not far above it: new studies' options,
 * driven by hand (the harness's own log would be counted too), one worker
 * that reports every epoch, checked every 1,000 trials over 20,000. ASHA
 * keeps every config, so both grow with the trials. */
Test(asha, held_bytes_covers_the_heap_it_holds)
{
#if defined(__SANITIZE_ADDRESS__)
    cr_skip_test("AddressSanitizer's allocator does not report through mallinfo2");
#endif
    json_t *o = json_object();
    ASHA->new_study_defaults(NULL, o);
    char *options = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    hn h;
    open_ok(&h, options, 1, 81, 1);
    free(options);
    bd_sched *s = NULL;
    bd_err err;
    bd_observe_ctx octx = {0};
    bd_decision d = {0};
    size_t before = hn_heap_in_use();
    cr_assert_eq(ASHA->create(&h.def, &s, &err), 0);
    int64_t event = 0;
    double *resumed_at = calloc(20001, sizeof *resumed_at); /* budget each trial reached */
    for (int64_t id = 1; id <= 20000; id++) {
        bd_suggest_ctx ctx = {.trials_created = id - 1, .worker = ""};
        bd_rng_seed(&ctx.rng, 7, (uint64_t)id);
        bd_suggestion sg = {0};
        cr_assert_eq(ASHA->suggest(s, &ctx, &sg, &err), BD_SUGGEST_TRIAL);
        int64_t config_id = sg.config_id ? sg.config_id : id;
        bd_event ev = {.type = BD_EV_CREATED, .id = ++event, .trial_id = id, .config_id = config_id,
                       .budget = sg.budget, .config = sg.config, .resume_from = sg.resume_from, .extra = sg.extra,
                       .loss = NAN, .elapsed_seconds = NAN};
        cr_assert_eq(ASHA->observe(s, &octx, &ev, &d, &err), 0);
        json_decref(sg.config);
        json_decref(sg.extra);
        double quality = (double)((config_id * 2654435761u) % 1000) / 1000, loss = NAN;
        for (double e = sg.resume_from ? resumed_at[sg.resume_from] + 1 : 1; e <= sg.budget; e++) {
            loss = quality + 1 / e;
            bd_event m = {.type = BD_EV_MEASUREMENT, .id = ++event, .trial_id = id, .config_id = config_id,
                          .budget = sg.budget, .step = e, .loss = loss, .elapsed_seconds = NAN};
            cr_assert_eq(ASHA->observe(s, &octx, &m, &d, &err), 0);
        }
        resumed_at[id] = sg.budget;
        bd_event done = {.type = BD_EV_COMPLETED, .id = ++event, .trial_id = id, .config_id = config_id,
                         .budget = sg.budget, .loss = loss, .elapsed_seconds = 1};
        cr_assert_eq(ASHA->observe(s, &octx, &done, &d, &err), 0);
        if (id % 1000)
            continue;
        size_t used = hn_heap_in_use() - before - 20001 * sizeof *resumed_at, held = ASHA->held_bytes(s);
        cr_expect_geq(held + HN_HEAP_NOISE, used, "trial %lld: held_bytes %zu under the heap's growth %zu",
                      (long long)id, held, used);
        cr_expect_leq(held, 2 * used + 65536, "trial %lld: held_bytes %zu, heap grew %zu", (long long)id, held, used);
        if (id % 5000 == 0)
            fprintf(stderr, "asha: at %lld trials it holds %zu bytes of heap, held_bytes says %zu\n", (long long)id,
                    used, held);
    }
    json_t *desc = NULL;
    cr_assert_eq(ASHA->describe(s, &desc), 0);
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(desc, "held"), "trials")), 0,
                 "an ended trial is not kept");
    json_decref(desc);
    free(resumed_at);
    ASHA->destroy(s);
    hn_close(&h);
}

/* ------------------------------------------------------ "type": "stopping" */

static long long rung_field(json_t *d, int bracket, int k, const char *key)
{
    json_t *rung = json_array_get(json_object_get(json_array_get(json_object_get(d, "brackets"), bracket), "rungs"), k);
    cr_assert(rung, "no rung %d in bracket %d", k, bracket);
    return (long long)json_integer_value(json_object_get(rung, key));
}

/* eta = 3, resource 1..9: rungs at 1, 3 and 9. Six trials are handed out
 * with budget 9 and report their epoch-1 losses in turn; a result goes on
 * when it is in the top floor(n/3) of the n results its rung has, itself
 * included, or when that top is empty (n < 3: too few to judge):
 *   rung 0: 0.5 (n 1: continue), 0.4 (n 2: continue), 0.6 (top {0.4}: stop),
 *           0.3 (top {0.3}: continue), 0.45 (top {0.3}: stop),
 *           0.35 (top {0.3, 0.35}: continue);
 *   rung 1, the four left, at epoch 3: 0.3 (n 1: continue), 0.2 (n 2:
 *           continue), 0.25 (top {0.2}: stop), 0.1 (top {0.1}: continue);
 * the three left complete at epoch 9. */
Test(asha, stopping_rung_decisions_by_hand)
{
    static const double rung0[6] = {0.5, 0.4, 0.6, 0.3, 0.45, 0.35};
    static const int stop0[6] = {0, 0, 1, 0, 1, 0};
    static const double rung1[6] = {0.3, 0.2, NAN, 0.25, NAN, 0.1};
    static const int stop1[6] = {0, 0, 0, 1, 0, 0};
    hn h;
    open_ok(&h, "{\"type\": \"stopping\"}", 1, 9, 1);
    int64_t id[6];
    for (int i = 0; i < 6; i++) {
        cr_assert_eq(hn_suggest(&h, i, &id[i]), BD_SUGGEST_TRIAL);
        const hn_trial *t = hn_get(&h, id[i]);
        cr_expect_eq(t->budget, 9, "handed out once, with resource.max");
        cr_expect_eq(t->config_id, t->id, "always a new config");
        cr_expect_eq(t->resume_from, 0);
        cr_expect_eq(t->rung, 0);
    }
    for (int i = 0; i < 6; i++) {
        bd_decision d = hn_measure(&h, id[i], 1, rung0[i]);
        cr_expect_eq(d.stop, stop0[i], "rung 0, trial %d: stop %d", i + 1, d.stop);
        if (d.stop)
            cr_expect(strstr(d.reason, "not in the top 1 of the"), "reason: %s", d.reason);
    }
    for (int i = 0; i < 6; i++) /* epoch 2 reaches no rung */
        if (!stop0[i])
            cr_expect_not(hn_measure(&h, id[i], 2, rung0[i] - 0.01).stop, "trial %d stopped at epoch 2", i + 1);
    for (int i = 0; i < 6; i++)
        if (!isnan(rung1[i]))
            cr_expect_eq(hn_measure(&h, id[i], 3, rung1[i]).stop, stop1[i], "rung 1, trial %d", i + 1);
    for (int i = 0; i < 6; i++) {
        if (stop0[i] || stop1[i]) {
            cr_expect_eq(hn_get(&h, id[i])->state, HN_STOPPED, "trial %d", i + 1);
            continue;
        }
        for (int e = 4; e <= 8; e++) /* nothing is judged between rungs, nor at the top */
            cr_expect_not(hn_measure(&h, id[i], e, rung1[i] - 0.01 * e).stop, "trial %d at %d", i + 1, e);
        hn_complete(&h, id[i], 0.2 - 0.01 * i);
    }
    json_t *d = hn_describe(&h);
    cr_expect_str_eq(json_string_value(json_object_get(d, "type")), "stopping");
    static const long long want[3][5] = {/* created, completed (results), promoted, stopped, running */
                                         {6, 6, 4, 2, 0},
                                         {4, 4, 3, 1, 0},
                                         {3, 3, 0, 0, 0}};
    static const char *const keys[5] = {"created", "completed", "promoted", "stopped", "running"};
    for (int k = 0; k < 3; k++)
        for (int j = 0; j < 5; j++)
            cr_expect_eq(rung_field(d, 0, k, keys[j]), want[k][j], "rung %d %s = %lld", k, keys[j],
                         rung_field(d, 0, k, keys[j]));
    json_t *best = json_object_get(json_array_get(json_object_get(json_array_get(json_object_get(d, "brackets"), 0),
                                                                   "rungs"),
                                                  2),
                                   "best");
    cr_expect_eq(json_integer_value(json_object_get(best, "config_id")), id[5], "the top rung's best");
    json_decref(d);
    int64_t next;
    cr_assert_eq(hn_suggest(&h, 0, &next), BD_SUGGEST_TRIAL);
    cr_expect_eq(hn_get(&h, next)->config_id, next, "no promotion: a new config");
    cr_expect_eq(hn_get(&h, next)->budget, 9);
    hn_close(&h);
}

/* A measurement whose step passes several rungs is judged at the highest
 * of them alone (as Ray Tune's AsyncHyperBand), and with brackets the
 * rungs are those of the trial's bracket. */
Test(asha, stopping_judges_a_skipped_rung_at_the_highest)
{
    hn h;
    open_ok(&h, "{\"type\": \"stopping\", \"brackets\": 2}", 1, 27, 1); /* rungs 1, 3, 9, 27 and 3, 9, 27 */
    int64_t id[4];
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(hn_suggest(&h, i, &id[i]), BD_SUGGEST_TRIAL);
        cr_expect_eq(hn_get(&h, id[i])->budget, 27);
        cr_expect_eq(hn_get(&h, id[i])->bracket, i % 2);
    }
    cr_expect_not(hn_measure(&h, id[0], 1, 0.5).stop);
    cr_expect_not(hn_measure(&h, id[1], 1, 0.5).stop, "bracket 1 has no rung at 1");
    cr_expect_not(hn_measure(&h, id[2], 5, 0.9).stop, "judged at 3 only, the first result there");
    cr_expect_not(hn_measure(&h, id[2], 6, 0.8).stop);
    cr_expect_not(hn_measure(&h, id[0], 10, 0.4).stop, "judged at 9 only");
    json_t *d = hn_describe(&h);
    cr_expect_eq(rung_field(d, 0, 0, "completed"), 1, "bracket 0, rung 1: one result");
    cr_expect_eq(rung_field(d, 0, 1, "completed"), 1, "bracket 0, rung 3: the step-5 result");
    cr_expect_eq(rung_field(d, 0, 2, "completed"), 1, "bracket 0, rung 9: the step-10 result");
    cr_expect_eq(rung_field(d, 0, 3, "running"), 1, "trial 1 trains towards 27");
    cr_expect_eq(rung_field(d, 0, 2, "running"), 1, "trial 3 towards 9");
    cr_expect_eq(rung_field(d, 1, 0, "completed"), 0, "bracket 1 judged nothing");
    json_decref(d);
    hn_close(&h);
}

/* x + 1/epoch with a wobble that makes curves cross */
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

/* The style's replay property for the stopping type: drive a study live
 * (4 workers, random order, a trial in 13 failing), rebuild it from its
 * events, then the running trials' next measurements get the same answers
 * from both and the next suggestions are the same. */
Test(asha, stopping_replay_gives_identical_decisions)
{
    static const char *const options[] = {
        "{\"type\": \"stopping\"}",
        "{\"type\": \"stopping\", \"brackets\": 2, \"eta\": 2}",
        "{\"type\": \"stopping\", \"promotion\": \"learned\", \"promotion_fraction\": \"reliability\", "
        "\"asymptote\": \"nonnegative\"}",
        "{\"type\": \"stopping\", \"promotion\": \"predicted\", \"max_trials\": 70, \"sampler\": \"tpe\"}"};
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

/* "promotion" stays the default: promotions, budgets below the top. */
Test(asha, type_promotion_is_the_default)
{
    hn h;
    open_ok(&h, "{}", 1, 9, 1);
    int64_t id;
    cr_assert_eq(hn_suggest(&h, 0, &id), BD_SUGGEST_TRIAL);
    cr_expect_eq(hn_get(&h, id)->budget, 1);
    cr_expect_not(hn_measure(&h, id, 1, 9).stop);
    json_t *d = hn_describe(&h);
    cr_expect_str_eq(json_string_value(json_object_get(d, "type")), "promotion");
    cr_expect_null(json_object_get(json_array_get(json_object_get(json_array_get(json_object_get(d, "brackets"), 0),
                                                                  "rungs"),
                                                  0),
                                   "stopped"));
    json_decref(d);
    hn_close(&h);
}

/* asha's ranking rules apply to the stopping type's rungs: the late
 * bloomer of predicted_promotion_prefers_the_late_bloomer reaches rung 1
 * (budget 3) third, after a poor and the flat config: by the current loss
 * (0.45 against 0.37 and 0.93) it is not the top 1 of 3 and is stopped; by
 * the loss its curve extrapolates to at 9 it is, and goes on. */
Test(asha, stopping_ranks_by_the_promotion_option)
{
    static const double bloomer[3] = {0.90, 0.60, 0.45};
    static const double flat[3] = {0.40, 0.38, 0.37};
    static const double poor[3] = {0.95, 0.94, 0.93};
    const double *curve[3] = {bloomer, poor, flat};
    for (int predicted = 0; predicted <= 1; predicted++) {
        hn h;
        open_ok(&h, predicted ? "{\"type\": \"stopping\", \"promotion\": \"predicted\"}" : "{\"type\": \"stopping\"}", 1,
                9, 1);
        int64_t id[3];
        for (int i = 0; i < 3; i++)
            cr_assert_eq(hn_suggest(&h, i, &id[i]), BD_SUGGEST_TRIAL);
        for (int e = 1; e <= 2; e++) /* rung 0: 0.90, 0.95 (too few), then 0.40 (the best): all go on */
            for (int i = 0; i < 3; i++)
                cr_assert_not(hn_measure(&h, id[i], e, curve[i][e - 1]).stop, "trial %d, epoch %d", i + 1, e);
        cr_expect_not(hn_measure(&h, id[1], 3, poor[2]).stop);
        cr_expect_not(hn_measure(&h, id[2], 3, flat[2]).stop);
        bd_decision d = hn_measure(&h, id[0], 3, bloomer[2]);
        cr_expect_eq(d.stop, !predicted, "%s: the bloomer %s", predicted ? "predicted" : "current",
                     d.stop ? "stopped" : "went on");
        bd_sched *r = hn_replay(&h);
        cr_expect(hn_same_next(&h, r, 5), "replay differs");
        ASHA->destroy(r);
        hn_close(&h);
    }
}
