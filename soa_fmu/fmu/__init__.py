"""The FMU layer: the variable table (:mod:`.variables`), read by both the pythonfmu slave
(:mod:`.slave`) and the modelDescription.xml generator (:mod:`model_descriptions.generator`).
``build_fmu.py`` packs the slave, the engine and the model file into an FMU."""


def load_bundled_model(resources, cfg: dict):
    """The model of an FMU built by build_fmu.py: its model file under ``resources`` read with the
    options its ``resources/fmu.json`` (``cfg``) records — what the slave runs and soa-view draws."""
    from pathlib import Path

    from ..io import load_model
    model = load_model(Path(resources) / cfg["model_file"], floating_base=bool(cfg["floating_base"]),
                       strict=bool(cfg.get("strict", True)), contact_floor=cfg.get("contact_floor"))
    model.stops_enabled = bool(cfg.get("stops", True))      # --no-stops
    return model
