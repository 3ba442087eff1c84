"""The viewer (SPEC V1, docs/viewing.md) without a browser: the scene a page carries is the engine's
forward kinematics at the result's own times, every result form reads to the same (t, q), bad
input is one line with exit 1 and no file, visuals and meshes (resolved, deduplicated, missing ->
primitive), flexible centrelines through the deformed nodes, force arrows; an FMU carries its
meshes (binary glTF, simplified above the budget) and is viewed alone with its own options; the
first view frames the model and the floor lies under it."""
from __future__ import annotations

import zipfile

import numpy as np
import pytest

pytest.importorskip("trimesh")
pytest.importorskip("meshcat")

import soa_fmu as sf  # noqa: E402
from model_descriptions import example_path  # noqa: E402
from soa_fmu.view import ResultError, ViewWarning, load_result  # noqa: E402
from soa_fmu.view import cli  # noqa: E402
from soa_fmu.view.scene import keyframe_rows, quaternions  # noqa: E402
from view_fixtures import TOML, f32, node, rotation, scene_of, swing, write_fmpy_csv  # noqa: E402


@pytest.fixture(autouse=True)
def _mesh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SOA_FMU_CACHE", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def arm():
    return sf.load_model(example_path("arm7.urdf"))


# ---------------------------------------------------------------- poses and timing
def test_tracks_are_forward_kinematics_at_the_result_times(arm, tmp_path):
    res = swing(arm, 3.0)
    out = sf.animate(arm, res, tmp_path / "arm.html")
    sc = scene_of(out)
    times = f32(sc["times"], 1)[:, 0] + sc["t0"]
    rows = keyframe_rows(res["t"])
    np.testing.assert_allclose(times, res["t"][rows], atol=1e-6)      # the result's own sample times
    assert sc["duration"] == pytest.approx(3.0)                        # 1 s of result = 1 s of play
    assert np.diff(times).min() >= 1 / 30 - 1e-3 - 1e-6 and times.size >= 0.9 * 30 * 3  # ≤ 30 per s
    for body in ("link3", "link7"):
        nd = node(sc, "bodies", body)
        P, Q = f32(nd["position"], 3), f32(nd["quaternion"], 4)
        for k in (0, 17, times.size - 1):
            R, p = sf.frame_pose(arm, res["q"][rows[k]], body)
            np.testing.assert_allclose(P[k], p, atol=2e-6)
            np.testing.assert_allclose(rotation(Q[k:k + 1])[0], R, atol=2e-6)


def test_quaternions_round_trip_and_stay_sign_continuous():
    rng = np.random.default_rng(3)
    A = rng.normal(size=(200, 3, 3))
    R = np.linalg.qr(A)[0] * np.sign(np.linalg.det(np.linalg.qr(A)[0]))[:, None, None]
    q = quaternions(R)
    np.testing.assert_allclose(rotation(q), R, atol=1e-12)
    a = np.linspace(0, 4 * np.pi, 400)                     # two full turns about x: no sign jumps
    Rx = np.stack([np.array([[1, 0, 0], [0, np.cos(x), -np.sin(x)], [0, np.sin(x), np.cos(x)]]) for x in a])
    qx = quaternions(Rx)
    assert np.einsum("ij,ij->i", qx[1:], qx[:-1]).min() > 0.99


# ---------------------------------------------------------------- result forms
def test_every_result_form_reads_the_same(arm, tmp_path):
    res = swing(arm, 0.5)
    write_fmpy_csv(tmp_path / "fmpy.csv", res)
    write_fmpy_csv(tmp_path / "names.csv", res, arm.position_names)
    with open(tmp_path / "fmi3.csv", "w") as fh:                       # an FMI 3 array column
        fh.write("time,q\n")
        for t, q in zip(res["t"], res["q"]):
            fh.write(f'{float(t)!r},"{" ".join(repr(float(x)) for x in q)}"\n')
    np.savez(tmp_path / "r.npz", t=res["t"], q=res["q"])
    ds = _sweep_dataset(res, arm.nq)
    from soa_fmu.sweep import save
    save(ds, tmp_path / "s.nc")
    forms = [res, tmp_path / "fmpy.csv", tmp_path / "names.csv", tmp_path / "fmi3.csv",
             tmp_path / "r.npz"]
    for form in forms:
        r = load_result(form, arm)
        np.testing.assert_allclose(r.q, res["q"], rtol=1e-12, err_msg=str(form))
        np.testing.assert_allclose(r.t, res["t"], rtol=1e-12)
    r = load_result(tmp_path / "s.nc", arm, sample=1)
    np.testing.assert_allclose(r.q, res["q"] + 1e-3, rtol=1e-12)
    with pytest.raises(ResultError, match=r"sample 0 failed: diverged"):
        load_result(tmp_path / "s.nc", arm, sample=0)
    with pytest.raises(ResultError, match=r"--sample K \(0\.\.2\)"):
        load_result(tmp_path / "s.nc", arm)


