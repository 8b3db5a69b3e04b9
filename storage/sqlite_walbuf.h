/* sqlite_walbuf.h: a SQLite VFS over the default one that turns a commit's
 * many small WAL writes into one.
 *
 * SQLite appends every page a transaction changed to the WAL as a frame,
 * written as two calls (a 24-byte header, then the page): about 26 pwrite
 * calls for a batch of 30 requests, 28% of the daemon's CPU under load on a
 * virtual machine where each system call is dear (issue 18,
 * tests/bench/README.md). This VFS gathers a transaction's frames in memory
 * and writes them with one call when the commit frame (a frame header whose
 * "database size after commit" field is not zero) has been appended: still
 * inside SQLite's commit, so a failed write fails the commit, exactly as a
 * failed pwrite of SQLite's own would; nothing is held past it. It also
 * writes what it holds before any read, sync, size, truncate or close of the
 * WAL, and before a write that does not continue or overwrite what it
 * holds; a write over bytes already on the file (SQLite rewriting frame
 * checksums after a commit frame when pages spilled) goes through at once.
 * Sub-journals get sqlite_subjournal.h's file, which keeps them in memory;
 * other files (the database, temporary files) pass through untouched.
 *
 * The same bytes reach the same offsets in the same order as without it, so
 * the WAL's format, its recovery and its checksums are SQLite's own. */
#ifndef BD_SQLITE_WALBUF_H
#define BD_SQLITE_WALBUF_H

#include <sqlite3.h>

/* The VFS's name for sqlite3_open_v2, registered on first use over the
 * default VFS; NULL when it could not be (then open with the default). */
const char *bd_walbuf_vfs(void);

/* After a COMMIT (belt and braces): writes whatever the WAL of db's main
 * database still holds. Returns SQLITE_OK, or the write's error code; *held
 * (may be NULL) is set to the bytes there were, which is 0 unless SQLite
 * changed how it writes commit frames. */
int bd_walbuf_flush(sqlite3 *db, long *held);

#endif
