/* bo_bos.c: BO-BOS, Bayesian optimisation with Bayesian optimal stopping
 * (Dai, Yu, Low, Jaillet, ICML 2019, Algorithm 1 and section 3.2;
 * docs/ALGORITHMS.md section 6). GP-UCB over [x, n/N] proposes configs at the
 * full budget N = resource.max (epochs); after N0 epochs of a trial the BOS
 * problem is solved once for it (server/model/bos.h) and every later
 * measurement consults the table: the trial stops when the table says
 * stop-and-conclude-worse (C1) and sigma([x, n/N]) >= sigma([x, 1]) / kappa
 * (C2).
 *
 * Outer loop (bo_model.h, shared with gp_ucb.c, with its purity rule):
 * Matérn-5/2 ARD over bd_space_encode's d coordinates plus the fidelity
 * column n/N, standardised outputs, at most BD_GP_TRAIN_CAP points,
 * hyperparameters refitted on bd_gp_refit_due's schedule. x_t = argmax
 * over the unit cube of -mu([x, 1]) + m_t sigma([x, 1]), sigma with the
 * running trials added at [x, 1] (GP-BUCB); the first n_init trials are
 * random. m_t: "paper" sqrt(beta_t), "code" 0.2 (d + 1) ln(2t) (d + 1
 * counts the fidelity).
 * Observations (paper, Appendix D): when a trial ends, its losses at the
 * intermediate epochs (option; 1, 10, 20, 30, 40 for N = 50) before its
 * last epoch, then its final one: [x, 1] with the completion's loss, or,
 * for a trial stopped at epoch n_t, [x, n_t/N] with the loss it reported
 * there (Algorithm 1, line 11). Failed and expired trials leave none.
 * A diverged value (+INFINITY) counts as the worst finite loss seen.
 *
 * Errors for BOS: losses arrive minimised (the engine negates a maximised
 * objective). With objective.bounds [lo, hi] (in the objective's own
 * orientation) error = (v - lo) / (hi - lo) when minimising and
 * (hi - v) / (hi - lo) when maximising, v the reported value; without
 * bounds the values must already be in [0, 1]: error = v when minimising,
 * 1 - v (an accuracy) when maximising. A measurement whose errors are not
 * all in (0, 1) (diverged, out of bounds, an epoch missing) skips BOS for
 * that measurement: the trial continues.
 *
 * The BOS solve of a trial: at the first measurement at an epoch >= N0
 * whose epochs 1..N0 are all known with errors in (0, 1), inputs snapshot:
 * e_1..e_N0, the incumbent error e* (the best completed loss so far mapped
 * to an error; 1 before any completion, the paper's y_0* = 0), t = the
 * trial's creation index (K1_t = 100 / gamma^(t-1)), and an rng seeded from
 * (study seed, t). The table is a pure function of that snapshot, so
 * it does not matter when it is computed: live, in observe() of that
 * measurement; after a replay, in replayed() for a running trial whose last
 * verdict needs it, or else at its next live measurement. Finished trials
 * are never solved again; their tables are freed when they end. No table
 * is solved when it could never say d1: before any completion (e* = 1,
 * and every kept path ends below it, so P(worse) = 0 in every cell) or
 * when K1_t overflows; such a trial runs to N.
 *
 * C2 (paper: sigma_{t-1}, the outer GP before iteration t): the predictive
 * sigmas (with noise) at [x, n/N], n = N0+1..N, of the model built from the
 * observations that existed when the trial was created (a pure function of
 * their count n_c, see Purity). Live they come from the current model at
 * CREATED; after a replay they are rebuilt from the first n_c observations
 * when first needed. Without a model (no finite observation yet) C2 holds.
 *
 * Purity (sched.h, bo_model.h): the outer model at observation count n is
 * build(first n observations) with theta fitted on the first
 * bd_bo_model_refit_point(n) of them from the prior mean with an rng seeded
 * from (study seed, s): a function of n alone, so a replay (one rebuild in
 * replayed()) holds the same numbers bit for bit. The last verdict of each
 * running trial (shown by describe) is recomputed in replayed() from the
 * same snapshot, curve and sigmas.
 *
 * STOPPED events come only from this scheduler's stop answers (the engine
 * never stops a trial by itself), so every STOPPED counts as a BOS stop and
 * saves N - n_t epochs; a replay counts them without any table.
 *
 * Cost: observe(MEASUREMENT) O(n) for the summary statistic, plus one BOS
 * solve per trial (~20 ms for N = 50, N0 = 8, 100,000 paths:
 * tests/bench/bos_latency.c) inside that measurement's request; CREATED
 * O(N cap^2) for the C2 sigmas; COMPLETED / STOPPED O(cap^3) rebuild (plus
 * the O(log n) refits); suggest as gp_ucb. Running trials are kept sorted by
 * id (binary search). */
