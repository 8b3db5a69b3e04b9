/* forward.c: a request for a study a peer holds, sent to that peer (see
 * forward.h). libcurl, one easy handle per handler thread: the handle keeps
 * its connections to the peers alive between requests, so a forward costs
 * one round trip on an open connection, no handshake, and no lock is
 * shared between threads. The answer is read whole into memory (a streamed
 * CSV export or history through a peer too). */
#include "forward.h"

#include <curl/curl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "errors.h"

/* A peer that accepts no connection within this is taken for gone. */
#define CONNECT_TIMEOUT_MS 1000L
/* An answer may wait for a slow scheduler there, as it would here. */
#define ANSWER_TIMEOUT_S 120L
/* Bytes of response headers kept (names and values the answer passes on). */
#define HEADER_BYTES 2048
/* A forwarded answer is held whole before it is passed on: at most this
 * many bytes (a CSV export of ~500,000 trials), so a large export through a
 * peer cannot exhaust this daemon's memory; past it the client is told to
 * ask the holder itself. */
#define ANSWER_BYTES_MAX ((size_t)64 << 20)

static pthread_key_t handle_key;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void free_handle(void *h)
{
    curl_easy_cleanup(h);
}

static void init(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    pthread_key_create(&handle_key, free_handle);
}

void bd_api_forward_init(void)
{
    pthread_once(&init_once, init);
}

/* This thread's handle (new on first use; freed when the thread ends). */
static CURL *thread_handle(void)
{
    CURL *h = pthread_getspecific(handle_key);
    if (!h) {
        h = curl_easy_init();
        if (!h)
            return NULL;
        pthread_setspecific(handle_key, h);
    }
    return h;
}

/* The answer as it comes in. */
typedef struct answer {
    char *body;
    size_t len, cap;
    char headers[HEADER_BYTES]; /* "name\0value\0" pairs passed on */
    size_t hlen;
    int nheaders;
    char content_type[128];
    int retry_after;
    int too_big;               /* the body passed ANSWER_BYTES_MAX: the transfer was cut */
} answer;

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
    answer *a = arg;
    size_t add = size * n;
    if (a->len + add > ANSWER_BYTES_MAX) {
        a->too_big = 1;
        return 0; /* curl stops with CURLE_WRITE_ERROR */
    }
    if (a->len + add + 1 > a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 4096;
        while (cap < a->len + add + 1)
            cap *= 2;
        a->body = bd_xrealloc(a->body, cap);
        a->cap = cap;
    }
    memcpy(a->body + a->len, data, add);
    a->len += add;
    return add;
}

/* Headers a proxy must not pass on, and those the daemon writes itself. */
static int own_header(const char *name, size_t n)
{
    static const char *const own[] = {"connection", "keep-alive", "transfer-encoding", "content-length",
                                      "date", "content-type", "retry-after", "proxy-connection", "te",
                                      "trailer", "upgrade"};
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if (strlen(own[i]) == n && strncasecmp(own[i], name, n) == 0)
            return 1;
    return 0;
}

static size_t on_header(char *data, size_t size, size_t n, void *arg)
{
    answer *a = arg;
    size_t len = size * n;
    const char *colon = memchr(data, ':', len);
    if (!colon || colon == data) /* the status line, or the blank line at the end */
        return len;
    size_t nlen = (size_t)(colon - data);
    const char *v = colon + 1, *end = data + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
        end--;
    size_t vlen = (size_t)(end - v);
    if (nlen == 12 && strncasecmp(data, "content-type", 12) == 0) {
        snprintf(a->content_type, sizeof a->content_type, "%.*s", (int)vlen, v);
    } else if (nlen == 11 && strncasecmp(data, "retry-after", 11) == 0) {
        a->retry_after = atoi(v);
    } else if (!own_header(data, nlen) && a->nheaders < BD_RESP_HEADERS_MAX - 1 &&
               a->hlen + nlen + vlen + 2 <= sizeof a->headers) {
        memcpy(a->headers + a->hlen, data, nlen);
        a->headers[a->hlen + nlen] = '\0';
        memcpy(a->headers + a->hlen + nlen + 1, v, vlen);
        a->headers[a->hlen + nlen + 1 + vlen] = '\0';
        a->hlen += nlen + vlen + 2;
        a->nheaders++;
    }
    return len;
}

/* Appends "Name: value" to list when value is set. */
static struct curl_slist *add(struct curl_slist *list, const char *name, const char *value)
{
    char line[4096];
    if (!value)
        return list;
    snprintf(line, sizeof line, "%s: %s", name, value);
    struct curl_slist *l = curl_slist_append(list, line);
    if (!l)
        bd_xmalloc((size_t)-1); /* out of memory aborts, as everywhere */
    return l;
}

