"""The animated scene of a result and the one HTML file that plays it (``sf.animate``, ``soa-view``).

Poses come from the engine's forward kinematics (:func:`soa_fmu.forward_kinematics`, the outward
sweep of seed 000 (2.8)) at the result's own sample times; each drawn node gets a keyframe track
(position, quaternion, and for stretched items scale) that three.js interpolates between samples
in real time (1 s of result = 1 s of playback at speed 1).  The page is MeshCat's viewer
(``meshcat/viewer/dist/main.min.js`` from the ``meshcat`` package: three.js, orbit controls, and the
Animations panel with play/pause, time scrubber and speed) plus this package's ``player.js``,
inlined into one file (the bundle and the scene gzip-compressed, unpacked by the browser): it
opens from ``file://`` with no network request.
"""
from __future__ import annotations

import base64
import gzip
import html
import importlib.util
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..contact import ContactGeom
from ..kinematics import forward_kinematics
from ..model import Model
from .geometry import DEFAULT_COLOR, Mesh, Visual, load_mesh, model_visuals
from .results import Result, ResultError, load_result

MAX_FPS = 30.0                  # keyframes per second of result kept (the rest interpolated; soa-view --fps default)
STICK_COLOR = (0.55, 0.60, 0.68, 1.0)
JOINT_COLOR = (0.95, 0.62, 0.15, 1.0)
COM_COLOR = (0.15, 0.45, 0.85, 1.0)
FLEX_COLOR = (0.20, 0.65, 0.35, 1.0)
CONTACT_COLOR = (0.85, 0.15, 0.75)      # contact geometry, planes: magenta (no other item's, not the sky's)
CONTACT_ALPHA = {"visuals": 0.35, "alone": 0.7, "plane": 0.15}   # its opacity over visuals / without
FORCE_COLORS = {"constraint": (0.85, 0.15, 0.15, 1.0), "contact": (0.95, 0.45, 0.05, 1.0)}
GRID_CELLS = 20                 # the floor grid: this many cells a side, each about a quarter of the model's size
_RX90 = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])   # three.js y axis -> z


@dataclass
class Node:
    """A drawn scene node: items fixed in it, and its pose over the keyframes (world frame)."""
    group: str
    name: str
    items: list = field(default_factory=list)
    position: np.ndarray | None = None      # (K, 3)
    rotation: np.ndarray | None = None      # (K, 3, 3)
    scale: np.ndarray | None = None         # (K, 3) or None
    framed: bool = True                     # part of the model's shape: the first view frames it


def _b64(a: np.ndarray, dtype) -> str:
    return base64.b64encode(np.ascontiguousarray(a, dtype=dtype).tobytes()).decode("ascii")


