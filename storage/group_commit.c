/* group_commit.c: transactions and group commit over one connection, for
 * every backend (group_commit.h). */
#include "group_commit.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static _Thread_local bd_gc *held_list; /* stores this thread holds a transaction on */

static int held_by_me(const bd_gc *g)
{
    for (const bd_gc *p = held_list; p; p = p->held_next)
        if (p == g)
            return 1;
    return 0;
}

static void lock(bd_gc *g)
{
    if (pthread_mutex_lock(&g->mu) != 0) {
        fprintf(stderr, "banditd: storage: pthread_mutex_lock failed\n");
        abort();
    }
}

static void unlock(bd_gc *g)
{
    if (pthread_mutex_unlock(&g->mu) != 0) {
        fprintf(stderr, "banditd: storage: pthread_mutex_unlock failed\n");
        abort();
    }
}

int bd_gc_init(bd_gc *g, const bd_gc_ops *ops, void *conn, int commit_delay_us, bd_err *err)
{
    g->ops = ops;
    g->conn = conn;
    g->commit_delay_us = commit_delay_us;
    if (pthread_mutex_init(&g->mu, NULL) != 0)
        return bd_err_set(err, BD_EINTERNAL, NULL, "storage: pthread_mutex_init failed");
    if (pthread_cond_init(&g->durable_cv, NULL) != 0) {
        pthread_mutex_destroy(&g->mu);
        return bd_err_set(err, BD_EINTERNAL, NULL, "storage: pthread_cond_init failed");
    }
    if (pthread_cond_init(&g->delay_cv, NULL) != 0) {
        pthread_cond_destroy(&g->durable_cv);
        pthread_mutex_destroy(&g->mu);
        return bd_err_set(err, BD_EINTERNAL, NULL, "storage: pthread_cond_init failed");
    }
    return 0;
}

void bd_gc_destroy(bd_gc *g)
{
    pthread_cond_destroy(&g->delay_cv);
    pthread_cond_destroy(&g->durable_cv);
    pthread_mutex_destroy(&g->mu);
}

int bd_gc_enter(bd_gc *g)
{
    if (held_by_me(g))
        return 0;
    lock(g);
    if (!g->batch_open && g->ops->idle)
        g->ops->idle(g->conn);
    return 1;
}

void bd_gc_leave(bd_gc *g, int locked)
{
    if (locked)
        unlock(g);
}

/* The calling thread gives up the transaction it holds on g and the lock. */
static void release_tx(bd_gc *g)
{
    bd_gc **p = &held_list;
    while (*p != g)
        p = &(*p)->held_next;
    *p = g->held_next;
    g->held_next = NULL;
    g->in_tx = 0;
    unlock(g);
}

/* Commits the open batch; mu held. Every waiter of the batch reads the
 * outcome from durable_seq and failed. */
static void commit_batch(bd_gc *g)
{
    bd_err err;
    uint64_t seq = g->batch_seq + 1;
    int ret = g->fail_next_commit ? bd_err_set(&err, BD_ESTORAGE, NULL, "storage: commit: disk full (test)")
                                  : g->ops->commit(g->conn, &err);
    g->fail_next_commit = 0;
    g->failed[seq % BD_GC_OUTCOME_RING] = ret != 0;
    g->last_failed = ret != 0;
    if (ret) {
        fprintf(stderr, "banditd: %s; the batch is rolled back\n", err.message);
        g->ops->abort(g->conn);
        g->n_failed++;
        g->poisoned = 1;
    }
    g->batch_open = 0;
    g->batch_seq = seq;
    g->durable_seq = seq;
    pthread_cond_broadcast(&g->durable_cv);
}

int bd_gc_begin(bd_gc *g, bd_err *err)
{
    int ret = 0;
    if (held_by_me(g))
        return bd_err_set(err, BD_EINTERNAL, NULL, "storage: a transaction is already open on this thread");
    lock(g);
    if (g->poisoned) {
        ret = bd_err_set(err, BD_ESTORAGE, NULL, "storage: recovering from a failed commit; retry");
        goto out;
    }
    if (g->batch_open && g->ops->batch_lost && g->ops->batch_lost(g->conn)) {
        commit_batch(g); /* fails: its waiters learn it, and the store is poisoned */
        ret = bd_err_set(err, BD_ESTORAGE, NULL, "storage: the database connection was lost; retry");
        goto out;
    }
    if (!g->batch_open) {
        if ((ret = g->ops->open_batch(g->conn, err)))
            goto out;
        g->batch_open = 1;
    }
    ret = g->ops->savepoint(g->conn, err);
out:
    if (ret) {
        unlock(g);
        return ret;
    }
    g->owner = pthread_self();
    g->in_tx = 1;
    g->held_next = held_list;
    held_list = g;
    return 0;
}

