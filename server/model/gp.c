/* gp.c: the Gaussian-process model of gp.h: factorisation with the
 * growing-jitter retry, rank-one extension and removal, prediction and joint
 * posterior sampling.
 *
 * Invariants (gp_internal.h): L is the lower Cholesky factor of
 * K + (sn2 + jitter) I over the m points held, alpha = L^T \ (L \ ys), and
 * ys is y standardised over those same points. Every change of points or
 * theta restores them before returning; on error the model is unchanged
 * except where a comment says otherwise.
 *
 * Cost: a full factorisation O(m^2 d + m^3 / 3); add_point O(m^2 + m d)
 * (one forward substitution); remove_point O(m^2) (one rank-one update of
 * the trailing block, as in LINPACK's dchud); restandardising after either
 * O(m^2) (two triangular solves). Prediction works on blocks of 64 query
 * points so that the forward substitution runs along contiguous rows:
 * O(m d + m^2) per point, O(m x 64) extra memory. */
#include "gp_internal.h"

#include <assert.h>
#include <gsl/gsl_blas.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_matrix.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK 64
#define LOG_2PI 1.83787706640934548356

/* ---- the factorisation ---- */

int bd_gp_cholesky_retry(double *A, size_t n, size_t lda, bd_gp_fill_fn fill, void *ctx, double *jitter, bd_err *err)
{
    double mean_diag = 0, extra = 0;
    int status;
    *jitter = 0;
    if (n == 0)
        return 0;
    fill(ctx, A, lda, 0.0);
    for (size_t i = 0; i < n; i++)
        mean_diag += A[i * lda + i];
    mean_diag /= (double)n;
    if (!(mean_diag > 0) || !isfinite(mean_diag))
        return bd_err_set(err, BD_EINTERNAL, NULL, "covariance matrix has a non-positive or non-finite diagonal");
    for (int attempt = 0;; attempt++) {
        gsl_matrix_view v = gsl_matrix_view_array_with_tda(A, n, n, lda);
        if (attempt > 0)
            fill(ctx, A, lda, extra);
        status = gsl_linalg_cholesky_decomp1(&v.matrix);
        if (status == GSL_SUCCESS) {
            *jitter = extra;
            return 0;
        }
        if (status != GSL_EDOM)
            return bd_err_set(err, BD_EINTERNAL, NULL, "Cholesky factorisation failed: %s", gsl_strerror(status));
        if (attempt >= 9)
            break;
        extra = attempt == 0 ? 1e-10 * mean_diag : extra * 10.0;
    }
    return bd_err_set(err, BD_EINTERNAL, NULL, "covariance matrix is not positive definite even with jitter %g", extra);
}

/* The lower triangle of K + extra' I over the points held, extra' = sn2 + extra. */
static void fill_gp(void *ctx, double *A, size_t lda, double extra)
{
    const bd_gp *gp = ctx;
    for (size_t i = 0; i < gp->m; i++) {
        const double *xi = gp->X + i * gp->d;
        for (size_t j = 0; j < i; j++)
            A[i * lda + j] = bd_kernel_eval(gp->kern, xi, gp->X + j * gp->d);
        A[i * lda + i] = bd_kernel_diag(gp->kern, xi) + gp->sn2 + extra;
    }
}

