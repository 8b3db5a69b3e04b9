/* stopping_rule.c: the median / percentile stopping rule of stopping_rule.h.
 *
 * Invariants: table[0..n_steps) is sorted by step, distinct; a step's ring
 * holds its last `reported` values in completion order (+INFINITY for a
 * diverged one) and sorted holds the finite ones among them, ascending; a
 * running trial's values are sorted by step, distinct; `bytes` is the sum of
 * the blocks allocated now. */
#include "stopping_rule.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../json_util.h"
#include "idmap.h"

typedef struct step_values {
    double step;
    size_t reported; /* values in ring: completed trials that reported here (newest BD_STOP_WINDOW) */
    size_t head;     /* the oldest value's slot once the ring is full */
    size_t n_sorted; /* finite values among them */
    double *ring;    /* BD_STOP_WINDOW slots, owned */
    double *sorted;  /* BD_STOP_WINDOW slots, owned; the first n_sorted are used */
} step_values;

typedef struct step_loss {
    double step, loss;
} step_loss;

typedef struct judged {
    double best;   /* smallest loss reported (+INFINITY: every value diverged) */
    double last;   /* largest step reported */
    double second; /* largest other step reported, -INFINITY if none */
    step_loss *v;  /* the first BD_STOP_MAX_STEPS distinct steps, sorted by step; owned */
    size_t n, cap;
} judged;

struct bd_stop_rule {
    int maximize;             /* def->maximize: Optuna's percentile of the reported values is (100 - p)th */
    int is_median;            /* rule "median" (for the reason text) */
    double percentile;        /* in [0, 100] */
    long long startup_trials; /* completed trials before any stop (Optuna: n_startup_trials) */
    double warmup_steps;      /* steps below this never stop */
    double interval_steps;    /* > 0 */
    long long min_trials;     /* >= 1 values at the step to judge (Optuna: n_min_trials) */
    long long completed;      /* COMPLETED events seen */
    step_values **table;      /* n_steps, sorted by step; owned */
    size_t n_steps, cap_steps;
    bd_idmap running; /* trial_id -> judged (owned): running trials that reported */
    size_t bytes;     /* heap held, for held_bytes */
};

/* ------------------------------------------------------------- options */

/* Rewrites a helper's err->field "scheduler.options.<key>" to the nested name. */
static int nested(int rc, const char *key, bd_err *err)
{
    if (rc && err)
        snprintf(err->field, sizeof err->field, "scheduler.options.stopping.%s", key);
    return rc;
}

int bd_stop_rule_create(const bd_study_def *def, bd_stop_rule **out, bd_err *err)
{
    static const char *const known[] = {"rule",       "percentile", "startup_trials", "warmup_steps", "interval_steps",
                                        "min_trials", NULL};
    static const char *const rules[] = {"median", "percentile", NULL};
    const json_t *o = json_object_get(def->options, BD_STOP_RULE_OPTION);
    const char *rule;
    double percentile, warmup, interval;
    long long startup, min_trials;
    int rc;
    *out = NULL;
    if (!o || json_is_null(o))
        return 0;
    if (def->n_objectives > 1) /* as tpe_mo.c and gp_ucb.c: random.c took it and stopped by the first objective */
        return bd_err_set(err, BD_EINVAL, "scheduler.options.stopping",
                          "the stopping rules judge one objective; this study has %zu", def->n_objectives);
    if (!json_is_object(o))
        return bd_err_set(err, BD_EINVAL, "scheduler.options.stopping",
                          "must be an object: {\"rule\": \"median\" | \"percentile\", ...}");
    if ((rc = bd_json_reject_unknown(o, "scheduler.options.stopping", known, err)))
        return rc;
    if ((rc = nested(bd_opt_string(o, "rule", "median", rules, &rule, err), "rule", err)))
        return rc;
    int is_median = strcmp(rule, "median") == 0;
    const json_t *p = json_object_get(o, "percentile");
    if (!is_median && (!p || json_is_null(p)))
        return bd_err_set(err, BD_EINVAL, "scheduler.options.stopping.percentile",
                          "is required with rule \"percentile\": a number in [0, 100]");
    if ((rc = nested(bd_opt_number(o, "percentile", 50, 0, 100, &percentile, err), "percentile", err)))
        return rc;
    if (is_median && percentile != 50)
        return bd_err_set(err, BD_EINVAL, "scheduler.options.stopping.percentile",
                          "must be 50 (or left out) with rule \"median\"; use rule \"percentile\"");
    if ((rc = nested(bd_opt_int(o, "startup_trials", 5, 0, 1000000000LL, &startup, err), "startup_trials", err)) ||
        (rc = nested(bd_opt_number(o, "warmup_steps", 0, 0, 1e15, &warmup, err), "warmup_steps", err)) ||
        (rc = nested(bd_opt_number(o, "interval_steps", 1, 0, 1e15, &interval, err), "interval_steps", err)) ||
        (rc = nested(bd_opt_int(o, "min_trials", 1, 1, 1000000000LL, &min_trials, err), "min_trials", err)))
        return rc;
    if (!(interval > 0))
        return bd_err_set(err, BD_EINVAL, "scheduler.options.stopping.interval_steps", "must be > 0 (got %g)",
                          interval);
    bd_stop_rule *r = bd_xcalloc(1, sizeof *r);
    r->maximize = def->maximize;
    r->is_median = is_median;
    r->percentile = percentile;
    r->startup_trials = startup;
    r->warmup_steps = warmup;
    r->interval_steps = interval;
    r->min_trials = min_trials;
    r->bytes = BD_HEAP_BLOCK(sizeof *r);
    *out = r;
    return 0;
}

