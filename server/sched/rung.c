/* rung.c: ranking and the asynchronous rung index (see rung.h).
 *
 * The top floor(count/eta) results live in a max-heap ("top", worst at the
 * root) and the others in a min-heap ("rest"), as in a running-median
 * structure: each add moves at most one entry across, because the target
 * size grows by at most one per add. Whenever an unpromoted entry enters top
 * it is pushed on the min-heap "cand"; entries that left top or were promoted
 * stay in cand until they reach its root, where settle() drops them. Each add
 * pushes at most two cand entries, so all work is O(log n) amortized. */
#include "rung.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../common.h"

int bd_rank_before(double loss_a, int64_t id_a, double loss_b, int64_t id_b)
{
    double a = isnan(loss_a) ? INFINITY : loss_a;
    double b = isnan(loss_b) ? INFINITY : loss_b;
    if (a != b)
        return a < b;
    return id_a < id_b;
}

double bd_budget_round(double x, double r_min, double r_max, int integer)
{
    double lo = r_min, hi = r_max;
    if (integer) {
        /* Absorb floating error just below a whole number (80.9999999 is
         * 81), by at most half a unit: a relative tolerance grew past one
         * unit from 1e9 on and put budgets above resource.max. The bounds
         * of an integer resource are whole numbers (study_def.c). */
        x = floor(x + fmin(0.5, 1e-9 * fmax(1.0, fabs(x))));
        lo = ceil(r_min);
        hi = floor(r_max);
    }
    if (x > hi)
        x = hi;
    if (x < lo)
        x = lo;
    return x;
}

int bd_budget_levels(double r_min, double r_max, unsigned eta, int cap)
{
    int s = 0;
    if (r_min == floor(r_min) && r_max == floor(r_max) && r_max < 9e15) {
        uint64_t p = (uint64_t)r_min, hi = (uint64_t)r_max;
        while (s < cap && p <= hi / eta && p * eta <= hi) {
            p *= eta;
            s++;
        }
        return s;
    }
    double p = r_min;
    while (s < cap && p * eta <= r_max * (1 + 1e-9)) {
        p *= eta;
        s++;
    }
    return s;
}

double bd_pow(unsigned eta, int k)
{
    double p = 1;
    while (k-- > 0)
        p *= eta;
    return p;
}

static int before(const bd_rung_entry *a, const bd_rung_entry *b)
{
    return bd_rank_before(a->loss, a->config_id, b->loss, b->config_id);
}

/* Should a sit above b? max-heaps keep the worst-ranked entry at the root. */
static int above(int max, const bd_rung_entry *a, const bd_rung_entry *b)
{
    return max ? before(b, a) : before(a, b);
}

static void heap_reserve(bd_rung_heap *h, size_t n)
{
    if (h->cap >= n)
        return;
    while (h->cap < n)
        h->cap = h->cap ? 2 * h->cap : 16;
    h->v = bd_xrealloc(h->v, h->cap * sizeof *h->v);
}

static void heap_push(bd_rung_heap *h, int max, bd_rung_entry *e)
{
    heap_reserve(h, h->n + 1);
    size_t i = h->n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!above(max, e, h->v[p]))
            break;
        h->v[i] = h->v[p];
        i = p;
    }
    h->v[i] = e;
}

static bd_rung_entry *heap_pop(bd_rung_heap *h, int max)
{
    bd_rung_entry *root = h->v[0];
    bd_rung_entry *last = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && above(max, h->v[c + 1], h->v[c]))
            c++;
        if (!above(max, h->v[c], last))
            break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n)
        h->v[i] = last;
    return root;
}

static void settle(bd_rung *r)
{
    while (r->cand.n && (r->cand.v[0]->promoted || !r->cand.v[0]->in_top))
        heap_pop(&r->cand, 0);
}

static void enter_top(bd_rung *r, bd_rung_entry *e)
{
    e->in_top = 1;
    heap_push(&r->top, 1, e);
    if (!e->promoted)
        heap_push(&r->cand, 0, e);
}

/* Moves entries between top and rest until |top| is the kept share of
 * count. An add changes the target by at most one; bd_rung_set_keep may
 * change it by many, each move O(log n). */
static size_t top_size(const bd_rung *r)
{
    /* keep 0 is the paper's floor(count/eta), in integers, bit for bit */
    size_t k = r->keep > 0 ? (size_t)floor((double)r->count * r->keep + 1e-9) : r->count / r->eta;
    return k > r->count ? r->count : k;
}

