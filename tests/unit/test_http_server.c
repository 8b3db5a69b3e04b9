/* The HTTP front end over real sockets: keep-alive, JSON answers and
 * headers, 413 from Content-Length before the body is sent and from an
 * oversized chunked body, the header deadline (trickled headers are cut
 * off, idle keep-alive is not), and a graceful stop (requests already started
 * are answered normally, requests starting later get 503). The engine is NULL: every
 * request here is answered before the engine would be called. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "api/http_server.h"
#include "server/log.h"

static bd_http_server *server;

static void start_with(size_t max_body, unsigned header_timeout)
{
    struct sockaddr_in sa;
    bd_http_opts opts;
    bd_err err;

    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    memset(&opts, 0, sizeof opts);
    opts.addr = (const struct sockaddr *)&sa;
    opts.threads = 2;
    opts.max_body_bytes = max_body;
    opts.header_timeout_seconds = header_timeout;
    bd_log_set_level(getenv("BD_TEST_LOG") ? BD_LOG_DEBUG : BD_LOG_WARN);
    cr_assert_eq(bd_http_server_start(&opts, NULL, &server, &err), 0, "%s", err.message);
    cr_assert_gt(bd_http_server_port(server), 0);
}

static void start(size_t max_body)
{
    start_with(max_body, 0);
}

static void stop(void)
{
    bd_http_server_stop(server, 2.0);
    server = NULL;
}

static int connect_server(void)
{
    struct sockaddr_in sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons((uint16_t)bd_http_server_port(server));
    cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    return fd;
}

static void send_all(int fd, const char *data, size_t len)
{
    while (len) {
        ssize_t w = send(fd, data, len, MSG_NOSIGNAL);
        cr_assert_gt(w, 0, "send failed");
        data += w;
        len -= (size_t)w;
    }
}

/* Case-insensitive strstr (find_ci is a GNU extension). */
static const char *find_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);

    for (; *hay; hay++) {
        if (strncasecmp(hay, needle, n) == 0)
            return hay;
    }
    return NULL;
}

typedef struct response {
    int status;
    char head[4096];
    char body[4096];
} response;

/* Reads one response (headers + Content-Length body), waiting at most 5 s. */
static void read_response(int fd, response *r)
{
    char buf[8192];
    size_t len = 0;
    char *end = NULL;
    long clen = -1;

    memset(r, 0, sizeof *r);
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        ssize_t got;

        if (end) {
            size_t hlen = (size_t)(end + 4 - buf);
            if (clen >= 0 && len >= hlen + (size_t)clen) {
                memcpy(r->head, buf, hlen);
                memcpy(r->body, end + 4, (size_t)clen);
                /* leave nothing behind: tests send one request at a time */
                cr_assert_eq(len, hlen + (size_t)clen, "extra bytes after the response");
                break;
            }
        }
        cr_assert_gt(poll(&p, 1, 5000), 0, "no response within 5 s");
        got = recv(fd, buf + len, sizeof buf - 1 - len, 0);
        cr_assert_gt(got, 0, "connection closed before a full response");
        len += (size_t)got;
        buf[len] = '\0';
        if (!end && (end = strstr(buf, "\r\n\r\n"))) {
            const char *cl = find_ci(buf, "\r\nContent-Length:");
            cr_assert_not_null(cl);
            clen = strtol(cl + 17, NULL, 10);
        }
    }
    cr_assert_eq(sscanf(r->head, "HTTP/1.1 %d", &r->status), 1, "%s", r->head);
}

static void request(int fd, const char *raw, response *r)
{
    send_all(fd, raw, strlen(raw));
    read_response(fd, r);
}

