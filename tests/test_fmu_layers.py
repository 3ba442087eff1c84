"""The native FMU wrapper (soa_fmu/fmu/native/) is layered: each file calls only the files below it,
as MuJoCo's engine stages do (position -> velocity -> forces -> acceleration).  LAYERS below is the
one place the order is defined (instance.h and the README's map point here).

The call graph is read from the sources: every top-level definition of a file (a function or a
table, `static` ones private to it), every identifier a file uses, and the wrapper identifiers that
the function-like macros of instance.h use (FOR_SCALARS reads fmu_span).  instance.h's inline
functions are the bottom layer: flags of the instance that call nothing.

    python tests/test_fmu_layers.py     # prints the cross-file calls and the layers they form
"""
from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

NATIVE = Path(__file__).resolve().parents[1] / "soa_fmu" / "fmu" / "native"

# Bottom to top.  Files on one line are peers: they do not call each other.
LAYERS: list[tuple[str, ...]] = [
    ("instance.h",),                 # the instance, its modes and its cache flags (inline)
    ("fmu_log.c",),                  # messages, names
    ("fmu_contact.c",),              # contact: tunable law, outputs, penetration depths
    ("fmu_values.c",),               # value references, setters, rejections, parameters -> model
    ("fmu_state.c", "controller.c"),  # the FMU state; the controller role's computed torque
    ("fmu_step.c",),                 # the simulation: build, dynamics at a state, outputs, a step
    ("model_exchange.c",),           # Model Exchange: states, events, directional derivatives
    ("instance.c",),                 # life cycle: instantiation, defaults, initialization, free
    ("fmi2_cs.c",),                  # FMI 2.0: common and Co-Simulation entry points
    ("fmi2_me.c", "fmi3.c"),         # FMI 2.0 Model Exchange, FMI 3.0
]


def _strip(src: str) -> str:
    """The source without comments, string and character literals."""
    src = re.sub(r"/\*.*?\*/", " ", src, flags=re.S)
    src = re.sub(r"//[^\n]*", " ", src)
    src = re.sub(r'"(\\.|[^"\\\n])*"', '""', src)
    return re.sub(r"'(\\.|[^'\\\n])*'", "''", src)


def _joined(src: str) -> str:
    return src.replace("\\\n", " ")


def _definitions(code: str) -> dict[str, bool]:
    """Top-level names defined in code (comments stripped): name -> static.  A definition is the
    text before a `{` at brace depth 0: a function when it has a parameter list, else a table."""
    defs: dict[str, bool] = {}
    body = "\n".join(line for line in _joined(code).splitlines()
                     if not line.lstrip().startswith("#"))
    depth, start = 0, 0
    for i, ch in enumerate(body):
        if ch == "{":
            if depth == 0:
                head = body[start:i].strip()
                if "=" in head:                                    # a table's initializer
                    m = re.search(r"(\w+)\s*(\[[^\]]*\])*\s*=", head)
                elif "(" in head and not re.match(r"(typedef|struct|enum|union)\b", head):
                    m = re.search(r"(\w+)\s*\([^()]*(\([^()]*\)[^()]*)*\)\s*$", head)
                else:
                    m = None
                if m:
                    defs[m.group(1)] = bool(re.match(r"static\b", head))
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                start = i + 1
        elif ch == ";" and depth == 0:
            start = i + 1
    return defs


def _function_bodies(code: str) -> list[str]:
    """The bodies of the top-level functions in code (for a header: its inline functions)."""
    out, depth, start, head = [], 0, 0, 0
    for i, ch in enumerate(code):
        if ch == "{":
            if depth == 0:
                start = i
                is_function = ")" in code[head:i] and "=" not in code[head:i]
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                if is_function:
                    out.append(code[start:i + 1])
                head = i + 1
        elif ch == ";" and depth == 0:
            head = i + 1
    return out


def _macros(code: str) -> dict[str, set[str]]:
    """Function-like macros of a header: name -> the identifiers their bodies use."""
    out = {}
    for m in re.finditer(r"^\s*#\s*define\s+(\w+)\(([^)]*)\)(.*)$", _joined(code), flags=re.M):
        out[m.group(1)] = set(re.findall(r"\b[A-Za-z_]\w*\b", m.group(3)))
    return out


