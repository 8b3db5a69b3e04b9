/* history.c: best-value history and its thinning (see history.h). Memory:
 * the improvements of the best value (grown as they come: few in practice,
 * about log n for values in random order) and one number per point kept. */
#include "history.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "model/pareto.h"

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

/* (finished_at, id) of a before b's */
static int earlier(double finished_a, int64_t id_a, double finished_b, int64_t id_b)
{
    return finished_a < finished_b || (finished_a == finished_b && id_a < id_b);
}

static int better(const bd_history_records *r, double a, double b)
{
    return r->maximize ? a > b : a < b;
}

void bd_history_records_add(bd_history_records *r, int64_t trial_id, double finished_at, double value)
{
    /* The records' values improve strictly along their order, so the best
     * of everything earlier than the new point is its predecessor's value,
     * and the records it displaces are a run right after it. */
    size_t lo = 0, hi = r->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (earlier(r->p[mid].finished_at, r->p[mid].trial_id, finished_at, trial_id))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0 && !better(r, value, r->p[lo - 1].value))
        return;
    size_t end = lo;
    while (end < r->n && !better(r, r->p[end].value, value))
        end++;
    if (end == lo) { /* displaces nothing: insert */
        if (r->n == r->cap) {
            r->cap = r->cap ? 2 * r->cap : 16;
            r->p = bd_xrealloc(r->p, r->cap * sizeof *r->p);
        }
        memmove(&r->p[lo + 1], &r->p[lo], (r->n - lo) * sizeof *r->p);
        r->n++;
    } else { /* takes the first displaced one's place */
        memmove(&r->p[lo + 1], &r->p[end], (r->n - end) * sizeof *r->p);
        r->n -= end - lo - 1;
    }
    r->p[lo] = (bd_history_point){trial_id, finished_at, value, 0};
}

void bd_history_records_free(bd_history_records *r)
{
    free(r->p);
    r->p = NULL;
    r->n = r->cap = 0;
}

size_t bd_history_records_thin(const bd_history_records *r, size_t max_points, bd_history_point *out)
{
    size_t *keep = bd_xmalloc((max_points ? max_points : 1) * sizeof *keep);
    size_t n = bd_history_thin(r->n, max_points, keep);
    for (size_t i = 0; i < n; i++)
        out[i] = r->p[keep[i]];
    free(keep);
    return n;
}

void bd_history_charge(const bd_history_point *out, size_t n, double *charge, double created_at, double spent)
{
    /* the first point finished at or after created_at, and every later one */
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (out[mid].finished_at < created_at)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < n)
        charge[lo] += spent;
}

void bd_history_settle(bd_history_point *out, size_t n, const double *charge)
{
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        sum += charge[i];
        out[i].resource = sum;
    }
}

size_t bd_history_build(const bd_history_trial *t, size_t n, int maximize, size_t max_points, bd_history_point *out)
{
    bd_history_records r = {.maximize = maximize};
    for (size_t i = 0; i < n; i++)
        if (t[i].completed && !isnan(t[i].value))
            bd_history_records_add(&r, t[i].id, t[i].finished_at, t[i].value);
    size_t n_out = bd_history_records_thin(&r, max_points, out);
    bd_history_records_free(&r);
    double *charge = bd_xcalloc(n_out ? n_out : 1, sizeof *charge);
    for (size_t i = 0; i < n; i++)
        bd_history_charge(out, n_out, charge, t[i].created_at, t[i].spent);
    bd_history_settle(out, n_out, charge);
    free(charge);
    return n_out;
}

/* ------------------------------------------------------------ several objectives */

void bd_history_front_add(bd_history_front *h, int64_t trial_id, double finished_at, const double *losses)
{
    if (h->n == BD_HISTORY_FRONT_MAX) {
        h->truncated = 1;
        return;
    }
    if (h->n == h->cap) {
        h->cap = h->cap ? 2 * h->cap : 64;
        h->ids = bd_xrealloc(h->ids, h->cap * sizeof *h->ids);
        h->finished = bd_xrealloc(h->finished, h->cap * sizeof *h->finished);
        h->losses = bd_xrealloc(h->losses, h->cap * h->m * sizeof *h->losses);
    }
    h->ids[h->n] = trial_id;
    h->finished[h->n] = finished_at;
    memcpy(&h->losses[h->n * h->m], losses, h->m * sizeof *losses);
    h->n++;
}

void bd_history_front_free(bd_history_front *h)
{
    free(h->ids);
    free(h->finished);
    free(h->losses);
    h->ids = NULL;
    h->finished = h->losses = NULL;
    h->n = h->cap = 0;
}

typedef struct finish_key {
    double finished_at;
    int64_t id;
    size_t index;
} finish_key;

