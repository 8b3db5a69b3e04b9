/* handlers_studies.c: /v1/studies routes. The engine validates meaning;
 * here only the query parameters (their syntax) are checked, and the CSV
 * export is handed to the server as a streamed body. */
#include "handlers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../server/engine_cluster.h"
#include "../server/log.h"
#include "forward.h"

#define TRIALS_LIMIT_DEFAULT 100
#define TRIALS_LIMIT_MAX 1000
#define STUDIES_LIMIT_DEFAULT 100
#define STUDIES_LIMIT_MAX 1000
#define HISTORY_POINTS_DEFAULT 500
#define STUDY_NAME_MAX 200 /* as server/study_def.c */

static int query_int(const bd_http_req *req, const char *name, int64_t lo, int64_t hi, int64_t *out, bd_err *err);

BD_HANDLER(bd_h_create_study)
{
    int loaded = 0;
    int rc = bd_engine_create_study(api->engine, &req->ereq, req->json, &resp->json, &loaded, err);
    if (rc == 0 && loaded)
        resp->status = 200; /* "if_exists": "load" answered an existing study */
    return rc;
}

/* Cluster mode: the entries of page (studies.[]) that a peer holds are
 * stubs {"id", "forward": {"daemon", "url"}} (engine_studies.c); each is
 * replaced by that peer's GET /v1/studies/{id} (its "pareto_front" by
 * "pareto_front_size", as a local entry), or dropped when it answers
 * 404 (deleted meanwhile). 0 done, 1 a peer was gone or no longer held its
 * study (list again), < 0 an error. */
static int fill_from_peers(const bd_api *api, const bd_http_req *req, json_t *page, bd_err *err)
{
    json_t *list = json_object_get(page, "studies");
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *entry = json_array_get(list, i), *fwd = json_object_get(entry, "forward"), *got = NULL;
        if (!fwd)
            continue;
        char path[64];
        int status = 0;
        int64_t peer = json_integer_value(json_object_get(fwd, "daemon"));
        snprintf(path, sizeof path, "/v1/studies/%lld", (long long)json_integer_value(json_object_get(entry, "id")));
        int rc = bd_api_forward_get(req->authorization, peer, json_string_value(json_object_get(fwd, "url")), path,
                                    &status, &got, err);
        if (rc == BD_FORWARD_GONE)
            bd_engine_peer_gone(api->engine, peer);
        else if (rc == BD_FORWARD_STALE)
            bd_engine_forget_holder(api->engine, json_integer_value(json_object_get(entry, "id")));
        if (rc != BD_FORWARD_ANSWERED)
            return rc < 0 ? rc : 1;
        if (status == 404) {
            json_decref(got);
            json_array_remove(list, i--);
            continue;
        }
        if (status != 200 || !got) {
            json_decref(got);
            return bd_err_set(err, BD_EUNAVAILABLE, NULL, "the daemon holding study %s answered %d; retry",
                              path + 12, status);
        }
        json_t *front = json_object_get(got, "pareto_front"); /* a listing's entry carries the front's size only */
        if (json_is_array(front)) {
            json_object_set_new(got, "pareto_front_size", json_integer((json_int_t)json_array_size(front)));
            json_object_del(got, "pareto_front");
        }
        json_array_set_new(list, i, got);
    }
    return 0;
}

