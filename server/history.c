/* history.c: best-value history and its thinning (see history.h). Memory:
 * the resource prefix sums of the n trials (8 bytes each) and the
 * improvements of the best value (grown as they come: few in practice). */
#include "history.h"

#include <math.h>
#include <stdlib.h>

#include "common.h"

size_t bd_history_thin(size_t n, size_t max, size_t *keep)
{
    if (n <= max) {
        for (size_t i = 0; i < n; i++)
            keep[i] = i;
        return n;
    }
    /* n > max >= 2: the step (n-1)/(max-1) exceeds 1, so rounded picks stay distinct. */
    for (size_t i = 0; i < max; i++)
        keep[i] = (size_t)((i * (double)(n - 1)) / (double)(max - 1) + 0.5);
    keep[max - 1] = n - 1;
    return max;
}

static int by_created(const void *a, const void *b)
{
    const bd_history_trial *x = a, *y = b;
    if (x->created_at != y->created_at)
        return x->created_at < y->created_at ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

static int by_finished(const void *a, const void *b)
{
    const bd_history_trial *x = a, *y = b;
    if (x->finished_at != y->finished_at)
        return x->finished_at < y->finished_at ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* Resource spent by trials created at or before at: created[] sorted by
 * created_at, cum[i] the sum of the first i+1. */
static double spent_by(const bd_history_trial *created, const double *cum, size_t n, double at)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (created[mid].created_at <= at)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? cum[lo - 1] : 0;
}

size_t bd_history_build(bd_history_trial *t, size_t n, int maximize, size_t max_points, bd_history_point *out)
{
    size_t n_best = 0, cap_best = 16, n_out = 0;
    bd_history_point *best = bd_xmalloc(cap_best * sizeof *best);
    size_t *keep = bd_xmalloc((max_points ? max_points : 1) * sizeof *keep);
    double *cum = bd_xmalloc((n ? n : 1) * sizeof *cum);

    if (n == 0) /* qsort must not see t == NULL */
        goto out;
    qsort(t, n, sizeof *t, by_finished);
    for (size_t i = 0; i < n; i++) {
        if (!t[i].completed || isnan(t[i].value))
            continue;
        double v = t[i].value;
        if (n_best && !(maximize ? v > best[n_best - 1].value : v < best[n_best - 1].value))
            continue;
        if (n_best == cap_best) {
            cap_best *= 2;
            best = bd_xrealloc(best, cap_best * sizeof *best);
        }
        best[n_best++] = (bd_history_point){t[i].id, t[i].finished_at, v, 0};
    }
    qsort(t, n, sizeof *t, by_created);
    for (size_t i = 0; i < n; i++)
        cum[i] = (i ? cum[i - 1] : 0) + t[i].spent;
    n_out = bd_history_thin(n_best, max_points, keep);
    for (size_t i = 0; i < n_out; i++) {
        out[i] = best[keep[i]];
        out[i].resource = spent_by(t, cum, n, out[i].finished_at);
    }
out:
    free(best);
    free(keep);
    free(cum);
    return n_out;
}
