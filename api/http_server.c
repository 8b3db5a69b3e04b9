/* http_server.c: libmicrohttpd glue; with mhd_errors.c (libmicrohttpd's own
 * error answers, as JSON) the only code that includes microhttpd.h.
 *
 * MHD calls on_request several times per request: once when the headers are
 * in (we allocate the request context, route, and reject an oversized
 * Content-Length), once per body chunk (we append), and once more with no
 * data (we dispatch and queue the answer). on_completed frees the context
 * whatever happened to the connection.
 *
 * Slow clients: every open connection has a conn_track (MHD's socket
 * context) holding the time by which its next request's headers must be
 * in. MHD's own timeout is an idle timeout, which a client trickling a byte
 * now and then never reaches, so a sweeper thread shuts down the sockets
 * past their deadline; MHD then sees the end of the stream and closes the
 * connection as it does for any client that hangs up. A request pays a few
 * relaxed atomic operations and clock reads, no lock: the tracker's lock is
 * taken when a connection opens or closes and by the sweeper. Connection
 * limits are MHD's (total and per client address), set from the open-file
 * limit and bd_http_opts.
 *
 * Two ways to run requests. With PostgreSQL, MHD's polling threads only
 * read and send: every request runs on a handler thread (request_pool.c),
 * its connection suspended meanwhile. With SQLite (bd_http_opts.run_inline)
 * one thread of ours drives MHD (loop_main) and runs the short study
 * operations itself (BD_ROUTE_INLINE routes on fast, free, loaded studies):
 * it handles every request that arrived in a turn, then commits them as one
 * batch and only then lets their answers go, with no hand-off between
 * threads (issue 18: that hand-off, the wake-ups and the suspend/resume
 * calls cost more CPU than the requests). Anything else it cannot run
 * without waiting goes to the handler threads as with PostgreSQL. */
#include "http_server.h"
#include "json_out.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../server/engine_cluster.h"
#include "../server/log.h"
#include "dispatch.h"
#include "errors.h"
#include "forward.h"
#include "http.h"
#include "metrics.h"
#include "mhd_errors.h"
#include "request_pool.h"
#include "router.h"

#define INLINE_BODY 1024  /* bodies this small need no second allocation */
#define DISCARD_FACTOR 16 /* a chunked body this many times the limit closes the connection */
#define DEFAULT_TIMEOUT 60
#define DEFAULT_HEADER_TIMEOUT 10
#define JSON_BUF 16384  /* per-thread serialization buffer */
#define SWEEP_MS 250    /* how often header deadlines are checked */
#define FD_RESERVE 128  /* descriptors kept for SQLite, stdio and the listen socket ... */
#define FD_PER_THREAD 3 /* ... and each polling thread's epoll and wake-up descriptors */
#define MAX_CONNECTIONS 1000000
#define QUIET_MS 10000
/* The loop thread holds a batch open while each turn brings more requests,
 * at most this long: the clients answered by the last commit send their
 * next requests meanwhile, and one commit (some WAL pages written) serves
 * them all. */
#define GATHER_SECONDS 0.001
#define LOOP_WAIT_MS 100 /* the loop looks at its stop flag at least this often */
/* A connection's memory (MHD's default, set so the 414 and 431 answers can
 * name it): the request line and headers must fit, with MHD's records of them. */
#define HEADER_BYTES 32768
/* Request-handling threads: a slow scheduler call occupies one, so there
 * are many more than cores (idle ones cost a stack each). */
#define DEFAULT_HANDLERS 64 /* at most one line about refused or timed-out connections this often */

/* An open connection, from MHD's STARTED notification to its CLOSED one.
 * Its socket belongs to it for that whole time: MHD closes the socket only
 * after CLOSED, which unlinks the record under the tracker's lock, so the
 * sweeper may shut the socket down while holding that lock. */
typedef struct conn_track {
    struct conn_track *prev, *next; /* the server's list, under its lock */
    struct bd_http_server *server;
    MHD_socket fd;
    int line_parsed; /* the current request's line was parsed; its polling thread's only */
    char *target;    /* the current request's target as received (new; freed at the next one or on close) */
    atomic_int_fast64_t deadline; /* ms (bd_monotonic) by which the next request's headers must be in;
                                     0: none, a request is being served; -1: expired, being closed */
} conn_track;

struct bd_http_server {
    struct MHD_Daemon *daemon;
    bd_api api;
    int cluster; /* cluster mode: requests may be forwarded to peers (forward.h) */
    size_t max_body;
    atomic_int in_flight; /* requests between their first call and on_completed */
    atomic_int stopping;  /* a graceful stop began: requests starting now get 503 */
    unsigned port;
    int64_t header_ms; /* request headers must be complete within this */
    int64_t idle_ms;   /* MHD closes a connection silent this long */
    unsigned conn_limit, per_ip_limit;
    atomic_int_fast64_t refused_unlogged; /* refusals not yet in a log line */

    pthread_mutex_t lock; /* guards conns and sweeper_stop */
    pthread_cond_t wake;  /* stops the sweeper */
    conn_track conns;     /* sentinel of the circular list of open connections */
    int sweeper_stop;
    int sweeper_started;
    pthread_t sweeper;

    /* The threads that run requests (request_pool.h): a polling thread
     * suspends the connection and queues the request there. */
    bd_pool *pool;

    /* run_inline only: the thread that drives MHD, and the requests it ran
     * whose answers wait for their batch's commit (loop_main's alone). */
    int inline_loop;
    atomic_int loop_stop;
    pthread_t loop;
    int loop_epoll; /* waits on MHD's epoll descriptor and on loop_wake */
    int loop_wake;  /* an eventfd: a handler thread gave a connection back */
    struct request_ctx *batch;
    size_t batch_len;
    uint64_t batch_ticket;
    struct request_ctx *spare_ctx; /* freed contexts kept for the loop's next requests (ctx_alloc) */
    size_t spare_len;
};

static int64_t now_ms(void)
{
    return (int64_t)(bd_monotonic() * 1e3);
}

