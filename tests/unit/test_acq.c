/* test_acq.c: the acquisition optimiser (server/model/acq.c) and the GP-UCB
 * multipliers and log EI of docs/ALGORITHMS.md section 8. Known optima: a
 * smooth bowl in 4-D, an integer optimum, a categorical choice that switches
 * a conditional coordinate on; every point scored is on the grid with inactive coordinates
 * at 0.5; the search is deterministic given the rng and stops on a scoring
 * error. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "server/model/acq.h"

Test(acq, ucb_multiplier_vectors)
{
    cr_assert_float_eq(bd_acq_ucb_multiplier_code(4, 1), 0.5545177, 5e-8);
    cr_assert_float_eq(bd_acq_ucb_multiplier_code(4, 10), 2.3965858, 5e-8);
    /* beta_t = 2 log(|D| t^2 pi^2 / (6 delta)): 0 when the argument is 1 */
    cr_assert_float_eq(bd_acq_ucb_beta_paper(6.0 / (M_PI * M_PI), 1, 1), 0.0, 1e-14);
    cr_assert_float_eq(bd_acq_ucb_beta_paper(100, 10, 0.1), 2 * log(100 * 100 * M_PI * M_PI / 0.6), 1e-12);
}

typedef struct bowl {
    size_t d;
    double c[8];
    size_t calls, points;
} bowl;

static int score_bowl(void *ctx, size_t n, const double *U, double *out)
{
    bowl *b = ctx;
    b->calls++;
    b->points += n;
    for (size_t i = 0; i < n; i++) {
        out[i] = 0;
        for (size_t j = 0; j < b->d; j++)
            out[i] -= (U[i * b->d + j] - b->c[j]) * (U[i * b->d + j] - b->c[j]);
    }
    return 0;
}

Test(acq, finds_the_top_of_a_bowl)
{
    bd_acq_dim dims[4] = {{BD_ACQ_CONTINUOUS, 0, 0, 0, 0},
                          {BD_ACQ_CONTINUOUS, 0, 0, 0, 0},
                          {BD_ACQ_CONTINUOUS, 0, 0, 0, 0},
                          {BD_ACQ_CONTINUOUS, 0, 0, 0, 0}};
    bowl b = {4, {0.123, 0.77, 0.5, 0.01}, 0, 0};
    bd_acq_problem p = {4, dims, score_bowl, &b, NULL, NULL};
    double u[4], s, check;
    bd_rng rng;
    bd_rng_seed(&rng, 1, 2);
    cr_assert_eq(bd_acq_maximize(&p, NULL, &rng, u, &s, NULL), 0);
    for (int j = 0; j < 4; j++)
        cr_assert(fabs(u[j] - b.c[j]) < 2e-3, "coordinate %d: %g, want %g", j, u[j], b.c[j]);
    cr_assert_eq(score_bowl(&b, 1, u, &check), 0);
    cr_assert_eq(s, check); /* the score returned is the point's */
    /* bounded work: candidates + local polls */
    cr_assert_lt(b.points, 2048 + 4 * 24 * 8 + 2);
}

Test(acq, deterministic_given_the_rng)
{
    bd_acq_dim dims[2] = {{BD_ACQ_CONTINUOUS, 0, 0, 0, 0}, {BD_ACQ_CONTINUOUS, 0, 0, 0, 0}};
    bowl b = {2, {0.3, 0.6}, 0, 0};
    bd_acq_problem p = {2, dims, score_bowl, &b, NULL, NULL};
    bd_acq_options o;
    double u1[2], u2[2];
    bd_rng r1, r2;
    bd_acq_options_default(&o);
    o.n_candidates = 64;
    o.max_polls = 3; /* stop early, so the starting candidates matter */
    bd_rng_seed(&r1, 9, 9);
    bd_rng_seed(&r2, 9, 9);
    cr_assert_eq(bd_acq_maximize(&p, &o, &r1, u1, NULL, NULL), 0);
    cr_assert_eq(bd_acq_maximize(&p, &o, &r2, u2, NULL, NULL), 0);
    cr_assert(memcmp(u1, u2, sizeof u1) == 0);
}

/* Coordinate 0: categorical {a, b, c}; 1: integer 1..10; 2: continuous,
 * active only when 0 is c; 3: continuous. Score: best with c, 7, 0.8, 0.25. */
typedef struct mixed {
    size_t off_grid; /* points that were not projected */
} mixed;

static void mixed_active(void *ctx, const double *u, unsigned char *mask)
{
    (void)ctx;
    mask[0] = mask[1] = mask[3] = 1;
    mask[2] = u[0] > 2.0 / 3.0;
}

