"""The native FMU flavour: the model as a C source, the C sources an FMU carries, and the compiler.

A native FMU is the C core (``soa_fmu/core``) + the FMI wrapper (``soa_fmu/fmu/native``: the
shared instance, and the FMI 2.0 or the FMI 3.0 interface) + ``fmu_model.c``, generated here from the :class:`~soa_fmu.model.Model` and the same
:class:`~soa_fmu.fmu.variables.VariableTable` that modelDescription.xml is written from: the
soa_model buffers (every table of ``soa.h``, as the Python Model packed them), the variables with
their start values, the frames and the group offsets.  Nothing is read from files at run time.

The FMI headers (2.0 and 3.0) come from fmpy (``fmpy/c-code``), which ships them.
:func:`compile_libraries` builds ``binaries/<folder>/<id>.<so|dll|dylib>`` for each of
:data:`PLATFORMS` (x86-64 and aarch64 Linux with glibc >= 2.17, x86-64 Windows, x86-64 and arm64
macOS) with zig cc, the cross compiler of the ``ziglang`` package; the same sources go into the
FMU's ``sources/`` so that an importer can compile it for its own target (a source-code FMU).
"""
from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..contact import contact_names, hull_vertex_count, sphere_pairs
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


@dataclass(frozen=True)
class Platform:
    """A binary a native FMU carries: its name (FMI 3.0's platform tuple), FMI 2.0's folder, the
    cross toolchain's target (``zig cc -target``; a glibc suffix pins the oldest glibc it needs)
    and the library's file suffix.  (macOS: 11.0, Big Sur, the first on Apple silicon.)"""
    name: str
    fmi2: str
    target: str
    suffix: str

    def folder(self, fmi: int) -> str:
        """binaries/<folder>: the FMI 3.0 tuple, or FMI 2.0's standard folder."""
        return self.name if fmi == 3 else self.fmi2


# FMI 2.0 has no folder for aarch64 Linux (FMI 3.0's tuple is used, as fmpy and the Reference
# FMUs do) and one for both macOS CPUs: darwin64 holds one universal Mach-O of both slices.
PLATFORMS = {p.name: p for p in (
    Platform("x86_64-linux", "linux64", "x86_64-linux-gnu.2.17", ".so"),
    Platform("aarch64-linux", "aarch64-linux", "aarch64-linux-gnu.2.17", ".so"),
    Platform("x86_64-windows", "win64", "x86_64-windows-gnu", ".dll"),
    Platform("x86_64-darwin", "darwin64", "x86_64-macos.11.0", ".dylib"),     # (zig's own
    Platform("aarch64-darwin", "darwin64", "aarch64-macos.11.0", ".dylib"),   # default: 15.0)
)}


def host_platform() -> Platform | None:
    """The entry of PLATFORMS this machine runs, or None."""
    import platform
    arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(platform.machine().lower(),
                                                      platform.machine().lower())
    osname = {"darwin": "darwin", "win32": "windows"}.get(sys.platform, sys.platform)
    return PLATFORMS.get(f"{arch}-{osname.removesuffix('2')}")     # (linux2: old Pythons)


def binaries_of(names: list[str]) -> list[str]:
    """The binaries an FMU carries (its zip member names), one entry per binaries/ folder:
    ``win64 (x86_64-windows)``, ``darwin64 (x86_64-darwin, aarch64-darwin)``, ``x86_64-linux``."""
    folders = sorted({n.split("/")[1] for n in names
                      if n.startswith("binaries/") and n.count("/") == 2 and not n.endswith("/")})
    out = []
    for f in folders:
        known = [p.name for p in PLATFORMS.values() if f in (p.fmi2, p.name)]
        out.append(f if known == [f] else f"{f} ({', '.join(known)})" if known else f)
    return out


