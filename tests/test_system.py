"""System model, TOML loading and the bundled presets."""

from __future__ import annotations

import re

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
    assert list(kit.total_capacity) == [
        1152 * 20 + 21 * 48,
        1152 * 64 * 1024 + 21 * 1024 * 1024,
        21 * 4,
    ]
    for name, n in (("machine-s", 128), ("machine-m", 256), ("machine-l", 1024)):
        s = load_system(name)
        assert s.n_nodes == n and (s.capacity == [8, 2]).all()


@pytest.mark.parametrize(
    "name, nodes, cores",
    [
        ("hpc2n", 120, 2),
        ("ricc", 1024, 8),
        ("llnl-atlas", 1152, 8),
        ("sdsc-blue", 144, 8),
        ("kth-sp2", 100, 1),
        ("ctc-sp2", 338, 1),
        ("sdsc-sp2", 128, 1),
        ("llnl-thunder", 1002, 4),
        ("lpc-egee", 70, 2),
    ],
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

    if not TRACES.is_dir():
        pytest.skip(f"the real traces are not here ({TRACES})")
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
    bad.write_text(
        'name = "x"\nresources = ["core"]\n[[node_types]]\nname = "a"\ncount = 0\ncapacity = { core = 4 }\n'
    )
    with pytest.raises(ConfigError, match="count must be a positive integer"):
        load_system(bad)
    bad.write_text(
        'name = "x"\nresources = ["core"]\n[[node_types]]\nname = "a"\ncount = 2\ncapacity = { gpu = 4 }\n'
    )
    with pytest.raises(ConfigError, match="unknown resource"):
        load_system(bad)
    bad.write_text('name = "x"\nresources = ["core"\n')
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_system(bad)
    with pytest.raises(ConfigError, match="unknown system preset 'nope'"):
        load_system("nope")


GOOD = (
    'name = "x"\nresources = ["core"]\n\n[topology]\nkind = "grid2d"\nshape = [2, 3]\n\n'
    '[[node_types]]\nname = "a"\ncount = 2\ncapacity = { core = 4 }\n\n'
    '[[node_types]]\nname = "b"\ncount = 4\ncapacity = { core = 8 }\n'
)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            ("shape = [2, 3]", 'shape = ["2", "3"]'),
            r"line 6, topology.shape: must be a list of integers",
        ),
        (
            ("shape = [2, 3]", 'shape = "23"'),
            r"line 6, topology.shape: must be a list of integers \[rows, cols\], got a string",
        ),
        (
            ("shape = [2, 3]", "shape = [2, 4]"),
            r"line 6, topology.shape: topology grid2d 2x4 does not hold 6 nodes",
        ),
        (
            ("shape = [2, 3]", "shape = [true, 6]"),
            r"line 6, topology.shape: must be a list of integers",
        ),
        (
            ('kind = "grid2d"', "kind = 2"),
            r"line 5, topology.kind: must be \"linear\", \"grid2d\" or \"torus2d\", got 2",
        ),
        (
            ('kind = "grid2d"', 'kind = "torus3d"'),
            r"line 5, topology.kind: must be .* or \"torus2d\", got 'torus3d'",
        ),
        (
            ('kind = "grid2d"\nshape = [2, 3]', 'kind = "torus2d"\nshape = [3, 3]'),
            r"line 6, topology.shape: topology torus2d 3x3 does not hold 6 nodes",
        ),
        (
            ("count = 4", "count = 0"),
            r"line 15, node_types\[1\].count: node type 'b': count must be a positive integer",
        ),
        (
            ("count = 4", "count = 99999999999999999999"),
            r"line 15, node_types\[1\].count: .*at most 10,000,000",
        ),
        (
            ("count = 4", 'count = "4"'),
            r"line 15, node_types\[1\].count: must be int, got a string '4'",
        ),
        (
            ("core = 8", "core = 8.5"),
            r"line 16, node_types\[1\].capacity: .*capacity of 'core' must be a non-negative",
        ),
        (
            ("core = 8", "gpu = 8"),
            r"line 16, node_types\[1\].capacity: unknown resource\(s\) \['gpu'\]",
        ),
        (
            ('name = "b"', 'name = "a"'),
            r"line 14, node_types\[1\].name: a second node type named 'a'",
        ),
        (
            ('resources = ["core"]', 'resources = "core"'),
            r"line 2, resources: must be list, got a string",
        ),
        (('name = "x"', 'name = "x"\ncolour = 1'), r"unknown key\(s\) \['colour'\]"),
    ],
)
def test_system_file_errors_name_file_line_and_field(tmp_path, change, expected):
    path = tmp_path / "s.toml"
    assert change[0] in GOOD
    path.write_text(GOOD.replace(change[0], change[1], 1))
    with pytest.raises(ConfigError, match=expected) as info:
        load_system(path)
    assert str(info.value).startswith(str(path))
    assert load_system(GOOD_path(tmp_path)).n_nodes == 6


def GOOD_path(tmp_path):
    path = tmp_path / "good.toml"
    path.write_text(GOOD)
    return path


def test_a_system_file_that_is_no_text_or_no_file_is_named(tmp_path):
    path = tmp_path / "bin.toml"
    path.write_bytes(GOOD.encode() + b"\n# caf\xe9\n")
    with pytest.raises(
        ConfigError, match=re.escape(str(path)) + r", line 18: byte 0xe9 is not UTF-8 text"
    ):
        load_system(path)
    with pytest.raises(
        ConfigError, match=re.escape(str(tmp_path)) + ": is a directory, not a system file"
    ):
        load_system(tmp_path)
    with pytest.raises(ConfigError, match="NUL"):
        load_system("a\0.toml")


def test_grid_topology_leaves_node_order_alone():
    s = System(
        "g", ("core",), (NodeType("n", 6, {"core": 1}),), topology=Topology("grid2d", (2, 3))
    )
    assert s.topology.coordinates(s.n_nodes).tolist() == [
        [0, 0],
        [0, 1],
        [0, 2],
        [1, 0],
        [1, 1],
        [1, 2],
    ]
    with pytest.raises(ConfigError, match="does not hold"):
        System(
            "g", ("core",), (NodeType("n", 5, {"core": 1}),), topology=Topology("grid2d", (2, 3))
        )


def test_preset_list_is_complete():
    names = set(preset_names())
    assert {
        "eurora",
        "kit-forhlr2",
        "machine-s",
        "machine-m",
        "machine-l",
        "hpc2n",
        "ricc",
    } <= names
