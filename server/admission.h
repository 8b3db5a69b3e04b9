/* admission.h: which requests may wait for a study, so that no study and no
 * user can hold the daemon's request handlers (issue 20).
 *
 * Every request on a study passes its gate before taking the study's mutex.
 * The gate knows how many requests are ahead (waiting or holding) and how
 * long one holds the mutex (a smoothed figure, and how long the current
 * holder has held it so far). A request whose expected wait passes
 * BD_GATE_WAIT_BUDGET, or that would be the BD_GATE_QUEUE_MAX-th in line,
 * is refused at once with BD_EBUSY (HTTP 429) and a Retry-After: the
 * handler goes back to serving others instead of sleeping on the mutex. A
 * fast study (random search: microseconds per request) never meets the
 * budget; a 2-second model fit admits its holder and no one else.
 *
 * A study is costly when one request holds it BD_GATE_COSTLY_SECONDS or
 * more. Requests to costly studies also take one of their user's slots
 * (bd_user_slots): a user flooding many slow studies gets 429 once it holds
 * max_per_user handlers, whatever the number of studies. Fast requests take
 * no slot, so one user's many workers on cheap studies are never refused.
 *
 * No dependency on the engine: the gate is plain counters, testable alone. */
#ifndef BD_ADMISSION_H
#define BD_ADMISSION_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "common.h"

#define BD_GATE_WAIT_BUDGET 1.0     /* seconds a request may expect to wait for a study */
#define BD_GATE_QUEUE_MAX 32        /* requests waiting or holding one study, at most */
#define BD_GATE_COSTLY_SECONDS 0.01 /* hold time from which a study's requests use user slots */
#define BD_GATE_RETRY_MAX 60        /* Retry-After never says more than this */
/* Per request, the recent peak hold keeps this share of itself: one 20 ms
 * model fit stays above a 1 ms bound for about 300 requests. */
#define BD_GATE_PEAK_DECAY 0.99

/* One user's count of requests in costly studies. */
typedef struct bd_user_slot {
    int64_t user_id; /* meaningful while count > 0 */
    int count;
} bd_user_slot;

/* How many costly requests each user has in progress. */
typedef struct bd_user_slots {
    pthread_mutex_t mu;
    int max_per_user;   /* >= 1 */
    bd_user_slot *slot; /* capacity entries; a free one has count 0 */
    int capacity;       /* distinct users tracked at once (>= the handler count) */
} bd_user_slots;

void bd_user_slots_init(bd_user_slots *u, int max_per_user, int capacity);
void bd_user_slots_destroy(bd_user_slots *u);
/* Takes one of user_id's slots: 1 when taken, 0 when the user is at the
 * limit (or every entry is busy with other users: then none is taken). */
int bd_user_slots_take(bd_user_slots *u, int64_t user_id);
void bd_user_slots_give(bd_user_slots *u, int64_t user_id);
/* user_id's requests in costly studies right now. */
int bd_user_slots_count(bd_user_slots *u, int64_t user_id);

/* A study's gate. Zeroed memory is a valid open gate. */
typedef struct bd_gate {
    atomic_int queued;         /* requests past bd_gate_enter and before bd_gate_leave */
    _Atomic double hold_ewma;  /* seconds one request holds the study, smoothed (0: not known yet) */
    _Atomic double held_since; /* bd_monotonic() when the holder took the study; 0 when free */
    _Atomic double hold_peak;  /* the longest recent hold: the largest, decayed by BD_GATE_PEAK_DECAY per request */
    int64_t holder_slot_user;  /* the holder's user when it took a slot, else 0 (under the study mutex) */
} bd_gate;

/* The ticket bd_gate_enter gives a request, handed back to bd_gate_locked. */
typedef struct bd_gate_ticket {
    int64_t slot_user; /* the user whose slot the request took, or 0 */
} bd_gate_ticket;

/* Admits a request of user_id at time now (bd_monotonic), or refuses it
 * with BD_EBUSY: err->field "study" (this study's line is too long) or
 * "user" (the user holds all its slots), err->retry_after in seconds. */
int bd_gate_enter(bd_gate *g, bd_user_slots *u, int64_t user_id, double now, bd_gate_ticket *t, bd_err *err)
    BD_MUST_CHECK;
/* For a request that gives up before taking the study (it was deleted). */
void bd_gate_cancel(bd_gate *g, bd_user_slots *u, const bd_gate_ticket *t);
/* The request now holds the study's mutex. */
void bd_gate_locked(bd_gate *g, const bd_gate_ticket *t, double now);
/* Whether a request could take the study at once and hold it no longer
 * than max_hold seconds, to judge from its recent requests: none is ahead,
 * and the longest recent hold is known (the study served a request since it
 * was registered) and shorter. A hint read without the study's mutex. */
int bd_gate_quick(bd_gate *g, double max_hold);

/* The holder is about to release the study's mutex: its hold time joins
 * the smoothed figure and its slot is given back. */
void bd_gate_leave(bd_gate *g, bd_user_slots *u, double now);

#endif
