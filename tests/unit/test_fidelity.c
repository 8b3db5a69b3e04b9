/* test_fidelity.c: the measured trust of a study's low fidelities
 * (server/sched/fidelity.c) against vectors computed by hand (a brute-force
 * Kendall tau-b in python), and the decisions it drives inside asha
 * ("fidelity": "measured"): on curves whose first epochs rank the final
 * losses backwards every new config ends up trained in full; on curves whose
 * first epochs rank them exactly, new configs go to the most aggressive
 * bracket; a replay decides alike. */
#include <criterion/criterion.h>
#include <math.h>

#include "sched_harness.h"
#include "server/sched/fidelity.h"

extern const struct bd_sched_ops bd_sched_asha;

#define ASHA (&bd_sched_asha)

Test(fidelity, tau_b_matches_a_brute_force_vector)
{
    /* x = 1..6, y = [2, 1, 4, 3, 6, 5]: 12 concordant, 3 discordant pairs: tau 0.6 */
    static const double y[] = {2, 1, 4, 3, 6, 5};
    bd_fid_tau t = {0};
    cr_expect(isnan(bd_fid_tau_value(&t)));
    for (int i = 0; i < 6; i++)
        bd_fid_tau_add(&t, i + 1, y[i]);
    cr_expect_float_eq(bd_fid_tau_value(&t), 0.6, 1e-12);
    bd_fid_tau_free(&t);
    /* ties on both sides: tau-b 0.15 (python, brute force) */
    static const double x2[] = {0.5, 0.5, 0.2, 0.9, 0.1, 0.7, 0.3}, y2[] = {0.3, 0.4, 0.4, 0.8, 0.2, 0.1, 0.5};
    for (int i = 0; i < 7; i++)
        bd_fid_tau_add(&t, x2[i], y2[i]);
    cr_expect_float_eq(bd_fid_tau_value(&t), 0.15, 1e-12);
    bd_fid_tau_free(&t);
    /* a diverged (NaN) loss ranks with +INFINITY, last */
    bd_fid_tau_add(&t, 1, 1);
    bd_fid_tau_add(&t, 2, 2);
    bd_fid_tau_add(&t, NAN, INFINITY);
    cr_expect_float_eq(bd_fid_tau_value(&t), 1.0, 1e-12);
    bd_fid_tau_free(&t);
}

Test(fidelity, standard_error_and_trust)
{
    cr_expect_float_eq(bd_fid_tau_se(6), 0.35486043161491804, 1e-12);
    cr_expect_float_eq(bd_fid_tau_se(7), 0.3170632437371139, 1e-12);
    cr_expect(isnan(bd_fid_tau_se(1)));
    /* trust sin(pi/2 (tau - se)) */
    cr_expect_float_eq(bd_fid_trust(0.6, bd_fid_tau_se(6), 6), 0.37561876022339324, 1e-12);
    cr_expect_eq(bd_fid_trust(0.3, bd_fid_tau_se(6), 6), 0); /* the lower bound below 0 */
    cr_expect_eq(bd_fid_trust(1.0, 0.1, BD_FID_MIN_PAIRS - 1), -1); /* too few pairs: unknown */
    cr_expect_eq(bd_fid_trust(NAN, 0.1, 50), -1);
    cr_expect_float_eq(bd_fid_trust(1.0, 0, 50), 1.0, 1e-12);
    /* the share a rung keeps */
    cr_expect_float_eq(bd_fid_keep(3, 1), 1.0 / 3, 1e-12);
    cr_expect_float_eq(bd_fid_keep(3, 0), 1.0, 1e-12);
    cr_expect_float_eq(bd_fid_keep(3, -1), 1.0 / 3, 1e-12);
    cr_expect_float_eq(bd_fid_keep(3, 0.5), 1 / sqrt(3), 1e-12);
}

