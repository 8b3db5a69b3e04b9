/* json_util.h: the two JSON checks every layer above storage repeats:
 * rejecting members nobody reads (so a typo is a 400, not a silent default)
 * and reading an integer member with a default; and a compact form for
 * values a scheduler keeps for the life of a study. */
#ifndef BD_JSON_UTIL_H
#define BD_JSON_UTIL_H

#include <jansson.h>

#include "common.h"

/* BD_EINVAL naming the first member of obj not in the NULL-terminated list
 * known; err->field is "<prefix>.<member>", or "<member>" when prefix is "". */
int bd_json_reject_unknown(const json_t *obj, const char *prefix, const char *const *known, bd_err *err)
    BD_MUST_CHECK;

/* The integer value of obj[key] (a real is truncated; one outside long
 * long's range gives dflt), else dflt. */
long long bd_json_int(const json_t *obj, const char *key, long long dflt);

/* A value held for long as compact text (malloc'd; aborts when memory runs
 * out, as bd_xmalloc): a config of two parameters takes ~48 bytes of heap
 * so, ~500 as jansson nodes. Reals keep 17 significant digits, so
 * bd_json_from_text gives back the same doubles; members keep their order. */
char *bd_json_text(const json_t *v);
/* The value of such a text (new reference). Aborts when memory runs out,
 * or on text bd_json_text did not make (a bug, not an input). */
json_t *bd_json_from_text(const char *text);

#endif
