"""A sweep declared in TOML: systems x workloads x dispatchers x predictors x repetitions.

The schema, with a commented example, is in ``docs/SWEEPS.md``; every key except
``workloads`` and ``dispatchers`` is optional::

    name = "baselines"
    dispatchers = ["fifo", "easy:allocator=best-fit", { name = "sjf", blocking = false }]
    [simulation]
    walltime_kill = true
    [[workloads]]
    generator = "lublin"
    jobs = 2000
    seeds = [1, 2, 3]

Each combination is a :class:`Cell` whose id is a hash of its canonical, complete
configuration: defaults are filled in (``easy`` and ``easy:allocator=first-fit`` are the same
cell), key order does not matter, and paths are taken as written in the spec file (so a sweep
folder can move). The id does not cover the content of trace files or the hpcdispatch version.

Design notes, decisions and measurements: docs/SWEEPS.md,
"From the module docstrings".
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import tomllib
from dataclasses import dataclass, field
from dataclasses import fields as dataclass_fields
from pathlib import Path
from typing import Any, get_type_hints

from hpcdispatch._util import read_utf8_file
from hpcdispatch.dispatchers import DISPATCHERS, DispatcherSpec
from hpcdispatch.dispatchers.spec import label_for, split_suffix
from hpcdispatch.errors import ConfigError, HpcDispatchError
from hpcdispatch.plugins import load_plugins, resolve_plugin
from hpcdispatch.predictors import predictor_class
from hpcdispatch.sim import SimulationOptions
from hpcdispatch.workload.eurora import EuroraSpec
from hpcdispatch.workload.kit import KitSpec
from hpcdispatch.workload.lublin import LublinSpec
from hpcdispatch.workload.mapping import UNIT_MODES, UnitMapping
from hpcdispatch.workload.slurm import CONTIGUOUS_FRACTION, WORKLOAD_MIXES, AucschedSpec
from hpcdispatch.workload.spec import WorkloadSpec
from hpcdispatch.workload.swf import SwfOptions

CELL_SCHEMA = 1  # part of every cell id: bump only if the meaning of a configuration changes

TOP_KEYS = (
    "name",
    "description",
    "systems",
    "workloads",
    "dispatchers",
    "predictors",
    "repetitions",
    "simulation",
    "plugins",
)
SWF_KEYS = ("processors", "units", "cores_per_unit", "missing_walltime", "memory", "max_jobs")
AUCSCHED_KEYS = (
    "workload",
    "version",
    "runtime_h",
    "min_run",
    "max_run",
    "max_cores",
    "gpu_type",
    "walltime",
)
LUBLIN_KEYS = ("jobs", "load", "interactive", "max_walltime", "p_max_walltime", "overestimate_max")
#: generators whose parameters are one frozen dataclass (its fields are the entry's keys)
_DATACLASS_MODELS: dict[str, type] = {"kit": KitSpec, "eurora": EuroraSpec}
SIM_KEYS = (
    "walltime_kill",
    "charge_dispatch_time",
    "dispatch_interval",
    "dispatch_on_events",
    "record_decisions",
    "prediction_correction",
    "app_model",
)


class SweepSpecError(ConfigError):
    """A sweep file that cannot be used; the message names the file, the line when known, the field."""


@dataclass(frozen=True)
class Cell:
    """One simulation of a sweep: what is hashed (``config``) and how to run it here."""

    id: str
    index: int  # position in the sweep's expansion order
    config: dict[str, Any]  # canonical, complete, JSON-able: the id is its hash
    labels: dict[str, Any]  # system, workload, seed, dispatcher, predictor, repetition, label
    # how to run it (paths resolved against the spec file)
    system_spec: str
    workload: WorkloadSpec
    swf: dict[str, Any]
    dispatcher: DispatcherSpec  # its predictor (if any) is already in ``predictor``
    predictor: str
    simulation: dict[str, Any]
    plugins: tuple[str, ...] = ()

    def swf_options(self) -> SwfOptions:
        s = self.swf
        return SwfOptions(
            processors=s["processors"],
            units=UnitMapping(mode=s["units"], cores_per_unit_max=s["cores_per_unit"]),
            missing_walltime=str(s["missing_walltime"]),
            memory=s["memory"],
            max_jobs=s["max_jobs"],
            submit_jitter=s.get("submit_jitter", 0),
            jitter_seed=s.get("jitter_seed", 0),
        )

    @property
    def workload_spec(self) -> str:
        """The workload's canonical text (``str(self.workload)``)."""
        return str(self.workload)

    def simulation_options(self) -> SimulationOptions:
        return SimulationOptions(**self.simulation)

    @property
    def label(self) -> str:
        return str(self.labels["label"])


