"""What a user writes for a workload, parsed once into a typed :class:`WorkloadSpec`.

A spec is a file (``PATH``: SWF, ``.csv`` / ``.jsonl`` Slurm-style requests, sacct,
``.deadline.jsonl``) or a generator with typed options (``synthetic:NAME,key=value,...``:
``lublin``, ``aucsched``, ``kit``, ``eurora``, ``deadline``; the keys are listed in
:mod:`hpcdispatch.workload.loader`). The command line and the sweep build one value at their
boundary and hand it to :func:`~hpcdispatch.workload.loader.load_workload`::

    spec = WorkloadSpec.parse("synthetic:lublin,jobs=5000,seed=3")
    spec.generator, spec.options          # 'lublin', {'jobs': 5000, 'seed': 3}
    str(spec)                             # 'synthetic:lublin,jobs=5000,seed=3'

``WorkloadSpec.parse(str(spec)) == spec`` for every spec; ``str`` writes the canonical text
(booleans as 1/0, floats exactly), which is the spec a workload records as its source. Bad
keys and values are one-line :class:`~hpcdispatch.errors.ConfigError` s naming the spec.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from typing import Any, Literal, get_type_hints

from hpcdispatch.errors import ConfigError
from hpcdispatch.workload.deadline import (
    _JSONL_SUFFIX,
    DeadlineWorkloadParams,
    _deadline_values,
)
from hpcdispatch.workload.eurora import EuroraSpec
from hpcdispatch.workload.kit import KitSpec
from hpcdispatch.workload.lublin import LublinSpec
from hpcdispatch.workload.mapping import UnitMapping
from hpcdispatch.workload.slurm import AucschedSpec

_PREFIX = "synthetic:"
#: generator name -> (its parameter class, the preset system ``--system auto`` picks for it)
_GENERATORS: dict[str, tuple[type, str]] = {
    "lublin": (LublinSpec, "machine-s"),
    "aucsched": (AucschedSpec, "machine-s"),
    "deadline": (DeadlineWorkloadParams, "hlrn2-grid"),  # the deadline paper's machine (sec. 5)
    "kit": (KitSpec, "kit-forhlr2"),
    "eurora": (EuroraSpec, "eurora"),
}
_LUBLIN_TYPES = {
    "jobs": int,
    "seed": int,
    "load": float,
    "interactive": bool,
    "max_walltime": int,
    "p_max_walltime": float,
    "overestimate_max": float,
}
_AUCSCHED_TYPES = {
    "workload": str,
    "version": int,
    "seed": int,
    "runtime_h": float,
    "min_run": int,
    "max_run": int,
    "max_cores": int,
    "gpu_type": int,
    "walltime": str,
}


@dataclass(frozen=True)
class WorkloadSpec:
    """A workload source: a file (``kind="file"``, ``path``) or a generator (``kind="generator"``,
    ``generator`` and its typed ``options``, in the order given). Build it with :meth:`parse`,
    :meth:`file` or :meth:`synthetic`; ``str(spec)`` is its canonical text."""

    kind: Literal["file", "generator"]
    path: str | None = None
    generator: str | None = None
    options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind == "file":
            if not self.path or self.generator is not None or self.options:
                raise ConfigError("a file workload spec takes a path and nothing else")
        elif self.kind == "generator":
            if self.generator not in _GENERATORS or self.path is not None:
                raise ConfigError(
                    f"workload '{_PREFIX}{self.generator}': unknown synthetic model "
                    f"'{self.generator}' (available: {', '.join(_GENERATORS)})"
                )
        else:
            raise ConfigError(
                f"workload spec kind must be 'file' or 'generator', got {self.kind!r}"
            )

    def __hash__(self) -> int:
        return hash((self.kind, self.path, self.generator, tuple(self.options.items())))

    @classmethod
    def file(cls, path: str | os.PathLike[str]) -> WorkloadSpec:
        """A workload file, as written (existence is checked when it is loaded)."""
        return cls("file", path=os.fspath(path))

    @classmethod
    def synthetic(cls, generator: str, options: dict[str, Any]) -> WorkloadSpec:
        """A generator with typed options (checked by building the generator's parameters)."""
        spec = cls("generator", generator=generator, options=dict(options))
        spec.params()
        return spec

    @classmethod
    def parse(cls, text: str | os.PathLike[str] | WorkloadSpec) -> WorkloadSpec:
        """``PATH`` or ``synthetic:NAME,key=value,...`` -> a spec (a spec is returned as is)."""
        if isinstance(text, WorkloadSpec):
            return text
        text = os.fspath(text)
        if not text.startswith(_PREFIX):
            return cls.file(text)
        name, _, rest = text[len(_PREFIX) :].partition(",")
        name = name.strip()
        where = f"workload '{text}'"
        if name == "lublin":
            options = _typed(_key_values(rest, where), _LUBLIN_TYPES, where)
        elif name == "aucsched":
            options = _typed(_key_values(rest, where), _AUCSCHED_TYPES, where)
            if "workload" in options:
                options["workload"] = str(options["workload"]).upper()
        elif name == "deadline":
            options = _deadline_values(text)
        elif name in _GENERATORS:
            options = _dataclass_values(rest, _GENERATORS[name][0], where)
        else:
            raise ConfigError(
                f"{where}: unknown synthetic model '{name}' (available: {', '.join(_GENERATORS)})"
            )
        spec = cls("generator", generator=name, options=options)
        spec.params()  # the generator's own checks, now rather than when it is loaded
        return spec

    def __str__(self) -> str:
        if self.kind == "file":
            return str(self.path)
        short = self.generator == "aucsched"  # (written as AucschedSpec.spec_string does)
        return f"{_PREFIX}{self.generator}" + "".join(
            f",{k}={_format(v, short)}" for k, v in self.options.items()
        )

    @property
    def is_generator(self) -> bool:
        """True for ``synthetic:...``."""
        return self.kind == "generator"

    @property
    def is_deadline(self) -> bool:
        """Deadline jobs: ``synthetic:deadline`` or a ``.deadline.jsonl`` file."""
        if self.kind == "generator":
            return self.generator == "deadline"
        return str(self.path).lower().endswith(_JSONL_SUFFIX)

    @property
    def default_system(self) -> str | None:
        """The preset ``--system auto`` picks for a generator (``None`` for a file)."""
        return _GENERATORS[self.generator][1] if self.generator else None

    def params(self, units: UnitMapping | None = None) -> Any:
        """The generator's parameter object (:class:`LublinSpec` with ``units``, ...)."""
        if self.generator is None:
            raise ConfigError(f"workload '{self}' is a file, not a generator")
        cls = _GENERATORS[self.generator][0]
        if cls is LublinSpec:
            return LublinSpec(units=units or UnitMapping(), **self.options)
        return cls(**self.options)


def _format(value: Any, short: bool) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        text = repr(value)
        return text[:-2] if short and text.endswith(".0") else text
    return str(value)


def _key_values(text: str, where: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        if "=" not in part:
            raise ConfigError(f"{where}: expected key=value, got '{part}'")
        k, v = part.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def _convert(value: str, target: Any, key: str, where: str) -> Any:
    try:
        if target is bool:
            if value.lower() in ("1", "true", "yes", "on"):
                return True
            if value.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(value)
        if target is int:
            return int(value)
        if target is float:
            return float(value)
    except ValueError:
        raise ConfigError(f"{where}: '{key}' must be {target.__name__}, got '{value}'") from None
    return value


def _typed(raw: dict[str, str], types: dict[str, type], where: str) -> dict[str, Any]:
    unknown = set(raw) - set(types)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {sorted(unknown)}; known: {', '.join(types)}")
    return {k: _convert(v, types[k], k, where) for k, v in raw.items()}


def _dataclass_values(text: str, cls: type, where: str) -> dict[str, Any]:
    """``key=value,...`` converted by the fields' types of ``cls`` (``float | None`` fields
    take a float); unknown keys and bad values are one-line errors."""
    raw = _key_values(text, where)
    hints = get_type_hints(cls)
    known = [f.name for f in fields(cls)]
    unknown = sorted(set(raw) - set(known))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; known: {', '.join(known)}")
    values = {}
    for key, value in raw.items():
        target = hints[key]
        base = next(
            (
                t
                for t in (bool, int, float, str)
                if target is t or t in getattr(target, "__args__", ())
            ),
            str,
        )
        values[key] = _convert(value, base, key, where)
    return values
