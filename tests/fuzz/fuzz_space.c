/* fuzz_space: the search-space parser (server/space.c) and what the
 * schedulers do with a space: sample, validate, encode to the unit cube,
 * decode, sub-spaces.
 *
 * Input: JSON, either the "parameters" array itself or an object
 * {"parameters": [...], "config": {...}} whose config is validated too.
 * Oracles: the canonical form parses back to itself; every sampled or
 * decoded config is valid; a valid config encodes into [0, 1] and decodes
 * to a valid config; the sub-space of a categorical's choice exists and its
 * samples are valid in it. */
#include <math.h>
#include <stdint.h>

#include "fuzz_common.h"
#include "server/space.h"

#define SAMPLES 4

static void check_config(const bd_space *s, const json_t *config, const char *what)
{
    bd_err err;
    char *text;

    if (bd_space_validate_config(s, config, &err) == 0)
        return;
    text = json_dumps(config, JSON_COMPACT);
    FUZZ_CHECK(0, "%s config %s is invalid: %s: %s", what, text ? text : "?", err.field, err.message);
}

/* encode(config) lies in the unit cube and decodes to a valid config. */
static void check_encoding(const bd_space *s, const json_t *config)
{
    size_t n = bd_space_size(s);
    double *unit = calloc(n ? n : 1, sizeof *unit);
    json_t *back;

    FUZZ_CHECK(unit != NULL, "out of memory");
    FUZZ_CHECK(bd_space_encode(s, config, unit) == 0, "a valid config does not encode");
    for (size_t i = 0; i < n; i++)
        FUZZ_CHECK(unit[i] >= 0 && unit[i] <= 1, "coordinate %zu is %g", i, unit[i]);
    back = bd_space_decode(s, unit);
    check_config(s, back, "decoded");
    json_decref(back);
    free(unit);
}

static void exercise(const bd_space *s, const json_t *config, uint64_t seed, int depth)
{
    bd_rng rng;
    json_t *canon = bd_space_to_json(s), *again_json;
    bd_space *again = NULL;
    bd_err err;

    fuzz_check_serialization(canon);
    if (bd_space_size(s) > 0) { /* a sub-space may be empty; parse rejects that */
        FUZZ_CHECK(bd_space_parse(canon, &again, &err) == 0, "canonical form rejected: %s: %s", err.field, err.message);
        again_json = bd_space_to_json(again);
        FUZZ_CHECK(json_equal(again_json, canon), "canonical form is not a fixed point");
        json_decref(again_json);
        bd_space_free(again);
    }
    json_decref(canon);

    bd_rng_seed(&rng, seed, (uint64_t)depth);
    for (int i = 0; i < SAMPLES; i++) {
        json_t *c = bd_space_sample(s, &rng);
        check_config(s, c, "sampled");
        check_encoding(s, c);
        json_decref(c);
    }
    if (config && bd_space_validate_config(s, config, &err) == 0)
        check_encoding(s, config);

    if (depth > 0)
        return;
    for (size_t i = 0; i < bd_space_size(s) && i < 4; i++) {
        const bd_param *p = bd_space_param(s, i);
        bd_space *sub = NULL;
        if (p->type != BD_PARAM_CATEGORICAL)
            continue;
        const json_t *choice = json_array_get(p->choices, (size_t)(seed % json_array_size(p->choices)));
        FUZZ_CHECK(bd_space_subspace(s, p->name, choice, &sub, &err) == 0, "no sub-space for %s: %s", p->name,
                   err.message);
        exercise(sub, NULL, seed, depth + 1);
        bd_space_free(sub);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *in = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, NULL);
    const json_t *params = in, *config = NULL;
    bd_space *s = NULL;
    bd_err err;
    uint64_t h = 1469598103934665603ULL;

    if (!in)
        return 0;
    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 1099511628211ULL;
    if (json_is_object(in)) {
        params = json_object_get(in, "parameters");
        config = json_object_get(in, "config");
    }
    if (bd_space_parse(params, &s, &err) == 0) {
        exercise(s, config, h, 0);
        bd_space_free(s);
    } else {
        FUZZ_CHECK(err.code == BD_EINVAL && strncmp(err.field, "parameters", 10) == 0, "error %d field %s: %s",
                   err.code, err.field, err.message);
    }
    json_decref(in);
    return 0;
}
