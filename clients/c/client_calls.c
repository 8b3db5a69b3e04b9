/* client_calls.c: the C client's API calls: each builds its path, query and
 * JSON body, sends it through bd_client_request / bdc_send, and checks that
 * the answer has the shape api/openapi.yaml promises before handing it back
 * (a missing member is BD_CLIENT_EPROTO, not a crash in the caller). */
#include "client_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Longest path + query the calls build (ids are at most 20 digits; names are
 * escaped, three bytes per byte at worst). */
#define MAX_NAME 1024
#define PATH_CAP (128 + 3 * MAX_NAME)

char *bd_client_escape(const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(s);
    char *out = malloc(3 * n + 1), *p = out;
    if (!out)
        return NULL;
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' ||
            ch == '.' || ch == '_' || ch == '~') {
            *p++ = (char)ch;
        } else {
            *p++ = '%';
            *p++ = hex[ch >> 4];
            *p++ = hex[ch & 15];
        }
    }
    *p = '\0';
    return out;
}

int bd_client_request(bd_client *c, const char *method, const char *path, const json_t *body,
                      const char *idempotency_key, long *status, json_t **answer, bd_client_err *err)
{
    char *data = NULL, *text = NULL;
    size_t len = 0;
    json_error_t jerr;
    int rc;
    if (answer)
        *answer = NULL;
    if (body && !(data = json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY)))
        return bdc_err_set(err, BD_CLIENT_EINVAL, 0, "client_invalid", "body", "the body cannot be encoded");
    rc = bdc_send(c, method, path, data, data ? strlen(data) : 0, idempotency_key, NULL, status, &text, &len, err);
    if (rc || !answer)
        goto out;
    if (len == 0) {
        *answer = json_null();
        goto out;
    }
    if (!(*answer = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr)))
        rc = bdc_err_set(err, BD_CLIENT_EPROTO, status ? *status : 0, "bad_response", NULL,
                         "the answer is not JSON (%s): %.120s", jerr.text, text);
out:
    free(data);
    free(text);
    return rc;
}

/* Sends and requires a JSON object answer with member `need` (NULL: any
 * object). *out: new, or NULL when out is NULL (the answer is dropped). */
static int call(bd_client *c, const char *method, const char *path, const json_t *body, const char *need, json_t **out,
                bd_client_err *err)
{
    json_t *doc = NULL;
    long status = 0;
    int rc;
    if (out)
        *out = NULL;
    if ((rc = bd_client_request(c, method, path, body, NULL, &status, &doc, err)))
        return rc;
    if (!json_is_object(doc) || (need && !json_object_get(doc, need))) {
        json_decref(doc);
        return bdc_err_set(err, BD_CLIENT_EPROTO, status, "bad_response", need,
                           "%s %s: the answer is not an object%s%s", method, path, need ? " with " : "",
                           need ? need : "");
    }
    if (out)
        *out = doc;
    else
        json_decref(doc);
    return 0;
}

static int bad_id(int64_t id, const char *field, bd_client_err *err)
{
    if (id >= 1)
        return 0;
    return bdc_err_set(err, BD_CLIENT_EINVAL, 0, "client_invalid", field, "%s must be >= 1", field);
}

static int no_memory(bd_client_err *err)
{
    return bdc_err_set(err, BD_CLIENT_ENOMEM, 0, "out_of_memory", NULL, "out of memory");
}

/* ------------------------------------------------------------ studies */

int bd_client_create_study(bd_client *c, const json_t *definition, json_t **study, bd_client_err *err)
{
    if (study)
        *study = NULL;
    if (!json_is_object(definition))
        return bdc_err_set(err, BD_CLIENT_EINVAL, 0, "client_invalid", "definition",
                           "the study definition must be a JSON object");
    return call(c, "POST", "/v1/studies", definition, "id", study, err);
}

int bd_client_get_study(bd_client *c, int64_t study_id, json_t **study, bd_client_err *err)
{
    char path[PATH_CAP];
    if (study)
        *study = NULL;
    if (bad_id(study_id, "study_id", err))
        return BD_CLIENT_EINVAL;
    snprintf(path, sizeof path, "/v1/studies/%" PRId64, study_id);
    return call(c, "GET", path, NULL, "id", study, err);
}

