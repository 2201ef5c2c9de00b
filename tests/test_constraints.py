"""Parameter constraints (protocol/constraints.py): each kind, the one message, and that every
registered dispatcher declares a constraint for every parameter its ``__init__`` takes."""

from __future__ import annotations

import inspect

import pytest

import hpcdispatch.dispatchers  # noqa: F401 (registers the built-in dispatchers)
from hpcdispatch.allocators import BestFit
from hpcdispatch.dispatchers import make_dispatcher
from hpcdispatch.errors import ConfigError
from hpcdispatch.protocol import (
    ALLOCATOR,
    DISPATCHERS,
    Boolean,
    Interval,
    OneOf,
    Text,
    check_params,
    check_value,
    dispatcher_class,
)
from hpcdispatch.protocol.constraints import allows, describe_constraint
from hpcdispatch.system import load_system


def test_one_of_takes_the_listed_values_only_and_names_them():
    c = OneOf("fifo", "edf")
    assert c.allows("fifo") and c.allows("edf")
    assert not c.allows("lifo") and not c.allows(None)
    assert c.describe() == "one of fifo, edf"
    # True == 1 in Python, but a flag is not a version number
    assert OneOf(1, 2, 3).allows(2) and not OneOf(1, 2, 3).allows(True)
    assert not OneOf(1, 2, 3).allows(2.0)


@pytest.mark.parametrize(
    "constraint, inside, outside, words",
    [
        (Interval(int, 1, None), [1, 7, 10**12], [0, -3, 1.0, True, "2"], "a whole number >= 1"),
        (
            Interval(float, 0, None, closed="neither", unit="seconds"),
            [1e-9, 3, 2.5],
            [0, 0.0, -1.0, float("nan"), float("inf"), False, "1"],
            "a number > 0 (seconds)",
        ),
        (
            Interval(float, 0, 1, closed="left"),
            [0, 0.0, 0.5, 0.999],
            [1, 1.0, -0.01, float("nan")],
            "a number in [0, 1)",
        ),
        (Interval(int, -1, 2), [-1, 0, 2], [-2, 3], "a whole number in [-1, 2]"),
        (
            Interval(float, None, None),
            [0, -5.5, 1e300],
            [float("inf"), float("-inf"), float("nan"), None],
            "a finite number",
        ),
        (Interval(float, None, 10, closed="neither"), [9.9, -1e9], [10, 11], "a number < 10"),
    ],
)
def test_interval_bounds_kinds_and_words(constraint, inside, outside, words):
    assert all(constraint.allows(v) for v in inside), [
        v for v in inside if not constraint.allows(v)
    ]
    assert not any(constraint.allows(v) for v in outside), [
        v for v in outside if constraint.allows(v)
    ]
    assert constraint.describe() == words


def test_boolean_is_true_or_false_not_zero_or_one():
    assert Boolean().allows(True) and Boolean().allows(False)
    assert not Boolean().allows(1) and not Boolean().allows("true")
    assert Boolean().describe() == "true or false"


def test_text_is_a_string():
    assert Text().allows("") and Text().allows("a,b")
    assert not Text().allows(3) and not Text().allows(None)


def test_allocator_takes_names_as_make_allocator_does_and_instances():
    for name in ("first-fit", "best-fit", "slurm-linear", "bf", "Best_Fit", "slurm"):
        assert ALLOCATOR.allows(name), name
    assert ALLOCATOR.allows(BestFit())
    assert not ALLOCATOR.allows("worst-fit") and not ALLOCATOR.allows(3)
    assert ALLOCATOR.describe() == "one of best-fit, first-fit, slurm-linear"


def test_a_list_is_any_one_of_them_and_none_is_the_value_none():
    spec = [Text(), None]
    assert allows(spec, "dir") and allows(spec, None) and not allows(spec, 3)
    assert describe_constraint(spec) == "text or none"


