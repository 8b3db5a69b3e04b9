/* spc_tester.c: one SPC configuration tester (see spc_tester.h). The
 * formulas follow docs/ALGORITHMS.md section 5, which restates the authors'
 * code (drgrhm/alg_config, configuration_tester.py); the paper's own symbols
 * are partly lost in the stored text, and its Algorithm 1 agrees where
 * legible. */
#include "spc_tester.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../common.h"

#define SPC_EMPTY_LCB (-1e-6) /* below any real LCB: an untested config runs first */
#define SPC_Q_BASE 25.0       /* the authors' queue-bound constant */

void spc_tester_init(spc_tester *t, json_t *config, int sample, double kappa0, int64_t population)
{
    memset(t, 0, sizeof *t);
    t->config = config;
    t->population = population;
    t->sample = sample;
    t->theta = kappa0;
    t->q = 1;
    t->lcb = SPC_EMPTY_LCB;
}

void spc_tester_clear(spc_tester *t)
{
    json_decref(t->config);
    free(t->inst);
    free(t->queue);
    free(t->retry);
    free(t->sorted);
    memset(t, 0, sizeof *t);
}

int spc_tester_next(const spc_tester *t, int64_t n_positions, spc_run *out, int *fresh)
{
    *fresh = 0;
    if (t->n_retry) {
        *out = t->retry[t->n_retry - 1];
        return 1;
    }
    /* Algorithm 1, step 1: a fresh instance while the queue is below its
     * bound (and the study has one left), else the queue's front. */
    if ((int64_t)t->q_len < t->q && t->r < n_positions) {
        *out = (spc_run){.position = t->r, .cap = t->theta};
        *fresh = 1;
        return 1;
    }
    if (t->q_len) {
        *out = t->queue[t->q_head];
        return 1;
    }
    return 0;
}

static void grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return;
    size_t n = *cap ? *cap : 16;
    while (n < need)
        n *= 2;
    *p = bd_xrealloc(*p, n * size);
    *cap = n;
}

static void queue_push(spc_tester *t, spc_run run)
{
    if (t->q_head + t->q_len == t->q_cap && t->q_head) { /* slide to the front before growing */
        memmove(t->queue, t->queue + t->q_head, t->q_len * sizeof *t->queue);
        t->q_head = 0;
    }
    grow((void **)&t->queue, &t->q_cap, t->q_head + t->q_len + 1, sizeof *t->queue);
    t->queue[t->q_head + t->q_len++] = run;
}

void spc_tester_start(spc_tester *t, const spc_run *run, int fresh)
{
    t->in_flight++;
    if (t->n_retry && t->retry[t->n_retry - 1].position == run->position) {
        t->n_retry--;
        return;
    }
    if (fresh) {
        grow((void **)&t->inst, &t->inst_cap, (size_t)t->r + 1, sizeof *t->inst);
        t->inst[t->r++] = (spc_instance){.value = NAN, .state = SPC_NONE};
        return;
    }
    /* Popped from the queue: the tester's cap becomes the run's (step 1). */
    if (t->q_len) {
        t->q_head++;
        if (--t->q_len == 0)
            t->q_head = 0;
    }
    t->theta = run->cap;
}

