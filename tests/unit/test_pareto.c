/* test_pareto.c: server/model/pareto.c, dominance, non-dominated rank,
 * crowding distance, hypervolume and the inferred reference point.
 *
 * The vectors below were printed by tests/fixtures/pareto/make_vectors.py
 * (Debian's python3-optuna 3.1.0 and numpy; rerun it to check them):
 * hypervolumes by optuna._hypervolume.WFG over the points strictly inside
 * the reference (WFG refuses points outside it; such points bound nothing,
 * so the C function gets them all and must give the same volume), ranks by
 * NSGAIISampler._fast_non_dominated_sort (rank 0 checked against
 * _get_pareto_front_trials_by_trials), crowding by nsgaii's
 * _calc_crowding_distance. The small cases were also worked by hand (said
 * where). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "server/model/pareto.h"

#define N(a, m) (sizeof(a) / sizeof(a[0]) / (m))

/* ---- vectors from make_vectors.py ---- */
/* hv2: n 7, m 2 */
static const double hv2_pts[] = {1.0, 5.0, 2.0, 3.0, 3.0, 2.0, 4.0, 4.0, 2.0, 3.0, 6.0, 1.0, 5.5, 0.5};
static const double hv2_ref[] = {5.0, 6.0};
static const double hv2_hv = 12.0;
/* hv3: n 32, m 3 */
static const double hv3_pts[] = {0.251, 0.046, 0.677, 0.043, 0.116, 0.604, 0.191, 0.669, 0.917, 0.419, 0.332, 0.283, 0.186, 0.317, 0.481, 0.07, 0.705, 0.315, 0.745, 0.398, 0.608, 0.728, 0.422, 0.394, 0.232, 0.442, 0.373, 0.584, 0.1, 0.741, 0.083, 0.126, 0.323, 0.643, 0.999, 0.281, 0.582, 0.873, 0.789, 0.218, 0.347, 0.722, 0.354, 0.461, 0.244, 0.283, 0.826, 0.874, 0.143, 0.28, 0.525, 0.901, 0.602, 0.692, 0.283, 0.277, 0.156, 0.664, 0.943, 0.681, 0.863, 0.912, 0.815, 0.83, 0.027, 0.241, 0.266, 0.38, 0.479, 0.321, 0.437, 0.558, 0.394, 0.578, 0.378, 0.204, 0.364, 0.703, 0.737, 0.683, 0.1, 0.188, 0.515, 0.855, 0.033, 0.192, 0.83, 0.767, 0.527, 0.909, 0.419, 0.332, 0.283, 0.728, 0.422, 0.394};
static const double hv3_ref[] = {0.9, 0.9, 0.9};
static const double hv3_hv = 0.45855033399999995;
/* hv3s: n 40, m 3 */
static const double hv3s_pts[] = {0.1068, 0.9175, 0.3831, 0.0196, 0.4452, 0.8952, 0.1202, 0.3214, 0.9393, 0.5942, 0.6344, 0.4944, 0.2324, 0.478, 0.8471, 0.417, 0.4117, 0.8103, 0.4785, 0.7369, 0.4775, 0.842, 0.5273, 0.1139, 0.8734, 0.3467, 0.342, 0.4692, 0.8571, 0.2127, 0.3984, 0.5196, 0.7558, 0.8246, 0.1713, 0.5392, 0.276, 0.9606, 0.0324, 0.7005, 0.6444, 0.3066, 0.4618, 0.8698, 0.1737, 0.7363, 0.6766, 0.0051, 0.8341, 0.5427, 0.0983, 0.136, 0.9592, 0.248, 0.6507, 0.5459, 0.5278, 0.2182, 0.9535, 0.208, 0.2087, 0.8578, 0.4698, 0.0276, 0.6871, 0.726, 0.2888, 0.5993, 0.7466, 0.3194, 0.6084, 0.7266, 0.02, 0.9425, 0.3337, 0.157, 0.6701, 0.7255, 0.6268, 0.4635, 0.6264, 0.9198, 0.3716, 0.1258, 0.7303, 0.5314, 0.4293, 0.5887, 0.4434, 0.6759, 0.1393, 0.7945, 0.591, 0.3967, 0.8749, 0.2778, 0.0604, 0.8453, 0.5309, 0.2167, 0.9727, 0.0832, 0.4201, 0.3173, 0.8502, 0.9461, 0.1982, 0.2562, 0.5337, 0.7047, 0.4676, 0.076, 0.9034, 0.422, 0.7042, 0.6954, 0.1435, 0.5287, 0.8103, 0.2528};
static const double hv3s_ref[] = {1.1, 1.1, 1.1};
static const double hv3s_hv = 0.5909598663820003;
/* hv4: n 31, m 4 */
static const double hv4_pts[] = {0.7114, 0.5328, 0.2171, 0.4035, 0.9005, 0.4052, 0.1547, 0.0311, 0.2572, 0.1006, 0.7542, 0.5958, 0.5927, 0.5133, 0.0029, 0.6206, 0.2651, 0.2305, 0.1661, 0.9214, 0.9558, 0.2102, 0.1992, 0.05, 0.0014, 0.7288, 0.4364, 0.5276, 0.3869, 0.2836, 0.2579, 0.8386, 0.2055, 0.0854, 0.7006, 0.6779, 0.7584, 0.3275, 0.3674, 0.4273, 0.7938, 0.4756, 0.3339, 0.1795, 0.126, 0.1101, 0.804, 0.5707, 0.0966, 0.3182, 0.7098, 0.621, 0.6122, 0.3951, 0.4614, 0.5062, 0.3091, 0.7742, 0.5523, 0.0017, 0.0304, 0.8888, 0.4328, 0.1479, 0.2534, 0.1315, 0.8963, 0.3393, 0.4834, 0.6355, 0.0798, 0.5968, 0.8866, 0.2469, 0.3724, 0.1193, 0.4272, 0.3164, 0.8444, 0.0655, 0.8356, 0.5304, 0.1136, 0.0873, 0.3778, 0.1345, 0.3334, 0.8533, 0.0572, 0.4926, 0.7971, 0.3447, 0.3143, 0.1129, 0.1582, 0.9292, 0.0467, 0.6229, 0.5403, 0.5638, 0.7688, 1.1661, 0.0123, 0.4599, 1.1367, 0.7503, 0.8298, 0.3216, 0.4755, 1.0451, 0.1813, 0.8541, 0.0324, 0.9237, 0.4289, 0.9741, 0.5252, 0.9418, 0.6964, 0.9042, 0.7114, 0.5328, 0.2171, 0.4035};
static const double hv4_ref[] = {1.0, 1.0, 1.0, 1.0};
static const double hv4_hv = 0.351311950572023;
/* hv5: n 20, m 5 */
static const double hv5_pts[] = {0.053, 0.098, 0.826, 0.878, 0.314, 0.167, 0.633, 0.871, 0.636, 0.315, 0.24, 0.094, 0.355, 0.672, 0.924, 0.522, 0.057, 0.197, 0.679, 0.114, 0.447, 0.184, 0.877, 0.211, 0.114, 0.47, 0.974, 0.14, 0.072, 0.596, 0.934, 0.507, 0.272, 0.854, 0.947, 0.562, 0.529, 0.645, 0.384, 0.437, 0.552, 0.546, 0.901, 0.669, 0.571, 0.717, 0.489, 0.579, 0.494, 0.864, 0.196, 0.809, 0.761, 0.182, 0.629, 0.574, 0.923, 0.105, 0.584, 0.358, 0.65, 0.198, 0.525, 0.84, 0.433, 0.357, 0.163, 0.234, 0.762, 0.075, 0.025, 0.077, 0.306, 0.292, 0.64, 0.627, 0.52, 0.325, 0.455, 0.843, 0.785, 0.378, 0.711, 0.998, 0.759, 0.266, 0.617, 0.507, 0.946, 0.87, 0.417, 0.903, 0.765, 0.683, 0.647, 0.853, 0.437, 0.327, 0.707, 0.754};
static const double hv5_ref[] = {1.0, 1.0, 1.0, 1.0, 1.0};
static const double hv5_hv = 0.2698899514043909;
/* rk2: 4 fronts */
static const double rk2_pts[] = {1.0, 4.0, 2.0, 2.0, 4.0, 1.0, 2.0, 2.0, 3.0, 3.0, 2.0, 4.0, 5.0, 5.0, 4.0, 1.0, 1.0, 5.0, 3.0, 2.0};
static const int rk2_rank[] = {0, 0, 0, 0, 2, 1, 3, 0, 1, 1};
/* rk3: 6 fronts */
static const double rk3_pts[] = {1.0, 2.0, 1.0, 1.0, 0.0, 3.0, 0.0, 3.0, 0.0, 3.0, 3.0, 2.0, 0.0, 1.0, 3.0, 1.0, 1.0, 0.0, 2.0, 2.0, 3.0, 2.0, 2.0, 3.0, 1.0, 1.0, 0.0, 1.0, 1.0, 2.0, 2.0, 1.0, 0.0, 0.0, 2.0, 1.0, 1.0, 1.0, 3.0, 3.0, 0.0, 1.0, 1.0, 0.0, 2.0, 2.0, 0.0, 3.0, 2.0, 3.0, 2.0, 0.0, 3.0, 0.0, 1.0, 2.0, 3.0, 0.0, 3.0, 0.0, 1.0, 2.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 3.0, 2.0, 1.0, 2.0, 0.0, 2.0, 1.0};
static const int rk3_rank[] = {2, 1, 1, 5, 1, 1, 5, 5, 1, 2, 2, 1, 3, 0, 0, 2, 4, 1, 4, 1, 2, 0, 1, 3, 1};
static const double cd2_pts[] = {1.0, 9.0, 2.0, 7.0, 4.0, 4.0, 4.0, 4.0, 6.0, 3.0, 9.0, 1.0};
static const double cd2_dist[] = {INFINITY, 1.0, 0.375, 0.625, 1.0, INFINITY};
static const double cd3_pts[] = {1.0, 5.0, 2.0, 2.0, 4.0, 2.0, 3.0, 3.0, 2.0, 4.0, 2.0, 2.0, INFINITY, 1.0, 2.0};
static const double cd3_dist[] = {INFINITY, 1.1666666666666665, 1.1666666666666665, INFINITY, INFINITY};