/* The JSON error field of a 421 answer ("daemon" or "study"); "" if none. */
static void misdirected_field(const answer *a, char *out, size_t n)
{
    json_t *j = a->body ? json_loadb(a->body, a->len, 0, NULL) : NULL;
    const char *f = json_string_value(json_object_get(json_object_get(j, "error"), "field"));
    snprintf(out, n, "%s", f ? f : "");
    json_decref(j);
}

int bd_api_forward(const bd_http_req *req, int64_t daemon_id, const char *base_url, bd_http_resp *resp, bd_err *err)
{
    CURL *h = thread_handle();
    answer *a = bd_xcalloc(1, sizeof *a);
    struct curl_slist *headers = NULL;
    char url[4096], to[32];
    long status = 0;
    int rc;
    if (!h) {
        rc = bd_err_set(err, BD_EINTERNAL, NULL, "cannot start an HTTP client to forward the request");
        goto out;
    }
    snprintf(url, sizeof url, "%s%s", base_url, req->target ? req->target : req->path);
    snprintf(to, sizeof to, "%" PRId64, daemon_id);
    headers = add(headers, "Authorization", req->authorization);
    headers = add(headers, "Content-Type", req->content_type);
    headers = add(headers, "Idempotency-Key", req->idem_key);
    headers = add(headers, "If-None-Match", req->if_none_match);
    headers = add(headers, BD_FORWARD_HEADER, to);
    headers = add(headers, "Expect", ""); /* no 100-continue round trip for a body */
    curl_easy_reset(h); /* options only: the connections stay */
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req->method_name);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_TIMEOUT_MS);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, ANSWER_TIMEOUT_S);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http");
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, a);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, a);
    if (req->body_len > 0 || req->method == BD_HTTP_POST || req->method == BD_HTTP_PATCH) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, req->body ? req->body : "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
    } else if (req->method == BD_HTTP_HEAD) {
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    }
    CURLcode cc = curl_easy_perform(h);
    curl_off_t connected_us = 0;
    if (cc == CURLE_OPERATION_TIMEDOUT) /* a timeout before the connection was made sent nothing */
        curl_easy_getinfo(h, CURLINFO_CONNECT_TIME_T, &connected_us);
    if (cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST ||
        (cc == CURLE_OPERATION_TIMEDOUT && connected_us == 0)) {
        rc = BD_FORWARD_GONE;
        goto out;
    }
    if (cc != CURLE_OK && a->too_big) {
        rc = bd_err_set(err, BD_EUNAVAILABLE, NULL,
                        "the answer of the daemon holding this study (%s) passes %zu MiB, the most a forwarded "
                        "answer may hold: ask that daemon directly",
                        base_url, ANSWER_BYTES_MAX >> 20);
        goto out;
    }
    if (cc != CURLE_OK) {
        rc = bd_err_set(err, BD_EUNAVAILABLE, NULL,
                        "the daemon holding this study (%s) did not answer (%s); retry (with the same "
                        "Idempotency-Key, if any)",
                        base_url, curl_easy_strerror(cc));
        err->retry_after = 1;
        goto out;
    }
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    if (status == 421) {
        char field[32];
        misdirected_field(a, field, sizeof field);
        rc = strcmp(field, "daemon") == 0 ? BD_FORWARD_GONE : BD_FORWARD_STALE;
        goto out;
    }
    bd_http_resp_clear(resp);
    resp->status = (int)status;
    resp->retry_after = a->retry_after;
    resp->text = a->body ? a->body : bd_xstrdup("");
    resp->text_len = a->len;
    a->body = NULL;
    /* The answer's header strings live in the answer record, which resp
     * now owns (freed by bd_http_resp_clear). */
    resp->owned = a;
    if (a->content_type[0] && strcmp(a->content_type, "application/json") != 0)
        resp->content_type = a->content_type;
    for (size_t off = 0; off < a->hlen;) {
        const char *name = a->headers + off, *value = name + strlen(name) + 1;
        off += strlen(name) + strlen(value) + 2;
        if (bd_http_resp_add_header(resp, name, value)) /* never: nheaders < BD_RESP_HEADERS_MAX */
            break;
    }
    a = NULL;
    rc = BD_FORWARD_ANSWERED;
out:
    curl_slist_free_all(headers);
    if (a)
        free(a->body);
    free(a);
    return rc;
}

int bd_api_forward_get(const char *authorization, int64_t daemon_id, const char *base_url, const char *path,
                       int *status, json_t **out, bd_err *err)
{
    bd_http_req req = {.method = BD_HTTP_GET, .method_name = "GET", .path = path, .target = path,
                       .authorization = authorization};
    bd_http_resp resp = {0};
    int rc = bd_api_forward(&req, daemon_id, base_url, &resp, err);
    *out = NULL;
    if (rc == BD_FORWARD_ANSWERED) {
        *status = resp.status;
        *out = resp.text ? json_loadb(resp.text, resp.text_len, 0, NULL) : NULL;
    }
    bd_http_resp_clear(&resp);
    return rc;
}
