/* engine_registry.c: the engine's studies: the registry of every live
 * study, the cache that builds a study's runtime on first use and drops it
 * when idle (--study-cache-mb), the study locks behind their admission
 * gates (admission.h), and the recovery that rebuilds the loaded studies
 * after a failed group commit. Calls study.c, engine_auth.c and storage;
 * nothing here calls a file that calls it. This file owns that state, and
 * the ids and the cluster membership the studies are served under (struct
 * bd_registry, defined here only; the engine holds a pointer to it). */
#include "engine_cluster.h"
#include "engine_internal.h"
#include "log.h"

#include <malloc.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Lock order: recover_mu -> studies_lock -> every study's mu -> the auth
 * cache's (recovery); studies_lock -> a study's mu by trylock (the idle
 * sweep); a study's mu -> cache_mu (a load, an unload), and cache_mu -> a
 * study's mu only by trylock (cache_trim); a study's mu -> ids_mu -> the
 * store's lock (a refill). */
/* Peers remembered at once (the slot of the one seen longest ago is reused). */
#define PEERS_MAX 64
/* How long a peer found gone at its address has its leases taken rather
 * than waited for (after this its heartbeat is 10 s old anyway). */
#define GONE_SECONDS 10.0

struct bd_registry {
    pthread_rwlock_t studies_lock;
    study_rt **studies;             /* indexed by study id; NULL for unused ids */
    size_t studies_cap;

    pthread_mutex_t cache_mu;       /* guards the list below and cache_used */
    study_rt *lru_head, *lru_tail;  /* loaded studies, most recently used first */
    _Atomic size_t cache_used;      /* estimated bytes of loaded studies (changed under cache_mu,
                                       read without it as a hint) */
    size_t cache_budget;            /* the most kept */
    double hot_seconds;             /* a study used this recently is never evicted (engine.h) */
    int64_t studies_loaded;
    _Atomic uint64_t study_loads, study_evictions;

    _Atomic uint64_t recovered_failures; /* the store's failure count the last recovery covered */
    pthread_mutex_t recover_mu;     /* one recovery at a time */

    _Atomic int64_t next_trial_id;  /* ids handed out before their transaction, so */
    _Atomic int64_t next_event_id;  /* schedulers see them (gaps after a rollback are fine) */

    /* Cluster mode (several daemons on one PostgreSQL database): */
    int cluster;                    /* 1: studies are served under ownership leases */
    int64_t daemon_id;              /* this member's row in the daemons table */
    double owner_lease;             /* seconds a study's lease lasts after its latest use */
    pthread_mutex_t ids_mu;         /* one id-block refill at a time; guards the two ends */
    int64_t trial_ids_end;          /* the current blocks of ids (store.h bd_store_id_block) end here */
    int64_t event_ids_end;
    pthread_mutex_t peers_mu;       /* guards peers */
    struct peer {                   /* members seen holding a study: where to forward to */
        int64_t id;                 /* 0: a free slot */
        char url[256];
        double gone_until;          /* found gone at its address: its leases are taken until then */
    } peers[PEERS_MAX];
};

bd_registry *bd_registry_new(const bd_engine_opts *opts, int cluster)
{
    bd_registry *r = bd_xcalloc(1, sizeof *r);
    r->cluster = cluster;
    r->owner_lease = opts->ownership_lease_seconds > 0 ? opts->ownership_lease_seconds : 2.0;
    pthread_mutex_init(&r->ids_mu, NULL);
    pthread_mutex_init(&r->peers_mu, NULL);
    pthread_rwlock_init(&r->studies_lock, NULL);
    pthread_mutex_init(&r->recover_mu, NULL);
    pthread_mutex_init(&r->cache_mu, NULL);
    r->cache_budget = opts->study_cache_bytes > 0 ? opts->study_cache_bytes : BD_DEFAULT_STUDY_CACHE_BYTES;
    r->hot_seconds = opts->study_hot_seconds > 0 ? opts->study_hot_seconds : opts->study_hot_seconds < 0 ? 0 : 5.0;
    return r;
}

void bd_registry_free(bd_registry *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->studies_cap; i++)
        bd_study_free(r->studies[i]);
    free(r->studies);
    pthread_mutex_destroy(&r->ids_mu);
    pthread_mutex_destroy(&r->peers_mu);
    pthread_rwlock_destroy(&r->studies_lock);
    pthread_mutex_destroy(&r->recover_mu);
    pthread_mutex_destroy(&r->cache_mu);
    free(r);
}

int bd_engine_ids_start(bd_engine *e, const char *advertise_url, bd_err *err)
{
    bd_registry *r = bd_engine_registry(e);
    if (r->cluster) {
        /* Ids come in blocks from PostgreSQL (bd_engine_claim_study takes
         * them): peers write at the same time, so no stored maximum is the
         * next free id. The ends at 0 make the first claim take blocks. */
        r->trial_ids_end = r->event_ids_end = 0;
        return bd_store_cluster_join(bd_engine_store(e), advertise_url, &r->daemon_id, err);
    }
    int64_t next_trial, next_event;
    int rc = bd_store_next_ids(bd_engine_store(e), &next_trial, &next_event, err);
    if (rc)
        return rc;
    atomic_store(&r->next_trial_id, next_trial);
    atomic_store(&r->next_event_id, next_event);
    return 0;
}

