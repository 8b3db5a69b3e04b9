/* Query parameters of GET /v1/studies/{id}/trials: each bad value is a 400
 * naming the parameter as field, checked before the engine is called (the
 * engine here is NULL, so reaching it would crash the test). */
#include <criterion/criterion.h>
#include <string.h>

#include "api/handlers.h"

/* A query string "k=v&k2&..." parsed on the fly for bd_query_fn. */
static const char *fake_query(void *ctx, const char *key, int *present)
{
    static char value[256];
    const char *q = ctx;
    size_t klen = strlen(key);

    *present = 0;
    while (*q) {
        size_t len = strcspn(q, "&");
        if (strncmp(q, key, klen) == 0 && (q[klen] == '=' || q[klen] == '&' || q[klen] == '\0') && klen <= len) {
            *present = 1;
            if (q[klen] != '=')
                return NULL;
            snprintf(value, sizeof value, "%.*s", (int)(len - klen - 1), q + klen + 1);
            return value;
        }
        q += len + (q[len] == '&');
    }
    return NULL;
}

static void expect_400(const char *query, const char *field)
{
    bd_api api;
    bd_http_req req;
    bd_http_resp resp;
    bd_err err;

    memset(&api, 0, sizeof api);
    memset(&req, 0, sizeof req);
    memset(&resp, 0, sizeof resp);
    bd_err_clear(&err);
    req.params.count = 1;
    req.params.v[0].num = 1;
    req.query = fake_query;
    req.query_ctx = (void *)query;
    cr_expect_eq(bd_h_list_trials(&api, &req, &resp, &err), BD_EINVAL, "?%s accepted", query);
    cr_expect_str_eq(err.field, field, "?%s", query);
    cr_expect(strstr(err.message, field), "?%s: %s", query, err.message);
    cr_expect_null(resp.json);
}

Test(list_trials_query, bad_values_name_their_parameter)
{
    expect_400("limit=0", "limit");
    expect_400("limit=1001", "limit");
    expect_400("limit=-1", "limit");
    expect_400("limit=ten", "limit");
    expect_400("limit=", "limit");
    expect_400("limit", "limit");
    expect_400("limit=5x", "limit");
    expect_400("limit=99999999999999999999", "limit");
    expect_400("after=-1", "after");
    expect_400("after=1.5", "after");
    expect_400("after=9223372036854775808", "after");
    expect_400("state=done", "state");
    expect_400("state=", "state");
    expect_400("state", "state");
    expect_400("state=Running", "state");
    expect_400("x=1&state=running&limit=2000", "limit");
}
