"""banditd.cli: `bdctl`, the banditd command line for people at a terminal and
for shell loops (standard library only; YAML study files need python3-yaml).

    bdctl [--url URL] [--token T | --token-file F] COMMAND ...

The daemon's address comes from --url, else $BANDITD_URL, else
http://127.0.0.1:8080; the token from --token, --token-file, $BANDITD_TOKEN
or the file named by $BANDITD_TOKEN_FILE (in that order). A token is printed only by `tokens create`,
which mints one. Read commands print a table or a report; --json prints the
daemon's JSON instead.

Exit codes: 0 success; 1 an error (the daemon's message and field, a file
that cannot be read, a connection failure naming the URL); 2 a usage error
(bad arguments, no token). For shell loops: `suggest` exits 3 when the study
is done and 4 when there is nothing to do yet (it prints "wait N ms");
`report` exits 3 when the trial should stop.
"""

import argparse
import csv
import http.client
import json
import os
import sys

from .client import BanditdError, Client, read_token
from . import cli_format as fmt
from .cli_input import InputError, load_study
from .cli_show import report as show_report

_UNSET = object()  # an option left out (None means "default" for quotas)
from .cli_tail import tail

DEFAULT_URL = "http://127.0.0.1:8080"


def _page_size():
    """Items per listing request: $BDCTL_PAGE_SIZE (1..1000, the daemon's
    maximum; small values exercise paging), else 1000."""
    try:
        return min(1000, max(1, int(os.environ.get("BDCTL_PAGE_SIZE", "1000"))))
    except ValueError:
        return 1000


PAGE = _page_size()
EXIT_ERROR, EXIT_USAGE = 1, 2
EXIT_DONE, EXIT_WAIT, EXIT_STOP = 3, 4, 3
STATES = ("running", "completed", "stopped", "failed", "expired")


class UsageError(Exception):
    pass


# ---- output helpers ----

def _out():
    return sys.stdout


def _print_json(doc):
    sys.stdout.write(json.dumps(doc, indent=2) + "\n")


def _pages(c, path, query, limit=None):
    """Yields items of a paged listing (key "studies" or "trials"), following
    next_after; stops after `limit` items when given."""
    key = "studies" if path == "/v1/studies" else "trials"
    after, n = 0, 0
    while True:
        q = dict(query)
        q["after"] = after
        q["limit"] = PAGE if limit is None else max(1, min(PAGE, limit - n))
        page = c.request("GET", path, query=q)
        items = page.get(key) or []
        for it in items:
            yield it
            n += 1
            if limit is not None and n >= limit:
                return
        nxt = page.get("next_after")
        if nxt is None or not items:
            return
        if not isinstance(nxt, int) or nxt <= after:
            raise BanditdError(200, "bad_response", "next_after %r does not advance past %d" % (nxt, after))
        after = nxt


# ---- studies ----

def cmd_studies(c, a):
    query = {"name": a.name}
    if a.json:
        _print_json(list(_pages(c, "/v1/studies", query)))
        return 0
    rows = []
    for s in _pages(c, "/v1/studies", query):
        inc = s.get("incumbent")
        rows.append([str(s.get("id")), str(s.get("name")), str((s.get("scheduler") or {}).get("name", "?")),
                     str(s.get("state", "?")), fmt.counts_text(s.get("trials")),
                     fmt.num(inc.get("value")) if isinstance(inc, dict) else "-", fmt.when(s.get("last_activity_at"))])
    if not rows:
        sys.stderr.write("no studies\n")
        return 0
    fmt.table(["id", "name", "scheduler", "state", "trials", "best", "last activity"], rows, _out(), right=(0, 5))
    return 0


def cmd_show(c, a):
    s = c.get_study(a.id)
    if a.json:
        _print_json(s)
    else:
        show_report(s, _out())
    return 0


def cmd_create(c, a):
    body = load_study(a.file)
    if a.if_exists is not None:
        body["if_exists"] = a.if_exists
    for k in ("name", "parameters", "scheduler"):
        if k not in body:
            raise InputError("%s has no %r: a study needs name, parameters and scheduler" % (a.file, k))
    s = c.request("POST", "/v1/studies", body)
    if a.json:
        _print_json(s)
    else:
        sys.stdout.write("%s\n" % s.get("id"))
        sys.stderr.write("study %s %r (%s, %s)\n" % (s.get("id"), s.get("name"),
                                                     (s.get("scheduler") or {}).get("name"), s.get("state")))
    return 0


