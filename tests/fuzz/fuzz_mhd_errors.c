/* fuzz_mhd_errors: libmicrohttpd's own error answer, as api/mhd_errors.c
 * turns it into the daemon's JSON error: the status and the HTML body the
 * library produced (or a log line's text, which reaches the same matcher)
 * through bd_mhd_error_describe and bd_api_error_json.
 *
 * Input: byte 0 picks the status (from the statuses libmicrohttpd sends
 * itself, else any 400..599), byte 1 the connection facts, the rest is the
 * body text (NUL-terminated copy).
 * Oracles: the answer is an error of the documented shape (a code, a
 * non-empty message, a field that is a string or absent); a 4xx status
 * never becomes a 5xx error and the reverse (the status is libmicrohttpd's,
 * the JSON must not contradict it); it survives the server's
 * serialization. */
#include <stdint.h>
#include <string.h>

#include "api/errors.h"
#include "api/mhd_errors.h"
#include "fuzz_common.h"

static const unsigned int statuses[] = {400, 413, 414, 431, 500, 501, 505};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    unsigned int status = data[0] < 2 * (sizeof statuses / sizeof statuses[0])
                              ? statuses[data[0] % (sizeof statuses / sizeof statuses[0])]
                              : 400 + data[0] % 200;
    bd_mhd_conn_facts facts = {.request_line_parsed = data[1] & 1, .max_body = (size_t)1 << (data[1] >> 2),
                               .header_bytes = 32768};
    char *body = malloc(size - 1);
    memcpy(body, data + 2, size - 2);
    body[size - 2] = '\0';
    bd_err err;
    int direct = -1;
    bd_err_clear(&err);
    bd_mhd_error_describe(status, (data[1] & 2) ? NULL : body, &facts, &err, &direct);
    FUZZ_CHECK(direct == 0 || direct == 1, "direct is %d", direct);
    FUZZ_CHECK(err.code < 0, "no error code for status %u", status);
    FUZZ_CHECK(err.message[0] != '\0', "an empty message for status %u", status);
    json_t *j = bd_api_error_json(&err);
    json_t *e = json_object_get(j, "error");
    FUZZ_CHECK(json_is_string(json_object_get(e, "code")), "no code");
    FUZZ_CHECK(json_is_string(json_object_get(e, "message")), "no message");
    json_t *field = json_object_get(e, "field");
    FUZZ_CHECK(!field || json_is_string(field) || json_is_null(field), "field is neither a string nor null");
    int http = bd_api_status(err.code);
    FUZZ_CHECK((http >= 500) == (status >= 500), "status %u answered as a %d error", status, http);
    fuzz_check_serialization(j);
    json_decref(j);
    free(body);
    return 0;
}
