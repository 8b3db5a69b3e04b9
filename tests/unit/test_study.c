/* One study's runtime (server/study.c) without the engine or HTTP: the feed
 * keeps counts, usage and incumbents; limits end the study; replay from a
 * store rebuilds the same figures and scheduler state. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "server/study.h"

/* A study of this definition with its scheduler built (bd_study_free). */
static study_rt *make_study(const char *definition)
{
    json_t *body = json_loads(definition, 0, NULL);
    cr_assert_not_null(body);
    study_rt *st = calloc(1, sizeof *st);
    bd_err err = {0};
    pthread_mutex_init(&st->mu, NULL);
    st->id = 1;
    st->created_at = 100;
    cr_assert_eq(bd_study_spec_parse(body, 60, &st->spec, &err), 0, "%s", err.message);
    st->spec.def.id = 1;
    cr_assert_eq(bd_study_spec_sched(&st->spec)->create(&st->spec.def, &st->sched, &err), 0, "%s", err.message);
    json_decref(body);
    return st;
}

static const char *random_study =
    "{\"name\": \"r\", \"parameters\": [{\"name\": \"x\", \"type\": \"float\", \"low\": 0, \"high\": 1}],"
    " \"objective\": {\"goal\": \"maximize\"}, \"scheduler\": {\"name\": \"random\"}, \"seed\": 3,"
    " \"resource\": {\"name\": \"epochs\", \"min\": 1, \"max\": 4},"
    " \"limits\": {\"trials\": 3, \"seconds\": 100}}";

static void feed(study_rt *st, bd_event_type type, int64_t id, int64_t trial, double budget, double loss,
                 double seconds)
{
    json_t *config = json_pack("{s:f}", "x", 0.5);
    bd_event ev = {.type = type, .id = id, .trial_id = trial, .config_id = trial, .budget = budget,
                   .config = type == BD_EV_CREATED ? config : NULL, .loss = loss, .elapsed_seconds = seconds};
    bd_decision d;
    bd_study_feed(st, &ev, 0, 0, &d);
    json_decref(config);
}

Test(study, the_feed_counts_trials_usage_and_both_incumbents)
{
    study_rt *st = make_study(random_study);
    feed(st, BD_EV_CREATED, 1, 1, 4, NAN, NAN);
    feed(st, BD_EV_CREATED, 2, 2, 2, NAN, NAN);
    cr_expect_eq(st->counts[BD_TRIAL_RUNNING], 2);
    cr_expect_eq(st->used.trials, 2);
    cr_expect_float_eq(st->used.resource, 6, 1e-12);
    /* maximize: losses are the negated values, the engine's bd_study_loss */
    cr_expect_float_eq(bd_study_loss(st, 1, 0.8), -0.8, 1e-12);
    cr_expect(isinf(bd_study_loss(st, 1, NAN)) && isinf(bd_study_loss(st, 0, 0)));
    feed(st, BD_EV_COMPLETED, 3, 2, 2, -0.9, 30);
    feed(st, BD_EV_COMPLETED, 4, 1, 4, -0.7, 40);
    cr_expect_eq(st->counts[BD_TRIAL_COMPLETED], 2);
    cr_expect_eq(st->counts[BD_TRIAL_RUNNING], 0);
    cr_expect_eq(st->best.trial_id, 2, "best at any budget");
    cr_expect_eq(st->best_full.trial_id, 1, "best at resource.max");
    cr_expect_float_eq(st->used.seconds, 70, 1e-12);
    cr_expect_not(bd_study_limit_reached(st));
    feed(st, BD_EV_CREATED, 5, 3, 4, NAN, NAN);
    cr_expect(bd_study_limit_reached(st), "limits.trials = 3 used up");
    bd_study_free(st);
}

Test(study, the_seconds_limit_counts_ended_trials)
{
    study_rt *st = make_study(random_study);
    feed(st, BD_EV_CREATED, 1, 1, 4, NAN, NAN);
    feed(st, BD_EV_STOPPED, 2, 1, 4, NAN, 100);
    cr_expect_eq(st->counts[BD_TRIAL_STOPPED], 1);
    cr_expect(bd_study_limit_reached(st));
    bd_study_free(st);
}

/* A fresh in-memory store holding one user and study 1 (no trials). */
static bd_store *store_with_study(void)
{
    bd_store *s = NULL;
    bd_store_opts o = {.sync = BD_SYNC_NORMAL};
    bd_err err = {0};
    int64_t uid, sid;
    cr_assert_eq(bd_store_open(":memory:", &o, &s, &err), 0, "%s", err.message);
    cr_assert_eq(bd_store_user_create(s, "u", 0, 1, &uid, &err), 0);
    bd_study_row row = {.user_id = uid, .name = "r", .definition = "{}", .created_at = 100};
    cr_assert_eq(bd_store_study_insert(s, &row, &sid, &err), 0);
    cr_assert_eq(sid, 1);
    return s;
}

