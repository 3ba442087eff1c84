"""Facts the docs state, checked against the code they describe: the C core's files and status codes
(docs/core.md), the command-line options (every page vs each command's ``--help``), the
integrators docs/fmu.md lists (vs soa_fmu.integrators.METHODS), the FMU's variables (docs/fmu.md
vs a built modelDescription.xml) and their units (a hand-written SI table).

Each failure message says what to add or change, so a new source file, status code, option or
variable fails here until the chapter that documents it has its row.
"""
from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from lxml import etree

from fmu_fixtures import build

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
CORE = REPO / "soa_fmu" / "core"


def read(name: str) -> str:
    return (REPO / name).read_text(encoding="utf-8")


def section(text: str, heading: str) -> str:
    """The text of a markdown section, from its heading to the next heading of the same level."""
    level = heading.split()[0]
    body = text.split(heading + "\n", 1)[1]
    return re.split(rf"^{level} ", body, maxsplit=1, flags=re.M)[0]


def first_column(table_text: str) -> list[str]:
    return [line.split("|")[1] for line in table_text.splitlines() if line.startswith("| ")]


# ---------------------------------------------------------------- docs/core.md vs soa_fmu/core/
def test_core_layout_lists_every_source_file():
    listed = set()
    for cell in first_column(section(read("docs/core.md"), "## Layout")):
        listed |= set(re.findall(r"`([\w.]+\.[ch])`", cell))
    present = {p.name for p in CORE.iterdir() if p.suffix in (".c", ".h")}
    missing, stale = sorted(present - listed), sorted(listed - present)
    assert not missing, ("docs/core.md, ## Layout: add a row for each of "
                         + ", ".join(f"| `{f}` | <what it holds> | <seed equations> |" for f in missing))
    assert not stale, f"docs/core.md, ## Layout lists files that soa_fmu/core/ no longer has: {stale}"


def status_codes() -> list[str]:
    enum = read("soa_fmu/core/soa.h").split("typedef enum {", 1)[1].split("} soa_kind;", 1)[0]
    enum = re.sub(r"/\*.*?\*/", "", enum, flags=re.S)
    return [n for n in re.findall(r"\b(SOA_[A-Z0-9_]+)\b", enum) if n not in ("SOA_OK", "SOA_NSTATUS")]


def test_core_status_table_lists_every_status_code():
    table = section(read("docs/core.md"), "## Status, never abort")
    listed = set(re.findall(r"`(SOA_[A-Z0-9_]+)`", "\n".join(first_column(table))))
    codes = status_codes()
    assert len(codes) >= 20                      # the parse found the enum
    missing, stale = [c for c in codes if c not in listed], sorted(listed - set(codes))
    assert not missing, ("docs/core.md, ## Status, never abort: add a row for each of "
                         + ", ".join(f"| `{c}` | <what its index names> |" for c in missing))
    assert not stale, f"docs/core.md status table names codes soa.h does not have: {stale}"


def test_status_codes_have_a_message_and_a_python_name():
    """status.c gives every code a message and the extension exports every code by name."""
    status_c, module_c = read("soa_fmu/core/status.c"), read("soa_fmu/_core/module.c")
    no_message = [c for c in status_codes() if f"case {c}:" not in status_c]
    no_name = [c for c in status_codes() if f"{c}}}" not in module_c.replace(" ", "")]
    assert not no_message, f"soa_fmu/core/status.c has no `case X:` message for {no_message}"
    assert not no_name, f"soa_fmu/_core/module.c does not export {no_name} by name"


# ---------------------------------------------------------------- command-line options
def commands() -> dict[str, list[str]]:
    """argv of each documented command (those the package installs, and a benchmark)."""
    bindir = Path(sys.executable).parent
    cmds = {"soa-build-fmu": [sys.executable, str(REPO / "build_fmu.py")],
            "soa-build-ssp": [sys.executable, str(REPO / "build_ssp.py")],
            # (a benchmark whose options the docs name: the lead's rerun, --no-setup)
            "bench_platforms.py": [sys.executable, str(REPO / "benchmarks" / "bench_platforms.py")]}
    for name in ("soa-describe", "soa-sweep", "soa-view"):
        if (bindir / name).exists():
            cmds[name] = [str(bindir / name)]
    return cmds


