/* bos.c: the BOS solve of BO-BOS (bos.h; docs/ALGORITHMS.md section 6; Dai
 * et al., ICML 2019, section 3.2 and Appendix B, Algorithm 2). "The earlier
 * spec" below is the one docs/ALGORITHMS.md replaced; that section lists
 * where it, the paper and this file differ.
 *
 * Steps, for errors e_1..e_N0, horizon N, q = N - N0 future epochs:
 *  1. Fit: a GP on the points (n, e_n), freeze-thaw kernel
 *     k(n, n') = s2 beta^alpha / (n + n' + beta)^alpha with s2 = 1 and noise
 *     1e-3 fixed, log alpha and log beta by bd_gp_fit (marginal likelihood
 *     plus the weak N(0, 1.5^2) priors of bd_gp_fit_default_priors).
 *     Paper vs the earlier spec, where this file does NOT follow the paper: the
 *     paper (Appendix B) sets alpha and beta "via Bayesian update" (a Gamma
 *     prior conjugate to an exponential likelihood, i.e. alpha = N0 and
 *     beta = sum of the errors, which the authors' code computes and then
 *     never uses: it fits by marginal likelihood, as the earlier spec says).
 *     With s2 = 1 and noise 1e-3 those values cannot describe a learning
 *     curve: on e_n = 0.6 - 0.005 n they give alpha = 8, beta = 4.62, a
 *     prior sd of 0.0025 at epoch 8, and a posterior mean of 0.025 at
 *     epoch 9 after 0.56 at epoch 8. So alpha and beta are fitted.
 *     The GP's prior mean is 0 on the raw errors (BD_GP_STD_NONE), as in the
 *     authors' code (GPy GPRegression, no normaliser): the kernel is the
 *     covariance of a Gamma mixture of decays exp(-lambda n), so under a zero
 *     mean a curve decays towards error 0 at a fitted rate. Centring (or
 *     scaling) makes the asymptote the mean of e_1..e_N0 instead, which lies
 *     above the last error of any decreasing curve: measured on
 *     e_n = 0.6 - 0.005 n the centred fit explains the curve as noise
 *     (alpha ~ 4.9, posterior sd 1e-4 from epoch 9) and every path stays
 *     flat at 0.5775 > e_8; on e_n = 0.9 exp(-0.3 (n-1)) + 0.05 the centred
 *     paths climb back from 0.04 to 0.11. With the zero mean the same curves
 *     give 0.554 -> 0.433 (sd 0.18) at epoch 50 and 0.135 -> 0.0005.
 *  2. Sample: P joint posterior paths of the noise-free errors at epochs
 *     N0+1..N. Instead of bd_gp_sample_paths (a jittered Cholesky of the
 *     q x q posterior covariance and q Box-Muller normals per path), the
 *     covariance is eigendecomposed and only the components above 1e-12 of
 *     the largest eigenvalue are kept: the freeze-thaw posterior is so smooth
 *     that this is r ~ 9-10 components for q = 42 (each dropped component
 *     has a standard deviation below 1e-6 of the largest one's, far inside
 *     one grid cell), so a path costs r normals and q r multiply-adds.
 *     Normals come from a 256-layer ziggurat (Marsaglia & Tsang 2000) on
 *     bd_rng_u64. Paths are drawn in blocks of BLOCK, path after path, so
 *     the same rng gives the same paths whatever the block size.
 *     A path leaving (0, 1) at any epoch is dropped (as the authors' code
 *     does); bd_bos_info.dropped says how many. Under the zero mean a curve
 *     already near its floor loses many: about half of them for
 *     e_n = 0.9 exp(-0.3 (n-1)) + 0.05, whose posterior mean heads for 0;
 *     the kept paths are those that stay above 0, a bias the authors' code
 *     shares.
 *  3. Summary statistic at epoch n and its cell: floor(stat x grid) on a
 *     grid of `grid` equal intervals of [0, 1] (the last one closed).
 *     Paper vs the earlier spec: the paper (section 3.2 and Appendix B) uses
 *     the average error over epochs 1..n; the earlier spec and the authors'
 *     code use the mean since epoch N0+1. Following the paper, the default
 *     is BD_BOS_SUMMARY_ALL (1..n); BD_BOS_SUMMARY_NEW is the code's.
 *     Only one byte per (path, epoch) is kept: the cell (P q bytes; 4.2 MB
 *     for 100,000 paths and q = 42 instead of 34 MB of doubles), plus one
 *     byte per path saying whether its error at epoch N is >= e*.
 *  4. Backward induction, epoch N down to N0+1, per cell with c paths:
 *     P = fraction of them whose error at N is >= e* (paper: theta_1 is
 *     accuracy <= y*, i.e. error >= e*; the earlier spec says "exceeds", which
 *     differs only on a set of probability zero), d1 = K1 (1 - P),
 *     d2 = K2 P, and below N continue = c_d0 + mean over the cell's paths of
 *     the next epoch's minimal loss at the cell each path reaches. This is
 *     the paper's equation (2); the authors' code instead adds c_d0 times
 *     the epoch to every terminal loss and no c_d0 to continuing, which
 *     shifts every loss of an epoch by the same amount and gives the same
 *     decisions. Decision = argmin; a terminal decision wins a tie with
 *     continuing (paper: stop when the terminal loss is "at most" that of
 *     continuing), d2 wins a tie with d1 (the authors' argmin order; d2
 *     never stops training). A cell with at most few_paths (30) paths
 *     always continues (authors' code: `> 30` paths needed); its loss is the
 *     continuation loss, i.e. that of the decision taken (the code sets it
 *     to 0, which would pull the epoch before towards continuing into
 *     sparse cells). At epoch N, where continuing is not possible, such a
 *     cell is labelled continue (no conclusion) and its loss is min(d1, d2).
 *     An empty cell continues, with P and loss NaN.
 *
 * Invariants: the table is a pure function of (input, options, rng state);
 * every count of epoch n sums to the number of kept paths.
 * Cost: see bos.h. For N = 50, N0 = 8, 100,000 paths about half the time
 * is sampling (r normals and 42 r multiply-adds per path), most of the rest
 * the per-epoch statistic and cell of every path; the fit is ~0.2 ms
 * (tests/bench/bos_latency.c: ~20 ms per solve in all on the 2-core
 * machine). */
