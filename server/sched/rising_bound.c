/* rising_bound.c: Rising Bandits' rewards, growth rate, bounds and
 * elimination (contract in rising_bound.h). */
#include "rising_bound.h"

#include <math.h>
#include <stdlib.h>

double bd_rising_reward(const bd_study_def *def, double loss)
{
    if (!isfinite(loss))
        return 0.0;
    double v = def->maximize ? -loss : loss, r;
    if (def->has_bounds) {
        double span = def->bound_high - def->bound_low;
        r = def->maximize ? (v - def->bound_low) / span : (def->bound_high - v) / span;
    } else {
        r = v; /* create() admits only a maximised objective here: an accuracy */
    }
    return fmin(fmax(r, 0.0), 1.0);
}

double bd_rising_growth(const double *y, size_t t, size_t C)
{
    if (C == 0 || t <= C)
        return NAN;
    return (y[t - 1] - y[t - 1 - C]) / (double)C;
}

double bd_rising_upper(double y, double w, double horizon)
{
    if (!(w > 0) || !(horizon > 0))
        return fmin(y, 1.0);
    return fmin(y + w * horizon, 1.0);
}

double bd_rising_tail_scale(const double *r, size_t n, size_t k)
{
    if (n < 2 || k == 0)
        return NAN;
    size_t kk = k < n - 1 ? k : n - 1, m = 0;
    /* The kk + 1 largest rewards, descending (insertion into a short list). */
    double *top = bd_xmalloc((kk + 1) * sizeof *top), h = 0;
    for (size_t i = 0; i < n; i++) {
        size_t c = m < kk + 1 ? m++ : kk + 1;
        if (c == kk + 1 && !(r[i] > top[kk]))
            continue;
        if (c == kk + 1)
            c = kk;
        for (; c > 0 && top[c - 1] < r[i]; c--)
            top[c] = top[c - 1];
        top[c] = r[i];
    }
    for (size_t i = 1; i <= kk; i++)
        h += 1.0 / (double)i;
    double sigma = (top[0] - top[kk]) / h;
    free(top);
    return sigma;
}

double bd_rising_tail_upper(double y, double sigma, size_t k_used, size_t n, double h)
{
    if (!(sigma > 0) || !(h > 0) || n == 0 || k_used == 0)
        return fmin(y, 1.0);
    if (isinf(h))
        return 1.0;
    double rise = (1.0 + 1.0 / sqrt((double)k_used)) * sigma * log(((double)n + h) / (double)n);
    return fmin(y + rise, 1.0);
}

double bd_rising_tail_ei(double y, double Y, double sigma, size_t k_used, size_t n)
{
    if (!(sigma > 0) || n == 0 || k_used == 0)
        return 0.0;
    double s = (1.0 + 1.0 / sqrt((double)k_used)) * sigma;
    return s / (double)n * exp(-fmax(Y - y, 0.0) / s);
}

double bd_rising_tail_sample(double y, double upper, double sigma, size_t n, double h, double u01)
{
    if (upper < y)
        upper = y;
    if (!(h > 0))
        return y;
    if (!(sigma > 0) || n == 0)
        return y + u01 * (upper - y);
    if (isinf(h))
        return upper;
    /* 1 - u^(1/h) without cancellation for large h: -expm1(ln(u) / h). */
    double q = (double)n * -expm1(log(u01) / h);
    if (!(q < 1.0))
        return y; /* no draw of the h beats y */
    return fmin(y - sigma * log(q), upper);
}

/* The surviving arm other than j with the largest lower bound (ties: the
 * lower index), or n when there is none. */
static size_t best_other(size_t n, const bd_rising_bound *b, const int *alive, size_t j)
{
    size_t best = n;
    for (size_t i = 0; i < n; i++)
        if (i != j && alive[i] && (best == n || b[i].lower > b[best].lower))
            best = i;
    return best;
}

size_t bd_rising_eliminate(size_t n, const bd_rising_bound *b, int strict, int *alive, size_t *by)
{
    size_t *order = bd_xmalloc((n ? n : 1) * sizeof *order), m = 0, eliminated = 0;
    for (size_t k = 0; k < n; k++)
        if (alive[k])
            order[m++] = k;
    /* Insertion sort by (upper, index): n is the number of algorithms, a handful. */
    for (size_t a = 1; a < m; a++) {
        size_t k = order[a], c = a;
        for (; c > 0 && b[order[c - 1]].upper > b[k].upper; c--)
            order[c] = order[c - 1];
        order[c] = k;
    }
    for (size_t a = 0; a < m; a++) {
        size_t j = order[a], i = best_other(n, b, alive, j);
        if (!b[j].ready || i == n)
            continue;
        if (strict ? b[i].lower > b[j].upper : b[i].lower >= b[j].upper) {
            alive[j] = 0;
            by[j] = i;
            eliminated++;
        }
    }
    free(order);
    return eliminated;
}
