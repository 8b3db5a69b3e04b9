/* history.h: the best-value history of a study for plots
 * (GET /v1/studies/{id}/history): one point per improvement of the best
 * value among completed trials in finish order, with the resource the study
 * had handed out by then, thinned to at most a given number of points.
 * Pure functions over compact per-trial records (no storage, no JSON). */
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
 * a value, in (finished_at, id) order, thinned by bd_history_thin; the
 * order of t is changed. Returns how many points. */
size_t bd_history_build(bd_history_trial *t, size_t n, int maximize, size_t max_points, bd_history_point *out);

#endif
