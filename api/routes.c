/* routes.c: the daemon's route table, the single list of what it serves.
 * api/openapi.yaml documents the same set (tests/unit/test_openapi_routes.c
 * checks they agree). */
#include "handlers.h"
#include "router.h"

#define AUTH BD_ROUTE_AUTH
#define BODY_OPT (BD_ROUTE_AUTH | BD_ROUTE_BODY_OPTIONAL)
#define BODY_REQ (BD_ROUTE_AUTH | BD_ROUTE_BODY_REQUIRED)
#define INLINE BD_ROUTE_INLINE

static const bd_route table[] = {
    {BD_HTTP_GET, "/healthz", bd_h_healthz, 0, 200},
    {BD_HTTP_GET, "/metrics", bd_h_metrics, 0, 200},

    {BD_HTTP_POST, "/v1/studies", bd_h_create_study, BODY_REQ, 201},
    {BD_HTTP_GET, "/v1/studies", bd_h_list_studies, AUTH, 200},
    {BD_HTTP_GET, "/v1/studies/{id}", bd_h_get_study, AUTH, 200},
    {BD_HTTP_DELETE, "/v1/studies/{id}", bd_h_delete_study, AUTH, 200},
    {BD_HTTP_PATCH, "/v1/studies/{id}", bd_h_patch_study, BODY_REQ, 200},
    {BD_HTTP_POST, "/v1/studies/{id}/pause", bd_h_pause_study, BODY_OPT, 200},
    {BD_HTTP_POST, "/v1/studies/{id}/resume", bd_h_resume_study, BODY_OPT, 200},
    {BD_HTTP_POST, "/v1/studies/{id}/suggest", bd_h_suggest, BODY_OPT | INLINE, 200},
    {BD_HTTP_GET, "/v1/studies/{id}/trials", bd_h_list_trials, AUTH, 200},
    {BD_HTTP_POST, "/v1/studies/{id}/trials", bd_h_add_trial, BODY_REQ, 201},
    {BD_HTTP_GET, "/v1/studies/{id}/trials.csv", bd_h_trials_csv, AUTH, 200},
    {BD_HTTP_GET, "/v1/studies/{id}/history", bd_h_history, AUTH, 200},

    {BD_HTTP_GET, "/v1/trials/{id}", bd_h_get_trial, AUTH, 200},
    {BD_HTTP_PATCH, "/v1/trials/{id}", bd_h_patch_trial, BODY_REQ, 200},
    {BD_HTTP_POST, "/v1/trials/{id}/measurements", bd_h_measure, BODY_REQ | INLINE, 200},
    /* not INLINE: a TPE draw over the study's finished trials takes milliseconds */
    {BD_HTTP_POST, "/v1/trials/{id}/parameters", bd_h_ask_parameter, BODY_REQ, 200},
    {BD_HTTP_POST, "/v1/trials/{id}/complete", bd_h_complete, BODY_REQ | INLINE, 200},
    {BD_HTTP_POST, "/v1/trials/{id}/fail", bd_h_fail, BODY_OPT | INLINE, 200},
    {BD_HTTP_POST, "/v1/trials/{id}/heartbeat", bd_h_heartbeat, BODY_OPT | INLINE, 200},

    {BD_HTTP_POST, "/v1/users", bd_h_create_user, BODY_REQ, 201},
    {BD_HTTP_PATCH, "/v1/users/{name}", bd_h_set_user_limits, BODY_REQ, 200},
    {BD_HTTP_POST, "/v1/users/{name}/tokens", bd_h_create_token, BODY_OPT, 201},
    {BD_HTTP_DELETE, "/v1/tokens/{id}", bd_h_revoke_token, AUTH, 200},
    {BD_HTTP_GET, "/v1/me", bd_h_me, AUTH, 200},

    /* a browser opening the daemon's address finds the dashboard */
    {BD_HTTP_GET, "/", bd_h_ui_redirect, 0, 301},
    {BD_HTTP_GET, "/ui", bd_h_ui_redirect, 0, 301},
    {BD_HTTP_GET, "/ui/", bd_h_ui_index, 0, 200},
    {BD_HTTP_GET, "/ui/{file}", bd_h_ui_file, 0, 200},
    {BD_HTTP_GET, "/ui/vendor/{file}", bd_h_ui_vendor_file, 0, 200},
};

_Static_assert(sizeof table / sizeof table[0] <= BD_ROUTES_MAX, "raise BD_ROUTES_MAX");

const bd_route *bd_routes(size_t *count)
{
    *count = sizeof table / sizeof table[0];
    return table;
}

void bd_router_each(void (*fn)(const bd_route *route, void *ctx), void *ctx)
{
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        fn(&table[i], ctx);
}
