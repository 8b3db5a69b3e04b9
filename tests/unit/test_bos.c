/* test_bos.c: the BOS solve of BO-BOS (server/model/bos.c): the K1 vectors
 * of docs/ALGORITHMS.md section 6, a curve clearly worse than the incumbent
 * stopping (d1) at the first epoch, a clearly better one never concluding worse,
 * sparse cells continuing, determinism, dropped paths counted exactly,
 * the table against a naive backward induction over the same paths, both
 * summary statistics (paper and authors' code), the fast sampler against the
 * GP's posterior and its normals against the normal distribution, and bad
 * inputs. (The freeze-thaw kernel's vectors are in test_kernel.c.) */
#include <criterion/criterion.h>
#include <gsl/gsl_errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "server/model/bos.h"

static void setup(void)
{
    gsl_set_error_handler_off();
}

TestSuite(bos, .init = setup);

/* e_n = 0.6 - 0.005 n: far above e* = 0.1 and decreasing slowly. */
static void worse_curve(double *e, size_t n0)
{
    for (size_t i = 0; i < n0; i++)
        e[i] = 0.6 - 0.005 * (double)(i + 1);
}

/* e_n = 0.02 + 0.08 * 0.9^(n-1): well below e* = 0.3. */
static void better_curve(double *e, size_t n0)
{
    for (size_t i = 0; i < n0; i++)
        e[i] = 0.02 + 0.08 * pow(0.9, (double)i);
}

static bd_bos_table *solve(const double *e, size_t n0, size_t n_max, double incumbent, size_t t,
                           const bd_bos_options *opt, uint64_t seed)
{
    bd_bos_input in = {e, n0, n_max, incumbent, t};
    bd_bos_table *tab = NULL;
    bd_rng rng;
    bd_err err = {0};
    bd_rng_seed(&rng, seed, 7);
    cr_assert_eq(bd_bos_solve(&in, opt, &rng, &tab, &err), 0, "solve failed: %s", err.message);
    cr_assert_not_null(tab);
    return tab;
}

static bd_bos_cell cell_at(const bd_bos_table *t, size_t epoch, size_t c)
{
    bd_bos_cell out;
    cr_assert_eq(bd_bos_table_cell(t, epoch, c, &out), 0);
    return out;
}

Test(bos, k1_vectors)
{
    cr_assert_float_eq(bd_bos_k1(1, 0.95), 100.0, 1e-12);
    cr_assert_float_eq(bd_bos_k1(2, 0.95), 105.2632, 1e-4);
    cr_assert_float_eq(bd_bos_k1(11, 0.95), 167.0183, 1e-4);
    cr_assert_float_eq(bd_bos_k1(2, 0.99), 101.0101, 1e-4); /* the authors' code's gamma */
}

Test(bos, default_options)
{
    bd_bos_options o;
    bd_bos_options_default(&o);
    cr_assert_eq(o.k2, 99);
    cr_assert_eq(o.cd0, 1);
    cr_assert_eq(o.gamma, 0.95);
    cr_assert_eq(o.grid, 100);
    cr_assert_eq(o.n_paths, 100000);
    cr_assert_eq(o.few_paths, 30);
    cr_assert_eq(o.noise, 1e-3);
    cr_assert_eq(o.s2, 1);
    cr_assert_eq(o.summary, BD_BOS_SUMMARY_ALL);
}

/* At epoch N0+1 almost every path will end above e* = 0.1 (P ~ 0.98 in the
 * main cell), so d1 = K1 (1 - P) ~ 2 beats continuing: the table stops at
 * once for most paths. Only paths whose ninth error falls far below the
 * trend (P ~ 0.8: d1 ~ 17) are worth another epoch. */
