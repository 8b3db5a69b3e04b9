/* engine_ask.c: define-by-run spaces. A running trial asks for a parameter
 * when its code first needs it (POST /v1/trials/{id}/parameters, the body a
 * parameter definition without "when"); the answer is the value. As in
 * Optuna, a study need not know its space up front, and a conditional space
 * is learned from use: which trials asked for which names is their stored
 * config.
 *
 * Rules (study_def.h has where the asked parameters are kept):
 * - A name the trial already has answers its value again (a retried request,
 *   or the scheduler proposed it up front): nothing is written. A value a
 *   user enqueued for a name the study did not know yet is taken if it fits
 *   the definition (else drawn as if absent).
 * - A name the study knows (declared or asked before) must come with the
 *   same definition; a different one is a 400 naming the differing key.
 * - A new name joins the study's "asked_parameters" (its stored definition
 *   grows, within the study's parameter limit and the user's definition
 *   quota).
 * - The value: a trial that continues an earlier one of its config (a
 *   promotion) takes that config's value; otherwise it is drawn by the
 *   study's sampler over this one parameter (proposer.h: "tpe" fits TPE's
 *   univariate estimator, Optuna's default, on the finished trials that
 *   have the parameter: completed ones at their budget, stopped ones at the
 *   number of measurements they reported; "random" and schedulers without
 *   a sampler draw uniformly). The draw's random stream is seeded from the
 *   study seed, the trial and the name, so it never depends on the order of
 *   asks.
 * - The value goes into the trial's stored config in the request's
 *   transaction; a restart reads it back, never draws it again.
 *
 * The scheduler never sees asked parameters (study.c strips them from
 * stored configs it replays), so its model of the declared space and its
 * decisions are the same whatever the trials asked. */
#include "engine.h"
#include "engine_internal.h"
#include "json_util.h"
#include "sched/proposer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Finished trials a draw reads (the study's first ones, in id order): a
 * bound on one ask's work (~10 ms at this size), as proposer.h bounds a
 * fit. */
#define ASK_HISTORY_MAX 4000
#define ASK_PAGE 1000

typedef struct ask_args {
    bd_space *one;          /* the asked parameter as a space of one (owned) */
    json_t *canonical;      /* its canonical definition (owned) */
} ask_args;

/* ------------------------------------------------------------ checking */

/* 0 when known and asked are the same parameter; else BD_EINVAL naming
 * the first key that differs. */
static int same_definition(const bd_param *known, const bd_param *asked, bd_err *err)
{
    const char *key = NULL;
    static const char *const types[] = {"float", "int", "categorical"};
    if (known->type != asked->type)
        key = "type";
    else if (known->type == BD_PARAM_CATEGORICAL)
        key = json_equal(known->choices, asked->choices) ? NULL : "choices";
    else if (known->low != asked->low)
        key = "low";
    else if (known->high != asked->high)
        key = "high";
    else if (known->log != asked->log)
        key = "log";
    if (!key)
        return 0;
    return bd_err_set(err, BD_EINVAL, key,
                      "parameter \"%s\" is already a %s parameter of this study with another %s; a name keeps "
                      "one definition (give this one another name)",
                      known->name, types[known->type], key);
}

/* The body as a space of one parameter, with fields named as the body's
 * own keys ("low", not "parameters[0].low"). */
static int parse_body(const json_t *body, ask_args *a, bd_err *err)
{
    if (!json_is_object(body))
        return bd_err_set(err, BD_EINVAL, NULL, "the body must be a parameter: {\"name\", \"type\", ...}");
    if (json_object_get(body, "when"))
        return bd_err_set(err, BD_EINVAL, "when",
                          "an asked parameter has no \"when\": the trials that ask for it are those where it is "
                          "active");
    json_t *wrap = json_pack("[O]", body);
    int rc = bd_space_parse(wrap, &a->one, err);
    json_decref(wrap);
    if (rc) {
        const char *prefix = "parameters[0]";
        if (err && strncmp(err->field, prefix, strlen(prefix)) == 0) {
            const char *rest = err->field + strlen(prefix);
            memmove(err->field, rest[0] == '.' ? rest + 1 : rest, strlen(rest) + 1 - (rest[0] == '.'));
        }
        return rc;
    }
    json_t *list = bd_space_to_json(a->one);
    a->canonical = json_incref(json_array_get(list, 0));
    json_decref(list);
    return 0;
}

/* ------------------------------------------------------------- drawing */

typedef struct history {
    study_rt *st;
    const char *name;
    bd_proposer *proposer;
    int64_t last_id;
    size_t rows;
} history;