typedef struct request_ctx {
    bd_http_req req;
    double t0;  /* bd_monotonic() when the headers arrived */
    char *body; /* inline_body or heap */
    size_t len, cap;
    size_t discarded; /* body bytes dropped after the limit was passed */
    int too_large;
    int late;     /* began after the stop did: answered 503 */
    int answered; /* a response is queued */
    struct MHD_Connection *conn;      /* while queued or handled */
    bd_pool_job job;                  /* its place in the pool's queue */
    struct stream_cls *fill;          /* queued to fill this stream's next block, not to run the request */
    int handled;                      /* a handler filled resp and built mr; the connection was resumed */
    int parked;                       /* its answer waited in the pool for its writes to reach the disk */
    bd_http_resp resp;                /* the handler's answer */
    struct MHD_Response *mr;          /* resp serialized by the handler (NULL: out of memory) */
    struct request_ctx *batch_next;   /* run by the loop thread, waiting for its batch's commit */
    char inline_body[INLINE_BODY];
} request_ctx;

/* Starts of libmicrohttpd 0.9.75's messages about one client's doings (it
 * hung up mid-request, sent a malformed request, left before the answer).
 * Any client can cause any number of them, so they are debug lines, not
 * warnings. */
static const char *const client_messages[] = {
    "Connection was closed by remote side",
    "Socket has been disconnected when reading request",
    "Connection socket is closed when reading request",
    "The connection was forcibly closed by remote peer",
    "Error processing request (HTTP response code is",
    "Received HTTP/1.1 request without `Host' header",
    "Too large value of 'Content-Length' header",
    "Failed to parse `Content-Length' header",
    "Failed to send ",
    "Not enough memory in pool to allocate header record", /* too many headers: answered 431 */
    "Closing connection (failed to queue error response)", /* mhd_errors.c wrote the answer itself */
};
/* MHD closed a new connection at once: over the per-IP or the total limit. */
#define REFUSED_MESSAGE "Server reached connection limit"

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    bd_http_server *s = cls;

    (void)bd_mhd_errors_note(fmt, ap); /* an error answer follows; its line is logged below */
    if (strncmp(fmt, REFUSED_MESSAGE, sizeof REFUSED_MESSAGE - 1) == 0) {
        bd_metrics_connection(s->api.metrics, BD_CONN_REFUSED, 1);
        atomic_fetch_add_explicit(&s->refused_unlogged, 1, memory_order_relaxed); /* the sweeper logs them */
        return;
    }
    for (size_t i = 0; i < sizeof client_messages / sizeof client_messages[0]; i++) {
        if (strncmp(fmt, client_messages[i], strlen(client_messages[i])) == 0) {
            if (bd_log_enabled(BD_LOG_DEBUG))
                bd_logv(BD_LOG_DEBUG, fmt, ap);
            return;
        }
    }
    bd_logv(BD_LOG_WARN, fmt, ap);
}

/* The connection's tracker (borrowed; NULL only if MHD has none). */
static conn_track *track_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

    return ci ? ci->socket_context : NULL;
}

/* Sets t's deadline to d unless the sweeper already expired it; with
 * only_earlier, only when d comes before the current deadline. */
static void set_deadline(conn_track *t, int64_t d, int only_earlier)
{
    int_fast64_t cur = atomic_load_explicit(&t->deadline, memory_order_relaxed);

    while (cur != -1 && !(only_earlier && (cur == 0 || cur <= d)) &&
           !atomic_compare_exchange_weak_explicit(&t->deadline, &cur, d, memory_order_relaxed, memory_order_relaxed))
        ;
}

/* MHD's accept policy: once a stop began, a new connection is closed as
 * soon as it is accepted (the client sees the connection end, as it would
 * see a refusal), while connections already open finish their requests. */
static enum MHD_Result accept_policy(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
    const bd_http_server *s = cls;

    (void)addr;
    (void)addrlen;
    return atomic_load(&s->stopping) ? MHD_NO : MHD_YES;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    bd_http_server *s = cls;
    conn_track *t;

    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);

        t = bd_xmalloc(sizeof *t);
        t->server = s;
        t->fd = ci ? ci->connect_fd : MHD_INVALID_SOCKET;
        t->line_parsed = 0;
        t->target = NULL;
        atomic_init(&t->deadline, now_ms() + s->header_ms);
        pthread_mutex_lock(&s->lock);
        t->next = s->conns.next;
        t->prev = &s->conns;
        t->next->prev = t;
        s->conns.next = t;
        pthread_mutex_unlock(&s->lock);
        *socket_context = t;
        bd_metrics_connection(s->api.metrics, BD_CONN_OPENED, 1);
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context) {
        t = *socket_context;
        pthread_mutex_lock(&s->lock);
        t->prev->next = t->next;
        t->next->prev = t->prev;
        pthread_mutex_unlock(&s->lock);
        free(t->target);
        free(t);
        *socket_context = NULL;
        bd_metrics_connection(s->api.metrics, BD_CONN_CLOSED, 1);
    }
}

/* MHD's URI log callback: a request line has arrived, so on a kept-alive
 * connection the header deadline runs from now. The target is kept as
 * received (MHD decodes its own copy in place) for a request forwarded to
 * a peer (forward.h). Returns NULL: the first on_request call still sees no
 * context. */
static void *on_request_line(void *cls, const char *uri, struct MHD_Connection *conn)
{
    bd_http_server *s = cls;
    conn_track *t = track_of(conn);

    if (t) {
        set_deadline(t, now_ms() + s->header_ms, 1);
        t->line_parsed = 1;
        free(t->target);
        t->target = s->cluster ? bd_xstrdup(uri) : NULL;
    }
    return NULL;
}

/* bd_mhd_facts_fn: what libmicrohttpd's own error answers should say. */
static void conn_facts(struct MHD_Connection *conn, bd_mhd_conn_facts *facts)
{
    conn_track *t = track_of(conn);

    facts->request_line_parsed = t && t->line_parsed;
    facts->max_body = t ? t->server->max_body : 0;
    facts->header_bytes = HEADER_BYTES;
}

