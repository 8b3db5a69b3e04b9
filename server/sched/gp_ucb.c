/* gp_ucb.c: GP-UCB Bayesian optimisation at the full budget (Srinivas,
 * Krause, Kakade, Seeger, ICML 2010), with GP-BUCB hallucination of running
 * trials for parallel workers (Desautels, Krause, Burdick, JMLR 2014;
 * docs/ALGORITHMS.md section 8), as BO-BOS uses it for its outer loop
 * (section 6). The BO baseline,
 * and a sampler for studies with no fidelity.
 *
 * Every trial runs at resource.max. The first n_init trials are random
 * (bd_space_sample); after that, a trial is x_t = argmax over the unit cube
 * of -mu(x) + m_t sigma(x) (losses are minimised, so this is the UCB of the
 * negated loss), where mu comes from the GP of the completed trials and
 * sigma from the same GP with every running trial added as an observation
 * (its value does not matter for the variance: GP-BUCB), so workers asking
 * at once get different, spread-out points. m_t (option multiplier):
 *   "paper": sqrt(beta_t), beta_t = 2 log(|D| t^2 pi^2 / (6 delta)), |D' the
 *            number of acquisition candidates, t = the trial's index;
 *   "code":  0.2 d ln(2t), the BO-BOS authors' code (d parameters).
 *
 * Options acquisition ("logei", new studies' default since issue 14: the
 * argmax of log EI instead of the UCB above), cost_aware (EI per predicted second),
 * initial (a Sobol start) and warp (a quantile transform of the losses)
 * are bo_model.h's; a completed trial's cost is its elapsed_seconds over
 * its budget.
 *
 * The model, its purity rule (a refit at observation count s sees exactly
 * the first s observations and an rng seeded from (study seed, s), so a
 * replay is bit-identical) and the proposal live in bo_model.h, shared with
 * bo_bos.c; this file keeps the random start and the configs.
 *
 * Values: a diverged run (loss +INFINITY) counts as the worst finite loss
 * seen; failed and expired trials leave no observation.
 *
 * Cost: observe(COMPLETED) O(cap^3) plus, on the O(log n) refit points,
 * the fit; suggest O(candidates x cap^2) for the acquisition (35 ms at
 * 2,000 trials in 8 dimensions, tests/bench/gp_latency.c).
 *
 * Several objectives or constraints (issue 41): ParEGO (Knowles 2006) with
 * the probability of feasibility (Gardner et al. 2014), model/parego.h.
 * Each suggestion after the n_init start draws its weight vector from the
 * suggestion's rng, scalarizes every result (completed trials and warm
 * starts, feasible or not) by the augmented Chebyshev function of its
 * normalised losses, fits a GP to that and, with constraints, another to
 * the violation, and maximises log EI + log P(feasible) (or UCB without
 * constraints). The model is thus rebuilt and refitted at every suggestion
 * from the stored results alone: a replay keeps only the results (d + m + 1
 * numbers each) and proposes the same trials. Options as above, except
 * that cost_aware and warp "quantile" are refused (a cost is an objective;
 * the scalarization already bounds the scale), "ucb" with constraints (a
 * UCB value has no sign to weigh by a probability), and "stopping" with
 * several objectives (the rules judge one). Cost per suggestion: O(n m)
 * plus two fits on at most BD_GP_TRAIN_CAP points each. */
#include "sched.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../model/acq_space.h"
#include "../model/parego.h"
#include "bo_model.h"
#include "stopping_rule.h"

extern const struct bd_sched_ops bd_sched_gp_ucb;

typedef struct pending {
    int64_t trial_id;
    double *x; /* d coordinates, owned */
} pending;

typedef struct gp_ucb {
    bd_sched base;
    const bd_study_def *def;
    size_t d;             /* parameters = unit-cube coordinates */
    long long n_init;     /* random trials first */
    long long max_trials; /* 0 = unlimited */

    long long created, running;
    bd_bo_model *model; /* completed observations in completion order, and their GP */
    pending *pend;      /* running trials with their coordinates */
    bd_stop_rule *stop; /* option "stopping" (stopping_rule.h), or NULL */
    size_t n_pend, cap_pend;
    /* several objectives or constraints: ParEGO over the results below */
    int mo;                  /* def->n_objectives > 1 or def->n_constraints > 0 */
    size_t m;                /* objectives */
    int constrained;         /* def->n_constraints > 0 */
    bd_bo_ucb ucb;           /* the options read */
    bd_acq_space *acq_space; /* mo: the space compiled for the optimiser */
    unsigned *n_choices;     /* mo: d entries, 0 numeric, else K */
    double *ox, *ol, *ov;    /* mo: results in arrival order: n x d, n x m, n */
    size_t on, ocap;
} gp_ucb;

