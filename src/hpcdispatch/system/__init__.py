"""System model, TOML loading, bundled presets and systems derived from SWF headers.

Also what every layer above shares: :class:`Allocation` and the unit-fit arithmetic
(allocation.py), the 2-D :class:`Grid` of a grid topology (grid.py) and the shape searches of
the deadline strategies (partition.py; ``MANHATTAN_STARTS`` are the Manhattan-median
partition's start-node choices).
"""

from hpcdispatch.system.allocation import (
    Allocation,
    contiguous_windows,
    held_amounts,
    job_fits,
    node_units,
    per_node_array,
    pooled_fits,
    request_fits,
    runs_of,
    units_fit_per_node,
)
from hpcdispatch.system.grid import Grid, grid_of
from hpcdispatch.system.io import (
    dump_system,
    load_system,
    parse_system,
    preset_names,
    preset_trace_prefixes,
    system_to_dict,
)
from hpcdispatch.system.model import NodeType, System, Topology
from hpcdispatch.system.partition import (
    MANHATTAN_STARTS,
    hilbert_best_fit,
    hilbert_first_fit,
    leak_grow,
    manhattan_grow,
    manhattan_partition,
)

__all__ = [
    "MANHATTAN_STARTS",
    "Allocation",
    "Grid",
    "NodeType",
    "System",
    "Topology",
    "contiguous_windows",
    "dump_system",
    "grid_of",
    "held_amounts",
    "hilbert_best_fit",
    "hilbert_first_fit",
    "job_fits",
    "leak_grow",
    "load_system",
    "manhattan_grow",
    "manhattan_partition",
    "node_units",
    "parse_system",
    "per_node_array",
    "pooled_fits",
    "preset_names",
    "preset_trace_prefixes",
    "request_fits",
    "runs_of",
    "system_to_dict",
    "units_fit_per_node",
]