/* Shuts down the sockets of connections past their header deadline, every
 * SWEEP_MS, until bd_http_server_stop; reports them and the refused
 * connections in at most one line each per QUIET_MS (a flood of slow or
 * refused clients must not flood the log). */
static void *sweeper_main(void *arg)
{
    bd_http_server *s = arg;
    int64_t unlogged = 0, logged_at = now_ms() - QUIET_MS;

    pthread_mutex_lock(&s->lock);
    while (!s->sweeper_stop) {
        struct timespec ts;
        int64_t now = now_ms();
        unsigned closed = 0;

        for (conn_track *t = s->conns.next; t != &s->conns; t = t->next) {
            int_fast64_t d = atomic_load_explicit(&t->deadline, memory_order_relaxed);

            if (d > 0 && d <= now && atomic_compare_exchange_strong(&t->deadline, &d, -1) &&
                t->fd != MHD_INVALID_SOCKET) {
                shutdown(t->fd, SHUT_RDWR);
                closed++;
            }
        }
        if (closed) {
            bd_metrics_connection(s->api.metrics, BD_CONN_HEADER_TIMEOUT, closed);
            unlogged += closed;
        }
        if (now - logged_at >= QUIET_MS) {
            int64_t refused = atomic_exchange(&s->refused_unlogged, 0);

            if (unlogged)
                bd_log(BD_LOG_WARN, "closed %lld connections whose request headers were not complete within %lld s",
                       (long long)unlogged, (long long)(s->header_ms / 1000));
            if (refused)
                bd_log(BD_LOG_WARN,
                       "refused %lld connections over the connection limits (%u per client address, %u in all)",
                       (long long)refused, s->per_ip_limit, s->conn_limit);
            if (unlogged || refused)
                logged_at = now;
            unlogged = 0;
        }
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += SWEEP_MS * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&s->wake, &s->lock, &ts);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/* bd_query_fn over the connection's parsed query string. */
static const char *lookup_query(void *conn, const char *key, int *present)
{
    const char *value = NULL;

    *present = MHD_lookup_connection_value_n(conn, MHD_GET_ARGUMENT_KIND, key, strlen(key), &value, NULL) == MHD_YES;
    return value;
}

#define STREAM_BLOCK 65536 /* what MHD asks a streamed body for at a time */

/* A streamed body (the CSV export) reads storage, which may wait behind a
 * commit or a study's replay: a polling thread must not (it would stall
 * every connection it serves). So each block is read by a handler thread
 * into the stream's buffer while the connection is suspended, and the
 * polling thread only copies it out (stream_reader). */
typedef struct stream_cls {
    long (*read)(void *ctx, char *buf, size_t max);
    void (*free)(void *ctx);
    void *ctx;
    bd_http_server *s;
    request_ctx *rctx; /* its connection's request: the job that fills the block */
    size_t len, pos;   /* of block: what was read, what was copied out */
    int end;           /* 0: more to read; 1: the end; -1: the read failed */
    char block[STREAM_BLOCK];
} stream_cls;

static int enqueue_fill(bd_http_server *s, stream_cls *c);

/* Reads the next block; a handler thread's job (or the polling thread's
 * once the handlers are stopping). */
static void stream_fill(stream_cls *c)
{
    long n = c->read(c->ctx, c->block, sizeof c->block);
    c->pos = 0;
    c->len = n > 0 ? (size_t)n : 0;
    if (n <= 0)
        c->end = n < 0 ? -1 : 1;
}

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    stream_cls *c = cls;
    (void)pos;
    if (c->pos == c->len && !c->end) {
        if (enqueue_fill(c->s, c))
            return 0; /* suspended: MHD asks again once a handler has filled the block */
        stream_fill(c);
    }
    if (c->pos < c->len) {
        size_t n = c->len - c->pos < max ? c->len - c->pos : max;
        memcpy(buf, c->block + c->pos, n);
        c->pos += n;
        return (ssize_t)n;
    }
    return c->end < 0 ? MHD_CONTENT_READER_END_WITH_ERROR : MHD_CONTENT_READER_END_OF_STREAM;
}

static void stream_free(void *cls)
{
    stream_cls *c = cls;
    c->free(c->ctx);
    free(c);
}

/* Serializes resp, the answer to ctx, into an MHD response; NULL only if
 * MHD cannot allocate. */
static struct MHD_Response *make_response(bd_http_server *s, request_ctx *ctx, bd_http_resp *resp)
{
    static _Thread_local char tbuf[JSON_BUF];
    struct MHD_Response *mr;

    if (resp->json) {
        size_t n = json_dumpb(resp->json, tbuf, sizeof tbuf, JSON_COMPACT);
        if (n > 0 && n <= sizeof tbuf) {
            n = bd_json_shorten_reals(tbuf, n);
            mr = MHD_create_response_from_buffer(n, tbuf, MHD_RESPMEM_MUST_COPY);
        } else {
            char *text = json_dumps(resp->json, JSON_COMPACT);
            if (!text)
                text = bd_xstrdup(
                    "{\"error\":{\"code\":\"internal\",\"message\":\"unserializable answer\",\"field\":null}}");
            mr = MHD_create_response_from_buffer(bd_json_shorten_reals(text, strlen(text)), text, MHD_RESPMEM_MUST_FREE);
            if (!mr)
                free(text);
        }
    } else if (resp->stream_read) {
        stream_cls *c = bd_xmalloc(sizeof *c);
        c->read = resp->stream_read;
        c->free = resp->stream_free;
        c->ctx = resp->stream_ctx;
        c->s = s;
        c->rctx = ctx;
        c->len = c->pos = 0;
        c->end = 0;
        mr = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, STREAM_BLOCK, stream_reader, c, stream_free);
        if (mr)
            resp->stream_ctx = NULL; /* MHD's now: stream_free runs when the response is destroyed */
        else
            free(c);
    } else if (resp->text) {
        mr = MHD_create_response_from_buffer(resp->text_len, resp->text, MHD_RESPMEM_MUST_FREE);
        if (mr)
            resp->text = NULL;
    } else {
        mr = MHD_create_response_from_buffer(resp->body_len, (void *)resp->body, MHD_RESPMEM_PERSISTENT);
    }
    if (!mr)
        return NULL;
    MHD_add_response_header(mr, MHD_HTTP_HEADER_CONTENT_TYPE,
                            resp->content_type ? resp->content_type : "application/json");
    if (resp->allow[0])
        MHD_add_response_header(mr, MHD_HTTP_HEADER_ALLOW, resp->allow);
    if (resp->disposition[0])
        MHD_add_response_header(mr, MHD_HTTP_HEADER_CONTENT_DISPOSITION, resp->disposition);
    if (resp->www_authenticate)
        MHD_add_response_header(mr, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    if (resp->retry_after > 0) {
        char secs[16];
        snprintf(secs, sizeof secs, "%d", resp->retry_after);
        MHD_add_response_header(mr, MHD_HTTP_HEADER_RETRY_AFTER, secs);
    }
    if (resp->close)
        MHD_add_response_header(mr, MHD_HTTP_HEADER_CONNECTION, "close");
    for (int i = 0; i < resp->header_count; i++)
        MHD_add_response_header(mr, resp->headers[i].name, resp->headers[i].value);
    return mr;
}

