"""``soa-view MODEL RESULT -o OUT.html``: a result as a 3-D animation in one offline HTML file.

MODEL: a model file (URDF, native TOML, or whatever ``sf.load_model`` reads) or an FMU built by
``soa-build-fmu`` (its ``resources/model`` holds the model file).  RESULT: see
:mod:`soa_fmu.view.results`.  Any problem: one line on stderr, exit status 1, no HTML written.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import warnings
import zipfile
from pathlib import Path

from ..io import load_model
from ..io.checks import for_cli
from ..model import Model


def model_from_fmu(path: Path, tmp: str) -> Model:
    """The model file inside an FMU's ``resources/model/`` (with its includes), loaded as the build
    read it (``resources/fmu.json``: ``floating_base``, ``strict``, ``contact_floor``)."""
    try:
        with zipfile.ZipFile(path) as z:
            names = [n for n in z.namelist() if n.startswith("resources/model/") and not n.endswith("/")]
            z.extractall(tmp, names)
            cfg = json.loads(z.read("resources/fmu.json")) if "resources/fmu.json" in z.namelist() else {}
    except (zipfile.BadZipFile, ValueError):
        raise ValueError(f"{path}: not an FMU built by soa-build-fmu (not a zip archive, or a "
                         "broken resources/fmu.json)") from None
    top = sorted((n for n in names if n.count("/") == 2), key=lambda n: (not n.endswith(".toml"), n))
    if not top:
        raise ValueError(f"{path}: no model file under resources/model/ (not built by soa-build-fmu?)")
    with warnings.catch_warnings():               # (the build reported them)
        warnings.simplefilter("ignore")
        return load_model(Path(tmp) / top[0], floating_base=bool(cfg.get("floating_base")),
                          strict=bool(cfg.get("strict", True)),
                          contact_floor=cfg.get("contact_floor"))


def load_any_model(path: str | Path, tmp: str, floating_base: bool = False,
                   strict: bool = True, contact_floor: float | None = None) -> Model:
    path = Path(path)
    if path.suffix.lower() == ".fmu":
        return model_from_fmu(path, tmp)
    return load_model(path, floating_base=floating_base, strict=strict, contact_floor=contact_floor)


def view_sample(fmu, result, sample: int, out=None) -> Path:
    """Animate sample ``sample`` of a soa-sweep result (``.nc``/``.zarr``) of ``fmu`` (its model
    read from the FMU) into ``out`` (default ``<result>.sample<K>.html`` beside the result)."""
    from .scene import animate
    result = Path(result)
    out = Path(out) if out else result.with_name(f"{result.stem}.sample{sample}.html")
    with tempfile.TemporaryDirectory() as tmp:
        return animate(model_from_fmu(Path(fmu), tmp), result, out, sample=sample)


class _Parser(argparse.ArgumentParser):
    def error(self, message):            # one line, not usage + message
        print(f"soa-view: error: {message} (see --help)", file=sys.stderr)
        raise SystemExit(1)


def main(argv=None) -> int:
    """``soa-view``: write the animation; 0 on success, 1 with one line on stderr otherwise."""
    ap = _Parser(prog="soa-view", description="Animate a result (CSV from any FMI host, .npz of "
                 "(t, q), or one sample of a soa-sweep .nc/.zarr) in one offline HTML file.")
    ap.add_argument("model", help="model file (.urdf, .toml, …) or an FMU built by soa-build-fmu")
    ap.add_argument("result", help="result: .csv, .npz, or a soa-sweep .nc/.zarr with --sample")
    ap.add_argument("-o", "--out", required=True, help="the HTML file to write")
    ap.add_argument("--sample", type=int, default=None, help="sample K of a soa-sweep result")
    ap.add_argument("--floating-base", action="store_true", help="URDF: a free-flyer root joint")
    ap.add_argument("--contact-floor", type=float, default=None, metavar="HEIGHT",
                    help="URDF: its <collision> geometry as contact geometry (drawn) on a floor at "
                    "this height (docs/contact.md)")
    ap.add_argument("--lenient", action="store_true", help="read the model file as soa-build-fmu "
                    "--lenient does (non-physical inertias, massless joints locked, armature on "
                    "degenerate axes; a warning each)")
    ap.add_argument("--fps", type=float, default=30.0, help="keyframes kept per second of result "
                    "(the rest interpolated; default %(default)g)")
    args = ap.parse_args(argv)
    try:
        if Path(args.out).suffix.lower() not in (".html", ".htm"):
            raise ValueError(f"-o {args.out}: the output must be an .html file")
        if args.sample is not None and Path(args.result).suffix.lower() not in (".nc", ".zarr"):
            raise ValueError(f"--sample applies to soa-sweep results (.nc, .zarr), not {args.result}")
        from .scene import animate
        with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = load_any_model(args.model, tmp, args.floating_base, not args.lenient,
                                   args.contact_floor)
            out = animate(model, args.result, args.out, sample=args.sample, max_fps=args.fps)
        for w in caught:
            print(f"soa-view: warning: {for_cli(' '.join(str(w.message).split()))}", file=sys.stderr)
    except Exception as e:     # noqa: BLE001 — one readable line, exit 1
        msg = for_cli(" ".join(str(e).split()) or type(e).__name__)
        print(f"soa-view: error: {msg}", file=sys.stderr)
        return 1
    print(f"wrote {out} ({out.stat().st_size / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