/* ------------------------------------------------------------- create */

/* The options a study with several objectives or constraints refuses. */
static int mo_check(const bd_study_def *def, const bd_bo_ucb *u, bd_err *err)
{
    const json_t *stopping = json_object_get(def->options, BD_STOP_RULE_OPTION);
    if (u->cost_aware)
        return bd_err_set(err, BD_EINVAL, "scheduler.options.cost_aware",
                          "gp_ucb with several objectives or constraints is not cost-aware (make the cost an objective)");
    if (u->warp != BD_BO_WARP_NONE)
        return bd_err_set(err, BD_EINVAL, "scheduler.options.warp",
                          "gp_ucb with several objectives or constraints models the scalarized losses unwarped");
    if (def->n_constraints > 0 && u->acquisition != BD_BO_ACQ_LOGEI)
        return bd_err_set(err, BD_EINVAL, "scheduler.options.acquisition",
                          "gp_ucb with constraints needs \"acquisition\": \"logei\" (it adds the log probability "
                          "of feasibility; a UCB value has no sign to weigh)");
    if (def->n_objectives > 1 && stopping && !json_is_null(stopping))
        return bd_err_set(err, BD_EINVAL, "scheduler.options.stopping",
                          "the stopping rules judge one objective; this study has %zu", def->n_objectives);
    return 0;
}

static int gp_create(const bd_study_def *def, bd_sched **out, bd_err *err)
{
    static const char *const known[] = {"n_init",     "max_trials",    "multiplier", "delta", "acquisition",
                                        "cost_aware", "cost_exponent", "initial",    "warp",  BD_STOP_RULE_OPTION,
                                        NULL};
    size_t d = bd_space_size(def->space);
    long long n_init, max_trials;
    bd_bo_model_options mo = {.name = "gp_ucb", .fidelity = 0, .salt = 0x67705f7563620001ULL /* "gp_ucb" */};
    bd_bo_model *model = NULL;
    bd_stop_rule *stop = NULL;
    int rc = bd_opt_known(def->options, known, err);
    if (!rc)
        rc = bd_opt_int(def->options, "n_init", (long long)(2 * d > 4 ? 2 * d : 4), 1, 100000, &n_init, err);
    if (!rc)
        rc = bd_opt_int(def->options, "max_trials", 0, 0, 1000000000LL, &max_trials, err);
    if (!rc)
        rc = bd_bo_ucb_read(def->options, &mo.ucb, err);
    if (!rc)
        rc = bd_bo_start_cost_read(def->options, &mo.ucb, err);
    int multi = def->n_objectives > 1 || def->n_constraints > 0;
    if (!rc && multi)
        rc = mo_check(def, &mo.ucb, err);
    if (!rc)
        rc = bd_stop_rule_create(def, &stop, err);
    if (!rc)
        rc = bd_bo_model_new(def, &mo, &model, err);
    bd_acq_space *as = NULL;
    if (!rc && multi)
        rc = bd_acq_space_new(def->space, &as, err);
    if (rc) {
        bd_bo_model_free(model);
        bd_stop_rule_free(stop);
        return rc;
    }
    gp_ucb *g = bd_xcalloc(1, sizeof *g);
    g->base.ops = &bd_sched_gp_ucb;
    g->def = def;
    g->d = d;
    g->n_init = n_init;
    g->max_trials = max_trials;
    g->model = model;
    g->stop = stop;
    g->ucb = mo.ucb;
    if (multi) {
        g->mo = 1;
        g->m = def->n_objectives > 1 ? def->n_objectives : 1;
        g->constrained = def->n_constraints > 0;
        g->acq_space = as;
        g->n_choices = bd_xcalloc(d ? d : 1, sizeof *g->n_choices);
        for (size_t j = 0; j < d; j++) {
            const bd_param *p = bd_space_param(def->space, j);
            if (p->type == BD_PARAM_CATEGORICAL)
                g->n_choices[j] = (unsigned)json_array_size(p->choices);
        }
    }
    *out = &g->base;
    return 0;
}