/* Recomputes the standardisation and alpha from L: O(m^2). */
static int solve_alpha(bd_gp *gp, bd_err *err)
{
    size_t m = gp->m;
    double mean = 0, scale = 1;
    int status;
    if (gp->standardize != BD_GP_STD_NONE && m > 0) {
        for (size_t i = 0; i < m; i++)
            mean += gp->y[i];
        mean /= (double)m;
    }
    if (gp->standardize == BD_GP_STD_SCALE && m > 1) {
        double ss = 0;
        for (size_t i = 0; i < m; i++)
            ss += (gp->y[i] - mean) * (gp->y[i] - mean);
        scale = sqrt(ss / (double)(m - 1));
        if (!(scale > 0) || !isfinite(scale))
            scale = 1;
    }
    gp->ymean = mean;
    gp->yscale = scale;
    for (size_t i = 0; i < m; i++)
        gp->alpha[i] = gp->ys[i] = (gp->y[i] - mean) / scale;
    if (m == 0)
        return 0;
    {
        gsl_matrix_const_view L = gsl_matrix_const_view_array_with_tda(gp->L, m, m, gp->cap);
        gsl_vector_view a = gsl_vector_view_array(gp->alpha, m);
        status = gsl_blas_dtrsv(CblasLower, CblasNoTrans, CblasNonUnit, &L.matrix, &a.vector);
        if (status == GSL_SUCCESS)
            status = gsl_blas_dtrsv(CblasLower, CblasTrans, CblasNonUnit, &L.matrix, &a.vector);
    }
    if (status != GSL_SUCCESS)
        return bd_err_set(err, BD_EINTERNAL, NULL, "triangular solve failed: %s", gsl_strerror(status));
    return 0;
}

/* Full factorisation of the points held under the current theta, then alpha. */
static int refactor(bd_gp *gp, bd_err *err)
{
    int rc = bd_gp_cholesky_retry(gp->L, gp->m, gp->cap, fill_gp, gp, &gp->jitter, err);
    if (rc)
        return rc;
    return solve_alpha(gp, err);
}

/* Room for n points; L keeps its contents under the new leading dimension. */
static void reserve(bd_gp *gp, size_t n)
{
    size_t cap = gp->cap ? gp->cap : 16;
    double *L;
    if (n <= gp->cap)
        return;
    while (cap < n)
        cap *= 2;
    L = bd_xcalloc(cap * cap, sizeof *L);
    for (size_t i = 0; i < gp->m; i++)
        memcpy(L + i * cap, gp->L + i * gp->cap, (i + 1) * sizeof *L);
    free(gp->L);
    gp->L = L;
    gp->X = bd_xrealloc(gp->X, cap * gp->d * sizeof *gp->X);
    gp->y = bd_xrealloc(gp->y, cap * sizeof *gp->y);
    gp->ys = bd_xrealloc(gp->ys, cap * sizeof *gp->ys);
    gp->ids = bd_xrealloc(gp->ids, cap * sizeof *gp->ids);
    gp->alpha = bd_xrealloc(gp->alpha, cap * sizeof *gp->alpha);
    gp->cap = cap;
}

/* ---- life cycle and accessors ---- */

int bd_gp_new(const bd_kernel *kernel, double sn2, int standardize, bd_gp **out, bd_err *err)
{
    bd_gp *gp;
    *out = NULL;
    if (!(sn2 > 0) || !isfinite(sn2) || !isfinite(log(sn2)))
        return bd_err_set(err, BD_EINVAL, NULL, "noise variance must be positive and finite");
    if (standardize < BD_GP_STD_NONE || standardize > BD_GP_STD_SCALE)
        return bd_err_set(err, BD_EINVAL, NULL, "unknown standardisation %d", standardize);
    gp = bd_xcalloc(1, sizeof *gp);
    gp->kern = bd_kernel_copy(kernel);
    gp->d = bd_kernel_dim(kernel);
    gp->np = bd_kernel_n_params(kernel) + 1;
    gp->theta = bd_xmalloc(gp->np * sizeof *gp->theta);
    memcpy(gp->theta, bd_kernel_theta(kernel), (gp->np - 1) * sizeof *gp->theta);
    gp->theta[gp->np - 1] = log(sn2);
    gp->sn2 = sn2;
    gp->standardize = standardize;
    gp->yscale = 1;
    reserve(gp, 16);
    *out = gp;
    return 0;
}

size_t bd_gp_held_bytes(const bd_gp *gp)
{
    if (!gp)
        return 0;
    size_t c = gp->cap;
    return BD_HEAP_BLOCK(sizeof *gp) + bd_kernel_held_bytes(gp->kern) + BD_HEAP_BLOCK(gp->np * sizeof *gp->theta) +
           BD_HEAP_BLOCK(c * gp->d * sizeof *gp->X) + 3 * BD_HEAP_BLOCK(c * sizeof *gp->y) +
           BD_HEAP_BLOCK(c * sizeof *gp->ids) + BD_HEAP_BLOCK(c * c * sizeof *gp->L);
}