static void judged_free(bd_stop_rule *r, judged *j)
{
    if (!j)
        return;
    r->bytes -= BD_HEAP_BLOCK(j->cap * sizeof *j->v) + BD_HEAP_BLOCK(sizeof *j);
    free(j->v);
    free(j);
}

void bd_stop_rule_free(bd_stop_rule *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_steps; i++) {
        free(r->table[i]->ring);
        free(r->table[i]->sorted);
        free(r->table[i]);
    }
    free(r->table);
    for (size_t i = 0; i < r->running.cap; i++)
        if (r->running.slots[i].key)
            judged_free(r, r->running.slots[i].value);
    bd_idmap_clear(&r->running);
    free(r);
}

/* ------------------------------------------------------------- the table */

/* The first index of table whose step is >= step. */
static size_t step_lower_bound(const bd_stop_rule *r, double step)
{
    size_t lo = 0, hi = r->n_steps;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->table[mid]->step < step)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static step_values *find_step(const bd_stop_rule *r, double step)
{
    size_t i = step_lower_bound(r, step);
    return i < r->n_steps && r->table[i]->step == step ? r->table[i] : NULL;
}

/* The first index of sorted[0..n) whose value is >= x. */
static size_t value_lower_bound(const double *sorted, size_t n, double x)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sorted[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* A completed trial's value at step joins the step's window (the oldest
 * value leaves a full one). A new step beyond BD_STOP_MAX_STEPS is dropped. */
static void table_add(bd_stop_rule *r, double step, double loss)
{
    size_t i = step_lower_bound(r, step);
    step_values *sv;
    if (i < r->n_steps && r->table[i]->step == step)
        sv = r->table[i];
    else {
        if (r->n_steps >= BD_STOP_MAX_STEPS)
            return;
        if (r->n_steps == r->cap_steps) {
            r->bytes -= r->cap_steps ? BD_HEAP_BLOCK(r->cap_steps * sizeof *r->table) : 0;
            r->cap_steps = r->cap_steps ? 2 * r->cap_steps : 16;
            r->table = bd_xrealloc(r->table, r->cap_steps * sizeof *r->table);
            r->bytes += BD_HEAP_BLOCK(r->cap_steps * sizeof *r->table);
        }
        sv = bd_xcalloc(1, sizeof *sv);
        sv->step = step;
        sv->ring = bd_xmalloc(BD_STOP_WINDOW * sizeof *sv->ring);
        sv->sorted = bd_xmalloc(BD_STOP_WINDOW * sizeof *sv->sorted);
        r->bytes += BD_HEAP_BLOCK(sizeof *sv) + 2 * BD_HEAP_BLOCK(BD_STOP_WINDOW * sizeof(double));
        memmove(r->table + i + 1, r->table + i, (r->n_steps - i) * sizeof *r->table);
        r->table[i] = sv;
        r->n_steps++;
    }
    if (sv->reported == BD_STOP_WINDOW) { /* the oldest value leaves */
        double old = sv->ring[sv->head];
        if (isfinite(old)) {
            size_t k = value_lower_bound(sv->sorted, sv->n_sorted, old);
            assert(k < sv->n_sorted && sv->sorted[k] == old);
            memmove(sv->sorted + k, sv->sorted + k + 1, (sv->n_sorted - k - 1) * sizeof *sv->sorted);
            sv->n_sorted--;
        }
        sv->ring[sv->head] = loss;
        sv->head = (sv->head + 1) % BD_STOP_WINDOW;
    } else
        sv->ring[sv->reported++] = loss;
    if (isfinite(loss)) {
        size_t k = value_lower_bound(sv->sorted, sv->n_sorted, loss);
        memmove(sv->sorted + k + 1, sv->sorted + k, (sv->n_sorted - k) * sizeof *sv->sorted);
        sv->sorted[k] = loss;
        sv->n_sorted++;
    }
}

/* numpy.percentile(values, q) with its default linear method, on n >= 1
 * values sorted ascending: the same operations in the same order, so the
 * result is numpy's to the bit (numpy/lib/function_base.py, _quantile and
 * _lerp, 1.24). */
static double numpy_percentile(const double *sorted, size_t n, double q)
{
    double virtual_index = (double)(n - 1) * (q / 100.0);
    double prev = floor(virtual_index);
    size_t i = prev < 0 ? 0 : (size_t)prev, j = i + 1;
    if (i > n - 1)
        i = n - 1;
    if (j > n - 1)
        j = n - 1;
    double gamma = virtual_index - prev;
    double a = sorted[i], b = sorted[j], diff = b - a;
    return gamma >= 0.5 ? b - diff * (1 - gamma) : a + diff * gamma;
}

/* ------------------------------------------------------------- observe */

static judged *judged_of(bd_stop_rule *r, int64_t trial_id)
{
    judged *j = bd_idmap_get(&r->running, trial_id);
    if (!j) {
        j = bd_xcalloc(1, sizeof *j);
        j->best = INFINITY;
        j->last = j->second = -INFINITY;
        bd_idmap_put(&r->running, trial_id, j);
        r->bytes += BD_HEAP_BLOCK(sizeof *j);
    }
    return j;
}

/* Records (step, loss) for a running trial; 0 if it had reported this step already (the value is then ignored). */
static int record(bd_stop_rule *r, judged *j, double step, double loss)
{
    size_t lo = 0, hi = j->n;
    if (j->n && j->v[j->n - 1].step < step)
        lo = j->n; /* the usual case: a new, larger step */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (j->v[mid].step < step)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < j->n && j->v[lo].step == step)
        return 0;
    if (step == j->last) /* beyond the cap, a repeat of the largest step is still known */
        return 0;
    if (j->n < BD_STOP_MAX_STEPS) {
        if (j->n == j->cap) {
            r->bytes -= BD_HEAP_BLOCK(j->cap * sizeof *j->v);
            j->cap = j->cap ? 2 * j->cap : 16;
            j->v = bd_xrealloc(j->v, j->cap * sizeof *j->v);
            r->bytes += BD_HEAP_BLOCK(j->cap * sizeof *j->v);
        }
        memmove(j->v + lo + 1, j->v + lo, (j->n - lo) * sizeof *j->v);
        j->v[lo] = (step_loss){step, loss};
        j->n++;
    }
    if (loss < j->best)
        j->best = loss;
    if (step > j->last) {
        j->second = j->last;
        j->last = step;
    } else if (step > j->second)
        j->second = step;
    return 1;
}