#include "sched.h"

#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../model/bos.h"
#include "bo_model.h"

extern const struct bd_sched_ops bd_sched_bo_bos;

/* N = resource.max is at most MAX_EPOCHS (so N - N0 <= BD_BOS_MAX_EPOCHS),
 * N0 at most MAX_N0: the solve's freeze-thaw fit costs O(N0^3) per step. */
#define MAX_EPOCHS 1000
#define MAX_N0 256
_Static_assert(MAX_EPOCHS <= BD_BOS_MAX_EPOCHS, "the BOS table must cover N - N0 epochs");

/* Where a trial's BOS solve stands. */
enum {
    BOS_NONE,    /* not triggered yet */
    BOS_PENDING, /* inputs snapshot, table not computed (after a replay) */
    BOS_TABLE,   /* table ready */
    BOS_FAILED,  /* the solve failed (message in solve_error); never retried */
    BOS_NEVER    /* no solve needed: the table could never say d1 (see measure) */
};

/* The last verdict of a running trial (describe shows it). */
enum {
    V_NONE,
    V_COLLECTING,   /* before epoch N0 */
    V_SKIPPED,      /* BOS could not decide this measurement; continue */
    V_SOLVED,       /* the table was solved at this measurement */
    V_SOLVE_FAILED, /* the solve failed; continue */
    V_CONTINUE,     /* d0 */
    V_BETTER,       /* d2: concluded better, keeps training */
    V_WORSE_NO_C2,  /* d1 but C2 fails: continue */
    V_STOP,         /* d1 and C2: stopped */
    V_FINAL         /* epoch N: training is over anyway */
};

static const char *const verdict_names[] = {
    [V_NONE] = "none",     [V_COLLECTING] = "collecting",      [V_SKIPPED] = "skipped",
    [V_SOLVED] = "solved", [V_SOLVE_FAILED] = "solve_failed",  [V_CONTINUE] = "continue",
    [V_BETTER] = "better", [V_WORSE_NO_C2] = "worse_c2_fails", [V_STOP] = "stop",
    [V_FINAL] = "final",
};

typedef struct verdict {
    int kind;       /* V_* */
    int pending;    /* needs the table: finished by replayed() (a replay decides nothing) */
    double epoch;   /* the measurement's step */
    double p_worse; /* P(final error >= e*) of the cell, NaN when none */
    char note[128]; /* for a person; the stop reason when kind == V_STOP */
} verdict;

typedef struct trial {
    int64_t id;
    size_t index;     /* creation order, from 1: the BO iteration t of K1_t */
    double *x;        /* d coordinates, owned */
    size_t n_c;       /* outer observations when it was created (C2's model) */
    double *sigma;    /* C2: predictive sd at [x, n/N] for n = N0+1..N (q entries), NULL until known */
    int sigma_none;   /* no model at creation: C2 holds */
    double *loss;     /* loss[n] at epoch n = 1..N (NaN = not reported), N + 1 entries */
    double last_step; /* the latest measurement (NaN = none) and its loss */
    double last_loss;
    double last_seconds; /* elapsed_seconds of the last measurement that had one (NAN: none) */
    int bos;             /* BOS_* */
    double *err0;        /* snapshot: e_1..e_N0, owned once triggered */
    double e_star;       /* snapshot: incumbent error */
    bd_bos_table *table;
    char solve_error[96];
    verdict v;
} trial;

typedef struct bo_bos {
    bd_sched base;
    const bd_study_def *def;
    size_t d; /* parameters (the outer model adds the fidelity column) */
    long long n_init, max_trials;
    size_t N, n0, q; /* horizon (epochs), N0, q = N - N0 */
    size_t *inter;   /* intermediate epochs (ascending, < N) */
    size_t n_inter;
    double kappa;
    bd_bos_options bos; /* k2, cd0, gamma, grid, paths, few_paths, noise, summary */

    long long created;
    trial **run; /* running trials sorted by id */
    size_t n_run, cap_run;

    bd_bo_model *model; /* observations [x, n/N] in arrival order, and the outer GP */
    double best_loss;   /* best completed loss (+INFINITY: none) */

    long long triggered, stopped; /* trials whose BOS was triggered / stopped by BOS */
    double epochs_saved;
} bo_bos;

/* ------------------------------------------------------------- create */

