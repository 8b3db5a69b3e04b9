/* http_server.c: libmicrohttpd glue, the only file that includes microhttpd.h.
 *
 * MHD calls on_request several times per request: once when the headers are
 * in (we allocate the request context, route, and reject an oversized
 * Content-Length), once per body chunk (we append), and once more with no
 * data (we dispatch and queue the answer). on_completed frees the context
 * whatever happened to the connection. */
#include "http_server.h"
#include "json_out.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../server/log.h"
#include "dispatch.h"
#include "errors.h"
#include "http.h"
#include "metrics.h"
#include "router.h"

#define INLINE_BODY 1024  /* bodies this small need no second allocation */
#define DISCARD_FACTOR 16 /* a chunked body this many times the limit closes the connection */
#define DEFAULT_TIMEOUT 60
#define JSON_BUF 16384 /* per-thread serialization buffer */

struct bd_http_server {
    struct MHD_Daemon *daemon;
    bd_api api;
    size_t max_body;
    atomic_int in_flight; /* requests between their first call and on_completed */
    atomic_int stopping;  /* a graceful stop began: requests starting now get 503 */
    unsigned port;
};

typedef struct request_ctx {
    bd_http_req req;
    double t0;  /* bd_monotonic() when the headers arrived */
    char *body; /* inline_body or heap */
    size_t len, cap;
    size_t discarded; /* body bytes dropped after the limit was passed */
    int too_large;
    int late;     /* began after the stop did: answered 503 */
    int answered; /* a response is queued */
    char inline_body[INLINE_BODY];
} request_ctx;

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    bd_logv(BD_LOG_WARN, fmt, ap);
}

/* bd_query_fn over the connection's parsed query string. */
static const char *lookup_query(void *conn, const char *key, int *present)
{
    const char *value = NULL;

    *present = MHD_lookup_connection_value_n(conn, MHD_GET_ARGUMENT_KIND, key, strlen(key), &value, NULL) == MHD_YES;
    return value;
}

/* Serializes resp into an MHD response; NULL only if MHD cannot allocate. */
static struct MHD_Response *make_response(bd_http_resp *resp)
{
    static _Thread_local char tbuf[JSON_BUF];
    struct MHD_Response *mr;

    if (resp->json) {
        size_t n = json_dumpb(resp->json, tbuf, sizeof tbuf, JSON_COMPACT);
        if (n > 0 && n <= sizeof tbuf) {
            n = bd_json_shorten_reals(tbuf, n);
            mr = MHD_create_response_from_buffer(n, tbuf, MHD_RESPMEM_MUST_COPY);
        } else {
            char *s = json_dumps(resp->json, JSON_COMPACT);
            if (!s)
                s = bd_xstrdup(
                    "{\"error\":{\"code\":\"internal\",\"message\":\"unserializable answer\",\"field\":null}}");
            mr = MHD_create_response_from_buffer(bd_json_shorten_reals(s, strlen(s)), s, MHD_RESPMEM_MUST_FREE);
            if (!mr)
                free(s);
        }
    } else {
        mr = MHD_create_response_from_buffer(resp->text_len, resp->text, MHD_RESPMEM_MUST_FREE);
        if (mr)
            resp->text = NULL;
    }
    if (!mr)
        return NULL;
    MHD_add_response_header(mr, MHD_HTTP_HEADER_CONTENT_TYPE,
                            resp->content_type ? resp->content_type : "application/json");
    if (resp->allow[0])
        MHD_add_response_header(mr, MHD_HTTP_HEADER_ALLOW, resp->allow);
    if (resp->www_authenticate)
        MHD_add_response_header(mr, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    if (resp->close)
        MHD_add_response_header(mr, MHD_HTTP_HEADER_CONNECTION, "close");
    return mr;
}

/* Queues resp, records metrics and writes the request's log line. */
static enum MHD_Result answer(bd_http_server *s, struct MHD_Connection *conn, request_ctx *ctx, bd_http_resp *resp)
{
    struct MHD_Response *mr = make_response(resp);
    enum MHD_Result ret = MHD_NO;
    const bd_http_req *req = &ctx->req;
    const char *user = req->authenticated ? req->caller.name : "-";
    double secs;

