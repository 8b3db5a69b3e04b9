/* fuzz_request: whole HTTP requests (method, path, query string, headers,
 * body) through bd_api_route and bd_api_dispatch, as api/http_server.c sends
 * them, on an in-memory engine: every route, every handler, the engine and
 * the schedulers behind it.
 *
 * Input: up to MAX_REQUESTS requests separated by a line "%%", each
 *     METHOD SP TARGET LF
 *     Name: value LF          (Authorization, Content-Type, Idempotency-Key, If-None-Match)
 *     LF
 *     body
 * TARGET is a path with an optional ?query, percent-decoded as
 * libmicrohttpd does. "$S" and "$T" in it become the id of the last study
 * created and the last trial suggested by this input; in headers "$A", "$B"
 * and "$R" become the admin's, bob's and a revoked token. Without an
 * Authorization header the request is the admin's; a body without
 * Content-Type is sent as application/json; a POST /v1/studies body without
 * "if_exists" gets "if_exists": "create" (names are unique per owner and
 * inputs share the engine; seeds that set it fuzz the other modes). A
 * streamed answer (the CSV export) is read to its end. The method EXPIRE is not HTTP:
 * it expires every lease now (the reaper's work).
 *
 * The engine lives across inputs (opening one costs more than most
 * requests) and is reopened every REOPEN_INPUTS inputs, once inputs have
 * created REOPEN_STUDIES studies or REOPEN_TRIALS trials (so memory stays
 * bounded), or when an input revoked the admin's or bob's token. Ids are
 * relative ($S, $T), so a saved input replays on a fresh engine.
 *
 * BD_FUZZ_VERBOSE=1 prints each request's status (to check a seed);
 * BD_FUZZ_FRESH=1 opens and closes an engine around every input, so a saved
 * input replays exactly and a leak is charged to the input that made it.
 * (Fuzzing itself keeps the engine: libFuzzer then stops checking leaks
 * after every input, but LeakSanitizer still checks the whole run at exit.)
 *
 * Oracles: no 500 (the database is memory, so a 500 is a bug: a handler
 * without an answer, a scheduler proposing what the study forbids); every
 * answer is JSON (or /metrics text, or a compiled-in dashboard file, empty
 * under 304) that survives the server's serialization; an error answer has
 * the error shape. */
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "api/dispatch.h"
#include "api/metrics.h"
#include "api/router.h"
#include "fuzz_common.h"

#define MAX_REQUESTS 8
#define MAX_QUERY 16
#define REOPEN_INPUTS 2000
#define REOPEN_STUDIES 300
#define REOPEN_TRIALS 20000

static fuzz_engine fe;
static bd_api api;
static long inputs, studies, trials;
static int fresh;   /* BD_FUZZ_FRESH=1: a new engine for every input (to replay a saved input exactly) */
static int verbose; /* BD_FUZZ_VERBOSE=1: one line per request on stderr (checking seeds) */

typedef struct query {
    int n;
    char *key[MAX_QUERY];
    char *value[MAX_QUERY]; /* NULL for "?key" without '=' */
} query;

static const char *query_lookup(void *ctx, const char *key, int *present)
{
    const query *q = ctx;

    for (int i = 0; i < q->n; i++) {
        if (strcmp(q->key[i], key) == 0) {
            *present = 1;
            return q->value[i];
        }
    }
    *present = 0;
    return NULL;
}

