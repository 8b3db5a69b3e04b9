/* study.c: one study's runtime (see study.h): the feed every event goes
 * through, the replay that rebuilds a scheduler from storage, the study's
 * limits, and its JSON in API answers (api/openapi.yaml describes them).
 *
 * Invariant: a study's scheduler has seen exactly the study's committed
 * events, in order. Live requests feed events inside their transaction; if
 * that transaction does not commit, the engine replays the study. */
#include "study.h"

#include "attrs.h"
#include "model/pareto.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void clear_queue(study_rt *st)
{
    for (size_t i = 0; i < st->n_queued; i++)
        json_decref(st->queued[i]);
    st->n_queued = 0;
}

void bd_study_drop_queue(study_rt *st)
{
    clear_queue(st);
    free(st->queued);
    st->queued = NULL;
    st->cap_queued = 0;
}

void bd_study_drop_front(study_rt *st)
{
    free(st->front.ids);
    free(st->front.losses);
    memset(&st->front, 0, sizeof st->front);
}

size_t bd_study_front_bytes(const study_rt *st)
{
    return st->front.cap * (sizeof *st->front.ids + st->spec.def.n_objectives * sizeof *st->front.losses);
}

void bd_study_free(study_rt *st)
{
    if (!st)
        return;
    bd_study_drop_queue(st);
    bd_study_drop_front(st);
    if (st->sched)
        st->sched->ops->destroy(st->sched);
    bd_study_spec_clear(&st->spec);
    free(st->metadata);
    pthread_mutex_destroy(&st->mu);
    free(st);
}

void bd_study_set_meta(study_rt *st, int paused, char *metadata)
{
    free(st->metadata);
    st->paused = paused != 0;
    st->metadata = metadata;
    st->meta_dirty = 0;
}

void bd_study_scheduler_config(const bd_study_spec *spec, json_t *config)
{
    const char *name;
    json_t *value;
    void *tmp;
    json_object_foreach_safe(config, tmp, name, value) {
        if (bd_space_find(spec->space, name) < 0)
            json_object_del(config, name);
    }
}

int bd_study_reload_asked(study_rt *st, const char *definition, bd_err *err)
{
    json_t *stored = definition ? json_loads(definition, 0, NULL) : NULL;
    json_t *none = json_array();
    const json_t *list = json_object_get(stored, "asked_parameters");
    int rc = bd_study_spec_set_asked(&st->spec, list ? list : none, err);
    json_decref(none);
    json_decref(stored);
    return rc;
}

int bd_study_reload_meta(study_rt *st, bd_store *store, bd_err *err)
{
    bd_study_row row = {0};
    int rc = bd_store_study_get(store, st->id, &row, err);
    if (!rc) {
        bd_study_set_meta(st, row.paused, row.metadata);
        row.metadata = NULL;
        if (st->loaded)
            rc = bd_study_reload_asked(st, row.definition, err);
    }
    bd_store_study_row_clear(&row);
    return rc;
}

/* ------------------------------------------------------------------- queue */

void bd_study_enqueue(study_rt *st, json_t *config)
{
    if (st->n_queued == st->cap_queued) {
        st->cap_queued = st->cap_queued ? 2 * st->cap_queued : 8;
        st->queued = bd_xrealloc(st->queued, st->cap_queued * sizeof *st->queued);
    }
    st->queued[st->n_queued++] = config;
}

/* O(queue) per take; the queue is bounded (BD_MAX_ENQUEUED), so a ring
 * buffer would buy nothing measurable. */
json_t *bd_study_dequeue(study_rt *st)
{
    if (!st->n_queued)
        return NULL;
    json_t *head = st->queued[0];
    memmove(st->queued, st->queued + 1, --st->n_queued * sizeof *st->queued);
    return head;
}

/* -------------------------------------------------------------------- feed */

void bd_study_touch(study_rt *st, double at)
{
    if (at > st->last_activity_at)
        st->last_activity_at = at;
}

double bd_study_loss(const study_rt *st, int has_value, double value)
{
    if (!has_value || isnan(value))
        return INFINITY;
    return st->spec.def.maximize ? -value : value;
}

static void consider_best(best_trial *b, const bd_event *ev);

