/* loadgen.c: bd_loadgen, the load benchmark of issue 2.
 *
 * Creates its own random-search studies (--studies S, default 1), then runs W
 * virtual workers, worker i on study i mod S, each a thread with one keep-alive
 * HTTP/1.1 connection, looping suggest -> N measurements (default 3) -> complete. Every call's latency goes
 * into a per-thread log-bucket histogram (64 sub-buckets per power of two, so
 * about 1.6% resolution; no locks on the hot path); histograms are merged at
 * the end. Calls finishing during the warm-up are not counted.
 *
 * A call is an error when the transport fails, the status is not 2xx, or the
 * answer cannot be read; the first few are printed. Only successful calls
 * count in calls/s and the latency figures. Calls slower than --slow-ms
 * (default 10) are also kept by time, in 100 ms windows, to tell a tail made
 * of a few stalls (checkpoints, fsync, a lock held long) from one spread over
 * the run (queueing). With --via A,B,... (several daemons of one cluster, issue
 * 16) the studies are still created through --url, and the workers of study j
 * connect to address j mod N instead: every study's requests reach one daemon,
 * the one that serves it, with no proxy between. The last line of the output is machine-readable:
 *   RESULT calls_per_s=... trials_per_s=... p50_ms=... p90_ms=... p99_ms=... max_ms=... errors=...
 *          p999_ms=... studies=... slow_calls=... slow_windows=... slow_top5_share=... busy=...
 * (the fields after errors= were added later; readers go by name).
 * Exit status: 0 when every call succeeded, 1 when some failed, 2 when the
 * run could not start (bad options, no daemon, study not created). */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE
#endif

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* ---- latency histogram (nanoseconds) ---- */

#define H_LINEAR 128 /* values below this get one bucket each */
#define H_SUB 64     /* sub-buckets per power of two above */
#define H_BUCKETS (H_LINEAR + (63 - 7 + 1) * H_SUB)

typedef struct hist {
    uint64_t n[H_BUCKETS];
    uint64_t count;
    uint64_t max_ns;
} hist;

static int msb64(uint64_t v)
{
    return 63 - __builtin_clzll(v);
}

static size_t hist_index(uint64_t v)
{
    if (v < H_LINEAR)
        return (size_t)v;
    int m = msb64(v); /* >= 7 */
    int shift = m - 6;
    return H_LINEAR + (size_t)(m - 7) * H_SUB + (size_t)((v >> shift) - H_SUB);
}

/* Midpoint of the values falling into bucket i. */
static double hist_value(size_t i)
{
    if (i < H_LINEAR)
        return (double)i;
    size_t k = i - H_LINEAR;
    int m = (int)(k / H_SUB) + 7;
    int shift = m - 6;
    double lo = (double)((uint64_t)(k % H_SUB + H_SUB) << shift);
    return lo + ((double)((uint64_t)1 << shift) - 1.0) / 2.0;
}

static void hist_add(hist *h, uint64_t v)
{
    h->n[hist_index(v)]++;
    h->count++;
    if (v > h->max_ns)
        h->max_ns = v;
}

static void hist_merge(hist *into, const hist *from)
{
    for (size_t i = 0; i < H_BUCKETS; i++)
        into->n[i] += from->n[i];
    into->count += from->count;
    if (from->max_ns > into->max_ns)
        into->max_ns = from->max_ns;
}

/* The p-quantile (0 < p <= 1) in milliseconds; 0 when empty. */
static double hist_quantile_ms(const hist *h, double p)
{
    if (h->count == 0)
        return 0.0;
    uint64_t rank = (uint64_t)(p * (double)h->count + 0.999999);
    if (rank < 1)
        rank = 1;
    uint64_t seen = 0;
    for (size_t i = 0; i < H_BUCKETS; i++) {
        seen += h->n[i];
        if (seen >= rank) {
            double v = hist_value(i);
            if (v > (double)h->max_ns)
                v = (double)h->max_ns;
            return v / 1e6;
        }
    }
    return (double)h->max_ns / 1e6;
}

/* ---- options and shared state ---- */

enum { CALL_SUGGEST, CALL_MEASURE, CALL_COMPLETE, CALL_KINDS };
static const char *const call_names[CALL_KINDS] = {"suggest", "measurement", "complete"};

enum { PHASE_WARMUP, PHASE_MEASURE, PHASE_STOP };

typedef struct options {
    char host[256];
    char port[16];
    char token[512];
    int workers;
    double duration;   /* seconds; used when trials == 0 */
    long trials;       /* 0: run for duration */
    double warmup;     /* seconds */
    long max_trials;   /* the study's random-scheduler budget */
    int measurements;  /* per trial */
    int studies;       /* workers spread round-robin over this many studies */
    double slow_ms;    /* calls slower than this are kept by time */
    int max_errors_shown;
} options;

