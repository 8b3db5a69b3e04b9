/* auth.c: bearer token extraction and authentication (see auth.h). */
#include "auth.h"

#include <string.h>
#include <strings.h>

int bd_api_bearer_token(const char *authorization, char *buf, size_t cap, bd_err *err)
{
    const char *t;
    size_t len;

    if (!authorization || !*authorization)
        return bd_err_set(err, BD_EAUTH, NULL, "missing Authorization: Bearer <token> header");
    if (strncasecmp(authorization, "Bearer ", 7) != 0)
        return bd_err_set(err, BD_EAUTH, NULL, "the Authorization header must be: Bearer <token>");
    t = authorization + 7;
    while (*t == ' ' || *t == '\t')
        t++;
    len = strlen(t);
    while (len > 0 && (t[len - 1] == ' ' || t[len - 1] == '\t'))
        len--;
    if (len == 0)
        return bd_err_set(err, BD_EAUTH, NULL, "the bearer token is empty");
    if (len >= cap)
        return bd_err_set(err, BD_EAUTH, NULL, "invalid bearer token");
    memcpy(buf, t, len);
    buf[len] = '\0';
    return 0;
}

int bd_api_authenticate(bd_engine *e, const char *authorization, bd_caller *out, bd_err *err)
{
    char token[BD_TOKEN_MAX];
    int rc = bd_api_bearer_token(authorization, token, sizeof token, err);

    if (rc < 0)
        return rc;
    rc = bd_engine_authenticate(e, token, out, err);
    if (rc < 0 && rc != BD_EAUTH && rc != BD_ESTORAGE && rc != BD_EINTERNAL && rc != BD_EUNAVAILABLE)
        rc = bd_err_set(err, BD_EAUTH, NULL, "invalid bearer token");
    return rc;
}