int bd_engine_cluster(bd_engine *e)
{
    return bd_engine_registry(e)->cluster;
}

int64_t bd_engine_daemon_id(bd_engine *e)
{
    return bd_engine_registry(e)->daemon_id;
}

double bd_engine_owner_lease(bd_engine *e)
{
    return bd_engine_registry(e)->owner_lease;
}

void bd_engine_registry_stats(bd_engine *e, bd_engine_stats *out)
{
    bd_registry *r = bd_engine_registry(e);
    /* No study mutex: a study busy in a slow scheduler call must not hold up
     * /metrics. The counts are atomics, so a figure may be one event old. */
    pthread_rwlock_rdlock(&r->studies_lock);
    for (size_t i = 0; i < r->studies_cap; i++) {
        study_rt *st = r->studies[i];
        if (!st || st->deleted)
            continue;
        out->studies++;
        out->studies_owned += atomic_load(&st->lease_held) != 0;
        for (int s = 0; s < BD_TRIAL_NSTATES; s++)
            out->trials[s] += st->counts[s];
    }
    pthread_rwlock_unlock(&r->studies_lock);
    pthread_mutex_lock(&r->cache_mu);
    out->studies_loaded = r->studies_loaded;
    out->cache_bytes = (int64_t)r->cache_used;
    out->cache_budget = (int64_t)r->cache_budget;
    pthread_mutex_unlock(&r->cache_mu);
    out->study_loads = (int64_t)atomic_load(&r->study_loads);
    out->study_evictions = (int64_t)atomic_load(&r->study_evictions);
}

static int ensure_loaded(bd_engine *e, study_rt *st, bd_err *err);
static void cache_trim(bd_engine *e);
static size_t estimate_bytes(const study_rt *st);

/* Cluster mode: a study a peer created after this daemon read its index is
 * registered (unloaded) on its first request here. NULL if storage has none. */
static study_rt *index_from_storage(bd_engine *e, int64_t study_id)
{
    bd_study_row row = {0};
    bd_err err;
    study_rt *st = NULL;
    if (bd_store_study_get(bd_engine_store(e), study_id, &row, &err) == 0) {
        study_rt *fresh = bd_xcalloc(1, sizeof *fresh);
        pthread_mutex_init(&fresh->mu, NULL);
        fresh->id = row.id;
        fresh->user_id = row.user_id;
        fresh->created_at = row.created_at;
        fresh->last_activity_at = row.created_at;
        /* Two first requests may both get here: one copy wins the slot, the
         * other is freed (never registered, so nobody else holds it). */
        st = bd_engine_study_register(e, fresh);
        if (st != fresh)
            bd_study_free(fresh);
    }
    bd_store_study_row_clear(&row);
    return st;
}

/* ensure_loaded, and in cluster mode a second claim when the load (a
 * replay) took half the lease or more: the lease taken before it may have
 * run out meanwhile, and a peer may have taken the study. st->mu held. */
static int load_claimed(bd_engine *e, study_rt *st, bd_err *err)
{
    bd_registry *r = bd_engine_registry(e);
    double t0 = bd_monotonic();
    int rc = ensure_loaded(e, st, err);
    if (rc || !r->cluster || bd_monotonic() - t0 < r->owner_lease / 2)
        return rc;
    if ((rc = bd_engine_claim_study(e, st, 0, err)) == 0 && !st->loaded) /* moved meanwhile: replay again */
        rc = ensure_loaded(e, st, err);
    if (rc == BD_EBUSY)
        rc = bd_err_set(err, BD_EMOVED, "study", "study %lld moved to another daemon while it loaded; retry",
                        (long long)st->id);
    return rc;
}

study_rt *bd_engine_study(bd_engine *e, int64_t study_id, int64_t user_id)
{
    bd_registry *r = bd_engine_registry(e);
    study_rt *st = NULL;
    pthread_rwlock_rdlock(&r->studies_lock);
    if (study_id > 0 && (size_t)study_id < r->studies_cap)
        st = r->studies[study_id];
    pthread_rwlock_unlock(&r->studies_lock);
    if (!st && r->cluster && study_id > 0)
        st = index_from_storage(e, study_id);
    /* deleted is read without st->mu here; callers re-check it under the lock. */
    if (!st || (user_id && st->user_id != user_id))
        return NULL;
    return st;
}

