/* metrics.h: request counters and latency histograms for GET /metrics
 * (Prometheus text format 0.0.4).
 *
 * Series are labelled by route pattern (never the raw path, which would let
 * clients create unbounded series), method and status; requests that match
 * no route share route="unmatched". Recording is three relaxed atomic adds
 * into fixed arrays: no lock, no allocation. */
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

/* The exposition text (new, free()), with the engine's gauges from stats;
 * *len receives its length. */
char *bd_metrics_render(const bd_metrics *m, const bd_engine_stats *stats, size_t *len);

#endif