def help_options(argv: list[str]) -> set[str]:
    out = subprocess.run([*argv, "--help"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", out.stdout)) - {"--help"}


@pytest.fixture(scope="module")
def cli_help() -> dict[str, set[str]]:
    return {name: help_options(argv) for name, argv in commands().items()}


def doc_text() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in DOCS)


FOREIGN = {"--nworkers", "--nthreads", "--enable-shared",     # dask worker, CPython's configure
           # OMSimulator's --mode, --stopTime, --stepSize, --tolerance, --resultFile, --logFile (the
           # pattern reads an option up to its first capital)
           "--mode", "--stop", "--step", "--tolerance", "--result", "--log"}


def sections_naming(command: str) -> str:
    """Every section (from a heading to the next) of README.md and docs/ that names the command."""
    out = []
    for page in DOCS:
        for part in re.split(r"^#+ ", page.read_text(encoding="utf-8"), flags=re.M):
            if command in part or (command == "soa-build-fmu" and "build_fmu.py" in part):
                out.append(part)
    return "\n".join(out)


def test_every_option_of_every_command_is_documented(cli_help):
    """Each option of each command's --help appears in a section that names the command."""
    missing = {}
    for name, opts in cli_help.items():
        text = sections_naming(name)
        gone = sorted(o for o in opts if not re.search(re.escape(o) + r"(?![\w-])", text))
        if gone:
            missing[name] = gone
    assert not missing, f"options in --help that no section naming the command documents: {missing}"


def test_every_documented_option_exists(cli_help):
    known = set().union(*cli_help.values()) | FOREIGN
    unknown = {}
    for page in DOCS:
        for lineno, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            for opt in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", line):
                if opt not in known:
                    unknown.setdefault(opt, f"{page.relative_to(REPO)}:{lineno}")
    assert not unknown, f"documented options that no command accepts: {unknown}"


def test_build_option_table_matches_help(cli_help):
    """docs/fmu.md's option table has one row per option of soa-build-fmu."""
    table = section(read("docs/fmu.md"), "## Build")
    rows = set(re.findall(r"(--[a-z][a-z0-9-]*)", "\n".join(first_column(table))))
    assert rows == cli_help["soa-build-fmu"], (
        f"docs/fmu.md option table: add {sorted(cli_help['soa-build-fmu'] - rows)}, "
        f"remove {sorted(rows - cli_help['soa-build-fmu'])}")


def test_every_integrator_is_documented_where_the_fmu_names_them():
    """docs/fmu.md lists every integrator (soa_fmu.integrators.METHODS) in the --integrator
    option row and the `integrator` parameter row (the list: the cell up to its first ';'), and
    integrator_used's codes as the engine numbers them (soa.h: SOA_RK4 = 0 ...)."""
    from soa_fmu.integrators import METHOD_CODES, METHODS
    text = read("docs/fmu.md")
    for row in ("| `--integrator` |", "| `integrator` |"):
        (line,) = [x for x in text.splitlines() if x.startswith(row)]
        named = set(re.findall(r"`([a-z0-9]+)`", line.split("|")[-2].split(";")[0]))
        assert set(METHODS) <= named, f"docs/fmu.md {row} row: add {set(METHODS) - named}"
    (line,) = [x for x in text.splitlines() if x.startswith("| `integrator_used` |")]
    codes = ", ".join(f"{k} {m}" for m, k in METHOD_CODES.items())
    assert codes in line, f"docs/fmu.md integrator_used row: list the codes as '{codes}'"


def test_bad_option_exit_status_is_the_documented_one(tmp_path):
    """fmu.md: a bad option exits 2 (argparse), a bad model file exits 1; one line on stderr."""
    text = section(read("docs/fmu.md"), "## Build")
    m = re.search(r"bad option exits with status (\d)", text)
    assert m, "docs/fmu.md, ## Build: state the exit status of a bad option"
    r = subprocess.run([*commands()["soa-build-fmu"], "x.urdf", "--no-such-option"],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == int(m.group(1)), r.stderr
    m = re.search(r"bad model file exits with status (\d)", text)
    assert m, "docs/fmu.md, ## Build: state the exit status of a bad model file"
    (tmp_path / "bad.urdf").write_text("<robot name='x'><link name='a'/><joint/></robot>")
    r = subprocess.run([*commands()["soa-build-fmu"], "bad.urdf"], capture_output=True,
                       text=True, cwd=tmp_path)
    assert r.returncode == int(m.group(1)) and r.stderr.strip().count("\n") == 0, r.stderr


# ---------------------------------------------------------------- FMU variables (docs/fmu.md)
def documented_variables() -> list[tuple[re.Pattern, str, str]]:
    """(name pattern, causality/variability cell, name cell) of each row of fmu.md's tables."""
    text = section(read("docs/fmu.md"), "## Variables")
    rows = []
    for line in text.splitlines():
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in line.split("|")[1:-1]]
        for name in re.findall(r"`([^`]+)`", cells[0]):
            rx = re.escape(name)
            rx = rx.replace(re.escape("<b>"), r"('[^']+'|\w+)").replace(re.escape("<c>"), r"('[^']+'|\w+)")
            rx = rx.replace(re.escape("<f>"), r"('[^']+'|\w+)").replace(re.escape("<s>"), r"('[^']+'|\w+)")
            rx = re.sub(r"\\\[(i|k)\\\]", r"\\[\\d+\\]", rx)
            rx = re.sub(r"\\\[(\d+)\\\.\\\.(\d+)\\\]",
                        lambda m: r"\[(" + "|".join(str(j) for j in range(int(m.group(1)), int(m.group(2)) + 1)) + r")\]",
                        rx)
            rows.append((re.compile(rx + "$"), cells[1], name))
    return rows


def model_variables(fmu: Path) -> list[dict]:
    with zipfile.ZipFile(fmu) as z:
        root = etree.fromstring(z.read("modelDescription.xml"))
    out = []
    for sv in root.iter("ScalarVariable"):
        child = sv[0]
        out.append({"name": sv.get("name"), "causality": sv.get("causality", "local"),
                    "variability": sv.get("variability", "continuous"), "type": child.tag,
                    "unit": child.get("unit")})
    return out


def fmus() -> list[Path]:
    """Built FMUs that together have every kind of variable: a tree arm with frames, a grasp."""
    return [build("arm7.urdf", name="Arm7"), build("two_arms_box.toml")]


def test_every_fmu_variable_is_documented_and_every_row_exists():
    rows = documented_variables()
    assert len(rows) >= 20
    seen, undocumented, wrong = set(), [], []
    for fmu in fmus():
        for v in model_variables(fmu):
            hits = [r for r in rows if r[0].match(v["name"])]
            if not hits:
                undocumented.append(v["name"])
                continue
            seen |= {r[2] for r in hits}
            cell = hits[0][1]
            if v["causality"] not in cell and not (v["causality"] == "local" and "local" in cell):
                wrong.append(f"{v['name']}: causality {v['causality']}, fmu.md says '{cell}'")
            if v["causality"] == "parameter" and v["variability"] not in cell:
                wrong.append(f"{v['name']}: variability {v['variability']}, fmu.md says '{cell}'")
    assert not undocumented, ("docs/fmu.md, ## Variables: add a row for "
                              + ", ".join(sorted(set(undocumented))[:20]))
    assert not wrong, wrong
    unseen = [r[2] for r in rows if r[2] not in seen]
    assert not unseen, f"docs/fmu.md rows that no built FMU has (arm7, two_arms_box): {unseen}"


# ---------------------------------------------------------------- units: a hand-written SI table
# Each unit the FMUs use, as SI base-unit exponents written out by hand from its physics (not from
# the generator's table): N.m = kg.m2/s2, a damping N.m.s/rad = kg.m2/(s.rad) ...
SI = {
    "rad": {"rad": 1}, "m": {"m": 1}, "1": {}, "s": {"s": 1}, "1/s": {"s": -1},
    "rad/s": {"rad": 1, "s": -1}, "m/s": {"m": 1, "s": -1},
    "rad/s2": {"rad": 1, "s": -2}, "m/s2": {"m": 1, "s": -2},
    "N": {"kg": 1, "m": 1, "s": -2}, "N.m": {"kg": 1, "m": 2, "s": -2},
    "N.m.s/rad": {"kg": 1, "m": 2, "s": -1, "rad": -1}, "N.s/m": {"kg": 1, "s": -1},
    "kg": {"kg": 1}, "kg.m2": {"kg": 1, "m": 2}, "J": {"kg": 1, "m": 2, "s": -2},
    "N.m/rad": {"kg": 1, "m": 2, "s": -2, "rad": -1}, "N/m": {"kg": 1, "s": -2},
}

# The unit of each arm7 variable (all joints revolute), by hand.
ARM_UNITS = [
    (r"q0?\[\d\]", "rad"), (r"qd0?\[\d\]", "rad/s"), (r"qdd\[\d\]", "rad/s2"), (r"tau\[\d\]", "N.m"),
    (r"damping\[\d\]", "N.m.s/rad"), (r"friction\[\d\]", "N.m"), (r"g\[\d\]", "m/s2"),
    (r"\w+\.mass", "kg"), (r"\w+\.com\[\d\]", "m"), (r"\w+\.inertia\[\d\]", "kg.m2"),
    (r"max_step", "s"), (r"rtol|atol", "1"), (r"energy", "J"), (r"\w+\.position\[\d\]", "m"),
    (r"\w+\.orientation\[\d\]", "1"), (r"\w+\.f_ext\[[123]\]", "N.m"), (r"\w+\.f_ext\[[456]\]", "N"),
    (r"der\(q\[\d\]\)", "rad/s"),
    (r"armature\[\d\]", "kg.m2"), (r"stop_stiffness\[\d\]", "N.m/rad"),
    (r"stop_damping\[\d\]", "N.m.s/rad"), (r"stop_tau\[\d\]", "N.m"), (r"integrator_used", "1"),
    (r"stop_margin\[\d+\]", "rad"),
]


def test_units_against_a_hand_written_si_table():
    fmu = build("arm7.urdf", name="Arm7")
    with zipfile.ZipFile(fmu) as z:
        root = etree.fromstring(z.read("modelDescription.xml"))
    for unit in root.iter("Unit"):
        base = unit.find("BaseUnit")
        exps = {k: int(v) for k, v in (base.attrib if base is not None else {}).items()
                if k != "factor" and k != "offset"}
        assert exps == SI[unit.get("name")], (unit.get("name"), exps)
    checked = 0
    for v in model_variables(fmu):
        if v["type"] != "Real":
            continue
        units = [u for rx, u in ARM_UNITS if re.fullmatch(rx, v["name"])]
        assert units, f"no hand-written unit for {v['name']}: add it to ARM_UNITS"
        assert v["unit"] == units[0], (v["name"], v["unit"], units[0])
        checked += 1
    assert checked > 100


def test_prismatic_units():
    """A prismatic dof's coordinate is in m, its rate m/s, its force N, its damping N.s/m."""
    import soa_fmu as sf
    model = sf.load_model(REPO / "model_descriptions" / "examples" / "slider_crank.toml")
    i = 1 + [j for j, n in enumerate(model.velocity_names) if "slider" in n][0]
    units = {v["name"]: v["unit"] for v in model_variables(build("slider_crank.toml", runtime="python"))}
    assert (units[f"q[{i}]"], units[f"qd[{i}]"], units[f"qdd[{i}]"], units[f"tau[{i}]"],
            units[f"damping[{i}]"], units[f"friction[{i}]"]) == ("m", "m/s", "m/s2", "N", "N.s/m", "N")
