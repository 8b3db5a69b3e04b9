/* body.c: Content-Type check and strict JSON body parsing (see body.h). */
#include "body.h"

#include <string.h>

#include <strings.h>

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

int bd_api_is_json_media(const char *ct)
{
    static const char media[] = "application/json";
    size_t n = sizeof media - 1;

    if (!ct)
        return 0;
    while (is_space(*ct))
        ct++;
    if (strncasecmp(ct, media, n) != 0)
        return 0;
    ct += n;
    while (is_space(*ct))
        ct++;
    return *ct == '\0' || *ct == ';';
}

/* Whether a NaN or Infinity token sits near byte pos: jansson reports those
 * only as "invalid token", so say what the client most likely sent. */
static int non_finite_near(const char *buf, size_t len, size_t pos)
{
    size_t lo = pos > 10 ? pos - 10 : 0, hi = pos + 3 < len ? pos + 3 : len;

    for (size_t i = lo; i + 3 <= hi; i++) {
        if (strncasecmp(buf + i, "nan", 3) == 0 || strncasecmp(buf + i, "inf", 3) == 0)
            return 1;
    }
    return 0;
}

/* What was wrong with the JSON, in our words: jansson's own text may name
 * its internals (a \u0000 in a string answered "... without JSON_ALLOW_NUL"). */
static const char *json_problem(const json_error_t *jerr)
{
    switch (json_error_code(jerr)) {
    case json_error_null_character:
    case json_error_null_byte_in_key:
        return "a string contains \\u0000 (NUL), which is not accepted";
    case json_error_invalid_utf8:
        return "the text is not valid UTF-8";
    case json_error_duplicate_key:
        return "duplicate key: an object has the same key twice";
    case json_error_stack_overflow:
        return "nested too deeply";
    case json_error_numeric_overflow:
        return "a number is too large";
    case json_error_out_of_memory:
        return "the server ran out of memory reading it";
    default:
        break;
    }
    return strstr(jerr->text, "JSON_") ? "malformed" : jerr->text;
}

int bd_api_parse_body(const char *buf, size_t len, int required, json_t **out, bd_err *err)
{
    json_error_t jerr;
    json_t *j;
    size_t i = 0;

    while (i < len && is_space(buf[i]))
        i++;
    if (i == len) {
        if (required)
            return bd_err_set(err, BD_EINVAL, NULL, "a JSON object body is required");
        *out = json_object();
        return 0;
    }
    j = json_loadb(buf, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
    if (!j) {
        int nonfinite = json_error_code(&jerr) == json_error_invalid_syntax &&
                        non_finite_near(buf, len, jerr.position > 0 ? (size_t)jerr.position : 0);
        return bd_err_set(err, BD_EINVAL, NULL, "invalid JSON at line %d, column %d: %s%s", jerr.line, jerr.column,
                          json_problem(&jerr), nonfinite ? " (NaN and Infinity are not valid JSON numbers)" : "");
    }
    if (!json_is_object(j)) {
        json_decref(j);
        return bd_err_set(err, BD_EINVAL, NULL, "the body must be a JSON object");
    }
    *out = j;
    return 0;
}
