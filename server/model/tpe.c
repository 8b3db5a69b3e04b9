/* tpe.c: Parzen estimators and the TPE proposal (tpe.h has the rules and
 * their sources). An estimator is a weighted mixture with one component per
 * observation plus the prior; each component is a product over the
 * dimensions it covers of a truncated Gaussian (numeric) or a smoothed
 * one-hot distribution (categorical). */
#include "tpe.h"

#include <assert.h>
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_sf_erf.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../common.h"
#include "pareto.h"

#define SIGMA0_MAGNITUDE 0.2 /* Optuna's (and BOHB's) Scott-rule factor */
#define N_FLAT_WEIGHTS 25    /* Optuna's default_weights: the newest 25 weigh 1 */

void bd_tpe_opts_default(bd_tpe_opts *o)
{
    o->gamma = 0.1;
    o->min_good = 0;
    o->max_good = 25;
    o->prior_weight = 1.0;
    o->n_candidates = 24;
    o->multivariate = 0;
}

size_t bd_tpe_n_good(const bd_tpe_opts *o, size_t n)
{
    double k = ceil(o->gamma * (double)n - 1e-9); /* 0.1 * 30 must give 3, not 4 */
    size_t g = k < 0 ? 0 : (size_t)k;
    if (g < (size_t)o->min_good)
        g = (size_t)o->min_good;
    if (g > (size_t)o->max_good)
        g = (size_t)o->max_good;
    return g > n ? n : g;
}

/* ------------------------------------------------------- Gaussian helpers */

/* log Q(z), Q the upper tail of the standard normal, accurate far in the tail. */
static double log_q(double z)
{
    return log(0.5) + gsl_sf_log_erfc(z / M_SQRT2);
}

/* log(Phi(b) - Phi(a)) for a <= b, without cancellation in either tail. */
static double log_gauss_mass(double a, double b)
{
    if (b <= 0)
        return log_gauss_mass(-b, -a);
    if (a >= 0) {
        double la = log_q(a), lb = log_q(b);
        return la + log1p(-exp(lb - la));
    }
    return log1p(-gsl_cdf_ugaussian_Q(-a) - gsl_cdf_ugaussian_Q(b));
}

/* A standard normal draw truncated to [a, b], by the inverse CDF (one
 * uniform per draw keeps the rng streams easy to reason about). */
static double trunc_std_normal(double a, double b, bd_rng *rng)
{
    double u = bd_rng_uniform(rng), z;
    if (b <= 0)
        return -trunc_std_normal(-b, -a, rng);
    if (a >= 0) {
        double qa = gsl_cdf_ugaussian_Q(a), qb = gsl_cdf_ugaussian_Q(b);
        z = gsl_cdf_ugaussian_Qinv(qa - u * (qa - qb));
    } else {
        double pa = gsl_cdf_ugaussian_P(a), pb = gsl_cdf_ugaussian_P(b);
        z = gsl_cdf_ugaussian_Pinv(pa + u * (pb - pa));
    }
    return isnan(z) ? a : fmin(fmax(z, a), b);
}

/* ---------------------------------------------------------------- estimator */

typedef struct estimator {
    const bd_tpe_dim *dims;
    const size_t *on; /* the dimensions covered */
    size_t n_on;
    size_t m;      /* observation components; component m is the prior */
    double *logw;  /* m + 1 log weights, normalised */
    double **mu;   /* per covered dimension (numeric): m + 1 means, */
    double **sd;   /*   bandwidths */
    double **lz;   /*   and log normalisers: log mass in [low, high] (+ log sd for a density) */
    int **choice;  /* per covered dimension (categorical): m + 1 chosen indices (-1: none, the prior) */
    double base;   /* categorical: prior_weight / (m + 1), the mass every choice gets */
} estimator;

/* Optuna's default_weights(m) (or, given row_w, the weight row_w[rows[i]]
 * of each observation: Optuna's predetermined_weights) followed by the
 * prior's weight, normalised. */