@dataclass
class SweepSpec:
    """A parsed sweep file: its name, description, source text and expanded cells."""

    name: str
    description: str
    path: Path | None
    cells: list[Cell] = field(default_factory=list)
    text: str = ""
    #: dispatchers named but not verified: a plan does not run the plugins defining them
    unverified: tuple[str, ...] = ()

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

    def cell_ids(self) -> list[str]:
        return [c.id for c in self.cells]


@dataclass(frozen=True)
class UnverifiedDispatcher:
    """A dispatcher a sweep names that only a plugin registers, when the plugins are not run
    (``sweep plan``): its text as written, nothing checked; its cells have no id (``""``)."""

    name: str
    written: str
    predictor: str | None = None
    label: str | None = None

    @property
    def dispatcher_label(self) -> str:
        if self.label:
            return self.label
        head, sep, rest = self.written.partition(":")
        return label_for(self.name + sep + rest)


def _unverified(entry: Any, registered: set[str]) -> UnverifiedDispatcher | None:
    """``entry`` as an unverified dispatcher when its name is not registered, else None."""
    if isinstance(entry, str):
        head = entry.strip().partition(":")[0]
        table: dict[str, Any] = {}
    elif isinstance(entry, dict) and isinstance(entry.get("name"), str):
        head, table = entry["name"], entry
    else:
        return None
    name, predictor = split_suffix(head.strip())
    if name.strip().lower() in registered:
        return None
    if isinstance(table.get("predictor"), str):
        pcls = predictor_class(table["predictor"])
        predictor = pcls.name if pcls is not None else predictor
    label = table.get("label") if isinstance(table.get("label"), str) else None
    written = entry.strip() if isinstance(entry, str) else name
    return UnverifiedDispatcher(name.strip(), written, predictor, label or None)


def canonical_json(obj: Any) -> str:
    return json.dumps(
        obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    )


def cell_id(config: dict[str, Any]) -> str:
    """16 hex digits of the SHA-256 of the canonical JSON of ``config``."""
    return hashlib.sha256(canonical_json(config).encode()).hexdigest()[:16]


# ---------------------------------------------------------------------------------------
# error reporting with line numbers
# ---------------------------------------------------------------------------------------


class _Where:
    """Builds messages ``FILE, line N, FIELD: ...`` (the line is found in the TOML text)."""

    def __init__(self, source: str, text: str):
        self.source = source
        self.lines = text.splitlines()

    def _line_of_table(self, table: str, index: int) -> int | None:
        pat = re.compile(r"^\s*\[\[\s*" + re.escape(table) + r"\s*\]\]")
        seen = -1
        for n, line in enumerate(self.lines, 1):
            if pat.match(line):
                seen += 1
                if seen == index:
                    return n
        return None

    def _line_of_key(self, key: str, start: int = 0) -> int | None:
        pat = re.compile(r"^\s*" + re.escape(key) + r"\s*=")
        for n, line in enumerate(self.lines[start:], start + 1):
            if pat.match(line):
                return n
        return None

    def line(self, fld: str) -> int | None:
        m = re.match(r"^workloads\[(\d+)\](?:\.(\w+))?", fld)
        if m:
            head = self._line_of_table("workloads", int(m.group(1)))
            if head is not None and m.group(2):
                return self._line_of_key(m.group(2), head) or head
            return head
        if fld.startswith("simulation"):
            for n, line in enumerate(self.lines, 1):
                if re.match(r"^\s*\[\s*simulation\s*\]", line):
                    key = fld.partition(".")[2]
                    return (self._line_of_key(key, n) if key else None) or n
            return None
        top = re.match(r"^(\w+)", fld)
        return self._line_of_key(top.group(1)) if top else None

    def error(self, fld: str, message: str) -> SweepSpecError:
        line = self.line(fld) if fld else None
        where = self.source + (f", line {line}" if line else "") + (f", {fld}" if fld else "")
        # one line, whatever the file's values hold (a value quoted in a message may hold a newline)
        return SweepSpecError(f"{where}: {message}".replace("\r", "\\r").replace("\n", "\\n"))


# ---------------------------------------------------------------------------------------
# parsing
# ---------------------------------------------------------------------------------------


def _type_name(value: Any) -> str:
    return {
        str: "a string",
        int: "an integer",
        float: "a number",
        bool: "true/false",
        list: "a list",
        dict: "a table",
    }.get(type(value), type(value).__name__)


