"""Trials a user gives a study (issue 17): POST /v1/studies/{id}/trials.

{"config"} enqueues a config that the next suggest hands out in place of a fresh
one, at the budget the scheduler chose (Optuna's enqueue_trial); {"config",
"value"[, "budget"]} stores a completed trial at once, a warm start (Optuna's
add_trial), which model-based schedulers learn from. Both survive a restart, both
are idempotent, and a restart replays them to the same decisions."""

import os
import sys
import unittest

import bdtest
from bdtest import check_status, create_study, suggest, unique_name

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("BD_SOURCE_DIR") or os.path.join(HERE, "..", ".."),
                                "clients", "python"))
from banditd.client import BanditdError, Client  # noqa: E402

PARAMS = [
    {"name": "lr", "type": "float", "low": 1e-4, "high": 1.0, "log": True},
    {"name": "layers", "type": "int", "low": 1, "high": 4},
    {"name": "opt", "type": "categorical", "choices": ["sgd", "adam"]},
]
CFG_A = {"lr": 0.01, "layers": 2, "opt": "adam"}
CFG_B = {"lr": 0.5, "layers": 4, "opt": "sgd"}


def add(d, study_id, body, token=bdtest.ADMIN, headers=None):
    return d.request("POST", "/v1/studies/%d/trials" % study_id, body, token=token, headers=headers)


def get_study(d, study_id):
    st, body, _ = d.request("GET", "/v1/studies/%d" % study_id)
    assert st == 200, body
    return body