int bd_engine_lock_study(bd_engine *e, const bd_caller *who, int64_t study_id, study_rt **out, bd_err *err)
{
    bd_registry *r = bd_engine_registry(e);
    bd_engine_recover_if_needed(e);
    /* Ownership first: another user's study answers 404 like a missing one,
     * never 429, so a busy gate tells nothing about other users. */
    study_rt *st = bd_engine_study(e, study_id, who->user_id);
    bd_gate_ticket ticket;
    int rc;
    if (st) {
        if ((rc = bd_gate_enter(&st->gate, bd_engine_user_slots(e), who->user_id, bd_monotonic(), &ticket, err)))
            return rc;
        pthread_mutex_lock(&st->mu);
        if (r->cluster && !st->deleted && (rc = bd_engine_claim_study(e, st, 1, err)) != 0 && rc != BD_ENOTFOUND) {
            pthread_mutex_unlock(&st->mu);
            bd_gate_cancel(&st->gate, bd_engine_user_slots(e), &ticket);
            return rc;
        }
        if (!st->deleted) {
            if ((rc = load_claimed(e, st, err)) != 0) {
                pthread_mutex_unlock(&st->mu);
                bd_gate_cancel(&st->gate, bd_engine_user_slots(e), &ticket);
                return rc;
            }
            bd_gate_locked(&st->gate, &ticket, bd_monotonic());
            *out = st;
            return 0;
        }
        pthread_mutex_unlock(&st->mu);
        bd_gate_cancel(&st->gate, bd_engine_user_slots(e), &ticket);
    }
    return bd_err_set(err, BD_ENOTFOUND, NULL, "no study %lld", (long long)study_id);
}

int bd_engine_try_lock_study(bd_engine *e, const bd_caller *who, int64_t study_id, study_rt **out, bd_err *err)
{
    bd_registry *r = bd_engine_registry(e);
    bd_engine_recover_if_needed(e);
    study_rt *st = bd_engine_study(e, study_id, who->user_id);
    bd_gate_ticket ticket = {0};
    if (!st)
        return bd_err_set(err, BD_ENOTFOUND, NULL, "no study %lld", (long long)study_id);
    if (atomic_load(&st->gate.queued) > 0)
        return bd_err_set(err, BD_EBUSY, "study", "study %lld is busy", (long long)study_id);
    atomic_fetch_add(&st->gate.queued, 1); /* no user slot: the caller is the daemon itself */
    if (pthread_mutex_trylock(&st->mu) != 0) {
        bd_gate_cancel(&st->gate, bd_engine_user_slots(e), &ticket);
        return bd_err_set(err, BD_EBUSY, "study", "study %lld is busy", (long long)study_id);
    }
    /* The daemon's own work (the lease reaper) never takes a study a peer
     * serves: that peer's reaper sweeps it. */
    int rc = st->deleted ? BD_ENOTFOUND : r->cluster ? bd_engine_claim_study(e, st, 0, err) : 0;
    if (rc == BD_ENOTFOUND || (!rc && st->deleted))
        rc = bd_err_set(err, BD_ENOTFOUND, NULL, "no study %lld", (long long)study_id);
    if (!rc)
        rc = load_claimed(e, st, err);
    if (rc) {
        pthread_mutex_unlock(&st->mu);
        bd_gate_cancel(&st->gate, bd_engine_user_slots(e), &ticket);
        return rc;
    }
    bd_gate_locked(&st->gate, &ticket, bd_monotonic());
    *out = st;
    return 0;
}

int bd_engine_lock_study_now(bd_engine *e, const bd_caller *who, int64_t study_id, study_rt **out, bd_err *err)
{
    bd_registry *r = bd_engine_registry(e);
    if (r->cluster) /* a claim is a round trip to PostgreSQL */
        return bd_err_set(err, BD_EWOULDBLOCK, NULL, "cluster mode");
    bd_engine_recover_if_needed(e);
    study_rt *st = bd_engine_study(e, study_id, who->user_id);
    bd_gate_ticket ticket;
    if (!st)
        return bd_err_set(err, BD_ENOTFOUND, NULL, "no study %lld", (long long)study_id);
    /* A fast study takes no user slot, and with nobody ahead its gate
     * admits at once; a refusal is left to the handler thread to give. */
    if (!bd_gate_quick(&st->gate, BD_INLINE_HOLD_MAX) ||
        bd_gate_enter(&st->gate, bd_engine_user_slots(e), who->user_id, bd_monotonic(), &ticket, err))
        return bd_err_set(err, BD_EWOULDBLOCK, NULL, "study %lld is busy or slow", (long long)study_id);
    if (pthread_mutex_trylock(&st->mu) != 0) {
        bd_gate_cancel(&st->gate, bd_engine_user_slots(e), &ticket);
        return bd_err_set(err, BD_EWOULDBLOCK, NULL, "study %lld is busy", (long long)study_id);
    }
    if (st->deleted || !st->loaded) { /* a load replays the study from storage: not here */
        int deleted = st->deleted;
        pthread_mutex_unlock(&st->mu);
        bd_gate_cancel(&st->gate, bd_engine_user_slots(e), &ticket);
        return deleted ? bd_err_set(err, BD_ENOTFOUND, NULL, "no study %lld", (long long)study_id)
                       : bd_err_set(err, BD_EWOULDBLOCK, NULL, "study %lld is not loaded", (long long)study_id);
    }
    bd_gate_locked(&st->gate, &ticket, bd_monotonic());
    *out = st;
    return 0;
}

void bd_engine_cache_trim_if_over(bd_engine *e)
{
    bd_registry *r = bd_engine_registry(e);
    if (atomic_load_explicit(&r->cache_used, memory_order_relaxed) > r->cache_budget)
        cache_trim(e);
}