def quaternions(R: np.ndarray) -> np.ndarray:
    """(K, 3, 3) rotations -> (K, 4) unit quaternions (x, y, z, w), sign-continuous over K."""
    R = np.asarray(R, dtype=float).reshape(-1, 3, 3)
    K = R.shape[0]
    q = np.empty((K, 4))
    tr = np.trace(R, axis1=1, axis2=2)
    cands = np.stack([1 + tr, 1 + 2 * R[:, 0, 0] - tr, 1 + 2 * R[:, 1, 1] - tr,
                      1 + 2 * R[:, 2, 2] - tr], axis=1)
    best = np.argmax(cands, axis=1)
    for i in range(K):
        m, b = R[i], best[i]
        s = 2.0 * np.sqrt(max(cands[i, b], 1e-300))
        if b == 0:
            q[i] = [(m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s, s / 4]
        elif b == 1:
            q[i] = [s / 4, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s, (m[2, 1] - m[1, 2]) / s]
        elif b == 2:
            q[i] = [(m[0, 1] + m[1, 0]) / s, s / 4, (m[1, 2] + m[2, 1]) / s, (m[0, 2] - m[2, 0]) / s]
        else:
            q[i] = [(m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, s / 4, (m[1, 0] - m[0, 1]) / s]
    flip = np.einsum("ij,ij->i", q[1:], q[:-1]) < 0
    sign = np.concatenate([[1.0], np.where(flip, -1.0, 1.0)]).cumprod()
    return q / np.linalg.norm(q, axis=1, keepdims=True) * sign[:, None]


def _matrix(R=np.eye(3), p=(0.0, 0.0, 0.0), scale=(1.0, 1.0, 1.0)) -> list[float]:
    """A three.js Matrix4 (column-major) of x -> R diag(scale) x + p."""
    T = np.eye(4)
    T[:3, :3] = np.asarray(R) @ np.diag(scale)
    T[:3, 3] = p
    return [round(float(x), 7) for x in T.T.ravel()]


def _align_y(d: np.ndarray) -> np.ndarray:
    """(K, 3) directions -> (K, 3, 3) rotations taking the y axis onto each (any twist)."""
    n = np.linalg.norm(d, axis=1, keepdims=True)
    y = np.where(n > 1e-12, d / np.maximum(n, 1e-300), [0.0, 1.0, 0.0])
    ref = np.where(np.abs(y[:, [0]]) < 0.9, [1.0, 0.0, 0.0], [0.0, 0.0, 1.0])
    z = np.cross(ref, y)
    z /= np.linalg.norm(z, axis=1, keepdims=True)
    x = np.cross(y, z)
    return np.stack([x, y, z], axis=2)


def keyframe_rows(t: np.ndarray, max_fps: float = MAX_FPS) -> np.ndarray:
    """Indices of the result rows kept as keyframes: at most ``max_fps`` per second of result,
    the first and last always."""
    if t.size <= 2 or max_fps <= 0:
        return np.arange(t.size)
    grid = np.arange(t[0], t[-1], 1.0 / max_fps)
    idx = np.unique(np.concatenate([np.searchsorted(t, grid), [t.size - 1]]))
    return idx[idx < t.size]


def _color(c, default) -> list[float]:
    return [round(float(x), 4) for x in (c if c is not None else default)]


class SceneBuilder:
    """Collects nodes, items and meshes (each mesh file once) for one animation."""

    def __init__(self, model: Model, res: Result, rows: np.ndarray):
        self.model, self.res, self.rows = model, res, rows
        self.t = res.t[rows]
        self.q = res.q[rows]
        nb = model.nbodies
        K = rows.size
        self.Rw, self.pw = np.empty((K, nb, 3, 3)), np.empty((K, nb, 3))
        for i in range(K):
            w = forward_kinematics(model, self.q[i])
            self.Rw[i], self.pw[i] = w.Rw, w.pw
        self.nodes: list[Node] = []
        self.meshes: list[Mesh] = []
        self._mesh_index: dict[object, int | None] = {}     # mesh file (or inline Mesh's id) -> index
        ext = np.abs(self.pw.reshape(-1, 3) - self.pw.reshape(-1, 3).mean(axis=0)).max() if nb else 0.0
        lengths = [np.linalg.norm(b.translation) for b in model.bodies]
        self.size = max([ext, *lengths, 0.2])                  # the mechanism's size, m
        self.contact_alpha = CONTACT_ALPHA["alone"]           # (add_contact: lower over visuals)
        self.r = 0.016 * self.size                            # stick radius

    # ---- items
    def mesh_item(self, v: Visual) -> dict | None:
        key = v.file if v.mesh is None else id(v.mesh)
        if key not in self._mesh_index:
            m = load_mesh(v.file) if v.mesh is None else v.mesh
            self._mesh_index[key] = None if m is None else len(self.meshes)
            if m is not None:
                self.meshes.append(m)
        i = self._mesh_index[key]
        if i is None:
            return None
        return {"kind": "mesh", "mesh": i, "matrix": _matrix(v.R, v.p, v.scale),
                "color": _color(v.color, self.meshes[i].color)}

    def visual_item(self, v: Visual) -> dict:
        if v.kind == "mesh":
            item = self.mesh_item(v)
            if item is not None:
                return item
            v = Visual("missing", v.R, v.p, (0.05, 0.05, 0.05), color=v.color)
        if v.kind == "cylinder":
            return {"kind": "cylinder", "size": [v.size[0], v.size[1]], "matrix": _matrix(v.R @ _RX90, v.p),
                    "color": _color(v.color, DEFAULT_COLOR)}
        kind = "box" if v.kind == "missing" else v.kind
        return {"kind": kind, "size": list(v.size), "matrix": _matrix(v.R, v.p),
                "color": _color(v.color, DEFAULT_COLOR)}

    def segment(self, a, b, color, r=None) -> dict | None:
        """A thin cylinder from a to b (points in the node's frame)."""
        a, b = np.asarray(a, float), np.asarray(b, float)
        d = b - a
        L = float(np.linalg.norm(d))
        if L < 1e-9:
            return None
        R = _align_y(d[None])[0]
        return {"kind": "cylinder", "size": [r or self.r, L], "matrix": _matrix(R, (a + b) / 2),
                "color": _color(color, None)}

    def ball(self, p, radius, color) -> dict:
        return {"kind": "sphere", "size": [radius], "matrix": _matrix(p=p), "color": _color(color, None)}

    def stick(self, k: int) -> list[dict]:
        """Links from the body origin to its children's joint origins and its CoM, a joint ball
        and the joint's axis."""
        m, b = self.model, self.model.bodies[k]
        items = [self.ball(np.zeros(3), 2.2 * self.r, JOINT_COLOR)]
        axis = getattr(b.joint, "axis", None)               # revolute / prismatic: the joint axis
        if axis is not None:
            a = 4.0 * self.r * np.asarray(axis, dtype=float)
            items.append(self.segment(-a, a, JOINT_COLOR, 1.2 * self.r))
        for c in m.bodies:
            if c.parent == k and not c.frame_only:
                items.append(self.segment(np.zeros(3), c.translation, STICK_COLOR))
        if b.mass > 0:
            items.append(self.segment(np.zeros(3), b.com, STICK_COLOR, 0.6 * self.r))
            items.append(self.ball(b.com, 1.8 * self.r, COM_COLOR))
        return [i for i in items if i is not None]

    # ---- nodes
    def add_bodies(self) -> None:
        m = self.model
        visuals = model_visuals(m)
        frames_on: dict[int, list] = {}
        for name in m.frames:
            k, R, p = m.frame_placement(name)
            if k >= 0:
                frames_on.setdefault(k, []).append({"kind": "axes", "size": [0.08 * self.size],
                                                    "matrix": _matrix(R, p)})
        for k, b in enumerate(m.bodies):
            if b.frame_only or (visuals and b.name not in visuals and b.mass == 0):
                items = []                 # (a massless link of a model with shapes: nothing to see)
            elif b.name in visuals:
                items = [self.visual_item(v) for v in visuals[b.name]]
            elif b.flexible is not None:
                items = [self.ball(np.zeros(3), 2.2 * self.r, JOINT_COLOR)]
                self.add_flexible(k)
            else:
                items = self.stick(k)
            items += frames_on.get(k, [])
            if items:
                self.nodes.append(Node("bodies", b.name, items, self.pw[:, k], self.Rw[:, k]))
        self.add_contact(bool(visuals))

    def contact_item(self, g: ContactGeom, alpha: float) -> dict:
        """One contact geometry as one item in its own frame (docs/contact.md): a sphere (a point:
        a small ball), a box (full edges), a cylinder or a capsule (radius, length; three.js y
        along the geometry's z), an ellipsoid (a unit sphere scaled by its radii), a convex hull
        (its triangles, wound outward)."""
        color = [*_color(CONTACT_COLOR, None), alpha]
        if g.shape == "mesh":
            from scipy.spatial import ConvexHull
            v = np.asarray(g.vertices, dtype=float)
            faces = ConvexHull(v).simplices.copy()
            n = np.cross(v[faces[:, 1]] - v[faces[:, 0]], v[faces[:, 2]] - v[faces[:, 0]])
            inward = np.einsum("ij,ij->i", n, v[faces].mean(axis=1) - v.mean(axis=0)) < 0
            faces[inward] = faces[inward][:, ::-1]
            self.meshes.append(Mesh(v.astype(np.float32), faces.astype(np.uint32), tuple(color)))
            return {"kind": "mesh", "mesh": len(self.meshes) - 1, "matrix": _matrix(),
                    "color": color, "contact": True}
        if g.shape == "box":
            size, M = [float(x) for x in 2 * np.asarray(g.half_extents)], _matrix()
        elif g.shape in ("cylinder", "capsule"):
            size, M = [float(g.radius), 2.0 * float(g.half_length)], _matrix(_RX90)
        elif g.shape == "ellipsoid":
            size, M = [1.0], _matrix(scale=g.radii)
            return {"kind": "sphere", "size": size, "matrix": M, "color": color, "contact": True}
        else:
            size, M = [float(g.radius) if g.radius > 0 else self.r], _matrix()
        return {"kind": g.shape, "size": size, "matrix": M, "color": color, "contact": True}

    def add_contact(self, visuals: bool) -> None:
        """Group ``contact``, toggled in the page's controls: a node per contact geometry, in its
        frame on its body (x_world = R_k (R_g x + c_g) + p_k, forward kinematics), translucent
        magenta — more opaque when the model has no visuals — and a square per contact plane."""
        m = self.model
        alpha = self.contact_alpha = CONTACT_ALPHA["visuals" if visuals else "alone"]
        for g in m.contact_geoms:
            Rk, pk = self.Rw[:, g.body], self.pw[:, g.body]
            self.nodes.append(Node("contact", g.name, [self.contact_item(g, alpha)],
                                   pk + np.einsum("kab,b->ka", Rk, np.asarray(g.center, float)),
                                   np.einsum("kab,bc->kac", Rk, np.asarray(g.rotation, float))))
        for plane in m.contact_planes:                            # a translucent square, still
            n = np.asarray(plane.normal, dtype=float)
            R = _align_y(n[None])[0] @ _RX90.T                    # the box's z along the normal
            side = 3.0 * self.size
            item = {"kind": "box", "size": [side, side, 0.002 * side], "matrix": _matrix(),
                    "color": [*_color(CONTACT_COLOR, None), CONTACT_ALPHA["plane"]], "contact": True}
            self.nodes.append(Node("contact", plane.name, [item], n * float(plane.offset), R,
                                   framed=False))

    def add_flexible(self, k: int) -> None:
        """The deformed centreline of flexible body k: node j at Q(j) + Ψ_j η in the body frame
        (seed 000 §4, the translational rows of the mode shapes), one stretched segment between
        consecutive nodes."""
        b = self.model.bodies[k]
        fl = b.flexible
        i0 = b.q_index + b.joint.nq
        eta = self.q[:, i0:i0 + b.nmodes]                                     # (K, m)
        local = fl.nodes[None] + np.einsum("jum,km->kju", fl.shapes[:, 3:6, :], eta)
        world = np.einsum("kab,kjb->kja", self.Rw[:, k], local) + self.pw[:, k][:, None]
        unit = {"kind": "cylinder", "size": [1.5 * self.r, 1.0], "matrix": _matrix(),
                "color": _color(FLEX_COLOR, None)}
        for j in range(fl.nodes.shape[0] - 1):
            a, c = world[:, j], world[:, j + 1]
            d = c - a
            L = np.linalg.norm(d, axis=1)
            scale = np.stack([np.ones_like(L), np.maximum(L, 1e-9), np.ones_like(L)], axis=1)
            self.nodes.append(Node("flexible", f"{b.name}.{j}", [unit], (a + c) / 2, _align_y(d), scale))
        joint = {"kind": "sphere", "size": [1.4 * self.r], "matrix": _matrix(),
                 "color": _color(FLEX_COLOR, None)}
        for j in range(fl.nodes.shape[0]):
            self.nodes.append(Node("flexible", f"{b.name}.node{j}", [joint], world[:, j],
                                   np.broadcast_to(np.eye(3), (len(self.t), 3, 3))))

    def arrow(self, kind: str, name: str, at: np.ndarray, F: np.ndarray, fmax: float) -> None:
        """An arrow at ``at`` (K, 3) along F (K, 3), its length |F| scaled to the model's size."""
        L = np.linalg.norm(F, axis=1) * (0.35 * self.size / fmax)
        scale = np.stack([np.ones_like(L), np.maximum(L, 1e-6), np.ones_like(L)], axis=1)
        item = {"kind": "arrow", "size": [1.2 * self.r], "matrix": _matrix(),
                "color": _color(FORCE_COLORS[kind], None)}
        self.nodes.append(Node("forces", name, [item], at, _align_y(F), scale, framed=False))

    def add_forces(self) -> None:
        """Constraint forces ``<c>.f[k]`` (frame_a axes, at frame_b's origin; the last three rows
        are the force) and contact forces ``<sphere>.force[1..3]`` (world axes) in the result."""
        out = {k: v[self.rows] for k, v in self.res.outputs.items()}
        m = self.model
        found = []
        for c in m.constraints:
            cols = [f"{c.name}.f[{i}]" for i in range(c.size - 2, c.size + 1)]
            if all(col in out for col in cols):
                ka, Ra, _ = m.frame_placement(c.frame_a)
                kb, Rb, pb = m.frame_placement(c.frame_b)
                f = np.stack([out[col] for col in cols], axis=1)
                Raw = Ra if ka < 0 else np.einsum("kab,bc->kac", self.Rw[:, ka], Ra)
                Fw = np.einsum("kab,kb->ka", np.broadcast_to(Raw, (len(self.t), 3, 3)), f)
                at = np.broadcast_to(pb, (len(self.t), 3)) if kb < 0 else \
                    self.pw[:, kb] + np.einsum("kab,b->ka", self.Rw[:, kb], pb)
                found.append(("constraint", c.name, at, Fw))
        for g in m.contact_geoms:
            cols = [f"{g.name}.force[{i}]" for i in (1, 2, 3)]
            if all(col in out for col in cols):
                at = self.pw[:, g.body] + np.einsum("kab,b->ka", self.Rw[:, g.body], g.center)
                found.append(("contact", g.name, at, np.stack([out[c] for c in cols], axis=1)))
        for kind in FORCE_COLORS:
            group = [x for x in found if x[0] == kind]
            fmax = max([float(np.linalg.norm(F, axis=1).max()) for *_, F in group] + [0.0])
            for _, name, at, F in group:
                self.arrow(kind, name, np.asarray(at, float), F, fmax or 1.0)

    # ---- output
    def item_corners(self, it: dict) -> np.ndarray | None:
        """(8, 3) corners of an item's bounding box in its node's frame (None: a force arrow,
        not part of the model's shape)."""
        kind, size = it["kind"], np.asarray(it.get("size", [0.0]), dtype=float)
        if kind == "mesh":
            v = self.meshes[it["mesh"]].vertices
            lo, hi = v.min(axis=0), v.max(axis=0)
        elif kind in ("box", "sphere", "cylinder", "capsule"):     # cylinder, capsule: along y
            hi = {"box": size / 2, "sphere": np.full(3, size[0]),
                  "cylinder": np.array([size[0], size[-1] / 2, size[0]]),
                  "capsule": np.array([size[0], size[-1] / 2 + size[0], size[0]])}[kind]
            lo = -hi
        elif kind == "axes":
            lo, hi = np.zeros(3), np.full(3, size[0])
        else:
            return None
        corners = np.array(np.meshgrid(*zip(lo, hi), indexing="ij")).reshape(3, -1).T
        M = np.asarray(it["matrix"], dtype=float).reshape(4, 4).T       # column-major
        return corners @ M[:3, :3].T + M[:3, 3]

    def shape_points(self) -> np.ndarray:
        """(K, n, 3): the corners of every drawn shape of the model (bodies, flexible segments,
        contact geometry) in
        world at each keyframe — what the camera frames and the floor lies under."""
        K, out = len(self.t), []
        for n in self.nodes:
            if not n.framed:
                continue
            local = [c for c in (self.item_corners(it) for it in n.items) if c is not None]
            if not local:
                continue
            x = np.concatenate(local)[None] * (1.0 if n.scale is None else np.asarray(n.scale)[:, None])
            R, p = np.broadcast_to(n.rotation, (K, 3, 3)), np.broadcast_to(n.position, (K, 3))
            out.append(np.einsum("kab,knb->kna", R, np.broadcast_to(x, (K, *x.shape[1:]))) + p[:, None])
        if not out:                                  # nothing drawn: the bodies' origins
            out = [self.pw]
        return np.concatenate(out, axis=1)

    def camera(self) -> dict:
        """The first view: the model's bounding box at t0 (its centre, the half diagonal), looked at
        across its longer horizontal side from 35° aside and 25° above; the floor: the contact plane
        facing up, else the lowest point of the result."""
        pts = self.shape_points()
        lo, hi = pts[0].min(axis=0), pts[0].max(axis=0)
        ext = hi - lo
        main, side = (np.array([0.0, -1.0, 0.0]), np.array([1.0, 0.0, 0.0])) if ext[0] > ext[1] \
            else (np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0]))
        az, el = np.radians(35.0), np.radians(25.0)
        d = np.cos(el) * (np.cos(az) * main + np.sin(az) * side) + np.sin(el) * np.array([0, 0, 1.0])
        floors = [float(pl.offset) for pl in getattr(self.model, "contact_planes", None) or []
                  if np.asarray(pl.normal, dtype=float)[2] > 0.999]
        floor = max(floors) if floors else float(pts[..., 2].min())
        radius = max(0.5 * float(np.linalg.norm(ext)), 0.05)
        cell = _nice(radius / 2)                            # the grid: 20 x 20 cells under the model
        centre = np.round((lo + hi)[:2] / 2 / cell) * cell
        return {"target": ((lo + hi) / 2).tolist(), "radius": radius, "direction": d.tolist(),
                "grid": {"centre": [*centre.tolist(), floor], "cell": cell, "cells": GRID_CELLS}}

    def payload(self, title: str) -> dict:
        K = len(self.t)
        nodes = []
        for n in self.nodes:
            R = np.broadcast_to(n.rotation, (K, 3, 3))
            P, Q = np.broadcast_to(n.position, (K, 3)), quaternions(R)
            S = None if n.scale is None else np.asarray(n.scale)
            still = np.ptp(P, axis=0).max() == 0 and np.ptp(Q, axis=0).max() == 0 and \
                (S is None or np.ptp(S, axis=0).max() == 0)
            rows = slice(0, 1) if still else slice(None)      # a node that never moves: one pose
            entry = {"group": n.group, "name": n.name.replace("/", "_"), "items": n.items,
                     "still": bool(still), "position": _b64(P[rows], np.float32),
                     "quaternion": _b64(Q[rows], np.float32)}
            if S is not None:
                entry["scale"] = _b64(S[rows], np.float32)
            nodes.append(entry)
        return {"title": title, "t0": float(self.t[0]), "duration": float(self.t[-1] - self.t[0]),
                "times": _b64(self.t - self.t[0], np.float32), "camera": self.camera(),
                "contact_opacity": self.contact_alpha,
                "meshes": [{"positions": _b64(m.vertices, np.float32),
                            "indices": _b64(m.faces, np.uint16 if len(m.vertices) < 65536 else np.uint32),
                            "wide": len(m.vertices) >= 65536} for m in self.meshes],
                "nodes": nodes}


