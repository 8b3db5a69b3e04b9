/* engine.c: the engine's lifecycle (open, replay of every study, close), the
 * study registry, the event feed every state change goes through, the
 * transaction + idempotency helpers, and the lease reaper thread.
 *
 * Invariant: a study's scheduler has seen exactly the study's committed
 * events, in order. Live requests feed events inside their transaction; if
 * that transaction does not commit, the study is rebuilt from storage. */
#include "engine_internal.h"
#include "log.h"

#include <gsl/gsl_errno.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---------------------------------------------------------------- registry */

static int ensure_loaded(bd_engine *e, study_rt *st, bd_err *err);
static void cache_trim(bd_engine *e);
static size_t estimate_bytes(size_t definition_bytes, int64_t trials);

study_rt *bd_engine_study(bd_engine *e, int64_t study_id, int64_t user_id)
{
    study_rt *st = NULL;
    pthread_rwlock_rdlock(&e->studies_lock);
    if (study_id > 0 && (size_t)study_id < e->studies_cap)
        st = e->studies[study_id];
    pthread_rwlock_unlock(&e->studies_lock);
    /* deleted is read without st->mu here; callers re-check it under the lock. */
    if (!st || (user_id && st->user_id != user_id))
        return NULL;
    return st;
}

int bd_engine_lock_study(bd_engine *e, const bd_caller *who, int64_t study_id, study_rt **out, bd_err *err)
{
    bd_engine_recover_if_needed(e);
    /* Ownership first: another user's study answers 404 like a missing one,
     * never 429, so a busy gate tells nothing about other users. */
    study_rt *st = bd_engine_study(e, study_id, who->user_id);
    bd_gate_ticket ticket;
    int rc;
    if (st) {
        if ((rc = bd_gate_enter(&st->gate, &e->user_slots, who->user_id, bd_monotonic(), &ticket, err)))
            return rc;
        pthread_mutex_lock(&st->mu);
        if (!st->deleted) {
            if ((rc = ensure_loaded(e, st, err)) != 0) {
                pthread_mutex_unlock(&st->mu);
                bd_gate_cancel(&st->gate, &e->user_slots, &ticket);
                return rc;
            }
            bd_gate_locked(&st->gate, &ticket, bd_monotonic());
            *out = st;
            return 0;
        }
        pthread_mutex_unlock(&st->mu);
        bd_gate_cancel(&st->gate, &e->user_slots, &ticket);
    }
    return bd_err_set(err, BD_ENOTFOUND, NULL, "no study %lld", (long long)study_id);
}

int bd_engine_try_lock_study(bd_engine *e, const bd_caller *who, int64_t study_id, study_rt **out, bd_err *err)
{
    bd_engine_recover_if_needed(e);
    study_rt *st = bd_engine_study(e, study_id, who->user_id);
    bd_gate_ticket ticket = {0};
    if (!st)
        return bd_err_set(err, BD_ENOTFOUND, NULL, "no study %lld", (long long)study_id);
    if (atomic_load(&st->gate.queued) > 0)
        return bd_err_set(err, BD_EBUSY, "study", "study %lld is busy", (long long)study_id);
    atomic_fetch_add(&st->gate.queued, 1); /* no user slot: the caller is the daemon itself */
    if (pthread_mutex_trylock(&st->mu) != 0) {
        bd_gate_cancel(&st->gate, &e->user_slots, &ticket);
        return bd_err_set(err, BD_EBUSY, "study", "study %lld is busy", (long long)study_id);
    }
    int rc = st->deleted ? bd_err_set(err, BD_ENOTFOUND, NULL, "no study %lld", (long long)study_id)
                         : ensure_loaded(e, st, err);
    if (rc) {
        pthread_mutex_unlock(&st->mu);
        bd_gate_cancel(&st->gate, &e->user_slots, &ticket);
        return rc;
    }
    bd_gate_locked(&st->gate, &ticket, bd_monotonic());
    *out = st;
    return 0;
}

void bd_engine_unlock_study(bd_engine *e, study_rt *st)
{
    size_t now_bytes = st->loaded ? estimate_bytes(st->definition_bytes, st->trials_created) : 0;
    pthread_mutex_lock(&e->cache_mu);
    if (st->loaded && now_bytes != st->cache_bytes) { /* its scheduler grew with its trials */
        e->cache_used += now_bytes - st->cache_bytes;
        st->cache_bytes = now_bytes;
    }
    int over = e->cache_used > e->cache_budget;
    pthread_mutex_unlock(&e->cache_mu);
    bd_gate_leave(&st->gate, &e->user_slots, bd_monotonic());
    pthread_mutex_unlock(&st->mu);
    if (over)
        cache_trim(e);
}

