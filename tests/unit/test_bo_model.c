/* test_bo_model.c: the outer GP shared by gp_ucb and bo_bos
 * (server/sched/bo_model.c): the refit points, the purity rule (a model
 * rebuilt after every observation equals one rebuilt once, and the model of
 * the first n equals a fresh model of those n), diverged values, the
 * fidelity column, and GP-BUCB moving a proposal away from a running trial.
 * The schedulers' own behaviour is tested in test_gp_ucb.c and
 * test_bo_bos.c. */
#include <criterion/criterion.h>
#include <gsl/gsl_errno.h>
#include <math.h>
#include <string.h>

#include "server/sched/bo_model.h"

static void setup(void)
{
    gsl_set_error_handler_off();
}

TestSuite(bo_model, .init = setup);

typedef struct fixture {
    bd_space *space;
    json_t *options;
    bd_study_def def;
} fixture;

static void open_def(fixture *f, const char *params)
{
    bd_err err;
    json_t *p = json_loads(params, 0, NULL);
    cr_assert_not_null(p);
    cr_assert_eq(bd_space_parse(p, &f->space, &err), 0, "%s", err.message);
    json_decref(p);
    f->options = json_object();
    f->def = (bd_study_def){.id = 1,
                            .name = "t",
                            .space = f->space,
                            .metric = "loss",
                            .r_min = 1,
                            .r_max = 1,
                            .options = f->options,
                            .seed = 42};
}

static void close_def(fixture *f)
{
    bd_space_free(f->space);
    json_decref(f->options);
}

static bd_bo_model *new_model(const fixture *f, int fidelity)
{
    bd_bo_model_options o = {.name = "test", .fidelity = fidelity, .salt = 0x1234};
    bd_bo_model *m = NULL;
    bd_err err;
    cr_assert_eq(bd_bo_ucb_read(f->options, &o.ucb, &err), 0);
    cr_assert_eq(bd_bo_start_cost_read(f->options, &o.ucb, &err), 0, "%s", err.message);
    cr_assert_eq(bd_bo_model_new(&f->def, &o, &m, &err), 0, "%s", err.message);
    return m;
}

static const char *const space2 = "[{\"name\": \"x\", \"type\": \"float\", \"low\": 0, \"high\": 1},"
                                  " {\"name\": \"y\", \"type\": \"float\", \"low\": 0, \"high\": 1}]";

/* Observation i of a fixed sequence: a point of the unit square and a bowl's value. */
static void observation(size_t i, double x[2], double *loss)
{
    x[0] = fmod(0.618034 * (double)(i + 1), 1.0);
    x[1] = fmod(0.414214 * (double)(i + 3), 1.0);
    *loss = (x[0] - 0.7) * (x[0] - 0.7) + 2 * (x[1] - 0.2) * (x[1] - 0.2);
}

static char *describe(const bd_bo_model *m)
{
    json_t *j = bd_bo_model_describe(m);
    char *s = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(17) | JSON_ENCODE_ANY);
    json_decref(j);
    return s;
}

/* Do a and b predict the same means and variances, bit for bit? */
static int same_predictions(const bd_gp *a, const bd_gp *b)
{
    double X[10], mu_a[5], var_a[5], mu_b[5], var_b[5];
    bd_err err;
    for (size_t i = 0; i < 10; i++)
        X[i] = (double)(i * 7 % 10) / 10.0;
    cr_assert_eq(bd_gp_predict(a, 5, X, mu_a, var_a, 1, &err), 0);
    cr_assert_eq(bd_gp_predict(b, 5, X, mu_b, var_b, 1, &err), 0);
    return memcmp(mu_a, mu_b, sizeof mu_a) == 0 && memcmp(var_a, var_b, sizeof var_a) == 0;
}

Test(bo_model, refit_points_follow_the_refit_schedule)
{
    /* Refits at 1, then every 10 up to 51, then every max(10, s / 5). */
    static const size_t n[] = {0, 1, 10, 11, 50, 51, 60, 61, 72, 73, 86, 87, 103, 104};
    static const size_t want[] = {0, 1, 1, 11, 41, 51, 51, 61, 61, 73, 73, 87, 87, 104};
    for (size_t i = 0; i < sizeof n / sizeof *n; i++)
        cr_expect_eq(bd_bo_model_refit_point(n[i]), want[i], "refit_point(%zu) = %zu, want %zu", n[i],
                     bd_bo_model_refit_point(n[i]), want[i]);
}