def test_one_message_naming_owner_parameter_what_it_accepts_and_the_value():
    with pytest.raises(ConfigError) as err:
        check_value("dispatcher 'leak'", "order", "lifo", OneOf("fifo", "edf"))
    assert str(err.value) == "dispatcher 'leak': order must be one of fifo, edf, got 'lifo'"
    # check_params: only the declared parameters, in the declaration's order
    constraints = {"a": Interval(int, 0, None), "b": Boolean()}
    check_params("x", {"a": 1, "b": True, "undeclared": object()}, constraints)
    with pytest.raises(ConfigError, match=r"^x: a must be a whole number >= 0, got -1$"):
        check_params("x", {"b": "no", "a": -1}, constraints)


@pytest.mark.parametrize(
    "spec, message",
    [
        (
            "pcp20:budget=often",
            "dispatcher 'pcp20': budget must be one of none, stall, gap, got 'often'",
        ),
        (
            "hcp:on_unplaced=later",
            "dispatcher 'hcp': on_unplaced must be one of default, resolve, postpone",
        ),
        ("cp-rule:version=4", "dispatcher 'cp-rule': version must be one of 1, 2, 3, got 4"),
        ("pcp19:gap=1", "dispatcher 'pcp19': gap must be a number in [0, 1), got 1.0"),
        ("hcp:reserve=-1", "dispatcher 'hcp': reserve must be a whole number >= 0, got -1"),
        (
            "conservative:profile=tree",
            "dispatcher 'conservative': profile must be one of auto, node",
        ),
        (
            "manhattan:starts=last",
            "dispatcher 'manhattan': starts must be one of first, all, median",
        ),
        ("hilbert:fit=worst", "dispatcher 'hilbert': fit must be one of first, best, got 'worst'"),
        (
            "slurm-bf:priority=fair",
            "dispatcher 'slurm-bf': priority must be one of basic, age, multifactor",
        ),
        (
            "aucsched:priority_base=0.5",
            "dispatcher 'aucsched': priority_base must be a number >= 1, got 0.5",
        ),
        (
            "easy:allocator=worst-fit",
            "dispatcher 'easy': allocator must be one of best-fit, first-fit, slurm-linear",
        ),
    ],
)
def test_registered_dispatchers_refuse_bad_values_at_setup_in_one_line(spec, message):
    d = make_dispatcher(spec)
    with pytest.raises(ConfigError) as err:
        d.setup(load_system("machine-s"))
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


def test_cross_parameter_rules_stay_with_the_dispatcher():
    with pytest.raises(ConfigError, match=r"delta_max must be >= delta \(2\), got 1.0"):
        make_dispatcher("pcp20:delta=2,delta_max=1").setup(load_system("machine-s"))


BUILT_IN = sorted(
    n for n in DISPATCHERS if dispatcher_class(n).__module__.startswith("hpcdispatch.")
)


@pytest.mark.parametrize("name", BUILT_IN)
def test_every_registered_dispatcher_declares_every_parameter(name):
    """Conformance: a constraint for each ``__init__`` parameter, none for a parameter that does
    not exist, and every default satisfies its own constraint."""
    cls = dispatcher_class(name)
    params = cls.param_defaults()
    declared = cls.parameter_constraints
    assert sorted(set(params) - set(declared)) == [], "parameters without a constraint"
    assert sorted(set(declared) - set(params)) == [], "constraints of no parameter"
    for key, default in params.items():
        assert default is not inspect.Parameter.empty, key
        assert allows(declared[key], default), (key, default, describe_constraint(declared[key]))
    # and the conformance suite's parameter sets pass them too
    for extra in cls.test_params():
        check_params(f"dispatcher '{name}'", {**params, **extra}, declared)


def test_the_registry_holds_the_built_in_dispatchers():
    assert len(BUILT_IN) >= 16 and {"easy", "pcp20", "slurm-bf", "leak"} <= set(BUILT_IN)