static void fit_weights(estimator *e, double prior_weight, const double *row_w, const size_t *rows)
{
    size_t m = e->m, ramp = m > N_FLAT_WEIGHTS ? m - N_FLAT_WEIGHTS : 0;
    double total = prior_weight;
    e->logw = bd_xmalloc((m + 1) * sizeof *e->logw);
    for (size_t i = 0; i < m; i++) {
        /* numpy linspace(1/m, 1, ramp): ramp points, both ends included */
        double w = 1.0;
        if (row_w)
            w = row_w[rows[i]];
        else if (i < ramp)
            w = ramp == 1 ? 1.0 / (double)m : 1.0 / (double)m + (1.0 - 1.0 / (double)m) * (double)i / (double)(ramp - 1);
        e->logw[i] = w;
        total += w;
    }
    e->logw[m] = prior_weight;
    for (size_t i = 0; i <= m; i++)
        e->logw[i] = log(e->logw[i] / total);
}

typedef struct {
    double v;
    size_t i;
} keyed;

static int size_cmp(const void *pa, const void *pb)
{
    size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
    return a < b ? -1 : a > b;
}

static int keyed_cmp(const void *pa, const void *pb)
{
    const keyed *a = pa, *b = pb;
    if (a->v != b->v)
        return a->v < b->v ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

/* Means and bandwidths of numeric dimension j (tpe.h: Optuna's rules). */
static void fit_numeric(estimator *e, const bd_tpe_dim *dim, const double *col, int multivariate, size_t d_all,
                        double *mu, double *sd)
{
    size_t m = e->m;
    double lo = dim->low, hi = dim->high, range = hi - lo;
    for (size_t i = 0; i < m; i++)
        mu[i] = isnan(col[i]) ? 0.5 * (lo + hi) : col[i];
    mu[m] = 0.5 * (lo + hi);
    if (multivariate) {
        double s0 = SIGMA0_MAGNITUDE * pow((double)(m > 0 ? m : 1), -1.0 / ((double)d_all + 4.0)) * range;
        for (size_t i = 0; i < m; i++)
            sd[i] = isnan(col[i]) ? range : s0;
    } else {
        /* The prior's mean takes part in the neighbour gaps, as in Optuna. */
        size_t k = m + 1;
        keyed *s = bd_xmalloc(k * sizeof *s);
        double *with_ends = bd_xmalloc((k + 2) * sizeof *with_ends);
        for (size_t i = 0; i < k; i++)
            s[i] = (keyed){mu[i], i};
        qsort(s, k, sizeof *s, keyed_cmp);
        with_ends[0] = lo;
        with_ends[k + 1] = hi;
        for (size_t i = 0; i < k; i++)
            with_ends[i + 1] = s[i].v;
        for (size_t i = 0; i < k; i++) {
            double left = with_ends[i + 1] - with_ends[i], right = with_ends[i + 2] - with_ends[i + 1];
            double g = fmax(left, right);
            if (k + 2 >= 4 && i == 0)
                g = with_ends[2] - with_ends[1];
            else if (k + 2 >= 4 && i == k - 1)
                g = with_ends[k] - with_ends[k - 1];
            sd[s[i].i] = g;
        }
        free(s);
        free(with_ends);
    }
    double min_sd = range / fmin(100.0, 1.0 + (double)(m + 1));
    for (size_t i = 0; i < m; i++)
        sd[i] = fmin(fmax(sd[i], min_sd), range);
    sd[m] = range;
}

/* Component i puts base on every choice plus 1 on its own (none for the
 * prior or an inactive observation), normalised: kept as the choice index
 * alone, so a categorical of many choices costs O(m), not O(m K). */
static void fit_categorical(estimator *e, const double *col, int *choice)
{
    for (size_t i = 0; i <= e->m; i++)
        choice[i] = i < e->m && !isnan(col[i]) ? (int)col[i] : -1;
}

static double categorical_prob(const estimator *e, int K, int own, int k)
{
    return (e->base + (k == own ? 1.0 : 0.0)) / (e->base * K + (own >= 0 ? 1.0 : 0.0));
}

/* Fits an estimator over the dimensions on[0..n_on-1] to the rows listed;
 * row_w: NULL (default weights) or a weight per row of x. */
static void fit(estimator *e, const bd_tpe_dim *dims, size_t d, const size_t *on, size_t n_on, const double *x,
                const size_t *rows, size_t m, const bd_tpe_opts *o, const double *row_w)
{
    memset(e, 0, sizeof *e);
    e->dims = dims;
    e->on = on;
    e->n_on = n_on;
    e->m = m;
    e->base = o->prior_weight / (double)(m + 1);
    fit_weights(e, o->prior_weight, row_w, rows);
    e->mu = bd_xcalloc(n_on, sizeof *e->mu);
    e->sd = bd_xcalloc(n_on, sizeof *e->sd);
    e->lz = bd_xcalloc(n_on, sizeof *e->lz);
    e->choice = bd_xcalloc(n_on, sizeof *e->choice);
    double *col = bd_xmalloc((m ? m : 1) * sizeof *col);
    for (size_t t = 0; t < n_on; t++) {
        const bd_tpe_dim *dim = &dims[on[t]];
        for (size_t i = 0; i < m; i++)
            col[i] = x[rows[i] * d + on[t]];
        if (dim->n_choices > 0) {
            e->choice[t] = bd_xmalloc((m + 1) * sizeof(int));
            fit_categorical(e, col, e->choice[t]);
        } else {
            e->mu[t] = bd_xmalloc((m + 1) * sizeof(double));
            e->sd[t] = bd_xmalloc((m + 1) * sizeof(double));
            e->lz[t] = bd_xmalloc((m + 1) * sizeof(double));
            fit_numeric(e, dim, col, o->multivariate, d, e->mu[t], e->sd[t]);
            for (size_t i = 0; i <= m; i++) {
                double mu = e->mu[t][i], sd = e->sd[t][i];
                e->lz[t][i] = log_gauss_mass((dim->low - mu) / sd, (dim->high - mu) / sd) +
                              (dim->step > 0 ? 0 : log(sd));
            }
        }
    }
    free(col);
}

static void est_free(estimator *e)
{
    for (size_t t = 0; t < e->n_on; t++) {
        free(e->mu[t]);
        free(e->sd[t]);
        free(e->lz[t]);
        free(e->choice[t]);
    }
    free(e->mu);
    free(e->sd);
    free(e->lz);
    free(e->choice);
    free(e->logw);
}

/* log of component i's kernel at value v of covered dimension t. */
static double kernel_log(const estimator *e, size_t t, size_t i, double v)
{
    const bd_tpe_dim *dim = &e->dims[e->on[t]];
    if (dim->n_choices > 0) {
        int c = (int)v;
        assert(c >= 0 && c < dim->n_choices);
        return log(categorical_prob(e, dim->n_choices, e->choice[t][i], c));
    }
    double mu = e->mu[t][i], sd = e->sd[t][i];
    if (dim->step > 0) {
        double lo = fmax(v - 0.5 * dim->step, dim->low), hi = fmin(v + 0.5 * dim->step, dim->high);
        return log_gauss_mass((lo - mu) / sd, (hi - mu) / sd) - e->lz[t][i];
    }
    double z = (v - mu) / sd;
    return -0.5 * z * z - 0.5 * log(2 * M_PI) - e->lz[t][i];
}

/* terms[i] = log(w_i K_i(point)) for every component; returns their maximum. */
static double est_terms(const estimator *e, const double *point, double *terms)
{
    double best = -INFINITY;
    for (size_t i = 0; i <= e->m; i++) {
        double s = e->logw[i];
        for (size_t t = 0; t < e->n_on; t++)
            s += kernel_log(e, t, i, point[e->on[t]]);
        terms[i] = s;
        if (s > best)
            best = s;
    }
    return best;
}

/* The kernel-weighted mean of value[i] (one per observation component; the
 * prior takes no part) at point: Nadaraya-Watson regression with the
 * estimator's own kernels. */
static double est_regress(const estimator *e, const double *point, const double *value)
{
    double *terms = bd_xmalloc((e->m + 1) * sizeof *terms);
    est_terms(e, point, terms);
    double top = -INFINITY, num = 0, den = 0;
    for (size_t i = 0; i < e->m; i++)
        top = fmax(top, terms[i]);
    for (size_t i = 0; i < e->m && isfinite(top); i++) {
        double w = exp(terms[i] - top);
        num += w * value[i];
        den += w;
    }
    free(terms);
    return den > 0 ? num / den : 0;
}

/* log density at point (indexed by dimension number). */
static double est_log_pdf(const estimator *e, const double *point)
{
    double *terms = bd_xmalloc((e->m + 1) * sizeof *terms);
    double best = est_terms(e, point, terms);
    double sum = 0;
    if (isfinite(best))
        for (size_t i = 0; i <= e->m; i++)
            sum += exp(terms[i] - best);
    free(terms);
    return isfinite(best) ? best + log(sum) : best;
}

/* One draw into point's covered coordinates. */
static void est_sample(const estimator *e, bd_rng *rng, double *point)
{
    double u = bd_rng_uniform(rng), acc = 0;
    size_t i = 0;
    for (; i < e->m; i++) {
        acc += exp(e->logw[i]);
        if (u < acc)
            break;
    }
    for (size_t t = 0; t < e->n_on; t++) {
        const bd_tpe_dim *dim = &e->dims[e->on[t]];
        if (dim->n_choices > 0) {
            /* own choice with probability 1 / (base K + 1), else uniform */
            int own = e->choice[t][i], K = dim->n_choices;
            double v = bd_rng_uniform(rng) * (e->base * K + (own >= 0 ? 1.0 : 0.0));
            int k = own >= 0 && v >= e->base * K ? own : (int)(v / e->base);
            point[e->on[t]] = k < K ? k : K - 1;
        } else {
            double mu = e->mu[t][i], sd = e->sd[t][i];
            double z = trunc_std_normal((dim->low - mu) / sd, (dim->high - mu) / sd, rng);
            point[e->on[t]] = fmin(fmax(mu + sd * z, dim->low), dim->high);
        }
    }
}

/* ------------------------------------------------------------------ propose */

/* Rows of `all` (chronological) whose dimension j is active, or all of them when j is (size_t)-1. */
static size_t active_rows(const double *x, size_t d, const size_t *all, size_t n, size_t j, size_t *out)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (j == (size_t)-1 || !isnan(x[all[i] * d + j]))
            out[m++] = all[i];
    return m;
}

