/* bos.h: the Bayesian optimal stopping (BOS) solve of BO-BOS (Dai, Yu, Low,
 * Jaillet, ICML 2019; docs/ALGORITHMS.md section 6; paper Appendix B, Algorithm
 * 2) as a numerical routine that knows nothing of studies.
 *
 * Given one trial's errors e_1..e_N0 (1 - accuracy) at epochs 1..N0, the
 * horizon N, the incumbent error e* and the BO iteration t, bd_bos_solve
 * fits a GP with the freeze-thaw kernel to the errors, draws joint posterior
 * sample paths of the errors at epochs N0+1..N, and runs approximate
 * backward induction over a grid of the summary statistic (a running mean
 * of the errors), giving for every (epoch, cell) one of continue /
 * stop-and-conclude-worse (d1) / stop-and-conclude-better (d2).
 *
 * What the caller (the bo_bos scheduler) does with the table: after epoch n
 * it computes the summary statistic with bd_bos_summary and asks
 * bd_bos_decide. It early-stops the trial only when the answer is
 * BD_BOS_STOP_WORSE (C1) AND the outer GP's predictive sigma at [x_t, n] is
 * at least sigma at [x_t, N] / kappa, kappa = 2 (C2). C2 needs the outer
 * GP and is the scheduler's job, not this file's. BD_BOS_STOP_BETTER never
 * stops training (paper section 3.2).
 *
 * Randomness comes only from the bd_rng passed in: the same input, options
 * and rng state give the same table, bit for bit. */
#ifndef BD_MODEL_BOS_H
#define BD_MODEL_BOS_H

#include <stddef.h>
#include <stdint.h>

#include "../common.h"
#include "../rng.h"
#include "gp.h"

enum {
    BD_BOS_CONTINUE = 0,   /* d0: train one more epoch */
    BD_BOS_STOP_WORSE = 1, /* d1: stop, conclude the final error will be >= e* */
    BD_BOS_STOP_BETTER = 2 /* d2: stop, conclude it will be < e* (BO-BOS keeps training) */
};

/* The summary statistic at epoch n (the earlier spec vs the paper: see bos.c
 * and docs/ALGORITHMS.md section 6). */
enum {
    BD_BOS_SUMMARY_ALL = 0, /* paper (default): mean of e_1..e_n */
    BD_BOS_SUMMARY_NEW = 1  /* authors' code and the earlier spec: mean of e_{N0+1}..e_n */
};

typedef struct bd_bos_input {
    const double *errors; /* e_1..e_N0 at epochs 1..N0, each in (0, 1); borrowed */
    size_t n0;            /* N0 >= 2 observed epochs */
    size_t n_max;         /* horizon N > N0 (N - N0 <= BD_BOS_MAX_EPOCHS) */
    double incumbent;     /* e* = 1 - best final accuracy so far, in [0, 1] (1 before any) */
    size_t iteration;     /* BO iteration t >= 1 (sets K1) */
} bd_bos_input;

#define BD_BOS_MAX_EPOCHS 1024 /* N - N0 */
#define BD_BOS_MAX_GRID 256    /* cells are stored as uint8 */

typedef struct bd_bos_options {
    double k2;        /* cost of a wrong d2 (default 99) */
    double cd0;       /* cost of one more epoch (default 1) */
    double gamma;     /* K1_t = 100 / gamma^(t-1): 0.95 paper (default), 0.99 authors' code */
    size_t grid;      /* cells on [0, 1], 2..BD_BOS_MAX_GRID (default 100) */
    size_t n_paths;   /* sample paths drawn (default 100,000) */
    size_t few_paths; /* a cell with at most this many paths always continues (default 30) */
    double noise;     /* freeze-thaw GP noise variance, fixed (default 1e-3) */
    double s2;        /* freeze-thaw signal variance, fixed (default 1) */
    int summary;      /* BD_BOS_SUMMARY_* (default ALL) */
} bd_bos_options;

void bd_bos_options_default(bd_bos_options *o);