def cmd_delete(c, a):
    c.delete_study(a.id)
    sys.stderr.write("deleted study %d\n" % a.id)
    return 0


def cmd_pause(c, a):
    s = c.pause_study(a.id)
    if a.json:
        _print_json(s)
    else:
        sys.stderr.write("study %d paused (state %s): suggest hands out nothing until 'bdctl resume %d'\n"
                         % (a.id, s.get("state"), a.id))
    return 0


def cmd_resume(c, a):
    s = c.resume_study(a.id)
    if a.json:
        _print_json(s)
    else:
        sys.stderr.write("study %d resumed (state %s)\n" % (a.id, s.get("state")))
    return 0


# ---- trials ----

def _param_names(study):
    return [p["name"] for p in study.get("parameters") or [] if isinstance(p, dict) and "name" in p]


def _instance(t):
    inst = t.get("instance")
    if not isinstance(inst, dict):
        return "", ""
    return str(inst.get("index", "")), str(inst.get("name") or "")


def cmd_trials(c, a):
    form = "json" if a.json else a.format
    query = {"state": a.state}
    trials = _pages(c, "/v1/studies/%d/trials" % a.id, query, a.limit)
    out = _out()
    if form == "json":
        out.write("[")
        for i, t in enumerate(trials):
            out.write((",\n " if i else "\n ") + json.dumps(t))
        out.write("\n]\n")
        return 0
    if form == "csv":
        names = _param_names(c.get_study(a.id))
        w = csv.writer(out, lineterminator="\n")
        w.writerow(["trial_id", "state", "budget", "value", "timeout", "instance_index", "instance_name", "worker",
                    "created_at", "finished_at", "resume_from", "reason"] + ["params_" + n for n in names])
        for t in trials:
            cfg = t.get("config") if isinstance(t.get("config"), dict) else {}
            idx, iname = _instance(t)
            w.writerow([t.get("id"), t.get("state"), _csv_num(t.get("budget")), _csv_num(t.get("value")),
                        "1" if t.get("timeout") else "0", idx, fmt.csv_guard(iname or ""),
                        fmt.csv_guard(t.get("worker") or ""), _csv_num(t.get("created_at")),
                        _csv_num(t.get("finished_at")), t.get("resume_from") or "",
                        fmt.csv_guard(t.get("reason") or "")]
                       + [_csv_cell(cfg.get(n)) for n in names])
        return 0
    # A streamed table: the first page sets the widths, later rows may be wider.
    headers = ["id", "state", "budget", "value", "worker", "instance", "config"]
    right = (0, 2, 3)
    widths, buf, n = None, [], 0
    for t in trials:
        idx, iname = _instance(t)
        value = fmt.num(t.get("value")) + (" timeout" if t.get("timeout") else "")
        buf.append([str(t.get("id")), str(t.get("state")), fmt.num(t.get("budget")), value,
                    str(t.get("worker") or "-"), iname or idx or "-", fmt.config_text(t.get("config"))])
        n += 1
        if len(buf) >= 200:
            widths = _flush_rows(headers, buf, widths, right)
            buf = []
    if buf or widths is None:
        if n == 0:
            sys.stderr.write("no trials\n")
            return 0
        _flush_rows(headers, buf, widths, right)
    return 0


def _flush_rows(headers, rows, widths, right):
    if widths is None:
        return fmt.table(headers, rows, _out(), right=right)
    fmt.table_rows(rows, widths, _out(), right=right)
    return widths


def _csv_num(v):
    return "" if v is None else repr(v) if isinstance(v, float) else str(v)


def _csv_cell(v):
    if v is None:
        return ""
    if isinstance(v, (dict, list, bool)):
        return json.dumps(v)
    if isinstance(v, str):  # a categorical value: user text, guarded as the server's export does
        return fmt.csv_guard(v)
    return _csv_num(v)


