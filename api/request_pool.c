/* request_pool.c: the threads that run requests (request_pool.h). */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "request_pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

enum slot_state { SLOT_SLEEPING, SLOT_IDLE, SLOT_RUNNING };

typedef struct slot {
    struct bd_pool *pool;
    pthread_t thread;
    enum slot_state state; /* under the pool's lock */
    double started;        /* bd_monotonic() when its running job began */
} slot;

struct bd_pool {
    const bd_pool_ops *ops;
    void *cls;
    pthread_mutex_t lock; /* guards everything below */
    pthread_cond_t work;  /* a job is queued for a sleeping thread, or the pool stops */
    pthread_cond_t watch; /* wakes the watchdog */
    bd_pool_job *head, *tail;
    bd_pool_job *parked_head, *parked_tail;
    double parked_since; /* when the oldest parked job was parked */
    int ready_target;    /* cores the process may run on: more ready threads cannot run at once */
    int sleeping;        /* threads waiting on work */
    int waking;          /* of them, signalled and not yet running */
    int watch_idle;      /* the watchdog waits without a deadline */
    int stopping;
    int n_slots;
    slot *slots;
    int watchdog_started;
    pthread_t watchdog;
};

/* Threads that will take a queued job soon: awake between jobs, signalled,
 * or in a job begun less than BD_POOL_FRESH ago (counted up to the target). */
static int ready_threads(const bd_pool *p, double now)
{
    int n = p->waking;
    for (int i = 0; i < p->n_slots && n < p->ready_target; i++)
        n += p->slots[i].state == SLOT_IDLE ||
             (p->slots[i].state == SLOT_RUNNING && now - p->slots[i].started < BD_POOL_FRESH);
    return n;
}

/* Wakes a sleeping thread when the queued jobs need one (lock held); 1 if
 * they do not, and the watchdog should keep watching. */
static int wake_if_needed(bd_pool *p, double now)
{
    if (!p->head)
        return 0;
    if (ready_threads(p, now) >= p->ready_target && now - p->head->queued_at < BD_POOL_STALE)
        return 1;
    if (p->sleeping > p->waking) {
        p->waking++;
        pthread_cond_signal(&p->work);
    }
    return 0;
}

/* Waits for the writes of every parked job of list (one group commit, as a
 * rule: tickets are batch numbers, committed in order), then ends each. */
static void end_parked(bd_pool *p, bd_pool_job *list)
{
    uint64_t last = 0;
    for (bd_pool_job *j = list; j; j = j->next)
        if (j->durable_ticket > last)
            last = j->durable_ticket;
    bd_err err;
    if (p->ops->durable(p->cls, last, &err)) /* each job's own outcome is read below */
        bd_err_clear(&err);
    while (list) {
        bd_pool_job *j = list;
        list = j->next;
        int failed = p->ops->durable(p->cls, j->durable_ticket, &err);
        p->ops->finish(p->cls, j, failed ? &err : NULL);
    }
}

/* The cores this process may run on (its affinity mask: taskset, a
 * container's cpuset), else the online ones. */
static int usable_cores(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online > 0 ? (int)online : 1;
}