Test(bos, worse_curve_stops_worse_at_first_epoch)
{
    double e[50];
    bd_bos_table *t;
    bd_bos_info info;
    double p;
    size_t stop = 0;
    worse_curve(e, 8);
    t = solve(e, 8, 50, 0.1, 1, NULL, 1);
    bd_bos_table_info(t, &info);
    cr_assert_eq(info.n0, 8);
    cr_assert_eq(info.n_max, 50);
    cr_assert_eq(info.kept + info.dropped, 100000);
    cr_assert_gt(info.kept, 90000);
    cr_assert_float_eq(info.k1, 100.0, 1e-12);
    for (size_t c = 0; c < 100; c++) {
        bd_bos_cell cl = cell_at(t, 9, c);
        if (cl.count > 30 && cl.p_worse >= 0.99)
            cr_assert_eq(cl.decision, BD_BOS_STOP_WORSE, "cell %zu (%zu paths, P %g)", c, cl.count, cl.p_worse);
        if (cl.decision == BD_BOS_STOP_WORSE)
            stop += cl.count;
    }
    cr_assert_gt(stop, 0.9 * (double)info.kept, "%zu of %zu paths in stop-worse cells", stop, info.kept);
    /* the observed statistic after a ninth error that continues the trend */
    e[8] = 0.555;
    cr_assert_eq(bd_bos_decide(t, 9, bd_bos_summary(t, e, 9), &p), BD_BOS_STOP_WORSE);
    cr_assert_gt(p, 0.95);
    bd_bos_table_free(t);
}

Test(bos, better_curve_never_concludes_worse)
{
    double e[50], p;
    bd_bos_table *t;
    better_curve(e, 8);
    for (size_t t_iter = 1; t_iter <= 21; t_iter += 10) {
        t = solve(e, 8, 50, 0.3, t_iter, NULL, 2);
        for (size_t n = 9; n <= 50; n++)
            for (size_t c = 0; c < 100; c++)
                cr_assert_neq(cell_at(t, n, c).decision, BD_BOS_STOP_WORSE, "epoch %zu cell %zu", n, c);
        e[8] = 0.06;
        cr_assert_eq(bd_bos_decide(t, 9, bd_bos_summary(t, e, 9), &p), BD_BOS_STOP_BETTER);
        cr_assert_lt(p, 1e-3);
        bd_bos_table_free(t);
    }
}

/* With few paths many cells hold 1..30 of them: all continue, and some of
 * them would stop if the rule were off (same seed, same paths). */
Test(bos, sparse_cells_continue)
{
    double e[8];
    bd_bos_options o;
    bd_bos_table *t, *t0;
    size_t sparse = 0, would_stop = 0;
    for (size_t i = 0; i < 8; i++) /* a curve near e*, so that the stop regions are not trivial */
        e[i] = 0.12 + 0.28 * exp(-0.15 * (double)i);
    bd_bos_options_default(&o);
    o.n_paths = 3000;
    t = solve(e, 8, 30, 0.15, 1, &o, 3);
    o.few_paths = 0;
    t0 = solve(e, 8, 30, 0.15, 1, &o, 3);
    for (size_t n = 9; n <= 30; n++)
        for (size_t c = 0; c < 100; c++) {
            bd_bos_cell a = cell_at(t, n, c), b = cell_at(t0, n, c);
            cr_assert_eq(a.count, b.count);
            if (a.count <= 30) {
                cr_assert_eq(a.decision, BD_BOS_CONTINUE, "epoch %zu cell %zu: %zu paths", n, c, a.count);
                if (a.count > 0) {
                    sparse++;
                    would_stop += b.decision != BD_BOS_CONTINUE;
                }
            }
            if (a.count == 0)
                cr_assert(isnan(a.p_worse));
        }
    cr_assert_gt(sparse, 0);
    cr_assert_gt(would_stop, 0);
    bd_bos_table_free(t);
    bd_bos_table_free(t0);
}

static void assert_same_table(const bd_bos_table *a, const bd_bos_table *b)
{
    bd_bos_info ia, ib;
    bd_bos_table_info(a, &ia);
    bd_bos_table_info(b, &ib);
    cr_assert_eq(ia.kept, ib.kept);
    cr_assert_eq(memcmp(&ia.alpha, &ib.alpha, sizeof ia.alpha), 0);
    cr_assert_eq(memcmp(&ia.beta, &ib.beta, sizeof ia.beta), 0);
    for (size_t n = ia.n0 + 1; n <= ia.n_max; n++)
        for (size_t c = 0; c < ia.grid; c++) {
            bd_bos_cell x = cell_at(a, n, c), y = cell_at(b, n, c);
            cr_assert_eq(x.decision, y.decision);
            cr_assert_eq(x.count, y.count);
            cr_assert_eq(memcmp(&x.p_worse, &y.p_worse, sizeof x.p_worse), 0);
            cr_assert_eq(memcmp(&x.loss, &y.loss, sizeof x.loss), 0);
        }
}

