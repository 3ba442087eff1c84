"""Native peer benchmark (issue 24): our C core, Pinocchio's C++ and libmujoco in ONE process.

Writes one case file per model (our Model's tables of soa.h, the same model for Pinocchio with the
fixed links merged into their joints as its URDF parser does, and as MJCF for MuJoCo), builds
``benchmarks/native_peers.cpp`` with the core compiled from ``soa_fmu/core/*.c`` (the native FMU's
flags: ``-std=c99 -O3``; the C++ ``-std=c++17 -O3 -DNDEBUG``, Pinocchio header-only, no
``-march``), runs it — results checked equal, then the calls interleaved round by round — and writes
``benchmarks/results/native.txt``.  With valgrind on PATH, the instructions per call (callgrind)
of our FD and of the peers' are added: repeatable where the times on a loaded machine are not.

    python benchmarks/bench_native.py [--no-callgrind] [--rounds R]
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import table, write_result  # noqa: E402

import soa_fmu as sf  # noqa: E402
from soa_fmu import joints as J  # noqa: E402
from soa_fmu.fmu.native import CFLAGS  # noqa: E402
from soa_fmu.verify.builders import serial_chain  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CORE = REPO / "soa_fmu" / "core"
C_FLAGS = [f for f in CFLAGS if f in ("-std=c99", "-O3", "-O2")]      # the FMU's optimization
CXX_FLAGS = ["-std=c++17", "-O3", "-DNDEBUG"]
PIN_DEFINES = ["-DBOOST_MPL_LIMIT_LIST_SIZE=30", "-DBOOST_MPL_LIMIT_VECTOR_SIZE=30",   # its cmake's
               "-DBOOST_MPL_CFG_NO_PREPROCESSED_HEADERS", "-DBOOST_FUSION_INVOKE_MAX_ARITY=12"]
ROBOTS = {"panda": ("panda_description/urdf", "panda.urdf"),
          "ur10": ("ur_description/urdf", "ur10_robot.urdf")}


# ---------------------------------------------------------------- the models
def robot_file(folder: str, file: str) -> Path:
    """An example-robot-data URDF (installed under <site-packages>/cmeel.prefix/share)."""
    for entry in sys.path:
        p = Path(entry) / "cmeel.prefix/share/example-robot-data/robots" / folder / file
        if p.is_file():
            return p
    raise FileNotFoundError(f"example-robot-data {folder}/{file} is not installed (pip install "
                            "example-robot-data)")


def models() -> dict[str, sf.Model]:
    import warnings
    out = {"arm7": sf.load_model(REPO / "model_descriptions" / "examples" / "arm7.urdf")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, (folder, file) in ROBOTS.items():
            out[name] = sf.load_model(robot_file(folder, file))
    out["chain100"] = serial_chain(100, seed=1)
    return out


def _quat(R: np.ndarray) -> list[float]:
    import pinocchio as pin
    x, y, z, w = pin.Quaternion(np.asarray(R)).coeffs()
    return [w, x, y, z]


def _fmt(v) -> str:
    return " ".join(repr(float(x)) for x in np.ravel(v))


def write_case(name: str, model: sf.Model, folder: Path, nstates: int = 8) -> Path:
    """The case file native_peers.cpp reads (format in its header) and the MJCF beside it."""
    from soa_fmu.verify.pinocchio_bridge import to_pinocchio
    if any(b.joint.code not in (J.FIXED, J.REVOLUTE, J.PRISMATIC) for b in model.bodies):
        raise ValueError(f"{name}: the native benchmark takes revolute / prismatic / fixed joints")
    pmap = to_pinocchio(model)
    pm = pmap.pin_model
    axis = {jid: (model.bodies[k].joint.code, model.bodies[k].joint.axis_vector())
            for k, jid in pmap.joints}
    lines = [f"case {name}", f"sizes {model.nbodies} {model.nq} {model.nv} {len(model.constraints)} "
             f"{model.max_modes}"]
    for n, a in model.core.views().items():
        kind = "int" if a.dtype.kind == "i" else "real"
        lines.append(f"{kind} {n} {a.size} " + (" ".join(str(int(x)) for x in np.ravel(a))
                                               if kind == "int" else _fmt(a)))
    lines.append(f"pin {pm.njoints - 1}")
    for j in range(1, pm.njoints):
        code, ax = axis[j]
        M, I = pm.jointPlacements[j], pm.inertias[j]
        Ic = I.inertia
        lines.append(f"joint {pm.parents[j]} {1 if code == J.REVOLUTE else 2} {_fmt(ax)} "
                     f"{_fmt(M.rotation)} {_fmt(M.translation)} {I.mass!r} {_fmt(I.lever)} "
                     f"{_fmt([Ic[0, 0], Ic[0, 1], Ic[1, 1], Ic[0, 2], Ic[1, 2], Ic[2, 2]])}")
    lines.append(f"gravity {_fmt(model.gravity)}")
    perm = np.empty(model.nv, dtype=int)
    perm[pmap._v_perm()] = np.arange(model.nv)        # our dof i -> pin / MuJoCo dof perm[i]
    lines.append(f"perm {model.nv} " + " ".join(map(str, perm)))
    xml = folder / f"{name}.xml"
    xml.write_text(mjcf(pm, axis, model.gravity))
    lines.append(f"mjcf {xml}")
    rng = np.random.default_rng(7)
    lines.append(f"states {nstates}")
    for _ in range(nstates):
        q = rng.uniform(-np.pi, np.pi, model.nq)
        lines.append(" ".join([_fmt(q), _fmt(rng.normal(size=model.nv)),
                               _fmt(rng.normal(size=model.nv))]))
    path = folder / f"{name}.case"
    path.write_text("\n".join(lines) + "\n")
    return path


def mjcf(pm, axis: dict, gravity) -> str:
    """MuJoCo's twin of the Pinocchio model: one body per joint, the same placements and inertias
    (about the centre of mass: fullinertia), no geoms, nothing passive."""
    children: dict[int, list[int]] = {}
    for j in range(1, pm.njoints):
        children.setdefault(pm.parents[j], []).append(j)

    def body(j: int, depth: int) -> list[str]:
        pad = "  " * depth
        M, I = pm.jointPlacements[j], pm.inertias[j]
        Ic = I.inertia
        code, ax = axis[j]
        full = [Ic[0, 0], Ic[1, 1], Ic[2, 2], Ic[0, 1], Ic[0, 2], Ic[1, 2]]
        out = [f'{pad}<body name="b{j}" pos="{_fmt(M.translation)}" quat="{_fmt(_quat(M.rotation))}">',
               f'{pad}  <inertial pos="{_fmt(I.lever)}" mass="{I.mass!r}" fullinertia="{_fmt(full)}"/>',
               f'{pad}  <joint name="j{j}" type="{"hinge" if code == J.REVOLUTE else "slide"}" '
               f'axis="{_fmt(ax)}" limited="false"/>']
        for c in children.get(j, []):
            out += body(c, depth + 1)
        return out + [f"{pad}</body>"]

    lines = ['<mujoco model="peer">', '  <compiler angle="radian"/>',
             f'  <option gravity="{_fmt(gravity)}" timestep="0.001"/>', "  <worldbody>"]
    for j in children.get(0, []):
        lines += body(j, 2)
    return "\n".join(lines + ["  </worldbody>", "</mujoco>"]) + "\n"


# ---------------------------------------------------------------- the program
def _site(sub: str) -> Path:
    return Path(sysconfig.get_paths()["purelib"]) / sub


def build(folder: Path) -> Path:
    """native_peers linked against the core (compiled here), Pinocchio's headers, libmujoco."""
    import mujoco
    cc, cxx = os.environ.get("CC", "gcc"), os.environ.get("CXX", "g++")
    mj = Path(mujoco.__file__).parent
    libs = sorted(mj.glob("libmujoco.so*")) or sorted(mj.glob("libmujoco*.dylib"))
    if not libs:
        raise FileNotFoundError(f"no libmujoco in {mj}")
    cmeel = _site("cmeel.prefix")
    objs = []
    for c in sorted(CORE.glob("*.c")):
        o = folder / (c.stem + ".o")
        subprocess.run([cc, *C_FLAGS, "-c", str(c), "-o", str(o)], check=True)
        objs.append(str(o))
    exe, peers = folder / "native_peers", folder / "native_peers.o"
    cpp = HERE / "native_peers.cpp"
    if not peers.is_file() or peers.stat().st_mtime < max(cpp.stat().st_mtime,
                                                         (CORE / "soa.h").stat().st_mtime):
        subprocess.run([cxx, *CXX_FLAGS, *PIN_DEFINES, f"-I{CORE}", f"-I{cmeel / 'include'}",
                        f"-I{cmeel / 'include' / 'eigen3'}", f"-I{mj / 'include'}", "-c",
                        str(cpp), "-o", str(peers)], check=True)   # (minutes: Pinocchio)
    subprocess.run([cxx, str(peers), *objs, str(libs[0]), f"-Wl,-rpath,{mj}", "-lm", "-o",
                    str(exe)], check=True)
    return exe


