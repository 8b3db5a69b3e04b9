/* sqlite_subjournal.h: a savepoint's sub-journal kept in memory for the life
 * of the connection.
 *
 * Each request runs in a savepoint inside its batch's transaction, so SQLite
 * journals the old content of every page a request changes (4 bytes of page
 * number, then the page). It keeps that sub-journal in memory up to 64 KiB
 * and then spills it to a temporary file; with PRAGMA locking_mode =
 * EXCLUSIVE (sqlite_store.c) the pager never closes that file again
 * (pager.c, releaseAllSavepoints), so after one request that journals more
 * than 64 KiB every later request writes its journal with two pwrite calls
 * per page, for the rest of the daemon's life: about four calls per request
 * and a sixth of the throughput (tests/bench/README.md, "The sub-journal").
 * This file type, which the banditd VFS (sqlite_walbuf.h) opens for
 * sub-journals, keeps the first BD_SUBJOURNAL_FRONT bytes in memory and
 * passes only what lies beyond to the real temporary file (opened by the
 * first such write: most connections never create one). SQLite writes the
 * sub-journal from offset 0 again at each savepoint, so the requests after a
 * large one are served from memory again; a statement that journals more (a
 * large study deleted) still reaches the disk, so memory stays bounded.
 * The store sets SQLite's spill threshold to 0 (sqlite_store.c,
 * configure_library), so every sub-journal is this file from its first
 * byte: one buffer for the connection's life instead of SQLite's 64 KiB
 * chunk allocated and freed at every savepoint. */
#ifndef BD_SQLITE_SUBJOURNAL_H
#define BD_SQLITE_SUBJOURNAL_H

#include <sqlite3.h>

#define BD_SUBJOURNAL_FRONT (1 << 20) /* 255 pages of 4 KiB: a request journals a few */

/* Bytes of the wrapper placed before the parent's file object. */
int bd_subjournal_overhead(void);

/* xOpen for a sub-journal: fills file; the parent's file, in the memory
 * after the wrapper, is opened when a write first goes beyond the front. */
int bd_subjournal_open(sqlite3_vfs *parent, sqlite3_filename name, sqlite3_file *file, int flags,
                       int *out_flags);

#endif
