/* engine_txn.c: how a request becomes one transaction: write plans (the
 * writes a scheduler's decision needs, gathered before the storage lock is
 * taken), idempotency keys (a repeated key answers from storage), and the
 * one protocol of a study request, bd_engine_study_op: lock -> replay a
 * repeated key -> decide -> commit -> unlock -> wait until durable, and its
 * form for a request about one trial, bd_engine_with_trial. Calls
 * engine_registry.c, study.c and storage. */
#include "engine.h"
#include "engine_internal.h"
#include "log.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Cluster mode: how often a request is run again after its study moved to a
 * peer between its claim and its commit (then 503 "moved"). */
#define MOVED_RETRIES 8

/* ------------------------------------------------------------- write plans */

void bd_write_plan_clear(bd_write_plan *p)
{
    for (size_t i = 0; i < p->n_owned; i++)
        free(p->owned[i]);
    free(p->owned);
    free(p->inserts);
    free(p->events);
    memset(p, 0, sizeof *p);
}

char *bd_write_plan_own(bd_write_plan *p, char *text)
{
    if (!text)
        return NULL;
    if (p->n_owned == p->cap_owned) {
        p->cap_owned = p->cap_owned ? 2 * p->cap_owned : 4;
        p->owned = bd_xrealloc(p->owned, p->cap_owned * sizeof *p->owned);
    }
    p->owned[p->n_owned++] = text;
    return text;
}

bd_event_row *bd_write_plan_push_event(bd_engine *e, bd_write_plan *p, const bd_event_row *ev)
{
    if (p->n_events == p->cap_events) {
        p->cap_events = p->cap_events ? 2 * p->cap_events : 4;
        p->events = bd_xrealloc(p->events, p->cap_events * sizeof *p->events);
    }
    bd_event_row *row = &p->events[p->n_events++];
    *row = *ev;
    row->id = bd_engine_take_id(e, 1, p);
    return row;
}

void bd_engine_plan_event(bd_engine *e, study_rt *st, bd_write_plan *p, const bd_event_row *ev,
                          const bd_trial_row *t, bd_decision *d)
{
    bd_event_row *row = bd_write_plan_push_event(e, p, ev);
    row->study_id = st->id;
    row->trial_id = t->id;
    bd_event sev = {.type = row->type,
                    .id = row->id,
                    .trial_id = t->id,
                    .config_id = t->config_id,
                    .budget = t->budget,
                    .step = row->step,
                    .timeout = row->timeout,
                    .elapsed_seconds = row->elapsed_seconds};
    double losses[BD_STUDY_MAX_OBJECTIVES]; /* as replay computes them (study.c) */
    bd_study_event_losses(st, row->has_value, row->value, row->values, &sev, losses);
    bd_study_feed(st, &sev, 0, 0, d);
    bd_study_touch(st, row->created_at);
}

/* Writes the plan of a request to study study_id inside the caller's transaction. */
static int apply_plan(bd_engine *e, int64_t study_id, const bd_write_plan *p, bd_err *err)
{
    int rc = 0;
    for (size_t i = 0; !rc && i < p->n_inserts; i++)
        rc = bd_store_trial_insert(bd_engine_store(e), &p->inserts[i], NULL, err);
    for (size_t i = 0; !rc && i < p->n_events; i++)
        rc = bd_store_event_append(bd_engine_store(e), &p->events[i], NULL, err);
    if (!rc && p->finish)
        rc = bd_store_trial_finish(bd_engine_store(e), p->finish, err);
    if (!rc && p->lease_trial)
        rc = bd_store_trial_set_lease(bd_engine_store(e), p->lease_trial, p->lease_until, err);
    if (!rc && p->dequeued)
        rc = bd_store_enqueue_pop(bd_engine_store(e), p->study_id, p->dequeued, err);
    if (!rc && p->enqueue)
        rc = bd_store_enqueue_push(bd_engine_store(e), p->study_id, p->enqueue, bd_now(), err);
    if (!rc && p->write_paused)
        rc = bd_store_study_set_paused(bd_engine_store(e), study_id, p->paused, err);
    if (!rc && p->write_metadata)
        rc = bd_store_study_set_metadata(bd_engine_store(e), study_id, p->metadata, err);
    if (!rc && p->attrs_trial)
        rc = bd_store_trial_set_user_attrs(bd_engine_store(e), p->attrs_trial, p->user_attrs, err);
    if (!rc && p->config_trial)
        rc = bd_store_trial_set_config(bd_engine_store(e), p->config_trial, p->config, err);
    if (!rc && p->definition)
        rc = bd_store_study_set_definition(bd_engine_store(e), study_id, p->definition, err);
    return rc;
}