def select_platforms(spec: str | list[str] | tuple[str, ...] = "all") -> list[Platform]:
    """``all``, ``host`` or platform names (FMI 3.0 tuples, comma-separated or a list) -> the
    platforms to build, in PLATFORMS order."""
    names = [n.strip() for n in spec.split(",")] if isinstance(spec, str) else list(spec)
    if names == ["all"]:
        return list(PLATFORMS.values())
    if names == ["host"]:
        host = host_platform()
        if host is None:
            import platform
            raise NativeBuildError(f"this machine ({platform.machine()} {sys.platform}) is none of "
                                   f"the platforms {', '.join(PLATFORMS)}")
        return [host]
    bad = [n for n in names if n not in PLATFORMS]
    if bad or not names:
        raise NativeBuildError(f"unknown platform {bad[0] if bad else ''!r}: use all, host or a "
                               f"comma-separated list of {', '.join(PLATFORMS)}")
    return [p for p in PLATFORMS.values() if p.name in names]


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
        "nssp": len(sphere_pairs(model)), "nhv": hull_vertex_count(model),
        "contact_names": "CONTACTS",
        **{f"vr_{g}": vr(g) for g in ("contact_law", "plane_offset", "contact_force",
                                      "contact_depth", "pair_depth", "stop_margin")},
        "role": "SOA_FMU_CONTROLLER" if isinstance(table, ControllerTable) else "SOA_FMU_PLANT",
        **{f"vr_{g.lower()}": vr(g) for g in CONTROLLER_GROUPS},
    }
    parts.append("const soa_fmu_description soa_fmu_model = {\n"
                 + ",\n".join(f"    .{k} = {v}" for k, v in fields.items()) + "\n};\n")
    return "".join(parts)


def check_layout(table: VariableTable) -> None:
    """The wrapper's assumptions about the table (native/*.c): max_step, rtol, atol adjacent;
    q, qd, qdd contiguous and before energy, energy before the frame poses; der(q) between qdd and
    energy."""
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


def zig() -> str:
    """The cross toolchain: the zig executable of the ``ziglang`` package (a dependency)."""
    try:
        import ziglang
    except ImportError:
        raise NativeBuildError("the cross toolchain is not installed (pip install ziglang)") from None
    exe = Path(ziglang.__file__).parent / ("zig.exe" if sys.platform == "win32" else "zig")
    if not exe.is_file():
        raise NativeBuildError(f"the ziglang package has no zig executable ({exe})")
    return str(exe)


# The engine (core + wrapper: every source but the generated model) does not depend on the model:
# it is compiled once per platform into object files kept in <cache>/native/<platform>-<key>/
# (<cache>: $SOA_FMU_CACHE_DIR, else $XDG_CACHE_HOME/soa_fmu, else ~/.cache/soa_fmu), key = a hash
# of the compiler (its path and version), the target, the flags and every header (the engine's,
# FMI 2.0's and 3.0's), each object named by its source's hash, so that any change compiles anew
# and FMI 2.0 and 3.0 builds share the core's objects.  Each FMU build then compiles only
# fmu_model.c per platform and links, all platforms side by side.
#
# The toolchain: zig cc (clang with every target's C library; ``x86_64-linux-gnu.2.17`` links
# against glibc 2.17's symbol versions) compiles and links every platform; the host platform's
# objects come from the system compiler when there is one (gcc's code stepped the 7-dof arm 3-4 %
# faster than clang's: benchmarks/results/fmu.txt), linked by zig all the same, so that the host
# binary needs no newer glibc than the others.
OBJECT_FLAGS = tuple(f for f in CFLAGS if f not in ("-shared", "-Wl,-z,defs"))
ZIG_FLAGS = ("-std=c99", "-O2", "-g0", "-fvisibility=hidden", "-Wall", "-Wextra",
             "-Wno-missing-field-initializers")      # (zig cc: -O2 and -O3 are both ReleaseFast)
# counts of this process (tests), and the compile jobs of the last build: (platform, source,
# CPU seconds of its compiler process) — benchmarks/bench_platforms.py reports them
BUILD_STATS: dict = {"engine_compiled": 0, "engine_reused": 0, "jobs": []}