Test(bos, same_seed_same_table_bit_for_bit)
{
    double e[8];
    bd_bos_options o;
    bd_bos_table *a, *b, *c;
    int differ = 0;
    for (size_t i = 0; i < 8; i++)
        e[i] = 0.12 + 0.28 * exp(-0.15 * (double)i);
    bd_bos_options_default(&o);
    o.n_paths = 20000;
    a = solve(e, 8, 50, 0.15, 3, &o, 11);
    b = solve(e, 8, 50, 0.15, 3, &o, 11);
    assert_same_table(a, b);
    c = solve(e, 8, 50, 0.15, 3, &o, 12);
    for (size_t n = 9; n <= 50 && !differ; n++)
        for (size_t k = 0; k < 100; k++) {
            bd_bos_cell x = cell_at(a, n, k), y = cell_at(c, n, k);
            if (x.count != y.count)
                differ = 1;
        }
    cr_assert(differ, "another seed should give other paths");
    bd_bos_table_free(a);
    bd_bos_table_free(b);
    bd_bos_table_free(c);
}

/* The solve draws its paths as bd_bos_fit then bd_bos_sample_paths do from
 * the same rng state: recount the paths leaving (0, 1) from those, and run
 * a naive backward induction (Algorithm 2 with the rules of bos.c) over the
 * kept ones; the table must agree. */
typedef struct naive {
    size_t q, G, kept, dropped;
    unsigned char *dec; /* q x G */
    double *p, *loss;
    size_t *count;
} naive;

static naive naive_solve(const double *e, size_t n0, size_t n_max, double incumbent, size_t t_iter,
                         const bd_bos_options *o, uint64_t seed)
{
    size_t q = n_max - n0, P = o->n_paths, G = o->grid;
    double *X = malloc(q * sizeof *X), *paths = malloc(P * q * sizeof *paths), k1 = bd_bos_k1(t_iter, o->gamma);
    size_t *cellv = malloc(P * q * sizeof *cellv);
    unsigned char *keep = malloc(P), *worse = malloc(P);
    double *val = calloc(q * G, sizeof *val);
    naive r = {.q = q, .G = G};
    bd_rng rng;
    bd_gp *gp;
    double obs = 0;
    r.dec = calloc(q * G, 1);
    r.p = calloc(q * G, sizeof *r.p);
    r.loss = calloc(q * G, sizeof *r.loss);
    r.count = calloc(q * G, sizeof *r.count);
    cr_assert(X && paths && cellv && keep && worse && val && r.dec && r.p && r.loss && r.count);
    bd_rng_seed(&rng, seed, 7);
    cr_assert_eq(bd_bos_fit(e, n0, o, &rng, &gp, NULL), 0);
    for (size_t a = 0; a < q; a++)
        X[a] = (double)(n0 + 1 + a);
    cr_assert_eq(bd_bos_sample_paths(gp, q, X, P, &rng, paths, NULL, NULL), 0);
    for (size_t i = 0; i < n0; i++)
        obs += e[i];
    if (o->summary != BD_BOS_SUMMARY_ALL)
        obs = 0;
    for (size_t p = 0; p < P; p++) {
        double cum = 0;
        keep[p] = 1;
        for (size_t a = 0; a < q; a++) {
            double v = paths[p * q + a];
            size_t den = o->summary == BD_BOS_SUMMARY_ALL ? n0 + 1 + a : a + 1;
            size_t c;
            if (!(v > 0 && v < 1))
                keep[p] = 0;
            cum += v;
            /* the same arithmetic as bos.c, so that no path lands on the other side of a cell edge */
            c = (size_t)fmax(0, floor((obs + cum) * (1.0 / (double)den) * (double)G));
            cellv[p * q + a] = c >= G ? G - 1 : c;
        }
        worse[p] = paths[p * q + q - 1] >= incumbent;
        r.kept += keep[p];
    }
    r.dropped = P - r.kept;
    for (size_t a = q; a-- > 0;) {
        for (size_t c = 0; c < G; c++) {
            size_t n = 0, w = 0;
            double sum = 0;
            for (size_t p = 0; p < P; p++)
                if (keep[p] && cellv[p * q + a] == c) {
                    n++;
                    w += worse[p];
                    if (a + 1 < q)
                        sum += val[(a + 1) * G + cellv[p * q + a + 1]];
                }
            r.count[a * G + c] = n;
            if (n == 0) {
                r.p[a * G + c] = NAN;
                r.loss[a * G + c] = NAN;
                continue;
            }
            double pw = (double)w / (double)n, d1 = k1 * (1 - pw), d2 = o->k2 * pw;
            double term = fmin(d1, d2), cont = a + 1 < q ? o->cd0 + sum / (double)n : INFINITY;
            unsigned char tdec = d2 <= d1 ? BD_BOS_STOP_BETTER : BD_BOS_STOP_WORSE;
            double v;
            r.p[a * G + c] = pw;
            if (n <= o->few_paths)
                v = a + 1 < q ? cont : term;
            else if (term <= cont) {
                v = term;
                r.dec[a * G + c] = tdec;
            } else
                v = cont;
            val[a * G + c] = r.loss[a * G + c] = v;
        }
    }
    bd_gp_free(gp);
    free(X);
    free(paths);
    free(cellv);
    free(keep);
    free(worse);
    free(val);
    return r;
}

