/* handlers.h: one function per route (see the table in api/routes.c and
 * api/openapi.yaml). Each runs after bd_api_dispatch has authenticated the
 * caller, parsed the body into req->json and built req->ereq; it checks what
 * only HTTP knows (query parameters), calls one bd_engine_* function and
 * leaves the answer in resp. Signature: bd_handler_fn (http.h). */
#ifndef BD_API_HANDLERS_H
#define BD_API_HANDLERS_H

#include "http.h"

#define BD_HANDLER(name) int name(const bd_api *api, bd_http_req *req, bd_http_resp *resp, bd_err *err)

/* handlers_system.c: no authentication */
BD_HANDLER(bd_h_healthz);
BD_HANDLER(bd_h_metrics);

/* handlers_ui.c: the dashboard's static files, no authentication */
BD_HANDLER(bd_h_ui_redirect);
BD_HANDLER(bd_h_ui_index);
BD_HANDLER(bd_h_ui_file);
BD_HANDLER(bd_h_ui_vendor_file);

/* handlers_studies.c */
BD_HANDLER(bd_h_create_study);
BD_HANDLER(bd_h_list_studies);
BD_HANDLER(bd_h_get_study);
BD_HANDLER(bd_h_delete_study);
BD_HANDLER(bd_h_suggest);
BD_HANDLER(bd_h_add_trial);
BD_HANDLER(bd_h_list_trials);
BD_HANDLER(bd_h_trials_csv);
BD_HANDLER(bd_h_history);
BD_HANDLER(bd_h_pause_study);
BD_HANDLER(bd_h_resume_study);
BD_HANDLER(bd_h_patch_study);

/* handlers_trials.c */
BD_HANDLER(bd_h_measure);
BD_HANDLER(bd_h_ask_parameter);
BD_HANDLER(bd_h_complete);
BD_HANDLER(bd_h_fail);
BD_HANDLER(bd_h_heartbeat);
BD_HANDLER(bd_h_get_trial);
BD_HANDLER(bd_h_patch_trial);

/* handlers_users.c */
BD_HANDLER(bd_h_create_user);
BD_HANDLER(bd_h_create_token);
BD_HANDLER(bd_h_revoke_token);
BD_HANDLER(bd_h_set_user_limits);
BD_HANDLER(bd_h_me);

#endif
