/* common.c: error records, aborting allocators and clocks (see common.h). */
#include "common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int bd_err_set(bd_err *err, int code, const char *field, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        err->code = code;
        err->retry_after = 0;
        snprintf(err->field, sizeof err->field, "%s", field ? field : "");
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return code;
}

void bd_err_clear(bd_err *err)
{
    if (err)
        memset(err, 0, sizeof *err);
}

const char *bd_err_name(int code)
{
    switch (code) {
    case BD_OK: return "ok";
    case BD_EINVAL: return "invalid_argument";
    case BD_ENOTFOUND: return "not_found";
    case BD_ECONFLICT: return "conflict";
    case BD_EAUTH: return "unauthenticated";
    case BD_EFORBIDDEN: return "forbidden";
    case BD_ETOOLARGE: return "payload_too_large";
    case BD_EMEDIA: return "unsupported_media_type";
    case BD_EMETHOD: return "method_not_allowed";
    case BD_ESTORAGE: return "storage_error";
    case BD_EUNAVAILABLE: return "unavailable";
    case BD_EBUSY: return "busy";
    case BD_EMOVED: return "moved";
    case BD_EWOULDBLOCK: return "would_block";
    case BD_EFORWARD: return "misdirected";
    case BD_EQUOTA: return "quota_exceeded";
    case BD_EURI: return "uri_too_long";
    case BD_EHEADERS: return "header_fields_too_large";
    case BD_EVERSION: return "http_version_not_supported";
    case BD_ENOTIMPL: return "not_implemented";
    default: return "internal";
    }
}

static void out_of_memory(size_t n)
{
    fprintf(stderr, "banditd: out of memory allocating %zu bytes\n", n);
    abort();
}

void *bd_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        out_of_memory(n);
    return p;
}

void *bd_xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        out_of_memory(count * size);
    return p;
}

void *bd_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        out_of_memory(n);
    return q;
}

char *bd_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(bd_xmalloc(n), s, n);
}

double bd_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

double bd_monotonic(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}
