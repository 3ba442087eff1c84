"""Fixed links folded into their parents' rigid bodies (core/model.c, fold_fixed_links).

The sweeps visit the moving bodies only; a folded link's inertia is its carrier's (parallel-axis
theorem) and its placement, velocity and acceleration are filled in after the sweep.  Checked
(1) against Pinocchio on real robots with fixed links (arm7, panda, ur10) to 1e-12, the folded
links' world placements included, and (2) against the same model with the fixed links merged by
hand (closed-form composite inertias, placements composed), to round-off: forward and inverse
dynamics with forces on folded links, M, M^-1, contact on a folded link, a closure attached to
folded links, energies and the folded links' kinematics.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import soa_fmu as sf
from soa_fmu.constraints import constrained_forward_dynamics
from soa_fmu.contact import contact_forces
from soa_fmu.energy import kinetic_energy, potential_energy
from soa_fmu.io import load_model
from soa_fmu.kinematics import frame_pose

REPO = Path(__file__).resolve().parent.parent


def rel(a, b) -> float:
    a, b = np.asarray(a), np.asarray(b)
    return float(np.abs(a - b).max() / max(1.0, np.abs(b).max()))


def rot(axis, angle) -> np.ndarray:
    a = np.asarray(axis, float) / np.linalg.norm(axis)
    K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K


def robot(name: str) -> Path:
    if name == "arm7":
        return REPO / "model_descriptions" / "examples" / "arm7.urdf"
    folder, file = {"panda": ("panda_description/urdf", "panda.urdf"),
                    "ur10": ("ur_description/urdf", "ur10_robot.urdf")}[name]
    for entry in sys.path:
        p = Path(entry) / "cmeel.prefix/share/example-robot-data/robots" / folder / file
        if p.is_file():
            return p
    pytest.skip(f"example-robot-data {folder}/{file} not installed")


# ---------------------------------------------------------------- (1) Pinocchio, real robots
@pytest.mark.parametrize("name", ["arm7", "panda", "ur10"])
def test_folded_robots_match_pinocchio_to_1e_12(name):
    pin = pytest.importorskip("pinocchio")
    sys.path.insert(0, str(Path(__file__).parent))
    from pin_mapping import PinMapping
    path = robot(name)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_model(path)
    model.stops_enabled = False
    model.joint_armature = np.zeros(model.nv)
    model.joint_damping = np.zeros(model.nv)
    model.joint_friction = np.zeros(model.nv)
    folded = [b.name for b in model.bodies if b.joint.nv == 0]
    assert folded, f"{name} has no fixed link to fold"
    core = model.core.views()
    assert int((np.asarray(model.arrays().jtype) != 0).sum()) == len(model.bodies) - len(folded)
    assert core["spar"].shape == (len(model.bodies),)
    pmodel = pin.buildModelFromUrdf(str(path))
    pdata = pmodel.createData()
    mp = PinMapping(model, pmodel)
    rng = np.random.default_rng(7)
    for _ in range(4):
        q = mp.random_configuration(rng)
        qd, tau, qdd = (rng.normal(size=model.nv) for _ in range(3))
        pq, pv = mp.q_to_pin(q), mp.v_to_pin(qd)
        fd = sf.forward_dynamics(model, q, qd, tau)
        w = model.workspace()
        Rw, pw = w.Rw.copy(), w.pw.copy()
        assert rel(fd, mp.v_from_pin(pin.aba(pmodel, pdata, pq, pv, mp.v_to_pin(tau)))) < 1e-12
        assert rel(sf.inverse_dynamics(model, q, qd, qdd),
                   mp.v_from_pin(pin.rnea(pmodel, pdata, pq, pv, mp.v_to_pin(qdd)))) < 1e-12
        Mp = pin.crba(pmodel, pdata, pq)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        order = [mp.v_from_pin(np.eye(model.nv)[i]) for i in range(model.nv)]
        P = np.array(order).T                       # ours = P pin P^T
        assert rel(sf.mass_matrix(model, q), P @ Mp @ P.T) < 1e-12
        pin.framesForwardKinematics(pmodel, pdata, pq)
        for k, b in enumerate(model.bodies):       # every body, the folded links included
            f = pmodel.getFrameId(b.name)
            assert f < len(pmodel.frames), b.name
            assert rel(Rw[k], pdata.oMf[f].rotation) < 1e-12, b.name
            assert rel(pw[k], pdata.oMf[f].translation) < 1e-12, b.name


# ---------------------------------------------------------------- (2) merged by hand
INERTIA = {   # name: (mass, com, J about the com)
    "A": (2.0, (0.05, -0.02, 0.15), [[0.04, 0.002, 0.001], [0.002, 0.05, -0.003], [0.001, -0.003, 0.02]]),
    "F1": (0.7, (0.03, 0.01, -0.02), [[0.004, 0.0, 0.0005], [0.0, 0.006, 0.0], [0.0005, 0.0, 0.003]]),
    "F2": (0.4, (-0.01, 0.02, 0.05), [[0.002, 0.0001, 0.0], [0.0001, 0.001, 0.0002], [0.0, 0.0002, 0.0025]]),
    "B": (1.1, (0.0, 0.1, 0.02), [[0.02, 0.0, 0.001], [0.0, 0.01, 0.0], [0.001, 0.0, 0.015]]),
    "W": (1.3, (0.1, 0.0, 0.0), [[0.01, 0.0, 0.0], [0.0, 0.02, 0.0], [0.0, 0.0, 0.02]]),
    "C": (0.9, (0.02, 0.0, 0.03), [[0.006, 0.0, 0.0], [0.0, 0.004, 0.0001], [0.0, 0.0001, 0.005]]),
    "F4": (0.3, (0.0, -0.05, 0.0), [[0.001, 0.0, 0.0], [0.0, 0.001, 0.0], [0.0, 0.0, 0.0015]]),
}
PLACE = {     # name: (parent, joint, rotation in the parent, translation in the parent)
    "A": ("world", sf.Revolute((0, 0, 1)), rot((1, 0, 0), 0.2), (0.0, 0.1, 0.3)),
    "F1": ("A", sf.Fixed(), rot((0.3, 1, 0.2), 0.7), (0.2, 0.05, 0.1)),
    "F2": ("F1", sf.Fixed(), rot((1, -0.5, 0.4), -0.9), (0.0, 0.15, -0.05)),
    "B": ("F2", sf.Revolute((0.3, 0.5, 0.8)), rot((0, 1, 0), 0.4), (0.1, 0.0, 0.2)),
    "W": ("world", sf.Fixed(), rot((0, 0, 1), 0.6), (-0.4, 0.2, 0.1)),
    "C": ("W", sf.Prismatic((1, 0, 0)), rot((0, 1, 1), 0.3), (0.05, 0.1, 0.0)),
    "F4": ("C", sf.Fixed(), rot((1, 1, 0), 1.1), (0.0, 0.2, 0.1)),
}
CARRIER = {"F1": "A", "F2": "A", "W": "world", "F4": "C"}   # the fixed links and their carriers


def placement_in(name: str, carrier: str) -> tuple[np.ndarray, np.ndarray]:
    """(R, p) of body `name`'s frame in `carrier`'s frame along the fixed joints (closed form)."""
    R, p = np.eye(3), np.zeros(3)
    while name != carrier:
        parent, _, Rj, tj = PLACE[name]
        R, p = Rj @ R, np.asarray(tj) + Rj @ p
        name = parent
    return R, p


def composite(names: list[str], carrier: str) -> tuple[float, np.ndarray, np.ndarray]:
    """(m, c, J_C) of rigidly joined bodies in the carrier's frame: parallel-axis theorem."""
    parts = []
    for n in names:
        m, c, J = INERTIA[n]
        R, p = placement_in(n, carrier)
        parts.append((m, p + R @ np.asarray(c), R @ np.asarray(J) @ R.T))
    mt = sum(m for m, _, _ in parts)
    ct = sum(m * c for m, c, _ in parts) / mt
    Jt = sum(J + m * ((c - ct) @ (c - ct) * np.eye(3) - np.outer(c - ct, c - ct)) for m, c, J in parts)
    return mt, ct, Jt


