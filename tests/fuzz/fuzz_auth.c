/* fuzz_auth: the Authorization header through the real dispatch path
 * (api/dispatch.c -> api/auth.c -> bd_engine_authenticate) of GET /v1/me, on
 * one in-memory engine opened at the first input.
 *
 * Input: the header value; "$A", "$B" and "$R" become the admin's, bob's and
 * a revoked token of bob's, so mutations start from tokens that work.
 * Oracles: the answer is 200 or 401 (401 with WWW-Authenticate); a 200 names
 * the user whose token's secret the header carries (so the revoked token,
 * whose secret is neither, never authenticates). */
#include <stdint.h>
#include <string.h>

#include "api/dispatch.h"
#include "fuzz_common.h"

static fuzz_engine fe;
static bd_api api;

/* The secret part (after the last '_') of a token. */
static const char *secret_of(const char *token)
{
    const char *u = strrchr(token, '_');
    return u ? u + 1 : token;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bd_http_req req;
    bd_http_resp resp;
    char *header;

    if (!fe.engine) {
        fuzz_engine_open(&fe);
        api.engine = fe.engine;
    }
    header = fuzz_expand(&fe, (const char *)data, size, 1, 1);
    memset(&req, 0, sizeof req);
    memset(&resp, 0, sizeof resp);
    req.method = BD_HTTP_GET;
    req.method_name = "GET";
    req.path = "/v1/me";
    req.authorization = header;
    bd_api_route(&req);
    bd_api_dispatch(&api, &req, &resp);

    FUZZ_CHECK(resp.status == 200 || resp.status == 401, "status %d (%s) for Authorization: %s", resp.status,
               resp.err_message, header);
    FUZZ_CHECK(resp.json != NULL, "no body");
    fuzz_check_serialization(resp.json);
    if (resp.status == 401) {
        FUZZ_CHECK(resp.www_authenticate, "401 without WWW-Authenticate");
    } else {
        const char *name = json_string_value(json_object_get(resp.json, "name"));
        const char *want = strstr(header, secret_of(fe.admin_token)) ? "admin"
                           : strstr(header, secret_of(fe.bob_token)) ? "bob"
                                                                     : NULL;
        FUZZ_CHECK(want != NULL, "authenticated without a known secret: %s", header);
        FUZZ_CHECK(name && strcmp(name, want) == 0, "authenticated as %s with %s's secret: %s", name ? name : "?", want,
                   header);
    }
    bd_http_resp_clear(&resp);
    free(header);
    return 0;
}
