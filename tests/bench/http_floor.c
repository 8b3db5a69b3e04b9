/* http_floor.c: bd_http_floor, the ceiling libmicrohttpd alone sets for
 * bd_loadgen's workload on this machine (issue 18, item 3).
 *
 * It answers the load generator's four calls (create a study, suggest, a
 * measurement, complete) from its polling thread with a fixed answer of the
 * same shape as banditd's: no storage, no scheduler, no JSON parsing, no
 * hand-off to another thread. So whatever bd_loadgen measures against it is
 * libmicrohttpd plus the kernel's loopback TCP, and no daemon built on them
 * can serve more calls per second on the same cores; run_load.sh's
 * BENCH_FLOOR=1 runs it beside banditd to turn "how far from the target" into
 * "how far from the floor". Never registered as a test, never installed.
 *
 *   bd_http_floor --listen 127.0.0.1:PORT [--threads N]
 *
 * --threads 1 (the default) is one polling thread (epoll), the fastest mode
 * on one core; N > 1 is libmicrohttpd's pool of N polling threads. Stops on
 * SIGTERM or SIGINT. */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t stopping;
static atomic_llong next_trial_id = 1;

static void on_signal(int sig)
{
    (void)sig;
    stopping = 1;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

static enum MHD_Result answer(struct MHD_Connection *conn, unsigned status, const char *body)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "application/json");
    enum MHD_Result rc = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return rc;
}

/* The body is read and dropped (libmicrohttpd hands it over in pieces; a
 * piece is consumed by setting its size to 0); the answer goes once it ended. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size, void **state)
{
    (void)cls, (void)version, (void)upload_data;
    static int started;
    if (*state == NULL) {
        *state = &started;
        return MHD_YES;
    }
    if (*upload_data_size != 0) {
        *upload_data_size = 0;
        return MHD_YES;
    }
    char body[160];
    if (strcmp(method, "GET") == 0 && strcmp(url, "/healthz") == 0)
        return answer(conn, MHD_HTTP_OK, "{\"status\":\"ok\"}");
    if (strcmp(method, "POST") != 0)
        return answer(conn, MHD_HTTP_NOT_FOUND, "{\"error\":\"not found\"}");
    if (strcmp(url, "/v1/studies") == 0)
        return answer(conn, MHD_HTTP_CREATED, "{\"id\":1,\"name\":\"floor\",\"state\":\"running\"}");
    if (ends_with(url, "/suggest")) {
        long long id = atomic_fetch_add_explicit(&next_trial_id, 1, memory_order_relaxed);
        snprintf(body, sizeof body,
                 "{\"trials\":[{\"id\":%lld,\"study_id\":1,\"config\":{\"x\":0.3},\"budget\":1,"
                 "\"lease_expires_at\":\"2026-01-01T00:00:00Z\"}],\"done\":false}",
                 id);
        return answer(conn, MHD_HTTP_OK, body);
    }
    if (ends_with(url, "/measurements"))
        return answer(conn, MHD_HTTP_OK, "{\"decision\":\"continue\",\"trial_id\":1,\"step\":1}");
    if (ends_with(url, "/complete"))
        return answer(conn, MHD_HTTP_OK, "{\"id\":1,\"state\":\"completed\",\"value\":0.5}");
    return answer(conn, MHD_HTTP_NOT_FOUND, "{\"error\":\"not found\"}");
}

static int parse_listen(const char *s, struct sockaddr_in *addr)
{
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s || (size_t)(colon - s) >= 64)
        return -1;
    char host[64];
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = '\0';
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end != '\0' || port < 1 || port > 65535)
        return -1;
    memset(addr, 0, sizeof *addr);
    addr->sin_family = AF_INET;
    addr->sin_port = htons((uint16_t)port);
    return inet_pton(AF_INET, host, &addr->sin_addr) == 1 ? 0 : -1;
}

int main(int argc, char **argv)
{
    struct sockaddr_in addr;
    int have_addr = 0;
    long threads = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--listen") == 0 && i + 1 < argc) {
            have_addr = parse_listen(argv[++i], &addr) == 0;
            if (!have_addr) {
                fprintf(stderr, "bd_http_floor: bad --listen %s (want IPv4:port)\n", argv[i]);
                return 2;
            }
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            threads = strtol(argv[++i], NULL, 10);
            if (threads < 1 || threads > 64) {
                fputs("bd_http_floor: --threads must be 1 to 64\n", stderr);
                return 2;
            }
        } else {
            fputs("usage: bd_http_floor --listen 127.0.0.1:PORT [--threads N]\n", stderr);
            return 2;
        }
    }
    if (!have_addr) {
        fputs("usage: bd_http_floor --listen 127.0.0.1:PORT [--threads N]\n", stderr);
        return 2;
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
    flags |= MHD_is_feature_supported(MHD_FEATURE_EPOLL) == MHD_YES ? MHD_USE_EPOLL : MHD_USE_POLL;
    struct MHD_OptionItem pool[] = {
        {threads > 1 ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END, (intptr_t)threads, NULL},
        {MHD_OPTION_END, 0, NULL},
    };
    struct MHD_Daemon *d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, NULL, MHD_OPTION_SOCK_ADDR,
                                            (struct sockaddr *)&addr, MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024,
                                            MHD_OPTION_CONNECTION_TIMEOUT, 60u, MHD_OPTION_ARRAY, pool, MHD_OPTION_END);
    if (!d) {
        fputs("bd_http_floor: cannot start libmicrohttpd (port in use?)\n", stderr);
        return 1;
    }
    while (!stopping)
        pause();
    MHD_stop_daemon(d);
    return 0;
}