int bd_client_list_studies(bd_client *c, int64_t after, int limit, const char *name, json_t **page, bd_client_err *err)
{
    char path[PATH_CAP], *escaped = NULL;
    size_t n;
    int rc;
    if (page)
        *page = NULL;
    if (after < 0)
        return bdc_err_set(err, BD_CLIENT_EINVAL, 0, "client_invalid", "after", "after must be >= 0");
    if (limit < 0 || limit > 1000)
        return bdc_err_set(err, BD_CLIENT_EINVAL, 0, "client_invalid", "limit", "limit must be 0 (default) to 1000");
    if (name && strlen(name) > MAX_NAME)
        return bdc_err_set(err, BD_CLIENT_EINVAL, 0, "client_invalid", "name", "name is over %d bytes", MAX_NAME);
    if (name && !(escaped = bd_client_escape(name)))
        return no_memory(err);
    n = (size_t)snprintf(path, sizeof path, "/v1/studies");
    char sep = '?';
    if (after > 0) {
        n += (size_t)snprintf(path + n, sizeof path - n, "%cafter=%" PRId64, sep, after);
        sep = '&';
    }
    if (limit > 0) {
        n += (size_t)snprintf(path + n, sizeof path - n, "%climit=%d", sep, limit);
        sep = '&';
    }
    if (escaped)
        snprintf(path + n, sizeof path - n, "%cname=%s", sep, escaped);
    free(escaped);
    rc = call(c, "GET", path, NULL, "studies", page, err);
    return rc;
}

int bd_client_delete_study(bd_client *c, int64_t study_id, bd_client_err *err)
{
    char path[PATH_CAP];
    if (bad_id(study_id, "study_id", err))
        return BD_CLIENT_EINVAL;
    snprintf(path, sizeof path, "/v1/studies/%" PRId64, study_id);
    return call(c, "DELETE", path, NULL, NULL, NULL, err);
}

/* ------------------------------------------------------------ trials */

int bd_client_suggest(bd_client *c, int64_t study_id, const char *worker, int count, json_t **answer,
                      bd_client_err *err)
{
    char path[PATH_CAP];
    json_t *body = NULL;
    int rc;
    if (answer)
        *answer = NULL;
    if (bad_id(study_id, "study_id", err))
        return BD_CLIENT_EINVAL;
    if (count < 0 || count > 100)
        return bdc_err_set(err, BD_CLIENT_EINVAL, 0, "client_invalid", "count", "count must be 0 (default) to 100");
    if (!(body = json_object()) || (count > 0 && json_object_set_new(body, "count", json_integer(count)))) {
        json_decref(body);
        return no_memory(err);
    }
    if (worker) {
        json_t *w = json_string(worker); /* NULL when worker is not UTF-8 */
        if (!w || json_object_set_new(body, "worker", w)) {
            json_decref(body);
            return bdc_err_set(err, BD_CLIENT_EINVAL, 0, "client_invalid", "worker", "worker must be UTF-8");
        }
    }
    snprintf(path, sizeof path, "/v1/studies/%" PRId64 "/suggest", study_id);
    rc = call(c, "POST", path, body, "trials", answer, err);
    json_decref(body);
    return rc;
}

/* Adds a number member; non-finite numbers are refused (they are not JSON). */
static int set_number(json_t *obj, const char *key, double v, bd_client_err *err)
{
    if (!isfinite(v))
        return bdc_err_set(err, BD_CLIENT_EINVAL, 0, "client_invalid", key, "%s must be a finite number", key);
    if (json_object_set_new(obj, key, json_real(v)))
        return no_memory(err);
    return 0;
}

int bd_client_report(bd_client *c, int64_t trial_id, double step, double value, double elapsed_seconds, int *stop,
                     bd_client_err *err)
{
    char path[PATH_CAP];
    json_t *body = NULL, *answer = NULL;
    int rc;
    if (stop)
        *stop = 0;
    if ((rc = bad_id(trial_id, "trial_id", err)))
        return rc;
    if (!(body = json_object())) {
        rc = no_memory(err);
        goto out;
    }
    if ((rc = set_number(body, "step", step, err)) || (rc = set_number(body, "value", value, err)) ||
        (elapsed_seconds >= 0 && (rc = set_number(body, "elapsed_seconds", elapsed_seconds, err))))
        goto out;
    snprintf(path, sizeof path, "/v1/trials/%" PRId64 "/measurements", trial_id);
    if ((rc = call(c, "POST", path, body, "action", &answer, err)))
        goto out;
    const char *action = json_string_value(json_object_get(answer, "action"));
    if (action && strcmp(action, "stop") == 0) {
        if (stop)
            *stop = 1;
    } else if (!action || strcmp(action, "continue") != 0) {
        rc = bdc_err_set(err, BD_CLIENT_EPROTO, 200, "bad_response", "action",
                         "action must be \"continue\" or \"stop\"");
    }
out:
    json_decref(body);
    json_decref(answer);
    return rc;
}

