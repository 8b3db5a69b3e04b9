/* attrs.c: validation and merge of study metadata and trial user_attrs
 * (see attrs.h). Pure functions over jansson values. */
#include "attrs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The compact text of obj (new); its length in *len. */
static char *dump(const json_t *obj, size_t *len)
{
    char *text = json_dumps(obj, JSON_COMPACT);
    if (!text) /* only out of memory: every value the body parser accepts dumps */
        abort();
    *len = strlen(text);
    return text;
}

/* Checks keys and count of obj; its size is the caller's. */
static int check_keys(const json_t *obj, const char *field, bd_err *err)
{
    const char *key;
    json_t *v;
    if (json_object_size(obj) > BD_ATTRS_MAX_KEYS)
        return bd_err_set(err, BD_EINVAL, field, "at most %d keys (it would have %zu)", BD_ATTRS_MAX_KEYS,
                          json_object_size(obj));
    json_object_foreach((json_t *)obj, key, v) {
        size_t n = strlen(key);
        if (n == 0)
            return bd_err_set(err, BD_EINVAL, field, "a key must not be empty");
        if (n > BD_ATTRS_MAX_KEY_BYTES) {
            char name[128];
            /* the field names the key's start: the whole of a long key does not fit */
            snprintf(name, sizeof name, "%s.%.*s", field, BD_ATTRS_MAX_KEY_BYTES, key);
            return bd_err_set(err, BD_EINVAL, name, "a key must be 1 to %d bytes (this one has %zu)",
                              BD_ATTRS_MAX_KEY_BYTES, n);
        }
    }
    return 0;
}

static int check_size(size_t len, const char *field, bd_err *err)
{
    if (len > BD_ATTRS_MAX_BYTES)
        return bd_err_set(err, BD_EINVAL, field, "at most %d bytes of compact JSON (it would have %zu)",
                          BD_ATTRS_MAX_BYTES, len);
    return 0;
}

int bd_attrs_check(const json_t *patch, const char *field, bd_err *err)
{
    size_t len;
    if (!json_is_object(patch))
        return bd_err_set(err, BD_EINVAL, field, "must be a JSON object");
    int rc = check_keys(patch, field, err);
    if (rc)
        return rc;
    char *text = dump(patch, &len);
    free(text);
    return check_size(len, field, err);
}

int bd_attrs_merge(const char *stored, const json_t *patch, const char *field, char **out, bd_err *err)
{
    int rc = bd_attrs_check(patch, field, err);
    if (rc)
        return rc;
    json_t *merged = stored ? json_loads(stored, 0, NULL) : NULL;
    if (!json_is_object(merged)) { /* NULL (none), or a row not written by this file: start afresh */
        json_decref(merged);
        merged = json_object();
    }
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)patch, key, v) {
        if (json_is_null(v))
            json_object_del(merged, key); /* removing a missing key is no error */
        else
            json_object_set(merged, key, v);
    }
    size_t len = 0;
    char *text = NULL;
    if ((rc = check_keys(merged, field, err)) == 0 && json_object_size(merged) > 0) {
        text = dump(merged, &len);
        rc = check_size(len, field, err);
    }
    json_decref(merged);
    if (rc) {
        free(text);
        return rc;
    }
    *out = text;
    return 0;
}

json_t *bd_attrs_json(const char *stored)
{
    json_t *v = stored ? json_loads(stored, 0, NULL) : NULL;
    if (json_is_object(v))
        return v;
    json_decref(v);
    return json_object();
}
