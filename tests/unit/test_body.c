/* Request body rules (strict JSON objects, NaN/Infinity, duplicates,
 * truncation, empty bodies), the Content-Type check, bearer token parsing,
 * Idempotency-Key validation and request fingerprints. */
#include <criterion/criterion.h>
#include <string.h>

#include "api/auth.h"
#include "api/body.h"
#include "api/http.h"
#include "api/idempotency.h"

static int parse(const char *text, int required, json_t **out, bd_err *err)
{
    bd_err_clear(err);
    *out = NULL;
    return bd_api_parse_body(text, strlen(text), required, out, err);
}

Test(body, object_is_parsed)
{
    json_t *j;
    bd_err err;

    cr_assert_eq(parse("{\"worker\": \"w1\", \"count\": 2}", 1, &j, &err), 0);
    cr_assert_eq(json_integer_value(json_object_get(j, "count")), 2);
    json_decref(j);
}

Test(body, nan_and_infinity_are_invalid_with_position)
{
    static const char *const bad[] = {
        "{\"value\": NaN}", "{\"value\": Infinity}",           "{\"value\": -Infinity}",
        "{\"value\": nan}", "{\"step\": 1,\n \"value\": inf}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *j;
        bd_err err;

        cr_expect_eq(parse(bad[i], 1, &j, &err), BD_EINVAL, "%s", bad[i]);
        cr_expect_null(j);
        cr_expect_eq(err.code, BD_EINVAL);
        cr_expect(strstr(err.message, "line ") && strstr(err.message, "column "), "no position: %s", err.message);
        cr_expect(strstr(err.message, "NaN and Infinity"), "no hint: %s", err.message);
        cr_expect_str_eq(err.field, "");
    }
}

Test(body, syntax_errors_say_where)
{
    static const char *const bad[] = {
        "{\"a\": 1",   "{\"a\": }",      "{\"a\": 1,}",          "{\"a\" 1}",         "{'a': 1}",
        "{\"a\": 1}x", "{\"a\": 1e999}", "{\"a\": \"\\u0000\"}", "{\"a\": \"\xff\"}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *j;
        bd_err err;

        cr_expect_eq(parse(bad[i], 0, &j, &err), BD_EINVAL, "%s", bad[i]);
        cr_expect(strstr(err.message, "invalid JSON at line 1, column "), "%s -> %s", bad[i], err.message);
        cr_expect_null(strstr(err.message, "NaN"), "%s -> %s", bad[i], err.message);
        /* regression: a \u0000 answered with jansson's flag name JSON_ALLOW_NUL */
        cr_expect_null(strstr(err.message, "JSON_"), "%s -> %s", bad[i], err.message);
    }
}

Test(body, duplicate_keys_are_rejected)
{
    json_t *j;
    bd_err err;

    cr_assert_eq(parse("{\"value\": 1, \"value\": 2}", 1, &j, &err), BD_EINVAL);
    cr_assert(strstr(err.message, "duplicate"), "%s", err.message);
    cr_assert_eq(parse("{\"a\": {\"b\": 1, \"b\": 1}}", 1, &j, &err), BD_EINVAL, "nested duplicates too");
}

Test(body, non_object_is_rejected)
{
    static const char *const bad[] = {"[]", "[{\"a\": 1}]", "\"text\"", "42", "null", "true"};

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *j;
        bd_err err;

        cr_expect_eq(parse(bad[i], 0, &j, &err), BD_EINVAL, "%s", bad[i]);
        cr_expect_str_eq(err.message, "the body must be a JSON object");
        cr_expect_null(j);
    }
}

Test(body, empty_body_is_empty_object_when_optional)
{
    static const char *const empty[] = {"", "  ", "\r\n", "\t \n"};

    for (size_t i = 0; i < sizeof empty / sizeof empty[0]; i++) {
        json_t *j;
        bd_err err;

        cr_expect_eq(parse(empty[i], 0, &j, &err), 0);
        cr_expect(json_is_object(j) && json_object_size(j) == 0);
        json_decref(j);
        cr_expect_eq(parse(empty[i], 1, &j, &err), BD_EINVAL, "required body");
        cr_expect(strstr(err.message, "required"), "%s", err.message);
    }
    {
        json_t *j;
        bd_err err;
        cr_expect_eq(bd_api_parse_body(NULL, 0, 0, &j, &err), 0, "no body at all");
        json_decref(j);
    }
}

