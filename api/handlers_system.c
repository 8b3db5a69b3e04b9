/* handlers_system.c: GET /healthz and GET /metrics, the two routes without
 * authentication. */
#include "handlers.h"

#include "metrics.h"

/* Not ok while storage refuses writes after a failed commit: a load
 * balancer or an orchestrator must see what every POST would answer. */
BD_HANDLER(bd_h_healthz)
{
    (void)req;
    if (api->engine && !bd_engine_healthy(api->engine)) /* unit tests route without an engine */
        return bd_err_set(err, BD_EUNAVAILABLE, NULL, "storage refuses writes: recovering from a failed commit");
    resp->json = json_pack("{s:s}", "status", "ok");
    return 0;
}

BD_HANDLER(bd_h_metrics)
{
    bd_engine_stats stats = {0};

    (void)req;
    (void)err;
    bd_engine_stats_get(api->engine, &stats);
    resp->text = bd_metrics_render(api->metrics, &stats, &resp->text_len);
    resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
    return 0;
}
