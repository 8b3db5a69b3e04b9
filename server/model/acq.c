/* acq.c: the acquisition optimiser of acq.h: scrambled Sobol candidates
 * (Latin hypercube columns past Sobol's 40 dimensions),
 * then a batched compass search from the best few, with exhaustive moves on
 * categoricals and conditional coordinates held at 0.5 while inactive.
 * Also GP-UCB's exploration multipliers (docs/ALGORITHMS.md section 8).
 *
 * Invariants: every point scored has been through project(); the best point
 * returned is one that was scored, with that score.
 * Cost: see acq.h; memory O((n_candidates + n_starts + 2 d + sum K) d). */
#include "acq.h"

#include <gsl/gsl_sf_erf.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sobol.h"

void bd_acq_options_default(bd_acq_options *o)
{
    o->n_candidates = 2048;
    o->n_local = 4;
    o->max_polls = 24;
    o->step0 = 0.1;
    o->step_min = 1e-3;
    o->starts = NULL;
    o->n_starts = 0;
}

int bd_acq_check(const bd_acq_problem *p, bd_err *err)
{
    if (p->d < 1 || p->d > BD_ACQ_MAX_DIM)
        return bd_err_set(err, BD_EINVAL, NULL, "the acquisition optimiser takes 1 to %d coordinates, not %zu",
                          BD_ACQ_MAX_DIM, p->d);
    if (!p->dims || !p->score)
        return bd_err_set(err, BD_EINVAL, NULL, "the problem needs dims and a score function");
    for (size_t j = 0; j < p->d; j++) {
        const bd_acq_dim *dm = &p->dims[j];
        if (dm->kind == BD_ACQ_CATEGORICAL && dm->n_choices < 1)
            return bd_err_set(err, BD_EINVAL, NULL, "coordinate %zu: a categorical needs a choice", j);
        if (dm->kind == BD_ACQ_INTEGER &&
            (!(dm->low <= dm->high) || !isfinite(dm->low) || !isfinite(dm->high) || (dm->log && !(dm->low > 0))))
            return bd_err_set(err, BD_EINVAL, NULL, "coordinate %zu: bad integer range", j);
        if (dm->kind != BD_ACQ_CONTINUOUS && dm->kind != BD_ACQ_INTEGER && dm->kind != BD_ACQ_CATEGORICAL)
            return bd_err_set(err, BD_EINVAL, NULL, "coordinate %zu: unknown kind", j);
    }
    return 0;
}

/* ---- the grid: the same arithmetic as bd_space_encode / bd_space_decode ---- */

double bd_acq_int_value(const bd_acq_dim *dm, double u)
{
    double x;
    if (u <= 0)
        x = dm->low;
    else if (u >= 1)
        x = dm->high;
    else if (dm->log)
        x = exp(log(dm->low) + u * (log(dm->high) - log(dm->low)));
    else
        x = dm->low + u * (dm->high - dm->low);
    x = round(fmin(fmax(x, dm->low), dm->high));
    return fmin(fmax(x, dm->low), dm->high);
}

static double int_code(const bd_acq_dim *dm, double v)
{
    double u;
    if (dm->high == dm->low)
        return 0.5;
    if (dm->log)
        u = (log(v) - log(dm->low)) / (log(dm->high) - log(dm->low));
    else
        u = (v - dm->low) / (dm->high - dm->low);
    return fmin(fmax(u, 0.0), 1.0);
}

static size_t choice_of(const bd_acq_dim *dm, double u)
{
    double f = floor(u * (double)dm->n_choices);
    if (!(f >= 0))
        return 0;
    return f >= (double)dm->n_choices ? dm->n_choices - 1 : (size_t)f;
}

static double choice_code(const bd_acq_dim *dm, size_t k)
{
    return ((double)k + 0.5) / (double)dm->n_choices;
}

static double snap(const bd_acq_dim *dm, double u)
{
    u = isnan(u) ? 0.5 : fmin(fmax(u, 0.0), 1.0);
    switch (dm->kind) {
    case BD_ACQ_INTEGER:
        return int_code(dm, bd_acq_int_value(dm, u));
    case BD_ACQ_CATEGORICAL:
        return choice_code(dm, choice_of(dm, u));
    default:
        return u;
    }
}

void bd_acq_project(const bd_acq_problem *p, double *u, unsigned char *mask)
{
    unsigned char local[BD_ACQ_MAX_DIM], *m = mask ? mask : local;
    for (size_t j = 0; j < p->d; j++)
        u[j] = snap(&p->dims[j], u[j]);
    if (p->active)
        p->active(p->active_ctx, u, m);
    else
        memset(m, 1, p->d);
    for (size_t j = 0; j < p->d; j++)
        if (!m[j])
            u[j] = 0.5;
}

/* ---- the search ---- */

typedef struct search {
    const bd_acq_problem *p;
    const bd_acq_options *o;
    double *nb;  /* neighbours, max_nb x d */
    double *nbs; /* their scores */
    size_t max_nb;
    double *best_u; /* best point seen */
    double best;    /* its score */
} search;

