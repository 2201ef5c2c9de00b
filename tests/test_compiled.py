"""The compiled engine (:mod:`hpcdispatch.compiled`) takes exactly the Python engine's
decisions: same starts, ends, allocations, decision log and info, on random workloads and
systems (several resource types, max units per node, kills, both allocators, W and R) and on
a real trace; it refuses what it cannot run, and explains why."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import cores_system, job, pythonpath, trace
from hypothesis import given
from hypothesis import strategies as hst
from test_properties import SETTINGS, scenarios

from hpcdispatch.dispatchers import make_dispatcher
from hpcdispatch.engine import choose_engine, simulate
from hpcdispatch.errors import ConfigError
from hpcdispatch.predictors import make_predictor
from hpcdispatch.sim import SimulationOptions, Simulator
from hpcdispatch.validation import validate_result
from hpcdispatch.workload.job import Workload

pytestmark = pytest.mark.usefixtures("compiled_kernels")  # (tests/conftest.py)


def run(system, workload, spec, allocator, engine, predictor="walltime", kill=True, journal=None):
    return simulate(
        system,
        workload,
        make_dispatcher(spec, allocator=allocator),
        make_predictor(predictor),
        SimulationOptions(engine=engine, walltime_kill=kill),
        journal=journal,
    )


def assert_same_run(a, b) -> None:
    assert a.notes.engine == "compiled" and b.notes.engine == "python"
    np.testing.assert_array_equal(a.start, b.start)
    np.testing.assert_array_equal(a.end, b.end)
    np.testing.assert_array_equal(a.status, b.status)
    np.testing.assert_array_equal(a.killed, b.killed)
    np.testing.assert_array_equal(a.planned, b.planned)
    ra, rb = a.allocation_rows(), b.allocation_rows()
    for field in ("job", "segment", "node", "units", "t_from", "t_to"):
        np.testing.assert_array_equal(getattr(ra, field), getattr(rb, field), err_msg=field)
    for key in ("time", "queue_length", "running", "started"):
        np.testing.assert_array_equal(a.decisions[key], b.decisions[key], err_msg=key)
    assert len(a.decisions["elapsed"]) == len(b.decisions["elapsed"])
    assert (a.decisions["elapsed"] >= 0).all()
    assert list(a.decisions["info"]) == list(b.decisions["info"])


@SETTINGS
@given(
    scenarios(max_jobs=30),
    hst.sampled_from(["fifo", "fifo:blocking=false", "easy"]),
    hst.sampled_from(["first-fit", "best-fit"]),
    hst.sampled_from(["walltime", "oracle"]),
)
def test_compiled_engine_takes_the_python_engines_decisions(scenario, spec, allocator, predictor):
    system, workload, kill = scenario
    compiled = run(system, workload, spec, allocator, "compiled", predictor, kill)
    python = run(system, workload, spec, allocator, "python", predictor, kill)
    assert_same_run(compiled, python)
    assert validate_result(compiled).ok


def test_hand_computed_easy_schedule_on_the_compiled_engine():
    # 4 cores. A (t=0, 3 cores, 10 s) runs; B (t=1, 4 cores) waits for A: shadow time 10.
    # C (t=2, 1 core, 8 s) ends by 10: backfilled at 2. D (t=3, 1 core, 50 s) would delay B
    # (B needs all 4 cores at 10): refused, starts after B.
    system = cores_system(1, 4)
    jobs = [job(1, 0, 10, 3), job(2, 1, 10, 4), job(3, 2, 8, 1), job(4, 3, 50, 1)]
    workload = Workload(jobs, system.resources)
    result = run(system, workload, "easy", "first-fit", "compiled")
    assert result.start.tolist() == [0.0, 10.0, 2.0, 20.0]
    assert validate_result(result).ok
    info = [i for i in result.decisions["info"] if i]
    assert info[0] == {"shadow": 10.0, "head": 2, "backfilled": 1}


@pytest.mark.slow
def test_whole_kth_trace_same_on_both_engines():
    from hpcdispatch.system.io import load_system
    from hpcdispatch.workload.loader import load_workload

    path = trace("KTH-SP2-1996-2.1-cln.swf.gz")
    if not path.exists():
        pytest.skip("shared traces not available")
    system = load_system("kth-sp2")
    workload = load_workload(str(path), system)
    for spec in ("fifo", "easy"):
        compiled = run(system, workload, spec, "first-fit", "compiled")
        python = run(system, workload, spec, "first-fit", "python")
        assert_same_run(compiled, python)
        assert validate_result(compiled).ok


def test_auto_uses_python_below_the_size_threshold_and_compiled_when_asked():
    system = cores_system(2, 2)
    workload = Workload([job(1, 0, 5, 1), job(2, 0, 5, 3)], system.resources)
    assert run(system, workload, "easy", "first-fit", "auto").notes.engine == "python"
    assert run(system, workload, "easy", "first-fit", "compiled").notes.engine == "compiled"


@pytest.mark.parametrize(
    "case, reason",
    [
        ("sjf", "has no compiled kernel"),
        ("slurm-linear", "has no compiled version"),
        ("last-two", "learns during the run"),
        ("charge", "charged dispatch time"),
        ("journal", "decision journal"),
    ],
)
def test_compiled_engine_refuses_what_it_cannot_run(case, reason, tmp_path):
    system = cores_system(2, 2)
    workload = Workload([job(1, 0, 5, 1), job(2, 0, 5, 3)], system.resources)
    spec, allocator, predictor, options, journal = "easy", "first-fit", "walltime", {}, None
    if case == "sjf":
        spec = "sjf"
    elif case == "slurm-linear":
        allocator = "slurm-linear"
    elif case == "last-two":
        predictor = "last-two"
    elif case == "charge":
        options = {"charge_dispatch_time": True}
    else:
        journal = tmp_path / "j.jsonl"
    with pytest.raises(ConfigError, match=reason):
        simulate(
            system,
            workload,
            make_dispatcher(spec, allocator=allocator),
            make_predictor(predictor),
            SimulationOptions(engine="compiled", **options),
            journal=journal,
        )
    # auto falls back to the Python loop, which runs it
    sim = Simulator(
        system,
        workload,
        make_dispatcher(spec, allocator=allocator),
        predictor=make_predictor(predictor),
        options=SimulationOptions(engine="auto", **options),
        journal=journal,
    )
    assert choose_engine(sim) == "python"


def test_unknown_engine_is_a_config_error():
    with pytest.raises(ConfigError, match="engine must be one of"):
        SimulationOptions(engine="fast")


@pytest.mark.slow
def test_the_first_compiled_run_says_it_is_compiling(tmp_path):
    """numba compiles the engine on the first run after an install (tens of seconds): the run
    says so instead of hanging silently (a fresh cache directory stands for a fresh install)."""
    import subprocess
    import sys

    code = (
        "from hpcdispatch import simulate, load_system, SimulationOptions\n"
        "r = simulate(load_system('machine-s'), 'synthetic:lublin,jobs=200,seed=1', 'fifo',\n"
        "             options=SimulationOptions(engine='compiled'))\n"
        "print('ENGINE', r.notes.engine)"
    )
    env = {
        "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
        "PATH": "/usr/bin:/bin",
        "HPCDISPATCH_ENGINE": "jit",  # (numba's engine, not the one an installation built ahead)
        **pythonpath(),
    }
    first = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=900
    )
    assert "ENGINE compiled" in first.stdout, first.stderr[-500:]
    assert "compiling the simulation engine (once" in first.stderr
    second = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=900
    )
    assert "ENGINE compiled" in second.stdout and "compiling" not in second.stderr


#: a run of every entry point from Python (compiled FIFO and EASY with both allocators, and
#: conservative backfilling's compiled profile with both), printing each entry's cache hits
#: and misses, its signatures and where hpcdispatch was imported from
ENTRY_RUNS = """
import sys
import hpcdispatch
from hpcdispatch import simulate, load_system, SimulationOptions
from hpcdispatch.compiled import kernels as K
system = load_system('machine-s')
for spec in ('fifo', 'easy:allocator=best-fit', 'conservative', 'conservative:allocator=best-fit'):
    engine = 'python' if spec.startswith('conservative') else 'compiled'
    r = simulate(system, 'synthetic:lublin,jobs=150,seed=3', spec, options=SimulationOptions(engine=engine))
    assert r.notes.engine == engine
    # loaded without numba's registries of typing and lowering rules (compiling needs them),
    # nor scipy's BLAS (conservative's kernels call numpy routines: numba.np.arraymath)
    print('LOADED', spec, [m for m in ('numba.np.polynomial.polynomial_core', 'numba.typed.typeddict', 'scipy.linalg')
                           if m in sys.modules])
