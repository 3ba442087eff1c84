"""Build an SSP system archive of a model and its computed-torque controller (docs/systems.md).

    python build_ssp.py model.urdf -o System.ssp [--stop-time 4] [--step 0.001]
                        [--kp 400] [--kd 40] [--goal 0.5,0.3,...] [--move-start 0.5]
                        [--move-duration 2] [--platforms all|host|LIST]

(also installed as ``soa-build-ssp``).  The archive (SSP 1.0, Modelica Association) holds:

    SystemStructure.ssd        the system ``root``: components ``plant`` and ``controller``, the
                               connections plant.q -> controller.q, plant.qd -> controller.qd,
                               controller.tau -> plant.tau, the default experiment [0, stop time]
                               and the communication step (OMSimulator's and libcosim's
                               annotations)
    resources/plant.fmu        the model (soa-build-fmu: native, FMI 2.0 CS + ME)
    resources/controller.fmu   its controller (soa-build-fmu --controller)
    resources/plant.ssv        the plant's physical parameters (masses, centres of mass,
                               inertias, damping, friction, armature)
    resources/controller.ssv   the same physical parameters (the controller's model of the
                               plant), the gains Kp, Kd, the trajectory (on: a quintic move from
                               the plant's start q0 to the goal), ff_dissipation, sampled = true

The controller runs ``sampled``: tau is computed at each communication point from the plant's
state there and held over the step, so that every master (OMSimulator's Gauss-Seidel order,
fmpy's and libcosim's Jacobi order) runs the same closed loop.  SystemStructure.ssd and both
parameter sets are checked against the SSP 1.0 XSDs before the archive is written.

Bad input exits with status 1 and one line on stderr.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
import zipfile
from pathlib import Path

import build_fmu
from build_fmu import ZIP_DATE, BuildError
from soa_fmu.io.checks import OneLineParser

DEFAULT_KP, DEFAULT_KD = 400.0, 40.0      # 1/s2, 1/s: e'' + Kd e' + Kp e = 0 critically damped
PHYSICAL = ("inertial", "damping", "friction", "armature")


def default_goal(model, q0):
    """A move of 0.5 (rad or m) on every dof from q0, kept 0.1 inside its joint limits."""
    import numpy as np
    lower, upper = model.joint_limits
    goal = q0 + 0.5
    over = ~np.isnan(upper) & (goal > upper - 0.1)
    goal[over] = q0[over] - 0.5
    under = ~np.isnan(lower) & (goal < lower + 0.1)
    goal[under] = np.clip(q0[under], lower[under] + 0.1, None)
    return goal


def _parameters(table, groups, values=None):
    """SSV parameters of the table's rows in ``groups`` (their start values, or ``values``)."""
    import numpy as np

    from model_descriptions.generator_ssp import Parameter
    out = []
    for v in table.variables:
        if v.group in groups:
            value = (values or {}).get(v.group, v.start)
            if np.ndim(value):                     # one value per dof
                value = value[v.index]
            out.append(Parameter(v.name, v.type, value))
    return out


