/* rising_bandits.c: Rising Bandits for CASH (Li, Jiang, Gao, Shao, Zhang,
 * Cui, AAAI 2020, Algorithm 1 and its Inequality 9, with the smooth growth
 * rate of "Rising Bandits with Loose Concavity" and the cost-aware horizon
 * of "Towards Cost-Aware CASH"; docs/ALGORITHMS.md section 4,
 * "Rising Bandits for CASH").
 * Algorithm selection as a bandit whose arms each run their own
 * hyperparameter optimizer; arms that cannot end up best are eliminated.
 *
 * Arms: the choices of a top-level categorical parameter (option
 * `arm_parameter`; by default the only top-level categorical with
 * conditional children). A pull of arm k is one trial at resource.max whose
 * config is a point of bd_space_subspace(space, arm_parameter, choice k)
 * plus {arm_parameter: choice k} (just the latter for an empty sub-space).
 *
 * Inner optimizer per arm (option `inner`): "gp_ucb" (absent: the paper's
 * GP-UCB through bo_model.c, the arm's first `n_init` pulls random, running
 * pulls hallucinated, refits drawn from (study seed ^ salt ^ arm, s)),
 * "random", or "tpe" (not in the paper, which uses SMAC: proposer.h's TPE
 * with Optuna 3.1's single-fidelity defaults on the arm's COMPLETED pulls).
 *
 * Reward (rising_bound.h): the value mapped into [0, 1] with
 * objective.bounds, or a maximised value taken as in [0, 1]; diverged = 0.
 * y_k(t) = the best reward of arm k after its t-th pull.
 *
 * Bounds at horizon T = limits.trials, t = the arm's own finished pulls
 * (as the paper's Inequality 9 bounds r_k(T); Algorithm 1 line 7's global
 * counter would shrink the horizon by the other arms' pulls):
 *   w = (y(t) - y(t - C)) / C once t > C (window C, option `window`,
 *   default 7, the paper's), else the arm cannot be eliminated (u = 1);
 *   u = min(y(t) + w (T - t), 1), l = y(t)           upper_bound "paper";
 *   u = max(u_paper, min(y + (1 + 1/sqrt(k')) sigma ln((n + h) / n), 1))
 *                                                    upper_bound "tail",
 * sigma the scale of the arm's upper reward tail from its top k spacings
 * (option `tail`, k = 5), n its COMPLETED pulls, h the horizon (T - t, or
 * with `cost_aware` the seconds left over the arm's mean seconds a pull),
 * k' = min(k, n - 1). Elimination: j goes when another surviving i has
 * l_i >= u_j (`elimination` "non_strict", the paper's) or l_i > u_j
 * ("strict", the authors' code).
 *
 * Allocation (option `allocation`): "rounds" (the paper's: one pull of
 * every surviving arm per round, handed out in arm order, WAIT until the
 * round's results are in; the round's last result updates the bounds and
 * eliminates), "ei" or "thompson" (not in the paper; no rounds: each
 * surviving arm first gets window + 1 pulls, fewest first, then each pull
 * goes to the arm with the largest expected rise of the study's best reward
 * (bd_rising_tail_ei), or the largest final reward drawn from each arm's
 * tail model (bd_rising_tail_sample, horizon the study's pulls left, or
 * divided among the surviving arms with `draw_horizon` "share"); every
 * result may eliminate). With one arm left, every suggest is a new pull of
 * it, with no barrier. DONE once T pulls were created.
 *
 * Failed pulls (option `max_retries`, not in the paper): a pull that fails,
 * expires or is stopped is offered again to its arm up to max_retries times
 * (extra "retry"); after that, or with max_retries 0 (the paper's rule), it
 * counts as a pull with no improvement. Every attempt is a trial of T.
 *
 * Invariants: state changes only in observe() (CREATED names the arm by
 * config[arm_parameter]; the finishing events update y, the bounds and the
 * round), and everything is a function of the events (bo_model's purity
 * rule covers the GPs), so a replay proposes the same next pulls. A stored
 * study keeps the defaults it was created with; new studies are stored
 * with the values after the slash below.
 *
 * Options (absent / new studies): arm_parameter, inner ("gp_ucb" / "tpe",
 * unless the study sets a GP option), n_init (3; not with "tpe"),
 * multiplier and delta (as gp_ucb), window (7), elimination ("non_strict" |
 * "strict"), cost_aware (false), halve_horizon (false; the authors' code,
 * only with cost_aware), upper_bound ("paper" / "tail"), tail (5, 1..1000;
 * only with "tail", "ei" or "thompson"), allocation ("rounds" /
 * "thompson"), draw_horizon ("left" / "share"; only with "thompson"),
 * max_retries (0 / 2; 0..100). The paper-exact rule is {"upper_bound":
 * "paper", "max_retries": 0, "inner": "gp_ucb", "allocation": "rounds"}.
 * Unknown keys are rejected. The study must declare limits.trials,
 * objective.bounds for a minimised objective, and limits.seconds for
 * cost_aware. Why each rule beyond the paper, and what it was measured to
 * do: tests/bench/README-cash.md, "rising_bandits' rules and their
 * measurements".
 *
 * describe(): {round (in last_arm and done: the last one played), phase
 * (rounds | ei | thompson | last_arm | done), allocation, draw_horizon (with
 * "thompson"), window, T, pulls, inner, elimination, cost_aware,
 * upper_bound, tail (with "tail"), max_retries, arms: [{arm, pulls (retried
 * attempts excluded), running, best_reward (null before a finished pull),
 * growth_rate (null before C + 1), lower, upper, eliminated_round,
 * eliminated_by, retries, tail_scale (with "tail"; null before two
 * rewards)}], incumbent}. The incumbent, shaped like the engine's, is the
 * best completed trial of the surviving arm with the largest l among those
 * with a finite result (ties: lower loss, then arm order); absent while
 * there is none, and the engine then shows its own.
 *
 * Cost: observe O(arms + running pulls) plus an arm's GP rebuild on
 * COMPLETED; suggest one acquisition over a small sub-space. */
