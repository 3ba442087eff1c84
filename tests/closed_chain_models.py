"""Closed-chain mechanisms built with the Python Model API (tests and examples; no model files).

The same mechanisms as model_descriptions/examples/{four_bar,slider_crank,two_arms_box}.toml:

* :func:`four_bar`     planar crank-rocker in the x-z plane, tree world→crank→coupler→rocker, closed
                       at D by a constraint (default ``ball``; a planar loop makes its out-of-plane
                       rows identically zero)
* :func:`slider_crank` crank, connecting rod, and a piston on a prismatic joint, closed at the
                       wrist pin
* :func:`two_arms_box` two 7-dof arms holding a free box with two welds (seed 003 Part II)
* :func:`random_closed_tree` a random tree with constraints between random frames (KKT checks)
* :func:`flexible_closed_tree` the same on a random tree of rigid and flexible links
* :func:`two_arms_box` with ``flexible=True``: each arm's fourth link a flexible beam (2 modes)
"""
from __future__ import annotations

import numpy as np

import soa_fmu as sf
from soa_fmu import flexible as fx
from soa_fmu import joints as J
from soa_fmu.spatial import rpy_to_matrix
from soa_fmu.verify.builders import random_flexible_tree, random_state, random_tree

Y = (0.0, 1.0, 0.0)


def _rod(mass: float, length: float, radius: float = 0.01):
    """(mass, com, inertia) of a uniform rod along its body x axis from the origin."""
    ix = 0.5 * mass * radius ** 2
    it = mass * (3 * radius ** 2 + length ** 2) / 12.0
    return dict(mass=mass, com=(length / 2, 0.0, 0.0), inertia=np.diag([ix, it, it]))


def four_bar(kind: str = "ball", lengths=(0.1, 0.35, 0.3, 0.4), crank_angle: float = np.pi / 3):
    """Crank-rocker (a, b, c, d) = (crank, coupler, rocker, ground) about world y, closed at D.

    Returns (model, q0): q0 closes the loop with the crank at ``crank_angle`` above +x.  A hinge
    angle +θ about y turns the next link's x axis from +x toward −z."""
    a, b, c, d = lengths
    m = sf.Model("four_bar")
    m.add_body("ground")
    m.add_body("crank", joint=J.Revolute(Y), joint_name="crank_joint", **_rod(0.2, a))
    m.add_body("coupler", "crank", J.Revolute(Y), joint_name="coupler_joint", translation=(a, 0, 0),
               **_rod(0.5, b))
    m.add_body("rocker", "coupler", J.Revolute(Y), joint_name="rocker_joint", translation=(b, 0, 0),
               **_rod(0.4, c))
    m.add_frame("rocker_tip", "rocker", translation=(c, 0, 0))
    m.add_frame("pivot_D", "ground", translation=(d, 0, 0))
    m.add_constraint("closure_D", kind, "rocker_tip", "pivot_D", axis=Y)
    # close the loop: points in the x-z plane, angle φ measured from +x toward +z
    B = np.array([a * np.cos(crank_angle), a * np.sin(crank_angle)])
    D = np.array([d, 0.0])
    r = np.linalg.norm(D - B)
    ang_BD = np.arctan2(*(D - B)[::-1])
    beta = np.arccos((b ** 2 + r ** 2 - c ** 2) / (2 * b * r))
    phi_c = ang_BD + beta                                   # coupler direction (upper branch)
    C = B + b * np.array([np.cos(phi_c), np.sin(phi_c)])
    phi_r = np.arctan2(*(D - C)[::-1])
    # θ about y = −(φ in the x-z plane), relative angles along the chain
    q0 = np.array([-crank_angle, -(phi_c - crank_angle), -(phi_r - phi_c)])
    return m, q0


