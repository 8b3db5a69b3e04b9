/* bos_latency.c: how long one BOS solve of BO-BOS takes (server/model/bos.c).
 *
 * The tracker's target: 100,000 paths, N = 50, N0 = 8, grid 100 in at most
 * 50 ms on the 2-core machine. For a few learning curves (a slow one far
 * above the incumbent, a fast one, one near the incumbent, one close to
 * error 0 where many paths leave (0, 1)) it times `runs` solves with
 * different rng streams and prints the median and the largest wall time,
 * the median CPU time, and the split between the GP fit and the rest (the
 * fit measured alone with the same streams). It also prints the kept and
 * dropped paths and the rank of the sampled covariance.
 *
 * Usage: bd_bos_latency [--runs R] [--paths P] [--n N] [--n0 N0] [--grid G]
 * Single-threaded; on a shared machine the CPU time is what the work cost. */
#include <gsl/gsl_errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/model/bos.h"

static double clock_ms(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef struct curve {
    const char *name;
    double e1, rate, floor; /* e_n = floor + (e1 - floor) exp(-rate (n - 1)) */
    double incumbent;
} curve;

int main(int argc, char **argv)
{
    size_t runs = 9, n_max = 50, n0 = 8;
    bd_bos_options opt;
    const curve curves[] = {
        {"slow, far above e*", 0.60, 0.01, 0.0, 0.10},
        {"fast decay", 0.90, 0.30, 0.05, 0.10},
        {"near e*", 0.40, 0.15, 0.12, 0.15},
        {"close to 0", 0.05, 0.20, 0.005, 0.02},
    };
    bd_bos_options_default(&opt);
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && !strcmp(argv[i], "--runs"))
            runs = strtoul(argv[++i], NULL, 10);
        else if (i + 1 < argc && !strcmp(argv[i], "--paths"))
            opt.n_paths = strtoul(argv[++i], NULL, 10);
        else if (i + 1 < argc && !strcmp(argv[i], "--n"))
            n_max = strtoul(argv[++i], NULL, 10);
        else if (i + 1 < argc && !strcmp(argv[i], "--n0"))
            n0 = strtoul(argv[++i], NULL, 10);
        else if (i + 1 < argc && !strcmp(argv[i], "--grid"))
            opt.grid = strtoul(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: %s [--runs R] [--paths P] [--n N] [--n0 N0] [--grid G]\n", argv[0]);
            return 2;
        }
    }
    if (runs < 1 || n0 < 2 || n0 > 1000 || n_max <= n0) {
        fprintf(stderr, "bad arguments\n");
        return 2;
    }
    gsl_set_error_handler_off();
    printf("BOS solve: N = %zu, N0 = %zu, %zu paths, grid %zu, %zu runs per curve\n", n_max, n0, opt.n_paths, opt.grid,
           runs);
    printf("%-20s %9s %9s %9s %9s %8s %8s %5s\n", "curve", "wall p50", "wall max", "cpu p50", "fit p50", "kept",
           "dropped", "rank");
    for (size_t c = 0; c < sizeof curves / sizeof curves[0]; c++) {
        const curve *cv = &curves[c];
        double errors[1000], *wall = malloc(runs * sizeof *wall), *cpu = malloc(runs * sizeof *cpu),
                             *fit = malloc(runs * sizeof *fit), wmax = 0;
        bd_bos_input in = {errors, n0, n_max, cv->incumbent, 1};
        bd_bos_info info = {0};
        if (!wall || !cpu || !fit)
            abort();
        for (size_t i = 0; i < n0; i++)
            errors[i] = cv->floor + (cv->e1 - cv->floor) * exp(-cv->rate * (double)i);
        for (size_t r = 0; r < runs; r++) {
            bd_rng rng;
            bd_bos_table *t;
            bd_gp *gp;
            bd_err err;
            double w0, c0, f0;
            bd_rng_seed(&rng, 42, r);
            f0 = clock_ms(CLOCK_MONOTONIC);
            if (bd_bos_fit(errors, n0, &opt, &rng, &gp, &err)) {
                fprintf(stderr, "fit failed: %s\n", err.message);
                return 1;
            }
            fit[r] = clock_ms(CLOCK_MONOTONIC) - f0;
            bd_gp_free(gp);
            bd_rng_seed(&rng, 42, r);
            w0 = clock_ms(CLOCK_MONOTONIC);
            c0 = clock_ms(CLOCK_PROCESS_CPUTIME_ID);
            if (bd_bos_solve(&in, &opt, &rng, &t, &err)) {
                fprintf(stderr, "solve failed: %s\n", err.message);
                return 1;
            }
            cpu[r] = clock_ms(CLOCK_PROCESS_CPUTIME_ID) - c0;
            wall[r] = clock_ms(CLOCK_MONOTONIC) - w0;
            if (wall[r] > wmax)
                wmax = wall[r];
            bd_bos_table_info(t, &info);
            bd_bos_table_free(t);
        }
        printf("%-20s %6.1f ms %6.1f ms %6.1f ms %6.2f ms %8zu %8zu %5zu\n", cv->name, median(wall, runs), wmax,
               median(cpu, runs), median(fit, runs), info.kept, info.dropped, info.rank);
        free(wall);
        free(cpu);
        free(fit);
    }
    return 0;
}
