/* json_util.h: the two JSON checks every layer above storage repeats:
 * rejecting members nobody reads (so a typo is a 400, not a silent default)
 * and reading an integer member with a default. */
#ifndef BD_JSON_UTIL_H
#define BD_JSON_UTIL_H

#include <jansson.h>

#include "common.h"

/* BD_EINVAL naming the first member of obj not in the NULL-terminated list
 * known; err->field is "<prefix>.<member>", or "<member>" when prefix is "". */
int bd_json_reject_unknown(const json_t *obj, const char *prefix, const char *const *known, bd_err *err)
    BD_MUST_CHECK;

/* The integer value of obj[key] (a whole real is accepted), else dflt. */
long long bd_json_int(const json_t *obj, const char *key, long long dflt);

#endif