#include "sched.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bo_model.h"
#include "proposer.h"
#include "rising_bound.h"

extern const struct bd_sched_ops bd_sched_rising_bandits;

enum { INNER_GP_UCB, INNER_RANDOM, INNER_TPE };
enum { ALLOC_ROUNDS, ALLOC_EI, ALLOC_THOMPSON };


typedef struct best_trial {
    int64_t trial_id; /* 0: none yet */
    int64_t config_id;
    double loss, budget;
    json_t *config; /* owned: the full config */
} best_trial;

typedef struct arm {
    const json_t *choice; /* borrowed from the space */
    bd_space *sub;        /* owned: the arm's sub-space */
    bd_study_def def;     /* the study's definition over sub; model borrows it */
    bd_bo_model *model;   /* the gp_ucb inner optimizer; NULL for random, tpe or an empty sub-space */
    bd_proposer *tpe;     /* the tpe inner optimizer (proposer.h); NULL otherwise or for an empty sub-space */
    long long created;    /* pulls handed out */
    long long running;
    long long retried;    /* pulls handed out again after a failure (created - retried = pulls counted) */
    int attempt_next;     /* the attempt number of the arm's next CREATED (0: a new pull) */
    double *y; /* y[i]: best reward after finished pull i + 1 */
    size_t n_y, cap_y;
    double *top;     /* upper_bound "tail": the tail_k + 1 largest rewards of COMPLETED pulls, descending */
    size_t n_top;
    size_t n_r;      /* COMPLETED pulls (rewards) in all */
    double tail_scale; /* bd_rising_tail_scale of rewards; NAN before two rewards */
    double seconds;        /* elapsed_seconds of COMPLETED pulls that reported it */
    long long timed;       /* how many */
    double growth;         /* NAN before window + 1 finished pulls */
    bd_rising_bound bound; /* updated after every finished pull; frozen at elimination */
    int alive;
    long long eliminated_round; /* 0 while surviving */
    size_t eliminated_by;       /* the arm that eliminated it */
    best_trial best;            /* lowest finite loss */
} arm;

typedef struct pull { /* a running trial */
    int64_t trial_id, config_id;
    size_t arm;
    double budget;
    json_t *config; /* owned */
    double *x;      /* owned: coordinates in the arm's sub-space, NULL without a model */
    int attempt;    /* 0: first attempt of the pull; i: its i-th retry */
} pull;

typedef struct rising {
    bd_sched base;
    const bd_study_def *def;
    size_t arm_index;      /* the arm parameter's index in the space */
    const char *arm_param; /* its name, borrowed from the space */
    arm *arms;             /* K of them; never reallocated (models borrow &arms[k].def) */
    size_t K, alive;
    int inner, strict, cost_aware, halve, tail;
    int alloc;           /* option allocation, ALLOC_*: round robin (the paper's rounds), or no rounds:
                            "ei" (see arm_ei) or "thompson" (see next_arm_thompson) */
    int draw_share;      /* option draw_horizon "share": a Thompson draw's horizon is the pulls left
                            divided by the surviving arms (see next_arm_thompson) */
    long long n_init, window, T, tail_k, max_retries;
    long long created;   /* pulls created, all arms */
    long long round;     /* the round being handed out, from 1 */
    long long decided;   /* the last round whose eliminations were made */
    double used_seconds; /* elapsed_seconds of finished trials */
    pull *pend;          /* running pulls in creation order */
    size_t n_pend, cap_pend;
} rising;

static const char *const alloc_names[] = {"rounds", "ei", "thompson", NULL}; /* by ALLOC_* */

/* Do the arms keep their reward tails (the tail bound, or an allocation
 * that reads them)? */
static int uses_tail(const rising *r)
{
    return r->tail || r->alloc != ALLOC_ROUNDS;
}

/* ------------------------------------------------------------- create */

/* Does some parameter have a condition on parameter i? */
static int has_children(const bd_space *s, size_t i)
{
    for (size_t j = i + 1; j < bd_space_size(s); j++) {
        const bd_param *q = bd_space_param(s, j);
        for (size_t c = 0; c < q->n_conds; c++)
            if (q->conds[c].parent == i)
                return 1;
    }
    return 0;
}

static int is_top_categorical(const bd_space *s, size_t i)
{
    const bd_param *p = bd_space_param(s, i);
    return p->type == BD_PARAM_CATEGORICAL && p->n_conds == 0;
}

