"""No circles between files (issues 18 and 43): no file calls a function of a
file that (directly or through others) calls it. Three graphs are checked,
each on the source tree (no daemon needed), and a failure names the cycle:

- server/ (the engine and its helpers, sched/ and model/ included) and
  storage/, each on its own: a C file depends on the file that defines a
  bd_* function it names, called or taken as a pointer (an ops table). The
  calls inside a static inline function of a header it includes are its own
  when it calls that function. Names an X-macro makes (store_ops.h's lists
  expanded with bd_store_##name and the like) are expanded first, so the
  forwarders store.c generates and the backends' ops tables are seen too.
- clients/python/banditd/*.py: a module depends on every module of the
  package it imports, wherever the import is (a function body, an
  `if TYPE_CHECKING:` block).

There is no exception: every function of every file is in its file's node.
struct bd_engine is defined in server/engine_state.h, which only engine.c
(it builds and frees the struct) and engine_state.c (its accessors, which
call nothing) include; no other file reads its fields. The layout this
checks is described in server/README.md."""

import ast
import os
import re
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SERVER = os.path.join(ROOT, "server")
STORAGE = os.path.join(ROOT, "storage")
PYTHON_PACKAGE = os.path.join(ROOT, "clients", "python", "banditd")

NAME = re.compile(r"\bbd_\w+")
DEFINITION_START = re.compile(r"^[A-Za-z_][\w \*]*?\b(bd_\w+)\s*\(", re.M)
INLINE_START = re.compile(r"^static\s+inline\b[\w \*]*?\b(\w+)\s*\(", re.M)
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
MACRO = re.compile(r"^\s*#\s*define\s+(\w+)\(([^)]*)\)(.*)$", re.M)
PASTED = re.compile(r"\b(bd_\w*)\s*##\s*(\w+)")
ENGINE_STRUCT = re.compile(r"\bstruct\s+bd_engine\s*\{")
ENGINE_POINTER = re.compile(r"\b(?:struct\s+)?bd_engine\s*\*\s*(?:const\s+)?(\w+)")
# The files that may see struct bd_engine: its header, its accessors, and
# engine.c, which builds and frees it.
ENGINE_STATE_FILES = {"engine_state.h", "engine_state.c", "engine.c"}
TOKENS = re.compile(r"""^[ \t]*\#[ \t]*include[^\n]*|/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'""",
                    re.S | re.M)


def strip_comments(text):
    """text without its comments, and with its string and character
    literals emptied (a "//" inside a string is no comment) but for the
    names of #include lines, its continued lines joined (a macro is one line)."""
    def blank(m):
        token = m.group(0)
        if token.lstrip().startswith("#"):
            return token
        if token.startswith("/*"):
            return " " + "\n" * token.count("\n")
        if token.startswith("//"):
            return " "
        return token[0] * 2
    return TOKENS.sub(blank, text).replace("\\\n", " ")


def matching(text, i, open_char, close_char):
    """The index just past the bracket that closes the one at text[i]."""
    depth = 0
    for j in range(i, len(text)):
        if text[j] == open_char:
            depth += 1
        elif text[j] == close_char:
            depth -= 1
            if depth == 0:
                return j + 1
    return len(text)


def definitions(text, start=DEFINITION_START):
    """(name, body) of each function defined in text: a name at the start of
    a line, its parameter list, then a braced body (not a ";": a prototype)."""
    found = []
    for m in start.finditer(text):
        after = matching(text, m.end() - 1, "(", ")")
        rest = text[after:].lstrip()
        if rest.startswith("{"):
            brace = len(text) - len(rest)
            found.append((m.group(1), text[brace:matching(text, brace, "{", "}")]))
    return found


def x_macros(texts):
    """The X-macro lists among texts: {list name: [the first argument of each
    X(...) entry]}, from every `#define LIST(X) X(a, ...) X(b, ...)`."""
    lists = {}
    for text in texts:
        for m in MACRO.finditer(text):
            params = [p.strip() for p in m.group(2).split(",")]
            if len(params) == 1 and re.search(r"\b%s\s*\(" % re.escape(params[0]), m.group(3)):
                lists[m.group(1)] = re.findall(r"\b%s\s*\(\s*(\w+)" % re.escape(params[0]), m.group(3))
    return lists


