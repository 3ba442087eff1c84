"""build_fmu.py and the generated modelDescription.xml: schema, fmpy validation, units, model
structure, and agreement with the variable table the slave registers."""
from __future__ import annotations

import json
import zipfile

import pytest
from fmpy import read_model_description
from fmpy.validation import validate_fmu
from lxml import etree

import build_fmu
import soa_fmu as sf
from fmu_fixtures import RUNTIMES, arm_fmu, build, example, example_models  # noqa: F401
from model_descriptions import generator
from soa_fmu.fmu.variables import UNITS, build_table
from soa_fmu.io import load_model


def _xml(fmu) -> bytes:
    with zipfile.ZipFile(fmu) as zf:
        return zf.read("modelDescription.xml")


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("name", example_models())
def test_every_example_builds_valid(name, runtime):
    fmu = build(name, runtime=runtime)
    assert generator.validate(_xml(fmu)) == []          # FMI 2.0 XSD (lxml XMLSchema)
    assert validate_fmu(str(fmu)) == []                 # fmpy: schema, names, structure, units


@pytest.mark.parametrize("name", example_models())
def test_xml_is_the_variable_table(name):
    """Every variable in modelDescription.xml is the table row the slave binds, attribute by
    attribute; ModelVariables order == value reference (index = vr + 1).  (The default native FMU
    has Model Exchange too: the table with the states.)"""
    model = load_model(example(name))
    table = build_table(model, states=True)
    md = read_model_description(str(build(name)))
    assert [v.name for v in md.modelVariables] == [v.name for v in table]
    for xv, tv in zip(md.modelVariables, table):
        assert (xv.valueReference, xv.type, xv.causality, xv.variability) == \
               (tv.value_reference, tv.type, tv.causality, tv.variability)
        assert xv.unit == tv.unit
        assert xv.description == tv.description
        if tv.start is not None and tv.type == "Real":
            assert float(xv.start) == tv.start
    assert md.coSimulation.modelIdentifier
    cfg = json.loads(zipfile.ZipFile(build(name)).read("resources/fmu.json"))
    assert cfg["table_digest"] == table.digest()


def test_arm_variables_units_and_descriptions(arm_fmu):
    model = load_model(example("arm7.urdf"))
    md = read_model_description(str(arm_fmu))
    var = {v.name: v for v in md.modelVariables}
    for i, joint in enumerate(model.velocity_names, start=1):
        assert var[f"tau[{i}]"].unit == "N.m"
        assert var[f"tau[{i}]"].causality == "input" and var[f"tau[{i}]"].start == "0.0"
        assert joint in var[f"tau[{i}]"].description
        assert var[f"q[{i}]"].unit == "rad" and var[f"qd[{i}]"].unit == "rad/s"
        assert var[f"qdd[{i}]"].unit == "rad/s2"
        assert joint in var[f"q[{i}]"].description
    assert f"tau[{model.nv + 1}]" not in var
    assert [var[f"g[{k}]"].unit for k in (1, 2, 3)] == ["m/s2"] * 3
    assert float(var["g[3]"].start) == pytest.approx(model.gravity[2])
    assert var["energy"].unit == "J"
    assert var["integrator"].type == "String" and var["integrator"].variability == "tunable"
    assert var["q0[1]"].causality == "parameter" and var["q0[1]"].initial == "exact"
    # every Real has a unit defined with SI exponents
    units = {u.name: u for u in md.unitDefinitions}
    for v in md.modelVariables:
        if v.type == "Real":
            assert v.unit in units
    assert units["N.m"].baseUnit.kg == 1 and units["N.m"].baseUnit.m == 2 \
        and units["N.m"].baseUnit.s == -2
    assert units["rad/s2"].baseUnit.rad == 1 and units["rad/s2"].baseUnit.s == -2


def test_units_follow_joint_types():
    """Prismatic coordinates are lengths, free-joint quaternions are unit "1", free-joint
    velocities are rad/s then m/s, generalized forces N.m / N."""
    for name in example_models():
        model = load_model(example(name))
        table = build_table(model)
        by = table.by_name
        for b in model.bodies:
            j = b.joint
            if j.code == sf.joints.PRISMATIC:
                assert by[f"q[{b.q_index + 1}]"].unit == "m"
                assert by[f"tau[{b.v_index + 1}]"].unit == "N"
            if j.code == sf.joints.FREE:
                assert [by[f"q[{b.q_index + k}]"].unit for k in range(1, 8)] == ["1"] * 4 + ["m"] * 3
                assert [by[f"qd[{b.v_index + k}]"].unit for k in range(1, 7)] == \
                    ["rad/s"] * 3 + ["m/s"] * 3
                assert [by[f"tau[{b.v_index + k}]"].unit for k in range(1, 7)] == \
                    ["N.m"] * 3 + ["N"] * 3
    assert any(b.joint.code == sf.joints.FREE
               for b in load_model(example("spacecraft.toml")).bodies)
    assert any(b.joint.code == sf.joints.PRISMATIC
               for b in load_model(example("slider_crank.toml")).bodies)


