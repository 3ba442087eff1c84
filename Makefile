# Every target sets up .venv from nothing (python3 + pip; `pip install -e .` compiles the C core
# into soa_fmu/_core*.so), then runs.  Editing a C source rebuilds the extension in place.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
EXT     := $(VENV)/.extension
CSRC    := $(wildcard soa_fmu/core/*.c soa_fmu/core/*.h soa_fmu/_core/*.c soa_fmu/_core/*.h)

.PHONY: demo test bench test-slow clean venv

venv: $(EXT)

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip "setuptools>=77" wheel
	$(BIN)/pip install --quiet -e ".[test,bench,plot]"
	touch $(STAMP)

$(EXT): $(STAMP) $(CSRC) setup.py
	$(BIN)/python setup.py -q build_ext --inplace
	touch $(EXT)

demo: $(EXT)
	$(BIN)/python examples/demo.py

test: $(EXT)
	$(BIN)/python -m pytest -q

test-slow: $(EXT)
	$(BIN)/python -m pytest -q -m slow

bench: $(EXT)
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache out soa_fmu/_core*.so
