/* nsga2.c: `nsga2`, NSGA-II (Deb, Pratap, Agarwal, Meyarivan, "A fast and
 * elitist multiobjective genetic algorithm: NSGA-II", IEEE TEC 6(2), 2002)
 * as Optuna 3.1's NSGAIISampler runs it (optuna/samplers/nsgaii/), for
 * studies with one or several objectives and constraints. Every trial is a
 * fresh config trained at the full budget (resource.max).
 *
 * Generations (Optuna's _collect_parent_population): a trial belongs to the
 * generation that was open when it was created. Generation 0 is random. A
 * generation closes once population_size of its trials have completed
 * (failed, expired and stopped trials never count); its parents are then
 * the elite of its completed trials and the previous parents: whole
 * non-dominated ranks while they fit, the rank that does not fit cut by
 * crowding distance (Optuna's _select_elite_population, with its orders:
 * the pop-and-swap peeling of _fast_non_dominated_sort, crowding over the
 * objectives as reported, stable sorts, ties reversed). New trials then
 * belong to the next generation. Where this differs from Optuna: a trial
 * that completes after its generation closed (parallel workers) joins the
 * open generation's pool instead of reopening the closed generation's
 * selection and every one after it; it competes with the same parents
 * either way, and the state stays bounded.
 *
 * A child (sample_relative): with probability crossover_prob two parents
 * by binary tournament (the second from the others; a candidate wins when
 * it dominates the other, else the other wins) and uniform crossover (each
 * parameter from the second parent with probability swapping_prob), else a
 * copy of a random parent; then each parameter is redrawn at random with
 * probability mutation_prob (default 1 / the number of parameters). Only
 * parameters every completed trial has (Optuna's IntersectionSearchSpace,
 * minus fixed ones) are inherited; the others (conditional parameters of
 * a branch some trial did not take) are drawn at random, as Optuna's
 * sample_independent does, and a parameter whose conditions fail in the
 * child is left out.
 *
 * Constraints (constraints_func's constrained domination): a feasible trial
 * (violation 0) dominates an infeasible one, two infeasible ones compare by
 * total violation, two feasible ones by Pareto dominance of their losses.
 *
 * State, a pure function of the events: the parents (at most
 * population_size trials), the open generation's pool (population_size
 * plus the trials that were running when a generation closed), the
 * running trials' configs and a flag per parameter; memory is
 * O((population_size + running) x (parameters + objectives)), whatever the
 * study's length. A generation's close costs O(N^2 m) dominance tests for
 * N = pool + parents; a suggestion O(parameters). */
#include "sched.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../model/pareto.h"
#include "idmap.h"

extern const struct bd_sched_ops bd_sched_nsga2;

#define MAX_POPULATION 1000

typedef struct member { /* a completed trial that may become a parent */
    int64_t trial_id;
    json_t *config;   /* own reference */
    double *losses;   /* m minimized values (owned) */
    double violation; /* 0 feasible, > 0 infeasible */
} member;

typedef struct running_trial {
    json_t *config; /* own reference */
    long long generation;
} running_trial;

typedef struct nsga2 {
    bd_sched base;
    const bd_study_def *def;
    size_t m;        /* objectives */
    size_t d;        /* parameters */
    int constrained; /* def->n_constraints > 0 */
    long long pop_size, max_trials;
    double mutation_prob; /* NAN: 1 / the number of inherited parameters */
    double crossover_prob, swapping_prob;
    long long created, running, given_back, completed;
    long long generation; /* the open generation: new trials belong to it (0: random) */
    member *parents;      /* the elite of generation - 1, in Optuna's order */
    size_t n_parents;
    member *pool; /* completed trials of the open generation and late ones, by trial id */
    size_t n_pool, cap_pool;
    long long pool_current; /* members of the pool created in the open generation */
    bd_idmap runs;          /* trial_id -> running_trial */
    unsigned char *always;  /* d: the parameter is in every completed trial so far */
} nsga2;