static int by_finish(const void *a, const void *b)
{
    const finish_key *x = a, *y = b;
    if (x->finished_at != y->finished_at)
        return x->finished_at < y->finished_at ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* Work units (about the hypervolume's inner steps) one history may spend
 * on the hypervolumes of its points: the last point's is always computed,
 * earlier ones while the budget lasts (then null). */
#define HV_WORK_BUDGET 2e8

static double hv_work(size_t m, size_t n)
{
    double f = (double)n;
    /* WFG from four objectives: some 4 times the work per objective more
     * (200 points on a simplex: 0.03 s in 6, 0.12 in 7, 0.49 in 8); n^3
     * alone let an 8-objective study of 200 trials spend 15 s a GET */
    return m == 2 ? f * 16 : m == 3 ? f * f : f * f * f * pow(4.0, (double)m - 4);
}

/* Offers record k to the front (member record indices); 1 if it changed.
 * The front holds at most BD_PARETO_HV_MAX_POINTS members, as a study's
 * (study.h BD_STUDY_FRONT_MAX): once full, a record that displaces none is
 * left out and *truncated set, so that a step costs O(m x that) whatever
 * the study's trials report (200,000 mutually non-dominated ones made each
 * pass O(m n^2)). */
static int front_step(const bd_history_front *h, size_t *front, size_t *n, size_t k, int *truncated)
{
    size_t m = h->m, kept = 0;
    const double *p = &h->losses[k * m];
    for (size_t i = 0; i < *n; i++)
        if (bd_pareto_dominates(&h->losses[front[i] * m], p, m))
            return 0;
    for (size_t i = 0; i < *n; i++)
        if (!bd_pareto_dominates(p, &h->losses[front[i] * m], m))
            front[kept++] = front[i];
    int changed = kept != *n;
    *n = kept;
    if (kept == BD_PARETO_HV_MAX_POINTS) {
        *truncated = 1;
        return changed;
    }
    front[(*n)++] = k;
    return 1;
}

static double front_volume(const bd_history_front *h, const size_t *front, size_t n, const double *ref,
                           size_t max_hv_4d, double *buf)
{
    size_t m = h->m;
    if (n > BD_PARETO_HV_MAX_POINTS || (m >= 4 && n > max_hv_4d))
        return NAN;
    for (size_t i = 0; i < n; i++)
        memcpy(&buf[i * m], &h->losses[front[i] * m], m * sizeof *buf);
    double v = bd_pareto_hypervolume(buf, n, m, ref);
    return v < 0 ? NAN : v;
}

size_t bd_history_front_points(bd_history_front *h, const double *ref, size_t max_hv_4d, size_t max_points,
                               bd_history_point *out, double *hv, double *ref_out)
{
    size_t m = h->m, n_front = 0, n_changes = 0;
    size_t *order = bd_xmalloc((h->n ? h->n : 1) * sizeof *order);
    size_t *front = bd_xmalloc((h->n ? h->n : 1) * sizeof *front);
    size_t *changes = bd_xmalloc((h->n ? h->n : 1) * sizeof *changes);
    finish_key *keys = bd_xmalloc((h->n ? h->n : 1) * sizeof *keys);
    for (size_t i = 0; i < h->n; i++)
        keys[i] = (finish_key){h->finished[i], h->ids[i], i};
    if (h->n)
        qsort(keys, h->n, sizeof *keys, by_finish);
    for (size_t i = 0; i < h->n; i++)
        order[i] = keys[i].index;
    free(keys);
    for (size_t i = 0; i < h->n; i++)
        if (front_step(h, front, &n_front, order[i], &h->truncated))
            changes[n_changes++] = i;
    /* the reference: given, else BoTorch's over the final front */
    double *buf = bd_xmalloc((n_front ? n_front : 1) * m * sizeof *buf);
    for (size_t i = 0; i < n_front; i++)
        memcpy(&buf[i * m], &h->losses[front[i] * m], m * sizeof *buf);
    for (size_t j = 0; j < m; j++)
        ref_out[j] = INFINITY;
    if (n_front)
        bd_pareto_reference(buf, n_front, m, ref_out);
    for (size_t j = 0; j < m; j++)
        if (!isnan(ref[j]))
            ref_out[j] = ref[j];
    free(buf);
    size_t *keep = bd_xmalloc((max_points ? max_points : 1) * sizeof *keep);
    size_t n_out = bd_history_thin(n_changes, max_points, keep);
    buf = bd_xmalloc((h->n ? h->n : 1) * m * sizeof *buf);
    n_front = 0;
    double work = 0;
    for (size_t i = 0, c = 0, o = 0; i < h->n && o < n_out; i++) {
        int changed = front_step(h, front, &n_front, order[i], &h->truncated);
        if (!changed)
            continue;
        if (c++ != keep[o])
            continue;
        size_t k = order[i];
        out[o] = (bd_history_point){h->ids[k], h->finished[k], h->losses[k * m], 0};
        work += hv_work(m, n_front);
        hv[o] = o + 1 == n_out || work <= HV_WORK_BUDGET ? front_volume(h, front, n_front, ref_out, max_hv_4d, buf)
                                                          : NAN;
        o++;
    }
    free(buf);
    free(keep);
    free(changes);
    free(front);
    free(order);
    return n_out;
}
