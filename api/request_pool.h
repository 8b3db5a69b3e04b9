/* request_pool.h: the threads that run requests.
 *
 * A polling thread never runs a request itself (a slow scheduler call there
 * would stall every connection it serves); it queues the request here and a
 * pool thread runs it. Under load most of a request's cost was handing it
 * between threads (issue 18: a third of the daemon's core in switching
 * threads in), so the pool keeps the hand-offs few:
 *
 * - Parking. A job whose answer is ready but whose writes are not yet on
 *   disk leaves its durability ticket in job->durable_ticket. Its thread
 *   does not wait for the commit: it parks the job and takes the next one.
 *   The next thread that finds no job queued, or finds the oldest parked
 *   job parked BD_POOL_STALE ago, commits the batch for every parked job at once
 *   (ops->durable, the group commit) and ends them (ops->finish), so the
 *   answers go out together and no thread sleeps per request on the
 *   commit.
 * - Few threads awake. A new job wakes a sleeping thread only when fewer
 *   threads are ready to take it than the machine has cores (ready: awake
 *   between jobs, or in a job begun less than BD_POOL_FRESH ago), or when
 *   the oldest queued job has waited BD_POOL_STALE. A thread held by a slow
 *   call (a model fit, a study another request holds) stops counting as
 *   ready after BD_POOL_FRESH, so the jobs behind it get a thread of their
 *   own; a watchdog thread wakes one for a job that waited BD_POOL_STALE
 *   when no later submit did. So the many threads (a slow call holds one)
 *   exist for slow calls, and fast requests run on a few.
 *
 * The pool knows nothing of HTTP or storage: ops say how to run, commit and
 * end a job. */
#ifndef BD_REQUEST_POOL_H
#define BD_REQUEST_POOL_H

#include <stdint.h>

#include "../server/common.h"

#define BD_POOL_FRESH 0.001 /* seconds a job may run and its thread still count as ready */
#define BD_POOL_STALE                                                                                                  \
    0.002 /* seconds a queued job waits before a sleeping thread is woken anyway, and a                                \
             parked job before its batch is committed though jobs are queued */

/* Embedded in the caller's record of a request. */
typedef struct bd_pool_job {
    struct bd_pool_job *next; /* the pool's */
    double queued_at;         /* the pool's */
    uint64_t durable_ticket;  /* the pool's: parked until this ticket is on disk */
} bd_pool_job;

typedef struct bd_pool_ops {
    /* Called with the pool's lock held just before job becomes visible to the
     * threads (the HTTP server suspends the connection there, so a thread
     * cannot resume it first). */
    void (*queued)(void *cls, bd_pool_job *job);
    /* Runs job on a pool thread; past_grace: the stop's grace ended, so the
     * job is refused rather than run. Returns 0 when the job is done (the
     * pool then never touches it again: its request may be freed at once),
     * or the ticket to park it until. */
    uint64_t (*run)(void *cls, bd_pool_job *job, int past_grace);
    /* Waits until ticket's writes are on disk (committing them if needed). */
    int (*durable)(void *cls, uint64_t ticket, bd_err *err);
    /* Ends a parked job: its writes are on disk (failed NULL), or they were
     * lost and failed says why. */
    void (*finish)(void *cls, bd_pool_job *job, const bd_err *failed);
} bd_pool_ops;

typedef struct bd_pool bd_pool;

/* Starts threads (>= 1) and the watchdog. NULL when a thread cannot be
 * started (the ones started are stopped again). */
bd_pool *bd_pool_start(const bd_pool_ops *ops, void *cls, int threads);
/* Queues job; 0 once the pool is stopping (the caller then runs it itself). */
int bd_pool_submit(bd_pool *p, bd_pool_job *job);
/* Lets running jobs finish, runs what is still queued with past_grace set,
 * ends every parked job, then joins the threads and frees the pool. */
void bd_pool_stop(bd_pool *p);

#endif
