"""Batsim workloads (JSON): read them as hpcdispatch workloads, write any workload as one.

A Batsim workload is one JSON object with ``nb_res``, ``jobs`` (``id``, ``subtime``, ``res``,
``profile``, optional ``walltime`` and ``extra_data``) and ``profiles`` (name -> ``type`` and
its parameters). Both profile spellings are read: Batsim 4's (``delay``, ``parallel``,
``parallel_homogeneous``, ``composed`` ...) and Batsim 5's (``DelayProfile``,
``ParallelTaskProfile``, ``ParallelTaskHomogeneousProfile``, ``SequentialCompositionProfile`` ...).

- A delay profile is a run time, exactly; a sequence (``composed`` /
  ``SequentialCompositionProfile``) of delay profiles is the sum of its delays times ``repeat``.
- Any other profile's duration needs Batsim's platform speed model (flops, bytes, traces):
  its jobs are skipped, counted per profile type, and the first is named (never guessed).
- ``res`` is the processor count, as Batsim's own SWF converter writes it; it becomes units
  through the same ``--units`` mapping as an SWF trace's processors.
- ``walltime`` absent or ``-1`` (Batsim: no limit): the wall time is set by the same rule as
  SWF's ``--missing-walltime`` and counted as patched.
- ``extra_data`` (a JSON object, or a string holding one): ``user``, ``group``, ``queue``,
  ``partition`` and ``executable`` fill the job's fields; other keys are ignored (a note).

:func:`batsim_workload_text` writes any workload back with one delay profile per distinct run
time, the job's fields in ``extra_data``: SWF -> Batsim JSON -> simulate gives the same schedule.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from hpcdispatch.errors import ConfigError, TraceFormatError
from hpcdispatch.system.model import System
from hpcdispatch.workload.job import SkipReport, Workload, WorkloadSource
from hpcdispatch.workload.swf import _MAX_FIELD as MAX_FIELD
from hpcdispatch.workload.swf import SwfOptions, fits_empty_system
from hpcdispatch.workload.swf import _check_file as check_file

__all__ = ["DELAY_TYPES", "is_batsim_workload", "read_batsim", "batsim_workload_text"]

#: the delay profile's name in Batsim 4 and in Batsim 5
DELAY_TYPES = ("delay", "DelayProfile")
#: a sequence of other profiles (Batsim 4, Batsim 5)
_SEQUENCE_TYPES = ("composed", "SequentialCompositionProfile")
#: job fields ``extra_data`` may carry, as hpcdispatch writes them
_EXTRA_FIELDS = ("user", "group", "queue", "partition", "executable")


def is_batsim_workload(path: str | Path) -> bool:
    """True when ``path`` is a ``.json`` file holding one object with ``jobs`` and ``profiles``
    (Slurm-style request files are JSON lines: one object per line, without these keys)."""
    path = Path(path)
    if path.suffix.lower() != ".json" or not path.is_file():
        return False
    try:
        with open(path, "rb") as fh:
            head = fh.read(1 << 16)
    except OSError:
        return False
    text = head.decode("utf-8-sig", errors="replace").lstrip()
    if not text.startswith("{"):
        return False
    if '"profiles"' in text and '"jobs"' in text:
        return True
    try:  # a large file whose keys come later: the whole object decides
        doc = json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and "jobs" in doc and "profiles" in doc


def _duration(name: str, profiles: dict[str, Any], depth: int = 0) -> tuple[float | None, str]:
    """A profile's fixed duration in seconds, or ``(None, type)`` when it needs a platform."""
    prof = profiles.get(name)
    if not isinstance(prof, dict):
        return None, "missing profile"
    kind = str(prof.get("type", ""))
    if kind in DELAY_TYPES:
        delay = prof.get("delay")
        if isinstance(delay, bool) or not isinstance(delay, (int, float)) or not delay >= 0:
            return None, f"{kind} without a valid delay"
        return float(delay), kind
    if kind in _SEQUENCE_TYPES and depth < 16:
        repeat = prof.get("repeat", 1)
        seq = prof.get("seq", [])
        if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
            return None, f"{kind} with repeat {repeat!r}"
        if not isinstance(seq, list) or not seq:
            return None, f"{kind} without a sequence"
        total = 0.0
        for part in seq:
            d, part_kind = _duration(str(part), profiles, depth + 1)
            if d is None:
                return None, f"{kind} of {part_kind}"
            total += d
        return total * repeat, kind
    return None, kind or "profile without a type"


