"""Bad requests, table-driven: each row is (method, path, headers, raw body) and
the expected status, error code and, where the contract implies one, the error
field. Every error answer must be {"error": {"code", "message", "field"}}, the
rejected requests must change nothing, and the daemon must still serve
afterwards.

Field expectations: the contract names fields by their JSON path
("parameters[0].low", "scheduler.name", "count", "objective.goal",
"scheduler.options.<name>" from sched.h) and says field is null when an error
is not about one field (so JSON syntax errors expect null). Where the contract
does not say which field (e.g. low >= high may blame low or high, query string
parameters, whole-body type errors) the row uses ANY (status, code and shape
only) or a PREFIX of the path."""

import json
import os
import sys
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bdtest  # noqa: E402
from bdtest import check_status, create_study, suggest  # noqa: E402

ANY = object()   # field not checked (the contract is silent)
NULL = None      # field must be null


class PREFIX(str):
    """The field must start with this JSON path."""


def J(obj):
    return json.dumps(obj)


def base_study():
    return {
        "name": "bad",
        "parameters": [
            {"name": "x", "type": "float", "low": 0, "high": 1},
            {"name": "algo", "type": "categorical", "choices": ["svm", "rf"]},
        ],
        "objective": {"metric": "loss", "goal": "minimize"},
        "scheduler": {"name": "random", "options": {}},
    }


def study(**top):
    """The base study with top-level keys replaced (value None deletes the key)."""
    b = base_study()
    for k, v in top.items():
        if v is None:
            b.pop(k, None)
        else:
            b[k] = v
    return J(b)


def params(*ps):
    return study(parameters=list(ps))


def with_param(i, **changes):
    """The base study with parameter i changed (value None deletes the key)."""
    b = base_study()
    for k, v in changes.items():
        if v is None:
            b["parameters"][i].pop(k, None)
        else:
            b["parameters"][i][k] = v
    return J(b)


X = {"name": "x", "type": "float", "low": 0, "high": 1}
ALGO = {"name": "algo", "type": "categorical", "choices": ["svm", "rf"]}


