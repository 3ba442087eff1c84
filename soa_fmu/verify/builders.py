"""Programmatic model builders: serial chains and random trees (tests, benchmarks, examples)."""
from __future__ import annotations

import numpy as np

from .. import flexible as fx
from .. import joints as J
from ..model import Model, WORLD
from ..spatial import rpy_to_matrix


def _random_inertia(rng: np.random.Generator) -> tuple[float, np.ndarray, np.ndarray]:
    mass = rng.uniform(0.5, 3.0)
    com = rng.uniform(-0.2, 0.2, 3)
    d = rng.uniform(0.01, 0.1, 3)
    d = np.array([d[1] + d[2], d[0] + d[2], d[0] + d[1]])     # principal moments of a box-like body
    Rc = rpy_to_matrix(rng.uniform(-np.pi, np.pi, 3))
    return mass, com, Rc @ np.diag(d) @ Rc.T


def serial_chain(n: int, joint: str = "revolute", seed: int = 0, name: str | None = None) -> Model:
    """n bodies in a chain, each on a revolute joint about a random axis, random inertias."""
    rng = np.random.default_rng(seed)
    model = Model(name or f"chain{n}")
    parent = WORLD
    for k in range(n):
        mass, com, inertia = _random_inertia(rng)
        jt = J.Revolute(rng.normal(size=3)) if joint == "revolute" else J.Prismatic(rng.normal(size=3))
        model.add_body(f"link{k + 1}", parent, jt, joint_name=f"j{k + 1}",
                       rotation=rpy_to_matrix(rng.uniform(-np.pi, np.pi, 3)),
                       translation=rng.uniform(-0.3, 0.3, 3), mass=mass, com=com, inertia=inertia)
        parent = f"link{k + 1}"
    return model


JOINT_FACTORIES = {
    "revolute": lambda rng: J.Revolute(rng.normal(size=3)),
    "prismatic": lambda rng: J.Prismatic(rng.normal(size=3)),
    "spherical": lambda rng: J.Spherical(),
    "free": lambda rng: J.Free(),
    "planar": lambda rng: J.Planar(rng.normal(size=3)),
    "fixed": lambda rng: J.Fixed(),
    "helical": lambda rng: J.General(np.r_[(a := rng.normal(size=3) / 1.7), 0.3 * a].reshape(6, 1)),
    "cylindrical": lambda rng: J.General(np.column_stack([np.r_[(a := rng.normal(size=3)), 0, 0, 0],
                                                          np.r_[0, 0, 0, a]])),
}


def random_tree(n: int, seed: int = 0, joint_types=("revolute", "prismatic", "spherical", "planar",
                                                    "helical", "cylindrical", "fixed"),
                floating_base: bool = False) -> Model:
    """A random tree of n bodies (each attached to a random earlier body), mixed joint types.

    With ``floating_base`` the first body hangs from world by a free joint.  Fixed joints are never
    used on leaves (their mass just adds to the parent)."""
    rng = np.random.default_rng(seed)
    model = Model(f"tree{n}")
    for k in range(n):
        if k == 0:
            parent = WORLD
            kind = "free" if floating_base else "revolute"
        else:
            parent = f"b{rng.integers(0, k)}"
            kind = joint_types[rng.integers(0, len(joint_types))]
        mass, com, inertia = _random_inertia(rng)
        model.add_body(f"b{k}", parent, JOINT_FACTORIES[kind](rng), joint_name=f"j{k}",
                       rotation=rpy_to_matrix(rng.uniform(-np.pi, np.pi, 3)),
                       translation=rng.uniform(-0.4, 0.4, 3), mass=mass, com=com, inertia=inertia)
    return model


def random_state(model: Model, seed: int = 0, scale: float = 1.0):
    """Random (q, q̇) with unit quaternions."""
    rng = np.random.default_rng(seed)
    q = model.neutral_configuration() + scale * rng.uniform(-1, 1, model.nq)
    for _, i in model.quaternion_slices():
        q[i:i + 4] /= np.linalg.norm(q[i:i + 4])
    return q, scale * rng.uniform(-1, 1, model.nv)


def _beam(length=1.0, rho_A=2.7, EA=1e6, EI_y=60.0, EI_z=45.0, GJ=40.0, elements=4) -> fx.FEModel:
    return fx.beam(length, rho_A, EA, EI_y, EI_z, GJ, elements)


def random_flexible_tree(rng: np.random.Generator, nbodies: int = 6) -> tuple[Model, dict]:
    """A random tree of rigid and flexible bodies (joints of every kind, children on random nodes
    of flexible parents or on their reference frames); returns (model, {body: FEModel})."""
    m = Model("random_flexible", gravity=rng.normal(size=3) * 3)
    fes = {}
    kinds = [lambda: J.Revolute(rng.normal(size=3)), lambda: J.Prismatic(rng.normal(size=3)),
             J.Spherical, J.Fixed, lambda: J.Revolute(rng.normal(size=3))]
    for k in range(nbodies):
        parent = WORLD if k == 0 else f"b{rng.integers(0, k)}"
        joint = kinds[rng.integers(0, len(kinds))]() if k else J.Revolute([0, 0, 1])
        p = -1 if parent == WORLD else m.body_index(parent)
        pfl = m.bodies[p].flexible if p >= 0 else None
        if pfl is not None and rng.random() < 0.8:
            node = int(rng.integers(1, len(pfl.nodes)))
            t = pfl.nodes[node] + (rng.normal(size=3) * 0.05 if rng.random() < 0.5 else 0)
        else:
            node, t = None, rng.normal(size=3) * 0.3
        R = rpy_to_matrix(rng.normal(size=3))
        if rng.random() < 0.6:
            fe = _beam(length=0.5 + rng.random(), rho_A=1 + rng.random(),
                       EI_y=20 + 50 * rng.random(), EI_z=20 + 50 * rng.random(),
                       GJ=30 + rng.random(), elements=3)
            modes = int(rng.choice([0, 2, 3, 4]))
            red = fx.reduce(fe, modes, 0.0)
            fes[f"b{k}"] = fe
            m.add_body(f"b{k}", parent, joint, rotation=R, translation=t, node=node, flexible=red)
        else:
            a, b, c = 0.01 + 0.02 * rng.random(3)             # a box's principal moments
            m.add_body(f"b{k}", parent, joint, rotation=R, translation=t, node=node,
                       mass=0.5 + rng.random(), com=rng.normal(size=3) * 0.1,
                       inertia=np.diag([b + c, a + c, a + b]))
    return m, fes
