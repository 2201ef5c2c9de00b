"""System model, TOML loading, bundled presets and systems derived from SWF headers."""

from hpcdispatch.system.io import (
    dump_system,
    load_system,
    parse_system,
    preset_names,
    system_to_dict,
)
from hpcdispatch.system.model import NodeType, System, Topology

__all__ = [
    "NodeType",
    "System",
    "Topology",
    "dump_system",
    "load_system",
    "parse_system",
    "preset_names",
    "system_to_dict",
]
