"""modelDescription.xml (FMI 3.0 Co-Simulation and Model Exchange) from the FMU variable table.

The same table as FMI 2.0 (:func:`soa_fmu.fmu.variables.build_table`), its rows grouped into FMI 3.0
array variables by :meth:`~soa_fmu.fmu.variables.VariableTable.arrays`: ``tau`` is one Float64 of
dimension [nv], ``q`` [nq], ``<frame>.f_ext`` [6], ``der(q)`` [nq] (the derivative of ``q``),
``qdd`` [nv] (of ``qd``); scalars stay scalars.  The value reference of an array is that of its
first element in the table, so the native FMU indexes the same buffer in both versions; the
independent variable ``time`` takes the next free value reference.

Units: an array whose elements share one unit carries it; one that mixes units (``q`` of a free
joint: quaternion 1, position m) carries none, and its description lists each element's.
Descriptions list the elements' own descriptions (``[1] ...; [2] ...``).

:func:`validate` checks a document against the FMI 3.0 XSD shipped with fmpy.
"""
from __future__ import annotations

import datetime
from pathlib import Path

from lxml import etree

from soa_fmu.fmu.variables import UNITS, VariableTable

from .generator import SI_BASE, _fmt, description_root, schema_problems, unknown

FMI3_XSD = "fmi3ModelDescription.xsd"
TYPES = {"Real": "Float64", "Boolean": "Boolean", "String": "String"}

COMMON_FLAGS = {
    "needsExecutionTool": "false",
    "canBeInstantiatedOnlyOncePerProcess": "false",
    "canGetAndSetFMUState": "true",
    "canSerializeFMUState": "true",
}
COSIMULATION_FLAGS = {
    "canHandleVariableCommunicationStepSize": "true",
    "maxOutputDerivativeOrder": "0",
    "providesIntermediateUpdate": "false",
    "mightReturnEarlyFromDoStep": "false",
    "canReturnEarlyAfterIntermediateUpdate": "false",
    "hasEventMode": "false",
    "providesEvaluateDiscreteStates": "false",
}
MODEL_EXCHANGE_FLAGS = {
    "needsCompletedIntegratorStep": "true",     # renormalization, moving targets
    "providesEvaluateDiscreteStates": "false",
}


def time_value_reference(table: VariableTable) -> int:
    """The value reference of the independent variable ``time``."""
    return len(table.variables)


