/* engine_history.c: GET /v1/studies/{id}/history, the best value over time
 * for plots. The study's mutex is held only to read its creation time and
 * goal; its trials are then read from storage twice (the store reads in
 * batches and releases its lock between them), and
 * server/history.c keeps what the answer needs as they stream by:
 *
 *   1. the improvements of the best value (with constraints: of the
 *      feasible trials', as the incumbent; bd_history_records: the finish
 *      order is not the id order, so this pass ends with every improvement,
 *      thinned to the points asked for), and the ids of the trials that
 *      other trials resume;
 *   2. up to the last trial of pass 1: the resource each trial spent (its
 *      budget minus the budget of the trial it resumes, whose id is smaller),
 *      charged to the points it counts in.
 *
 * Memory: the improvements (few: about log n in practice), 16 bytes per
 * resumed trial, and the points; not the trials (before: 56 bytes each,
 * 72 MB at a million trials). The answer is bounded by points.
 *
 * A study with several objectives (issue 41): pass 1 gathers instead its
 * feasible completed trials at resource.max with their losses (history.h
 * bd_history_front: at most BD_HISTORY_FRONT_MAX of them, 16 + 8 m bytes
 * each), and each point is a change of the Pareto front with the front's
 * hypervolume then, against one reference point (the study's, else
 * BoTorch's rule over the final front). */
#include "engine.h"
#include "engine_internal.h"
#include "history.h"
#include "study.h"

#include <math.h>
#include <stdlib.h>

#define HISTORY_POINTS_MIN 2
#define HISTORY_POINTS_MAX 2000

/* What a study with several objectives needs of its definition, copied
 * under its mutex (the spec may be unloaded while the history reads). */
typedef struct front_def {
    size_t m;
    char *metrics[BD_STUDY_MAX_OBJECTIVES];
    int maximize[BD_STUDY_MAX_OBJECTIVES];
    double ref[BD_STUDY_MAX_OBJECTIVES]; /* minimized; NAN: inferred */
    double r_max;
    int constrained;
} front_def;

/* What pass 1 gathers. */
typedef struct improvements {
    const front_def *fd;     /* NULL: one objective */
    bd_history_front front;
    bd_history_records records;
    int64_t *resumed; /* ids other trials resume; sorted and unique after the pass */
    size_t n_resumed, cap_resumed;
    int64_t last_id;  /* the last trial read: pass 2 stops there */
} improvements;

static int gather(const bd_trial_row *row, void *arg)
{
    improvements *g = arg;
    g->last_id = row->id;
    if (g->fd) {
        const front_def *fd = g->fd;
        json_t *values = row->state == BD_TRIAL_COMPLETED && row->values && row->budget >= fd->r_max &&
                                 (!fd->constrained || row->feasible)
                             ? json_loads(row->values, 0, NULL)
                             : NULL;
        double losses[BD_STUDY_MAX_OBJECTIVES];
        int finite = values != NULL;
        for (size_t i = 0; finite && i < fd->m; i++) {
            const json_t *v = json_object_get(values, fd->metrics[i]);
            losses[i] = fd->maximize[i] ? -json_number_value(v) : json_number_value(v);
            finite = json_is_number(v) && isfinite(losses[i]);
        }
        if (finite)
            bd_history_front_add(&g->front, row->id, row->finished_at, losses);
        json_decref(values);
    } else if (row->state == BD_TRIAL_COMPLETED && row->has_value && !isnan(row->value) &&
               (!row->constrained || row->feasible)) { /* as the incumbent: the best feasible */
        bd_history_records_add(&g->records, row->id, row->finished_at, row->value);
    }
    if (row->resume_from) {
        if (g->n_resumed == g->cap_resumed) {
            g->cap_resumed = g->cap_resumed ? 2 * g->cap_resumed : 64;
            g->resumed = bd_xrealloc(g->resumed, g->cap_resumed * sizeof *g->resumed);
        }
        g->resumed[g->n_resumed++] = row->resume_from;
    }
    return 0;
}

