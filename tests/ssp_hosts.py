"""The plant + controller SSP (build_ssp.py) run by real tools, and the same loop in Python.

Every runner returns (t, q) with q[k] the plant's coordinates at the communication point t[k] =
k h, k = 0 ... N (N h = stop time), so that the results compare row by row:

- :func:`python_loop`: the loop the archive describes, written with the engine's Python API
  (sf.Simulator for the plant, sf.inverse_dynamics for the controller): tau over [t_k, t_k+1] is
  the computed torque of the plant's state at t_k-1 and the reference at t_k-1 (the sampled
  controller's one step of delay; 0 over the first step);
- :func:`run_fmpy`: fmpy.ssp.simulation.simulate_ssp (a Jacobi master), with the archive's
  parameter sets passed as its ``parameter_set`` (fmpy applies none by itself);
- :func:`run_omsimulator`: OMSimulator as a user runs it (a Lua script, oms_importFile and
  oms_simulate: its own parameter bindings, default experiment and master), in a child process
  through tests/omsimulator_host.py;
- :func:`run_libcosim`: libcosimpy's CosimExecution.from_ssp_file (libcosim's SSP loader and its
  fixed-step algorithm), values recorded with a last-value observer after each step.
"""
from __future__ import annotations

import tempfile
import zipfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from lxml import etree

SSV = {"ssv": "http://ssp-standard.org/SSP1/SystemStructureParameterValues"}


def parameters(ssp: Path, component: str) -> dict[str, object]:
    """The values a component's parameter set (resources/<component>.ssv) gives, typed."""
    with zipfile.ZipFile(ssp) as z:
        root = etree.fromstring(z.read(f"resources/{component}.ssv"))
    out = {}
    for p in root.iterfind("ssv:Parameters/ssv:Parameter", SSV):
        el = p[0]
        kind = etree.QName(el).localname
        value = el.get("value")
        out[p.get("name")] = (value == "true" if kind == "Boolean" else
                              int(value) if kind == "Integer" else float(value))
    return out


def stop_time(ssp: Path) -> float:
    with zipfile.ZipFile(ssp) as z:
        root = etree.fromstring(z.read("SystemStructure.ssd"))
    return float(root.find("{*}DefaultExperiment").get("stopTime"))


def _vector(values: dict, group: str, n: int) -> np.ndarray:
    return np.array([values[f"{group}[{i + 1}]"] for i in range(n)])


def quintic(t: float, t0: float, T: float, q0, q1):
    s = min(max((t - t0) / T, 0.0), 1.0)
    dq = np.asarray(q1) - np.asarray(q0)
    return (q0 + dq * (10 * s**3 - 15 * s**4 + 6 * s**5),
            dq * (30 * s**2 - 60 * s**3 + 30 * s**4) / T,
            dq * (60 * s - 180 * s**2 + 120 * s**3) / T**2)


def python_loop(model, ssp: Path, step: float = 1e-3):
    """The closed loop of the archive in Python (module docstring)."""
    import soa_fmu as sf
    c, n = parameters(ssp, "controller"), model.nv
    Kp, Kd = _vector(c, "Kp", n), _vector(c, "Kd", n)
    q_from, q_to = _vector(c, "q_from", n), _vector(c, "q_to", n)
    sim = sf.Simulator(model, method="auto", max_step=step)
    N = int(round(stop_time(ssp) / step))
    t, q = np.arange(N + 1) * step, np.empty((N + 1, model.nq))
    q[0] = sim.q
    held, measured = np.zeros(n), (np.zeros(n), np.zeros(n))   # (the masters' connectors start 0)
    for k in range(N):
        qr, qdr, qddr = quintic(k * step, c["move_start"], c["move_duration"], q_from, q_to)
        qm, qdm = measured
        a = qddr + Kp * (qr - qm) + Kd * (qdr - qdm)
        tau = sf.inverse_dynamics(model, qm, qdm, a) + model.joint_damping * qdr + \
            model.joint_friction * np.tanh(qdr / model.friction_velocity)
        sim.tau = held
        sim.step(step)
        held, measured = tau, (sim.q.copy(), sim.qd.copy())
        q[k + 1] = sim.q
    return t, q, sim.integrator_used