static options opt = {
    .host = "127.0.0.1", .port = "8080", .workers = 32, .duration = 20.0, .trials = 0,
    .warmup = 2.0, .max_trials = 100000000, .measurements = 3, .studies = 1, .slow_ms = 10.0,
    .max_errors_shown = 5,
};

#define MAX_STUDIES 1024
#define SLOW_WINDOW_NS 100000000ull /* 100 ms */

static struct addrinfo *server_addr;
#define MAX_VIA 16
static struct addrinfo *via_addr[MAX_VIA]; /* --via: the workers' addresses, by study */
static int n_via;
static long long study_ids[MAX_STUDIES];
static _Atomic uint64_t measure_start_ns; /* start of the measured window; 0 before */
static atomic_int phase = PHASE_WARMUP;
static atomic_long trials_claimed;
static volatile sig_atomic_t interrupted;

static pthread_mutex_t error_lock = PTHREAD_MUTEX_INITIALIZER;
static char error_text[8][320];
static int error_shown;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !interrupted)
        ;
}

/* Keeps the first few error descriptions (error path only, so a lock is fine). */
static void note_error(const char *what, int status, const char *body, size_t body_len)
{
    pthread_mutex_lock(&error_lock);
    if (error_shown < opt.max_errors_shown && error_shown < 8) {
        int n = (int)(body_len > 200 ? 200 : body_len);
        if (status > 0)
            snprintf(error_text[error_shown], sizeof error_text[0], "%s: HTTP %d %.*s", what, status, n,
                     body ? body : "");
        else
            snprintf(error_text[error_shown], sizeof error_text[0], "%s: %s", what, body ? body : "?");
        error_shown++;
    }
    pthread_mutex_unlock(&error_lock);
}

/* ---- a minimal HTTP/1.1 keep-alive client ---- */

typedef struct conn {
    int fd;        /* -1 when not connected */
    int reused;    /* a request already went over this connection */
    char *out;     /* request buffer */
    size_t out_cap;
    char *in;      /* response buffer */
    size_t in_cap;
    size_t in_len;
    int status;    /* of the last response */
    char *body;    /* into in; NUL-terminated */
    size_t body_len;
    long reconnects;
    const struct addrinfo *addr; /* where to connect; NULL: --url's */
    char err[128]; /* transport error of the last request */
} conn;

static void conn_close(conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->reused = 0;
}

static int conn_open(conn *c)
{
    const struct addrinfo *a = c->addr ? c->addr : server_addr;
    int fd = socket(a->ai_family, SOCK_STREAM, 0);
    if (fd < 0) {
        snprintf(c->err, sizeof c->err, "socket: %s", strerror(errno));
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
        snprintf(c->err, sizeof c->err, "connect: %s", strerror(errno));
        close(fd);
        return -1;
    }
    c->fd = fd;
    c->reused = 0;
    return 0;
}

static void grow(char **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return;
    size_t n = *cap ? *cap : 4096;
    while (n < need)
        n *= 2;
    char *p = realloc(*buf, n);
    if (!p) {
        fputs("bd_loadgen: out of memory\n", stderr);
        abort();
    }
    *buf = p;
    *cap = n;
}

static const char *find_bytes(const char *hay, size_t len, const char *needle)
{
    size_t nl = strlen(needle);
    for (size_t i = 0; i + nl <= len; i++)
        if (hay[i] == needle[0] && memcmp(hay + i, needle, nl) == 0)
            return hay + i;
    return NULL;
}

/* Value of header `name` in the header block [h, h+len), or NULL; *vlen set. */
static const char *header_value(const char *h, size_t len, const char *name, size_t *vlen)
{
    size_t nl = strlen(name);
    const char *end = h + len;
    const char *line = h;
    while (line < end) {
        const char *eol = find_bytes(line, (size_t)(end - line), "\r\n");
        if (!eol)
            eol = end;
        if ((size_t)(eol - line) > nl && line[nl] == ':' && strncasecmp(line, name, nl) == 0) {
            const char *v = line + nl + 1;
            while (v < eol && (*v == ' ' || *v == '\t'))
                v++;
            const char *ve = eol;
            while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
                ve--;
            *vlen = (size_t)(ve - v);
            return v;
        }
        line = eol + 2;
    }
    return NULL;
}

/* Decodes a complete chunked body at [p, p+len) in place. Returns the decoded
 * length, -1 if more bytes are needed, -2 if malformed. */
