/* test_acq_space.c: the bridge from search spaces to the acquisition
 * optimiser (server/model/acq_space.c). For random points of the unit cube,
 * projecting with the compiled description must give exactly what
 * bd_space_encode(bd_space_decode(u)) gives, and the activity mask must be
 * bd_space_is_active on the decoded config: nested conditions, an integer
 * parent, log-scale integers, mixed-type choices. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>

#include "server/model/acq_space.h"
#include "server/space.h"

/* From test_space.c: nested conditions, an integer parent, a shared child. */
static const char *NESTED =
    "[{\"name\": \"algorithm\", \"type\": \"categorical\", \"choices\": [\"svm\", \"rf\", \"et\"]},"
    " {\"name\": \"kernel\", \"type\": \"categorical\", \"choices\": [\"rbf\", \"linear\"],"
    "  \"when\": {\"algorithm\": [\"svm\"]}},"
    " {\"name\": \"gamma\", \"type\": \"float\", \"low\": 1e-4, \"high\": 10, \"log\": true,"
    "  \"when\": {\"algorithm\": [\"svm\"], \"kernel\": [\"rbf\"]}},"
    " {\"name\": \"degree\", \"type\": \"int\", \"low\": 2, \"high\": 5, \"when\": {\"kernel\": [\"linear\"]}},"
    " {\"name\": \"layers\", \"type\": \"int\", \"low\": 1, \"high\": 4},"
    " {\"name\": \"units3\", \"type\": \"int\", \"low\": 8, \"high\": 64, \"when\": {\"layers\": [3, 4]}},"
    " {\"name\": \"both_trees\", \"type\": \"int\", \"low\": 2, \"high\": 9,"
    "  \"when\": {\"algorithm\": [\"rf\", \"et\"]}}]";

/* Every kind of parameter, mixed-type choices, a degenerate int. */
static const char *MIXED =
    "[{\"name\": \"lr\", \"type\": \"float\", \"low\": 1e-5, \"high\": 1, \"log\": true},"
    " {\"name\": \"momentum\", \"type\": \"float\", \"low\": -0.5, \"high\": 0.99},"
    " {\"name\": \"layers\", \"type\": \"int\", \"low\": 1, \"high\": 8},"
    " {\"name\": \"batch\", \"type\": \"int\", \"low\": 16, \"high\": 1024, \"log\": true},"
    " {\"name\": \"mode\", \"type\": \"categorical\", \"choices\": [\"a\", 3, true, 2.5, false]},"
    " {\"name\": \"tiny\", \"type\": \"float\", \"low\": 1e-300, \"high\": 1e300, \"log\": true,"
    "  \"when\": {\"mode\": [\"a\", 3.0]}},"
    " {\"name\": \"width\", \"type\": \"int\", \"low\": -3, \"high\": 3, \"when\": {\"layers\": [2, 4, 6, 8]}},"
    " {\"name\": \"fixed\", \"type\": \"int\", \"low\": 7, \"high\": 7}]";

static int dummy_score(void *ctx, size_t n, const double *U, double *out)
{
    (void)ctx;
    (void)U;
    for (size_t i = 0; i < n; i++)
        out[i] = 0;
    return 0;
}

static void check_space(const char *text, uint64_t seed)
{
    json_error_t e;
    json_t *params = json_loads(text, 0, &e);
    bd_space *space;
    bd_acq_space *as;
    bd_acq_problem p = {0};
    bd_rng rng;
    cr_assert_not_null(params, "%s", e.text);
    cr_assert_eq(bd_space_parse(params, &space, NULL), 0);
    cr_assert_eq(bd_acq_space_new(space, &as, NULL), 0);
    bd_acq_space_problem(as, &p);
    p.score = dummy_score;
    cr_assert_eq(p.d, bd_space_size(space));
    cr_assert_eq(bd_acq_check(&p, NULL), 0);
    bd_rng_seed(&rng, seed, 0);
    for (int rep = 0; rep < 3000; rep++) {
        double u[16], enc[16];
        unsigned char mask[16];
        json_t *config;
        for (size_t j = 0; j < p.d; j++) /* also outside [0, 1] and on the edges */
            u[j] = rep % 10 == 0 ? floor(3 * bd_rng_uniform(&rng)) / 2 : -0.2 + 1.4 * bd_rng_uniform(&rng);
        config = bd_space_decode(space, u);
        cr_assert_eq(bd_space_encode(space, config, enc), 0);
        bd_acq_project(&p, u, mask);
        for (size_t j = 0; j < p.d; j++) {
            cr_assert(fabs(u[j] - enc[j]) <= 1e-12, "rep %d, coordinate %zu: projected %.17g, encoded %.17g", rep, j,
                      u[j], enc[j]);
            cr_assert_eq(mask[j], bd_space_is_active(space, j, config), "rep %d, coordinate %zu", rep, j);
        }
        json_decref(config);
    }
    bd_acq_space_free(as);
    bd_space_free(space);
    json_decref(params);
}

Test(acq_space, nested_conditions_match_the_space)
{
    check_space(NESTED, 1);
}

Test(acq_space, mixed_types_match_the_space)
{
    check_space(MIXED, 2);
}

static bd_space *floats(int n)
{
    json_t *params = json_array();
    bd_space *space;
    for (int i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "p%d", i);
        json_array_append_new(
            params, json_pack("{s:s, s:s, s:f, s:f}", "name", name, "type", "float", "low", 0.0, "high", 1.0));
    }
    cr_assert_eq(bd_space_parse(params, &space, NULL), 0);
    json_decref(params);
    return space;
}

/* Past Sobol's 40 dimensions (Latin hypercube columns take over) up to
 * BD_ACQ_MAX_DIM; one more is a 400 naming "parameters". */
Test(acq_space, takes_up_to_the_max_parameters_and_refuses_more)
{
    bd_space *ok = floats(BD_ACQ_MAX_DIM), *wide = floats(BD_ACQ_MAX_DIM + 1);
    bd_acq_space *as = (bd_acq_space *)1;
    bd_err err;
    cr_assert_eq(bd_acq_space_new(ok, &as, NULL), 0);
    bd_acq_space_free(as);
    cr_assert_eq(bd_acq_space_new(wide, &as, &err), BD_EINVAL);
    cr_assert_null(as);
    cr_assert_str_eq(err.field, "parameters");
    bd_space_free(ok);
    bd_space_free(wide);
}