Test(body, body_is_not_read_past_its_length)
{
    const char text[] = "{\"a\": 1}GARBAGE";
    json_t *j;
    bd_err err;

    cr_assert_eq(bd_api_parse_body(text, 8, 1, &j, &err), 0);
    json_decref(j);
}

Test(body, json_media_type)
{
    cr_expect(bd_api_is_json_media("application/json"));
    cr_expect(bd_api_is_json_media("application/json; charset=utf-8"));
    cr_expect(bd_api_is_json_media("Application/JSON"));
    cr_expect(bd_api_is_json_media(" application/json ;charset=UTF-8"));
    cr_expect_not(bd_api_is_json_media(NULL));
    cr_expect_not(bd_api_is_json_media(""));
    cr_expect_not(bd_api_is_json_media("text/plain"));
    cr_expect_not(bd_api_is_json_media("application/x-www-form-urlencoded"));
    cr_expect_not(bd_api_is_json_media("application/jsonx"));
    cr_expect_not(bd_api_is_json_media("application/json-patch+json"));
}

Test(auth, bearer_token_extraction)
{
    char tok[BD_TOKEN_MAX];
    bd_err err;

    cr_assert_eq(bd_api_bearer_token("Bearer bdt_abc", tok, sizeof tok, &err), 0);
    cr_assert_str_eq(tok, "bdt_abc");
    cr_assert_eq(bd_api_bearer_token("bearer   bdt_abc  ", tok, sizeof tok, &err), 0);
    cr_assert_str_eq(tok, "bdt_abc");
    cr_assert_eq(bd_api_bearer_token(NULL, tok, sizeof tok, &err), BD_EAUTH);
    cr_assert_eq(bd_api_bearer_token("Token bdt_abc", tok, sizeof tok, &err), BD_EAUTH);
    cr_assert_eq(bd_api_bearer_token("Bearer ", tok, sizeof tok, &err), BD_EAUTH);
    cr_assert_eq(bd_api_bearer_token("Bearer 0123456789", tok, 8, &err), BD_EAUTH, "too long for the buffer");
}

Test(idempotency, key_length_and_characters)
{
    char key[BD_IDEM_KEY_MAX + 2];
    bd_err err;

    cr_assert_eq(bd_api_check_idem_key("retry-7f3a", &err), 0);
    memset(key, 'k', BD_IDEM_KEY_MAX);
    key[BD_IDEM_KEY_MAX] = '\0';
    cr_assert_eq(bd_api_check_idem_key(key, &err), 0, "200 characters are fine");
    key[BD_IDEM_KEY_MAX] = 'k';
    key[BD_IDEM_KEY_MAX + 1] = '\0';
    cr_assert_eq(bd_api_check_idem_key(key, &err), BD_EINVAL, "201 are not");
    cr_assert_str_eq(err.field, "Idempotency-Key");
    cr_assert_eq(bd_api_check_idem_key("", &err), BD_EINVAL);
    cr_assert_eq(bd_api_check_idem_key("a\tb", &err), BD_EINVAL);
    cr_assert_eq(bd_api_check_idem_key("caf\xc3\xa9", &err), BD_EINVAL);
}

Test(idempotency, fingerprint_names_method_path_and_body)
{
    char a[BD_FINGERPRINT_MAX], b[BD_FINGERPRINT_MAX], c[BD_FINGERPRINT_MAX];

    bd_api_fingerprint(a, sizeof a, "POST", "/v1/studies/1/suggest", "{\"count\":1}", 11);
    bd_api_fingerprint(b, sizeof b, "POST", "/v1/studies/1/suggest", "{\"count\":2}", 11);
    bd_api_fingerprint(c, sizeof c, "POST", "/v1/studies/2/suggest", "{\"count\":1}", 11);
    cr_assert_eq(strncmp(a, "POST /v1/studies/1/suggest ", 27), 0, "%s", a);
    cr_assert_eq(strlen(a), 27 + 32);
    cr_assert_str_neq(a, b);
    cr_assert_str_neq(a, c);
    bd_api_fingerprint(b, sizeof b, "POST", "/v1/studies/1/suggest", "{\"count\":1}", 11);
    cr_assert_str_eq(a, b, "deterministic");
    bd_api_fingerprint(c, sizeof c, "POST", "/v1/trials/1/heartbeat", NULL, 0);
    cr_assert_eq(strlen(c), strlen("POST /v1/trials/1/heartbeat ") + 32);
}