Test(fidelity, bracket_scores_by_hand)
{
    /* levels 1, 3, 9, 50, eta 3 (python, fidelity.h's formula) */
    static const double b[] = {1, 3, 9, 50};
    static const double all1[] = {1, 1, 1}, all0[] = {0, 0, 0}, mixed[] = {0.2, 0.5, 0.9}, unknown[] = {-1, -1, -1};
    static const double e_all1[] = {0.25961538461538464, 0.10465116279069768, 0.04411764705882353, 0.02};
    static const double e_mixed[] = {0.01982283136742369, 0.03720421755014003, 0.03864172262730794, 0.02};
    for (int s = 0; s <= 3; s++) {
        cr_expect_float_eq(bd_fid_score(3, 3, b, all1, s), e_all1[s], 1e-12, "s %d", s);
        cr_expect_float_eq(bd_fid_score(3, 3, b, unknown, s), e_all1[s], 1e-12, "s %d", s);
        cr_expect_float_eq(bd_fid_score(3, 3, b, all0, s), 0.02, 1e-12, "s %d", s);
        cr_expect_float_eq(bd_fid_score(3, 3, b, mixed, s), e_mixed[s], 1e-12, "s %d", s);
    }
}

Test(fidelity, plan_by_hand)
{
    static const double b[] = {1, 3, 9, 50};
    static const double unknown[] = {-1, -1, -1}, all0[] = {0, 0, 0}, mixed[] = {0.2, 0.5, 0.9},
                        good[] = {0.8, 0.9, 0.95};
    int chosen;
    double phi;
    /* nothing measured: the paper's ASHA, half the budget owed to full training */
    cr_expect_eq(bd_fid_plan(3, 3, 0, b, unknown, 0, 0, &chosen, &phi), 0);
    cr_expect_eq(chosen, 0);
    cr_expect_float_eq(phi, 0.5, 1e-12);
    cr_expect_eq(bd_fid_plan(3, 3, 0, b, unknown, 10, 30, &chosen, &phi), 3); /* 10 < 15: full */
    cr_expect_eq(bd_fid_plan(3, 3, 0, b, unknown, 15, 30, &chosen, &phi), 0);
    /* no level ranks: every config trained in full (ties go to the full bracket) */
    cr_expect_eq(bd_fid_plan(3, 3, 0, b, all0, 1000, 1000, &chosen, &phi), 3);
    cr_expect_eq(chosen, 3);
    cr_expect_float_eq(phi, 1, 1e-12);
    /* only the upper levels rank: bracket 2 (score 0.0386 above 0.0372 and 0.02), full share 1 - 0.9 */
    cr_expect_eq(bd_fid_plan(3, 3, 0, b, mixed, 15, 100, &chosen, &phi), 2);
    cr_expect_eq(chosen, 2);
    cr_expect_float_eq(phi, 0.1, 1e-12);
    cr_expect_eq(bd_fid_plan(3, 3, 0, b, mixed, 9, 100, &chosen, &phi), 3);
    /* the first level ranks well: bracket 0, full share 0.2; s_min bounds the choice */
    cr_expect_eq(bd_fid_plan(3, 3, 0, b, good, 25, 100, &chosen, &phi), 0);
    cr_expect_float_eq(phi, 1 - 0.8, 1e-12);
    cr_expect_eq(bd_fid_plan(3, 3, 0, b, good, 19, 100, &chosen, &phi), 3);
    cr_expect_eq(bd_fid_plan(3, 3, 1, b, good, 25, 100, &chosen, &phi), 1);
}

static void fill(bd_fid_tau *t, const double *x, const double *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        bd_fid_tau_add(t, x[i], y[i]);
}

/* "fidelity": "winners": the keep share from the winners' worst rank at the
 * level over n + 1, clamped to [1/eta, 1] (vectors worked by hand). */