/* Draws n_candidates from l over the dimensions on[], keeps the one with the
 * largest log l - log g (minus the predicted log cost when log_cost is
 * given: the rows with a known cost, regressed with an estimator of their
 * own) in out. good_w: NULL, or the good rows' weights (indexed by row). */
static void best_candidate(const bd_tpe_dim *dims, size_t d, const size_t *on, size_t n_on, const double *x,
                           const size_t *good, size_t n_good, const size_t *bad, size_t n_bad, const double *log_cost,
                           const double *good_w, const bd_tpe_opts *o, bd_rng *rng, double *out)
{
    estimator l, g, c_est;
    fit(&l, dims, d, on, n_on, x, good, n_good, o, good_w);
    fit(&g, dims, d, on, n_on, x, bad, n_bad, o, NULL);
    size_t n_cost = 0, *costed = bd_xmalloc((n_good + n_bad + 1) * sizeof *costed);
    double *cost = bd_xmalloc((n_good + n_bad + 1) * sizeof *cost);
    for (size_t k = 0; log_cost && k < n_good + n_bad; k++) { /* in arrival order, as fit() wants */
        size_t i = k < n_good ? good[k] : bad[k - n_good];
        if (isfinite(log_cost[i]))
            costed[n_cost++] = i;
    }
    if (n_cost >= 2) {
        qsort(costed, n_cost, sizeof *costed, size_cmp);
        for (size_t k = 0; k < n_cost; k++)
            cost[k] = log_cost[costed[k]];
        fit(&c_est, dims, d, on, n_on, x, costed, n_cost, o, NULL);
    }
    double *cand = bd_xmalloc(d * sizeof *cand);
    double best = -INFINITY;
    for (int c = 0; c < o->n_candidates; c++) {
        est_sample(&l, rng, cand);
        double score = est_log_pdf(&l, cand) - est_log_pdf(&g, cand);
        if (n_cost >= 2)
            score -= est_regress(&c_est, cand, cost);
        if (c == 0 || score > best) {
            best = score;
            for (size_t t = 0; t < n_on; t++)
                out[on[t]] = cand[on[t]];
        }
    }
    free(cand);
    if (n_cost >= 2)
        est_free(&c_est);
    free(costed);
    free(cost);
    est_free(&l);
    est_free(&g);
}

