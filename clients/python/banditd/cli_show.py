"""banditd.cli_show: the report `bdctl show ID` prints for one study.

The report reads one GET /v1/studies/{id} answer: the definition (space,
objective, resource, scheduler options), the counts, the incumbent, used
against limits, and the scheduler's own view (study.scheduler.state, the
JSON each scheduler's describe() in server/sched/*.c writes). Schedulers
with a known shape get a view made for them (Hyperband-style brackets and
rungs, rising_bandits arms, spc testers, bo_bos verdicts); any other, or a
shape that changed, falls back to a generic indented tree, so a newer daemon
never breaks the report. Long lists are cut (spc testers: the 20 with the
smallest LCB, which the main loop runs next, and a count of the others).
"""

import json

from .cli_format import config_text, counts_text, num, table, tree, when

SPC_TOP = 20
MAX_VERDICTS = 20
MAX_BRACKETS = 8


def _param_text(p):
    kind = p.get("type", "?")
    if kind == "categorical":
        choices = p.get("choices") or []
        more = ", ... %d more" % (len(choices) - 12) if len(choices) > 12 else ""
        dom = "{" + ", ".join(str(c) for c in choices[:12]) + more + "}"
    elif "low" in p or "high" in p:
        dom = "[%s, %s]" % (num(p.get("low")), num(p.get("high")))
        if p.get("log"):
            dom += " log"
    else:
        dom = ""
    cond = ""
    if isinstance(p.get("when"), dict):
        cond = " when " + ", ".join("%s in {%s}" % (k, ", ".join(str(x) for x in v) if isinstance(v, list) else v)
                                    for k, v in p["when"].items())
    return "%s %s %s%s" % (p.get("name", "?"), kind, dom, cond)


def _definition(s, out):
    sched = s.get("scheduler") or {}
    opts = sched.get("options") or {}
    out.write("Scheduler:  %s%s\n" % (sched.get("name", "?"),
                                      " (" + config_text(opts) + ")" if opts else ""))
    obj = s.get("objective") or {}
    if obj:
        extra = ""
        if isinstance(obj.get("bounds"), list):
            extra = " bounds [%s]" % ", ".join(num(b) for b in obj["bounds"])
        out.write("Objective:  %s %s%s\n" % (obj.get("goal", "?"), obj.get("metric", "?"), extra))
    res = s.get("resource")
    if isinstance(res, dict):
        out.write("Resource:   %s %s..%s%s\n" % (res.get("name", "?"), num(res.get("min")), num(res.get("max")),
                                                 " integer" if res.get("integer") else ""))
    params = s.get("parameters") or []
    out.write("Parameters: %d\n" % len(params))
    for p in params[:50]:
        if isinstance(p, dict):
            out.write("  %s\n" % _param_text(p))
    if len(params) > 50:
        out.write("  ... %d more\n" % (len(params) - 50))
    inst = s.get("instances")
    if isinstance(inst, list) and inst:
        out.write("Instances:  %d\n" % len(inst))


def _incumbent(label, inc, out):
    if not isinstance(inc, dict):
        out.write("%s none yet\n" % label)
        return
    out.write("%s %s (trial %s, config %s, budget %s)\n" % (
        label, num(inc.get("value")), inc.get("trial_id", "?"), inc.get("config_id", "?"), num(inc.get("budget"))))
    out.write("  %s\n" % config_text(inc.get("config")))


def _usage(s, out):
    used = s.get("used") or {}
    limits = s.get("limits") or {}
    parts = []
    for k in ("trials", "resource", "seconds"):
        if k in used or k in limits:
            parts.append("%s %s / %s" % (k, num(used.get(k)), num(limits.get(k)) if k in limits else "no limit"))
    if parts:
        out.write("Used:       %s\n" % ", ".join(parts))


# ---- scheduler views ----

