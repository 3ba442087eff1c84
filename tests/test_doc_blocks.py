"""Every code block of README.md and docs/*.md runs, as a reader would run it.

One test per page: its ```python blocks are executed in order in one namespace, and the lines of its
```sh blocks that call a documented command (``soa-build-fmu``, ``soa-describe``, ``soa-sweep``,
``soa-view``, ``python build_fmu.py``) run in the same folder, between them, in page order.  The
folder is a fresh temporary one holding links to the example models (``model_descriptions/``),
``examples/`` and ``build_fmu.py``, and the FMUs the pages name (``Arm7.fmu`` = arm7.urdf,
``Pendulum.fmu`` = pendulum.toml, ``DoublePendulum.fmu`` = double_pendulum.toml, built once per session as the chapters' build commands make them);
so outputs never land in the checkout.  Other shell lines (``make``, ``dask``, ``pip``) are not run.

OpenModelica's OMSimulator (tests/omsimulator_host.py) runs what the pages show of it: an
``OMSimulator ...`` shell line, a ```lua block whose first line names its file (``-- arm.lua``,
written to the folder for a later ``OMSimulator arm.lua``) and a ```python block that imports
``OMSimulator`` (run in a child process, so a crash of the tool fails the page, not pytest); none
may log an ``error:`` line.  Where the tool is missing, the rest of the page runs and the page is
reported skipped (a failure under CI).

A block that cannot run here carries the line ``<!-- doc-test: skip (reason) -->`` right before its
fence; such blocks are listed by :func:`test_skipped_blocks_are_few`.  New chapters are picked up by
the glob: nothing to register.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import omsimulator_host as oms
from fmu_fixtures import build

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SKIP = re.compile(r"^<!--\s*doc-test:\s*skip\s*\((.+)\)\s*-->\s*$")
FENCE = re.compile(r"^```(\w*)\s*$")
COMMANDS = ("soa-build-fmu", "soa-describe", "soa-sweep", "soa-view")
FMUS = {"Arm7.fmu": ("arm7.urdf", "Arm7"), "Pendulum.fmu": ("pendulum.toml", "Pendulum"),
        "DoublePendulum.fmu": ("double_pendulum.toml", "DoublePendulum")}
MAX_SKIPPED = 6                      # a skip marker is an exception: keep them few


@dataclass
class Block:
    page: Path
    line: int                        # line of the first code line (1-based)
    lang: str
    code: str
    skip: str | None

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of a page, with the skip reason of a marker right before the fence."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m:
            j = i + 1
            while j < len(lines) and lines[j].strip() != "```":
                j += 1
            marker = SKIP.match(lines[i - 1].strip()) if i else None
            found.append(Block(page, i + 2, m.group(1), "\n".join(lines[i + 1:j]),
                               marker.group(1) if marker else None))
            i = j
        i += 1
    return found


def shell_commands(block: Block) -> list[tuple[int, list[str]]]:
    """(line, argv) of each documented command in a shell block; continuations joined."""
    out, pending, start = [], "", 0
    for k, raw in enumerate(block.code.splitlines()):
        if not pending:
            start = block.line + k
        pending += raw.rstrip()
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        argv, pending = shlex.split(pending, comments=True), ""
        if argv[:2] == ["python", "build_fmu.py"]:
            out.append((start, [sys.executable, *argv[1:]]))
        elif argv and argv[0] == "OMSimulator":
            out.append((start, argv))
        elif argv and argv[0] in COMMANDS:
            exe = Path(sys.executable).parent / argv[0]
            assert exe.exists(), f"{block.where}: the documented command {argv[0]} is not installed"
            out.append((start, [str(exe), *argv[1:]]))
    return out


def runnable(page: Path) -> list[Block]:
    return [b for b in blocks(page) if b.lang in ("python", "sh", "bash", "lua")]


def uses_omsimulator(block: Block) -> bool:
    return (block.lang == "lua" or re.search(r"^\s*(from|import) OMSimulator\b", block.code, re.M)
            is not None or re.search(r"^\s*OMSimulator\s", block.code, re.M) is not None)


def check_omsimulator(block: Block, line: int, r: subprocess.CompletedProcess) -> None:
    assert r.returncode == 0 and not oms.errors(r.stdout + r.stderr), (f"{block.page.relative_to(REPO)}:{line}: OMSimulator "
                                              f"exits {r.returncode}\n{r.stdout[-2000:]}{r.stderr[-2000:]}")


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    for name in ("model_descriptions", "examples", "build_fmu.py"):
        (tmp_path / name).symlink_to(REPO / name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    return tmp_path


def run_page(page: Path, folder: Path) -> None:
    text = page.read_text(encoding="utf-8")
    for fmu, (model, name) in FMUS.items():
        if fmu in text:
            (folder / fmu).write_bytes(build(model, name=name).read_bytes())
    namespace: dict = {"__name__": "__doc__"}
    env = {**os.environ, "PYTHONPATH": str(REPO), "MPLBACKEND": "Agg"}
    missing = oms.unavailable() if any(uses_omsimulator(b) for b in runnable(page)) else None
    for block in runnable(page):
        if block.skip or (missing and uses_omsimulator(block)):
            continue
        if block.lang == "lua":
            name = block.code.splitlines()[0].removeprefix("--").strip()
            assert name.endswith(".lua"), f"{block.where}: a lua block's first line names its file"
            (folder / name).write_text(block.code)
        elif block.lang == "python" and uses_omsimulator(block):
            check_omsimulator(block, block.line, oms.run_python(block.code, folder))
        elif block.lang == "python":
            code = compile("\n" * (block.line - 1) + block.code, str(block.page), "exec")
            try:
                exec(code, namespace)
            except Exception as e:   # noqa: BLE001 -- any failure of a block is the finding
                raise AssertionError(f"{block.where}: the block raises {type(e).__name__}: {e}") from e
        else:
            for line, argv in shell_commands(block):
                if argv[0] == "OMSimulator":
                    check_omsimulator(block, line, oms.run_cli(argv[1:], folder))
                    continue
                r = subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True,
                                   timeout=300)
                assert r.returncode == 0, (f"{block.page.relative_to(REPO)}:{line}: "
                                           f"{shlex.join(argv[1:] if argv[0] == sys.executable else argv)}"
                                           f" exits {r.returncode}\n{r.stdout[-2000:]}{r.stderr[-2000:]}")


PAGES_WITH_CODE = [p for p in PAGES if any(not b.skip for b in runnable(p))]


@pytest.mark.parametrize("page", PAGES_WITH_CODE, ids=lambda p: str(p.relative_to(REPO)))
def test_page_blocks_run(page, workdir):
    import matplotlib
    matplotlib.use("Agg")
    run_page(page, workdir)
    if any(uses_omsimulator(b) for b in runnable(page)) and oms.unavailable():
        pytest.skip(f"the page's OMSimulator blocks did not run: {oms.unavailable()}")


def test_skipped_blocks_are_few():
    skipped = [f"{b.where} ({b.skip})" for p in PAGES for b in runnable(p) if b.skip]
    assert len(skipped) <= MAX_SKIPPED, "doc blocks skipped:\n" + "\n".join(skipped)


def test_shell_parser_finds_the_documented_commands():
    """The extraction itself: continuation lines joined, comments dropped, other commands left out."""
    block = Block(REPO / "README.md", 10, "sh",
                  "make demo   # not run\nsoa-sweep A.fmu --vary 'q0[2]=normal(0.5,0.05)' \\\n"
                  "          --n 4   # four runs\npython build_fmu.py m.urdf -o A.fmu", None)
    cmds = shell_commands(block)
    assert [(line, argv[1:]) for line, argv in cmds] == [
        (11, ["A.fmu", "--vary", "q0[2]=normal(0.5,0.05)", "--n", "4"]),
        (13, ["build_fmu.py", "m.urdf", "-o", "A.fmu"])]
