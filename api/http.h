/* http.h: the HTTP request and response as the api layer sees them, free of
 * libmicrohttpd types, so routing, checks and handlers are plain functions
 * that unit tests can drive. api/http_server.c is the only file that talks to
 * libmicrohttpd: it fills a bd_http_req, calls bd_api_dispatch and sends the
 * bd_http_resp.
 *
 * Lifetimes: every pointer in a bd_http_req is borrowed from the connection
 * and valid until the response is queued. */
#ifndef BD_API_HTTP_H
#define BD_API_HTTP_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "../server/common.h"
#include "../server/engine.h"

typedef enum bd_http_method {
    BD_HTTP_GET,
    BD_HTTP_POST,
    BD_HTTP_DELETE,
    BD_HTTP_PUT,
    BD_HTTP_PATCH,
    BD_HTTP_HEAD,
    BD_HTTP_OPTIONS,
    BD_HTTP_OTHER,
    BD_HTTP_METHOD_COUNT
} bd_http_method;

/* Exact, case-sensitive method name ("GET") -> method; BD_HTTP_OTHER if unknown. */
bd_http_method bd_http_method_parse(const char *name);
/* Static string: "GET", ...; "OTHER" for BD_HTTP_OTHER. */
const char *bd_http_method_name(bd_http_method m);

#define BD_PATH_PARAMS_MAX 2
#define BD_PATH_PARAM_TEXT_MAX 128
#define BD_FINGERPRINT_MAX 512

/* Values of the {placeholders} of a matched route, in pattern order. */
typedef struct bd_path_params {
    int count;
    struct {
        int64_t num;                       /* {id}: 1..INT64_MAX; 0 for text parameters */
        char text[BD_PATH_PARAM_TEXT_MAX]; /* the segment as decoded, NUL-terminated */
    } v[BD_PATH_PARAMS_MAX];
} bd_path_params;

/* Looks up query parameter key: returns its value (borrowed; NULL for
 * "?key" without '=') and sets *present (never NULL) to whether it appeared. */
typedef const char *(*bd_query_fn)(void *ctx, const char *key, int *present);

struct bd_api;
struct bd_route;
struct bd_http_req;
struct bd_http_resp;

/* A route's work: on success fills resp->json (new) or resp->text and returns
 * 0 (resp->status defaults to the route's success status); on failure returns
 * a BD_E* code with err filled, and the dispatcher writes the error response. */
typedef int (*bd_handler_fn)(const struct bd_api *api, struct bd_http_req *req, struct bd_http_resp *resp, bd_err *err);

enum {
    BD_ROUTE_AUTH = 1,          /* needs Authorization: Bearer <token> */
    BD_ROUTE_BODY_OPTIONAL = 2, /* a JSON object body; an empty body means {} */
    BD_ROUTE_BODY_REQUIRED = 4, /* a JSON object body; an empty body is 400 */
    BD_ROUTE_INLINE = 8         /* a short study operation: may run on the polling thread (bd_http_req.inline_only) */
};                              /* without either BODY flag a body is ignored */

typedef struct bd_route {
    bd_http_method method;
    const char *pattern; /* "/v1/studies/{id}/suggest": {id} is an integer >= 1, other {x} any segment */
    bd_handler_fn handler;
    unsigned flags; /* BD_ROUTE_* */
    int status;     /* status of a successful answer (200 or 201) */
} bd_route;

