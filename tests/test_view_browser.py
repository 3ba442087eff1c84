"""The viewer's page in a real browser (SPEC V1): Debian's Chromium driven by playwright, software
WebGL.  The page opens from file:// with no request leaving the file and no console error, plays
on open, its pause button and time scrubber work, the speed control reaches the mixer, frames
change while playing, and a link drawn on screen sits where forward kinematics puts it (the
colour-keyed tip ball against the camera's projection).  Real robots (a panda arm with DAE
meshes, the solo12 quadruped with shared STL meshes) load from fmpy CSVs the same way.

With CI=true a missing browser fails the test (`make test` and .ci/run install it)."""
from __future__ import annotations

import io
import os
import shutil
import time
import warnings

import numpy as np
import pytest

import soa_fmu as sf
from view_fixtures import TOML, mesh_bytes, robot_file, scene_of, swing, write_fmpy_csv

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run",
        "--use-angle=swiftshader", "--enable-unsafe-swiftshader"]
W, H = 960, 640


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    missing = None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing = "playwright is not installed"
    if missing is None and not (os.path.exists(CHROMIUM) or shutil.which("chromium")):
        missing = f"{CHROMIUM} is not installed (apt-get install -y chromium)"
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the browser test must run in CI: {missing}")
        pytest.skip(missing)
    exe = CHROMIUM if os.path.exists(CHROMIUM) else shutil.which("chromium")
    with sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=exe, args=ARGS,
            headless=True, viewport={"width": W, "height": H}, device_scale_factor=1)
        yield ctx
        ctx.close()


class Page:
    """A page of ``browser`` recording its requests, console errors and page errors."""

    def __init__(self, browser, path):
        self.page = browser.new_page()
        self.requests, self.errors = [], []
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.url = path.resolve().as_uri()
        t0 = time.perf_counter()
        self.page.goto(self.url)
        self.page.wait_for_function("window.soaView && soaView.time() > soaView.t0 + 0.05", timeout=60000)
        self.to_play = time.perf_counter() - t0

    def pixels(self) -> np.ndarray:
        from PIL import Image
        return np.asarray(Image.open(io.BytesIO(self.page.screenshot())).convert("RGB")).astype(int)

    def control(self, name: str):
        return self.page.locator(f'li.cr:has(span.property-name:text-is("{name}"))')

    def rendered(self) -> None:
        """Wait until two animation frames have been drawn."""
        self.page.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")

    def offline(self) -> list[str]:
        """Requests other than the file itself (data:/blob: URLs stay inside the page)."""
        return [u for u in self.requests if u != self.url and not u.startswith(("data:", "blob:"))]


def project(page: Page, X: np.ndarray) -> np.ndarray:
    """Pixel (u, v) of world point X through the page's camera: P · V · S · X (S: MeshCat's scene
    root, z-up world to three.js' y-up), NDC to pixels."""
    cam = page.page.evaluate("""() => { const v = soaView.viewer, c = v.camera;
        v.scene.updateMatrixWorld(true); const e = v.renderer.domElement;
        return {P: Array.from(c.projectionMatrix.elements), M: Array.from(c.matrixWorld.elements),
                S: Array.from(v.scene.matrixWorld.elements), w: e.clientWidth, h: e.clientHeight}; }""")
    P, M, S = (np.array(cam[k]).reshape(4, 4).T for k in ("P", "M", "S"))
    c = P @ np.linalg.inv(M) @ S @ np.r_[X, 1.0]
    ndc = c[:3] / c[3]
    return np.array([(ndc[0] + 1) / 2 * cam["w"], (1 - ndc[1]) / 2 * cam["h"]])


def magenta(img: np.ndarray) -> np.ndarray:
    r, g, b = img[..., 0], img[..., 1], img[..., 2]
    return (r > 90) & (b > 90) & (r - g > 60) & (b - g > 60) & (np.abs(r - b) < 60)


