"""The engine's files call one another in one direction only (issue 18): no
file of server/ calls a function of a file that (directly or through
others) calls it. The layout this checks is described in server/README.md.

The check reads the C sources: each bd_* function is owned by the file that
defines it; a file depends on the owners of the bd_* functions it calls.
It runs on the source tree, needs no daemon, and fails naming the cycle.

struct bd_engine is private to engine.c (the top of the engine): the other
files reach its fields through accessors that engine.c defines. An accessor
is a function of engine.c whose body is one return statement calling no
function (atomic_load aside); calling it runs no code of engine.c, so calls
to it count as calls of a separate node, "engine.c (accessors)", that calls
nothing. Every other function of engine.c stays in node "engine.c", which
nothing may call. The check also fails when a file other than engine.c
defines struct bd_engine or reads a field through a bd_engine pointer."""

import os
import re
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SERVER = os.path.join(ROOT, "server")
DEFINITION = re.compile(r"^[a-z_][\w \*]*?\b(bd_\w+)\s*\(", re.M)
CALL = re.compile(r"\b(bd_\w+)\s*\(")
ACCESSORS = "engine.c (accessors)"
# The body of an accessor: one return of an expression that calls nothing
# but atomic_load.
ACCESSOR_BODY = re.compile(r"\{\s*return\s+(?:[^;(){}]|atomic_load\s*\([^;(){}]*\))*;\s*\}")
ENGINE_STRUCT = re.compile(r"\bstruct\s+bd_engine\s*\{")
ENGINE_POINTER = re.compile(r"\b(?:struct\s+)?bd_engine\s*\*\s*(?:const\s+)?(\w+)")


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    return re.sub(r'"(\\.|[^"\\])*"', '""', text)


def read_sources(directory, suffixes=(".c",)):
    sources = {}
    for name in sorted(os.listdir(directory)):
        if name.endswith(suffixes):
            with open(os.path.join(directory, name), encoding="utf-8") as f:
                sources[name] = strip_comments(f.read())
    return sources


def body_at(text, start):
    """The braced body that begins at or after start, or None."""
    i = text.find("{", start)
    if i < 0:
        return None
    depth = 0
    for j in range(i, len(text)):
        depth += {"{": 1, "}": -1}.get(text[j], 0)
        if depth == 0:
            return text[i:j + 1]
    return None


def call_graph(sources=None):
    sources = read_sources(SERVER) if sources is None else sources
    owner = {}
    for name, text in sources.items():
        for m in DEFINITION.finditer(text):
            line_end = text.find("\n", m.end())
            tail = text[m.end():line_end if line_end >= 0 else len(text)]
            if not tail.rstrip().endswith(";"):  # a definition, not a prototype
                node = name
                if name == "engine.c" and ACCESSOR_BODY.fullmatch(body_at(text, m.end()) or ""):
                    node = ACCESSORS
                owner.setdefault(m.group(1), node)
    graph = {name: set() for name in sources}
    graph[ACCESSORS] = set()
    for name, text in sources.items():
        for m in CALL.finditer(text):
            callee = owner.get(m.group(1))
            if callee and callee != name:
                graph[name].add(callee)
    return graph


def engine_field_reads(text):
    """The places where text reads a field through a bd_engine pointer."""
    names = set(ENGINE_POINTER.findall(text))
    if not names:
        return []
    pattern = re.compile(r"\b(%s)\s*->\s*\w+" % "|".join(sorted(map(re.escape, names))))
    return [m.group(0) for m in pattern.finditer(text)]


def c_sources_outside_engine_c():
    """Every C source and header of the daemon, its clients and its tests
    but server/engine.c, by path relative to the root."""
    found = {}
    for top in ("server", "api", "storage", "clients", "tests"):
        for directory, dirs, files in os.walk(os.path.join(ROOT, top)):
            dirs[:] = [d for d in dirs if d not in ("node_modules", "__pycache__")]
            for name in files:
                path = os.path.relpath(os.path.join(directory, name), ROOT)
                if name.endswith((".c", ".h")) and path != os.path.join("server", "engine.c"):
                    with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
                        found[path] = strip_comments(f.read())
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


