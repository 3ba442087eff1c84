"""Coordinate mapping between a soa_fmu Model and a Pinocchio model of the same URDF, by joint name.

Conventions mapped (everything else — joint axes, placements, gravity (0, 0, −9.81) — is the same):

| joint               | soa_fmu q            | pin q                   | soa_fmu β      | pin v          |
|---------------------|----------------------|-------------------------|----------------|----------------|
| revolute, prismatic | θ                    | θ                       | θ̇              | θ̇              |
| continuous          | θ                    | (cos θ, sin θ)          | θ̇              | θ̇              |
| free / free-flyer   | (qw, qx, qy, qz,     | (x, y, z,               | [ω; v] body    | [v; ω] local   |
|                     |  x, y, z)            |  qx, qy, qz, qw)        | frame          | frame          |

The pin root frame of a free-flyer is the root body's frame, so v and ω are the same vectors.
Accelerations and generalized forces map like velocities.
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin

import soa_fmu as sf
from soa_fmu import joints as J


class PinMapping:
    """Index maps between ``model`` (soa_fmu) and ``pmodel`` (pinocchio), built from joint names."""

    def __init__(self, model: sf.Model, pmodel: "pin.Model"):
        self.model, self.pmodel = model, pmodel
        pin_joints = {pmodel.names[i]: pmodel.joints[i] for i in range(1, pmodel.njoints)}
        moving = [b for b in model.bodies if b.joint.nv > 0]
        if sorted(pin_joints) != sorted(b.joint_name for b in moving):
            raise ValueError(f"joint names differ: pin {sorted(pin_joints)}, "
                             f"soa {sorted(b.joint_name for b in moving)}")
        self.joints = [(b, pin_joints[b.joint_name]) for b in moving]
        for b, pj in self.joints:
            if b.joint.code == J.FREE:
                assert pj.nq == 7 and pj.nv == 6, pj
            else:
                assert b.joint.nq == 1 and pj.nv == 1 and pj.nq in (1, 2), (b.joint_name, pj)

    # ------------------------------------------------------------ configuration
    def q_to_pin(self, q: np.ndarray) -> np.ndarray:
        out = np.zeros(self.pmodel.nq)
        for b, pj in self.joints:
            s, p = b.q_index, pj.idx_q
            if b.joint.code == J.FREE:
                out[p:p + 3] = q[s + 4:s + 7]
                out[p + 3:p + 6] = q[s + 1:s + 4]
                out[p + 6] = q[s]
            elif pj.nq == 2:
                out[p:p + 2] = np.cos(q[s]), np.sin(q[s])
            else:
                out[p] = q[s]
        return out

    def random_configuration(self, rng: np.random.Generator) -> np.ndarray:
        """Angles in (−π, π), unit quaternions, positions in a 1 m box."""
        q = np.zeros(self.model.nq)
        for b in self.model.bodies:
            s = b.q_index
            if b.joint.code == J.FREE:
                quat = rng.normal(size=4)
                q[s:s + 4] = quat / np.linalg.norm(quat)
                q[s + 4:s + 7] = rng.uniform(-1.0, 1.0, 3)
            elif b.joint.nq:
                q[s:s + b.joint.nq] = rng.uniform(-np.pi, np.pi, b.joint.nq)
        return q

    # ------------------------------------------------------------ velocity-like vectors
    def v_to_pin(self, v: np.ndarray) -> np.ndarray:
        out = np.zeros(self.pmodel.nv)
        for b, pj in self.joints:
            s, p = b.v_index, pj.idx_v
            if b.joint.code == J.FREE:
                out[p:p + 3], out[p + 3:p + 6] = v[s + 3:s + 6], v[s:s + 3]
            else:
                out[p] = v[s]
        return out

    def v_from_pin(self, v: np.ndarray) -> np.ndarray:
        out = np.zeros(self.model.nv)
        for b, pj in self.joints:
            s, p = b.v_index, pj.idx_v
            if b.joint.code == J.FREE:
                out[s:s + 3], out[s + 3:s + 6] = v[p + 3:p + 6], v[p:p + 3]
            else:
                out[s] = v[p]
        return out


def relative_error(a: np.ndarray, b: np.ndarray) -> float:
    """‖a − b‖ / ‖b‖ (2-norms)."""
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def compare_dynamics(model: sf.Model, pmodel: "pin.Model", n_states: int = 5,
                     seed: int = 0) -> tuple[float, float]:
    """Max relative error of forward and of inverse dynamics against pin.aba / pin.rnea at random
    states (configurations, velocities, torques/accelerations)."""
    mp = PinMapping(model, pmodel)
    data = pmodel.createData()
    rng = np.random.default_rng(seed)
    err_fd = err_id = 0.0
    for _ in range(n_states):
        q = mp.random_configuration(rng)
        qd, tau, qdd = (rng.normal(size=model.nv) for _ in range(3))
        pq, pv = mp.q_to_pin(q), mp.v_to_pin(qd)
        a_pin = mp.v_from_pin(pin.aba(pmodel, data, pq, pv, mp.v_to_pin(tau)))
        t_pin = mp.v_from_pin(pin.rnea(pmodel, data, pq, pv, mp.v_to_pin(qdd)))
        err_fd = max(err_fd, relative_error(sf.forward_dynamics(model, q, qd, tau), a_pin))
        err_id = max(err_id, relative_error(sf.inverse_dynamics(model, q, qd, qdd), t_pin))
    return err_fd, err_id
