"""MJCF reader: a MuJoCo model file -> :class:`~soa_fmu.model.Model`, through MuJoCo's own compiler.

The file is compiled by ``mujoco.MjModel.from_xml_path`` (the optional extra ``soa_fmu[mjcf]``), so
defaults classes, ``childclass``, ``<include>``, every frame form (``quat``, ``axisangle``,
``euler``, ``xyaxes``, ``zaxis``), ``<compiler angle=...>`` and inertias inferred from geoms are
MuJoCo's, not a re-implementation.  The compiled ``MjModel`` is then read (docs/mjcf.md):

- bodies in MuJoCo's order (parents first), placed by ``body_pos``/``body_quat``; joints ``hinge``
  (revolute), ``slide`` (prismatic), ``ball`` (spherical), ``free``; several joints in one body
  become a chain of joints through massless intermediate bodies ``<body>/<joint>``;
- a hinge or ball joint turns about its anchor ``jnt_pos``: our body frame is MuJoCo's body frame
  moved to that anchor (same axes); ``ref`` is folded into the joint's placement, so that a hinge or
  slide coordinate equals MuJoCo's ``qpos``;
- inertias as compiled (``body_mass``, ``body_ipos``, ``body_iquat``, ``body_inertia``);
- ``armature``, ``damping``, ``frictionloss`` -> ``limits["armature"/"damping"/"friction"]``,
  ``range`` of a limited joint -> ``limits["lower"/"upper"]`` (stops);
- ``gravity``; ``timestep`` -> ``model.timestep`` (the FMU's default step);
- sites -> named frames; ``equality connect``/``weld`` -> ball / weld constraints, active as
  ``eq_active0``; colliding sphere, capsule, ellipsoid, cylinder, box and mesh geoms of bodies and
  plane geoms of the world -> contact geometries and planes, where the engine has contact, each
  pair with the law of MuJoCo's solref/solimp/friction/condim for it (``mjcf_law``), explicit
  ``<pair>``s included;
- everything MuJoCo has and the engine does not (tendons, actuators, springs, other equalities,
  flexes, contact geoms, ...) -> ONE :class:`~soa_fmu.io.checks.ModelWarning` per kind naming the
  elements ignored.

Coordinates (the maps :func:`q_from_qpos`, :func:`qd_from_qvel`, :func:`qdd_from_qacc`,
:func:`qfrc_from_tau` and their inverses): hinge, slide and ball coordinates are MuJoCo's.  A free
joint's qpos is (position; quaternion w, x, y, z) and its qvel (linear velocity of the body origin in
WORLD axes; angular velocity in BODY axes); ours are (quaternion; position) and [ω; v] both in body
axes (ω first, as in the papers).
"""
from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field

import numpy as np

from .. import joints as J
from ..model import WORLD, Model, ModelError
from . import mjcf_law as L
from .checks import LENIENT_NOTE, MAX_FILE_BYTES, ModelWarning, inertia_problem, singular_joint

EXTRA = "mjcf"                       # pip install 'soa_fmu[mjcf]'
FREE, BALL, SLIDE, HINGE = 0, 1, 2, 3          # mjtJoint
CONNECT, WELD = 0, 1                            # mjtEq
PLANE_GEOM = 0                                  # mjtGeom -> our contact shapes
SHAPE_OF_GEOM = {2: "sphere", 3: "capsule", 4: "ellipsoid", 5: "cylinder", 6: "box", 7: "mesh"}
ROOT_JOINT = "root_joint"


def import_mujoco():
    """The ``mujoco`` module, or a ModelError naming the extra that installs it."""
    try:
        import mujoco
    except ImportError:
        raise ModelError("reading MJCF needs MuJoCo: pip install 'soa_fmu[mjcf]' (the extra "
                         f"{EXTRA!r} installs mujoco>=3)") from None
    return mujoco


