/* banditd_client.h: a C11 client for the banditd HTTP API (api/openapi.yaml),
 * on libcurl and jansson, for workers and tools written in C.
 *
 *     bd_client *c;
 *     bd_client_err err;
 *     if (bd_client_new("http://127.0.0.1:8080", token, &c, &err))
 *         die(err.message);
 *     json_t *got;
 *     if (bd_client_suggest(c, study_id, "w1", 1, &got, &err) == 0) { ...; json_decref(got); }
 *     bd_client_free(c);
 *
 * Conventions (as in the daemon): every function returns 0 on success or a
 * negative BD_CLIENT_E* code, and fills the optional bd_client_err with the
 * HTTP status and the server's error code, message and field. JSON results
 * follow jansson's reference rules: a `json_t **` out-parameter receives a
 * NEW reference (the caller json_decref()s it) and is set to NULL on failure;
 * a `const json_t *` argument is borrowed (not stolen, not kept).
 *
 * Retries: every POST and DELETE carries an Idempotency-Key (128 random bits
 * from getrandom(2), in hex, fresh per call). A request that fails on the wire
 * (connection refused or reset, timeout, nothing received) or answers 503 is
 * sent again with the same key, up to `retries` times (default 5) with
 * exponential backoff (default 200 ms doubling to 5 s, with jitter), so the
 * daemon acts once: a retried suggest returns the same trials, a retried
 * measurement is recorded once. GETs are simply repeated.
 *
 * 429 (busy: the study's queue is full, or the user has too many costly
 * requests at once) means the daemon did not act: the request is sent again,
 * same key, after max(Retry-After, backoff) (backoff 250 ms doubling, up to
 * 10% jitter, each wait at most 30 s) while the waits fit in busy_wait_ms
 * (default 120 s, see bd_client_set_busy_wait); then the 429 is returned as
 * BD_CLIENT_EHTTP (status 429, code "busy"). These waits do not count
 * against `retries`. Other error answers, 403 "quota_exceeded" (field
 * "limits.studies", ...) included, are returned at once.
 *
 * The server is not trusted either: an answer larger than max_response_bytes
 * (default 64 MiB) is refused (BD_CLIENT_ETOOBIG) without being kept.
 *
 * Threads: a bd_client is NOT thread-safe (it owns one libcurl easy handle and
 * its kept-alive connection). Use one handle per thread; handles share
 * nothing and may live in different threads at the same time. libcurl's
 * global initialisation is done once, on the first bd_client_new. */
#ifndef BANDITD_CLIENT_H
#define BANDITD_CLIENT_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define BD_CLIENT_MUST_CHECK __attribute__((warn_unused_result))
#define BD_CLIENT_API __attribute__((visibility("default"))) /* the library hides everything else */
#else
#define BD_CLIENT_MUST_CHECK
#define BD_CLIENT_API
#endif

enum {
    BD_CLIENT_OK = 0,
    BD_CLIENT_EINVAL = -1,  /* a bad argument, refused before sending (err.field names it) */
    BD_CLIENT_EHTTP = -2,   /* the server answered an error status: err.status, err.code, err.field */
    BD_CLIENT_ENET = -3,    /* no answer after every retry (refused, reset, timeout): err.message */
    BD_CLIENT_EPROTO = -4,  /* the answer is not what the API promises (not JSON, a field missing) */
    BD_CLIENT_ETOOBIG = -5, /* the answer is over max_response_bytes */
    BD_CLIENT_EIO = -6,     /* writing to the caller's FILE failed (export) */
    BD_CLIENT_ENOMEM = -7   /* out of memory */
};

/* What went wrong. status is the HTTP status (0 when no answer arrived);
 * code is the server's error code ("not_found", "invalid_argument", ...) or,
 * for errors found by the client, "client_invalid", "network",
 * "bad_response", "too_big", "io", "out_of_memory"; field is the JSON path of
 * the offending input ("parameters[0].high") or "" when not about one field. */
typedef struct bd_client_err {
    int rc;            /* the BD_CLIENT_E* code returned with it */
    long status;       /* HTTP status, 0 without an answer */
    char code[64];     /* stable error name */
    char message[512]; /* for a person */
    char field[256];   /* "" when the error names no field */
} bd_client_err;

typedef struct bd_client bd_client;

/* Creates a client for base url ("http://host:port", optionally with a path
 * prefix; http and https only) and bearer token (NULL: send no
 * Authorization header, e.g. for /healthz). Both strings are copied. *out is
 * new (bd_client_free). */