/* ---- dominance ---- */

Test(pareto, dominance_needs_one_strictly_better)
{
    const double a[2] = {1, 2}, b[2] = {1, 3}, c[2] = {0, 4};
    cr_expect(bd_pareto_dominates(a, b, 2));
    cr_expect(!bd_pareto_dominates(b, a, 2));
    cr_expect(!bd_pareto_dominates(a, a, 2), "equal points do not dominate");
    cr_expect(!bd_pareto_dominates(a, c, 2) && !bd_pareto_dominates(c, a, 2), "a trade-off");
    const double inf[2] = {INFINITY, INFINITY};
    cr_expect(bd_pareto_dominates(a, inf, 2), "a diverged run (+inf) is dominated");
    cr_expect(!bd_pareto_dominates(inf, inf, 2));
}

/* ---- non-dominated rank ---- */

static void expect_ranks(const double *pts, size_t n, size_t m, const int *want, int want_fronts)
{
    int *rank = malloc(n * sizeof *rank);
    int fronts = bd_pareto_rank(pts, n, m, rank);
    cr_expect_eq(fronts, want_fronts);
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(rank[i], want[i], "point %zu: rank %d, Optuna's %d", i, rank[i], want[i]);
    free(rank);
}

Test(pareto, rank_2d_with_ties_and_duplicates_as_optuna)
{
    /* by hand: rank 0 (1,4), (2,2) twice, (4,1) twice (duplicates share a
     * rank); 1 (2,4), (1,5), (3,2); 2 (3,3), behind (3,2); 3 (5,5) */
    expect_ranks(rk2_pts, N(rk2_pts, 2), 2, rk2_rank, 4);
}

