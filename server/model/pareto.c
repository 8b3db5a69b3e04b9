/* pareto.c: dominance, non-dominated sorting, crowding distance and
 * hypervolume (pareto.h).
 *
 * Rules, each as its reference does it:
 * - dominance and non-dominated rank: Deb, Pratap, Agarwal, Meyarivan,
 *   IEEE TEC 2002, section III-A (fast non-dominated sort); equal points
 *   do not dominate each other, so duplicates share a rank;
 * - crowding: Optuna 3.1's nsgaii._calc_crowding_distance (the population
 *   stable-sorted by each objective in turn, a gap divided by the range of
 *   the finite values, the first and last of each sort +INFINITY, an
 *   objective with one value skipped, inf - inf counted as 0);
 * - hypervolume: exact. m = 2 a sweep in x (O(n log n)); m = 3 a sweep in z
 *   over an incrementally kept 2-D front (O(n^2)); m >= 4 WFG (While,
 *   Bradstreet, Barone, IEEE TEC 2012) with the points sorted worst first
 *   in the last objective, so each limit set has one objective fewer and
 *   the recursion ends in the 3-D sweep. Points not strictly below the
 *   reference in every objective are dropped first (they bound nothing).
 *
 * Memory comes from malloc and a failure is reported (-1), as pareto.h
 * promises: a huge front must not abort the daemon. */
#include "pareto.h"

#include <assert.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int bd_pareto_dominates(const double *a, const double *b, size_t m)
{
    int better = 0;
    for (size_t j = 0; j < m; j++) {
        if (a[j] > b[j])
            return 0;
        if (a[j] < b[j])
            better = 1;
    }
    return better;
}

int bd_pareto_rank(const double *points, size_t n, size_t m, int *rank)
{
    if (n == 0)
        return 0;
    /* dom: bit (i, j) set when i dominates j; count[j]: how many dominate j */
    size_t words = (n + 63) / 64;
    if (n > SIZE_MAX / 8 / words)
        return -1;
    uint64_t *dom = calloc(n * words, sizeof *dom);
    size_t *count = calloc(n, sizeof *count);
    size_t *cur = malloc(n * sizeof *cur), *next = malloc(n * sizeof *next);
    int fronts = -1;
    if (!dom || !count || !cur || !next)
        goto out;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++) {
            const double *a = points + i * m, *b = points + j * m;
            if (bd_pareto_dominates(a, b, m)) {
                dom[i * words + j / 64] |= UINT64_C(1) << (j % 64);
                count[j]++;
            } else if (bd_pareto_dominates(b, a, m)) {
                dom[j * words + i / 64] |= UINT64_C(1) << (i % 64);
                count[i]++;
            }
        }
    size_t n_cur = 0, done = 0;
    for (size_t i = 0; i < n; i++)
        if (count[i] == 0)
            cur[n_cur++] = i;
    fronts = 0;
    while (n_cur > 0) {
        size_t n_next = 0;
        for (size_t c = 0; c < n_cur; c++) {
            size_t i = cur[c];
            rank[i] = fronts;
            done++;
            for (size_t w = 0; w < words; w++)
                for (uint64_t bits = dom[i * words + w]; bits; bits &= bits - 1) {
                    size_t j = w * 64 + (size_t)__builtin_ctzll(bits);
                    if (--count[j] == 0)
                        next[n_next++] = j;
                }
        }
        fronts++;
        size_t *t = cur;
        cur = next;
        next = t;
        n_cur = n_next;
    }
    assert(done == n); /* dominance is acyclic */
out:
    free(dom);
    free(count);
    free(cur);
    free(next);
    return fronts;
}

int bd_pareto_crowding(const double *points, size_t m, const size_t *idx, size_t k, double *dist)
{
    if (k == 0)
        return 0;
    /* order: positions 0..k-1 into idx, re-sorted (stably) by each objective
     * in turn, as Optuna sorts its population list in place */
    size_t *order = malloc(k * sizeof *order), *tmp = malloc(k * sizeof *tmp);
    if (!order || !tmp) {
        free(order);
        free(tmp);
        return -1;
    }
    for (size_t p = 0; p < k; p++) {
        order[p] = p;
        dist[p] = 0;
    }
    for (size_t j = 0; j < m; j++) {
        /* stable merge sort of the positions by this objective */
        for (size_t width = 1; width < k; width *= 2) {
            for (size_t lo = 0; lo < k; lo += 2 * width) {
                size_t mid = lo + width < k ? lo + width : k, hi = lo + 2 * width < k ? lo + 2 * width : k;
                size_t a = lo, b = mid, o = lo;
                while (a < mid && b < hi)
                    tmp[o++] = points[idx[order[b]] * m + j] < points[idx[order[a]] * m + j] ? order[b++]
                                                                                             : order[a++];
                while (a < mid)
                    tmp[o++] = order[a++];
                while (b < hi)
                    tmp[o++] = order[b++];
            }
            memcpy(order, tmp, k * sizeof *order);
        }
#define V(p) points[idx[order[p]] * m + j]
        if (V(0) == V(k - 1))
            continue; /* one value: this objective tells nothing */
        double v_min = V(0), v_max = -INFINITY;
        if (v_min == -INFINITY) /* the smallest value that is not -inf */
            for (size_t p = 0; p < k; p++)
                if (V(p) != -INFINITY) {
                    v_min = V(p);
                    break;
                }
        for (size_t p = k; p-- > 0;)
            if (V(p) != INFINITY) {
                v_max = V(p);
                break;
            }
        double width = v_max - v_min;
        if (!(width > 0)) /* 0, -inf or NaN (no finite value) */
            width = 1.0;
        for (size_t p = 0; p < k; p++) {
            double below = p == 0 ? -INFINITY : V(p - 1), above = p == k - 1 ? INFINITY : V(p + 1);
            double gap = below == above ? 0.0 : above - below;
            dist[order[p]] += gap / width;
        }
#undef V
    }
    free(order);
    free(tmp);
    return 0;
}