void bd_engine_unlock_study(bd_engine *e, study_rt *st)
{
    bd_registry *r = bd_engine_registry(e);
    /* cache_bytes changes under st->mu only (trims trylock it), so this
     * read needs no cache_mu; the lock is taken when a suggest grew it. */
    size_t now_bytes = st->loaded ? estimate_bytes(st) : 0;
    if (st->loaded && now_bytes != st->cache_bytes) { /* its scheduler grew with its trials */
        pthread_mutex_lock(&r->cache_mu);
        atomic_fetch_add(&r->cache_used, now_bytes - st->cache_bytes); /* unsigned wrap-around subtracts */
        st->cache_bytes = now_bytes;
        pthread_mutex_unlock(&r->cache_mu);
    }
    /* used until now: a request that loaded the study took as long as its
     * replay (11 s for a million ASHA trials), and a study stamped only when
     * its request began was already past the hot window at its end and
     * evicted at once, to be replayed by its next request */
    double now = bd_monotonic();
    atomic_store_explicit(&st->last_used, now, memory_order_relaxed);
    bd_gate_leave(&st->gate, bd_engine_user_slots(e), now);
    pthread_mutex_unlock(&st->mu);
    bd_engine_cache_trim_if_over(e);
}

/* Takes a new block of trial (events 0) or event ids; ids_mu held. */
static int refill_ids(bd_engine *e, int events, bd_err *err)
{
    bd_registry *r = bd_engine_registry(e);
    int64_t first, count;
    int rc = bd_store_id_block(bd_engine_store(e), &first, &count, err);
    if (rc)
        return rc;
    atomic_store(events ? &r->next_event_id : &r->next_trial_id, first);
    *(events ? &r->event_ids_end : &r->trial_ids_end) = first + count;
    return 0;
}

int64_t bd_engine_take_id(bd_engine *e, int events, bd_write_plan *p)
{
    bd_registry *r = bd_engine_registry(e);
    _Atomic int64_t *next = events ? &r->next_event_id : &r->next_trial_id;
    if (!r->cluster) /* one daemon: the counter has no end */
        return atomic_fetch_add(next, 1);
    /* Under the mutex, not a bare fetch_add: ids taken past the end by
     * racing threads would collide with the next block when it follows the
     * current one. A request takes a few ids; the mutex is never held
     * across anything but the rare refill. */
    pthread_mutex_lock(&r->ids_mu);
    int64_t id = 0;
    bd_err err;
    if (atomic_load(next) < *(events ? &r->event_ids_end : &r->trial_ids_end) || refill_ids(e, events, &err) == 0)
        id = atomic_fetch_add(next, 1);
    else
        p->ids_failed = 1;
    pthread_mutex_unlock(&r->ids_mu);
    if (!id)
        bd_log(BD_LOG_ERROR, "cluster: no block of %s ids: %s", events ? "event" : "trial", err.message);
    return id;
}

/* ------------------------------------------------------ cluster: claims */

/* This thread's latest BD_EFORWARD (bd_engine_forward_target). */
static _Thread_local struct {
    int set;
    int64_t study_id, daemon_id;
    char url[256];
} forward_to;

/* A lease this daemon holds surely runs until a renewal's start plus this
 * share of the lease (the rest: the statement's own time and clock rates). */
#define LEASE_SURE 0.9
/* Claims that meet a peer's takeover under way (BD_EBUSY) look again this often. */
#define CLAIM_TRIES 3

/* The slot of peer id, or a slot to reuse for it; peers_mu held. */
static struct peer *peer_slot(bd_registry *r, int64_t id)
{
    struct peer *free_slot = NULL;
    for (int i = 0; i < PEERS_MAX; i++) {
        if (r->peers[i].id == id)
            return &r->peers[i];
        if (!free_slot && (!r->peers[i].id || r->peers[i].gone_until < bd_monotonic() - GONE_SECONDS))
            free_slot = &r->peers[i];
    }
    if (!free_slot)
        free_slot = &r->peers[id % PEERS_MAX];
    memset(free_slot, 0, sizeof *free_slot);
    free_slot->id = id;
    return free_slot;
}

static int peer_gone(bd_registry *r, int64_t id)
{
    pthread_mutex_lock(&r->peers_mu);
    int gone = 0;
    for (int i = 0; i < PEERS_MAX; i++)
        if (r->peers[i].id == id)
            gone = r->peers[i].gone_until > bd_monotonic();
    pthread_mutex_unlock(&r->peers_mu);
    return gone;
}

/* Sets this thread's forward target to st's peer id; BD_EFORWARD, or 0 when
 * its address is unknown or it was found gone (then the caller looks up). */
static int forward(bd_registry *r, study_rt *st, int64_t id, const char *url, bd_err *err)
{
    int ok = 0;
    pthread_mutex_lock(&r->peers_mu);
    struct peer *p = peer_slot(r, id);
    if (url && url[0])
        snprintf(p->url, sizeof p->url, "%s", url);
    if (p->url[0] && p->gone_until <= bd_monotonic()) {
        forward_to.set = 1;
        forward_to.study_id = st->id;
        forward_to.daemon_id = id;
        snprintf(forward_to.url, sizeof forward_to.url, "%s", p->url);
        ok = 1;
    }
    pthread_mutex_unlock(&r->peers_mu);
    if (!ok)
        return 0;
    return bd_err_set(err, BD_EFORWARD, "study", "study %lld is served by daemon %lld", (long long)st->id,
                      (long long)id);
}