static int find_arm_parameter(const bd_space *s, const json_t *opts, size_t *out, bd_err *err)
{
    static const char field[] = "scheduler.options.arm_parameter";
    const char *name = NULL;
    size_t n = 0;
    int rc = bd_opt_string(opts, "arm_parameter", NULL, NULL, &name, err);
    if (rc)
        return rc;
    if (name) {
        long p = bd_space_find(s, name);
        if (p < 0 || !is_top_categorical(s, (size_t)p))
            return bd_err_set(err, BD_EINVAL, field,
                              "\"%s\" is not a top-level (unconditional) categorical parameter of the space", name);
        *out = (size_t)p;
        return 0;
    }
    for (size_t i = 0; i < bd_space_size(s); i++)
        if (is_top_categorical(s, i) && has_children(s, i)) {
            if (n++ == 0)
                *out = i;
        }
    if (n == 1)
        return 0;
    return bd_err_set(err, BD_EINVAL, field,
                      n == 0 ? "no top-level categorical parameter has conditional children: name the parameter "
                               "whose choices are the arms"
                             : "several top-level categorical parameters have conditional children: name the one "
                               "whose choices are the arms");
}

/* What the study must declare besides the options. */
static int check_study(const bd_study_def *def, int cost_aware, int halve, bd_err *err)
{
    if (def->limit_trials <= 0)
        return bd_err_set(err, BD_EINVAL, "limits.trials",
                          "rising_bandits needs limits.trials: the horizon T, in pulls (trials) over all arms");
    if (!def->maximize && !def->has_bounds)
        return bd_err_set(err, BD_EINVAL, "objective.bounds",
                          "rising_bandits needs objective.bounds to map a loss into [0, 1]");
    if (cost_aware && !(def->limit_seconds > 0))
        return bd_err_set(err, BD_EINVAL, "limits.seconds",
                          "the cost-aware variant of rising_bandits needs limits.seconds, its time budget");
    if (halve && !cost_aware)
        return bd_err_set(err, BD_EINVAL, "scheduler.options.halve_horizon",
                          "applies to the cost-aware variant only (cost_aware: true)");
    return 0;
}

static int open_arm(rising *r, size_t k, const bd_bo_ucb *ucb, bd_err *err)
{
    arm *a = &r->arms[k];
    a->choice = json_array_get(bd_space_param(r->def->space, r->arm_index)->choices, k);
    a->alive = 1;
    a->growth = NAN;
    a->tail_scale = NAN;
    a->bound = (bd_rising_bound){.lower = 0.0, .upper = 1.0, .ready = 0};
    int rc = bd_space_subspace(r->def->space, r->arm_param, a->choice, &a->sub, err);
    if (rc)
        return rc;
    a->def = *r->def;
    a->def.space = a->sub;
    if (r->inner == INNER_RANDOM || bd_space_size(a->sub) == 0)
        return 0;
    if (r->inner == INNER_TPE) {
        /* Optuna 3.1's TPESampler on the arm's sub-space (proposer.h's
         * single-fidelity defaults, no cost model: Optuna has none). The
         * study's own options are rising_bandits', not the proposer's
         * (cost_aware means the horizon here), so the arm gets its own. */
        bd_study_def d = a->def;
        json_t *o = json_pack("{s:s, s:b}", "sampler", "tpe", "cost_aware", 0);
        d.options = o;
        rc = bd_proposer_create(&d, "tpe", 0, &a->tpe, err);
        json_decref(o);
        return rc;
    }
    /* Each arm's refits draw from their own stream. */
    bd_bo_model_options mo = {.name = "rising_bandits",
                              .fidelity = 0,
                              .salt = 0x726973696e670000ULL /* "rising" */ ^ (uint64_t)k,
                              .ucb = *ucb};
    return bd_bo_model_new(&a->def, &mo, &a->model, err);
}

static void rb_destroy(bd_sched *s);