typedef struct bd_http_req {
    /* filled by the server */
    bd_http_method method;
    const char *method_name;   /* as received */
    const char *path;          /* decoded, without the query string */
    const char *target;        /* the request target as received (path and query, not decoded); NULL if unknown */
    const char *forwarded_to;  /* cluster mode: the Banditd-Forwarded-To header (api/forward.h); NULL when absent */
    const char *authorization; /* header values; NULL when absent */
    const char *content_type;
    const char *idem_key;
    const char *if_none_match;
    const char *body; /* raw body, body_len bytes (not NUL-terminated) */
    size_t body_len;
    bd_query_fn query; /* NULL: the request has no query parameters */
    void *query_ctx;

    /* filled by bd_api_route */
    const bd_route *route; /* NULL: no route (404) or wrong method (405) */
    int pattern_id;        /* index in the route table of the first route with this
                              pattern (metrics label); -1 when no pattern matched */
    bd_path_params params;
    char allow[64]; /* "GET, POST" when the path matched but the method did not */

    /* filled by bd_api_dispatch before the handler runs */
    bd_caller caller;
    int authenticated;
    json_t *json;    /* the parsed body (owned by the dispatcher), NULL for bodiless routes */
    bd_request ereq; /* caller, idempotency key and fingerprint for state changes */
    /* Set by the server before dispatch: study operations do not wait until
     * their writes are on disk, they leave the ticket to wait for in
     * durable_ticket (0: nothing to wait for) and the server waits before
     * it answers (bd_request.defer_durable). */
    int defer_durable;
    uint64_t durable_ticket;
    /* Set by the server: run the request only if it cannot wait or take
     * long (a BD_ROUTE_INLINE route, bd_request.inline_only); else
     * bd_api_dispatch returns BD_EWOULDBLOCK having done nothing. */
    int inline_only;
    char fingerprint[BD_FINGERPRINT_MAX];
} bd_http_req;

#define BD_RESP_HEADERS_MAX 8

/* An extra response header; both strings static or outliving the response. */
typedef struct bd_http_header {
    const char *name;
    const char *value;
} bd_http_header;

typedef struct bd_http_resp {
    int status;
    json_t *json; /* new: the body, sent compactly as application/json */
    char *text;   /* new (free()): the body when json is NULL */
    size_t text_len;
    /* A streamed body (json and text NULL): stream_read fills buf with up to
     * max bytes and returns how many, 0 at the end, < 0 on an error (the
     * connection is then cut, so the client sees a truncated answer). It runs
     * on the connection's polling thread after the handler returned; the
     * server owns stream_ctx from then on and frees it with stream_free. */
    long (*stream_read)(void *ctx, char *buf, size_t max);
    void (*stream_free)(void *ctx);
    void *stream_ctx;
    char disposition[160];    /* Content-Disposition header when non-empty */
    const void *body; /* borrowed, static (compiled-in files): the body when json, text and stream_read are NULL */
    size_t body_len;
    const char *content_type; /* static or in owned; NULL means application/json */
    bd_http_header headers[BD_RESP_HEADERS_MAX]; /* extra headers, sent in order */
    int header_count;
    char allow[64];           /* Allow header when non-empty */
    int retry_after;          /* Retry-After header (seconds) when > 0: a 429's */
    int www_authenticate;     /* send WWW-Authenticate: Bearer */
    int close;                /* send Connection: close */
    int err_code;             /* BD_E* when this is an error answer, else 0 */
    char err_message[256];    /* its message, for the error log */
    void *owned;              /* free()d with the response: a forwarded answer's header strings */
} bd_http_resp;

/* What handlers and the dispatcher share for the life of the server. */
typedef struct bd_api {
    bd_engine *engine;
    struct bd_metrics *metrics;
} bd_api;

/* Query value for key (borrowed), NULL if absent; *present (may be NULL) is
 * set to whether key appeared at all, even without '='. */
const char *bd_http_query(const bd_http_req *req, const char *key, int *present);

/* Appends header name: value to resp (both static or outliving resp).
 * Returns 0, or BD_EINTERNAL when BD_RESP_HEADERS_MAX are already set. */
BD_MUST_CHECK int bd_http_resp_add_header(bd_http_resp *resp, const char *name, const char *value);

/* Releases what a response owns and zeroes it. */
void bd_http_resp_clear(bd_http_resp *resp);

#endif
