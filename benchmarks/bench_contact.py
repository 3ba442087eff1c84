"""Contact cost (docs/contact.md): the native FMU of solo12 standing on 4 foot contacts against the
same FMU without contact, stepped by the C host (benchmarks/fmu_step_host.c) at h = 1 ms — with
rk4 (the law explicit: the cost of the contact forces) and with implicit (the linearly implicit
Euler step, Λ⁻¹ of the feet from one inward pass over their legs and one smoother; auto's choice
for contact is ros2, two such stages).

    python benchmarks/bench_contact.py

Writes benchmarks/results/contact.txt.  Needs example-robot-data (else writes why it skipped).
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(HERE), str(REPO), str(REPO / "examples")]
from timing import table, write_result  # noqa: E402

import bench_fmu  # noqa: E402
import build_fmu  # noqa: E402
import quadruped_contact as qc  # noqa: E402

BAR = 1.5       # the step with 4 foot contacts ≤ 1.5 × the step without
STEPS = 3000    # after 1000 warm-up steps: 4 s (the robot without contact falls, flailing under the
                # host's excitation torques, and its light legs spin up until a step fails near 5 s)


def models(tmp: Path, urdf: Path) -> tuple[Path, Path]:
    """solo12 standing on its feet (initial state in the file), with and without contact."""
    import soa_fmu as sf
    with_contact = qc.write_model(tmp, urdf)
    model = sf.load_model(with_contact)
    q = model.neutral_configuration()
    q[6], q[7:] = qc.start_height(model, 0.0) - 1.5e-3, qc.Q_REF      # at the static depth
    initial = f"\n[initial]\nq = [{', '.join(repr(float(x)) for x in q)}]\n"
    text = with_contact.read_text()
    with_contact.write_text(text + initial)
    without = tmp / "solo12_free.toml"
    without.write_text(text[:text.index("[contact]")] + initial)
    return with_contact, without


def main() -> int:
    urdf = qc.solo12_urdf()
    if urdf is None:
        write_result("contact.txt", "Contact: skipped (example-robot-data is not installed)\n")
        return 0
    with tempfile.TemporaryDirectory(prefix="bench_contact_") as d:
        tmp = Path(d)
        contact, free = models(tmp, urdf)
        fmus = []
        for integrator in ("rk4", "implicit"):
            for label, path in (("4 foot contacts", contact), ("no contact", free)):
                fmu = build_fmu.build(path, tmp / f"{path.stem}_{integrator}.fmu",
                                      integrator=integrator, strict=False)
                fmus.append((f"solo12 {integrator}, {label}", fmu))
        bench_fmu.C_HOST_STEPS = STEPS
        rows, notes = bench_fmu.c_host(fmus, tmp)
    out, ratios = [], []
    for i in range(0, len(rows), 2):
        ratio = rows[i][1] / rows[i + 1][1]
        ratios.append(ratio)
        out.append(rows[i][:2] + [rows[i][3], rows[i][-2], f"{ratio:.2f}", f"≤ {BAR}"])
        out.append(rows[i + 1][:2] + [rows[i + 1][3], rows[i + 1][-2], "", ""])
    text = table("Contact: native solo12 FMU step in a C host (h = 1 ms, one step per doStep)",
                 ["case", "median µs", "p99 µs", "allocations", "with / without", "bar"], out,
                 notes + [f"bar {'met' if max(ratios) <= BAR else 'missed'}: "
                          + ", ".join(f"{r:.2f}" for r in ratios)])
    write_result("contact.txt", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
