/* idempotency.h: what the api layer contributes to idempotent requests: the
 * Idempotency-Key header check and the request fingerprint. The engine stores
 * and replays answers. */
#ifndef BD_API_IDEMPOTENCY_H
#define BD_API_IDEMPOTENCY_H

#include <stddef.h>

#include "../server/common.h"

#define BD_IDEM_KEY_MAX 200

/* Accepts 1..BD_IDEM_KEY_MAX printable ASCII characters (0x20..0x7e);
 * otherwise BD_EINVAL with field "Idempotency-Key". */
int bd_api_check_idem_key(const char *key, bd_err *err) BD_MUST_CHECK;

/* Writes "METHOD PATH <32 hex digits>" into buf, the digits a BLAKE2b-128
 * digest of the body, so a retry matches only the same request. A path too
 * long for cap is cut (the route patterns bound real paths well below). */
void bd_api_fingerprint(char *buf, size_t cap, const char *method, const char *path, const char *body, size_t len);

#endif
