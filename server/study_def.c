/* study_def.c: validation of study definitions (see study_def.h). Every
 * member is checked for type and range, unknown members are rejected so a
 * typo ("objectve") is an error rather than a silently ignored default. */
#include "study_def.h"

#include "auto_scheduler.h"

#include "json_util.h"

#include <math.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NAME 200
/* Documented limits (api/openapi.yaml): an instance is a name or a path. */
#define MAX_INSTANCES 100000
#define MAX_INSTANCE_BYTES 4096
#define MAX_LIMIT_TRIALS 1000000000LL
/* Seeds stay within JSON's exactly representable integers. */
#define MAX_SEED ((json_int_t)1 << 53)

static int get_string(const json_t *obj, const char *key, const char *field, const char *dflt, const char **out,
                      bd_err *err)
{
    const json_t *v = json_object_get(obj, key);
    if (!v) {
        if (!dflt)
            return bd_err_set(err, BD_EINVAL, field, "is required");
        *out = dflt;
        return 0;
    }
    if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > MAX_NAME)
        return bd_err_set(err, BD_EINVAL, field, "must be a non-empty string of at most %d characters", MAX_NAME);
    *out = json_string_value(v);
    return 0;
}

static int get_number(const json_t *obj, const char *key, const char *field, double dflt, double *out, bd_err *err)
{
    const json_t *v = json_object_get(obj, key);
    if (!v) {
        *out = dflt;
        return 0;
    }
    if (!json_is_number(v) || !isfinite(json_number_value(v)))
        return bd_err_set(err, BD_EINVAL, field, "must be a finite number");
    *out = json_number_value(v);
    return 0;
}

/* "bounds": [low, high], the range the objective's values lie in (Rising
 * Bandits maps rewards into [0, 1] with it). Optional. */
static int parse_bounds(const json_t *obj, json_t *objective, bd_err *err)
{
    const json_t *b = json_object_get(obj, "bounds");
    if (!b)
        return 0;
    const json_t *lo = json_array_get(b, 0), *hi = json_array_get(b, 1);
    if (!json_is_array(b) || json_array_size(b) != 2 || !json_is_number(lo) || !json_is_number(hi) ||
        !isfinite(json_number_value(lo)) || !isfinite(json_number_value(hi)))
        return bd_err_set(err, BD_EINVAL, "objective.bounds", "must be [low, high], two finite numbers");
    if (!(json_number_value(lo) < json_number_value(hi)))
        return bd_err_set(err, BD_EINVAL, "objective.bounds", "low must be less than high");
    json_object_set_new(objective, "bounds", json_pack("[f, f]", json_number_value(lo), json_number_value(hi)));
    return 0;
}

/* The goal is required: a silent "minimize" default turns an accuracy into
 * a loss and the study optimizes the wrong way without a word. */
static int parse_objective(const json_t *body, json_t *norm, bd_err *err)
{
    static const char *const known[] = {"metric", "goal", "bounds", NULL};
    const json_t *obj = json_object_get(body, "objective");
    const char *metric = NULL, *goal = NULL;
    int rc;
    if (!obj)
        return bd_err_set(err, BD_EINVAL, "objective.goal",
                          "is required: {\"objective\": {\"metric\": \"val_loss\", \"goal\": \"minimize\"}}");
    if (!json_is_object(obj))
        return bd_err_set(err, BD_EINVAL, "objective", "must be an object");
    if ((rc = bd_json_reject_unknown(obj, "objective", known, err)) ||
        (rc = get_string(obj, "metric", "objective.metric", "loss", &metric, err)))
        return rc;
    if (!json_object_get(obj, "goal"))
        return bd_err_set(err, BD_EINVAL, "objective.goal", "is required: \"minimize\" or \"maximize\"");
    if ((rc = get_string(obj, "goal", "objective.goal", NULL, &goal, err)))
        return rc;
    if (strcmp(goal, "minimize") != 0 && strcmp(goal, "maximize") != 0)
        return bd_err_set(err, BD_EINVAL, "objective.goal", "must be \"minimize\" or \"maximize\"");
    json_t *objective = json_pack("{s:s, s:s}", "metric", metric, "goal", goal);
    if ((rc = parse_bounds(obj, objective, err))) {
        json_decref(objective);
        return rc;
    }
    json_object_set_new(norm, "objective", objective);
    return 0;
}

/* A metric name of "objectives" or "constraints": required, a non-empty
 * string of at most BD_STUDY_MAX_METRIC characters. */
static int get_metric(const json_t *obj, const char *field, const char **out, bd_err *err)
{
    const json_t *v = json_object_get(obj, "metric");
    if (!v)
        return bd_err_set(err, BD_EINVAL, field, "is required: the name the trials report its value under");
    if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > BD_STUDY_MAX_METRIC ||
        strlen(json_string_value(v)) != json_string_length(v))
        return bd_err_set(err, BD_EINVAL, field, "must be a non-empty string of at most %d characters",
                          BD_STUDY_MAX_METRIC);
    *out = json_string_value(v);
    return 0;
}