def _nice(x: float) -> float:
    """The largest of 1, 2, 5 times a power of ten that is at most x."""
    e = 10.0 ** np.floor(np.log10(x))
    return float(max(m * e for m in (1.0, 2.0, 5.0) if m * e <= x * (1 + 1e-12)))


def viewer_js() -> str:
    """MeshCat's viewer bundle (three.js and its controls), as installed with the meshcat package."""
    spec = importlib.util.find_spec("meshcat")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the viewer needs the 'meshcat' package: pip install 'soa_fmu[view]'")
    path = Path(list(spec.submodule_search_locations)[0]) / "viewer" / "dist" / "main.min.js"
    return path.read_text(encoding="utf-8")


def _packed(data: bytes) -> str:
    """gzip (deterministic) + base64: what the page's boot script unpacks with DecompressionStream."""
    return base64.b64encode(gzip.compress(data, compresslevel=9, mtime=0)).decode("ascii")


BOOT = """(async function () {
  async function unpack(id) {
    var s = atob(document.getElementById(id).textContent.trim()), u = new Uint8Array(s.length);
    for (var i = 0; i < s.length; i++) u[i] = s.charCodeAt(i);
    var stream = new Blob([u]).stream().pipeThrough(new DecompressionStream("gzip"));
    return await new Response(stream).text();
  }
  try {
    (0, eval)(await unpack("soa-viewer"));            // MeshCat's viewer bundle: defines MeshCat
    window.soaPlay(JSON.parse(await unpack("soa-scene")));
  } catch (e) {
    document.getElementById("soa-clock").textContent = "cannot show the animation: " + e;
    throw e;
  }
})();"""


