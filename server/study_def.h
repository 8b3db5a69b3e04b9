/* study_def.h: parsing and validating a study definition (the body of
 * POST /v1/studies) into the normalized JSON stored with the study and the
 * bd_study_def schedulers read. The same function rebuilds a stored study on
 * start, so what was accepted once is read back identically. */
#ifndef BD_STUDY_DEF_H
#define BD_STUDY_DEF_H

#include <jansson.h>

#include "sched/sched.h"

/* At most this many parameters per study: a wider space made one suggest
 * of 100 trials answer 27 MB and stall the daemon. */
#define BD_STUDY_MAX_PARAMETERS 1000

/* Define-by-run: a study may declare some parameters, or none ("parameters"
 * absent or []), and its trials ask for more as their code first needs them
 * (POST /v1/trials/{id}/parameters, engine_ask.c). Those land in the stored
 * definition's "asked_parameters", in order of first appearance: the
 * declared space is the scheduler's (it proposes those jointly, up front);
 * the asked ones are sampled one at a time when asked. A name is in one of
 * the two lists, never both, and both together hold at most
 * BD_STUDY_MAX_PARAMETERS. */
/* Several objectives and constraints (issue 41, docs/USAGE.md). A study
 * gives either "objective": {...} or "objectives": [2 to
 * BD_STUDY_MAX_OBJECTIVES entries {"metric", "goal", "reference"?}] (a
 * one-entry list is stored as "objective"), and optionally "constraints":
 * [up to BD_STUDY_MAX_CONSTRAINTS entries {"metric", "min"?, "max"?}] (an
 * empty list is stored as none). A trial is feasible when min <= v <= max
 * for every constraint. Its reports carry "values": {metric: number} for
 * the objectives' and constraints' metrics (the study's "metrics", below). */
#define BD_STUDY_MAX_OBJECTIVES 8
#define BD_STUDY_MAX_CONSTRAINTS 16
/* A metric of "objectives" or "constraints" is at most this long, so that
 * "values.<metric>" fits an error's field. */
#define BD_STUDY_MAX_METRIC 100

typedef struct bd_constraint {
    const char *metric; /* borrowed from the spec's normalized */
    double min, max;    /* -INFINITY / +INFINITY when not given */
} bd_constraint;

typedef struct bd_study_spec {
    json_t *normalized; /* owned: every default made explicit; def's strings borrow from it */
    bd_space *space;    /* owned: the declared parameters */
    bd_space *asked;    /* owned: the asked parameters (possibly none) */
    bd_study_def def;   /* def.space == space; def.id is 0 until the caller sets it */
    bd_objective *objectives;   /* owned: def.n_objectives entries; def.objectives points here */
    double *references;         /* owned: per objective, the reference value as declared
                                   (not negated); NAN where the study gives none */
    bd_constraint *constraints; /* owned: def.n_constraints entries (NULL for none) */
    const char **metrics;       /* owned array (strings borrowed): what "values" holds: the
                                   objectives' metrics, then the constraints' that are not one */
    size_t n_metrics;
} bd_study_spec;

/* Validates body (err->field names the faulty member, e.g. "resource.max").
 * A missing seed is drawn at random and a missing lease_seconds is
 * default_lease, both then stored in normalized. The scheduler's options are
 * checked by the caller through the scheduler's create(). */
int bd_study_spec_parse(const json_t *body, double default_lease, bd_study_spec *out, bd_err *err) BD_MUST_CHECK;
void bd_study_spec_clear(bd_study_spec *spec); /* NULL-safe, idempotent */
/* Replaces spec's asked parameters by list (a JSON array of parameter
 * definitions without "when", borrowed), in spec->asked and in
 * spec->normalized's "asked_parameters". BD_EINVAL (field
 * "asked_parameters...") if the list is not a space, repeats a declared
 * name, or passes BD_STUDY_MAX_PARAMETERS with the declared ones; spec is
 * then unchanged. */
int bd_study_spec_set_asked(bd_study_spec *spec, const json_t *list, bd_err *err) BD_MUST_CHECK;
/* 1 when the study's configs may hold more than its declared parameters:
 * it declares none, or trials have asked for some. */
int bd_study_spec_grows(const bd_study_spec *spec);
/* Checks a config a user gives (enqueued or warm start): the declared
 * parameters as bd_space_validate_config does; an asked parameter's value
 * against its definition; a name the study does not know yet only when the
 * study grows its space, as a scalar that a trial's ask takes if it fits
 * (err->field "config.<name>"). */
int bd_study_spec_check_config(const bd_study_spec *spec, const json_t *config, bd_err *err) BD_MUST_CHECK;
/* 1 when trials report "values" (the study has several objectives or
 * constraints): they are then stored, shown and exported per metric. */
int bd_study_spec_has_values(const bd_study_spec *spec);
/* Checks what a complete (measurement 0) or a measurement (1) reports
 * against the study: value is the body's "value" (NULL when absent), values
 * its "values" (NULL when absent). Every objective's metric is required, and
 * for a complete every constraint's; an unknown name, a missing one or a
 * non-finite number is BD_EINVAL with field "values.<metric>". In a
 * one-objective study a numeric "value" stands for its objective's entry
 * (both given and different: "values.<metric>"); in a study with several,
 * "value" may only be null (diverged, then without "values"). On success
 * *out is a new object of every reported metric in the study's order (NULL
 * when the study has no values to report: a one-objective study without
 * constraints, or a diverged run), and *first the first objective's value
 * as reported (NAN: diverged; untouched when nothing was given: the caller
 * keeps its own default, e.g. a timeout's cap). */
int bd_study_spec_parse_values(const bd_study_spec *spec, const json_t *value, const json_t *values, int measurement,
                               json_t **out, double *first, bd_err *err) BD_MUST_CHECK;
/* What schedulers see of a report (sched.h): losses (room for
 * def.n_objectives; each negated if maximized, +INFINITY when diverged or
 * absent) and the constraint violation (0 when every constraint holds or
 * the study has none; the sum of the distances outside the bounds; +INFINITY
 * for a diverged run). values: the stored object of bd_study_spec_parse_values
 * (NULL: none); first: the first objective's value as reported (NAN:
 * diverged), used when values lacks it. A constraint metric a measurement
 * did not report counts as holding. */
void bd_study_spec_losses(const bd_study_spec *spec, const json_t *values, double first, double *losses,
                          double *violation);
/* The scheduler the spec names (static), or NULL if this build lacks it. */
const struct bd_sched_ops *bd_study_spec_sched(const bd_study_spec *spec);

#endif