/* The proposal from the split is_good (rows of the good group) and the
 * good rows' weights (NULL: default). */
static void propose_groups(const bd_tpe_dim *dims, size_t d, const double *x, const unsigned char *is_good,
                           const double *good_w, const double *log_cost, size_t n, const bd_tpe_opts *o, bd_rng *rng,
                           double *out)
{
    size_t *good = bd_xmalloc((n ? n : 1) * sizeof *good), *bad = bd_xmalloc((n ? n : 1) * sizeof *bad);
    size_t *sub_good = bd_xmalloc((n ? n : 1) * sizeof *sub_good), *sub_bad = bd_xmalloc((n ? n : 1) * sizeof *sub_bad);
    size_t *on = bd_xmalloc((d ? d : 1) * sizeof *on);
    size_t n_good = 0, n_bad = 0;
    /* Both groups in chronological order, which the weights need. */
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (is_good[i])
            good[k++] = i;
        else
            bad[n_bad++] = i;
    }
    n_good = k;
    if (o->multivariate) {
        for (size_t j = 0; j < d; j++)
            on[j] = j;
        best_candidate(dims, d, on, d, x, good, n_good, bad, n_bad, log_cost, good_w, o, rng, out);
    } else {
        for (size_t j = 0; j < d; j++) {
            size_t mg = active_rows(x, d, good, n_good, j, sub_good);
            size_t mb = active_rows(x, d, bad, n_bad, j, sub_bad);
            on[0] = j;
            best_candidate(dims, d, on, 1, x, sub_good, mg, sub_bad, mb, log_cost, good_w, o, rng, out);
        }
    }
    free(good);
    free(bad);
    free(sub_good);
    free(sub_bad);
    free(on);
}