BD_CLIENT_API BD_CLIENT_MUST_CHECK int bd_client_new(const char *url, const char *token, bd_client **out,
                                                     bd_client_err *err);
/* Closes the connection and frees the handle; NULL is allowed. */
BD_CLIENT_API void bd_client_free(bd_client *c);

/* Retries after a network error or 503: at most `retries` re-sends (0..100),
 * waiting backoff_ms, doubling up to max_backoff_ms (each 0..600000), times a
 * random factor in [0.5, 1.5). The first re-send after a broken kept-alive
 * connection does not wait. */
BD_CLIENT_API BD_CLIENT_MUST_CHECK int bd_client_set_retries(bd_client *c, int retries, long backoff_ms,
                                                             long max_backoff_ms);
/* How long, in all, one request may wait for a busy daemon (429 answers)
 * before the 429 is returned: 0..86400000 ms (default 120000; 0 returns a
 * 429 at once). */
BD_CLIENT_API BD_CLIENT_MUST_CHECK int bd_client_set_busy_wait(bd_client *c, long max_total_ms);
/* Per-attempt timeout (connect + transfer) in ms, 1..86400000 (default 30000). */
BD_CLIENT_API BD_CLIENT_MUST_CHECK int bd_client_set_timeout(bd_client *c, long timeout_ms);
/* The largest answer body accepted, 1 KiB..1 TiB (default 64 MiB); also bounds
 * what bd_client_export_csv writes. */
BD_CLIENT_API BD_CLIENT_MUST_CHECK int bd_client_set_max_response(bd_client *c, int64_t max_bytes);

/* Any request. method: "GET", "POST", "DELETE", ...; path: "/v1/..."
 * (with its query string, already escaped: see bd_client_escape); body:
 * borrowed, NULL for none. idempotency_key: NULL for a fresh one on POST and
 * DELETE, else sent as given (printable ASCII, at most 255 bytes).
 * On a 2xx answer returns 0, *status (may be NULL) gets the status and
 * *answer (may be NULL) a new reference to the decoded JSON (json null for
 * an empty body). On an error status returns BD_CLIENT_EHTTP with err filled
 * from the server's {"error": {...}} body and *answer NULL. */
BD_CLIENT_API BD_CLIENT_MUST_CHECK int bd_client_request(bd_client *c, const char *method, const char *path,
                                                         const json_t *body, const char *idempotency_key, long *status,
                                                         json_t **answer, bd_client_err *err);

/* Percent-encodes s for a query value (RFC 3986 unreserved kept). Returns a
 * new string (free()), NULL when out of memory. */
BD_CLIENT_API char *bd_client_escape(const char *s);

/* ---- studies ---- */

/* POST /v1/studies with definition (borrowed; the StudyCreate object of
 * api/openapi.yaml, "if_exists" included when wanted). *study: new. */
BD_CLIENT_API BD_CLIENT_MUST_CHECK int bd_client_create_study(bd_client *c, const json_t *definition, json_t **study,
                                                              bd_client_err *err);
/* GET /v1/studies/{id}: counts, incumbent, scheduler state. *study: new. */
BD_CLIENT_API BD_CLIENT_MUST_CHECK int bd_client_get_study(bd_client *c, int64_t study_id, json_t **study,
                                                           bd_client_err *err);
/* GET /v1/studies, one page: after (0: from the start), limit (0: the
 * server's default), name (NULL: any) are sent only when set. *page: new,
 * {"studies": [...], "next_after": id|null}; pass next_after back as after
 * until it is null. */
BD_CLIENT_API BD_CLIENT_MUST_CHECK int bd_client_list_studies(bd_client *c, int64_t after, int limit, const char *name,
                                                              json_t **page, bd_client_err *err);
/* DELETE /v1/studies/{id}: the study and its trials. */
BD_CLIENT_API BD_CLIENT_MUST_CHECK int bd_client_delete_study(bd_client *c, int64_t study_id, bd_client_err *err);

/* ---- trials ---- */

/* POST /v1/studies/{id}/suggest. worker: NULL for none; count: 0 for the
 * server's default (1), else 1..100. *answer: new, {"trials": [...]} plus
 * "retry_after_ms" (nothing to hand out now) or "done": true. */
BD_CLIENT_API BD_CLIENT_MUST_CHECK int bd_client_suggest(bd_client *c, int64_t study_id, const char *worker, int count,
                                                         json_t **answer, bd_client_err *err);
