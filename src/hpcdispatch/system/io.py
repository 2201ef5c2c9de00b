"""Reading and writing systems as TOML, and the bundled presets.

Schema (all keys except ``description``, ``topology`` and ``trace`` are required)::

    name = "eurora"
    description = "free text"
    resources = ["core", "mem", "gpu", "mic"]        # column order of every capacity array

    [topology]                                        # optional, default kind = "linear"
    kind = "linear"                                   # or "grid2d" (mesh) / "torus2d" (wrap-around)
                                                      #   with shape = [rows, cols], nodes row-major

    [trace]                                           # optional: SWF files this preset describes
    file_prefixes = ["HPC2N-2002"]

    [[node_types]]                                    # in node order
    name = "gpu"
    count = 32
    capacity = { core = 16, mem = 16384, gpu = 2 }   # missing resources are 0
"""

from __future__ import annotations

import re
import tomllib
from importlib import resources as importlib_resources
from pathlib import Path
from typing import Any

import tomli_w

from hpcdispatch._util import read_utf8_file
from hpcdispatch.errors import ConfigError
from hpcdispatch.system.model import TOPOLOGY_KINDS, NodeType, System, Topology

_PRESET_PACKAGE = "hpcdispatch.system"
TOP_KEYS = ("name", "description", "resources", "node_types", "topology", "trace")


class _Where:
    """Names a place of a system document: ``SOURCE, line N, FIELD`` (the line found in the
    TOML text when there is one: the key's line inside its table, else the table's)."""

    def __init__(self, source: str, text: str | None):
        self.source = source
        self.lines = text.splitlines() if text else []

    def _find(self, pattern: str, start: int = 0, stop_at_table: bool = False) -> int | None:
        pat = re.compile(pattern)
        for n, line in enumerate(self.lines[start:], start + 1):
            if pat.match(line):
                return n
            if stop_at_table and n > start + 1 and re.match(r"^\s*\[", line):
                return None
        return None

    def _key(self, key: str, start: int = 0) -> int | None:
        return self._find(r"^\s*" + re.escape(key) + r"\s*=", start, stop_at_table=start > 0)

    def line(self, fld: str) -> int | None:
        m = re.match(r"^node_types\[(\d+)\](?:\.(\w+))?", fld)
        if m:
            head, seen = None, -1
            for n, line in enumerate(self.lines, 1):
                if re.match(r"^\s*\[\[\s*node_types\s*\]\]", line):
                    seen += 1
                    if seen == int(m.group(1)):
                        head = n
                        break
            if head is None:
                return self._key("node_types")
            return (self._key(m.group(2), head - 1) if m.group(2) else None) or head
        table, _, key = fld.partition(".")
        head = self._find(r"^\s*\[\s*" + re.escape(table) + r"\s*\]")
        if head is not None:
            return (
                self._key(key.partition(".")[0].partition("[")[0], head - 1) if key else None
            ) or head
        top = re.match(r"^(\w+)", fld)
        return self._key(top.group(1)) if top else None

    def error(self, fld: str, message: str) -> ConfigError:
        line = self.line(fld) if fld else None
        where = self.source + (f", line {line}" if line else "") + (f", {fld}" if fld else "")
        return ConfigError(f"{where}: {message}")


def _type_name(value: Any) -> str:
    return {
        str: "a string",
        int: "an integer",
        float: "a number",
        bool: "true/false",
        list: "a list",
        dict: "a table",
    }.get(type(value), type(value).__name__)


