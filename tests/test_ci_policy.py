"""The CI policy itself (tests/conftest.py): under CI=true an unexpected skip fails the run, a test
skipped at run time or a module skipped at import alike; without CI it is an ordinary skip."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
CASES = {
    "test_runtime_skip.py": "import pytest\n\ndef test_x():\n    pytest.skip('optional thing missing')\n",
    "test_module_skip.py": "import pytest\npytest.importorskip('no_such_module_anywhere')\n\ndef test_y():\n    pass\n",
}


@pytest.mark.parametrize("ci", ["true", ""])
def test_unexpected_skip_fails_only_under_ci(tmp_path, ci):
    shutil.copy(HERE / "conftest.py", tmp_path / "conftest.py")
    for name, text in CASES.items():
        (tmp_path / name).write_text(text)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci:
        env["CI"] = ci
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA",
                        "--continue-on-collection-errors", *sorted(CASES)],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    if ci:
        assert r.returncode == 1 and r.stdout.count("unexpected skip under CI: ") >= 2, r.stdout
        assert "1 failed" in r.stdout and "1 error" in r.stdout, r.stdout
    else:
        assert r.returncode == 0 and "2 skipped" in r.stdout, r.stdout


def test_ci_entry_point_sets_ci():
    run = (HERE.parent / ".ci" / "run").read_text()
    assert "CI=" in run and "make test" in run and "make test-sanitize" in run