print('FROM', hpcdispatch.__file__)
for name, signature in K.entry_signatures().items():
    f = getattr(K, name)
    print('ENTRY', name, sum(f.stats.cache_hits.values()), sum(f.stats.cache_misses.values()),
          f.signatures == [signature])
"""


#: FIFO and EASY with both allocators on the ahead-of-time engine (numba not imported), then on
#: numba's engine (HPCDISPATCH_ENGINE=jit): the same schedules
AHEAD_RUNS = """
import os, sys
import numpy as np
from hpcdispatch import simulate, load_system, SimulationOptions
system = load_system('machine-s')
specs = ('fifo', 'easy', 'fifo:allocator=best-fit', 'easy:allocator=best-fit')
runs = [simulate(system, 'synthetic:lublin,jobs=300,seed=5', spec,
                 options=SimulationOptions(engine='compiled')) for spec in specs]
print('NUMBA', 'numba' in sys.modules)
os.environ['HPCDISPATCH_ENGINE'] = 'jit'
for spec, a in zip(specs, runs):
    b = simulate(system, 'synthetic:lublin,jobs=300,seed=5', spec,
                 options=SimulationOptions(engine='compiled'))
    ra, rb = a.allocation_rows(), b.allocation_rows()
    same = (np.array_equal(a.start, b.start) and np.array_equal(a.end, b.end)
            and np.array_equal(a.status, b.status) and b.notes.engine == 'compiled'
            and all(np.array_equal(getattr(ra, f), getattr(rb, f))
                    for f in ('job', 'segment', 'node', 'units', 't_from', 't_to')))
    print('SAME', same, spec)
