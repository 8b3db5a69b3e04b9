/* history.c: best-value history and its thinning (see history.h). Memory:
 * the improvements of the best value (grown as they come: few in practice,
 * about log n for values in random order) and one number per point kept. */
#include "history.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
