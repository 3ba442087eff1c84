"""Parameter sweeps and Monte Carlo of an FMU on Dask (the ``soa-sweep`` command, docs/sweeps.md).

:func:`sweep` runs an FMU once per row of a samples table — each column a variable of the FMU (a
parameter, a start value, a constant input) — on a ``dask.distributed`` cluster: by default the
process's local one (:func:`sweep_cluster`: started by the first sweep, its workers started by a
fork server, never forked from this multi-threaded process; reused by every later sweep; closed
at exit or by :func:`shutdown_cluster`), or any cluster by address.  Each task simulates a batch
of samples in one worker process, where the FMU is extracted and instantiated once and reset
between samples, and returns the batch's trajectories stacked, one array per output; each run is
``fmpy.simulate_fmu`` with the same arguments a serial loop would use, so the results are the
serial ones, bit for bit.  A failing sample (a value the FMU refuses, a step that
fails, a crash that ends its worker) is recorded in ``status``/``message`` and the others
complete.  :class:`Feedback` co-simulates a controller with every run (fmpy's ``step_finished``);
:func:`sample` builds a reproducible samples table from distributions; :func:`save` writes the
results as NetCDF or Zarr.

Why Dask and xarray: Dask is the distributed engine of scientific Python (fmpy's own parameter
variation example uses it), with a scheduler that scales from one laptop to many machines without
code changes; xarray is the labelled container its users analyse results in (NetCDF or Zarr on disk).
"""
from __future__ import annotations

import atexit
import fnmatch
import logging
import hashlib
import math
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path

import numpy as np

DISTRIBUTIONS = ("normal", "uniform", "lognormal", "choice")
_SPEC = re.compile(r"^\s*([A-Za-z]+)\s*\((.*)\)\s*$")


# ---------------------------------------------------------------- samples
def _parse_distribution(name: str, spec) -> tuple[str, list]:
    """('normal', [mu, sigma]) from 'normal(mu, sigma)' or a tuple ('normal', mu, sigma)."""
    if isinstance(spec, str):
        m = _SPEC.match(spec)
        if not m:
            raise ValueError(f"{name}: {spec!r} is not a distribution like 'normal(mu, sigma)'")
        kind, args = m.group(1), [a.strip() for a in m.group(2).split(",") if a.strip()]
    else:
        kind, args = spec[0], list(spec[1:])
    if kind not in DISTRIBUTIONS:
        raise ValueError(f"{name}: unknown distribution {kind!r} (one of {', '.join(DISTRIBUTIONS)})")
    if kind == "choice":
        if not args:
            raise ValueError(f"{name}: choice() needs at least one value")
        return kind, [float(a) for a in args]
    try:
        vals = [float(a) for a in args]
    except ValueError:
        raise ValueError(f"{name}: {kind}() takes numbers, got {args}") from None
    if len(vals) != 2 or not all(math.isfinite(v) for v in vals):
        raise ValueError(f"{name}: {kind}() takes two finite numbers, got {args}")
    if kind in ("normal", "lognormal") and vals[1] < 0:
        raise ValueError(f"{name}: {kind}() needs sigma >= 0, got {vals[1]}")
    if kind == "uniform" and vals[1] < vals[0]:
        raise ValueError(f"{name}: uniform(low, high) needs low <= high, got {vals}")
    return kind, vals


def sample(spec: dict, n: int, seed: int | None = None):
    """A samples table (pandas.DataFrame, n rows) drawing each variable from its distribution:
    ``{"link7.mass": "uniform(0.5, 2.0)", "g[3]": ("normal", -9.81, 0.01), "q0[1]":
    "choice(0, 0.5, 1)"}`` — normal(mu, sigma), uniform(low, high), lognormal(mu, sigma) of the
    underlying normal, choice(values...).  The same seed gives the same table (numpy's PCG64, the
    variables drawn in the order given)."""
    import pandas as pd
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    rng = np.random.default_rng(seed)
    cols = {}
    for name, s in spec.items():
        kind, a = _parse_distribution(name, s)
        if kind == "normal":
            cols[name] = rng.normal(a[0], a[1], n)
        elif kind == "uniform":
            cols[name] = rng.uniform(a[0], a[1], n)
        elif kind == "lognormal":
            cols[name] = rng.lognormal(a[0], a[1], n)
        else:
            cols[name] = rng.choice(np.array(a), n)
    return pd.DataFrame(cols)


