/* Unit tests of api/request_pool.c: jobs run, parked jobs end after one
 * commit with their own outcome, the stop ends everything, and a slow job
 * does not hold up the jobs queued behind it. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "../../api/request_pool.h"

typedef struct job {
    bd_pool_job pj;   /* first: the pool's record is the job's address */
    uint64_t park_at; /* run parks the job with this ticket (0: done at once) */
    int block;        /* run waits until the test releases it */
    long sleep_us;    /* run takes this long */
    int started, ran, past_grace, finished, failed;
    int finished_after; /* jobs run when it ended */
} job;

typedef struct fixture {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int released;         /* blocked jobs may go on */
    int n_ran;            /* jobs run so far */
    uint64_t failing;     /* this ticket's batch fails */
    uint64_t durable_max; /* largest ticket waited for */
    int durable_calls;
} fixture;

static fixture fx;

static void queued(void *cls, bd_pool_job *pj)
{
    (void)cls;
    (void)pj;
}

static uint64_t run(void *cls, bd_pool_job *pj, int past_grace)
{
    fixture *f = cls;
    job *j = (job *)pj;
    pthread_mutex_lock(&f->mu);
    j->started = 1;
    pthread_cond_broadcast(&f->cv);
    while (j->block && !f->released && !past_grace)
        pthread_cond_wait(&f->cv, &f->mu);
    j->ran = 1;
    j->past_grace = past_grace;
    f->n_ran++;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    if (j->sleep_us) {
        struct timespec pause = {0, j->sleep_us * 1000};
        nanosleep(&pause, NULL);
    }
    uint64_t ticket = past_grace ? 0 : j->park_at;
    if (!ticket) {
        pthread_mutex_lock(&f->mu);
        j->finished = 1;
        pthread_cond_broadcast(&f->cv);
        pthread_mutex_unlock(&f->mu);
    }
    return ticket;
}

static int durable(void *cls, uint64_t ticket, bd_err *err)
{
    fixture *f = cls;
    pthread_mutex_lock(&f->mu);
    f->durable_calls++;
    if (ticket > f->durable_max)
        f->durable_max = ticket;
    pthread_mutex_unlock(&f->mu);
    return ticket == f->failing ? bd_err_set(err, BD_ESTORAGE, NULL, "the commit failed") : 0;
}

static void finish(void *cls, bd_pool_job *pj, const bd_err *failed)
{
    fixture *f = cls;
    job *j = (job *)pj;
    pthread_mutex_lock(&f->mu);
    j->finished = 1;
    j->finished_after = f->n_ran;
    j->failed = failed != NULL;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

static const bd_pool_ops ops = {queued, run, durable, finish};

static void setup(void)
{
    memset(&fx, 0, sizeof fx);
    pthread_mutex_init(&fx.mu, NULL);
    pthread_cond_init(&fx.cv, NULL);
}

/* Waits (at most 10 s: a hang fails the test, it does not time anything)
 * until *flag is set. */
static int wait_for(const int *flag)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    pthread_mutex_lock(&fx.mu);
    int rc = 0;
    while (!*flag && rc == 0)
        rc = pthread_cond_timedwait(&fx.cv, &fx.mu, &until);
    int ok = *flag;
    pthread_mutex_unlock(&fx.mu);
    return ok;
}

TestSuite(request_pool, .init = setup);

Test(request_pool, every_job_runs_and_parked_ones_end_with_their_own_outcome)
{
    job jobs[8];
    memset(jobs, 0, sizeof jobs);
    bd_pool *p = bd_pool_start(&ops, &fx, 4);
    cr_assert_not_null(p);
    fx.failing = 7;
    for (int i = 0; i < 8; i++) {
        jobs[i].park_at = i % 2 ? (uint64_t)(i + 1) : 0; /* tickets 2, 4, 6, 8 */
        if (i == 6)
            jobs[i].park_at = 7;
        cr_assert_eq(bd_pool_submit(p, &jobs[i].pj), 1);
    }
    for (int i = 0; i < 8; i++)
        cr_assert(wait_for(&jobs[i].finished), "job %d never ended", i);
    for (int i = 0; i < 8; i++) {
        cr_expect(jobs[i].ran);
        cr_expect_not(jobs[i].past_grace);
        cr_expect_eq(jobs[i].failed, i == 6, "job %d: only the job of the failed batch fails", i);
    }
    cr_expect_geq(fx.durable_max, 8, "the commit covered the largest ticket");
    bd_pool_stop(p);
}

