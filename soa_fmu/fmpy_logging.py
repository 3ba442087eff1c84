"""fmpy's logger proxy kept pointing at a live function: FMI 1.0/2.0 FMUs run by fmpy, safely.

fmpy formats an FMU's variadic log messages in a native proxy (``fmpy/logging``, logging.c) that
hands each to ONE process-wide function pointer, ``s_logger``.  ``simulate_fmu(logger=f)`` and
``instantiate_fmu(logger=f)`` wrap f in a new ctypes thunk and point ``s_logger`` at it
(``addLoggerProxy``); the thunk is freed with that run's FMU object, and ``s_logger`` keeps
pointing at it.  fmpy's default callbacks (``fmpy.fmi2.defaultCallbacks``) already have the proxy
as their logger, so ``addLoggerProxy`` never points it anywhere else for them: the next FMU run
with the default callbacks calls the freed thunk the first time its FMU logs: a segfault (seen
in CI in test_fmu_model_exchange's grasp/release run, whose FMU logs the discrete inputs fmpy's
CVode root function sets outside event mode), or a call into whatever occupies that memory by
then (tests/test_fmpy_logging.py shows it).  fmpy 0.3.32; FMI 1.0 shares the proxy.

Here ``s_logger`` points at one thunk that lives as long as the process, and the Python logger
it calls is chosen per call and per thread: :func:`routed` for code that drives fmpy itself,
:func:`simulate_fmu` for fmpy's one-call simulation.  Nothing here allocates a thunk per run, so
no run can leave the proxy dangling for another.  FMI 3.0 has no proxy (fmpy keeps an instance's
logger with the instance): its logger is passed through.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator

Logger = Callable[[Any, bytes, int, bytes, bytes], None]   # fmpy's (env, instance, status, ...)

_ROUTE = threading.local()           # .logger: this thread's Python logger (None: print)
_PROXY: list = []                    # [thunk, callbacks struct, addLoggerProxy, byref] once made
_LOCK = threading.Lock()


def _forward(env, instance_name, status, category, message) -> None:
    """The one function the proxy calls: this thread's logger, else fmpy's own printing."""
    logger = getattr(_ROUTE, "logger", None)
    if logger is not None:
        logger(env, instance_name, status, category, message)
    else:
        from fmpy.fmi1 import printLogMessage
        printLogMessage(env, instance_name, status, category, message)


def point_proxy() -> None:
    """Point fmpy's proxy at the process's thunk (undoing any fmpy run with its own logger)."""
    with _LOCK:
        if not _PROXY:
            from ctypes import byref
            from fmpy.fmi2 import fmi2CallbackFunctions, fmi2CallbackLoggerTYPE
            try:
                from fmpy.logging import addLoggerProxy
            except Exception:        # noqa: BLE001 — no proxy on this platform: nothing dangles
                addLoggerProxy = None
            _PROXY.extend([fmi2CallbackLoggerTYPE(_forward), fmi2CallbackFunctions(),
                           addLoggerProxy, byref])
        thunk, callbacks, add, byref = _PROXY
        if add is not None:
            callbacks.logger = thunk   # (addLoggerProxy swaps it for the proxy: set it each time)
            add(byref(callbacks))


@contextmanager
def routed(logger: Logger | None = None) -> Iterator[None]:
    """Inside the block, the messages of FMI 1.0/2.0 FMUs that this thread runs through fmpy's
    default callbacks (``instantiate_fmu`` / ``simulate_fmu`` without ``logger``, ``FMU2Slave``'s
    ``instantiate()``) go to ``logger`` (None: printed, as fmpy does)."""
    point_proxy()
    before = getattr(_ROUTE, "logger", None)
    _ROUTE.logger = logger
    try:
        yield
    finally:
        _ROUTE.logger = before


def simulate_fmu(filename, logger: Logger | None = None, **kwargs):
    """``fmpy.simulate_fmu(filename, logger=logger, **kwargs)`` without fmpy's per-run logger
    thunk: an FMI 1.0/2.0 FMU logs through the default callbacks, routed to ``logger``."""
    import fmpy
    md = kwargs.get("model_description") or fmpy.read_model_description(str(filename),
                                                                         validate=False)
    if md.fmiVersion.startswith("3"):
        return fmpy.simulate_fmu(filename, logger=logger, **kwargs)
    with routed(logger):
        return fmpy.simulate_fmu(filename, **kwargs)