/* ------------------------------------------------------------ create */

static int nsga2_create(const bd_study_def *def, bd_sched **out, bd_err *err)
{
    static const char *const known[] = {"population_size", "mutation_prob", "crossover_prob",
                                        "swapping_prob",   "max_trials",    NULL};
    long long pop_size, max_trials;
    double mutation_prob, crossover_prob, swapping_prob;
    int rc;
    if ((rc = bd_opt_known(def->options, known, err)) ||
        (rc = bd_opt_int(def->options, "population_size", 50, 2, MAX_POPULATION, &pop_size, err)) ||
        (rc = bd_opt_number(def->options, "mutation_prob", NAN, 0.0, 1.0, &mutation_prob, err)) ||
        (rc = bd_opt_number(def->options, "crossover_prob", 0.9, 0.0, 1.0, &crossover_prob, err)) ||
        (rc = bd_opt_number(def->options, "swapping_prob", 0.5, 0.0, 1.0, &swapping_prob, err)) ||
        (rc = bd_opt_int(def->options, "max_trials", 0, 0, 1000000000LL, &max_trials, err)))
        return rc;
    nsga2 *r = bd_xcalloc(1, sizeof *r);
    r->base.ops = &bd_sched_nsga2;
    r->def = def;
    r->m = def->n_objectives > 1 ? def->n_objectives : 1;
    r->d = bd_space_size(def->space);
    r->constrained = def->n_constraints > 0;
    r->pop_size = pop_size;
    r->max_trials = max_trials;
    r->mutation_prob = mutation_prob;
    r->crossover_prob = crossover_prob;
    r->swapping_prob = swapping_prob;
    r->always = bd_xmalloc(r->d ? r->d : 1);
    memset(r->always, 1, r->d ? r->d : 1);
    *out = &r->base;
    return 0;
}

/* ------------------------------------------------------------ dominance */

/* Optuna's _constrained_dominates (or _dominates without constraints). */
static int cdominates(const nsga2 *r, const member *a, const member *b)
{
    if (r->constrained) {
        int fa = a->violation <= 0, fb = b->violation <= 0;
        if (!fa || !fb) {
            if (fa)
                return 1;
            if (fb)
                return 0;
            return a->violation < b->violation;
        }
    }
    return bd_pareto_dominates(a->losses, b->losses, r->m);
}

/* The objective as the user reported it (Optuna's crowding reads trial.values). */
static double raw_value(const nsga2 *r, const member *x, size_t j)
{
    int maximize = r->def->objectives ? r->def->objectives[j].maximize : r->def->maximize;
    return maximize ? -x->losses[j] : x->losses[j];
}

static void member_free(member *x)
{
    json_decref(x->config);
    free(x->losses);
}

/* Stable insertion sort of ord[0..k-1] (indices into all) by key[ord[i]]. */
static void stable_sort_by(size_t *ord, size_t k, const double *key)
{
    for (size_t i = 1; i < k; i++) {
        size_t v = ord[i], j = i;
        while (j > 0 && key[ord[j - 1]] > key[v]) {
            ord[j] = ord[j - 1];
            j--;
        }
        ord[j] = v;
    }
}

/* _crowding_distance_sort of the rank front[0..k-1] (indices into all):
 * reorders front as Optuna leaves it, the most isolated first. */
