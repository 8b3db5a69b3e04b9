/* Prometheus metrics: counters by route pattern, method and status; the
 * unmatched label; cumulative histogram buckets; engine gauges; connection
 * gauge and counters; counting from many threads at once. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "api/metrics.h"
#include "api/router.h"

static bd_metrics *fresh(size_t *suggest_id)
{
    size_t n, i;
    const bd_route *t = bd_routes(&n);

    for (i = 0; i < n && strcmp(t[i].pattern, "/v1/studies/{id}/suggest") != 0; i++)
        ;
    cr_assert_lt(i, n, "no suggest route");
    *suggest_id = i;
    return bd_metrics_new(t, n);
}

static char *render(bd_metrics *m)
{
    bd_engine_stats stats = {.studies = 4, .trials = {3, 10, 2, 1, 0}};
    size_t len;
    char *text = bd_metrics_render(m, &stats, &len);

    cr_assert_eq(strlen(text), len);
    return text;
}

Test(metrics, counts_by_route_pattern_method_and_status)
{
    size_t sid;
    bd_metrics *m = fresh(&sid);
    char *text;

    for (int i = 0; i < 3; i++)
        bd_metrics_observe(m, (int)sid, BD_HTTP_POST, 200, 0.0002);
    bd_metrics_observe(m, (int)sid, BD_HTTP_POST, 409, 0.003);
    bd_metrics_observe(m, -1, BD_HTTP_GET, 404, 0.0001);
    bd_metrics_observe(m, -1, BD_HTTP_OTHER, 418, 0.0001);
    text = render(m);
    cr_expect(
        strstr(text,
               "banditd_http_requests_total{route=\"/v1/studies/{id}/suggest\",method=\"POST\",status=\"200\"} 3\n"),
        "%s", text);
    cr_expect(strstr(
        text, "banditd_http_requests_total{route=\"/v1/studies/{id}/suggest\",method=\"POST\",status=\"409\"} 1\n"));
    cr_expect(strstr(text, "banditd_http_requests_total{route=\"unmatched\",method=\"GET\",status=\"404\"} 1\n"));
    cr_expect(strstr(text, "banditd_http_requests_total{route=\"unmatched\",method=\"OTHER\",status=\"other\"} 1\n"));
    cr_expect_null(strstr(text, "status=\"201\""), "zero series are not printed");
    cr_expect(strstr(text, "# TYPE banditd_http_requests_total counter\n"));
    free(text);
    bd_metrics_free(m);
}

Test(metrics, histogram_buckets_are_cumulative)
{
    size_t sid;
    bd_metrics *m = fresh(&sid);
    char *text;
    const char *p = "banditd_http_request_duration_seconds";
    char want[256];

    bd_metrics_observe(m, (int)sid, BD_HTTP_POST, 200, 0.0004); /* le 0.0005 */
    bd_metrics_observe(m, (int)sid, BD_HTTP_POST, 200, 0.002);  /* le 0.0025 */
    bd_metrics_observe(m, (int)sid, BD_HTTP_POST, 200, 7.0);    /* +Inf only */
    text = render(m);
#define LINE(suffix, value)                                                                                            \
    snprintf(want, sizeof want, "%s%s %s\n", p, suffix, value);                                                        \
    cr_expect(strstr(text, want), "missing: %s", want)
    LINE("_bucket{route=\"/v1/studies/{id}/suggest\",method=\"POST\",le=\"0.0005\"}", "1");
    LINE("_bucket{route=\"/v1/studies/{id}/suggest\",method=\"POST\",le=\"0.001\"}", "1");
    LINE("_bucket{route=\"/v1/studies/{id}/suggest\",method=\"POST\",le=\"0.0025\"}", "2");
    LINE("_bucket{route=\"/v1/studies/{id}/suggest\",method=\"POST\",le=\"5\"}", "2");
    LINE("_bucket{route=\"/v1/studies/{id}/suggest\",method=\"POST\",le=\"+Inf\"}", "3");
    LINE("_count{route=\"/v1/studies/{id}/suggest\",method=\"POST\"}", "3");
    LINE("_sum{route=\"/v1/studies/{id}/suggest\",method=\"POST\"}", "7.002400");
#undef LINE
    cr_expect(strstr(text, "# TYPE banditd_http_request_duration_seconds histogram\n"));
    free(text);
    bd_metrics_free(m);
}

Test(metrics, engine_gauges)
{
    size_t sid;
    bd_metrics *m = fresh(&sid);
    char *text = render(m);

    cr_expect(strstr(text, "# TYPE banditd_studies gauge\nbanditd_studies 4\n"), "%s", text);
    cr_expect(strstr(text, "banditd_trials{state=\"running\"} 3\n"));
    cr_expect(strstr(text, "banditd_trials{state=\"completed\"} 10\n"));
    cr_expect(strstr(text, "banditd_trials{state=\"stopped\"} 2\n"));
    cr_expect(strstr(text, "banditd_trials{state=\"failed\"} 1\n"));
    cr_expect(strstr(text, "banditd_trials{state=\"expired\"} 0\n"));
    free(text);
    bd_metrics_free(m);
}

Test(metrics, connection_gauge_and_counters)
{
    size_t sid;
    bd_metrics *m = fresh(&sid);
    char *text = render(m);

    cr_expect(strstr(text, "# TYPE banditd_http_connections_open gauge\nbanditd_http_connections_open 0\n"), "%s",
              text);
    cr_expect(strstr(text, "banditd_http_connections_refused_total 0\n"));
    cr_expect(strstr(text, "banditd_http_header_timeouts_total 0\n"));
    free(text);
    bd_metrics_connection(m, BD_CONN_OPENED, 5);
    bd_metrics_connection(m, BD_CONN_CLOSED, 2);
    bd_metrics_connection(m, BD_CONN_REFUSED, 1);
    bd_metrics_connection(m, BD_CONN_REFUSED, 1);
    bd_metrics_connection(m, BD_CONN_HEADER_TIMEOUT, 7);
    text = render(m);
    cr_expect(strstr(text, "banditd_http_connections_open 3\n"), "%s", text);
    cr_expect(strstr(text, "# TYPE banditd_http_connections_refused_total counter\n"
                           "banditd_http_connections_refused_total 2\n"));
    cr_expect(
        strstr(text, "# TYPE banditd_http_header_timeouts_total counter\nbanditd_http_header_timeouts_total 7\n"));
    free(text);
    bd_metrics_free(m);
}

static bd_metrics *shared;
static int shared_id;

static void *hammer(void *arg)
{
    (void)arg;
    for (int i = 0; i < 100000; i++)
        bd_metrics_observe(shared, shared_id, BD_HTTP_POST, 200, 0.001);
    return NULL;
}

Test(metrics, concurrent_observations_are_not_lost)
{
    size_t sid;
    pthread_t th[4];
    char *text;

    shared = fresh(&sid);
    shared_id = (int)sid;
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, hammer, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    text = render(shared);
    cr_expect(strstr(text, "route=\"/v1/studies/{id}/suggest\",method=\"POST\",status=\"200\"} 400000\n"), "%s", text);
    free(text);
    bd_metrics_free(shared);
}
