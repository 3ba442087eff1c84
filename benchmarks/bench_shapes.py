"""Contact shapes' cost (docs/contact.md): native FMUs stepped by the C host
(benchmarks/fmu_step_host.c) at h = 1 ms, each ratio against a reference measured in the same run,
interleaved; and the broad phase's scaling on piles of boxes.

* talos (example-robot-data, talos_reduced.urdf): all 52 collision geometries of its links (47
  convex-mesh hulls, 4 cylinders, a box) on a floor, standing on its feet, against the same robot
  without contact — bar ≤ 2 (issue 31).  Its joints get a viscous damping of DAMPING N·m·s/rad
  (both FMUs; implicit in the step) in place of a controller, so that under the host's small
  excitation torques it still stands on its soles after the run instead of collapsing onto the
  floor (where some 23 points of its knees, hands and torso touch);
* one pair: a 2 kg ball (the bouncing_ball example) and a box of the same body resting on the
  floor, against the ball FMU built by the engine before contact shapes (commit BEFORE: main's
  last commit before the shapes landed, spheres only; its tree from git, its C sources compiled
  here by its own build, the same compiler and flags) — bar ≤ 1 for the ball ("no more than
  today's sphere contact"); and the same ball falling with the floor 5 m below (its one pair
  apart all the run: the step without the contact force and its implicit term).  Instructions
  per fmi2DoStep of these (callgrind, when valgrind is installed) in the notes.

Each of ROUNDS rounds extracts every FMU afresh (a library's placement in memory moves a step's
time by up to 15 % from one extraction to the next, the same for the whole process) and steps them
in turn, the order reversed every other round; a ratio is the median of the rounds' ratios, with
its quartiles.

* piles of N boxes (4 layers of columns on a floor, settled): the geometry pairs tested per step
  by the broad phase (box tests in the sweep, pairs passed on to the narrow phase) against the
  N(N − 1)/2 every pair costs without it (each tested against bounding spheres, those overlapping
  passed on), and the step of the C core (implicit Euler, h = 1 ms, PILE_STEPS steps a call) with
  and without it (the switch bp_info[SOA_BP_OFF]), interleaved medians.

    python benchmarks/bench_shapes.py

Writes benchmarks/results/shapes.txt.  Needs example-robot-data and git (else says what it skipped).
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(HERE), str(REPO)]
from timing import table, write_result  # noqa: E402

import bench_fmu  # noqa: E402
import build_fmu  # noqa: E402

BAR_HUMANOID = 2.0
BAR_ONE_PAIR = 1.0
BEFORE = "e57d23e"          # main before the contact shapes (spheres only): 73041dd's parent
STEPS = 3000
ROUNDS = 15
PILES = (16, 64, 256)
PILE_STEPS = 50
PILE_CALLS = 21
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


def rounds(fmus: list[tuple], tmp: Path) -> tuple[dict, list[str]]:
    """bench_fmu.c_host over ``fmus``, ROUNDS times, each round in a fresh folder (the FMUs
    extracted anew), the order reversed every other round: label -> list of medians (s)."""
    per: dict = {label: [] for label, *_ in fmus}
    notes: list[str] = []
    bench_fmu.C_HOST_STEPS = STEPS
    for r in range(ROUNDS):
        raw: dict = {}
        (tmp / f"round{r}").mkdir()
        _, notes = bench_fmu.c_host(fmus if r % 2 == 0 else fmus[::-1], tmp / f"round{r}", raw=raw)
        for label, t in raw.items():
            per[label].append(t)
    return per, notes


def step_instructions(fmu: Path, tmp: Path, steps: int = 500) -> float | None:
    """Instructions per fmi2DoStep of ``fmu`` in the C host under callgrind (the host's 1000
    warm-up steps counted too: steps + 1000 calls), or None without valgrind."""
    import shutil
    import zipfile
    from fmpy import read_model_description
    if shutil.which("valgrind") is None:
        return None
    unzip, exe, out = tmp / f"cg_{fmu.stem}", tmp / "cg_host", tmp / f"cg_{fmu.stem}.out"
    zipfile.ZipFile(fmu).extractall(unzip)
    if not exe.exists():
        subprocess.run(["gcc", "-O2", "-rdynamic", "-o", str(exe), str(HERE / "fmu_step_host.c"),
                        "-ldl", "-lm"], check=True, capture_output=True)
    md = read_model_description(str(fmu))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    nq = sum(1 for n in vr if n.startswith("q["))
    nv = sum(1 for n in vr if n.startswith("tau["))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_PRELOAD")}
    subprocess.run(["valgrind", "--tool=callgrind", "--toggle-collect=fmi2DoStep",
                    f"--callgrind-out-file={out}", str(exe), str(unzip),
                    md.coSimulation.modelIdentifier, md.guid, repr(bench_fmu.H), str(steps),
                    str(vr["tau[1]"]), str(nv), str(vr["q[1]"]), str(nq + 2 * nv)],
                   check=True, capture_output=True, env=env, timeout=1200)
    total = next(line for line in out.read_text().splitlines() if line.startswith("summary:"))
    return int(total.split()[1]) / (steps + 1000)


def ratio(per: dict, ours: str, ref: str) -> tuple[float, float, float]:
    """Median and quartiles of the rounds' ratios ours / ref."""
    import numpy as np
    r = np.array(per[ours]) / np.array(per[ref])
    return float(np.median(r)), float(np.quantile(r, 0.25)), float(np.quantile(r, 0.75))