def cores() -> int:
    """The cores this process may run on (the compile pool's size)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:                      # (macOS, Windows)
        return os.cpu_count() or 1


def cache_root(redirected: bool = True) -> Path:
    """The cache folder: compiled engine objects here, the pythonfmu flavour's engine copies
    (build_fmu's boot module carries this function's source).  ``redirected=False``: the user's
    own cache folder, whatever $SOA_FMU_CACHE_DIR says."""
    if redirected and os.environ.get("SOA_FMU_CACHE_DIR"):
        return Path(os.environ["SOA_FMU_CACHE_DIR"])
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "soa_fmu"


def zig_cache() -> Path:
    """zig's own cache (each target's C library and compiler_rt, built once: minutes for
    Windows' on first use): $ZIG_GLOBAL_CACHE_DIR, else zig/ in the user's cache folder — also
    when $SOA_FMU_CACHE_DIR moves the engine objects (a clean engine build keeps the C libraries)."""
    return Path(os.environ.get("ZIG_GLOBAL_CACHE_DIR") or cache_root(redirected=False) / "zig")


@dataclass(frozen=True)
class Toolchain:
    """How one platform's binary is made: the compiler of the objects, its flags, the linker."""
    platform: Platform
    cc: list[str]            # the objects' compiler (zig cc -target ..., or the system's cc)
    flags: tuple[str, ...]
    link: list[str]          # zig cc -target ... (the platform's C library, its glibc floor)

    @property
    def label(self) -> str:
        names = dict.fromkeys(Path(c[0]).name + (" cc" if c[1:2] == ["cc"] else "")
                              for c in (self.cc, self.link))
        return " + ".join(names)


def toolchain(platform: Platform) -> Toolchain:
    """The toolchain of ``platform`` (module comment above).  Without zig the host platform is
    built by the system compiler alone (then its glibc floor is the build machine's); any other
    platform is a NativeBuildError naming it."""
    try:
        z = [zig(), "cc", "-target", platform.target]
    except NativeBuildError as e:
        if platform == host_platform():
            cc = [compiler()]
            return Toolchain(platform, cc, OBJECT_FLAGS, cc)
        raise NativeBuildError(f"platform {platform.name}: {e}; build with --platforms host (or a "
                               "list without it)") from None
    if platform == host_platform():
        try:
            return Toolchain(platform, [compiler()], OBJECT_FLAGS, z)
        except NativeBuildError:
            pass                                  # no system compiler: zig compiles it too
    return Toolchain(platform, z, ZIG_FLAGS + (() if platform.suffix == ".dll" else ("-fPIC",)), z)


_CC_VERSION: dict[str, str] = {}


def _version(exe: str) -> str:
    if exe not in _CC_VERSION:
        arg = "version" if Path(exe).stem == "zig" else "--version"
        _CC_VERSION[exe] = subprocess.run([exe, arg], capture_output=True, text=True).stdout
    return _CC_VERSION[exe]


def engine_key(engine: dict[str, bytes], tc: Toolchain) -> str:
    """The cache key of a platform's engine-object folder: compiler (path, version, target),
    flags, every header of the engine and both FMI versions' headers.  (Each object's name adds
    its source's hash: object_name; FMI 2.0 and 3.0 builds share the core's objects.)"""
    import hashlib
    h = hashlib.sha256()
    for part in (*tc.cc, _version(tc.cc[0]), " ".join(tc.flags)):
        h.update(part.encode() + b"\0")
    headers = sorted((n, b) for n, b in engine.items() if not n.endswith(".c"))
    for fmi in (2, 3):
        headers += sorted((p.name, p.read_bytes()) for p in fmi_headers(fmi).glob(f"fmi{fmi}*.h"))
    for name, data in headers:
        h.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return h.hexdigest()[:24]


def object_name(name: str, data: bytes) -> str:
    """The cached object of one engine source: <stem>-<hash of the source>.o."""
    import hashlib
    return f"{Path(name).stem}-{hashlib.sha256(data).hexdigest()[:16]}.o"