void bd_tpe_propose(const bd_tpe_dim *dims, size_t d, const double *x, const double *loss,
                    const unsigned char *known_bad, const double *log_cost, size_t n, const bd_tpe_opts *o,
                    bd_rng *rng, double *out)
{
    keyed *order = bd_xmalloc((n ? n : 1) * sizeof *order);
    size_t n_ranked = 0;
    for (size_t i = 0; i < n; i++)
        if (!known_bad || !known_bad[i])
            order[n_ranked++] = (keyed){isnan(loss[i]) ? INFINITY : loss[i], i};
    qsort(order, n_ranked, sizeof *order, keyed_cmp);
    size_t n_good = bd_tpe_n_good(o, n_ranked);
    unsigned char *is_good = bd_xcalloc(n ? n : 1, 1);
    for (size_t i = 0; i < n_good; i++)
        is_good[order[i].i] = 1;
    propose_groups(dims, d, x, is_good, NULL, log_cost, n, o, rng, out);
    free(is_good);
    free(order);
}

void bd_tpe_propose_split(const bd_tpe_dim *dims, size_t d, const double *x, const unsigned char *good,
                          const double *good_weight, size_t n, const bd_tpe_opts *o, bd_rng *rng, double *out)
{
    propose_groups(dims, d, x, good, good_weight, NULL, n, o, rng, out);
}

double bd_tpe_log_pdf(const bd_tpe_dim *dims, size_t d, const double *x, const size_t *rows, size_t m,
                      const bd_tpe_opts *o, const size_t *only, size_t n_only, const double *point)
{
    size_t *on = bd_xmalloc((d ? d : 1) * sizeof *on), *sub = bd_xmalloc((m ? m : 1) * sizeof *sub);
    size_t n_on = only ? n_only : d;
    for (size_t t = 0; t < n_on; t++)
        on[t] = only ? only[t] : t;
    size_t ms = m;
    if (o->multivariate)
        memcpy(sub, rows, m * sizeof *sub);
    else
        for (size_t t = 0; t < n_on; t++) /* rows active in every listed dimension */
            ms = active_rows(x, d, t == 0 ? rows : sub, t == 0 ? m : ms, on[t], sub);
    if (!o->multivariate && n_on == 0)
        memcpy(sub, rows, m * sizeof *sub);
    estimator e;
    fit(&e, dims, d, on, n_on, x, sub, ms, o, NULL);
    double v = est_log_pdf(&e, point);
    est_free(&e);
    free(on);
    free(sub);
    return v;
}

/* ------------------------------------------------------------ the split */

#define MO_EPS 1e-12 /* Optuna's EPS in _tpe/sampler.py */

static int row_finite(const double *row, size_t m)
{
    for (size_t j = 0; j < m; j++)
        if (!isfinite(row[j]))
            return 0;
    return 1;
}

/* The n_good smallest first losses among rows idx[0..k-1] (ties to the older). */
static void split_single(const double *losses, size_t m, const size_t *idx, size_t k, size_t n_good,
                         unsigned char *good)
{
    keyed *order = bd_xmalloc((k ? k : 1) * sizeof *order);
    for (size_t t = 0; t < k; t++) {
        double v = losses[idx[t] * m];
        order[t] = (keyed){isnan(v) ? INFINITY : v, idx[t]};
    }
    qsort(order, k, sizeof *order, keyed_cmp);
    for (size_t t = 0; t < n_good && t < k; t++)
        good[order[t].i] = 1;
    free(order);
}