"""


def entry_report(stdout: str) -> dict[str, tuple[int, int, bool]]:
    rows = [line.split() for line in stdout.splitlines() if line.startswith("ENTRY ")]
    return {name: (int(hits), int(misses), same == "True") for _, name, hits, misses, same in rows}


@pytest.mark.slow
def test_an_installation_does_not_compile_on_its_first_run(tmp_path):
    """What ``pip install .`` does (setup.py's build step: ``install_time.py BUILD_LIB`` on a
    copy of the package), then a first run in a fresh home: every entry point is read from
    the code compiled at install time (a cache hit, no miss), for exactly the signatures of
    ``entry_signatures`` (a run needing another type would compile), and nothing says
    "compiling"."""
    import os
    import shutil
    import subprocess
    import sys
    import sysconfig
    from pathlib import Path

    import hpcdispatch

    lib = tmp_path / "lib"
    shutil.copytree(
        Path(hpcdispatch.__file__).parent,
        lib / "hpcdispatch",
        ignore=shutil.ignore_patterns("__pycache__", "engine"),
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    build = subprocess.run(
        [sys.executable, str(lib / "hpcdispatch/compiled/install_time.py"), str(lib)],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    assert "compiled the simulation engine into" in build.stdout
    from hpcdispatch.compiled.disk_cache import source_stamp, stamp_dir

    engine = (
        lib
        / "hpcdispatch/compiled/engine"
        / stamp_dir(source_stamp(lib / "hpcdispatch/compiled/kernels.py"))
    )
    shipped = sorted(p.name for p in engine.iterdir())
    for name in ("run_steps", "profile_earliest", "profile_compress"):
        assert any(f.startswith(f"kernels.{name}-") and f.endswith(".nbi") for f in shipped), (
            shipped
        )
    assert not list(
        (lib / "hpcdispatch/compiled/__pycache__").glob("*.nb[ic]")
    )  # (numba's own: not shipped)
    ahead = sorted(p.name for p in (lib / "hpcdispatch/compiled").glob("_engine_aot*.so"))
    if Path(sysconfig.get_paths()["include"], "Python.h").exists():
        assert len(ahead) == 1, (ahead, build.stderr[-2000:])  # compiled ahead of time (aot.py)
    else:  # (numba.pycc needs Python's C headers: the install says so and goes on without)
        assert ahead == [] and "not compiled ahead of time" in build.stderr, build.stderr
    home = tmp_path / "home"
    home.mkdir()
    env.update(HOME=str(home), PYTHONPATH=str(lib), XDG_CACHE_HOME=str(home / ".cache"))

    def python(code: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            env=env,
            timeout=900,
            cwd=tmp_path,
        )

    if ahead:
        # the ahead-of-time engine: FIFO and EASY run without importing numba, and take numba's
        # engine's decisions (the same schedule, start for start, allocation row for row)
        both = python(AHEAD_RUNS)
        assert both.returncode == 0, both.stderr[-2000:]
        assert "compiling" not in both.stderr and "ahead-of-time" not in both.stderr
        assert both.stdout.count("SAME True") == 4 and "NUMBA False" in both.stdout, both.stdout
    env["HPCDISPATCH_ENGINE"] = "jit"  # numba's engine, loaded from the installation's cache
    first = python(ENTRY_RUNS)
    assert first.returncode == 0, first.stderr[-2000:]
    assert f"FROM {lib / 'hpcdispatch' / '__init__.py'}" in first.stdout
    assert "compiling" not in first.stderr
    assert entry_report(first.stdout) == {
        name: (1, 0, True) for name in ("run_steps", "profile_earliest", "profile_compress")
    }
    assert [line for line in first.stdout.splitlines() if line.startswith("LOADED")] == [
        f"LOADED {spec} []"
        for spec in (
            "fifo",
            "easy:allocator=best-fit",
            "conservative",
            "conservative:allocator=best-fit",
        )
    ]  # (disk_cache.py: load_compiled)
    assert not (home / ".cache" / "hpcdispatch").exists()  # the package was writable: nothing else
    # a read-only installation (a system-wide install; root may write anywhere, so the package
    # directory is declared unwritable): the user's cache is seeded and nothing compiles either
    readonly = (
        "import hpcdispatch.compiled.disk_cache as D\n"
        "real = D.writable\n"
        f"D.writable = lambda path: not str(path).startswith({str(lib)!r}) and real(path)\n"
    )
    second = python(readonly + ENTRY_RUNS)
    assert second.returncode == 0, second.stderr[-2000:]
    assert "compiling" not in second.stderr
    assert entry_report(second.stdout) == {
        name: (1, 0, True) for name in ("run_steps", "profile_earliest", "profile_compress")
    }
    seeded = home / ".cache" / "hpcdispatch" / "engine" / engine.name
    assert sorted(p.name for p in seeded.iterdir()) == shipped


def test_the_engine_cache_directory_and_its_seeding(tmp_path):
    """NUMBA_CACHE_DIR first, unseeded; then the package's own directory when writable; else
    the user's, seeded once with the package's index and code files (nothing else); each
    source in its own subdirectory, so that two versions sharing a cache never overwrite
    each other's index, and a new version is seeded beside an old one."""
    from hpcdispatch.compiled.disk_cache import (
        cache_dir,
        keep_on_disk,
        seed,
        source_stamp,
        stamp_dir,
    )

    package, user, numba_dir = tmp_path / "pkg", tmp_path / "user", tmp_path / "numba"
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("x = 1\n")
    b.write_text("x = 2\n")
    stamp, other = source_stamp(a), source_stamp(b)
    sub = stamp_dir(stamp)
    assert stamp.startswith("sha256:") and len(sub) == 16 and sub != stamp_dir(other)
    shipped = package / sub
    shipped.mkdir(parents=True)
    for name in ("kernels.run_steps-7.py311.nbi", "kernels.run_steps-7.py311.1.nbc", "notes.txt"):
        (shipped / name).write_bytes(name.encode())
    everything = lambda path: True  # noqa: E731

    def no_package(path):  # (as writable() does, a writable directory is made when missing)
        if str(path).startswith(str(package)):
            return False
        path.mkdir(parents=True, exist_ok=True)
        return True

    assert (
        cache_dir(stamp, str(numba_dir), package, user, everything)
        == numba_dir / "hpcdispatch-engine" / sub
    )
    assert not user.exists()
    assert cache_dir(stamp, "", package, user, everything) == shipped
    assert cache_dir(stamp, "", package, user, lambda path: False) is None
    assert cache_dir(stamp, "", package, user, no_package) == user / sub
    assert sorted(p.name for p in (user / sub).iterdir()) == [
        "kernels.run_steps-7.py311.1.nbc",
        "kernels.run_steps-7.py311.nbi",
    ]
    assert (
        user / sub / "kernels.run_steps-7.py311.nbi"
    ).read_bytes() == b"kernels.run_steps-7.py311.nbi"
    # once the user's directory holds an engine (numba's own, later), it is not overwritten
    (user / sub / "kernels.run_steps-7.py311.nbi").write_bytes(b"numba wrote this")
    assert seed(shipped, user / sub) == []
    assert (user / sub / "kernels.run_steps-7.py311.nbi").read_bytes() == b"numba wrote this"
    # another version of the source: its own subdirectory, seeded from its own shipped files
    (package / stamp_dir(other)).mkdir()
    (package / stamp_dir(other) / "kernels.run_steps-7.py311.nbi").write_bytes(b"v2")
    assert cache_dir(other, "", package, user, no_package) == user / stamp_dir(other)
    assert (user / stamp_dir(other) / "kernels.run_steps-7.py311.nbi").read_bytes() == b"v2"
    assert (user / sub / "kernels.run_steps-7.py311.nbi").read_bytes() == b"numba wrote this"
    assert seed(tmp_path / "missing", tmp_path) == []
    # the stamp is the content's, whatever the file's time
    c = tmp_path / "c.py"
    c.write_text("x = 1\n")
    import os

    os.utime(c, (1_000_000, 1_000_000))
    assert source_stamp(c) == stamp
    # not a numba dispatcher (NUMBA_DISABLE_JIT=1 makes plain functions): nothing to keep
    assert keep_on_disk(lambda: None) is False