void bd_gp_free(bd_gp *gp)
{
    if (!gp)
        return;
    bd_kernel_free(gp->kern);
    free(gp->theta);
    free(gp->X);
    free(gp->y);
    free(gp->ys);
    free(gp->ids);
    free(gp->L);
    free(gp->alpha);
    free(gp);
}

size_t bd_gp_dim(const bd_gp *gp)
{
    return gp->d;
}

size_t bd_gp_size(const bd_gp *gp)
{
    return gp->m;
}

size_t bd_gp_n_params(const bd_gp *gp)
{
    return gp->np;
}

const double *bd_gp_theta(const bd_gp *gp)
{
    return gp->theta;
}

const bd_kernel *bd_gp_kernel(const bd_gp *gp)
{
    return gp->kern;
}

const double *bd_gp_x(const bd_gp *gp, size_t i)
{
    assert(i < gp->m);
    return gp->X + i * gp->d;
}

double bd_gp_y(const bd_gp *gp, size_t i)
{
    assert(i < gp->m);
    return gp->y[i];
}

size_t bd_gp_id(const bd_gp *gp, size_t i)
{
    assert(i < gp->m);
    return gp->ids[i];
}

double bd_gp_jitter(const bd_gp *gp)
{
    return gp->jitter;
}

void bd_gp_standardization(const bd_gp *gp, double *mean, double *scale)
{
    *mean = gp->ymean;
    *scale = gp->yscale;
}

long bd_gp_find(const bd_gp *gp, size_t id)
{
    for (size_t i = 0; i < gp->m; i++)
        if (gp->ids[i] == id)
            return (long)i;
    return -1;
}

/* ---- changes ---- */

/* A copy of the factor's state, to put back when a refactorisation fails. */
typedef struct saved {
    double *L; /* m x m, row-major */
    double jitter;
} saved;

static saved save_factor(const bd_gp *gp)
{
    saved s = {bd_xmalloc((gp->m ? gp->m * gp->m : 1) * sizeof(double)), gp->jitter};
    for (size_t i = 0; i < gp->m; i++)
        memcpy(s.L + i * gp->m, gp->L + i * gp->cap, (i + 1) * sizeof(double));
    return s;
}

static void restore_factor(bd_gp *gp, saved *s)
{
    for (size_t i = 0; i < gp->m; i++)
        memcpy(gp->L + i * gp->cap, s->L + i * gp->m, (i + 1) * sizeof(double));
    gp->jitter = s->jitter;
    free(s->L);
    s->L = NULL;
}

int bd_gp_set_theta(bd_gp *gp, const double *theta, bd_err *err)
{
    double *old = bd_xmalloc(gp->np * sizeof *old);
    double old_sn2 = gp->sn2, sn2;
    saved s = {NULL, 0};
    int rc;
    memcpy(old, gp->theta, gp->np * sizeof *old);
    sn2 = exp(theta[gp->np - 1]);
    if (!isfinite(theta[gp->np - 1]) || !(sn2 > 0) || !isfinite(sn2)) {
        rc = bd_err_set(err, BD_EINVAL, NULL, "noise variance out of range (log %g)", theta[gp->np - 1]);
        goto out;
    }
    rc = bd_kernel_set_theta(gp->kern, theta, err);
    if (rc)
        goto out;
    s = save_factor(gp);
    memcpy(gp->theta, theta, gp->np * sizeof *theta);
    gp->sn2 = sn2;
    rc = refactor(gp, err);
    if (rc) { /* put the old model back; alpha and ys follow from L and y */
        memcpy(gp->theta, old, gp->np * sizeof *old);
        gp->sn2 = old_sn2;
        if (bd_kernel_set_theta(gp->kern, old, NULL))
            abort(); /* old was accepted before */
        restore_factor(gp, &s);
        if (solve_alpha(gp, NULL))
            abort(); /* it solved with this factor before */
    }
out:
    free(s.L);
    free(old);
    return rc;
}