def test_unit_definitions_are_si():
    xml = etree.fromstring(_xml(build("two_arms_box.toml")))
    for unit in xml.iter("Unit"):
        base = unit.find("BaseUnit")
        got = {k: int(v) for k, v in base.attrib.items()}
        assert got == UNITS[unit.get("name")]


def test_model_structure_dependencies():
    """Outputs: states depend on no input, accelerations and constraint forces on all inputs;
    InitialUnknowns: exactly the outputs, q[i] on q0 of its joint, qd[i] on qd0[i].  (A
    Co-Simulation FMU: with Model Exchange the states are knowns too, test_fmu_model_exchange.py.)"""
    fmu = build("four_bar.toml", interface="cs")
    md = read_model_description(str(fmu))
    index = {v: i + 1 for i, v in enumerate(md.modelVariables)}
    inputs = {v.name for v in md.modelVariables if v.causality == "input"}
    assert {"tau[1]", "closure_D.u[1]", "closure_D.active"} <= inputs
    outs = {u.variable.name: u for u in md.outputs}
    assert set(outs) == {v.name for v in md.modelVariables if v.causality == "output"}
    assert outs["q[1]"].dependencies == [] and outs["qd[2]"].dependencies == []
    assert outs["energy"].dependencies == []
    # accelerations and constraint forces depend on every input: the attribute is omitted,
    # which FMI 2.0 defines as "depends on all knowns" (fmpy: None)
    assert outs["qdd[1]"].dependencies is None and outs["closure_D.f[1]"].dependencies is None
    assert [d.name for d in outs["closure_D.err"].dependencies] == ["closure_D.active"]
    init = {u.variable.name: u for u in md.initialUnknowns}
    assert set(init) == set(outs)
    assert [d.name for d in init["q[2]"].dependencies] == ["q0[2]"]
    assert [d.name for d in init["qd[3]"].dependencies] == ["qd0[3]"]
    assert init["qdd[1]"].dependencies is None
    assert index[md.modelVariables[0]] == 1
    # quaternion coordinates depend on the whole quaternion's start value (normalization)
    md = read_model_description(str(build("spacecraft_rigid.toml")))
    init = {u.variable.name: u for u in md.initialUnknowns}
    model = load_model(example("spacecraft_rigid.toml"))
    joint, i = model.quaternion_slices()[0]
    assert [d.name for d in init[f"q[{i + 1}]"].dependencies] == \
        [f"q0[{k}]" for k in range(i + 1, i + 5)]


def test_capability_flags_and_variability(arm_fmu):
    xml = etree.fromstring(_xml(arm_fmu))
    cs = xml.find("CoSimulation")
    assert cs.get("canHandleVariableCommunicationStepSize") == "true"
    assert cs.get("canGetAndSetFMUstate") == "true"
    assert cs.get("canSerializeFMUstate") == "true"
    assert cs.get("needsExecutionTool") == "false"
    assert cs.get("modelIdentifier") == "Arm7"
    for sv in xml.iter("ScalarVariable"):
        assert sv.get("variability") is not None
        assert sv.get("description")
    assert xml.find("ModelStructure/InitialUnknowns") is not None
    assert xml.find("DefaultExperiment").get("stepSize") == "0.001"


def test_python_fmu_layout_and_unique_entry_modules():
    names = []
    for fmu in (build("arm7.urdf", name="Arm7", runtime="python"),
                build("double_pendulum.toml", runtime="python")):
        with zipfile.ZipFile(fmu) as zf:
            files = set(zf.namelist())
            entry = zf.read("resources/slavemodule.txt").decode()
            cfg = json.loads(zf.read("resources/fmu.json"))
        ident = cfg["identifier"]
        assert f"binaries/linux64/{ident}.so" in files
        assert f"resources/{entry}.py" in files and f"resources/{entry}_boot.py" in files
        assert "resources/engine/soa_fmu/integrators.py" in files
        assert "resources/engine/soa_fmu/fmu/slave.py" in files
        assert "resources/engine/soa_fmu/io/urdf.py" in files
        assert f"resources/{cfg['model_file']}" in files
        assert not any("__pycache__" in f for f in files)
        names.append(entry)
    assert names[0] != names[1]
    # a native model that includes a URDF brings the URDF along
    with zipfile.ZipFile(build("two_arms_box.toml", runtime="python")) as zf:
        assert any(f.startswith("resources/model/") and f.endswith(".urdf") for f in zf.namelist())


