"""Define-by-run spaces (issue 39): a study may declare no parameters, and a
running trial asks for each one when its code first needs it
(POST /v1/trials/{id}/parameters). The study's space grows as names first
appear ("asked_parameters"), a name keeps one definition, the trial's config
holds exactly what it asked for, and a restart reads the values back."""

import math
import random
import unittest

import bdtest
from bdtest import check_status, create_study, suggest, unique_name

CLASSIFIER = {"name": "classifier", "type": "categorical", "choices": ["svc", "rf"]}
SVC_C = {"name": "svc_c", "type": "float", "low": 1e-3, "high": 1e3, "log": True}
RF_DEPTH = {"name": "rf_max_depth", "type": "int", "low": 2, "high": 32, "log": True}


def ask(d, trial_id, param, token=bdtest.ADMIN):
    return d.request("POST", "/v1/trials/%d/parameters" % trial_id, param, token=token)


def value_of(test, d, trial_id, param):
    return check_status(test, ask(d, trial_id, param), 200, "ask %s" % param["name"])["value"]


def empty_study(d, scheduler=None, token=bdtest.ADMIN, **overrides):
    """A study that declares no parameters (tpe unless scheduler says)."""
    body = bdtest.study_body(scheduler=scheduler or {"name": "tpe"}, **overrides)
    del body["parameters"]
    return bdtest.expect(d.request("POST", "/v1/studies", body, token=token), 201, "create")


def complete(test, d, trial_id, value):
    check_status(test, d.request("POST", "/v1/trials/%d/complete" % trial_id, {"value": value}), 200, "complete")


def conditional_objective(test, d, trial):
    """An sklearn-style conditional space: the classifier, then its own parameter."""
    kind = value_of(test, d, trial["id"], CLASSIFIER)
    if kind == "svc":
        c = value_of(test, d, trial["id"], SVC_C)
        return abs(math.log10(c) - 1.0)  # best at C = 10
    depth = value_of(test, d, trial["id"], RF_DEPTH)
    return 0.5 + abs(depth - 8) / 30.0