def call_graph(native: Path = NATIVE) -> dict[tuple[str, str], set[str]]:
    """(caller file, callee file) -> the callee's names the caller uses."""
    files = sorted(native.glob("*.c")) + [native / "instance.h"]
    code = {p.name: _strip(p.read_text(encoding="utf-8")) for p in files}
    defs = {name: _definitions(text) for name, text in code.items()}
    owner: dict[str, str] = {}
    for f, names in defs.items():
        for n, static in names.items():
            if static and f != "instance.h":
                continue
            assert n not in owner, f"{n} is defined in both {owner[n]} and {f}"
            owner[n] = f
    macros = _macros(code["instance.h"])
    edges: dict[tuple[str, str], set[str]] = defaultdict(set)
    for f, text in code.items():
        body = _joined(text)                     # (a .c file's own macros expand in it)
        if f == "instance.h":     # its inline functions; the rest declares (macros: at their users)
            body = " ".join(_function_bodies("\n".join(
                line for line in body.splitlines() if not line.lstrip().startswith("#"))))
        used = set(re.findall(r"\b[A-Za-z_]\w*\b", body))
        for n in list(used):
            used |= macros.get(n, set())
        for n in used:
            if n in owner and owner[n] != f and n not in defs[f]:
                edges[(f, owner[n])].add(n)
    return edges


def layer_of() -> dict[str, int]:
    return {f: i for i, files in enumerate(LAYERS) for f in files}


def upward_calls(native: Path = NATIVE) -> list[str]:
    """Every call from a file to one on its own layer or above, as readable lines."""
    layer = layer_of()
    return sorted(f"{a} (layer {layer[a]}) -> {b} (layer {layer[b]}): {', '.join(sorted(ns))}"
                  for (a, b), ns in call_graph(native).items() if layer[b] >= layer[a])


def test_every_wrapper_file_has_a_layer():
    files = {p.name for p in NATIVE.glob("*.c")} | {"instance.h"}
    placed = set(layer_of())
    assert files - placed == set(), f"place these in LAYERS: {sorted(files - placed)}"
    assert placed - files == set(), f"LAYERS names missing files: {sorted(placed - files)}"


def test_the_wrapper_files_call_only_downward():
    bad = upward_calls()
    assert not bad, ("calls that go up or sideways (move the function to the file of its "
                     "concern):\n" + "\n".join(bad))


def test_the_reader_sees_the_calls():
    """The parser finds what it must: a file's static helpers stay private to it, a macro's calls
    count at its users, a table's readers are calls too."""
    edges = call_graph()
    assert "fmu_span" in edges[("model_exchange.c", "instance.h")]           # FOR_SCALARS
    assert "fmu_log" in edges[("fmi3.c", "fmu_log.c")]
    assert "MODE_NAMES" in edges[("model_exchange.c", "fmu_log.c")]           # a table
    assert not any("instance_of" in ns for ns in edges.values())              # static in each
    assert "fmu_invalidate" in edges[("fmu_values.c", "instance.h")]           # inline


def _components(edges) -> list[list[str]]:
    """The files in strongly connected components, callees first (Tarjan)."""
    graph = defaultdict(set)
    nodes = set()
    for a, b in edges:
        graph[a].add(b)
        nodes |= {a, b}
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


if __name__ == "__main__":
    import sys

    root = Path(sys.argv[1]) if len(sys.argv) > 1 else NATIVE
    edges = call_graph(root)
    for (a, b), ns in sorted(edges.items()):
        print(f"{a:17s} -> {b:17s} {' '.join(sorted(ns))}")
    print("\nfiles that call each other (strongly connected), callees first:")
    for comp in _components(edges):
        print("  " + (" <-> ".join(comp) if len(comp) > 1 else comp[0]))
    print("\nagainst LAYERS:", "\n".join(upward_calls(root)) or "only downward calls")