#include "bos.h"

#include <assert.h>
#include <gsl/gsl_blas.h>
#include <gsl/gsl_eigen.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_matrix.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK 64           /* paths generated together (a multiple of 8) */
#define MAX_PATHS 10000000 /* P q bytes of cells: 420 MB at q = 42 */
#define EIG_REL_TOL 1e-12  /* components kept: eigenvalue > this x the largest */
#define LANES 4            /* partial sums in the induction */

struct bd_bos_table {
    size_t n0, n_max, q, grid;
    int summary;
    size_t kept, dropped, rank;
    double k1, alpha, beta;
    uint8_t *decision; /* q x grid, row e = epoch n0 + 1 + e */
    double *p_worse;   /* q x grid, NaN when the cell is empty */
    size_t *count;     /* q x grid */
    double *loss;      /* q x grid, NaN when the cell is empty */
};

void bd_bos_options_default(bd_bos_options *o)
{
    *o = (bd_bos_options){
        .k2 = 99,
        .cd0 = 1,
        .gamma = 0.95,
        .grid = 100,
        .n_paths = 100000,
        .few_paths = 30,
        .noise = 1e-3,
        .s2 = 1,
        .summary = BD_BOS_SUMMARY_ALL,
    };
}

double bd_bos_k1(size_t t, double gamma)
{
    assert(t >= 1);
    return 100.0 / pow(gamma, (double)(t - 1));
}

/* ---- normals: a 256-layer ziggurat on bd_rng_u64 ---- */

#define ZIG_R 3.6541528853610088 /* start of the tail */
#define ZIG_V 4.92867323399e-3   /* area of each layer */

typedef struct zig {
    double x[257]; /* layer i spans |x| < x[i], heights f(x[i]) .. f(x[i+1]); x[0] = V / f(R) */
    double f[257]; /* f(x[i]) = exp(-x[i]^2 / 2) */
} zig;