void bd_engine_study_register(bd_engine *e, study_rt *st)
{
    pthread_rwlock_wrlock(&e->studies_lock);
    if ((size_t)st->id >= e->studies_cap) {
        size_t cap = e->studies_cap ? e->studies_cap : 64;
        while (cap <= (size_t)st->id)
            cap *= 2;
        e->studies = bd_xrealloc(e->studies, cap * sizeof *e->studies);
        memset(e->studies + e->studies_cap, 0, (cap - e->studies_cap) * sizeof *e->studies);
        e->studies_cap = cap;
    }
    e->studies[st->id] = st;
    pthread_rwlock_unlock(&e->studies_lock);
}

void bd_engine_study_free(study_rt *st)
{
    if (!st)
        return;
    if (st->sched)
        st->sched->ops->destroy(st->sched);
    bd_study_spec_clear(&st->spec);
    pthread_mutex_destroy(&st->mu);
    free(st);
}

/* -------------------------------------------------------------------- feed */

void bd_engine_touch(study_rt *st, double at)
{
    if (at > st->last_activity_at)
        st->last_activity_at = at;
}

double bd_engine_loss(const study_rt *st, int has_value, double value)
{
    if (!has_value || isnan(value))
        return INFINITY;
    return st->spec.def.maximize ? -value : value;
}

static void consider_best(best_trial *b, const bd_event *ev)
{
    if (!isfinite(ev->loss))
        return;
    if (!b->trial_id || ev->loss < b->loss) {
        b->trial_id = ev->trial_id;
        b->loss = ev->loss;
    }
}

static void count_end(study_rt *st, bd_trial_state to)
{
    st->counts[BD_TRIAL_RUNNING]--;
    st->counts[to]++;
}

void bd_engine_feed(study_rt *st, const bd_event *ev, int replay, double resumed_budget, bd_decision *out)
{
    bd_err ignored;
    bd_observe_ctx ctx = {.replay = replay};
    memset(out, 0, sizeof *out);
    bd_observe_ctx_seed(&ctx, st->spec.def.seed, ev->id);
    st->dirty = !replay;
    /* observe never rejects an event (sched.h); a failure here is a scheduler
     * bug, and stopping the daemon would lose more than it protects. */
    (void)st->sched->ops->observe(st->sched, &ctx, ev, out, &ignored);
    switch (ev->type) {
    case BD_EV_CREATED:
        st->trials_created++;
        st->counts[BD_TRIAL_RUNNING]++;
        st->used.trials++;
        st->used.resource += ev->budget > resumed_budget ? ev->budget - resumed_budget : 0;
        break;
    case BD_EV_MEASUREMENT:
        break;
    case BD_EV_COMPLETED:
        count_end(st, BD_TRIAL_COMPLETED);
        consider_best(&st->best, ev);
        if (ev->budget >= st->spec.def.r_max)
            consider_best(&st->best_full, ev);
        break;
    case BD_EV_FAILED:
        count_end(st, BD_TRIAL_FAILED);
        break;
    case BD_EV_EXPIRED:
        count_end(st, BD_TRIAL_EXPIRED);
        break;
    case BD_EV_STOPPED:
        count_end(st, BD_TRIAL_STOPPED);
        break;
    }
    if ((ev->type == BD_EV_COMPLETED || ev->type == BD_EV_STOPPED) && isfinite(ev->elapsed_seconds))
        st->used.seconds += ev->elapsed_seconds;
}

/* ------------------------------------------------------------------ replay */

typedef struct trial_ref {
    int64_t trial_id;
    int64_t config_id;
    double budget;
} trial_ref;

typedef struct replay_ctx {
    bd_engine *e;
    study_rt *st;
    trial_ref *refs; /* in trial id order: CREATED events come in id order */
    size_t n, cap;
    bd_err *err;
} replay_ctx;

static const trial_ref *find_ref(const replay_ctx *c, int64_t trial_id)
{
    size_t lo = 0, hi = c->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->refs[mid].trial_id < trial_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < c->n && c->refs[lo].trial_id == trial_id ? &c->refs[lo] : NULL;
}

