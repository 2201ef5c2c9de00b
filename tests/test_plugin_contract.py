"""The plugin contract: parameters are stored as given, clone/set_params work, the template
from docs/ADD_A_DISPATCHER.md and the function decorator give working dispatchers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import cores_system, job, simulate, starts

from hpcdispatch.dispatchers import DISPATCHERS, dispatcher_function, make_dispatcher, split_dispatcher_list
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
    assert split_dispatcher_list("fifo,sjf:allocator=best-fit,blocking=false,easy") == [
        "fifo", "sjf:allocator=best-fit,blocking=false", "easy"]
    with pytest.raises(ConfigError, match="must be bool"):
        make_dispatcher("fifo:blocking=perhaps")


def test_the_documented_template_works():
    code = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    namespace: dict = {}
    exec(compile(code[0], "ADD_A_DISPATCHER.md", "exec"), namespace)
    try:
        jobs = [job(1, 0, 5, units=2), job(2, 0, 5)]
        r = simulate(cores_system(2, 1), jobs, make_dispatcher("my-policy:threshold=2"))
        assert starts(r) == {1: 0, 2: 5}
        assert r.decisions["info"][-1] == {"calls": 2}
        # threshold 1: the 2-unit job is never started, which the simulator reports
        with pytest.raises(SimulationStalledError, match="first waiting job: 1"):
            simulate(cores_system(2, 1), jobs, make_dispatcher("my-policy:threshold=1"))
    finally:
        DISPATCHERS.pop("my-policy", None)


def test_function_dispatcher():
    @dispatcher_function("widest-first-test")
    def widest_first(view, scratch):
        for j in sorted(view.queue, key=lambda j: -j.units):
            scratch.try_start(j)

    try:
        r = simulate(cores_system(2, 1), [job(1, 0, 5), job(2, 0, 5, units=2)], make_dispatcher("widest-first-test"))
        assert starts(r) == {2: 0, 1: 5}
    finally:
        DISPATCHERS.pop("widest-first-test", None)
