"""WorkloadSpec: a workload spec parsed once into typed values, written back as text."""

from __future__ import annotations

import pytest

from hpcdispatch.errors import ConfigError
from hpcdispatch.sweep import parse_sweep
from hpcdispatch.system import load_system
from hpcdispatch.workload import WorkloadSpec, load_workload, resolve_system


@pytest.mark.parametrize(
    ("text", "generator", "options"),
    [
        ("synthetic:lublin,jobs=5000,seed=3", "lublin", {"jobs": 5000, "seed": 3}),
        (
            "synthetic:lublin,jobs=50,seed=7,load=0.9,interactive=0",
            "lublin",
            {"jobs": 50, "seed": 7, "load": 0.9, "interactive": False},
        ),
        (
            "synthetic:kit,jobs=40,seed=2,gpu_share=0.1",
            "kit",
            {"jobs": 40, "seed": 2, "gpu_share": 0.1},
        ),
        ("synthetic:eurora,jobs=40,seed=2", "eurora", {"jobs": 40, "seed": 2}),
        (
            "synthetic:aucsched,workload=V,version=2,seed=4,runtime_h=0.5",
            "aucsched",
            {"workload": "V", "version": 2, "seed": 4, "runtime_h": 0.5},
        ),
        (
            "synthetic:deadline,jobs=30,load=heavy,types=2,seed=5,interactive=0",
            "deadline",
            {"jobs": 30, "load": "heavy", "types": "2", "seed": 5, "interactive": False},
        ),
    ],
)
def test_a_generator_spec_is_typed_and_written_back_as_given(
    text: str, generator: str, options: dict
) -> None:
    spec = WorkloadSpec.parse(text)
    assert (spec.kind, spec.generator, spec.path) == ("generator", generator, None)
    assert spec.options == options
    assert [type(v) for v in spec.options.values()] == [type(v) for v in options.values()]
    assert str(spec) == text
    assert WorkloadSpec.parse(str(spec)) == spec and hash(WorkloadSpec.parse(text)) == hash(spec)


def test_canonical_text_of_other_spellings() -> None:
    # booleans as 1/0, floats exactly, spaces gone; aucsched writes 2.0 as 2 (as spec_string)
    spec = WorkloadSpec.parse("synthetic:lublin, jobs=10 ,interactive=true,load=1")
    assert str(spec) == "synthetic:lublin,jobs=10,interactive=1,load=1.0"
    assert WorkloadSpec.parse(str(spec)) == spec
    auc = WorkloadSpec.parse("synthetic:aucsched,workload=i,runtime_h=2")
    assert auc.options == {"workload": "I", "runtime_h": 2.0}
    assert str(auc) == "synthetic:aucsched,workload=I,runtime_h=2"


def test_a_file_is_its_path() -> None:
    spec = WorkloadSpec.parse("traces/x.swf.gz")
    assert (spec.kind, spec.path, spec.generator, spec.options) == (
        "file",
        "traces/x.swf.gz",
        None,
        {},
    )
    assert str(spec) == "traces/x.swf.gz" and WorkloadSpec.parse(spec) is spec
    assert WorkloadSpec.parse("a.deadline.jsonl").is_deadline
    assert not spec.is_deadline and spec.default_system is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "synthetic:lublin,jobs=5,color=3",
            "workload 'synthetic:lublin,jobs=5,color=3': unknown key(s) ['color']; known: jobs, seed, load",
        ),
        (
            "synthetic:lublin,jobs=x",
            "workload 'synthetic:lublin,jobs=x': 'jobs' must be int, got 'x'",
        ),
        (
            "synthetic:lublin,jobs",
            "workload 'synthetic:lublin,jobs': expected key=value, got 'jobs'",
        ),
        ("synthetic:lublin,jobs=0", "synthetic workload: jobs must be positive, got 0"),
        (
            "synthetic:poisson,jobs=3",
            "unknown synthetic model 'poisson' (available: lublin, aucsched",
        ),
        ("synthetic:kit,gpus=3", "workload 'synthetic:kit,gpus=3': unknown key(s) ['gpus']"),
        (
            "synthetic:deadline,speed=3",
            "workload 'synthetic:deadline,speed=3': unknown key 'speed'",
        ),
        ("synthetic:aucsched,workload=VI", "aucsched workload must be one of"),
    ],
)
def test_bad_specs_are_one_line_errors(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        WorkloadSpec.parse(text)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_the_loader_takes_the_spec_or_its_text_and_records_the_canonical_text() -> None:
    spec = WorkloadSpec.parse("synthetic:lublin,jobs=30,seed=4,interactive=true")
    assert resolve_system("auto", spec).name == "machine-s"
    assert resolve_system("auto", WorkloadSpec.parse("synthetic:kit,jobs=5")).name == "kit-forhlr2"
    system = load_system("machine-s")
    a, b = load_workload(spec, system), load_workload(str(spec), system)
    assert a.jobs == b.jobs and len(a) == 30
    assert a.source.spec == "synthetic:lublin,jobs=30,seed=4,interactive=1"


def test_the_sweep_builds_specs_from_toml_with_the_old_text() -> None:
    text = (
        'dispatchers = ["fifo"]\nsystems = ["machine-s"]\n'
        '[[workloads]]\ngenerator = "lublin"\njobs = 20\nload = 0.8\nseeds = [3]\n'
        '[[workloads]]\ngenerator = "kit"\njobs = 20\nseeds = [1]\n'
    )
    lublin, kit = (c.workload for c in parse_sweep(text).cells)
    assert isinstance(lublin, WorkloadSpec) and lublin.options["load"] == 0.8
    # the text the sweep wrote before the spec was typed (every non-None value, then the seed)
    assert str(lublin) == (
        "synthetic:lublin,jobs=20,load=0.8,interactive=1,max_walltime=172800,"
        "p_max_walltime=0.15,overestimate_max=10.0,seed=3"
    )
    assert str(kit).startswith("synthetic:kit,jobs=20,") and str(kit).endswith(",seed=1")
    assert WorkloadSpec.parse(str(kit)) == kit