Test(pareto, rank_3d_grid_as_optuna)
{
    expect_ranks(rk3_pts, N(rk3_pts, 3), 3, rk3_rank, 6);
}

Test(pareto, rank_of_nothing_and_of_one)
{
    int r = 7;
    cr_expect_eq(bd_pareto_rank(NULL, 0, 2, &r), 0);
    const double p[3] = {1, 2, 3};
    cr_expect_eq(bd_pareto_rank(p, 1, 3, &r), 1);
    cr_expect_eq(r, 0);
}

Test(pareto, rank_of_a_chain_past_64_points)
{
    /* 150 points on a line, each dominating the next: 150 fronts (the bit
     * matrix spans three words a row) */
    enum { n = 150 };
    double p[2 * n];
    int rank[n];
    for (int i = 0; i < n; i++)
        p[2 * i] = p[2 * i + 1] = n - i; /* the last is the best */
    cr_assert_eq(bd_pareto_rank(p, n, 2, rank), n);
    for (int i = 0; i < n; i++)
        cr_expect_eq(rank[i], n - 1 - i);
}

/* ---- crowding ---- */

static void expect_crowding(const double *pts, size_t n, size_t m, const double *want)
{
    size_t *idx = malloc(n * sizeof *idx);
    double *dist = malloc(n * sizeof *dist);
    for (size_t i = 0; i < n; i++)
        idx[i] = i;
    cr_assert_eq(bd_pareto_crowding(pts, m, idx, n, dist), 0);
    for (size_t i = 0; i < n; i++) {
        if (isinf(want[i]))
            cr_expect(isinf(dist[i]) && dist[i] > 0, "point %zu: %g, want inf", i, dist[i]);
        else
            cr_expect(fabs(dist[i] - want[i]) < 1e-12, "point %zu: %.17g, Optuna's %.17g", i, dist[i], want[i]);
    }
    free(idx);
    free(dist);
}

