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

/* Initializes libsodium; call once before anything else here. */
int bd_auth_init(void) BD_MUST_CHECK;
/* A fresh random secret (hex, NUL-terminated) and its hash. */
void bd_auth_new_secret(char secret_hex[BD_TOKEN_SECRET_HEX + 1], uint8_t hash[BD_TOKEN_HASH_BYTES]);
/* Writes "bdt_<id>_<secret>" into out (at least BD_TOKEN_MAX_LEN bytes). */
void bd_auth_format_token(int64_t id, const char *secret_hex, char *out, size_t n);
/* Splits a token into its id and the hash of its secret. BD_EAUTH if malformed. */
int bd_auth_parse_token(const char *token, int64_t *id, uint8_t hash[BD_TOKEN_HASH_BYTES]) BD_MUST_CHECK;
/* Constant-time comparison of two hashes: 1 if equal. */
int bd_auth_hash_equal(const uint8_t a[BD_TOKEN_HASH_BYTES], const uint8_t b[BD_TOKEN_HASH_BYTES]);

#endif
