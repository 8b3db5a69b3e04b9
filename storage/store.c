/* store.c: the public calls of store.h, each forwarded to the backend the
 * store was opened with (store_ops.h), the transactions to its group commit
 * (group_commit.h). bd_store_open chooses it: a postgresql:// or
 * postgres:// URL opens PostgreSQL, anything else is a SQLite path. Nothing
 * here knows SQL. */
#include <string.h>

#include "store_ops.h"

int bd_store_is_pg_url(const char *name)
{
    return name && (strncmp(name, "postgresql://", 13) == 0 || strncmp(name, "postgres://", 11) == 0);
}

int bd_store_open(const char *path, const bd_store_opts *opts, bd_store **out, bd_err *err)
{
    if (!path || !*path)
        return bd_err_set(err, BD_EINVAL, "db", "no database path");
    if (bd_store_is_pg_url(path))
        return bd_pg_open(path, opts, out, err);
    return bd_sqlite_open(path, opts, out, err);
}

void bd_store_close(bd_store *s)
{
    if (s)
        s->ops->close(s);
}

int bd_store_schema_version(bd_store *s)
{
    /* Without a store: the version this build writes (both backends agree). */
    return s ? s->ops->schema_version(s) : BD_STORE_SCHEMA_LATEST;
}

int bd_store_begin(bd_store *s, bd_err *err)
{
    return bd_gc_begin(s->gc, err);
}

int bd_store_commit(bd_store *s, bd_err *err)
{
    return bd_gc_commit(s->gc, err);
}

void bd_store_rollback(bd_store *s)
{
    if (s)
        bd_gc_rollback(s->gc);
}

int bd_store_release(bd_store *s, uint64_t *ticket, bd_err *err)
{
    return bd_gc_release(s->gc, ticket, err);
}

int bd_store_wait(bd_store *s, uint64_t ticket, bd_err *err)
{
    return bd_gc_wait(s->gc, ticket, err);
}

uint64_t bd_store_failures(bd_store *s)
{
    return bd_gc_failures(s->gc);
}

int bd_store_writable(bd_store *s)
{
    return bd_gc_writable(s->gc);
}

int bd_store_probe(bd_store *s, double now, bd_err *err)
{
    return s->ops->probe(s, now, err);
}

void bd_store_recovered(bd_store *s, uint64_t failures)
{
    bd_gc_recovered(s->gc, failures);
}

uint64_t bd_store_current_ticket(bd_store *s)
{
    return bd_gc_current_ticket(s->gc);
}

void bd_store_fail_next_commit(bd_store *s)
{
    bd_gc_fail_next_commit(s->gc);
}

int bd_store_user_create(bd_store *s, const char *name, int is_admin, double now, int64_t *id, bd_err *err)
{
    return s->ops->user_create(s, name, is_admin, now, id, err);
}

int bd_store_user_by_name(bd_store *s, const char *name, bd_user *out, bd_err *err)
{
    return s->ops->user_by_name(s, name, out, err);
}

int bd_store_user_by_id(bd_store *s, int64_t id, bd_user *out, bd_err *err)
{
    return s->ops->user_by_id(s, id, out, err);
}

int bd_store_user_count(bd_store *s, int64_t *count, bd_err *err)
{
    return s->ops->user_count(s, count, err);
}

int bd_store_user_set_limits(bd_store *s, int64_t user_id, int64_t max_studies, int64_t max_definition_bytes, bd_err *err)
{
    return s->ops->user_set_limits(s, user_id, max_studies, max_definition_bytes, err);
}

int bd_store_user_usage(bd_store *s, int64_t user_id, int64_t *studies, int64_t *definition_bytes, bd_err *err)
{
    return s->ops->user_usage(s, user_id, studies, definition_bytes, err);
}

int bd_store_token_add(bd_store *s, int64_t user_id, const uint8_t hash[32], double now, int64_t *token_id, bd_err *err)
{
    return s->ops->token_add(s, user_id, hash, now, token_id, err);
}

int bd_store_token_get(bd_store *s, int64_t token_id, uint8_t hash[32], int64_t *user_id, bd_err *err)
{
    return s->ops->token_get(s, token_id, hash, user_id, err);
}

