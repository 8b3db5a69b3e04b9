/* auth.c: token generation, parsing and hashing with libsodium (see auth.h). */
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

int bd_auth_parse_token(const char *token, int64_t *id, uint8_t hash[BD_TOKEN_HASH_BYTES])
{
    if (strncmp(token, "bdt_", 4) != 0)
        return BD_EAUTH;
    const char *p = token + 4;
    char *end;
    long long v = strtoll(p, &end, 10);
    if (end == p || *end != '_' || v <= 0)
        return BD_EAUTH;
    const char *secret = end + 1;
    if (strlen(secret) != BD_TOKEN_SECRET_HEX)
        return BD_EAUTH;
    *id = v;
    hash_secret(secret, BD_TOKEN_SECRET_HEX, hash);
    return 0;
}

int bd_auth_hash_equal(const uint8_t a[BD_TOKEN_HASH_BYTES], const uint8_t b[BD_TOKEN_HASH_BYTES])
{
    return sodium_memcmp(a, b, BD_TOKEN_HASH_BYTES) == 0;
}
