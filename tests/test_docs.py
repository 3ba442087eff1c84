"""The README's map of the repository is true: every path it names exists, and every source file of
the package (and every reference chapter in docs/) is named in it."""
from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def map_paths() -> set[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = text.split("## Map of the repository", 1)[1].split("```", 2)[1]
    paths, stack = set(), []
    for line in block.splitlines():
        if not line.strip() or len(line) - len(line.lstrip()) >= 25:   # blank or a continuation
            continue
        depth = (len(line) - len(line.lstrip())) // 2
        name = line.split()[0]
        stack[depth:] = [name.rstrip("/")]
        paths.add("/".join(stack))
    return paths


def test_every_mapped_path_exists():
    missing = sorted(p for p in map_paths() if not (REPO / p).exists())
    assert not missing, missing


def test_every_source_file_is_mapped():
    mapped = map_paths()
    pkg = REPO / "soa_fmu"
    files = [p for p in pkg.rglob("*") if p.suffix in (".py", ".c", ".h")
             and "__pycache__" not in p.parts and p.parent.name != "_core"
             and not (p.name == "__init__.py" and p.parent not in (pkg, pkg / "io"))]
    unmapped = sorted(str(p.relative_to(REPO)) for p in files
                      if str(p.relative_to(REPO)) not in mapped)
    assert not unmapped, unmapped


def test_every_chapter_is_linked():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    unlinked = [p.name for p in (REPO / "docs").glob("*.md") if f"docs/{p.name}" not in readme]
    assert not unlinked, unlinked
