/* The error mapping (every BD_E* code -> status and body shape) and the
 * answers bd_api_dispatch gives before any engine call: 404, 405 with
 * Allow, 401 with WWW-Authenticate. */
#include <criterion/criterion.h>
#include <string.h>

#include "api/dispatch.h"
#include "api/errors.h"

static const struct {
    int code;
    int status;
    const char *name;
} cases[] = {
    {BD_EINVAL, 400, "invalid_argument"},     {BD_EAUTH, 401, "unauthenticated"},
    {BD_EFORBIDDEN, 403, "forbidden"},        {BD_ENOTFOUND, 404, "not_found"},
    {BD_EMETHOD, 405, "method_not_allowed"},  {BD_ECONFLICT, 409, "conflict"},
    {BD_ETOOLARGE, 413, "payload_too_large"}, {BD_EMEDIA, 415, "unsupported_media_type"},
    {BD_ESTORAGE, 500, "storage_error"},      {BD_EINTERNAL, 500, "internal"},
    {BD_EUNAVAILABLE, 503, "unavailable"},    {BD_EURI, 414, "uri_too_long"},
    {BD_EHEADERS, 431, "header_fields_too_large"}, {BD_EVERSION, 505, "http_version_not_supported"},
    {BD_ENOTIMPL, 501, "not_implemented"},
};

/* Checks body is exactly {"error": {"code": code, "message": <non-empty>, "field": field-or-null}}. */
static void check_body(json_t *body, const char *code, const char *field)
{
    json_t *e = json_object_get(body, "error");

    cr_assert(json_is_object(body));
    cr_assert_eq(json_object_size(body), 1);
    cr_assert(json_is_object(e));
    cr_assert_eq(json_object_size(e), 3);
    cr_assert_str_eq(json_string_value(json_object_get(e, "code")), code);
    cr_assert(json_is_string(json_object_get(e, "message")));
    cr_assert_gt(strlen(json_string_value(json_object_get(e, "message"))), 0);
    if (field)
        cr_assert_str_eq(json_string_value(json_object_get(e, "field")), field);
    else
        cr_assert(json_is_null(json_object_get(e, "field")));
}

Test(errors, every_code_maps_to_its_status_and_name)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bd_err err;
        json_t *body;

        cr_expect_eq(bd_api_status(cases[i].code), cases[i].status, "%s", cases[i].name);
        bd_err_set(&err, cases[i].code, NULL, "because %d", (int)i);
        body = bd_api_error_json(&err);
        check_body(body, cases[i].name, NULL);
        json_decref(body);
    }
}

Test(errors, field_is_a_string_when_set)
{
    bd_err err;
    json_t *body;

    bd_err_set(&err, BD_EINVAL, "parameters[0].low", "low must be below high");
    body = bd_api_error_json(&err);
    check_body(body, "invalid_argument", "parameters[0].low");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(body, "error"), "message")),
                     "low must be below high");
    json_decref(body);
}

Test(errors, empty_message_gets_a_default)
{
    bd_err err;
    json_t *body;

    bd_err_clear(&err);
    err.code = BD_ENOTFOUND;
    body = bd_api_error_json(&err);
    check_body(body, "not_found", NULL);
    json_decref(body);
}

Test(errors, unknown_code_is_internal_500)
{
    bd_err err;
    json_t *body;

    bd_err_set(&err, -77, NULL, "strange");
    cr_assert_eq(bd_api_status(-77), 500);
    cr_assert_eq(bd_api_status(BD_OK), 500);
    body = bd_api_error_json(&err);
    check_body(body, "internal", NULL);
    json_decref(body);
}

Test(errors, invalid_utf8_in_message_still_gives_a_body)
{
    bd_err err;
    json_t *body;

    bd_err_set(&err, BD_ENOTFOUND, "na\xffme", "no route for GET /\xff\xfe");
    body = bd_api_error_json(&err);
    check_body(body, "not_found", "na?me");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(body, "error"), "message")),
                     "no route for GET /??");
    json_decref(body);
}

Test(errors, response_sets_status_headers_and_log_fields)
{
    bd_http_resp resp = {0};
    bd_err err;

    resp.json = json_object(); /* replaced, not leaked (ASan) */
    bd_err_set(&err, BD_EAUTH, NULL, "bad token");
    bd_api_error_response(&resp, &err);
    cr_assert_eq(resp.status, 401);
    cr_assert(resp.www_authenticate);
    cr_assert_eq(resp.err_code, BD_EAUTH);
    cr_assert_str_eq(resp.err_message, "bad token");
    check_body(resp.json, "unauthenticated", NULL);
    bd_http_resp_clear(&resp);

    bd_err_set(&err, BD_ECONFLICT, NULL, "not running");
    bd_api_error_response(&resp, &err);
    cr_assert_eq(resp.status, 409);
    cr_assert_not(resp.www_authenticate);
    cr_assert_str_eq(resp.allow, "");
    bd_http_resp_clear(&resp);
}

/* ---- dispatch answers that need no engine ---- */

static bd_api api; /* engine NULL: these paths must never reach it */

static void dispatch(bd_http_method m, const char *path, const char *authorization, bd_http_req *req,
                     bd_http_resp *resp)
{
    memset(req, 0, sizeof *req);
    memset(resp, 0, sizeof *resp);
    req->method = m;
    req->method_name = bd_http_method_name(m);
    req->path = path;
    req->authorization = authorization;
    bd_api_route(req);
    bd_api_dispatch(&api, req, resp);
}

Test(dispatch, unknown_path_is_404)
{
    bd_http_req req;
    bd_http_resp resp;

    dispatch(BD_HTTP_GET, "/nope", NULL, &req, &resp);
    cr_assert_eq(resp.status, 404);
    check_body(resp.json, "not_found", NULL);
    cr_assert_str_eq(resp.allow, "");
    bd_http_resp_clear(&resp);
}

Test(dispatch, wrong_method_is_405_with_allow_header)
{
    bd_http_req req;
    bd_http_resp resp;

    dispatch(BD_HTTP_PUT, "/v1/studies/12", "Bearer x", &req, &resp);
    cr_assert_eq(resp.status, 405);
    cr_assert_str_eq(resp.allow, "GET, DELETE, PATCH");
    check_body(resp.json, "method_not_allowed", NULL);
    bd_http_resp_clear(&resp);
}

Test(dispatch, missing_or_malformed_bearer_is_401)
{
    static const char *const bad[] = {NULL, "", "Basic dXNlcjpwYXNz", "Bearer", "Bearer    ", "Bearertoken"};
    bd_http_req req;
    bd_http_resp resp;

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        dispatch(BD_HTTP_GET, "/v1/me", bad[i], &req, &resp);
        cr_expect_eq(resp.status, 401, "'%s'", bad[i] ? bad[i] : "(none)");
        cr_expect(resp.www_authenticate);
        check_body(resp.json, "unauthenticated", NULL);
        cr_expect_not(req.authenticated);
        bd_http_resp_clear(&resp);
    }
}

Test(dispatch, healthz_needs_no_token)
{
    bd_http_req req;
    bd_http_resp resp;

    dispatch(BD_HTTP_GET, "/healthz", NULL, &req, &resp);
    cr_assert_eq(resp.status, 200);
    cr_assert_str_eq(json_string_value(json_object_get(resp.json, "status")), "ok");
    cr_assert_eq(resp.err_code, 0);
    bd_http_resp_clear(&resp);
}