static int read_intermediate(const json_t *opts, size_t N, size_t **out, size_t *n_out, bd_err *err)
{
    const json_t *v = json_object_get(opts, "intermediate_epochs");
    size_t *e = bd_xmalloc((N + 5) * sizeof *e), n = 0;
    if (!v || json_is_null(v)) {
        size_t s = (size_t)llround((double)N / 5.0);
        if (s < 1)
            s = 1;
        e[n++] = 1;
        for (size_t k = 1; k <= 4; k++)
            if (k * s < N && k * s > e[n - 1])
                e[n++] = k * s;
        if (e[0] >= N) /* N = 1 cannot happen (N >= 3), kept for safety */
            n = 0;
    } else {
        size_t i;
        const json_t *it;
        if (!json_is_array(v))
            goto bad;
        char *seen = bd_xcalloc(N, 1);
        json_array_foreach(v, i, it)
        {
            if (!json_is_integer(it) || json_integer_value(it) < 1 || json_integer_value(it) >= (json_int_t)N) {
                free(seen);
                goto bad;
            }
            seen[json_integer_value(it)] = 1;
        }
        for (size_t k = 1; k < N; k++)
            if (seen[k])
                e[n++] = k;
        free(seen);
    }
    *out = e;
    *n_out = n;
    return 0;
bad:
    free(e);
    return bd_err_set(err, BD_EINVAL, "scheduler.options.intermediate_epochs",
                      "must be an array of whole epochs in 1..%zu (resource.max - 1)", N - 1);
}

static int bb_create(const bd_study_def *def, bd_sched **out, bd_err *err)
{
    static const char *const known[] = {
        "n_init",     "max_trials",    "multiplier", "delta",     "acquisition", "n0",      "intermediate_epochs",
        "cost_aware", "cost_exponent", "initial",    "warp",      "kappa",       "k2",      "cd0",
        "gamma",      "grid",          "paths",      "few_paths", "noise",       "summary", NULL};
    static const char *const summaries[] = {"all", "since_n0", NULL};
    size_t d = bd_space_size(def->space), N, *inter = NULL, n_inter = 0;
    long long n_init, max_trials, n0, grid, paths, few;
    const char *summary;
    double kappa, k2, cd0, gamma, noise;
    bd_bo_model_options mo = {.name = "bo_bos", .fidelity = 1, .salt = 0x626f5f626f730001ULL /* "bo_bos" */};
    bd_bo_model *model = NULL;
    int rc;

    if (!(def->r_max == floor(def->r_max)) || def->r_max < 3 || def->r_max > MAX_EPOCHS)
        return bd_err_set(err, BD_EINVAL, "resource.max",
                          "bo_bos needs resource.max = N, a whole number of epochs in 3..%d (got %g)", MAX_EPOCHS,
                          def->r_max);
    N = (size_t)def->r_max;
    long long n0_default = llround(8.0 * (double)N / 50.0);
    if (n0_default < 2)
        n0_default = 2;
    if (n0_default > (long long)N - 1)
        n0_default = (long long)N - 1;
    rc = bd_opt_known(def->options, known, err);
    if (!rc)
        rc = bd_opt_int(def->options, "n_init", 6, 1, 100000, &n_init, err);
    if (!rc)
        rc = bd_opt_int(def->options, "max_trials", 0, 0, 1000000000LL, &max_trials, err);
    if (!rc)
        rc = bd_bo_ucb_read(def->options, &mo.ucb, err);
    if (!rc)
        rc = bd_bo_start_cost_read(def->options, &mo.ucb, err);
    if (!rc)
        rc = bd_opt_int(def->options, "n0", n0_default, 2, (long long)N - 1 < MAX_N0 ? (long long)N - 1 : MAX_N0, &n0,
                        err);
    if (!rc)
        rc = bd_opt_number(def->options, "kappa", 2, 1, 1e9, &kappa, err);
    if (!rc)
        rc = bd_opt_number(def->options, "k2", 99, 1e-9, 1e12, &k2, err);
    if (!rc)
        rc = bd_opt_number(def->options, "cd0", 1, 0, 1e12, &cd0, err);
    if (!rc)
        rc = bd_opt_number(def->options, "gamma", 0.95, 1e-3, 1, &gamma, err);
    if (!rc)
        rc = bd_opt_int(def->options, "grid", 100, 2, BD_BOS_MAX_GRID, &grid, err);
    if (!rc)
        rc = bd_opt_int(def->options, "paths", 100000, 100, 1000000, &paths, err);
    if (!rc)
        rc = bd_opt_int(def->options, "few_paths", 30, 0, 1000000, &few, err);
    if (!rc)
        rc = bd_opt_number(def->options, "noise", 1e-3, 1e-9, 1, &noise, err);
    if (!rc)
        rc = bd_opt_string(def->options, "summary", "all", summaries, &summary, err);
    if (!rc)
        rc = read_intermediate(def->options, N, &inter, &n_inter, err);
    if (rc)
        return rc;
    if ((rc = bd_bo_model_new(def, &mo, &model, err))) {
        free(inter);
        return rc;
    }
    bo_bos *g = bd_xcalloc(1, sizeof *g);
    g->base.ops = &bd_sched_bo_bos;
    g->def = def;
    g->d = d;
    g->n_init = n_init;
    g->max_trials = max_trials;
    g->N = N;
    g->n0 = (size_t)n0;
    g->q = N - (size_t)n0;
    g->inter = inter;
    g->n_inter = n_inter;
    g->kappa = kappa;
    bd_bos_options_default(&g->bos);
    g->bos.k2 = k2;
    g->bos.cd0 = cd0;
    g->bos.gamma = gamma;
    g->bos.grid = (size_t)grid;
    g->bos.n_paths = (size_t)paths;
    g->bos.few_paths = (size_t)few;
    g->bos.noise = noise;
    g->bos.summary = strcmp(summary, "since_n0") == 0 ? BD_BOS_SUMMARY_NEW : BD_BOS_SUMMARY_ALL;
    g->model = model;
    g->best_loss = INFINITY;
    *out = &g->base;
    return 0;
}

