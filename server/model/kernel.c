/* kernel.c: Matérn-5/2 with ARD lengthscales (Hamming distance on
 * categorical coordinates) and the freeze-thaw kernel, with their gradients
 * in log parameters. The formulas and the choice of Hamming are explained in
 * kernel.h.
 *
 * Derivatives (r as in kernel.h, e = exp(-sqrt5 r)):
 *   dk/dr = -(5/3) s2 r (1 + sqrt5 r) e, and dr/dlog l_j = -dist_j^2 / (l_j^2 r), so
 *   dk/dlog l_j = (5/3) s2 (1 + sqrt5 r) e dist_j^2 / l_j^2 (no division by r);
 *   dk/dlog s2 = k.
 * Freeze-thaw, S = n + n':  dk/dlog alpha = k alpha (log beta - log(S + beta)),
 *   dk/dlog beta = k alpha S / (S + beta),  dk/dlog s2 = k.
 *
 * Invariants: inv_l2[j] = exp(-2 theta[j]) and s2 = exp(theta[d]) (Matérn),
 * alpha, beta, s2 = exp(theta[0..2]) (freeze-thaw), all finite and > 0.
 * Cost: O(d) per evaluation, no allocation. */
#include "kernel.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SQRT5 2.23606797749978969641

struct bd_kernel {
    bd_kernel_type type;
    size_t d;           /* input dimension */
    size_t np;          /* entries of theta */
    unsigned *choices;  /* d entries, 0 = numeric, K = categorical with K choices (owned) */
    double *theta;      /* np log parameters (owned) */
    double *inv_l2;     /* Matérn: 1 / l_j^2, d entries (owned) */
    double s2;          /* signal variance */
    double alpha, beta; /* freeze-thaw */
};

int bd_kernel_new(bd_kernel_type type, size_t d, const unsigned *n_choices, bd_kernel **out, bd_err *err)
{
    bd_kernel *k;
    *out = NULL;
    if (d == 0)
        return bd_err_set(err, BD_EINVAL, NULL, "a kernel needs at least one input dimension");
    if (type == BD_KERNEL_FREEZE_THAW) {
        if (d != 1 || (n_choices && n_choices[0]))
            return bd_err_set(err, BD_EINVAL, NULL, "the freeze-thaw kernel takes one numeric input");
    } else if (type != BD_KERNEL_MATERN52) {
        return bd_err_set(err, BD_EINVAL, NULL, "unknown kernel type %d", (int)type);
    }
    k = bd_xcalloc(1, sizeof *k);
    k->type = type;
    k->d = d;
    k->np = type == BD_KERNEL_MATERN52 ? d + 1 : 3;
    k->choices = bd_xcalloc(d, sizeof *k->choices);
    if (n_choices)
        memcpy(k->choices, n_choices, d * sizeof *k->choices);
    k->theta = bd_xcalloc(k->np, sizeof *k->theta);
    k->inv_l2 = bd_xcalloc(d, sizeof *k->inv_l2);
    for (size_t j = 0; j < d; j++)
        k->inv_l2[j] = 1.0;
    k->s2 = k->alpha = k->beta = 1.0;
    *out = k;
    return 0;
}

size_t bd_kernel_held_bytes(const bd_kernel *k)
{
    if (!k)
        return 0;
    return BD_HEAP_BLOCK(sizeof *k) + BD_HEAP_BLOCK(k->d * sizeof *k->choices) +
           BD_HEAP_BLOCK(k->np * sizeof *k->theta) + BD_HEAP_BLOCK(k->d * sizeof *k->inv_l2);
}

void bd_kernel_free(bd_kernel *k)
{
    if (!k)
        return;
    free(k->choices);
    free(k->theta);
    free(k->inv_l2);
    free(k);
}

bd_kernel *bd_kernel_copy(const bd_kernel *k)
{
    bd_kernel *c = bd_xmalloc(sizeof *c);
    *c = *k;
    c->choices = bd_xmalloc(k->d * sizeof *c->choices);
    memcpy(c->choices, k->choices, k->d * sizeof *c->choices);
    c->theta = bd_xmalloc(k->np * sizeof *c->theta);
    memcpy(c->theta, k->theta, k->np * sizeof *c->theta);
    c->inv_l2 = bd_xmalloc(k->d * sizeof *c->inv_l2);
    memcpy(c->inv_l2, k->inv_l2, k->d * sizeof *c->inv_l2);
    return c;
}

bd_kernel_type bd_kernel_kind(const bd_kernel *k)
{
    return k->type;
}

size_t bd_kernel_dim(const bd_kernel *k)
{
    return k->d;
}

size_t bd_kernel_n_params(const bd_kernel *k)
{
    return k->np;
}

const unsigned *bd_kernel_choices(const bd_kernel *k)
{
    return k->choices;
}

const double *bd_kernel_theta(const bd_kernel *k)
{
    return k->theta;
}

/* exp(t) when t is finite and the result is a normal positive number. */
static int checked_exp(double t, double *out)
{
    double e;
    if (!isfinite(t))
        return -1;
    e = exp(t);
    if (!isfinite(e) || !isnormal(e))
        return -1;
    *out = e;
    return 0;
}