static int score_mixed(void *ctx, size_t n, const double *U, double *out)
{
    mixed *mx = ctx;
    for (size_t i = 0; i < n; i++) {
        const double *u = U + 4 * i;
        int choice = (int)floor(u[0] * 3), v = (int)lround(1 + u[1] * 9);
        double s = -(v - 7) * (v - 7) * 0.1 - (u[3] - 0.25) * (u[3] - 0.25);
        if (fabs(u[0] - (choice + 0.5) / 3.0) > 1e-12 || fabs(1 + u[1] * 9 - v) > 1e-9)
            mx->off_grid++;
        if (choice == 2) {
            s += 1 - (u[2] - 0.8) * (u[2] - 0.8);
        } else if (u[2] != 0.5) {
            mx->off_grid++; /* inactive but not held at 0.5 */
        }
        out[i] = s;
    }
    return 0;
}

Test(acq, mixed_conditional_space)
{
    bd_acq_dim dims[4] = {{BD_ACQ_CATEGORICAL, 3, 0, 0, 0},
                          {BD_ACQ_INTEGER, 0, 1, 10, 0},
                          {BD_ACQ_CONTINUOUS, 0, 0, 0, 0},
                          {BD_ACQ_CONTINUOUS, 0, 0, 0, 0}};
    mixed mx = {0};
    bd_acq_problem p = {4, dims, score_mixed, &mx, mixed_active, NULL};
    bd_acq_options o;
    double u[4], start[4] = {0.1, 0.0, 0.3, 0.9}; /* choice a, 1, (inactive), 0.9 */
    bd_rng rng;
    bd_acq_options_default(&o);
    o.n_candidates = 16; /* few candidates: the local search must do the work */
    o.starts = start;
    o.n_starts = 1;
    bd_rng_seed(&rng, 2, 2);
    cr_assert_eq(bd_acq_maximize(&p, &o, &rng, u, NULL, NULL), 0);
    cr_assert_eq(mx.off_grid, 0);
    cr_assert_float_eq(u[0], 2.5 / 3, 1e-12);
    cr_assert_float_eq(u[1], 6.0 / 9, 1e-12);
    cr_assert(fabs(u[2] - 0.8) < 2e-3, "conditional coordinate %g", u[2]);
    cr_assert(fabs(u[3] - 0.25) < 2e-3);
}

Test(acq, project_snaps_to_the_grid)
{
    bd_acq_dim dims[4] = {{BD_ACQ_CATEGORICAL, 4, 0, 0, 0},
                          {BD_ACQ_INTEGER, 0, 1, 100, 1},
                          {BD_ACQ_CONTINUOUS, 0, 0, 0, 0},
                          {BD_ACQ_INTEGER, 0, 5, 5, 0}};
    bd_acq_problem p = {4, dims, score_bowl, NULL, mixed_active, NULL};
    double u[4] = {0.3, 0.5, 1.7, 0.2};
    unsigned char mask[4];
    bd_acq_project(&p, u, mask);
    cr_assert_float_eq(u[0], 1.5 / 4, 1e-15);                /* choice 1 of 4 */
    cr_assert_float_eq(u[1], log(10.0) / log(100.0), 1e-12); /* 10 on the log scale */
    cr_assert_eq(u[2], 0.5);                                 /* inactive (choice < 2/3) */
    cr_assert_eq(mask[2], 0);
    cr_assert_eq(u[3], 0.5); /* low == high */
    u[0] = 0.9;
    u[2] = -3;
    bd_acq_project(&p, u, mask);
    cr_assert_eq(mask[2], 1);
    cr_assert_eq(u[2], 0.0);
}

static int score_fail(void *ctx, size_t n, const double *U, double *out)
{
    (void)ctx;
    (void)n;
    (void)U;
    (void)out;
    return BD_EINTERNAL;
}

Test(acq, rejects_bad_problems_and_stops_on_errors)
{
    bd_acq_dim dims[1] = {{BD_ACQ_INTEGER, 0, 5, 1, 0}};
    bd_acq_problem p = {1, dims, score_bowl, NULL, NULL, NULL};
    double u[1];
    bd_rng rng;
    bd_err err;
    bd_rng_seed(&rng, 1, 1);
    cr_assert_eq(bd_acq_maximize(&p, NULL, &rng, u, NULL, &err), BD_EINVAL);
    dims[0] = (bd_acq_dim){BD_ACQ_INTEGER, 0, 0, 5, 1}; /* log needs low > 0 */
    cr_assert_eq(bd_acq_check(&p, &err), BD_EINVAL);
    dims[0] = (bd_acq_dim){BD_ACQ_CATEGORICAL, 0, 0, 0, 0};
    cr_assert_eq(bd_acq_check(&p, &err), BD_EINVAL);
    p.d = 41;
    cr_assert_eq(bd_acq_check(&p, &err), BD_EINVAL);
    p.d = 1;
    dims[0] = (bd_acq_dim){BD_ACQ_CONTINUOUS, 0, 0, 0, 0};
    p.score = score_fail;
    cr_assert_eq(bd_acq_maximize(&p, NULL, &rng, u, NULL, &err), BD_EINTERNAL);
}