static int check_point(const bd_gp *gp, const double *x, double y, bd_err *err)
{
    for (size_t j = 0; j < gp->d; j++)
        if (!isfinite(x[j]))
            return bd_err_set(err, BD_EINVAL, NULL, "input coordinate %zu is not finite", j);
    if (!isfinite(y))
        return bd_err_set(err, BD_EINVAL, NULL, "output is not finite");
    return 0;
}

int bd_gp_set_data(bd_gp *gp, size_t n, const double *X, const double *y, const size_t *ids, bd_err *err)
{
    int rc;
    for (size_t i = 0; i < n; i++)
        if ((rc = check_point(gp, X + i * gp->d, y[i], err)))
            return rc;
    reserve(gp, n);
    gp->m = n;
    if (n) {
        memcpy(gp->X, X, n * gp->d * sizeof *X);
        memcpy(gp->y, y, n * sizeof *y);
    }
    for (size_t i = 0; i < n; i++)
        gp->ids[i] = ids ? ids[i] : i;
    rc = refactor(gp, err);
    if (rc) /* leave a consistent, empty model rather than a half-built one */
        gp->m = 0, gp->jitter = 0, gp->ymean = 0, gp->yscale = 1;
    return rc;
}

int bd_gp_add_point(bd_gp *gp, const double *x, double y, size_t id, bd_err *err)
{
    size_t m = gp->m;
    double *row, dd;
    saved s;
    int rc = check_point(gp, x, y, err);
    if (rc)
        return rc;
    reserve(gp, m + 1);
    row = gp->L + m * gp->cap;
    for (size_t i = 0; i < m; i++)
        row[i] = bd_kernel_eval(gp->kern, gp->X + i * gp->d, x);
    dd = bd_kernel_diag(gp->kern, x) + gp->sn2 + gp->jitter;
    if (m > 0) {
        gsl_matrix_const_view L = gsl_matrix_const_view_array_with_tda(gp->L, m, m, gp->cap);
        gsl_vector_view l = gsl_vector_view_array(row, m);
        int status = gsl_blas_dtrsv(CblasLower, CblasNoTrans, CblasNonUnit, &L.matrix, &l.vector);
        if (status != GSL_SUCCESS)
            return bd_err_set(err, BD_EINTERNAL, NULL, "triangular solve failed: %s", gsl_strerror(status));
        for (size_t i = 0; i < m; i++)
            dd -= row[i] * row[i];
    }
    memcpy(gp->X + m * gp->d, x, gp->d * sizeof *x);
    gp->y[m] = y;
    gp->ids[m] = id;
    gp->m = m + 1;
    if (dd > 0 && isfinite(dd)) {
        row[m] = sqrt(dd);
        return solve_alpha(gp, err);
    }
    /* The new pivot is not positive: refactor everything with more jitter. */
    gp->m = m;
    s = save_factor(gp);
    gp->m = m + 1;
    rc = refactor(gp, err);
    if (rc) { /* drop the point again and put the old factor back */
        gp->m = m;
        restore_factor(gp, &s);
        if (solve_alpha(gp, NULL))
            abort(); /* it solved with this factor before */
    }
    free(s.L);
    return rc;
}

