/* test_sobol.c: server/model/sobol.c. The first points of the first three
 * coordinates, worked out by hand from the direction numbers (dimension 3:
 * x^2 + x + 1, m = 1, 3, so v = 1/2, 3/4, 3/8, ...); every coordinate's
 * first 2^k points fill the grid {i / 2^k}; coordinates 1-2 form a
 * (0, m, 2)-net; the random digital shift keeps both and is deterministic. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "server/model/sobol.h"

Test(sobol, first_points_by_hand)
{
    static const double want[8][3] = {{0, 0, 0},
                                      {0.5, 0.5, 0.5},
                                      {0.75, 0.25, 0.25},
                                      {0.25, 0.75, 0.75},
                                      {0.375, 0.375, 0.625},
                                      {0.875, 0.875, 0.125},
                                      {0.625, 0.125, 0.875},
                                      {0.125, 0.625, 0.375}};
    bd_sobol *s;
    double x[3];
    cr_assert_eq(bd_sobol_new(3, &s, NULL), 0);
    for (int i = 0; i < 8; i++) {
        cr_assert_eq(bd_sobol_next(s, x), 0);
        for (int j = 0; j < 3; j++)
            cr_assert_eq(x[j], want[i][j], "point %d coordinate %d: %g, want %g", i, j, x[j], want[i][j]);
    }
    bd_sobol_free(s);
}

/* Does each of the first 2^k values of column j fall in a different cell of width 2^-k? */
static int stratified(const double *X, size_t d, size_t j, unsigned k)
{
    size_t n = (size_t)1 << k;
    unsigned char *seen = calloc(n, 1);
    int ok = 1;
    for (size_t i = 0; i < n && ok; i++) {
        size_t cell = (size_t)(X[i * d + j] * (double)n);
        ok = cell < n && !seen[cell];
        if (ok)
            seen[cell] = 1;
    }
    free(seen);
    return ok;
}

static double *draw(size_t d, size_t n, bd_rng *shift)
{
    bd_sobol *s;
    double *X = malloc(n * d * sizeof *X);
    cr_assert_eq(bd_sobol_new(d, &s, NULL), 0);
    if (shift)
        bd_sobol_shift(s, shift);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(bd_sobol_next(s, X + i * d), 0);
    bd_sobol_free(s);
    return X;
}

Test(sobol, every_coordinate_is_stratified)
{
    double *X = draw(BD_SOBOL_MAX_DIM, 1024, NULL);
    for (size_t j = 0; j < BD_SOBOL_MAX_DIM; j++)
        for (unsigned k = 1; k <= 10; k++)
            cr_assert(stratified(X, BD_SOBOL_MAX_DIM, j, k), "coordinate %zu, 2^%u points", j, k);
    free(X);
}

Test(sobol, first_two_coordinates_form_a_net)
{
    const unsigned m = 8;
    size_t n = (size_t)1 << m;
    double *X = draw(2, n, NULL);
    for (unsigned a = 0; a <= m; a++) { /* boxes of 2^-a by 2^-(m-a) hold one point each */
        unsigned char *seen = calloc(n, 1);
        for (size_t i = 0; i < n; i++) {
            size_t bx = (size_t)(X[2 * i] * (double)((size_t)1 << a));
            size_t by = (size_t)(X[2 * i + 1] * (double)((size_t)1 << (m - a)));
            size_t box = (bx << (m - a)) | by;
            cr_assert_eq(seen[box], 0, "box (%zu, %zu) of shape 2^-%u x 2^-%u holds two points", bx, by, a, m - a);
            seen[box] = 1;
        }
        free(seen);
    }
    free(X);
}

Test(sobol, shift_keeps_stratification_and_is_deterministic)
{
    bd_rng r1, r2, r3;
    double *A, *B, *C;
    bd_rng_seed(&r1, 42, 0);
    bd_rng_seed(&r2, 42, 0);
    bd_rng_seed(&r3, 43, 0);
    A = draw(8, 512, &r1);
    B = draw(8, 512, &r2);
    C = draw(8, 512, &r3);
    cr_assert(memcmp(A, B, 512 * 8 * sizeof *A) == 0);
    cr_assert(memcmp(A, C, 512 * 8 * sizeof *A) != 0);
    cr_assert(A[0] != 0 || A[1] != 0); /* the origin moved */
    for (size_t j = 0; j < 8; j++)
        for (unsigned k = 1; k <= 9; k++)
            cr_assert(stratified(A, 8, j, k));
    for (size_t i = 0; i < 512 * 8; i++)
        cr_assert(A[i] >= 0 && A[i] < 1);
    free(A);
    free(B);
    free(C);
}

Test(sobol, rejects_bad_dimensions)
{
    bd_sobol *s = (bd_sobol *)1;
    bd_err err;
    cr_assert_eq(bd_sobol_new(0, &s, &err), BD_EINVAL);
    cr_assert_null(s);
    cr_assert_eq(bd_sobol_new(BD_SOBOL_MAX_DIM + 1, &s, &err), BD_EINVAL);
    cr_assert_eq(err.code, BD_EINVAL);
}