static void zig_init(zig *z)
{
    double fr = exp(-0.5 * ZIG_R * ZIG_R);
    z->x[0] = ZIG_V / fr;
    z->f[0] = fr; /* unused: layer 0 falls back on the tail */
    z->x[1] = ZIG_R;
    z->f[1] = fr;
    for (int i = 1; i < 255; i++) {
        z->x[i + 1] = sqrt(-2.0 * log(ZIG_V / z->x[i] + z->f[i]));
        z->f[i + 1] = exp(-0.5 * z->x[i + 1] * z->x[i + 1]);
    }
    z->x[256] = 0;
    z->f[256] = 1;
}

/* Uniform in (0, 1), never 0: for logarithms. */
static double uniform_open(bd_rng *rng)
{
    return ((double)(bd_rng_u64(rng) >> 11) + 0.5) * 0x1.0p-53;
}

static double zig_normal(const zig *z, bd_rng *rng)
{
    for (;;) {
        uint64_t b = bd_rng_u64(rng);
        unsigned i = (unsigned)(b & 0xff);
        double u = (double)(b >> 11) * 0x1.0p-52 - 1.0; /* [-1, 1), bits disjoint from i */
        double x = u * z->x[i];
        if (fabs(x) < z->x[i + 1])
            return x;
        if (i == 0) { /* the tail beyond R (Marsaglia 1964) */
            double a, y;
            do {
                a = -log(uniform_open(rng)) / ZIG_R;
                y = -log(uniform_open(rng));
            } while (y + y < a * a);
            return u < 0 ? -(ZIG_R + a) : ZIG_R + a;
        }
        if (z->f[i] + (z->f[i + 1] - z->f[i]) * bd_rng_uniform(rng) < exp(-0.5 * x * x))
            return x;
    }
}

/* ---- the posterior sampler ---- */

typedef struct sampler {
    size_t q, r;
    double *mu; /* q: posterior mean, caller's units */
    double *A;  /* q x r: eigenvectors times sqrt(eigenvalue), largest first */
    zig z;
} sampler;

static void sampler_free(sampler *s)
{
    free(s->mu);
    free(s->A);
    s->mu = s->A = NULL;
}

/* Posterior mean and a rank-r factor of the posterior covariance of the
 * noise-free outputs at the q rows of Xq:
 *   S = scale^2 (K(Q, Q) - W^T W),  W = L \ K(X, Q),  L L^T = K + (sn2 + jitter) I. */