static void crowding_sort(const nsga2 *r, const member *all, size_t *front, size_t k)
{
    size_t m = r->m;
    double *raw = bd_xmalloc(k * m * sizeof *raw), *dist = bd_xmalloc(k * sizeof *dist);
    double *key = bd_xmalloc(k * sizeof *key);
    size_t *pos = bd_xmalloc(k * sizeof *pos);
    for (size_t p = 0; p < k; p++) {
        pos[p] = p;
        for (size_t j = 0; j < m; j++)
            raw[p * m + j] = raw_value(r, &all[front[p]], j);
    }
    int rc = bd_pareto_crowding(raw, m, pos, k, dist);
    if (rc) /* out of memory inside the kernel: the engine's allocator would have aborted */
        abort();
    /* the order Optuna's in-place sorts leave: by each objective in turn */
    for (size_t j = 0; j < m; j++) {
        for (size_t p = 0; p < k; p++)
            key[p] = raw[p * m + j];
        stable_sort_by(pos, k, key);
    }
    stable_sort_by(pos, k, dist); /* population.sort(key=distance) */
    size_t *sorted = bd_xmalloc(k * sizeof *sorted);
    for (size_t p = 0; p < k; p++) /* population.reverse() */
        sorted[p] = front[pos[k - 1 - p]];
    memcpy(front, sorted, k * sizeof *front);
    free(sorted);
    free(raw);
    free(dist);
    free(key);
    free(pos);
}

/* Optuna's _select_elite_population of all[0..n-1] (the open generation's
 * pool, then the parents): writes the chosen indices into elite, in order,
 * and returns how many (min(n, pop_size)). */
static size_t select_elite(const nsga2 *r, const member *all, size_t n, size_t *elite)
{
    size_t *count = bd_xcalloc(n ? n : 1, sizeof *count), *pop = bd_xmalloc((n ? n : 1) * sizeof *pop);
    size_t *front = bd_xmalloc((n ? n : 1) * sizeof *front);
    for (size_t i = 0; i < n; i++) {
        pop[i] = i;
        for (size_t j = i + 1; j < n; j++) {
            if (cdominates(r, &all[i], &all[j]))
                count[j]++;
            else if (cdominates(r, &all[j], &all[i]))
                count[i]++;
        }
    }
    size_t n_pop = n, n_elite = 0, want = (size_t)r->pop_size;
    while (n_pop > 0 && n_elite < want) {
        /* one rank, peeled as _fast_non_dominated_sort does (pop and swap) */
        size_t k = 0, i = 0;
        while (i < n_pop) {
            if (count[pop[i]] == 0) {
                front[k++] = pop[i];
                pop[i] = pop[--n_pop]; /* the last takes its place (or it was the last) */
            } else {
                i++;
            }
        }
        assert(k > 0); /* dominance is acyclic */
        for (size_t f = 0; f < k; f++)
            for (size_t q = 0; q < n_pop; q++)
                if (cdominates(r, &all[front[f]], &all[pop[q]]))
                    count[pop[q]]--;
        if (n_elite + k < want) {
            memcpy(elite + n_elite, front, k * sizeof *front);
            n_elite += k;
        } else {
            crowding_sort(r, all, front, k);
            memcpy(elite + n_elite, front, (want - n_elite) * sizeof *front);
            n_elite = want;
        }
    }
    free(count);
    free(pop);
    free(front);
    return n_elite;
}

/* The open generation has population_size completed trials: its elite with
 * the parents' becomes the parents, the next generation opens. */
static void close_generation(nsga2 *r)
{
    size_t n = r->n_pool + r->n_parents;
    member *all = bd_xmalloc(n * sizeof *all);
    memcpy(all, r->pool, r->n_pool * sizeof *all);
    if (r->n_parents) /* none before generation 0 closes (parents is NULL) */
        memcpy(all + r->n_pool, r->parents, r->n_parents * sizeof *all);
    size_t *elite = bd_xmalloc(n * sizeof *elite);
    size_t k = select_elite(r, all, n, elite);
    unsigned char *kept = bd_xcalloc(n, 1);
    member *parents = bd_xmalloc(k * sizeof *parents);
    for (size_t i = 0; i < k; i++) {
        parents[i] = all[elite[i]];
        kept[elite[i]] = 1;
    }
    for (size_t i = 0; i < n; i++)
        if (!kept[i])
            member_free(&all[i]);
    free(r->parents);
    r->parents = parents;
    r->n_parents = k;
    r->n_pool = 0;
    r->pool_current = 0;
    r->generation++;
    free(all);
    free(elite);
    free(kept);
}

/* ------------------------------------------------------------ children */