/* Writes study 1's trials and events to a fresh in-memory store as the
 * engine would, feeding st live at the same time. */
static bd_store *store_with_history(study_rt *st)
{
    bd_store *s = store_with_study();
    bd_err err = {0};
    int64_t event_id = 1;
    for (int i = 0; i < 6; i++) {
        bd_trial_row t = {.study_id = 1, .config = "{\"x\":0.25}", .budget = 4, .state = BD_TRIAL_RUNNING,
                          .created_at = 100 + i, .lease_expires_at = 1e12};
        int64_t tid;
        cr_assert_eq(bd_store_trial_insert(s, &t, &tid, &err), 0, "%s", err.message);
        bd_event_row created = {.id = event_id++, .study_id = 1, .trial_id = tid, .type = BD_EV_CREATED,
                                .created_at = 100 + i, .value = NAN, .elapsed_seconds = NAN};
        cr_assert_eq(bd_store_event_append(s, &created, NULL, &err), 0, "%s", err.message);
        json_t *config = json_loads(t.config, 0, NULL);
        bd_event ev = {.type = BD_EV_CREATED, .id = created.id, .trial_id = tid, .config_id = tid, .budget = 4,
                       .config = config, .loss = NAN, .elapsed_seconds = NAN};
        bd_decision d;
        bd_study_feed(st, &ev, 0, 0, &d);
        json_decref(config);
        if (i % 3 == 2)
            continue; /* left running */
        double value = 0.1 * i;
        bd_event_row done = {.id = event_id++, .study_id = 1, .trial_id = tid, .type = BD_EV_COMPLETED,
                             .has_value = 1, .value = value, .elapsed_seconds = 2, .created_at = 200 + i};
        cr_assert_eq(bd_store_event_append(s, &done, NULL, &err), 0, "%s", err.message);
        bd_event dev = {.type = BD_EV_COMPLETED, .id = done.id, .trial_id = tid, .config_id = tid, .budget = 4,
                        .loss = bd_study_loss(st, 1, value), .elapsed_seconds = 2};
        bd_study_feed(st, &dev, 0, 0, &d);
        bd_study_touch(st, 200 + i);
    }
    return s;
}

Test(study, replay_rebuilds_what_the_live_feed_built)
{
    study_rt *live = make_study(
        "{\"name\": \"r\", \"parameters\": [{\"name\": \"x\", \"type\": \"float\", \"low\": 0, \"high\": 1}],"
        " \"objective\": {\"goal\": \"maximize\"}, \"scheduler\": {\"name\": \"random\"}, \"seed\": 3}");
    bd_store *s = store_with_history(live);
    study_rt *rebuilt = make_study(
        "{\"name\": \"r\", \"parameters\": [{\"name\": \"x\", \"type\": \"float\", \"low\": 0, \"high\": 1}],"
        " \"objective\": {\"goal\": \"maximize\"}, \"scheduler\": {\"name\": \"random\"}, \"seed\": 3}");
    bd_err err = {0};
    cr_assert_eq(bd_study_replay(rebuilt, s, &err), 0, "%s", err.message);
    for (int k = 0; k < BD_TRIAL_NSTATES; k++)
        cr_expect_eq(rebuilt->counts[k], live->counts[k], "state %d", k);
    cr_expect_eq(rebuilt->trials_created, 6);
    cr_expect_eq(rebuilt->best.trial_id, live->best.trial_id);
    cr_expect_float_eq(rebuilt->used.seconds, live->used.seconds, 1e-12);
    cr_expect_float_eq(rebuilt->last_activity_at, live->last_activity_at, 1e-12);
    json_t *a = bd_study_json(live, s), *b = bd_study_json(rebuilt, s);
    cr_expect(json_equal(json_object_get(a, "scheduler"), json_object_get(b, "scheduler")));
    cr_expect(json_equal(json_object_get(a, "incumbent"), json_object_get(b, "incumbent")));
    cr_expect_float_eq(json_number_value(json_object_get(json_object_get(b, "incumbent"), "value")), 0.4, 1e-12,
                       "maximize: the largest value (trials 1, 2, 4, 5 completed with 0.0, 0.1, 0.3, 0.4)");
    json_decref(a);
    json_decref(b);
    bd_study_free(live);
    bd_study_free(rebuilt);
    bd_store_close(s);
}