static int sampler_init(sampler *s, const bd_gp *gp, size_t q, const double *Xq, bd_err *err)
{
    const bd_kernel *kern = bd_gp_kernel(gp);
    size_t m = bd_gp_size(gp), d = bd_gp_dim(gp), np = bd_gp_n_params(gp);
    double ymean, scale, sn2 = exp(bd_gp_theta(gp)[np - 1]) + bd_gp_jitter(gp), lmax;
    gsl_matrix *K = NULL, *W = NULL, *S = NULL, *U = NULL;
    gsl_vector *lam = NULL;
    gsl_eigen_symmv_workspace *ws = NULL;
    int rc = 0, status;

    memset(s, 0, sizeof *s);
    s->q = q;
    zig_init(&s->z);
    s->mu = bd_xmalloc(q * sizeof *s->mu);
    if ((rc = bd_gp_predict(gp, q, Xq, s->mu, NULL, 0, err)))
        goto out;
    bd_gp_standardization(gp, &ymean, &scale);
    S = gsl_matrix_alloc(q, q);
    U = gsl_matrix_alloc(q, q);
    lam = gsl_vector_alloc(q);
    ws = gsl_eigen_symmv_alloc(q);
    if (m > 0) {
        K = gsl_matrix_alloc(m, m);
        W = gsl_matrix_alloc(m, q);
    }
    if (!S || !U || !lam || !ws || (m > 0 && (!K || !W))) {
        rc = bd_err_set(err, BD_EINTERNAL, NULL, "cannot allocate GSL workspace");
        goto out;
    }
    for (size_t a = 0; a < q; a++)
        for (size_t b = 0; b <= a; b++) {
            double v = bd_kernel_eval(kern, Xq + a * d, Xq + b * d);
            gsl_matrix_set(S, a, b, v);
        }
    if (m > 0) {
        for (size_t i = 0; i < m; i++) {
            for (size_t j = 0; j <= i; j++) {
                double v = bd_kernel_eval(kern, bd_gp_x(gp, i), bd_gp_x(gp, j));
                gsl_matrix_set(K, i, j, v + (i == j ? sn2 : 0));
                gsl_matrix_set(K, j, i, v + (i == j ? sn2 : 0));
            }
            for (size_t a = 0; a < q; a++)
                gsl_matrix_set(W, i, a, bd_kernel_eval(kern, bd_gp_x(gp, i), Xq + a * d));
        }
        status = gsl_linalg_cholesky_decomp1(K);
        if (status == GSL_SUCCESS)
            status = gsl_blas_dtrsm(CblasLeft, CblasLower, CblasNoTrans, CblasNonUnit, 1.0, K, W);
        if (status == GSL_SUCCESS) /* lower triangle of S -= W^T W */
            status = gsl_blas_dsyrk(CblasLower, CblasTrans, -1.0, W, 1.0, S);
        if (status != GSL_SUCCESS) {
            rc = bd_err_set(err, BD_EINTERNAL, NULL, "posterior covariance failed: %s", gsl_strerror(status));
            goto out;
        }
    }
    for (size_t a = 0; a < q; a++)
        for (size_t b = 0; b <= a; b++) {
            double v = scale * scale * gsl_matrix_get(S, a, b);
            gsl_matrix_set(S, a, b, v);
            gsl_matrix_set(S, b, a, v);
        }
    status = gsl_eigen_symmv(S, lam, U, ws);
    if (status == GSL_SUCCESS)
        status = gsl_eigen_symmv_sort(lam, U, GSL_EIGEN_SORT_VAL_DESC);
    if (status != GSL_SUCCESS) {
        rc = bd_err_set(err, BD_EINTERNAL, NULL, "eigendecomposition failed: %s", gsl_strerror(status));
        goto out;
    }
    lmax = gsl_vector_get(lam, 0);
    while (s->r < q && lmax > 0 && gsl_vector_get(lam, s->r) > EIG_REL_TOL * lmax)
        s->r++;
    s->A = bd_xmalloc((s->r ? q * s->r : 1) * sizeof *s->A);
    for (size_t k = 0; k < s->r; k++) {
        double sd = sqrt(gsl_vector_get(lam, k));
        for (size_t a = 0; a < q; a++)
            s->A[a * s->r + k] = gsl_matrix_get(U, a, k) * sd;
    }
out:
    gsl_matrix_free(K);
    gsl_matrix_free(W);
    gsl_matrix_free(S);
    gsl_matrix_free(U);
    gsl_vector_free(lam);
    if (ws)
        gsl_eigen_symmv_free(ws);
    if (rc)
        sampler_free(s);
    return rc;
}

/* b paths (b <= BLOCK): vals[a * BLOCK + j] is path j at input a. Z has
 * room for r x BLOCK. Path j's r normals are drawn before path j + 1's. */
static void sampler_block(const sampler *s, bd_rng *rng, size_t b, double *Z, double *vals)
{
    size_t q = s->q, r = s->r;
    for (size_t j = 0; j < b; j++)
        for (size_t k = 0; k < r; k++)
            Z[k * BLOCK + j] = zig_normal(&s->z, rng);
    for (size_t j = b; j < BLOCK; j++) /* the rest of a short block: defined values, never used */
        for (size_t k = 0; k < r; k++)
            Z[k * BLOCK + j] = 0;
    /* Eight paths at a time with the sums in registers: each Z entry is
     * loaded once per input and each value stored once. The additions run
     * over k in the same order for every path and block size. */
    for (size_t a = 0; a < q; a++) {
        double *row = vals + a * BLOCK;
        const double *Aa = s->A + a * r;
        for (size_t j0 = 0; j0 < BLOCK; j0 += 8) {
            double acc[8];
            for (size_t t = 0; t < 8; t++)
                acc[t] = s->mu[a];
            for (size_t k = 0; k < r; k++) {
                const double *zk = Z + k * BLOCK + j0;
                double c = Aa[k];
                for (size_t t = 0; t < 8; t++)
                    acc[t] += c * zk[t];
            }
            for (size_t t = 0; t < 8; t++)
                row[j0 + t] = acc[t];
        }
    }
}

