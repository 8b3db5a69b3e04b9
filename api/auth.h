/* auth.h: the Authorization header. Only the Bearer scheme exists; the
 * engine resolves the token. */
#ifndef BD_API_AUTH_H
#define BD_API_AUTH_H

#include "../server/common.h"
#include "../server/engine.h"

#define BD_TOKEN_MAX 256

/* Copies the token of "Bearer <token>" (scheme case-insensitive, spaces
 * around the token ignored) into buf (cap bytes). BD_EAUTH when the header is
 * NULL, another scheme, empty or longer than cap - 1. */
int bd_api_bearer_token(const char *authorization, char *buf, size_t cap, bd_err *err) BD_MUST_CHECK;

/* bd_api_bearer_token then bd_engine_authenticate. BD_EAUTH on any failure. */
int bd_api_authenticate(bd_engine *e, const char *authorization, bd_caller *out, bd_err *err) BD_MUST_CHECK;

#endif