Test(fidelity, winner_keep_by_hand)
{
    static const double up[] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, down[] = {9, 8, 7, 6, 5, 4, 3, 2, 1};
    bd_fid_tau t = {0};
    fill(&t, up, up, 4);
    cr_expect(isnan(bd_fid_winner_keep(&t, 3, 1))); /* 4 pairs: unknown */
    cr_expect_eq(bd_fid_winner_trust(&t, 3, 1), -1);
    bd_fid_tau_free(&t);
    /* a perfect ranking: winners (3 of 9 one level below the top) ranked 1..3, 3/10 < 1/3: the paper's cut */
    fill(&t, up, up, 9);
    cr_expect_float_eq(bd_fid_winner_keep(&t, 3, 1), 1.0 / 3, 1e-12);
    cr_expect_float_eq(bd_fid_winner_trust(&t, 3, 1), 1, 1e-12);
    bd_fid_tau_free(&t);
    /* backwards: the best (the one winner three levels down: floor(9/27) = 0 -> 1) ranks 9th: 9/10 */
    fill(&t, down, up, 9);
    cr_expect_float_eq(bd_fid_winner_keep(&t, 3, 3), 0.9, 1e-12);
    cr_expect_float_eq(bd_fid_winner_trust(&t, 3, 3), log(10.0 / 9) / log(3), 1e-12);
    bd_fid_tau_free(&t);
    /* the best at x 0.3 ranks 3rd, the second best at x 0.5 ranks 5th of 6 */
    static const double x[] = {0.3, 0.5, 0.1, 0.2, 0.4, 0.6}, y[] = {1, 2, 3, 4, 5, 6};
    fill(&t, x, y, 6);
    cr_expect_float_eq(bd_fid_winner_keep(&t, 3, 2), 3.0 / 7, 1e-12); /* floor(6/9) = 0 -> the best alone */
    cr_expect_float_eq(bd_fid_winner_keep(&t, 3, 1), 5.0 / 7, 1e-12); /* floor(6/3) = 2 winners */
    cr_expect_float_eq(bd_fid_winner_trust(&t, 3, 1), log(7.0 / 5) / log(3), 1e-12);
    bd_fid_tau_free(&t);
    /* ties at the level count ahead: all equal, the winner ranks last (5/6); NaN ranks as +INFINITY */
    static const double flat[] = {2, 2, 2, 2, 2}, nan_first[] = {NAN, 1, 2, 3, 4};
    fill(&t, flat, up, 5);
    cr_expect_float_eq(bd_fid_winner_keep(&t, 3, 1), 5.0 / 6, 1e-12);
    bd_fid_tau_free(&t);
    fill(&t, nan_first, up, 5);
    cr_expect_float_eq(bd_fid_winner_keep(&t, 3, 1), 5.0 / 6, 1e-12);
    bd_fid_tau_free(&t);
    /* equal final losses: the first to arrive is the winner */
    static const double same_y[] = {1, 1, 5, 6, 7}, x2[] = {4, 1, 2, 3, 5};
    fill(&t, x2, same_y, 5);
    cr_expect_float_eq(bd_fid_winner_keep(&t, 3, 2), 4.0 / 6, 1e-12);
    bd_fid_tau_free(&t);
}

Test(fidelity, plan_winners_owes_full_training_one_in_n_plus_1)
{
    static const double b[] = {1, 3, 9, 50};
    static const double perfect[] = {1, 1, 1}, unknown[] = {-1, -1, -1}, all0[] = {0, 0, 0},
                        mixed[] = {0.2, 0.5, 0.9};
    int chosen;
    double phi;
    /* every level ranks perfectly: bd_fid_plan owes full training nothing, "winners" 1 / (n + 1) */
    cr_expect_eq(bd_fid_plan(3, 3, 0, b, perfect, 0, 100, &chosen, &phi), 0);
    cr_expect_float_eq(phi, 0, 1e-12);
    cr_expect_eq(bd_fid_plan_winners(3, 3, 0, b, perfect, 5, 100, 9, &chosen, &phi), 3); /* 5 < 10 */
    cr_expect_eq(chosen, 0);
    cr_expect_float_eq(phi, 0.1, 1e-12);
    cr_expect_eq(bd_fid_plan_winners(3, 3, 0, b, perfect, 15, 100, 9, &chosen, &phi), 0);
    /* nothing measured: the paper's bracket 0 (unknown counts as 1); once anything is spent, the next config
     * trains in full */
    cr_expect_eq(bd_fid_plan_winners(3, 3, 0, b, unknown, 0, 0, 0, &chosen, &phi), 0);
    cr_expect_float_eq(phi, 1, 1e-12);
    cr_expect_eq(bd_fid_plan_winners(3, 3, 0, b, unknown, 0, 1, 0, &chosen, &phi), 3);
    cr_expect_eq(bd_fid_plan_winners(3, 3, 0, b, unknown, 50, 120, 1, &chosen, &phi), 3); /* 50 < 60 */
    cr_expect_float_eq(phi, 0.5, 1e-12);
    cr_expect_eq(bd_fid_plan_winners(3, 3, 0, b, unknown, 50, 90, 1, &chosen, &phi), 0);
    /* no level ranks: every config in full */
    cr_expect_eq(bd_fid_plan_winners(3, 3, 0, b, all0, 1000, 1000, 20, &chosen, &phi), 3);
    cr_expect_float_eq(phi, 1, 1e-12);
    /* only the upper levels rank: bracket 2 as bd_fid_plan chooses, the share 1/5 with 4 trained in full */
    cr_expect_eq(bd_fid_plan_winners(3, 3, 0, b, mixed, 15, 100, 4, &chosen, &phi), 3);
    cr_expect_eq(chosen, 2);
    cr_expect_float_eq(phi, 0.2, 1e-12);
    cr_expect_eq(bd_fid_plan_winners(3, 3, 0, b, mixed, 25, 100, 4, &chosen, &phi), 2);
}

