/* store_ops.h: how the public bd_store_* calls reach a backend, for the
 * files of storage/ only. A backend's connection record starts with a
 * bd_store (its ops table), so a bd_store * is a pointer to that record's
 * first member and the backend casts it back. store.c forwards every call of
 * store.h through s->ops; bd_store_open picks the backend by the name it is
 * given (store.c). Each slot has the contract of the store.h function of the
 * same name; close, NULL-safe there, is never called with NULL. Transactions
 * (begin ... fail_next_commit) are the same for every backend: store.c calls
 * the record's bd_gc (group_commit.h) for them, not a slot.
 *
 * Several daemons on one PostgreSQL database (issue 16): the cluster lists
 * below, per study leases with fencing tokens (pg_cluster.c); a backend
 * without them (SQLite) leaves their slots NULL and store.c refuses. */
#ifndef BD_STORE_OPS_H
#define BD_STORE_OPS_H

#include "group_commit.h"
#include "store.h"

/* The store's calls, one line each: X(name, (parameters), (arguments)).
 * Each is bd_store_<name> of store.h (its contract is there), whose first
 * parameter is the store, s; a backend implements it as bd_<backend>_<name>
 * (bd_sqlite_probe, bd_pg_probe). From these lists follow the slots of
 * bd_store_ops, store.c's forwarders, the backends' declarations
 * (sqlite_internal.h, pg_internal.h) and their ops tables, so a new call is
 * its line here, its declaration in store.h and its two implementations.
 *
 * BD_STORE_CALLS: int calls every backend has. */
#define BD_STORE_CALLS(X) \
    X(probe, (bd_store *s, double now, bd_err *err), (s, now, err)) \
    X(user_create, (bd_store *s, const char *name, int is_admin, double now, int64_t *id, bd_err *err), (s, name, is_admin, now, id, err)) \
    X(user_by_name, (bd_store *s, const char *name, bd_user *out, bd_err *err), (s, name, out, err)) \
    X(user_by_id, (bd_store *s, int64_t id, bd_user *out, bd_err *err), (s, id, out, err)) \
    X(user_count, (bd_store *s, int64_t *count, bd_err *err), (s, count, err)) \
    X(user_set_limits, (bd_store *s, int64_t user_id, int64_t max_studies, int64_t max_definition_bytes, bd_err *err), (s, user_id, max_studies, max_definition_bytes, err)) \
    X(user_usage, (bd_store *s, int64_t user_id, int64_t *studies, int64_t *definition_bytes, bd_err *err), (s, user_id, studies, definition_bytes, err)) \
    X(token_add, (bd_store *s, int64_t user_id, const uint8_t hash[32], double now, int64_t *token_id, bd_err *err), (s, user_id, hash, now, token_id, err)) \
    X(token_get, (bd_store *s, int64_t token_id, uint8_t hash[32], int64_t *user_id, bd_err *err), (s, token_id, hash, user_id, err)) \
    X(token_revoke, (bd_store *s, int64_t token_id, bd_err *err), (s, token_id, err)) \
    X(study_insert, (bd_store *s, const bd_study_row *row, int64_t *id, bd_err *err), (s, row, id, err)) \
    X(study_get, (bd_store *s, int64_t id, bd_study_row *out, bd_err *err), (s, id, out, err)) \
    X(study_each, (bd_store *s, int64_t user_id, bd_study_fn fn, void *arg, bd_err *err), (s, user_id, fn, arg, err)) \
    X(study_index_each, (bd_store *s, bd_study_fn fn, void *arg, bd_err *err), (s, fn, arg, err)) \
    X(study_page, (bd_store *s, int64_t user_id, const char *name, int64_t after_id, int64_t limit, bd_study_fn fn, void *arg, bd_err *err), (s, user_id, name, after_id, limit, fn, arg, err)) \
    X(study_delete, (bd_store *s, int64_t id, bd_err *err), (s, id, err)) \
    X(study_set_paused, (bd_store *s, int64_t id, int paused, bd_err *err), (s, id, paused, err)) \
    X(study_set_metadata, (bd_store *s, int64_t id, const char *metadata, bd_err *err), (s, id, metadata, err)) \
    X(study_set_definition, (bd_store *s, int64_t id, const char *definition, bd_err *err), (s, id, definition, err)) \
    X(trial_counts_each, (bd_store *s, bd_trial_count_fn fn, void *arg, bd_err *err), (s, fn, arg, err)) \
    X(trial_insert, (bd_store *s, const bd_trial_row *row, int64_t *id, bd_err *err), (s, row, id, err)) \
    X(trial_get, (bd_store *s, int64_t id, bd_trial_row *out, bd_err *err), (s, id, out, err)) \
    X(trial_finish, (bd_store *s, const bd_trial_row *row, bd_err *err), (s, row, err)) \
    X(trial_set_lease, (bd_store *s, int64_t id, double lease_expires_at, bd_err *err), (s, id, lease_expires_at, err)) \
    X(trial_set_user_attrs, (bd_store *s, int64_t id, const char *user_attrs, bd_err *err), (s, id, user_attrs, err)) \
    X(trial_set_config, (bd_store *s, int64_t id, const char *config, bd_err *err), (s, id, config, err)) \
    X(trial_each, (bd_store *s, int64_t study_id, int state, int64_t instance, int64_t after_id, int64_t limit, bd_trial_fn fn, void *arg, bd_err *err), (s, study_id, state, instance, after_id, limit, fn, arg, err)) \
    X(trial_each_best, (bd_store *s, int64_t study_id, int maximize, int64_t instance, int64_t limit, bd_trial_fn fn, void *arg, bd_err *err), (s, study_id, maximize, instance, limit, fn, arg, err)) \
    X(trial_each_with_steps, (bd_store *s, int64_t study_id, int state, int64_t instance, int64_t after_id, int64_t limit, bd_trial_fn fn, void *arg, bd_err *err), (s, study_id, state, instance, after_id, limit, fn, arg, err)) \
    X(trial_each_expired, (bd_store *s, double now, bd_trial_fn fn, void *arg, bd_err *err), (s, now, fn, arg, err)) \
    X(enqueue_push, (bd_store *s, int64_t study_id, const char *config, double now, bd_err *err), (s, study_id, config, now, err)) \
    X(enqueue_pop, (bd_store *s, int64_t study_id, int64_t n, bd_err *err), (s, study_id, n, err)) \
    X(enqueue_each, (bd_store *s, int64_t study_id, bd_enqueued_fn fn, void *arg, bd_err *err), (s, study_id, fn, arg, err)) \
    X(event_append, (bd_store *s, const bd_event_row *row, int64_t *id, bd_err *err), (s, row, id, err)) \
    X(next_ids, (bd_store *s, int64_t *trial_id, int64_t *event_id, bd_err *err), (s, trial_id, event_id, err)) \
    X(event_each, (bd_store *s, int64_t study_id, bd_event_fn fn, void *arg, bd_err *err), (s, study_id, fn, arg, err)) \
    X(event_each_of_trial, (bd_store *s, int64_t trial_id, bd_event_fn fn, void *arg, bd_err *err), (s, trial_id, fn, arg, err)) \
    X(idem_get, (bd_store *s, int64_t user_id, const char *key, char **fingerprint, char **response, bd_err *err), (s, user_id, key, fingerprint, response, err)) \
    X(idem_put, (bd_store *s, int64_t user_id, const char *key, const char *fingerprint, const char *response, double now, bd_err *err), (s, user_id, key, fingerprint, response, now, err)) \
    X(idem_prune, (bd_store *s, double before, bd_err *err), (s, before, err)) \
    X(lock_user, (bd_store *s, int64_t user_id, bd_err *err), (s, user_id, err))