static long dechunk(char *p, size_t len, int decode)
{
    size_t r = 0, w = 0;
    for (;;) {
        const char *eol = find_bytes(p + r, len - r, "\r\n");
        if (!eol)
            return -1;
        char *endp;
        unsigned long sz = strtoul(p + r, &endp, 16);
        if (endp == p + r)
            return -2;
        r = (size_t)(eol - p) + 2;
        if (sz == 0) {
            /* skip trailers up to the empty line */
            for (;;) {
                const char *e2 = find_bytes(p + r, len - r, "\r\n");
                if (!e2)
                    return -1;
                if (e2 == p + r)
                    return (long)w;
                r = (size_t)(e2 - p) + 2;
            }
        }
        if (len - r < sz + 2)
            return -1;
        if (decode)
            memmove(p + w, p + r, sz);
        w += sz;
        r += sz + 2;
    }
}

/* One request/response over c. 0: a complete response (c->status, c->body);
 * -1: transport or protocol failure (c->err). Retries once on a fresh
 * connection when a reused one turns out to be closed before answering. */
static int http_request(conn *c, const char *method, const char *path, const char *body)
{
    size_t blen = body ? strlen(body) : 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        if (c->fd < 0 && conn_open(c) != 0)
            return -1;
        int was_reused = c->reused;
        grow(&c->out, &c->out_cap, blen + strlen(path) + strlen(opt.token) + 512);
        int hl = snprintf(c->out, c->out_cap,
                          "%s %s HTTP/1.1\r\nHost: %s:%s\r\nAuthorization: Bearer %s\r\n"
                          "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
                          method, path, opt.host, opt.port, opt.token, blen);
        memcpy(c->out + hl, body ? body : "", blen);
        size_t total = (size_t)hl + blen, sent = 0;
        int failed = 0;
        while (sent < total) {
            ssize_t k = send(c->fd, c->out + sent, total - sent, MSG_NOSIGNAL);
            if (k < 0 && errno == EINTR)
                continue;
            if (k <= 0) {
                snprintf(c->err, sizeof c->err, "send: %s", strerror(errno));
                failed = 1;
                break;
            }
            sent += (size_t)k;
        }
        c->in_len = 0;
        size_t head_len = 0, need = 0;
        int chunked = 0, close_after = 0, have_head = 0;
        while (!failed) {
            if (have_head) {
                if (!chunked && c->in_len >= head_len + need)
                    break;
                if (chunked) {
                    long d = dechunk(c->in + head_len, c->in_len - head_len, 0);
                    if (d == -2) {
                        snprintf(c->err, sizeof c->err, "bad chunked encoding");
                        conn_close(c);
                        return -1;
                    }
                    if (d >= 0) {
                        need = (size_t)dechunk(c->in + head_len, c->in_len - head_len, 1);
                        break;
                    }
                }
            }
            grow(&c->in, &c->in_cap, c->in_len + 4096);
            ssize_t k = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len - 1, 0);
            if (k < 0 && errno == EINTR)
                continue;
            if (k <= 0) {
                snprintf(c->err, sizeof c->err, "recv: %s", k == 0 ? "connection closed" : strerror(errno));
                failed = 1;
                break;
            }
            c->in_len += (size_t)k;
            if (!have_head) {
                const char *e = find_bytes(c->in, c->in_len, "\r\n\r\n");
                if (!e)
                    continue;
                head_len = (size_t)(e - c->in) + 4;
                if (c->in_len < 12 || strncmp(c->in, "HTTP/1.", 7) != 0) {
                    snprintf(c->err, sizeof c->err, "bad status line");
                    conn_close(c);
                    return -1;
                }
                c->status = atoi(c->in + 9);
                size_t vl;
                const char *v = header_value(c->in, head_len, "Content-Length", &vl);
                const char *te = header_value(c->in, head_len, "Transfer-Encoding", &vl);
                chunked = te && vl >= 7 && strncasecmp(te, "chunked", 7) == 0;
                need = v ? strtoul(v, NULL, 10) : 0;
                const char *cn = header_value(c->in, head_len, "Connection", &vl);
                close_after = cn && vl >= 5 && strncasecmp(cn, "close", 5) == 0;
                if (!v && !chunked && c->status != 204 && c->status != 304 && !close_after) {
                    snprintf(c->err, sizeof c->err, "response without length");
                    conn_close(c);
                    return -1;
                }
                have_head = 1;
            }
        }
        if (failed) {
            int retry = was_reused && c->in_len == 0;
            conn_close(c);
            if (retry) {
                c->reconnects++;
                continue;
            }
            return -1;
        }
        c->body = c->in + head_len;
        c->body_len = need;
        c->body[need] = '\0';
        c->reused = 1;
        if (close_after) {
            conn_close(c);
            c->reconnects++;
        }
        return 0;
    }
    return -1;
}