def _rungs(b, out):
    rows = []
    for r in b.get("rungs") or []:
        surv = r.get("survivors")
        rows.append([str(r.get("rung")), num(r.get("budget")), num(r.get("n")), num(r.get("placed")),
                     num(r.get("running")), num(r.get("finished")), num(r.get("failed")),
                     str(len(surv)) if isinstance(surv, list) else "-"])
    _indented_table(["rung", "budget", "n", "placed", "running", "finished", "failed", "promoted"], rows, out,
                    right=range(8), indent="      ")


def _brackets(st, out):
    """Hyperband, successive halving and ASHA: brackets of rungs."""
    head = []
    for k in ("mode", "eta", "R", "r_min", "s_max", "n", "rounds", "budget", "max_trials", "created", "running",
              "brackets_total", "iterations"):
        if k in st and not isinstance(st[k], (dict, list)):
            head.append("%s %s" % (k, num(st[k])))
    out.write("  %s\n" % ", ".join(head))
    nxt = st.get("next")
    if isinstance(nxt, dict):
        out.write("  next bracket: s=%s n=[%s] budget=[%s]\n" % (
            nxt.get("bracket"), ", ".join(num(x) for x in nxt.get("n") or []),
            ", ".join(num(x) for x in nxt.get("budget") or [])))
    brackets = st.get("brackets") or []
    shown = brackets[-MAX_BRACKETS:]
    if len(brackets) > len(shown):
        out.write("  (the last %d of %d brackets shown)\n" % (len(shown), len(brackets)))
    for b in shown:
        it = " iteration %s" % b["iteration"] if "iteration" in b else ""
        out.write("    bracket s=%s%s: %s, active rung %s\n" % (b.get("bracket"), it, b.get("state", "?"),
                                                             b.get("active_rung", "-")))
        _rungs(b, out)
        w = b.get("winner")
        if isinstance(w, dict):
            out.write("      winner: config %s loss %s at budget %s\n" % (w.get("config_id"), num(w.get("loss")),
                                                                        num(w.get("budget"))))


def _rising(st, out):
    out.write("  phase %s, round %s, pulls %s / T %s, window %s, inner %s, elimination %s%s\n" % (
        st.get("phase"), st.get("round"), st.get("pulls"), st.get("T"), st.get("window"), st.get("inner"),
        st.get("elimination"), ", cost-aware" if st.get("cost_aware") else ""))
    rows = []
    for a in st.get("arms") or []:
        elim = "-"
        if a.get("eliminated_round") is not None:
            elim = "round %s by %s" % (a["eliminated_round"], a.get("eliminated_by"))
        rows.append([str(a.get("arm")), num(a.get("pulls")), num(a.get("running")), num(a.get("best_reward")),
                     num(a.get("growth_rate")), num(a.get("lower")), num(a.get("upper")), elim])
    _indented_table(["arm", "pulls", "running", "best", "growth", "lower", "upper", "eliminated"], rows, out,
                    right=range(1, 7))


def _spc(st, out):
    out.write("  configs %s, lcb %s, runs %s, running %s, seconds %s, max cap %s\n" % (
        st.get("configs"), st.get("lcb"), num(st.get("runs")), num(st.get("running")), num(st.get("seconds")),
        num(st.get("max_cap"))))
    samples = st.get("samples") or []
    if len(samples) > 1:
        out.write("  samples: %s\n" % ", ".join("%s configs (t %s)" % (s.get("size"), s.get("t")) for s in samples))
    testers = [t for t in st.get("testers") or [] if isinstance(t, dict)]
    key = (lambda t: (t.get("lcb") if isinstance(t.get("lcb"), (int, float)) else float("inf"),
                      t.get("tester", 0)))
    top = sorted(testers, key=key)[:SPC_TOP]
    rows = [[num(t.get("tester")), num(t.get("config_id")), num(t.get("lcb")), num(t.get("cap")),
             num(t.get("active_instances")), num(t.get("solved")), num(t.get("runs")),
             num(t.get("mean_capped_runtime")), config_text(t.get("config"))] for t in top]
    out.write("  testers by LCB (smallest first, as the main loop picks):\n")
    _indented_table(["tester", "config", "lcb", "cap", "active", "solved", "runs", "mean", "params"], rows, out,
                    right=range(8))
    if len(testers) > len(top):
        out.write("    ... and %d other testers\n" % (len(testers) - len(top)))


