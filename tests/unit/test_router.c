/* Route matching: literal and parameter segments, integer {id} rules, 404
 * versus 405 with its Allow list, and the daemon's own table. */
#include <criterion/criterion.h>
#include <string.h>

#include "api/handlers.h"
#include "api/router.h"

static int route(bd_http_method m, const char *path, bd_http_req *req)
{
    size_t n;
    const bd_route *table = bd_routes(&n);

    memset(req, 0, sizeof *req);
    req->method = m;
    req->method_name = bd_http_method_name(m);
    req->path = path;
    return bd_router_match(table, n, req);
}

Test(router, literal_route_matches_its_handler)
{
    bd_http_req req;

    cr_assert_eq(route(BD_HTTP_GET, "/healthz", &req), 0);
    cr_assert_eq(req.route->handler, bd_h_healthz);
    cr_assert_eq(req.params.count, 0);
    cr_assert_eq(route(BD_HTTP_GET, "/v1/me", &req), 0);
    cr_assert_eq(req.route->handler, bd_h_me);
}

Test(router, same_path_different_methods_pick_different_handlers)
{
    bd_http_req req;

    cr_assert_eq(route(BD_HTTP_POST, "/v1/studies", &req), 0);
    cr_assert_eq(req.route->handler, bd_h_create_study);
    cr_assert_eq(req.route->status, 201);
    int post_pattern = req.pattern_id;
    cr_assert_eq(route(BD_HTTP_GET, "/v1/studies", &req), 0);
    cr_assert_eq(req.route->handler, bd_h_list_studies);
    cr_assert_eq(req.route->status, 200);
    cr_assert_eq(req.pattern_id, post_pattern, "one pattern, one metrics label");
}

Test(router, integer_id_parameter_is_parsed)
{
    bd_http_req req;

    cr_assert_eq(route(BD_HTTP_POST, "/v1/studies/42/suggest", &req), 0);
    cr_assert_eq(req.route->handler, bd_h_suggest);
    cr_assert_eq(req.params.count, 1);
    cr_assert_eq(req.params.v[0].num, 42);
    cr_assert_str_eq(req.params.v[0].text, "42");

    cr_assert_eq(route(BD_HTTP_DELETE, "/v1/tokens/9223372036854775807", &req), 0);
    cr_assert_eq(req.params.v[0].num, INT64_MAX);
}

Test(router, name_parameter_takes_any_segment)
{
    bd_http_req req;

    cr_assert_eq(route(BD_HTTP_POST, "/v1/users/alice.b-2/tokens", &req), 0);
    cr_assert_eq(req.route->handler, bd_h_create_token);
    cr_assert_str_eq(req.params.v[0].text, "alice.b-2");
    cr_assert_eq(req.params.v[0].num, 0);
}

Test(router, non_integer_or_out_of_range_id_is_not_found)
{
    static const char *const bad[] = {
        "/v1/studies/abc",
        "/v1/studies/0",
        "/v1/studies/-1",
        "/v1/studies/+1",
        "/v1/studies/007",
        "/v1/studies/1e3",
        "/v1/studies/12x",
        "/v1/studies/9223372036854775808",
        "/v1/studies/99999999999999999999",
        "/v1/trials/1.5/complete",
        "/v1/trials/ 1",
    };
    bd_http_req req;

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_expect_eq(route(BD_HTTP_GET, bad[i], &req), BD_ENOTFOUND, "%s", bad[i]);
        cr_expect_null(req.route, "%s", bad[i]);
        cr_expect_eq(req.pattern_id, -1, "%s", bad[i]);
        cr_expect_eq(route(BD_HTTP_DELETE, bad[i], &req), BD_ENOTFOUND, "%s: 404 even under another method", bad[i]);
    }
}

Test(router, near_misses_are_not_found)
{
    static const char *const bad[] = {
        "",
        "//",
        "/v1",
        "/v1/studies/",
        "/v1/studies//suggest",
        "/v1/studiesx",
        "/V1/studies",
        "/healthz/",
        "/v1/studies/1/suggest/",
        "/v1/studies/1/suggest/x",
        "/v1/users//tokens",
        "/v1/me/",
    };
    bd_http_req req;

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_expect_eq(route(BD_HTTP_GET, bad[i], &req), BD_ENOTFOUND, "'%s'", bad[i]);
}