static int rb_create(const bd_study_def *def, bd_sched **out, bd_err *err)
{
    static const char *const known[] = {"arm_parameter", "inner",         "n_init",     "window",       "elimination",
                                        "cost_aware",    "halve_horizon", "multiplier", "delta",        "upper_bound",
                                        "tail",          "max_retries",   "allocation", "draw_horizon", NULL};
    static const char *const inners[] = {"gp_ucb", "random", "tpe", NULL};
    static const char *const rules[] = {"non_strict", "strict", NULL};
    static const char *const bounds[] = {"paper", "tail", NULL};
    static const char *const draws[] = {"left", "share", NULL};
    const char *inner = NULL, *rule = NULL, *bound = NULL, *alloc = NULL, *draw = NULL;
    long long n_init = 0, window = 0, tail_k = 0, retries = 0;
    int cost_aware = 0, halve = 0;
    size_t p = 0;
    bd_bo_ucb ucb;
    int rc = bd_opt_known(def->options, known, err);
    if (!rc)
        rc = bd_opt_string(def->options, "inner", "gp_ucb", inners, &inner, err);
    if (!rc)
        rc = bd_opt_int(def->options, "n_init", 3, 1, 100000, &n_init, err);
    if (!rc)
        rc = bd_opt_int(def->options, "window", 7, 1, 1000000, &window, err);
    if (!rc)
        rc = bd_opt_string(def->options, "elimination", "non_strict", rules, &rule, err);
    if (!rc)
        rc = bd_opt_string(def->options, "upper_bound", "paper", bounds, &bound, err);
    if (!rc)
        rc = bd_opt_int(def->options, "tail", 5, 1, 1000, &tail_k, err);
    if (!rc)
        rc = bd_opt_int(def->options, "max_retries", 0, 0, 100, &retries, err);
    if (!rc)
        rc = bd_opt_string(def->options, "allocation", "rounds", alloc_names, &alloc, err);
    if (!rc)
        rc = bd_opt_string(def->options, "draw_horizon", "left", draws, &draw, err);
    if (!rc && strcmp(alloc, "thompson") != 0 && json_object_get(def->options, "draw_horizon"))
        rc = bd_err_set(err, BD_EINVAL, "scheduler.options.draw_horizon", "applies to allocation \"thompson\" only");
    if (!rc)
        rc = bd_opt_bool(def->options, "cost_aware", 0, &cost_aware, err);
    if (!rc)
        rc = bd_opt_bool(def->options, "halve_horizon", 0, &halve, err);
    if (!rc && strcmp(bound, "tail") != 0 && strcmp(alloc, "rounds") == 0 && json_object_get(def->options, "tail"))
        rc = bd_err_set(err, BD_EINVAL, "scheduler.options.tail",
                        "applies to upper_bound \"tail\" or allocation \"ei\" or \"thompson\" only");
    if (!rc && strcmp(inner, "tpe") == 0 && json_object_get(def->options, "n_init"))
        rc = bd_err_set(err, BD_EINVAL, "scheduler.options.n_init",
                        "does not apply to inner \"tpe\", which draws an arm's first 10 pulls at random as "
                        "Optuna 3.1 does");
    if (!rc)
        rc = bd_bo_ucb_read(def->options, &ucb, err);
    if (!rc)
        rc = check_study(def, cost_aware, halve, err);
    if (!rc)
        rc = find_arm_parameter(def->space, def->options, &p, err);
    if (rc)
        return rc;
    rising *r = bd_xcalloc(1, sizeof *r);
    r->base.ops = &bd_sched_rising_bandits;
    r->def = def;
    r->arm_index = p;
    r->arm_param = bd_space_param(def->space, p)->name;
    r->K = json_array_size(bd_space_param(def->space, p)->choices);
    r->alive = r->K;
    r->arms = bd_xcalloc(r->K, sizeof *r->arms);
    r->inner = strcmp(inner, "random") == 0 ? INNER_RANDOM : strcmp(inner, "tpe") == 0 ? INNER_TPE : INNER_GP_UCB;
    r->strict = strcmp(rule, "strict") == 0;
    r->cost_aware = cost_aware;
    r->halve = halve;
    r->tail = strcmp(bound, "tail") == 0;
    r->alloc = strcmp(alloc, "ei") == 0 ? ALLOC_EI : strcmp(alloc, "thompson") == 0 ? ALLOC_THOMPSON : ALLOC_ROUNDS;
    r->draw_share = strcmp(draw, "share") == 0;
    r->tail_k = tail_k;
    r->max_retries = retries;
    r->n_init = n_init;
    r->window = window;
    r->T = def->limit_trials;
    r->round = 1;
    for (size_t k = 0; k < r->K && !rc; k++)
        rc = open_arm(r, k, &ucb, err);
    if (rc) {
        rb_destroy(&r->base);
        return rc;
    }
    *out = &r->base;
    return 0;
}

/* ------------------------------------------------------------- suggest */

/* Arm a's pulls counted in the rounds: those handed out, less those handed
 * out again after a failure. */
static long long counted(const arm *a)
{
    return a->created - a->retried;
}

/* Allocation "ei": the expected rise of the study's best reward Y if arm a
 * is pulled once more, under the tail model of the record-tail bound (a
 * new reward exceeds x >= y with probability (1/n) exp(-(x - y)/sigma)):
 *   E[(R - Y)+] = (sigma / n) exp(-(Y - y) / sigma),
 * sigma at its one-standard-error upper value, n counting the arm's
 * running pulls too (so parallel workers spread). */
static double arm_ei(const rising *r, const arm *a, double Y)
{
    if (a->n_r < 2)
        return 0.0;
    size_t k = (size_t)r->tail_k < a->n_r - 1 ? (size_t)r->tail_k : a->n_r - 1;
    return bd_rising_tail_ei(a->n_y ? a->y[a->n_y - 1] : 0.0, Y, a->tail_scale, k,
                             a->n_r + (size_t)a->running);
}

/* Allocation "ei": each surviving arm first gets window + 1 pulls (as in
 * the rounds, none can be eliminated before), fewest first; then the arm
 * of the largest arm_ei, ties to the fewer pulls. */
static long next_arm_ei(const rising *r)
{
    long best = -1;
    double best_ei = -1, Y = 0;
    for (size_t k = 0; k < r->K; k++)
        if (r->arms[k].n_y)
            Y = fmax(Y, r->arms[k].y[r->arms[k].n_y - 1]);
    for (size_t k = 0; k < r->K; k++) {
        const arm *a = &r->arms[k];
        if (!a->alive)
            continue;
        long long n = counted(a);
        double ei = n <= r->window ? 1e300 / (double)(n + 1) : arm_ei(r, a, Y);
        if (best < 0 || ei > best_ei || (ei == best_ei && n < counted(&r->arms[best]))) {
            best = (long)k;
            best_ei = ei;
        }
    }
    return best;
}

static double horizon(const rising *r, const arm *a); /* below: the bounds' horizon */

/* Allocation "thompson": each surviving arm first gets window + 1 pulls,
 * fewest first (as "ei"); then one bd_rising_tail_sample per surviving
 * arm, in arm order, from rng: a draw of the arm's final reward on its tail
 * model at sigma's point estimate, between its bounds [l, u], with n its
 * rewards plus its running pulls (parallel workers spread); the largest
 * draw gets the pull (ties: fewer pulls, then arm order). So an arm is
 * pulled about as often as it holds the best final reward under the model;
 * nothing commits, and the bounds still eliminate. rng NULL (status):
 * any surviving arm. */
