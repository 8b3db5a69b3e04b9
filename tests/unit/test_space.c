/* test_space.c: search spaces (server/space.c): parse validation with exact
 * error fields, canonical JSON, sampling distributions and determinism,
 * conditional activity, config validation, the unit-hypercube encoding and
 * Rising Bandits' sub-spaces. Statistical checks use fixed seeds, so they are
 * deterministic; their tolerances are several standard errors wide. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "server/space.h"

#define N_DRAWS 20000

/* A CASH space as Rising Bandits sees it: one arm per algorithm. */
static const char *CASH =
    "[{\"name\": \"algorithm\", \"type\": \"categorical\", \"choices\": [\"svm\", \"rf\", \"knn\"]},"
    " {\"name\": \"scaler\", \"type\": \"categorical\", \"choices\": [\"none\", \"standard\", \"minmax\"]},"
    " {\"name\": \"C\", \"type\": \"float\", \"low\": 0.01, \"high\": 100, \"log\": true,"
    "  \"when\": {\"algorithm\": [\"svm\"]}},"
    " {\"name\": \"gamma\", \"type\": \"float\", \"low\": 0.0001, \"high\": 10, \"log\": true,"
    "  \"when\": {\"algorithm\": [\"svm\"]}},"
    " {\"name\": \"n_estimators\", \"type\": \"int\", \"low\": 10, \"high\": 500, \"log\": true,"
    "  \"when\": {\"algorithm\": [\"rf\"]}},"
    " {\"name\": \"max_depth\", \"type\": \"int\", \"low\": 1, \"high\": 20,"
    "  \"when\": {\"algorithm\": [\"rf\"]}},"
    " {\"name\": \"k\", \"type\": \"int\", \"low\": 1, \"high\": 50, \"when\": {\"algorithm\": [\"knn\"]}}]";

/* Nested conditions: kernel exists only for svm; gamma needs svm and rbf;
 * degree names only kernel, so it is active only while kernel is; units3
 * hangs off an int parent; both_trees is shared by two algorithms. */
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

/* Every kind of parameter, for encode/decode. */
static const char *MIXED =
    "[{\"name\": \"lr\", \"type\": \"float\", \"low\": 1e-5, \"high\": 1, \"log\": true},"
    " {\"name\": \"momentum\", \"type\": \"float\", \"low\": -0.5, \"high\": 0.99},"
    " {\"name\": \"layers\", \"type\": \"int\", \"low\": 1, \"high\": 8},"
    " {\"name\": \"batch\", \"type\": \"int\", \"low\": 16, \"high\": 1024, \"log\": true},"
    " {\"name\": \"mode\", \"type\": \"categorical\", \"choices\": [\"a\", 3, true, 2.5, false]},"
    " {\"name\": \"tiny\", \"type\": \"float\", \"low\": 1e-300, \"high\": 1e300, \"log\": true,"
    "  \"when\": {\"mode\": [\"a\", 3]}},"
    " {\"name\": \"width\", \"type\": \"int\", \"low\": -3, \"high\": 3, \"when\": {\"layers\": [2, 4, 6, 8]}},"
    " {\"name\": \"fixed\", \"type\": \"int\", \"low\": 7, \"high\": 7}]";

static json_t *J(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &e);
    cr_assert_not_null(v, "bad JSON in test: %s (%s)", text, e.text);
    return v;
}

static bd_space *space_of(const char *text)
{
    json_t *params = J(text);
    bd_space *s = NULL;
    bd_err err = {0};
    int rc = bd_space_parse(params, &s, &err);
    cr_assert_eq(rc, 0, "parse failed: %s %s", err.field, err.message);
    cr_assert_not_null(s);
    json_decref(params);
    return s;
}

/* Parses text expecting BD_EINVAL; returns the error. */
static bd_err parse_fails(const char *text)
{
    json_t *params = J(text);
    bd_space *s = (bd_space *)1;
    bd_err err = {0};
    int rc = bd_space_parse(params, &s, &err);
    cr_assert_eq(rc, BD_EINVAL, "expected BD_EINVAL for %s, got %d", text, rc);
    cr_assert_eq(err.code, BD_EINVAL);
    cr_assert_null(s, "*out must be NULL on error");
    json_decref(params);
    return err;
}

static int keys_are(const json_t *config, const char *const *names, size_t n)
{
    if (json_object_size(config) != n)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!json_object_get(config, names[i]))
            return 0;
    return 1;
}

/* ------------------------------------------------------------------ parse */

Test(space_parse, accepts_the_contract_example)
{
    bd_space *s = space_of("[{\"name\":\"lr\",\"type\":\"float\",\"low\":1e-5,\"high\":1,\"log\":true},"
                           " {\"name\":\"layers\",\"type\":\"int\",\"low\":1,\"high\":8},"
                           " {\"name\":\"algo\",\"type\":\"categorical\",\"choices\":[\"svm\",\"rf\"]},"
                           " {\"name\":\"C\",\"type\":\"float\",\"low\":0.01,\"high\":100,\"log\":true,"
                           "  \"when\":{\"algo\":[\"svm\"]}}]");
    const bd_param *p;
    json_t *svm = json_string("svm");

    cr_assert_eq(bd_space_size(s), 4);
    p = bd_space_param(s, 0);
    cr_expect_str_eq(p->name, "lr");
    cr_expect_eq(p->type, BD_PARAM_FLOAT);
    cr_expect_eq(p->low, 1e-5);
    cr_expect_eq(p->high, 1.0);
    cr_expect(p->log);
    cr_expect_eq(p->n_conds, 0);
    cr_expect_null(p->choices);
    p = bd_space_param(s, 1);
    cr_expect_eq(p->type, BD_PARAM_INT);
    cr_expect_eq(p->low, 1.0);
    cr_expect_eq(p->high, 8.0);
    cr_expect_not(p->log);
    p = bd_space_param(s, 2);
    cr_expect_eq(p->type, BD_PARAM_CATEGORICAL);
    cr_expect_eq(json_array_size(p->choices), 2);
    p = bd_space_param(s, 3);
    cr_expect_eq(p->n_conds, 1);
    cr_expect_eq(p->conds[0].parent, 2);
    cr_expect_eq(json_array_size(p->conds[0].values), 1);
    cr_expect(json_equal(json_array_get(p->conds[0].values, 0), svm));

    cr_expect_eq(bd_space_find(s, "lr"), 0);
    cr_expect_eq(bd_space_find(s, "C"), 3);
    cr_expect_eq(bd_space_find(s, "c"), -1);
    cr_expect_eq(bd_space_find(s, "nope"), -1);
    cr_expect_eq(bd_space_find(s, NULL), -1);
    json_decref(svm);
    bd_space_free(s);
}

/* Parameters are copied into the test worker (a separate process image with
 * its own addresses), so cases hold their text inline, not as pointers. */
struct bad_case {
    char json[640];
    char field[64];
    char message[128]; /* exact, or "" to check the field only */
};

