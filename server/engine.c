/* engine.c: the engine's lifecycle (open: storage, the first admin, the
 * index of studies; close), the lease reaper thread, health and the
 * figures of /metrics. The top of the engine: it calls the other engine
 * files and none of them calls it (server/README.md).
 *
 * It builds and frees struct bd_engine (engine_state.h), the one file
 * besides engine_state.c that reads its fields: what no other file writes
 * (the store, the options, the reaper) and the parts other files own, the
 * registry of studies (engine_registry.c) and the auth caches
 * (engine_auth.c), each private to its file. The other files read it
 * through engine_state.c's accessors. */
#include "engine.h"
#include "engine_state.h"
#include "log.h"

#include <gsl/gsl_errno.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------------ reaper */

/* Cluster mode: trial leases (lease_expires_at, the reaper's sweep) are
 * judged by each member's wall clock, so members must agree on the time.
 * Each is compared with PostgreSQL's clock at join (beyond the bound the
 * daemon refuses to start) and on every heartbeat (beyond it, an error in
 * the log every time: expiries through this member are off by the skew). */
#define CLOCK_SKEW_MAX 0.5

static int check_clock(bd_engine *e, int joining, bd_err *err)
{
    double skew = 0;
    int rc = bd_store_clock_skew(e->store, &skew, err);
    if (rc || fabs(skew) <= CLOCK_SKEW_MAX)
        return rc;
    if (!joining) {
        bd_log(BD_LOG_ERROR, "cluster: this host's clock is %.3f s off PostgreSQL's (bound %.1f s): trial leases "
                             "expire at the wrong time through this daemon; synchronize the clocks (NTP)",
               -skew, CLOCK_SKEW_MAX);
        return 0;
    }
    return bd_err_set(err, BD_EINVAL, "clock",
                      "this host's clock is %.3f s off PostgreSQL's; a cluster member must be within %.1f s "
                      "(trial leases are judged by each member's clock): synchronize the clocks (NTP)",
                      -skew, CLOCK_SKEW_MAX);
}

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
        if (bd_engine_cluster(e)) {
            if (bd_store_cluster_heartbeat(e->store, bd_engine_daemon_id(e), &err) || check_clock(e, 0, &err))
                bd_log(BD_LOG_ERROR, "cluster heartbeat failed: %s", err.message);
            bd_engine_drop_idle_owned(e);
        }
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
    (void)bd_engine_study_register(c->e, st); /* ids are unique in the index */
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

/* Whether the store opens db as a PostgreSQL URL. */
static int is_db_url(const char *db)
{
    return bd_store_is_pg_url(db);
}

int bd_engine_db_is_url(const char *db)
{
    return is_db_url(db);
}

int bd_engine_open(const bd_engine_opts *opts, bd_engine **out, bd_err *err)
{
    bd_engine *e = bd_xcalloc(1, sizeof *e);
    bd_store_opts so = {.sync = opts->sync_full ? BD_SYNC_FULL : BD_SYNC_NORMAL};
    /* SQLite serves one daemon: an advertised URL means nothing there. */
    so.cluster = opts->advertise_url && is_db_url(opts->db_path);
    so.busy = &e->requests; /* a commit waits for others to join only while there are others */
    e->registry = bd_registry_new(opts, so.cluster);
    e->auth = bd_auth_cache_new(so.cluster);
    char *token_path = NULL;
    int rc;
    pthread_mutex_init(&e->reaper_mu, NULL);
    pthread_cond_init(&e->reaper_cv, NULL);
    /* Distinct users with costly requests at once: at most one per handler
     * thread, and the handlers are at most a few thousand (config.c). */
    bd_user_slots_init(&e->user_slots, opts->user_concurrency > 0 ? opts->user_concurrency : 16, 4096);
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
    } else if (is_db_url(opts->db_path)) {
        /* No file beside a URL: a new PostgreSQL database's admin token comes
         * from --admin-token-file (it is never logged). */
        int64_t users = 0;
        if (!opts->admin_token_file && !(rc = bd_store_user_count(e->store, &users, err)) && users == 0)
            rc = bd_err_set(err, BD_EINVAL, NULL,
                            "a new PostgreSQL database needs --admin-token-file for its admin's first token");
        if (rc)
            goto out;
    } else if (strcmp(opts->db_path, ":memory:") != 0) {
        token_path = bd_xmalloc(strlen(opts->db_path) + 16);
        sprintf(token_path, "%s.admin-token", opts->db_path);
    }
    if ((rc = bd_engine_bootstrap_admin(e, token_path, opts->admin_token_file, &e->first_admin_token, err)))
        goto out;
    /* In cluster mode this joins the cluster (ids then come in blocks). */
    if ((rc = bd_engine_ids_start(e, opts->advertise_url, err)) ||
        (bd_engine_cluster(e) && (rc = check_clock(e, 1, err))))
        goto out;
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
    if (bd_engine_cluster(e) && bd_engine_daemon_id(e) && e->store) /* peers take its studies at once */
        bd_store_cluster_leave(e->store, bd_engine_daemon_id(e));
    bd_registry_free(e->registry);
    bd_store_close(e->store);
    free(e->first_admin_token);
    bd_auth_cache_free(e->auth);
    pthread_mutex_destroy(&e->reaper_mu);
    pthread_cond_destroy(&e->reaper_cv);
    bd_user_slots_destroy(&e->user_slots);
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
    bd_engine_registry_stats(e, out);
    out->storage_writable = bd_store_writable(e->store);
    out->storage_failures = (int64_t)bd_store_failures(e->store);
}

void bd_engine_request_started(bd_engine *e)
{
    atomic_fetch_add_explicit(&e->requests, 1, memory_order_relaxed);
}

void bd_engine_request_ended(bd_engine *e)
{
    atomic_fetch_sub_explicit(&e->requests, 1, memory_order_relaxed);
}
