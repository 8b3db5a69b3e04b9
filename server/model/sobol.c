/* sobol.c: Sobol points by Gray-code recursion (Antonov and Saleev 1979;
 * Bratley and Fox 1988, Algorithm 659) with Joe and Kuo's direction numbers
 * (new-joe-kuo-6.21201, see sobol.h).
 *
 * For dimension j with primitive polynomial of degree s and coefficients a
 * (a's bits are the inner coefficients, highest degree first) and initial
 * odd numbers m_1..m_s (m_k < 2^k), the direction numbers are
 *   v_k = m_k 2^(32-k) for k <= s,
 *   v_k = v_{k-s} ^ (v_{k-s} >> s) ^ XOR_{l=1}^{s-1} a_l v_{k-l} for k > s,
 * and point i+1 is point i XOR v_c, c the position of the lowest zero bit of i.
 *
 * Invariants: x[j] holds point `index` of coordinate j before the shift.
 * Cost: O(d) per point. */
#include "sobol.h"

#include <stdlib.h>

#define BITS 32

/* Rows d = 2..40 of new-joe-kuo-6.21201: degree s, coefficients a, m_1..m_s. */
static const struct {
    unsigned s, a, m[8];
} JOE_KUO[BD_SOBOL_MAX_DIM - 1] = {
    {1, 0, {1}},
    {2, 1, {1, 3}},
    {3, 1, {1, 3, 1}},
    {3, 2, {1, 1, 1}},
    {4, 1, {1, 1, 3, 3}},
    {4, 4, {1, 3, 5, 13}},
    {5, 2, {1, 1, 5, 5, 17}},
    {5, 4, {1, 1, 5, 5, 5}},
    {5, 7, {1, 1, 7, 11, 19}},
    {5, 11, {1, 1, 5, 1, 1}},
    {5, 13, {1, 1, 1, 3, 11}},
    {5, 14, {1, 3, 5, 5, 31}},
    {6, 1, {1, 3, 3, 9, 7, 49}},
    {6, 13, {1, 1, 1, 15, 21, 21}},
    {6, 16, {1, 3, 1, 13, 27, 49}},
    {6, 19, {1, 1, 1, 15, 7, 5}},
    {6, 22, {1, 3, 1, 15, 13, 25}},
    {6, 25, {1, 1, 5, 5, 19, 61}},
    {7, 1, {1, 3, 7, 11, 23, 15, 103}},
    {7, 4, {1, 3, 7, 13, 13, 15, 69}},
    {7, 7, {1, 1, 3, 13, 7, 35, 63}},
    {7, 8, {1, 3, 5, 9, 1, 25, 53}},
    {7, 14, {1, 3, 1, 13, 9, 35, 107}},
    {7, 19, {1, 3, 1, 5, 27, 61, 31}},
    {7, 21, {1, 1, 5, 11, 19, 41, 61}},
    {7, 28, {1, 3, 5, 3, 3, 13, 69}},
    {7, 31, {1, 1, 7, 13, 1, 19, 1}},
    {7, 32, {1, 3, 7, 5, 13, 19, 59}},
    {7, 37, {1, 1, 3, 9, 25, 29, 41}},
    {7, 41, {1, 3, 5, 13, 23, 1, 55}},
    {7, 42, {1, 3, 7, 3, 13, 59, 17}},
    {7, 50, {1, 3, 1, 3, 5, 53, 69}},
    {7, 55, {1, 1, 5, 5, 23, 33, 13}},
    {7, 56, {1, 1, 7, 7, 1, 61, 123}},
    {7, 59, {1, 1, 7, 9, 13, 61, 49}},
    {7, 62, {1, 3, 3, 5, 3, 55, 33}},
    {8, 14, {1, 3, 1, 15, 31, 13, 49, 245}},
    {8, 21, {1, 3, 5, 15, 31, 59, 63, 97}},
    {8, 22, {1, 3, 1, 11, 11, 11, 77, 249}},
};

struct bd_sobol {
    size_t d;
    uint64_t index;                     /* points drawn so far */
    uint32_t v[BD_SOBOL_MAX_DIM][BITS]; /* direction numbers */
    uint32_t x[BD_SOBOL_MAX_DIM];       /* current point, unshifted */
    uint32_t shift[BD_SOBOL_MAX_DIM];   /* digital shift, 0 = none */
};

int bd_sobol_new(size_t d, bd_sobol **out, bd_err *err)
{
    bd_sobol *s;
    *out = NULL;
    if (d < 1 || d > BD_SOBOL_MAX_DIM)
        return bd_err_set(err, BD_EINVAL, NULL, "Sobol dimension must be in [1, %d], not %zu", BD_SOBOL_MAX_DIM, d);
    s = bd_xcalloc(1, sizeof *s);
    s->d = d;
    for (unsigned k = 0; k < BITS; k++)
        s->v[0][k] = 1u << (BITS - 1 - k);
    for (size_t j = 1; j < d; j++) {
        unsigned deg = JOE_KUO[j - 1].s, a = JOE_KUO[j - 1].a;
        uint32_t *v = s->v[j];
        for (unsigned k = 0; k < deg && k < BITS; k++)
            v[k] = JOE_KUO[j - 1].m[k] << (BITS - 1 - k);
        for (unsigned k = deg; k < BITS; k++) {
            v[k] = v[k - deg] ^ (v[k - deg] >> deg);
            for (unsigned l = 1; l < deg; l++)
                if ((a >> (deg - 1 - l)) & 1u)
                    v[k] ^= v[k - l];
        }
    }
    *out = s;
    return 0;
}

void bd_sobol_free(bd_sobol *s)
{
    free(s);
}

void bd_sobol_shift(bd_sobol *s, bd_rng *rng)
{
    for (size_t j = 0; j < s->d; j++)
        s->shift[j] = (uint32_t)(bd_rng_u64(rng) >> 32);
}

int bd_sobol_next(bd_sobol *s, double *x)
{
    if (s->index >> BITS)
        return BD_EINVAL;
    if (s->index > 0) {
        uint64_t i = s->index - 1;
        unsigned c = 0;
        while (i & 1u) { /* lowest zero bit of the previous index */
            i >>= 1;
            c++;
        }
        for (size_t j = 0; j < s->d; j++)
            s->x[j] ^= s->v[j][c];
    }
    for (size_t j = 0; j < s->d; j++)
        x[j] = (double)(s->x[j] ^ s->shift[j]) * (1.0 / 4294967296.0);
    s->index++;
    return 0;
}
