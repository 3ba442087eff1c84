"""Every speed figure in README.md and docs/*.md is the one its committed results file holds.

A passage that quotes benchmark figures is fenced by two comment lines,

    <!-- figures: benchmarks/results/core.txt benchmarks/results/fmu.txt -->
    ... the table or text ...
    <!-- /figures -->

and every number in it must be a number of one of the named files at the precision quoted (1.45
matches 1.449 or 1.45, 17 matches 17.2, 2500 matches 2.5e+03).  So when `make bench` rewrites a
results file, the passages that quote it fail here until they are updated.  A timing (µs, runs/s)
outside such a passage fails too, as does a passage that does not name the machine it was measured
on.  New chapters are picked up by the glob.
"""
from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
OPEN = re.compile(r"^<!--\s*figures:\s*(.+?)\s*-->\s*$")
CLOSE = re.compile(r"^<!--\s*/figures\s*-->\s*$")
# a number that is a figure: not part of a name (arm7, E14, 1e-9, M⁻¹, seed 003's "(4.9)")
NUMBER = re.compile(r"(?<![\w.\-⁻^/(])(\d+(?:\.\d+)?)(?![\w.]*[A-Za-z_(]|[\d.]|\))")
TIMING = re.compile(r"\d(?:\.\d+)?\s*(?:µs|runs/s)")
FILE_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")


def regions(page: Path) -> tuple[list[tuple[int, list[Path], str]], list[tuple[int, str]]]:
    """(first line, results files, text) of each figures passage; (line, text) of the other lines."""
    inside, outside, current = [], [], None
    for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        m = OPEN.match(line.strip())
        if m:
            assert current is None, f"{page.name}:{n}: figures passage opened twice"
            current = (n, [REPO / f for f in m.group(1).split()], [])
        elif CLOSE.match(line.strip()):
            assert current, f"{page.name}:{n}: /figures without an opening line"
            inside.append((current[0], current[1], "\n".join(current[2])))
            current = None
        elif current:
            current[2].append(line)
        else:
            outside.append((n, line))
    assert current is None, f"{page.name}:{current[0]}: figures passage never closed"
    return inside, outside


def matches(quoted: str, values: list[float]) -> bool:
    q = float(quoted)
    decimals = len(quoted.split(".")[1]) if "." in quoted else 0
    tol = 0.5 * 10 ** -decimals + 1e-9 * abs(q)
    for x in values:
        if abs(x - q) <= tol:
            return True
        if decimals == 0 and q >= 100 and x > 0:           # 2500 quoted of 2.5e+03, 4020 of 4.02e+03
            digits = len(str(int(q)).rstrip("0")) or 1
            if abs(x - q) <= 0.5 * 10 ** (math.floor(math.log10(q)) - digits + 1):
                return True
    return False


def file_values(paths: list[Path]) -> list[float]:
    values = []
    for p in paths:
        values += [float(t) for t in FILE_NUMBER.findall(p.read_text(encoding="utf-8"))]
    return values


PASSAGES = [(page, start, files, text) for page in PAGES for start, files, text in regions(page)[0]]


def test_there_are_figure_passages():
    assert {p.name for p, *_ in PASSAGES} >= {"README.md", "performance.md", "fmu.md"}


@pytest.mark.parametrize("page,start,files,text", PASSAGES,
                         ids=[f"{p.relative_to(REPO)}:{s}" for p, s, *_ in PASSAGES])
def test_each_quoted_figure_is_in_its_results_file(page, start, files, text):
    missing_files = [str(f.relative_to(REPO)) for f in files if not f.is_file()]
    assert not missing_files, f"{page.name}:{start}: no such results file {missing_files}"
    assert re.search(r"machine", text), (f"{page.name}:{start}: a figures passage names the machine "
                                         "and conditions it was measured on")
    values = file_values(files)
    wrong = []
    for k, line in enumerate(text.splitlines(), start + 1):
        if line.lstrip().startswith("<!--"):
            continue
        for m in NUMBER.finditer(line):
            if not matches(m.group(1), values):
                wrong.append(f"{page.relative_to(REPO)}:{k}: {m.group(1)} ({line.strip()[:70]})")
    assert not wrong, ("figures not in " + ", ".join(str(f.relative_to(REPO)) for f in files)
                       + ":\n" + "\n".join(wrong))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_no_timing_outside_a_figures_passage(page):
    stray = [f"{page.relative_to(REPO)}:{n}: {line.strip()[:80]}" for n, line in regions(page)[1]
             if TIMING.search(line)]
    assert not stray, ("timings outside a <!-- figures: results files --> passage:\n"
                       + "\n".join(stray))


def test_no_stale_summary():
    """summary.txt used to collect an old engine's tables; the results files are the record."""
    assert not (REPO / "benchmarks" / "results" / "summary.txt").exists()


def test_matcher():
    assert matches("1.45", [1.449]) and matches("17", [17.2]) and matches("2500", [2.5e3])
    assert matches("4020", [4.02e3]) and not matches("0.51", [0.52]) and not matches("44", [6.27])
    assert not matches("1.45", [1.46])