class _Target:
    """The output of export: a file written beside its final name and renamed
    when complete (a failed export leaves no half file), or standard output."""

    def __init__(self, path, binary):
        self.path = path
        self.tmp = None
        if path in (None, "-"):
            self.f = sys.stdout.buffer if binary else sys.stdout
        else:
            self.tmp = "%s.part-%d" % (path, os.getpid())
            try:
                self.f = open(self.tmp, "wb" if binary else "w", newline="" if not binary else None)
            except OSError as e:
                raise InputError("cannot write %s: %s" % (self.tmp, e.strerror or e))

    def commit(self):
        self.f.flush()
        if self.tmp:
            self.f.close()
            os.replace(self.tmp, self.path)
            self.tmp = None

    def abort(self):
        if self.tmp:
            self.f.close()
            try:
                os.unlink(self.tmp)
            except OSError:
                pass


def cmd_export(c, a):
    if a.format == "csv":
        c.get_study(a.id)  # a clear 404 for an unknown study before a file is created
        target = _Target(a.output, binary=True)
        try:
            n = c.export_csv(a.id, target.f, state=a.state)
            target.commit()
        except BaseException:
            target.abort()
            raise
        if a.output not in (None, "-"):
            sys.stderr.write("wrote %d bytes to %s\n" % (n, a.output))
        return 0
    study = c.get_study(a.id)
    target = _Target(a.output, binary=False)
    n = 0
    try:
        f = target.f
        f.write('{"study": %s,\n "trials": [' % json.dumps(study))
        for t in _pages(c, "/v1/studies/%d/trials" % a.id, {"state": a.state, "include": "measurements"}):
            f.write((",\n  " if n else "\n  ") + json.dumps(t))
            n += 1
        f.write("\n ]}\n")
        target.commit()
    except BaseException:
        target.abort()
        raise
    if a.output not in (None, "-"):
        sys.stderr.write("wrote %d trials to %s\n" % (n, a.output))
    return 0


def cmd_tail(c, a):
    return tail(c, a.id, a.interval, a.lines, a.json)


# ---- the worker's side: suggest, report, complete, fail ----

def cmd_suggest(c, a):
    got = c.suggest(a.id, worker=a.worker, count=1)
    trials = got.get("trials") or []
    if trials:
        t = trials[0]
        if a.shell:
            sys.stdout.write(_shell_vars(t))
        else:
            doc = {"id": t.get("id"), "budget": t.get("budget"), "config": t.get("config"),
                   "resume_from": t.get("resume_from")}
            for k in ("instance", "scheduler"):
                if k in t:
                    doc[k] = t[k]
            sys.stdout.write(json.dumps(doc) + "\n")
        return 0
    if got.get("done"):
        sys.stdout.write("done\n")
        return EXIT_DONE
    if got.get("paused"):
        sys.stderr.write("study %d is paused ('bdctl resume %d')\n" % (a.id, a.id))
    sys.stdout.write("wait %d ms\n" % int(got.get("retry_after_ms") or 0))
    return EXIT_WAIT


def _shell_vars(t):
    """The trial as sh assignments for eval: BD_TRIAL, BD_BUDGET, BD_RESUME_FROM,
    BD_CONFIG (JSON), BD_INSTANCE, and BD_P_<name> for each parameter whose
    name is a shell identifier. Every value is single-quoted."""
    import shlex
    cfg = t.get("config") if isinstance(t.get("config"), dict) else {}
    inst = t.get("instance") if isinstance(t.get("instance"), dict) else {}
    pairs = [("BD_TRIAL", t.get("id")), ("BD_BUDGET", t.get("budget")),
             ("BD_RESUME_FROM", t.get("resume_from") or ""), ("BD_CONFIG", fmt.compact_json(cfg)),
             ("BD_INSTANCE", inst.get("name") or "")]
    for k, v in cfg.items():
        if k.isidentifier() and k.isascii():
            pairs.append(("BD_P_" + k, v if isinstance(v, (str, int, float)) else fmt.compact_json(v)))
    return "".join("%s=%s\n" % (k, shlex.quote(v if isinstance(v, str) else
                                                 repr(v) if isinstance(v, float) else str(v)))
                   for k, v in pairs)


def cmd_report(c, a):
    got = c.measure(a.trial, a.step, a.value, elapsed_seconds=a.elapsed)
    action = got.get("action")
    reason = got.get("reason")
    sys.stdout.write("%s%s\n" % (action, ": " + reason if reason else ""))
    return EXIT_STOP if action == "stop" else 0


