"""Bad and hostile model files: each gives ONE ModelError naming the file, the line/element and the
problem; mutated valid files give a Model or a ModelError, never another exception."""
from __future__ import annotations

import re
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import soa_fmu as sf
from model_descriptions import example_path
from soa_fmu.io import load_model
from soa_fmu.io.checks import MAX_FILE_BYTES
from soa_fmu.model import ModelError

LINK = ('<link name="{}">\n  <inertial><mass value="1"/>'
        '<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial>\n</link>')


def urdf(*parts: str) -> str:
    return '<?xml version="1.0"?>\n<robot name="r">\n' + "\n".join(parts) + "\n</robot>\n"


def jnt(name: str, parent: str, child: str, jtype: str = "revolute", extra: str = "") -> str:
    return (f'<joint name="{name}" type="{jtype}">\n  <parent link="{parent}"/>\n'
            f'  <child link="{child}"/>{extra}\n</joint>')


ARM = urdf(LINK.format("base"), LINK.format("upper"), jnt("shoulder", "base", "upper"))   # lines 3..9

URDF_CASES = {
    "malformed": ('<robot name="r"><link name="a">\n</robot>', r"m\.urdf:2: malformed XML"),
    "empty": ("", r"m\.urdf:\d+: malformed XML"),
    "not a robot": ('<model name="x"/>', r"m\.urdf:1: model 'x': the root element must be <robot>"),
    "unknown joint type": (urdf(LINK.format("a"), LINK.format("b"), jnt("j", "a", "b", "ball")),
                           r"m\.urdf:9: joint 'j' type: unknown joint type 'ball' \(expected one of "
                           r"revolute, continuous"),
    "unknown parent": (urdf(LINK.format("a"), LINK.format("b"), jnt("j", "x", "b")),
                       r"m\.urdf:10: joint 'j' <parent> link: unknown parent link 'x'"),
    "unknown child": (urdf(LINK.format("a"), LINK.format("b"), jnt("j", "a", "y")),
                      r"m\.urdf:11: joint 'j' <child> link: unknown child link 'y'"),
    "duplicate link": (urdf(LINK.format("a"), LINK.format("a")),
                       r"m\.urdf:6: link 'a': duplicate link name \(first defined on line 3\)"),
    "duplicate joint": (urdf(LINK.format("a"), LINK.format("b"), LINK.format("c"), jnt("j", "a", "b"),
                             jnt("j", "a", "c")),
                        r"m\.urdf:16: joint 'j': duplicate joint name \(first defined on line 12\)"),
    "two parents": (urdf(LINK.format("a"), LINK.format("b"), LINK.format("c"), jnt("j1", "a", "c"),
                         jnt("j2", "b", "c")),
                    r"m\.urdf:16: joint 'j2': link 'c' has two parents: joint 'j1' \(line 12\)"),
    "two roots": (urdf(LINK.format("a"), LINK.format("b")),
                  r"m\.urdf: more than one root link: 'a' \(line 3\), 'b' \(line 6\)"),
    "cycle": (urdf(LINK.format("a"), LINK.format("b"), LINK.format("c"), jnt("j1", "a", "b"),
                   jnt("j2", "b", "c"), jnt("j3", "c", "a")),
              r"m\.urdf:\d+: joint 'j\d': the links form a cycle \((a -> b -> c -> a|b -> c -> a -> b|"
              r"c -> a -> b -> c)\)"),
    "cycle beside a root": (urdf(LINK.format("r0"), LINK.format("a"), LINK.format("b"),
                                 jnt("j1", "a", "b"), jnt("j2", "b", "a")),
                            r"m\.urdf:\d+: joint 'j\d': the links form a cycle"),
    "self parent": (urdf(LINK.format("a"), jnt("j", "a", "a")),
                    r"m\.urdf:6: joint 'j': parent and child are the same link 'a'"),
    "zero axis": (urdf(LINK.format("a"), LINK.format("b"), jnt("j", "a", "b", extra='\n<axis xyz="0 0 0"/>')),
                  r"m\.urdf:12: joint 'j' <axis> xyz: zero-length axis '0 0 0'"),
    "negative mass": (ARM.replace('<mass value="1"/>', '<mass value="-2"/>', 1),
                      r"m\.urdf:4: link 'base' <mass> value: negative mass -2\.0"),
    "massless moving leaf": (urdf(LINK.format("a"), '<link name="b"/>', jnt("j", "a", "b")),
                             r"m\.urdf:7: joint 'j' \(child link 'b'\) moves only massless bodies"),
    "massless moving subtree": (urdf(LINK.format("a"), '<link name="b"/>', '<link name="c"/>',
                                     jnt("j", "a", "b"), jnt("f", "b", "c", "fixed")),
                                r"m\.urdf:8: joint 'j' \(child link 'b'\) moves only massless bodies"),
    "point mass on the axis": (urdf(LINK.format("a"), '<link name="b"><inertial><mass value="1"/>'
                                    '<inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/>'
                                    '</inertial></link>', jnt("j", "a", "b")),
                               r"m\.urdf:7: joint 'j' \(child link 'b'\) has no inertia along one of "
                               r"its dofs"),
    "inertia not PSD": (ARM.replace('ixx="0.1" ixy="0"', 'ixx="0.1" ixy="0.5"', 1),
                        r"m\.urdf:4: link 'base' <inertia>: inertia tensor is not positive "
                        r"semi-definite"),
    "triangle inequality": (ARM.replace('izz="0.1"', 'izz="0.3"', 1),
                            r"m\.urdf:4: link 'base' <inertia>: principal inertias .* violate the "
                            r"triangle inequality"),
    "nan": (ARM.replace('<parent link="base"/>', '<parent link="base"/><origin xyz="0 nan 0"/>'),
            r"m\.urdf:\d+: joint 'shoulder' <origin> xyz: 'nan' is not a finite number"),
    "inf mass": (ARM.replace('<mass value="1"/>', '<mass value="inf"/>', 1),
                 r"m\.urdf:4: link 'base' <mass> value: 'inf' is not a finite number"),
    "absurd magnitude": (ARM.replace('<parent link="base"/>', '<parent link="base"/><axis xyz="0 0 1e200"/>'),
                         r"m\.urdf:\d+: joint 'shoulder' <axis> xyz: '1e200' is out of range"),
    "garbage number": (ARM.replace('ixx="0.1"', 'ixx="0.1.2"', 1),
                       r"m\.urdf:4: link 'base' <inertia> ixx: '0\.1\.2' is not a number"),
    "wrong count": (ARM.replace('<parent link="base"/>', '<parent link="base"/><origin rpy="0 1"/>'),
                    r"m\.urdf:\d+: joint 'shoulder' <origin> rpy: expected 3 numbers, got 2"),
    "missing type": (ARM.replace(' type="revolute"', ""),
                     r"m\.urdf:9: joint 'shoulder' type: missing required attribute"),
    "missing name": (ARM.replace('<link name="upper">', "<link>"),
                     r"m\.urdf:6: <link> name: missing required attribute"),
    "missing mass": (ARM.replace('<mass value="1"/>', "", 1),
                     r"m\.urdf:4: link 'base' <inertial>: missing required <mass> element"),
    "missing child": (ARM.replace('  <child link="upper"/>', ""),
                      r"m\.urdf:9: joint 'shoulder': missing required <child> element"),
    "two axes": (urdf(LINK.format("a"), LINK.format("b"),
                      jnt("j", "a", "b", extra='\n<axis xyz="1 0 0"/>\n<axis xyz="0 1 0"/>')),
                 r"m\.urdf:13: joint 'j' <axis>: more than one <axis> in this <joint>"),
    "no links": ('<robot name="r"/>', r"m\.urdf:1: robot 'r': no <link> elements"),
}