/* The first index of sorted[0 .. n-1] holding a value >= v. */
static size_t lower_bound(const double *sorted, size_t n, double v)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sorted[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Sets position's value and state, keeping the sums and the sorted values
 * (one memmove out, one in: O(r), no sort and no allocation per step). */
static void set_value(spc_tester *t, int64_t position, double value, uint8_t state)
{
    spc_instance *in = &t->inst[position];
    size_t n = (size_t)t->valued;
    if (in->state != SPC_NONE) {
        size_t at = lower_bound(t->sorted, n, in->value); /* the value is there: remove one copy */
        memmove(t->sorted + at, t->sorted + at + 1, (n - at - 1) * sizeof *t->sorted);
        n--;
        t->valued--;
        t->value_sum -= in->value;
        if (in->state == SPC_SOLVED)
            t->solved--;
        if (in->state == SPC_TIMED_OUT) {
            t->pending--;
            t->pending_sum -= in->value;
        }
    }
    grow((void **)&t->sorted, &t->sorted_cap, n + 1, sizeof *t->sorted);
    size_t at = lower_bound(t->sorted, n, value);
    memmove(t->sorted + at + 1, t->sorted + at, (n - at) * sizeof *t->sorted);
    t->sorted[at] = value;
    in->value = value;
    in->state = state;
    t->valued++;
    t->value_sum += value;
    if (state == SPC_SOLVED)
        t->solved++;
    if (state == SPC_TIMED_OUT) {
        t->pending++;
        t->pending_sum += value;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* sum over distinct u_1 < ... < u_m of (u_j - u_{j-1}) beta(1 - F(u_{j-1}), t),
 * u_0 = 0, over the n ascending values sorted[]: 1 - F(u_{j-1}) is the share
 * of values >= u_j (the values are >= 0, so the first step starts at 0). */
static double lcb_of_sorted(const double *sorted, int64_t n, double t, int64_t r, int64_t population)
{
    if (n <= 0)
        return SPC_EMPTY_LCB;
    double lcb = 0, prev = 0;
    for (int64_t i = 0; i < n;) {
        double level = sorted[i];
        double b = spc_beta_finite(n - i, n, t, r, population);
        if (b == 0)
            break; /* eps only grows as p shrinks: every higher level adds 0 too */
        lcb += (level - prev) * b;
        prev = level;
        while (i < n && sorted[i] == level)
            i++;
    }
    return lcb;
}

double spc_tester_lcb_at(const spc_tester *t, int64_t t_now)
{
    return lcb_of_sorted(t->sorted, t->valued, (double)t_now, t->valued, t->population);
}

/* Steps 3 and 4: this tester's LCB and queue bound at iteration t_iter. */
static void refresh(spc_tester *t, int64_t t_iter)
{
    t->lcb = spc_tester_lcb_at(t, t_iter);
    t->q = spc_queue_bound(t_iter, t->r);
}

void spc_tester_finish(spc_tester *t, const spc_run *run, int timeout, double value, double cap_max,
                       double multiplier, double par, int64_t t_iter)
{
    t->in_flight--;
    t->steps++;
    if (timeout) {
        t->seconds += run->cap;
        if (run->cap >= cap_max) {
            set_value(t, run->position, cap_max * par, SPC_GAVE_UP);
        } else {
            set_value(t, run->position, run->cap, SPC_TIMED_OUT);
            queue_push(t, (spc_run){.position = run->position, .cap = fmin(run->cap * multiplier, cap_max)});
        }
    } else {
        double v = value > 0 ? value : 0; /* a runtime is never negative; 0 is the floor */
        t->seconds += v;
        set_value(t, run->position, v, SPC_SOLVED);
    }
    refresh(t, t_iter);
}

void spc_tester_fail(spc_tester *t, const spc_run *run, int max_failures, double cap_max, double par,
                     int64_t t_iter)
{
    t->in_flight--;
    spc_instance *in = &t->inst[run->position];
    if (in->failures < 255)
        in->failures++;
    if (in->failures >= max_failures) {
        set_value(t, run->position, cap_max * par, SPC_GAVE_UP);
        refresh(t, t_iter);
        return;
    }
    grow((void **)&t->retry, &t->retry_cap, t->n_retry + 1, sizeof *t->retry);
    t->retry[t->n_retry++] = *run;
}

double spc_tester_mean(const spc_tester *t)
{
    return t->valued ? t->value_sum / (double)t->valued : NAN;
}

double spc_tester_mean_at_worst(const spc_tester *t, double worst)
{
    if (!t->valued)
        return NAN;
    return (t->value_sum - t->pending_sum + (double)t->pending * worst) / (double)t->valued;
}

/* ---- the math ---- */

double spc_beta(int64_t above, int64_t n, double t, int64_t r)
{
    return spc_beta_finite(above, n, t, r, 0);
}

double spc_beta_finite(int64_t above, int64_t n, double t, int64_t r, int64_t population)
{
    if (above <= 0 || n <= 0)
        return 0;
    /* k = floor(log2(n / above)) in integers, so p = 1/4 gives exactly 2. */
    int k = 0;
    while (k < 62 && (above << (k + 1)) <= n)
        k++;
    double tt = t > 1 ? t : 1, rr = r > 1 ? (double)r : 1;
    double eps = k == 0 ? sqrt(9.0 * log(tt) / rr) : sqrt(9.0 * ldexp(1.0, k) * log((double)k * tt) / rr);
    /* Drawn without replacement from N instances: the sample's share of
     * values above a level deviates from the population's by the i.i.d.
     * amount times sqrt((N - r) / (N - 1)) (the finite-population
     * correction of the hypergeometric's spread); 0 once all are seen. */
    if (population > 1 && r < population)
        eps *= sqrt((double)(population - r) / (double)(population - 1));
    else if (population > 0)
        eps = 0;
    double p = (double)above / (double)n;
    if (eps <= 0.5)
        return p / (1 + eps);
    if (population <= 0)
        return 0;
    /* The paper's eps solves exp(-eps^2 p r / 3) = (k t)^-3, the Chernoff
     * form that holds for eps <= 1; beyond 1/2 it gives up (beta = 0). The
     * general multiplicative Chernoff bound exp(-eps^2 p r / (2 + eps))
     * holds for every eps > 0: at the same confidence eps^2 = a (2 + eps)
     * with a = eps_paper^2 / 3. Taking the larger of the two keeps the
     * bound at least as wide as the paper's and continuous at 1/2, and an
     * LCB is informative from a tester's first values on. */
    double a = eps * eps / 3.0, general = (a + sqrt(a * a + 8.0 * a)) / 2.0;
    return p / (1 + fmax(eps, general));
}

double spc_lcb(double *values, int64_t n, double t, int64_t r)
{
    if (n <= 0)
        return SPC_EMPTY_LCB;
    qsort(values, (size_t)n, sizeof *values, cmp_double);
    return lcb_of_sorted(values, n, t, r, 0);
}

int64_t spc_queue_bound(int64_t t, int64_t r)
{
    if (r <= 1 || t <= 1)
        return (int64_t)SPC_Q_BASE;
    return (int64_t)ceil(SPC_Q_BASE * log2((double)t * log2((double)r)));
}