static long next_arm_thompson(const rising *r, bd_rng *rng)
{
    long best = -1;
    double best_v = -1;
    for (size_t k = 0; k < r->K; k++) {
        const arm *a = &r->arms[k];
        if (!a->alive)
            continue;
        long long n = counted(a);
        double v;
        /* The draw's horizon is the study's pulls left (cost-aware: the
         * arm's time left in pulls), what the arm would get if it had every
         * remaining pull, or with draw_horizon "share" that divided by the
         * surviving arms, what it would get if they kept sharing them; it
         * ends at 0, so the last pulls go to the leader. */
        if (n <= r->window || !rng) {
            v = 2.0 + 1.0 / (double)(n + 1); /* above every reward: fewest pulls first */
        } else {
            double h = r->cost_aware ? horizon(r, a) : (double)(r->T - r->created);
            if (r->draw_share)
                h /= (double)r->alive;
            v = bd_rising_tail_sample(a->bound.lower, a->bound.upper, a->tail_scale, a->n_r + (size_t)a->running,
                                      isnan(h) ? INFINITY : h, bd_rng_uniform(rng));
        }
        if (best < 0 || v > best_v || (v == best_v && n < counted(&r->arms[best]))) {
            best = (long)k;
            best_v = v;
        }
    }
    return best;
}

/* The arm the next pull goes to, or -1 (WAIT or DONE): in the rounds, the
 * first surviving arm not pulled yet in this round; with one arm left, it.
 * rng: the suggestion's stream, NULL for status (any arm will do). */
static long next_arm(const rising *r, bd_rng *rng)
{
    if (r->created >= r->T)
        return -1;
    if (r->alloc == ALLOC_EI && r->alive > 1)
        return next_arm_ei(r);
    if (r->alloc == ALLOC_THOMPSON && r->alive > 1)
        return next_arm_thompson(r, rng);
    for (size_t k = 0; k < r->K; k++)
        if (r->arms[k].alive && (r->alive == 1 || counted(&r->arms[k]) < r->round))
            return (long)k;
    return -1;
}

static bd_sched_status rb_status(const bd_sched *s)
{
    const rising *r = (const rising *)s;
    if (r->created >= r->T)
        return BD_STATUS_DONE;
    return next_arm(r, NULL) < 0 ? BD_STATUS_WAITING : BD_STATUS_RUNNING;
}

/* Arm k's next point of its sub-space into *out (new): tpe's proposal;
 * for gp_ucb random for its first n_init pulls or without a model, else
 * GP-UCB with its running pulls hallucinated; random otherwise. */
static int propose(const rising *r, size_t k, bd_rng *rng, json_t **out, bd_err *err)
{
    const arm *a = &r->arms[k];
    if (a->tpe) {
        *out = bd_proposer_propose(a->tpe, rng);
        return 0;
    }
    if (!a->model) { /* inner "random", or an empty sub-space */
        *out = bd_space_sample(a->sub, rng);
        return 0;
    }
    size_t n_run = 0;
    const double **run_x = bd_xmalloc((r->n_pend ? r->n_pend : 1) * sizeof *run_x);
    for (size_t i = 0; i < r->n_pend; i++)
        if (r->pend[i].arm == k && r->pend[i].x)
            run_x[n_run++] = r->pend[i].x;
    int rc = bd_bo_model_next_config(a->model, a->sub, (size_t)counted(a), (size_t)r->n_init, n_run, run_x, rng, out,
                                     err);
    free(run_x);
    return rc;
}

static int rb_suggest(bd_sched *s, const bd_suggest_ctx *ctx, bd_suggestion *out, bd_err *err)
{
    rising *r = (rising *)s;
    bd_sched_status st = rb_status(s);
    if (st != BD_STATUS_RUNNING)
        return st == BD_STATUS_DONE ? BD_SUGGEST_DONE : BD_SUGGEST_WAIT;
    bd_rng rng = ctx->rng;
    size_t k = (size_t)next_arm(r, &rng);
    const arm *a = &r->arms[k];
    json_t *config = NULL;
    int rc = propose(r, k, &rng, &config, err);
    if (rc)
        return rc;
    json_object_set_new(config, r->arm_param, json_deep_copy(a->choice));
    out->config = config;
    out->budget = r->def->r_max;
    out->extra = json_pack("{s:o, s:I}", "arm", json_deep_copy(a->choice), "pull", (json_int_t)(counted(a) + 1));
    if (a->attempt_next)
        json_object_set_new(out->extra, "retry", json_integer(a->attempt_next));
    if (r->alive > 1 && r->alloc == ALLOC_ROUNDS)
        json_object_set_new(out->extra, "round", json_integer((json_int_t)r->round));
    return BD_SUGGEST_TRIAL;
}

/* ------------------------------------------------------------- observe */

static long arm_of(const rising *r, const json_t *choice)
{
    for (size_t k = 0; choice && k < r->K; k++)
        if (json_equal(r->arms[k].choice, choice))
            return (long)k;
    return -1;
}