int bd_bos_sample_paths(const bd_gp *gp, size_t q, const double *Xq, size_t n_paths, bd_rng *rng, double *out,
                        size_t *rank, bd_err *err)
{
    sampler s;
    double *Z, *vals;
    int rc;
    if (q == 0)
        return bd_err_set(err, BD_EINVAL, NULL, "no inputs to sample at");
    if ((rc = sampler_init(&s, gp, q, Xq, err)))
        return rc;
    if (rank)
        *rank = s.r;
    Z = bd_xmalloc((s.r ? s.r : 1) * BLOCK * sizeof *Z);
    vals = bd_xmalloc(q * BLOCK * sizeof *vals);
    for (size_t p0 = 0; p0 < n_paths; p0 += BLOCK) {
        size_t b = n_paths - p0 < BLOCK ? n_paths - p0 : BLOCK;
        sampler_block(&s, rng, b, Z, vals);
        for (size_t j = 0; j < b; j++)
            for (size_t a = 0; a < q; a++)
                out[(p0 + j) * q + a] = vals[a * BLOCK + j];
    }
    free(Z);
    free(vals);
    sampler_free(&s);
    return 0;
}

/* ---- the fit ---- */

static int check_options(const bd_bos_options *o, bd_err *err)
{
    if (!(o->k2 > 0) || !isfinite(o->k2))
        return bd_err_set(err, BD_EINVAL, "k2", "must be positive and finite");
    if (!(o->cd0 >= 0) || !isfinite(o->cd0))
        return bd_err_set(err, BD_EINVAL, "cd0", "must be >= 0 and finite");
    if (!(o->gamma > 0 && o->gamma <= 1))
        return bd_err_set(err, BD_EINVAL, "gamma", "must be in (0, 1]");
    if (o->grid < 2 || o->grid > BD_BOS_MAX_GRID)
        return bd_err_set(err, BD_EINVAL, "grid", "must be between 2 and %d", BD_BOS_MAX_GRID);
    if (o->n_paths < 1 || o->n_paths > MAX_PATHS)
        return bd_err_set(err, BD_EINVAL, "n_paths", "must be between 1 and %d", MAX_PATHS);
    if (!(o->noise > 0) || !isfinite(o->noise) || !isfinite(log(o->noise)))
        return bd_err_set(err, BD_EINVAL, "noise", "must be positive and finite");
    if (!(o->s2 > 0) || !isfinite(o->s2) || !isfinite(log(o->s2)))
        return bd_err_set(err, BD_EINVAL, "s2", "must be positive and finite");
    if (o->summary != BD_BOS_SUMMARY_ALL && o->summary != BD_BOS_SUMMARY_NEW)
        return bd_err_set(err, BD_EINVAL, "summary", "unknown summary statistic %d", o->summary);
    return 0;
}

static int check_errors(const double *e, size_t n0, bd_err *err)
{
    if (!e)
        return bd_err_set(err, BD_EINVAL, "errors", "missing");
    if (n0 < 2)
        return bd_err_set(err, BD_EINVAL, "n0", "at least 2 observed epochs are needed, got %zu", n0);
    for (size_t i = 0; i < n0; i++)
        if (!(e[i] > 0 && e[i] < 1)) { /* also rejects NaN */
            char field[32];
            snprintf(field, sizeof field, "errors[%zu]", i);
            return bd_err_set(err, BD_EINVAL, field, "an error must be in (0, 1), got %g", e[i]);
        }
    return 0;
}

int bd_bos_fit(const double *errors, size_t n0, const bd_bos_options *opt, bd_rng *rng, bd_gp **out, bd_err *err)
{
    bd_bos_options def;
    bd_kernel *kern = NULL;
    bd_gp *gp = NULL;
    double theta[3], *X = NULL;
    int rc;
    *out = NULL;
    if (!opt) {
        bd_bos_options_default(&def);
        opt = &def;
    }
    if ((rc = check_options(opt, err)) || (rc = check_errors(errors, n0, err)))
        return rc;
    if ((rc = bd_kernel_new(BD_KERNEL_FREEZE_THAW, 1, NULL, &kern, err)))
        goto out;
    theta[0] = 0; /* alpha = beta = 1: the fit's warm start */
    theta[1] = 0;
    theta[2] = log(opt->s2); /* fixed by bd_gp_fit_default_priors, as is the noise */
    if ((rc = bd_kernel_set_theta(kern, theta, err)))
        goto out;
    if ((rc = bd_gp_new(kern, opt->noise, BD_GP_STD_NONE, &gp, err)))
        goto out;
    X = bd_xmalloc(n0 * sizeof *X);
    for (size_t i = 0; i < n0; i++)
        X[i] = (double)(i + 1);
    if ((rc = bd_gp_set_data(gp, n0, X, errors, NULL, err)))
        goto out;
    if ((rc = bd_gp_fit(gp, NULL, rng, NULL, err)))
        goto out;
    *out = gp;
    gp = NULL;
out:
    free(X);
    bd_gp_free(gp);
    bd_kernel_free(kern);
    return rc;
}

