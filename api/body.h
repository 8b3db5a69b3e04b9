/* body.h: request body rules shared by every route that takes JSON.
 *
 * A body is one JSON object (RFC 8259): duplicate keys, NaN, Infinity,
 * trailing bytes, \u0000 and invalid UTF-8 are rejected with a message giving
 * line and column. An empty (or all-whitespace) body means {} where a body is
 * optional. */
#ifndef BD_API_BODY_H
#define BD_API_BODY_H

#include <jansson.h>
#include <stddef.h>

#include "../server/common.h"

/* Whether a Content-Type header value names application/json (media type
 * compared case-insensitively, parameters such as charset ignored). NULL -> 0. */
int bd_api_is_json_media(const char *content_type);

/* Parses buf[0..len) into a JSON object; *out is new. Empty body: {} when
 * !required, else BD_EINVAL. Invalid JSON or a non-object: BD_EINVAL. */
int bd_api_parse_body(const char *buf, size_t len, int required, json_t **out, bd_err *err) BD_MUST_CHECK;

#endif