def _extra(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    if isinstance(value, str) and value.strip().startswith("{"):
        try:
            parsed = json.loads(value)
        except ValueError:
            return {}
        return parsed if isinstance(parsed, dict) else {}
    return {}


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def read_batsim(path: str | Path, system: System, options: SwfOptions | None = None) -> Workload:
    """The jobs of a Batsim workload file on ``system`` (see the module's docstring).

    A job that cannot be used is skipped and counted per reason (``bad-<field>``,
    ``profile-needs-platform``, ``too-big``, ``duplicate-id``); the first message of each names
    the file, the job and the field. Times with fractions of a second are rounded to the
    second and counted as patched (the engine's clock is whole seconds).
    """
    options = options or SwfOptions()
    path = Path(path)
    check_file(path)
    try:
        doc = json.loads(path.read_bytes().decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise TraceFormatError(str(path), "not UTF-8 text") from None
    except ValueError as exc:
        raise TraceFormatError(str(path), f"not JSON: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list):
        raise TraceFormatError(str(path), "not a Batsim workload (no 'jobs' array)", field="jobs")
    profiles = doc.get("profiles")
    if not isinstance(profiles, dict):
        raise TraceFormatError(
            str(path), "not a Batsim workload (no 'profiles' object)", field="profiles"
        )
    records = doc["jobs"]
    report = SkipReport(total_records=len(records))
    first_message: dict[str, str] = {}

    def skip(reason: str, k: int, message: str) -> None:
        report.skip(reason, [k + 1])
        first_message.setdefault(reason, message)

    ids: list[int] = []
    names: list[str | None] = []
    submit: list[int] = []
    run: list[int] = []
    wall: list[int] = []
    procs: list[int] = []
    extra_cols: dict[str, list[int]] = {f: [] for f in _EXTRA_FIELDS}
    ignored_extra: set[str] = set()
    rounded = 0
    seen: set[int] = set()
    numeric_ids = all(
        isinstance(r, dict) and str(r.get("id", "")).rpartition("!")[2].lstrip("-").isdigit()
        for r in records
    )
    for k, rec in enumerate(records):
        where = f"job {k + 1}"
        if not isinstance(rec, dict):
            skip("malformed", k, f"{where}: not a JSON object")
            continue
        raw_id = rec.get("id")
        where = f"job {raw_id!r} (the {k + 1}. of 'jobs')"
        sub = _number(rec.get("subtime"))
        if sub is None or sub < 0 or sub > MAX_FIELD:
            skip("bad-subtime", k, f"{where}, field subtime: {rec.get('subtime')!r}")
            continue
        res = rec.get("res")
        if isinstance(res, bool) or not isinstance(res, int) or res < 1 or res > MAX_FIELD:
            skip("bad-res", k, f"{where}, field res: {res!r} (a positive integer)")
            continue
        duration, kind = _duration(str(rec.get("profile")), profiles)
        if duration is None:
            skip(
                "profile-needs-platform",
                k,
                f"{where}, field profile: {rec.get('profile')!r} is of type '{kind}', whose "
                "duration needs Batsim's platform speed model (only delay profiles are read)",
            )
            continue
        if duration > MAX_FIELD:
            skip("bad-profile", k, f"{where}, field profile: delay {duration} s is too large")
            continue
        wt = _number(rec.get("walltime", -1))
        if wt is None or (wt <= 0 and wt != -1) or wt > MAX_FIELD:
            skip("bad-walltime", k, f"{where}, field walltime: {rec.get('walltime')!r}")
            continue
        if numeric_ids:
            job_id, name = int(str(raw_id).rpartition("!")[2]), None
        else:
            job_id, name = k + 1, str(raw_id)
        if job_id in seen:
            skip("duplicate-id", k, f"{where}, field id: a job with this id came before")
            continue
        seen.add(job_id)
        extra = _extra(rec.get("extra_data"))
        for key in extra:
            if key not in _EXTRA_FIELDS:
                ignored_extra.add(str(key))
        for f in _EXTRA_FIELDS:
            v = extra.get(f, -1)
            extra_cols[f].append(v if isinstance(v, int) and not isinstance(v, bool) else -1)
        rounded += (sub != round(sub)) + (duration != round(duration))
        rounded += wt != -1 and wt != round(wt)
        ids.append(job_id)
        names.append(name)
        submit.append(int(round(sub)))
        run.append(int(round(duration)))
        wall.append(int(round(wt)) if wt != -1 else -1)
        procs.append(int(res))
    report.patch("times rounded to whole seconds", int(rounded))
    for reason, message in first_message.items():
        report.notes.append(f"{path}: {message} (skipped as {reason})")
    if ignored_extra:
        report.notes.append(
            f"extra_data keys not used by hpcdispatch: {', '.join(sorted(ignored_extra))}"
        )
    wall_a = np.array(wall, dtype=np.int64)
    run_a = np.array(run, dtype=np.int64)
    keep = np.ones(len(ids), dtype=bool)
    missing = wall_a == -1
    mw = str(options.missing_walltime)
    if missing.any():
        if mw == "skip":
            keep &= ~missing
            report.skip("missing-walltime", (np.flatnonzero(missing) + 1).tolist())
        elif mw == "runtime":
            wall_a[missing] = run_a[missing]
        elif mw in ("queue-max", "trace-max"):
            known = wall_a[~missing]
            wall_a[missing] = int(max(int(known.max()) if len(known) else 0, run_a.max()))
        else:
            wall_a[missing] = int(mw)
        if mw != "skip":
            rule = "trace-max" if mw == "queue-max" else mw
            report.patch(f"missing wall-time set by '{rule}'", int(missing.sum()))
    procs_a = np.array(procs, dtype=np.int64)
    units, cores_per_unit = options.units.map(procs_a, system)
    unit_req = np.zeros((len(ids), len(system.resources)), dtype=np.int64)
    unit_req[:, system.resource_index(options.units.core_resource)] = cores_per_unit
    fits = fits_empty_system(units, unit_req, system) if len(ids) else keep
    report.skip("too-big", (np.flatnonzero(~fits & keep) + 1).tolist())
    keep &= fits
    idx = np.flatnonzero(keep)
    submit_a = np.array(submit, dtype=np.int64)
    order = idx[np.argsort(submit_a[idx], kind="stable")]
    fields = {
        "id": np.array(ids, dtype=np.int64),
        "submit": submit_a,
        "run_time": run_a,
        "wall_time": wall_a,
        "units": units,
        "unit_request": unit_req,
        "processors": procs_a,
        **{f: np.array(v, dtype=np.int64) for f, v in extra_cols.items()},
    }
    source = WorkloadSource(
        kind="batsim",
        spec=str(path),
        options={
            "units": options.units.mode,
            "cores_per_unit_max": options.units.cores_per_unit_max,
            "missing_walltime": mw,
        },
    )
    workload = Workload.of_plain_columns(
        {n: v[order] for n, v in fields.items()},
        system.resources,
        source=source,
        report=report,
        header={"nb_res": str(doc.get("nb_res", ""))},
    )
    if any(n is not None for n in names):
        jobs = [j._replace(name=names[i]) for j, i in zip(workload.jobs, order.tolist())]
        workload = Workload(
            jobs, system.resources, source=source, report=report, header=workload.header
        )
    return workload


def batsim_workload_text(workload: Workload, system: System | None = None) -> str:
    """``workload`` as a Batsim workload (JSON): ``res`` = processors, one delay profile per
    distinct run time (named ``delay<seconds>``), the wall time, and the job's integer fields
    in ``extra_data`` (a JSON string, as Batsim recommends). Readable by Batsim 4 and 5
    alike only through the profile type: ``DelayProfile`` (Batsim 5's name) is written;
    Batsim 4 users rename it ``delay``."""
    core = workload.resources.index("core") if "core" in workload.resources else 0
    jobs = []
    profiles: dict[str, dict[str, Any]] = {}
    for j in workload.jobs:
        if j.constrained or j.app is not None or j.deadline is not None:
            raise ConfigError(
                f"job {j.id}: Batsim's workload format has no node counts, per-node requests, "
                "deadlines or application models (write a Slurm-style CSV or .deadline.jsonl)"
            )
        procs = j.processors if j.processors > 0 else j.units * j.unit_request[core]
        name = f"delay{int(j.run_time)}"
        profiles.setdefault(name, {"type": "DelayProfile", "delay": int(j.run_time)})
        extra = {f: int(getattr(j, f)) for f in _EXTRA_FIELDS if int(getattr(j, f)) != -1}
        rec: dict[str, Any] = {
            "id": str(j.id),
            "subtime": int(j.submit),
            "walltime": int(j.wall_time),
            "res": int(procs),
            "profile": name,
        }
        if extra:
            rec["extra_data"] = json.dumps(extra, sort_keys=True)
        jobs.append(rec)
    nb_res = (
        int(system.total_capacity[system.resource_index("core")])
        if system is not None and "core" in system.resources
        else max((r["res"] for r in jobs), default=0)
    )
    doc = {
        "nb_res": nb_res,
        "description": f"converted by hpcdispatch from {workload.source.kind} "
        f"{workload.source.spec}",
        "jobs": jobs,
        "profiles": dict(sorted(profiles.items(), key=lambda kv: kv[1]["delay"])),
    }
    return json.dumps(doc, indent=1) + "\n"