def cmd_complete(c, a):
    if a.timeout:
        if a.value is not None:
            raise UsageError("give a VALUE or --timeout, not both")
        got = c.complete(a.trial, status="timeout", runtime=a.runtime, elapsed_seconds=a.elapsed)
    elif a.diverged is not None:
        if a.value is not None:
            raise UsageError("give a VALUE or --diverged, not both")
        got = c.complete(a.trial, value=None, reason=a.diverged, elapsed_seconds=a.elapsed)
    else:
        if a.value is None:
            raise UsageError("give the trial's VALUE, --timeout or --diverged REASON")
        got = c.complete(a.trial, value=a.value, runtime=a.runtime, elapsed_seconds=a.elapsed)
    if a.json:
        _print_json(got)
    return 0


def cmd_fail(c, a):
    got = c.fail(a.trial, reason=a.reason)
    if a.json:
        _print_json(got)
    return 0


# ---- users and tokens ----

def cmd_users_create(c, a):
    u = c.create_user(a.name, admin=a.admin)
    if a.json:
        _print_json(u)
    else:
        sys.stdout.write("user %s %s%s\n" % (u.get("id"), u.get("name"), " (admin)" if u.get("admin") else ""))
    return 0


def _limit(text):
    """A quota on the command line: a whole number >= 0, or "default"."""
    if text == "default":
        return None
    try:
        v = int(text)
    except ValueError:
        v = -1
    if v < 0:
        raise argparse.ArgumentTypeError("must be a whole number >= 0 or 'default': %r" % text)
    return v


def cmd_users_limits(c, a):
    given = {k: getattr(a, k) for k in ("studies", "definition_bytes") if getattr(a, k) is not _UNSET}
    u = c.set_user_limits(a.name, **given)
    if a.json:
        _print_json(u)
    else:
        lim = u.get("limits") or {}
        sys.stdout.write("user %s: at most %s studies, %s definition bytes, %s slow requests at once\n"
                         % (u.get("name"), lim.get("studies"), lim.get("definition_bytes"),
                            lim.get("slow_requests")))
    return 0


def cmd_tokens_create(c, a):
    t = c.create_token(a.user)
    if a.json:
        _print_json(t)
    else:
        # The token alone on stdout (TOKEN=$(bdctl tokens create alice)); the rest on stderr.
        sys.stdout.write("%s\n" % t.get("token"))
        sys.stderr.write("token %s for user %s; shown once, revoke with: bdctl tokens revoke %s\n"
                         % (t.get("token_id"), t.get("user", a.user), t.get("token_id")))
    return 0


def cmd_tokens_revoke(c, a):
    c.revoke_token(a.id)
    sys.stderr.write("revoked token %d\n" % a.id)
    return 0


def cmd_me(c, a):
    me = c.me()
    if a.json:
        _print_json(me)
    else:
        for k, v in me.items():
            text = fmt.when(v) if k.endswith("_at") else fmt.num(v) if not isinstance(v, (dict, list)) \
                else fmt.compact_json(v)
            sys.stdout.write("%-11s %s\n" % (k + ":", text))
    return 0


# ---- arguments ----

def _positive(text):
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not an integer" % text)
    if v < 1:
        raise argparse.ArgumentTypeError("must be at least 1, not %d" % v)
    return v


def _finite(text):
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a number" % text)
    if v != v or v in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError("%r is not a finite number" % text)
    return v


def _interval(text):
    v = _finite(text)
    if not 0.05 <= v <= 3600:
        raise argparse.ArgumentTypeError("must be between 0.05 and 3600 seconds")
    return v


def _nonneg(text):
    v = _finite(text)
    if v < 0:
        raise argparse.ArgumentTypeError("must not be negative")
    return v


def _connection_args(p, defaults):
    d = (lambda v: v) if defaults else (lambda v: argparse.SUPPRESS)
    g = p.add_argument_group("connection")
    g.add_argument("--url", default=d(None), help="the daemon (default $BANDITD_URL, else %s)" % DEFAULT_URL)
    g.add_argument("--token", default=d(None), help="API token (default $BANDITD_TOKEN; prefer a file: "
                                                       "other users can see command lines)")
    g.add_argument("--token-file", default=d(None), help="file holding the token, e.g. banditd.db.admin-token "
                                                            "(default $BANDITD_TOKEN_FILE)")