def _require(
    doc: dict[str, Any], key: str, kind: type | tuple[type, ...], w: _Where, fld: str
) -> Any:
    if key not in doc:
        raise w.error(fld.rpartition(".")[0] if "." in fld else "", f"missing required key '{key}'")
    value = doc[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        kinds = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise w.error(fld, f"must be {kinds}, got {_type_name(value)} {value!r}")
    return value


def parse_system(doc: dict[str, Any], source: str = "<system>", text: str | None = None) -> System:
    """Build a :class:`System` from a parsed TOML document; errors name ``source``, the field
    and, given the document's ``text``, the line."""
    w = _Where(source, text)
    if not isinstance(doc, dict):
        raise w.error("", f"a system is a TOML table, got {_type_name(doc)}")
    unknown = sorted(set(doc) - set(TOP_KEYS))
    if unknown:
        raise w.error("", f"unknown key(s) {unknown}; known: {', '.join(TOP_KEYS)}")
    name = _require(doc, "name", str, w, "name")
    resources = _require(doc, "resources", list, w, "resources")
    if not all(isinstance(r, str) and r for r in resources):
        raise w.error("resources", f"must be a list of non-empty strings, got {resources!r}")
    description = doc.get("description", "")
    if not isinstance(description, str):
        raise w.error(
            "description", f"must be a string, got {_type_name(description)} {description!r}"
        )
    raw_types = _require(doc, "node_types", list, w, "node_types")
    node_types = []
    for i, nt in enumerate(raw_types):
        fld = f"node_types[{i}]"
        if not isinstance(nt, dict):
            raise w.error(fld, f"must be a table, got {_type_name(nt)} {nt!r}")
        unknown = set(nt) - {"name", "count", "capacity"}
        if unknown:
            raise w.error(fld, f"unknown key(s) {sorted(unknown)} (expected name, count, capacity)")
        nt_name = _require(nt, "name", str, w, f"{fld}.name")
        count = _require(nt, "count", int, w, f"{fld}.count")
        cap = _require(nt, "capacity", dict, w, f"{fld}.capacity")
        unknown = sorted(set(cap) - set(resources))
        if unknown:
            raise w.error(
                f"{fld}.capacity",
                f"unknown resource(s) {unknown}; declared resources are {resources}",
            )
        if any(nt_name == other.name for other in node_types):
            raise w.error(f"{fld}.name", f"a second node type named '{nt_name}'")
        try:
            node_types.append(NodeType(name=nt_name, count=count, capacity=dict(cap)))
        except ConfigError as exc:
            key = (
                "count"
                if "count must" in str(exc)
                else "capacity"
                if "capacity of" in str(exc)
                else "name"
            )
            raise w.error(f"{fld}.{key}", str(exc)) from None
    topology = _topology(doc.get("topology", {}), w)
    trace = doc.get("trace", {})
    if (
        not isinstance(trace, dict)
        or set(trace) - {"file_prefixes"}
        or not (
            isinstance(trace.get("file_prefixes", []), list)
            and all(isinstance(p, str) for p in trace.get("file_prefixes", []))
        )
    ):
        raise w.error("trace", f"must be a table with file_prefixes = [strings], got {trace!r}")
    try:
        return System(
            name=name,
            resources=tuple(resources),
            node_types=tuple(node_types),
            topology=topology,
            description=description,
        )
    except ConfigError as exc:
        fld = (
            "topology.shape"
            if "topology" in str(exc)
            else "resources"
            if "resource" in str(exc)
            else "node_types"
        )
        raise w.error(
            fld, str(exc)
        ) from None  # (a grid that does not hold the nodes, no nodes at all ...)


def _topology(topo: Any, w: _Where) -> Topology:
    if not isinstance(topo, dict):
        raise w.error("topology", f"must be a table, got {_type_name(topo)} {topo!r}")
    unknown = set(topo) - {"kind", "shape"}
    if unknown:
        raise w.error("topology", f"unknown key(s) {sorted(unknown)} (expected kind, shape)")
    kind = topo.get("kind", "linear")
    if not isinstance(kind, str) or kind not in TOPOLOGY_KINDS:
        raise w.error("topology.kind", f'must be "linear", "grid2d" or "torus2d", got {kind!r}')
    shape = topo.get("shape", [])
    if not isinstance(shape, list) or not all(
        isinstance(x, int) and not isinstance(x, bool) for x in shape
    ):
        raise w.error(
            "topology.shape",
            f"must be a list of integers [rows, cols], got {_type_name(shape)} {shape!r}",
        )
    try:
        return Topology(kind=kind, shape=tuple(shape))
    except ConfigError as exc:
        raise w.error("topology.shape", str(exc)) from None


def system_to_dict(system: System) -> dict[str, Any]:
    """``system`` as the TOML document :func:`parse_system` reads."""
    doc: dict[str, Any] = {"name": system.name}
    if system.description:
        doc["description"] = system.description
    doc["resources"] = list(system.resources)
    if system.topology.kind != "linear":
        doc["topology"] = {"kind": system.topology.kind, "shape": list(system.topology.shape)}
    doc["node_types"] = [
        {
            "name": nt.name,
            "count": nt.count,
            "capacity": {r: int(nt.capacity.get(r, 0)) for r in system.resources},
        }
        for nt in system.node_types
    ]
    return doc


def dump_system(system: System, path: str | Path) -> None:
    """Write ``system`` as TOML to ``path``."""
    Path(path).write_text(tomli_w.dumps(system_to_dict(system)))


def _preset_files() -> dict[str, Any]:
    folder = importlib_resources.files(_PRESET_PACKAGE) / "presets"
    return {p.name[: -len(".toml")]: p for p in folder.iterdir() if p.name.endswith(".toml")}


def preset_names() -> list[str]:
    """The names of the bundled preset systems, sorted."""
    return sorted(_preset_files())


def _preset_doc(name: str) -> dict[str, Any]:
    files = _preset_files()
    if name not in files:
        raise ConfigError(
            f"unknown system preset '{name}'; presets are: {', '.join(sorted(files))}"
        )
    return tomllib.loads(files[name].read_text())


def preset_trace_prefixes() -> dict[str, list[str]]:
    """Preset name -> SWF file-name prefixes it describes (from the presets' ``[trace]`` tables)."""
    out = {}
    for name in preset_names():
        prefixes = _preset_doc(name).get("trace", {}).get("file_prefixes", [])
        if prefixes:
            out[name] = list(prefixes)
    return out


def load_system(spec: str | Path) -> System:
    """Load a system from a preset name or a TOML file path."""
    path = Path(spec)
    if "\0" in str(spec):
        raise ConfigError(f"system {str(spec)!r}: a file name cannot hold a NUL byte")
    try:
        exists = path.exists()
    except OSError as exc:  # a name too long ...
        raise ConfigError(f"system '{spec}': {exc.strerror or exc}") from None
    if path.suffix == ".toml" or exists:
        text = read_utf8_file(path, "a system file")
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: not valid TOML: {exc}") from None
        return parse_system(doc, source=str(path), text=text)
    name = str(spec)
    return parse_system(_preset_doc(name), source=f"preset '{name}'")
