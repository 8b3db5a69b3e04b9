/* proposer.c: random or TPE proposals of new configs (proposer.h). Results
 * are kept per budget, in the coordinates of server/model/tpe.h. */
#include "proposer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../model/tpe.h"

enum { SAMPLER_RANDOM, SAMPLER_TPE };

typedef struct level {
    double budget;
    double *x;    /* n rows of d coordinates (tpe.h), arrival order */
    double *loss; /* n */
    size_t n, cap;
} level;

struct bd_proposer {
    const bd_space *space; /* borrowed */
    size_t d;
    int sampler;
    long long n_startup;    /* results a budget needs before TPE fits on it */
    double random_fraction; /* of proposals drawn at random once a model exists */
    bd_tpe_opts tpe;
    bd_tpe_dim *dims; /* d */
    level *levels;    /* by increasing budget */
    size_t n_levels;
};

/* The coordinate system of tpe.h for parameter p. */
static bd_tpe_dim dim_of(const bd_param *p)
{
    bd_tpe_dim dim = {0};
    if (p->type == BD_PARAM_CATEGORICAL) {
        dim.n_choices = (int)json_array_size(p->choices);
        return dim;
    }
    double lo = p->low, hi = p->high;
    if (p->type == BD_PARAM_INT) { /* each integer owns the bin around it */
        lo -= 0.5;
        hi += 0.5;
        dim.step = p->log ? 0 : 1;
    }
    dim.low = p->log ? log(lo) : lo;
    dim.high = p->log ? log(hi) : hi;
    return dim;
}

int bd_proposer_create(const bd_study_def *def, const char *dflt_sampler, double dflt_random_fraction,
                       bd_proposer **out, bd_err *err)
{
    static const char *const samplers[] = {"random", "tpe", NULL};
    const json_t *o = def->options;
    const char *sampler;
    long long n_startup, n_cand;
    double gamma, prior_weight, random_fraction;
    int multivariate, rc;
    if ((rc = bd_opt_string(o, "sampler", dflt_sampler, samplers, &sampler, err)) ||
        (rc = bd_opt_int(o, "n_startup_trials", 10, 1, 100000, &n_startup, err)) ||
        (rc = bd_opt_int(o, "n_ei_candidates", 24, 1, BD_TPE_MAX_CANDIDATES, &n_cand, err)) ||
        (rc = bd_opt_number(o, "gamma", 0.1, 0.01, 0.5, &gamma, err)) ||
        (rc = bd_opt_number(o, "prior_weight", 1.0, 1e-6, 100.0, &prior_weight, err)) ||
        (rc = bd_opt_bool(o, "multivariate", 0, &multivariate, err)) ||
        (rc = bd_opt_number(o, "random_fraction", dflt_random_fraction, 0.0, 1.0, &random_fraction, err)))
        return rc;
    if (strcmp(sampler, "tpe") == 0 && bd_space_size(def->space) > BD_TPE_MAX_DIM)
        return bd_err_set(err, BD_EINVAL, "parameters", "the tpe sampler handles at most %d parameters, not %zu",
                          BD_TPE_MAX_DIM, bd_space_size(def->space));
    bd_proposer *p = bd_xcalloc(1, sizeof *p);
    p->space = def->space;
    p->d = bd_space_size(def->space);
    p->sampler = strcmp(sampler, "tpe") == 0 ? SAMPLER_TPE : SAMPLER_RANDOM;
    p->n_startup = n_startup;
    p->random_fraction = random_fraction;
    bd_tpe_opts_default(&p->tpe);
    p->tpe.gamma = gamma;
    p->tpe.prior_weight = prior_weight;
    p->tpe.n_candidates = (int)n_cand;
    p->tpe.multivariate = multivariate;
    p->dims = bd_xcalloc(p->d, sizeof *p->dims);
    for (size_t i = 0; i < p->d; i++)
        p->dims[i] = dim_of(bd_space_param(def->space, i));
    *out = p;
    return 0;
}

void bd_proposer_new_study_defaults(const bd_study_def *def, json_t *options)
{
    if (json_object_get(options, "sampler"))
        return;
    int wide = bd_space_size(def->space) > BD_TPE_MAX_DIM; /* beyond the model's bound: stay random */
    json_object_set_new(options, "sampler", json_string(wide ? "random" : BD_PROPOSER_NEW_STUDY_SAMPLER));
}

void bd_proposer_free(bd_proposer *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n_levels; i++) {
        free(p->levels[i].x);
        free(p->levels[i].loss);
    }
    free(p->levels);
    free(p->dims);
    free(p);
}

const char *bd_proposer_sampler(const bd_proposer *p)
{
    return p->sampler == SAMPLER_TPE ? "tpe" : "random";
}

static level *level_for(bd_proposer *p, double budget)
{
    size_t i = 0;
    while (i < p->n_levels && p->levels[i].budget < budget)
        i++;
    if (i < p->n_levels && p->levels[i].budget == budget)
        return &p->levels[i];
    p->levels = bd_xrealloc(p->levels, (p->n_levels + 1) * sizeof *p->levels);
    memmove(&p->levels[i + 1], &p->levels[i], (p->n_levels - i) * sizeof *p->levels);
    p->n_levels++;
    memset(&p->levels[i], 0, sizeof p->levels[i]);
    p->levels[i].budget = budget;
    return &p->levels[i];
}