static int by_id(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Index of id in the sorted ids, or n. */
static size_t find_id(const int64_t *ids, size_t n, int64_t id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ids[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && ids[lo] == id ? lo : n;
}

/* What pass 2 sums. */
typedef struct spending {
    const improvements *g;
    double *budgets;       /* parallel to g->resumed: their budgets, once read */
    bd_history_point *p;   /* the points of the answer, by finished_at */
    size_t n_points;
    double *charge;        /* bd_history_charge's, per point */
    int64_t completed;
    double resource_total;
} spending;

#define PASS_DONE 1 /* past pass 1's last trial: stop (not an error) */

static int spend(const bd_trial_row *row, void *arg)
{
    spending *s = arg;
    const improvements *g = s->g;
    if (row->id > g->last_id)
        return PASS_DONE;
    size_t k = find_id(g->resumed, g->n_resumed, row->id);
    if (k < g->n_resumed)
        s->budgets[k] = row->budget;
    double resumed = 0;
    if (row->resume_from) {
        size_t r = find_id(g->resumed, g->n_resumed, row->resume_from);
        resumed = r < g->n_resumed && !isnan(s->budgets[r]) ? s->budgets[r] : 0;
    }
    /* as bd_study_feed counts it: a warm start was trained elsewhere, it spent nothing here */
    double spent = row->origin == BD_ORIGIN_WARM_START ? 0 : row->budget > resumed ? row->budget - resumed : 0;
    s->completed += row->state == BD_TRIAL_COMPLETED;
    s->resource_total += spent; /* from the same read as the points, so they agree */
    bd_history_charge(s->p, s->n_points, s->charge, row->created_at, spent);
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
    double created_at = st->created_at;
    int maximize = st->spec.def.maximize;
    front_def fd = {.m = st->spec.def.n_objectives, .r_max = st->spec.def.r_max,
                    .constrained = st->spec.def.n_constraints > 0};
    for (size_t i = 0; fd.m > 1 && i < fd.m; i++) {
        fd.metrics[i] = bd_xstrdup(st->spec.def.objectives[i].metric);
        fd.maximize[i] = st->spec.def.objectives[i].maximize;
        double r = st->spec.references[i];
        fd.ref[i] = fd.maximize[i] ? -r : r;
    }
    bd_engine_unlock_study(e, st);

    improvements g = {.fd = fd.m > 1 ? &fd : NULL, .front = {.m = fd.m}, .records = {.maximize = maximize}};
    double *hv = NULL, ref[BD_STUDY_MAX_OBJECTIVES];
    rc = bd_store_trial_each(bd_engine_store(e), study_id, -1, -1, 0, 0, gather, &g, err);
    bd_history_point *p = NULL;
    spending sp = {.g = &g};
    if (rc == 0) {
        if (g.n_resumed) /* qsort must not see NULL */
            qsort(g.resumed, g.n_resumed, sizeof *g.resumed, by_id);
        size_t unique = 0;
        for (size_t i = 0; i < g.n_resumed; i++)
            if (unique == 0 || g.resumed[unique - 1] != g.resumed[i])
                g.resumed[unique++] = g.resumed[i];
        g.n_resumed = unique;
        p = bd_xmalloc((size_t)points * sizeof *p);
        if (g.fd) {
            hv = bd_xmalloc((size_t)points * sizeof *hv);
            sp.n_points = bd_history_front_points(&g.front, fd.ref, BD_STUDY_HV_MAX_POINTS_4D, (size_t)points, p, hv,
                                                  ref);
        } else {
            sp.n_points = bd_history_records_thin(&g.records, (size_t)points, p);
        }
        bd_history_records_free(&g.records);
        sp.p = p;
        sp.budgets = bd_xmalloc((g.n_resumed ? g.n_resumed : 1) * sizeof *sp.budgets);
        for (size_t i = 0; i < g.n_resumed; i++)
            sp.budgets[i] = NAN;
        sp.charge = bd_xcalloc(sp.n_points ? sp.n_points : 1, sizeof *sp.charge);
        rc = bd_store_trial_each(bd_engine_store(e), study_id, -1, -1, 0, 0, spend, &sp, err);
        if (rc == PASS_DONE)
            rc = 0;
        bd_history_settle(p, sp.n_points, sp.charge);
    }
    bd_history_records_free(&g.records);
    int truncated = g.front.truncated;
    bd_history_front_free(&g.front);
    free(g.resumed);
    free(sp.budgets);
    free(sp.charge);
    if (rc) {
        for (size_t i = 0; fd.m > 1 && i < fd.m; i++)
            free(fd.metrics[i]);
        free(p);
        free(hv);
        return rc;
    }
    size_t n = sp.n_points;
    json_t *best = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *point = json_pack("{s:I, s:f, s:f, s:f}", "trial_id", (json_int_t)p[i].trial_id, "finished_at",
                                  p[i].finished_at, "elapsed_seconds", p[i].finished_at - created_at, "resource",
                                  p[i].resource);
        if (hv) /* several objectives: the front's hypervolume once this trial changed it */
            json_object_set_new(point, "hypervolume", isfinite(hv[i]) ? json_real(hv[i]) : json_null());
        else
            json_object_set_new(point, "value", json_real(p[i].value));
        json_array_append_new(best, point);
    }
    free(p);
    *out = json_pack("{s:o, s:I, s:f}", "best", best, "completed", (json_int_t)sp.completed, "resource_total",
                     sp.resource_total);
    if (hv) {
        json_t *reference = json_object();
        for (size_t i = 0; i < fd.m; i++) {
            double r = fd.maximize[i] ? -ref[i] : ref[i];
            json_object_set_new(reference, fd.metrics[i], isfinite(r) ? json_real(r) : json_null());
            free(fd.metrics[i]);
        }
        json_object_set_new(*out, "reference_point", reference);
        json_object_set_new(*out, "truncated", json_boolean(truncated));
    }
    free(hv);
    return 0;
}
