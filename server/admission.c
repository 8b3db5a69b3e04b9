/* admission.c: study gates and per-user slots (see admission.h). */
#include "admission.h"

#include <math.h>
#include <stdlib.h>

/* Weight of the newest hold time in the smoothed figure: a study whose cost
 * changes (a model growing with its trials) is followed within a few
 * requests, and one cheap read does not hide a slow fit. */
#define HOLD_WEIGHT 0.25

void bd_user_slots_init(bd_user_slots *u, int max_per_user, int capacity)
{
    pthread_mutex_init(&u->mu, NULL);
    u->max_per_user = max_per_user > 0 ? max_per_user : 1;
    u->capacity = capacity > 0 ? capacity : 1;
    u->slot = bd_xcalloc((size_t)u->capacity, sizeof *u->slot);
}

void bd_user_slots_destroy(bd_user_slots *u)
{
    free(u->slot);
    u->slot = NULL;
    pthread_mutex_destroy(&u->mu);
}

/* The entry of user_id, or a free one (count 0), or NULL; u->mu held. The
 * scan is linear: it runs only for costly requests, whose number is bounded
 * by the handler threads, and it is short beside what they cost. */
static bd_user_slot *find(bd_user_slots *u, int64_t user_id)
{
    bd_user_slot *free_one = NULL;
    for (int i = 0; i < u->capacity; i++) {
        if (u->slot[i].count > 0 && u->slot[i].user_id == user_id)
            return &u->slot[i];
        if (!free_one && u->slot[i].count == 0)
            free_one = &u->slot[i];
    }
    return free_one;
}

int bd_user_slots_take(bd_user_slots *u, int64_t user_id)
{
    int taken = 0;
    pthread_mutex_lock(&u->mu);
    bd_user_slot *s = find(u, user_id);
    if (s && s->count < u->max_per_user) {
        s->user_id = user_id;
        s->count++;
        taken = 1;
    }
    pthread_mutex_unlock(&u->mu);
    return taken;
}

void bd_user_slots_give(bd_user_slots *u, int64_t user_id)
{
    pthread_mutex_lock(&u->mu);
    bd_user_slot *s = find(u, user_id);
    if (s && s->count > 0 && s->user_id == user_id)
        s->count--;
    pthread_mutex_unlock(&u->mu);
}

int bd_user_slots_count(bd_user_slots *u, int64_t user_id)
{
    pthread_mutex_lock(&u->mu);
    bd_user_slot *s = find(u, user_id);
    int n = s && s->count > 0 && s->user_id == user_id ? s->count : 0;
    pthread_mutex_unlock(&u->mu);
    return n;
}

static int retry_seconds(double wait)
{
    if (!(wait > 1)) /* also NaN */
        return 1;
    return wait >= BD_GATE_RETRY_MAX ? BD_GATE_RETRY_MAX : (int)ceil(wait);
}

int bd_gate_enter(bd_gate *g, bd_user_slots *u, int64_t user_id, double now, bd_gate_ticket *t, bd_err *err)
{
    int ahead = atomic_fetch_add(&g->queued, 1);
    double ewma = atomic_load(&g->hold_ewma), since = atomic_load(&g->held_since);
    double held = since > 0 && now > since ? now - since : 0;
    double per = ewma > held ? ewma : held;
    t->slot_user = 0;
    /* ahead counts the holder: with nobody ahead the study is free, and a
     * request is never refused for a study it would find idle. */
    if (ahead >= BD_GATE_QUEUE_MAX || (ahead >= 1 && ahead * per > BD_GATE_WAIT_BUDGET)) {
        atomic_fetch_sub(&g->queued, 1);
        bd_err_set(err, BD_EBUSY, "study",
                   "this study is busy (%d requests ahead, about %.2f s each); retry after the time in Retry-After",
                   ahead, per);
        err->retry_after = retry_seconds(ahead * per);
        return BD_EBUSY;
    }
    if (ewma >= BD_GATE_COSTLY_SECONDS) {
        if (!bd_user_slots_take(u, user_id)) {
            atomic_fetch_sub(&g->queued, 1);
            bd_err_set(err, BD_EBUSY, "user",
                       "you have %d slow requests in progress, the most one user may; retry after the time in "
                       "Retry-After",
                       u->max_per_user);
            err->retry_after = retry_seconds(ewma);
            return BD_EBUSY;
        }
        t->slot_user = user_id;
    }
    return 0;
}

void bd_gate_cancel(bd_gate *g, bd_user_slots *u, const bd_gate_ticket *t)
{
    if (t->slot_user)
        bd_user_slots_give(u, t->slot_user);
    atomic_fetch_sub(&g->queued, 1);
}

void bd_gate_locked(bd_gate *g, const bd_gate_ticket *t, double now)
{
    g->holder_slot_user = t->slot_user;
    atomic_store(&g->held_since, now);
}

int bd_gate_quick(bd_gate *g, double max_hold)
{
    double peak = atomic_load(&g->hold_peak);
    return atomic_load(&g->queued) == 0 && peak > 0 && peak < max_hold;
}

void bd_gate_leave(bd_gate *g, bd_user_slots *u, double now)
{
    double since = atomic_load(&g->held_since), ewma = atomic_load(&g->hold_ewma);
    double hold = since > 0 && now > since ? now - since : 0;
    atomic_store(&g->hold_ewma, ewma > 0 ? (1 - HOLD_WEIGHT) * ewma + HOLD_WEIGHT * hold : hold);
    double peak = atomic_load(&g->hold_peak) * BD_GATE_PEAK_DECAY;
    atomic_store(&g->hold_peak, hold > peak ? hold : peak);
    atomic_store(&g->held_since, 0.0);
    int64_t slot_user = g->holder_slot_user;
    g->holder_slot_user = 0;
    if (slot_user)
        bd_user_slots_give(u, slot_user);
    atomic_fetch_sub(&g->queued, 1);
}