def test_page_offline_plays_seeks_and_draws_links_where_kinematics_puts_them(browser, tmp_path):
    (tmp_path / "pend.toml").write_text(TOML)
    model = sf.load_model(tmp_path / "pend.toml")
    res = swing(model, 4.0, amplitude=0.8)
    out = sf.animate(model, res, tmp_path / "pend.html")
    pg = Page(browser, out)
    assert pg.offline() == [] and pg.errors == []
    a = pg.pixels()
    pg.page.wait_for_timeout(400)
    b = pg.pixels()
    assert (np.abs(a - b).sum(axis=2) > 30).sum() > 50          # frames change while playing
    assert pg.page.evaluate("soaView.viewer.gui.closed") is True  # the controls start closed
    pg.page.get_by_text("Open Controls").click()
    pg.control("timeScale").locator("input").fill("2")
    pg.control("timeScale").locator("input").press("Enter")
    assert pg.page.evaluate("soaView.viewer.animator.mixer.timeScale") == 2
    pg.control("pause").click()
    assert pg.page.evaluate("soaView.viewer.animator.playing") is False
    for t in (0.4, 1.1, 2.35):
        box = pg.control("time").locator("input")                 # the time scrubber's field
        box.fill(str(t))
        box.press("Enter")
        pg.rendered()
        assert pg.page.evaluate("soaView.time()") == pytest.approx(t, abs=1e-6)
        mask = magenta(pg.pixels())
        assert mask.sum() > 30, f"t = {t}: the tip ball is not on screen"
        seen = np.array([np.nonzero(mask)[1].mean(), np.nonzero(mask)[0].mean()])
        q = np.array([np.interp(t, res["t"], res["q"][:, i]) for i in range(model.nq)])
        want = project(pg, sf.frame_pose(model, q, "tip")[1])
        radius = np.sqrt(mask.sum() / np.pi)                       # the ball's, in pixels
        # (the centroid of the lit part: its shaded rim is not magenta, a bias of ~0.2 radius)
        assert np.linalg.norm(seen - want) < max(3.0, 0.3 * radius), (t, seen, want, radius)
    assert pg.errors == [] and pg.offline() == []
    pg.page.close()


def robot_pixels(page: Page) -> np.ndarray:
    """Where the robot is on screen, paused at t0: the pixels that change when it is hidden."""
    page.page.evaluate("soaView.pause(); soaView.seek(soaView.t0)")
    page.rendered()
    shown = page.pixels()
    page.page.evaluate("soaView.viewer.scene_tree.find(['soa']).object.visible = false; "
                       "soaView.viewer.set_dirty()")
    page.rendered()
    hidden = page.pixels()
    page.page.evaluate("soaView.viewer.scene_tree.find(['soa']).object.visible = true; "
                       "soaView.viewer.set_dirty()")
    return np.abs(shown - hidden).sum(axis=2) > 30