/* The answer to a measurement of trial j: stopping_rule.h's rule, in
 * Optuna's order. */
static void judge(const bd_stop_rule *r, const judged *j, bd_decision *out)
{
    const char *name = r->is_median ? "median rule" : "percentile rule";
    if (r->completed == 0 || r->completed < r->startup_trials)
        return;
    double step = j->last;
    if (step < r->warmup_steps)
        return;
    double nearest_lower = floor((step - r->warmup_steps) / r->interval_steps) * r->interval_steps + r->warmup_steps;
    if (!(j->second < nearest_lower))
        return;
    if (j->best == INFINITY) {
        out->stop = 1;
        snprintf(out->reason, sizeof out->reason, "%s: every value this trial reported diverged", name);
        return;
    }
    const step_values *sv = find_step(r, step);
    if (!sv || (long long)sv->reported < r->min_trials || sv->n_sorted == 0)
        return;
    double best, p;
    int worse;
    if (r->maximize) { /* Optuna: the (100 - q)th of the values as reported (-loss), ascending */
        double *raw = bd_xmalloc(sv->n_sorted * sizeof *raw);
        for (size_t i = 0; i < sv->n_sorted; i++)
            raw[i] = -sv->sorted[sv->n_sorted - 1 - i];
        p = numpy_percentile(raw, sv->n_sorted, 100 - r->percentile);
        free(raw);
        best = -j->best;
        worse = best < p;
    } else {
        p = numpy_percentile(sv->sorted, sv->n_sorted, r->percentile);
        best = j->best;
        worse = best > p;
    }
    if (!worse)
        return;
    /* Formatted at full length, then cut to the decision's size: a worker reads the start. */
    char text[256];
    out->stop = 1;
    if (r->is_median)
        snprintf(text, sizeof text,
                 "%s: best value %.6g is worse than the median %.6g of %zu completed trials at step %g", name, best, p,
                 sv->n_sorted, step);
    else
        snprintf(text, sizeof text,
                 "%s: best value %.6g is worse than the %gth percentile %.6g of %zu completed trials at step %g", name,
                 best, r->maximize ? 100 - r->percentile : r->percentile, p, sv->n_sorted, step);
    size_t n = strlen(text) < sizeof out->reason ? strlen(text) : sizeof out->reason - 1;
    memcpy(out->reason, text, n);
    out->reason[n] = '\0';
}

