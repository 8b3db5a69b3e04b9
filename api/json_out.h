/* json_out.h: the last touch on a serialized JSON answer. jansson writes
 * every real with 17 significant digits, so a worker that reported 0.3 reads
 * back 0.29999999999999999; this rewrites each real to the shortest of 15, 16
 * or 17 digits that parses back to the same double, so values keep their
 * exact meaning and read as they were sent. */
#ifndef BD_API_JSON_OUT_H
#define BD_API_JSON_OUT_H

#include <stddef.h>

/* Rewrites the reals of the JSON text s[0..n) in place (strings are left
 * alone; a real stays recognisably real, "300.0" not "300") and returns the
 * new length, never more than n. */
size_t bd_json_shorten_reals(char *s, size_t n);

#endif