def _sweep_dataset(res, nq):
    import xarray as xr
    n, nt = 3, len(res["t"])
    data = {f"q[{i + 1}]": (("sample", "time"), np.stack([res["q"][:, i] + 1e-3 * s for s in range(n)]))
            for i in range(nq)}
    ds = xr.Dataset(data, coords={"sample": np.arange(n), "time": res["t"]})
    ds["status"] = ("sample", np.array(["failed", "ok", "ok"]))
    ds["message"] = ("sample", np.array(["diverged", "", ""]))
    return ds


# ---------------------------------------------------------------- bad input: one line, exit 1, no file
def _cli_fails(capsys, tmp_path, model, result, *extra) -> str:
    out = tmp_path / "out.html"
    rc = cli.main([str(model), str(result), "-o", str(out), *extra])
    err = capsys.readouterr().err.strip()
    assert rc == 1
    assert len(err.splitlines()) == 1 and err.startswith("soa-view: error: "), err
    assert not out.exists() and not list(tmp_path.glob(".out.html*"))   # nothing half-written
    return err


def test_bad_results_are_one_line_naming_the_problem(arm, tmp_path, capsys):
    res = swing(arm, 0.2)
    arm7 = example_path("arm7.urdf")
    write_fmpy_csv(tmp_path / "short.csv", {"t": res["t"], "q": res["q"][:, :5]})
    assert "missing column(s) q[6], q[7]" in _cli_fails(capsys, tmp_path, arm7, tmp_path / "short.csv")
    write_fmpy_csv(tmp_path / "long.csv", {"t": res["t"], "q": np.hstack([res["q"], res["q"][:, :2]])})
    assert "q[9]" in _cli_fails(capsys, tmp_path, arm7, tmp_path / "long.csv")
    bad = {"t": res["t"], "q": res["q"].copy()}
    bad["q"][40, 2] = np.nan
    write_fmpy_csv(tmp_path / "nan.csv", bad)
    err = _cli_fails(capsys, tmp_path, arm7, tmp_path / "nan.csv")
    assert "row 41" in err and "q[3]" in err
    with open(tmp_path / "notime.csv", "w") as fh:
        fh.write("t_s,q[1]\n0,1\n")
    assert "no 'time' column" in _cli_fails(capsys, tmp_path, arm7, tmp_path / "notime.csv")
    back = {"t": res["t"][::-1].copy(), "q": res["q"]}
    write_fmpy_csv(tmp_path / "back.csv", back)
    assert "does not increase" in _cli_fails(capsys, tmp_path, arm7, tmp_path / "back.csv")
    assert "no such result file" in _cli_fails(capsys, tmp_path, arm7, tmp_path / "none.csv")
    # a result of another model with the same nq: its quaternion is not unit
    space = sf.load_model(example_path("spacecraft_rigid.toml"))
    other = np.zeros((res["t"].size, space.nq))
    write_fmpy_csv(tmp_path / "other.csv", {"t": res["t"], "q": other})
    assert "not a unit quaternion" in _cli_fails(capsys, tmp_path, example_path("spacecraft_rigid.toml"),
                                                 tmp_path / "other.csv")
    assert "--sample applies" in _cli_fails(capsys, tmp_path, arm7, tmp_path / "short.csv", "--sample", "1")


def test_cli_writes_the_page_and_reads_the_model_inside_an_fmu(arm, tmp_path, capsys):
    from fmu_fixtures import build
    res = swing(arm, 0.3)
    write_fmpy_csv(tmp_path / "r.csv", res)
    fmu = build("arm7.urdf", name="Arm7")
    assert cli.main([str(fmu), str(tmp_path / "r.csv"), "-o", str(tmp_path / "a.html")]) == 0
    assert "wrote" in capsys.readouterr().out
    sc = scene_of(tmp_path / "a.html")
    P = f32(node(sc, "bodies", "link7")["position"], 3)
    np.testing.assert_allclose(P[-1], sf.frame_pose(arm, res["q"][-1], "link7")[1], atol=2e-6)


# ---------------------------------------------------------------- geometry
URDF = """<robot name="two">
  <material name="red"><color rgba="1 0 0 1"/></material>
  <link name="base"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial>
    <visual><geometry><mesh filename="package://mypkg/meshes/part.stl"/></geometry><material name="red"/></visual></link>
  <link name="arm"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial>
    <visual><origin xyz="0 0 0.5"/><geometry><mesh filename="../meshes/part.stl" scale="2 2 2"/></geometry></visual>
    <visual><geometry><cylinder radius="0.05" length="1"/></geometry></visual></link>
  <link name="hand"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial>
    <visual><geometry><mesh filename="package://mypkg/meshes/gone.dae"/></geometry></visual></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 1 0"/></joint>
  <joint name="j2" type="revolute"><parent link="arm"/><child link="hand"/><origin xyz="0 0 1"/><axis xyz="0 1 0"/></joint>
</robot>"""