/* Early epochs rank the configs backwards: at epoch 1 the loss is x, at the
 * top (27) it is 1 - x, linear in between. */
static double backwards_curve(const hn *h, const hn_trial *t, int epoch, void *ud)
{
    (void)h;
    (void)ud;
    double x = json_number_value(json_object_get(t->config, "x"));
    return x + (1 - 2 * x) * (epoch - 1) / 26.0;
}

/* The same over 81 epochs. */
static double backwards_curve81(const hn *h, const hn_trial *t, int epoch, void *ud)
{
    (void)h;
    (void)ud;
    double x = json_number_value(json_object_get(t->config, "x"));
    return x + (1 - 2 * x) * (epoch - 1) / 80.0;
}

/* Early epochs rank them exactly: x + 1/epoch. */
static double faithful_curve(const hn *h, const hn_trial *t, int epoch, void *ud)
{
    (void)h;
    (void)ud;
    double x = json_number_value(json_object_get(t->config, "x"));
    return x + 1.0 / epoch;
}

/* New configs (rung-0 trials) among trials [from, to) in bracket s. */
static long long new_in_bracket(const hn *h, size_t from, size_t to, int s, long long *all)
{
    long long n = 0;
    *all = 0;
    for (size_t i = from; i < to && i < h->n_trials; i++)
        if (h->trials[i].rung == 0) {
            ++*all;
            n += h->trials[i].bracket == s;
        }
    return n;
}

static const json_t *level(json_t *d, int i)
{
    return json_array_get(json_object_get(json_object_get(d, "fidelity_measured"), "levels"), (size_t)i);
}

Test(fidelity, backwards_first_epochs_end_in_full_training)
{
    static const char *const types[] = {"promotion", "stopping", "promotion", "stopping"};
    for (int k = 0; k < 4; k++) {
        char options[128];
        snprintf(options, sizeof options, "{\"fidelity\": \"%s\", \"type\": \"%s\"}",
                 k < 2 ? "measured" : "winners", types[k]);
        hn h;
        cr_assert_eq(hn_open(&h, ASHA, options, 1, 27, 1), 0, "%s", h.err.message);
        /* "winners" trains in full only 1 / (n + 1) of the budget until the
         * levels are measured, so the cheap bracket's configs started before
         * then are promoted through the widened cuts first: a longer run */
        hn_run_epochs(&h, 1, HN_FIFO, k < 2 ? 300 : 900, backwards_curve, NULL, NULL);
        json_t *d = hn_describe(&h);
        for (int i = 0; i < 3; i++) {
            const json_t *lv = level(d, i);
            cr_assert(lv, "%s: no level %d", types[k], i);
            cr_expect_gt(json_integer_value(json_object_get(lv, "pairs")), 10, "%s: level %d", types[k], i);
            cr_expect_lt(json_number_value(json_object_get(lv, "tau")), 0, "%s: level %d", types[k], i);
            if (k < 2) {
                cr_expect_eq(json_number_value(json_object_get(lv, "trust")), 0, "%s: level %d", types[k], i);
                cr_expect_float_eq(json_number_value(json_object_get(lv, "keep")), 1, 1e-12, "%s", types[k]);
            } else { /* winners: the best ranks last or next to last at every level */
                cr_expect_lt(json_number_value(json_object_get(lv, "trust")), 0.1, "%s: level %d", types[k], i);
                cr_expect_gt(json_number_value(json_object_get(lv, "keep")), 0.9, "%s", types[k]);
            }
        }
        json_t *m = json_object_get(d, "fidelity_measured");
        cr_expect_eq(json_integer_value(json_object_get(m, "chosen_bracket")), 3, "%s", types[k]);
        long long all, full = new_in_bracket(&h, h.n_trials - 60, h.n_trials, 3, &all);
        cr_expect_gt(all, 0);
        cr_expect_eq(full, all, "%s: %lld of the last %lld new configs trained in full", types[k], full, all);
        json_decref(d);
        hn_close(&h);
    }
}

