/* sqlite_vfs_wrap.h: what the banditd VFS's file wrappers (sqlite_walbuf.c
 * for the WAL, sqlite_subjournal.c for sub-journals) share: each wrapper
 * starts with bd_wrapped_file, whose real file (the default VFS's, in the
 * memory after the wrapper) does whatever the wrapper does not change. */
#ifndef BD_SQLITE_VFS_WRAP_H
#define BD_SQLITE_VFS_WRAP_H

#include <sqlite3.h>
#include <stddef.h>

typedef struct bd_wrapped_file {
    sqlite3_file base;  /* pMethods: the wrapper's methods */
    sqlite3_file *real; /* the parent's file */
} bd_wrapped_file;

/* Opens the parent's file at real (the memory after the wrapper, whose
 * struct is size bytes and starts with bd_wrapped_file) and points file at
 * methods; on failure pMethods stays NULL, as SQLite expects. */
int bd_wrap_open(sqlite3_vfs *parent, sqlite3_filename name, sqlite3_file *file, size_t size,
                 const sqlite3_io_methods *methods, int flags, int *out_flags);

/* Makes *buf (of *cap bytes, both 0 at first) hold at least need bytes,
 * doubling from 64 KiB; SQLITE_IOERR_NOMEM when it cannot. */
int bd_wrap_reserve(unsigned char **buf, size_t *cap, size_t need);

/* Pass-throughs to the real file. */
int bd_wrap_sync(sqlite3_file *file, int flags);
int bd_wrap_lock(sqlite3_file *file, int level);
int bd_wrap_unlock(sqlite3_file *file, int level);
int bd_wrap_check_reserved_lock(sqlite3_file *file, int *out);
int bd_wrap_file_control(sqlite3_file *file, int op, void *arg);
int bd_wrap_sector_size(sqlite3_file *file);
int bd_wrap_device_characteristics(sqlite3_file *file);
int bd_wrap_shm_map(sqlite3_file *file, int region, int size, int extend, void volatile **out);
int bd_wrap_shm_lock(sqlite3_file *file, int offset, int n, int flags);
void bd_wrap_shm_barrier(sqlite3_file *file);
int bd_wrap_shm_unmap(sqlite3_file *file, int delete_flag);

#endif