static int replay_created(replay_ctx *c, const bd_event_row *row)
{
    bd_trial_row t = {0};
    bd_decision d;
    int rc = bd_store_trial_get(c->e->store, row->trial_id, &t, c->err);
    if (rc)
        return rc;
    json_t *config = json_loads(t.config, 0, NULL);
    json_t *extra = t.extra ? json_loads(t.extra, 0, NULL) : NULL;
    if (!config) {
        bd_store_trial_row_clear(&t);
        json_decref(extra);
        return bd_err_set(c->err, BD_EINTERNAL, NULL, "trial %lld: stored config is not JSON",
                          (long long)row->trial_id);
    }
    bd_event ev = {.type = BD_EV_CREATED,
                   .id = row->id,
                   .trial_id = t.id,
                   .config_id = t.config_id,
                   .budget = t.budget,
                   .config = config,
                   .resume_from = t.resume_from,
                   .extra = extra,
                   .has_instance = t.has_instance,
                   .instance = t.instance_index,
                   .loss = NAN,
                   .elapsed_seconds = NAN};
    const trial_ref *resumed = t.resume_from ? find_ref(c, t.resume_from) : NULL;
    bd_engine_feed(c->st, &ev, 1, resumed ? resumed->budget : 0, &d);
    bd_engine_touch(c->st, row->created_at);
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 256;
        c->refs = bd_xrealloc(c->refs, c->cap * sizeof *c->refs);
    }
    c->refs[c->n++] = (trial_ref){t.id, t.config_id, t.budget};
    json_decref(config);
    json_decref(extra);
    bd_store_trial_row_clear(&t);
    return 0;
}

static int replay_event(const bd_event_row *row, void *arg)
{
    replay_ctx *c = arg;
    bd_decision d;
    if (row->type == BD_EV_CREATED)
        return replay_created(c, row);
    const trial_ref *ref = find_ref(c, row->trial_id);
    if (!ref)
        return bd_err_set(c->err, BD_EINTERNAL, NULL, "event %lld names trial %lld that was never created",
                          (long long)row->id, (long long)row->trial_id);
    bd_event ev = {.type = row->type,
                   .id = row->id,
                   .trial_id = ref->trial_id,
                   .config_id = ref->config_id,
                   .budget = ref->budget,
                   .step = row->step,
                   .loss = bd_engine_loss(c->st, row->has_value, row->value),
                   .timeout = row->timeout,
                   .elapsed_seconds = row->elapsed_seconds};
    bd_engine_feed(c->st, &ev, 1, 0, &d);
    bd_engine_touch(c->st, row->created_at);
    return 0;
}

/* Rebuilds st's scheduler from its stored events. Holds no storage lock
 * between reads: only st's own requests write st's rows, and the caller
 * holds st->mu (or no request can run yet). */
static int replay(bd_engine *e, study_rt *st, bd_err *err)
{
    const struct bd_sched_ops *ops = bd_study_spec_sched(&st->spec);
    int rc;
    if (!ops)
        return bd_err_set(err, BD_EINTERNAL, "scheduler.name", "study %lld uses a scheduler this build lacks",
                          (long long)st->id);
    if (st->sched)
        st->sched->ops->destroy(st->sched);
    st->sched = NULL;
    for (int s = 0; s < BD_TRIAL_NSTATES; s++)
        st->counts[s] = 0;
    st->trials_created = 0;
    st->used = (study_usage){0, 0, 0};
    st->best = st->best_full = (best_trial){0, 0};
    st->last_activity_at = st->created_at;
    if ((rc = ops->create(&st->spec.def, &st->sched, err)))
        return rc;
    replay_ctx c = {.e = e, .st = st, .err = err};
    rc = bd_store_event_each(e->store, st->id, replay_event, &c, err);
    free(c.refs);
    if (!rc && st->sched->ops->replayed)
        st->sched->ops->replayed(st->sched);
    st->dirty = 0;
    return rc;
}

int bd_engine_study_reload(bd_engine *e, study_rt *st, bd_err *err)
{
    return replay(e, st, err);
}

/* ------------------------------------------------------------- the cache */

/* A rough figure of the heap a loaded study holds, to weigh it against
 * --study-cache-mb: its definition parsed (JSON nodes and the space's
 * tables take some 40-50 times the text, measured on wide categorical
 * spaces) and its scheduler's per-trial records. An estimate, not a
 * measurement: glibc cannot tell one study's memory from another's. */
static size_t estimate_bytes(size_t definition_bytes, int64_t trials)
{
    return 16384 + 48 * definition_bytes + 512 * (size_t)(trials > 0 ? trials : 0);
}