def slider_crank(crank: float = 0.1, rod: float = 0.35, crank_angle: float = np.pi / 4):
    """Crank (revolute y at the origin), rod (revolute y at the crank pin), slider (prismatic x from
    world); the wrist pin joining rod tip and slider is a ``ball`` closure.  Returns (model, q0)."""
    m = sf.Model("slider_crank")
    m.add_body("crank", joint=J.Revolute(Y), joint_name="crank_joint", **_rod(0.3, crank))
    m.add_body("rod", "crank", J.Revolute(Y), joint_name="rod_joint", translation=(crank, 0, 0),
               **_rod(0.5, rod))
    m.add_body("slider", joint=J.Prismatic((1.0, 0.0, 0.0)), joint_name="slider_joint", mass=1.0,
               inertia=np.eye(3) * 5e-4)
    m.add_frame("rod_tip", "rod", translation=(rod, 0, 0))
    m.add_frame("slider_pin", "slider")
    m.add_constraint("wrist_pin", "ball", "rod_tip", "slider_pin")
    B = crank * np.array([np.cos(crank_angle), np.sin(crank_angle)])
    x = B[0] + np.sqrt(rod ** 2 - B[1] ** 2)
    phi_r = np.arctan2(-B[1], x - B[0])
    q0 = np.array([-crank_angle, -(phi_r - crank_angle), x])
    return m, q0


def _arm(m: sf.Model, prefix: str, base_xyz, base_yaw: float, rng, flexible: bool = False) -> None:
    """A 7-dof arm (alternating z / y axes, 0.25–0.3 m links) with a ``tool`` frame at its tip;
    ``flexible``: link 4 a 0.25 m aluminium-like beam along its x axis (2 modes), link 5 on its
    tip node."""
    parent = sf.WORLD
    axes = [(0, 0, 1), (0, 1, 0), (0, 0, 1), (0, 1, 0), (0, 0, 1), (0, 1, 0), (0, 0, 1)]
    offsets = [(0, 0, 0.3), (0, 0, 0.1), (0, 0, 0.25), (0, 0, 0.05), (0, 0, 0.25), (0, 0, 0.05),
               (0, 0, 0.1)]
    beam = fx.reduce(fx.beam(0.25, 2.0, 1e6, 60.0, 45.0, 40.0, 3), 2) if flexible else None
    for i, (ax, off) in enumerate(zip(axes, offsets)):
        name = f"{prefix}link{i + 1}"
        kw = dict(rotation=rpy_to_matrix((0, 0, base_yaw)), translation=base_xyz) if i == 0 else \
            dict(translation=off)
        mass = 3.0 - 0.3 * i
        if beam is not None and i == 3:
            m.add_body(name, parent, J.Revolute(ax), joint_name=f"{prefix}joint{i + 1}",
                       flexible=beam, **kw)
        elif beam is not None and i == 4:
            m.add_body(name, parent, J.Revolute(ax), joint_name=f"{prefix}joint{i + 1}", mass=mass,
                       com=(0.0, 0.0, 0.08), inertia=np.diag([0.02, 0.02, 0.008]) * mass,
                       node=len(beam.nodes) - 1, translation=beam.nodes[-1])
        else:
            m.add_body(name, parent, J.Revolute(ax), joint_name=f"{prefix}joint{i + 1}", mass=mass,
                       com=(0.0, 0.0, 0.08), inertia=np.diag([0.02, 0.02, 0.008]) * mass, **kw)
        parent = name
    m.add_frame(f"{prefix}tool", parent, translation=(0, 0, 0.1))


