/* engine_export.c: the CSV export of a study's trials
 * (GET /v1/studies/{id}/trials.csv). Columns: trial_id, state, budget,
 * value, timeout, instance_index, instance_name, worker, created_at,
 * finished_at, steps, last_step_value, reason, user_attrs (the trial's
 * attributes as compact JSON text, empty when none), origin (suggested,
 * enqueued or warm_start), in a study with several objectives or
 * constraints value.<metric> for each metric trials report (objectives,
 * then constraints; empty for a run that reported none, e.g. diverged) and,
 * with constraints, feasible (true / false; empty while running), then
 * params_<name> for each
 * parameter of the space in its order, the declared ones then those trials
 * asked for (Optuna's trials_dataframe naming); an inactive or never asked
 * parameter is an empty cell, times are Unix seconds.
 *
 * The export is read in pages of BD_CSV_PAGE trials, each one storage query
 * that also counts every trial's measurements (bd_store_trial_each_with_steps),
 * a page ending early once its text passes BD_CSV_PAGE_BYTES; the study's
 * mutex is only taken to check ownership and copy the parameter names (deletion is an
 * atomic flag; the study's definition may be unloaded from the cache while a slow client
 * reads, so the export keeps no pointer into it). Memory: the text of one page, so an
 * export costs the same for 100 or 100,000 trials. */
#include "engine.h"
#include "engine_internal.h"
#include "csv.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const fixed_columns[] = {
    "trial_id",   "state",       "budget", "value",           "timeout", "instance_index", "instance_name",
    "worker",     "created_at",  "finished_at", "steps",      "last_step_value", "reason",    "user_attrs",
    "origin",
};

struct bd_csv_export {
    bd_engine *e;
    study_rt *st;       /* lives until bd_engine_close (its spec may be unloaded meanwhile) */
    char **params;      /* the space's parameter names, in order (copies) */
    size_t n_params;
    char **metrics;     /* the metrics of "values" (copies), none in a plain study */
    size_t n_metrics;
    int constrained;    /* a feasible column */
    int state;          /* filter; -1 any */
    int64_t instance;   /* filter; -1 any */
    int64_t after;      /* last trial id written */
    int header_done;
    int done;
    bd_csv_buf buf;
    bd_err *err;        /* of the current bd_engine_csv_next call */
};

int bd_engine_csv_open(bd_engine *e, const bd_caller *who, int64_t study_id, const char *state, int64_t instance,
                       bd_csv_export **out, bd_err *err)
{
    int st_filter = -1;
    study_rt *st;
    int rc;
    if (state && (st_filter = bd_trial_state_parse(state)) < 0)
        return bd_err_set(err, BD_EINVAL, "state", "must be one of running, completed, stopped, failed, expired");
    if ((rc = bd_engine_lock_study(e, who, study_id, &st, err)))
        return rc;
    size_t n_instances = st->spec.def.n_instances;
    if (instance >= 0 && (size_t)instance >= n_instances) {
        bd_engine_unlock_study(e, st);
        return bd_err_set(err, BD_EINVAL, "instance", "must be an instance index of the study (it has %zu)",
                          n_instances);
    }
    bd_csv_export *x = bd_xcalloc(1, sizeof *x);
    size_t declared = bd_space_size(st->spec.space);
    x->n_params = declared + bd_space_size(st->spec.asked);
    x->params = bd_xcalloc(x->n_params ? x->n_params : 1, sizeof *x->params);
    for (size_t i = 0; i < x->n_params; i++)
        x->params[i] = bd_xstrdup(i < declared ? bd_space_param(st->spec.space, i)->name
                                               : bd_space_param(st->spec.asked, i - declared)->name);
    if (bd_study_spec_has_values(&st->spec)) {
        x->n_metrics = st->spec.n_metrics;
        x->metrics = bd_xcalloc(x->n_metrics, sizeof *x->metrics);
        for (size_t i = 0; i < x->n_metrics; i++)
            x->metrics[i] = bd_xstrdup(st->spec.metrics[i]);
    }
    x->constrained = st->spec.def.n_constraints > 0;
    bd_engine_unlock_study(e, st);
    x->e = e;
    x->st = st;
    x->state = st_filter;
    x->instance = instance;
    *out = x;
    return 0;
}

void bd_engine_csv_close(bd_csv_export *x)
{
    if (!x)
        return;
    bd_csv_buf_free(&x->buf);
    for (size_t i = 0; i < x->n_params; i++)
        free(x->params[i]);
    free(x->params);
    for (size_t i = 0; i < x->n_metrics; i++)
        free(x->metrics[i]);
    free(x->metrics);
    free(x);
}

