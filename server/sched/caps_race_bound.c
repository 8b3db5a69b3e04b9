/* caps_race_bound.c: the empirical Bernstein-Serfling width of the
 * caps_race scheduler (equations in caps_race_bound.h). */
#include "caps_race_bound.h"

#include <assert.h>
#include <math.h>

double bd_caps_race_rho(int64_t m, int64_t N)
{
    assert(m >= 1 && N >= 1);
    if (m >= N)
        return 0;
    double dm = (double)m, dn = (double)N;
    return 2 * m <= N ? 1 - (dm - 1) / dn : (1 - dm / dn) * (1 + 1 / dm);
}

double bd_caps_race_width(int64_t m, int64_t N, double var, double range, double d)
{
    assert(d > 0 && d < 1 && var >= 0 && range >= 0);
    if (m >= N)
        return 0;
    double l = log(5 / d), dm = (double)m;
    double kappa = 7.0 / 3.0 + 3 / sqrt(2.0);
    return sqrt(2 * bd_caps_race_rho(m, N) * var * l / dm) + kappa * range * l / dm;
}

double bd_caps_race_delta(double zeta, int64_t n, int64_t m)
{
    assert(n >= 1 && m >= 1);
    return zeta / ((double)n * (double)m * (double)(m + 1));
}