/* Arm k's sub-space coordinates of a full config, or NULL. New. */
static double *encode_sub(const rising *r, size_t k, const json_t *config)
{
    const arm *a = &r->arms[k];
    json_t *sub = json_copy((json_t *)config);
    double *x = bd_xmalloc(bd_space_size(a->sub) * sizeof *x);
    json_object_del(sub, r->arm_param);
    if (bd_space_encode(a->sub, sub, x)) { /* cannot happen: the engine validated the config */
        free(x);
        x = NULL;
    }
    json_decref(sub);
    return x;
}

static void on_created(rising *r, const bd_event *ev)
{
    long k = arm_of(r, json_object_get(ev->config, r->arm_param));
    r->created++; /* limits.trials counts every trial */
    if (k < 0)
        return; /* cannot happen: the engine validated the config */
    arm *a = &r->arms[k];
    a->created++;
    a->running++;
    if (r->n_pend == r->cap_pend) {
        r->cap_pend = r->cap_pend ? 2 * r->cap_pend : 8;
        r->pend = bd_xrealloc(r->pend, r->cap_pend * sizeof *r->pend);
    }
    r->pend[r->n_pend++] = (pull){.trial_id = ev->trial_id,
                                  .config_id = ev->config_id,
                                  .arm = (size_t)k,
                                  .budget = ev->budget,
                                  .config = json_incref((json_t *)ev->config),
                                  .x = a->model ? encode_sub(r, (size_t)k, ev->config) : NULL,
                                  .attempt = a->attempt_next};
    a->attempt_next = 0;
}

/* Takes trial_id's pull out of the running set into *p; 0 if it is not there. */
static int take_pull(rising *r, int64_t trial_id, pull *p)
{
    for (size_t i = 0; i < r->n_pend; i++)
        if (r->pend[i].trial_id == trial_id) {
            *p = r->pend[i];
            memmove(&r->pend[i], &r->pend[i + 1], (r->n_pend - i - 1) * sizeof *r->pend);
            r->n_pend--;
            return 1;
        }
    return 0;
}

static void append_y(arm *a, double y)
{
    if (a->n_y == a->cap_y) {
        a->cap_y = a->cap_y ? 2 * a->cap_y : 16;
        a->y = bd_xrealloc(a->y, a->cap_y * sizeof *a->y);
    }
    a->y[a->n_y++] = y;
}

/* Counts a reward and, for the tail bound, keeps it if it is among the
 * keep largest: the tail scale needs only those (bd_rising_tail_scale of the
 * kept list equals that of every reward), so a result costs O(keep) and an
 * arm's memory stays O(keep) however many pulls a study allows. */
static void append_reward(arm *a, double v, size_t keep)
{
    a->n_r++;
    if (!keep)
        return;
    if (!a->top)
        a->top = bd_xmalloc(keep * sizeof *a->top);
    size_t c = a->n_top < keep ? a->n_top++ : keep;
    if (c == keep && !(v > a->top[keep - 1]))
        return;
    if (c == keep)
        c = keep - 1;
    for (; c > 0 && a->top[c - 1] < v; c--)
        a->top[c] = a->top[c - 1];
    a->top[c] = v;
}

/* Keeps p as the arm's best trial if its loss is the lowest finite one
 * (the first wins a tie); takes p's config reference then. */
static void consider_best(arm *a, pull *p, double loss)
{
    if (!isfinite(loss) || (a->best.trial_id && loss >= a->best.loss))
        return;
    json_decref(a->best.config);
    a->best = (best_trial){p->trial_id, p->config_id, loss, p->budget, p->config};
    p->config = NULL;
}

/* The horizon in pulls for arm a's upper bound, NAN while unknown. */
static double horizon(const rising *r, const arm *a)
{
    if (!r->cost_aware)
        return (double)(r->T - (long long)a->n_y);
    if (!a->timed)
        return NAN;
    double left = fmax(r->def->limit_seconds - r->used_seconds, 0.0), mean = a->seconds / (double)a->timed;
    double h = mean > 0 ? left / mean : INFINITY;
    return r->halve ? h / 2 : h;
}

static void update_bound(const rising *r, arm *a)
{
    double y = a->n_y ? a->y[a->n_y - 1] : 0.0, h = horizon(r, a);
    a->growth = bd_rising_growth(a->y, a->n_y, (size_t)r->window);
    a->bound.lower = y;
    a->bound.ready = !isnan(a->growth) && !isnan(h);
    a->bound.upper = a->bound.ready ? bd_rising_upper(y, a->growth, h) : 1.0;
    if (a->bound.ready && r->tail && a->n_r >= 2) {
        size_t k = (size_t)r->tail_k < a->n_r - 1 ? (size_t)r->tail_k : a->n_r - 1;
        a->bound.upper = fmax(a->bound.upper, bd_rising_tail_upper(y, a->tail_scale, k, a->n_r, h));
    }
}

/* Pulls finished in all (allocation "ei" has no rounds: an elimination is
 * dated by this count). */
static long long finished_pulls(const rising *r)
{
    long long n = 0;
    for (size_t k = 0; k < r->K; k++)
        n += (long long)r->arms[k].n_y;
    return n;
}

/* Algorithm 1, lines 10-14, at the end of the current round. */
static void eliminate(rising *r)
{
    bd_rising_bound *b = bd_xmalloc(r->K * sizeof *b);
    int *alive = bd_xmalloc(r->K * sizeof *alive);
    size_t *by = bd_xcalloc(r->K, sizeof *by);
    for (size_t k = 0; k < r->K; k++) {
        b[k] = r->arms[k].bound;
        alive[k] = r->arms[k].alive;
    }
    bd_rising_eliminate(r->K, b, r->strict, alive, by);
    for (size_t k = 0; k < r->K; k++)
        if (r->arms[k].alive && !alive[k]) {
            r->arms[k].alive = 0;
            r->arms[k].eliminated_round = r->alloc != ALLOC_ROUNDS ? finished_pulls(r) : r->round;
            r->arms[k].eliminated_by = by[k];
            r->alive--;
        }
    free(b);
    free(alive);
    free(by);
}