/* A parameter drawn as bd_space_sample draws it (Optuna's RandomSampler). */
static json_t *sample_param(const bd_param *p, bd_rng *rng)
{
    switch (p->type) {
    case BD_PARAM_FLOAT: {
        double u = bd_rng_uniform(rng), x;
        x = p->log ? exp(log(p->low) + u * (log(p->high) - log(p->low))) : p->low + u * (p->high - p->low);
        return json_real(fmin(fmax(x, p->low), p->high));
    }
    case BD_PARAM_INT: {
        if (p->log) {
            double a = log(p->low - 0.5), b = log(p->high + 0.5);
            double x = round(exp(a + bd_rng_uniform(rng) * (b - a)));
            return json_integer((json_int_t)fmin(fmax(x, p->low), p->high));
        }
        int64_t low = (int64_t)p->low;
        uint64_t span = (uint64_t)((int64_t)p->high - low) + 1;
        return json_integer((json_int_t)(low + (int64_t)bd_rng_below(rng, span)));
    }
    default:
        return json_deep_copy(json_array_get(p->choices, bd_rng_below(rng, json_array_size(p->choices))));
    }
}

/* Inherited: in every completed trial, and not fixed (Optuna leaves
 * single-valued distributions to sample_independent). */
static int inherited(const nsga2 *r, size_t i)
{
    const bd_param *p = bd_space_param(r->def->space, i);
    if (!r->completed || !r->always[i])
        return 0;
    if (p->type == BD_PARAM_CATEGORICAL)
        return json_array_size(p->choices) > 1;
    return p->high > p->low;
}

/* Binary tournament over the parents without `skip` ((size_t)-1: none). */
static size_t tournament(const nsga2 *r, size_t skip, bd_rng *rng)
{
    size_t n = r->n_parents - (skip != (size_t)-1);
    size_t a = (size_t)bd_rng_below(rng, n), b = (size_t)bd_rng_below(rng, n);
    if (skip != (size_t)-1) {
        a += a >= skip;
        b += b >= skip;
    }
    return cdominates(r, &r->parents[a], &r->parents[b]) ? a : b;
}

/* Optuna's sample_relative and sample_independent for one child. New reference. */
static json_t *make_child(const nsga2 *r, bd_rng *rng)
{
    const bd_space *space = r->def->space;
    size_t d = r->d, n_inherited = 0;
    const json_t **from = bd_xcalloc(d ? d : 1, sizeof *from); /* borrowed from a parent's config */
    unsigned char *keep = bd_xcalloc(d ? d : 1, 1);
    for (size_t i = 0; i < d; i++)
        n_inherited += (size_t)inherited(r, i);
    if (bd_rng_uniform(rng) < r->crossover_prob) {
        size_t p0 = tournament(r, (size_t)-1, rng), p1 = tournament(r, p0, rng);
        /* categorical parameters first, then the numeric ones, as perform_crossover */
        for (int pass = 0; pass < 2; pass++)
            for (size_t i = 0; i < d; i++) {
                const bd_param *p = bd_space_param(space, i);
                if (!inherited(r, i) || (p->type == BD_PARAM_CATEGORICAL) != (pass == 0))
                    continue;
                size_t which = bd_rng_uniform(rng) >= r->swapping_prob ? p1 : p0;
                from[i] = json_object_get(r->parents[which].config, p->name);
            }
    } else {
        size_t which = (size_t)bd_rng_below(rng, r->n_parents);
        for (size_t i = 0; i < d; i++)
            if (inherited(r, i))
                from[i] = json_object_get(r->parents[which].config, bd_space_param(space, i)->name);
    }
    double mutation = isnan(r->mutation_prob) ? 1.0 / fmax(1.0, (double)n_inherited) : r->mutation_prob;
    for (size_t i = 0; i < d; i++)
        if (from[i])
            keep[i] = bd_rng_uniform(rng) >= mutation;
    json_t *config = json_object();
    for (size_t i = 0; i < d; i++) {
        const bd_param *p = bd_space_param(space, i);
        if (!bd_space_is_active(space, i, config))
            continue;
        json_object_set_new(config, p->name, keep[i] ? json_deep_copy(from[i]) : sample_param(p, rng));
    }
    free(from);
    free(keep);
    return config;
}

