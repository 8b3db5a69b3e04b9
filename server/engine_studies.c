/* engine_studies.c: creating, reading and deleting studies, and suggest:
 * asking the study's scheduler for trials and recording each as a stored
 * trial plus its CREATED event, all in one transaction. */
#include "attrs.h"
#include "engine.h"
#include "engine_cluster.h"
#include "engine_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SUGGEST_COUNT 100
#define MAX_WORKER_NAME 200
/* How long a worker told "nothing now" should wait before asking again. */
#define RETRY_AFTER_MS 500
/* The same for a paused study: a pause is a person's decision, lifted by a
 * person, so workers poll it slowly (api/openapi.yaml documents it). */
#define PAUSED_RETRY_AFTER_MS 5000
/* Parameter values one suggest answer may hold (count x parameters): about
 * 600 KB of JSON at most (documented in api/openapi.yaml). */
#define SUGGEST_MAX_VALUES 20000

/* The id of the first study a page scan saw (a name lookup). */
typedef struct named_ctx {
    int64_t id;
} named_ctx;

static int first_named(const bd_study_row *row, void *arg)
{
    ((named_ctx *)arg)->id = row->id;
    return 1;
}

/* The scheduler options that mine has and the body did not give were
 * written by new_study_defaults (sched.h): a default. The stored study's
 * value stands for each, or its absence (a study stored before the default
 * changed lacks it). Options either side gave are still compared. */
static void follow_stored_defaults(json_t *mine, const json_t *theirs, const json_t *body)
{
    json_t *opts = json_object_get(json_object_get(mine, "scheduler"), "options");
    const json_t *given = json_object_get(json_object_get(body, "scheduler"), "options");
    const json_t *stored = json_object_get(json_object_get(theirs, "scheduler"), "options");
    const char *key;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(opts, tmp, key, v) {
        if (json_object_get(given, key))
            continue;
        if (json_object_get(stored, key))
            json_object_set(opts, key, json_object_get(stored, key));
        else
            json_object_del(opts, key);
    }
}

/* "load": the existing study (st->mu held) answers when body defines the
 * same study; else BD_ECONFLICT naming the first top-level field that
 * differs. A body without "seed" takes any seed (it would draw a new one),
 * and one without "lease_seconds" any lease (its default is the daemon's
 * --lease-seconds, which may have changed since the study was made); a
 * new default of the scheduler's follows the stored study. */
static int load_existing(bd_engine *e, study_rt *st, const bd_study_spec *spec, const json_t *body, json_t **out,
                         bd_err *err)
{
    json_t *mine = json_deep_copy(spec->normalized), *theirs = st->spec.normalized;
    const char *key;
    json_t *v;
    int rc = 0;
    if (!json_object_get(body, "seed"))
        json_object_set(mine, "seed", json_object_get(theirs, "seed"));
    if (!json_object_get(body, "lease_seconds") && json_object_get(theirs, "lease_seconds"))
        json_object_set(mine, "lease_seconds", json_object_get(theirs, "lease_seconds"));
    /* what trials asked for since is the study's own growth, not another definition */
    if (!json_object_get(body, "asked_parameters") && json_object_get(theirs, "asked_parameters"))
        json_object_set(mine, "asked_parameters", json_object_get(theirs, "asked_parameters"));
    follow_stored_defaults(mine, theirs, body);
    json_object_foreach(mine, key, v) {
        if (!json_equal(v, json_object_get(theirs, key))) {
            rc = bd_err_set(err, BD_ECONFLICT, key, "study %lld is named so but its %s differs",
                            (long long)st->id, key);
            break;
        }
    }
    if (!rc) {
        json_object_foreach(theirs, key, v) {
            if (!json_object_get(mine, key)) {
                rc = bd_err_set(err, BD_ECONFLICT, key, "study %lld is named so but has %s", (long long)st->id,
                                key);
                break;
            }
        }
    }
    json_decref(mine);
    if (!rc)
        *out = bd_study_json(st, bd_engine_store(e));
    return rc;
}

