/* sqlite_syncer.h: the WAL's commit syncs, made by a thread of their own
 * (--sync full).
 *
 * With synchronous=FULL SQLite syncs the WAL inside every COMMIT, and that
 * fdatasync (0.4-0.7 ms on this project's machines) held the connection and
 * the HTTP loop thread: a third of the loop's time under load (issue 18,
 * tests/bench/README.md). The WAL buffer (sqlite_walbuf.h) hands a commit's
 * sync to this thread instead and COMMIT returns at once, with a ticket: the
 * caller answers nobody before bd_syncer_wait or bd_syncer_poll says that
 * ticket is on disk, and meanwhile the connection runs the next batch. One
 * fdatasync covers every ticket requested before it began, so syncs coalesce
 * under load.
 *
 * A failed sync is sticky: that ticket and every later one fail, and the
 * store refuses new batches (the WAL buffer fails each later commit's sync)
 * until it has healed: a checkpoint that wrote the whole WAL into the
 * database, synced it and truncated the WAL (sqlite_store.c), after which
 * bd_syncer_healed marks everything requested so far on disk. A sync that
 * failed may have left the kernel's pages clean but not written (Linux), so
 * a later successful sync of the same file proves nothing; rewriting the
 * data through the checkpoint does.
 *
 * Thread safety: every call may come from any thread. */
#ifndef BD_SQLITE_SYNCER_H
#define BD_SQLITE_SYNCER_H

#include <stdint.h>

#include "../server/common.h"

typedef struct bd_syncer bd_syncer;

/* Opens its own descriptor of the WAL at path (fdatasync covers the file,
 * whichever descriptor wrote it) and starts the thread. NULL with err set
 * when either fails. */
bd_syncer *bd_syncer_start(const char *wal_path, bd_err *err);
/* Waits for the sync in progress, stops the thread, closes the descriptor. */
void bd_syncer_stop(bd_syncer *s);

/* A new ticket covering every write made to the WAL before this call; the
 * thread syncs it soon. 0 (no ticket) if the syncer has failed and not
 * healed: the caller must then fail its commit. */
uint64_t bd_syncer_request(bd_syncer *s);
/* The last ticket requested; a sync made by the caller itself (SQLite's
 * checkpoint syncs, sqlite_walbuf.c) after reading it covers it: pass it to
 * bd_syncer_covered once that sync succeeded. */
uint64_t bd_syncer_requested(bd_syncer *s);
void bd_syncer_covered(bd_syncer *s, uint64_t ticket);

/* 1: ticket is on disk; 0: not yet; BD_ESTORAGE (err set): its sync
 * failed. bd_syncer_wait blocks until it is not 0. */
int bd_syncer_poll(bd_syncer *s, uint64_t ticket, bd_err *err);
int bd_syncer_wait(bd_syncer *s, uint64_t ticket, bd_err *err);

/* The errno of the failed sync that has not healed, else 0. */
int bd_syncer_failed(bd_syncer *s);
/* After a checkpoint that put the whole WAL into the synced database: every
 * ticket requested so far is on disk, and the failure is over. */
void bd_syncer_healed(bd_syncer *s);

/* Called by the thread after each sync (done or failed), with the
 * syncer's lock held, so it must be quick and must not call the syncer: the
 * HTTP loop's wake-up (one write to an eventfd). NULL: nobody; once this
 * returns, the function given before is not running and will not run. */
void bd_syncer_on_synced(bd_syncer *s, void (*fn)(void *arg), void *arg);

#endif
