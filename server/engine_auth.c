/* engine_auth.c: who a request is. Tokens are checked on every request,
 * so valid token hashes and user records are cached in memory, in fixed
 * direct-mapped tables (a token id arrives before the token is checked and
 * must never size anything). The cache is only ever a copy of committed
 * rows: revocation and a change of a user's quotas update storage first,
 * then drop the cached entry. In cluster mode a peer's changes are not
 * heard of, so entries there expire after BD_AUTH_CLUSTER_TTL. Calls
 * storage only. */
#include "engine_internal.h"

#include <stdio.h>
#include <string.h>

void bd_engine_auth_forget(bd_engine *e)
{
    memset(e->tokens, 0, sizeof e->tokens);
    memset(e->users, 0, sizeof e->users);
}

static size_t slot_of(int64_t id)
{
    return (size_t)((uint64_t)id % BD_AUTH_CACHE_SLOTS);
}

/* Whether an entry read from storage at cached_at may still be used: one
 * daemon hears of every change (it makes them), a cluster member does not. */
static int fresh(const bd_engine *e, double cached_at)
{
    return !e->cluster || bd_monotonic() - cached_at < BD_AUTH_CLUSTER_TTL;
}

/* Fills *out from the cache or storage. */
int bd_engine_user_get(bd_engine *e, int64_t user_id, bd_user *out, bd_err *err)
{
    bd_user *slot = &e->users[slot_of(user_id)];
    pthread_mutex_lock(&e->auth_mu);
    int hit = user_id > 0 && slot->id == user_id && fresh(e, e->users_at[slot_of(user_id)]);
    uint64_t revocations = e->revocations;
    if (hit)
        *out = *slot;
    pthread_mutex_unlock(&e->auth_mu);
    if (hit)
        return 0;
    double read_at = bd_monotonic(); /* before the read: the entry is no newer than this */
    int rc = bd_store_user_by_id(e->store, user_id, out, err);
    if (rc)
        return rc;
    pthread_mutex_lock(&e->auth_mu);
    if (e->revocations == revocations) { /* else the row may predate a change of its quotas */
        *slot = *out;
        e->users_at[slot_of(user_id)] = read_at;
    }
    pthread_mutex_unlock(&e->auth_mu);
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
    pthread_mutex_lock(&e->auth_mu);
    e->revocations++; /* a read of the old row that is still in flight must not fill the cache */
    if (e->users[slot_of(user_id)].id == user_id)
        e->users[slot_of(user_id)].id = 0;
    pthread_mutex_unlock(&e->auth_mu);
}

void bd_engine_token_revoked(bd_engine *e, int64_t token_id)
{
    pthread_mutex_lock(&e->auth_mu);
    e->revocations++;
    if (e->tokens[slot_of(token_id)].token_id == token_id)
        e->tokens[slot_of(token_id)].token_id = 0;
    pthread_mutex_unlock(&e->auth_mu);
}

/* The stored hash and owner of a valid token: from the cache, else from
 * storage (then cached unless a revocation ran meanwhile). */
static int token_lookup(bd_engine *e, int64_t token_id, uint8_t hash[BD_TOKEN_HASH_BYTES], int64_t *user_id,
                        bd_err *err)
{
    token_entry *slot = &e->tokens[slot_of(token_id)];
    pthread_mutex_lock(&e->auth_mu);
    int hit = slot->token_id == token_id && fresh(e, slot->cached_at);
    if (hit) {
        memcpy(hash, slot->hash, BD_TOKEN_HASH_BYTES);
        *user_id = slot->user_id;
    }
    uint64_t revocations = e->revocations;
    pthread_mutex_unlock(&e->auth_mu);
    if (hit)
        return 0;
    double read_at = bd_monotonic();
    int rc = bd_store_token_get(e->store, token_id, hash, user_id, err);
    if (rc)
        return rc;
    pthread_mutex_lock(&e->auth_mu);
    if (e->revocations == revocations) {
        slot->cached_at = read_at;
        slot->token_id = token_id;
        slot->user_id = *user_id;
        memcpy(slot->hash, hash, BD_TOKEN_HASH_BYTES);
    }
    pthread_mutex_unlock(&e->auth_mu);
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