class EngineLayering(unittest.TestCase):
    def test_no_call_cycles_among_the_server_files(self):
        graph = call_graph()
        self.assertIn("engine_registry.c", graph["engine_txn.c"], "the check reads the calls at all")
        cycle = find_cycle(graph)
        self.assertIsNone(cycle, "call cycle: " + " -> ".join(cycle or []))

    def test_nothing_calls_the_engine_lifecycle_or_the_request_files(self):
        graph = call_graph()
        top = {"engine.c", "engine_studies.c", "engine_trials.c", "engine_export.c", "engine_history.c"}
        for name, callees in graph.items():
            if name.startswith("engine") or name == "study.c":
                self.assertFalse(callees & (top - {name}) - ({"engine_trials.c"} if name == "engine.c" else set()),
                                 "%s calls %s" % (name, sorted(callees & top)))

    def test_the_study_runtime_knows_nothing_of_the_engine(self):
        graph = call_graph()
        self.assertFalse({c for c in graph["study.c"] if c.startswith("engine")}, graph["study.c"])

    def test_the_engine_files_reach_struct_bd_engine_through_accessors(self):
        graph = call_graph()
        self.assertIn(ACCESSORS, graph["engine_registry.c"], "the check finds the accessors at all")
        self.assertFalse(graph[ACCESSORS])

    def test_struct_bd_engine_is_defined_in_engine_c_only(self):
        self.assertTrue(ENGINE_STRUCT.search(read_sources(SERVER)["engine.c"]), "the check finds the definition")
        for path, text in c_sources_outside_engine_c().items():
            self.assertFalse(ENGINE_STRUCT.search(text), "%s defines struct bd_engine" % path)

    def test_no_file_but_engine_c_reads_a_field_of_bd_engine(self):
        for path, text in c_sources_outside_engine_c().items():
            self.assertEqual(engine_field_reads(text), [], "%s reads bd_engine's fields" % path)


class TheCheckItself(unittest.TestCase):
    """The checks above fail on sources that break the rules."""

    LIFECYCLE = ("void bd_engine_close(bd_engine *e)\n{\n    bd_registry_free(e->registry);\n}\n"
                 "bd_store *bd_engine_store(bd_engine *e)\n{\n    return e->store;\n}\n"
                 "int bd_engine_closing(bd_engine *e)\n{\n    return atomic_load(&e->closing);\n}\n")

    def test_an_accessor_that_calls_nothing_is_no_cycle(self):
        registry = ("void bd_registry_free(bd_registry *r)\n{\n    free(r);\n}\n"
                    "int bd_engine_take(bd_engine *e)\n{\n    return bd_engine_closing(e) + !bd_engine_store(e);\n}\n")
        graph = call_graph({"engine.c": self.LIFECYCLE, "engine_registry.c": registry})
        self.assertEqual(graph["engine_registry.c"], {ACCESSORS})
        self.assertIsNone(find_cycle(graph))

    def test_a_call_of_engine_c_that_runs_code_is_a_cycle(self):
        lifecycle = self.LIFECYCLE + "int bd_engine_healthy(bd_engine *e)\n{\n    return bd_registry_ok(e);\n}\n"
        lifecycle += "bd_store *bd_engine_store2(bd_engine *e)\n{\n    return bd_x(e->store);\n}\n"
        registry = ("int bd_registry_ok(bd_engine *e)\n{\n    return 1;\n}\n"
                    "void bd_registry_free(bd_registry *r)\n{\n    bd_engine_store2(0);\n}\n")
        graph = call_graph({"engine.c": lifecycle, "engine_registry.c": registry})
        self.assertEqual(find_cycle(graph), ["engine.c", "engine_registry.c", "engine.c"])

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
