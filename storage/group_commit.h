/* group_commit.h: the transactions of store.h over one connection, the same
 * for every backend (sqlite_store.c, pg_store.c): only the SQL differs, so
 * each backend gives its statements (bd_gc_ops) and its record embeds a
 * bd_gc, which store.c calls for bd_store_begin ... bd_store_fail_next_commit.
 *
 * The protocol: mu serializes every use of the connection. bd_gc_begin
 * takes mu and opens a savepoint, inside the batch's outer transaction
 * (opened by the first request of a batch); release or rollback end the
 * savepoint and give mu back. A released request holds a ticket, the
 * number of its batch; the first of a batch's waiters commits it (group
 * commit), with whatever other requests released into it meanwhile, and
 * every waiter reads the outcome. A failed COMMIT fails every request of
 * the batch and poisons the store: begin refuses until bd_gc_recovered
 * (the engine rebuilds what it had decided from storage first).
 *
 * Which stores a thread holds a transaction on is kept in a thread-local
 * list, so a call from the owner does not lock again (bd_gc_enter) and
 * other threads never read fields another thread writes. */
#ifndef BD_GROUP_COMMIT_H
#define BD_GROUP_COMMIT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "store.h"

/* A backend's statements, each run with mu held on its connection. */
typedef struct bd_gc_ops {
    int (*open_batch)(void *conn, bd_err *err);  /* the outer transaction (BEGIN ...) */
    int (*savepoint)(void *conn, bd_err *err);   /* a request's own */
    int (*release)(void *conn, bd_err *err);     /* RELEASE the request's savepoint */
    int (*rollback_to)(void *conn, bd_err *err); /* ROLLBACK TO it (then release it) */
    int (*commit)(void *conn, bd_err *err);      /* COMMIT the batch */
    void (*abort)(void *conn);                   /* ROLLBACK what a failed COMMIT left open, if anything */
    /* Optional (NULL: never). 1 when the open batch died with its
     * connection: begin then ends it as failed instead of waiting for a
     * waiter that may never come. */
    int (*batch_lost)(void *conn);
    /* Optional: called by bd_gc_enter outside a batch (a lost connection
     * can be reset there). */
    void (*idle)(void *conn);
} bd_gc_ops;

/* Outcomes of the latest batches, by batch number modulo this: a waiter that
 * wakes later than this many batches after its own cannot know, and is told
 * its batch failed (a retry with its idempotency key then finds the answer). */
#define BD_GC_OUTCOME_RING 4096

typedef struct bd_gc {
    const bd_gc_ops *ops;
    void *conn;                   /* the backend's record, passed to ops */
    pthread_mutex_t mu;           /* serializes every use of the connection */
    pthread_t owner;              /* thread holding the open transaction; valid while in_tx */
    int in_tx;                    /* a begin is open (a savepoint); written with mu held */
    /* Group commit (all with mu held). */
    int batch_open;               /* the outer transaction is open */
    uint64_t batch_seq;           /* the open batch's number (tickets name it) */
    uint64_t durable_seq;         /* batches up to this one have ended (committed or failed) */
    uint8_t failed[BD_GC_OUTCOME_RING]; /* failed[seq % ring]: that batch's COMMIT failed */
    _Atomic uint64_t n_failed;    /* failed batches so far (written with mu held, read without) */
    int committing;               /* a waiter is running COMMIT */
    int poisoned;                 /* a batch failed: begin refuses until bd_gc_recovered */
    int last_failed;              /* the latest batch failed (no commit succeeded since) */
    int fail_next_commit;         /* tests: make the next batch's COMMIT fail */
    pthread_cond_t durable_cv;    /* signalled when a batch ends */
    pthread_cond_t delay_cv;      /* only timed out on: the commit delay */
    int commit_delay_us;          /* how long a committer holds its batch open for more to join */
    const atomic_int *busy;       /* the caller's requests in progress (bd_store_opts.busy); NULL: unknown */
    struct bd_gc *held_next;      /* the owner thread's list of stores it holds a transaction on */
} bd_gc;

/* commit_delay_us: 0, or how long the committer waits, without the lock,
 * for more requests to join its batch; only while another request is in
 * progress (g->busy > 1, set after init; with busy NULL, always): a lone
 * client's request is committed at once.
 * BD_EINTERNAL if the mutex or conditions cannot be made. */
int bd_gc_init(bd_gc *g, const bd_gc_ops *ops, void *conn, int commit_delay_us, bd_err *err) BD_MUST_CHECK;
/* Ends an open batch (committing it) and a transaction this thread still
 * holds (rolled back); then frees the lock. */
void bd_gc_close(bd_gc *g);
/* Frees the lock only (a store that failed to open: nothing was begun). */
void bd_gc_destroy(bd_gc *g);

/* Starts one call on the connection: locks mu unless the calling thread
 * holds a transaction on it. Pass the result to bd_gc_leave. */
int bd_gc_enter(bd_gc *g);
void bd_gc_leave(bd_gc *g, int locked);

/* store.h's contracts. */
int bd_gc_begin(bd_gc *g, bd_err *err) BD_MUST_CHECK;
int bd_gc_release(bd_gc *g, uint64_t *ticket, bd_err *err) BD_MUST_CHECK;
int bd_gc_wait(bd_gc *g, uint64_t ticket, bd_err *err) BD_MUST_CHECK;
int bd_gc_commit(bd_gc *g, bd_err *err) BD_MUST_CHECK;
void bd_gc_rollback(bd_gc *g);
uint64_t bd_gc_failures(bd_gc *g);
int bd_gc_writable(bd_gc *g);
void bd_gc_recovered(bd_gc *g, uint64_t failures);
uint64_t bd_gc_current_ticket(bd_gc *g);
void bd_gc_fail_next_commit(bd_gc *g);

#endif