/* ---- the solve ---- */

static size_t cell_of(double stat, size_t grid)
{
    double c = stat * (double)grid;
    if (!(c > 0))
        return 0;
    return c >= (double)grid ? grid - 1 : (size_t)c;
}

/* Draws the paths; for each kept path p writes its cell at epoch
 * n0 + 1 + a to cells[a * n_paths + p] and whether its error at N is
 * >= e* to worse[p]. Returns the number kept. The per-epoch loop over a
 * block has no branches, so that it vectorises. */
static size_t simulate(const sampler *s, const bd_bos_input *in, const bd_bos_options *opt, bd_rng *rng, uint8_t *cells,
                       uint8_t *worse)
{
    size_t q = s->q, P = opt->n_paths, kept = 0;
    double *Z = bd_xmalloc((s->r ? s->r : 1) * BLOCK * sizeof *Z);
    double *vals = bd_xmalloc(q * BLOCK * sizeof *vals);
    double *inv = bd_xmalloc(q * sizeof *inv);
    int32_t *cb = bd_xmalloc(q * BLOCK * sizeof *cb);
    double obs = 0, cum[BLOCK], lo[BLOCK], hi[BLOCK], G = (double)opt->grid, top = G - 0.5;
    size_t keep[BLOCK];

    if (opt->summary == BD_BOS_SUMMARY_ALL)
        for (size_t i = 0; i < in->n0; i++)
            obs += in->errors[i];
    for (size_t a = 0; a < q; a++)
        inv[a] = 1.0 / (double)(opt->summary == BD_BOS_SUMMARY_ALL ? in->n0 + 1 + a : a + 1);
    for (size_t p0 = 0; p0 < P; p0 += BLOCK) {
        size_t b = P - p0 < BLOCK ? P - p0 : BLOCK, nk = 0;
        sampler_block(s, rng, b, Z, vals);
        for (size_t j = 0; j < BLOCK; j++)
            cum[j] = 0, lo[j] = 1, hi[j] = 0;
        for (size_t a = 0; a < q; a++) {
            const double *row = vals + a * BLOCK;
            int32_t *crow = cb + a * BLOCK;
            for (size_t j = 0; j < BLOCK; j++) {
                double v = row[j], c;
                lo[j] = v < lo[j] ? v : lo[j];
                hi[j] = v > hi[j] ? v : hi[j];
                cum[j] += v;
                /* cell_of for a kept path (its statistic is in (0, 1)); a
                 * dropped path only needs a value that converts safely */
                c = (obs + cum[j]) * inv[a] * G;
                c = c > 0 ? c : 0;
                c = c < top ? c : top;
                crow[j] = (int32_t)c;
            }
        }
        for (size_t j = 0; j < b; j++)
            if (lo[j] > 0 && hi[j] < 1)
                keep[nk++] = j;
        for (size_t a = 0; a < q; a++) {
            const int32_t *crow = cb + a * BLOCK;
            uint8_t *dst = cells + a * P + kept;
            if (nk == b) /* the usual case: nothing dropped in this block */
                for (size_t i = 0; i < nk; i++)
                    dst[i] = (uint8_t)crow[i];
            else
                for (size_t i = 0; i < nk; i++)
                    dst[i] = (uint8_t)crow[keep[i]];
        }
        for (size_t i = 0; i < nk; i++)
            worse[kept + i] = vals[(q - 1) * BLOCK + keep[i]] >= in->incumbent;
        kept += nk;
    }
    free(Z);
    free(vals);
    free(inv);
    free(cb);
    return kept;
}

