"""synthetic:kit and synthetic:eurora (issue 36): documented statistics on seeded samples,
determinism, every job fits the empty system, the load knob, one-line errors, replay."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpcdispatch.errors import ConfigError
from hpcdispatch.runner import run_simulation
from hpcdispatch.sweep import SweepSpecError, parse_sweep
from hpcdispatch.system.io import load_system
from hpcdispatch.validation.validator import validate_run_dir
from hpcdispatch.workload._synthetic_parts import apply_load, draw_log2_sizes
from hpcdispatch.workload.eurora import _QUEUE_EWT
from hpcdispatch.workload.loader import load_workload, resolve_system
from hpcdispatch.workload.swf import fits_empty_system

KIT = load_system("kit-forhlr2")
EURORA = load_system("eurora")
N = 6000


def _tol(p: float, n: int = N) -> float:
    """Four standard deviations of a share ``p`` estimated on ``n`` jobs."""
    return 4 * np.sqrt(p * (1 - p) / n)


def _classes(run: np.ndarray) -> tuple[float, float, float]:
    return (
        float((run < 3600).mean()),
        float(((run >= 3600) & (run < 18000)).mean()),
        float((run >= 18000).mean()),
    )


@pytest.fixture(scope="module")
def kit():
    return load_workload(f"synthetic:kit,jobs={N},seed=3", KIT)


@pytest.fixture(scope="module")
def eurora():
    return load_workload(f"synthetic:eurora,jobs={N},seed=3", EURORA)


def test_kit_duration_classes_match_the_paper(kit):
    short, medium, long = _classes(kit.run_time)
    assert abs(short - 0.6626) < _tol(0.6626)  # PCP'20: 66.26 % under 1 h
    assert abs(medium - 0.1707) < _tol(0.1707)
    assert abs(long - 0.1667) < _tol(0.1667)
    assert kit.run_time.min() >= 1 and kit.run_time.max() <= 259200


def test_kit_sizes_queues_and_gpu_jobs(kit):
    req, units = kit.unit_requests, kit.units
    gpu = req[:, 2] > 0
    assert abs(gpu.mean() - 0.04) < _tol(0.04)
    # GPU units are a quarter of a fat node; every other unit is one thin node or less
    assert (req[gpu] == [12, 262144, 1]).all()
    thin = ~gpu
    assert (req[thin, 0] <= 20).all() and (req[thin, 1] == req[thin, 0] * 3072).all()
    multi = thin & (units > 1)
    assert (req[multi, 0] == 20).all()
    # Curie: 20.8 % serial jobs among all; the GPU jobs are drawn apart from the size
    assert abs((thin & (units == 1) & (req[:, 0] == 1)).mean() - 0.208 * 0.96) < _tol(0.2)
    assert units[thin].max() <= 256
    queue = np.array([j.queue for j in kit])
    assert (
        (queue[gpu] == 2).all()
        and (queue[thin & (units == 1)] == 0).all()
        and (queue[multi] == 1).all()
    )
    assert kit.queue_names == {0: "singlenode", 1: "multinode", 2: "fat"}


def test_eurora_duration_classes_and_queues(eurora):
    short, medium, long = _classes(eurora.run_time)
    assert abs(short - 0.9314) < _tol(0.9314)  # CP'19: 93.14 / 6.10 / 0.75 %
    assert abs(medium - 0.0610) < _tol(0.0610)
    assert abs(long - 0.0075) < _tol(0.0075)
    queue = np.array([j.queue for j in eurora])
    wall = eurora.wall_time
    assert eurora.queue_names == {0: "debug", 1: "parallel", 2: "longpar", 3: "reservation"}
    assert eurora.queue_ewt == _QUEUE_EWT
    assert abs((queue == 3).mean() - 0.02) < _tol(0.02)
    assert (wall[queue == 0] <= 1800).all()
    assert ((wall[queue == 1] > 1800) & (wall[queue == 1] <= 21600)).all()
    assert (wall[queue == 2] > 21600).all()
    assert (eurora.wall_time >= eurora.run_time).all()


def test_eurora_units_ask_for_cores_memory_and_gpus_or_mics(eurora):
    req, units = eurora.unit_requests, eurora.units
    gpu, mic = req[:, 2] > 0, req[:, 3] > 0
    assert not (gpu & mic).any()
    assert abs(gpu.mean() - 0.20) < _tol(0.20) and abs(mic.mean() - 0.10) < _tol(0.10)
    assert set(np.unique(req[gpu, 2])) == {1, 2} and set(np.unique(req[mic, 3])) == {1, 2}
    assert (req[:, 1] == req[:, 0] * 1024).all()
    assert req[:, 0].min() >= 1 and req[:, 0].max() == 16
    # SDSC-BLUE: 50.2 % of the jobs use one node; Curie: 45.8 % of the sub-node jobs one core
    assert abs((units == 1).mean() - 0.502) < _tol(0.502)
    assert abs((req[:, 0] == 1).mean() - 0.458) < _tol(0.458)
    assert units.max() == 32


@pytest.mark.parametrize("name,system", [("kit", KIT), ("eurora", EURORA)])
def test_every_job_fits_the_empty_system_and_nothing_is_skipped(name, system):
    w = load_workload(f"synthetic:{name},jobs=3000,seed=11", system)
    assert len(w) == 3000 and w.report.n_skipped == 0
    assert fits_empty_system(w.units, w.unit_requests, system).all()


@pytest.mark.parametrize("name,system", [("kit", KIT), ("eurora", EURORA)])
def test_same_seed_same_jobs_other_seed_other_jobs(name, system):
    a = load_workload(f"synthetic:{name},jobs=400,seed=5", system)
    b = load_workload(f"synthetic:{name},jobs=400,seed=5", system)
    c = load_workload(f"synthetic:{name},jobs=400,seed=6", system)
    assert a.jobs == b.jobs
    assert a.jobs != c.jobs


@pytest.mark.parametrize("name,system", [("kit", KIT), ("eurora", EURORA)])
def test_load_knob_sets_the_offered_core_load(name, system):
    w = load_workload(f"synthetic:{name},jobs=2000,seed=2,load=0.85", system)
    offered = w.offered_load(system.total_capacity)[system.resource_index("core")]
    assert offered == pytest.approx(0.85, rel=0.01)  # submit times are floored to seconds


def test_apply_load_by_hand():
    # 2 jobs of 10 cores x 100 s on 10 cores, submitted 0 and 40 s apart: offered load
    # 2000 / (10 x 40) = 5; at load 0.5 the span must become 400 s
    out = apply_load(np.array([0.0, 40.0]), np.array([1000.0, 1000.0]), 10, 0.5)
    assert out.tolist() == [0, 400]
    assert apply_load(np.array([0.5, 40.7]), np.array([1.0, 1.0]), 10, None).tolist() == [0, 40]


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31), top=st.integers(1, 6000), n=st.integers(1, 200))
def test_log2_sizes_stay_within_one_and_top(seed, top, n):
    shares = [1.0] * (int(np.floor(np.log2(top))) + 1)
    sizes = draw_log2_sizes(np.random.default_rng(seed), n, shares, 0.5, top)
    assert sizes.min() >= 1 and sizes.max() <= top


@pytest.mark.parametrize(
    "spec,message",
    [
        ("synthetic:kit,jobs=10,colour=red", "unknown key(s) ['colour']"),
        ("synthetic:eurora,jobs=ten", "'jobs' must be int, got 'ten'"),
        ("synthetic:eurora,gpu_share=0.7,mic_share=0.5", "gpu_share + mic_share must be <= 1"),
        ("synthetic:kit,short_share=1.5", "short_share must be in [0, 1]"),
        ("synthetic:kit,max_walltime=3600", "max_walltime must exceed 5 h"),
        ("synthetic:eurora,load=0", "load must be in (0, 100)"),
    ],
)
def test_bad_keys_are_one_line_errors(spec, message):
    system = KIT if "kit" in spec else EURORA
    with pytest.raises(ConfigError) as err:
        load_workload(spec, system)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_wrong_system_is_a_one_line_error():
    with pytest.raises(ConfigError, match="use --system eurora"):
        load_workload("synthetic:eurora,jobs=5", KIT)


def test_auto_system_is_the_papers_machine():
    assert resolve_system("auto", "synthetic:kit,jobs=5").name == "kit-forhlr2"
    assert resolve_system("auto", "synthetic:eurora,jobs=5").name == "eurora"
    assert resolve_system("auto", "synthetic:lublin,jobs=5").name == "machine-s"


@pytest.mark.parametrize("name,system", [("kit", KIT), ("eurora", EURORA)])
def test_a_run_is_saved_and_validates_by_re_reading_the_source(tmp_path, name, system):
    spec = f"synthetic:{name},jobs=80,seed=4,load=0.9"
    w = load_workload(spec, system)
    out = run_simulation(system, w, "easy", out_dir=tmp_path / "run")
    assert out.validation.ok
    report = validate_run_dir(tmp_path / "run")  # re-reads the workload from run.json's source
    assert report.ok, report


def test_a_sweep_expands_kit_and_eurora_generators_per_seed():
    spec = parse_sweep(
        'dispatchers = ["easy"]\n'
        '[[workloads]]\ngenerator = "eurora"\njobs = 40\nload = 0.9\ngpu_share = 0.5\nseeds = [1, 2]\n'
        '[[workloads]]\ngenerator = "kit"\njobs = 30\nseed = 4\n'
    )
    assert len(spec.cells) == 3 and len(set(spec.cell_ids())) == 3
    eur = spec.cells[0]
    assert eur.config["workload"]["generator"] == "eurora"
    assert eur.config["workload"]["gpu_share"] == 0.5 and eur.config["workload"]["seed"] == 1
    assert eur.labels["workload"] == "eurora-40j-load0.9"
    # the cell's spec string loads the same workload as the keys say, on the preset "auto" picks
    system = resolve_system(eur.system_spec, eur.workload_spec)
    assert system.name == "eurora"
    direct = load_workload("synthetic:eurora,jobs=40,load=0.9,gpu_share=0.5,seed=1", EURORA)
    assert load_workload(eur.workload_spec, system).jobs == direct.jobs
    kit = spec.cells[2]
    assert resolve_system(kit.system_spec, kit.workload_spec).name == "kit-forhlr2"
    assert (
        load_workload(kit.workload_spec, KIT).jobs
        == load_workload("synthetic:kit,jobs=30,seed=4", KIT).jobs
    )


@pytest.mark.parametrize(
    "body,message",
    [
        ('generator = "kit"\njobs = 10\ncolour = "red"\n', "unknown key(s) ['colour']"),
        ('generator = "eurora"\njobs = "many"\n', "workloads[0].jobs"),
        (
            'generator = "eurora"\ngpu_share = 0.9\nmic_share = 0.9\n',
            "gpu_share + mic_share must be <= 1",
        ),
    ],
)
def test_sweep_errors_name_the_field(body, message):
    with pytest.raises(SweepSpecError) as err:
        parse_sweep('dispatchers = ["easy"]\n[[workloads]]\n' + body)
    assert message in str(err.value) and "\n" not in str(err.value).strip()