@pytest.mark.slow
def test_with_the_jit_disabled_runs_go_on_in_python(tmp_path):
    """NUMBA_DISABLE_JIT=1 (numba's switch for debugging): conservative backfilling runs its
    profile kernels as plain Python, the compiled engine refuses with the reason and "auto"
    takes the Python loop."""
    import os
    import subprocess
    import sys

    code = (
        "from hpcdispatch import simulate, load_system, SimulationOptions\n"
        "from hpcdispatch.errors import ConfigError\n"
        "s = load_system('machine-s')\n"
        "w = 'synthetic:lublin,jobs=40,seed=2'\n"
        "print('CONS', simulate(s, w, 'conservative').notes.engine)\n"
        "print('AUTO', simulate(s, w, 'fifo', options=SimulationOptions(engine='auto')).notes.engine)\n"
        "try:\n    simulate(s, w, 'fifo', options=SimulationOptions(engine='compiled'))\n"
        "except ConfigError as e:\n    print('REFUSED', e)\n"
    )
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "CONS python" in out.stdout and "AUTO python" in out.stdout
    assert "REFUSED" in out.stdout and "NUMBA_DISABLE_JIT is set" in out.stdout


def test_stable_argsort_hand_computed():
    # ties keep index order: 2.0 at 0 and 3, 1.0 at 1 and 4; inf last; only the first n count
    from hpcdispatch.compiled.kernels import stable_argsort

    values = np.array([2.0, 1.0, np.inf, 2.0, 1.0, -5.0, 0.0])
    assert stable_argsort(values, 6).tolist() == [5, 1, 4, 0, 3, 2]
    assert stable_argsort(values, 0).tolist() == []
    assert stable_argsort(values, 1).tolist() == [0]