def two_arms_box(kind: str = "weld", flexible: bool = False):
    """Two 7-dof arms facing each other holding a 2 kg box (free joint) by two grasps (``flexible``:
    each with a flexible link, :func:`_arm`, its modes at rest in q0).

    The grasp frames on the box are placed so that they coincide with the tool frames at q0.
    Returns (model, q0)."""
    rng = np.random.default_rng(0)
    m = sf.Model("two_arms_box")
    _arm(m, "left_", (-0.7, 0.0, 0.0), 0.0, rng, flexible)
    _arm(m, "right_", (0.7, 0.0, 0.0), np.pi, rng, flexible)
    m.add_body("box", joint=J.Free(), joint_name="box_joint", mass=2.0,
               inertia=np.diag([0.0133, 0.0217, 0.0217]))
    qa = np.array([0.0, 0.6, 0.0, 1.2, 0.0, -0.25, 0.0])     # each arm bent toward the other
    q0 = m.neutral_configuration()
    q0[[m.bodies[m.body_index(f"left_link{i + 1}")].q_index for i in range(7)]] = qa
    q0[[m.bodies[m.body_index(f"right_link{i + 1}")].q_index for i in range(7)]] = qa
    TL = sf.frame_pose(m, q0, "left_tool")
    TR = sf.frame_pose(m, q0, "right_tool")
    pbox = 0.5 * (TL[1] + TR[1])
    q0[m.bodies[m.body_index("box")].q_index:] = [1.0, 0.0, 0.0, 0.0, *pbox]
    for side, (R, p) in (("left", TL), ("right", TR)):
        m.add_frame(f"box_grasp_{side}", "box", rotation=R, translation=p - pbox)
        m.add_constraint(f"grasp_{side}", kind, f"{side}_tool", f"box_grasp_{side}", axis=(0, 0, 1))
    return m, q0


def random_closed_tree(n: int = 12, kinds=("weld",), seed: int = 0, world: bool = False):
    """A random tree (mixed joints) with one constraint of each kind between frames on two random
    bodies (different branches when possible; frame_a on world when ``world``).  Returns
    (model, q, qd)."""
    rng = np.random.default_rng(seed)
    m = random_tree(n, seed=seed)
    leaves = [k for k in range(n) if all(b.parent != k for b in m.bodies)]
    for i, kind in enumerate(kinds):
        ka, kb = rng.choice(leaves if len(leaves) >= 2 else range(n), 2, replace=False)
        fa = f"ca{i}"
        m.add_frame(fa, m.bodies[ka].name,
                    rotation=rpy_to_matrix(rng.uniform(-3, 3, 3)), translation=rng.uniform(-.3, .3, 3))
        m.add_frame(f"cb{i}", m.bodies[kb].name, rotation=rpy_to_matrix(rng.uniform(-3, 3, 3)),
                    translation=rng.uniform(-.3, .3, 3))
        m.add_constraint(f"c{i}_{kind}", kind, sf.WORLD if world and i == 0 else fa, f"cb{i}",
                         axis=rng.normal(size=3))
    q, qd = random_state(m, seed=seed)
    return m, q, qd


def flexible_closed_tree(seed: int, kinds=("weld",), nbodies: int = 8):
    """A random tree of rigid and flexible links (flexible links inside the loops, children on
    their nodes; :func:`soa_fmu.verify.builders.random_flexible_tree`) with one constraint of each
    kind between frames on two leaves, as :func:`random_closed_tree`.  Returns (model, q, qd)."""
    rng = np.random.default_rng(seed)
    m = random_flexible_tree(rng, nbodies)[0]
    n = m.nbodies
    leaves = [k for k in range(n) if all(b.parent != k for b in m.bodies)]
    for i, kind in enumerate(kinds):
        ka, kb = rng.choice(leaves if len(leaves) >= 2 else range(n), 2, replace=False)
        m.add_frame(f"ca{i}", m.bodies[ka].name, rotation=rpy_to_matrix(rng.uniform(-3, 3, 3)),
                    translation=rng.uniform(-.3, .3, 3))
        m.add_frame(f"cb{i}", m.bodies[kb].name, rotation=rpy_to_matrix(rng.uniform(-3, 3, 3)),
                    translation=rng.uniform(-.3, .3, 3))
        m.add_constraint(f"c{i}_{kind}", kind, f"ca{i}", f"cb{i}", axis=rng.normal(size=3))
    q, qd = random_state(m, seed=seed, scale=0.3)
    return m, q, qd