/* "objectives": 2 to BD_STUDY_MAX_OBJECTIVES entries {"metric", "goal",
 * "reference"?} with distinct metrics; one entry is stored as "objective"
 * (its reference dropped: a single objective has no hypervolume). Either
 * "objective" or "objectives", never both. */
static int parse_objectives(const json_t *body, json_t *norm, bd_err *err)
{
    static const char *const known[] = {"metric", "goal", "reference", NULL};
    const json_t *list = json_object_get(body, "objectives");
    char field[64];
    int rc = 0;
    if (!list)
        return parse_objective(body, norm, err);
    if (json_object_get(body, "objective"))
        return bd_err_set(err, BD_EINVAL, "objectives",
                          "give either \"objective\" (one) or \"objectives\" (several), not both");
    if (!json_is_array(list) || json_array_size(list) < 1 || json_array_size(list) > BD_STUDY_MAX_OBJECTIVES)
        return bd_err_set(err, BD_EINVAL, "objectives",
                          "must be a list of 1 to %d objectives {\"metric\", \"goal\", \"reference\"}",
                          BD_STUDY_MAX_OBJECTIVES);
    json_t *out = json_array();
    for (size_t i = 0; !rc && i < json_array_size(list); i++) {
        const json_t *o = json_array_get(list, i);
        const char *metric = NULL, *goal = NULL;
        double reference = NAN;
        snprintf(field, sizeof field, "objectives[%zu]", i);
        if (!json_is_object(o)) {
            rc = bd_err_set(err, BD_EINVAL, field, "must be an object {\"metric\", \"goal\", \"reference\"}");
            break;
        }
        if ((rc = bd_json_reject_unknown(o, field, known, err)))
            break;
        snprintf(field, sizeof field, "objectives[%zu].metric", i);
        if ((rc = get_metric(o, field, &metric, err)))
            break;
        for (size_t j = 0; j < i; j++)
            if (strcmp(json_string_value(json_object_get(json_array_get(out, j), "metric")), metric) == 0)
                rc = bd_err_set(err, BD_EINVAL, field, "repeats objectives[%zu]'s metric \"%s\"", j, metric);
        if (rc)
            break;
        snprintf(field, sizeof field, "objectives[%zu].goal", i);
        if (!json_object_get(o, "goal")) {
            rc = bd_err_set(err, BD_EINVAL, field, "is required: \"minimize\" or \"maximize\"");
            break;
        }
        if ((rc = get_string(o, "goal", field, NULL, &goal, err)))
            break;
        if (strcmp(goal, "minimize") != 0 && strcmp(goal, "maximize") != 0) {
            rc = bd_err_set(err, BD_EINVAL, field, "must be \"minimize\" or \"maximize\"");
            break;
        }
        snprintf(field, sizeof field, "objectives[%zu].reference", i);
        if ((rc = get_number(o, "reference", field, NAN, &reference, err)))
            break;
        json_t *entry = json_pack("{s:s, s:s}", "metric", metric, "goal", goal);
        if (!isnan(reference))
            json_object_set_new(entry, "reference", json_real(reference));
        json_array_append_new(out, entry);
    }
    if (!rc && json_array_size(out) == 1) {
        json_t *only = json_array_get(out, 0);
        json_object_set_new(norm, "objective",
                            json_pack("{s:O, s:O}", "metric", json_object_get(only, "metric"), "goal",
                                      json_object_get(only, "goal")));
    } else if (!rc) {
        json_object_set(norm, "objectives", out);
    }
    json_decref(out);
    return rc;
}

/* "constraints": up to BD_STUDY_MAX_CONSTRAINTS entries {"metric", "min"?,
 * "max"?}, at least one bound each, finite, min <= max, distinct metrics
 * (an objective's metric may be one). [] is stored as none. */
static int parse_constraints(const json_t *body, json_t *norm, bd_err *err)
{
    static const char *const known[] = {"metric", "min", "max", NULL};
    const json_t *list = json_object_get(body, "constraints");
    char field[64];
    int rc = 0;
    if (!list)
        return 0;
    if (!json_is_array(list) || json_array_size(list) > BD_STUDY_MAX_CONSTRAINTS)
        return bd_err_set(err, BD_EINVAL, "constraints",
                          "must be a list of at most %d constraints {\"metric\", \"min\", \"max\"}",
                          BD_STUDY_MAX_CONSTRAINTS);
    if (json_array_size(list) == 0)
        return 0;
    json_t *out = json_array();
    for (size_t i = 0; !rc && i < json_array_size(list); i++) {
        const json_t *c = json_array_get(list, i);
        const char *metric = NULL;
        double lo = NAN, hi = NAN;
        snprintf(field, sizeof field, "constraints[%zu]", i);
        if (!json_is_object(c)) {
            rc = bd_err_set(err, BD_EINVAL, field, "must be an object {\"metric\", \"min\", \"max\"}");
            break;
        }
        if ((rc = bd_json_reject_unknown(c, field, known, err)))
            break;
        snprintf(field, sizeof field, "constraints[%zu].metric", i);
        if ((rc = get_metric(c, field, &metric, err)))
            break;
        for (size_t j = 0; j < i; j++)
            if (strcmp(json_string_value(json_object_get(json_array_get(out, j), "metric")), metric) == 0)
                rc = bd_err_set(err, BD_EINVAL, field,
                                "repeats constraints[%zu]'s metric \"%s\" (give min and max in one entry)", j, metric);
        if (rc)
            break;
        snprintf(field, sizeof field, "constraints[%zu].min", i);
        if ((rc = get_number(c, "min", field, NAN, &lo, err)))
            break;
        snprintf(field, sizeof field, "constraints[%zu].max", i);
        if ((rc = get_number(c, "max", field, NAN, &hi, err)))
            break;
        if (isnan(lo) && isnan(hi)) {
            snprintf(field, sizeof field, "constraints[%zu]", i);
            rc = bd_err_set(err, BD_EINVAL, field, "needs \"min\", \"max\" or both");
            break;
        }
        if (!isnan(lo) && !isnan(hi) && lo > hi) {
            rc = bd_err_set(err, BD_EINVAL, field, "must be at least constraints[%zu].min (%g)", i, lo);
            break;
        }
        json_t *entry = json_pack("{s:s}", "metric", metric);
        if (!isnan(lo))
            json_object_set_new(entry, "min", json_real(lo));
        if (!isnan(hi))
            json_object_set_new(entry, "max", json_real(hi));
        json_array_append_new(out, entry);
    }
    if (!rc)
        json_object_set(norm, "constraints", out);
    json_decref(out);
    return rc;
}