def expand_pasted(text, lists):
    """The names an X-macro makes in text: for a macro M whose body pastes
    bd_prefix_##name (name its first parameter) and each LIST(M) in text,
    bd_prefix_<entry> for every entry of LIST. Returns (defined, named): the
    names M's body defines (`type bd_x_##name params {`) and those it only
    names (`.name = bd_x_##name,`)."""
    defined, named = set(), set()
    for m in MACRO.finditer(text):
        params = [p.strip() for p in m.group(2).split(",")]
        body = m.group(3)
        for paste in PASTED.finditer(body):
            if paste.group(2) != params[0]:
                continue
            is_definition = re.search(r"\b%s\s*##\s*%s\s+\w+\s*\{" % (re.escape(paste.group(1)), params[0]), body)
            for invocation in re.finditer(r"\b(\w+)\s*\(\s*%s\s*\)" % re.escape(m.group(1)), text):
                for entry in lists.get(invocation.group(1), ()):
                    (defined if is_definition else named).add(paste.group(1) + entry)
    return defined, named


def read_tree(directory, recursive=True):
    """{path relative to directory: text without comments} for the C sources
    and headers under directory."""
    found = {}
    for here, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if recursive and d not in ("__pycache__", "node_modules"))
        for name in sorted(files):
            if name.endswith((".c", ".h")):
                path = os.path.join(here, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    found[os.path.relpath(path, directory)] = strip_comments(f.read())
    return found


def included_inlines(name, files, seen=None):
    """{name: body} of the static inline functions of the headers that
    files[name] includes (directly or through other headers among files)."""
    seen = set() if seen is None else seen
    inlines = {}
    for include in INCLUDE.findall(files[name]):
        header = os.path.normpath(os.path.join(os.path.dirname(name), include))
        if header in files and header not in seen:
            seen.add(header)
            inlines.update(definitions(files[header], INLINE_START))
            inlines.update(included_inlines(header, files, seen))
    return inlines


def call_graph(files):
    """{each .c of files: the set of other .c files it depends on}; files
    maps a path to its text without comments (read_tree), headers included
    for their X-macro lists and inline functions."""
    sources = {name: text for name, text in files.items() if name.endswith(".c")}
    lists = x_macros(files.values())
    owner, names = {}, {}
    for name, text in sources.items():
        defined, named = expand_pasted(text, lists)
        for function in [f for f, _ in definitions(text)] + sorted(defined):
            owner.setdefault(function, name)
        names[name] = set(NAME.findall(text)) | named
        inlines, pending = included_inlines(name, files), set(names[name])
        while pending:  # what the inline functions it calls call, and so on
            called = set(NAME.findall(inlines.pop(pending.pop(), "")))
            pending |= called - names[name]
            names[name] |= called
    return {name: {owner[n] for n in names[name] if n in owner} - {name} for name in sources}


def import_graph(directory=PYTHON_PACKAGE, package="banditd", sources=None):
    """{module: the set of the package's modules it imports}, anywhere in its
    text; the package's __init__.py is module "__init__"."""
    if sources is None:
        sources = {}
        for name in sorted(os.listdir(directory)):
            if name.endswith(".py"):
                with open(os.path.join(directory, name), encoding="utf-8") as f:
                    sources[name[:-3]] = f.read()
    graph = {}
    for module, text in sources.items():
        imported = set()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    parts = alias.name.split(".")
                    if parts[0] == package:
                        imported.add(parts[1] if len(parts) > 1 else "__init__")
            elif isinstance(node, ast.ImportFrom):
                if node.level == 0 and (node.module or "").split(".")[0] != package:
                    continue
                parts = (node.module or "").split(".")[0 if node.level else 1:]
                if parts and parts[0]:
                    imported.add(parts[0])
                else:  # from banditd import x / from . import x: x a module, else the package's name
                    for alias in node.names:
                        imported.add(alias.name if alias.name in sources else "__init__")
        graph[module] = {m for m in imported if m in sources} - {module}
    return graph


def engine_field_reads(text):
    """The places where text reads a field through a bd_engine pointer."""
    names = set(ENGINE_POINTER.findall(text))
    if not names:
        return []
    pattern = re.compile(r"\b(%s)\s*->\s*\w+" % "|".join(sorted(map(re.escape, names))))
    return [m.group(0) for m in pattern.finditer(text)]


def c_sources_of_the_repository():
    """Every C source and header of the daemon, its clients and its tests,
    by path relative to the root."""
    found = {}
    for top in ("server", "api", "storage", "clients", "tests"):
        for path, text in read_tree(os.path.join(ROOT, top)).items():
            found[os.path.join(top, path)] = text
    return found


def find_cycle(graph):
    state, stack = {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph[n]):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


class ServerLayering(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.graph = call_graph(read_tree(SERVER))

    def test_no_call_cycles_among_the_server_files(self):
        self.assertIn("engine_registry.c", self.graph["engine_txn.c"], "the check reads the calls at all")
        self.assertIn(os.path.join("sched", "random.c"), self.graph[os.path.join("sched", "tpe.c")],
                      "the check reads sched/ and the ops tables' pointers")
        cycle = find_cycle(self.graph)
        self.assertIsNone(cycle, "call cycle: " + " -> ".join(cycle or []))

    def test_nothing_calls_the_engine_lifecycle_or_the_request_files(self):
        top = {"engine.c", "engine_studies.c", "engine_trials.c", "engine_export.c", "engine_history.c"}
        for name, callees in self.graph.items():
            if name.startswith("engine") or name == "study.c":
                allowed = {"engine_trials.c"} if name == "engine.c" else set()  # the reaper's sweep
                self.assertFalse(callees & (top - {name}) - allowed, "%s calls %s" % (name, sorted(callees & top)))

    def test_the_study_runtime_knows_nothing_of_the_engine(self):
        self.assertFalse({c for c in self.graph["study.c"] if c.startswith("engine")}, self.graph["study.c"])

    def test_the_engine_state_is_below_every_engine_file(self):
        self.assertIn("engine_state.c", self.graph["engine_registry.c"], "the check finds the accessors at all")
        self.assertIn("engine_state.c", self.graph["engine_txn.c"])
        self.assertFalse(self.graph["engine_state.c"], "engine_state.c calls %s" % sorted(self.graph["engine_state.c"]))

    def test_random_search_knows_nothing_of_tpe(self):
        self.assertNotIn(os.path.join("sched", "tpe.c"), self.graph[os.path.join("sched", "random.c")])


class EngineState(unittest.TestCase):
    def test_struct_bd_engine_is_defined_in_engine_state_h_only(self):
        sources = c_sources_of_the_repository()
        self.assertTrue(ENGINE_STRUCT.search(sources[os.path.join("server", "engine_state.h")]),
                        "the check finds the definition")
        for path, text in sources.items():
            if path != os.path.join("server", "engine_state.h"):
                self.assertFalse(ENGINE_STRUCT.search(text), "%s defines struct bd_engine" % path)

    def test_only_engine_c_and_engine_state_c_include_engine_state_h(self):
        including = {path for path, text in c_sources_of_the_repository().items()
                     if "engine_state.h" in INCLUDE.findall(text)}
        self.assertEqual(including, {os.path.join("server", "engine.c"), os.path.join("server", "engine_state.c")})

    def test_no_other_file_reads_a_field_of_bd_engine(self):
        sources = c_sources_of_the_repository()
        self.assertTrue(engine_field_reads(sources[os.path.join("server", "engine_state.c")]),
                        "the check finds the accessors' reads")
        for path, text in sources.items():
            if not (os.path.dirname(path) == "server" and os.path.basename(path) in ENGINE_STATE_FILES):
                self.assertEqual(engine_field_reads(text), [], "%s reads bd_engine's fields" % path)


class StorageLayering(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.graph = call_graph(read_tree(STORAGE))

    def test_no_call_cycles_among_the_storage_files(self):
        self.assertIn("sqlite_store.c", self.graph["store.c"], "the check reads the calls at all")
        self.assertIn("sqlite_users.c", self.graph["sqlite_store.c"], "the check reads the generated ops table")
        cycle = find_cycle(self.graph)
        self.assertIsNone(cycle, "call cycle: " + " -> ".join(cycle or []))

    def test_the_backends_call_nothing_of_store_c(self):
        for name, callees in self.graph.items():
            if name.startswith(("sqlite_", "pg_")):
                self.assertNotIn("store.c", callees, name)

    def test_the_helpers_of_a_backend_call_no_other_file_of_it(self):
        for helpers, prefix in (("pg_conn.c", "pg_"), ("sqlite_stmt.c", "sqlite_")):
            self.assertFalse({c for c in self.graph[helpers] if c.startswith(prefix)}, self.graph[helpers])
            self.assertIn(helpers, self.graph[prefix + "trials.c"])


class PythonClientLayering(unittest.TestCase):
    def test_no_import_cycles_among_the_package_modules(self):
        graph = import_graph()
        self.assertIn("optimize", graph["client"], "the check reads the imports at all")
        cycle = find_cycle(graph)
        self.assertIsNone(cycle, "import cycle: " + " -> ".join(cycle or []))


class TheCheckItself(unittest.TestCase):
    """The checks above fail on sources that break the rules."""

    LIFECYCLE = ("void bd_engine_close(bd_engine *e)\n{\n    bd_registry_free(e->registry);\n}\n")
    STATE = ("bd_store *bd_engine_store(bd_engine *e)\n{\n    return e->store;\n}\n"
             "int bd_engine_closing(bd_engine *e)\n{\n    return atomic_load(&e->closing);\n}\n")

    def graph(self, sources):
        return call_graph({name: strip_comments(text) for name, text in sources.items()})

    def test_calls_down_to_the_state_are_no_cycle(self):
        registry = ("void bd_registry_free(bd_registry *r)\n{\n    free(r);\n}\n"
                    "int bd_engine_take(bd_engine *e)\n{\n    return bd_engine_closing(e) + !bd_engine_store(e);\n}\n")
        graph = self.graph({"engine.c": self.LIFECYCLE, "engine_state.c": self.STATE, "engine_registry.c": registry})
        self.assertEqual(graph, {"engine.c": {"engine_registry.c"}, "engine_registry.c": {"engine_state.c"},
                                 "engine_state.c": set()})
        self.assertIsNone(find_cycle(graph))

    def test_an_accessor_left_in_engine_c_is_a_cycle(self):
        registry = "void bd_registry_free(bd_registry *r)\n{\n    bd_engine_store(0);\n}\n"
        graph = self.graph({"engine.c": self.LIFECYCLE + self.STATE, "engine_registry.c": registry})
        self.assertEqual(find_cycle(graph), ["engine.c", "engine_registry.c", "engine.c"])

    def test_a_cycle_through_a_third_file_is_found(self):
        graph = self.graph({"a.c": "void bd_a(void)\n{\n    bd_b();\n}\n",
                            "b.c": "void bd_b(void)\n{\n    bd_c();\n}\n",
                            "c.c": "int bd_c(void)\n{\n    return bd_a != 0;\n}\n"})
        self.assertEqual(find_cycle(graph), ["a.c", "b.c", "c.c", "a.c"])

    def test_a_function_pointer_in_a_table_is_a_dependency(self):
        store = "static const ops t = {.probe = bd_x_probe};\nint bd_s(void)\n{\n    return 0;\n}\n"
        graph = self.graph({"store.c": store, "x.c": "int bd_x_probe(void)\n{\n    return bd_s();\n}\n"})
        self.assertEqual(find_cycle(graph), ["store.c", "x.c", "store.c"])

    def test_a_definition_over_several_lines_is_no_prototype(self):
        text = strip_comments("int bd_f(int a,\n         int b)\n{\n    return a;\n}\nint bd_g(int a,\n    int b);\n")
        self.assertEqual([name for name, _ in definitions(text)], ["bd_f"])

    def test_a_string_holding_slashes_hides_no_call(self):
        text = ('int bd_is_url(const char *s)\n{\n    return strncmp(s, "postgresql://", 13) == 0 || '
                "bd_other(s, '\"');\n}\n/* bd_commented() */\nint bd_other(const char *s, char c);\n")
        stripped = strip_comments(text)
        self.assertIn("bd_other(s", stripped)
        self.assertNotIn("bd_commented", stripped)

    def test_names_an_x_macro_makes_are_seen(self):
        ops_h = ("#define BD_CALLS(X) \\\n    X(probe, (bd_store *s, double now), (s, now)) \\\n"
                 "    X(trial_get, (bd_store *s, int64_t id), (s, id))\n")
        store_c = ('#include "ops.h"\n#define FORWARD(name, params, args) \\\n    int bd_store_##name params \\\n'
                   "    { \\\n        return s->ops->name args; \\\n    }\nBD_CALLS(FORWARD)\n"
                   "int bd_store_open(void)\n{\n    return bd_x_open();\n}\n")
        x_c = ('#include "ops.h"\n#define SLOT(name, params, args) .name = bd_x_##name,\n'
               "const ops bd_x_ops = {BD_CALLS(SLOT)};\nint bd_x_open(void)\n{\n    return 0;\n}\n")
        probe_c = "int bd_x_probe(bd_store *s, double now)\n{\n    return 0;\n}\n"
        trials_c = "int bd_x_trial_get(bd_store *s, int64_t id)\n{\n    return 0;\n}\n"
        files = {"ops.h": ops_h, "store.c": store_c, "x.c": x_c, "x_probe.c": probe_c, "x_trials.c": trials_c}
        graph = self.graph(files)
        self.assertEqual(graph["x.c"], {"x_probe.c", "x_trials.c"})
        self.assertIsNone(find_cycle(graph))
        files["x_probe.c"] = "int bd_x_probe(bd_store *s, double now)\n{\n    return bd_store_trial_get(s, 1);\n}\n"
        self.assertEqual(find_cycle(self.graph(files)), ["store.c", "x.c", "x_probe.c", "store.c"])

    def test_a_call_inside_an_inline_function_of_an_included_header_counts(self):
        files = {"pg_internal.h": "static inline int bd_pg_enter(bd_pg *s)\n{\n    return bd_gc_enter(&s->gc);\n}\n",
                 "pg_users.c": '#include "pg_internal.h"\nint bd_pg_user(void)\n{\n    return bd_pg_enter(0);\n}\n',
                 "group_commit.c": "int bd_gc_enter(bd_gc *g)\n{\n    return bd_pg_user();\n}\n"}
        self.assertEqual(find_cycle(self.graph(files)), ["group_commit.c", "pg_users.c", "group_commit.c"])

    def test_an_import_anywhere_in_a_module_counts(self):
        sources = {"__init__": "from banditd.client import Client\n",
                   "client": "import json\n\n\ndef study():\n"
                             "    from banditd.optimize import Study\n    return Study\n",
                   "optimize": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .client import Client\n",
                   "cli": "from . import cli_format\nimport banditd.client\n", "cli_format": "import json\n"}
        graph = import_graph(sources=sources)
        self.assertEqual(graph, {"__init__": {"client"}, "client": {"optimize"}, "optimize": {"client"},
                                 "cli": {"cli_format", "client"}, "cli_format": set()})
        self.assertEqual(find_cycle(graph), ["client", "optimize", "client"])

    def test_field_reads_through_an_engine_pointer_are_found(self):
        self.assertEqual(engine_field_reads("int f(bd_engine *e)\n{\n    return e->cluster;\n}\n"), ["e->cluster"])
        self.assertEqual(engine_field_reads("typedef struct c { bd_engine *e; } c;\nx = c->e->store;"), ["e->store"])
        self.assertEqual(engine_field_reads("void g(const struct bd_engine *const eng) { eng -> store; }"),
                         ["eng -> store"])
        self.assertEqual(engine_field_reads("int f(bd_engine *e) { return bd_engine_cluster(e); }"), [])

    def test_a_definition_of_the_struct_is_found(self):
        self.assertTrue(ENGINE_STRUCT.search("struct bd_engine {\n    int x;\n};"))
        self.assertFalse(ENGINE_STRUCT.search("typedef struct bd_engine bd_engine;"))


if __name__ == "__main__":
    unittest.main()
