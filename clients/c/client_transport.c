/* client_transport.c: the C client's handle and its one HTTP path: libcurl
 * easy requests on a kept-alive connection, Idempotency-Keys, retries with
 * bounded backoff (429 answers: honouring Retry-After, within busy_wait_ms),
 * the cap on answer sizes, and the mapping of an error answer to
 * bd_client_err.
 *
 * Invariants: a body that would pass max_response is never kept (the write
 * callback aborts the transfer); a retried POST or DELETE carries the key of
 * its first attempt; an export never retries once a byte reached the
 * caller's FILE (it cannot be taken back); the waits after 429 answers add up
 * to at most busy_wait_ms, none longer than BDC_BUSY_MAX_MS. */
#include "client_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define MAX_KEY_LEN 255

/* Cuts a UTF-8 sequence that truncation left incomplete at the end of s,
 * so that the message stays valid text (a caller may put it in JSON). */
static void trim_utf8(char *s)
{
    size_t n = strlen(s), start = n, need;
    while (start > 0 && ((unsigned char)s[start - 1] & 0xC0) == 0x80 && n - start < 3)
        start--;
    if (start == 0)
        return;
    unsigned char lead = (unsigned char)s[start - 1];
    need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    if (need > 1 && n - (start - 1) < need)
        s[start - 1] = '\0';
}

int bdc_err_set(bd_client_err *err, int rc, long status, const char *code, const char *field, const char *fmt, ...)
{
    if (!err)
        return rc;
    va_list ap;
    err->rc = rc;
    err->status = status;
    snprintf(err->code, sizeof err->code, "%s", code ? code : "");
    snprintf(err->field, sizeof err->field, "%s", field ? field : "");
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    trim_utf8(err->message);
    trim_utf8(err->field);
    return rc;
}

static void err_clear(bd_client_err *err)
{
    if (err)
        memset(err, 0, sizeof *err);
}

/* ------------------------------------------------------------ randomness */

static int random_bytes(void *buf, size_t n)
{
    unsigned char *p = buf;
    while (n > 0) {
        ssize_t got = getrandom(p, n, 0);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            break; /* ENOSYS on an old kernel: fall back to the device */
        p += got;
        n -= (size_t)got;
    }
    if (n == 0)
        return 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return BD_CLIENT_EIO;
    while (n > 0) {
        ssize_t got = read(fd, p, n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            close(fd);
            return BD_CLIENT_EIO;
        }
        p += got;
        n -= (size_t)got;
    }
    close(fd);
    return 0;
}

int bdc_idempotency_key(char key[33])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char raw[16];
    if (random_bytes(raw, sizeof raw))
        return BD_CLIENT_EIO;
    for (size_t i = 0; i < sizeof raw; i++) {
        key[2 * i] = hex[raw[i] >> 4];
        key[2 * i + 1] = hex[raw[i] & 15];
    }
    key[32] = '\0';
    return 0;
}

/* A factor in [0.5, 1.5) so that workers retrying together spread out. */
static double jitter(bd_client *c)
{
    uint64_t x = c->jitter;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    c->jitter = x;
    return 0.5 + (double)((x * 0x2545F4914F6CDD1DULL) >> 11) / 9007199254740992.0;
}

/* The wait in ms before re-sending after a 429, or -1 to give up:
 * max(Retry-After, backoff_ms) plus up to 10% jitter, at most BDC_BUSY_MAX_MS
 * and left_ms. Retry-After (seconds; <= 0 counts as absent) is clamped to
 * BDC_BUSY_MAX_MS; asking for more than left_ms gives up at once. */
static double busy_wait(bd_client *c, int64_t retry_after_s, double backoff_ms, double left_ms)
{
    double asked = 0;
    if (retry_after_s >= (int64_t)(BDC_BUSY_MAX_MS / 1000))
        asked = BDC_BUSY_MAX_MS;
    else if (retry_after_s > 0)
        asked = (double)retry_after_s * 1000;
    if (left_ms <= 0 || asked > left_ms)
        return -1;
    double wait = (asked > backoff_ms ? asked : backoff_ms) * (1 + 0.1 * (jitter(c) - 0.5));
    if (wait > BDC_BUSY_MAX_MS)
        wait = BDC_BUSY_MAX_MS;
    return wait < left_ms ? wait : left_ms;
}