/* Optuna's reference point for a set of points: max(1.1 w, 0.9 w) of the
 * worst w per objective, 0 -> EPS. */
static void mo_reference(const double *pts, size_t k, size_t m, double *ref)
{
    for (size_t j = 0; j < m; j++) {
        double w = -INFINITY;
        for (size_t t = 0; t < k; t++)
            w = fmax(w, pts[t * m + j]);
        ref[j] = fmax(1.1 * w, 0.9 * w);
        if (ref[j] == 0)
            ref[j] = MO_EPS;
    }
}

static double hv_or_abort(const double *pts, size_t k, size_t m, const double *ref)
{
    double v = bd_pareto_hypervolume(pts, k, m, ref);
    if (v < 0) /* out of memory (k is far under the cap) */
        abort();
    return v;
}

/* Greedy hypervolume subset selection (Optuna's _solve_hssp) of want rows
 * of the rank front[0..f-1] (ascending indices): marks them in good. Each
 * round takes the row adding the most volume to the chosen ones (the
 * first on ties), as Optuna's; evaluated lazily (Minoux's accelerated
 * greedy): a row's gain only shrinks as rows are chosen (the hypervolume is
 * submodular), so a stale gain bounds the true one, and only the rows
 * whose bound leads are recomputed. The choice is the eager greedy's. */
static void hssp(const double *losses, size_t m, const size_t *front, size_t f, size_t want, unsigned char *good)
{
    int finite = 1;
    for (size_t t = 0; t < f; t++)
        finite = finite && row_finite(losses + front[t] * m, m);
    if (!finite) { /* a rank of diverged runs: equal, nothing to measure */
        for (size_t t = 0; t < want && t < f; t++)
            good[front[t]] = 1;
        return;
    }
    double *pts = bd_xmalloc(f * m * sizeof *pts), *ref = bd_xmalloc(m * sizeof *ref);
    double *gain = bd_xmalloc(f * sizeof *gain), *chosen = bd_xmalloc((want + 1) * m * sizeof *chosen);
    unsigned char *taken = bd_xcalloc(f, 1);
    size_t *fresh = bd_xcalloc(f, sizeof *fresh); /* the round (from 1) a gain was computed in */
    for (size_t t = 0; t < f; t++)
        memcpy(pts + t * m, losses + front[t] * m, m * sizeof *pts);
    mo_reference(pts, f, m, ref);
    for (size_t t = 0; t < f; t++) {
        gain[t] = hv_or_abort(pts + t * m, 1, m, ref); /* its box: the exact gain while nothing is chosen */
        fresh[t] = 1;
    }
    double hv_chosen = 0;
    for (size_t n_chosen = 0; n_chosen < want && n_chosen < f; n_chosen++) {
        size_t round = n_chosen + 1, best;
        for (;;) {
            best = f;
            for (size_t t = 0; t < f; t++)
                if (!taken[t] && (best == f || gain[t] > gain[best]))
                    best = t;
            if (fresh[best] == round)
                break;
            memcpy(chosen + n_chosen * m, pts + best * m, m * sizeof *chosen);
            gain[best] = hv_or_abort(chosen, n_chosen + 1, m, ref) - hv_chosen;
            fresh[best] = round;
        }
        taken[best] = 1;
        good[front[best]] = 1;
        memcpy(chosen + n_chosen * m, pts + best * m, m * sizeof *chosen);
        hv_chosen = hv_or_abort(chosen, n_chosen + 1, m, ref);
    }
    free(pts);
    free(ref);
    free(gain);
    free(chosen);
    free(taken);
    free(fresh);
}

/* The non-dominated rows among rem[0..k-1], written ascending into front;
 * returns how many. O(m k f). */
static size_t peel_front(const double *losses, size_t m, const size_t *rem, size_t k, size_t *front)
{
    size_t f = 0;
    for (size_t t = 0; t < k; t++) {
        const double *p = losses + rem[t] * m;
        int dominated = 0;
        for (size_t a = 0; a < f && !dominated; a++)
            dominated = bd_pareto_dominates(losses + front[a] * m, p, m);
        if (dominated)
            continue;
        size_t keep = 0;
        for (size_t a = 0; a < f; a++)
            if (!bd_pareto_dominates(p, losses + front[a] * m, m))
                front[keep++] = front[a];
        f = keep;
        front[f++] = rem[t]; /* rem ascending: front stays ascending */
    }
    return f;
}

