/* mhd_errors.c: libmicrohttpd's own error answers as JSON errors (see
 * mhd_errors.h for why this interposes MHD_queue_response).
 *
 * Invariant: every call of the daemon's own reaches libmicrohttpd through
 * bd_mhd_queue_response, so a call of MHD_queue_response that arrives here
 * comes from inside the library, and in 0.9.75 the library queues nothing
 * but error answers (its other callers, the digest and basic
 * authentication helpers, are not used). */
#define _GNU_SOURCE /* RTLD_NEXT */
#include "mhd_errors.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

#include "../server/log.h"
#include "errors.h"

typedef enum MHD_Result (*queue_fn)(struct MHD_Connection *, unsigned int, struct MHD_Response *);

static queue_fn real_queue;
static pthread_once_t resolve_once = PTHREAD_ONCE_INIT;
static bd_mhd_facts_fn facts_fn; /* set before any daemon starts; read by polling threads */

/* The last error line libmicrohttpd logged on this thread: the body and
 * status of the answer it is about to queue. */
static _Thread_local struct {
    unsigned int status; /* 0: none */
    char body[320];
} noted;

/* libmicrohttpd 0.9.75's line in transmit_error_response_len(). */
#define ERROR_LINE "Error processing request (HTTP response code is %u ('%s'))"

static void resolve(void)
{
    real_queue = (queue_fn)(uintptr_t)dlsym(RTLD_NEXT, "MHD_queue_response");
}

int bd_mhd_errors_install(bd_mhd_facts_fn facts, bd_err *err)
{
    pthread_once(&resolve_once, resolve);
    if (!real_queue || real_queue == MHD_queue_response)
        return bd_err_set(err, BD_EINTERNAL, NULL,
                          "libmicrohttpd's MHD_queue_response was not found by dlsym(RTLD_NEXT)");
    facts_fn = facts;
    return 0;
}

/* libmicrohttpd's function, or an abort: a process that reaches here with
 * dlsym failing (one that never ran bd_mhd_errors_install, which refuses to
 * start then) cannot answer at all. */
static queue_fn real(void)
{
    pthread_once(&resolve_once, resolve);
    if (!real_queue) {
        fprintf(stderr, "banditd: libmicrohttpd's MHD_queue_response was not found by dlsym(RTLD_NEXT)\n");
        abort();
    }
    return real_queue;
}

enum MHD_Result bd_mhd_queue_response(struct MHD_Connection *conn, unsigned int status, struct MHD_Response *mr)
{
    return real()(conn, status, mr);
}

int bd_mhd_errors_note(const char *fmt, va_list ap)
{
    va_list copy;
    const char *body;

    if (strncmp(fmt, ERROR_LINE, sizeof ERROR_LINE - 1) != 0)
        return 0;
    va_copy(copy, ap);
    noted.status = va_arg(copy, unsigned int);
    body = va_arg(copy, const char *);
    va_end(copy);
    snprintf(noted.body, sizeof noted.body, "%s", body ? body : "");
    return 1;
}

/* libmicrohttpd 0.9.75's error bodies, told apart by a part of each (with
 * the status, since 414 and 431 share REQUEST_TOO_BIG). */
enum kind {
    K_CONTENT_LENGTH_BAD,
    K_CONTENT_LENGTH_HUGE,
    K_NO_HOST,
    K_CHUNKED_BAD,
    K_CHUNK_HUGE,
    K_VERSION_OLD,
    K_VERSION,
    K_URI_LONG,
    K_HEADERS_BIG,
    K_MALFORMED,
    K_INTERNAL,
    K_UNKNOWN
};

static const struct {
    unsigned int status;
    const char *part; /* of the HTML body */
    enum kind kind;
} bodies[] = {
    {400, "wrong value for <b>Content-Length</b>", K_CONTENT_LENGTH_BAD},
    {413, "too large value for <b>Content-Length</b>", K_CONTENT_LENGTH_HUGE},
    {400, "&quot;Host:&quot; header required", K_NO_HOST},
    {400, "chunked encoding was syntactically incorrect", K_CHUNKED_BAD},
    {413, "chunk size used in your HTTP chunked encoded request is too large", K_CHUNK_HUGE},
    {505, "version is too old", K_VERSION_OLD},
    {505, "version is not supported", K_VERSION},
    {414, "header was too big", K_URI_LONG},
    {431, "header was too big", K_HEADERS_BIG},
    {400, "request was syntactically incorrect", K_MALFORMED},
    {500, "Internal server error", K_INTERNAL},
};

static enum kind kind_of(unsigned int status, const char *body)
{
    for (size_t i = 0; body && i < sizeof bodies / sizeof bodies[0]; i++) {
        if (bodies[i].status == status && strstr(body, bodies[i].part))
            return bodies[i].kind;
    }
    switch (status) { /* an unknown body: what the status alone says */
    case 400: return K_MALFORMED;
    case 413: return K_CHUNK_HUGE;
    case 414: return K_URI_LONG;
    case 431: return K_HEADERS_BIG;
    case 505: return K_VERSION;
    case 500: return K_INTERNAL;
    default: return K_UNKNOWN;
    }
}