/* The value of "if_exists" (0 error, 1 load, 2 create) and "metadata"
 * (*metadata: new compact text, or NULL for none), both removed from a copy
 * of body (*def, new) that the study parser then sees: neither is part of
 * the definition, so metadata never makes "load" differ. */
static int parse_if_exists(const json_t *body, json_t **def, int *mode, char **metadata, bd_err *err)
{
    static const char *const modes[] = {"error", "load", "create"};
    const json_t *v = json_object_get(body, "if_exists"), *meta = json_object_get(body, "metadata");
    *mode = 0;
    *metadata = NULL;
    if (v) {
        *mode = -1;
        for (int i = 0; json_is_string(v) && i < 3; i++)
            if (strcmp(json_string_value(v), modes[i]) == 0)
                *mode = i;
        if (*mode < 0)
            return bd_err_set(err, BD_EINVAL, "if_exists", "must be one of error, load, create");
    }
    /* Last: nothing else can fail once *metadata is set. */
    if (meta && !json_is_null(meta)) {
        int rc = bd_attrs_merge(NULL, meta, "metadata", metadata, err);
        if (rc)
            return rc;
    }
    *def = json_copy((json_t *)body);
    json_object_del(*def, "if_exists");
    json_object_del(*def, "metadata");
    return 0;
}

int bd_engine_create_study(bd_engine *e, const bd_request *req, const json_t *body, json_t **out, int *loaded,
                           bd_err *err)
{
    bd_engine_recover_if_needed(e);
    study_rt *st = bd_xcalloc(1, sizeof *st);
    bd_study_row row = {0};
    json_t *answer = NULL, *def = NULL;
    char *metadata = NULL;
    int rc, mode;
    if (loaded)
        *loaded = 0;
    pthread_mutex_init(&st->mu, NULL);
    if ((rc = parse_if_exists(body, &def, &mode, &metadata, err)))
        goto out;
    bd_study_set_meta(st, 0, metadata); /* "load" leaves the existing study's metadata as it is */
    if ((rc = bd_study_spec_parse(def, bd_engine_default_lease(e), &st->spec, err)))
        goto out;
    const struct bd_sched_ops *ops = bd_study_spec_sched(&st->spec);
    if (ops->new_study_defaults) /* options is the object inside spec.normalized, which is what gets stored */
        ops->new_study_defaults(&st->spec.def, (json_t *)st->spec.def.options);
    if ((rc = ops->create(&st->spec.def, &st->sched, err)))
        goto out;
    if ((rc = bd_engine_txn_begin(e, req, out, err))) {
        rc = rc > 0 ? 0 : rc;
        goto out;
    }
    /* Looked up inside the transaction: the store lock it holds makes the
     * lookup and the insert one step against a concurrent create through
     * this daemon; in cluster mode the user's lock (held to the commit)
     * does the same against its peers, for the name and the quotas. */
    if ((rc = bd_store_lock_user(bd_engine_store(e), req->caller->user_id, err))) {
        bd_store_rollback(bd_engine_store(e));
        goto out;
    }
    if (mode != 2) {
        named_ctx found = {0};
        rc = bd_store_study_page(bd_engine_store(e), req->caller->user_id, st->spec.def.name, 0, 1, first_named, &found,
                                 err);
        rc = rc == 1 ? 0 : rc;
        if (!rc && found.id && mode == 0)
            rc = bd_err_set(err, BD_ECONFLICT, "name",
                            "study %lld already has this name (\"if_exists\": \"load\" answers it, "
                            "\"create\" makes another)", (long long)found.id);
        if (rc || found.id) {
            bd_store_rollback(bd_engine_store(e));
            /* The registry's lock and the study's mutex are taken only now that
             * the store lock is released: recovery takes them before it. */
            study_rt *old = rc ? NULL : bd_engine_study(e, found.id, req->caller->user_id);
            if (!rc && !old) /* committed by a concurrent create that has not registered it yet */
                rc = bd_err_set(err, BD_ECONFLICT, "name", "study %lld of this name is being created; retry",
                                (long long)found.id);
            if (!rc && (rc = bd_engine_lock_study(e, req->caller, found.id, &old, err)) == BD_ENOTFOUND)
                rc = bd_err_set(err, BD_ECONFLICT, "name", "study %lld was just deleted; retry", (long long)found.id);
            if (!rc) {
                rc = load_existing(e, old, &st->spec, def, &answer, err);
                bd_engine_unlock_study(e, old);
                if (!rc && loaded)
                    *loaded = 1;
                if (!rc) {
                    *out = answer;
                    answer = NULL;
                }
            }
            goto out;
        }
    }
    st->user_id = req->caller->user_id;
    st->created_at = bd_now();
    st->last_activity_at = st->created_at;
    snprintf(st->owner, sizeof st->owner, "%s", req->caller->name);
    row.user_id = st->user_id;
    row.name = (char *)st->spec.def.name;
    row.definition = json_dumps(st->spec.normalized, JSON_COMPACT);
    row.created_at = st->created_at;
    row.metadata = st->metadata;
    size_t definition_bytes = strlen(row.definition);
    rc = bd_engine_check_quota(e, st->user_id, 1, definition_bytes, err);
    if (!rc)
        rc = bd_store_study_insert(bd_engine_store(e), &row, &st->id, err);
    free(row.definition);
    if (!rc) {
        st->spec.def.id = st->id;
        answer = bd_study_json(st, bd_engine_store(e));
    }
    if ((rc = bd_engine_txn_end(e, req, rc, answer, err)))
        goto out;
    bd_engine_study_cached(e, st, definition_bytes);
    if (bd_engine_cluster(e)) {
        /* Its creator serves it first; if the lease cannot be taken now,
         * the next request claims it (and replays it). */
        bd_err ignored;
        pthread_mutex_lock(&st->mu);
        if (bd_engine_claim_study(e, st, 0, &ignored))
            bd_engine_study_unload(e, st);
        pthread_mutex_unlock(&st->mu);
    }
    if (bd_engine_study_register(e, st) != st) {
        /* Cluster mode: a request through this daemon found the committed
         * study in storage and registered it first. That copy is the one
         * (unloaded; its first claim sees this claim's token as a move and
         * replays); this one goes, so one daemon never holds two. */
        bd_engine_study_unload(e, st);
        bd_study_free(st);
    }
    bd_engine_cache_trim_if_over(e);
    json_decref(def);
    *out = answer;
    return 0;
out:
    json_decref(def);
    json_decref(answer);
    bd_study_free(st);
    return rc;
}

