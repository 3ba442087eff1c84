"""The closed-chain examples as FMUs: four-bar, slider-crank and two arms carrying a box.

    python examples/closed_chains_fmu.py        # writes out/closed_chains_fmu.png

Each model file is built with build_fmu.py and run by fmpy's FMU2Slave the way a co-simulation
master runs it (h = 1 ms, Baumgarte gains set as parameters).  The slider-crank's crank is driven by
a motor (1 N·m at rest, idle at 20 rad/s); the two arms hold their joints with gravity-compensating torques, release the box
at t = 1 s and grasp it again at t = 1.1 s through the ``<constraint>.active`` inputs.  The plot shows
every constraint's force and position residual as read from the FMU's outputs.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "out"

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from fmpy import extract, read_model_description  # noqa: E402
from fmpy.fmi2 import FMU2Slave  # noqa: E402

import build_fmu  # noqa: E402
import soa_fmu as sf  # noqa: E402
from model_descriptions import EXAMPLES_DIR  # noqa: E402

H = 1e-3
RELEASE, GRASP = 1.0, 1.1


def run(name: str, t_end: float) -> dict:
    """Simulate one example FMU; returns time series of every constraint's |f| and residual."""
    model = sf.load_model(EXAMPLES_DIR / f"{name}.toml")
    fmu_path = build_fmu.build(EXAMPLES_DIR / f"{name}.toml", OUT / f"{name}.fmu")
    md = read_model_description(str(fmu_path))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    closures = [v[:-len(".err")] for v in vr if v.endswith(".err")]
    force_vr = {c: [vr[v] for v in vr if v.startswith(c + ".f[")] for c in closures}
    n = model.nv
    tau_vr = [vr[f"tau[{i}]"] for i in range(1, n + 1)]
    q_vr = [vr[f"q[{i}]"] for i in range(1, model.nq + 1)]
    qd_vr = [vr[f"qd[{i}]"] for i in range(1, n + 1)]

    unzip = extract(str(fmu_path))
    fmu = FMU2Slave(guid=md.guid, unzipDirectory=unzip,
                    modelIdentifier=md.coSimulation.modelIdentifier, instanceName=name)
    fmu.instantiate()
    fmu.setupExperiment(startTime=0.0)
    fmu.setReal([vr["stabilization[1]"], vr["stabilization[2]"]], [20.0, 20.0])
    fmu.enterInitializationMode()
    fmu.exitInitializationMode()

    arm_dofs = [i for i, v in enumerate(model.velocity_names) if not v.startswith("box")]
    t, rows, qs = 0.0, [], []
    for k in range(int(round(t_end / H))):
        tau = np.zeros(n)
        if name == "slider_crank":           # a motor: 1 N·m at rest, idle at 20 rad/s
            tau[0] = 1.0 - 0.05 * fmu.getReal(qd_vr[:1])[0]
        elif name == "two_arms_box":
            q = np.array(fmu.getReal(q_vr))
            tau[arm_dofs] = sf.gravity_forces(model, q)[arm_dofs]      # hold the arms up
            if k in (round(RELEASE / H), round(GRASP / H)):        # release, then grasp again
                fmu.setBoolean([vr[f"{c}.active"] for c in closures],
                               [k == round(GRASP / H)] * len(closures))
        fmu.setReal(tau_vr, list(tau))
        fmu.doStep(t, H)
        t += H
        row = [t]
        for c in closures:
            row += [np.linalg.norm(fmu.getReal(force_vr[c])), fmu.getReal([vr[c + ".err"]])[0]]
        rows.append(row)
        qs.append(fmu.getReal(q_vr))
    fmu.terminate()
    fmu.freeInstance()
    shutil.rmtree(unzip, ignore_errors=True)
    data = np.array(rows)
    return {"t": data[:, 0], "closures": closures, "model": model, "q": np.array(qs),
            "force": data[:, 1::2], "residual": data[:, 2::2]}


def main() -> int:
    OUT.mkdir(exist_ok=True)
    cases = [("four_bar", 3.0), ("slider_crank", 2.0), ("two_arms_box", 2.0)]
    fig, ax = plt.subplots(2, len(cases), figsize=(15, 7), sharex="col")
    for j, (name, t_end) in enumerate(cases):
        r = run(name, t_end)
        sf.animate(r["model"], r, OUT / f"{name}_fmu.html")       # the FMU's q outputs, animated
        for c, closure in enumerate(r["closures"]):
            ax[0, j].plot(r["t"], r["force"][:, c], label=closure)
            ax[1, j].semilogy(r["t"], np.maximum(r["residual"][:, c], 1e-18), label=closure)
        if name == "two_arms_box":
            for a in ax[:, j]:
                a.axvspan(RELEASE, GRASP, color="0.9")
        ax[0, j].set_title(f"{name} (FMU via fmpy)")
        ax[0, j].set_ylabel("|constraint force| [N, N·m]")
        ax[1, j].set_ylabel("position residual")
        ax[1, j].set_xlabel("t [s]")
        ax[0, j].legend(fontsize=8)
        print(f"{name}: max residual {r['residual'].max():.2e}, "
              f"max |f| {r['force'].max():.3g} over {t_end} s")
    fig.tight_layout()
    fig.savefig(OUT / "closed_chains_fmu.png", dpi=100)
    print(f"wrote {OUT / 'closed_chains_fmu.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