/* ------------------------------------------------------------- suggest */

static bd_sched_status gp_status(const bd_sched *s)
{
    const gp_ucb *g = (const gp_ucb *)s;
    if (g->max_trials && g->created >= g->max_trials)
        return g->running ? BD_STATUS_WAITING : BD_STATUS_DONE;
    return BD_STATUS_RUNNING;
}

/* ParEGO's proposal from the results so far (a random config before the first). */
static int mo_suggest(const gp_ucb *g, bd_rng *rng, bd_suggestion *out, bd_err *err)
{
    if (!g->on) {
        out->config = bd_space_sample(g->def->space, rng);
        return BD_SUGGEST_TRIAL;
    }
    const double **run_x = bd_xmalloc((g->n_pend ? g->n_pend : 1) * sizeof *run_x);
    for (size_t i = 0; i < g->n_pend; i++)
        run_x[i] = g->pend[i].x;
    bd_acq_problem p;
    bd_acq_options o;
    bd_acq_space_problem(g->acq_space, &p);
    bd_acq_options_default(&o);
    double t = (double)(g->created + 1);
    bd_parego_input in = {
        .d = g->d,
        .n_choices = g->n_choices,
        .m = g->m,
        .n = g->on,
        .X = g->ox,
        .losses = g->ol,
        .violation = g->constrained ? g->ov : NULL,
        .acquisition = g->ucb.acquisition == BD_BO_ACQ_LOGEI ? BD_PAREGO_LOGEI : BD_PAREGO_UCB,
        .ucb_multiplier = g->ucb.multiplier == BD_BO_MULT_CODE
                              ? bd_acq_ucb_multiplier_code(g->d, t)
                              : sqrt(bd_acq_ucb_beta_paper((double)o.n_candidates, t, g->ucb.delta)),
        .n_run = g->n_pend,
        .run_x = run_x,
    };
    double *u = bd_xmalloc(g->d * sizeof *u);
    int rc = bd_parego_propose(&in, &p, rng, u, NULL, err);
    if (!rc)
        out->config = bd_space_decode(g->def->space, u);
    free(u);
    free(run_x);
    return rc ? rc : BD_SUGGEST_TRIAL;
}

/* Appends a result: coordinates x (copied), the event's losses (ev->loss
 * with one objective) and its violation. */
static void mo_add(gp_ucb *g, const double *x, const bd_event *ev)
{
    if (g->on == g->ocap) {
        g->ocap = g->ocap ? 2 * g->ocap : 32;
        g->ox = bd_xrealloc(g->ox, g->ocap * (g->d ? g->d : 1) * sizeof *g->ox);
        g->ol = bd_xrealloc(g->ol, g->ocap * g->m * sizeof *g->ol);
        g->ov = bd_xrealloc(g->ov, g->ocap * sizeof *g->ov);
    }
    memcpy(g->ox + g->on * g->d, x, g->d * sizeof *x);
    for (size_t k = 0; k < g->m; k++)
        g->ol[g->on * g->m + k] = g->m > 1 && ev->losses ? ev->losses[k] : ev->loss;
    g->ov[g->on] = g->constrained ? ev->violation : 0;
    g->on++;
}

