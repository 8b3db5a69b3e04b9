/* store_rows.c: what both backends share about rows: freeing their strings,
 * and the names trial states, origins and event types are stored by (so the
 * enums' order is not part of any database's format). */
#include <stdlib.h>
#include <string.h>

#include "store_ops.h"

void bd_store_study_row_clear(bd_study_row *row)
{
    if (!row)
        return;
    free(row->name);
    free(row->definition);
    free(row->metadata);
    row->name = row->definition = row->metadata = NULL;
}

static const char *const state_names[BD_TRIAL_NSTATES] = {
    [BD_TRIAL_RUNNING] = "running", [BD_TRIAL_COMPLETED] = "completed", [BD_TRIAL_STOPPED] = "stopped",
    [BD_TRIAL_FAILED] = "failed",   [BD_TRIAL_EXPIRED] = "expired",
};

const char *bd_trial_state_name(bd_trial_state st)
{
    return (unsigned)st < BD_TRIAL_NSTATES ? state_names[st] : "unknown";
}

/* Stored as NULL for suggested trials, the common case. */
static const char *const origin_names[] = {
    [BD_ORIGIN_SUGGESTED] = "suggested", [BD_ORIGIN_ENQUEUED] = "enqueued", [BD_ORIGIN_WARM_START] = "warm_start"};

const char *bd_trial_origin_name(bd_trial_origin origin)
{
    return (unsigned)origin <= BD_ORIGIN_WARM_START ? origin_names[origin] : "unknown";
}

bd_trial_origin bd_trial_origin_parse(const char *name)
{
    for (int i = BD_ORIGIN_ENQUEUED; name && i <= BD_ORIGIN_WARM_START; i++)
        if (strcmp(name, origin_names[i]) == 0)
            return (bd_trial_origin)i;
    return BD_ORIGIN_SUGGESTED;
}

int bd_trial_state_parse(const char *name)
{
    for (int i = 0; name && i < BD_TRIAL_NSTATES; i++)
        if (strcmp(name, state_names[i]) == 0)
            return i;
    return -1;
}

void bd_store_trial_row_clear(bd_trial_row *row)
{
    if (!row)
        return;
    free(row->config);
    free(row->extra);
    free(row->worker);
    free(row->reason);
    free(row->instance_name);
    free(row->user_attrs);
    free(row->values);
    row->config = row->extra = row->worker = row->reason = row->instance_name = row->user_attrs = NULL;
    row->values = NULL;
}

static const char *const type_names[] = {
    [BD_EV_CREATED] = "created", [BD_EV_MEASUREMENT] = "measurement", [BD_EV_COMPLETED] = "completed",
    [BD_EV_FAILED] = "failed",   [BD_EV_EXPIRED] = "expired",         [BD_EV_STOPPED] = "stopped",
};
#define NTYPES ((int)(sizeof type_names / sizeof type_names[0]))

int bd_store_event_type_parse(const char *name)
{
    for (int i = 0; name && i < NTYPES; i++)
        if (strcmp(name, type_names[i]) == 0)
            return i;
    return -1;
}

const char *bd_store_event_type_name(int type)
{
    return type >= 0 && type < NTYPES ? type_names[type] : NULL;
}