static void lru_unlink(bd_engine *e, study_rt *st)
{
    if (st->lru_prev)
        st->lru_prev->lru_next = st->lru_next;
    else
        e->lru_head = st->lru_next;
    if (st->lru_next)
        st->lru_next->lru_prev = st->lru_prev;
    else
        e->lru_tail = st->lru_prev;
    st->lru_prev = st->lru_next = NULL;
}

static void lru_push_front(bd_engine *e, study_rt *st)
{
    st->lru_prev = NULL;
    st->lru_next = e->lru_head;
    if (e->lru_head)
        e->lru_head->lru_prev = st;
    else
        e->lru_tail = st;
    e->lru_head = st;
}

void bd_engine_study_cached(bd_engine *e, study_rt *st, size_t definition_bytes)
{
    st->loaded = 1;
    st->definition_bytes = definition_bytes;
    st->cache_bytes = estimate_bytes(definition_bytes, st->trials_created);
    pthread_mutex_lock(&e->cache_mu);
    lru_push_front(e, st);
    e->cache_used += st->cache_bytes;
    e->studies_loaded++;
    pthread_mutex_unlock(&e->cache_mu);
}

/* Frees spec and sched; st->mu held, cache_mu held. */
static void unload_locked(bd_engine *e, study_rt *st)
{
    if (!st->loaded)
        return;
    lru_unlink(e, st);
    e->cache_used -= st->cache_bytes;
    e->studies_loaded--;
    st->cache_bytes = 0;
    st->loaded = 0;
    if (st->sched)
        st->sched->ops->destroy(st->sched);
    st->sched = NULL;
    bd_study_spec_clear(&st->spec);
}

void bd_engine_study_unload(bd_engine *e, study_rt *st)
{
    pthread_mutex_lock(&e->cache_mu);
    unload_locked(e, st);
    pthread_mutex_unlock(&e->cache_mu);
}

/* The most studies one trim looks at: the least recently used may all be
 * busy (held or waited for), and a trim must not walk every loaded study. */
#define TRIM_CANDIDATES 64

/* Unloads idle studies, least recently used first, until the cache is
 * within its budget. Holds no study mutex on entry. A study someone holds
 * or waits for is skipped (trylock: the order cache_mu -> study mu is the
 * reverse of a load's, so this never waits for one). */
static void cache_trim(bd_engine *e)
{
    pthread_mutex_lock(&e->cache_mu);
    study_rt *c = e->lru_tail;
    for (int tried = 0; c && e->cache_used > e->cache_budget && tried < TRIM_CANDIDATES; tried++) {
        study_rt *prev = c->lru_prev;
        if (atomic_load(&c->gate.queued) == 0 && pthread_mutex_trylock(&c->mu) == 0) {
            if (!c->dirty) {
                unload_locked(e, c);
                atomic_fetch_add(&e->study_evictions, 1);
            }
            pthread_mutex_unlock(&c->mu);
        }
        c = prev;
    }
    pthread_mutex_unlock(&e->cache_mu);
}

/* Builds st's spec and sched from its stored definition and events, or
 * marks it most recently used when they are built; st->mu held. */
static int ensure_loaded(bd_engine *e, study_rt *st, bd_err *err)
{
    if (st->loaded) {
        pthread_mutex_lock(&e->cache_mu);
        if (e->lru_head != st) {
            lru_unlink(e, st);
            lru_push_front(e, st);
        }
        pthread_mutex_unlock(&e->cache_mu);
        return 0;
    }
    bd_study_row row = {0};
    json_t *def = NULL;
    int rc = bd_store_study_get(e->store, st->id, &row, err);
    if (rc == BD_ENOTFOUND) /* deleted by a request whose commit failed, before recovery */
        rc = bd_err_set(err, BD_ESTORAGE, NULL, "study %lld is missing from storage", (long long)st->id);
    if (!rc && !(def = json_loads(row.definition, 0, NULL)))
        rc = bd_err_set(err, BD_EINTERNAL, NULL, "study %lld: stored definition is not JSON", (long long)st->id);
    if (!rc)
        rc = bd_study_spec_parse(def, e->default_lease, &st->spec, err);
    if (!rc) {
        st->spec.def.id = st->id;
        bd_engine_user_name(e, st->user_id, st->owner);
        if ((rc = replay(e, st, err)) != 0) {
            if (st->sched)
                st->sched->ops->destroy(st->sched);
            st->sched = NULL;
            bd_study_spec_clear(&st->spec);
        }
    }
    if (!rc) {
        bd_engine_study_cached(e, st, strlen(row.definition));
        atomic_fetch_add(&e->study_loads, 1);
    }
    json_decref(def);
    bd_store_study_row_clear(&row);
    return rc;
}