/* Queues mr (resp serialized; NULL when that failed), records metrics and
 * writes the request's log line; frees mr and clears resp. */
static enum MHD_Result send_answer(bd_http_server *s, struct MHD_Connection *conn, request_ctx *ctx,
                                   bd_http_resp *resp, struct MHD_Response *mr)
{
    enum MHD_Result ret = MHD_NO;
    const bd_http_req *req = &ctx->req;
    const char *user = req->authenticated ? req->caller.name : "-";
    double secs;

    ctx->answered = 1;
    if (mr) {
        ret = bd_mhd_queue_response(conn, (unsigned)resp->status, mr);
        MHD_destroy_response(mr);
    }
    secs = bd_monotonic() - ctx->t0;
    bd_metrics_observe(s->api.metrics, req->pattern_id, req->method, resp->status, secs);
    /* with the detail; 503 only happens while stopping, so it is no error;
     * 501 answers a client's unknown transfer coding */
    if (resp->status >= 500 && resp->status != 501)
        bd_log(resp->status == 503 ? BD_LOG_WARN : BD_LOG_ERROR, "%s %s %d %.3fms %s %s: %s", req->method_name,
               req->path, resp->status, secs * 1e3, user, bd_err_name(resp->err_code), resp->err_message);
    else /* one line per request at debug: at info they were most of the log (981 MB in an hour's soak, issue 20) */
        bd_log(BD_LOG_DEBUG, "%s %s %d %.3fms %s", req->method_name, req->path, resp->status, secs * 1e3, user);
    bd_http_resp_clear(resp);
    return ret;
}

static enum MHD_Result answer(bd_http_server *s, struct MHD_Connection *conn, request_ctx *ctx, bd_http_resp *resp)
{
    return send_answer(s, conn, ctx, resp, make_response(s, ctx, resp));
}

/* A connection was resumed: MHD's own wake-up does not reach a loop of
 * ours (libmicrohttpd 0.9.75 signals it only to its internal threads), so
 * the handler threads wake loop_main themselves. The loop thread's own
 * resumes need none. */
static void wake_loop(bd_http_server *s)
{
    if (!s->inline_loop || pthread_equal(pthread_self(), s->loop))
        return;
    uint64_t one = 1;
    if (write(s->loop_wake, &one, sizeof one) < 0) { /* EAGAIN: a wake-up is pending already */
    }
}

/* ---- request handlers: the pool's jobs ---- */

/* Serializes ctx's answer and gives the connection back to its polling
 * thread, which then sends it (on_request). */
static void give_back(bd_http_server *s, request_ctx *ctx)
{
    ctx->mr = make_response(s, ctx, &ctx->resp);
    ctx->handled = 1;
    MHD_resume_connection(ctx->conn);
    wake_loop(s);
}

/* Runs one request; returns 0 when it was answered (ctx may be freed by
 * its polling thread from then on), or the ticket its answer must wait
 * for (request_pool.h: parked). A parked request no longer counts as one in
 * progress for the group commit: it cannot join another batch. */
static uint64_t handle(bd_http_server *s, request_ctx *ctx)
{
    ctx->req.defer_durable = 1;
    ctx->req.durable_ticket = 0;
    bd_api_dispatch(&s->api, &ctx->req, &ctx->resp);
    uint64_t ticket = ctx->req.durable_ticket;
    if (!ticket) {
        give_back(s, ctx);
        return 0;
    }
    ctx->parked = 1;
    bd_engine_request_ended(s->api.engine);
    return ticket;
}

/* A queued request that had not started when the stop's grace ended: it
 * is answered 503 instead of run, so a long queue cannot stretch the stop
 * (issue 20: 136 s after a 10 s grace). */
static void refuse_late(bd_http_server *s, request_ctx *ctx)
{
    bd_err err;
    bd_err_set(&err, BD_EUNAVAILABLE, NULL, "the server is shutting down; retry later");
    ctx->resp.close = 1;
    bd_api_error_response(&ctx->resp, &err);
    give_back(s, ctx);
}

/* Fills ctx's stream with its next block (past the stop's grace: cuts it
 * short instead) and gives the connection back to its polling thread. */
static void run_fill(request_ctx *ctx, int past_grace)
{
    stream_cls *c = ctx->fill;
    bd_http_server *s = c->s; /* once resumed, the stream (and ctx) may be freed by its polling thread */
    ctx->fill = NULL;
    if (past_grace)
        c->end = -1;
    else
        stream_fill(c);
    MHD_resume_connection(ctx->conn);
    wake_loop(s);
}

static request_ctx *ctx_of(bd_pool_job *job)
{
    return (request_ctx *)((char *)job - offsetof(request_ctx, job));
}