static void check_against_naive(const double *e, double incumbent, int summary, uint64_t seed)
{
    bd_bos_options o;
    bd_bos_table *t;
    bd_bos_info info;
    naive r;
    size_t stops = 0;
    bd_bos_options_default(&o);
    o.n_paths = 6000;
    o.summary = summary;
    t = solve(e, 8, 20, incumbent, 4, &o, seed);
    r = naive_solve(e, 8, 20, incumbent, 4, &o, seed);
    bd_bos_table_info(t, &info);
    cr_assert_eq(info.kept, r.kept);
    cr_assert_eq(info.dropped, r.dropped);
    for (size_t a = 0; a < r.q; a++) {
        size_t total = 0;
        for (size_t c = 0; c < r.G; c++) {
            bd_bos_cell x = cell_at(t, 9 + a, c);
            size_t i = a * r.G + c;
            total += x.count;
            cr_assert_eq(x.count, r.count[i], "epoch %zu cell %zu", 9 + a, c);
            cr_assert_eq(x.decision, r.dec[i], "epoch %zu cell %zu", 9 + a, c);
            stops += x.decision != BD_BOS_CONTINUE;
            if (r.count[i] == 0) {
                cr_assert(isnan(x.p_worse) && isnan(x.loss));
            } else {
                cr_assert_eq(x.p_worse, r.p[i]);
                cr_assert_float_eq(x.loss, r.loss[i], 1e-9 * (1 + fabs(r.loss[i])));
            }
        }
        cr_assert_eq(total, info.kept, "every kept path is in one cell of each epoch");
    }
    cr_assert_gt(stops, 0);
    free(r.dec);
    free(r.p);
    free(r.loss);
    free(r.count);
    bd_bos_table_free(t);
}

Test(bos, table_matches_naive_induction)
{
    double e[8];
    for (size_t i = 0; i < 8; i++)
        e[i] = 0.12 + 0.28 * exp(-0.15 * (double)i);
    check_against_naive(e, 0.15, BD_BOS_SUMMARY_ALL, 5);
    check_against_naive(e, 0.15, BD_BOS_SUMMARY_NEW, 5);
}

/* A curve close to error 0: many paths go below 0 and are dropped; the
 * count is exactly that of paths leaving (0, 1) (checked by the naive
 * solve on the same paths). */
