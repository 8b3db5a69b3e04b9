/* rng.c: xoshiro256** (Blackman & Vigna) seeded through splitmix64. */
#include "rng.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

void bd_rng_seed(bd_rng *rng, uint64_t seed, uint64_t stream)
{
    uint64_t x = seed;
    uint64_t mix = splitmix64(&x) ^ (stream * 0xd1342543de82ef95ULL);
    for (int i = 0; i < 4; i++)
        rng->s[i] = splitmix64(&mix);
}

uint64_t bd_rng_u64(bd_rng *rng)
{
    uint64_t *s = rng->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double bd_rng_uniform(bd_rng *rng)
{
    return (bd_rng_u64(rng) >> 11) * 0x1.0p-53;
}

uint64_t bd_rng_below(bd_rng *rng, uint64_t n)
{
    /* Rejection: discard the top partial copy of [0, n) so every value is equally likely. */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do
        x = bd_rng_u64(rng);
    while (x >= limit);
    return x % n;
}

double bd_rng_normal(bd_rng *rng)
{
    double u1 = bd_rng_uniform(rng), u2 = bd_rng_uniform(rng);
    if (u1 < 1e-300)
        u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}
