/* study_def.c: validation of study definitions (see study_def.h). Every
 * member is checked for type and range, unknown members are rejected so a
 * typo ("objectve") is an error rather than a silently ignored default. */
#include "study_def.h"

#include "auto_scheduler.h"

#include "json_util.h"

#include <math.h>
#include <sodium.h>
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
    if (strcmp(json_string_value(json_object_get(sch, "name")), "auto") == 0)
        json_object_set_new(spec->normalized, "scheduler",
                            bd_auto_scheduler(spec->normalized, json_object_get(body, "resource") != NULL, spec->space));
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
    d->metric = json_string_value(json_object_get(obj, "metric"));
    d->maximize = strcmp(json_string_value(json_object_get(obj, "goal")), "maximize") == 0;
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
                                        "lease_seconds", "limits",  NULL};
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
        (rc = parse_objective(body, out->normalized, err)) || (rc = parse_resource(body, out->normalized, err)) ||
        (rc = parse_seed_and_lease(body, default_lease, out->normalized, err)) ||
        (rc = parse_instances(body, out->normalized, err)) || (rc = parse_limits(body, out->normalized, err)))
        goto out;
    resolve_auto(body, out);
    if ((rc = check_empty_space(out, err)))
        goto out;
    const struct bd_sched_ops *ops = bd_study_spec_sched(out);
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
    json_decref(spec->normalized);
    memset(spec, 0, sizeof *spec);
}