def page(payload: dict) -> str:
    """The HTML document: viewer bundle and scene data (both gzip + base64, unpacked by the
    browser's DecompressionStream), player and boot script, all inline."""
    data = json.dumps(payload, separators=(",", ":")).encode("utf-8")
    player = (Path(__file__).parent / "player.js").read_text(encoding="utf-8")
    title = html.escape(payload["title"])
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{title}</title>
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; img-src data: blob:; worker-src blob:">
<style>body{{margin:0;overflow:hidden;font-family:sans-serif}}#meshcat-pane{{width:100vw;height:100vh;overflow:hidden}}
#soa-clock{{position:absolute;left:12px;bottom:10px;font:14px monospace;color:#222;background:rgba(255,255,255,.7);padding:3px 6px;border-radius:3px}}</style>
</head><body><div id="meshcat-pane"></div><div id="soa-clock"></div>
<script type="application/octet-stream" id="soa-viewer">{_packed(viewer_js().encode("utf-8"))}</script>
<script type="application/octet-stream" id="soa-scene">{_packed(data)}</script>
<script>{player}</script>
<script>{BOOT}</script>
</body></html>
"""


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path`` and rename it: no half-written file."""
    path = Path(path)
    if not path.parent.is_dir():
        raise ResultError(f"{path}: no such directory {str(path.parent)!r}")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)               # as an ordinary new file (mkstemp: 0600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def animate(model: Model | str | os.PathLike, result, path, *, sample: int | None = None,
            max_fps: float = MAX_FPS, title: str | None = None) -> Path:
    """Write ``path`` (.html): the 3-D animation of ``result`` (a ``sf.simulate`` result, an FMI
    host's CSV, an ``.npz`` of (t, q), or sample ``sample`` of a ``soa-sweep`` result) on
    ``model`` (a Model, a model file, or an FMU built by soa-build-fmu: its model, meshes and
    options are inside it).  One self-contained file: it opens from ``file://`` with no network
    request and plays on open.  Raises :class:`~soa_fmu.view.ResultError` (one line) on a result
    that does not fit the model; nothing is written then."""
    if not isinstance(model, Model):
        from .bundle import opened_model
        with opened_model(model) as m:
            return animate(m, result, path, sample=sample, max_fps=max_fps, title=title)
    res = load_result(result, model, sample)
    b = SceneBuilder(model, res, keyframe_rows(res.t, max_fps))
    b.add_bodies()
    b.add_forces()
    src = res.source if res.source != "result" else "simulation"
    text = page(b.payload(title or f"{model.name} — {Path(src).name}"))
    write_atomic(Path(path), text)
    return Path(path)
