"""What a native FMU's binaries link against and export, read from the files themselves: ELF
(binutils' ``objdump -T`` / ``readelf``, which read any CPU's ELF), PE (``objdump -p``) and Mach-O
(read here: binutils on Linux has no Mach-O reader).  tests/test_fmu_platforms.py checks every
platform's binary with these.
"""
from __future__ import annotations

import re
import struct
import subprocess
from dataclasses import dataclass, field
from pathlib import Path


def _tool(*cmd: str) -> str:
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


def glibc_versions(lib: Path) -> set[tuple[int, ...]]:
    """The GLIBC_x.y symbol versions an ELF library needs (``objdump -T`` for x86-64, whose
    binutils reads it; ``readelf --dyn-syms`` for any other CPU)."""
    text = _tool("objdump", "-T", str(lib)) if elf_machine(lib) == 62 else \
        _tool("readelf", "--dyn-syms", "-W", str(lib))
    return {tuple(int(x) for x in v.split(".")) for v in re.findall(r"GLIBC_([0-9.]+)", text)}


def elf_machine(lib: Path) -> int:
    """e_machine of an ELF file (62 x86-64, 183 aarch64)."""
    head = lib.read_bytes()[:20]
    assert head[:4] == b"\x7fELF", f"{lib}: not an ELF file"
    return struct.unpack_from("<H", head, 18)[0]


def elf_needed(lib: Path) -> list[str]:
    """The shared libraries an ELF library names (DT_NEEDED)."""
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^]]+)\]", _tool("readelf", "-d", str(lib)))


def elf_exports(lib: Path) -> set[str]:
    """The functions an ELF library exports (defined dynamic symbols)."""
    out = set()
    for line in _tool("readelf", "--dyn-syms", "-W", str(lib)).splitlines():
        f = line.split()
        if len(f) >= 8 and f[3] in ("FUNC", "OBJECT") and f[4] == "GLOBAL" and f[6] != "UND":
            out.add(f[7].split("@")[0])
    return out


def pe_imports_exports(dll: Path) -> tuple[set[str], set[str]]:
    """(the DLLs a PE library imports, the names it exports) from ``objdump -p``."""
    text = _tool("objdump", "-p", str(dll))
    imports = set(re.findall(r"DLL Name: (\S+)", text))
    table = text.split("[Ordinal/Name Pointer] Table", 1)
    exports = set(re.findall(r"^\s+\[\s*\d+\] (\S+)$", table[1].split("\n\n")[0], re.M)) \
        if len(table) == 2 else set()
    return imports, exports


# Mach-O (mach-o/loader.h, mach-o/fat.h, mach-o/nlist.h)
MH_MAGIC_64, FAT_MAGIC, MH_DYLIB = 0xFEEDFACF, 0xCAFEBABE, 6
CPU_TYPES = {0x01000007: "x86_64", 0x0100000C: "arm64"}
LC_SYMTAB, LC_LOAD_DYLIB, LC_BUILD_VERSION = 0x2, 0xC, 0x32


@dataclass
class MachO:
    """One thin Mach-O image: CPU, file type, the dylibs it loads, its exported symbols and the
    oldest macOS it runs on (LC_BUILD_VERSION minos)."""
    cpu: str
    filetype: int
    dylibs: list[str] = field(default_factory=list)
    exports: set[str] = field(default_factory=set)
    min_macos: tuple[int, int] = (0, 0)


def macho_slices(data: bytes) -> list[MachO]:
    """The images of a thin or universal (fat) Mach-O file."""
    if struct.unpack_from(">I", data)[0] == FAT_MAGIC:
        n = struct.unpack_from(">I", data, 4)[0]
        arches = [struct.unpack_from(">iiIII", data, 8 + 20 * i) for i in range(n)]
        return [_thin(data[off:off + size]) for _, _, off, size, _ in arches]
    return [_thin(data)]


def _thin(data: bytes) -> MachO:
    magic, cputype, _, filetype, ncmds = struct.unpack_from("<IiiII", data)
    assert magic == MH_MAGIC_64, f"not a 64-bit Mach-O image (magic {magic:#x})"
    image = MachO(CPU_TYPES.get(cputype, hex(cputype)), filetype)
    at = 32
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", data, at)
        if cmd == LC_SYMTAB:
            symoff, nsyms, stroff, _ = struct.unpack_from("<IIII", data, at + 8)
            for k in range(nsyms):
                strx, ntype, _, _, _ = struct.unpack_from("<IBBHQ", data, symoff + 16 * k)
                # N_EXT, defined in a section (N_SECT), not a debugging entry (N_STAB)
                if ntype & 0x01 and ntype & 0x0E == 0x0E and not ntype & 0xE0:
                    end = data.index(b"\0", stroff + strx)
                    image.exports.add(data[stroff + strx:end].decode())
        elif cmd == LC_LOAD_DYLIB:
            name = struct.unpack_from("<I", data, at + 8)[0]
            image.dylibs.append(data[at + name:data.index(b"\0", at + name)].decode())
        elif cmd == LC_BUILD_VERSION:
            minos = struct.unpack_from("<I", data, at + 12)[0]
            image.min_macos = (minos >> 16, (minos >> 8) & 0xFF)
        at += size
    return image