def test_urdf_meshes_resolved_deduplicated_and_missing_drawn_as_boxes(tmp_path):
    import trimesh
    pkg = tmp_path / "ws" / "mypkg"
    (pkg / "meshes").mkdir(parents=True)
    (pkg / "urdf").mkdir()
    trimesh.creation.box((0.1, 0.2, 0.3)).export(pkg / "meshes" / "part.stl")
    (pkg / "urdf" / "two.urdf").write_text(URDF)
    model = sf.load_model(pkg / "urdf" / "two.urdf")
    with pytest.warns(ViewWarning, match=r"gone\.dae.* not found; a box"):
        out = sf.animate(model, swing(model, 0.5), tmp_path / "two.html")
    sc = scene_of(out)
    assert len(sc["meshes"]) == 1                          # one STL used twice: embedded once
    V = f32(sc["meshes"][0]["positions"], 3)
    np.testing.assert_allclose(np.ptp(V, axis=0), [0.1, 0.2, 0.3], rtol=1e-6)
    base, arm_, hand = (node(sc, "bodies", n)["items"] for n in ("base", "arm", "hand"))
    assert base[0]["kind"] == "mesh" and base[0]["color"] == [1, 0, 0, 1]
    assert arm_[0]["kind"] == "mesh" and arm_[0]["mesh"] == 0
    M = np.array(arm_[0]["matrix"]).reshape(4, 4).T
    np.testing.assert_allclose(M[:3, :3], 2 * np.eye(3)) and np.testing.assert_allclose(M[:3, 3], [0, 0, 0.5])
    C = np.array(arm_[1]["matrix"]).reshape(4, 4).T         # three.js cylinders lie along y: URDF's z
    np.testing.assert_allclose(C[:3, :3] @ [0, 1, 0], [0, 0, 1], atol=1e-12)
    assert hand[0]["kind"] == "box"
    assert len(list((tmp_path / "cache" / "meshes").glob("*.npz"))) == 1     # what trimesh read, kept
    with pytest.MonkeyPatch.context() as mp, pytest.warns(ViewWarning):
        mp.setattr(trimesh, "load", lambda *a, **k: 1 / 0)        # a second conversion: no trimesh
        again = scene_of(sf.animate(model, swing(model, 0.5), tmp_path / "two2.html"))
    assert again["meshes"] == sc["meshes"]
    (pkg / "meshes" / "part.stl").write_bytes(trimesh.creation.box((1, 1, 1)).export(file_type="stl"))
    with pytest.warns(ViewWarning):                                            # a changed file
        bigger = scene_of(sf.animate(model, swing(model, 0.5), tmp_path / "two3.html"))
    np.testing.assert_allclose(np.ptp(f32(bigger["meshes"][0]["positions"], 3), axis=0), [1, 1, 1])




def test_toml_visuals_and_their_errors(tmp_path):
    (tmp_path / "pend.toml").write_text(TOML)
    model = sf.load_model(tmp_path / "pend.toml")
    sc = scene_of(sf.animate(model, swing(model, 0.5), tmp_path / "p.html"))
    up, low = node(sc, "bodies", "upper")["items"], node(sc, "bodies", "lower")["items"]
    assert [i["kind"] for i in up] == ["cylinder"] and up[0]["color"] == [0.2, 0.4, 0.9, 1.0]
    assert [i["kind"] for i in low] == ["box", "sphere", "axes"]       # the frame 'tip' as axes
    assert np.array(low[1]["matrix"])[12:15].tolist() == [0, 0, -1.0]
    (tmp_path / "bad.toml").write_text(TOML.replace('shape = "box"', 'shape = "cone"'))
    bad = sf.load_model(tmp_path / "bad.toml")
    with pytest.raises(sf.ModelError, match=r"bodies\[1\]\.visual\[0\]\.shape: expected one of box"):
        sf.animate(bad, swing(bad, 0.2), tmp_path / "b.html")
    assert not (tmp_path / "b.html").exists()


def test_stick_figure_links_joint_origins_and_com(tmp_path):
    model = sf.load_model(example_path("double_pendulum.toml"))
    sc = scene_of(sf.animate(model, swing(model, 0.3), tmp_path / "d.html"))
    items = node(sc, "bodies", "upper")["items"]
    ends = []
    for it in items:
        if it["kind"] == "cylinder":                 # a segment: centre ± half length along y
            M = np.array(it["matrix"]).reshape(4, 4).T
            ends.append(sorted([tuple(np.round(M[:3, 3] + s * it["size"][1] / 2 * M[:3, 1], 9))
                                for s in (-1, 1)]))
    assert sorted([(0.0, 0.0, -1.0), (0.0, 0.0, 0.0)]) in ends      # to the elbow
    assert sorted([(0.0, 0.0, -0.5), (0.0, 0.0, 0.0)]) in ends      # to the CoM
    axis = [e for e in ends if abs(e[0][1] + e[1][1]) < 1e-12 and e[0][1] != 0]   # ± along y
    assert len(axis) == 1 and axis[0][0][0] == axis[0][0][2] == 0.0              # the hinge axis