int bd_engine_forward_target(int64_t *daemon_id, char *url, size_t n)
{
    if (!forward_to.set)
        return -1;
    *daemon_id = forward_to.daemon_id;
    snprintf(url, n, "%s", forward_to.url);
    return 0;
}

void bd_engine_forget_holder(bd_engine *e, int64_t study_id)
{
    bd_registry *r = bd_engine_registry(e);
    pthread_rwlock_rdlock(&r->studies_lock);
    if (study_id > 0 && (size_t)study_id < r->studies_cap && r->studies[study_id])
        atomic_store(&r->studies[study_id]->peer_id, 0);
    pthread_rwlock_unlock(&r->studies_lock);
}

void bd_engine_forward_stale(bd_engine *e)
{
    if (forward_to.set)
        bd_engine_forget_holder(e, forward_to.study_id);
}

void bd_engine_peer_gone(bd_engine *e, int64_t daemon_id)
{
    bd_registry *r = bd_engine_registry(e);
    pthread_mutex_lock(&r->peers_mu);
    peer_slot(r, daemon_id)->gone_until = bd_monotonic() + GONE_SECONDS;
    pthread_mutex_unlock(&r->peers_mu);
    bd_engine_forward_stale(e);
    bd_log(BD_LOG_WARN, "cluster: daemon %lld is gone from its address; its studies are taken over",
           (long long)daemon_id);
}

int bd_engine_claim_study(bd_engine *e, study_rt *st, int wait, bd_err *err)
{
    bd_registry *r = bd_engine_registry(e);
    double now = bd_monotonic();
    int64_t token = 0;
    int rc = BD_EBUSY;
    /* The common case: a lease the reaper keeps renewed, no round trip. */
    if (atomic_load(&st->lease_held) && now < atomic_load(&st->lease_until))
        return 0;
    /* A study a peer serves: its requests go there (one hop, api/forward.h)
     * while that peer's lease was last seen running. Never waited for. */
    int64_t peer = atomic_load(&st->peer_id);
    if (wait && peer && now < atomic_load(&st->peer_until) && forward(r, st, peer, NULL, err) == BD_EFORWARD)
        return BD_EFORWARD;
    for (int tries = 0; rc == BD_EBUSY && tries < CLAIM_TRIES; tries++) {
        bd_owner o;
        if (tries) {
            struct timespec pause = {0, 5000000L};
            nanosleep(&pause, NULL);
        }
        if ((rc = bd_store_owner_lookup(bd_engine_store(e), st->id, &o, err)) != 0)
            return rc;
        int peers = o.daemon_id && o.daemon_id != r->daemon_id && o.live;
        int gone = peers && peer_gone(r, o.daemon_id);
        if (peers && !gone) {
            if (!wait) /* the daemon's own work (the reaper) leaves a peer's study to that peer */
                return bd_err_set(err, BD_EBUSY, "study", "study %lld is served by daemon %lld", (long long)st->id,
                                  (long long)o.daemon_id);
            atomic_store(&st->peer_id, o.daemon_id);
            atomic_store(&st->peer_until, now + fmin(o.remaining, r->owner_lease));
            if ((rc = forward(r, st, o.daemon_id, o.url, err)) == BD_EFORWARD)
                return rc;
            gone = 1; /* no address: take it as from a gone peer */
        }
        double t0 = bd_monotonic();
        rc = bd_store_owner_acquire(bd_engine_store(e), st->id, r->daemon_id, r->owner_lease,
                                    gone ? (int)o.daemon_id : 0, &token, err);
        if (!rc)
            atomic_store(&st->lease_until, t0 + LEASE_SURE * r->owner_lease);
    }
    if (rc == BD_EBUSY) /* a takeover kept the row; nothing was done */
        err->retry_after = 1;
    if (rc == BD_ENOTFOUND) { /* deleted through a peer */
        st->deleted = 1;
        bd_engine_study_disown(e, st, 0);
        return rc;
    }
    if (rc)
        return rc;
    atomic_store(&st->peer_id, 0);
    int moved = token != atomic_load(&st->owner_token);
    if (moved) {
        /* Held by a peer since: what is in memory may miss its writes. */
        bd_engine_study_unload(e, st);
        atomic_store(&st->owner_token, token);
    }
    atomic_store(&st->lease_held, 1);
    /* Fresh id blocks after a takeover: ids above every id the previous
     * owner handed out, so the study's events stay in order. Otherwise
     * bd_engine_take_id refills a block when it is used up. */
    if (moved) {
        pthread_mutex_lock(&r->ids_mu);
        if (!(rc = refill_ids(e, 0, err)))
            rc = refill_ids(e, 1, err);
        pthread_mutex_unlock(&r->ids_mu);
    }
    if (rc) /* without fresh ids the study cannot be served: the next request claims again */
        bd_engine_study_disown(e, st, 1);
    return rc;
}