int bd_store_token_revoke(bd_store *s, int64_t token_id, bd_err *err)
{
    return s->ops->token_revoke(s, token_id, err);
}

int bd_store_study_insert(bd_store *s, const bd_study_row *row, int64_t *id, bd_err *err)
{
    return s->ops->study_insert(s, row, id, err);
}

int bd_store_study_get(bd_store *s, int64_t id, bd_study_row *out, bd_err *err)
{
    return s->ops->study_get(s, id, out, err);
}

int bd_store_study_each(bd_store *s, int64_t user_id, bd_study_fn fn, void *arg, bd_err *err)
{
    return s->ops->study_each(s, user_id, fn, arg, err);
}

int bd_store_study_index_each(bd_store *s, bd_study_fn fn, void *arg, bd_err *err)
{
    return s->ops->study_index_each(s, fn, arg, err);
}

int bd_store_study_page(bd_store *s, int64_t user_id, const char *name, int64_t after_id, int64_t limit, bd_study_fn fn, void *arg, bd_err *err)
{
    return s->ops->study_page(s, user_id, name, after_id, limit, fn, arg, err);
}

int bd_store_study_delete(bd_store *s, int64_t id, bd_err *err)
{
    return s->ops->study_delete(s, id, err);
}

int bd_store_study_set_paused(bd_store *s, int64_t id, int paused, bd_err *err)
{
    return s->ops->study_set_paused(s, id, paused, err);
}

int bd_store_study_set_metadata(bd_store *s, int64_t id, const char *metadata, bd_err *err)
{
    return s->ops->study_set_metadata(s, id, metadata, err);
}

int bd_store_study_set_definition(bd_store *s, int64_t id, const char *definition, bd_err *err)
{
    return s->ops->study_set_definition(s, id, definition, err);
}

int bd_store_trial_counts_each(bd_store *s, bd_trial_count_fn fn, void *arg, bd_err *err)
{
    return s->ops->trial_counts_each(s, fn, arg, err);
}

int bd_store_trial_insert(bd_store *s, const bd_trial_row *row, int64_t *id, bd_err *err)
{
    return s->ops->trial_insert(s, row, id, err);
}

int bd_store_trial_get(bd_store *s, int64_t id, bd_trial_row *out, bd_err *err)
{
    return s->ops->trial_get(s, id, out, err);
}

int bd_store_trial_finish(bd_store *s, const bd_trial_row *row, bd_err *err)
{
    return s->ops->trial_finish(s, row, err);
}

int bd_store_trial_set_lease(bd_store *s, int64_t id, double lease_expires_at, bd_err *err)
{
    return s->ops->trial_set_lease(s, id, lease_expires_at, err);
}

int bd_store_trial_set_user_attrs(bd_store *s, int64_t id, const char *user_attrs, bd_err *err)
{
    return s->ops->trial_set_user_attrs(s, id, user_attrs, err);
}

int bd_store_trial_set_config(bd_store *s, int64_t id, const char *config, bd_err *err)
{
    return s->ops->trial_set_config(s, id, config, err);
}

int bd_store_trial_each(bd_store *s, int64_t study_id, int state, int64_t instance, int64_t after_id, int64_t limit, bd_trial_fn fn, void *arg, bd_err *err)
{
    return s->ops->trial_each(s, study_id, state, instance, after_id, limit, fn, arg, err);
}

int bd_store_trial_each_best(bd_store *s, int64_t study_id, int maximize, int64_t instance, int64_t limit, bd_trial_fn fn, void *arg, bd_err *err)
{
    return s->ops->trial_each_best(s, study_id, maximize, instance, limit, fn, arg, err);
}

int bd_store_trial_each_with_steps(bd_store *s, int64_t study_id, int state, int64_t instance, int64_t after_id, int64_t limit, bd_trial_fn fn, void *arg, bd_err *err)
{
    return s->ops->trial_each_with_steps(s, study_id, state, instance, after_id, limit, fn, arg, err);
}

int bd_store_trial_each_expired(bd_store *s, double now, bd_trial_fn fn, void *arg, bd_err *err)
{
    return s->ops->trial_each_expired(s, now, fn, arg, err);
}

int bd_store_enqueue_push(bd_store *s, int64_t study_id, const char *config, double now, bd_err *err)
{
    return s->ops->enqueue_push(s, study_id, config, now, err);
}

