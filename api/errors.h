/* errors.h: the one place that turns a BD_E* code into an HTTP status and
 * the error body {"error": {"code", "message", "field"}}. code is
 * bd_err_name(code); field is null unless the error is about one input. */
#ifndef BD_API_ERRORS_H
#define BD_API_ERRORS_H

#include <jansson.h>

#include "../server/common.h"
#include "http.h"

/* HTTP status of a BD_E* code (500 for unknown codes and BD_OK). */
int bd_api_status(int code);

/* The error body for err (new reference). An empty message becomes a
 * generic one for the code. */
json_t *bd_api_error_json(const bd_err *err);

/* Replaces resp with the error answer for err: status, body,
 * WWW-Authenticate for 401, err_code and err_message for the log. */
void bd_api_error_response(bd_http_resp *resp, const bd_err *err);

#endif
