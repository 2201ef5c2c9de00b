"""Build dispatchers from strings: ``easy``, ``easy:allocator=best-fit``, lists of them.

A list is comma-separated; ``key=value`` items after a ``name:key=value`` belong to that
dispatcher: ``fifo,easy:allocator=best-fit,blocking=false`` is invalid (easy has no
``blocking``) while ``sjf:allocator=best-fit,blocking=false,easy`` gives two dispatchers.
Values are converted to the type of the parameter's default.
"""

from __future__ import annotations

import inspect
from typing import Any

from hpcdispatch.dispatchers.base import DISPATCHERS, Dispatcher
from hpcdispatch.errors import ConfigError


def _convert(cls: type[Dispatcher], key: str, value: str) -> Any:
    params = inspect.signature(cls.__init__).parameters
    if key not in params or key == "self":
        known = [p for p in params if p != "self"]
        raise ConfigError(f"dispatcher '{cls.name}' has no parameter '{key}' (parameters: {', '.join(known)})")
    default = params[key].default
    kind = type(default) if default is not inspect.Parameter.empty and default is not None else str
    try:
        if kind is bool:
            low = value.lower()
            if low in ("1", "true", "yes", "on"):
                return True
            if low in ("0", "false", "no", "off"):
                return False
            raise ValueError(value)
        if kind in (int, float):
            return kind(value)
    except ValueError:
        raise ConfigError(f"dispatcher '{cls.name}': parameter '{key}' must be {kind.__name__}, got '{value}'") from None
    if default is None and value.lower() in ("none", "null"):
        return None
    if default is None:
        for conv in (int, float):
            try:
                return conv(value)
            except ValueError:
                pass
    return value


def dispatcher_class(name: str) -> type[Dispatcher]:
    key = name.strip().lower()
    if key not in DISPATCHERS:
        raise ConfigError(f"unknown dispatcher '{name}'; available: {', '.join(sorted(DISPATCHERS))}")
    return DISPATCHERS[key]


def make_dispatcher(spec: str, **overrides: Any) -> Dispatcher:
    """One dispatcher from ``name`` or ``name:key=value,key=value``."""
    name, _, rest = spec.partition(":")
    cls = dispatcher_class(name)
    params: dict[str, Any] = {}
    for item in filter(None, (x.strip() for x in rest.split(","))):
        if "=" not in item:
            raise ConfigError(f"dispatcher spec '{spec}': expected key=value, got '{item}'")
        key, value = item.split("=", 1)
        params[key.strip()] = _convert(cls, key.strip(), value.strip())
    for key, value in overrides.items():
        if key in cls.param_names() and key not in params:
            params[key] = value
    return cls(**params)


def split_dispatcher_list(text: str) -> list[str]:
    """Split ``a,b:k=v,k2=v2,c`` into ``["a", "b:k=v,k2=v2", "c"]``."""
    specs: list[str] = []
    for token in filter(None, (t.strip() for t in text.split(","))):
        if "=" in token and ":" not in token:
            if not specs:
                raise ConfigError(f"dispatcher list '{text}': parameter '{token}' comes before any dispatcher")
            specs[-1] += "," + token
        else:
            specs.append(token)
    return specs
