/* log.c: leveled, thread-safe, one-write-per-line logging (see log.h). */
#include "log.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static atomic_int min_level = BD_LOG_INFO;
static atomic_int log_fd = 2;

static const char *const level_names[] = {"debug", "info", "warn", "error"};

int bd_log_level_parse(const char *name, bd_log_level *out)
{
    for (int i = 0; i < 4; i++) {
        if (strcmp(name, level_names[i]) == 0) {
            *out = (bd_log_level)i;
            return 0;
        }
    }
    return BD_EINVAL;
}

const char *bd_log_level_name(bd_log_level level)
{
    return (unsigned)level < 4 ? level_names[level] : "?";
}

void bd_log_set_level(bd_log_level level)
{
    atomic_store_explicit(&min_level, (int)level, memory_order_relaxed);
}

int bd_log_enabled(bd_log_level level)
{
    return (int)level >= atomic_load_explicit(&min_level, memory_order_relaxed);
}

void bd_log_set_fd(int fd)
{
    atomic_store_explicit(&log_fd, fd, memory_order_relaxed);
}

size_t bd_log_format(char *buf, size_t cap, double when, bd_log_level level, const char *fmt, va_list ap)
{
    time_t secs = (time_t)when;
    int millis = (int)((when - (double)secs) * 1000.0);
    struct tm tm;
    size_t n, body;
    int w;

    if (millis < 0 || millis > 999)
        millis = 0;
    gmtime_r(&secs, &tm);
    n = strftime(buf, cap, "%Y-%m-%dT%H:%M:%S", &tm);
    n += (size_t)snprintf(buf + n, cap - n, ".%03dZ %-5s ", millis, bd_log_level_name(level));
    body = n;
    w = vsnprintf(buf + n, cap - n, fmt, ap);
    if (w < 0)
        w = 0;
    n += (size_t)w;
    if (n > cap - 2)
        n = cap - 2;
    while (n > body && buf[n - 1] == '\n')
        n--;
    for (size_t i = body; i < n; i++) {
        unsigned char c = (unsigned char)buf[i];
        if (c < 0x20 || c == 0x7f)
            buf[i] = '?';
    }
    buf[n++] = '\n';
    buf[n] = '\0';
    return n;
}

void bd_logv(bd_log_level level, const char *fmt, va_list ap)
{
    char line[BD_LOG_LINE_MAX];
    size_t len, off = 0;
    int fd;

    if (!bd_log_enabled(level))
        return;
    len = bd_log_format(line, sizeof line, bd_now(), level, fmt, ap);
    fd = atomic_load_explicit(&log_fd, memory_order_relaxed);
    while (off < len) {
        ssize_t w = write(fd, line + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        off += (size_t)w;
    }
}

void bd_log(bd_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    bd_logv(level, fmt, ap);
    va_end(ap);
}