# ---------------------------------------------------------------- flexible bodies and forces
def test_flexible_centreline_passes_through_the_deformed_nodes(tmp_path):
    model = sf.load_model(example_path("flexible_arm.toml"))
    res = sf.simulate(model, 0.6, 1e-3, tau=lambda t, q, qd: np.r_[5.0 if t < 0.3 else -5.0,
                                                                    np.zeros(model.nv - 1)])
    assert np.abs(res["q"][:, 1:]).max() > 1e-4                    # the beam does bend
    sc = scene_of(sf.animate(model, res, tmp_path / "f.html"))
    rows = keyframe_rows(res["t"])
    tip = f32(node(sc, "flexible", "beam.node10")["position"], 3)
    for k in (5, 12, rows.size - 1):                               # the engine's own node frame
        np.testing.assert_allclose(tip[k], sf.frame_pose(model, res["q"][rows[k]], "tip")[1], atol=3e-6)
    seg = node(sc, "flexible", "beam.9")                           # the last segment: nodes 9 -> 10
    P, S = f32(seg["position"], 3), f32(seg["scale"], 3)
    n9 = f32(node(sc, "flexible", "beam.node9")["position"], 3)
    np.testing.assert_allclose(P, (n9 + tip) / 2, atol=2e-6)
    np.testing.assert_allclose(S[:, 1], np.linalg.norm(tip - n9, axis=1), atol=2e-6)


def test_constraint_force_arrows_point_along_the_force(tmp_path):
    model = sf.load_model(example_path("two_arms_box.toml"))
    c = model.constraints[0]
    assert c.kind == "weld"                                   # rows: moment (3), then force (3)
    res = swing(model, 0.5, amplitude=0.0)
    res["q"][:] = model.initial_q
    N, F = np.array([7.0, 7.0, -7.0]), np.array([3.0, -4.0, 12.0])
    res.update({f"{c.name}.f[{i + 1}]": np.full(res["t"].size, x) for i, x in enumerate(np.r_[N, F])})
    sc = scene_of(sf.animate(model, res, tmp_path / "c.html"))
    arrow = node(sc, "forces", c.name)
    q0 = res["q"][0]
    Ra = sf.frame_pose(model, q0, c.frame_a)[0]
    R = rotation(f32(arrow["quaternion"], 4))[0]
    np.testing.assert_allclose(R[:, 1], Ra @ F / 13.0, atol=1e-6)        # the arrow's axis is y
    np.testing.assert_allclose(f32(arrow["position"], 3)[0], sf.frame_pose(model, q0, c.frame_b)[1],
                               atol=2e-6)


def test_soa_sweep_view_animates_sample_k_of_the_fmu(tmp_path, capsys):
    pytest.importorskip("dask.distributed")
    from fmu_fixtures import build
    from soa_fmu.sweep import main
    fmu = build("double_pendulum.toml", runtime="native")
    out = tmp_path / "r.nc"
    assert main([str(fmu), "--vary", "q0[1]=uniform(0.2,1)", "--n", "3", "--seed", "2",
                 "--stop-time", "0.3", "--step", "0.01", "--workers", "1", "--out", str(out),
                 "--no-progress", "--view", "2"]) == 0
    assert "r.sample2.html" in capsys.readouterr().out
    import xarray as xr
    with xr.open_dataset(out, engine="h5netcdf") as ds:
        q = np.stack([ds[f"q[{i}]"].values[2] for i in (1, 2)], axis=1)
    model = sf.load_model(example_path("double_pendulum.toml"))
    sc = scene_of(tmp_path / "r.sample2.html")
    P = f32(node(sc, "bodies", "lower")["position"], 3)
    np.testing.assert_allclose(P[-1], sf.frame_pose(model, q[-1], "lower")[1], atol=2e-6)
    assert main([str(fmu), "--vary", "q0[1]=uniform(0.2,1)", "--n", "3", "--stop-time", "0.3",
                 "--out", str(tmp_path / "x.nc"), "--view", "3"]) == 1
    assert "--view 3: no such sample (0..2)" in capsys.readouterr().err


def contact_model():
    """The double pendulum with one contact geometry of each shape on its lower link, turned and
    moved off its axis, all of them under a plane at z = -0.5 (so that the core reports each
    one's penetration depth: the distance of a gap it does not compute exactly)."""
    model = sf.load_model(example_path("double_pendulum.toml"))
    R = sf.spatial.rpy_to_matrix((0.3, -0.5, 0.2))
    hull = np.array([[0, 0, 0], [0.1, 0, 0], [0, 0.06, 0], [0, 0, 0.12], [0.03, 0.02, 0.02]])
    model.add_contact_sphere("foot", "lower", center=(0.0, 0.0, -1.0), radius=0.05)   # issue 19
    model.add_contact_geom("b", "lower", "box", center=(0.1, 0, -0.7), rotation=R,
                           half_extents=(0.1, 0.2, 0.3))
    model.add_contact_geom("c", "lower", "cylinder", center=(0, 0.05, -0.4), rotation=R.T,
                           radius=0.05, half_length=0.2)
    model.add_contact_geom("k", "lower", "capsule", center=(0.02, 0, -0.2), rotation=R,
                           radius=0.02, half_length=0.1)
    model.add_contact_geom("m", "lower", "mesh", center=(0, -0.1, -0.5), rotation=R.T @ R.T,
                           vertices=hull)
    model.add_contact_plane("ground", point=(0.0, 0.0, -0.5), normal=(0.0, 0.0, 1.0))
    return model


