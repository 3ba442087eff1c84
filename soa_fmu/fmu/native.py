"""The native FMU flavour: the model as a C source, the C sources an FMU carries, and the compiler.

A native FMU is the C core (``soa_fmu/core``) + the FMI wrapper (``soa_fmu/fmu/native``: the
shared instance, and the FMI 2.0 or the FMI 3.0 interface) + ``fmu_model.c``, generated here from the :class:`~soa_fmu.model.Model` and the same
:class:`~soa_fmu.fmu.variables.VariableTable` that modelDescription.xml is written from: the
soa_model buffers (every table of ``soa.h``, as the Python Model packed them), the variables with
their start values, the frames and the group offsets.  Nothing is read from files at run time.

The FMI headers (2.0 and 3.0) come from fmpy (``fmpy/c-code``), which ships them.
:func:`compile_library` builds ``binaries/<platform>/<id>.so`` with the C compiler on PATH; the
same sources go into the FMU's ``sources/`` so that an importer can compile it for its own target
(a source-code FMU).
"""
from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from ..contact import contact_names, sphere_pairs
from ..model import Model
from .variables import METHODS, ControllerTable, VariableTable

PACKAGE = Path(__file__).resolve().parents[1]
CORE_DIR = PACKAGE / "core"
WRAPPER_DIR = Path(__file__).resolve().parent / "native"
MODEL_SOURCE = "fmu_model.c"         # (core/model.c is the engine's Model / Data)
CFLAGS = ("-std=c99", "-O3", "-fPIC", "-shared", "-fvisibility=hidden", "-Wall", "-Wextra",
          "-Wno-missing-field-initializers", "-Wl,-z,defs")


# the controller's groups (fmu.h: vr_kp ... vr_sampled), and those of them that are per dof
CONTROLLER_VECTORS = ("Kp", "Kd", "q_from", "q_to", "q_ref", "qd_ref", "qdd_ref", "q_des")
CONTROLLER_GROUPS = CONTROLLER_VECTORS[:4] + (
    "move_start", "move_duration", "q_ref", "qd_ref", "qdd_ref", "q_des", "ff_dissipation",
    "trajectory", "sampled")


class NativeBuildError(Exception):
    """The native library could not be built (no compiler, a compiler error)."""


def fmi_headers(fmi: int = 2) -> Path:
    """The folder of the FMI 2.0 (or 3.0) headers shipped by fmpy."""
    import fmpy
    d = Path(fmpy.__file__).parent / "c-code"
    if not (d / f"fmi{fmi}Functions.h").is_file():
        raise NativeBuildError(f"fmpy {fmpy.__version__} ships no fmi{fmi}Functions.h in {d}")
    return d


def platform_folder(fmi: int = 2) -> str:
    """The platform folder of this machine (binaries/<platform>): FMI 2.0's linux64 ...,
    FMI 3.0's platform tuple x86_64-linux ..."""
    if fmi == 3:
        import platform
        arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(platform.machine().lower(),
                                                          platform.machine().lower())
        osname = {"darwin": "darwin", "win32": "windows"}.get(sys.platform, "linux")
        return f"{arch}-{osname}"
    bits = "64" if sys.maxsize > 2 ** 32 else "32"
    if sys.platform.startswith("linux"):
        return "linux" + bits
    if sys.platform == "darwin":
        return "darwin" + bits
    if sys.platform == "win32":
        return "win" + bits
    raise NativeBuildError(f"no FMI platform folder for {sys.platform}")


def library_suffix() -> str:
    return {"darwin": ".dylib", "win32": ".dll"}.get(sys.platform, ".so")


# ---------------------------------------------------------------- model.c
def _c_string(s: str) -> str:
    """A C string literal (UTF-8 bytes; non-printable and non-ASCII bytes as octal escapes)."""
    out = []
    for b in s.encode("utf-8"):
        c = chr(b)
        if c in '"\\':
            out.append("\\" + c)
        elif 32 <= b < 127 and c != "?":      # '?' avoids trigraphs
            out.append(c)
        else:
            out.append(f"\\{b:03o}")
    return '"' + "".join(out) + '"'


def _c_double(x: float) -> str:
    if math.isnan(x):
        return "NAN"
    if math.isinf(x):
        return "INFINITY" if x > 0 else "-INFINITY"
    return repr(float(x))


def _array(ctype: str, name: str, values, per_line: int = 8) -> str:
    vals = list(values)
    if not vals:                              # C99 has no empty arrays
        vals = [0]
    fmt = _c_double if ctype == "double" else (lambda v: str(int(v)))
    lines = [", ".join(fmt(v) for v in vals[i:i + per_line]) for i in range(0, len(vals), per_line)]
    return f"static const {ctype} {name}[{len(vals)}] = {{\n    " + ",\n    ".join(lines) + "\n};\n"