typedef struct page_ctx {
    bd_engine *e;
    const bd_caller *who;
    json_t *list;
    int64_t last_id;
    int64_t rows;
    bd_err *err;
} page_ctx;

static int add_study(const bd_study_row *row, void *arg)
{
    page_ctx *c = arg;
    study_rt *st;
    c->rows++;
    c->last_id = row->id;
    int rc = bd_engine_lock_study(c->e, c->who, row->id, &st, c->err);
    if (rc == BD_ENOTFOUND) { /* deleted since the read */
        bd_err_clear(c->err);
        return 0;
    }
    if (rc == BD_EFORWARD) { /* cluster mode: a peer holds it; the HTTP layer asks that peer for the entry */
        int64_t peer = 0;
        char url[256] = "";
        (void)bd_engine_forward_target(&peer, url, sizeof url);
        bd_err_clear(c->err);
        json_array_append_new(c->list, json_pack("{s:I, s:{s:I, s:s}}", "id", (json_int_t)row->id, "forward",
                                                 "daemon", (json_int_t)peer, "url", url));
        return 0;
    }
    if (rc) /* busy: the page is refused whole rather than missing a study */
        return rc;
    json_array_append_new(c->list, bd_study_summary_json(st, bd_engine_store(c->e))); /* no front members */
    bd_engine_unlock_study(c->e, st);
    return 0;
}