def _expect(w: _Where, fld: str, value: Any, kinds: tuple[type, ...], what: str) -> Any:
    ok = isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds)
    if not ok:
        raise w.error(fld, f"must be {what}, got {_type_name(value)} {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise w.error(fld, f"must be {what} (a finite number), got {value!r}")
    return value


def _expect_path(w: _Where, fld: str, value: Any, what: str) -> str:
    """A string that can name a file (no NUL byte)."""
    _expect(w, fld, value, (str,), what)
    if "\0" in value:
        raise w.error(fld, f"a file name cannot hold a NUL byte, got {value!r}")
    return value


def _resolve_path(text: str, base: Path) -> str:
    p = Path(os.path.expanduser(text))
    return str(p if p.is_absolute() else (base / p).resolve())


def _system_entries(doc: dict[str, Any], w: _Where, base: Path) -> list[tuple[str, str]]:
    """(as written, how to load it) for every system."""
    raw = doc.get("systems", ["auto"])
    if isinstance(raw, str):
        raw = [raw]
    _expect(w, "systems", raw, (list,), "a list of system specs")
    if not raw:
        raise w.error("systems", "is empty")
    out = []
    from hpcdispatch.system.io import load_system

    for i, s in enumerate(raw):
        _expect_path(
            w, f"systems[{i}]", s, "a preset name, a system TOML file, 'auto' or 'from-trace'"
        )
        if s in ("auto", "from-trace"):
            out.append((s, s))
            continue
        is_file = s.endswith(".toml")
        try:
            spec = _resolve_path(s, base) if is_file else s
            load_system(spec)
        except HpcDispatchError as exc:
            raise w.error(f"systems[{i}]", str(exc)) from None
        except OSError as exc:  # a name too long ...
            raise w.error(f"systems[{i}]", f"cannot be read: {exc.strerror or exc}") from None
        out.append((os.path.normpath(s) if is_file else s, spec))
    return out


def _seeds(entry: dict[str, Any], w: _Where, fld: str) -> list[int]:
    if "seed" in entry and "seeds" in entry:
        raise w.error(fld, "give either 'seed' or 'seeds', not both")
    if "seed" in entry:
        return [_expect(w, f"{fld}.seed", entry["seed"], (int,), "an integer")]
    raw = entry.get("seeds", [1])
    if isinstance(raw, dict):
        unknown = set(raw) - {"from", "count"}
        if unknown or "count" not in raw:
            raise w.error(f"{fld}.seeds", "a seed range is a table { from = FIRST, count = N }")
        first = _expect(w, f"{fld}.seeds", raw.get("from", 1), (int,), "an integer ('from')")
        count = _expect(w, f"{fld}.seeds", raw["count"], (int,), "an integer ('count')")
        if count <= 0:
            raise w.error(f"{fld}.seeds", f"count must be positive, got {count}")
        return list(range(first, first + count))
    _expect(w, f"{fld}.seeds", raw, (list,), "a list of integers or { from = FIRST, count = N }")
    if not raw:
        raise w.error(f"{fld}.seeds", "is empty")
    for s in raw:
        _expect(w, f"{fld}.seeds", s, (int,), "a list of integers")
    if len(set(raw)) != len(raw):
        raise w.error(f"{fld}.seeds", f"lists a seed twice: {raw}")
    return list(raw)


def _swf_canonical(
    entry: dict[str, Any], w: _Where, fld: str, keys: tuple[str, ...]
) -> dict[str, Any]:
    defaults = SwfOptions()
    out: dict[str, Any] = {
        "processors": defaults.processors,
        "units": defaults.units.mode,
        "cores_per_unit": None,
        "missing_walltime": str(defaults.missing_walltime),
        "memory": defaults.memory,
        "max_jobs": None,
    }
    kinds: dict[str, tuple[tuple[type, ...], str]] = {
        "processors": ((str,), "'requested' or 'allocated'"),
        "units": ((str,), f"one of {', '.join(UNIT_MODES)}"),
        "cores_per_unit": ((int,), "an integer"),
        "missing_walltime": (
            (str, int),
            "queue-max, trace-max, runtime, skip or a number of seconds",
        ),
        "memory": ((str,), "'ignore', 'requested' or 'used'"),
        "max_jobs": ((int,), "an integer"),
    }
    for key in keys:
        if key in entry:
            kind, what = kinds[key]
            out[key] = _expect(w, f"{fld}.{key}", entry[key], kind, what)
    out["missing_walltime"] = str(out["missing_walltime"])
    try:
        SwfOptions(
            processors=out["processors"],
            units=UnitMapping(out["units"], out["cores_per_unit"]),
            missing_walltime=out["missing_walltime"],
            memory=out["memory"],
            max_jobs=out["max_jobs"],
        )
    except HpcDispatchError as exc:
        raise w.error(fld, str(exc)) from None
    return out


@dataclass(frozen=True)
class _Workload:
    label: str
    seed: int | None
    config: dict[str, Any]
    spec: WorkloadSpec  # how to load it
    swf: dict[str, Any]


def _workload_entries(doc: dict[str, Any], w: _Where, base: Path) -> list[_Workload]:
    raw = doc.get("workloads")
    if raw is None:
        raise w.error("", "missing required [[workloads]] tables (a trace or a generator each)")
    _expect(w, "workloads", raw, (list,), "an array of tables [[workloads]]")
    if not raw:
        raise w.error("workloads", "is empty")
    out: list[_Workload] = []
    for i, entry in enumerate(raw):
        fld = f"workloads[{i}]"
        _expect(w, fld, entry, (dict,), "a table")
        if ("trace" in entry) == ("generator" in entry):
            raise w.error(
                fld,
                "needs exactly one of 'trace' (an SWF file) or 'generator' (\"lublin\", \"kit\" ...)",
            )
        name = entry.get("name")
        if name is not None:
            _expect(w, f"{fld}.name", name, (str,), "a string")
        if "trace" in entry:
            known = ("trace", "name", "submit_jitter", "seed", "seeds", *SWF_KEYS)
            _check_keys(entry, known, w, fld)
            trace = _expect_path(w, f"{fld}.trace", entry["trace"], "a path to an SWF file")
            try:
                trace_path = _resolve_path(trace, base)
            except (OSError, RuntimeError) as exc:  # a name too long, a symlink loop
                raise w.error(f"{fld}.trace", f"cannot be a file name: {exc}") from None
            swf = _swf_canonical(entry, w, fld, SWF_KEYS)
            written = os.path.normpath(trace)
            label = name or _trace_label(trace, swf)
            jitter = _expect(
                w, f"{fld}.submit_jitter", entry.get("submit_jitter", 0), (int,), "whole seconds"
            )
            if not 0 <= jitter <= 2**50:
                raise w.error(
                    f"{fld}.submit_jitter", f"must be >= 0 seconds (at most 2^50), got {jitter}"
                )
            if not jitter:
                if "seed" in entry or "seeds" in entry:
                    raise w.error(
                        fld,
                        "seeds on a trace need submit_jitter > 0 (they seed the jitter; "
                        "without it every seed is the same trace)",
                    )
                config = {"trace": written, **swf}
                out.append(_Workload(label, None, config, WorkloadSpec.file(trace_path), swf))
                continue
            for seed in _seeds(
                entry, w, fld
            ):  # perturbed replicas; unjittered ids stay as they were
                jittered = {**swf, "submit_jitter": jitter, "jitter_seed": seed}
                config = {"trace": written, **jittered}
                out.append(_Workload(label, seed, config, WorkloadSpec.file(trace_path), jittered))
            continue
        generator = _expect(w, f"{fld}.generator", entry["generator"], (str,), "a string")
        if generator == "aucsched":
            out.extend(_aucsched_entries(entry, w, fld, name))
            continue
        if generator in _DATACLASS_MODELS:
            out.extend(_dataclass_entries(generator, entry, w, fld, name))
            continue
        if generator == "deadline":
            out.extend(_deadline_entries(entry, w, fld, name))
            continue
        if generator != "lublin":
            raise w.error(
                f"{fld}.generator",
                f"unknown generator '{generator}' "
                f"(available: lublin, aucsched, deadline, {', '.join(_DATACLASS_MODELS)})",
            )
        known = (
            "generator",
            "name",
            "seed",
            "seeds",
            "units",
            "cores_per_unit",
            "max_jobs",
            *LUBLIN_KEYS,
        )
        _check_keys(entry, known, w, fld)
        swf = _swf_canonical(entry, w, fld, ("units", "cores_per_unit", "max_jobs"))
        params = _lublin_params(entry, w, fld)
        for seed in _seeds(entry, w, fld):
            config = {
                "generator": "lublin",
                **params,
                "seed": seed,
                "units": swf["units"],
                "cores_per_unit": swf["cores_per_unit"],
                "max_jobs": swf["max_jobs"],
            }
            spec = WorkloadSpec.synthetic(
                "lublin",
                {
                    **{k: params[k] for k in ("jobs", *LUBLIN_KEYS[1:]) if params[k] is not None},
                    "seed": seed,
                },
            )
            label = name or _lublin_label(params)
            out.append(_Workload(label, seed, config, spec, swf))
    return out


def _aucsched_entries(
    entry: dict[str, Any], w: _Where, fld: str, name: str | None
) -> list[_Workload]:
    """``generator = "aucsched"``: the AUCSCHED paper's Table 4 workloads; ``workload`` (I-V) and
    ``version`` (1-3) may be lists, every combination x seed is one workload."""
    known = ("generator", "name", "seed", "seeds", "max_jobs", *AUCSCHED_KEYS)
    _check_keys(entry, known, w, fld)
    swf = _swf_canonical(entry, w, fld, ("max_jobs",))
    d = AucschedSpec()
    kinds: dict[str, tuple[tuple[type, ...], str]] = {
        "runtime_h": ((int, float), "a number"),
        "min_run": ((int,), "an integer"),
        "max_run": ((int,), "an integer"),
        "max_cores": ((int,), "an integer"),
        "gpu_type": ((int,), "2 or 3"),
        "walltime": ((str,), "'minute' or 'exact'"),
    }
    params: dict[str, Any] = {k: getattr(d, k) for k in kinds}
    for key, (kind, what) in kinds.items():
        if key in entry:
            params[key] = _expect(w, f"{fld}.{key}", entry[key], kind, what)
    params["runtime_h"] = float(params["runtime_h"])
    names = entry.get("workload", d.workload)
    names = names if isinstance(names, list) else [names]
    versions = entry.get("version", d.version)
    versions = versions if isinstance(versions, list) else [versions]
    if not names:
        raise w.error(f"{fld}.workload", "is empty (give I-V or a list of them)")
    if not versions:
        raise w.error(f"{fld}.version", "is empty (give 1, 2, 3 or a list of them)")
    for n in names:
        _expect(w, f"{fld}.workload", n, (str,), "a string I-V or a list of them")
        if n.upper() not in WORKLOAD_MIXES:
            raise w.error(
                f"{fld}.workload",
                f"must be one of {', '.join(WORKLOAD_MIXES)} (Table 4), got {n!r}",
            )
    for v in versions:
        if isinstance(v, bool) or not isinstance(v, int) or v not in CONTIGUOUS_FRACTION:
            raise w.error(
                f"{fld}.version",
                f"must be 1, 2 or 3 (0/50/100 % contiguous) or a list of them, got {v!r}",
            )
    out = []
    for wl_name in names:
        for version in versions:
            for seed in _seeds(entry, w, fld):
                try:
                    spec = AucschedSpec(
                        workload=wl_name.upper(), version=version, seed=seed, **params
                    )
                except HpcDispatchError as exc:
                    raise w.error(fld, str(exc)) from None
                config = {
                    "generator": "aucsched",
                    "workload": spec.workload,
                    "version": version,
                    **params,
                    "seed": seed,
                    "max_jobs": swf["max_jobs"],
                }
                label = name or f"aucsched-{spec.workload}.{version}-{params['runtime_h']:g}h"
                out.append(_Workload(label, seed, config, _aucsched_spec(spec), swf))
    return out


def _dataclass_entries(
    generator: str, entry: dict[str, Any], w: _Where, fld: str, name: str | None
) -> list[_Workload]:
    """``generator = "kit"`` / ``"eurora"``: keys are the fields of the model's parameter
    dataclass (``seed`` / ``seeds`` as for every generator); every field, defaults filled in,
    goes into the cell's configuration, so a changed default makes a new cell."""
    cls = _DATACLASS_MODELS[generator]
    hints, params_names, swf, params = _model_entry(cls, entry, w, fld)
    for key in params_names:
        if key not in entry:
            continue
        value = entry[key]
        hint = hints[key]
        if hint is int or hint == (int | None):
            params[key] = _expect(w, f"{fld}.{key}", value, (int,), "an integer")
        else:
            params[key] = float(_expect(w, f"{fld}.{key}", value, (int, float), "a number"))
    out = []
    for seed in _seeds(entry, w, fld):
        try:
            cls(**params, seed=seed)
        except HpcDispatchError as exc:
            raise w.error(fld, str(exc)) from None
        config = {"generator": generator, **params, "seed": seed, "max_jobs": swf["max_jobs"]}
        spec = WorkloadSpec.synthetic(
            generator, {**{k: v for k, v in params.items() if v is not None}, "seed": seed}
        )
        label = name or f"{generator}-{params['jobs']}j" + (
            f"-load{params['load']:g}" if params["load"] else ""
        )
        out.append(_Workload(label, seed, config, spec, swf))
    return out


DEADLINE_AXES = ("load", "types", "comm")  # a value or a list: every combination is a workload


def _deadline_entries(
    entry: dict[str, Any], w: _Where, fld: str, name: str | None
) -> list[_Workload]:
    """``generator = "deadline"``: the deadline paper's workloads (workload/deadline.py); keys
    are the fields of :class:`DeadlineWorkloadParams` (``seed`` / ``seeds`` as for every
    generator); ``load``, ``types`` and ``comm`` take one value or a list, and every
    combination (load, then types, then comm, then seed) is a workload. Every field, defaults
    filled in, goes into the cell's configuration. Label: ``deadline-<load>-types<T>-<comm>``."""
    from hpcdispatch.workload.deadline import DeadlineWorkloadParams

    hints, names, swf, params = _model_entry(DeadlineWorkloadParams, entry, w, fld)
    axes: dict[str, list[str]] = {}
    for key in names:
        if key not in entry:
            if key in DEADLINE_AXES:
                axes[key] = [params[key]]
            continue
        value = entry[key]
        if key in DEADLINE_AXES:
            values = value if isinstance(value, list) else [value]
            if not values:
                raise w.error(f"{fld}.{key}", "is empty")
            texts = []
            for v in values:
                _expect(
                    w, f"{fld}.{key}", v, (str, int, float), "a string or number, or a list of them"
                )
                if isinstance(v, bool):
                    raise w.error(f"{fld}.{key}", f"must be a string or number, got {v!r}")
                texts.append(
                    format(float(v), "g") if key == "load" and not isinstance(v, str) else str(v)
                )
            if len(set(texts)) != len(texts):
                raise w.error(f"{fld}.{key}", f"lists a value twice: {values}")
            axes[key] = texts
        elif hints[key] is bool:
            params[key] = _expect(w, f"{fld}.{key}", value, (bool,), "true/false")
        elif hints[key] is int:
            params[key] = _expect(w, f"{fld}.{key}", value, (int,), "an integer")
        else:
            params[key] = float(_expect(w, f"{fld}.{key}", value, (int, float), "a number"))
    out = []
    for load in axes["load"]:
        for types in axes["types"]:
            for comm in axes["comm"]:
                p = {**params, "load": load, "types": types, "comm": comm}
                for seed in _seeds(entry, w, fld):
                    try:
                        DeadlineWorkloadParams(**p, seed=seed)
                    except HpcDispatchError as exc:
                        raise w.error(fld, str(exc)) from None
                    config = {
                        "generator": "deadline",
                        **p,
                        "seed": seed,
                        "max_jobs": swf["max_jobs"],
                    }
                    spec = WorkloadSpec.synthetic("deadline", {**p, "seed": seed})
                    label = (f"{name}-" if name else "deadline-") + f"{load}-types{types}-{comm}"
                    out.append(_Workload(label, seed, config, spec, swf))
    return out


def _model_entry(
    cls: type, entry: dict[str, Any], w: _Where, fld: str
) -> tuple[dict[str, Any], list[str], dict[str, Any], dict[str, Any]]:
    """A generator entry whose keys are the fields of the model's parameter dataclass ``cls``
    (but ``seed``): checks the keys and returns ``(type hints, field names, the reader's
    canonical options, every field's default)``."""
    hints = get_type_hints(cls)
    names = [f.name for f in dataclass_fields(cls) if f.name != "seed"]
    _check_keys(entry, ("generator", "name", "seed", "seeds", "max_jobs", *names), w, fld)
    swf = _swf_canonical(entry, w, fld, ("max_jobs",))
    default = cls()
    return hints, names, swf, {k: getattr(default, k) for k in names}


def _check_keys(entry: dict[str, Any], known: tuple[str, ...], w: _Where, fld: str) -> None:
    unknown = sorted(set(entry) - set(known))
    if unknown:
        hint = ""
        if set(unknown) & set(TOP_KEYS):
            hint = (
                " (top-level keys must come before the first [[workloads]] or [simulation] table)"
            )
        raise w.error(fld, f"unknown key(s) {unknown}; known: {', '.join(known)}{hint}")


def _aucsched_spec(spec: AucschedSpec) -> WorkloadSpec:
    """The spec :meth:`AucschedSpec.spec_string` writes: workload, version, seed, runtime_h,
    then the fields off their default."""
    default = AucschedSpec()
    options: dict[str, Any] = {
        "workload": spec.workload,
        "version": spec.version,
        "seed": spec.seed,
        "runtime_h": spec.runtime_h,
    }
    for f in dataclass_fields(spec):
        value = getattr(spec, f.name)
        if f.name not in options and value != getattr(default, f.name):
            options[f.name] = value
    return WorkloadSpec.synthetic("aucsched", options)


def _lublin_params(entry: dict[str, Any], w: _Where, fld: str) -> dict[str, Any]:
    d = LublinSpec()
    kinds: dict[str, tuple[tuple[type, ...], str]] = {
        "jobs": ((int,), "an integer"),
        "load": ((int, float), "a number"),
        "interactive": ((bool,), "true/false"),
        "max_walltime": ((int,), "an integer"),
        "p_max_walltime": ((int, float), "a number"),
        "overestimate_max": ((int, float), "a number"),
    }
    out: dict[str, Any] = {k: getattr(d, k) for k in LUBLIN_KEYS}
    for key in LUBLIN_KEYS:
        if key in entry:
            kind, what = kinds[key]
            out[key] = _expect(w, f"{fld}.{key}", entry[key], kind, what)
    for key in ("load", "p_max_walltime", "overestimate_max"):
        if out[key] is not None:
            out[key] = float(out[key])
    try:
        LublinSpec(**out)
    except HpcDispatchError as exc:
        raise w.error(fld, str(exc)) from None
    return out


def _trace_label(trace: str, swf: dict[str, Any]) -> str:
    name = Path(trace).name
    for suffix in (".gz", ".swf"):
        name = name.removesuffix(suffix)
    if swf["max_jobs"] is not None:
        name += f"-first{swf['max_jobs']}"
    return name


def _lublin_label(params: dict[str, Any]) -> str:
    label = f"lublin-{params['jobs']}j"
    if params["load"] is not None:
        label += f"-load{params['load']:g}"
    return label


def _dispatcher_entries(
    doc: dict[str, Any], w: _Where, unverified_ok: bool = False
) -> list[DispatcherSpec | UnverifiedDispatcher]:
    raw = doc.get("dispatchers")
    if raw is None:
        raise w.error("", "missing required key 'dispatchers' (a list of dispatcher specs)")
    _expect(w, "dispatchers", raw, (list,), "a list of dispatcher specs or tables")
    if not raw:
        raise w.error("dispatchers", "is empty")
    out: list[DispatcherSpec | UnverifiedDispatcher] = []
    for i, entry in enumerate(raw):
        fld = f"dispatchers[{i}]"
        unverified = _unverified(entry, set(DISPATCHERS)) if unverified_ok else None
        if unverified is not None:
            out.append(unverified)
            continue
        try:
            if isinstance(entry, str):
                spec = DispatcherSpec.parse(entry)
            elif isinstance(entry, dict):
                spec = DispatcherSpec.from_table(entry)
            else:
                raise ConfigError(
                    f"must be a spec string or a table, got {_type_name(entry)} {entry!r}"
                )
            config = spec.identity()
        except HpcDispatchError as exc:
            raise w.error(fld, str(exc)) from None
        try:
            canonical_json(config)
        except (TypeError, ValueError):
            raise w.error(
                fld,
                f"parameters {config['params']!r} are not plain values (strings, finite numbers, "
                "true/false, lists, tables)",
            ) from None
        out.append(spec)
    return out


def _predictor_name(name: str) -> str:
    cls = predictor_class(name)
    if cls is None:
        raise ConfigError(f"unknown predictor '{name}'")
    return cls.name


def _predictors(doc: dict[str, Any], w: _Where) -> list[str]:
    raw = doc.get("predictors", ["walltime"])
    if isinstance(raw, str):
        raw = [raw]
    _expect(w, "predictors", raw, (list,), "a list of predictor names")
    if not raw:
        raise w.error("predictors", "is empty")
    out = []
    for i, p in enumerate(raw):
        _expect(w, f"predictors[{i}]", p, (str,), "a predictor name")
        try:
            name = _predictor_name(p)
        except ConfigError as exc:
            raise w.error(
                f"predictors[{i}]",
                f"{exc} (W, L2, D, R or walltime, last-two, data-driven, oracle)",
            ) from None
        if name in out:
            raise w.error(f"predictors[{i}]", f"'{p}' is listed twice")
        out.append(name)
    return out


def _simulation(doc: dict[str, Any], w: _Where) -> dict[str, Any]:
    raw = doc.get("simulation", {})
    _expect(w, "simulation", raw, (dict,), "a table [simulation]")
    _check_keys(raw, SIM_KEYS, w, "simulation")
    for key in ("walltime_kill", "charge_dispatch_time", "dispatch_on_events", "record_decisions"):
        if key in raw:
            _expect(w, f"simulation.{key}", raw[key], (bool,), "true/false")
    if "dispatch_interval" in raw:
        _expect(
            w,
            "simulation.dispatch_interval",
            raw["dispatch_interval"],
            (int, float),
            "a number of seconds",
        )
    if "prediction_correction" in raw:
        _expect(
            w,
            "simulation.prediction_correction",
            raw["prediction_correction"],
            (str,),
            '"walltime" or "ladder"',
        )
    if "app_model" in raw:
        _expect(
            w,
            "simulation.app_model",
            raw["app_model"],
            (dict,),
            'a table of execution model parameters, { network = "none" }',
        )
    try:
        opts = SimulationOptions(
            **{k: (float(v) if k == "dispatch_interval" else v) for k, v in raw.items()}
        )
    except HpcDispatchError as exc:
        raise w.error("simulation", str(exc)) from None
    return opts.identity()  # (engine and unset later additions left out: older cell ids hold)


def parse_sweep(
    text: str, source: str = "<sweep>", base: Path | None = None, run_plugins: bool = True
) -> SweepSpec:
    """Parse and validate a sweep; expand it into cells (no trace is read). ``run_plugins``
    False (a plan): the plugins are not imported -- their code does not run -- and the
    dispatchers no built-in registers are kept as written (:class:`UnverifiedDispatcher`,
    listed in ``unverified``; their cells have no id)."""
    w = _Where(source, text)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SweepSpecError(f"{source}: not valid TOML: {exc}") from None
    base = base or Path.cwd()
    unknown = sorted(set(doc) - set(TOP_KEYS))
    if unknown:
        raise w.error("", f"unknown top-level key(s) {unknown}; known: {', '.join(TOP_KEYS)}")
    name = doc.get("name", Path(source).stem)
    _expect(w, "name", name, (str,), "a string")
    description = doc.get("description", "")
    _expect(w, "description", description, (str,), "a string")
    raw_plugins = doc.get("plugins", [])
    _expect(w, "plugins", raw_plugins, (list,), "a list of .py files or module names")
    plugins = []
    for i, p in enumerate(raw_plugins):
        _expect_path(w, f"plugins[{i}]", p, "a .py file or a module name")
        try:
            plugins.append(resolve_plugin(p, base))
        except (OSError, RuntimeError) as exc:
            raise w.error(f"plugins[{i}]", f"cannot be a file name: {exc}") from None
    if run_plugins:
        try:
            load_plugins(tuple(plugins))
        except HpcDispatchError as exc:
            raise w.error("plugins", str(exc)) from None
    else:  # (a plan: the files are looked at, not imported)
        for i, plugin in enumerate(plugins):
            if plugin.endswith(".py") and not Path(plugin).is_file():
                raise w.error(f"plugins[{i}]", f"plugin file '{plugin}' does not exist")
    repetitions = doc.get("repetitions", 1)
    _expect(w, "repetitions", repetitions, (int,), "a positive integer")
    if repetitions < 1:
        raise w.error("repetitions", f"must be at least 1, got {repetitions}")
    systems = _system_entries(doc, w, base)
    workloads = _workload_entries(doc, w, base)
    dispatchers = _dispatcher_entries(doc, w, unverified_ok=not run_plugins and bool(plugins))
    predictors = _predictors(doc, w)
    simulation = _simulation(doc, w)

    if any(spec == "from-trace" for _, spec in systems):
        generated = [i for i, wl in enumerate(workloads) if wl.seed is not None]
        if generated:
            raise w.error(
                "systems",
                "'from-trace' reads the system from an SWF header, but generated workloads "
                "have none; list those in a sweep with a preset system",
            )
    labels_seen: dict[str, dict[str, Any]] = {}
    for d in dispatchers:
        if isinstance(d, UnverifiedDispatcher):
            continue
        if labels_seen.setdefault(d.dispatcher_label, d.identity()) != d.identity():
            raise w.error(
                "dispatchers",
                f"label '{d.dispatcher_label}' names two different dispatchers; "
                "give each a 'label'",
            )
    cells: list[Cell] = []
    seen: dict[str, str] = {}
    for sys_written, sys_spec in systems:
        for wl in workloads:
            for d in dispatchers:
                preds = [d.predictor] if d.predictor else predictors
                unverified = isinstance(d, UnverifiedDispatcher)
                d_config = (
                    {"unverified": d.written}
                    if isinstance(d, UnverifiedDispatcher)
                    else d.cell_identity()  # (later-added parameters at their old value left out)
                )
                for pred in preds:
                    for rep in range(repetitions):
                        config = {
                            "schema": CELL_SCHEMA,
                            "system": sys_written,
                            "workload": wl.config,
                            "dispatcher": d_config,
                            "predictor": pred,
                            "simulation": simulation,
                            "repetition": rep,
                        }
                        cid = "" if unverified else cell_id(config)
                        pred_short = predictor_class(pred).short  # type: ignore[union-attr]
                        run_label = (
                            d.dispatcher_label
                            if pred == "walltime"
                            else f"{d.dispatcher_label}-{pred_short}"
                        )
                        seed = f"/seed{wl.seed}" if wl.seed is not None else ""
                        label = f"{sys_written}/{wl.label}{seed}/{run_label}" + (
                            f"/r{rep}" if repetitions > 1 else ""
                        )
                        if cid and cid in seen:
                            raise w.error(
                                "",
                                f"cells '{seen[cid]}' and '{label}' have the same configuration "
                                "(an entry is listed twice)",
                            )
                        seen[cid] = label
                        cells.append(
                            Cell(
                                id=cid,
                                index=len(cells),
                                config=config,
                                labels={
                                    "system": sys_written,
                                    "workload": wl.label,
                                    "seed": wl.seed,
                                    "dispatcher": d.dispatcher_label,
                                    "predictor": pred,
                                    "run": run_label,
                                    "repetition": rep,
                                    "label": label,
                                },
                                system_spec=sys_spec,
                                workload=wl.spec,
                                swf=wl.swf,
                                dispatcher=d,  # type: ignore[arg-type]  # (unverified: a plan)
                                predictor=pred,
                                simulation=simulation,
                                plugins=tuple(plugins),
                            )
                        )
    unverified_names = tuple(
        dict.fromkeys(d.name for d in dispatchers if isinstance(d, UnverifiedDispatcher))
    )
    return SweepSpec(
        name=name,
        description=description,
        path=None,
        cells=cells,
        text=text,
        unverified=unverified_names,
    )


def load_sweep(path: str | Path, run_plugins: bool = True) -> SweepSpec:
    """Read and expand the sweep file ``path`` (errors: :class:`SweepSpecError`, one line;
    ``run_plugins`` False: a plan, the plugins are not imported)."""
    p = Path(path)
    try:
        text = read_utf8_file(p, "a sweep file")
    except SweepSpecError:
        raise
    except ConfigError as exc:
        raise SweepSpecError(str(exc)) from None
    spec = parse_sweep(text, source=str(p), base=p.resolve().parent, run_plugins=run_plugins)
    spec.path = p.resolve()
    return spec