def model_description(table: VariableTable, *, model_name: str, identifier: str, guid: str,
                      description: str = "", log_categories: dict[str, str] | None = None,
                      step_size: float | None = None, generation_tool: str = "soa_fmu",
                      version: str | None = None, timestamp: datetime.datetime | None = None,
                      interfaces: tuple[str, ...] = ("cs",),
                      directional_derivatives: bool = False,
                      me_directional_derivatives: bool = False) -> etree._Element:
    """The ``fmiModelDescription`` element (FMI 3.0) with the ``interfaces`` ``cs`` and/or ``me``
    (``directional_derivatives``: the flags of each; adjoint derivatives are provided with them)."""
    if "me" in interfaces and not table.states:
        raise ValueError("a Model Exchange FMU needs the variable table with states")
    root = description_root("3.0", {"instantiationToken": guid}, model_name, description,
                            generation_tool, version, timestamp)
    for tag, key, flags, dd in (("ModelExchange", "me", MODEL_EXCHANGE_FLAGS,
                                 me_directional_derivatives),
                                ("CoSimulation", "cs", COSIMULATION_FLAGS,
                                 directional_derivatives)):
        if key in interfaces:
            etree.SubElement(root, tag, {"modelIdentifier": identifier, **COMMON_FLAGS,
                                         "providesDirectionalDerivatives": _fmt(bool(dd)),
                                         "providesAdjointDerivatives": _fmt(bool(dd)), **flags})

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
    etree.SubElement(root, "DefaultExperiment", experiment)

    variables = etree.SubElement(root, "ModelVariables")
    etree.SubElement(variables, "Float64", {
        "name": "time", "valueReference": str(time_value_reference(table)),
        "causality": "independent", "variability": "continuous", "unit": "s",
        "description": "simulation time"})
    arrays = table.arrays()
    owner = {}                           # table row -> value reference of its FMI 3.0 variable
    for name, first, n, is_array in arrays:
        rows = table.variables[first:first + n]
        for r in rows:
            owner[r.value_reference] = first
        v = rows[0]
        attrs = {"name": name, "valueReference": str(first), "causality": v.causality,
                 "variability": v.variability}
        if n == 1:
            attrs["description"] = v.description
        else:
            attrs["description"] = "; ".join(f"[{k + 1}] {r.description}"
                                              + (f" ({r.unit})" if r.unit and len(
                                                  {x.unit for x in rows}) > 1 else "")
                                              for k, r in enumerate(rows))
        if v.initial is not None and v.causality != "input":
            attrs["initial"] = v.initial
        if v.type == "Real":
            if len({r.unit for r in rows}) == 1:
                attrs["unit"] = v.unit
            if v.derivative is not None:
                attrs["derivative"] = str(owner[v.derivative])
        if v.start is not None and v.type != "String":
            attrs["start"] = " ".join(_fmt(float(r.start) if v.type == "Real" else bool(r.start))
                                      for r in rows)
        element = etree.SubElement(variables, TYPES[v.type], attrs)
        if v.type == "String" and v.start is not None:
            etree.SubElement(element, "Start", {"value": str(v.start)})
        if is_array:
            etree.SubElement(element, "Dimension", {"start": str(n)})

    def grouped(deps: dict[int, list[int] | None]) -> dict[int, list[int] | None]:
        """Scalar dependencies as dependencies between FMI 3.0 variables (None: all knowns)."""
        out: dict[int, set[int] | None] = {}
        for vr, ds in deps.items():
            if ds is None or out.get(owner[vr], set()) is None:
                out[owner[vr]] = None
            else:
                out.setdefault(owner[vr], set()).update(owner[d] for d in ds)
        return {vr: None if ds is None else sorted(ds) for vr, ds in out.items()}

    structure = etree.SubElement(root, "ModelStructure")
    for tag, deps in (("Output", grouped(table.output_dependencies())),
                      ("ContinuousStateDerivative", grouped(table.derivative_dependencies())),
                      ("InitialUnknown", grouped(table.initial_dependencies()))):
        order = sorted(deps, key=lambda r: table.variables[r].derivative or 0) \
            if tag == "ContinuousStateDerivative" else sorted(deps)
        for vr in order:
            etree.SubElement(structure, tag, unknown({"valueReference": str(vr)}, deps[vr], 0))
    if "me" in interfaces:      # the joint stops' margins, then the contact pairs' penetrations
        indicators = table.vrs("stop_margin") + table.vrs("pair_depth")
        for vr in dict.fromkeys(owner[v] for v in indicators):     # (stop_margin: one array)
            etree.SubElement(structure, "EventIndicator", {"valueReference": str(vr)})
    return root


def build_description(identifier: str, sources: list[str]) -> bytes:
    """``sources/buildDescription.xml``: the C99 files of a source-code FMU and the library they
    need (libm), checked against the FMI 3.0 build-description XSD."""
    root = etree.Element("fmiBuildDescription", {"fmiVersion": "3.0"})
    config = etree.SubElement(root, "BuildConfiguration", {"modelIdentifier": identifier})
    files = etree.SubElement(config, "SourceFileSet", {"language": "C99"})
    for name in sources:
        etree.SubElement(files, "SourceFile", {"name": name})
    etree.SubElement(config, "Library", {"name": "m", "external": "true",
                                         "description": "the C math library (libm)"})
    xml = etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True)
    schema = etree.XMLSchema(etree.parse(str(schema_path("fmi3BuildDescription.xsd"))))
    if not schema.validate(etree.fromstring(xml)):
        raise RuntimeError(f"buildDescription.xml violates the FMI 3.0 schema: {schema.error_log}")
    return xml


def schema_path(name: str = FMI3_XSD) -> Path:
    """An FMI 3.0 XSD shipped with fmpy."""
    import fmpy
    return Path(fmpy.__file__).parent / "schema" / "fmi3" / name


def validate(xml: bytes | etree._Element) -> list[str]:
    """Problems found by the FMI 3.0 XSD (an empty list when the document is valid)."""
    return schema_problems(schema_path(), xml)