def assert_located_error(path, text: str, expected: str) -> None:
    """Loading ``text`` from ``path`` raises ONE ModelError line that starts with the file name and
    matches ``expected`` (line, element, problem)."""
    path.write_text(text)
    with pytest.raises(ModelError) as err:
        load_model(path)
    msg = str(err.value)
    assert msg.startswith(str(path)), msg
    assert re.search(expected, msg), msg
    assert "\n" not in msg


@pytest.mark.parametrize("case", sorted(URDF_CASES))
def test_bad_urdf(tmp_path, case):
    assert_located_error(tmp_path / "m.urdf", *URDF_CASES[case])


# ---------------------------------------------------------------- hostile XML
BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol9 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
]>
<robot name="&lol9;"><link name="&lol9;"/></robot>
"""


def test_billion_laughs_is_refused(tmp_path):
    path = tmp_path / "bomb.urdf"
    path.write_text(BILLION_LAUGHS)
    with pytest.raises(ModelError, match=r"bomb\.urdf:2: DOCTYPE declarations are not allowed"):
        load_model(path)


def test_external_entity_is_not_read(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-CONTENT")
    path = tmp_path / "xxe.urdf"
    path.write_text(f'<?xml version="1.0"?>\n<!DOCTYPE r [<!ENTITY x SYSTEM "file://{secret}">]>\n'
                    '<robot name="&x;"><link name="&x;"/></robot>\n')
    with pytest.raises(ModelError, match=r"xxe\.urdf:2: DOCTYPE") as err:
        load_model(path)
    assert "TOP-SECRET" not in str(err.value)
    # an entity declaration without a DOCTYPE line is refused too (before the parser sees it)
    path.write_text('<robot name="r">\n<!ENTITY x SYSTEM "file:///etc/passwd">\n</robot>')
    with pytest.raises(ModelError, match=r"xxe\.urdf:2: ENTITY declarations are not allowed"):
        load_model(path)


def test_exotic_encodings_cannot_hide_a_dtd(tmp_path):
    path = tmp_path / "u7.urdf"        # "+ADw-" is "<" in UTF-7: the DOCTYPE is invisible as bytes
    path.write_bytes(b'<?xml version="1.0" encoding="UTF-7"?>\n+ADw-!DOCTYPE r +AFs-+ADw-!ENTITY a '
                     b'"b"+AD4-+AF0-+AD4-\n<robot name="+ACY-a;"><link name="a"/></robot>')
    with pytest.raises(ModelError, match=r"u7\.urdf: a URDF file must be UTF-8"):
        load_model(path)
    path.write_bytes('<robot name="r"><link name="a"/></robot>'.encode("utf-16"))
    with pytest.raises(ModelError, match=r"u7\.urdf: a URDF file must be UTF-8"):
        load_model(path)


@pytest.mark.parametrize("suffix", [".urdf", ".toml"])
def test_file_too_large(tmp_path, suffix):
    path = tmp_path / f"big{suffix}"
    with open(path, "wb") as f:
        f.truncate(MAX_FILE_BYTES + 10)
    with pytest.raises(ModelError, match=r"big\.(urdf|toml): file larger than 20 MB"):
        load_model(path)


def test_missing_file_and_unknown_suffix(tmp_path):
    with pytest.raises(ModelError, match=r"nothing\.urdf: cannot read model file: No such file"):
        load_model(tmp_path / "nothing.urdf")
    with pytest.raises(ModelError, match=r"model\.sdf: unknown model file type '\.sdf'"):
        load_model(tmp_path / "model.sdf")


# ---------------------------------------------------------------- native files
BODY = """
[[bodies]]
name = "{name}"
parent = "{parent}"
mass = 1.0
inertia = [0.1, 0.1, 0.1]
joint = {{ type = "revolute", axis = [0, 0, 1] }}
"""
CHAIN = BODY.format(name="a", parent="world") + BODY.format(name="b", parent="a")   # lines 2..15

TOML_CASES = {
    "malformed": ("[[bodies]\nname = 1", r"m\.toml: malformed TOML: .*line 1"),
    "unknown joint type": (CHAIN.replace('type = "revolute"', 'type = "ball"', 1),
                           r"m\.toml:7: bodies\[0\]\.joint\.type: unknown joint type 'ball' \(expected "
                           r"one of fixed, revolute"),
    "unknown parent": (CHAIN.replace('parent = "a"', 'parent = "x"'),
                       r"m\.toml:11: bodies\[1\]\.parent: unknown parent body 'x'"),
    "duplicate body": (CHAIN.replace('name = "b"', 'name = "a"'),
                       r"m\.toml:9: bodies\[1\]: duplicate body name 'a' \(also in bodies\[0\]\)"),
    "duplicate joint": (CHAIN.replace("axis = [0, 0, 1] }", 'axis = [0, 0, 1], name = "j" }'),
                        r"m\.toml:9: bodies\[1\]: duplicate joint name 'j'"),
    "duplicate frame": (CHAIN + '[[frames]]\nname = "f"\nbody = "a"\n[[frames]]\nname = "f"\nbody = "b"\n',
                        r"m\.toml:18: frames\[1\]: duplicate frame name 'f'"),
    "cycle": (CHAIN.replace('parent = "world"', 'parent = "b"'),
              r"m\.toml:2: bodies\[0\]: not connected to world: the parents of bodies\[0\], "
              r"bodies\[1\] form a cycle"),
    "zero axis": (CHAIN.replace("axis = [0, 0, 1]", "axis = [0, 0, 0]", 1),
                  r"m\.toml:7: bodies\[0\]\.joint\.axis: zero-length axis"),
    "negative mass": (CHAIN.replace("mass = 1.0", "mass = -1.0", 1),
                      r"m\.toml:5: bodies\[0\]\.mass: negative mass -1\.0"),
    "massless moving leaf": (BODY.format(name="a", parent="world") + '\n[[bodies]]\nname = "b"\n'
                             'parent = "a"\njoint = { type = "prismatic", axis = [1, 0, 0] }\n',
                             r"m\.toml:9: bodies\[1\]: joint 'b' \(body 'b'\) moves only massless"),
    "inertia not PSD": (CHAIN.replace("inertia = [0.1, 0.1, 0.1]", "inertia = [0.1, -0.1, 0.1]", 1),
                        r"m\.toml:6: bodies\[0\]\.inertia: inertia tensor is not positive semi-definite"),
    "triangle inequality": (CHAIN.replace("inertia = [0.1, 0.1, 0.1]", "inertia = [0.1, 0.1, 0.3]", 1),
                            r"m\.toml:6: bodies\[0\]\.inertia: principal inertias .* triangle"),
    "nan": (CHAIN.replace("mass = 1.0", "mass = nan", 1),
            r"m\.toml:5: bodies\[0\]\.mass: nan is not a finite number"),
    "inf in a vector": (CHAIN.replace("axis = [0, 0, 1]", "axis = [0, inf, 1]", 1),
                        r"m\.toml:7: bodies\[0\]\.joint\.axis: inf is not a finite number"),
    "absurd magnitude": (CHAIN.replace("mass = 1.0", "mass = 1.0\ncom = [1e300, 0, 0]", 1),
                         r"m\.toml:6: bodies\[0\]\.com: 1e\+300 is out of range \(magnitude above 1e\+12\)"),
    "string number": (CHAIN.replace("mass = 1.0", 'mass = "heavy"', 1),
                      r"m\.toml:5: bodies\[0\]\.mass: 'heavy' is not a number"),
    "missing name": (CHAIN.replace('name = "a"\n', "", 1),
                     r"m\.toml:2: bodies\[0\]: missing required key 'name'"),
    "missing joint type": (CHAIN.replace('type = "revolute", ', "", 1),
                           r"m\.toml:7: bodies\[0\]\.joint: missing required key 'type'"),
    "missing joint": (CHAIN.replace('joint = { type = "revolute", axis = [0, 0, 1] }\n', "", 1),
                      r"m\.toml:2: bodies\[0\]: missing required key 'joint'"),
    "unknown key": (CHAIN.replace("mass = 1.0", "mas = 1.0", 1),
                    r"m\.toml:5: bodies\[0\]\.mas: unknown key \(expected one of com, flexible, inertia"),
    "axis on a spherical joint": (CHAIN.replace('"revolute"', '"spherical"', 1),
                                  r"m\.toml:7: bodies\[0\]\.joint\.axis: unknown key"),
    "wrong vector length": (CHAIN.replace("axis = [0, 0, 1]", "axis = [0, 1]", 1),
                            r"m\.toml:7: bodies\[0\]\.joint\.axis: expected 3 numbers, got 2"),
    "non-commuting general joint": (
        CHAIN.replace('type = "revolute", axis = [0, 0, 1]',
                      'type = "general", S = [[1, 0], [0, 1], [0, 0], [0, 0], [0, 0], [0, 0]]', 1),
        r"m\.toml:7: bodies\[0\]\.joint: general joint: columns 1 and 2 of S do not commute"),
    "unknown constraint kind": (CHAIN + '[[constraints]]\nname = "c"\nkind = "glue"\n'
                                'frame_a = "a"\nframe_b = "b"\n',
                                r"m\.toml:\d+: constraints\[0\]\.kind: unknown constraint kind 'glue'"),
    "constraint to unknown frame": (CHAIN + '[[constraints]]\nname = "c"\nkind = "weld"\n'
                                    'frame_a = "a"\nframe_b = "nowhere"\n',
                                    r"m\.toml:15: constraints\[0\]: unknown body 'nowhere'"),
    "initial wrong length": (CHAIN + "[initial]\nq = [1.0, 2.0, 3.0]\n",
                             r"m\.toml:16: initial\.q: expected 2 numbers, got 3"),
    "initial unknown joint": (CHAIN + "[initial]\nq = { c = 1.0 }\n",
                              r"m\.toml:16: initial\.q\.c: unknown joint"),
    "initial bad quaternion": (CHAIN.replace('"revolute", axis = [0, 0, 1]', '"spherical"', 1)
                               + "[initial]\nq = { a = [1.0, 1.0, 0.0, 0.0] }\n",
                               r"m\.toml:16: initial\.q: quaternion of joint 'a' \(q\[1\.\.4\]\) has "
                               r"norm 1\.41421356, not 1"),
    "missing include": ('[[include]]\nurdf = "missing.urdf"\n',
                        r"m\.toml:1: include\[0\]: .*missing\.urdf: cannot read model file"),
    "floating base without urdf": ("floating_base = true\n" + CHAIN,
                                   r"m\.toml:1: floating_base: applies only to a top-level 'urdf'"),
    "not a table": ("bodies = 3\n", r"m\.toml:1: bodies: expected an array of tables"),
    "asymmetric inertia": (CHAIN.replace("inertia = [0.1, 0.1, 0.1]",
                                         "inertia = [[0.1, 0.05, 0], [0, 0.1, 0], [0, 0, 0.1]]", 1),
                           r"m\.toml:6: bodies\[0\]\.inertia: inertia tensor is not symmetric"),
    "strict not a boolean": ('strict = "no"\n' + CHAIN,
                             r"m\.toml:1: strict: expected a boolean \(true/false\), got a string"),
}


@pytest.mark.parametrize("case", sorted(TOML_CASES))
def test_bad_native(tmp_path, case):
    assert_located_error(tmp_path / "m.toml", *TOML_CASES[case])


# ---------------------------------------------------------------- strict=False
PHYSICAL_ONLY = {"inertia not PSD", "triangle inequality"}     # the cases strict=False accepts
LOCKED = {"massless moving leaf", "massless moving subtree"}   # URDF: strict=False locks the joint


@pytest.mark.parametrize("suffix, case", [(".urdf", c) for c in sorted(URDF_CASES)]
                         + [(".toml", c) for c in sorted(TOML_CASES)])
def test_strict_false_accepts_only_non_physical_inertias(tmp_path, suffix, case):
    text, expected = (URDF_CASES if suffix == ".urdf" else TOML_CASES)[case]
    path = tmp_path / f"m{suffix}"
    path.write_text(text)
    if suffix == ".urdf" and case in LOCKED:  # read as fixed, one warning naming the joint
        with pytest.raises(ModelError, match="strict=False locks such joints"):
            load_model(path)
        with pytest.warns(sf.ModelWarning) as caught:
            model = load_model(path, strict=False)
        line = re.search(r"m\\.urdf:(\d+)", expected).group(1)
        assert [str(w.message) for w in caught] == [
            f"{path}: 1 joint moving only massless links locked (read as fixed; accepted with "
            f"strict=False): 'j' (line {line})"]
        assert model.nv == 0 and model.bodies[model.body_index("b")].joint.nv == 0
        return
    if case not in PHYSICAL_ONLY:            # NaN, negative mass, bad XML, massless body (TOML), ...
        with pytest.raises(ModelError) as err:
            load_model(path, strict=False)
        assert str(err.value).startswith(str(path)) and re.search(expected, str(err.value))
        return
    with pytest.warns(sf.ModelWarning) as caught:
        model = load_model(path, strict=False)
    assert len(caught) == 1
    msg = str(caught[0].message)        # the strict error, naming the body, plus a note
    if suffix == ".toml":
        expected = expected.replace(r"\.inertia: ", r"\.inertia: body 'a': ")
    assert msg.startswith(str(path)) and re.search(expected, msg), msg
    assert "link 'base' <inertia>" in msg if suffix == ".urdf" else "body 'a'" in msg
    assert msg.endswith("(accepted with strict=False: not the inertia of a rigid body)")
    q, z = model.neutral_configuration(), np.zeros(model.nv)
    assert np.all(np.isfinite(sf.forward_dynamics(model, q, z, z)))


def test_strict_key_of_a_native_file(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text("strict = false\n" + TOML_CASES["triangle inequality"][0])
    with pytest.warns(sf.ModelWarning, match=r"m\.toml:7: bodies\[0\]\.inertia: body 'a': principal "
                                         r"inertias .* triangle inequality"):
        assert load_model(path).nv == 2
    path.write_text("strict = true\n" + TOML_CASES["triangle inequality"][0])
    with pytest.raises(ModelError, match=r"m\.toml:7: bodies\[0\]\.inertia: principal inertias"):
        load_model(path)


def test_strict_false_still_checks_the_joint_space_inertia(tmp_path):
    # a non-PSD link inertia can make a joint's inertia negative (D < 0 at the neutral configuration)
    path = tmp_path / "m.urdf"
    path.write_text(ARM.replace('ixx="0.1"', 'ixx="-0.1"', 2))
    with pytest.raises(ModelError, match=r"m\.urdf:9: joint 'shoulder' \(child link 'upper'\) has "
                                         r"negative inertia along one of its dofs"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            load_model(path, strict=False)


@pytest.mark.parametrize("text", [BILLION_LAUGHS, '<robot name="r">\n<!ENTITY x SYSTEM "f">\n</robot>'])
def test_strict_false_still_refuses_hostile_xml(tmp_path, text):
    path = tmp_path / "bomb.urdf"
    path.write_text(text)
    with pytest.raises(ModelError, match=r"bomb\.urdf:2: (DOCTYPE|ENTITY) declarations are not allowed"):
        load_model(path, strict=False)


def test_error_in_an_included_urdf_names_both_files(tmp_path):
    (tmp_path / "arm.urdf").write_text(ARM.replace('<mass value="1"/>', '<mass value="-1"/>', 1))
    path = tmp_path / "m.toml"
    path.write_text('name = "x"\n[[include]]\nurdf = "arm.urdf"\nprefix = "l_"\n')
    with pytest.raises(ModelError, match=r"m\.toml:2: include\[0\]: .*arm\.urdf:4: link 'base' "
                                         r"<mass> value: negative mass"):
        load_model(path)


def test_duplicate_include_without_prefix(tmp_path):
    path = tmp_path / "m.toml"
    arm = example_path("arm7.urdf")
    path.write_text(f'[[include]]\nurdf = "{arm}"\n[[include]]\nurdf = "{arm}"\n')
    with pytest.raises(ModelError, match=r"m\.toml:3: include\[1\]: duplicate body name 'base_link' "
                                         r"\(also in include\[0\]\)"):
        load_model(path)


def test_not_utf8(tmp_path):
    path = tmp_path / "m.toml"
    path.write_bytes(b'name = "\xff\xfe"\n')
    with pytest.raises(ModelError, match=r"m\.toml: not a UTF-8 text file"):
        load_model(path)


# ---------------------------------------------------------------- mutations (hypothesis)
NUMBER = re.compile(r"-?\d+\.?\d*(?:e-?\d+)?")
REPLACEMENTS = ["nan", "-1", "inf", "-inf", "abc", "1e400", "0", "-0.0", "", "1 2", "true", "[]"]


def load_text(text: str, suffix: str) -> None:
    """Load ``text`` as a model file: a Model (whose dynamics then run) or a ModelError."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / f"m{suffix}"
        path.write_text(text)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = load_model(path)
        except ModelError:
            return
    # a model that loads is physically usable: its dynamics are finite at the neutral state
    q, z = model.neutral_configuration(), np.zeros(model.nv)
    assert np.all(np.isfinite(sf.forward_dynamics(model, q, z, z)))