def compile_mjcf(path: str | os.PathLike):
    """``mujoco.MjModel`` of an MJCF (``.xml``) or compiled (``.mjb``) file; a model MuJoCo refuses
    -> a ModelError with the file and MuJoCo's message in one line."""
    mujoco = import_mujoco()
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ModelError(f"{path}: no such model file")
    if not path.lower().endswith(".mjb") and os.path.getsize(path) > MAX_FILE_BYTES:
        raise ModelError(f"{path}: file larger than {MAX_FILE_BYTES // 2**20} MB; refusing to read "
                         "it as a model file")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if path.lower().endswith(".mjb"):
                m = mujoco.MjModel.from_binary_path(path)
            elif hasattr(mujoco, "MjSpec"):      # compiler warnings as Python warnings, no log file
                m = mujoco.MjSpec.from_file(path).compile()
            else:
                m = mujoco.MjModel.from_xml_path(path)
    except Exception as e:       # mujoco raises ValueError (XML/compile errors) or others
        raise ModelError(f"{path}: MuJoCo refused the model: {' '.join(str(e).split())}") from None
    for w in caught:
        warnings.warn(f"{path}: MuJoCo: {' '.join(str(w.message).split())}", ModelWarning,
                      stacklevel=3)
    return m


def mjb_bytes(path: str | os.PathLike) -> bytes:
    """The file compiled by MuJoCo as its binary model (``.mjb``): one file holding what the MJCF
    includes (other XML files, meshes), loadable by :func:`compile_mjcf` (FMU bundles)."""
    import tempfile
    mujoco = import_mujoco()
    m = compile_mjcf(path)
    with tempfile.TemporaryDirectory(prefix="soa_fmu_mjb_") as d:
        out = os.path.join(d, "model.mjb")
        mujoco.mj_saveModel(m, out, None)
        with open(out, "rb") as fh:
            return fh.read()


def quat_to_matrix(q) -> np.ndarray:
    """Rotation matrix of a quaternion (w, x, y, z) (normalized first), MuJoCo's and ours."""
    w, x, y, z = np.asarray(q, dtype=float) / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def _axis_angle(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rotation by ``angle`` about the unit ``axis`` (Rodrigues)."""
    K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K


# ---------------------------------------------------------------- coordinate maps (docs/mjcf.md)
def _free_joints(m) -> list[tuple[int, int]]:
    """(qposadr, dofadr) of every free joint of MjModel ``m``."""
    return [(int(m.jnt_qposadr[j]), int(m.jnt_dofadr[j])) for j in range(m.njnt)
            if m.jnt_type[j] == FREE]


def q_from_qpos(m, qpos) -> np.ndarray:
    """Our q of the model read from ``m`` from MuJoCo's ``qpos``: a free joint's (x, y, z, qw, qx,
    qy, qz) becomes (qw, qx, qy, qz, x, y, z); every other coordinate is the same."""
    q = np.array(qpos, dtype=float)
    for a, _ in _free_joints(m):
        q[a:a + 4], q[a + 4:a + 7] = qpos[a + 3:a + 7], qpos[a:a + 3]
    return q


def qpos_from_q(m, q) -> np.ndarray:
    """Inverse of :func:`q_from_qpos`."""
    qpos = np.array(q, dtype=float)
    for a, _ in _free_joints(m):
        qpos[a:a + 3], qpos[a + 3:a + 7] = q[a + 4:a + 7], q[a:a + 4]
    return qpos


def _free_map(m, q, x, inverse: bool) -> np.ndarray:
    """x = T y on each free joint's 6 dofs (MuJoCo <- ours), or y = Tᵀ x with ``inverse``:
    T [ω; v_b] = [R v_b; ω] with R the body's rotation in world (q's quaternion)."""
    out = np.array(x, dtype=float)
    for a, d in _free_joints(m):
        R = quat_to_matrix(q[a:a + 4])
        if inverse:                      # MuJoCo (v_w, ω) -> ours (ω, Rᵀ v_w)
            out[d:d + 3], out[d + 3:d + 6] = x[d + 3:d + 6], R.T @ x[d:d + 3]
        else:                            # ours (ω, v_b) -> MuJoCo (R v_b, ω)
            out[d:d + 3], out[d + 3:d + 6] = R @ x[d + 3:d + 6], x[d:d + 3]
    return out


def qd_from_qvel(m, q, qvel) -> np.ndarray:
    """Our qd from MuJoCo's ``qvel`` at our configuration ``q``: a free joint's (v in world, ω in
    body) becomes (ω, Rᵀ v), both in body axes."""
    return _free_map(m, q, qvel, inverse=True)


def qvel_from_qd(m, q, qd) -> np.ndarray:
    """Inverse of :func:`qd_from_qvel`."""
    return _free_map(m, q, qd, inverse=False)


def qdd_from_qacc(m, q, qd, qacc) -> np.ndarray:
    """Our qdd from MuJoCo's ``qacc``: for a free joint, d/dt (Rᵀ v_w) = Rᵀ a_w − ω × v_b."""
    out = _free_map(m, q, qacc, inverse=True)
    for _, d in _free_joints(m):
        out[d + 3:d + 6] -= np.cross(qd[d:d + 3], qd[d + 3:d + 6])
    return out


