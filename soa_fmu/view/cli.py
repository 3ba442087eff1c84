"""``soa-view MODEL RESULT -o OUT.html``: a result as a 3-D animation in one offline HTML file.

MODEL: a model file (URDF, native TOML, or whatever ``sf.load_model`` reads) or an FMU built by
``soa-build-fmu`` (its ``resources/model`` holds the model file and its meshes, ``resources/fmu.json``
the options it is loaded with; :mod:`soa_fmu.view.bundle`).  RESULT: see
:mod:`soa_fmu.view.results`.  Any problem: one line on stderr, exit status 1, no HTML written.
"""
from __future__ import annotations

import sys
import warnings
from pathlib import Path

from .bundle import opened_model
from ..io.checks import OneLineParser, for_cli


def view_sample(fmu, result, sample: int, out=None) -> Path:
    """Animate sample ``sample`` of a soa-sweep result (``.nc``/``.zarr``) of ``fmu`` (its model
    read from the FMU) into ``out`` (default ``<result>.sample<K>.html`` beside the result)."""
    from .scene import animate
    result = Path(result)
    out = Path(out) if out else result.with_name(f"{result.stem}.sample{sample}.html")
    return animate(Path(fmu), result, out, sample=sample)


def main(argv=None) -> int:
    """``soa-view``: write the animation; 0 on success, 1 with one line on stderr otherwise."""
    ap = OneLineParser(prog="soa-view", usage_status=1, description="Animate a result (CSV from any FMI host, .npz of "
                 "(t, q), or one sample of a soa-sweep .nc/.zarr) in one offline HTML file.")
    ap.add_argument("model", help="model file (.urdf, .toml, …) or an FMU built by soa-build-fmu")
    ap.add_argument("result", help="result: .csv, .npz, or a soa-sweep .nc/.zarr with --sample")
    ap.add_argument("-o", "--out", required=True, help="the HTML file to write")
    ap.add_argument("--sample", type=int, default=None, help="sample K of a soa-sweep result")
    ap.add_argument("--floating-base", action="store_true", help="URDF: a free-flyer root joint (an FMU "
                    "records its own)")
    ap.add_argument("--contact-floor", type=float, default=None, metavar="HEIGHT",
                    help="URDF: its <collision> geometry as contact geometry (drawn) on a floor at "
                    "this height (docs/contact.md; an FMU records its own)")
    ap.add_argument("--lenient", action="store_true", help="read the model file as soa-build-fmu "
                    "--lenient does (non-physical inertias, massless joints locked, armature on "
                    "degenerate axes; a warning each; an FMU records its own)")
    ap.add_argument("--fps", type=float, default=30.0, help="keyframes kept per second of result "
                    "(the rest interpolated; default %(default)g)")
    args = ap.parse_args(argv)
    try:
        if Path(args.out).suffix.lower() not in (".html", ".htm"):
            raise ValueError(f"-o {args.out}: the output must be an .html file")
        if args.sample is not None and Path(args.result).suffix.lower() not in (".nc", ".zarr"):
            raise ValueError(f"--sample applies to soa-sweep results (.nc, .zarr), not {args.result}")
        from .scene import animate
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with opened_model(args.model, args.floating_base, not args.lenient,
                              args.contact_floor) as model:
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
