/* gp_internal.h: the model's fields, shared by gp.c (factorisation and
 * prediction), gp_fit.c (hyperparameters) and gp_train.c (training subset).
 * Not for schedulers: they use gp.h. */
#ifndef BD_MODEL_GP_INTERNAL_H
#define BD_MODEL_GP_INTERNAL_H

#include "gp.h"

struct bd_gp {
    bd_kernel *kern;      /* owned; its theta is theta[0 .. np-1) */
    size_t d;             /* input dimension */
    size_t np;            /* entries of theta: kernel parameters + log sn2 */
    double *theta;        /* np entries (owned) */
    double sn2;           /* exp(theta[np-1]) */
    int standardize;      /* BD_GP_STD_* */
    size_t m;             /* points held */
    size_t cap;           /* room for points in the arrays below */
    double *X;            /* cap x d, row-major; rows [0, m) are the points */
    double *y;            /* cap: raw outputs */
    double *ys;           /* cap: standardised outputs */
    size_t *ids;          /* cap: caller's ids */
    double *L;            /* cap x cap, row-major, leading dimension cap; lower triangle of rows [0, m) */
    double *alpha;        /* cap: (K + (sn2 + jitter) I)^-1 ys */
    double ymean, yscale; /* y = ymean + yscale * ys */
    double jitter;        /* added to the diagonal of the current factor */
};

/* Factors A (n x n, row-major with leading dimension lda; the lower triangle
 * is filled by fill(ctx, A, lda, extra) with `extra` added to the diagonal)
 * with gsl_linalg_cholesky_decomp1, retrying with a growing jitter on
 * GSL_EDOM: 0, then 1e-10, 1e-9, ... up to 1e-2 times the mean diagonal.
 * *jitter receives the extra used. BD_EINTERNAL when every try fails or GSL
 * reports another error. */
typedef void (*bd_gp_fill_fn)(void *ctx, double *A, size_t lda, double extra);
int bd_gp_cholesky_retry(double *A, size_t n, size_t lda, bd_gp_fill_fn fill, void *ctx, double *jitter,
                         bd_err *err) BD_MUST_CHECK;

#endif
