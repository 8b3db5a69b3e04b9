/* spc_tester.h: one configuration tester of Structured Procrastination with
 * Confidence (Kleinberg, Leyton-Brown, Lucier, Graham, NeurIPS 2019,
 * Algorithm 1; docs/ALGORITHMS.md section 5): the config's active instances,
 * their latest capped runtimes, the queue of timed-out (instance, cap)
 * pairs, and the lower confidence bound (LCB) on its mean runtime. It knows
 * nothing of trials or events: spc.c drives it. The math (beta, the LCB,
 * the queue bound) is exposed for the unit tests' vectors.
 *
 * Instances are stream positions 0, 1, 2, ...: position k is the k-th
 * instance of the tester's stream (spc.c maps positions to the study's
 * instances through one seeded permutation). */
#ifndef BD_SPC_TESTER_H
#define BD_SPC_TESTER_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* What an active instance's value is. */
enum {
    SPC_NONE = 0,   /* no result yet (its run is in flight, or failed and is re-offered) */
    SPC_SOLVED,     /* value = the runtime of a completed run */
    SPC_TIMED_OUT,  /* value = the cap it timed out at; (position, next cap) is queued */
    SPC_GAVE_UP     /* value = the largest cap (times PAR): timed out there, or failed too often */
};

typedef struct spc_run {
    int64_t position; /* stream position of the instance */
    double cap;       /* runtime cap (seconds) */
} spc_run;

typedef struct spc_instance {
    double value;     /* latest capped runtime (see state) */
    uint8_t state;    /* SPC_* */
    uint8_t failures; /* failed or lost runs of this instance (re-offered up to a bound) */
} spc_instance;

typedef struct spc_tester {
    json_t *config;      /* owned */
    int64_t config_id;   /* the id of its first trial; 0 before it has one */
    int sample;          /* the sample (spc.c) it belongs to; 0 with a finite config list */
    double theta;        /* current cap */
    int64_t r;           /* active instances: positions 0 .. r-1 */
    int64_t q;           /* queue bound */
    spc_instance *inst;  /* inst[0 .. r-1] */
    size_t inst_cap;
    spc_run *queue;      /* FIFO of timed-out runs: queue[head .. head+len-1] */
    size_t q_head, q_len, q_cap;
    spc_run *retry;      /* failed or lost runs, re-offered first (LIFO; rare) */
    size_t n_retry, retry_cap;
    double lcb;          /* as of its last finished step; -1e-6 with no data */
    int64_t population;  /* instances in all, for the finite-population LCB; 0: an unbounded stream */
    double *sorted;      /* the values of the valued instances, ascending (kept on every change: O(r)) */
    size_t sorted_cap;
    int64_t valued;      /* active instances with a value */
    int64_t solved;      /* ... of which completed runs (SPC_SOLVED) */
    double value_sum;    /* sum of those values */
    int64_t pending;     /* ... of which timed out below the largest cap (SPC_TIMED_OUT, queued) */
    double pending_sum;  /* sum of their values (the caps they timed out at) */
    int in_flight;       /* its runs handed out and not yet finished */
    int64_t steps;       /* runs finished with a result */
    double seconds;      /* run time charged to it (runtimes and caps) */
} spc_tester;

/* A tester of config (new reference taken) starting at cap kappa0.
 * population: the number of instances it draws from without replacement
 * (the LCB then narrows to the exact mean as they are all seen), or 0 for
 * the paper's i.i.d. stream. */
void spc_tester_init(spc_tester *t, json_t *config, int sample, double kappa0, int64_t population);
void spc_tester_clear(spc_tester *t);

/* The tester's next run, as Algorithm 1 would take it (re-offered failed
 * runs first): 1 with *out set, 0 when it has nothing to run (all
 * n_positions stream positions active and no run queued). *fresh says the
 * run activates a new position. Pure. */
int spc_tester_next(const spc_tester *t, int64_t n_positions, spc_run *out, int *fresh);
/* Applies a run spc_tester_next proposed (the trial was created). */
void spc_tester_start(spc_tester *t, const spc_run *run, int fresh);

/* A run finished. timeout: it hit run->cap. value: the runtime (ignored on a
 * timeout). Timed-out runs are queued at min(cap * multiplier, cap_max);
 * one at cap_max gives up with value cap_max * par. t_iter is the
 * iteration counter (finished steps before this one); the LCB and q are
 * recomputed with it. */
void spc_tester_finish(spc_tester *t, const spc_run *run, int timeout, double value, double cap_max,
                       double multiplier, double par, int64_t t_iter);
/* A run failed or was lost: it is re-offered, or after max_failures
 * failures of that instance the instance gives up at cap_max * par (the
 * LCB then changes, so t_iter is needed as in finish). */
void spc_tester_fail(spc_tester *t, const spc_run *run, int max_failures, double cap_max, double par,
                     int64_t t_iter);

/* Its LCB at iteration t_now (the paper polls every tester at the current
 * iteration): O(values below the level where beta reaches 0), from the
 * sorted values kept by finish. Never increases with t_now (eps grows with
 * log t), which spc.c's lazy ordering of testers relies on. */
double spc_tester_lcb_at(const spc_tester *t, int64_t t_now);

/* The mean of its values (capped runtimes), NAN without any. */
double spc_tester_mean(const spc_tester *t);
/* The same with every instance still queued after a timeout counted at
 * worst (cap_max * par) instead of its cap: an upper estimate where the
 * plain mean is a lower one. */
double spc_tester_mean_at_worst(const spc_tester *t, double worst);

/* ---- the math, exposed for the tests (docs/ALGORITHMS.md section 5) ---- */

/* beta(p, t) with p = above / n (above of the n values exceed the level),
 * r active instances: k = floor(log2(1/p)), eps as docs/ALGORITHMS.md
 * section 5. */
double spc_beta(int64_t above, int64_t n, double t, int64_t r);
/* The same for r instances drawn without replacement from a population of
 * N (N = 0: the paper's stream, exactly spc_beta): eps times the finite-
 * population factor sqrt((N - r) / (N - 1)), so eps = 0 and beta = p once
 * r = N; and where that eps exceeds 1/2, p / (1 + max(eps, e)) with e the
 * general Chernoff bound's eps at the same confidence (e^2 = a (2 + e),
 * a = eps^2 / 3) instead of 0. */
double spc_beta_finite(int64_t above, int64_t n, double t, int64_t r, int64_t population);
/* The LCB of n values (any order; values is sorted in place) at iteration t
 * with r active instances; -1e-6 when n == 0. */
double spc_lcb(double *values, int64_t n, double t, int64_t r);
/* The queue bound after a step: 25 if r <= 1 or t <= 1, else
 * ceil(25 log2(t log2 r)). */
int64_t spc_queue_bound(int64_t t, int64_t r);

#endif
