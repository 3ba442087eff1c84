"""Contact shapes' cost (docs/contact.md): native FMUs stepped by the C host
(benchmarks/fmu_step_host.c) at h = 1 ms, each ratio against a reference measured in the same run.

* talos (example-robot-data, talos_reduced.urdf): all 52 collision geometries of its links (47
  convex-mesh hulls, 4 cylinders, a box) on a floor, standing on its feet, against the same robot
  without contact — bar ≤ 2 (issue 31).  Its joints get a viscous damping of DAMPING N·m·s/rad
  (both FMUs; implicit in the step) in place of a controller, so that under the host's small
  excitation torques it still stands on its soles after the run instead of collapsing onto the
  floor (where some 23 points of its knees, hands and torso touch);
* one pair: a 2 kg ball (the bouncing_ball example) and a box of the same body resting on the
  floor, against the ball FMU built by the engine before contact shapes (commit BEFORE, its C
  sources compiled here) — bar ≤ 1 for the ball ("no more than today's sphere contact").

    python benchmarks/bench_shapes.py

Writes benchmarks/results/shapes.txt.  Needs example-robot-data and git (else says what it skipped).
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(HERE), str(REPO)]
from timing import table, write_result  # noqa: E402

import bench_fmu  # noqa: E402
import build_fmu  # noqa: E402

BAR_HUMANOID = 2.0
BAR_ONE_PAIR = 1.0
BEFORE = "e57d23e"          # main before the contact shapes (spheres only)
STEPS = 3000
ROBOTS = "cmeel.prefix/share/example-robot-data/robots"
DAMPING = 2000.0


def talos_urdf() -> Path | None:
    for entry in sys.path:
        p = Path(entry) / ROBOTS / "talos_data" / "robots" / "talos_reduced.urdf"
        if p.is_file():
            return p
    return None


def damped(tmp: Path, urdf: Path) -> Path:
    """A copy of the URDF whose moving joints have <dynamics damping="DAMPING"/> (its meshes found
    through ROS_PACKAGE_PATH, set to the robots' folder)."""
    import re
    os.environ["ROS_PACKAGE_PATH"] = str(urdf.parents[4])         # (package://example-robot-data)
    text = re.sub(r"<dynamics[^>]*/>", "", urdf.read_text())
    text = re.sub(r'(<joint[^>]*type="(?:revolute|continuous|prismatic)"[^>]*>)',
                  rf'\1<dynamics damping="{DAMPING}"/>', text)
    out = tmp / urdf.name
    out.write_text(text)
    return out


def talos_models(tmp: Path, urdf: Path) -> tuple[Path, Path]:
    """talos standing on its feet at the static depth (initial state in the file), with all its
    collision geometry on a floor, and without contact; joints damped (damped)."""
    import numpy as np
    import soa_fmu as sf
    urdf = damped(tmp, urdf)
    head = f'name = "talos"\nstrict = false\n[[include]]\nurdf = "{urdf.as_posix()}"\nfloating_base = true\n'
    with_contact = tmp / "talos_contact.toml"
    with_contact.write_text(head + 'contact_geometry = true\n[[contact.planes]]\nname = "floor"\n')
    model = sf.load_model(with_contact)
    q = model.neutral_configuration()
    q[6] = sf.contact_forces(model, q, np.zeros(model.nv)).depth.max()       # soles on the floor
    sim = sf.Simulator(model, q, np.zeros(model.nv), max_step=1e-3)
    for _ in range(300):                                                      # settled
        sim.step(1e-3)
    initial = f"\n[initial]\nq = [{', '.join(repr(float(x)) for x in sim.q)}]\n"
    with_contact.write_text(with_contact.read_text() + initial)
    without = tmp / "talos_free.toml"
    without.write_text(head + initial)
    return with_contact, without


def one_pair_models(tmp: Path) -> tuple[Path, Path]:
    """The example ball resting on the floor (static depth), and a box in its place."""
    from model_descriptions import example_path
    text = example_path("bouncing_ball.toml").read_text()
    depth = (2.0 * 9.81 / 1e5) ** (2 / 3)
    text = text.replace("q = [1, 0, 0, 0, 0, 0, 0.5]", f"q = [1, 0, 0, 0, 0, 0, {0.1 - depth!r}]")
    text = text.replace("qd = [0, 0, 0, 0.3, 0, 0]", "qd = [0, 0, 0, 0, 0, 0]")
    ball = tmp / "ball.toml"
    ball.write_text(text)
    box = tmp / "box.toml"
    box.write_text(text.replace('[[contact.spheres]]\nname = "ball_s"\nbody = "ball"\n'
                                'center = [0, 0, 0]\nradius = 0.1',
                                '[[contact.geoms]]\nname = "box_s"\nbody = "ball"\nshape = "box"\n'
                                'half_extents = [0.1, 0.1, 0.1]')
                   .replace(repr(0.1 - depth), repr(0.1 - (2.0 * 9.81 / 4e5) ** (2 / 3))))
    return ball, box


def before_ball(tmp: Path, ball: Path) -> tuple[Path | None, str]:
    """The ball FMU built by the engine at BEFORE (its tree from git, its extension compiled)."""
    old = tmp / "before"
    old.mkdir()
    try:
        archive = subprocess.run(["git", "-C", str(REPO), "archive", BEFORE], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(old)}
        subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=old,
                       env=env, check=True, capture_output=True)
        out = tmp / "ball_before.fmu"
        subprocess.run([sys.executable, "build_fmu.py", str(ball), "-o", str(out), "--integrator",
                        "implicit"], cwd=old, env=env, check=True, capture_output=True)
        return out, ""
    except (OSError, subprocess.CalledProcessError) as e:
        return None, f"the engine at {BEFORE} not built ({type(e).__name__}); no 'before' row"


