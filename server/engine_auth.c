/* engine_auth.c: who a request is. Tokens are checked on every request,
 * so valid token hashes and user records are cached in memory, in fixed
 * direct-mapped tables (a token id arrives before the token is checked and
 * must never size anything). The cache is only ever a copy of committed
 * rows: revocation and a change of a user's quotas update storage first,
 * then drop the cached entry. In cluster mode a peer's changes are not
 * heard of, so entries there expire after BD_AUTH_CLUSTER_TTL. This file
 * owns that state (struct bd_auth_cache, defined here only; the engine
 * holds a pointer to it). Calls storage only. */
#include "engine.h"
#include "engine_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The caches are direct-mapped by id with a fixed number of slots, so
 * their memory never depends on an id a client sent (a token id is read
 * before the token is checked). A miss only costs a storage read. */
#define BD_AUTH_CACHE_SLOTS 1024

/* Cluster mode: a peer may revoke a token or change a user, and only its
 * own cache hears of it; a cached entry is trusted this long (seconds),
 * so a revocation through any daemon holds everywhere within it. */
#define BD_AUTH_CLUSTER_TTL 0.5

typedef struct token_entry {
    int64_t token_id;               /* 0 = empty slot; only valid tokens are cached */
    int64_t user_id;
    uint8_t hash[BD_TOKEN_HASH_BYTES];
    double cached_at;               /* bd_monotonic() when read from storage (cluster mode expiry) */
} token_entry;

/* Lock order: a study's mu -> mu (recovery forgets the caches holding
 * every study's mu); mu is never held across a storage call. */
struct bd_auth_cache {
    int cluster;                    /* 1: entries expire after BD_AUTH_CLUSTER_TTL */
    pthread_mutex_t mu;             /* guards the four fields below */
    token_entry tokens[BD_AUTH_CACHE_SLOTS]; /* slot = token id % slots */
    bd_user users[BD_AUTH_CACHE_SLOTS];      /* slot = user id % slots; id 0 = empty */
    double users_at[BD_AUTH_CACHE_SLOTS];    /* bd_monotonic() when each users[] slot was read */
    uint64_t revocations;           /* bumped by every revocation and quota change: a storage read that
                                       began before one must not fill the cache */
};

bd_auth_cache *bd_auth_cache_new(int cluster)
{
    bd_auth_cache *a = bd_xcalloc(1, sizeof *a);
    a->cluster = cluster;
    pthread_mutex_init(&a->mu, NULL);
    return a;
}

void bd_auth_cache_free(bd_auth_cache *a)
{
    if (!a)
        return;
    pthread_mutex_destroy(&a->mu);
    free(a);
}

void bd_engine_auth_forget(bd_engine *e)
{
    bd_auth_cache *a = bd_engine_auth_cache(e);
    pthread_mutex_lock(&a->mu);
    memset(a->tokens, 0, sizeof a->tokens);
    memset(a->users, 0, sizeof a->users);
    pthread_mutex_unlock(&a->mu);
}

static size_t slot_of(int64_t id)
{
    return (size_t)((uint64_t)id % BD_AUTH_CACHE_SLOTS);
}

/* Whether an entry read from storage at cached_at may still be used: one
 * daemon hears of every change (it makes them), a cluster member does not. */
static int fresh(const bd_auth_cache *a, double cached_at)
{
    return !a->cluster || bd_monotonic() - cached_at < BD_AUTH_CLUSTER_TTL;
}

/* Fills *out from the cache or storage. */
int bd_engine_user_get(bd_engine *e, int64_t user_id, bd_user *out, bd_err *err)
{
    bd_auth_cache *a = bd_engine_auth_cache(e);
    bd_user *slot = &a->users[slot_of(user_id)];
    pthread_mutex_lock(&a->mu);
    int hit = user_id > 0 && slot->id == user_id && fresh(a, a->users_at[slot_of(user_id)]);
    uint64_t revocations = a->revocations;
    if (hit)
        *out = *slot;
    pthread_mutex_unlock(&a->mu);
    if (hit)
        return 0;
    double read_at = bd_monotonic(); /* before the read: the entry is no newer than this */
    int rc = bd_store_user_by_id(bd_engine_store(e), user_id, out, err);
    if (rc)
        return rc;
    pthread_mutex_lock(&a->mu);
    if (a->revocations == revocations) { /* else the row may predate a change of its quotas */
        *slot = *out;
        a->users_at[slot_of(user_id)] = read_at;
    }
    pthread_mutex_unlock(&a->mu);
    return 0;
}

