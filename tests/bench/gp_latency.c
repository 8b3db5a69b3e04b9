/* gp_latency.c: how long one GP-UCB suggestion takes as a study grows.
 *
 * For n = 100, 500 and 2000 completed trials in 8 dimensions (a synthetic
 * smooth loss: fine for timing, says nothing about search quality), it
 * builds the model the way a scheduler would (training subset by
 * bd_gp_select, hyperparameters by bd_gp_fit), then times `runs` suggestions.
 * One suggestion = the new observation folded in (bd_gp_sync: rank-one
 * steps; a hyperparameter refit when bd_gp_refit_due says so) + maximising
 * UCB (-mu + c sigma, c = 0.2 d ln(2t)) with bd_acq_maximize. It prints the
 * median and the largest time, and separately what a scheduled refit costs
 * at that size (refits happen every max(10, n/5) observations).
 *
 * Usage: bd_gp_latency [--runs R] [--cap M] [--best B] [--candidates C]
 * Single-threaded; run it on an otherwise idle machine for numbers worth
 * quoting. */
#include <gsl/gsl_errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/model/acq.h"
#include "server/model/gp.h"

#define D 8

static double clock_ms(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double now_ms(void)
{
    return clock_ms(CLOCK_MONOTONIC);
}

/* CPU time of this process: on a shared machine, what the work itself cost. */
static double cpu_ms(void)
{
    return clock_ms(CLOCK_PROCESS_CPUTIME_ID);
}

/* A smooth loss on [0, 1]^8 with one broad basin and some ripples. */
static double loss(const double *x, bd_rng *rng)
{
    double s = 0;
    for (int j = 0; j < D; j++) {
        double c = 0.3 + 0.05 * j;
        s += (x[j] - c) * (x[j] - c) * (1 + j % 3) + 0.1 * sin(7 * x[j] + j) * x[(j + 1) % D];
    }
    return s + 0.01 * bd_rng_normal(rng);
}

typedef struct ucb {
    const bd_gp *gp;
    double c;
    double *mu, *var;
    size_t room;
} ucb;

static int score_ucb(void *ctx, size_t n, const double *U, double *out)
{
    ucb *u = ctx;
    int rc;
    if (n > u->room) {
        u->mu = realloc(u->mu, n * sizeof *u->mu);
        u->var = realloc(u->var, n * sizeof *u->var);
        if (!u->mu || !u->var)
            abort();
        u->room = n;
    }
    if ((rc = bd_gp_predict(u->gp, n, U, u->mu, u->var, 0, NULL)))
        return rc;
    for (size_t i = 0; i < n; i++)
        out[i] = -u->mu[i] + u->c * sqrt(u->var[i]);
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double p = *(const double *)a, q = *(const double *)b;
    return (p > q) - (p < q);
}

typedef struct study {
    size_t n;      /* observations so far */
    size_t n_fit;  /* observations at the last refit */
    double *X, *y; /* room for n_max */
    size_t *idx;
    bd_gp *gp;
} study;

/* Folds observations in (select + sync) and refits on schedule. */
static int update(study *s, size_t cap, size_t best, bd_rng *rng, int *refitted)
{
    bd_err err;
    size_t m = bd_gp_select(s->n, s->y, cap, best, s->idx);
    int rc = bd_gp_sync(s->gp, s->X, s->y, s->idx, m, &err);
    *refitted = 0;
    if (!rc && bd_gp_refit_due(s->n_fit, s->n)) {
        rc = bd_gp_fit(s->gp, NULL, rng, NULL, &err);
        s->n_fit = s->n;
        *refitted = 1;
    }
    if (rc)
        fprintf(stderr, "update: %s\n", err.message);
    return rc;
}

int main(int argc, char **argv)
{
    static const size_t sizes[3] = {100, 500, 2000};
    size_t runs = 7, cap = BD_GP_TRAIN_CAP, best = BD_GP_TRAIN_BEST;
    bd_acq_options ao;
    bd_acq_dim dims[D];
    bd_kernel *k;
    bd_err err;

    gsl_set_error_handler_off();
    bd_acq_options_default(&ao);
    for (int a = 1; a + 1 < argc; a += 2) {
        size_t v = (size_t)strtoul(argv[a + 1], NULL, 10);
        if (!strcmp(argv[a], "--runs"))
            runs = v;
        else if (!strcmp(argv[a], "--cap"))
            cap = v;
        else if (!strcmp(argv[a], "--best"))
            best = v;
        else if (!strcmp(argv[a], "--candidates"))
            ao.n_candidates = v;
        else {
            fprintf(stderr, "usage: %s [--runs R] [--cap M] [--best B] [--candidates C]\n", argv[0]);
            return 2;
        }
    }
    if (runs < 1 || cap < 1) {
        fprintf(stderr, "runs and cap must be positive\n");
        return 2;
    }
    for (int j = 0; j < D; j++)
        dims[j] = (bd_acq_dim){BD_ACQ_CONTINUOUS, 0, 0, 0, 0};
    if (bd_kernel_new(BD_KERNEL_MATERN52, D, NULL, &k, &err)) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    printf("GP-UCB suggest latency, d = %d, training cap %zu (best %zu + most recent), %zu candidates, "
           "%zu local searches; median of %zu suggestions\n",
           D, cap, best, ao.n_candidates, ao.n_local, runs);
    printf("%8s %6s %12s %12s %12s %14s %10s\n", "trials", "m", "median ms", "max ms", "median cpu", "fit ms",
           "best loss");
    for (int si = 0; si < 3; si++) {
        size_t n0 = sizes[si], n_max = n0 + runs;
        study s = {0};
        double *ms = calloc(runs, sizeof *ms), *cpu = calloc(runs, sizeof *cpu), t0, c0, refit_ms, u[D], xbest[D];
        ucb sc = {0};
        bd_acq_problem p = {D, dims, score_ucb, &sc, NULL, NULL};
        bd_rng data, rng;
        int refitted;
        s.X = malloc(n_max * D * sizeof *s.X);
        s.y = malloc(n_max * sizeof *s.y);
        s.idx = malloc(n_max * sizeof *s.idx);
        if (!ms || !cpu || !s.X || !s.y || !s.idx || bd_gp_new(k, 1e-2, BD_GP_STD_SCALE, &s.gp, &err))
            return 1;
        bd_rng_seed(&data, 2024, n0);
        bd_rng_seed(&rng, 7, n0);
        for (size_t i = 0; i < n0; i++) {
            for (int j = 0; j < D; j++)
                s.X[i * D + j] = bd_rng_uniform(&data);
            s.y[i] = loss(s.X + i * D, &data);
        }
        s.n = n0;
        t0 = now_ms();
        if (update(&s, cap, best, &rng, &refitted))
            return 1;
        refit_ms = now_ms() - t0; /* the first build includes a full fit */
        sc.gp = s.gp;
        for (size_t r = 0; r < runs; r++) {
            size_t ib = 0;
            double score;
            for (size_t i = 1; i < s.n; i++)
                if (s.y[i] < s.y[ib])
                    ib = i;
            memcpy(xbest, s.X + ib * D, sizeof xbest);
            ao.starts = xbest; /* the incumbent is a start of the local search */
            ao.n_starts = 1;
            /* the previous suggestion's result arrives... */
            for (int j = 0; j < D; j++)
                s.X[s.n * D + j] = r == 0 ? bd_rng_uniform(&data) : u[j];
            s.y[s.n] = loss(s.X + s.n * D, &data);
            s.n++;
            /* ...and the next suggestion is made */
            t0 = now_ms();
            c0 = cpu_ms();
            if (update(&s, cap, best, &rng, &refitted))
                return 1;
            sc.c = bd_acq_ucb_multiplier_code(D, (double)s.n);
            if (bd_acq_maximize(&p, &ao, &rng, u, &score, &err)) {
                fprintf(stderr, "acq: %s\n", err.message);
                return 1;
            }
            ms[r] = now_ms() - t0;
            cpu[r] = cpu_ms() - c0;
            if (refitted)
                fprintf(stderr, "note: suggestion %zu at n = %zu included a refit\n", r, s.n);
        }
        {
            double mx = 0, yb = s.y[0];
            for (size_t r = 0; r < runs; r++)
                mx = ms[r] > mx ? ms[r] : mx;
            for (size_t i = 1; i < s.n; i++)
                yb = s.y[i] < yb ? s.y[i] : yb;
            qsort(ms, runs, sizeof *ms, cmp_double);
            qsort(cpu, runs, sizeof *cpu, cmp_double);
            printf("%8zu %6zu %12.1f %12.1f %12.1f %14.1f %10.4f\n", n0, bd_gp_size(s.gp), ms[runs / 2], mx,
                   cpu[runs / 2], refit_ms, yb);
            fflush(stdout);
        }
        bd_gp_free(s.gp);
        free(s.X);
        free(s.y);
        free(s.idx);
        free(ms);
        free(cpu);
        free(sc.mu);
        free(sc.var);
    }
    bd_kernel_free(k);
    return 0;
}