static void sleep_ms(double ms)
{
    struct timespec ts = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(((long long)ms % 1000) * 1000000)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* ------------------------------------------------------------ the handle */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc = CURLE_OK;

static void curl_init(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* Header values must not carry line breaks (they would start a new header). */
static int printable(const char *s, size_t max)
{
    size_t n = 0;
    for (; *s; s++, n++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s == 0x7f || n >= max)
            return 0;
    return 1;
}

int bd_client_new(const char *url, const char *token, bd_client **out, bd_client_err *err)
{
    bd_client *c = NULL;
    int rc = 0;
    err_clear(err);
    *out = NULL;
    if (!url || (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) || !printable(url, 4096)) {
        rc = bdc_err_set(err, BD_CLIENT_EINVAL, 0, "client_invalid", "url", "url must be http:// or https://");
        goto out;
    }
    if (token && (!*token || !printable(token, 4096))) {
        rc = bdc_err_set(err, BD_CLIENT_EINVAL, 0, "client_invalid", "token",
                         "token must be 1 to 4096 printable characters");
        goto out;
    }
    pthread_once(&curl_once, curl_init);
    if (curl_init_rc != CURLE_OK) {
        rc = bdc_err_set(err, BD_CLIENT_ENET, 0, "network", NULL, "curl_global_init: %s",
                         curl_easy_strerror(curl_init_rc));
        goto out;
    }
    c = calloc(1, sizeof *c);
    if (!c || !(c->curl = curl_easy_init()) || !(c->base = strdup(url))) {
        rc = bdc_err_set(err, BD_CLIENT_ENOMEM, 0, "out_of_memory", NULL, "out of memory");
        goto out;
    }
    size_t n = strlen(c->base);
    while (n > 0 && c->base[n - 1] == '/')
        c->base[--n] = '\0';
    if (token) {
        size_t len = strlen(token) + sizeof "Authorization: Bearer ";
        if (!(c->auth = malloc(len))) {
            rc = bdc_err_set(err, BD_CLIENT_ENOMEM, 0, "out_of_memory", NULL, "out of memory");
            goto out;
        }
        snprintf(c->auth, len, "Authorization: Bearer %s", token);
    }
    c->retries = BDC_DEFAULT_RETRIES;
    c->backoff_ms = BDC_DEFAULT_BACKOFF_MS;
    c->max_backoff_ms = BDC_DEFAULT_MAX_BACKOFF_MS;
    c->timeout_ms = BDC_DEFAULT_TIMEOUT_MS;
    c->busy_wait_ms = BDC_DEFAULT_BUSY_WAIT_MS;
    c->max_response = BDC_DEFAULT_MAX_RESPONSE;
    if (random_bytes(&c->jitter, sizeof c->jitter) || c->jitter == 0)
        c->jitter = 0x9E3779B97F4A7C15ULL ^ (uint64_t)time(NULL);
    *out = c;
    c = NULL;
out:
    bd_client_free(c);
    return rc;
}

void bd_client_free(bd_client *c)
{
    if (!c)
        return;
    if (c->curl)
        curl_easy_cleanup(c->curl);
    free(c->base);
    free(c->auth);
    free(c);
}

int bd_client_set_retries(bd_client *c, int retries, long backoff_ms, long max_backoff_ms)
{
    if (!c || retries < 0 || retries > 100 || backoff_ms < 0 || backoff_ms > 600000 || max_backoff_ms < 0 ||
        max_backoff_ms > 600000)
        return BD_CLIENT_EINVAL;
    c->retries = retries;
    c->backoff_ms = backoff_ms;
    c->max_backoff_ms = max_backoff_ms;
    return 0;
}

int bd_client_set_busy_wait(bd_client *c, long max_total_ms)
{
    if (!c || max_total_ms < 0 || max_total_ms > 86400000L)
        return BD_CLIENT_EINVAL;
    c->busy_wait_ms = max_total_ms;
    return 0;
}

int bd_client_set_timeout(bd_client *c, long timeout_ms)
{
    if (!c || timeout_ms < 1 || timeout_ms > 86400000L)
        return BD_CLIENT_EINVAL;
    c->timeout_ms = timeout_ms;
    return 0;
}

int bd_client_set_max_response(bd_client *c, int64_t max_bytes)
{
    if (!c || max_bytes < 1024 || max_bytes > ((int64_t)1 << 40))
        return BD_CLIENT_EINVAL;
    c->max_response = max_bytes;
    return 0;
}

/* ------------------------------------------------------------ one transfer */

typedef struct sink {
    bd_client *c;
    FILE *out; /* export: 2xx bodies go here */
    char *buf; /* everything else collects here */
    size_t len, cap;
    int64_t total;   /* bytes of this answer so far */
    int64_t written; /* bytes that reached out */
    int too_big;
    int io_error;
} sink;

static size_t on_data(char *data, size_t size, size_t nmemb, void *userp)
{
    sink *s = userp;
    size_t n = size * nmemb;
    if ((int64_t)n > s->c->max_response - s->total) {
        s->too_big = 1;
        return 0; /* aborts the transfer with CURLE_WRITE_ERROR */
    }
    s->total += (int64_t)n;
    long status = 0;
    curl_easy_getinfo(s->c->curl, CURLINFO_RESPONSE_CODE, &status);
    if (s->out && status >= 200 && status < 300) {
        if (fwrite(data, 1, n, s->out) != n) {
            s->io_error = 1;
            return 0;
        }
        s->written += (int64_t)n;
        return n;
    }
    if (s->len + n + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 4096;
        while (cap < s->len + n + 1)
            cap *= 2;
        char *p = realloc(s->buf, cap);
        if (!p)
            return 0;
        s->buf = p;
        s->cap = cap;
    }
    memcpy(s->buf + s->len, data, n);
    s->len += n;
    s->buf[s->len] = '\0';
    return n;
}

/* Failures after which the request may not have reached the server, or its
 * answer was lost: re-sending is safe with the same Idempotency-Key. */
static int retryable(CURLcode cc)
{
    switch (cc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SSL_CONNECT_ERROR:
        return 1;
    default:
        return 0;
    }
}

static int valid_method(const char *m)
{
    size_t n = 0;
    for (; m[n]; n++)
        if (m[n] < 'A' || m[n] > 'Z' || n >= 16)
            return 0;
    return n > 0;
}

static int valid_path(const char *p)
{
    if (p[0] != '/')
        return 0;
    for (; *p; p++)
        if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
            return 0;
    return 1;
}

/* Fills err from an error answer: {"error": {"code", "message", "field"}}, or
 * the start of whatever else the server sent. */
static int http_error(long status, const char *body, size_t len, bd_client_err *err)
{
    json_t *doc = body && len ? json_loadb(body, len, 0, NULL) : NULL;
    json_t *e = json_object_get(doc, "error");
    const char *code = json_string_value(json_object_get(e, "code"));
    const char *message = json_string_value(json_object_get(e, "message"));
    const char *field = json_string_value(json_object_get(e, "field"));
    char fallback[32];
    snprintf(fallback, sizeof fallback, "http_%ld", status);
    if (code)
        bdc_err_set(err, BD_CLIENT_EHTTP, status, code, field, "%s", message ? message : "");
    else
        bdc_err_set(err, BD_CLIENT_EHTTP, status, fallback, NULL, "HTTP %ld: %.200s", status, body ? body : "");
    json_decref(doc);
    return BD_CLIENT_EHTTP;
}

static int add_header(struct curl_slist **list, const char *line)
{
    struct curl_slist *l = curl_slist_append(*list, line);
    if (!l)
        return BD_CLIENT_ENOMEM;
    *list = l;
    return 0;
}

/* One attempt. Returns the curl code; *status is 0 without an answer. */
static CURLcode attempt(bd_client *c, const char *method, const char *url, const char *data, size_t len,
                        struct curl_slist *headers, sink *s, long *status)
{
    CURL *h = c->curl;
    CURLcode cc;
    curl_easy_reset(h); /* keeps the connection cache */
    *status = 0;
    if ((cc = curl_easy_setopt(h, CURLOPT_URL, url)) ||
        (cc = curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https")) ||
        (cc = curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L)) ||
        (cc = curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->timeout_ms)) ||
        (cc = curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers)) ||
        (cc = curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data)) ||
        (cc = curl_easy_setopt(h, CURLOPT_WRITEDATA, s)) ||
        (cc = curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)c->max_response)))
        return cc;
    if (data || strcmp(method, "POST") == 0) {
        /* POST semantics (a body, Content-Length) under whatever method was asked. */
        if ((cc = curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(data ? len : 0))) ||
            (cc = curl_easy_setopt(h, CURLOPT_POSTFIELDS, data ? data : "")))
            return cc;
        if (strcmp(method, "POST") != 0 && (cc = curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method)))
            return cc;
    } else if (strcmp(method, "GET") != 0 && (cc = curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method))) {
        return cc;
    }
    cc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    return cc;
}