/* A study with several objectives needs a scheduler with
 * ops->multi_objective, one with constraints one with takes_constraints. */
static int check_scheduler_takes(const bd_study_spec *spec, const struct bd_sched_ops *ops, bd_err *err)
{
    char names[512];
    size_t len = 0;
    int several = json_object_get(spec->normalized, "objectives") != NULL;
    int constrained = json_object_get(spec->normalized, "constraints") != NULL;
    const char *field = several && !ops->multi_objective ? "objectives"
                        : constrained && !ops->takes_constraints ? "constraints"
                                                                  : NULL;
    if (!field)
        return 0;
    /* the registered schedulers that take it, from the registry itself */
    const char *all = bd_sched_names();
    names[0] = 0;
    for (const char *p = all; *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)n, p);
        const struct bd_sched_ops *o = bd_sched_find(name);
        if (o && (field[0] == 'o' ? o->multi_objective : o->takes_constraints) && (!several || o->multi_objective) &&
            len + n + 3 < sizeof names)
            len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", len ? ", " : "", name);
        p += n;
        while (*p == ',' || *p == ' ')
            p++;
    }
    return bd_err_set(err, BD_EINVAL, field, "scheduler %s does not take %s; these do: %s", ops->name,
                      field[0] == 'o' ? "several objectives" : "constraints", len ? names : "none in this build");
}

/* "instances": the problem instances of an algorithm-configuration study,
 * names or paths, distinct. Optional. */
static int parse_instances(const json_t *body, json_t *norm, bd_err *err)
{
    const json_t *list = json_object_get(body, "instances");
    char field[64];
    int rc = 0;
    if (!list)
        return 0;
    if (!json_is_array(list) || json_array_size(list) == 0 || json_array_size(list) > MAX_INSTANCES)
        return bd_err_set(err, BD_EINVAL, "instances", "must be a list of 1 to %d names or paths", MAX_INSTANCES);
    json_t *seen = json_object();
    for (size_t i = 0; !rc && i < json_array_size(list); i++) {
        const json_t *v = json_array_get(list, i);
        snprintf(field, sizeof field, "instances[%zu]", i);
        if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > MAX_INSTANCE_BYTES ||
            strlen(json_string_value(v)) != json_string_length(v))
            rc = bd_err_set(err, BD_EINVAL, field, "must be a non-empty string of at most %d bytes without NUL",
                            MAX_INSTANCE_BYTES);
        else if (json_object_get(seen, json_string_value(v)))
            rc = bd_err_set(err, BD_EINVAL, field, "repeats an earlier instance");
        else
            json_object_set_new(seen, json_string_value(v), json_true());
    }
    json_decref(seen);
    if (!rc)
        json_object_set_new(norm, "instances", json_deep_copy(list));
    return rc;
}

/* "limits": {"trials", "resource", "seconds"}, any subset; the engine
 * answers done once one is reached. */
static int parse_limits(const json_t *body, json_t *norm, bd_err *err)
{
    static const char *const known[] = {"trials", "resource", "seconds", NULL};
    const json_t *obj = json_object_get(body, "limits");
    int rc;
    if (!obj)
        return 0;
    if (!json_is_object(obj))
        return bd_err_set(err, BD_EINVAL, "limits", "must be an object: {\"trials\", \"resource\", \"seconds\"}");
    if ((rc = bd_json_reject_unknown(obj, "limits", known, err)))
        return rc;
    json_t *limits = json_object();
    const json_t *trials = json_object_get(obj, "trials");
    if (trials) {
        if (!json_is_integer(trials) || json_integer_value(trials) < 1 ||
            json_integer_value(trials) > MAX_LIMIT_TRIALS) {
            json_decref(limits);
            return bd_err_set(err, BD_EINVAL, "limits.trials", "must be an integer from 1 to %lld",
                              MAX_LIMIT_TRIALS);
        }
        json_object_set_new(limits, "trials", json_integer(json_integer_value(trials)));
    }
    static const char *const positive[] = {"resource", "seconds"};
    for (size_t i = 0; i < 2; i++) {
        const json_t *v = json_object_get(obj, positive[i]);
        if (!v)
            continue;
        if (!json_is_number(v) || !isfinite(json_number_value(v)) || !(json_number_value(v) > 0)) {
            json_decref(limits);
            return bd_err_set(err, BD_EINVAL, positive[i][0] == 'r' ? "limits.resource" : "limits.seconds",
                              "must be a finite number > 0");
        }
        json_object_set_new(limits, positive[i], json_real(json_number_value(v)));
    }
    json_object_set_new(norm, "limits", limits);
    return 0;
}