/* ------------------------------------------------------------ slots */

static bd_sched_status nsga2_status(const bd_sched *s)
{
    const nsga2 *r = (const nsga2 *)s;
    if (r->max_trials && r->created - r->given_back >= r->max_trials)
        return r->running ? BD_STATUS_WAITING : BD_STATUS_DONE;
    return BD_STATUS_RUNNING;
}

/* Generation 0 draws at random; later ones breed from the parents. The
 * extra tells the worker the generation. */
static int nsga2_suggest(bd_sched *s, const bd_suggest_ctx *ctx, bd_suggestion *out, bd_err *err)
{
    nsga2 *r = (nsga2 *)s;
    (void)err;
    bd_sched_status st = nsga2_status(s);
    if (st != BD_STATUS_RUNNING)
        return st == BD_STATUS_DONE ? BD_SUGGEST_DONE : BD_SUGGEST_WAIT;
    bd_rng rng = ctx->rng;
    out->config = r->n_parents ? make_child(r, &rng) : bd_space_sample(r->def->space, &rng);
    out->budget = r->def->r_max;
    out->extra = json_pack("{s:I}", "generation", (json_int_t)r->generation);
    return BD_SUGGEST_TRIAL;
}

static running_trial *take_run(nsga2 *r, int64_t trial_id)
{
    running_trial *t = bd_idmap_get(&r->runs, trial_id);
    if (t)
        bd_idmap_remove(&r->runs, trial_id);
    return t;
}

/* A completed trial joins the pool (kept in trial-id order, as Optuna
 * lists a generation); the open generation closes at population_size. */
static void add_completed(nsga2 *r, running_trial *t, const bd_event *ev)
{
    for (size_t i = 0; i < r->d; i++)
        if (!json_object_get(t->config, bd_space_param(r->def->space, i)->name))
            r->always[i] = 0;
    r->completed++;
    if (r->n_pool == r->cap_pool) {
        r->cap_pool = r->cap_pool ? 2 * r->cap_pool : 64;
        r->pool = bd_xrealloc(r->pool, r->cap_pool * sizeof *r->pool);
    }
    member x = {.trial_id = ev->trial_id, .config = t->config, .violation = r->constrained ? ev->violation : 0};
    x.losses = bd_xmalloc(r->m * sizeof *x.losses);
    for (size_t j = 0; j < r->m; j++) {
        double v = r->m > 1 ? (ev->losses ? ev->losses[j] : INFINITY) : ev->loss;
        x.losses[j] = isnan(v) ? INFINITY : v;
    }
    if (isnan(x.violation))
        x.violation = INFINITY;
    t->config = NULL; /* the member owns it now */
    size_t at = r->n_pool;
    while (at > 0 && r->pool[at - 1].trial_id > x.trial_id)
        at--;
    memmove(&r->pool[at + 1], &r->pool[at], (r->n_pool - at) * sizeof *r->pool);
    r->pool[at] = x;
    r->n_pool++;
    if (t->generation == r->generation && ++r->pool_current >= r->pop_size)
        close_generation(r);
}

