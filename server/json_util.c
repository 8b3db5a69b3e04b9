/* json_util.c: shared JSON member checks (see json_util.h). */
#include "json_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int bd_json_reject_unknown(const json_t *obj, const char *prefix, const char *const *known, bd_err *err)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        const char *const *k = known;
        while (*k && strcmp(*k, key) != 0)
            k++;
        if (!*k) {
            char field[128];
            snprintf(field, sizeof field, "%s%s%s", prefix, *prefix ? "." : "", key);
            return bd_err_set(err, BD_EINVAL, field, "unknown member");
        }
    }
    return 0;
}

long long bd_json_int(const json_t *obj, const char *key, long long dflt)
{
    const json_t *v = json_object_get(obj, key);
    if (json_is_integer(v))
        return json_integer_value(v);
    if (json_is_real(v)) { /* a cast out of long long's range is undefined */
        double d = json_real_value(v);
        return d > -9.2e18 && d < 9.2e18 ? (long long)d : dflt;
    }
    return dflt;
}

char *bd_json_text(const json_t *v)
{
    char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
    if (!text) { /* jansson fails only when malloc does */
        fprintf(stderr, "banditd: out of memory writing a JSON text\n");
        abort();
    }
    return text;
}

json_t *bd_json_from_text(const char *text)
{
    json_error_t error;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &error);
    if (!v) { /* the text is ours: only a failed malloc gets here */
        fprintf(stderr, "banditd: reading a kept JSON text: %s\n", error.text);
        abort();
    }
    return v;
}