# ---------------------------------------------------------------- a co-simulated controller
class Feedback:
    """A controller co-simulated with the FMU, as fmpy.simulate_fmu's ``step_finished`` callback:
    after every communication step, at t = h, 2h, …, it reads the FMU's ``measure`` variables
    (Real), calls ``law(t, y) -> u`` (y a numpy array in the order of ``measure``) and sets the
    ``actuate`` inputs (Real) to u, held over the next step — a sample-and-hold master loop.  Over
    the first step [0, h) the inputs hold their start values (give them as samples' columns or
    ``sweep(start_values=...)``, e.g. u(0) when it is known).

    The same object serves a serial run, ``simulate_fmu(fmu, ..., step_finished=Feedback(...))``,
    and :func:`sweep(..., controller=...) <sweep>`, which pickles it (cloudpickle) to the workers:
    ``law`` must be picklable and should keep no state between runs (a worker calls one copy of it
    for every run of a batch, in order)."""

    def __init__(self, law, measure, actuate):
        self.law, self.measure, self.actuate = law, list(measure), list(actuate)
        if not self.measure or not self.actuate:
            raise ValueError("Feedback needs at least one measured and one actuated variable")
        self._md = None
        self._vr: tuple[list[int], list[int]] = ([], [])

    def check(self, md) -> None:
        """Refuse names the FMU lacks, or ``actuate`` variables that are no Real inputs."""
        var = {v.name: v for v in md.modelVariables}
        missing = [n for n in self.measure + self.actuate if n not in var]
        if missing:
            raise ValueError(f"controller: {missing} are not variables of the FMU")
        bad = [n for n in self.actuate if var[n].causality != "input" or var[n].type != "Real"]
        if bad:
            raise ValueError(f"controller: {bad} are not Real inputs of the FMU")

    def __getstate__(self):
        return {"law": self.law, "measure": self.measure, "actuate": self.actuate}

    def __setstate__(self, state):
        self.__init__(state["law"], state["measure"], state["actuate"])

    def __call__(self, time: float, recorder) -> bool:
        md, fmu = recorder.modelDescription, recorder.fmu
        if md is not self._md:
            self.check(md)
            vr = {v.name: v.valueReference for v in md.modelVariables}
            self._vr = ([vr[n] for n in self.measure], [vr[n] for n in self.actuate])
            self._md = md
        y = np.asarray(fmu.getReal(self._vr[0]), dtype=float)
        u = np.asarray(self.law(time, y), dtype=float).ravel()
        if u.size != len(self._vr[1]):
            raise ValueError(f"controller: the law returned {u.size} values for "
                             f"{len(self._vr[1])} inputs")
        fmu.setReal(self._vr[1], [float(x) for x in u])
        return True


# ---------------------------------------------------------------- on a worker
_WORKER_FMUS: dict[str, list] = {}   # FMU hash -> [model description, unzip dir, instance, root]
_WORKER_KEEP = 8                      # FMUs a worker keeps loaded (the least recently used leaves)
_LOG: list[tuple[int, str]] = []      # the worker's FMU messages (status, text) of the current run


def _logger(env, instance, status, category, message) -> None:
    _LOG.append((int(status), message.decode(errors="replace") if message else ""))


def _free(entry: list) -> None:
    """Free an FMU a worker loaded: its instance, then its extraction directory."""
    inst, entry[2] = entry[2], None
    if inst is not None:
        try:
            inst.freeInstance()
        except Exception:        # noqa: BLE001 — an instance that failed may refuse even this
            pass
    shutil.rmtree(entry[3], ignore_errors=True)


def _worker_fmu(fmu_bytes: bytes, digest: str, reuse: bool):
    """The worker's extraction and instance of the FMU (created once per worker process, kept for
    later sweeps of the reused cluster; reset between samples)."""
    from fmpy import read_model_description
    from fmpy.simulation import instantiate_fmu
    entry = _WORKER_FMUS.pop(digest, None)
    if entry is None:
        while len(_WORKER_FMUS) >= _WORKER_KEEP:
            _free(_WORKER_FMUS.pop(next(iter(_WORKER_FMUS))))
        root = Path(tempfile.mkdtemp(prefix=f"soa_fmu_sweep_{digest[:16]}_"))
        path = root / "model.fmu"
        path.write_bytes(fmu_bytes)
        zipfile.ZipFile(path).extractall(root / "x")
        entry = [read_model_description(str(path)), str(root / "x"), None, str(root)]
    _WORKER_FMUS[digest] = entry                 # now the most recently used
    md, unzip, inst, _root = entry
    if inst is not None and not reuse:
        _free([md, unzip, inst, None])
        inst = None
    if inst is None:      # fmpy's default callbacks: the messages routed by _run_batch
        inst = instantiate_fmu(unzip, md, "CoSimulation")
    else:
        inst.reset()
    entry[2] = inst
    return md, unzip, inst