static int parse_resource(const json_t *body, json_t *norm, bd_err *err)
{
    static const char *const known[] = {"name", "min", "max", "integer", NULL};
    const json_t *obj = json_object_get(body, "resource");
    const char *name = NULL;
    double lo = 0, hi = 0;
    int integer = 0;
    json_t *empty = NULL;
    int rc;
    if (!obj)
        obj = empty = json_object();
    if (!json_is_object(obj))
        return bd_err_set(err, BD_EINVAL, "resource", "must be an object");
    if ((rc = bd_json_reject_unknown(obj, "resource", known, err)) ||
        (rc = get_string(obj, "name", "resource.name", "units", &name, err)) ||
        (rc = get_number(obj, "min", "resource.min", 1, &lo, err)) ||
        (rc = get_number(obj, "max", "resource.max", lo > 1 ? lo : 1, &hi, err)))
        goto out;
    const json_t *iv = json_object_get(obj, "integer");
    if (iv && !json_is_boolean(iv)) {
        rc = bd_err_set(err, BD_EINVAL, "resource.integer", "must be true or false");
        goto out;
    }
    integer = iv && json_is_true(iv);
    if (lo <= 0) {
        rc = bd_err_set(err, BD_EINVAL, "resource.min", "must be greater than 0");
        goto out;
    }
    if (hi < lo) {
        rc = bd_err_set(err, BD_EINVAL, "resource.max", "must be at least resource.min (%g)", lo);
        goto out;
    }
    if (integer && (lo != floor(lo) || hi != floor(hi))) {
        rc = bd_err_set(err, BD_EINVAL, lo != floor(lo) ? "resource.min" : "resource.max",
                        "must be a whole number when resource.integer is true");
        goto out;
    }
    json_object_set_new(norm, "resource",
                        json_pack("{s:s, s:f, s:f, s:b}", "name", name, "min", lo, "max", hi, "integer", integer));
out:
    json_decref(empty);
    return rc;
}

/* "scheduler": absent or {"name": "auto"} is stored as {"name": "auto"}
 * until resolve_auto (after the rest of the definition) replaces it by the
 * scheduler auto_scheduler.h chooses. "chosen_by" and "why", which that
 * choice writes, are kept as given (a stored or copied definition). */
static int parse_scheduler(const json_t *body, json_t *norm, bd_err *err)
{
    static const char *const known[] = {"name", "options", "chosen_by", "why", NULL};
    const json_t *obj = json_object_get(body, "scheduler");
    const char *name = NULL, *chosen_by = NULL, *why = NULL;
    int rc;
    if (!obj) {
        json_object_set_new(norm, "scheduler", json_pack("{s:s, s:{}}", "name", "auto", "options"));
        return 0;
    }
    if (!json_is_object(obj))
        return bd_err_set(err, BD_EINVAL, "scheduler", "must be an object");
    if ((rc = bd_json_reject_unknown(obj, "scheduler", known, err)) ||
        (rc = get_string(obj, "name", "scheduler.name", NULL, &name, err)) ||
        (rc = get_string(obj, "chosen_by", "scheduler.chosen_by", "", &chosen_by, err)))
        return rc;
    const json_t *why_v = json_object_get(obj, "why");
    if (why_v && (!json_is_string(why_v) || json_string_length(why_v) > 1000))
        return bd_err_set(err, BD_EINVAL, "scheduler.why", "must be a string of at most 1000 characters");
    why = why_v ? json_string_value(why_v) : "";
    int is_auto = strcmp(name, "auto") == 0;
    if (!is_auto && !bd_sched_find(name))
        return bd_err_set(err, BD_EINVAL, "scheduler.name", "unknown scheduler \"%s\"; known: auto, %s", name,
                          bd_sched_names());
    if (*chosen_by && (is_auto || strcmp(chosen_by, "auto") != 0))
        return bd_err_set(err, BD_EINVAL, "scheduler.chosen_by",
                          "is written by auto beside the scheduler it chose (\"auto\"); leave it out");
    const json_t *opts = json_object_get(obj, "options");
    if (opts && !json_is_object(opts))
        return bd_err_set(err, BD_EINVAL, "scheduler.options", "must be an object");
    if (is_auto && json_object_size(opts) > 0)
        return bd_err_set(err, BD_EINVAL, "scheduler.options",
                          "auto takes no options: name the scheduler whose options you set");
    json_t *options = opts ? json_deep_copy(opts) : json_object();
    json_t *sch = json_pack("{s:s, s:o}", "name", name, "options", options);
    if (*chosen_by)
        json_object_set_new(sch, "chosen_by", json_string(chosen_by));
    if (*why && !is_auto)
        json_object_set_new(sch, "why", json_string(why));
    json_object_set_new(norm, "scheduler", sch);
    return 0;
}

