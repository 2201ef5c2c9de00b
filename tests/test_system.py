"""System model, TOML loading and the bundled presets."""

from __future__ import annotations

import pytest

from hpcdispatch.errors import ConfigError
from hpcdispatch.system import dump_system, load_system, preset_names
from hpcdispatch.system.model import NodeType, System, Topology
from hpcdispatch.workload.loader import resolve_system


def test_eurora_preset():
    s = load_system("eurora")
    assert s.n_nodes == 64 and s.resources == ("core", "mem", "gpu", "mic")
    cap = s.capacity
    assert (cap[:, 0] == 16).all() and (cap[:, 1] == 16 * 1024).all()
    assert (cap[:32, 2] == 2).all() and (cap[:32, 3] == 0).all()  # nodes 1-32: 2 GPUs
    assert (cap[32:, 2] == 0).all() and (cap[32:, 3] == 2).all()  # nodes 33-64: 2 MICs


def test_kit_and_auction_machines():
    kit = load_system("kit-forhlr2")
    assert kit.n_nodes == 1173
    assert list(kit.total_capacity) == [1152 * 20 + 21 * 48, 1152 * 64 * 1024 + 21 * 1024 * 1024, 21 * 4]
    for name, n in (("machine-s", 128), ("machine-m", 256), ("machine-l", 1024)):
        s = load_system(name)
        assert s.n_nodes == n and (s.capacity == [8, 2]).all()


@pytest.mark.parametrize(
    "name, nodes, cores",
    [("hpc2n", 120, 2), ("ricc", 1024, 8), ("llnl-atlas", 1152, 8), ("sdsc-blue", 144, 8), ("kth-sp2", 100, 1),
     ("ctc-sp2", 338, 1), ("sdsc-sp2", 128, 1), ("llnl-thunder", 1002, 4), ("lpc-egee", 70, 2)],
)
def test_trace_presets(name, nodes, cores):
    s = load_system(name)
    assert s.n_nodes == nodes and int(s.total_capacity[0]) == nodes * cores


def test_heterogeneous_trace_presets_match_their_headers():
    assert int(load_system("cea-curie").total_capacity[0]) == 93312
    assert load_system("cea-curie").n_nodes == 5544
    assert int(load_system("sdsc-ds").total_capacity[0]) == 1664
    assert int(load_system("metacentrum-2009").total_capacity[0]) == 806


def test_every_trace_has_a_preset(tmp_path):
    from helpers import TRACES

    for path in sorted(TRACES.glob("*.swf*")):
        system = resolve_system("auto", str(path))
        assert not system.name.startswith("from-trace"), path.name


def test_toml_round_trip(tmp_path):
    s = load_system("eurora")
    path = tmp_path / "e.toml"
    dump_system(s, path)
    t = load_system(path)
    assert t.resources == s.resources and (t.capacity == s.capacity).all()


def test_broken_system_files_name_the_problem(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\nresources = ["core"]\n[[node_types]]\nname = "a"\ncount = 0\ncapacity = { core = 4 }\n')
    with pytest.raises(ConfigError, match="count must be a positive integer"):
        load_system(bad)
    bad.write_text('name = "x"\nresources = ["core"]\n[[node_types]]\nname = "a"\ncount = 2\ncapacity = { gpu = 4 }\n')
    with pytest.raises(ConfigError, match="unknown resource"):
        load_system(bad)
    bad.write_text('name = "x"\nresources = ["core"\n')
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_system(bad)
    with pytest.raises(ConfigError, match="unknown system preset 'nope'"):
        load_system("nope")


def test_grid_topology_leaves_node_order_alone():
    s = System("g", ("core",), (NodeType("n", 6, {"core": 1}),), topology=Topology("grid2d", (2, 3)))
    assert s.topology.coordinates(s.n_nodes).tolist() == [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]]
    with pytest.raises(ConfigError, match="does not hold"):
        System("g", ("core",), (NodeType("n", 5, {"core": 1}),), topology=Topology("grid2d", (2, 3)))


def test_preset_list_is_complete():
    names = set(preset_names())
    assert {"eurora", "kit-forhlr2", "machine-s", "machine-m", "machine-l", "hpc2n", "ricc"} <= names
