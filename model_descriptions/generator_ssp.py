"""SystemStructure.ssd and parameter sets (.ssv) of an SSP archive (System Structure and
Parameterization 1.0, Modelica Association), with lxml; checked against the SSP 1.0 XSDs that fmpy
ships (``fmpy/ssp/schema``).

A :class:`Component` is an FMU inside the archive with its connectors (inputs, outputs and the
parameters its parameter set gives values to) and that parameter set; :func:`system_description`
writes the system of components, their connections and the default experiment, with the fixed
communication step as the annotations OMSimulator (``org.openmodelica``) and libcosim
(``com.opensimulationplatform``) read.  Parameter sets are bound per component, so their names are
the FMU's own variable names (no prefix to split from structured names such as ``link1.mass``).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

from lxml import etree

SSD = "http://ssp-standard.org/SSP1/SystemStructureDescription"
SSC = "http://ssp-standard.org/SSP1/SystemStructureCommon"
SSV = "http://ssp-standard.org/SSP1/SystemStructureParameterValues"
OMS = "https://raw.githubusercontent.com/OpenModelica/OMSimulator/master/schema/oms.xsd"
OSP = "http://opensimulationplatform.com/SSP/OSPAnnotations"
FMU_TYPE = "application/x-fmu-sharedlibrary"


@dataclass
class Parameter:
    name: str
    type: str            # "Real" | "Boolean" | "Integer"
    value: object


@dataclass
class Component:
    """An FMU of the system: its name, its path inside the archive, its connectors as (name, kind,
    type), and the values its parameter set gives (written to ``ssv``, a path in the archive)."""
    name: str
    source: str
    connectors: list[tuple[str, str, str]]
    parameters: list[Parameter] = field(default_factory=list)
    ssv: str | None = None


def _q(ns: str, tag: str) -> str:
    return f"{{{ns}}}{tag}"


def _value(p: Parameter) -> str:
    if p.type == "Boolean":
        return "true" if p.value else "false"
    if p.type == "Real":
        return repr(float(p.value))
    return str(int(p.value))


def parameter_set(name: str, parameters: list[Parameter]) -> etree._Element:
    """An SSP 1.0 parameter set (``ssv:ParameterSet``)."""
    root = etree.Element(_q(SSV, "ParameterSet"), {"version": "1.0", "name": name},
                         nsmap={"ssv": SSV})
    params = etree.SubElement(root, _q(SSV, "Parameters"))
    for p in parameters:
        el = etree.SubElement(params, _q(SSV, "Parameter"), {"name": p.name})
        etree.SubElement(el, _q(SSV, p.type), {"value": _value(p)})
    return root


def system_description(name: str, components: list[Component],
                       connections: list[tuple[str, str, str, str]], stop_time: float,
                       step: float) -> etree._Element:
    """The ``ssd:SystemStructureDescription`` of one system ``root`` holding ``components``,
    with ``connections`` (start element, start connector, end element, end connector), the default
    experiment [0, stop_time] and the fixed communication step ``step`` (tool annotations)."""
    root = etree.Element(_q(SSD, "SystemStructureDescription"), {"version": "1.0", "name": name},
                         nsmap={"ssd": SSD, "ssc": SSC, "ssv": SSV, "oms": OMS, "osp": OSP})
    system = etree.SubElement(root, _q(SSD, "System"), {"name": "root"})
    elements = etree.SubElement(system, _q(SSD, "Elements"))
    for c in components:
        comp = etree.SubElement(elements, _q(SSD, "Component"),
                                {"name": c.name, "type": FMU_TYPE, "source": c.source})
        conns = etree.SubElement(comp, _q(SSD, "Connectors"))
        for cname, kind, type_ in c.connectors:
            conn = etree.SubElement(conns, _q(SSD, "Connector"), {"name": cname, "kind": kind})
            etree.SubElement(conn, _q(SSC, type_))
        if c.ssv:
            binds = etree.SubElement(comp, _q(SSD, "ParameterBindings"))
            etree.SubElement(binds, _q(SSD, "ParameterBinding"), {"source": c.ssv})
    links = etree.SubElement(system, _q(SSD, "Connections"))
    for a, ca, b, cb in connections:
        etree.SubElement(links, _q(SSD, "Connection"), {
            "startElement": a, "startConnector": ca, "endElement": b, "endConnector": cb})
    # OMSimulator: the system's master algorithm and communication step
    notes = etree.SubElement(system, _q(SSD, "Annotations"))
    note = etree.SubElement(notes, _q(SSC, "Annotation"), {"type": "org.openmodelica"})
    oms = etree.SubElement(note, _q(OMS, "Annotations"))
    info = etree.SubElement(oms, _q(OMS, "SimulationInformation"))
    etree.SubElement(info, _q(OMS, "FixedStepMaster"), {"description": "oms-ma",
                                                         "stepSize": repr(float(step))})
    experiment = etree.SubElement(root, _q(SSD, "DefaultExperiment"),
                                  {"startTime": "0.0", "stopTime": repr(float(stop_time))})
    # libcosim: its fixed-step algorithm's base step
    notes = etree.SubElement(experiment, _q(SSD, "Annotations"))
    note = etree.SubElement(notes, _q(SSC, "Annotation"), {"type": "com.opensimulationplatform"})
    algo = etree.SubElement(note, _q(OSP, "Algorithm"))
    etree.SubElement(algo, _q(OSP, "FixedStepAlgorithm"), {"baseStepSize": repr(float(step))})
    return root


def to_bytes(root: etree._Element) -> bytes:
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True)


def schema_dir() -> Path:
    """The SSP 1.0 XSDs fmpy ships."""
    import fmpy
    return Path(fmpy.__file__).parent / "ssp" / "schema"


@functools.lru_cache(maxsize=None)
def _schema(name: str) -> etree.XMLSchema:
    return etree.XMLSchema(etree.parse(str(schema_dir() / name)))


def validate(xml: bytes, kind: str = "ssd") -> list[str]:
    """Problems the SSP 1.0 XSD finds in a SystemStructure.ssd (``kind`` "ssd") or a parameter
    set ("ssv"); an empty list when it is valid."""
    schema = _schema({"ssd": "SystemStructureDescription.xsd",
                      "ssv": "SystemStructureParameterValues.xsd"}[kind])
    if schema.validate(etree.fromstring(xml)):
        return []
    return [f"line {e.line}: {e.message}" for e in schema.error_log]
