/* log.h: leveled logging to stderr, one line per call.
 *
 * A line is "<UTC time> <level> <message>\n", built in a stack buffer and
 * handed to the kernel in a single write(), so lines from concurrent threads
 * never interleave (writes below PIPE_BUF bytes are atomic on pipes, and
 * O_APPEND files and terminals do not split them in practice). Control
 * characters in the message are replaced by '?', so a client-chosen path
 * cannot forge log lines. Lines longer than BD_LOG_LINE_MAX are cut. */
#ifndef BD_LOG_H
#define BD_LOG_H

#include <stdarg.h>
#include <stddef.h>

#include "common.h"

#define BD_LOG_LINE_MAX 2048

typedef enum bd_log_level { BD_LOG_DEBUG = 0, BD_LOG_INFO = 1, BD_LOG_WARN = 2, BD_LOG_ERROR = 3 } bd_log_level;

/* "debug", "info", "warn" or "error" -> *out. BD_EINVAL for anything else. */
int bd_log_level_parse(const char *name, bd_log_level *out) BD_MUST_CHECK;
/* Static string: "debug", "info", "warn", "error". */
const char *bd_log_level_name(bd_log_level level);

/* Lines below level are dropped (default: info). Thread-safe. */
void bd_log_set_level(bd_log_level level);
/* Whether a line at level would be written: check it before costly formatting. */
int bd_log_enabled(bd_log_level level);
/* Where lines go (default 2, stderr). For tests. */
void bd_log_set_fd(int fd);

void bd_log(bd_log_level level, const char *fmt, ...) BD_PRINTF(2, 3);
void bd_logv(bd_log_level level, const char *fmt, va_list ap);

/* Formats one line as bd_log would write it, time given in seconds since the
 * epoch, into buf (cap >= 64). Returns its length, newline included. */
size_t bd_log_format(char *buf, size_t cap, double when, bd_log_level level, const char *fmt, va_list ap);

#endif