BD_HANDLER(bd_h_list_studies)
{
    int present;
    bd_study_query q = {.after = 0, .limit = STUDIES_LIMIT_DEFAULT};
    int rc = query_int(req, "after", 0, INT64_MAX, &q.after, err);
    if (rc == 0)
        rc = query_int(req, "limit", 1, STUDIES_LIMIT_MAX, &q.limit, err);
    if (rc < 0)
        return rc;
    q.name = bd_http_query(req, "name", &present);
    if (present && (!q.name || !*q.name || strlen(q.name) > STUDY_NAME_MAX))
        return bd_err_set(err, BD_EINVAL, "name", "query parameter name must be a study name of 1 to %d bytes",
                          STUDY_NAME_MAX);
    for (int tries = 0;; tries++) {
        if ((rc = bd_engine_list_studies(api->engine, &req->caller, &q, &resp->json, err)) != 0)
            return rc;
        if ((rc = fill_from_peers(api, req, resp->json, err)) <= 0)
            return rc;
        json_decref(resp->json);
        resp->json = NULL;
        if (tries == 3) {
            rc = bd_err_set(err, BD_EMOVED, "study", "studies of this page moved between daemons; retry");
            err->retry_after = 1;
            return rc;
        }
    }
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

BD_HANDLER(bd_h_add_trial)
{
    return bd_engine_add_trial(api->engine, &req->ereq, req->params.v[0].num, req->json, &resp->json, err);
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

/* The state and instance filters of the trial listing and the export. */
static int trial_filters(const bd_http_req *req, const char **state, int64_t *instance, bd_err *err)
{
    static const char *const states[] = {"running", "completed", "stopped", "failed", "expired"};
    int present, known = 0;
    *state = bd_http_query(req, "state", &present);
    *instance = -1;
    if (present) {
        for (size_t i = 0; *state && i < sizeof states / sizeof states[0]; i++)
            known |= strcmp(*state, states[i]) == 0;
        if (!known)
            return bd_err_set(err, BD_EINVAL, "state",
                              "query parameter state must be one of running, completed, stopped, failed, expired");
    }
    return query_int(req, "instance", 0, INT64_MAX, instance, err);
}

/* Query parameter name must be absent or one of the words; *which gets its
 * index (0 when absent). */
static int query_word(const bd_http_req *req, const char *name, const char *const *words, int n, int *which,
                      bd_err *err)
{
    int present;
    const char *s = bd_http_query(req, name, &present);
    *which = 0;
    if (!present)
        return 0;
    for (int i = 0; s && i < n; i++)
        if (strcmp(s, words[i]) == 0) {
            *which = i;
            return 0;
        }
    return bd_err_set(err, BD_EINVAL, name, "query parameter %s must be %s%s%s", name, words[0],
                      n > 1 ? " or " : "", n > 1 ? words[1] : "");
}

BD_HANDLER(bd_h_list_trials)
{
    static const char *const includes[] = {"measurements"};
    static const char *const orders[] = {"id", "best"};
    bd_trial_query q = {.limit = TRIALS_LIMIT_DEFAULT};
    int include_present, ignored, order = 0;
    int rc = trial_filters(req, &q.state, &q.instance, err);

    (void)bd_http_query(req, "include", &include_present);
    if (rc == 0)
        rc = query_word(req, "include", includes, 1, &ignored, err);
    q.with_measurements = include_present;
    if (rc == 0)
        rc = query_word(req, "order", orders, 2, &order, err);
    q.best_first = order == 1;
    if (rc == 0)
        rc = query_int(req, "after", 0, INT64_MAX, &q.after, err);
    if (rc == 0)
        rc = query_int(req, "limit", 1, TRIALS_LIMIT_MAX, &q.limit, err);
    if (rc < 0)
        return rc;
    int after_present;
    (void)bd_http_query(req, "after", &after_present);
    if (q.best_first && after_present) /* even after=0: order=best has no pages */
        return bd_err_set(err, BD_EINVAL, "after", "order=best has no cursor (it answers the top trials)");
    return bd_engine_list_trials(api->engine, &req->caller, req->params.v[0].num, &q, &resp->json, err);
}

BD_HANDLER(bd_h_history)
{
    int64_t points = HISTORY_POINTS_DEFAULT;
    int rc = query_int(req, "points", 2, 2000, &points, err);
    if (rc < 0)
        return rc;
    return bd_engine_history(api->engine, &req->caller, req->params.v[0].num, points, &resp->json, err);
}

/* ---- the CSV export, streamed a page of trials at a time ---- */

typedef struct csv_stream {
    bd_csv_export *x;
    const char *text; /* the engine's current part (borrowed from x) */
    size_t len, pos;
} csv_stream;

static long csv_read(void *ctx, char *buf, size_t max)
{
    csv_stream *c = ctx;
    while (c->pos == c->len) {
        bd_err err;
        int rc = bd_engine_csv_next(c->x, &c->text, &c->len, &err);
        if (rc < 0) {
            bd_log(BD_LOG_ERROR, "CSV export cut short: %s", err.message);
            return -1;
        }
        if (rc == 0)
            return 0;
        c->pos = 0;
    }
    size_t n = c->len - c->pos < max ? c->len - c->pos : max;
    memcpy(buf, c->text + c->pos, n);
    c->pos += n;
    return (long)n;
}

static void csv_free(void *ctx)
{
    csv_stream *c = ctx;
    bd_engine_csv_close(c->x);
    free(c);
}

BD_HANDLER(bd_h_trials_csv)
{
    const char *state;
    int64_t instance;
    bd_csv_export *x;
    int64_t id = req->params.v[0].num;
    int rc = trial_filters(req, &state, &instance, err);
    if (rc == 0)
        rc = bd_engine_csv_open(api->engine, &req->caller, id, state, instance, &x, err);
    if (rc < 0)
        return rc;
    csv_stream *c = bd_xcalloc(1, sizeof *c);
    c->x = x;
    resp->stream_read = csv_read;
    resp->stream_free = csv_free;
    resp->stream_ctx = c;
    resp->content_type = "text/csv; charset=utf-8";
    snprintf(resp->disposition, sizeof resp->disposition, "attachment; filename=\"study-%lld-trials.csv\"",
             (long long)id);
    return 0;
}

/* ---- issue 17: pause, resume, metadata ---- */

BD_HANDLER(bd_h_pause_study)
{
    return bd_engine_pause_study(api->engine, &req->ereq, req->params.v[0].num, 1, req->json, &resp->json, err);
}

BD_HANDLER(bd_h_resume_study)
{
    return bd_engine_pause_study(api->engine, &req->ereq, req->params.v[0].num, 0, req->json, &resp->json, err);
}

BD_HANDLER(bd_h_patch_study)
{
    return bd_engine_patch_study(api->engine, &req->ereq, req->params.v[0].num, req->json, &resp->json, err);
}