/* ------------------------------------------------------------- errors */

/* The error in [0, 1] of a loss (see the top of the file); NaN when not finite. */
static double to_error(const bo_bos *g, double loss)
{
    const bd_study_def *def = g->def;
    if (!isfinite(loss))
        return NAN;
    double v = def->maximize ? -loss : loss; /* the value as reported */
    if (def->has_bounds) {
        double w = def->bound_high - def->bound_low;
        if (!(w > 0))
            return NAN;
        return def->maximize ? (def->bound_high - v) / w : (v - def->bound_low) / w;
    }
    return def->maximize ? 1 - v : v;
}

/* ------------------------------------------------------------- C2 */

/* C2's predictive sds at [x, n/N], n = N0+1..N, from gp (NULL: none). */
static int sigmas_from(const bo_bos *g, const bd_gp *gp, trial *t, bd_err *err)
{
    if (!gp) {
        t->sigma_none = 1;
        t->sigma = bd_xcalloc(g->q, sizeof *t->sigma);
        return 0;
    }
    size_t D = g->d + 1;
    double *Xq = bd_xmalloc(g->q * D * sizeof *Xq), *mu = bd_xmalloc(g->q * sizeof *mu);
    double *var = bd_xmalloc(g->q * sizeof *var);
    for (size_t a = 0; a < g->q; a++) {
        memcpy(Xq + a * D, t->x, g->d * sizeof *Xq);
        Xq[a * D + g->d] = (double)(g->n0 + 1 + a) / (double)g->N;
    }
    int rc = bd_gp_predict(gp, g->q, Xq, mu, var, 1, err);
    if (!rc) {
        t->sigma = bd_xmalloc(g->q * sizeof *t->sigma);
        for (size_t a = 0; a < g->q; a++)
            t->sigma[a] = sqrt(var[a]);
        t->sigma_none = 0;
    }
    free(Xq);
    free(mu);
    free(var);
    return rc;
}

/* Makes t's C2 sigmas known: from the model of its first n_c observations. */
static void ensure_sigmas(const bo_bos *g, trial *t)
{
    bd_err err;
    bd_gp *gp = NULL;
    if (t->sigma)
        return;
    if (bd_bo_model_current(g->model, t->n_c)) {
        if (!sigmas_from(g, bd_bo_model_gp(g->model), t, &err))
            return;
    } else if (!bd_bo_model_at(g->model, t->n_c, &gp, &err) && !sigmas_from(g, gp, t, &err)) {
        bd_gp_free(gp);
        return;
    }
    bd_gp_free(gp);
    /* No model could be built (as at creation, then): C2 holds. */
    free(t->sigma);
    t->sigma = bd_xcalloc(g->q, sizeof *t->sigma);
    t->sigma_none = 1;
}

/* ------------------------------------------------------------- trials */

