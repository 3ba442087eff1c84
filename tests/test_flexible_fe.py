"""Finite-element side of flexible links (seed 000 §4, soa_fmu.flexible): the built-in beam against
Euler–Bernoulli closed forms, the rigid-body mass properties and null space, the generalized mass
matrix against the kinetic energy of the nodal velocities (seed 000 (4.3)), the modal reduction
against scipy's generalized eigensolver, and every error of load_fe."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

from soa_fmu.flexible import FEModel, FlexibleError, beam, check_fe, load_fe, reduce, rigid_map

# a steel-like rectangular section, EI_y != EI_z, torsion and axial stiff enough to be far apart
L, RHO_A, EA, EI_Y, EI_Z, GJ, RHO_J = 1.5, 2.7, 1.4e7, 95.0, 380.0, 210.0, 6.0e-5
BETA_L = (1.8751040687, 4.6940911330)


def cantilever(elements: int = 10) -> FEModel:
    return beam(L, RHO_A, EA, EI_Y, EI_Z, GJ, elements, rho_J=RHO_J)


def clamped_frequencies(fe: FEModel) -> np.ndarray:
    """All clamped eigenfrequencies by scipy (the independent reference)."""
    n = fe.nodes.shape[0]
    free = np.setdiff1d(np.arange(6 * n), np.arange(6 * fe.pinned, 6 * fe.pinned + 6))
    w = scipy.linalg.eigh(fe.K[np.ix_(free, free)], fe.M[np.ix_(free, free)], eigvals_only=True)
    return np.sqrt(np.clip(w, 0, None))


def frame_model(rng: np.random.Generator, n: int = 7) -> tuple[FEModel, dict]:
    """A random 3-D frame: node k joined to a random earlier node by one beam element (beam() with
    elements=1, rotated into place); returns the model and its mass properties summed per element."""
    nodes = rng.normal(size=(n, 3))
    M = np.zeros((6 * n, 6 * n))
    K = np.zeros((6 * n, 6 * n))
    mass, first, second = 0.0, np.zeros(3), np.zeros((3, 3))    # Σ m, Σ m c, Σ inertia about origin
    for k in range(1, n):
        a = int(rng.integers(k))
        d = nodes[k] - nodes[a]
        le = np.linalg.norm(d)
        R, _ = np.linalg.qr(np.column_stack([d, rng.normal(size=(3, 2))]))
        R *= np.sign(R[:, 0] @ d)                               # first column along +d
        R[:, 2] *= np.linalg.det(R)
        rA, rJ = rng.uniform(0.5, 2.0), rng.uniform(1e-3, 1e-2)
        el = beam(le, rA, *rng.uniform(1.0, 3.0, size=4), 1, rho_J=rJ)
        T = np.kron(np.eye(4), R.T)                             # local = Rᵀ global, per 3-vector
        idx = np.r_[6 * a:6 * a + 6, 6 * k:6 * k + 6]
        M[np.ix_(idx, idx)] += T.T @ el.M @ T
        K[np.ix_(idx, idx)] += T.T @ el.K @ T
        e = d / le
        c = 0.5 * (nodes[a] + nodes[k])
        m = rA * le
        mass += m
        first += m * c
        second += (m * le**2 / 12 * (np.eye(3) - np.outer(e, e)) + rJ * le * np.outer(e, e)
                   + m * (c @ c * np.eye(3) - np.outer(c, c)))
    com = first / mass
    inertia = second - mass * (com @ com * np.eye(3) - np.outer(com, com))
    fe = FEModel(nodes=nodes, M=M, K=K, pinned=int(rng.integers(n)))
    return fe, {"mass": mass, "com": com, "inertia": inertia}


# ------------------------------------------------------------------------------------------------
# the beam

def test_beam_mass_properties():
    r = reduce(cantilever(), 4)
    assert r.mass == pytest.approx(RHO_A * L, rel=1e-13)
    np.testing.assert_allclose(r.com, [L / 2, 0, 0], atol=1e-13)
    np.testing.assert_allclose(r.inertia, np.diag([RHO_J * L, RHO_A * L**3 / 12, RHO_A * L**3 / 12]),
                               rtol=1e-12, atol=1e-14)


def test_beam_default_rho_J_is_the_homogeneous_section():
    fe = beam(L, RHO_A, EA, EI_Y, EI_Z, GJ, 3)
    assert reduce(fe, 1).inertia[0, 0] == pytest.approx(RHO_A * (EI_Y + EI_Z) / EA * L, rel=1e-12)


def test_cantilever_frequencies_match_closed_forms():
    """10 elements: bending in both planes (βL = 1.8751, 4.6941), first axial and torsional modes."""
    r = reduce(cantilever(10), 0)
    f = r.frequencies
    expected = {"bending x-z (EI_y)": [b**2 * np.sqrt(EI_Y / (RHO_A * L**4)) for b in BETA_L],
                "bending x-y (EI_z)": [b**2 * np.sqrt(EI_Z / (RHO_A * L**4)) for b in BETA_L],
                "axial": [np.pi / 2 * np.sqrt(EA / RHO_A) / L],
                "torsion": [np.pi / 2 * np.sqrt(GJ / RHO_J) / L]}
    for name, omegas in expected.items():
        for w in omegas:
            err = np.min(np.abs(f - w)) / w
            assert err < 5e-3, (name, w, err)
            if name.startswith("bending"):
                assert err < 2e-4, (name, w, err)
    # the four lowest are the first bending modes, in order of stiffness
    np.testing.assert_allclose(f[:2], sorted(expected["bending x-z (EI_y)"][:1]
                                             + expected["bending x-y (EI_z)"][:1]), rtol=2e-4)


def test_cantilever_mode_shapes_are_planar_bending():
    """The first mode bends in x–z (EI_y < EI_z): uz and ry only, the tip the largest, ry = −dw/dx."""
    r = reduce(cantilever(10), 2)
    s = r.shapes[:, :, 0]                                       # spatial order [rx ry rz ux uy uz]
    assert np.abs(s[:, [0, 2, 3, 4]]).max() < 1e-10 * np.abs(s).max()
    np.testing.assert_array_equal(s[0], 0)
    assert np.argmax(np.abs(s[:, 5])) == 10 and s[10, 5] > 0
    assert np.all(s[1:, 1] < 0)                                 # w rising along x: ry = −w' < 0
    s1 = r.shapes[:, :, 1]
    assert np.abs(s1[:, [0, 1, 3, 5]]).max() < 1e-10 * np.abs(s1).max()


def test_cantilever_static_tip_deflection_is_exact():
    """Hermite elements are nodally exact: δ = P L³ / (3 EI) under a tip force (from the reduced
    stiffness with modes == 0, the coordinates being the nodal displacements)."""
    r = reduce(cantilever(4), 0)
    f = np.zeros(r.nmodes)
    f[6 * 3 + 1] = 1.0                                          # node 4 (coordinate block 3), +y
    f[6 * 3 + 2] = 1.0                                          # and +z
    u = np.linalg.solve(r.stiffness, f)
    assert u[6 * 3 + 1] == pytest.approx(L**3 / (3 * EI_Z), rel=1e-12)
    assert u[6 * 3 + 2] == pytest.approx(L**3 / (3 * EI_Y), rel=1e-12)


# ------------------------------------------------------------------------------------------------
# reduction

@pytest.mark.parametrize("which", ["beam", "frame"])
def test_modes_are_mass_normalized_and_rigid_modes_are_free(which):
    fe = cantilever(6) if which == "beam" else frame_model(np.random.default_rng(1))[0]
    Bt = rigid_map(fe.nodes)
    assert np.abs(fe.K @ Bt).max() < 1e-12 * np.abs(fe.K).max()
    r = reduce(fe, 5)
    m = r.nmodes
    Psi = r.shapes[:, [3, 4, 5, 0, 1, 2], :].reshape(-1, m)     # back to FE order
    np.testing.assert_allclose(Psi.T @ fe.M @ Psi, np.eye(m), atol=1e-12)
    np.testing.assert_allclose(Psi.T @ fe.K @ Psi, np.diag(r.frequencies**2),
                               atol=1e-9 * r.frequencies[-1]**2)
    np.testing.assert_allclose(r.stiffness, np.diag(r.frequencies**2), rtol=1e-14)
    np.testing.assert_array_equal(r.shapes[r.pinned], 0)
    assert np.all(np.diff(r.frequencies) >= 0)
    np.testing.assert_allclose(r.frequencies, clamped_frequencies(fe)[:m], rtol=1e-8)


def test_random_frame_mass_properties():
    fe, props = frame_model(np.random.default_rng(2))
    r = reduce(check_fe(fe, "frame"), 3)
    assert r.mass == pytest.approx(props["mass"], rel=1e-13)
    np.testing.assert_allclose(r.com, props["com"], atol=1e-13)
    np.testing.assert_allclose(r.inertia, props["inertia"], atol=1e-12)


@pytest.mark.parametrize("modes", [0, 3])
@pytest.mark.parametrize("which", ["beam", "frame"])
def test_kinetic_energy_of_the_nodal_velocities(which, modes):
    """½ xᵀ 𝓜 x = ½ u̇ᵀ m u̇ with u̇ the nodal velocities of x = [ω; v; η̇] built node by node:
    u̇(j) = v + ω × Q(j) + Σ Ψ_u(j) η̇, ṙ(j) = ω + Σ Ψ_r(j) η̇ (seed 000 (4.3))."""
    rng = np.random.default_rng(3)
    fe = cantilever(5) if which == "beam" else frame_model(rng)[0]
    r = reduce(fe, modes)
    MM = r.mass_matrix
    assert MM.shape == (6 + r.nmodes, 6 + r.nmodes)
    np.testing.assert_array_equal(MM, MM.T)
    assert np.linalg.eigvalsh(MM)[0] > 0
    for _ in range(5):
        x = rng.normal(size=6 + r.nmodes)
        w, v, eta = x[:3], x[3:6], x[6:]
        ud = np.concatenate([np.concatenate([v + np.cross(w, Q) + r.shapes[j, 3:] @ eta,
                                             w + r.shapes[j, :3] @ eta])
                             for j, Q in enumerate(fe.nodes)])
        assert 0.5 * x @ MM @ x == pytest.approx(0.5 * ud @ fe.M @ ud, rel=1e-12)


def test_all_nodal_dofs_when_modes_is_zero():
    fe = cantilever(4)
    r0 = reduce(fe, 0, damping_ratio=0.02)
    nf = 6 * 4
    assert r0.nmodes == nf and r0.shapes.shape == (5, 6, nf)
    np.testing.assert_allclose(r0.frequencies, clamped_frequencies(fe), rtol=1e-10)
    np.testing.assert_array_equal(r0.stiffness, fe.K[6:, 6:])
    np.testing.assert_allclose(r0.mass_matrix[6:, 6:], fe.M[6:, 6:], rtol=1e-15)
    # the same body as the full modal basis: 𝓜, K, D transform by diag(I, Φ)
    rm = reduce(fe, nf, damping_ratio=0.02)
    Psi = rm.shapes[:, [3, 4, 5, 0, 1, 2], :].reshape(-1, nf)
    Phi = Psi[6:]                                               # η_nodal = Φ η_modal
    T = scipy.linalg.block_diag(np.eye(6), Phi)
    np.testing.assert_allclose(T.T @ r0.mass_matrix @ T, rm.mass_matrix, atol=1e-10)
    np.testing.assert_allclose(Phi.T @ r0.damping @ Phi, np.diag(0.04 * rm.frequencies),
                               atol=1e-9 * rm.frequencies[-1])
    np.testing.assert_allclose(rm.damping, np.diag(0.04 * rm.frequencies), rtol=1e-15)
    assert r0.mass == pytest.approx(rm.mass) and np.allclose(r0.inertia, rm.inertia, atol=1e-14)


def test_reduce_rejects_bad_arguments():
    fe = cantilever(2)
    with pytest.raises(FlexibleError, match=r"modes must be an integer in 0\.\.12 .*got 13"):
        reduce(fe, 13)
    with pytest.raises(FlexibleError, match="modes"):
        reduce(fe, -1)
    with pytest.raises(FlexibleError, match="damping_ratio"):
        reduce(fe, 2, damping_ratio=float("nan"))


@pytest.mark.parametrize("key,value", [("length", 0.0), ("rho_A", -1.0), ("EA", float("inf")),
                                       ("EI_y", 0), ("EI_z", None), ("GJ", -2.0), ("rho_J", 0.0),
                                       ("elements", 0), ("elements", 2.5)])
def test_beam_rejects_bad_parameters(key, value):
    args = dict(length=L, rho_A=RHO_A, EA=EA, EI_y=EI_Y, EI_z=EI_Z, GJ=GJ, elements=3, rho_J=RHO_J)
    args[key] = value
    with pytest.raises(FlexibleError, match=f"beam: {key} must be"):
        beam(**args)


# ------------------------------------------------------------------------------------------------
# load_fe

def save(path, **arrays):
    np.savez(path, **arrays)
    return path


def test_load_fe_round_trip(tmp_path):
    fe, _ = frame_model(np.random.default_rng(4))
    p = save(tmp_path / "frame.npz", nodes=fe.nodes, M=fe.M, K=fe.K, pinned=fe.pinned)
    got = load_fe(p)
    np.testing.assert_array_equal(got.nodes, fe.nodes)
    for key in ("M", "K"):                                      # symmetrized on load
        A = getattr(fe, key)
        np.testing.assert_array_equal(getattr(got, key), 0.5 * (A + A.T))
    assert got.pinned == fe.pinned and isinstance(got.pinned, int)
    np.testing.assert_array_equal(reduce(got, 4).mass_matrix, reduce(check_fe(fe), 4).mass_matrix)


def _bad_cases():
    fe = cantilever(3)                                          # 4 nodes, 24 dofs
    good = dict(nodes=fe.nodes, M=fe.M, K=fe.K, pinned=np.int64(0))
    asym = fe.M.copy()
    asym[7, 2] += 3e-2
    indefinite = fe.M.copy()
    indefinite[9, 9] = -1.0
    K_indef = fe.K.copy()
    K_indef[12:18, 12:18] -= 1e9 * np.eye(6)
    nan = fe.K.copy()
    nan[13, 13] = np.nan
    grounded = fe.K + 1e-3 * np.abs(fe.K).max() * np.eye(24)
    M_heavy = fe.M.copy()
    M_heavy[6, 6] += 1.0                                        # an x-only mass: not a rigid body's
    two = beam(L, RHO_A, EA, EI_Y, EI_Z, GJ, 2, rho_J=RHO_J)  # + a point mass at node 3, unattached
    pin = dict(nodes=np.vstack([two.nodes, [0, 1, 0]]), pinned=np.int64(0),
               M=scipy.linalg.block_diag(two.M, np.eye(6)),
               K=scipy.linalg.block_diag(two.K, np.zeros((6, 6))))
    return {
        "missing": ({k: v for k, v in good.items() if k != "K"}, r"missing key 'K'"),
        "nodes shape": (good | {"nodes": fe.nodes[:, :2]}, r"nodes must have shape \(n, 3\)"),
        "M shape": (good | {"M": fe.M[:-1]}, r"M must have shape \(24, 24\) for 4 nodes"),
        "K shape": (good | {"K": fe.K[:, :6]}, r"K must have shape \(24, 24\)"),
        "NaN": (good | {"K": nan}, r"K has a non-finite entry \(row 13, node 2\)"),
        "nodes NaN": (good | {"nodes": np.where(np.arange(12).reshape(4, 3) == 7, np.nan, fe.nodes)},
                      r"nodes has a non-finite entry \(node 2\)"),
        "asymmetric": (good | {"M": asym}, r"M is not symmetric \(max \|M - M\^T\| = 0\.03 at row 7"),
        "indefinite M": (good | {"M": indefinite}, r"M is not positive definite"),
        "indefinite K": (good | {"K": K_indef}, r"K is not positive semi-definite"),
        "grounded K": (good | {"K": grounded}, r"K resists a rigid-body motion"),
        "M not rigid": (good | {"M": M_heavy}, r"M does not move rigidly"),
        "mechanism": (pin, r"K clamped at the pinned node 0 is singular "
                           r"\(a mechanism or an unattached node at node 3"),
        "pinned range": (good | {"pinned": np.int64(4)}, r"pinned must be a node index in 0\.\.3 "),
        "pinned float": (good | {"pinned": np.float64(1.0)}, r"pinned must be one integer"),
        "pinned array": (good | {"pinned": np.array([0, 1])}, r"pinned must be one integer"),
        "string": (good | {"M": np.array(["a"])}, r"M must be a real array"),
    }


@pytest.mark.parametrize("case", list(_bad_cases()))
def test_load_fe_errors_name_the_file_and_the_key(case, tmp_path):
    arrays, message = _bad_cases()[case]
    p = save(tmp_path / "panel.npz", **arrays)
    with pytest.raises(FlexibleError, match=r"panel\.npz: " + message):
        load_fe(p)


def test_load_fe_unreadable_files(tmp_path):
    with pytest.raises(FlexibleError, match=r"nope\.npz: no such file"):
        load_fe(tmp_path / "nope.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(FlexibleError, match=r"junk\.npz: not a readable \.npz file"):
        load_fe(tmp_path / "junk.npz")
    np.savez(tmp_path / "obj.npz", nodes=np.array([{"a": 1}], dtype=object))
    with pytest.raises(FlexibleError, match=r"obj\.npz: not a readable"):
        load_fe(tmp_path / "obj.npz")
