"""MuJoCo as the reference of a Model read from MJCF (tests and benchmarks; needs ``mujoco``).

The model is compiled by MuJoCo with the constraint-free "smooth" dynamics both engines share
(contacts, limits, passive forces, friction loss, actuators and equalities off), and our M, forward
and inverse dynamics and site poses are compared with MuJoCo's at random states through the
coordinate maps of :mod:`soa_fmu.io.mjcf`.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..articulated import forward_dynamics
from ..inverse_dynamics import inverse_dynamics
from ..io import mjcf as X
from ..kinematics import frame_pose
from ..mass_matrix import mass_matrix
from ..model import Model

mujoco = X.import_mujoco()


def bits(*names: str) -> int:
    """MuJoCo's ``disableflags`` bits of the named flags (``CONTACT``, ``LIMIT``, ...)."""
    out = 0
    for n in names:
        out |= int(getattr(mujoco.mjtDisableBit, f"mjDSBL_{n}"))
    return out


# contacts, limits, passive forces (springs, dampers: MuJoCo >= 3.2 splits PASSIVE), friction loss,
# actuators and equalities off: the smooth dynamics both engines share
SMOOTH = ("CONTACT", "LIMIT", "FRICTIONLOSS", "ACTUATION", "EQUALITY") + (
    ("PASSIVE",) if hasattr(mujoco.mjtDisableBit, "mjDSBL_PASSIVE") else ("SPRING", "DAMPER"))


def full_m(m, d) -> np.ndarray:
    """MuJoCo's dense M at the last ``mj_forward`` (its signature changed in 3.4)."""
    M = np.zeros((m.nv, m.nv))
    try:
        mujoco.mj_fullM(m, d, M)            # MuJoCo >= 3.4
    except TypeError:
        mujoco.mj_fullM(m, M, d.qM)
    return M


def mj_model(path):
    """MuJoCo's own model of the file (through MjSpec: its warnings stay in Python, no
    MUJOCO_LOG.TXT in the working folder)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mujoco.MjSpec.from_file(str(path)).compile()


def mujoco_pair(path, disable=SMOOTH, armature: bool = False):
    """(MjModel, MjData) with ``disable`` off; armature zeroed unless asked (mj_setConst: MuJoCo
    keeps the constant M of bodies with only slide joints from compile time)."""
    m = mj_model(path)
    m.opt.disableflags |= bits(*disable)
    d = mujoco.MjData(m)
    if not armature:
        m.dof_armature[:] = 0.0
    mujoco.mj_setConst(m, d)
    return m, d


def random_qpos(m, rng) -> np.ndarray:
    """qpos0 + noise, quaternions of free and ball joints normalized."""
    qpos = m.qpos0 + 0.5 * rng.standard_normal(m.nq)
    for j in range(m.njnt):
        a = int(m.jnt_qposadr[j])
        if m.jnt_type[j] in (X.FREE, X.BALL):
            a += 3 if m.jnt_type[j] == X.FREE else 0
            qpos[a:a + 4] /= np.linalg.norm(qpos[a:a + 4])
    return qpos


def rel(a, b) -> float:
    """max |a − b| / max |b|: the difference relative to the reference's largest entry."""
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


def compare(model: Model, m, d, rng, states: int = 100) -> dict[str, float]:
    """Largest relative differences (:func:`rel`) of M, FD (MuJoCo's qacc at random qfrc_applied),
    ID (``mj_inverse`` at random qacc) and site poses over ``states`` random states; ``m`` is the
    model ``model`` was read from, ``d`` its MjData."""
    err = dict.fromkeys(("M", "FD", "ID", "sites"), 0.0)
    sites = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_SITE, s) for s in range(m.nsite)]
    for _ in range(states):
        qpos, qvel = random_qpos(m, rng), rng.standard_normal(m.nv)
        d.qpos[:], d.qvel[:], d.qfrc_applied[:] = qpos, qvel, rng.standard_normal(m.nv)
        mujoco.mj_forward(m, d)
        q = X.q_from_qpos(m, qpos)
        qd = X.qd_from_qvel(m, q, qvel)
        tau = X.tau_from_qfrc(m, q, d.qfrc_applied)
        err["M"] = max(err["M"], rel(mass_matrix(model, q),
                                     X.mass_matrix_from_mujoco(m, q, full_m(m, d))))
        qacc = X.qacc_from_qdd(m, q, qd, forward_dynamics(model, q, qd, tau))
        err["FD"] = max(err["FD"], rel(qacc, d.qacc))
        d.qacc[:] = rng.standard_normal(m.nv)
        mujoco.mj_inverse(m, d)
        qdd = X.qdd_from_qacc(m, q, qd, d.qacc)
        qfrc = X.qfrc_from_tau(m, q, inverse_dynamics(model, q, qd, qdd))
        err["ID"] = max(err["ID"], rel(qfrc, d.qfrc_inverse))
        for s, name in enumerate(sites):
            R, p = frame_pose(model, q, name)
            err["sites"] = max(err["sites"], rel(p, d.site_xpos[s]),
                               rel(R, d.site_xmat[s].reshape(3, 3)))
    return err


def mujoco_trajectory(path, qpos_start, steps: int, disable=("CONTACT", "LIMIT")) -> np.ndarray:
    """MuJoCo's own simulation of the file from ``qpos_start`` (zero velocity, no control): RK4 at
    the file's timestep, ``disable`` off; our q (:func:`soa_fmu.io.mjcf.q_from_qpos`) at each of the
    ``steps + 1`` instants."""
    m = mj_model(path)
    m.opt.disableflags |= bits(*disable)
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
    d = mujoco.MjData(m)
    d.qpos[:] = qpos_start
    out = [X.q_from_qpos(m, d.qpos)]
    for _ in range(steps):
        mujoco.mj_step(m, d)
        out.append(X.q_from_qpos(m, d.qpos))
    return np.array(out)