int bd_client_complete_ex(bd_client *c, int64_t trial_id, const bd_client_completion *how, json_t **trial,
                          bd_client_err *err)
{
    char path[PATH_CAP];
    json_t *body = NULL;
    int rc;
    if (trial)
        *trial = NULL;
    if ((rc = bad_id(trial_id, "trial_id", err)))
        return rc;
    if (!how)
        return bdc_err_set(err, BD_CLIENT_EINVAL, 0, "client_invalid", "how", "how is required");
    if (!(body = json_object())) {
        rc = no_memory(err);
        goto out;
    }
    switch (how->kind) {
    case BD_CLIENT_DONE_VALUE:
        rc = set_number(body, "value", how->value, err);
        break;
    case BD_CLIENT_DONE_DIVERGED:
        if (json_object_set_new(body, "value", json_null()) ||
            json_object_set_new(body, "reason", json_string(how->reason ? how->reason : "diverged")))
            rc = bdc_err_set(err, BD_CLIENT_EINVAL, 0, "client_invalid", "reason", "reason must be UTF-8");
        break;
    case BD_CLIENT_DONE_TIMEOUT:
        if (json_object_set_new(body, "status", json_string("timeout")))
            rc = no_memory(err);
        break;
    default:
        rc = bdc_err_set(err, BD_CLIENT_EINVAL, 0, "client_invalid", "kind", "kind must be VALUE, DIVERGED or TIMEOUT");
    }
    if (rc)
        goto out;
    if (how->kind != BD_CLIENT_DONE_DIVERGED && how->reason &&
        json_object_set_new(body, "reason", json_string(how->reason))) {
        rc = bdc_err_set(err, BD_CLIENT_EINVAL, 0, "client_invalid", "reason", "reason must be UTF-8");
        goto out;
    }
    if ((how->runtime >= 0 && (rc = set_number(body, "runtime", how->runtime, err))) ||
        (how->elapsed_seconds >= 0 && (rc = set_number(body, "elapsed_seconds", how->elapsed_seconds, err))))
        goto out;
    snprintf(path, sizeof path, "/v1/trials/%" PRId64 "/complete", trial_id);
    rc = call(c, "POST", path, body, "state", trial, err);
out:
    json_decref(body);
    return rc;
}

int bd_client_complete(bd_client *c, int64_t trial_id, double value, bd_client_err *err)
{
    bd_client_completion how = {.kind = BD_CLIENT_DONE_VALUE, .value = value, .runtime = -1, .elapsed_seconds = -1};
    return bd_client_complete_ex(c, trial_id, &how, NULL, err);
}

int bd_client_fail(bd_client *c, int64_t trial_id, const char *reason, bd_client_err *err)
{
    char path[PATH_CAP];
    json_t *body = NULL;
    int rc;
    if ((rc = bad_id(trial_id, "trial_id", err)))
        return rc;
    if (!(body = json_object()))
        return no_memory(err);
    if (reason && json_object_set_new(body, "reason", json_string(reason))) {
        json_decref(body);
        return bdc_err_set(err, BD_CLIENT_EINVAL, 0, "client_invalid", "reason", "reason must be UTF-8");
    }
    snprintf(path, sizeof path, "/v1/trials/%" PRId64 "/fail", trial_id);
    rc = call(c, "POST", path, body, "state", NULL, err);
    json_decref(body);
    return rc;
}