def folded_model(contact: bool = True) -> sf.Model:
    model = sf.Model()
    for name in ("A", "F1", "F2", "B", "W", "C", "F4"):
        parent, joint, R, t = PLACE[name]
        m, c, J = INERTIA[name]
        model.add_body(name, parent, joint, rotation=R, translation=t, mass=m, com=c, inertia=J)
    model.add_frame("grip", "F1", rotation=rot((0, 1, 0), 0.3), translation=(0.1, 0.0, 0.05))
    model.add_frame("peg", "F4", rotation=rot((1, 0, 0), -0.2), translation=(0.0, 0.1, 0.0))
    model.add_frame("tool", "F2", translation=(0.05, 0.05, 0.0))
    if contact:
        model.add_contact_sphere("tip", "F2", center=(0.02, -0.03, 0.1), radius=0.05)
        model.add_contact_sphere("knob", "F4", center=(0.0, 0.0, 0.05), radius=0.03)
        model.add_contact_plane("floor", point=(0, 0, 0.35))
    model.gravity = (0.3, -0.2, -9.81)
    return model


def merged_model(contact: bool = True) -> sf.Model:
    """The same mechanism with the fixed links merged by hand into their carriers."""
    model = sf.Model()
    mA = composite(["A", "F1", "F2"], "A")
    mC = composite(["C", "F4"], "C")
    pA, jA, RA, tA = PLACE["A"]
    model.add_body("A", pA, jA, rotation=RA, translation=tA, mass=mA[0], com=mA[1], inertia=mA[2])
    R2, p2 = placement_in("F2", "A")                     # B's joint frame in A
    _, jB, RB, tB = PLACE["B"]
    mB, cB, JB = INERTIA["B"]
    model.add_body("B", "A", jB, rotation=R2 @ RB, translation=p2 + R2 @ np.asarray(tB), mass=mB,
                   com=cB, inertia=JB)
    RW, pW = placement_in("W", "world")                  # C's joint frame in world
    _, jC, RC, tC = PLACE["C"]
    model.add_body("C", "world", jC, rotation=RW @ RC, translation=pW + RW @ np.asarray(tC),
                   mass=mC[0], com=mC[1], inertia=mC[2])
    for frame, body, carrier, R, t in (("grip", "F1", "A", rot((0, 1, 0), 0.3), (0.1, 0.0, 0.05)),
                                       ("peg", "F4", "C", rot((1, 0, 0), -0.2), (0.0, 0.1, 0.0)),
                                       ("tool", "F2", "A", np.eye(3), (0.05, 0.05, 0.0)),
                                       ("F2", "F2", "A", np.eye(3), (0, 0, 0)),
                                       ("F1", "F1", "A", np.eye(3), (0, 0, 0)),
                                       ("F4", "F4", "C", np.eye(3), (0, 0, 0))):
        Rb, pb = placement_in(body, carrier)
        model.add_frame(frame, carrier, rotation=Rb @ R, translation=pb + Rb @ np.asarray(t))
    for sphere, body, centre, radius in (("tip", "F2", (0.02, -0.03, 0.1), 0.05),
                                         ("knob", "F4", (0.0, 0.0, 0.05), 0.03)) if contact else ():
        Rb, pb = placement_in(body, CARRIER[body])
        model.add_contact_sphere(sphere, CARRIER[body], center=pb + Rb @ np.asarray(centre),
                                 radius=radius)
    if contact:
        model.add_contact_plane("floor", point=(0, 0, 0.35))
    model.gravity = (0.3, -0.2, -9.81)
    return model