def build(model_path, output="System.ssp", *, stop_time: float = 4.0, step: float = 1e-3,
          kp: float = DEFAULT_KP, kd: float = DEFAULT_KD, goal=None, move_start: float = 0.5,
          move_duration: float = 2.0, strict: bool = True, platforms: str = "all") -> Path:
    """Build the SSP archive; returns its path.  ``platforms``: the native binaries of both FMUs
    (as soa-build-fmu --platforms).  Raises BuildError (or ModelError) for bad input."""
    import numpy as np

    from model_descriptions import generator_ssp as G
    from soa_fmu.fmu.variables import build_controller_table, build_table
    from soa_fmu.io import load_model

    model_path, output = Path(model_path), Path(output)
    for what, x in (("--stop-time", stop_time), ("--step", step), ("--move-duration",
                                                                    move_duration)):
        if not (np.isfinite(x) and x > 0):
            raise BuildError(f"{what} must be a positive number of seconds, got {x!r}")
    if not (np.isfinite(move_start) and move_start >= 0):
        raise BuildError(f"--move-start must be >= 0 s, got {move_start!r}")
    if not (np.isfinite(kp) and np.isfinite(kd) and kp >= 0 and kd >= 0):
        raise BuildError(f"--kp and --kd must be finite and >= 0, got {kp!r}, {kd!r}")
    if not model_path.is_file():
        raise BuildError(f"{model_path}: no such model file")
    model = load_model(model_path, strict=strict)
    plant_table = build_table(model, "auto", step, states=True)
    ctrl_table = build_controller_table(model, states=True)        # (refuses what it cannot do)
    q0 = np.array([plant_table.by_name[f"q0[{i + 1}]"].start for i in range(model.nq)])
    goal = default_goal(model, q0) if goal is None else np.asarray(goal, dtype=float)
    if goal.shape != (model.nv,) or not np.all(np.isfinite(goal)):
        raise BuildError(f"--goal needs {model.nv} finite numbers (one per dof), got "
                         f"{list(np.atleast_1d(goal))}")
    nv = model.nv

    with tempfile.TemporaryDirectory(prefix="soa_ssp_") as tmp:
        plant_fmu = build_fmu.build(model_path, Path(tmp, "plant.fmu"), name="plant", step=step,
                                    strict=strict, platforms=platforms)
        ctrl_fmu = build_fmu.build(model_path, Path(tmp, "controller.fmu"), name="controller",
                                   step=step, strict=strict, controller=True,
                                   platforms=platforms)
        members = {"resources/plant.fmu": plant_fmu.read_bytes(),
                   "resources/controller.fmu": ctrl_fmu.read_bytes()}

    plant_params = _parameters(plant_table, PHYSICAL)
    ctrl_params = _parameters(ctrl_table, PHYSICAL) + _parameters(
        ctrl_table, ("Kp", "Kd", "q_from", "q_to", "move_start", "move_duration",
                     "ff_dissipation", "trajectory", "sampled"),
        {"Kp": [kp] * nv, "Kd": [kd] * nv, "q_from": q0, "q_to": goal, "move_start": move_start,
         "move_duration": move_duration, "trajectory": True, "sampled": True})
    sig = {"Real": "Real", "Boolean": "Boolean"}

    def connectors(table, params, ins, outs):
        rows = [(v.name, "input", "Real") for v in table.variables if v.group in ins]
        rows += [(v.name, "output", "Real") for v in table.variables if v.group in outs]
        return rows + [(p.name, "parameter", sig[p.type]) for p in params]

    components = [
        G.Component("plant", "resources/plant.fmu",
                    connectors(plant_table, plant_params, ("tau",), ("q", "qd")), plant_params,
                    "resources/plant.ssv"),
        G.Component("controller", "resources/controller.fmu",
                    connectors(ctrl_table, ctrl_params, ("q", "qd"), ("tau", "q_des")),
                    ctrl_params, "resources/controller.ssv")]
    links = [("plant", f"{g}[{i + 1}]", "controller", f"{g}[{i + 1}]")
             for g in ("q", "qd") for i in range(nv)]
    links += [("controller", f"tau[{i + 1}]", "plant", f"tau[{i + 1}]") for i in range(nv)]
    ssd = G.to_bytes(G.system_description(f"{model.name}_system", components, links, stop_time,
                                          step))
    docs = {"SystemStructure.ssd": (ssd, "ssd")}
    for c in components:
        docs[c.ssv] = (G.to_bytes(G.parameter_set(c.name, c.parameters)), "ssv")
    for name, (xml, kind) in docs.items():
        problems = G.validate(xml, kind)
        if problems:
            raise RuntimeError(f"generated {name} violates the SSP 1.0 schema: {problems[0]}")
        members[name] = xml

    output.parent.mkdir(parents=True, exist_ok=True)
    tmp_out = output.with_name(output.name + ".partial")
    with zipfile.ZipFile(tmp_out, "w", zipfile.ZIP_DEFLATED) as zf:
        for arcname in ["SystemStructure.ssd", *sorted(n for n in members
                                                       if n != "SystemStructure.ssd")]:
            info = zipfile.ZipInfo(arcname, ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, members[arcname])
    tmp_out.replace(output)
    return output


# ---------------------------------------------------------------- command line
def _floats(text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") \
            from None


def main(argv=None) -> int:
    parser = OneLineParser(prog="soa-build-ssp", description="Build an SSP 1.0 system archive: the "
                     "model (plant) under its computed-torque controller, tracking a quintic move.")
    parser.add_argument("model", help="model file (.urdf, .toml, or MJCF .xml / .mjb)")
    parser.add_argument("-o", "--output", default="System.ssp", help="SSP file to write")
    parser.add_argument("--stop-time", type=float, default=4.0, help="default experiment's stop "
                        "time in s (default 4)")
    parser.add_argument("--step", type=float, default=1e-3, help="communication step in s "
                        "(default 0.001)")
    parser.add_argument("--kp", type=float, default=DEFAULT_KP, help="position gain Kp of every "
                        "dof in 1/s2 (default 400)")
    parser.add_argument("--kd", type=float, default=DEFAULT_KD, help="velocity gain Kd of every "
                        "dof in 1/s (default 40)")
    parser.add_argument("--goal", type=_floats, help="the move's end, one value per dof, comma "
                        "separated (default: 0.5 from the start on each dof, inside its limits)")
    parser.add_argument("--move-start", type=float, default=0.5, help="time the move starts, s "
                        "(default 0.5)")
    parser.add_argument("--move-duration", type=float, default=2.0, help="duration of the move, "
                        "s (default 2)")
    parser.add_argument("--lenient", action="store_true", help="accept inertias that fail only "
                        "the physical checks (as soa-build-fmu --lenient)")
    parser.add_argument("--platforms", default="all", help="native binaries of both FMUs: all "
                        "(the default), host, or a comma-separated list (as soa-build-fmu)")
    args = parser.parse_args(argv)
    from soa_fmu.model import ModelError
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            path = build(args.model, args.output, stop_time=args.stop_time, step=args.step,
                         kp=args.kp, kd=args.kd, goal=args.goal, move_start=args.move_start,
                         move_duration=args.move_duration, strict=not args.lenient,
                         platforms=args.platforms)
        except (BuildError, ModelError, OSError, ValueError) as e:   # ValueError: a TableError
            msg = str(e).strip().splitlines()
            print(f"soa-build-ssp: error: {msg[0] if msg else type(e).__name__}", file=sys.stderr)
            return 1
    print(f"wrote {path} ({path.stat().st_size // 1024} KiB, {time.perf_counter() - t0:.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