int bd_client_heartbeat(bd_client *c, int64_t trial_id, double *lease_expires_at, bd_client_err *err)
{
    char path[PATH_CAP];
    json_t *body = NULL, *answer = NULL;
    int rc;
    if ((rc = bad_id(trial_id, "trial_id", err)))
        return rc;
    if (!(body = json_object()))
        return no_memory(err);
    snprintf(path, sizeof path, "/v1/trials/%" PRId64 "/heartbeat", trial_id);
    rc = call(c, "POST", path, body, "lease_expires_at", &answer, err);
    if (!rc && lease_expires_at)
        *lease_expires_at = json_number_value(json_object_get(answer, "lease_expires_at"));
    json_decref(body);
    json_decref(answer);
    return rc;
}

int bd_client_get_trial(bd_client *c, int64_t trial_id, json_t **trial, bd_client_err *err)
{
    char path[PATH_CAP];
    if (trial)
        *trial = NULL;
    if (bad_id(trial_id, "trial_id", err))
        return BD_CLIENT_EINVAL;
    snprintf(path, sizeof path, "/v1/trials/%" PRId64, trial_id);
    return call(c, "GET", path, NULL, "id", trial, err);
}

static const char *const trial_states[] = {"running", "completed", "stopped", "failed", "expired", NULL};

/* Appends "<sep>name=value" (value already escaped) to path. */
static void add_query(char *path, size_t cap, size_t *n, const char *name, const char *value)
{
    *n += (size_t)snprintf(path + *n, cap - *n, "%c%s=%s", strchr(path, '?') ? '&' : '?', name, value);
}

int bd_client_list_trials(bd_client *c, int64_t study_id, const bd_client_trial_query *q, json_t **page,
                          bd_client_err *err)
{
    static const bd_client_trial_query none = {0};
    char path[PATH_CAP], num[32];
    size_t n;
    if (page)
        *page = NULL;
    if (bad_id(study_id, "study_id", err))
        return BD_CLIENT_EINVAL;
    if (!q)
        q = &none;
    if (q->state) {
        int known = 0;
        for (int i = 0; trial_states[i]; i++)
            known |= strcmp(q->state, trial_states[i]) == 0;
        if (!known)
            return bdc_err_set(err, BD_CLIENT_EINVAL, 0, "client_invalid", "state",
                               "state must be running, completed, stopped, failed or expired");
    }
    if ((q->has_instance && q->instance < 0) || q->after < 0 || q->limit < 0 || q->limit > 1000)
        return bdc_err_set(err, BD_CLIENT_EINVAL, 0, "client_invalid",
                           q->after < 0                      ? "after"
                           : q->limit < 0 || q->limit > 1000 ? "limit"
                                                             : "instance",
                           "instance and after must be >= 0, limit 0 (default) to 1000");
    n = (size_t)snprintf(path, sizeof path, "/v1/studies/%" PRId64 "/trials", study_id);
    if (q->state)
        add_query(path, sizeof path, &n, "state", q->state);
    if (q->has_instance) {
        snprintf(num, sizeof num, "%" PRId64, q->instance);
        add_query(path, sizeof path, &n, "instance", num);
    }
    if (q->after > 0) {
        snprintf(num, sizeof num, "%" PRId64, q->after);
        add_query(path, sizeof path, &n, "after", num);
    }
    if (q->limit > 0) {
        snprintf(num, sizeof num, "%d", q->limit);
        add_query(path, sizeof path, &n, "limit", num);
    }
    if (q->include_measurements)
        add_query(path, sizeof path, &n, "include", "measurements");
    if (q->order_best)
        add_query(path, sizeof path, &n, "order", "best");
    return call(c, "GET", path, NULL, "trials", page, err);
}

int bd_client_export_csv(bd_client *c, int64_t study_id, FILE *out, bd_client_err *err)
{
    char path[PATH_CAP];
    if (bad_id(study_id, "study_id", err))
        return BD_CLIENT_EINVAL;
    if (!out)
        return bdc_err_set(err, BD_CLIENT_EINVAL, 0, "client_invalid", "out", "out must be an open FILE");
    snprintf(path, sizeof path, "/v1/studies/%" PRId64 "/trials.csv", study_id);
    int rc = bdc_send(c, "GET", path, NULL, 0, NULL, out, NULL, NULL, NULL, err);
    if (!rc && fflush(out) != 0)
        rc = bdc_err_set(err, BD_CLIENT_EIO, 200, "io", "out", "flushing the CSV failed");
    return rc;
}
