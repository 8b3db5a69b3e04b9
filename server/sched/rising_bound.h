/* rising_bound.h: the arithmetic of Rising Bandits (Li et al., AAAI 2020,
 * Algorithm 1 and "Rising Bandits with Loose Concavity"; docs/ALGORITHMS.md
 * section 4), apart from the scheduler so that the published vector can be
 * tested on it directly: rewards in [0, 1], the smooth growth rate, the
 * bounds on an arm's final reward and the elimination rule.
 *
 * Pure functions of their arguments; no state, no allocation visible to
 * the caller. Used by rising_bandits.c. */
#ifndef BD_RISING_BOUND_H
#define BD_RISING_BOUND_H

#include <stddef.h>

#include "sched.h"

/* The reward in [0, 1] of a loss as the engine delivers it (negated for a
 * maximised objective). v = the user's value (loss, or -loss when
 * def->maximize). With def->has_bounds [lo, hi]: (v - lo)/(hi - lo) when
 * maximising, (hi - v)/(hi - lo) when minimising; without bounds a
 * maximised value is taken as already in [0, 1]. Clamped to [0, 1]. A
 * non-finite loss (diverged: +INFINITY) is 0. The caller guarantees a
 * minimised objective has bounds (create() rejects it otherwise). */
double bd_rising_reward(const bd_study_def *def, double loss);

/* The smooth growth rate w(t) = (y(t) - y(t - C)) / C of the best-so-far
 * rewards y[0..t-1] (y[i] after pull i + 1), the paper's form; NAN when
 * t <= C (y(t - C) does not exist yet). */
double bd_rising_growth(const double *y, size_t t, size_t C);

/* u = min(y + w * horizon, 1), the upper bound on the final reward
 * (the paper's Inequality 9). w <= 0 gives y whatever the horizon (so an
 * infinite horizon does not make 0 * inf). */
double bd_rising_upper(double y, double w, double horizon);

/* The record-tail bound (not in the paper; rising_bandits' option
 * upper_bound "tail"). r[0..n-1] are an arm's rewards (every finished pull
 * that returned one), k the number of top spacings used (>= 1). With
 * r(1) >= r(2) >= ... the sorted rewards and k' = min(k, n - 1):
 *   sigma = (r(1) - r(k' + 1)) / H(k'),  H(k') = 1 + 1/2 + ... + 1/k',
 * the scale of an exponential-type (Gumbel-domain) upper tail estimated
 * from its top spacings (spacing i has mean sigma / i there). Returns
 * sigma, or NAN when n < 2. */
double bd_rising_tail_scale(const double *r, size_t n, size_t k);

/* The upper bound that the tail scale gives: the best of n draws of such
 * a tail rises by sigma ln((n + h) / n) in expectation over h more draws;
 * sigma is taken at its one-standard-error upper value for k' spacings,
 * sigma (1 + 1/sqrt(k')). Returns min(y + (1 + 1/sqrt(k')) sigma
 * ln((n + h) / n), 1); y when sigma is NAN or not > 0, h is not > 0 or
 * n is 0 (an infinite horizon with sigma > 0 gives 1). */
double bd_rising_tail_upper(double y, double sigma, size_t k_used, size_t n, double h);

/* The expected rise of a study's best reward Y from one more draw of an
 * arm whose best is y, under the same tail (a draw exceeds x >= y with
 * probability (1/n) exp(-(x - y) / s), s = sigma (1 + 1/sqrt(k')) as in
 * bd_rising_tail_upper): E[(R - Y)+] = (s / n) exp(-(Y - y) / s) for
 * Y >= y (Y < y is taken as Y = y). 0 when sigma is NAN or not > 0, or n
 * or k_used is 0. rising_bandits' allocation "ei" pulls the arm where it
 * is largest. */
double bd_rising_tail_ei(double y, double Y, double sigma, size_t k_used, size_t n);

/* A Thompson draw of an arm's final reward (rising_bandits' allocation
 * "thompson"), on the same tail model at its point estimate sigma: the best
 * of h more draws, each exceeding y + x with probability (1/n) exp(-x /
 * sigma), has P(rise <= x) = (1 - exp(-x / sigma) / n)^h for x >= 0, so
 * for u01 in [0, 1) the inverse is
 *   rise = max(0, -sigma ln(n (1 - u01^(1/h)))).
 * Returns min(y + rise, upper), upper being the arm's bound u (so a draw
 * lies in [l, u], as the bounds assert). Without a tail (sigma NAN or not
 * > 0, n 0) the draw is uniform on [y, upper]: nothing says where between
 * the bounds the final reward falls. h not > 0 gives y; an infinite h
 * gives upper. */
double bd_rising_tail_sample(double y, double upper, double sigma, size_t n, double h, double u01);

/* One arm's bounds on its final reward. */
typedef struct bd_rising_bound {
    double lower; /* l = y(t) */
    double upper; /* u; 1 while not ready */
    int ready;    /* the growth rate is known: the arm may be eliminated */
} bd_rising_bound;

/* Algorithm 1's elimination step over n arms: alive[k] is 1 for a
 * surviving arm. Surviving arms are considered in ascending order of upper
 * (ties: lower index); a ready arm j is eliminated when another
 * still-surviving arm i has lower_i >= upper_j (strict: >). Each
 * elimination sets alive[j] = 0 and by[j] = the surviving arm with the
 * largest lower bound at that moment (ties: lower index). Because
 * upper >= lower, the last surviving arm is never eliminated. Returns the
 * number of arms eliminated. */
size_t bd_rising_eliminate(size_t n, const bd_rising_bound *b, int strict, int *alive, size_t *by);

#endif
