"""The C core (soa_fmu/core/) is layered: each file calls only the files below it, as MuJoCo's
engine stages do (position -> velocity -> forces -> acceleration).  LAYERS below is the one place
the order is defined (soa.h and the README's map point here); the parser is tests/c_layers.py,
shared with tests/test_fmu_layers.py.

A flexible body is a kind of body the sweeps dispatch to (flexible_body.h, below kinematics.c);
contact is a force the sweeps consume (articulated.c calls contact.c); the collision geometry
knows nothing of either.  ALLOWED names each upward call that remains, with its reason: any other
fails.

    python tests/test_core_layers.py     # prints the cross-file calls, their cycles and the layers
"""
from __future__ import annotations

from pathlib import Path

from c_layers import call_graph, components, layer_of, report, unused_allowances, upward_calls

CORE = Path(__file__).resolve().parents[1] / "soa_fmu" / "core"

# Bottom to top.  Files on one line are peers: they do not call each other.
LAYERS: list[tuple[str, ...]] = [
    ("soa.h", "spatial.h", "collision.h"),  # the tables and entry points; spatial algebra (inline)
    ("joints.c", "collision.c", "broadphase.c"),  # joint maps and transforms; contact geometry
                                        # and the broad phase's pairs (no bodies, no sweeps)
    ("placement.h", "flexible_body.h"),  # a body's placement in its parent, R = X Rj; one flexible
                                        # body's node placement and velocity (both inline)
    ("kinematics.c",),                  # position and velocity sweeps (flexible bodies dispatched)
    ("flexible.c",),                    # the recursions with flexible bodies: FD, ID, M, M^-1
    ("crba.c", "rnea.c", "dissipation.c"),  # mass matrix, Newton-Euler; joint friction forces
    ("contact.c",),                     # contact forces from the geometry and the laws
    ("articulated.c",),                 # Riccati sweep, innovations FD, M^-1 (consumes contact)
    ("mimic.c", "operational_space.c"),  # mimic couplings; Lambda^-1, the correction sweep
    ("closures.c",),                    # closure constraints, constrained FD
    ("integrators.c",),                 # RK4, Euler, implicit, Rosenbrock
    ("dop853.c",),                      # adaptive Dormand-Prince
    ("constraint_time.c",),             # a step with grasp / release and moving targets
    ("sensitivities.c", "energy.c"),    # dM/dtheta, Coriolis; energies
    ("derivatives.c",),                 # ID / FD derivatives
    ("model.c",),                       # the model's checks and finishing (each room's _finish)
    ("status.c",),                      # the message of every status
]

# (caller, callee, name): reason.  Each one an upward call that is known and kept, for now.
ALLOWED: dict[tuple[str, str, str], str] = {
    ("contact.c", "articulated.c", "soa_innovations_smoother"):
        "the implicit contact term's M^-1 J* g (soa_contact_implicit); to invert: the integrator "
        "calls the smoother between the term's two halves",
}


def test_every_core_file_has_a_layer():
    files = {p.name for p in CORE.glob("*.[ch]")}
    placed = set(layer_of(LAYERS))
    assert files - placed == set(), f"place these in LAYERS: {sorted(files - placed)}"
    assert placed - files == set(), f"LAYERS names missing files: {sorted(placed - files)}"


def test_the_core_files_call_only_downward():
    bad = upward_calls(call_graph(CORE), LAYERS, ALLOWED)
    assert not bad, ("calls that go up or sideways (move the function to the file of its "
                     "concern, or pass what the lower file needs):\n" + "\n".join(bad))


def test_every_allowed_exception_is_still_made():
    assert unused_allowances(call_graph(CORE), ALLOWED) == [], "strike these from ALLOWED"


def test_the_reader_sees_the_core_calls():
    """The parser finds what it must: a header's inline functions are its calls, a .c file's
    static helpers stay private to it; the one cycle left is the allowed one."""
    edges = call_graph(CORE)
    assert "placement_in" in edges[("kinematics.c", "placement.h")]          # static inline
    assert "soa_joint_transform" in edges[("placement.h", "joints.c")]       # from an inline body
    assert "soa_contact_forces" in edges[("articulated.c", "contact.c")]
    assert not any("law_ok" in ns for ns in edges.values())                  # static in contact.c
    cycles = [c for c in components(edges) if len(c) > 1]
    assert cycles == [["articulated.c", "contact.c"]]


if __name__ == "__main__":
    print(report(CORE, LAYERS, ALLOWED))