static int gp_suggest(bd_sched *s, const bd_suggest_ctx *ctx, bd_suggestion *out, bd_err *err)
{
    gp_ucb *g = (gp_ucb *)s;
    bd_sched_status st = gp_status(s);
    if (st != BD_STATUS_RUNNING)
        return st == BD_STATUS_DONE ? BD_SUGGEST_DONE : BD_SUGGEST_WAIT;
    bd_rng rng = ctx->rng;
    const bd_gp *gp = bd_bo_model_gp(g->model);
    out->budget = g->def->r_max;
    if (g->created < g->n_init) {
        out->config = bd_bo_model_initial_config(g->model, (size_t)g->created, &rng);
        return BD_SUGGEST_TRIAL;
    }
    if (g->mo)
        return mo_suggest(g, &rng, out, err);
    if (!gp) {
        out->config = bd_space_sample(g->def->space, &rng);
        return BD_SUGGEST_TRIAL;
    }
    double *u = bd_xmalloc(g->d * sizeof *u);
    const double **run_x = bd_xmalloc((g->n_pend ? g->n_pend : 1) * sizeof *run_x);
    for (size_t i = 0; i < g->n_pend; i++)
        run_x[i] = g->pend[i].x;
    /* The best observed configs seed the local search: 4 distinct points
     * (bd_bo_model_best_points; the loop that was here never compared a
     * later start with point 0, so a best point 0 could start them all). */
    double *starts = bd_xmalloc(4 * g->d * sizeof *starts);
    size_t n_starts = bd_bo_model_best_points(g->model, 4, starts);
    int rc = bd_bo_model_propose(g->model, (double)(g->created + 1), g->n_pend, run_x, n_starts ? starts : NULL,
                                 n_starts, &rng, u, err);
    if (!rc)
        out->config = bd_space_decode(g->def->space, u);
    free(run_x);
    free(starts);
    free(u);
    return rc ? rc : BD_SUGGEST_TRIAL;
}

/* ------------------------------------------------------------- observe */

static long find_pending(const gp_ucb *g, int64_t trial_id)
{
    for (size_t i = 0; i < g->n_pend; i++)
        if (g->pend[i].trial_id == trial_id)
            return (long)i;
    return -1;
}

/* Removes trial_id from the running set; its coordinates are handed to
 * *x (new; NULL if it was not there). */
static void take_pending(gp_ucb *g, int64_t trial_id, double **x)
{
    long i = find_pending(g, trial_id);
    *x = NULL;
    if (i < 0)
        return;
    *x = g->pend[i].x;
    g->pend[i] = g->pend[--g->n_pend];
}

static int gp_observe(bd_sched *s, const bd_observe_ctx *ctx, const bd_event *ev, bd_decision *out, bd_err *err)
{
    gp_ucb *g = (gp_ucb *)s;
    double *x = NULL;
    (void)err;
    bd_stop_rule_observe(g->stop, ev, out); /* NULL without the option "stopping" */
    switch (ev->type) {
    case BD_EV_CREATED:
        g->created++;
        g->running++;
        x = bd_xmalloc(g->d * sizeof *x);
        if (bd_space_encode(g->def->space, ev->config, x)) { /* cannot happen: the engine validated it */
            free(x);
            break;
        }
        if (g->n_pend == g->cap_pend) {
            g->cap_pend = g->cap_pend ? 2 * g->cap_pend : 8;
            g->pend = bd_xrealloc(g->pend, g->cap_pend * sizeof *g->pend);
        }
        g->pend[g->n_pend++] = (pending){ev->trial_id, x};
        break;
    case BD_EV_COMPLETED:
        g->running--;
        take_pending(g, ev->trial_id, &x);
        if (!x)
            break;
        if (g->mo) {
            mo_add(g, x, ev);
            free(x);
            break;
        }
        bd_bo_model_add_costed(g->model, x, 1.0, ev->loss, ev->elapsed_seconds, ev->budget);
        free(x);
        if (!ctx->replay) /* a replay rebuilds once, in replayed() */
            bd_bo_model_rebuild(g->model);
        break;
    case BD_EV_FAILED:
    case BD_EV_EXPIRED:
    case BD_EV_STOPPED:
        g->running--;
        take_pending(g, ev->trial_id, &x);
        free(x);
        break;
    case BD_EV_PRIOR: /* a warm-start result: one more observation for the GP */
        x = bd_xmalloc(g->d * sizeof *x);
        if (g->mo && bd_space_encode(g->def->space, ev->config, x) == 0) {
            mo_add(g, x, ev);
        } else if (!g->mo && bd_space_encode(g->def->space, ev->config, x) == 0) {
            bd_bo_model_add(g->model, x, 1.0, ev->loss);
            if (!ctx->replay)
                bd_bo_model_rebuild(g->model);
        }
        free(x);
        break;
    case BD_EV_MEASUREMENT:
        break;
    }
    return 0;
}

static void gp_replayed(bd_sched *s)
{
    bd_bo_model_rebuild(((gp_ucb *)s)->model);
}

/* ------------------------------------------------------------- describe */