/* Fills the table's decisions, P, counts and losses from the cells. */
static void induct(bd_bos_table *t, const bd_bos_options *opt, const uint8_t *cells, const uint8_t *worse)
{
    size_t q = t->q, G = t->grid, P = opt->n_paths, kept = t->kept;
    double *next = bd_xcalloc(G, sizeof *next), *cur = bd_xcalloc(G, sizeof *cur);
    double *sum = bd_xmalloc(LANES * G * sizeof *sum);
    size_t *cnt = bd_xmalloc(LANES * G * sizeof *cnt), *nw = bd_xmalloc(LANES * G * sizeof *nw);

    for (size_t a = q; a-- > 0;) {
        const uint8_t *row = cells + a * P, *nrow = row + P;
        int last = a == q - 1;
        /* LANES partial sums, path p into lane p % LANES: most paths of an
         * early epoch share a few cells, and one accumulator per cell
         * would make every update wait for the previous one. */
        memset(sum, 0, LANES * G * sizeof *sum);
        memset(cnt, 0, LANES * G * sizeof *cnt);
        memset(nw, 0, LANES * G * sizeof *nw);
        {
            size_t p = 0;
            for (; p + LANES <= kept; p += LANES)
                for (size_t l = 0; l < LANES; l++) {
                    size_t c = l * G + row[p + l];
                    cnt[c]++;
                    nw[c] += worse[p + l];
                    if (!last)
                        sum[c] += next[nrow[p + l]];
                }
            for (size_t l = 0; p < kept; p++, l++) {
                size_t c = l * G + row[p];
                cnt[c]++;
                nw[c] += worse[p];
                if (!last)
                    sum[c] += next[nrow[p]];
            }
        }
        for (size_t l = 1; l < LANES; l++)
            for (size_t c = 0; c < G; c++) {
                cnt[c] += cnt[l * G + c];
                nw[c] += nw[l * G + c];
                sum[c] += sum[l * G + c];
            }
        for (size_t c = 0; c < G; c++) {
            size_t idx = a * G + c;
            double pw, d1, d2, term, cont;
            int tdec;
            t->count[idx] = cnt[c];
            t->decision[idx] = BD_BOS_CONTINUE;
            if (cnt[c] == 0) { /* no path reaches it: never read by epoch a - 1 */
                t->p_worse[idx] = t->loss[idx] = cur[c] = NAN;
                continue;
            }
            pw = (double)nw[c] / (double)cnt[c];
            d1 = t->k1 * (1 - pw);
            d2 = opt->k2 * pw;
            term = d2 <= d1 ? d2 : d1;
            tdec = d2 <= d1 ? BD_BOS_STOP_BETTER : BD_BOS_STOP_WORSE;
            cont = last ? INFINITY : opt->cd0 + sum[c] / (double)cnt[c];
            t->p_worse[idx] = pw;
            if (cnt[c] <= opt->few_paths)
                cur[c] = last ? term : cont;
            else if (term <= cont) {
                t->decision[idx] = (uint8_t)tdec;
                cur[c] = term;
            } else
                cur[c] = cont;
            t->loss[idx] = cur[c];
        }
        {
            double *tmp = next;
            next = cur;
            cur = tmp;
        }
    }
    free(next);
    free(cur);
    free(sum);
    free(cnt);
    free(nw);
}