Test(pareto, crowding_2d_front_with_a_duplicate_as_optuna)
{
    /* by hand: range 8 in both; (2,7): (4-1)/8 + (9-4)/8 = 1; the twin
     * (4,4)s split by the stable order: (4-2)/8 + (4-3)/8 = 0.375 and
     * (6-4)/8 + (7-4)/8 = 0.625 */
    expect_crowding(cd2_pts, N(cd2_pts, 2), 2, cd2_dist);
}

Test(pareto, crowding_skips_a_flat_objective_and_takes_inf)
{
    /* the third objective is 2 everywhere (skipped); the first has +inf:
     * its finite range is 1..4 */
    expect_crowding(cd3_pts, N(cd3_pts, 3), 3, cd3_dist);
}

Test(pareto, crowding_of_a_subset_by_idx)
{
    /* idx picks cd2's points 5, 1, 0 (in that order): dist follows idx */
    const size_t idx[3] = {5, 1, 0};
    double dist[3];
    cr_assert_eq(bd_pareto_crowding(cd2_pts, 2, idx, 3, dist), 0);
    cr_expect(isinf(dist[0]) && isinf(dist[2]));
    cr_expect(fabs(dist[1] - 2.0) < 1e-12, "(2,7) between (1,9) and (9,1): 8/8 + 8/8, got %g", dist[1]);
}

/* ---- hypervolume ---- */

static void expect_hv(const double *pts, size_t n, size_t m, const double *ref, double want)
{
    double got = bd_pareto_hypervolume(pts, n, m, ref);
    cr_expect(fabs(got - want) <= 1e-12 * fmax(1, fabs(want)), "hypervolume %.17g, Optuna's WFG %.17g", got, want);
    /* the order of the points does not matter: reversed */
    double *rev = malloc(n * m * sizeof *rev);
    for (size_t i = 0; i < n; i++)
        memcpy(rev + i * m, pts + (n - 1 - i) * m, m * sizeof *rev);
    double again = bd_pareto_hypervolume(rev, n, m, ref);
    cr_expect(fabs(again - want) <= 1e-12 * fmax(1, fabs(want)), "reversed: %.17g", again);
    free(rev);
}

Test(pareto, hypervolume_by_hand)
{
    /* 2-D: (1,2) and (2,1) under (3,3): 2x1 + 1x1 = 3 */
    const double a[] = {1, 2, 2, 1}, r2[] = {3, 3};
    expect_hv(a, 2, 2, r2, 3);
    /* 3-D: (0,1,1) and (1,0,1) under (2,2,2): 2 + 2 - 1 = 3 */
    const double b[] = {0, 1, 1, 1, 0, 1}, r3[] = {2, 2, 2};
    expect_hv(b, 2, 3, r3, 3);
    /* 3-D: three unit corners under (2,2,2): 8 - 1 (the shared corner box
     * [1,2]^3 counted once) ... by inclusion-exclusion: each box 2x2x1 = 4,
     * pairwise 2, triple 1: 12 - 6 + 1 = 7 */
    const double c[] = {0, 0, 1, 0, 1, 0, 1, 0, 0};
    expect_hv(c, 3, 3, r3, 7);
    /* 4-D: the same with one more objective at 1 under 2: boxes 2x2x1x1 = 4,
     * pairwise 2, triple 1 again */
    const double d[] = {0, 0, 1, 1, 0, 1, 0, 1, 1, 0, 0, 1}, r4[] = {2, 2, 2, 2};
    expect_hv(d, 3, 4, r4, 7);
    /* 1-D */
    const double e[] = {0.5, 0.2, 0.9}, r1[] = {1};
    expect_hv(e, 3, 1, r1, 0.8);
}

Test(pareto, hypervolume_2d_dominated_duplicate_and_outside_points)
{
    /* by hand: (1,5) (2,3) (3,2) under (5,6): 4 + 6 + 2 = 12; (4,4) is
     * dominated, (2,3) repeated, (6,1) and (5.5,0.5) lie beyond x = 5 */
    expect_hv(hv2_pts, N(hv2_pts, 2), 2, hv2_ref, hv2_hv);
    cr_expect_eq(hv2_hv, 12.0);
}

Test(pareto, hypervolume_3d_random_with_duplicates_as_optuna)
{
    expect_hv(hv3_pts, N(hv3_pts, 3), 3, hv3_ref, hv3_hv);
}

