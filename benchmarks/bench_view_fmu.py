"""What an FMU's visuals cost and give (docs/viewing.md, issue 33): the native FMU of each robot
built with its meshes (binary glTF in resources/model/visuals/, simplified above the budget) and
without (the model file alone, as before), and the page ``soa-view`` makes from the FMU alone
against the page made from the URDF and its original meshes (the reference).

Bars: the panda FMU ≤ 3 MB with its visuals; the page from the FMU ≥ 0.5 × the page from the URDF.

    python benchmarks/bench_view_fmu.py
"""
from __future__ import annotations

import sys
import tempfile
import warnings
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import build_fmu  # noqa: E402
import soa_fmu as sf  # noqa: E402
from soa_fmu.view.bundle import MAX_TRIANGLES  # noqa: E402
from timing import table, write_result  # noqa: E402
from view_fixtures import robot_file, scene_of, swing, write_fmpy_csv  # noqa: E402

ROBOTS = [("panda", "panda_description", "urdf/panda.urdf", False),
          ("talos_reduced", "talos_data", "robots/talos_reduced.urdf", True),
          ("solo12", "solo_description", "robots/solo12.urdf", True)]


def triangles(page: Path) -> int:
    import base64

    import numpy as np
    return sum(len(np.frombuffer(base64.b64decode(m["indices"]), np.uint32 if m["wide"] else np.uint16))
               // 3 for m in scene_of(page)["meshes"])


def main() -> int:
    tmp = Path(tempfile.mkdtemp(prefix="bench_view_fmu_"))
    rows, bars = [], []
    for name, folder, file, fb in ROBOTS:
        path = robot_file(folder, file)
        if path is None:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = sf.load_model(path, floating_base=fb)
            write_fmpy_csv(tmp / f"{name}.csv", swing(model, 2.0, amplitude=0.3))
            fmu = build_fmu.build(path, tmp / f"{name}.fmu", floating_base=fb)
            with mock.patch.object(build_fmu, "bundle_visuals", lambda p, files, top: files):
                bare = build_fmu.build(path, tmp / f"{name}_bare.fmu", floating_base=fb)
            ref = sf.animate(model, tmp / f"{name}.csv", tmp / f"{name}_urdf.html")
            page = sf.animate(fmu, tmp / f"{name}.csv", tmp / f"{name}_fmu.html")
        size, ratio = fmu.stat().st_size / 1e6, page.stat().st_size / ref.stat().st_size
        rows.append([name, f"{size:.2f}", f"{bare.stat().st_size / 1e6:.2f}",
                     f"{triangles(ref)}", f"{triangles(page)}", f"{ref.stat().st_size / 1e6:.2f}",
                     f"{page.stat().st_size / 1e6:.2f}", f"{ratio:.2f}"])
        bars.append(f"{name}: the page from the FMU alone is {ratio:.2f} of the page from the URDF "
                    f"(bar ≥ 0.5): {'PASS' if ratio >= 0.5 else 'FAIL'}")
        if name == "panda":
            bars.append(f"panda FMU with its visuals {size:.2f} MB (bar ≤ 3 MB): "
                        f"{'PASS' if size <= 3 else 'FAIL'}")
    text = table(f"An FMU's visuals: native FMUs with their meshes (binary glTF, simplified above "
                 f"{MAX_TRIANGLES} triangles a mesh) and without; soa-view pages from the FMU alone "
                 "and from the URDF (2 s result)",
                 ["robot", "FMU MB", "without visuals MB", "URDF triangles", "FMU triangles",
                  "page from URDF MB", "page from FMU MB", "ratio"], rows,
                 bars + ["triangles: all the meshes a page embeds (each mesh file once)."])
    write_result("view_fmu.txt", text)
    return 0 if all(b.endswith("PASS") for b in bars) else 1


if __name__ == "__main__":
    sys.exit(main())
