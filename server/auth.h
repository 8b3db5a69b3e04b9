/* auth.h: bearer tokens. A token is "bdt_<id>_<secret>" where secret is 32
 * random bytes in hex (256 bits). Storage keeps only BLAKE2b-256(secret);
 * verification recomputes it and compares in constant time. The id lets the
 * server find the one stored hash to compare against without searching by
 * secret. */
#ifndef BD_AUTH_H
#define BD_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

#define BD_TOKEN_HASH_BYTES 32
#define BD_TOKEN_SECRET_HEX 64
#define BD_TOKEN_MAX_LEN 96
#define BD_TOKEN_MIN_DISTINCT 10

/* Initializes libsodium; call once before anything else here. */
int bd_auth_init(void) BD_MUST_CHECK;
/* A fresh random secret (hex, NUL-terminated) and its hash. */
void bd_auth_new_secret(char secret_hex[BD_TOKEN_SECRET_HEX + 1], uint8_t hash[BD_TOKEN_HASH_BYTES]);
/* Writes "bdt_<id>_<secret>" into out (at least BD_TOKEN_MAX_LEN bytes). */
void bd_auth_format_token(int64_t id, const char *secret_hex, char *out, size_t n);
/* Splits a token into its id and the hash of its secret. BD_EAUTH if malformed. */
int bd_auth_parse_token(const char *token, int64_t *id, uint8_t hash[BD_TOKEN_HASH_BYTES]) BD_MUST_CHECK;
/* Checks a token an operator supplied (--admin-token-file) and gives its id
 * and the hash to store. Stricter than bd_auth_parse_token, which only has
 * to recognise tokens this daemon minted: the text must be exactly
 * "bdt_<id>_<64 lowercase hex digits>" (id without sign or leading zero), so
 * the secret carries 256 bits when it was drawn at random, and its 64 digits
 * must use at least BD_TOKEN_MIN_DISTINCT of the 16 hex digits, which refuses
 * placeholders such as all zeros (random digits use fewer with probability
 * about 1e-12). BD_EINVAL with a message that never quotes the text. */
int bd_auth_check_supplied(const char *token, int64_t *id, uint8_t hash[BD_TOKEN_HASH_BYTES],
                           bd_err *err) BD_MUST_CHECK;
/* Constant-time comparison of two hashes: 1 if equal. */
int bd_auth_hash_equal(const uint8_t a[BD_TOKEN_HASH_BYTES], const uint8_t b[BD_TOKEN_HASH_BYTES]);

#endif