/* ---- hypervolume ---- */

static int cmp_x_then_y(const void *pa, const void *pb)
{
    const double *a = pa, *b = pb;
    if (a[0] != b[0])
        return a[0] < b[0] ? -1 : 1;
    return a[1] < b[1] ? -1 : a[1] > b[1];
}

/* m = 2: pts (n rows of 2, every point below ref) sorted by x, then the
 * staircase's area. Sorts pts in place. */
static double hv2(double *pts, size_t n, const double *ref)
{
    qsort(pts, n, 2 * sizeof *pts, cmp_x_then_y);
    double area = 0, y_top = ref[1];
    for (size_t i = 0; i < n; i++) {
        const double *p = pts + 2 * i;
        if (p[1] < y_top) {
            area += (ref[0] - p[0]) * (y_top - p[1]);
            y_top = p[1];
        }
    }
    return area;
}

/* A row and its sort key (no global state: studies run on several threads). */
typedef struct {
    double key;
    size_t row;
} keyed;
static int cmp_keyed(const void *pa, const void *pb)
{
    const keyed *a = pa, *b = pb;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    return a->row < b->row ? -1 : a->row > b->row; /* a total order: qsort is not stable */
}

/* m = 3: rows of stride doubles (the first three used), every point below
 * ref. Sweeps z upwards keeping the 2-D front of the points seen so far
 * sorted by x (y then strictly decreasing); between two z values the slab
 * holds that front's area. O(n^2). -1 when memory runs out. */
static double hv3(const double *pts, size_t n, size_t stride, const double *ref)
{
    keyed *by_z = malloc(n * sizeof *by_z);
    double *fx = malloc(n * sizeof *fx), *fy = malloc(n * sizeof *fy);
    double vol = -1;
    if (!by_z || !fx || !fy)
        goto out;
    for (size_t i = 0; i < n; i++)
        by_z[i] = (keyed){pts[i * stride + 2], i};
    qsort(by_z, n, sizeof *by_z, cmp_keyed);
    size_t k = 0; /* front size */
    vol = 0;
    for (size_t i = 0; i < n; i++) {
        const double *row = pts + by_z[i].row * stride;
        double x = row[0], y = row[1];
        /* first front point with fx >= x */
        size_t lo = 0, hi = k;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (fx[mid] < x)
                lo = mid + 1;
            else
                hi = mid;
        }
        /* weakly dominated by the point before (fx <= x, fy <= y) or an equal x with fy <= y */
        int dominated = (lo > 0 && fy[lo - 1] <= y) || (lo < k && fx[lo] == x && fy[lo] <= y);
        if (!dominated) {
            size_t end = lo; /* drop the points (x' >= x, y' >= y) it dominates: a run from lo */
            while (end < k && fy[end] >= y)
                end++;
            size_t removed = end - lo;
            if (removed == 0) {
                memmove(fx + lo + 1, fx + lo, (k - lo) * sizeof *fx);
                memmove(fy + lo + 1, fy + lo, (k - lo) * sizeof *fy);
                k++;
            } else if (removed > 1) {
                memmove(fx + lo + 1, fx + end, (k - end) * sizeof *fx);
                memmove(fy + lo + 1, fy + end, (k - end) * sizeof *fy);
                k -= removed - 1;
            }
            fx[lo] = x;
            fy[lo] = y;
        }
        double z_next = i + 1 < n ? by_z[i + 1].key : ref[2];
        double dz = z_next - by_z[i].key;
        if (dz > 0) {
            double area = 0, y_top = ref[1];
            for (size_t f = 0; f < k; f++) {
                area += (ref[0] - fx[f]) * (y_top - fy[f]);
                y_top = fy[f];
            }
            vol += area * dz;
        }
    }
