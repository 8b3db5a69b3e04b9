/* engine_state.c: the accessors of struct bd_engine (engine_state.h), for
 * every engine file (engine_internal.h). Each reads one field and calls
 * nothing, so this file is below every other file of the engine: calling
 * an accessor never runs code above the caller (test_engine_layering.py
 * checks it). engine.c builds the struct (bd_engine_open) and frees it. */
#include "engine_state.h"

bd_store *bd_engine_store(bd_engine *e)
{
    return e->store;
}

bd_registry *bd_engine_registry(bd_engine *e)
{
    return e->registry;
}

bd_auth_cache *bd_engine_auth_cache(bd_engine *e)
{
    return e->auth;
}

double bd_engine_default_lease(bd_engine *e)
{
    return e->default_lease;
}

bd_user_slots *bd_engine_user_slots(bd_engine *e)
{
    return &e->user_slots;
}

int64_t bd_engine_default_max_studies(bd_engine *e)
{
    return e->max_studies;
}

int64_t bd_engine_default_max_definition_bytes(bd_engine *e)
{
    return e->max_definition_bytes;
}

int bd_engine_closing(bd_engine *e)
{
    return atomic_load(&e->closing);
}