/* A warm-start trial (stored as created + completed, origin warm_start) is
 * fed as one PRIOR event: a completed trial and maybe the incumbent, no use
 * of the limits, and only a scheduler that learns_from_prior sees it. A
 * replay feeds it the same way and reloads the queue of enqueued configs. */
Test(study, warm_starts_and_the_queue_replay_as_they_were_fed)
{
    static const char *tpe_study =
        "{\"name\": \"t\", \"parameters\": [{\"name\": \"x\", \"type\": \"float\", \"low\": 0, \"high\": 1}],"
        " \"objective\": {\"goal\": \"minimize\"}, \"scheduler\": {\"name\": \"tpe\"}, \"seed\": 3,"
        " \"limits\": {\"trials\": 2}}";
    study_rt *live = make_study(tpe_study);
    bd_store *s = store_with_study();
    bd_err err = {0};
    static const double values[] = {0.7, 0.2, 0.5};
    for (int i = 0; i < 3; i++) {
        char config[32];
        snprintf(config, sizeof config, "{\"x\":0.%d}", i + 1);
        bd_trial_row t = {.study_id = 1, .config = config, .budget = 1, .state = BD_TRIAL_COMPLETED,
                          .origin = BD_ORIGIN_WARM_START, .created_at = 100, .finished_at = 100, .has_value = 1,
                          .value = values[i]};
        int64_t tid;
        cr_assert_eq(bd_store_trial_insert(s, &t, &tid, &err), 0, "%s", err.message);
        bd_event_row created = {.id = 2 * i + 1, .study_id = 1, .trial_id = tid, .type = BD_EV_CREATED,
                                .created_at = 100, .value = NAN, .elapsed_seconds = NAN};
        bd_event_row done = {.id = 2 * i + 2, .study_id = 1, .trial_id = tid, .type = BD_EV_COMPLETED,
                             .has_value = 1, .value = values[i], .elapsed_seconds = NAN, .created_at = 100};
        cr_assert_eq(bd_store_event_append(s, &created, NULL, &err), 0, "%s", err.message);
        cr_assert_eq(bd_store_event_append(s, &done, NULL, &err), 0, "%s", err.message);
        json_t *c = json_loads(config, 0, NULL);
        bd_event ev = {.type = BD_EV_PRIOR, .id = created.id, .trial_id = tid, .config_id = tid, .budget = 1,
                       .config = c, .loss = values[i], .elapsed_seconds = NAN};
        bd_decision d;
        bd_study_feed(live, &ev, 0, 0, &d);
        json_decref(c);
    }
    cr_assert_eq(bd_store_enqueue_push(s, 1, "{\"x\":0.9}", 100, &err), 0, "%s", err.message);
    cr_assert_eq(bd_store_enqueue_push(s, 1, "{\"x\":0.8}", 100, &err), 0, "%s", err.message);
    cr_expect_eq(live->counts[BD_TRIAL_COMPLETED], 3);
    cr_expect_eq(live->best.trial_id, 2, "the warm start with 0.2 is the incumbent");
    cr_expect_eq(live->used.trials, 0, "warm starts use no limit");
    cr_expect_not(bd_study_limit_reached(live));

    study_rt *rebuilt = make_study(tpe_study);
    cr_assert_eq(bd_study_replay(rebuilt, s, &err), 0, "%s", err.message);
    cr_expect_eq(rebuilt->counts[BD_TRIAL_COMPLETED], 3);
    cr_expect_eq(rebuilt->best.trial_id, 2);
    cr_expect_eq(rebuilt->trials_created, 0);
    json_t *a = bd_study_json(live, s), *b = bd_study_json(rebuilt, s);
    json_t *results = json_object_get(json_object_get(json_object_get(json_object_get(b, "scheduler"), "state"),
                                                      "model"), "results");
    cr_expect_eq(json_integer_value(json_object_get(results, "1")), 3, "tpe holds the 3 results: %s",
                 json_dumps(results, 0));
    cr_expect(json_equal(json_object_get(a, "scheduler"), json_object_get(b, "scheduler")));
    cr_expect_eq(json_integer_value(json_object_get(b, "enqueued")), 2);
    json_t *head = bd_study_dequeue(rebuilt);
    cr_expect_float_eq(json_number_value(json_object_get(head, "x")), 0.9, 1e-12, "oldest first");
    json_decref(head);
    cr_assert_eq(bd_store_enqueue_pop(s, 1, 1, &err), 0, "%s", err.message);
    cr_assert_eq(bd_study_replay(rebuilt, s, &err), 0, "%s", err.message);
    cr_expect_eq(rebuilt->n_queued, 1, "a handed-out config is gone after its pop");
    json_decref(a);
    json_decref(b);
    bd_study_free(live);
    bd_study_free(rebuilt);
    bd_store_close(s);
}