int bd_store_enqueue_pop(bd_store *s, int64_t study_id, int64_t n, bd_err *err)
{
    return s->ops->enqueue_pop(s, study_id, n, err);
}

int bd_store_enqueue_each(bd_store *s, int64_t study_id, bd_enqueued_fn fn, void *arg, bd_err *err)
{
    return s->ops->enqueue_each(s, study_id, fn, arg, err);
}

int bd_store_event_append(bd_store *s, const bd_event_row *row, int64_t *id, bd_err *err)
{
    return s->ops->event_append(s, row, id, err);
}

int bd_store_next_ids(bd_store *s, int64_t *trial_id, int64_t *event_id, bd_err *err)
{
    return s->ops->next_ids(s, trial_id, event_id, err);
}

int bd_store_event_each(bd_store *s, int64_t study_id, bd_event_fn fn, void *arg, bd_err *err)
{
    return s->ops->event_each(s, study_id, fn, arg, err);
}

int bd_store_event_each_of_trial(bd_store *s, int64_t trial_id, bd_event_fn fn, void *arg, bd_err *err)
{
    return s->ops->event_each_of_trial(s, trial_id, fn, arg, err);
}

int bd_store_idem_get(bd_store *s, int64_t user_id, const char *key, char **fingerprint, char **response, bd_err *err)
{
    return s->ops->idem_get(s, user_id, key, fingerprint, response, err);
}

int bd_store_idem_put(bd_store *s, int64_t user_id, const char *key, const char *fingerprint, const char *response, double now, bd_err *err)
{
    return s->ops->idem_put(s, user_id, key, fingerprint, response, now, err);
}

int bd_store_idem_prune(bd_store *s, double before, bd_err *err)
{
    return s->ops->idem_prune(s, before, err);
}

/* ---- cluster mode ---- */

static int no_cluster(bd_store *s, bd_err *err)
{
    return bd_err_set(err, BD_EINVAL, NULL, "storage: the %s store has no cluster mode", s->ops->name);
}

int bd_store_cluster_join(bd_store *s, const char *url, int64_t *daemon_id, bd_err *err)
{
    return s->ops->cluster_join ? s->ops->cluster_join(s, url, daemon_id, err) : no_cluster(s, err);
}

int bd_store_cluster_heartbeat(bd_store *s, int64_t daemon_id, bd_err *err)
{
    return s->ops->cluster_heartbeat ? s->ops->cluster_heartbeat(s, daemon_id, err) : no_cluster(s, err);
}

void bd_store_cluster_leave(bd_store *s, int64_t daemon_id)
{
    if (s->ops->cluster_leave)
        s->ops->cluster_leave(s, daemon_id);
}

int bd_store_id_block(bd_store *s, int64_t *first, int64_t *count, bd_err *err)
{
    return s->ops->id_block ? s->ops->id_block(s, first, count, err) : no_cluster(s, err);
}

int bd_store_owner_acquire(bd_store *s, int64_t study_id, int64_t daemon_id, double lease, int steal,
                           int64_t *token, bd_err *err)
{
    return s->ops->owner_acquire ? s->ops->owner_acquire(s, study_id, daemon_id, lease, steal, token, err)
                                 : no_cluster(s, err);
}

int bd_store_owner_renew(bd_store *s, int64_t study_id, int64_t daemon_id, int64_t token, double lease,
                         bd_err *err)
{
    return s->ops->owner_renew ? s->ops->owner_renew(s, study_id, daemon_id, token, lease, err) : no_cluster(s, err);
}

void bd_store_owner_release(bd_store *s, int64_t study_id, int64_t daemon_id, int64_t token)
{
    if (s->ops->owner_release)
        s->ops->owner_release(s, study_id, daemon_id, token);
}

int bd_store_clock_skew(bd_store *s, double *skew, bd_err *err)
{
    return s->ops->clock_skew ? s->ops->clock_skew(s, skew, err) : no_cluster(s, err);
}

int bd_store_lock_user(bd_store *s, int64_t user_id, bd_err *err)
{
    /* One daemon per SQLite file: its store lock already serializes. */
    return s->ops->lock_user ? s->ops->lock_user(s, user_id, err) : 0;
}