static void conn_free(conn *c)
{
    conn_close(c);
    free(c->out);
    free(c->in);
}

/* ---- virtual workers ---- */

typedef struct worker {
    pthread_t thread;
    int index;
    uint64_t rng;
    hist all;
    hist kind[CALL_KINDS];
    long calls;         /* successful calls in the measured window */
    long errors;        /* failed calls in the measured window */
    long errors_total;  /* including warm-up */
    long trials_done;   /* completes counted in the window */
    long trials_stopped;
    long empty_suggests;
    long reconnects;
    long busy;          /* 429 answers (a busy study's backpressure), each waited out and retried */
    uint64_t last_end;  /* time of the last counted call */
    uint32_t *slow_at;  /* window index (since measure_start_ns) of each slow call */
    size_t slow_n, slow_cap;
} worker;

static double rnd01(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (double)(*s >> 11) / 9007199254740992.0;
}

/* The seconds a 429 answer asks to wait (its JSON's retry_after_seconds),
 * within [0.01, 5]; 1 when it names none. */
static double busy_wait_s(const conn *c)
{
    const char *key = "\"retry_after_seconds\":";
    const char *at = find_bytes(c->body, c->body_len, key);
    double s = at ? strtod(at + strlen(key), NULL) : 1.0;
    return s < 0.01 ? 0.01 : s > 5 ? 5 : s;
}

static int book(worker *w, conn *c, int kind, uint64_t t0, int rc);

/* Runs one call and books it, as a client should: a 429 (the study is busy:
 * the server's backpressure, not a failure) is waited out as its answer
 * asks and sent again, up to 30 times (counted apart: "busy"; the latency
 * booked is the last try's). Returns 0 on a 2xx answer. */
static int call(worker *w, conn *c, int kind, const char *path, const char *body)
{
    for (int tries = 0;; tries++) {
        uint64_t t0 = now_ns();
        int rc = http_request(c, "POST", path, body);
        if (rc != 0 || c->status != 429 || tries >= 30 || interrupted)
            return book(w, c, kind, t0, rc);
        w->busy++;
        sleep_ms((long)(busy_wait_s(c) * 1000));
    }
}

