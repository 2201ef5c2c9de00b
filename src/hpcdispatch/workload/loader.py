"""One entry point for every workload source, and the system that goes with it.

:func:`load_workload` and :func:`resolve_system` take a
:class:`~hpcdispatch.workload.spec.WorkloadSpec` (or its text, parsed here). Workload specs
(``--workload``):

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

import os
from pathlib import Path
from typing import Any

from hpcdispatch.errors import ConfigError, TraceFormatError
from hpcdispatch.system.io import load_system, preset_trace_prefixes
from hpcdispatch.system.model import System
from hpcdispatch.workload.batsim import is_batsim_workload, read_batsim
from hpcdispatch.workload.deadline import _JSONL_SUFFIX, _deadline_workload, read_deadline_jsonl
from hpcdispatch.workload.eurora import _eurora_workload
from hpcdispatch.workload.job import Workload
from hpcdispatch.workload.kit import _kit_workload
from hpcdispatch.workload.lublin import _lublin_workload
from hpcdispatch.workload.mapping import UnitMapping
from hpcdispatch.workload.sacct import is_sacct_file, read_sacct
from hpcdispatch.workload.slurm import _aucsched_workload, read_slurm_requests
from hpcdispatch.workload.spec import WorkloadSpec
from hpcdispatch.workload.swf import SwfOptions, system_from_swf_header
from hpcdispatch.workload.trace_cache import load_swf_cached

_SLURM_SUFFIXES = (".csv", ".jsonl", ".json", ".ndjson")
#: generator name -> the function that makes its workload from its parameters
_MAKERS: dict[str, Any] = {
    "lublin": _lublin_workload,
    "aucsched": _aucsched_workload,
    "deadline": _deadline_workload,
    "kit": _kit_workload,
    "eurora": _eurora_workload,
}

#: what the loader takes: a parsed spec, or its text (parsed here)
_SpecLike = WorkloadSpec | str | os.PathLike[str]


def _is_slurm_file(path: str) -> bool:
    p = Path(path)
    if p.name.lower().endswith(_JSONL_SUFFIX):  # deadline jobs, not Slurm requests
        return False
    try:
        return p.suffix.lower() in _SLURM_SUFFIXES or (p.is_file() and is_sacct_file(p))
    except (OSError, ValueError):
        return False


def resolve_system(system_spec: str, workload_spec: _SpecLike) -> System:
    """The system named by ``system_spec`` (see the module docstring for ``auto``)."""
    spec = WorkloadSpec.parse(workload_spec)
    path = str(spec.path)
    if system_spec in ("from-trace", "auto") and not spec.is_generator and _is_slurm_file(path):
        raise ConfigError(
            f"{path}: a Slurm request or accounting file describes no machine; give --system "
            "a preset or a TOML file (its nodes, cores, GPUs, memory)"
        )
    if system_spec == "from-trace":
        if spec.is_generator:
            raise ConfigError(
                "--system from-trace needs an SWF trace as workload, not a synthetic one"
            )
        return system_from_swf_header(path)
    if system_spec == "auto":
        if spec.is_deadline:
            return load_system("hlrn2-grid")  # the deadline paper's machine (sec. 5)
        if spec.default_system is not None:
            return load_system(spec.default_system)
        name = Path(path).name
        for preset, prefixes in sorted(preset_trace_prefixes().items()):
            if any(name.startswith(p) for p in prefixes):
                return load_system(preset)
        return system_from_swf_header(path)
    return load_system(system_spec)


def load_workload(
    spec: _SpecLike, system: System, swf_options: SwfOptions | None = None
) -> Workload:
    """Load the workload named by ``spec`` (a :class:`WorkloadSpec` or its text) onto
    ``system`` (``max_jobs``, then ``submit_jitter``)."""
    swf_options = swf_options or SwfOptions()
    workload = _load(WorkloadSpec.parse(spec), system, swf_options)
    if swf_options.submit_jitter:
        workload = workload.jittered(swf_options.submit_jitter, swf_options.jitter_seed)
    return workload


def _load(spec: WorkloadSpec, system: System, swf_options: SwfOptions) -> Workload:
    if spec.generator is not None:
        make = _MAKERS[spec.generator]
        workload = make(system, spec.params(swf_options.units), spec_string=str(spec))
    else:
        _check_file(str(spec.path))
        path = Path(str(spec.path))
        if path.name.lower().endswith(_JSONL_SUFFIX):
            workload = read_deadline_jsonl(path, system)
        elif is_batsim_workload(path):
            workload = read_batsim(path, system, swf_options)
        elif is_sacct_file(path):
            workload = read_sacct(path, system)
        elif path.suffix.lower() in _SLURM_SUFFIXES:
            workload = read_slurm_requests(path, system)
        else:
            return load_swf_cached(
                path, system, swf_options
            )  # (trace_cache.py; max_jobs: the reader)
    if swf_options.max_jobs is not None:
        workload = workload.subset(swf_options.max_jobs)
    return workload


def _check_file(text: str) -> None:
    path = Path(text)
    try:
        exists, is_dir = path.exists(), path.is_dir()
    except (OSError, ValueError) as exc:  # a name too long, a NUL byte ...
        raise TraceFormatError(
            text, f"cannot be read: {getattr(exc, 'strerror', None) or exc}"
        ) from None
    if not exists:
        raise TraceFormatError(
            text, "file does not exist (give a path to an SWF trace or synthetic:lublin,...)"
        )
    if is_dir:
        raise TraceFormatError(text, "is a directory, not a workload file")


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
        "first_job": (int,),
        "jobs": (int,),
    }
    if "cleaning" in options:  # a learning environment's own reading of a trace (hpcdispatch.rl)
        raise ConfigError(
            f"workload cleaning '{options['cleaning']}' is applied by hpcdispatch.rl, not by the "
            "readers: the workload cannot be re-read here"
        )
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
    workload = load_workload(spec, system, swf)
    if "first_job" in options:  # an episode's window of the workload (Workload.window)
        workload = workload.window(int(options["first_job"]), int(options.get("jobs", 1)))
    return workload
