/* handlers_ui.c: the web dashboard under /ui/, served from the files
 * compiled into the binary (api/ui_assets.h); no authentication, since the
 * files hold no data: the page asks the JSON API for everything with the
 * user's token.
 *
 * Every answer carries a Content-Security-Policy that allows only the
 * daemon's own scripts, styles and API (no inline script, no framing), so a
 * hostile study name that slipped into markup still could not run. Files
 * are revalidated on each load (Cache-Control: no-cache) against their
 * ETag: a new daemon never serves a stale dashboard, an unchanged one
 * answers 304 without a body. */
#include <stdio.h>

#include "handlers.h"
#include "ui_assets.h"

static const char csp[] = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                          "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/* The headers every /ui answer shares. */
static int add_common_headers(bd_http_resp *resp)
{
    int rc = bd_http_resp_add_header(resp, "Content-Security-Policy", csp);

    if (rc == 0)
        rc = bd_http_resp_add_header(resp, "X-Content-Type-Options", "nosniff");
    if (rc == 0)
        rc = bd_http_resp_add_header(resp, "Referrer-Policy", "no-referrer");
    return rc;
}

/* Answers with the asset called name, or 304 when the client holds it already. */
static int serve(const bd_http_req *req, bd_http_resp *resp, const char *name, bd_err *err)
{
    const bd_ui_asset *a = bd_ui_asset_find(name);
    int rc;

    if (!a)
        return bd_err_set(err, BD_ENOTFOUND, NULL, "the dashboard has no file %s", name);
    rc = add_common_headers(resp);
    if (rc == 0)
        rc = bd_http_resp_add_header(resp, "ETag", a->etag);
    if (rc == 0)
        rc = bd_http_resp_add_header(resp, "Cache-Control", "no-cache");
    if (rc < 0)
        return bd_err_set(err, rc, NULL, "too many response headers");
    resp->content_type = a->content_type;
    resp->body = a->data;
    resp->body_len = a->len;
    if (bd_ui_etag_matches(req->if_none_match, a->etag)) {
        resp->status = 304;
        resp->body_len = 0;
    }
    return 0;
}

/* GET /ui: relative URLs in index.html resolve against /ui/, not /. */
BD_HANDLER(bd_h_ui_redirect)
{
    static const char note[] = "the dashboard is at /ui/\n";
    int rc;

    (void)api;
    (void)req;
    rc = add_common_headers(resp);
    if (rc == 0)
        rc = bd_http_resp_add_header(resp, "Location", "/ui/");
    if (rc < 0)
        return bd_err_set(err, rc, NULL, "too many response headers");
    resp->content_type = "text/plain; charset=utf-8";
    resp->body = note;
    resp->body_len = sizeof note - 1;
    return 0;
}

BD_HANDLER(bd_h_ui_index)
{
    (void)api;
    return serve(req, resp, "index.html", err);
}

BD_HANDLER(bd_h_ui_file)
{
    (void)api;
    return serve(req, resp, req->params.v[0].text, err);
}

BD_HANDLER(bd_h_ui_vendor_file)
{
    char name[BD_PATH_PARAM_TEXT_MAX + 8];

    (void)api;
    snprintf(name, sizeof name, "vendor/%s", req->params.v[0].text);
    return serve(req, resp, name, err);
}
