"""Issue 18 / 17.5-6 in the engine and the readers: every step bounded (a sub-step cap and a floor
on max_step), a diverged step reported as a divergence naming the largest state component and
what to change, the user's own argument named, StatusError printing its message, hostile TOML
refused in one line, and model descriptions that grow O(N)."""
from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import soa_fmu as sf
from fmu_fixtures import REPO, example, subprocess_env
from soa_fmu import _core
from soa_fmu.model import ModelError


def arm():
    return sf.load_model(example("arm7.urdf"))


# ---------------------------------------------------------------- bounded steps
def test_the_bounds_are_what_the_docs_say():
    assert _core.MAX_SUBSTEPS == sf.integrators.MAX_SUBSTEPS == 100_000
    assert _core.MIN_MAX_STEP == 1e-9
    doc = (REPO / "docs" / "fmu.md").read_text()
    assert "100 000 sub-steps" in doc and "1e-9 s" in doc and "20 000" in doc


@pytest.mark.parametrize("max_step", [1e-300, 5e-10, 0.0, -1e-3, math.nan])
def test_max_step_below_the_floor_is_refused_by_name(max_step):
    with pytest.raises(ValueError, match="max_step must be"):
        sf.Simulator(arm(), max_step=max_step)
    sim = sf.Simulator(arm())
    with pytest.raises(ValueError, match="max_step"):
        sim.set_method("rk4", max_step=max_step)


@pytest.mark.parametrize("method", ["rk4", "euler"])
def test_a_step_needing_too_many_substeps_is_refused_at_once(method):
    """h = 1e5 s with max_step = 1e-9 s would be 1e14 sub-steps (hours): refused before any, the
    message naming h, max_step and the count; the state unchanged and the simulator usable."""
    sim = sf.Simulator(arm(), method=method, max_step=1e-9)
    q = sim.q.copy()
    with pytest.raises(sf.IntegrationError,
                       match=r"h / max_step = 100000\.0 / 1e-09 needs 1e\+14 sub-steps, more than "
                             r"the 100000"):
        sim.step(1e5)
    np.testing.assert_array_equal(sim.q, q)
    assert sim.t == 0.0
    sim.step(1e-6)                              # 1000 sub-steps: fine
    assert sim.t == 1e-6
    # exactly at the cap: runs; one more: refused
    sim.set_method(method, max_step=1e-9)
    sim.step(1e-4 * (1 - 1e-12))
    with pytest.raises(sf.IntegrationError, match="sub-steps"):
        sim.step(1.0001e-4)


def test_the_kernels_refuse_more_substeps_than_the_cap():
    model = arm()
    q, qd = model.neutral_configuration(), np.zeros(model.nv)
    with pytest.raises(_core.StatusError) as e:
        _core.rk4(model.data, q, qd, np.zeros(model.nv), False, 1e-9, _core.MAX_SUBSTEPS + 1)
    assert e.value.args[1] == _core.TOO_MANY_SUBSTEPS and "max_step" in str(e.value)


def test_dop853_gives_up_after_its_bounded_number_of_steps():
    """Tolerances the setters accept and a huge step: the adaptive method stops after
    SOA_DOP853_MAX_STEPS (20 000) attempts instead of running on."""
    model = arm()
    sim = sf.Simulator(model, qd0=np.r_[5.0, 5.0, 0.0, 10.0, 0.0, 0.0, 0.0], method="dop853",
                       rtol=1e-12, atol=1e-12)
    with pytest.raises(sf.IntegrationError, match="more than 20000 steps"):
        sim.step(1e5)
    assert sim.t == 0.0


# ---------------------------------------------------------------- true causes
def diverging_simulator(method="euler"):
    """Explicit Euler at h = 1 ms on the arm with a damping of 1000 N·m·s/rad on links of
    ~1e-3 kg·m²: |1 - h d / I| >> 1, the step diverges (a healthy model: D is fine at q0)."""
    model = arm()
    model.joint_damping = np.full(model.nv, 1e3)
    sim = sf.Simulator(model, method=method, max_step=1e-3)
    sim.qd[4] = 0.1
    return sim


def test_a_diverged_step_is_reported_as_a_divergence():
    sim = diverging_simulator()                 # (D is regular at q0: the first steps succeed)
    with pytest.raises(sf.IntegrationError) as e:
        for _ in range(1000):
            sim.step(1e-3)
    msg = str(e.value)
    assert msg.startswith("the step diverged: ") and "singular" not in msg
    assert "the largest state component" in msg and "integrator" in msg and "max_step" in msg
    # it names the component that is largest at the failure, and its value
    import re
    m = re.search(r"(q|qd)\[(\d)\] \((joint\d)\) reached (\S+),", msg)
    assert m and abs(float(m[4])) > 1e6, msg
    assert sim.t > 0.0 and np.all(np.isfinite(sim.qd))           # the state before the step


def test_a_singular_model_is_still_reported_as_singular():
    """A massless leaf: D is singular at the start of the step, that is the cause."""
    from soa_fmu.joints import Revolute
    model = sf.Model("m")
    model.add_body("a", joint=Revolute([0, 0, 1]), mass=0.0)
    q, qd = model.neutral_configuration(), np.zeros(model.nv)
    with pytest.raises(_core.StatusError, match="singular"):
        _core.rk4(model.data, q, qd, np.zeros(model.nv), False, 1e-3, 3)