/* Are the current round's results all in (and not decided yet)? */
static int round_over(const rising *r)
{
    if (r->alive < 2 || r->decided >= r->round || r->n_pend)
        return 0;
    for (size_t k = 0; k < r->K; k++)
        if (r->arms[k].alive && counted(&r->arms[k]) < r->round)
            return 0;
    return 1;
}

static void end_rounds(rising *r)
{
    while (round_over(r)) {
        eliminate(r);
        r->decided = r->round;
        if (r->alive > 1 && r->created < r->T)
            r->round++;
    }
}

static void on_finished(rising *r, const bd_observe_ctx *ctx, const bd_event *ev)
{
    pull p;
    if ((ev->type == BD_EV_COMPLETED || ev->type == BD_EV_STOPPED) && isfinite(ev->elapsed_seconds))
        r->used_seconds += ev->elapsed_seconds; /* as the engine counts used seconds */
    if (!take_pull(r, ev->trial_id, &p))
        return;
    arm *a = &r->arms[p.arm];
    double y = a->n_y ? a->y[a->n_y - 1] : 0.0;
    a->running--;
    if (ev->type != BD_EV_COMPLETED && p.attempt < r->max_retries) {
        /* Re-offered: the round waits for the arm's pull again; nothing else changes. */
        a->retried++;
        a->attempt_next = p.attempt + 1;
        free(p.x);
        json_decref(p.config);
        return;
    }
    if (ev->type == BD_EV_COMPLETED) {
        double reward = bd_rising_reward(r->def, ev->loss);
        y = fmax(y, reward);
        append_reward(a, reward, uses_tail(r) ? (size_t)r->tail_k + 1 : 0);
        if (uses_tail(r))
            a->tail_scale = bd_rising_tail_scale(a->top, a->n_top, (size_t)r->tail_k);
        if (isfinite(ev->elapsed_seconds)) {
            a->seconds += ev->elapsed_seconds;
            a->timed++;
        }
        if (a->tpe) { /* the proposer keeps its results in arrival order: a replay adds the same */
            json_t *sub = json_copy(p.config);
            json_object_del(sub, r->arm_param);
            bd_proposer_add(a->tpe, p.config_id, sub, p.budget, ev->loss, NAN, NAN);
            json_decref(sub);
        }
        if (p.x) {
            bd_bo_model_add(a->model, p.x, 1.0, ev->loss);
            if (!ctx->replay) /* a replay rebuilds once, in replayed() */
                bd_bo_model_rebuild(a->model);
        }
        consider_best(a, &p, ev->loss);
    }
    append_y(a, y);
    free(p.x);
    json_decref(p.config);
    /* The time left changes every arm's cost-aware horizon. */
    for (size_t k = 0; k < r->K; k++)
        if (r->arms[k].alive)
            update_bound(r, &r->arms[k]);
    if (r->alloc != ALLOC_ROUNDS && r->alive > 1) { /* no rounds: every result may eliminate */
        eliminate(r);
        return;
    }
    end_rounds(r);
}

static int rb_observe(bd_sched *s, const bd_observe_ctx *ctx, const bd_event *ev, bd_decision *out, bd_err *err)
{
    rising *r = (rising *)s;
    (void)out;
    (void)err;
    switch (ev->type) {
    case BD_EV_CREATED:
        on_created(r, ev);
        break;
    case BD_EV_COMPLETED:
    case BD_EV_FAILED:
    case BD_EV_EXPIRED:
    case BD_EV_STOPPED:
        on_finished(r, ctx, ev);
        break;
    case BD_EV_MEASUREMENT:
    case BD_EV_PRIOR: /* never passed: learns_from_prior is 0 */
        break;
    }
    return 0;
}

static void rb_replayed(bd_sched *s)
{
    rising *r = (rising *)s;
    for (size_t k = 0; k < r->K; k++)
        if (r->arms[k].model)
            bd_bo_model_rebuild(r->arms[k].model);
}

/* ------------------------------------------------------------- describe */

static json_t *num_or_null(double v)
{
    return isnan(v) ? json_null() : json_real(v);
}

static json_t *arm_json(const rising *r, const arm *a)
{
    json_t *o = json_pack("{s:o, s:I, s:I, s:o, s:o, s:f, s:f, s:o, s:o, s:I}", "arm", json_deep_copy(a->choice),
                          "pulls", (json_int_t)counted(a), "running", (json_int_t)a->running, "best_reward",
                          num_or_null(a->n_y ? a->y[a->n_y - 1] : NAN), "growth_rate", num_or_null(a->growth),
                          "lower", a->bound.lower, "upper", a->bound.upper, "eliminated_round",
                          a->alive ? json_null() : json_integer((json_int_t)a->eliminated_round), "eliminated_by",
                          a->alive ? json_null() : json_deep_copy(r->arms[a->eliminated_by].choice), "retries",
                          (json_int_t)a->retried);
    if (uses_tail(r))
        json_object_set_new(o, "tail_scale", num_or_null(a->tail_scale));
    return o;
}