int bd_engine_list_studies(bd_engine *e, const bd_caller *who, const bd_study_query *q, json_t **out, bd_err *err)
{
    if (q->limit < 1 || q->limit > 1000)
        return bd_err_set(err, BD_EINVAL, "limit", "must be from 1 to 1000");
    if (q->after < 0)
        return bd_err_set(err, BD_EINVAL, "after", "must be a study id >= 0");
    /* The caller's own studies from the store's index (user, id): the page
     * costs its length, however many studies other users have. */
    page_ctx c = {.e = e, .who = who, .list = json_array(), .err = err};
    int rc = bd_store_study_page(bd_engine_store(e), who->user_id, q->name, q->after, q->limit, add_study, &c, err);
    if (rc) {
        json_decref(c.list);
        return rc;
    }
    *out = json_pack("{s:o, s:o}", "studies", c.list, "next_after",
                     c.rows == q->limit ? json_integer(c.last_id) : json_null());
    return 0;
}

int bd_engine_get_study(bd_engine *e, const bd_caller *who, int64_t study_id, json_t **out, bd_err *err)
{
    study_rt *st;
    int rc = bd_engine_lock_study(e, who, study_id, &st, err);
    if (rc)
        return rc;
    *out = bd_study_json(st, bd_engine_store(e));
    bd_engine_unlock_study(e, st);
    return 0;
}

int bd_engine_delete_study(bd_engine *e, const bd_request *req, int64_t study_id, json_t **out, bd_err *err)
{
    study_rt *st;
    int rc = bd_engine_lock_study(e, req->caller, study_id, &st, err);
    if (rc == BD_ENOTFOUND && req->idem_key) {
        /* A retried DELETE finds the study gone: answer what the first one did. */
        bd_err ignored;
        int hit = bd_engine_txn_begin(e, req, out, &ignored);
        if (hit == 0)
            bd_store_rollback(bd_engine_store(e)); /* nothing stored under the key */
        return hit == 1 ? 0 : rc;
    }
    if (rc)
        return rc;
    json_t *answer = json_pack("{s:b, s:I}", "deleted", 1, "id", (json_int_t)study_id);
    if ((rc = bd_engine_txn_begin(e, req, out, err)) == 0) {
        rc = bd_store_study_delete(bd_engine_store(e), study_id, err);
        if ((rc = bd_engine_txn_end(e, req, rc, answer, err)) == 0) {
            st->deleted = 1;
            bd_engine_study_unload(e, st);
            *out = answer;
            answer = NULL;
        }
    }
    bd_engine_unlock_study(e, st);
    json_decref(answer);
    return rc > 0 ? 0 : rc;
}

/* ----------------------------------------------------------------- suggest */

typedef struct suggest_args {
    const char *worker;
    long long count;
} suggest_args;

static int parse_suggest(const json_t *body, suggest_args *a, bd_err *err)
{
    const char *key;
    json_t *v;
    a->worker = "";
    a->count = 1;
    json_object_foreach((json_t *)body, key, v) {
        if (strcmp(key, "worker") == 0) {
            if (!json_is_string(v) || json_string_length(v) > MAX_WORKER_NAME)
                return bd_err_set(err, BD_EINVAL, "worker", "must be a string of at most %d characters",
                                  MAX_WORKER_NAME);
            a->worker = json_string_value(v);
        } else if (strcmp(key, "count") == 0) {
            if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > MAX_SUGGEST_COUNT)
                return bd_err_set(err, BD_EINVAL, "count", "must be an integer from 1 to %d", MAX_SUGGEST_COUNT);
            a->count = json_integer_value(v);
        } else {
            return bd_err_set(err, BD_EINVAL, key, "unknown member");
        }
    }
    return 0;
}

/* A scheduler's proposal must fit the study: checked so a scheduler bug
 * becomes a 500 with a message instead of a corrupt trial. */
static int check_suggestion(const study_rt *st, const bd_suggestion *s, const json_t *config, bd_err *err)
{
    const bd_study_def *d = &st->spec.def;
    bd_err why;
    if (!json_is_object(config))
        return bd_err_set(err, BD_EINTERNAL, NULL, "scheduler proposed no config");
    if (bd_space_validate_config(d->space, config, &why))
        return bd_err_set(err, BD_EINTERNAL, NULL, "scheduler proposed a config outside the space: %s: %s",
                          why.field[0] ? why.field : "config", why.message);
    if (!(s->budget >= d->r_min - 1e-9 && s->budget <= d->r_max + 1e-9))
        return bd_err_set(err, BD_EINTERNAL, NULL, "scheduler proposed budget %g outside [%g, %g]", s->budget,
                          d->r_min, d->r_max);
    if (s->config_id < 0 || s->resume_from < 0 || (s->resume_from && !s->config_id))
        return bd_err_set(err, BD_EINTERNAL, NULL, "scheduler proposed an invalid config_id or resume_from");
    if (s->has_instance && (s->instance < 0 || (size_t)s->instance >= d->n_instances))
        return bd_err_set(err, BD_EINTERNAL, NULL, "scheduler proposed instance %lld of %zu",
                          (long long)s->instance, d->n_instances);
    return 0;
}

