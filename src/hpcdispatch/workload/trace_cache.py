"""A cache of parsed SWF traces: the second read of a trace takes milliseconds.

:func:`load_swf_cached` is :func:`~hpcdispatch.workload.swf.load_swf` with a cache in front:
the workload's columns, the reader's :class:`~hpcdispatch.workload.job.SkipReport`, the
header, queue names and expected waits, in one uncompressed ``.npz`` file under
``$XDG_CACHE_HOME/hpcdispatch/traces`` (``~/.cache/...`` without it;
``HPCDISPATCH_TRACE_CACHE`` names another directory, or ``off`` disables the cache).

The key: a BLAKE2b hash of the trace file's whole content (about 3 ms for HPC2N's 2.9 MB
``.gz``: no size/mtime shortcut that a copied or rewritten file could fool), the reader's
options, the system's resources and node types, and the source of the reader's modules (a
new version of the code never reads an old entry). The file is named by the key and holds
it: an entry whose stored key differs, or that does not read, is ignored and rewritten. The
entry is written to a temporary file and renamed into place (atomic), so a reader never sees
half a file; deleting the directory at any time is safe.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from hpcdispatch._util import return_free_memory
from hpcdispatch.system.model import System
from hpcdispatch.workload.job import SkipReport, Workload, WorkloadSource
from hpcdispatch.workload.swf import SwfOptions, load_swf

FORMAT = 1
_log = logging.getLogger("hpcdispatch")
_warned: set[str] = set()


def cache_dir() -> Path | None:
    """Where entries live; ``None`` when the cache is off."""
    where = os.environ.get("HPCDISPATCH_TRACE_CACHE", "")
    if where.lower() in ("off", "0", "no"):
        return None
    if where:
        return Path(where)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hpcdispatch" / "traces"


def _code_hash() -> str:
    from hpcdispatch.workload import job, mapping, swf

    h = hashlib.blake2b(digest_size=16)
    for module in (swf, mapping, job):
        h.update(Path(str(module.__file__)).read_bytes())
    h.update(Path(__file__).read_bytes())
    return h.hexdigest()


def trace_key(path: Path, system: System, options: SwfOptions) -> str:
    """The cache key of reading ``path`` onto ``system`` with ``options`` (hex)."""
    h = hashlib.blake2b(digest_size=20)
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    h.update(b"\0")
    described = {
        "format": FORMAT,
        "code": _code_hash(),
        "options": options.to_dict(),
        "resources": list(system.resources),
        "node_types": repr(system.node_types),
        "capacity": system.capacity.tolist(),
    }
    h.update(json.dumps(described, sort_keys=True, default=str).encode())
    return h.hexdigest()


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        _log.warning(message)


def _read(entry: Path, key: str, path: Path) -> Workload | None:
    try:
        with np.load(entry, allow_pickle=False) as data:
            meta = json.loads(bytes(data["meta"]).decode())
            if meta.get("key") != key:
                return None
            fields = {name: data[name] for name in Workload.PLAIN_FIELDS}
    except (OSError, ValueError, KeyError, EOFError):
        return None  # a damaged or foreign entry: read the trace again
    report = SkipReport(
        total_records=meta["report"]["total_records"],
        skipped=meta["report"]["skipped"],
        first_lines=meta["report"]["first_lines"],
        patched=meta["report"]["patched"],
        notes=meta["report"]["notes"],
    )
    return Workload.of_plain_columns(
        fields,
        meta["resources"],
        source=WorkloadSource(kind="swf", spec=str(path), options=meta["source_options"]),
        report=report,
        queue_names={int(k): v for k, v in meta["queue_names"].items()},
        header=meta["header"],
        queue_ewt={int(k): v for k, v in meta["queue_ewt"].items()},
    )


def _write(entry: Path, key: str, workload: Workload) -> None:
    meta: dict[str, Any] = {
        "key": key,
        "resources": list(workload.resources),
        "source_options": workload.source.options,
        "report": workload.report.to_dict(),
        "queue_names": {str(k): v for k, v in workload.queue_names.items()},
        "header": workload.header,
        "queue_ewt": {str(k): v for k, v in workload.queue_ewt.items()},
    }
    arrays = dict(workload._plain_fields)
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    entry.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=entry.parent, prefix=entry.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
        os.replace(tmp, entry)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_swf_cached(path: str | Path, system: System, options: SwfOptions) -> Workload:
    """:func:`load_swf`, from the cache when an entry has this trace's key."""
    path = Path(path)
    where = cache_dir()
    if where is None or not path.is_file():
        return _parsed(path, system, options)
    key = trace_key(path, system, options)
    entry = where / f"{key}.npz"
    if entry.is_file():
        cached = _read(entry, key, path)
        if cached is not None:
            return cached
    workload = _parsed(path, system, options)
    if not workload._plain_fields:  # (a reader that made Job objects: nothing to keep)
        return workload
    try:
        _write(entry, key, workload)
    except OSError as exc:
        _warn_once(f"the parsed-trace cache {where} is not writable ({exc}); traces are re-read")
    return workload


def _parsed(path: Path, system: System, options: SwfOptions) -> Workload:
    """:func:`load_swf`, then the parse's temporaries (tens of MB for a whole trace, freed into
    the C heap) given back to the system before the run goes on."""
    workload = load_swf(path, system, options)
    return_free_memory()
    return workload