/* A study that named no scheduler, or "auto", gets the one its shape
 * calls for (auto_scheduler.h), written into the definition with why. */
static void resolve_auto(const json_t *body, bd_study_spec *spec)
{
    const json_t *sch = json_object_get(spec->normalized, "scheduler");
    if (strcmp(json_string_value(json_object_get(sch, "name")), "auto") != 0)
        return;
    json_t *chosen = bd_auto_scheduler(spec->normalized, json_object_get(body, "resource") != NULL, spec->space);
    const struct bd_sched_ops *ops = bd_sched_find(json_string_value(json_object_get(chosen, "name")));
    int several = json_object_get(spec->normalized, "objectives") != NULL;
    int constrained = json_object_get(spec->normalized, "constraints") != NULL;
    if (ops && ((several && !ops->multi_objective) || (constrained && !ops->takes_constraints))) {
        /* auto's rule chose one that refuses them: the first of these that takes them */
        static const char *const fallback[] = {"nsga2", "tpe", "random", NULL};
        for (size_t i = 0; fallback[i]; i++) {
            const struct bd_sched_ops *f = bd_sched_find(fallback[i]);
            if (f && (!several || f->multi_objective) && (!constrained || f->takes_constraints)) {
                char why[256];
                snprintf(why, sizeof why, "%s: %s (%s, which auto's rule chose, takes none)",
                         several ? "several objectives" : "constraints", f->name, ops->name);
                json_decref(chosen);
                chosen = json_pack("{s:s, s:{}, s:s, s:s}", "name", f->name, "options", "chosen_by", "auto", "why",
                                   why);
                break;
            }
        }
    }
    json_object_set_new(spec->normalized, "scheduler", chosen);
}

static int parse_seed_and_lease(const json_t *body, double default_lease, json_t *norm, bd_err *err)
{
    const json_t *seed = json_object_get(body, "seed");
    json_int_t s;
    double lease = 0;
    int rc;
    if (seed) {
        if (!json_is_integer(seed) || json_integer_value(seed) < 0 || json_integer_value(seed) >= MAX_SEED)
            return bd_err_set(err, BD_EINVAL, "seed", "must be an integer in [0, 2^53)");
        s = json_integer_value(seed);
    } else {
        uint64_t r;
        randombytes_buf(&r, sizeof r);
        s = (json_int_t)(r % (uint64_t)MAX_SEED);
    }
    if ((rc = get_number(body, "lease_seconds", "lease_seconds", default_lease, &lease, err)))
        return rc;
    if (lease < 0.1 || lease > 7 * 86400)
        return bd_err_set(err, BD_EINVAL, "lease_seconds", "must be between 0.1 and 604800 seconds");
    json_object_set_new(norm, "seed", json_integer(s));
    json_object_set_new(norm, "lease_seconds", json_real(lease));
    return 0;
}

/* spec's objectives, references, constraints and metrics, from normalized
 * (after fill_def's one-objective fields). */
static void fill_objectives(bd_study_spec *spec)
{
    const json_t *list = json_object_get(spec->normalized, "objectives");
    const json_t *cons = json_object_get(spec->normalized, "constraints");
    bd_study_def *d = &spec->def;
    size_t m = list ? json_array_size(list) : 1, k = json_array_size(cons);
    spec->objectives = bd_xcalloc(m, sizeof *spec->objectives);
    spec->references = bd_xmalloc(m * sizeof *spec->references);
    for (size_t i = 0; i < m; i++) {
        const json_t *o = json_array_get(list, i);
        spec->objectives[i].metric = list ? json_string_value(json_object_get(o, "metric")) : d->metric;
        spec->objectives[i].maximize =
            list ? strcmp(json_string_value(json_object_get(o, "goal")), "maximize") == 0 : d->maximize;
        const json_t *ref = json_object_get(o, "reference");
        spec->references[i] = ref ? json_number_value(ref) : NAN;
    }
    if (list) { /* the one-objective fields name the first objective */
        d->metric = spec->objectives[0].metric;
        d->maximize = spec->objectives[0].maximize;
    }
    d->n_objectives = m;
    d->objectives = spec->objectives;
    spec->constraints = k ? bd_xcalloc(k, sizeof *spec->constraints) : NULL;
    spec->metrics = bd_xcalloc(m + k, sizeof *spec->metrics);
    for (size_t i = 0; i < m; i++)
        spec->metrics[spec->n_metrics++] = spec->objectives[i].metric;
    for (size_t i = 0; i < k; i++) {
        const json_t *c = json_array_get(cons, i), *lo = json_object_get(c, "min"), *hi = json_object_get(c, "max");
        bd_constraint *b = &spec->constraints[i];
        b->metric = json_string_value(json_object_get(c, "metric"));
        b->min = lo ? json_number_value(lo) : -INFINITY;
        b->max = hi ? json_number_value(hi) : INFINITY;
        int known = 0;
        for (size_t j = 0; j < spec->n_metrics; j++)
            known = known || strcmp(spec->metrics[j], b->metric) == 0;
        if (!known)
            spec->metrics[spec->n_metrics++] = b->metric;
    }
    d->n_constraints = k;
}