def run(exe: Path, cases: list[Path], rounds: int) -> tuple[dict, dict]:
    r = subprocess.run([str(exe), *map(str, cases), "--rounds", str(rounds)], capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise RuntimeError(f"native_peers failed:\n{r.stdout}\n{r.stderr}")
    checks, times = {}, {}
    for line in r.stdout.splitlines():
        w = line.split()
        if w[0] == "check":
            checks[(w[1], w[2])] = float(w[3])
        elif w[0] == "time":
            times[(w[1], w[2])] = np.array([float(x) for x in w[3:]])
    return checks, times


def instructions(exe: Path, case: Path, fn: str, iters: int = 200) -> float | None:
    """Instructions per call of fn (callgrind: a run of iters calls minus a run of none)."""
    if shutil.which("valgrind") is None:
        return None
    total = []
    with tempfile.TemporaryDirectory() as d:
        for n in (0, iters):
            out = Path(d, f"cg.{n}")
            subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                            str(exe), str(case), "--only", fn, "--iters", str(n)],
                           check=True, capture_output=True)
            line = next(ln for ln in out.read_text().splitlines() if ln.startswith("totals:"))
            total.append(int(line.split()[1]))
    return (total[1] - total[0]) / iters


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=31)
    ap.add_argument("--no-callgrind", action="store_true")
    ap.add_argument("--keep", default=str(REPO / "build" / "native_peers"),
                    help="build folder, kept: Pinocchio's part is compiled once (minutes) "
                    "(default: build/native_peers)")
    args = ap.parse_args()
    import mujoco
    import pinocchio as pin
    with tempfile.TemporaryDirectory(prefix="soa_native_") as tmp:
        folder = Path(args.keep or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        ms = models()
        cases = {n: write_case(n, m, folder) for n, m in ms.items()}
        exe = build(folder)
        checks, times = run(exe, list(cases.values()), args.rounds)
        icount = {}
        if not args.no_callgrind:
            for n in ("arm7", "panda", "ur10"):
                for fn in ("ours_fd", "pin_aba", "mj_smooth", "ours_m", "pin_crba", "ours_id",
                           "pin_rnea"):
                    icount[(n, fn)] = instructions(exe, cases[n], fn)

    def med(n: str, fn: str) -> float:
        return float(np.median(times[(n, fn)]))

    def ratio(n: str, a: str, b: str) -> float:       # median of the per-round ratios
        return float(np.median(times[(n, a)] / times[(n, b)]))

    fd_rows, other_rows, ins_rows = [], [], []
    for n, m in ms.items():
        size = f"{m.nv} / {m.nbodies}"
        fd_rows.append([n, size, med(n, "ours_fd"), med(n, "mj_smooth"), med(n, "mj_forward"),
                        med(n, "pin_aba"), ratio(n, "ours_fd", "mj_smooth"),
                        ratio(n, "ours_fd", "mj_forward"), ratio(n, "ours_fd", "pin_aba")])
        other_rows.append([n, size, med(n, "ours_id"), med(n, "pin_rnea"),
                           ratio(n, "ours_id", "pin_rnea"), med(n, "ours_m"), med(n, "pin_crba"),
                           ratio(n, "ours_m", "pin_crba")])
        if (n, "ours_fd") in icount and icount[(n, "ours_fd")] is not None:
            ic = {fn: icount[(n, fn)] for fn in ("ours_fd", "pin_aba", "mj_smooth", "ours_m",
                                                  "pin_crba", "ours_id", "pin_rnea")}
            ins_rows.append([n, f"{ic['ours_fd']:.0f}", f"{ic['mj_smooth']:.0f}",
                             f"{ic['pin_aba']:.0f}", ic["ours_fd"] / ic["mj_smooth"],
                             ic["ours_fd"] / ic["pin_aba"], f"{ic['ours_id']:.0f}",
                             f"{ic['pin_rnea']:.0f}", ic["ours_id"] / ic["pin_rnea"],
                             f"{ic['ours_m']:.0f}", f"{ic['pin_crba']:.0f}",
                             ic["ours_m"] / ic["pin_crba"]])
    worst = max(checks.values())
    notes = [f"one process, calls interleaved: {args.rounds} rounds, each one batch (~2 ms) of every "
             "function in turn; medians of the per-call CPU time of the rounds (µs) and of the "
             "per-round ratios.",
             f"checked before timing on 8 random states: FD vs Pinocchio aba and MuJoCo qacc, ID vs "
             f"rnea, M vs crba (upper triangle); worst relative difference {worst:.1e}.",
             "MuJoCo smooth = mj_fwdPosition + mj_fwdVelocity + mj_fwdActuation + "
             "mj_fwdAcceleration, contacts / constraints / passive forces disabled, no geoms; "
             "qfrc_applied = tau.",
             f"build: core {' '.join(C_FLAGS)} (the native FMU's optimization flags); "
             f"C++ {' '.join(CXX_FLAGS)} with Pinocchio {pin.__version__} header-only "
             f"(RX/RY/RZ joints where the axis is a coordinate axis, as its URDF parser makes "
             f"them); MuJoCo {mujoco.__version__} (the wheel's libmujoco).",
             "bodies: ours as the model numbers them (fixed links included; soa_model_finish folds "
             "them into their parents' rigid bodies and the sweeps visit the moving bodies only); "
             "Pinocchio and MuJoCo have one body per moving joint (fixed links merged)."]
    text = table("Native forward dynamics: ours vs MuJoCo (smooth dynamics) and Pinocchio (µs per "
                 "call, one process)",
                 ["model", "nv / bodies", "ours FD", "MuJoCo smooth", "mj_forward", "pin aba",
                  "ours/smooth", "ours/mj_forward", "ours/aba"], fd_rows,
                 ["bars (issue 24): ours/smooth ≤ 0.9, ours/aba ≤ 0.5 on arm7, panda, ur10"])
    text += "\n" + table("Native inverse dynamics and mass matrix (µs per call)",
                         ["model", "nv / bodies", "ours ID", "pin rnea", "ID ratio", "ours M",
                          "pin crba", "M ratio"], other_rows,
                         ["bars: ID ratio ≤ 0.7, M ratio ≤ 1.0"])
    if ins_rows:
        text += "\n" + table("Instructions per call (callgrind)",
                             ["model", "ours FD", "MuJoCo smooth", "pin aba", "FD/smooth",
                              "FD/aba", "ours ID", "rnea", "ID/rnea", "ours M", "crba", "M/crba"],
                             ins_rows)
    text += "\n".join(notes) + "\n"
    write_result("native.txt", text)


if __name__ == "__main__":
    main()
