/* fuzz_study: the body of POST /v1/studies through the strict body parser
 * (api/body.c) and the study-definition parser (server/study_def.c), then
 * the named scheduler's create() and a short simulated run, as the engine
 * drives it.
 *
 * Input: the JSON body.
 * Oracles: what was accepted is read back identically after the trip
 * through storage (json_dumps, json_loads, parse again: a definition that
 * does not would stop the daemon from starting); the normalized form and
 * the scheduler's description survive the server's serialization; every
 * proposal fits the study (config valid in the space, budget within the
 * resource, as engine_studies.c check_suggestion demands). The body's
 * "metadata" goes through server/attrs.c as the engine takes it (and is
 * removed before the definition parser, as there): what is accepted is
 * within the bounds, reads back as an object, and merging it again changes
 * nothing. */
#include <math.h>
#include <stdint.h>

#include "api/body.h"
#include "fuzz_common.h"
#include "server/attrs.h"
#include "server/study_def.h"

#define STEPS 12

static void check_metadata(json_t *body)
{
    const json_t *meta = json_object_get(body, "metadata");
    char *text = NULL, *again = NULL;
    bd_err err;
    if (!meta)
        return;
    if (bd_attrs_merge(NULL, meta, "metadata", &text, &err) != 0) {
        FUZZ_CHECK(err.code == BD_EINVAL && strncmp(err.field, "metadata", 8) == 0, "metadata refused with %d %s",
                   err.code, err.field);
    } else if (text) {
        json_t *back = json_loads(text, 0, NULL);
        FUZZ_CHECK(json_is_object(back) && json_object_size(back) <= BD_ATTRS_MAX_KEYS &&
                       strlen(text) <= BD_ATTRS_MAX_BYTES, "accepted metadata out of bounds: %s", text);
        /* A merge of what is stored with itself is a fixed point. */
        FUZZ_CHECK(bd_attrs_merge(text, back, "metadata", &again, &err) == 0 && again && strcmp(again, text) == 0,
                   "merging stored metadata into itself changed it");
        json_decref(back);
    }
    free(text);
    free(again);
    json_object_del(body, "metadata");
}

static void check_reparse(const bd_study_spec *spec)
{
    char *text = json_dumps(spec->normalized, JSON_COMPACT);
    json_t *back;
    bd_study_spec again;
    bd_err err;
    int rc;

    FUZZ_CHECK(text != NULL, "normalized study cannot be serialized");
    back = json_loads(text, 0, NULL);
    FUZZ_CHECK(back != NULL, "stored definition is not JSON: %s", text);
    rc = bd_study_spec_parse(back, 300, &again, &err);
    FUZZ_CHECK(rc == 0, "stored definition %s is rejected on replay: %s: %s", text, err.field, err.message);
    FUZZ_CHECK(json_equal(again.normalized, spec->normalized), "replayed definition differs from %s", text);
    bd_study_spec_clear(&again);
    json_decref(back);
    free(text);
}

/* A short run: suggest, record, then complete each trial with a loss drawn
 * from the input, as the engine would feed them. */