def qacc_from_qdd(m, q, qd, qdd) -> np.ndarray:
    """Inverse of :func:`qdd_from_qacc`: a_w = R (v̇_b + ω × v_b)."""
    x = np.array(qdd, dtype=float)
    for _, d in _free_joints(m):
        x[d + 3:d + 6] += np.cross(qd[d:d + 3], qd[d + 3:d + 6])
    return _free_map(m, q, x, inverse=False)


def qfrc_from_tau(m, q, tau) -> np.ndarray:
    """MuJoCo's generalized force from our τ: a free joint's (n_b, f_b) becomes (R f_b, n_b) (force
    in world, torque in body: the dual of the velocity map, T orthogonal)."""
    return _free_map(m, q, tau, inverse=False)


def tau_from_qfrc(m, q, qfrc) -> np.ndarray:
    """Inverse of :func:`qfrc_from_tau`."""
    return _free_map(m, q, qfrc, inverse=True)


def mass_matrix_from_mujoco(m, q, M_mj) -> np.ndarray:
    """Our M from MuJoCo's dense M (``mj_fullM``) at our q: M = Tᵀ M_mj T."""
    T = np.column_stack([qvel_from_qd(m, q, e) for e in np.eye(m.nv)])
    return T.T @ M_mj @ T


# ---------------------------------------------------------------- reading the compiled model
def disabled(m, *flags: str) -> bool:
    """True when the file switches off any of the named MuJoCo features (``<flag gravity=
    "disable"/>``: ``GRAVITY``; ``LIMIT``, ``DAMPER``, ...); a flag this MuJoCo lacks is on."""
    mujoco = import_mujoco()
    bits = (getattr(mujoco.mjtDisableBit, f"mjDSBL_{f}", 0) for f in flags)
    return any(int(m.opt.disableflags) & int(b) for b in bits)


def _names(m, kind: str, count: int, fallback: str) -> list[str]:
    """Names of the ``count`` objects of a kind (``body``, ``jnt``, ...); unnamed ones
    ``<fallback><id>``."""
    mujoco = import_mujoco()
    obj = getattr(mujoco.mjtObj, f"mjOBJ_{kind.upper()}")
    return [mujoco.mj_id2name(m, obj, i) or f"{fallback}{i}" for i in range(count)]


@dataclass
class MjcfModel:
    """A compiled MJCF file and the names the reader gives its bodies (for TOML includes)."""

    path: str
    m: object                                     # mujoco.MjModel
    body_names: list[str] = field(default_factory=list)   # MuJoCo bodies 1..nbody-1
    names: list[str] = field(default_factory=list)        # every body the reader adds

    @property
    def name(self) -> str:
        return _model_name(self.m, self.path)


def _model_name(m, path: str) -> str:
    """``<mujoco model=...>`` (the first string of MuJoCo's name buffer), else the file's stem."""
    text = bytes(m.names).split(b"\0", 1)[0].decode("utf-8", "replace")
    return text or os.path.splitext(os.path.basename(path))[0]


def parse_mjcf(path: str | os.PathLike) -> MjcfModel:
    """Compile an MJCF file and name its bodies (no Model yet)."""
    path = os.fspath(path)
    m = compile_mjcf(path)
    mj = MjcfModel(path, m, _names(m, "body", m.nbody, "body")[1:])
    jnames = _names(m, "joint", m.njnt, "joint")
    for b in range(1, m.nbody):
        n, a = int(m.body_jntnum[b]), int(m.body_jntadr[b])
        mj.names += [f"{mj.body_names[b - 1]}/{jnames[j]}" for j in range(a, a + n - 1)]
        mj.names.append(mj.body_names[b - 1])
    return mj


def _warn(path: str, context: str, what: str, names: list[str], note: str) -> None:
    if names:
        listed = ", ".join(repr(n) for n in names[:6]) + (f" and {len(names) - 6} more"
                                                          if len(names) > 6 else "")
        warnings.warn(f"{context}{path}: {len(names)} {what} ignored ({note}): {listed}",
                      ModelWarning, stacklevel=3)