Test(bo_model, rebuilt_after_every_observation_equals_rebuilt_once)
{
    fixture f;
    open_def(&f, space2);
    bd_bo_model *live = new_model(&f, 0), *replay = new_model(&f, 0);
    for (size_t i = 0; i < 25; i++) { /* refits at 1, 11 and 21 */
        double x[2], loss;
        observation(i, x, &loss);
        bd_bo_model_add(live, x, 1.0, loss);
        bd_bo_model_add(replay, x, 1.0, loss);
        bd_bo_model_rebuild(live);
    }
    bd_bo_model_rebuild(replay);
    cr_assert_not_null(bd_bo_model_gp(live));
    cr_expect_eq(bd_bo_model_error(live), 0);
    cr_expect(bd_bo_model_current(live, 25) && !bd_bo_model_current(live, 24));
    char *a = describe(live), *b = describe(replay);
    cr_expect_str_eq(a, b);
    cr_expect(strstr(a, "\"fitted_at\":21"), "%s", a);
    free(a);
    free(b);
    cr_expect(same_predictions(bd_bo_model_gp(live), bd_bo_model_gp(replay)));
    bd_bo_model_free(live);
    bd_bo_model_free(replay);
    close_def(&f);
}

Test(bo_model, model_of_the_first_n_equals_a_fresh_model_of_them)
{
    fixture f;
    open_def(&f, space2);
    bd_bo_model *all = new_model(&f, 0);
    for (size_t i = 0; i < 30; i++) {
        double x[2], loss;
        observation(i, x, &loss);
        bd_bo_model_add(all, x, 1.0, loss);
    }
    bd_bo_model_rebuild(all);
    char *before = describe(all);
    static const size_t counts[] = {14, 21, 25}; /* a refit point of its own, the current one, between */
    for (size_t c = 0; c < 3; c++) {
        bd_bo_model *fresh = new_model(&f, 0);
        for (size_t i = 0; i < counts[c]; i++) {
            double x[2], loss;
            observation(i, x, &loss);
            bd_bo_model_add(fresh, x, 1.0, loss);
        }
        bd_bo_model_rebuild(fresh);
        bd_gp *gp = NULL;
        bd_err err;
        cr_assert_eq(bd_bo_model_at(all, counts[c], &gp, &err), 0, "%s", err.message);
        cr_assert_not_null(gp);
        cr_expect_eq(bd_gp_size(gp), counts[c]);
        cr_expect(same_predictions(gp, bd_bo_model_gp(fresh)), "model of the first %zu differs", counts[c]);
        bd_gp_free(gp);
        bd_bo_model_free(fresh);
    }
    char *after = describe(all);
    cr_expect_str_eq(before, after, "bd_bo_model_at changed the current model or fit");
    free(before);
    free(after);
    bd_bo_model_free(all);
    close_def(&f);
}

Test(bo_model, diverged_values_count_as_the_worst_finite_one)
{
    fixture f;
    open_def(&f, space2);
    bd_bo_model *none = new_model(&f, 0), *m = new_model(&f, 0);
    const double x[3][2] = {{0.1, 0.1}, {0.5, 0.5}, {0.9, 0.2}};
    bd_bo_model_add(none, x[0], 1.0, INFINITY);
    bd_bo_model_rebuild(none);
    cr_expect_null(bd_bo_model_gp(none), "no finite value: no model");
    cr_expect_eq(bd_bo_model_error(none), 0);
    cr_expect(bd_bo_model_current(none, 1));
    bd_bo_model_free(none);
    bd_bo_model_add(m, x[0], 1.0, 0.3);
    bd_bo_model_add(m, x[1], 1.0, INFINITY);
    bd_bo_model_add(m, x[2], 1.0, 0.1);
    bd_bo_model_rebuild(m);
    const bd_gp *gp = bd_bo_model_gp(m);
    cr_assert_not_null(gp);
    cr_assert_eq(bd_gp_size(gp), 3);
    cr_expect_eq(bd_gp_y(gp, 1), 0.3);
    cr_expect_eq(bd_gp_y(gp, 2), 0.1);
    bd_bo_model_free(m);
    close_def(&f);
}