@pytest.mark.parametrize("folder, file, floating", [
    ("panda_description", "urdf/panda.urdf", False),          # an arm with DAE meshes
    ("solo_description", "robots/solo12.urdf", True),         # a quadruped sharing STL meshes
])
def test_real_robots_from_an_fmi_host_csv_and_from_their_fmu_alone(browser, tmp_path, folder, file,
                                                                    floating, monkeypatch, capsys):
    """The page from the URDF, then the one from the FMU alone (its meshes inside it, its
    floating base from its fmu.json): no missing mesh, at least half the URDF page's size, plays
    with no page error, and the first view has the robot in frame."""
    import build_fmu
    from soa_fmu.view import cli
    monkeypatch.setenv("SOA_FMU_CACHE", str(tmp_path / "cache"))
    path = robot_file(folder, file)
    if path is None:
        pytest.skip(f"example-robot-data {folder}/{file} not installed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                        # panda's mimic finger joint
        model = sf.load_model(path, floating_base=floating)
        write_fmpy_csv(tmp_path / "r.csv", swing(model, 2.0, amplitude=0.3))
        out = sf.animate(model, tmp_path / "r.csv", tmp_path / "r.html")
        fmu = build_fmu.build(path, tmp_path / "robot.fmu", floating_base=floating)
    sc = scene_of(out)
    files = set()
    import re
    for m in re.finditer(r'filename="([^"]+)"', path.read_text()):
        files.add(m.group(1))
    visual = {f for f in files if "collision" not in f}
    assert 0 < len(sc["meshes"]) <= len(visual)               # each mesh file embedded once
    assert out.stat().st_size - mesh_bytes(sc) <= 1_000_000    # ≤ 1 MB plus the meshes
    pg = Page(browser, out)
    assert pg.offline() == [] and pg.errors == []
    pg.page.close()

    capsys.readouterr()
    assert cli.main([str(fmu), str(tmp_path / "r.csv"), "-o", str(tmp_path / "f.html")]) == 0
    assert "not found" not in capsys.readouterr().err
    from_fmu = tmp_path / "f.html"
    assert len(scene_of(from_fmu)["meshes"]) == len(sc["meshes"])
    assert from_fmu.stat().st_size >= 0.5 * out.stat().st_size
    pg = Page(browser, from_fmu)
    assert pg.offline() == [] and pg.errors == []
    robot = robot_pixels(pg)
    h, w = robot.shape
    centre = robot[h // 4:3 * h // 4, w // 4:3 * w // 4]
    rows, cols = np.nonzero(robot)
    print(f"{folder}: FMU {fmu.stat().st_size / 1e6:.2f} MB; page {out.stat().st_size / 1e6:.2f} MB "
          f"from the URDF, {from_fmu.stat().st_size / 1e6:.2f} MB from the FMU; robot on "
          f"{centre.mean():.0%} of the central region, rows {rows.min()}-{rows.max()}, columns "
          f"{cols.min()}-{cols.max()}")
    assert centre.mean() > 0.05                                # the robot is in the middle
    assert rows.max() - rows.min() > 0.4 * h                   # large enough to see
    assert rows.min() > 0 and rows.max() < h - 1 and cols.min() > 0 and cols.max() < w - 1  # whole
    assert pg.errors == []
    pg.page.close()


def test_contact_geometry_on_a_floor_loads_and_toggles(browser, tmp_path):
    """A box, a capsule and a convex hull on a floor (a model without visuals): the page loads
    with no error, the geometry is on screen in its colour, and the "contact geometry" checkbox
    of the controls hides it (and shows it again)."""
    m = sf.Model("parts")
    m.add_body("parts", joint=sf.Free(), mass=1.0, inertia=np.eye(3) * 0.01)
    m.add_contact_geom("box", "parts", "box", center=(-0.3, 0, 0.1), half_extents=(0.1, 0.08, 0.1))
    m.add_contact_geom("capsule", "parts", "capsule", center=(0, 0, 0.05), radius=0.05,
                       half_length=0.1, rotation=sf.spatial.rpy_to_matrix((0, np.pi / 2, 0)))
    hull = np.array([[0, 0, 0], [0.2, 0, 0], [0, 0.2, 0], [0, 0, 0.2], [0.12, 0.12, 0.1]])
    m.add_contact_geom("hull", "parts", "mesh", center=(0.25, -0.1, 0), vertices=hull)
    m.add_contact_plane("floor")
    out = sf.animate(m, swing(m, 1.0, amplitude=0.2), tmp_path / "parts.html")
    pg = Page(browser, out)
    assert pg.offline() == [] and pg.errors == []
    pg.page.evaluate("soaView.pause(); soaView.seek(soaView.t0)")
    pg.rendered()
    pg.page.screenshot(path=str(tmp_path / "parts.png"))

    def drawn() -> int:
        return int(magenta(pg.pixels()).sum())
    shown = drawn()
    assert shown > 0.02 * W * H                                  # the three shapes, in their colour
    pg.page.get_by_text("Open Controls").click()
    toggle = pg.control("contact geometry").locator("input")
    toggle.uncheck()
    pg.rendered()
    assert drawn() < 0.01 * shown and not pg.page.evaluate(
        "soaView.viewer.scene_tree.find(['soa', 'contact']).object.visible")
    toggle.check()
    pg.rendered()
    assert drawn() > 0.9 * shown
    assert pg.errors == []
    pg.page.close()