static void job_queued(void *cls, bd_pool_job *job)
{
    (void)cls;
    MHD_suspend_connection(ctx_of(job)->conn);
}

static uint64_t job_run(void *cls, bd_pool_job *job, int past_grace)
{
    bd_http_server *s = cls;
    request_ctx *ctx = ctx_of(job);
    if (ctx->fill)
        run_fill(ctx, past_grace);
    else if (past_grace)
        refuse_late(s, ctx);
    else
        return handle(s, ctx);
    return 0;
}

static int job_durable(void *cls, uint64_t ticket, bd_err *err)
{
    bd_http_server *s = cls;
    return bd_engine_durable(s->api.engine, ticket, err);
}

/* A parked request's writes are on disk: its answer goes out; or its batch
 * failed: nothing of it was saved, and the answer says so. */
static void job_done(void *cls, bd_pool_job *job, const bd_err *failed)
{
    bd_http_server *s = cls;
    request_ctx *ctx = ctx_of(job);
    if (failed)
        bd_api_error_response(&ctx->resp, failed);
    give_back(s, ctx);
}

static const bd_pool_ops pool_ops = {job_queued, job_run, job_durable, job_done};

/* Suspends ctx's connection and queues the request for a handler; 0 once
 * the handlers are stopping (the caller then runs the request itself). */
static int enqueue(bd_http_server *s, request_ctx *ctx)
{
    return bd_pool_submit(s->pool, &ctx->job);
}

/* Queues the read of c's next block, as enqueue does a request (called from
 * stream_reader, where MHD allows the suspension); 0 once the handlers are
 * stopping. */
static int enqueue_fill(bd_http_server *s, stream_cls *c)
{
    c->rctx->fill = c;
    if (enqueue(s, c->rctx))
        return 1;
    c->rctx->fill = NULL;
    return 0;
}

/* ---- the loop thread (run_inline) ---- */

/* Runs ctx's request on the loop thread if it cannot wait or take long
 * (bd_http_req.inline_only): 1 when it ran, *ret then being MHD's answer;
 * 0 when nothing was done and it must go to a handler thread. A request
 * with writes joins the batch, its connection suspended until the commit. */
static int run_here(bd_http_server *s, struct MHD_Connection *conn, request_ctx *ctx, enum MHD_Result *ret)
{
    ctx->req.inline_only = 1;
    ctx->req.defer_durable = 1;
    ctx->req.durable_ticket = 0;
    int rc = bd_api_dispatch(&s->api, &ctx->req, &ctx->resp);
    ctx->req.inline_only = 0;
    if (rc == BD_EWOULDBLOCK)
        return 0;
    uint64_t ticket = ctx->req.durable_ticket;
    if (!ticket) {
        *ret = answer(s, conn, ctx, &ctx->resp);
        return 1;
    }
    MHD_suspend_connection(conn);
    ctx->parked = 1; /* as in the pool: it cannot join another batch */
    bd_engine_request_ended(s->api.engine);
    ctx->batch_next = s->batch;
    s->batch = ctx;
    s->batch_len++;
    if (ticket > s->batch_ticket)
        s->batch_ticket = ticket;
    *ret = MHD_YES;
    return 1;
}

/* Commits the batch (a group commit: it carries every write released so
 * far) and gives its requests' connections back with their answers, or
 * with the error that nothing of the batch was saved. */
static void commit_batch(bd_http_server *s)
{
    request_ctx *list = s->batch;
    bd_err err;
    int failed = bd_engine_durable(s->api.engine, s->batch_ticket, &err);
    s->batch = NULL;
    s->batch_len = 0;
    while (list) {
        request_ctx *ctx = list;
        list = ctx->batch_next;
        if (failed)
            bd_api_error_response(&ctx->resp, &err);
        give_back(s, ctx);
    }
}

/* Waits (at most LOOP_WAIT_MS, and never past MHD's next timeout) until
 * MHD has a socket ready or a handler thread gave a connection back. */
static void loop_wait(bd_http_server *s)
{
    MHD_UNSIGNED_LONG_LONG mhd_ms = LOOP_WAIT_MS;
    if (MHD_get_timeout(s->daemon, &mhd_ms) != MHD_YES || mhd_ms > LOOP_WAIT_MS)
        mhd_ms = LOOP_WAIT_MS;
    struct epoll_event ev[2];
    int n = epoll_wait(s->loop_epoll, ev, 2, (int)mhd_ms);
    for (int i = 0; i < n; i++)
        if (ev[i].data.fd == s->loop_wake) {
            uint64_t count;
            if (read(s->loop_wake, &count, sizeof count) < 0) { /* EAGAIN: another turn read it */
            }
        }
}

static void *loop_main(void *arg)
{
    bd_http_server *s = arg;
    size_t seen = 0;  /* the batch's size after the turn before */
    double began = 0; /* when the batch's first request joined it */
    int resumed = 0;  /* the last turn's commit gave connections back: MHD sends their answers now */
    while (!atomic_load(&s->loop_stop)) {
        /* With a batch open: only what is ready now, then decide. */
        if (!s->batch && !resumed)
            loop_wait(s);
        resumed = 0;
        MHD_run(s->daemon);
        if (!s->batch)
            continue;
        double now = bd_monotonic();
        if (!seen)
            began = now;
        if (s->batch_len > seen && now - began < GATHER_SECONDS) {
            seen = s->batch_len;
            continue;
        }
        commit_batch(s);
        seen = 0;
        resumed = 1;
    }
    /* The stop waited for the requests in flight, so a batch left here is
     * rare; its answers still go out before MHD closes the connections. */
    if (s->batch) {
        commit_batch(s);
        MHD_run(s->daemon);
    }
    return NULL;
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

/* How a request frames its body: Content-Length headers and Transfer-Encoding;
 * and its Host headers. */
typedef struct framing {
    int content_lengths, transfer_encodings;
    int hosts;
} framing;

static enum MHD_Result count_framing(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    framing *f = cls;
    (void)kind;
    (void)value;
    if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0)
        f->content_lengths++;
    else if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0)
        f->transfer_encodings++;
    else if (strcasecmp(key, MHD_HTTP_HEADER_HOST) == 0)
        f->hosts++;
    return MHD_YES;
}