static double clean(double s)
{
    return isnan(s) ? -INFINITY : s;
}

static void consider(search *s, const double *u, double score)
{
    if (score > s->best) {
        s->best = score;
        memcpy(s->best_u, u, s->p->d * sizeof *u);
    }
}

/* Appends the projection of u to the neighbour list unless it equals x. */
static void push(search *s, size_t *n, const double *x, double *u)
{
    bd_acq_project(s->p, u, NULL);
    if (memcmp(u, x, s->p->d * sizeof *u) == 0)
        return;
    memcpy(s->nb + *n * s->p->d, u, s->p->d * sizeof *u);
    (*n)++;
}

/* Compass search from x (score fx). */
static int refine(search *s, double *x, double fx)
{
    const bd_acq_problem *p = s->p;
    size_t d = p->d;
    double h = s->o->step0, u[BD_ACQ_MAX_DIM];
    unsigned char mask[BD_ACQ_MAX_DIM];
    int rc;
    for (size_t poll = 0; poll < s->o->max_polls; poll++) {
        size_t n = 0, best_k = 0;
        int h_matters = 0;
        bd_acq_project(p, x, mask);
        for (size_t j = 0; j < d; j++) {
            const bd_acq_dim *dm = &p->dims[j];
            if (!mask[j])
                continue;
            if (dm->kind == BD_ACQ_CATEGORICAL) {
                for (size_t k = 0; k < dm->n_choices; k++) {
                    memcpy(u, x, d * sizeof *u);
                    u[j] = choice_code(dm, k);
                    push(s, &n, x, u);
                }
                continue;
            }
            for (int dir = -1; dir <= 1; dir += 2) {
                memcpy(u, x, d * sizeof *u);
                u[j] = x[j] + dir * h;
                if (dm->kind == BD_ACQ_INTEGER) {
                    double v = bd_acq_int_value(dm, x[j]), w = bd_acq_int_value(dm, snap(dm, u[j]));
                    if (fabs(w - v) > 1)
                        h_matters = 1;
                    else
                        w = fmin(fmax(v + dir, dm->low), dm->high);
                    u[j] = int_code(dm, w);
                } else {
                    h_matters = 1;
                }
                push(s, &n, x, u);
            }
        }
        if (n == 0)
            break;
        if ((rc = p->score(p->score_ctx, n, s->nb, s->nbs)))
            return rc;
        for (size_t k = 0; k < n; k++) {
            s->nbs[k] = clean(s->nbs[k]);
            if (s->nbs[k] > s->nbs[best_k])
                best_k = k;
        }
        if (s->nbs[best_k] > fx) {
            fx = s->nbs[best_k];
            memcpy(x, s->nb + best_k * d, d * sizeof *x);
            consider(s, x, fx);
        } else {
            if (!h_matters)
                break;
            h *= 0.5;
            if (h < s->o->step_min)
                break;
        }
    }
    return 0;
}

int bd_acq_candidates(size_t d, size_t n, bd_rng *rng, double *U, bd_err *err)
{
    size_t d_sobol = d < BD_SOBOL_MAX_DIM ? d : BD_SOBOL_MAX_DIM;
    double x[BD_SOBOL_MAX_DIM];
    size_t *perm = NULL;
    bd_sobol *sob = NULL;
    int rc;

    if (d < 1 || d > BD_ACQ_MAX_DIM)
        return bd_err_set(err, BD_EINVAL, NULL, "the acquisition optimiser takes 1 to %d coordinates, not %zu",
                          BD_ACQ_MAX_DIM, d);
    if ((rc = bd_sobol_new(d_sobol, &sob, err)))
        return rc;
    bd_sobol_shift(sob, rng);
    for (size_t i = 0; i < n; i++) {
        if ((rc = bd_sobol_next(sob, x))) {
            rc = bd_err_set(err, rc, NULL, "too many Sobol candidates");
            goto out;
        }
        memcpy(U + i * d, x, d_sobol * sizeof *x);
    }
    if (d > d_sobol && n > 0) {
        perm = bd_xmalloc(n * sizeof *perm);
        for (size_t j = d_sobol; j < d; j++) {
            for (size_t i = 0; i < n; i++)
                perm[i] = i;
            for (size_t i = n - 1; i > 0; i--) { /* Fisher-Yates */
                size_t k = (size_t)bd_rng_below(rng, (uint64_t)i + 1), t = perm[i];
                perm[i] = perm[k];
                perm[k] = t;
            }
            for (size_t i = 0; i < n; i++) {
                double u = ((double)perm[i] + bd_rng_uniform(rng)) / (double)n;
                U[i * d + j] = u < 1 ? u : nextafter(1.0, 0.0);
            }
        }
    }
out:
    free(perm);
    bd_sobol_free(sob);
    return rc;
}

typedef struct ranked {
    double score;
    size_t i;
} ranked;