/* Replay reads the stored trials in pages beside the event scan (study.c,
 * REPLAY_READ_AHEAD): a Hyperband study of 700 trials, with promotions and
 * a retry, whose trial ids interleave with another study's, rebuilds the
 * same brackets and next suggestion as the live feed. Hyperband
 * continues_by_id, so its promotions replay without their config. */
Test(study, replay_reads_trials_in_pages_between_another_studys_trials)
{
    static const char *hb =
        "{\"name\": \"h\", \"parameters\": [{\"name\": \"x\", \"type\": \"float\", \"low\": 0, \"high\": 1}],"
        " \"objective\": {\"goal\": \"minimize\"}, \"seed\": 5,"
        " \"scheduler\": {\"name\": \"hyperband\", \"options\": {\"eta\": 3, \"iterations\": 0}},"
        " \"resource\": {\"name\": \"epochs\", \"min\": 1, \"max\": 9}}";
    study_rt *live = make_study(hb);
    cr_assert(live->sched->ops->continues_by_id);
    bd_store *s = store_with_study();
    bd_err err = {0};
    int64_t uid = 1, other;
    bd_study_row row = {.user_id = uid, .name = "other", .definition = "{}", .created_at = 100};
    cr_assert_eq(bd_store_study_insert(s, &row, &other, &err), 0, "%s", err.message);
    int64_t event_id = 1;
    int promotions = 0, failed = 0;
    for (int i = 0; i < 700; i++) {
        if (i % 5 == 0) { /* a trial of the other study takes the next id */
            bd_trial_row o = {.study_id = other, .config = "{}", .budget = 1, .state = BD_TRIAL_RUNNING,
                              .created_at = 100, .lease_expires_at = 1e12};
            int64_t oid;
            cr_assert_eq(bd_store_trial_insert(s, &o, &oid, &err), 0, "%s", err.message);
        }
        bd_suggest_ctx ctx = {.trials_created = live->trials_created};
        bd_rng_seed(&ctx.rng, 5, (uint64_t)i);
        bd_suggestion sg = {0};
        cr_assert_eq(live->sched->ops->suggest(live->sched, &ctx, &sg, &err), BD_SUGGEST_TRIAL);
        char *config = json_dumps(sg.config, JSON_COMPACT), *extra = sg.extra ? json_dumps(sg.extra, 0) : NULL;
        bd_trial_row t = {.study_id = 1, .config_id = sg.config_id, .config = config, .budget = sg.budget,
                          .resume_from = sg.resume_from, .extra = extra, .state = BD_TRIAL_RUNNING,
                          .created_at = 100 + i, .lease_expires_at = 1e12};
        int64_t tid;
        cr_assert_eq(bd_store_trial_insert(s, &t, &tid, &err), 0, "%s", err.message);
        promotions += sg.config_id != 0;
        bd_event_row created = {.id = event_id++, .study_id = 1, .trial_id = tid, .type = BD_EV_CREATED,
                                .created_at = 100 + i, .value = NAN, .elapsed_seconds = NAN};
        cr_assert_eq(bd_store_event_append(s, &created, NULL, &err), 0, "%s", err.message);
        bd_event ev = {.type = BD_EV_CREATED, .id = created.id, .trial_id = tid,
                       .config_id = sg.config_id ? sg.config_id : tid, .budget = sg.budget, .config = sg.config,
                       .resume_from = sg.resume_from, .extra = sg.extra, .loss = NAN, .elapsed_seconds = NAN};
        bd_decision d;
        bd_study_feed(live, &ev, 0, 0, &d);
        int fail = i == 350;
        failed += fail;
        double value = fmod(0.37 * i, 1.0);
        bd_event_row done = {.id = event_id++, .study_id = 1, .trial_id = tid,
                             .type = fail ? BD_EV_FAILED : BD_EV_COMPLETED, .has_value = !fail, .value = value,
                             .elapsed_seconds = 1, .created_at = 200 + i};
        cr_assert_eq(bd_store_event_append(s, &done, NULL, &err), 0, "%s", err.message);
        bd_event dev = {.type = done.type, .id = done.id, .trial_id = tid, .config_id = ev.config_id,
                        .budget = sg.budget, .loss = fail ? NAN : value, .elapsed_seconds = 1};
        bd_study_feed(live, &dev, 0, 0, &d);
        json_decref(sg.config);
        json_decref(sg.extra);
        free(config);
        free(extra);
    }
    cr_assert_gt(promotions, 100);
    study_rt *rebuilt = make_study(hb);
    cr_assert_eq(bd_study_replay(rebuilt, s, &err), 0, "%s", err.message);
    cr_expect_eq(rebuilt->trials_created, 700);
    cr_expect_eq(rebuilt->counts[BD_TRIAL_FAILED], failed);
    json_t *a = bd_study_json(live, s), *b = bd_study_json(rebuilt, s);
    cr_expect(json_equal(json_object_get(a, "scheduler"), json_object_get(b, "scheduler")));
    json_decref(a);
    json_decref(b);
    bd_suggest_ctx ctx = {.trials_created = 700};
    bd_rng_seed(&ctx.rng, 5, 700);
    bd_suggestion x = {0}, y = {0};
    cr_assert_eq(live->sched->ops->suggest(live->sched, &ctx, &x, &err), BD_SUGGEST_TRIAL);
    cr_assert_eq(rebuilt->sched->ops->suggest(rebuilt->sched, &ctx, &y, &err), BD_SUGGEST_TRIAL);
    cr_expect(json_equal(x.config, y.config) && x.config_id == y.config_id && x.budget == y.budget &&
              x.resume_from == y.resume_from);
    json_decref(x.config);
    json_decref(x.extra);
    json_decref(y.config);
    json_decref(y.extra);
    bd_study_free(live);
    bd_study_free(rebuilt);
    bd_store_close(s);
}