/* RFC 9112 section 3.2: an HTTP/1.1 request without a Host header, or any
 * request with more than one, is a 400. libmicrohttpd checks the first only
 * in its strict mode (MHD_OPTION_STRICT_FOR_CLIENT), which refuses more than
 * that; an HTTP/1.0 request may leave Host out. */
static int bad_host(const char *version, const framing *f, bd_err *err)
{
    if (f->hosts > 1)
        return bd_err_set(err, BD_EINVAL, "headers.Host", "a request must have one Host header, not %d", f->hosts);
    if (!f->hosts && version && strcmp(version, MHD_HTTP_VERSION_1_1) == 0)
        return bd_err_set(err, BD_EINVAL, "headers.Host", "an HTTP/1.1 request must have a Host header");
    return 0;
}

/* RFC 9112 section 6.3: a body framed two ways (several Content-Length
 * headers, or one beside Transfer-Encoding) is a 400 and the connection is
 * closed. libmicrohttpd would frame by the first Content-Length and read
 * the rest as a next request, which a proxy framing by another header
 * would not: request smuggling. */
static int ambiguous_framing(const framing *f)
{
    return f->content_lengths > 1 || (f->content_lengths && f->transfer_encodings);
}

/* RFC 9112 section 6.1: a transfer coding the server does not know is a
 * 501. libmicrohttpd decodes "chunked" alone (one header, that value) and
 * would read any other coded body until the client closes. */
static int unknown_coding(struct MHD_Connection *conn, const framing *f)
{
    const char *te = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);

    return f->transfer_encodings > 1 || (te && strcasecmp(te, "chunked") != 0);
}

/* A request's context is ~3 KB, and glibc consolidates its fast bins at
 * every allocation that large: the loop thread keeps up to SPARE_CTX freed
 * ones for its next requests (perf under load: malloc_consolidate at 0.8%
 * of the loop's samples, all from here). Other threads allocate as usual. */
#define SPARE_CTX 64

static int on_loop(const bd_http_server *s)
{
    return s->inline_loop && pthread_equal(pthread_self(), s->loop);
}

static request_ctx *ctx_alloc(bd_http_server *s)
{
    request_ctx *ctx = on_loop(s) ? s->spare_ctx : NULL;
    if (!ctx)
        return bd_xmalloc(sizeof *ctx);
    s->spare_ctx = ctx->batch_next;
    s->spare_len--;
    return ctx;
}

static void ctx_free(bd_http_server *s, request_ctx *ctx)
{
    if (!on_loop(s) || s->spare_len == SPARE_CTX) {
        free(ctx);
        return;
    }
    ctx->batch_next = s->spare_ctx;
    s->spare_ctx = ctx;
    s->spare_len++;
}

/* First call: headers are in, no body yet. */
static enum MHD_Result begin(bd_http_server *s, struct MHD_Connection *conn, const char *url, const char *method,
                             const char *version, void **con_cls)
{
    conn_track *t = track_of(conn);
    request_ctx *ctx;
    const char *cl;
    framing f = {0, 0, 0};
    bd_err host_err;

    /* the headers are in: no deadline while the request is served, unless
     * the sweeper was quicker and is closing the connection */
    if (t && atomic_exchange_explicit(&t->deadline, 0, memory_order_relaxed) == -1) {
        atomic_store_explicit(&t->deadline, -1, memory_order_relaxed);
        return MHD_NO;
    }
    ctx = ctx_alloc(s);
    memset(ctx, 0, offsetof(request_ctx, inline_body));
    ctx->t0 = bd_monotonic();
    ctx->body = ctx->inline_body;
    ctx->cap = sizeof ctx->inline_body;
    ctx->req.method = bd_http_method_parse(method);
    ctx->req.method_name = method;
    ctx->req.path = url;
    *con_cls = ctx;
    atomic_fetch_add_explicit(&s->in_flight, 1, memory_order_relaxed);
    if (s->api.engine)
        bd_engine_request_started(s->api.engine);
    ctx->late = atomic_load(&s->stopping);
    bd_api_route(&ctx->req);

    MHD_get_connection_values(conn, MHD_HEADER_KIND, count_framing, &f);
    if (bad_host(version, &f, &host_err)) {
        bd_http_resp resp = {0};
        resp.close = 1;
        bd_api_error_response(&resp, &host_err);
        return answer(s, conn, ctx, &resp);
    }
    if (ambiguous_framing(&f)) {
        bd_http_resp resp = {0};
        bd_err err;
        bd_err_set(&err, BD_EINVAL, "headers.Content-Length",
                   "the body is framed twice (several Content-Length headers, or Content-Length with "
                   "Transfer-Encoding): send exactly one");
        resp.close = 1;
        bd_api_error_response(&resp, &err);
        return answer(s, conn, ctx, &resp);
    }
    if (unknown_coding(conn, &f)) {
        bd_http_resp resp = {0};
        bd_err err;
        bd_err_set(&err, BD_ENOTIMPL, "headers.Transfer-Encoding",
                   "only the chunked transfer coding is understood (one Transfer-Encoding: chunked)");
        resp.close = 1;
        bd_api_error_response(&resp, &err);
        return answer(s, conn, ctx, &resp);
    }
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

    if (ctx->answered)
        return MHD_YES;
    if (ctx->handled) { /* back from a handler */
        struct MHD_Response *mr = ctx->mr;
        ctx->mr = NULL;
        return send_answer(s, conn, ctx, &ctx->resp, mr);
    }
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
    req->if_none_match = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_IF_NONE_MATCH);
    req->forwarded_to = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, BD_FORWARD_HEADER);
    conn_track *t = track_of(conn);
    req->target = t ? t->target : NULL;
    req->body = ctx->body;
    req->body_len = ctx->len;
    req->query = lookup_query;
    req->query_ctx = conn;
    /* The request runs here or on a handler thread; the connection's
     * headers and body stay valid while it is suspended. */
    ctx->conn = conn;
    enum MHD_Result ret;
    if (s->inline_loop && run_here(s, conn, ctx, &ret))
        return ret;
    if (enqueue(s, ctx))
        return MHD_YES;
    bd_api_dispatch(&s->api, req, &ctx->resp);
    return answer(s, conn, ctx, &ctx->resp);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    bd_http_server *s = cls;
    request_ctx *ctx = *con_cls;

    if (!ctx)
        return begin(s, conn, url, method, version, con_cls);
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
    conn_track *t = track_of(conn);

    /* a kept-alive connection may stay silent for the idle timeout, then
     * its next request has the header timeout to arrive (on_request_line
     * tightens this when the request line comes) */
    if (t) {
        set_deadline(t, now_ms() + s->idle_ms + s->header_ms, 0);
        t->line_parsed = 0;
    }
    if (!ctx)
        return;
    if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK && bd_log_enabled(BD_LOG_DEBUG))
        bd_log(BD_LOG_DEBUG, "%s %s: connection ended early (reason %d)%s", ctx->req.method_name, ctx->req.path,
               (int)toe, ctx->answered ? "" : " before an answer");
    int parked = ctx->parked;
    if (ctx->mr) /* handled, but the client left before the answer went out */
        MHD_destroy_response(ctx->mr);
    bd_http_resp_clear(&ctx->resp);
    if (ctx->body != ctx->inline_body)
        free(ctx->body);
    ctx_free(s, ctx);
    *con_cls = NULL;
    atomic_fetch_sub_explicit(&s->in_flight, 1, memory_order_relaxed);
    if (s->api.engine && !parked) /* a parked one ended when it was parked */
        bd_engine_request_ended(s->api.engine);
}

