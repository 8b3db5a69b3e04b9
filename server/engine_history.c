/* engine_history.c: GET /v1/studies/{id}/history, the best value over time
 * for plots. The study's mutex is held only to read its creation time and
 * usage; its trials are then read from storage in pages (the store lock is
 * released between pages) into compact records, and server/history.c picks
 * and thins the improvements. Memory, freed before answering: per trial of
 * the study one bd_history_trial (48 bytes), its budget and a prefix sum
 * (8 bytes each), about 6.4 MB for 100,000 trials; the answer itself is
 * bounded by points. */
#include "engine_internal.h"
#include "history.h"

#include <math.h>
#include <stdlib.h>

#define HISTORY_POINTS_MIN 2
#define HISTORY_POINTS_MAX 2000

typedef struct history_ctx {
    bd_history_trial *t; /* in id order while reading */
    size_t n, cap;
    int64_t completed;
} history_ctx;

/* The budget of trial id, read earlier (trials resume earlier trials). */
static double budget_before(const history_ctx *c, const double *budgets, int64_t id)
{
    size_t lo = 0, hi = c->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->t[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < c->n && c->t[lo].id == id ? budgets[lo] : 0;
}

typedef struct history_read {
    history_ctx *c;
    double *budgets; /* parallel to c->t */
} history_read;

static int add_trial(const bd_trial_row *row, void *arg)
{
    history_read *r = arg;
    history_ctx *c = r->c;
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 256;
        c->t = bd_xrealloc(c->t, c->cap * sizeof *c->t);
        r->budgets = bd_xrealloc(r->budgets, c->cap * sizeof *r->budgets);
    }
    double resumed = row->resume_from ? budget_before(c, r->budgets, row->resume_from) : 0;
    int completed = row->state == BD_TRIAL_COMPLETED;
    c->completed += completed;
    r->budgets[c->n] = row->budget;
    c->t[c->n++] = (bd_history_trial){
        .id = row->id,
        .created_at = row->created_at,
        /* as bd_study_feed counts it: a warm start was trained elsewhere, it spent nothing here */
        .spent = row->origin == BD_ORIGIN_WARM_START ? 0 : row->budget > resumed ? row->budget - resumed : 0,
        .completed = completed,
        .finished_at = row->finished_at,
        .value = completed && row->has_value ? row->value : NAN,
    };
    return 0;
}

int bd_engine_history(bd_engine *e, const bd_caller *who, int64_t study_id, int64_t points, json_t **out,
                      bd_err *err)
{
    study_rt *st;
    int rc;
    if (points < HISTORY_POINTS_MIN || points > HISTORY_POINTS_MAX)
        return bd_err_set(err, BD_EINVAL, "points", "must be from %d to %d", HISTORY_POINTS_MIN,
                          HISTORY_POINTS_MAX);
    if ((rc = bd_engine_lock_study(e, who, study_id, &st, err)))
        return rc;
    double created_at = st->created_at, resource_total = 0;
    int maximize = st->spec.def.maximize;
    bd_engine_unlock_study(e, st);

    history_ctx c = {0};
    history_read r = {.c = &c};
    rc = bd_store_trial_each(e->store, study_id, -1, -1, 0, 0, add_trial, &r, err);
    free(r.budgets);
    if (rc) {
        free(c.t);
        return rc;
    }
    for (size_t i = 0; i < c.n; i++)
        resource_total += c.t[i].spent; /* from the same read as the points, so they agree */
    bd_history_point *p = bd_xmalloc((size_t)points * sizeof *p);
    size_t n = bd_history_build(c.t, c.n, maximize, (size_t)points, p);
    free(c.t);
    json_t *best = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(best, json_pack("{s:I, s:f, s:f, s:f, s:f}", "trial_id", (json_int_t)p[i].trial_id,
                                              "finished_at", p[i].finished_at, "elapsed_seconds",
                                              p[i].finished_at - created_at, "resource", p[i].resource, "value",
                                              p[i].value));
    free(p);
    *out = json_pack("{s:o, s:I, s:f}", "best", best, "completed", (json_int_t)c.completed, "resource_total",
                     resource_total);
    return 0;
}