ParameterizedTestParameters(space_parse, rejects_with_exact_field)
{
    static struct bad_case cases[] = {
        /* the list itself */
        {"{}", "parameters", "must be an array of parameter objects"},
        {"null", "parameters", ""},
        {"\"lr\"", "parameters", ""},
        {"[1]", "parameters[0]", "must be an object"},
        {"[{\"name\":\"a\",\"type\":\"int\",\"low\":0,\"high\":1}, []]", "parameters[1]", ""},
        /* name */
        {"[{\"type\":\"float\",\"low\":0,\"high\":1}]", "parameters[0].name", "is required"},
        {"[{\"name\":3,\"type\":\"float\",\"low\":0,\"high\":1}]", "parameters[0].name", "must be a string"},
        {"[{\"name\":\"\",\"type\":\"float\",\"low\":0,\"high\":1}]", "parameters[0].name", "must not be empty"},
        {"[{\"name\":\"a\",\"type\":\"int\",\"low\":0,\"high\":1},"
         " {\"name\":\"b\",\"type\":\"int\",\"low\":0,\"high\":1},"
         " {\"name\":\"c\",\"type\":\"int\",\"low\":0,\"high\":1},"
         " {\"name\":\"b\",\"type\":\"float\",\"low\":0,\"high\":1}]",
         "parameters[3].name", "duplicates parameters[1].name (\"b\")"},
        /* type */
        {"[{\"name\":\"x\",\"low\":0,\"high\":1}]", "parameters[0].type", "is required"},
        {"[{\"name\":\"x\",\"type\":\"double\",\"low\":0,\"high\":1}]", "parameters[0].type",
         "must be \"float\", \"int\" or \"categorical\""},
        {"[{\"name\":\"x\",\"type\":1,\"low\":0,\"high\":1}]", "parameters[0].type", ""},
        {"[{\"name\":\"x\",\"type\":\"Float\",\"low\":0,\"high\":1}]", "parameters[0].type", ""},
        /* unknown or inapplicable keys */
        {"[{\"name\":\"x\",\"type\":\"float\",\"low\":0,\"high\":1,\"step\":0.1}]", "parameters[0].step", ""},
        {"[{\"name\":\"x\",\"type\":\"float\",\"low\":0,\"high\":1,\"default\":0.5}]", "parameters[0].default", ""},
        {"[{\"name\":\"x\",\"type\":\"float\",\"low\":0,\"high\":1,\"choices\":[1]}]", "parameters[0].choices",
         "is not allowed for a float parameter"},
        {"[{\"name\":\"x\",\"type\":\"categorical\",\"choices\":[1],\"low\":0}]", "parameters[0].low",
         "is not allowed for a categorical parameter"},
        {"[{\"name\":\"x\",\"type\":\"categorical\",\"choices\":[1],\"log\":false}]", "parameters[0].log", ""},
        /* bounds */
        {"[{\"name\":\"x\",\"type\":\"float\",\"high\":1}]", "parameters[0].low", "is required"},
        {"[{\"name\":\"x\",\"type\":\"float\",\"low\":0}]", "parameters[0].high", "is required"},
        {"[{\"name\":\"x\",\"type\":\"float\",\"low\":\"0\",\"high\":1}]", "parameters[0].low", "must be a number"},
        {"[{\"name\":\"x\",\"type\":\"float\",\"low\":0,\"high\":null}]", "parameters[0].high", ""},
        {"[{\"name\":\"x\",\"type\":\"float\",\"low\":true,\"high\":1}]", "parameters[0].low", ""},
        {"[{\"name\":\"x\",\"type\":\"float\",\"low\":5,\"high\":5}]", "parameters[0].high",
         "must be greater than low (5)"},
        {"[{\"name\":\"a\",\"type\":\"int\",\"low\":0,\"high\":1},"
         " {\"name\":\"b\",\"type\":\"int\",\"low\":0,\"high\":1},"
         " {\"name\":\"c\",\"type\":\"float\",\"low\":0.25,\"high\":0.125}]",
         "parameters[2].high", "must be greater than low (0.25)"},
        {"[{\"name\":\"x\",\"type\":\"int\",\"low\":5,\"high\":4}]", "parameters[0].high", "must be at least low (5)"},
        {"[{\"name\":\"x\",\"type\":\"int\",\"low\":1.5,\"high\":4}]", "parameters[0].low", "must be an integer"},
        {"[{\"name\":\"x\",\"type\":\"int\",\"low\":1,\"high\":4.01}]", "parameters[0].high", ""},
        {"[{\"name\":\"x\",\"type\":\"int\",\"low\":1,\"high\":1e16}]", "parameters[0].high",
         "must be between -9007199254740992 and 9007199254740992"},
        {"[{\"name\":\"x\",\"type\":\"int\",\"low\":-9007199254740993,\"high\":0}]", "parameters[0].low", ""},
        {"[{\"name\":\"x\",\"type\":\"float\",\"low\":-1.7e308,\"high\":1.7e308}]", "parameters[0].high",
         "is too far from low: high - low is not a finite number"},
        /* log */
        {"[{\"name\":\"x\",\"type\":\"float\",\"low\":0,\"high\":1,\"log\":true}]", "parameters[0].low",
         "must be greater than 0 when log is true"},
        {"[{\"name\":\"x\",\"type\":\"float\",\"low\":-1,\"high\":1,\"log\":true}]", "parameters[0].low", ""},
        {"[{\"name\":\"x\",\"type\":\"int\",\"low\":0,\"high\":10,\"log\":true}]", "parameters[0].low", ""},
        {"[{\"name\":\"x\",\"type\":\"float\",\"low\":1,\"high\":2,\"log\":\"yes\"}]", "parameters[0].log",
         "must be true or false"},
        {"[{\"name\":\"x\",\"type\":\"float\",\"low\":1,\"high\":2,\"log\":1}]", "parameters[0].log", ""},
        /* choices */
        {"[{\"name\":\"x\",\"type\":\"categorical\"}]", "parameters[0].choices", "is required"},
        {"[{\"name\":\"x\",\"type\":\"categorical\",\"choices\":{\"a\":1}}]", "parameters[0].choices",
         "must be an array"},
        {"[{\"name\":\"x\",\"type\":\"categorical\",\"choices\":\"a\"}]", "parameters[0].choices", ""},
        {"[{\"name\":\"x\",\"type\":\"categorical\",\"choices\":[]}]", "parameters[0].choices", "must not be empty"},
        {"[{\"name\":\"x\",\"type\":\"categorical\",\"choices\":[\"a\",null]}]", "parameters[0].choices[1]",
         "must be a string, number or boolean"},
        {"[{\"name\":\"x\",\"type\":\"categorical\",\"choices\":[\"a\",\"b\",[1]]}]", "parameters[0].choices[2]", ""},
        {"[{\"name\":\"x\",\"type\":\"categorical\",\"choices\":[{\"k\":1}]}]", "parameters[0].choices[0]", ""},
        {"[{\"name\":\"a\",\"type\":\"int\",\"low\":0,\"high\":1},"
         " {\"name\":\"x\",\"type\":\"categorical\",\"choices\":[\"a\",\"b\",\"c\",\"b\"]}]",
         "parameters[1].choices[3]", "duplicates choices[1] (\"b\")"},
        {"[{\"name\":\"x\",\"type\":\"categorical\",\"choices\":[1,2,1.0]}]", "parameters[0].choices[2]",
         "duplicates choices[0] (1)"},
        {"[{\"name\":\"x\",\"type\":\"categorical\",\"choices\":[0,-0.0]}]", "parameters[0].choices[1]", ""},
        {"[{\"name\":\"x\",\"type\":\"categorical\",\"choices\":[true,false,true]}]", "parameters[0].choices[2]", ""},
        {"[{\"name\":\"x\",\"type\":\"categorical\",\"choices\":[1152921504606846976]}]", "parameters[0].choices[0]",
         ""},
        /* when */
        {"[{\"name\":\"a\",\"type\":\"categorical\",\"choices\":[\"s\"]},"
         " {\"name\":\"x\",\"type\":\"int\",\"low\":0,\"high\":1,\"when\":[\"a\"]}]",
         "parameters[1].when", "must be an object mapping parent names to arrays of values"},
        {"[{\"name\":\"a\",\"type\":\"categorical\",\"choices\":[\"s\"]},"
         " {\"name\":\"x\",\"type\":\"int\",\"low\":0,\"high\":1,\"when\":{\"algo\":[\"s\"]}}]",
         "parameters[1].when.algo", "names no parameter (there is no \"algo\")"},
        {"[{\"name\":\"x\",\"type\":\"int\",\"low\":0,\"high\":1,\"when\":{\"algo\":[\"s\"]}},"
         " {\"name\":\"algo\",\"type\":\"categorical\",\"choices\":[\"s\"]}]",
         "parameters[0].when.algo", "names parameter \"algo\", declared after this one (parents must come first)"},
        {"[{\"name\":\"x\",\"type\":\"categorical\",\"choices\":[\"s\"],\"when\":{\"x\":[\"s\"]}}]",
         "parameters[0].when.x", "a parameter cannot depend on itself"},
        {"[{\"name\":\"lr\",\"type\":\"float\",\"low\":0,\"high\":1},"
         " {\"name\":\"x\",\"type\":\"int\",\"low\":0,\"high\":1,\"when\":{\"lr\":[0.5]}}]",
         "parameters[1].when.lr", "names float parameter \"lr\"; a parent must be categorical or int"},
        {"[{\"name\":\"a\",\"type\":\"int\",\"low\":0,\"high\":1},"
         " {\"name\":\"b\",\"type\":\"int\",\"low\":0,\"high\":1},"
         " {\"name\":\"algo\",\"type\":\"categorical\",\"choices\":[\"svm\",\"rf\"]},"
         " {\"name\":\"c\",\"type\":\"int\",\"low\":0,\"high\":1},"
         " {\"name\":\"x\",\"type\":\"int\",\"low\":0,\"high\":1,\"when\":{\"algo\":[\"svm\",\"xgb\"]}}]",
         "parameters[4].when.algo", "\"xgb\" is not one of the choices of \"algo\""},
        {"[{\"name\":\"algo\",\"type\":\"categorical\",\"choices\":[\"svm\",1]},"
         " {\"name\":\"x\",\"type\":\"int\",\"low\":0,\"high\":1,\"when\":{\"algo\":[true]}}]",
         "parameters[1].when.algo", ""},
        {"[{\"name\":\"algo\",\"type\":\"categorical\",\"choices\":[\"svm\"]},"
         " {\"name\":\"x\",\"type\":\"int\",\"low\":0,\"high\":1,\"when\":{\"algo\":[]}}]",
         "parameters[1].when.algo", "must be a non-empty array of values of \"algo\""},
        {"[{\"name\":\"algo\",\"type\":\"categorical\",\"choices\":[\"svm\"]},"
         " {\"name\":\"x\",\"type\":\"int\",\"low\":0,\"high\":1,\"when\":{\"algo\":\"svm\"}}]",
         "parameters[1].when.algo", ""},
        {"[{\"name\":\"algo\",\"type\":\"categorical\",\"choices\":[\"svm\",\"rf\"]},"
         " {\"name\":\"x\",\"type\":\"int\",\"low\":0,\"high\":1,\"when\":{\"algo\":[\"svm\",\"svm\"]}}]",
         "parameters[1].when.algo", "lists \"svm\" more than once"},
        {"[{\"name\":\"layers\",\"type\":\"int\",\"low\":1,\"high\":8},"
         " {\"name\":\"x\",\"type\":\"int\",\"low\":0,\"high\":1,\"when\":{\"layers\":[9]}}]",
         "parameters[1].when.layers", "9 is not an integer in [1, 8], the range of \"layers\""},
        {"[{\"name\":\"layers\",\"type\":\"int\",\"low\":1,\"high\":8},"
         " {\"name\":\"x\",\"type\":\"int\",\"low\":0,\"high\":1,\"when\":{\"layers\":[2.5]}}]",
         "parameters[1].when.layers", ""},
        {"[{\"name\":\"layers\",\"type\":\"int\",\"low\":1,\"high\":8},"
         " {\"name\":\"x\",\"type\":\"int\",\"low\":0,\"high\":1,\"when\":{\"layers\":[\"3\"]}}]",
         "parameters[1].when.layers", ""},
        {"[{\"name\":\"layers\",\"type\":\"int\",\"low\":1,\"high\":8},"
         " {\"name\":\"x\",\"type\":\"int\",\"low\":0,\"high\":1,\"when\":{\"layers\":[3,3.0]}}]",
         "parameters[1].when.layers", "lists 3.0 more than once"},
        {"[{\"name\":\"algo\",\"type\":\"categorical\",\"choices\":[\"svm\"]},"
         " {\"name\":\"layers\",\"type\":\"int\",\"low\":1,\"high\":8},"
         " {\"name\":\"x\",\"type\":\"int\",\"low\":0,\"high\":1,"
         "  \"when\":{\"algo\":[\"svm\"],\"nope\":[1]}}]",
         "parameters[2].when.nope", ""},
        /* a later error in an otherwise valid list is still found */
        {"[{\"name\":\"algo\",\"type\":\"categorical\",\"choices\":[\"svm\",\"rf\"]},"
         " {\"name\":\"C\",\"type\":\"float\",\"low\":0.01,\"high\":100,\"log\":true,"
         "  \"when\":{\"algo\":[\"svm\"]}},"
         " {\"name\":\"n\",\"type\":\"int\",\"low\":1,\"high\":10,\"lg\":true}]",
         "parameters[2].lg", ""},
    };
    return cr_make_param_array(struct bad_case, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct bad_case *c, space_parse, rejects_with_exact_field)
{
    bd_err err = parse_fails(c->json);
    cr_expect_str_eq(err.field, c->field, "input %s: field \"%s\", message \"%s\"", c->json, err.field, err.message);
    cr_expect_neq(err.message[0], '\0', "input %s: empty message", c->json);
    if (c->message[0])
        cr_expect_str_eq(err.message, c->message, "input %s: got \"%s\"", c->json, err.message);
}

Test(space_parse, name_length_limit_and_nul)
{
    char text[512], name[128];
    bd_err err;
    bd_space *s;
    json_t *params;
    int rc;

    memset(name, 'n', 100);
    name[100] = '\0';
    snprintf(text, sizeof text, "[{\"name\":\"%s\",\"type\":\"int\",\"low\":0,\"high\":1}]", name);
    s = space_of(text);
    cr_expect_str_eq(bd_space_param(s, 0)->name, name);
    bd_space_free(s);

    snprintf(text, sizeof text, "[{\"name\":\"%sn\",\"type\":\"int\",\"low\":0,\"high\":1}]", name);
    err = parse_fails(text);
    cr_expect_str_eq(err.field, "parameters[0].name");

    params = json_loads("[{\"name\":\"a\\u0000b\",\"type\":\"int\",\"low\":0,\"high\":1}]", JSON_ALLOW_NUL, NULL);
    cr_assert_not_null(params);
    s = (bd_space *)1;
    rc = bd_space_parse(params, &s, &err);
    cr_expect_eq(rc, BD_EINVAL);
    cr_expect_null(s);
    cr_expect_str_eq(err.field, "parameters[0].name");
    cr_expect_str_eq(err.message, "must not contain NUL characters");
    json_decref(params);
}

Test(space_parse, null_err_is_allowed)
{
    json_t *params = J("[{\"name\":\"x\",\"type\":\"float\",\"low\":2,\"high\":1}]");
    bd_space *s = NULL;
    cr_expect_eq(bd_space_parse(params, &s, NULL), BD_EINVAL);
    cr_expect_null(s);
    json_decref(params);
}

Test(space_parse, accepts_edge_values)
{
    /* int low == high, integral reals as int bounds, an empty "when", mixed
     * scalar choices where 1 and true differ, a subnormal log bound. */
    bd_space *s = space_of("[{\"name\":\"one\",\"type\":\"int\",\"low\":3,\"high\":3},"
                           " {\"name\":\"r\",\"type\":\"int\",\"low\":1.0,\"high\":8.0,\"log\":false,\"when\":{}},"
                           " {\"name\":\"c\",\"type\":\"categorical\",\"choices\":[1,true,\"1\",\"\",1.5,false,0]},"
                           " {\"name\":\"big\",\"type\":\"int\",\"low\":-9007199254740992,\"high\":9007199254740992},"
                           " {\"name\":\"sub\",\"type\":\"float\",\"low\":5e-324,\"high\":1e308,\"log\":true}]");
    cr_expect_eq(bd_space_size(s), 5);
    cr_expect_eq(bd_space_param(s, 1)->n_conds, 0);
    cr_expect_eq(bd_space_param(s, 1)->low, 1.0);
    cr_expect_eq(json_array_size(bd_space_param(s, 2)->choices), 7);
    bd_space_free(s);
}

Test(space_parse, input_is_not_modified_or_borrowed)
{
    json_t *params = J(CASH);
    json_t *copy = json_deep_copy(params);
    bd_space *s = NULL;
    cr_assert_eq(bd_space_parse(params, &s, NULL), 0);
    cr_expect(json_equal(params, copy));
    json_decref(params); /* the space must not depend on it */
    cr_expect_str_eq(bd_space_param(s, 2)->name, "C");
    cr_expect_str_eq(json_string_value(json_array_get(bd_space_param(s, 0)->choices, 1)), "rf");
    json_decref(copy);
    bd_space_free(s);
}

Test(space_parse, free_is_null_safe)
{
    bd_space_free(NULL);
}

/* ---------------------------------------------------------------- to_json */

Test(space_json, canonical_form_makes_defaults_explicit)
{
    bd_space *s = space_of("[{\"name\":\"lr\",\"type\":\"float\",\"low\":1e-5,\"high\":1,\"log\":true},"
                           " {\"name\":\"layers\",\"type\":\"int\",\"low\":1.0,\"high\":8},"
                           " {\"name\":\"algo\",\"type\":\"categorical\",\"choices\":[\"svm\",\"rf\",1]},"
                           " {\"name\":\"C\",\"type\":\"float\",\"low\":0.01,\"high\":100,\"log\":true,"
                           "  \"when\":{\"algo\":[\"svm\", 1.0]}},"
                           " {\"name\":\"w\",\"type\":\"float\",\"low\":0,\"high\":1,\"when\":{\"layers\":[2.0, 3]}},"
                           " {\"name\":\"u\",\"type\":\"int\",\"low\":0,\"high\":1,\"when\":{}}]");
    json_t *expected = J("[{\"name\":\"lr\",\"type\":\"float\",\"low\":1e-5,\"high\":1.0,\"log\":true},"
                         " {\"name\":\"layers\",\"type\":\"int\",\"low\":1,\"high\":8,\"log\":false},"
                         " {\"name\":\"algo\",\"type\":\"categorical\",\"choices\":[\"svm\",\"rf\",1]},"
                         " {\"name\":\"C\",\"type\":\"float\",\"low\":0.01,\"high\":100.0,\"log\":true,"
                         "  \"when\":{\"algo\":[\"svm\", 1]}},"
                         " {\"name\":\"w\",\"type\":\"float\",\"low\":0.0,\"high\":1.0,\"log\":false,"
                         "  \"when\":{\"layers\":[2, 3]}},"
                         " {\"name\":\"u\",\"type\":\"int\",\"low\":0,\"high\":1,\"log\":false}]");
    json_t *got = bd_space_to_json(s);
    char *text = json_dumps(got, JSON_COMPACT);
    /* json_equal distinguishes 1 from 1.0, so this also checks the number types. */
    cr_expect(json_equal(got, expected), "got %s", text);
    free(text);
    json_decref(got);
    json_decref(expected);
    bd_space_free(s);
}

Test(space_json, round_trips_through_parse)
{
    const char *spaces[] = {CASH, NESTED, MIXED};
    for (size_t k = 0; k < 3; k++) {
        bd_space *s = space_of(spaces[k]), *again = NULL;
        json_t *first = bd_space_to_json(s), *second;
        bd_err err = {0};
        cr_assert_eq(bd_space_parse(first, &again, &err), 0, "space %zu: %s %s", k, err.field, err.message);
        second = bd_space_to_json(again);
        cr_expect(json_equal(first, second), "space %zu", k);
        cr_expect_eq(bd_space_size(again), bd_space_size(s));
        for (size_t i = 0; i < bd_space_size(s); i++) {
            const bd_param *a = bd_space_param(s, i), *b = bd_space_param(again, i);
            cr_expect_str_eq(a->name, b->name);
            cr_expect_eq(a->type, b->type);
            cr_expect_eq(a->low, b->low);
            cr_expect_eq(a->high, b->high);
            cr_expect_eq(a->log, b->log);
            cr_expect_eq(a->n_conds, b->n_conds);
        }
        json_decref(first);
        json_decref(second);
        bd_space_free(again);
        bd_space_free(s);
    }
}

/* ---------------------------------------------------------------- sample */

static bd_space *single(const char *param)
{
    char text[512];
    snprintf(text, sizeof text, "[%s]", param);
    return space_of(text);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

Test(space_sample, float_uniform_stays_in_range)
{
    bd_space *s = single("{\"name\":\"x\",\"type\":\"float\",\"low\":-2,\"high\":3}");
    bd_rng rng;
    double sum = 0, lo = INFINITY, hi = -INFINITY;
    size_t below0 = 0;
    bd_rng_seed(&rng, 1, 0);
    for (int i = 0; i < N_DRAWS; i++) {
        json_t *c = bd_space_sample(s, &rng);
        json_t *x = json_object_get(c, "x");
        double v;
        cr_assert(json_is_real(x), "floats must be JSON reals");
        cr_assert_eq(json_object_size(c), 1);
        v = json_real_value(x);
        cr_assert(v >= -2 && v <= 3, "%g out of range", v);
        sum += v;
        lo = fmin(lo, v);
        hi = fmax(hi, v);
        below0 += v < 0;
        json_decref(c);
    }
    /* mean 0.5, sd of the mean 5/sqrt(12 N) = 0.0102 */
    cr_expect(fabs(sum / N_DRAWS - 0.5) < 0.05, "mean %g", sum / N_DRAWS);
    cr_expect(lo < -1.99 && hi > 2.99, "range seen [%g, %g]", lo, hi);
    cr_expect(fabs((double)below0 / N_DRAWS - 0.4) < 0.02);
    bd_space_free(s);
}

Test(space_sample, float_log_median_near_geometric_mean)
{
    bd_space *s = single("{\"name\":\"lr\",\"type\":\"float\",\"low\":1e-5,\"high\":1,\"log\":true}");
    static double v[N_DRAWS];
    bd_rng rng;
    size_t below_1e3 = 0;
    double median;
    bd_rng_seed(&rng, 2, 0);
    for (int i = 0; i < N_DRAWS; i++) {
        json_t *c = bd_space_sample(s, &rng);
        v[i] = json_real_value(json_object_get(c, "lr"));
        cr_assert(v[i] >= 1e-5 && v[i] <= 1, "%g out of range", v[i]);
        below_1e3 += v[i] < 1e-3;
        json_decref(c);
    }
    qsort(v, N_DRAWS, sizeof v[0], cmp_double);
    median = v[N_DRAWS / 2];
    /* geometric mean sqrt(1e-5 * 1) = 10^-2.5; a uniform draw would put the median near 0.5 */
    cr_expect(fabs(log10(median) + 2.5) < 0.1, "median %g", median);
    /* P(x < 1e-3) = 2/5 for log-uniform */
    cr_expect(fabs((double)below_1e3 / N_DRAWS - 0.4) < 0.02, "fraction %g", (double)below_1e3 / N_DRAWS);
    cr_expect(v[0] < 2e-5 && v[N_DRAWS - 1] > 0.5);
    bd_space_free(s);
}

Test(space_sample, int_uniform_hits_every_value_evenly)
{
    bd_space *s = single("{\"name\":\"n\",\"type\":\"int\",\"low\":1,\"high\":8}");
    size_t count[9] = {0};
    bd_rng rng;
    bd_rng_seed(&rng, 3, 0);
    for (int i = 0; i < N_DRAWS; i++) {
        json_t *c = bd_space_sample(s, &rng);
        json_t *x = json_object_get(c, "n");
        cr_assert(json_is_integer(x), "ints must be JSON integers");
        cr_assert(json_integer_value(x) >= 1 && json_integer_value(x) <= 8);
        count[json_integer_value(x)]++;
        json_decref(c);
    }
    /* expected 2500 each, sd about 47 */
    for (int k = 1; k <= 8; k++)
        cr_expect(labs((long)count[k] - N_DRAWS / 8) < 250, "value %d drawn %zu times", k, count[k]);
    bd_space_free(s);
}

Test(space_sample, int_log_follows_the_documented_rule)
{
    bd_space *s = single("{\"name\":\"n\",\"type\":\"int\",\"low\":1,\"high\":100,\"log\":true}");
    static size_t count[101];
    bd_rng rng;
    size_t seen = 0;
    double z = log(100.5 / 0.5);
    bd_rng_seed(&rng, 4, 0);
    for (int i = 0; i < 5 * N_DRAWS; i++) {
        json_t *c = bd_space_sample(s, &rng);
        json_t *x = json_object_get(c, "n");
        cr_assert(json_is_integer(x));
        cr_assert(json_integer_value(x) >= 1 && json_integer_value(x) <= 100);
        count[json_integer_value(x)]++;
        json_decref(c);
    }
    /* P(k) = log((k + 0.5) / (k - 0.5)) / log(100.5 / 0.5): P(1) = 0.207, P(10) = 0.0189 */
    for (int k = 1; k <= 100; k++) {
        double p = log((k + 0.5) / (k - 0.5)) / z;
        double f = (double)count[k] / (5 * N_DRAWS);
        double se = sqrt(p * (1 - p) / (5 * N_DRAWS));
        cr_expect(fabs(f - p) < 5 * se + 1e-4, "k=%d: frequency %g, expected %g", k, f, p);
        seen += count[k] > 0;
    }
    cr_expect_eq(seen, 100, "every integer in [1, 100] can be drawn");
    bd_space_free(s);
}

Test(space_sample, int_edge_ranges)
{
    bd_space *s = space_of("[{\"name\":\"one\",\"type\":\"int\",\"low\":-4,\"high\":-4},"
                           " {\"name\":\"onelog\",\"type\":\"int\",\"low\":6,\"high\":6,\"log\":true},"
                           " {\"name\":\"big\",\"type\":\"int\",\"low\":-9007199254740992,\"high\":9007199254740992}]");
    bd_rng rng;
    int positive = 0;
    bd_rng_seed(&rng, 5, 0);
    for (int i = 0; i < 1000; i++) {
        json_t *c = bd_space_sample(s, &rng);
        json_int_t big = json_integer_value(json_object_get(c, "big"));
        cr_assert_eq(json_integer_value(json_object_get(c, "one")), -4);
        cr_assert_eq(json_integer_value(json_object_get(c, "onelog")), 6);
        cr_assert(json_is_integer(json_object_get(c, "big")));
        cr_assert(big >= -9007199254740992LL && big <= 9007199254740992LL);
        positive += big > 0;
        json_decref(c);
    }
    cr_expect(positive > 400 && positive < 600);
    bd_space_free(s);
}

Test(space_sample, categorical_uniform_and_copied_as_given)
{
    bd_space *s = single("{\"name\":\"c\",\"type\":\"categorical\",\"choices\":[\"svm\",3,true,2.5,false,\"\"]}");
    const json_t *choices = bd_space_param(s, 0)->choices;
    size_t count[6] = {0};
    bd_rng rng;
    bd_rng_seed(&rng, 6, 0);
    for (int i = 0; i < N_DRAWS; i++) {
        json_t *c = bd_space_sample(s, &rng);
        json_t *x = json_object_get(c, "c");
        size_t k, hit = 6;
        for (k = 0; k < json_array_size(choices); k++)
            if (json_equal(x, json_array_get(choices, k))) /* json_equal: same type and value */
                hit = k;
        cr_assert_lt(hit, 6, "sampled value is not a choice");
        if (!json_is_boolean(x)) /* jansson's true and false are shared singletons */
            cr_assert_neq(x, json_array_get(choices, hit), "the config must not share the space's choice objects");
        count[hit]++;
        json_decref(c);
    }
    /* expected 3333 each, sd about 53 */
    for (int k = 0; k < 6; k++)
        cr_expect(labs((long)count[k] - N_DRAWS / 6) < 270, "choice %d drawn %zu times", k, count[k]);
    bd_space_free(s);
}

Test(space_sample, same_seed_same_configs)
{
    bd_space *s = space_of(MIXED);
    bd_rng a, b, c, d;
    int differ_stream = 0, differ_seed = 0;
    bd_rng_seed(&a, 42, 7);
    bd_rng_seed(&b, 42, 7);
    bd_rng_seed(&c, 42, 8);
    bd_rng_seed(&d, 43, 7);
    for (int i = 0; i < 200; i++) {
        json_t *x = bd_space_sample(s, &a), *y = bd_space_sample(s, &b);
        json_t *z = bd_space_sample(s, &c), *w = bd_space_sample(s, &d);
        cr_assert(json_equal(x, y), "draw %d differs for the same seed and stream", i);
        differ_stream += !json_equal(x, z);
        differ_seed += !json_equal(x, w);
        json_decref(x);
        json_decref(y);
        json_decref(z);
        json_decref(w);
    }
    cr_expect_gt(differ_stream, 190);
    cr_expect_gt(differ_seed, 190);
    bd_space_free(s);
}

Test(space_sample, a_known_seed_gives_a_fixed_config)
{
    /* Pins the draw order (declaration order, one draw per active parameter)
     * so that a change that would break replay of stored studies is noticed. */
    bd_space *s = space_of(CASH);
    bd_rng rng, ref;
    json_t *c;
    const char *algos[] = {"svm", "rf", "knn"};
    const char *scalers[] = {"none", "standard", "minmax"};
    uint64_t ia, is;
    bd_rng_seed(&rng, 1234, 5);
    bd_rng_seed(&ref, 1234, 5);
    c = bd_space_sample(s, &rng);
    ia = bd_rng_below(&ref, 3);
    is = bd_rng_below(&ref, 3);
    cr_expect_str_eq(json_string_value(json_object_get(c, "algorithm")), algos[ia]);
    cr_expect_str_eq(json_string_value(json_object_get(c, "scaler")), scalers[is]);
    if (ia == 0) {
        double u = bd_rng_uniform(&ref);
        double C = exp(log(0.01) + u * (log(100) - log(0.01)));
        cr_expect(fabs(json_real_value(json_object_get(c, "C")) - C) <= 1e-12 * C);
    } else if (ia == 2) {
        cr_expect_eq(json_integer_value(json_object_get(c, "k")), 1 + (json_int_t)bd_rng_below(&ref, 50));
    }
    json_decref(c);
    bd_space_free(s);
}

/* ------------------------------------------------------------ conditions */

Test(space_conditions, cash_configs_hold_exactly_the_active_parameters)
{
    bd_space *s = space_of(CASH);
    const char *svm[] = {"algorithm", "scaler", "C", "gamma"};
    const char *rf[] = {"algorithm", "scaler", "n_estimators", "max_depth"};
    const char *knn[] = {"algorithm", "scaler", "k"};
    size_t count[3] = {0};
    bd_rng rng;
    bd_rng_seed(&rng, 11, 0);
    for (int i = 0; i < 3000; i++) {
        json_t *c = bd_space_sample(s, &rng);
        const char *algo = json_string_value(json_object_get(c, "algorithm"));
        bd_err err = {0};
        cr_assert_not_null(algo);
        if (strcmp(algo, "svm") == 0) {
            cr_assert(keys_are(c, svm, 4));
            count[0]++;
        } else if (strcmp(algo, "rf") == 0) {
            cr_assert(keys_are(c, rf, 4));
            cr_assert(json_is_integer(json_object_get(c, "n_estimators")));
            count[1]++;
        } else {
            cr_assert_str_eq(algo, "knn");
            cr_assert(keys_are(c, knn, 3));
            count[2]++;
        }
        for (size_t p = 0; p < bd_space_size(s); p++)
            cr_assert_eq(bd_space_is_active(s, p, c), json_object_get(c, bd_space_param(s, p)->name) != NULL);
        cr_assert_eq(bd_space_validate_config(s, c, &err), 0, "%s %s", err.field, err.message);
        json_decref(c);
    }
    for (int k = 0; k < 3; k++)
        cr_expect_gt(count[k], 850);
    bd_space_free(s);
}

Test(space_conditions, nested_parents_must_be_active)
{
    bd_space *s = space_of(NESTED);
    long gamma = bd_space_find(s, "gamma"), kernel = bd_space_find(s, "kernel");
    long units3 = bd_space_find(s, "units3"), trees = bd_space_find(s, "both_trees");
    long degree = bd_space_find(s, "degree");
    json_t *c;
    size_t with_gamma = 0, svm_linear = 0, deep = 0;
    bd_rng rng;

    cr_assert(gamma > 0 && kernel > 0 && units3 > 0 && trees > 0 && degree > 0);
    c = J("{\"algorithm\":\"svm\",\"kernel\":\"rbf\"}");
    cr_expect(bd_space_is_active(s, (size_t)gamma, c));
    json_decref(c);
    c = J("{\"algorithm\":\"svm\",\"kernel\":\"linear\"}");
    cr_expect_not(bd_space_is_active(s, (size_t)gamma, c));
    cr_expect(bd_space_is_active(s, (size_t)degree, c));
    json_decref(c);
    /* degree's own condition holds, but its parent kernel is inactive under rf */
    c = J("{\"algorithm\":\"rf\",\"kernel\":\"linear\"}");
    cr_expect_not(bd_space_is_active(s, (size_t)degree, c));
    json_decref(c);
    /* kernel is present but inactive (rf), so gamma is inactive too */
    c = J("{\"algorithm\":\"rf\",\"kernel\":\"rbf\"}");
    cr_expect_not(bd_space_is_active(s, (size_t)kernel, c));
    cr_expect_not(bd_space_is_active(s, (size_t)gamma, c));
    cr_expect(bd_space_is_active(s, (size_t)trees, c));
    json_decref(c);
    c = J("{}");
    cr_expect(bd_space_is_active(s, 0, c));
    cr_expect_not(bd_space_is_active(s, (size_t)gamma, c));
    json_decref(c);
    /* int parent; 3.0 equals the listed 3 */
    c = J("{\"layers\":3.0}");
    cr_expect(bd_space_is_active(s, (size_t)units3, c));
    json_decref(c);
    c = J("{\"layers\":2}");
    cr_expect_not(bd_space_is_active(s, (size_t)units3, c));
    json_decref(c);

    bd_rng_seed(&rng, 12, 0);
    for (int i = 0; i < 4000; i++) {
        bd_err err = {0};
        const char *algo, *kern;
        json_int_t layers;
        c = bd_space_sample(s, &rng);
        algo = json_string_value(json_object_get(c, "algorithm"));
        kern = json_string_value(json_object_get(c, "kernel"));
        layers = json_integer_value(json_object_get(c, "layers"));
        cr_assert_eq(kern != NULL, strcmp(algo, "svm") == 0);
        cr_assert_eq(json_object_get(c, "gamma") != NULL, kern && strcmp(kern, "rbf") == 0);
        cr_assert_eq(json_object_get(c, "degree") != NULL, kern && strcmp(kern, "linear") == 0);
        cr_assert_eq(json_object_get(c, "units3") != NULL, layers >= 3);
        cr_assert_eq(json_object_get(c, "both_trees") != NULL, strcmp(algo, "svm") != 0);
        cr_assert_eq(bd_space_validate_config(s, c, &err), 0, "%s %s", err.field, err.message);
        with_gamma += json_object_get(c, "gamma") != NULL;
        svm_linear += kern && strcmp(kern, "linear") == 0;
        deep += layers >= 3;
        json_decref(c);
    }
    /* P(gamma) = 1/3 * 1/2 */
    cr_expect(with_gamma > 520 && with_gamma < 820, "%zu", with_gamma);
    cr_expect(svm_linear > 520 && svm_linear < 820, "%zu", svm_linear);
    cr_expect(deep > 1800 && deep < 2200, "%zu", deep);
    bd_space_free(s);
}

/* --------------------------------------------------------------- validate */

struct config_case {
    char json[160];
    char field[64];    /* "": the config is valid */
    char message[128]; /* exact, or "" to check the field only */
};

ParameterizedTestParameters(space_validate, configs)
{
    static struct config_case cases[] = {
        {"{\"algorithm\":\"svm\",\"scaler\":\"none\",\"C\":1,\"gamma\":0.5}", "", ""},
        {"{\"algorithm\":\"rf\",\"scaler\":\"minmax\",\"n_estimators\":12.0,\"max_depth\":20}", "", ""},
        {"{\"algorithm\":\"knn\",\"scaler\":\"standard\",\"k\":1}", "", ""},
        {"{\"algorithm\":\"svm\",\"scaler\":\"none\",\"C\":100.0,\"gamma\":0.0001}", "", ""},
        {"[]", "config", "must be an object"},
        {"null", "config", ""},
        {"{}", "config.algorithm", "is required"},
        {"{\"algorithm\":\"knn\",\"k\":3}", "config.scaler", "is required"},
        {"{\"algorithm\":\"svm\",\"scaler\":\"none\",\"C\":1}", "config.gamma", "is required"},
        {"{\"algorithm\":\"rf\",\"scaler\":\"none\",\"C\":1,\"n_estimators\":20,\"max_depth\":3}", "config.C",
         "must be left out: it is used only when \"algorithm\" is one of [\"svm\"]"},
        {"{\"algorithm\":\"knn\",\"scaler\":\"none\",\"k\":3,\"foo\":1}", "config.foo",
         "is not a parameter of this search space"},
        {"{\"algorithm\":\"svm\",\"scaler\":\"none\",\"C\":1000,\"gamma\":0.5}", "config.C", "must be in [0.01, 100]"},
        {"{\"algorithm\":\"svm\",\"scaler\":\"none\",\"C\":0.0099,\"gamma\":0.5}", "config.C", ""},
        {"{\"algorithm\":\"svm\",\"scaler\":\"none\",\"C\":\"1\",\"gamma\":0.5}", "config.C", "must be a number"},
        {"{\"algorithm\":\"svm\",\"scaler\":\"none\",\"C\":null,\"gamma\":0.5}", "config.C", ""},
        {"{\"algorithm\":\"rf\",\"scaler\":\"none\",\"n_estimators\":10.5,\"max_depth\":3}", "config.n_estimators",
         "must be an integer in [10, 500]"},
        {"{\"algorithm\":\"rf\",\"scaler\":\"none\",\"n_estimators\":9,\"max_depth\":3}", "config.n_estimators", ""},
        {"{\"algorithm\":\"rf\",\"scaler\":\"none\",\"n_estimators\":\"20\",\"max_depth\":3}", "config.n_estimators",
         ""},
        {"{\"algorithm\":\"xgb\",\"scaler\":\"none\"}", "config.algorithm", "must be one of [\"svm\",\"rf\",\"knn\"]"},
        {"{\"algorithm\":\"knn\",\"scaler\":1,\"k\":3}", "config.scaler", ""},
        {"{\"algorithm\":\"knn\",\"scaler\":[\"none\"],\"k\":3}", "config.scaler", ""},
    };
    return cr_make_param_array(struct config_case, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct config_case *c, space_validate, configs)
{
    bd_space *s = space_of(CASH);
    json_t *config = J(c->json);
    bd_err err = {0};
    int rc = bd_space_validate_config(s, config, &err);
    if (!c->field[0]) {
        cr_expect_eq(rc, 0, "%s: %s %s", c->json, err.field, err.message);
    } else {
        cr_expect_eq(rc, BD_EINVAL, "%s", c->json);
        cr_expect_eq(err.code, BD_EINVAL);
        cr_expect_str_eq(err.field, c->field, "%s: %s", c->json, err.message);
        if (c->message[0])
            cr_expect_str_eq(err.message, c->message, "%s: got \"%s\"", c->json, err.message);
    }
    json_decref(config);
    bd_space_free(s);
}

Test(space_validate, nested_inactive_child_is_named)
{
    bd_space *s = space_of(NESTED);
    json_t *c = J("{\"algorithm\":\"svm\",\"kernel\":\"linear\",\"gamma\":0.1,\"layers\":1}");
    bd_err err = {0};
    cr_expect_eq(bd_space_validate_config(s, c, &err), BD_EINVAL);
    cr_expect_str_eq(err.field, "config.gamma");
    json_decref(c);
    /* a present but inactive parent makes its child inactive as well */
    c = J("{\"algorithm\":\"rf\",\"kernel\":\"rbf\",\"gamma\":0.1,\"layers\":1,\"both_trees\":2}");
    cr_expect_eq(bd_space_validate_config(s, c, &err), BD_EINVAL);
    cr_expect_str_eq(err.field, "config.kernel");
    json_decref(c);
    c = J("{\"algorithm\":\"rf\",\"kernel\":\"linear\",\"degree\":3,\"layers\":1,\"both_trees\":2}");
    cr_expect_eq(bd_space_validate_config(s, c, &err), BD_EINVAL);
    cr_expect_str_eq(err.field, "config.kernel");
    json_decref(c);
    c = J("{\"algorithm\":\"svm\",\"kernel\":\"rbf\",\"gamma\":1,\"degree\":3,\"layers\":1}");
    cr_expect_eq(bd_space_validate_config(s, c, &err), BD_EINVAL);
    cr_expect_str_eq(err.field, "config.degree");
    cr_expect_str_eq(err.message, "must be left out: it is used only when \"kernel\" is one of [\"linear\"]");
    json_decref(c);
    c = J("{\"algorithm\":\"rf\",\"layers\":4,\"both_trees\":2}");
    cr_expect_eq(bd_space_validate_config(s, c, &err), BD_EINVAL);
    cr_expect_str_eq(err.field, "config.units3");
    json_decref(c);
    c = J("{\"algorithm\":\"rf\",\"layers\":4,\"both_trees\":2,\"units3\":64}");
    cr_expect_eq(bd_space_validate_config(s, c, &err), 0, "%s %s", err.field, err.message);
    json_decref(c);
    bd_space_free(s);
}

/* Issue 42: validation accepts 2.0 for an int (as the space's own bounds and
 * "when" values do), so what is stored and handed to a worker must be the
 * canonical form, compared here as text: 2.0 == 2 for json_equal. */
Test(space_validate, canonical_config_gives_each_value_its_parameters_type)
{
    bd_space *s = space_of(MIXED);
    json_t *c = J("{\"lr\": 1, \"momentum\": 0, \"layers\": 2.0, \"batch\": 64, \"mode\": 3.0,"
                  " \"tiny\": 1e-10, \"width\": -3.0, \"fixed\": 7.0, \"unknown\": 2.0}");
    bd_err err = {0};
    json_t *d = json_copy(c);
    json_object_del(d, "unknown");
    cr_assert_eq(bd_space_validate_config(s, d, &err), 0, "%s %s", err.field, err.message);
    json_t *canon = bd_space_canonical_config(s, c);
    char *text = json_dumps(canon, JSON_COMPACT | JSON_SORT_KEYS);
    cr_expect_str_eq(text, "{\"batch\":64,\"fixed\":7,\"layers\":2,\"lr\":1.0,\"mode\":3,\"momentum\":0.0,"
                           "\"tiny\":1e-10,\"unknown\":2.0,\"width\":-3}");
    cr_expect_eq(bd_space_validate_config(s, d, &err), 0, "the input is not modified");
    cr_expect(json_is_real(json_object_get(c, "layers")), "the input is not modified");
    free(text);
    json_decref(canon);
    json_decref(d);
    json_decref(c);
    /* a choice given as another number of the same value: the choice itself */
    bd_space *m = space_of("[{\"name\": \"k\", \"type\": \"categorical\", \"choices\": [1.5, 2.0, 4]}]");
    const char *const given[] = {"{\"k\": 2}", "{\"k\": 4.0}", "{\"k\": 1.5}"};
    const char *const want[] = {"{\"k\":2.0}", "{\"k\":4}", "{\"k\":1.5}"};
    for (size_t i = 0; i < 3; i++) {
        c = J(given[i]);
        cr_assert_eq(bd_space_validate_config(m, c, &err), 0, "%s: %s", given[i], err.message);
        canon = bd_space_canonical_config(m, c);
        text = json_dumps(canon, JSON_COMPACT);
        cr_expect_str_eq(text, want[i]);
        free(text);
        json_decref(canon);
        json_decref(c);
    }
    bd_space_free(m);
    bd_space_free(s);
}

/* ------------------------------------------------------------ encode/decode */

static void expect_same_config(const json_t *a, const json_t *b)
{
    cr_assert_eq(json_object_size(a), json_object_size(b));
    for (void *it = json_object_iter((json_t *)a); it; it = json_object_iter_next((json_t *)a, it)) {
        const char *key = json_object_iter_key(it);
        json_t *va = json_object_iter_value(it), *vb = json_object_get(b, key);
        cr_assert_not_null(vb, "%s lost", key);
        if (json_is_real(va)) {
            double x = json_real_value(va), y = json_real_value(vb);
            cr_assert(json_is_real(vb), "%s changed type", key);
            cr_assert(fabs(x - y) <= 1e-9 * fabs(x), "%s: %.17g became %.17g", key, x, y);
        } else {
            cr_assert(json_equal(va, vb), "%s changed", key); /* ints and choices: exact */
        }
    }
}

Test(space_encode, round_trip_over_sampled_configs)
{
    const char *spaces[] = {MIXED, CASH, NESTED};
    for (size_t k = 0; k < 3; k++) {
        bd_space *s = space_of(spaces[k]);
        size_t n = bd_space_size(s);
        double *unit = malloc(n * sizeof *unit), *again = malloc(n * sizeof *again);
        bd_rng rng;
        bd_rng_seed(&rng, 21, k);
        for (int i = 0; i < 3000; i++) {
            json_t *c = bd_space_sample(s, &rng), *d;
            cr_assert_eq(bd_space_encode(s, c, unit), 0);
            for (size_t j = 0; j < n; j++) {
                cr_assert(unit[j] >= 0 && unit[j] <= 1, "unit[%zu] = %g", j, unit[j]);
                if (!bd_space_is_active(s, j, c))
                    cr_assert_eq(unit[j], 0.5);
            }
            d = bd_space_decode(s, unit);
            expect_same_config(c, d);
            cr_assert_eq(bd_space_validate_config(s, d, NULL), 0);
            cr_assert_eq(bd_space_encode(s, d, again), 0);
            for (size_t j = 0; j < n; j++)
                cr_assert(fabs(unit[j] - again[j]) <= 1e-9);
            json_decref(c);
            json_decref(d);
        }
        free(unit);
        free(again);
        bd_space_free(s);
    }
}

Test(space_encode, log_float_round_trip_across_many_decades)
{
    bd_space *s = single("{\"name\":\"x\",\"type\":\"float\",\"low\":1e-300,\"high\":1e300,\"log\":true}");
    const double xs[] = {1e-300, 3.7e-200, 1e-5, 0.123456789, 1, 42.5, 6.02e23, 9.99e299, 1e300};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        json_t *c = json_pack("{s:f}", "x", xs[i]), *d;
        double u;
        cr_assert_eq(bd_space_encode(s, c, &u), 0);
        d = bd_space_decode(s, &u);
        expect_same_config(c, d);
        json_decref(c);
        json_decref(d);
    }
    bd_space_free(s);
}

Test(space_encode, documented_coordinates)
{
    bd_space *s = space_of("[{\"name\":\"f\",\"type\":\"float\",\"low\":0,\"high\":10},"
                           " {\"name\":\"lf\",\"type\":\"float\",\"low\":1e-4,\"high\":1,\"log\":true},"
                           " {\"name\":\"i\",\"type\":\"int\",\"low\":1,\"high\":9},"
                           " {\"name\":\"li\",\"type\":\"int\",\"low\":1,\"high\":100,\"log\":true},"
                           " {\"name\":\"c\",\"type\":\"categorical\",\"choices\":[\"a\",\"b\",\"c\"]},"
                           " {\"name\":\"child\",\"type\":\"float\",\"low\":0,\"high\":1,\"when\":{\"c\":[\"c\"]}},"
                           " {\"name\":\"one\",\"type\":\"int\",\"low\":5,\"high\":5}]");
    json_t *c = J("{\"f\":2.5,\"lf\":0.01,\"i\":5,\"li\":10,\"c\":\"a\",\"one\":5}");
    double u[7];
    cr_assert_eq(bd_space_encode(s, c, u), 0);
    cr_expect(fabs(u[0] - 0.25) < 1e-15);
    cr_expect(fabs(u[1] - 0.5) < 1e-15);
    cr_expect(fabs(u[2] - 0.5) < 1e-15);
    cr_expect(fabs(u[3] - 0.5) < 1e-15);
    cr_expect(fabs(u[4] - 1.0 / 6) < 1e-15);
    cr_expect_eq(u[5], 0.5, "an inactive parameter encodes as 0.5");
    cr_expect_eq(u[6], 0.5);
    json_decref(c);
    c = J("{\"f\":10,\"lf\":1,\"i\":9,\"li\":1,\"c\":\"c\",\"child\":0,\"one\":5}");
    cr_assert_eq(bd_space_encode(s, c, u), 0);
    cr_expect_eq(u[0], 1.0);
    cr_expect_eq(u[1], 1.0);
    cr_expect_eq(u[2], 1.0);
    cr_expect_eq(u[3], 0.0);
    cr_expect(fabs(u[4] - 5.0 / 6) < 1e-15);
    cr_expect_eq(u[5], 0.0);
    json_decref(c);
    bd_space_free(s);
}

Test(space_encode, rejects_configs_that_do_not_fit)
{
    bd_space *s = space_of(CASH);
    const char *bad[] = {"{}", "{\"algorithm\":\"knn\",\"scaler\":\"none\",\"k\":51}",
                         "{\"algorithm\":\"knn\",\"scaler\":\"none\",\"k\":3,\"C\":1}", "[1]"};
    double u[7];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *c = J(bad[i]);
        cr_expect_eq(bd_space_encode(s, c, u), BD_EINVAL, "%s", bad[i]);
        json_decref(c);
    }
    bd_space_free(s);
}

Test(space_decode, clamps_rounds_and_drops_inactive)
{
    bd_space *s =
        space_of("[{\"name\":\"f\",\"type\":\"float\",\"low\":-1,\"high\":1},"
                 " {\"name\":\"i\",\"type\":\"int\",\"low\":0,\"high\":4},"
                 " {\"name\":\"c\",\"type\":\"categorical\",\"choices\":[\"a\",2,false]},"
                 " {\"name\":\"child\",\"type\":\"int\",\"low\":1,\"high\":3,\"when\":{\"c\":[2]}},"
                 " {\"name\":\"grandchild\",\"type\":\"float\",\"low\":1,\"high\":3,\"when\":{\"child\":[3]}}]");
    double u1[] = {-5, 0.374, 1.0, 0.9, 0.2};
    double u2[] = {7, 0.376, 0.5, 1.0, NAN};
    double u3[] = {NAN, 2, 0.0, 0.5, 0.5};
    json_t *d, *want;

    d = bd_space_decode(s, u1);
    want = J("{\"f\":-1.0,\"i\":1,\"c\":false}");
    cr_expect(json_equal(d, want), "clamped low, rounded down, last choice, children dropped");
    json_decref(d);
    json_decref(want);

    d = bd_space_decode(s, u2);
    want = J("{\"f\":1.0,\"i\":2,\"c\":2,\"child\":3,\"grandchild\":2.0}");
    cr_expect(json_equal(d, want), "NaN decodes as the middle");
    json_decref(d);
    json_decref(want);

    d = bd_space_decode(s, u3);
    want = J("{\"f\":0.0,\"i\":4,\"c\":\"a\"}");
    cr_expect(json_equal(d, want));
    json_decref(d);
    json_decref(want);
    bd_space_free(s);
}

Test(space_decode, uniform_units_give_valid_configs)
{
    bd_space *s = space_of(MIXED);
    size_t n = bd_space_size(s);
    double u[16];
    bd_rng rng;
    cr_assert_leq(n, 16);
    bd_rng_seed(&rng, 31, 0);
    for (int i = 0; i < 2000; i++) {
        json_t *d;
        bd_err err = {0};
        for (size_t j = 0; j < n; j++)
            u[j] = bd_rng_uniform(&rng) * 1.2 - 0.1;
        d = bd_space_decode(s, u);
        cr_assert_eq(bd_space_validate_config(s, d, &err), 0, "%s %s", err.field, err.message);
        json_decref(d);
    }
    bd_space_free(s);
}

/* ---------------------------------------------------------------- subspace */

static void expect_names(const bd_space *s, const char *const *names, size_t n)
{
    cr_assert_eq(bd_space_size(s), n);
    for (size_t i = 0; i < n; i++)
        cr_expect_str_eq(bd_space_param(s, i)->name, names[i]);
}

static bd_space *sub_of(const bd_space *s, const char *name, const char *value)
{
    bd_space *sub = NULL;
    bd_err err = {0};
    json_t *v = J(value);
    cr_assert_eq(bd_space_subspace(s, name, v, &sub, &err), 0, "%s", err.message);
    cr_assert_not_null(sub);
    json_decref(v);
    return sub;
}

Test(space_subspace, cash_arms)
{
    bd_space *s = space_of(CASH);
    bd_space *svm = sub_of(s, "algorithm", "\"svm\"");
    bd_space *rf = sub_of(s, "algorithm", "\"rf\"");
    bd_space *knn = sub_of(s, "algorithm", "\"knn\"");
    const char *svm_names[] = {"scaler", "C", "gamma"};
    const char *rf_names[] = {"scaler", "n_estimators", "max_depth"};
    const char *knn_names[] = {"scaler", "k"};
    bd_space *arms[] = {svm, rf, knn};
    const char *arm_names[] = {"svm", "rf", "knn"};
    bd_rng rng;

    expect_names(svm, svm_names, 3);
    expect_names(rf, rf_names, 3);
    expect_names(knn, knn_names, 2);
    cr_expect_eq(bd_space_param(svm, 1)->low, 0.01);
    cr_expect_eq(bd_space_param(svm, 1)->high, 100);
    cr_expect(bd_space_param(svm, 1)->log);
    cr_expect_eq(bd_space_param(rf, 1)->type, BD_PARAM_INT);
    cr_expect(bd_space_param(rf, 1)->log);
    cr_expect_eq(json_array_size(bd_space_param(knn, 0)->choices), 3);
    cr_expect_eq(bd_space_find(svm, "algorithm"), -1);
    cr_expect_eq(bd_space_find(svm, "gamma"), 2);
    cr_expect_eq(bd_space_find(rf, "gamma"), -1);

    /* a sub-space config plus the arm's value is a config of the full space */
    bd_rng_seed(&rng, 41, 0);
    for (int a = 0; a < 3; a++) {
        for (size_t i = 0; i < bd_space_size(arms[a]); i++)
            cr_expect_eq(bd_space_param(arms[a], i)->n_conds, 0);
        for (int i = 0; i < 200; i++) {
            json_t *c = bd_space_sample(arms[a], &rng);
            bd_err err = {0};
            cr_assert_eq(bd_space_validate_config(arms[a], c, &err), 0, "%s", err.message);
            json_object_set_new(c, "algorithm", json_string(arm_names[a]));
            cr_assert_eq(bd_space_validate_config(s, c, &err), 0, "%s %s", err.field, err.message);
            json_decref(c);
        }
    }
    bd_space_free(svm);
    bd_space_free(rf);
    bd_space_free(knn);
    bd_space_free(s);
}

Test(space_subspace, keeps_other_conditions_renumbered)
{
    bd_space *s = space_of(NESTED);
    bd_space *svm = sub_of(s, "algorithm", "\"svm\"");
    bd_space *et = sub_of(s, "algorithm", "\"et\"");
    const char *svm_names[] = {"kernel", "gamma", "degree", "layers", "units3"};
    const char *et_names[] = {"layers", "units3", "both_trees"};
    const bd_param *gamma, *units3;
    json_t *json;
    bd_space *again = NULL;

    expect_names(svm, svm_names, 5);
    expect_names(et, et_names, 3);
    cr_expect_eq(bd_space_param(svm, 0)->n_conds, 0, "kernel's condition on algorithm is gone");
    gamma = bd_space_param(svm, 1);
    cr_assert_eq(gamma->n_conds, 1, "gamma keeps its condition on kernel only");
    cr_expect_eq(gamma->conds[0].parent, 0);
    cr_assert_eq(bd_space_param(svm, 2)->n_conds, 1);
    cr_expect_eq(bd_space_param(svm, 2)->conds[0].parent, 0, "degree -> kernel");
    units3 = bd_space_param(svm, 4);
    cr_assert_eq(units3->n_conds, 1);
    cr_expect_eq(units3->conds[0].parent, 3, "units3 -> layers");
    cr_expect_eq(bd_space_param(et, 2)->n_conds, 0);
    units3 = bd_space_param(et, 1);
    cr_expect_eq(units3->conds[0].parent, 0);

    /* the sub-space is a well-formed space of its own */
    json = bd_space_to_json(svm);
    cr_expect_eq(bd_space_parse(json, &again, NULL), 0);
    bd_space_free(again);
    json_decref(json);
    bd_space_free(svm);
    bd_space_free(et);
    bd_space_free(s);
}

Test(space_subspace, can_split_on_a_nested_categorical)
{
    bd_space *s = space_of(NESTED);
    bd_space *rbf = sub_of(s, "kernel", "\"rbf\"");
    bd_space *lin = sub_of(s, "kernel", "\"linear\"");
    const char *rbf_names[] = {"algorithm", "gamma", "layers", "units3", "both_trees"};
    const char *lin_names[] = {"algorithm", "degree", "layers", "units3", "both_trees"};
    expect_names(rbf, rbf_names, 5);
    expect_names(lin, lin_names, 5);
    cr_expect_eq(bd_space_param(lin, 1)->n_conds, 0, "degree's only condition was on kernel");
    cr_assert_eq(bd_space_param(rbf, 1)->n_conds, 1, "gamma keeps its condition on algorithm");
    cr_expect_eq(bd_space_param(rbf, 1)->conds[0].parent, 0);
    bd_space_free(rbf);
    bd_space_free(lin);
    bd_space_free(s);
}

Test(space_subspace, matches_numbers_by_value_and_may_be_empty)
{
    bd_space *s = space_of("[{\"name\":\"algo\",\"type\":\"categorical\",\"choices\":[1,2,\"nb\"]},"
                           " {\"name\":\"x\",\"type\":\"float\",\"low\":0,\"high\":1,\"when\":{\"algo\":[1]}}]");
    bd_space *one = sub_of(s, "algo", "1.0");
    bd_space *nb = sub_of(s, "algo", "\"nb\"");
    json_t *c, *json;
    bd_rng rng;
    double u = 0.25;
    cr_expect_eq(bd_space_size(one), 1);
    cr_expect_eq(bd_space_size(nb), 0, "an algorithm without hyperparameters");
    bd_rng_seed(&rng, 1, 1);
    c = bd_space_sample(nb, &rng);
    cr_expect_eq(json_object_size(c), 0);
    cr_expect_eq(bd_space_validate_config(nb, c, NULL), 0);
    cr_expect_eq(bd_space_encode(nb, c, &u), 0);
    cr_expect_eq(u, 0.25, "nothing written for an empty space");
    json_decref(c);
    c = bd_space_decode(nb, &u);
    cr_expect_eq(json_object_size(c), 0);
    json_decref(c);
    json = bd_space_to_json(nb);
    cr_expect_eq(json_array_size(json), 0);
    json_decref(json);
    bd_space_free(one);
    bd_space_free(nb);
    bd_space_free(s);
}

Test(space_subspace, rejects_bad_name_or_value)
{
    bd_space *s = space_of(CASH);
    struct {
        const char *name, *value;
    } bad[] = {
        {"C", "0.5"},          {"k", "3"},
        {"nope", "\"svm\""},   {"algorithm", "\"xgb\""},
        {"algorithm", "1"},    {"algorithm", "[\"svm\"]"},
        {"algorithm", "null"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        bd_space *sub = (bd_space *)1;
        bd_err err = {0};
        json_t *v = J(bad[i].value);
        cr_expect_eq(bd_space_subspace(s, bad[i].name, v, &sub, &err), BD_EINVAL, "%s=%s", bad[i].name, bad[i].value);
        cr_expect_null(sub);
        cr_expect_eq(err.code, BD_EINVAL);
        cr_expect_neq(err.message[0], '\0');
        json_decref(v);
    }
    bd_space_free(s);
}
