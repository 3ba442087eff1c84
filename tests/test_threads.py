"""Threads (docs/engine.md, "Threads"): the tree algorithms release the GIL around the C kernel for
models of at least ``SOA_PY_NOGIL_NV`` velocity dofs, and threads that each pass their own Data get
exactly the serial results."""
from __future__ import annotations

import re
import threading
from pathlib import Path

import numpy as np

import soa_fmu as sf
from soa_fmu.verify.builders import random_state, serial_chain

REPO = Path(__file__).resolve().parents[1]
NOGIL_NV = int(re.search(r"#define SOA_PY_NOGIL_NV (\d+)",
                         (REPO / "soa_fmu/_core/pycore.h").read_text()).group(1))


def results(model, states, data=None):
    out = []
    for q, qd, tau in states:
        out.append((sf.forward_dynamics(model, q, qd, tau, data=data),
                    sf.inverse_dynamics(model, q, qd, tau, data=data),
                    sf.mass_matrix(model, q, data=data),
                    sf.mass_matrix_inverse(model, q, data=data)))
    return out


def test_threads_with_their_own_data_get_the_serial_results():
    model = serial_chain(NOGIL_NV + 14, seed=3)           # above the threshold: the GIL is released
    assert model.nv >= NOGIL_NV
    states = []
    for k in range(40):
        q, qd = random_state(model, seed=k)
        states.append((q, qd, np.random.default_rng(k).normal(size=model.nv)))
    serial = results(model, states)
    got: dict[int, list] = {}

    def work(i):
        data = model.create_data()
        for _ in range(5):                                # long enough for the threads to overlap
            got[i] = results(model, states[i::2] if i < 2 else states, data=data)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(4):
        expected = serial[i::2] if i < 2 else serial
        assert len(got[i]) == len(expected)
        for a, b in zip(got[i], expected):
            for x, y in zip(a, b):
                assert np.array_equal(x, y)               # bit for bit


def test_the_threads_story_is_documented():
    """engine.md states the rule the code implements, with the threshold of pycore.h."""
    text = (REPO / "docs/engine.md").read_text(encoding="utf-8")
    assert "one Data per thread" in text and f"{NOGIL_NV} velocity dofs" in text
    assert "one model per thread" not in (REPO / "docs/limitations.md").read_text(encoding="utf-8")
