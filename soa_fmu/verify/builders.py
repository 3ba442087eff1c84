"""Programmatic model builders: serial chains and random trees (tests, benchmarks, examples)."""
from __future__ import annotations

import numpy as np

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