def pile(n: int):
    """n boxes of 0.2 m in 4 layers of square-grid columns (0.25 m apart, each box turned by up
    to ±0.15 rad and shifted by up to 1 cm) on a floor, settled for 150 steps: (model, q, qd)."""
    import numpy as np
    from scipy.spatial.transform import Rotation
    import soa_fmu as sf
    side = int(round((n // 4) ** 0.5))
    m = sf.Model(f"pile{n}")
    for i in range(n):
        m.add_body(f"box{i}", joint=sf.Free(), mass=1.0, inertia=np.eye(3) * 0.0067)
        m.add_contact_geom(f"g{i}", f"box{i}", "box", half_extents=(0.1, 0.1, 0.1))
    m.add_contact_plane("floor")
    rng = np.random.default_rng(n)
    q = np.zeros(7 * n)
    for i in range(n):
        layer, k = divmod(i, side * side)
        x, y, z, w = Rotation.from_euler("z", rng.uniform(-0.15, 0.15)).as_quat()
        q[7 * i:7 * i + 7] = [w, x, y, z, 0.25 * (k % side) + rng.uniform(-0.01, 0.01),
                              0.25 * (k // side) + rng.uniform(-0.01, 0.01), 0.1 + 0.205 * layer]
    sim = sf.Simulator(m, q, np.zeros(6 * n), method="implicit", max_step=1e-3)
    for _ in range(150):
        sim.step(1e-3)
    return m, sim.q.copy(), sim.qd.copy()


def pile_rows() -> tuple[list[list], list[str]]:
    """Per pile: pairs, pairs tested per step (sweep box tests, narrow phase) with the broad phase
    and without (bounding-sphere tests, narrow phase), and the step with and without it."""
    import numpy as np
    import soa_fmu as sf
    from soa_fmu import _core
    from soa_fmu.contact import BP_NEAR, BP_OFF, BP_TESTED
    rows, notes = [], []
    for n in PILES:
        m, q0, qd0 = pile(n)
        w, npairs = m.workspace(), len(sf.contact.geom_pairs(m))
        tau = np.zeros(m.nv)

        def run(off: bool) -> float:
            w.bp_info[BP_OFF] = int(off)
            q, qd = q0.copy(), qd0.copy()
            t = time.process_time()                   # (this process's CPU time: the
            _core.implicit(m.data, q, qd, tau, False, 1e-3, PILE_STEPS)   # machine is shared)
            return (time.process_time() - t) / PILE_STEPS

        on, off, tested, near, spheres = [], [], [], [], []
        for r in range(PILE_CALLS):
            for flag in ((False, True) if r % 2 == 0 else (True, False)):
                (off if flag else on).append(run(flag))
                if not flag:
                    tested.append(int(w.bp_info[BP_TESTED]))
                    near.append(int(w.bp_info[BP_NEAR]))
        x = w.sp_x.copy()                                  # (the last state: bounding spheres)
        bound = m.arrays().sp_bound
        for a, b in sf.contact.geom_pairs(m):
            spheres.append(np.linalg.norm(x[a] - x[b]) <= bound[a] + bound[b])
        t_on, t_off = float(np.median(on)) * 1e6, float(np.median(off)) * 1e6
        rows.append([f"pile of {n} boxes, {npairs} pairs", f"{np.median(tested):.0f} / {np.median(near):.0f}",
                     f"{npairs} / {sum(spheres)}", t_on, t_off, f"{t_on / t_off:.2f}"])
    notes.append(f"piles: the C core's implicit Euler step (h = 1 ms, {PILE_STEPS} steps a call from "
                 f"the settled pile, {PILE_CALLS} interleaved calls each way, medians of the "
                 "process's CPU time); pairs tested: the "
                 "sweep's box tests / the pairs passed to the narrow phase, and without the broad "
                 "phase every pair's bounding-sphere test / those overlapping (passed on).")
    return rows, notes


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
        ball_label, box_label = ("ball on the floor, 1 pair (implicit)",
                                 "box on the floor, 1 pair, 4 points (implicit)")
        free_label = "the ball falling, the floor 5 m below (implicit)"
        fmus.append((ball_label, build_fmu.build(ball, tmp / "ball.fmu", integrator="implicit")))
        fmus.append((box_label, build_fmu.build(box, tmp / "box.fmu", integrator="implicit")))
        free = tmp / "ball_free.toml"                  # (the floor 5 m below: never touched)
        free.write_text(ball.read_text().replace("point = [0, 0, 0]", "point = [0, 0, -5]"))
        fmus.append((free_label, build_fmu.build(free, tmp / "ball_free.fmu", integrator="implicit")))
        before_label = f"ball, the engine before shapes ({BEFORE}; implicit)"
        if before is not None:
            fmus.append((before_label, before))
        else:
            notes.append(why)
        per, host_notes = rounds(fmus, tmp)
        ir = {label: step_instructions(path, tmp) for label, path in fmus
              if label in (ball_label, before_label, free_label)}
    us = {label: statistics.median(t) * 1e6 for label, t in per.items()}
    out, verdict = [], []

    def row(ours: str, ref: str, bar: str = "") -> list:
        r, lo, hi = ratio(per, ours, ref)
        return [ours, us[ours], f"{r:.3f} ({lo:.3f} – {hi:.3f})", bar]

    if urdf is not None:
        talos, free = fmus[0][0], fmus[1][0]
        r = ratio(per, talos, free)[0]
        verdict.append(f"humanoid {r:.3f} (bar ≤ {BAR_HUMANOID}: {'met' if r <= BAR_HUMANOID else 'missed'})")
        out += [row(talos, free, f"≤ {BAR_HUMANOID}"), [free, us[free], "", ""]]
    if before is not None:
        r = ratio(per, ball_label, before_label)[0]
        verdict.append(f"one pair {r:.3f} (bar ≤ {BAR_ONE_PAIR}: {'met' if r <= BAR_ONE_PAIR else 'missed'})")
        out += [row(ball_label, before_label, f"≤ {BAR_ONE_PAIR}"), row(box_label, before_label),
                row(free_label, before_label), [before_label, us[before_label], "", ""]]
        if ir.get(ball_label) and ir.get(before_label):
            notes.append(f"instructions per fmi2DoStep (callgrind): the ball {ir[ball_label]:.0f}, "
                         f"the engine before shapes {ir[before_label]:.0f}, "
                         f"{ir[ball_label] / ir[before_label]:.3f}; the ball falling free "
                         f"{ir[free_label]:.0f} (its contact's cost: "
                         f"{ir[ball_label] - ir[free_label]:.0f} a step).")
    else:
        out += [[ball_label, us[ball_label], "", ""], [box_label, us[box_label], "", ""]]
    text = table(f"Contact shapes: native FMU step in a C host (h = 1 ms, one step per doStep; "
                 f"{ROUNDS} interleaved rounds)",
                 ["case", "median µs", "ratio (quartiles)", "bar"], out,
                 notes + host_notes[-len(fmus):] + ["; ".join(verdict)])
    rows, pile_notes = pile_rows()
    text += "\n" + table("Broad phase: geometry pairs tested per step on piles of boxes, and the step",
                         ["case", "tested: sweep / narrow", "without: all / narrow",
                          "step µs", "without µs", "ratio"], rows, pile_notes)
    write_result("shapes.txt", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