/* ----------------------------------------------------- transactions + idem */

int bd_engine_durable(bd_engine *e, uint64_t ticket, bd_err *err)
{
    /* A failed batch poisons the store; bd_engine_recover_if_needed sees it
     * through bd_store_failures, before the next request touches a study. */
    return bd_store_wait(bd_engine_store(e), ticket, err);
}

/* Looks req's key up. 1: answered before (*fingerprint_out and *response
 * are new), 0: not found, < 0: error. */
static int idem_lookup(bd_engine *e, const bd_request *req, char **response, bd_err *err)
{
    char *fingerprint = NULL;
    *response = NULL;
    if (!req || !req->idem_key)
        return 0;
    int rc = bd_store_idem_get(bd_engine_store(e), req->caller->user_id, req->idem_key, &fingerprint, response, err);
    if (rc == BD_ENOTFOUND) {
        bd_err_clear(err);
        return 0;
    }
    if (!rc && strcmp(fingerprint, req->fingerprint ? req->fingerprint : "") != 0)
        rc = bd_err_set(err, BD_ECONFLICT, "Idempotency-Key", "this key was already used for a different request");
    free(fingerprint);
    if (rc) {
        free(*response);
        *response = NULL;
        return rc;
    }
    return 1;
}

/* The stored answer of an earlier request, once it is on disk: it may
 * belong to a group commit still in flight. */
static int answer_when_durable(bd_engine *e, char *response, json_t **out, bd_err *err)
{
    int rc = bd_engine_durable(e, bd_store_current_ticket(bd_engine_store(e)), err);
    if (!rc) {
        *out = json_loads(response, 0, NULL);
        rc = *out ? 1 : bd_err_set(err, BD_EINTERNAL, NULL, "stored idempotent response is not JSON");
    }
    free(response);
    return rc;
}

int bd_engine_txn_begin(bd_engine *e, const bd_request *req, json_t **out, bd_err *err)
{
    char *response;
    int rc = bd_store_begin(bd_engine_store(e), err);
    if (rc)
        return rc;
    if ((rc = idem_lookup(e, req, &response, err)) <= 0) {
        if (rc)
            bd_store_rollback(bd_engine_store(e));
        return rc;
    }
    bd_store_rollback(bd_engine_store(e)); /* nothing was written */
    return answer_when_durable(e, response, out, err);
}

int bd_engine_study_replay_answer(bd_engine *e, study_rt *st, const bd_request *req, json_t **out, bd_err *err)
{
    char *response;
    int rc = idem_lookup(e, req, &response, err);
    if (rc == 0)
        return 0;
    bd_engine_unlock_study(e, st);
    return rc < 0 ? rc : answer_when_durable(e, response, out, err);
}

/* Stores the answer under req's key (if any) in the open transaction. */
static int remember_answer(bd_engine *e, const bd_request *req, const json_t *answer, bd_err *err)
{
    if (!req || !req->idem_key)
        return 0;
    char *text = json_dumps(answer, JSON_COMPACT);
    int rc = bd_store_idem_put(bd_engine_store(e), req->caller->user_id, req->idem_key,
                               req->fingerprint ? req->fingerprint : "", text, bd_now(), err);
    free(text);
    /* The key was free when this request looked it up, but a request to
     * another study (its own lock) took it meanwhile. */
    if (rc == BD_ECONFLICT)
        rc = bd_err_set(err, BD_ECONFLICT, "Idempotency-Key", "this key was already used for a different request");
    return rc;
}

