"""The native FMU wrapper (soa_fmu/fmu/native/) is layered: each file calls only the files below it,
as MuJoCo's engine stages do (position -> velocity -> forces -> acceleration).  LAYERS below is the
one place the order is defined (instance.h and the README's map point here).

The call graph is read from the sources by tests/c_layers.py (shared with test_core_layers.py):
every top-level definition of a file (a function or a table, `static` ones private to it), every
identifier a file uses, and the wrapper identifiers that the function-like macros of instance.h use
(FOR_SCALARS reads fmu_span).  instance.h's inline functions are the bottom layer: flags of the
instance that call nothing.

    python tests/test_fmu_layers.py     # prints the cross-file calls and the layers they form
"""
from __future__ import annotations

from pathlib import Path

import c_layers
from c_layers import call_graph, layer_of, report

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


def upward_calls(native: Path = NATIVE) -> list[str]:
    """Every call from a file to one on its own layer or above, as readable lines."""
    return c_layers.upward_calls(call_graph(native), LAYERS)


def test_every_wrapper_file_has_a_layer():
    files = {p.name for p in NATIVE.glob("*.c")} | {"instance.h"}
    placed = set(layer_of(LAYERS))
    assert files - placed == set(), f"place these in LAYERS: {sorted(files - placed)}"
    assert placed - files == set(), f"LAYERS names missing files: {sorted(placed - files)}"


def test_the_wrapper_files_call_only_downward():
    bad = upward_calls()
    assert not bad, ("calls that go up or sideways (move the function to the file of its "
                     "concern):\n" + "\n".join(bad))


def test_the_reader_sees_the_calls():
    """The parser finds what it must: a file's static helpers stay private to it, a macro's calls
    count at its users, a table's readers are calls too."""
    edges = call_graph(NATIVE)
    assert "fmu_span" in edges[("model_exchange.c", "instance.h")]           # FOR_SCALARS
    assert "fmu_log" in edges[("fmi3.c", "fmu_log.c")]
    assert "MODE_NAMES" in edges[("model_exchange.c", "fmu_log.c")]           # a table
    assert not any("instance_of" in ns for ns in edges.values())              # static in each
    assert "fmu_invalidate" in edges[("fmu_values.c", "instance.h")]           # inline


if __name__ == "__main__":
    import sys

    print(report(Path(sys.argv[1]) if len(sys.argv) > 1 else NATIVE, LAYERS))
