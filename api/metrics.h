/* metrics.h: request counters and latency histograms for GET /metrics
 * (Prometheus text format 0.0.4).
 *
 * Series are labelled by route pattern (never the raw path, which would let
 * clients create unbounded series), method and status; requests that match
 * no route share route="unmatched". Recording is three relaxed atomic adds
 * into fixed arrays: no lock, no allocation. Connection events (open
 * connections, refusals, header timeouts) are counted the same way. */
#ifndef BD_API_METRICS_H
#define BD_API_METRICS_H

#include <stddef.h>

#include "../server/engine.h"
#include "http.h"

typedef struct bd_metrics bd_metrics;

/* Counters for the routes of table[0..n) (n <= BD_ROUTES_MAX; table must
 * outlive the metrics). Returns new (bd_metrics_free). */
bd_metrics *bd_metrics_new(const bd_route *table, size_t n);
void bd_metrics_free(bd_metrics *m); /* NULL-safe */

/* Records one answered request. pattern_id: the route table index of its
 * pattern (bd_http_req.pattern_id), -1 when unmatched. Thread-safe. */
void bd_metrics_observe(bd_metrics *m, int pattern_id, bd_http_method method, int status, double seconds);

/* Connection-level events of the HTTP front end. */
typedef enum bd_conn_event {
    BD_CONN_OPENED,        /* a connection was accepted (the open gauge goes up) */
    BD_CONN_CLOSED,        /* an accepted connection ended (the gauge goes down) */
    BD_CONN_REFUSED,       /* closed on arrival: its address or the server was at its connection limit */
    BD_CONN_HEADER_TIMEOUT /* closed because its request headers were not complete in time */
} bd_conn_event;

/* Records n connection events of one kind. Thread-safe, lock-free. */
void bd_metrics_connection(bd_metrics *m, bd_conn_event ev, unsigned n);

/* The exposition text (new, free()), with the engine's gauges from stats;
 * *len receives its length. */
char *bd_metrics_render(const bd_metrics *m, const bd_engine_stats *stats, size_t *len);

#endif
