# Every target sets up .venv from nothing (python3 + pip; `pip install -e .` compiles the C core
# into soa_fmu/_core*.so), then runs.  Editing a C source rebuilds the extension in place.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
EXT     := $(VENV)/.extension
CSRC    := $(wildcard soa_fmu/core/*.c soa_fmu/core/*.h soa_fmu/_core/*.c soa_fmu/_core/*.h)

.PHONY: demo test bench test-slow test-sanitize mutate clean venv browser

venv: $(EXT)

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip "setuptools>=77" wheel
	$(BIN)/pip install --quiet -e ".[test,bench,plot,view]"
	touch $(STAMP)

$(EXT): $(STAMP) $(CSRC) setup.py
	$(BIN)/python setup.py -q build_ext --inplace
	touch $(EXT)

demo: $(EXT)
	$(BIN)/python examples/demo.py

test: $(EXT) browser
	$(BIN)/python -m pytest -q

# The viewer's browser tests drive Debian's Chromium through playwright (tests/test_view_browser.py):
# installed here when missing (as root); elsewhere they are skipped, and fail under CI=true.
browser:
	@test -x /usr/bin/chromium || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq chromium >/dev/null; } || test "$$CI" != true

test-slow: $(EXT)
	$(BIN)/python -m pytest -q -m slow

# The engine tests and the fuzz tests against a copy of the checkout whose extension is built with
# AddressSanitizer + UBSan (SOA_SANITIZE=1, setup.py), gcc's runtimes preloaded into the venv's
# python.  Reports go to build/sanitize/{asan,ubsan}.<pid>: any report, or a failing test, fails.
SAN       := build/sanitize
SAN_TESTS := tests/test_core.py tests/test_spatial.py tests/test_joints.py tests/test_dynamics.py \
             tests/test_operators.py tests/test_integrators.py tests/test_dop853.py \
             tests/test_bad_models.py tests/test_fuzz_core.py tests/test_flexible.py \
             tests/test_real_joints.py tests/test_contact.py tests/test_fold.py \
             tests/test_rosenbrock.py tests/test_shapes.py tests/test_broadphase.py
SAN_LIBS   = $(shell gcc -print-file-name=libasan.so) $(shell gcc -print-file-name=libubsan.so)

test-sanitize: $(STAMP)
	rm -rf $(SAN) && mkdir -p $(SAN)
	tar -cf - --exclude=./.venv --exclude=./build --exclude=./.git --exclude=./out \
	    --exclude='*.so' --exclude=__pycache__ --exclude=.hypothesis --exclude=.pytest_cache . \
	    | tar -xf - -C $(SAN)
	cd $(SAN) && SOA_SANITIZE=1 $(CURDIR)/$(BIN)/python setup.py -q build_ext --inplace
	cd $(SAN) && PYTHONPATH=. LD_PRELOAD="$(SAN_LIBS)" \
	    ASAN_OPTIONS=detect_leaks=0:halt_on_error=1:log_path=$(CURDIR)/$(SAN)/asan \
	    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:log_path=$(CURDIR)/$(SAN)/ubsan \
	    $(CURDIR)/$(BIN)/python -m pytest -q -p no:cacheprovider $(SAN_TESTS)
	@if ls $(SAN)/asan.* $(SAN)/ubsan.* >/dev/null 2>&1; then cat $(SAN)/asan.* $(SAN)/ubsan.* 2>/dev/null; \
	    echo "sanitizer reports above"; exit 1; fi

bench: $(EXT)
	$(BIN)/python benchmarks/run_all.py

# Named mutants of the C core and the FMU wrapper, each applied alone to a copy of the checkout and
# run against the tests that guard it; every mutant must be killed (benchmarks/results/mutate.txt).
# Not part of `make test`: it rebuilds the extension once per core mutant (minutes).
mutate: $(EXT)
	$(BIN)/python benchmarks/mutate.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache out soa_fmu/_core*.so
