/* attrs.h: a user's own key/value attributes: a study's "metadata" and a
 * trial's "user_attrs" (issue 17). Both are JSON objects the daemon stores
 * and shows but never interprets, changed by merge patches: a top-level key
 * of the patch replaces the stored one, a null value removes it (nested
 * objects are replaced whole, not merged).
 *
 * Bounds, on the patch and on the merged result alike, so that neither one
 * request nor many small ones grow a row without limit: at most
 * BD_ATTRS_MAX_KEYS keys, each 1..BD_ATTRS_MAX_KEY_BYTES bytes, at most
 * BD_ATTRS_MAX_BYTES of compact JSON. Errors are BD_EINVAL naming field
 * ("metadata") or, for one key, "<field>.<key>". */
#ifndef BD_ATTRS_H
#define BD_ATTRS_H

#include <jansson.h>

#include "common.h"

#define BD_ATTRS_MAX_KEYS 64
#define BD_ATTRS_MAX_KEY_BYTES 64
#define BD_ATTRS_MAX_BYTES 16384

/* Checks patch's shape and bounds (an object; keys and size as above). */
int bd_attrs_check(const json_t *patch, const char *field, bd_err *err) BD_MUST_CHECK;

/* Merges patch (checked here) into stored (JSON object text, or NULL for
 * none) and checks the result. *out is new: the merged object's compact
 * text, or NULL when it is empty (stored as NULL). */
int bd_attrs_merge(const char *stored, const json_t *patch, const char *field, char **out,
                   bd_err *err) BD_MUST_CHECK;

/* The stored text as the API shows it (new): the object, {} for NULL or
 * (never expected) text that is not a JSON object. */
json_t *bd_attrs_json(const char *stored);

#endif
