/* csv.c: RFC 4180 cells with the formula-injection guard (see csv.h). */
#include "csv.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

void bd_csv_buf_free(bd_csv_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

void bd_csv_buf_reset(bd_csv_buf *b)
{
    b->len = 0;
}

static void put(bd_csv_buf *b, const char *s, size_t n)
{
    if (n == 0)
        return;
    if (b->cap - b->len < n) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap - b->len < n)
            cap *= 2;
        b->data = bd_xrealloc(b->data, cap);
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
}

void bd_csv_sep(bd_csv_buf *b, int first)
{
    if (!first)
        put(b, ",", 1);
}

void bd_csv_eol(bd_csv_buf *b)
{
    put(b, "\r\n", 2);
}

/* Does text start like a formula to a spreadsheet? '=', '+', '-', '@', a
 * TAB, CR, LF or space (spreadsheets skip leading blanks before a formula),
 * or the full-width forms U+FF1D '=', U+FF0B '+', U+FF0D '-' and U+FF20 '@',
 * which some spreadsheets read as their ASCII twins (UTF-8 EF BC 9D, 8B, 8D,
 * EF BC A0). */
static int looks_like_formula(const char *text)
{
    const unsigned char *u = (const unsigned char *)text;
    if (strchr("=+-@\t\r\n ", u[0]) && u[0])
        return 1;
    return u[0] == 0xEF && u[1] == 0xBC && (u[2] == 0x9D || u[2] == 0x8B || u[2] == 0x8D || u[2] == 0xA0);
}

void bd_csv_text(bd_csv_buf *b, const char *text, int user)
{
    if (!text)
        return;
    int guard = user && looks_like_formula(text);
    int quote = strpbrk(text, ",\"\r\n") != NULL;
    if (quote)
        put(b, "\"", 1);
    if (guard)
        put(b, "'", 1);
    for (const char *p = text; *p; p++) {
        if (*p == '"')
            put(b, "\"\"", 2);
        else
            put(b, p, 1);
    }
    if (quote)
        put(b, "\"", 1);
}

void bd_csv_number(bd_csv_buf *b, double v)
{
    char s[40];
    if (!isfinite(v))
        return;
    /* %.15g is exact for most values people type; %.17g always reads back. */
    snprintf(s, sizeof s, "%.15g", v);
    if (strtod(s, NULL) != v)
        snprintf(s, sizeof s, "%.17g", v);
    put(b, s, strlen(s));
}

void bd_csv_json(bd_csv_buf *b, const json_t *v)
{
    if (!v || json_is_null(v))
        return;
    if (json_is_string(v)) {
        bd_csv_text(b, json_string_value(v), 1);
    } else if (json_is_integer(v)) {
        char s[32];
        snprintf(s, sizeof s, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        put(b, s, strlen(s));
    } else if (json_is_real(v)) {
        bd_csv_number(b, json_real_value(v));
    } else if (json_is_boolean(v)) {
        bd_csv_text(b, json_is_true(v) ? "true" : "false", 0);
    } else {
        char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        bd_csv_text(b, s, 1);
        free(s);
    }
}