int bd_gp_remove_point(bd_gp *gp, size_t i, bd_err *err)
{
    size_t m = gp->m, ld = gp->cap, p;
    double *x;
    if (i >= m)
        return bd_err_set(err, BD_EINVAL, NULL, "no point at position %zu (model holds %zu)", i, m);
    /* x = the part of column i below the diagonal; it joins the trailing block. */
    p = m - 1 - i;
    x = bd_xmalloc((p ? p : 1) * sizeof *x);
    for (size_t r = 0; r < p; r++)
        x[r] = gp->L[(i + 1 + r) * ld + i];
    /* Delete row and column i. */
    for (size_t r = i + 1; r < m; r++) {
        double *src = gp->L + r * ld, *dst = gp->L + (r - 1) * ld;
        memmove(dst, src, i * sizeof *src);
        memmove(dst + i, src + i + 1, (r - i) * sizeof *src);
    }
    /* The trailing block T (rows and columns i .. m-2) becomes chol(T T^T + x x^T). */
    for (size_t k = 0; k < p; k++) {
        double *Lk = gp->L + (i + k) * ld + i;
        double lkk = Lk[k], r = hypot(lkk, x[k]), c = r / lkk, s = x[k] / lkk;
        Lk[k] = r;
        for (size_t q = k + 1; q < p; q++) {
            double *Lqk = gp->L + (i + q) * ld + i + k;
            *Lqk = (*Lqk + s * x[q]) / c;
            x[q] = c * x[q] - s * *Lqk;
        }
    }
    free(x);
    memmove(gp->X + i * gp->d, gp->X + (i + 1) * gp->d, (m - 1 - i) * gp->d * sizeof *gp->X);
    memmove(gp->y + i, gp->y + i + 1, (m - 1 - i) * sizeof *gp->y);
    memmove(gp->ids + i, gp->ids + i + 1, (m - 1 - i) * sizeof *gp->ids);
    gp->m = m - 1;
    return solve_alpha(gp, err);
}

double bd_gp_log_marginal(const bd_gp *gp)
{
    double quad = 0, logdet = 0;
    for (size_t i = 0; i < gp->m; i++) {
        quad += gp->ys[i] * gp->alpha[i];
        logdet += log(gp->L[i * gp->cap + i]);
    }
    return -0.5 * quad - logdet - 0.5 * (double)gp->m * LOG_2PI;
}

/* ---- prediction ---- */

/* For b query points Q (b x d): V (m x b, row-major, leading dimension b)
 * = L \ K(X, Q) in place of K(X, Q); mus[c] = K(X, q_c)^T alpha in
 * standardised units. */
static void cross_solve(const bd_gp *gp, size_t b, const double *Q, double *V, double *mus, int want_v)
{
    size_t m = gp->m, ld = gp->cap;
    for (size_t c = 0; c < b; c++)
        mus[c] = 0;
    for (size_t i = 0; i < m; i++) {
        double *vi = V + i * b, a = gp->alpha[i];
        bd_kernel_eval_rows(gp->kern, gp->X + i * gp->d, b, Q, vi);
        for (size_t c = 0; c < b; c++)
            mus[c] += vi[c] * a;
    }
    if (!want_v)
        return;
    /* Forward substitution, four rows at a time so that each finished row
     * j is loaded once for four updates. */
    size_t i0 = 0;
    for (; i0 + 4 <= m; i0 += 4) {
        const double *L0 = gp->L + i0 * ld, *L1 = L0 + ld, *L2 = L1 + ld, *L3 = L2 + ld;
        double *v0 = V + i0 * b, *v1 = v0 + b, *v2 = v1 + b, *v3 = v2 + b;
        for (size_t j = 0; j < i0; j++) {
            const double *vj = V + j * b;
            double a0 = L0[j], a1 = L1[j], a2 = L2[j], a3 = L3[j];
            for (size_t c = 0; c < b; c++) {
                double x = vj[c];
                v0[c] -= a0 * x;
                v1[c] -= a1 * x;
                v2[c] -= a2 * x;
                v3[c] -= a3 * x;
            }
        }
        for (size_t r = 0; r < 4; r++) { /* the 4 x 4 diagonal block */
            const double *Lr = gp->L + (i0 + r) * ld;
            double *vr = V + (i0 + r) * b, inv = 1.0 / Lr[i0 + r];
            for (size_t j = i0; j < i0 + r; j++) {
                const double *vj = V + j * b;
                for (size_t c = 0; c < b; c++)
                    vr[c] -= Lr[j] * vj[c];
            }
            for (size_t c = 0; c < b; c++)
                vr[c] *= inv;
        }
    }
    for (size_t i = i0; i < m; i++) {
        const double *Li = gp->L + i * ld;
        double *vi = V + i * b, inv = 1.0 / Li[i];
        for (size_t j = 0; j < i; j++) {
            const double *vj = V + j * b;
            double lij = Li[j];
            for (size_t c = 0; c < b; c++)
                vi[c] -= lij * vj[c];
        }
        for (size_t c = 0; c < b; c++)
            vi[c] *= inv;
    }
}

