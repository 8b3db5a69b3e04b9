/* caps_race_bound.h: the confidence bound of the caps_race scheduler
 * (caps_race.c), apart from it so that its vectors are tested directly.
 *
 * The race compares two configs on the same instances, drawn without
 * replacement from the study's finite set of N instances. Its bound is the
 * empirical Bernstein-Serfling inequality (Bardenet and Maillard,
 * "Concentration inequalities for sampling without replacement", Bernoulli
 * 21(3), 2015, Theorem 3): for m values drawn without replacement from a
 * population of N values in a range of width R, with sample mean xbar and
 * sample variance s^2 = (1/m) sum (x - xbar)^2, with probability >= 1 - d
 *
 *   mu - xbar <= s sqrt(2 rho_m ln(5/d) / m) + kappa R ln(5/d) / m,
 *
 *   rho_m = 1 - (m - 1) / N           if m <= N / 2,
 *           (1 - m / N) (1 + 1 / m)   otherwise,
 *   kappa = 7/3 + 3 / sqrt(2),
 *
 * and the same for xbar - mu. It is the sampling-without-replacement form
 * of the empirical Bernstein bound the Bernstein races of CapsAndRuns
 * (Weisz, Gyorgy, Szepesvari, ICML 2019) and of empirical Bernstein
 * stopping (Mnih, Szepesvari, Audibert, ICML 2008) use,
 * s sqrt(2 ln(3/d) / m) + 3 R ln(3/d) / m, which assumes i.i.d. draws and
 * never reaches 0; here the whole population (m = N) gives width 0.
 *
 * Pure functions; no state. */
#ifndef BD_CAPS_RACE_BOUND_H
#define BD_CAPS_RACE_BOUND_H

#include <stdint.h>

/* rho_m above; 0 when m >= N. m >= 1, N >= 1. */
double bd_caps_race_rho(int64_t m, int64_t N);

/* The width above for m of N values with sample variance var (>= 0),
 * range R and failure probability d in (0, 1); 0 when m >= N. */
double bd_caps_race_width(int64_t m, int64_t N, double var, double range, double d);

/* The failure probability each test gets: the race tests each of n
 * challengers once per compared instance count m >= 1, so the union bound
 * over all tests is zeta when test (config, m) gets
 * zeta / (n m (m + 1)) (sum over m of 1 / (m (m + 1)) = 1). */
double bd_caps_race_delta(double zeta, int64_t n, int64_t m);

#endif