/* Past Sobol's 40 dimensions the candidates get Latin hypercube columns:
 * every coordinate, Sobol or not, puts exactly one of n = 256 points in each
 * stratum [k/n, (k+1)/n), so no coordinate is left unexplored. */
Test(acq, candidates_stay_stratified_past_forty_dimensions)
{
    enum { D = 57, N = 256 };
    static double U[N * D];
    int differ = 0;
    bd_rng rng;
    bd_rng_seed(&rng, 7, 1);
    cr_assert_eq(bd_acq_candidates(D, N, &rng, U, NULL), 0);
    for (size_t j = 0; j < D; j++) {
        unsigned char seen[N] = {0};
        for (size_t i = 0; i < N; i++) {
            double u = U[i * D + j];
            cr_assert(u >= 0 && u < 1, "coordinate %zu point %zu: %g", j, i, u);
            size_t k = (size_t)(u * N);
            cr_assert_eq(seen[k], 0, "coordinate %zu: stratum %zu holds two points", j, k);
            seen[k] = 1;
        }
    }
    for (size_t i = 0; i < N; i++) /* two Latin columns are not copies */
        differ |= (size_t)(U[i * D + 45] * N) != (size_t)(U[i * D + 46] * N);
    cr_assert(differ);
    cr_assert_eq(bd_acq_candidates(BD_ACQ_MAX_DIM + 1, N, &rng, U, NULL), BD_EINVAL);
}

static int score_wide_bowl(void *ctx, size_t n, const double *U, double *out)
{
    const size_t *d = ctx;
    for (size_t i = 0; i < n; i++) {
        out[i] = 0;
        for (size_t j = 0; j < *d; j++)
            out[i] -= (U[i * *d + j] - 0.3) * (U[i * *d + j] - 0.3);
    }
    return 0;
}

/* A 60-coordinate bowl: the optimiser takes it, and its compass search
 * improves on the best of the same candidates. */
Test(acq, searches_sixty_coordinates)
{
    enum { D = 60 };
    size_t d = D;
    bd_acq_dim dims[D];
    bd_acq_problem p = {D, dims, score_wide_bowl, &d, NULL, NULL};
    bd_acq_options o;
    double u[D], searched, candidates_only;
    bd_rng rng;
    for (size_t j = 0; j < D; j++)
        dims[j] = (bd_acq_dim){BD_ACQ_CONTINUOUS, 0, 0, 0, 0};
    bd_acq_options_default(&o);
    o.n_local = 0;
    bd_rng_seed(&rng, 3, 4);
    cr_assert_eq(bd_acq_maximize(&p, &o, &rng, u, &candidates_only, NULL), 0);
    bd_rng_seed(&rng, 3, 4);
    cr_assert_eq(bd_acq_maximize(&p, NULL, &rng, u, &searched, NULL), 0);
    cr_assert_gt(searched, candidates_only + 0.1, "search %g, best candidate %g", searched, candidates_only);
}

/* log EI against 50-digit values (mpmath: log(sd) + log(npdf(z) + z ncdf(z)),
 * z = (best - mu) / sd), from near the incumbent to 1000 sd beyond it,
 * where plain EI underflows to 0. */
Test(acq, log_ei_matches_high_precision_values_far_into_the_tail)
{
    static const struct {
        double best, mu, sd, want;
    } v[] = {
        {0.0, 0.0, 1.0, -0.91893853320467274},    {1.0, 0.5, 0.2, -0.69234584684193586},
        {0.0, 1.0, 0.5, -5.4619307044770595},     {0.0, 10.0, 1.0, -55.553122036122356},
        {0.0, 40.0, 1.0, -808.29856835661996},    {0.0, 1000.0, 1.0, -500014.73445209116},
        {2.0, -1.0, 0.3, 1.0986122886681097},
        /* far on the good side (z = 40, 100): log(best - mu); GSL's default
         * handler (on in this binary) aborted here before */
        {4.0, 0.0, 0.1, 1.3862943611198906},      {1.0, 0.0, 0.01, 0.0},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        double got = bd_acq_log_ei(v[i].best, v[i].mu, v[i].sd);
        cr_expect(fabs(got - v[i].want) <= 1e-9 * fmax(1, fabs(v[i].want)), "case %zu: %.17g, want %.17g", i, got,
                  v[i].want);
    }
    cr_expect(isinf(bd_acq_log_ei(0, 1, 0)) && bd_acq_log_ei(0, 1, 0) < 0, "no variance, no improvement");
    cr_expect_eq(bd_acq_log_ei(INFINITY, 2.5, 1), -2.5, "no incumbent: the lowest mean wins");
    /* monotone: lower mean, or more spread below the incumbent, is better */
    cr_expect_gt(bd_acq_log_ei(0, 5, 1), bd_acq_log_ei(0, 6, 1));
    cr_expect_gt(bd_acq_log_ei(0, 5, 2), bd_acq_log_ei(0, 5, 1));
}
