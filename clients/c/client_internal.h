/* client_internal.h: what the files of the C client share and the public
 * header does not show: the handle's fields, the error setter and the one
 * function that talks HTTP (client_transport.c). */
#ifndef BD_CLIENT_INTERNAL_H
#define BD_CLIENT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <curl/curl.h>

#include "banditd_client.h"

#define BDC_DEFAULT_RETRIES 5
#define BDC_DEFAULT_BACKOFF_MS 200L
#define BDC_DEFAULT_MAX_BACKOFF_MS 5000L
#define BDC_DEFAULT_TIMEOUT_MS 30000L
#define BDC_DEFAULT_MAX_RESPONSE ((int64_t)64 << 20)
#define BDC_DEFAULT_BUSY_WAIT_MS 120000L /* all the waits for one request's 429 answers */
#define BDC_BUSY_FIRST_MS 250.0          /* the first wait after a 429 without a longer Retry-After */
#define BDC_BUSY_MAX_MS 30000.0          /* no single wait after a 429 is longer, whatever Retry-After says */

struct bd_client {
    CURL *curl;           /* one easy handle: keeps the connection alive between calls */
    char *base;           /* scheme://host[:port][/prefix], no trailing slash */
    char *auth;           /* "Authorization: Bearer <token>", or NULL */
    int retries;          /* re-sends after a network error or 503 */
    long backoff_ms;      /* first wait before a re-send */
    long max_backoff_ms;  /* the wait doubles up to this */
    long timeout_ms;      /* per attempt */
    long busy_wait_ms;    /* total wait allowed for 429 answers, per request; 0: none */
    int64_t max_response; /* largest body accepted */
    uint64_t jitter;      /* xorshift state for the backoff's random factor */
};

/* Fills err (when non-NULL) and returns rc. field may be NULL. */
int bdc_err_set(bd_client_err *err, int rc, long status, const char *code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* A fresh Idempotency-Key: 32 lowercase hex digits (128 bits from getrandom
 * or /dev/urandom) and a NUL into key[33]. Returns 0 or BD_CLIENT_EIO. */
int bdc_idempotency_key(char key[33]);

/* Sends method path (base url prepended) with data[0..len) as a JSON body
 * (data NULL: no body), retrying as the header describes. With out non-NULL
 * a 2xx body is written to out as it arrives; otherwise, and for every error
 * answer, the body is collected into *body (new, NUL-terminated, free();
 * may be NULL when not wanted). *status gets the final HTTP status. Returns 0
 * on a 2xx answer, BD_CLIENT_EHTTP (err filled from the error body) on any
 * other status, or the network / size / I/O error. */
int bdc_send(bd_client *c, const char *method, const char *path, const char *data, size_t len, const char *key,
             FILE *out, long *status, char **body, size_t *body_len, bd_client_err *err);

#endif
