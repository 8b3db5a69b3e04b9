/* http_server.h: the HTTP front end: a libmicrohttpd daemon with a pool of
 * polling threads (epoll where available) that read requests and send
 * answers, and a pool of handler threads that run them (bd_api_dispatch):
 * a polling thread suspends a connection while its request runs, so a slow
 * request (a scheduler's model fit) never stalls the other connections that
 * thread serves. Plus the request log line and metrics of every request.
 *
 * Bodies: accumulated up to max_body_bytes; a larger Content-Length is
 * answered 413 before any body is read, a larger chunked body is discarded
 * and answered 413 at its end. Connections are HTTP/1.1 keep-alive.
 *
 * Connections: at most one per descriptor the process may open, less a
 * reserve for SQLite and the server's own (RLIMIT_NOFILE is read at start;
 * raise it first), and at most per_ip_limit from one client address (more
 * are closed on arrival). A request's headers must be complete within
 * header_timeout_seconds, however slowly they trickle in: counted from the
 * accept for a connection's first request, and on a kept-alive connection
 * from the arrival of the request line (and never later than the idle
 * timeout plus the header timeout after the previous answer); otherwise the
 * connection is closed without an answer. An idle kept-alive connection is
 * closed after timeout_seconds without a byte. */
#ifndef BD_API_HTTP_SERVER_H
#define BD_API_HTTP_SERVER_H

#include <stddef.h>
#include <sys/socket.h>

#include "../server/common.h"
#include "../server/engine.h"

typedef struct bd_http_server bd_http_server;

typedef struct bd_http_opts {
    const struct sockaddr *addr;     /* where to listen: sockaddr_in or sockaddr_in6; port 0 picks a free one */
    int threads;                     /* polling threads, >= 1: they read requests and send answers */
    int handlers;                    /* threads that run requests (engine, schedulers); 0: 64 */
    size_t max_body_bytes;           /* >= 1 */
    unsigned timeout_seconds;        /* idle connections are closed after this; 0: 60 */
    unsigned header_timeout_seconds; /* request headers must be complete within this; 0: 10 */
    unsigned per_ip_limit;           /* open connections one client address may hold; 0: no limit */
    /* 1 (SQLite): one polling thread, which runs the short study requests
     * itself and commits them in batches (http_server.c); threads is then
     * ignored. 0: threads polling threads, every request on a handler. */
    int run_inline;
} bd_http_opts;

/* Starts serving; engine is borrowed and must outlive the server. *out is
 * new (bd_http_server_stop). BD_EINTERNAL when the daemon cannot start (port
 * in use, ...), with the reason in err. */
int bd_http_server_start(const bd_http_opts *opts, bd_engine *engine, bd_http_server **out, bd_err *err) BD_MUST_CHECK;

/* The port actually bound (useful after port 0). */
unsigned bd_http_server_port(const bd_http_server *s);

/* Graceful stop: stops accepting connections, answers 503 (and closes the
 * connection) to requests that start from now on on kept-alive connections,
 * waits up to grace_seconds for the requests already started to be answered
 * normally and sent, then closes every connection and frees s. NULL-safe. */
void bd_http_server_stop(bd_http_server *s, double grace_seconds);

#endif
