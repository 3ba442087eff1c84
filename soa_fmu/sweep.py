"""Parameter sweeps and Monte Carlo of an FMU on Dask (the ``soa-sweep`` command, docs/sweeps.md).

:func:`sweep` runs an FMU once per row of a samples table — each column a variable of the FMU (a
parameter, a start value, a constant input) — on a ``dask.distributed`` cluster: a local one
sized to the machine by default, or any cluster by address.  Each task simulates a batch of
samples in one worker process, where the FMU is extracted and instantiated once and reset between
samples; each run is ``fmpy.simulate_fmu`` with the same arguments a serial loop would use, so the
results are the serial ones, bit for bit.  A failing sample (a value the FMU refuses, a step that
fails, a crash that ends its worker) is recorded in ``status``/``message`` and the others
complete.  :class:`Feedback` co-simulates a controller with every run (fmpy's ``step_finished``);
:func:`sample` builds a reproducible samples table from distributions; :func:`save` writes the
results as NetCDF or Zarr.

Why Dask and xarray: Dask is the distributed engine of scientific Python (fmpy's own parameter
variation example uses it), with a scheduler that scales from one laptop to many machines without
code changes; xarray is the labelled container its users analyse results in (NetCDF or Zarr on disk).
"""
from __future__ import annotations

import argparse
import logging
import fnmatch
import hashlib
import math
import os
import re
import shutil
import sys
import tempfile
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
_WORKER_FMUS: dict[str, list] = {}   # FMU hash -> [model description, unzip dir, instance, path]
_LOG: list[tuple[int, str]] = []      # the worker's FMU messages (status, text) of the current run


def _logger(env, instance, status, category, message) -> None:
    _LOG.append((int(status), message.decode(errors="replace") if message else ""))


def _worker_fmu(fmu_bytes: bytes, digest: str, reuse: bool):
    """The worker's extraction and instance of the FMU (created once per worker process)."""
    from fmpy import read_model_description
    from fmpy.simulation import instantiate_fmu
    entry = _WORKER_FMUS.get(digest)
    if entry is None:
        root = Path(tempfile.gettempdir()) / f"soa_fmu_sweep_{digest[:16]}_{os.getpid()}"
        if root.exists():
            shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        path = root / "model.fmu"
        path.write_bytes(fmu_bytes)
        zipfile.ZipFile(path).extractall(root / "x")
        md = read_model_description(str(path))
        entry = [md, str(root / "x"), None, str(path)]
        _WORKER_FMUS[digest] = entry
    md, unzip, inst, path = entry
    if inst is not None and not reuse:
        try:
            inst.freeInstance()
        except Exception:        # noqa: BLE001 — an instance that failed may refuse even this
            pass
        inst = None
    if inst is None:
        inst = instantiate_fmu(unzip, md, "CoSimulation", logger=_logger)
    else:
        inst.reset()
    entry[2] = inst
    return md, unzip, inst, path


def _fmu_bytes(data: bytes) -> bytes:
    """The FMU's bytes, as a task that the scheduler can recompute if its worker is lost."""
    return data


def _run_batch(fmu_bytes: bytes, digest: str, rows: list[tuple[int, dict]], stop_time: float,
               step: float, outputs: list[str], inputs, controller=None) -> list[tuple]:
    """Simulate the samples of one batch: [(index, status, message, {output: array})]."""
    from fmpy import simulate_fmu
    out, healthy = [], True
    for index, values in rows:
        md, unzip, inst, path = _worker_fmu(fmu_bytes, digest, healthy)
        _LOG.clear()
        try:
            res = simulate_fmu(unzip, start_values=values, stop_time=stop_time, step_size=step,
                               output_interval=step, output=outputs, input=inputs,
                               step_finished=controller,
                               model_description=md, fmu_instance=inst)
            n = int(round(stop_time / step)) + 1
            if len(res) != n:
                raise RuntimeError(f"the FMU stopped at t = {res['time'][-1]!r} of {stop_time!r}")
            out.append((index, "ok", "", {name: np.asarray(res[name]) for name in outputs}))
            healthy = True
        except Exception as e:     # noqa: BLE001 — one failing sample must not end the sweep
            said = [text for status, text in _LOG if status >= 2]     # the FMU's own reason
            msg = " ".join(str(e).split()) or type(e).__name__
            if said:
                msg = f"{said[0]} ({msg})"
            out.append((index, "failed", msg, None))
            healthy = False
    return out


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


def _start_method() -> str | None:
    """How the local cluster starts its worker processes: ``fork`` on Linux (a forked worker is up
    in ~50 ms with fmpy, numpy and this module already imported; ``spawn``, dask's default, starts
    a new interpreter that imports them again, ~0.4 s); elsewhere dask's own default."""
    import multiprocessing
    return "fork" if sys.platform.startswith("linux") and \
        "fork" in multiprocessing.get_all_start_methods() else None


