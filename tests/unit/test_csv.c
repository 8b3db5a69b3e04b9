/* CSV cells of the trial export (server/csv.c): RFC 4180 quoting and the
 * formula-injection guard. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "server/csv.h"

/* The buffer's text as a NUL-terminated string (new). */
static char *text_of(const bd_csv_buf *b)
{
    char *s = malloc(b->len + 1);
    if (b->len)
        memcpy(s, b->data, b->len);
    s[b->len] = '\0';
    return s;
}

static void expect_text(const char *in, int user, const char *want)
{
    bd_csv_buf b = {0};
    bd_csv_text(&b, in, user);
    char *got = text_of(&b);
    cr_expect_str_eq(got, want, "cell of [%s] (user %d)", in ? in : "(null)", user);
    free(got);
    bd_csv_buf_free(&b);
}

Test(csv, plain_text_is_not_quoted)
{
    expect_text("svm", 1, "svm");
    expect_text("", 1, "");
    expect_text(NULL, 1, "");
    expect_text("a b;c", 0, "a b;c");
}

Test(csv, comma_quote_cr_lf_are_quoted_and_quotes_doubled)
{
    expect_text("a,b", 0, "\"a,b\"");
    expect_text("say \"hi\"", 0, "\"say \"\"hi\"\"\"");
    expect_text("\"", 0, "\"\"\"\"");
    expect_text("line1\nline2", 0, "\"line1\nline2\"");
    expect_text("x\r\ny", 1, "\"x\r\ny\"");
}

Test(csv, user_text_starting_a_formula_gets_a_quote_mark)
{
    expect_text("=cmd|' /C calc'!A0", 1, "'=cmd|' /C calc'!A0");
    expect_text("+1", 1, "'+1");
    expect_text("-w1", 1, "'-w1");
    expect_text("@SUM(A1)", 1, "'@SUM(A1)");
    expect_text("\tx", 1, "'\tx");
    /* CR also needs quoting: the guard goes inside the quotes */
    expect_text("\rx", 1, "\"'\rx\"");
    expect_text("=HYPERLINK(\"http://e\",\"x\")", 1, "\"'=HYPERLINK(\"\"http://e\"\",\"\"x\"\")\"");
    /* issue 20: leading blanks and line feeds, and the full-width signs */
    expect_text(" =1+1", 1, "' =1+1");
    expect_text("\n=1+1", 1, "\"'\n=1+1\"");
    expect_text("\xEF\xBC\x9D" "1+1", 1, "'\xEF\xBC\x9D" "1+1");
    expect_text("\xEF\xBC\xA0" "SUM(A1)", 1, "'\xEF\xBC\xA0" "SUM(A1)");
    expect_text("\xEF\xBC\x90", 1, "\xEF\xBC\x90"); /* a full-width 0 is not a sign */
    /* only the first character counts; our own text is never guarded */
    expect_text("a=b", 1, "a=b");
    expect_text("-1", 0, "-1");
}

static void expect_number(double v, const char *want)
{
    bd_csv_buf b = {0};
    bd_csv_number(&b, v);
    char *got = text_of(&b);
    cr_expect_str_eq(got, want, "number %.17g", v);
    if (*want)
        cr_expect_eq(strtod(got, NULL), v, "reads back");
    free(got);
    bd_csv_buf_free(&b);
}

Test(csv, numbers_are_shortest_round_trip_and_non_finite_empty)
{
    expect_number(0.1, "0.1");
    expect_number(1, "1");
    expect_number(-2.5, "-2.5");
    expect_number(1.0 / 3.0, "0.33333333333333331");
    expect_number(1763942400.123, "1763942400.123");
    expect_number(NAN, "");
    expect_number(INFINITY, "");
}

static void expect_json(json_t *v, const char *want)
{
    bd_csv_buf b = {0};
    bd_csv_json(&b, v);
    char *got = text_of(&b);
    cr_expect_str_eq(got, want);
    free(got);
    bd_csv_buf_free(&b);
    json_decref(v);
}

Test(csv, json_values_as_cells)
{
    expect_json(json_string("-x"), "'-x");
    expect_json(json_integer(42), "42");
    expect_json(json_real(0.25), "0.25");
    expect_json(json_true(), "true");
    expect_json(json_null(), "");
    expect_json(json_pack("[i, s]", 1, "a"), "\"[1,\"\"a\"\"]\"");
    bd_csv_buf b = {0};
    bd_csv_json(&b, NULL); /* an inactive parameter */
    cr_expect_eq(b.len, 0);
    bd_csv_buf_free(&b);
}

Test(csv, rows_have_separators_and_crlf)
{
    bd_csv_buf b = {0};
    bd_csv_sep(&b, 1);
    bd_csv_text(&b, "a", 0);
    bd_csv_sep(&b, 0);
    bd_csv_sep(&b, 0);
    bd_csv_text(&b, "c,d", 0);
    bd_csv_eol(&b);
    char *got = text_of(&b);
    cr_expect_str_eq(got, "a,,\"c,d\"\r\n");
    free(got);
    bd_csv_buf_reset(&b);
    cr_expect_eq(b.len, 0);
    bd_csv_buf_free(&b);
}