def _bo_bos(st, out):
    bos = st.get("bos") or {}
    out.write("  created %s, running %s, observations %s, n_init %s, epochs %s, n0 %s, kappa %s\n" % (
        num(st.get("created")), num(st.get("running")), num(st.get("observations")), num(st.get("n_init")),
        num(st.get("epochs")), num(st.get("n0")), num(st.get("kappa"))))
    out.write("  optimal stopping: triggered %s, stopped %s, epochs saved %s\n" % (
        num(bos.get("triggered")), num(bos.get("stopped")), num(bos.get("epochs_saved"))))
    if st.get("model_error"):
        out.write("  model error: %s\n" % st["model_error"])
    verdicts = st.get("verdicts") or []
    rows = [[num(v.get("trial_id")), num(v.get("epoch")), str(v.get("action")), str(v.get("verdict")),
             num(v.get("p_worse")), num(v.get("incumbent_error")), str(v.get("note") or "")]
            for v in verdicts[:MAX_VERDICTS] if isinstance(v, dict)]
    if rows:
        out.write("  verdicts of running trials:\n")
        _indented_table(["trial", "epoch", "action", "verdict", "p_worse", "incumbent", "note"], rows, out,
                        right=(0, 1, 4, 5))
    if len(verdicts) > MAX_VERDICTS:
        out.write("    ... and %d more\n" % (len(verdicts) - MAX_VERDICTS))


def _indented_table(headers, rows, out, right=(), indent="    "):
    if not rows:
        return

    class Indent:
        def write(self, t):
            out.write(indent + t)
    table(headers, rows, Indent(), right=right)


VIEWS = {
    "hyperband": _brackets,
    "successive_halving": _brackets,
    "asha": _brackets,
    "rising_bandits": _rising,
    "spc": _spc,
    "bo_bos": _bo_bos,
}


def scheduler_view(name, st, out):
    """The scheduler's own state; a generic tree when bdctl has no view for it
    or the view does not fit what the daemon sent."""
    view = VIEWS.get(name)
    if view is not None and isinstance(st, dict):
        buf = []

        class Buf:
            def write(self, t):
                buf.append(t)
        try:
            view(st, Buf())
        except (TypeError, ValueError, AttributeError, KeyError):
            buf = None
        if buf is not None:
            out.write("".join(buf))
            return
    state = dict(st) if isinstance(st, dict) else st
    if isinstance(state, dict):
        state.pop("incumbent", None)  # shown above
    tree(state, out, indent=1)


def report(s, out):
    """Writes the whole report for study answer s."""
    out.write("Study %s: %s\n" % (s.get("id"), s.get("name")))
    out.write("State:      %s    owner %s    created %s    last activity %s\n" % (
        s.get("state", "?"), s.get("owner", "?"), when(s.get("created_at")), when(s.get("last_activity_at"))))
    _definition(s, out)
    if s.get("metadata"):
        out.write("Metadata:   %s\n" % json.dumps(s["metadata"], sort_keys=True))
    out.write("Trials:     %s\n" % counts_text(s.get("trials")))
    _usage(s, out)
    _incumbent("Incumbent: ", s.get("incumbent"), out)
    full = s.get("incumbent_full_budget")
    if isinstance(full, dict) and isinstance(s.get("incumbent"), dict) \
            and full.get("trial_id") != s["incumbent"].get("trial_id"):
        _incumbent("At full budget:", full, out)
    sched = s.get("scheduler") or {}
    name = sched.get("name", "?")
    out.write("Scheduler state (%s):\n" % name)
    scheduler_view(name, sched.get("state"), out)
