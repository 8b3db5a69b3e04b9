/* sqlite_subjournal.c: a sub-journal's front in memory (sqlite_subjournal.h). */
#include "sqlite_subjournal.h"

#include <stdlib.h>
#include <string.h>

#include "sqlite_vfs_wrap.h"

typedef struct subjournal_file {
    bd_wrapped_file wrap; /* base.pMethods: subjournal_methods; real: the parent's temporary file */
    unsigned char *front; /* bytes [0, len) of the file; kept between savepoints */
    size_t len, cap;
} subjournal_file;

static const sqlite3_io_methods subjournal_methods;

/* A write is split at BD_SUBJOURNAL_FRONT: the part before it is copied to
 * memory (zero-filling any gap, as a file would read), the rest goes to the
 * real file at the same offset. */
static int sj_write(sqlite3_file *file, const void *data, int n, sqlite3_int64 at)
{
    subjournal_file *f = (subjournal_file *)file;
    const unsigned char *bytes = data;
    if (at < BD_SUBJOURNAL_FRONT) {
        size_t head = (size_t)(BD_SUBJOURNAL_FRONT - at) < (size_t)n ? (size_t)(BD_SUBJOURNAL_FRONT - at) : (size_t)n;
        size_t end = (size_t)at + head;
        int rc = bd_wrap_reserve(&f->front, &f->cap, end);
        if (rc != SQLITE_OK)
            return rc;
        if ((size_t)at > f->len)
            memset(f->front + f->len, 0, (size_t)at - f->len);
        memcpy(f->front + at, bytes, head);
        if (end > f->len)
            f->len = end;
        bytes += head;
        n -= (int)head;
        at += (sqlite3_int64)head;
    }
    return n > 0 ? f->wrap.real->pMethods->xWrite(f->wrap.real, bytes, n, at) : SQLITE_OK;
}

static int sj_read(sqlite3_file *file, void *out, int n, sqlite3_int64 at)
{
    subjournal_file *f = (subjournal_file *)file;
    unsigned char *bytes = out;
    if (at < BD_SUBJOURNAL_FRONT) {
        size_t head = (size_t)(BD_SUBJOURNAL_FRONT - at) < (size_t)n ? (size_t)(BD_SUBJOURNAL_FRONT - at) : (size_t)n;
        size_t have = (size_t)at < f->len ? f->len - (size_t)at : 0;
        if (have > head)
            have = head;
        if (have)
            memcpy(bytes, f->front + at, have);
        if (have < head) { /* past the end: SQLite wants zeros and a short read */
            memset(bytes + have, 0, (size_t)n - have);
            return SQLITE_IOERR_SHORT_READ;
        }
        bytes += head;
        n -= (int)head;
        at += (sqlite3_int64)head;
    }
    return n > 0 ? f->wrap.real->pMethods->xRead(f->wrap.real, bytes, n, at) : SQLITE_OK;
}

static int sj_truncate(sqlite3_file *file, sqlite3_int64 size)
{
    subjournal_file *f = (subjournal_file *)file;
    if ((sqlite3_int64)f->len > size)
        f->len = (size_t)size;
    return f->wrap.real->pMethods->xTruncate(f->wrap.real, size < BD_SUBJOURNAL_FRONT ? 0 : size);
}

static int sj_file_size(sqlite3_file *file, sqlite3_int64 *size)
{
    subjournal_file *f = (subjournal_file *)file;
    sqlite3_int64 real_size = 0;
    int rc = f->wrap.real->pMethods->xFileSize(f->wrap.real, &real_size);
    if (rc == SQLITE_OK)
        *size = real_size > (sqlite3_int64)f->len ? real_size : (sqlite3_int64)f->len;
    return rc;
}

static int sj_close(sqlite3_file *file)
{
    subjournal_file *f = (subjournal_file *)file;
    free(f->front);
    f->front = NULL;
    f->len = f->cap = 0;
    return f->wrap.real->pMethods->xClose(f->wrap.real);
}

/* The rest is the parent's (a sub-journal is never synced or locked, but
 * SQLite may ask). */
static const sqlite3_io_methods subjournal_methods = {
    .iVersion = 1, /* no shared memory, no memory mapping: a journal uses neither */
    .xClose = sj_close,
    .xRead = sj_read,
    .xWrite = sj_write,
    .xTruncate = sj_truncate,
    .xSync = bd_wrap_sync,
    .xFileSize = sj_file_size,
    .xLock = bd_wrap_lock,
    .xUnlock = bd_wrap_unlock,
    .xCheckReservedLock = bd_wrap_check_reserved_lock,
    .xFileControl = bd_wrap_file_control,
    .xSectorSize = bd_wrap_sector_size,
    .xDeviceCharacteristics = bd_wrap_device_characteristics,
};

int bd_subjournal_overhead(void)
{
    return (int)sizeof(subjournal_file);
}

int bd_subjournal_open(sqlite3_vfs *parent, sqlite3_filename name, sqlite3_file *file, int flags,
                       int *out_flags)
{
    return bd_wrap_open(parent, name, file, sizeof(subjournal_file), &subjournal_methods, flags, out_flags);
}
