"""The engine's files call one another in one direction only (issue 18): no
file of server/ calls a function of a file that (directly or through
others) calls it. The layout this checks is described in server/README.md.

The check reads the C sources: each bd_* function is owned by the file that
defines it; a file depends on the owners of the bd_* functions it calls.
It runs on the source tree, needs no daemon, and fails naming the cycle."""

import os
import re
import unittest

SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "server")
DEFINITION = re.compile(r"^[a-z_][\w \*]*?\b(bd_\w+)\s*\(", re.M)
CALL = re.compile(r"\b(bd_\w+)\s*\(")


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r'"(\\.|[^"\\])*"', '""', text)


def call_graph():
    sources = {}
    for name in sorted(os.listdir(SERVER)):
        if name.endswith(".c"):
            with open(os.path.join(SERVER, name), encoding="utf-8") as f:
                sources[name] = strip_comments(f.read())
    owner = {}
    for name, text in sources.items():
        for m in DEFINITION.finditer(text):
            line_end = text.find("\n", m.end())
            tail = text[m.end():line_end if line_end >= 0 else len(text)]
            if not tail.rstrip().endswith(";"):  # a definition, not a prototype
                owner.setdefault(m.group(1), name)
    graph = {name: set() for name in sources}
    for name, text in sources.items():
        for m in CALL.finditer(text):
            callee = owner.get(m.group(1))
            if callee and callee != name:
                graph[name].add(callee)
    return graph


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


if __name__ == "__main__":
    unittest.main()