def build_parser():
    top = argparse.ArgumentParser(prog="bdctl", description="Command line for the banditd daemon.",
                                  epilog="exit codes: 0 ok, 1 error, 2 usage; suggest: 3 done, 4 wait; "
                                         "report: 3 stop")
    _connection_args(top, True)
    sub = top.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    def cmd(name, func, help, read=False, parent=sub):
        p = parent.add_parser(name, help=help, description=help)
        _connection_args(p, False)
        if read:
            p.add_argument("--json", action="store_true", help="print the daemon's JSON instead of a table")
        p.set_defaults(func=func, json=False)
        return p

    p = cmd("studies", cmd_studies, "list your studies", read=True)
    p.add_argument("--name", help="only the study of this exact name")
    p = cmd("show", cmd_show, "a report on one study (definition, counts, best, scheduler state)", read=True)
    p.add_argument("id", type=_positive, metavar="ID")
    p = cmd("create", cmd_create, "create a study from a JSON or YAML file ('-': stdin); prints its id", read=True)
    p.add_argument("file", metavar="FILE")
    p.add_argument("--if-exists", choices=("load", "error", "create"),
                   help="when you have a live study of that name: load it (same definition), "
                        "error (the daemon's default) or create another")
    p = cmd("delete", cmd_delete, "delete a study")
    p.add_argument("id", type=_positive, metavar="ID")
    # Top-level verbs on one study, as delete: "studies" is the listing, not a group.
    p = cmd("pause", cmd_pause, "pause a study: suggest hands out nothing, running trials may finish", read=True)
    p.add_argument("id", type=_positive, metavar="ID")
    p = cmd("resume", cmd_resume, "resume a paused study", read=True)
    p.add_argument("id", type=_positive, metavar="ID")

    p = cmd("trials", cmd_trials, "list a study's trials", read=True)
    p.add_argument("id", type=_positive, metavar="ID")
    p.add_argument("--state", choices=STATES)
    p.add_argument("--limit", type=_positive, help="at most N trials (default all)")
    p.add_argument("--format", choices=("table", "json", "csv"), default="table")
    p = cmd("export", cmd_export, "write all trials to a file: CSV from the daemon or JSON with measurements")
    p.add_argument("id", type=_positive, metavar="ID")
    p.add_argument("-o", "--output", help="file to write (default standard output)")
    p.add_argument("--format", choices=("csv", "json"), default="csv")
    p.add_argument("--state", choices=STATES)
    p = cmd("tail", cmd_tail, "follow a study live: new trials, state changes, new bests (Ctrl-C ends)",
            read=True)
    p.add_argument("id", type=_positive, metavar="ID")
    p.add_argument("--interval", type=_interval, default=1.0, help="seconds between polls (default 1)")
    p.add_argument("-n", "--lines", type=int, default=10, help="existing trials to show first (default 10)")

    p = cmd("suggest", cmd_suggest, "ask for one trial: prints it as JSON, or 'done' (exit 3) / 'wait N ms' (exit 4)")
    p.add_argument("id", type=_positive, metavar="ID")
    p.add_argument("--worker", help="worker name recorded on the trial")
    p.add_argument("--shell", action="store_true",
                   help="print sh assignments (BD_TRIAL, BD_BUDGET, BD_RESUME_FROM, BD_CONFIG, BD_P_<param>) "
                        "for eval")
    p = cmd("report", cmd_report, "report an intermediate value; exit 0 continue, 3 stop")
    p.add_argument("trial", type=_positive, metavar="TRIAL")
    p.add_argument("step", type=_nonneg, metavar="STEP")
    p.add_argument("value", type=_finite, metavar="VALUE")
    p.add_argument("--elapsed", type=_nonneg, help="seconds the trial has run")
    p = cmd("complete", cmd_complete, "complete a trial with its VALUE, --timeout or --diverged REASON")
    p.add_argument("trial", type=_positive, metavar="TRIAL")
    p.add_argument("value", type=_finite, nargs="?", metavar="VALUE")
    p.add_argument("--timeout", action="store_true", help="the run hit its cap")
    p.add_argument("--diverged", metavar="REASON", help="the run diverged (the worst value)")
    p.add_argument("--runtime", type=_nonneg, help="measured runtime (seconds)")
    p.add_argument("--elapsed", type=_nonneg, help="seconds the trial ran")
    p.add_argument("--json", action="store_true", help="print the daemon's answer")
    p = cmd("fail", cmd_fail, "mark a trial failed")
    p.add_argument("trial", type=_positive, metavar="TRIAL")
    p.add_argument("reason", nargs="?", metavar="REASON")
    p.add_argument("--json", action="store_true", help="print the daemon's answer")

    users = cmd("users", None, "manage users (admin)").add_subparsers(dest="users_command", metavar="ACTION")
    users.required = True
    p = cmd("create", cmd_users_create, "create a user", read=True, parent=users)
    p.add_argument("name", metavar="NAME")
    p.add_argument("--admin", action="store_true", help="an administrator")
    p = cmd("limits", cmd_users_limits, "set a user's own quotas (a limit not given is kept)", parent=users)
    p.add_argument("name", metavar="NAME")
    p.add_argument("--studies", type=_limit, default=_UNSET, metavar="N",
                   help="live studies at most, or 'default' (the daemon's --max-studies-per-user)")
    p.add_argument("--definition-bytes", type=_limit, default=_UNSET, metavar="N",
                   help="total bytes of the studies' definitions, or 'default'")
    p.add_argument("--json", action="store_true", help="print the daemon's answer")
    tokens = cmd("tokens", None, "manage API tokens").add_subparsers(dest="tokens_command", metavar="ACTION")
    tokens.required = True
    p = cmd("create", cmd_tokens_create, "mint a token for USER and print it (the only time it is shown)",
            read=True, parent=tokens)
    p.add_argument("user", metavar="USER")
    p = cmd("revoke", cmd_tokens_revoke, "revoke a token by its id", parent=tokens)
    p.add_argument("id", type=_positive, metavar="ID")
    cmd("me", cmd_me, "who the token belongs to", read=True)
    return top