Test(bos, paths_leaving_unit_interval_are_dropped)
{
    double e[8];
    bd_bos_table *t;
    bd_bos_info info;
    bd_bos_options o;
    for (size_t i = 0; i < 8; i++)
        e[i] = 0.005 + 0.045 * exp(-0.2 * (double)i);
    bd_bos_options_default(&o);
    o.n_paths = 20000;
    t = solve(e, 8, 50, 0.02, 1, &o, 9);
    bd_bos_table_info(t, &info);
    cr_assert_gt(info.dropped, 1000, "dropped %zu", info.dropped);
    cr_assert_gt(info.kept, 1000);
    cr_assert_eq(info.kept + info.dropped, 20000);
    bd_bos_table_free(t);
    check_against_naive(e, 0.02, BD_BOS_SUMMARY_ALL, 9);
}

Test(bos, summary_statistics)
{
    double e[50];
    bd_bos_options o;
    bd_bos_table *all, *fresh;
    worse_curve(e, 8);
    for (size_t i = 8; i < 12; i++)
        e[i] = 0.5;
    bd_bos_options_default(&o);
    o.n_paths = 20000;
    all = solve(e, 8, 50, 0.1, 1, &o, 4);
    o.summary = BD_BOS_SUMMARY_NEW;
    fresh = solve(e, 8, 50, 0.1, 1, &o, 4);
    /* paper: mean of e_1..e_n; code: mean since N0+1 */
    cr_assert_float_eq(bd_bos_summary(all, e, 10), (0.6 * 8 - 0.005 * 36 + 1.0) / 10, 1e-12);
    cr_assert_float_eq(bd_bos_summary(fresh, e, 10), 0.5, 1e-12);
    cr_assert(isnan(bd_bos_summary(all, e, 8)));
    cr_assert(isnan(bd_bos_summary(all, e, 51)));
    cr_assert_eq(bd_bos_decide(all, 10, bd_bos_summary(all, e, 10), NULL), BD_BOS_STOP_WORSE);
    cr_assert_eq(bd_bos_decide(fresh, 10, bd_bos_summary(fresh, e, 10), NULL), BD_BOS_STOP_WORSE);
    bd_bos_table_free(all);
    bd_bos_table_free(fresh);
}

Test(bos, decide_outside_table_continues)
{
    double e[8], p = 0;
    bd_bos_options o;
    bd_bos_table *t;
    bd_bos_cell cl;
    worse_curve(e, 8);
    bd_bos_options_default(&o);
    o.n_paths = 2000;
    t = solve(e, 8, 20, 0.1, 1, &o, 1);
    cr_assert_eq(bd_bos_decide(t, 8, 0.5, &p), BD_BOS_CONTINUE);
    cr_assert(isnan(p));
    cr_assert_eq(bd_bos_decide(t, 21, 0.5, &p), BD_BOS_CONTINUE);
    cr_assert_eq(bd_bos_decide(t, 9, NAN, &p), BD_BOS_CONTINUE);
    cr_assert_eq(bd_bos_decide(t, 9, 1.5, &p), BD_BOS_CONTINUE);
    cr_assert_eq(bd_bos_decide(t, 9, -0.1, &p), BD_BOS_CONTINUE);
    cr_assert_eq(bd_bos_table_cell(t, 8, 0, &cl), BD_EINVAL);
    cr_assert_eq(bd_bos_table_cell(t, 9, 100, &cl), BD_EINVAL);
    bd_bos_table_free(t);
}

/* The fast sampler against the GP it samples: means and variances at a few
 * epochs within 5 standard errors. */
Test(bos, sampler_matches_gp_posterior)
{
    double e[8], X[42], mu[42], var[42];
    size_t q = 42, P = 100000, rank = 0;
    double *out = malloc(P * q * sizeof *out);
    bd_rng rng;
    bd_gp *gp;
    cr_assert_not_null(out);
    worse_curve(e, 8);
    bd_rng_seed(&rng, 21, 0);
    cr_assert_eq(bd_bos_fit(e, 8, NULL, &rng, &gp, NULL), 0);
    for (size_t a = 0; a < q; a++)
        X[a] = (double)(9 + a);
    cr_assert_eq(bd_gp_predict(gp, q, X, mu, var, 0, NULL), 0);
    cr_assert_eq(bd_bos_sample_paths(gp, q, X, P, &rng, out, &rank, NULL), 0);
    cr_assert(rank >= 3 && rank <= q, "rank %zu", rank);
    for (size_t a = 0; a < q; a += 10) {
        double m = 0, v = 0;
        for (size_t p = 0; p < P; p++)
            m += out[p * q + a];
        m /= (double)P;
        for (size_t p = 0; p < P; p++)
            v += (out[p * q + a] - m) * (out[p * q + a] - m);
        v /= (double)(P - 1);
        cr_assert_lt(fabs(m - mu[a]), 5 * sqrt(var[a] / (double)P), "epoch %zu: mean %g vs %g", 9 + a, m, mu[a]);
        cr_assert_lt(fabs(v / var[a] - 1), 5 * sqrt(2.0 / (double)P), "epoch %zu: var %g vs %g", 9 + a, v, var[a]);
    }
    bd_gp_free(gp);
    free(out);
}

