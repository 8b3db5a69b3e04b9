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
#include "../model/pareto.h"

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
static void rebuild_sorted(bd_rung *r)
{
    size_t n = r->count, k;
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

void bd_rung_rerank(bd_rung *r, double (*value)(const bd_rung_entry *e, void *cls), void *cls)
{
    size_t n = r->count;
    if (!n)
        return;
    for (size_t i = 0; i < n; i++) {
        bd_rung_entry *e = r->all[i];
        double v = value(e, cls);
        e->loss = isnan(v) ? INFINITY : v;
    }
    rebuild_sorted(r);
}

void bd_rung_reorder(bd_rung *r, const size_t *order)
{
    for (size_t i = 0; i < r->count; i++)
        r->all[order[i]]->loss = (double)i;
    if (r->count)
        rebuild_sorted(r);
}

/* Clarkson's greedy epsilon-net over the finite points of one front (f of
 * them, idx into losses), appended to out best first: the point with the
 * smallest first objective (ties: the smaller next objectives, then the
 * lower id), then again and again the point farthest (Euclidean, each
 * objective scaled by the front's range in it; an objective the front
 * does not spread is left out) from those already taken, ties to the
 * lower id. Points with a non-finite value follow, by id. O(f^2 m). */
static size_t eps_net(const double *losses, size_t m, const int64_t *ids, const size_t *idx, size_t f, size_t *out)
{
    size_t nf = 0, n_out = 0;
    size_t *fin = bd_xmalloc((f ? f : 1) * sizeof *fin);
    double *scale = bd_xmalloc(m * sizeof *scale), *dmin = bd_xmalloc((f ? f : 1) * sizeof *dmin);
    unsigned char *taken = bd_xcalloc(f ? f : 1, 1);
    for (size_t j = 0; j < f; j++) {
        int finite = 1;
        for (size_t o = 0; o < m; o++)
            finite &= isfinite(losses[idx[j] * m + o]) != 0;
        if (finite)
            fin[nf++] = idx[j];
    }
    for (size_t o = 0; o < m; o++) {
        double lo = INFINITY, hi = -INFINITY;
        for (size_t j = 0; j < nf; j++) {
            lo = fmin(lo, losses[fin[j] * m + o]);
            hi = fmax(hi, losses[fin[j] * m + o]);
        }
        scale[o] = nf && hi > lo ? 1.0 / (hi - lo) : 0;
    }
    if (nf) {
        size_t seed = 0;
        for (size_t j = 1; j < nf; j++) {
            const double *a = &losses[fin[j] * m], *b = &losses[fin[seed] * m];
            int cmp = 0;
            for (size_t o = 0; o < m && !cmp; o++)
                cmp = a[o] < b[o] ? -1 : a[o] > b[o] ? 1 : 0;
            if (cmp < 0 || (cmp == 0 && ids[fin[j]] < ids[fin[seed]]))
                seed = j;
        }
        for (size_t j = 0; j < nf; j++)
            dmin[j] = INFINITY;
        for (size_t t = 0, last = seed; t < nf; t++) {
            taken[last] = 1;
            out[n_out++] = fin[last];
            size_t next = nf;
            for (size_t j = 0; j < nf; j++) {
                if (taken[j])
                    continue;
                double d = 0;
                for (size_t o = 0; o < m; o++) {
                    double x = (losses[fin[j] * m + o] - losses[fin[last] * m + o]) * scale[o];
                    d += x * x;
                }
                if (d < dmin[j])
                    dmin[j] = d;
                if (next == nf || dmin[j] > dmin[next] || (dmin[j] == dmin[next] && ids[fin[j]] < ids[fin[next]]))
                    next = j;
            }
            last = next;
        }
    }
    size_t first_tail = n_out;
    for (size_t j = 0; j < f; j++) {
        int finite = 1;
        for (size_t o = 0; o < m; o++)
            finite &= isfinite(losses[idx[j] * m + o]) != 0;
        if (!finite) { /* insertion by id: diverged points are few */
            size_t at = n_out++;
            while (at > first_tail && ids[out[at - 1]] > ids[idx[j]]) {
                out[at] = out[at - 1];
                at--;
            }
            out[at] = idx[j];
        }
    }
    free(fin);
    free(scale);
    free(dmin);
    free(taken);
    return n_out;
}

typedef struct lex_key {
    double f0, f1;
    size_t i;
} lex_key;

static int lex_cmp(const void *a, const void *b)
{
    const lex_key *x = a, *y = b;
    if (x->f0 != y->f0)
        return x->f0 < y->f0 ? -1 : 1;
    if (x->f1 != y->f1)
        return x->f1 < y->f1 ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i ? 1 : 0;
}

/* bd_pareto_rank for m <= 2 (m = 1: a second objective of 0 for all) in
 * O(n log n): the points in lexicographic order, each joins the first
 * front none of whose members dominates it. Every earlier point q has
 * q.f0 <= p.f0, and a front's members so far have decreasing f1, so front
 * k dominates p exactly when its last member has f1 < p.f1, or f1 equal
 * and f0 < p.f0 (equal in both: a duplicate, not dominated); and if front
 * k + 1 dominates p so does front k, so a binary search finds it. Same
 * ranks as bd_pareto_rank (no NaN: the caller made them +INFINITY).
 * Returns the number of fronts. */
static int rank_2d(const double *pts, size_t n, size_t m, int *rank)
{
    lex_key *k = bd_xmalloc((n ? n : 1) * sizeof *k);
    double *lf = bd_xmalloc((n ? 2 * n : 2) * sizeof *lf); /* per front its last member's (f0, f1) */
    int fronts = 0;
    for (size_t i = 0; i < n; i++)
        k[i] = (lex_key){pts[i * m], m > 1 ? pts[i * m + 1] : 0, i};
    qsort(k, n, sizeof *k, lex_cmp);
    for (size_t j = 0; j < n; j++) {
        int lo = 0, hi = fronts; /* first front that does not dominate k[j] */
        while (lo < hi) {
            int mid = lo + (hi - lo) / 2;
            double q0 = lf[2 * mid], q1 = lf[2 * mid + 1];
            if (q1 < k[j].f1 || (q1 == k[j].f1 && q0 < k[j].f0))
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == fronts)
            fronts++;
        lf[2 * lo] = k[j].f0;
        lf[2 * lo + 1] = k[j].f1;
        rank[k[j].i] = lo;
    }
    free(k);
    free(lf);
    return fronts;
}

typedef struct viol_key {
    double v;
    int64_t id;
    size_t i;
} viol_key;

static int viol_cmp(const void *a, const void *b)
{
    const viol_key *x = a, *y = b;
    if (x->v != y->v)
        return x->v < y->v ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id ? 1 : 0;
}

void bd_rung_mo_order(const double *losses, size_t m, const double *violation, const int64_t *ids, size_t n,
                      size_t *order)
{
    size_t nf = 0, ni = 0, n_out = 0;
    size_t *feas = bd_xmalloc((n ? n : 1) * sizeof *feas), *front = bd_xmalloc((n ? n : 1) * sizeof *front);
    viol_key *inf = bd_xmalloc((n ? n : 1) * sizeof *inf);
    for (size_t i = 0; i < n; i++) {
        double v = violation ? violation[i] : 0;
        if (v <= 0)
            feas[nf++] = i;
        else
            inf[ni++] = (viol_key){isnan(v) ? INFINITY : v, ids[i], i};
    }
    double *pts = bd_xmalloc((nf ? nf : 1) * m * sizeof *pts);
    int *rank = bd_xmalloc((nf ? nf : 1) * sizeof *rank);
    for (size_t j = 0; j < nf; j++)
        for (size_t o = 0; o < m; o++) {
            double x = losses[feas[j] * m + o];
            pts[j * m + o] = isnan(x) ? INFINITY : x;
        }
    int fronts = !nf ? 0 : m <= 2 ? rank_2d(pts, nf, m, rank) : bd_pareto_rank(pts, nf, m, rank);
    if (fronts < 0)
        abort(); /* out of memory, as bd_xmalloc */
    int64_t *fid = bd_xmalloc((nf ? nf : 1) * sizeof *fid);
    for (size_t j = 0; j < nf; j++)
        fid[j] = ids[feas[j]];
    for (int r = 0; r < fronts; r++) {
        size_t f = 0;
        for (size_t j = 0; j < nf; j++)
            if (rank[j] == r)
                front[f++] = j;
        /* the net over pts (indices j), then back to the caller's indices */
        size_t got = eps_net(pts, m, fid, front, f, order + n_out);
        assert(got == f);
        for (size_t j = 0; j < got; j++)
            order[n_out + j] = feas[order[n_out + j]];
        n_out += got;
    }
    free(fid);
    qsort(inf, ni, sizeof *inf, viol_cmp);
    for (size_t j = 0; j < ni; j++)
        order[n_out++] = inf[j].i;
    assert(n_out == n);
    free(feas);
    free(front);
    free(inf);
    free(pts);
    free(rank);
}

size_t bd_rung_held_bytes(const bd_rung *r)
{
    return r->count * BD_HEAP_BLOCK(sizeof(bd_rung_entry)) +
           (r->all_cap + r->top.cap + r->rest.cap + r->cand.cap) * sizeof(bd_rung_entry *);
}