def _client(a):
    url = a.url or os.environ.get("BANDITD_URL") or DEFAULT_URL
    token, path = a.token, a.token_file
    if token is None and path is None:
        token = os.environ.get("BANDITD_TOKEN") or None
        path = None if token else os.environ.get("BANDITD_TOKEN_FILE") or None
    if token is None and path:
        try:
            token = read_token(path)
        except (OSError, ValueError) as e:
            raise UsageError("cannot read the token file %s: %s" % (path, getattr(e, "strerror", None) or e))
    if not token:
        raise UsageError("no token: give --token-file FILE, --token TOKEN, or set BANDITD_TOKEN or "
                         "BANDITD_TOKEN_FILE")
    if any(ch in token for ch in "\r\n"):
        raise UsageError("the token holds a line break")
    try:
        return Client(url, token, retries=2), url
    except ValueError as e:
        raise UsageError(str(e))


def _error(text, code):
    sys.stderr.write("bdctl: %s\n" % text)
    return code


def main(argv=None):
    """Runs bdctl; returns the exit code (the console script exits with it).
    What it prints goes through fmt.TerminalSafe: names and reasons are other
    users' text."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = fmt.TerminalSafe(sys.stdout), fmt.TerminalSafe(sys.stderr)
    try:
        return _main(argv)
    finally:
        sys.stdout, sys.stderr = saved


def _main(argv):
    parser = build_parser()
    try:
        a = parser.parse_args(argv)
    except SystemExit as e:  # --help, or argparse's usage error (exit 2)
        return e.code if isinstance(e.code, int) else EXIT_USAGE
    url = None
    try:
        c, url = _client(a)
        with c:
            return a.func(c, a)
    except UsageError as e:
        return _error(str(e), EXIT_USAGE)
    except InputError as e:
        return _error(str(e), EXIT_ERROR)
    except BanditdError as e:
        field = " (field: %s)" % e.field if e.field else ""
        return _error("%s%s [HTTP %d %s]" % (e.message, field, e.status, e.code), EXIT_ERROR)
    except BrokenPipeError:
        # The reader went away (bdctl trials 1 | head): not an error of ours.
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0
    except (OSError, http.client.HTTPException) as e:
        if isinstance(e, OSError) and e.filename:  # writing an export, not the connection
            return _error("%s: %s" % (e.filename, e.strerror or e), EXIT_ERROR)
        return _error("cannot talk to banditd at %s: %s" % (url, getattr(e, "strerror", None) or e), EXIT_ERROR)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
