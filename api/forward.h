/* forward.h: cluster mode (server/README.md "Several daemons"): a request
 * for a study a peer daemon holds is sent to that peer, one hop, over a
 * kept-alive connection, and the peer's answer is returned as is.
 *
 * The forwarded request carries the client's method, path and query,
 * Authorization, Content-Type, Idempotency-Key, If-None-Match and body, and
 * the header Banditd-Forwarded-To naming the daemon id it is meant for. A
 * daemon receiving that header never forwards again: a request meant for
 * another id (the peer's address now serves a restarted daemon) or for a
 * study it no longer holds is answered 421 "misdirected" (field "daemon" or
 * "study"), and the sender looks the owner up again. */
#ifndef BD_API_FORWARD_H
#define BD_API_FORWARD_H

#include <stdint.h>

#include "http.h"

#define BD_FORWARD_HEADER "Banditd-Forwarded-To"

/* What bd_api_forward found. */
enum {
    BD_FORWARD_ANSWERED = 0, /* resp holds the peer's answer */
    BD_FORWARD_GONE = 1,     /* the peer did not take the request (no connection, or another daemon at its
                                address): nothing was done there */
    BD_FORWARD_STALE = 2     /* the peer no longer holds the study: nothing was done there */
};

/* Once per process, before the first forward (libcurl's global state). */
void bd_api_forward_init(void);

/* Sends req to the daemon daemon_id at base_url ("http://host:port",
 * borrowed) and fills resp with its answer. Returns a BD_FORWARD_* value, or
 * BD_EUNAVAILABLE with err set when the request was sent but no answer came
 * back (it may have run there; a retry with its Idempotency-Key is safe). */
int bd_api_forward(const bd_http_req *req, int64_t daemon_id, const char *base_url, bd_http_resp *resp, bd_err *err);

/* GET path (borrowed) from the daemon daemon_id at base_url, as a request
 * forwarded with the client's authorization (borrowed): BD_FORWARD_ANSWERED
 * with *status and *out (new: the JSON body; NULL when not JSON), or as
 * bd_api_forward. */
int bd_api_forward_get(const char *authorization, int64_t daemon_id, const char *base_url, const char *path,
                       int *status, json_t **out, bd_err *err);

#endif
