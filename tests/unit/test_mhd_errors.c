/* api/mhd_errors.c's mapping of libmicrohttpd's own error answers (status
 * and HTML body) to the JSON error: code, field, message, and whether the
 * answer bypasses libmicrohttpd's queue. The bodies are libmicrohttpd
 * 0.9.75's, as its logger line hands them over; the answers on the wire are
 * checked by tests/integration/test_http.py. */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <string.h>

#include "api/errors.h"
#include "api/mhd_errors.h"

static const bd_mhd_conn_facts facts = {0, 1048576, 32768};
static const bd_mhd_conn_facts after_line = {1, 1048576, 32768};

static const struct {
    unsigned status;
    const char *body;
    const bd_mhd_conn_facts *facts;
    int code;
    const char *field;
    int direct;
    const char *in_message; /* a part of the message */
} cases[] = {
    {400,
     "<html><head><title>Request malformed</title></head><body>Your HTTP request has wrong value for "
     "<b>Content-Length</b> header.</body></html>",
     &after_line, BD_EINVAL, "headers.Content-Length", 1, "decimal"},
    {413,
     "<html><head><title>Request content too large</title></head><body>Your HTTP request has too large value for "
     "<b>Content-Length</b> header.</body></html>",
     &after_line, BD_ETOOLARGE, "headers.Content-Length", 1, "1048576"},
    {400,
     "<html><head><title>&quot;Host:&quot; header required</title></head><body>In HTTP 1.1, requests must "
     "include a &quot;Host:&quot; header, and your HTTP 1.1 request lacked such a header.</body></html>",
     &after_line, BD_EINVAL, "headers.Host", 1, "Host"},
    {400,
     "<html><head><title>Request malformed</title></head><body>Your HTTP chunked encoding was syntactically "
     "incorrect.</body></html>",
     &after_line, BD_EINVAL, "body", 0, "chunked"},
    {413,
     "<html><head><title>Request content too large</title></head><body>The chunk size used in your HTTP chunked "
     "encoded request is too large.</body></html>",
     &after_line, BD_ETOOLARGE, "body", 0, "1048576"},
    {505,
     "<html><head><title>Requested HTTP version is not supported</title></head><body>Requested HTTP version is "
     "too old and not supported.</body></html>",
     &facts, BD_EVERSION, "version", 0, "HTTP/1.1"},
    {505,
     "<html><head><title>Requested HTTP version is not supported</title></head><body>Requested HTTP version is "
     "not supported.</body></html>",
     &facts, BD_EVERSION, "version", 0, "HTTP/1.1"},
    {414,
     "<html><head><title>Request too big</title></head><body>Your HTTP header was too big for the memory "
     "constraints of this webserver.</body></html>",
     &facts, BD_EURI, "path", 0, "32768"},
    {431,
     "<html><head><title>Request too big</title></head><body>Your HTTP header was too big for the memory "
     "constraints of this webserver.</body></html>",
     &after_line, BD_EHEADERS, "headers", 0, "32768"},
    {400,
     "<html><head><title>Request malformed</title></head><body>Your HTTP request was syntactically "
     "incorrect.</body></html>",
     &facts, BD_EINVAL, "request_line", 0, "request line"},
    {400,
     "<html><head><title>Request malformed</title></head><body>Your HTTP request was syntactically "
     "incorrect.</body></html>",
     &after_line, BD_EINVAL, "headers", 0, "header line"},
    /* no body (a libmicrohttpd built without messages, or a line not seen): by status */
    {431, NULL, &after_line, BD_EHEADERS, "headers", 0, "32768"},
    {414, NULL, &facts, BD_EURI, "path", 0, "32768"},
    {505, NULL, &facts, BD_EVERSION, "version", 0, "HTTP"},
    {400, NULL, &facts, BD_EINVAL, "request_line", 0, "request line"},
    {418, NULL, &facts, BD_EINVAL, NULL, 0, "418"},
    {500, NULL, &after_line, BD_EINTERNAL, NULL, 0, "500"},
};

Test(mhd_errors, each_libmicrohttpd_answer_maps_to_its_error)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bd_err err;
        int direct = -1;

        bd_mhd_error_describe(cases[i].status, cases[i].body, cases[i].facts, &err, &direct);
        cr_expect_eq(err.code, cases[i].code, "case %zu: code %d", i, err.code);
        cr_expect_str_eq(err.field, cases[i].field ? cases[i].field : "", "case %zu", i);
        cr_expect_eq(direct, cases[i].direct, "case %zu", i);
        cr_expect(strstr(err.message, cases[i].in_message) != NULL, "case %zu: message %s", i, err.message);
        cr_expect(strchr(err.message, '<') == NULL, "case %zu: no HTML in %s", i, err.message);
    }
}

Test(mhd_errors, the_status_decides_between_bodies_that_share_a_text)
{
    /* 414 and 431 share REQUEST_TOO_BIG; the status tells them apart */
    const char *too_big = "<html><body>Your HTTP header was too big for the memory constraints.</body></html>";
    bd_err err;
    int direct;

    bd_mhd_error_describe(414, too_big, &after_line, &err, &direct);
    cr_assert_eq(err.code, BD_EURI);
    bd_mhd_error_describe(431, too_big, &facts, &err, &direct);
    cr_assert_eq(err.code, BD_EHEADERS);
}

/* As the external logger calls it: through a va_list. */
static int note(const char *fmt, ...)
{
    va_list ap;
    int r;

    va_start(ap, fmt);
    r = bd_mhd_errors_note(fmt, ap);
    va_end(ap);
    return r;
}

Test(mhd_errors, note_takes_only_the_error_line)
{
    /* the format of libmicrohttpd 0.9.75's transmit_error_response_len */
    cr_assert_eq(note("Error processing request (HTTP response code is %u ('%s')). Closing connection.\n", 431u,
                      "<html>too big</html>"),
                 1);
    cr_assert_eq(note("Failed to parse `Content-Length' header. Closing connection.\n"), 0);
    cr_assert_eq(note("Error processing request: %s\n", "other"), 0);
}
