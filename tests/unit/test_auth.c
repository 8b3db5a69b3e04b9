/* Tokens an operator supplies (--admin-token-file): the exact form
 * bdt_<id>_<64 lowercase hex>, placeholders refused, the hash the same as for
 * a token the daemon parses, and no error message quoting the secret. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "server/auth.h"

static const char *const good = "bdt_1_0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";

Test(auth, supplied_token_accepted_with_the_hash_authentication_uses)
{
    int64_t id = 0, parsed_id = 0;
    uint8_t hash[BD_TOKEN_HASH_BYTES], parsed[BD_TOKEN_HASH_BYTES];
    bd_err err = {0};

    cr_assert_eq(bd_auth_init(), 0);
    cr_assert_eq(bd_auth_check_supplied(good, &id, hash, &err), 0, "%s", err.message);
    cr_assert_eq(id, 1);
    cr_assert_eq(bd_auth_parse_token(good, &parsed_id, parsed), 0);
    cr_assert_eq(parsed_id, 1);
    cr_assert(bd_auth_hash_equal(hash, parsed), "a supplied token must hash as the daemon checks it");
    cr_assert_eq(bd_auth_check_supplied("bdt_42_0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0", &id,
                                        hash, &err),
                 0, "%s", err.message);
    cr_assert_eq(id, 42);
}

Test(auth, freshly_minted_secrets_pass_the_placeholder_check)
{
    char secret[BD_TOKEN_SECRET_HEX + 1], token[BD_TOKEN_MAX_LEN];
    uint8_t hash[BD_TOKEN_HASH_BYTES], got[BD_TOKEN_HASH_BYTES];
    int64_t id;
    bd_err err = {0};

    cr_assert_eq(bd_auth_init(), 0);
    for (int i = 0; i < 1000; i++) {
        bd_auth_new_secret(secret, hash);
        bd_auth_format_token(1, secret, token, sizeof token);
        cr_assert_eq(bd_auth_check_supplied(token, &id, got, &err), 0, "%s", err.message);
        cr_assert(bd_auth_hash_equal(hash, got));
    }
}

Test(auth, malformed_supplied_tokens_refused_without_quoting_them)
{
    static const char *const bad[] = {
        "",
        "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0", /* bare secret */
        "bdt__0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0",
        "bdt_0_0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0",
        "bdt_01_0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0",
        "bdt_+1_0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0",
        "bdt_-1_0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0",
        "bdt_ 1_0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0",
        "bdt_99999999999999999999_0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0",
        "bdt_1-0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0",
        "bdt_1_0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f",   /* 63 digits */
        "bdt_1_0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0a", /* 65 */
        "bdt_1_0F1E2D3C4B5A69788796A5B4C3D2E1F00F1E2D3C4B5A69788796A5B4C3D2E1F0", /* upper case */
        "bdt_1_0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1g0",
        "bdt_1_0f1e2d3c4b5a69788796a5b4c3d2e1f0 f1e2d3c4b5a69788796a5b4c3d2e1f0",
        "bdt_1_0000000000000000000000000000000000000000000000000000000000000000",
        "bdt_1_0123456780123456780123456780123456780123456780123456780123456780", /* 9 digits used */
    };
    int64_t id = 7;
    uint8_t hash[BD_TOKEN_HASH_BYTES];

    cr_assert_eq(bd_auth_init(), 0);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        bd_err err = {0};
        cr_expect_eq(bd_auth_check_supplied(bad[i], &id, hash, &err), BD_EINVAL, "accepted '%s'", bad[i]);
        cr_expect_eq(err.code, BD_EINVAL);
        cr_expect(strlen(err.message) > 0, "no reason given for '%s'", bad[i]);
        cr_expect_null(strstr(err.message, "0f1e2d3c4b"), "the message quotes the secret: %s", err.message);
        cr_expect_eq(id, 7, "*id was set for a refused token");
    }
}

Test(auth, ten_distinct_digits_are_enough)
{
    int64_t id;
    uint8_t hash[BD_TOKEN_HASH_BYTES];
    bd_err err = {0};

    cr_assert_eq(bd_auth_init(), 0);
    cr_assert_eq(
        bd_auth_check_supplied("bdt_1_0123456789012345678901234567890123456789012345678901234567890123", &id, hash,
                               &err),
        0, "%s", err.message);
}

/* A request's token id has one spelling: strtoll used to read bdt_002_,
 * bdt_+2_ and bdt_ 2_ as bdt_2_ (issue 20). */
Test(auth, a_token_id_has_one_spelling)
{
    static const char *const secret = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";
    static const char *const ids[] = {"002", "+2", " 2", "-2", "0", "2 ", "99999999999999999999", ""};
    char token[BD_TOKEN_MAX_LEN + 32];
    int64_t id = 0;
    uint8_t hash[BD_TOKEN_HASH_BYTES];
    bd_err err = {0};

    cr_assert_eq(bd_auth_init(), 0);
    for (size_t i = 0; i < sizeof ids / sizeof *ids; i++) {
        snprintf(token, sizeof token, "bdt_%s_%s", ids[i], secret);
        cr_assert_eq(bd_auth_parse_token(token, &id, hash), BD_EAUTH, "%s was accepted", token);
        cr_assert_neq(bd_auth_check_supplied(token, &id, hash, &err), 0, "%s was accepted", token);
    }
    snprintf(token, sizeof token, "bdt_2_%s", secret);
    cr_assert_eq(bd_auth_parse_token(token, &id, hash), 0);
    cr_assert_eq(id, 2);
}