def warn_unsupported(mj: MjcfModel, context: str = "") -> None:
    """One ModelWarning per kind of MJCF element the engine does not model, naming them."""
    m, path = mj.m, mj.path
    jn = _names(m, "joint", m.njnt, "joint")
    _warn(path, context, "tendons", _names(m, "tendon", m.ntendon, "tendon"),
          "no tendons in the engine")
    _warn(path, context, "actuators", _names(m, "actuator", m.nu, "actuator"),
          "drive the joints through the joint forces tau; a motor's force is gear × ctrl")
    _warn(path, context, "free-joint armature",
          [jn[j] for j in range(m.njnt) if m.jnt_type[j] == FREE
           and np.any(m.dof_armature[m.jnt_dofadr[j]:m.jnt_dofadr[j] + 6] != 0)],
          "MuJoCo's acts on the world-axis linear acceleration, which is not a rotor: set to 0")
    _warn(path, context, "ball-joint limits",
          [jn[j] for j in range(m.njnt) if m.jnt_type[j] == BALL and m.jnt_limited[j]],
          "MuJoCo's cone limit; no stop on a spherical joint")
    _warn(path, context, "joint springs", [jn[j] for j in range(m.njnt) if m.jnt_stiffness[j] != 0],
          "stiffness/springref: no joint springs in the engine")
    other = [f"{n} ({t})" for i, n in enumerate(_names(m, "equality", m.neq, "equality"))
             if (t := int(m.eq_type[i])) not in (CONNECT, WELD)]
    _warn(path, context, "equality constraints", other, "only connect and weld are read")
    _warn(path, context, "flexes", _names(m, "flex", getattr(m, "nflex", 0), "flex"),
          "no deformable flexcomp/composite bodies from MJCF")
    bn = ["world"] + mj.body_names
    _warn(path, context, "mocap bodies", [bn[b] for b in range(1, m.nbody) if m.body_mocapid[b] >= 0],
          "read as bodies fixed at their initial pose")
    _warn(path, context, "gravity compensations",
          [bn[b] for b in range(m.nbody) if getattr(m, "body_gravcomp", np.zeros(m.nbody))[b] != 0],
          "gravcomp")
    fluid = [k for k in ("density", "viscosity") if getattr(m.opt, k) != 0] + \
        (["wind"] if np.any(m.opt.wind) else [])
    _warn(path, context, "fluid options", fluid, "no fluid forces in the engine")
    _warn(path, context, "plugins", [f"plugin{i}" for i in range(getattr(m, "nplugin", 0))],
          "MuJoCo plugins")


def colliding_geoms(m) -> np.ndarray:
    """Indices of the geoms MuJoCo's contype/conaffinity bits let collide with some other geom."""
    ct, ca = np.asarray(m.geom_contype), np.asarray(m.geom_conaffinity)
    pairs = (ct[:, None] & ca[None, :]) | (ca[:, None] & ct[None, :])
    np.fill_diagonal(pairs, 0)
    return np.flatnonzero(pairs.any(axis=1))


def _geom_filter(m) -> "np.ndarray":
    """MuJoCo's pair filter over geoms (True: the pair may collide): contype/conaffinity bits,
    never within one weld body, not parent and child weld bodies unless the parent is the world
    (filterparent), not the body pairs of <exclude>."""
    ct, ca = np.asarray(m.geom_contype), np.asarray(m.geom_conaffinity)
    ok = ((ct[:, None] & ca[None, :]) | (ca[:, None] & ct[None, :])) != 0
    weld = np.asarray(m.body_weldid)[np.asarray(m.geom_bodyid)]
    pweld = np.asarray(m.body_weldid)[np.asarray(m.body_parentid)[weld]]
    ok &= weld[:, None] != weld[None, :]
    if not disabled(m, "FILTERPARENT"):
        child = ((weld[:, None] == pweld[None, :]) | (weld[None, :] == pweld[:, None]))
        ok &= ~(child & (weld[:, None] != 0) & (weld[None, :] != 0))
    body = np.asarray(m.geom_bodyid)
    for sig in np.asarray(m.exclude_signature, dtype=np.int64).ravel():
        b1, b2 = int(sig) >> 16, int(sig) & 0xFFFF
        pair = ((body[:, None] == b1) & (body[None, :] == b2)) | ((body[:, None] == b2)
                                                                    & (body[None, :] == b1))
        ok &= ~pair
    return ok


