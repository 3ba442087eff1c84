"""``soa-describe MODEL_FILE``: print a model's tree, joints, coordinates, masses, the physical parameters
(the FMU's ``<b>.mass``, ``<b>.com``, ``<b>.inertia``, ``damping``, ``friction``), frames, constraints,
contact spheres and planes.  ``soa-describe X.fmu``: the FMU's build (FMI version, interfaces,
the platforms it has binaries for), then its bundled model.

Also ``python -m soa_fmu.cli MODEL_FILE``.  A bad file exits with status 1 and one line on stderr.
"""
from __future__ import annotations

import argparse
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np

from .io import load_model
from .io.checks import cli_error, for_cli
from .model import WORLD, Model, ModelError


def _num(x: float) -> str:
    return f"{x:.6g}"


def _vec(v) -> str:
    return "(" + ", ".join(_num(float(x)) for x in v) + ")"


def _coordinates(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{names[0]} … {names[-1]}"


def describe(model: Model) -> str:
    """A readable multi-line description of ``model``."""
    out = [f"{model.name}" + (f"  ({model.source})" if model.source else ""),
           f"  {model.nbodies} bodies, nq = {model.nq}, nv = {model.nv}, "
           f"total mass {_num(model.total_mass)} kg, gravity {_vec(model.gravity)} m/s²",
           "", "tree (body: joint type 'name', coordinates; mass):", WORLD]
    children: dict[int, list[int]] = {}
    for k, b in enumerate(model.bodies):
        children.setdefault(b.parent, []).append(k)
    qnames, vnames = model.position_names, model.velocity_names

    def walk(parent: int, depth: int) -> None:
        for k in children.get(parent, []):
            b, j = model.bodies[k], model.bodies[k].joint
            line = f"{'  ' * depth}{b.name}: {j.type_name} {b.joint_name!r}"
            if j.nv:
                axis = j.axis_vector()
                if np.any(axis):
                    line += f" axis {_vec(axis)}"
                q = qnames[b.q_index:b.q_index + j.nq]
                line += f", q: {_coordinates(q)}"
                if j.nq != j.nv:
                    line += f" ({j.nq}), qd: {_coordinates(vnames[b.v_index:b.v_index + j.nv])} ({j.nv})"
            line += f"; {_num(b.mass)} kg" if b.mass else "; massless"
            if b.node is not None:
                line += f"; on node {b.node} of {model.bodies[b.parent].name!r}"
            out.append(line)
            if b.flexible is not None:                     # seed 000 §4: its modal coordinates
                fl, e = b.flexible, b.q_index + j.nq
                hz = ", ".join(_num(w / (2 * np.pi)) for w in fl.frequencies)
                out.append(f"{'  ' * depth}  flexible: {len(fl.nodes)} nodes, {fl.nmodes} modes "
                           f"({hz} Hz clamped), q: {_coordinates(qnames[e:e + fl.nmodes])}")
            walk(k, depth + 1)

    walk(-1, 1)
    out += ["", "physical parameters (FMU parameters <body>.mass, .com[1..3], .inertia[1..6]: "
                "kg, m, kg·m² xx yy zz xy xz yz about the centre of mass):"]
    for b in model.bodies:
        J = b.inertia
        out.append(f"  {b.name}: mass {_num(b.mass)}, com {_vec(b.com)}, inertia "
                   f"{_vec((J[0, 0], J[1, 1], J[2, 2], J[0, 1], J[0, 2], J[1, 2]))}")
    if model.nv:
        out += ["", f"joint dissipation (FMU parameters damping[i]: N·m·s/rad or N·s/m, friction[i]: "
                    f"N·m or N; friction smoothed as tanh(qd / {_num(model.friction_velocity)})):"]
        d, f = model.joint_damping, model.joint_friction
        out += [f"  {i + 1:>3} {n}: damping {_num(d[i])}, friction {_num(f[i])}"
                for i, n in enumerate(vnames)]
    if model.frames:
        out += ["", "frames:"]
        out += [f"  {f.name} on {model.bodies[f.body].name} at {_vec(f.translation)}"
                if f.node is None else
                f"  {f.name} on node {f.node} of {model.bodies[model.bodies[f.body].parent].name} "
                f"at {_vec(model.bodies[f.body].translation)}" for f in model.frames.values()]
    if model.mimics:
        out += ["", "mimic couplings (enforced; q = k q_driver + c):"]
        out += [f"  {m.joint} = {_num(m.multiplier)} {m.driver} + {_num(m.offset)}"
                for m in model.mimics]
    if model.constraints:
        out += ["", "constraints:"]
        out += [f"  {c.name}: {c.kind} ({c.size} rows) {c.frame_a} -> {c.frame_b}"
                + (f", axis {_vec(c.axis)}" if c.kind in ("hinge", "soft_finger") else "")
                + ("" if c.active else ", inactive") for c in model.constraints]
    if model.contact_spheres or model.contact_planes:
        out += _describe_contact(model)
    if model.initial_q is not None or model.initial_qd is not None:
        out += ["", "initial state:"]
        for label, x, names in (("q", model.initial_q, qnames), ("qd", model.initial_qd, vnames)):
            if x is not None:
                out += textwrap.wrap(", ".join(f"{n}={_num(v)}" for n, v in zip(names, x)), 100,
                                     initial_indent=f"  {label}: ", subsequent_indent="      ")
    return "\n".join(out)


def _describe_contact(model: Model) -> list[str]:
    """The contact geometries and planes with the law's constants (FMU parameters contact.<k>)."""
    from .contact import sphere_pairs
    law = model.contact_law
    out = ["", "contact (Hunt–Crossley f_n = k δ^n (1 + d δ̇), Coulomb μ regularized by v_s; FMU "
               "parameters contact.<constant>, <plane>.offset; outputs <geom>.force, .depth):",
           "  " + ", ".join(f"{k} {_num(v)}" for k, v in law.items())]
    own = lambda c: f"; {', '.join(f'{k} {_num(v)}' for k, v in c.law.items())}" if c.law else ""
    out += [f"  {s.shape} {s.name} on {model.bodies[s.body].name} at {_vec(s.center)}, "
            f"{_shape_size(s)}{own(s)}" for s in model.contact_geoms]
    out += [f"  plane {p.name}: normal {_vec(p.normal)}, offset {_num(p.offset)}{own(p)}"
            for p in model.contact_planes]
    pairs = sphere_pairs(model)
    if pairs:
        sp = model.contact_geoms
        out.append("  pairs: " + ", ".join(f"{sp[a].name}/{sp[b].name}" for a, b in pairs))
    out += [f"  pair {p.geom}/{p.other}{' (explicit)' if p.explicit else ''}{own(p)}"
            for p in model.contact_pairs if p.law or p.explicit]
    return out


def _shape_size(g) -> str:
    """A contact geometry's sizes, as soa-describe prints them."""
    if g.shape == "box":
        return f"half-extents {_vec(g.half_extents)}"
    if g.shape in ("capsule", "cylinder"):
        return f"radius {_num(g.radius)}, half-length {_num(g.half_length)}"
    if g.shape == "ellipsoid":
        return f"radii {_vec(g.radii)}"
    if g.shape == "mesh":
        return f"hull of {len(g.vertices)} vertices" + (f" ({Path(g.mesh).name})" if g.mesh else "")
    return f"radius {_num(g.radius)}"


def _fmu_model(path: str, tmp: str) -> tuple[str, list[str], bool]:
    """A soa_fmu-built FMU: its bundled model file extracted under ``tmp``, the lines that
    describe the build, and its floating-base flag."""
    import json
    import zipfile
    from .fmu.native import binaries_of
    try:
        with zipfile.ZipFile(path) as zf:
            cfg = json.loads(zf.read("resources/fmu.json"))
            names = zf.namelist()
            zf.extractall(tmp, [n for n in names if n.startswith("resources/model/")])
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as e:
        raise ModelError(f"{path}: not an FMU built by soa_fmu ({e})") from None
    lines = [f"FMU {path}: FMI {cfg.get('fmi', 2)}.0, {' + '.join(cfg.get('interfaces', ['cs']))}, "
             f"identifier {cfg['identifier']}, runtime {cfg['runtime']}",
             f"  binaries: {', '.join(binaries_of(names)) or 'none'}", ""]
    return str(Path(tmp, "resources", cfg["model_file"])), lines, bool(cfg.get("floating_base"))


def describe_main(argv: list[str] | None = None) -> int:
    """Entry point of ``soa-describe``; returns the exit status."""
    parser = argparse.ArgumentParser(prog="soa-describe", description="Describe a model file "
                                     "(.urdf, native .toml, or MJCF .xml): tree, joints, masses, frames, constraints; "
                                     "or an FMU built by soa_fmu: its FMI version, interfaces, platforms and model.")
    parser.add_argument("model_file")
    parser.add_argument("--floating-base", action="store_true",
                        help="attach the root link to world by a free joint (URDF)")
    parser.add_argument("--contact-floor", type=float, metavar="HEIGHT",
                        help="URDF: every <collision> becomes contact geometry (spheres, boxes, "
                             "cylinders, capsules, mesh hulls), with a floor plane at this height")
    parser.add_argument("--lenient", action="store_true",
                        help="accept link inertias that are not physically possible (not positive "
                             "semi-definite, or breaking the triangle inequality), with a warning each")
    args = parser.parse_args(argv)
    import tempfile
    tmp = tempfile.TemporaryDirectory(prefix="soa_describe_")
    try:
        path, header = args.model_file, []
        if path.lower().endswith(".fmu"):
            path, header, args.floating_base = _fmu_model(path, tmp.name)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = load_model(path, floating_base=args.floating_base,
                               strict=not args.lenient, contact_floor=args.contact_floor)
    except ModelError as e:
        print(f"soa-describe: error: {cli_error(str(e), args.model_file, args.floating_base, args.lenient)}",
              file=sys.stderr)
        return 1
    finally:
        tmp.cleanup()
    for w in caught:
        print(f"soa-describe: warning: {for_cli(' '.join(str(w.message).split()))}", file=sys.stderr)
    print("\n".join(header + [describe(model)]))
    return 0


if __name__ == "__main__":
    sys.exit(describe_main())
