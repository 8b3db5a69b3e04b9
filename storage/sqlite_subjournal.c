/* sqlite_subjournal.c: a sub-journal's front in memory (sqlite_subjournal.h). */
#include "sqlite_subjournal.h"

#include <stdlib.h>
#include <string.h>

typedef struct subjournal_file {
    sqlite3_file base;   /* pMethods: subjournal_methods */
    sqlite3_file *real;  /* the parent's temporary file, in the memory after this struct */
    unsigned char *front; /* bytes [0, len) of the file; kept between savepoints */
    size_t len, cap;
} subjournal_file;

static const sqlite3_io_methods subjournal_methods;

static int grow(subjournal_file *f, size_t need)
{
    if (need <= f->cap)
        return SQLITE_OK;
    size_t cap = f->cap ? f->cap : 64 << 10;
    while (cap < need)
        cap *= 2;
    unsigned char *grown = realloc(f->front, cap);
    if (!grown)
        return SQLITE_IOERR_NOMEM;
    f->front = grown;
    f->cap = cap;
    return SQLITE_OK;
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
        int rc = grow(f, end);
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
    return n > 0 ? f->real->pMethods->xWrite(f->real, bytes, n, at) : SQLITE_OK;
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
        memcpy(bytes, f->front + at, have);
        if (have < head) { /* past the end: SQLite wants zeros and a short read */
            memset(bytes + have, 0, (size_t)n - have);
            return SQLITE_IOERR_SHORT_READ;
        }
        bytes += head;
        n -= (int)head;
        at += (sqlite3_int64)head;
    }
    return n > 0 ? f->real->pMethods->xRead(f->real, bytes, n, at) : SQLITE_OK;
}

static int sj_truncate(sqlite3_file *file, sqlite3_int64 size)
{
    subjournal_file *f = (subjournal_file *)file;
    if ((sqlite3_int64)f->len > size)
        f->len = (size_t)size;
    return f->real->pMethods->xTruncate(f->real, size < BD_SUBJOURNAL_FRONT ? 0 : size);
}

static int sj_file_size(sqlite3_file *file, sqlite3_int64 *size)
{
    subjournal_file *f = (subjournal_file *)file;
    sqlite3_int64 real_size = 0;
    int rc = f->real->pMethods->xFileSize(f->real, &real_size);
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
    return f->real->pMethods->xClose(f->real);
}

/* The rest is the parent's (a sub-journal is never synced or locked, but
 * SQLite may ask). */
static int sj_sync(sqlite3_file *file, int flags)
{
    sqlite3_file *r = ((subjournal_file *)file)->real;
    return r->pMethods->xSync(r, flags);
}

static int sj_lock(sqlite3_file *file, int level)
{
    sqlite3_file *r = ((subjournal_file *)file)->real;
    return r->pMethods->xLock(r, level);
}

static int sj_unlock(sqlite3_file *file, int level)
{
    sqlite3_file *r = ((subjournal_file *)file)->real;
    return r->pMethods->xUnlock(r, level);
}

static int sj_check_reserved_lock(sqlite3_file *file, int *out)
{
    sqlite3_file *r = ((subjournal_file *)file)->real;
    return r->pMethods->xCheckReservedLock(r, out);
}

static int sj_file_control(sqlite3_file *file, int op, void *arg)
{
    sqlite3_file *r = ((subjournal_file *)file)->real;
    return r->pMethods->xFileControl(r, op, arg);
}

static int sj_sector_size(sqlite3_file *file)
{
    sqlite3_file *r = ((subjournal_file *)file)->real;
    return r->pMethods->xSectorSize(r);
}

static int sj_device_characteristics(sqlite3_file *file)
{
    sqlite3_file *r = ((subjournal_file *)file)->real;
    return r->pMethods->xDeviceCharacteristics(r);
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
    f->real = (sqlite3_file *)(f + 1);
    int rc = parent->xOpen(parent, name, f->real, flags, out_flags);
    f->base.pMethods = rc == SQLITE_OK && f->real->pMethods ? &subjournal_methods : NULL;
    return rc;
}