/* The ziggurat's normals, seen through a GP with no data at one input
 * (a rank-one prior, so every sample is sd times one normal): tail
 * fractions, including beyond the ziggurat's tail start 3.654, within 5
 * standard errors of the normal distribution's. */
Test(bos, ziggurat_normals_have_normal_tails)
{
    size_t P = 1000000;
    double x = 2.0, sd, *z = malloc(P * sizeof *z), m = 0, v = 0;
    const double cut[] = {0.5, 1.0, 2.0, 3.0, 3.6541528853610088, 4.0};
    bd_kernel *k;
    bd_gp *gp;
    bd_rng rng;
    size_t rank;
    cr_assert_not_null(z);
    cr_assert_eq(bd_kernel_new(BD_KERNEL_FREEZE_THAW, 1, NULL, &k, NULL), 0);
    cr_assert_eq(bd_gp_new(k, 1e-3, BD_GP_STD_NONE, &gp, NULL), 0);
    sd = sqrt(bd_kernel_diag(k, &x));
    bd_rng_seed(&rng, 99, 1);
    cr_assert_eq(bd_bos_sample_paths(gp, 1, &x, P, &rng, z, &rank, NULL), 0);
    cr_assert_eq(rank, 1);
    for (size_t i = 0; i < P; i++) {
        z[i] /= sd;
        m += z[i];
        v += z[i] * z[i];
    }
    m /= (double)P;
    v /= (double)P;
    cr_assert_lt(fabs(m), 5 / sqrt((double)P));
    cr_assert_lt(fabs(v - 1), 5 * sqrt(2.0 / (double)P));
    for (size_t j = 0; j < sizeof cut / sizeof cut[0]; j++) {
        size_t hi = 0, lo = 0;
        double p = 0.5 * erfc(cut[j] / sqrt(2.0)), se = sqrt(p * (1 - p) / (double)P);
        for (size_t i = 0; i < P; i++) {
            hi += z[i] > cut[j];
            lo += z[i] < -cut[j];
        }
        cr_assert_lt(fabs((double)hi / (double)P - p), 5 * se + 1e-6, "P(z > %g) = %g vs %g", cut[j],
                     (double)hi / (double)P, p);
        cr_assert_lt(fabs((double)lo / (double)P - p), 5 * se + 1e-6, "P(z < -%g) = %g vs %g", cut[j],
                     (double)lo / (double)P, p);
    }
    bd_gp_free(gp);
    bd_kernel_free(k);
    free(z);
}

static int solve_rc(const double *e, size_t n0, size_t n_max, double incumbent, size_t t, const bd_bos_options *o,
                    const char *field)
{
    bd_bos_input in = {e, n0, n_max, incumbent, t};
    bd_bos_table *tab = (bd_bos_table *)&in; /* must be reset to NULL */
    bd_rng rng;
    bd_err err = {0};
    int rc;
    bd_rng_seed(&rng, 1, 1);
    rc = bd_bos_solve(&in, o, &rng, &tab, &err);
    if (rc)
        cr_assert_null(tab);
    else
        bd_bos_table_free(tab);
    if (field)
        cr_assert_str_eq(err.field, field);
    return rc;
}