int bd_bos_solve(const bd_bos_input *in, const bd_bos_options *opt, bd_rng *rng, bd_bos_table **out, bd_err *err)
{
    bd_bos_options def;
    bd_bos_table *t = NULL;
    bd_gp *gp = NULL;
    sampler s = {0};
    double *Xq = NULL, k1;
    uint8_t *cells = NULL, *worse = NULL;
    size_t q, cells_n;
    int rc;

    *out = NULL;
    if (!opt) {
        bd_bos_options_default(&def);
        opt = &def;
    }
    if ((rc = check_options(opt, err)))
        return rc;
    if ((rc = check_errors(in->errors, in->n0, err)))
        return rc;
    if (in->n_max <= in->n0 || in->n_max - in->n0 > BD_BOS_MAX_EPOCHS)
        return bd_err_set(err, BD_EINVAL, "n_max", "the horizon must satisfy N0 < N <= N0 + %d (N0 = %zu, N = %zu)",
                          BD_BOS_MAX_EPOCHS, in->n0, in->n_max);
    if (!(in->incumbent >= 0 && in->incumbent <= 1))
        return bd_err_set(err, BD_EINVAL, "incumbent", "the incumbent error must be in [0, 1], got %g", in->incumbent);
    if (in->iteration < 1)
        return bd_err_set(err, BD_EINVAL, "iteration", "BO iterations count from 1");
    k1 = bd_bos_k1(in->iteration, opt->gamma);
    if (!isfinite(k1))
        return bd_err_set(err, BD_EINVAL, "iteration", "K1 = 100 / gamma^(t-1) overflows at t = %zu", in->iteration);

    if ((rc = bd_bos_fit(in->errors, in->n0, opt, rng, &gp, err)))
        goto out;
    q = in->n_max - in->n0;
    Xq = bd_xmalloc(q * sizeof *Xq);
    for (size_t a = 0; a < q; a++)
        Xq[a] = (double)(in->n0 + 1 + a);
    if ((rc = sampler_init(&s, gp, q, Xq, err)))
        goto out;

    t = bd_xcalloc(1, sizeof *t);
    t->n0 = in->n0;
    t->n_max = in->n_max;
    t->q = q;
    t->grid = opt->grid;
    t->summary = opt->summary;
    t->rank = s.r;
    t->k1 = k1;
    t->alpha = exp(bd_gp_theta(gp)[0]);
    t->beta = exp(bd_gp_theta(gp)[1]);
    cells_n = q * opt->grid;
    t->decision = bd_xcalloc(cells_n, sizeof *t->decision);
    t->p_worse = bd_xmalloc(cells_n * sizeof *t->p_worse);
    t->count = bd_xmalloc(cells_n * sizeof *t->count);
    t->loss = bd_xmalloc(cells_n * sizeof *t->loss);

    cells = bd_xmalloc(q * opt->n_paths);
    worse = bd_xmalloc(opt->n_paths);
    t->kept = simulate(&s, in, opt, rng, cells, worse);
    t->dropped = opt->n_paths - t->kept;
    induct(t, opt, cells, worse);
    *out = t;
    t = NULL;
out:
    sampler_free(&s);
    bd_gp_free(gp);
    free(Xq);
    free(cells);
    free(worse);
    bd_bos_table_free(t);
    return rc;
}

void bd_bos_table_free(bd_bos_table *t)
{
    if (!t)
        return;
    free(t->decision);
    free(t->p_worse);
    free(t->count);
    free(t->loss);
    free(t);
}

/* ---- reading the table ---- */

int bd_bos_decide(const bd_bos_table *t, size_t epoch, double stat, double *p_worse)
{
    size_t idx;
    if (p_worse)
        *p_worse = NAN;
    if (epoch <= t->n0 || epoch > t->n_max || !(stat >= 0 && stat <= 1))
        return BD_BOS_CONTINUE;
    idx = (epoch - t->n0 - 1) * t->grid + cell_of(stat, t->grid);
    if (p_worse)
        *p_worse = t->p_worse[idx];
    return t->decision[idx];
}

double bd_bos_summary(const bd_bos_table *t, const double *errors, size_t n)
{
    size_t from = t->summary == BD_BOS_SUMMARY_ALL ? 0 : t->n0;
    double s = 0;
    if (n <= t->n0 || n > t->n_max)
        return NAN;
    for (size_t i = from; i < n; i++)
        s += errors[i];
    return s / (double)(n - from);
}

void bd_bos_table_info(const bd_bos_table *t, bd_bos_info *out)
{
    *out = (bd_bos_info){
        .n0 = t->n0,
        .n_max = t->n_max,
        .grid = t->grid,
        .kept = t->kept,
        .dropped = t->dropped,
        .rank = t->rank,
        .k1 = t->k1,
        .alpha = t->alpha,
        .beta = t->beta,
        .summary = t->summary,
    };
}

int bd_bos_table_cell(const bd_bos_table *t, size_t epoch, size_t cell, bd_bos_cell *out)
{
    size_t idx;
    if (epoch <= t->n0 || epoch > t->n_max || cell >= t->grid)
        return BD_EINVAL;
    idx = (epoch - t->n0 - 1) * t->grid + cell;
    *out = (bd_bos_cell){t->decision[idx], t->p_worse[idx], t->count[idx], t->loss[idx]};
    return 0;
}
