/* mhd_errors.h: the answers libmicrohttpd gives by itself, as the daemon's
 * JSON errors {"error": {"code", "message", "field"}} (Content-Type
 * application/json), like every other error answer.
 *
 * libmicrohttpd 0.9.75 (Debian 12) answers some requests before the
 * application sees them, with HTML bodies fixed at its compile time
 * (REQUEST_TOO_BIG, REQUEST_MALFORMED, ... in its connection.c) and no
 * Content-Type: 400 for a malformed request line, header line, chunked
 * body or Content-Length; 413 for a Content-Length or a chunk size past
 * 2^64 - 1; 414 and 431 when the request line or the headers do not fit in
 * the connection's memory (MHD_OPTION_CONNECTION_MEMORY_LIMIT); 505 for an
 * HTTP version other than 1.0 and 1.1; 500 if the application left a body
 * unread. No MHD_OPTION supplies these bodies and no callback sees the
 * answer (the URI log and connection callbacks run before or beside it).
 *
 * The one hook is the dynamic linker: the library queues its error answer
 * through its own exported MHD_queue_response, called through its PLT, so a
 * definition in the daemon (mhd_errors.c) takes those calls; it swaps the
 * HTML response for a JSON one and queues that with libmicrohttpd's real
 * function (found with dlsym(RTLD_NEXT)). The daemon's own answers go
 * straight to the real function (bd_mhd_queue_response) and are never
 * rewritten. tests/integration/test_http.py checks every case on the wire:
 * a libmicrohttpd built to bind its calls internally would fail it.
 *
 * The status is libmicrohttpd's; the error code, field and message come
 * from its HTML body, which the library also logs just before (the
 * external logger hands the line to bd_mhd_errors_note). One 0.9.75 bug
 * needs a way round: an error found in the complete headers (Content-Length,
 * a missing Host) has its status line and headers written twice, so the
 * client would read the second copy as the body. For those the JSON answer
 * is written to the socket directly and libmicrohttpd is told the queueing
 * failed, so it closes the connection (after a shutdown for writing).
 *
 * Not covered, because libmicrohttpd sends no answer at all: a request line
 * without a space ("GARBAGE") is closed silently, and lines of bytes that
 * end at a NUL read as empty lines, so such a request waits for the header
 * deadline (http_server.c) and is closed. A Cookie header that does not fit
 * in the memory left after the other headers gets the 0.9.75 doubled 431. */
#ifndef BD_API_MHD_ERRORS_H
#define BD_API_MHD_ERRORS_H

#include <stdarg.h>
#include <stddef.h>

#include <microhttpd.h>

#include "../server/common.h"

/* What the answer to one connection's error says beyond libmicrohttpd's
 * status and body. */
typedef struct bd_mhd_conn_facts {
    int request_line_parsed; /* the request line of the current request was parsed (MHD's URI callback ran) */
    size_t max_body;         /* the body limit, bytes (--max-body-bytes) */
    size_t header_bytes;     /* MHD_OPTION_CONNECTION_MEMORY_LIMIT: request line and headers fit in less */
} bd_mhd_conn_facts;

/* Fills *facts for conn; runs on the connection's polling thread. */
typedef void (*bd_mhd_facts_fn)(struct MHD_Connection *conn, bd_mhd_conn_facts *facts);

/* Finds libmicrohttpd's MHD_queue_response and sets the facts function
 * (process-wide: every server passes the same one). 0, or BD_EINTERNAL with
 * the reason in err. */
int bd_mhd_errors_install(bd_mhd_facts_fn facts, bd_err *err) BD_MUST_CHECK;

/* Queues one of the daemon's own answers with libmicrohttpd's
 * MHD_queue_response, never rewritten. mr stays the caller's. */
enum MHD_Result bd_mhd_queue_response(struct MHD_Connection *conn, unsigned int status, struct MHD_Response *mr);

/* For the external logger: 1 if fmt is libmicrohttpd's line announcing an
 * error answer (its status and HTML body are then remembered on this
 * thread, for the MHD_queue_response call that follows), else 0. ap is
 * read through a copy. */
int bd_mhd_errors_note(const char *fmt, va_list ap);

/* The JSON error for libmicrohttpd's error answer `status` whose HTML body
 * is mhd_body (NULL when unknown: then by status alone). *direct is set to 1
 * when the answer must bypass libmicrohttpd's queue (the doubled headers
 * above), else 0. Pure; for the tests too. */
void bd_mhd_error_describe(unsigned int status, const char *mhd_body, const bd_mhd_conn_facts *facts, bd_err *err,
                           int *direct);

#endif
