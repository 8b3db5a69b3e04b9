/* sqlite_syncer.c: the WAL's commit syncs on a thread of their own
 * (sqlite_syncer.h). */
#include "sqlite_syncer.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct bd_syncer {
    pthread_mutex_t mu;
    pthread_cond_t work_cv; /* the thread waits here for a ticket */
    pthread_cond_t done_cv; /* bd_syncer_wait waits here for a sync */
    pthread_t thread;
    int fd;
    uint64_t requested; /* the last ticket given */
    uint64_t done;      /* tickets up to this one are on disk */
    int failed_errno;   /* a sync failed and the store has not healed since */
    int stopping;
    void (*notify)(void *arg);
    void *notify_arg;
};

static void lock(bd_syncer *s)
{
    if (pthread_mutex_lock(&s->mu) != 0)
        abort();
}

static void unlock(bd_syncer *s)
{
    if (pthread_mutex_unlock(&s->mu) != 0)
        abort();
}

static void *sync_main(void *arg)
{
    bd_syncer *s = arg;
    lock(s);
    for (;;) {
        while (!s->stopping && (s->requested == s->done || s->failed_errno))
            pthread_cond_wait(&s->work_cv, &s->mu);
        if (s->requested == s->done || s->failed_errno)
            break; /* stopping, nothing left it could sync */
        uint64_t upto = s->requested; /* every write before this ticket was made is in the page cache */
        unlock(s);
        int failed = fdatasync(s->fd) == 0 ? 0 : errno;
        lock(s);
        if (failed) {
            if (!s->failed_errno)
                fprintf(stderr, "banditd: storage: syncing the WAL: %s; writes are refused until a checkpoint "
                                "has rewritten it\n", strerror(failed));
            s->failed_errno = failed;
        } else if (!s->failed_errno && upto > s->done) {
            s->done = upto;
        }
        pthread_cond_broadcast(&s->done_cv);
        if (s->notify) /* under the lock, so bd_syncer_on_synced(NULL) returns only once no call is running */
            s->notify(s->notify_arg);
    }
    unlock(s);
    return NULL;
}

bd_syncer *bd_syncer_start(const char *wal_path, bd_err *err)
{
    bd_syncer *s = bd_xcalloc(1, sizeof *s);
    s->fd = open(wal_path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (s->fd < 0) {
        bd_err_set(err, BD_ESTORAGE, NULL, "storage: opening %s to sync it: %s", wal_path, strerror(errno));
        free(s);
        return NULL;
    }
    int mu = pthread_mutex_init(&s->mu, NULL), work = -1, done = -1, thread = -1;
    if (!mu)
        work = pthread_cond_init(&s->work_cv, NULL);
    if (!work)
        done = pthread_cond_init(&s->done_cv, NULL);
    if (!done)
        thread = pthread_create(&s->thread, NULL, sync_main, s);
    if (!thread)
        return s;
    if (!done)
        pthread_cond_destroy(&s->done_cv);
    if (!work)
        pthread_cond_destroy(&s->work_cv);
    if (!mu)
        pthread_mutex_destroy(&s->mu);
    close(s->fd);
    free(s);
    bd_err_set(err, BD_EINTERNAL, NULL, "storage: cannot start the WAL's sync thread");
    return NULL;
}

void bd_syncer_stop(bd_syncer *s)
{
    if (!s)
        return;
    lock(s);
    s->stopping = 1;
    pthread_cond_signal(&s->work_cv);
    unlock(s);
    pthread_join(s->thread, NULL);
    pthread_cond_destroy(&s->done_cv);
    pthread_cond_destroy(&s->work_cv);
    pthread_mutex_destroy(&s->mu);
    close(s->fd);
    free(s);
}

uint64_t bd_syncer_request(bd_syncer *s)
{
    lock(s);
    uint64_t ticket = 0;
    if (!s->failed_errno) {
        ticket = ++s->requested;
        pthread_cond_signal(&s->work_cv);
    }
    unlock(s);
    return ticket;
}

uint64_t bd_syncer_requested(bd_syncer *s)
{
    lock(s);
    uint64_t ticket = s->requested;
    unlock(s);
    return ticket;
}

void bd_syncer_covered(bd_syncer *s, uint64_t ticket)
{
    lock(s);
    if (!s->failed_errno && ticket > s->done) {
        s->done = ticket;
        pthread_cond_broadcast(&s->done_cv);
    }
    unlock(s);
}

/* With the lock held. */
static int outcome(const bd_syncer *s, uint64_t ticket, bd_err *err)
{
    if (ticket <= s->done)
        return 1;
    if (s->failed_errno)
        return bd_err_set(err, BD_ESTORAGE, NULL,
                          "storage: the commit could not be synced (%s); it may not be saved: retry "
                          "(with the same Idempotency-Key, a retry finds it if it was)",
                          strerror(s->failed_errno));
    return 0;
}

int bd_syncer_poll(bd_syncer *s, uint64_t ticket, bd_err *err)
{
    lock(s);
    int rc = outcome(s, ticket, err);
    unlock(s);
    return rc;
}

int bd_syncer_wait(bd_syncer *s, uint64_t ticket, bd_err *err)
{
    lock(s);
    int rc;
    while ((rc = outcome(s, ticket, err)) == 0)
        pthread_cond_wait(&s->done_cv, &s->mu);
    unlock(s);
    return rc;
}

int bd_syncer_failed(bd_syncer *s)
{
    lock(s);
    int failed = s->failed_errno;
    unlock(s);
    return failed;
}

void bd_syncer_healed(bd_syncer *s)
{
    lock(s);
    s->failed_errno = 0;
    s->done = s->requested;
    pthread_cond_broadcast(&s->done_cv);
    unlock(s);
}

void bd_syncer_on_synced(bd_syncer *s, void (*fn)(void *arg), void *arg)
{
    lock(s);
    s->notify = fn;
    s->notify_arg = arg;
    unlock(s);
}