def _strings(name: str, values) -> str:
    vals = [_c_string(v) for v in values] or ['""']
    return f"static const char *const {name}[{len(vals)}] = {{\n    " + ",\n    ".join(vals) + "\n};\n"


def model_source(model: Model, table: VariableTable, identifier: str, guid: str,
                 interfaces: tuple[str, ...] = ("cs",)) -> str:
    """``fmu_model.c``: the soa_fmu_description of this model and variable table, for the
    interfaces ``cs`` (Co-Simulation) and ``me`` (Model Exchange; needs a table with states)."""
    if "me" in interfaces and not table.states:
        raise ValueError("a Model Exchange FMU needs the variable table with states")
    views = model.core.views()       # every buffer of soa.h's model tables, in table order
    ints = [n for n, a in views.items() if a.dtype.kind == "i"]
    reals = [n for n, a in views.items() if a.dtype.kind == "f"]
    parts = [f"/* The model {model.name!r} for the native FMU {identifier!r} (generated by "
             "build_fmu.py from the variable table; do not edit). */\n",
             "#include <math.h>\n\n#include \"fmu.h\"\n\n"]
    for n in ints:
        parts.append(_array("int", f"M_{n}", np.asarray(views[n]).ravel()))
    for n in reals:
        parts.append(_array("double", f"M_{n}", np.asarray(views[n]).ravel()))
    parts.append(f"static const int *const INTS[] = {{{', '.join('M_' + n for n in ints)}}};\n")
    parts.append(f"static const double *const REALS[] = {{{', '.join('M_' + n for n in reals)}}};\n\n")
    parts.append(_strings("JOINTS", [b.joint_name for b in model.bodies]))
    parts.append(_strings("BODIES", [b.name for b in model.bodies]))
    parts.append(_strings("POSITIONS", model.position_names))
    parts.append(_strings("VELOCITIES", model.velocity_names))
    parts.append(_strings("CONSTRAINTS", [c.name for c in model.constraints]))
    parts.append(_strings("CONTACTS", contact_names(model)))

    labels = {"tau": model.velocity_names, "qd0": model.velocity_names, "qd": model.velocity_names,
              "qdd": model.velocity_names, "q0": model.position_names, "q": model.position_names,
              **{g: model.velocity_names for g in CONTROLLER_VECTORS}}
    types = {"Real": "SOA_FMU_REAL", "Boolean": "SOA_FMU_BOOLEAN", "String": "SOA_FMU_STRING"}
    causal = {"parameter": "SOA_FMU_PARAMETER", "input": "SOA_FMU_INPUT",
              "output": "SOA_FMU_OUTPUT", "local": "SOA_FMU_LOCAL"}
    n3 = {first: n for _, first, n, _ in table.arrays()}
    rows = []
    for v in table.variables:
        if v.group in labels:
            label = labels[v.group][v.index]
        elif ":" in v.group:
            label = v.group.split(":", 1)[1]
        else:
            label = ""
        if v.type == "Real":
            start = float("nan") if v.start is None else float(v.start)
        elif v.type == "Boolean":
            start = 1.0 if v.start else 0.0
        else:
            start = 0.0
        rows.append(f"    {{{_c_string(v.name)}, {_c_string(label)}, {types[v.type]}, "
                    f"{causal[v.causality]}, {int(v.variability == 'fixed')}, "
                    f"{int(v.group in ('max_step', 'rtol', 'atol', 'move_duration'))}, {_c_double(start)}, "
                    f"{n3.get(v.value_reference, 0)}}}")
    parts.append("static const soa_fmu_variable VARS[] = {\n" + ",\n".join(rows) + "\n};\n\n")

    frames = []
    for f in table.frames:
        k, R, p = model.frame_placement(f)
        frames.append(f"    {{{k}, {{{', '.join(_c_double(x) for x in np.ravel(R))}}}, "
                      f"{{{', '.join(_c_double(x) for x in p)}}}, {table.groups[f'f_ext:{f}'][0]}, "
                      f"{table.groups[f'pose:{f}'][0]}}}")
    if frames:
        parts.append("static const soa_fmu_frame FRAMES[] = {\n" + ",\n".join(frames) + "\n};\n\n")
    cons = [f"    {{{table.groups[f'u:{c.name}'][0]}, {table.groups[f'f:{c.name}'][0]}, "
            f"{table.groups[f'err:{c.name}'][0]}, {table.groups[f'active:{c.name}'][0]}}}"
            for c in model.constraints]
    if cons:
        parts.append("static const soa_fmu_constraint CONS[] = {\n" + ",\n".join(cons) + "\n};\n\n")

    def vr(group: str) -> int:
        return table.groups[group][0] if group in table.groups else -1

    integrator = next((v.start for v in table.variables if v.group == "integrator"), "auto")
    fields = {
        "identifier": _c_string(identifier), "guid": _c_string(guid),
        "digest": _c_string(table.digest()),
        "nb": model.nbodies, "nq": model.nq, "nv": model.nv, "nc": len(model.constraints),
        "nm": model.max_modes,
        "ints": "INTS", "reals": "REALS", "joint_names": "JOINTS", "body_names": "BODIES",
        "position_names": "POSITIONS", "velocity_names": "VELOCITIES",
        "constraint_names": "CONSTRAINTS", "nvars": len(table.variables), "nreal": table.n_real,
        "nboolean": table.n_boolean, "nstring": table.n_string, "vars": "VARS",
        **{f"vr_{g}": vr(g) for g in ("g", "q0", "qd0", "max_step", "rtol", "atol")},
        "vr_stab": vr("stabilization"),
        **{f"vr_{g}": vr(g) for g in ("tau", "q", "qd", "qdd", "energy", "integrator")},
        "nframes": len(frames), "frames": "FRAMES" if frames else "NULL",
        "constraints": "CONS" if cons else "NULL",
        "method": METHODS.index(integrator),
        **{f"vr_{g}": vr(g) for g in ("inertial", "damping", "friction")},   # physical parameters
        **{f"vr_{g}": vr(g) for g in ("armature", "stop_stiffness", "stop_damping",
                                      "stops_enabled", "stop_tau", "integrator_used",
                                      "error_control")},
        "interfaces": ("cs" in interfaces) + 2 * ("me" in interfaces),
        "vr_qdot": vr("qdot"),
        "nsph": len(model.contact_spheres), "npln": len(model.contact_planes),
        "nssp": len(sphere_pairs(model)), "contact_names": "CONTACTS",
        **{f"vr_{g}": vr(g) for g in ("contact_law", "plane_offset", "contact_force",
                                      "contact_depth", "pair_depth", "stop_margin")},
        "role": "SOA_FMU_CONTROLLER" if isinstance(table, ControllerTable) else "SOA_FMU_PLANT",
        **{f"vr_{g.lower()}": vr(g) for g in CONTROLLER_GROUPS},
    }
    parts.append("const soa_fmu_description soa_fmu_model = {\n"
                 + ",\n".join(f"    .{k} = {v}" for k, v in fields.items()) + "\n};\n")
    return "".join(parts)


