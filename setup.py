"""Builds soa_fmu._core, the CPython extension over the C99 engine (metadata: pyproject.toml).

    pip install -e .                          # as `make` does
    SOA_SANITIZE=1 pip install -e .           # AddressSanitizer + UBSan build (make test-sanitize)
"""
import os
from glob import glob

import numpy
from setuptools import Extension, setup

flags = ["-std=c99", "-O3", "-fno-wrapv", "-Wall", "-Wextra",
         "-Wno-missing-field-initializers"]   # portable: no -march; -fno-wrapv undoes Python's -fwrapv
link = []
if os.environ.get("SOA_SANITIZE"):
    flags = ["-std=c99", "-O1", "-g", "-fno-omit-frame-pointer", "-Wall", "-Wextra",
             "-Wno-missing-field-initializers", "-fsanitize=address,undefined",
             "-fno-sanitize-recover=undefined"]
    link = ["-fsanitize=address,undefined"]

core = Extension(
    "soa_fmu._core",
    sources=sorted(glob("soa_fmu/core/*.c")) + sorted(glob("soa_fmu/_core/*.c")),
    depends=sorted(glob("soa_fmu/core/*.h")) + sorted(glob("soa_fmu/_core/*.h")),
    include_dirs=[numpy.get_include(), "soa_fmu/core"],
    extra_compile_args=flags,
    extra_link_args=link,
    libraries=["m"],
)

setup(ext_modules=[core])