def rows(sid, tid, ctid, ftid, revoked, user):
    """tid takes the measurement rows, ctid the complete rows, ftid the fail rows, so
    one wrongly accepted request does not turn the rows after it into 409s."""
    S = "/v1/studies"
    M = "/v1/trials/%d/measurements" % tid
    P = "/v1/trials/%d/parameters" % tid
    C = "/v1/trials/%d/complete" % ctid
    SUG = "/v1/studies/%d/suggest" % sid
    TR = "/v1/studies/%d/trials" % sid
    return [
        # ---- JSON syntax (not about one field: null) ----
        ("malformed", "POST", S, {}, '{"name": "a",,}', 400, "invalid_argument", NULL),
        ("truncated", "POST", S, {}, study()[:-7], 400, "invalid_argument", NULL),
        ("trailing garbage", "POST", S, {}, study() + " x", 400, "invalid_argument", NULL),
        ("single quotes", "POST", S, {}, "{'name': 'a'}", 400, "invalid_argument", NULL),
        ("bare word", "POST", S, {}, "hello", 400, "invalid_argument", NULL),
        ("empty body", "POST", S, {}, "", 400, "invalid_argument", ANY),
        ("array body", "POST", S, {}, "[1, 2]", 400, "invalid_argument", ANY),
        ("string body", "POST", S, {}, '"study"', 400, "invalid_argument", ANY),
        ("null body", "POST", S, {}, "null", 400, "invalid_argument", ANY),
        ("invalid utf-8", "POST", S, {}, study(name="N").encode().replace(b'"N"', b'"\xff\xfe"'), 400,
         "invalid_argument", ANY),
        ("deep nesting", "POST", S, {}, "[" * 100000, 400, "invalid_argument", ANY),
        ("array body to suggest", "POST", SUG, {}, "[]", 400, "invalid_argument", ANY),
        ("array body to measurement", "POST", M, {}, "[1]", 400, "invalid_argument", ANY),
        # ---- non-finite numbers (invalid_argument per the contract; field unspecified) ----
        ("NaN value", "POST", M, {}, '{"step": 1, "value": NaN}', 400, "invalid_argument", ANY),
        ("Infinity value", "POST", M, {}, '{"step": 1, "value": Infinity}', 400, "invalid_argument", ANY),
        ("-Infinity value", "POST", M, {}, '{"step": 1, "value": -Infinity}', 400, "invalid_argument", ANY),
        ("nan lowercase", "POST", M, {}, '{"step": 1, "value": nan}', 400, "invalid_argument", ANY),
        ("overflowing value", "POST", M, {}, '{"step": 1, "value": 1e999}', 400, "invalid_argument", ANY),
        ("NaN step", "POST", M, {}, '{"step": NaN, "value": 1}', 400, "invalid_argument", ANY),
        ("NaN complete", "POST", C, {}, '{"value": NaN}', 400, "invalid_argument", ANY),
        ("Infinity bound", "POST", S, {}, study().replace('"high": 1', '"high": Infinity'), 400,
         "invalid_argument", ANY),
        # ---- a parameter asked for by a running trial (define-by-run) ----
        ("ask redefines x", "POST", P, {}, J(dict(X, high=2)), 400, "invalid_argument", "high"),
        ("ask redefines k", "POST", P, {}, J({"name": "k", "type": "categorical", "choices": ["a"]}), 400,
         "invalid_argument", "choices"),
        ("ask redefines k as int", "POST", P, {}, J({"name": "k", "type": "int", "low": 0, "high": 2}), 400,
         "invalid_argument", "type"),
        ("ask name too long", "POST", P, {}, J(dict(X, name="n" * 101)), 400, "invalid_argument", "name"),
        ("ask without name", "POST", P, {}, J({"type": "float", "low": 0, "high": 1}), 400, "invalid_argument",
         "name"),
        ("ask low above high", "POST", P, {}, J({"name": "y", "type": "float", "low": 2, "high": 1}), 400,
         "invalid_argument", "high"),
        ("ask log from zero", "POST", P, {}, J({"name": "y", "type": "float", "low": 0, "high": 1, "log": True}),
         400, "invalid_argument", "low"),
        ("ask int bound real", "POST", P, {}, J({"name": "y", "type": "int", "low": 0.5, "high": 3}), 400,
         "invalid_argument", "low"),
        ("ask unknown type", "POST", P, {}, J({"name": "y", "type": "uniform", "low": 0, "high": 1}), 400,
         "invalid_argument", "type"),
        ("ask with when", "POST", P, {}, J({"name": "y", "type": "int", "low": 0, "high": 3, "when": {"algo": ["rf"]}}),
         400, "invalid_argument", "when"),
        ("ask unknown key", "POST", P, {}, J(dict(X, name="y", step=0.1)), 400, "invalid_argument", "step"),
        ("ask array body", "POST", P, {}, "[1]", 400, "invalid_argument", ANY),
        ("ask infinite bound", "POST", P, {}, '{"name": "y", "type": "float", "low": 0, "high": Infinity}', 400,
         "invalid_argument", ANY),
        # ---- measurement / complete / fail fields ----
        ("measurement missing step", "POST", M, {}, J({"value": 0.5}), 400, "invalid_argument", "step"),
        ("measurement missing value", "POST", M, {}, J({"step": 1}), 400, "invalid_argument", "value"),
        ("measurement step string", "POST", M, {}, J({"step": "one", "value": 0.5}), 400, "invalid_argument",
         "step"),
        ("measurement value string", "POST", M, {}, J({"step": 1, "value": "low"}), 400, "invalid_argument",
         "value"),
        ("measurement elapsed string", "POST", M, {}, J({"step": 1, "value": 0.5, "elapsed_seconds": "x"}),
         400, "invalid_argument", "elapsed_seconds"),
        ("complete empty", "POST", C, {}, "{}", 400, "invalid_argument", ANY),
        ("complete value string", "POST", C, {}, J({"value": "good"}), 400, "invalid_argument", "value"),
        ("complete bad status", "POST", C, {}, J({"status": "bogus"}), 400, "invalid_argument", "status"),
        ("fail reason number", "POST", "/v1/trials/%d/fail" % ftid, {}, J({"reason": 5}), 400,
         "invalid_argument", "reason"),
        # ---- wrong types ----
        ("name number", "POST", S, {}, study(name=5), 400, "invalid_argument", "name"),
        ("name empty", "POST", S, {}, study(name=""), 400, "invalid_argument", "name"),
        ("parameters object", "POST", S, {}, study(parameters={}), 400, "invalid_argument", "parameters"),
        ("parameters empty, gp_ucb", "POST", S, {}, study(parameters=[], scheduler={"name": "gp_ucb"}), 400,
         "invalid_argument", PREFIX("parameters")),
        ("parameter not object", "POST", S, {}, study(parameters=["x"]), 400, "invalid_argument",
         PREFIX("parameters[0]")),
        ("low string", "POST", S, {}, with_param(0, low="a"), 400, "invalid_argument", "parameters[0].low"),
        ("high list", "POST", S, {}, with_param(0, high=[]), 400, "invalid_argument", "parameters[0].high"),
        ("log string", "POST", S, {}, with_param(0, log="yes"), 400, "invalid_argument", "parameters[0].log"),
        ("seed string", "POST", S, {}, study(seed="abc"), 400, "invalid_argument", "seed"),
        ("lease string", "POST", S, {}, study(lease_seconds="long"), 400, "invalid_argument", "lease_seconds"),
        ("lease negative", "POST", S, {}, study(lease_seconds=-5), 400, "invalid_argument", "lease_seconds"),
        ("scheduler string", "POST", S, {}, study(scheduler="random"), 400, "invalid_argument",
         PREFIX("scheduler")),
        ("objective string", "POST", S, {}, study(objective="minimize"), 400, "invalid_argument",
         PREFIX("objective")),
        ("resource min string", "POST", S, {}, study(resource={"name": "e", "min": "a", "max": 3}), 400,
         "invalid_argument", "resource.min"),
        ("resource integer string", "POST", S, {}, study(resource={"name": "e", "min": 1, "max": 3,
                                                                    "integer": "yes"}),
         400, "invalid_argument", "resource.integer"),
        # ---- objective, resource, instances, limits (core v2): no silent defaults ----
        ("missing objective", "POST", S, {}, study(objective=None), 400, "invalid_argument", "objective.goal"),
        ("missing goal", "POST", S, {}, study(objective={"metric": "acc"}), 400, "invalid_argument",
         "objective.goal"),
        ("bounds reversed", "POST", S, {}, study(objective={"goal": "minimize", "bounds": [1, 0]}), 400,
         "invalid_argument", "objective.bounds"),
        ("bounds one number", "POST", S, {}, study(objective={"goal": "minimize", "bounds": [1]}), 400,
         "invalid_argument", "objective.bounds"),
        ("bounds strings", "POST", S, {}, study(objective={"goal": "minimize", "bounds": ["0", "1"]}), 400,
         "invalid_argument", "objective.bounds"),
        ("hyperband without resource", "POST", S, {}, study(scheduler={"name": "hyperband"}), 400,
         "invalid_argument", "resource"),
        ("limits not object", "POST", S, {}, study(limits=5), 400, "invalid_argument", "limits"),
        ("limits trials 0", "POST", S, {}, study(limits={"trials": 0}), 400, "invalid_argument", "limits.trials"),
        ("limits trials huge", "POST", S, {}, study(limits={"trials": 10 ** 12}), 400, "invalid_argument",
         "limits.trials"),
        ("limits trials float", "POST", S, {}, study(limits={"trials": 2.5}), 400, "invalid_argument",
         "limits.trials"),
        ("limits resource 0", "POST", S, {}, study(limits={"resource": 0}), 400, "invalid_argument",
         "limits.resource"),
        ("limits seconds string", "POST", S, {}, study(limits={"seconds": "1h"}), 400, "invalid_argument",
         "limits.seconds"),
        ("limits typo", "POST", S, {}, study(limits={"trails": 5}), 400, "invalid_argument", "limits.trails"),
        ("instances empty", "POST", S, {}, study(instances=[]), 400, "invalid_argument", "instances"),
        ("instances not list", "POST", S, {}, study(instances="a.cnf"), 400, "invalid_argument", "instances"),
        ("instance number", "POST", S, {}, study(instances=["a", 3]), 400, "invalid_argument", "instances[1]"),
        ("instance repeated", "POST", S, {}, study(instances=["a", "b", "a"]), 400, "invalid_argument",
         "instances[2]"),
        ("instance too long", "POST", S, {}, study(instances=["x" * 4097]), 400, "invalid_argument",
         "instances[0]"),
        ("instances too many", "POST", S, {}, study(instances=[str(i) for i in range(100001)]), 400,
         "invalid_argument", "instances"),
        ("NUL in a name", "POST", S, {}, study().replace('"bad"', '"b\\u0000ad"'), 400, "invalid_argument",
         ANY),
        ("1001 parameters", "POST", S, {}, params(*[{"name": "p%d" % i, "type": "float", "low": 0, "high": 1}
                                                    for i in range(1001)]),
         400, "invalid_argument", "parameters"),
        ("instance filter negative", "GET", "/v1/studies/%d/trials?instance=-1" % sid, {}, None, 400,
         "invalid_argument", "instance"),
        ("instance filter beyond", "GET", "/v1/studies/%d/trials?instance=0" % sid, {}, None, 400,
         "invalid_argument", "instance"),
        # ---- missing required fields ----
        ("missing name", "POST", S, {}, study(name=None), 400, "invalid_argument", "name"),
        ("missing parameters, gp_ucb", "POST", S, {}, study(parameters=None, scheduler={"name": "gp_ucb"}), 400,
         "invalid_argument", "parameters"),
        ("asked_parameters not a list", "POST", S, {}, study(asked_parameters={}), 400, "invalid_argument",
         "asked_parameters"),
        ("asked_parameters repeat a declared one", "POST", S, {}, study(asked_parameters=[X]), 400,
         "invalid_argument", "asked_parameters[0]"),
        ("asked_parameters with when", "POST", S, {},
         study(asked_parameters=[{"name": "y", "type": "int", "low": 0, "high": 3, "when": {"algo": ["rf"]}}]),
         400, "invalid_argument", "asked_parameters[0].when.algo"),
        # issue 40: a study without "scheduler" gets auto's choice (server/auto_scheduler.h); what stays bad
        ("missing scheduler, bad resource", "POST", S, {}, study(scheduler=None, resource={"min": 0, "max": 27}),
         400, "invalid_argument", PREFIX("resource")),
        ("auto with options", "POST", S, {}, study(scheduler={"name": "auto", "options": {"eta": 3}}), 400,
         "invalid_argument", "scheduler.options"),
        ("auto with chosen_by", "POST", S, {}, study(scheduler={"name": "auto", "chosen_by": "auto"}), 400,
         "invalid_argument", "scheduler.chosen_by"),
        ("chosen_by not auto", "POST", S, {}, study(scheduler={"name": "tpe", "chosen_by": "me"}), 400,
         "invalid_argument", "scheduler.chosen_by"),
        ("why not a string", "POST", S, {}, study(scheduler={"name": "tpe", "why": ["x"]}), 400,
         "invalid_argument", "scheduler.why"),
        ("why too long", "POST", S, {}, study(scheduler={"name": "tpe", "why": "w" * 1001}), 400,
         "invalid_argument", "scheduler.why"),
        ("asha fidelity unknown", "POST", S, {},
         study(scheduler={"name": "asha", "options": {"fidelity": "guessed"}}, resource={"min": 1, "max": 27}),
         400, "invalid_argument", "scheduler.options.fidelity"),
        ("asha fidelity measured without the full bracket", "POST", S, {},
         study(scheduler={"name": "asha", "options": {"fidelity": "measured", "brackets": 2}},
               resource={"min": 1, "max": 27}),
         400, "invalid_argument", "scheduler.options.brackets"),
        ("asha fidelity winners without the full bracket", "POST", S, {},
         study(scheduler={"name": "asha", "options": {"fidelity": "winners", "s": 1, "brackets": 1}},
               resource={"min": 1, "max": 27}),
         400, "invalid_argument", "scheduler.options.brackets"),
        ("asha fidelity winners not a string", "POST", S, {},
         study(scheduler={"name": "asha", "options": {"fidelity": ["winners"]}}, resource={"min": 1, "max": 27}),
         400, "invalid_argument", "scheduler.options.fidelity"),
        ("missing scheduler.name", "POST", S, {}, study(scheduler={"options": {}}), 400, "invalid_argument",
         "scheduler.name"),
        # issue 20: the test-only scheduler is not in the banditd users run
        ("the test-only scheduler", "POST", S, {}, study(scheduler={"name": "test_sleep"}), 400, "invalid_argument",
         "scheduler.name"),
        ("parameter missing name", "POST", S, {}, with_param(0, name=None), 400, "invalid_argument",
         "parameters[0].name"),
        ("parameter missing type", "POST", S, {}, with_param(0, type=None), 400, "invalid_argument",
         "parameters[0].type"),
        ("float missing low", "POST", S, {}, with_param(0, low=None), 400, "invalid_argument",
         "parameters[0].low"),
        ("categorical missing choices", "POST", S, {}, with_param(1, choices=None), 400, "invalid_argument",
         "parameters[1].choices"),
        # ---- invalid spaces ----
        ("low == high", "POST", S, {}, with_param(0, low=1, high=1), 400, "invalid_argument",
         PREFIX("parameters[0]")),
        ("low > high", "POST", S, {}, with_param(0, low=2, high=1), 400, "invalid_argument",
         PREFIX("parameters[0]")),
        ("int low > high", "POST", S, {}, params({"name": "n", "type": "int", "low": 5, "high": 2}), 400,
         "invalid_argument", PREFIX("parameters[0]")),
        ("log low 0", "POST", S, {}, with_param(0, low=0, high=1, log=True), 400, "invalid_argument",
         PREFIX("parameters[0]")),
        ("log low negative", "POST", S, {}, with_param(0, low=-1, high=1, log=True), 400, "invalid_argument",
         PREFIX("parameters[0]")),
        ("empty choices", "POST", S, {}, with_param(1, choices=[]), 400, "invalid_argument",
         PREFIX("parameters[1].choices")),
        ("duplicate choices", "POST", S, {}, with_param(1, choices=["a", "a"]), 400, "invalid_argument",
         PREFIX("parameters[1].choices")),
        ("object choice", "POST", S, {}, with_param(1, choices=[{"a": 1}]), 400, "invalid_argument",
         PREFIX("parameters[1].choices")),
        ("duplicate names", "POST", S, {}, params(X, dict(X, low=0.5)), 400, "invalid_argument",
         PREFIX("parameters[1]")),
        ("unknown type", "POST", S, {}, with_param(0, type="double"), 400, "invalid_argument",
         "parameters[0].type"),
        ("when unknown parent", "POST", S, {}, params(X, ALGO, dict(X, name="C", when={"kernel": ["rbf"]})),
         400, "invalid_argument", PREFIX("parameters[2].when")),
        ("when parent declared later", "POST", S, {}, params(dict(X, name="C", when={"algo": ["svm"]}), ALGO),
         400, "invalid_argument", PREFIX("parameters[0].when")),
        ("when on a float parent", "POST", S, {}, params(X, ALGO, dict(X, name="C", when={"x": [0.5]})),
         400, "invalid_argument", PREFIX("parameters[2].when")),
        ("when value not a list", "POST", S, {}, params(X, ALGO, dict(X, name="C", when={"algo": "svm"})),
         400, "invalid_argument", PREFIX("parameters[2].when")),
        # ---- scheduler / objective / resource ----
        ("unknown scheduler", "POST", S, {}, study(scheduler={"name": "nope"}), 400, "invalid_argument",
         "scheduler.name"),
        ("scheduler name number", "POST", S, {}, study(scheduler={"name": 5}), 400, "invalid_argument",
         "scheduler.name"),
        ("unknown scheduler option", "POST", S, {}, study(scheduler={"name": "random", "options": {"bogus": 1}}),
         400, "invalid_argument", "scheduler.options.bogus"),
        ("negative max_trials", "POST", S, {}, study(scheduler={"name": "random", "options": {"max_trials": -3}}),
         400, "invalid_argument", "scheduler.options.max_trials"),
        ("string max_trials", "POST", S, {},
         study(scheduler={"name": "random", "options": {"max_trials": "ten"}}),
         400, "invalid_argument", "scheduler.options.max_trials"),
        # ---- the median / percentile stopping rule (option "stopping" of random, tpe, gp_ucb) ----
        ("stopping not an object", "POST", S, {}, study(scheduler={"name": "tpe", "options": {"stopping": "median"}}),
         400, "invalid_argument", "scheduler.options.stopping"),
        ("stopping rule unknown", "POST", S, {},
         study(scheduler={"name": "random", "options": {"stopping": {"rule": "mean"}}}),
         400, "invalid_argument", "scheduler.options.stopping.rule"),
        ("stopping percentile missing", "POST", S, {},
         study(scheduler={"name": "tpe", "options": {"stopping": {"rule": "percentile"}}}),
         400, "invalid_argument", "scheduler.options.stopping.percentile"),
        ("stopping percentile above 100", "POST", S, {},
         study(scheduler={"name": "gp_ucb", "options": {"stopping": {"rule": "percentile", "percentile": 250}}}),
         400, "invalid_argument", "scheduler.options.stopping.percentile"),
        ("stopping median with another percentile", "POST", S, {},
         study(scheduler={"name": "tpe", "options": {"stopping": {"rule": "median", "percentile": 25}}}),
         400, "invalid_argument", "scheduler.options.stopping.percentile"),
        ("stopping startup_trials negative", "POST", S, {},
         study(scheduler={"name": "tpe", "options": {"stopping": {"startup_trials": -1}}}),
         400, "invalid_argument", "scheduler.options.stopping.startup_trials"),
        ("stopping warmup_steps string", "POST", S, {},
         study(scheduler={"name": "tpe", "options": {"stopping": {"warmup_steps": "5"}}}),
         400, "invalid_argument", "scheduler.options.stopping.warmup_steps"),
        ("stopping interval_steps 0", "POST", S, {},
         study(scheduler={"name": "random", "options": {"stopping": {"interval_steps": 0}}}),
         400, "invalid_argument", "scheduler.options.stopping.interval_steps"),
        ("stopping min_trials 0", "POST", S, {},
         study(scheduler={"name": "tpe", "options": {"stopping": {"min_trials": 0}}}),
         400, "invalid_argument", "scheduler.options.stopping.min_trials"),
        ("stopping unknown key", "POST", S, {},
         study(scheduler={"name": "tpe", "options": {"stopping": {"patience": 3}}}),
         400, "invalid_argument", "scheduler.options.stopping.patience"),
        ("stopping on asha", "POST", S, {},
         study(scheduler={"name": "asha", "options": {"stopping": {"rule": "median"}}}, resource={"min": 1, "max": 27}),
         400, "invalid_argument", "scheduler.options.stopping"),
        # ---- the proposer's options (tpe, and "sampler" of successive_halving / hyperband / asha) ----
        ("unknown sampler", "POST", S, {},
         study(scheduler={"name": "hyperband", "options": {"sampler": "smac"}}, resource={"min": 1, "max": 27}),
         400, "invalid_argument", "scheduler.options.sampler"),
        ("sampler not a string", "POST", S, {},
         study(scheduler={"name": "asha", "options": {"sampler": ["tpe"]}}, resource={"min": 1, "max": 27}),
         400, "invalid_argument", "scheduler.options.sampler"),
        ("random_fraction above 1", "POST", S, {},
         study(scheduler={"name": "successive_halving", "options": {"random_fraction": 2}},
               resource={"min": 1, "max": 27}),
         400, "invalid_argument", "scheduler.options.random_fraction"),
        ("tpe with another sampler", "POST", S, {}, study(scheduler={"name": "tpe", "options": {"sampler": "random"}}),
         400, "invalid_argument", "scheduler.options.sampler"),
        ("tpe n_ei_candidates huge", "POST", S, {},
         study(scheduler={"name": "tpe", "options": {"n_ei_candidates": 10 ** 9}}),
         400, "invalid_argument", "scheduler.options.n_ei_candidates"),
        ("tpe n_startup_trials 0", "POST", S, {}, study(scheduler={"name": "tpe", "options": {"n_startup_trials": 0}}),
         400, "invalid_argument", "scheduler.options.n_startup_trials"),
        ("tpe gamma 0", "POST", S, {}, study(scheduler={"name": "tpe", "options": {"gamma": 0}}),
         400, "invalid_argument", "scheduler.options.gamma"),
        ("tpe prior_weight NaN-like string", "POST", S, {},
         study(scheduler={"name": "tpe", "options": {"prior_weight": "nan"}}),
         400, "invalid_argument", "scheduler.options.prior_weight"),
        ("tpe multivariate not a bool", "POST", S, {}, study(scheduler={"name": "tpe", "options": {"multivariate": 1}}),
         400, "invalid_argument", "scheduler.options.multivariate"),
        ("random with a sampler", "POST", S, {}, study(scheduler={"name": "random", "options": {"sampler": "tpe"}}),
         400, "invalid_argument", "scheduler.options.sampler"),
        ("cost_aware not a bool", "POST", S, {}, study(scheduler={"name": "tpe", "options": {"cost_aware": "no"}}),
         400, "invalid_argument", "scheduler.options.cost_aware"),
        ("gamma above 0.5", "POST", S, {},
         study(scheduler={"name": "hyperband", "options": {"gamma": 0.9}}, resource={"min": 1, "max": 27}),
         400, "invalid_argument", "scheduler.options.gamma"),
        ("asha promotion unknown", "POST", S, {},
         study(scheduler={"name": "asha", "options": {"promotion": "final"}}, resource={"min": 1, "max": 27}),
         400, "invalid_argument", "scheduler.options.promotion"),
        ("asha promotion_fraction unknown", "POST", S, {},
         study(scheduler={"name": "asha", "options": {"promotion_fraction": "half"}}, resource={"min": 1, "max": 27}),
         400, "invalid_argument", "scheduler.options.promotion_fraction"),
        ("asha promotion_fraction a number", "POST", S, {},
         study(scheduler={"name": "asha", "options": {"promotion_fraction": 0.5}}, resource={"min": 1, "max": 27}),
         400, "invalid_argument", "scheduler.options.promotion_fraction"),
        ("asha asymptote unknown", "POST", S, {},
         study(scheduler={"name": "asha", "options": {"asymptote": "zero"}}, resource={"min": 1, "max": 27}),
         400, "invalid_argument", "scheduler.options.asymptote"),
        ("asha promotion_fraction 10 kB", "POST", S, {},
         study(scheduler={"name": "asha", "options": {"promotion_fraction": "r" * 10000}},
               resource={"min": 1, "max": 27}),
         400, "invalid_argument", "scheduler.options.promotion_fraction"),
        ("asha type unknown", "POST", S, {},
         study(scheduler={"name": "asha", "options": {"type": "pause"}}, resource={"min": 1, "max": 27}),
         400, "invalid_argument", "scheduler.options.type"),
        ("hyperband type not a string", "POST", S, {},
         study(scheduler={"name": "hyperband", "options": {"type": 1}}, resource={"min": 1, "max": 27}),
         400, "invalid_argument", "scheduler.options.type"),
        ("successive_halving type stopping with doubling", "POST", S, {},
         study(scheduler={"name": "successive_halving", "options": {"type": "stopping", "doubling": True}},
               resource={"min": 1, "max": 27}),
         400, "invalid_argument", "scheduler.options.type"),
        ("type on a scheduler without it", "POST", S, {},
         study(scheduler={"name": "tpe", "options": {"type": "stopping"}}),
         400, "invalid_argument", "scheduler.options.type"),
        ("gp_ucb acquisition unknown", "POST", S, {},
         study(scheduler={"name": "gp_ucb", "options": {"acquisition": "ei"}}),
         400, "invalid_argument", "scheduler.options.acquisition"),
        ("gp sampler misspelt", "POST", S, {},
         study(scheduler={"name": "asha", "options": {"sampler": "GP"}}, resource={"min": 1, "max": 27}),
         400, "invalid_argument", "scheduler.options.sampler"),
        ("gp_ucb cost_aware with ucb", "POST", S, {},
         study(scheduler={"name": "gp_ucb", "options": {"acquisition": "ucb", "cost_aware": True}}),
         400, "invalid_argument", "scheduler.options.cost_aware"),
        ("gp_ucb cost_aware not a bool", "POST", S, {},
         study(scheduler={"name": "gp_ucb", "options": {"acquisition": "logei", "cost_aware": "yes"}}),
         400, "invalid_argument", "scheduler.options.cost_aware"),
        ("gp_ucb initial unknown", "POST", S, {},
         study(scheduler={"name": "gp_ucb", "options": {"initial": "grid"}}),
         400, "invalid_argument", "scheduler.options.initial"),
        ("gp_ucb cost_exponent above 1", "POST", S, {},
         study(scheduler={"name": "gp_ucb", "options": {"acquisition": "logei", "cost_aware": True, "cost_exponent": 1.5}}),
         400, "invalid_argument", "scheduler.options.cost_exponent"),
        ("gp_ucb warp unknown", "POST", S, {},
         study(scheduler={"name": "gp_ucb", "options": {"warp": "log"}}),
         400, "invalid_argument", "scheduler.options.warp"),
        ("bo_bos initial not a string", "POST", S, {},
         study(scheduler={"name": "bo_bos", "options": {"initial": ["sobol"]}}, resource={"min": 1, "max": 20}),
         400, "invalid_argument", "scheduler.options.initial"),
        ("bo_bos acquisition number", "POST", S, {},
         study(scheduler={"name": "bo_bos", "options": {"acquisition": 1}}, resource={"min": 1, "max": 20}),
         400, "invalid_argument", "scheduler.options.acquisition"),
        ("rising_bandits loss without bounds", "POST", S, {},
         study(scheduler={"name": "rising_bandits"}, limits={"trials": 20},
               parameters=[{"name": "algo", "type": "categorical", "choices": ["svm", "rf"]},
                           {"name": "C", "type": "float", "low": 0.1, "high": 10, "when": {"algo": ["svm"]}}]),
         400, "invalid_argument", "objective.bounds"),
        ("rising_bandits without limits.trials", "POST", S, {},
         study(scheduler={"name": "rising_bandits"}, objective={"metric": "acc", "goal": "maximize"},
               parameters=[{"name": "algo", "type": "categorical", "choices": ["svm", "rf"]},
                           {"name": "C", "type": "float", "low": 0.1, "high": 10, "when": {"algo": ["svm"]}}]),
         400, "invalid_argument", "limits.trials"),
        ("rising_bandits without an arm parameter", "POST", S, {},
         study(scheduler={"name": "rising_bandits"}, objective={"metric": "acc", "goal": "maximize"},
               limits={"trials": 20}),
         400, "invalid_argument", "scheduler.options.arm_parameter"),
        ("rising_bandits window 0", "POST", S, {},
         study(scheduler={"name": "rising_bandits", "options": {"arm_parameter": "algo", "window": 0}},
               objective={"metric": "acc", "goal": "maximize"}, limits={"trials": 20}),
         400, "invalid_argument", "scheduler.options.window"),
        ("rising_bandits allocation unknown", "POST", S, {},
         study(scheduler={"name": "rising_bandits", "options": {"arm_parameter": "algo", "allocation": "ucb"}},
               objective={"metric": "acc", "goal": "maximize"}, limits={"trials": 20}),
         400, "invalid_argument", "scheduler.options.allocation"),
        ("rising_bandits allocation number", "POST", S, {},
         study(scheduler={"name": "rising_bandits", "options": {"arm_parameter": "algo", "allocation": 1}},
               objective={"metric": "acc", "goal": "maximize"}, limits={"trials": 20}),
         400, "invalid_argument", "scheduler.options.allocation"),
        ("rising_bandits upper_bound unknown", "POST", S, {},
         study(scheduler={"name": "rising_bandits", "options": {"arm_parameter": "algo", "upper_bound": "loose"}},
               objective={"metric": "acc", "goal": "maximize"}, limits={"trials": 20}),
         400, "invalid_argument", "scheduler.options.upper_bound"),
        ("rising_bandits tail 0", "POST", S, {},
         study(scheduler={"name": "rising_bandits", "options": {"arm_parameter": "algo", "tail": 0}},
               objective={"metric": "acc", "goal": "maximize"}, limits={"trials": 20}),
         400, "invalid_argument", "scheduler.options.tail"),
        ("rising_bandits tail with the paper's bound and the rounds", "POST", S, {},
         study(scheduler={"name": "rising_bandits",
                          "options": {"arm_parameter": "algo", "upper_bound": "paper", "allocation": "rounds",
                                      "tail": 5}},
               objective={"metric": "acc", "goal": "maximize"}, limits={"trials": 20}),
         400, "invalid_argument", "scheduler.options.tail"),
        ("rising_bandits max_retries 101", "POST", S, {},
         study(scheduler={"name": "rising_bandits", "options": {"arm_parameter": "algo", "max_retries": 101}},
               objective={"metric": "acc", "goal": "maximize"}, limits={"trials": 20}),
         400, "invalid_argument", "scheduler.options.max_retries"),
        ("rising_bandits inner unknown", "POST", S, {},
         study(scheduler={"name": "rising_bandits", "options": {"arm_parameter": "algo", "inner": "smac"}},
               objective={"metric": "acc", "goal": "maximize"}, limits={"trials": 20}),
         400, "invalid_argument", "scheduler.options.inner"),
        ("rising_bandits inner tpe with n_init", "POST", S, {},
         study(scheduler={"name": "rising_bandits", "options": {"arm_parameter": "algo", "inner": "tpe", "n_init": 3}},
               objective={"metric": "acc", "goal": "maximize"}, limits={"trials": 20}),
         400, "invalid_argument", "scheduler.options.n_init"),
        ("rising_bandits allocation thompson, tail 0", "POST", S, {},
         study(scheduler={"name": "rising_bandits",
                          "options": {"arm_parameter": "algo", "allocation": "thompson", "tail": 0}},
               objective={"metric": "acc", "goal": "maximize"}, limits={"trials": 20}),
         400, "invalid_argument", "scheduler.options.tail"),
        ("rising_bandits draw_horizon without thompson", "POST", S, {},
         study(scheduler={"name": "rising_bandits",
                          "options": {"arm_parameter": "algo", "allocation": "rounds", "draw_horizon": "share"}},
               objective={"metric": "acc", "goal": "maximize"}, limits={"trials": 20}),
         400, "invalid_argument", "scheduler.options.draw_horizon"),
        ("rising_bandits draw_horizon unknown", "POST", S, {},
         study(scheduler={"name": "rising_bandits",
                          "options": {"arm_parameter": "algo", "allocation": "thompson", "draw_horizon": 7}},
               objective={"metric": "acc", "goal": "maximize"}, limits={"trials": 20}),
         400, "invalid_argument", "scheduler.options.draw_horizon"),
        ("rising_bandits allocation Thompson (case)", "POST", S, {},
         study(scheduler={"name": "rising_bandits", "options": {"arm_parameter": "algo", "allocation": "Thompson"}},
               objective={"metric": "acc", "goal": "maximize"}, limits={"trials": 20}),
         400, "invalid_argument", "scheduler.options.allocation"),
        ("rising_bandits max_retries a string", "POST", S, {},
         study(scheduler={"name": "rising_bandits", "options": {"arm_parameter": "algo", "max_retries": "2"}},
               objective={"metric": "acc", "goal": "maximize"}, limits={"trials": 20}),
         400, "invalid_argument", "scheduler.options.max_retries"),
        ("spc without instances", "POST", S, {},
         study(scheduler={"name": "spc"}, resource={"name": "seconds", "min": 0.1, "max": 60}),
         400, "invalid_argument", "instances"),
        ("spc without a resource (the cap)", "POST", S, {},
         study(scheduler={"name": "spc"}, instances=["a.cnf", "b.cnf"]),
         400, "invalid_argument", "resource"),
        ("spc maximizing", "POST", S, {},
         study(scheduler={"name": "spc"}, instances=["a.cnf"], objective={"metric": "runtime", "goal": "maximize"},
               resource={"name": "seconds", "min": 0.1, "max": 60}),
         400, "invalid_argument", "objective.goal"),
        ("spc kappa0 above the largest cap", "POST", S, {},
         study(scheduler={"name": "spc", "options": {"kappa0": 100}}, instances=["a.cnf"],
               resource={"name": "seconds", "min": 0.1, "max": 60}),
         400, "invalid_argument", "scheduler.options.kappa0"),
        ("spc configs not of the space", "POST", S, {},
         study(scheduler={"name": "spc", "options": {"configs": [{"x": 0.5, "algo": "knn"}]}}, instances=["a.cnf"],
               resource={"name": "seconds", "min": 0.1, "max": 60}),
         400, "invalid_argument", "scheduler.options.configs"),
        # issue 42: a config is compared in its canonical form (x 1 is the real 1.0)
        ("spc configs repeated as 1 and 1.0", "POST", S, {},
         study(scheduler={"name": "spc", "options": {"configs": [{"x": 1, "algo": "rf"}, {"x": 1.0, "algo": "rf"}]}},
               instances=["a.cnf"], resource={"name": "seconds", "min": 0.1, "max": 60}),
         400, "invalid_argument", "scheduler.options.configs"),
        ("caps_race configs repeated as 1 and 1.0", "POST", S, {},
         study(scheduler={"name": "caps_race", "options": {"configs": [{"x": 1, "algo": "rf"},
                                                                       {"x": 1.0, "algo": "rf"}]}},
               instances=["a.cnf"], resource={"name": "seconds", "min": 0.1, "max": 60}),
         400, "invalid_argument", "scheduler.options.configs"),
        ("spc max_configs huge", "POST", S, {},
         study(scheduler={"name": "spc", "options": {"max_configs": 10 ** 9}}, instances=["a.cnf"],
               resource={"name": "seconds", "min": 0.1, "max": 60}),
         400, "invalid_argument", "scheduler.options.max_configs"),
        ("spc stream unknown", "POST", S, {},
         study(scheduler={"name": "spc", "options": {"stream": "infinite"}}, instances=["a.cnf"],
               resource={"name": "seconds", "min": 0.1, "max": 60}),
         400, "invalid_argument", "scheduler.options.stream"),
        ("caps_race without instances", "POST", S, {},
         study(scheduler={"name": "caps_race"}, resource={"name": "seconds", "min": 0.1, "max": 60}),
         400, "invalid_argument", "instances"),
        ("caps_race without a resource (the cap)", "POST", S, {},
         study(scheduler={"name": "caps_race"}, instances=["a.cnf", "b.cnf"]),
         400, "invalid_argument", "resource"),
        ("caps_race maximizing", "POST", S, {},
         study(scheduler={"name": "caps_race"}, instances=["a.cnf"],
               objective={"metric": "runtime", "goal": "maximize"}, resource={"name": "seconds", "min": 0.1, "max": 60}),
         400, "invalid_argument", "objective.goal"),
        ("caps_race kappa0 above the largest cap", "POST", S, {},
         study(scheduler={"name": "caps_race", "options": {"kappa0": 100}}, instances=["a.cnf"],
               resource={"name": "seconds", "min": 0.1, "max": 60}),
         400, "invalid_argument", "scheduler.options.kappa0"),
        ("caps_race first_cap above the largest cap", "POST", S, {},
         study(scheduler={"name": "caps_race", "options": {"first_cap": 61}}, instances=["a.cnf"],
               resource={"name": "seconds", "min": 0.1, "max": 60}),
         400, "invalid_argument", "scheduler.options.first_cap"),
        ("caps_race cap_factor below 1", "POST", S, {},
         study(scheduler={"name": "caps_race", "options": {"cap_factor": 0.5}}, instances=["a.cnf"],
               resource={"name": "seconds", "min": 0.1, "max": 60}),
         400, "invalid_argument", "scheduler.options.cap_factor"),
        ("caps_race defer 1", "POST", S, {},
         study(scheduler={"name": "caps_race", "options": {"defer": 1}}, instances=["a.cnf"],
               resource={"name": "seconds", "min": 0.1, "max": 60}),
         400, "invalid_argument", "scheduler.options.defer"),
        ("caps_race skip_levels above 1", "POST", S, {},
         study(scheduler={"name": "caps_race", "options": {"skip_levels": 1.5}}, instances=["a.cnf"],
               resource={"name": "seconds", "min": 0.1, "max": 60}),
         400, "invalid_argument", "scheduler.options.skip_levels"),
        ("caps_race last_level 0", "POST", S, {},
         study(scheduler={"name": "caps_race", "options": {"last_level": 0}}, instances=["a.cnf"],
               resource={"name": "seconds", "min": 0.1, "max": 60}),
         400, "invalid_argument", "scheduler.options.last_level"),
        ("caps_race last_level above 1", "POST", S, {},
         study(scheduler={"name": "caps_race", "options": {"last_level": 2}}, instances=["a.cnf"],
               resource={"name": "seconds", "min": 0.1, "max": 60}),
         400, "invalid_argument", "scheduler.options.last_level"),
        ("caps_race race_order unknown", "POST", S, {},
         study(scheduler={"name": "caps_race", "options": {"race_order": "random"}}, instances=["a.cnf"],
               resource={"name": "seconds", "min": 0.1, "max": 60}),
         400, "invalid_argument", "scheduler.options.race_order"),
        ("caps_race level_wait not a string", "POST", S, {},
         study(scheduler={"name": "caps_race", "options": {"level_wait": 1}}, instances=["a.cnf"],
               resource={"name": "seconds", "min": 0.1, "max": 60}),
         400, "invalid_argument", "scheduler.options.level_wait"),
        ("caps_race compare unknown", "POST", S, {},
         study(scheduler={"name": "caps_race", "options": {"compare": "lazy"}}, instances=["a.cnf"],
               resource={"name": "seconds", "min": 0.1, "max": 60}),
         400, "invalid_argument", "scheduler.options.compare"),
        ("caps_race incumbent unknown", "POST", S, {},
         study(scheduler={"name": "caps_race", "options": {"incumbent": "best"}}, instances=["a.cnf"],
               resource={"name": "seconds", "min": 0.1, "max": 60}),
         400, "invalid_argument", "scheduler.options.incumbent"),
        ("caps_race pilot 0", "POST", S, {},
         study(scheduler={"name": "caps_race", "options": {"pilot": 0}}, instances=["a.cnf"],
               resource={"name": "seconds", "min": 0.1, "max": 60}),
         400, "invalid_argument", "scheduler.options.pilot"),
        ("caps_race delta 0", "POST", S, {},
         study(scheduler={"name": "caps_race", "options": {"delta": 0}}, instances=["a.cnf"],
               resource={"name": "seconds", "min": 0.1, "max": 60}),
         400, "invalid_argument", "scheduler.options.delta"),
        ("caps_race par 0", "POST", S, {},
         study(scheduler={"name": "caps_race", "options": {"par": 0}}, instances=["a.cnf"],
               resource={"name": "seconds", "min": 0.1, "max": 60}),
         400, "invalid_argument", "scheduler.options.par"),
        ("caps_race max_failures 0", "POST", S, {},
         study(scheduler={"name": "caps_race", "options": {"max_failures": 0}}, instances=["a.cnf"],
               resource={"name": "seconds", "min": 0.1, "max": 60}),
         400, "invalid_argument", "scheduler.options.max_failures"),
        ("caps_race n_configs huge", "POST", S, {},
         study(scheduler={"name": "caps_race", "options": {"n_configs": 10 ** 9}}, instances=["a.cnf"],
               resource={"name": "seconds", "min": 0.1, "max": 60}),
         400, "invalid_argument", "scheduler.options.n_configs"),
        ("caps_race eliminate unknown", "POST", S, {},
         study(scheduler={"name": "caps_race", "options": {"eliminate": "never"}}, instances=["a.cnf"],
               resource={"name": "seconds", "min": 0.1, "max": 60}),
         400, "invalid_argument", "scheduler.options.eliminate"),
        ("caps_race ratio below 1", "POST", S, {},
         study(scheduler={"name": "caps_race", "options": {"ratio": 0.5}}, instances=["a.cnf"],
               resource={"name": "seconds", "min": 0.1, "max": 60}),
         400, "invalid_argument", "scheduler.options.ratio"),
        ("caps_race min_instances 0", "POST", S, {},
         study(scheduler={"name": "caps_race", "options": {"min_instances": 0}}, instances=["a.cnf"],
               resource={"name": "seconds", "min": 0.1, "max": 60}),
         400, "invalid_argument", "scheduler.options.min_instances"),
        ("caps_race shuffle_instances a string", "POST", S, {},
         study(scheduler={"name": "caps_race", "options": {"shuffle_instances": "yes"}}, instances=["a.cnf"],
               resource={"name": "seconds", "min": 0.1, "max": 60}),
         400, "invalid_argument", "scheduler.options.shuffle_instances"),
        ("caps_race configs not of the space", "POST", S, {},
         study(scheduler={"name": "caps_race", "options": {"configs": [{"x": 0.5, "algo": "knn"}]}}, instances=["a.cnf"],
               resource={"name": "seconds", "min": 0.1, "max": 60}),
         400, "invalid_argument", "scheduler.options.configs"),
        ("spc stream not a string", "POST", S, {},
         study(scheduler={"name": "spc", "options": {"stream": 1}}, instances=["a.cnf"],
               resource={"name": "seconds", "min": 0.1, "max": 60}),
         400, "invalid_argument", "scheduler.options.stream"),
        ("options not object", "POST", S, {}, study(scheduler={"name": "random", "options": 3}), 400,
         "invalid_argument", PREFIX("scheduler.options")),
        ("bad goal", "POST", S, {}, study(objective={"metric": "loss", "goal": "up"}), 400, "invalid_argument",
         "objective.goal"),
        ("goal number", "POST", S, {}, study(objective={"metric": "loss", "goal": 1}), 400, "invalid_argument",
         "objective.goal"),
        ("metric number", "POST", S, {}, study(objective={"metric": 5, "goal": "minimize"}), 400,
         "invalid_argument", "objective.metric"),
        ("resource min > max", "POST", S, {}, study(resource={"name": "epochs", "min": 10, "max": 1}), 400,
         "invalid_argument", PREFIX("resource")),
        # ---- media type ----
        ("text/plain", "POST", S, {"Content-Type": "text/plain"}, study(), 415, "unsupported_media_type", ANY),
        ("form encoded", "POST", S, {"Content-Type": "application/x-www-form-urlencoded"}, "name=a", 415,
         "unsupported_media_type", ANY),
        ("no content type", "POST", S, {"Content-Type": None}, study(), 415, "unsupported_media_type", ANY),
        ("json-like content type", "POST", S, {"Content-Type": "application/jsonx"}, study(), 415,
         "unsupported_media_type", ANY),
        ("text/plain measurement", "POST", M, {"Content-Type": "text/plain"}, J({"step": 1, "value": 1}), 415,
         "unsupported_media_type", ANY),
        # ---- authentication ----
        ("no token", "POST", S, {"Authorization": None}, study(), 401, "unauthenticated", ANY),
        ("no token GET", "GET", S, {"Authorization": None}, None, 401, "unauthenticated", ANY),
        ("garbage token", "GET", S, {"Authorization": "Bearer garbage"}, None, 401, "unauthenticated", ANY),
        ("bdt_ garbage", "GET", S, {"Authorization": "Bearer bdt_0000000000000000"}, None, 401,
         "unauthenticated", ANY),
        ("empty bearer", "GET", S, {"Authorization": "Bearer "}, None, 401, "unauthenticated", ANY),
        ("basic auth", "GET", S, {"Authorization": "Basic dXNlcjpwYXNz"}, None, 401, "unauthenticated", ANY),
        ("token without scheme", "GET", S, {"Authorization": user}, None, 401, "unauthenticated", ANY),
        ("revoked token", "GET", S, {"Authorization": "Bearer " + revoked}, None, 401, "unauthenticated", ANY),
        ("revoked token POST", "POST", SUG, {"Authorization": "Bearer " + revoked}, "{}", 401,
         "unauthenticated", ANY),
        # ---- routes and methods ----
        ("unknown route", "GET", "/v1/nope", {}, None, 404, "not_found", ANY),
        ("unknown top route", "GET", "/nope", {"Authorization": None}, None, 404, "not_found", ANY),
        ("unknown study subroute", "GET", "/v1/studies/%d/nope" % sid, {}, None, 404, "not_found", ANY),
        ("unknown trial subroute", "POST", "/v1/trials/%d/bogus" % tid, {}, "{}", 404, "not_found", ANY),
        ("PUT studies", "PUT", S, {}, study(), 405, "method_not_allowed", ANY),
        ("PUT study", "PUT", "/v1/studies/%d" % sid, {}, "{}", 405, "method_not_allowed", ANY),
        ("DELETE trial", "DELETE", "/v1/trials/%d" % tid, {}, None, 405, "method_not_allowed", ANY),
        ("GET suggest", "GET", SUG, {}, None, 405, "method_not_allowed", ANY),
        ("GET measurements", "GET", M, {}, None, 405, "method_not_allowed", ANY),
        ("GET complete", "GET", C, {}, None, 405, "method_not_allowed", ANY),
        ("POST trials without config", "POST", TR, {}, "{}", 400, "invalid_argument", "config"),
        ("GET users", "GET", "/v1/users", {}, None, 405, "method_not_allowed", ANY),
        ("DELETE me", "DELETE", "/v1/me", {}, None, 405, "method_not_allowed", ANY),
        ("POST healthz", "POST", "/healthz", {"Authorization": None}, None, 405, "method_not_allowed", ANY),
        # ---- ids that are not (existing) integers ----
        ("study id word", "GET", "/v1/studies/abc", {}, None, 404, "not_found", ANY),
        ("study id 1x", "GET", "/v1/studies/%dx" % sid, {}, None, 404, "not_found", ANY),
        ("study id negative", "GET", "/v1/studies/-%d" % sid, {}, None, 404, "not_found", ANY),
        ("study id zero", "GET", "/v1/studies/0", {}, None, 404, "not_found", ANY),
        ("study id float", "GET", "/v1/studies/%d.0" % sid, {}, None, 404, "not_found", ANY),
        ("study id unknown", "GET", "/v1/studies/99999999", {}, None, 404, "not_found", ANY),
        ("study id overflow", "GET", "/v1/studies/99999999999999999999999", {}, None, 404, "not_found", ANY),
        ("study id wraps to real id", "GET", "/v1/studies/%d" % (sid + 2 ** 64), {}, None, 404, "not_found", ANY),
        ("suggest id word", "POST", "/v1/studies/abc/suggest", {}, "{}", 404, "not_found", ANY),
        ("trial id word", "GET", "/v1/trials/abc", {}, None, 404, "not_found", ANY),
        ("trial id float", "POST", "/v1/trials/1.5/complete", {}, J({"value": 1}), 404, "not_found", ANY),
        ("trial unknown measurement", "POST", "/v1/trials/99999999/measurements", {}, J({"step": 1, "value": 1}),
         404, "not_found", ANY),
        ("token id word", "DELETE", "/v1/tokens/abc", {}, None, 404, "not_found", ANY),
        ("token id unknown", "DELETE", "/v1/tokens/99999999", {}, None, 404, "not_found", ANY),
        # ---- suggest body ----
        ("count 0", "POST", SUG, {}, J({"count": 0}), 400, "invalid_argument", "count"),
        ("count 101", "POST", SUG, {}, J({"count": 101}), 400, "invalid_argument", "count"),
        ("count 1000", "POST", SUG, {}, J({"count": 1000}), 400, "invalid_argument", "count"),
        ("count -1", "POST", SUG, {}, J({"count": -1}), 400, "invalid_argument", "count"),
        ("count string", "POST", SUG, {}, J({"count": "2"}), 400, "invalid_argument", "count"),
        ("count fraction", "POST", SUG, {}, J({"count": 2.5}), 400, "invalid_argument", "count"),
        ("worker number", "POST", SUG, {}, J({"worker": 5}), 400, "invalid_argument", "worker"),
        # ---- enqueue / warm start (POST /v1/studies/{id}/trials) ----
        ("add trial without body", "POST", TR, {}, None, 400, "invalid_argument", ANY),
        ("add trial without config", "POST", TR, {}, J({"value": 1}), 400, "invalid_argument", "config"),
        ("add trial config array", "POST", TR, {}, J({"config": [0.5, "a"]}), 400, "invalid_argument", "config"),
        ("add trial config out of range", "POST", TR, {}, J({"config": {"x": 2, "k": "a"}}), 400,
         "invalid_argument", "config.x"),
        ("add trial config missing k", "POST", TR, {}, J({"config": {"x": 0.5}}), 400, "invalid_argument",
         "config.k"),
        ("add trial config unknown choice", "POST", TR, {}, J({"config": {"x": 0.5, "k": "z"}}), 400,
         "invalid_argument", "config.k"),
        ("add trial config extra param", "POST", TR, {}, J({"config": {"x": 0.5, "k": "a", "y": 1}}), 400,
         "invalid_argument", "config.y"),
        ("add trial value string", "POST", TR, {}, J({"config": {"x": 0.5, "k": "a"}, "value": "1"}), 400,
         "invalid_argument", "value"),
        ("add trial value null", "POST", TR, {}, J({"config": {"x": 0.5, "k": "a"}, "value": None}), 400,
         "invalid_argument", "value"),
        ("add trial value huge", "POST", TR, {}, '{"config": {"x": 0.5, "k": "a"}, "value": 1e999}', 400,
         "invalid_argument", ANY),
        ("add trial budget without value", "POST", TR, {}, J({"config": {"x": 0.5, "k": "a"}, "budget": 1}), 400,
         "invalid_argument", "budget"),
        ("add trial budget beyond resource", "POST", TR, {},
         J({"config": {"x": 0.5, "k": "a"}, "value": 1, "budget": 5}), 400, "invalid_argument", "budget"),
        ("add trial unknown member", "POST", TR, {}, J({"config": {"x": 0.5, "k": "a"}, "state": "completed"}),
         400, "invalid_argument", "state"),
        ("add trial to no study", "POST", "/v1/studies/99999999/trials", {}, J({"config": {"x": 0.5, "k": "a"}}),
         404, "not_found", ANY),
        ("add trial PUT", "PUT", TR, {}, J({"config": {"x": 0.5, "k": "a"}}), 405, "method_not_allowed", ANY),
        # ---- trial listing query (the contract does not name query fields: ANY) ----
        ("negative limit", "GET", TR + "?limit=-1", {}, None, 400, "invalid_argument", ANY),
        ("limit 0", "GET", TR + "?limit=0", {}, None, 400, "invalid_argument", ANY),
        ("limit 1001", "GET", TR + "?limit=1001", {}, None, 400, "invalid_argument", ANY),
        ("limit word", "GET", TR + "?limit=abc", {}, None, 400, "invalid_argument", ANY),
        ("after word", "GET", TR + "?after=abc", {}, None, 400, "invalid_argument", ANY),
        ("unknown state", "GET", TR + "?state=bogus", {}, None, 400, "invalid_argument", ANY),
        ("state without value", "GET", TR + "?state", {}, None, 400, "invalid_argument", ANY),
        # ---- include / order of the trial listing, the CSV export, history, study paging:
        # the contract names these query fields ----
        ("include unknown", "GET", TR + "?include=config", {}, None, 400, "invalid_argument", "include"),
        ("include empty", "GET", TR + "?include=", {}, None, 400, "invalid_argument", "include"),
        ("include without value", "GET", TR + "?include", {}, None, 400, "invalid_argument", "include"),
        ("include twice joined", "GET", TR + "?include=measurements,config", {}, None, 400, "invalid_argument",
         "include"),
        ("order unknown", "GET", TR + "?order=worst", {}, None, 400, "invalid_argument", "order"),
        ("order empty", "GET", TR + "?order=", {}, None, 400, "invalid_argument", "order"),
        ("order best with state", "GET", TR + "?order=best&state=running", {}, None, 400, "invalid_argument",
         "state"),
        ("order best with after", "GET", TR + "?order=best&after=3", {}, None, 400, "invalid_argument", "after"),
        ("order best with after 0", "GET", TR + "?after=0&order=best", {}, None, 400, "invalid_argument", "after"),
        ("order best limit 1001", "GET", TR + "?order=best&limit=1001", {}, None, 400, "invalid_argument", "limit"),
        ("csv unknown state", "GET", TR + ".csv?state=bogus", {}, None, 400, "invalid_argument", "state"),
        ("csv instance word", "GET", TR + ".csv?instance=x", {}, None, 400, "invalid_argument", "instance"),
        ("csv instance beyond", "GET", TR + ".csv?instance=0", {}, None, 400, "invalid_argument", "instance"),
        ("csv instance huge", "GET", TR + ".csv?instance=99999999999999999999", {}, None, 400, "invalid_argument",
         "instance"),
        ("history points 1", "GET", "/v1/studies/%d/history?points=1" % sid, {}, None, 400, "invalid_argument",
         "points"),
        ("history points 2001", "GET", "/v1/studies/%d/history?points=2001" % sid, {}, None, 400,
         "invalid_argument", "points"),
        ("history points word", "GET", "/v1/studies/%d/history?points=many" % sid, {}, None, 400,
         "invalid_argument", "points"),
        ("history points negative", "GET", "/v1/studies/%d/history?points=-5" % sid, {}, None, 400,
         "invalid_argument", "points"),
        ("history points huge", "GET", "/v1/studies/%d/history?points=1%s" % (sid, "0" * 30), {}, None, 400,
         "invalid_argument", "points"),
        ("studies limit 0", "GET", S + "?limit=0", {}, None, 400, "invalid_argument", "limit"),
        ("studies limit 1001", "GET", S + "?limit=1001", {}, None, 400, "invalid_argument", "limit"),
        ("studies after word", "GET", S + "?after=x", {}, None, 400, "invalid_argument", "after"),
        ("studies after negative", "GET", S + "?after=-1", {}, None, 400, "invalid_argument", "after"),
        ("studies name empty", "GET", S + "?name=", {}, None, 400, "invalid_argument", "name"),
        ("studies name too long", "GET", S + "?name=" + "n" * 201, {}, None, 400, "invalid_argument", "name"),
        ("if_exists unknown", "POST", S, {}, study(if_exists="replace"), 400, "invalid_argument", "if_exists"),
        ("if_exists number", "POST", S, {}, study(if_exists=1), 400, "invalid_argument", "if_exists"),
        ("if_exists null", "POST", S, {}, J(dict(base_study(), if_exists=None)), 400, "invalid_argument",
         "if_exists"),
        ("if_exists case", "POST", S, {}, study(if_exists="LOAD"), 400, "invalid_argument", "if_exists"),
        # A bad limit must not slip through because other query parameters came first.
        ("negative limit after 20 others", "GET", TR + "?" + "&".join("x%d=1" % i for i in range(20)) + "&limit=-1",
         {}, None, 400, "invalid_argument", ANY),
        # ---- Idempotency-Key format and duplicate JSON keys (api/openapi.yaml: a key is
        # 1..200 printable ASCII characters; duplicate keys are invalid JSON) ----
        ("idempotency key too long", "POST", SUG, {"Idempotency-Key": "k" * 201}, "{}", 400, "invalid_argument",
         ANY),
        ("idempotency key empty", "POST", SUG, {"Idempotency-Key": ""}, "{}", 400, "invalid_argument", ANY),
        ("idempotency key control char", "POST", SUG, {"Idempotency-Key": "a\tb"}, "{}", 400, "invalid_argument",
         ANY),
        ("duplicate JSON keys", "POST", SUG, {}, '{"count": 1, "count": 2}', 400, "invalid_argument", ANY),
        # ---- users ----
        ("user name empty", "POST", "/v1/users", {"Authorization": "Bearer ADMIN"}, J({"name": ""}), 400,
         "invalid_argument", "name"),
        ("user name number", "POST", "/v1/users", {"Authorization": "Bearer ADMIN"}, J({"name": 5}), 400,
         "invalid_argument", "name"),
        ("user admin string", "POST", "/v1/users", {"Authorization": "Bearer ADMIN"},
         J({"name": "zed", "admin": "yes"}), 400, "invalid_argument", "admin"),
        # The contract does not list this case; conflict (409) is the documented code for a clash.
        ("duplicate user", "POST", "/v1/users", {"Authorization": "Bearer ADMIN"}, J({"name": "dupuser"}), 409,
         "conflict", ANY),
        ("tokens of unknown user", "POST", "/v1/users/nosuchuser/tokens", {"Authorization": "Bearer ADMIN"},
         None, 404, "not_found", ANY),
        # ---- a user's quotas (issue 20) ----
        ("limits by a non-admin", "PATCH", "/v1/users/dupuser", {}, J({"limits": {"studies": 1}}), 403, "forbidden",
         NULL),
        ("limits of unknown user", "PATCH", "/v1/users/nosuchuser", {"Authorization": "Bearer ADMIN"},
         J({"limits": {"studies": 1}}), 404, "not_found", NULL),
        ("limits without body", "PATCH", "/v1/users/dupuser", {"Authorization": "Bearer ADMIN"}, None, 400,
         "invalid_argument", ANY),
        ("limits not an object", "PATCH", "/v1/users/dupuser", {"Authorization": "Bearer ADMIN"}, J({"limits": []}),
         400, "invalid_argument", "limits"),
        ("limits negative", "PATCH", "/v1/users/dupuser", {"Authorization": "Bearer ADMIN"},
         J({"limits": {"studies": -5}}), 400, "invalid_argument", "limits.studies"),
        ("limits huge", "PATCH", "/v1/users/dupuser", {"Authorization": "Bearer ADMIN"},
         J({"limits": {"definition_bytes": 1e300}}), 400, "invalid_argument", "limits.definition_bytes"),
        ("limits unknown member", "PATCH", "/v1/users/dupuser", {"Authorization": "Bearer ADMIN"},
         J({"limits": {"cpu": 1}}), 400, "invalid_argument", "limits.cpu"),
        ("limits with a PUT", "PUT", "/v1/users/dupuser", {"Authorization": "Bearer ADMIN"},
         J({"limits": {}}), 405, "method_not_allowed", ANY),
        # ---- issue 17: metadata at creation and PATCH, pause/resume, trial user_attrs ----
        ("metadata array", "POST", S, {}, study(metadata=[1]), 400, "invalid_argument", "metadata"),
        ("metadata with a bad if_exists", "POST", S, {}, study(metadata={"a": 1}, if_exists="x"), 400,
         "invalid_argument", "if_exists"),
        ("metadata string", "POST", S, {}, study(metadata="x"), 400, "invalid_argument", "metadata"),
        ("metadata number", "POST", S, {}, study(metadata=5), 400, "invalid_argument", "metadata"),
        ("metadata 65 keys", "POST", S, {}, study(metadata={"k%d" % i: i for i in range(65)}), 400,
         "invalid_argument", "metadata"),
        ("metadata empty key", "POST", S, {}, study(metadata={"": 1}), 400, "invalid_argument", "metadata"),
        ("metadata key 65 bytes", "POST", S, {}, study(metadata={"k" * 65: 1}), 400, "invalid_argument",
         "metadata." + "k" * 64),
        ("metadata key 65 bytes utf-8", "POST", S, {}, study(metadata={"\u00e9" * 33: 1}), 400, "invalid_argument",
         PREFIX("metadata")),
        ("metadata over 16 KiB", "POST", S, {}, study(metadata={"a": "x" * 16380}), 400, "invalid_argument",
         "metadata"),
        ("metadata deep over 16 KiB", "POST", S, {}, study(metadata={"a": [[["y" * 100]] * 200]}), 400,
         "invalid_argument", "metadata"),
        ("patch study without body", "PATCH", S + "/%d" % sid, {}, None, 400, "invalid_argument", ANY),
        ("patch study empty object", "PATCH", S + "/%d" % sid, {}, "{}", 400, "invalid_argument", "metadata"),
        ("patch study metadata null", "PATCH", S + "/%d" % sid, {}, J({"metadata": None}), 400,
         "invalid_argument", "metadata"),
        ("patch study metadata array", "PATCH", S + "/%d" % sid, {}, J({"metadata": [["a", 1]]}), 400,
         "invalid_argument", "metadata"),
        ("patch study metadata string", "PATCH", S + "/%d" % sid, {}, J({"metadata": "a=1"}), 400,
         "invalid_argument", "metadata"),
        ("patch study 65 keys", "PATCH", S + "/%d" % sid, {}, J({"metadata": {"k%d" % i: 1 for i in range(65)}}),
         400, "invalid_argument", "metadata"),
        ("patch study bad key", "PATCH", S + "/%d" % sid, {}, J({"metadata": {"": 1}}), 400, "invalid_argument",
         "metadata"),
        ("patch study long key", "PATCH", S + "/%d" % sid, {}, J({"metadata": {"q" * 200: 1}}), 400,
         "invalid_argument", "metadata." + "q" * 64),
        ("patch study oversized", "PATCH", S + "/%d" % sid, {}, J({"metadata": {"a": "z" * 20000}}), 400,
         "invalid_argument", "metadata"),
        ("patch study unknown member", "PATCH", S + "/%d" % sid, {}, J({"metadata": {}, "name": "x"}), 400,
         "invalid_argument", "name"),
        ("patch study trying paused", "PATCH", S + "/%d" % sid, {}, J({"paused": True}), 400, "invalid_argument",
         "paused"),
        ("patch study array body", "PATCH", S + "/%d" % sid, {}, "[]", 400, "invalid_argument", ANY),
        ("patch another user's study", "PATCH", S + "/%d" % sid, {"Authorization": "Bearer ADMIN"},
         J({"metadata": {"a": 1}}), 404, "not_found", NULL),
        ("patch missing study", "PATCH", S + "/999999", {}, J({"metadata": {"a": 1}}), 404, "not_found", NULL),
        ("pause with a member", "POST", S + "/%d/pause" % sid, {}, J({"paused": True}), 400, "invalid_argument",
         "paused"),
        ("pause array body", "POST", S + "/%d/pause" % sid, {}, "[]", 400, "invalid_argument", ANY),
        ("resume with a member", "POST", S + "/%d/resume" % sid, {}, J({"now": 1}), 400, "invalid_argument", "now"),
        ("pause another user's study", "POST", S + "/%d/pause" % sid, {"Authorization": "Bearer ADMIN"}, None, 404,
         "not_found", NULL),
        ("resume another user's study", "POST", S + "/%d/resume" % sid, {"Authorization": "Bearer ADMIN"}, None,
         404, "not_found", NULL),
        ("pause missing study", "POST", S + "/999999/pause", {}, None, 404, "not_found", NULL),
        ("pause with a GET", "GET", S + "/%d/pause" % sid, {}, None, 405, "method_not_allowed", ANY),
        ("pause without token", "POST", S + "/%d/pause" % sid, {"Authorization": None}, None, 401,
         "unauthenticated", ANY),
        ("patch trial without body", "PATCH", "/v1/trials/%d" % tid, {}, None, 400, "invalid_argument", ANY),
        ("patch trial empty object", "PATCH", "/v1/trials/%d" % tid, {}, "{}", 400, "invalid_argument",
         "user_attrs"),
        ("patch trial attrs array", "PATCH", "/v1/trials/%d" % tid, {}, J({"user_attrs": []}), 400,
         "invalid_argument", "user_attrs"),
        ("patch trial attrs number", "PATCH", "/v1/trials/%d" % tid, {}, J({"user_attrs": 1}), 400,
         "invalid_argument", "user_attrs"),
        ("patch trial 65 keys", "PATCH", "/v1/trials/%d" % tid, {},
         J({"user_attrs": {"k%d" % i: None for i in range(65)}}), 400, "invalid_argument", "user_attrs"),
        ("patch trial long key", "PATCH", "/v1/trials/%d" % tid, {}, J({"user_attrs": {"u" * 65: 1}}), 400,
         "invalid_argument", "user_attrs." + "u" * 64),
        ("patch trial oversized", "PATCH", "/v1/trials/%d" % tid, {}, J({"user_attrs": {"a": ["w" * 1000] * 17}}),
         400, "invalid_argument", "user_attrs"),
        ("patch trial unknown member", "PATCH", "/v1/trials/%d" % tid, {}, J({"user_attrs": {}, "state": "failed"}),
         400, "invalid_argument", "state"),
        ("patch another user's trial", "PATCH", "/v1/trials/%d" % tid, {"Authorization": "Bearer ADMIN"},
         J({"user_attrs": {"a": 1}}), 404, "not_found", NULL),
        ("patch missing trial", "PATCH", "/v1/trials/999999", {}, J({"user_attrs": {"a": 1}}), 404, "not_found",
         NULL),
        ("complete with attrs array", "POST", C, {}, J({"value": 1, "user_attrs": [1]}), 400, "invalid_argument",
         "user_attrs"),
        ("complete with attrs empty key", "POST", C, {}, J({"value": 1, "user_attrs": {"": 1}}), 400,
         "invalid_argument", "user_attrs"),
        ("complete with attrs oversized", "POST", C, {}, J({"value": 1, "user_attrs": {"a": "v" * 17000}}), 400,
         "invalid_argument", "user_attrs"),
        ("complete another user's trial with attrs", "POST", C, {"Authorization": "Bearer ADMIN"},
         J({"value": 1, "user_attrs": {"a": 1}}), 404, "not_found", NULL),
        # ---- the HTTP layer (issue 17): libmicrohttpd's own answers are JSON errors
        # too (api/mhd_errors.h); tests/integration/test_http.py has the raw-socket cases ----
        ("transfer coding gzip", "POST", SUG, {"Transfer-Encoding": "gzip"}, "{}", 501, "not_implemented",
         "headers.Transfer-Encoding"),
        ("headers over 32 KiB", "GET", "/v1/me", {"X-Big": "a" * 40000}, None, 431, "header_fields_too_large",
         "headers"),
        ("request line over 32 KiB", "GET", "/v1/me?q=" + "a" * 40000, {}, None, 414, "uri_too_long", "path"),
    ]