Test(request_pool, a_job_parked_while_nothing_else_is_queued_is_committed_without_help)
{
    job one = {.park_at = 3};
    bd_pool *p = bd_pool_start(&ops, &fx, 1);
    cr_assert_eq(bd_pool_submit(p, &one.pj), 1);
    cr_assert(wait_for(&one.finished), "a lone parked job must not wait for another request");
    cr_expect_not(one.failed);
    cr_expect_eq(fx.durable_max, 3);
    bd_pool_stop(p);
}

Test(request_pool, a_slow_job_does_not_hold_up_the_jobs_queued_behind_it)
{
    /* Both threads ready when the jobs arrive; the slow one blocks until the
     * quick one has run, which a pool that left the quick one queued behind
     * a thread stuck in a slow call would never do (wait_for then fails). */
    job slow = {.block = 1}, slow2 = {.block = 1}, quick = {0};
    bd_pool *p = bd_pool_start(&ops, &fx, 8);
    cr_assert_eq(bd_pool_submit(p, &slow.pj), 1);
    cr_assert_eq(bd_pool_submit(p, &slow2.pj), 1);
    struct timespec pause = {0, 5 * 1000 * 1000}; /* past BD_POOL_FRESH: the slow ones stop counting as ready */
    nanosleep(&pause, NULL);
    cr_assert_eq(bd_pool_submit(p, &quick.pj), 1);
    cr_expect(wait_for(&quick.finished), "the quick job waited for the slow ones");
    pthread_mutex_lock(&fx.mu);
    fx.released = 1;
    pthread_cond_broadcast(&fx.cv);
    pthread_mutex_unlock(&fx.mu);
    cr_assert(wait_for(&slow.finished));
    cr_assert(wait_for(&slow2.finished));
    bd_pool_stop(p);
}

Test(request_pool, a_parked_answer_does_not_wait_for_a_queue_that_never_empties)
{
    /* One thread, a parked job, then 100 jobs of 1 ms queued behind it: the
     * queue stays full for 100 ms. The parked job's batch must be committed
     * after BD_POOL_STALE (a few of them), not once the queue is empty. */
    static job jobs[101];
    memset(jobs, 0, sizeof jobs);
    jobs[0].park_at = 9;
    for (int i = 1; i <= 100; i++)
        jobs[i].sleep_us = 1000;
    bd_pool *p = bd_pool_start(&ops, &fx, 1);
    for (int i = 0; i <= 100; i++)
        cr_assert_eq(bd_pool_submit(p, &jobs[i].pj), 1);
    cr_assert(wait_for(&jobs[0].finished));
    cr_expect_lt(jobs[0].finished_after, 50, "the parked answer waited for %d of the 100 queued jobs",
                 jobs[0].finished_after - 1);
    cr_assert(wait_for(&jobs[100].finished));
    bd_pool_stop(p);
}

static void *stop_pool(void *arg)
{
    bd_pool_stop(arg);
    return NULL;
}

Test(request_pool, stop_refuses_what_is_queued_and_ends_what_is_parked)
{
    /* One thread, held by a job that will park; a second job queued behind
     * it. Once the stop has begun (a submit is refused), the first job is
     * let go: its parked answer must still go out, and the queued job is
     * run past the grace (refused), before the stop returns. */
    job running = {.block = 1, .park_at = 5}, behind = {.park_at = 6};
    bd_pool *p = bd_pool_start(&ops, &fx, 1);
    cr_assert_eq(bd_pool_submit(p, &running.pj), 1);
    cr_assert_eq(bd_pool_submit(p, &behind.pj), 1);
    cr_assert(wait_for(&running.started));
    pthread_t stopper;
    cr_assert_eq(pthread_create(&stopper, NULL, stop_pool, p), 0);
    job extra[200];
    memset(extra, 0, sizeof extra);
    int refused = 0;
    for (int i = 0; i < 200 && !refused; i++) {
        struct timespec pause = {0, 1000 * 1000};
        nanosleep(&pause, NULL);
        refused = !bd_pool_submit(p, &extra[i].pj);
    }
    cr_assert(refused, "a submit after the stop began must be refused");
    pthread_mutex_lock(&fx.mu);
    fx.released = 1;
    pthread_cond_broadcast(&fx.cv);
    pthread_mutex_unlock(&fx.mu);
    pthread_join(stopper, NULL); /* returns only once every job ended */
    cr_expect(running.finished && !running.failed, "the parked answer went out before the stop returned");
    cr_expect_eq(fx.durable_max, 5);
    cr_expect(behind.ran && behind.past_grace && behind.finished, "the queued job was refused, not run");
}
