/* idempotency.c: Idempotency-Key validation and request fingerprints (see idempotency.h). */
#include "idempotency.h"

#include <sodium.h>
#include <stdio.h>
#include <string.h>

int bd_api_check_idem_key(const char *key, bd_err *err)
{
    size_t n = strlen(key);

    if (n == 0 || n > BD_IDEM_KEY_MAX)
        return bd_err_set(err, BD_EINVAL, "Idempotency-Key", "the Idempotency-Key header must have 1..%d characters",
                          BD_IDEM_KEY_MAX);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)key[i];
        if (c < 0x20 || c > 0x7e)
            return bd_err_set(err, BD_EINVAL, "Idempotency-Key", "the Idempotency-Key header must be printable ASCII");
    }
    return 0;
}

void bd_api_fingerprint(char *buf, size_t cap, const char *method, const char *path, const char *body, size_t len)
{
    unsigned char digest[16];
    char hex[2 * sizeof digest + 1];

    crypto_generichash(digest, sizeof digest, (const unsigned char *)body, len, NULL, 0);
    sodium_bin2hex(hex, sizeof hex, digest, sizeof digest);
    snprintf(buf, cap, "%s %.*s %s", method, (int)(cap > 64 ? cap - 64 : 0), path, hex);
}