def _add_contacts(model: Model, mj: MjcfModel, bnames, offset, R0, t0, prefix: str) -> None:
    """Colliding geoms of moving or welded bodies -> contact geometries (sphere, capsule, ellipsoid,
    cylinder, box, mesh: its hull), colliding planes of MuJoCo's world -> contact planes (when the engine has
    contact: ``Model.add_contact_geom``); the pairs MuJoCo's filter refuses (_geom_filter) are
    excluded, its explicit ``<pair>``s included; every pair gets the law constants of MuJoCo's
    parameters for it (_add_pair_laws).  One warning names every colliding geom left out
    (height fields, the world's non-plane geoms)."""
    m, path = mj.m, mj.path
    names = _names(m, "geom", m.ngeom, "geom")
    explicit = {(int(m.pair_geom1[i]), int(m.pair_geom2[i])): i for i in range(m.npair)}
    colliding = np.union1d(colliding_geoms(m), np.array([g for p in explicit for g in p], dtype=int))
    if disabled(m, "CONTACT", "CONSTRAINT"):      # the file itself has no contact
        return
    has_contact = hasattr(model, "add_contact_geom") and not model.constraints
    left, read = [], {}
    allowed = _geom_filter(m)
    for g in colliding if has_contact else ():
        b, kind = int(m.geom_bodyid[g]), int(m.geom_type[g])
        name = prefix + names[g]
        size = np.asarray(m.geom_size[g], dtype=float)
        try:
            if kind in SHAPE_OF_GEOM and b != 0:
                shape = SHAPE_OF_GEOM[kind]
                kw = dict(center=m.geom_pos[g] - offset[b], rotation=quat_to_matrix(m.geom_quat[g]),
                          exclude={prefix + names[h] for h in colliding
                                   if h != g and not allowed[g, h]})
                if shape in ("sphere", "capsule", "cylinder"):
                    kw.update(radius=size[0], half_length=size[1] if shape != "sphere" else 0.0)
                elif shape == "box":
                    kw.update(half_extents=size)
                elif shape == "ellipsoid":
                    kw.update(radii=size)
                else:
                    i = int(m.geom_dataid[g])
                    a, n = int(m.mesh_vertadr[i]), int(m.mesh_vertnum[i])
                    kw.update(vertices=np.asarray(m.mesh_vert[a:a + n], dtype=float))
                model.add_contact_geom(name, bnames[b], shape, **kw)
            elif kind == PLANE_GEOM and b == 0:
                normal = R0 @ quat_to_matrix(m.geom_quat[g])[:, 2]
                model.add_contact_plane(name, point=t0 + R0 @ m.geom_pos[g], normal=normal)
            else:
                left.append(names[g])
                continue
        except ValueError as e:
            raise ModelError(f"{path}: geom {names[g]!r}: {e}") from None
        read[g] = name
    if not has_contact:
        _warn(path, "", "contact geoms", [names[g] for g in colliding],
              "contact on a model with closure constraints is not supported" if model.constraints
              else "no contact in this engine; their mass is in the bodies' inertias")
        return
    _warn(path, "", "contact geoms", left, "height fields and the world's geoms other than planes "
          "are not contact elements; their mass is in the bodies' inertias")
    _add_pair_laws(model, m, read, allowed, explicit)
    if read:
        shown = [names[g] for g in read]
        warnings.warn(f"{path}: {len(read)} contact geoms read as contact geometries and planes "
                      "with the engine's compliant law, its constants per pair from MuJoCo's "
                      "solref, solimp, friction and condim (docs/mjcf.md): "
                      + ", ".join(repr(n) for n in shown[:6])
                      + (f" and {len(shown) - 6} more" if len(shown) > 6 else ""),
                      ModelWarning, stacklevel=3)