class DefineByRun(bdtest.DaemonTestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = bdtest.Daemon()

    @classmethod
    def tearDownClass(cls):
        cls.d.cleanup()

    def test_a_study_without_parameters_grows_a_conditional_space_from_two_workers(self):
        d = self.d
        study = empty_study(d)
        self.assertEqual(study["parameters"], [])
        self.assertNotIn("asked_parameters", study)
        w1, w2 = d.client(), d.client()
        seen = set()
        for i in range(12):
            for w in (w1, w2):
                st, body, _ = w.request("POST", "/v1/studies/%d/suggest" % study["id"], {"worker": "w"})
                self.assertEqual(st, 200, body)
                trial = body["trials"][0]
                self.assertEqual(trial["config"], {})
                value = conditional_objective(self, d, trial)
                complete(self, d, trial["id"], value)
                got = check_status(self, d.request("GET", "/v1/trials/%d" % trial["id"]), 200)
                asked = set(got["config"])
                self.assertIn("classifier", asked)
                self.assertEqual(len(asked), 2, "the classifier and its own parameter only: %r" % got["config"])
                self.assertEqual(asked - {"classifier"},
                                 {"svc_c"} if got["config"]["classifier"] == "svc" else {"rf_max_depth"})
                seen |= asked
        self.assertEqual(seen, {"classifier", "svc_c", "rf_max_depth"}, "both branches were taken in 24 trials")
        body = check_status(self, d.request("GET", "/v1/studies/%d" % study["id"]), 200)
        names = [p["name"] for p in body["asked_parameters"]]
        self.assertEqual(sorted(names), ["classifier", "rf_max_depth", "svc_c"])
        self.assertEqual(names[0], "classifier", "in order of first appearance")
        self.assertEqual(body["parameters"], [])
        st, csv_text, _ = d.request("GET", "/v1/studies/%d/trials.csv" % study["id"])
        self.assertEqual(st, 200)
        header = csv_text.splitlines()[0].split(",")
        self.assertEqual([c for c in header if c.startswith("params_")], ["params_" + n for n in names])

    def test_asking_again_answers_the_same_value_and_writes_nothing(self):
        d = self.d
        study = empty_study(d, scheduler={"name": "random"})
        trial = suggest(d, study["id"])[0]
        first = value_of(self, d, trial["id"], SVC_C)
        self.assertTrue(1e-3 <= first <= 1e3)
        for _ in range(3):
            self.assertEqual(value_of(self, d, trial["id"], SVC_C), first)

    def test_a_known_name_keeps_its_definition(self):
        d = self.d
        study = empty_study(d)
        trial = suggest(d, study["id"])[0]
        value_of(self, d, trial["id"], SVC_C)
        for key, other in (("high", 100.0), ("low", 1e-2), ("log", False)):
            body = check_status(self, ask(d, trial["id"], dict(SVC_C, **{key: other})), 400, key)
            self.assertEqual(body["error"]["field"], key)
        body = check_status(self, ask(d, trial["id"], dict(SVC_C, type="int", low=1, high=10)), 400)
        self.assertEqual(body["error"]["field"], "type")
        # ... in another trial of the same study too
        other = suggest(d, study["id"])[0]
        body = check_status(self, ask(d, other["id"], dict(SVC_C, high=5.0)), 400)
        self.assertEqual(body["error"]["field"], "high")

    def test_a_declared_parameter_is_answered_from_the_config(self):
        d = self.d
        study = create_study(d)  # declares x and k
        trial = suggest(d, study["id"])[0]
        x = {"name": "x", "type": "float", "low": 0.0, "high": 1.0}
        self.assertEqual(value_of(self, d, trial["id"], x), trial["config"]["x"])
        body = check_status(self, ask(d, trial["id"], dict(x, high=2.0)), 400)
        self.assertEqual(body["error"]["field"], "high")
        # an undeclared name grows the declared study's space too
        extra = value_of(self, d, trial["id"], RF_DEPTH)
        got = check_status(self, d.request("GET", "/v1/trials/%d" % trial["id"]), 200)
        self.assertEqual(got["config"], dict(trial["config"], rf_max_depth=extra))

    def test_bad_asks_name_the_field(self):
        d = self.d
        study = empty_study(d)
        trial = suggest(d, study["id"])[0]
        cases = [
            ({"name": "x", "type": "float", "low": 5, "high": 1}, 400, "high"),
            ({"name": "x", "type": "float", "low": 0, "high": 1, "when": {"k": ["a"]}}, 400, "when"),
            ({"name": "x" * 101, "type": "float", "low": 0, "high": 1}, 400, "name"),
            ({"name": "x", "type": "float", "low": -1, "high": 1, "log": True}, 400, "low"),
            ({"name": "x", "type": "complex", "low": 0, "high": 1}, 400, "type"),
            ({"name": "x", "type": "categorical", "choices": []}, 400, "choices"),
            ({"type": "float", "low": 0, "high": 1}, 400, "name"),
            ({"name": "x", "type": "float", "low": 0, "high": 1, "bogus": 1}, 400, "bogus"),
        ]
        for param, status, field in cases:
            body = check_status(self, ask(d, trial["id"], param), status, repr(param)[:80])
            self.assertEqual(body["error"]["field"], field, repr(param)[:80])
        st, body, _ = d.request("POST", "/v1/trials/%d/parameters" % trial["id"], [1, 2])
        self.assertEqual(st, 400, body)
        st, body, _ = d.request("POST", "/v1/trials/999999999/parameters", SVC_C)
        self.assertEqual(st, 404, body)
        complete(self, d, trial["id"], 1.0)
        st, body, _ = d.request("POST", "/v1/trials/%d/parameters" % trial["id"], SVC_C)
        self.assertEqual(st, 409, body)

    def test_schedulers_that_need_their_space_refuse_an_empty_one(self):
        d = self.d
        for scheduler in ({"name": "gp_ucb"}, {"name": "tpe", "options": {"sampler": "gp"}}):
            body = bdtest.study_body(parameters=[], scheduler=scheduler)
            st, answer, _ = d.request("POST", "/v1/studies", body)
            self.assertEqual(st, 400, answer)
            self.assertEqual(answer["error"]["field"], "parameters")

    def test_another_users_trial_is_not_found(self):
        d = self.d
        bob = bdtest.create_user(d, unique_name("bob"))
        study = empty_study(d)
        trial = suggest(d, study["id"])[0]
        st, body, _ = d.request("POST", "/v1/trials/%d/parameters" % trial["id"], SVC_C, token=bob)
        self.assertEqual(st, 404, body)
        body = check_status(self, d.request("GET", "/v1/studies/%d" % study["id"]), 200)
        self.assertNotIn("asked_parameters", body, "bob's ask changed nothing")

    def test_names_are_bounded_by_the_study_limit_and_the_users_quota(self):
        d = self.d
        name = unique_name("carol")
        carol = bdtest.create_user(d, name)
        check_status(self, d.request("PATCH", "/v1/users/%s" % name, {"limits": {"definition_bytes": 4000}}), 200)
        study = empty_study(d, scheduler={"name": "random"}, token=carol)
        trial = bdtest.suggest(d, study["id"], token=carol)[0]
        answers = []
        for i in range(200):
            st, answer, _ = ask(d, trial["id"], {"name": "p%03d" % i, "type": "float", "low": 0, "high": 1},
                                token=carol)
            answers.append((st, answer))
            if st != 200:
                break
        st, answer = answers[-1]
        self.assertEqual(st, 403, answer)
        self.assertEqual(answer["error"]["field"], "limits.definition_bytes")
        self.assertGreater(len(answers), 10)
        got = check_status(self, d.request("GET", "/v1/studies/%d" % study["id"], token=carol), 200)
        self.assertEqual(len(got["asked_parameters"]), len(answers) - 1, "the refused name did not join")

    def test_a_promoted_trial_keeps_its_configs_values(self):
        d = self.d
        study = empty_study(d, scheduler={"name": "successive_halving", "options": {"eta": 3, "n": 9}},
                            resource={"name": "epochs", "min": 1, "max": 9, "integer": True})
        first_rung = {}
        promoted = []
        for _ in range(40):
            st, body, _ = d.request("POST", "/v1/studies/%d/suggest" % study["id"], {"worker": "w"})
            self.assertEqual(st, 200, body)
            if body.get("done") or not body.get("trials"):
                break
            trial = body["trials"][0]
            c = value_of(self, d, trial["id"], SVC_C)
            if trial["config_id"] == trial["id"]:
                first_rung[trial["config_id"]] = c
            else:
                promoted.append((trial["config_id"], c))
            complete(self, d, trial["id"], abs(math.log10(c) - 1.0))
        self.assertTrue(promoted, "successive halving promoted some configs")
        for config_id, c in promoted:
            self.assertEqual(c, first_rung[config_id])

    def test_an_enqueued_config_answers_the_asks_that_fit_it(self):
        d = self.d
        study = empty_study(d)
        enqueue = "/v1/studies/%d/trials" % study["id"]
        check_status(self, d.request("POST", enqueue, {"config": {"classifier": "rf", "rf_max_depth": 8}}), 201)
        check_status(self, d.request("POST", enqueue, {"config": {"classifier": "svc", "svc_c": 5000.0}}), 201)
        body = check_status(self, d.request("POST", enqueue, {"config": {"classifier": {"a": 1}}}), 400)
        self.assertEqual(body["error"]["field"], "config.classifier")
        first = suggest(d, study["id"])[0]
        self.assertEqual(first["origin"], "enqueued")
        self.assertEqual(value_of(self, d, first["id"], CLASSIFIER), "rf")
        self.assertEqual(value_of(self, d, first["id"], RF_DEPTH), 8)
        second = suggest(d, study["id"])[0]
        self.assertEqual(value_of(self, d, second["id"], CLASSIFIER), "svc")
        c = value_of(self, d, second["id"], SVC_C)
        self.assertNotEqual(c, 5000.0, "outside the asked definition: drawn instead")
        self.assertTrue(1e-3 <= c <= 1e3)
        complete(self, d, first["id"], 0.1)
        complete(self, d, second["id"], 0.2)
        body = check_status(self, d.request("GET", "/v1/studies/%d" % study["id"]), 200)
        self.assertEqual([p["name"] for p in body["asked_parameters"]], ["classifier", "rf_max_depth", "svc_c"])
        # a study with a declared space and nothing asked still refuses unknown names (typos)
        fixed = create_study(d)
        body = check_status(self, d.request("POST", "/v1/studies/%d/trials" % fixed["id"],
                                            {"config": {"x": 0.5, "k": "a", "typo": 1}}), 400)
        self.assertEqual(body["error"]["field"], "config.typo")

    def test_an_enqueued_value_outside_the_definition_another_trial_gave_is_drawn_anew(self):
        d = self.d
        study = empty_study(d)
        first = suggest(d, study["id"])[0]
        # enqueued while the study does not know svc_c: any scalar is taken...
        check_status(self, d.request("POST", "/v1/studies/%d/trials" % study["id"],
                                     {"config": {"svc_c": 5000.0}}), 201)
        second = suggest(d, study["id"])[0]
        self.assertEqual(second["origin"], "enqueued")
        value_of(self, d, first["id"], SVC_C)  # ...then another trial defines it first
        c = value_of(self, d, second["id"], SVC_C)
        self.assertTrue(1e-3 <= c <= 1e3, c)
        self.assertEqual(value_of(self, d, second["id"], SVC_C), c, "and kept")

    def test_if_exists_load_finds_a_study_whose_space_grew(self):
        d = self.d
        body = bdtest.study_body(name=unique_name("grown"), scheduler={"name": "tpe"}, if_exists="load")
        del body["parameters"]
        study = bdtest.expect(d.request("POST", "/v1/studies", body), 201, "create")
        trial = suggest(d, study["id"])[0]
        value_of(self, d, trial["id"], CLASSIFIER)
        again = bdtest.expect(d.request("POST", "/v1/studies", body), 200, "load after an ask")
        self.assertEqual(again["id"], study["id"])

    def test_values_and_the_grown_space_survive_a_restart(self):
        d = bdtest.Daemon()
        self.addCleanup(d.cleanup)
        study = empty_study(d)
        trials = []
        for i in range(6):
            trial = suggest(d, study["id"])[0]
            trials.append((trial["id"], conditional_objective(self, d, trial)))
        open_trial = suggest(d, study["id"])[0]
        kind = value_of(self, d, open_trial["id"], CLASSIFIER)
        for trial_id, value in trials:
            complete(self, d, trial_id, value)
        before = check_status(self, d.request("GET", "/v1/studies/%d" % study["id"]), 200)
        configs = {t: check_status(self, d.request("GET", "/v1/trials/%d" % t), 200)["config"] for t, _ in trials}
        d.kill()
        d.start()
        after = check_status(self, d.request("GET", "/v1/studies/%d" % study["id"]), 200)
        self.assertEqual(after["asked_parameters"], before["asked_parameters"])
        for t, config in configs.items():
            self.assertEqual(check_status(self, d.request("GET", "/v1/trials/%d" % t), 200)["config"], config)
        self.assertEqual(value_of(self, d, open_trial["id"], CLASSIFIER), kind, "read back, not drawn again")


class TpeLearnsAskedParameters(bdtest.DaemonTestCase):
    """The tpe scheduler draws an asked parameter from TPE's univariate
    estimator over the finished trials that have it: on a conditional
    objective it ends closer to the optimum than uniform draws, seed by
    seed, in the same run (a margin, not an absolute score)."""

    def test_tpe_beats_random_draws_on_a_conditional_space(self):
        d = bdtest.Daemon()
        self.addCleanup(d.cleanup)
        wins = 0
        for seed in range(3):
            best = {}
            for name in ("tpe", "random"):
                study = empty_study(d, scheduler={"name": name}, seed=seed)
                values = []
                for _ in range(50):
                    trial = suggest(d, study["id"])[0]
                    value = conditional_objective(self, d, trial)
                    complete(self, d, trial["id"], value)
                    values.append(value)
                best[name] = sorted(values[25:])[12]  # the median of the later half
            wins += best["tpe"] < best["random"]
        self.assertGreaterEqual(wins, 2, "TPE ahead of uniform draws in at least 2 of 3 seeds")


if __name__ == "__main__":
    unittest.main()