void bd_study_event_losses(const study_rt *st, int has_value, double value, const char *values, bd_event *ev,
                           double *buf)
{
    ev->loss = bd_study_loss(st, has_value, value);
    ev->losses = NULL;
    ev->violation = 0;
    if (!bd_study_spec_has_values(&st->spec) ||
        (ev->type != BD_EV_MEASUREMENT && ev->type != BD_EV_COMPLETED && ev->type != BD_EV_PRIOR))
        return;
    json_t *v = values ? json_loads(values, 0, NULL) : NULL;
    bd_study_spec_losses(&st->spec, v, has_value ? value : NAN, buf, &ev->violation);
    json_decref(v);
    if (st->spec.def.n_objectives > 1) {
        ev->losses = buf;
        ev->loss = buf[0];
    }
}

/* Offers a feasible completed trial's losses to the front (study.h). */
static void front_offer(study_rt *st, int64_t trial_id, const double *losses)
{
    pareto_front *f = &st->front;
    size_t m = st->spec.def.n_objectives, kept = 0;
    for (size_t i = 0; i < m; i++)
        if (!isfinite(losses[i]))
            return;
    for (size_t i = 0; i < f->n; i++)
        if (bd_pareto_dominates(&f->losses[i * m], losses, m))
            return;
    for (size_t i = 0; i < f->n; i++) { /* drop the members it dominates, keeping the order */
        if (bd_pareto_dominates(losses, &f->losses[i * m], m))
            continue;
        if (kept != i) {
            f->ids[kept] = f->ids[i];
            memcpy(&f->losses[kept * m], &f->losses[i * m], m * sizeof *f->losses);
        }
        kept++;
    }
    f->version += kept != f->n;
    f->n = kept;
    if (f->n == BD_STUDY_FRONT_MAX) {
        f->truncated = 1;
        return;
    }
    if (f->n == f->cap) {
        f->cap = f->cap ? 2 * f->cap : 16;
        f->ids = bd_xrealloc(f->ids, f->cap * sizeof *f->ids);
        f->losses = bd_xrealloc(f->losses, f->cap * m * sizeof *f->losses);
    }
    f->ids[f->n] = trial_id;
    memcpy(&f->losses[f->n * m], losses, m * sizeof *losses);
    f->n++;
    f->version++;
}

/* A completed (or warm-start) trial: the incumbents (one objective: the
 * best feasible) or the front (several). */
static void consider_result(study_rt *st, const bd_event *ev)
{
    int full = ev->budget >= st->spec.def.r_max;
    if (ev->violation != 0)
        return;
    if (ev->losses) {
        if (full)
            front_offer(st, ev->trial_id, ev->losses);
        return;
    }
    consider_best(&st->best, ev);
    if (full)
        consider_best(&st->best_full, ev);
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

void bd_study_feed(study_rt *st, const bd_event *ev, int replay, double resumed_budget, bd_decision *out)
{
    bd_err ignored;
    bd_observe_ctx ctx = {.replay = replay};
    memset(out, 0, sizeof *out);
    bd_observe_ctx_seed(&ctx, st->spec.def.seed, ev->id);
    st->dirty = !replay;
    /* observe never rejects an event (sched.h); a failure here is a scheduler
     * bug, and stopping the daemon would lose more than it protects. */
    if (ev->type != BD_EV_PRIOR || st->sched->ops->learns_from_prior)
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
        consider_result(st, ev);
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
    case BD_EV_PRIOR:
        st->counts[BD_TRIAL_COMPLETED]++;
        consider_result(st, ev);
        break;
    }
    if ((ev->type == BD_EV_COMPLETED || ev->type == BD_EV_STOPPED) && isfinite(ev->elapsed_seconds))
        st->used.seconds += ev->elapsed_seconds;
}

/* ------------------------------------------------------------------ limits */

int bd_study_limit_reached(const study_rt *st)
{
    const bd_study_def *d = &st->spec.def;
    return (d->limit_trials && st->used.trials >= d->limit_trials) ||
           (d->limit_resource > 0 && st->used.resource >= d->limit_resource) ||
           (d->limit_seconds > 0 && st->used.seconds >= d->limit_seconds);
}

/* ------------------------------------------------------------------ replay */

typedef struct trial_ref {
    int64_t trial_id;
    int64_t config_id;
    double budget;
    int warm_start;  /* fed whole at its CREATED event (a PRIOR): its COMPLETED is not fed again */
} trial_ref;

