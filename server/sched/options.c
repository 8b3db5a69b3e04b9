/* options.c: typed reading of a scheduler's "options" object with defaults
 * and ranges, so every scheduler rejects bad options the same way (400 with
 * field "scheduler.options.<key>"). */
#include "sched.h"

#include "../json_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIELD_FMT "scheduler.options.%s"

static void field_of(char *buf, size_t n, const char *key)
{
    snprintf(buf, n, FIELD_FMT, key);
}

int bd_opt_number(const json_t *opts, const char *key, double dflt, double lo, double hi, double *out,
                  bd_err *err)
{
    char field[128];
    const json_t *v = json_object_get(opts, key);
    field_of(field, sizeof field, key);
    if (!v || json_is_null(v)) {
        *out = dflt;
        return 0;
    }
    if (!json_is_number(v))
        return bd_err_set(err, BD_EINVAL, field, "must be a number");
    double x = json_number_value(v);
    if (!isfinite(x) || x < lo || x > hi)
        return bd_err_set(err, BD_EINVAL, field, "must be between %g and %g (got %g)", lo, hi, x);
    *out = x;
    return 0;
}

int bd_opt_int(const json_t *opts, const char *key, long long dflt, long long lo, long long hi, long long *out,
               bd_err *err)
{
    char field[128];
    const json_t *v = json_object_get(opts, key);
    field_of(field, sizeof field, key);
    if (!v || json_is_null(v)) {
        *out = dflt;
        return 0;
    }
    long long x;
    if (json_is_integer(v))
        x = json_integer_value(v);
    else if (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)) &&
             fabs(json_real_value(v)) < 9e15)
        x = (long long)json_real_value(v);
    else
        return bd_err_set(err, BD_EINVAL, field, "must be an integer");
    if (x < lo || x > hi)
        return bd_err_set(err, BD_EINVAL, field, "must be between %lld and %lld (got %lld)", lo, hi, x);
    *out = x;
    return 0;
}

int bd_opt_bool(const json_t *opts, const char *key, int dflt, int *out, bd_err *err)
{
    char field[128];
    const json_t *v = json_object_get(opts, key);
    field_of(field, sizeof field, key);
    if (!v || json_is_null(v)) {
        *out = dflt;
        return 0;
    }
    if (!json_is_boolean(v))
        return bd_err_set(err, BD_EINVAL, field, "must be true or false");
    *out = json_is_true(v);
    return 0;
}

int bd_opt_string(const json_t *opts, const char *key, const char *dflt, const char *const *allowed,
                  const char **out, bd_err *err)
{
    char field[128];
    const json_t *v = json_object_get(opts, key);
    field_of(field, sizeof field, key);
    if (!v || json_is_null(v)) {
        *out = dflt;
        return 0;
    }
    if (!json_is_string(v))
        return bd_err_set(err, BD_EINVAL, field, "must be a string");
    const char *s = json_string_value(v);
    if (allowed) {
        char list[200] = "";
        for (const char *const *a = allowed; *a; a++) {
            if (strcmp(*a, s) == 0) {
                *out = s;
                return 0;
            }
            if (strlen(list) + strlen(*a) + 3 < sizeof list)
                strcat(strcat(list, list[0] ? ", " : ""), *a);
        }
        return bd_err_set(err, BD_EINVAL, field, "must be one of: %s", list);
    }
    *out = s;
    return 0;
}

int bd_opt_known(const json_t *opts, const char *const *known, bd_err *err)
{
    return bd_json_reject_unknown(opts, "scheduler.options", known, err);
}

static int text_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int bd_opt_config_list(const json_t *list, const bd_space *space, size_t max, bd_err *err)
{
    size_t n = json_array_size(list);
    if (!json_is_array(list) || n == 0 || n > max)
        return bd_err_set(err, BD_EINVAL, "scheduler.options.configs", "must be a list of 1 to %zu configs", max);
    char **texts = bd_xcalloc(n, sizeof *texts);
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        const json_t *c = json_array_get(list, i);
        bd_err why;
        if (!json_is_object(c) || bd_space_validate_config(space, c, &why))
            rc = bd_err_set(err, BD_EINVAL, "scheduler.options.configs", "configs[%zu] is not a config of the space%s%s",
                            i, json_is_object(c) ? ": " : "", json_is_object(c) ? why.message : "");
        else {
            json_t *canonical = bd_space_canonical_config(space, c); /* {"n": 2.0} repeats {"n": 2} */
            texts[i] = json_dumps(canonical, JSON_COMPACT | JSON_SORT_KEYS);
            json_decref(canonical);
        }
    }
    if (!rc) { /* repeats: the canonical texts, sorted, side by side */
        qsort(texts, n, sizeof *texts, text_cmp);
        for (size_t i = 1; i < n && !rc; i++)
            if (strcmp(texts[i - 1], texts[i]) == 0)
                rc = bd_err_set(err, BD_EINVAL, "scheduler.options.configs", "lists the config %s twice", texts[i]);
    }
    for (size_t i = 0; i < n; i++)
        free(texts[i]);
    free(texts);
    return rc;
}
