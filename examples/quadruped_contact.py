"""A quadruped on the floor: solo12 (example-robot-data) as a native FMU run by fmpy.

1. writes out/solo12_contact.toml: the solo12 URDF included as a floating base, a contact sphere
   (radius 17.5 mm) on each foot and the floor plane (docs/contact.md);
2. builds out/Solo12.fmu from it (the default integrator ``auto`` runs ``rk4w`` for a model
   with contact: joints and contact forces linearly implicit, h = 1 ms);
3. drops it from 10 cm with a PD posture controller closed through fmi2GetReal / fmi2SetReal
   (τ = Kp (q_ref − q) − Kd q̇ on the twelve joints) and lets it stand;
4. plots the feet's normal forces and the base height: out/quadruped_contact.png.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

OUT = ROOT / "out"
LEGS = ("FL", "FR", "HL", "HR")
Q_REF = np.array([0, 0.8, -1.6, 0, 0.8, -1.6, 0, -0.8, 1.6, 0, -0.8, 1.6])   # standing posture
KP, KD = 10.0, 0.1          # N·m/rad, N·m·s/rad (a stiffer Kd rings at the 1 ms sample rate)
H = 1e-3


def solo12_urdf() -> Path | None:
    """solo12.urdf of the installed example-robot-data (None: not installed)."""
    for entry in sys.path:
        p = Path(entry) / "cmeel.prefix/share/example-robot-data/robots/solo_description/robots/solo12.urdf"
        if p.is_file():
            return p
    return None


def write_model(folder: Path, urdf: Path) -> Path:
    """The native model file: the URDF as a floating base, foot spheres, the floor."""
    spheres = "".join(f'\n[[contact.spheres]]\nname = "{leg}_foot"\nbody = "{leg}_FOOT"\n'
                      f'radius = 0.0175\n' for leg in LEGS)
    text = (f'name = "solo12"\nurdf = "{urdf.as_posix()}"\nfloating_base = true\nstrict = false\n\n'
            '[contact]            # the defaults: k = 1e5 N/m^1.5, n = 1.5, d = 1 s/m, mu = 0.8\n'
            f'{spheres}\n[[contact.planes]]\nname = "floor"\n')
    path = folder / "solo12_contact.toml"
    path.write_text(text)
    return path


def start_height(model, gap: float) -> float:
    """Base height (q[7]) with the feet ``gap`` above the floor in the posture Q_REF."""
    import soa_fmu as sf
    q = model.neutral_configuration()
    q[7:] = Q_REF
    return gap + sf.contact_forces(model, q, np.zeros(model.nv)).depth.max()


def run(fmu_path: Path, z0: float, t_end: float) -> dict:
    """The FMU under the PD posture controller from base height z0 at rest: per step the time,
    base height, each foot's normal force and penetration."""
    from fmpy import extract, read_model_description
    from fmpy.fmi2 import FMU2Slave
    md = read_model_description(str(fmu_path))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    tau = [vr[f"tau[{i}]"] for i in range(7, 19)]
    state = [vr[f"q[{i}]"] for i in range(8, 20)] + [vr[f"qd[{i}]"] for i in range(7, 19)]
    outs = [vr["q[7]"]] + [vr[f"{leg}_foot.force[3]"] for leg in LEGS] + [
        vr[f"{leg}_foot.depth"] for leg in LEGS]
    unzip = extract(str(fmu_path))
    fmu = FMU2Slave(guid=md.guid, unzipDirectory=unzip,
                    modelIdentifier=md.coSimulation.modelIdentifier, instanceName="solo12")
    fmu.instantiate()
    fmu.setupExperiment(startTime=0.0)
    fmu.setReal([vr["q0[7]"]] + [vr[f"q0[{i}]"] for i in range(8, 20)], [z0, *Q_REF])
    fmu.enterInitializationMode()
    fmu.exitInitializationMode()
    n = int(round(t_end / H))
    rec = np.empty((n + 1, 1 + len(outs)))
    try:
        for i in range(n + 1):
            rec[i] = [i * H, *fmu.getReal(outs)]
            if i == n:
                break
            x = np.array(fmu.getReal(state))
            fmu.setReal(tau, list(KP * (Q_REF - x[:12]) - KD * x[12:]))
            fmu.doStep(i * H, H)                       # raises on a discarded step
    finally:
        fmu.terminate()
        fmu.freeInstance()
        shutil.rmtree(unzip, ignore_errors=True)
    return {"t": rec[:, 0], "z": rec[:, 1], "force": rec[:, 2:6], "depth": rec[:, 6:10]}


def main() -> int:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import build_fmu
    from soa_fmu.io import load_model
    urdf = solo12_urdf()
    if urdf is None:
        print("example-robot-data is not installed (pip install example-robot-data)")
        return 1
    OUT.mkdir(exist_ok=True)
    path = write_model(OUT, urdf)
    model = load_model(path)
    fmu = build_fmu.build(path, OUT / "Solo12.fmu", name="Solo12", strict=False)
    res = run(fmu, start_height(model, 0.10), 3.0)
    weight = model.total_mass * 9.81
    total = res["force"].sum(axis=1)
    print(f"solo12 ({model.total_mass:.3f} kg) dropped from 10 cm: after 3 s the feet carry "
          f"{total[-1]:.4f} N (weight {weight:.4f} N), deepest penetration "
          f"{res['depth'][-1].max() * 1e3:.3f} mm, base at {res['z'][-1]:.4f} m")
    fig, ax = plt.subplots(2, 1, figsize=(9, 7), sharex=True)
    for k, leg in enumerate(LEGS):
        ax[0].plot(res["t"], res["force"][:, k], label=leg, lw=0.8)
    ax[0].plot(res["t"], total, "k", lw=1.2, label="total")
    ax[0].axhline(weight, color="gray", ls="--", lw=0.8, label="weight")
    ax[0].set(ylabel="normal force [N]", ylim=(-1, 3 * weight),
              title="solo12 FMU (fmpy, h = 1 ms, rk4w): feet normal forces")
    ax[0].legend(ncol=6, fontsize=8)
    ax[1].plot(res["t"], res["z"])
    ax[1].set(xlabel="t [s]", ylabel="base height [m]")
    fig.tight_layout()
    fig.savefig(OUT / "quadruped_contact.png", dpi=110)
    print(f"wrote {OUT / 'quadruped_contact.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