out:
    free(by_z);
    free(fx);
    free(fy);
    return vol;
}

/* Keeps the rows of pts (n rows of m) that no other row weakly dominates
 * (one of equal rows), compacting in place; returns how many. O(m n^2). */
static size_t keep_nondominated(double *pts, size_t n, size_t m)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const double *p = pts + i * m;
        int out = 0;
        for (size_t j = 0; j < n && !out; j++) {
            if (j == i)
                continue;
            const double *q = pts + j * m;
            int le = 1, eq = 1;
            for (size_t d = 0; d < m && le; d++) {
                if (q[d] > p[d])
                    le = 0;
                else if (q[d] < p[d])
                    eq = 0;
            }
            out = le && (!eq || j < i); /* dominated, or equal to an earlier row */
        }
        if (!out) {
            if (k != i)
                memmove(pts + k * m, p, m * sizeof *pts);
            k++;
        }
    }
    return k;
}

static double hv_rec(double *pts, size_t n, size_t m, const double *ref);

/* m >= 4, WFG: the rows sorted worst first in the last objective; each
 * point's exclusive share is its box minus the volume of the later (better
 * in the last objective) points limited to it, whose last objective is then
 * the point's own, so the limit set is (m-1)-dimensional. */
static double hv_wfg(double *pts, size_t n, size_t m, const double *ref)
{
    keyed *order = malloc(n * sizeof *order);
    double *sorted = malloc(n * m * sizeof *sorted), *limit = malloc(n * (m - 1) * sizeof *limit);
    double vol = -1;
    if (!order || !sorted || !limit)
        goto out;
    for (size_t i = 0; i < n; i++)
        order[i] = (keyed){pts[i * m + m - 1], i};
    qsort(order, n, sizeof *order, cmp_keyed);
    for (size_t i = 0; i < n; i++) /* worst (largest) last objective first */
        memcpy(sorted + i * m, pts + order[n - 1 - i].row * m, m * sizeof *sorted);
    vol = 0;
    for (size_t i = 0; i < n; i++) {
        const double *p = sorted + i * m;
        double box = 1;
        for (size_t d = 0; d + 1 < m; d++)
            box *= ref[d] - p[d];
        size_t k = 0;
        for (size_t j = i + 1; j < n; j++, k++)
            for (size_t d = 0; d + 1 < m; d++)
                limit[k * (m - 1) + d] = fmax(sorted[j * m + d], p[d]);
        double inner = 0;
        if (k > 0) {
            k = keep_nondominated(limit, k, m - 1);
            inner = hv_rec(limit, k, m - 1, ref);
            if (inner < 0) {
                vol = -1;
                goto out;
            }
        }
        vol += (ref[m - 1] - p[m - 1]) * (box - inner);
    }
out:
    free(order);
    free(sorted);
    free(limit);
    return vol;
}

/* pts: n rows of m, every point below ref (may be reordered). */
static double hv_rec(double *pts, size_t n, size_t m, const double *ref)
{
    if (n == 0)
        return 0;
    if (m == 1) {
        double best = pts[0];
        for (size_t i = 1; i < n; i++)
            best = fmin(best, pts[i]);
        return ref[0] - best;
    }
    if (m == 2)
        return hv2(pts, n, ref);
    if (m == 3)
        return hv3(pts, n, 3, ref);
    return hv_wfg(pts, n, m, ref);
}

double bd_pareto_hypervolume(const double *points, size_t n, size_t m, const double *ref)
{
    assert(m >= 1);
    if (n > BD_PARETO_HV_MAX_POINTS)
        return -1;
    if (n == 0)
        return 0;
    double *pts = malloc(n * m * sizeof *pts);
    if (!pts)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const double *p = points + i * m;
        int inside = 1;
        for (size_t d = 0; d < m && inside; d++)
            inside = p[d] < ref[d]; /* false for NaN too */
        if (inside)
            memcpy(pts + (k++) * m, p, m * sizeof *pts);
    }
    double vol = hv_rec(pts, k, m, ref);
    free(pts);
    return vol;
}

void bd_pareto_reference(const double *points, size_t n, size_t m, double *ref)
{
    assert(n >= 1);
    for (size_t d = 0; d < m; d++) {
        double lo = INFINITY, hi = -INFINITY; /* ideal, nadir over the finite values */
        for (size_t i = 0; i < n; i++) {
            double v = points[i * m + d];
            if (!isfinite(v))
                continue;
            lo = fmin(lo, v);
            hi = fmax(hi, v);
        }
        if (hi == -INFINITY) { /* no finite value: nothing bounds a volume */
            ref[d] = INFINITY;
            continue;
        }
        double range = hi - lo;
        if (range == 0)
            range = hi != 0 ? fabs(hi) : 1.0;
        ref[d] = hi + 0.1 * range;
    }
}