/* ------------------------------------------------------------- write plans */

void bd_write_plan_clear(bd_write_plan *p)
{
    free(p->inserts);
    free(p->events);
    memset(p, 0, sizeof *p);
}

bd_event_row *bd_write_plan_push_event(bd_engine *e, bd_write_plan *p, const bd_event_row *ev)
{
    if (p->n_events == p->cap_events) {
        p->cap_events = p->cap_events ? 2 * p->cap_events : 4;
        p->events = bd_xrealloc(p->events, p->cap_events * sizeof *p->events);
    }
    bd_event_row *row = &p->events[p->n_events++];
    *row = *ev;
    row->id = atomic_fetch_add(&e->next_event_id, 1);
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
                    .loss = bd_engine_loss(st, row->has_value, row->value),
                    .timeout = row->timeout,
                    .elapsed_seconds = row->elapsed_seconds};
    bd_engine_feed(st, &sev, 0, 0, d);
    bd_engine_touch(st, row->created_at);
}

/* Writes the plan inside the caller's transaction. */
static int apply_plan(bd_engine *e, const bd_write_plan *p, bd_err *err)
{
    int rc = 0;
    for (size_t i = 0; !rc && i < p->n_inserts; i++)
        rc = bd_store_trial_insert(e->store, &p->inserts[i], NULL, err);
    for (size_t i = 0; !rc && i < p->n_events; i++)
        rc = bd_store_event_append(e->store, &p->events[i], NULL, err);
    if (!rc && p->finish)
        rc = bd_store_trial_finish(e->store, p->finish, err);
    if (!rc && p->lease_trial)
        rc = bd_store_trial_set_lease(e->store, p->lease_trial, p->lease_until, err);
    return rc;
}

/* ----------------------------------------------------- transactions + idem */

int bd_engine_durable(bd_engine *e, uint64_t ticket, bd_err *err)
{
    /* A failed batch poisons the store; bd_engine_recover_if_needed sees it
     * through bd_store_failures, before the next request touches a study. */
    return bd_store_wait(e->store, ticket, err);
}

/* Looks req's key up. 1: answered before (*fingerprint_out and *response
 * are new), 0: not found, < 0: error. */
static int idem_lookup(bd_engine *e, const bd_request *req, char **response, bd_err *err)
{
    char *fingerprint = NULL;
    *response = NULL;
    if (!req || !req->idem_key)
        return 0;
    int rc = bd_store_idem_get(e->store, req->caller->user_id, req->idem_key, &fingerprint, response, err);
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
    int rc = bd_engine_durable(e, bd_store_current_ticket(e->store), err);
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
    int rc = bd_store_begin(e->store, err);
    if (rc)
        return rc;
    if ((rc = idem_lookup(e, req, &response, err)) <= 0) {
        if (rc)
            bd_store_rollback(e->store);
        return rc;
    }
    bd_store_rollback(e->store); /* nothing was written */
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
    int rc = bd_store_idem_put(e->store, req->caller->user_id, req->idem_key, req->fingerprint ? req->fingerprint : "",
                               text, bd_now(), err);
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
        bd_store_rollback(e->store);
        return rc;
    }
    if ((rc = bd_store_release(e->store, &ticket, err)))
        return rc;
    return bd_engine_durable(e, ticket, err);
}

int bd_engine_study_commit(bd_engine *e, study_rt *st, const bd_request *req, int rc, const bd_write_plan *plan,
                           const json_t *answer, uint64_t *ticket, bd_err *err)
{
    int nothing_to_write = !plan->n_inserts && !plan->n_events && !plan->finish && !plan->lease_trial &&
                           !(req && req->idem_key);
    if (rc == 0 && nothing_to_write) {
        /* The answer may still rest on earlier requests' released work:
         * answer once that is on disk. */
        *ticket = bd_store_current_ticket(e->store);
        return 0;
    }
    if (rc == 0 && (rc = bd_store_begin(e->store, err)) == 0) {
        if ((rc = apply_plan(e, plan, err)) == 0 && (rc = remember_answer(e, req, answer, err)) == 0)
            rc = bd_store_release(e->store, ticket, err);
        else
            bd_store_rollback(e->store);
    }
    if (rc && st->dirty) {
        bd_err reload_err;
        if (bd_engine_study_reload(e, st, &reload_err))
            bd_log(BD_LOG_ERROR, "study %lld could not be rebuilt after a failed request: %s",
                   (long long)st->id, reload_err.message);
    }
    st->dirty = 0;
    return rc;
}