static int hex(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = (char)(c | 0x20);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* New string: s[0..n) with %XX decoded; a decoded NUL ends it. */
static char *unescape(const char *s, size_t n)
{
    char *out = malloc(n + 1);
    size_t w = 0;

    FUZZ_CHECK(out != NULL, "out of memory");
    for (size_t r = 0; r < n; r++) {
        if (s[r] == '%' && r + 2 < n && hex(s[r + 1]) >= 0 && hex(s[r + 2]) >= 0) {
            out[w++] = (char)(hex(s[r + 1]) * 16 + hex(s[r + 2]));
            r += 2;
        } else {
            out[w++] = s[r];
        }
    }
    out[w] = '\0';
    return out;
}

static void query_parse(query *q, const char *s)
{
    q->n = 0;
    while (*s && q->n < MAX_QUERY) {
        size_t len = strcspn(s, "&");
        const char *eq = memchr(s, '=', len);
        if (len > 0) {
            q->key[q->n] = unescape(s, eq ? (size_t)(eq - s) : len);
            q->value[q->n] = eq ? unescape(eq + 1, len - (size_t)(eq - s) - 1) : NULL;
            q->n++;
        }
        s += len + (s[len] == '&');
    }
}

static void query_free(query *q)
{
    for (int i = 0; i < q->n; i++) {
        free(q->key[i]);
        free(q->value[i]);
    }
    q->n = 0;
}

/* The next line of [*p, end) without its LF (and CR); advances *p. */
static const char *next_line(const char **p, const char *end, size_t *len)
{
    const char *s = *p, *nl = memchr(s, '\n', (size_t)(end - s));
    const char *e = nl ? nl : end;

    *p = nl ? nl + 1 : end;
    *len = (size_t)(e - s);
    if (*len > 0 && s[*len - 1] == '\r')
        (*len)--;
    return s;
}

static void check_answer(const bd_http_req *req, const bd_http_resp *resp)
{
    static const int known[] = {200, 201, 301, 304, 400, 401, 403, 404, 405, 409, 413, 415};
    int ok = 0;

    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        ok |= resp->status == known[i];
    FUZZ_CHECK(ok, "%s %s answered %d: %s", req->method_name, req->path, resp->status, resp->err_message);
    if (resp->stream_read) { /* the CSV export: read it all, as the server would send it */
        static char buf[65536];
        long n;
        FUZZ_CHECK(resp->content_type && !resp->json && !resp->text, "%s %s: a stream and another body",
                   req->method_name, req->path);
        while ((n = resp->stream_read(resp->stream_ctx, buf, sizeof buf)) > 0)
            FUZZ_CHECK((size_t)n <= sizeof buf, "%s %s: stream overran its buffer", req->method_name, req->path);
        FUZZ_CHECK(n == 0, "%s %s: the stream failed", req->method_name, req->path);
        return;
    }
    if (resp->body) { /* a dashboard file, compiled in */
        FUZZ_CHECK(resp->content_type && !resp->json && !resp->text, "%s %s: a static body and another body",
                   req->method_name, req->path);
        FUZZ_CHECK(resp->status != 304 || resp->body_len == 0, "%s %s: 304 with a body", req->method_name, req->path);
        return;
    }
    if (!resp->json) {
        FUZZ_CHECK(resp->text && resp->content_type, "%s %s: no body", req->method_name, req->path);
        return;
    }
    fuzz_check_serialization(resp->json);
    if (resp->status >= 400) {
        json_t *e = json_object_get(resp->json, "error");
        FUZZ_CHECK(json_is_string(json_object_get(e, "code")) && json_is_string(json_object_get(e, "message")),
                   "%s %s: error answer without code and message", req->method_name, req->path);
    }
}

/* Notes the ids an answer created, for $S and $T of later requests. */
static void remember(const bd_http_req *req, const bd_http_resp *resp, long long *study, long long *trial)
{
    json_t *list;

    if (resp->status == 201 && req->route && strcmp(req->route->pattern, "/v1/studies") == 0) {
        *study = json_integer_value(json_object_get(resp->json, "id"));
        studies++;
    }
    list = json_object_get(resp->json, "trials");
    if (resp->status == 200 && req->method == BD_HTTP_POST && json_is_array(list) && json_array_size(list) > 0) {
        *trial = json_integer_value(json_object_get(json_array_get(list, json_array_size(list) - 1), "id"));
        trials += (long)json_array_size(list);
    }
}

/* Inputs share one engine, where a study name is unique per owner: a
 * POST /v1/studies whose body is an object without "if_exists" gets
 * "if_exists": "create" (today's seeds then create their study on every
 * replay). Returns the new body (free()), or NULL to send body as is. */
static char *create_always(const bd_http_req *req, const char *body, size_t len, size_t *new_len)
{
    json_t *j;
    char *out = NULL;
    if (req->method != BD_HTTP_POST || strcmp(req->path, "/v1/studies") != 0)
        return NULL;
    j = json_loadb(body, len, JSON_REJECT_DUPLICATES, NULL);
    if (json_is_object(j) && !json_object_get(j, "if_exists")) {
        json_object_set_new(j, "if_exists", json_string("create"));
        out = json_dumps(j, JSON_COMPACT);
        *new_len = out ? strlen(out) : 0;
    }
    json_decref(j);
    return out;
}

static void one_request(const char *p, const char *end, long long *study, long long *trial)
{
    bd_http_req req;
    bd_http_resp resp;
    query q = {0};
    size_t len;
    const char *line = next_line(&p, end, &len);
    const char *sp = memchr(line, ' ', len);
    char *method = fuzz_expand(NULL, line, sp ? (size_t)(sp - line) : len, 0, 0);
    char *target = sp ? fuzz_expand(&fe, sp + 1, len - (size_t)(sp + 1 - line), *study, *trial) : strdup("/");
    char *authorization = NULL, *content_type = NULL, *idem_key = NULL, *if_none_match = NULL, *path, *qmark,
         *rewritten = NULL;

    FUZZ_CHECK(target != NULL, "out of memory");
    while (p < end) {
        const char *h = next_line(&p, end, &len), *colon = memchr(h, ':', len);
        char **slot = NULL;
        if (len == 0)
            break;
        if (!colon)
            continue;
        if ((size_t)(colon - h) == 13 && strncasecmp(h, "Authorization", 13) == 0)
            slot = &authorization;
        else if ((size_t)(colon - h) == 12 && strncasecmp(h, "Content-Type", 12) == 0)
            slot = &content_type;
        else if ((size_t)(colon - h) == 15 && strncasecmp(h, "Idempotency-Key", 15) == 0)
            slot = &idem_key;
        else if ((size_t)(colon - h) == 13 && strncasecmp(h, "If-None-Match", 13) == 0)
            slot = &if_none_match;
        if (!slot || *slot)
            continue;
        colon++;
        while (colon < h + len && (*colon == ' ' || *colon == '\t'))
            colon++;
        *slot = fuzz_expand(&fe, colon, (size_t)(h + len - colon), *study, *trial);
    }

    if (strcmp(method, "EXPIRE") == 0) {
        bd_err err;
        int n = 0;
        int rc = bd_engine_expire_leases(fe.engine, bd_now() + 1e9, &n, &err);
        FUZZ_CHECK(rc == 0, "expiring leases: %s", err.message);
        goto out;
    }

    if (!authorization) {
        authorization = malloc(sizeof fe.admin_token + 8);
        FUZZ_CHECK(authorization != NULL, "out of memory");
        snprintf(authorization, sizeof fe.admin_token + 8, "Bearer %s", fe.admin_token);
    }
    if (!content_type && p < end)
        content_type = strdup("application/json");
    qmark = strchr(target, '?');
    path = unescape(target, qmark ? (size_t)(qmark - target) : strlen(target));
    if (qmark)
        query_parse(&q, qmark + 1);

    memset(&req, 0, sizeof req);
    memset(&resp, 0, sizeof resp);
    req.method = bd_http_method_parse(method);
    req.method_name = method;
    req.path = path;
    req.authorization = authorization;
    req.content_type = content_type;
    req.idem_key = idem_key;
    req.if_none_match = if_none_match;
    req.body = p;
    req.body_len = (size_t)(end - p);
    if ((rewritten = create_always(&req, p, req.body_len, &req.body_len)))
        req.body = rewritten;
    req.query = qmark ? query_lookup : NULL;
    req.query_ctx = &q;
    bd_api_route(&req);
    bd_api_dispatch(&api, &req, &resp);
    bd_metrics_observe(api.metrics, req.pattern_id, req.method, resp.status, 0.001);
    if (verbose)
        fprintf(stderr, "%s %s -> %d %s\n", method, target, resp.status, resp.err_message);
    check_answer(&req, &resp);
    remember(&req, &resp, study, trial);
    bd_http_resp_clear(&resp);
    query_free(&q);
    free(path);
    free(rewritten);
out:
    free(method);
    free(target);
    free(authorization);
    free(content_type);
    free(idem_key);
    free(if_none_match);
}

/* An input may revoke the admin's or bob's token (DELETE /v1/tokens/1): the
 * next input then gets a fresh engine rather than a run of 401s. */
static int tokens_work(void)
{
    bd_caller c;
    return bd_engine_authenticate(fe.engine, fe.admin_token, &c, NULL) == 0 &&
           bd_engine_authenticate(fe.engine, fe.bob_token, &c, NULL) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data, *end = p + size;
    long long study = 0, trial = 0;

    if (fe.engine &&
        (inputs >= REOPEN_INPUTS || studies >= REOPEN_STUDIES || trials >= REOPEN_TRIALS || !tokens_work())) {
        fuzz_engine_close(&fe);
        inputs = studies = trials = 0;
    }
    if (!fe.engine) {
        size_t n;
        fuzz_engine_open(&fe);
        api.engine = fe.engine;
        verbose = getenv("BD_FUZZ_VERBOSE") != NULL;
        fresh = getenv("BD_FUZZ_FRESH") != NULL;
        if (!api.metrics)
            api.metrics = bd_metrics_new(bd_routes(&n), n);
    }
    inputs++;
    for (int i = 0; i < MAX_REQUESTS && p < end; i++) {
        const char *sep = NULL;
        for (const char *s = p; s + 4 <= end; s++) {
            if (memcmp(s, "\n%%\n", 4) == 0) {
                sep = s;
                break;
            }
        }
        one_request(p, sep ? sep : end, &study, &trial);
        p = sep ? sep + 4 : end;
    }
    if (fresh) {
        fuzz_engine_close(&fe);
        bd_metrics_free(api.metrics);
        api.metrics = NULL;
    }
    return 0;
}