static void rebalance(bd_rung *r)
{
    size_t k = top_size(r);
    while (r->top.n > k) {
        bd_rung_entry *out = heap_pop(&r->top, 1);
        out->in_top = 0;
        heap_push(&r->rest, 0, out);
    }
    while (r->top.n < k && r->rest.n)
        enter_top(r, heap_pop(&r->rest, 0));
    settle(r);
}

void bd_rung_init(bd_rung *r, unsigned eta)
{
    *r = (bd_rung){.eta = eta};
}

void bd_rung_free(bd_rung *r)
{
    for (size_t i = 0; i < r->count; i++)
        free(r->all[i]);
    free(r->all);
    free(r->top.v);
    free(r->rest.v);
    free(r->cand.v);
    bd_rung_init(r, r->eta);
}

bd_rung_entry *bd_rung_add(bd_rung *r, int64_t config_id, int64_t trial_id, double loss)
{
    bd_rung_entry *e = bd_xcalloc(1, sizeof *e);
    e->config_id = config_id;
    e->trial_id = trial_id;
    e->loss = isnan(loss) ? INFINITY : loss;
    if (r->count == r->all_cap) {
        r->all_cap = r->all_cap ? 2 * r->all_cap : 16;
        r->all = bd_xrealloc(r->all, r->all_cap * sizeof *r->all);
    }
    r->all[r->count++] = e;
    if (!r->best || before(e, r->best))
        r->best = e;

    if (r->top.n && before(e, r->top.v[0]))
        enter_top(r, e);
    else
        heap_push(&r->rest, 0, e);
    rebalance(r);
    return e;
}

void bd_rung_set_keep(bd_rung *r, double keep)
{
    assert(keep == 0 || (keep >= 1.0 / r->eta - 1e-12 && keep <= 1));
    r->keep = keep;
    rebalance(r);
}

const bd_rung_entry *bd_rung_candidate(const bd_rung *r)
{
    return r->cand.n ? r->cand.v[0] : NULL;
}

void bd_rung_promote(bd_rung *r, bd_rung_entry *e)
{
    if (e->promoted)
        return;
    e->promoted = 1;
    r->n_promoted++;
    settle(r);
}

static int rank_cmp(const void *a, const void *b)
{
    const bd_rung_entry *x = *(bd_rung_entry *const *)a, *y = *(bd_rung_entry *const *)b;
    return before(x, y) ? -1 : before(y, x) ? 1 : 0;
}

/* One sort instead of a heap push and pop per entry (a fifth of a large
 * ASHA study's replay went to those): an array sorted best first is a
 * min-heap, so the unpromoted among its first k entries, in order, are the
 * candidates' heap, the entries after them the rest's, and those k
 * reversed the top's max-heap. Every root is
 * the same entry as the pushes would give (ranks have no ties), so the
 * decisions are the same. */
void bd_rung_rerank(bd_rung *r, double (*value)(const bd_rung_entry *e, void *cls), void *cls)
{
    size_t n = r->count, k;
    if (!n)
        return;
    for (size_t i = 0; i < n; i++) {
        bd_rung_entry *e = r->all[i];
        double v = value(e, cls);
        e->loss = isnan(v) ? INFINITY : v;
    }
    heap_reserve(&r->rest, n);
    memcpy(r->rest.v, r->all, n * sizeof *r->all);
    qsort(r->rest.v, n, sizeof *r->rest.v, rank_cmp);
    r->best = r->rest.v[0];
    k = top_size(r);
    heap_reserve(&r->top, k);
    heap_reserve(&r->cand, k);
    r->top.n = r->cand.n = 0;
    for (size_t i = 0; i < n; i++) {
        bd_rung_entry *e = r->rest.v[i];
        e->in_top = i < k;
        if (i < k) {
            r->top.v[k - 1 - i] = e;
            if (!e->promoted)
                r->cand.v[r->cand.n++] = e;
        }
    }
    r->top.n = k;
    memmove(r->rest.v, r->rest.v + k, (n - k) * sizeof *r->rest.v);
    r->rest.n = n - k;
}

size_t bd_rung_held_bytes(const bd_rung *r)
{
    return r->count * BD_HEAP_BLOCK(sizeof(bd_rung_entry)) +
           (r->all_cap + r->top.cap + r->rest.cap + r->cand.cap) * sizeof(bd_rung_entry *);
}
