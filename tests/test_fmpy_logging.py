"""fmpy's logger proxy (soa_fmu/fmpy_logging.py): a run with its own logger leaves fmpy's proxy
pointing at that run's ctypes thunk, which is freed with the run; the next run with fmpy's default
callbacks calls whatever then occupies that memory the first time its FMU logs.  Left alone that is
a crash (here: SIGSEGV in 18 of 20 runs, SIGILL in 1, 1 survived); a thunk made in between takes
the place of the freed one and receives the messages, which shows the mechanism every time.
Through soa_fmu.fmpy_logging the same runs leave nothing dangling.  Each sequence runs in a child
process (a crash would take pytest down with it)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import fmpy
from packaging.version import Version

from fmu_fixtures import build, subprocess_env

# Two FMI 2.0 runs in one process with logging on (the FMU logs which integrator auto resolved
# to): the first with its own logger; then a thunk fmpy never sees ("intruder"); the second run
# with fmpy's default callbacks, which print.  With the guard, an FMI 3.0 run whose logger (fmpy's
# FMI 3.0 signature) is passed through.
CHILD = """
import ctypes, gc, sys
fmu2, fmu3, guarded = sys.argv[1], sys.argv[2], sys.argv[3] == "guarded"
if guarded:
    from soa_fmu.fmpy_logging import simulate_fmu
else:
    from fmpy import simulate_fmu
own = []
simulate_fmu(fmu2, stop_time=0.01, debug_logging=True, logger=lambda *a: own.append(a[-1]))
gc.collect()                                   # the first run's FMU object and its thunk: freed
print("own logger:", own, flush=True)
intruded = []
LOGGER = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                          ctypes.c_char_p)
intruder = LOGGER(lambda *a: intruded.append(a[-1]))
simulate_fmu(fmu2, stop_time=0.01, debug_logging=True)                 # fmpy's default callbacks
print("intruder:", intruded, flush=True)
if guarded:
    three = []
    simulate_fmu(fmu3, stop_time=0.01, debug_logging=True,
                 logger=lambda env, status, category, message: three.append(message))
    print("fmi3 logger:", three, flush=True)
"""


def child(mode: str) -> subprocess.CompletedProcess:
    fmu2 = build("double_pendulum.toml", platforms="host")
    fmu3 = build("double_pendulum.toml", platforms="host", fmi=3)
    return subprocess.run([sys.executable, "-c", CHILD, str(fmu2), str(fmu3), mode],
                          capture_output=True, text=True, env=subprocess_env(), timeout=300)


def test_fmpy_alone_calls_the_freed_thunk_of_an_earlier_run():
    """The mechanism, in fmpy 0.3.32 (the version it was found with) and earlier: the default
    run's message reaches the thunk made after the first run's was freed, not fmpy's printing."""
    r = child("fmpy")
    assert "own logger: [b'integrator auto" in r.stdout, (r.returncode, r.stdout, r.stderr)
    if Version(fmpy.__version__) <= Version("0.3.32"):
        assert "intruder: [b'integrator auto: " in r.stdout, (r.returncode, r.stdout, r.stderr)
        assert "[OK] integrator auto" not in r.stdout


def test_the_guard_leaves_no_thunk_dangling_and_routes_every_message():
    r = child("guarded")
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr[-2000:])
    lines = r.stdout.splitlines()
    assert lines[0].startswith("own logger: [b'integrator auto: "), lines   # the first run's own
    assert "intruder: []" in lines, lines
    assert any(x.startswith("[OK] integrator auto: ") for x in lines), lines  # fmpy's printing
    assert any(x.startswith("fmi3 logger: [b'integrator auto: ") for x in lines), lines

def _calls(text: str, name: str) -> list[str]:
    """The argument text of every call of `name` (not an attribute of something else) in text."""
    out = []
    for m in re.finditer(r"(?<![\w.])" + re.escape(name) + r"\(", text):
        depth, i = 1, m.end()
        while depth and i < len(text):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        out.append(text[m.end():i - 1])
    return out


def test_no_fmpy_run_gets_a_logger_of_its_own():
    """What leaves the proxy dangling is fmpy's simulate_fmu / instantiate_fmu given `logger=`
    (FMI 1.0/2.0): nowhere in the repository.  Tests, the library, examples and benchmarks pass
    loggers through soa_fmu.fmpy_logging (simulate_fmu, routed)."""
    repo = Path(__file__).resolve().parents[1]
    bad = []
    for p in sorted(p for d in ("tests", "soa_fmu", "examples", "benchmarks")
                    for p in (repo / d).rglob("*.py")):
        if p.name in ("test_fmpy_logging.py", "fmpy_logging.py"):
            continue
        text = p.read_text(encoding="utf-8")
        raw = ["fmpy.simulate_fmu", "fmpy.simulation.simulate_fmu", "instantiate_fmu"]
        if re.search(r"from fmpy(\.simulation)? import [^\n]*\bsimulate_fmu\b", text):
            raw.append("simulate_fmu")
        bad += [f"{p.relative_to(repo)}: {name}(...logger=...)" for name in raw
                for args in _calls(text, name) if "logger=" in args]
    assert not bad, bad
