/* scan.h: a long read in batches, the same for every backend. A backend
 * reads one batch of rows into memory under its lock (read: its statement,
 * keyset after_id); the rows are then handed to the caller's callback with
 * the lock left (outside a transaction), so a callback may call the store
 * again, and a long scan never holds the connection from other requests
 * for longer than one batch. */
#ifndef BD_SCAN_H
#define BD_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* Reads up to want rows after after_id into rows (row_size bytes each): *n
 * of them, *last_id the last one's id. 0 or a BD_E* code (rows read before
 * an error are still counted in *n and cleared by the scan). */
typedef int (*bd_scan_read_fn)(void *ctx, int64_t after_id, int want, char *rows, int *n, int64_t *last_id,
                               bd_err *err);

typedef struct bd_scan_rows {
    size_t size;              /* sizeof a row */
    void (*clear)(void *row); /* frees what read allocated in it */
} bd_scan_rows;

/* Batch after batch of up to `batch` rows from after_id on, at most limit
 * rows (no limit when limit <= 0), each handed to call(row, cb) in order.
 * Returns 0, read's BD_E* code, or the first non-zero value call returned. */
int bd_scan(bd_scan_read_fn read, void *ctx, const bd_scan_rows *rows, int batch, int64_t after_id, int64_t limit,
            int (*call)(const void *row, void *cb), void *cb, bd_err *err) BD_MUST_CHECK;

/* For statements in another order than by id (no keyset to resume from):
 * one read of limit rows (1 .. INT32_MAX; memory limit x rows->size). */
int bd_scan_once(bd_scan_read_fn read, void *ctx, const bd_scan_rows *rows, int64_t limit,
                 int (*call)(const void *row, void *cb), void *cb, bd_err *err) BD_MUST_CHECK;

#endif