def _add_pair_laws(model: Model, m, read: dict, allowed: np.ndarray, explicit: dict) -> None:
    """Every pair of geoms read (``read``: geom -> contact name) that may touch gets its own law
    constants (``Model.add_contact_pair``; io/mjcf_law.py): those of MuJoCo's parameters for it —
    an explicit ``<pair>``'s, else the two geoms' mixed as MuJoCo mixes them; a geom–plane pair
    MuJoCo's filter refuses gets no force (stiffness, dissipation and friction 0; the engine has
    every geometry meet every plane).  Explicit pairs may touch whatever the filter says."""
    planes = [g for g in read if int(m.geom_type[g]) == PLANE_GEOM]
    geoms = [g for g in read if int(m.geom_type[g]) != PLANE_GEOM]
    gravity = float(np.linalg.norm(m.opt.gravity))
    refsafe = not disabled(m, "REFSAFE")
    iw = np.asarray(m.body_invweight0, dtype=float).reshape(-1, 2)[:, 0]
    points = {g: L.RESTING_POINTS[SHAPE_OF_GEOM[int(m.geom_type[g])]] for g in geoms}
    todo = [(g, p) for g in geoms for p in planes]
    todo += [(g, h) for i, g in enumerate(geoms) for h in geoms[i + 1:]
             if int(m.geom_bodyid[g]) != int(m.geom_bodyid[h])]
    for g, h in todo:
        ipair = explicit.get((g, h), explicit.get((h, g)))
        if ipair is None and not allowed[g, h]:
            if h in planes:
                model.add_contact_pair(read[g], read[h], stiffness=0.0, dissipation=0.0,
                                       friction=0.0)
            continue
        condim, solref, solimp, mu = (L.pair_params(m, ipair) if ipair is not None
                                      else L.mixed_params(m, g, h))
        tran = iw[int(m.geom_bodyid[g])] + iw[int(m.geom_bodyid[h])]
        n = points[g] if h in planes else min(points[g], points[h])
        cone = L.cone_scale(mu, condim, int(m.opt.cone) == 0, float(m.opt.impratio))
        law = L.hunt_crossley(solref, solimp, mu, condim, tran, n, gravity, float(m.opt.timestep),
                              refsafe, cone)
        model.add_contact_pair(read[g], read[h], explicit=ipair is not None, **law)


def add_mjcf(model: Model, mj: MjcfModel, *, prefix: str = "", parent: str = WORLD, rotation=None,
             translation=(0.0, 0.0, 0.0), floating_base: bool = False, strict: bool = True) -> None:
    """Add the compiled model's bodies, sites and connect/weld equalities to ``model`` (names
    prefixed by ``prefix``); MuJoCo's world is (``parent``, rotation, translation).
    ``floating_base``: the one top-level body without joints gets a free joint ``<prefix>root_joint``."""
    m, path = mj.m, mj.path
    R0 = np.eye(3) if rotation is None else np.asarray(rotation, dtype=float)
    t0 = np.asarray(translation, dtype=float)
    jnames = _names(m, "joint", m.njnt, "joint")
    bnames = [parent] + [prefix + n for n in mj.body_names]
    offset = np.zeros((m.nbody, 3))          # our body frame = MuJoCo's moved to this point
    roots = [b for b in range(1, m.nbody) if m.body_parentid[b] == 0 and m.body_jntnum[b] == 0]
    if floating_base and len(roots) != 1:
        raise ModelError(f"{path}: floating_base needs exactly one top-level body without joints, "
                         f"found {len(roots)}")
    for b in range(1, m.nbody):
        p = int(m.body_parentid[b])
        # the body's placement in its parent: MuJoCo's, seen from our parent frame
        R = quat_to_matrix(m.body_quat[b])
        t = m.body_pos[b] - offset[p]
        if p == 0:
            R, t = R0 @ R, t0 + R0 @ t
        at = bnames[p]
        n, a = int(m.body_jntnum[b]), int(m.body_jntadr[b])
        chain = list(range(a, a + n))
        if not chain:
            chain = [None]
        anchor = np.zeros(3)
        for i, j in enumerate(chain):
            last = i == len(chain) - 1
            name = bnames[b] if last else f"{bnames[b]}/{jnames[j]}"
            if j is None:
                joint, jname, limits = ((J.Free(), prefix + ROOT_JOINT, {}) if floating_base
                                        and b in roots else (J.Fixed(), None, {}))
            elif m.jnt_type[j] == FREE:      # MuJoCo: qpos is the pose in world; body_pos unused
                if p != 0 or n != 1:
                    raise ModelError(f"{path}: joint {jnames[j]!r}: a free joint must be the only "
                                     "joint of a top-level body")
                joint, jname, limits, R, t = J.Free(), prefix + jnames[j], _dof_limits(m, j), R0, t0
            else:
                joint, jname, limits, R, t, anchor = _joint(m, j, prefix + jnames[j], R, t)
            if last:
                mass, com, inertia, physical = _inertia(m, b, anchor, path, bnames[b], strict)
            else:
                mass, com, inertia, physical = 0.0, np.zeros(3), None, True
            try:
                model.add_body(name, at, joint, joint_name=jname, rotation=R, translation=t,
                               mass=mass, com=com, inertia=inertia, limits=limits,
                               physical=physical)
            except ValueError as e:
                raise ModelError(f"{path}: body {bnames[b]!r}: {e}") from None
            at, R, t = name, np.eye(3), -anchor      # the next joint of the chain: from this anchor
        offset[b] = anchor
    _add_sites(model, mj, bnames, offset, R0, t0, prefix)
    _add_equalities(model, mj, bnames, offset, R0, t0, prefix)
    _add_contacts(model, mj, bnames, offset, R0, t0, prefix)


