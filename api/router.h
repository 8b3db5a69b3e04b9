/* router.h: maps (method, path) to a route of a static table.
 *
 * Patterns are literal segments and {placeholders}; {id} accepts only a
 * decimal integer in 1..INT64_MAX (anything else, "abc", "0", "-1", "007",
 * 20 digits, does not match, so the answer is 404), any other {name} accepts
 * one non-empty segment shorter than BD_PATH_PARAM_TEXT_MAX. Matching is a
 * linear scan comparing characters: no allocation, no regex. */
#ifndef BD_API_ROUTER_H
#define BD_API_ROUTER_H

#include <stddef.h>

#include "http.h"

#define BD_ROUTES_MAX 32

/* The daemon's routes (static table, borrowed); *count receives its length. */
const bd_route *bd_routes(size_t *count);

/* Calls fn on each route of the daemon's table, in table order. */
void bd_router_each(void (*fn)(const bd_route *route, void *ctx), void *ctx);

/* Matches req->method and req->path against table[0..n). Fills req->route,
 * req->pattern_id, req->params and (for 405) req->allow. Returns 0 when a
 * route matched, BD_EMETHOD when the path matched under other methods only,
 * BD_ENOTFOUND when no pattern matched. */
int bd_router_match(const bd_route *table, size_t n, bd_http_req *req);

#endif