Test(http_server, keep_alive_connection_serves_several_requests)
{
    response r;
    int fd;

    start(1 << 20);
    fd = connect_server();
    request(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", &r);
    cr_assert_eq(r.status, 200);
    cr_assert_str_eq(r.body, "{\"status\":\"ok\"}");
    cr_assert(find_ci(r.head, "\r\nContent-Type: application/json"), "%s", r.head);
    request(fd, "GET /nope HTTP/1.1\r\nHost: x\r\n\r\n", &r);
    cr_assert_eq(r.status, 404);
    cr_assert(strstr(r.body, "\"code\":\"not_found\""), "%s", r.body);
    request(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", &r);
    cr_assert_eq(r.status, 200, "the same connection still works");
    close(fd);
    stop();
}

Test(http_server, method_not_allowed_has_allow_header)
{
    response r;
    int fd;

    start(1 << 20);
    fd = connect_server();
    request(fd, "PUT /v1/studies HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", &r);
    cr_assert_eq(r.status, 405);
    cr_assert(find_ci(r.head, "\r\nAllow: POST, GET\r\n"), "%s", r.head);
    close(fd);
    stop();
}

Test(http_server, unauthenticated_has_www_authenticate_and_body_is_drained)
{
    response r;
    int fd;

    start(1 << 20);
    fd = connect_server();
    request(fd,
            "POST /v1/studies HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n"
            "{\"name\":1}\n",
            &r);
    cr_assert_eq(r.status, 401);
    cr_assert(find_ci(r.head, "\r\nWWW-Authenticate: Bearer\r\n"), "%s", r.head);
    cr_assert(strstr(r.body, "\"code\":\"unauthenticated\""), "%s", r.body);
    request(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", &r);
    cr_assert_eq(r.status, 200, "keep-alive survives a request with a body");
    close(fd);
    stop();
}

Test(http_server, oversized_content_length_is_413_before_the_body)
{
    response r;
    int fd;

    start(1000);
    fd = connect_server();
    /* headers only: the answer must come without the 5000 bytes being sent */
    request(fd,
            "POST /v1/studies HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n",
            &r);
    cr_assert_eq(r.status, 413);
    cr_assert(strstr(r.body, "\"code\":\"payload_too_large\""), "%s", r.body);
    cr_assert(find_ci(r.head, "\r\nConnection: close\r\n"), "%s", r.head);
    close(fd);
    stop();
}

Test(http_server, oversized_chunked_body_is_413)
{
    response r;
    char chunk[700];
    int fd;

    start(1000);
    fd = connect_server();
    {
        const char *head = "POST /v1/studies HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
        send_all(fd, head, strlen(head));
    }
    memset(chunk, 'a', sizeof chunk);
    for (int i = 0; i < 3; i++) {
        send_all(fd, "2bc\r\n", 5);
        send_all(fd, chunk, sizeof chunk);
        send_all(fd, "\r\n", 2);
    }
    send_all(fd, "0\r\n\r\n", 5);
    read_response(fd, &r);
    cr_assert_eq(r.status, 413);
    close(fd);
    stop();
}

Test(http_server, body_at_the_limit_is_accepted)
{
    response r;
    char raw[2048];
    int fd, n;

    start(100);
    fd = connect_server();
    n = snprintf(raw, sizeof raw,
                 "POST /v1/studies HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
                 "{\"name\":\"%089d\"}",
                 0);
    cr_assert_eq(n, (int)(strstr(raw, "\r\n\r\n") - raw) + 4 + 100);
    request(fd, raw, &r);
    cr_assert_eq(r.status, 401, "not 413: the body was read and the next check ran");
    close(fd);
    stop();
}

Test(http_server, stop_closes_idle_keep_alive_connections)
{
    response r;
    char byte;
    int fd;

    start(1 << 20);
    fd = connect_server();
    request(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", &r);
    cr_assert_eq(r.status, 200);
    stop();
    cr_assert_eq(recv(fd, &byte, 1, 0), 0, "the idle connection is closed by the stop");
    close(fd);
}

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

Test(http_server, trickled_headers_are_closed_at_the_header_deadline_idle_keep_alive_is_not)
{
    static const char partial[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n";
    response r;
    double t0, took = -1;
    int slow, ka, left_open;

    start_with(1 << 20, 1);
    ka = connect_server();
    request(ka, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", &r);
    cr_assert_eq(r.status, 200);
    slow = connect_server();
    t0 = now();
    send_all(slow, partial, strlen(partial));
    while (now() - t0 < 5) { /* a byte every 100 ms: never idle, never done */
        struct pollfd p = {slow, POLLIN, 0};
        char buf[64];

        if (poll(&p, 1, 100) > 0) {
            cr_assert_leq(recv(slow, buf, sizeof buf, 0), 0, "no answer to headers that never ended");
            took = now() - t0;
            break;
        }
        if (send(slow, "a", 1, MSG_NOSIGNAL) < 0) {
            took = now() - t0;
            break;
        }
    }
    cr_assert_geq(took, 0.9, "closed after %.2f s, before the 1 s deadline", took);
    cr_assert_lt(took, 3.0, "still open %.2f s after the 1 s deadline", took);
    request(ka, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", &r);
    cr_assert_eq(r.status, 200, "a keep-alive connection idle for longer than the header deadline still works");

    left_open = connect_server(); /* the stop closes connections that are still receiving headers */
    send_all(left_open, partial, strlen(partial));
    stop();
    close(left_open);
    close(slow);
    close(ka);
}

static void *stop_thread(void *arg)
{
    (void)arg;
    bd_http_server_stop(server, 5.0);
    return NULL;
}

/* True when a new connection is turned away: refused, or closed without an
 * answer to the request it sends (what the accept policy does while the
 * server stops). */
static int turned_away(unsigned port)
{
    static const char probe[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    struct sockaddr_in sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0), away = 0;
    char buf[64];

    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons((uint16_t)port);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        away = errno == ECONNREFUSED;
    } else if (send(fd, probe, sizeof probe - 1, MSG_NOSIGNAL) < 0) {
        away = 1;
    } else {
        struct pollfd p = {fd, POLLIN, 0};
        /* an answer (of any status) means the connection was served */
        away = poll(&p, 1, 2000) > 0 && recv(fd, buf, sizeof buf, 0) <= 0;
    }
    close(fd);
    return away;
}

static void wait_until_turned_away(unsigned port)
{
    for (int i = 0; i < 500; i++) {
        if (turned_away(port))
            return;
        usleep(10 * 1000);
    }
    cr_assert_fail("the server still serves new connections 5 s after the stop began");
}

Test(http_server, graceful_stop_finishes_started_requests_and_turns_new_connections_away)
{
    static const char head[] =
        "POST /v1/studies HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n";
    response r;
    pthread_t th;
    unsigned port;
    int started, idle;

    start(1 << 20);
    port = bd_http_server_port(server);
    idle = connect_server();
    request(idle, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", &r);
    cr_assert_eq(r.status, 200);
    started = connect_server();
    send_all(started, head, strlen(head));
    send_all(started, "{\"na", 4); /* in flight: headers and part of the body */
    usleep(50 * 1000);

    pthread_create(&th, NULL, stop_thread, NULL);
    wait_until_turned_away(port);

    request(idle, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", &r);
    cr_assert_eq(r.status, 503, "a request starting after the stop");
    cr_assert(strstr(r.body, "\"code\":\"unavailable\""), "%s", r.body);
    cr_assert(find_ci(r.head, "\r\nConnection: close\r\n"), "%s", r.head);

    send_all(started, "me\":1}\n", 7);
    read_response(started, &r);
    cr_assert_eq(r.status, 401, "the started request is processed normally, not 503");

    pthread_join(th, NULL);
    server = NULL;
    close(idle);
    close(started);
}