def reference_of(ssp: Path, t: np.ndarray, n: int) -> np.ndarray:
    """The trajectory the controller follows, at the times t."""
    c = parameters(ssp, "controller")
    return np.array([quintic(x, c["move_start"], c["move_duration"], _vector(c, "q_from", n),
                             _vector(c, "q_to", n))[0] for x in t])


def run_fmpy(ssp: Path, n: int, step: float = 1e-3):
    """fmpy's SSP simulation; its rows hold the connector values after the step from row time t,
    i.e. the state at t + h, so the result is shifted by one step (and starts from q(0) = the
    plant's start)."""
    from fmpy.ssp.simulation import simulate_ssp
    values = [SimpleNamespace(name=f"{comp}.{k}", value=v)
              for comp in ("plant", "controller") for k, v in parameters(ssp, comp).items()]
    T = stop_time(ssp)
    r = simulate_ssp(str(ssp), stop_time=T - 0.5 * step, step_size=step,
                     parameter_set=SimpleNamespace(parameters=values))
    q = np.column_stack([r[f"plant.q[{i + 1}]"] for i in range(n)])
    q0 = np.array([parameters(ssp, "plant").get(f"q0[{i + 1}]", 0.0) for i in range(n)])
    t = np.concatenate([[0.0], r["time"] + step])
    return t, np.vstack([q0, q])


# ---------------------------------------------------------------- OMSimulator
OMS_LUA = """model, status = oms_importFile("{ssp}")
oms_setResultFile(model, "result.csv")
oms_instantiate(model)
oms_initialize(model)
oms_simulate(model)
oms_terminate(model)
oms_delete(model)
"""


def run_omsimulator(ssp: Path, n: int, step: float = 1e-3):
    """OMSimulator as a user runs the archive (tests/omsimulator_host.py: a Lua script through its
    command line, in a child process): oms_importFile, oms_simulate over the default experiment
    with the archive's step (its annotation); q from the result file (12 significant digits; the
    last row of each time).  Returns (t, q, the tool's error lines)."""
    import csv

    import omsimulator_host as oms
    with tempfile.TemporaryDirectory(prefix="soa_oms_") as tmp:
        r = oms.run_lua(OMS_LUA.format(ssp=Path(ssp).resolve()), tmp, timeout=300)
        out = Path(tmp, "result.csv")
        if r.returncode != 0 or not out.is_file():
            raise RuntimeError(f"OMSimulator failed ({r.returncode}): "
                               f"{(r.stdout + r.stderr)[-600:]}")
        with open(out) as f:
            rows = list(csv.reader(f))
    head = [h.strip() for h in rows[0]]
    cols = [next(k for k, h in enumerate(head) if h.endswith(f".root.plant.q[{i + 1}]"))
            for i in range(n)]
    at = {round(float(x[0]) / step): [float(x[c]) for c in cols] for x in rows[1:]}
    k = sorted(at)
    return np.array(k) * step, np.array([at[j] for j in k]), oms.errors(r.stdout + r.stderr)


# ---------------------------------------------------------------- libcosim
def run_libcosim(ssp: Path, n: int, step: float = 1e-3):
    """libcosim's SSP loader (its step from the archive's osp annotation), q of the plant after
    every step from a last-value observer."""
    from libcosimpy.CosimExecution import CosimExecution
    from libcosimpy.CosimObserver import CosimObserver
    ex = CosimExecution.from_ssp_file(str(ssp))
    last = CosimObserver.create_last_value()
    ex.add_observer(last)
    plant = ex.slave_index_from_instance_name("plant")
    names = {(v.name.decode() if isinstance(v.name, bytes) else v.name): v.reference
             for v in ex.slave_variables(plant)}
    refs = [names[f"q[{i + 1}]"] for i in range(n)]
    steps = int(round(stop_time(ssp) / step))
    q = [last.last_real_values(plant, refs)]
    for _ in range(steps):
        if not ex.step(1):
            raise RuntimeError("libcosim: a step failed")
        q.append(last.last_real_values(plant, refs))
    end = ex.status().current_time * 1e-9
    return np.arange(steps + 1) * step, np.array(q), end