def dask_setup(worker) -> None:
    """Worker preload hook (dask calls it as each worker of the local cluster starts): the worker's
    own log lines stay off stderr — its connection errors as the cluster closes after a sweep
    that succeeded are no news; a sample that fails is reported in the results."""
    for name in ("distributed", "tornado", "asyncio"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def dask_teardown(worker) -> None:
    """Worker preload hook (as the worker closes): free the FMUs it loaded, remove their files."""
    while _WORKER_FMUS:
        _free(_WORKER_FMUS.popitem()[1])


def _fmu_bytes(data: bytes) -> bytes:
    """The FMU's bytes, as a task that the scheduler can recompute if its worker is lost."""
    return data


def _run_batch(fmu_bytes: bytes, digest: str, rows: list[tuple[int, dict]], stop_time: float,
               step: float, outputs: list[str], inputs, controller=None) -> tuple:
    """Simulate the samples of one batch: (indices, statuses, messages, {output: (k, nt) array}),
    the batch's trajectories stacked in one array per output (NaN rows for failed samples), so that
    the caller assembles the results with one copy per batch, not per sample."""
    from fmpy import simulate_fmu

    from soa_fmu.fmpy_logging import routed
    nt = int(round(stop_time / step)) + 1
    blocks = {name: np.full((len(rows), nt), np.nan) for name in outputs}
    status, message, healthy = [], [], True
    with routed(_logger):      # the FMU's messages into _LOG (soa_fmu/fmpy_logging.py)
        for j, (index, values) in enumerate(rows):
            md, unzip, inst = _worker_fmu(fmu_bytes, digest, healthy)
            _LOG.clear()
            try:
                res = simulate_fmu(unzip, start_values=values, stop_time=stop_time, step_size=step,
                                   output_interval=step, output=outputs, input=inputs,
                                   step_finished=controller,
                                   model_description=md, fmu_instance=inst)
                if len(res) != nt:
                    raise RuntimeError(f"the FMU stopped at t = {res['time'][-1]!r} of "
                                       f"{stop_time!r}")
                for name in outputs:
                    blocks[name][j] = res[name]
                status.append("ok")
                message.append("")
                healthy = True
            except Exception as e:     # noqa: BLE001 — one failing sample must not end the sweep
                said = [text for st, text in _LOG if st >= 2]     # the FMU's own reason
                msg = " ".join(str(e).split()) or type(e).__name__
                status.append("failed")
                message.append(f"{said[0]} ({msg})" if said else msg)
                for name in outputs:
                    blocks[name][j] = np.nan
                healthy = False
    return [index for index, _ in rows], status, message, blocks


# ---------------------------------------------------------------- the local cluster
# One LocalCluster per process, started by the first sweep that needs it (or sweep_cluster())
# and reused by every later one; closed by shutdown_cluster() or at exit.
_LOCAL: dict = {}                 # "client", "cluster", "pid" (the process that started them)
_LOCAL_LOCK = threading.Lock()
_AT_EXIT: list[bool] = []         # [True] once shutdown_cluster is registered with atexit
_PRELOAD = ["distributed", "numpy", "fmpy.simulation", "soa_fmu.sweep"]   # what a worker imports


def _start_method() -> str:
    """How the local cluster starts its workers: ``forkserver`` where the platform has it (Linux,
    macOS), else ``spawn`` (Windows) — never ``fork``.  The calling process holds threads (the
    cluster's event loop, the client's, BLAS pools, the user's own), and forking a multi-threaded
    process can deadlock in the child (a lock held by a thread that does not exist there): the
    hang of issue 23, which Python 3.12 warns of and 3.14 avoids by defaulting to forkserver.
    The fork server is a fresh single-threaded process (started by exec, not fork); workers
    are forked from it, cheaply, with the worker's modules already imported there."""
    import multiprocessing
    return "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


def _start_forkserver() -> None:
    """Start multiprocessing's fork server now, preloaded with the worker's modules, if it is not
    running: it imports them (~0.3 s) while the caller does its own work, and each worker then
    forks from it in milliseconds.  Starting it is an exec (safe from any thread)."""
    import multiprocessing
    from multiprocessing import forkserver
    if _start_method() == "forkserver":
        multiprocessing.get_context("forkserver").set_forkserver_preload(_PRELOAD)
        forkserver.ensure_running()


def _reimporting_main() -> bool:
    """True while a worker process being started imports the main script again (spawn and
    forkserver do, as ``__mp_main__``): a script whose sweep is not under
    ``if __name__ == "__main__":`` would start a cluster from every worker."""
    f = sys._getframe(1)
    while f is not None:
        if f.f_code.co_name == "<module>" and f.f_globals.get("__name__") == "__mp_main__":
            return True
        f = f.f_back
    return False


_GUARD = ("put the script's sweep under 'if __name__ == \"__main__\":' (the local cluster's "
          "workers import the main script as they start; see docs/sweeps.md)")


def _check_not_reimporting_main() -> None:
    if _reimporting_main():
        raise RuntimeError(f"soa_fmu.sweep: a worker process is importing this script: {_GUARD}")


def _local_client():
    """The running local cluster's Client, or None (also in a forked child: its copy is dead)."""
    client = _LOCAL.get("client")
    if client is None or _LOCAL["pid"] != os.getpid():
        _LOCAL.clear()
        return None
    if client.status != "running" or _LOCAL["cluster"].status.name != "running":
        _close_local()                   # closed by someone else, or its loop died: start anew
        return None
    return client


def _close_local() -> None:
    client, cluster = _LOCAL.get("client"), _LOCAL.get("cluster")
    _LOCAL.clear()
    for thing in (client, cluster):
        if thing is not None:
            try:
                thing.close(timeout=10)
            except Exception:    # noqa: BLE001 — already closed or its loop gone: nothing to free
                pass


def _resize(client, cluster, n: int, timeout: float = 60.0) -> None:
    """Scale the local cluster to ``n`` workers and wait until the scheduler has exactly ``n``."""
    cluster.scale(n)
    deadline = time.monotonic() + timeout
    while len(client.nthreads()) != n:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the local cluster did not reach {n} workers in {timeout:g} s")
        time.sleep(0.01)


def sweep_cluster(workers: int | None = None):
    """The process's local Dask cluster for sweeps, as a ``dask.distributed.Client``: started on
    first use (``workers`` processes, default one per core, 1 thread each, started by a fork
    server: see docs/sweeps.md) and reused by every later :func:`sweep` with ``client=None``;
    ``workers`` different from its size scales it (its scheduler stays).  Closed at exit or by
    :func:`shutdown_cluster`.  The workers keep the FMUs they loaded between sweeps."""
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or workers < 1):
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    _check_not_reimporting_main()
    with _LOCAL_LOCK:
        client = _local_client()
        if client is None:
            import dask
            from dask.distributed import Client, LocalCluster
            from dask.system import CPU_COUNT
            _start_forkserver()
            try:
                # a task whose worker dies is not retried on others (dask's default: 3 times,
                # each ending one more worker): sweep() runs a lost batch's samples one at a time
                with dask.config.set({"distributed.worker.multiprocessing-method":
                                      _start_method(),
                                      "distributed.scheduler.allowed-failures": 0}):
                    cluster = LocalCluster(n_workers=workers or CPU_COUNT, threads_per_worker=1,
                                           processes=True, dashboard_address=":0",
                                           silence_logs=logging.CRITICAL, preload=[__name__])
            except Exception as e:
                raise RuntimeError(f"the local cluster's workers did not start ({e}); if this is "
                                   f"a script: {_GUARD}") from e
            client = Client(cluster, set_as_default=False)
            if not _AT_EXIT:
                atexit.register(shutdown_cluster)
                _AT_EXIT.append(True)
            _LOCAL.update(client=client, cluster=cluster, pid=os.getpid())
        elif workers is not None and workers != len(_LOCAL["cluster"].worker_spec):
            _resize(client, _LOCAL["cluster"], workers)
        return client