class Enqueue(bdtest.DaemonTestCase):
    def setUp(self):
        self.d = bdtest.Daemon()
        self.addCleanup(self.d.cleanup)

    def study(self, scheduler, **kw):
        return create_study(self.d, parameters=PARAMS, scheduler=scheduler, **kw)["id"]

    def test_enqueued_configs_are_handed_out_first_in_order_and_survive_a_restart(self):
        sid = self.study({"name": "random", "options": {"max_trials": 100}})
        first = check_status(self, add(self.d, sid, {"config": CFG_A}), 201)
        self.assertEqual(first, {"state": "enqueued", "config": CFG_A, "position": 1})
        self.assertEqual(check_status(self, add(self.d, sid, {"config": CFG_B}), 201)["position"], 2)
        self.assertEqual(get_study(self.d, sid)["enqueued"], 2)
        self.d.restart()
        self.assertEqual(get_study(self.d, sid)["enqueued"], 2, "the queue is stored")
        (t1,) = suggest(self.d, sid)
        self.d.restart()  # the hand-out is stored too: A is not handed out again
        (t2,) = suggest(self.d, sid)
        (t3,) = suggest(self.d, sid)
        self.assertEqual((t1["config"], t1["origin"]), (CFG_A, "enqueued"))
        self.assertEqual((t2["config"], t2["origin"]), (CFG_B, "enqueued"))
        self.assertEqual(t3["origin"], "suggested")
        self.assertNotIn(t3["config"], (CFG_A, CFG_B))
        self.assertEqual(get_study(self.d, sid)["enqueued"], 0)
        got = check_status(self, self.d.request("GET", "/v1/trials/%d" % t1["id"]), 200)
        self.assertEqual(got["origin"], "enqueued")

    def test_hyperband_hands_an_enqueued_config_out_at_its_first_rung(self):
        sid = self.study({"name": "hyperband", "options": {"eta": 3}},
                         resource={"name": "epochs", "min": 1, "max": 27})
        twin = self.study({"name": "hyperband", "options": {"eta": 3}},
                          resource={"name": "epochs", "min": 1, "max": 27})
        check_status(self, add(self.d, sid, {"config": CFG_A}), 201)
        (t,) = suggest(self.d, sid)
        (u,) = suggest(self.d, twin)
        self.assertEqual(t["config"], CFG_A)
        self.assertEqual(t["budget"], u["budget"], "the scheduler's budget for a new config")
        self.assertEqual(t["scheduler"], u["scheduler"], "the scheduler's bracket and rung")
        self.assertLess(t["budget"], 27)

    def test_a_warm_start_is_a_completed_trial_that_tpe_learns_from_and_a_restart_replays(self):
        body = {"name": "tpe", "options": {"n_startup_trials": 3}}
        sid, twin = self.study(body, seed=5), self.study(body, seed=5)
        warm = [({"lr": 0.001 * (i + 1), "layers": 1 + i % 4, "opt": "adam"}, 0.1 + 0.05 * i) for i in range(5)]
        for s in (sid, twin):
            for cfg, v in warm:
                t = check_status(self, add(self.d, s, {"config": cfg, "value": v}), 201)
                self.assertEqual((t["state"], t["origin"], t["value"], t["config"]),
                                 ("completed", "warm_start", v, cfg))
        st = get_study(self.d, sid)
        self.assertEqual(st["trials"]["completed"], 5)
        self.assertEqual(st["used"]["trials"], 0, "warm starts use none of the study's limits")
        self.assertEqual(st["incumbent"]["config"], warm[0][0])
        self.assertEqual(sum(st["scheduler"]["state"]["model"]["results"].values()), 5, "tpe fitted them")
        self.d.restart()
        self.assertEqual(get_study(self.d, sid)["scheduler"], st["scheduler"], "replayed to the same state")
        # Past n_startup_trials, TPE proposes from the warm starts: the same
        # proposal with and without a restart in between.
        self.assertEqual(suggest(self.d, sid)[0]["config"], suggest(self.d, twin)[0]["config"])

    def test_gp_ucb_takes_warm_starts_as_observations(self):
        sid = self.study({"name": "gp_ucb", "options": {"n_init": 2}})
        for i in range(3):
            check_status(self, add(self.d, sid, {"config": dict(CFG_A, layers=i + 1), "value": float(i)}), 201)
        self.assertEqual(get_study(self.d, sid)["scheduler"]["state"]["observations"], 3)

    def test_a_multi_fidelity_warm_start_takes_a_budget(self):
        sid = self.study({"name": "asha", "options": {}}, resource={"name": "epochs", "min": 1, "max": 27})
        t = check_status(self, add(self.d, sid, {"config": CFG_A, "value": 0.3, "budget": 9}), 201)
        self.assertEqual(t["budget"], 9)
        t = check_status(self, add(self.d, sid, {"config": CFG_B, "value": 0.2}), 201)
        self.assertEqual(t["budget"], 27, "resource.max by default")
        self.assertEqual(get_study(self.d, sid)["incumbent_full_budget"]["trial_id"], t["id"])

    def test_a_repeated_idempotency_key_enqueues_once(self):
        sid = self.study({"name": "random", "options": {}})
        h = {"Idempotency-Key": unique_name("k")}
        a = check_status(self, add(self.d, sid, {"config": CFG_A}, headers=h), 201)
        b = check_status(self, add(self.d, sid, {"config": CFG_A}, headers=h), 201)
        self.assertEqual(a, b)
        self.assertEqual(get_study(self.d, sid)["enqueued"], 1)

    def test_refusals(self):
        sid = self.study({"name": "random", "options": {"max_trials": 1}})
        self.assertError(add(self.d, sid, {}), 400, "invalid_argument", "config")
        self.assertError(add(self.d, sid, {"config": dict(CFG_A, lr=2.0)}), 400, "invalid_argument", "config.lr")
        self.assertError(add(self.d, sid, {"config": CFG_A, "value": "x"}), 400, "invalid_argument", "value")
        self.assertError(add(self.d, sid, {"config": CFG_A, "budget": 3}), 400, "invalid_argument", "budget")
        self.assertError(add(self.d, sid, {"config": CFG_A, "value": 1, "budget": 3}), 400, "invalid_argument",
                         "budget")
        (t,) = suggest(self.d, sid)
        check_status(self, self.d.request("POST", "/v1/trials/%d/complete" % t["id"], {"value": 1}), 200)
        self.assertError(add(self.d, sid, {"config": CFG_A}), 409, "conflict", "config",
                         what="a done study: nothing would hand the config out")
        other = bdtest.create_user(self.d, unique_name("u"))
        self.assertError(add(self.d, sid, {"config": CFG_A}, token=other), 404, "not_found", check_field=False)
        spc = create_study(self.d, parameters=[{"name": "s", "type": "categorical", "choices": ["a", "b"]}],
                           resource={"name": "seconds", "min": 1, "max": 8}, instances=["i1", "i2"],
                           objective={"metric": "runtime", "goal": "minimize"},
                           scheduler={"name": "spc", "options": {}})["id"]
        self.assertError(add(self.d, spc, {"config": {"s": "a"}}), 400, "invalid_argument", "config")
        self.assertError(add(self.d, spc, {"config": {"s": "a"}, "value": 1}), 400, "invalid_argument", "value")

    def test_a_value_is_stored_as_its_parameter_type(self):
        # Issue 42: {"layers": 2.0} for an int parameter was stored as sent and
        # the worker's suggest handed out 2.0. A whole real is accepted (as the
        # space's own int bounds and "when" values are) and stored as the
        # integer; a float parameter's value as a real; a categorical's as the
        # choice itself. Python reads 2.0 as a float, so the types are checked.
        params = PARAMS + [{"name": "width", "type": "categorical", "choices": [16, 32, 0.5]}]
        sid = create_study(self.d, parameters=params, scheduler={"name": "random", "options": {}})["id"]
        raw = '{"config": {"lr": 1, "layers": 2.0, "opt": "adam", "width": 32.0}}'
        want = {"lr": 1.0, "layers": 2, "opt": "adam", "width": 32}

        def check(config, what):
            self.assertEqual(config, want, what)
            self.assertEqual({k: type(v) for k, v in config.items()},
                             {"lr": float, "layers": int, "opt": str, "width": int}, what)

        st, body, _ = self.d.request("POST", "/v1/studies/%d/trials" % sid, raw_body=raw)
        self.assertEqual(st, 201, body)
        check(body["config"], "the enqueue's answer")
        st, warm, _ = self.d.request("POST", "/v1/studies/%d/trials" % sid, raw_body=raw[:-1] + ', "value": 0.5}')
        self.assertEqual(st, 201, warm)
        check(warm["config"], "the warm start's answer")
        (t,) = suggest(self.d, sid)
        self.assertEqual(t["origin"], "enqueued")
        check(t["config"], "the config the worker is handed")
        self.d.restart()
        for tid in (t["id"], warm["id"]):
            check(check_status(self, self.d.request("GET", "/v1/trials/%d" % tid), 200)["config"], "stored")
        self.assertError(add(self.d, sid, {"config": dict(want, layers=2.5)}), 400, "invalid_argument",
                         "config.layers")

    def test_fixed_configs_are_handed_out_in_canonical_form_too(self):
        # The other configs a user writes (issue 42): spc's and caps_race's
        # options.configs reached the worker as written, 2.0 for an int.
        for sched in ("spc", "caps_race"):
            with self.subTest(sched):
                sid = create_study(self.d, parameters=[{"name": "n", "type": "int", "low": 1, "high": 4}],
                                   resource={"name": "seconds", "min": 1, "max": 8}, instances=["i1", "i2"],
                                   objective={"metric": "runtime", "goal": "minimize"},
                                   scheduler={"name": sched, "options": {"configs": [{"n": 2.0}, {"n": 3}]}})["id"]
                handed = [t["config"]["n"] for t in suggest(self.d, sid, count=2)]
                self.assertIn(2, handed)
                self.assertEqual({type(n) for n in handed}, {int}, handed)

    def test_a_value_enqueued_before_its_parameter_was_asked_is_handed_out_canonical(self):
        # A define-by-run study keeps a value for a name it does not know yet
        # as sent; the trial that asks for it as an int gets 2, not 2.0.
        sid = create_study(self.d, parameters=[], scheduler={"name": "random", "options": {}})["id"]
        for _ in range(2):
            st, body, _ = self.d.request("POST", "/v1/studies/%d/trials" % sid,
                                         raw_body='{"config": {"layers": 2.0, "k": 4.0}}')
            self.assertEqual(st, 201, body)
        asks = [{"name": "layers", "type": "int", "low": 1, "high": 4},
                {"name": "k", "type": "categorical", "choices": [1, 4, 0.5]}]
        for i in range(2):  # the first trial's ask grows the space; the second's finds the names known
            (t,) = suggest(self.d, sid)
            for ask, want in zip(asks, (2, 4)):
                got = check_status(self, self.d.request("POST", "/v1/trials/%d/parameters" % t["id"], ask), 200)
                self.assertEqual((got["value"], type(got["value"])), (want, int), "trial %d: %r" % (i, got))
            config = check_status(self, self.d.request("GET", "/v1/trials/%d" % t["id"]), 200)["config"]
            self.assertEqual({k: type(v) for k, v in config.items()}, {"layers": int, "k": int}, config)

    def test_the_queue_is_bounded(self):
        sid = self.study({"name": "random", "options": {}})
        c = self.d.client()
        for i in range(1000):
            st, body, _ = c.request("POST", "/v1/studies/%d/trials" % sid, {"config": dict(CFG_A, lr=0.001 + i * 1e-4)})
            self.assertEqual(st, 201, body)
        self.assertError(add(self.d, sid, {"config": CFG_A}), 409, "conflict", "config")

    def test_the_python_client(self):
        c = Client("http://127.0.0.1:%d" % self.d.port, self.d.token)
        sid = self.study({"name": "tpe", "options": {}})
        self.assertEqual(c.enqueue_trial(sid, CFG_B)["position"], 1)
        self.assertEqual(c.add_trial(sid, CFG_A, 0.25)["origin"], "warm_start")
        self.assertEqual(c.suggest(sid)["trials"][0]["config"], CFG_B)
        with self.assertRaises(BanditdError) as e:
            c.add_trial(sid, {"lr": 0.1}, 1.0)
        self.assertEqual(e.exception.status, 400)


if __name__ == "__main__":
    unittest.main()