static void simulate(const bd_study_spec *spec, bd_sched *s, uint64_t seed)
{
    const bd_study_def *d = &spec->def;
    bd_rng loss_rng;
    int64_t created = 0;

    bd_rng_seed(&loss_rng, seed, 7);
    for (int i = 0; i < STEPS; i++) {
        bd_suggest_ctx ctx = {.trials_created = created, .worker = "w"};
        bd_suggestion sg = {0};
        bd_decision dec;
        bd_err err;
        int answer;

        bd_rng_seed(&ctx.rng, d->seed, (uint64_t)created);
        answer = s->ops->suggest(s, &ctx, &sg, &err);
        FUZZ_CHECK(answer >= 0, "suggest failed: %s", err.message);
        if (answer != BD_SUGGEST_TRIAL) {
            json_decref(sg.config);
            json_decref(sg.extra);
            break;
        }
        FUZZ_CHECK(bd_space_validate_config(d->space, sg.config, &err) == 0, "proposed config invalid: %s: %s",
                   err.field, err.message);
        FUZZ_CHECK(sg.budget >= d->r_min - 1e-9 && sg.budget <= d->r_max + 1e-9,
                   "budget %.17g outside [%.17g, %.17g]", sg.budget, d->r_min, d->r_max);
        FUZZ_CHECK(sg.config_id >= 0 && sg.resume_from >= 0 && !(sg.resume_from && !sg.config_id),
                   "invalid config_id %lld / resume_from %lld", (long long)sg.config_id, (long long)sg.resume_from);
        if (sg.extra)
            fuzz_check_serialization(sg.extra);
        created++;
        if (d->resource_integer)
            sg.budget = round(sg.budget);
        bd_observe_ctx octx = {.replay = 0};
        bd_event ev = {.type = BD_EV_CREATED,
                       .id = 2 * created - 1,
                       .trial_id = created,
                       .config_id = sg.config_id ? sg.config_id : created,
                       .budget = sg.budget,
                       .config = sg.config,
                       .resume_from = sg.resume_from,
                       .extra = sg.extra,
                       .loss = NAN,
                       .elapsed_seconds = NAN};
        memset(&dec, 0, sizeof dec);
        bd_observe_ctx_seed(&octx, d->seed, ev.id);
        (void)s->ops->observe(s, &octx, &ev, &dec, &err);
        bd_event done = {.type = (bd_rng_below(&loss_rng, 8) == 0) ? BD_EV_FAILED : BD_EV_COMPLETED,
                         .id = 2 * created,
                         .trial_id = created,
                         .config_id = ev.config_id,
                         .budget = sg.budget,
                         .loss = bd_rng_uniform(&loss_rng),
                         .elapsed_seconds = NAN};
        double losses[BD_STUDY_MAX_OBJECTIVES]; /* several objectives: as the engine gives them (sched.h) */
        for (size_t k = 0; k < d->n_objectives && d->n_objectives > 1; k++)
            losses[k] = k == 0 ? done.loss : bd_rng_uniform(&loss_rng);
        done.losses = d->n_objectives > 1 ? losses : NULL;
        done.violation = d->n_constraints && bd_rng_below(&loss_rng, 3) == 0 ? bd_rng_uniform(&loss_rng) : 0;
        memset(&dec, 0, sizeof dec);
        bd_observe_ctx_seed(&octx, d->seed, done.id);
        (void)s->ops->observe(s, &octx, &done, &dec, &err);
        json_decref(sg.config);
        json_decref(sg.extra);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *body = NULL, *state = NULL;
    bd_study_spec spec;
    bd_sched *s = NULL;
    bd_err err;
    uint64_t h = 1469598103934665603ULL;

    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 1099511628211ULL;
    if (bd_api_parse_body((const char *)data, size, 1, &body, &err) != 0)
        return 0;
    check_metadata(body);
    if (bd_study_spec_parse(body, 300, &spec, &err) != 0) {
        FUZZ_CHECK(err.code == BD_EINVAL, "parse failed with code %d: %s", err.code, err.message);
        json_decref(body);
        return 0;
    }
    fuzz_check_serialization(spec.normalized);
    check_reparse(&spec);
    FUZZ_CHECK(bd_study_spec_sched(&spec) != NULL, "accepted an unknown scheduler");
    if (bd_study_spec_sched(&spec)->create(&spec.def, &s, &err) == 0) {
        simulate(&spec, s, h);
        if (s->ops->describe(s, &state) == 0 && state)
            fuzz_check_serialization(state);
        json_decref(state);
        s->ops->destroy(s);
    } else {
        FUZZ_CHECK(err.code == BD_EINVAL, "create failed with code %d: %s", err.code, err.message);
    }
    bd_study_spec_clear(&spec);
    json_decref(body);
    return 0;
}
