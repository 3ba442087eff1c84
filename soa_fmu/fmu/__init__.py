"""The FMU layer: the variable table (:mod:`.variables`), read by both the pythonfmu slave
(:mod:`.slave`) and the modelDescription.xml generator (:mod:`model_descriptions.generator`).
``build_fmu.py`` packs the slave, the engine and the model file into an FMU."""