/* Points def's fields into normalized (all members validated and present). */
static void fill_def(bd_study_spec *spec)
{
    const json_t *n = spec->normalized;
    const json_t *obj = json_object_get(n, "objective");
    const json_t *res = json_object_get(n, "resource");
    const json_t *sch = json_object_get(n, "scheduler");
    bd_study_def *d = &spec->def;
    d->name = json_string_value(json_object_get(n, "name"));
    d->space = spec->space;
    d->metric = json_string_value(json_object_get(obj, "metric")); /* several objectives: fill_objectives */
    d->maximize = obj && strcmp(json_string_value(json_object_get(obj, "goal")), "maximize") == 0;
    d->resource_name = json_string_value(json_object_get(res, "name"));
    d->r_min = json_number_value(json_object_get(res, "min"));
    d->r_max = json_number_value(json_object_get(res, "max"));
    d->resource_integer = json_is_true(json_object_get(res, "integer"));
    d->options = json_object_get(sch, "options");
    d->seed = (uint64_t)json_integer_value(json_object_get(n, "seed"));
    const json_t *bounds = json_object_get(obj, "bounds");
    d->has_bounds = bounds != NULL;
    d->bound_low = json_number_value(json_array_get(bounds, 0));
    d->bound_high = json_number_value(json_array_get(bounds, 1));
    d->instances = json_object_get(n, "instances");
    d->n_instances = json_array_size(d->instances);
    const json_t *limits = json_object_get(n, "limits");
    d->limit_trials = json_integer_value(json_object_get(limits, "trials"));
    d->limit_resource = json_number_value(json_object_get(limits, "resource"));
    d->limit_seconds = json_number_value(json_object_get(limits, "seconds"));
    d->lease_seconds = json_number_value(json_object_get(n, "lease_seconds"));
    fill_objectives(spec);
}

int bd_study_spec_set_asked(bd_study_spec *spec, const json_t *list, bd_err *err)
{
    bd_space *asked = NULL;
    char field[128];
    int rc = bd_space_parse(list, &asked, err);
    if (rc) { /* the space's fields say "parameters[i]...": these are the asked ones */
        if (err && strncmp(err->field, "parameters", 10) == 0) {
            char renamed[sizeof err->field + 8];
            snprintf(renamed, sizeof renamed, "asked_%s", err->field);
            snprintf(err->field, sizeof err->field, "%.*s", (int)sizeof err->field - 1, renamed);
        }
        return rc;
    }
    for (size_t i = 0; !rc && i < bd_space_size(asked); i++) {
        const bd_param *p = bd_space_param(asked, i);
        snprintf(field, sizeof field, "asked_parameters[%zu]", i);
        if (p->n_conds)
            rc = bd_err_set(err, BD_EINVAL, field, "an asked parameter has no \"when\": which trials asked for it "
                                                   "says when it is active");
        else if (bd_space_find(spec->space, p->name) >= 0)
            rc = bd_err_set(err, BD_EINVAL, field, "\"%s\" is a declared parameter", p->name);
    }
    if (!rc && bd_space_size(spec->space) + bd_space_size(asked) > BD_STUDY_MAX_PARAMETERS)
        rc = bd_err_set(err, BD_EINVAL, "asked_parameters", "at most %d parameters per study, declared and asked",
                        BD_STUDY_MAX_PARAMETERS);
    if (rc) {
        bd_space_free(asked);
        return rc;
    }
    bd_space_free(spec->asked);
    spec->asked = asked;
    if (bd_space_size(asked) > 0) /* absent until a trial asks: fixed-space definitions read as before */
        json_object_set_new(spec->normalized, "asked_parameters", bd_space_to_json(asked));
    else
        json_object_del(spec->normalized, "asked_parameters");
    return 0;
}

int bd_study_spec_grows(const bd_study_spec *spec)
{
    return bd_space_size(spec->space) == 0 || bd_space_size(spec->asked) > 0;
}

int bd_study_spec_check_config(const bd_study_spec *spec, const json_t *config, bd_err *err)
{
    const char *name;
    const json_t *value;
    char field[160];
    int grows = bd_study_spec_grows(spec), rc = 0;
    if (!json_is_object(config))
        return bd_err_set(err, BD_EINVAL, "config", "must be an object");
    json_t *declared = json_object();
    json_object_foreach((json_t *)config, name, value) {
        long asked = bd_space_find(spec->asked, name);
        snprintf(field, sizeof field, "config.%s", name);
        if (bd_space_find(spec->space, name) >= 0 || !grows)
            json_object_set(declared, name, (json_t *)value); /* an unknown name fails there */
        else if (asked >= 0)
            rc = bd_space_check_value(spec->asked, (size_t)asked, value, field, err);
        else if (!json_is_string(value) && !json_is_number(value) && !json_is_boolean(value))
            rc = bd_err_set(err, BD_EINVAL, field, "must be a number, a string or a boolean (a value the trial will "
                                                   "take when it asks for the parameter)");
        if (rc)
            break;
    }
    if (!rc)
        rc = bd_space_validate_config(spec->space, declared, err);
    json_decref(declared);
    return rc;
}

