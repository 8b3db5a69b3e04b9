/* handlers_studies.c: /v1/studies routes. The engine validates meaning;
 * here only the query parameters of the trial listing are checked. */
#include "handlers.h"

#include <string.h>

#define TRIALS_LIMIT_DEFAULT 100
#define TRIALS_LIMIT_MAX 1000

BD_HANDLER(bd_h_create_study)
{
    return bd_engine_create_study(api->engine, &req->ereq, req->json, &resp->json, err);
}

BD_HANDLER(bd_h_list_studies)
{
    return bd_engine_list_studies(api->engine, &req->caller, &resp->json, err);
}

BD_HANDLER(bd_h_get_study)
{
    return bd_engine_get_study(api->engine, &req->caller, req->params.v[0].num, &resp->json, err);
}

BD_HANDLER(bd_h_delete_study)
{
    return bd_engine_delete_study(api->engine, &req->ereq, req->params.v[0].num, &resp->json, err);
}

BD_HANDLER(bd_h_suggest)
{
    return bd_engine_suggest(api->engine, &req->ereq, req->params.v[0].num, req->json, &resp->json, err);
}

/* Reads query parameter name as an integer in [lo, hi]; *out keeps its
 * default when the parameter is absent. */
static int query_int(const bd_http_req *req, const char *name, int64_t lo, int64_t hi, int64_t *out, bd_err *err)
{
    int present;
    const char *s = bd_http_query(req, name, &present);
    int64_t v = 0;

    if (!present)
        return 0;
    if (!s || !*s || strlen(s) > 19)
        goto bad;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (INT64_MAX - (*s - '0')) / 10)
            goto bad;
        v = v * 10 + (*s - '0');
    }
    if (v < lo || v > hi)
        goto bad;
    *out = v;
    return 0;
bad:
    return bd_err_set(err, BD_EINVAL, name, "query parameter %s must be an integer in %lld..%lld", name, (long long)lo,
                      (long long)hi);
}

BD_HANDLER(bd_h_list_trials)
{
    static const char *const states[] = {"running", "completed", "stopped", "failed", "expired"};
    int present, known = 0;
    const char *state = bd_http_query(req, "state", &present);
    int64_t after = 0, limit = TRIALS_LIMIT_DEFAULT, instance = -1;
    int rc;

    if (present) {
        for (size_t i = 0; state && i < sizeof states / sizeof states[0]; i++)
            known |= strcmp(state, states[i]) == 0;
        if (!known)
            return bd_err_set(err, BD_EINVAL, "state",
                              "query parameter state must be one of running, completed, stopped, failed, expired");
    }
    rc = query_int(req, "after", 0, INT64_MAX, &after, err);
    if (rc == 0)
        rc = query_int(req, "limit", 1, TRIALS_LIMIT_MAX, &limit, err);
    if (rc == 0)
        rc = query_int(req, "instance", 0, INT64_MAX, &instance, err);
    if (rc < 0)
        return rc;
    return bd_engine_list_trials(api->engine, &req->caller, req->params.v[0].num, state, instance, after, limit,
                                 &resp->json, err);
}
