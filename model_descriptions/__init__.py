"""Model descriptions: the example model files (``examples/``), shared by the examples, the tests and
the FMU builds; the modelDescription.xml generator lives beside them."""
from __future__ import annotations

from pathlib import Path

EXAMPLES_DIR = Path(__file__).resolve().parent / "examples"


def example_path(name: str) -> Path:
    """Path of an example model: ``example_path("arm7.urdf")``, or by stem (``"four_bar"``) when
    exactly one file has that stem."""
    path = EXAMPLES_DIR / name
    if path.is_file():
        return path
    matches = sorted(p for p in EXAMPLES_DIR.glob(f"{name}.*") if p.suffix in (".toml", ".urdf"))
    if len(matches) == 1:
        return matches[0]
    known = ", ".join(sorted(p.name for p in EXAMPLES_DIR.iterdir() if p.suffix in (".toml", ".urdf")))
    raise FileNotFoundError(f"no example model {name!r} in {EXAMPLES_DIR} (known: {known})")