static int add_finished(const bd_trial_row *row, void *arg)
{
    history *h = arg;
    h->last_id = row->id;
    h->rows++;
    double budget, loss;
    if (row->state == BD_TRIAL_COMPLETED) {
        budget = row->budget;
        loss = bd_study_loss(h->st, row->has_value, row->value);
    } else if (row->state == BD_TRIAL_STOPPED && row->steps > 0) {
        /* Stopped at a rung (stopping-type multi-fidelity, BOS): ranked at
         * what it reached, below the configs that went further. */
        budget = h->st->spec.def.r_max > 0 ? fmin((double)row->steps, row->budget) : (double)row->steps;
        loss = bd_study_loss(h->st, !isnan(row->last_step_value), row->last_step_value);
    } else {
        return 0;
    }
    json_t *config = json_loads(row->config, 0, NULL);
    json_t *value = json_object_get(config, h->name);
    if (value) {
        json_t *one = json_pack("{s:O}", h->name, value);
        bd_proposer_add(h->proposer, row->config_id, one, budget, loss, NAN, budget);
        json_decref(one);
    }
    json_decref(config);
    return 0;
}

/* The sampler a study's asked parameters are drawn by: its scheduler's
 * ("tpe" for tpe; the "sampler" option of those that take one), random
 * for schedulers without one. */
static const char *sampler_of(const bd_study_spec *spec)
{
    static const char *const with_sampler[] = {"random", "tpe", "successive_halving", "hyperband", "asha", NULL};
    const json_t *scheduler = json_object_get(spec->normalized, "scheduler");
    const char *name = json_string_value(json_object_get(scheduler, "name"));
    const char *option = json_string_value(json_object_get(spec->def.options, "sampler"));
    for (size_t i = 0; with_sampler[i]; i++)
        if (strcmp(name, with_sampler[i]) == 0)
            return option ? option : strcmp(name, "tpe") == 0 ? "tpe" : "random";
    return "random";
}

static uint64_t name_hash(const char *name)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *name; name++)
        h = (h ^ (unsigned char)*name) * 1099511628211ULL;
    return h;
}

/* A value for parameter one (a space of one) in trial t of st. New. */
static json_t *draw(bd_engine *e, study_rt *st, const bd_trial_row *t, const bd_space *one, bd_err *err)
{
    const bd_param *p = bd_space_param(one, 0);
    const char *sampler = sampler_of(&st->spec);
    bd_rng rng;
    bd_rng_seed(&rng, st->spec.def.seed ^ 0x61736b6564212121ULL /* "asked!!!" */ ^ name_hash(p->name),
                (uint64_t)t->id);
    json_t *config = NULL;
    if (strcmp(sampler, "random") != 0) {
        bd_study_def def = st->spec.def;
        const struct bd_sched_ops *ops = bd_study_spec_sched(&st->spec);
        history h = {.st = st, .name = p->name};
        def.space = one;
        if (bd_proposer_create(&def, sampler, ops && ops->multi_fidelity, &h.proposer, err) == 0) {
            int rc = 0;
            size_t before;
            do {
                before = h.rows;
                rc = bd_store_trial_each_with_steps(bd_engine_store(e), st->id, -1, -1, h.last_id, ASK_PAGE,
                                                    add_finished, &h, err);
            } while (!rc && h.rows - before == ASK_PAGE && h.rows < ASK_HISTORY_MAX);
            if (!rc)
                config = bd_proposer_propose(h.proposer, &rng);
            bd_proposer_free(h.proposer);
            if (rc)
                return NULL;
        }
    }
    if (!config)
        config = bd_space_sample(one, &rng);
    json_t *value = json_incref(json_object_get(config, p->name));
    json_decref(config);
    return value;
}

/* When t continues earlier trials of its config (a promotion, a retry):
 * the value of parameter one (a space of one) that the trial it resumes
 * holds, else its config's first trial, if it fits the definition; new (in
 * canonical form), or NULL. */
static json_t *continued_value(bd_engine *e, const bd_trial_row *t, const bd_space *one)
{
    const char *name = bd_space_param(one, 0)->name;
    const int64_t earlier[] = {t->resume_from, t->config_id};
    json_t *value = NULL;
    for (size_t i = 0; !value && i < sizeof earlier / sizeof earlier[0]; i++) {
        bd_trial_row row = {0};
        bd_err ignored;
        if (!earlier[i] || earlier[i] == t->id || bd_store_trial_get(bd_engine_store(e), earlier[i], &row, &ignored))
            continue;
        json_t *config = json_loads(row.config, 0, NULL), *v = json_object_get(config, name);
        if (v && bd_space_check_value(one, 0, v, "value", NULL) == 0) {
            json_t *canonical = bd_space_canonical_config(one, config);
            value = json_incref(json_object_get(canonical, name));
            json_decref(canonical);
        }
        json_decref(config);
        bd_store_trial_row_clear(&row);
    }
    return value;
}

/* ------------------------------------------------------------ the route */

