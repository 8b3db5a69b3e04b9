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
 * decisions are the same. rest.v holds the count entries best first. */
static void rebuild_ranked(bd_rung *r)
{
    size_t n = r->count, k;
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

static void rebuild_sorted(bd_rung *r)
{
    size_t n = r->count;
    heap_reserve(&r->rest, n);
    memcpy(r->rest.v, r->all, n * sizeof *r->all);
    qsort(r->rest.v, n, sizeof *r->rest.v, rank_cmp);
    rebuild_ranked(r);
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

/* The order is the ranking: no sort (the losses it sets are distinct). */
void bd_rung_reorder(bd_rung *r, const size_t *order)
{
    if (!r->count)
        return;
    heap_reserve(&r->rest, r->count);
    for (size_t i = 0; i < r->count; i++) {
        r->all[order[i]]->loss = (double)i;
        r->rest.v[i] = r->all[order[i]];
    }
    rebuild_ranked(r);
}

/* A front's finite members beyond which the epsilon-net (O(m f p) for
 * its first p) gives way to the bisection order of front_order. */
#define NET_CAP 1000

/* Clarkson's greedy epsilon-net over the nf finite points fin (indices
 * into losses; ids per index), its first `limit` picks appended to out
 * best first: the point with the smallest first objective (ties: the
 * smaller next objectives, then the lower id), then again and again the
 * point farthest (Euclidean, each objective scaled by the front's range in
 * it; an objective the front does not spread is left out) from those
 * already taken, ties to the lower id. The greedy order does not look
 * ahead, so its first p picks are the same whatever the limit. The
 * members not picked follow in fin's order. O(m nf p) for p picks. */
static size_t eps_net(const double *losses, size_t m, const int64_t *ids, const size_t *fin, size_t nf, size_t limit,
                      size_t *out)
{
    size_t n_out = 0;
    double *scale = bd_xmalloc(m * sizeof *scale), *dmin = bd_xmalloc((nf ? nf : 1) * sizeof *dmin);
    unsigned char *taken = bd_xcalloc(nf ? nf : 1, 1);
    for (size_t o = 0; o < m; o++) {
        double lo = INFINITY, hi = -INFINITY;
        for (size_t j = 0; j < nf; j++) {
            lo = fmin(lo, losses[fin[j] * m + o]);
            hi = fmax(hi, losses[fin[j] * m + o]);
        }
        scale[o] = nf && hi > lo ? 1.0 / (hi - lo) : 0;
    }
    if (nf && limit) {
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
        for (size_t t = 0, last = seed; t < nf && t < limit; t++) {
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
    for (size_t j = 0; j < nf; j++)
        if (!taken[j])
            out[n_out++] = fin[j];
    free(scale);
    free(dmin);
    free(taken);
    return n_out;
}

typedef struct id_key {
    int64_t id;
    size_t i;
} id_key;

static int id_cmp(const void *a, const void *b)
{
    const id_key *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id ? 1 : 0;
}

/* One front, its f members mem (indices into pts) in lexicographic order
 * (ties by id), appended to out best first, exact for the first `limit`:
 * the finite members by the epsilon-net when they are at most NET_CAP,
 * else by bisection of the lexicographic order (the first, the last, the
 * middle, the quarter points, ...: evenly spread along the front, O(f));
 * then the members with a non-finite value, by id. */
static void front_order(const double *pts, size_t m, const int64_t *ids, const size_t *mem, size_t f, size_t limit,
                        size_t *out)
{
    size_t nf = 0, n_out = 0, ni = 0;
    size_t *fin = bd_xmalloc((f ? f : 1) * sizeof *fin);
    id_key *inf = bd_xmalloc((f ? f : 1) * sizeof *inf);
    for (size_t j = 0; j < f; j++) {
        int finite = 1;
        for (size_t o = 0; o < m; o++)
            finite &= isfinite(pts[mem[j] * m + o]) != 0;
        if (finite)
            fin[nf++] = mem[j];
        else
            inf[ni++] = (id_key){ids[mem[j]], mem[j]};
    }
    if (nf <= NET_CAP) {
        n_out = eps_net(pts, m, ids, fin, nf, limit, out);
    } else {
        size_t p = 1;
        out[n_out++] = fin[0];
        out[n_out++] = fin[nf - 1];
        while (p < nf - 1)
            p *= 2;
        for (size_t s = p / 2; s >= 1; s /= 2) /* j an odd multiple of s: each 0 < j < nf - 1 once */
            for (size_t j = s; j < nf - 1; j += 2 * s)
                out[n_out++] = fin[j];
    }
    assert(n_out == nf);
    qsort(inf, ni, sizeof *inf, id_cmp);
    for (size_t j = 0; j < ni; j++)
        out[n_out++] = inf[j].i;
    free(fin);
    free(inf);
}

typedef struct lex_key {
    const double *p; /* the point's m values */
    size_t m;
    int64_t id;
    size_t i;
} lex_key;

static int lex_cmp(const void *a, const void *b)
{
    const lex_key *x = a, *y = b;
    for (size_t o = 0; o < x->m; o++)
        if (x->p[o] != y->p[o])
            return x->p[o] < y->p[o] ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id ? 1 : x->i < y->i ? -1 : x->i > y->i ? 1 : 0;
}

typedef struct lex2_key {
    double f0, f1;
    int64_t id;
    size_t i;
} lex2_key;

static int lex2_cmp(const void *a, const void *b)
{
    const lex2_key *x = a, *y = b;
    if (x->f0 != y->f0)
        return x->f0 < y->f0 ? -1 : 1;
    if (x->f1 != y->f1)
        return x->f1 < y->f1 ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id ? 1 : x->i < y->i ? -1 : x->i > y->i ? 1 : 0;
}

/* Non-dominated ranks for m <= 2 (m = 1: a second objective of 0 for all)
 * in O(n) after the lexicographic sort lx: each point joins the first
 * front none of whose members dominates it. Every earlier point q has
 * q.f0 <= p.f0, and a front's members so far have decreasing f1, so front
 * k dominates p exactly when its last member has f1 < p.f1, or f1 equal
 * and f0 < p.f0 (equal in both: a duplicate, not dominated); and if front
 * k + 1 dominates p so does front k, so a binary search finds it. Same
 * ranks as bd_pareto_rank (no NaN: the caller made them +INFINITY).
 * Returns the number of fronts. */
static int rank_2d(const double *pts, size_t n, size_t m, const size_t *lx, int *rank)
{
    double *lf = bd_xmalloc((n ? 2 * n : 2) * sizeof *lf); /* per front its last member's (f0, f1) */
    int fronts = 0;
    for (size_t j = 0; j < n; j++) {
        double f0 = pts[lx[j] * m], f1 = m > 1 ? pts[lx[j] * m + 1] : 0;
        int lo = 0, hi = fronts; /* first front that does not dominate the point */
        while (lo < hi) {
            int mid = lo + (hi - lo) / 2;
            double q0 = lf[2 * mid], q1 = lf[2 * mid + 1];
            if (q1 < f1 || (q1 == f1 && q0 < f0))
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == fronts)
            fronts++;
        lf[2 * lo] = f0;
        lf[2 * lo + 1] = f1;
        rank[lx[j]] = lo;
    }
    free(lf);
    return fronts;
}

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y ? 1 : 0;
}

/* Non-dominated ranks for any m by peeling, in O(n) memory, only until
 * the first `need` points are ranked (the others keep rank -1): along the
 * lexicographic order lx, a point is on the current front when no member
 * found so far dominates it (a dominating point comes earlier in that
 * order, and if it is itself dominated, a front member dominates both).
 * O(m n f) per front of f, O(n log n) for m = 3; the ranks are
 * bd_pareto_rank's. Returns the number of fronts ranked. */
static int rank_peel(const double *pts, size_t n, size_t m, const size_t *lx, size_t need, int *rank)
{
    size_t *rem = bd_xmalloc((n ? n : 1) * sizeof *rem), *mem = bd_xmalloc((n ? n : 1) * sizeof *mem);
    size_t nr = n, done = 0;
    int fronts = 0;
    memcpy(rem, lx, n * sizeof *rem);
    for (size_t j = 0; j < n; j++)
        rank[j] = -1;
    /* m = 3: the members so far in a Fenwick tree over the rank of f1
     * holding the least f2 (NaN: none), O(log n) a point: a point that differs from
     * the one before it (duplicates are adjacent in lx) is dominated
     * exactly when a member has f1 and f2 no larger (its f0 is, by the
     * order); a duplicate shares its twin's fate */
    double *f1s = NULL, *tree = NULL;
    size_t *pos = NULL, nd = 0;
    if (m == 3) {
        f1s = bd_xmalloc((n ? n : 1) * sizeof *f1s);
        pos = bd_xmalloc((n ? n : 1) * sizeof *pos);
        for (size_t j = 0; j < n; j++)
            f1s[j] = pts[j * m + 1];
        qsort(f1s, n, sizeof *f1s, dbl_cmp);
        for (size_t j = 0; j < n; j++)
            if (!nd || f1s[j] != f1s[nd - 1])
                f1s[nd++] = f1s[j];
        for (size_t j = 0; j < n; j++) { /* 1-based: the first f1 value at or past this one */
            size_t lo = 0, hi = nd;
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (f1s[mid] < pts[j * m + 1])
                    lo = mid + 1;
                else
                    hi = mid;
            }
            pos[j] = lo + 1;
        }
        tree = bd_xmalloc((nd + 1) * sizeof *tree);
        for (size_t j = 0; j <= nd; j++)
            tree[j] = NAN; /* empty (fmin skips a NaN) */
    }
    while (nr && done < need) {
        size_t f = 0, keep = 0;
        for (size_t j = 0; j < nr; j++) {
            const double *p = &pts[rem[j] * m];
            int dominated = 0;
            if (m == 3 && j && !memcmp(p, &pts[rem[j - 1] * m], 3 * sizeof *p)) {
                dominated = !(f && mem[f - 1] == rem[j - 1]);
            } else if (m == 3) {
                double g = NAN;
                for (size_t x = pos[rem[j]]; x > 0; x -= x & (~x + 1))
                    g = fmin(g, tree[x]);
                dominated = !isnan(g) && g <= p[2];
            } else {
                for (size_t q = 0; q < f && !dominated; q++)
                    dominated = bd_pareto_dominates(&pts[mem[q] * m], p, m);
            }
            if (m == 3 && !dominated)
                for (size_t x = pos[rem[j]]; x <= nd; x += x & (~x + 1))
                    tree[x] = fmin(tree[x], p[2]);
            if (dominated)
                rem[keep++] = rem[j];
            else
                mem[f++] = rem[j];
        }
        assert(f > 0); /* the first remaining point is on the front */
        for (size_t q = 0; q < f; q++) {
            rank[mem[q]] = fronts;
            if (m == 3) /* empty the tree again, along the paths used */
                for (size_t x = pos[mem[q]]; x <= nd; x += x & (~x + 1))
                    tree[x] = NAN;
        }
        fronts++;
        done += f;
        nr = keep;
    }
    free(rem);
    free(mem);
    free(f1s);
    free(pos);
    free(tree);
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

void bd_rung_mo_order_top(const double *losses, size_t m, const double *violation, const int64_t *ids, size_t n,
                          size_t need, size_t *order)
{
    size_t nf = 0, ni = 0, n_out = 0;
    size_t *feas = bd_xmalloc((n ? n : 1) * sizeof *feas);
    viol_key *inf = bd_xmalloc((n ? n : 1) * sizeof *inf);
    for (size_t i = 0; i < n; i++) {
        double v = violation ? violation[i] : 0;
        if (v <= 0)
            feas[nf++] = i;
        else
            inf[ni++] = (viol_key){isnan(v) ? INFINITY : v, ids[i], i};
    }
    double *pts = bd_xmalloc((nf ? nf : 1) * m * sizeof *pts);
    int64_t *fid = bd_xmalloc((nf ? nf : 1) * sizeof *fid);
    int *rank = bd_xmalloc((nf ? nf : 1) * sizeof *rank);
    lex_key *lk = bd_xmalloc((nf ? nf : 1) * sizeof *lk);
    size_t *lx = bd_xmalloc((nf ? nf : 1) * sizeof *lx);
    for (size_t j = 0; j < nf; j++) {
        for (size_t o = 0; o < m; o++) {
            double x = losses[feas[j] * m + o];
            pts[j * m + o] = isnan(x) ? INFINITY : x;
        }
        fid[j] = ids[feas[j]];
    }
    if (m <= 2) { /* the values in the keys: a quicker sort */
        lex2_key *k2 = bd_xmalloc((nf ? nf : 1) * sizeof *k2);
        for (size_t j = 0; j < nf; j++)
            k2[j] = (lex2_key){pts[j * m], m > 1 ? pts[j * m + 1] : 0, fid[j], j};
        qsort(k2, nf, sizeof *k2, lex2_cmp);
        for (size_t j = 0; j < nf; j++)
            lx[j] = k2[j].i;
        free(k2);
    } else {
        for (size_t j = 0; j < nf; j++)
            lk[j] = (lex_key){&pts[j * m], m, fid[j], j};
        qsort(lk, nf, sizeof *lk, lex_cmp);
        for (size_t j = 0; j < nf; j++)
            lx[j] = lk[j].i;
    }
    free(lk);
    int fronts = !nf ? 0 : m <= 2 ? rank_2d(pts, nf, m, lx, rank) : rank_peel(pts, nf, m, lx, need, rank);

    /* the fronts, each in lexicographic order, by a counting sort of lx */
    size_t *start = bd_xcalloc((size_t)fronts + 1, sizeof *start), *mem = bd_xmalloc((nf ? nf : 1) * sizeof *mem);
    size_t *net = bd_xmalloc((nf ? nf : 1) * sizeof *net);
    unsigned char *out_yet = bd_xcalloc(nf ? nf : 1, 1);
    for (size_t j = 0; j < nf; j++)
        if (rank[j] >= 0)
            start[rank[j] + 1]++;
    for (int r = 0; r < fronts; r++)
        start[r + 1] += start[r];
    {
        size_t *fill = bd_xmalloc(((size_t)fronts + 1) * sizeof *fill);
        memcpy(fill, start, ((size_t)fronts + 1) * sizeof *fill);
        for (size_t j = 0; j < nf; j++)
            if (rank[lx[j]] >= 0)
                mem[fill[rank[lx[j]]]++] = lx[j];
        free(fill);
    }
    for (int r = 0; r < fronts && n_out < need; r++) {
        size_t f = start[r + 1] - start[r];
        front_order(pts, m, fid, mem + start[r], f, need - n_out, net);
        for (size_t j = 0; j < f; j++) {
            out_yet[net[j]] = 1;
            order[n_out++] = feas[net[j]];
        }
    }
    for (size_t j = 0; j < nf; j++) /* past the cut: any order will do */
        if (!out_yet[j])
            order[n_out++] = feas[j];
    qsort(inf, ni, sizeof *inf, viol_cmp);
    for (size_t j = 0; j < ni; j++)
        order[n_out++] = inf[j].i;
    assert(n_out == n);
    free(start);
    free(mem);
    free(net);
    free(out_yet);
    free(fid);
    free(feas);
    free(inf);
    free(pts);
    free(rank);
    free(lx);
}

void bd_rung_mo_order(const double *losses, size_t m, const double *violation, const int64_t *ids, size_t n,
                      size_t *order)
{
    bd_rung_mo_order_top(losses, m, violation, ids, n, n, order);
}

void bd_rung_mo_rank(bd_rung *r, const double *losses, size_t m, const double *violation)
{
    size_t n = r->count, need = top_size(r);
    if (!n)
        return;
    size_t *order = bd_xmalloc(n * sizeof *order);
    int64_t *ids = bd_xmalloc(n * sizeof *ids);
    for (size_t i = 0; i < n; i++)
        ids[i] = r->all[i]->config_id;
    bd_rung_mo_order_top(losses, m, violation, ids, n, need ? need : 1, order);
    bd_rung_reorder(r, order);
    free(order);
    free(ids);
}

size_t bd_rung_held_bytes(const bd_rung *r)
{
    return r->count * BD_HEAP_BLOCK(sizeof(bd_rung_entry)) +
           (r->all_cap + r->top.cap + r->rest.cap + r->cand.cap) * sizeof(bd_rung_entry *);
}
