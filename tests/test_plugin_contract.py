"""The plugin contract: parameters are stored as given, clone/set_params work, the template
from docs/ADD_A_DISPATCHER.md and the function decorator give working dispatchers."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import cores_system, job, simulate, starts

from hpcdispatch.dispatchers import (
    DISPATCHERS,
    DispatcherSpec,
    dispatcher_function,
    make_dispatcher,
    parse_dispatcher_list,
)
from hpcdispatch.errors import ConfigError, SimulationStalledError

DOC = Path(__file__).resolve().parents[1] / "docs" / "ADD_A_DISPATCHER.md"


@pytest.mark.parametrize("name", sorted(DISPATCHERS))
def test_init_only_stores_parameters(name):
    cls = DISPATCHERS[name]
    d = cls()
    params = d.get_params()
    assert set(params) == set(cls.param_names())
    clone = d.clone()
    assert clone is not d and clone.get_params() == params
    d.set_params(allocator="best-fit")
    assert d.allocator == "best-fit"
    with pytest.raises(ConfigError):
        d.set_params(no_such_parameter=1)


def test_specs_and_lists():
    d = make_dispatcher("sjf:allocator=best-fit,blocking=false")
    assert d.get_params() == {"allocator": "best-fit", "blocking": False}
    specs = parse_dispatcher_list("fifo,sjf:allocator=best-fit,blocking=false,easy-L2")
    assert [(s.name, s.params, s.predictor) for s in specs] == [
        ("fifo", {}, None),
        ("sjf", {"allocator": "best-fit", "blocking": False}, None),
        ("easy", {}, "last-two"),
    ]
    assert [s.run_label for s in specs] == [
        "fifo",
        "sjf-allocator_best-fit-blocking_false",
        "easy-L2",
    ]
    assert specs[2].dispatcher_label == "easy"
    with pytest.raises(ConfigError, match="must be bool"):
        make_dispatcher("fifo:blocking=perhaps")
    with pytest.raises(ConfigError, match="names a predictor"):
        make_dispatcher("easy-L2")


def test_a_spec_is_parsed_once_into_typed_values_and_identity_is_data():
    text = DispatcherSpec.parse("hcp-R:version=2,delta=2,deterministic=yes,dump_instances=none")
    table = DispatcherSpec.from_table(
        {
            "name": "hcp",
            "predictor": "R",
            "version": 2,
            "delta": 2,
            "deterministic": True,
            "dump_instances": None,
        }
    )
    assert (
        text.params
        == table.params
        == {"version": 2, "delta": 2.0, "deterministic": True, "dump_instances": None}
    )
    assert type(text.params["delta"]) is float and type(table.params["delta"]) is float
    assert text.predictor == table.predictor == "oracle"
    assert text.identity() == table.identity() == text.build().identity()
    identity = text.identity()
    assert (
        identity["name"] == "hcp"
        and identity["params"]["version"] == 2
        and identity["params"]["m"] == 100
    )
    # a parameter added later, absent from an older identity, matches only at the value it was added with
    default = make_dispatcher("hcp").identity()
    older = {
        "name": "hcp",
        "params": {k: v for k, v in default["params"].items() if k != "paper_v1"},
    }
    assert make_dispatcher("hcp").matches_identity(older)
    assert not make_dispatcher("hcp:paper_v1=true,version=1").matches_identity(
        {"name": "hcp", "params": {**older["params"], "version": 1}}
    )
    assert not make_dispatcher("hcp").matches_identity(
        {"name": "hcp", "params": {**default["params"], "m": 5}}
    )
    assert not text.build().matches_identity(default)
    with pytest.raises(ConfigError, match="must be bool"):
        DispatcherSpec.from_table({"name": "sjf", "blocking": "no"})
    with pytest.raises(ConfigError, match="has no parameter 'depth'"):
        DispatcherSpec.from_table({"name": "easy", "depth": 3})


def test_the_documented_template_works():
    code = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    template = code[0]
    imports = [line for line in template.splitlines() if line.startswith(("import ", "from "))]
    assert imports == [
        "from hpcdispatch.protocol import Decision, Dispatcher, DispatchView, Interval, Scratch, "
        "Tags, register"
    ]
    namespace: dict = {}
    exec(compile(template, "ADD_A_DISPATCHER.md", "exec"), namespace)
    try:
        jobs = [job(1, 0, 5, units=2), job(2, 0, 5)]
        r = simulate(cores_system(2, 1), jobs, make_dispatcher("my-policy:threshold=2"))
        assert starts(r) == {1: 0, 2: 5}
        assert r.decisions["info"][-1] == {"calls": 2}
        # threshold 1: the 2-unit job is never started, which the simulator reports
        with pytest.raises(SimulationStalledError, match="first waiting job: 1"):
            simulate(cores_system(2, 1), jobs, make_dispatcher("my-policy:threshold=1"))
        # the conformance suite, as the document shows it
        exec(compile(code[1], "ADD_A_DISPATCHER.md", "exec"), namespace)
    finally:
        DISPATCHERS.pop("my-policy", None)


@pytest.mark.slow
def test_plugin_option_loads_an_out_of_tree_dispatcher(tmp_path):
    template = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)[0]
    plugin = tmp_path / "my_policy.py"
    plugin.write_text(template)
    env = {"COLUMNS": "120", "PATH": "/usr/bin:/bin"}
    if "PYTHONPATH" in os.environ:  # the checkout under test, not the installed one
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    out = tmp_path / "run"
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "hpcdispatch",
            "simulate",
            "--plugin",
            str(plugin),
            "-d",
            "my-policy:threshold=1024",
            "-w",
            "synthetic:lublin,jobs=150,seed=1",
            "-o",
            str(out),
            "-q",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr
    run = json.loads((out / "run.json").read_text())
    assert run["dispatcher"] == {
        "name": "my-policy",
        "params": {"allocator": "first-fit", "threshold": 1024},
    }
    cmp_out = tmp_path / "cmp"
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "hpcdispatch",
            "compare",
            "--plugin",
            str(plugin),
            "-d",
            "easy,my-policy:threshold=1024",
            "-w",
            "synthetic:lublin,jobs=150,seed=1",
            "-o",
            str(cmp_out),
            "-q",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr
    assert (cmp_out / "my-policy-threshold_1024" / "summary.json").is_file()
    missing = subprocess.run(
        [
            sys.executable,
            "-m",
            "hpcdispatch",
            "simulate",
            "--plugin",
            str(tmp_path / "nope.py"),
            "-d",
            "easy",
            "-w",
            "synthetic:lublin,jobs=20",
            "-o",
            str(tmp_path / "x"),
            "-q",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert (
        missing.returncode == 2
        and "nope.py' does not exist" in missing.stderr
        and "Traceback" not in missing.stderr
    )


def test_function_dispatcher():
    @dispatcher_function("widest-first-test")
    def widest_first(view, scratch):
        for j in sorted(view.queue, key=lambda j: -j.units):
            scratch.try_start(j)

    try:
        r = simulate(
            cores_system(2, 1),
            [job(1, 0, 5), job(2, 0, 5, units=2)],
            make_dispatcher("widest-first-test"),
        )
        assert starts(r) == {2: 0, 1: 5}
    finally:
        DISPATCHERS.pop("widest-first-test", None)