def shutdown_cluster() -> None:
    """Close the local cluster of :func:`sweep_cluster` (its workers and scheduler); the next
    sweep with ``client=None`` starts a new one.  Nothing to do if none is running."""
    with _LOCAL_LOCK:
        if _LOCAL.get("pid") == os.getpid():
            _close_local()
        _LOCAL.clear()


# ---------------------------------------------------------------- the sweep
def _table(samples):
    import pandas as pd
    if isinstance(samples, pd.DataFrame):
        df = samples.reset_index(drop=True)
    elif isinstance(samples, dict):
        lengths = {len(np.atleast_1d(v)) for v in samples.values()}
        if len(lengths) > 1:
            raise ValueError(f"samples: the columns have different lengths {sorted(lengths)}")
        df = pd.DataFrame({k: np.atleast_1d(v) for k, v in samples.items()})
    else:
        raise TypeError("samples must be a pandas DataFrame or a dict of equal-length arrays")
    if len(df) == 0:
        raise ValueError("samples: no rows")
    return df


def _outputs(md, patterns) -> list[str]:
    names = [v.name for v in md.modelVariables]
    if not patterns:
        patterns = ["q[*]", "qd[*]"]
    out = []
    for p in patterns:
        hit = [n for n in names if fnmatch.fnmatchcase(n, p.replace("[", "[[]"))] if "*" in p \
            else [n for n in names if n == p]
        if not hit:
            raise ValueError(f"output {p!r} matches no variable of the FMU")
        out += [h for h in hit if h not in out]
    return out