    ctx->answered = 1;
    if (mr) {
        ret = MHD_queue_response(conn, (unsigned)resp->status, mr);
        MHD_destroy_response(mr);
    }
    secs = bd_monotonic() - ctx->t0;
    bd_metrics_observe(s->api.metrics, req->pattern_id, req->method, resp->status, secs);
    if (resp->status >= 500) /* with the detail; 503 only happens while stopping, so it is no error */
        bd_log(resp->status == 503 ? BD_LOG_WARN : BD_LOG_ERROR, "%s %s %d %.3fms %s %s: %s", req->method_name,
               req->path, resp->status, secs * 1e3, user, bd_err_name(resp->err_code), resp->err_message);
    else
        bd_log(BD_LOG_INFO, "%s %s %d %.3fms %s", req->method_name, req->path, resp->status, secs * 1e3, user);
    bd_http_resp_clear(resp);
    return ret;
}

static enum MHD_Result answer_error(bd_http_server *s, struct MHD_Connection *conn, request_ctx *ctx, int code,
                                    const char *message)
{
    bd_http_resp resp = {0};
    bd_err err;

    bd_err_set(&err, code, NULL, "%s", message);
    resp.close = 1;
    bd_api_error_response(&resp, &err);
    return answer(s, conn, ctx, &resp);
}

/* First call: headers are in, no body yet. */
static enum MHD_Result begin(bd_http_server *s, struct MHD_Connection *conn, const char *url, const char *method,
                             void **con_cls)
{
    request_ctx *ctx = bd_xmalloc(sizeof *ctx);
    const char *cl;

    memset(ctx, 0, offsetof(request_ctx, inline_body));
    ctx->t0 = bd_monotonic();
    ctx->body = ctx->inline_body;
    ctx->cap = sizeof ctx->inline_body;
    ctx->req.method = bd_http_method_parse(method);
    ctx->req.method_name = method;
    ctx->req.path = url;
    *con_cls = ctx;
    atomic_fetch_add_explicit(&s->in_flight, 1, memory_order_relaxed);
    ctx->late = atomic_load(&s->stopping);
    bd_api_route(&ctx->req);

    cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl) {
        char *end;
        unsigned long long n;

        errno = 0;
        n = strtoull(cl, &end, 10);
        if (errno == ERANGE || n > s->max_body) {
            char msg[128];
            snprintf(msg, sizeof msg, "the body is larger than the limit of %zu bytes", s->max_body);
            return answer_error(s, conn, ctx, BD_ETOOLARGE, msg);
        }
        if (n > ctx->cap) {
            ctx->body = bd_xmalloc((size_t)n);
            ctx->cap = (size_t)n;
        }
    }
    return MHD_YES;
}

static enum MHD_Result append(bd_http_server *s, request_ctx *ctx, const char *data, size_t n)
{
    if (ctx->answered)
        return MHD_YES;
    if (ctx->too_large || n > s->max_body - ctx->len) {
        ctx->too_large = 1;
        ctx->discarded += n;
        return ctx->discarded / DISCARD_FACTOR > s->max_body ? MHD_NO : MHD_YES;
    }
    if (ctx->len + n > ctx->cap) {
        size_t cap = ctx->cap * 2 > ctx->len + n ? ctx->cap * 2 : ctx->len + n;
        if (cap > s->max_body)
            cap = s->max_body;
        if (ctx->body == ctx->inline_body) {
            ctx->body = memcpy(bd_xmalloc(cap), ctx->inline_body, ctx->len);
        } else {
            ctx->body = bd_xrealloc(ctx->body, cap);
        }
        ctx->cap = cap;
    }
    memcpy(ctx->body + ctx->len, data, n);
    ctx->len += n;
    return MHD_YES;
}

/* Last call: the whole body is in. */
static enum MHD_Result finish(bd_http_server *s, struct MHD_Connection *conn, request_ctx *ctx)
{
    bd_http_req *req = &ctx->req;
    bd_http_resp resp = {0};

    if (ctx->answered)
        return MHD_YES;
    if (ctx->late)
        return answer_error(s, conn, ctx, BD_EUNAVAILABLE, "the server is shutting down; retry later");
    if (ctx->too_large) {
        char msg[128];
        snprintf(msg, sizeof msg, "the body is larger than the limit of %zu bytes", s->max_body);
        return answer_error(s, conn, ctx, BD_ETOOLARGE, msg);
    }
    req->authorization = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    req->content_type = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    req->idem_key = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Idempotency-Key");
    req->body = ctx->body;
    req->body_len = ctx->len;
    req->query = lookup_query;
    req->query_ctx = conn;
    bd_api_dispatch(&s->api, req, &resp);
    return answer(s, conn, ctx, &resp);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    bd_http_server *s = cls;
    request_ctx *ctx = *con_cls;

