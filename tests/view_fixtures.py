"""Shared by the viewer tests: decode the scene a page carries; results on prescribed motions."""
from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np

EXAMPLE_ROBOTS = "cmeel.prefix/share/example-robot-data/robots"

# a double pendulum with native visuals; the magenta ball at the tip is what the browser test finds
TOML = """name = "pend"
[[bodies]]
name = "upper"
mass = 1.0
com = [0.0, 0.0, -0.5]
inertia = [0.08, 0.08, 0.001]
joint = { type = "revolute", name = "shoulder", axis = [0.0, 1.0, 0.0] }
visual = { shape = "cylinder", radius = 0.03, length = 1.0, xyz = [0, 0, -0.5], color = [0.2, 0.4, 0.9] }
[[bodies]]
name = "lower"
parent = "upper"
mass = 1.0
com = [0.0, 0.0, -0.5]
inertia = [0.08, 0.08, 0.001]
joint = { type = "revolute", name = "elbow", axis = [0.0, 1.0, 0.0], xyz = [0.0, 0.0, -1.0] }
visual = [{ shape = "box", size = [0.05, 0.05, 1.0], xyz = [0, 0, -0.5] },
          { shape = "sphere", radius = 0.08, xyz = [0, 0, -1.0], color = [1.0, 0.0, 1.0] }]
[[frames]]
name = "tip"
body = "lower"
xyz = [0.0, 0.0, -1.0]
"""


def scene_of(html_path) -> dict:
    """The JSON scene embedded in a page written by sf.animate."""
    import gzip
    s = Path(html_path).read_text(encoding="utf-8")
    i = s.index('id="soa-scene">') + len('id="soa-scene">')
    return json.loads(gzip.decompress(base64.b64decode(s[i:s.index("</script>", i)])))


def mesh_bytes(scene: dict) -> int:
    """What the scene's meshes take in the page (gzip + base64, as the page packs them)."""
    import gzip
    raw = b"".join(base64.b64decode(m[k]) for m in scene["meshes"] for k in ("positions", "indices"))
    return len(base64.b64encode(gzip.compress(raw, 9))) if raw else 0


def f32(b64: str, cols: int) -> np.ndarray:
    return np.frombuffer(base64.b64decode(b64), dtype=np.float32).reshape(-1, cols).astype(float)


def node(scene: dict, group: str, name: str) -> dict:
    return next(n for n in scene["nodes"] if n["group"] == group and n["name"] == name)


def rotation(qxyzw: np.ndarray) -> np.ndarray:
    """Unit quaternions (x, y, z, w) -> rotation matrices (the closed form, independent of scene.py)."""
    x, y, z, w = (qxyzw[:, i] for i in range(4))
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1)], 1)


def swing(model, t_end: float = 2.0, dt: float = 1e-3, amplitude: float = 0.4) -> dict:
    """A prescribed motion (t, q): every 1-dof coordinate swings about the neutral configuration,
    a floating base drifts and turns about z; quaternions stay unit."""
    t = np.arange(int(round(t_end / dt)) + 1) * dt
    q = np.tile(model.neutral_configuration(), (t.size, 1))
    quats = {i for _, i in model.quaternion_slices()}
    skip = set()
    for i in quats:
        skip |= set(range(i, i + 4))
    k = 0
    for i in range(model.nq):
        if i not in skip:
            q[:, i] += amplitude * np.sin(1.3 * t + 0.7 * k)
            k += 1
    for i in quats:                                   # (w, x, y, z): a turn about z
        a = 0.5 * np.sin(0.9 * t)
        q[:, i:i + 4] = 0.0
        q[:, i] = np.cos(a / 2)
        q[:, i + 3] = np.sin(a / 2)
    return {"t": t, "q": q}


def robot_file(folder: str, file: str) -> Path | None:
    import site
    import sys
    for entry in [*site.getsitepackages(), *sys.path]:
        p = Path(entry) / EXAMPLE_ROBOTS / folder / file
        if p.is_file():
            return p
    return None


def write_fmpy_csv(path, res, names=None) -> None:
    """A result (t, q) as the CSV an FMI host writes (fmpy's write_csv): a time column and q[i]
    (or ``names``) columns."""
    from fmpy.util import write_csv
    q = res["q"]
    names = names or [f"q[{i}]" for i in range(1, q.shape[1] + 1)]
    arr = np.zeros(len(res["t"]), dtype=[("time", float)] + [(n, float) for n in names])
    arr["time"] = res["t"]
    for i, n in enumerate(names):
        arr[n] = q[:, i]
    write_csv(str(path), arr)