/* Books the answer of one call sent at t0 (rc: http_request's). */
static int book(worker *w, conn *c, int kind, uint64_t t0, int rc)
{
    uint64_t t1 = now_ns();
    int ok = rc == 0 && c->status >= 200 && c->status < 300;
    int counted = atomic_load_explicit(&phase, memory_order_relaxed) == PHASE_MEASURE;
    if (counted && ok) {
        w->calls++;
        hist_add(&w->all, t1 - t0);
        hist_add(&w->kind[kind], t1 - t0);
        w->last_end = t1;
        uint64_t ms0 = atomic_load_explicit(&measure_start_ns, memory_order_relaxed);
        if ((double)(t1 - t0) > opt.slow_ms * 1e6 && ms0 != 0 && t1 > ms0) {
            if (w->slow_n == w->slow_cap) {
                size_t n = w->slow_cap ? 2 * w->slow_cap : 1024;
                uint32_t *p = realloc(w->slow_at, n * sizeof *p);
                if (!p) {
                    fputs("bd_loadgen: out of memory\n", stderr);
                    abort();
                }
                w->slow_at = p;
                w->slow_cap = n;
            }
            w->slow_at[w->slow_n++] = (uint32_t)((t1 - ms0) / SLOW_WINDOW_NS);
        }
    } else if (counted) {
        w->errors++;
    }
    if (!ok) {
        w->errors_total++;
        if (rc != 0)
            note_error(call_names[kind], 0, c->err, strlen(c->err));
        else
            note_error(call_names[kind], c->status, c->body, c->body_len);
    }
    return ok ? 0 : -1;
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    conn c = {.fd = -1, .addr = n_via ? via_addr[(w->index % opt.studies) % n_via] : NULL};
    char path[128], body[256], suggest_path[128], suggest_body[64];
    snprintf(suggest_path, sizeof suggest_path, "/v1/studies/%lld/suggest", study_ids[w->index % opt.studies]);
    snprintf(suggest_body, sizeof suggest_body, "{\"worker\":\"lg-%d\",\"count\":1}", w->index);
    int consecutive_failures = 0;

    while (!interrupted) {
        int ph = atomic_load_explicit(&phase, memory_order_relaxed);
        if (ph == PHASE_STOP)
            break;
        if (opt.trials > 0 && ph == PHASE_MEASURE && atomic_fetch_add(&trials_claimed, 1) >= opt.trials)
            break;
        if (consecutive_failures > 3)
            sleep_ms(consecutive_failures > 50 ? 100 : 10);

        if (call(w, &c, CALL_SUGGEST, suggest_path, suggest_body) != 0) {
            consecutive_failures++;
            continue;
        }
        json_error_t jerr;
        json_t *root = json_loadb(c.body, c.body_len, 0, &jerr);
        json_t *trials = json_object_get(root, "trials");
        json_t *t0 = json_array_get(trials, 0);
        if (!t0) {
            int done = json_is_true(json_object_get(root, "done"));
            json_int_t retry = json_integer_value(json_object_get(root, "retry_after_ms"));
            if (!root || !json_is_array(trials)) {
                note_error("suggest", c.status, c.body, c.body_len);
                w->errors_total++;
                if (atomic_load_explicit(&phase, memory_order_relaxed) == PHASE_MEASURE)
                    w->errors++;
            } else {
                w->empty_suggests++;
            }
            json_decref(root);
            if (done)
                break;
            sleep_ms(retry > 0 && retry < 100 ? (long)retry : 100);
            continue;
        }
        long long tid = (long long)json_integer_value(json_object_get(t0, "id"));
        double x = json_number_value(json_object_get(json_object_get(t0, "config"), "x"));
        json_decref(root);
        if (tid <= 0) {
            note_error("suggest", c.status, "trial without an id", 19);
            w->errors_total++;
            consecutive_failures++;
            continue;
        }

        double base = (x - 0.3) * (x - 0.3);
        int stopped = 0, failed = 0;
        snprintf(path, sizeof path, "/v1/trials/%lld/measurements", tid);
        for (int step = 1; step <= opt.measurements; step++) {
            double v = base + 0.5 / step + 0.01 * rnd01(&w->rng);
            snprintf(body, sizeof body, "{\"step\":%d,\"value\":%.6f,\"elapsed_seconds\":%.3f}", step, v,
                     0.001 * step);
            if (call(w, &c, CALL_MEASURE, path, body) != 0) {
                failed = 1;
                break;
            }
            if (find_bytes(c.body, c.body_len, "\"stop\"")) {
                stopped = 1;
                break;
            }
        }
        if (failed) {
            consecutive_failures++;
            continue;
        }
        if (stopped) {
            w->trials_stopped++;
            consecutive_failures = 0;
            continue;
        }
        snprintf(path, sizeof path, "/v1/trials/%lld/complete", tid);
        snprintf(body, sizeof body, "{\"value\":%.6f}", base + 0.01 * rnd01(&w->rng));
        if (call(w, &c, CALL_COMPLETE, path, body) != 0) {
            consecutive_failures++;
            continue;
        }
        consecutive_failures = 0;
        if (atomic_load_explicit(&phase, memory_order_relaxed) == PHASE_MEASURE)
            w->trials_done++;
    }
    w->reconnects = c.reconnects;
    conn_free(&c);
    return NULL;
}

/* ---- setup ---- */

static void usage(FILE *f)
{
    fputs("usage: bd_loadgen [--url host:port] [--token T | --token-file F] [--workers W]\n"
          "                  [--duration S | --trials N] [--warmup S] [--max-trials N]\n"
          "                  [--measurements K] [--studies S] [--slow-ms MS] [--via HOST:PORT,...]\n"
          "Each of W workers loops suggest -> K measurements -> complete on one of S new random-search\n"
          "studies (worker i on study i mod S). Defaults: 127.0.0.1:8080, W=32, 20 s, 2 s warm-up,\n"
          "K=3, S=1, slow calls above 10 ms, token from $BANDITD_TOKEN. --via: the workers of study j\n"
          "connect to the (j mod N)-th address (daemons of one cluster; the studies are made through --url).\n",
          f);
}

static int parse_url(const char *url)
{
    if (strncmp(url, "http://", 7) == 0)
        url += 7;
    const char *colon = strrchr(url, ':');
    size_t hl = colon ? (size_t)(colon - url) : strlen(url);
    if (hl == 0 || hl >= sizeof opt.host)
        return -1;
    memcpy(opt.host, url, hl);
    opt.host[hl] = '\0';
    if (colon) {
        const char *p = colon + 1;
        size_t pl = strcspn(p, "/");
        if (pl == 0 || pl >= sizeof opt.port)
            return -1;
        memcpy(opt.port, p, pl);
        opt.port[pl] = '\0';
    }
    return 0;
}