int bd_engine_txn_end(bd_engine *e, const bd_request *req, int rc, const json_t *answer, bd_err *err)
{
    uint64_t ticket;
    if (rc || (rc = remember_answer(e, req, answer, err))) {
        bd_store_rollback(bd_engine_store(e));
        return rc;
    }
    if ((rc = bd_store_release(bd_engine_store(e), &ticket, err)))
        return rc;
    return bd_engine_durable(e, ticket, err);
}

int bd_engine_study_commit(bd_engine *e, study_rt *st, const bd_request *req, int rc, const bd_write_plan *plan,
                           const json_t *answer, uint64_t *ticket, bd_err *err)
{
    int nothing_to_write = !plan->n_inserts && !plan->n_events && !plan->finish && !plan->lease_trial &&
                           !plan->write_paused && !plan->write_metadata && !plan->attrs_trial &&
                           !plan->enqueue && !plan->dequeued && !plan->config_trial && !plan->definition &&
                           !(req && req->idem_key);
    if (rc == 0 && nothing_to_write) {
        /* The answer may still rest on earlier requests' released work:
         * answer once that is on disk. */
        *ticket = bd_store_current_ticket(bd_engine_store(e));
        return 0;
    }
    if (rc == 0 && plan->ids_failed)
        rc = bd_err_set(err, BD_ESTORAGE, NULL, "storage: no block of new ids could be taken; retry");
    if (rc == 0 && (rc = bd_store_begin(bd_engine_store(e), err)) == 0) {
        /* Cluster mode: the fence, in the writes' own transaction. */
        if ((!bd_engine_cluster(e) ||
             (rc = bd_store_owner_renew(bd_engine_store(e), st->id, bd_engine_daemon_id(e),
                                        atomic_load(&st->owner_token), bd_engine_owner_lease(e), err)) == 0) &&
            (rc = apply_plan(e, st->id, plan, err)) == 0 && (rc = remember_answer(e, req, answer, err)) == 0)
            rc = bd_store_release(bd_engine_store(e), ticket, err);
        else
            bd_store_rollback(bd_engine_store(e));
    }
    if (rc == BD_EMOVED) { /* a peer took the study: what this daemon decided never happened */
        bd_engine_study_disown(e, st, 0);
        st->dirty = st->meta_dirty = 0;
        return rc;
    }
    if (rc && st->dirty) {
        bd_err reload_err;
        if (bd_study_replay(st, bd_engine_store(e), &reload_err))
            bd_log(BD_LOG_ERROR, "study %lld could not be rebuilt after a failed request: %s",
                   (long long)st->id, reload_err.message);
    }
    st->dirty = 0;
    if (rc && st->meta_dirty) {
        bd_err reload_err;
        if (bd_study_reload_meta(st, bd_engine_store(e), &reload_err)) {
            bd_log(BD_LOG_ERROR, "study %lld's pause, metadata and asked parameters could not be reread after a "
                   "failed request (it is unloaded: the next request reloads it): %s",
                   (long long)st->id, reload_err.message);
            bd_engine_study_unload(e, st);
        }
    }
    st->meta_dirty = 0;
    return rc;
}

