"""Where the engine's compiled kernels are cached.

Numba keys a cached kernel on the folder of its source file and on the hash of that one file.  Both
are wrong for this engine:

* a kernel inlines helpers from other modules (``model.views``, ``spatial``): when only a helper
  changes, numba would load a stale kernel with the old memory layout — a crash, not an error;
* an FMU importer extracts the engine to a new temporary folder every time, so numba would compile
  everything again on every instantiation.

This module registers a cache locator for the engine's own modules that stamps every kernel with the
hash of its module AND of every engine module that module imports (transitively), and keeps the
cache in one stable place: ``$SOA_FMU_CACHE_DIR``, else ``$NUMBA_CACHE_DIR/soa_fmu``, else
``~/.cache/soa_fmu`` (XDG).  If that folder is not writable, numba's own locators are used.
"""
from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from numba.core import caching

PACKAGE_DIR = Path(__file__).resolve().parent
PACKAGE_NAME = __name__.rpartition(".")[0]      # "soa_fmu", or an FMU's private engine copy name


_IMPORT = re.compile(rb"^\s*from \.(\w*) import ([\w, ()]+)", re.M)


def module_digests() -> dict[str, str]:
    """Per engine module: SHA-256 (16 hex digits) of its source and of every engine module it
    imports, transitively — a kernel is stale exactly when one of these files changed."""
    sources = {p.stem: p.read_bytes() for p in sorted(PACKAGE_DIR.glob("*.py"))}
    deps: dict[str, set[str]] = {}
    for name, src in sources.items():
        found = set()
        for module, names in _IMPORT.findall(src):
            if module:
                found.add(module.decode())
            else:                                   # from . import joints as J
                found.update(n.split()[0] for n in names.decode().strip("()").split(",") if n.strip())
        deps[name] = found & sources.keys()
    digests = {}
    for name in sources:
        closure, stack = set(), [name]
        while stack:
            mod = stack.pop()
            if mod not in closure:
                closure.add(mod)
                stack.extend(deps[mod])
        h = hashlib.sha256()
        for mod in sorted(closure):
            h.update(mod.encode())
            h.update(sources[mod])
        digests[name] = h.hexdigest()[:16]
    return digests


DIGESTS = module_digests()


def cache_dir() -> Path:
    """The folder holding the engine's compiled kernels (each stamped with its module digest)."""
    base = os.environ.get("SOA_FMU_CACHE_DIR")
    if not base and os.environ.get("NUMBA_CACHE_DIR"):
        base = os.path.join(os.environ["NUMBA_CACHE_DIR"], "soa_fmu")
    if not base:
        base = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                            "soa_fmu")
    return Path(base)


class EngineCacheLocator(caching._CacheLocator):
    """Numba cache locator for soa_fmu's modules: stable folder, whole-engine source stamp."""

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        # compiled code refers to the package by its import name: keep names apart
        self._cache_path = str(cache_dir() / PACKAGE_NAME)

    def get_cache_path(self) -> str:
        return self._cache_path

    def get_source_stamp(self) -> str:
        return DIGESTS[Path(self._py_file).stem]

    def get_disambiguator(self) -> str:
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func, py_file):
        try:
            if Path(py_file).resolve().parent != PACKAGE_DIR:
                return None
            self = cls(py_func, py_file)
            self.ensure_cache_path()
        except OSError:
            return None
        return self


def install() -> None:
    """Put this engine copy's locator first in numba's list (idempotent; each copy of the engine —
    an installed package, an FMU's bundle — claims only the files of its own folder)."""
    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl")
    if EngineCacheLocator not in impl._locator_classes:
        impl._locator_classes.insert(0, EngineCacheLocator)


install()