@SETTINGS
@given(
    hst.lists(
        hst.one_of(hst.integers(-4, 4).map(float), hst.floats(-1e6, 1e6), hst.just(np.inf)),
        max_size=300,
    )
)
def test_stable_argsort_is_numpys_mergesort(values):
    # the kernels' replacement for np.argsort(kind="mergesort") (best fit's node order, EASY's
    # release order): the same permutation, ties (many, from the small integers) included
    from hpcdispatch.compiled.kernels import stable_argsort

    arr = np.array(values, dtype=np.float64)
    np.testing.assert_array_equal(stable_argsort(arr, len(arr)), np.argsort(arr, kind="mergesort"))


@given(
    hst.integers(0, 4).flatmap(
        lambda k: hst.lists(
            hst.lists(
                hst.sampled_from([-(2**61), -7, 0, 1, 3, 2**40, 2**62]),
                min_size=k + 1,
                max_size=k + 1,
            ),
            max_size=40,
        )
    )
)
def test_distinct_rows_numbers_rows_as_numpy_unique(rows):
    """The engine's job shapes: the same numbering as ``np.unique(axis=0)`` (lexicographic),
    with values near the limits of int64 (the joined code numbers distinct values, not values)."""
    from hpcdispatch.compiled.runner import distinct_rows

    width = len(rows[0]) if rows else 2
    keys = np.array(rows, dtype=np.int64).reshape(len(rows), width)
    count, inverse = distinct_rows(keys)
    if not rows:
        assert count == 0 and len(inverse) == 0
        return
    want, want_inverse = np.unique(keys, axis=0, return_inverse=True)
    assert count == len(want)
    assert np.array_equal(inverse, want_inverse.reshape(-1))


