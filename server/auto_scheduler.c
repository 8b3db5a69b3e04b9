/* auto_scheduler.c: the scheduler of a study that names none
 * (auto_scheduler.h). */
#include "auto_scheduler.h"

#include <stdio.h>
#include <string.h>

static int has_children(const bd_space *s, size_t i)
{
    for (size_t j = i + 1; j < bd_space_size(s); j++) {
        const bd_param *q = bd_space_param(s, j);
        for (size_t c = 0; c < q->n_conds; c++)
            if (q->conds[c].parent == i)
                return 1;
    }
    return 0;
}

/* The one top-level categorical with conditional children (rising_bandits'
 * default arm parameter), or NULL when none or several. */
static const char *arm_parameter(const bd_space *s)
{
    const char *found = NULL;
    for (size_t i = 0; i < bd_space_size(s); i++) {
        const bd_param *p = bd_space_param(s, i);
        if (p->type == BD_PARAM_CATEGORICAL && p->n_conds == 0 && has_children(s, i)) {
            if (found)
                return NULL;
            found = p->name;
        }
    }
    return found;
}

static json_t *chosen(const char *name, json_t *options, const char *why)
{
    return json_pack("{s:s, s:o, s:s, s:s}", "name", name, "options", options, "chosen_by", "auto", "why", why);
}

/* Above this many trials (limits.trials) a study with several objectives
 * gets nsga2: tpe's proposal costs O(trials) (its split and estimators),
 * NSGA-II's O(parameters), and NSGA-II's gap to MOTPE closes as trials
 * grow (test_auto_scheduler's comment has the measurements). */
#define MO_NSGA2_TRIALS 10000

/* Several objectives or constraints (auto_scheduler.h, rule 0). */
static json_t *multi_objective_choice(const json_t *norm, const json_t *res, int several)
{
    char why[768], tail[256] = "";
    long long trials = (long long)json_integer_value(json_object_get(json_object_get(norm, "limits"), "trials"));
    if (res)
        snprintf(tail, sizeof tail, "; every trial at the full budget (%.60s %g): no multi-fidelity scheduler here "
                 "takes several objectives or constraints",
                 json_string_value(json_object_get(res, "name")), json_number_value(json_object_get(res, "max")));
    if (several && trials > MO_NSGA2_TRIALS) {
        snprintf(why, sizeof why,
                 "several objectives and limits.trials %lld: nsga2 (NSGA-II, Optuna's default for several "
                 "objectives), whose proposals cost the same at any study size while tpe's grow with the trials, "
                 "and which nearly caught up with tpe by 1,000 trials%s",
                 trials, tail);
        return chosen("nsga2", json_object(), why);
    }
    if (several)
        snprintf(why, sizeof why,
                 "several objectives: tpe (MOTPE as Optuna 3.1: non-dominated ranks and hypervolume contributions), "
                 "ahead of nsga2 at 100, 300 and 1,000 trials with 1 and 8 workers; nsga2 past %d trials "
                 "(limits.trials)%s",
                 MO_NSGA2_TRIALS, tail);
    else
        snprintf(why, sizeof why,
                 "constraints: tpe with Optuna 3.1's constraints_func rules (the good group is feasible trials; "
                 "infeasible ones, ranked by violation, only while too few are feasible)%s",
                 tail);
    return chosen("tpe", json_object(), why);
}

json_t *bd_auto_scheduler(const json_t *norm, int has_resource, const bd_space *space)
{
    char why[512];
    const json_t *res = has_resource ? json_object_get(norm, "resource") : NULL;
    const json_t *obj = json_object_get(norm, "objective");
    const json_t *instances = json_object_get(norm, "instances");
    int several = json_array_size(json_object_get(norm, "objectives")) > 1;
    if (several || json_array_size(json_object_get(norm, "constraints")) > 0)
        return multi_objective_choice(norm, res, several);
    /* caps_race needs a cap (the resource) and its configs up front; without
     * them the study is tuned as one without instances, whose trials name none */
    if (json_array_size(instances) > 0 && res && bd_space_size(space) > 0)
        return chosen("caps_race", json_object(),
                      "the study declares instances: caps_race races configs on them, the resource as the cap");
    if (res) {
        snprintf(why, sizeof why,
                 "the study has a resource (%s, %g to %g): asha with random proposals, each budget's cut keeping "
                 "as many configs as the study's own configs trained in full show the ones that end best need "
                 "there (fidelity winners), and training in full where early budgets do not rank them",
                 json_string_value(json_object_get(res, "name")), json_number_value(json_object_get(res, "min")),
                 json_number_value(json_object_get(res, "max")));
        return chosen("asha",
                      json_pack("{s:s, s:s, s:i, s:s}", "fidelity", "winners", "sampler", "random", "eta", 3, "type",
                                "promotion"),
                      why);
    }
    const char *arm = arm_parameter(space);
    const json_t *limits = json_object_get(norm, "limits");
    int maximize = obj && strcmp(json_string_value(json_object_get(obj, "goal")), "maximize") == 0; /* obj: one objective */
    int horizon = json_integer_value(json_object_get(limits, "trials")) > 0;
    int scale = maximize || json_object_get(obj, "bounds");
    if (arm && horizon && scale) {
        snprintf(why, sizeof why,
                 "the choices of \"%.200s\" carry their own conditional parameters: rising_bandits runs an optimizer "
                 "per choice and eliminates the choices that cannot end best within limits.trials",
                 arm);
        return chosen("rising_bandits", json_object(), why);
    }
    if (arm)
        snprintf(why, sizeof why,
                 "no resource: tpe (the choices of \"%.200s\" carry conditional parameters, but rising_bandits needs "
                 "limits.trials and, to minimize, objective.bounds)",
                 arm);
    else if (bd_space_size(space) == 0)
        snprintf(why, sizeof why, "no resource and no declared parameters: tpe, which grows the space as trials ask");
    else
        snprintf(why, sizeof why, "no resource: tpe (Optuna's TPE defaults)");
    return chosen("tpe", json_object(), why);
}
