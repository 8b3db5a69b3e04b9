/* fault_shim.c: an LD_PRELOAD library for the disk-fault tests. While the
 * file named by $BD_FAULT_TRIGGER exists, every write, pwrite, fsync or
 * fdatasync on a file under $BD_FAULT_DIR fails with $BD_FAULT_ERRNO (EIO by
 * default; "EROFS" and "ENOSPC" are understood too). Nothing else changes:
 * the daemon under test is the real binary. Test-only; never installed. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

static int fault_errno(void)
{
    const char *e = getenv("BD_FAULT_ERRNO");
    if (e && strcmp(e, "EROFS") == 0)
        return EROFS;
    if (e && strcmp(e, "ENOSPC") == 0)
        return ENOSPC;
    return EIO;
}

/* Should an operation on fd fail now? */
static int faulty(int fd)
{
    const char *trigger = getenv("BD_FAULT_TRIGGER"), *dir = getenv("BD_FAULT_DIR");
    struct stat sb;
    char link[64], path[PATH_MAX];
    if (!trigger || !dir || stat(trigger, &sb) != 0)
        return 0;
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0)
        return 0;
    path[n] = '\0';
    return strncmp(path, dir, strlen(dir)) == 0;
}

typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);
typedef ssize_t (*pwrite64_fn)(int, const void *, size_t, off64_t);
typedef int (*sync_fn)(int);

/* The next definition of name (libc's), looked up once. */
static void *next(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

#define FAIL_IF_FAULTY(fd)                                                                                     \
    do {                                                                                                       \
        if (faulty(fd)) {                                                                                      \
            errno = fault_errno();                                                                             \
            return -1;                                                                                         \
        }                                                                                                      \
    } while (0)

ssize_t write(int fd, const void *buf, size_t n)
{
    static write_fn real;
    if (!real)
        real = (write_fn)next("write");
    FAIL_IF_FAULTY(fd);
    return real(fd, buf, n);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    static pwrite_fn real;
    if (!real)
        real = (pwrite_fn)next("pwrite");
    FAIL_IF_FAULTY(fd);
    return real(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off)
{
    static pwrite64_fn real;
    if (!real)
        real = (pwrite64_fn)next("pwrite64");
    FAIL_IF_FAULTY(fd);
    return real(fd, buf, n, off);
}

int fsync(int fd)
{
    static sync_fn real;
    if (!real)
        real = (sync_fn)next("fsync");
    FAIL_IF_FAULTY(fd);
    return real(fd);
}

int fdatasync(int fd)
{
    static sync_fn real;
    if (!real)
        real = (sync_fn)next("fdatasync");
    FAIL_IF_FAULTY(fd);
    return real(fd);
}
