/* metrics.c: lock-free request metrics and their Prometheus rendering (see metrics.h).
 *
 * Counters live in fixed arrays indexed by (pattern, method, status slot);
 * the histogram keeps per-bucket (not cumulative) counts, summed at render
 * time, and the latency sum in microseconds so it fits an integer atomic. */
#include "metrics.h"

#include <assert.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "router.h"

static const int statuses[] = {200, 201, 400, 401, 403, 404, 405, 409, 413, 415, 500, 503};
#define N_STATUS (sizeof statuses / sizeof statuses[0] + 1) /* the last slot: any other */

static const double bounds[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5};
#define N_BOUNDS (sizeof bounds / sizeof bounds[0])

#define N_ROUTE (BD_ROUTES_MAX + 1) /* the last slot: unmatched */

struct bd_metrics {
    const bd_route *table;
    size_t n;
    atomic_uint_fast64_t requests[N_ROUTE][BD_HTTP_METHOD_COUNT][N_STATUS];
    atomic_uint_fast64_t buckets[N_ROUTE][BD_HTTP_METHOD_COUNT][N_BOUNDS + 1]; /* the last: above 5 s */
    atomic_uint_fast64_t sum_us[N_ROUTE][BD_HTTP_METHOD_COUNT];
    atomic_int_fast64_t conns_open;            /* opened - closed */
    atomic_uint_fast64_t conns_refused;        /* over a connection limit */
    atomic_uint_fast64_t conns_header_timeout; /* headers not complete in time */
};

bd_metrics *bd_metrics_new(const bd_route *table, size_t n)
{
    bd_metrics *m = bd_xcalloc(1, sizeof *m);

    assert(n <= BD_ROUTES_MAX);
    m->table = table;
    m->n = n;
    return m;
}

void bd_metrics_free(bd_metrics *m)
{
    free(m);
}

static size_t status_slot(int status)
{
    for (size_t i = 0; i < N_STATUS - 1; i++) {
        if (statuses[i] == status)
            return i;
    }
    return N_STATUS - 1;
}

