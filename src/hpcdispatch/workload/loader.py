"""One entry point for every workload source, and the system that goes with it.

Workload specs (``--workload``):

- ``PATH`` to an SWF trace (``.swf`` or ``.swf.gz``);
- ``synthetic:NAME[,key=value...]``: ``lublin`` (Lublin-Feitelson), ``kit`` (KIT ForHLR II-like,
  :class:`KitSpec`), ``eurora`` (Eurora-like, :class:`EuroraSpec`), ``aucsched`` (the AUCSCHED
  paper's Table 4, :class:`AucschedSpec`) or ``deadline`` (:class:`DeadlineWorkloadParams`);
- ``PATH.deadline.jsonl`` (deadline jobs), ``PATH.csv`` / ``PATH.jsonl`` (Slurm-style
  requests), ``PATH.sacct`` (Slurm accounting, :mod:`hpcdispatch.workload.sacct`), ``PATH.json``
  holding a Batsim workload (:mod:`hpcdispatch.workload.batsim`).

System specs (``--system``): a preset name, a TOML file, ``from-trace`` (derived from the SWF
header) or ``auto`` (a preset matching the trace's file name or the synthetic workload, else
``from-trace`` or ``machine-s``).

Design notes, decisions and measurements: docs/ARCHITECTURE.md,
"From the module docstrings".
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any, get_type_hints

from hpcdispatch.errors import ConfigError, TraceFormatError
from hpcdispatch.system.io import load_system, preset_trace_prefixes
from hpcdispatch.system.model import System
from hpcdispatch.workload.batsim import is_batsim_workload, read_batsim
from hpcdispatch.workload.deadline import (
    JSONL_SUFFIX,
    deadline_workload,
    parse_deadline_spec,
    read_deadline_jsonl,
)
from hpcdispatch.workload.eurora import EuroraSpec, eurora_workload
from hpcdispatch.workload.job import Workload
from hpcdispatch.workload.kit import KitSpec, kit_workload
from hpcdispatch.workload.lublin import LublinSpec, lublin_workload
from hpcdispatch.workload.mapping import UnitMapping
from hpcdispatch.workload.sacct import is_sacct_file, read_sacct
from hpcdispatch.workload.slurm import AucschedSpec, aucsched_workload, read_slurm_requests
from hpcdispatch.workload.swf import SwfOptions, system_from_swf_header
from hpcdispatch.workload.trace_cache import load_swf_cached

SYNTHETIC_PREFIX = "synthetic:"
SLURM_SUFFIXES = (".csv", ".jsonl", ".json", ".ndjson")
DEFAULT_SYNTHETIC_SYSTEM = "machine-s"
DEADLINE_SYSTEM = "hlrn2-grid"  # the deadline paper's machine (sec. 5)
#: synthetic models whose parameters are one frozen dataclass, and the preset each is made for
DATACLASS_MODELS: dict[str, tuple[type, Any, str]] = {
    "kit": (KitSpec, kit_workload, "kit-forhlr2"),
    "eurora": (EuroraSpec, eurora_workload, "eurora"),
}


def parse_kv(text: str, where: str) -> dict[str, str]:
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


def parse_aucsched(spec: str) -> AucschedSpec:
    body = spec[len(SYNTHETIC_PREFIX) :]
    _, _, rest = body.partition(",")
    raw = parse_kv(rest, f"workload '{spec}'")
    types = {f.name: f.type for f in fields(AucschedSpec)}
    conv = {
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
    unknown = set(raw) - set(types)
    if unknown:
        raise ConfigError(
            f"workload '{spec}': unknown key(s) {sorted(unknown)}; known: {', '.join(types)}"
        )
    values = {k: _convert(v, conv[k], k, f"workload '{spec}'") for k, v in raw.items()}
    if "workload" in values:
        values["workload"] = str(values["workload"]).upper()
    return AucschedSpec(**values)


def synthetic_model(spec: str) -> str:
    """The model name of a ``synthetic:NAME,...`` spec."""
    return spec[len(SYNTHETIC_PREFIX) :].partition(",")[0].strip()


def parse_dataclass_spec(spec: str, cls: type) -> Any:
    """``synthetic:NAME,key=value,...`` -> ``cls(**values)``, converted by the fields' types
    (``float | None`` fields take a float); unknown keys and bad values are one-line errors."""
    _, _, rest = spec[len(SYNTHETIC_PREFIX) :].partition(",")
    where = f"workload '{spec}'"
    raw = parse_kv(rest, where)
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
    return cls(**values)


def parse_synthetic(spec: str, units: UnitMapping) -> LublinSpec:
    body = spec[len(SYNTHETIC_PREFIX) :]
    model, _, rest = body.partition(",")
    if model.strip() != "lublin":
        raise ConfigError(
            f"workload '{spec}': unknown synthetic model '{model}' "
            f"(available: lublin, aucsched, deadline, {', '.join(DATACLASS_MODELS)})"
        )
    raw = parse_kv(rest, f"workload '{spec}'")
    types = {
        "jobs": int,
        "seed": int,
        "load": float,
        "interactive": bool,
        "max_walltime": int,
        "p_max_walltime": float,
        "overestimate_max": float,
    }
    unknown = set(raw) - set(types)
    if unknown:
        raise ConfigError(
            f"workload '{spec}': unknown key(s) {sorted(unknown)}; known: {', '.join(types)}"
        )
    values = {k: _convert(v, types[k], k, f"workload '{spec}'") for k, v in raw.items()}
    assert {f.name for f in fields(LublinSpec)} >= set(values)
    return LublinSpec(units=units, **values)


def is_synthetic(spec: str) -> bool:
    return str(spec).startswith(SYNTHETIC_PREFIX)


def _is_slurm_file(spec: str) -> bool:
    path = Path(spec)
    if path.name.lower().endswith(JSONL_SUFFIX):  # deadline jobs, not Slurm requests
        return False
    try:
        return path.suffix.lower() in SLURM_SUFFIXES or (path.is_file() and is_sacct_file(path))
    except (OSError, ValueError):
        return False


def _is_deadline(spec: str) -> bool:
    spec = str(spec)
    if is_synthetic(spec):
        return spec[len(SYNTHETIC_PREFIX) :].partition(",")[0].strip() == "deadline"
    return spec.lower().endswith(JSONL_SUFFIX)


def resolve_system(system_spec: str, workload_spec: str) -> System:
    """The system named by ``system_spec`` (see the module docstring for ``auto``)."""
    if (
        system_spec in ("from-trace", "auto")
        and not is_synthetic(workload_spec)
        and _is_slurm_file(workload_spec)
    ):
        raise ConfigError(
            f"{workload_spec}: a Slurm request or accounting file describes no machine; give --system "
            "a preset or a TOML file (its nodes, cores, GPUs, memory)"
        )
    if system_spec == "from-trace":
        if is_synthetic(workload_spec):
            raise ConfigError(
                "--system from-trace needs an SWF trace as workload, not a synthetic one"
            )
        return system_from_swf_header(workload_spec)
    if system_spec == "auto":
        if _is_deadline(workload_spec):
            return load_system(DEADLINE_SYSTEM)
        if is_synthetic(workload_spec):
            model = DATACLASS_MODELS.get(synthetic_model(workload_spec))
            return load_system(model[2] if model else DEFAULT_SYNTHETIC_SYSTEM)
        name = Path(workload_spec).name
        for preset, prefixes in sorted(preset_trace_prefixes().items()):
            if any(name.startswith(p) for p in prefixes):
                return load_system(preset)
        return system_from_swf_header(workload_spec)
    return load_system(system_spec)


def load_workload(spec: str, system: System, swf_options: SwfOptions | None = None) -> Workload:
    """Load the workload named by ``spec`` onto ``system`` (``max_jobs``, then ``submit_jitter``)."""
    swf_options = swf_options or SwfOptions()
    workload = _load(spec, system, swf_options)
    if swf_options.submit_jitter:
        workload = workload.jittered(swf_options.submit_jitter, swf_options.jitter_seed)
    return workload


def _load(spec: str, system: System, swf_options: SwfOptions) -> Workload:
    spec = str(spec)
    if is_synthetic(spec) and synthetic_model(spec) in DATACLASS_MODELS:
        cls, make, _preset = DATACLASS_MODELS[synthetic_model(spec)]
        workload = make(system, parse_dataclass_spec(spec, cls), spec_string=spec)
        if swf_options.max_jobs is not None:
            workload = workload.subset(swf_options.max_jobs)
        return workload
    if is_synthetic(spec) and synthetic_model(spec) == "aucsched":
        workload = aucsched_workload(system, parse_aucsched(spec), spec_string=spec)
        if swf_options.max_jobs is not None:
            workload = workload.subset(swf_options.max_jobs)
        return workload
    if is_synthetic(spec) and spec[len(SYNTHETIC_PREFIX) :].partition(",")[0].strip() == "deadline":
        workload = deadline_workload(system, parse_deadline_spec(spec), spec_string=spec)
        if swf_options.max_jobs is not None:
            workload = workload.subset(swf_options.max_jobs)
        return workload
    if is_synthetic(spec):
        workload = lublin_workload(
            system, parse_synthetic(spec, swf_options.units), spec_string=spec
        )
        if swf_options.max_jobs is not None:
            workload = workload.subset(swf_options.max_jobs)
        return workload
    path = Path(spec)
    try:
        exists, is_dir = path.exists(), path.is_dir()
    except (OSError, ValueError) as exc:  # a name too long, a NUL byte ...
        raise TraceFormatError(
            spec, f"cannot be read: {getattr(exc, 'strerror', None) or exc}"
        ) from None
    if not exists:
        raise TraceFormatError(
            spec, "file does not exist (give a path to an SWF trace or synthetic:lublin,...)"
        )
    if is_dir:
        raise TraceFormatError(spec, "is a directory, not a workload file")
    if path.name.lower().endswith(JSONL_SUFFIX):
        workload = read_deadline_jsonl(path, system)
        if swf_options.max_jobs is not None:
            workload = workload.subset(swf_options.max_jobs)
        return workload
    if is_batsim_workload(path):
        workload = read_batsim(path, system, swf_options)
        if swf_options.max_jobs is not None:
            workload = workload.subset(swf_options.max_jobs)
        return workload
    if path.suffix.lower() in SLURM_SUFFIXES or is_sacct_file(path):
        workload = (
            read_sacct(path, system) if is_sacct_file(path) else read_slurm_requests(path, system)
        )
        if swf_options.max_jobs is not None:
            workload = workload.subset(swf_options.max_jobs)
        return workload
    return load_swf_cached(path, system, swf_options)  # the parsed-trace cache (trace_cache.py)


def workload_from_source(
    source_kind: str, spec: str, options: dict[str, Any], system: System
) -> Workload:
    """Re-load a workload from a recorded :class:`~hpcdispatch.workload.job.WorkloadSource`
    (recorded options of the wrong type are a :class:`ConfigError` naming the option)."""
    kinds = {
        "units": (str,),
        "cores_per_unit_max": (int, type(None)),
        "processors": (str,),
        "missing_walltime": (str, int),
        "memory": (str,),
        "max_jobs": (int, type(None)),
        "submit_jitter": (int,),
        "jitter_seed": (int,),
    }
    for key, allowed in kinds.items():
        value = options.get(key)
        if key in options and (not isinstance(value, allowed) or isinstance(value, bool)):
            raise ConfigError(f"workload option '{key}' recorded as {value!r}: not a valid value")
    units = UnitMapping(
        mode=options.get("units", "divisor"), cores_per_unit_max=options.get("cores_per_unit_max")
    )
    swf = SwfOptions(
        processors=options.get("processors", "requested"),
        units=units,
        missing_walltime=str(options.get("missing_walltime", "queue-max")),
        memory=options.get("memory", "ignore"),
        max_jobs=options.get("max_jobs"),
        submit_jitter=int(options.get("submit_jitter", 0)),
        jitter_seed=int(options.get("jitter_seed", 0)),
    )
    return load_workload(spec, system, swf)
