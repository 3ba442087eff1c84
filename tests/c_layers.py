"""The calls between the files of a C folder, read from the sources, and the layers they must form:
the one parser behind tests/test_fmu_layers.py (the native FMU wrapper) and
tests/test_core_layers.py (the C core).

A file's top-level definitions (functions and tables; a .c file's `static` ones are private to it, a
header's static inline ones are the header's own) and every identifier a file uses give the edges;
a header's function-like macros count at their users (FOR_SCALARS reads fmu_span), and a header's
inline functions are its calls.

    python tests/c_layers.py soa_fmu/core       # prints the cross-file calls and their cycles
"""
from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

Edges = dict[tuple[str, str], set[str]]


def _strip(src: str) -> str:
    """The source without comments, string and character literals."""
    src = re.sub(r"/\*.*?\*/", " ", src, flags=re.S)
    src = re.sub(r"//[^\n]*", " ", src)
    src = re.sub(r'"(\\.|[^"\\\n])*"', '""', src)
    return re.sub(r"'(\\.|[^'\\\n])*'", "''", src)


def _joined(src: str) -> str:
    return src.replace("\\\n", " ")


def _no_directives(code: str) -> str:
    return "\n".join(line for line in _joined(code).splitlines()
                     if not line.lstrip().startswith("#"))


def _definitions(code: str) -> dict[str, bool]:
    """Top-level names defined in code (comments stripped): name -> static.  A definition is the
    text before a `{` at brace depth 0: a function when it has a parameter list, else a table."""
    defs: dict[str, bool] = {}
    body = _no_directives(code)
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
    is_function = False
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


def call_graph(folder: Path) -> Edges:
    """(caller file, callee file) -> the callee's names the caller uses, over folder's *.c and *.h."""
    files = sorted(folder.glob("*.c")) + sorted(folder.glob("*.h"))
    code = {p.name: _strip(p.read_text(encoding="utf-8")) for p in files}
    headers = {f for f in code if f.endswith(".h")}
    defs = {name: _definitions(text) for name, text in code.items()}
    owner: dict[str, str] = {}
    for f, names in defs.items():
        for n, static in names.items():
            if static and f not in headers:
                continue
            assert n not in owner, f"{n} is defined in both {owner[n]} and {f}"
            owner[n] = f
    macros: dict[str, set[str]] = {}
    for f in sorted(headers):
        macros.update(_macros(code[f]))
    edges: Edges = defaultdict(set)
    for f, text in code.items():
        body = _joined(text)                     # (a .c file's own macros expand in it)
        if f in headers:          # its inline functions; the rest declares (macros: at their users)
            body = " ".join(_function_bodies(_no_directives(body)))
        used = set(re.findall(r"\b[A-Za-z_]\w*\b", body))
        for n in list(used):
            used |= macros.get(n, set())
        for n in used:
            if n in owner and owner[n] != f and n not in defs[f]:
                edges[(f, owner[n])].add(n)
    return edges


def layer_of(layers: Sequence[Iterable[str]]) -> dict[str, int]:
    return {f: i for i, files in enumerate(layers) for f in files}


def upward_calls(edges: Edges, layers: Sequence[Iterable[str]],
                 allowed: Iterable[tuple[str, str, str]] = ()) -> list[str]:
    """Every call from a file to one on its own layer or above, as readable lines, except the
    (caller file, callee file, name) triples in allowed."""
    layer = layer_of(layers)
    ok = set(allowed)
    out = []
    for (a, b), names in edges.items():
        if a not in layer or b not in layer:
            out.append(f"{a} -> {b}: {a if a not in layer else b} has no layer in LAYERS")
        elif layer[b] >= layer[a]:
            left = sorted(n for n in names if (a, b, n) not in ok)
            if left:
                out.append(f"{a} (layer {layer[a]}) -> {b} (layer {layer[b]}): {', '.join(left)}")
    return sorted(out)


def unused_allowances(edges: Edges, allowed: Iterable[tuple[str, str, str]]) -> list[tuple]:
    """The allowed upward calls that the sources no longer make (strike them from the list)."""
    return sorted(t for t in allowed if t[2] not in edges.get((t[0], t[1]), set()))


def components(edges: Edges) -> list[list[str]]:
    """The files in strongly connected components, callees first (Tarjan)."""
    graph: dict[str, set[str]] = defaultdict(set)
    nodes: set[str] = set()
    for a, b in edges:
        graph[a].add(b)
        nodes |= {a, b}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
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


def report(folder: Path, layers: Sequence[Iterable[str]] | None = None,
           allowed: Iterable[tuple[str, str, str]] = ()) -> str:
    """The cross-file calls of folder, its cycles, and (given layers) the calls against them."""
    edges = call_graph(folder)
    lines = [f"{a:20s} -> {b:20s} {' '.join(sorted(ns))}" for (a, b), ns in sorted(edges.items())]
    lines.append("\nfiles that call each other (strongly connected), callees first:")
    lines += ["  " + (" <-> ".join(c) if len(c) > 1 else c[0]) for c in components(edges)]
    mutual = sorted(f"{a} <-> {b}" for (a, b) in edges if a < b and (b, a) in edges)
    lines.append("\nfile pairs calling each other: " + (", ".join(mutual) or "none"))
    if layers is not None:
        lines.append("\nagainst LAYERS: " + ("\n".join(upward_calls(edges, layers, allowed))
                                              or "only downward calls"))
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    print(report(Path(sys.argv[1])))