int bd_gp_predict(const bd_gp *gp, size_t q, const double *Xq, double *mu, double *var, int with_noise, bd_err *err)
{
    double *V = bd_xmalloc((gp->m ? gp->m : 1) * BLOCK * sizeof *V);
    double mus[BLOCK], s2 = gp->yscale * gp->yscale;
    (void)err;
    for (size_t c0 = 0; c0 < q; c0 += BLOCK) {
        size_t b = q - c0 < BLOCK ? q - c0 : BLOCK;
        const double *Q = Xq + c0 * gp->d;
        cross_solve(gp, b, Q, V, mus, var != NULL);
        for (size_t c = 0; c < b; c++) {
            mu[c0 + c] = gp->ymean + gp->yscale * mus[c];
            if (var) {
                double v = bd_kernel_diag(gp->kern, Q + c * gp->d);
                for (size_t i = 0; i < gp->m; i++)
                    v -= V[i * b + c] * V[i * b + c];
                v = v > 0 ? v : 0;
                if (with_noise)
                    v += gp->sn2;
                var[c0 + c] = s2 * v;
            }
        }
    }
    free(V);
    return 0;
}

/* ---- joint posterior samples ---- */

typedef struct post_cov {
    const bd_gp *gp;
    size_t q;
    const double *Xq;
    const double *V; /* m x q */
    int with_noise;
} post_cov;

/* Lower triangle of K(Q, Q) - V^T V (+ sn2 I) + extra I, standardised units. */
static void fill_post(void *ctx, double *A, size_t lda, double extra)
{
    const post_cov *pc = ctx;
    const bd_gp *gp = pc->gp;
    for (size_t a = 0; a < pc->q; a++) {
        const double *xa = pc->Xq + a * gp->d;
        for (size_t b = 0; b <= a; b++) {
            double v = bd_kernel_eval(gp->kern, xa, pc->Xq + b * gp->d);
            for (size_t i = 0; i < gp->m; i++)
                v -= pc->V[i * pc->q + a] * pc->V[i * pc->q + b];
            A[a * lda + b] = v;
        }
        A[a * lda + a] += (pc->with_noise ? gp->sn2 : 0) + extra;
    }
}

int bd_gp_sample_paths(const bd_gp *gp, size_t q, const double *Xq, size_t n_paths, int with_noise, bd_rng *rng,
                       double *out, bd_err *err)
{
    double *V, *mus, *S, *z, jitter;
    post_cov pc;
    int rc;
    if (q == 0 || n_paths == 0)
        return 0;
    V = bd_xmalloc((gp->m ? gp->m : 1) * q * sizeof *V);
    mus = bd_xmalloc(q * sizeof *mus);
    S = bd_xmalloc(q * q * sizeof *S);
    z = bd_xmalloc(q * sizeof *z);
    cross_solve(gp, q, Xq, V, mus, 1);
    pc = (post_cov){gp, q, Xq, V, with_noise};
    rc = bd_gp_cholesky_retry(S, q, q, fill_post, &pc, &jitter, err);
    if (rc)
        goto out;
    for (size_t p = 0; p < n_paths; p++) {
        double *row = out + p * q;
        for (size_t a = 0; a < q; a++)
            z[a] = bd_rng_normal(rng);
        for (size_t a = 0; a < q; a++) {
            const double *Sa = S + a * q;
            double f = mus[a];
            for (size_t b = 0; b <= a; b++)
                f += Sa[b] * z[b];
            row[a] = gp->ymean + gp->yscale * f;
        }
    }
out:
    free(V);
    free(mus);
    free(S);
    free(z);
    return rc;
}