def drawn_lowest(sc, n, j) -> float:
    """The lowest world z of contact node ``n``'s shape at keyframe j, from the scene alone."""
    (it,) = n["items"]
    R, p = rotation(f32(n["quaternion"], 4))[j], f32(n["position"], 3)[j]
    M = np.array(it["matrix"]).reshape(4, 4).T
    Rw, pw = R @ M[:3, :3], p + R @ M[:3, 3]
    if it["kind"] == "mesh":
        return float((f32(sc["meshes"][it["mesh"]]["positions"], 3) @ Rw.T + pw)[:, 2].min())
    size = it["size"]
    if it["kind"] == "box":
        corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * size
        return float((corners / 2 @ Rw.T + pw)[:, 2].min())
    if it["kind"] == "sphere":
        return pw[2] - size[0]
    axis = Rw[:, 1]                                         # cylinder, capsule: along its y
    ends = pw[2] - size[1] / 2 * abs(axis[2])
    return ends - size[0] * (1.0 if it["kind"] == "capsule" else np.sqrt(1 - axis[2] ** 2))


def test_contact_geometry_is_drawn_where_the_engine_puts_it(tmp_path):
    """One node per contact geometry (group "contact", toggled in the page) with its shape's kind
    and size, in its frame on its body at every keyframe (forward kinematics composed with the
    geometry's placement), its lowest point where the C core's contact finds it (the depth of its
    pair with the floor), and a square per plane; the old balls on the bodies are gone."""
    model = contact_model()
    res = swing(model, 0.5)
    F = np.stack([np.zeros_like(res["t"]), np.zeros_like(res["t"]), 10 + res["t"]], axis=1)
    res.update({f"foot.force[{i + 1}]": F[:, i] for i in range(3)})
    sc = scene_of(sf.animate(model, res, tmp_path / "c.html"))
    assert sc["contact_opacity"] == 0.7                        # no visuals: the geometry stands out
    contact = [n["name"] for n in sc["nodes"] if n["group"] == "contact"]
    assert contact == ["foot", "b", "c", "k", "m", "ground"]
    assert not [i for n in sc["nodes"] if n["group"] != "contact" for i in n["items"] if i.get("contact")]
    kinds = {"foot": ("sphere", [0.05]), "b": ("box", [0.2, 0.4, 0.6]), "c": ("cylinder", [0.05, 0.4]),
             "k": ("capsule", [0.02, 0.2])}
    rows = keyframe_rows(res["t"])
    for g in model.contact_geoms:
        n = node(sc, "contact", g.name)
        (it,) = n["items"]
        assert it["contact"] and it["color"][:3] == [0.85, 0.15, 0.75]
        if g.shape == "mesh":
            V = f32(sc["meshes"][it["mesh"]]["positions"], 3)
            assert sorted(map(tuple, V)) == sorted(map(tuple, g.vertices.astype(np.float32)))
        else:
            assert (it["kind"], it["size"]) == kinds[g.name]
        P, R = f32(n["position"], 3), rotation(f32(n["quaternion"], 4))
        for j in (0, rows.size // 2, rows.size - 1):
            q = res["q"][rows[j]]
            Rb, pb = sf.frame_pose(model, q, "lower")
            np.testing.assert_allclose(P[j], pb + Rb @ g.center, atol=2e-6)
            np.testing.assert_allclose(R[j], Rb @ g.rotation, atol=2e-6)
            c = sf.contact_forces(model, q, np.zeros(model.nv))
            depth = c.depth[c.pairs.index((g.name, "ground"))]
            assert depth > 0.1
            np.testing.assert_allclose(drawn_lowest(sc, n, j), -0.5 - depth, atol=2e-6)
    arrow = node(sc, "forces", "foot")
    for j in (0, rows.size - 1):
        np.testing.assert_allclose(f32(arrow["position"], 3)[j],
                                   sf.frame_pose(model, res["q"][rows[j]], "tip")[1], atol=2e-6)
    R = rotation(f32(arrow["quaternion"], 4))
    np.testing.assert_allclose(R[:, :, 1], np.tile([0, 0, 1.0], (rows.size, 1)), atol=1e-6)
    L = f32(arrow["scale"], 3)[:, 1]                          # length ∝ |F|, the largest 0.35 × size
    np.testing.assert_allclose(L / L[-1], F[rows, 2] / F[rows[-1], 2], rtol=1e-6)
    plane = node(sc, "contact", "ground")
    np.testing.assert_allclose(f32(plane["position"], 3)[0], [0, 0, -0.5])
    Rp = rotation(f32(plane["quaternion"], 4))[0]
    np.testing.assert_allclose(Rp[:, 2], [0, 0, 1.0], atol=1e-6)       # the square's normal


def test_cli_reports_a_missing_mesh_as_a_warning_line(tmp_path, capsys):
    (tmp_path / "two.urdf").write_text(URDF)                 # no mesh next to it at all
    model = sf.load_model(tmp_path / "two.urdf")
    np.savez(tmp_path / "r.npz", **swing(model, 0.2))
    assert cli.main([str(tmp_path / "two.urdf"), str(tmp_path / "r.npz"), "-o",
                     str(tmp_path / "two.html")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3 and all(e.startswith("soa-view: warning: ") for e in err)
    assert any("gone.dae" in e for e in err) and any("part.stl" in e for e in err)
    kinds = [i["kind"] for i in node(scene_of(tmp_path / "two.html"), "bodies", "arm")["items"]]
    assert kinds == ["box", "cylinder"]


# ---------------------------------------------------------------- the FMU alone
KIT = """<robot name="kit">
  <material name="red"><color rgba="1 0 0 1"/></material>
  <link name="base"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial>
    <visual><geometry><mesh filename="package://kitpkg/meshes/part.stl"/></geometry><material name="red"/></visual>
    <collision><geometry><mesh filename="package://kitpkg/meshes/part.stl"/></geometry></collision></link>
  <link name="arm"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.5" ixy="0" ixz="0" iyz="0"/></inertial>
    <visual><origin xyz="0 0 0.5"/><geometry><mesh filename="../meshes/ball.stl" scale="2 2 2"/></geometry></visual></link>
  <link name="hand"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial>
    <visual><geometry><mesh filename="package://kitpkg/meshes/gone.dae"/></geometry></visual></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 1 0"/></joint>
  <joint name="j2" type="revolute"><parent link="arm"/><child link="hand"/><origin xyz="0 0 1"/><axis xyz="0 1 0"/></joint>
</robot>"""


def test_an_fmu_carries_its_meshes_and_is_viewed_alone_with_its_options(tmp_path, capsys):
    """A floating-base, lenient FMU (arm's inertia breaks the triangle inequality) with a contact
    floor (base's collision mesh a contact hull) of a URDF with a package:// mesh, a relative mesh
    of 20480 triangles and a missing one: the FMU holds the two
    as binary glTF, the big one simplified to the budget and still on its sphere; with the
    sources deleted, soa-view draws both from the FMU alone, where the engine puts the bodies."""
    import shutil

    import trimesh

    import build_fmu
    from soa_fmu.view.bundle import MAX_TRIANGLES
    ws = tmp_path / "ws" / "kitpkg"
    (ws / "meshes").mkdir(parents=True)
    (ws / "urdf").mkdir()
    box = trimesh.creation.box((0.1, 0.2, 0.3))
    box.export(ws / "meshes" / "part.stl")
    ball = trimesh.creation.icosphere(subdivisions=5, radius=0.1)            # 20480 triangles
    ball.export(ws / "meshes" / "ball.stl")
    (ws / "urdf" / "kit.urdf").write_text(KIT)
    with pytest.warns(UserWarning) as caught:
        model = sf.load_model(ws / "urdf" / "kit.urdf", floating_base=True, strict=False,
                              contact_floor=-0.5)
        fmu = build_fmu.build(ws / "urdf" / "kit.urdf", tmp_path / "Kit.fmu", floating_base=True,
                              strict=False, contact_floor=-0.5)
    assert any("gone.dae" in str(w.message) and "the FMU carries no shape" in str(w.message)
               for w in caught)
    with zipfile.ZipFile(fmu) as z:
        glbs = sorted(n for n in z.namelist() if n.endswith(".glb"))
        inside = z.read("resources/model/kit.urdf").decode()
    assert len(glbs) == 2 and all(g.startswith("resources/model/visuals/") for g in glbs)
    part, ball_ = (next(g[len("resources/model/"):] for g in glbs if k in g) for k in ("part", "ball"))
    assert f'filename="{part}"' in inside                                # package://
    assert f'filename="{ball_}" scale="2 2 2"' in inside                 # relative
    assert "package://kitpkg/meshes/gone.dae" in inside
    assert inside.count(part) == 1                         # (the collision mesh: a contact hull)

    res = swing(model, 0.5)
    write_fmpy_csv(tmp_path / "r.csv", res)                # nq = 7 + 2: the floating base
    shutil.rmtree(tmp_path / "ws")                         # only the FMU and the CSV are left
    capsys.readouterr()
    assert cli.main([str(fmu), str(tmp_path / "r.csv"), "-o", str(tmp_path / "k.html")]) == 0
    err = capsys.readouterr().err
    assert "gone.dae" in err and "part" not in err and "ball" not in err
    assert "Kit.fmu:resources/model/kit.urdf" in err       # warnings name the FMU, not a temp folder
    sc = scene_of(tmp_path / "k.html")
    assert len(sc["meshes"]) == 3                          # the two visuals, base's contact hull
    assert sc["camera"]["grid"]["centre"][2] == -0.5         # the FMU's contact floor
    base, arm_ = (node(sc, "bodies", n)["items"] for n in ("base", "arm"))
    assert base[0]["kind"] == "mesh" and base[0]["color"] == [1, 0, 0, 1]
    Vb = f32(sc["meshes"][base[0]["mesh"]]["positions"], 3)                   # small: as it was
    np.testing.assert_allclose(np.unique(Vb.round(6), axis=0), np.unique(box.vertices.round(6), axis=0),
                               atol=1e-6)
    M = np.array(arm_[0]["matrix"]).reshape(4, 4).T
    np.testing.assert_allclose(M[:3, :3], 2 * np.eye(3)) and np.testing.assert_allclose(M[:3, 3], [0, 0, 0.5])
    mesh = sc["meshes"][arm_[0]["mesh"]]
    faces = len(np.frombuffer(__import__("base64").b64decode(mesh["indices"]),
                              np.uint32 if mesh["wide"] else np.uint16)) // 3
    assert 0.9 * MAX_TRIANGLES <= faces <= MAX_TRIANGLES < len(ball.faces)
    Va = f32(mesh["positions"], 3)
    np.testing.assert_allclose(np.linalg.norm(Va, axis=1), 0.1, atol=2e-3)       # on the sphere
    np.testing.assert_allclose(np.ptp(Va, axis=0), 0.2, rtol=0.02)                # all of it
    for name in ("base", "arm", "hand"):                   # the floating base, as the FMU has it
        P = f32(node(sc, "bodies", name)["position"], 3)
        np.testing.assert_allclose(P[-1], sf.frame_pose(model, res["q"][-1], name)[1], atol=2e-6)
    again = scene_of(sf.animate(fmu, tmp_path / "r.csv", tmp_path / "k2.html"))   # sf.animate too
    assert again["meshes"] == sc["meshes"]
    import xarray as xr                                    # and a soa-sweep sample (--view K)
    qs = np.stack([res["q"], res["q"][::-1]])
    xr.Dataset({f"q[{i + 1}]": (("sample", "time"), qs[:, :, i]) for i in range(model.nq)},
               coords={"time": res["t"]}).to_netcdf(tmp_path / "s.nc", engine="h5netcdf")
    sample = scene_of(cli.view_sample(fmu, tmp_path / "s.nc", 1))
    np.testing.assert_allclose(f32(node(sample, "bodies", "hand")["position"], 3)[0],
                               sf.frame_pose(model, res["q"][-1], "hand")[1], atol=2e-6)
    assert cli.main([str(fmu), str(tmp_path / "r.csv"), "-o", str(tmp_path / "x.html"),
                     "--floating-base"]) == 1
    assert "Kit.fmu says in its resources/fmu.json how its model is read" in capsys.readouterr().err


def test_glb_keeps_the_triangles_and_the_colour(tmp_path):
    from soa_fmu.view.bundle import glb_bytes
    from soa_fmu.view.geometry import Mesh, read_mesh
    import trimesh
    t = trimesh.creation.cylinder(radius=0.05, height=0.4, sections=24)
    src = Mesh(t.vertices.astype(np.float32), t.faces.astype(np.uint32), (0.2, 0.4, 0.6, 1.0))
    (tmp_path / "c.glb").write_bytes(glb_bytes(src))
    back = read_mesh(tmp_path / "c.glb")
    np.testing.assert_allclose(back.color, src.color, atol=0.5 / 255)
    np.testing.assert_array_equal(back.vertices[back.faces], src.vertices[src.faces])


def test_first_view_frames_the_model_at_t0_and_the_floor_lies_under_it(tmp_path):
    (tmp_path / "pend.toml").write_text(TOML)
    model = sf.load_model(tmp_path / "pend.toml")
    res = swing(model, 2.0, amplitude=0.8)
    sc = scene_of(sf.animate(model, res, tmp_path / "p.html"))
    cam, rows = sc["camera"], keyframe_rows(res["t"])
    target = np.array(cam["target"])
    for name in ("upper", "lower", "tip"):                   # every frame at t0 inside the sphere
        assert np.linalg.norm(sf.frame_pose(model, res["q"][0], name)[1] - target) <= cam["radius"]
    tip_z = min(sf.frame_pose(model, res["q"][k], "tip")[1][2] for k in rows)
    r = 0.08                                                  # the tip ball: the lowest shape
    assert tip_z - r * np.sqrt(3) - 1e-9 <= cam["grid"]["centre"][2] <= tip_z - r + 1e-9
    model.add_contact_plane("ground", point=(0.0, 0.0, -3.0), normal=(0.0, 0.0, 1.0))
    sc = scene_of(sf.animate(model, res, tmp_path / "g.html"))
    assert sc["camera"]["grid"]["centre"][2] == -3.0          # the contact floor


MJCF = """<mujoco model="shapes">
  <asset><mesh name="wedge" vertex="0 0 0  0.2 0 0  0 0.1 0  0 0 0.3"/>
         <material name="blue" rgba="0 0 1 1"/></asset>
  <worldbody><geom name="floor" type="plane" size="2 2 0.1"/>
    <body name="a" pos="0 0 1"><joint name="h" type="hinge" axis="0 1 0" pos="0 0 0.2" ref="0.3"/>
      <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.04" material="blue"/>
      <geom type="box" size="0.1 0.1 0.1" group="3"/>
      <body name="b" pos="0.4 0 0"><joint name="s" type="slide" axis="1 0 0" pos="0.1 0 0"/>
        <joint name="h2" type="hinge" axis="0 0 1" pos="0.05 0.02 0"/>
        <geom type="mesh" mesh="wedge" pos="0.1 0 0" euler="10 20 30" rgba="1 0 0 1"/>
        <geom type="ellipsoid" size="0.05 0.08 0.03" pos="0.2 0.05 0"/></body></body>
  </worldbody></mujoco>"""


def test_mjcf_geoms_drawn_where_mujoco_puts_them(tmp_path):
    """An MJCF file's geoms of groups 0-2 (capsule, mesh, ellipsoid; a group-3 box is not drawn)
    sit in the page where MuJoCo's own kinematics puts them (geom_xpos, geom_xmat after
    mj_kinematics at the same qpos), with the material's or their own colour; from its FMU
    (the compiled .mjb) the same."""
    pytest.importorskip("mujoco")
    import mujoco

    import build_fmu
    from soa_fmu.io.mjcf import q_from_qpos
    (tmp_path / "s.xml").write_text(MJCF)
    model = sf.load_model(tmp_path / "s.xml")
    m = mujoco.MjModel.from_xml_path(str(tmp_path / "s.xml"))
    d = mujoco.MjData(m)
    d.qpos[:] = [0.7, 0.05, -0.4]
    mujoco.mj_kinematics(m, d)
    q = q_from_qpos(m, d.qpos)
    res = {"t": np.array([0.0, 1.0]), "q": np.tile(q, (2, 1))}
    with pytest.warns(UserWarning):
        fmu = build_fmu.build(tmp_path / "s.xml", tmp_path / "S.fmu")
    for page in (sf.animate(model, res, tmp_path / "s.html"), sf.animate(fmu, res, tmp_path / "f.html")):
        sc = scene_of(page)
        assert sc["contact_opacity"] == 0.35                  # contact geometry over the visuals: fainter
        contact = sorted(n["name"] for n in sc["nodes"] if n["group"] == "contact")
        assert contact == ["floor", "geom1", "geom2", "geom3", "geom4"]   # the MJCF geoms, its plane
        drawn = {}
        for name in ("a", "b"):
            n = node(sc, "bodies", name)
            P, R = f32(n["position"], 3)[0], rotation(f32(n["quaternion"], 4))[0]
            for it in n["items"]:
                M = np.array(it["matrix"]).reshape(4, 4).T
                drawn.setdefault(name, []).append((it["kind"], R @ M[:3, :3], P + R @ M[:3, 3], it["color"]))
        a, b = drawn["a"], drawn["b"]
        assert [k for k, *_ in a] == ["cylinder", "sphere", "sphere"] and [k for k, *_ in b] == ["mesh", "mesh"]
        cyl, mesh, ell = a[0], b[0], b[1]
        np.testing.assert_allclose(cyl[2], d.geom_xpos[1], atol=1e-6)        # capsule's centre
        np.testing.assert_allclose(cyl[1] @ [0, 1, 0], d.geom_xmat[1].reshape(3, 3)[:, 2], atol=1e-6)
        assert cyl[3] == [0, 0, 1, 1] and mesh[3] == [1, 0, 0, 1]
        for (kind, Rw, pw, _), g in ((mesh, 3), (ell, 4)):
            np.testing.assert_allclose(pw, d.geom_xpos[g], atol=1e-6)
        np.testing.assert_allclose(mesh[1], d.geom_xmat[3].reshape(3, 3), atol=1e-6)
        np.testing.assert_allclose(ell[1], d.geom_xmat[4].reshape(3, 3) @ np.diag([0.05, 0.08, 0.03]),
                                   atol=1e-6)                                  # the unit sphere, scaled
        ce = node(sc, "contact", "geom4")                     # the contact ellipsoid: the same
        (it,) = ce["items"]
        Pc, Rc = f32(ce["position"], 3)[0], rotation(f32(ce["quaternion"], 4))[0]
        M = np.array(it["matrix"]).reshape(4, 4).T
        assert it["kind"] == "sphere" and it["size"] == [1.0]
        np.testing.assert_allclose(Pc + Rc @ M[:3, 3], d.geom_xpos[4], atol=1e-6)
        np.testing.assert_allclose(Rc @ M[:3, :3], ell[1], atol=1e-6)
        V = f32(sc["meshes"][node(sc, "bodies", "b")["items"][0]["mesh"]]["positions"], 3)
        world = V @ mesh[1].T + mesh[2]
        np.testing.assert_allclose(np.sort(world, axis=0), np.sort(
            np.asarray(m.mesh_vert, float) @ d.geom_xmat[3].reshape(3, 3).T + d.geom_xpos[3], axis=0), atol=1e-5)