/* --via A,B,...: resolves each host:port (at most MAX_VIA) into via_addr. */
static int parse_via(const char *list)
{
    char buf[4096];
    if (strlen(list) >= sizeof buf)
        return -1;
    strcpy(buf, list);
    for (char *save = NULL, *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *colon = strrchr(item, ':');
        if (n_via == MAX_VIA || !colon || colon == item || !colon[1])
            return -1;
        *colon = '\0';
        struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
        int gai = getaddrinfo(item, colon + 1, &hints, &via_addr[n_via]);
        if (gai != 0) {
            fprintf(stderr, "bd_loadgen: --via %s:%s: %s\n", item, colon + 1, gai_strerror(gai));
            return -1;
        }
        n_via++;
    }
    return n_via ? 0 : -1;
}

static int read_token_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(opt.token, 1, sizeof opt.token - 1, f);
    fclose(f);
    opt.token[n] = '\0';
    opt.token[strcspn(opt.token, " \t\r\n")] = '\0';
    return opt.token[0] ? 0 : -1;
}

static int parse_options(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"url", required_argument, NULL, 'u'},          {"token", required_argument, NULL, 't'},
        {"token-file", required_argument, NULL, 'T'},   {"workers", required_argument, NULL, 'w'},
        {"duration", required_argument, NULL, 'd'},     {"trials", required_argument, NULL, 'n'},
        {"warmup", required_argument, NULL, 'W'},       {"max-trials", required_argument, NULL, 'm'},
        {"measurements", required_argument, NULL, 'k'}, {"studies", required_argument, NULL, 's'},
        {"via", required_argument, NULL, 'V'},
        {"slow-ms", required_argument, NULL, 'S'},      {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *env = getenv("BANDITD_TOKEN");
    if (env)
        snprintf(opt.token, sizeof opt.token, "%s", env);
    int ch;
    while ((ch = getopt_long(argc, argv, "u:t:T:w:d:n:W:m:k:s:S:V:h", longopts, NULL)) != -1) {
        switch (ch) {
        case 'u':
            if (parse_url(optarg) != 0) {
                fprintf(stderr, "bd_loadgen: bad --url %s\n", optarg);
                return -1;
            }
            break;
        case 't':
            snprintf(opt.token, sizeof opt.token, "%s", optarg);
            break;
        case 'T':
            if (read_token_file(optarg) != 0) {
                fprintf(stderr, "bd_loadgen: cannot read a token from %s\n", optarg);
                return -1;
            }
            break;
        case 'w':
            opt.workers = atoi(optarg);
            break;
        case 'd':
            opt.duration = atof(optarg);
            break;
        case 'n':
            opt.trials = atol(optarg);
            break;
        case 'W':
            opt.warmup = atof(optarg);
            break;
        case 'm':
            opt.max_trials = atol(optarg);
            break;
        case 'k':
            opt.measurements = atoi(optarg);
            break;
        case 's':
            opt.studies = atoi(optarg);
            break;
        case 'S':
            opt.slow_ms = atof(optarg);
            break;
        case 'V':
            if (parse_via(optarg) != 0) {
                fprintf(stderr, "bd_loadgen: bad --via %s (host:port,... at most %d)\n", optarg, MAX_VIA);
                return -1;
            }
            break;
        case 'h':
            usage(stdout);
            exit(0);
        default:
            usage(stderr);
            return -1;
        }
    }
    if (optind != argc || opt.workers < 1 || opt.workers > 4096 || opt.duration <= 0 || opt.trials < 0 ||
        opt.warmup < 0 || opt.max_trials < 1 || opt.measurements < 0 || opt.studies < 1 ||
        opt.studies > MAX_STUDIES || opt.studies > opt.workers || !(opt.slow_ms > 0)) {
        usage(stderr);
        return -1;
    }
    if (!opt.token[0]) {
        fputs("bd_loadgen: no token (--token, --token-file or $BANDITD_TOKEN)\n", stderr);
        return -1;
    }
    return 0;
}

static int create_study(int i)
{
    conn c = {.fd = -1};
    char body[512];
    int rc = -1;
    snprintf(body, sizeof body,
             "{\"name\":\"loadgen-%ld-%ld-%d\",\"parameters\":[{\"name\":\"x\",\"type\":\"float\",\"low\":0,"
             "\"high\":1}],\"objective\":{\"goal\":\"minimize\"},\"scheduler\":{\"name\":\"random\",\"options\":{\"max_trials\":%ld}},"
             "\"seed\":42,\"lease_seconds\":600}",
             (long)getpid(), (long)time(NULL), i, opt.max_trials);
    if (http_request(&c, "POST", "/v1/studies", body) != 0) {
        fprintf(stderr, "bd_loadgen: cannot create the study: %s\n", c.err);
        goto out;
    }
    if (c.status != 201 && c.status != 200) {
        fprintf(stderr, "bd_loadgen: creating the study: HTTP %d %.300s\n", c.status, c.body);
        goto out;
    }
    json_error_t jerr;
    json_t *root = json_loadb(c.body, c.body_len, 0, &jerr);
    study_ids[i] = (long long)json_integer_value(json_object_get(root, "id"));
    json_decref(root);
    if (study_ids[i] <= 0) {
        fprintf(stderr, "bd_loadgen: study answer without an id: %.300s\n", c.body);
        goto out;
    }
    rc = 0;
out:
    conn_free(&c);
    return rc;
}

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