static void drop(bd_stop_rule *r, int64_t trial_id)
{
    judged *j = bd_idmap_get(&r->running, trial_id);
    if (j) {
        bd_idmap_remove(&r->running, trial_id);
        judged_free(r, j);
    }
}

void bd_stop_rule_observe(bd_stop_rule *r, const bd_event *ev, bd_decision *out)
{
    judged *j;
    if (!r)
        return;
    switch (ev->type) {
    case BD_EV_MEASUREMENT:
        j = judged_of(r, ev->trial_id);
        record(r, j, ev->step, isnan(ev->loss) ? INFINITY : ev->loss);
        judge(r, j, out);
        break;
    case BD_EV_COMPLETED:
        if (ev->loss == INFINITY) { /* diverged (value null): Optuna's tell(nan) makes the trial FAIL */
            drop(r, ev->trial_id);
            break;
        }
        r->completed++;
        j = bd_idmap_get(&r->running, ev->trial_id);
        if (j)
            for (size_t i = 0; i < j->n; i++)
                table_add(r, j->v[i].step, j->v[i].loss);
        drop(r, ev->trial_id);
        break;
    case BD_EV_STOPPED:
    case BD_EV_FAILED:
    case BD_EV_EXPIRED:
        drop(r, ev->trial_id);
        break;
    case BD_EV_CREATED:
    case BD_EV_PRIOR:
        break;
    }
}

json_t *bd_stop_rule_describe(const bd_stop_rule *r)
{
    return json_pack("{s:s, s:f, s:I, s:f, s:f, s:I, s:I, s:I, s:I}", "rule", r->is_median ? "median" : "percentile",
                     "percentile", r->percentile, "startup_trials", (json_int_t)r->startup_trials, "warmup_steps",
                     r->warmup_steps, "interval_steps", r->interval_steps, "min_trials", (json_int_t)r->min_trials,
                     "completed", (json_int_t)r->completed, "steps", (json_int_t)r->n_steps, "judging",
                     (json_int_t)r->running.count);
}

size_t bd_stop_rule_held_bytes(const bd_stop_rule *r)
{
    return r ? r->bytes + r->running.cap * sizeof(bd_idmap_slot) : 0;
}