void bd_proposer_add(bd_proposer *p, const json_t *config, double budget, double loss)
{
    if (p->sampler == SAMPLER_RANDOM || !config)
        return; /* random search learns nothing */
    double *unit = bd_xmalloc(p->d * sizeof *unit);
    if (bd_space_encode(p->space, config, unit)) {
        free(unit);
        return;
    }
    level *lv = level_for(p, budget);
    if (lv->n == lv->cap) {
        lv->cap = lv->cap ? 2 * lv->cap : 16;
        lv->x = bd_xrealloc(lv->x, lv->cap * p->d * sizeof *lv->x);
        lv->loss = bd_xrealloc(lv->loss, lv->cap * sizeof *lv->loss);
    }
    double *row = lv->x + lv->n * p->d;
    for (size_t i = 0; i < p->d; i++) {
        const bd_param *par = bd_space_param(p->space, i);
        const json_t *v = json_object_get(config, par->name); /* a valid config holds exactly the active ones */
        if (!v)
            row[i] = NAN;
        else if (par->type == BD_PARAM_CATEGORICAL)
            row[i] = floor(unit[i] * (double)p->dims[i].n_choices);
        else
            row[i] = par->log ? log(json_number_value(v)) : json_number_value(v);
    }
    lv->loss[lv->n++] = isnan(loss) ? INFINITY : loss;
    free(unit);
}

/* The level TPE fits on: the largest budget with enough results, or NULL. */
static const level *model_level(const bd_proposer *p)
{
    for (size_t i = p->n_levels; i-- > 0;)
        if ((long long)p->levels[i].n >= p->n_startup)
            return &p->levels[i];
    return NULL;
}

/* The rows fitted on: all of them up to BD_PROPOSER_WINDOW, else the best
 * bd_tpe_n_good of all and the newest others, in arrival order. Returns how
 * many were written to rows. */
static size_t window_rows(const bd_proposer *p, const level *lv, size_t *rows)
{
    size_t n = lv->n, m = 0;
    if (n <= BD_PROPOSER_WINDOW) {
        for (size_t i = 0; i < n; i++)
            rows[i] = i;
        return n;
    }
    size_t keep = bd_tpe_n_good(&p->tpe, n), n_best = 0;
    size_t *best = bd_xmalloc((keep ? keep : 1) * sizeof *best); /* sorted by (loss, index) */
    for (size_t i = 0; i < n; i++) {
        size_t k = n_best;
        while (k > 0 && lv->loss[best[k - 1]] > lv->loss[i])
            k--;
        if (k >= keep)
            continue;
        if (n_best < keep)
            n_best++;
        memmove(&best[k + 1], &best[k], (n_best - 1 - k) * sizeof *best);
        best[k] = i;
    }
    unsigned char *take = bd_xcalloc(n, 1);
    for (size_t i = 0; i < n_best; i++)
        take[best[i]] = 1;
    for (size_t i = n, others = 0; i-- > 0 && others < BD_PROPOSER_WINDOW - n_best;)
        if (!take[i]) {
            take[i] = 1;
            others++;
        }
    for (size_t i = 0; i < n; i++)
        if (take[i])
            rows[m++] = i;
    free(take);
    free(best);
    return m;
}

json_t *bd_proposer_propose(const bd_proposer *p, bd_rng *rng)
{
    const level *lv = p->sampler == SAMPLER_TPE ? model_level(p) : NULL;
    if (!lv || (p->random_fraction > 0 && bd_rng_uniform(rng) < p->random_fraction))
        return bd_space_sample(p->space, rng);
    size_t *rows = bd_xmalloc(lv->n * sizeof *rows);
    size_t m = window_rows(p, lv, rows);
    double *x = bd_xmalloc(m * p->d * sizeof *x), *loss = bd_xmalloc(m * sizeof *loss);
    for (size_t i = 0; i < m; i++) {
        memcpy(x + i * p->d, lv->x + rows[i] * p->d, p->d * sizeof *x);
        loss[i] = lv->loss[rows[i]];
    }
    double *point = bd_xmalloc(p->d * sizeof *point), *unit = bd_xmalloc(p->d * sizeof *unit);
    bd_tpe_propose(p->dims, p->d, x, loss, m, &p->tpe, rng, point);
    for (size_t i = 0; i < p->d; i++) { /* back to bd_space_decode's unit cube */
        const bd_param *par = bd_space_param(p->space, i);
        if (par->type == BD_PARAM_CATEGORICAL) {
            unit[i] = (point[i] + 0.5) / (double)p->dims[i].n_choices;
        } else {
            double lo = par->log ? log(par->low) : par->low, hi = par->log ? log(par->high) : par->high;
            unit[i] = hi > lo ? (point[i] - lo) / (hi - lo) : 0.5;
        }
    }
    json_t *config = bd_space_decode(p->space, unit);
    free(point);
    free(unit);
    free(x);
    free(loss);
    free(rows);
    return config;
}

json_t *bd_proposer_describe(const bd_proposer *p)
{
    json_t *results = json_object();
    for (size_t i = 0; i < p->n_levels; i++) {
        char key[32];
        snprintf(key, sizeof key, "%g", p->levels[i].budget);
        json_object_set_new(results, key, json_integer((json_int_t)p->levels[i].n));
    }
    const level *lv = p->sampler == SAMPLER_TPE ? model_level(p) : NULL;
    return json_pack("{s:s, s:o, s:o}", "sampler", bd_proposer_sampler(p), "results", results, "model_budget",
                     lv ? json_real(lv->budget) : json_null());
}
