/* space.h: search spaces. Parsing and validation of the study's "parameters"
 * list, sampling from the study RNG, and the unit-hypercube encoding that
 * model-based schedulers (GP, BO) work in.
 *
 * JSON form of one parameter (the API contract, see api/openapi.yaml):
 *   {"name": "lr", "type": "float", "low": 1e-5, "high": 1, "log": true}
 *   {"name": "layers", "type": "int", "low": 1, "high": 8}
 *   {"name": "algorithm", "type": "categorical", "choices": ["svm", "rf", 3, true]}
 *   {"name": "C", "type": "float", "low": 0.01, "high": 100, "log": true,
 *    "when": {"algorithm": ["svm"]}}
 * A conditional parameter is active only when every parent named in "when"
 * is active and takes one of the listed values; parents must be declared
 * earlier in the list and be categorical or int. A config is a JSON object
 * holding exactly the active parameters.
 *
 * Invariants: names are unique, low < high (low <= high for int), log needs
 * low > 0, categorical choices are non-empty, distinct, and each a string,
 * number or boolean. */
#ifndef BD_SPACE_H
#define BD_SPACE_H

#include <jansson.h>
#include <stddef.h>

#include "common.h"
#include "rng.h"

typedef enum { BD_PARAM_FLOAT, BD_PARAM_INT, BD_PARAM_CATEGORICAL } bd_param_type;

typedef struct bd_param_cond {
    size_t parent;       /* index of the parent parameter (always < this one's index) */
    json_t *values;      /* array of parent values that activate the child (owned) */
} bd_param_cond;

typedef struct bd_param {
    char *name;          /* owned */
    bd_param_type type;
    double low, high;    /* float and int bounds, inclusive */
    int log;             /* float/int: sample and encode log-uniformly */
    json_t *choices;     /* categorical: array of choices (owned), else NULL */
    size_t n_conds;      /* number of "when" entries; 0 = always active */
    bd_param_cond *conds;/* owned array of n_conds */
} bd_param;

typedef struct bd_space bd_space;

/* Parses a JSON array of parameters. On error returns BD_EINVAL with
 * err->field like "parameters[2].low" (the prefix is "parameters").
 * *out is new (bd_space_free). An empty list is invalid. */
int bd_space_parse(const json_t *params, bd_space **out, bd_err *err) BD_MUST_CHECK;
void bd_space_free(bd_space *space); /* NULL-safe */

size_t bd_space_size(const bd_space *space);
/* Borrowed, valid while space lives. i < bd_space_size(). */
const bd_param *bd_space_param(const bd_space *space, size_t i);
/* Index of the parameter called name, or -1. */
long bd_space_find(const bd_space *space, const char *name);
/* The parameters as JSON, in the canonical form parse accepts (new reference). */
json_t *bd_space_to_json(const bd_space *space);

/* Draws a config: float uniform or log-uniform in [low, high]; int uniform
 * (or log-uniform, then rounded) over the integers in [low, high];
 * categorical uniform over choices; inactive parameters are left out.
 * Returns a new reference. */
json_t *bd_space_sample(const bd_space *space, bd_rng *rng);

/* Is parameter i active in config (all of its conditions hold)? */
int bd_space_is_active(const bd_space *space, size_t i, const json_t *config);

/* Checks a config against the space: exactly the active parameters, each in
 * range and of the right type. err->field is "config.<name>". */
int bd_space_validate_config(const bd_space *space, const json_t *config, bd_err *err) BD_MUST_CHECK;
/* config with each value in its parameter's canonical form, as the space's
 * own samples have it: an int's as a JSON integer (2, not the 2.0 that
 * validation accepts), a float's as a real, a categorical's as the choice
 * itself (1 for 1.0); other keys are copied. For a config that passed
 * bd_space_validate_config. Returns a new reference. */
json_t *bd_space_canonical_config(const bd_space *space, const json_t *config);

/* Checks one value of parameter i (type and range, or one of the choices);
 * err->field is field. */
int bd_space_check_value(const bd_space *space, size_t i, const json_t *value, const char *field,
                         bd_err *err) BD_MUST_CHECK;

/* Unit-hypercube encoding, one coordinate per parameter (bd_space_size()):
 * float/int: (x - low)/(high - low), in log space when log; categorical
 * choice k of K: (k + 0.5)/K; an inactive parameter encodes as 0.5.
 * Returns BD_EINVAL if config does not fit the space. */
int bd_space_encode(const bd_space *space, const json_t *config, double *unit) BD_MUST_CHECK;
/* Inverse of encode: clamps to [0,1], rounds ints, picks the nearest choice,
 * drops parameters that end up inactive. Returns a new reference. */
json_t *bd_space_decode(const bd_space *space, const double *unit);

/* The sub-space of the parameters active when parent `name` takes `value`
 * (Rising Bandits' per-algorithm space): every parameter whose conditions on
 * `name` accept value, transitively, without `name` itself and with those
 * conditions removed. Unconditional parameters other than `name` are kept.
 * *out is new. BD_EINVAL if name is not a categorical parameter or value is
 * not one of its choices. */
int bd_space_subspace(const bd_space *space, const char *name, const json_t *value,
                      bd_space **out, bd_err *err) BD_MUST_CHECK;

#endif