def mutations(text: str):
    """Strategy: the text with one structural or numeric mutation."""
    lines = text.splitlines(keepends=True)
    numbers = [m.span() for m in NUMBER.finditer(text)]
    if not numbers:
        return st.just(text)

    def replace_number(args):
        i, new = args
        a, b = numbers[i % len(numbers)]
        return text[:a] + new + text[b:]

    def delete_line(i):
        return "".join(lines[:i % len(lines)] + lines[i % len(lines) + 1:])

    def duplicate_line(i):
        i %= len(lines)
        return "".join(lines[:i + 1] + lines[i:])

    idx = st.integers(0, 10_000)
    return st.one_of(
        st.tuples(idx, st.sampled_from(REPLACEMENTS)).map(replace_number),
        idx.map(delete_line),
        idx.map(duplicate_line),
        idx.map(lambda n: text[:n % len(text)]),                                  # truncated
        st.tuples(idx, st.sampled_from(["<", "&", "]]", '"', "=", "[[bodies]]\n", "\x00"]))
        .map(lambda a: text[:a[0] % len(text)] + a[1] + text[a[0] % len(text):]),
    )


MUTATION_SETTINGS = settings(max_examples=300, deadline=None, derandomize=True,
                             suppress_health_check=[HealthCheck.too_slow])