int bd_kernel_set_theta(bd_kernel *k, const double *theta, bd_err *err)
{
    double *inv = bd_xmalloc(k->d * sizeof *inv);
    double s2 = k->s2, alpha = k->alpha, beta = k->beta;
    int rc = 0;
    if (k->type == BD_KERNEL_MATERN52) {
        for (size_t j = 0; j < k->d && !rc; j++)
            if (checked_exp(-2.0 * theta[j], &inv[j]))
                rc = bd_err_set(err, BD_EINVAL, NULL, "lengthscale %zu out of range (log %g)", j, theta[j]);
        if (!rc && checked_exp(theta[k->d], &s2))
            rc = bd_err_set(err, BD_EINVAL, NULL, "signal variance out of range (log %g)", theta[k->d]);
    } else {
        if (checked_exp(theta[0], &alpha) || checked_exp(theta[1], &beta) || checked_exp(theta[2], &s2))
            rc = bd_err_set(err, BD_EINVAL, NULL, "freeze-thaw parameter out of range");
    }
    if (rc)
        goto out;
    memcpy(k->theta, theta, k->np * sizeof *theta);
    if (k->type == BD_KERNEL_MATERN52)
        memcpy(k->inv_l2, inv, k->d * sizeof *inv);
    k->s2 = s2;
    k->alpha = alpha;
    k->beta = beta;
out:
    free(inv);
    return rc;
}

double bd_kernel_matern52_r(double r)
{
    return (1.0 + SQRT5 * r + 5.0 * r * r / 3.0) * exp(-SQRT5 * r);
}

double bd_kernel_freeze_thaw(double n, double m, double alpha, double beta)
{
    return exp(alpha * (log(beta) - log(n + m + beta)));
}

/* Index of the choice a categorical coordinate codes. */
static unsigned choice_of(double u, unsigned K)
{
    double f = floor(u * (double)K);
    if (!(f >= 0))
        return 0;
    return f >= (double)K ? K - 1 : (unsigned)f;
}

/* dist_j^2 of coordinate j between x and y. */
static double sqdist(const bd_kernel *k, size_t j, double x, double y)
{
    if (k->choices[j])
        return choice_of(x, k->choices[j]) != choice_of(y, k->choices[j]);
    return (x - y) * (x - y);
}

static double matern_r2(const bd_kernel *k, const double *x, const double *y)
{
    double r2 = 0;
    for (size_t j = 0; j < k->d; j++)
        r2 += sqdist(k, j, x[j], y[j]) * k->inv_l2[j];
    return r2;
}

double bd_kernel_eval(const bd_kernel *k, const double *x, const double *y)
{
    if (k->type == BD_KERNEL_MATERN52)
        return k->s2 * bd_kernel_matern52_r(sqrt(matern_r2(k, x, y)));
    return k->s2 * bd_kernel_freeze_thaw(x[0], y[0], k->alpha, k->beta);
}

void bd_kernel_eval_rows(const bd_kernel *k, const double *x, size_t n, const double *Y, double *out)
{
    size_t d = k->d;
    if (k->type != BD_KERNEL_MATERN52) {
        for (size_t i = 0; i < n; i++)
            out[i] = bd_kernel_eval(k, x, Y + i * d);
        return;
    }
    /* r^2 of all rows first, one coordinate at a time: independent sums
     * instead of one dependency chain per row. out holds r^2 meanwhile. */
    for (size_t i = 0; i < n; i++)
        out[i] = 0;
    for (size_t j = 0; j < d; j++) {
        double xj = x[j], w = k->inv_l2[j];
        if (k->choices[j]) {
            for (size_t i = 0; i < n; i++)
                out[i] += sqdist(k, j, xj, Y[i * d + j]) * w;
        } else {
            for (size_t i = 0; i < n; i++) {
                double diff = xj - Y[i * d + j];
                out[i] += diff * diff * w;
            }
        }
    }
    for (size_t i = 0; i < n; i++) {
        double r2 = out[i], r = sqrt(r2);
        out[i] = k->s2 * (1.0 + SQRT5 * r + 5.0 * r2 / 3.0) * exp(-SQRT5 * r);
    }
}

double bd_kernel_diag(const bd_kernel *k, const double *x)
{
    if (k->type == BD_KERNEL_MATERN52)
        return k->s2;
    return bd_kernel_eval(k, x, x);
}

double bd_kernel_grad(const bd_kernel *k, const double *x, const double *y, double *grad)
{
    double kv;
    if (k->type == BD_KERNEL_MATERN52) {
        double r = sqrt(matern_r2(k, x, y));
        double e = exp(-SQRT5 * r);
        double c = (5.0 / 3.0) * k->s2 * (1.0 + SQRT5 * r) * e;
        kv = k->s2 * (1.0 + SQRT5 * r + 5.0 * r * r / 3.0) * e;
        for (size_t j = 0; j < k->d; j++)
            grad[j] = c * sqdist(k, j, x[j], y[j]) * k->inv_l2[j];
        grad[k->d] = kv;
    } else {
        double S = x[0] + y[0];
        kv = k->s2 * bd_kernel_freeze_thaw(x[0], y[0], k->alpha, k->beta);
        grad[0] = kv * k->alpha * (log(k->beta) - log(S + k->beta));
        grad[1] = kv * k->alpha * S / (S + k->beta);
        grad[2] = kv;
    }
    return kv;
}