/* "asked_parameters": written by the engine as trials ask (a definition
 * copied from another study may carry them too). Optional. */
static int parse_asked(const json_t *body, bd_study_spec *out, bd_err *err)
{
    const json_t *list = json_object_get(body, "asked_parameters");
    json_t *none = list ? NULL : json_array();
    int rc = bd_study_spec_set_asked(out, list ? list : none, err);
    json_decref(none);
    return rc;
}

/* A study that declares no parameters needs a scheduler that proposes
 * through a sampler (proposer.h: an empty config, then every parameter
 * asked); the model-based ones and the configurators need their space up
 * front. */
static int check_empty_space(const bd_study_spec *spec, bd_err *err)
{
    static const char *const grows[] = {"random", "tpe", "successive_halving", "hyperband", "asha", NULL};
    if (bd_space_size(spec->space) > 0)
        return 0;
    const json_t *scheduler = json_object_get(spec->normalized, "scheduler");
    const char *name = json_string_value(json_object_get(scheduler, "name"));
    const char *sampler = json_string_value(json_object_get(json_object_get(scheduler, "options"), "sampler"));
    for (size_t i = 0; grows[i]; i++)
        if (strcmp(name, grows[i]) == 0 && !(sampler && strcmp(sampler, "gp") == 0))
            return 0;
    return bd_err_set(err, BD_EINVAL, "parameters",
                      "%s%s needs its parameters declared; a study that declares none (its trials ask for them as "
                      "they run) takes random, tpe, successive_halving, hyperband or asha",
                      name, sampler && strcmp(sampler, "gp") == 0 ? " with the gp sampler" : "");
}

int bd_study_spec_parse(const json_t *body, double default_lease, bd_study_spec *out, bd_err *err)
{
    static const char *const known[] = {"name",      "parameters", "asked_parameters", "objective",
                                        "resource",  "scheduler",  "seed",             "instances",
                                        "lease_seconds", "limits",  "objectives",       "constraints", NULL};
    const char *name = NULL;
    int rc;
    memset(out, 0, sizeof *out);
    if (!json_is_object(body))
        return bd_err_set(err, BD_EINVAL, NULL, "the study must be a JSON object");
    out->normalized = json_object();
    if ((rc = bd_json_reject_unknown(body, "", known, err)) || (rc = get_string(body, "name", "name", NULL, &name, err)))
        goto out;
    json_object_set_new(out->normalized, "name", json_string(name));
    const json_t *params = json_object_get(body, "parameters");
    json_t *none = json_array();
    rc = bd_space_parse(params ? params : none, &out->space, err);
    json_decref(none);
    if (rc)
        goto out;
    if (bd_space_size(out->space) > BD_STUDY_MAX_PARAMETERS) {
        rc = bd_err_set(err, BD_EINVAL, "parameters", "at most %d parameters per study (this one has %zu)",
                        BD_STUDY_MAX_PARAMETERS, bd_space_size(out->space));
        goto out;
    }
    json_object_set_new(out->normalized, "parameters", bd_space_to_json(out->space));
    if ((rc = parse_asked(body, out, err)) || (rc = parse_scheduler(body, out->normalized, err)) ||
        (rc = parse_objectives(body, out->normalized, err)) ||
        (rc = parse_constraints(body, out->normalized, err)) || (rc = parse_resource(body, out->normalized, err)) ||
        (rc = parse_seed_and_lease(body, default_lease, out->normalized, err)) ||
        (rc = parse_instances(body, out->normalized, err)) || (rc = parse_limits(body, out->normalized, err)))
        goto out;
    resolve_auto(body, out);
    if ((rc = check_empty_space(out, err)))
        goto out;
    const struct bd_sched_ops *ops = bd_study_spec_sched(out);
    if ((rc = check_scheduler_takes(out, ops, err)))
        goto out;
    if (ops->multi_fidelity && !json_object_get(body, "resource")) {
        rc = bd_err_set(err, BD_EINVAL, "resource",
                        "is required: %s hands out budgets, e.g. {\"name\": \"epochs\", \"min\": 1, \"max\": 81}",
                        ops->name);
        goto out;
    }
    fill_def(out);
out:
    if (rc)
        bd_study_spec_clear(out);
    return rc;
}

const struct bd_sched_ops *bd_study_spec_sched(const bd_study_spec *spec)
{
    const json_t *scheduler = json_object_get(spec->normalized, "scheduler");
    return bd_sched_find(json_string_value(json_object_get(scheduler, "name")));
}

void bd_study_spec_clear(bd_study_spec *spec)
{
    if (!spec)
        return;
    bd_space_free(spec->space);
    bd_space_free(spec->asked);
    free(spec->objectives);
    free(spec->references);
    free(spec->constraints);
    free(spec->metrics);
    json_decref(spec->normalized);
    memset(spec, 0, sizeof *spec);
}