def _client(client, workers: int | None):
    """(client, things to close afterwards): a new LocalCluster (processes, 1 thread each) for
    None, a Client for a scheduler address, or the Client given."""
    import dask
    from dask.distributed import Client, LocalCluster
    if client is None:
        n = workers or os.cpu_count() or 1
        method = _start_method()
        config = {"distributed.worker.multiprocessing-method": method} if method else {}
        with dask.config.set(config):
            cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                   dashboard_address=":0", silence_logs=logging.ERROR)
        c = Client(cluster)
        return c, [c, cluster]
    if isinstance(client, str):
        c = Client(client)
        return c, [c]
    return client, []


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
    every run (a sample's own columns take precedence).  ``client``: None (a local cluster of
    ``workers`` processes, default one per core, 1 thread each, its workers forked on Linux; closed
    afterwards), a ``dask.distributed.Client`` or a scheduler address ("tcp://host:8786").

    Sample i's results equal, bit for bit, ``fmpy.simulate_fmu(fmu, start_values={**start_values,
    **samples.iloc[i]}, stop_time=stop_time, step_size=step, output_interval=step, output=outputs,
    input=inputs, step_finished=controller)``.  ``ds.attrs``: runs, failures, and the wall time in
    s (the local cluster's start and close included)."""
    from fmpy import read_model_description
    import fmpy.simulation  # noqa: F401 — imported before the workers fork: they inherit it
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

    t0 = time.perf_counter()
    cl, to_close = _client(client, workers)
    try:
        slots = max(1, sum(cl.nthreads().values()))         # worker threads, all workers
        size = max(1, math.ceil(len(rows) / (4 * slots)))
        batches = [rows[i:i + size] for i in range(0, len(rows), size)]
        # the FMU's bytes as a task of their own (not scattered data): the workers fetch them
        # once each, and if a worker dies (a crash in the FMU), the scheduler can recompute them
        blob = cl.submit(_fmu_bytes, data, pure=False)
        futures = [cl.submit(_run_batch, blob, digest, b, float(stop_time), float(step), outs,
                             inputs, controller, pure=False) for b in batches]
        batch_of = {f.key: b for f, b in zip(futures, batches)}
        results = []
        bar = None
        if progress:
            from tqdm import tqdm
            bar = tqdm(total=len(rows), unit="run", desc=f"sweep {path.name}", file=sys.stderr)
        # while the workers run, this process's own imports (~0.1 s; xarray imports dask.array,
        # ~0.3 s more, when it builds its first Dataset): the core would idle otherwise
        import xarray as xr
        try:
            import dask.array  # noqa: F401
        except ImportError:     # dask without its array extra: xarray does without it
            pass
        from dask.distributed import as_completed
        suspects = []
        for fut in as_completed(futures):
            try:
                part = fut.result()
            except Exception:  # noqa: BLE001 — the batch's worker died (a crash in the FMU) or
                suspects += batch_of[fut.key]        # it was queued on a worker that another
                continue                             # batch's crash ended: sort them out below
            results += part
            if bar is not None:
                bar.update(len(part))
        # each sample of a lost batch once more, alone and one at a time (no other task in
        # flight to be lost with it): a sample that crashes its worker again fails alone
        for row in suspects:
            fut = cl.submit(_run_batch, blob, digest, [row], float(stop_time), float(step), outs,
                            inputs, controller, pure=False)
            try:
                part = fut.result()
            except Exception as e:  # noqa: BLE001
                msg = " ".join(str(e).split()) or type(e).__name__
                part = [(row[0], "failed", f"its worker process died: {msg}", None)]
            results += part
            if bar is not None:
                bar.update(1)
        if bar is not None:
            bar.close()
    finally:
        for thing in to_close:
            thing.close()
    wall = time.perf_counter() - t0

    n, nt = len(rows), int(round(stop_time / step)) + 1
    arrays = {name: np.full((n, nt), np.nan) for name in outs}
    status = np.empty(n, dtype=object)
    message = np.empty(n, dtype=object)
    for index, st, msg, values in results:
        status[index], message[index] = st, msg
        if values is not None:
            for name in outs:
                arrays[name][index] = values[name]
    coords = {"sample": np.arange(n), "time": np.arange(nt) * step}
    coords.update({c: ("sample", df[c].to_numpy()) for c in df.columns})
    ds = xr.Dataset({name: (("sample", "time"), arrays[name]) for name in outs}, coords=coords)
    ds["status"] = ("sample", status.astype(str))
    ds["message"] = ("sample", message.astype(str))
    ds.attrs.update(fmu=path.name, stop_time=float(stop_time), step=float(step),
                    wall_time_s=wall, runs=n, failures=int((ds["status"] != "ok").sum()))
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
class _Parser(argparse.ArgumentParser):
    def error(self, message):            # one line, not usage + message
        print(f"soa-sweep: error: {message} (see --help)", file=sys.stderr)
        raise SystemExit(2)


def main(argv=None) -> int:
    """``soa-sweep``: a sweep or Monte Carlo of an FMU on Dask, results to NetCDF or Zarr."""
    ap = _Parser(prog="soa-sweep", description="Run an FMU over a samples table or random "
                 "variations on a Dask cluster; write the results as NetCDF (.nc) or Zarr (.zarr).")
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
    args = ap.parse_args(argv)
    try:
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
        if args.workers is not None and args.workers < 1:
            raise ValueError(f"--workers must be >= 1, got {args.workers}")
        ds = sweep(args.fmu, table, args.stop_time, step=args.step, outputs=args.output,
                   client=args.scheduler, workers=args.workers, progress=not args.no_progress)
        save(ds, args.out)
    except Exception as e:     # noqa: BLE001 — one readable line, non-zero exit
        msg = " ".join(str(e).split()) or type(e).__name__
        print(f"soa-sweep: error: {msg}", file=sys.stderr)
        return 1
    runs, fails, wall = ds.attrs["runs"], ds.attrs["failures"], ds.attrs["wall_time_s"]
    print(f"{runs} runs, {fails} failed, {wall:.1f} s, {runs / wall:.1f} runs/s -> {args.out}")
    if fails:      # how many, and the first reason, where a shell sees it; every run failed: exit 1
        first = next(str(m) for st, m in zip(ds["status"].values, ds["message"].values)
                     if st != "ok")
        print(f"soa-sweep: {fails} of {runs} runs failed; the first: {' '.join(first.split())}",
              file=sys.stderr)
    return 1 if runs and fails == runs else 0


if __name__ == "__main__":
    sys.exit(main())