_BATCH_VALUES = 1 << 21      # at most this many result values (16 MiB of float64) in one batch


def _batch_size(runs: int, slots: int, values_per_run: int) -> int:
    """Samples per task: about four batches per worker thread (the last ones balance the load),
    but no batch holding more than _BATCH_VALUES result values, so that long runs and many
    outputs stream back in pieces a worker and the scheduler hold easily."""
    return max(1, min(math.ceil(runs / (4 * slots)), _BATCH_VALUES // max(1, values_per_run)))


_STALL_S = 20.0      # no worker in the local cluster for this long, work pending: a new cluster


class _Stalled(Exception):
    """The local cluster has had no worker for _STALL_S s with work pending (its nannies did not
    restart the workers a crash ended); ``left``: the futures that did not finish."""

    def __init__(self, left):
        super().__init__(f"the local cluster has had no worker for {_STALL_S:g} s")
        self.left = left


def _spread(cl, blob) -> None:
    """Copy the FMU's bytes to every worker before the batches are submitted.  The scheduler
    places a task on a worker that holds its inputs: with the bytes on one worker only, every
    batch queues there and the other workers take them over one by one by work stealing — on 16
    workers the batches of a sweep were computing during 22 % of its time.  Best effort: a worker
    lost meanwhile only costs that balance."""
    try:
        cl.replicate([blob])
    except Exception:      # noqa: BLE001 — a worker that died meanwhile: its batches move anyway
        pass


def _wait(cl, futures, local: bool, on_done) -> None:
    """Call ``on_done(future)`` for each of ``futures`` as it finishes (streamed: a batch's
    results are taken as soon as it is done).  For the local cluster (``local``), raise
    :class:`_Stalled` rather than wait for ever when it has had no worker for _STALL_S s."""
    from dask.distributed import as_completed
    ac, left = as_completed(futures, loop=cl.loop), set(futures)
    since, check = None, time.monotonic() + 1.0
    while left:
        ready = ac.next_batch(block=False)
        for fut in ready:
            left.discard(fut)
            on_done(fut)
        if ready:
            since = None
            continue
        time.sleep(0.005)
        now = time.monotonic()
        if local and now >= check:
            check = now + 1.0
            if cl.nthreads():
                since = None
            elif since is None:
                since = now
            elif now - since > _STALL_S:
                raise _Stalled(left)


def sweep(fmu, samples, stop_time: float, *, step: float | None = None, outputs=None,
          inputs=None, controller: Feedback | None = None, start_values: dict | None = None,
          client=None, progress: bool = True, workers: int | None = None):
    """Run ``fmu`` once per row of ``samples`` (a DataFrame or dict of equal-length arrays whose
    columns are FMU variable names) from 0 to ``stop_time``, on Dask; returns an xarray.Dataset
    with dims (sample, time): one variable per output (``outputs``: names or patterns like
    ``'q[*]'``; default q and qd), the samples' values as coordinates, and per-sample ``status``
    ("ok" / "failed") and ``message``.  ``step``: communication step and output interval (default:
    the FMU's DefaultExperiment stepSize); ``inputs``: a time table (structured array or DataFrame
    with a 'time' column) applied to every run; ``controller``: a :class:`Feedback` co-simulated
    with every run (fmpy's ``step_finished``); ``start_values``: values of FMU variables common to
    every run (a sample's own columns take precedence).  ``client``: None (the process's local
    cluster, :func:`sweep_cluster`: started by the first such sweep, reused by the next ones;
    ``workers`` processes, default one per core), a ``dask.distributed.Client`` or a scheduler
    address ("tcp://host:8786").

    Sample i's results equal, bit for bit, ``fmpy.simulate_fmu(fmu, start_values={**start_values,
    **samples.iloc[i]}, stop_time=stop_time, step_size=step, output_interval=step, output=outputs,
    input=inputs, step_finished=controller)``.  ``ds.attrs``: runs, failures, the wall time in s
    (a local cluster's start included when this call started it) and the scheduler's address."""
    from fmpy import read_model_description
    if client is None and workers is not None and (isinstance(workers, bool) or
                                                   not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    t0 = time.perf_counter()
    if client is None and not _LOCAL:
        _check_not_reimporting_main()
        _start_forkserver()          # its imports overlap the checks and imports below
    path = Path(fmu)
    if not path.is_file():
        raise FileNotFoundError(f"{fmu}: no such FMU")
    df = _table(samples)
    md = read_model_description(str(path))
    known = {v.name for v in md.modelVariables}
    unknown = [c for c in df.columns if c not in known]
    if unknown:
        raise ValueError(f"samples: {unknown} are not variables of {path.name}")
    common = dict(start_values or {})
    unknown = [c for c in common if c not in known]
    if unknown:
        raise ValueError(f"start_values: {unknown} are not variables of {path.name}")
    if not (isinstance(stop_time, (int, float)) and math.isfinite(stop_time) and stop_time > 0):
        raise ValueError(f"stop_time must be a positive number of seconds, got {stop_time!r}")
    if step is None:
        de = md.defaultExperiment
        step = float(de.stepSize) if de is not None and de.stepSize else 1e-3
    if not (math.isfinite(step) and 0 < step <= stop_time):
        raise ValueError(f"step must be in (0, stop_time], got {step!r}")
    outs = _outputs(md, outputs)
    if inputs is not None and hasattr(inputs, "to_records"):
        inputs = inputs.to_records(index=False)
    if controller is not None:
        if not isinstance(controller, Feedback):
            raise TypeError("controller must be a soa_fmu.sweep.Feedback")
        controller.check(md)
        both = [n for n in controller.actuate if inputs is not None and n in inputs.dtype.names]
        if both:
            raise ValueError(f"controller: {both} are set by the input table too")
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    rows = [(i, {k: (v.item() if hasattr(v, "item") else v) for k, v in {**common, **r}.items()})
            for i, r in enumerate(df.to_dict("records"))]
    n, nt = len(rows), int(round(stop_time / step)) + 1

    from dask.distributed import Client
    own = isinstance(client, str)
    cl = sweep_cluster(workers) if client is None else Client(client) if own else client
    try:
        slots = max(1, sum(cl.nthreads().values()))         # worker threads, all workers
        size = _batch_size(n, slots, nt * len(outs))
        batches = [rows[i:i + size] for i in range(0, n, size)]
        # the FMU's bytes as a task of their own (not scattered data): the workers fetch them
        # once each, and if a worker dies (a crash in the FMU), the scheduler can recompute them
        blob = cl.submit(_fmu_bytes, data, pure=False)
        _spread(cl, blob)
        args = (float(stop_time), float(step), outs, inputs, controller)
        futures = [cl.submit(_run_batch, blob, digest, b, *args, pure=False) for b in batches]
        batch_of = {f.key: b for f, b in zip(futures, batches)}
        # the results, filled batch by batch as they stream in (one copy per batch)
        arrays = {name: np.full((n, nt), np.nan) for name in outs}
        status = np.full(n, "failed", dtype=object)
        message = np.full(n, "", dtype=object)

        def take(part) -> int:
            idx, st, msg, blocks = part
            status[idx], message[idx] = st, msg
            for name in outs:
                arrays[name][idx] = blocks[name]
            return len(idx)

        bar = None
        if progress:
            from tqdm import tqdm
            bar = tqdm(total=n, unit="run", desc=f"sweep {path.name}", file=sys.stderr)
        # while the workers run, this process's own imports (~0.1 s; xarray imports dask.array,
        # ~0.3 s more, when it builds its first Dataset): the core would idle otherwise
        import xarray as xr
        try:
            import dask.array  # noqa: F401
        except ImportError:     # dask without its array extra: xarray does without it
            pass
        suspects, local = [], client is None

        def batch_done(fut) -> None:
            try:    # (a result lost with its worker is recomputed: no endless wait for it)
                done = take(fut.result(timeout=_STALL_S))
            except Exception:  # noqa: BLE001 — the batch's worker died (a crash in the FMU) or
                suspects.extend(batch_of[fut.key])   # it was queued on a worker that another
                return                               # batch's crash ended: sort them out below
            finally:
                fut.release()
            if bar is not None:
                bar.update(done)

        def revive():
            """A new local cluster when the nannies brought no worker back (_Stalled)."""
            workers_then = len(_LOCAL["cluster"].worker_spec) if _LOCAL else workers
            shutdown_cluster()
            cl = sweep_cluster(workers_then)
            return cl, cl.submit(_fmu_bytes, data, pure=False)

        try:
            _wait(cl, futures, local, batch_done)
        except _Stalled as e:            # the batches left: one sample at a time, below
            suspects += [row for fut in e.left for row in batch_of[fut.key]]
            cl, blob = revive()
        # each sample of a lost batch once more, alone and one at a time (no other task in
        # flight to be lost with it): a sample that crashes its worker again fails alone
        for row in suspects:
            for attempt in (1, 2):      # a second one only after a new cluster (_Stalled)
                fut = cl.submit(_run_batch, blob, digest, [row], *args, pure=False)
                lost = None
                try:
                    _wait(cl, [fut], local, lambda f: take(f.result(timeout=_STALL_S)))
                except _Stalled:
                    lost = "its worker process died and was not restarted"
                    cl, blob = revive()
                    continue
                except Exception as e:  # noqa: BLE001
                    lost = "its worker process died: " + (" ".join(str(e).split()) or
                                                          type(e).__name__)
                break
            if lost:
                status[row[0]], message[row[0]] = "failed", lost
            if bar is not None:
                bar.update(1)
        if bar is not None:
            bar.close()
        address = cl.scheduler.address
        blob.release()
    finally:
        if own:
            cl.close()
    wall = time.perf_counter() - t0

    coords = {"sample": np.arange(n), "time": np.arange(nt) * step}
    coords.update({c: ("sample", df[c].to_numpy()) for c in df.columns})
    ds = xr.Dataset({name: (("sample", "time"), arrays[name]) for name in outs}, coords=coords)
    ds["status"] = ("sample", status.astype(str))
    ds["message"] = ("sample", message.astype(str))
    ds.attrs.update(fmu=path.name, stop_time=float(stop_time), step=float(step),
                    wall_time_s=wall, runs=n, failures=int((ds["status"] != "ok").sum()),
                    scheduler=str(address))
    return ds


def save(ds, out) -> Path:
    """Write a sweep's Dataset to ``out``: NetCDF-4 for ``*.nc`` (h5netcdf; read back with
    ``xarray.open_dataset(out, engine="h5netcdf")``), Zarr for ``*.zarr`` (a directory, Zarr
    format 2 with consolidated metadata, which every Zarr reader supports; chunked, so it suits
    large sweeps and parallel readers; read back with ``xarray.open_zarr(out)``).  Overwrites."""
    out = Path(out)
    if out.suffix == ".nc":
        ds.to_netcdf(out, engine="h5netcdf")
    elif out.suffix == ".zarr":
        ds.to_zarr(out, mode="w", zarr_format=2, consolidated=True)
    else:
        raise ValueError(f"--out must name a NetCDF file (.nc) or a Zarr store (.zarr), "
                         f"got {str(out)!r}")
    return out


# ---------------------------------------------------------------- command line
def main(argv=None) -> int:
    """``soa-sweep``: a sweep or Monte Carlo of an FMU on Dask, results to NetCDF or Zarr."""
    from .io.checks import OneLineParser
    ap = OneLineParser(prog="soa-sweep", description="Run an FMU over a samples table or random "
                 "variations on a Dask cluster; write the results as NetCDF (.nc) or Zarr (.zarr).",
                 epilog="Exit status: 0 when the results are written (a warning line on stderr "
                 "says how many runs failed, if any), 1 when every run failed (the results are "
                 "still written) or on an error, 2 for a bad command line.")
    ap.add_argument("fmu", help="the FMU (.fmu)")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--samples", help="CSV file: one column per FMU variable, one row per run")
    src.add_argument("--vary", action="append", metavar="NAME=DIST(...)",
                     help="a variable and its distribution, e.g. 'link7.mass=uniform(0.5,2)' "
                     "(normal, uniform, lognormal, choice); repeatable")
    ap.add_argument("--n", type=int, default=None, help="number of runs (with --vary)")
    ap.add_argument("--seed", type=int, default=None, help="random seed (with --vary)")
    ap.add_argument("--stop-time", type=float, required=True, help="end time in s")
    ap.add_argument("--step", type=float, default=None, help="communication step in s")
    ap.add_argument("--output", action="append", default=None,
                    help="output variable or pattern (default: 'q[*]' and 'qd[*]'); repeatable")
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--scheduler", help="address of a running Dask scheduler (tcp://host:8786)")
    where.add_argument("--workers", type=int, help="local worker processes (default: one per core)")
    ap.add_argument("--out", required=True, help="results: a NetCDF file (.nc) or a Zarr store "
                    "(.zarr, a directory; for large sweeps)")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    ap.add_argument("--view", type=int, metavar="K", default=None, help="also animate sample K in "
                    "one offline HTML file beside --out (<out>.sample<K>.html; docs/viewing.md)")
    args = ap.parse_args(argv)
    try:
        if not Path(args.fmu).is_file():
            raise FileNotFoundError(f"{args.fmu}: no such FMU")
        if not zipfile.is_zipfile(args.fmu):     # e.g. the robot's .urdf itself
            from .io import MODEL_SUFFIXES
            raise ValueError(f"{args.fmu}: not an FMU (not a zip archive)" + (
                "; build one from the model file with soa-build-fmu"
                if Path(args.fmu).suffix.lower() in MODEL_SUFFIXES else ""))
        if Path(args.out).suffix not in (".nc", ".zarr"):
            raise ValueError(f"--out must name a NetCDF file (.nc) or a Zarr store (.zarr), "
                             f"got {args.out!r}")
        if not Path(args.out).resolve().parent.is_dir():
            raise FileNotFoundError(f"--out {args.out}: no such directory "
                                    f"{str(Path(args.out).parent)!r}")
        if args.samples:
            import pandas as pd
            if not Path(args.samples).is_file():
                raise FileNotFoundError(f"{args.samples}: no such samples file")
            table = pd.read_csv(args.samples)
        else:
            if not args.n or args.n < 1:
                raise ValueError("--vary needs --n N (the number of runs)")
            spec = {}
            for item in args.vary:
                if "=" not in item:
                    raise ValueError(f"--vary {item!r}: expected NAME=DIST(...)")
                name, dist = item.split("=", 1)
                spec[name.strip()] = dist
            table = sample(spec, args.n, args.seed)
        if args.view is not None and not 0 <= args.view < len(table):
            raise ValueError(f"--view {args.view}: no such sample (0..{len(table) - 1})")
        if args.workers is not None and args.workers < 1:
            raise ValueError(f"--workers must be >= 1, got {args.workers}")
        ds = sweep(args.fmu, table, args.stop_time, step=args.step, outputs=args.output,
                   client=args.scheduler, workers=args.workers, progress=not args.no_progress)
        save(ds, args.out)
        if args.view is not None:
            from .view.cli import view_sample
            print(f"animation of sample {args.view} -> {view_sample(args.fmu, args.out, args.view)}")
    except Exception as e:     # noqa: BLE001 — one readable line, non-zero exit
        msg = " ".join(str(e).split()) or type(e).__name__
        print(f"soa-sweep: error: {msg}", file=sys.stderr)
        return 1
    runs, fails, wall = ds.attrs["runs"], ds.attrs["failures"], ds.attrs["wall_time_s"]
    print(f"{runs} runs, {fails} failed, {wall:.1f} s, {runs / wall:.1f} runs/s -> {args.out}")
    return _failures(ds, args.out)


def _failures(ds, out) -> int:
    """The exit status of ``soa-sweep``: 1, with an error line on stderr, when every run failed;
    0 otherwise, with a warning line on stderr when some failed (their status and message are
    in the results)."""
    runs, fails = ds.attrs["runs"], ds.attrs["failures"]
    if not fails:
        return 0
    first = int(np.flatnonzero(ds["status"].values != "ok")[0])
    why = f"first: sample {first}: {ds['message'].values[first]}"
    if fails == runs:
        print(f"soa-sweep: error: all {runs} runs failed ({why})", file=sys.stderr)
        return 1
    print(f"soa-sweep: warning: {fails} of {runs} runs failed ({why}); their status and message "
          f"are in {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