int bd_engine_study_op(bd_engine *e, const bd_request *req, int64_t study_id, int flags, bd_study_op_fn op, void *arg,
                       bd_write_plan *plan, json_t **out, bd_err *err)
{
    study_rt *st;
    json_t *answer = NULL;
    uint64_t ticket = 0;
    /* through uint64_t: microseconds of uptime pass UINT_MAX after 71 minutes,
     * and a double out of the target's range is undefined (fuzz_request found it) */
    unsigned seed = (unsigned)(uintptr_t)&st ^ (unsigned)(uint64_t)(bd_monotonic() * 1e6);
    int rc;
    /* Cluster mode: a peer may take the study between this daemon's claim
     * and its commit (BD_EMOVED, nothing written); the request is then run
     * again from the claim, which takes the study back and replays it.
     * Requests through two daemons at once would take it from each other
     * in turn: a random pause, longer each time, lets one of them finish. */
    for (int attempt = 0;; attempt++) {
        rc = req && req->inline_only ? bd_engine_lock_study_now(e, req->caller, study_id, &st, err)
             : flags & BD_OP_NO_WAIT   ? bd_engine_try_lock_study(e, req->caller, study_id, &st, err)
                                       : bd_engine_lock_study(e, req->caller, study_id, &st, err);
        if (rc)
            return rc;
        if ((rc = bd_engine_study_replay_answer(e, st, req, out, err))) /* unlocked st */
            return rc > 0 ? 0 : rc;
        rc = op(e, st, arg, plan, &answer, err);
        rc = bd_engine_study_commit(e, st, req, rc, plan, answer, &ticket, err);
        bd_engine_unlock_study(e, st);
        if (rc != BD_EMOVED || attempt >= MOVED_RETRIES || (flags & BD_OP_NO_WAIT))
            break;
        json_decref(answer);
        answer = NULL;
        bd_write_plan_clear(plan); /* with the texts it owns: the next run plans anew */
        bd_err_clear(err);
        struct timespec pause = {0, (long)(1 + attempt) * (1000000L + (long)(rand_r(&seed) % 4000000))};
        nanosleep(&pause, NULL);
    }
    if (!rc && req && req->defer_durable) {
        if (ticket > *req->defer_durable)
            *req->defer_durable = ticket;
    } else if (!rc)
        rc = bd_engine_durable(e, ticket, err);
    if (rc) {
        json_decref(answer);
        return rc;
    }
    *out = answer;
    return 0;
}

/* ------------------------------------------------- requests about one trial
 * (engine_trials.c's reports, engine_ask.c's parameters) */

static int no_trial(int64_t id, bd_err *err)
{
    return bd_err_set(err, BD_ENOTFOUND, NULL, "no trial %lld", (long long)id);
}

/* What bd_engine_with_trial hands its study operation. */
typedef struct trial_op_call {
    int64_t trial_id;
    bd_trial_op_fn op;
    const void *args;
    bd_trial_row t; /* read under the study's mutex; cleared by bd_engine_with_trial */
} trial_op_call;

static int run_trial_op(bd_engine *e, study_rt *st, void *arg, bd_write_plan *plan, json_t **answer, bd_err *err)
{
    trial_op_call *c = arg;
    bd_store_trial_row_clear(&c->t); /* a cluster retry (BD_EMOVED) reads it again */
    int rc = bd_store_trial_get(bd_engine_store(e), c->trial_id, &c->t, err);
    return rc ? rc : c->op(e, st, &c->t, c->args, plan, answer, err);
}

int bd_engine_with_trial(bd_engine *e, const bd_request *req, int64_t trial_id, int flags, bd_trial_op_fn op,
                         const void *args, json_t **out, bd_err *err)
{
    trial_op_call c = {.trial_id = trial_id, .op = op, .args = args};
    int rc = bd_store_trial_get(bd_engine_store(e), trial_id, &c.t, err);
    if (rc)
        return rc == BD_ENOTFOUND ? no_trial(trial_id, err) : rc;
    int64_t study_id = c.t.study_id; /* a trial never changes study, so this read needs no lock */
    bd_store_trial_row_clear(&c.t);
    bd_write_plan plan = {0};
    rc = bd_engine_study_op(e, req, study_id, flags, run_trial_op, &c, &plan, out, err);
    if (rc == BD_ENOTFOUND) /* another user's trial answers like a missing one */
        rc = no_trial(trial_id, err);
    bd_write_plan_clear(&plan);
    bd_store_trial_row_clear(&c.t);
    return rc;
}

int bd_engine_require_running(const bd_trial_row *t, double now, bd_err *err)
{
    if (t->state != BD_TRIAL_RUNNING)
        return bd_err_set(err, BD_ECONFLICT, NULL, "trial %lld is %s, not running", (long long)t->id,
                          bd_trial_state_name(t->state));
    if (now > t->lease_expires_at)
        return bd_err_set(err, BD_ECONFLICT, NULL,
                          "trial %lld's lease expired %.1f s ago (send heartbeats or measurements more often)",
                          (long long)t->id, now - t->lease_expires_at);
    return 0;
}