int bd_engine_study_op(bd_engine *e, const bd_request *req, int64_t study_id, int flags, bd_study_op_fn op, void *arg,
                       bd_write_plan *plan, json_t **out, bd_err *err)
{
    study_rt *st;
    json_t *answer = NULL;
    uint64_t ticket = 0;
    int rc = flags & BD_OP_NO_WAIT ? bd_engine_try_lock_study(e, req->caller, study_id, &st, err)
                                   : bd_engine_lock_study(e, req->caller, study_id, &st, err);
    if (rc)
        return rc;
    if ((rc = bd_engine_study_replay_answer(e, st, req, out, err))) /* unlocked st */
        return rc > 0 ? 0 : rc;
    rc = op(e, st, arg, plan, &answer, err);
    rc = bd_engine_study_commit(e, st, req, rc, plan, answer, &ticket, err);
    bd_engine_unlock_study(e, st);
    if (!rc)
        rc = bd_engine_durable(e, ticket, err);
    if (rc) {
        json_decref(answer);
        return rc;
    }
    *out = answer;
    return 0;
}

/* ---------------------------------------------------------------- recovery */

/* Makes st match storage again; st->mu held. */
static void recover_study(bd_engine *e, study_rt *st)
{
    bd_study_row row = {0};
    bd_err err;
    int rc = bd_store_study_get(e->store, st->id, &row, &err);
    bd_store_study_row_clear(&row);
    if (rc == BD_ENOTFOUND) { /* created or undeleted by the failed commit: gone */
        st->deleted = 1;
        bd_engine_study_unload(e, st);
        return;
    }
    st->deleted = 0; /* a delete in the failed commit did not happen */
    if (!rc && !st->loaded) /* nothing built to rebuild; its counts come from before the failure */
        return;
    if (rc || bd_engine_study_reload(e, st, &err))
        bd_log(BD_LOG_ERROR, "study %lld could not be rebuilt: %s", (long long)st->id, err.message);
}

void bd_engine_recover_if_needed(bd_engine *e)
{
    uint64_t failures = bd_store_failures(e->store);
    if (failures == atomic_load(&e->recovered_failures)) /* the common case: one atomic read */
        return;
    pthread_mutex_lock(&e->recover_mu);
    if (failures != atomic_load(&e->recovered_failures)) {
        /* Every study is locked first, so no request sees a half-rebuilt
         * engine. A batch failing while we rebuild raises the count, so the
         * store stays closed and the next request recovers again. */
        pthread_rwlock_rdlock(&e->studies_lock);
        for (size_t i = 0; i < e->studies_cap; i++)
            if (e->studies[i])
                pthread_mutex_lock(&e->studies[i]->mu);
        failures = bd_store_failures(e->store);
        for (size_t i = 0; i < e->studies_cap; i++)
            if (e->studies[i])
                recover_study(e, e->studies[i]);
        pthread_mutex_lock(&e->auth_mu);
        bd_engine_auth_forget(e);
        pthread_mutex_unlock(&e->auth_mu);
        atomic_store(&e->recovered_failures, failures);
        bd_store_recovered(e->store, failures);
        for (size_t i = 0; i < e->studies_cap; i++)
            if (e->studies[i])
                pthread_mutex_unlock(&e->studies[i]->mu);
        pthread_rwlock_unlock(&e->studies_lock);
        bd_log(BD_LOG_WARN, "recovered every study from storage after a failed commit");
    }
    pthread_mutex_unlock(&e->recover_mu);
}

/* ------------------------------------------------------------------ reaper */

