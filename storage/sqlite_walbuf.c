/* sqlite_walbuf.c: one write per commit to the WAL (sqlite_walbuf.h). */
#include "sqlite_walbuf.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sqlite_subjournal.h"
#include "sqlite_vfs_wrap.h"

#define FRAME_HEADER 24 /* bytes of a WAL frame's header (SQLite's file format) */
/* A transaction larger than this (a migration, a large import) is written
 * in pieces of about this size; a batch of requests is tens of KB. */
#define HOLD_MAX (4 << 20)
/* The unix VFS writes at most 128 KiB - 1 per call (os_unix.c masks the
 * length to 17 bits: 128 KiB would be written as 0 bytes, SQLITE_FULL). A
 * batch of 30 requests is 30 to 80 KB: one call. */
#define WRITE_MAX (124 << 10)

typedef struct walbuf_file {
    bd_wrapped_file wrap; /* base.pMethods: walbuf_methods; real: the default VFS's file */
    unsigned char *buf; /* bytes held for [off, off + len) */
    size_t len, cap;
    sqlite3_int64 off;
    sqlite3_int64 end; /* the end of the frames written or held since the WAL last started over */
    int commit_next; /* the last write was a commit frame's header: its page ends the commit */
} walbuf_file;

static sqlite3_vfs walbuf_vfs;
static sqlite3_vfs *parent;
static const sqlite3_io_methods walbuf_methods;

/* Writes what f holds; it is dropped either way (after a failure SQLite
 * writes again whatever it still needs, as after its own failed write). */
static int flush(walbuf_file *f)
{
    int rc = SQLITE_OK;
    for (size_t done = 0; rc == SQLITE_OK && done < f->len; done += WRITE_MAX) {
        size_t n = f->len - done < WRITE_MAX ? f->len - done : WRITE_MAX;
        rc = f->wrap.real->pMethods->xWrite(f->wrap.real, f->buf + done, (int)n, f->off + (sqlite3_int64)done);
    }
    f->len = 0;
    return rc;
}

/* Where SQLite appends frames, it is held; a write over bytes already on
 * the file (SQLite rewriting the checksums of a transaction's frames after
 * its commit frame, when pages spilled before it) goes through at once, so
 * nothing is held when the commit ends. */
static int hold(walbuf_file *f, const void *data, size_t n, sqlite3_int64 at)
{
    sqlite3_int64 end = at + (sqlite3_int64)n;
    int rc;
    if (at == 0) /* the WAL's header: SQLite starts the WAL over from its beginning */
        f->end = 0;
    if (f->len && at >= f->off && end <= f->off + (sqlite3_int64)f->len) {
        memcpy(f->buf + (at - f->off), data, n); /* a page rewritten within what is held */
        return SQLITE_OK;
    }
    if (f->len && (at != f->off + (sqlite3_int64)f->len || f->len + n > HOLD_MAX) && (rc = flush(f)) != SQLITE_OK)
        return rc;
    if (at < f->end || n > WRITE_MAX) {
        rc = f->wrap.real->pMethods->xWrite(f->wrap.real, data, (int)n, at);
        if (rc == SQLITE_OK && end > f->end)
            f->end = end;
        return rc;
    }
    if ((rc = bd_wrap_reserve(&f->buf, &f->cap, f->len + n)) != SQLITE_OK)
        return rc;
    if (!f->len)
        f->off = at;
    memcpy(f->buf + f->len, data, n);
    f->len += n;
    f->end = end;
    return SQLITE_OK;
}

static uint32_t big_endian_u32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int wb_write(sqlite3_file *file, const void *data, int n, sqlite3_int64 at)
{
    walbuf_file *f = (walbuf_file *)file;
    int ends_commit = f->commit_next && n > FRAME_HEADER;
    /* A frame header's bytes 4..7: the database's size in pages after the
     * commit, for a commit frame; 0 for any other frame. */
    f->commit_next = n == FRAME_HEADER && big_endian_u32((const unsigned char *)data + 4) != 0;
    int rc = hold(f, data, (size_t)n, at);
    if (rc == SQLITE_OK && ends_commit)
        rc = flush(f);
    return rc;
}

static int wb_read(sqlite3_file *file, void *out, int n, sqlite3_int64 at)
{
    walbuf_file *f = (walbuf_file *)file;
    int rc = flush(f);
    return rc != SQLITE_OK ? rc : f->wrap.real->pMethods->xRead(f->wrap.real, out, n, at);
}

