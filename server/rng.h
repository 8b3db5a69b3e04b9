/* rng.h: the deterministic random stream schedulers draw from.
 *
 * A stream is fixed by (seed, stream id): the engine seeds one per suggestion
 * with (study seed, number of trials created so far), so a study replayed
 * from storage draws the same numbers. xoshiro256** seeded through splitmix64. */
#ifndef BD_RNG_H
#define BD_RNG_H

#include <stdint.h>

typedef struct bd_rng {
    uint64_t s[4]; /* xoshiro256** state; never all zero */
} bd_rng;

void bd_rng_seed(bd_rng *rng, uint64_t seed, uint64_t stream);
uint64_t bd_rng_u64(bd_rng *rng);
/* Uniform in [0, 1). */
double bd_rng_uniform(bd_rng *rng);
/* Uniform integer in [0, n), n > 0, without modulo bias. */
uint64_t bd_rng_below(bd_rng *rng, uint64_t n);
/* Standard normal (Box-Muller). */
double bd_rng_normal(bd_rng *rng);

#endif
