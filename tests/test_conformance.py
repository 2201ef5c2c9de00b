"""One conformance suite for every registered dispatcher (:mod:`hpcdispatch.testing`).

The dispatchers are found through the registry, so a new one is checked without being
listed here; and a test fails when a module of the package registers a dispatcher that the
suite did not collect (a module someone forgot to import in ``dispatchers/__init__.py``)."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import hpcdispatch
from hpcdispatch.dispatchers import DISPATCHERS
from hpcdispatch.protocol import Dispatcher, Scratch, Tags, register
from hpcdispatch.testing import CHECKS, check_dispatcher, checks, factories, run_check

pytestmark = pytest.mark.usefixtures("compiled_kernels")  # (tests/conftest.py)

#: what the suite collected: every registered dispatcher with each of its test parameter sets
SUITE = {name: cls for name, cls in sorted(DISPATCHERS.items())}
CASES = [
    pytest.param(name, k, check, id=f"{name}-p{k}-{check}")
    for name, cls in SUITE.items()
    for k, (params, make) in enumerate(factories(cls))
    for check in checks(make())
]


@pytest.mark.parametrize("name, k, check", CASES)
def test_conformance(name, k, check):
    params, make = factories(SUITE[name])[k]
    run_check(check, make, params)


def test_every_registered_dispatcher_is_in_the_suite():
    before = set(DISPATCHERS)
    for info in pkgutil.walk_packages(hpcdispatch.__path__, "hpcdispatch."):
        if not info.name.endswith("__main__"):  # (that one runs the command line)
            importlib.import_module(info.name)
    assert set(DISPATCHERS) - set(SUITE) == set(), (
        "registered but not collected by the conformance suite"
    )
    assert set(SUITE) >= {
        "fifo",
        "sjf",
        "easy",
        "conservative",
        "slurm-bf",
        "aucsched",
        "cp-rule",
        "hcp",
        "pcp19",
        "pcp20",
        "cp-hybrid",
    }
    assert before <= set(SUITE)


def test_the_tags_pick_the_checks():
    by_name = {
        name: {c for _, n, c in (p.values for p in CASES) if n == 0 and _ == name} for name in SUITE
    }
    assert "journal_resume" in by_name["easy"] and "journal_resume" not in by_name["conservative"]
    assert (
        "unsupported_jobs_refused" in by_name["hcp"]
        and "unsupported_jobs_refused" not in by_name["easy"]
    )
    assert "deterministic" in by_name["pcp20"]  # its test parameters use the deterministic limit
    assert "deterministic" not in by_name["aucsched"]  # a wall-clock solver limit
    assert set().union(*by_name.values()) == set(CHECKS)


class _ForgetsAJob(Dispatcher):
    """Never starts job 3: a stall the suite must catch."""

    name = "conformance-forgets"
    tags = Tags(memoryless=True)

    def _dispatch(self, view):
        scratch = Scratch(view, self._allocator)
        for job in view.queue:
            if job.id != 3:
                scratch.try_start(job)
        return scratch.starts


class _ClaimsMemorylessButCounts(Dispatcher):
    """Says it is memoryless but its decisions depend on how often it was called."""

    name = "conformance-counts"
    tags = Tags(memoryless=True)

    def _setup(self, system):
        self.calls = 0

    def _dispatch(self, view):
        self.calls += 1
        scratch = Scratch(view, self._allocator)
        if self.calls % 3 != 1 or not view.running:
            for job in view.queue:
                scratch.try_start(job)
        return scratch.starts


class _StoresDerivedParameters(Dispatcher):
    """Changes a parameter in __init__: sweeps could not clone it."""

    name = "conformance-derived"

    def __init__(self, allocator: str = "first-fit", width: int = 2):
        self.allocator = allocator
        self.width = width * 2

    def _dispatch(self, view):
        return []


@pytest.mark.parametrize(
    "cls, check, message",
    [
        (_ForgetsAJob, "valid_schedules", "SimulationStalledError: .* left .* queued"),
        (_ClaimsMemorylessButCounts, "journal_resume", "journal resumed after"),
        (_StoresDerivedParameters, "parameters", "does not store its parameters"),
    ],
)
def test_the_suite_catches_broken_dispatchers(cls, check, message):
    register(cls)
    try:
        with pytest.raises(AssertionError, match=message):
            run_check(check, lambda: cls(), {})
    finally:
        DISPATCHERS.pop(cls.name, None)


def test_check_dispatcher_accepts_an_instance_with_its_parameters():
    check_dispatcher(DISPATCHERS["fifo"](allocator="best-fit", blocking=False))