def _run(cmd: list[str], env: dict) -> tuple[str, float]:
    """Run one compiler command: ('' or its first error line, the CPU seconds it took)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    text = p.stdout.read().decode(errors="replace")
    p.stdout.close()
    if hasattr(os, "wait4"):                     # reaped here, with its resource usage
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode, cpu = os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime
    else:
        p.wait()
        cpu = float("nan")
    if p.returncode == 0:
        return "", cpu
    lines = text.splitlines()
    return (next((ln for ln in lines if "error" in ln), "") or (lines[0] if lines else "failed")), cpu


def _compile(tc: Toolchain, src: Path, name: str, out: Path, fmi: int) -> list[str]:
    return [*tc.cc, *tc.flags, f"-I{src}", f"-I{fmi_headers(fmi)}", "-c", str(src / name),
            "-o", str(out)]


def _link(tc: Toolchain, objects: list[Path], out: Path) -> list[str]:
    # (the same -O2 as the objects: zig links the compiler_rt it built once for that mode)
    # (a Mach-O image records its install name: the file's own name, not the temporary folder)
    extra = {".so": ("-Wl,-z,defs",),
             ".dylib": (f"-Wl,-install_name,@rpath/{out.name}",)}.get(tc.platform.suffix, ())
    return [*tc.link, "-O2", "-g0", "-shared", *extra, *map(str, objects), "-o", str(out), "-lm"]


def stamp_pe(image: bytes) -> bytes:
    """A Windows DLL with its link stamps made a function of its contents (what lld's /Brepro does,
    which zig's linker does not take): the COFF header's TimeDateStamp, each debug directory
    entry's TimeDateStamp and the CodeView (RSDS) record's GUID are set from a SHA-256 of the image
    with those fields zeroed, so two builds of the same sources are the same file (PE/COFF
    specification: COFF file header, optional header data directory 6, IMAGE_DEBUG_DIRECTORY)."""
    import hashlib
    import struct
    b = bytearray(image)
    pe = struct.unpack_from("<I", b, 0x3C)[0]
    nsec, opt_size = struct.unpack_from("<H", b, pe + 6)[0], struct.unpack_from("<H", b, pe + 20)[0]
    opt = pe + 24
    dirs = opt + (112 if struct.unpack_from("<H", b, opt)[0] == 0x20B else 96)   # PE32+ / PE32
    debug_rva, debug_size = struct.unpack_from("<II", b, dirs + 6 * 8)
    sections = [struct.unpack_from("<IIII", b, opt + opt_size + 40 * k + 8) for k in range(nsec)]

    def offset(rva: int) -> int | None:
        for vsize, vaddr, rawsize, rawptr in sections:
            if vaddr <= rva < vaddr + max(vsize, rawsize):
                return rawptr + rva - vaddr
        return None

    fields = [(pe + 8, 4)]                                  # COFF TimeDateStamp
    start = offset(debug_rva) if debug_size else None
    for k in range(debug_size // 28 if start is not None else 0):
        entry = start + 28 * k
        fields.append((entry + 4, 4))                       # the entry's TimeDateStamp
        kind, size, _, ptr = struct.unpack_from("<IIII", b, entry + 12)
        if kind == 2 and size >= 24 and b[ptr:ptr + 4] == b"RSDS":
            fields.append((ptr + 4, 16))                    # CodeView GUID
    for at, n in fields:
        b[at:at + n] = bytes(n)
    digest = hashlib.sha256(b).digest()
    for at, n in fields:
        b[at:at + n] = digest[:n]
    return bytes(b)


def universal_macho(slices: list[bytes]) -> bytes:
    """One universal ("fat") Mach-O file of thin ones (FMI 2.0's darwin64 holds both macOS CPUs):
    fat_header and one fat_arch per slice (big-endian; cputype, cpusubtype, offset, size, log2
    align), each slice at a 16 KiB boundary — the layout of Apple's lipo."""
    import struct
    align = 14
    out = bytearray(struct.pack(">II", 0xCAFEBABE, len(slices)))
    offset = 8 + 20 * len(slices)
    placed = []
    for data in slices:
        offset = -(-offset // (1 << align)) * (1 << align)
        cputype, subtype = struct.unpack_from("<ii", data, 4)
        out += struct.pack(">iiIII", cputype, subtype, offset, len(data), align)
        placed.append((offset, data))
        offset += len(data)
    for off, data in placed:
        out += bytes(off - len(out)) + data
    return bytes(out)


def compile_libraries(sources: dict[str, bytes], identifier: str, fmi: int = 2,
                      platforms: list[Platform] | None = None) -> dict[str, bytes]:
    """Compile the FMU's sources (name -> bytes, flat) for each platform (default: all):
    {``binaries/<folder>/<identifier><suffix>``: bytes}.  The engine's objects come from the cache
    (compiled now, once per platform and key, where it has none); fmu_model.c compiles per
    platform; every compilation and link runs side by side.  NativeBuildError names the platform
    that failed."""
    platforms = list(PLATFORMS.values()) if platforms is None else platforms
    return compile_with(sources, identifier, fmi, [toolchain(p) for p in platforms])


def compile_with(sources: dict[str, bytes], identifier: str, fmi: int,
                 chains: list[Toolchain]) -> dict[str, bytes]:
    """compile_libraries with the toolchains given (benchmarks/bench_fmu.py compares the host's)."""
    platforms = [tc.platform for tc in chains]
    engine = {n: b for n, b in sources.items() if n != MODEL_SOURCE}
    cfiles = sorted((n for n in engine if n.endswith(".c")), key=lambda n: -len(engine[n]))
    with tempfile.TemporaryDirectory(prefix="soa_fmu_native_") as d:
        src = Path(d, "sources")
        src.mkdir()
        for name, data in sources.items():
            (src / name).write_bytes(data)
        env = dict(os.environ, ZIG_LOCAL_CACHE_DIR=str(Path(d, "zig-local")))
        try:
            env["ZIG_GLOBAL_CACHE_DIR"] = str(zig_cache())
            zig_cache().mkdir(parents=True, exist_ok=True)
        except OSError:
            env["ZIG_GLOBAL_CACHE_DIR"] = str(Path(d, "zig-global"))
        # per platform: its engine objects (cached, or compiled now), its model object; then every
        # platform's jobs in one pool, largest source first (flexible.c of every platform first:
        # the longest jobs start first, the short ones fill the end), one worker per core
        jobs, objects, fresh = [], {}, []
        for tc in chains:
            work = Path(d, tc.platform.name)
            work.mkdir()
            try:
                folder = cache_root() / "native" / f"{tc.platform.name}-{engine_key(engine, tc)}"
                folder.mkdir(parents=True, exist_ok=True)
            except OSError:                 # no writable cache: compiled in the temporary folder
                folder = work
            names = {n: object_name(n, engine[n]) for n in cfiles}
            missing = [n for n in cfiles if not (folder / names[n]).is_file()]
            BUILD_STATS["engine_compiled" if missing else "engine_reused"] += 1
            jobs += [(tc, _compile(tc, src, n, work / names[n], fmi), n) for n in missing]
            fresh += [(work / names[n], folder / names[n]) for n in missing if folder != work]
            objects[tc.platform.name] = [folder / names[n] for n in cfiles]
            jobs.append((tc, _compile(tc, src, MODEL_SOURCE, work / "fmu_model.o", fmi),
                         MODEL_SOURCE))
        jobs.sort(key=lambda job: -len(sources[job[2]]))          # (a stable sort)
        BUILD_STATS["jobs"] = _run_all(jobs, env, "compiling")
        for new, kept in fresh:            # into the cache: atomic (another build may race)
            try:
                shutil.copyfile(new, kept.with_suffix(".partial"))
                os.replace(kept.with_suffix(".partial"), kept)
            except OSError:
                objects[new.parent.name][objects[new.parent.name].index(kept)] = new
        outs = {tc.platform.name: Path(d, tc.platform.name, identifier + tc.platform.suffix)
                for tc in chains}
        _run_all([(tc, _link(tc, [Path(d, tc.platform.name, "fmu_model.o"),
                                  *objects[tc.platform.name]], outs[tc.platform.name]), "")
                  for tc in chains], env, "linking")
        built: dict[str, list[bytes]] = {}
        for tc in chains:
            image = outs[tc.platform.name].read_bytes()
            built.setdefault(tc.platform.folder(fmi), []).append(
                stamp_pe(image) if tc.platform.suffix == ".dll" else image)
    suffix = {p.folder(fmi): p.suffix for p in platforms}
    return {f"binaries/{f}/{identifier}{suffix[f]}": libs[0] if len(libs) == 1 else
            universal_macho(libs) for f, libs in built.items()}


def _run_all(jobs: list[tuple[Toolchain, list[str], str]], env: dict,
             what: str) -> list[tuple[str, str, float]]:
    """Run the commands (toolchain, command, source) side by side, in the order given, one per
    core; the first failure as a NativeBuildError naming its platform.  Returns (platform, source,
    CPU seconds) per job."""
    with ThreadPoolExecutor(cores()) as pool:
        results = list(pool.map(lambda job: _run(job[1], env), jobs))
    for (tc, _, _), (err, _) in zip(jobs, results):
        if err:
            raise NativeBuildError(
                f"{what} the {tc.platform.name} binary failed ({tc.label}): {err[:300]}; build "
                "with --platforms host (or a list without it) to skip it")
    return [(tc.platform.name, name, cpu) for (tc, _, name), (_, cpu) in zip(jobs, results)]