static long find_trial(const bo_bos *g, int64_t id)
{
    size_t lo = 0, hi = g->n_run;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (g->run[mid]->id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < g->n_run && g->run[lo]->id == id ? (long)lo : -1;
}

static void trial_free(trial *t)
{
    if (!t)
        return;
    free(t->x);
    free(t->sigma);
    free(t->loss);
    free(t->err0);
    bd_bos_table_free(t->table);
    free(t);
}

/* Removes trial id from the running set; the caller owns it (NULL if not there). */
static trial *take_trial(bo_bos *g, int64_t id)
{
    long i = find_trial(g, id);
    if (i < 0)
        return NULL;
    trial *t = g->run[i];
    memmove(&g->run[i], &g->run[i + 1], (g->n_run - (size_t)i - 1) * sizeof *g->run);
    g->n_run--;
    return t;
}

static void insert_trial(bo_bos *g, trial *t)
{
    if (g->n_run == g->cap_run) {
        g->cap_run = g->cap_run ? 2 * g->cap_run : 8;
        g->run = bd_xrealloc(g->run, g->cap_run * sizeof *g->run);
    }
    size_t i = g->n_run;
    while (i > 0 && g->run[i - 1]->id > t->id) /* ids grow: almost always appended */
        i--;
    memmove(&g->run[i + 1], &g->run[i], (g->n_run - i) * sizeof *g->run);
    g->run[i] = t;
    g->n_run++;
}

/* ------------------------------------------------------------- BOS */

static void set_verdict(trial *t, int kind, double epoch, double p, const char *fmt, ...) BD_PRINTF(5, 6);

static void set_verdict(trial *t, int kind, double epoch, double p, const char *fmt, ...)
{
    va_list ap;
    t->v.kind = kind;
    t->v.pending = 0;
    t->v.epoch = epoch;
    t->v.p_worse = p;
    va_start(ap, fmt);
    vsnprintf(t->v.note, sizeof t->v.note, fmt, ap);
    va_end(ap);
}

/* Solves t's table from its snapshot if that has not been done. */
static void ensure_table(bo_bos *g, trial *t)
{
    if (t->bos != BOS_PENDING)
        return;
    bd_bos_input in = {t->err0, g->n0, g->N, t->e_star, t->index};
    bd_rng rng;
    bd_err err = {0};
    /* Seeded by the creation index, not the trial id: ids are shared by all
     * studies of a server, so a study's decisions would depend on what other
     * studies did before it (and a benchmark would not repeat). */
    bd_rng_seed(&rng, g->def->seed ^ 0x626f732d736f6c76ULL /* "bos-solv" */, (uint64_t)t->index);
    if (bd_bos_solve(&in, &g->bos, &rng, &t->table, &err)) {
        t->bos = BOS_FAILED;
        snprintf(t->solve_error, sizeof t->solve_error, "%.90s", err.message);
        return;
    }
    t->bos = BOS_TABLE;
}

/* Is step an epoch 1..N? */
static size_t epoch_of(const bo_bos *g, double step)
{
    if (!(step >= 1 && step <= (double)g->N) || step != floor(step))
        return 0;
    return (size_t)step;
}

/* Fills errs[0..n) with the errors of epochs 1..n; 0 when one is missing
 * or outside (0, 1) (the verdict says which). */
static int errors_upto(const bo_bos *g, trial *t, size_t n, double *errs, double step)
{
    for (size_t k = 1; k <= n; k++) {
        if (isnan(t->loss[k])) {
            set_verdict(t, V_SKIPPED, step, NAN, "epoch %zu was not reported: BOS skipped", k);
            return 0;
        }
        errs[k - 1] = to_error(g, t->loss[k]);
        if (!(errs[k - 1] > 0 && errs[k - 1] < 1)) {
            set_verdict(t, V_SKIPPED, step, NAN, "error %g at epoch %zu is outside (0, 1): BOS skipped", errs[k - 1],
                        k);
            return 0;
        }
    }
    return 1;
}

/* Finishes a verdict that needs the table (t->v.pending). May stop. */
static void finish_verdict(bo_bos *g, trial *t)
{
    size_t n = epoch_of(g, t->v.epoch);
    double step = t->v.epoch;
    assert(t->v.pending && n);
    ensure_table(g, t);
    if (t->bos == BOS_FAILED) {
        set_verdict(t, V_SOLVE_FAILED, step, NAN, "BOS solve failed (%s): continue", t->solve_error);
        return;
    }
    if (t->v.kind == V_SOLVED && n == g->n0) { /* solved at a later epoch: decide there too */
        bd_bos_info info;
        bd_bos_table_info(t->table, &info);
        set_verdict(t, V_SOLVED, step, NAN, "table for epochs %zu..%zu: incumbent error %.3f, K1 %.4g, %zu paths",
                    g->n0 + 1, g->N, t->e_star, info.k1, info.kept);
        return;
    }
    double *errs = bd_xmalloc(n * sizeof *errs), p;
    if (!errors_upto(g, t, n, errs, step)) { /* only when solved at an epoch > N0: one after N0 unusable */
        free(errs);
        return;
    }
    double stat = bd_bos_summary(t->table, errs, n);
    int dec = bd_bos_decide(t->table, n, stat, &p);
    free(errs);
    if (n == g->N)
        set_verdict(t, V_FINAL, step, p, "epoch N = %zu reached: P(final error > incumbent %.3f) = %.2f", g->N,
                    t->e_star, p);
    else if (dec == BD_BOS_STOP_BETTER)
        set_verdict(t, V_BETTER, step, p, "BOS concludes better: P(final error > incumbent %.3f) = %.2f; training on",
                    t->e_star, p);
    else if (dec != BD_BOS_STOP_WORSE && isnan(p))
        set_verdict(t, V_CONTINUE, step, p, "BOS: continue (no sample path in this cell), incumbent %.3f", t->e_star);
    else if (dec != BD_BOS_STOP_WORSE)
        set_verdict(t, V_CONTINUE, step, p, "BOS: continue, P(final error > incumbent %.3f) = %.2f", t->e_star, p);
    else {
        ensure_sigmas(g, t);
        double s_n = t->sigma[n - g->n0 - 1], s_N = t->sigma[g->q - 1];
        if (t->sigma_none || s_n >= s_N / g->kappa)
            set_verdict(t, V_STOP, step, p, "BOS: P(final error > incumbent %.3f) = %.2f at epoch %zu", t->e_star, p,
                        n);
        else
            set_verdict(t, V_WORSE_NO_C2, step, p,
                        "BOS concludes worse (P = %.2f) but C2 fails: sigma %.3g at epoch %zu < %.3g / kappa", p, s_n,
                        n, s_N);
    }
}

/* The incumbent error e*: 1 before any completion (the paper's y_0* = 0). */
static double incumbent_error(const bo_bos *g)
{
    return isfinite(g->best_loss) ? to_error(g, g->best_loss) : 1.0;
}

/* A measurement of a running trial: records it and sets the verdict, or
 * marks it pending (it needs the table). */
static void measure(bo_bos *g, trial *t, double step, double loss)
{
    size_t n = epoch_of(g, step);
    t->last_step = step;
    t->last_loss = loss;
    if (!n) {
        set_verdict(t, V_SKIPPED, step, NAN, "step %g is not an epoch in 1..%zu: BOS skipped", step, g->N);
        return;
    }
    t->loss[n] = loss;
    if (t->bos == BOS_NONE) {
        if (n < g->n0) {
            set_verdict(t, V_COLLECTING, step, NAN, "BOS decides after epoch N0 = %zu", g->n0);
            return;
        }
        double *errs = bd_xmalloc(g->n0 * sizeof *errs), e_star = incumbent_error(g);
        if (!errors_upto(g, t, g->n0, errs, step)) {
            free(errs);
            return;
        }
        if (!(e_star >= 0 && e_star <= 1)) {
            set_verdict(t, V_SKIPPED, step, NAN, "incumbent error %g is outside [0, 1]: BOS skipped", e_star);
            free(errs);
            return;
        }
        t->err0 = errs;
        t->e_star = e_star;
        g->triggered++;
        /* Two cases where the table could only continue or say d2, so it
         * is not solved: no completion yet (e* = 1: every kept path ends
         * below it, P(worse) = 0 in every cell) and K1_t overflowing. */
        if (!isfinite(g->best_loss) || !isfinite(bd_bos_k1(t->index, g->bos.gamma))) {
            t->bos = BOS_NEVER;
            snprintf(t->solve_error, sizeof t->solve_error, "%s",
                     isfinite(g->best_loss) ? "K1 overflows" : "no completed trial when BOS started");
            set_verdict(t, n < g->N ? V_CONTINUE : V_FINAL, step, NAN, "BOS: %s: this trial runs to N", t->solve_error);
            return;
        }
        t->bos = BOS_PENDING;
        set_verdict(t, V_SOLVED, step, NAN, "solving");
        t->v.pending = 1;
        return;
    }
    if (t->bos == BOS_NEVER) {
        set_verdict(t, n < g->N ? V_CONTINUE : V_FINAL, step, NAN, "BOS: %s: this trial runs to N", t->solve_error);
        return;
    }
    if (n <= g->n0) {
        set_verdict(t, V_SKIPPED, step, NAN, "the table covers epochs %zu..%zu", g->n0 + 1, g->N);
        return;
    }
    double *errs = bd_xmalloc(n * sizeof *errs);
    int ok = errors_upto(g, t, n, errs, step);
    free(errs);
    if (!ok)
        return;
    set_verdict(t, V_CONTINUE, step, NAN, "deciding");
    t->v.pending = 1;
}

/* A running trial ended: its observations (see the top of the file). The
 * last one carries what the trial cost (seconds the worker reported for
 * the epochs it trained) for the cost model (cost_aware). */
static void trial_observations(bo_bos *g, const trial *t, int completed, double final_loss, double seconds)
{
    size_t last = completed ? g->N : epoch_of(g, t->last_step);
    if (!completed && !last)
        return; /* stopped at no epoch: nothing to place */
    for (size_t i = 0; i < g->n_inter && g->inter[i] < last; i++)
        if (!isnan(t->loss[g->inter[i]]))
            bd_bo_model_add(g->model, t->x, (double)g->inter[i] / (double)g->N, t->loss[g->inter[i]]);
    bd_bo_model_add_costed(g->model, t->x, completed ? 1.0 : (double)last / (double)g->N,
                           completed ? final_loss : t->last_loss, seconds, (double)last);
}

/* ------------------------------------------------------------- suggest */

static bd_sched_status bb_status(const bd_sched *s)
{
    const bo_bos *g = (const bo_bos *)s;
    if (g->max_trials && g->created >= g->max_trials)
        return g->n_run ? BD_STATUS_WAITING : BD_STATUS_DONE;
    return BD_STATUS_RUNNING;
}

static int bb_suggest(bd_sched *s, const bd_suggest_ctx *ctx, bd_suggestion *out, bd_err *err)
{
    bo_bos *g = (bo_bos *)s;
    bd_sched_status st = bb_status(s);
    if (st != BD_STATUS_RUNNING)
        return st == BD_STATUS_DONE ? BD_SUGGEST_DONE : BD_SUGGEST_WAIT;
    bd_rng rng = ctx->rng;
    out->budget = g->def->r_max;
    const double **run_x = bd_xmalloc((g->n_run ? g->n_run : 1) * sizeof *run_x);
    for (size_t i = 0; i < g->n_run; i++)
        run_x[i] = g->run[i]->x;
    int rc = bd_bo_model_next_config(g->model, g->def->space, (size_t)g->created, (size_t)g->n_init, g->n_run, run_x,
                                     &rng, &out->config, err);
    free(run_x);
    return rc ? rc : BD_SUGGEST_TRIAL;
}

/* ------------------------------------------------------------- observe */

static int bb_observe(bd_sched *s, const bd_observe_ctx *ctx, const bd_event *ev, bd_decision *out, bd_err *err)
{
    bo_bos *g = (bo_bos *)s;
    trial *t = NULL;
    long i;
    (void)err;
    switch (ev->type) {
    case BD_EV_CREATED:
        g->created++;
        t = bd_xcalloc(1, sizeof *t);
        t->id = ev->trial_id;
        t->index = (size_t)g->created;
        t->x = bd_xmalloc(g->d * sizeof *t->x);
        if (bd_space_encode(g->def->space, ev->config, t->x)) /* cannot happen: the engine validated it */
            for (size_t j = 0; j < g->d; j++)
                t->x[j] = 0.5;
        t->n_c = bd_bo_model_count(g->model);
        t->loss = bd_xmalloc((g->N + 1) * sizeof *t->loss);
        for (size_t k = 0; k <= g->N; k++)
            t->loss[k] = NAN;
        t->last_step = t->last_loss = t->last_seconds = NAN;
        t->bos = BOS_NONE;
        t->v.p_worse = NAN;
        if (!ctx->replay && bd_bo_model_current(g->model, t->n_c)) {
            bd_err ignored;
            if (sigmas_from(g, bd_bo_model_gp(g->model), t, &ignored)) {
                free(t->sigma);
                t->sigma = NULL; /* computed again when needed */
            }
        }
        insert_trial(g, t);
        break;
    case BD_EV_MEASUREMENT:
        if ((i = find_trial(g, ev->trial_id)) < 0)
            break;
        t = g->run[i];
        if (isfinite(ev->elapsed_seconds))
            t->last_seconds = ev->elapsed_seconds;
        measure(g, t, ev->step, ev->loss);
        if (!t->v.pending || ctx->replay) /* a replay finishes the last verdict in replayed() */
            break;
        finish_verdict(g, t);
        if (t->v.kind == V_STOP) {
            out->stop = 1;
            snprintf(out->reason, sizeof out->reason, "%s", t->v.note);
        }
        break;
    case BD_EV_COMPLETED:
    case BD_EV_STOPPED:
        if (!(t = take_trial(g, ev->trial_id)))
            break;
        if (ev->type == BD_EV_COMPLETED) {
            trial_observations(g, t, 1, ev->loss,
                               isfinite(ev->elapsed_seconds) ? ev->elapsed_seconds : t->last_seconds);
            if (isfinite(ev->loss) && ev->loss < g->best_loss)
                g->best_loss = ev->loss;
        } else {
            size_t n = epoch_of(g, t->last_step);
            trial_observations(g, t, 0, NAN, t->last_seconds);
            g->stopped++;
            g->epochs_saved += n ? (double)(g->N - n) : 0;
        }
        trial_free(t);
        if (!ctx->replay) /* a replay rebuilds once, in replayed() */
            bd_bo_model_rebuild(g->model);
        break;
    case BD_EV_FAILED:
    case BD_EV_EXPIRED:
        trial_free(take_trial(g, ev->trial_id));
        break;
    case BD_EV_PRIOR: /* never passed: learns_from_prior is 0 (its GP models curves, not final values) */
        break;
    }
    return 0;
}

static void bb_replayed(bd_sched *s)
{
    bo_bos *g = (bo_bos *)s;
    bd_bo_model_rebuild(g->model);
    for (size_t i = 0; i < g->n_run; i++)
        if (g->run[i]->v.pending)
            finish_verdict(g, g->run[i]);
}

/* ------------------------------------------------------------- describe */

static json_t *number_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static int bb_describe(const bd_sched *s, json_t **out)
{
    const bo_bos *g = (const bo_bos *)s;
    json_t *model = bd_bo_model_describe(g->model), *inter = json_array(), *verdicts = json_array();
    for (size_t i = 0; i < g->n_inter; i++)
        json_array_append_new(inter, json_integer((json_int_t)g->inter[i]));
    for (size_t i = 0; i < g->n_run; i++) {
        const trial *t = g->run[i];
        if (t->v.kind == V_NONE)
            continue;
        json_array_append_new(verdicts,
                              json_pack("{s:I, s:o, s:s, s:s, s:o, s:o, s:s}", "trial_id", (json_int_t)t->id, "epoch",
                                        number_or_null(t->v.epoch), "action", t->v.kind == V_STOP ? "stop" : "continue",
                                        "verdict", verdict_names[t->v.kind], "p_worse", number_or_null(t->v.p_worse),
                                        "incumbent_error", t->bos != BOS_NONE ? json_real(t->e_star) : json_null(),
                                        "note", t->v.pending ? "pending" : t->v.note));
    }
    *out = json_pack("{s:I, s:I, s:I, s:I, s:s, s:o, s:b, s:I, s:I, s:o, s:f, s:{s:I, s:I, s:f}, s:o}", "n_init",
                     (json_int_t)g->n_init, "created", (json_int_t)g->created, "running", (json_int_t)g->n_run,
                     "observations", (json_int_t)bd_bo_model_count(g->model), "multiplier",
                     bd_bo_model_multiplier_name(g->model), "model", model, "model_error", bd_bo_model_error(g->model),
                     "epochs", (json_int_t)g->N, "n0", (json_int_t)g->n0, "intermediate_epochs", inter, "kappa",
                     g->kappa, "bos", "triggered", (json_int_t)g->triggered, "stopped", (json_int_t)g->stopped,
                     "epochs_saved", g->epochs_saved, "verdicts", verdicts);
    return *out ? 0 : BD_EINTERNAL;
}

static void bb_destroy(bd_sched *s)
{
    bo_bos *g = (bo_bos *)s;
    if (!g)
        return;
    for (size_t i = 0; i < g->n_run; i++)
        trial_free(g->run[i]);
    free(g->run);
    free(g->inter);
    bd_bo_model_free(g->model);
    free(g);
}

const struct bd_sched_ops bd_sched_bo_bos = {
    .abi = BD_SCHED_ABI,
    .name = "bo_bos",
    .multi_fidelity = 1,
    .create = bb_create,
    .suggest = bb_suggest,
    .observe = bb_observe,
    .replayed = bb_replayed,
    .status = bb_status,
    .describe = bb_describe,
    .destroy = bb_destroy,
    .takes_enqueued = 1,
};