/* How many connections the descriptors this process may open allow, with
 * a reserve for everything else; *fds receives the soft RLIMIT_NOFILE. */
static unsigned connection_limit(int threads, unsigned long long *fds)
{
    struct rlimit rl;
    unsigned long long reserve = FD_RESERVE + FD_PER_THREAD * (unsigned long long)threads, limit;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        rl.rlim_cur = MAX_CONNECTIONS + reserve;
    *fds = (unsigned long long)rl.rlim_cur;
    limit = *fds > 2 * reserve ? *fds - reserve : *fds / 2;
    if (limit < (unsigned long long)threads)
        limit = (unsigned long long)threads;
    return limit > MAX_CONNECTIONS ? MAX_CONNECTIONS : (unsigned)limit;
}

static void stop_sweeper(bd_http_server *s)
{
    if (s->sweeper_started) {
        pthread_mutex_lock(&s->lock);
        s->sweeper_stop = 1;
        pthread_cond_signal(&s->wake);
        pthread_mutex_unlock(&s->lock);
        pthread_join(s->sweeper, NULL);
    }
    /* MHD sent CLOSED for every connection it stopped; nothing should be left */
    assert(s->conns.next == &s->conns);
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->lock);
}

/* The loop's epoll set (MHD's epoll descriptor and the wake-up eventfd)
 * and its thread; 0 or an errno. */
static int start_loop(bd_http_server *s)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_EPOLL_FD);
    s->loop_wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    s->loop_epoll = epoll_create1(EPOLL_CLOEXEC);
    if (!info || s->loop_wake < 0 || s->loop_epoll < 0)
        return errno ? errno : EINVAL;
    struct epoll_event mhd = {.events = EPOLLIN, .data.fd = info->epoll_fd};
    struct epoll_event wake = {.events = EPOLLIN, .data.fd = s->loop_wake};
    if (epoll_ctl(s->loop_epoll, EPOLL_CTL_ADD, info->epoll_fd, &mhd) != 0 ||
        epoll_ctl(s->loop_epoll, EPOLL_CTL_ADD, s->loop_wake, &wake) != 0)
        return errno;
    return pthread_create(&s->loop, NULL, loop_main, s);
}

static void close_loop_fds(bd_http_server *s)
{
    if (s->loop_epoll >= 0)
        close(s->loop_epoll);
    if (s->loop_wake >= 0)
        close(s->loop_wake);
}