@pytest.mark.slow
def test_load_compiled_loads_only_what_is_on_disk(tmp_path):
    """``load_compiled`` loads an entry point from the engine's cache without numba's
    registries, and does nothing (no compiling: ``False``) when the cache does not hold it, or
    for a function that keeps no engine cache; the caller then compiles as numba does."""
    import subprocess
    import sys

    code = (
        "import numba\n"
        "from hpcdispatch.compiled import kernels as K\n"
        "from hpcdispatch.compiled.disk_cache import load_compiled\n"
        "signature = K.entry_signatures()['profile_earliest']\n"
        "print('LOADED', load_compiled(K.profile_earliest, signature), len(K.profile_earliest.signatures))\n"
        "print('PLAIN', load_compiled(numba.njit(lambda x: x + 1), (numba.types.int64,)))\n"
    )
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin", **pythonpath()}
    empty = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=900
    )
    assert "LOADED False 0" in empty.stdout and "PLAIN False" in empty.stdout, empty.stderr[-1000:]
    # compiled once (what a first run does), the next process loads it
    compile_it = code.replace(
        "print('LOADED'", "K.profile_earliest.compile(signature)\nprint('COMPILED'"
    )
    subprocess.run(
        [sys.executable, "-c", compile_it],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        check=True,
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=900
    )
    assert "LOADED True 1" in loaded.stdout, loaded.stderr[-1000:]


