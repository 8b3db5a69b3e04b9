/* sqlite_subjournal.c: a sub-journal's front in memory (sqlite_subjournal.h). */
#include "sqlite_subjournal.h"

#include <stdlib.h>
#include <string.h>

#include "sqlite_vfs_wrap.h"

typedef struct subjournal_file {
    bd_wrapped_file wrap; /* base.pMethods: subjournal_methods; real: the parent's temporary file */
    unsigned char *front; /* bytes [0, len) of the file; kept between savepoints */
    size_t len, cap;
    /* The temporary file is opened by the first write beyond the front:
     * most connections never journal that much, and then need no
     * temporary directory at all. */
    sqlite3_vfs *parent;
    sqlite3_filename name;
    int flags;
    int opened;
} subjournal_file;

static const sqlite3_io_methods subjournal_methods;

static int open_real(subjournal_file *f)
{
    if (f->opened)
        return SQLITE_OK;
    int rc = f->parent->xOpen(f->parent, f->name, f->wrap.real, f->flags, NULL);
    if (rc == SQLITE_OK && !f->wrap.real->pMethods)
        rc = SQLITE_CANTOPEN;
    f->opened = rc == SQLITE_OK;
    return rc;
}

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
    if (n <= 0)
        return SQLITE_OK;
    int rc = open_real(f);
    return rc != SQLITE_OK ? rc : f->wrap.real->pMethods->xWrite(f->wrap.real, bytes, n, at);
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
    if (n > 0 && !f->opened) { /* nothing was written there */
        memset(bytes, 0, (size_t)n);
        return SQLITE_IOERR_SHORT_READ;
    }
    return n > 0 ? f->wrap.real->pMethods->xRead(f->wrap.real, bytes, n, at) : SQLITE_OK;
}

static int sj_truncate(sqlite3_file *file, sqlite3_int64 size)
{
    subjournal_file *f = (subjournal_file *)file;
    if ((sqlite3_int64)f->len > size)
        f->len = (size_t)size;
    if (!f->opened)
        return SQLITE_OK;
    return f->wrap.real->pMethods->xTruncate(f->wrap.real, size < BD_SUBJOURNAL_FRONT ? 0 : size);
}

static int sj_file_size(sqlite3_file *file, sqlite3_int64 *size)
{
    subjournal_file *f = (subjournal_file *)file;
    sqlite3_int64 real_size = 0;
    int rc = f->opened ? f->wrap.real->pMethods->xFileSize(f->wrap.real, &real_size) : SQLITE_OK;
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
    return f->opened ? f->wrap.real->pMethods->xClose(f->wrap.real) : SQLITE_OK;
}

/* The rest is the parent's once its file is open (a sub-journal is never
 * synced or locked, but SQLite may ask); before, what an empty file says. */
static int sj_sync(sqlite3_file *file, int flags)
{
    return ((subjournal_file *)file)->opened ? bd_wrap_sync(file, flags) : SQLITE_OK;
}

static int sj_lock(sqlite3_file *file, int level)
{
    return ((subjournal_file *)file)->opened ? bd_wrap_lock(file, level) : SQLITE_OK;
}

static int sj_unlock(sqlite3_file *file, int level)
{
    return ((subjournal_file *)file)->opened ? bd_wrap_unlock(file, level) : SQLITE_OK;
}

static int sj_check_reserved_lock(sqlite3_file *file, int *out)
{
    if (((subjournal_file *)file)->opened)
        return bd_wrap_check_reserved_lock(file, out);
    *out = 0;
    return SQLITE_OK;
}

static int sj_file_control(sqlite3_file *file, int op, void *arg)
{
    return ((subjournal_file *)file)->opened ? bd_wrap_file_control(file, op, arg) : SQLITE_NOTFOUND;
}

static int sj_sector_size(sqlite3_file *file)
{
    return ((subjournal_file *)file)->opened ? bd_wrap_sector_size(file) : 4096; /* SQLite's default */
}

static int sj_device_characteristics(sqlite3_file *file)
{
    return ((subjournal_file *)file)->opened ? bd_wrap_device_characteristics(file) : 0;
}

static const sqlite3_io_methods subjournal_methods = {
    .iVersion = 1, /* no shared memory, no memory mapping: a journal uses neither */
    .xClose = sj_close,
    .xRead = sj_read,
    .xWrite = sj_write,
    .xTruncate = sj_truncate,
    .xSync = sj_sync,
    .xFileSize = sj_file_size,
    .xLock = sj_lock,
    .xUnlock = sj_unlock,
    .xCheckReservedLock = sj_check_reserved_lock,
    .xFileControl = sj_file_control,
    .xSectorSize = sj_sector_size,
    .xDeviceCharacteristics = sj_device_characteristics,
};

int bd_subjournal_overhead(void)
{
    return (int)sizeof(subjournal_file);
}

int bd_subjournal_open(sqlite3_vfs *parent, sqlite3_filename name, sqlite3_file *file, int flags,
                       int *out_flags)
{
    subjournal_file *f = (subjournal_file *)file;
    memset(f, 0, sizeof *f);
    f->wrap.real = (sqlite3_file *)((char *)file + sizeof *f);
    f->wrap.real->pMethods = NULL;
    f->parent = parent;
    f->name = name;
    f->flags = flags;
    f->wrap.base.pMethods = &subjournal_methods;
    if (out_flags)
        *out_flags = flags;
    return SQLITE_OK;
}