Test(pareto, hypervolume_3d_sphere_front_as_optuna)
{
    expect_hv(hv3s_pts, N(hv3s_pts, 3), 3, hv3s_ref, hv3s_hv);
}

Test(pareto, hypervolume_4d_sphere_front_as_optuna)
{
    expect_hv(hv4_pts, N(hv4_pts, 4), 4, hv4_ref, hv4_hv);
}

Test(pareto, hypervolume_5d_random_as_optuna)
{
    expect_hv(hv5_pts, N(hv5_pts, 5), 5, hv5_ref, hv5_hv);
}

Test(pareto, hypervolume_of_points_on_or_past_the_reference_is_zero)
{
    const double p[] = {1, 0, 0, 1, 2, 2, INFINITY, INFINITY}, r[] = {1, 1};
    cr_expect_eq(bd_pareto_hypervolume(p, 4, 2, r), 0.0);
    cr_expect_eq(bd_pareto_hypervolume(p, 0, 2, r), 0.0);
}

Test(pareto, hypervolume_refuses_more_than_the_cap)
{
    size_t n = BD_PARETO_HV_MAX_POINTS + 1;
    double *p = calloc(n * 2, sizeof *p);
    const double r[] = {1, 1};
    cr_expect_eq(bd_pareto_hypervolume(p, n, 2, r), -1);
    cr_expect_eq(bd_pareto_hypervolume(p, n - 1, 2, r), 1.0, "all at the origin: the unit square");
    free(p);
}

Test(pareto, hypervolume_3d_sweep_agrees_with_wfg_on_a_lifted_front)
{
    /* a 4th objective constant at 0 under 1 multiplies the 3-D volume by 1:
     * the 3-D sweep and the 4-D WFG path must agree on the same front */
    size_t n = N(hv3_pts, 3);
    double *p4 = malloc(n * 4 * sizeof *p4);
    for (size_t i = 0; i < n; i++) {
        memcpy(p4 + 4 * i, hv3_pts + 3 * i, 3 * sizeof *p4);
        p4[4 * i + 3] = 0;
    }
    const double r4[] = {0.9, 0.9, 0.9, 1.0};
    expect_hv(p4, n, 4, r4, hv3_hv);
    free(p4);
}

/* ---- reference point ---- */

Test(pareto, reference_is_the_nadir_plus_a_tenth_of_the_range)
{
    /* by hand: nadir (3, 5), ideal (1, 2): ref (3 + 0.2, 5 + 0.3) */
    const double p[] = {1, 5, 2, 3, 3, 2};
    double ref[2];
    bd_pareto_reference(p, 3, 2, ref);
    cr_expect(fabs(ref[0] - 3.2) < 1e-12 && fabs(ref[1] - 5.3) < 1e-12, "ref (%g, %g)", ref[0], ref[1]);
    cr_expect_gt(bd_pareto_hypervolume(p, 3, 2, ref), 0, "every front point bounds some volume");
}

Test(pareto, reference_of_a_flat_objective_uses_the_nadirs_magnitude)
{
    /* one point (-4, 0): BoTorch's single-point rule: -4 + 0.4; 0 + 0.1 (1 when 0) */
    const double p[] = {-4, 0};
    double ref[2];
    bd_pareto_reference(p, 1, 2, ref);
    cr_expect(fabs(ref[0] - -3.6) < 1e-12 && fabs(ref[1] - 0.1) < 1e-12, "ref (%g, %g)", ref[0], ref[1]);
    /* two points, the second objective flat at 10: 10 + 1 */
    const double q[] = {1, 10, 2, 10};
    bd_pareto_reference(q, 2, 2, ref);
    cr_expect(fabs(ref[0] - 2.1) < 1e-12 && fabs(ref[1] - 11) < 1e-12, "ref (%g, %g)", ref[0], ref[1]);
}

Test(pareto, reference_skips_diverged_values)
{
    const double p[] = {1, 1, 3, 2, INFINITY, INFINITY};
    double ref[2];
    bd_pareto_reference(p, 3, 2, ref);
    cr_expect(fabs(ref[0] - 3.2) < 1e-12 && fabs(ref[1] - 2.1) < 1e-12, "ref (%g, %g)", ref[0], ref[1]);
    const double all_inf[] = {INFINITY, INFINITY};
    bd_pareto_reference(all_inf, 1, 2, ref);
    cr_expect(isinf(ref[0]) && isinf(ref[1]));
    cr_expect_eq(bd_pareto_hypervolume(all_inf, 1, 2, ref), 0.0, "diverged runs bound no volume");
}