/* A stored trial read ahead of its CREATED event, its JSON parsed. */
typedef struct read_ahead {
    bd_trial_row row; /* scalars only: the texts are parsed below, or dropped */
    json_t *config;   /* owned; NULL when the stored text is not JSON, or not read (continues_by_id) */
    json_t *extra;    /* owned, may be NULL */
    char *values;     /* owned: a warm start's reported metrics, may be NULL */
} read_ahead;

/* CREATED events come in trial id order, and so does a scan of the
 * study's trials: reading the trials in pages of this many beside the
 * event scan costs a fraction of one point query per trial (a replay of a
 * million-trial study spent a fifth of its time in those). */
#define REPLAY_READ_AHEAD 256

typedef struct replay_ctx {
    bd_store *store;
    study_rt *st;
    trial_ref *refs; /* in trial id order: CREATED events come in id order */
    size_t n, cap;
    read_ahead ahead[REPLAY_READ_AHEAD];
    size_t ahead_head, ahead_n; /* unread entries: ahead[ahead_head .. ahead_n) */
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

static void ahead_drop(read_ahead *a)
{
    json_decref(a->config);
    json_decref(a->extra);
    free(a->values);
    a->config = a->extra = NULL;
    a->values = NULL;
}

static void ahead_clear(replay_ctx *c)
{
    for (size_t i = c->ahead_head; i < c->ahead_n; i++)
        ahead_drop(&c->ahead[i]);
    c->ahead_head = c->ahead_n = 0;
}

/* A promotion or retry the scheduler knows by its ids: its JSON is not read. */
static int known_by_id(const replay_ctx *c, const bd_trial_row *row)
{
    return row->config_id != row->id && c->st->sched->ops->continues_by_id;
}

static int ahead_take_row(const bd_trial_row *row, void *arg)
{
    replay_ctx *c = arg;
    if (c->ahead_n == REPLAY_READ_AHEAD) /* the scan honours its limit; never trust a buffer to it */
        return bd_err_set(c->err, BD_EINTERNAL, NULL, "study %lld: the trial scan passed its limit",
                          (long long)c->st->id);
    read_ahead *a = &c->ahead[c->ahead_n++];
    a->row = *row; /* its texts are borrowed for this call only: */
    a->row.config = a->row.extra = a->row.worker = a->row.reason = a->row.instance_name = a->row.user_attrs = NULL;
    a->values = row->values && row->origin == BD_ORIGIN_WARM_START ? bd_xstrdup(row->values) : NULL;
    a->row.values = NULL;
    a->config = a->extra = NULL;
    if (known_by_id(c, row))
        return 0;
    a->config = json_loads(row->config, 0, NULL);
    a->extra = row->extra ? json_loads(row->extra, 0, NULL) : NULL;
    return 0;
}

/* The stored trial trial_id (its JSON now owned by the caller), from the
 * pages read ahead; a miss reads the next page from trial_id on. */
static int replay_trial(replay_ctx *c, int64_t trial_id, read_ahead *out)
{
    while (c->ahead_head < c->ahead_n && c->ahead[c->ahead_head].row.id < trial_id)
        ahead_drop(&c->ahead[c->ahead_head++]);
    if (c->ahead_head == c->ahead_n || c->ahead[c->ahead_head].row.id != trial_id) {
        ahead_clear(c);
        int rc = bd_store_trial_each(c->store, c->st->id, -1, -1, trial_id - 1, REPLAY_READ_AHEAD, ahead_take_row, c,
                                     c->err);
        if (rc)
            return rc;
        if (!c->ahead_n || c->ahead[0].row.id != trial_id)
            return bd_err_set(c->err, BD_EINTERNAL, NULL, "study %lld: trial %lld has a CREATED event and no row",
                              (long long)c->st->id, (long long)trial_id);
    }
    *out = c->ahead[c->ahead_head];
    c->ahead[c->ahead_head].config = c->ahead[c->ahead_head].extra = NULL;
    c->ahead[c->ahead_head].values = NULL;
    c->ahead_head++;
    return 0;
}

static int replay_created(replay_ctx *c, const bd_event_row *row)
{
    read_ahead a = {0};
    bd_decision d;
    int rc = replay_trial(c, row->trial_id, &a);
    if (rc)
        return rc;
    const bd_trial_row t = a.row;
    json_t *config = a.config, *extra = a.extra;
    if (!config && !known_by_id(c, &t)) {
        json_decref(extra);
        free(a.values);
        return bd_err_set(c->err, BD_EINTERNAL, NULL, "trial %lld: stored config is not JSON",
                          (long long)row->trial_id);
    }
    if (config && bd_study_spec_grows(&c->st->spec))
        bd_study_scheduler_config(&c->st->spec, config);
    int warm = t.origin == BD_ORIGIN_WARM_START;
    bd_event ev = {.type = warm ? BD_EV_PRIOR : BD_EV_CREATED,
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
    double losses[BD_STUDY_MAX_OBJECTIVES];
    if (warm)
        bd_study_event_losses(c->st, t.has_value, t.value, a.values, &ev, losses);
    const trial_ref *resumed = t.resume_from ? find_ref(c, t.resume_from) : NULL;
    bd_study_feed(c->st, &ev, 1, resumed ? resumed->budget : 0, &d);
    bd_study_touch(c->st, row->created_at);
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 256;
        c->refs = bd_xrealloc(c->refs, c->cap * sizeof *c->refs);
    }
    c->refs[c->n++] = (trial_ref){t.id, t.config_id, t.budget, warm};
    json_decref(config);
    json_decref(extra);
    free(a.values);
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
    if (ref->warm_start) {
        bd_study_touch(c->st, row->created_at);
        return 0;
    }
    bd_event ev = {.type = row->type,
                   .id = row->id,
                   .trial_id = ref->trial_id,
                   .config_id = ref->config_id,
                   .budget = ref->budget,
                   .step = row->step,
                   .timeout = row->timeout,
                   .elapsed_seconds = row->elapsed_seconds};
    double losses[BD_STUDY_MAX_OBJECTIVES];
    bd_study_event_losses(c->st, row->has_value, row->value, row->values, &ev, losses);
    bd_study_feed(c->st, &ev, 1, 0, &d);
    bd_study_touch(c->st, row->created_at);
    return 0;
}

static int replay_enqueued(const char *config, void *arg)
{
    replay_ctx *c = arg;
    json_t *j = json_loads(config, 0, NULL);
    if (!j)
        return bd_err_set(c->err, BD_EINTERNAL, NULL, "study %lld: a stored enqueued config is not JSON",
                          (long long)c->st->id);
    bd_study_enqueue(c->st, j);
    return 0;
}

/* Rebuilds st's scheduler from its stored events. Holds no storage lock
 * between reads: only st's own requests write st's rows, and the caller
 * holds st->mu (or no request can run yet). */
int bd_study_replay(study_rt *st, bd_store *store, bd_err *err)
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
    bd_study_drop_front(st);
    st->last_activity_at = st->created_at;
    if ((rc = ops->create(&st->spec.def, &st->sched, err)))
        return rc;
    replay_ctx *c = bd_xcalloc(1, sizeof *c); /* tens of KiB of read-ahead: not on the stack */
    c->store = store;
    c->st = st;
    c->err = err;
    rc = bd_store_event_each(store, st->id, replay_event, c, err);
    ahead_clear(c);
    free(c->refs);
    clear_queue(st);
    if (!rc)
        rc = bd_store_enqueue_each(store, st->id, replay_enqueued, c, err);
    free(c);
    if (!rc && st->sched->ops->replayed)
        st->sched->ops->replayed(st->sched);
    st->dirty = 0;
    return rc;
}

