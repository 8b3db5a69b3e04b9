/* dispatch.h: one request from routing to answer, in a fixed order:
 *   404/405 from the router; 401 without a valid bearer
 *   token; 415 for a body that is not application/json; 400 for a bad body
 *   or Idempotency-Key; then the route's handler. Every failure becomes the
 *   JSON error answer of errors.h. */
#ifndef BD_API_DISPATCH_H
#define BD_API_DISPATCH_H

#include "http.h"

/* Routes req against the daemon's table (fills route, pattern_id, params,
 * allow). Cheap; the server calls it as soon as the headers are in. */
void bd_api_route(bd_http_req *req);

/* Answers a routed request: fills resp (which must be zeroed) and returns 0;
 * errors become error answers. With req->inline_only, BD_EWOULDBLOCK
 * instead when the request could wait or take long (a route without
 * BD_ROUTE_INLINE, a busy, slow or unloaded study): nothing was done and
 * resp is zeroed, so it may be dispatched again without the flag. */
int bd_api_dispatch(const bd_api *api, bd_http_req *req, bd_http_resp *resp);

#endif
