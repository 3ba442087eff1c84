"""The 7-dof arm under its own computed-torque controller, as one SSP system run by fmpy.

1. builds out/System.ssp (build_ssp.py, also ``soa-build-ssp``): the arm as the FMU ``plant``,
   its computed-torque controller (``soa-build-fmu --controller``) as ``controller``, wired
   q, qd -> controller -> tau, with a parameter set per component (physical parameters, gains,
   a quintic move of 0.5 rad on every joint from t = 0.5 s to 2.5 s); no Python in the loop;
2. runs it with fmpy's SSP simulation (fmpy.ssp.simulation.simulate_ssp) for 4 s at 1 ms,
   passing it the archive's parameter sets (fmpy applies none by itself);
3. writes out/system_ssp.png (joints against the reference, tracking error) and the animation
   out/system_ssp.html.  The same archive runs in OMSimulator and libcosim (docs/systems.md).
"""
from __future__ import annotations

import sys
import time
import zipfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from fmpy.ssp.simulation import simulate_ssp  # noqa: E402
from lxml import etree  # noqa: E402

import build_ssp  # noqa: E402
import soa_fmu as sf  # noqa: E402
from model_descriptions import EXAMPLES_DIR  # noqa: E402

OUT = ROOT / "out"
H = 1e-3


def parameter_set(ssp: Path) -> SimpleNamespace:
    """Both components' parameter sets as fmpy's simulate_ssp takes them: names prefixed with the
    component, values typed (fmpy's own read_ssv leaves them as strings)."""
    values = []
    with zipfile.ZipFile(ssp) as z:
        for comp in ("plant", "controller"):
            root = etree.fromstring(z.read(f"resources/{comp}.ssv"))
            for p in root.iterfind("{*}Parameters/{*}Parameter"):
                kind, value = etree.QName(p[0]).localname, p[0].get("value")
                values.append(SimpleNamespace(name=f"{comp}.{p.get('name')}",
                                              value=value == "true" if kind == "Boolean"
                                              else float(value)))
    return SimpleNamespace(parameters=values)


def quintic(t, t0, T, q0, q1):
    s = np.clip((t - t0) / T, 0.0, 1.0)[:, None]
    return q0 + (q1 - q0) * (10 * s**3 - 15 * s**4 + 6 * s**5)


def main() -> int:
    t0 = time.perf_counter()
    OUT.mkdir(exist_ok=True)
    model = sf.load_model(EXAMPLES_DIR / "arm7.urdf")
    ssp = build_ssp.build(EXAMPLES_DIR / "arm7.urdf", OUT / "System.ssp", stop_time=4.0, step=H)
    params = parameter_set(ssp)
    r = simulate_ssp(str(ssp), stop_time=4.0 - 0.5 * H, step_size=H, parameter_set=params)
    n = model.nv
    t = r["time"] + H                              # (fmpy's rows: the state after the step)
    q = np.column_stack([r[f"plant.q[{i + 1}]"] for i in range(n)])
    tau = np.column_stack([r[f"controller.tau[{i + 1}]"] for i in range(n)])
    p = {x.name: x.value for x in params.parameters}
    q_from = np.array([p[f"controller.q_from[{i + 1}]"] for i in range(n)])
    q_to = np.array([p[f"controller.q_to[{i + 1}]"] for i in range(n)])
    ref = quintic(t, p["controller.move_start"], p["controller.move_duration"], q_from, q_to)
    err = np.abs(q - ref)

    fig, ax = plt.subplots(1, 3, figsize=(15, 4))
    for i in range(n):
        ax[0].plot(t, q[:, i], label=f"q{i + 1}")
        ax[0].plot(t, ref[:, i], "k:", lw=0.8)
        ax[1].plot(t, 1e3 * err[:, i])
        ax[2].plot(t, tau[:, i])
    ax[0].set(title="plant.q (dotted: the controller's quintic move)", xlabel="t [s]",
              ylabel="rad")
    ax[0].legend(fontsize=7)
    ax[1].set(title="tracking error |q - q_ref|", xlabel="t [s]", ylabel="mrad")
    ax[2].set(title="controller.tau",
              xlabel="t [s]", ylabel="N.m")
    fig.tight_layout()
    fig.savefig(OUT / "system_ssp.png", dpi=110)
    np.savez(OUT / "system_ssp.npz", t=np.concatenate([[0.0], t]),
             q=np.vstack([np.zeros(model.nq), q]))
    sf.animate(model, OUT / "system_ssp.npz", OUT / "system_ssp.html",
               title="arm7 under its computed-torque controller (SSP in fmpy)")
    print(f"wrote {ssp.relative_to(ROOT)}, out/system_ssp.png, out/system_ssp.html: max tracking "
          f"error {1e3 * err.max():.3f} mrad (joint {err.max(0).argmax() + 1}), at 4 s "
          f"{1e3 * err[-1].max():.3f} mrad ({time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
