"""Results to animate: (t, q) and the named outputs beside them, from any of the forms users have.

* a ``sf.simulate`` result (a dict with ``t`` and ``q``), or any mapping with ``t``/``time`` and ``q``;
* a CSV written by an FMI host: fmpy's ``write_csv``, fmusim's ``--output-file`` (a ``time``
  column and the FMU's ``q[1]`` … ``q[nq]`` columns, or the FMI 3 array column ``q`` whose cells
  hold nq numbers); columns named by ``model.position_names`` are accepted too;
* an ``.npz`` with arrays ``t`` (or ``time``) and ``q``;
* one sample of a ``soa-sweep`` result (NetCDF ``.nc`` or Zarr ``.zarr``: variables ``q[i]`` over
  dims (sample, time)).

Every problem is one :class:`ResultError` line naming the file and the column, row or sample.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..model import Model

QUAT_NORM_TOL = 1e-3         # |‖quaternion‖ − 1| beyond this: the result is not of this model


class ResultError(ValueError):
    """A result that cannot be animated with this model (one line, naming file and column/row)."""


@dataclass
class Result:
    """Sample times, configurations (rows = times), and the other output columns by name."""
    t: np.ndarray
    q: np.ndarray
    outputs: dict[str, np.ndarray] = field(default_factory=dict)
    source: str = "result"


def _array_cells(column, where: str, nq: int) -> np.ndarray:
    """An FMI 3 array column (each cell 'a b c', '[a, b, c]' or 'a;b;c') as an (n, nq) array."""
    rows = []
    for i, cell in enumerate(column):
        parts = [p for p in re.split(r"[\s,;\[\]]+", str(cell)) if p]
        if len(parts) != nq:
            raise ResultError(f"{where}: column 'q' row {i + 1} holds {len(parts)} values, the model "
                              f"has nq = {nq}")
        try:
            rows.append([float(p) for p in parts])
        except ValueError:
            raise ResultError(f"{where}: column 'q' row {i + 1}: not numbers: {str(cell)[:40]!r}") from None
    return np.array(rows, dtype=float).reshape(-1, nq)


def _q_columns(columns: list[str], model: Model, where: str) -> list[str] | None:
    """Names of the q columns in model order: q[1..nq] or the position names; None: the FMI 3
    array column 'q'.  Missing or surplus columns are an error naming them."""
    nq = model.nq
    idx = {int(m.group(1)) for c in columns if (m := re.fullmatch(r"q\[(\d+)\]", c))}
    if idx:
        missing = [f"q[{i}]" for i in range(1, nq + 1) if i not in idx]
        extra = sorted(i for i in idx if not 1 <= i <= nq)
        if extra:
            raise ResultError(f"{where}: has column q[{extra[-1]}] but model {model.name!r} has nq = "
                              f"{nq}: the result is of another model")
        if missing:
            shown = ", ".join(missing[:6]) + (" …" if len(missing) > 6 else "")
            raise ResultError(f"{where}: missing column(s) {shown} (model {model.name!r} has nq = {nq})")
        return [f"q[{i}]" for i in range(1, nq + 1)]
    if "q" in columns:
        return None
    names = model.position_names
    have = [n for n in names if n in columns]
    if have:
        missing = [n for n in names if n not in columns]
        if missing:
            raise ResultError(f"{where}: missing column(s) {', '.join(missing[:6])} (model "
                              f"{model.name!r} has nq = {nq})")
        return names
    shown = ", ".join(columns[:8]) + (" …" if len(columns) > 8 else "")
    raise ResultError(f"{where}: no configuration columns q[1] … q[{nq}] (nor an FMI 3 array column "
                      f"'q', nor columns named by the model's joints); columns: {shown}")


def _time_column(columns: list[str], where: str) -> str:
    for c in ("time", "t", "Time"):
        if c in columns:
            return c
    raise ResultError(f"{where}: no 'time' column (columns: {', '.join(columns[:8])})")


def from_table(table, model: Model, where: str) -> Result:
    """A pandas DataFrame (a CSV read) -> Result."""
    columns = [str(c).strip() for c in table.columns]
    table.columns = columns
    tcol = _time_column(columns, where)
    qcols = _q_columns(columns, model, where)
    try:
        t = table[tcol].to_numpy(dtype=float)
    except (TypeError, ValueError):
        raise ResultError(f"{where}: column {tcol!r} holds values that are not numbers") from None
    if qcols is None:
        q = _array_cells(table["q"], where, model.nq)
    else:
        try:
            q = table[qcols].to_numpy(dtype=float)
        except (TypeError, ValueError):
            bad = next(c for c in qcols if table[c].dtype == object)
            raise ResultError(f"{where}: column {bad!r} holds values that are not numbers") from None
    used = {tcol, "q", *(qcols or [])}
    outputs = {}
    for c in columns:
        if c not in used and table[c].dtype.kind in "fiu":
            outputs[c] = table[c].to_numpy(dtype=float)
    return check(Result(t, q, outputs, where), model)


def check(res: Result, model: Model) -> Result:
    """Shapes, finite values, increasing time, unit quaternions: a ResultError naming the row."""
    where = res.source
    t = np.asarray(res.t, dtype=float).ravel()
    q = np.asarray(res.q, dtype=float)
    if q.ndim == 1 and model.nq == 1:
        q = q[:, None]
    if q.ndim != 2 or q.shape[1] != model.nq:
        raise ResultError(f"{where}: q has shape {q.shape}, model {model.name!r} needs (n, {model.nq})")
    if q.shape[0] != t.shape[0]:
        raise ResultError(f"{where}: {t.shape[0]} times but {q.shape[0]} rows of q")
    if t.shape[0] < 1:
        raise ResultError(f"{where}: no rows")
    bad_t = np.flatnonzero(~np.isfinite(t))
    if bad_t.size:
        raise ResultError(f"{where}: row {bad_t[0] + 1}: time is {t[bad_t[0]]}")
    bad = np.flatnonzero(~np.isfinite(q).all(axis=1))
    if bad.size:
        i = bad[0]
        col = int(np.flatnonzero(~np.isfinite(q[i]))[0])
        raise ResultError(f"{where}: row {i + 1} (time {t[i]:g}) has {q[i, col]} in q[{col + 1}] "
                          f"({model.position_names[col]}); {bad.size} such row(s)")
    back = np.flatnonzero(np.diff(t) <= 0)
    if back.size:
        i = back[0] + 1
        raise ResultError(f"{where}: row {i + 1}: time {t[i]:g} does not increase (previous {t[i - 1]:g})")
    for joint, i in model.quaternion_slices():
        norm = np.linalg.norm(q[:, i:i + 4], axis=1)
        off = np.flatnonzero(np.abs(norm - 1.0) > QUAT_NORM_TOL)
        if off.size:
            r = off[0]
            raise ResultError(f"{where}: row {r + 1}: q[{i + 1}..{i + 4}] (joint {joint!r}) has norm "
                              f"{norm[r]:.4g}, not a unit quaternion: the result is not of model "
                              f"{model.name!r}")
    outputs = {}
    for k, v in res.outputs.items():
        v = np.asarray(v, dtype=float)
        if v.shape[:1] == t.shape:
            outputs[k] = v
    return Result(t, q, outputs, where)


def _sweep_sample(path: Path, model: Model, sample: int | None) -> Result:
    import xarray as xr
    where = str(path)
    try:
        ds = xr.open_zarr(path) if path.suffix == ".zarr" else xr.open_dataset(path, engine="h5netcdf")
    except Exception as e:  # noqa: BLE001 — one line naming the file
        raise ResultError(f"{where}: not a soa-sweep result ({' '.join(str(e).split())[:120]})") from None
    with ds:
        if "sample" not in ds.dims or "time" not in ds.dims:
            raise ResultError(f"{where}: not a soa-sweep result (no 'sample' and 'time' dims)")
        n = ds.sizes["sample"]
        if sample is None:
            raise ResultError(f"{where}: a sweep of {n} samples: choose one with --sample K (0..{n - 1})")
        if not 0 <= sample < n:
            raise ResultError(f"{where}: --sample {sample} is out of range 0..{n - 1}")
        if "status" in ds and str(ds["status"].values[sample]) != "ok":
            msg = str(ds["message"].values[sample]) if "message" in ds else ""
            raise ResultError(f"{where}: sample {sample} failed: {msg}")
        names = [str(v) for v in ds.data_vars if ds[v].dims == ("sample", "time")]
        sel = ds.isel(sample=sample)
        import pandas as pd
        table = pd.DataFrame({"time": ds["time"].values, **{v: sel[v].values for v in names}})
    return from_table(table, model, f"{where} sample {sample}")


def load_result(result, model: Model, sample: int | None = None) -> Result:
    """Any supported result (see the module docstring) -> a checked :class:`Result`."""
    if isinstance(result, Result):
        return check(result, model)
    if hasattr(result, "keys") and not isinstance(result, (str, os.PathLike)):
        t = result["t"] if "t" in result else result.get("time")
        if t is None or "q" not in result:
            raise ResultError(f"result: a mapping needs 't' (or 'time') and 'q', got keys "
                              f"{sorted(map(str, result.keys()))}")
        outputs = {str(k): v for k, v in result.items() if k not in ("t", "time", "q")
                   and isinstance(v, np.ndarray) and v.ndim == 1 and v.dtype.kind in "fiu"}
        return check(Result(np.asarray(t), np.asarray(result["q"]), outputs, "result"), model)
    path = Path(result)
    where = str(path)
    if not path.exists():
        raise ResultError(f"{where}: no such result file")
    suffix = path.suffix.lower()
    if suffix in (".nc", ".zarr"):
        return _sweep_sample(path, model, sample)
    if suffix == ".npz":
        try:
            with np.load(path, allow_pickle=False) as z:
                data = {k: z[k] for k in z.files}
        except Exception as e:  # noqa: BLE001
            raise ResultError(f"{where}: not a readable .npz ({e})") from None
        t = data.get("t", data.get("time"))
        if t is None or "q" not in data:
            raise ResultError(f"{where}: needs arrays 't' (or 'time') and 'q', has {sorted(data)}")
        return check(Result(t, data["q"], {}, where), model)
    import pandas as pd
    try:
        table = pd.read_csv(path, skipinitialspace=True)
    except Exception as e:  # noqa: BLE001
        raise ResultError(f"{where}: not a readable CSV ({' '.join(str(e).split())[:120]})") from None
    return from_table(table, model, where)
