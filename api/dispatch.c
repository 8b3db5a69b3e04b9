/* dispatch.c: the checks every request passes before its handler (see dispatch.h). */
#include "dispatch.h"

#include <string.h>

#include "auth.h"
#include "body.h"
#include "../server/engine_cluster.h"
#include "errors.h"
#include "forward.h"
#include "idempotency.h"
#include "router.h"

#include <inttypes.h>
#include <stdlib.h>

/* Cluster mode: how often a request is sent to the study's holder again
 * after the holder was gone or no longer held it (then 503 "moved"). */
#define FORWARD_TRIES 4

void bd_api_route(bd_http_req *req)
{
    size_t n;
    const bd_route *table = bd_routes(&n);

    (void)bd_router_match(table, n, req);
}

/* Everything before the handler; returns 0 or a BD_E* code with err set. */
static int prepare(const bd_api *api, bd_http_req *req, bd_http_resp *resp, bd_err *err)
{
    const bd_route *r = req->route;
    int rc;

    if (!r && req->pattern_id >= 0) {
        memcpy(resp->allow, req->allow, sizeof resp->allow);
        return bd_err_set(err, BD_EMETHOD, NULL, "%s is not allowed on %s (allowed: %s)", req->method_name, req->path,
                          req->allow);
    }
    if (!r)
        return bd_err_set(err, BD_ENOTFOUND, NULL, "no route for %s %s", req->method_name, req->path);
    /* A request a peer forwarded to a daemon id other than this one: the
     * peer's address now serves a restarted daemon. Nothing is done here. */
    if (req->forwarded_to && api->engine &&
        (!bd_engine_cluster(api->engine) || strtoll(req->forwarded_to, NULL, 10) != bd_engine_daemon_id(api->engine)))
        return bd_err_set(err, BD_EFORWARD, "daemon", "this is not daemon %s; look its studies up again",
                          req->forwarded_to);
    if (req->inline_only && !(r->flags & BD_ROUTE_INLINE))
        return bd_err_set(err, BD_EWOULDBLOCK, NULL, "%s runs on a handler thread", r->pattern);
    if (r->flags & BD_ROUTE_AUTH) {
        rc = bd_api_authenticate(api->engine, req->authorization, &req->caller, err);
        if (rc < 0)
            return rc;
        req->authenticated = 1;
    }
    if (r->flags & (BD_ROUTE_BODY_OPTIONAL | BD_ROUTE_BODY_REQUIRED)) {
        if (req->body_len > 0 && !bd_api_is_json_media(req->content_type))
            return bd_err_set(err, BD_EMEDIA, NULL, "the body must be sent with Content-Type: application/json");
        rc = bd_api_parse_body(req->body, req->body_len, (r->flags & BD_ROUTE_BODY_REQUIRED) != 0, &req->json, err);
        if (rc < 0)
            return rc;
    }
    if (r->method == BD_HTTP_POST || r->method == BD_HTTP_DELETE || r->method == BD_HTTP_PATCH) {
        if (req->idem_key) {
            rc = bd_api_check_idem_key(req->idem_key, err);
            if (rc < 0)
                return rc;
        }
        bd_api_fingerprint(req->fingerprint, sizeof req->fingerprint, req->method_name, req->path, req->body,
                           req->body_len);
        req->ereq.caller = &req->caller;
        req->ereq.idem_key = req->idem_key;
        req->ereq.fingerprint = req->fingerprint;
        req->ereq.defer_durable = req->defer_durable ? &req->durable_ticket : NULL;
        req->ereq.inline_only = req->inline_only;
    }
    return 0;
}

/* Runs the route's handler. In cluster mode a study a live peer holds
 * makes it fail with BD_EFORWARD having done nothing: the request is then
 * sent to that peer (forward.h) and *forwarded set when resp holds the
 * peer's answer, as it is. Returns the handler's (or the forward's) code. */
static int run_handler(const bd_api *api, bd_http_req *req, bd_http_resp *resp, int *forwarded, bd_err *err)
{
    for (int tries = 0;; tries++) {
        resp->status = req->route->status;
        int rc = req->route->handler(api, req, resp, err);
        if (rc != BD_EFORWARD || req->forwarded_to)
            return rc; /* a forwarded request is never forwarded again: 421 "study" to its sender */
        int64_t peer;
        char url[256];
        bd_http_resp_clear(resp);
        bd_err_clear(err);
        if (bd_engine_forward_target(&peer, url, sizeof url) != 0)
            return bd_err_set(err, BD_EINTERNAL, NULL, "a study operation asked to forward to no daemon");
        if (tries == FORWARD_TRIES) {
            rc = bd_err_set(err, BD_EMOVED, "study", "the study moved between daemons %d times; retry", tries);
            err->retry_after = 1;
            return rc;
        }
        rc = bd_api_forward(req, peer, url, resp, err);
        if (rc == BD_FORWARD_ANSWERED) {
            *forwarded = 1;
            return 0;
        }
        if (rc < 0)
            return rc;
        if (rc == BD_FORWARD_GONE)
            bd_engine_peer_gone(api->engine, peer);
        else
            bd_engine_forward_stale(api->engine);
        bd_http_resp_clear(resp);
    }
}

int bd_api_dispatch(const bd_api *api, bd_http_req *req, bd_http_resp *resp)
{
    bd_err err;
    int rc, forwarded = 0;

    bd_err_clear(&err);
    rc = prepare(api, req, resp, &err);
    if (rc < 0)
        goto out;
    rc = run_handler(api, req, resp, &forwarded, &err);
    if (rc == 0 && !resp->json && !resp->text && !resp->stream_read && !resp->body)
        rc = bd_err_set(&err, BD_EINTERNAL, NULL, "the handler of %s %s gave no answer", req->method_name,
                        req->route->pattern);
    if (rc < 0)
        err.code = rc; /* the return value decides, should err disagree */
out:
    json_decref(req->json);
    req->json = NULL;
    if (rc == BD_EWOULDBLOCK && req->inline_only) { /* nothing was done: the server runs it elsewhere */
        bd_http_resp_clear(resp);
        return rc;
    }
    if (rc < 0)
        bd_api_error_response(resp, &err);
    return 0;
}