void bd_engine_study_disown(bd_engine *e, study_rt *st, int release)
{
    bd_registry *r = bd_engine_registry(e);
    int64_t token = atomic_exchange(&st->owner_token, 0);
    atomic_store(&st->lease_held, 0);
    atomic_store(&st->lease_until, 0.0);
    bd_engine_study_unload(e, st);
    if (release && token)
        bd_store_owner_release(bd_engine_store(e), st->id, r->daemon_id, token);
}

/* The leases one renewal extended, gathered while the store is locked. */
typedef struct renewed {
    int64_t *ids, *tokens;
    size_t n, cap;
} renewed;

static void note_renewed(void *arg, int64_t study_id, int64_t token)
{
    renewed *rn = arg;
    if (rn->n == rn->cap) {
        rn->cap = rn->cap ? 2 * rn->cap : 64;
        rn->ids = bd_xrealloc(rn->ids, rn->cap * sizeof *rn->ids);
        rn->tokens = bd_xrealloc(rn->tokens, rn->cap * sizeof *rn->tokens);
    }
    rn->ids[rn->n] = study_id;
    rn->tokens[rn->n++] = token;
}

/* Renews every lease this daemon holds, in one statement, off the request
 * path: a claim of a study whose lease_until has not passed makes no round
 * trip. A lease not renewed (it ran out, or a peer took it) is claimed
 * again by the next request. */
static void renew_held(bd_engine *e)
{
    bd_registry *r = bd_engine_registry(e);
    renewed rn = {0};
    bd_err err;
    double t0 = bd_monotonic();
    if (bd_store_owner_renew_held(bd_engine_store(e), r->daemon_id, r->owner_lease, note_renewed, &rn, &err)) {
        bd_log(BD_LOG_WARN, "cluster: renewing the leases: %s", err.message);
        goto out;
    }
    pthread_rwlock_rdlock(&r->studies_lock);
    for (size_t i = 0; i < rn.n; i++) {
        study_rt *st = rn.ids[i] > 0 && (size_t)rn.ids[i] < r->studies_cap ? r->studies[rn.ids[i]] : NULL;
        /* lease_held is set under st->mu, after owner_token: a lease taken
         * meanwhile counts from its own claim. */
        if (st && atomic_load(&st->lease_held) && atomic_load(&st->owner_token) == rn.tokens[i])
            atomic_store(&st->lease_until, t0 + LEASE_SURE * r->owner_lease);
    }
    pthread_rwlock_unlock(&r->studies_lock);
out:
    free(rn.ids);
    free(rn.tokens);
}

/* Called by the reaper every half second: releases the leases of idle
 * studies, then renews the others. */
void bd_engine_drop_idle_owned(bd_engine *e)
{
    bd_registry *r = bd_engine_registry(e);
    double now = bd_monotonic();
    pthread_rwlock_rdlock(&r->studies_lock);
    for (size_t i = 0; i < r->studies_cap; i++) {
        study_rt *st = r->studies[i];
        /* Busy or recently used studies stay; a trylock never waits for a
         * scheduler (lock order: studies_lock -> study mu, as recovery). */
        if (!st || !atomic_load(&st->lease_held) ||
            now - atomic_load_explicit(&st->last_used, memory_order_relaxed) < r->owner_lease ||
            atomic_load(&st->gate.queued) > 0 || pthread_mutex_trylock(&st->mu) != 0)
            continue;
        if (!st->dirty) {
            /* Released, not disowned: memory and token stay, so when no
             * peer took it meanwhile the next claim gets the same token and
             * serves from memory (no replay). The cache evicts it if need be. */
            atomic_store(&st->lease_held, 0);
            atomic_store(&st->lease_until, 0.0);
            bd_store_owner_release(bd_engine_store(e), st->id, r->daemon_id, atomic_load(&st->owner_token));
        }
        pthread_mutex_unlock(&st->mu);
    }
    pthread_rwlock_unlock(&r->studies_lock);
    renew_held(e);
}

study_rt *bd_engine_study_register(bd_engine *e, study_rt *st)
{
    bd_registry *r = bd_engine_registry(e);
    pthread_rwlock_wrlock(&r->studies_lock);
    if ((size_t)st->id >= r->studies_cap) {
        size_t cap = r->studies_cap ? r->studies_cap : 64;
        while (cap <= (size_t)st->id)
            cap *= 2;
        r->studies = bd_xrealloc(r->studies, cap * sizeof *r->studies);
        memset(r->studies + r->studies_cap, 0, (cap - r->studies_cap) * sizeof *r->studies);
        r->studies_cap = cap;
    }
    /* Insert if absent, in this one locked section: in cluster mode two
     * first requests (index_from_storage), or a request and the study's
     * creator, may race for one slot. Two copies of one study would both
     * pass the fence (same daemon, same token) and hand out the same rung
     * slot twice; the first copy stays the only one. */
    study_rt *winner = r->studies[st->id];
    if (!winner)
        winner = r->studies[st->id] = st;
    pthread_rwlock_unlock(&r->studies_lock);
    return winner;
}

