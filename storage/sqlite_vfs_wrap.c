/* sqlite_vfs_wrap.c: the pass-throughs of the VFS's file wrappers
 * (sqlite_vfs_wrap.h). */
#include "sqlite_vfs_wrap.h"

#include <stdlib.h>
#include <string.h>

int bd_wrap_open(sqlite3_vfs *parent, sqlite3_filename name, sqlite3_file *file, size_t size,
                 const sqlite3_io_methods *methods, int flags, int *out_flags)
{
    bd_wrapped_file *f = (bd_wrapped_file *)file;
    memset(f, 0, size);
    f->real = (sqlite3_file *)((char *)file + size);
    int rc = parent->xOpen(parent, name, f->real, flags, out_flags);
    f->base.pMethods = rc == SQLITE_OK && f->real->pMethods ? methods : NULL;
    return rc;
}

int bd_wrap_reserve(unsigned char **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return SQLITE_OK;
    size_t grown_cap = *cap ? *cap : 64 << 10;
    while (grown_cap < need)
        grown_cap *= 2;
    unsigned char *grown = realloc(*buf, grown_cap);
    if (!grown)
        return SQLITE_IOERR_NOMEM;
    *buf = grown;
    *cap = grown_cap;
    return SQLITE_OK;
}

static sqlite3_file *real(sqlite3_file *file)
{
    return ((bd_wrapped_file *)file)->real;
}

int bd_wrap_sync(sqlite3_file *file, int flags)
{
    return real(file)->pMethods->xSync(real(file), flags);
}

int bd_wrap_lock(sqlite3_file *file, int level)
{
    return real(file)->pMethods->xLock(real(file), level);
}

int bd_wrap_unlock(sqlite3_file *file, int level)
{
    return real(file)->pMethods->xUnlock(real(file), level);
}

int bd_wrap_check_reserved_lock(sqlite3_file *file, int *out)
{
    return real(file)->pMethods->xCheckReservedLock(real(file), out);
}

int bd_wrap_file_control(sqlite3_file *file, int op, void *arg)
{
    return real(file)->pMethods->xFileControl(real(file), op, arg);
}

int bd_wrap_sector_size(sqlite3_file *file)
{
    return real(file)->pMethods->xSectorSize(real(file));
}

int bd_wrap_device_characteristics(sqlite3_file *file)
{
    return real(file)->pMethods->xDeviceCharacteristics(real(file));
}

int bd_wrap_shm_map(sqlite3_file *file, int region, int size, int extend, void volatile **out)
{
    return real(file)->pMethods->xShmMap(real(file), region, size, extend, out);
}

int bd_wrap_shm_lock(sqlite3_file *file, int offset, int n, int flags)
{
    return real(file)->pMethods->xShmLock(real(file), offset, n, flags);
}

void bd_wrap_shm_barrier(sqlite3_file *file)
{
    real(file)->pMethods->xShmBarrier(real(file));
}

int bd_wrap_shm_unmap(sqlite3_file *file, int delete_flag)
{
    return real(file)->pMethods->xShmUnmap(real(file), delete_flag);
}