int bd_gc_release(bd_gc *g, uint64_t *ticket, bd_err *err)
{
    if (!held_by_me(g))
        return bd_err_set(err, BD_EINTERNAL, NULL, "storage: release without a transaction on this thread");
    assert(g->in_tx && pthread_equal(g->owner, pthread_self()));
    int ret = g->ops->release(g->conn, err);
    if (ret) {
        bd_err ignored;
        (void)g->ops->rollback_to(g->conn, &ignored);
        (void)g->ops->release(g->conn, &ignored);
    }
    *ticket = g->batch_seq + 1; /* batch numbers start at 1; durable_seq 0 = none yet */
    release_tx(g);
    return ret;
}

int bd_gc_wait(bd_gc *g, uint64_t ticket, bd_err *err)
{
    if (held_by_me(g))
        return bd_err_set(err, BD_EINTERNAL, NULL, "storage: wait while holding a transaction");
    lock(g);
    while (g->durable_seq < ticket) {
        if (g->committing) {
            pthread_cond_wait(&g->durable_cv, &g->mu);
            continue;
        }
        /* This waiter commits the batch, with whatever others released into
         * it while it was on its way here. */
        g->committing = 1;
        if (g->commit_delay_us > 0 && (!g->busy || atomic_load(g->busy) > 1)) {
            /* Hold the batch open a moment (mu released) so the requests
             * in progress join it; nothing signals delay_cv, the wait only
             * times out. With no other request in progress nobody would
             * join: commit at once. */
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += g->commit_delay_us * 1000L;
            if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
            }
            while (pthread_cond_timedwait(&g->delay_cv, &g->mu, &until) == 0)
                ;
        }
        commit_batch(g);
        g->committing = 0;
    }
    int failed = g->durable_seq - ticket >= BD_GC_OUTCOME_RING || g->failed[ticket % BD_GC_OUTCOME_RING];
    unlock(g);
    return failed ? bd_err_set(err, BD_ESTORAGE, NULL, "storage: the commit failed; nothing was saved") : 0;
}

int bd_gc_commit(bd_gc *g, bd_err *err)
{
    uint64_t ticket;
    int ret = bd_gc_release(g, &ticket, err);
    return ret ? ret : bd_gc_wait(g, ticket, err);
}

void bd_gc_rollback(bd_gc *g)
{
    if (!held_by_me(g))
        return;
    assert(g->in_tx && pthread_equal(g->owner, pthread_self()));
    bd_err err;
    /* Undo this request only: the batch may hold other requests' work. */
    if (g->ops->rollback_to(g->conn, &err) || g->ops->release(g->conn, &err))
        fprintf(stderr, "banditd: %s\n", err.message);
    release_tx(g);
}

void bd_gc_close(bd_gc *g)
{
    if (held_by_me(g))
        bd_gc_rollback(g);
    lock(g);
    if (g->batch_open)
        commit_batch(g);
    unlock(g);
    bd_gc_destroy(g);
}

uint64_t bd_gc_failures(bd_gc *g)
{
    return atomic_load(&g->n_failed); /* every request asks: no lock */
}

int bd_gc_writable(bd_gc *g)
{
    lock(g);
    int ok = !g->poisoned && !g->last_failed;
    unlock(g);
    return ok;
}

void bd_gc_recovered(bd_gc *g, uint64_t failures)
{
    lock(g);
    if (g->n_failed == failures)
        g->poisoned = 0;
    unlock(g);
}

uint64_t bd_gc_current_ticket(bd_gc *g)
{
    lock(g);
    uint64_t t = g->batch_open ? g->batch_seq + 1 : g->batch_seq;
    unlock(g);
    return t;
}

void bd_gc_fail_next_commit(bd_gc *g)
{
    lock(g);
    g->fail_next_commit = 1;
    unlock(g);
}