def _joint(m, j: int, name: str, R: np.ndarray, t: np.ndarray):
    """Our hinge/slide/ball joint for MuJoCo joint j: (joint, name, limits, rotation, translation,
    anchor).  (R, t) place MuJoCo's body frame as left by the previous joints of the body; the joint
    frame is moved to this joint's anchor ``jnt_pos`` and ``ref`` folded into its placement, so that
    our coordinate is MuJoCo's qpos (MuJoCo turns by qpos − qpos0 about the anchor)."""
    jtype = int(m.jnt_type[j])
    anchor = np.array(m.jnt_pos[j], dtype=float)
    axis = np.array(m.jnt_axis[j], dtype=float)
    ref = float(m.qpos0[m.jnt_qposadr[j]])
    t = t + R @ anchor
    if jtype == HINGE:
        joint, R = J.Revolute(axis), R @ _axis_angle(axis / np.linalg.norm(axis), -ref)
    elif jtype == SLIDE:
        joint, t = J.Prismatic(axis), t - ref * (R @ axis) / np.linalg.norm(axis)
    elif jtype == BALL:
        joint = J.Spherical()
    else:
        raise ModelError(f"joint {name!r}: unknown MuJoCo joint type {jtype}")
    limits = _dof_limits(m, j)
    if jtype in (HINGE, SLIDE) and m.jnt_limited[j] and not disabled(m, "LIMIT", "CONSTRAINT"):
        limits["lower"], limits["upper"] = (float(x) for x in m.jnt_range[j])
    return joint, name, limits, R, t, anchor


def _dof_limits(m, j: int) -> dict:
    """armature (not on a free joint: warned), damping, frictionloss of joint j (the same on each
    of its dofs in MJCF); 0 where the file switches the feature off (``<flag damper="disable"/>``)."""
    d = int(m.jnt_dofadr[j])
    armature = 0.0 if m.jnt_type[j] == FREE else float(m.dof_armature[d])
    damping = 0.0 if disabled(m, "DAMPER", "PASSIVE") else float(m.dof_damping[d])
    friction = 0.0 if disabled(m, "FRICTIONLOSS", "CONSTRAINT") else float(m.dof_frictionloss[d])
    return {"armature": armature, "damping": damping, "friction": friction}


def _inertia(m, b: int, anchor: np.ndarray, path: str, name: str, strict: bool):
    """(mass, com, inertia about the com, physical) of MuJoCo body b in our body frame (MuJoCo's
    moved to ``anchor``): J = R(iquat) diag(body_inertia) R(iquat)ᵀ."""
    mass = float(m.body_mass[b])
    Ri = quat_to_matrix(m.body_iquat[b])
    inertia = Ri @ np.diag(m.body_inertia[b]) @ Ri.T
    inertia = 0.5 * (inertia + inertia.T)
    try:
        problem = inertia_problem(mass, inertia, strict)
    except ModelError as e:
        raise ModelError(f"{path}: body {name!r}: {e}") from None
    if problem:
        warnings.warn(f"{path}: body {name!r}: {problem}{LENIENT_NOTE}", ModelWarning, stacklevel=3)
    return mass, np.array(m.body_ipos[b], dtype=float) - anchor, inertia, not problem