/* Adds the asked parameter to st's space and plans the grown definition. */
static int grow_space(bd_engine *e, study_rt *st, ask_args *a, bd_write_plan *plan, bd_err *err)
{
    json_t *list = bd_space_to_json(st->spec.asked);
    json_array_append(list, a->canonical);
    char *added = json_dumps(a->canonical, JSON_COMPACT);
    size_t grown = strlen(added) + 1;
    free(added);
    int rc = bd_engine_check_quota(e, st->user_id, 0, grown, err);
    if (!rc)
        rc = bd_study_spec_set_asked(&st->spec, list, err);
    json_decref(list);
    if (rc)
        return rc;
    st->meta_dirty = 1; /* the definition differs from storage until this request commits */
    plan->definition = bd_write_plan_own(plan, json_dumps(st->spec.normalized, JSON_COMPACT));
    plan->study_id = st->id;
    return 0;
}

/* The trial's stored value of the asked parameter in canonical form (2,
 * not the 2.0 a config enqueued before the study knew the name holds as
 * sent: bd_space_canonical_config), or NULL when it has none. When the form
 * differs, the trial's config is stored with it too. New reference. */
static json_t *stored_value(const ask_args *a, bd_trial_row *t, json_t *config, bd_write_plan *plan)
{
    const char *name = bd_space_param(a->one, 0)->name;
    json_t *value = json_object_get(config, name);
    if (!value)
        return NULL;
    json_t *one = json_pack("{s:O}", name, value), *canonical = bd_space_canonical_config(a->one, one);
    value = json_incref(json_object_get(canonical, name));
    if (!json_equal(value, json_object_get(one, name))) {
        json_object_set(config, name, value);
        plan->config = bd_write_plan_own(plan, json_dumps(config, JSON_COMPACT | JSON_SORT_KEYS));
        plan->config_trial = t->id;
    }
    json_decref(one);
    json_decref(canonical);
    return value;
}

static int ask_op(bd_engine *e, study_rt *st, bd_trial_row *t, const void *args, bd_write_plan *plan,
                  json_t **answer, bd_err *err)
{
    ask_args *a = (ask_args *)args;
    const bd_param *p = bd_space_param(a->one, 0);
    long declared = bd_space_find(st->spec.space, p->name), asked = bd_space_find(st->spec.asked, p->name);
    json_t *config = NULL, *value = NULL;
    int rc;
    if ((rc = bd_engine_require_running(t, bd_now(), err)))
        return rc;
    if (declared >= 0)
        rc = same_definition(bd_space_param(st->spec.space, (size_t)declared), p, err);
    else if (asked >= 0)
        rc = same_definition(bd_space_param(st->spec.asked, (size_t)asked), p, err);
    if (rc)
        return rc;
    config = json_loads(t->config, 0, NULL);
    if (!json_is_object(config)) {
        rc = bd_err_set(err, BD_EINTERNAL, NULL, "trial %lld: stored config is not a JSON object", (long long)t->id);
        goto out;
    }
    value = stored_value(a, t, config, plan);
    if (value && declared >= 0)
        goto answer; /* proposed up front by the scheduler */
    if (value && bd_space_check_value(a->one, 0, value, "value", NULL) == 0) {
        /* asked before, or enqueued (perhaps before the study knew the name): taken as it fits */
        if (asked < 0)
            rc = grow_space(e, st, a, plan, err);
        goto out_or_answer;
    }
    if (value) { /* enqueued, outside this definition: drawn as if absent */
        json_decref(value);
        value = NULL;
    }
    if (declared >= 0) {
        rc = bd_err_set(err, BD_EINVAL, "name",
                        "\"%s\" is a declared parameter of this study, inactive in this trial's config (its "
                        "\"when\" does not hold)",
                        p->name);
        goto out;
    }
    if (asked < 0 && (rc = grow_space(e, st, a, plan, err)))
        goto out;
    value = continued_value(e, t, a->one);
    if (!value && !(value = draw(e, st, t, a->one, err))) {
        rc = BD_ESTORAGE;
        goto out;
    }
    json_object_set(config, p->name, value);
    plan->config = bd_write_plan_own(plan, json_dumps(config, JSON_COMPACT | JSON_SORT_KEYS));
    plan->config_trial = t->id;
out_or_answer:
    if (rc)
        goto out;
answer:
    *answer = json_pack("{s:s, s:O}", "name", p->name, "value", value);
out:
    json_decref(value);
    json_decref(config);
    return rc;
}

int bd_engine_ask_parameter(bd_engine *e, const bd_request *req, int64_t trial_id, const json_t *body, json_t **out,
                            bd_err *err)
{
    ask_args a = {0};
    int rc = parse_body(body, &a, err);
    if (!rc)
        rc = bd_engine_with_trial(e, req, trial_id, BD_OP_WAIT, ask_op, &a, out, err);
    bd_space_free(a.one);
    json_decref(a.canonical);
    return rc;
}
