/* errors.c: BD_E* code -> HTTP status and JSON error body (see errors.h). */
#include "errors.h"

#include <stdio.h>
#include <string.h>

static const struct {
    int code;
    int status;
    const char *message; /* when err->message is empty */
} table[] = {
    {BD_EINVAL, 400, "invalid argument"},
    {BD_EAUTH, 401, "missing or invalid bearer token"},
    {BD_EFORBIDDEN, 403, "not allowed"},
    {BD_EQUOTA, 403, "a quota of this user would be passed"},
    {BD_ENOTFOUND, 404, "not found"},
    {BD_EMETHOD, 405, "method not allowed"},
    {BD_ECONFLICT, 409, "conflict"},
    {BD_ETOOLARGE, 413, "request body too large"},
    {BD_EURI, 414, "the request line is too long"},
    {BD_EHEADERS, 431, "the request headers are too large"},
    {BD_EVERSION, 505, "HTTP version not supported"},
    {BD_ENOTIMPL, 501, "not implemented"},
    {BD_EBUSY, 429, "busy; retry after the time in Retry-After"},
    {BD_EMEDIA, 415, "the body must be application/json"},
    {BD_ESTORAGE, 500, "storage error"},
    {BD_EINTERNAL, 500, "internal error"},
    {BD_EUNAVAILABLE, 503, "the server is shutting down"},
    {BD_EMOVED, 503, "the study moved to another daemon meanwhile; retry"},
    {BD_EFORWARD, 421, "this daemon does not serve the study; look its holder up again"},
    {BD_EWOULDBLOCK, 500, "internal error"}, /* the server runs such a request again instead of sending this */
};
#define N_CODES (sizeof table / sizeof table[0])

static int find(int code)
{
    for (size_t i = 0; i < N_CODES; i++) {
        if (table[i].code == code)
            return (int)i;
    }
    return -1;
}

int bd_api_status(int code)
{
    int i = find(code);
    return i < 0 ? 500 : table[i].status;
}

/* A JSON string of s; bytes that are not valid UTF-8 (a client's bad path
 * echoed in a message) become '?' rather than losing the whole body. */
static json_t *safe_string(const char *s)
{
    json_t *j = json_string(s);
    char copy[256];
    size_t i;

    if (j)
        return j;
    for (i = 0; s[i] && i < sizeof copy - 1; i++)
        copy[i] = (unsigned char)s[i] < 0x80 ? s[i] : '?';
    copy[i] = '\0';
    return json_string(copy);
}

json_t *bd_api_error_json(const bd_err *err)
{
    int i = find(err->code);
    const char *message = err->message[0] ? err->message : i >= 0 ? table[i].message : "internal error";
    json_t *body = json_object(), *e = json_object();

    json_object_set_new(e, "code", json_string(bd_err_name(i >= 0 ? err->code : BD_EINTERNAL)));
    json_object_set_new(e, "message", safe_string(message));
    json_object_set_new(e, "field", err->field[0] ? safe_string(err->field) : json_null());
    if ((err->code == BD_EBUSY || err->code == BD_EMOVED) && err->retry_after > 0)
        json_object_set_new(e, "retry_after_seconds", json_integer(err->retry_after));
    json_object_set_new(body, "error", e);
    return body;
}

void bd_api_error_response(bd_http_resp *resp, const bd_err *err)
{
    int close = resp->close;
    char allow[sizeof resp->allow];

    memcpy(allow, resp->allow, sizeof allow);
    bd_http_resp_clear(resp);
    resp->close = close;
    resp->status = bd_api_status(err->code);
    resp->json = bd_api_error_json(err);
    resp->www_authenticate = resp->status == 401;
    /* 429, and 503 "moved" (cluster mode: a peer serves the study). */
    resp->retry_after = (resp->status == 429 || err->code == BD_EMOVED) && err->retry_after > 0 ? err->retry_after : 0;
    resp->err_code = find(err->code) >= 0 ? err->code : BD_EINTERNAL;
    snprintf(resp->err_message, sizeof resp->err_message, "%s", err->message);
    if (resp->status == 405)
        memcpy(resp->allow, allow, sizeof allow);
}