def states(model: sf.Model, n: int = 3):
    rng = np.random.default_rng(11)
    for _ in range(n):
        yield (rng.uniform(-1.5, 1.5, model.nv) * np.array([1.0, 1.0, 0.2]),
               rng.normal(size=model.nv), rng.normal(size=model.nv), rng.normal(size=model.nv))


def test_the_fold_numbers_bodies_as_the_model_does():
    model = folded_model()
    v = model.core.views()
    names = [b.name for b in model.bodies]
    moving = [names.index(n) for n in ("A", "B", "C")]
    assert list(v["order"]) == moving + [names.index(n) for n in ("F1", "F2", "W", "F4")]
    assert list(v["spar"]) == [-1, 0, 0, 0, -1, -1, 5]          # B's sweep parent is A, C's world
    assert v["fmass"][names.index("F1")] == 0.0 and v["fmass"][names.index("W")] == 0.0
    m, c, J = composite(["A", "F1", "F2"], "A")
    k = names.index("A")
    assert v["fmass"][k] == pytest.approx(m, rel=1e-15)
    assert rel(v["fcom"][k], c) < 1e-15 and rel(v["fJc"][k], J) < 1e-14
    kb = names.index("B")                                        # a lone carrier: its own numbers
    assert v["fmass"][kb] == INERTIA["B"][0] and np.array_equal(v["fJc"][kb], INERTIA["B"][2])