def check_layout(table: VariableTable) -> None:
    """The wrapper's assumptions about the table (instance.c, model_exchange.c): max_step,
    rtol, atol adjacent; q, qd, qdd contiguous and before energy, energy before the frame poses;
    der(q) between qdd and energy."""
    g = table.groups
    if isinstance(table, ControllerTable):      # (controller.c: each group by its own reference)
        return
    assert g["rtol"][0] == g["max_step"][0] + 1 and g["atol"][0] == g["rtol"][0] + 1
    assert g["qd"][0] == g["q"][0] + g["q"][1] and g["qdd"][0] == g["qd"][0] + g["qd"][1]
    assert all(g[k][0] < g["energy"][0] for k in g if k.startswith("f:"))
    assert all(g[k][0] > g["energy"][0] for k in g if k.startswith("pose:"))
    if "qdot" in g:
        assert g["qdd"][0] < g["qdot"][0] < g["energy"][0] and g["qdot"][1] == g["q"][1]


# ---------------------------------------------------------------- sources and the library
def source_files(fmi: int = 2) -> list[Path]:
    """The engine's C sources a native FMU carries (core + the shared instance + the FMI 2.0 or
    3.0 interface), without model.c."""
    other = "fmi3" if fmi == 2 else "fmi2"
    return sorted(CORE_DIR.glob("*.[ch]")) + sorted(
        p for p in WRAPPER_DIR.glob("*.[ch]") if not p.name.startswith(other))


def compiler() -> str:
    """The C compiler: $CC, else cc or gcc on PATH."""
    for cand in ([os.environ["CC"]] if os.environ.get("CC") else []) + ["cc", "gcc", "clang"]:
        path = shutil.which(cand.split()[0]) if cand else None
        if path:
            return path
    raise NativeBuildError("no C compiler found (looked for $CC, cc, gcc, clang on PATH); install "
                           "gcc, or build with --runtime python")


# The engine (core + wrapper: every source but the generated model) does not depend on the model:
# it is compiled once into object files kept in <cache>/native/<key>/ (<cache>: $SOA_FMU_CACHE_DIR,
# else $XDG_CACHE_HOME/soa_fmu, else ~/.cache/soa_fmu), key = a hash of the compiler (its path
# and --version), the flags, the FMI headers and every engine source, so that any change compiles
# anew.  Each FMU build then compiles only fmu_model.c and links.
OBJECT_FLAGS = tuple(f for f in CFLAGS if f not in ("-shared", "-Wl,-z,defs"))
LINK_FLAGS = ("-shared", "-Wl,-z,defs") if sys.platform.startswith("linux") else ("-shared",)
BUILD_STATS = {"engine_compiled": 0, "engine_reused": 0}    # counts of this process (tests)