Test(fidelity, faithful_first_epochs_go_to_the_aggressive_bracket)
{
    hn h;
    cr_assert_eq(hn_open(&h, ASHA, "{\"fidelity\": \"measured\"}", 1, 27, 1), 0, "%s", h.err.message);
    hn_run_epochs(&h, 2, HN_FIFO, 600, faithful_curve, NULL, NULL);
    json_t *d = hn_describe(&h);
    json_t *m = json_object_get(d, "fidelity_measured");
    cr_expect_eq(json_integer_value(json_object_get(m, "chosen_bracket")), 0);
    const json_t *lv = level(d, 0);
    cr_expect_float_eq(json_number_value(json_object_get(lv, "tau")), 1, 1e-12);
    double trust = json_number_value(json_object_get(lv, "trust"));
    char *text = json_dumps(json_object_get(d, "fidelity_measured"), JSON_COMPACT);
    cr_log_info("%s", text);
    free(text);
    cr_expect_gt(trust, 0.85); /* 8 pairs, all concordant: sin(pi/2 (1 - 0.289)) */
    double spent = json_number_value(json_object_get(m, "spent"));
    double full_spent = json_number_value(json_object_get(m, "spent_full"));
    /* the full-fidelity bracket gets about its share 1 - trust of the budget, no more */
    cr_expect_lt(full_spent / spent, 1 - trust + 0.1, "full-fidelity share %g, trust %g", full_spent / spent, trust);
    long long all, aggressive = new_in_bracket(&h, h.n_trials / 2, h.n_trials, 0, &all);
    cr_expect_gt(aggressive * 10, all * 8, "%lld of %lld new configs in bracket 0", aggressive, all);
    json_decref(d);
    hn_close(&h);
}

/* "winners" where early epochs rank exactly: every level keeps 1/eta (the
 * paper's cut), new configs go to bracket 0, and full training gets its
 * floor 1 / (n + 1) of the budget, not more than it needs. */
Test(fidelity, winners_faithful_first_epochs_cut_as_the_paper)
{
    hn h;
    cr_assert_eq(hn_open(&h, ASHA, "{\"fidelity\": \"winners\"}", 1, 27, 1), 0, "%s", h.err.message);
    hn_run_epochs(&h, 2, HN_FIFO, 600, faithful_curve, NULL, NULL);
    json_t *d = hn_describe(&h);
    json_t *m = json_object_get(d, "fidelity_measured");
    cr_expect_str_eq(json_string_value(json_object_get(d, "fidelity")), "winners");
    cr_expect_eq(json_integer_value(json_object_get(m, "chosen_bracket")), 0);
    long long pairs = json_integer_value(json_object_get(level(d, 0), "pairs"));
    cr_expect_geq(pairs, BD_FID_MIN_PAIRS);
    for (int i = 0; i < 3; i++) {
        cr_expect_float_eq(json_number_value(json_object_get(level(d, i), "trust")), 1, 1e-12, "level %d", i);
        cr_expect_float_eq(json_number_value(json_object_get(level(d, i), "keep")), 1.0 / 3, 1e-12, "level %d", i);
    }
    cr_expect_float_eq(json_number_value(json_object_get(m, "full_share")), 1.0 / (double)(pairs + 1), 1e-12);
    double spent = json_number_value(json_object_get(m, "spent"));
    double full_spent = json_number_value(json_object_get(m, "spent_full"));
    cr_expect_lt(full_spent / spent, 0.5, "full-fidelity share %g after %lld pairs", full_spent / spent, pairs);
    long long all, aggressive = new_in_bracket(&h, h.n_trials / 2, h.n_trials, 0, &all);
    cr_expect_gt(aggressive * 10, all * 8, "%lld of %lld new configs in bracket 0", aggressive, all);
    json_decref(d);
    hn_close(&h);
}

static int fail_every_11th(int64_t id)
{
    return id % 11 == 0;
}

static double mixed_curve(const hn *h, const hn_trial *t, int epoch, void *ud)
{
    (void)h;
    (void)ud;
    double x = json_number_value(json_object_get(t->config, "x"));
    return 0.5 * x + 0.5 / epoch + 0.1 * sin(11.0 * x * epoch + (double)t->id);
}