Test(bos, bad_inputs_are_einval)
{
    double e[8], bad[8];
    bd_bos_options o;
    worse_curve(e, 8);
    bd_bos_options_default(&o);
    o.n_paths = 100;
    cr_assert_eq(solve_rc(e, 8, 8, 0.1, 1, &o, "n_max"), BD_EINVAL); /* N0 = N */
    cr_assert_eq(solve_rc(e, 8, 5, 0.1, 1, &o, "n_max"), BD_EINVAL); /* N0 > N */
    cr_assert_eq(solve_rc(e, 1, 50, 0.1, 1, &o, "n0"), BD_EINVAL);   /* N0 < 2 */
    cr_assert_eq(solve_rc(e, 0, 50, 0.1, 1, &o, "n0"), BD_EINVAL);
    cr_assert_eq(solve_rc(NULL, 8, 50, 0.1, 1, &o, "errors"), BD_EINVAL);
    const double wrong[] = {0.0, 1.0, -0.2, 1.5, NAN, INFINITY};
    for (size_t j = 0; j < sizeof wrong / sizeof wrong[0]; j++) {
        memcpy(bad, e, sizeof bad);
        bad[3] = wrong[j];
        cr_assert_eq(solve_rc(bad, 8, 50, 0.1, 1, &o, "errors[3]"), BD_EINVAL, "error %g", wrong[j]);
    }
    cr_assert_eq(solve_rc(e, 8, 50, NAN, 1, &o, "incumbent"), BD_EINVAL);
    cr_assert_eq(solve_rc(e, 8, 50, -0.1, 1, &o, "incumbent"), BD_EINVAL);
    cr_assert_eq(solve_rc(e, 8, 50, 1.1, 1, &o, "incumbent"), BD_EINVAL);
    cr_assert_eq(solve_rc(e, 8, 50, 0.1, 0, &o, "iteration"), BD_EINVAL);
    cr_assert_eq(solve_rc(e, 8, 50, 0.1, 100000, &o, "iteration"), BD_EINVAL); /* K1 overflows */
    cr_assert_eq(solve_rc(e, 8, 8 + BD_BOS_MAX_EPOCHS + 1, 0.1, 1, &o, "n_max"), BD_EINVAL);
    {
        bd_bos_options b = o;
        b.grid = 1;
        cr_assert_eq(solve_rc(e, 8, 50, 0.1, 1, &b, "grid"), BD_EINVAL);
        b.grid = BD_BOS_MAX_GRID + 1;
        cr_assert_eq(solve_rc(e, 8, 50, 0.1, 1, &b, "grid"), BD_EINVAL);
        b = o;
        b.gamma = 0;
        cr_assert_eq(solve_rc(e, 8, 50, 0.1, 1, &b, "gamma"), BD_EINVAL);
        b.gamma = 1.01;
        cr_assert_eq(solve_rc(e, 8, 50, 0.1, 1, &b, "gamma"), BD_EINVAL);
        b.gamma = NAN;
        cr_assert_eq(solve_rc(e, 8, 50, 0.1, 1, &b, "gamma"), BD_EINVAL);
        b = o;
        b.n_paths = 0;
        cr_assert_eq(solve_rc(e, 8, 50, 0.1, 1, &b, "n_paths"), BD_EINVAL);
        b = o;
        b.k2 = NAN;
        cr_assert_eq(solve_rc(e, 8, 50, 0.1, 1, &b, "k2"), BD_EINVAL);
        b = o;
        b.cd0 = -1;
        cr_assert_eq(solve_rc(e, 8, 50, 0.1, 1, &b, "cd0"), BD_EINVAL);
        b = o;
        b.noise = 0;
        cr_assert_eq(solve_rc(e, 8, 50, 0.1, 1, &b, "noise"), BD_EINVAL);
        b = o;
        b.s2 = -1;
        cr_assert_eq(solve_rc(e, 8, 50, 0.1, 1, &b, "s2"), BD_EINVAL);
        b = o;
        b.summary = 7;
        cr_assert_eq(solve_rc(e, 8, 50, 0.1, 1, &b, "summary"), BD_EINVAL);
    }
    /* the boundary cases that are fine */
    cr_assert_eq(solve_rc(e, 2, 3, 0.0, 1, &o, NULL), 0, "N0 = 2, N = 3, e* = 0");
    cr_assert_eq(solve_rc(e, 8, 50, 1.0, 1, &o, NULL), 0, "e* = 1: no incumbent yet");
}
