/* history.h: the best-value history of a study for plots
 * (GET /v1/studies/{id}/history): one point per improvement of the best
 * value among completed trials in finish order, with the resource the study
 * had handed out by then, thinned to at most a given number of points.
 * Pure functions over compact per-trial records (no storage, no JSON).
 *
 * Two forms: bd_history_build over an array of every trial, and a streaming
 * one the engine uses (bd_history_records_add as trials come, in any order;
 * then bd_history_records_thin, then bd_history_charge per trial and
 * bd_history_settle), whose memory is the improvements, not the trials. */
#ifndef BD_HISTORY_H
#define BD_HISTORY_H

#include <stddef.h>
#include <stdint.h>

/* One trial of the study, as the history needs it. */
typedef struct bd_history_trial {
    int64_t id;
    double created_at;
    double spent;       /* resource it was handed: its budget, minus the budget of the
                           trial it resumes (the engine's used.resource accounting) */
    int completed;      /* state completed */
    double finished_at; /* when completed */
    double value;       /* completed: the reported value, NAN when none or null */
} bd_history_trial;

typedef struct bd_history_point {
    int64_t trial_id;
    double finished_at;
    double value;
    double resource;    /* resource spent by trials created at or before finished_at */
} bd_history_point;

/* Indices to keep of n points so at most max (>= 2) remain, evenly spread,
 * always the first and the last; written to keep (room for min(n, max)),
 * strictly increasing. Returns how many. */
size_t bd_history_thin(size_t n, size_t max, size_t *keep);

/* Fills out (room for max_points >= 2) with the improvements of the best
 * value (smaller is better unless maximize) among t's completed trials with
 * a value, in (finished_at, id) order, thinned by bd_history_thin. Returns
 * how many points. */
size_t bd_history_build(const bd_history_trial *t, size_t n, int maximize, size_t max_points, bd_history_point *out);

/* The improvements of the best value among the completed trials offered so
 * far: exactly the points strictly better than every point offered with an
 * earlier (finished_at, trial_id), whatever the order of the offers. Kept
 * by (finished_at, trial_id); resource unset. Zero-initialize, set maximize. */
typedef struct bd_history_records {
    int maximize;
    bd_history_point *p;
    size_t n, cap;
} bd_history_records;

/* Offers a completed trial's value (not NAN). O(log n) plus the records
 * it displaces. */
void bd_history_records_add(bd_history_records *r, int64_t trial_id, double finished_at, double value);
void bd_history_records_free(bd_history_records *r);

/* r's records thinned by bd_history_thin into out (room for max_points >=
 * 2), resource 0. Returns how many. */
size_t bd_history_records_thin(const bd_history_records *r, size_t max_points, bd_history_point *out);

/* A point's resource is what trials created at or before its finished_at
 * spent. For each trial: charge (out's n points by finished_at, charge n
 * zeros at first); then settle writes out[].resource. */
void bd_history_charge(const bd_history_point *out, size_t n, double *charge, double created_at, double spent);
void bd_history_settle(bd_history_point *out, size_t n, const double *charge);

/* Several objectives (issue 41): the hypervolume of the Pareto front over
 * time. Offer each feasible completed trial (at full budget, finite
 * minimized losses) in any order; bd_history_front_points sorts them by
 * (finished_at, trial_id), follows the front as they come (a point where it
 * changes: the trial that changed it), thins those points as
 * bd_history_thin does and gives each the front's hypervolume then,
 * against one reference for all: ref's entries, or where one is NAN
 * BoTorch's rule over the final front (model/pareto.h). Memory: 16 + 8 m
 * bytes a trial offered, at most BD_HISTORY_FRONT_MAX trials (later offers
 * are dropped and truncated set). The front followed holds at most
 * BD_PARETO_HV_MAX_POINTS (model/pareto.h) members: once full, a trial that
 * displaces none is left out, and truncated set too. Zero-initialize, set m. */
#define BD_HISTORY_FRONT_MAX 200000
typedef struct bd_history_front {
    size_t m;           /* objectives */
    int64_t *ids;
    double *finished;
    double *losses;     /* row-major, m each */
    size_t n, cap;
    int truncated;
} bd_history_front;

void bd_history_front_add(bd_history_front *h, int64_t trial_id, double finished_at, const double *losses);
void bd_history_front_free(bd_history_front *h);
/* Fills out and hv (room for max_points >= 2 each; out[].value is the
 * changing trial's first loss, out[].resource 0) and ref_out (m entries:
 * the reference used). Returns how many points. A hypervolume past the
 * engine's bound (4+ objectives and a front over max_hv_4d points) is NAN. */
size_t bd_history_front_points(bd_history_front *h, const double *ref, size_t max_hv_4d, size_t max_points,
                               bd_history_point *out, double *hv, double *ref_out);

#endif
