"""A dispatcher as a user names it, parsed once into a typed value.

Text (command line, ``--dispatchers`` lists, dispatcher suffixes): ``easy``,
``easy:allocator=best-fit``, ``easy-L2`` (a predictor suffix: W, L2, D, R),
``sjf-R:allocator=best-fit,blocking=false``. A list is comma-separated, and ``key=value``
items after a ``name:key=value`` belong to that dispatcher: ``fifo,easy:allocator=best-fit,
blocking=false`` is invalid (easy has no ``blocking``) while ``sjf:allocator=best-fit,
blocking=false,easy`` names two. Values are converted to the type of the parameter's default.

A value may be quoted (``key="a,b"`` or ``key='a,b'``) to hold commas. A dispatcher's
text keys (``Dispatcher.TEXT_TAIL_KEYS``, e.g. slurm-bf's ``scheduler_parameters``) take
the rest of a single spec unquoted: ``slurm-bf:scheduler_parameters=bf_window=2880,bf_continue``;
in a list, quote them.

Tables (sweep files): ``{ name = "sjf", blocking = false, label = "sjf-nb", predictor = "L2" }``;
the values keep their TOML types, which must be the parameters' types (an integer is
accepted for a float parameter).

Either way the result is a :class:`DispatcherSpec` -- name, the parameters given (typed),
the predictor a suffix named, a label -- which the CLI, sweeps and the runner pass around.
What a run stores of its dispatcher is :meth:`Dispatcher.identity` (name and every
parameter), data that is compared as data and never parsed back.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hpcdispatch.allocators.registry import canonical_allocator
from hpcdispatch.errors import ConfigError
from hpcdispatch.predictors import predictor_class
from hpcdispatch.protocol.dispatcher import Dispatcher
from hpcdispatch.protocol.registry import DISPATCHERS, dispatcher_class

#: keys of a sweep table that are not dispatcher parameters
TABLE_KEYS = ("name", "label", "predictor")


@dataclass(frozen=True)
class DispatcherSpec:
    """A registered dispatcher ``name`` with the ``params`` given (typed as the dispatcher's
    parameters; the others keep their defaults), the ``predictor`` a suffix or a table named
    (``None``: the run's default), the ``label`` a sweep table gave, and the text as
    ``written`` (only for labels: output directories are named after what the user wrote)."""

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)
    predictor: str | None = None
    label: str | None = None
    written: str = ""

    def __post_init__(self) -> None:
        cls = dispatcher_class(self.name)
        object.__setattr__(self, "name", cls.name)
        object.__setattr__(self, "params", cls.expand_params(dict(self.params)))
        unknown = [k for k in self.params if k not in cls.param_names()]
        if unknown:
            raise ConfigError(
                f"dispatcher '{cls.name}' has no parameter '{unknown[0]}' "
                f"(parameters: {', '.join(cls.param_names())})"
            )
        if not self.written:
            object.__setattr__(self, "written", self.text)

    @property
    def run_label(self) -> str:
        """The label of a run of this spec (predictor suffix included): the given label, or
        the written text made file-system friendly (``easy:allocator=best-fit`` ->
        ``easy-allocator_best-fit``)."""
        return self.label or label_for(self.written)

    @property
    def display_label(self) -> str:
        """A label for people (tables, legends): the given label, or the written name with its
        parameters in brackets, an allocator by its name alone (``easy:allocator=best-fit`` ->
        ``easy (best-fit)``, ``pcp20-R:budget=stall,stall=0.01`` -> ``pcp20-R (budget=stall,
        stall=0.01)``). :attr:`run_label` stays the directory name."""
        if self.label:
            return self.label
        head, _, rest = self.written.strip().partition(":")
        tail_keys = {k.lower() for k in dispatcher_class(self.name).TEXT_TAIL_KEYS}
        parts = [
            str(self.params.get("allocator", v)) if k.lower() == "allocator" else f"{k}={v}"
            for k, v in _items(rest, tail_keys, self.written)
        ]
        return f"{head.strip()} ({', '.join(parts)})" if parts else head.strip()

    @property
    def dispatcher_label(self) -> str:
        """The label of the dispatcher alone (a sweep adds the predictor to it)."""
        if self.label:
            return self.label
        head, sep, rest = self.written.partition(":")
        return label_for(split_suffix(head.strip())[0] + sep + rest)

    # ---- parsing -------------------------------------------------------------------------
    @classmethod
    def parse(cls, text: str) -> DispatcherSpec:
        """``name[-P][:key=value,...]`` (see the module docstring)."""
        head, _, rest = text.strip().partition(":")
        name, predictor = split_suffix(head.strip())
        dcls = dispatcher_class(name)
        tail_keys = {k.lower() for k in dcls.TEXT_TAIL_KEYS}
        params: dict[str, Any] = {}
        for key, value in _items(rest, tail_keys, text):
            params[key] = value if key.lower() in tail_keys else _convert(dcls, key, value)
        return cls(dcls.name, _canonical(params), predictor, None, text.strip())

    @classmethod
    def from_table(cls, table: Mapping[str, Any]) -> DispatcherSpec:
        """A sweep file's dispatcher table: ``name`` (with an optional predictor suffix),
        optional ``label`` and ``predictor``, and parameters with their own types."""
        if "name" not in table:
            raise ConfigError("a dispatcher table needs 'name'")
        if not isinstance(table["name"], str):
            raise ConfigError(f"'name' must be a dispatcher name, got {table['name']!r}")
        name, predictor = split_suffix(table["name"].strip())
        if table.get("predictor") is not None:
            if not isinstance(table["predictor"], str):
                raise ConfigError(
                    f"'predictor' must be a predictor name, got {table['predictor']!r}"
                )
            if predictor is not None:
                raise ConfigError(
                    f"'{table['name']}' already names a predictor; drop 'predictor' or the suffix"
                )
            pcls = predictor_class(table["predictor"])
            if pcls is None:
                raise ConfigError(f"unknown predictor '{table['predictor']}'")
            predictor = pcls.name
        label = table.get("label") or None
        if label is not None and not isinstance(label, str):
            raise ConfigError(f"'label' must be a string, got {label!r}")
        dcls = dispatcher_class(name)
        tail_keys = {k.lower() for k in dcls.TEXT_TAIL_KEYS}
        params = {
            k: v if k.lower() in tail_keys else _check_type(dcls, k, v)
            for k, v in table.items()
            if k not in TABLE_KEYS
        }
        return cls(dcls.name, _canonical(params), predictor, label)

    # ---- use -----------------------------------------------------------------------------
    def with_defaults(self, **params: Any) -> DispatcherSpec:
        """This spec with ``params`` added where the dispatcher has them and the spec does not
        set them (the CLI's ``--allocator``, ``--version``, ``--dump-instances``)."""
        names = dispatcher_class(self.name).param_names()
        extra = {k: v for k, v in params.items() if k in names and k not in self.params}
        if not extra:
            return self
        return DispatcherSpec(
            self.name, {**self.params, **extra}, self.predictor, self.label, self.written
        )

    def build(self) -> Dispatcher:
        """A new dispatcher instance with these parameters."""
        return dispatcher_class(self.name)(**self.params)

    def identity(self) -> dict[str, Any]:
        """The dispatcher's identity (name and every parameter, defaults included)."""
        return self.build().identity()

    def cell_identity(self) -> dict[str, Any]:
        """What keys a sweep cell: the identity without later-added parameters at the value
        they were added with (:meth:`Dispatcher.cell_identity`)."""
        return self.build().cell_identity()

    @property
    def text(self) -> str:
        """The spec as it would be written: ``name[-P][:key=value,...]``."""
        head = self.name
        if self.predictor is not None:
            pcls = predictor_class(self.predictor)
            head += f"-{pcls.short if pcls is not None else self.predictor}"
        if self.params:
            head += ":" + ",".join(f"{k}={_value_text(v)}" for k, v in self.params.items())
        return head


def parse_dispatcher_list(text: str) -> list[DispatcherSpec]:
    """``a,b:k=v,k2=v2,c`` -> three specs (see the module docstring)."""
    return [DispatcherSpec.parse(p) for p in split_dispatcher_list(text)]


def split_dispatcher_list(text: str) -> list[str]:
    """``a,b:k=v,k2=v2,c`` -> ``["a", "b:k=v,k2=v2", "c"]`` (the specs' texts)."""
    pieces: list[str] = []
    for token in filter(None, (t.strip() for t in _split_outside_quotes(text))):
        if "=" in token and ":" not in token:
            if not pieces:
                raise ConfigError(
                    f"dispatcher list '{text}': parameter '{token}' comes before any dispatcher"
                )
            pieces[-1] += "," + token
        else:
            pieces.append(token)
    return pieces


def make_dispatcher(spec: str | DispatcherSpec, **defaults: Any) -> Dispatcher:
    """One dispatcher from a spec (``defaults``: parameters set where the spec does not)."""
    parsed = spec if isinstance(spec, DispatcherSpec) else DispatcherSpec.parse(spec)
    if parsed.predictor is not None:
        raise ConfigError(
            f"'{parsed.written}' names a predictor ({parsed.predictor}): a dispatcher has none; "
            "give the spec to hpcdispatch.simulate or the runner, or drop the suffix"
        )
    return parsed.with_defaults(**defaults).build()


def label_for(text: str) -> str:
    """A file-system friendly label for a spec's text: ``easy:allocator=best-fit`` ->
    ``easy-allocator_best-fit``."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text.replace("=", "_")).strip("-")


# ---- helpers ---------------------------------------------------------------------------
def _split_outside_quotes(text: str) -> list[str]:
    """``text`` split at the commas that are not inside quotes (quotes kept)."""
    out: list[str] = []
    current: list[str] = []
    quote: str | None = None
    for ch in text:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch == ",":
            out.append("".join(current))
            current = []
            continue
        current.append(ch)
    out.append("".join(current))
    return out


def _items(rest: str, tail_keys: set[str], text: str) -> list[tuple[str, str]]:
    """``key=value`` items of a spec's parameter part: a quoted value keeps its commas, an
    unquoted value of a key in ``tail_keys`` runs to the end."""
    items: list[tuple[str, str]] = []
    i, n = 0, len(rest)
    while i < n:
        if rest[i] in ", \t":
            i += 1
            continue
        eq = rest.find("=", i)
        comma = rest.find(",", i)
        if eq < 0 or 0 <= comma < eq:
            item = rest[i : comma if comma >= 0 else n].strip()
            raise ConfigError(f"dispatcher spec '{text}': expected key=value, got '{item}'")
        key = rest[i:eq].strip()
        k = eq + 1
        while k < n and rest[k] == " ":
            k += 1
        if k < n and rest[k] in "\"'":
            end = rest.find(rest[k], k + 1)
            if end < 0:
                raise ConfigError(
                    f"dispatcher spec '{text}': the quote after '{key}=' is not closed"
                )
            value, i = rest[k + 1 : end], end + 1
            if rest[i:].strip() and not rest[i:].lstrip().startswith(","):
                raise ConfigError(
                    f"dispatcher spec '{text}': text after the quoted value of '{key}'"
                )
        elif key.lower() in tail_keys:
            value, i = rest[k:].strip(), n
        else:
            end = rest.find(",", k)
            end = n if end < 0 else end
            value, i = rest[k:end].strip(), end
        items.append((key, value))
    return items


def _canonical(params: dict[str, Any]) -> dict[str, Any]:
    """Parameters with an allocator given by an alias (``bestfit``) under its registered name
    (``best-fit``), so that a run records, labels and hashes one spelling."""
    if isinstance(params.get("allocator"), str):
        try:
            params = {**params, "allocator": canonical_allocator(params["allocator"])}
        except ConfigError:
            pass  # an unknown name: the dispatcher's parameter constraints name the choices
    return params


def split_suffix(head: str) -> tuple[str, str | None]:
    """``easy-L2`` -> ``("easy", "last-two")``; a registered name with a dash stays whole
    (``cp-rule``). A suffix after a registered name that is no predictor (``easy-L3``) is an
    error naming the predictors, not an unknown dispatcher."""
    base, dash, suffix = head.rpartition("-")
    if dash and base and len(suffix) <= 3:
        pcls = predictor_class(suffix)
        if pcls is not None:
            return base, pcls.name
        if head.lower() not in DISPATCHERS and base.lower() in DISPATCHERS:
            from hpcdispatch.predictors import PREDICTORS

            known = ", ".join(c.short for c in PREDICTORS.values())
            raise ConfigError(
                f"'{head}': '{suffix}' is not a predictor (a dispatcher's suffix names one of "
                f"{known}); dispatcher '{base}' exists"
            )
    return head, None


def _default(cls: type[Dispatcher], key: str) -> Any:
    defaults = cls.param_defaults()
    if key not in defaults:
        raise ConfigError(
            f"dispatcher '{cls.name}' has no parameter '{key}' "
            f"(parameters: {', '.join(cls.param_names())})"
        )
    return defaults[key]


def _convert(cls: type[Dispatcher], key: str, value: str) -> Any:
    """``value`` (text) as the type of the parameter's default."""
    default = _default(cls, key)
    kind: type = (
        type(default) if default is not inspect.Parameter.empty and default is not None else str
    )
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
        raise ConfigError(
            f"dispatcher '{cls.name}': parameter '{key}' must be {kind.__name__}, got '{value}'"
        ) from None
    if default is None and value.lower() in ("none", "null"):
        return None
    if default is None:
        for conv in (int, float):
            try:
                return conv(value)
            except ValueError:
                pass
    return value


def _check_type(cls: type[Dispatcher], key: str, value: Any) -> Any:
    """A table value with the parameter's type (an int is accepted for a float)."""
    default = _default(cls, key)
    if default is inspect.Parameter.empty or default is None:
        if not isinstance(value, (str, int, float, bool)) and value is not None:
            raise ConfigError(f"parameter '{key}' must be a plain value, got {value!r}")
        return value
    kind = type(default)
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if type(value) is not kind:
        raise ConfigError(
            f"parameter '{key}' = {value!r} must be {kind.__name__} "
            f"(like its default, {default!r}); give it with the parameter's type"
        )
    return value


def _value_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "none"
    if isinstance(value, str) and ("," in value or ":" in value) and '"' not in value:
        return f'"{value}"'
    return repr(value) if isinstance(value, float) else str(value)
