"""Results as a 3-D animation in one offline HTML file (SPEC V1): ``sf.animate``, ``soa-view``.

    import soa_fmu as sf
    sf.animate(model, sf.simulate(model, 2.0), "out/arm.html")

See docs/viewing.md.  Modules: :mod:`.results` (what a result may be), :mod:`.geometry` (visuals
and meshes), :mod:`.scene` (poses, tracks, the page), :mod:`.cli` (``soa-view``).
"""
from .geometry import ViewWarning
from .results import Result, ResultError, load_result
from .scene import animate

__all__ = ["animate", "load_result", "Result", "ResultError", "ViewWarning"]
