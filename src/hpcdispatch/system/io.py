"""Reading and writing systems as TOML, and the bundled presets.

Schema (all keys except ``description``, ``topology`` and ``trace`` are required)::

    name = "eurora"
    description = "free text"
    resources = ["core", "mem", "gpu", "mic"]        # column order of every capacity array

    [topology]                                        # optional, default kind = "linear"
    kind = "linear"                                   # or "grid2d" with shape = [rows, cols]

    [trace]                                           # optional: SWF files this preset describes
    file_prefixes = ["HPC2N-2002"]

    [[node_types]]                                    # in node order
    name = "gpu"
    count = 32
    capacity = { core = 16, mem = 16384, gpu = 2 }   # missing resources are 0
"""

from __future__ import annotations

import tomllib
from importlib import resources as importlib_resources
from pathlib import Path
from typing import Any

import tomli_w

from hpcdispatch.errors import ConfigError
from hpcdispatch.system.model import NodeType, System, Topology

_PRESET_PACKAGE = "hpcdispatch.system"


def _require(doc: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in doc:
        raise ConfigError(f"{where}: missing required key '{key}'")
    value = doc[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        kinds = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise ConfigError(f"{where}: key '{key}' must be {kinds}, got {type(value).__name__} {value!r}")
    return value


def parse_system(doc: dict[str, Any], source: str = "<system>") -> System:
    """Build a :class:`System` from a parsed TOML document, with errors naming ``source``."""
    name = _require(doc, "name", str, source)
    where = f"{source} (system '{name}')"
    resources = _require(doc, "resources", list, where)
    if not all(isinstance(r, str) and r for r in resources):
        raise ConfigError(f"{where}: 'resources' must be a list of non-empty strings, got {resources!r}")
    raw_types = _require(doc, "node_types", list, where)
    node_types = []
    for i, nt in enumerate(raw_types):
        nt_where = f"{where}, node_types[{i}]"
        if not isinstance(nt, dict):
            raise ConfigError(f"{nt_where}: must be a table")
        unknown = set(nt) - {"name", "count", "capacity"}
        if unknown:
            raise ConfigError(f"{nt_where}: unknown key(s) {sorted(unknown)} (expected name, count, capacity)")
        cap = _require(nt, "capacity", dict, nt_where)
        node_types.append(
            NodeType(
                name=_require(nt, "name", str, nt_where),
                count=_require(nt, "count", int, nt_where),
                capacity=dict(cap),
            )
        )
    topo_doc = doc.get("topology", {})
    if not isinstance(topo_doc, dict):
        raise ConfigError(f"{where}: 'topology' must be a table")
    topology = Topology(kind=topo_doc.get("kind", "linear"), shape=tuple(topo_doc.get("shape", ())))
    unknown = set(doc) - {"name", "description", "resources", "node_types", "topology", "trace"}
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {sorted(unknown)}")
    return System(
        name=name,
        resources=tuple(resources),
        node_types=tuple(node_types),
        topology=topology,
        description=str(doc.get("description", "")),
    )


def system_to_dict(system: System) -> dict[str, Any]:
    doc: dict[str, Any] = {"name": system.name}
    if system.description:
        doc["description"] = system.description
    doc["resources"] = list(system.resources)
    if system.topology.kind != "linear":
        doc["topology"] = {"kind": system.topology.kind, "shape": list(system.topology.shape)}
    doc["node_types"] = [
        {"name": nt.name, "count": nt.count, "capacity": {r: int(nt.capacity.get(r, 0)) for r in system.resources}}
        for nt in system.node_types
    ]
    return doc


def dump_system(system: System, path: str | Path) -> None:
    Path(path).write_text(tomli_w.dumps(system_to_dict(system)))


def _preset_files() -> dict[str, Any]:
    folder = importlib_resources.files(_PRESET_PACKAGE) / "presets"
    return {p.name[: -len(".toml")]: p for p in folder.iterdir() if p.name.endswith(".toml")}


def preset_names() -> list[str]:
    return sorted(_preset_files())


def _preset_doc(name: str) -> dict[str, Any]:
    files = _preset_files()
    if name not in files:
        raise ConfigError(f"unknown system preset '{name}'; presets are: {', '.join(sorted(files))}")
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
    if path.suffix == ".toml" or path.exists():
        if not path.is_file():
            raise ConfigError(f"system file '{path}' does not exist")
        try:
            doc = tomllib.loads(path.read_text())
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: not valid TOML: {exc}") from None
        return parse_system(doc, source=str(path))
    name = str(spec)
    return parse_system(_preset_doc(name), source=f"preset '{name}'")