/* -------------------------------------------------------------------- JSON */

/* A budget prints as an integer when the resource is integral. */
static json_t *budget_json_of(int resource_integer, double budget)
{
    if (resource_integer && budget == floor(budget) && fabs(budget) < 9e15)
        return json_integer((json_int_t)budget);
    return json_real(budget);
}

static json_t *budget_json(const study_rt *st, double budget)
{
    return budget_json_of(st->spec.def.resource_integer, budget);
}

static json_t *loads_or_null(const char *text)
{
    json_t *v = text ? json_loads(text, 0, NULL) : NULL;
    return v ? v : json_null();
}

json_t *bd_study_trial_json(const study_rt *st, const bd_trial_row *row)
{
    return bd_trial_json(st->spec.def.resource_integer, row);
}

json_t *bd_trial_json(int resource_integer, const bd_trial_row *row)
{
    json_t *t = json_object();
    json_object_set_new(t, "id", json_integer(row->id));
    json_object_set_new(t, "study_id", json_integer(row->study_id));
    json_object_set_new(t, "config_id", json_integer(row->config_id));
    json_object_set_new(t, "config", loads_or_null(row->config));
    json_object_set_new(t, "budget", budget_json_of(resource_integer, row->budget));
    json_object_set_new(t, "resume_from", row->resume_from ? json_integer(row->resume_from) : json_null());
    if (row->extra)
        json_object_set_new(t, "scheduler", loads_or_null(row->extra));
    json_object_set_new(t, "state", json_string(bd_trial_state_name(row->state)));
    json_object_set_new(t, "origin", json_string(bd_trial_origin_name(row->origin)));
    json_object_set_new(t, "worker", row->worker ? json_string(row->worker) : json_null());
    json_object_set_new(t, "created_at", json_real(row->created_at));
    if (row->state == BD_TRIAL_RUNNING)
        json_object_set_new(t, "lease_expires_at", json_real(row->lease_expires_at));
    else
        json_object_set_new(t, "finished_at", json_real(row->finished_at));
    if (row->has_value)
        json_object_set_new(t, "value", isnan(row->value) ? json_null() : json_real(row->value));
    if (row->values) /* several objectives or constraints: every metric as reported */
        json_object_set_new(t, "values", loads_or_null(row->values));
    if (row->constrained)
        json_object_set_new(t, "feasible", json_boolean(row->feasible));
    if (row->timeout)
        json_object_set_new(t, "timeout", json_true());
    if (row->reason)
        json_object_set_new(t, "reason", json_string(row->reason));
    if (row->has_instance)
        json_object_set_new(t, "instance", json_pack("{s:I, s:s?}", "index", (json_int_t)row->instance_index,
                                                     "name", row->instance_name));
    json_object_set_new(t, "user_attrs", bd_attrs_json(row->user_attrs));
    return t;
}