URDF_TEXT = urdf(LINK.format("base"), LINK.format("upper"), LINK.format("fore"), '<link name="tool"/>',
                 jnt("shoulder", "base", "upper", extra='\n<origin xyz="0 0 0.3" rpy="0 0.1 0"/>'
                     '\n<axis xyz="0 1 0"/>\n<limit lower="-1" upper="1" velocity="2" effort="3"/>'),
                 jnt("elbow", "upper", "fore", "prismatic", '\n<origin xyz="0 0 0.4"/><axis xyz="0 0 1"/>'),
                 jnt("tool_joint", "fore", "tool", "fixed", '\n<origin xyz="0 0 0.1"/>'))


@MUTATION_SETTINGS
@given(mutations(URDF_TEXT))
def test_mutated_urdf_gives_model_or_model_error(text):
    load_text(text, ".urdf")


@MUTATION_SETTINGS
@given(mutations(example_path("four_bar.toml").read_text()))
def test_mutated_native_gives_model_or_model_error(text):
    load_text(text, ".toml")


@MUTATION_SETTINGS
@given(mutations(example_path("two_arms_box.toml").read_text().replace(
    "arm7.urdf", str(example_path("arm7.urdf")))))
def test_mutated_native_with_includes_gives_model_or_model_error(text):
    load_text(text, ".toml")
