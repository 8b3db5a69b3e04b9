/* Logging: line format, level filtering, one write per line, and control
 * characters neutralized so a request path cannot forge log lines. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "server/log.h"

static size_t fmt(char *buf, size_t cap, double when, bd_log_level level, const char *f, ...)
{
    va_list ap;
    size_t n;

    va_start(ap, f);
    n = bd_log_format(buf, cap, when, level, f, ap);
    va_end(ap);
    return n;
}

Test(log, line_format_has_utc_time_level_and_newline)
{
    char buf[256];
    size_t n = fmt(buf, sizeof buf, 1700000000.25, BD_LOG_INFO, "GET %s %d", "/healthz", 200);

    cr_assert_str_eq(buf, "2023-11-14T22:13:20.250Z info  GET /healthz 200\n");
    cr_assert_eq(n, strlen(buf));
}

Test(log, control_characters_are_replaced)
{
    char buf[256];

    fmt(buf, sizeof buf, 0, BD_LOG_WARN, "GET /a\nfake line\r\x1b[31m");
    cr_assert_str_eq(buf, "1970-01-01T00:00:00.000Z warn  GET /a?fake line??[31m\n");
}

Test(log, trailing_newlines_are_not_doubled)
{
    char buf[256];

    fmt(buf, sizeof buf, 0, BD_LOG_ERROR, "from a library\n");
    cr_assert_str_eq(buf, "1970-01-01T00:00:00.000Z error from a library\n");
}

Test(log, long_lines_are_cut_but_end_in_newline)
{
    char buf[80], big[500];
    size_t n;

    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    n = fmt(buf, sizeof buf, 0, BD_LOG_INFO, "%s", big);
    cr_assert_eq(n, sizeof buf - 1);
    cr_assert_eq(buf[n - 1], '\n');
    cr_assert_eq(buf[n], '\0');
}

Test(log, levels_filter_and_each_line_is_one_write)
{
    int fds[2];
    char out[1024];
    ssize_t got;

    cr_assert_eq(pipe(fds), 0);
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    bd_log_set_fd(fds[1]);
    bd_log_set_level(BD_LOG_WARN);
    cr_assert_not(bd_log_enabled(BD_LOG_INFO));
    cr_assert(bd_log_enabled(BD_LOG_ERROR));
    bd_log(BD_LOG_INFO, "dropped");
    bd_log(BD_LOG_DEBUG, "dropped too");
    bd_log(BD_LOG_ERROR, "kept %d", 1);
    bd_log(BD_LOG_WARN, "kept %d", 2);
    got = read(fds[0], out, sizeof out - 1);
    bd_log_set_fd(2);
    bd_log_set_level(BD_LOG_INFO);
    cr_assert_gt(got, 0);
    out[got] = '\0';
    cr_assert_null(strstr(out, "dropped"));
    cr_assert(strstr(out, " error kept 1\n"), "%s", out);
    cr_assert(strstr(out, " warn  kept 2\n"), "%s", out);
    close(fds[0]);
    close(fds[1]);
}

Test(log, level_names_parse)
{
    bd_log_level l;

    cr_assert_eq(bd_log_level_parse("debug", &l), 0);
    cr_assert_eq(l, BD_LOG_DEBUG);
    cr_assert_eq(bd_log_level_parse("error", &l), 0);
    cr_assert_eq(l, BD_LOG_ERROR);
    cr_assert_eq(bd_log_level_parse("warning", &l), BD_EINVAL);
    cr_assert_str_eq(bd_log_level_name(BD_LOG_WARN), "warn");
}