int bdc_send(bd_client *c, const char *method, const char *path, const char *data, size_t len, const char *key,
             FILE *out, long *status, char **body, size_t *body_len, bd_client_err *err)
{
    struct curl_slist *headers = NULL;
    char *url = NULL;
    char fresh[33], line[MAX_KEY_LEN + 40];
    sink s = {.c = c, .out = out};
    int rc = 0;
    long st = 0;
    err_clear(err);
    if (status)
        *status = 0;
    if (body)
        *body = NULL;
    if (body_len)
        *body_len = 0;
    if (!c || !method || !valid_method(method))
        return bdc_err_set(err, BD_CLIENT_EINVAL, 0, "client_invalid", "method", "method must be an HTTP verb");
    if (!path || !valid_path(path))
        return bdc_err_set(err, BD_CLIENT_EINVAL, 0, "client_invalid", "path",
                           "path must start with / and hold no spaces or control characters");
    if (key && (!*key || !printable(key, MAX_KEY_LEN)))
        return bdc_err_set(err, BD_CLIENT_EINVAL, 0, "client_invalid", "idempotency_key",
                           "the key must be 1 to %d printable characters", MAX_KEY_LEN);
    if (!key && (strcmp(method, "POST") == 0 || strcmp(method, "DELETE") == 0)) {
        if (bdc_idempotency_key(fresh))
            return bdc_err_set(err, BD_CLIENT_EIO, 0, "io", NULL, "no random bytes for an Idempotency-Key");
        key = fresh;
    }
    size_t ulen = strlen(c->base) + strlen(path) + 1;
    if (!(url = malloc(ulen))) {
        rc = bdc_err_set(err, BD_CLIENT_ENOMEM, 0, "out_of_memory", NULL, "out of memory");
        goto out;
    }
    snprintf(url, ulen, "%s%s", c->base, path);
    if (key)
        snprintf(line, sizeof line, "Idempotency-Key: %s", key);
    /* "Expect:" off: the daemon answers small bodies at once, no 100-continue round trip. */
    if (add_header(&headers, out ? "Accept: text/csv, application/json" : "Accept: application/json") ||
        add_header(&headers, "Expect:") || (data && add_header(&headers, "Content-Type: application/json")) ||
        (c->auth && add_header(&headers, c->auth)) || (key && add_header(&headers, line))) {
        rc = bdc_err_set(err, BD_CLIENT_ENOMEM, 0, "out_of_memory", NULL, "out of memory");
        goto out;
    }
    double delay = (double)c->backoff_ms;
    double busy_delay = BDC_BUSY_FIRST_MS, busy_left = (double)c->busy_wait_ms;
    int resends = 0; /* after a network error or 503: at most c->retries */
    for (int i = 0;; i++) {
        int last = resends >= c->retries;
        s.len = 0;
        s.total = 0;
        if (s.buf)
            s.buf[0] = '\0';
        CURLcode cc = attempt(c, method, url, data, len, headers, &s, &st);
        if (s.io_error) {
            rc = bdc_err_set(err, BD_CLIENT_EIO, st, "io", NULL, "writing the answer failed: %s", strerror(errno));
            goto out;
        }
        if (s.too_big || cc == CURLE_FILESIZE_EXCEEDED) {
            rc = bdc_err_set(err, BD_CLIENT_ETOOBIG, st, "too_big", NULL, "the answer is over %lld bytes",
                             (long long)c->max_response);
            goto out;
        }
        if (cc != CURLE_OK) {
            if (!retryable(cc) || last || s.written > 0) {
                rc = bdc_err_set(err, BD_CLIENT_ENET, 0, "network", NULL, "%s %s: %s (%d attempt%s)", method, path,
                                 curl_easy_strerror(cc), i + 1, i ? "s" : "");
                goto out;
            }
            /* A kept-alive connection the server had closed fails at once:
             * the first re-send goes without waiting. */
            if (i > 0) {
                sleep_ms(delay * jitter(c));
                delay = delay * 2 > (double)c->max_backoff_ms ? (double)c->max_backoff_ms : delay * 2;
            }
            resends++;
            continue;
        }
        if (st == 503 && !last && s.written == 0) {
            sleep_ms(delay * jitter(c));
            delay = delay * 2 > (double)c->max_backoff_ms ? (double)c->max_backoff_ms : delay * 2;
            resends++;
            continue;
        }
        if (st == 429 && s.written == 0) {
            curl_off_t ra = 0; /* Retry-After in seconds (curl also reads its date form); 0 without one */
            if (curl_easy_getinfo(c->curl, CURLINFO_RETRY_AFTER, &ra) != CURLE_OK)
                ra = 0;
            double wait = busy_wait(c, (int64_t)ra, busy_delay, busy_left);
            if (wait >= 0) {
                sleep_ms(wait);
                busy_left -= wait;
                busy_delay = busy_delay * 2 > BDC_BUSY_MAX_MS ? BDC_BUSY_MAX_MS : busy_delay * 2;
                continue;
            }
        }
        break;
    }
    if (status)
        *status = st;
    if (st < 200 || st >= 300) {
        rc = http_error(st, s.buf, s.len, err);
        goto out;
    }
    if (body) {
        *body = s.buf;
        s.buf = NULL;
    }
    if (body_len)
        *body_len = s.len;
out:
    curl_slist_free_all(headers);
    free(url);
    free(s.buf);
    return rc;
}