def main() -> int:
    urdf = talos_urdf()
    with tempfile.TemporaryDirectory(prefix="bench_shapes_") as d:
        tmp = Path(d)
        fmus, notes = [], []
        if urdf is None:
            notes.append("talos: skipped (example-robot-data is not installed)")
        else:
            contact, free = talos_models(tmp, urdf)
            for label, path in (("talos, 52 geometries on the floor", contact),
                                ("talos, no contact", free)):
                fmus.append((f"{label} (implicit)",
                             build_fmu.build(path, tmp / f"{path.stem}.fmu", integrator="implicit",
                                             strict=False)))
        ball, box = one_pair_models(tmp)
        before, why = before_ball(tmp, ball)
        fmus.append(("ball on the floor, 1 pair (implicit)",
                     build_fmu.build(ball, tmp / "ball.fmu", integrator="implicit")))
        fmus.append(("box on the floor, 1 pair, 4 points (implicit)",
                     build_fmu.build(box, tmp / "box.fmu", integrator="implicit")))
        if before is not None:
            fmus.append((f"ball, the engine before shapes ({BEFORE}; implicit)", before))
        else:
            notes.append(why)
        bench_fmu.C_HOST_STEPS = STEPS
        rows, host_notes = bench_fmu.c_host(fmus, tmp)
    us = {r[0]: r[1] for r in rows}
    out, verdict = [], []
    if urdf is not None:
        r = us[fmus[0][0]] / us[fmus[1][0]]
        verdict.append(f"humanoid {r:.2f} (bar ≤ {BAR_HUMANOID}: {'met' if r <= BAR_HUMANOID else 'missed'})")
        out += [[fmus[0][0], us[fmus[0][0]], f"{r:.2f}", f"≤ {BAR_HUMANOID}"],
                [fmus[1][0], us[fmus[1][0]], "", ""]]
    ball_label, box_label = fmus[-3 if before else -2][0], fmus[-2 if before else -1][0]
    if before is not None:
        r = us[ball_label] / us[fmus[-1][0]]
        verdict.append(f"one pair {r:.2f} (bar ≤ {BAR_ONE_PAIR}: {'met' if r <= BAR_ONE_PAIR else 'missed'})")
        out += [[ball_label, us[ball_label], f"{r:.2f}", f"≤ {BAR_ONE_PAIR}"],
                [box_label, us[box_label], f"{us[box_label] / us[fmus[-1][0]]:.2f}", ""],
                [fmus[-1][0], us[fmus[-1][0]], "", ""]]
    else:
        out += [[ball_label, us[ball_label], "", ""], [box_label, us[box_label], "", ""]]
    text = table("Contact shapes: native FMU step in a C host (h = 1 ms, one step per doStep)",
                 ["case", "median µs", "ratio", "bar"], out,
                 notes + host_notes + ["; ".join(verdict)])
    write_result("shapes.txt", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