/* Cluster mode (PostgreSQL only): int calls that a backend without it (SQLite)
 * leaves NULL; store.c then answers BD_EINVAL. */
#define BD_STORE_CLUSTER_CALLS(X) \
    X(cluster_join, (bd_store *s, const char *url, int64_t *daemon_id, bd_err *err), (s, url, daemon_id, err)) \
    X(cluster_heartbeat, (bd_store *s, int64_t daemon_id, bd_err *err), (s, daemon_id, err)) \
    X(id_block, (bd_store *s, int64_t *first, int64_t *count, bd_err *err), (s, first, count, err)) \
    X(owner_acquire, (bd_store *s, int64_t study_id, int64_t daemon_id, double lease, int steal, int64_t *token, bd_err *err), (s, study_id, daemon_id, lease, steal, token, err)) \
    X(owner_renew, (bd_store *s, int64_t study_id, int64_t daemon_id, int64_t token, double lease, bd_err *err), (s, study_id, daemon_id, token, lease, err)) \
    X(owner_lookup, (bd_store *s, int64_t study_id, bd_owner *out, bd_err *err), (s, study_id, out, err)) \
    X(owner_renew_held, (bd_store *s, int64_t daemon_id, double lease, bd_owner_fn fn, void *arg, bd_err *err), (s, daemon_id, lease, fn, arg, err)) \
    X(clock_skew, (bd_store *s, double *skew, bd_err *err), (s, skew, err))

/* Cluster mode, void calls: store.c does nothing where the slot is NULL. */
#define BD_STORE_CLUSTER_VOID_CALLS(X) \
    X(cluster_leave, (bd_store *s, int64_t daemon_id), (s, daemon_id)) \
    X(owner_release, (bd_store *s, int64_t study_id, int64_t daemon_id, int64_t token), (s, study_id, daemon_id, token))

#define BD_STORE_SLOT(name, params, args) int(*name) params;
#define BD_STORE_VOID_SLOT(name, params, args) void(*name) params;
typedef struct bd_store_ops {
    const char *name; /* "sqlite", "postgresql": for messages */
    void (*close)(bd_store *s);
    int (*schema_version)(bd_store *s);
    BD_STORE_CALLS(BD_STORE_SLOT)
    BD_STORE_CLUSTER_CALLS(BD_STORE_SLOT)
    BD_STORE_CLUSTER_VOID_CALLS(BD_STORE_VOID_SLOT)
} bd_store_ops;
#undef BD_STORE_SLOT
#undef BD_STORE_VOID_SLOT

struct bd_store {
    const bd_store_ops *ops; /* the backend; first member of its record */
    bd_gc *gc;               /* its transactions (group_commit.h), in its record */
};

/* The backends' openers: path is a file (or ":memory:") for SQLite, a
 * postgresql:// or postgres:// URL for PostgreSQL. *out is new. */
int bd_sqlite_open(const char *path, const bd_store_opts *opts, bd_store **out, bd_err *err) BD_MUST_CHECK;
int bd_pg_open(const char *url, const bd_store_opts *opts, bd_store **out, bd_err *err) BD_MUST_CHECK;
/* The schema version (of the logical model in store.h) this build writes;
 * each backend's migrations end there. */
#define BD_STORE_SCHEMA_LATEST 7

/* Names shared by the backends, which store states, origins and event types
 * by name (store_rows.c). */
const char *bd_store_event_type_name(int type); /* NULL unless BD_EV_CREATED .. BD_EV_STOPPED */
int bd_store_event_type_parse(const char *name); /* -1 if unknown */

#endif