/* The best trial of the surviving arm with the largest lower bound (ties:
 * lower loss, then arm order), or NULL. */
static const best_trial *incumbent(const rising *r)
{
    const arm *best = NULL;
    for (size_t k = 0; k < r->K; k++) {
        const arm *a = &r->arms[k];
        if (!a->alive || !a->best.trial_id)
            continue;
        if (!best || a->bound.lower > best->bound.lower ||
            (a->bound.lower == best->bound.lower && a->best.loss < best->best.loss))
            best = a;
    }
    return best ? &best->best : NULL;
}

/* The engine's incumbent shape (engine_json.c): value in the objective's
 * own orientation, an integral budget printed as an integer. */
static json_t *incumbent_json(const rising *r, const best_trial *b)
{
    json_t *budget = r->def->resource_integer && b->budget == floor(b->budget) && fabs(b->budget) < 9e15
                         ? json_integer((json_int_t)b->budget)
                         : json_real(b->budget);
    return json_pack("{s:I, s:I, s:O, s:f, s:o}", "trial_id", (json_int_t)b->trial_id, "config_id",
                     (json_int_t)b->config_id, "config", b->config, "value", r->def->maximize ? -b->loss : b->loss,
                     "budget", budget);
}

static int rb_describe(const bd_sched *s, json_t **out)
{
    const rising *r = (const rising *)s;
    const char *phase = r->created >= r->T ? "done" : r->alive == 1 ? "last_arm" : alloc_names[r->alloc];
    json_t *arms = json_array();
    for (size_t k = 0; k < r->K; k++)
        json_array_append_new(arms, arm_json(r, &r->arms[k]));
    *out = json_pack("{s:I, s:s, s:I, s:I, s:I, s:s, s:s, s:b, s:o}", "round", (json_int_t)r->round, "phase", phase,
                     "window", (json_int_t)r->window, "T", (json_int_t)r->T, "pulls", (json_int_t)r->created, "inner",
                     r->inner == INNER_RANDOM ? "random" : r->inner == INNER_TPE ? "tpe" : "gp_ucb", "elimination", r->strict ? "strict" : "non_strict",
                     "cost_aware", r->cost_aware, "arms", arms);
    const best_trial *b = incumbent(r);
    json_object_set_new(*out, "upper_bound", json_string(r->tail ? "tail" : "paper"));
    json_object_set_new(*out, "allocation", json_string(alloc_names[r->alloc]));
    if (r->alloc == ALLOC_THOMPSON)
        json_object_set_new(*out, "draw_horizon", json_string(r->draw_share ? "share" : "left"));
    if (uses_tail(r))
        json_object_set_new(*out, "tail", json_integer((json_int_t)r->tail_k));
    json_object_set_new(*out, "max_retries", json_integer((json_int_t)r->max_retries));
    if (b)
        json_object_set_new(*out, "incumbent", incumbent_json(r, b));
    return 0;
}

static void rb_destroy(bd_sched *s)
{
    rising *r = (rising *)s;
    if (!r)
        return;
    for (size_t k = 0; k < r->K; k++) {
        arm *a = &r->arms[k];
        bd_bo_model_free(a->model);
        bd_proposer_free(a->tpe);
        bd_space_free(a->sub);
        free(a->y);
        free(a->top);
        json_decref(a->best.config);
    }
    for (size_t i = 0; i < r->n_pend; i++) {
        json_decref(r->pend[i].config);
        free(r->pend[i].x);
    }
    free(r->pend);
    free(r->arms);
    free(r);
}

/* New studies bound an arm by the record tail too and re-offer a failed
 * pull twice (tests/bench/README-cash.md: the best arm eliminated in ~35% of
 * the paper rule's runs), and since 2026-11-27 give each arm Optuna's TPE
 * and allocate by Thompson draws (README-cash.md, "Inner TPE and Thompson
 * allocation"). Stored studies without the options keep the paper's bound,
 * count a failed pull as one without improvement, run GP-UCB in rounds. A
 * study that sets a GP option (n_init, multiplier, delta) keeps the GP. */
static void rb_new_study_defaults(const bd_study_def *def, json_t *options)
{
    (void)def;
    if (!json_object_get(options, "upper_bound"))
        json_object_set_new(options, "upper_bound", json_string("tail"));
    if (!json_object_get(options, "max_retries"))
        json_object_set_new(options, "max_retries", json_integer(2));
    if (!json_object_get(options, "inner") && !json_object_get(options, "n_init") &&
        !json_object_get(options, "multiplier") && !json_object_get(options, "delta"))
        json_object_set_new(options, "inner", json_string("tpe"));
    if (!json_object_get(options, "allocation"))
        json_object_set_new(options, "allocation", json_string("thompson"));
    const char *alloc = json_string_value(json_object_get(options, "allocation"));
    if (alloc && strcmp(alloc, "thompson") == 0 && !json_object_get(options, "draw_horizon"))
        json_object_set_new(options, "draw_horizon", json_string("share"));
}

const struct bd_sched_ops bd_sched_rising_bandits = {
    .abi = BD_SCHED_ABI,
    .name = "rising_bandits",
    .create = rb_create,
    .suggest = rb_suggest,
    .observe = rb_observe,
    .replayed = rb_replayed,
    .status = rb_status,
    .describe = rb_describe,
    .destroy = rb_destroy,
    .new_study_defaults = rb_new_study_defaults,
};
