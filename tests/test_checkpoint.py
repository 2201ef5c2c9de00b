"""Checkpoints: a run interrupted at any instant and resumed from its checkpoint is the run
that was not interrupted -- every start, end, node and decision -- for dispatchers that keep
state between calls (conservative backfilling's plan) and predictors that learn."""

from __future__ import annotations

import os
import pickle
import pickletools
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from helpers import cores_system

import hpcdispatch
from hpcdispatch.dispatchers import dispatcher_class, make_dispatcher
from hpcdispatch.engine import choose_engine
from hpcdispatch.errors import ConfigError
from hpcdispatch.predictors import make_predictor
from hpcdispatch.sim import SimulationOptions, Simulator
from hpcdispatch.sim import checkpoint as checkpoint_module
from hpcdispatch.sim.checkpoint import CheckpointError
from hpcdispatch.system import load_system
from hpcdispatch.validation import validate_result
from hpcdispatch.workload import load_workload

pytestmark = pytest.mark.usefixtures("compiled_kernels")  # (tests/conftest.py)

SPEC = "synthetic:lublin,jobs=200,seed=5,load=1.1"

#: simulated time at which the interrupting dispatchers stop the run (None: never)
STOP: list[float | None] = [None]


def interrupting(name: str):
    """The dispatcher class ``name`` with a ``_dispatch`` that raises KeyboardInterrupt once
    the simulated time reaches ``STOP[0]`` (a class-level switch: a checkpoint holds the
    instance's attributes, not its class's)."""
    base = dispatcher_class(name)

    def _dispatch(self, view):
        if STOP[0] is not None and view.now >= STOP[0]:
            raise KeyboardInterrupt
        return base._dispatch(self, view)

    return type(
        f"Interrupting{base.__name__}", (base,), {"_dispatch": _dispatch, "name": base.name}
    )


@pytest.fixture(scope="module")
def eurora_case():
    system = load_system("eurora")
    return system, load_workload(SPEC, system)


@pytest.fixture(scope="module")
def pooled_case():
    # one-core units on a cores-only system: conservative plans pooled (the RICC runs)
    system = cores_system(16, 8)
    return system, load_workload(SPEC.replace("seed=5", "seed=6"), system)


def simulate(case, dispatcher, predictor="walltime", checkpoint=None, every=0.0):
    system, workload = case
    sim = Simulator(
        system,
        workload,
        dispatcher,
        make_predictor(predictor),
        SimulationOptions(engine="python"),
        checkpoint=checkpoint,
        checkpoint_every=every,
    )
    return sim.run()


def assert_same_run(resumed, clean) -> None:
    np.testing.assert_array_equal(resumed.start, clean.start)
    np.testing.assert_array_equal(resumed.end, clean.end)
    assert resumed.jobs_frame().equals(clean.jobs_frame())  # same nodes too
    for key in ("time", "queue_length", "running", "started"):
        np.testing.assert_array_equal(resumed.decisions[key], clean.decisions[key])
    assert list(resumed.decisions["info"]) == list(clean.decisions["info"])
    assert validate_result(resumed).ok


CASES = [
    ("conservative", "walltime", "eurora_case"),  # node-level plan
    ("conservative", "last-two", "pooled_case"),  # pooled plan; a predictor that learns
    ("easy", "last-two", "eurora_case"),
    ("sjf", "walltime", "pooled_case"),
]


