"""The dispatchers known by name: ``@register`` adds a class, and a ten-line function can be
one (:func:`dispatcher_function`).

The registry holds classes only; the built-in dispatchers register themselves when
:mod:`hpcdispatch.dispatchers` is imported, plugins when their file is loaded
(:mod:`hpcdispatch.plugins`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hpcdispatch.errors import ConfigError
from hpcdispatch.protocol.decision import Start
from hpcdispatch.protocol.dispatcher import Dispatcher, Tags
from hpcdispatch.protocol.scratch import Scratch
from hpcdispatch.protocol.view import DispatchView

DISPATCHERS: dict[str, type[Dispatcher]] = {}


def register(cls: type[Dispatcher]) -> type[Dispatcher]:
    """Class decorator: make a dispatcher available by its ``name`` (CLI, sweeps)."""
    if cls.name in DISPATCHERS and DISPATCHERS[cls.name] is not cls:
        raise ConfigError(f"two dispatchers are registered as '{cls.name}'")
    DISPATCHERS[cls.name] = cls
    return cls


def dispatcher_class(name: str) -> type[Dispatcher]:
    """The registered class of ``name`` (case-insensitive); a clear error listing the
    registered names otherwise."""
    key = name.strip().lower()
    if key not in DISPATCHERS:
        raise ConfigError(
            f"unknown dispatcher '{name}'; available: {', '.join(sorted(DISPATCHERS))}"
        )
    return DISPATCHERS[key]


_DEFAULT_TAGS = Tags()


def dispatcher_function(
    name: str, tags: Tags = _DEFAULT_TAGS
) -> Callable[[Callable[..., Any]], type[Dispatcher]]:
    """Turn a ten-line function ``policy(view, scratch) -> None`` into a registered dispatcher.

    The function calls ``scratch.try_start(job)`` for the jobs it wants to start::

        @dispatcher_function("largest-first")
        def largest_first(view, scratch):
            for job in sorted(view.queue, key=lambda j: -j.units):
                scratch.try_start(job)
    """

    def wrap(fn: Callable[..., Any]) -> type[Dispatcher]:
        def _dispatch(self: Dispatcher, view: DispatchView) -> list[Start]:
            scratch = Scratch(view, self._allocator)
            fn(view, scratch)
            return scratch.starts

        cls = type(
            f"FunctionDispatcher_{name}",
            (Dispatcher,),
            {"name": name, "tags": tags, "_dispatch": _dispatch, "__doc__": fn.__doc__},
        )
        return register(cls)

    return wrap