void bd_metrics_observe(bd_metrics *m, int pattern_id, bd_http_method method, int status, double seconds)
{
    size_t r = pattern_id >= 0 && (size_t)pattern_id < m->n ? (size_t)pattern_id : BD_ROUTES_MAX;
    size_t b = 0;

    if ((unsigned)method >= BD_HTTP_METHOD_COUNT)
        method = BD_HTTP_OTHER;
    if (seconds < 0)
        seconds = 0;
    while (b < N_BOUNDS && seconds > bounds[b])
        b++;
    atomic_fetch_add_explicit(&m->requests[r][method][status_slot(status)], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->buckets[r][method][b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->sum_us[r][method], (uint_fast64_t)(seconds * 1e6 + 0.5), memory_order_relaxed);
}

void bd_metrics_connection(bd_metrics *m, bd_conn_event ev, unsigned n)
{
    switch (ev) {
    case BD_CONN_OPENED:
        atomic_fetch_add_explicit(&m->conns_open, (int_fast64_t)n, memory_order_relaxed);
        break;
    case BD_CONN_CLOSED:
        atomic_fetch_sub_explicit(&m->conns_open, (int_fast64_t)n, memory_order_relaxed);
        break;
    case BD_CONN_REFUSED:
        atomic_fetch_add_explicit(&m->conns_refused, n, memory_order_relaxed);
        break;
    case BD_CONN_HEADER_TIMEOUT:
        atomic_fetch_add_explicit(&m->conns_header_timeout, n, memory_order_relaxed);
        break;
    }
}

typedef struct buf {
    char *p;
    size_t len, cap;
} buf;

static void put(buf *b, const char *fmt, ...) BD_PRINTF(2, 3);
static void put(buf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    for (;;) {
        va_start(ap, fmt);
        n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        assert(n >= 0);
        if ((size_t)n < b->cap - b->len)
            break;
        b->cap = 2 * b->cap + (size_t)n;
        b->p = bd_xrealloc(b->p, b->cap);
    }
    b->len += (size_t)n;
}

static const char *route_label(const bd_metrics *m, size_t r)
{
    return r < m->n ? m->table[r].pattern : "unmatched";
}

static uint64_t load(const atomic_uint_fast64_t *a)
{
    return atomic_load_explicit(a, memory_order_relaxed);
}

static void render_requests(const bd_metrics *m, buf *b)
{
    put(b, "# HELP banditd_http_requests_total HTTP requests answered, by route pattern, method and status.\n"
           "# TYPE banditd_http_requests_total counter\n");
    for (size_t r = 0; r < N_ROUTE; r++) {
        for (int meth = 0; meth < BD_HTTP_METHOD_COUNT; meth++) {
            for (size_t s = 0; s < N_STATUS; s++) {
                uint64_t v = load(&m->requests[r][meth][s]);
                char status[8];

                if (!v)
                    continue;
                if (s < N_STATUS - 1)
                    snprintf(status, sizeof status, "%d", statuses[s]);
                else
                    strcpy(status, "other");
                put(b, "banditd_http_requests_total{route=\"%s\",method=\"%s\",status=\"%s\"} %llu\n",
                    route_label(m, r), bd_http_method_name((bd_http_method)meth), status, (unsigned long long)v);
            }
        }
    }
}

static void render_latency(const bd_metrics *m, buf *b)
{
    put(b, "# HELP banditd_http_request_duration_seconds Time from request headers to queued response.\n"
           "# TYPE banditd_http_request_duration_seconds histogram\n");
    for (size_t r = 0; r < N_ROUTE; r++) {
        for (int meth = 0; meth < BD_HTTP_METHOD_COUNT; meth++) {
            const char *route = route_label(m, r), *method = bd_http_method_name((bd_http_method)meth);
            uint64_t cum = 0, counts[N_BOUNDS + 1];

            for (size_t i = 0; i <= N_BOUNDS; i++) {
                counts[i] = load(&m->buckets[r][meth][i]);
                cum += counts[i];
            }
            if (!cum)
                continue;
            cum = 0;
            for (size_t i = 0; i < N_BOUNDS; i++) {
                cum += counts[i];
                put(b, "banditd_http_request_duration_seconds_bucket{route=\"%s\",method=\"%s\",le=\"%g\"} %llu\n",
                    route, method, bounds[i], (unsigned long long)cum);
            }
            cum += counts[N_BOUNDS];
            put(b, "banditd_http_request_duration_seconds_bucket{route=\"%s\",method=\"%s\",le=\"+Inf\"} %llu\n", route,
                method, (unsigned long long)cum);
            put(b, "banditd_http_request_duration_seconds_sum{route=\"%s\",method=\"%s\"} %.6f\n", route, method,
                (double)load(&m->sum_us[r][meth]) / 1e6);
            put(b, "banditd_http_request_duration_seconds_count{route=\"%s\",method=\"%s\"} %llu\n", route, method,
                (unsigned long long)cum);
        }
    }
}

char *bd_metrics_render(const bd_metrics *m, const bd_engine_stats *stats, size_t *len)
{
    static const char *const states[5] = {"running", "completed", "stopped", "failed", "expired"};
    buf b = {bd_xmalloc(8192), 0, 8192};

    render_requests(m, &b);
    render_latency(m, &b);
    put(&b,
        "# HELP banditd_http_connections_open HTTP connections open now.\n"
        "# TYPE banditd_http_connections_open gauge\nbanditd_http_connections_open %lld\n"
        "# HELP banditd_http_connections_refused_total Connections closed on arrival: their address (or the server) "
        "was at its connection limit.\n"
        "# TYPE banditd_http_connections_refused_total counter\nbanditd_http_connections_refused_total %llu\n"
        "# HELP banditd_http_header_timeouts_total Connections closed because their request headers were not "
        "complete within the header timeout.\n"
        "# TYPE banditd_http_header_timeouts_total counter\nbanditd_http_header_timeouts_total %llu\n",
        (long long)atomic_load_explicit(&m->conns_open, memory_order_relaxed),
        (unsigned long long)load(&m->conns_refused), (unsigned long long)load(&m->conns_header_timeout));
    put(&b, "# HELP banditd_studies Studies in the database.\n# TYPE banditd_studies gauge\nbanditd_studies %lld\n",
        (long long)stats->studies);
    put(&b, "# HELP banditd_studies_loaded Studies whose scheduler is in memory (the study cache).\n"
            "# TYPE banditd_studies_loaded gauge\nbanditd_studies_loaded %lld\n"
            "# HELP banditd_study_cache_bytes Estimated memory of the loaded studies.\n"
            "# TYPE banditd_study_cache_bytes gauge\nbanditd_study_cache_bytes %lld\n"
            "# HELP banditd_study_cache_budget_bytes --study-cache-mb in bytes.\n"
            "# TYPE banditd_study_cache_budget_bytes gauge\nbanditd_study_cache_budget_bytes %lld\n"
            "# HELP banditd_study_loads_total Studies rebuilt from storage on use.\n"
            "# TYPE banditd_study_loads_total counter\nbanditd_study_loads_total %lld\n"
            "# HELP banditd_study_evictions_total Idle studies dropped from memory over the budget.\n"
            "# TYPE banditd_study_evictions_total counter\nbanditd_study_evictions_total %lld\n",
        (long long)stats->studies_loaded, (long long)stats->cache_bytes, (long long)stats->cache_budget,
        (long long)stats->study_loads, (long long)stats->study_evictions);
    put(&b, "# HELP banditd_studies_owned Studies this daemon holds the ownership lease of (cluster mode; else 0).\n"
            "# TYPE banditd_studies_owned gauge\nbanditd_studies_owned %lld\n",
        (long long)stats->studies_owned);
    put(&b, "# HELP banditd_trials Trials in the database, by state.\n# TYPE banditd_trials gauge\n");
    for (int i = 0; i < 5; i++)
        put(&b, "banditd_trials{state=\"%s\"} %lld\n", states[i], (long long)stats->trials[i]);
    put(&b, "# HELP banditd_storage_writable 1 when storage takes writes, 0 while recovering from a failed "
            "commit.\n# TYPE banditd_storage_writable gauge\nbanditd_storage_writable %d\n",
        stats->storage_writable);
    put(&b, "# HELP banditd_storage_commit_failures_total Group commits that failed (disk full, I/O error).\n"
            "# TYPE banditd_storage_commit_failures_total counter\nbanditd_storage_commit_failures_total %lld\n",
        (long long)stats->storage_failures);
    *len = b.len;
    return b.p;
}
