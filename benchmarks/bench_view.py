"""The viewer's quality bars (docs/viewing.md): converting a result to the HTML page, and opening the
page in headless Chromium (software WebGL) until it plays.

* conversion: ``soa-view MODEL RESULT.csv -o OUT.html`` in a fresh process (imports, model, CSV,
  forward kinematics, meshes, page), wall time, with an empty mesh cache and (median of 3) with
  the meshes cached; the 7-dof arm's 10 s at 1 ms
  (10⁴ rows, fmpy's write_csv) against the bar ≤ 5 s; the reference is pandas reading the same CSV
  in the same process (the floor of any CSV-reading tool);
* in the browser: from ``goto(file://…)`` until the animation clock runs, the page's size less its
  embedded meshes (bar ≤ 1 MB), the requests that left the file (bar 0), for an arm with DAE meshes
  (panda) and a quadruped sharing STL meshes (solo12), each from a 10 s fmpy CSV.

    python benchmarks/bench_view.py
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import soa_fmu as sf  # noqa: E402
from timing import table, write_result  # noqa: E402
from view_fixtures import mesh_bytes, robot_file, scene_of, swing, write_fmpy_csv  # noqa: E402

T_END, DT = 10.0, 1e-3


def convert(model_file: Path, csv: Path, out: Path, extra=()) -> tuple[float, float]:
    """Wall time of soa-view in a fresh process: with an empty mesh cache, and the median of 3
    with the meshes cached."""
    env = {**os.environ, "SOA_FMU_CACHE": tempfile.mkdtemp(prefix="bench_view_cache_")}
    runs = []
    for _ in range(4):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "soa_fmu.view.cli", str(model_file), str(csv), "-o",
                        str(out), *extra], check=True, capture_output=True, cwd=ROOT, env=env)
        runs.append(time.perf_counter() - t0)
    return runs[0], statistics.median(runs[1:])


def read_csv_time(csv: Path) -> float:
    import pandas as pd
    runs = []
    for _ in range(3):
        t0 = time.perf_counter()
        pd.read_csv(csv)
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs)


def open_in_chromium(pages: list[Path]) -> list[tuple[float, int]]:
    """(seconds from goto until the clock runs, requests other than the file) per page."""
    from playwright.sync_api import sync_playwright
    from test_view_browser import ARGS, CHROMIUM
    out = []
    with sync_playwright() as p, tempfile.TemporaryDirectory() as prof:
        ctx = p.chromium.launch_persistent_context(prof, executable_path=CHROMIUM, args=ARGS,
                                                   headless=True, viewport={"width": 960, "height": 640})
        for path in pages:
            page = ctx.new_page()
            reqs = []
            page.on("request", lambda r: reqs.append(r.url))
            url = path.resolve().as_uri()
            t0 = time.perf_counter()
            page.goto(url)
            page.wait_for_function("window.soaView && soaView.time() > soaView.t0 + 0.05", timeout=60000)
            out.append((time.perf_counter() - t0, len([u for u in reqs if u != url])))
            page.close()
        ctx.close()
    return out


def main() -> int:
    tmp = Path(tempfile.mkdtemp(prefix="bench_view_"))
    cases = [("arm7 (7 dof, no meshes)", ROOT / "model_descriptions/examples/arm7.urdf", False)]
    for name, folder, file, fb in [("panda (9 dof, DAE meshes)", "panda_description", "urdf/panda.urdf", False),
                                   ("solo12 (floating base, shared STL)", "solo_description",
                                    "robots/solo12.urdf", True)]:
        path = robot_file(folder, file)
        if path is not None:
            cases.append((name, path, fb))
    rows, pages, bar_rows = [], [], []
    for name, path, fb in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = sf.load_model(path, floating_base=fb)
        csv, html = tmp / f"{path.stem}.csv", tmp / f"{path.stem}.html"
        write_fmpy_csv(csv, swing(model, T_END, DT, amplitude=0.3))
        cold, wall = convert(path, csv, html, ["--floating-base"] if fb else [])
        ref = read_csv_time(csv)
        sc = scene_of(html)
        meshes = mesh_bytes(sc)
        size = html.stat().st_size
        rows.append([name, f"{cold:.2f}", f"{wall:.2f}", f"{ref:.3f}", f"{wall / ref:.0f}", f"{size / 1e6:.2f}",
                     f"{(size - meshes) / 1e6:.2f}", str(len(sc["meshes"]))])
        pages.append(html)
        if path.stem == "arm7":
            bar_rows.append(f"10⁴ rows of a 7-dof arm convert in {cold:.2f} s (bar ≤ 5 s): "
                            f"{'PASS' if cold <= 5 else 'FAIL'}")
    opened = open_in_chromium(pages)
    for r, (t_play, nreq) in zip(rows, opened):
        r += [f"{t_play:.2f}", str(nreq)]
        bar_rows.append(f"{r[0]}: plays {t_play:.2f} s after opening (bar ≤ 5 s), {nreq} requests "
                        f"(bar 0), {r[6]} MB without meshes (bar ≤ 1 MB): "
                        f"{'PASS' if t_play <= 5 and nreq == 0 and float(r[6]) <= 1 else 'FAIL'}")
    text = table(f"soa-view: {T_END:g} s at {DT * 1e3:g} ms ({int(T_END / DT) + 1} rows) from an fmpy CSV; "
                 "page opened in headless Chromium (SwiftShader)",
                 ["model", "convert s", "cached s", "pandas read s", "× read", "page MB", "less meshes MB",
                  "meshes", "to play s", "requests"], rows,
                 bar_rows + ["convert s: soa-view in a fresh process, wall, with an empty mesh cache; "
                             "cached s: the same, meshes cached (median of 3); × read: cached s / "
                             "pandas read s, pd.read_csv of the same file (the reference), median of 3; "
                             "to play s: "
                             "goto(file://…) until the animation clock runs, one page after another "
                             "in one browser."])
    write_result("view.txt", text)
    return 0 if all(b.endswith("PASS") for b in bar_rows) else 1


if __name__ == "__main__":
    sys.exit(main())
