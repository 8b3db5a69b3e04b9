/* sobol.h: the Sobol low-discrepancy sequence in up to 40 dimensions, with
 * an optional random digital shift, for the acquisition optimiser's
 * candidate points.
 *
 * Direction numbers: S. Joe and F. Y. Kuo, "Constructing Sobol sequences
 * with better two-dimensional projections", SIAM J. Sci. Comput. 30 (2008),
 * file new-joe-kuo-6.21201 (https://web.maths.unsw.edu.au/~fkuo/sobol/),
 * rows d = 2..40; dimension 1 is van der Corput's sequence. Points are
 * generated in Gray-code order (Antonov and Saleev), 32 bits per coordinate,
 * so the first point is the origin and the first 2^k points of every
 * coordinate are exactly the k-bit grid {i / 2^k}.
 *
 * Invariants: a generator yields at most 2^32 points; it has no global state.
 * Cost: O(d) per point, O(32 d) memory. */
#ifndef BD_MODEL_SOBOL_H
#define BD_MODEL_SOBOL_H

#include <stddef.h>
#include <stdint.h>

#include "../common.h"
#include "../rng.h"

#define BD_SOBOL_MAX_DIM 40

typedef struct bd_sobol bd_sobol;

/* A generator of d-dimensional points, 1 <= d <= BD_SOBOL_MAX_DIM, positioned
 * at point 0. *out is new (bd_sobol_free). BD_EINVAL on a bad d. */
int bd_sobol_new(size_t d, bd_sobol **out, bd_err *err) BD_MUST_CHECK;
void bd_sobol_free(bd_sobol *s); /* NULL-safe */

/* XORs every later point's coordinate j with a random 32-bit word drawn
 * from rng (a random digital shift: each point stays in [0, 1), and the
 * sequence keeps its stratification). */
void bd_sobol_shift(bd_sobol *s, bd_rng *rng);

/* Writes the next point (d coordinates in [0, 1)) to x. Returns 0, or
 * BD_EINVAL once 2^32 points have been drawn. */
int bd_sobol_next(bd_sobol *s, double *x) BD_MUST_CHECK;

#endif