Test(bo_model, fidelity_column_and_proposals_at_full_fidelity)
{
    fixture f;
    open_def(&f, space2);
    bd_bo_model *m = new_model(&f, 1);
    for (size_t i = 0; i < 12; i++) {
        double x[2], loss;
        observation(i, x, &loss);
        bd_bo_model_add(m, x, i % 2 ? 1.0 : 0.25, loss + (i % 2 ? 0 : 0.5));
    }
    bd_bo_model_rebuild(m);
    const bd_gp *gp = bd_bo_model_gp(m);
    cr_assert_not_null(gp);
    cr_expect_eq(bd_gp_dim(gp), 3);
    cr_expect_eq(bd_gp_x(gp, 0)[2], 0.25);
    cr_expect_eq(bd_gp_x(gp, 1)[2], 1.0);
    json_t *d = bd_bo_model_describe(m);
    cr_expect_eq(json_array_size(json_object_get(d, "lengthscales")), 3);
    json_decref(d);
    cr_expect_str_eq(bd_bo_model_multiplier_name(m), "paper");

    /* Deterministic given the rng; a running trial at the proposal pushes
     * the next one away (GP-BUCB). */
    double u1[2], u2[2], u3[2];
    bd_rng r1, r2, r3;
    bd_err err;
    bd_rng_seed(&r1, 5, 1);
    bd_rng_seed(&r2, 5, 1);
    bd_rng_seed(&r3, 5, 1);
    cr_assert_eq(bd_bo_model_propose(m, 13, 0, NULL, NULL, 0, &r1, u1, &err), 0, "%s", err.message);
    cr_assert_eq(bd_bo_model_propose(m, 13, 0, NULL, NULL, 0, &r2, u2, &err), 0, "%s", err.message);
    cr_expect(memcmp(u1, u2, sizeof u1) == 0);
    const double *running[1] = {u1};
    cr_assert_eq(bd_bo_model_propose(m, 13, 1, running, NULL, 0, &r3, u3, &err), 0, "%s", err.message);
    for (size_t j = 0; j < 2; j++)
        cr_expect(u1[j] >= 0 && u1[j] <= 1 && u3[j] >= 0 && u3[j] <= 1);
    cr_expect_gt(hypot(u1[0] - u3[0], u1[1] - u3[1]), 1e-3, "the running trial's point was proposed again");
    bd_bo_model_free(m);
    close_def(&f);
}

/* gp_ucb.c seeds its acquisition search with these points. Point 0 is the
 * best here and point 3 repeats it: the 4 starts are 4 distinct points in
 * order of value (the loop gp_ucb.c had before never compared a later
 * start with point 0, and gave x0, x0, x0, x0 for this vector). */
Test(bo_model, start_points_are_distinct_when_point_0_is_the_best)
{
    fixture f;
    open_def(&f, space2);
    bd_bo_model *m = new_model(&f, 0);
    const double x[5][2] = {{0.1, 0.1}, {0.5, 0.5}, {0.9, 0.2}, {0.1, 0.1}, {0.3, 0.7}};
    const double loss[5] = {0.05, 0.3, 0.2, 0.08, 0.4};
    for (size_t i = 0; i < 5; i++)
        bd_bo_model_add(m, x[i], 1.0, loss[i]);
    bd_bo_model_rebuild(m);
    cr_assert_not_null(bd_bo_model_gp(m));
    double starts[4 * 2];
    cr_assert_eq(bd_bo_model_best_points(m, 4, starts), 4);
    static const size_t want[4] = {0, 2, 1, 4};
    for (size_t k = 0; k < 4; k++)
        cr_expect(starts[2 * k] == x[want[k]][0] && starts[2 * k + 1] == x[want[k]][1], "start %zu: (%g, %g), want x%zu",
                  k, starts[2 * k], starts[2 * k + 1], want[k]);
    double few[4 * 2];
    cr_expect_eq(bd_bo_model_best_points(m, 2, few), 2);
    cr_expect(few[0] == 0.1 && few[2] == 0.9, "the best two distinct points");
    bd_bo_model_free(m);
    close_def(&f);
}

