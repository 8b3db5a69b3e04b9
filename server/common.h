/* common.h: error codes, the user-facing error record, allocation and clocks
 * shared by every layer of banditd.
 *
 * Convention: functions return int, 0 on success and a negative BD_E* code on
 * failure; the optional bd_err * receives the text a user will read. Out of
 * memory is not an error code: bd_xmalloc and friends abort, because nothing
 * useful can be answered without memory. */
#ifndef BD_COMMON_H
#define BD_COMMON_H

#include <stddef.h>
#include <stdint.h>

#define BD_MUST_CHECK __attribute__((warn_unused_result))
#define BD_PRINTF(f, a) __attribute__((format(printf, f, a)))

enum {
    BD_OK = 0,
    BD_EINVAL = -1,     /* the request failed validation (400); err->field names what */
    BD_ENOTFOUND = -2,  /* no such object, or not the caller's (404) */
    BD_ECONFLICT = -3,  /* the object's state forbids it, e.g. a measurement on a completed trial (409) */
    BD_EAUTH = -4,      /* missing or bad credentials (401) */
    BD_EFORBIDDEN = -5, /* authenticated but not allowed, e.g. only the admin may create users (403) */
    BD_ETOOLARGE = -6,  /* body over the size limit (413) */
    BD_EMEDIA = -7,     /* body is not application/json (415) */
    BD_EMETHOD = -8,    /* route exists, method does not (405) */
    BD_ESTORAGE = -9,   /* the database failed; nothing was acknowledged (500) */
    BD_EINTERNAL = -10, /* a bug or an unexpected library failure (500) */
    BD_EUNAVAILABLE = -11, /* shutting down (503) */
    BD_EBUSY = -12,       /* the study or the user has too much pending (429); err->retry_after says when to retry */
    BD_EQUOTA = -13,      /* a per-user quota would be passed (403); err->field names the limit */
    BD_EURI = -14,        /* the request line is too long (414); only the HTTP layer finds this */
    BD_EHEADERS = -15,    /* the request headers are too large (431) */
    BD_EVERSION = -16,    /* an HTTP version other than 1.0 and 1.1 (505) */
    BD_ENOTIMPL = -17,    /* a transfer coding other than chunked (501, RFC 9112 section 6.1) */
    BD_EMOVED = -18,      /* cluster mode: another daemon took the study meanwhile; nothing was written (503) */
    BD_EWOULDBLOCK = -19, /* a request asked to run on the HTTP polling thread (bd_request.inline_only) could
                             wait or take long there; nothing was done: it runs on a handler thread (never sent) */
    BD_EFORWARD = -20     /* cluster mode: a live peer holds the study; nothing was done: the HTTP layer sends
                             the request there (api/forward.h); 421 "misdirected" to a peer that forwarded it */
};

/* What went wrong, for the user. code is a BD_E* value; field is the JSON path
 * of the offending input ("parameters[2].low"), empty when not about one field. */
typedef struct bd_err {
    int code;
    char field[128];
    char message[256];
    int retry_after; /* seconds, for BD_EBUSY and BD_EMOVED (the Retry-After header); 0 otherwise */
} bd_err;

/* Fills err (when non-NULL) and returns code, so callers can write
 * `return bd_err_set(err, BD_EINVAL, "objective.goal", "must be ...");`.
 * field may be NULL. */
int bd_err_set(bd_err *err, int code, const char *field, const char *fmt, ...)
    BD_PRINTF(4, 5);
/* Clears err (when non-NULL). */
void bd_err_clear(bd_err *err);
/* Short stable name of a code: "invalid_argument", "not_found", ... (static string). */
const char *bd_err_name(int code);

/* Allocation that aborts on failure. Returned memory is new (caller frees). */
void *bd_xmalloc(size_t n);
void *bd_xcalloc(size_t count, size_t size);
void *bd_xrealloc(void *p, size_t n);
char *bd_xstrdup(const char *s);
/* What a malloc'd block of n bytes costs, on the safe side (glibc's 16-byte
 * header and rounding up), for the schedulers' held_bytes (sched.h). */
#define BD_HEAP_BLOCK(n) ((n) + 32)

/* Seconds since the Unix epoch (wall clock, persisted in leases). */
double bd_now(void);
/* Seconds from an arbitrary origin that never goes backwards (durations). */
double bd_monotonic(void);

#endif