static void *thread_main(void *arg)
{
    slot *me = arg;
    bd_pool *p = me->pool;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        bd_pool_job *job = p->head;
        /* Commit the parked jobs' batch once no queued job could join it,
         * or once the oldest has waited BD_POOL_STALE: jobs that keep
         * coming must not hold the answers (and grow the batch) forever. */
        if (p->parked_head && (!job || bd_monotonic() - p->parked_since >= BD_POOL_STALE)) {
            bd_pool_job *list = p->parked_head;
            p->parked_head = p->parked_tail = NULL;
            me->state = SLOT_RUNNING;
            me->started = bd_monotonic();
            pthread_mutex_unlock(&p->lock);
            end_parked(p, list);
            pthread_mutex_lock(&p->lock);
            me->state = SLOT_IDLE;
            continue;
        }
        if (!job) {
            if (p->stopping)
                break;
            me->state = SLOT_SLEEPING;
            p->sleeping++;
            pthread_cond_wait(&p->work, &p->lock);
            p->sleeping--;
            if (p->waking > 0)
                p->waking--;
            me->state = SLOT_IDLE;
            continue;
        }
        p->head = job->next;
        if (!p->head)
            p->tail = NULL;
        int past_grace = p->stopping;
        me->state = SLOT_RUNNING;
        me->started = bd_monotonic();
        pthread_mutex_unlock(&p->lock);
        uint64_t ticket = p->ops->run(p->cls, job, past_grace); /* 0: job may be gone already */
        pthread_mutex_lock(&p->lock);
        me->state = SLOT_IDLE;
        if (ticket) {
            job->durable_ticket = ticket;
            job->next = NULL;
            if (p->parked_tail) {
                p->parked_tail->next = job;
            } else {
                p->parked_head = job;
                p->parked_since = bd_monotonic();
            }
            p->parked_tail = job;
        }
    }
    me->state = SLOT_SLEEPING;
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* Wakes a thread for a job that waited BD_POOL_STALE, or whose ready
 * threads got stuck in slow calls, when no submit came to do it. Looks
 * every BD_POOL_STALE while jobs are queued, sleeps while none are. */
static void *watchdog_main(void *arg)
{
    bd_pool *p = arg;
    pthread_mutex_lock(&p->lock);
    while (!p->stopping) {
        if (wake_if_needed(p, bd_monotonic()) || p->head) {
            struct timespec until;
            clock_gettime(CLOCK_MONOTONIC, &until);
            until.tv_nsec += (long)(BD_POOL_STALE * 1e9);
            if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&p->watch, &p->lock, &until);
        } else {
            p->watch_idle = 1;
            pthread_cond_wait(&p->watch, &p->lock);
        }
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

int bd_pool_submit(bd_pool *p, bd_pool_job *job)
{
    pthread_mutex_lock(&p->lock);
    if (p->stopping) {
        pthread_mutex_unlock(&p->lock);
        return 0;
    }
    p->ops->queued(p->cls, job);
    job->next = NULL;
    job->queued_at = bd_monotonic();
    if (p->tail)
        p->tail->next = job;
    else
        p->head = job;
    p->tail = job;
    if (wake_if_needed(p, job->queued_at) && p->watch_idle) {
        p->watch_idle = 0;
        pthread_cond_signal(&p->watch);
    }
    pthread_mutex_unlock(&p->lock);
    return 1;
}

void bd_pool_stop(bd_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stopping = 1;
    pthread_cond_broadcast(&p->work);
    pthread_cond_signal(&p->watch);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->n_slots; i++)
        pthread_join(p->slots[i].thread, NULL);
    if (p->watchdog_started)
        pthread_join(p->watchdog, NULL);
    pthread_cond_destroy(&p->watch);
    pthread_cond_destroy(&p->work);
    pthread_mutex_destroy(&p->lock);
    free(p->slots);
    free(p);
}

bd_pool *bd_pool_start(const bd_pool_ops *ops, void *cls, int threads)
{
    bd_pool *p = bd_xcalloc(1, sizeof *p);
    p->ops = ops;
    p->cls = cls;
    p->ready_target = usable_cores();
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_condattr_t cattr;
    pthread_condattr_init(&cattr);
    pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC); /* the watchdog's deadlines */
    pthread_cond_init(&p->watch, &cattr);
    pthread_condattr_destroy(&cattr);
    p->slots = bd_xcalloc((size_t)threads, sizeof *p->slots);
    int ok = pthread_create(&p->watchdog, NULL, watchdog_main, p) == 0;
    p->watchdog_started = ok;
    for (int i = 0; ok && i < threads; i++) {
        p->slots[i].pool = p;
        p->slots[i].state = SLOT_IDLE; /* it counts as ready until it first sleeps */
        pthread_mutex_lock(&p->lock);
        ok = pthread_create(&p->slots[i].thread, NULL, thread_main, &p->slots[i]) == 0;
        if (ok)
            p->n_slots++;
        pthread_mutex_unlock(&p->lock);
    }
    if (!ok) {
        bd_pool_stop(p);
        return NULL;
    }
    return p;
}