class BadInputs(bdtest.DaemonTestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = bdtest.Daemon()
        cls.user = bdtest.create_user(cls.d, "tester")
        bdtest.expect(cls.d.request("POST", "/v1/users", {"name": "dupuser"}), 201, "create dupuser")
        revoked, revoked_id = bdtest.create_token(cls.d, "tester")
        bdtest.expect(cls.d.request("DELETE", "/v1/tokens/%d" % revoked_id), 200, "revoke")
        cls.revoked = revoked
        cls.study = create_study(cls.d, token=cls.user)
        cls.trials = suggest(cls.d, cls.study["id"], count=3, token=cls.user)

    @classmethod
    def tearDownClass(cls):
        cls.d.cleanup()

    def send(self, method, path, headers, raw):
        headers = dict(headers)
        token = self.user
        auth = headers.pop("Authorization", "keep")
        if auth is None:
            token = None
        elif auth == "Bearer ADMIN":
            token = self.d.token
        elif auth != "keep":
            token = None
            headers["Authorization"] = auth
        return self.d.request(method, path, token=token, headers=headers, raw_body=raw)

    def check_row(self, row, got):
        name, method, path, headers, raw, status, code, field = row
        st, body, hdrs = got
        what = "%s: %s %s" % (name, method, path)
        self.assertEqual(st, status, "%s: expected %d %s, got %d %r" % (what, status, code, st, body))
        bdtest.assert_error_shape(self, body, what)
        self.assertEqual(body["error"]["code"], code, "%s: %r" % (what, body))
        self.assertTrue((hdrs.get("Content-Type") or "").startswith("application/json"),
                        "%s: Content-Type %r" % (what, hdrs.get("Content-Type")))
        if status == 405:  # RFC 9110 15.5.6: a 405 MUST carry Allow
            self.assertTrue(hdrs.get("Allow"), "%s: 405 without an Allow header" % what)
        if status == 401:  # RFC 9110 15.5.2: a 401 MUST carry WWW-Authenticate
            self.assertIn("bearer", (hdrs.get("WWW-Authenticate") or "").lower(),
                          "%s: 401 without WWW-Authenticate: Bearer" % what)
        # Messages speak of the request, never of the libraries behind it
        # (a \u0000 once answered with jansson's flag name JSON_ALLOW_NUL).
        for internal in ("JSON_", "json_", "sqlite", "SQLITE", "MHD_", "gsl_"):
            self.assertNotIn(internal, body["error"]["message"], "%s: %r" % (what, body))
        f = body["error"]["field"]
        if field is ANY:
            return
        if isinstance(field, PREFIX):
            self.assertTrue(isinstance(f, str) and f.startswith(field),
                            "%s: field %r should start with %r" % (what, f, str(field)))
        else:
            self.assertEqual(f, field, "%s: field" % what)

    def test_table(self):
        sid = self.study["id"]
        tids = [t["id"] for t in self.trials]
        table = rows(sid, tids[0], tids[1], tids[2], self.revoked, self.user)
        names = [r[0] for r in table]
        self.assertEqual(len(names), len(set(names)), "row names are unique")
        before = check_status(self, self.d.request("GET", "/v1/studies", token=self.user), 200)["studies"]
        for row in table:
            with self.subTest(row=row[0]):
                got = self.send(*row[1:5])
                self.check_row(row, got)
            self.assertTrue(self.d.running(), "banditd died on row %r; stderr:\n%s" % (row[0], self.d.log_tail()))

        # Rejected requests changed nothing.
        after = check_status(self, self.d.request("GET", "/v1/studies", token=self.user), 200)["studies"]
        self.assertEqual(sorted(s["id"] for s in after), sorted(s["id"] for s in before),
                         "a rejected POST /v1/studies created a study")
        for tid in tids:
            t = check_status(self, self.d.request("GET", "/v1/trials/%d" % tid, token=self.user), 200)
            self.assertEqual((t["state"], t["measurements"]), ("running", []),
                             "a rejected request changed trial %d" % tid)
        s = check_status(self, self.d.request("GET", "/v1/studies/%d" % sid, token=self.user), 200)
        self.assertEqual(s["trials"]["total"], 3, "a rejected suggest created a trial")
        self.assertEqual((s["paused"], s["metadata"]), (False, {}), "a rejected pause or PATCH changed the study")
        for tid in tids:
            t = check_status(self, self.d.request("GET", "/v1/trials/%d" % tid, token=self.user), 200)
            self.assertEqual(t["user_attrs"], {}, "a rejected PATCH changed trial %d" % tid)
        self.assert_still_serving()

    def test_values_table(self):
        """Several objectives and constraints (issue 41): every new field of a study
        definition, of complete, of a measurement and of a warm start."""
        mo = {"objectives": [{"metric": "error", "goal": "minimize"}, {"metric": "throughput", "goal": "maximize"}],
              "constraints": [{"metric": "memory_mb", "max": 512}], "objective": None}
        body = json.loads(study(name="mo", **mo))
        sid = check_status(self, self.d.request("POST", "/v1/studies", body, token=self.user), 201)["id"]
        one = json.loads(study(name="mo1", constraints=[{"metric": "memory_mb", "max": 512}]))
        sid1 = check_status(self, self.d.request("POST", "/v1/studies", one, token=self.user), 201)["id"]
        mt, ct = [t["id"] for t in suggest(self.d, sid, count=2, token=self.user)]
        (ct1,) = [t["id"] for t in suggest(self.d, sid1, token=self.user)]
        S, M, C, C1 = "/v1/studies", "/v1/trials/%d/measurements" % mt, "/v1/trials/%d/complete" % ct, \
            "/v1/trials/%d/complete" % ct1
        TR = "/v1/studies/%d/trials" % sid
        O2 = [{"metric": "a", "goal": "minimize"}, {"metric": "b", "goal": "minimize"}]
        good = {"error": 0.1, "throughput": 3, "memory_mb": 100}

        def without(key):
            return {k: v for k, v in good.items() if k != key}

        def mo_study(**top):
            return study(objective=None, **top)

        table = [
            ("objectives goal", "POST", S, {}, mo_study(objectives=[O2[0], {"metric": "b", "goal": "up"}]), 400,
             "invalid_argument", "objectives[1].goal"),
            ("objectives no goal", "POST", S, {}, mo_study(objectives=[O2[0], {"metric": "b"}]), 400,
             "invalid_argument", "objectives[1].goal"),
            ("objectives no metric", "POST", S, {}, mo_study(objectives=[{"goal": "minimize"}, O2[1]]), 400,
             "invalid_argument", "objectives[0].metric"),
            ("objectives metric number", "POST", S, {}, mo_study(objectives=[{"metric": 3, "goal": "minimize"}, O2[1]]),
             400, "invalid_argument", "objectives[0].metric"),
            ("objectives repeated metric", "POST", S, {}, mo_study(objectives=[O2[0], dict(O2[1], metric="a")]), 400,
             "invalid_argument", "objectives[1].metric"),
            ("objectives unknown member", "POST", S, {}, mo_study(objectives=[dict(O2[0], weight=1), O2[1]]), 400,
             "invalid_argument", PREFIX("objectives[0]")),
            ("objectives reference string", "POST", S, {}, mo_study(objectives=[dict(O2[0], reference="1"), O2[1]]),
             400, "invalid_argument", "objectives[0].reference"),
            ("objectives reference NaN", "POST", S, {},
             mo_study(objectives=[dict(O2[0], reference=0), O2[1]]).replace('"reference": 0', '"reference": NaN'),
             400, "invalid_argument", ANY),
            ("objectives not a list", "POST", S, {}, mo_study(objectives=O2[0]), 400, "invalid_argument", "objectives"),
            ("objectives empty", "POST", S, {}, mo_study(objectives=[]), 400, "invalid_argument", "objectives"),
            ("nine objectives", "POST", S, {},
             mo_study(objectives=[{"metric": "m%d" % i, "goal": "minimize"} for i in range(9)]), 400,
             "invalid_argument", "objectives"),
            ("objective and objectives", "POST", S, {}, study(objectives=O2), 400, "invalid_argument", "objectives"),
            ("objectives refused by bo_bos", "POST", S, {}, mo_study(objectives=O2, scheduler={"name": "bo_bos"}), 400,
             "invalid_argument", "objectives"),
            # asha takes several objectives (MO-ASHA) but not the rules that read one loss
            ("asha several objectives promotion learned", "POST", S, {},
             mo_study(objectives=O2, resource={"name": "epochs", "min": 1, "max": 27, "integer": True},
                      scheduler={"name": "asha", "options": {"promotion": "learned"}}), 400, "invalid_argument",
             "scheduler.options.promotion"),
            ("asha constraints sampler gp", "POST", S, {},
             study(constraints=[{"metric": "m", "max": 1}], resource={"name": "epochs", "min": 1, "max": 27,
                                                                      "integer": True},
                   scheduler={"name": "asha", "options": {"sampler": "gp"}}), 400, "invalid_argument",
             "scheduler.options.sampler"),
            # the stopping rules judge one loss: every scheduler with them refuses them with several objectives
            ("random several objectives stopping", "POST", S, {},
             mo_study(objectives=O2, scheduler={"name": "random", "options": {"stopping": {"rule": "median"}}}), 400,
             "invalid_argument", "scheduler.options.stopping"),
            ("tpe several objectives stopping", "POST", S, {},
             mo_study(objectives=O2, scheduler={"name": "tpe", "options": {"stopping": {"rule": "median"}}}), 400,
             "invalid_argument", "scheduler.options.stopping"),
            ("constraints refused by bo_bos", "POST", S, {},
             study(constraints=[{"metric": "m", "max": 1}], scheduler={"name": "bo_bos"}), 400, "invalid_argument",
             "constraints"),
            ("constraints min over max", "POST", S, {}, study(constraints=[{"metric": "m", "min": 2, "max": 1}]), 400,
             "invalid_argument", "constraints[0].max"),
            ("constraints no bound", "POST", S, {}, study(constraints=[{"metric": "m"}]), 400, "invalid_argument",
             "constraints[0]"),
            ("constraints min string", "POST", S, {}, study(constraints=[{"metric": "m", "min": "0"}]), 400,
             "invalid_argument", "constraints[0].min"),
            ("constraints max NaN", "POST", S, {},
             study(constraints=[{"metric": "m", "max": 0}]).replace('"max": 0', '"max": NaN'), 400,
             "invalid_argument", ANY),
            ("constraints no metric", "POST", S, {}, study(constraints=[{"max": 1}]), 400, "invalid_argument",
             "constraints[0].metric"),
            ("constraints repeated metric", "POST", S, {},
             study(constraints=[{"metric": "m", "max": 1}, {"metric": "m", "min": 0}]), 400, "invalid_argument",
             "constraints[1].metric"),
            ("constraints unknown member", "POST", S, {}, study(constraints=[{"metric": "m", "max": 1, "le": 2}]), 400,
             "invalid_argument", PREFIX("constraints[0]")),
            ("constraints not a list", "POST", S, {}, study(constraints={"metric": "m", "max": 1}), 400,
             "invalid_argument", "constraints"),
            ("seventeen constraints", "POST", S, {},
             study(constraints=[{"metric": "m%d" % i, "max": 1} for i in range(17)]), 400, "invalid_argument",
             "constraints"),
            # ---- complete ----
            ("values missing objective", "POST", C, {}, J({"values": without("throughput")}), 400,
             "invalid_argument", "values.throughput"),
            ("values missing constraint", "POST", C, {}, J({"values": without("memory_mb")}), 400,
             "invalid_argument", "values.memory_mb"),
            ("values unknown name", "POST", C, {}, J({"values": dict(good, speed=1)}), 400, "invalid_argument",
             "values.speed"),
            ("values non-number", "POST", C, {}, J({"values": dict(good, error="low")}), 400, "invalid_argument",
             "values.error"),
            ("values boolean", "POST", C, {}, J({"values": dict(good, memory_mb=True)}), 400, "invalid_argument",
             "values.memory_mb"),
            ("values NaN", "POST", C, {}, J({"values": good}).replace("0.1", "NaN"), 400, "invalid_argument", ANY),
            ("values not an object", "POST", C, {}, J({"values": [0.1, 3, 100]}), 400, "invalid_argument", "values"),
            ("values missing", "POST", C, {}, "{}", 400, "invalid_argument", PREFIX("value")),
            ("value number with several objectives", "POST", C, {}, J({"value": 0.1}), 400, "invalid_argument",
             "value"),
            ("diverged with values", "POST", C, {}, J({"value": None, "values": good}), 400, "invalid_argument",
             "values"),
            ("value and values differ", "POST", C1, {}, J({"value": 0.2, "values": {"loss": 0.3, "memory_mb": 1}}),
             400, "invalid_argument", "values.loss"),
            ("one objective constraint missing", "POST", C1, {}, J({"value": 0.2}), 400, "invalid_argument",
             "values.memory_mb"),
            # ---- measurement ----
            ("measurement values missing objective", "POST", M, {}, J({"step": 1, "values": {"error": 0.1}}), 400,
             "invalid_argument", "values.throughput"),
            ("measurement values unknown name", "POST", M, {},
             J({"step": 1, "values": {"error": 0.1, "throughput": 3, "speed": 2}}), 400, "invalid_argument",
             "values.speed"),
            ("measurement value number", "POST", M, {}, J({"step": 1, "value": 0.1}), 400, "invalid_argument",
             "value"),
            ("measurement values string", "POST", M, {}, J({"step": 1, "values": {"error": "x", "throughput": 3}}),
             400, "invalid_argument", "values.error"),
            # ---- warm start ----
            ("warm start values missing", "POST", TR, {}, J({"config": {"x": 0.5, "algo": "rf"},
                                                            "values": without("memory_mb")}), 400,
             "invalid_argument", "values.memory_mb"),
            ("warm start values unknown", "POST", TR, {}, J({"config": {"x": 0.5, "algo": "rf"},
                                                            "values": dict(good, speed=1)}), 400,
             "invalid_argument", "values.speed"),
        ]
        names = [r[0] for r in table]
        self.assertEqual(len(names), len(set(names)), "row names are unique")
        for row in table:
            with self.subTest(row=row[0]):
                self.check_row(row, self.send(*row[1:5]))
            self.assertTrue(self.d.running(), "banditd died on row %r; stderr:\n%s" % (row[0], self.d.log_tail()))
        for tid in (mt, ct, ct1):
            t = check_status(self, self.d.request("GET", "/v1/trials/%d" % tid, token=self.user), 200)
            self.assertEqual((t["state"], t["measurements"]), ("running", []), "a rejected request changed %d" % tid)
        s = check_status(self, self.d.request("GET", "/v1/studies/%d" % sid, token=self.user), 200)
        self.assertEqual((s["trials"]["total"], s["pareto_front"]), (2, []), "a rejected warm start added a trial")
        check_status(self, self.d.request("POST", C, {"values": good}, token=self.user), 200)
        check_status(self, self.d.request("POST", M, {"step": 1, "values": without("memory_mb")}, token=self.user),
                     200)
        check_status(self, self.d.request("POST", C1, {"value": 0.2, "values": {"loss": 0.2, "memory_mb": 1}},
                                          token=self.user), 200)
        for s_id in (sid, sid1):
            check_status(self, self.d.request("DELETE", "/v1/studies/%d" % s_id, token=self.user), 200)

    def test_huge_body(self):
        body = ('{"name": "' + "a" * (2 * 1024 * 1024) + '", "parameters": []}').encode()
        got = self.d.stream_request("POST", "/v1/studies", {"Authorization": "Bearer " + self.user,
                                                            "Content-Type": "application/json"}, body)
        row = ("2 MiB body", "POST", "/v1/studies", {}, None, 413, "payload_too_large", ANY)
        self.check_row(row, got)
        self.assertTrue(self.d.running())
        self.assert_still_serving()

    def test_json_with_charset_is_json(self):
        # These are all the application/json media type (RFC 9110 8.3.1: parameters
        # are allowed, type and subtype are case-insensitive), so none is a 415.
        for i, ct in enumerate(("application/json; charset=utf-8", "application/JSON",
                                "Application/Json;charset=UTF-8")):
            with self.subTest(content_type=ct):
                st, body, _ = self.d.request("POST", "/v1/studies", token=self.user, raw_body=study(name="ct%d" % i),
                                             headers={"Content-Type": ct})
                self.assertEqual(st, 201, body)

    def assert_still_serving(self):
        st, body, _ = self.d.request("GET", "/healthz", token=None)
        self.assertEqual((st, body), (200, {"status": "ok"}))
        s = create_study(self.d, token=self.user)
        t = suggest(self.d, s["id"], token=self.user)
        self.assertEqual(len(t), 1)
        check_status(self, self.d.request("DELETE", "/v1/studies/%d" % s["id"], token=self.user), 200)


class BodyLimitFlag(bdtest.DaemonTestCase):
    """--max-body-bytes sets the limit: just under passes, just over is 413."""

    def test_max_body_bytes(self):
        d = bdtest.Daemon(extra_args=["--max-body-bytes", "2048"])
        self.addCleanup(d.cleanup)
        small = study(name="small")
        small = small[:-1] + " " * (1900 - len(small)) + "}"
        st, body, _ = d.request("POST", "/v1/studies", raw_body=small)
        self.assertEqual(st, 201, body)
        big = small[:-1] + " " * 300 + "}"
        self.assertGreater(len(big), 2048)
        st, body, _ = d.stream_request("POST", "/v1/studies", {"Authorization": "Bearer " + d.token,
                                                              "Content-Type": "application/json"}, big.encode())
        self.assertEqual(st, 413, body)
        bdtest.assert_error_shape(self, body)
        self.assertEqual(body["error"]["code"], "payload_too_large")
        self.assertEqual(d.request("GET", "/healthz", token=None)[0], 200)


if __name__ == "__main__":
    unittest.main()
