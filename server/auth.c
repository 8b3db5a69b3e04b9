/* auth.c: token generation, parsing, checking of operator-supplied tokens and
 * hashing with libsodium (see auth.h). */
#include "auth.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int bd_auth_init(void)
{
    return sodium_init() < 0 ? BD_EINTERNAL : 0;
}

static void hash_secret(const char *secret_hex, size_t n, uint8_t hash[BD_TOKEN_HASH_BYTES])
{
    crypto_generichash(hash, BD_TOKEN_HASH_BYTES, (const unsigned char *)secret_hex, n, NULL, 0);
}

void bd_auth_new_secret(char secret_hex[BD_TOKEN_SECRET_HEX + 1], uint8_t hash[BD_TOKEN_HASH_BYTES])
{
    unsigned char raw[BD_TOKEN_SECRET_HEX / 2];
    randombytes_buf(raw, sizeof raw);
    sodium_bin2hex(secret_hex, BD_TOKEN_SECRET_HEX + 1, raw, sizeof raw);
    sodium_memzero(raw, sizeof raw);
    hash_secret(secret_hex, BD_TOKEN_SECRET_HEX, hash);
}

void bd_auth_format_token(int64_t id, const char *secret_hex, char *out, size_t n)
{
    snprintf(out, n, "bdt_%lld_%s", (long long)id, secret_hex);
}

/* The id after "bdt_": digits only, no sign, space or leading zero, so one
 * id has one spelling (strtoll took bdt_002_ and bdt_+2_ as bdt_2_). Sets
 * *end to the first character after it; 0, or -1 when malformed or too large. */
static int parse_token_id(const char *p, int64_t *id, const char **end)
{
    int64_t v = 0;
    if (*p < '1' || *p > '9')
        return -1;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (v > (INT64_MAX - (*p - '0')) / 10)
            return -1;
        v = v * 10 + (*p - '0');
    }
    *id = v;
    *end = p;
    return 0;
}

int bd_auth_parse_token(const char *token, int64_t *id, uint8_t hash[BD_TOKEN_HASH_BYTES])
{
    if (strncmp(token, "bdt_", 4) != 0)
        return BD_EAUTH;
    const char *end;
    int64_t v;
    if (parse_token_id(token + 4, &v, &end) || *end != '_')
        return BD_EAUTH;
    const char *secret = end + 1;
    if (strlen(secret) != BD_TOKEN_SECRET_HEX)
        return BD_EAUTH;
    *id = v;
    hash_secret(secret, BD_TOKEN_SECRET_HEX, hash);
    return 0;
}

int bd_auth_check_supplied(const char *token, int64_t *id, uint8_t hash[BD_TOKEN_HASH_BYTES], bd_err *err)
{
    static const char form[] = "a token of the form bdt_<id>_<64 lowercase hex digits>";
    const char *p = token + 4, *secret;
    int64_t v = 0;
    unsigned seen = 0, distinct = 0;

    if (strncmp(token, "bdt_", 4) != 0)
        return bd_err_set(err, BD_EINVAL, NULL, "is not %s (it does not start with bdt_)", form);
    if (parse_token_id(token + 4, &v, &p))
        return bd_err_set(err, BD_EINVAL, NULL, "is not %s (the id is not a positive number without leading zeros)",
                          form);
    if (*p != '_')
        return bd_err_set(err, BD_EINVAL, NULL, "is not %s (no '_' after the id)", form);
    secret = p + 1;
    for (p = secret; *p; p++) {
        int digit = *p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;
        if (digit < 0)
            return bd_err_set(err, BD_EINVAL, NULL, "is not %s (the secret has a character that is not 0-9 or a-f)",
                              form);
        if (!(seen & (1u << digit))) {
            seen |= 1u << digit;
            distinct++;
        }
    }
    if (p - secret != BD_TOKEN_SECRET_HEX)
        return bd_err_set(err, BD_EINVAL, NULL, "is not %s (the secret has %zu digits)", form, (size_t)(p - secret));
    if (distinct < BD_TOKEN_MIN_DISTINCT)
        return bd_err_set(err, BD_EINVAL, NULL,
                          "has a secret that uses only %u different hex digits: not a random one (draw 32 random "
                          "bytes, e.g. od -An -vtx1 -N32 /dev/urandom)",
                          distinct);
    *id = v;
    hash_secret(secret, BD_TOKEN_SECRET_HEX, hash);
    return 0;
}

int bd_auth_hash_equal(const uint8_t a[BD_TOKEN_HASH_BYTES], const uint8_t b[BD_TOKEN_HASH_BYTES])
{
    return sodium_memcmp(a, b, BD_TOKEN_HASH_BYTES) == 0;
}