/* ------------------------------------------- several objectives, constraints */

static int parse_fails(const char *definition, const char *field)
{
    json_t *body = json_loads(definition, 0, NULL);
    cr_assert_not_null(body, "%s", definition);
    bd_study_spec spec;
    bd_err err = {0};
    int rc = bd_study_spec_parse(body, 60, &spec, &err);
    json_decref(body);
    if (rc == 0) {
        bd_study_spec_clear(&spec);
        return 0;
    }
    cr_expect_str_eq(err.field, field, "%s: %s", definition, err.message);
    return 1;
}

#define P "\"name\": \"m\", \"parameters\": [{\"name\": \"x\", \"type\": \"float\", \"low\": 0, \"high\": 1}], "
#define RANDOM ", \"scheduler\": {\"name\": \"random\"}, \"seed\": 1}"

Test(study, objectives_and_constraints_are_validated_with_the_field_named)
{
    static const struct {
        const char *body, *field;
    } bad[] = {
        {"{" P "\"objectives\": [{\"metric\": \"a\", \"goal\": \"minimize\"}, {\"metric\": \"b\", \"goal\": \"up\"}]" RANDOM,
         "objectives[1].goal"},
        {"{" P "\"objectives\": [{\"metric\": \"a\", \"goal\": \"minimize\"}, {\"metric\": \"a\", \"goal\": \"maximize\"}]" RANDOM,
         "objectives[1].metric"},
        {"{" P "\"objectives\": [{\"metric\": \"a\", \"goal\": \"minimize\"}, {\"goal\": \"minimize\"}]" RANDOM,
         "objectives[1].metric"},
        {"{" P "\"objectives\": [{\"metric\": \"a\", \"goal\": \"minimize\", \"ref\": 1}, {\"metric\": \"b\", \"goal\": \"minimize\"}]" RANDOM,
         "objectives[0].ref"},
        {"{" P "\"objectives\": [], \"scheduler\": {\"name\": \"random\"}}", "objectives"},
        {"{" P "\"objectives\": [{\"metric\": \"a\", \"goal\": \"minimize\"}], \"objective\": {\"goal\": \"minimize\"}" RANDOM,
         "objectives"},
        {"{" P "\"objectives\": [{\"metric\": \"a\", \"goal\": \"minimize\"}, {\"metric\": \"b\", \"goal\": \"minimize\","
               " \"reference\": \"1\"}]" RANDOM, "objectives[1].reference"},
        {"{" P "\"objective\": {\"goal\": \"minimize\"}, \"constraints\": [{\"metric\": \"m\", \"min\": 2, \"max\": 1}]" RANDOM,
         "constraints[0].max"},
        {"{" P "\"objective\": {\"goal\": \"minimize\"}, \"constraints\": [{\"metric\": \"m\"}]" RANDOM, "constraints[0]"},
        {"{" P "\"objective\": {\"goal\": \"minimize\"}, \"constraints\": [{\"metric\": \"m\", \"max\": 1},"
               " {\"metric\": \"m\", \"min\": 0}]" RANDOM, "constraints[1].metric"},
        {"{" P "\"objective\": {\"goal\": \"minimize\"}, \"constraints\": {\"metric\": \"m\"}" RANDOM, "constraints"},
        /* bo_bos takes neither (gp_ucb takes both since ParEGO) */
        {"{" P "\"objectives\": [{\"metric\": \"a\", \"goal\": \"minimize\"}, {\"metric\": \"b\", \"goal\": \"minimize\"}],"
               " \"scheduler\": {\"name\": \"bo_bos\"}}", "objectives"},
        {"{" P "\"objective\": {\"goal\": \"minimize\"}, \"constraints\": [{\"metric\": \"m\", \"max\": 1}],"
               " \"scheduler\": {\"name\": \"bo_bos\"}}", "constraints"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_expect(parse_fails(bad[i].body, bad[i].field), "accepted: %s", bad[i].body);
    char many[4096];
    size_t len = (size_t)snprintf(many, sizeof many, "{" P "\"objectives\": [");
    for (int i = 0; i < BD_STUDY_MAX_OBJECTIVES + 1; i++)
        len += (size_t)snprintf(many + len, sizeof many - len, "%s{\"metric\": \"m%d\", \"goal\": \"minimize\"}",
                                i ? ", " : "", i);
    snprintf(many + len, sizeof many - len, "]" RANDOM);
    cr_expect(parse_fails(many, "objectives"), "nine objectives");
}

Test(study, objectives_fill_the_definition_and_one_is_an_objective)
{
    study_rt *st = make_study("{" P "\"objectives\": [{\"metric\": \"err\", \"goal\": \"minimize\", \"reference\": 1},"
                              " {\"metric\": \"acc\", \"goal\": \"maximize\"}],"
                              " \"constraints\": [{\"metric\": \"mem\", \"max\": 512}, {\"metric\": \"err\", \"min\": 0.1}]"
                              RANDOM);
    const bd_study_def *d = &st->spec.def;
    cr_assert_eq(d->n_objectives, 2);
    cr_expect_str_eq(d->objectives[1].metric, "acc");
    cr_expect(d->objectives[1].maximize && !d->maximize);
    cr_expect_str_eq(d->metric, "err");
    cr_expect_eq(d->n_constraints, 2);
    cr_expect_eq(st->spec.n_metrics, 3, "err, acc, mem: err is an objective and a constraint");
    cr_expect_float_eq(st->spec.references[0], 1, 1e-12);
    cr_expect(isnan(st->spec.references[1]));
    cr_expect_null(json_object_get(st->spec.normalized, "objective"));
    bd_study_free(st);

    st = make_study("{" P "\"objectives\": [{\"metric\": \"err\", \"goal\": \"maximize\", \"reference\": 1}],"
                    " \"constraints\": []" RANDOM);
    cr_expect_eq(st->spec.def.n_objectives, 1);
    cr_expect_eq(st->spec.def.n_constraints, 0);
    cr_expect(st->spec.def.maximize);
    json_t *want = json_pack("{s:s, s:s}", "metric", "err", "goal", "maximize");
    cr_expect(json_equal(json_object_get(st->spec.normalized, "objective"), want), "stored as objective");
    cr_expect_null(json_object_get(st->spec.normalized, "objectives"));
    cr_expect_null(json_object_get(st->spec.normalized, "constraints"), "[] is none");
    json_decref(want);
    bd_study_free(st);
}

Test(study, values_give_losses_and_violation)
{
    study_rt *st = make_study("{" P "\"objectives\": [{\"metric\": \"err\", \"goal\": \"minimize\"},"
                              " {\"metric\": \"acc\", \"goal\": \"maximize\"}],"
                              " \"constraints\": [{\"metric\": \"mem\", \"min\": 10, \"max\": 512}]" RANDOM);
    json_t *values = json_pack("{s:f, s:f, s:f}", "err", 0.25, "acc", 0.9, "mem", 600.0), *out = NULL;
    bd_err err = {0};
    double first = -1, losses[2], violation;
    cr_assert_eq(bd_study_spec_parse_values(&st->spec, NULL, values, 0, &out, &first, &err), 0, "%s", err.message);
    cr_expect_float_eq(first, 0.25, 1e-12);
    bd_study_spec_losses(&st->spec, out, first, losses, &violation);
    cr_expect_float_eq(losses[0], 0.25, 1e-12);
    cr_expect_float_eq(losses[1], -0.9, 1e-12, "maximized: negated");
    cr_expect_float_eq(violation, 88, 1e-12, "600 is 88 over 512");
    json_decref(out);
    /* a missing constraint metric: required at completion, not in a measurement */
    json_object_del(values, "mem");
    cr_expect_eq(bd_study_spec_parse_values(&st->spec, NULL, values, 0, &out, &first, &err), BD_EINVAL);
    cr_expect_str_eq(err.field, "values.mem");
    cr_assert_eq(bd_study_spec_parse_values(&st->spec, NULL, values, 1, &out, &first, &err), 0, "%s", err.message);
    bd_study_spec_losses(&st->spec, out, first, losses, &violation);
    cr_expect_eq(violation, 0);
    json_decref(out);
    json_object_set_new(values, "speed", json_real(1));
    cr_expect_eq(bd_study_spec_parse_values(&st->spec, NULL, values, 1, &out, &first, &err), BD_EINVAL);
    cr_expect_str_eq(err.field, "values.speed");
    json_object_del(values, "speed");
    json_object_set_new(values, "acc", json_string("high"));
    cr_expect_eq(bd_study_spec_parse_values(&st->spec, NULL, values, 1, &out, &first, &err), BD_EINVAL);
    cr_expect_str_eq(err.field, "values.acc");
    json_t *one = json_real(0.3), *null = json_null();
    cr_expect_eq(bd_study_spec_parse_values(&st->spec, one, NULL, 0, &out, &first, &err), BD_EINVAL);
    cr_expect_str_eq(err.field, "value", "several objectives take values");
    /* diverged: every objective worst, infeasible */
    cr_assert_eq(bd_study_spec_parse_values(&st->spec, null, NULL, 0, &out, &first, &err), 0);
    cr_expect_null(out);
    bd_study_spec_losses(&st->spec, NULL, first, losses, &violation);
    cr_expect(isinf(losses[0]) && isinf(losses[1]) && isinf(violation));
    json_decref(values);
    bd_study_free(st);

    /* one objective with a constraint: "value" stands for the objective */
    st = make_study("{" P "\"objective\": {\"metric\": \"err\", \"goal\": \"maximize\"},"
                    " \"constraints\": [{\"metric\": \"mem\", \"max\": 512}]" RANDOM);
    values = json_pack("{s:f}", "mem", 100.0);
    cr_assert_eq(bd_study_spec_parse_values(&st->spec, one, values, 0, &out, &first, &err), 0, "%s", err.message);
    cr_expect_float_eq(json_number_value(json_object_get(out, "err")), 0.3, 1e-12, "stored with every metric");
    bd_study_spec_losses(&st->spec, out, first, losses, &violation);
    cr_expect_float_eq(losses[0], -0.3, 1e-12);
    cr_expect_eq(violation, 0);
    json_decref(out);
    json_object_set_new(values, "err", json_real(0.4));
    cr_expect_eq(bd_study_spec_parse_values(&st->spec, one, values, 0, &out, &first, &err), BD_EINVAL);
    cr_expect_str_eq(err.field, "values.err", "value and values differ");
    json_decref(values);
    json_decref(one);
    json_decref(null);
    bd_study_free(st);
}

/* Several objectives and a constraint, driven live through suggest and
 * the feed as the engine does (the values stored as text, losses and
 * violation from them), then replayed from the store: the same front, the
 * same hypervolume, and nsga2 proposes the same next configs (issue 41). */
Test(study, a_multi_objective_study_replays_to_the_same_front_and_decisions)
{
    static const char *def =
        "{\"name\": \"mo\", \"parameters\": [{\"name\": \"x\", \"type\": \"float\", \"low\": 0, \"high\": 1},"
        " {\"name\": \"y\", \"type\": \"float\", \"low\": 0, \"high\": 1}],"
        " \"objectives\": [{\"metric\": \"f1\", \"goal\": \"minimize\"}, {\"metric\": \"f2\", \"goal\": \"maximize\"}],"
        " \"constraints\": [{\"metric\": \"g\", \"max\": 0.8}],"
        " \"scheduler\": {\"name\": \"nsga2\", \"options\": {\"population_size\": 4}}, \"seed\": 11}";
    study_rt *live = make_study(def);
    bd_store *s = store_with_study();
    bd_err err = {0};
    int64_t event_id = 1;
    for (int i = 0; i < 24; i++) {
        bd_suggest_ctx ctx = {.trials_created = live->trials_created, .worker = "w"};
        bd_suggestion sg = {0};
        bd_rng_seed(&ctx.rng, live->spec.def.seed, (uint64_t)live->trials_created);
        cr_assert_eq(live->sched->ops->suggest(live->sched, &ctx, &sg, &err), BD_SUGGEST_TRIAL, "%s", err.message);
        char *config = json_dumps(sg.config, JSON_COMPACT | JSON_SORT_KEYS);
        bd_trial_row t = {.study_id = 1, .config = config, .budget = 1, .state = BD_TRIAL_RUNNING,
                          .created_at = 100 + i, .lease_expires_at = 1e12};
        int64_t tid;
        cr_assert_eq(bd_store_trial_insert(s, &t, &tid, &err), 0, "%s", err.message);
        bd_event_row created = {.id = event_id++, .study_id = 1, .trial_id = tid, .type = BD_EV_CREATED,
                                .created_at = 100 + i, .value = NAN, .elapsed_seconds = NAN};
        cr_assert_eq(bd_store_event_append(s, &created, NULL, &err), 0, "%s", err.message);
        bd_event ev = {.type = BD_EV_CREATED, .id = created.id, .trial_id = tid, .config_id = tid, .budget = 1,
                       .config = sg.config, .loss = NAN, .elapsed_seconds = NAN};
        bd_decision d;
        bd_study_feed(live, &ev, 0, 0, &d);
        /* ZDT1-like: f1 = x, f2 = 1 - sqrt(x) maximized as its negation; g = y */
        double x = json_number_value(json_object_get(sg.config, "x"));
        double y = json_number_value(json_object_get(sg.config, "y"));
        char values[160];
        snprintf(values, sizeof values, "{\"f1\":%.17g,\"f2\":%.17g,\"g\":%.17g}", x, sqrt(x) - 1 - y, y);
        bd_event_row done = {.id = event_id++, .study_id = 1, .trial_id = tid, .type = BD_EV_COMPLETED,
                             .has_value = 1, .value = x, .elapsed_seconds = 1, .created_at = 200 + i,
                             .values = i % 7 == 6 ? NULL : values};
        if (i % 7 == 6)
            done.value = NAN; /* diverged */
        cr_assert_eq(bd_store_event_append(s, &done, NULL, &err), 0, "%s", err.message);
        bd_trial_row fin = {.id = tid, .state = BD_TRIAL_COMPLETED, .finished_at = 200 + i, .has_value = 1,
                            .value = done.value, .values = done.values};
        cr_assert_eq(bd_store_trial_finish(s, &fin, &err), 0, "%s", err.message);
        bd_event dev = {.type = BD_EV_COMPLETED, .id = done.id, .trial_id = tid, .config_id = tid, .budget = 1,
                        .elapsed_seconds = 1};
        double losses[BD_STUDY_MAX_OBJECTIVES];
        bd_study_event_losses(live, done.has_value, done.value, done.values, &dev, losses);
        cr_assert_not_null(dev.losses);
        cr_expect_eq(dev.violation > 0, i % 7 == 6 || y > 0.8, "trial %d: y %g", i, y);
        bd_study_feed(live, &dev, 0, 0, &d);
        free(config);
        json_decref(sg.config);
        json_decref(sg.extra);
    }
    cr_assert_gt(live->front.n, 1);
    study_rt *rebuilt = make_study(def);
    cr_assert_eq(bd_study_replay(rebuilt, s, &err), 0, "%s", err.message);
    cr_assert_eq(rebuilt->front.n, live->front.n);
    for (size_t i = 0; i < live->front.n; i++) {
        cr_expect_eq(rebuilt->front.ids[i], live->front.ids[i]);
        cr_expect_eq(memcmp(&rebuilt->front.losses[2 * i], &live->front.losses[2 * i], 2 * sizeof(double)), 0);
    }
    json_t *a = bd_study_json(live, s), *b = bd_study_json(rebuilt, s);
    cr_expect(json_equal(json_object_get(a, "pareto_front"), json_object_get(b, "pareto_front")));
    cr_expect(json_is_real(json_object_get(a, "hypervolume")));
    cr_expect_eq(json_real_value(json_object_get(a, "hypervolume")), json_real_value(json_object_get(b, "hypervolume")));
    for (size_t i = 0; i < json_array_size(json_object_get(a, "pareto_front")); i++) {
        const json_t *v = json_object_get(json_array_get(json_object_get(a, "pareto_front"), i), "values");
        cr_expect_leq(json_number_value(json_object_get(v, "g")), 0.8, "no infeasible trial on the front");
    }
    json_decref(a);
    json_decref(b);
    for (int i = 0; i < 8; i++) { /* the next proposals, without observing them */
        bd_suggest_ctx ctx = {.trials_created = live->trials_created + i, .worker = "w"};
        bd_suggestion p = {0}, q = {0};
        bd_rng_seed(&ctx.rng, live->spec.def.seed, (uint64_t)ctx.trials_created);
        cr_assert_eq(live->sched->ops->suggest(live->sched, &ctx, &p, &err), BD_SUGGEST_TRIAL);
        bd_rng_seed(&ctx.rng, live->spec.def.seed, (uint64_t)ctx.trials_created);
        cr_assert_eq(rebuilt->sched->ops->suggest(rebuilt->sched, &ctx, &q, &err), BD_SUGGEST_TRIAL);
        cr_expect(json_equal(p.config, q.config), "proposal %d differs after the replay", i);
        json_decref(p.config);
        json_decref(q.config);
        json_decref(p.extra);
        json_decref(q.extra);
    }
    bd_study_free(live);
    bd_study_free(rebuilt);
    bd_store_close(s);
}
