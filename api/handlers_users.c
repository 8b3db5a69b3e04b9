/* handlers_users.c: users, tokens and /v1/me. Who may do what (admin, or
 * the user themself) is the engine's decision. */
#include "handlers.h"

BD_HANDLER(bd_h_create_user)
{
    return bd_engine_create_user(api->engine, &req->ereq, req->json, &resp->json, err);
}

BD_HANDLER(bd_h_create_token)
{
    return bd_engine_create_token(api->engine, &req->ereq, req->params.v[0].text, &resp->json, err);
}

BD_HANDLER(bd_h_revoke_token)
{
    return bd_engine_revoke_token(api->engine, &req->ereq, req->params.v[0].num, &resp->json, err);
}

BD_HANDLER(bd_h_set_user_limits)
{
    return bd_engine_set_user_limits(api->engine, &req->ereq, req->params.v[0].text, req->json, &resp->json, err);
}

BD_HANDLER(bd_h_me)
{
    return bd_engine_me(api->engine, &req->caller, &resp->json, err);
}