/* ------------------------------------------------------------- the cache */

/* A rough figure of the heap a loaded study holds, to weigh it against
 * --study-cache-mb: its definition parsed (JSON nodes and the space's
 * tables: RSS grew by 15 MB per loaded study of 860 KB, 8 x 10,000
 * categorical choices, and by 7.5 KB per small random-search study), the
 * configs enqueued (~64 bytes of JSON nodes per value) and its scheduler:
 * what the scheduler says it holds (ops->held_bytes), else 256 bytes a
 * trial. An estimate on the safe side, not a measurement: glibc cannot tell
 * one study's memory from another's. */
static size_t estimate_bytes(const study_rt *st)
{
    const bd_sched *s = st->sched;
    size_t sched = s && s->ops->held_bytes ? s->ops->held_bytes(s)
                                           : 256 * (size_t)(st->trials_created > 0 ? st->trials_created : 0);
    return 4096 + 24 * st->definition_bytes + sched + bd_study_front_bytes(st) +
           64 * st->n_queued * (st->spec.def.space ? bd_space_size(st->spec.def.space) : 0);
}

static void lru_unlink(bd_registry *r, study_rt *st)
{
    if (st->lru_prev)
        st->lru_prev->lru_next = st->lru_next;
    else
        r->lru_head = st->lru_next;
    if (st->lru_next)
        st->lru_next->lru_prev = st->lru_prev;
    else
        r->lru_tail = st->lru_prev;
    st->lru_prev = st->lru_next = NULL;
}

static void lru_push_front(bd_registry *r, study_rt *st)
{
    st->lru_prev = NULL;
    st->lru_next = r->lru_head;
    if (r->lru_head)
        r->lru_head->lru_prev = st;
    else
        r->lru_tail = st;
    r->lru_head = st;
}

void bd_engine_study_cached(bd_engine *e, study_rt *st, size_t definition_bytes)
{
    bd_registry *r = bd_engine_registry(e);
    st->loaded = 1;
    st->definition_bytes = definition_bytes;
    st->cache_bytes = estimate_bytes(st);
    pthread_mutex_lock(&r->cache_mu);
    lru_push_front(r, st);
    r->cache_used += st->cache_bytes;
    r->studies_loaded++;
    pthread_mutex_unlock(&r->cache_mu);
}

/* Frees spec and sched; st->mu held, cache_mu held. */
static void unload_locked(bd_registry *r, study_rt *st)
{
    if (!st->loaded)
        return;
    lru_unlink(r, st);
    r->cache_used -= st->cache_bytes;
    r->studies_loaded--;
    st->cache_bytes = 0;
    st->loaded = 0;
    if (st->sched)
        st->sched->ops->destroy(st->sched);
    st->sched = NULL;
    bd_study_spec_clear(&st->spec);
    bd_study_set_meta(st, 0, NULL); /* read again with the spec on the next load */
    bd_study_drop_queue(st);        /* likewise, by the load's replay */
    bd_study_drop_front(st);        /* likewise */
}

void bd_engine_study_unload(bd_engine *e, study_rt *st)
{
    bd_registry *r = bd_engine_registry(e);
    pthread_mutex_lock(&r->cache_mu);
    unload_locked(r, st);
    pthread_mutex_unlock(&r->cache_mu);
}

/* The most studies one trim looks at: the least recently used may all be
 * busy (held or waited for), and a trim must not walk every loaded study. */
#define TRIM_CANDIDATES 64
/* Estimated bytes an eviction must free for the heap to be given back to
 * the OS at once (malloc_trim walks every arena: not for small studies). */
#define TRIM_RETURN_BYTES ((size_t)8 << 20)

/* Unloads idle studies, least recently used first, until the cache is
 * within its budget. Holds no study mutex on entry. A study someone holds
 * or waits for is skipped (trylock: the order cache_mu -> study mu is the
 * reverse of a load's, so this never waits for one). "Least recently used"
 * is the clock's approximation: a request only sets its study's
 * referenced bit (no global lock per request); a trim moves a referenced
 * study to the front, clearing the bit, instead of evicting it. */
static void cache_trim(bd_engine *e)
{
    bd_registry *r = bd_engine_registry(e);
    size_t before;
    double now = bd_monotonic();
    pthread_mutex_lock(&r->cache_mu);
    before = r->cache_used;
    study_rt *c = r->lru_tail;
    for (int tried = 0; c && r->cache_used > r->cache_budget && tried < TRIM_CANDIDATES; tried++) {
        study_rt *prev = c->lru_prev;
        if (atomic_exchange_explicit(&c->referenced, 0, memory_order_relaxed)) {
            lru_unlink(r, c); /* a second chance */
            lru_push_front(r, c);
        } else if (now - atomic_load_explicit(&c->last_used, memory_order_relaxed) >= r->hot_seconds &&
                   atomic_load(&c->gate.queued) == 0 && pthread_mutex_trylock(&c->mu) == 0) {
            if (!c->dirty) {
                unload_locked(r, c);
                atomic_fetch_add(&r->study_evictions, 1);
            }
            pthread_mutex_unlock(&c->mu);
        }
        c = prev;
    }
    size_t freed = before - r->cache_used;
    pthread_mutex_unlock(&r->cache_mu);
    /* glibc keeps what a large study freed in its arena; give it back now
     * rather than at the reaper's next trim, or a run of large studies
     * holds many times the budget in RSS meanwhile. */
    if (freed >= TRIM_RETURN_BYTES)
        malloc_trim(0);
}

