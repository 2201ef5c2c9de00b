"""Sweep files: expansion into cells, canonical configurations, stable ids, clear errors."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest
from sweeps import write_spec

from hpcdispatch.sweep import SweepSpecError, cell_id, load_sweep, parse_sweep

FULL = """
name = "full"
systems = ["machine-s", "eurora"]
dispatchers = ["fifo", "easy:allocator=best-fit", { name = "sjf", blocking = false, label = "sjf-nb" }, "easy-R"]
predictors = ["W", "L2"]
repetitions = 2

[simulation]
walltime_kill = false

[[workloads]]
trace = "traces/x.swf.gz"
max_jobs = 100

[[workloads]]
generator = "lublin"
jobs = 50
load = 0.8
seeds = { from = 5, count = 3 }
"""


def test_expansion_is_the_full_cross_product(tmp_path):
    spec = load_sweep(write_spec(tmp_path, FULL))
    # 2 systems x (1 trace + 3 seeds) x (3 dispatchers x 2 predictors + easy-R with its own) x 2 repetitions
    assert len(spec.cells) == 2 * 4 * (3 * 2 + 1) * 2
    assert len(set(spec.cell_ids())) == len(spec.cells)
    assert [c.index for c in spec.cells] == list(range(len(spec.cells)))
    labels = {c.label for c in spec.cells}
    assert "machine-s/lublin-50j-load0.8/seed7/sjf-nb-L2/r1" in labels
    assert (
        "eurora/x-first100/easy-R/r0" in labels and "eurora/x-first100/easy-R-L2/r0" not in labels
    )
    cell = next(
        c for c in spec.cells if c.label == "eurora/x-first100/easy-allocator_best-fit-L2/r1"
    )
    assert cell.config == {
        "schema": 1,
        "system": "eurora",
        "workload": {
            "trace": "traces/x.swf.gz",
            "processors": "requested",
            "units": "divisor",
            "cores_per_unit": None,
            "missing_walltime": "queue-max",
            "memory": "ignore",
            "max_jobs": 100,
        },
        "dispatcher": {"name": "easy", "params": {"allocator": "best-fit"}},
        "predictor": "last-two",
        "simulation": {
            "walltime_kill": False,
            "charge_dispatch_time": False,
            "dispatch_interval": None,
            "dispatch_on_events": True,
            "record_decisions": True,
        },
        "repetition": 1,
    }
    # paths are resolved against the spec file for running, but hashed as written
    assert cell.workload_spec == str(tmp_path / "traces" / "x.swf.gz")
    assert (cell.dispatcher.name, cell.dispatcher.params, cell.predictor) == (
        "easy",
        {"allocator": "best-fit"},
        "last-two",
    )
    gen = next(c for c in spec.cells if c.labels["seed"] == 6)
    assert gen.workload_spec.startswith(
        "synthetic:lublin,jobs=50,load=0.8,"
    ) and gen.workload_spec.endswith(",seed=6")
    assert gen.config["workload"]["seed"] == 6 and gen.config["workload"]["interactive"] is True


def test_a_prediction_correction_is_part_of_the_cell_config_only_when_set(tmp_path):
    base = 'dispatchers = ["easy"]\npredictors = ["L2"]\n[[workloads]]\ngenerator = "lublin"\njobs = 50\n[simulation]\n'
    plain = load_sweep(write_spec(tmp_path, base)).cells[0]
    corrected = load_sweep(
        write_spec(tmp_path, base + 'prediction_correction = "walltime"\n')
    ).cells[0]
    assert (
        "prediction_correction" not in plain.config["simulation"]
    )  # older sweeps keep their cell ids
    assert corrected.config["simulation"]["prediction_correction"] == "walltime"
    assert corrected.id != plain.id
    assert corrected.simulation_options().prediction_correction == "walltime"


def test_an_app_model_is_part_of_the_cell_config_only_when_set(tmp_path):
    """``[simulation] app_model``: the deadline jobs' execution model per sweep (the ablations
    of docs/RESULTS-DEADLINE.md), canonical in the cell config; a wrong one names the field."""
    base = (
        'dispatchers = ["leak-nc"]\nsystems = ["hlrn2-grid"]\n[[workloads]]\ngenerator = "deadline"\n'
        "jobs = 20\n[simulation]\n"
    )
    plain = load_sweep(write_spec(tmp_path, base)).cells[0]
    ablated = load_sweep(
        write_spec(tmp_path, base + 'app_model = { network = "none", phases = 5 }\n')
    ).cells[0]
    assert "app_model" not in plain.config["simulation"]
    assert ablated.config["simulation"]["app_model"] == {"network": "none", "phases": 5}
    assert ablated.id != plain.id
    assert ablated.simulation_options().app_model == {"network": "none", "phases": 5}
    for bad, said in (
        ('app_model = "none"', "simulation.app_model"),
        ("app_model = { nope = 1 }", "unknown parameter 'nope'"),
    ):
        with pytest.raises(SweepSpecError, match=said):
            load_sweep(write_spec(tmp_path, base + bad + "\n"))


def test_ids_are_canonical():
    base = 'dispatchers = [{d}]\n[[workloads]]\ngenerator = "lublin"\njobs = 20\nseed = 1\n{extra}'
    ids = lambda d, extra="": parse_sweep(base.format(d=d, extra=extra)).cell_ids()  # noqa: E731
    # defaults filled in: the same configuration written three ways is one cell
    assert (
        ids('"easy"')
        == ids('"easy:allocator=first-fit"')
        == ids('{ name = "easy", allocator = "first-fit" }')
    )
    assert ids('"sjf:blocking=false"') == ids('{ name = "sjf", blocking = false }')
    # any change of the configuration changes the id
    assert ids('"easy"') != ids('"easy:allocator=best-fit"')
    assert ids('"easy"') != ids('"easy"', "load = 0.5\n")
    assert ids('"easy"') != ids('"easy-R"')
    assert ids('"easy-L2"') == ids('{ name = "easy", predictor = "L2" }') != ids('"easy"')
    # key order inside the file does not matter
    a = parse_sweep(
        'dispatchers = ["fifo"]\n[[workloads]]\ngenerator = "lublin"\njobs = 20\nload = 0.7\nseed = 3\n'
    )
    b = parse_sweep(
        'dispatchers = ["fifo"]\n[[workloads]]\nseed = 3\nload = 0.7\ngenerator = "lublin"\njobs = 20\n'
    )
    assert a.cell_ids() == b.cell_ids()
    # the id is the hash of the configuration: recomputable from it
    assert a.cells[0].id == cell_id(json.loads(json.dumps(a.cells[0].config)))


@pytest.mark.slow
def test_ids_are_stable_across_processes(tmp_path):
    path = write_spec(tmp_path, FULL)
    here = load_sweep(path).cell_ids()
    code = (
        "import json; from hpcdispatch.sweep import load_sweep; "
        f"print(json.dumps(load_sweep({str(path)!r}).cell_ids()))"
    )
    for seed in ("1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
        )
        assert json.loads(out.stdout) == here
    # and it is a fixed function of the configuration (a regression here would orphan every stored cell)
    one = parse_sweep(
        'dispatchers = ["fifo"]\n[[workloads]]\ngenerator = "lublin"\njobs = 20\nseed = 1\n'
    )
    assert one.cells[0].id == cell_id(one.cells[0].config) == "98fad8b38d40a1f5"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('dispatchers = ["fifo", ]]\n', r"not valid TOML: .*line 1"),
        ('dispatchers = ["fifo"]\n', r"missing required \[\[workloads\]\]"),
        (
            'dispatchers = ["fifo"]\ncolour = 1\n[[workloads]]\ngenerator = "lublin"\n',
            r"unknown top-level key\(s\) \['colour'\]",
        ),
        (
            'dispatchers = ["magic"]\n[[workloads]]\ngenerator = "lublin"\n',
            r"sweep.toml, line 1, dispatchers\[0\]: unknown dispatcher 'magic'",
        ),
        (
            'dispatchers = ["fifo", "easy:depth=3"]\n[[workloads]]\ngenerator = "lublin"\n',
            r"line 1, dispatchers\[1\]: dispatcher 'easy' has no parameter 'depth'",
        ),
        (
            'dispatchers = [{ name = "sjf", blocking = "no" }]\n[[workloads]]\ngenerator = "lublin"\n',
            r"dispatchers\[0\]: parameter 'blocking' = 'no' must be bool",
        ),
        (
            'dispatchers = ["fifo"]\npredictors = ["W", "X"]\n[[workloads]]\ngenerator = "lublin"\n',
            r"line 2, predictors\[1\]: unknown predictor 'X'",
        ),
        (
            'dispatchers = ["fifo"]\n\n[[workloads]]\ngenerator = "lublin"\nseed = '
            '1\n\n[[workloads]]\ngenerator = "lublin"\n'
            'jobs = "many"\n',
            r"line 9, workloads\[1\].jobs: must be an integer, got a string 'many'",
        ),
        (
            'dispatchers = ["fifo"]\n[[workloads]]\ngenerator = "lublin"\nload = 300.0\n',
            r"line 2, workloads\[0\]: synthetic workload: load must be in \(0, 100\)",
        ),
        (
            'dispatchers = ["fifo"]\n[[workloads]]\ntrace = "a.swf"\nunits = "cores"\n',
            r"workloads\[0\]: unknown unit mapping 'cores'",
        ),
        (
            'dispatchers = ["fifo"]\n[[workloads]]\ntrace = "a.swf"\ngenerator = "lublin"\n',
            r"exactly one of 'trace'",
        ),
        (
            '[[workloads]]\ngenerator = "lublin"\ndispatchers = ["fifo"]\n',
            r"unknown key\(s\) \['dispatchers'\].*top-level keys must come before",
        ),
        (
            'dispatchers = ["fifo"]\n[[workloads]]\ngenerator = "lublin"\nseeds = [1, 1]\n',
            r"lists a seed twice",
        ),
        (
            'dispatchers = ["fifo"]\nsystems = ["nosuch"]\n[[workloads]]\ngenerator = "lublin"\n',
            r"line 2, systems\[0\]: unknown system preset 'nosuch'",
        ),
        (
            'dispatchers = ["fifo"]\nrepetitions = 0\n[[workloads]]\ngenerator = "lublin"\n',
            r"repetitions: must be at least 1",
        ),
        (
            'dispatchers = ["fifo"]\n[[workloads]]\ngenerator = "lublin"\n[simulation]\ndispatch_interval = -5\n',
            r"line 4, simulation: dispatch_interval must be positive",
        ),
        (
            'dispatchers = ["fifo"]\n[[workloads]]\ngenerator = '
            '"lublin"\n[simulation]\nprediction_correction = "double"\n',
            r"line 4, simulation: prediction_correction must be one of walltime, ladder",
        ),
        (
            'dispatchers = ["fifo"]\n[[workloads]]\ngenerator = "lublin"\n[simulation]\nprediction_correction = 1\n',
            r"simulation.prediction_correction",
        ),
        (
            'dispatchers = ["fifo", "fifo:allocator=first-fit"]\n[[workloads]]\ngenerator = "lublin"\n',
            r"have the same configuration",
        ),
        (
            'dispatchers = ["easy", { name = "easy", allocator = "best-fit", label = "easy" }]\n[[workloads]]\n'
            'generator = "lublin"\n',
            r"label 'easy' names two different dispatchers",
        ),
        (
            'dispatchers = ["fifo"]\nplugins = ["nope.py"]\n[[workloads]]\ngenerator = "lublin"\n',
            r"plugins: plugin file '.*nope.py' does not exist",
        ),
        (
            'dispatchers = ["fifo"]\nsystems = ["from-trace"]\n[[workloads]]\ngenerator = "lublin"\n',
            r"line 2, systems: 'from-trace' reads the system from an SWF header",
        ),
        # values of the wrong kind that used to end in a traceback
        (
            'dispatchers = ["fifo"]\n[[workloads]]\ngenerator = "aucsched"\nruntime_h = nan\n',
            r"line 4, workloads\[0\].runtime_h: must be a number \(a finite number\), got nan",
        ),
        (
            'dispatchers = ["fifo"]\n[[workloads]]\ngenerator = "lublin"\noverestimate_max = inf\n',
            r"line 4, workloads\[0\].overestimate_max: must be a number \(a finite number\), got inf",
        ),
        (
            'dispatchers = ["fifo"]\n[[workloads]]\ngenerator = "lublin"\n[simulation]\ndispatch_interval = inf\n',
            r"line 5, simulation.dispatch_interval: must be a number of seconds \(a finite number\)",
        ),
        (
            'dispatchers = ["fifo"]\nsystems = ["a\\u0000.toml"]\n[[workloads]]\ngenerator = "lublin"\n',
            r"line 2, systems\[0\]: a file name cannot hold a NUL byte",
        ),
        (
            'dispatchers = ["fifo"]\nsystems = ["'
            + "a" * 300
            + '.toml"]\n[[workloads]]\ngenerator = "lublin"\n',
            r"line 2, systems\[0\]: .*File name too long",
        ),
        (
            'dispatchers = ["fifo"]\n[[workloads]]\ntrace = "a\\u0000.swf"\n',
            r"line 3, workloads\[0\].trace: a file name cannot hold a NUL byte",
        ),
        (
            'dispatchers = ["fifo"]\n[[workloads]]\ntrace = "a.swf"\nsubmit_jitter = 9223372036854775807\nseed = 1\n',
            r"line 4, workloads\[0\].submit_jitter: must be >= 0 seconds \(at most 2\^50\)",
        ),
        (
            'dispatchers = ["fifo"]\n[[workloads]]\ngenerator = "aucsched"\nworkload = []\n',
            r"line 4, workloads\[0\].workload: is empty",
        ),
        (
            'dispatchers = ["fifo"]\n[[workloads]]\ngenerator = "aucsched"\nversion = []\n',
            r"line 4, workloads\[0\].version: is empty",
        ),
        (
            'dispatchers = [{ name = "cp-rule", delta = nan }]\n[[workloads]]\ngenerator = "lublin"\n',
            r"line 1, dispatchers\[0\]: ",
        ),
    ],
)
def test_errors_name_file_line_and_field(tmp_path, text, expected):
    path = write_spec(tmp_path, text)
    with pytest.raises(SweepSpecError, match=expected) as info:
        load_sweep(path)
    assert str(path) in str(info.value)


def test_a_sweep_file_that_is_no_text_or_no_file_is_named(tmp_path):
    path = write_spec(tmp_path, "")
    path.write_bytes(b'dispatchers = ["fifo"]\n# caf\xe9\n[[workloads]]\ngenerator = "lublin"\n')
    with pytest.raises(
        SweepSpecError, match=re.escape(str(path)) + r", line 2: byte 0xe9 is not UTF-8 text"
    ):
        load_sweep(path)
    with pytest.raises(SweepSpecError, match=re.escape(str(tmp_path)) + ": is a directory"):
        load_sweep(tmp_path)


def test_plugins_register_dispatchers(tmp_path):
    plugin = tmp_path / "mine.py"
    plugin.write_text(
        textwrap.dedent("""
        from hpcdispatch.dispatchers import dispatcher_function

        @dispatcher_function("widest-first-plugin")
        def widest_first(view, scratch):
            for job in sorted(view.queue, key=lambda j: -j.units):
                scratch.try_start(job)
    """)
    )
    text = (
        'plugins = ["mine.py"]\ndispatchers = ["widest-first-plugin"]\n'
        '[[workloads]]\ngenerator = "lublin"\njobs = 10\n'
    )
    try:
        spec = load_sweep(write_spec(tmp_path, text))
        assert spec.cells[0].plugins == (str(plugin),)
        assert spec.cells[0].config["dispatcher"] == {
            "name": "widest-first-plugin",
            "params": {"allocator": "first-fit"},
        }
    finally:
        from hpcdispatch.dispatchers import DISPATCHERS

        DISPATCHERS.pop("widest-first-plugin", None)


def test_the_documented_example_is_valid():
    import re
    from pathlib import Path

    doc = Path(__file__).resolve().parents[1] / "docs" / "SWEEPS.md"
    text = doc.read_text()
    example = re.search(r"```toml\n(.*?)```", text, re.S).group(1)
    spec = parse_sweep(example, source="SWEEPS.md", base=doc.parent)
    stated = int(re.search(r"\*\*(\d+) cells\*\*", text).group(1))
    assert len(spec.cells) == stated == 42
    assert {c.labels["run"] for c in spec.cells} == {
        "fifo",
        "fifo-L2",
        "easy-allocator_best-fit",
        "easy-allocator_best-fit-L2",
        "sjf-nb",
        "sjf-nb-L2",
        "easy-R",
    }


def test_the_user_guide_example_is_valid():
    """The sweep file of docs/guide/sweeps.md (the README's until issue 53) parses."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    page = root / "docs" / "guide" / "sweeps.md"
    example = re.search(r"```toml\n(.*?)```", page.read_text(), re.S).group(1)
    spec = parse_sweep(example, source=str(page), base=root)
    assert len(spec.cells) == (1 + 10) * 4 * 2


def test_every_benchmark_sweep_file_is_valid():
    """The sweep files shipped in benchmarks/ parse (their traces are not read); the CP
    matrix of issue 36 has the cells its header states: every paper dispatcher with L2, D and R
    at the papers' settings and with the stall budget, on the three workloads."""
    import re
    from pathlib import Path

    from hpcdispatch.sweep.spec import load_sweep

    bench = Path(__file__).resolve().parents[1] / "benchmarks"
    files = sorted(bench.glob("*.toml"))
    assert bench / "cp_matrix.toml" in files
    for path in files:
        assert load_sweep(path).cells, path
    matrix = load_sweep(bench / "cp_matrix.toml")
    stated = int(re.search(r"= (\d+) cells", (bench / "cp_matrix.toml").read_text()).group(1))
    assert len(matrix.cells) == stated == 102
    runs = {(c.labels["workload"], c.labels["run"]) for c in matrix.cells}
    for workload in ("SDSC-SP2", "KIT-like", "Eurora-like"):
        for name in (
            "easy",
            "cp-rule",
            "hcp",
            "pcp19",
            "pcp20",
            "cp-hybrid",
            "hcp-stall",
            "pcp19-stall",
            "pcp20-stall",
            "cp-hybrid-stall",
        ):
            for pred in ("L2", "D", "R"):
                assert (workload, f"{name}-{pred}") in runs
    stall = [c for c in matrix.cells if c.labels["run"].startswith("pcp20-stall")]
    assert all(c.config["dispatcher"]["params"]["budget"] == "stall" for c in stall)


def test_sweep_plan_runs_no_plugin_code(tmp_path):
    """`sweep plan` lists the cells without importing the sweep's plugins (a plugin file that
    touches a marker when imported leaves none); their dispatchers are listed unverified."""
    marker = tmp_path / "imported"
    (tmp_path / "marking.py").write_text(
        textwrap.dedent(f"""
        import pathlib
        pathlib.Path({str(marker)!r}).touch()
        from hpcdispatch.dispatchers import dispatcher_function

        @dispatcher_function("marking-plugin")
        def marking(view, scratch):
            for job in view.queue:
                scratch.try_start(job)
        """)
    )
    text = textwrap.dedent("""
        name = "plan"
        plugins = ["marking.py"]
        systems = ["machine-s"]
        dispatchers = ["easy", "marking-plugin-L2", { name = "marking-plugin", label = "mk" }]
        predictors = ["walltime", "oracle"]
        [[workloads]]
        generator = "lublin"
        jobs = 10
        """)
    path = write_spec(tmp_path, text)
    env = os.environ | {"COLUMNS": "250"}
    plan = subprocess.run(
        [sys.executable, "-m", "hpcdispatch", "sweep", "plan", str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert plan.returncode == 0, plan.stderr
    assert not marker.exists(), "sweep plan imported the plugin"
    out = plan.stdout
    assert "sweep plan: 5 cells" in out
    for label in ("easy", "easy-R", "marking-plugin-L2", "mk", "mk-R"):
        assert f"machine-s/lublin/{label}" in out or f"/{label} " in out, (label, out)
    assert out.count("(unverified)") == 3
    assert "unverified: marking-plugin -- not built-in dispatchers; plan does not run" in out
    # the ids of the built-in cells are those `sweep run` uses (which runs the plugin)
    planned = load_sweep(path, run_plugins=False)
    assert not marker.exists() and planned.unverified == ("marking-plugin",)
    missing = write_spec(tmp_path, text.replace("marking.py", "nope.py"), name="missing.toml")
    with pytest.raises(
        SweepSpecError, match=r"plugins\[0\]: plugin file '.*nope.py' does not exist"
    ):
        load_sweep(missing, run_plugins=False)
    ran_spec = load_sweep(path)
    try:
        assert marker.exists() and ran_spec.unverified == ()
        assert [c.id for c in planned.cells if c.id] == [
            c.id for c in ran_spec.cells if c.dispatcher.name == "easy"
        ]
        assert [c.label for c in planned.cells] == [c.label for c in ran_spec.cells]
    finally:
        from hpcdispatch.dispatchers import DISPATCHERS

        DISPATCHERS.pop("marking-plugin", None)
    help_text = subprocess.run(
        [sys.executable, "-m", "hpcdispatch", "sweep", "plan", "--help"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    ).stdout
    assert "plugins SPEC names are not imported" in " ".join(help_text.split())