/* ------------------------------------------------------------------ values */

int bd_study_spec_has_values(const bd_study_spec *spec)
{
    return spec->def.n_objectives > 1 || spec->def.n_constraints > 0;
}

static long metric_index(const bd_study_spec *spec, const char *name)
{
    for (size_t i = 0; i < spec->n_metrics; i++)
        if (strcmp(spec->metrics[i], name) == 0)
            return (long)i;
    return -1;
}

/* "a, b and c": the metrics a report may hold, for error messages. */
static void metric_list(const bd_study_spec *spec, char *out, size_t size)
{
    size_t len = 0;
    out[0] = 0;
    for (size_t i = 0; i < spec->n_metrics && len + 1 < size; i++)
        len += (size_t)snprintf(out + len, size - len, "%s\"%s\"", i == 0 ? "" : ", ", spec->metrics[i]);
}

int bd_study_spec_parse_values(const bd_study_spec *spec, const json_t *value, const json_t *values, int measurement,
                               json_t **out, double *first, bd_err *err)
{
    const bd_study_def *d = &spec->def;
    const char *name;
    const json_t *v;
    char field[160], known[200];
    *out = NULL;
    if (value && !json_is_null(value) && (!json_is_number(value) || !isfinite(json_number_value(value))))
        return bd_err_set(err, BD_EINVAL, "value", "must be a finite number, or null for a diverged run");
    if (d->n_objectives > 1 && value && !json_is_null(value))
        return bd_err_set(err, BD_EINVAL, "value",
                          "a study with several objectives takes \"values\": {\"%s\": ..., ...} (or \"value\": null "
                          "for a diverged run)",
                          d->objectives[0].metric);
    if (value && json_is_null(value)) {
        if (values)
            return bd_err_set(err, BD_EINVAL, "values", "a diverged run (\"value\": null) reports no values");
        *first = NAN;
        return 0;
    }
    if (!values && !bd_study_spec_has_values(spec)) { /* one objective, no constraints: as before */
        if (value)
            *first = json_number_value(value);
        return 0;
    }
    if (values && !json_is_object(values))
        return bd_err_set(err, BD_EINVAL, "values", "must be an object {\"<metric>\": number, ...}");
    metric_list(spec, known, sizeof known);
    json_object_foreach((json_t *)values, name, v) {
        snprintf(field, sizeof field, "values.%.140s", name);
        if (metric_index(spec, name) < 0)
            return bd_err_set(err, BD_EINVAL, field, "is not a metric of the study (it reports %s)", known);
        if (!json_is_number(v) || !isfinite(json_number_value(v)))
            return bd_err_set(err, BD_EINVAL, field, "must be a finite number");
    }
    const char *obj0 = d->objectives[0].metric;
    const json_t *given0 = json_object_get(values, obj0);
    if (value && given0 && json_number_value(value) != json_number_value(given0)) {
        snprintf(field, sizeof field, "values.%s", obj0);
        return bd_err_set(err, BD_EINVAL, field, "differs from \"value\" (%g): give the objective's value once",
                          json_number_value(value));
    }
    json_t *all = json_object();
    for (size_t i = 0; i < spec->n_metrics; i++) {
        const json_t *x = json_object_get(values, spec->metrics[i]);
        if (!x && i == 0 && value)
            x = value;
        int required = i < d->n_objectives || !measurement;
        if (!x && required) {
            json_decref(all);
            snprintf(field, sizeof field, "values.%s", spec->metrics[i]);
            return bd_err_set(err, BD_EINVAL, field, "is required: every %s reports %s",
                              measurement ? "measurement" : "completed trial",
                              measurement ? "each objective's value" : known);
        }
        if (x)
            json_object_set_new(all, spec->metrics[i], json_real(json_number_value(x)));
    }
    *first = json_number_value(json_object_get(all, obj0));
    if (!bd_study_spec_has_values(spec)) { /* "values" naming the single objective */
        json_decref(all);
        return 0;
    }
    *out = all;
    return 0;
}

void bd_study_spec_losses(const bd_study_spec *spec, const json_t *values, double first, double *losses,
                          double *violation)
{
    const bd_study_def *d = &spec->def;
    int diverged = isnan(first) && !values;
    for (size_t i = 0; i < d->n_objectives; i++) {
        const json_t *x = json_object_get(values, d->objectives[i].metric);
        double v = x ? json_number_value(x) : i == 0 ? first : NAN;
        losses[i] = diverged || isnan(v) ? INFINITY : d->objectives[i].maximize ? -v : v;
    }
    *violation = 0;
    if (!d->n_constraints)
        return;
    if (diverged) {
        *violation = INFINITY;
        return;
    }
    for (size_t i = 0; i < d->n_constraints; i++) {
        const bd_constraint *c = &spec->constraints[i];
        const json_t *x = json_object_get(values, c->metric);
        double v = x ? json_number_value(x) : strcmp(c->metric, d->objectives[0].metric) == 0 ? first : NAN;
        if (isnan(v))
            continue; /* not reported (a measurement): counts as holding */
        if (v < c->min)
            *violation += c->min - v;
        else if (v > c->max)
            *violation += v - c->max;
    }
}