@pytest.mark.slow
@pytest.mark.parametrize("name, predictor, case_name", CASES)
def test_resumed_run_equals_uninterrupted_run(name, predictor, case_name, request, tmp_path):
    case = request.getfixturevalue(case_name)
    cls = interrupting(name)
    clean = simulate(case, cls(), predictor)
    times = clean.decisions["time"]
    assert len(times) > 100
    for stop in (times[1], times[len(times) // 3], times[-2]):  # early, middle, at the end
        path = tmp_path / f"{name}-{stop}.ckpt"
        STOP[0] = float(stop)
        try:
            with pytest.raises(KeyboardInterrupt):
                simulate(case, cls(), predictor, checkpoint=path)
        finally:
            STOP[0] = None
        assert path.exists()
        resumed = simulate(case, cls(), predictor, checkpoint=path)
        assert resumed.notes.checkpoint.resumed_at["t"] < stop
        assert not path.exists()  # removed once the run finished
        assert_same_run(resumed, clean)


@pytest.mark.slow
def test_conservative_resumes_its_plan_not_a_new_one(pooled_case, tmp_path):
    """The resumed dispatcher continues with the restored plan: its counters go on from
    the interrupted run's, and the plan's compressions add up to the clean run's."""
    cls = interrupting("conservative")
    clean_disp = cls()
    clean = simulate(pooled_case, clean_disp)
    stop = float(clean.decisions["time"][len(clean.decisions["time"]) // 2])
    path = tmp_path / "c.ckpt"
    STOP[0] = stop
    try:
        with pytest.raises(KeyboardInterrupt):
            simulate(pooled_case, cls(), checkpoint=path)
    finally:
        STOP[0] = None
    resumed_disp = cls()
    resumed = simulate(pooled_case, resumed_disp, checkpoint=path)
    assert resumed_disp.compressions == clean_disp.compressions > 0
    assert resumed_disp.rebuilds == clean_disp.rebuilds
    assert_same_run(resumed, clean)


@pytest.mark.slow
def test_killed_process_resumes_from_its_last_checkpoint(tmp_path):
    """SIGKILL at an arbitrary moment (possibly during a write): the checkpoint on disk is
    whole, and the resumed run equals the uninterrupted one."""
    path = tmp_path / "k.ckpt"
    spec = "synthetic:lublin,jobs=600,seed=12,load=1.2"
    code = (
        "from hpcdispatch.dispatchers import make_dispatcher\n"
        "from hpcdispatch.sim import SimulationOptions, Simulator\n"
        "from hpcdispatch.system import load_system\n"
        "from hpcdispatch.workload import load_workload\n"
        "s = load_system('eurora')\n"
        f"w = load_workload('{spec}', s)\n"
        "import time\n"
        "class Slow(type(make_dispatcher('conservative'))):\n"
        "    def _dispatch(self, view):\n"
        "        time.sleep(0.002)\n"
        "        return super()._dispatch(view)\n"
        "Slow.name = 'conservative'\n"
        f"Simulator(s, w, Slow(), options=SimulationOptions(engine='python'), checkpoint=r'{path}',"
        " checkpoint_every=0.0).run()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], env=os.environ | {"PYTHONPATH": os.pathsep.join(sys.path)}
    )
    deadline = time.monotonic() + 300  # (the child's imports alone take long on a loaded machine)
    while not path.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert path.exists(), "the child finished or wrote no checkpoint before it was killed"
    system = load_system("eurora")
    case = (system, load_workload(spec, system))
    clean = simulate(case, make_dispatcher("conservative"))
    resumed = simulate(case, make_dispatcher("conservative"), checkpoint=path)
    at = resumed.notes.checkpoint.resumed_at
    assert 0 < at["calls"] < len(clean.decisions["time"])
    assert_same_run(resumed, clean)


def test_checkpoint_of_another_run_is_refused(eurora_case, tmp_path, monkeypatch):
    path = tmp_path / "o.ckpt"
    cls = interrupting("conservative")
    STOP[0] = 20_000.0
    try:
        with pytest.raises(KeyboardInterrupt):
            simulate(eurora_case, cls(), checkpoint=path)
    finally:
        STOP[0] = None
    with pytest.raises(CheckpointError, match=r"another run \(differs in: dispatcher\)"):
        simulate(eurora_case, make_dispatcher("easy"), checkpoint=path)
    with pytest.raises(CheckpointError, match=r"differs in: predictor"):
        simulate(eurora_case, cls(), "last-two", checkpoint=path)
    assert path.exists()  # a refused checkpoint is left as it was
    with monkeypatch.context() as m:  # the code changed since the checkpoint was written
        m.setattr(checkpoint_module, "source_digest", lambda: "0123456789abcdef")
        with pytest.raises(CheckpointError, match="written by other code"):
            simulate(eurora_case, cls(), checkpoint=path)

    damaged = tmp_path / "d.ckpt"
    damaged.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(CheckpointError, match=rf"{damaged.name}: damaged checkpoint"):
        simulate(eurora_case, cls(), checkpoint=damaged)
    (tmp_path / "x.ckpt").write_bytes(b"not a pickle")
    with pytest.raises(CheckpointError, match="damaged checkpoint"):
        simulate(eurora_case, cls(), checkpoint=tmp_path / "x.ckpt")
    # a checkpoint of the format before LoopState (1): refused, saying so, not loaded as damaged
    old = tmp_path / "old.ckpt"
    with old.open("wb") as fh:
        pickle.dump({"checkpoint": 1, "version": "0.1.0", "code": "x", "run": {}, "at": {}}, fh)
    with pytest.raises(
        CheckpointError, match=r"a checkpoint of format 1 .*this version reads format 2"
    ):
        simulate(eurora_case, cls(), checkpoint=old)


def test_checkpoints_need_the_python_engine(eurora_case, tmp_path):
    system, workload = eurora_case
    with pytest.raises(ConfigError, match="compiled engine cannot write checkpoints"):
        hpcdispatch.simulate(
            system,
            workload,
            make_dispatcher("easy"),
            options=SimulationOptions(engine="compiled"),
            checkpoint=tmp_path / "c.ckpt",
        )
    sim = Simulator(system, workload, make_dispatcher("easy"), checkpoint=tmp_path / "c.ckpt")
    assert choose_engine(sim) == "python"
    with pytest.raises(ConfigError, match="checkpoint interval"):
        Simulator(
            system,
            workload,
            make_dispatcher("easy"),
            checkpoint=tmp_path / "c.ckpt",
            checkpoint_every=-1,
        )


# ---- a checkpoint is data: a crafted one is refused and nothing in it runs ------------------


class _RunsCommand:
    """What an attacker pickles: unpickling it calls ``os.system(command)``."""

    def __init__(self, command: str):
        self.command = command

    def __reduce__(self):
        return (os.system, (self.command,))


class _Calls:
    """Unpickling it calls ``fn(*args)`` (any global the pickle names)."""

    def __init__(self, fn, *args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return (self.fn, self.args)


def _pickles(path) -> list[bytes]:
    """A checkpoint's three pickles (header, shared arrays, state) as bytes, split where each
    ends (walked opcode by opcode: nothing is built)."""
    data = path.read_bytes()
    parts, start = [], 0
    with path.open("rb") as fh:
        for _ in range(3):
            for _op in pickletools.genops(fh):
                pass
            parts.append(data[start : fh.tell()])
            start = fh.tell()
    assert start == len(data)
    return parts


@pytest.fixture(scope="module")
def real_checkpoint(eurora_case, tmp_path_factory):
    """A checkpoint this code wrote for eurora_case with the interrupting conservative."""
    path = tmp_path_factory.mktemp("real") / "r.ckpt"
    STOP[0] = 20_000.0
    try:
        with pytest.raises(KeyboardInterrupt):
            simulate(eurora_case, interrupting("conservative")(), checkpoint=path)
    finally:
        STOP[0] = None
    return path


@pytest.mark.parametrize(
    "where, payload",
    [
        ("state", "os.system"),
        ("arrays", "os.system"),
        ("header", "os.system"),
        ("state", "builtins.eval"),
        ("state", "builtins.getattr"),
        ("state", "project writer"),
        ("state", "state-package function"),
    ],
)
def test_a_crafted_checkpoint_is_refused_before_anything_runs(
    eurora_case, real_checkpoint, tmp_path, where, payload
):
    from hpcdispatch.results.store import write_text
    from hpcdispatch.sim.cluster import ClusterState
    from hpcdispatch.sim.execution import parse_app_model

    marker = tmp_path / "marker"
    evil, name = {
        "os.system": (_RunsCommand(f"touch {marker}"), "posix.system"),
        "builtins.eval": (_Calls(eval, f"open({str(marker)!r}, 'w').close()"), "builtins.eval"),
        # (getattr on an admitted class reaches its methods' globals: os, subprocess)
        "builtins.getattr": (_Calls(getattr, ClusterState, "__init__"), "builtins.getattr"),
        # the project's own code: a function writing a file, and any function at all
        "project writer": (_Calls(write_text, marker, "x"), "hpcdispatch.results.store.write_text"),
        "state-package function": (
            _Calls(parse_app_model, "x"),
            "hpcdispatch.sim.execution.parse_app_model, which is not a class",
        ),
    }[payload]
    header, arrays, state = _pickles(real_checkpoint)
    evil_bytes = pickle.dumps(evil, protocol=pickle.HIGHEST_PROTOCOL)
    crafted = tmp_path / "crafted.ckpt"
    crafted.write_bytes(
        {
            "header": evil_bytes + arrays + state,
            "arrays": header + evil_bytes + state,
            "state": header + arrays + evil_bytes,
        }[where]
    )
    with pytest.raises(CheckpointError) as err:
        simulate(eurora_case, interrupting("conservative")(), checkpoint=crafted)
    message = str(err.value)
    assert message.startswith(f"{crafted}: refused, not a checkpoint this code wrote: ")
    assert f"names {name}" in message and "nothing of it was run" in message
    assert "\n" not in message
    assert not marker.exists()
    assert crafted.exists()  # left for the user to look at


@pytest.mark.slow
def test_the_allow_list_admits_every_object_a_run_holds(eurora_case, real_checkpoint, tmp_path):
    """The real checkpoint (a conservative plan: profiles, reservations, the view) resumes
    through the restricted unpickler, and the run equals the uninterrupted one."""
    resumed = simulate(eurora_case, interrupting("conservative")(), checkpoint=real_checkpoint)
    assert resumed.notes.checkpoint.resumed_at["t"] > 0  # (resumed, not run anew)
    assert_same_run(resumed, simulate(eurora_case, interrupting("conservative")()))


@pytest.mark.slow
def test_simulate_refuses_a_crafted_checkpoint_and_runs_nothing(tmp_path):
    """The audit's file, through the CLI: the header of a checkpoint `simulate --checkpoint`
    wrote itself (stopped by SIGTERM), followed by a pickle whose ``__reduce__`` calls
    ``os.system``. The command is refused with one line and the command never runs."""
    ckpt, out, marker = tmp_path / "run.ckpt", tmp_path / "out", tmp_path / "marker"
    args = [sys.executable, "-m", "hpcdispatch", "simulate", "-w"]
    args += ["synthetic:lublin,jobs=1500,seed=3,load=1.1", "-s", "machine-s", "-d"]
    args += ["conservative", "-o", str(out), "-q", "--checkpoint", str(ckpt)]
    args += ["--checkpoint-every", "0"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not ckpt.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 143, err
    assert ckpt.exists()
    header = _pickles(ckpt)[0]
    ckpt.write_bytes(header + pickle.dumps(_RunsCommand(f"touch {marker}")))
    done = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert f"error: {ckpt}: refused, not a checkpoint this code wrote: it names posix.system" in (
        done.stderr
    )
    assert not marker.exists()
    assert not out.exists()