def test_simulate_names_the_users_own_argument():
    with pytest.raises(ValueError, match=r"^simulate: dt must be finite and > 0, got -0\.001$"):
        sf.simulate(arm(), 0.01, dt=-1e-3)
    with pytest.raises(ValueError, match="max_step"):
        sf.simulate(arm(), 0.01, dt=1e-3, max_step=1e-300)


def test_status_error_prints_its_message():
    model = arm()
    q = model.neutral_configuration()
    q[1] = math.nan
    with pytest.raises(_core.StatusError) as e:
        sf.forward_dynamics(model, q, np.zeros(model.nv), np.zeros(model.nv))
    assert str(e.value) == "q[2] (joint2) is not finite"
    assert e.value.args == ("q[2] (joint2) is not finite", _core.BAD_Q, 1)   # attributes kept
    assert "StatusError: q[2] (joint2) is not finite" in repr(e.getrepr())


# ---------------------------------------------------------------- hostile TOML
def nested(depth: int, kind: str) -> str:
    if kind == "array":
        return "name = " + "[" * depth + "]" * depth + "\n"
    return "name = " + "{a = " * depth + "1" + "}" * depth + "\n"


@pytest.mark.parametrize("kind", ["array", "table"])
def test_deeply_nested_toml_is_one_model_error(tmp_path, kind):
    path = tmp_path / "deep.toml"
    path.write_text(nested(5000, kind))
    with pytest.raises(ModelError) as e:
        sf.load_model(path)
    assert str(e.value).startswith(f"{path}: malformed TOML: arrays or tables nested too deeply")
    assert len(str(e.value).splitlines()) == 1


@pytest.mark.parametrize("cli", ["soa_fmu.cli:describe_main", "build_fmu:main"])
def test_deeply_nested_toml_exits_1_with_one_line(tmp_path, cli):
    path = tmp_path / "deep.toml"
    path.write_text(nested(5000, "array"))
    module, fn = cli.split(":")
    code = (f"import sys; sys.path.insert(0, {str(REPO)!r}); from {module} import {fn}; "
            f"sys.exit({fn}([{str(path)!r}, '-o', {str(tmp_path / 'x.fmu')!r}]"
            f"{'[:1]' if fn == 'describe_main' else ''}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=subprocess_env(), timeout=300)
    assert out.returncode == 1
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "nested too deeply" in lines[0] and str(path) in lines[0], out.stderr
    assert "Traceback" not in out.stderr


TOML_PIECES = st.sampled_from([
    "[", "]", "{", "}", "=", ",", '"', "'", "\n", "[[bodies]]\n", "name = ", "parent = 'world'",
    "joint = ", "{type = 'revolute', axis = [0, 0, 1]}", "mass = 1.0", "inertia = [1, 1, 1]",
    "com = [0, 0, 0]", "1e308", "-1e999", "nan", "inf", "0x1F", "true", "[[frames]]\n",
    "[[constraints]]\n", "kind = 'weld'", "bodies", "a", "b", "=", " ", "#", "\\u0000", "\x00",
])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(TOML_PIECES, max_size=40), st.integers(0, 800), st.sampled_from(["[", "{a = "]))
def test_fuzzed_toml_is_a_model_or_one_model_error(tmp_path, pieces, depth, opener):
    """Any text: a Model, or one ModelError naming the file — never another exception."""
    closer = "]" if opener == "[" else "}"
    text = "".join(pieces) + "\nx = " + opener * depth + ("1" if opener != "[" else "") \
        + closer * depth + "\n"
    path = tmp_path / "f.toml"
    path.write_bytes(text.encode("utf-8", "replace"))
    try:
        sf.load_model(path)
    except ModelError as e:
        assert str(e).startswith(str(path)) and len(str(e).splitlines()) >= 1


# ---------------------------------------------------------------- O(N) model descriptions
def chain_description(n: int, fmi: int) -> bytes:
    from model_descriptions.generator import model_description, to_bytes
    from model_descriptions.generator_fmi3 import model_description as md3
    from soa_fmu.fmu.variables import build_table
    from soa_fmu.verify.builders import serial_chain
    model = serial_chain(n)
    table = build_table(model, states=True)
    if fmi == 2:
        root = model_description(table, model_name="chain", identifier="chain", guid="{x}",
                                 interfaces=("cs", "me"))
    else:
        root = md3(table, model_name="chain", identifier="chain", guid="{x}",
                   interfaces=("cs", "me"))
    return to_bytes(root)


@pytest.mark.parametrize("fmi", [2, 3])
def test_model_description_grows_linearly_and_validates(fmi):
    from model_descriptions.generator import validate
    from model_descriptions.generator_fmi3 import validate as validate3
    small, large = chain_description(300, fmi), chain_description(600, fmi)
    assert len(large) <= 2.2 * len(small), (len(small), len(large))
    # O(N): the structure adds a bounded number of bytes per link (the dense rows are "all")
    structure = large[large.index(b"<ModelStructure"):]
    assert len(structure) <= 600 * (600 if fmi == 2 else 60), len(structure)
    assert (validate if fmi == 2 else validate3)(large) == []