def test_native_fmu_layout(tmp_path):
    """binaries/linux64/<id>.so depending on libc/libm only and exporting only the FMI functions;
    sources/ holds every C file listed in SourceFiles (a source-code FMU); no Python inside."""
    import subprocess
    fmu = build("arm7.urdf", name="Arm7", runtime="native")
    with zipfile.ZipFile(fmu) as zf:
        files = set(zf.namelist())
        zf.extractall(tmp_path)
    assert "binaries/linux64/Arm7.so" in files
    assert not any(f.endswith(".py") for f in files)
    listed = list(dict.fromkeys(   # (listed by ModelExchange and by CoSimulation)
        f.get("name") for f in etree.fromstring(_xml(fmu)).iter("File")))
    assert "fmi2_cs.c" in listed and "articulated.c" in listed and "fmu_model.c" in listed
    assert sorted(f"sources/{n}" for n in listed) == sorted(
        f for f in files if f.startswith("sources/") and f.endswith(".c"))
    assert "sources/soa.h" in files and "sources/fmu.h" in files
    lib = tmp_path / "binaries" / "linux64" / "Arm7.so"
    needed = subprocess.run(["readelf", "-d", str(lib)], capture_output=True, text=True).stdout
    libs = sorted(line.split("[")[1].rstrip("]") for line in needed.splitlines() if "NEEDED" in line)
    assert all(n.startswith(("libc.so", "libm.so")) for n in libs), libs
    symbols = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True,
                             text=True).stdout.split()[2::3]
    assert symbols and all(s.startswith("fmi2") for s in symbols), symbols
    cs = etree.fromstring(_xml(fmu)).find("CoSimulation")
    assert cs.get("providesDirectionalDerivative") == "true"


def test_build_is_reproducible(tmp_path, monkeypatch):
    """Two builds are byte for byte the same FMU, every platform's binary included (the DLL's link
    stamps are a hash of its contents, native.stamp_pe; the Mach-O install name is the file's own
    name, not the temporary folder it was linked in)."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    a = build_fmu.build(example("pendulum.toml"), tmp_path / "a.fmu")
    b = build_fmu.build(example("pendulum.toml"), tmp_path / "b.fmu")
    with zipfile.ZipFile(a) as za, zipfile.ZipFile(b) as zb:
        assert za.namelist() == zb.namelist()
        for n in za.namelist():
            assert za.read(n) == zb.read(n), n
        dylib = za.read("binaries/darwin64/pendulum.dylib")
        assert b"@rpath/pendulum.dylib" in dylib and b"soa_fmu_native_" not in dylib


# ---------------------------------------------------------------- the command line
def test_cli_builds(tmp_path, capsys):
    out = tmp_path / "P.fmu"
    assert build_fmu.main([str(example("pendulum.toml")), "-o", str(out), "--name", "Pend",
                           "--integrator", "dop853", "--step", "0.002"]) == 0
    md = read_model_description(str(out))
    assert md.coSimulation.modelIdentifier == "Pend"
    assert md.defaultExperiment.stepSize == "0.002"
    var = {v.name: v for v in md.modelVariables}
    assert var["integrator"].start == "dop853" and float(var["max_step"].start) == 0.002


def test_cli_floating_base(tmp_path):
    out = tmp_path / "F.fmu"
    assert build_fmu.main([str(example("arm7.urdf")), "-o", str(out), "--floating-base"]) == 0
    md = read_model_description(str(out))
    names = {v.name for v in md.modelVariables}
    model = load_model(example("arm7.urdf"))
    assert f"q[{model.nq + 7}]" in names and f"tau[{model.nv + 6}]" in names


@pytest.mark.parametrize("args, text", [
    (["missing.urdf"], "no such model file"),
    (["{tmp}/model.txt"], "expected a .urdf or .toml"),
    (["{tmp}/bad.urdf"], "bad.urdf"),
    (["{tmp}/bad.toml"], "bad.toml"),
    (["{arm}", "--name", "2bad"], "not a valid model identifier"),
    (["{arm}", "--step", "-1"], "--step"),
    (["{arm}", "--integrator", "leapfrog"], "invalid choice"),
])
def test_cli_bad_input_one_line(tmp_path, capsys, args, text):
    (tmp_path / "model.txt").write_text("x")
    (tmp_path / "bad.urdf").write_text("<robot name='r'><link name='a'><joint></robot>")
    (tmp_path / "bad.toml").write_text("[[bodies]]\nname = 3\n")
    args = [a.format(tmp=tmp_path, arm=example("arm7.urdf")) for a in args]
    try:
        code = build_fmu.main(args + ["-o", str(tmp_path / "x.fmu")])
    except SystemExit as e:             # argparse errors
        code = e.code
    err = capsys.readouterr().err
    assert code != 0
    assert len(err.strip().splitlines()) == 1, err
    assert text in err
    assert not (tmp_path / "x.fmu").exists()


URDF_ODD_NAMES = """<?xml version="1.0"?>
<robot name="odd">
  <link name="base"/>
  <link name="arm-1"><inertial><mass value="1"/><origin xyz="0 0 0.2"/>
    <inertia ixx="0.01" iyy="0.01" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="tool tip"/>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="arm-1"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="10" velocity="3"/></joint>
  <joint name="tool" type="fixed"><parent link="arm-1"/><child link="tool tip"/>
    <origin xyz="0 0 0.4"/></joint>
