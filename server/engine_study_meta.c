/* engine_study_meta.c: what a person changes about a study besides its
 * definition (issue 17): pausing and resuming it, and its metadata. Each is
 * a study request (bd_engine_study_op): the change is stored in the
 * study's row, durable before the answer, and idempotent under a key. The
 * runtime copy (study_rt paused, metadata) is changed under the study's
 * mutex with meta_dirty set, so a transaction that does not commit is
 * undone by rereading the row (engine_txn.c, and recovery). */
#include "attrs.h"
#include "engine.h"
#include "engine_internal.h"
#include "json_util.h"

#include <stdlib.h>

static int pause_op(bd_engine *e, study_rt *st, void *arg, bd_write_plan *plan, json_t **answer, bd_err *err)
{
    int paused = *(const int *)arg;
    (void)err;
    if (st->paused != paused) { /* pausing a paused study writes nothing */
        st->paused = paused;
        st->meta_dirty = 1;
        plan->write_paused = 1;
        plan->paused = paused;
    }
    *answer = bd_study_json(st, bd_engine_store(e));
    return 0;
}

int bd_engine_pause_study(bd_engine *e, const bd_request *req, int64_t study_id, int paused, const json_t *body,
                          json_t **out, bd_err *err)
{
    static const char *const known[] = {NULL};
    bd_write_plan plan = {0};
    int rc;
    if (body && (rc = bd_json_reject_unknown(body, "", known, err)))
        return rc;
    paused = paused != 0;
    rc = bd_engine_study_op(e, req, study_id, BD_OP_WAIT, pause_op, &paused, &plan, out, err);
    bd_write_plan_clear(&plan);
    return rc;
}

static int metadata_op(bd_engine *e, study_rt *st, void *arg, bd_write_plan *plan, json_t **answer, bd_err *err)
{
    char *merged;
    int rc = bd_attrs_merge(st->metadata, arg, "metadata", &merged, err);
    if (rc)
        return rc;
    free(st->metadata);
    st->metadata = merged; /* the plan borrows it: st->mu is held until the commit */
    st->meta_dirty = 1;
    plan->write_metadata = 1;
    plan->metadata = st->metadata;
    *answer = bd_study_json(st, bd_engine_store(e));
    return 0;
}

int bd_engine_patch_study(bd_engine *e, const bd_request *req, int64_t study_id, const json_t *body, json_t **out,
                          bd_err *err)
{
    static const char *const known[] = {"metadata", NULL};
    const json_t *patch = json_object_get(body, "metadata");
    bd_write_plan plan = {0};
    int rc;
    if ((rc = bd_json_reject_unknown(body, "", known, err)))
        return rc;
    if (!patch)
        return bd_err_set(err, BD_EINVAL, "metadata", "is required: an object of keys to set (null removes one)");
    if ((rc = bd_attrs_check(patch, "metadata", err))) /* before the study's lock: a bad body waits for nothing */
        return rc;
    rc = bd_engine_study_op(e, req, study_id, BD_OP_WAIT, metadata_op, (void *)patch, &plan, out, err);
    bd_write_plan_clear(&plan);
    return rc;
}
