/* http.c: small helpers over the MHD-free request and response (see http.h). */
#include "http.h"

#include <stdlib.h>
#include <string.h>

static const char *const method_names[BD_HTTP_METHOD_COUNT] = {
    "GET", "POST", "DELETE", "PUT", "PATCH", "HEAD", "OPTIONS", "OTHER",
};

bd_http_method bd_http_method_parse(const char *name)
{
    for (int m = 0; m < BD_HTTP_OTHER; m++) {
        if (strcmp(name, method_names[m]) == 0)
            return (bd_http_method)m;
    }
    return BD_HTTP_OTHER;
}

const char *bd_http_method_name(bd_http_method m)
{
    return (unsigned)m < BD_HTTP_METHOD_COUNT ? method_names[m] : "OTHER";
}

const char *bd_http_query(const bd_http_req *req, const char *key, int *present)
{
    int found = 0;
    const char *value = req->query ? req->query(req->query_ctx, key, &found) : NULL;

    if (present)
        *present = found;
    return value;
}

void bd_http_resp_clear(bd_http_resp *resp)
{
    json_decref(resp->json);
    free(resp->text);
    if (resp->stream_ctx && resp->stream_free)
        resp->stream_free(resp->stream_ctx);
    free(resp->owned);
    memset(resp, 0, sizeof *resp);
}

int bd_http_resp_add_header(bd_http_resp *resp, const char *name, const char *value)
{
    if (resp->header_count >= BD_RESP_HEADERS_MAX)
        return BD_EINTERNAL;
    resp->headers[resp->header_count].name = name;
    resp->headers[resp->header_count].value = value;
    resp->header_count++;
    return 0;
}
