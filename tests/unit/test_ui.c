/* The dashboard's files compiled into the binary (api/ui_assets.h) and the
 * /ui routes that serve them (api/handlers_ui.c): types, security headers,
 * ETag revalidation, the redirect, and that every file the page refers to
 * (index.html's src/href, the modules' imports) is in the table. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "api/dispatch.h"
#include "api/ui_assets.h"

static bd_api api; /* engine NULL: static files never reach it */

static void get(const char *path, const char *if_none_match, bd_http_req *req, bd_http_resp *resp)
{
    memset(req, 0, sizeof *req);
    memset(resp, 0, sizeof *resp);
    req->method = BD_HTTP_GET;
    req->method_name = "GET";
    req->path = path;
    req->if_none_match = if_none_match;
    bd_api_route(req);
    bd_api_dispatch(&api, req, resp);
}

/* The value of header name in resp, or NULL. */
static const char *header(const bd_http_resp *resp, const char *name)
{
    for (int i = 0; i < resp->header_count; i++) {
        if (strcmp(resp->headers[i].name, name) == 0)
            return resp->headers[i].value;
    }
    return NULL;
}

static void check_security_headers(const bd_http_resp *resp)
{
    const char *csp = header(resp, "Content-Security-Policy");

    cr_assert_not_null(csp);
    cr_expect(strstr(csp, "default-src 'none'") && strstr(csp, "script-src 'self'") &&
              strstr(csp, "connect-src 'self'") && strstr(csp, "frame-ancestors 'none'"));
    cr_expect_null(strstr(csp, "unsafe-inline"));
    cr_expect_str_eq(header(resp, "X-Content-Type-Options"), "nosniff");
    cr_expect_str_eq(header(resp, "Referrer-Policy"), "no-referrer");
}

Test(ui, index_is_html_with_security_headers_and_etag)
{
    bd_http_req req;
    bd_http_resp resp;
    const bd_ui_asset *a = bd_ui_asset_find("index.html");

    cr_assert_not_null(a);
    get("/ui/", NULL, &req, &resp);
    cr_assert_eq(resp.status, 200);
    cr_assert_str_eq(resp.content_type, "text/html; charset=utf-8");
    cr_assert_eq(resp.body_len, a->len);
    cr_assert(resp.body_len > 15 && memcmp(resp.body, "<!doctype html>", 15) == 0);
    check_security_headers(&resp);
    cr_expect_str_eq(header(&resp, "ETag"), a->etag);
    cr_expect_str_eq(header(&resp, "Cache-Control"), "no-cache");
    cr_expect_null(resp.json);
    bd_http_resp_clear(&resp);
}

Test(ui, matching_if_none_match_is_304_without_body)
{
    bd_http_req req;
    bd_http_resp resp;
    const bd_ui_asset *a = bd_ui_asset_find("app.js");
    char list[128];

    cr_assert_not_null(a);
    snprintf(list, sizeof list, "\"0000\", W/%s", a->etag);
    get("/ui/app.js", list, &req, &resp);
    cr_assert_eq(resp.status, 304);
    cr_assert_eq(resp.body_len, 0);
    cr_expect_str_eq(header(&resp, "ETag"), a->etag);
    bd_http_resp_clear(&resp);

    get("/ui/app.js", "\"stale\"", &req, &resp);
    cr_assert_eq(resp.status, 200);
    cr_assert_eq(resp.body_len, a->len);
    cr_assert_str_eq(resp.content_type, "text/javascript; charset=utf-8");
    bd_http_resp_clear(&resp);
}

Test(ui, etag_list_parsing)
{
    cr_expect(bd_ui_etag_matches("\"ab\"", "\"ab\""));
    cr_expect(bd_ui_etag_matches(" \"x\" ,\t\"ab\" ", "\"ab\""));
    cr_expect(bd_ui_etag_matches("W/\"ab\"", "\"ab\""));
    cr_expect(bd_ui_etag_matches("*", "\"ab\""));
    cr_expect_not(bd_ui_etag_matches(NULL, "\"ab\""));
    cr_expect_not(bd_ui_etag_matches("", "\"ab\""));
    cr_expect_not(bd_ui_etag_matches("\"abc\"", "\"ab\""));
    cr_expect_not(bd_ui_etag_matches("ab", "\"ab\""));
    cr_expect_not(bd_ui_etag_matches(",,W/", "\"ab\""));
}