/* The budget of trial id, which this study created earlier (a promotion's
 * resume_from): from this request's own plan, else from storage. */
static double budget_of(bd_engine *e, const bd_write_plan *plan, int64_t id)
{
    bd_trial_row t = {0};
    bd_err err;
    for (size_t i = 0; i < plan->n_inserts; i++)
        if (plan->inserts[i].id == id)
            return plan->inserts[i].budget;
    double budget = bd_store_trial_get(bd_engine_store(e), id, &t, &err) == 0 ? t.budget : 0;
    bd_store_trial_row_clear(&t);
    return budget;
}

/* Plans one proposal as a running trial and feeds its CREATED event. The
 * row's config and extra text are the plan's (bd_write_plan_own); its
 * worker and instance name are borrowed. */
static int plan_trial(bd_engine *e, study_rt *st, bd_write_plan *plan, bd_suggestion *s, bd_trial_origin origin,
                      const char *worker, json_t *trials, bd_err *err)
{
    double now = bd_now();
    bd_decision d;
    int rc;
    /* An enqueued config may hold values for parameters trials will ask
     * for: the scheduler sees the declared ones only. */
    json_t *seen = json_incref(s->config);
    if (origin == BD_ORIGIN_ENQUEUED && bd_study_spec_grows(&st->spec)) {
        json_decref(seen);
        bd_study_scheduler_config(&st->spec, seen = json_copy(s->config));
    }
    if ((rc = check_suggestion(st, s, seen, err))) {
        json_decref(seen);
        return rc;
    }
    if (st->spec.def.resource_integer)
        s->budget = round(s->budget);
    if (plan->n_inserts == plan->cap_inserts) {
        plan->cap_inserts = plan->cap_inserts ? 2 * plan->cap_inserts : 4;
        plan->inserts = bd_xrealloc(plan->inserts, plan->cap_inserts * sizeof *plan->inserts);
    }
    bd_trial_row *row = &plan->inserts[plan->n_inserts++];
    memset(row, 0, sizeof *row);
    row->id = bd_engine_take_id(e, 0, plan);
    row->study_id = st->id;
    row->config_id = s->config_id ? s->config_id : row->id;
    row->config = bd_write_plan_own(plan, json_dumps(s->config, JSON_COMPACT | JSON_SORT_KEYS));
    row->extra = s->extra ? bd_write_plan_own(plan, json_dumps(s->extra, JSON_COMPACT)) : NULL;
    row->budget = s->budget;
    row->resume_from = s->resume_from;
    row->state = BD_TRIAL_RUNNING;
    row->origin = origin;
    row->worker = (char *)worker;
    row->created_at = now;
    row->lease_expires_at = now + st->spec.def.lease_seconds;
    if ((row->has_instance = s->has_instance)) {
        row->instance_index = s->instance;
        row->instance_name = (char *)json_string_value(json_array_get(st->spec.def.instances, (size_t)s->instance));
    }
    double resumed = s->resume_from ? budget_of(e, plan, s->resume_from) : 0;
    bd_event_row created = {.study_id = st->id, .trial_id = row->id, .type = BD_EV_CREATED, .value = NAN,
                            .elapsed_seconds = NAN, .created_at = now};
    int64_t event_id = bd_write_plan_push_event(e, plan, &created)->id;
    bd_event ev = {.type = BD_EV_CREATED, .id = event_id, .trial_id = row->id, .config_id = row->config_id,
                   .budget = row->budget, .config = seen, .resume_from = row->resume_from,
                   .extra = s->extra, .has_instance = row->has_instance, .instance = row->instance_index,
                   .loss = NAN, .elapsed_seconds = NAN};
    bd_study_feed(st, &ev, 0, resumed, &d);
    json_decref(seen);
    bd_study_touch(st, now);
    json_array_append_new(trials, bd_study_trial_json(st, row));
    return 0;
}