def test_an_engine_built_from_other_sources_is_not_used(monkeypatch, caplog):
    """The ahead-of-time engine reports the stamp of the sources it was built from: a module
    whose stamp differs from the kernels' and the layout's (an edited installation) is not
    used, and the run says so; ``HPCDISPATCH_ENGINE=jit`` and ``NUMBA_DISABLE_JIT=1`` turn it
    off; an installation without one (editable) has none to load."""
    import importlib.machinery
    import sys
    import types
    from pathlib import Path

    from hpcdispatch.compiled import aot

    kernels = Path(aot.__file__).with_name("kernels.py")
    stamp = aot.stamp_number(aot.source_stamp(kernels))
    assert 0 < stamp < 2**63
    name = f"hpcdispatch.compiled.{aot.MODULE}"
    fake = types.ModuleType(name)
    fake.__spec__ = importlib.machinery.ModuleSpec(name, None)
    fake.run_steps = lambda st, n: 0
    monkeypatch.setitem(sys.modules, name, fake)
    monkeypatch.delenv("HPCDISPATCH_ENGINE", raising=False)
    monkeypatch.delenv("NUMBA_DISABLE_JIT", raising=False)
    fake.source_stamp = lambda: stamp
    assert aot.load_engine() is fake
    for variable, value in (("HPCDISPATCH_ENGINE", "jit"), ("NUMBA_DISABLE_JIT", "1")):
        monkeypatch.setenv(variable, value)
        assert aot.load_engine() is None
        monkeypatch.delenv(variable)
    monkeypatch.setenv("NUMBA_DISABLE_JIT", "0")
    assert aot.load_engine() is fake
    fake.source_stamp = lambda: stamp ^ 1
    with caplog.at_level("WARNING", logger="hpcdispatch"):
        assert aot.load_engine() is None
    assert "built from other sources" in caplog.text


def test_the_stamp_covers_the_layout_and_only_entry_points_keep_a_cache(tmp_path):
    """The kernels read the state layout's constants, frozen into their code: a change to
    ``layout.py`` alone changes the stamp the engine's disk cache and the ahead-of-time module
    are checked against; and no other function of ``kernels.py`` keeps a cache of its own
    (numba's would be stamped by ``kernels.py`` alone, and hand a recompiled entry point the
    old constants)."""
    import shutil
    from pathlib import Path

    from numba.core.dispatcher import Dispatcher

    from hpcdispatch.compiled import aot, kernels
    from hpcdispatch.compiled.disk_cache import EngineCache

    for name in ("kernels.py", "layout.py"):
        shutil.copy(Path(aot.__file__).with_name(name), tmp_path / name)
    before = aot.source_stamp(tmp_path / "kernels.py")
    layout = tmp_path / "layout.py"
    layout.write_text(layout.read_text().replace("N_REGS = 96", "N_REGS = 97"))
    assert aot.source_stamp(tmp_path / "kernels.py") != before
    (tmp_path / "layout.py").unlink()
    assert aot.source_stamp(tmp_path / "kernels.py") != before  # (the kernels' text alone)
    own = {
        name: type(f._cache).__name__
        for name, f in vars(kernels).items()
        if isinstance(f, Dispatcher) and name not in kernels.ON_DISK
    }
    assert len(own) > 30 and set(own.values()) == {"NullCache"}, own
    if kernels.ON_DISK["run_steps"]:
        assert isinstance(kernels.run_steps._cache, EngineCache)


def test_the_ahead_of_time_engine_is_given_only_the_types_it_was_compiled_for():
    """The ahead-of-time module does not check its arguments as numba's dispatcher does: the
    runner checks each array's dtype, dimensions, order and writability first."""
    import numpy as np

    from hpcdispatch.compiled.aot import check_state_types
    from hpcdispatch.compiled.layout import example_state

    good = example_state(2)
    check_state_types(good, example_state(2))  # (nothing raised)
    bad = [
        good._replace(regs=good.regs.astype(np.float64)),
        good._replace(ji=np.zeros((3, 4, 1), dtype=np.int64)),
        good._replace(jf=np.zeros((8, 6))[:, ::2]),
        good._replace(req=np.zeros((0, 2), dtype=np.int64)),  # writable, compiled read-only
    ]
    for state in bad:
        with pytest.raises(TypeError, match="engine state"):
            check_state_types(state, example_state(2))