static int by_score_desc(const void *a, const void *b)
{
    const ranked *p = a, *q = b;
    if (p->score != q->score)
        return p->score > q->score ? -1 : 1;
    return (p->i > q->i) - (p->i < q->i);
}

int bd_acq_maximize(const bd_acq_problem *p, const bd_acq_options *o, bd_rng *rng, double *best_u, double *best_score,
                    bd_err *err)
{
    bd_acq_options def;
    size_t d = p->d, n, n_nb = 0, *chosen = NULL, n_chosen = 0;
    double *U = NULL, *scores = NULL, x[BD_ACQ_MAX_DIM];
    ranked *order = NULL;
    search s = {0};
    int rc;

    if (!o) {
        bd_acq_options_default(&def);
        o = &def;
    }
    if ((rc = bd_acq_check(p, err)))
        return rc;
    if (o->n_candidates + o->n_starts == 0)
        return bd_err_set(err, BD_EINVAL, NULL, "no candidates to search from");
    n = o->n_candidates + o->n_starts;
    U = bd_xmalloc(n * d * sizeof *U);
    scores = bd_xmalloc(n * sizeof *scores);
    if ((rc = bd_acq_candidates(d, o->n_candidates, rng, U, err)))
        goto out;
    for (size_t i = 0; i < o->n_candidates; i++)
        bd_acq_project(p, U + i * d, NULL);
    for (size_t i = 0; i < o->n_starts; i++) {
        memcpy(U + (o->n_candidates + i) * d, o->starts + i * d, d * sizeof *U);
        bd_acq_project(p, U + (o->n_candidates + i) * d, NULL);
    }
    if ((rc = p->score(p->score_ctx, n, U, scores)))
        goto out;

    for (size_t j = 0; j < d; j++)
        n_nb += p->dims[j].kind == BD_ACQ_CATEGORICAL ? p->dims[j].n_choices : 2;
    s = (search){p, o, bd_xmalloc(n_nb * d * sizeof *s.nb), bd_xmalloc(n_nb * sizeof *s.nbs), n_nb, best_u, -INFINITY};
    order = bd_xmalloc(n * sizeof *order);
    for (size_t i = 0; i < n; i++)
        order[i] = (ranked){clean(scores[i]), i};
    qsort(order, n, sizeof *order, by_score_desc);
    memcpy(best_u, U + order[0].i * d, d * sizeof *best_u);
    s.best = order[0].score;

    chosen = bd_xmalloc((o->n_local ? o->n_local : 1) * sizeof *chosen);
    for (size_t r = 0; r < n && n_chosen < o->n_local; r++) {
        const double *c = U + order[r].i * d;
        int dup = 0;
        for (size_t k = 0; k < n_chosen && !dup; k++)
            dup = memcmp(c, U + chosen[k] * d, d * sizeof *c) == 0;
        if (dup || order[r].score == -INFINITY)
            continue;
        chosen[n_chosen++] = order[r].i;
    }
    for (size_t k = 0; k < n_chosen; k++) {
        memcpy(x, U + chosen[k] * d, d * sizeof *x);
        if ((rc = refine(&s, x, clean(scores[chosen[k]]))))
            goto out;
    }
    if (best_score)
        *best_score = s.best;
out:
    free(U);
    free(scores);
    free(order);
    free(chosen);
    free(s.nb);
    free(s.nbs);
    return rc;
}

/* ---- GP-UCB ---- */

double bd_acq_ucb_multiplier_code(size_t d, double t)
{
    return 0.2 * (double)d * log(2.0 * t);
}

double bd_acq_ucb_beta_paper(double domain_size, double t, double delta)
{
    const double pi = 3.14159265358979323846;
    return 2.0 * log(domain_size * t * t * pi * pi / (6.0 * delta));
}

double bd_acq_log_ei(double best, double mu, double sd)
{
    if (!isfinite(best))
        return -mu;
    if (!(sd > 0))
        return best > mu ? log(best - mu) : -INFINITY;
    double z = (best - mu) / sd, log_h;
    if (z > 30) {
        /* h(z) = z + phi(z) - z Q(z) = z to double precision (phi(30) ~ 1e-196),
         * and GSL's erf_Z and erf_Q underflow (an error) beyond 38 */
        log_h = log(z);
    } else if (z > -1) {
        log_h = log(gsl_sf_erf_Z(z) + z * (1 - gsl_sf_erf_Q(z)));
    } else if (z > -1e6) {
        /* erfcx(x) = exp(x^2) erfc(x), x = -z / sqrt 2 > 0 */
        double x = -z / M_SQRT2, erfcx = exp(x * x + gsl_sf_log_erfc(x));
        log_h = -0.5 * z * z - 0.5 * log(2 * M_PI) + log1p(z * sqrt(M_PI / 2) * erfcx);
    } else {
        log_h = -0.5 * z * z - 0.5 * log(2 * M_PI) - 2 * log(-z);
    }
    return log(sd) + log_h;
}