Test(router, known_path_wrong_method_is_405_with_allow)
{
    bd_http_req req;

    cr_assert_eq(route(BD_HTTP_PUT, "/v1/studies", &req), BD_EMETHOD);
    cr_assert_null(req.route);
    cr_assert_geq(req.pattern_id, 0);
    cr_assert_str_eq(req.allow, "POST, GET");

    cr_assert_eq(route(BD_HTTP_GET, "/v1/studies/3/suggest", &req), BD_EMETHOD);
    cr_assert_str_eq(req.allow, "POST");

    cr_assert_eq(route(BD_HTTP_POST, "/v1/studies/3", &req), BD_EMETHOD);
    cr_assert_str_eq(req.allow, "GET, DELETE, PATCH");

    cr_assert_eq(route(BD_HTTP_OTHER, "/healthz", &req), BD_EMETHOD);
    cr_assert_str_eq(req.allow, "GET");
}

Test(router, a_match_clears_the_allow_list)
{
    bd_http_req req;

    cr_assert_eq(route(BD_HTTP_GET, "/v1/studies", &req), 0);
    cr_assert_str_eq(req.allow, "");
}

static int dummy(const bd_api *api, bd_http_req *req, bd_http_resp *resp, bd_err *err)
{
    (void)api, (void)req, (void)resp, (void)err;
    return 0;
}

Test(router, two_parameters_and_text_length_limit)
{
    static const bd_route table[] = {
        {BD_HTTP_GET, "/a/{id}/b/{name}", dummy, 0, 200},
        {BD_HTTP_GET, "/a/{id}", dummy, 0, 200},
    };
    bd_http_req req;
    char long_path[400];

    memset(&req, 0, sizeof req);
    req.method = BD_HTTP_GET;
    req.path = "/a/7/b/x";
    cr_assert_eq(bd_router_match(table, 2, &req), 0);
    cr_assert_eq(req.route, &table[0]);
    cr_assert_eq(req.params.count, 2);
    cr_assert_eq(req.params.v[0].num, 7);
    cr_assert_str_eq(req.params.v[1].text, "x");

    req.path = "/a/7";
    cr_assert_eq(bd_router_match(table, 2, &req), 0);
    cr_assert_eq(req.route, &table[1]);
    cr_assert_eq(req.pattern_id, 1);

    strcpy(long_path, "/a/1/b/");
    memset(long_path + 7, 'n', BD_PATH_PARAM_TEXT_MAX);
    long_path[7 + BD_PATH_PARAM_TEXT_MAX] = '\0';
    req.path = long_path;
    cr_assert_eq(bd_router_match(table, 2, &req), BD_ENOTFOUND, "a segment longer than the buffer never matches");
    long_path[7 + BD_PATH_PARAM_TEXT_MAX - 1] = '\0';
    cr_assert_eq(bd_router_match(table, 2, &req), 0);
}

/* Replaces each {x} of pattern with "5" (or "bob" for text parameters). */
static void instantiate(const char *pattern, char *out)
{
    while (*pattern) {
        if (*pattern == '{') {
            int is_id = strncmp(pattern, "{id}", 4) == 0;
            out = stpcpy(out, is_id ? "5" : "bob");
            pattern = strchr(pattern, '}') + 1;
        } else {
            *out++ = *pattern++;
        }
    }
    *out = '\0';
}

static void check_route(const bd_route *r, void *ctx)
{
    bd_http_req req;
    char path[256];

    (*(int *)ctx)++;
    instantiate(r->pattern, path);
    cr_expect_eq(route(r->method, path, &req), 0, "%s %s", bd_http_method_name(r->method), path);
    cr_expect_eq(req.route, r, "%s %s matched another route", bd_http_method_name(r->method), path);
    cr_expect(r->status == 200 || r->status == 201 || (r->status == 301 && r->method == BD_HTTP_GET));
    cr_expect_not_null(r->handler);
    cr_expect(r->method == BD_HTTP_GET || r->method == BD_HTTP_POST || r->method == BD_HTTP_DELETE ||
              r->method == BD_HTTP_PATCH);
    if (strncmp(r->pattern, "/v1/", 4) == 0)
        cr_expect(r->flags & BD_ROUTE_AUTH, "%s needs authentication", r->pattern);
    else
        cr_expect_not(r->flags & BD_ROUTE_AUTH, "%s is public", r->pattern);
}

Test(router, every_table_route_matches_itself)
{
    int seen = 0;
    size_t n;

    bd_router_each(check_route, &seen);
    (void)bd_routes(&n);
    cr_assert_eq((size_t)seen, n);
    cr_assert_eq(n, 31);
}

Test(router, method_names_round_trip)
{
    for (int m = 0; m < BD_HTTP_OTHER; m++)
        cr_expect_eq(bd_http_method_parse(bd_http_method_name((bd_http_method)m)), m);
    cr_expect_eq(bd_http_method_parse("get"), BD_HTTP_OTHER, "methods are case-sensitive");
    cr_expect_eq(bd_http_method_parse("BREW"), BD_HTTP_OTHER);
}
