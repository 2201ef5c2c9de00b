"""System model, TOML loading, bundled presets and systems derived from SWF headers."""

from hpcdispatch.system.model import NodeType, System, Topology
from hpcdispatch.system.io import dump_system, load_system, parse_system, preset_names, system_to_dict

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