/* Whole ranks of rows idx[0..k-1] (ascending) while they fit, then HSSP. */
static void split_multi(const double *losses, size_t m, const size_t *idx, size_t k, size_t n_good,
                        unsigned char *good)
{
    size_t *rem = bd_xmalloc((k ? k : 1) * sizeof *rem), *front = bd_xmalloc((k ? k : 1) * sizeof *front);
    memcpy(rem, idx, k * sizeof *rem);
    size_t n_rem = k, taken = 0;
    while (taken < n_good && n_rem > 0) {
        size_t f = peel_front(losses, m, rem, n_rem, front);
        if (taken + f > n_good) {
            hssp(losses, m, front, f, n_good - taken, good);
            break;
        }
        for (size_t a = 0; a < f; a++)
            good[front[a]] = 1;
        taken += f;
        size_t keep = 0;
        for (size_t t = 0; t < n_rem; t++)
            if (!good[rem[t]])
                rem[keep++] = rem[t];
        n_rem = keep;
    }
    free(rem);
    free(front);
}

/* MOTPE's weights of the below rows (Optuna's
 * _calculate_weights_below_for_multi_objective). */
static void mo_weights(const double *losses, size_t m, const double *violation, size_t n, const unsigned char *good,
                       double *good_weight)
{
    size_t *rows = bd_xmalloc((n ? n : 1) * sizeof *rows), k = 0;
    for (size_t i = 0; i < n; i++) {
        if (!good[i])
            continue;
        good_weight[i] = MO_EPS; /* infeasible or diverged: Optuna's EPS */
        if ((!violation || violation[i] == 0) && row_finite(losses + i * m, m))
            rows[k++] = i;
    }
    if (k == 1)
        good_weight[rows[0]] = 1.0;
    if (k > 1) {
        double *pts = bd_xmalloc(k * m * sizeof *pts), *ref = bd_xmalloc(m * sizeof *ref);
        double *others = bd_xmalloc(k * m * sizeof *others), *contrib = bd_xmalloc(k * sizeof *contrib);
        for (size_t t = 0; t < k; t++)
            memcpy(pts + t * m, losses + rows[t] * m, m * sizeof *pts);
        mo_reference(pts, k, m, ref);
        double all = hv_or_abort(pts, k, m, ref), top = 0;
        for (size_t t = 0; t < k; t++) {
            memcpy(others, pts, t * m * sizeof *others);
            memcpy(others + t * m, pts + (t + 1) * m, (k - 1 - t) * m * sizeof *others);
            contrib[t] = all - hv_or_abort(others, k - 1, m, ref) + MO_EPS;
            top = fmax(top, contrib[t]);
        }
        for (size_t t = 0; t < k; t++)
            good_weight[rows[t]] = fmin(fmax(contrib[t] / top, 0.0), 1.0);
        free(pts);
        free(ref);
        free(others);
        free(contrib);
    }
    free(rows);
}

void bd_tpe_split(const double *losses, size_t m, const double *violation, size_t n, size_t n_good,
                  unsigned char *good, double *good_weight)
{
    size_t *idx = bd_xmalloc((n ? n : 1) * sizeof *idx), k = 0;
    memset(good, 0, n);
    if (violation) {
        keyed *order = bd_xmalloc((n ? n : 1) * sizeof *order);
        for (size_t i = 0; i < n; i++)
            order[i] = (keyed){isnan(violation[i]) ? INFINITY : violation[i], i};
        qsort(order, n, sizeof *order, keyed_cmp); /* a stable argsort: ties by index */
        if (n_good >= n || order[n_good].v > 0) {
            for (size_t t = 0; t < n_good && t < n; t++)
                good[order[t].i] = 1;
            free(order);
            goto weights;
        }
        free(order);
        for (size_t i = 0; i < n; i++)
            if (violation[i] == 0)
                idx[k++] = i;
    } else {
        for (size_t i = 0; i < n; i++)
            idx[k++] = i;
    }
    if (m > 1)
        split_multi(losses, m, idx, k, n_good, good);
    else
        split_single(losses, m, idx, k, n_good, good);
weights:
    if (m > 1 && good_weight)
        mo_weights(losses, m, violation, n, good, good_weight);
    free(idx);
}
