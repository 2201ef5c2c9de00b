"""Parameter constraints, declared once per dispatcher and checked by one helper.

In the spirit of scikit-learn's ``_parameter_constraints``: a dispatcher declares what each
``__init__`` parameter accepts, and :meth:`Dispatcher.setup` checks them all with
:func:`check_params` before ``_setup`` runs::

    class MyDispatcher(Dispatcher):
        parameter_constraints = {
            "allocator": ALLOCATOR,
            "order": OneOf("fifo", "edf"),
            "delta": Interval(float, 0, None, closed="neither"),
            "dump": [Text(), None],       # a list: any one of them (None: the value None)
        }

A value that fits none of its parameter's constraints is one line naming the dispatcher,
the parameter, what it accepts and the value given:
``dispatcher 'leak': order must be one of fifo, edf, got 'lifo'``. Checks between several
parameters (``delta_max >= delta``) stay in the dispatcher's ``_setup``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any, Literal

from hpcdispatch.allocators import ALLOCATORS, Allocator
from hpcdispatch.allocators.registry import ALIASES
from hpcdispatch.errors import ConfigError


class Constraint:
    """What one parameter accepts: :meth:`allows` a value, :meth:`describe` says what in words."""

    def allows(self, value: Any) -> bool:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True, init=False)
class OneOf(Constraint):
    """One of the given values (compared with ``==``; ``True`` is not ``1`` here)."""

    values: tuple[Any, ...]

    def __init__(self, *values: Any) -> None:
        object.__setattr__(self, "values", values)

    def allows(self, value: Any) -> bool:
        return any(type(value) is type(v) and value == v for v in self.values)

    def describe(self) -> str:
        return "one of " + ", ".join(str(v) for v in self.values)


@dataclass(frozen=True)
class Interval(Constraint):
    """A number of ``kind`` (``int``: a whole number, never a bool; ``float``: any real number,
    ints included) between ``left`` and ``right`` (None: unbounded on that side), the ends
    included as ``closed`` says. An infinite value is allowed only by an infinite bound.
    ``unit`` (``"seconds"``) is named in the message."""

    kind: type[int] | type[float]
    left: float | None
    right: float | None
    closed: Literal["both", "left", "right", "neither"] = "both"
    unit: str = ""

    def allows(self, value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, Integral if self.kind is int else Real):
            return False
        x = float(value)
        if math.isnan(x):
            return False
        if self.left is None:
            above = not math.isinf(x) or x > 0
        else:
            above = x > self.left or (x == self.left and self.closed in ("both", "left"))
        if self.right is None:
            below = not math.isinf(x) or x < 0
        else:
            below = x < self.right or (x == self.right and self.closed in ("both", "right"))
        return above and below

    def describe(self) -> str:
        what = "a whole number" if self.kind is int else "a number"
        low = ">=" if self.closed in ("both", "left") else ">"
        high = "<=" if self.closed in ("both", "right") else "<"
        if self.left is not None and self.right is not None:
            lb = "[" if low == ">=" else "("
            rb = "]" if high == "<=" else ")"
            text = f"{what} in {lb}{_number(self.left)}, {_number(self.right)}{rb}"
        elif self.left is not None:
            text = f"{what} {low} {_number(self.left)}"
        elif self.right is not None:
            text = f"{what} {high} {_number(self.right)}"
        else:
            text = f"a finite {what.removeprefix('a ')}"
        return f"{text} ({self.unit})" if self.unit else text


def _number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else f"{x:g}"


@dataclass(frozen=True)
class Boolean(Constraint):
    """``True`` or ``False`` (not 0 or 1)."""

    def allows(self, value: Any) -> bool:
        return isinstance(value, bool)

    def describe(self) -> str:
        return "true or false"


@dataclass(frozen=True)
class Text(Constraint):
    """Any text."""

    def allows(self, value: Any) -> bool:
        return isinstance(value, str)

    def describe(self) -> str:
        return "text"


@dataclass(frozen=True)
class AllocatorName(Constraint):
    """An allocator's name (``make_allocator``'s: any case, ``_`` for ``-``, short aliases)
    or an :class:`~hpcdispatch.allocators.Allocator` instance."""

    def allows(self, value: Any) -> bool:
        if isinstance(value, Allocator):
            return True
        if not isinstance(value, str):
            return False
        key = value.lower().replace("_", "-")
        return ALIASES.get(key, key) in ALLOCATORS

    def describe(self) -> str:
        return "one of " + ", ".join(sorted(ALLOCATORS))


#: the constraint of every dispatcher's ``allocator`` parameter
ALLOCATOR = AllocatorName()

#: one constraint, or a list of them of which the value must satisfy one (``None`` in the
#: list: the value ``None``)
ParamConstraint = Constraint | Sequence["Constraint | None"]


def _as_list(spec: ParamConstraint) -> list[Constraint | None]:
    return [spec] if isinstance(spec, Constraint) else list(spec)


def describe_constraint(spec: ParamConstraint) -> str:
    """What ``spec`` accepts, in words: ``one of fifo, edf``; ``text or none``."""
    return " or ".join("none" if c is None else c.describe() for c in _as_list(spec))


def allows(spec: ParamConstraint, value: Any) -> bool:
    """Whether ``value`` satisfies ``spec`` (one of its constraints, when it is a list)."""
    return any(value is None if c is None else c.allows(value) for c in _as_list(spec))


def check_value(owner: str, name: str, value: Any, spec: ParamConstraint) -> None:
    """Raise :class:`~hpcdispatch.errors.ConfigError` (one line: ``{owner}: {name} must be
    {what it accepts}, got {value!r}``) unless ``value`` satisfies ``spec``."""
    if not allows(spec, value):
        raise ConfigError(f"{owner}: {name} must be {describe_constraint(spec)}, got {value!r}")


def check_params(
    owner: str, params: Mapping[str, Any], constraints: Mapping[str, ParamConstraint]
) -> None:
    """Check every parameter of ``params`` that ``constraints`` declares (:func:`check_value`),
    in the order of ``constraints``."""
    for name, spec in constraints.items():
        if name in params:
            check_value(owner, name, params[name], spec)