void bd_mhd_error_describe(unsigned int status, const char *mhd_body, const bd_mhd_conn_facts *facts, bd_err *err,
                           int *direct)
{
    *direct = 0;
    switch (kind_of(status, mhd_body)) {
    case K_CONTENT_LENGTH_BAD:
        *direct = 1;
        bd_err_set(err, BD_EINVAL, "headers.Content-Length",
                   "Content-Length must be a number of bytes in decimal digits");
        break;
    case K_CONTENT_LENGTH_HUGE:
        *direct = 1;
        bd_err_set(err, BD_ETOOLARGE, "headers.Content-Length", "the body is larger than the limit of %zu bytes",
                   facts->max_body);
        break;
    case K_NO_HOST:
        *direct = 1;
        bd_err_set(err, BD_EINVAL, "headers.Host", "an HTTP/1.1 request must have a Host header");
        break;
    case K_CHUNKED_BAD:
        bd_err_set(err, BD_EINVAL, "body", "the body's chunked transfer coding is malformed (RFC 9112 section 7.1)");
        break;
    case K_CHUNK_HUGE:
        bd_err_set(err, BD_ETOOLARGE, "body", "the body is larger than the limit of %zu bytes", facts->max_body);
        break;
    case K_VERSION_OLD:
    case K_VERSION:
        bd_err_set(err, BD_EVERSION, "version", "only HTTP/1.1 and HTTP/1.0 are served");
        break;
    case K_URI_LONG:
        bd_err_set(err, BD_EURI, "path",
                   "the request line (method, path and query string) is too long: with the headers it must fit "
                   "in %zu bytes",
                   facts->header_bytes);
        break;
    case K_HEADERS_BIG:
        bd_err_set(err, BD_EHEADERS, "headers", "the request line and headers must fit in %zu bytes",
                   facts->header_bytes);
        break;
    case K_MALFORMED:
        if (facts->request_line_parsed)
            bd_err_set(err, BD_EINVAL, "headers", "a header line is malformed: it must be Name: value (RFC 9112)");
        else
            bd_err_set(err, BD_EINVAL, "request_line",
                       "the request line is malformed: it must be METHOD SP path SP HTTP/1.1 (RFC 9112)");
        break;
    case K_INTERNAL:
    case K_UNKNOWN:
        bd_err_set(err, status >= 400 && status < 500 ? BD_EINVAL : BD_EINTERNAL, NULL,
                   "the HTTP layer refused the request (status %u)", status);
        break;
    }
}

/* Writes the whole answer to the connection's socket, without waiting: a
 * client that does not read gets what fits (it is being closed anyway). */
static void write_direct(struct MHD_Connection *conn, unsigned int status, const char *json, size_t n)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    const char *reason = MHD_get_reason_phrase_for(status);
    char head[256], date[64];
    time_t now = time(NULL);
    struct tm tm;
    struct iovec iov[2];
    struct msghdr msg;
    int len;

    if (!ci || ci->connect_fd == MHD_INVALID_SOCKET)
        return;
    strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", gmtime_r(&now, &tm));
    len = snprintf(head, sizeof head,
                   "HTTP/1.1 %u %s\r\nDate: %s\r\nConnection: close\r\nContent-Type: application/json\r\n"
                   "Content-Length: %zu\r\n\r\n",
                   status, reason ? reason : "Error", date, n);
    if (len < 0 || (size_t)len >= sizeof head)
        return;
    iov[0] = (struct iovec){head, (size_t)len};
    iov[1] = (struct iovec){(void *)json, n};
    memset(&msg, 0, sizeof msg);
    msg.msg_iov = iov;
    msg.msg_iovlen = 2;
    (void)sendmsg(ci->connect_fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* libmicrohttpd's calls only (see the invariant above); the definition the
 * library's PLT binds to. Its status stays; the body becomes JSON. */
enum MHD_Result MHD_queue_response(struct MHD_Connection *connection, unsigned int status_code,
                                   struct MHD_Response *response)
{
    bd_mhd_conn_facts facts = {0, 0, 0};
    struct MHD_Response *mr;
    enum MHD_Result ret;
    bd_err err;
    json_t *body;
    char *text;
    int direct;

    queue_fn queue = real();
    if (status_code < 400)
        return queue(connection, status_code, response);
    if (facts_fn)
        facts_fn(connection, &facts);
    bd_mhd_error_describe(status_code, noted.status == status_code ? noted.body : NULL, &facts, &err, &direct);
    noted.status = 0;
    body = bd_api_error_json(&err);
    text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (!text)
        return queue(connection, status_code, response);
    if (bd_log_enabled(BD_LOG_DEBUG))
        bd_log(BD_LOG_DEBUG, "answering %u %s for the HTTP layer: %s", status_code, bd_err_name(err.code),
               err.message);
    if (direct) {
        write_direct(connection, status_code, text, strlen(text));
        free(text);
        return MHD_NO; /* libmicrohttpd closes the connection */
    }
    mr = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    if (!mr) {
        free(text);
        return queue(connection, status_code, response);
    }
    MHD_add_response_header(mr, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    ret = queue(connection, status_code, mr);
    MHD_destroy_response(mr);
    return ret;
}