static int nsga2_observe(bd_sched *s, const bd_observe_ctx *ctx, const bd_event *ev, bd_decision *out, bd_err *err)
{
    nsga2 *r = (nsga2 *)s;
    running_trial *t;
    (void)ctx;
    (void)out;
    (void)err;
    switch (ev->type) {
    case BD_EV_CREATED:
        r->created++;
        r->running++;
        t = bd_xmalloc(sizeof *t);
        t->config = ev->config ? json_incref((json_t *)ev->config) : NULL;
        t->generation = r->generation;
        bd_idmap_put(&r->runs, ev->trial_id, t);
        break;
    case BD_EV_FAILED:
    case BD_EV_EXPIRED:
    case BD_EV_COMPLETED:
    case BD_EV_STOPPED:
        r->running--;
        if (ev->type == BD_EV_FAILED || ev->type == BD_EV_EXPIRED)
            r->given_back++;
        t = take_run(r, ev->trial_id);
        if (t && t->config && ev->type == BD_EV_COMPLETED)
            add_completed(r, t, ev);
        if (t)
            json_decref(t->config);
        free(t);
        break;
    case BD_EV_MEASUREMENT:
    case BD_EV_PRIOR: /* never passed: learns_from_prior is 0, as Optuna leaves add_trial'd trials out */
        break;
    }
    return 0;
}

/* The open generation, its progress and the parents' trial ids (at most
 * population_size), in the elite's order. */
static int nsga2_describe(const bd_sched *s, json_t **out)
{
    const nsga2 *r = (const nsga2 *)s;
    json_t *parents = json_array();
    for (size_t i = 0; i < r->n_parents; i++)
        json_array_append_new(parents, json_integer((json_int_t)r->parents[i].trial_id));
    *out = json_pack("{s:I, s:I, s:I, s:o, s:I, s:I, s:I, s:I}", "population_size", (json_int_t)r->pop_size,
                     "generation", (json_int_t)r->generation, "completed_in_generation",
                     (json_int_t)r->pool_current, "parent_trials", parents, "max_trials",
                     (json_int_t)r->max_trials, "created", (json_int_t)r->created, "running",
                     (json_int_t)r->running, "given_back", (json_int_t)r->given_back);
    return *out ? 0 : BD_EINTERNAL;
}

static void nsga2_destroy(bd_sched *s)
{
    nsga2 *r = (nsga2 *)s;
    if (!r)
        return;
    for (size_t i = 0; i < r->n_parents; i++)
        member_free(&r->parents[i]);
    for (size_t i = 0; i < r->n_pool; i++)
        member_free(&r->pool[i]);
    for (size_t i = 0; i < r->runs.cap; i++)
        if (r->runs.slots[i].key) {
            running_trial *t = r->runs.slots[i].value;
            json_decref(t->config);
            free(t);
        }
    bd_idmap_clear(&r->runs);
    free(r->parents);
    free(r->pool);
    free(r->always);
    free(r);
}

/* Each kept config ~64 bytes of JSON nodes a value (as random.c counts),
 * the losses, and the arrays; bounded by population_size and the running
 * trials, not by the study's length. */
static size_t nsga2_held_bytes(const bd_sched *s)
{
    const nsga2 *r = (const nsga2 *)s;
    size_t per_config = 64 * (r->d + 1), per_member = sizeof(member) + BD_HEAP_BLOCK(r->m * sizeof(double));
    size_t bytes = BD_HEAP_BLOCK(sizeof *r) + BD_HEAP_BLOCK(r->d) + (r->n_parents + r->n_pool) * (per_config + per_member) +
                   (r->cap_pool - r->n_pool) * sizeof(member) +
                   r->runs.count * (per_config + BD_HEAP_BLOCK(sizeof(running_trial))) +
                   r->runs.cap * sizeof(bd_idmap_slot);
    return bytes + bytes / 8 + 1024;
}

const struct bd_sched_ops bd_sched_nsga2 = {
    .abi = BD_SCHED_ABI,
    .name = "nsga2",
    .create = nsga2_create,
    .suggest = nsga2_suggest,
    .observe = nsga2_observe,
    .status = nsga2_status,
    .describe = nsga2_describe,
    .destroy = nsga2_destroy,
    .takes_enqueued = 1,     /* an enqueued config joins the open generation like a child */
    .learns_from_prior = 0,  /* Optuna's NSGA-II leaves trials without a generation out */
    .held_bytes = nsga2_held_bytes,
    .multi_objective = 1,
    .takes_constraints = 1,  /* constrained domination; the engine's front keeps feasible trials only */
};