/* K1_t = 100 / gamma^(t-1) (t >= 1). */
double bd_bos_k1(size_t t, double gamma);

typedef struct bd_bos_table bd_bos_table;

/* Solves the BOS problem for one trial. opt NULL: the defaults. *out is new
 * (bd_bos_table_free). BD_EINVAL on bad input (N0 < 2, N <= N0, an error
 * not in (0, 1) or not finite, e* not in [0, 1], t = 0, bad options);
 * BD_EINTERNAL when the GP fit or a GSL factorisation fails. Paths that leave
 * (0, 1) at any epoch are dropped (bd_bos_info.dropped counts them); if
 * every path is dropped the table says continue everywhere.
 * Cost: a fit O(restarts x iterations x N0^3), O(N0^2 q + q^3) for the
 * posterior (q = N - N0), O(P q r) to sample P paths with r <= q
 * covariance components, O(P q) for the induction. Memory P q bytes plus
 * O(q x grid) doubles. */
int bd_bos_solve(const bd_bos_input *in, const bd_bos_options *opt, bd_rng *rng, bd_bos_table **out,
                 bd_err *err) BD_MUST_CHECK;
void bd_bos_table_free(bd_bos_table *t); /* NULL-safe */

/* The decision for the summary statistic `stat` (bd_bos_summary) observed
 * after epoch `epoch` (N0 < epoch <= N); *p_worse (may be NULL) receives
 * P(final error >= e* | the cell), NaN for a cell no path visited. Outside
 * the table (another epoch, stat not in [0, 1] or NaN): BD_BOS_CONTINUE and
 * NaN. At epoch N a decision only labels the cell (training is over). */
int bd_bos_decide(const bd_bos_table *t, size_t epoch, double stat, double *p_worse);

/* The summary statistic of the table's kind from the errors e_1..e_n
 * observed so far (errors[0..n)), N0 < n <= N; NaN when n is out of range. */
double bd_bos_summary(const bd_bos_table *t, const double *errors, size_t n);

typedef struct bd_bos_info {
    size_t n0, n_max, grid;
    size_t kept, dropped; /* sample paths used / dropped for leaving (0, 1) */
    size_t rank;          /* posterior covariance components sampled */
    double k1;            /* K1_t used */
    double alpha, beta;   /* fitted freeze-thaw parameters */
    int summary;          /* BD_BOS_SUMMARY_* */
} bd_bos_info;

void bd_bos_table_info(const bd_bos_table *t, bd_bos_info *out);

/* One cell: decision, P(worse) (NaN when empty), number of paths, and the
 * minimal expected loss of the backward induction. BD_EINVAL when epoch or
 * cell is outside the table. */
typedef struct bd_bos_cell {
    int decision;
    double p_worse;
    size_t count;
    double loss;
} bd_bos_cell;

int bd_bos_table_cell(const bd_bos_table *t, size_t epoch, size_t cell, bd_bos_cell *out) BD_MUST_CHECK;

/* ---- the pieces, for tests and benchmarks ---- */

/* The freeze-thaw GP of the solve: points (n, e_n), n = 1..N0, zero prior
 * mean on the raw errors, s2 and noise fixed from opt, alpha and beta by
 * bd_gp_fit. *out is new (bd_gp_free). */
int bd_bos_fit(const double *errors, size_t n0, const bd_bos_options *opt, bd_rng *rng, bd_gp **out,
               bd_err *err) BD_MUST_CHECK;

/* n_paths joint noise-free posterior samples of gp at the q inputs Xq into
 * out (n_paths x q, row-major), the way the solve draws them: the posterior
 * covariance's leading eigencomponents (those above 1e-12 of the largest)
 * times ziggurat normals from rng. *rank (may be NULL) receives how many
 * components. A faster stand-in for bd_gp_sample_paths. */
int bd_bos_sample_paths(const bd_gp *gp, size_t q, const double *Xq, size_t n_paths, bd_rng *rng, double *out,
                        size_t *rank, bd_err *err) BD_MUST_CHECK;

#endif