def cache_root() -> Path:
    """The cache folder: compiled engine objects here, the pythonfmu flavour's engine copies
    (build_fmu's boot module carries this function's source)."""
    if os.environ.get("SOA_FMU_CACHE_DIR"):
        return Path(os.environ["SOA_FMU_CACHE_DIR"])
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "soa_fmu"


_CC_VERSION: dict[str, str] = {}


def engine_key(engine: dict[str, bytes], cc: str, fmi: int) -> str:
    """The cache key of the engine's objects: compiler, flags, headers, sources."""
    import hashlib
    if cc not in _CC_VERSION:
        r = subprocess.run([cc, "--version"], capture_output=True, text=True)
        _CC_VERSION[cc] = r.stdout
    h = hashlib.sha256()
    for part in (cc, _CC_VERSION[cc], " ".join(OBJECT_FLAGS), str(fmi)):
        h.update(part.encode() + b"\0")
    headers = fmi_headers(fmi)
    for name, data in sorted(engine.items()) + sorted(
            (p.name, p.read_bytes()) for p in headers.glob(f"fmi{fmi}*.h")):
        h.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return h.hexdigest()[:24]


def _compile_objects(cc: str, src: Path, names: list[str], out: Path, fmi: int) -> None:
    """Each source in src -> out/<stem>.o, run side by side (two at a time)."""
    procs, err = [], ""
    pending = list(names)
    while pending or procs:
        while pending and len(procs) < max(2, os.cpu_count() or 1):
            n = pending.pop(0)
            procs.append(subprocess.Popen(
                [cc, *OBJECT_FLAGS, f"-I{src}", f"-I{fmi_headers(fmi)}", "-c", str(src / n), "-o",
                 str(out / (Path(n).stem + ".o"))], stderr=subprocess.PIPE, text=True))
        p = procs.pop(0)
        _, e = p.communicate()
        if p.returncode != 0 and not err:
            err = next((ln for ln in e.splitlines() if "error" in ln), e.strip()) or "failed"
    if err:
        raise NativeBuildError(f"compiling the native FMU failed: {err[:300]}")


def engine_objects(engine: dict[str, bytes], fmi: int = 2) -> list[Path]:
    """The engine's object files (compiled now if the cache has none for this key)."""
    cc = compiler()
    folder = cache_root() / "native" / f"fmi{fmi}-{engine_key(engine, cc, fmi)}"
    stems = sorted(Path(n).stem + ".o" for n in engine if n.endswith(".c"))
    if folder.is_dir() and all((folder / o).is_file() for o in stems):
        BUILD_STATS["engine_reused"] += 1
        return [folder / o for o in stems]
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".partial-", dir=folder.parent))
    try:
        for name, data in engine.items():
            (tmp / name).write_bytes(data)
        _compile_objects(cc, tmp, sorted(n for n in engine if n.endswith(".c")), tmp, fmi)
        for name in engine:
            (tmp / name).unlink()
        try:
            os.replace(tmp, folder)           # atomic; another build may have won the race
        except OSError:
            if not folder.is_dir():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    BUILD_STATS["engine_compiled"] += 1
    return [folder / o for o in stems]


def compile_library(sources: dict[str, bytes], identifier: str, fmi: int = 2) -> bytes:
    """Compile the FMU's sources (name -> bytes, flat) into the shared library; its bytes.  The
    engine's objects come from the cache (engine_objects); only the model source compiles here."""
    cc = compiler()
    engine = {n: b for n, b in sources.items() if n != MODEL_SOURCE}
    try:
        objects = engine_objects(engine, fmi)
    except OSError:                            # no writable cache: everything in a temporary one
        objects = None
    with tempfile.TemporaryDirectory(prefix="soa_fmu_native_") as d:
        src = Path(d, "sources")
        src.mkdir()
        for name, data in sources.items():
            (src / name).write_bytes(data)
        if objects is None:
            _compile_objects(cc, src, sorted(n for n in engine if n.endswith(".c")), Path(d), fmi)
            objects = sorted(Path(d).glob("*.o"))
        _compile_objects(cc, src, [MODEL_SOURCE], Path(d), fmi)
        out = Path(d, identifier + library_suffix())
        cmd = [cc, *LINK_FLAGS, str(Path(d, Path(MODEL_SOURCE).stem + ".o")),
               *map(str, objects), "-o", str(out), "-lm"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0 or not out.is_file():
            first = next((ln for ln in r.stderr.splitlines() if "error" in ln), r.stderr.strip())
            raise NativeBuildError(f"linking the native FMU failed: {first[:300]}")
        return out.read_bytes()