def _site_frame(m, s: int, offset: np.ndarray, R0, t0):
    """(body index in MuJoCo, rotation, translation) of site s in our body frame (world sites placed
    in MuJoCo's world)."""
    b = int(m.site_bodyid[s])
    R, t = quat_to_matrix(m.site_quat[s]), np.array(m.site_pos[s], dtype=float) - offset[b]
    if b == 0:
        R, t = R0 @ R, t0 + R0 @ t
    return b, R, t


def _add_sites(model: Model, mj: MjcfModel, bnames, offset, R0, t0, prefix: str) -> None:
    """Every site as a named frame ``<prefix><site>`` (``<prefix><site>.site`` where a body has its
    name, with a warning)."""
    m = mj.m
    renamed = []
    for s, sname in enumerate(_names(m, "site", m.nsite, "site")):
        b, R, t = _site_frame(m, s, offset, R0, t0)
        name = prefix + sname
        if name in model.frames or name in bnames or name == WORLD:
            name += ".site"
            renamed.append(sname)
        try:
            model.add_frame(name, bnames[b], R, t)
        except ValueError as e:
            raise ModelError(f"{mj.path}: site {sname!r}: {e}") from None
    _warn(mj.path, "", "site names", renamed, "each shares a body's name: the frame is "
          "'<site>.site'")


def _add_equalities(model: Model, mj: MjcfModel, bnames, offset, R0, t0, prefix: str) -> None:
    """``connect`` -> a ball constraint between the two anchors, ``weld`` -> a weld constraint
    between frame (data[3:6], relpose quat data[6:10]) on body 1 and (data[0:3], identity) on body
    2 (MuJoCo's mj_instantiateEquality); sites given instead of bodies are used as they are."""
    mujoco = import_mujoco()
    m = mj.m
    site = int(mujoco.mjtObj.mjOBJ_SITE)
    objtype = getattr(m, "eq_objtype", None)
    sites = {s: n for s, n in enumerate(_names(m, "site", m.nsite, "site"))}
    for e, ename in enumerate(_names(m, "equality", m.neq, "equality")):
        kind = int(m.eq_type[e])
        if kind not in (CONNECT, WELD):
            continue
        name = prefix + ename
        frames = []
        for k, (obj, pos) in enumerate(((m.eq_obj1id[e], 3 * (kind == WELD)),
                                        (m.eq_obj2id[e], 3 * (kind == CONNECT)))):
            fname = f"{name}.{'ab'[k]}"
            if objtype is not None and int(objtype[e]) == site:
                b, R, t = _site_frame(m, int(obj), offset, R0, t0)
            else:
                b = int(obj)
                R = quat_to_matrix(m.eq_data[e][6:10]) if kind == WELD and k == 0 else np.eye(3)
                t = np.array(m.eq_data[e][pos:pos + 3], dtype=float) - offset[b]
                if b == 0:
                    R, t = R0 @ R, t0 + R0 @ t
            model.add_frame(fname, bnames[b], R, t)
            frames.append(fname)
        try:
            model.add_constraint(name, "ball" if kind == CONNECT else "weld", *frames,
                                 active=bool(m.eq_active0[e])
                                 and not disabled(m, "EQUALITY", "CONSTRAINT"))
        except ValueError as e:
            raise ModelError(f"{mj.path}: equality {ename!r}: {e}") from None


def load_mjcf(path: str | os.PathLike, floating_base: bool = False, strict: bool = True) -> Model:
    """Read an MJCF file (or a compiled ``.mjb``) into a new Model (``model.source = path``,
    ``model.timestep`` = MuJoCo's ``timestep``); see the module docstring."""
    mj = parse_mjcf(path)
    m = mj.m
    warn_unsupported(mj)
    gravity = np.zeros(3) if disabled(m, "GRAVITY") else np.array(m.opt.gravity, dtype=float)
    model = Model(mj.name, gravity=gravity)
    model.source = mj.path
    model.timestep = float(m.opt.timestep)
    add_mjcf(model, mj, floating_base=floating_base, strict=strict)
    bad = singular_joint(model)
    if bad is not None:
        b = model.bodies[bad[0]]
        raise ModelError(f"{mj.path}: joint {b.joint_name!r} (body {b.name!r}) {bad[1]}")
    if model.nq == m.nq:
        q0 = q_from_qpos(m, m.qpos0)
        if not np.array_equal(q0, model.neutral_configuration()):
            model.initial_q = q0
    return model
