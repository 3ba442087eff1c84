"""Strict skips under CI: with the environment variable CI set (``.ci/run`` sets CI=true), a test
or test module that skips for a reason not matched by :data:`ALLOWED_SKIPS` fails instead, so a
failed optional install (pinocchio, libcosimpy, dask, example-robot-data) cannot hide tests."""
from __future__ import annotations

import os
import re

import pytest

# Regular expressions of the skip reasons CI accepts (keep this short; say why for each).
ALLOWED_SKIPS: tuple[str, ...] = ()


def _strict() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


def _reason(report) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


def _fail_unexpected(report) -> None:
    if not (_strict() and report.skipped and not hasattr(report, "wasxfail")):
        return
    reason = _reason(report)
    if any(re.search(a, reason) for a in ALLOWED_SKIPS):
        return
    report.outcome = "failed"
    report.longrepr = (f"unexpected skip under CI: {reason}\n(install what it needs, or add the reason "
                       "to ALLOWED_SKIPS in tests/conftest.py with why)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _fail_unexpected(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    _fail_unexpected(outcome.get_result())