Test(ui, bare_ui_redirects_to_the_directory)
{
    bd_http_req req;
    bd_http_resp resp;

    get("/ui", NULL, &req, &resp);
    cr_assert_eq(resp.status, 301);
    cr_assert_str_eq(header(&resp, "Location"), "/ui/");
    check_security_headers(&resp);
    bd_http_resp_clear(&resp);
}

Test(ui, vendored_files_and_license_are_served)
{
    static const char *const paths[] = {"/ui/vendor/uPlot.iife.min.js", "/ui/vendor/uPlot.min.css",
                                        "/ui/vendor/LICENSE"};
    static const char *const types[] = {"text/javascript; charset=utf-8", "text/css; charset=utf-8",
                                        "text/plain; charset=utf-8"};
    bd_http_req req;
    bd_http_resp resp;

    for (size_t i = 0; i < 3; i++) {
        get(paths[i], NULL, &req, &resp);
        cr_assert_eq(resp.status, 200, "%s", paths[i]);
        cr_expect_str_eq(resp.content_type, types[i]);
        cr_expect_gt(resp.body_len, 100);
        bd_http_resp_clear(&resp);
    }
}

Test(ui, unknown_or_escaping_names_are_404_json)
{
    static const char *const paths[] = {"/ui/nope.js", "/ui/..", "/ui/vendor/..", "/ui/vendor/nope",
                                        "/ui/index.html/x", "/ui/vendor", "/ui//app.js"};
    bd_http_req req;
    bd_http_resp resp;

    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        get(paths[i], NULL, &req, &resp);
        cr_expect_eq(resp.status, 404, "%s -> %d", paths[i], resp.status);
        cr_expect_not_null(resp.json, "%s", paths[i]);
        bd_http_resp_clear(&resp);
    }
}

/* Expects the reference starting at s (after its opening quote) to name a
 * table entry; "./" is the page's own directory. */
static void check_ref(const char *from, const char *s, char quote)
{
    char name[256];
    size_t n = strcspn(s, quote == '"' ? "\"" : "'");

    cr_assert_lt(n, sizeof name);
    memcpy(name, s, n);
    name[n] = '\0';
    if (strncmp(name, "./", 2) == 0)
        memmove(name, name + 2, n - 1);
    if (name[0] == '#' || strchr(name, ':') || strcmp(name, "") == 0)
        return;
    cr_expect_not_null(bd_ui_asset_find(name), "%s refers to %s, which is not compiled in", from, name);
}

static void scan_refs(const bd_ui_asset *a, const char *const *markers, size_t nmarkers)
{
    char *text = strndup((const char *)a->data, a->len);

    for (size_t m = 0; m < nmarkers; m++) {
        size_t ml = strlen(markers[m]);
        for (const char *p = strstr(text, markers[m]); p; p = strstr(p + ml, markers[m]))
            check_ref(a->name, p + ml, markers[m][ml - 1]);
    }
    free(text);
}

Test(ui, every_referenced_file_is_compiled_in)
{
    static const char *const html[] = {"src=\"", "href=\""};
    static const char *const js[] = {"from '", "from \"", "import '"};
    size_t modules = 0;

    scan_refs(bd_ui_asset_find("index.html"), html, 2);
    for (size_t i = 0; i < bd_ui_asset_count; i++) {
        const bd_ui_asset *a = &bd_ui_assets[i];
        cr_expect_not_null(a->content_type);
        cr_expect_gt(a->len, 0, "%s is empty", a->name);
        if (strncmp(a->name, "vendor/", 7) != 0 && strstr(a->name, ".js")) {
            scan_refs(a, js, 3);
            modules++;
        }
    }
    cr_expect_geq(modules, 2, "the page's own modules are missing from the table");
}