def test_folded_fixed_links_equal_the_model_merged_by_hand():
    fo, me = folded_model(), merged_model()
    assert fo.nv == me.nv == 3
    for q, qd, tau, qdd in states(fo):
        f_fo = {"F2": [0.3, -0.2, 0.1, 1.0, 2.0, -0.5], "grip": [0.0, 0.1, 0.0, -1.0, 0.5, 0.3],
                "F4": [0.2, 0.0, -0.1, 0.5, 0.0, 1.5], "W": [5.0, 5.0, 5.0, 9.0, 9.0, 9.0]}
        f_me = {"F2": f_fo["F2"], "grip": f_fo["grip"], "F4": f_fo["F4"]}   # W's acts on the world
        a_fo = sf.forward_dynamics(fo, q, qd, tau, f_ext=f_fo)
        w = fo.workspace()
        kin = {n: (w.Rw[k].copy(), w.pw[k].copy(), w.V[k].copy(), w.alpha[k].copy())
               for k, n in enumerate(b.name for b in fo.bodies)}
        a_me = sf.forward_dynamics(me, q, qd, tau, f_ext=f_me)
        assert rel(a_fo, a_me) < 1e-13
        wm = me.workspace()
        for name, carrier in CARRIER.items():              # the folded links' kinematics
            Rb, pb = placement_in(name, carrier)
            if carrier == "world":
                R, p, V, al = np.eye(3), np.zeros(3), np.zeros(6), np.r_[0.0, 0.0, 0.0, -fo.gravity]
            else:
                kc = me.body_index(carrier)
                R, p, V, al = wm.Rw[kc], wm.pw[kc], wm.V[kc], wm.alpha[kc]
            assert rel(kin[name][0], R @ Rb) < 1e-14 and rel(kin[name][1], p + R @ pb) < 1e-14
            assert rel(kin[name][2], V) < 1e-14 and rel(kin[name][3], al) < 1e-13
        assert rel(sf.inverse_dynamics(fo, q, qd, qdd, f_ext=f_fo),
                   sf.inverse_dynamics(me, q, qd, qdd, f_ext=f_me)) < 1e-13
        wf = fo.workspace()
        for name, carrier in CARRIER.items():              # body-frame kinematics of rnea
            k = fo.body_index(name)
            assert rel(wf.R[k], PLACE[name][2]) == 0.0 and rel(wf.l[k], PLACE[name][3]) == 0.0
        kb = fo.body_index("B")                             # B's placement in its real parent F2
        RF2, pF2 = frame_pose(fo, q, "F2")
        RB, pB = frame_pose(fo, q, "B")
        assert rel(wf.R[kb], RF2.T @ RB) < 1e-14 and rel(wf.l[kb], RF2.T @ (pB - pF2)) < 1e-14
        assert rel(sf.mass_matrix(fo, q), sf.mass_matrix(me, q)) < 1e-13
        assert rel(sf.mass_matrix_inverse(fo, q), sf.mass_matrix_inverse(me, q)) < 1e-13
        assert kinetic_energy(fo, q, qd) == pytest.approx(kinetic_energy(me, q, qd), rel=1e-13)
        mW, cW, _ = INERTIA["W"]                            # the welded link's constant m g z
        RW, pW = placement_in("W", "world")
        dU = -mW * fo.gravity @ (pW + RW @ np.asarray(cW))
        assert potential_energy(fo, q) - potential_energy(me, q) == pytest.approx(dU, rel=1e-12)


def test_contact_on_folded_links_equals_the_merged_model():
    fo, me = folded_model(), merged_model()
    touched = 0
    for q, qd, tau, _ in states(fo, 6):
        cf, cm = contact_forces(fo, q, qd), contact_forces(me, q, qd)
        assert rel(cf.sphere_force, cm.sphere_force) < 1e-13
        assert rel(cf.sphere_depth, cm.sphere_depth) < 1e-13
        touched += int((cf.sphere_depth > 0).sum())
    assert touched > 0, "no state put a sphere into the floor"


def test_closure_on_folded_links_equals_the_merged_model():
    fo, me = folded_model(contact=False), merged_model(contact=False)
    for model in (fo, me):                                 # B (moving) to F4 (folded into C)
        model.add_frame("hand", "B", translation=(0.0, 0.2, 0.1))
        model.add_constraint("hold", "ball", "hand", "peg")
    for q, qd, tau, _ in states(fo, 2):
        rf = constrained_forward_dynamics(fo, q, qd, tau, stabilization=(5.0, 5.0))
        rm = constrained_forward_dynamics(me, q, qd, tau, stabilization=(5.0, 5.0))
        assert rel(rf.qdd, rm.qdd) < 1e-12
        # (the constraint solve amplifies the two models' different roundings: forces of ~1e4 N
        # agree to ~1e-12 relative, which a few ulps of a sine move past 1e-12)
        assert rel(rf.forces["hold"], rm.forces["hold"]) < 1e-11


def test_folded_algorithms_agree_with_each_other():
    """FD (inertial frame, fused passes) against ID (body frames) and M (composite inertias) on the
    folded model: M FD(tau) + ID(0) = tau, ID(FD(tau)) = tau (the prismatic and revolute joints
    about coordinate axes take the written-out paths in FD and M only)."""
    fo = folded_model(contact=False)
    for q, qd, tau, _ in states(fo, 4):
        a = sf.forward_dynamics(fo, q, qd, tau)
        assert rel(sf.inverse_dynamics(fo, q, qd, a), tau) < 1e-13
        assert rel(sf.mass_matrix(fo, q) @ a + sf.inverse_dynamics(fo, q, qd, 0 * a), tau) < 1e-13