static void *reaper_main(void *arg)
{
    bd_engine *e = arg;
    double last_prune = 0, last_trim = 0;
    pthread_mutex_lock(&e->reaper_mu);
    while (!e->reaper_stop) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        double t = until.tv_sec + until.tv_nsec / 1e9 + e->reaper_interval;
        until.tv_sec = (time_t)t;
        until.tv_nsec = (long)((t - (double)until.tv_sec) * 1e9);
        pthread_cond_timedwait(&e->reaper_cv, &e->reaper_mu, &until);
        if (e->reaper_stop)
            break;
        pthread_mutex_unlock(&e->reaper_mu);
        bd_err err;
        double now = bd_now();
        /* An idle daemon heals too: after a failed commit, the studies are
         * rebuilt and a probe write tells when the disk works again,
         * without waiting for a request. */
        (void)bd_engine_healthy(e);
        if (bd_engine_expire_leases(e, now, NULL, &err))
            bd_log(BD_LOG_ERROR, "lease sweep failed: %s", err.message);
        /* Idempotency records are kept a day: long enough for any retry. */
        if (now - last_prune > 600) {
            if (bd_store_idem_prune(e->store, now - 86400, &err))
                bd_log(BD_LOG_ERROR, "idempotency prune failed: %s", err.message);
            last_prune = now;
        }
        /* glibc keeps freed memory in per-thread arenas (64 handler
         * threads): a burst of large answers once kept RSS 180 MB up for
         * good. Give it back to the OS now and then. */
        if (now - last_trim > 10) {
            malloc_trim(0);
            last_trim = now;
        }
        pthread_mutex_lock(&e->reaper_mu);
    }
    pthread_mutex_unlock(&e->reaper_mu);
    return NULL;
}

/* -------------------------------------------------------------- lifecycle */

typedef struct load_ctx {
    bd_engine *e;
    bd_err *err;
} load_ctx;

/* Registers a stored study unloaded: it is built on first use. */
static int index_one(const bd_study_row *row, void *arg)
{
    load_ctx *c = arg;
    study_rt *st = bd_xcalloc(1, sizeof *st);
    pthread_mutex_init(&st->mu, NULL);
    st->id = row->id;
    st->user_id = row->user_id;
    st->created_at = row->created_at;
    st->last_activity_at = row->created_at;
    bd_engine_study_register(c->e, st);
    return 0;
}

/* The stored trial counts of the unloaded studies (/metrics sums them). */
static int count_one(int64_t study_id, bd_trial_state state, int64_t count, void *arg)
{
    load_ctx *c = arg;
    study_rt *st = bd_engine_study(c->e, study_id, 0);
    if (st)
        st->counts[state] = count;
    return 0;
}

int bd_engine_open(const bd_engine_opts *opts, bd_engine **out, bd_err *err)
{
    bd_engine *e = bd_xcalloc(1, sizeof *e);
    bd_store_opts so = {.sync = opts->sync_full ? BD_SYNC_FULL : BD_SYNC_NORMAL};
    char *token_path = NULL;
    int rc;
    pthread_rwlock_init(&e->studies_lock, NULL);
    pthread_mutex_init(&e->auth_mu, NULL);
    pthread_mutex_init(&e->reaper_mu, NULL);
    pthread_cond_init(&e->reaper_cv, NULL);
    pthread_mutex_init(&e->recover_mu, NULL);
    /* Distinct users with costly requests at once: at most one per handler
     * thread, and the handlers are at most a few thousand (config.c). */
    bd_user_slots_init(&e->user_slots, opts->user_concurrency > 0 ? opts->user_concurrency : 16, 4096);
    pthread_mutex_init(&e->cache_mu, NULL);
    e->cache_budget = opts->study_cache_bytes > 0 ? opts->study_cache_bytes : BD_DEFAULT_STUDY_CACHE_BYTES;
    e->max_studies = opts->max_studies > 0 ? opts->max_studies : BD_DEFAULT_MAX_STUDIES;
    e->max_definition_bytes = opts->max_definition_bytes > 0 ? opts->max_definition_bytes
                                                             : BD_DEFAULT_MAX_DEFINITION_BYTES;
    /* GSL's default handler aborts the process; schedulers check every GSL
     * return code instead (server/model/). Here, so tests get it too. */
    gsl_set_error_handler_off();
    e->default_lease = opts->default_lease_seconds > 0 ? opts->default_lease_seconds : 300;
    e->reaper_interval = opts->reaper_interval;
    if ((rc = bd_auth_init())) {
        bd_err_set(err, rc, NULL, "libsodium failed to initialize");
        goto out;
    }
    if ((rc = bd_store_open(opts->db_path, &so, &e->store, err)))
        goto out;
    if (opts->admin_token_path) {
        token_path = bd_xstrdup(opts->admin_token_path);
    } else if (strcmp(opts->db_path, ":memory:") != 0) {
        token_path = bd_xmalloc(strlen(opts->db_path) + 16);
        sprintf(token_path, "%s.admin-token", opts->db_path);
    }
    if ((rc = bd_engine_bootstrap_admin(e, token_path, opts->admin_token_file, err)))
        goto out;
    int64_t next_trial, next_event;
    if ((rc = bd_store_next_ids(e->store, &next_trial, &next_event, err)))
        goto out;
    atomic_store(&e->next_trial_id, next_trial);
    atomic_store(&e->next_event_id, next_event);
    /* No lock: no request can arrive before open returns. No study is
     * loaded (replayed) here: only its id and owner, and its trial counts. */
    load_ctx lc = {e, err};
    if ((rc = bd_store_study_index_each(e->store, index_one, &lc, err)) ||
        (rc = bd_store_trial_counts_each(e->store, count_one, &lc, err)))
        goto out;
    if (e->reaper_interval > 0) {
        if (pthread_create(&e->reaper, NULL, reaper_main, e) != 0) {
            rc = bd_err_set(err, BD_EINTERNAL, NULL, "cannot start the lease reaper thread");
            goto out;
        }
        e->reaper_running = 1;
    }
out:
    free(token_path);
    if (rc) {
        bd_engine_close(e);
        return rc;
    }
    *out = e;
    return 0;
}