/* Builds st's spec and sched from its stored definition and events, or
 * marks it most recently used when they are built; st->mu held. */
static int ensure_loaded(bd_engine *e, study_rt *st, bd_err *err)
{
    bd_registry *r = bd_engine_registry(e);
    atomic_store_explicit(&st->last_used, bd_monotonic(), memory_order_relaxed);
    if (st->loaded) { /* the common case: no lock beyond st->mu */
        atomic_store_explicit(&st->referenced, 1, memory_order_relaxed);
        return 0;
    }
    bd_study_row row = {0};
    json_t *def = NULL;
    int rc = bd_store_study_get(bd_engine_store(e), st->id, &row, err);
    if (rc == BD_ENOTFOUND) /* deleted by a request whose commit failed, before recovery */
        rc = bd_err_set(err, BD_ESTORAGE, NULL, "study %lld is missing from storage", (long long)st->id);
    if (!rc && !(def = json_loads(row.definition, 0, NULL)))
        rc = bd_err_set(err, BD_EINTERNAL, NULL, "study %lld: stored definition is not JSON", (long long)st->id);
    if (!rc)
        rc = bd_study_spec_parse(def, bd_engine_default_lease(e), &st->spec, err);
    if (!rc) {
        st->spec.def.id = st->id;
        bd_study_set_meta(st, row.paused, row.metadata);
        row.metadata = NULL; /* stolen */
        bd_engine_user_name(e, st->user_id, st->owner);
        if ((rc = bd_study_replay(st, bd_engine_store(e), err)) != 0) {
            if (st->sched)
                st->sched->ops->destroy(st->sched);
            st->sched = NULL;
            bd_study_spec_clear(&st->spec);
        }
    }
    if (!rc) {
        bd_engine_study_cached(e, st, strlen(row.definition));
        atomic_fetch_add(&r->study_loads, 1);
    }
    json_decref(def);
    bd_store_study_row_clear(&row);
    return rc;
}

/* ---------------------------------------------------------------- recovery */

/* Makes st match storage again; st->mu held. */
static void recover_study(bd_engine *e, study_rt *st)
{
    bd_study_row row = {0};
    bd_err err;
    int rc = bd_store_study_get(bd_engine_store(e), st->id, &row, &err);
    int stale = 0;
    if (!rc && st->loaded) { /* a pause, metadata or asked parameter in the failed commit did not happen */
        bd_study_set_meta(st, row.paused, row.metadata);
        row.metadata = NULL;
        stale = bd_study_reload_asked(st, row.definition, &err) != 0;
    }
    bd_store_study_row_clear(&row);
    if (stale) { /* the next request reloads it whole from storage */
        bd_engine_study_unload(e, st);
        return;
    }
    if (rc == BD_ENOTFOUND) { /* created or undeleted by the failed commit: gone */
        st->deleted = 1;
        bd_engine_study_unload(e, st);
        return;
    }
    st->deleted = 0; /* a delete in the failed commit did not happen */
    if (!rc && !st->loaded) /* nothing built to rebuild; its counts come from before the failure */
        return;
    if (rc || bd_study_replay(st, bd_engine_store(e), &err))
        bd_log(BD_LOG_ERROR, "study %lld could not be rebuilt: %s", (long long)st->id, err.message);
}

void bd_engine_recover_if_needed(bd_engine *e)
{
    bd_registry *r = bd_engine_registry(e);
    uint64_t failures = bd_store_failures(bd_engine_store(e));
    if (failures == atomic_load(&r->recovered_failures)) /* the common case: one atomic read */
        return;
    pthread_mutex_lock(&r->recover_mu);
    if (failures != atomic_load(&r->recovered_failures)) {
        /* Every study is locked first, so no request sees a half-rebuilt
         * engine. A batch failing while we rebuild raises the count, so the
         * store stays closed and the next request recovers again. */
        pthread_rwlock_rdlock(&r->studies_lock);
        for (size_t i = 0; i < r->studies_cap; i++)
            if (r->studies[i])
                pthread_mutex_lock(&r->studies[i]->mu);
        failures = bd_store_failures(bd_engine_store(e));
        for (size_t i = 0; i < r->studies_cap; i++)
            if (r->studies[i])
                recover_study(e, r->studies[i]);
        bd_engine_auth_forget(e);
        atomic_store(&r->recovered_failures, failures);
        bd_store_recovered(bd_engine_store(e), failures);
        for (size_t i = 0; i < r->studies_cap; i++)
            if (r->studies[i])
                pthread_mutex_unlock(&r->studies[i]->mu);
        pthread_rwlock_unlock(&r->studies_lock);
        bd_log(BD_LOG_WARN, "recovered every study from storage after a failed commit");
    }
    pthread_mutex_unlock(&r->recover_mu);
}