static int wb_close(sqlite3_file *file)
{
    walbuf_file *f = (walbuf_file *)file;
    int rc = flush(f);
    int closed = f->wrap.real->pMethods->xClose(f->wrap.real);
    free(f->buf);
    f->buf = NULL;
    f->cap = 0;
    return rc != SQLITE_OK ? rc : closed;
}

static int wb_truncate(sqlite3_file *file, sqlite3_int64 size)
{
    walbuf_file *f = (walbuf_file *)file;
    int rc = flush(f);
    if (rc == SQLITE_OK && size < f->end)
        f->end = size;
    return rc != SQLITE_OK ? rc : f->wrap.real->pMethods->xTruncate(f->wrap.real, size);
}

static int wb_sync(sqlite3_file *file, int flags)
{
    walbuf_file *f = (walbuf_file *)file;
    int rc = flush(f);
    return rc != SQLITE_OK ? rc : f->wrap.real->pMethods->xSync(f->wrap.real, flags);
}

static int wb_file_size(sqlite3_file *file, sqlite3_int64 *size)
{
    walbuf_file *f = (walbuf_file *)file;
    int rc = flush(f);
    return rc != SQLITE_OK ? rc : f->wrap.real->pMethods->xFileSize(f->wrap.real, size);
}

/* Version 2: no memory-mapped reads of the WAL (SQLite maps only the
 * database file, which this VFS does not wrap). */
static const sqlite3_io_methods walbuf_methods = {
    .iVersion = 2,
    .xClose = wb_close,
    .xRead = wb_read,
    .xWrite = wb_write,
    .xTruncate = wb_truncate,
    .xSync = wb_sync,
    .xFileSize = wb_file_size,
    .xLock = bd_wrap_lock,
    .xUnlock = bd_wrap_unlock,
    .xCheckReservedLock = bd_wrap_check_reserved_lock,
    .xFileControl = bd_wrap_file_control,
    .xSectorSize = bd_wrap_sector_size,
    .xDeviceCharacteristics = bd_wrap_device_characteristics,
    .xShmMap = bd_wrap_shm_map,
    .xShmLock = bd_wrap_shm_lock,
    .xShmBarrier = bd_wrap_shm_barrier,
    .xShmUnmap = bd_wrap_shm_unmap,
};

static int wb_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *file, int flags, int *out_flags)
{
    (void)vfs;
    if (flags & SQLITE_OPEN_SUBJOURNAL)
        return bd_subjournal_open(parent, name, file, flags, out_flags);
    if (!(flags & SQLITE_OPEN_WAL)) /* the parent's file fills ours: no wrapper */
        return parent->xOpen(parent, name, file, flags, out_flags);
    return bd_wrap_open(parent, name, file, sizeof(walbuf_file), &walbuf_methods, flags, out_flags);
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int registered;

static void register_vfs(void)
{
    parent = sqlite3_vfs_find(NULL);
    if (!parent || parent->iVersion < 1)
        return;
    walbuf_vfs = *parent; /* every method but xOpen is the parent's */
    walbuf_vfs.zName = "banditd-walbuf";
    int wrapper = (int)sizeof(walbuf_file) > bd_subjournal_overhead() ? (int)sizeof(walbuf_file)
                                                                        : bd_subjournal_overhead();
    walbuf_vfs.szOsFile = wrapper + parent->szOsFile;
    walbuf_vfs.xOpen = wb_open;
    walbuf_vfs.pNext = NULL;
    registered = sqlite3_vfs_register(&walbuf_vfs, 0) == SQLITE_OK;
}

const char *bd_walbuf_vfs(void)
{
    pthread_once(&once, register_vfs);
    return registered ? walbuf_vfs.zName : NULL;
}

int bd_walbuf_flush(sqlite3 *db, long *held)
{
    sqlite3_file *wal = NULL;
    if (held)
        *held = 0;
    if (sqlite3_file_control(db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &wal) != SQLITE_OK || !wal ||
        wal->pMethods != &walbuf_methods)
        return SQLITE_OK;
    walbuf_file *f = (walbuf_file *)wal;
    if (held)
        *held = (long)f->len;
    return flush(f);
}