void bd_engine_close(bd_engine *e)
{
    if (!e)
        return;
    atomic_store(&e->closing, 1);
    if (e->reaper_running) {
        pthread_mutex_lock(&e->reaper_mu);
        e->reaper_stop = 1;
        pthread_cond_signal(&e->reaper_cv);
        pthread_mutex_unlock(&e->reaper_mu);
        pthread_join(e->reaper, NULL);
    }
    for (size_t i = 0; i < e->studies_cap; i++)
        bd_engine_study_free(e->studies[i]);
    free(e->studies);
    bd_store_close(e->store);
    free(e->first_admin_token);
    pthread_rwlock_destroy(&e->studies_lock);
    pthread_mutex_destroy(&e->auth_mu);
    pthread_mutex_destroy(&e->reaper_mu);
    pthread_cond_destroy(&e->reaper_cv);
    pthread_mutex_destroy(&e->recover_mu);
    bd_user_slots_destroy(&e->user_slots);
    pthread_mutex_destroy(&e->cache_mu);
    free(e);
}

/* At most one probe write per this many seconds, however often /healthz
 * (which needs no token) is called. */
#define PROBE_INTERVAL 1.0

int bd_engine_healthy(bd_engine *e)
{
    bd_engine_recover_if_needed(e);
    if (bd_store_writable(e->store))
        return 1;
    /* The latest commit failed and none succeeded since: try one write, so
     * an idle daemon learns that the disk is back. */
    double now = bd_monotonic(), last = atomic_load(&e->last_probe);
    if (now - last >= PROBE_INTERVAL && atomic_compare_exchange_strong(&e->last_probe, &last, now)) {
        bd_err err;
        if (bd_store_probe(e->store, bd_now(), &err))
            bd_log(BD_LOG_WARN, "storage still refuses writes: %s", err.message);
        bd_engine_recover_if_needed(e);
    }
    return bd_store_writable(e->store);
}

const char *bd_engine_first_admin_token(const bd_engine *e)
{
    return e->first_admin_token;
}

void bd_engine_stats_get(bd_engine *e, bd_engine_stats *out)
{
    memset(out, 0, sizeof *out);
    /* No study mutex: a study busy in a slow scheduler call must not hold up
     * /metrics. The counts are atomics, so a figure may be one event old. */
    pthread_rwlock_rdlock(&e->studies_lock);
    for (size_t i = 0; i < e->studies_cap; i++) {
        study_rt *st = e->studies[i];
        if (!st || st->deleted)
            continue;
        out->studies++;
        for (int s = 0; s < BD_TRIAL_NSTATES; s++)
            out->trials[s] += st->counts[s];
    }
    pthread_rwlock_unlock(&e->studies_lock);
    pthread_mutex_lock(&e->cache_mu);
    out->studies_loaded = e->studies_loaded;
    out->cache_bytes = (int64_t)e->cache_used;
    out->cache_budget = (int64_t)e->cache_budget;
    pthread_mutex_unlock(&e->cache_mu);
    out->study_loads = (int64_t)atomic_load(&e->study_loads);
    out->study_evictions = (int64_t)atomic_load(&e->study_evictions);
    out->storage_writable = bd_store_writable(e->store);
    out->storage_failures = (int64_t)bd_store_failures(e->store);
}