</robot>
"""


def test_names_that_need_quoting(tmp_path):
    """Frame names that are not identifiers become quoted structured names; fmpy accepts them."""
    path = tmp_path / "odd.urdf"
    path.write_text(URDF_ODD_NAMES)
    fmu = build_fmu.build(path, tmp_path / "Odd.fmu")
    assert validate_fmu(str(fmu)) == []
    names = {v.name for v in read_model_description(str(fmu)).modelVariables}
    assert "'tool tip'.f_ext[1]" in names and "'tool tip'.position[3]" in names
    path.write_text(URDF_ODD_NAMES.replace("tool tip", "tool\\"))
    assert build_fmu.main([str(path), "-o", str(tmp_path / "Bad.fmu")]) == 1


URDF_NONPHYSICAL = """<?xml version="1.0"?>
<robot name="np">
  <link name="base"/>
  <link name="l1"><inertial><mass value="1"/><origin xyz="0 0 0.2"/>
    <inertia ixx="0.01" iyy="0.01" izz="0.05" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="10" velocity="3"/></joint>
</robot>
"""


def test_cli_lenient_and_one_warning_line(tmp_path, capsys):
    """A published-robot-style inertia (triangle inequality broken): refused in one line; with
    --lenient built with ONE warning line on stderr, and the FMU runs without repeating it."""
    path = tmp_path / "np.urdf"
    path.write_text(URDF_NONPHYSICAL)
    assert build_fmu.main([str(path), "-o", str(tmp_path / "a.fmu")]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "l1" in err
    assert "--lenient accepts" in err                # the way out, as the command line spells it
    for runtime in ("native", "python"):
        out = tmp_path / f"b_{runtime}.fmu"
        assert build_fmu.main([str(path), "-o", str(out), "--lenient", "--runtime", runtime]) == 0
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and err.startswith("soa-build-fmu: warning:")
        assert "accepted with --lenient" in err and "strict=False" not in err
        assert validate_fmu(str(out)) == []
        from fmu_fixtures import Instance
        inst = Instance(out).init()
        inst.fmu.doStep(0.0, 1e-3)
        assert not any(s >= 1 for s, _, _ in inst.messages)     # nothing above fmi2OK
        inst.close()


def test_absolute_include_is_bundled(tmp_path):
    """A native model file may include a URDF by absolute path: the FMU carries a copy and the
    bundled model file points at it (the python flavour loads it from there)."""
    import shutil
    from model_descriptions import EXAMPLES_DIR
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(EXAMPLES_DIR / "arm7.urdf", elsewhere / "arm.urdf")
    model = tmp_path / "m.toml"
    model.write_text(f'name = "abs"\nurdf = "{(elsewhere / "arm.urdf").as_posix()}"\n')
    for runtime in ("native", "python"):
        fmu = build_fmu.build(model, tmp_path / f"abs_{runtime}.fmu", runtime=runtime)
        with zipfile.ZipFile(fmu) as zf:
            names = zf.namelist()
            assert "resources/model/_included/0_arm.urdf" in names
            assert b"_included/0_arm.urdf" in zf.read("resources/model/m.toml")
        from fmu_fixtures import Instance
        inst = Instance(fmu).init()
        inst.fmu.doStep(0.0, 1e-3)
        inst.close()


def test_native_engine_is_compiled_once(tmp_path, monkeypatch):
    """The engine (core + FMI wrapper) is compiled once per platform and cache key into object
    files; a second build compiles only fmu_model.c, and its FMU steps to the same numbers.  Any
    change to a source, the flags, the compiler or its target is a new key (issue 24, 29).  (Two
    platforms: the host's, from the system compiler, and one of zig's.)"""
    from soa_fmu.fmpy_logging import simulate_fmu
    from soa_fmu.fmu import native
    monkeypatch.setenv("SOA_FMU_CACHE_DIR", str(tmp_path / "cache"))
    two = "x86_64-linux,aarch64-linux"
    before = dict(native.BUILD_STATS)
    a = build_fmu.build(example("double_pendulum.toml"), tmp_path / "a.fmu", platforms=two)
    assert native.BUILD_STATS["engine_compiled"] == before["engine_compiled"] + 2
    # one pool for both platforms: every C source of each compiled once, the largest first, each
    # job's CPU time taken (benchmarks/bench_platforms.py reports them)
    with zipfile.ZipFile(a) as zf:
        size = {n.rsplit("/", 1)[1]: zf.getinfo(n).file_size for n in zf.namelist()
                if n.startswith("sources/") and n.endswith(".c")}
    jobs = native.BUILD_STATS["jobs"]
    assert sorted((p, n) for p, n, _ in jobs) == sorted(
        (p, n) for p in two.split(",") for n in size)
    assert [size[n] for _, n, _ in jobs] == sorted((size[n] for _, n, _ in jobs), reverse=True)
    assert all(cpu > 0 for _, _, cpu in jobs)
    b = build_fmu.build(example("double_pendulum.toml"), tmp_path / "b.fmu", name="Other",
                        platforms=two)
    assert native.BUILD_STATS["engine_compiled"] == before["engine_compiled"] + 2
    assert native.BUILD_STATS["engine_reused"] == before["engine_reused"] + 2
    assert sorted((p, n) for p, n, _ in native.BUILD_STATS["jobs"]) == [
        ("aarch64-linux", "fmu_model.c"), ("x86_64-linux", "fmu_model.c")]
    folders = sorted((tmp_path / "cache" / "native").iterdir())
    assert [f.name.rsplit("-", 1)[0] for f in folders] == ["aarch64-linux", "x86_64-linux"]
    for folder in folders:
        objects = {p.stem.rsplit("-", 1)[0] for p in folder.glob("*.o")}
        assert objects >= {"articulated", "instance", "fmi2_cs", "fmi2_me"}
        assert "fmu_model" not in objects
    ra, rb = (simulate_fmu(str(f), stop_time=0.05, output_interval=1e-3, output=["q[1]", "q[2]"])
              for f in (a, b))
    assert ra["q[1]"][-1] != ra["q[1]"][0]
    assert list(ra["q[1]"]) == list(rb["q[1]"]) and list(ra["q[2]"]) == list(rb["q[2]"])
    # FMI 3.0 reuses the core's objects: only its interface (fmi3.c) compiles
    c = build_fmu.build(example("double_pendulum.toml"), tmp_path / "c.fmu", fmi=3, platforms=two)
    assert native.BUILD_STATS["engine_compiled"] == before["engine_compiled"] + 4
    new = {p.stem.rsplit("-", 1)[0] for f in folders for p in f.glob("*.o")
           if p.stat().st_mtime_ns > a.stat().st_mtime_ns}
    assert new == {"fmi3"} and c.is_file()
    engine = {p.name: p.read_bytes() for p in native.source_files(2)}
    arm, win = (native.toolchain(native.PLATFORMS[n]) for n in ("aarch64-linux", "x86_64-windows"))
    key = native.engine_key(engine, arm)
    assert native.engine_key(engine, win) != key
    assert native.engine_key({p.name: p.read_bytes() for p in native.source_files(3)}, arm) == key
    engine["soa.h"] += b"\n"                 # a header: every object anew
    assert native.engine_key(engine, arm) != key
    a1 = native.object_name("articulated.c", engine["articulated.c"])
    assert native.object_name("articulated.c", engine["articulated.c"] + b"\n") != a1
