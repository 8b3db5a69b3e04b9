/* gp_train.c: which observations the GP is trained on, and when its
 * hyperparameters are refitted, so that the cost of a suggestion stays
 * bounded however large a study grows.
 *
 * The rule (bd_gp_select): at most `cap` points, the n_best lowest losses
 * plus the most recent others. The best points pin the model down where the
 * acquisition concentrates; the recent ones follow where the search is now.
 * With a cap m every prediction costs O(m^2), whatever the number of
 * observations n. Between two selections only a few points change (the newest
 * enters, the oldest recent one or a dethroned best leaves), and bd_gp_sync
 * applies exactly those changes with O(m^2) rank-one steps.
 *
 * Refits (bd_gp_refit_due): each time the study has grown by max(10, n/5)
 * observations since the last fit, so a study of n observations pays for
 * O(log n) fits of O(m^3) each, and none at most suggestions.
 *
 * Invariants: the selection is a pure function of (n, y, cap, n_best);
 * sync leaves the model holding exactly the listed observations.
 * Cost: select O(n log n); sync O(c m^2) for c changes, or O(m^3). */
#include "gp_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct ranked {
    double y;
    size_t i;
} ranked;

static int by_y_then_index(const void *a, const void *b)
{
    const ranked *p = a, *q = b;
    if (p->y != q->y)
        return p->y < q->y ? -1 : 1;
    return (p->i > q->i) - (p->i < q->i);
}

static int by_size(const void *a, const void *b)
{
    size_t p = *(const size_t *)a, q = *(const size_t *)b;
    return (p > q) - (p < q);
}

size_t bd_gp_select(size_t n, const double *y, size_t cap, size_t n_best, size_t *idx)
{
    unsigned char *taken;
    ranked *r;
    size_t nr = 0, m = 0;
    if (n <= cap) {
        for (size_t i = 0; i < n; i++)
            idx[i] = i;
        return n;
    }
    if (n_best > cap)
        n_best = cap;
    taken = bd_xcalloc(n, 1);
    r = bd_xmalloc(n * sizeof *r);
    for (size_t i = 0; i < n; i++)
        if (isfinite(y[i]))
            r[nr++] = (ranked){y[i], i};
    qsort(r, nr, sizeof *r, by_y_then_index);
    for (size_t k = 0; k < nr && m < n_best; k++) {
        taken[r[k].i] = 1;
        idx[m++] = r[k].i;
    }
    for (size_t i = n; i-- > 0 && m < cap;)
        if (!taken[i]) {
            taken[i] = 1;
            idx[m++] = i;
        }
    qsort(idx, m, sizeof *idx, by_size);
    free(r);
    free(taken);
    return m;
}

/* (id, position) pairs sorted by id, for binary search. */
typedef struct idpos {
    size_t id, pos;
} idpos;

static int by_id(const void *a, const void *b)
{
    const idpos *p = a, *q = b;
    return (p->id > q->id) - (p->id < q->id);
}

static const idpos *lookup(const idpos *v, size_t n, size_t id)
{
    idpos key = {id, 0};
    return bsearch(&key, v, n, sizeof *v, by_id);
}

int bd_gp_sync(bd_gp *gp, const double *X, const double *y, const size_t *idx, size_t m, bd_err *err)
{
    size_t d = gp->d, held = gp->m, n_remove = 0, n_add = 0;
    idpos *want = bd_xmalloc((m ? m : 1) * sizeof *want);
    idpos *have = bd_xmalloc((held ? held : 1) * sizeof *have);
    unsigned char *keep = bd_xcalloc(held ? held : 1, 1);
    double *Xs = NULL, *ys = NULL;
    int rc = 0;

    for (size_t k = 0; k < m; k++)
        want[k] = (idpos){idx[k], k};
    qsort(want, m, sizeof *want, by_id);
    for (size_t k = 1; k < m; k++)
        if (want[k].id == want[k - 1].id) {
            rc = bd_err_set(err, BD_EINVAL, NULL, "observation %zu listed twice", want[k].id);
            goto out;
        }
    for (size_t i = 0; i < held; i++) {
        const idpos *w = lookup(want, m, gp->ids[i]);
        size_t id = gp->ids[i];
        keep[i] = w && gp->y[i] == y[id] && memcmp(gp->X + i * d, X + id * d, d * sizeof *X) == 0;
        n_remove += !keep[i];
        have[i] = (idpos){id, i};
    }
    qsort(have, held, sizeof *have, by_id);
    for (size_t k = 0; k < m; k++) {
        const idpos *h = lookup(have, held, idx[k]);
        n_add += !(h && keep[h->pos]);
    }

    if (4 * (n_remove + n_add) > m) { /* cheaper from scratch */
        Xs = bd_xmalloc((m ? m * d : 1) * sizeof *Xs);
        ys = bd_xmalloc((m ? m : 1) * sizeof *ys);
        for (size_t k = 0; k < m; k++) {
            memcpy(Xs + k * d, X + idx[k] * d, d * sizeof *X);
            ys[k] = y[idx[k]];
        }
        rc = bd_gp_set_data(gp, m, Xs, ys, idx, err);
        goto out;
    }
    for (size_t i = held; i-- > 0;)
        if (!keep[i] && (rc = bd_gp_remove_point(gp, i, err)))
            goto out;
    for (size_t k = 0; k < m; k++) {
        const idpos *h = lookup(have, held, idx[k]);
        if (h && keep[h->pos])
            continue;
        if ((rc = bd_gp_add_point(gp, X + idx[k] * d, y[idx[k]], idx[k], err)))
            goto out;
    }
out:
    free(want);
    free(have);
    free(keep);
    free(Xs);
    free(ys);
    return rc;
}

int bd_gp_refit_due(size_t n_fit, size_t n_now)
{
    size_t step = n_fit / 5 > 10 ? n_fit / 5 : 10;
    if (n_fit == 0)
        return n_now > 0;
    return n_now < n_fit || n_now >= n_fit + step;
}
