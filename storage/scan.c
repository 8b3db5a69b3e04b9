/* scan.c: reads in batches, handed to a callback outside the lock (scan.h). */
#include "scan.h"

#include <assert.h>
#include <stdlib.h>

/* Hands the n rows read to call until one fails, and clears every row;
 * returns ret or call's first non-zero value. */
static int deliver(const bd_scan_rows *type, char *rows, int n, int ret, int (*call)(const void *row, void *cb),
                   void *cb)
{
    for (int i = 0; i < n; i++) {
        void *row = rows + (size_t)i * type->size;
        if (!ret)
            ret = call(row, cb);
        type->clear(row);
    }
    return ret;
}

int bd_scan(bd_scan_read_fn read, void *ctx, const bd_scan_rows *type, int batch, int64_t after_id, int64_t limit,
            int (*call)(const void *row, void *cb), void *cb, bd_err *err)
{
    if (limit > 0 && limit < batch)
        batch = (int)limit;
    char *rows = bd_xmalloc((size_t)batch * type->size);
    int64_t seen = 0;
    int ret = 0;
    for (;;) {
        int want = batch, n = 0;
        if (limit > 0 && limit - seen < want)
            want = (int)(limit - seen);
        if (want == 0)
            break;
        ret = read(ctx, after_id, want, rows, &n, &after_id, err);
        ret = deliver(type, rows, n, ret, call, cb);
        seen += n;
        if (ret || n < want)
            break;
    }
    free(rows);
    return ret;
}

int bd_scan_once(bd_scan_read_fn read, void *ctx, const bd_scan_rows *type, int64_t limit,
                 int (*call)(const void *row, void *cb), void *cb, bd_err *err)
{
    assert(limit >= 1 && limit <= INT32_MAX);
    char *rows = bd_xmalloc((size_t)limit * type->size);
    int64_t last_id = 0;
    int n = 0;
    int ret = read(ctx, 0, (int)limit, rows, &n, &last_id, err);
    ret = deliver(type, rows, n, ret, call, cb);
    free(rows);
    return ret;
}
