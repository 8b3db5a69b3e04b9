/* handlers_trials.c: /v1/trials/{id} routes, the calls a worker makes
 * while it runs a trial. */
#include "handlers.h"

BD_HANDLER(bd_h_measure)
{
    return bd_engine_measure(api->engine, &req->ereq, req->params.v[0].num, req->json, &resp->json, err);
}

BD_HANDLER(bd_h_ask_parameter)
{
    return bd_engine_ask_parameter(api->engine, &req->ereq, req->params.v[0].num, req->json, &resp->json, err);
}

BD_HANDLER(bd_h_complete)
{
    return bd_engine_complete(api->engine, &req->ereq, req->params.v[0].num, req->json, &resp->json, err);
}

BD_HANDLER(bd_h_fail)
{
    return bd_engine_fail(api->engine, &req->ereq, req->params.v[0].num, req->json, &resp->json, err);
}

BD_HANDLER(bd_h_heartbeat)
{
    return bd_engine_heartbeat(api->engine, &req->ereq, req->params.v[0].num, &resp->json, err);
}

BD_HANDLER(bd_h_get_trial)
{
    return bd_engine_get_trial(api->engine, &req->caller, req->params.v[0].num, &resp->json, err);
}

BD_HANDLER(bd_h_patch_trial)
{
    return bd_engine_patch_trial(api->engine, &req->ereq, req->params.v[0].num, req->json, &resp->json, err);
}