static double cpu_seconds(const struct timeval *tv)
{
    return (double)tv->tv_sec + (double)tv->tv_usec / 1e6;
}

int main(int argc, char **argv)
{
    if (parse_options(argc, argv) != 0)
        return 2;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    int gai = getaddrinfo(opt.host, opt.port, &hints, &server_addr);
    if (gai != 0) {
        fprintf(stderr, "bd_loadgen: %s:%s: %s\n", opt.host, opt.port, gai_strerror(gai));
        return 2;
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    for (int i = 0; i < opt.studies; i++) {
        if (create_study(i) != 0) {
            freeaddrinfo(server_addr);
            return 2;
        }
    }

    worker *ws = calloc((size_t)opt.workers, sizeof *ws);
    if (!ws) {
        fputs("bd_loadgen: out of memory\n", stderr);
        return 2;
    }
    uint64_t seed = now_ns() | 1;
    int started = 0;
    for (int i = 0; i < opt.workers; i++) {
        ws[i].index = i;
        ws[i].rng = seed + 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1);
        if (pthread_create(&ws[i].thread, NULL, worker_main, &ws[i]) != 0) {
            fprintf(stderr, "bd_loadgen: pthread_create failed after %d workers\n", i);
            break;
        }
        started++;
    }

    struct rusage ru0, ru1;
    uint64_t t_start = now_ns();
    uint64_t warm_end = t_start + (uint64_t)(opt.warmup * 1e9);
    while (!interrupted && now_ns() < warm_end)
        sleep_ms(10);
    getrusage(RUSAGE_SELF, &ru0);
    uint64_t t0 = now_ns();
    atomic_store(&measure_start_ns, t0);
    atomic_store(&phase, PHASE_MEASURE);
    uint64_t t_end = t0 + (uint64_t)(opt.duration * 1e9);
    if (opt.trials == 0) {
        while (!interrupted && now_ns() < t_end)
            sleep_ms(10);
        t_end = now_ns();
        atomic_store(&phase, PHASE_STOP);
    }
    for (int i = 0; i < started; i++)
        pthread_join(ws[i].thread, NULL);
    getrusage(RUSAGE_SELF, &ru1);
    if (opt.trials > 0) {
        t_end = t0;
        for (int i = 0; i < started; i++)
            if (ws[i].last_end > t_end)
                t_end = ws[i].last_end;
    }

    static hist all, kind[CALL_KINDS];
    long calls = 0, errors = 0, errors_total = 0, done = 0, stopped = 0, empty = 0, reconnects = 0, busy = 0;
    for (int i = 0; i < started; i++) {
        hist_merge(&all, &ws[i].all);
        for (int k = 0; k < CALL_KINDS; k++)
            hist_merge(&kind[k], &ws[i].kind[k]);
        calls += ws[i].calls;
        errors += ws[i].errors;
        errors_total += ws[i].errors_total;
        busy += ws[i].busy;
        done += ws[i].trials_done;
        stopped += ws[i].trials_stopped;
        empty += ws[i].empty_suggests;
        reconnects += ws[i].reconnects;
    }
    double secs = (double)(t_end - t0) / 1e9;
    if (secs <= 0)
        secs = 1e-9;
    double cps = (double)calls / secs, tps = (double)done / secs;
    double cpu_user = cpu_seconds(&ru1.ru_utime) - cpu_seconds(&ru0.ru_utime);
    double cpu_sys = cpu_seconds(&ru1.ru_stime) - cpu_seconds(&ru0.ru_stime);

    /* Slow calls by 100 ms window: how many windows hold them, and what share
     * the five worst windows hold (near 100%: a few stalls; low: spread out). */
    size_t nwin = (size_t)((t_end - t0 + SLOW_WINDOW_NS - 1) / SLOW_WINDOW_NS);
    if (nwin == 0)
        nwin = 1;
    uint32_t *win = calloc(nwin, sizeof *win);
    long slow = 0, slow_windows = 0, top5 = 0;
    size_t top_at[5] = {0};
    uint32_t top_n[5] = {0};
    if (!win) {
        fputs("bd_loadgen: out of memory\n", stderr);
        return 2;
    }
    for (int i = 0; i < started; i++)
        for (size_t j = 0; j < ws[i].slow_n; j++) {
            /* a call counted as it ended just after the window closed goes into the last window */
            win[ws[i].slow_at[j] < nwin ? ws[i].slow_at[j] : nwin - 1]++;
            slow++;
        }
    for (size_t j = 0; j < nwin; j++) {
        if (!win[j])
            continue;
        slow_windows++;
        for (int k = 0; k < 5; k++) {
            if (win[j] > top_n[k]) {
                memmove(&top_n[k + 1], &top_n[k], (size_t)(4 - k) * sizeof top_n[0]);
                memmove(&top_at[k + 1], &top_at[k], (size_t)(4 - k) * sizeof top_at[0]);
                top_n[k] = win[j];
                top_at[k] = j;
                break;
            }
        }
    }
    for (int k = 0; k < 5; k++)
        top5 += top_n[k];
    double top5_share = slow ? 100.0 * (double)top5 / (double)slow : 0.0;

    if (opt.studies == 1)
        printf("bd_loadgen: %s:%s study %lld, %d workers, warm-up %.1f s, measured %.2f s%s\n", opt.host, opt.port,
               study_ids[0], started, opt.warmup, secs, interrupted ? " (interrupted)" : "");
    else
        printf("bd_loadgen: %s:%s studies %lld..%lld (%d, workers round-robin), %d workers, warm-up %.1f s, "
               "measured %.2f s%s\n",
               opt.host, opt.port, study_ids[0], study_ids[opt.studies - 1], opt.studies, started, opt.warmup, secs,
               interrupted ? " (interrupted)" : "");
    printf("calls          %ld ok (errors %ld; %ld including warm-up; reconnects %ld; busy %ld: 429 answers waited "
           "out and sent again)\n",
           calls, errors, errors_total, reconnects, busy);
    printf("calls/s        %.1f\n", cps);
    printf("trials/s       %.1f (%ld completed, %ld stopped, %ld empty suggests)\n", tps, done, stopped, empty);
    printf("latency ms     p50 %.3f  p90 %.3f  p99 %.3f  p99.9 %.3f  max %.3f\n", hist_quantile_ms(&all, 0.50),
           hist_quantile_ms(&all, 0.90), hist_quantile_ms(&all, 0.99), hist_quantile_ms(&all, 0.999),
           (double)all.max_ns / 1e6);
    for (int k = 0; k < CALL_KINDS; k++)
        printf("  %-12s p50 %.3f  p90 %.3f  p99 %.3f  p99.9 %.3f  max %.3f  (n=%llu)\n", call_names[k],
               hist_quantile_ms(&kind[k], 0.50), hist_quantile_ms(&kind[k], 0.90), hist_quantile_ms(&kind[k], 0.99),
               hist_quantile_ms(&kind[k], 0.999), (double)kind[k].max_ns / 1e6, (unsigned long long)kind[k].count);
    printf("slow calls     %ld above %.1f ms (%.2f%% of calls) in %ld of %zu 100-ms windows; the 5 worst windows "
           "hold %.0f%% of them",
           slow, opt.slow_ms, calls ? 100.0 * (double)slow / (double)calls : 0.0, slow_windows, nwin, top5_share);
    for (int k = 0; k < 5 && top_n[k]; k++)
        printf("%s%u at %.1f s", k ? ", " : " (", top_n[k], (double)top_at[k] * SLOW_WINDOW_NS / 1e9);
    printf("%s\n", top_n[0] ? ")" : "");
    printf("client cpu     user %.2f s, sys %.2f s (%.0f%% of one core)\n", cpu_user, cpu_sys,
           100.0 * (cpu_user + cpu_sys) / secs);
    for (int i = 0; i < error_shown; i++)
        printf("error          %s\n", error_text[i]);
    printf("RESULT calls_per_s=%.1f trials_per_s=%.1f p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f max_ms=%.3f errors=%ld "
           "p999_ms=%.3f studies=%d slow_calls=%ld slow_windows=%ld slow_top5_share=%.0f busy=%ld\n",
           cps, tps, hist_quantile_ms(&all, 0.50), hist_quantile_ms(&all, 0.90), hist_quantile_ms(&all, 0.99),
           (double)all.max_ns / 1e6, errors, hist_quantile_ms(&all, 0.999), opt.studies, slow, slow_windows,
           top5_share, busy);
    fflush(stdout);
    for (int i = 0; i < started; i++)
        free(ws[i].slow_at);
    free(win);
    free(ws);
    freeaddrinfo(server_addr);
    for (int i = 0; i < n_via; i++)
        freeaddrinfo(via_addr[i]);
    return (errors_total > 0 || calls == 0) ? 1 : 0;
}