static int gp_describe(const bd_sched *s, json_t **out)
{
    const gp_ucb *g = (const gp_ucb *)s;
    *out = json_pack("{s:I, s:I, s:I, s:I, s:s, s:o, s:b}", "n_init", (json_int_t)g->n_init, "created",
                     (json_int_t)g->created, "running", (json_int_t)g->running, "observations",
                     (json_int_t)bd_bo_model_count(g->model), "multiplier", bd_bo_model_multiplier_name(g->model),
                     "model", bd_bo_model_describe(g->model), "model_error", bd_bo_model_error(g->model));
    if (g->stop)
        json_object_set_new(*out, "stopping", bd_stop_rule_describe(g->stop));
    if (g->mo) {
        json_object_set_new(*out, "observations", json_integer((json_int_t)g->on));
        json_object_set_new(*out, "parego",
                            json_pack("{s:I, s:b, s:s, s:f, s:s}", "objectives", (json_int_t)g->m, "constraints",
                                      g->constrained, "scalarization", "augmented_chebyshev", "rho", BD_PAREGO_RHO,
                                      "weights", "uniform_simplex"));
    }
    return 0;
}

/* New studies get log EI, the acquisition issue 14 asked for (Ament et al.
 * 2023; BoTorch's and Optuna's GPSampler's default): on the three learning-
 * curve tables it found the top 1% in 68 of 120 (table, workers, seed) runs
 * against UCB's 61 and was level on the loose target, and over the
 * 50-parameter CASH space of the MindWare replay it won 27, tied 45 and
 * lost 10 of 82 (dataset, seed) runs (tests/bench/README-mf.md). A body that names UCB's own options (multiplier, delta)
 * keeps UCB, and a stored study without the option keeps UCB, so it replays
 * as it ran (sched.h, new_study_defaults). */
static void gp_new_study_defaults(const bd_study_def *def, json_t *options)
{
    (void)def;
    if (!json_object_get(options, "acquisition") && !json_object_get(options, "multiplier") &&
        !json_object_get(options, "delta"))
        json_object_set_new(options, "acquisition", json_string("logei"));
}

static void gp_destroy(bd_sched *s)
{
    gp_ucb *g = (gp_ucb *)s;
    if (!g)
        return;
    for (size_t i = 0; i < g->n_pend; i++)
        free(g->pend[i].x);
    free(g->pend);
    free(g->ox);
    free(g->ol);
    free(g->ov);
    free(g->n_choices);
    bd_acq_space_free(g->acq_space);
    bd_bo_model_free(g->model);
    bd_stop_rule_free(g->stop);
    free(g);
}

/* Its GP (the model's observations and its factor, BD_GP_TRAIN_CAP points
 * at most) and the coordinates of each running trial. */
static size_t gp_held_bytes(const bd_sched *s)
{
    const gp_ucb *g = (const gp_ucb *)s;
    size_t bytes = BD_HEAP_BLOCK(sizeof *g) + bd_bo_model_held_bytes(g->model) +
                   BD_HEAP_BLOCK(g->cap_pend * sizeof *g->pend) + g->n_pend * BD_HEAP_BLOCK(g->d * sizeof(double)) +
                   bd_stop_rule_held_bytes(g->stop);
    if (g->mo)
        bytes += BD_HEAP_BLOCK(g->ocap * (g->d ? g->d : 1) * sizeof(double)) +
                 BD_HEAP_BLOCK(g->ocap * g->m * sizeof(double)) + BD_HEAP_BLOCK(g->ocap * sizeof(double)) +
                 BD_HEAP_BLOCK((g->d ? g->d : 1) * sizeof(unsigned)) + bd_acq_space_held_bytes(g->acq_space);
    return bytes + bytes / 8 + 1024; /* glibc's rounding, not counted block by block */
}

const struct bd_sched_ops bd_sched_gp_ucb = {
    .abi = BD_SCHED_ABI,
    .name = "gp_ucb",
    .create = gp_create,
    .suggest = gp_suggest,
    .observe = gp_observe,
    .replayed = gp_replayed,
    .status = gp_status,
    .describe = gp_describe,
    .destroy = gp_destroy,
    .takes_enqueued = 1,
    .learns_from_prior = 1,
    .new_study_defaults = gp_new_study_defaults,
    .held_bytes = gp_held_bytes,
    .multi_objective = 1,
    .takes_constraints = 1,
};