/* A user's enqueued config stands in for a fresh one the scheduler
 * proposed (sched.h takes_enqueued): the trial keeps the scheduler's budget
 * and fields, so it enters e.g. a bracket's first rung like any new config.
 * Promotions, resumptions and instance runs are never replaced. */
static bd_trial_origin take_enqueued(study_rt *st, bd_suggestion *s, bd_write_plan *plan)
{
    if (!st->n_queued || !st->sched->ops->takes_enqueued || s->config_id || s->resume_from || s->has_instance)
        return BD_ORIGIN_SUGGESTED;
    json_decref(s->config);
    s->config = bd_study_dequeue(st);
    st->dirty = 1; /* the queue now differs from storage until this request commits */
    plan->study_id = st->id;
    plan->dequeued++;
    return BD_ORIGIN_ENQUEUED;
}

/* Suggest's operation on its locked study (bd_engine_study_op). */
static int suggest_op(bd_engine *e, study_rt *st, void *arg, bd_write_plan *plan, json_t **answer, bd_err *err)
{
    const suggest_args *a = arg;
    int rc = 0;
    if (st->paused) {
        /* Nothing is handed out, and the scheduler is not asked: a finished
         * study still answers done, as its "state" says. */
        int done = bd_study_limit_reached(st) || st->sched->ops->status(st->sched) == BD_STATUS_DONE;
        *answer = done ? json_pack("{s:[], s:b}", "trials", "done", 1)
                       : json_pack("{s:[], s:i, s:b}", "trials", "retry_after_ms", PAUSED_RETRY_AFTER_MS, "paused", 1);
        return 0;
    }
    /* One answer holds at most SUGGEST_MAX_VALUES parameter values, so a wide
     * space cannot make one request huge: the count is cut, never refused. */
    size_t width = bd_space_size(st->spec.def.space);
    long long count = a->count, fits = (long long)(SUGGEST_MAX_VALUES / (width ? width : 1));
    if (count > fits)
        count = fits > 0 ? fits : 1;
    json_t *trials = json_array();
    int outcome = BD_SUGGEST_TRIAL;
    for (long long i = 0; i < count && !rc; i++) {
        if (bd_study_limit_reached(st)) {
            outcome = BD_SUGGEST_DONE;
            break;
        }
        bd_suggest_ctx ctx = {.trials_created = st->trials_created, .worker = a->worker};
        bd_suggestion s = {0};
        bd_rng_seed(&ctx.rng, st->spec.def.seed, (uint64_t)st->trials_created);
        outcome = st->sched->ops->suggest(st->sched, &ctx, &s, err);
        if (outcome < 0)
            rc = outcome;
        else if (outcome == BD_SUGGEST_TRIAL)
            rc = plan_trial(e, st, plan, &s, take_enqueued(st, &s, plan), a->worker, trials, err);
        json_decref(s.config);
        json_decref(s.extra);
        if (outcome != BD_SUGGEST_TRIAL)
            break;
    }
    *answer = json_pack("{s:o}", "trials", trials);
    if (!rc && json_array_size(trials) == 0) {
        if (outcome == BD_SUGGEST_DONE)
            json_object_set_new(*answer, "done", json_true());
        else
            json_object_set_new(*answer, "retry_after_ms", json_integer(RETRY_AFTER_MS));
    }
    return rc;
}

int bd_engine_suggest(bd_engine *e, const bd_request *req, int64_t study_id, const json_t *body, json_t **out,
                      bd_err *err)
{
    suggest_args a;
    int rc = parse_suggest(body, &a, err);
    if (rc)
        return rc;
    bd_write_plan plan = {0};
    rc = bd_engine_study_op(e, req, study_id, BD_OP_WAIT, suggest_op, &a, &plan, out, err);
    bd_write_plan_clear(&plan);
    return rc;
}