/* POST /v1/trials/{id}/measurements {"step", "value", "elapsed_seconds"}:
 * an intermediate value. elapsed_seconds < 0 leaves it out. *stop (may be
 * NULL) is 1 when the scheduler answers "stop" (the trial is then over:
 * do not complete it), else 0. Non-finite numbers are refused (EINVAL). */
BD_CLIENT_API BD_CLIENT_MUST_CHECK int bd_client_report(bd_client *c, int64_t trial_id, double step, double value,
                                                        double elapsed_seconds, int *stop, bd_client_err *err);

/* How a trial ended, for bd_client_complete_ex. */
typedef enum {
    BD_CLIENT_DONE_VALUE = 0,    /* {"value": value} */
    BD_CLIENT_DONE_DIVERGED = 1, /* {"value": null, "reason": reason or "diverged"}: no usable value */
    BD_CLIENT_DONE_TIMEOUT = 2   /* {"status": "timeout"}: the run hit its cap (runtime schedulers) */
} bd_client_done_kind;

typedef struct bd_client_completion {
    bd_client_done_kind kind;
    double value;           /* DONE_VALUE: the final objective value (finite) */
    double runtime;         /* < 0: left out; else the measured runtime (e.g. of a TIMEOUT) */
    double elapsed_seconds; /* < 0: left out; worker seconds spent */
    const char *reason;     /* NULL: left out; borrowed */
} bd_client_completion;

/* POST /v1/trials/{id}/complete {"value": value}. */
BD_CLIENT_API BD_CLIENT_MUST_CHECK int bd_client_complete(bd_client *c, int64_t trial_id, double value,
                                                          bd_client_err *err);
/* POST /v1/trials/{id}/complete with any body form of the contract: a value,
 * diverged or timeout. *trial (may be NULL): new, the completed trial. */
BD_CLIENT_API BD_CLIENT_MUST_CHECK int bd_client_complete_ex(bd_client *c, int64_t trial_id,
                                                             const bd_client_completion *how, json_t **trial,
                                                             bd_client_err *err);
/* POST /v1/trials/{id}/fail {"reason"} (reason NULL: none): give a trial up. */
BD_CLIENT_API BD_CLIENT_MUST_CHECK int bd_client_fail(bd_client *c, int64_t trial_id, const char *reason,
                                                      bd_client_err *err);
/* POST /v1/trials/{id}/heartbeat: renews the lease; *lease_expires_at (may be
 * NULL) gets its new end (Unix seconds). */
BD_CLIENT_API BD_CLIENT_MUST_CHECK int bd_client_heartbeat(bd_client *c, int64_t trial_id, double *lease_expires_at,
                                                           bd_client_err *err);
/* GET /v1/trials/{id}: the trial with its "measurements". *trial: new. */
BD_CLIENT_API BD_CLIENT_MUST_CHECK int bd_client_get_trial(bd_client *c, int64_t trial_id, json_t **trial,
                                                           bd_client_err *err);

/* Filters of bd_client_list_trials; a zeroed struct (or NULL) means none. */
typedef struct bd_client_trial_query {
    const char *state;        /* NULL, or running, completed, stopped, failed, expired */
    int has_instance;         /* 1: only trials on instance `instance` */
    int64_t instance;         /* the instance index (>= 0), read only with has_instance */
    int64_t after;            /* 0: from the start; else the previous page's next_after */
    int limit;                /* 0: the server's default (100); else 1..1000 */
    int include_measurements; /* 1: each trial carries its "measurements" */
    int order_best;           /* 1: completed trials best first (top `limit`, next_after null) */
} bd_client_trial_query;

/* GET /v1/studies/{id}/trials, one page. *page: new, {"trials": [...],
 * "next_after": id|null}. */
BD_CLIENT_API BD_CLIENT_MUST_CHECK int bd_client_list_trials(bd_client *c, int64_t study_id,
                                                             const bd_client_trial_query *q, json_t **page,
                                                             bd_client_err *err);

/* GET /v1/studies/{id}/trials.csv: the study's trials as CSV, streamed to
 * out as it arrives (at most max_response_bytes). Nothing is written unless
 * the answer is 2xx; a retry happens only while nothing was written. */
BD_CLIENT_API BD_CLIENT_MUST_CHECK int bd_client_export_csv(bd_client *c, int64_t study_id, FILE *out,
                                                            bd_client_err *err);

#ifdef __cplusplus
}
#endif

#endif