/* cost_aware: the cost model (log seconds per unit over the d coordinates)
 * follows the same purity rule: rebuilt after every observation or once,
 * it is the same, refits included; observations without seconds are left
 * out of it, and below 3 costed observations there is none. */
Test(bo_model, cost_model_rebuilt_after_every_observation_equals_rebuilt_once)
{
    fixture f;
    open_def(&f, space2);
    json_object_set_new(f.options, "acquisition", json_string("logei"));
    json_object_set_new(f.options, "cost_aware", json_true());
    bd_bo_model *live = new_model(&f, 0), *replay = new_model(&f, 0);
    size_t costed = 0;
    for (size_t i = 0; i < 25; i++) {
        double x[2], loss;
        observation(i, x, &loss);
        double seconds = i % 5 == 2 ? NAN : exp(3 * x[0]) * 4; /* 4 units of budget */
        costed += !isnan(seconds);
        bd_bo_model_add_costed(live, x, 1.0, loss, seconds, 4);
        bd_bo_model_add_costed(replay, x, 1.0, loss, seconds, 4);
        bd_bo_model_rebuild(live);
        if (i == 2) { /* 2 costs so far: no cost model yet */
            json_t *d = bd_bo_model_describe(live);
            cr_expect(json_is_null(json_object_get(d, "cost_model")), "a cost model from 2 costs");
            json_decref(d);
        }
    }
    bd_bo_model_rebuild(replay);
    char *a = describe(live), *b = describe(replay);
    cr_expect_str_eq(a, b);
    json_t *d = bd_bo_model_describe(live);
    const json_t *cm = json_object_get(d, "cost_model");
    cr_assert(json_is_object(cm), "%s", a);
    cr_expect_eq(json_integer_value(json_object_get(cm, "training_points")), (json_int_t)costed);
    cr_expect_eq(json_integer_value(json_object_get(cm, "fitted_at")), 21);
    /* the cost grows with x only: its length scale in x is the shorter */
    const json_t *ls = json_object_get(cm, "lengthscales");
    cr_expect_lt(json_real_value(json_array_get(ls, 0)), json_real_value(json_array_get(ls, 1)), "%s", a);
    json_decref(d);
    free(a);
    free(b);
    bd_bo_model_free(live);
    bd_bo_model_free(replay);
    close_def(&f);
}

/* "warp": "quantile": the model holds the normal scores of the losses'
 * ranks, Phi^-1((rank + 1/2) / n) (a diverged run ranks with the worst
 * finite loss, ties share their mean rank), so the best observation keeps
 * the lowest value and one huge loss does not stretch the scale. Fixed
 * vector for n = 5: ranks 2, 3.5, 0, 1, 3.5. */
Test(bo_model, quantile_warp_fits_normal_scores_of_ranks)
{
    fixture f;
    open_def(&f, space2);
    json_object_set_new(f.options, "warp", json_string("quantile"));
    bd_bo_model *m = new_model(&f, 0);
    static const double loss[] = {0.3, 1e6, 0.1, 0.2, INFINITY};
    static const double want[] = {0.0, 0.8416212335729143, -1.2815515655446004, -0.5244005127080407,
                                  0.8416212335729143};
    for (size_t i = 0; i < 5; i++) {
        double x[2] = {0.1 + 0.2 * (double)i, 0.5};
        bd_bo_model_add(m, x, 1.0, loss[i]);
    }
    bd_bo_model_rebuild(m);
    const bd_gp *gp = bd_bo_model_gp(m);
    cr_assert_not_null(gp);
    double mean, scale;
    bd_gp_standardization(gp, &mean, &scale);
    for (size_t k = 0; k < bd_gp_size(gp); k++) {
        size_t i = bd_gp_id(gp, k);
        double y = bd_gp_y(gp, k);
        if (fabs(y - want[i]) > 1e-9 && fabs(mean + scale * y - want[i]) > 1e-9)
            cr_expect(0, "observation %zu: held %.17g (standardised by %g, %g), want %.17g", i, y, mean, scale,
                      want[i]);
    }
    bd_bo_model_free(m);
    close_def(&f);
}
