/* pareto.h: Pareto dominance, non-dominated sorting, crowding distance and
 * hypervolume over points of m minimized objectives, stored row-major
 * (point i is points[i*m .. i*m+m-1]). Shared by the engine (a study's
 * front and its hypervolume) and the multi-objective schedulers (NSGA-II,
 * MOTPE, multi-objective ASHA). No knowledge of studies: arrays in,
 * numbers out. Cost is stated per function. */
#ifndef BD_MODEL_PARETO_H
#define BD_MODEL_PARETO_H

#include <stddef.h>

/* 1 when a dominates b: no worse in every objective, better in one. */
int bd_pareto_dominates(const double *a, const double *b, size_t m);

/* Non-dominated sorting (Deb et al. 2002): rank[i] = 0 for the points no
 * other point dominates, 1 for those only rank-0 points dominate, and so
 * on. Returns the number of fronts, or -1 when memory runs out.
 * O(m n^2) time, O(n^2) bits of memory. */
int bd_pareto_rank(const double *points, size_t n, size_t m, int *rank);

/* Crowding distance (NSGA-II) of the k points idx[0..k-1] (one front):
 * dist[j] for idx[j]; the extremes of each objective get +INFINITY.
 * Optuna 3.1's rule (nsgaii._calc_crowding_distance): per objective the
 * points, stable-sorted by it in turn, add (next - previous) / (largest
 * finite - smallest value), an objective where all are equal adds
 * nothing, inf - inf counts 0; so ties order as Optuna's.
 * O(m k log k). Returns 0, or -1 when memory runs out. */
int bd_pareto_crowding(const double *points, size_t m, const size_t *idx, size_t k, double *dist);

/* The hypervolume the n points dominate, bounded by the reference point
 * ref (minimized: a point counts only where it is below ref in every
 * objective). Exact: O(n log n) for m = 2, a sweep in the third objective
 * O(n^2) for m = 3, WFG (While et al. 2012) slicing down to that sweep
 * for m >= 4 (exponential in m at worst, fast on real fronts), at most
 * BD_PARETO_HV_MAX_POINTS points (callers pass a front, not a study's
 * every trial). Dominated points and duplicates may be passed. Returns the
 * volume (>= 0), or -1 when memory runs out or n is over the cap. */
#define BD_PARETO_HV_MAX_POINTS 4096
double bd_pareto_hypervolume(const double *points, size_t n, size_t m, const double *ref);

/* The reference point BoTorch's infer_reference_point derives, for a study
 * that gives none: the front's nadir (its worst value per objective) moved
 * away from the ideal point by 10% of the front's range (by 10% of the
 * nadir's magnitude, or by 1 when that is 0, for an objective the front
 * does not spread). ref has m entries. n >= 1. O(n m).
 * Where it differs from BoTorch: BoTorch takes |nadir| only for a front of
 * one point and a range of 1e-7 for a flat objective of a larger front,
 * which leaves such a front almost no volume; here both take |nadir| (1
 * when 0). Non-finite values (diverged runs) are skipped; an objective with
 * none finite gets +INFINITY. */
void bd_pareto_reference(const double *points, size_t n, size_t m, double *ref);

#endif