int bd_engine_user_name(bd_engine *e, int64_t user_id, char name[64])
{
    bd_user u;
    bd_err err;
    int rc = bd_engine_user_get(e, user_id, &u, &err);
    snprintf(name, 64, "%s", rc ? "?" : u.name);
    return rc;
}

void bd_engine_user_changed(bd_engine *e, int64_t user_id)
{
    bd_auth_cache *a = bd_engine_auth_cache(e);
    pthread_mutex_lock(&a->mu);
    a->revocations++; /* a read of the old row that is still in flight must not fill the cache */
    if (a->users[slot_of(user_id)].id == user_id)
        a->users[slot_of(user_id)].id = 0;
    pthread_mutex_unlock(&a->mu);
}

void bd_engine_token_revoked(bd_engine *e, int64_t token_id)
{
    bd_auth_cache *a = bd_engine_auth_cache(e);
    pthread_mutex_lock(&a->mu);
    a->revocations++;
    if (a->tokens[slot_of(token_id)].token_id == token_id)
        a->tokens[slot_of(token_id)].token_id = 0;
    pthread_mutex_unlock(&a->mu);
}

/* The stored hash and owner of a valid token: from the cache, else from
 * storage (then cached unless a revocation ran meanwhile). */
static int token_lookup(bd_engine *e, int64_t token_id, uint8_t hash[BD_TOKEN_HASH_BYTES], int64_t *user_id,
                        bd_err *err)
{
    bd_auth_cache *a = bd_engine_auth_cache(e);
    token_entry *slot = &a->tokens[slot_of(token_id)];
    pthread_mutex_lock(&a->mu);
    int hit = slot->token_id == token_id && fresh(a, slot->cached_at);
    if (hit) {
        memcpy(hash, slot->hash, BD_TOKEN_HASH_BYTES);
        *user_id = slot->user_id;
    }
    uint64_t revocations = a->revocations;
    pthread_mutex_unlock(&a->mu);
    if (hit)
        return 0;
    double read_at = bd_monotonic();
    int rc = bd_store_token_get(bd_engine_store(e), token_id, hash, user_id, err);
    if (rc)
        return rc;
    pthread_mutex_lock(&a->mu);
    if (a->revocations == revocations) {
        slot->cached_at = read_at;
        slot->token_id = token_id;
        slot->user_id = *user_id;
        memcpy(slot->hash, hash, BD_TOKEN_HASH_BYTES);
    }
    pthread_mutex_unlock(&a->mu);
    return 0;
}

int bd_engine_authenticate(bd_engine *e, const char *token, bd_caller *out, bd_err *err)
{
    int64_t token_id, user_id = 0;
    uint8_t hash[BD_TOKEN_HASH_BYTES], stored[BD_TOKEN_HASH_BYTES];
    bd_user u;
    int rc;
    if (!token || bd_auth_parse_token(token, &token_id, hash))
        return bd_err_set(err, BD_EAUTH, NULL, "missing or malformed bearer token");
    rc = token_lookup(e, token_id, stored, &user_id, err);
    if (rc == BD_ENOTFOUND || (!rc && !bd_auth_hash_equal(hash, stored)))
        return bd_err_set(err, BD_EAUTH, NULL, "unknown or revoked token");
    if (rc)
        return rc;
    if ((rc = bd_engine_user_get(e, user_id, &u, err)))
        return rc == BD_ENOTFOUND ? bd_err_set(err, BD_EAUTH, NULL, "the token's user no longer exists") : rc;
    out->user_id = u.id;
    out->is_admin = u.is_admin;
    snprintf(out->name, sizeof out->name, "%s", u.name);
    return 0;
}