static json_t *incumbent_json(bd_store *store, const study_rt *st, const best_trial *b)
{
    bd_trial_row row = {0};
    bd_err err;
    if (!b->trial_id || bd_store_trial_get(store, b->trial_id, &row, &err))
        return json_null();
    json_t *inc = json_pack("{s:I, s:I, s:o, s:f, s:o}", "trial_id", (json_int_t)row.id, "config_id",
                            (json_int_t)row.config_id, "config", loads_or_null(row.config), "value",
                            st->spec.def.maximize ? -b->loss : b->loss, "budget", budget_json(st, row.budget));
    bd_store_trial_row_clear(&row);
    return inc;
}

/* The front's hypervolume and reference point (study.h), computed once per
 * change of the front. The reference: per objective the study's
 * "reference" (minimized), else BoTorch's rule over the front. */
static void front_hypervolume(study_rt *st)
{
    pareto_front *f = &st->front;
    size_t m = st->spec.def.n_objectives;
    if (f->hv_version == f->version + 1)
        return;
    double inferred[BD_STUDY_MAX_OBJECTIVES];
    for (size_t i = 0; i < m; i++)
        inferred[i] = INFINITY;
    if (f->n)
        bd_pareto_reference(f->losses, f->n, m, inferred);
    for (size_t i = 0; i < m; i++) {
        double r = st->spec.references[i];
        f->hv_ref[i] = isnan(r) ? inferred[i] : st->spec.def.objectives[i].maximize ? -r : r;
    }
    if (!f->n)
        f->hv = 0;
    else if (m >= 4 && f->n > BD_STUDY_HV_MAX_POINTS_4D)
        f->hv = NAN;
    else {
        f->hv = bd_pareto_hypervolume(f->losses, f->n, m, f->hv_ref);
        if (f->hv < 0)
            f->hv = NAN;
    }
    f->hv_version = f->version + 1;
}

/* "pareto_front", "hypervolume", "reference_point" of a study with several
 * objectives into j: the members' configs and values read from store. With
 * summary (a listing) "pareto_front_size" instead of the members: nothing
 * read from store. */