int bd_http_server_start(const bd_http_opts *opts, bd_engine *engine, bd_http_server **out, bd_err *err)
{
    bd_http_server *s;
    unsigned flags = MHD_USE_ITC | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME;
    size_t nroutes;
    const bd_route *routes = bd_routes(&nroutes);
    const union MHD_DaemonInfo *info;
    struct MHD_OptionItem options[10];
    size_t n = 0;
    uint16_t port = 0;
    unsigned timeout = opts->timeout_seconds ? opts->timeout_seconds : DEFAULT_TIMEOUT;
    unsigned header_timeout = opts->header_timeout_seconds ? opts->header_timeout_seconds : DEFAULT_HEADER_TIMEOUT;
    unsigned long long fds;
    pthread_condattr_t cattr;
    const char *poller = "select";
    int rc;

    if (sodium_init() < 0)
        return bd_err_set(err, BD_EINTERNAL, NULL, "libsodium failed to initialize");
    if (bd_mhd_errors_install(conn_facts, err) != 0)
        return err->code;
    int epoll = MHD_is_feature_supported(MHD_FEATURE_EPOLL) == MHD_YES;
    int run_inline = opts->run_inline && epoll; /* loop_wait waits on MHD's epoll descriptor */
    flags |= epoll ? MHD_USE_EPOLL : MHD_USE_POLL;
    if (!run_inline) /* else loop_main drives MHD */
        flags |= MHD_USE_INTERNAL_POLLING_THREAD;
    if (opts->addr->sa_family == AF_INET6) {
        flags |= MHD_USE_IPv6;
        port = ntohs(((const struct sockaddr_in6 *)(const void *)opts->addr)->sin6_port);
    } else {
        port = ntohs(((const struct sockaddr_in *)(const void *)opts->addr)->sin_port);
    }

    /* the pool-size option only when there is a pool: MHD warns about 1 */
    if (opts->threads > 1 && !run_inline)
        options[n++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, opts->threads, NULL};
    options[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)timeout, NULL};
    options[n++] = (struct MHD_OptionItem){MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024, NULL};
    options[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_MEMORY_LIMIT, HEADER_BYTES, NULL};

    s = bd_xcalloc(1, sizeof *s);
    s->api.engine = engine;
    s->cluster = engine && bd_engine_cluster(engine);
    if (s->cluster)
        bd_api_forward_init();
    s->api.metrics = bd_metrics_new(routes, nroutes);
    s->max_body = opts->max_body_bytes;
    s->header_ms = 1000 * (int64_t)header_timeout;
    s->idle_ms = 1000 * (int64_t)timeout;
    s->conn_limit = connection_limit(opts->threads, &fds);
    s->per_ip_limit = opts->per_ip_limit;
    s->conns.next = s->conns.prev = &s->conns;
    pthread_mutex_init(&s->lock, NULL);
    pthread_condattr_init(&cattr);
    pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
    pthread_cond_init(&s->wake, &cattr);
    pthread_condattr_destroy(&cattr);
    s->pool = bd_pool_start(&pool_ops, s, opts->handlers > 0 ? opts->handlers : DEFAULT_HANDLERS);
    if (!s->pool) {
        stop_sweeper(s);
        bd_metrics_free(s->api.metrics);
        free(s);
        return bd_err_set(err, BD_EINTERNAL, NULL, "cannot start the request handler threads");
    }
    /* MHD's default is FD_SETSIZE - 4 = 1020 connections, even with epoll */
    options[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT, (intptr_t)s->conn_limit, NULL};
    if (s->per_ip_limit)
        options[n++] = (struct MHD_OptionItem){MHD_OPTION_PER_IP_CONNECTION_LIMIT, (intptr_t)s->per_ip_limit, NULL};
    options[n++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    assert(n <= sizeof options / sizeof options[0]);

    errno = 0;
    /* clang-format off */
    s->daemon = MHD_start_daemon(flags, port, accept_policy, s, on_request, s,
                                 MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s, /* first: MHD logs nowhere else */
                                 MHD_OPTION_SOCK_ADDR, opts->addr,
                                 MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                                 MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
                                 MHD_OPTION_URI_LOG_CALLBACK, on_request_line, s,
                                 MHD_OPTION_ARRAY, options,
                                 MHD_OPTION_END);
    /* clang-format on */
    if (!s->daemon) {
        int e = errno;
        bd_pool_stop(s->pool);
        stop_sweeper(s);
        bd_metrics_free(s->api.metrics);
        free(s);
        return bd_err_set(err, BD_EINTERNAL, NULL, "cannot start the HTTP server%s%s", e ? ": " : "",
                          e ? strerror(e) : "");
    }
    rc = pthread_create(&s->sweeper, NULL, sweeper_main, s);
    s->sweeper_started = rc == 0;
    s->loop_epoll = s->loop_wake = -1;
    if (rc == 0 && run_inline) {
        s->inline_loop = 1;
        rc = start_loop(s);
    }
    if (rc != 0) {
        close_loop_fds(s);
        bd_pool_stop(s->pool);
        MHD_stop_daemon(s->daemon);
        stop_sweeper(s);
        bd_metrics_free(s->api.metrics);
        free(s);
        return bd_err_set(err, BD_EINTERNAL, NULL, "cannot start the HTTP server: %s", strerror(rc));
    }
    info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? info->port : port;
    info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_FLAGS); /* the flags in force, not the ones asked for */
    if (info && (info->flags & MHD_USE_EPOLL))
        poller = "epoll";
    else if (info && (info->flags & MHD_USE_POLL))
        poller = "poll";
    bd_log(BD_LOG_INFO,
           "HTTP: %s, %d polling thread%s, up to %u connections (open-file limit %llu), %u per client address%s, "
           "request headers within %u s, idle connections closed after %u s",
           poller, run_inline ? 1 : opts->threads, run_inline ? " (it runs the short study requests too)" : "s",
           s->conn_limit, fds, s->per_ip_limit, s->per_ip_limit ? "" : " (no limit)",
           header_timeout, timeout);
    if (s->conn_limit < 1000)
        bd_log(BD_LOG_WARN,
               "the open-file limit of %llu allows only %u connections; raise the hard limit (ulimit -Hn, "
               "LimitNOFILE=)",
               fds, s->conn_limit);
    *out = s;
    return 0;
}

unsigned bd_http_server_port(const bd_http_server *s)
{
    return s->port;
}

void bd_http_server_stop(bd_http_server *s, double grace_seconds)
{
    double deadline;

    if (!s)
        return;
    /* From here accept_policy closes every new connection at once. Not
     * MHD_quiesce_daemon: with epoll and a thread pool it races the polling
     * threads for the listen socket's epoll entry, and MHD 0.9.75 aborts the
     * process ("Failed to remove listen FD from epoll set") when the polling
     * thread wins: the likely end of a graceful stop under load in CI, where
     * every request in flight at SIGTERM was reset instead of answered. */
    atomic_store(&s->stopping, 1);
    deadline = bd_monotonic() + grace_seconds;
    while (atomic_load(&s->in_flight) > 0 && bd_monotonic() < deadline) {
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (atomic_load(&s->in_flight) > 0)
        bd_log(BD_LOG_WARN, "stopping with %d requests still in progress", atomic_load(&s->in_flight));
    bd_pool_stop(s->pool); /* it finishes what runs, refuses what is queued and answers what is parked */
    if (s->inline_loop) {
        atomic_store(&s->loop_stop, 1);
        pthread_join(s->loop, NULL);
        close_loop_fds(s);
    }
    MHD_stop_daemon(s->daemon);
    while (s->spare_ctx) {
        request_ctx *ctx = s->spare_ctx;
        s->spare_ctx = ctx->batch_next;
        free(ctx);
    }
    stop_sweeper(s);
    bd_metrics_free(s->api.metrics);
    free(s);
}
