"""modelDescription.xml (FMI 2.0 Co-Simulation and Model Exchange) from the FMU variable table,
with lxml (FMI 3.0: :mod:`model_descriptions.generator_fmi3`).

The variables come from :func:`soa_fmu.fmu.variables.build_table` — the same rows the slave binds —
so the XML cannot drift from what the FMU does.  Unlike pythonfmu's own generator this writes
``UnitDefinitions`` (SI base-unit exponents) and a unit on every Real, an explicit variability on
every variable, ``ModelStructure`` with ``Outputs``, ``Derivatives`` (Model Exchange) and ``InitialUnknowns`` and
their dependencies, and the capability flags the FMU really has.  An FMU with both interfaces has
both ``ModelExchange`` and ``CoSimulation`` (one binary); its table has the continuous states
(``build_table(..., states=True)``: ``der(q[i])`` and ``qdd`` carry the ``derivative``
attribute).

``needsExecutionTool="false"``: in FMI 2.0 the flag marks *tool coupling* FMUs, which only hold the
communication to a separately running simulation tool.  Both flavours contain their model and
engine and execute them in the importer's own process: the native FMU needs only the C runtime; the
pythonfmu FMU needs a Python 3.11 runtime library and numpy (the engine's compiled extension is
bundled) — documented in docs/fmu.md and in the ``description`` attribute, not signalled by this
flag.  A native FMU also lists its ``SourceFiles`` (a source-code FMU) and provides directional
derivatives.

:func:`validate` checks a document against the FMI 2.0 XSD shipped with fmpy (lxml.etree.XMLSchema).
"""
from __future__ import annotations

import datetime
import functools
from pathlib import Path

from lxml import etree

from soa_fmu.fmu.variables import UNITS, VariableTable

FMI2_XSD = "fmi2ModelDescription.xsd"
DENSE_LIMIT = 64     # a dependency list longer than this is written as "depends on all knowns"
SI_BASE = ("kg", "m", "s", "A", "K", "mol", "cd", "rad")

COSIMULATION_FLAGS = {
    "needsExecutionTool": "false",
    "canHandleVariableCommunicationStepSize": "true",
    "canInterpolateInputs": "false",
    "maxOutputDerivativeOrder": "0",
    "canRunAsynchronuously": "false",
    "canBeInstantiatedOnlyOncePerProcess": "false",
    "canNotUseMemoryManagementFunctions": "true",
    "canGetAndSetFMUstate": "true",
    "canSerializeFMUstate": "true",
    "providesDirectionalDerivative": "false",
}

MODEL_EXCHANGE_FLAGS = {
    "needsExecutionTool": "false",
    "completedIntegratorStepNotNeeded": "false",   # renormalization, moving targets
    "canBeInstantiatedOnlyOncePerProcess": "false",
    "canNotUseMemoryManagementFunctions": "true",
    "canGetAndSetFMUstate": "true",
    "canSerializeFMUstate": "true",
    "providesDirectionalDerivative": "false",
}


def _fmt(value) -> str:
    """An XML attribute value: xs:double as the shortest round-trip repr, xs:boolean lower case."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def description_root(fmi_version: str, token: dict[str, str], model_name: str, description: str,
                     generation_tool: str, version: str | None,
                     timestamp: datetime.datetime | None) -> etree._Element:
    """The ``fmiModelDescription`` element's attributes, common to FMI 2.0 and 3.0 (``token``: the
    version's ``guid`` or ``instantiationToken``); stamped now (UTC, whole seconds) by default."""
    stamp = (timestamp or datetime.datetime.now(datetime.timezone.utc)).replace(microsecond=0)
    root = etree.Element("fmiModelDescription", {
        "fmiVersion": fmi_version,
        "modelName": model_name,
        **token,
        "description": description,
        "generationTool": generation_tool,
        "generationDateAndTime": stamp.isoformat().replace("+00:00", "Z"),
        "variableNamingConvention": "structured",
    })
    if version:
        root.set("version", version)
    return root