static void front_json(study_rt *st, bd_store *store, int summary, json_t *j)
{
    const bd_study_def *d = &st->spec.def;
    pareto_front *f = &st->front;
    json_t *front = summary ? NULL : json_array(), *ref = json_object();
    front_hypervolume(st);
    for (size_t i = 0; front && i < f->n; i++) {
        bd_trial_row row = {0};
        bd_err err;
        if (bd_store_trial_get(store, f->ids[i], &row, &err))
            continue; /* not committed yet: the next read shows it */
        json_array_append_new(front, json_pack("{s:I, s:o, s:o}", "trial_id", (json_int_t)row.id, "config",
                                               loads_or_null(row.config), "values", loads_or_null(row.values)));
        bd_store_trial_row_clear(&row);
    }
    for (size_t i = 0; i < d->n_objectives; i++) {
        double r = d->objectives[i].maximize ? -f->hv_ref[i] : f->hv_ref[i];
        json_object_set_new(ref, d->objectives[i].metric, isfinite(r) ? json_real(r) : json_null());
    }
    if (front)
        json_object_set_new(j, "pareto_front", front);
    else
        json_object_set_new(j, "pareto_front_size", json_integer((json_int_t)f->n));
    json_object_set_new(j, "pareto_front_truncated", json_boolean(f->truncated));
    /* null when not computed, or infinite (values near DBL_MAX: jansson has no inf, the key went missing) */
    json_object_set_new(j, "hypervolume", isfinite(f->hv) ? json_real(f->hv) : json_null());
    json_object_set_new(j, "reference_point", ref);
}

/* running / waiting / paused / done, from the limits, the paused flag and
 * the scheduler's status(): a read never asks the scheduler to propose
 * anything. A finished study is "done" even when paused: done is final,
 * a pause is not. */
static const char *study_state(const study_rt *st)
{
    if (bd_study_limit_reached(st))
        return "done";
    if (st->paused)
        return st->sched->ops->status(st->sched) == BD_STATUS_DONE ? "done" : "paused";
    switch (st->sched->ops->status(st->sched)) {
    case BD_STATUS_RUNNING:
        return "running";
    case BD_STATUS_WAITING:
        return "waiting";
    case BD_STATUS_DONE:
        break;
    }
    return "done";
}

static json_t *usage_json(const study_rt *st)
{
    return json_pack("{s:I, s:f, s:f}", "trials", (json_int_t)st->used.trials, "resource", st->used.resource,
                     "seconds", st->used.seconds);
}

static json_t *study_json(study_rt *st, bd_store *store, int summary)
{
    json_t *j = json_deep_copy(st->spec.normalized);
    json_t *counts = json_object();
    json_t *state = NULL;
    int64_t total = 0;
    json_object_set_new(j, "id", json_integer(st->id));
    json_object_set_new(j, "owner", json_string(st->owner));
    json_object_set_new(j, "created_at", json_real(st->created_at));
    json_object_set_new(j, "last_activity_at", json_real(st->last_activity_at));
    for (int s = 0; s < BD_TRIAL_NSTATES; s++) {
        json_object_set_new(counts, bd_trial_state_name((bd_trial_state)s), json_integer(st->counts[s]));
        total += st->counts[s];
    }
    json_object_set_new(counts, "total", json_integer(total));
    json_object_set_new(j, "trials", counts);
    if (st->sched->ops->describe(st->sched, &state) || !state)
        state = json_object();
    json_t *own_incumbent = json_object_get(state, "incumbent");
    if (st->spec.def.n_objectives > 1) { /* no single best: the front */
        json_object_set_new(j, "incumbent", json_null());
        json_object_set_new(j, "incumbent_full_budget", json_null());
        front_json(st, store, summary, j);
    } else {
        json_object_set_new(j, "incumbent",
                            own_incumbent ? json_incref(own_incumbent) : incumbent_json(store, st, &st->best));
        json_object_set_new(j, "incumbent_full_budget", incumbent_json(store, st, &st->best_full));
    }
    json_object_set_new(json_object_get(j, "scheduler"), "state", state);
    const char *status = study_state(st);
    json_object_set_new(j, "state", json_string(status));
    json_object_set_new(j, "done", json_boolean(strcmp(status, "done") == 0));
    json_object_set_new(j, "enqueued", json_integer((json_int_t)st->n_queued));
    json_object_set_new(j, "used", usage_json(st));
    json_object_set_new(j, "paused", json_boolean(st->paused));
    json_object_set_new(j, "metadata", bd_attrs_json(st->metadata));
    return j;
}

json_t *bd_study_json(study_rt *st, bd_store *store)
{
    return study_json(st, store, 0);
}

json_t *bd_study_summary_json(study_rt *st, bd_store *store)
{
    return study_json(st, store, 1);
}