    (void)version;
    if (!ctx)
        return begin(s, conn, url, method, con_cls);
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        return append(s, ctx, upload_data, n);
    }
    return finish(s, conn, ctx);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    bd_http_server *s = cls;
    request_ctx *ctx = *con_cls;

    (void)conn;
    if (!ctx)
        return;
    if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK && bd_log_enabled(BD_LOG_DEBUG))
        bd_log(BD_LOG_DEBUG, "%s %s: connection ended early (reason %d)%s", ctx->req.method_name, ctx->req.path,
               (int)toe, ctx->answered ? "" : " before an answer");
    if (ctx->body != ctx->inline_body)
        free(ctx->body);
    free(ctx);
    *con_cls = NULL;
    atomic_fetch_sub_explicit(&s->in_flight, 1, memory_order_relaxed);
}

int bd_http_server_start(const bd_http_opts *opts, bd_engine *engine, bd_http_server **out, bd_err *err)
{
    bd_http_server *s;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG;
    size_t nroutes;
    const bd_route *routes = bd_routes(&nroutes);
    const union MHD_DaemonInfo *info;
    struct MHD_OptionItem options[4];
    size_t n = 0;
    uint16_t port = 0;

    if (sodium_init() < 0)
        return bd_err_set(err, BD_EINTERNAL, NULL, "libsodium failed to initialize");
    flags |= MHD_is_feature_supported(MHD_FEATURE_EPOLL) == MHD_YES ? MHD_USE_EPOLL : MHD_USE_POLL;
    if (opts->addr->sa_family == AF_INET6) {
        flags |= MHD_USE_IPv6;
        port = ntohs(((const struct sockaddr_in6 *)(const void *)opts->addr)->sin6_port);
    } else {
        port = ntohs(((const struct sockaddr_in *)(const void *)opts->addr)->sin_port);
    }

    /* the pool-size option only when there is a pool: MHD warns about 1 */
    if (opts->threads > 1)
        options[n++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, opts->threads, NULL};
    options[n++] = (struct MHD_OptionItem){
        MHD_OPTION_CONNECTION_TIMEOUT, opts->timeout_seconds ? (intptr_t)opts->timeout_seconds : DEFAULT_TIMEOUT, NULL};
    options[n++] = (struct MHD_OptionItem){MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024, NULL};
    options[n++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};

    s = bd_xcalloc(1, sizeof *s);
    s->api.engine = engine;
    s->api.metrics = bd_metrics_new(routes, nroutes);
    s->max_body = opts->max_body_bytes;
    errno = 0;
    /* clang-format off */
    s->daemon = MHD_start_daemon(flags, port, NULL, NULL, on_request, s,
                                 MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, /* first: MHD logs nowhere else */
                                 MHD_OPTION_SOCK_ADDR, opts->addr,
                                 MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                                 MHD_OPTION_ARRAY, options,
                                 MHD_OPTION_END);
    /* clang-format on */
    if (!s->daemon) {
        int e = errno;
        bd_metrics_free(s->api.metrics);
        free(s);
        return bd_err_set(err, BD_EINTERNAL, NULL, "cannot start the HTTP server%s%s", e ? ": " : "",
                          e ? strerror(e) : "");
    }
    info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? info->port : port;
    *out = s;
    return 0;
}

unsigned bd_http_server_port(const bd_http_server *s)
{
    return s->port;
}

void bd_http_server_stop(bd_http_server *s, double grace_seconds)
{
    MHD_socket listen_fd;
    double deadline;

    if (!s)
        return;
    atomic_store(&s->stopping, 1);
    listen_fd = MHD_quiesce_daemon(s->daemon);
    /* MHD no longer accepts, but the kernel would still queue connections
     * that then hang until the stop; shutting the socket down refuses them
     * now. It stays open (MHD threads may still hold it) until after stop. */
    if (listen_fd != MHD_INVALID_SOCKET)
        shutdown(listen_fd, SHUT_RDWR);
    deadline = bd_monotonic() + grace_seconds;
    while (atomic_load(&s->in_flight) > 0 && bd_monotonic() < deadline) {
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (atomic_load(&s->in_flight) > 0)
        bd_log(BD_LOG_WARN, "stopping with %d requests still in progress", atomic_load(&s->in_flight));
    MHD_stop_daemon(s->daemon);
    if (listen_fd != MHD_INVALID_SOCKET)
        close(listen_fd);
    bd_metrics_free(s->api.metrics);
    free(s);
}