def model_description(table: VariableTable, *, model_name: str, identifier: str, guid: str,
                      description: str = "", log_categories: dict[str, str] | None = None,
                      step_size: float | None = None, tolerance: float | None = None,
                      generation_tool: str = "soa_fmu", version: str | None = None,
                      timestamp: datetime.datetime | None = None,
                      source_files: list[str] | None = None,
                      directional_derivatives: bool = False,
                      interfaces: tuple[str, ...] = ("cs",),
                      me_directional_derivatives: bool = False) -> etree._Element:
    """The ``fmiModelDescription`` element (FMI 2.0) with the ``interfaces`` ``cs`` and/or ``me``.
    ``source_files``: the C files under ``sources/`` (native FMU), listed as ``SourceFiles``;
    ``directional_derivatives`` / ``me_directional_derivatives``: the flag of each interface."""
    if "me" in interfaces and not table.states:
        raise ValueError("a Model Exchange FMU needs the variable table with states")
    root = description_root("2.0", {"guid": guid}, model_name, description, generation_tool,
                            version, timestamp)
    nz = table.n_event_indicators if "me" in interfaces else 0
    if nz:                       # one per joint stop limit (CVode lands on the contact instant)
        root.set("numberOfEventIndicators", str(nz))
    kinds = []
    if "me" in interfaces:
        kinds.append(("ModelExchange", dict(MODEL_EXCHANGE_FLAGS, providesDirectionalDerivative=_fmt(
            bool(me_directional_derivatives)))))
    if "cs" in interfaces:
        kinds.append(("CoSimulation", dict(COSIMULATION_FLAGS, providesDirectionalDerivative=_fmt(
            bool(directional_derivatives)))))
    for tag, flags in kinds:
        element = etree.SubElement(root, tag, {"modelIdentifier": identifier, **flags})
        if source_files:
            files = etree.SubElement(element, "SourceFiles")
            for name in source_files:
                etree.SubElement(files, "File", {"name": name})

    units = etree.SubElement(root, "UnitDefinitions")
    for name in table.units_used():
        unit = etree.SubElement(units, "Unit", {"name": name})
        exps = UNITS[name]
        etree.SubElement(unit, "BaseUnit", {k: str(exps[k]) for k in SI_BASE if exps.get(k)})

    if log_categories:
        cats = etree.SubElement(root, "LogCategories")
        for name, text in log_categories.items():
            etree.SubElement(cats, "Category", {"name": name, "description": text})

    experiment = {"startTime": "0.0"}
    if step_size is not None:
        experiment["stepSize"] = _fmt(float(step_size))
    if tolerance is not None:
        experiment["tolerance"] = _fmt(float(tolerance))
    etree.SubElement(root, "DefaultExperiment", experiment)

    variables = etree.SubElement(root, "ModelVariables")
    for position, v in enumerate(table.variables):
        if v.value_reference != position:
            raise ValueError("variable table out of order: value reference != position")
        attrs = {"name": v.name, "valueReference": str(v.value_reference),
                 "description": v.description, "causality": v.causality,
                 "variability": v.variability}
        if v.initial is not None:
            attrs["initial"] = v.initial
        sv = etree.SubElement(variables, "ScalarVariable", attrs)
        type_attrs = {}
        if v.type == "Real":
            if v.unit is None:
                raise ValueError(f"Real variable {v.name} has no unit")
            type_attrs["unit"] = v.unit
        if v.start is not None:
            type_attrs["start"] = _fmt(float(v.start) if v.type == "Real" else v.start)
        if v.derivative is not None:
            type_attrs["derivative"] = str(v.derivative + 1)
        etree.SubElement(sv, v.type, type_attrs)

    structure = etree.SubElement(root, "ModelStructure")
    outputs = table.output_dependencies()
    if outputs:
        node = etree.SubElement(structure, "Outputs")
        for vr, deps in outputs.items():
            etree.SubElement(node, "Unknown", unknown({"index": str(vr + 1)}, deps, 1))
    derivatives = table.derivative_dependencies()
    if derivatives:
        node = etree.SubElement(structure, "Derivatives")
        for vr in sorted(derivatives, key=lambda r: table.variables[r].derivative):
            etree.SubElement(node, "Unknown", unknown({"index": str(vr + 1)}, derivatives[vr], 1))
    initial = table.initial_dependencies()
    if initial:
        node = etree.SubElement(structure, "InitialUnknowns")
        for vr, deps in sorted(initial.items()):
            etree.SubElement(node, "Unknown", unknown({"index": str(vr + 1)}, deps, 1))
    return root


def unknown(attrs: dict[str, str], deps: list[int] | None, base: int) -> dict[str, str]:
    """The attributes of a ModelStructure unknown (FMI 2.0 and 3.0): its ``dependencies`` (value
    references or indices, numbered from ``base``) when the list is sparse; a dense list (ALL, or
    more than DENSE_LIMIT knowns) is left out, which both standards define as "depends on all
    knowns" — a superset, so the description grows O(N) with the model, not O(N²)."""
    if deps is not None and len(deps) <= DENSE_LIMIT:
        attrs["dependencies"] = " ".join(str(d + base) for d in deps)
    return attrs


def to_bytes(root: etree._Element) -> bytes:
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True)


def schema_path() -> Path:
    """The FMI 2.0 XSD: vendored in ./schema/fmi2 if present, else the copy shipped with fmpy."""
    vendored = Path(__file__).parent / "schema" / "fmi2" / FMI2_XSD
    if vendored.exists():
        return vendored
    import fmpy
    return Path(fmpy.__file__).parent / "schema" / "fmi2" / FMI2_XSD


@functools.lru_cache(maxsize=None)
def _schema(path: Path) -> etree.XMLSchema:
    return etree.XMLSchema(etree.parse(str(path)))


def schema_problems(xsd: Path, xml: bytes | etree._Element) -> list[str]:
    """Problems the XSD ``xsd`` finds in a document (an empty list when it is valid); each schema
    is parsed once."""
    schema = _schema(xsd)
    doc = etree.fromstring(xml) if isinstance(xml, bytes) else xml
    if schema.validate(doc):
        return []
    return [f"line {e.line}: {e.message}" for e in schema.error_log]


def validate(xml: bytes | etree._Element) -> list[str]:
    """Problems found by the FMI 2.0 XSD (an empty list when the document is valid)."""
    return schema_problems(schema_path(), xml)
