/* Shortest round-trip reals in answers (api/json_out.c). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "api/json_out.h"

static void check(const char *in, const char *want)
{
    char buf[512];
    size_t n = strlen(in);
    memcpy(buf, in, n);
    n = bd_json_shorten_reals(buf, n);
    buf[n] = '\0';
    cr_expect_str_eq(buf, want, "from %s", in);
}

Test(json_out, reals_are_as_short_as_round_trip_allows)
{
    check("[0.29999999999999999,0.30000000000000004,9.9999999999999995e-8]", "[0.3,0.30000000000000004,1e-07]");
    check("{\"lease\":300.0,\"n\":12,\"neg\":-1.5,\"big\":1795284658.4755101}",
          "{\"lease\":300.0,\"n\":12,\"neg\":-1.5,\"big\":1795284658.4755101}");
}

Test(json_out, strings_and_integers_are_untouched)
{
    check("{\"s\":\"0.29999999999999999\",\"q\":\"a\\\"0.10000000000000001\",\"i\":-42,\"t\":true}",
          "{\"s\":\"0.29999999999999999\",\"q\":\"a\\\"0.10000000000000001\",\"i\":-42,\"t\":true}");
}

Test(json_out, every_value_parses_back_to_the_same_double)
{
    /* A spread of doubles through jansson and back: equal after shortening. */
    json_t *arr = json_array();
    double x = 1e-300;
    for (int i = 0; i < 400; i++, x *= 5.7)
        json_array_append_new(arr, json_real(i % 2 ? -x : x / 3.0));
    char *text = json_dumps(arr, JSON_COMPACT);
    size_t n = bd_json_shorten_reals(text, strlen(text));
    text[n] = '\0';
    json_t *back = json_loads(text, 0, NULL);
    cr_assert_not_null(back);
    for (size_t i = 0; i < json_array_size(arr); i++)
        cr_expect_eq(json_real_value(json_array_get(arr, i)), json_number_value(json_array_get(back, i)), "item %zu",
                     i);
    free(text);
    json_decref(arr);
    json_decref(back);
}