/* The style's replay property: drive a study live (4 workers, random
 * order, a trial in 11 failing), rebuild it from its events, then the next
 * suggestions are the same, and so are the answers to the running trials'
 * next measurements. */
Test(fidelity, replay_gives_identical_decisions)
{
    static const char *const options[] = {
        "{\"fidelity\": \"measured\"}",
        "{\"fidelity\": \"measured\", \"type\": \"stopping\", \"sampler\": \"tpe\"}",
        "{\"fidelity\": \"measured\", \"promotion\": \"learned\", \"promotion_fraction\": \"reliability\", "
        "\"asymptote\": \"nonnegative\", \"sampler\": \"tpe\", \"s\": 1}",
        "{\"fidelity\": \"winners\", \"promotion\": \"learned\", \"promotion_fraction\": \"reliability\", "
        "\"asymptote\": \"nonnegative\", \"sampler\": \"tpe\"}",
        "{\"fidelity\": \"winners\", \"type\": \"stopping\"}"};
    for (size_t k = 0; k < sizeof options / sizeof options[0]; k++)
        for (long long stop = 40; stop < 400; stop += 170) {
            hn h;
            cr_assert_eq(hn_open(&h, ASHA, options[k], 1, 27, 1), 0, "%s", h.err.message);
            hn_run_epochs(&h, 4, HN_RANDOM, stop, mixed_curve, NULL, fail_every_11th);
            hn_expect_replay_answers_alike(&h, mixed_curve, NULL, options[k], stop);
            hn_close(&h);
        }
}

Test(fidelity, options_are_validated)
{
    static const struct {
        const char *options, *field;
    } bad[] = {
        {"{\"fidelity\": \"bogus\"}", "scheduler.options.fidelity"},
        {"{\"fidelity\": 1}", "scheduler.options.fidelity"},
        {"{\"fidelity\": \"measured\", \"brackets\": 2}", "scheduler.options.brackets"},
        {"{\"fidelity\": \"measured\", \"s\": 1, \"brackets\": 2}", "scheduler.options.brackets"},
        {"{\"fidelity\": \"winners\", \"brackets\": 1}", "scheduler.options.brackets"},
        {"{\"fidelity\": \"Winners\"}", "scheduler.options.fidelity"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        hn h;
        cr_expect_neq(hn_open(&h, ASHA, bad[i].options, 1, 27, 1), 0, "%s accepted", bad[i].options);
        cr_expect_str_eq(h.err.field, bad[i].field, "%s", bad[i].options);
        hn_close(&h);
    }
    /* every bracket from s up, spelled out, is accepted; and the full-fidelity bracket alone */
    hn h;
    cr_expect_eq(hn_open(&h, ASHA, "{\"fidelity\": \"measured\", \"s\": 1, \"brackets\": 3}", 1, 27, 1), 0, "%s",
                 h.err.message);
    hn_close(&h);
    cr_expect_eq(hn_open(&h, ASHA, "{\"fidelity\": \"measured\", \"s\": 3}", 1, 27, 1), 0, "%s", h.err.message);
    hn_run_epochs(&h, 2, HN_FIFO, 30, faithful_curve, NULL, NULL);
    for (size_t i = 0; i < h.n_trials; i++)
        cr_expect_eq(h.trials[i].budget, 27);
    hn_close(&h);
}

/* held_bytes counts what "measured" adds: each full-fidelity config's level
 * losses and every level's pairs. */
Test(fidelity, held_bytes_covers_the_heap_it_holds)
{
#if defined(__SANITIZE_ADDRESS__)
    cr_skip_test("AddressSanitizer's allocator does not report through mallinfo2");
#endif
    hn h;
    cr_assert_eq(hn_open(&h, ASHA, "{\"fidelity\": \"measured\"}", 1, 81, 1), 0, "%s", h.err.message);
    hn_run_epochs(&h, 4, HN_RANDOM, 3000, backwards_curve81, NULL, NULL);
    json_t *d = hn_describe(&h);
    cr_expect_gt(json_integer_value(json_object_get(level(d, 0), "pairs")), 100);
    json_decref(d);
    hn_expect_held_bytes(&h, "asha, fidelity measured");
    hn_close(&h);
}