static void header(bd_csv_export *x)
{
    size_t n = sizeof fixed_columns / sizeof fixed_columns[0];
    for (size_t i = 0; i < n; i++) {
        bd_csv_sep(&x->buf, i == 0);
        bd_csv_text(&x->buf, fixed_columns[i], 0);
    }
    for (size_t i = 0; i < x->n_metrics; i++) { /* "value." keeps a hostile name from starting the cell */
        char *col = bd_xmalloc(strlen(x->metrics[i]) + 7);
        memcpy(col, "value.", 6);
        strcpy(col + 6, x->metrics[i]);
        bd_csv_sep(&x->buf, 0);
        bd_csv_text(&x->buf, col, 1);
        free(col);
    }
    if (x->constrained) {
        bd_csv_sep(&x->buf, 0);
        bd_csv_text(&x->buf, "feasible", 0);
    }
    for (size_t i = 0; i < x->n_params; i++) {
        const char *name = x->params[i];
        bd_csv_sep(&x->buf, 0);
        /* "params_" keeps a hostile name from starting the cell; quoted as needed */
        char *col = bd_xmalloc(strlen(name) + 8);
        memcpy(col, "params_", 7);
        strcpy(col + 7, name);
        bd_csv_text(&x->buf, col, 1);
        free(col);
    }
    bd_csv_eol(&x->buf);
}

#define PAGE_FULL 1 /* add_row's "stop here": not an error */

static void integer(bd_csv_buf *b, int64_t v)
{
    bd_csv_number(b, (double)v);
}

static int add_row(const bd_trial_row *row, void *arg)
{
    bd_csv_export *x = arg;
    bd_csv_buf *b = &x->buf;
    integer(b, row->id);
    bd_csv_sep(b, 0);
    bd_csv_text(b, bd_trial_state_name(row->state), 0);
    bd_csv_sep(b, 0);
    bd_csv_number(b, row->budget);
    bd_csv_sep(b, 0);
    if (row->has_value)
        bd_csv_number(b, row->value);
    bd_csv_sep(b, 0);
    bd_csv_text(b, row->timeout ? "true" : "false", 0);
    bd_csv_sep(b, 0);
    if (row->has_instance)
        integer(b, row->instance_index);
    bd_csv_sep(b, 0);
    bd_csv_text(b, row->instance_name, 1);
    bd_csv_sep(b, 0);
    bd_csv_text(b, row->worker, 1);
    bd_csv_sep(b, 0);
    bd_csv_number(b, row->created_at);
    bd_csv_sep(b, 0);
    if (row->state != BD_TRIAL_RUNNING)
        bd_csv_number(b, row->finished_at);
    bd_csv_sep(b, 0);
    integer(b, row->steps);
    bd_csv_sep(b, 0);
    bd_csv_number(b, row->last_step_value);
    bd_csv_sep(b, 0);
    bd_csv_text(b, row->reason, 1);
    bd_csv_sep(b, 0);
    bd_csv_text(b, row->user_attrs, 1); /* stored compact: the JSON text as is, guarded as user text */
    bd_csv_sep(b, 0);
    bd_csv_text(b, bd_trial_origin_name(row->origin), 0);
    if (x->n_metrics) {
        json_t *values = row->values ? json_loads(row->values, 0, NULL) : NULL;
        for (size_t i = 0; i < x->n_metrics; i++) {
            bd_csv_sep(b, 0);
            bd_csv_json(b, json_object_get(values, x->metrics[i]));
        }
        json_decref(values);
    }
    if (x->constrained) {
        bd_csv_sep(b, 0);
        if (row->constrained)
            bd_csv_text(b, row->feasible ? "true" : "false", 0);
    }
    json_t *config = row->config ? json_loads(row->config, 0, NULL) : NULL;
    for (size_t i = 0; i < x->n_params; i++) {
        bd_csv_sep(b, 0);
        /* an inactive conditional parameter is absent from the config: empty cell */
        bd_csv_json(b, json_object_get(config, x->params[i]));
    }
    json_decref(config);
    bd_csv_eol(b);
    x->after = row->id;
    return b->len > BD_CSV_PAGE_BYTES ? PAGE_FULL : 0; /* a config may be large: bound the page's text */
}

int bd_engine_csv_next(bd_csv_export *x, const char **text, size_t *len, bd_err *err)
{
#ifdef BD_TEST_SCHEDULERS
    /* The test daemon only: a slow storage read, so a test can show that the
     * export's reads stall no other request (tests/integration/test_csv_export.py). */
    const char *delay = getenv("BANDITD_TEST_CSV_PAGE_MS");
    if (delay && x->header_done && !x->done) {
        long ms = strtol(delay, NULL, 10);
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
#endif
    bd_csv_buf_reset(&x->buf);
    x->err = err;
    if (!x->header_done) {
        header(x);
        x->header_done = 1;
    } else if (!x->done) {
        if (atomic_load(&x->st->deleted))
            return bd_err_set(err, BD_ENOTFOUND, NULL, "study %lld was deleted during the export",
                              (long long)x->st->id);
        int64_t before = x->after;
        int rc = bd_store_trial_each_with_steps(bd_engine_store(x->e), x->st->id, x->state, x->instance, x->after,
                                                BD_CSV_PAGE, add_row, x, err);
        if (rc < 0)
            return rc;
        x->done = x->after == before; /* a page without a row: nothing is left */
    }
    if (x->buf.len == 0)
        return 0;
    *text = x->buf.data;
    *len = x->buf.len;
    return 1;
}
